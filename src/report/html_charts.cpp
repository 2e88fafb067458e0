#include "report/html_charts.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/utf8.h"

namespace opbench {
namespace {

// A log-scaled axis mapping [lo, hi] (whole decades) onto [p0, p1] pixels.
struct LogAxis {
  double lo = 1, hi = 10, p0 = 0, p1 = 1;
  double operator()(double v) const { return p0 + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (p1 - p0); }
  static LogAxis spanning(double min_v, double max_v, double p0, double p1) {
    LogAxis a;
    a.lo = std::pow(10.0, std::floor(std::log10(min_v)));
    a.hi = std::pow(10.0, std::ceil(std::log10(max_v)));
    if (a.hi <= a.lo) a.hi = a.lo * 10;
    a.p0 = p0;
    a.p1 = p1;
    return a;
  }
};

std::string fmt_num(double v) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.3g}", v);
}

int kind_order(const std::string& kind) {
  if (kind == "reference") return 0;
  if (kind == "baseline") return 1;
  if (kind == "candidate") return 2;
  if (kind == "expert") return 3;
  return 4;
}

bool placeable(const Result& r) {
  return r.timing && r.timing->per_call_ms.median > 0 && std::isfinite(r.timing->per_call_ms.median) && r.work.useful_flops > 0 &&
         r.work.bytes > 0;
}
double point_intensity(const Result& r) { return r.work.useful_flops / r.work.bytes; }
double point_gflops(const Result& r) { return r.work.useful_flops / (r.timing->per_call_ms.median * 1e-3) * 1e-9; }

std::string decade_label(double v) {
  if (v >= 1e-3 && v < 1e5) return fmt::format("{:g}", v);
  return fmt::format("1e{}", int(std::lround(std::log10(v))));
}

// Grid lines and decade labels of a log-log frame.
std::string log_frame(const LogAxis& x, const LogAxis& y, const std::string& x_title, const std::string& y_title) {
  std::string s;
  for (double v = x.lo; v <= x.hi * 1.0001; v *= 10)
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>"
                     "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>",
                     x(v), y.p0, y.p1, y.p0 + 16, decade_label(v));
  for (double v = y.lo; v <= y.hi * 1.0001; v *= 10)
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/>"
                     "<text class=\"tick\" x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>",
                     x.p0, x.p1, y(v), x.p0 - 6, y(v) + 4, decade_label(v));
  s += fmt::format("<text class=\"axis-title\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", (x.p0 + x.p1) / 2, y.p0 + 36,
                   html_escape(x_title));
  s += fmt::format("<text class=\"axis-title\" transform=\"translate(16 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
                   (y.p0 + y.p1) / 2, html_escape(y_title));
  return s;
}

std::string legend(const std::vector<std::string>& kinds, double x, double y) {
  std::string s;
  for (size_t i = 0; i < kinds.size(); ++i)
    s += fmt::format("<circle cx=\"{0:.1f}\" cy=\"{1:.1f}\" r=\"5\" fill=\"{2}\"/><text class=\"tick\" x=\"{3:.1f}\" y=\"{4:.1f}\">{5}</text>",
                     x, y + 16.0 * double(i), kind_colour(kinds[i]), x + 9, y + 16.0 * double(i) + 4, html_escape(kinds[i]));
  return s;
}

std::vector<std::string> kinds_of(const std::vector<Result>& results) {
  std::vector<std::string> kinds;
  for (const auto& r : results)
    if (std::find(kinds.begin(), kinds.end(), r.impl.kind) == kinds.end()) kinds.push_back(r.impl.kind);
  std::stable_sort(kinds.begin(), kinds.end(), [](auto& a, auto& b) { return kind_order(a) < kind_order(b); });
  return kinds;
}

}  // namespace

std::string html_escape(std::string_view text) {
  const std::string clean = utf8_sanitize(text);
  std::string out;
  out.reserve(clean.size());
  for (char c : clean) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) out += "\xEF\xBF\xBD";
        else out += c;
    }
  }
  return out;
}

