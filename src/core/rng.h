// Counter-based random numbers: element i of a tensor depends only on (seed, i), so inputs are
// reproducible from a seed whatever the thread count, and can be generated in parallel.
#pragma once

#include <cstdint>

namespace opbench {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform on the open interval (0, 1): never 0, so log() of it is finite.
inline double uniform_open01(uint64_t seed, uint64_t index) {
  uint64_t bits = splitmix64(seed ^ splitmix64(index));
  return (double(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Derives an independent stream's seed (per tensor, per row scale...).
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) { return splitmix64(seed ^ (stream * 0xD1B54A32D192ED03ull)); }

// 64 bits from the operating system's entropy source: the secret seeds of an evaluation.
uint64_t fresh_secret_seed();

}  // namespace opbench
