// Whole-file reads for sources, logs and specs.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace opbench {

// The file's bytes, or an empty string when it cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Atomic writes: write_text_atomic in core/json_io.h.

// The source tree opbench reads at run time (workloads/, include/opbench, context/): $OPBENCH_ROOT,
// else the tree it was built from. A build carried to another machine (the GPU device check) sets it.
inline std::filesystem::path source_root() {
  if (const char* env = std::getenv("OPBENCH_ROOT"); env && *env) return env;
#ifdef OPBENCH_SOURCE_DIR
  return OPBENCH_SOURCE_DIR;
#else
  return ".";
#endif
}

}  // namespace opbench
