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

#include "targets/cpu/shared_arena.h"
#include "targets/target.h"

namespace opbench::cpu {

class WorkerClient final : public KernelRunner {
 public:
  ~WorkerClient() override;
  static LaunchOutcome start(const std::filesystem::path& worker_program, const std::filesystem::path& kernel,
                             SharedArena& inputs, SharedArena& outputs, const LaunchOptions& options);

  RunnerCapabilities capabilities() const override {
    RunnerCapabilities c;
    c.idle_cpu_clock = true;
    c.operation_counter = true;
    return c;
  }
  BatchOutcome prepare(int first_set, int calls) override;
  BatchOutcome run(int first_set, int calls, std::chrono::milliseconds timeout) override;
  double cpu_seconds_since_reply() override;
  std::string output_log() const override;
  std::string describe_sandbox() const override { return sandbox_; }
  int64_t operation_count() override;

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
  // Ends the worker (if still running) and describes how it ended.
  BatchOutcome finish_dead(BatchOutcome::Kind kind, const std::string& context);

  pid_t pid_ = -1;          // the process the parent started (bwrap, or the worker itself)
  clockid_t cpu_clock_ = -1; // the worker's CPU clock (found below bwrap), when known
  bool has_cpu_clock_ = false;
  double cpu_at_reply_ = 0;
  std::string sandbox_;
  bool in_bwrap_ = false;
  pid_t group_ = -1;         // the worker's process group, for cleaning up after it
  int command_fd_ = -1, reply_fd_ = -1, log_fd_ = -1;
  std::string buffer_;
  std::optional<BatchOutcome> dead_;  // once the worker is gone every later batch reports this
};

}  // namespace opbench::cpu
