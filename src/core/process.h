// Running a helper program (the compiler) with its output captured and a time limit.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace opbench {

struct ProcessOutcome {
  int exit_code = -1;      // valid when exited
  int signal = 0;          // non-zero when killed by a signal
  bool timed_out = false;
  std::string output;      // stdout and stderr, interleaved
  bool ok() const { return exit_code == 0 && signal == 0 && !timed_out; }
};

ProcessOutcome run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// Runs a program with `input` on its stdin; stdout and stderr are kept apart (each capped at 16 MiB).
struct ProcessIo {
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  std::string out, err;
  bool ok() const { return exit_code == 0 && signal == 0 && !timed_out; }
};
ProcessIo run_process_io(const std::vector<std::string>& argv, const std::string& input, std::chrono::milliseconds timeout);

// The process group of the run_process_io child running now (0: none), so a signal handler can end
// it (and whatever it started) when opbench itself is interrupted. Async-signal-safe to read.
int running_io_child_group();

// "SIGSEGV (Segmentation fault)"
std::string describe_signal(int signal);

}  // namespace opbench
