// opbench-worker: loads one kernel and runs it on shared-memory tensors when the parent asks.
// It holds no secrets: no seeds, no expected outputs, only the tensors of the calls it runs, and of
// those only the ones of the batch it is running are mapped accessible until the timed pairs start
// (see `expose`).
#include <dlfcn.h>
#include <signal.h>
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

#include "targets/cpu/signal_safe_line.h"
#include "targets/cpu/worker_confine.h"
#include "targets/cpu/worker_protocol.h"

using nlohmann::json;
using namespace opbench::cpu;

namespace {

using AbiVersionFn = int32_t (*)();
using WorkspaceFn = uint64_t (*)(const ob_call*);
using RunFn = int32_t (*)(const ob_call*);
using CountFn = uint64_t (*)();

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

// The nonce of the request being answered: the parent drops replies that lack it. A fixed buffer,
// because the signal handlers read it too.
char g_nonce[64] = "";

void set_nonce(const std::string& nonce) {
  std::snprintf(g_nonce, sizeof g_nonce, "%s", nonce.c_str());
}

void reply(json message) {
  message["nonce"] = std::string(g_nonce);
  write_all(message.dump() + "\n");
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

// One tensor's pages in the worker's address space, for exposing and hiding it and for naming it
// when a fault lands there. Kept in fixed arrays: the SIGSEGV handler reads them.
struct Region {
  std::byte* begin;
  std::byte* end;
  int set;
  int tensor;
  bool input;
};
constexpr int kMaxRegions = 8192;
Region g_regions[kMaxRegions];
int g_region_count = 0;
int g_exposed_first = -1, g_exposed_count = 0, g_sets = 0;
bool g_all_exposed = false;  // after {"op":"expose_all"}: every set stays mapped

bool set_exposed(int set) {
  if (g_exposed_first < 0 || g_sets == 0) return false;
  return (set - g_exposed_first + g_sets) % g_sets < g_exposed_count;
}

// A fault inside the arenas is the kernel touching a tensor it was not given: say which, then leave.
// Anywhere else it is an ordinary crash: restore the default action and let it happen.
void on_sigsegv(int sig, siginfo_t* info, void*) {
  auto* address = static_cast<std::byte*>(info->si_addr);
  for (int i = 0; i < g_region_count; ++i) {
    const Region& r = g_regions[i];
    if (address < r.begin || address >= r.end) continue;
    SignalSafeLine line;
    line.text("{\"ok\":false,\"status\":\"fault\",\"nonce\":\"").text(g_nonce).text("\",\"reason\":\"");
    if (set_exposed(r.set) && r.input) {
      line.text("the kernel wrote to input ").number(r.tensor).text(", which is read-only");
    } else {
      line.text("the kernel touched ").text(r.input ? "input " : "output ").number(r.tensor).text(" of input set ").number(r.set);
      line.text(", which belongs to no call of this batch (only the current calls' tensors are mapped)");
    }
    line.text("\"}\n").write_to(kReplyFd);
    _exit(122);
  }
  signal(sig, SIG_DFL);
}

struct Call {
  std::vector<ob_tensor> inputs, outputs;
  ob_call call{};
};

size_t page_size() { return size_t(sysconf(_SC_PAGESIZE)); }

std::vector<ob_tensor> tensors_of(const json& list, const std::vector<std::byte*>& arenas, int set, bool input) {
  std::vector<ob_tensor> out;
  for (const auto& t : list) {
    ob_tensor tensor{};
    tensor.data = arenas.at(t.at("arena").get<size_t>()) + t.at("offset").get<size_t>();
    tensor.dtype = t.at("dtype").get<int32_t>();
    const auto& shape = t.at("shape");
    tensor.rank = int32_t(shape.size());
    for (size_t i = 0; i < shape.size() && i < OB_MAX_RANK; ++i) tensor.shape[i] = shape[i].get<int64_t>();
    const size_t bytes = t.at("bytes").get<size_t>();
    if (g_region_count < kMaxRegions) {
      auto* begin = static_cast<std::byte*>(tensor.data);
      g_regions[g_region_count++] = {begin, begin + (bytes + page_size() - 1) / page_size() * page_size(), set,
                                     int(out.size()), input};
    }
    out.push_back(tensor);
  }
  return out;
}

void protect_set(int set, bool accessible) {
  for (int i = 0; i < g_region_count; ++i) {
    const Region& r = g_regions[i];
    if (r.set != set || r.end == r.begin) continue;
    int prot = !accessible ? PROT_NONE : r.input ? PROT_READ : PROT_READ | PROT_WRITE;
    mprotect(r.begin, size_t(r.end - r.begin), prot);
  }
}

// Makes sets first..first+count-1 (mod sets) accessible and every other set inaccessible.
void expose(int first, int count) {
  count = std::min(count, g_sets);
  for (int s = 0; s < g_sets; ++s) {
    bool was = set_exposed(s);
    bool want = (s - first + g_sets) % g_sets < count;
    if (was != want) protect_set(s, want);
  }
  g_exposed_first = first;
  g_exposed_count = count;
}

}  // namespace

int main() {
  FILE* commands = fdopen(kCommandFd, "r");
  if (!commands) return 2;
  char* line = nullptr;
  size_t capacity = 0;
  if (getline(&line, &capacity, commands) <= 0) return 2;
  json load = json::parse(line);
  set_nonce(load.value("nonce", std::string()));

  std::vector<std::byte*> arenas;
  int index = 0;
  for (const auto& a : load.at("arenas")) {
    size_t bytes = a.at("bytes").get<size_t>();
    const bool writable = a.value("writable", true);
    // MAP_POPULATE maps every page now, in bulk, instead of one fault at a time in the first calls.
    // The inputs arrive through a read-only descriptor: no mprotect can make them writable.
    void* p = mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED | MAP_POPULATE,
                   kFirstArenaFd + index, 0);
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

  std::vector<Call> calls;
  const auto& input_sets = load.at("inputs");
  const auto& output_sets = load.at("outputs");
  for (size_t s = 0; s < input_sets.size(); ++s) {
    Call c;
    c.inputs = tensors_of(input_sets[s], arenas, int(s), true);
    c.outputs = tensors_of(output_sets[s], arenas, int(s), false);
    calls.push_back(std::move(c));
  }
  g_sets = int(calls.size());
  // Every set starts hidden; a batch exposes its own.
  for (int s = 0; s < g_sets; ++s) protect_set(s, false);
  struct sigaction sa{};
  sa.sa_sigaction = on_sigsegv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);

