#include "workload/generators.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"
#include "core/rng.h"

namespace opbench {
namespace {

// A small sequential stream on top of the counter-based generator.
class Stream {
 public:
  explicit Stream(uint64_t seed) : seed_(seed) {}
  double uniform() { return uniform_open01(seed_, counter_++); }
  int64_t below(int64_t n) { return std::min<int64_t>(n - 1, int64_t(uniform() * double(n))); }
  int64_t between(int64_t low, int64_t high) { return low + below(high - low + 1); }  // inclusive
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[size_t(below(int64_t(i)))]);
  }

 private:
  uint64_t seed_;
  uint64_t counter_ = 0;
};

}  // namespace

std::vector<int32_t> random_permutation(int64_t n, uint64_t seed) {
  auto v = std::vector<int32_t>(size_t(n));
  std::iota(v.begin(), v.end(), 0);
  Stream(seed).shuffle(v);
  return v;
}

std::vector<int32_t> ragged_partition(int64_t groups, int64_t total, int64_t empty, double skew, uint64_t seed) {
  if (groups < 1 || total < 0 || empty >= groups)
    throw SpecError(fmt::format("partition: cannot split {} rows into {} groups with {} empty", total, groups, empty));
  Stream s(seed);
  auto cumulative = std::vector<double>(size_t(groups));
  double sum = 0;
  for (int64_t g = 0; g < groups; ++g) cumulative[size_t(g)] = sum += 1.0 / std::pow(double(g + 1), skew);
  std::vector<int32_t> sizes(size_t(groups), 0);
  for (int64_t r = 0; r < total; ++r) {
    double u = s.uniform() * sum;
    size_t g = size_t(std::lower_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
    ++sizes[std::min(g, sizes.size() - 1)];
  }
  s.shuffle(sizes);
  auto order = std::vector<size_t>(size_t(groups));
  std::iota(order.begin(), order.end(), 0);
  s.shuffle(order);
  size_t largest = size_t(std::max_element(sizes.begin(), sizes.end()) - sizes.begin());
  int64_t forced = 0;
  for (size_t g : order) {
    if (forced == empty) break;
    if (g == largest) continue;
    sizes[largest] += sizes[g];
    sizes[g] = 0;
    ++forced;
  }
  return sizes;
}

std::vector<int32_t> lengths_with_edges(int64_t n, int64_t low, int64_t high, int64_t edge, uint64_t seed) {
  if (low > high) throw SpecError(fmt::format("lengths: low {} > high {}", low, high));
  Stream s(seed);
  auto v = std::vector<int32_t>(size_t(n));
  for (auto& x : v) x = int32_t(s.between(low, high));
  if (n >= 4) {
    const int64_t edges[] = {low, std::clamp(edge, low, high), std::clamp(edge + 1, low, high), high};
    auto slots = std::vector<size_t>(size_t(n));
    std::iota(slots.begin(), slots.end(), 0);
    s.shuffle(slots);
    for (size_t i = 0; i < 4; ++i) v[slots[i]] = int32_t(edges[i]);
  }
  return v;
}

RaggedBatch ragged_batch(int64_t tokens, int64_t slots, int64_t max_kv, int64_t page_size, int64_t chunk,
                         int64_t pad_tokens, uint64_t seed) {
  const int64_t live = tokens - pad_tokens;
  if (live < 2 || slots < 3 || chunk < 2 || max_kv < chunk)
    throw SpecError(fmt::format("ragged_batch: infeasible scenario (tokens {}, pad {}, slots {}, chunk {}, max_kv {})", tokens,
                                pad_tokens, slots, chunk, max_kv));
  Stream s(seed);
  // Decodes take three quarters of the usable slots (one slot is kept for the inactive sequence);
  // prefill chunks of `chunk` tokens (the last one shorter) cover the rest of the live tokens.
  const int64_t usable = slots - 1;
  int64_t decodes = std::min<int64_t>((3 * usable) / 4, live - 1);
  auto prefills_for = [&](int64_t d) { return (live - d + chunk - 1) / chunk; };
  while (decodes > 0 && decodes + prefills_for(decodes) > usable) --decodes;
  if (decodes + prefills_for(decodes) > usable)
    throw SpecError(fmt::format("ragged_batch: {} live tokens do not fit {} slots with chunks of {}", live, usable, chunk));
  std::vector<int64_t> q_lens(size_t(decodes), 1);
  for (int64_t left = live - decodes; left > 0; left -= chunk) q_lens.push_back(std::min(chunk, left));

  RaggedBatch b;
  b.num_seqs = int32_t(q_lens.size());
  b.kv_lens.assign(size_t(slots), 0);
  b.cu_q_lens.assign(size_t(slots + 1), 0);
  for (size_t i = 0; i < q_lens.size(); ++i) {
    int64_t kv = s.between(q_lens[i], max_kv);
    // Some lengths end exactly on a page, some one token into a new page.
    if (i % 5 == 1) kv = std::max(q_lens[i], std::min(max_kv, (kv + page_size - 1) / page_size * page_size));
    if (i % 5 == 3) kv = std::max(q_lens[i], std::min(max_kv, kv / page_size * page_size + 1));
    b.kv_lens[i] = int32_t(kv);
    b.cu_q_lens[i + 1] = b.cu_q_lens[i] + int32_t(q_lens[i]);
  }
  // The inactive slot: a real length and the padding rows as its queries. A kernel that ignores
  // num_seqs writes into rows that must stay zero.
  const size_t inactive = q_lens.size();
  b.kv_lens[inactive] = int32_t(s.between(1, max_kv));
  for (size_t i = inactive + 1; i < size_t(slots + 1); ++i) b.cu_q_lens[i] = int32_t(tokens);
  return b;
}

}  // namespace opbench