std::string kind_colour(const std::string& kind) {
  static const std::map<std::string, std::string> colours{
      {"reference", "#7f7f7f"}, {"baseline", "#1f77b4"}, {"candidate", "#ff7f0e"}, {"expert", "#2ca02c"}};
  auto it = colours.find(kind);
  return it == colours.end() ? "#9467bd" : it->second;
}

size_t roofline_point_count(const std::vector<Result>& results) {
  return size_t(std::count_if(results.begin(), results.end(), placeable));
}

std::string roofline_svg(const ReportData& data) {
  const double W = 760, H = 460, L = 70, R = 150, T = 20, B = 50;
  // The roofs: from the profile at the results' thread count, else from the results' own blocks.
  int threads = 0;
  for (const auto& r : data.results)
    if (r.threads > 0) threads = std::max(threads, r.threads);
  double peak = NAN, bw = NAN;
  if (data.profile) {
    const int t = threads > 0 ? threads : data.profile->threads;
    peak = data.profile->peak_gflops(t);
    bw = data.profile->peak_gbytes_per_s(t);
    threads = t;
  } else {
    for (const auto& r : data.results)
      if (r.roofline && r.roofline->peak_gflops > 0) {
        peak = r.roofline->peak_gflops;
        bw = r.roofline->peak_gbytes_per_s;
        threads = r.roofline->threads;
        break;
      }
  }
  const bool roofs = std::isfinite(peak) && peak > 0 && std::isfinite(bw) && bw > 0;
  double xmin = 1e9, xmax = 0, ymin = 1e12, ymax = 0;
  for (const auto& r : data.results) {
    if (!placeable(r)) continue;
    xmin = std::min(xmin, point_intensity(r));
    xmax = std::max(xmax, point_intensity(r));
    ymin = std::min(ymin, point_gflops(r));
    ymax = std::max(ymax, point_gflops(r));
  }
  if (roofs) {
    const double ridge = peak / bw;
    xmin = std::min(xmin, ridge / 10);
    xmax = std::max(xmax, ridge * 10);
    ymax = std::max(ymax, peak * 1.5);
    ymin = std::min(ymin, bw * xmin);
  }
  if (xmax <= 0) xmin = 0.1, xmax = 100;
  if (ymax <= 0) ymin = 1, ymax = 100;
  const LogAxis x = LogAxis::spanning(xmin, xmax, L, W - R);
  const LogAxis y = LogAxis::spanning(ymin, ymax, H - B, T);
  std::string s = fmt::format(
      "<svg id=\"roofline\" class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"Roofline: achieved GFLOP/s against arithmetic intensity\">",
      W, H, W, H);
  s += "<defs><marker id=\"arrowhead\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
       "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker></defs>";
  s += log_frame(x, y, "useful arithmetic intensity (FLOP per byte moved at least once)", "achieved GFLOP/s (useful FLOPs)");
  if (roofs) {
    // Memory roof y = bw·I up to the ridge, then the compute roof.
    const double ridge = peak / bw;
    const double x0 = x.lo, y0 = bw * x.lo;
    s += fmt::format("<polyline class=\"roof\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>", x(x0), y(std::max(y0, y.lo)),
                     x(ridge), y(peak), x(x.hi), y(peak));
    s += fmt::format("<text class=\"roof-label\" x=\"{:.1f}\" y=\"{:.1f}\">{} GFLOP/s fp32, {} thread(s)</text>", x(ridge) + 6,
                     y(peak) - 6, fmt_num(peak), threads);
    s += fmt::format("<text class=\"roof-label\" x=\"{:.1f}\" y=\"{:.1f}\">DRAM {} GB/s</text>", x(std::max(x.lo, ridge / 30)) + 4,
                     y(std::max(y.lo, bw * std::max(x.lo, ridge / 30))) - 8, fmt_num(bw));
    if (data.profile)
      for (const auto& c : data.profile->caches) {
        // Cache roofs measured with one thread: shown for orientation, dashed.
        const double ridge_c = data.profile->peak_gflops(1) / c.read_gbps;
        if (!(ridge_c > x.lo)) continue;
        s += fmt::format("<polyline class=\"roof cache\" points=\"{:.1f},{:.1f} {:.1f},{:.1f}\"/>", x(x.lo),
                         y(std::max(y.lo, c.read_gbps * x.lo)), x(ridge_c), y(data.profile->peak_gflops(1)));
        s += fmt::format("<text class=\"roof-label cache\" x=\"{:.1f}\" y=\"{:.1f}\">L{} {} GB/s (1 thread)</text>", x(x.lo) + 4,
                         y(std::max(y.lo, c.read_gbps * x.lo)) - 4, c.level, fmt_num(c.read_gbps));
      }
  }
  // Arrows: per workload, its placed results in the order reference, baseline, candidate, expert.
  std::map<std::string, std::vector<const Result*>> by_workload;
  for (const auto& r : data.results)
    if (placeable(r)) by_workload[r.workload].push_back(&r);
  for (auto& [w, rs] : by_workload) {
    std::stable_sort(rs.begin(), rs.end(), [](auto* a, auto* b) { return kind_order(a->impl.kind) < kind_order(b->impl.kind); });
    for (size_t i = 0; i + 1 < rs.size(); ++i) {
      if (rs[i]->impl.kind == "reference" || rs[i]->impl.kind == rs[i + 1]->impl.kind) continue;
      s += fmt::format("<line class=\"arrow\" data-workload=\"{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
                       "marker-end=\"url(#arrowhead)\"/>",
                       html_escape(w), x(point_intensity(*rs[i])), y(point_gflops(*rs[i])), x(point_intensity(*rs[i + 1])),
                       y(point_gflops(*rs[i + 1])));
    }
  }
  for (const auto& r : data.results) {
    if (!placeable(r)) continue;
    const std::string pct = r.roofline && std::isfinite(r.roofline->fraction) ? fmt::format(", {:.0f}% of roofline", 100 * r.roofline->fraction) : "";
    const std::string tip = fmt::format("{} {}: {} FLOP/B, {} GFLOP/s, {} ms{}", r.workload, r.impl.kind, fmt_num(point_intensity(r)),
                                        fmt_num(point_gflops(r)), fmt_num(r.timing->per_call_ms.median), pct);
    s += fmt::format("<circle class=\"point\" data-workload=\"{}\" data-impl=\"{}\" data-tip=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" "
                     "fill=\"{}\"><title>{}</title></circle>",
                     html_escape(r.workload), html_escape(r.impl.kind), html_escape(tip), x(point_intensity(r)), y(point_gflops(r)),
                     kind_colour(r.impl.kind), html_escape(tip));
  }
  s += legend(kinds_of(data.results), W - R + 20, T + 10);
  s += "</svg>";
  std::string missing;
  for (const auto& r : data.results)
    if (!placeable(r)) missing += fmt::format("<li>{} {}: {}</li>", html_escape(r.workload), html_escape(r.impl.kind), html_escape(status_name(r.status)));
  if (!missing.empty()) s += "<p class=\"note\">Not on the plot (no timing or no work):</p><ul class=\"note\">" + missing + "</ul>";
  if (!roofs) s += "<p class=\"note\">No machine profile: roofs not drawn (run <code>opbench calibrate</code>).</p>";
  return s;
}

