// Filling input tensors from a seed with the distribution their spec declares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "workload/spec.h"

namespace opbench {

// Fills `data` (tensor.bytes() bytes) deterministically from the input set's seed and the tensor's
// position among the inputs. Threads only speed it up: the values depend on the seed alone.
// Generators that tie several tensors together (a ragged batch's lengths and offsets) derive them
// from the set seed, so each tensor of the set sees the same scenario. Throws SpecError for an
// unknown distribution or parameters that cannot be satisfied.
void fill_input(void* data, const TensorInstance& tensor, uint64_t set_seed, size_t tensor_index, int threads);

// Elements [begin, end) of the same tensor into `data` (which holds end - begin elements): the values
// fill_input would put there. Only for distributions drawn element by element (element_wise());
// the others (ragged metadata, a few KB) are filled whole.
bool element_wise(const TensorInstance& tensor);
void fill_input_range(void* data, const TensorInstance& tensor, uint64_t set_seed, size_t tensor_index, uint64_t begin, uint64_t end,
                      int threads);

// The distributions fill_input knows, with their parameters, for docs and `opbench show`.
struct DistributionInfo {
  const char* name;
  const char* params;
  const char* meaning;
};
const std::vector<DistributionInfo>& known_distributions();

}  // namespace opbench
