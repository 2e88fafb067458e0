// The target seam: how kernels are built, where their tensors live and how they are launched and
// timed. The harness talks only to this interface; `cpu` implements it now and `cuda` will too.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "workload/spec.h"

namespace opbench {

struct BuildRequest {
  std::filesystem::path source;
  std::string kind;                 // reference, baseline, expert, candidate: for logs and cache names
  bool vendor_libraries = false;    // trusted implementations may link the vendor libraries (BLAS...)
  std::vector<std::pair<std::string, std::string>> defines;  // -DNAME=VALUE, e.g. tuning parameters
  std::vector<std::string> extra_flags;  // trusted tools only (the lint's operation counter)
  std::string isa;                  // instruction-set level (cpu: x86-64-v3, x86-64-v4, native); empty: the target's default
};

struct BuildOutcome {
  bool ok = false;
  std::filesystem::path artifact;   // the built shared object
  std::string log;                  // command line and compiler output
  std::string cache_key;
  std::string compiler;             // version line of the compiler used
  bool cached = false;
  double seconds = 0;               // compile time, 0 when served from the cache
  std::string isa;                  // the instruction-set level it was built at (empty: the target has none)
};

// N sets of the same list of tensors (all inputs of a call, or all outputs), owned by the parent
// and reachable by workers. The harness never dereferences this memory: it lives wherever the
// target keeps it (shared memory for cpu, device memory for cuda), and the harness moves bytes in
// and out through these calls only. Every tensor has a guard region after it; writes there are
// detected.
class BufferSet {
 public:
  virtual ~BufferSet() = default;
  virtual int sets() const = 0;
  virtual int tensors() const = 0;
  virtual size_t bytes(int tensor) const = 0;
  // Copies `bytes` (== bytes(tensor)) host bytes into / out of one tensor of one set.
  virtual void write(int set, int tensor, const void* host, size_t bytes) = 0;
  virtual void read(int set, int tensor, void* host, size_t bytes) const = 0;
  // Part of one tensor: `bytes` bytes at byte `offset` (offset + bytes <= bytes(tensor)), so large
  // tensors are generated and compared in chunks instead of whole host copies.
  virtual void write_part(int set, int tensor, size_t offset, const void* host, size_t bytes) = 0;
  virtual void read_part(int set, int tensor, size_t offset, void* host, size_t bytes) const = 0;
  // The tensor's bytes where the parent can read them in place (the cpu target's shared arena), so a
  // comparison needs no copy; nullptr where they live elsewhere (device memory): use read_part.
  virtual const std::byte* host_view(int, int) const { return nullptr; }
  // Fills every tensor of `set` with the poison pattern (fill_poison in core/poison.h): NaN in
  // float lanes, so an element a kernel skips fails the comparison.
  virtual void poison(int set) = 0;
  // A hash of every tensor of `set`: equal digests before and after a call mean untouched inputs.
  virtual uint64_t digest(int set) const = 0;
  // False when a kernel wrote into the canary bytes after a tensor of `set`; names the tensor.
  virtual bool canaries_intact(int set, std::string* damaged_tensor) const = 0;
  // Takes every tensor of `set` out of the host's caches (written back, then dropped), so that each
  // side of a pair starts from memory: the parent has just written the inputs and poisoned the
  // outputs, and without this the side that runs first would pay for fetching what the second finds
  // cached (an order effect of about 10% on 8p at the cpu size). Device memory has nothing to do.
  virtual void evict(int) {}
  // poison(set) then evict(set); a target may do both in one pass (the cpu arena's streaming stores).
  virtual void poison_and_evict(int set) {
    poison(set);
    evict(set);
  }
};

// The outcome of one batch of calls: `calls` consecutive calls of the kernel, call i on set
// (first_set + i) mod sets, timed as a whole by the parent's clock.
struct BatchOutcome {
  // untrusted: the runner could not verify its own guards (a worker that would not freeze).
  enum class Kind { ok, kernel_error, crashed, timed_out, protocol_error, untrusted };
  Kind kind = Kind::ok;
  double parent_seconds = 0;  // parent's monotonic clock, request sent to reply received
  double worker_seconds = 0;  // the worker's own clock around the calls: data, not the figure of record
  // A device timer's sum over the calls (cuda: CUDA events on the harness stream around each call),
  // -1 without one. Where a runner offers it (RunnerCapabilities::device_timer) it is the figure of
  // record, and the parent's clock is the cross-check (see record_seconds()).
  double device_seconds = -1;
  // Readings the device took during the batch (cuda: SM clock, throttle reasons); empty elsewhere.
  double sm_clock_mhz = 0;
  uint64_t throttle_reasons = 0;
  int return_code = 0;        // kernel_error: what ob_run returned
  int signal = 0;             // crashed: the signal that ended the worker
  std::string detail;
  bool ok() const { return kind == Kind::ok; }
  // The batch's time of record: the device timer where there is one, else the parent's clock.
  double record_seconds() const { return device_seconds >= 0 ? device_seconds : parent_seconds; }
};

// What a target's runner can do beyond running batches. The harness asks for these instead of
// assuming them, and says in the result which checks a target could not run.
struct RunnerCapabilities {
  bool idle_cpu_clock = false;      // cpu_seconds_since_reply() measures the idle worker
  bool operation_counter = false;   // operation_count() works for counting builds (the lint)
  bool freezes_when_idle = false;   // the worker cannot run between requests
  bool cpu_time_accounting = false; // cpu_seconds_total() measures the worker from outside
  // Batches carry device_seconds: the time of record is the device's timer, and the parent's clock
  // (which also holds the cache flush, the synchronisation and the copies back) cross-checks it.
  bool device_timer = false;
};

// Why a device ran below its clock, as bits numbered the way NVML numbers its clock-event reasons
// (the cuda target reports them); in words, "software power cap, hardware thermal slowdown".
inline std::string throttle_reason_words(uint64_t reasons) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {0x2, "application clock setting"}, {0x4, "software power cap"},        {0x8, "hardware slowdown"},
      {0x10, "sync boost"},               {0x20, "software thermal slowdown"}, {0x40, "hardware thermal slowdown"},
      {0x80, "power brake"},              {0x100, "display clock setting"}};
  std::string text;
  for (const auto& [bit, name] : kNames)
    if (reasons & bit) text += (text.empty() ? "" : ", ") + std::string(name);
  if (reasons & ~uint64_t(0x1FF)) text += (text.empty() ? "" : ", ") + std::string("other");
  return text;
}

