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

// Writes `text` to `path` through a temporary file and a rename, so a reader (or a process killed
// halfway) never sees half a file. Throws std::runtime_error when it cannot.
inline void write_file_atomic(const std::filesystem::path& path, const std::string& text) {
  const auto temp = path.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + temp);
  }
  std::filesystem::rename(temp, path);
}

}  // namespace opbench