std::string speedup_bars_svg(const std::vector<Result>& results) {
  std::vector<const Result*> rs;
  for (const auto& r : results)
    if (r.speedup && r.speedup->vs_baseline > 0) rs.push_back(&r);
  if (rs.empty()) return "<p class=\"note\">No speedups measured.</p>";
  // The label column as wide as the longest "workload impl" label (about 6.5 px a character at the
  // tick font), so that long names such as 7p_Ragged_Paged_Attention are not cut at the left edge.
  size_t longest = 0;
  for (auto* r : rs) longest = std::max(longest, r->workload.size() + 1 + r->impl.kind.size());
  const double L = std::clamp(16 + 6.5 * double(longest), 120.0, 420.0), R = 60, row = 22, T = 10;
  const double W = L + 570;
  const double H = T + row * double(rs.size()) + 40;
  double lo = 1, hi = 1;
  for (auto* r : rs) {
    lo = std::min({lo, r->speedup->vs_baseline, r->speedup->ci95_low > 0 ? r->speedup->ci95_low : lo});
    hi = std::max({hi, r->speedup->vs_baseline, r->speedup->ci95_high});
  }
  const LogAxis x = LogAxis::spanning(lo * 0.9, hi * 1.1, L, W - R);
  std::string s = fmt::format("<svg id=\"speedups\" class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
                              "aria-label=\"Speedup over the baseline with 95% intervals\">",
                              W, H);
  for (double v = x.lo; v <= x.hi * 1.0001; v *= 10)
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/><text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" "
                     "text-anchor=\"middle\">{4}x</text>",
                     x(v), T, H - 30, H - 14, decade_label(v));
  for (size_t i = 0; i < rs.size(); ++i) {
    const Result& r = *rs[i];
    const double yc = T + row * (double(i) + 0.5);
    const double v = r.speedup->vs_baseline;
    const double x1 = x(1), xv = x(v);
    const std::string tip = fmt::format("{} {}: {:.3f}x [{:.3f}, {:.3f}]", r.workload, r.impl.kind, v, r.speedup->ci95_low, r.speedup->ci95_high);
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{} {}</text>", L - 8, yc + 4,
                     html_escape(r.workload), html_escape(r.impl.kind));
    s += fmt::format("<rect class=\"bar\" data-tip=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"{}>"
                     "<title>{}</title></rect>",
                     html_escape(tip), std::min(x1, xv), yc - row * 0.35, std::max(1.0, std::abs(xv - x1)), row * 0.7,
                     kind_colour(r.impl.kind), r.status == Status::correct ? "" : " fill-opacity=\"0.35\"", html_escape(tip));
    if (r.speedup->ci95_low > 0 && r.speedup->ci95_high > 0)
      s += fmt::format("<line class=\"whisker\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/>"
                       "<line class=\"whisker\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{3:.1f}\" y2=\"{4:.1f}\"/>"
                       "<line class=\"whisker\" x1=\"{1:.1f}\" x2=\"{1:.1f}\" y1=\"{3:.1f}\" y2=\"{4:.1f}\"/>",
                       x(r.speedup->ci95_low), x(r.speedup->ci95_high), yc, yc - 5, yc + 5);
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">{:.3f}x</text>", std::max(x1, xv) + 6, yc + 4, v);
  }
  s += fmt::format("<line class=\"one\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/>", x(1), T, H - 30);
  return s + "</svg>";
}

