// 9p_SwiGLU_MLP baseline (cuda). Estimate at full size: 1.154e13 FLOP / 650 TFLOP/s = 17.8 ms for
// the three GEMMs + 1.4 GB of silu·mul traffic / 3.5 TB/s = 0.4 ms -> ~18.2 ms (XLA: 17.61 ms).
//
// What XLA emits for out = (silu(x·Wg) ⊙ (x·Wu))·Wd with bf16 operands: two cuBLAS GEMMs (gate, up)
// with bf16 results, one loop fusion h = silu(g)·u (fp32 math, bf16 result), and one cuBLAS GEMM for
// the down projection. The same here: g and u are stored in bf16 in the workspace (as XLA rounds
// each GEMM result to bf16), h overwrites g in place.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr uint64_t kAlign = 256;
uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// 8 bf16 in one 16-byte load/store.
union Vec8 {
  uint4 u;
  __nv_bfloat162 h[4];
};

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// h[i] = silu(g[i])·u[i] over n elements, written over g. g and u are 16-byte aligned, so the body
// moves 8 elements per load; the last n % 8 elements go one at a time.
__global__ void silu_mul_kernel(ob_bf16* __restrict__ g, const ob_bf16* __restrict__ u, int64_t n) {
  const int64_t nvec = n / 8;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec; i += stride) {
    Vec8 a, b;
    a.u = reinterpret_cast<const uint4*>(g)[i];
    b.u = reinterpret_cast<const uint4*>(u)[i];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 gf = __bfloat1622float2(a.h[k]);
      const float2 uf = __bfloat1622float2(b.h[k]);
      a.h[k] = __floats2bfloat162_rn(silu_mul(gf.x, uf.x), silu_mul(gf.y, uf.y));
    }
    reinterpret_cast<uint4*>(g)[i] = a.u;
  }
  for (int64_t i = nvec * 8 + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    ob_store(g, i, silu_mul(ob_load(g, i), ob_load(u, i)));
}

}  // namespace

// g and u, (B·S, F) bf16 each (940 MB at full size).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t E = call->inputs[1].shape[0], F = call->inputs[1].shape[1];
  const int64_t T = ob_numel(&call->inputs[0]) / E;
  return 2 * align_up(uint64_t(T) * uint64_t(F) * sizeof(ob_bf16));
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t E = call->inputs[1].shape[0], F = call->inputs[1].shape[1];
  const int64_t T = ob_numel(&call->inputs[0]) / E;  // tokens, B·S
  const ob_bf16* X = ob_in_bf16(call, 0);
  const ob_bf16* Wg = ob_in_bf16(call, 1);
  const ob_bf16* Wu = ob_in_bf16(call, 2);
  const ob_bf16* Wd = ob_in_bf16(call, 3);
  ob_bf16* Out = ob_out_bf16(call, 0);
  ob_bf16* G = static_cast<ob_bf16*>(call->workspace);
  ob_bf16* U = reinterpret_cast<ob_bf16*>(static_cast<char*>(call->workspace) +
                                          align_up(uint64_t(T) * uint64_t(F) * sizeof(ob_bf16)));
  cudaStream_t s = ob_stream(call);
  cublasHandle_t h = ob_blas(s);
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, F, E, 1.0f, X, E, Wg, F, 0.0f, G, CUDA_R_16BF, F));  // g = x·Wg
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, F, E, 1.0f, X, E, Wu, F, 0.0f, U, CUDA_R_16BF, F));  // u = x·Wu
  const int threads = 256;
  silu_mul_kernel<<<ob_grid_for(ob_cdiv(T * F, 8), threads), threads, 0, s>>>(G, U, T * F);
  OB_CUDA_TRY(cudaGetLastError());
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, E, F, 1.0f, G, F, Wd, E, 0.0f, Out, CUDA_R_16BF, E));  // h·Wd
  return 0;
}
