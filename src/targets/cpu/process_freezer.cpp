#include "targets/cpu/process_freezer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace opbench::cpu {
namespace {

// The state letter of a /proc stat line: the field after the command, which is in parentheses and
// may itself hold spaces and parentheses (the kernel's threads can name themselves anything).
char stat_state(const std::string& stat) {
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return '?';
  return stat[close + 2];
}

std::string read_small_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buffer[1024];
  ssize_t n = read(fd, buffer, sizeof buffer);
  close(fd);
  return n > 0 ? std::string(buffer, size_t(n)) : std::string();
}

std::vector<pid_t> threads_of(pid_t pid, bool* ok) {
  std::vector<pid_t> tids;
  DIR* dir = opendir(fmt::format("/proc/{}/task", pid).c_str());
  *ok = dir != nullptr;
  if (!dir) return tids;
  while (dirent* e = readdir(dir))
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(pid_t(std::atoi(e->d_name)));
  closedir(dir);
  return tids;
}

}  // namespace

std::string threads_not_stopped(pid_t pid, int* threads) {
  bool ok = false;
  std::vector<pid_t> tids = threads_of(pid, &ok);
  *threads = int(tids.size());
  if (!ok || tids.empty()) return fmt::format("? (/proc/{}/task cannot be read: {})", pid, strerror(errno));
  std::string running;
  for (pid_t tid : tids) {
    const std::string stat = read_small_file(fmt::format("/proc/{}/task/{}/stat", pid, tid));
    if (stat.empty()) continue;  // the thread exited between the listing and the read
    const char state = stat_state(stat);
    // 'T' stopped by a signal, 't' stopped by a tracer; 'Z'/'X' threads are gone and run nothing.
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') running += fmt::format("{}{}:{}", running.empty() ? "" : " ", tid, state);
  }
  return running;
}

std::string ProcessFreezer::freeze() {
  if (pid_ <= 0) return "no process to freeze";
  if (kill(pid_, SIGSTOP) != 0) return fmt::format("SIGSTOP to the worker failed: {}", strerror(errno));
  // Group stop reaches each thread when it next enters the kernel or is interrupted (an IPI, so
  // microseconds even for a spinning thread); poll /proc until every thread shows it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::string running;
  int threads = 0;
  for (int round = 0;; ++round) {
    running = threads_not_stopped(pid_, &threads);
    if (running.empty()) {
      frozen_ = true;
      return {};
    }
    if (running[0] == '?' || std::chrono::steady_clock::now() > deadline) break;
    if (round < 64) sched_yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return fmt::format("the worker could not be verified frozen: thread(s) {} of {} still not stopped after SIGSTOP", running, threads);
}

void ProcessFreezer::thaw() {
  if (pid_ > 0) kill(pid_, SIGCONT);
  frozen_ = false;
}

double process_cpu_seconds_from_proc(pid_t pid) {
  const std::string stat = read_small_file(fmt::format("/proc/{}/stat", pid));
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  // After the command: state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15).
  double utime = -1, stime = -1;
  for (int index = 3; index <= 15 && (fields >> field); ++index) {
    if (index == 14) utime = std::stod(field);
    if (index == 15) stime = std::stod(field);
  }
  if (utime < 0 || stime < 0) return -1;
  return (utime + stime) / double(sysconf(_SC_CLK_TCK));
}

std::string choose_cpus(int threads, cpu_set_t* mask, std::string* chosen) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return fmt::format("sched_getaffinity: {}", strerror(errno));
  CPU_ZERO(mask);
  int taken = 0;
  std::string list;
  for (int cpu = 0; cpu < CPU_SETSIZE && taken < threads; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    CPU_SET(cpu, mask);
    list += fmt::format("{}{}", list.empty() ? "" : ",", cpu);
    ++taken;
  }
  if (taken == 0) return "no CPU is allowed to this process";
  *chosen = taken < threads ? fmt::format("{} (only {} for {} threads: no more are allowed here)", list, taken, threads) : list;
  return {};
}

bool affinity_is(pid_t pid, const cpu_set_t& mask, std::string* why) {
  bool ok = false;
  std::vector<pid_t> tids = threads_of(pid, &ok);
  if (!ok) {
    *why = fmt::format("/proc/{}/task cannot be read", pid);
    return false;
  }
  for (pid_t tid : tids) {
    cpu_set_t actual;
    CPU_ZERO(&actual);
    if (sched_getaffinity(tid, sizeof actual, &actual) != 0) continue;  // exited meanwhile
    if (!CPU_EQUAL(&actual, &mask)) {
      *why = fmt::format("thread {} may run on {} CPU(s), not the {} it was given", tid, CPU_COUNT(&actual), CPU_COUNT(&mask));
      return false;
    }
  }
  return true;
}

}  // namespace opbench::cpu
