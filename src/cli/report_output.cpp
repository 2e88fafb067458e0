#include <fmt/format.h>

#include "calibrate/machine_profile.h"
#include "calibrate/peaks.h"
#include "targets/registry.h"
#include "cli/commands.h"
#include "harness/evaluate.h"
#include "report/reporter.h"

namespace opbench::cli {

void add_format_flag(CLI::App* app, std::string& format) {
  app->add_option("--format", format, "Output format: console, json, csv, md or html")->check(CLI::IsMember(reporter_formats()))->capture_default_str();
}

void print_report(const std::string& format, const ReportData& data) { fmt::print("{}", make_reporter(format)->render(data)); }

std::string profile_isa_level(const std::string& target, const std::string& isa) {
  if (const TargetInfo& info = target_info(target); !info.architecture.empty()) return info.architecture;
  // native allows more extensions, not wider FMA units: its ceilings are the widest named level's.
  if (isa == "native") return isa_level_supported("x86-64-v4") ? "x86-64-v4" : kDefaultIsaLevel;
  return isa.empty() ? kDefaultIsaLevel : isa;
}

std::optional<MachineProfile> profile_for_evaluation(const std::string& target, const std::string& isa, int threads) {
  try {
    return ensure_profile(target, profile_isa_level(target, isa), threads, [](const std::string& line) { fmt::print(stderr, "calibrate: {}\n", line); });
  } catch (const std::exception& e) {
    fmt::print(stderr, "no machine profile ({}); results carry no roofline position\n", e.what());
    return std::nullopt;
  }
}

std::optional<MachineProfile> apply_machine_roofs(EvalOptions& options, const std::string& target) {
  auto profile = profile_for_evaluation(target, options.isa, options.threads > 0 ? options.threads : default_thread_count());
  if (profile) apply_profile(options, *profile);
  return profile;
}

void apply_profile(EvalOptions& options, const MachineProfile& profile) {
  const int threads = options.threads > 0 ? options.threads : default_thread_count();
  options.peak_flops_per_s = profile.peak_gflops(threads) * 1e9;
  options.peak_bytes_per_s = profile.peak_gbytes_per_s(threads) * 1e9;
}

}  // namespace opbench::cli
