// The opbench subcommands. Each registers its options on the CLI11 app and runs when selected;
// run functions return the process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
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

// Parses "--set M=256" values into a symbol table; throws UsageError on a malformed one.
SymbolTable parse_overrides(const std::vector<std::string>& assignments);

// "2G", "512M", "4096": bytes; throws UsageError naming `option` for anything else.
uint64_t parse_byte_size(const std::string& text, const std::string& option);

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
  double timeout = 30;
  double max_eval_time = 0;  // whole evaluation, seconds; 0: no bound
  std::string max_memory;    // e.g. 2G, 512M; empty: a quarter of the available memory
  bool no_timing = false;
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
