#include "core/rng.h"

#include <random>

namespace opbench {

uint64_t fresh_secret_seed() {
  std::random_device device;  // /dev/urandom on Linux
  return (uint64_t(device()) << 32) ^ uint64_t(device());
}

}  // namespace opbench
