#include "workload/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "workload/generators.h"

namespace opbench {
namespace {

// Element-wise distributions fill a range [begin, end) of the tensor's elements in doubles; values
// depend only on (seed, element index), so ranges can be filled by any thread in any order.
using RangeFn = void (*)(const ResolvedInit&, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out);

// Box-Muller on counter-based uniforms: elements 2k and 2k+1 share one pair (cos and sin halves).
// The transcendental parts are polynomials in float, not libm's double log and sincos: the parent
// writes fresh inputs before every timed pair, and libm's calls took 19 ns an element, most of the
// parent's CPU time (8p at the cpu size: 45 ms a pair, more than the kernel's 31 ms). The values
// are float and bf16 inputs, so float accuracy (a few ulp) is all they need; the same inline code
// runs in the single-element and the batched path, so both give the same bits.
constexpr float kLn2 = 0.693147180559945f;

inline uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
inline float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

// log(x) for x in (0, 1]: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with
// s = (m - 1) / (m + 1), |s| <= 0.172, to s^9 (the next term is below 4e-10). Integer operations
// and no branches, so that loops of it vectorise.
inline float log_unit(float x) {
  constexpr uint32_t kSqrtHalf = 0x3F3504F3u;  // the bits of sqrt(1/2)
  const uint32_t shifted = bits_of(x) + (0x3F800000u - kSqrtHalf);
  const int32_t e = int32_t(shifted >> 23) - 127;
  const float m = float_of((shifted & 0x007FFFFFu) + kSqrtHalf);
  const float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  const float series = 2.0f * s * (1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9)))));
  return float(e) * kLn2 + series;
}

// cos and sin of 2*pi*v for v in [0, 1]: the quadrant from v itself (no reduction error), then
// Taylor series on [-pi/4, pi/4] (errors below 2e-9), the quadrant applied by swapping and sign
// bits.
inline void cos_sin_turns(float v, float* c, float* s) {
  const int32_t q = int32_t(4.0f * v + 0.5f);  // nearest quarter turn, 0..4 (the argument is >= 0)
  const float x = 6.28318530717959f * (v - 0.25f * float(q)), x2 = x * x;
  const float sx = x * (1.0f - x2 * (1.0f / 6 - x2 * (1.0f / 120 - x2 * (1.0f / 5040 - x2 * (1.0f / 362880)))));
  const float cx = 1.0f - x2 * (0.5f - x2 * (1.0f / 24 - x2 * (1.0f / 720 - x2 * (1.0f / 40320 - x2 * (1.0f / 3628800)))));
  // cos(x + q pi/2), sin(x + q pi/2) for q mod 4 = 0..3: (c, s), (-s, c), (-c, -s), (s, -c).
  const uint32_t odd = 0u - uint32_t(q & 1), sc = bits_of(sx), cc = bits_of(cx);
  const uint32_t cos_sign = uint32_t(((q + 1) >> 1) & 1) << 31, sin_sign = uint32_t((q >> 1) & 1) << 31;
  *c = float_of(((cc & ~odd) | (sc & odd)) ^ cos_sign);
  *s = float_of(((sc & ~odd) | (cc & odd)) ^ sin_sign);
}

inline void normal_pair(uint64_t seed, uint64_t pair, float* first, float* second) {
  const float radius = std::sqrt(-2.0f * log_unit(float(uniform_open01(seed, 2 * pair))));
  float c, s;
  cos_sin_turns(float(uniform_open01(seed, 2 * pair + 1)), &c, &s);
  *first = radius * c;
  *second = radius * s;
}

inline double standard_normal(uint64_t seed, uint64_t i) {
  float a, b;
  normal_pair(seed, i >> 1, &a, &b);
  return (i & 1) ? b : a;
}

