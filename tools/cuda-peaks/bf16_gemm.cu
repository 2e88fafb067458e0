// opbench calibrate --target cuda: the bf16 tensor-core ceiling, measured as cuBLAS measures it: one
// 8192 x 8192 x 8192 GEMM (bf16 in, fp32 accumulate, bf16 out) per call on operands filled once with
// pseudo-random values (zeros run faster than real data). 2 * 8192^3 FLOP a call. Built as a trusted
// baseline (it links cuBLAS); ignores its tensors and works in its workspace.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int64_t kN = 8192;

__global__ void fill(ob_bf16* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t x = uint32_t(i) * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    p[i] = __float2bfloat16_rn((float(x & 0xffff) / 65536.0f - 0.5f) * 0.1f);
  }
}

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call*) { return uint64_t(3) * kN * kN * sizeof(ob_bf16); }

extern "C" int32_t ob_run(const ob_call* call) {
  static bool filled = false;
  auto* a = static_cast<ob_bf16*>(call->workspace);
  ob_bf16 *b = a + kN * kN, *c = b + kN * kN;
  cudaStream_t s = ob_stream(call);
  if (!filled) {
    fill<<<1024, 256, 0, s>>>(a, 2 * kN * kN, 1234u);
    OB_CUDA_TRY(cudaGetLastError());
    filled = true;
  }
  OB_CUBLAS_TRY(ob_gemm(ob_blas(s), false, false, kN, kN, kN, 1.0f, a, kN, b, kN, 0.0f, c, CUDA_R_16BF, kN));
  return 0;
}