std::string fast_p_svg(const std::vector<Result>& results) {
  const double W = 760, H = 300, L = 60, R = 150, T = 15, B = 45;
  double pmax = 2;
  for (const auto& r : results)
    if (r.status == Status::correct && r.speedup) pmax = std::max(pmax, r.speedup->vs_baseline * 1.1);
  auto px = [&](double p) { return L + p / pmax * (W - L - R); };
  auto py = [&](double f) { return H - B - f * (H - T - B); };
  std::string s = fmt::format("<svg id=\"fast-p\" class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
                              "aria-label=\"fast_p: share correct and faster than p\">",
                              W, H);
  for (double f = 0; f <= 1.0001; f += 0.25)
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/><text class=\"tick\" x=\"{3:.1f}\" "
                     "y=\"{4:.1f}\" text-anchor=\"end\">{5:.2f}</text>",
                     L, W - R, py(f), L - 6, py(f) + 4, f);
  const double step = pmax > 8 ? 2 : pmax > 4 ? 1 : 0.5;
  for (double p = 0; p <= pmax; p += step)
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/><text class=\"tick\" x=\"{0:.1f}\" "
                     "y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>",
                     px(p), py(0), py(1), py(0) + 16, p);
  s += fmt::format("<text class=\"axis-title\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">p (speedup threshold)</text>", (L + W - R) / 2, H - 6);
  const auto kinds = kinds_of(results);
  for (const auto& kind : kinds) {
    std::vector<double> speedups;
    size_t n = 0;
    for (const auto& r : results) {
      if (r.impl.kind != kind) continue;
      ++n;
      if (r.status == Status::correct && r.speedup) speedups.push_back(r.speedup->vs_baseline);
    }
    std::sort(speedups.begin(), speedups.end());
    // A step function: the share stays flat between speedups and drops at each.
    std::string points = fmt::format("{:.1f},{:.1f}", px(0), py(double(speedups.size()) / double(n)));
    size_t above = speedups.size();
    for (double v : speedups) {
      const double clamped = std::min(v, pmax);
      points += fmt::format(" {0:.1f},{1:.1f} {0:.1f},{2:.1f}", px(clamped), py(double(above) / double(n)), py(double(above - 1) / double(n)));
      --above;
    }
    points += fmt::format(" {:.1f},{:.1f}", px(pmax), py(double(above) / double(n)));
    s += fmt::format("<polyline class=\"curve\" data-kind=\"{}\" stroke=\"{}\" points=\"{}\"><title>fast_p of {}</title></polyline>",
                     html_escape(kind), kind_colour(kind), points, html_escape(kind));
  }
  s += legend(kinds, W - R + 20, T + 10);
  return s + "</svg>";
}