// Element-wise over pairs with no calls and no branches the compiler cannot turn into selects, so
// that it vectorises the transcendental part.
__attribute__((optimize("tree-vectorize"), target_clones("arch=x86-64-v4", "avx512f", "avx2", "default"))) void fill_normal_pairs(uint64_t seed, uint64_t first_pair, uint64_t pairs, double* out) {
  constexpr uint64_t kBlock = 256;
  float u[kBlock], v[kBlock], c[kBlock], s[kBlock];
  for (uint64_t b = 0; b < pairs; b += kBlock) {
    const uint64_t n = std::min(kBlock, pairs - b);
    for (uint64_t k = 0; k < n; ++k) {
      u[k] = float(uniform_open01(seed, 2 * (first_pair + b + k)));
      v[k] = float(uniform_open01(seed, 2 * (first_pair + b + k) + 1));
    }
    for (uint64_t k = 0; k < n; ++k) {
      const float radius = std::sqrt(-2.0f * log_unit(u[k]));
      float ck, sk;
      cos_sin_turns(v[k], &ck, &sk);
      c[k] = radius * ck;
      s[k] = radius * sk;
    }
    for (uint64_t k = 0; k < n; ++k) {
      out[2 * (b + k)] = c[k];
      out[2 * (b + k) + 1] = s[k];
    }
  }
}

void fill_normals(uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  uint64_t i = begin;
  if (i < end && (i & 1)) *out++ = standard_normal(seed, i++);
  const uint64_t pairs = (end - i) / 2;
  fill_normal_pairs(seed, i >> 1, pairs, out);
  out += 2 * pairs;
  i += 2 * pairs;
  if (i < end) *out++ = standard_normal(seed, i);
}

void normal(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  fill_normals(seed, begin, end, out);
  const double mean = p.param("mean", 0.0), std = p.param("std", 1.0);
  for (uint64_t i = 0; i < end - begin; ++i) out[i] = mean + std * out[i];
}

void uniform(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  const double lo = p.param("low", 0.0), hi = p.param("high", 1.0);
  for (uint64_t i = begin; i < end; ++i) *out++ = lo + (hi - lo) * uniform_open01(seed, i);
}

// Integers uniform in [low, high], inclusive.
void uniform_int(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  const double lo = p.param("low", 0.0), hi = p.param("high", 1.0);
  for (uint64_t i = begin; i < end; ++i) *out++ = std::min(hi, std::floor(lo + (hi - lo + 1) * uniform_open01(seed, i)));
}

// 1 with probability p, else 0 (masks).
void bernoulli(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  const double prob = p.param("p", 0.5);
  for (uint64_t i = begin; i < end; ++i) *out++ = uniform_open01(seed, i) < prob ? 1.0 : 0.0;
}

// start, start + step, ...
void iota(const ResolvedInit& p, const TensorInstance&, uint64_t, uint64_t begin, uint64_t end, double* out) {
  const double start = p.param("start", 0.0), step = p.param("step", 1.0);
  for (uint64_t i = begin; i < end; ++i) *out++ = start + step * double(i);
}

// N(0,1) times a per-row factor ρ, log-uniform in [scale_low, scale_high]; a row is one index of
// the first `row_dims` dimensions.
void row_scaled_normal(const ResolvedInit& p, const TensorInstance& t, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  const int row_dims = int(p.param("row_dims", double(t.shape.size() - 1)));
  uint64_t row_len = 1;
  for (size_t d = size_t(row_dims); d < t.shape.size(); ++d) row_len *= uint64_t(t.shape[d]);
  const double lo = std::log(p.param("scale_low", 1e-2)), hi = std::log(p.param("scale_high", 1e2));
  fill_normals(seed, begin, end, out);
  // A row at a time: one division for the range, not a 64-bit division per element.
  if (begin >= end || row_len == 0) return;
  const uint64_t row_seed = derive_seed(seed, 0x524F57);
  for (uint64_t row = begin / row_len, i = begin; i < end; ++row) {
    const double rho = std::exp(lo + (hi - lo) * uniform_open01(row_seed, row));
    const uint64_t row_end = std::min(end, (row + 1) * row_len);
    for (; i < row_end; ++i) out[i - begin] *= rho;
  }
}

