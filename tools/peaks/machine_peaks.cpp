// machine_peaks: measured compute and memory ceilings of this machine for opbench's CPU target.
//
// Build and run (from the repository root), at the instruction-set level the kernels are built at:
//   g++ -std=c++20 -O3 -march=x86-64-v4 -fopenmp tools/peaks/machine_peaks.cpp -o /tmp/machine_peaks   # AVX-512 rows too
//   g++ -std=c++20 -O3 -march=x86-64-v3 -fopenmp tools/peaks/machine_peaks.cpp -o /tmp/machine_peaks   # AVX2 rows only
//   /tmp/machine_peaks            # all usable cores (OMP_NUM_THREADS to change), 7 repetitions
//   /tmp/machine_peaks --reps 9 --mib 512
//
//   /tmp/machine_peaks --stat median   # rates as medians instead of the best repetition
//
// What it measures, rates as the best of --reps repetitions (latencies as their median):
//  - fp32 FMA throughput with AVX2 (vfmadd on ymm), one thread and all threads, for 4, 8, 12 and 14
//    independent accumulator chains (the 4- and 8-chain rows show what too few chains cost), and the
//    latency of one dependent FMA or add chain;
//  - streaming memory bandwidth on arrays of --mib MiB (default 256) each, one thread and all threads:
//    read (sum), copy (normal stores and streaming stores) and write (normal and streaming stores);
//  - what a gather or a masked load/store costs against contiguous loads and stores, data in L1;
//  - single-thread read bandwidth from data resident in L1, L2 and L3 (sizes from sysfs). The read loop
//    issues one vaddps per 32-byte load, so where the core retires only 2 vector adds per cycle (Zen 4/5)
//    the L1 and L2 rows show 2 loads per cycle, a lower bound on what those caches deliver.
// Bytes counted: read = bytes loaded; copy = bytes loaded + bytes stored; write = bytes stored. A normal
// store to a line not in cache also reads it first (write-allocate), which the counts do not include:
// that hidden traffic is why normal-store write/copy figures are lower than the streaming-store ones.
// Built at x86-64-v4 (opbench's default level on an AVX-512 host) it adds the zmm rows: FMA throughput and
// latency with 512-bit vectors, and the single-thread cache read rate with 64-byte loads. The load
// average at the start is printed: figures taken with other work on the machine are labelled so.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// From the first thread's start to the last one's end, each read by its own thread. The master's
// clock after the start barrier was wrong under load: with more runnable threads than cores it could
// start after the others had finished (the same bug was found and fixed in opbench calibrate).
double span(const std::vector<Clock::time_point>& starts, const std::vector<Clock::time_point>& ends) {
  return std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) - *std::min_element(starts.begin(), starts.end()))
      .count();
}

// Rates (GFLOP/s, GB/s) are reported as the best repetition by default, as STREAM and opbench
// calibrate do (a ceiling is what the machine can do, and interference only ever lowers a rate);
// --stat median gives the median. Latencies are always medians.
bool g_best_rates = true;
double rate(const std::vector<double>& v) { return g_best_rates ? *std::max_element(v.begin(), v.end()) : median(v); }

volatile float g_sink;  // keeps results alive

// ------------------------------------------------------------------------------------------------
// FMA throughput: CHAINS independent accumulators, each updated by one vfmadd231ps per step.
// acc = acc * m + c with m slightly below 1 keeps the values bounded and finite.
template <int CHAINS>
float fma_loop(int64_t steps) {
  __m256 acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.01f * float(i));
  const __m256 m = _mm256_set1_ps(0.9999f);
  const __m256 c = _mm256_set1_ps(1e-4f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < CHAINS; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
  }
  __m256 t = acc[0];
  for (int i = 1; i < CHAINS; ++i) t = _mm256_add_ps(t, acc[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, t);
  return out[0] + out[7];
}

