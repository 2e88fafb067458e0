// The cpu target: fp32 kernels built with the system compiler, run in worker processes on
// shared-memory tensors.
#pragma once

#include "targets/cpu/compiler.h"
#include "targets/registry.h"
#include "targets/target.h"

namespace opbench::cpu {

class CpuTarget final : public Target {
 public:
  CpuTarget();
  std::string name() const override { return "cpu"; }
  DType float_dtype() const override { return DType::f32; }
  BuildOutcome build(const BuildRequest& request) override { return build_kernel(request, compiler_); }
  std::string vet(const BuildOutcome& kernel) override;
  std::unique_ptr<BufferSet> allocate(const std::vector<TensorInstance>& tensors, int sets, const std::string& label) override;
  LaunchOutcome launch(const BuildOutcome& kernel, BufferSet& inputs, BufferSet& outputs, const LaunchOptions& options) override;

  const CompilerConfig& compiler() const { return compiler_; }

 private:
  CompilerConfig compiler_;
  std::filesystem::path worker_program_;
};

// The cpu target's entry in the target registry.
TargetInfo target_info();

}  // namespace opbench::cpu
