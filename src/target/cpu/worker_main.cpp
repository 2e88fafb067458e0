// opbench-worker: loads one kernel and runs it on shared-memory tensors when the parent asks.
// It holds no secrets: no seeds, no expected outputs, only the tensors of the calls it runs.
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

#include <nlohmann/json.hpp>

#include <opbench/kernel.h>

#include "target/cpu/worker_protocol.h"

using nlohmann::json;
using namespace opbench::cpu;

namespace {

using AbiVersionFn = int32_t (*)();
using WorkspaceFn = uint64_t (*)(const ob_call*);
using RunFn = int32_t (*)(const ob_call*);
using CountFn = uint64_t (*)();

void reply(const json& message) {
  std::string line = message.dump() + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(kReplyFd, p, left);
    if (n <= 0) _exit(3);
    p += n;
    left -= size_t(n);
  }
}

[[noreturn]] void reject(const std::string& reason) {
  reply({{"ok", false}, {"status", "rejected"}, {"reason", reason}});
  _exit(0);
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Call {
  std::vector<ob_tensor> inputs, outputs;
  ob_call call{};
};

std::vector<ob_tensor> tensors_of(const json& list, const std::vector<std::byte*>& arenas) {
  std::vector<ob_tensor> out;
  for (const auto& t : list) {
    ob_tensor tensor{};
    tensor.data = arenas.at(t.at("arena").get<size_t>()) + t.at("offset").get<size_t>();
    tensor.dtype = t.at("dtype").get<int32_t>();
    const auto& shape = t.at("shape");
    tensor.rank = int32_t(shape.size());
    for (size_t i = 0; i < shape.size() && i < OB_MAX_RANK; ++i) tensor.shape[i] = shape[i].get<int64_t>();
    out.push_back(tensor);
  }
  return out;
}

}  // namespace

int main() {
  FILE* commands = fdopen(kCommandFd, "r");
  if (!commands) return 2;
  char* line = nullptr;
  size_t capacity = 0;
  if (getline(&line, &capacity, commands) <= 0) return 2;
  json load = json::parse(line);

  std::vector<std::byte*> arenas;
  int index = 0;
  for (const auto& a : load.at("arenas")) {
    size_t bytes = a.at("bytes").get<size_t>();
    // MAP_POPULATE maps every page now, in bulk, instead of one fault at a time in the first calls.
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, kFirstArenaFd + index, 0);
    if (p == MAP_FAILED) {
      reply({{"ok", false}, {"status", "error"}, {"reason", std::string("mmap failed: ") + strerror(errno)}});
      return 2;
    }
    auto* base = static_cast<std::byte*>(p);
    for (const auto& g : a.at("guards")) mprotect(base + g[0].get<size_t>(), g[1].get<size_t>(), PROT_NONE);
    close(kFirstArenaFd + index);
    arenas.push_back(base);
    ++index;
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
    reject("the kernel was written for ABI version " + std::to_string(v) + ", this harness speaks version " +
           std::to_string(OB_ABI_VERSION));

  const int threads = load.at("threads").get<int>();
  std::vector<Call> calls;
  const auto& input_sets = load.at("inputs");
  const auto& output_sets = load.at("outputs");
  for (size_t s = 0; s < input_sets.size(); ++s) {
    Call c;
    c.inputs = tensors_of(input_sets[s], arenas);
    c.outputs = tensors_of(output_sets[s], arenas);
    calls.push_back(std::move(c));
  }
  uint64_t workspace_size = 0;
  for (auto& c : calls) {
    c.call.inputs = c.inputs.data();
    c.call.num_inputs = int32_t(c.inputs.size());
    c.call.outputs = c.outputs.data();
    c.call.num_outputs = int32_t(c.outputs.size());
    c.call.num_threads = threads;
    if (workspace_bytes) workspace_size = std::max(workspace_size, workspace_bytes(&c.call));
  }
  void* workspace = nullptr;
  if (workspace_size > 0) {
    // Private to the worker and touched once, so the first timed call does not pay page faults.
    workspace = std::aligned_alloc(64, (workspace_size + 63) / 64 * 64);
    if (!workspace) reject("the kernel asked for " + std::to_string(workspace_size) + " bytes of workspace, which could not be allocated");
    std::memset(workspace, 0, workspace_size);
  }
  for (auto& c : calls) {
    c.call.workspace = workspace;
    c.call.workspace_bytes = workspace_size;
  }
  reply({{"ok", true}, {"workspace_bytes", workspace_size}});

  while (getline(&line, &capacity, commands) > 0) {
    json request = json::parse(line);
    const std::string op = request.at("op").get<std::string>();
    if (op == "quit") break;
    if (op == "count") {  // the lint's operation counter, present only in counted reference builds
      auto count = reinterpret_cast<CountFn>(dlsym(handle, "ob_count_operations"));
      reply({{"ok", count != nullptr}, {"operations", count ? int64_t(count()) : int64_t(-1)}});
      continue;
    }
    if (op != "run") {
      reply({{"ok", false}, {"status", "error"}, {"reason", "unknown op " + op}});
      continue;
    }
    const int64_t first = request.at("first_set").get<int64_t>();
    const int64_t count = request.at("calls").get<int64_t>();
    const int64_t sets = int64_t(calls.size());
    int32_t rc = 0;
    int64_t failed_call = -1;
    const int64_t start = now_ns();
    for (int64_t i = 0; i < count; ++i) {
      rc = run(&calls[size_t((first + i) % sets)].call);
      if (rc != 0) {
        failed_call = i;
        break;
      }
    }
    const int64_t elapsed = now_ns() - start;
    if (rc != 0) reply({{"ok", false}, {"return_code", rc}, {"call", failed_call}});
    else reply({{"ok", true}, {"worker_ns", elapsed}});
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // _exit: a kernel's static destructors or leftover threads must not hold the worker open.
  _exit(0);
}
