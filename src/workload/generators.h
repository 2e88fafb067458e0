// Whole-tensor generators for integer metadata: permutations, ragged group sizes, sequence lengths,
// and the joint scenario of a ragged paged-attention batch. Element-wise distributions live in
// inputs.cpp; these need the whole tensor (or several tensors) at once.
#pragma once

#include <cstdint>
#include <vector>

#include "workload/spec.h"

namespace opbench {

// A random permutation of 0..n-1.
std::vector<int32_t> random_permutation(int64_t n, uint64_t seed);

// `groups` sizes summing to `total`: a multinomial with p_g ∝ 1/(g+1)^skew, randomly permuted over
// the groups, then `empty` random groups forced to 0 (their rows moved to the largest group).
std::vector<int32_t> ragged_partition(int64_t groups, int64_t total, int64_t empty, double skew, uint64_t seed);

// Lengths uniform in [low, high], with the edge cases low, edge, edge + 1 and high present at
// random positions (when there are at least four entries).
std::vector<int32_t> lengths_with_edges(int64_t n, int64_t low, int64_t high, int64_t edge, uint64_t seed);

// One continuous-batching step of ragged paged attention (7p): decodes, then prefill chunks, then
// padding rows that must stay zero, and one inactive slot with a non-zero length that only
// `num_seqs` excludes.
struct RaggedBatch {
  std::vector<int32_t> kv_lens;    // slots
  std::vector<int32_t> cu_q_lens;  // slots + 1
  int32_t num_seqs = 0;
};
RaggedBatch ragged_batch(int64_t tokens, int64_t slots, int64_t max_kv, int64_t page_size, int64_t chunk,
                         int64_t pad_tokens, uint64_t seed);

}  // namespace opbench
