// The emulation's runtime (libopbench_cuda_emu.so): the scheduler that runs a block's CUDA threads
// as fibers on one OS thread, the device's launch checks, device memory with guards and host-side
// protection, faults turned into CUDA's sticky errors, the runtime API calls and cuBLAS's GEMMs.
//
// Why fibers on one OS thread: a block's threads must be able to wait for each other at
// __syncthreads and at warp operations, so each needs its own stack; OS threads per CUDA thread
// (one emulator of this project tried std::thread + std::barrier) mean a thousand OS threads per
// block and an order the OS picks. Fibers are cheap (a hand-written register switch on x86-64) and
// the order between synchronisation points is ours: shuffled from a seed, so a run is reproducible
// and two seeds give two interleavings.
#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <csetjmp>
#include <cstdarg>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__) || defined(OB_EMU_UCONTEXT)
#define OB_EMU_USE_UCONTEXT 1
#include <ucontext.h>
#endif

#include <cublas_v2.h>
#include <ob_emu/host.h>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

#if !OB_EMU_USE_UCONTEXT
// ob_emu_switch(&save, load): saves the callee-saved registers and the FP control words on the
// current stack, stores the stack pointer in *save, switches to `load` and restores the same from it.
asm(R"(
.pushsection .text
.globl ob_emu_switch
.hidden ob_emu_switch
.type ob_emu_switch,@function
.p2align 4
ob_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size ob_emu_switch, .-ob_emu_switch
.popsection
)");
extern "C" void ob_emu_switch(void** save, void* load);
#endif

