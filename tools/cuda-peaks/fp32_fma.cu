// opbench calibrate --target cuda: the fp32 CUDA-core ceiling: every thread of a full grid runs 16
// independent FMA chains (enough to hide the 4-cycle latency) for 8192 steps. Each FMA is 2 FLOP;
// the sums are written so nothing is optimised away.
#include <opbench/cuda_util.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int kChains = 16, kSteps = 8192, kThreads = 256;

__global__ void __launch_bounds__(kThreads) fma_loop(float* out, float seed) {
  float acc[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc[c] = seed + float(threadIdx.x + c);
  const float m = 0.9999f, a = 1e-7f;
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], m, a);
  }
  float total = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) total += acc[c];
  out[blockIdx.x * int64_t(kThreads) + threadIdx.x] = total;
}

}  // namespace

// One block per SM slot: 132 SMs x 8 blocks of 256 threads fill an H200 (the grid is read from the
// device so other Hopper parts fill too).
extern "C" uint64_t ob_workspace_bytes(const ob_call*) { return uint64_t(4096) * kThreads * sizeof(float); }

extern "C" int32_t ob_run(const ob_call* call) {
  int sms = 0;
  OB_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 8 > 4096 ? 4096 : sms * 8;
  fma_loop<<<blocks, kThreads, 0, ob_stream(call)>>>(static_cast<float*>(call->workspace), 1.0f);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
