// 28k_ConvTranspose3d_LayerNorm_GELU_Scaling baseline (cuda): y = conv_transpose3d(x, Wt), kernel 4, stride
// 2, padding 1 (PyTorch semantics, Wt stored (Cin, Cout, kd, kh, kw)), then LayerNorm over the last (width)
// axis (biased variance, eps 1e-5) with width-indexed ln_weight, ln_bias, then gelu_tanh · 1.0.
// Estimate (full, N=32 Cin=32 Cout=64 16×32×32 → 32×64×64; 650 TFLOP/s, 3.5 TB/s): 0.137 TFLOP 0.21 ms + 7.01 GB 2.00 ms ≈ 2.22 ms; XLA 4.94 ms (0.45x).
// Composition, as XLA on a GPU: XLA runs the transposed convolution in cuDNN, then the LayerNorm as a
// reduction fusion and an elementwise fusion. Here, the gather form of the transposed convolution: with
// stride 2 and kernel 4, an output position of parity (z, r, q) mod 2 = (pz, py, px) receives exactly 2 taps
// per axis, so each of the 8 parity classes is a 2×2×2 convolution of x. A small kernel packs Wt into the 8
// class matrices (Cout, Cin·8); then per chunk of samples and per class: an im2col kernel (zeros where a tap
// falls outside the input) and one cuBLAS GEMM (bf16 operands, fp32 accumulation) into that class's slice of
// Y; then one LayerNorm kernel (a warp per output width row, gathering its even and odd columns from two
// classes: the mean, the centered biased variance, the affine and the GELU) that writes `out` in NCDHW. Y is
// fp32, since it feeds the LayerNorm statistics. The model's conv bias is not an input (workload.toml): a
// per-channel bias is constant along the width and the LayerNorm cancels it.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

static constexpr int kThreads = 256;  // a multiple of 32 (a warp per LayerNorm row)
static constexpr uint64_t kChunkBytes = uint64_t(1) << 30;  // im2col buffer + the 8 classes' GEMM outputs, per chunk
static constexpr int64_t kKernel = 4;                        // kernel 4, stride 2, padding 1 (compiled in)
static constexpr int64_t kClasses = 8, kTaps = 8;            // parity classes; taps per class (2 per axis)

// Row stride (elements) of the im2col buffer and of Y for one sample: Q rounded up to 8, so that every row
// starts 16-byte aligned (cuBLAS's TMA kernels want 16-byte aligned leading dimensions).
static int64_t padded(int64_t Q) { return ob_cdiv(Q, 8) * 8; }
static uint64_t align256(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// Samples per chunk: as many as fit in kChunkBytes, spread evenly over the chunks.
static int64_t chunk_samples(int64_t N, uint64_t per_sample_bytes) {
  int64_t most = int64_t(kChunkBytes / per_sample_bytes);
  most = most < 1 ? 1 : (most > N ? N : most);
  return ob_cdiv(N, ob_cdiv(N, most));
}

// For output parity p (of one axis) and tap t < 2: the kernel index is 1 − p + 2t and the input index is the
// output's half-index + p − t. (z = 2d − 1 + kd with z = 2zz + p gives kd = 1 − p + 2t, d = zz + p − t: the
// two kd of the right parity.)
static __host__ __device__ __forceinline__ int64_t tap_kernel_index(int64_t p, int64_t t) { return 1 - p + 2 * t; }

// Wc[cls, o, ci·8 + t] = Wt[ci, o, kd, kh, kw] for class cls = pz·4 + py·2 + px and tap t = td·4 + th·2 + tw,
// (kd, kh, kw) = (1 − pz + 2td, 1 − py + 2th, 1 − px + 2tw). A grid-stride loop over Wc.
static __global__ void pack_kernel(const ob_bf16* Wt, ob_bf16* Wc, int64_t Cin, int64_t Cout) {
  const int64_t total = kClasses * Cout * Cin * kTaps;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i % kTaps, ci = (i / kTaps) % Cin, o = (i / (kTaps * Cin)) % Cout, cls = i / (kTaps * Cin * Cout);
    const int64_t kd = tap_kernel_index(cls >> 2, t >> 2), kh = tap_kernel_index((cls >> 1) & 1, (t >> 1) & 1),
                  kw = tap_kernel_index(cls & 1, t & 1);
    Wc[i] = Wt[(((ci * Cout + o) * kKernel + kd) * kKernel + kh) * kKernel + kw];
  }
}

