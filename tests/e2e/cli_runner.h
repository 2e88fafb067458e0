// Runs the opbench binary as a user would, for end-to-end tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process.h"

namespace opbench::testing {

inline std::filesystem::path source_dir() { return OPBENCH_SOURCE_DIR; }

struct CliRun {
  int exit_code = -1;
  std::string output;
};

inline CliRun run_cli(std::vector<std::string> args, int timeout_s = 300) {
  args.insert(args.begin(), OPBENCH_BINARY);
  ProcessOutcome p = run_process(args, std::chrono::seconds(timeout_s));
  return {p.signal ? 128 + p.signal : p.exit_code, p.output};
}

// A fresh folder for one test's files.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("opbench-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace opbench::testing