// GFLOP/s of `threads` threads each running fma_loop<CHAINS>(steps); 1 FMA lane = 2 FLOPs.
template <int CHAINS>
double fma_gflops(int threads, int64_t steps) {
  float sink = 0;
  double t = 0;
  std::vector<Clock::time_point> starts(static_cast<size_t>(threads)), ends(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
#pragma omp barrier
    starts[size_t(omp_get_thread_num())] = Clock::now();
    sink += fma_loop<CHAINS>(steps);
    ends[size_t(omp_get_thread_num())] = Clock::now();
  }
  t = span(starts, ends);
  g_sink = sink;
  return double(threads) * double(steps) * CHAINS * 8 * 2 / t * 1e-9;
}

#if defined(__AVX512F__)
// The same with zmm (AVX-512F): 16 lanes per FMA.
template <int CHAINS>
float fma512_loop(int64_t steps) {
  __m512 acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.01f * float(i));
  const __m512 m = _mm512_set1_ps(0.9999f);
  const __m512 c = _mm512_set1_ps(1e-4f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 24
    for (int i = 0; i < CHAINS; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
  }
  __m512 t = acc[0];
  for (int i = 1; i < CHAINS; ++i) t = _mm512_add_ps(t, acc[i]);
  return _mm512_reduce_add_ps(t);
}

template <int CHAINS>
double fma512_gflops(int threads, int64_t steps) {
  float sink = 0;
  double t = 0;
  std::vector<Clock::time_point> starts(static_cast<size_t>(threads)), ends(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
#pragma omp barrier
    starts[size_t(omp_get_thread_num())] = Clock::now();
    sink += fma512_loop<CHAINS>(steps);
    ends[size_t(omp_get_thread_num())] = Clock::now();
  }
  t = span(starts, ends);
  g_sink = sink;
  return double(threads) * double(steps) * CHAINS * 16 * 2 / t * 1e-9;
}

double chain512_ns(int64_t steps, int reps) {
  std::vector<double> v;
  for (int r = 0; r < reps + 1; ++r) {
    __m512 x = _mm512_set1_ps(1.0f);
    const __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-4f);
    auto t0 = Clock::now();
    for (int64_t s = 0; s < steps; ++s) x = _mm512_fmadd_ps(x, m, c);
    const double t = seconds_since(t0);
    g_sink = _mm512_cvtss_f32(x);
    if (r > 0) v.push_back(t / double(steps) * 1e9);
  }
  return median(v);
}

// Read with 64-byte loads, eight chains (a multiple of 128 floats is read).
float read_sum512(const float* a, int64_t lo, int64_t hi) {
  __m512 s[8];
  for (int k = 0; k < 8; ++k) s[k] = _mm512_setzero_ps();
  for (int64_t i = lo; i + 128 <= hi; i += 128) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) s[k] = _mm512_add_ps(s[k], _mm512_load_ps(a + i + 16 * k));
  }
  for (int k = 1; k < 8; ++k) s[0] = _mm512_add_ps(s[0], s[k]);
  return _mm512_reduce_add_ps(s[0]);
}
#endif

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one.empty() ? "unknown" : one + " " + five + " " + fifteen;
}

// Latency of one dependent chain: each step needs the previous result. ADD selects vaddps, else vfmadd.
template <bool ADD>
double chain_ns(int64_t steps, int reps) {
  std::vector<double> v;
  for (int r = 0; r < reps + 1; ++r) {
    __m256 x = _mm256_set1_ps(1.0f);
    const __m256 m = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);
    auto t0 = Clock::now();
    for (int64_t s = 0; s < steps; ++s) x = ADD ? _mm256_add_ps(x, c) : _mm256_fmadd_ps(x, m, c);
    const double t = seconds_since(t0);
    g_sink = _mm256_cvtss_f32(x);
    if (r > 0) v.push_back(t / double(steps) * 1e9);
  }
  return median(v);
}