namespace ob_emu {
namespace {

// ---- Errors ------------------------------------------------------------------------------------------
cudaError_t g_last = cudaSuccess;    // cudaGetLastError's
cudaError_t g_sticky = cudaSuccess;  // a device fault's: every later call returns it
std::string g_fault_message;
Stats g_stats;
Options g_options;

std::string vformat(const char* format, va_list args) {
  char buf[4096];
  vsnprintf(buf, sizeof buf, format, args);
  return buf;
}
std::string format(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  return s;
}

// A device operation (a grid, a copy, a GEMM) runs inside a Section: a fault in it (a segfault on a
// guard page, a deadlock, a device_fault) jumps back to the section's start with the error set,
// which is how a faulting kernel ends on the device. Outside any section a fault is the host's.
struct Section {
  sigjmp_buf env;
};
Section* g_section = nullptr;
cudaError_t g_section_error = cudaSuccess;

[[noreturn]] void raise_error(cudaError_t code, bool sticky, const std::string& message) {
  std::fprintf(stderr, "ob_emu: %s: %s\n", cudaGetErrorName(code), message.c_str());
  std::fflush(stderr);
  if (sticky) {
    g_sticky = code;
    if (g_fault_message.empty()) g_fault_message = message;
  }
  g_last = code;
  g_section_error = code;
  if (!g_section) {
    std::fprintf(stderr, "ob_emu: the error happened outside any device operation\n");
    std::abort();
  }
  siglongjmp(g_section->env, 1);
}

// ---- Device memory -----------------------------------------------------------------------------------
size_t page_bytes() {
  static const size_t p = size_t(sysconf(_SC_PAGESIZE));
  return p;
}
size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

struct Allocation {
  char* map = nullptr;  // the mapping: guard page, data + canaries (`usable` bytes), guard page
  size_t map_bytes = 0;
  char* data = nullptr;
  size_t bytes = 0, usable = 0;
  std::string label;
};
std::vector<Allocation> g_allocations;
int g_access_depth = 0;  // > 0: inside a device operation, device memory accessible
bool g_host_locked = false;

void set_device_access(bool accessible) {
  for (const Allocation& a : g_allocations)
    if (mprotect(a.data, a.usable, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
      std::perror("ob_emu: mprotect");
      std::abort();
    }
}
void update_lock() {
  const bool lock = g_options.protect_device_memory && g_access_depth == 0;
  if (lock != g_host_locked) {
    set_device_access(!lock);
    g_host_locked = lock;
  }
}
// Device memory is accessible for as long as one of these lives.
struct DeviceAccess {
  DeviceAccess() {
    ++g_access_depth;
    update_lock();
  }
  ~DeviceAccess() {
    --g_access_depth;
    update_lock();
  }
};

const Allocation* allocation_containing(const void* p) {
  const char* c = static_cast<const char*>(p);
  for (const Allocation& a : g_allocations)
    if (c >= a.data && c < a.data + std::max<size_t>(a.bytes, 1)) return &a;
  return nullptr;
}

// Where an address is, in words, for fault messages.
std::string describe_address(const void* p) {
  const char* c = static_cast<const char*>(p);
  for (const Allocation& a : g_allocations) {
    if (c >= a.map && c < a.data) return format("%zu bytes before the start of %s", size_t(a.data - c), a.label.c_str());
    if (c >= a.data && c < a.data + a.bytes) return format("%s + %zu bytes", a.label.c_str(), size_t(c - a.data));
    if (c >= a.data + a.bytes && c < a.map + a.map_bytes)
      return format("%zu bytes past the end of %s (%zu bytes)", size_t(c - (a.data + a.bytes)), a.label.c_str(), a.bytes);
  }
  return format("%p, which is not device memory", p);
}

// ---- Fibers -----------------------------------------------------------------------------------------
constexpr size_t kStackBytes = size_t(256) << 10;  // a CUDA thread's stack (WMMA fragments hold whole tiles)

struct Context {
#if OB_EMU_USE_UCONTEXT
  ucontext_t uc;
#else
  void* sp = nullptr;
#endif
};

struct Fiber {
  char* map = nullptr;  // guard page, then the stack
  char* lo = nullptr;   // lowest usable byte
  Context context;
#if defined(__SANITIZE_ADDRESS__)
  void* fake_stack = nullptr;
#endif
};
std::vector<Fiber> g_fibers;
Context g_scheduler;
#if defined(__SANITIZE_ADDRESS__)
void* g_scheduler_fake_stack = nullptr;
const void* g_main_bottom = nullptr;
size_t g_main_size = 0;
#endif

extern "C" void ob_emu_fiber_entry();

void context_start(Fiber& f) {
#if defined(__SANITIZE_ADDRESS__)
  // A fiber abandoned by a fault left its frames' redzones poisoned; its stack starts afresh.
  __asan_unpoison_memory_region(f.lo, kStackBytes);
#endif
#if OB_EMU_USE_UCONTEXT
  getcontext(&f.context.uc);
  f.context.uc.uc_stack.ss_sp = f.lo;
  f.context.uc.uc_stack.ss_size = kStackBytes;
  f.context.uc.uc_link = nullptr;
  makecontext(&f.context.uc, ob_emu_fiber_entry, 0);
#else
  // The frame ob_emu_switch pops: FP control words, six callee-saved registers, then the return
  // into ob_emu_fiber_entry, which sees an ordinary call's stack alignment (rsp ≡ 8 mod 16).
  uint64_t* sp = reinterpret_cast<uint64_t*>(f.lo + kStackBytes);
  *--sp = 0;  // ob_emu_fiber_entry's return address: it never returns
  *--sp = reinterpret_cast<uint64_t>(&ob_emu_fiber_entry);
  for (int i = 0; i < 6; ++i) *--sp = 0;
  *--sp = 0x1F80ull | (0x037Full << 32);  // MXCSR and x87 control word at their defaults
  f.context.sp = sp;
#endif
}

void context_switch(Context& from, Context& to) {
#if OB_EMU_USE_UCONTEXT
  swapcontext(&from.uc, &to.uc);
#else
  ob_emu_switch(&from.sp, to.sp);
#endif
}

void ensure_fibers(unsigned n) {
  while (g_fibers.size() < n) {
    Fiber f;
    const size_t guard = page_bytes();
    void* m = mmap(nullptr, guard + kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      std::perror("ob_emu: mmap (fiber stack)");
      std::abort();
    }
    f.map = static_cast<char*>(m);
    mprotect(f.map, guard, PROT_NONE);  // a stack overflow faults here instead of corrupting its neighbour
    f.lo = f.map + guard;
    g_fibers.push_back(f);
  }
}

// ---- The scheduler ----------------------------------------------------------------------------------
enum class State : uint8_t { runnable, at_block, at_warp, exited };

struct Thread {
  State state = State::runnable;
  uint3 idx{};
  // At a block barrier.
  BlockOp block_op = BlockOp::sync;
  int predicate = 0, block_result = 0;
  Site block_site{};
  // At a warp operation.
  WarpOp warp_op = WarpOp::sync;
  unsigned mask = 0;
  uint64_t value = 0, b = 0, warp_result = 0;
  int lane_arg = 0, width = 32;
  Site warp_site{};
  const char* what = nullptr;
};

struct StaticShared {
  void* p;
  size_t bytes;
  uint64_t epoch;
};

struct Launch {
  const void* kernel = nullptr;
  const char* name = "";
  LaunchConfig config{};
  void (*body)(void*) = nullptr;
  void* context = nullptr;
  unsigned threads = 0;
  size_t dynamic_limit = 0;
  bool opted_in = false;
  std::vector<StaticShared> statics;
  size_t static_bytes = 0;
  uint64_t blocks_done = 0;
};

bool g_in_launch = false;
Launch g_launch;
std::vector<Thread> g_threads;
std::vector<unsigned> g_order;
int g_current = -1;  // the running CUDA thread (linear index in the block), -1 in the scheduler
unsigned g_exited = 0;
uint64_t g_epoch = 0;  // one per block run: static shared memory is garbage-filled once per block
uint64_t g_rng = 1;
std::map<const void*, int> g_dynamic_attr;  // cudaFuncAttributeMaxDynamicSharedMemorySize per kernel

constexpr size_t kDefaultShared = 48 * 1024;  // per block without the opt-in
constexpr size_t kOptInShared = 227 * 1024;   // H100's cudaDevAttrMaxSharedMemoryPerBlockOptin

// The block's dynamic shared memory: the end of a region followed by a guard page, so an access
// past its end faults (reads too, which canaries would miss).
char* g_dynamic_region = nullptr;
size_t g_dynamic_region_bytes = 0;
char* g_dynamic_base = nullptr;
void* g_dynamic_pointer = nullptr;  // what dynamic_shared_ref() refers to
size_t g_dynamic_bytes = 0;

uint64_t next_random() {  // splitmix64
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string thread_name(unsigned t) {
  const Thread& th = g_threads[t];
  return format("thread (%u,%u,%u)", th.idx.x, th.idx.y, th.idx.z);
}
std::string where_in_launch() {
  if (!g_in_launch) return "";
  const LaunchConfig& c = g_launch.config;
  std::string s = format("kernel %s<<<(%u,%u,%u), (%u,%u,%u), %zu>>> launched at %s:%u, block (%u,%u,%u)", g_launch.name, c.grid.x,
                         c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z, c.shared_bytes, c.site.file, c.site.line, blockIdx.x,
                         blockIdx.y, blockIdx.z);
  if (g_current >= 0) s += ", " + thread_name(unsigned(g_current));
  return s;
}
const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::sync: return "__syncwarp";
    case WarpOp::shfl_idx: return "__shfl_sync";
    case WarpOp::shfl_up: return "__shfl_up_sync";
    case WarpOp::shfl_down: return "__shfl_down_sync";
    case WarpOp::shfl_xor: return "__shfl_xor_sync";
    case WarpOp::ballot: return "__ballot_sync";
    case WarpOp::any: return "__any_sync";
    case WarpOp::all: return "__all_sync";
    case WarpOp::uniform: return "a warp-collective operation";
  }
  return "?";
}
std::string warp_wait_name(const Thread& t) {
  return format("%s at %s:%u", t.what ? t.what : op_name(t.warp_op), t.warp_site.file, t.warp_site.line);
}

[[noreturn]] void block_fault(const std::string& what) {
  g_current = -1;
  raise_error(cudaErrorLaunchFailure, true, what + " (" + where_in_launch() + ")");
}

void yield_to_scheduler(bool exiting) {
  Fiber& f = g_fibers[unsigned(g_current)];
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(exiting ? nullptr : &f.fake_stack, g_main_bottom, g_main_size);
#endif
  (void)exiting;
  context_switch(f.context, g_scheduler);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(f.fake_stack, &g_main_bottom, &g_main_size);
#endif
}

void switch_to(unsigned t) {
  g_current = int(t);
  threadIdx = g_threads[t].idx;
  ++g_stats.switches;
  Fiber& f = g_fibers[t];
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(&g_scheduler_fake_stack, f.lo, kStackBytes);
#endif
  context_switch(g_scheduler, f.context);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(g_scheduler_fake_stack, nullptr, nullptr);
#endif
  g_current = -1;
}

extern "C" void ob_emu_fiber_entry() {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, &g_main_bottom, &g_main_size);
#endif
  g_launch.body(g_launch.context);
  g_threads[unsigned(g_current)].state = State::exited;
  ++g_exited;
  yield_to_scheduler(true);
  std::abort();  // an exited fiber is never resumed
}

unsigned warp_lanes(unsigned warp) { return std::min(32u, g_launch.threads - warp * 32); }

// Releases every warp group whose lanes have all arrived; faults on what cannot be released ever
// (a lane of the mask exited, masks or operations that disagree). Returns whether any was released.
bool release_warps() {
  bool released = false;
  const unsigned warps = (g_launch.threads + 31) / 32;
  for (unsigned w = 0; w < warps; ++w) {
    const unsigned base = w * 32, lanes = warp_lanes(w);
    for (unsigned l = 0; l < lanes; ++l) {
      Thread& t = g_threads[base + l];
      if (t.state != State::at_warp) continue;
      const unsigned mask = t.mask;
      if (!(mask >> l & 1u))
        block_fault(format("%s: lane %u calls it with mask 0x%08x, which does not name the lane itself", warp_wait_name(t).c_str(), l, mask));
      bool ready = true;
      for (unsigned j = 0; j < 32; ++j) {
        if (!(mask >> j & 1u)) continue;
        if (j >= lanes)
          block_fault(format("%s: mask 0x%08x names lane %u of warp %u, which does not exist (%u threads per block)", warp_wait_name(t).c_str(),
                             mask, j, w, g_launch.threads));
        const Thread& o = g_threads[base + j];
        if (o.state == State::exited)
          block_fault(format("%s: lane %u waits for lane %u, which has exited (mask 0x%08x)", warp_wait_name(t).c_str(), l, j, mask));
        if (o.state != State::at_warp) {
          ready = false;
          continue;
        }
        if (o.mask != mask)
          block_fault(format("warp %u: lane %u waits at %s with mask 0x%08x, lane %u at %s with mask 0x%08x", w, l, warp_wait_name(t).c_str(),
                             mask, j, warp_wait_name(o).c_str(), o.mask));
        if (o.warp_op != t.warp_op || (t.warp_op == WarpOp::uniform && o.what != t.what))
          block_fault(format("warp %u: lane %u is at %s, lane %u at %s (mask 0x%08x)", w, l, warp_wait_name(t).c_str(), j,
                             warp_wait_name(o).c_str(), mask));
      }
      if (!ready) continue;
      // The whole group is here: compute every lane's result, then let them all run.
      uint64_t vote = 0;
      for (unsigned j = 0; j < 32; ++j)
        if (mask >> j & 1u) vote |= uint64_t(g_threads[base + j].value != 0) << j;
      for (unsigned j = 0; j < 32; ++j) {
        if (!(mask >> j & 1u)) continue;
        Thread& me = g_threads[base + j];
        const int width = me.width;
        if (me.warp_op >= WarpOp::shfl_idx && me.warp_op <= WarpOp::shfl_xor && (width < 1 || width > 32 || (width & (width - 1))))
          block_fault(format("%s: width %d is not a power of 2 up to 32", warp_wait_name(me).c_str(), width));
        const unsigned seg = j & ~unsigned(width - 1), in_seg = j & unsigned(width - 1);
        unsigned src = j;
        switch (me.warp_op) {
          case WarpOp::shfl_idx: src = seg + (unsigned(me.lane_arg) & unsigned(width - 1)); break;
          case WarpOp::shfl_up: src = int(in_seg) - me.lane_arg >= 0 ? j - unsigned(me.lane_arg) : j; break;
          case WarpOp::shfl_down: src = in_seg + unsigned(me.lane_arg) < unsigned(width) ? j + unsigned(me.lane_arg) : j; break;
          case WarpOp::shfl_xor: src = j ^ unsigned(me.lane_arg); if (src >= seg + unsigned(width)) src = j; break;
          default: break;
        }
        switch (me.warp_op) {
          case WarpOp::shfl_idx:
          case WarpOp::shfl_up:
          case WarpOp::shfl_down:
          case WarpOp::shfl_xor:
            if (!(mask >> src & 1u))
              block_fault(format("%s: lane %u reads lane %u, which is not in the mask 0x%08x (undefined)", warp_wait_name(me).c_str(), j, src,
                                 mask));
            me.warp_result = g_threads[base + src].value;
            break;
          case WarpOp::ballot: me.warp_result = vote; break;
          case WarpOp::any: me.warp_result = vote != 0; break;
          case WarpOp::all: me.warp_result = vote == mask; break;
          case WarpOp::uniform: {
            const Thread& first = g_threads[base + unsigned(__builtin_ctz(mask))];
            if (me.value != first.value || me.b != first.b)
              block_fault(format("%s: lanes %u and %u pass different arguments (0x%llx/0x%llx and 0x%llx/0x%llx); they must be the same in "
                                 "the whole warp",
                                 warp_wait_name(me).c_str(), unsigned(__builtin_ctz(mask)), j, (unsigned long long)first.value,
                                 (unsigned long long)first.b, (unsigned long long)me.value, (unsigned long long)me.b));
            me.warp_result = 0;
            break;
          }
          case WarpOp::sync: me.warp_result = 0; break;
        }
      }
      for (unsigned j = 0; j < 32; ++j)
        if (mask >> j & 1u) g_threads[base + j].state = State::runnable;
      released = true;
    }
  }
  return released;
}

bool same_site(const Site& a, const Site& b) { return a.line == b.line && (a.file == b.file || std::strcmp(a.file, b.file) == 0); }
const char* block_op_name(BlockOp op) {
  switch (op) {
    case BlockOp::sync: return "__syncthreads";
    case BlockOp::count: return "__syncthreads_count";
    case BlockOp::all: return "__syncthreads_and";
    case BlockOp::any: return "__syncthreads_or";
  }
  return "?";
}

// Releases the block barrier when every thread that has not exited waits at it, at the same
// __syncthreads. Threads that exited while others wait there, or waits at different __syncthreads,
// are barrier divergence (the CUDA programming guide: undefined, a hang or worse on the device).
bool release_block() {
  int first = -1;
  for (unsigned t = 0; t < g_launch.threads; ++t) {
    const Thread& th = g_threads[t];
    if (th.state == State::exited) continue;
    if (th.state != State::at_block) return false;
    if (first < 0) first = int(t);
  }
  if (first < 0) return false;
  const Thread& f = g_threads[unsigned(first)];
  for (unsigned t = 0; t < g_launch.threads; ++t) {
    const Thread& th = g_threads[t];
    if (th.state != State::at_block) continue;
    if (!same_site(th.block_site, f.block_site) || th.block_op != f.block_op)
      block_fault(format("barrier divergence: %s waits at %s at %s:%u, %s at %s at %s:%u", thread_name(unsigned(first)).c_str(),
                         block_op_name(f.block_op), f.block_site.file, f.block_site.line, thread_name(t).c_str(), block_op_name(th.block_op),
                         th.block_site.file, th.block_site.line));
  }
  if (g_exited > 0) {
    unsigned gone = 0;
    while (g_threads[gone].state != State::exited) ++gone;
    block_fault(format("barrier divergence: %u of the block's %u threads (the first: %s) exited while the others wait at %s at %s:%u",
                       g_exited, g_launch.threads, thread_name(gone).c_str(), block_op_name(f.block_op), f.block_site.file, f.block_site.line));
  }
  int count = 0;
  unsigned live = 0;
  for (unsigned t = 0; t < g_launch.threads; ++t) {
    const Thread& th = g_threads[t];
    if (th.state != State::at_block) continue;
    ++live;
    count += th.predicate != 0;
  }
  int result = 0;
  switch (f.block_op) {
    case BlockOp::sync: result = 0; break;
    case BlockOp::count: result = count; break;
    case BlockOp::all: result = unsigned(count) == live; break;
    case BlockOp::any: result = count > 0; break;
  }
  for (unsigned t = 0; t < g_launch.threads; ++t) {
    Thread& th = g_threads[t];
    if (th.state != State::at_block) continue;
    th.block_result = result;
    th.state = State::runnable;
  }
  return true;
}

[[noreturn]] void deadlock() {
  // Say who waits for whom: the first warp operation that waits for a lane which is elsewhere.
  std::string detail;
  for (unsigned t = 0; t < g_launch.threads && detail.empty(); ++t) {
    const Thread& th = g_threads[t];
    if (th.state != State::at_warp) continue;
    const unsigned base = t & ~31u;
    for (unsigned j = 0; j < 32; ++j) {
      if (!(th.mask >> j & 1u)) continue;
      const Thread& o = g_threads[base + j];
      if (o.state == State::at_block) {
        detail = format("%s waits at %s for lane %u, which waits at %s at %s:%u", thread_name(t).c_str(), warp_wait_name(th).c_str(), j,
                        block_op_name(o.block_op), o.block_site.file, o.block_site.line);
        break;
      }
    }
  }
  if (detail.empty()) detail = "no thread can go on";
  block_fault("deadlock: " + detail);
}

void run_block() {
  const unsigned n = g_launch.threads;
  const dim3 b = g_launch.config.block;
  for (unsigned t = 0; t < n; ++t) {
    Thread& th = g_threads[t];
    th = Thread{};
    th.idx = {t % b.x, (t / b.x) % b.y, t / (b.x * b.y)};
    context_start(g_fibers[t]);
  }
  g_exited = 0;
  ++g_stats.blocks;
  g_stats.threads += n;
  for (;;) {
    g_order.clear();
    for (unsigned t = 0; t < n; ++t)
      if (g_threads[t].state == State::runnable) g_order.push_back(t);
    if (!g_order.empty()) {
      for (size_t i = g_order.size(); i > 1; --i) std::swap(g_order[i - 1], g_order[next_random() % i]);
      for (unsigned t : g_order) switch_to(t);
      continue;
    }
    if (g_exited == n) return;
    if (release_warps()) continue;
    if (release_block()) continue;
    deadlock();
  }
}

void check_static_shared() {
  const size_t s = g_launch.static_bytes, d = g_launch.config.shared_bytes;
  const size_t limit = g_launch.opted_in ? kOptInShared : kDefaultShared;
  if (s > kDefaultShared || s + d > limit)
    raise_error(cudaErrorInvalidValue, false,
                format("%zu bytes of static + %zu of dynamic shared memory exceed the block's %zu (%s) (%s)", s, d, limit,
                       g_launch.opted_in ? "cudaFuncAttributeMaxDynamicSharedMemorySize set" : "the default without the opt-in",
                       where_in_launch().c_str()));
}

void run_grid() {
  const dim3 g = g_launch.config.grid;
  const uint64_t blocks = uint64_t(g.x) * g.y * g.z;
  // Blocks in a shuffled order (i -> (a·i + c) mod blocks, a coprime with blocks): a kernel that
  // relies on an order of blocks is wrong on the device.
  uint64_t a = 1, c = 0;
  if (blocks > 1) {
    do a = next_random() % blocks; while (a == 0 || std::gcd(a, blocks) != 1);
    c = next_random() % blocks;
  }
  blockDim = g_launch.config.block;
  gridDim = g;
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint64_t lin = uint64_t((unsigned __int128)a * i % blocks + c) % blocks;
    blockIdx = {unsigned(lin % g.x), unsigned(lin / g.x % g.y), unsigned(lin / (uint64_t(g.x) * g.y))};
    ++g_epoch;
    if (g_dynamic_bytes) std::memset(g_dynamic_base, g_options.shared_garbage, g_dynamic_bytes);
    run_block();
    if (i == 0) check_static_shared();
    ++g_launch.blocks_done;
  }
}

