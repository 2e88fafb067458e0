// 9p_SwiGLU_MLP baseline (cuda). Estimate at full size: 1.154e13 FLOP / 650 TFLOP/s = 17.8 ms for
// the three GEMMs + 1.4 GB of silu·mul traffic / 3.5 TB/s = 0.4 ms -> ~18.2 ms (XLA: 17.61 ms).
//
// What XLA emits for out = (silu(x·Wg) ⊙ (x·Wu))·Wd with bf16 operands: two cuBLAS GEMMs (gate, up)
// with bf16 results, one loop fusion h = silu(g)·u (fp32 math, bf16 result), and one cuBLAS GEMM for
// the down projection. The same here except one rounding: g and u stay fp32 in the workspace (XLA
// rounds them to bf16, and out = h·Wd cancels: with those roundings 13-25 of 920 test-size elements
// fell outside the bf16 tolerance, tests/cuda_emulation); h is bf16, the down GEMM's operand. Cost:
// 2 x 2 B more per g/u element written and read, about 0.4 ms at full size.
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

// h[i] = silu(g[i])·u[i] over n elements: g and u fp32, h bf16 (one rounding). g, u and h are
// 16-byte aligned, so the body moves 8 elements per iteration; the last n % 8 go one at a time.
__global__ void silu_mul_kernel(const float* __restrict__ g, const float* __restrict__ u, ob_bf16* __restrict__ h, int64_t n) {
  const int64_t nvec = n / 8;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec; i += stride) {
    const float4* g4 = reinterpret_cast<const float4*>(g) + 2 * i;
    const float4* u4 = reinterpret_cast<const float4*>(u) + 2 * i;
    const float4 ga = g4[0], gb = g4[1], ua = u4[0], ub = u4[1];
    Vec8 o;
    o.h[0] = __floats2bfloat162_rn(silu_mul(ga.x, ua.x), silu_mul(ga.y, ua.y));
    o.h[1] = __floats2bfloat162_rn(silu_mul(ga.z, ua.z), silu_mul(ga.w, ua.w));
    o.h[2] = __floats2bfloat162_rn(silu_mul(gb.x, ub.x), silu_mul(gb.y, ub.y));
    o.h[3] = __floats2bfloat162_rn(silu_mul(gb.z, ub.z), silu_mul(gb.w, ub.w));
    reinterpret_cast<uint4*>(h)[i] = o.u;
  }
  for (int64_t i = nvec * 8 + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) ob_store(h, i, silu_mul(g[i], u[i]));
}

}  // namespace

// g and u, (B·S, F) fp32 each, and h, (B·S, F) bf16 (2.35 GB at full size).
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t E = call->inputs[1].shape[0], F = call->inputs[1].shape[1];
  const uint64_t TF = uint64_t(ob_numel(&call->inputs[0]) / E) * uint64_t(F);
  return 2 * align_up(TF * sizeof(float)) + align_up(TF * sizeof(ob_bf16));
}

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t E = call->inputs[1].shape[0], F = call->inputs[1].shape[1];
  const int64_t T = ob_numel(&call->inputs[0]) / E;  // tokens, B·S
  const ob_bf16* X = ob_in_bf16(call, 0);
  const ob_bf16* Wg = ob_in_bf16(call, 1);
  const ob_bf16* Wu = ob_in_bf16(call, 2);
  const ob_bf16* Wd = ob_in_bf16(call, 3);
  ob_bf16* Out = ob_out_bf16(call, 0);
  const uint64_t TF = uint64_t(T) * uint64_t(F);
  char* ws = static_cast<char*>(call->workspace);
  float* G = reinterpret_cast<float*>(ws);
  float* U = reinterpret_cast<float*>(ws + align_up(TF * sizeof(float)));
  ob_bf16* H = reinterpret_cast<ob_bf16*>(ws + 2 * align_up(TF * sizeof(float)));
  cudaStream_t s = ob_stream(call);
  cublasHandle_t h = ob_blas(s);
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, F, E, 1.0f, X, E, Wg, F, 0.0f, G, CUDA_R_32F, F));  // g = x·Wg, fp32
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, F, E, 1.0f, X, E, Wu, F, 0.0f, U, CUDA_R_32F, F));  // u = x·Wu, fp32
  const int threads = 256;
  silu_mul_kernel<<<ob_grid_for(ob_cdiv(T * F, 8), threads), threads, 0, s>>>(G, U, H, T * F);
  OB_CUDA_TRY(cudaGetLastError());
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, E, F, 1.0f, H, F, Wd, E, 0.0f, Out, CUDA_R_16BF, E));  // h·Wd
  return 0;
}
