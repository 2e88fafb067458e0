#include <gtest/gtest.h>

#include <regex>

#include "calibrate/roofline.h"
#include "core/error.h"
#include "core/utf8.h"
#include "report/html_charts.h"
#include "report/reporter.h"
#include "report_fixtures.h"

namespace opbench {
namespace {

using testing::made_profile;
using testing::made_result;

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

ReportData sample() {
  ReportData d;
  d.profile = made_profile();
  d.results = {made_result("8p", "baseline", 20, 1.0, 0.98, 1.02, 2e9, 1e8), made_result("8p", "expert", 12, 1.66, 1.6, 1.7, 2e9, 1e8),
               made_result("12p", "baseline", 40, 1.0, 0.99, 1.01, 1e8, 4e8), made_result("12p", "expert", 30, 1.33, 1.3, 1.36, 1e8, 4e8)};
  Result broken = made_result("1p", "candidate", 1, 1, 1, 1);
  broken.status = Status::compile_error;
  broken.timing.reset();
  broken.speedup.reset();
  broken.message = "did not build";
  broken.build_log = "error: <script>alert('x')</script> & \xff\xfe bad bytes \x01";
  broken.kernel_output = "</pre><b>bold</b>";
  d.results.push_back(broken);
  for (auto& r : d.results) attach_roofline(r, *d.profile);
  return d;
}

TEST(Reporter, FormatsByNameAndRefusesOthers) {
  for (const auto& f : reporter_formats()) EXPECT_NE(make_reporter(f), nullptr) << f;
  EXPECT_THROW(make_reporter("xml"), UsageError);
}

TEST(HtmlReporter, EscapesKernelTextAndKeepsItValidUtf8) {
  const std::string html = HtmlReporter().render(sample());
  EXPECT_TRUE(utf8_valid(html));
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp;"), std::string::npos);
  EXPECT_EQ(html.find("<b>bold</b>"), std::string::npos);
  EXPECT_EQ(html.find('\x01'), std::string::npos);
  // Exactly our two scripts (the error hook and the page script), nothing fetched from anywhere.
  EXPECT_EQ(count(html, "<script>"), 2u);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
}

TEST(HtmlReporter, OnePointPerTimedResultAndArrowsPerWorkload) {
  ReportData d = sample();
  const std::string html = HtmlReporter().render(d);
  EXPECT_EQ(roofline_point_count(d.results), 4u);
  EXPECT_EQ(count(html, "<circle class=\"point\""), 4u);
  EXPECT_EQ(count(html, "<line class=\"arrow\""), 2u);  // 8p and 12p: baseline -> expert
  EXPECT_NE(html.find("<title>8p expert:"), std::string::npos);
  EXPECT_NE(html.find("class=\"roof\""), std::string::npos);
  EXPECT_NE(html.find("Not on the plot"), std::string::npos);  // the compile error is listed instead
  EXPECT_EQ(count(html, "<details class=\"result-details\">"), 5u);
  EXPECT_NE(html.find("id=\"scoreboard\""), std::string::npos);
  EXPECT_NE(html.find("id=\"fast-p\""), std::string::npos);
  EXPECT_NE(html.find("id=\"speedups\""), std::string::npos);
}

TEST(HtmlReporter, ArrowsFollowBaselineCandidateExpert) {
  ReportData d;
  d.results = {made_result("8p", "expert", 10, 2, 1.9, 2.1, 2e9, 1e8), made_result("8p", "baseline", 20, 1, 0.9, 1.1, 2e9, 1e8),
               made_result("8p", "candidate", 15, 1.3, 1.2, 1.4, 2e9, 1e8)};
  const std::string svg = roofline_svg(d);
  EXPECT_EQ(count(svg, "<line class=\"arrow\""), 2u);
  EXPECT_NE(svg.find("No machine profile"), std::string::npos);  // and no roofs without one
  EXPECT_EQ(svg.find("class=\"roof\""), std::string::npos);
}

TEST(HtmlReporter, NumericColumnsSortAsNumbers) {
  const std::string html = HtmlReporter().render(sample());
  EXPECT_NE(html.find("<th data-col=\"median-ms\" data-type=\"num\">"), std::string::npos);
  EXPECT_NE(html.find("data-num=\"20\""), std::string::npos);
  EXPECT_NE(html.find("<th data-col=\"workload\">"), std::string::npos);
}

TEST(HtmlReporter, Escape) {
  EXPECT_EQ(html_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(html_escape("\xff"), "\xEF\xBF\xBD");
  EXPECT_EQ(html_escape("tab\tline\n"), "tab\tline\n");
}

TEST(CsvReporter, QuotesFieldsWithCommasQuotesAndLineBreaks) {
  ReportData d;
  Result r = made_result("8p", "candidate", 5, 2, 1.9, 2.1);
  r.message = "wrong, \"very\"\nwrong";
  r.status = Status::incorrect;
  d.results = {r};
  const std::string csv = CsvReporter().render(d);
  EXPECT_EQ(csv.rfind("workload,impl,status,median ms,", 0), 0u);
  EXPECT_NE(csv.find("\"wrong, \"\"very\"\"\nwrong\""), std::string::npos);
  EXPECT_NE(csv.find(",5,"), std::string::npos);  // full precision numbers
}

TEST(MarkdownReporter, EscapesPipesAndHtml) {
  ReportData d;
  Result r = made_result("8p", "candidate", 5, 2, 1.9, 2.1);
  r.message = "a|b <i>x</i>";
  d.results = {r};
  const std::string md = MarkdownReporter().render(d);
  EXPECT_NE(md.find("a\\|b &lt;i&gt;x&lt;/i&gt;"), std::string::npos);
  EXPECT_NE(md.find("| workload | impl | status |"), std::string::npos);
  EXPECT_NE(md.find("geomean speedup"), std::string::npos);
}

TEST(JsonReporter, IsAVersionedDocumentWithEveryResult) {
  const auto j = nlohmann::json::parse(JsonReporter().render(sample()));
  EXPECT_EQ(j.at("schema"), "opbench.report");
  EXPECT_EQ(j.at("results").size(), 5u);
  EXPECT_TRUE(j.at("results")[0].contains("roofline"));
  EXPECT_EQ(j.at("machine_profile").at("id"), "cpu-test-profile");
  EXPECT_EQ(j.at("summary").at("by_kind").at("expert").at("correct"), 2);
}

TEST(ConsoleReporter, IsTheScoreboard) {
  const std::string text = ConsoleReporter().render(sample());
  EXPECT_NE(text.find("geomean speedup"), std::string::npos);
  EXPECT_NE(text.find("1p candidate: compile_error: did not build"), std::string::npos);
}

TEST(ResultsTable, RooflinePercentAndFlags) {
  ReportData d = sample();
  Result fast = made_result("8p", "candidate", 5, 4, 3.9, 4.1, 2e9, 1e8);  // floor 10 ms
  attach_roofline(fast, *d.profile);
  ReportTable t = results_table({fast});
  const auto& row = t.rows.at(0);
  const size_t pct = size_t(std::find(t.columns.begin(), t.columns.end(), "% of roofline") - t.columns.begin());
  const size_t flags = size_t(std::find(t.columns.begin(), t.columns.end(), "flags") - t.columns.begin());
  EXPECT_NEAR(row.at(pct).get<double>(), 200, 1e-9);
  EXPECT_EQ(row.at(flags), "below_roofline_floor");
}

}  // namespace
}  // namespace opbench
