// 14p_Ragged_Dot baseline: what a compiler plus the vendor BLAS (oneDNN at v4, OpenBLAS at v3) does with a ragged dot: one single-threaded SGEMM per
// (non-empty group, 256-column tile) of the output, the tiles spread over the threads dynamically,
// then zeros for any rows past the sum of the sizes. Measured at the cpu size on 2 threads, this is
// 1.4-2x faster than one OpenBLAS-threaded SGEMM per group (OpenBLAS splits a small group poorly and
// synchronises its threads once per group) and within a few % of one SGEMM over all M rows.
#include <opbench/kernel.h>
#include <opbench/vendor_sgemm.h>
#include <cstring>
#include <vector>

OB_DEFINE_ABI_VERSION()

extern "C" int32_t ob_run(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t G = call->inputs[1].shape[0], N = call->inputs[1].shape[2];
  const float* x = static_cast<const float*>(call->inputs[0].data);
  const float* W = static_cast<const float*>(call->inputs[1].data);
  const int32_t* sizes = static_cast<const int32_t*>(call->inputs[2].data);
  float* out = static_cast<float*>(call->outputs[0].data);
  std::vector<int64_t> start(size_t(G) + 1, 0);
  for (int64_t g = 0; g < G; ++g) {
    if (sizes[g] < 0 || start[g] + sizes[g] > M) return 1;  // group sizes must be ≥ 0 and sum to ≤ M
    start[g + 1] = start[g] + sizes[g];
  }
  const int64_t tile = 256, tiles = (N + tile - 1) / tile;
#pragma omp parallel for schedule(dynamic, 1) num_threads(call->num_threads)
  for (int64_t task = 0; task < G * tiles; ++task) {
    const int64_t g = task / tiles, n0 = (task % tiles) * tile, cols = N - n0 < tile ? N - n0 : tile;
    if (sizes[g] == 0) continue;
    ob_vendor_sgemm('N', 'N', int(sizes[g]), int(cols), int(K), 1.0f,
                x + start[g] * K, int(K), W + g * K * N + n0, int(N), 0.0f, out + start[g] * N + n0, int(N));
  }
  std::memset(out + start[G] * N, 0, size_t((M - start[G]) * N) * sizeof(float));
  return 0;
}