// ---- Streams -----------------------------------------------------------------------------------------
struct StreamObject {
  int id;
};
std::set<cudaStream_t> g_streams;
cudaStream_t g_call_stream = nullptr;
bool g_call_stream_set = false;

void check_stream(cudaStream_t s, const std::string& what) {
  if (!g_call_stream_set || s == g_call_stream) return;
  ++g_stats.stream_violations;
  std::fprintf(stderr, "ob_emu: %s on stream %p, not the call's stream %p (cuda_util.cuh: launch on call->stream, never the legacy "
               "default stream)\n",
               what.c_str(), static_cast<void*>(s), static_cast<void*>(g_call_stream));
}

// Runs f with device memory accessible, as a device operation (see Section). Returns the error a
// fault in it raised, or cudaSuccess.
template <class F>
cudaError_t device_op(F&& f) {
  DeviceAccess access;
  Section s;
  Section* outer = g_section;
  if (sigsetjmp(s.env, 1) != 0) {
    g_section = outer;
    g_in_launch = false;
    g_current = -1;
    return g_section_error;
  }
  g_section = &s;
  f();
  g_section = outer;
  return cudaSuccess;
}

// ---- Faults as signals -------------------------------------------------------------------------------
char g_signal_stack[64 * 1024];
struct sigaction g_previous_segv, g_previous_bus;

