// 8p_GEMM (cuda): a candidate that reaches for another process's device memory through CUDA IPC
// (the baseline's outputs, say). The IPC calls are not on the cuda import list: rejected.
#include <opbench/cuda_util.cuh>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  cudaIpcMemHandle_t handle{};
  void* other = nullptr;
  OB_CUDA_TRY(cudaIpcOpenMemHandle(&other, handle, cudaIpcMemLazyEnablePeerAccess));
  return other ? 0 : 1;
}
