#include "targets/cuda/cuda_target.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"
#include "targets/cpu/shared_arena.h"
#include "targets/cpu/symbol_check.h"
#include "targets/cpu/worker_client.h"
#include "targets/cuda/device_peaks.h"
#include "targets/cuda/gpu_probe.h"

namespace opbench::cuda {
namespace {

namespace fs = std::filesystem;

// opbench-cuda-worker lives next to the opbench executable; $OPBENCH_CUDA_WORKER overrides it.
fs::path find_worker_program() {
  if (const char* env = std::getenv("OPBENCH_CUDA_WORKER"); env && *env) return env;
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  return self.parent_path() / "opbench-cuda-worker";
}

std::string worker_missing() {
  const fs::path worker = find_worker_program();
  return fs::exists(worker) ? std::string() : fmt::format("{} not found (opbench was built without the CUDA toolkit?)", worker.string());
}

// What a candidate may import on this target beyond the cpu list: the CUDA runtime (launches,
// memory, streams, events, the driver entry point TMA descriptors need). cuBLAS, cuDNN and the
// driver library itself are not on it; neither are the IPC calls that reach other processes' memory.
cpu::ImportPolicy candidate_policy() {
  cpu::ImportPolicy p;
  p.libraries = {"libcudart.so.13", "libcudart.so.12"};
  p.symbol_prefixes = {"cuda", "__cuda"};
  p.forbidden_prefixes = {"cudaIpc", "cudaDeviceReset", "cudaSetDevice", "cudaDeviceSetLimit", "cudaProfiler"};
  p.allowed_text = ", and the CUDA runtime (libcudart); cuBLAS, cuDNN and the driver library are for baselines only";
  return p;
}

// The driver's files the worker needs inside the sandbox: its device nodes and the folder of the
// libcuda.so.1 the parent's probe loaded (with the libraries beside it, such as the PTX JIT).
void add_driver_view(cpu::WorkerTraits& traits) {
  for (const char* node : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidia-modeset"})
    if (fs::exists(node)) traits.device_nodes.push_back(node);
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    link_map* map = nullptr;
    if (dlinfo(driver, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) traits.read_only.push_back(fs::path(map->l_name).parent_path().string());
  }
  for (const char* path : {"/usr/local/nvidia", "/etc/ld.so.cache", "/proc/driver/nvidia"})
    if (fs::exists(path)) traits.read_only.push_back(path);
}

}  // namespace

CudaTarget::CudaTarget() : nvcc_(NvccConfig::from_environment()), worker_program_(find_worker_program()) {}

std::string CudaTarget::vet(const BuildOutcome& kernel) {
  try {
    return cpu::check_imports(cpu::read_dynamic_imports(kernel.artifact), candidate_policy());
  } catch (const std::exception& e) {
    return std::string("the built kernel could not be inspected: ") + e.what();
  }
}

std::unique_ptr<BufferSet> CudaTarget::allocate(const std::vector<TensorInstance>& tensors, int sets, const std::string& label) {
  // The parent's staging copy; the worker keeps the device copy (cuda_worker_main.cpp).
  return std::make_unique<cpu::SharedArena>(tensors, sets, label);
}

LaunchOutcome CudaTarget::launch(const BuildOutcome& kernel, BufferSet& inputs, BufferSet& outputs, const LaunchOptions& options) {
  auto* in = dynamic_cast<cpu::SharedArena*>(&inputs);
  auto* out = dynamic_cast<cpu::SharedArena*>(&outputs);
  if (!in || !out) throw std::logic_error("cuda target: buffers were not allocated by this target");
  if (std::string why = worker_missing(); !why.empty()) throw UsageError("the cuda target cannot run: " + why);
  cpu::WorkerTraits traits;
  traits.prepare_requests = true;
  traits.device_timer = true;
  traits.hides_sets = false;  // the kernel sees device copies of its batch's sets only
  traits.limit_address_space = false;
  // Not yet shown to be compatible with the driver's own mappings on a GPU machine: left off, and
  // the result says so (docs/integrity.md, cuda rows).
  traits.deny_exec_after_load = false;
  traits.pin_cpus = false;
  traits.open_files = 1024;
  // The driver needs /proc, /sys and its device files; namespaces with those are not yet verified
  // on a GPU machine, so the cuda worker runs under seccomp and limits only unless asked.
  const char* ns = std::getenv("OPBENCH_CUDA_NAMESPACES");
  traits.namespaces = ns && std::string(ns) == "1";
  if (traits.namespaces) add_driver_view(traits);
  if (!nvcc_.library_dir.empty()) traits.environment.push_back("LD_LIBRARY_PATH=" + nvcc_.library_dir.string());
  traits.environment.push_back("CUDA_CACHE_DISABLE=1");        // no JIT cache files written
  traits.environment.push_back("CUDA_MODULE_LOADING=EAGER");   // modules load at dlopen, not inside the first timed call
  traits.environment.push_back("CUDA_DEVICE_MAX_CONNECTIONS=8");
  traits.load_fields["l2_flush"] = !options.warm_l2;
  traits.sandbox_note = "class 6 (executable mappings) not enforced on cuda; the worker copies tensors to and from the device";
  return cpu::WorkerClient::start(worker_program_, kernel.artifact, *in, *out, options, traits);
}

TargetInfo target_info() {
  TargetInfo t;
  t.name = "cuda";
  t.summary = "NVIDIA Hopper GPU (sm_90a): one CUDA C++ file built with nvcc, bf16 tensors, timed by CUDA events";
  t.sizes = {"test", "full"};
  t.default_size = "full";
  t.source_extension = ".cu";
  t.float_dtype = DType::bf16;
  t.context_dir = "cuda";
  t.unavailable = [] {
    if (std::string why = NvccConfig::from_environment().why_not; !why.empty()) return why;
    if (std::string why = worker_missing(); !why.empty()) return why;
    const GpuProbe& gpu = gpu_probe();
    return gpu.why_not;
  };
  t.unbuildable = [] { return NvccConfig::from_environment().why_not; };
  t.make = [] { return std::make_unique<CudaTarget>(); };
  t.device_model = [] { return gpu_probe().name; };
  t.architecture = "sm_90a";
  t.measure_peaks = measure_device_peaks;
  return t;
}

}  // namespace opbench::cuda
