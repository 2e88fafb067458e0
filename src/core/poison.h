// The poison pattern outputs are filled with before a checked call: NaN in every float lane (and
// in both halves of every 16-bit lane), an unlikely value in every int lane. A kernel that skips an
// element leaves this behind and fails the comparison. Targets with host-visible memory use this;
// device targets write the same bytes with their own fill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace opbench {

inline constexpr uint32_t kPoisonWord = 0x7FC07FC0u;

inline void fill_poison(void* data, size_t bytes) {
  auto* p = static_cast<unsigned char*>(data);
  const size_t words = bytes / 4;
  for (size_t i = 0; i < words; ++i) std::memcpy(p + 4 * i, &kPoisonWord, 4);
  if (bytes % 4) std::memset(p + 4 * words, 0xFF, bytes % 4);
}

}  // namespace opbench
