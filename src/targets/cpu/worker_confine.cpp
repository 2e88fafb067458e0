#include "targets/cpu/worker_confine.h"

#include "targets/cpu/signal_safe_line.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

namespace opbench::cpu {
namespace {

// A forbidden system call: the number, its name and what it would have been for. The table is
// built before the filter is loaded so the SIGSYS handler only reads it.
struct Forbidden {
  int nr;
  const char* name;
  const char* what;
};

constexpr int kMaxForbidden = 96;
Forbidden g_forbidden[kMaxForbidden];
int g_forbidden_count = 0;
int g_reply_fd = -1;
const char* g_nonce = "";

// Async-signal-safe: writes one reply line, then leaves.
void on_sigsys(int, siginfo_t* info, void*) {
  const int nr = info->si_syscall;
  const char* name = "?";
  const char* what = "a system call kernels may not make";
  for (int i = 0; i < g_forbidden_count; ++i)
    if (g_forbidden[i].nr == nr) {
      name = g_forbidden[i].name;
      what = g_forbidden[i].what;
    }
  if (g_reply_fd >= 0)
    SignalSafeLine()
        .text("{\"ok\":false,\"status\":\"forbidden_syscall\",\"nonce\":\"")
        .text(g_nonce)
        .text("\",\"reason\":\"the kernel made the system call ")
        .text(name)
        .text(" (")
        .number(nr)
        .text("): ")
        .text(what)
        .text("; the sandbox stopped the worker\"}\n")
        .write_to(g_reply_fd);
  _exit(121);
}

struct Rule {
  int nr;
  const char* name;
  const char* what;
  std::vector<scmp_arg_cmp> conditions;  // all must hold for the rule to fire; empty: always
  uint32_t action = SCMP_ACT_TRAP;
};

std::vector<Rule> rules(const ConfineLimits& limits) {
  const auto self = static_cast<scmp_datum_t>(getpid());
  std::vector<Rule> r = {
      {SCMP_SYS(socket), "socket", "network access", {}},
      {SCMP_SYS(socketpair), "socketpair", "network access", {}},
      {SCMP_SYS(connect), "connect", "network access", {}},
      {SCMP_SYS(bind), "bind", "network access", {}},
      {SCMP_SYS(ptrace), "ptrace", "tracing processes", {}},
      {SCMP_SYS(process_vm_readv), "process_vm_readv", "reading another process's memory", {}},
      {SCMP_SYS(process_vm_writev), "process_vm_writev", "writing another process's memory", {}},
      {SCMP_SYS(kcmp), "kcmp", "inspecting other processes", {}},
      {SCMP_SYS(pidfd_open), "pidfd_open", "reaching other processes", {}},
      {SCMP_SYS(pidfd_getfd), "pidfd_getfd", "taking another process's files", {}},
      {SCMP_SYS(pidfd_send_signal), "pidfd_send_signal", "signalling other processes", {}},
      {SCMP_SYS(fork), "fork", "starting a process", {}},
      {SCMP_SYS(vfork), "vfork", "starting a process", {}},
      // clone is how threads start too: only a clone that makes a new process is stopped.
      {SCMP_SYS(clone), "clone", "starting a process", {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)}},
      // clone3 passes its flags in memory the filter cannot read: refused with ENOSYS, glibc then
      // falls back to clone, which the rule above checks.
      {SCMP_SYS(clone3), "clone3", "starting a process", {}, SCMP_ACT_ERRNO(ENOSYS)},
      {SCMP_SYS(execve), "execve", "running a program", {}},
      {SCMP_SYS(execveat), "execveat", "running a program", {}},
      {SCMP_SYS(kill), "kill", "signalling other processes", {SCMP_A0(SCMP_CMP_NE, 0)}},
      {SCMP_SYS(tkill), "tkill", "signalling other processes", {}},
      {SCMP_SYS(tgkill), "tgkill", "signalling other processes", {SCMP_A0(SCMP_CMP_NE, self)}},
      {SCMP_SYS(clock_settime), "clock_settime", "changing the clock", {}},
      {SCMP_SYS(clock_adjtime), "clock_adjtime", "changing the clock", {}},
      {SCMP_SYS(settimeofday), "settimeofday", "changing the clock", {}},
      {SCMP_SYS(adjtimex), "adjtimex", "changing the clock", {}},
      {SCMP_SYS(setrlimit), "setrlimit", "changing resource limits", {}},
      {SCMP_SYS(prlimit64), "prlimit64", "changing resource limits", {SCMP_A2(SCMP_CMP_NE, 0)}},
      {SCMP_SYS(setpriority), "setpriority", "changing scheduling priorities", {}},
      {SCMP_SYS(sched_setscheduler), "sched_setscheduler", "changing scheduling policy", {}},
      {SCMP_SYS(sched_setattr), "sched_setattr", "changing scheduling policy", {}},
      // The parent pinned the worker to `threads` CPUs: num_threads is enforced by that affinity.
      {SCMP_SYS(sched_setaffinity), "sched_setaffinity", "changing the CPUs the worker may use (num_threads is enforced by them)", {}},
      {SCMP_SYS(mount), "mount", "changing mounts", {}},
      {SCMP_SYS(umount2), "umount2", "changing mounts", {}},
      {SCMP_SYS(pivot_root), "pivot_root", "changing mounts", {}},
      {SCMP_SYS(chroot), "chroot", "changing mounts", {}},
      {SCMP_SYS(unshare), "unshare", "changing namespaces", {}},
      {SCMP_SYS(setns), "setns", "changing namespaces", {}},
      {SCMP_SYS(bpf), "bpf", "loading kernel programs", {}},
      {SCMP_SYS(perf_event_open), "perf_event_open", "performance counters", {}},
      {SCMP_SYS(userfaultfd), "userfaultfd", "handling page faults", {}},
      {SCMP_SYS(io_uring_setup), "io_uring_setup", "asynchronous I/O that bypasses this filter", {}},
      {SCMP_SYS(io_uring_enter), "io_uring_enter", "asynchronous I/O that bypasses this filter", {}},
      {SCMP_SYS(io_uring_register), "io_uring_register", "asynchronous I/O that bypasses this filter", {}},
      {SCMP_SYS(keyctl), "keyctl", "the kernel keyring", {}},
      {SCMP_SYS(add_key), "add_key", "the kernel keyring", {}},
      {SCMP_SYS(request_key), "request_key", "the kernel keyring", {}},
      {SCMP_SYS(name_to_handle_at), "name_to_handle_at", "file handles", {}},
      {SCMP_SYS(open_by_handle_at), "open_by_handle_at", "file handles", {}},
      {SCMP_SYS(personality), "personality", "changing the execution domain", {}},
      {SCMP_SYS(init_module), "init_module", "kernel modules", {}},
      {SCMP_SYS(finit_module), "finit_module", "kernel modules", {}},
      {SCMP_SYS(delete_module), "delete_module", "kernel modules", {}},
      {SCMP_SYS(kexec_load), "kexec_load", "rebooting", {}},
      {SCMP_SYS(reboot), "reboot", "rebooting", {}},
      {SCMP_SYS(swapon), "swapon", "swap", {}},
      {SCMP_SYS(swapoff), "swapoff", "swap", {}},
      {SCMP_SYS(acct), "acct", "process accounting", {}},
  };
  if (limits.deny_file_writes) {
    // Without a read-only mount (no namespaces available) the filter refuses writes to files.
    for (int flag : {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND}) {
      const auto f = static_cast<scmp_datum_t>(flag);
      r.push_back({SCMP_SYS(openat), "openat", "opening a file for writing", {SCMP_A2(SCMP_CMP_MASKED_EQ, f, f)}});
      r.push_back({SCMP_SYS(open), "open", "opening a file for writing", {SCMP_A1(SCMP_CMP_MASKED_EQ, f, f)}});
    }
    for (auto [nr, name] : std::initializer_list<std::pair<int, const char*>>{
             {SCMP_SYS(openat2), "openat2"}, {SCMP_SYS(creat), "creat"}, {SCMP_SYS(unlink), "unlink"},
             {SCMP_SYS(unlinkat), "unlinkat"}, {SCMP_SYS(rename), "rename"}, {SCMP_SYS(renameat), "renameat"},
             {SCMP_SYS(renameat2), "renameat2"}, {SCMP_SYS(mkdir), "mkdir"}, {SCMP_SYS(mkdirat), "mkdirat"},
             {SCMP_SYS(rmdir), "rmdir"}, {SCMP_SYS(symlink), "symlink"}, {SCMP_SYS(symlinkat), "symlinkat"},
             {SCMP_SYS(link), "link"}, {SCMP_SYS(linkat), "linkat"}, {SCMP_SYS(truncate), "truncate"},
             {SCMP_SYS(chmod), "chmod"}, {SCMP_SYS(fchmodat), "fchmodat"}, {SCMP_SYS(chown), "chown"},
             {SCMP_SYS(fchownat), "fchownat"}})
      r.push_back({nr, name, "changing the file system", {}});
  }
  return r;
}

std::string set_limit(int resource, uint64_t value, const char* name) {
  rlimit rl{value, value};
  rlimit current{};
  getrlimit(resource, &current);
  // Never raise a limit the parent already set lower.
  if (current.rlim_max != RLIM_INFINITY && current.rlim_max < value) rl = {current.rlim_max, current.rlim_max};
  if (setrlimit(resource, &rl) != 0) return std::string("setrlimit(") + name + "): " + strerror(errno);
  return {};
}

std::string drop_capabilities() {
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  for (int cap = 0; cap <= 63; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);  // EPERM/EINVAL when not held: fine
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) return std::string("capset: ") + strerror(errno);
  __user_cap_data_struct check[2] = {};
  if (syscall(SYS_capget, &header, check) != 0) return std::string("capget: ") + strerror(errno);
  if (check[0].effective || check[1].effective || check[0].permitted || check[1].permitted) return "capabilities remained after capset";
  return {};
}

