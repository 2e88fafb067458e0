// The opbench subcommands. Each registers its options on the CLI11 app and runs when selected;
// run functions return the process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/expr.h"

namespace opbench::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_list(CLI::App& root);
Command add_show(CLI::App& root);
Command add_eval(CLI::App& root);
Command add_run(CLI::App& root);
Command add_dump(CLI::App& root);
Command add_gemm_floor(CLI::App& root);
Command add_lint(CLI::App& root);
Command add_tune(CLI::App& root);
Command add_prompt(CLI::App& root);
Command add_search(CLI::App& root);
Command add_leaderboard(CLI::App& root);
Command add_merge(CLI::App& root);
Command add_slurm(CLI::App& root);
Command add_calibrate(CLI::App& root);
Command add_report(CLI::App& root);
Command add_compare(CLI::App& root);
Command add_build(CLI::App& root);
Command add_crosscheck(CLI::App& root);
Command add_targets(CLI::App& root);

// "a,b,,c" -> {"a", "b", "c"}
std::vector<std::string> split_list(const std::string& text);

// Parses "--set M=256" values into a symbol table; throws UsageError on a malformed one.
SymbolTable parse_overrides(const std::vector<std::string>& assignments);

// "2G", "512M", "4096": bytes; throws UsageError naming `option` for anything else.
uint64_t parse_byte_size(const std::string& text, const std::string& option);

// `text` as a number when the whole of it is one finite decimal or hexadecimal floating-point
// number ("5abc", " 5", "nan", "inf", "1e400" are not); nullopt otherwise.
std::optional<double> parse_number_strict(const std::string& text);

// CLI11 checks: a finite number in (low, high] ([low, high] when low_inclusive), parsed strictly;
// a thread count from 1 to the CPUs this process may run on.
inline constexpr double kLongestSeconds = 7 * 24 * 3600.0;  // a week: longer is a typo, and overflows clocks in ms
CLI::Validator finite_number(double low, double high, bool low_inclusive = false);
CLI::Validator thread_count();
// A seed: a whole number from 0 to 2^64-1 written in decimal digits ("-1" would wrap to 2^64-1).
CLI::Validator seed_value();
int usable_cpus();

// Progress on stderr: rewrites one line on a terminal, prints nothing otherwise (logs stay clean).
void progress_line(const std::string& text);
void progress_done();

}  // namespace opbench::cli

namespace opbench {
struct EvalOptions;
}

namespace opbench::cli {

// --target (from the target registry) and --size (any size class a target declares; empty means the
// target's default). resolve_size() then checks the size against the chosen target.
void add_target_flags(CLI::App* app, std::string& target, std::string& size, const std::string& size_help);
std::string resolve_size(const std::string& target, const std::string& size);

// Options shared by the commands that evaluate: --target, --size, --threads, --trials, --max-time,
// --timeout, --set, --sandbox.
struct SharedEvalFlags {
  std::string target;
  std::string size;  // empty: the target's default size class
  int threads = 0;
  int trials = 3;
  double max_time = 10;
  int cap_pairs = 100;  // TimingOptions::cap_min_pairs
  double timeout = 30;
  double max_eval_time = 0;  // whole evaluation, seconds; 0: no bound
  std::string max_memory;    // e.g. 2G, 512M; empty: a quarter of the available memory
  bool no_timing = false;
  bool warm_l2 = false;
  std::string sandbox = "on";
  std::vector<std::string> set;
  std::string isa;  // the target's instruction-set level; empty: the highest the host supports
};
void add_shared_eval_flags(CLI::App* app, SharedEvalFlags& flags);
opbench::EvalOptions make_eval_options(const SharedEvalFlags& flags);
// The target's instruction-set level `isa` checked against this host (empty: its default); empty for
// a target without levels.
std::string resolve_isa(const std::string& target, const std::string& isa);

}  // namespace opbench::cli

#include <optional>

namespace opbench {
class Registry;
struct WorkloadSpec;
struct MachineProfile;
struct ReportData;
}  // namespace opbench

namespace opbench::cli {

// The options of `opbench run`, shared with `opbench slurm run` (which passes them on to the run of
// each shard).
struct RunFlags {
  std::string workloads = "all", impls = "baseline", out, shard;
  SharedEvalFlags flags;
};
void add_run_flags(CLI::App* app, RunFlags& flags);

// One evaluation of a run. canonical_position: its place in the order shards partition.
struct RunJob {
  const WorkloadSpec* spec = nullptr;
  std::string kind;
  size_t canonical_position = 0;
};
// Every evaluation the flags select (the shard option aside), in the order the user named them;
// `skipped` gets the workload/implementation pairs that do not exist.
std::vector<RunJob> plan_run(const Registry& registry, const RunFlags& flags, std::vector<std::string>* skipped);
// --format console|json|csv|md|html: how a command prints what it measured (src/report/reporter.h).
void add_format_flag(CLI::App* app, std::string& format);
// Renders `data` in `format` to stdout.
void print_report(const std::string& format, const ReportData& data);

// The machine profile an evaluating command measures results against: the stored one, or a quick
// calibration on first use (stored for next time). Empty, with a note on stderr, when the target
// cannot be calibrated: results then carry no roofline block.
// `isa` is the resolved instruction-set level of the evaluation (native is measured at the widest
// named level the host has).
std::optional<MachineProfile> profile_for_evaluation(const std::string& target, const std::string& isa, int threads);
std::string profile_isa_level(const std::string& target, const std::string& isa);
// Gives the harness the profile's ceilings at options.threads (EvalOptions::peak_flops_per_s and
// peak_bytes_per_s), so its verdicts hold the median against the roofline floor.
void apply_profile(opbench::EvalOptions& options, const MachineProfile& profile);
// What every command that evaluates here (eval, run, tune, search) does before it evaluates: the
// machine's profile for the options' target, level and threads, its roofs applied to `options`.
// Returns the profile (for roofline positions), or nothing when there is none.
std::optional<MachineProfile> apply_machine_roofs(opbench::EvalOptions& options, const std::string& target);

}  // namespace opbench::cli
