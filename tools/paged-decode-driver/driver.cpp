// A scratch timing driver for 6p_Paged_Attention kernels, outside the harness: it dlopens one or more
// built kernels (.so), calls each in turn on NS input sets in rotation (so that kernels compared in one
// run share the inputs, their pages and the machine's moment) and prints each one's median call time
// and K/V bytes per second. It exists to separate arithmetic from memory in one kernel (the harness measures
// the workload as specified and cannot do that): WRAP=8 folds the page table onto 8 pages, so the
// caches sit in L2; THP=1 puts them on 2 MiB pages. The first NS calls are checked against a double
// reference on sampled (sequence, head) pairs. Not a benchmark of record by itself: figures it gives
// are quoted as "the scratch driver" in docs/measurements. See README.md for how to build and run it.
#include <opbench/kernel.h>

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

int64_t env_or(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

struct Shape {
  int64_t N, Hq, Hkv, D, PS, PPS;
  int64_t L() const { return PS * PPS; }
  int64_t cache_floats() const { return N * PPS * PS * Hkv * D; }
};

struct InputSet {
  std::vector<float> q, k, v;
  std::vector<int32_t> lens, pages, cu;
};

InputSet make_set(const Shape& s, std::mt19937& rng) {
  InputSet in;
  std::normal_distribution<float> normal;
  in.q.resize(s.N * s.Hq * s.D);
  for (auto* cache : {&in.k, &in.v}) {
    cache->reserve(s.cache_floats() + (1 << 21));
    if (std::getenv("THP")) {  // 2 MiB pages for the caches, from the first aligned byte
      const auto a = (reinterpret_cast<uintptr_t>(cache->data()) + (1 << 21) - 1) & ~uintptr_t((1 << 21) - 1);
      madvise(reinterpret_cast<void*>(a), size_t(s.cache_floats()) * 4, MADV_HUGEPAGE);
    }
    cache->resize(s.cache_floats());
  }
  for (auto* t : {&in.q, &in.k, &in.v})
    for (float& x : *t) x = normal(rng);
  // kv_lens uniform in [1, L] with the edges 1, PS, PS+1 and L (the workload's law, needs N >= 4).
  in.lens.resize(s.N);
  std::uniform_int_distribution<int> len(1, int(s.L()));
  for (auto& x : in.lens) x = len(rng);
  in.lens[0] = 1, in.lens[1] = int(s.PS), in.lens[2] = int(s.PS + 1), in.lens[3] = int(s.L());
  std::shuffle(in.lens.begin(), in.lens.end(), rng);
  in.pages.resize(s.N * s.PPS);
  for (int64_t i = 0; i < s.N * s.PPS; ++i) in.pages[i] = int32_t(i);
  std::shuffle(in.pages.begin(), in.pages.end(), rng);
  if (const int64_t wrap = env_or("WRAP", 0); wrap > 0)
    for (auto& p : in.pages) p = int32_t(p % wrap);
  in.cu.resize(s.N + 1);
  for (int64_t i = 0; i <= s.N; ++i) in.cu[i] = int32_t(i);
  return in;
}

// Largest |out - reference| over sampled (sequence, head) pairs, the reference in double.
double max_error(const Shape& s, const InputSet& in, const std::vector<float>& out) {
  double worst = 0;
  const int64_t G = s.Hq / s.Hkv;
  for (int64_t sq = 0; sq < s.N; sq += (s.N > 8 ? 5 : 1))
    for (int64_t h = 0; h < s.Hq; h += (s.Hq > 8 ? 7 : 1)) {
      const int64_t g = h / G, n = in.lens[sq];
      auto row = [&](const std::vector<float>& cache, int64_t t) {
        return cache.data() + ((int64_t(in.pages[sq * s.PPS + t / s.PS]) * s.PS + t % s.PS) * s.Hkv + g) * s.D;
      };
      std::vector<double> p(n);
      double mx = -1e300, sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        double dot = 0;
        for (int64_t d = 0; d < s.D; ++d) dot += double(in.q[(sq * s.Hq + h) * s.D + d]) * row(in.k, t)[d];
        p[t] = dot / std::sqrt(double(s.D));
        mx = std::max(mx, p[t]);
      }
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (int64_t d = 0; d < s.D; ++d) {
        double o = 0;
        for (int64_t t = 0; t < n; ++t) o += p[t] * row(in.v, t)[d];
        worst = std::max(worst, std::fabs(o / sum - out[(sq * s.Hq + h) * s.D + d]));
      }
    }
  return worst;
}

