// Work the parent spreads over plain threads while both workers are frozen (input generation,
// poisoning, hashing, eviction, output comparison). Plain threads, not OpenMP: an OpenMP pool in the
// parent would keep spinning on a core that a worker needs while it is being timed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace opbench {

// fn(index, worker) for every index in [0, count), on min(threads, count) threads; worker k takes
// indexes k, k + threads, ... (worker 0 is the calling thread), so per-worker scratch can be indexed
// by `worker`.
template <class Fn>
void parallel_for(size_t count, int threads, Fn&& fn) {
  const size_t workers = std::min(count, size_t(std::max(1, threads)));
  auto run = [&](size_t worker) {
    for (size_t i = worker; i < count; i += workers) fn(i, worker);
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(run, w);
  if (workers > 0) run(0);
  for (auto& th : pool) th.join();
}

}  // namespace opbench
