// A target without a compiler or processes, for driving the evaluation session's logic in unit
// tests: buffers are host vectors with canaries, a "kernel" is a behaviour chosen by the name of its
// source file, and time is virtual (a batch advances a shared clock by its simulated duration), so
// slow, fast and noisy kernels take no real time.
#pragma once

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/poison.h"
#include "targets/target.h"

namespace opbench::fake {

inline constexpr size_t kCanary = 64;

class FakeBuffers final : public BufferSet {
 public:
  FakeBuffers(const std::vector<TensorInstance>& tensors, int sets) : tensors_(tensors), sets_(sets) {
    for (int s = 0; s < sets; ++s)
      for (const auto& t : tensors) data_.emplace_back(t.bytes() + kCanary, std::byte{0xCB});
  }
  int sets() const override { return sets_; }
  int tensors() const override { return int(tensors_.size()); }
  size_t bytes(int t) const override { return tensors_[size_t(t)].bytes(); }
  void write(int set, int t, const void* host, size_t n) override { std::memcpy(at(set, t), host, n); }
  void read(int set, int t, void* host, size_t n) const override { std::memcpy(host, slot(set, t).data(), n); }
  void write_part(int set, int t, size_t offset, const void* host, size_t n) override { std::memcpy(at(set, t) + offset, host, n); }
  void read_part(int set, int t, size_t offset, void* host, size_t n) const override { std::memcpy(host, slot(set, t).data() + offset, n); }
  void poison(int set) override {
    for (int t = 0; t < tensors(); ++t) fill_poison(at(set, t), bytes(t));
  }
  uint64_t digest(int set) const override {
    uint64_t h = 0;
    for (int t = 0; t < tensors(); ++t) h = h * 31 + xxh3_64(slot(set, t).data(), bytes(t));
    return h;
  }
  bool canaries_intact(int set, std::string* damaged) const override {
    for (int t = 0; t < tensors(); ++t)
      for (size_t i = bytes(t); i < bytes(t) + kCanary; ++i)
        if (slot(set, t)[i] != std::byte{0xCB}) {
          if (damaged) *damaged = tensors_[size_t(t)].name;
          return false;
        }
    return true;
  }
  float* floats(int set, int t) { return reinterpret_cast<float*>(at(set, t)); }