// ------------------------------------------------------------------------------------------------
// Memory kernels over [lo, hi) of n floats; each thread calls them on its own static share.
float read_sum(const float* a, int64_t lo, int64_t hi) {
  // Eight chains: enough that add latency never limits the load rate, even from L1.
  __m256 s[8];
  for (int k = 0; k < 8; ++k) s[k] = _mm256_setzero_ps();
  for (int64_t i = lo; i < hi; i += 64) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) s[k] = _mm256_add_ps(s[k], _mm256_load_ps(a + i + 8 * k));
  }
  for (int k = 1; k < 8; ++k) s[0] = _mm256_add_ps(s[0], s[k]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s[0]);
  return out[0] + out[3] + out[7];
}

void copy_normal(const float* a, float* b, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; i += 16) {
    _mm256_store_ps(b + i, _mm256_load_ps(a + i));
    _mm256_store_ps(b + i + 8, _mm256_load_ps(a + i + 8));
  }
}

void copy_stream(const float* a, float* b, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; i += 16) {
    _mm256_stream_ps(b + i, _mm256_load_ps(a + i));
    _mm256_stream_ps(b + i + 8, _mm256_load_ps(a + i + 8));
  }
  _mm_sfence();
}

void write_normal(float* b, int64_t lo, int64_t hi, float v) {
  const __m256 x = _mm256_set1_ps(v);
  for (int64_t i = lo; i < hi; i += 16) {
    _mm256_store_ps(b + i, x);
    _mm256_store_ps(b + i + 8, x);
  }
}

void write_stream(float* b, int64_t lo, int64_t hi, float v) {
  const __m256 x = _mm256_set1_ps(v);
  for (int64_t i = lo; i < hi; i += 16) {
    _mm256_stream_ps(b + i, x);
    _mm256_stream_ps(b + i + 8, x);
  }
  _mm_sfence();
}

// Static share of n floats for thread t of T, in multiples of 64 floats (n is a multiple of 64·T).
void share(int64_t n, int t, int T, int64_t* lo, int64_t* hi) {
  const int64_t chunk = n / T / 64 * 64;
  *lo = chunk * t;
  *hi = t == T - 1 ? n : *lo + chunk;
}

// Runs body(lo, hi) on `threads` threads over n floats; returns wall seconds from a common start.
double timed_parallel(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  std::vector<Clock::time_point> starts(static_cast<size_t>(threads)), ends(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    int64_t lo, hi;
    share(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
#pragma omp barrier
    starts[size_t(omp_get_thread_num())] = Clock::now();
    body(lo, hi);
    ends[size_t(omp_get_thread_num())] = Clock::now();
  }
  return span(starts, ends);
}

float* alloc_floats(int64_t n) {
  void* p = std::aligned_alloc(4096, size_t(n) * sizeof(float));
  if (!p) {
    std::fprintf(stderr, "cannot allocate %lld floats\n", (long long)n);
    std::exit(1);
  }
  return static_cast<float*>(p);
}

int64_t cache_bytes(int level) {
  for (int idx = 0; idx < 8; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::ifstream lv(dir + "level"), ty(dir + "type"), sz(dir + "size");
    int l = 0;
    std::string type, size;
    if (!(lv >> l) || !(ty >> type) || !(sz >> size)) break;
    if (l != level || type == "Instruction") continue;
    int64_t v = std::atoll(size.c_str());
    if (size.back() == 'K') v <<= 10;
    if (size.back() == 'M') v <<= 20;
    return v;
  }
  return 0;
}

// ------------------------------------------------------------------------------------------------
// L1-resident access patterns, one thread: 8 floats per access, 8 independent sum chains.
enum class Access { contiguous, masked, gather, scalar };

template <Access KIND>
float access_loop(const float* table, const int32_t* idx, int64_t passes) {
  __m256 s[8];
  for (int k = 0; k < 8; ++k) s[k] = _mm256_setzero_ps();
  for (int64_t p = 0; p < passes; ++p) {
    for (int j = 0; j < 4096; j += 64) {
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const int32_t* q = idx + j + 8 * k;
        __m256 v;
        if constexpr (KIND == Access::contiguous) {
          v = _mm256_loadu_ps(table + j + 8 * k);
        } else if constexpr (KIND == Access::masked) {
          v = _mm256_maskload_ps(table + j + 8 * k, _mm256_setr_epi32(-1, -1, -1, -1, -1, 0, 0, 0));
        } else if constexpr (KIND == Access::gather) {
          v = _mm256_i32gather_ps(table, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)), 4);
        } else {
          v = _mm256_setr_ps(table[q[0]], table[q[1]], table[q[2]], table[q[3]], table[q[4]], table[q[5]],
                             table[q[6]], table[q[7]]);
        }
        s[k] = _mm256_add_ps(s[k], v);
      }
      asm volatile("" ::: "memory");
    }
  }
  for (int k = 1; k < 8; ++k) s[0] = _mm256_add_ps(s[0], s[k]);
  return _mm256_cvtss_f32(s[0]);
}