// What a runner knows of the device it ran on (cuda); empty name on targets without one.
struct DeviceDescription {
  std::string name;                // "NVIDIA H200"
  std::string driver;              // the driver's CUDA version
  double sm_clock_max_mhz = 0;     // the device's maximum SM clock
  bool l2_flushed = false;         // L2 flushed before every timed call (cold), else warm
  size_t l2_bytes = 0;
};

class KernelRunner {
 public:
  virtual ~KernelRunner() = default;
  virtual RunnerCapabilities capabilities() const = 0;
  // Kept for the harness's call sites and does nothing on the cpu target: no request may run kernel
  // code outside a window the parent times, so run() exposes the batch's sets inside its own timed
  // request (until expose_all_sets()).
  // `timeout` bounds the request like a batch's: the worker is hostile once the kernel is loaded, and
  // no request may hold the harness longer than the options allow (--timeout).
  virtual BatchOutcome prepare(int first_set, int calls, std::chrono::milliseconds timeout) = 0;
  virtual BatchOutcome run(int first_set, int calls, std::chrono::milliseconds timeout) = 0;
  // Ends the hiding of other sets for the rest of the evaluation, in one request the parent times.
  // Before it (correctness trials) a cpu batch's run() makes only its own sets accessible, so a kernel
  // that reads another set by mistake faults with the set named. The timed pairs cannot afford that:
  // re-protecting the sets a batch switches costs the worker about 28 us per MiB inside the timed
  // window (about 30 ms a batch at 6p's cpu size), and a hostile kernel can re-open them
  // itself anyway; fresh content before every pair is what makes reading ahead worthless there.
  virtual BatchOutcome expose_all_sets(std::chrono::milliseconds /*timeout*/) { return {}; }
  // CPU seconds the worker used since it sent its last reply (while it should have been idle), or -1
  // when that cannot be measured. A kernel that leaves work running after ob_run returns shows here.
  virtual double cpu_seconds_since_reply() = 0;
  virtual std::string output_log() const = 0;  // what the kernel printed, truncated
  virtual std::string describe_sandbox() const = 0;
  // Floating-point operations counted so far by a kernel built with the lint's counter
  // (ob_count_operations); -1 when the kernel has no counter.
  virtual int64_t operation_count() = 0;
  // CPU seconds the worker has used in all (load, every request, idle), measured from outside it;
  // -1 without that capability.
  virtual double cpu_seconds_total() { return -1; }
  // Wall seconds the worker spent inside requests (thawed), as the parent measured them; with
  // cpu_seconds_total() and the thread count, the CPU it used beyond threads x wall (class 4).
  virtual double busy_seconds_total() { return -1; }
  // CPUs the worker may run on (its affinity, set by the parent, unchangeable by the kernel); 0 when
  // not enforced.
  virtual int cpus_allowed() const { return 0; }
  // The device the runner's kernel runs on (name empty: none, the host CPU).
  virtual DeviceDescription device() const { return {}; }
};

struct LaunchOptions {
  int threads = 1;
  std::chrono::milliseconds load_timeout{30000};
  bool sandbox = true;              // false: no namespaces, no seccomp, no limits (ablation only)
  uint64_t memory_limit_bytes = 0;  // address-space limit of the worker beyond its arenas; 0: default
  uint64_t cpu_limit_seconds = 0;   // CPU time of the worker, all threads; 0: default
  bool warm_l2 = false;             // cuda: keep L2 warm between timed calls (default: flushed, cold)
  std::string isa;                  // the level the libraries run at; set by the target from the kernel's build
};

struct LaunchOutcome {
  std::unique_ptr<KernelRunner> runner;  // null on failure
  // untrusted: the worker loaded but its guards could not be verified (it would not freeze).
  enum class Failure { none, rejected, crashed, timed_out, untrusted } failure = Failure::none;
  std::string reason;
};

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string name() const = 0;
  virtual DType float_dtype() const = 0;
  // How implementation files of this target end: baseline.cpp (cpu), baseline.cu (cuda).
  virtual std::string source_extension() const { return ".cpp"; }
  virtual BuildOutcome build(const BuildRequest& request) = 0;
  virtual std::unique_ptr<BufferSet> allocate(const std::vector<TensorInstance>& tensors, int sets,
                                              const std::string& label) = 0;
  // Checks a built untrusted kernel before anything runs it: empty when it may run, else why it is
  // rejected (a forbidden library or symbol).
  virtual std::string vet(const BuildOutcome& kernel) = 0;
  // Starts a worker that loads `kernel` and can run it on `inputs` writing `outputs`.
  virtual LaunchOutcome launch(const BuildOutcome& kernel, BufferSet& inputs, BufferSet& outputs,
                               const LaunchOptions& options) = 0;
};

}  // namespace opbench
