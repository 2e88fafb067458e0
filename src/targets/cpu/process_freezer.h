// Stopping a worker whenever it is idle, and measuring its CPU time, from outside it. Everything
// inside the worker's address space belongs to the kernel once it is loaded, so these facts come
// only from what the parent does (signals, affinity) and observes (/proc): see docs/integrity.md.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <string>

namespace opbench::cpu {

// SIGSTOP/SIGCONT of one process (a whole thread group: a kernel cannot keep a thread running
// through a SIGSTOP) and the proof, read from /proc/PID/task/*/stat, that every thread stopped.
// No cgroup v2 freezer: this machine class often lacks a delegated cgroup, and a stopped thread
// group is as still as a frozen cgroup for a process that cannot fork (the seccomp filter).
class ProcessFreezer {
 public:
  ProcessFreezer() = default;
  explicit ProcessFreezer(pid_t pid) : pid_(pid) {}
  pid_t pid() const { return pid_; }
  // Stops the process and waits (at most ~2 s) until /proc shows every thread stopped. Returns an
  // empty string when verified, else why not (the caller must then not trust the worker).
  std::string freeze();
  // Continues it. Never fails in a way that matters: a dead process shows on the next read.
  void thaw();
  bool frozen() const { return frozen_; }

 private:
  pid_t pid_ = -1;
  bool frozen_ = false;
};

// Threads of `pid` that /proc shows not stopped ("T" or "t"): "TID:STATE ...", empty when all are.
// `threads` receives the number of threads seen. Returns "?" with a reason if /proc cannot be read.
std::string threads_not_stopped(pid_t pid, int* threads);

// CPU seconds of every thread of `pid`, exited threads included, from /proc/PID/stat (utime +
// stime of the thread group, clock ticks); -1 if it cannot be read.
double process_cpu_seconds_from_proc(pid_t pid);

// The first `threads` CPUs the caller may use, for a worker's affinity (set in the child before
// exec, so every thread the kernel starts inherits it). Returns an empty string on success, else
// why not; `chosen` lists the CPUs.
std::string choose_cpus(int threads, cpu_set_t* mask, std::string* chosen);

// True when every thread of `pid` is allowed exactly the CPUs of `mask`; else `why` says which is not.
bool affinity_is(pid_t pid, const cpu_set_t& mask, std::string* why);

}  // namespace opbench::cpu