// Stores of 8 floats into an L1-resident buffer: plain or masked (5 of 8 lanes).
template <bool MASKED>
double store_ns(float* buf, int reps) {
  const int64_t passes = 20000;
  const __m256 v = _mm256_set1_ps(1.0f);
  const __m256i m = _mm256_setr_epi32(-1, -1, -1, -1, -1, 0, 0, 0);
  std::vector<double> out;
  for (int r = 0; r < reps + 1; ++r) {
    auto t0 = Clock::now();
    for (int64_t p = 0; p < passes; ++p) {
      for (int j = 0; j < 4096; j += 8) {
        if constexpr (MASKED) _mm256_maskstore_ps(buf + j, m, v);
        else _mm256_storeu_ps(buf + j, v);
      }
      asm volatile("" ::: "memory");
    }
    const double t = seconds_since(t0);
    if (r > 0) out.push_back(t / (double(passes) * 512) * 1e9);
  }
  return median(out);
}

template <Access KIND>
double access_ns(const float* table, const int32_t* idx, int reps) {
  const int64_t passes = 20000;
  std::vector<double> v;
  for (int r = 0; r < reps + 1; ++r) {
    auto t0 = Clock::now();
    g_sink = access_loop<KIND>(table, idx, passes);
    const double t = seconds_since(t0);
    if (r > 0) v.push_back(t / (double(passes) * 512) * 1e9);
  }
  return median(v);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  int64_t mib = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--stat")) g_best_rates = std::strcmp(argv[i + 1], "median") != 0;
    if (!std::strcmp(argv[i], "--mib")) mib = std::max<int64_t>(1, std::atoll(argv[i + 1]));
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured, even into a file
  const int T = omp_get_max_threads();
  std::printf("machine_peaks: %d thread(s) for the all-thread rows, rates the %s of %d repetitions, arrays of %lld MiB\n", T,
              g_best_rates ? "best" : "median", reps, (long long)mib);
  std::printf("load average at start: %s (over ~0.2 per core, the figures are under load: not figures of record)\n\n",
              load_average().c_str());

  // ---- FMA ----
  const int64_t steps = 100'000'000;  // ~0.1-0.3 s per measurement
  std::printf("fp32 FMA (AVX2 ymm, 2 FLOP per lane)       1 thread GFLOP/s   %d threads GFLOP/s\n", T);
  auto fma_row = [&](const char* name, auto fn) {
    std::vector<double> one, all;
    fn(1, steps / 10);  // warm-up (clock ramp)
    for (int r = 0; r < reps; ++r) one.push_back(fn(1, steps));
    for (int r = 0; r < reps; ++r) all.push_back(fn(T, steps));
    std::printf("  %-40s %10.1f %20.1f\n", name, rate(one), rate(all));
  };
  fma_row("4 independent accumulators", fma_gflops<4>);
  fma_row("8 independent accumulators", fma_gflops<8>);
  fma_row("12 independent accumulators", fma_gflops<12>);
  double peak_one = 0;
  {
    std::vector<double> one;
    for (int r = 0; r < reps; ++r) one.push_back(fma_gflops<14>(1, steps));
    peak_one = rate(one);
  }
  fma_row("14 independent accumulators", fma_gflops<14>);
  // The clock implied by the 1-thread peak, if the core retires 2 ymm FMAs (32 FLOP) per cycle.
  const double ghz = peak_one / 32.0;
  const double fma_lat = chain_ns<false>(steps / 4, reps), add_lat = chain_ns<true>(steps / 4, reps);
  std::printf("\nlatency of a dependent chain, 1 thread            ns   cycles at %.2f GHz (= 1-thread peak / 32 FLOP)\n", ghz);
  std::printf("  %-40s %8.3f %8.1f\n", "vfmadd (ymm)", fma_lat, fma_lat * ghz);
  std::printf("  %-40s %8.3f %8.1f\n", "vaddps (ymm)", add_lat, add_lat * ghz);
#if defined(__AVX512F__)
  std::printf("\nfp32 FMA (AVX-512 zmm, 2 FLOP per lane)    1 thread GFLOP/s   %d threads GFLOP/s\n", T);
  fma_row("8 independent accumulators", fma512_gflops<8>);
  fma_row("12 independent accumulators", fma512_gflops<12>);
  fma_row("16 independent accumulators", fma512_gflops<16>);
  fma_row("24 independent accumulators", fma512_gflops<24>);
  const double fma512_lat = chain512_ns(steps / 4, reps);
  std::printf("  %-40s %8.3f ns %6.1f cycles\n", "latency of a dependent vfmadd (zmm)", fma512_lat, fma512_lat * ghz);
#else
  std::printf("\n(built without AVX-512: build with -march=x86-64-v4 for the zmm rows)\n");
#endif

  // ---- DRAM bandwidth ----
  const int64_t n = mib * (1 << 20) / int64_t(sizeof(float)) / (64 * 64) * (64 * 64);  // a multiple of 64 floats per thread
  float* a = alloc_floats(n);
  float* b = alloc_floats(n);
  // First touch in parallel, with the same static shares the measurements use.
  timed_parallel(T, n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) a[i] = float(i & 1023) * 1e-3f;
    std::memset(b + lo, 0, size_t(hi - lo) * sizeof(float));
  });
  const double bytes = double(n) * sizeof(float);
  std::printf("\nmemory bandwidth, %lld MiB per array (GB/s = 1e9 B/s)   1 thread GB/s   %d threads GB/s\n",
              (long long)mib, T);
  auto mem_row = [&](const char* name, double traffic, const std::function<void(int64_t, int64_t)>& body) {
    std::vector<double> one, all;
    timed_parallel(1, n, body);  // warm-up
    for (int r = 0; r < reps; ++r) one.push_back(traffic / timed_parallel(1, n, body) * 1e-9);
    for (int r = 0; r < reps; ++r) all.push_back(traffic / timed_parallel(T, n, body) * 1e-9);
    std::printf("  %-50s %10.1f %16.1f\n", name, rate(one), rate(all));
  };
  float sink = 0;
  mem_row("read (sum of a)", bytes, [&](int64_t lo, int64_t hi) {
    float s = read_sum(a, lo, hi);
#pragma omp atomic
    sink += s;
  });
  mem_row("copy b = a, normal stores (2 x bytes)", 2 * bytes, [&](int64_t lo, int64_t hi) { copy_normal(a, b, lo, hi); });
  mem_row("copy b = a, streaming stores (2 x bytes)", 2 * bytes, [&](int64_t lo, int64_t hi) { copy_stream(a, b, lo, hi); });
  mem_row("write b = c, normal stores", bytes, [&](int64_t lo, int64_t hi) { write_normal(b, lo, hi, 1.0f); });
  mem_row("write b = c, streaming stores", bytes, [&](int64_t lo, int64_t hi) { write_stream(b, lo, hi, 2.0f); });

  // ---- cache-resident read bandwidth, one thread ----
  std::printf("\nread bandwidth from cache, 1 thread                                          GB/s\n");
  const int levels[] = {1, 2, 3};
