// opbench dump WORKLOAD --out DIR: every input and the reference output as .npy files, with a JSON
// manifest, so a kernel or the math can be checked outside opbench.

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/npy.h"
#include "harness/evaluate.h"
#include "targets/registry.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_dump(CLI::App& root) {
  auto* app = root.add_subcommand("dump", "Write a workload's inputs and reference outputs as .npy files");
  struct Options {
    std::string workload, size, target, out, impl = "reference";
    uint64_t seed = 1;
    std::vector<std::string> set;
  };
  auto o = std::make_shared<Options>();
  app->add_option("workload", o->workload, "Workload id or unique prefix")->required();
  add_target_flags(app, o->target, o->size, "Size class");
  app->add_option("--seed", o->seed, "Seed of the inputs (the same seed gives the same inputs)")->check(seed_value())->capture_default_str();
  app->add_option("--out", o->out, "Folder to write")->required();
  app->add_option("--impl", o->impl, "Implementation that computes the outputs")->check(CLI::IsMember({"reference", "baseline"}))->capture_default_str();
  app->add_option("--set", o->set, "Override a shape symbol, e.g. --set M=256");
  return {app, [o] {
            Registry registry(Registry::default_root());
            const WorkloadSpec& spec = registry.find(o->workload);
            o->size = resolve_size(o->target, o->size);
            auto target = make_target(o->target);
            ResolvedWorkload w = resolve_workload(spec, o->size, parse_overrides(o->set), target->float_dtype());
            progress_line(fmt::format("running the {} of {}", o->impl, spec.id));
            SingleRun run = run_once(w, builtin_implementation(spec, o->impl), *target, o->seed, default_thread_count());
            progress_done();
            std::error_code ec;
            std::filesystem::create_directories(o->out, ec);
            if (ec) throw UsageError(fmt::format("--out {}: cannot create the folder: {}", o->out, ec.message()));
            nlohmann::json manifest = {{"workload", spec.id},
                                       {"size", o->size}, {"seed", o->seed}, {"outputs_from", o->impl},
                                       {"tolerance", {{"atol", w.tolerance.atol}, {"rtol", w.tolerance.rtol}}}};
            for (const auto& [k, v] : w.symbols)
              if (k != "elem") manifest["shape"][k] = v;
            auto write = [&](BufferSet& buffers, const std::vector<TensorInstance>& tensors, const char* role) {
              nlohmann::json list = nlohmann::json::array();
              for (size_t t = 0; t < tensors.size(); ++t) {
                const std::string file = fmt::format("{}.npy", tensors[t].name);
                std::vector<std::byte> host(buffers.bytes(int(t)));
                buffers.read(0, int(t), host.data(), host.size());
                write_npy(std::filesystem::path(o->out) / file, host.data(), tensors[t].dtype, tensors[t].shape);
                nlohmann::json entry = {{"name", tensors[t].name}, {"file", file}, {"dtype", dtype_name(tensors[t].dtype)}, {"shape", tensors[t].shape}};
                if (!tensors[t].init.dist.empty()) entry["init"] = {{"dist", tensors[t].init.dist}, {"params", tensors[t].init.params}};
                list.push_back(entry);
              }
              manifest[role] = list;
            };
            write(*run.inputs, w.inputs, "inputs");
            write(*run.outputs, w.outputs, "outputs");
            // The manifest last: a folder with a manifest has every file it names.
            write_json_atomic(std::filesystem::path(o->out) / "manifest.json", stamp_schema(manifest, "opbench.dump"));
            fmt::print("wrote {} inputs and {} outputs of {} ({} size, seed {}) to {}\n", w.inputs.size(), w.outputs.size(), spec.id,
                       o->size, o->seed, o->out);
            return 0;
          }};
}

}  // namespace opbench::cli
