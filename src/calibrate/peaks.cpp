#include "calibrate/peaks.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace opbench {
namespace {

using Clock = std::chrono::steady_clock;

// A ceiling is what the machine can do: other processes, interrupts and a cold clock only ever slow
// a repetition down, so the fastest repetition is the best estimate (tools/peaks reports medians;
// on a quiet machine the two agree within a few percent).
double best_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// Results pass through here so the compiler cannot drop the loops that produce them.
std::atomic<float> g_sink{0};
void consume(float v) { g_sink.store(g_sink.load(std::memory_order_relaxed) + v, std::memory_order_relaxed); }

// Twelve independent accumulators: with 4-cycle FMA latency and two FMA pipes, 8 chains are the
// minimum to fill them and 12 leave a margin (machine.md measures 12 chains at the peak).
constexpr int kChains = 12;

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t steps) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.01f * float(i));
  const __m256 m = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);  // keeps values bounded
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  return _mm256_cvtss_f32(acc[0]);
}

__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t steps) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.01f * float(i));
  const __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-4f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  return _mm512_reduce_add_ps(acc[0]);
}

int vector_lanes(const std::string& isa) {
  if (isa == "x86-64-v3") return 8;
  if (isa == "x86-64-v4") return 16;
  throw std::invalid_argument("unknown ISA level '" + isa + "' (known: x86-64-v3, x86-64-v4)");
}

// One parallel repetition: the wall seconds from the common start to the last thread's end, and
// the most CPU time any thread spent on its share. On a machine where other work competes for the
// cores a thread waits for one part of its share; its CPU clock does not count the waiting, so the
// busiest thread's CPU time is what the repetition would have taken with the cores to itself.
struct ParallelTiming {
  double wall = 0, busiest_cpu = 0;
  // The seconds a ceiling is computed from, and the share of the cores the threads got.
  double seconds() const { return busiest_cpu > 0 ? std::min(wall, busiest_cpu) : wall; }
  double cpu_share() const { return wall > 0 && busiest_cpu > 0 ? std::min(1.0, busiest_cpu / wall) : 1.0; }
};

double thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Runs body(thread index) on `threads` threads released together. Threads are created before the
// clock starts.
ParallelTiming timed_parallel(int threads, const std::function<void(int)>& body) {
  // Each thread reads the clock around its own share, and the figure is the first start to the last
  // end. A clock read by the coordinating thread after the start barrier was wrong under load: with
  // threads + 1 runnable on as many cores, it could be scheduled only after the workers had finished,
  // and a 64 MiB read then "took" microseconds (calibrate reported 38,000 GB/s under ctest -j2).
  std::barrier start(threads);
  std::vector<Clock::time_point> starts(static_cast<size_t>(threads)), ends(static_cast<size_t>(threads));
  std::vector<double> cpu(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      starts[size_t(t)] = Clock::now();
      const double cpu0 = thread_cpu_now();
      body(t);
      cpu[size_t(t)] = thread_cpu_now() - cpu0;
      ends[size_t(t)] = Clock::now();
    });
  for (auto& th : pool) th.join();
  const auto first = *std::min_element(starts.begin(), starts.end());
  const auto last = *std::max_element(ends.begin(), ends.end());
  return {std::chrono::duration<double>(last - first).count(), *std::max_element(cpu.begin(), cpu.end())};
}

// The share of the cores each repetition got, for the profile to show.
void note_share(std::vector<double>* shares, const ParallelTiming& t) {
  if (shares) shares->push_back(t.cpu_share());
}

// ---- streaming kernels over [lo, hi) floats; lo and hi are multiples of 64 ----
__attribute__((target("avx2"))) float read_sum(const float* a, int64_t lo, int64_t hi) {
  __m256 s[8];
  for (int k = 0; k < 8; ++k) s[k] = _mm256_setzero_ps();
  for (int64_t i = lo; i < hi; i += 64) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) s[k] = _mm256_add_ps(s[k], _mm256_load_ps(a + i + 8 * k));
  }
  for (int k = 1; k < 8; ++k) s[0] = _mm256_add_ps(s[0], s[k]);
  return _mm256_cvtss_f32(s[0]);
}