bool in_fiber_guard(const char* c) {
  for (const Fiber& f : g_fibers)
    if (c >= f.map && c < f.lo) return true;
  return false;
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const char* addr = static_cast<const char*>(info->si_addr);
  if (g_section) {
    std::string what;
    if (in_fiber_guard(addr))
      what = format("a CUDA thread overflowed its %zu KiB stack", kStackBytes >> 10);
    else if (g_dynamic_region && addr >= g_dynamic_region - page_bytes() && addr < g_dynamic_region + g_dynamic_region_bytes + page_bytes())
      what = format("illegal address: %td bytes past the end of the block's %zu bytes of dynamic shared memory", addr - (g_dynamic_base + g_dynamic_bytes),
                    g_dynamic_bytes);
    else
      what = "illegal address: " + describe_address(addr);
    if (g_in_launch) what += " (" + where_in_launch() + ")";
    g_current = -1;
    raise_error(cudaErrorIllegalAddress, true, what);
  }
  for (const Allocation& a : g_allocations)
    if (addr >= a.data && addr < a.data + a.usable && g_host_locked) {
      const std::string what = describe_address(addr);
      std::fprintf(stderr,
                   "ob_emu: host code touched device memory (%s): a device pointer may only be used by kernels, cudaMemcpy*/cudaMemset* "
                   "and cuBLAS; the host's stack:\n",
                   what.c_str());
      void* frames[32];
      const int n = backtrace(frames, 32);
      backtrace_symbols_fd(frames, n, 2);
      _exit(3);
    }
  // Not ours: the previous handler (or the default action) decides.
  struct sigaction& prev = sig == SIGSEGV ? g_previous_segv : g_previous_bus;
  if (prev.sa_flags & SA_SIGINFO && prev.sa_sigaction) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
    prev.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
}

