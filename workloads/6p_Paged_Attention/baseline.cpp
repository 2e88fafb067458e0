// 6p_Paged_Attention baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits for paged decode attention: per
// (sequence, kv head), gather the sequence's first kv_lens[s] keys from the page table into a
// contiguous buffer, one SGEMM for the scores of the G = Hq/Hkv query heads that share the kv head,
// a fused softmax loop, then gather the values into the same buffer and one SGEMM for P·V.
// Pages past kv_lens[s] are never read (their probabilities are exactly 0).
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <omp.h>
#include <bit>
#include <cmath>
#include <cstring>

OB_DEFINE_ABI_VERSION()

// Per thread: one gathered K or V block (L × D) and the scores of one group (G × L).
static int64_t per_thread_floats(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kp = call->inputs[1];
  const int64_t Hq = q.shape[1], D = q.shape[2], PS = kp.shape[1], Hkv = kp.shape[2];
  const int64_t L = PS * call->inputs[4].shape[1], G = Hq / Hkv;
  return (L * D + G * L + 15) / 16 * 16;  // 64-byte aligned slices
}

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(call->num_threads) * uint64_t(per_thread_floats(call)) * sizeof(float);
}

// exp as compilers emit it for fused loops (see 1p_Flash_Attention): Cephes range reduction and
// polynomial, relative error < 1e-7 on [-87, 88], vectorizable under `omp simd`.
static inline float vexp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = std::fma(x, 1.44269504f, 12582912.0f) - 12582912.0f;
  const float r = std::fma(n, 2.12194440e-4f, std::fma(n, -0.693359375f, x));
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r) + 1.0f;
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kp = call->inputs[1];
  const int64_t N = q.shape[0], Hq = q.shape[1], D = q.shape[2];
  const int64_t PS = kp.shape[1], Hkv = kp.shape[2], PPS = call->inputs[4].shape[1];
  const int64_t G = Hq / Hkv;
  const float* Q = static_cast<const float*>(q.data);
  const float* K = static_cast<const float*>(kp.data);
  const float* V = static_cast<const float*>(call->inputs[2].data);
  const int32_t* kv_lens = static_cast<const int32_t*>(call->inputs[3].data);
  const int32_t* pages = static_cast<const int32_t*>(call->inputs[4].data);
  const int32_t* cu_q_lens = static_cast<const int32_t*>(call->inputs[5].data);
  float* O = static_cast<float*>(call->outputs[0].data);
  const int64_t slice = per_thread_floats(call);
  const float scale = 1.0f / std::sqrt(float(D));
  // One task per (sequence, kv head); the vendor SGEMM runs single-threaded inside the region.
#pragma omp parallel for schedule(dynamic, 1) num_threads(call->num_threads)
  for (int64_t task = 0; task < N * Hkv; ++task) {
    const int64_t s = task / Hkv, g = task % Hkv;
    float* buf = static_cast<float*>(call->workspace) + omp_get_thread_num() * slice;  // (len × D)
    float* P = buf + (slice - G * PS * PPS);                                            // (G × len)
    const int64_t len = kv_lens[s];
    // Rows t = 0 .. len-1 of kv head g of one cache, in logical order, into buf.
    auto gather = [&](const float* cache) {
      for (int64_t t0 = 0; t0 < len; t0 += PS) {
        const float* page = cache + (int64_t(pages[s * PPS + t0 / PS]) * PS * Hkv + g) * D;
        const int64_t n = len - t0 < PS ? len - t0 : PS;
        for (int64_t j = 0; j < n; ++j) std::memcpy(buf + (t0 + j) * D, page + j * Hkv * D, D * sizeof(float));
      }
    };
    const float* Qg = Q + (int64_t(cu_q_lens[s]) * Hq + g * G) * D;  // the G heads of the group, (G × D)
    gather(K);
    ob_vendor_sgemm('N', 'T', int(G), int(len), int(D), scale, Qg, int(D), buf,
                int(D), 0.0f, P, int(len));
    for (int64_t r = 0; r < G; ++r) {
      float* __restrict row = P + r * len;
      float m = row[0];
#pragma omp simd reduction(max : m)
      for (int64_t t = 0; t < len; ++t) m = row[t] > m ? row[t] : m;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t t = 0; t < len; ++t) {
        row[t] = vexp(row[t] - m);
        sum += row[t];
      }
      const float inv = 1.0f / sum;
#pragma omp simd
      for (int64_t t = 0; t < len; ++t) row[t] *= inv;
    }
    gather(V);
    ob_vendor_sgemm('N', 'N', int(G), int(D), int(len), 1.0f, P, int(len), buf,
                int(D), 0.0f, O + (s * Hq + g * G) * D, int(D));
  }
  return 0;
}
