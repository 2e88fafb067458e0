// Whole-file reads for sources, logs and specs.
#pragma once

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

}  // namespace opbench