std::string search_progress_svg(const SearchRunReport& run) {
  const double W = 760, H = 280, L = 60, R = 150, T = 15, B = 45;
  int imax = 1;
  double smax = 1.5;
  for (const auto& w : run.workloads)
    for (const auto& it : w.iterations) {
      imax = std::max(imax, it.iteration);
      smax = std::max(smax, it.best_speedup * 1.1);
    }
  auto px = [&](double i) { return L + i / imax * (W - L - R); };
  auto py = [&](double v) { return H - B - v / smax * (H - T - B); };
  std::string s = fmt::format("<svg class=\"chart search-progress\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
                              "aria-label=\"Best speedup per iteration\">",
                              W, H);
  for (int i = 0; i <= imax; ++i)
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", px(i), H - B + 16, i);
  const double step = smax > 8 ? 2 : smax > 4 ? 1 : 0.5;
  for (double v = 0; v <= smax; v += step)
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/><text class=\"tick\" x=\"{3:.1f}\" "
                     "y=\"{4:.1f}\" text-anchor=\"end\">{5:g}x</text>",
                     L, W - R, py(v), L - 6, py(v) + 4, v);
  s += fmt::format("<text class=\"axis-title\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">iteration (0: translation)</text>",
                   (L + W - R) / 2, H - 6);
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  for (size_t k = 0; k < run.workloads.size(); ++k) {
    const auto& w = run.workloads[k];
    std::string points;
    for (const auto& it : w.iterations) points += fmt::format("{:.1f},{:.1f} ", px(it.iteration), py(it.best_speedup));
    s += fmt::format("<polyline class=\"curve\" stroke=\"{}\" points=\"{}\"><title>{}</title></polyline>", palette[k % 8], points,
                     html_escape(w.summary.workload));
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>", W - R + 20, T + 14 + 16.0 * double(k), palette[k % 8],
                     html_escape(w.summary.workload));
  }
  return s + "</svg>";
}

}  // namespace opbench
