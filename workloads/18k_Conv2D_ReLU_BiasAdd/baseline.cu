// 18k_Conv2D_ReLU_BiasAdd baseline (cuda): out = relu(conv2d(x, W) + conv_bias) + bias, 3×3 VALID
// cross-correlation, stride 1, NCHW / OIHW.
// Estimate (full, N=128 Cin=64 Cout=128 128×128; 650 TFLOP/s, 3.5 TB/s): 0.300 TFLOP 0.46 ms + 0.79 GB 0.23 ms ≈ 0.69 ms; XLA 1.21 ms (0.57x).
// Composition, as XLA on a GPU: XLA runs the convolution in cuDNN, an implicit GEMM that never stores the
// 9x-expanded input, with the bias, ReLU and bias fused after it. Here the same: one implicit-GEMM kernel
// (C[o, q] = Σ_k W[o, k]·x[q + off(k)] over k = (ci, dy, dx) and the output positions q, bf16 tensor-core
// WMMA with fp32 accumulation, the x operand gathered straight from NCHW through a per-k offset table) whose
// epilogue adds conv_bias, applies the ReLU, adds bias (fp32) and writes `out` in NCHW; two tiny kernels
// before it pad W to the tile grid and build the offset table. Doubt: the 650 TFLOP/s of the estimate is
// cuBLAS's wgmma rate; a WMMA kernel like this one reaches perhaps 40-60% of it (≈ 1.0-1.4 ms here), not
// measured. (An im2col + cuBLAS version, written and read 4.7 GB of im2col buffer: ≈ 2.3 ms.)
#include <opbench/cuda_util.cuh>
#include <mma.h>

OB_DEFINE_ABI_VERSION()

namespace wmma = nvcuda::wmma;

static constexpr int kThreads = 256;
// Implicit GEMM tile: kBM output channels (Cout = 128 at the full size) × kBN output positions × kBK reduction
// steps per stage, 8 warps as 2 (channels) × 4 (positions), each warp (kBM / 2) × 32, i.e. kFragM × 2 WMMA
// 16×16 accumulators. Per stage each thread loads kBM / 8 elements of the weight tile (16-byte vectors) and
// 16 of the gathered x tile. Shared-memory rows are padded by 8 elements against bank conflicts (row strides
// stay multiples of 16 bytes, as WMMA needs).
static constexpr int kBM = 128, kBN = 128, kBK = 32;
static constexpr int kFragM = kBM / 32, kAVecs = kBM / 64;  // accumulator rows per warp; A vectors per thread
static constexpr int kLdA = kBK + 8, kLdB = kBN + 8;
static_assert((kBM == 64 || kBM == 128) && kThreads == 2 * kBN && kBK == 32, "the load mapping below");

static uint64_t align256(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// Wp[o, k] = W[o, k] for o < Cout and k < Kc, 0 elsewhere: W (Cout, Kc) padded to (Mp, Kp), multiples of
// the tile, so that the A tiles need no bounds checks (the zero columns k >= Kc cancel whatever x values the
// offset table points at there). A grid-stride loop.
static __global__ void pad_weight_kernel(const ob_bf16* w, ob_bf16* wp, int64_t Cout, int64_t Kc, int64_t Mp, int64_t Kp) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < Mp * Kp; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i / Kp, k = i % Kp;
    wp[i] = o < Cout && k < Kc ? w[o * Kc + k] : __float2bfloat16_rn(0.0f);
  }
}

// koff[k] = ci·H·W + dy·W + dx for k = (ci·K + dy)·K + dx < Kc (W's OIHW order): where the k-th operand of an
// output position sits relative to the position's own input offset; 0 for the pad steps k >= Kc.
static __global__ void offset_kernel(int32_t* koff, int64_t Kc, int64_t Kp, int64_t H, int64_t W, int64_t K) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < Kp; k += int64_t(gridDim.x) * blockDim.x)
    koff[k] = k < Kc ? int32_t((k / (K * K)) * H * W + ((k / K) % K) * W + k % K) : 0;
}