// For a tensor (..., R, C): element (..., r, c) is a normal that depends only on (..., r − c), like a
// learned relative-position bias table t[h, i − j] broadcast to a dense (H, S, S) tensor.
void toeplitz_normal(const ResolvedInit& p, const TensorInstance& t, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  if (t.shape.size() < 2) throw SpecError(fmt::format("input {}: toeplitz_normal needs at least 2 dimensions", t.name));
  const uint64_t R = uint64_t(t.shape[t.shape.size() - 2]), C = uint64_t(t.shape.back());
  const double mean = p.param("mean", 0.0), std = p.param("std", 1.0);
  for (uint64_t i = begin; i < end; ++i) {
    const uint64_t prefix = i / (R * C), r = (i / C) % R, c = i % C;
    *out++ = mean + std * standard_normal(seed, prefix * (R + C) + (r + C - c));
  }
}

struct ElementDistribution {
  DistributionInfo info;
  RangeFn fn;
};

const ElementDistribution kElementDistributions[] = {
    {{"normal", "mean, std", "Gaussian"}, normal},
    {{"uniform", "low, high", "uniform on [low, high)"}, uniform},
    {{"uniform_int", "low, high", "integers uniform on [low, high]"}, uniform_int},
    {{"bernoulli", "p", "1 with probability p, else 0"}, bernoulli},
    {{"iota", "start, step", "start + step·i"}, iota},
    {{"row_scaled_normal", "row_dims, scale_low, scale_high",
      "N(0,1) times a per-row factor, log-uniform in [scale_low, scale_high]"}, row_scaled_normal},
    {{"toeplitz_normal", "mean, std", "element (..., i, j) depends only on (..., i - j)"}, toeplitz_normal},
};

// Whole-tensor generators of integer metadata (see generators.h); they see the set seed so that
// tensors of one scenario agree.
std::vector<int32_t> whole_tensor(const TensorInstance& t, uint64_t set_seed, uint64_t stream_seed) {
  const ResolvedInit& p = t.init;
  const int64_t n = int64_t(t.numel());
  auto need = [&](const char* name) {
    auto it = p.params.find(name);
    if (it == p.params.end()) throw SpecError(fmt::format("input {}: {} needs parameter '{}'", t.name, p.dist, name));
    return it->second;
  };
  if (p.dist == "permutation") return random_permutation(n, stream_seed);
  if (p.dist == "partition")
    return ragged_partition(n, int64_t(need("total")), int64_t(p.param("empty", 0)), p.param("skew", 1.0), stream_seed);
  if (p.dist == "lengths_with_edges")
    return lengths_with_edges(n, int64_t(need("low")), int64_t(need("high")), int64_t(need("edge")), stream_seed);
  if (p.dist == "ragged_batch") {
    RaggedBatch b = ragged_batch(int64_t(need("tokens")), int64_t(need("slots")), int64_t(need("max_kv")), int64_t(need("page_size")),
                                 int64_t(need("chunk")), int64_t(p.param("pad_tokens", 0)), derive_seed(set_seed, 0x7261676765));
    const int field = int(need("field"));  // 0: kv_lens, 1: cu_q_lens, 2: num_seqs
    std::vector<int32_t> v = field == 0 ? b.kv_lens : field == 1 ? b.cu_q_lens : std::vector<int32_t>{b.num_seqs};
    if (int64_t(v.size()) != n)
      throw SpecError(fmt::format("input {}: ragged_batch field {} has {} values, the tensor {}", t.name, field, v.size(), n));
    return v;
  }
  throw SpecError(fmt::format("input {}: unknown distribution '{}'", t.name, p.dist));
}

