// opbench: a benchmark suite and evaluation harness for kernel optimization.
#include <CLI/CLI.hpp>

#include <sys/prctl.h>

#include <cerrno>
#include <csignal>
#include <system_error>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "harness/result.h"

int main(int argc, char** argv) {
  // A worker that dies closes its pipes; writing to one must be an error we handle (EPIPE), not a
  // signal that kills the harness.
  std::signal(SIGPIPE, SIG_IGN);
  // The harness holds the expected outputs and the seeds: not dumpable, so processes of the same
  // user without CAP_SYS_PTRACE (the workers drop every capability) cannot read its memory
  // through /proc/PID/mem.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  CLI::App app{"opbench: evaluate and benchmark compute kernels against honest baselines"};
  app.require_subcommand(1);
  app.set_version_flag("--version", opbench::opbench_version());
  std::vector<opbench::cli::Command> commands{
      opbench::cli::add_list(app), opbench::cli::add_show(app), opbench::cli::add_eval(app),
      opbench::cli::add_run(app),  opbench::cli::add_dump(app), opbench::cli::add_gemm_floor(app), opbench::cli::add_lint(app), opbench::cli::add_tune(app),
      opbench::cli::add_prompt(app), opbench::cli::add_search(app), opbench::cli::add_leaderboard(app),
      opbench::cli::add_merge(app), opbench::cli::add_slurm(app),
      opbench::cli::add_calibrate(app), opbench::cli::add_report(app), opbench::cli::add_compare(app),
      opbench::cli::add_build(app), opbench::cli::add_crosscheck(app), opbench::cli::add_targets(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const std::system_error& e) {
    // The reader of our output went away (`opbench prompt ... | head`): nothing left to say.
    if (e.code().value() == EPIPE) return 0;
    opbench::cli::progress_done();
    fmt::print(stderr, "opbench: internal error: {}\n", e.what());
    return 3;
  } catch (const opbench::UsageError& e) {
    opbench::cli::progress_done();
    fmt::print(stderr, "opbench: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    opbench::cli::progress_done();
    fmt::print(stderr, "opbench: internal error: {}\n", e.what());
    return 3;
  }
  return 2;
}
