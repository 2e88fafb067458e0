// 10p_Sparse_MoE baseline (cuda). Estimate at full size (dense over all 8 experts, as JAXBench and
// XLA compute it): 2.309e13 FLOP / 650 TFLOP/s = 35.5 ms + per expert 0.7 GB of silu·mul traffic and
// the fp32 accumulation into out (8 × ~1 GB / 3.5 TB/s = 2.3 ms) -> ~37.5 ms (XLA: 36.45 ms).
//
// The dense formulation XLA compiles JAXBench's reference to: a router fusion (logits, top-2, softmax
// of the two selected logits, gate weight 0 for the six others), then for every expert n two cuBLAS
// GEMMs (gate, up; bf16 results in XLA, fp32 here: with XLA's roundings 2 of 2610 test-size elements
// fell outside the bf16 tolerance at seeds 2 and 4, tests/cuda_emulation), one loop fusion
// h = w_n·silu(g)·u (fp32 math, bf16 result) and the
// down-projection GEMM, which accumulates w_n·y_n into the fp32 output (beta = 1 after the first
// expert): w·(h·Wd) = (w·h)·Wd. Every expert processes every token.
//
// Router: the workload specifies fp32-or-wider logits and compares against a double reference, and
// selection is discontinuous (a 2nd/3rd-place gap below the fp32 rounding error flips an expert and
// changes that token's output by O(1)). So the router accumulates the logits in double, like the cpu
// baseline (T·E·NE = 2.7e8 FP64 multiply-adds and one read of x: ~30 µs). Ties go to the lower index.
//
// Doubt: JAXBench rounds each expert's y_n to bf16 before the fp32 weighted sum; here y_n·w_n is
// accumulated in fp32 straight from cuBLAS (more accurate, same cost).
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr uint64_t kAlign = 256;
uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

constexpr int kRouterChunk = 8;  // experts accumulated at once per lane (registers: 8 doubles)

// One warp per token: logits l[n] = Σ_e x[t,e]·Wr[e,n] in double, then lane 0 picks the top 2 (lower
// index first among equal logits) and writes the gate weights gate[t, 0..NE) (fp32; 0 for experts
// not selected). logit is a (T, NE) double scratch.
__global__ void router_kernel(const ob_bf16* __restrict__ x, const ob_bf16* __restrict__ wr, double* __restrict__ logit,
                              float* __restrict__ gate, int64_t T, int64_t E, int NE) {
  const int lane = threadIdx.x & 31;
  const int64_t t = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (t >= T) return;  // whole warps leave together (t is uniform over a warp)
  const ob_bf16* xt = x + t * E;
  double* lt = logit + t * NE;
  for (int n0 = 0; n0 < NE; n0 += kRouterChunk) {
    double acc[kRouterChunk];
#pragma unroll
    for (int k = 0; k < kRouterChunk; ++k) acc[k] = 0.0;
    for (int64_t e = lane; e < E; e += 32) {
      const double xe = double(ob_load(xt, e));
      const ob_bf16* w = wr + e * NE;
#pragma unroll
      for (int k = 0; k < kRouterChunk; ++k)
        if (n0 + k < NE) acc[k] += xe * double(ob_load(w, n0 + k));
    }
#pragma unroll
    for (int k = 0; k < kRouterChunk; ++k) {
      double v = acc[k];
      for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
      if (lane == 0 && n0 + k < NE) lt[n0 + k] = v;
    }
  }
  if (lane != 0) return;
  int e0 = 0;
  for (int n = 1; n < NE; ++n)
    if (lt[n] > lt[e0]) e0 = n;
  int e1 = e0 == 0 ? 1 : 0;
  for (int n = 0; n < NE; ++n)
    if (n != e0 && lt[n] > lt[e1]) e1 = n;
  const double r = exp(lt[e1] - lt[e0]);
  float* gt = gate + t * NE;
  for (int n = 0; n < NE; ++n) gt[n] = 0.0f;
  gt[e0] = float(1.0 / (1.0 + r));
  gt[e1] = float(r / (1.0 + r));
}

union Vec8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// h[t, f] = gate[t, n]·silu(g[t, f])·u[t, f] over the (T, F) activations: g and u fp32, h bf16 (one
// rounding, the down projection's A operand). kVec: F is a multiple of 8 (and g, u, h are 16-byte
// aligned), so each group of 8 lies in one row.
template <bool kVec>
__global__ void gated_silu_mul_kernel(const float* __restrict__ g, const float* __restrict__ u, ob_bf16* __restrict__ h,
                                      const float* __restrict__ gate, int64_t T, int64_t F, int NE, int n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (kVec) {
    const int64_t nvec = T * F / 8;
    for (int64_t i = first; i < nvec; i += stride) {
      const float w = gate[(i * 8 / F) * NE + n];
      const float4* g4 = reinterpret_cast<const float4*>(g) + 2 * i;
      const float4* u4 = reinterpret_cast<const float4*>(u) + 2 * i;
      const float4 ga = g4[0], gb = g4[1], ua = u4[0], ub = u4[1];
      Vec8 o;
      o.h[0] = __floats2bfloat162_rn(w * silu_mul(ga.x, ua.x), w * silu_mul(ga.y, ua.y));
      o.h[1] = __floats2bfloat162_rn(w * silu_mul(ga.z, ua.z), w * silu_mul(ga.w, ua.w));
      o.h[2] = __floats2bfloat162_rn(w * silu_mul(gb.x, ub.x), w * silu_mul(gb.y, ub.y));
      o.h[3] = __floats2bfloat162_rn(w * silu_mul(gb.z, ub.z), w * silu_mul(gb.w, ub.w));
      reinterpret_cast<uint4*>(h)[i] = o.u;
    }
  } else {
    for (int64_t i = first; i < T * F; i += stride) ob_store(h, i, gate[(i / F) * NE + n] * silu_mul(g[i], u[i]));
  }
}