struct Init {
  Init() {
    stack_t st{};
    st.ss_sp = g_signal_stack;
    st.ss_size = sizeof g_signal_stack;
    sigaltstack(&st, nullptr);
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous_segv);
    sigaction(SIGBUS, &sa, &g_previous_bus);
    const size_t region = round_up(kOptInShared, page_bytes());
    void* m = mmap(nullptr, region + 2 * page_bytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    g_dynamic_region = static_cast<char*>(m) + page_bytes();
    g_dynamic_region_bytes = region;
    mprotect(g_dynamic_region, region, PROT_READ | PROT_WRITE);
  }
};
Init g_init;

// ---- cuBLAS ------------------------------------------------------------------------------------------
struct Handle {
  cudaStream_t stream = nullptr;
};
std::set<cublasHandle_t> g_handles;

size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : t == CUDA_R_16BF || t == CUDA_R_16F ? 2 : t == CUDA_R_64F ? 8 : 1; }
float load_elem(const void* p, cudaDataType_t t, long long i) {
  if (t == CUDA_R_32F) return static_cast<const float*>(p)[i];
  return bf16_to_f32(static_cast<const unsigned short*>(p)[i]);
}

// The bytes a strided batch of column-major matrices (rows × cols, leading dimension ld) covers.
void check_matrix(const char* fn, const char* name, const void* p, cudaDataType_t t, long long rows, long long cols, long long ld,
                  long long stride, long long batch) {
  if (rows == 0 || cols == 0 || batch == 0) return;
  const long long span = (rows - 1) + (cols - 1) * ld + 1;
  const long long lo = std::min(0ll, (batch - 1) * stride), hi = std::max(0ll, (batch - 1) * stride) + span;
  const char* first = static_cast<const char*>(p) + lo * (long long)type_bytes(t);
  const char* end = static_cast<const char*>(p) + hi * (long long)type_bytes(t);
  const Allocation* a = allocation_containing(first);
  if (!a)
    raise_error(cudaErrorIllegalAddress, true, format("%s: matrix %s at %p is not in device memory (%s)", fn, name, p, describe_address(first).c_str()));
  if (end > a->data + a->bytes)
    raise_error(cudaErrorIllegalAddress, true,
                format("%s: matrix %s (%lld×%lld, ld %lld, stride %lld, batch %lld) reaches %zu bytes past the end of %s", fn, name, rows, cols,
                       ld, stride, batch, size_t(end - (a->data + a->bytes)), a->label.c_str()));
}

bool overlaps(const void* p, size_t pb, const void* q, size_t qb) {
  const char *a = static_cast<const char*>(p), *b = static_cast<const char*>(q);
  return a < b + qb && b < a + pb;
}

