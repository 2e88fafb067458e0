#include "targets/cuda/device_peaks.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/files.h"
#include "targets/cuda/cuda_target.h"
#include "targets/cuda/gpu_probe.h"

namespace opbench::cuda {
namespace {

// Seconds per call of one calibration kernel: built as a trusted baseline, warmed up, then the
// fastest of `rounds` batches of `calls` calls by the device's events (a ceiling is a best case).
double seconds_per_call(CudaTarget& target, const std::string& file, int rounds, int calls) {
  const auto source = source_root() / "tools" / "cuda-peaks" / file;
  const BuildOutcome build = target.build({source, "baseline", true, {}, {}});
  if (!build.ok) throw std::runtime_error(fmt::format("{} did not build:\n{}", file, build.log));
  TensorInstance unused;
  unused.name = "unused";
  unused.dtype = DType::f32;
  unused.shape = {1};
  auto in = target.allocate({unused}, 1, "calibrate-inputs");
  auto out = target.allocate({unused}, 1, "calibrate-outputs");
  LaunchOptions options;
  LaunchOutcome launched = target.launch(build, *in, *out, options);
  if (!launched.runner) throw std::runtime_error(fmt::format("{} did not load: {}", file, launched.reason));
  KernelRunner& r = *launched.runner;
  auto batch = [&](int n) {
    BatchOutcome b = r.prepare(0, 1, std::chrono::minutes(5));
    if (b.ok()) b = r.run(0, n, std::chrono::minutes(5));
    if (!b.ok() || b.device_seconds <= 0) throw std::runtime_error(fmt::format("{} failed: {}", file, b.detail));
    return b.device_seconds / n;
  };
  batch(2);  // warm-up: module load, cuBLAS handle, first-touch of the workspace
  double best = 1e30;
  for (int i = 0; i < rounds; ++i) best = std::min(best, batch(calls));
  return best;
}

}  // namespace

DevicePeaks measure_device_peaks(bool quick, const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  const GpuProbe& gpu = gpu_probe();
  if (!gpu.why_not.empty()) throw std::invalid_argument("the cuda target cannot run here: " + gpu.why_not);
  CudaTarget target;
  const int rounds = quick ? 2 : 5, calls = quick ? 3 : 10;
  DevicePeaks p;
  p.model = gpu.name;
  say("bf16 tensor-core GEMM (cuBLAS, 8192^3)");
  p.compute_gflops = 2.0 * 8192.0 * 8192.0 * 8192.0 / seconds_per_call(target, "bf16_gemm.cu", rounds, calls) * 1e-9;
  say("fp32 FMA over the whole grid");
  // Blocks = 8 per SM (at most 4096) of 256 threads, 16 chains x 8192 steps, 2 FLOP each.
  const double threads = 256.0 * std::min(4096, 8 * std::max(1, gpu.multiprocessors));
  p.fp32_gflops = threads * 16.0 * 8192.0 * 2.0 / seconds_per_call(target, "fp32_fma.cu", rounds, calls) * 1e-9;
  say("device memory: 2 GiB copy");
  p.bandwidth_gbps = 2.0 * double(uint64_t(2) << 30) / seconds_per_call(target, "hbm_copy.cu", rounds, calls) * 1e-9;
  return p;
}

}  // namespace opbench::cuda
