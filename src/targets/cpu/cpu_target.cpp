#include "targets/cpu/cpu_target.h"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"
#include "targets/cpu/isa_check.h"
#include "targets/cpu/isa_level.h"
#include "targets/cpu/shared_arena.h"
#include "targets/cpu/symbol_check.h"
#include "targets/cpu/worker_client.h"

namespace opbench::cpu {
namespace {

// opbench-worker lives next to the opbench executable; $OPBENCH_WORKER overrides it.
std::filesystem::path find_worker_program() {
  if (const char* env = std::getenv("OPBENCH_WORKER"); env && *env) return env;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto candidate = self.parent_path() / "opbench-worker";
  if (!ec && std::filesystem::exists(candidate)) return candidate;
  throw UsageError(fmt::format("opbench-worker not found next to {}; build it (make build) or set OPBENCH_WORKER", self.string()));
}

}  // namespace

CpuTarget::CpuTarget() : compiler_(CompilerConfig::from_environment()), worker_program_(find_worker_program()) {}

std::string CpuTarget::vet(const BuildOutcome& kernel) {
  try {
    if (std::string refusal = check_imports(read_dynamic_imports(kernel.artifact)); !refusal.empty()) return refusal;
    return check_instruction_set(kernel.artifact, resolve_isa_level(kernel.isa));
  } catch (const std::exception& e) {
    return std::string("the built kernel could not be inspected: ") + e.what();
  }
}

std::unique_ptr<BufferSet> CpuTarget::allocate(const std::vector<TensorInstance>& tensors, int sets, const std::string& label) {
  return std::make_unique<SharedArena>(tensors, sets, label);
}

LaunchOutcome CpuTarget::launch(const BuildOutcome& kernel, BufferSet& inputs, BufferSet& outputs, const LaunchOptions& options) {
  auto* in = dynamic_cast<SharedArena*>(&inputs);
  auto* out = dynamic_cast<SharedArena*>(&outputs);
  if (!in || !out) throw std::logic_error("cpu target: buffers were not allocated by this target");
  // The worker runs the vendor libraries at the level the kernel was built at.
  LaunchOptions at_level = options;
  at_level.isa = kernel.isa;
  return WorkerClient::start(worker_program_, kernel.artifact, *in, *out, at_level);
}

TargetInfo target_info() {
  TargetInfo t;
  t.name = "cpu";
  t.summary = "x86-64 CPU: one C++ file built with the system compiler, run in sandboxed worker processes";
  t.sizes = {"test", "cpu", "full"};
  t.default_size = "cpu";
  t.source_extension = ".cpp";
  t.context_dir = "cpu";
  t.make = [] { return std::make_unique<CpuTarget>(); };
  t.isa_levels = isa_level_names();
  t.resolve_isa = [](const std::string& name) { return isa_level_name(resolve_isa_level(name)); };
  return t;
}

}  // namespace opbench::cpu