cublasStatus_t gemm(const char* fn, cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha,
                    const void* A, cudaDataType_t at, int lda, long long sa, const void* B, cudaDataType_t bt, int ldb, long long sb,
                    const void* beta, void* C, cudaDataType_t ct, int ldc, long long sc, int batch, cublasComputeType_t compute) {
  if (!handle || !g_handles.count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto invalid = [&](const std::string& why) {
    std::fprintf(stderr, "ob_emu: %s: CUBLAS_STATUS_INVALID_VALUE: %s\n", fn, why.c_str());
    return CUBLAS_STATUS_INVALID_VALUE;
  };
  auto valid_op = [](cublasOperation_t o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; };
  if (!valid_op(ta) || !valid_op(tb)) return invalid("transa / transb is not CUBLAS_OP_N, _T or _C");
  if (m < 0 || n < 0 || k < 0 || batch < 0) return invalid(format("m %d, n %d, k %d, batchCount %d: none may be negative", m, n, k, batch));
  const bool an = ta == CUBLAS_OP_N, bn = tb == CUBLAS_OP_N;
  if (lda < std::max(1, an ? m : k))
    return invalid(format("lda %d < max(1, %s) = %d (transa %s, m %d, k %d)", lda, an ? "m" : "k", std::max(1, an ? m : k), an ? "N" : "T", m, k));
  if (ldb < std::max(1, bn ? k : n))
    return invalid(format("ldb %d < max(1, %s) = %d (transb %s, k %d, n %d)", ldb, bn ? "k" : "n", std::max(1, bn ? k : n), bn ? "N" : "T", k, n));
  if (ldc < std::max(1, m)) return invalid(format("ldc %d < max(1, m) = %d", ldc, std::max(1, m)));
  const bool compute32 = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC || compute == CUBLAS_COMPUTE_32F_FAST_16BF ||
                         compute == CUBLAS_COMPUTE_32F_FAST_TF32 || compute == CUBLAS_COMPUTE_32F_FAST_16F;
  const bool bf16_in = at == CUDA_R_16BF && bt == CUDA_R_16BF && (ct == CUDA_R_16BF || ct == CUDA_R_32F);
  const bool f32_all = at == CUDA_R_32F && bt == CUDA_R_32F && ct == CUDA_R_32F;
  if (!compute32 || !(bf16_in || f32_all)) {
    std::fprintf(stderr, "ob_emu: %s: CUBLAS_STATUS_NOT_SUPPORTED: Atype %d, Btype %d, Ctype %d, computeType %d (emulated: bf16 or fp32 in, "
                 "fp32 compute)\n", fn, int(at), int(bt), int(ct), int(compute));
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (!alpha || !beta) return invalid("alpha or beta is null");
  Handle* h = reinterpret_cast<Handle*>(handle);
  check_stream(h->stream, format("%s (cublasSetStream's stream)", fn));
  if (g_sticky) return CUBLAS_STATUS_EXECUTION_FAILED;
  ++g_stats.gemms;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);  // host pointer mode: read now
  const cudaError_t e = device_op([&] {
    const long long ar = an ? m : k, ac = an ? k : m, br = bn ? k : n, bc = bn ? n : k;
    if (k > 0) {
      check_matrix(fn, "A", A, at, ar, ac, lda, sa, batch);
      check_matrix(fn, "B", B, bt, br, bc, ldb, sb, batch);
    }
    check_matrix(fn, "C", C, ct, m, n, ldc, sc, batch);
    if (batch > 1 && sc == 0) raise_error(cudaErrorLaunchFailure, true, format("%s: strideC 0 with batchCount %d: every batch writes the same C (undefined)", fn, batch));
    const size_t cbytes = size_t((long long)(m - 1) + (long long)(n - 1) * ldc + 1 + std::abs(sc) * (batch - 1)) * type_bytes(ct);
    const char* c0 = static_cast<const char*>(C) + std::min(0ll, sc * (batch - 1)) * (long long)type_bytes(ct);
    auto extent = [&](const void* p, cudaDataType_t t, long long r, long long c, long long ld, long long s) {
      return std::make_pair(static_cast<const char*>(p) + std::min(0ll, s * (batch - 1)) * (long long)type_bytes(t),
                            size_t((r - 1) + (c - 1) * ld + 1 + std::abs(s) * (batch - 1)) * type_bytes(t));
    };
    if (k > 0) {
      const auto ea = extent(A, at, ar, ac, lda, sa), eb = extent(B, bt, br, bc, ldb, sb);
      if (overlaps(c0, cbytes, ea.first, ea.second) || overlaps(c0, cbytes, eb.first, eb.second))
        raise_error(cudaErrorLaunchFailure, true, format("%s: C overlaps A or B (in-place GEMMs are undefined in cuBLAS)", fn));
    }
    for (int bi = 0; bi < batch; ++bi) {
      const long long oa = bi * sa, ob = bi * sb, oc = bi * sc;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          float acc = 0.0f;
          for (int l = 0; l < k; ++l) {
            const float x = load_elem(A, at, oa + (an ? i + (long long)l * lda : l + (long long)i * lda));
            const float y = load_elem(B, bt, ob + (bn ? l + (long long)j * ldb : j + (long long)l * ldb));
            acc += x * y;
          }
          const long long ci = oc + i + (long long)j * ldc;
          if (ct == CUDA_R_32F) {
            float* cf = static_cast<float*>(C);
            cf[ci] = be != 0.0f ? al * acc + be * cf[ci] : al * acc;
          } else {
            unsigned short* ch = static_cast<unsigned short*>(C);
            ch[ci] = f32_to_bf16_rn(be != 0.0f ? al * acc + be * bf16_to_f32(ch[ci]) : al * acc);
          }
        }
    }
  });
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

// Checks a cudaMemcpy / cudaMemset range: inside one device allocation, or (host side) not device
// memory at all.
bool device_range(const void* p, size_t bytes, std::string* why) {
  const Allocation* a = allocation_containing(p);
  if (!a) {
    *why = "not inside a device allocation: " + describe_address(p);
    return false;
  }
  if (static_cast<const char*>(p) + bytes > a->data + a->bytes) {
    *why = format("%zu bytes from %s run %zu bytes past its end", bytes, describe_address(p).c_str(),
                  size_t(static_cast<const char*>(p) + bytes - (a->data + a->bytes)));
    return false;
  }
  return true;
}
bool host_range(const void* p, size_t bytes) {
  for (const Allocation& a : g_allocations)
    if (overlaps(p, std::max<size_t>(bytes, 1), a.map, a.map_bytes)) return false;
  return true;
}

cudaError_t api_error(cudaError_t e, const std::string& why) {
  std::fprintf(stderr, "ob_emu: %s: %s\n", cudaGetErrorName(e), why.c_str());
  g_last = e;
  return e;
}

cudaError_t memcpy_impl(const char* fn, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (g_sticky) return g_sticky;
  check_stream(stream, fn);
  ++g_stats.memcpys;
  if (bytes == 0) return cudaSuccess;
  const bool dst_dev = allocation_containing(dst) != nullptr, src_dev = allocation_containing(src) != nullptr;
  if (kind == cudaMemcpyDefault) kind = dst_dev ? (src_dev ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                                : (src_dev ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  std::string why;
  const bool want_dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool want_src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return api_error(cudaErrorInvalidMemcpyDirection, format("%s: kind %d", fn, int(kind)));
  if (want_dst_dev ? !device_range(dst, bytes, &why) : !host_range(dst, bytes))
    return api_error(cudaErrorInvalidValue, format("%s: destination: %s", fn, want_dst_dev ? why.c_str() : "device memory given as a host pointer"));
  if (want_src_dev ? !device_range(src, bytes, &why) : !host_range(src, bytes))
    return api_error(cudaErrorInvalidValue, format("%s: source: %s", fn, want_src_dev ? why.c_str() : "device memory given as a host pointer"));
  return device_op([&] { std::memmove(dst, src, bytes); });
}

cudaError_t memset_impl(const char* fn, void* p, int value, size_t bytes, cudaStream_t stream) {
  if (g_sticky) return g_sticky;
  check_stream(stream, fn);
  ++g_stats.memsets;
  if (bytes == 0) return cudaSuccess;
  std::string why;
  if (!device_range(p, bytes, &why)) return api_error(cudaErrorInvalidValue, format("%s: %s", fn, why.c_str()));
  return device_op([&] { std::memset(p, value, bytes); });
}

int g_malloc_count = 0;

}  // namespace

// ---- Called from kernels -----------------------------------------------------------------------------
void launch_grid(const void* kernel, const char* name, const LaunchConfig& cfg, void (*body)(void*), void* context) {
  ++g_stats.launches;
  if (g_in_launch) {
    std::fprintf(stderr, "ob_emu: kernel %s launched from device code: dynamic parallelism is not emulated\n", name);
    std::abort();
  }
  if (g_sticky) {
    g_last = g_sticky;
    return;
  }
  check_stream(cfg.stream, format("kernel %s launched at %s:%u", name, cfg.site.file, cfg.site.line));
  const dim3 g = cfg.grid, b = cfg.block;
  const std::string where = format("kernel %s<<<(%u,%u,%u), (%u,%u,%u), %zu>>> at %s:%u", name, g.x, g.y, g.z, b.x, b.y, b.z, cfg.shared_bytes,
                                   cfg.site.file, cfg.site.line);
  const uint64_t threads = uint64_t(b.x) * b.y * b.z;
  if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024) {
    api_error(cudaErrorInvalidConfiguration, where + ": a block has 1 to 1024 threads, at most (1024, 1024, 64)");
    return;
  }
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
    api_error(cudaErrorInvalidConfiguration, where + ": grid.x is 1 to 2^31-1, grid.y and grid.z 1 to 65535");
    return;
  }
  const auto attr = g_dynamic_attr.find(kernel);
  const bool opted_in = attr != g_dynamic_attr.end();
  const size_t limit = opted_in ? size_t(attr->second) : kDefaultShared;
  if (cfg.shared_bytes > limit) {
    api_error(cudaErrorInvalidValue, format("%s: %zu bytes of dynamic shared memory, more than the kernel's %zu (%s)", where.c_str(), cfg.shared_bytes,
                                            limit, opted_in ? "its cudaFuncAttributeMaxDynamicSharedMemorySize" : "48 KiB without cudaFuncSetAttribute"));
    return;
  }
  g_launch = Launch{};
  g_launch.kernel = kernel;
  g_launch.name = name;
  g_launch.config = cfg;
  g_launch.body = body;
  g_launch.context = context;
  g_launch.threads = unsigned(threads);
  g_launch.dynamic_limit = limit;
  g_launch.opted_in = opted_in;
  g_rng = g_options.schedule_seed * 0x9E3779B97F4A7C15ull + g_stats.launches;
  ensure_fibers(g_launch.threads);
  g_threads.resize(g_launch.threads);
  g_dynamic_bytes = cfg.shared_bytes;
  g_dynamic_base = g_dynamic_region + g_dynamic_region_bytes - round_up(cfg.shared_bytes, 128);
  g_dynamic_pointer = g_dynamic_base;
  device_op([&] {
    g_in_launch = true;
    run_grid();
    g_in_launch = false;
  });
  g_in_launch = false;
  g_current = -1;
}