// The cache rows at x86-64-v4 read with 64-byte loads, as a kernel built at that level does: with
// 32-byte loads the L1 row is the core's load-port limit for ymm (209 against 323 GB/s with zmm on
// the Xeon of docs/measurements/2026-12-02-timing-protocol.md, tools/peaks).
__attribute__((target("avx512f"))) float read_sum512(const float* a, int64_t lo, int64_t hi) {
  // Eight independent sums (two loads a cycle at the add's 4-cycle latency), 128 floats a step.
  __m512 s[8];
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) s[k] = _mm512_setzero_ps();
  int64_t i = lo;
  for (; i + 128 <= hi; i += 128) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) s[k] = _mm512_add_ps(s[k], _mm512_load_ps(a + i + 16 * k));
  }
  // The last 64 floats, if any, into a sum of their own. Every loop over s[] is unrolled, or s[] stays
  // in memory, and the spills and reloads around every call cost ~15% of the L1 figure (a 24 KiB
  // pass is only ~200 cycles).
  __m512 rest = _mm512_setzero_ps();
  for (; i < hi; i += 16) rest = _mm512_add_ps(rest, _mm512_load_ps(a + i));
#pragma GCC unroll 8
  for (int k = 1; k < 8; ++k) s[0] = _mm512_add_ps(s[0], s[k]);
  s[0] = _mm512_add_ps(s[0], rest);
  return _mm512_cvtss_f32(s[0]);
}

__attribute__((target("avx2"))) void copy_kernel(const float* a, float* b, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; i += 16) {
    _mm256_store_ps(b + i, _mm256_load_ps(a + i));
    _mm256_store_ps(b + i + 8, _mm256_load_ps(a + i + 8));
  }
}

__attribute__((target("avx2,fma"))) void triad_kernel(float* a, const float* b, const float* c, int64_t lo, int64_t hi) {
  const __m256 s = _mm256_set1_ps(0.5f);
  for (int64_t i = lo; i < hi; i += 16) {
    _mm256_store_ps(a + i, _mm256_fmadd_ps(s, _mm256_load_ps(c + i), _mm256_load_ps(b + i)));
    _mm256_store_ps(a + i + 8, _mm256_fmadd_ps(s, _mm256_load_ps(c + i + 8), _mm256_load_ps(b + i + 8)));
  }
}

void share(int64_t n, int t, int threads, int64_t* lo, int64_t* hi) {
  const int64_t chunk = n / threads / 64 * 64;
  *lo = chunk * t;
  *hi = t == threads - 1 ? n : *lo + chunk;
}

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using FloatArray = std::unique_ptr<float[], AlignedFree>;

FloatArray allocate(int64_t n) {
  void* p = std::aligned_alloc(4096, size_t(n) * sizeof(float));
  if (!p) throw std::bad_alloc();
  return FloatArray(static_cast<float*>(p));
}

size_t data_cache_bytes(int level) {
  for (int idx = 0; idx < 8; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::ifstream lv(dir + "level"), ty(dir + "type"), sz(dir + "size");
    int l = 0;
    std::string type, size;
    if (!(lv >> l) || !(ty >> type) || !(sz >> size)) break;
    if (l != level || type == "Instruction") continue;
    size_t v = std::strtoull(size.c_str(), nullptr, 10);
    if (size.back() == 'K') v <<= 10;
    if (size.back() == 'M') v <<= 20;
    return v;
  }
  return 0;
}

}  // namespace

size_t streaming_array_bytes(const PeakOptions& o) {
  // Each array at least `llc_multiple` times the last-level cache, or part of every pass is served
  // from it: a 64 MiB array on a host with 260 MiB of L3 measured the L3, not the memory. At most a
  // sixth of the memory, for the three arrays of triad with room beside them.
  size_t llc = 0;
  for (int level = 1; level <= 4; ++level) llc = std::max(llc, data_cache_bytes(level));
  size_t bytes = std::max(o.array_bytes, llc * size_t(std::max(1, o.llc_multiple)));
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) bytes = std::min(bytes, std::max(o.array_bytes, size_t(pages) * size_t(page) / 6));
  return bytes / 4096 * 4096;
}

PeakOptions PeakOptions::quick(const std::string& isa_level) {
  PeakOptions o;
  o.isa_level = isa_level;
  o.repetitions = 3;
  o.fma_seconds = 0.05;
  o.array_bytes = size_t(64) << 20;  // the least; streaming_array_bytes raises it to twice the L3
  o.llc_multiple = 2;
  o.cache_levels = false;
  return o;
}

double BandwidthFigures::best() const { return std::max({read, copy, triad}); }

bool isa_level_supported(const std::string& isa_level) {
  __builtin_cpu_init();
  if (isa_level == "x86-64-v3") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa_level == "x86-64-v4") return __builtin_cpu_supports("avx512f");
  return false;
}