// Adds the rules to a fresh filter and loads it (stacked on any already loaded); registers their
// names for the SIGSYS report.
std::string load_rules(const std::vector<Rule>& list) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return "seccomp_init failed";
  for (const Rule& rule : list) {
    if (rule.nr < 0) continue;  // not a system call on this architecture
    int rc = seccomp_rule_add_array(ctx, rule.action, rule.nr, unsigned(rule.conditions.size()),
                                    rule.conditions.empty() ? nullptr : rule.conditions.data());
    if (rc != 0) {
      seccomp_release(ctx);
      return std::string("seccomp rule for ") + rule.name + ": " + strerror(-rc);
    }
    bool known = false;
    for (int i = 0; i < g_forbidden_count; ++i) known = known || g_forbidden[i].nr == rule.nr;
    if (!known && g_forbidden_count < kMaxForbidden) g_forbidden[g_forbidden_count++] = {rule.nr, rule.name, rule.what};
  }
  int rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return std::string("seccomp_load: ") + strerror(-rc);
  return {};
}

std::string install_filter(const ConfineLimits& limits) {
  if (const char* e = std::getenv("OPBENCH_NO_SECCOMP"); e && std::string(e) == "1")
    return "seccomp disabled by OPBENCH_NO_SECCOMP=1";  // to test the fallback on machines that have seccomp
  g_forbidden_count = 0;
  return load_rules(rules(limits));
}

}  // namespace