 private:
  std::byte* at(int set, int t) { return data_[size_t(set) * tensors_.size() + size_t(t)].data(); }
  const std::vector<std::byte>& slot(int set, int t) const { return data_[size_t(set) * tensors_.size() + size_t(t)]; }
  std::vector<TensorInstance> tensors_;
  int sets_;
  std::vector<std::vector<std::byte>> data_;
};

// What a fake kernel does, from the stem of its source file name: "<behaviour>[-<microseconds>]",
// e.g. "correct-100", "slow-300", "wrong", "crash", "hang", "noisy-100", "cache-100", "overrun",
// "modify-inputs", "clock-lies-100", "expose-crash-100" (dies when asked to expose every set),
// "stalled-100" (honest, on a machine that holds up every batch with content it has not run before:
// 3x the calls' time more on the parent's clock, none on the CPU clock), "jolted-100" (the same
// stalls, at random on 60% of those batches), "cache-jolted-100" (the cache kernel, with its batches
// of seen content held up at random, 8x their time, on half of them: what a busy core does to a
// part that short).
struct Behaviour {
  std::string kind = "correct";
  double call_s = 100e-6;
  static Behaviour from(const std::filesystem::path& source) {
    Behaviour b;
    const std::string stem = source.stem().string();
    const auto dash = stem.rfind('-');
    if (dash != std::string::npos && std::isdigit(static_cast<unsigned char>(stem[dash + 1]))) {
      b.kind = stem.substr(0, dash);
      b.call_s = std::stod(stem.substr(dash + 1)) * 1e-6;
    } else {
      b.kind = stem;
    }
    return b;
  }
};

struct VirtualClock {
  double now = 0;
  // A loaded machine: the parent wakes this late after every batch, whichever side ran it (its clock
  // sees it, the worker's does not).
  double batch_overhead_s = 0;
  // The runners measure the worker's CPU time from outside (cpu_seconds_total), as the cpu target's do.
  bool cpu_clock = false;
  // A machine on which content a runner has not run before costs more, whichever kernel runs: this
  // much more a call, on both clocks (page and cache-line misses on the same bytes)...
  double unseen_call_cost_s = 0;
  // ...or a wait of this many times the batch's time, on the wall clock only (a core taken away
  // whenever new content comes in).
  double unseen_stall = 0;
};

// y = 2x + 1 on the single input and output of the fake workload.
class FakeRunner final : public KernelRunner {
 public:
  FakeRunner(Behaviour b, std::string name, FakeBuffers& in, FakeBuffers& out, VirtualClock& clock, std::vector<std::string>& events)
      : b_(b), name_(std::move(name)), in_(in), out_(out), clock_(clock), events_(events), noise_(7) {}
  RunnerCapabilities capabilities() const override {
    RunnerCapabilities c;
    c.cpu_time_accounting = clock_.cpu_clock;
    return c;
  }
  double cpu_seconds_total() override { return clock_.cpu_clock ? cpu_s_ : -1; }
  BatchOutcome prepare(int, int, std::chrono::milliseconds) override { return {}; }
  static BatchOutcome crashed(const std::string& detail) {
    BatchOutcome o;
    o.kind = BatchOutcome::Kind::crashed;
    o.signal = 11;
    o.detail = detail;
    return o;
  }
  BatchOutcome expose_all_sets(std::chrono::milliseconds timeout) override {
    events_.push_back(name_ + ":expose");
    if (b_.kind == "expose-crash") return crashed("the kernel crashed (signal 11) while the sets were exposed");
    if (b_.kind == "expose-hang") {  // the kernel holds the worker inside the request: it runs into the limit given
      BatchOutcome o;
      o.kind = BatchOutcome::Kind::timed_out;
      o.detail = fmt::format("no answer within the {:.1f} s limit for exposing the sets", timeout.count() / 1000.0);
      return o;
    }
    return {};
  }
  BatchOutcome run(int first, int calls, std::chrono::milliseconds) override {
    events_.push_back(name_ + ":run");
    BatchOutcome o;
    if (b_.kind == "crash") return crashed("the kernel crashed (signal 11)");
    if (b_.kind == "hang") {
      o.kind = BatchOutcome::Kind::timed_out;
      o.detail = "a call took longer than the timeout";
      return o;
    }
    double seconds = 0;
    bool unseen = false;
    for (int i = 0; i < calls; ++i) {
      const int s = (first + i) % in_.sets();
      const size_t n = in_.bytes(0) / 4;
      const float* x = in_.floats(s, 0);
      float* y = out_.floats(s, 0);
      const uint64_t content = in_.digest(s);
      unseen |= !seen_.count(content);
      double call = b_.call_s + (seen_.count(content) ? 0 : clock_.unseen_call_cost_s);
      if (b_.kind == "cache" || b_.kind == "cache-jolted") {
        // Remembers what it has seen: ten times faster on inputs it has run before.
        if (seen_.count(content)) call /= 10;
      }
      seen_.insert(content);
      if (b_.kind == "noisy") call *= std::exp(std::normal_distribution<double>(0, 0.3)(noise_));
      for (size_t k = 0; k < n; ++k) y[k] = b_.kind == "wrong" ? 2 * x[k] + 1.5f : 2 * x[k] + 1;
      if (b_.kind == "overrun") y[n] = 0;  // one element past the end: into the canary
      if (b_.kind == "modify-inputs") const_cast<float*>(x)[0] += 1;
      seconds += call;
    }
    // Time the worker spent waiting for a core: on the wall clocks, not on the CPU clock.
    double waiting = 0;
    if (b_.kind == "stalled" && unseen) waiting = 3 * seconds;
    if (unseen) waiting += clock_.unseen_stall * seconds;
    const double draw = std::uniform_real_distribution<double>(0, 1)(jolts_);
    if (b_.kind == "jolted" && unseen && draw < 0.6) waiting = 3 * seconds;
    if (b_.kind == "cache-jolted" && !unseen && draw < 0.5) waiting = 8 * seconds;
    // Thread use (one thread given): "threads" keeps two CPUs busy in every batch; "bimodal" is
    // honest but every third batch takes 8x as long, all of it busy (a loaded machine's slow batches);
    // "threads-sleepy" uses two CPUs, and in every third batch sleeps 20x its time to buy allowance.
    double cpu = seconds;
    ++batches_;
    if (b_.kind == "threads") cpu = 2 * seconds;
    if (b_.kind == "bimodal" && batches_ % 3 == 0) seconds *= 8, cpu = seconds;
    if (b_.kind == "threads-sleepy") {
      if (batches_ % 3 == 0) waiting = 20 * seconds, cpu = 0;
      else cpu = 2 * seconds;
    }
    cpu_s_ += cpu;
    clock_.now += seconds + waiting + clock_.batch_overhead_s;
    o.parent_seconds = seconds + waiting + clock_.batch_overhead_s;
    o.worker_seconds = (b_.kind == "clock-lies" ? seconds / 2 : seconds) + waiting;
    calls_ += calls;
    return o;
  }
  double cpu_seconds_since_reply() override { return -1; }
  std::string output_log() const override { return "fake kernel " + b_.kind; }
  std::string describe_sandbox() const override { return "none (fake target)"; }
  int64_t operation_count() override { return -1; }
  long calls() const { return calls_; }

 private:
  Behaviour b_;
  std::string name_;
  FakeBuffers& in_;
  FakeBuffers& out_;
  VirtualClock& clock_;
  std::vector<std::string>& events_;
  std::mt19937_64 noise_, jolts_{11};
  std::set<uint64_t> seen_;
  long calls_ = 0, batches_ = 0;
  double cpu_s_ = 0;
};

class FakeTarget final : public Target {
 public:
  VirtualClock clock;
  std::vector<std::string> events;  // "<kernel stem>:run" per batch, "<kernel stem>:expose", in order
  std::string name() const override { return "fake"; }
  DType float_dtype() const override { return DType::f32; }
  BuildOutcome build(const BuildRequest& request) override {
    BuildOutcome b;
    b.ok = request.source.stem() != "compile-error";
    b.artifact = request.source;
    b.log = b.ok ? "fake build" : "kernel.cpp:3:1: error: expected ';' before '}' token";
    b.compiler = "fake 1.0";
    return b;
  }
  std::unique_ptr<BufferSet> allocate(const std::vector<TensorInstance>& tensors, int sets, const std::string&) override {
    return std::make_unique<FakeBuffers>(tensors, sets);
  }
  std::string vet(const BuildOutcome& kernel) override {
    return kernel.artifact.stem() == "rejected" ? "the kernel imports dlopen, which kernels may not use" : "";
  }
  LaunchOutcome launch(const BuildOutcome& kernel, BufferSet& inputs, BufferSet& outputs, const LaunchOptions&) override {
    LaunchOutcome o;
    o.runner = std::make_unique<FakeRunner>(Behaviour::from(kernel.artifact), kernel.artifact.stem().string(),
                                            static_cast<FakeBuffers&>(inputs), static_cast<FakeBuffers&>(outputs), clock, events);
    return o;
  }
};

}  // namespace opbench::fake
