// opbench-cuda-worker: loads one kernel built for the cuda target and runs it on device copies of the
// parent's shared-memory tensors. The parent's side is the same WorkerClient as on the cpu target
// (targets/cpu/worker_client.h): the same pipes, nonces, freezing between requests and death reports.
//
// Per batch the parent asks twice:
//   prepare  copies the batch's input sets and their (poisoned) output sets from the staging arenas to
//            device memory, fills the canaries after every device tensor and takes a device digest of
//            the inputs. No kernel code runs in it.
//   run      for each call: flush L2 (unless warm), wait, then CUDA events around ob_run on the harness
//            stream and a device-wide synchronisation, so work a kernel left on other streams is in the
//            worker's host clock; then inputs checked (digest, canaries), outputs and output canaries
//            copied back to staging, where the parent reads and checks them.
// Any CUDA error after a call means the context is gone (sticky errors): the worker says which and
// exits; the next evaluation gets a fresh worker.
#include <dlfcn.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include <opbench/kernel.h>

#include "targets/cpu/worker_confine.h"
#include "targets/cpu/worker_protocol.h"
#include "targets/cuda/device_checks.cuh"
#include "targets/cuda/nvml_clocks.h"

using nlohmann::json;
using namespace opbench::cpu;
using namespace opbench::cuda;

namespace {

using AbiVersionFn = int32_t (*)();
using WorkspaceFn = uint64_t (*)(const ob_call*);
using RunFn = int32_t (*)(const ob_call*);

constexpr size_t kCanaryBytes = 256;      // after every device tensor
constexpr unsigned char kCanary = 0xCB;   // the staging arenas' canary byte too (shared_arena.h)

char g_nonce[64] = "";

void write_all(const std::string& line) {
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(kReplyFd, p, left);
    if (n <= 0) _exit(3);
    p += n;
    left -= size_t(n);
  }
}

void reply(json message) {
  message["nonce"] = std::string(g_nonce);
  write_all(message.dump() + "\n");
}

[[noreturn]] void reject(const std::string& reason) {
  reply({{"ok", false}, {"status", "rejected"}, {"reason", reason}});
  _exit(0);
}

[[noreturn]] void device_error(const std::string& context, cudaError_t e) {
  reply({{"ok", false},
         {"status", "device_error"},
         {"reason", std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") " + context +
                        "; the CUDA context is lost and the worker ends"}});
  _exit(0);
}

#define WORKER_CUDA(expr, context)              \
  do {                                          \
    const cudaError_t e_ = (expr);              \
    if (e_ != cudaSuccess) device_error(context, e_); \
  } while (0)

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

// One tensor of one set: where it lives in staging (parent's shared memory) and on the device.
struct Tensor {
  std::byte* staging = nullptr;
  size_t bytes = 0;
  std::byte* staging_canary = nullptr;  // the staging canary bytes after it
  size_t staging_canary_bytes = 0;
  std::byte* device = nullptr;          // bytes, then kCanaryBytes of canary
  ob_tensor abi{};
};

struct Set {
  std::vector<Tensor> inputs, outputs;
  std::vector<ob_tensor> abi_inputs, abi_outputs;
  ob_call call{};
  unsigned long long* digest = nullptr;  // device word for the input digest
  unsigned long long digest_before = 0;
};

std::vector<Tensor> tensors_of(const json& list, const std::vector<std::byte*>& arenas) {
  std::vector<Tensor> out;
  for (const auto& t : list) {
    Tensor tensor;
    tensor.staging = arenas.at(t.at("arena").get<size_t>()) + t.at("offset").get<size_t>();
    tensor.bytes = t.at("bytes").get<size_t>();
    tensor.staging_canary = tensor.staging + tensor.bytes;
    tensor.staging_canary_bytes = std::min(kCanaryBytes, t.value("canary_bytes", size_t(64)));
    tensor.abi.dtype = t.at("dtype").get<int32_t>();
    const auto& shape = t.at("shape");
    tensor.abi.rank = int32_t(shape.size());
    for (size_t i = 0; i < shape.size() && i < OB_MAX_RANK; ++i) tensor.abi.shape[i] = shape[i].get<int64_t>();
    void* device = nullptr;
    WORKER_CUDA(cudaMalloc(&device, round_up(tensor.bytes, 256) + kCanaryBytes), "allocating a device tensor");
    tensor.device = static_cast<std::byte*>(device);
    tensor.abi.data = tensor.device;
    out.push_back(tensor);
  }
  return out;
}

