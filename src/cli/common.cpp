#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "core/error.h"
#include "harness/evaluate.h"
#include "targets/registry.h"

namespace opbench::cli {

std::optional<double> parse_number_strict(const std::string& text) {
  // strtod skips leading white space and stops at the first character it cannot use; both are
  // mistakes in an option value ("5abc" is not 5), so the whole string must be the number.
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Shape symbols become element counts and byte counts: whole numbers from 1 to 2^40 (a tensor
// dimension beyond that cannot be allocated anywhere; resolve_workload checks the products).
constexpr double kLargestShapeValue = double(int64_t(1) << 40);

SymbolTable parse_overrides(const std::vector<std::string>& assignments) {
  SymbolTable table;
  for (const auto& a : assignments) {
    auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError(fmt::format("--set expects SYMBOL=VALUE, got '{}'", a));
    const std::string name = a.substr(0, eq), text = a.substr(eq + 1);
    const std::optional<double> v = parse_number_strict(text);
    if (!v) throw UsageError(fmt::format("--set {}: '{}' is not a finite number", name, text));
    if (*v < 1 || *v > kLargestShapeValue || *v != std::floor(*v))
      throw UsageError(fmt::format("--set {}: {} is not a whole number from 1 to 2^40", name, text));
    table[name] = *v;
  }
  return table;
}

uint64_t parse_byte_size(const std::string& text, const std::string& option) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "K" || unit == "KiB" || unit == "k") scale = 1024.0;
  else if (unit == "M" || unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (!unit.empty() && unit != "B") used = 0;
  const bool starts_with_digit = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0]));
  if (!starts_with_digit || used == 0 || !std::isfinite(value) || value <= 0 || value * scale > 1e18)
    throw UsageError(fmt::format("{}: '{}' is not a size (a positive number with an optional K, M or G)", option, text));
  return uint64_t(value * scale);
}

CLI::Validator finite_number(double low, double high, bool low_inclusive) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> v = parse_number_strict(text);
        if (!v) return fmt::format("'{}' is not a finite number", text);
        if ((low_inclusive ? *v < low : *v <= low) || *v > high)
          return fmt::format("{} is outside {}{}, {}]", text, low_inclusive ? "[" : "(", low, high);
        return {};
      },
      fmt::format("FINITE {}{}..{}]", low_inclusive ? "[" : "(", low, high));
}

int usable_cpus() { return default_thread_count(); }

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool digits = !text.empty() && text.size() <= 20 && text.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || (text.size() == 20 && text > "18446744073709551615"))
          return fmt::format("'{}' is not a whole number from 0 to 2^64-1", text);
        return {};
      },
      "UINT64");
}

CLI::Validator thread_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<double> v = parse_number_strict(text);
        if (!v || *v != std::floor(*v)) return fmt::format("'{}' is not a whole number", text);
        const int cpus = usable_cpus();
        if (*v < 1 || *v > cpus)
          return fmt::format("{} threads: this machine lets opbench use {} CPU(s); give 1 to {} (more threads than CPUs "
                             "would time the oversubscription, not the kernel)",
                             text, cpus, cpus);
        return {};
      },
      "1..CPUS");
}

void progress_line(const std::string& text) {
  if (!isatty(2)) return;
  std::string shown = text.size() > 110 ? text.substr(0, 110) : text;
  fmt::print(stderr, "\r\033[K{}", shown);
  std::fflush(stderr);
}

void progress_done() {
  if (!isatty(2)) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
}


void add_target_flags(CLI::App* app, std::string& target, std::string& size, const std::string& size_help) {
  target = target_registry().front().name;
  app->add_option("--target", target, "Where kernels run: " + fmt::format("{}", fmt::join(target_names(), ", ")))
      ->check(CLI::IsMember(target_names()))
      ->capture_default_str();
  app->add_option("--size", size, size_help + " (default: the target's own size class)")->check(CLI::IsMember(all_size_classes()));
}

std::string resolve_size(const std::string& target, const std::string& size) {
  const TargetInfo& info = target_info(target);
  if (size.empty()) return info.default_size;
  if (std::find(info.sizes.begin(), info.sizes.end(), size) == info.sizes.end())
    throw UsageError(fmt::format("--size {}: target {} offers {}", size, target, fmt::join(info.sizes, ", ")));
  return size;
}

std::string resolve_isa(const std::string& target, const std::string& isa) {
  const TargetInfo& info = target_info(target);
  if (info.resolve_isa) return info.resolve_isa(isa);
  if (!isa.empty()) throw UsageError(fmt::format("--isa {}: target {} has no instruction-set levels", isa, target));
  return {};
}

void add_shared_eval_flags(CLI::App* app, SharedEvalFlags& f) {
  add_target_flags(app, f.target, f.size, "Size class");
  app->add_option("--isa", f.isa, "Instruction-set level of the cpu target: x86-64-v3 (AVX2), x86-64-v4 (AVX-512), native "
                                  "(every extension of this host) (default: the highest named level this host supports)");
  app->add_option("--threads", f.threads, "Threads for baseline and candidate alike, at most the usable CPUs (default: all of them)")
      ->check(thread_count());
  app->add_option("--trials", f.trials, "Correctness trials, each on freshly seeded inputs")->check(CLI::Range(1, 64))->capture_default_str();
  app->add_option("--max-time", f.max_time, "Time cap of the timing phase, seconds")->check(finite_number(0, kLongestSeconds))->capture_default_str();
  app->add_option("--cap-pairs", f.cap_pairs,
                  "Fewer timed pairs than this at --max-time: timing goes on until there are this many, or 3x --max-time")
      ->check(CLI::Range(0, 1000000))->capture_default_str();
  app->add_option("--timeout", f.timeout, "Seconds one call may take before the kernel counts as hung")
      ->check(finite_number(0, kLongestSeconds))->capture_default_str();
  app->add_option("--max-eval-time", f.max_eval_time, "Bound on one whole evaluation's wall time, seconds (0: none); the timing phase shrinks to fit")
      ->check(finite_number(0, kLongestSeconds, true));
  app->add_option("--max-memory", f.max_memory, "Most memory one evaluation's buffers may take, e.g. 2G or 512M (default: a quarter of the available memory, at most 2G)");
  app->add_flag("--no-timing", f.no_timing, "Check correctness only");
  app->add_flag("--warm-l2", f.warm_l2, "cuda: keep L2 warm between timed calls (default: flushed before every call, as nvbench does)");
  app->add_option("--set", f.set, "Override a shape symbol, e.g. --set M=256 (repeatable)");
  app->add_option("--sandbox", f.sandbox, "Confine the workers (on); off only to measure what the sandbox costs")
      ->check(CLI::IsMember({"on", "off"}))->capture_default_str();
}

EvalOptions make_eval_options(const SharedEvalFlags& f) {
  EvalOptions o;
  o.size = resolve_size(f.target, f.size);
  o.isa = resolve_isa(f.target, f.isa);
  o.overrides = parse_overrides(f.set);
  o.threads = f.threads;
  o.trials = f.trials;
  o.time = !f.no_timing;
  o.sandbox = f.sandbox == "on";
  o.warm_l2 = f.warm_l2;
  o.timing.max_seconds = f.max_time;
  o.timing.cap_min_pairs = f.cap_pairs;
  o.timing.min_seconds = std::min(o.timing.min_seconds, f.max_time);
  o.timing.call_timeout_s = f.timeout;
  o.deadline_s = f.max_eval_time;
  if (!f.max_memory.empty()) o.max_memory_bytes = parse_byte_size(f.max_memory, "--max-memory");
  return o;
}

}  // namespace opbench::cli
