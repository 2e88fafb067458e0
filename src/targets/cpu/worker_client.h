// The parent's side of one worker process: spawn it, hand it the arenas, ask for batches, and turn
// every way it can fail (crash, hang, garbage) into a BatchOutcome instead of an exception.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "targets/cpu/process_freezer.h"
#include "targets/cpu/shared_arena.h"
#include "targets/target.h"

namespace opbench::cpu {

// How a target's worker program differs from the cpu one. The process handling (pipes, nonces,
// freezing between requests, timeouts, death reports) is shared; these are the differences.
struct WorkerTraits {
  bool prepare_requests = false;     // send {"op":"prepare"} before every run (cuda: copies to the device)
  bool device_timer = false;         // run replies carry device_ns, the time of record
  bool hides_sets = true;            // the worker maps only the running batch's sets until {"op":"expose_all"}
  bool limit_address_space = true;   // RLIMIT_AS (the CUDA driver reserves far more than it uses)
  bool deny_exec_after_load = true;  // for candidates: no executable mappings once loaded
  bool namespaces = true;            // may run under bwrap (false: seccomp and limits only)
  bool pin_cpus = true;              // affinity set by the parent to `threads` CPUs
  int open_files = 64;               // RLIMIT_NOFILE
  std::vector<std::string> environment;  // NAME=VALUE set by the target itself (trusted), e.g. library paths
  std::vector<std::string> device_nodes; // bound into the sandbox (/dev/nvidia0, ...)
  std::vector<std::string> read_only;    // more paths visible in the sandbox (the driver's libraries)
  nlohmann::json load_fields = nlohmann::json::object();  // merged into the load request
  std::string sandbox_note;          // appended to the sandbox description
};

class WorkerClient final : public KernelRunner {
 public:
  ~WorkerClient() override;
  static LaunchOutcome start(const std::filesystem::path& worker_program, const std::filesystem::path& kernel,
                             SharedArena& inputs, SharedArena& outputs, const LaunchOptions& options,
                             const WorkerTraits& traits = {});

  RunnerCapabilities capabilities() const override {
    RunnerCapabilities c;
    c.idle_cpu_clock = true;
    c.operation_counter = true;
    c.freezes_when_idle = freeze_;
    c.cpu_time_accounting = has_cpu_clock_;
    c.device_timer = traits_.device_timer;
    return c;
  }
  DeviceDescription device() const override { return device_; }
  BatchOutcome prepare(int first_set, int calls, std::chrono::milliseconds timeout) override;
  BatchOutcome run(int first_set, int calls, std::chrono::milliseconds timeout) override;
  BatchOutcome expose_all_sets(std::chrono::milliseconds timeout) override;
  double cpu_seconds_since_reply() override;
  std::string output_log() const override;
  std::string describe_sandbox() const override { return sandbox_; }
  int64_t operation_count() override;
  double cpu_seconds_total() override;
  double busy_seconds_total() override { return busy_seconds_; }
  int cpus_allowed() const override { return cpus_allowed_; }

 private:
  WorkerClient() = default;
  // Reads one reply line, waiting at most `timeout` in blocking poll() (never spinning).
  enum class ReadStatus { line, eof, timeout };
  ReadStatus read_line(std::string* line, std::chrono::milliseconds timeout);
  bool send(const std::string& line);
  // Sends one request (a nonce added) and reads its reply. Any reply without the request's nonce,
  // or data nobody asked for, is a tampered report: protocol_error.
  BatchOutcome request(nlohmann::json message, std::chrono::milliseconds timeout, const std::string& context,
                       nlohmann::json* answer);
  void note_reply();
  // Stops the worker after a reply (every thread, verified in /proc). On failure the worker is ended
  // and the outcome says why: a worker that cannot be frozen cannot be trusted.
  std::optional<BatchOutcome> freeze_idle(const std::string& context);
  std::string who() const { return role_.empty() ? "the worker" : "the " + role_ + "'s worker"; }
  // Ends the worker (if still running) and describes how it ended.
  BatchOutcome finish_dead(BatchOutcome::Kind kind, const std::string& context);

  pid_t pid_ = -1;          // the process the parent started (bwrap, or the worker itself)
  clockid_t cpu_clock_ = -1; // the worker's CPU clock (found below bwrap), when known
  bool has_cpu_clock_ = false;
  double cpu_at_reply_ = 0;
  std::string sandbox_;
  bool in_bwrap_ = false;
  pid_t group_ = -1;         // the worker's process group, for cleaning up after it
  pid_t worker_pid_ = -1;    // the worker itself (below bwrap), as the parent's pid namespace sees it
  bool freeze_ = false;      // frozen whenever idle (the sandbox on)
  ProcessFreezer freezer_;
  double cpu_total_ = -1;    // last CPU reading, kept once the worker is gone
  double busy_seconds_ = 0;  // wall time of all requests, thawed
  int cpus_allowed_ = 0;
  std::string role_;         // candidate, baseline...: from the output arena's label
  int command_fd_ = -1, reply_fd_ = -1, log_fd_ = -1;
  std::string buffer_;
  std::optional<BatchOutcome> dead_;  // once the worker is gone every later batch reports this
  WorkerTraits traits_;
  DeviceDescription device_;
};

}  // namespace opbench::cpu
