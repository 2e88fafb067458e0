// opbench compare A B: per-workload changes between two sets of saved results; a change is
// significant only when the paired speedups' 95% intervals do not overlap.
#include <fmt/format.h>

#include "cli/commands.h"
#include "report/compare_runs.h"
#include "report/reporter.h"

namespace opbench::cli {

Command add_compare(CLI::App& root) {
  auto* app = root.add_subcommand("compare", "Compare two sets of saved results workload by workload");
  struct Options {
    std::string a, b, format = "console";
  };
  auto o = std::make_shared<Options>();
  app->add_option("a", o->a, "The earlier results (run folder, results.json, result file)")->required();
  app->add_option("b", o->b, "The later results")->required();
  add_format_flag(app, o->format);
  return {app, [o] {
            ReportData a = load_report_inputs({o->a}), b = load_report_inputs({o->b});
            const auto deltas = compare_results(a.results, b.results);
            ReportData out;
            out.title = fmt::format("opbench compare {} {}", o->a, o->b);
            out.tables.push_back(compare_table(deltas, o->a, o->b));
            print_report(o->format, out);
            size_t faster = 0, slower = 0;
            for (const auto& d : deltas) {
              faster += d.verdict == "faster";
              slower += d.verdict == "slower";
            }
            if (o->format == "console")
              fmt::print("\n{} significantly faster, {} significantly slower, {} compared\n", faster, slower, deltas.size());
            return 0;
          }};
}

}  // namespace opbench::cli
