// The HTML report in a real browser: headless Chromium (Debian's package, from scripts/install-deps)
// loads the page made from a real `opbench run` and the test checks what a reader would see: no
// script errors, one roofline point per timed result, a scoreboard that sorts when its header is
// clicked, and a screenshot that is a picture rather than a blank page.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "../e2e/cli_runner.h"
#include "core/files.h"
#include "png_reader.h"

namespace opbench::testing {
namespace {

namespace fs = std::filesystem;

std::string chromium_binary() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(p)) return p;
  return "";
}

ProcessIo run_chromium(const fs::path& scratch, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--user-data-dir=" + (scratch / "chromium-profile").string(), "--enable-logging=stderr", "--v=0",
                                "--virtual-time-budget=3000", "--hide-scrollbars"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_process_io(argv, "", std::chrono::seconds(90));
}

// data-num values of column `col` of the table with id `id`, in the order the DOM holds its rows
// (NaN for an empty cell).
std::vector<double> column_values(const std::string& dom, const std::string& id, size_t col) {
  const size_t start = dom.find("id=\"" + id + "\"");
  const size_t body = dom.find("<tbody>", start);
  const size_t end = dom.find("</tbody>", body);
  std::vector<double> values;
  const std::string rows = dom.substr(body, end - body);
  const std::regex row_re("<tr>(.*?)</tr>"), cell_re("<td[^>]*?(?:data-num=\"([^\"]*)\")?[^>]*>");
  for (auto r = std::sregex_iterator(rows.begin(), rows.end(), row_re); r != std::sregex_iterator(); ++r) {
    const std::string cells = (*r)[1];
    size_t i = 0;
    for (auto c = std::sregex_iterator(cells.begin(), cells.end(), cell_re); c != std::sregex_iterator(); ++c, ++i)
      if (i == col) values.push_back((*c)[1].length() ? std::stod((*c)[1]) : NAN);
  }
  return values;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(ReportInBrowser, PageFromARealRunLoadsPlotsSortsAndPaints) {
  ASSERT_FALSE(chromium_binary().empty()) << "chromium is not installed: run scripts/install-deps";
  const fs::path dir = scratch_dir("browser");
  const fs::path run_dir = dir / "run";
  CliRun run = run_cli({"run", "--size", "test", "--workloads", "8p,12p,1p", "--impl", "baseline,expert,reference", "--max-time", "0.3",
                        "--trials", "1", "--out", run_dir.string()},
                       600);
  // 1: some result is not correct. Its outputs were all checked; under load a timing verdict can call
  // one untrusted, and the page must show that run as well (the trace below names it).
  ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.output;
  const auto doc = read_json(run_dir / "results.json");
  for (const auto& r : doc.at("results")) {
    const std::string status = r.at("status");
    EXPECT_TRUE(status == "correct" || status == "untrusted") << r.at("workload") << " " << status << ": " << r.value("message", "");
  }
  // Every failure below says what the run gave: its statuses, medians and messages.
  std::string summary = "the run's results:\n";
  for (const auto& r : doc.at("results"))
    summary += "  " + r.at("workload").get<std::string>() + "." + r.at("impl").at("kind").get<std::string>() + " " +
               r.at("status").get<std::string>() +
               (r.at("timing").is_null() ? std::string(" (not timed)") : " median " + r.at("timing").at("median_ms").dump() + " ms") + ": " +
               r.value("message", std::string()) + "\n";
  SCOPED_TRACE(summary);
  size_t timed = 0;
  for (const auto& r : doc.at("results")) timed += !r.at("timing").is_null() && r.at("work").at("useful_flops").get<double>() > 0;
  const size_t results = doc.at("results").size();
  ASSERT_EQ(results, 8u);  // 12p has no expert
  ASSERT_GT(timed, 0u);
  ASSERT_TRUE(doc.at("results")[0].contains("roofline")) << "run results carry their roofline position";

  const fs::path page = dir / "report.html";
  CliRun report = run_cli({"report", run_dir.string(), "--html", page.string()});
  ASSERT_EQ(report.exit_code, 0) << report.output;

  // Loaded with a hash that clicks the median column header twice (descending).
  ProcessIo dom = run_chromium(dir, {"--dump-dom", "file://" + page.string() + "#sort=scoreboard:median-ms:desc"});
  ASSERT_TRUE(dom.ok()) << dom.err;
  EXPECT_NE(dom.out.find("data-ready=\"1\""), std::string::npos) << "the page script did not finish";
  // The attribute on <html>, not the script's own text, which names it too.
  const size_t errors_at = dom.out.find(" data-js-errors=\"");
  EXPECT_EQ(errors_at, std::string::npos) << "a script error was recorded: "
                                          << (errors_at == std::string::npos ? "" : dom.out.substr(errors_at, 400));
  for (const std::string& line : {std::string("CONSOLE"), std::string("Uncaught")})
    EXPECT_EQ(dom.err.find(line), std::string::npos) << "console output:\n" << dom.err;
  EXPECT_EQ(count(dom.out, "<circle class=\"point\""), timed) << "one roofline point per timed result";
  EXPECT_NE(dom.out.find("data-sorted-by=\"median-ms:descending\""), std::string::npos);
  const std::vector<double> medians = column_values(dom.out, "scoreboard", 3);
  ASSERT_EQ(medians.size(), results);
  for (size_t i = 1; i < medians.size(); ++i)
    if (!std::isnan(medians[i])) {
      EXPECT_GE(medians[i - 1], medians[i]) << "row " << i << " out of order";
    }
  // The same column in the file as written is in run order, not sorted: the click did the sorting.
  const std::vector<double> written = column_values(read_file(page), "scoreboard", 3);
  EXPECT_NE(written, medians);

  const fs::path shot = dir / "report.png";
  ProcessIo screenshot = run_chromium(dir, {"--screenshot=" + shot.string(), "--window-size=1280,1400", "file://" + page.string()});
  ASSERT_TRUE(fs::exists(shot)) << screenshot.err;
  const Image img = decode_png(read_file(shot));
  EXPECT_GE(img.width, 1000u);
  EXPECT_GE(img.height, 1000u);
  // A blank or failed page is one or two colours; text, the plot's points and bars give many.
  EXPECT_GE(distinct_colours(img), 32u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace opbench::testing
