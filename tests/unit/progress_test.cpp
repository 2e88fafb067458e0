#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cli/progress.h"

namespace opbench::cli {
namespace {

std::string captured(const std::function<void(std::FILE*)>& body) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buffer, &size);
  body(f);
  std::fclose(f);
  std::string out(buffer, size);
  std::free(buffer);
  return out;
}

TEST(Progress, Durations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(65), "1:05");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(Progress, PlainLinesWhenNotATerminal) {
  const std::string out = captured([](std::FILE* f) {
    ProgressBar bar(3, f, false);
    bar.note("building");  // notes are for terminals only
    bar.step_done("8p baseline: correct");
    bar.step_done("8p expert: correct");
  });
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_EQ(out.find("\033["), std::string::npos);
  EXPECT_EQ(out.find("building"), std::string::npos);
  EXPECT_NE(out.find("8p baseline: correct (1/3, about"), std::string::npos);
  EXPECT_NE(out.find("8p expert: correct (2/3, about"), std::string::npos);
}

TEST(Progress, BarRedrawsInPlaceOnATerminal) {
  const std::string out = captured([](std::FILE* f) {
    ProgressBar bar(4, f, true);
    bar.note("8p baseline: timing");
    bar.step_done("8p baseline: correct");
    bar.clear();
  });
  EXPECT_NE(out.find("\r\033[K[....................] 0/4"), std::string::npos);
  EXPECT_NE(out.find("[#####...............] 1/4"), std::string::npos);
  EXPECT_NE(out.find("8p baseline: correct\n"), std::string::npos);
}

TEST(Progress, EtaFromTheMeanStepTime) {
  ProgressBar bar(10, stderr, false);
  EXPECT_LT(bar.eta_seconds(), 0);  // nothing finished: unknown
  bar.step_done("one");
  EXPECT_GE(bar.eta_seconds(), 0);
  EXPECT_NE(bar.bar_text("x").find("1/10"), std::string::npos);
}

}  // namespace
}  // namespace opbench::cli
