// Progress of a long command (run, tune, search) on stderr: on a terminal, one line rewritten in
// place with a bar, the count, the elapsed time and an estimate of the time left; elsewhere (a log,
// a pipe, CI) one plain line per finished step, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace opbench::cli {

// "1:05", "12s", "1:02:03": how long, for a person.
std::string format_duration(double seconds);

class ProgressBar {
 public:
  // `stream` is where it writes (stderr); `terminal` says whether to redraw in place.
  ProgressBar(size_t total, std::FILE* stream, bool terminal);
  // On stderr, redrawing when stderr is a terminal.
  explicit ProgressBar(size_t total);

  // A note on the current step (what is running now); redrawn on a terminal, ignored elsewhere.
  void note(const std::string& text);
  // One more step finished, with what it came to; printed as a line in plain mode.
  void step_done(const std::string& outcome);
  // Clears the bar (a terminal) before other output.
  void clear();
  // Estimated seconds left from the mean time per finished step; negative when nothing finished.
  double eta_seconds() const;
  std::string bar_text(const std::string& text) const;
  size_t done() const { return done_; }

 private:
  void draw(const std::string& text);
  size_t total_, done_ = 0;
  std::FILE* stream_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace opbench::cli
