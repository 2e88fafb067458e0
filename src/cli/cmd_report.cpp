// opbench report RESULTS...: render saved results (run folders, result files, search folders) as a
// console table, JSON, CSV, Markdown or a self-contained HTML page, without re-running anything.
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json_io.h"
#include "report/reporter.h"

namespace opbench::cli {

Command add_report(CLI::App& root) {
  auto* app = root.add_subcommand("report", "Render saved results: run folders, result JSON files, search folders");
  struct Options {
    std::vector<std::string> inputs;
    std::string format = "console", html, md, title;
  };
  auto o = std::make_shared<Options>();
  app->add_option("results", o->inputs, "Run folders (results.json), result or run JSON files, search --out folders")->required();
  add_format_flag(app, o->format);
  app->add_option("--html", o->html, "Write a self-contained HTML report to this file");
  app->add_option("--md", o->md, "Write a Markdown report to this file");
  app->add_option("--title", o->title, "Title of the report");
  return {app, [o, app] {
            ReportData data = load_report_inputs(o->inputs);
            if (!o->title.empty()) data.title = o->title;
            else if (o->inputs.size() == 1) data.title = "opbench report: " + o->inputs.front();
            bool wrote = false;
            if (!o->html.empty()) {
              write_text_atomic(o->html, HtmlReporter().render(data));
              fmt::print(stderr, "wrote {}\n", o->html);
              wrote = true;
            }
            if (!o->md.empty()) {
              write_text_atomic(o->md, MarkdownReporter().render(data));
              fmt::print(stderr, "wrote {}\n", o->md);
              wrote = true;
            }
            // With files asked for, stdout stays quiet unless a format was asked for too.
            if (!wrote || app->count("--format") > 0) print_report(o->format, data);
            return 0;
          }};
}

}  // namespace opbench::cli
