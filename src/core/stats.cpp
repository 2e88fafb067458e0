#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace opbench {

Summary summarize(std::vector<double> v) {
  Summary s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(n);
  if (n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(ss / double(n - 1));
  }
  return s;
}

double student_t95(size_t dof) {
  static const double table[] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                 2.262,  2.228,  2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
                                 2.101,  2.093,  2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
                                 2.052,  2.048,  2.045, 2.042};
  if (dof == 0) return INFINITY;
  if (dof <= 30) return table[dof];
  if (dof <= 60) return 2.042 - (2.042 - 2.000) * double(dof - 30) / 30.0;
  if (dof <= 120) return 2.000 - (2.000 - 1.980) * double(dof - 60) / 60.0;
  return 1.96;
}

namespace {

std::vector<double> logs_of(const std::vector<double>& ratios) {
  std::vector<double> logs;
  logs.reserve(ratios.size());
  for (double x : ratios) logs.push_back(std::log(x));
  return logs;
}

}  // namespace

RatioEstimate paired_ratio(const std::vector<double>& ratios) {
  RatioEstimate r;
  r.count = ratios.size();
  if (ratios.empty()) return r;
  std::vector<double> logs = logs_of(ratios);
  Summary s = summarize(logs);
  r.geomean = std::exp(s.mean);
  if (ratios.size() < 2) {
    r.ci95_low = 0;
    r.ci95_high = INFINITY;
    r.rel_halfwidth = INFINITY;
    return r;
  }
  double half = student_t95(ratios.size() - 1) * s.stdev / std::sqrt(double(ratios.size()));
  r.ci95_low = std::exp(s.mean - half);
  r.ci95_high = std::exp(s.mean + half);
  r.rel_halfwidth = half;
  return r;
}

RatioEstimate hodges_lehmann_ratio(const std::vector<double>& ratios) {
  RatioEstimate r;
  r.count = ratios.size();
  if (ratios.empty()) return r;
  std::vector<double> logs = logs_of(ratios);
  // Long runs of tiny batches can have thousands of pairs; the most recent 3000 carry the estimate
  // (4.5 million averages, a few tens of MB for a moment).
  constexpr size_t kMaxPairs = 3000;
  if (logs.size() > kMaxPairs) logs.erase(logs.begin(), logs.end() - kMaxPairs);
  const size_t n = logs.size();
  std::vector<double> walsh;
  walsh.reserve(n * (n + 1) / 2);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i; j < n; ++j) walsh.push_back(0.5 * (logs[i] + logs[j]));
  const size_t m = walsh.size();
  auto order_statistic = [&](size_t k) {  // k-th smallest, 0-based
    std::nth_element(walsh.begin(), walsh.begin() + std::ptrdiff_t(k), walsh.end());
    return walsh[k];
  };
  const double point = m % 2 ? order_statistic(m / 2) : 0.5 * (order_statistic(m / 2 - 1) + order_statistic(m / 2));
  r.geomean = std::exp(point);
  double lo, hi;
  if (n < 6) {
    const auto [mn, mx] = std::minmax_element(logs.begin(), logs.end());
    lo = *mn;
    hi = *mx;
    if (n < 2) {
      r.ci95_low = 0;
      r.ci95_high = INFINITY;
      r.rel_halfwidth = INFINITY;
      return r;
    }
  } else {
    // Critical rank of the signed-rank statistic, normal approximation (with continuity correction).
    const double nn = double(n);
    const double mean = nn * (nn + 1) / 4;
    const double sd = std::sqrt(nn * (nn + 1) * (2 * nn + 1) / 24);
    const double k = std::floor(mean - 1.959964 * sd - 0.5);
    const size_t lo_rank = size_t(std::max(0.0, k));
    const size_t hi_rank = m - 1 - lo_rank;
    lo = order_statistic(lo_rank);
    hi = order_statistic(hi_rank);
  }
  r.ci95_low = std::exp(lo);
  r.ci95_high = std::exp(hi);
  r.rel_halfwidth = std::max(hi - point, point - lo);
  return r;
}

std::vector<double> drop_outlier_ratios(const std::vector<double>& ratios, size_t* dropped) {
  *dropped = 0;
  if (ratios.size() < 5) return ratios;
  std::vector<double> logs;
  for (double r : ratios) logs.push_back(std::log(r));
  const double median = summarize(logs).median;
  std::vector<double> deviations;
  for (double l : logs) deviations.push_back(std::fabs(l - median));
  const double limit = std::max(5.0 * 1.4826 * summarize(deviations).median, std::log(1.1));
  std::vector<double> kept;
  for (size_t i = 0; i < ratios.size(); ++i) {
    if (std::fabs(logs[i] - median) <= limit) kept.push_back(ratios[i]);
    else ++*dropped;
  }
  return kept;
}

double relative_ci95_of_mean(const std::vector<double>& samples) {
  if (samples.size() < 2) return INFINITY;
  Summary s = summarize(samples);
  if (s.mean <= 0) return INFINITY;
  return student_t95(samples.size() - 1) * s.stdev / std::sqrt(double(samples.size())) / s.mean;
}

}  // namespace opbench
