// Filling input tensors from a seed with the distribution their spec declares.
#pragma once

#include <cstdint>

#include "workload/spec.h"

namespace opbench {

// Fills `data` (tensor.bytes() bytes) deterministically from `seed`. Threads only speed it up: the
// values depend on the seed alone. Throws SpecError for an unknown distribution.
void fill_input(void* data, const TensorInstance& tensor, uint64_t seed, int threads);

// The distributions fill_input knows, for `opbench show` and the spec checks.
const char* const* known_distributions();

}  // namespace opbench
