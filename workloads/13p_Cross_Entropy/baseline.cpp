// 13p_Cross_Entropy baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits for an unfused LM-head loss, chunked
// over tokens so the logit buffer stays bounded: per chunk one SGEMM into the workspace, then one
// OpenMP loop over the chunk's rows that does max, Σ exp and the label gather.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>

OB_DEFINE_ABI_VERSION()

// Tokens per chunk: up to 1024 rows of logits (65 MB at the cpu size, 525 MB at the full V = 128256)
// bound the buffer without materialising all T·V logits. Chunks of 256 rows made the SGEMMs ≈ 13 %
// slower than one call over all tokens at the cpu size on 2 threads; 512 and more rows match it.
static int64_t chunk_rows(int64_t T) { return T < 1024 ? T : 1024; }

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t T = call->inputs[0].shape[0], V = call->inputs[1].shape[1];
  return uint64_t(chunk_rows(T)) * uint64_t(V) * sizeof(float);
}

// exp as compilers emit it for fused loops (glibc's expf keeps the loop scalar without -ffast-math).
// Cephes range reduction and polynomial, relative error < 1e-7 on [-87, 88]; see 1p_Flash_Attention.
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
  p = std::fma(p, r * r, r) + 1.0f;                           // e^r ≈ 1 + r + r²·p(r)
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);  // · 2^n
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t T = call->inputs[0].shape[0], Hd = call->inputs[0].shape[1];
  const int64_t V = call->inputs[1].shape[1];
  const float* hidden = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const int32_t* labels = static_cast<const int32_t*>(call->inputs[2].data);
  float* loss = static_cast<float*>(call->outputs[0].data);
  float* Z = static_cast<float*>(call->workspace);
  for (int64_t t = 0; t < T; ++t)
    if (labels[t] < 0 || labels[t] >= V) return 1;
  const int64_t chunk = chunk_rows(T);
  for (int64_t t0 = 0; t0 < T; t0 += chunk) {
    const int64_t rows = T - t0 < chunk ? T - t0 : chunk;
    ob_vendor_sgemm('N', 'N', int(rows), int(V), int(Hd), 1.0f,
                hidden + t0 * Hd, int(Hd), W, int(V), 0.0f, Z, int(V));
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
    for (int64_t r = 0; r < rows; ++r) {
      const float* __restrict z = Z + r * V;
      float m = z[0];
#pragma omp simd reduction(max : m)
      for (int64_t v = 0; v < V; ++v) m = z[v] > m ? z[v] : m;  // std::max stays scalar here
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t v = 0; v < V; ++v) sum += vexp(z[v] - m);
      loss[t0 + r] = m + std::log(sum) - z[labels[t0 + r]];
    }
  }
  return 0;
}
