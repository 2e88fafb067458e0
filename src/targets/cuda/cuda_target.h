// The cuda target: one .cu file per kernel, built with nvcc for Hopper (sm_90a), run by
// opbench-cuda-worker on device copies of the parent's staging tensors (bf16 floats, fp32
// accumulation), timed by CUDA events with the L2 flushed before every call.
#pragma once

#include "targets/cuda/nvcc_build.h"
#include "targets/registry.h"
#include "targets/target.h"

namespace opbench::cuda {

class CudaTarget final : public Target {
 public:
  CudaTarget();
  std::string name() const override { return "cuda"; }
  DType float_dtype() const override { return DType::bf16; }
  std::string source_extension() const override { return ".cu"; }
  BuildOutcome build(const BuildRequest& request) override { return build_cuda_kernel(request, nvcc_); }
  std::string vet(const BuildOutcome& kernel) override;
  std::unique_ptr<BufferSet> allocate(const std::vector<TensorInstance>& tensors, int sets, const std::string& label) override;
  LaunchOutcome launch(const BuildOutcome& kernel, BufferSet& inputs, BufferSet& outputs, const LaunchOptions& options) override;

  const NvccConfig& nvcc() const { return nvcc_; }

 private:
  NvccConfig nvcc_;
  std::filesystem::path worker_program_;
};

// The cuda target's entry in the target registry. It builds wherever nvcc is; it runs where the
// driver sees a Hopper GPU (and opbench-cuda-worker was built).
TargetInfo target_info();

}  // namespace opbench::cuda