bool canary_intact(const Tensor& t, cudaStream_t stream, std::vector<unsigned char>& scratch) {
  scratch.assign(kCanaryBytes, 0);
  WORKER_CUDA(cudaMemcpyAsync(scratch.data(), t.device + t.bytes, kCanaryBytes, cudaMemcpyDeviceToHost, stream), "reading a canary");
  WORKER_CUDA(cudaStreamSynchronize(stream), "reading a canary");
  return std::all_of(scratch.begin(), scratch.end(), [](unsigned char c) { return c == kCanary; });
}

unsigned long long input_digest(Set& set, cudaStream_t stream) {
  WORKER_CUDA(cudaMemsetAsync(set.digest, 0, sizeof(unsigned long long), stream), "digesting inputs");
  for (const Tensor& t : set.inputs) WORKER_CUDA(launch_digest(t.device, t.bytes, set.digest, stream), "digesting inputs");
  unsigned long long value = 0;
  WORKER_CUDA(cudaMemcpyAsync(&value, set.digest, sizeof value, cudaMemcpyDeviceToHost, stream), "digesting inputs");
  WORKER_CUDA(cudaStreamSynchronize(stream), "digesting inputs");
  return value;
}

}  // namespace

int main() {
  FILE* commands = fdopen(kCommandFd, "r");
  if (!commands) return 2;
  char* line = nullptr;
  size_t capacity = 0;
  if (getline(&line, &capacity, commands) <= 0) return 2;
  json load = json::parse(line);
  std::snprintf(g_nonce, sizeof g_nonce, "%s", load.value("nonce", std::string()).c_str());

  // The staging arenas: inputs through a read-only descriptor, outputs read-write.
  std::vector<std::byte*> arenas;
  std::vector<size_t> arena_bytes;
  int index = 0;
  for (const auto& a : load.at("arenas")) {
    const size_t bytes = a.at("bytes").get<size_t>();
    const bool writable = a.value("writable", true);
    void* p = mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED | MAP_POPULATE, kFirstArenaFd + index, 0);
    if (p == MAP_FAILED) {
      reply({{"ok", false}, {"status", "error"}, {"reason", std::string("mmap failed: ") + strerror(errno)}});
      return 2;
    }
    close(kFirstArenaFd + index);
    arenas.push_back(static_cast<std::byte*>(p));
    arena_bytes.push_back(bytes);
    ++index;
  }

  // The CUDA context, the harness stream, the device tensors and the flush buffer come first, before
  // confinement: the driver opens its device files and starts its threads here.
  WORKER_CUDA(cudaSetDevice(0), "selecting device 0");
  WORKER_CUDA(cudaFree(nullptr), "creating the CUDA context");
  cudaDeviceProp prop{};
  WORKER_CUDA(cudaGetDeviceProperties(&prop, 0), "reading the device's properties");
  char pci[32] = {};
  cudaDeviceGetPCIBusId(pci, sizeof pci, 0);
  int driver_version = 0;
  cudaDriverGetVersion(&driver_version);
  const NvmlClocks clocks(pci);
  cudaStream_t stream = nullptr;
  WORKER_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating the harness stream");
  // Pinned staging makes the copies several times faster; where the driver refuses (a read-only
  // mapping on an older driver) the copies stay pageable and only slower.
  for (size_t i = 0; i < arenas.size(); ++i)
    if (cudaHostRegister(arenas[i], arena_bytes[i], i == 0 ? cudaHostRegisterReadOnly : cudaHostRegisterDefault) != cudaSuccess)
      (void)cudaGetLastError();

  std::vector<Set> sets;
  const auto& input_sets = load.at("inputs");
  const auto& output_sets = load.at("outputs");
  for (size_t s = 0; s < input_sets.size(); ++s) {
    Set set;
    set.inputs = tensors_of(input_sets[s], arenas);
    set.outputs = tensors_of(output_sets[s], arenas);
    for (const Tensor& t : set.inputs) set.abi_inputs.push_back(t.abi);
    for (const Tensor& t : set.outputs) set.abi_outputs.push_back(t.abi);
    void* digest = nullptr;
    WORKER_CUDA(cudaMalloc(&digest, sizeof(unsigned long long)), "allocating a digest word");
    set.digest = static_cast<unsigned long long*>(digest);
    sets.push_back(std::move(set));
  }
  const bool flush = load.value("l2_flush", true);
  // Twice the L2: every line of the last call's data is evicted.
  const size_t flush_bytes = round_up(size_t(std::max(prop.l2CacheSize, 1 << 20)) * 2, 4096);
  void* flush_buffer = nullptr;
  if (flush) WORKER_CUDA(cudaMalloc(&flush_buffer, flush_bytes), "allocating the L2 flush buffer");
  std::vector<cudaEvent_t> start_events(64), stop_events(64);
  for (size_t i = 0; i < start_events.size(); ++i) {
    WORKER_CUDA(cudaEventCreate(&start_events[i]), "creating events");
    WORKER_CUDA(cudaEventCreate(&stop_events[i]), "creating events");
  }
  WORKER_CUDA(cudaDeviceSynchronize(), "after setting up");

  std::string confine_error;
  if (load.contains("confine")) {
    const auto& c = load.at("confine");
    ConfineLimits limits;
    limits.address_space_bytes = 0;  // the driver reserves far more address space than it uses
    limits.cpu_seconds = c.value("cpu_seconds", uint64_t(0));
    limits.open_files = c.value("open_files", uint64_t(1024));
    limits.deny_file_writes = c.value("deny_file_writes", false);
    confine_error = confine_worker(limits, kReplyFd, g_nonce);
  }

  const std::string kernel_path = load.at("kernel").get<std::string>();
  void* handle = dlopen(kernel_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) reject(std::string("cannot load the kernel: ") + dlerror());
  auto abi_version = reinterpret_cast<AbiVersionFn>(dlsym(handle, "ob_abi_version"));
  auto run = reinterpret_cast<RunFn>(dlsym(handle, "ob_run"));
  auto workspace_bytes = reinterpret_cast<WorkspaceFn>(dlsym(handle, "ob_workspace_bytes"));
  if (!abi_version) reject("the kernel does not export ob_abi_version (use OB_DEFINE_ABI_VERSION())");
  if (!run) reject("the kernel does not export ob_run (declare it extern \"C\")");
  if (int32_t v = abi_version(); v != OB_ABI_VERSION)
    reject("the kernel was written for ABI version " + std::to_string(v) + ", this harness speaks version " + std::to_string(OB_ABI_VERSION));

  uint64_t workspace_size = 0;
  for (Set& set : sets) {
    ob_call& c = set.call;
    c.inputs = set.abi_inputs.data();
    c.num_inputs = int32_t(set.abi_inputs.size());
    c.outputs = set.abi_outputs.data();
    c.num_outputs = int32_t(set.abi_outputs.size());
    c.num_threads = 1;
    c.stream = stream;
    if (workspace_bytes) workspace_size = std::max(workspace_size, workspace_bytes(&c));
  }
  if (workspace_size > prop.totalGlobalMem)
    reject("ob_workspace_bytes asked for " + std::to_string(workspace_size) + " bytes of workspace, more than the device's " +
           std::to_string(prop.totalGlobalMem) + " (an overflowing size?)");
  void* workspace = nullptr;
  if (workspace_size > 0) {
    if (cudaMalloc(&workspace, workspace_size) != cudaSuccess) {
      (void)cudaGetLastError();
      reject("the kernel asked for " + std::to_string(workspace_size) + " bytes of device workspace, which could not be allocated");
    }
    WORKER_CUDA(cudaMemset(workspace, 0, workspace_size), "clearing the workspace");
  }
  for (Set& set : sets) {
    set.call.workspace = workspace;
    set.call.workspace_bytes = workspace_size;
  }
  json loaded = {{"ok", true},
                 {"workspace_bytes", workspace_size},
                 {"device",
                  {{"name", prop.name},
                   {"driver", std::to_string(driver_version / 1000) + "." + std::to_string((driver_version % 1000) / 10)},
                   {"pci", pci},
                   {"l2_bytes", prop.l2CacheSize},
                   {"sm_clock_max_mhz", clocks.sm_clock_max_mhz()},
                   {"clocks", clocks.available() ? std::string("NVML") : clocks.why_not()}}},
                 {"l2_flush", flush}};
  if (!confine_error.empty()) loaded["confine_error"] = confine_error;
  reply(loaded);

  std::vector<unsigned char> scratch;
  while (getline(&line, &capacity, commands) > 0) {
    json request = json::parse(line);
    std::snprintf(g_nonce, sizeof g_nonce, "%s", request.value("nonce", std::string()).c_str());
    const std::string op = request.at("op").get<std::string>();
    if (op == "quit") break;
    if (op == "count") {
      reply({{"ok", false}, {"operations", -1}});
      continue;
    }
    if (op != "prepare" && op != "run") {
      reply({{"ok", false}, {"status", "error"}, {"reason", "unknown op " + op}});
      continue;
    }
    const int64_t first = request.at("first_set").get<int64_t>();
    const int64_t count = request.at("calls").get<int64_t>();
    const int64_t nsets = int64_t(sets.size());
    if (op == "prepare") {
      for (int64_t i = 0; i < std::min(count, nsets); ++i) {
        Set& set = sets[size_t((first + i) % nsets)];
        for (std::vector<Tensor>* list : {&set.inputs, &set.outputs})
          for (Tensor& x : *list) {
            WORKER_CUDA(cudaMemcpyAsync(x.device, x.staging, x.bytes, cudaMemcpyHostToDevice, stream), "copying a set to the device");
            WORKER_CUDA(cudaMemsetAsync(x.device + x.bytes, kCanary, kCanaryBytes, stream), "filling canaries");
          }
        set.digest_before = input_digest(set, stream);
      }
      WORKER_CUDA(cudaStreamSynchronize(stream), "copying sets to the device");
      reply({{"ok", true}});
      continue;
    }
    // run
    int32_t rc = 0;
    int64_t failed_call = -1, host_ns = 0;
    double device_ms = 0;
    for (int64_t i = 0; i < count; ++i) {
      Set& set = sets[size_t((first + i) % nsets)];
      if (flush) WORKER_CUDA(flush_l2(flush_buffer, flush_bytes, int(i), stream), "flushing L2");
      WORKER_CUDA(cudaStreamSynchronize(stream), "before a call");
      const size_t e = size_t(i) % start_events.size();
      const int64_t t0 = now_ns();
      WORKER_CUDA(cudaEventRecord(start_events[e], stream), "recording an event");
      rc = run(&set.call);
      const cudaError_t launch = cudaGetLastError();
      WORKER_CUDA(cudaEventRecord(stop_events[e], stream), "after the kernel's call " + std::to_string(i));
      const cudaError_t done = cudaDeviceSynchronize();
      host_ns += now_ns() - t0;
      if (launch != cudaSuccess) device_error("from the kernel's launch in call " + std::to_string(i), launch);
      if (done != cudaSuccess) device_error("while the kernel's call " + std::to_string(i) + " ran", done);
      float ms = 0;
      WORKER_CUDA(cudaEventElapsedTime(&ms, start_events[e], stop_events[e]), "reading the events");
      device_ms += ms;
      if (rc != 0) {
        failed_call = i;
        break;
      }
    }
    const unsigned sm_clock = clocks.sm_clock_mhz();
    const uint64_t throttle = clocks.throttle_reasons();
    std::fflush(stdout);
    if (rc != 0) {
      std::string reason;
      if (rc >= 1000 && rc < 2000) reason = std::string("a CUDA call in the kernel failed: ") + cudaGetErrorName(cudaError_t(rc - 1000));
      else if (rc >= 2000 && rc < 3000) reason = "a cuBLAS call in the kernel failed with status " + std::to_string(rc - 2000);
      reply({{"ok", false}, {"return_code", rc}, {"call", failed_call}, {"reason", reason}});
      continue;
    }
    // Outside the timed calls: the inputs untouched, nothing written past a tensor, outputs home.
    std::string fault;
    for (int64_t i = 0; i < std::min(count, nsets) && fault.empty(); ++i) {
      Set& set = sets[size_t((first + i) % nsets)];
      for (size_t t = 0; t < set.inputs.size() && fault.empty(); ++t)
        if (!canary_intact(set.inputs[t], stream, scratch)) fault = "the kernel wrote past the end of input " + std::to_string(t);
      if (fault.empty() && input_digest(set, stream) != set.digest_before) fault = "the kernel wrote to its inputs, which are read-only";
      for (Tensor& x : set.outputs) {
        WORKER_CUDA(cudaMemcpyAsync(x.staging, x.device, x.bytes, cudaMemcpyDeviceToHost, stream), "copying outputs back");
        WORKER_CUDA(cudaMemcpyAsync(x.staging_canary, x.device + x.bytes, x.staging_canary_bytes, cudaMemcpyDeviceToHost, stream),
                    "copying canaries back");
      }
    }
    WORKER_CUDA(cudaStreamSynchronize(stream), "copying outputs back");
    if (!fault.empty()) {
      reply({{"ok", false}, {"status", "fault"}, {"reason", fault}});
      _exit(0);
    }
    reply({{"ok", true}, {"worker_ns", host_ns}, {"device_ns", int64_t(device_ms * 1e6)}, {"sm_clock_mhz", sm_clock},
           {"throttle", throttle}});
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(0);
}
