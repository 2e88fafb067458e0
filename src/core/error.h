// Error types of the host program. Inside opbench, failures are exceptions with context; at the
// boundary with untrusted kernels they become result statuses instead (see harness/result.h).
#pragma once

#include <stdexcept>
#include <string>

namespace opbench {

// The user asked for something that cannot be done (unknown workload, missing file, bad option).
// The message says what was wrong and what to do; the CLI exits with code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A workload folder or spec file is malformed: a bug in the suite, not in a submitted kernel.
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace opbench
