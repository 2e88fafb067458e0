#include "core/dtype.h"

#include <fmt/format.h>

#include "core/error.h"

namespace opbench {

DType parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float32") return DType::f32;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "i32" || name == "int32") return DType::i32;
  throw SpecError(fmt::format("unknown dtype '{}' (expected f32, bf16 or i32)", name));
}

}  // namespace opbench