// The implicit GEMM: block (blockIdx.x, blockIdx.y) computes channels [m0, m0 + kBM) × flat output positions
// [q0, q0 + kBN), q = (n·OH + y)·OW + xo over the whole batch. Each stage stages a kBM × kBK tile of Wp and a
// kBK × kBN tile of the gathered x in shared memory (the next stage's global loads are in flight in registers
// while the current one is multiplied). Epilogue: each warp stages one 16×16 accumulator at a time in shared
// memory and writes relu(c + conv_bias[o]) + bias[o] to out[n, o, y, xo].
static __global__ void __launch_bounds__(kThreads, 2) conv_kernel(const ob_bf16* x, const ob_bf16* wp, const int32_t* koff,
                                                               const ob_bf16* conv_bias, const ob_bf16* bias, ob_bf16* out, int64_t Cout,
                                                               int64_t Cin, int64_t H, int64_t W, int64_t OW, int64_t P, int64_t QT,
                                                               int64_t Kp) {
  __shared__ __align__(128) ob_bf16 As[2][kBM * kLdA];
  __shared__ __align__(128) ob_bf16 Bs[2][kBK * kLdB];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp >> 2, wn = warp & 3;  // the warp's kBM / 2 channels and 32 positions in the tile
  const int64_t m0 = blockIdx.y * int64_t(kBM), q0 = blockIdx.x * int64_t(kBN);

  // This thread's A loads: 8·kAVecs consecutive k of row arow (kAVecs 16-byte vectors).
  const int arow = tid / (4 / kAVecs), acol = (tid % (4 / kAVecs)) * 8 * kAVecs;
  const ob_bf16* ap = wp + (m0 + arow) * Kp + acol;
  // This thread's B loads: column bcol (one output position; past the end it reads position 0 and its
  // results are dropped), the 16 consecutive rows from brow (their offsets: four 16-byte vectors of koff).
  const int bcol = tid % kBN, brow = (tid / kBN) * 16;
  const uint32_t q = q0 + bcol < QT ? uint32_t(q0 + bcol) : 0u, qn = q / uint32_t(P), qp = q % uint32_t(P);
  const ob_bf16* xq = x + qn * Cin * H * W + (qp / uint32_t(OW)) * W + qp % uint32_t(OW);

  uint4 ra[kAVecs];
  ob_bf16 rb[16];
  auto load = [&](int64_t k0) {
#pragma unroll
    for (int v = 0; v < kAVecs; ++v) ra[v] = *reinterpret_cast<const uint4*>(ap + k0 + 8 * v);
    int32_t off[16];
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const int4 o4 = *reinterpret_cast<const int4*>(koff + k0 + brow + 4 * v);
      off[4 * v] = o4.x, off[4 * v + 1] = o4.y, off[4 * v + 2] = o4.z, off[4 * v + 3] = o4.w;
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) rb[j] = xq[off[j]];
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int v = 0; v < kAVecs; ++v) *reinterpret_cast<uint4*>(&As[buf][arow * kLdA + acol + 8 * v]) = ra[v];
#pragma unroll
    for (int j = 0; j < 16; ++j) Bs[buf][(brow + j) * kLdB + bcol] = rb[j];
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragM][2];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int64_t stages = Kp / kBK;
  load(0);
  store(0);
  __syncthreads();
  for (int64_t st = 0; st < stages; ++st) {
    const int cur = int(st & 1);
    if (st + 1 < stages) load((st + 1) * kBK);
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, ob_bf16, wmma::row_major> a[kFragM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, ob_bf16, wmma::row_major> b[2];
#pragma unroll
      for (int i = 0; i < kFragM; ++i) wmma::load_matrix_sync(a[i], &As[cur][(wm * kBM / 2 + i * 16) * kLdA + kk], kLdA);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[cur][kk * kLdB + wn * 32 + j * 16], kLdB);
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    if (st + 1 < stages) store(cur ^ 1);
    __syncthreads();
  }

  // Epilogue (As is free after the last __syncthreads): a warp stages one 16×16 accumulator at a time; lane
  // → position column lane % 16 and the rows lane / 16, + 2, ..., + 14 (each store instruction writes two
  // 16-position runs of out).
  float* stage = reinterpret_cast<float*>(&As[0][0]) + warp * 256;
  const int c = lane & 15, r0 = lane >> 4;
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int64_t qq = q0 + wn * 32 + j * 16 + c;
      if (qq < QT) {
        const uint32_t n = uint32_t(qq) / uint32_t(P), p = uint32_t(qq) % uint32_t(P);  // QT < 2^31 (checked)
#pragma unroll
        for (int t = 0; t < 8; ++t) {
          const int64_t o = m0 + wm * kBM / 2 + i * 16 + r0 + 2 * t;
          if (o < Cout)  // bias is (Cout, 1, 1)
            ob_store(out, (n * Cout + o) * P + p, fmaxf(stage[(r0 + 2 * t) * 16 + c] + ob_load(conv_bias, o), 0.0f) + ob_load(bias, o));
        }
      }
      __syncwarp();
    }
}

