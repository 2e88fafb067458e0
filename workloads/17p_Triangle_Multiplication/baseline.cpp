// 17p_Triangle_Multiplication baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) emits for the triangle update:
//   1. per block of positions, one SGEMM of pair_act with the five input-side weights side by side
//      (the mask is a per-position scalar, so (m·x)·W = m·(x·W)), then a fused loop that applies the
//      mask and the sigmoid gates and writes Left and Right channel-major, and the output gate;
//   2. the triangle contraction as one SGEMM per channel, T_c = Left_c · Right_cᵀ (N×N×N);
//   3. per block of positions, a fused RMS-norm loop over channels, one SGEMM with W_op, and the
//      product with the gate.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <bit>
#include <cmath>
#include <cstring>
#include <omp.h>

OB_DEFINE_ABI_VERSION()

static constexpr int64_t kBlock = 256;  // positions per block in steps 1 and 3

// Workspace, in floats: the concatenated weights (C, 5C); Left, Right and T channel-major (C, N·N)
// each; per thread one block scratch of 6C·kBlock + kBlock.
static uint64_t workspace_floats(int64_t N, int64_t C, int64_t threads) {
  return uint64_t(5 * C * C + 3 * C * N * N) + uint64_t(threads) * uint64_t(6 * C * kBlock + kBlock);
}

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t N = call->inputs[0].shape[0], C = call->inputs[0].shape[2];
  return workspace_floats(N, C, call->num_threads) * sizeof(float);
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

static inline float sigmoid(float x) { return 1.0f / (1.0f + vexp(-x)); }

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t N = call->inputs[0].shape[0], C = call->inputs[0].shape[2], NN = N * N;
  const float* pair = static_cast<const float*>(call->inputs[0].data);
  const float* mask = static_cast<const float*>(call->inputs[1].data);
  const float* const w_in[5] = {
      static_cast<const float*>(call->inputs[2].data),   // W_lp
      static_cast<const float*>(call->inputs[3].data),   // W_rp
      static_cast<const float*>(call->inputs[4].data),   // W_lg
      static_cast<const float*>(call->inputs[5].data),   // W_rg
      static_cast<const float*>(call->inputs[8].data)};  // W_og
  const float* center_scale = static_cast<const float*>(call->inputs[6].data);
  const float* W_op = static_cast<const float*>(call->inputs[7].data);
  float* out = static_cast<float*>(call->outputs[0].data);
  if (call->workspace_bytes < workspace_floats(N, C, call->num_threads) * sizeof(float)) return 2;
  float* Wcat = static_cast<float*>(call->workspace);  // (C, 5C): [W_lp | W_rp | W_lg | W_rg | W_og]
  float* Lt = Wcat + 5 * C * C;                        // (C, N·N): Left[i, k, c] at c·N·N + i·N + k
  float* Rt = Lt + C * NN;                             // (C, N·N): Right[j, k, c]
  float* Tt = Rt + C * NN;                             // (C, N·N): T[i, j, c]
  float* scratch = Tt + C * NN;
  const int64_t blocks = (NN + kBlock - 1) / kBlock;

  for (int64_t ci = 0; ci < C; ++ci)
    for (int w = 0; w < 5; ++w) std::memcpy(Wcat + ci * 5 * C + w * C, w_in[w] + ci * C, size_t(C) * sizeof(float));

  // 1. Projections. Pt = Wcatᵀ·Xᵀ is (5C, rows) with positions contiguous, so the fused loop writes
  //    Left and Right channel-major with unit stride. The output gate σ(x·W_og) is parked in `out`.
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t p0 = b * kBlock, rows = NN - p0 < kBlock ? NN - p0 : kBlock;
    float* __restrict Pt = scratch + int64_t(omp_get_thread_num()) * (6 * C * kBlock + kBlock);
    ob_vendor_sgemm('T', 'T', int(5 * C), int(rows), int(C), 1.0f, Wcat,
                int(5 * C), pair + p0 * C, int(C), 0.0f, Pt, int(rows));
    const float* __restrict m = mask + p0;
    for (int64_t c = 0; c < C; ++c) {
      const float* __restrict lp = Pt + c * rows;
      const float* __restrict rp = Pt + (C + c) * rows;
      const float* __restrict lg = Pt + (2 * C + c) * rows;
      const float* __restrict rg = Pt + (3 * C + c) * rows;
      float* __restrict l = Lt + c * NN + p0;
      float* __restrict r = Rt + c * NN + p0;
#pragma omp simd
      for (int64_t p = 0; p < rows; ++p) {
        l[p] = m[p] * lp[p] * sigmoid(m[p] * lg[p]);
        r[p] = m[p] * rp[p] * sigmoid(m[p] * rg[p]);
      }
    }
    const float* __restrict og = Pt + 4 * C * rows;
    for (int64_t p = 0; p < rows; ++p) {
      float* __restrict o = out + (p0 + p) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) o[c] = sigmoid(og[c * rows + p]);
    }
  }

  // 2. Triangle contraction, one N×N×N SGEMM per channel (single-threaded inside the parallel loop):
  //    T_c[i, j] = Σ_k Left_c[i, k] · Right_c[j, k].
#pragma omp parallel for schedule(dynamic, 1) num_threads(call->num_threads)
  for (int64_t c = 0; c < C; ++c)
    ob_vendor_sgemm('N', 'T', int(N), int(N), int(N), 1.0f, Lt + c * NN,
                int(N), Rt + c * NN, int(N), 0.0f, Tt + c * NN, int(N));

  // 3. RMS norm over channels, the output projection and the gate, per block of positions (i, j).
#pragma omp parallel for schedule(static) num_threads(call->num_threads)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t p0 = b * kBlock, rows = NN - p0 < kBlock ? NN - p0 : kBlock;
    float* __restrict Ut = scratch + int64_t(omp_get_thread_num()) * (6 * C * kBlock + kBlock);  // (C, rows)
    float* __restrict O = Ut + C * kBlock;                                                        // (rows, C)
    float* __restrict inv = O + C * kBlock;                                                       // (rows)
    for (int64_t p = 0; p < rows; ++p) inv[p] = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      const float* __restrict t = Tt + c * NN + p0;
#pragma omp simd
      for (int64_t p = 0; p < rows; ++p) inv[p] += t[p] * t[p];
    }
    const float invC = 1.0f / float(C);
#pragma omp simd
    for (int64_t p = 0; p < rows; ++p) inv[p] = 1.0f / std::sqrt(inv[p] * invC + 1e-6f);
    for (int64_t c = 0; c < C; ++c) {
      const float* __restrict t = Tt + c * NN + p0;
      float* __restrict u = Ut + c * rows;
      const float s = center_scale[c];
#pragma omp simd
      for (int64_t p = 0; p < rows; ++p) u[p] = t[p] * inv[p] * s;
    }
    ob_vendor_sgemm('T', 'N', int(rows), int(C), int(C), 1.0f, Ut, int(rows),
                W_op, int(C), 0.0f, O, int(C));
#pragma omp simd
    for (int64_t e = 0; e < rows * C; ++e) out[p0 * C + e] *= O[e];
  }
  return 0;
}