const std::vector<DistributionInfo> kWholeTensorInfo = {
    {"permutation", "", "a random permutation of 0..numel-1 (page tables)"},
    {"partition", "total, empty, skew", "group sizes summing to total, skewed, with `empty` zero groups"},
    {"lengths_with_edges", "low, high, edge", "lengths uniform in [low, high] including low, edge, edge+1, high"},
    {"ragged_batch", "field, tokens, slots, max_kv, page_size, chunk, pad_tokens",
     "one ragged paged-attention batch; field 0 kv_lens, 1 cu_q_lens, 2 num_seqs"},
};

// One loop per type, so that the f32 one (nearly every input) vectorises: with the type test inside
// the loop it ran element by element (6% of the parent's samples at 12p's cpu size).
__attribute__((optimize("tree-vectorize"), target_clones("arch=x86-64-v4", "avx2", "default"))) void store(void* data, uint64_t offset, const double* values, uint64_t count, DType dtype) {
  if (dtype == DType::f32) {
    float* out = static_cast<float*>(data) + offset;
    for (uint64_t i = 0; i < count; ++i) out[i] = float(values[i]);
  } else if (dtype == DType::i32) {
    int32_t* out = static_cast<int32_t*>(data) + offset;
    for (uint64_t i = 0; i < count; ++i) out[i] = int32_t(std::lround(values[i]));
  } else {  // bf16, round to nearest even
    uint16_t* out = static_cast<uint16_t*>(data) + offset;
    for (uint64_t i = 0; i < count; ++i) {
      float f = float(values[i]);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      bits += 0x7FFF + ((bits >> 16) & 1);
      out[i] = uint16_t(bits >> 16);
    }
  }
}

}  // namespace

const std::vector<DistributionInfo>& known_distributions() {
  static const std::vector<DistributionInfo> all = [] {
    std::vector<DistributionInfo> v;
    for (const auto& d : kElementDistributions) v.push_back(d.info);
    v.insert(v.end(), kWholeTensorInfo.begin(), kWholeTensorInfo.end());
    return v;
  }();
  return all;
}

namespace {

RangeFn element_fn(const TensorInstance& tensor) {
  for (const auto& d : kElementDistributions)
    if (tensor.init.dist == d.info.name) return d.fn;
  return nullptr;
}

}  // namespace

bool element_wise(const TensorInstance& tensor) { return element_fn(tensor) != nullptr; }

void fill_input(void* data, const TensorInstance& tensor, uint64_t set_seed, size_t tensor_index, int threads) {
  if (element_wise(tensor)) return fill_input_range(data, tensor, set_seed, tensor_index, 0, tensor.numel(), threads);
  const uint64_t seed = derive_seed(set_seed, tensor_index + 1);
  std::vector<int32_t> values = whole_tensor(tensor, set_seed, seed);
  std::vector<double> as_double(values.begin(), values.end());
  store(data, 0, as_double.data(), tensor.numel(), tensor.dtype);
}

void fill_input_range(void* data, const TensorInstance& tensor, uint64_t set_seed, size_t tensor_index, uint64_t first, uint64_t last,
                      int threads) {
  const uint64_t seed = derive_seed(set_seed, tensor_index + 1);
  const RangeFn fn = element_fn(tensor);
  if (!fn) throw std::logic_error("fill_input_range: " + tensor.name + " is not drawn element by element");
  const uint64_t n = last - first;
  // Element b of the tensor goes to data[b - first].
  auto work = [&](uint64_t begin, uint64_t end) {
    std::vector<double> chunk(4096);
    for (uint64_t b = begin; b < end; b += chunk.size()) {
      const uint64_t e = std::min<uint64_t>(end, b + chunk.size());
      fn(tensor.init, tensor, seed, first + b, first + e, chunk.data());
      store(data, b, chunk.data(), e - b, tensor.dtype);
    }
  };
  const int t = std::max(1, std::min<int>(threads, int(n / 65536) + 1));
  parallel_for(size_t(t), t, [&](size_t k, size_t) { work(n * uint64_t(k) / uint64_t(t), n * uint64_t(k + 1) / uint64_t(t)); });
}

}  // namespace opbench