void launch_bounds(long long max_threads, long long, long long) {
  if (g_in_launch && g_launch.blocks_done == 0 && g_launch.threads > max_threads) {
    g_current = -1;
    raise_error(cudaErrorLaunchOutOfResources, false,
                format("kernel %s launched with %u threads per block, more than its __launch_bounds__(%lld) (launched at %s:%u)", g_launch.name,
                       g_launch.threads, max_threads, g_launch.config.site.file, g_launch.config.site.line));
  }
}

void* const& dynamic_shared_ref() { return g_dynamic_pointer; }

void touch_static_shared(void* p, size_t bytes) {
  if (!g_in_launch) return;  // a namespace-scope __shared__ (initialised when the library loads)
  for (StaticShared& s : g_launch.statics)
    if (s.p == p) {
      if (s.epoch != g_epoch) {
        std::memset(p, g_options.shared_garbage, bytes);
        s.epoch = g_epoch;
      }
      return;
    }
  g_launch.statics.push_back({p, bytes, g_epoch});
  g_launch.static_bytes += bytes;
  std::memset(p, g_options.shared_garbage, bytes);
}

int block_barrier(BlockOp op, int predicate, Site where) {
  if (!g_in_launch || g_current < 0) {
    std::fprintf(stderr, "ob_emu: %s at %s:%u called outside a kernel\n", block_op_name(op), where.file, where.line);
    std::abort();
  }
  Thread& t = g_threads[unsigned(g_current)];
  t.state = State::at_block;
  t.block_op = op;
  t.predicate = predicate;
  t.block_site = where;
  yield_to_scheduler(false);
  return g_threads[unsigned(g_current)].block_result;
}

uint64_t warp_op(WarpOp op, unsigned mask, uint64_t bits, int lane_arg, int width, Site where, const char* what, uint64_t b) {
  if (!g_in_launch || g_current < 0) {
    std::fprintf(stderr, "ob_emu: %s at %s:%u called outside a kernel\n", what ? what : op_name(op), where.file, where.line);
    std::abort();
  }
  Thread& t = g_threads[unsigned(g_current)];
  t.state = State::at_warp;
  t.warp_op = op;
  t.mask = mask;
  t.value = bits;
  t.lane_arg = lane_arg;
  t.width = width;
  t.warp_site = where;
  t.what = what;
  t.b = b;
  yield_to_scheduler(false);
  return g_threads[unsigned(g_current)].warp_result;
}

unsigned active_mask() {
  if (!g_in_launch || g_current < 0) return 0;
  const unsigned base = unsigned(g_current) & ~31u;
  unsigned m = 0;
  for (unsigned j = 0; j < warp_lanes(base / 32); ++j)
    if (g_threads[base + j].state != State::exited) m |= 1u << j;
  return m;
}

void device_fault(cudaError_t error, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string what = vformat(fmt, args);
  va_end(args);
  if (g_in_launch) what += " (" + where_in_launch() + ")";
  g_current = -1;
  raise_error(error, true, what);
}

cudaError_t func_set_attribute(const void* kernel, cudaFuncAttribute attr, int value) {
  if (g_sticky) return g_sticky;
  if (!kernel) return api_error(cudaErrorInvalidDeviceFunction, "cudaFuncSetAttribute: null function");
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || size_t(value) > kOptInShared)
      return api_error(cudaErrorInvalidValue, format("cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize, %d): more than the "
                                                     "device's %zu bytes per block", value, kOptInShared));
    g_dynamic_attr[kernel] = value;
    return cudaSuccess;
  }
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return value >= -1 && value <= 100 ? cudaSuccess : api_error(cudaErrorInvalidValue, "carveout");
  return cudaSuccess;
}

// ---- The driver's side (host.h) ----------------------------------------------------------------------
void* device_alloc(size_t bytes, const std::string& label) {
  const size_t page = page_bytes();
  Allocation a;
  a.bytes = bytes;
  a.usable = round_up(bytes + kCanaryBytes, page);
  a.map_bytes = a.usable + 2 * page;
  void* m = mmap(nullptr, a.map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  a.map = static_cast<char*>(m);
  a.data = a.map + page;
  a.label = label;
  mprotect(a.data, a.usable, PROT_READ | PROT_WRITE);
  std::memset(a.data + bytes, kCanary, a.usable - bytes);
  g_allocations.push_back(a);
  // Locked from now on (host code outside device operations may not touch it).
  if (g_host_locked) mprotect(a.data, a.usable, PROT_NONE);
  update_lock();
  return a.data;
}

void device_free(void* p) {
  for (size_t i = 0; i < g_allocations.size(); ++i)
    if (g_allocations[i].data == p) {
      munmap(g_allocations[i].map, g_allocations[i].map_bytes);
      g_allocations.erase(g_allocations.begin() + long(i));
      return;
    }
}

void copy_to_device(void* device, const void* host, size_t bytes) {
  DeviceAccess access;
  std::memcpy(device, host, bytes);
}
void copy_from_device(void* host, const void* device, size_t bytes) {
  DeviceAccess access;
  std::memcpy(host, device, bytes);
}
void fill_device(void* device, unsigned char byte, size_t bytes) {
  DeviceAccess access;
  std::memset(device, byte, bytes);
}

std::string canary_damage(const void* device) {
  DeviceAccess access;
  for (const Allocation& a : g_allocations)
    if (a.data == device) {
      for (size_t i = a.bytes; i < a.usable; ++i)
        if (static_cast<unsigned char>(a.data[i]) != kCanary)
          return format("%s: written %zu bytes past its end (canary 0x%02x found 0x%02x)", a.label.c_str(), i - a.bytes, kCanary,
                        static_cast<unsigned char>(a.data[i]));
      return "";
    }
  return "not a device allocation";
}

void set_options(const Options& options) {
  g_options = options;
  update_lock();
}
void set_call_stream(cudaStream_t stream) {
  g_call_stream = stream;
  g_call_stream_set = true;
}
void clear_call_stream() {
  g_call_stream = nullptr;
  g_call_stream_set = false;
}
Stats stats() { return g_stats; }
void reset_stats() { g_stats = Stats{}; }
cudaError_t sticky_error() { return g_sticky; }
std::string fault_message() { return g_fault_message; }
void reset_device() {
  g_sticky = g_last = cudaSuccess;
  g_fault_message.clear();
}

}  // namespace ob_emu

