#include "targets/cpu/worker_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "core/rng.h"
#include "targets/cpu/isa_level.h"
#include "targets/cpu/sandbox.h"
#include "targets/cpu/worker_view.h"
#include "targets/cpu/worker_protocol.h"

extern char** environ;

namespace opbench::cpu {
namespace {

using nlohmann::json;

json tensor_list(SharedArena& arena, int arena_index, int set) {
  json list = json::array();
  for (int t = 0; t < arena.tensors(); ++t) {
    const auto& tensor = arena.tensor(t);
    list.push_back({{"arena", arena_index}, {"offset", arena.offset(set, t)}, {"bytes", tensor.bytes()},
                    {"canary_bytes", arena.canary_bytes(set, t)}, {"dtype", int(tensor.dtype)}, {"shape", tensor.shape}});
  }
  return list;
}

json arena_description(const SharedArena& arena, bool writable) {
  json guards = json::array();
  for (const auto& [offset, length] : arena.guard_ranges()) guards.push_back({offset, length});
  return {{"bytes", arena.total_bytes()}, {"guards", guards}, {"writable", writable}};
}

std::string new_nonce() {
  static std::mt19937_64 generator(fresh_secret_seed());
  return fmt::format("{:016x}", generator());
}

// The worker below `pid`: bwrap starts a second bwrap as pid 1 of the new namespace, which starts
// the worker. Follows only children, so it never lands on an unrelated process.
pid_t deepest_child(pid_t pid) {
  for (int depth = 0; depth < 3; ++depth) {
    std::ifstream children(fmt::format("/proc/{}/task/{}/children", pid, pid));
    pid_t child = 0;
    if (!(children >> child) || child <= 0) break;
    pid = child;
  }
  return pid;
}

double clock_seconds(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return -1;
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace

WorkerClient::~WorkerClient() {
  if (pid_ > 0 && !dead_) {
    freezer_.thaw();
    send(R"({"op":"quit"})");
    // Give it a moment to leave on its own, then make sure.
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      usleep(2000);
    }
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    } else if (group_ > 0) {
      kill(-group_, SIGKILL);  // whatever the kernel left behind in the worker's process group
    }
    if (worker_pid_ > 0 && worker_pid_ != pid_) kill(worker_pid_, SIGKILL);
  }
  for (int fd : {command_fd_, reply_fd_, log_fd_})
    if (fd >= 0) close(fd);
}

LaunchOutcome WorkerClient::start(const std::filesystem::path& worker_program, const std::filesystem::path& kernel,
                                  SharedArena& inputs, SharedArena& outputs, const LaunchOptions& options,
                                  const WorkerTraits& traits) {
  LaunchOutcome outcome;
  // The libraries the kernel loads decide its file view and whether it may make code at run time.
  std::vector<std::string> libraries;
  try {
    libraries = shared_libraries_of(kernel);
  } catch (const std::exception& e) {
    outcome.failure = LaunchOutcome::Failure::rejected;
    outcome.reason = e.what();
    return outcome;
  }
  std::unique_ptr<WorkerClient> client(new WorkerClient());
  client->traits_ = traits;
  int to_worker[2], from_worker[2];
  if (pipe2(to_worker, O_CLOEXEC) != 0 || pipe2(from_worker, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("pipe2 failed: {}", strerror(errno)));
  client->log_fd_ = memfd_create("opbench-worker-log", MFD_CLOEXEC);

  client->role_ = outputs.label().substr(0, outputs.label().find('-'));
  // Unconfined (the ablation) keeps the parent's environment, with the thread count pinned.
  std::vector<std::string> env_strings = worker_environment(options.threads, options.isa, environ, options.sandbox);
  for (const auto& var : traits.environment) env_strings.push_back(var);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const bool namespaces = options.sandbox && traits.namespaces && namespace_support().available;
  client->in_bwrap_ = namespaces;
  client->freeze_ = options.sandbox;
  client->sandbox_ = cpu::describe_sandbox(options.sandbox ? SandboxMode::on : SandboxMode::off);
  if (options.sandbox && !traits.namespaces)
    client->sandbox_ = "seccomp only: seccomp filter, rlimits, no capabilities, not dumpable; namespaces: none (not used by this target)";
  if (!traits.sandbox_note.empty()) client->sandbox_ += "; " + traits.sandbox_note;
  // A candidate (no vendor library: the import check saw to that) may not make anything executable
  // once loaded; a baseline's oneDNN makes its code at run time.
  const bool deny_exec_after_load = options.sandbox && traits.deny_exec_after_load && !needs_vendor_library(libraries);
  std::vector<std::string> view = shared_libraries_of(worker_program);
  for (const auto& l : libraries)
    if (std::find(view.begin(), view.end(), l) == view.end()) view.push_back(l);
  for (const auto& path : traits.read_only)
    if (std::find(view.begin(), view.end(), path) == view.end()) view.push_back(path);
  std::vector<std::string> argv_strings = namespaces ? bwrap_command(worker_program, kernel, view, traits.device_nodes)
                                                     : std::vector<std::string>{worker_program.string()};
  // num_threads is enforced by affinity: the worker (and every thread it starts) may run on exactly
  // `threads` CPUs; the seccomp filter refuses sched_setaffinity, so the kernel cannot widen it.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  std::string cpu_list;
  if (options.sandbox && traits.pin_cpus) {
    if (std::string e = choose_cpus(options.threads, &cpus, &cpu_list); !e.empty())
      throw std::runtime_error("cannot choose the worker's CPUs: " + e);
    client->cpus_allowed_ = CPU_COUNT(&cpus);
  }
  const bool pin = options.sandbox && traits.pin_cpus;
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  // The inputs go to the worker through a read-only descriptor of their memfd: its mapping can never
  // be made writable, whatever the kernel does.
  const int inputs_read_only = open(fmt::format("/proc/self/fd/{}", inputs.fd()).c_str(), O_RDONLY | O_CLOEXEC);
  if (inputs_read_only < 0) throw std::runtime_error(fmt::format("cannot reopen the input arena read-only: {}", strerror(errno)));
  // Source fds for the child's fixed slots, in slot order from fd 1.
  const int sources[] = {client->log_fd_, client->log_fd_, to_worker[0], from_worker[1], inputs_read_only, outputs.fd()};
  const int parent_pid = getpid();

  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", strerror(errno)));
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent_pid) _exit(120);
    if (pin && sched_setaffinity(0, sizeof cpus, &cpus) != 0) _exit(119);
    int high[6];
    for (int i = 0; i < 6; ++i) high[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, 100);
    for (int i = 0; i < 6; ++i) dup2(high[i], i + 1);  // dup2 clears FD_CLOEXEC on the target
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    close_range(7, ~0U, 0);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so a kill of the group cannot race the child's own call
  close(inputs_read_only);
  close(to_worker[0]);
  close(from_worker[1]);
  client->pid_ = pid;
  client->group_ = pid;
  client->command_fd_ = to_worker[1];
  client->reply_fd_ = from_worker[0];

  json load = {{"op", "load"},
               {"kernel", namespaces ? std::string(kSandboxKernelPath) : std::filesystem::absolute(kernel).string()},
               {"threads", options.threads},
               {"arenas", {arena_description(inputs, false), arena_description(outputs, true)}}};
  if (options.sandbox) {
    // RLIMIT_AS counts reserved address space, not memory used, and vendor libraries reserve per
    // thread: OpenBLAS a 128 MiB buffer (32 << 22), glibc a 64 MiB malloc arena, each thread an
    // 8 MiB stack; measured 139 MiB per thread for sgemm with Debian's OpenBLAS (tests/e2e/
    // robustness_test.cpp). 256 MiB per thread on top of 8 GiB covers that at every thread count a
    // machine can have (256 threads: 72 GiB of address space; none of it is memory until touched).
    const uint64_t headroom = options.memory_limit_bytes ? options.memory_limit_bytes
                                                         : (8ull << 30) + uint64_t(std::max(1, options.threads)) * (256ull << 20);
    load["confine"] = {{"address_space_bytes", traits.limit_address_space ? inputs.total_bytes() + outputs.total_bytes() + headroom : 0},
                       // CPU time counts every thread: an hour per thread, so a long evaluation
                       // at 256 threads is not killed by SIGXCPU and reported as a crash.
                       {"cpu_seconds", options.cpu_limit_seconds ? options.cpu_limit_seconds : 3600ull * uint64_t(std::max(1, options.threads))},
                       {"open_files", traits.open_files},
                       {"deny_file_writes", !namespaces},
                       {"deny_exec_after_load", deny_exec_after_load}};
  }
  json in_sets = json::array(), out_sets = json::array();
  for (int s = 0; s < inputs.sets(); ++s) {
    in_sets.push_back(tensor_list(inputs, 0, s));
    out_sets.push_back(tensor_list(outputs, 1, s % outputs.sets()));
  }
  load["inputs"] = std::move(in_sets);
  load["outputs"] = std::move(out_sets);
  for (const auto& [key, value] : traits.load_fields.items()) load[key] = value;
  const std::string nonce = new_nonce();
  load["nonce"] = nonce;
  client->send(load.dump());

  std::string line;
  ReadStatus status = client->read_line(&line, options.load_timeout);
  if (status != ReadStatus::line) {
    BatchOutcome dead = client->finish_dead(status == ReadStatus::timeout ? BatchOutcome::Kind::timed_out : BatchOutcome::Kind::crashed,
                                            "while loading the kernel");
    outcome.failure = dead.kind == BatchOutcome::Kind::timed_out ? LaunchOutcome::Failure::timed_out : LaunchOutcome::Failure::crashed;
    outcome.reason = dead.detail;
    std::string log = client->output_log();
    if (!log.empty()) outcome.reason += "; output: " + log;
    return outcome;
  }
  json answer = json::parse(line, nullptr, false);
  const bool genuine = !answer.is_discarded() && answer.value("nonce", std::string()) == nonce;
  if (!genuine || !answer.value("ok", false)) {
    client->finish_dead(BatchOutcome::Kind::crashed, "after refusing the kernel");
    const std::string status_word = genuine ? answer.value("status", std::string()) : std::string();
    // A forbidden system call or a fault during loading (a static constructor) is the kernel's runtime error.
    outcome.failure = status_word == "rejected" ? LaunchOutcome::Failure::rejected : LaunchOutcome::Failure::crashed;
    if (genuine && status_word == "error") throw std::runtime_error("the worker failed to start: " + answer.value("reason", std::string("?")));
    outcome.reason = !genuine ? "the worker's answer to loading was not its own (garbage or a forged report while loading)"
                              : answer.value("reason", std::string("load failed"));
    return outcome;
  }
  if (clockid_t clock; clock_getcpuclockid(deepest_child(client->pid_), &clock) == 0) {
    client->cpu_clock_ = clock;
    client->has_cpu_clock_ = clock_seconds(clock) >= 0;
  }
  if (answer.contains("device") && answer["device"].is_object()) {
    const json& d = answer["device"];
    client->device_.name = d.value("name", std::string());
    client->device_.driver = d.value("driver", std::string());
    client->device_.sm_clock_max_mhz = d.value("sm_clock_max_mhz", 0.0);
    client->device_.l2_bytes = d.value("l2_bytes", size_t(0));
    client->device_.l2_flushed = answer.value("l2_flush", false);
  }
  if (answer.contains("confine_error"))
    client->sandbox_ = "none (the worker could not confine itself: " + answer["confine_error"].get<std::string>() + ")";
  client->worker_pid_ = deepest_child(client->pid_);
  client->note_reply();
  if (client->freeze_) {
    // From here on the worker runs only inside requests the parent times.
    client->freezer_ = ProcessFreezer(client->worker_pid_);
    std::string why;
    if (pin && !affinity_is(client->worker_pid_, cpus, &why)) {
      client->finish_dead(BatchOutcome::Kind::untrusted, "after loading");
      outcome.failure = LaunchOutcome::Failure::untrusted;
      outcome.reason = "the worker's CPU affinity is not the one the parent set: " + why;
      return outcome;
    }
    if (auto failed = client->freeze_idle("after loading the kernel")) {
      outcome.failure = LaunchOutcome::Failure::untrusted;
      outcome.reason = failed->detail;
      return outcome;
    }
    client->sandbox_ += fmt::format("; frozen between requests (SIGSTOP, every thread verified stopped in /proc; no cgroup "
                                    "freezer){}; environment cut to an allow-list{}",
                                    pin ? "; pinned to CPU(s) " + cpu_list : std::string(),
                                    deny_exec_after_load ? "; no executable mappings after load" : "");
  }
  outcome.runner = std::move(client);
  return outcome;
}

bool WorkerClient::send(const std::string& text) {
  std::string line = text + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(command_fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= size_t(n);
  }
  return true;
}

WorkerClient::ReadStatus WorkerClient::read_line(std::string* line, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      *line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return ReadStatus::line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ReadStatus::timeout;
    pollfd p{reply_fd_, POLLIN, 0};
    int r = poll(&p, 1, int(std::min<int64_t>(left.count(), 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return ReadStatus::timeout;
    char chunk[4096];
    ssize_t n = read(reply_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadStatus::eof;
    buffer_.append(chunk, size_t(n));
  }
}

BatchOutcome WorkerClient::finish_dead(BatchOutcome::Kind kind, const std::string& context) {
  BatchOutcome out;
  out.kind = kind;
  if (kind == BatchOutcome::Kind::timed_out || kind == BatchOutcome::Kind::untrusted) {
    kill(-pid_, SIGKILL);
    if (worker_pid_ > 0) kill(worker_pid_, SIGKILL);
  }
  freezer_.thaw();  // a stopped worker cannot exit on its own
  int status = 0;
  // A worker that closed its pipe is about to exit; do not wait forever if it did something else.
  for (int i = 0; i < 500 && waitpid(pid_, &status, WNOHANG) == 0; ++i) usleep(2000);
  if (waitpid(pid_, &status, WNOHANG) == 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  kill(-pid_, SIGKILL);  // anything the kernel left behind in its process group
  if (worker_pid_ > 0 && worker_pid_ != pid_) kill(worker_pid_, SIGKILL);
  pid_ = -1;
  // SIGKILL is what the OOM killer and a user's kill -9 send; a kernel can also send it to itself.
  auto died_of = [&](int signal) {
    return fmt::format("{} died of {}{} {}", who(), describe_signal(signal),
                       signal == SIGKILL ? " (sent from outside, e.g. the out-of-memory killer, or by the kernel to itself)" : "", context);
  };
  if (kind == BatchOutcome::Kind::untrusted) {
    out.detail = fmt::format("{} was ended {}", who(), context);
  } else if (kind == BatchOutcome::Kind::timed_out) {
    out.detail = fmt::format("no answer {}; {} was killed", context, who());
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
    out.detail = died_of(out.signal);
  } else if (WIFEXITED(status) && in_bwrap_ && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 65) {
    // bwrap reports a worker killed by signal N as exit status 128 + N.
    out.signal = WEXITSTATUS(status) - 128;
    out.detail = died_of(out.signal);
  } else if (WIFEXITED(status)) {
    out.detail = fmt::format("{} exited with code {} {}", who(), WEXITSTATUS(status), context);
  } else {
    out.detail = fmt::format("{} vanished {}", who(), context);
  }
  dead_ = out;
  return out;
}

void WorkerClient::note_reply() {
  if (has_cpu_clock_) cpu_at_reply_ = clock_seconds(cpu_clock_);
  if (cpu_at_reply_ >= 0) cpu_total_ = cpu_at_reply_;
}

std::optional<BatchOutcome> WorkerClient::freeze_idle(const std::string& context) {
  if (!freeze_) return std::nullopt;
  std::string why = freezer_.freeze();
  if (why.empty()) return std::nullopt;
  // A worker that is gone (or a zombie) was not refusing to stop: it died; say of what.
  siginfo_t exited{};
  const bool parent_exited = waitid(P_PID, id_t(pid_), &exited, WEXITED | WNOHANG | WNOWAIT) == 0 && exited.si_pid == pid_;
  if (kill(worker_pid_, 0) != 0 || parent_exited || !std::filesystem::exists(fmt::format("/proc/{}/task", worker_pid_)))
    return finish_dead(BatchOutcome::Kind::crashed, context);
  BatchOutcome dead = finish_dead(BatchOutcome::Kind::untrusted, context);
  dead.detail = fmt::format("{} {}: {}; it is not trusted to run unwatched and was ended", who(), context, why);
  dead_ = dead;
  return dead;
}

double WorkerClient::cpu_seconds_total() {
  if (!has_cpu_clock_) return -1;
  if (!dead_) {
    const double now = clock_seconds(cpu_clock_);
    if (now >= 0) cpu_total_ = now;
  }
  return cpu_total_;
}

double WorkerClient::cpu_seconds_since_reply() {
  if (!has_cpu_clock_ || dead_) return -1;
  double now = clock_seconds(cpu_clock_);
  return now < 0 ? -1 : now - cpu_at_reply_;
}

BatchOutcome WorkerClient::request(json message, std::chrono::milliseconds timeout, const std::string& context, json* answer) {
  if (dead_) return *dead_;
  BatchOutcome out;
  // Anything already waiting in the reply pipe was written by nobody the parent asked. A closed pipe
  // with nothing in it is not a forgery: the worker died while idle (killed from outside, the OOM killer).
  pollfd p{reply_fd_, POLLIN, 0};
  if (!buffer_.empty() || poll(&p, 1, 0) > 0) {
    std::string extra;
    const ReadStatus status = read_line(&extra, std::chrono::milliseconds(1));
    if (extra.empty()) extra = buffer_;
    if (status == ReadStatus::eof && extra.empty()) return finish_dead(BatchOutcome::Kind::crashed, "while idle, before " + context);
    BatchOutcome dead = finish_dead(BatchOutcome::Kind::protocol_error, context);
    dead.detail = fmt::format("the worker's reply pipe held a report nobody asked for (a kernel forging the worker's answers?): {:.120}", extra);
    dead_ = dead;
    return dead;
  }
  const std::string nonce = new_nonce();
  message["nonce"] = nonce;
  const std::string text = message.dump();
  // The worker runs from the SIGCONT to the reply, all of it inside the timed window.
  const auto start = std::chrono::steady_clock::now();
  freezer_.thaw();
  if (!send(text)) return finish_dead(BatchOutcome::Kind::crashed, "before " + context);
  std::string line;
  ReadStatus status = read_line(&line, timeout);
  if (status == ReadStatus::timeout)
    return finish_dead(BatchOutcome::Kind::timed_out, fmt::format("within the {:.1f} s limit for {}", timeout.count() / 1000.0, context));
  if (status == ReadStatus::eof) return finish_dead(BatchOutcome::Kind::crashed, "during " + context);
  note_reply();
  *answer = json::parse(line, nullptr, false);
  if (answer->is_discarded() || answer->value("nonce", std::string()) != nonce) {
    BatchOutcome dead = finish_dead(BatchOutcome::Kind::protocol_error, context);
    dead.detail = answer->is_discarded()
                      ? fmt::format("the worker's reply was not valid JSON (did the kernel write to the reply pipe?): {:.120}", line)
                      : fmt::format("a reply without this request's nonce (a forged report?): {:.120}", line);
    dead_ = dead;
    return dead;
  }
  const std::string word = answer->value("status", std::string());
  if (word == "forbidden_syscall" || word == "fault" || word == "device_error") {
    BatchOutcome dead = finish_dead(BatchOutcome::Kind::crashed, context);
    dead.detail = answer->value("reason", word);
    dead_ = dead;
    return dead;
  }
  // The window closes when the worker is verified stopped, not at the reply: whatever its threads do
  // between the reply and the stop is theirs to pay for (microseconds on a quiet machine, both sides).
  if (auto failed = freeze_idle("after " + context)) return *failed;
  const auto stop = std::chrono::steady_clock::now();
  busy_seconds_ += std::chrono::duration<double>(stop - start).count();
  out.parent_seconds = std::chrono::duration<double>(stop - start).count();
  return out;
}

// Nothing to do: exposing a batch's sets is part of its timed run request, so that no request runs
// in the worker outside a window the parent times (a kernel owns the worker's code, and any untimed
// request is time it could use).
// A target whose worker copies a batch's sets to its device (cuda) asks for it here: no kernel code
// runs in that request, only the worker's copies.
BatchOutcome WorkerClient::prepare(int first_set, int calls, std::chrono::milliseconds timeout) {
  if (dead_) return *dead_;
  if (!traits_.prepare_requests) return {};
  json answer;
  BatchOutcome out = request({{"op", "prepare"}, {"first_set", first_set}, {"calls", calls}}, timeout,
                             fmt::format("copying {} set(s) to the device", calls), &answer);
  if (out.ok() && !answer.value("ok", false)) {
    out.kind = BatchOutcome::Kind::protocol_error;
    out.detail = "the worker could not prepare the batch: " + answer.value("reason", std::string("?"));
  }
  return out;
}

BatchOutcome WorkerClient::run(int first_set, int calls, std::chrono::milliseconds timeout) {
  json answer;
  BatchOutcome out = request({{"op", "run"}, {"first_set", first_set}, {"calls", calls}}, timeout,
                             fmt::format("a batch of {} call(s)", calls), &answer);
  if (!out.ok()) return out;
  if (!answer.value("ok", false)) {
    out.kind = BatchOutcome::Kind::kernel_error;
    out.return_code = answer.value("return_code", -1);
    out.detail = fmt::format("ob_run returned {} on call {} of the batch", out.return_code, answer.value("call", -1));
    if (const std::string why = answer.value("reason", std::string()); !why.empty()) out.detail += " (" + why + ")";
    return out;
  }
  out.worker_seconds = answer.value("worker_ns", int64_t(0)) * 1e-9;
  if (traits_.device_timer) {
    out.device_seconds = answer.value("device_ns", int64_t(0)) * 1e-9;
    out.sm_clock_mhz = answer.value("sm_clock_mhz", 0.0);
    out.throttle_reasons = answer.value("throttle", uint64_t(0));
  }
  return out;
}

// One request, timed by the parent like every other (the window runs from the SIGCONT to the
// verified stop, and counts in busy_seconds_total): no set holds content that a later pair will time.
BatchOutcome WorkerClient::expose_all_sets(std::chrono::milliseconds timeout) {
  if (dead_) return *dead_;
  if (!traits_.hides_sets) return {};
  json answer;
  BatchOutcome out = request({{"op", "expose_all"}}, timeout, "exposing every input set for the timed pairs", &answer);
  if (out.ok() && !answer.value("ok", false)) {
    out.kind = BatchOutcome::Kind::protocol_error;
    out.detail = "the worker could not expose the input sets: " + answer.value("reason", std::string("?"));
  }
  return out;
}

int64_t WorkerClient::operation_count() {
  json answer;
  if (!request({{"op", "count"}}, std::chrono::seconds(10), "counting operations", &answer).ok()) return -1;
  return answer.value("operations", int64_t(-1));
}

std::string WorkerClient::output_log() const {
  if (log_fd_ < 0) return {};
  char buffer[4096];
  ssize_t n = pread(log_fd_, buffer, sizeof buffer, 0);
  if (n <= 0) return {};
  std::string text(buffer, size_t(n));
  off_t size = lseek(log_fd_, 0, SEEK_END);
  if (size > n) text += fmt::format("\n... ({} more bytes)", size - n);
  return text;
}

}  // namespace opbench::cpu