  // Confinement comes before the kernel is loaded: its static constructors run under the filter.
  std::string confine_error;
  if (load.contains("confine")) {
    const auto& c = load.at("confine");
    ConfineLimits limits;
    limits.address_space_bytes = c.value("address_space_bytes", uint64_t(0));
    limits.cpu_seconds = c.value("cpu_seconds", uint64_t(0));
    limits.open_files = c.value("open_files", uint64_t(64));
    limits.deny_file_writes = c.value("deny_file_writes", false);
    // A machine that refuses part of the confinement (no seccomp in some containers) still runs
    // kernels, and every result says that it ran them without a sandbox, and why.
    confine_error = confine_worker(limits, kReplyFd, g_nonce);
  }

  const std::string kernel_path = load.at("kernel").get<std::string>();
  void* handle = dlopen(kernel_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) reject(std::string("cannot load the kernel: ") + dlerror());
  auto abi_version = reinterpret_cast<AbiVersionFn>(dlsym(handle, "ob_abi_version"));
  auto run = reinterpret_cast<RunFn>(dlsym(handle, "ob_run"));
  auto workspace_bytes = reinterpret_cast<WorkspaceFn>(dlsym(handle, "ob_workspace_bytes"));
  // The kernel and its libraries are mapped: from here on nothing may become executable (a
  // candidate's code is exactly what the import and instruction-set checks read). Before the first
  // call of any kernel function; its static constructors already ran, under the first filter.
  if (load.contains("confine") && load.at("confine").value("deny_exec_after_load", false) && confine_error.empty())
    if (std::string e = deny_executable_mappings(); !e.empty()) confine_error = "the executable-mapping filter: " + e;
  if (!abi_version) reject("the kernel does not export ob_abi_version (use OB_DEFINE_ABI_VERSION())");
  if (!run) reject("the kernel does not export ob_run (declare it extern \"C\")");
  if (int32_t v = abi_version(); v != OB_ABI_VERSION)
    reject("the kernel was written for ABI version " + std::to_string(v) + ", this harness speaks version " +
           std::to_string(OB_ABI_VERSION));

  const int threads = load.at("threads").get<int>();
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
  // Rounding up must not wrap (a kernel answering ~2^64 would get a tiny block and overrun it), and
  // no honest kernel asks for more than the worker's address-space limit allows anyway.
  constexpr uint64_t kMaxWorkspace = uint64_t(1) << 40;
  if (workspace_size > kMaxWorkspace)
    reject("ob_workspace_bytes asked for " + std::to_string(workspace_size) + " bytes of workspace, over the limit of " +
           std::to_string(kMaxWorkspace) + " (an overflowing size?)");
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
  json loaded = {{"ok", true}, {"workspace_bytes", workspace_size}};
  if (!confine_error.empty()) loaded["confine_error"] = confine_error;
  reply(loaded);

  while (getline(&line, &capacity, commands) > 0) {
    json request = json::parse(line);
    set_nonce(request.value("nonce", std::string()));
    const std::string op = request.at("op").get<std::string>();
    if (op == "quit") break;
    if (op == "count") {  // the lint's operation counter, present only in counted reference builds
      auto count = reinterpret_cast<CountFn>(dlsym(handle, "ob_count_operations"));
      reply({{"ok", count != nullptr}, {"operations", count ? int64_t(count()) : int64_t(-1)}});
      continue;
    }
    if (op == "expose_all") {
      expose(0, g_sets);
      g_all_exposed = true;
      reply({{"ok", true}});
      continue;
    }
    if (op != "run") {
      reply({{"ok", false}, {"status", "error"}, {"reason", "unknown op " + op}});
      continue;
    }
    const int64_t first = request.at("first_set").get<int64_t>();
    const int64_t count = request.at("calls").get<int64_t>();
    const int64_t sets = int64_t(calls.size());
    // Exposing the batch's sets is part of the timed request: the parent freezes the worker between
    // requests, and an untimed request would be time the kernel could use. Both sides pay it.
    const int64_t start = now_ns();
    if (!g_all_exposed && (g_exposed_first != int(first % sets) || g_exposed_count < std::min(count, sets)))
      expose(int(first % sets), int(std::min(count, sets)));
    int32_t rc = 0;
    int64_t failed_call = -1;
    for (int64_t i = 0; i < count; ++i) {
      rc = run(&calls[size_t((first + i) % sets)].call);
      if (rc != 0) {
        failed_call = i;
        break;
      }
    }
    const int64_t elapsed = now_ns() - start;
    std::fflush(stdout);  // what a kernel printed reaches the log the result keeps, batch by batch
    if (rc != 0) reply({{"ok", false}, {"return_code", rc}, {"call", failed_call}});
    else reply({{"ok", true}, {"worker_ns", elapsed}});
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // _exit: a kernel's static destructors or leftover threads must not hold the worker open.
  _exit(0);
}