using namespace ob_emu;

// ---- The runtime API ---------------------------------------------------------------------------------
cudaError_t cudaGetLastError() {
  const cudaError_t e = g_last;
  g_last = g_sticky;  // a sticky error stays
  return e;
}
cudaError_t cudaPeekAtLastError() { return g_last; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define OB_EMU_NAME(x) \
  case x: return #x;
    OB_EMU_NAME(cudaSuccess)
    OB_EMU_NAME(cudaErrorInvalidValue)
    OB_EMU_NAME(cudaErrorMemoryAllocation)
    OB_EMU_NAME(cudaErrorInitializationError)
    OB_EMU_NAME(cudaErrorInvalidConfiguration)
    OB_EMU_NAME(cudaErrorInvalidPitchValue)
    OB_EMU_NAME(cudaErrorInvalidSymbol)
    OB_EMU_NAME(cudaErrorInvalidDevicePointer)
    OB_EMU_NAME(cudaErrorInvalidMemcpyDirection)
    OB_EMU_NAME(cudaErrorInvalidDeviceFunction)
    OB_EMU_NAME(cudaErrorInvalidDevice)
    OB_EMU_NAME(cudaErrorInvalidResourceHandle)
    OB_EMU_NAME(cudaErrorNotReady)
    OB_EMU_NAME(cudaErrorIllegalAddress)
    OB_EMU_NAME(cudaErrorLaunchOutOfResources)
    OB_EMU_NAME(cudaErrorLaunchTimeout)
    OB_EMU_NAME(cudaErrorAssert)
    OB_EMU_NAME(cudaErrorIllegalInstruction)
    OB_EMU_NAME(cudaErrorMisalignedAddress)
    OB_EMU_NAME(cudaErrorLaunchFailure)
    OB_EMU_NAME(cudaErrorUnknown)
#undef OB_EMU_NAME
  }
  return "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    default: return "unknown error";
  }
}

cudaError_t cudaDeviceSynchronize() { return g_sticky; }
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (g_sticky) return g_sticky;
  if (stream && stream != cudaStreamLegacy && stream != cudaStreamPerThread && !g_streams.count(stream))
    return api_error(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize: not a stream");
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  if (!stream) return api_error(cudaErrorInvalidValue, "cudaStreamCreate: null");
  static int next = 1;
  *stream = reinterpret_cast<cudaStream_t>(new StreamObject{next++});
  g_streams.insert(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!g_streams.erase(stream)) return api_error(cudaErrorInvalidResourceHandle, "cudaStreamDestroy: not a stream");
  delete reinterpret_cast<StreamObject*>(stream);
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return api_error(cudaErrorInvalidDevice, "cudaDeviceGetAttribute: device != 0");
  switch (attr) {  // an H100 SXM
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxBlockDimX: *value = 1024; break;
    case cudaDevAttrMaxBlockDimY: *value = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *value = 64; break;
    case cudaDevAttrMaxGridDimX: *value = 0x7fffffff; break;
    case cudaDevAttrMaxGridDimY: *value = 65535; break;
    case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = int(kDefaultShared); break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = 132; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = 228 * 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = int(kOptInShared); break;
    default: return api_error(cudaErrorInvalidValue, format("cudaDeviceGetAttribute: attribute %d not emulated", int(attr)));
  }
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (g_sticky) return g_sticky;
  *p = device_alloc(bytes, format("cudaMalloc #%d (%zu bytes)", ++g_malloc_count, bytes));
  return *p ? cudaSuccess : api_error(cudaErrorMemoryAllocation, "cudaMalloc");
}
cudaError_t cudaFree(void* p) {
  if (p) device_free(p);
  return g_sticky;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return memcpy_impl("cudaMemcpy", dst, src, bytes, kind, nullptr);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_impl("cudaMemcpyAsync", dst, src, bytes, kind, stream);
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) { return memset_impl("cudaMemset", p, value, bytes, nullptr); }
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  return memset_impl("cudaMemsetAsync", p, value, bytes, stream);
}

// ---- cuBLAS ------------------------------------------------------------------------------------------
cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  if (g_sticky) return CUBLAS_STATUS_NOT_INITIALIZED;
  *handle = reinterpret_cast<cublasHandle_t>(new Handle);
  g_handles.insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!g_handles.erase(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete reinterpret_cast<Handle*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!g_handles.count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<Handle*>(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (!g_handles.count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  *stream = reinterpret_cast<Handle*>(handle)->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t) {
  return g_handles.count(handle) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!g_handles.count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  return mode == CUBLAS_POINTER_MODE_HOST ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;  // only host alpha / beta emulated
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void*, size_t) {
  return g_handles.count(handle) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
const char* cublasGetStatusString(cublasStatus_t s) { return cublasGetStatusName(s); }

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType_t Atype, int lda, const void* B, cudaDataType_t Btype, int ldb, const void* beta,
                            void* C, cudaDataType_t Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return gemm("cublasGemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype, ldc, 0, 1,
              computeType);
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType_t Atype, int lda, long long strideA, const void* B,
                                          cudaDataType_t Btype, int ldb, long long strideB, const void* beta, void* C, cudaDataType_t Ctype,
                                          int ldc, long long strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return gemm("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
              Ctype, ldc, strideC, batchCount, computeType);
}
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const float* alpha,
                           const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc) {
  return gemm("cublasSgemm", handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F, ldb, 0, beta, C, CUDA_R_32F, ldc,
              0, 1, CUBLAS_COMPUTE_32F);
}
