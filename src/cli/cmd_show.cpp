// opbench show WORKLOAD [--size S]: the spec resolved at a size, work at every size, and the
// reference source, which is the problem statement.
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "report/table.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_show(CLI::App& root) {
  auto* app = root.add_subcommand("show", "Show a workload: shapes, work, tolerances and its reference source");
  struct Options {
    std::string workload, size, target;
    std::vector<std::string> set;
  };
  auto o = std::make_shared<Options>();
  app->add_option("workload", o->workload, "Workload id or unique prefix (e.g. 8p)")->required();
  add_target_flags(app, o->target, o->size, "Size class");
  app->add_option("--set", o->set, "Override a shape symbol, e.g. --set M=256");
  return {app, [o] {
            Registry registry(Registry::default_root());
            const WorkloadSpec& w = registry.find(o->workload);
            o->size = resolve_size(o->target, o->size);
            ResolvedWorkload r = resolve_workload(w, o->size, parse_overrides(o->set));
            fmt::print("{}  ({}, {}, {})\n{}\n\n", w.id, w.category, w.model, w.op_class, w.summary);
            std::vector<std::string> symbols;
            for (const auto& [k, v] : r.symbols)
              if (k != "elem") symbols.push_back(fmt::format("{}={:g}", k, v));
            fmt::print("size {}: {}\n\n", o->size, fmt::join(symbols, " "));
            TextTable tensors({"tensor", "role", "dtype", "shape", "init"});
            for (const auto& t : r.inputs) {
              std::string params;
              for (const auto& [k, v] : t.init.params) params += fmt::format(" {}={:g}", k, v);
              tensors.add_row({t.name, "input", std::string(dtype_name(t.dtype)), fmt::format("{}", t.shape), t.init.dist + params});
            }
            for (const auto& t : r.outputs)
              tensors.add_row({t.name, "output", std::string(dtype_name(t.dtype)), fmt::format("{}", t.shape), ""});
            fmt::print("{}\n", tensors.render());
            TextTable work({"size", "FLOPs", "useful FLOPs", "min bytes (f32)", "FLOP/B"});
            for (const auto& size : size_classes()) {
              ResolvedWorkload s = resolve_workload(w, size);
              work.add_row({size, format_sci(s.flops), format_sci(s.useful_flops), format_sci(s.min_bytes), format_rate(s.intensity())});
            }
            fmt::print("work: flops = {}{}; min_bytes = {}\n{}\n", w.flops,
                       w.useful_flops.empty() ? "" : fmt::format("; useful_flops = {}", w.useful_flops), w.min_bytes, work.render());
            for (const auto& [dtype, tol] : w.tolerances) fmt::print("tolerance {}: atol {:g}, rtol {:g}\n", dtype, tol.atol, tol.rtol);
            fmt::print("\n{}\n", w.description);
            if (!w.changes_from_jaxbench.empty()) fmt::print("Changes from JAXBench:\n{}\n", w.changes_from_jaxbench);
            std::ifstream in(w.implementation("reference"));
            std::ostringstream source;
            source << in.rdbuf();
            fmt::print("--- {} ---\n{}", w.implementation("reference").string(), source.str());
            return 0;
          }};
}

}  // namespace opbench::cli