#if defined(__AVX512F__)
  const int widths[] = {32, 64};  // bytes per load: ymm, zmm
#else
  const int widths[] = {32};
#endif
  for (int width : widths)
  for (int level : levels) {
    const int64_t cb = cache_bytes(level);
    if (cb == 0) continue;
    // Half the cache, but never more than the array holds (a small --mib with a large L3).
    const int64_t m = std::min<int64_t>(n / 128 * 128, std::max<int64_t>(128, cb / 2 / int64_t(sizeof(float)) / 128 * 128));
    const int64_t passes = std::max<int64_t>(1, (int64_t(1) << 31) / (m * int64_t(sizeof(float))));
    std::vector<double> v;
    for (int r = 0; r < reps + 1; ++r) {
      auto t0 = Clock::now();
      float s = 0;
      for (int64_t p = 0; p < passes; ++p) {
#if defined(__AVX512F__)
        s += width == 64 ? read_sum512(a, 0, m) : read_sum(a, 0, m);
#else
        s += read_sum(a, 0, m);
#endif
        asm volatile("" ::: "memory");  // the compiler may not merge the passes into one
      }
      const double t = seconds_since(t0);
      sink += s;
      if (r > 0) v.push_back(double(passes) * double(m) * sizeof(float) / t * 1e-9);
    }
    char label[96];
    std::snprintf(label, sizeof label, "L%d (%lld KiB, working set %lld KiB), %d-byte loads", level,
                  (long long)(cb >> 10), (long long)(m * int64_t(sizeof(float)) >> 10), width);
    std::printf("  %-66s %10.1f\n", label, rate(v));
  }

  // ---- gather and masked accesses against contiguous ones, data in L1 ----
  {
    float* table = alloc_floats(4096);  // page-aligned, like opbench's tensors
    float* stores = alloc_floats(4096);
    std::vector<int32_t> idx(4096);
    for (int i = 0; i < 4096; ++i) {
      table[i] = float(i);
      idx[size_t(i)] = int32_t((uint32_t(i) * 2654435761u) % 4096u);  // a scrambled permutation
    }
    const double c = access_ns<Access::contiguous>(table, idx.data(), reps);
    const double mk = access_ns<Access::masked>(table, idx.data(), reps);
    const double g = access_ns<Access::gather>(table, idx.data(), reps);
    const double sc = access_ns<Access::scalar>(table, idx.data(), reps);
    std::printf("\n8 floats from/to an L1-resident table, 1 thread         ns per 8 floats   x contiguous load\n");
    std::printf("  %-52s %10.3f %14.1f\n", "contiguous _mm256_loadu_ps", c, 1.0);
    std::printf("  %-52s %10.3f %14.1f\n", "_mm256_maskload_ps (5 of 8 lanes)", mk, mk / c);
    std::printf("  %-52s %10.3f %14.1f\n", "_mm256_i32gather_ps (random indices)", g, g / c);
    std::printf("  %-52s %10.3f %14.1f\n", "8 scalar loads + _mm256_setr_ps (same indices)", sc, sc / c);
    const double st = store_ns<false>(stores, reps);
    const double ms = store_ns<true>(stores, reps);
    std::printf("  %-52s %10.3f %14.1f\n", "_mm256_storeu_ps", st, st / c);
    std::printf("  %-52s %10.3f %14.1f\n", "_mm256_maskstore_ps (5 of 8 lanes)", ms, ms / c);
    std::free(table);
    std::free(stores);
  }
  g_sink = sink + b[n / 3];
  std::free(a);
  std::free(b);
  return 0;
}