struct Layout {
  uint64_t logit, gate, g, u, h, total;  // byte offsets into the workspace
};

Layout layout(int64_t T, int64_t F, int64_t NE) {
  Layout l;
  l.logit = 0;
  l.gate = l.logit + align_up(uint64_t(T * NE) * sizeof(double));
  l.g = l.gate + align_up(uint64_t(T * NE) * sizeof(float));
  l.u = l.g + align_up(uint64_t(T * F) * sizeof(float));
  l.h = l.u + align_up(uint64_t(T * F) * sizeof(float));
  l.total = l.h + align_up(uint64_t(T * F) * sizeof(ob_bf16));
  return l;
}

}  // namespace

// Router logits (T, NE) double and gate weights (T, NE) fp32, then one expert's g and u, (T, F) fp32
// each, and h, (T, F) bf16 (1.2 GB at full size).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t NE = call->inputs[2].shape[0], E = call->inputs[2].shape[1], F = call->inputs[2].shape[2];
  const int64_t T = ob_numel(&call->inputs[0]) / E;
  return layout(T, F, NE).total;
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t NE = call->inputs[2].shape[0], E = call->inputs[2].shape[1], F = call->inputs[2].shape[2];
  const int64_t T = ob_numel(&call->inputs[0]) / E;  // tokens, B·S
  if (NE < 2) return 1;                              // top-2 needs two experts
  const ob_bf16* X = ob_in_bf16(call, 0);
  const ob_bf16* Wr = ob_in_bf16(call, 1);  // (E, NE)
  const ob_bf16* Wg = ob_in_bf16(call, 2);  // (NE, E, F)
  const ob_bf16* Wu = ob_in_bf16(call, 3);  // (NE, E, F)
  const ob_bf16* Wd = ob_in_bf16(call, 4);  // (NE, F, E)
  float* Out = static_cast<float*>(call->outputs[0].data);  // (T, E) fp32
  const Layout l = layout(T, F, NE);
  char* ws = static_cast<char*>(call->workspace);
  double* logit = reinterpret_cast<double*>(ws + l.logit);
  float* gate = reinterpret_cast<float*>(ws + l.gate);
  float* G = reinterpret_cast<float*>(ws + l.g);
  float* U = reinterpret_cast<float*>(ws + l.u);
  ob_bf16* H = reinterpret_cast<ob_bf16*>(ws + l.h);
  cudaStream_t s = ob_stream(call);
  cublasHandle_t h = ob_blas(s);

  const int router_threads = 256;  // 8 tokens per block
  router_kernel<<<unsigned(ob_cdiv(T * 32, router_threads)), router_threads, 0, s>>>(X, Wr, logit, gate, T, E, int(NE));
  OB_CUDA_TRY(cudaGetLastError());

  const int threads = 256;
  const bool vec = F % 8 == 0;
  for (int64_t n = 0; n < NE; ++n) {
    OB_CUBLAS_TRY(ob_gemm(h, false, false, T, F, E, 1.0f, X, E, Wg + n * E * F, F, 0.0f, G, CUDA_R_32F, F));
    OB_CUBLAS_TRY(ob_gemm(h, false, false, T, F, E, 1.0f, X, E, Wu + n * E * F, F, 0.0f, U, CUDA_R_32F, F));
    if (vec)
      gated_silu_mul_kernel<true><<<ob_grid_for(T * F / 8, threads), threads, 0, s>>>(G, U, H, gate, T, F, int(NE), int(n));
    else
      gated_silu_mul_kernel<false><<<ob_grid_for(T * F, threads), threads, 0, s>>>(G, U, H, gate, T, F, int(NE), int(n));
    OB_CUDA_TRY(cudaGetLastError());
    // out (+)= (w_n·h)·Wd[n] in fp32; beta = 0 on the first expert (out is not read then).
    OB_CUBLAS_TRY(ob_gemm(h, false, false, T, E, F, 1.0f, H, F, Wd + n * F * E, E, n == 0 ? 0.0f : 1.0f, Out, CUDA_R_32F, E));
  }
  return 0;
}
