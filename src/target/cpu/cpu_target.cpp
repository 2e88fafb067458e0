#include "target/cpu/cpu_target.h"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"
#include "target/cpu/isa_check.h"
#include "target/cpu/shared_arena.h"
#include "target/cpu/symbol_check.h"
#include "target/cpu/worker_client.h"

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
    return check_instruction_set(kernel.artifact);
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
  return WorkerClient::start(worker_program_, kernel.artifact, *in, *out, options);
}

}  // namespace opbench::cpu

namespace opbench {

std::unique_ptr<Target> make_target(const std::string& name) {
  if (name == "cpu") return std::make_unique<cpu::CpuTarget>();
  if (name == "cuda") throw UsageError("the cuda target is not built yet; use --target cpu");
  throw UsageError(fmt::format("unknown target '{}' (available: cpu)", name));
}

}  // namespace opbench