// im2col of class cls = pz·4 + py·2 + px for a chunk of samples: col[ci·8 + t, s·Qp + q] = x[s, ci, zz + pz − td,
// yy + py − th, xx + px − tw] (0 where that falls outside the input) with q = (zz·H + yy)·W + xx over the D·H·W
// outputs of the class; the pad columns Q <= q < Qp are zero. A thread per column q (coalesced along xx),
// blockIdx.y = sample s; each thread walks the Cin·8 rows (row stride ld).
static __global__ void im2col_kernel(const ob_bf16* x, ob_bf16* col, int Cin, int D, int H, int W, int cls, int64_t Q, int64_t Qp,
                                     int64_t ld) {
  const int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (q >= Qp) return;
  ob_bf16* c = col + blockIdx.y * Qp + q;
  const ob_bf16 zero = __float2bfloat16_rn(0.0f);
  if (q >= Q) {
    for (int64_t k = 0; k < int64_t(Cin) * kTaps; ++k) c[k * ld] = zero;
    return;
  }
  const int64_t xx = q % W, yy = (q / W) % H, zz = q / (int64_t(W) * H);
  const int pz = cls >> 2, py = (cls >> 1) & 1, px = cls & 1;
  int64_t off[kTaps];  // the tap's offset inside one input channel, or −1 outside the input
#pragma unroll
  for (int t = 0; t < kTaps; ++t) {
    const int64_t d = zz + pz - (t >> 2), h = yy + py - ((t >> 1) & 1), w = xx + px - (t & 1);
    off[t] = (d >= 0 && d < D && h >= 0 && h < H && w >= 0 && w < W) ? (d * H + h) * W + w : -1;
  }
  const ob_bf16* xs = x + blockIdx.y * int64_t(Cin) * D * H * W;
  for (int ci = 0; ci < Cin; ++ci, xs += int64_t(D) * H * W)
#pragma unroll
    for (int t = 0; t < kTaps; ++t, c += ld) *c = off[t] >= 0 ? xs[off[t]] : zero;
}

// GELU, tanh form: 0.5·t·(1 + tanh(√(2/π)·(t + 0.044715·t³))).
static __device__ __forceinline__ float gelu_tanh(float t) {
  return 0.5f * t * (1.0f + tanhf(0.7978845608028654f * (t + 0.044715f * t * t * t)));
}

// LayerNorm over the width of output row (s, o, z, r) of the chunk: its OW = 2W values y[q] are Y[cls, o,
// s·Qp + ((z/2)·H + r/2)·W + q/2] with cls = (z%2)·4 + (r%2)·2 + q%2 (even q from one class, odd q from the
// next). A warp per row: the mean, the centered biased variance (re-reading the row from cache), then
// out = gelu((y − μ)/√(σ² + 1e-5) · ln_weight[q] + ln_bias[q]) · 1.0.
static __global__ void layernorm_kernel(const float* Y, const ob_bf16* ln_weight, const ob_bf16* ln_bias, ob_bf16* out, int64_t rows,
                                        int64_t Cout, int64_t OD, int64_t OH, int64_t OW, int64_t H, int64_t W, int64_t Qp, int64_t ld) {
  const int lane = threadIdx.x & 31;
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  if (row >= rows) return;  // warp-uniform: the whole warp leaves together
  const int64_t r = row % OH, z = (row / OH) % OD, o = (row / (OH * OD)) % Cout, s = row / (OH * OD * Cout);
  const int64_t cls = (z & 1) * 4 + (r & 1) * 2;
  const int64_t pos = s * Qp + ((z >> 1) * H + (r >> 1)) * W;
  const float* even = Y + (cls * Cout + o) * ld + pos;        // px = 0: q = 2·xx
  const float* odd = Y + ((cls + 1) * Cout + o) * ld + pos;   // px = 1: q = 2·xx + 1
  float sum = 0.0f;
  for (int64_t q = lane; q < OW; q += 32) sum += (q & 1 ? odd : even)[q >> 1];
  const float mean = ob_warp_sum(sum) / float(OW);
  float sq = 0.0f;
  for (int64_t q = lane; q < OW; q += 32) {
    const float d = (q & 1 ? odd : even)[q >> 1] - mean;
    sq += d * d;
  }
  const float inv_std = 1.0f / sqrtf(ob_warp_sum(sq) / float(OW) + 1e-5f);  // biased variance, eps 1e-5
  ob_bf16* orow = out + row * OW;
  for (int64_t q = lane; q < OW; q += 32) {
    const float t = ((q & 1 ? odd : even)[q >> 1] - mean) * inv_std * ob_load(ln_weight, q) + ob_load(ln_bias, q);
    ob_store(orow, q, gelu_tanh(t) * 1.0f);  // scaling_factor 1.0
  }
}

