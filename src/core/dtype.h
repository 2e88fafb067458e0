// Element types of tensors, shared by the host program and the kernel ABI (ob_dtype).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <opbench/kernel.h>

namespace opbench {

enum class DType : int32_t { f32 = OB_F32, bf16 = OB_BF16, i32 = OB_I32 };

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

inline std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
  }
  return "?";
}

DType parse_dtype(std::string_view name);  // throws SpecError on an unknown name

// `n` elements of type `from` converted to type `to` (bf16 <-> f32 exactly or round-to-nearest-even;
// i32 unchanged). The bytes of the result, to.size() * n.
std::vector<std::byte> convert_elements(const void* data, size_t n, DType from, DType to);

}  // namespace opbench
