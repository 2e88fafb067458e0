#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/utf8.h"

namespace opbench::cli {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long total = std::lround(s);
  if (total < 60) return fmt::format("{}s", total);
  if (total < 3600) return fmt::format("{}:{:02}", total / 60, total % 60);
  return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
}

ProgressBar::ProgressBar(size_t total, std::FILE* stream, bool terminal)
    : total_(total), stream_(stream), terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

ProgressBar::ProgressBar(size_t total) : ProgressBar(total, stderr, isatty(2) == 1) {}

double ProgressBar::eta_seconds() const {
  if (done_ == 0) return -1;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return elapsed / double(done_) * double(total_ > done_ ? total_ - done_ : 0);
}

std::string ProgressBar::bar_text(const std::string& text) const {
  constexpr size_t width = 20;
  const size_t filled = total_ ? std::min(width, done_ * width / total_) : 0;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = eta_seconds();
  return fmt::format("[{}{}] {}/{} {} elapsed, {} left  {}", std::string(filled, '#'), std::string(width - filled, '.'), done_, total_,
                     format_duration(elapsed), eta < 0 ? std::string("?") : format_duration(eta), text);
}

void ProgressBar::draw(const std::string& text) {
  // Cut to the width of a usual terminal on a character boundary: a wrapped line cannot be redrawn.
  fmt::print(stream_, "\r\033[K{}", utf8_truncate(bar_text(text), 118, ""));
  std::fflush(stream_);
}

void ProgressBar::note(const std::string& text) {
  if (terminal_) draw(text);
}

void ProgressBar::step_done(const std::string& outcome) {
  ++done_;
  if (terminal_) {
    // The outcome stays on screen as its own line; the bar redraws below it.
    fmt::print(stream_, "\r\033[K{}\n", outcome);
    draw("");
  } else {
    const double eta = eta_seconds();
    fmt::print(stream_, "{} ({}/{}, about {} left)\n", outcome, done_, total_, format_duration(eta));
    std::fflush(stream_);
  }
}

void ProgressBar::clear() {
  if (!terminal_) return;
  fmt::print(stream_, "\r\033[K");
  std::fflush(stream_);
}

}  // namespace opbench::cli
