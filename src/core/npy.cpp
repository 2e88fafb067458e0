#include "core/npy.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_io.h"

namespace opbench {
namespace {

const char* npy_descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::i32: return "<i4";
    case DType::bf16: return "<u2";  // numpy has no bfloat16: raw 16-bit patterns
  }
  return "?";
}

}  // namespace

void write_npy(const std::filesystem::path& path, const void* data, DType dtype, const std::vector<int64_t>& shape) {
  std::string shape_text = shape.size() == 1 ? fmt::format("({},)", shape[0]) : fmt::format("({})", fmt::join(shape, ", "));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(dtype), shape_text);
  // magic(6) + version(2) + header length(2) + header + '\n' must be a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const uint16_t len = uint16_t(header.size());  // little-endian, as x86 stores it
  std::string preamble("\x93NUMPY\x01\x00", 8);
  preamble.append(reinterpret_cast<const char*>(&len), 2);
  preamble += header;
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n)) throw std::runtime_error(fmt::format("{}: the shape's size overflows", path.string()));
  // Atomic and checked (temporary file, fsync, rename): a full disk leaves no truncated array.
  write_file_atomic(path, {std::string_view(preamble), std::string_view(static_cast<const char*>(data), n)});
}

std::vector<char> read_npy(const std::filesystem::path& path, DType* dtype, std::vector<int64_t>* shape) {
  std::ifstream in(path, std::ios::binary);
  char magic[8];
  uint16_t len = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY\x01\x00", 8) != 0 || !in.read(reinterpret_cast<char*>(&len), 2))
    throw std::runtime_error(fmt::format("{} is not an .npy file of version 1.0", path.string()));
  std::string header(len, '\0');
  if (!in.read(header.data(), len)) throw std::runtime_error(fmt::format("{}: the .npy header is cut short", path.string()));
  *dtype = header.find("<f4") != std::string::npos ? DType::f32 : header.find("<i4") != std::string::npos ? DType::i32 : DType::bf16;
  shape->clear();
  const auto key = header.find("'shape'");
  const auto open = key == std::string::npos ? key : header.find('(', key);
  const auto close = open == std::string::npos ? open : header.find(')', open);
  if (close == std::string::npos) throw std::runtime_error(fmt::format("{}: the .npy header has no shape", path.string()));
  std::string dims = header.substr(open + 1, close - open - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    std::string token = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (token.find_first_of("0123456789") != std::string::npos) shape->push_back(std::stoll(token));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  std::vector<char> data(std::istreambuf_iterator<char>(in), {});
  // A truncated file (a write cut by a full disk) must not read as a smaller array.
  uint64_t expected = dtype_size(*dtype);
  for (int64_t d : *shape)
    if (d < 0 || __builtin_mul_overflow(expected, uint64_t(d), &expected))
      throw std::runtime_error(fmt::format("{}: the .npy shape is not a valid size", path.string()));
  if (data.size() != expected)
    throw std::runtime_error(fmt::format("{}: {} bytes of data, its shape needs {}", path.string(), data.size(), expected));
  return data;
}

}  // namespace opbench