struct Plan {
  int64_t N, Cin, H, W, Cout, K, OH, OW, P, QT, Kc, Mp, Kp;
  uint64_t wp_bytes;  // the padded weight, then the offset table
};

static Plan plan_for(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  Plan q;
  q.N = x.shape[0], q.Cin = x.shape[1], q.H = x.shape[2], q.W = x.shape[3], q.Cout = w.shape[0], q.K = w.shape[2];
  q.OH = q.H - q.K + 1, q.OW = q.W - q.K + 1, q.P = q.OH * q.OW, q.QT = q.N * q.P, q.Kc = q.Cin * q.K * q.K;
  q.Mp = ob_cdiv(q.Cout, kBM) * kBM, q.Kp = ob_cdiv(q.Kc, kBK) * kBK;
  q.wp_bytes = align256(uint64_t(q.Mp * q.Kp) * sizeof(ob_bf16));
  return q;
}

// The padded weight Wp (Mp, Kp) in bf16 and the offset table koff (Kp,) in int32.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const Plan q = plan_for(call);
  return q.wp_bytes + uint64_t(q.Kp) * sizeof(int32_t);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const Plan q = plan_for(call);
  if (q.QT > (int64_t(1) << 31) - kBN || q.Cin * q.H * q.W > INT32_MAX) return 1;  // grid.x and the int32 offsets
  cudaStream_t stream = ob_stream(call);
  ob_bf16* wp = static_cast<ob_bf16*>(call->workspace);
  int32_t* koff = reinterpret_cast<int32_t*>(static_cast<char*>(call->workspace) + q.wp_bytes);
  pad_weight_kernel<<<ob_grid_for(q.Mp * q.Kp, kThreads), kThreads, 0, stream>>>(ob_in_bf16(call, 1), wp, q.Cout, q.Kc, q.Mp, q.Kp);
  OB_CUDA_TRY(cudaGetLastError());
  offset_kernel<<<ob_grid_for(q.Kp, kThreads), kThreads, 0, stream>>>(koff, q.Kc, q.Kp, q.H, q.W, q.K);
  OB_CUDA_TRY(cudaGetLastError());
  const dim3 grid(unsigned(ob_cdiv(q.QT, kBN)), unsigned(q.Mp / kBM));
  conv_kernel<<<grid, kThreads, 0, stream>>>(ob_in_bf16(call, 0), wp, koff, ob_in_bf16(call, 2), ob_in_bf16(call, 3), ob_out_bf16(call, 0),
                                             q.Cout, q.Cin, q.H, q.W, q.OW, q.P, q.QT, q.Kp);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}
