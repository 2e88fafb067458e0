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

RatioEstimate paired_ratio(const std::vector<double>& ratios) {
  RatioEstimate r;
  r.count = ratios.size();
  if (ratios.empty()) return r;
  std::vector<double> logs;
  logs.reserve(ratios.size());
  for (double x : ratios) logs.push_back(std::log(x));
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
