// The HTML report: one self-contained file (inline CSS, SVG and script; nothing fetched) that a
// reviewer opens in a browser or attaches to a pull request.
#include <cmath>

#include <fmt/format.h>

#include "core/utf8.h"
#include "harness/result.h"
#include "report/html_charts.h"
#include "report/reporter.h"

namespace opbench {
namespace {

using nlohmann::json;

constexpr const char* kStyle = R"CSS(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;padding:0 16px;color:#1d1d1f;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:16px;margin:18px 0 6px}
.meta{color:#555}.note{color:#666;font-size:13px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #e5e5e5;text-align:left;white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.long{white-space:normal;min-width:160px;max-width:360px;overflow-wrap:anywhere}.scroll{overflow-x:auto}
th{background:#f4f5f7;cursor:pointer;user-select:none;position:sticky;top:0}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
tr:hover td{background:#f8fafc}
.status-correct{color:#1a7f37}.status-bad{color:#c62828;font-weight:600}
.chart{max-width:100%;height:auto;background:#fff}
.grid{stroke:#e6e6e6;stroke-width:1}.tick{font-size:11px;fill:#444}.axis-title{font-size:12px;fill:#222}
.roof{fill:none;stroke:#222;stroke-width:2}.roof.cache{stroke:#999;stroke-dasharray:5 4;stroke-width:1.2}
.roof-label{font-size:11px;fill:#222}.roof-label.cache{fill:#888}
.arrow{stroke:#555;stroke-width:1.3}.point{stroke:#fff;stroke-width:1.5;cursor:default}
.bar{stroke:none}.whisker{stroke:#222;stroke-width:1.3}.one{stroke:#c62828;stroke-dasharray:4 3}
.curve{fill:none;stroke-width:2}
.summary{display:flex;gap:16px;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:200px}
.card b{font-size:18px}
details{margin:4px 0;border:1px solid #e5e5e5;border-radius:4px;padding:4px 8px}
summary{cursor:pointer}pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:360px;white-space:pre-wrap;word-break:break-all;font-size:12px}
#tooltip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;font-size:12px;display:none;z-index:9}
)CSS";

// Recorded before anything else runs, so a failing script shows up in the page (the browser test
// reads it from the DOM) and not only in a console nobody watches.
constexpr const char* kErrorHook = R"JS(
window.opbenchErrors=[];
window.opbenchError=function(text){window.opbenchErrors.push(text);document.documentElement.setAttribute('data-js-errors',window.opbenchErrors.join(' | '));};
window.addEventListener('error',function(e){window.opbenchError(String(e.message||e)+(e.lineno?' (line '+e.lineno+':'+e.colno+')':''));});
window.addEventListener('unhandledrejection',function(e){window.opbenchError('unhandled rejection: '+String(e.reason));});
)JS";

// Sorting (click a header; numbers by their data-num value, missing values last), tooltips, and a
// test hook: #sort=TABLE:COLUMN clicks that header once the page is loaded (#sort=TABLE:COLUMN:desc twice).
constexpr const char* kScript = R"JS(
(function(){
function cellKey(td,numeric){if(!td)return null;if(numeric){var v=td.getAttribute('data-num');return v===null||v===''?null:parseFloat(v);}return td.textContent;}
function sortBy(th){
  var table=th.closest('table'),body=table.tBodies[0],col=Array.prototype.indexOf.call(th.parentNode.children,th);
  var numeric=th.getAttribute('data-type')==='num';
  var dir=th.getAttribute('aria-sort')==='ascending'?'descending':'ascending';
  Array.prototype.forEach.call(th.parentNode.children,function(h){h.removeAttribute('aria-sort');});
  th.setAttribute('aria-sort',dir);
  var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(a,b){
    var x=cellKey(a.cells[col],numeric),y=cellKey(b.cells[col],numeric);
    if(x===null&&y===null)return 0;if(x===null)return 1;if(y===null)return -1;
    var c=numeric?x-y:String(x).localeCompare(String(y));return dir==='ascending'?c:-c;});
  rows.forEach(function(r){body.appendChild(r);});
  table.setAttribute('data-sorted-by',th.getAttribute('data-col')+':'+dir);
}
document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){sortBy(th);});});
var tip=document.getElementById('tooltip');
document.querySelectorAll('[data-tip]').forEach(function(el){
  el.addEventListener('mousemove',function(e){tip.textContent=el.getAttribute('data-tip');tip.style.display='block';tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';});
  el.addEventListener('mouseleave',function(){tip.style.display='none';});});
var m=/^#sort=([\w-]+):([\w-]+)(:desc)?$/.exec(location.hash);
if(m){var th=document.querySelector('#'+m[1]+' th[data-col="'+m[2]+'"]');
  if(th){th.click();if(m[3])th.click();}else{window.opbenchError('no column '+m[2]+' in table '+m[1]);}}
document.documentElement.setAttribute('data-ready','1');
})();
)JS";

std::string column_id(const std::string& name) {
  std::string id;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) id += char(std::tolower(static_cast<unsigned char>(c)));
    else if (!id.empty() && id.back() != '-') id += '-';
  }
  while (!id.empty() && id.back() == '-') id.pop_back();
  return id.empty() ? "col" : id;
}

std::string status_class(const json& v) {
  if (!v.is_string()) return "";
  return v.get<std::string>() == "correct" ? " class=\"status-correct\"" : " class=\"status-bad\"";
}

// A sortable table: a column is numeric when every non-null cell is a number.
std::string html_table(const ReportTable& t, const std::string& id) {
  std::vector<bool> numeric(t.columns.size(), true);
  for (const auto& row : t.rows)
    for (size_t c = 0; c < row.size() && c < numeric.size(); ++c)
      if (!row[c].is_null() && !row[c].is_number()) numeric[c] = false;
  std::string s = fmt::format("<div class=\"scroll\"><table class=\"sortable\" id=\"{}\"><thead><tr>", html_escape(id));
  for (size_t c = 0; c < t.columns.size(); ++c)
    s += fmt::format("<th data-col=\"{}\"{}>{}</th>", column_id(t.columns[c]), numeric[c] ? " data-type=\"num\"" : "", html_escape(t.columns[c]));
  s += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    s += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) {
      const json& v = row[c];
      if (v.is_number()) {
        const double d = v.get<double>();
        s += fmt::format("<td class=\"num\" data-num=\"{}\">{}</td>", std::isfinite(d) ? fmt::format("{}", d) : "", html_escape(cell_text(v)));
      } else if (numeric[c]) {
        s += "<td class=\"num\" data-num=\"\">-</td>";
      } else {
        const bool long_text = t.columns[c] == "flags" || t.columns[c] == "message" || t.columns[c] == "stop";
        s += fmt::format("<td{}>{}</td>", t.columns[c] == "status" ? status_class(v) : long_text ? " class=\"long\"" : "",
                         html_escape(cell_text(v)));
      }
    }
    s += "</tr>";
  }
  s += "</tbody></table></div>";
  for (const auto& n : t.notes) s += fmt::format("<p class=\"note\">{}</p>", html_escape(n));
  return s;
}

std::string geomean_cards(const std::vector<Result>& results) {
  const json s = summary_by_kind(results);
  std::string out = "<div class=\"summary\">";
  auto card = [&](const std::string& name, const json& k) {
    out += fmt::format("<div class=\"card\" data-kind=\"{}\"><div>{}</div><b>{}x</b> geomean over correct<br>{}x with failures as 1.0<br>"
                       "{} of {} correct; fast_1 {}</div>",
                       html_escape(name), html_escape(name), html_escape(cell_text(k.at("geomean_speedup_correct_only"))),
                       html_escape(cell_text(k.at("geomean_speedup_failures_as_one"))), k.at("correct").get<size_t>(),
                       k.at("results").get<size_t>(), html_escape(cell_text(k.at("fast_p").value("1", json(nullptr)))));
  };
  card("all results", s.at("all"));
  for (const auto& [kind, k] : s.at("by_kind").items()) card(kind, k);
  return out + "</div>";
}

std::string result_details(const Result& r) {
  std::string reason = r.message;
  if (!r.correctness.reason.empty() && r.correctness.reason != r.message) reason += (reason.empty() ? "" : "; ") + r.correctness.reason;
  std::string s = fmt::format("<details class=\"result-details\"><summary>{} {}: <span{}>{}</span></summary>", html_escape(r.workload),
                              html_escape(r.impl.kind), status_class(std::string(status_name(r.status))), html_escape(status_name(r.status)));
  s += fmt::format("<p>{}</p>", reason.empty() ? "no message" : html_escape(reason));
  s += fmt::format("<p class=\"note\">source {} (sha256 {}), size {}, {} thread(s), correctness {}/{} trials, build {:.2f} s{}, evaluation {:.2f} s</p>",
                   html_escape(r.impl.path), html_escape(r.impl.sha256.substr(0, 12)), html_escape(r.size), r.threads, r.correctness.passed,
                   r.correctness.trials, r.build_s, r.build_cached ? " (cached)" : "", r.eval_s);
  if (r.timing)
    s += fmt::format("<p class=\"note\">timing: {} calls in {} batches, stop: {}, flags: {}</p>", r.timing->calls, r.timing->batches,
                     html_escape(r.timing->stop_reason), r.timing->flags.empty() ? "none" : html_escape(fmt::format("{}", fmt::join(r.timing->flags, ", "))));
  if (r.roofline)
    s += fmt::format("<p class=\"note\">roofline: {} ms for the useful work, floor {} ms for the least work any input needs ({}-bound at {} "
                     "GFLOP/s, {} GB/s), intensity {} FLOP/B as written, {} useful{}</p>",
                     cell_text(r.roofline->roof_ms), cell_text(r.roofline->floor_ms), html_escape(r.roofline->bound), cell_text(r.roofline->peak_gflops),
                     cell_text(r.roofline->peak_gbytes_per_s), cell_text(r.roofline->intensity), cell_text(r.roofline->useful_intensity),
                     r.roofline->flags.empty() ? "" : html_escape(fmt::format("; flags: {}", fmt::join(r.roofline->flags, ", "))));
  if (!r.build_log.empty()) s += "<h4>build log</h4><pre class=\"build-log\">" + html_escape(r.build_log) + "</pre>";
  if (!r.kernel_output.empty()) s += "<h4>kernel output</h4><pre class=\"kernel-output\">" + html_escape(r.kernel_output) + "</pre>";
  return s + "</details>";
}

std::string search_section(const SearchRunReport& run) {
  std::string s = fmt::format("<h3>{}</h3><p class=\"meta\">proposer {}, folder {}</p>", html_escape(run.label), html_escape(run.proposer),
                              html_escape(run.dir));
  s += "<h4>Best speedup per iteration</h4>" + search_progress_svg(run);
  ReportTable per_iteration;
  per_iteration.title = "iterations";
  per_iteration.columns = {"workload", "iteration", "evaluated", "correct", "correctness rate", "best speedup so far"};
  for (const auto& w : run.workloads)
    for (const auto& it : w.iterations)
      per_iteration.rows.push_back({w.summary.workload, it.iteration, it.evaluated, it.correct,
                                    it.evaluated ? json(double(it.correct) / double(it.evaluated)) : json(nullptr), it.best_speedup});
  s += "<h4>Correctness per iteration</h4>" + html_table(per_iteration, "iterations-" + column_id(run.label));
  ReportTable cost;
  cost.title = "cost";
  cost.columns = {"workload", "evaluated", "correct", "correctness rate", "best speedup", "share of expert", "build s", "eval s",
                  "agent s", "prompt tokens", "completion tokens", "payback calls", "stop"};
  for (const auto& w : run.workloads) {
    const SearchSummary& m = w.summary;
    cost.rows.push_back({m.workload, m.evaluated, m.correct, m.correctness_rate(), m.best_speedup > 0 ? json(m.best_speedup) : json(nullptr),
                         m.share_of_expert > 0 ? json(m.share_of_expert) : json(nullptr), m.build_s, m.eval_s, m.proposer_s, m.prompt_tokens,
                         m.completion_tokens, m.payback_calls > 0 ? json(m.payback_calls) : json(nullptr), m.stop_reason});
  }
  s += "<h4>Cost</h4>" + html_table(cost, "cost-" + column_id(run.label));
  return s;
}

}  // namespace

std::string HtmlReporter::render(const ReportData& data) const {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">";
  h += fmt::format("<title>{}</title><script>{}</script><style>{}</style></head><body>", html_escape(data.title), kErrorHook, kStyle);
  h += fmt::format("<h1>{}</h1><p class=\"meta\">{} result(s){}; opbench {}</p>", html_escape(data.title), data.results.size(),
                   data.searches.empty() ? "" : fmt::format(", {} search run(s)", data.searches.size()), html_escape(opbench_version()));
  if (data.profile) {
    const MachineProfile& p = *data.profile;
    h += fmt::format("<p class=\"meta\">Machine: {} ({} usable cores, {}), profile <code>{}</code> measured {}{}: "
                     "{} GFLOP/s fp32 and {} GB/s at {} thread(s).</p>",
                     html_escape(p.cpu_model), p.usable_cores, html_escape(p.isa_level), html_escape(p.id), html_escape(p.created),
                     p.quick ? " (quick first-use calibration)" : "", cell_text(p.peak_gflops(p.threads)), cell_text(p.peak_gbytes_per_s(p.threads)),
                     p.threads);
  }
  if (!data.results.empty()) {
    h += "<h2>Summary</h2>" + geomean_cards(data.results);
    h += "<h2>Scoreboard</h2><p class=\"note\">Click a column to sort. Speedup: geometric mean of paired baseline/candidate ratios "
         "with its 95% interval; % of roofline: the machine's floor time over the measured median.</p>";
    h += html_table(results_table(data.results), "scoreboard");
    h += "<h2>Roofline</h2><p class=\"note\">One point per timed result; arrows go baseline &rarr; candidate &rarr; expert per workload. "
         "Hover a point for its workload.</p>";
    h += roofline_svg(data);
    h += "<h2>Speedup over the baseline</h2>" + speedup_bars_svg(data.results);
    h += "<h2>fast_p</h2><p class=\"note\">Share of each kind's results that are correct and more than p times faster than the baseline.</p>";
    h += fast_p_svg(data.results);
  }
  if (!data.searches.empty()) {
    h += "<h2>Searches</h2>";
    if (data.searches.size() > 1) h += "<h3>Leaderboard</h3>" + html_table(search_leaderboard(data.searches), "leaderboard");
    for (const auto& run : data.searches) h += search_section(run);
  }
  for (size_t i = 0; i < data.tables.size(); ++i)
    h += fmt::format("<h2>{}</h2>", html_escape(data.tables[i].title)) + html_table(data.tables[i], fmt::format("table-{}", i));
  if (!data.results.empty()) {
    h += "<h2>Details</h2>";
    for (const auto& r : data.results) h += result_details(r);
  }
  h += fmt::format("<div id=\"tooltip\"></div><script>{}</script></body></html>\n", kScript);
  return h;
}

}  // namespace opbench