struct Plan {
  int64_t N, Cin, D, H, W, Cout, OD, OH, OW, Q, Qp, Kc, S;  // S: samples per chunk
  uint64_t wc_bytes, col_bytes;                            // packed class weights, one chunk's im2col buffer
};

static Plan plan_for(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& out = call->outputs[0];
  Plan q;
  q.N = x.shape[0], q.Cin = x.shape[1], q.D = x.shape[2], q.H = x.shape[3], q.W = x.shape[4], q.Cout = call->inputs[1].shape[1];
  q.OD = out.shape[2], q.OH = out.shape[3], q.OW = out.shape[4];
  q.Q = q.D * q.H * q.W, q.Qp = padded(q.Q), q.Kc = q.Cin * kTaps;
  q.S = chunk_samples(q.N, (uint64_t(q.Kc) * sizeof(ob_bf16) + uint64_t(kClasses * q.Cout) * sizeof(float)) * uint64_t(q.Qp));
  q.wc_bytes = align256(uint64_t(kClasses * q.Cout * q.Kc) * sizeof(ob_bf16));
  q.col_bytes = align256(uint64_t(q.Kc * q.S * q.Qp) * sizeof(ob_bf16));
  return q;
}

// The packed class weights Wc (8, Cout, Cin·8) and one chunk's im2col buffer (Cin·8, S·Qp), in bf16; the
// chunk's transposed-conv output Y (8, Cout, S·Qp), in fp32.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const Plan q = plan_for(call);
  return q.wc_bytes + q.col_bytes + uint64_t(kClasses * q.Cout * q.S * q.Qp) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const Plan q = plan_for(call);
  const ob_tensor& wt = call->inputs[1];  // (Cin, Cout, 4, 4, 4)
  if (wt.shape[2] != kKernel || wt.shape[3] != kKernel || wt.shape[4] != kKernel || q.OD != 2 * q.D || q.OH != 2 * q.H ||
      q.OW != 2 * q.W || call->inputs[2].shape[0] != q.OW)
    return 1;  // the parity decomposition is for kernel 4, stride 2, padding 1
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t blas = ob_blas(stream);
  char* ws = static_cast<char*>(call->workspace);
  ob_bf16* Wc = reinterpret_cast<ob_bf16*>(ws);
  ob_bf16* col = reinterpret_cast<ob_bf16*>(ws + q.wc_bytes);
  float* Y = reinterpret_cast<float*>(ws + q.wc_bytes + q.col_bytes);
  const ob_bf16* x = ob_in_bf16(call, 0);
  ob_bf16* out = ob_out_bf16(call, 0);
  pack_kernel<<<ob_grid_for(kClasses * q.Cout * q.Kc, kThreads), kThreads, 0, stream>>>(ob_in_bf16(call, 1), Wc, q.Cin, q.Cout);
  OB_CUDA_TRY(cudaGetLastError());
  for (int64_t n0 = 0; n0 < q.N; n0 += q.S) {
    const int64_t S = q.N - n0 < q.S ? q.N - n0 : q.S, ld = S * q.Qp;  // this chunk's samples, row stride
    for (int cls = 0; cls < kClasses; ++cls) {
      im2col_kernel<<<dim3(unsigned(ob_cdiv(q.Qp, kThreads)), unsigned(S)), kThreads, 0, stream>>>(
          x + n0 * q.Cin * q.Q, col, int(q.Cin), int(q.D), int(q.H), int(q.W), cls, q.Q, q.Qp, ld);
      OB_CUDA_TRY(cudaGetLastError());
      // Y[cls] (Cout, S·Qp) = Wc[cls] (Cout, Cin·8) · col (Cin·8, S·Qp).
      OB_CUBLAS_TRY(ob_gemm(blas, false, false, q.Cout, ld, q.Kc, 1.0f, Wc + cls * q.Cout * q.Kc, q.Kc, col, ld, 0.0f,
                            Y + cls * q.Cout * ld, CUDA_R_32F, ld));
    }
    const int64_t rows = S * q.Cout * q.OD * q.OH;
    layernorm_kernel<<<unsigned(ob_cdiv(rows * 32, kThreads)), kThreads, 0, stream>>>(
        Y, ob_in_bf16(call, 2), ob_in_bf16(call, 3), out + n0 * q.Cout * q.OD * q.OH * q.OW, rows, q.Cout, q.OD, q.OH, q.OW, q.H, q.W,
        q.Qp, ld);
    OB_CUDA_TRY(cudaGetLastError());
  }
  return 0;
}
