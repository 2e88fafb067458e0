// One reply line built and written from a signal handler: no allocation, no stdio, only write(2).
// The worker's SIGSYS and SIGSEGV handlers report through it before they end the process.
#pragma once

#include <unistd.h>

#include <cstddef>

namespace opbench::cpu {

class SignalSafeLine {
 public:
  SignalSafeLine& text(const char* s) {
    while (*s && used_ + 1 < sizeof buffer_) buffer_[used_++] = *s++;
    return *this;
  }
  SignalSafeLine& number(long value) {
    char digits[24];
    int n = 0;
    const bool negative = value < 0;
    unsigned long v = negative ? 0UL - static_cast<unsigned long>(value) : static_cast<unsigned long>(value);
    do {
      digits[n++] = char('0' + v % 10);
      v /= 10;
    } while (v && n < 22);
    if (negative) digits[n++] = '-';
    while (n > 0 && used_ + 1 < sizeof buffer_) buffer_[used_++] = digits[--n];
    return *this;
  }
  void write_to(int fd) const {
    ssize_t ignored = ::write(fd, buffer_, used_);
    (void)ignored;
  }

 private:
  char buffer_[512];
  size_t used_ = 0;
};

}  // namespace opbench::cpu