std::string deny_executable_mappings() {
  if (const char* e = std::getenv("OPBENCH_NO_SECCOMP"); e && std::string(e) == "1") return {};  // reported by confine_worker
  const auto exec = static_cast<scmp_datum_t>(PROT_EXEC);
  const char* what = "making memory executable after the kernel was loaded (code made or loaded at run time)";
  return load_rules({{SCMP_SYS(mmap), "mmap", what, {SCMP_A2(SCMP_CMP_MASKED_EQ, exec, exec)}},
                     {SCMP_SYS(mprotect), "mprotect", what, {SCMP_A2(SCMP_CMP_MASKED_EQ, exec, exec)}},
                     {SCMP_SYS(pkey_mprotect), "pkey_mprotect", what, {SCMP_A2(SCMP_CMP_MASKED_EQ, exec, exec)}},
                     {SCMP_SYS(remap_file_pages), "remap_file_pages", what, {}}});
}

std::string confine_worker(const ConfineLimits& limits, int reply_fd, const char* nonce) {
  g_reply_fd = reply_fd;
  g_nonce = nonce;
  // Other processes of this user may not read this one's memory or files under /proc.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return std::string("PR_SET_DUMPABLE: ") + strerror(errno);
  struct Limit {
    int resource;
    uint64_t value;
    const char* name;
  };
  const Limit all[] = {{RLIMIT_AS, limits.address_space_bytes, "RLIMIT_AS"}, {RLIMIT_CPU, limits.cpu_seconds, "RLIMIT_CPU"},
                       {RLIMIT_NOFILE, limits.open_files, "RLIMIT_NOFILE"}, {RLIMIT_FSIZE, limits.file_bytes, "RLIMIT_FSIZE"},
                       {RLIMIT_CORE, 0, "RLIMIT_CORE"}};
  for (const Limit& l : all) {
    if (l.value == 0 && l.resource != RLIMIT_CORE) continue;
    if (std::string e = set_limit(l.resource, l.value, l.name); !e.empty()) return e;
  }
  if (std::string e = drop_capabilities(); !e.empty()) return e;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("PR_SET_NO_NEW_PRIVS: ") + strerror(errno);
  struct sigaction sa{};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return std::string("sigaction(SIGSYS): ") + strerror(errno);
  return install_filter(limits);
}

}  // namespace opbench::cpu
