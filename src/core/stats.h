// Summary statistics for timing samples and the paired-ratio confidence interval.
#pragma once

#include <cstddef>
#include <vector>

namespace opbench {

struct Summary {
  double median = 0, mean = 0, min = 0, max = 0, stdev = 0;
  size_t count = 0;
};

Summary summarize(std::vector<double> samples);

// Two-sided 95% quantile of Student's t with `dof` degrees of freedom.
double student_t95(size_t dof);

// Geometric mean of ratios with a 95% interval from the t-distribution of log(ratio).
struct RatioEstimate {
  double geomean = 0, ci95_low = 0, ci95_high = 0;
  double rel_halfwidth = 0;  // half-width of the interval of log(ratio): ~ relative precision
  size_t count = 0;
};
RatioEstimate paired_ratio(const std::vector<double>& ratios);

// The Hodges-Lehmann estimate of a paired ratio: the median of the Walsh averages of log(ratio)
// (every (l_i + l_j)/2, i <= j), with the distribution-free 95% interval of the Wilcoxon signed-rank
// test (order statistics of the same averages). Unlike the mean of logs it is not dragged by a few
// disturbed pairs (its breakdown point is 29%), and it stays close to the median of the ratios.
// Below 6 pairs the interval is the range of the ratios (too few for a 95% statement).
RatioEstimate hodges_lehmann_ratio(const std::vector<double>& ratios);

// Pairs disturbed by something outside both kernels (another process, an interrupt storm) show up
// as ratios far from the rest. Drops ratios whose log lies more than 5 robust standard deviations
// (1.4826·MAD) and more than 10% from the median log ratio; keeps everything below 5 samples.
std::vector<double> drop_outlier_ratios(const std::vector<double>& ratios, size_t* dropped);

// Relative half-width of the 95% interval of a sample's mean (stdev error / mean).
double relative_ci95_of_mean(const std::vector<double>& samples);

}  // namespace opbench