ob_tensor tensor(void* data, int32_t dtype, std::initializer_list<int64_t> shape) {
  ob_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = int32_t(shape.size());
  int i = 0;
  for (int64_t x : shape) t.shape[i++] = x;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s KERNEL.so [KERNEL.so ...] [THREADS]\n", argv[0]);
    return 2;
  }
  struct Kernel {
    std::string path;
    int32_t (*run)(const ob_call*);
    uint64_t (*workspace_bytes)(const ob_call*);
    void* workspace = nullptr;
    std::vector<double> ms;
  };
  std::vector<Kernel> kernels;
  int threads = 2;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg.find(".so") == std::string::npos) {
      threads = std::atoi(argv[a]);
      continue;
    }
    void* lib = dlopen(arg.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    kernels.push_back({arg, reinterpret_cast<int32_t (*)(const ob_call*)>(dlsym(lib, "ob_run")),
                       reinterpret_cast<uint64_t (*)(const ob_call*)>(dlsym(lib, "ob_workspace_bytes"))});
  }
  const Shape s{env_or("N", 32), env_or("HQ", 64), env_or("HKV", 8), env_or("D", 128), env_or("PS", 16), env_or("PPS", 128)};
  const int sets = int(env_or("NS", 3)), calls = std::max(int(env_or("IT", 30)), sets + 1);
  std::mt19937 rng(1);
  std::vector<InputSet> in;
  for (int i = 0; i < sets; ++i) in.push_back(make_set(s, rng));
  std::vector<float> out(s.N * s.Hq * s.D);
  for (int c = 0; c < calls; ++c)
    for (Kernel& kn : kernels) {
    InputSet& x = in[c % sets];
    const ob_tensor ins[6] = {tensor(x.q.data(), OB_F32, {s.N, s.Hq, s.D}),
                              tensor(x.k.data(), OB_F32, {s.N * s.PPS, s.PS, s.Hkv, s.D}),
                              tensor(x.v.data(), OB_F32, {s.N * s.PPS, s.PS, s.Hkv, s.D}),
                              tensor(x.lens.data(), OB_I32, {s.N}), tensor(x.pages.data(), OB_I32, {s.N, s.PPS}),
                              tensor(x.cu.data(), OB_I32, {s.N + 1})};
    const ob_tensor o = tensor(out.data(), OB_F32, {s.N, s.Hq, s.D});
    ob_call call{ins, 6, &o, 1, nullptr, 0, threads, nullptr};
    const uint64_t wb = kn.workspace_bytes ? kn.workspace_bytes(&call) : 0;
    if (!kn.workspace) kn.workspace = std::aligned_alloc(64, (wb + 127) / 64 * 64);
    call.workspace = kn.workspace;
    call.workspace_bytes = wb;
    const auto t0 = std::chrono::steady_clock::now();
    if (kn.run(&call) != 0) {
      std::fprintf(stderr, "%s: ob_run failed\n", kn.path.c_str());
      return 1;
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (c < sets) std::printf("%s, set %d: max |error| %.3g\n", kn.path.c_str(), c, max_error(s, x, out));
    else kn.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  double bytes = 0;  // K and V of the pages within each kv_len, averaged over the sets
  for (const auto& x : in)
    for (int32_t l : x.lens) bytes += 2.0 * double((l + s.PS - 1) / s.PS) * double(s.PS * s.Hkv * s.D) * 4;
  bytes /= sets;
  for (Kernel& kn : kernels) {
    std::sort(kn.ms.begin(), kn.ms.end());
    const double median = kn.ms[kn.ms.size() / 2];
    std::printf("%s: median %.3f ms, min %.3f ms; %.1f MB of K/V per call, %.1f GB/s at the median\n", kn.path.c_str(),
                median, kn.ms[0], bytes / 1e6, bytes / median / 1e6);
  }
  return 0;
}