double measure_fma_gflops(int threads, const PeakOptions& o, std::vector<double>* cpu_share) {
  const int lanes = vector_lanes(o.isa_level);
  if (!isa_level_supported(o.isa_level)) throw std::invalid_argument("this CPU cannot run " + o.isa_level);
  auto loop = [&](int64_t steps) { return lanes == 16 ? fma_loop_avx512(steps) : fma_loop_avx2(steps); };
  // Size the loop from a short single-thread probe so each repetition lasts about fma_seconds,
  // after the probe has also brought the clock up from idle.
  int64_t steps = 1 << 20;
  for (;;) {
    const auto t0 = Clock::now();
    consume(loop(steps));
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0.02 || steps > (int64_t(1) << 34)) {
      steps = std::max<int64_t>(1 << 16, int64_t(double(steps) * o.fma_seconds / std::max(s, 1e-6)));
      break;
    }
    steps *= 4;
  }
  std::vector<double> rates;
  for (int r = 0; r < std::max(1, o.repetitions); ++r) {
    const ParallelTiming t = timed_parallel(threads, [&](int) { consume(loop(steps)); });
    note_share(cpu_share, t);
    rates.push_back(double(threads) * double(steps) * kChains * lanes * 2 / t.seconds() * 1e-9);  // an FMA lane is 2 FLOP
  }
  return best_of(rates);
}

BandwidthFigures measure_bandwidth(int threads, const PeakOptions& o, std::vector<double>* cpu_share) {
  const int64_t quantum = int64_t(64) * std::max(1, threads);
  const int64_t n = std::max<int64_t>(quantum, int64_t(streaming_array_bytes(o) / sizeof(float)) / quantum * quantum);
  FloatArray a = allocate(n), b = allocate(n), c = allocate(n);
  // First touch by the threads that use each share, so pages sit where they are read.
  timed_parallel(threads, [&](int t) {
    int64_t lo, hi;
    share(n, t, threads, &lo, &hi);
    for (int64_t i = lo; i < hi; ++i) a[i] = float(i & 1023) * 1e-3f;
    std::memset(b.get() + lo, 0, size_t(hi - lo) * sizeof(float));
    for (int64_t i = lo; i < hi; ++i) c[i] = 1.0f;
  });
  const double bytes = double(n) * sizeof(float);
  auto rate = [&](double traffic, const std::function<void(int64_t, int64_t)>& body) {
    auto run = [&] {
      return timed_parallel(threads, [&](int t) {
        int64_t lo, hi;
        share(n, t, threads, &lo, &hi);
        body(lo, hi);
      });
    };
    run();  // warm-up: page tables, clocks
    std::vector<double> v;
    for (int r = 0; r < std::max(1, o.repetitions); ++r) {
      const ParallelTiming t = run();
      note_share(cpu_share, t);
      v.push_back(traffic / t.seconds() * 1e-9);
    }
    return best_of(v);
  };
  BandwidthFigures f;
  f.read = rate(bytes, [&](int64_t lo, int64_t hi) { consume(read_sum(a.get(), lo, hi)); });
  f.copy = rate(2 * bytes, [&](int64_t lo, int64_t hi) { copy_kernel(a.get(), b.get(), lo, hi); });
  f.triad = rate(3 * bytes, [&](int64_t lo, int64_t hi) { triad_kernel(b.get(), a.get(), c.get(), lo, hi); });
  return f;
}

std::vector<CacheBandwidth> measure_cache_bandwidth(const PeakOptions& o) {
  std::vector<CacheBandwidth> out;
  const bool wide = vector_lanes(o.isa_level) == 16 && isa_level_supported(o.isa_level);
  for (int level = 1; level <= 3; ++level) {
    const size_t cache = data_cache_bytes(level);
    if (cache == 0) continue;
    const int64_t m = std::max<int64_t>(64, int64_t(cache / 2 / sizeof(float)) / 64 * 64);
    FloatArray a = allocate(m);
    for (int64_t i = 0; i < m; ++i) a[i] = 1.0f;
    const int64_t passes = std::max<int64_t>(1, (int64_t(1) << 31) / (m * int64_t(sizeof(float))));  // 2 GiB a repetition, as tools/peaks
    std::vector<double> v;
    for (int r = 0; r < std::max(1, o.repetitions) + 1; ++r) {
      const auto t0 = Clock::now();
      const double cpu0 = thread_cpu_now();
      float s = 0;
      for (int64_t p = 0; p < passes; ++p) {
        s += wide ? read_sum512(a.get(), 0, m) : read_sum(a.get(), 0, m);
        asm volatile("" ::: "memory");  // one pass per iteration: no merging
      }
      // As the parallel figures: the CPU time, which waiting for a core does not count.
      const ParallelTiming timing{std::chrono::duration<double>(Clock::now() - t0).count(), thread_cpu_now() - cpu0};
      const double t = timing.seconds();
      consume(s);
      if (r > 0) v.push_back(double(passes) * double(m) * sizeof(float) / t * 1e-9);
    }
    out.push_back({level, cache, size_t(m) * sizeof(float), best_of(v)});
  }
  return out;
}

}  // namespace opbench
