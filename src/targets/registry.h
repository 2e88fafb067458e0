// The targets opbench knows: what each is called, which size classes it offers, its default size,
// where its prompt context lives and how an implementation file is named. Commands find a target
// here by name; nothing outside this registry names a concrete target class.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "targets/target.h"

namespace opbench {

// A device's ceilings as its target measures them (opbench calibrate on an accelerator target).
struct DevicePeaks {
  std::string model;              // "NVIDIA H200"
  double compute_gflops = 0;      // the compute roof: bf16 tensor-core GEMM through the vendor library
  double fp32_gflops = 0;         // plain fp32 FMA
  double bandwidth_gbps = 0;      // device memory, bytes read plus written (a large copy)
};

struct TargetInfo {
  std::string name;                 // "cpu", "cuda"
  std::string summary;              // one line for --help and `opbench targets`
  std::vector<std::string> sizes;   // size classes this target evaluates (shapes live in each workload.toml)
  std::string default_size;         // the size it optimizes for
  std::string source_extension;     // ".cpp" (cpu), ".cu" (cuda): baseline<ext>, expert<ext>
  DType float_dtype = DType::f32;   // what floating tensors are on it (prompts state it; Target::float_dtype() agrees)
  std::string context_dir;          // folder under context/ with the curated prompt context
  // Empty when the target can run here; otherwise why not (no GPU, no toolkit).
  std::function<std::string()> unavailable;
  // Empty when kernels can be built here even if they cannot run (cuda: nvcc without a GPU);
  // otherwise why not. Unset: building needs what running needs.
  std::function<std::string()> unbuildable;
  std::function<std::unique_ptr<Target>()> make;
  // Accelerator targets: what machine the profile is of (the device's name) and how to measure
  // its ceilings (`quick`: fewer repetitions). Unset: the host CPU's, measured by src/calibrate.
  std::function<std::string()> device_model;
  std::string architecture;         // the level a device profile is of ("sm_90a"); empty: the ISA level
  std::function<DevicePeaks(bool quick, const std::function<void(const std::string&)>& progress)> measure_peaks;
  // Instruction-set levels the target builds at (cpu: x86-64-v3, x86-64-v4, native); empty: none.
  std::vector<std::string> isa_levels;
  // A requested level checked against this host, empty meaning the default; throws UsageError.
  std::function<std::string(const std::string&)> resolve_isa;
};

// Every target compiled into this program, in a fixed order (the first is the default).
const std::vector<TargetInfo>& target_registry();
// The target's declaration by name; throws UsageError naming the known targets.
const TargetInfo& target_info(const std::string& name);
// A ready target by name; throws UsageError when unknown or unavailable here (with the reason).
std::unique_ptr<Target> make_target(const std::string& name);
// A target for building (and vetting) kernels only: on cuda this works with nvcc and no GPU.
std::unique_ptr<Target> make_build_target(const std::string& name);
// The names, for option checks: "cpu", "cuda".
std::vector<std::string> target_names();
// Every size class any target offers, in declaration order (workload specs may declare these).
std::vector<std::string> all_size_classes();

}  // namespace opbench
