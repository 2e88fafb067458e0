// opbench list [--json]: the workloads with their category, model and FLOPs at each size, and the
// workloads whose spec is broken, with the reason (they are listed, never evaluated).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/json_io.h"
#include "core/utf8.h"
#include "report/table.h"
#include "workload/registry.h"

namespace opbench::cli {

Command add_list(CLI::App& root) {
  auto* app = root.add_subcommand("list", "List the workloads");
  auto json_flag = std::make_shared<bool>(false);
  app->add_flag("--json", *json_flag, "Print JSON instead of a table");
  return {app, [json_flag] {
            Registry registry(Registry::default_root());
            if (*json_flag) {
              nlohmann::json out = nlohmann::json::array();
              for (const auto& w : registry.all()) {
                nlohmann::json flops = nlohmann::json::object(), useful = nlohmann::json::object();
                for (const auto& size : size_classes()) {
                  ResolvedWorkload r = resolve_workload(w, size);
                  flops[size] = r.flops;
                  useful[size] = r.useful_flops;
                }
                std::vector<std::string> impls;
                for (const char* kind : {"reference", "baseline", "expert"})
                  if (w.has_implementation(kind)) impls.push_back(kind);
                out.push_back({{"id", w.id}, {"category", w.category}, {"model", w.model}, {"operator", w.op},
                               {"op_class", w.op_class}, {"summary", w.summary}, {"flops", flops},
                               {"useful_flops", useful}, {"implementations", impls}});
              }
              for (const auto& b : registry.broken()) out.push_back({{"id", b.id}, {"broken", true}, {"error", b.reason}});
              fmt::print("{}\n", dump_json(out));
              return 0;
            }
            TextTable table({"workload", "category", "model", "op class", "FLOPs test", "FLOPs cpu", "FLOPs full", "expert"});
            for (const auto& w : registry.all()) {
              std::vector<std::string> row{w.id, w.category, w.model, w.op_class};
              for (const auto& size : size_classes()) row.push_back(format_sci(resolve_workload(w, size).flops));
              row.push_back(w.has_implementation("expert") ? "yes" : "");
              table.add_row(row);
            }
            for (const auto& b : registry.broken())
              table.add_row({b.id, "BROKEN", "", "", "-", "-", "-", ""});
            fmt::print("{}\n{} workloads in {}\n", table.render(), registry.all().size(), registry.root().string());
            if (!registry.broken().empty()) {
              fmt::print("{} broken (their spec does not load; they are left out of every run):\n", registry.broken().size());
              for (const auto& b : registry.broken()) fmt::print("  {}: {}\n", b.id, utf8_sanitize(b.reason));
            }
            return 0;
          }};
}

}  // namespace opbench::cli
