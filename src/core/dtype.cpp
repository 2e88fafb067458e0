#include "core/dtype.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace opbench {

DType parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float32") return DType::f32;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "i32" || name == "int32") return DType::i32;
  throw SpecError(fmt::format("unknown dtype '{}' (expected f32, bf16 or i32)", name));
}

namespace {

float bf16_to_f32(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);                                          // round to nearest even
  return uint16_t(bits >> 16);
}

}  // namespace

std::vector<std::byte> convert_elements(const void* data, size_t n, DType from, DType to) {
  std::vector<std::byte> out(n * dtype_size(to));
  if (from == to) {
    std::memcpy(out.data(), data, out.size());
    return out;
  }
  if (from == DType::bf16 && to == DType::f32) {
    for (size_t i = 0; i < n; ++i) {
      const float f = bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
      std::memcpy(out.data() + 4 * i, &f, 4);
    }
    return out;
  }
  if (from == DType::f32 && to == DType::bf16) {
    for (size_t i = 0; i < n; ++i) {
      const uint16_t b = f32_to_bf16(static_cast<const float*>(data)[i]);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
    return out;
  }
  throw std::invalid_argument(fmt::format("cannot convert {} to {}", dtype_name(from), dtype_name(to)));
}

}  // namespace opbench
