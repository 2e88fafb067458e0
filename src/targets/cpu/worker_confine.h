// What the worker does to itself before it loads an untrusted kernel: no capabilities, no way back to
// privileges, not readable by other processes, resource limits, and a seccomp filter that stops the
// system calls a kernel has no business making. Runs inside the worker process (after bubblewrap,
// when the parent could start it, has put it in its own namespaces); see docs/integrity.md.
#pragma once

#include <cstdint>
#include <string>

namespace opbench::cpu {

struct ConfineLimits {
  uint64_t address_space_bytes = 0;  // RLIMIT_AS; 0 leaves it alone
  uint64_t cpu_seconds = 0;          // RLIMIT_CPU (all threads together); 0 leaves it alone
  uint64_t open_files = 64;          // RLIMIT_NOFILE
  uint64_t file_bytes = 256ull << 20;  // RLIMIT_FSIZE: the most a kernel may write to its scratch
  bool deny_file_writes = false;     // seccomp refuses opening files for writing (when no read-only mount does)
};

// A second seccomp filter, stacked on the first once the kernel is loaded (after dlopen, before the
// first call of any of its functions): mmap, mprotect and pkey_mprotect that ask for PROT_EXEC stop
// the worker (SIGSYS, reported by name). The loader needs executable mappings while it loads the
// kernel and its libraries, so this cannot come earlier; a kernel's static constructors run under
// the first filter only. Returns an empty string on success, else why not.
std::string deny_executable_mappings();

// Applies everything; returns an empty string on success, else what could not be applied (the
// caller reports it and refuses to run the kernel: a half-confined worker must not pass for a
// confined one). `reply_fd` is where the SIGSYS handler reports a forbidden system call, with the
// nonce of the request being served, read from `nonce` (a NUL-terminated buffer the worker keeps current).
std::string confine_worker(const ConfineLimits& limits, int reply_fd, const char* nonce);

}  // namespace opbench::cpu
