// The parent's side of one worker process: spawn it, hand it the arenas, ask for batches, and turn
// every way it can fail (crash, hang, garbage) into a BatchOutcome instead of an exception.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "target/cpu/shared_arena.h"
#include "target/target.h"

namespace opbench::cpu {

class WorkerClient final : public KernelRunner {
 public:
  ~WorkerClient() override;
  static LaunchOutcome start(const std::filesystem::path& worker_program, const std::filesystem::path& kernel,
                             SharedArena& inputs, SharedArena& outputs, const LaunchOptions& options);

  BatchOutcome run(int first_set, int calls, std::chrono::milliseconds timeout) override;
  std::string output_log() const override;
  std::string describe_sandbox() const override { return "none (process isolation only)"; }
  int64_t operation_count() override;

 private:
  WorkerClient() = default;
  // Reads one reply line, waiting at most `timeout` in blocking poll() (never spinning).
  enum class ReadStatus { line, eof, timeout };
  ReadStatus read_line(std::string* line, std::chrono::milliseconds timeout);
  bool send(const std::string& line);
  // Ends the worker (if still running) and describes how it ended.
  BatchOutcome finish_dead(BatchOutcome::Kind kind, const std::string& context);

  pid_t pid_ = -1;
  int command_fd_ = -1, reply_fd_ = -1, log_fd_ = -1;
  std::string buffer_;
  std::optional<BatchOutcome> dead_;  // once the worker is gone every later batch reports this
};

}  // namespace opbench::cpu
