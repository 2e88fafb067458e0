// opbench calibrate --target cuda: HBM bandwidth as a device-to-device copy of 2 GiB with 16-byte
// accesses (bytes read plus bytes written, 4 GiB a call), far beyond the L2.
#include <opbench/cuda_util.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr uint64_t kBytes = uint64_t(2) << 30;

__global__ void copy(const uint4* __restrict__ in, uint4* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) out[i] = in[i];
}

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call*) { return 2 * kBytes; }

extern "C" int32_t ob_run(const ob_call* call) {
  auto* base = static_cast<uint4*>(call->workspace);
  const int64_t n = int64_t(kBytes / sizeof(uint4));
  copy<<<4096, 256, 0, ob_stream(call)>>>(base, base + n, n);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
