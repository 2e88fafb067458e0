// 7p_Ragged_Paged_Attention baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits for ragged paged attention:
// per (active sequence, kv head), gather the sequence's first kv_len keys and values from the page
// table into contiguous buffers, then per block of query rows pack the rows of the G = Hq/Hkv query
// heads that share the kv head, one SGEMM for the scores against the keys the block can see (causal
// limit of its last row), a fused mask + softmax loop, and one SGEMM for P·V. Pages past kv_len are
// never read; rows of no active sequence are zeroed.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <omp.h>
#include <bit>
#include <cmath>
#include <cstring>

OB_DEFINE_ABI_VERSION()

constexpr int64_t kRowTokens = 32;  // query tokens per block: 32·G packed rows per SGEMM

// Per thread: gathered K and V (L × D each), packed queries and outputs (32·G × D each), scores (32·G × L).
static int64_t per_thread_floats(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& kv = call->inputs[1];
  const int64_t Hq = q.shape[1], D = q.shape[2], Hkv = kv.shape[2] / 2;
  const int64_t L = kv.shape[1] * call->inputs[3].shape[1], M = kRowTokens * (Hq / Hkv);
  return (2 * L * D + 2 * M * D + M * L + 15) / 16 * 16;
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
  const ob_tensor& kv = call->inputs[1];
  const int64_t T = q.shape[0], Hq = q.shape[1], D = q.shape[2];
  const int64_t PS = kv.shape[1], Hkv = kv.shape[2] / 2, PPS = call->inputs[3].shape[1];
  const int64_t L = PS * PPS, G = Hq / Hkv, M = kRowTokens * G;
  const float* Q = static_cast<const float*>(q.data);
  const float* KV = static_cast<const float*>(kv.data);
  const int32_t* kv_lens = static_cast<const int32_t*>(call->inputs[2].data);
  const int32_t* pages = static_cast<const int32_t*>(call->inputs[3].data);
  const int32_t* cu_q_lens = static_cast<const int32_t*>(call->inputs[4].data);
  const int64_t num_seqs = static_cast<const int32_t*>(call->inputs[5].data)[0];
  float* O = static_cast<float*>(call->outputs[0].data);
  const int64_t slice = per_thread_floats(call);
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t row = Hq * D;  // floats per token row of queries / out

  // Rows before the first and after the last active sequence belong to none: zero.
  const int64_t first = cu_q_lens[0], last = cu_q_lens[num_seqs];
  std::memset(O, 0, size_t(first * row) * sizeof(float));
  std::memset(O + last * row, 0, size_t((T - last) * row) * sizeof(float));

  // One task per (sequence, kv head), prefill chunks (the last sequences) first for load balance;
  // the vendor SGEMM runs single-threaded inside the region.
#pragma omp parallel for schedule(dynamic, 1) num_threads(call->num_threads)
  for (int64_t task = num_seqs * Hkv - 1; task >= 0; --task) {
    const int64_t i = task / Hkv, g = task % Hkv;
    float* Kb = static_cast<float*>(call->workspace) + omp_get_thread_num() * slice;  // (L_kv × D)
    float* Vb = Kb + L * D;                                                             // (L_kv × D)
    float* Qp = Vb + L * D;                                                             // (M × D)
    float* Op = Qp + M * D;                                                             // (M × D)
    float* S = Op + M * D;                                                              // (M × n)
    const int64_t q_start = cu_q_lens[i], L_q = cu_q_lens[i + 1] - q_start, L_kv = kv_lens[i];
    for (int64_t t0 = 0; t0 < L_kv; t0 += PS) {
      const float* page = KV + int64_t(pages[i * PPS + t0 / PS]) * PS * 2 * Hkv * D;
      const int64_t n = L_kv - t0 < PS ? L_kv - t0 : PS;
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(Kb + (t0 + j) * D, page + (j * 2 * Hkv + 2 * g) * D, D * sizeof(float));
        std::memcpy(Vb + (t0 + j) * D, page + (j * 2 * Hkv + 2 * g + 1) * D, D * sizeof(float));
      }
    }
    for (int64_t r0 = 0; r0 < L_q; r0 += kRowTokens) {
      const int64_t tokens = L_q - r0 < kRowTokens ? L_q - r0 : kRowTokens, rows = tokens * G;
      const int64_t n = L_kv - L_q + r0 + tokens;  // keys visible to the block's last row
      // Packed row m = (token r0 + m / G, head g·G + m mod G): the group's heads are adjacent in a token row.
      for (int64_t r = 0; r < tokens; ++r)
        std::memcpy(Qp + r * G * D, Q + (q_start + r0 + r) * row + g * G * D, G * D * sizeof(float));
      ob_vendor_sgemm('N', 'T', int(rows), int(n), int(D), scale, Qp, int(D), Kb,
                  int(D), 0.0f, S, int(n));
      for (int64_t m = 0; m < rows; ++m) {
        float* __restrict s = S + m * n;
        const int64_t visible = L_kv - L_q + r0 + m / G + 1;  // keys t <= P_r
        float mx = s[0];
#pragma omp simd reduction(max : mx)
        for (int64_t t = 0; t < visible; ++t) mx = s[t] > mx ? s[t] : mx;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t t = 0; t < visible; ++t) {
          s[t] = vexp(s[t] - mx);
          sum += s[t];
        }
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int64_t t = 0; t < visible; ++t) s[t] *= inv;
        for (int64_t t = visible; t < n; ++t) s[t] = 0.0f;
      }
      ob_vendor_sgemm('N', 'N', int(rows), int(D), int(n), 1.0f, S, int(n), Vb,
                  int(D), 0.0f, Op, int(D));
      for (int64_t r = 0; r < tokens; ++r)
        std::memcpy(O + (q_start + r0 + r) * row + g * G * D, Op + r * G * D, G * D * sizeof(float));
    }
  }
  return 0;
}
