// 25k_Conv3d_GroupNorm_Mean baseline (cuda): c = conv3d(x, W) + conv_bias (3×3×3 VALID cross-correlation,
// stride 1, NCDHW / OIDHW), GroupNorm with 8 groups (biased variance, eps 1e-5) and its affine gamma, beta,
// then out[n] = the mean over (C, D, H, W).
// Estimate (full, N=128 Cin=3 Cout=24 24×32×32; 650 TFLOP/s, 3.5 TB/s): 0.010 TFLOP 0.02 ms + 1.57 GB 0.45 ms ≈ 0.46 ms; XLA 1.63 ms (0.28x).
// Composition, as XLA on a GPU: XLA runs the convolution in cuDNN, then reduction fusions for the group
// statistics and the mean of the normalized values. Here, per chunk of samples: an im2col kernel into the
// workspace, one cuBLAS GEMM (bf16 operands, fp32 accumulation) C = W·col (K = Cin·27 = 81 is not a multiple
// of 8, so cuBLAS takes its unaligned path; the GEMM is bandwidth-bound either way), a group kernel (a block
// per (sample, group): the mean, then the centered biased variance and each channel's sum of c − μ, which
// give the group's share of Σ y = Σ_o gamma[o]·Σ(c − μ)/σ + P·Σ_o beta[o]), then a kernel that adds the 8
// shares of each sample and divides by Cout·P. C is fp32, since it feeds the group statistics.
// Note: im2col + cuBLAS rather than an implicit GEMM: with Cin = 3 and Cout = 24 the convolution is
// bandwidth-bound and its 0.4 GB im2col buffer costs ≈ 0.2 ms.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

static constexpr int kThreads = 256;
static constexpr int kGroupThreads = 1024;  // a multiple of 32 (block reductions)
static constexpr int64_t kGroups = 8;       // GroupNorm groups of Cout / 8 channels
static constexpr uint64_t kChunkBytes = uint64_t(1) << 30;  // im2col buffer + GEMM output, per chunk of samples

// Row stride (elements) of the im2col buffer and of C for one sample: P rounded up to 8, so that every row
// starts 16-byte aligned (cuBLAS's TMA kernels want 16-byte aligned leading dimensions).
static int64_t padded(int64_t P) { return ob_cdiv(P, 8) * 8; }
static uint64_t align256(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// Samples per chunk: as many as fit in kChunkBytes, spread evenly over the chunks.
static int64_t chunk_samples(int64_t N, uint64_t per_sample_bytes) {
  int64_t most = int64_t(kChunkBytes / per_sample_bytes);
  most = most < 1 ? 1 : (most > N ? N : most);
  return ob_cdiv(N, ob_cdiv(N, most));
}

// im2col of a chunk of samples: col[k, s·Pp + p] = x[s, ci, z + dz, y + dy, xo + dx] with
// k = ((ci·K + dz)·K + dy)·K + dx (the order of W's OIDHW rows) and p = (z·OH + y)·OW + xo; the pad columns
// P <= p < Pp are zero. A thread per column p (coalesced along xo), blockIdx.y = sample s; each thread walks
// the Cin·K³ rows (row stride ld).
static __global__ void im2col_kernel(const ob_bf16* x, ob_bf16* col, int Cin, int D, int H, int W, int K, int OH, int OW,
                                     int64_t P, int64_t Pp, int64_t ld) {
  const int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (p >= Pp) return;
  ob_bf16* c = col + blockIdx.y * Pp + p;
  if (p >= P) {
    for (int64_t k = 0; k < int64_t(Cin) * K * K * K; ++k) c[k * ld] = __float2bfloat16_rn(0.0f);
    return;
  }
  const int64_t xo = p % OW, y = (p / OW) % OH, z = p / (int64_t(OW) * OH);
  const ob_bf16* xs = x + blockIdx.y * int64_t(Cin) * D * H * W + (z * H + y) * W + xo;
  for (int ci = 0; ci < Cin; ++ci)
    for (int dz = 0; dz < K; ++dz)
      for (int dy = 0; dy < K; ++dy) {
        const ob_bf16* xr = xs + ((int64_t(ci) * D + dz) * H + dy) * W;
        for (int dx = 0; dx < K; ++dx, c += ld) *c = xr[dx];
      }
}

// Group g of sample s (its Cg channels × P positions of c = C + conv_bias): the mean, then the centered biased
// variance and, per channel, D_o = Σ_p (c − μ); share[s·8 + g] = Σ_o gamma[o]·D_o/√(σ² + 1e-5) + P·Σ_o beta[o],
// which is Σ over the group of y = (c − μ)/√(σ² + eps)·gamma + beta. A block per (group, sample),
// blockIdx.x = g, blockIdx.y = s; the second pass reads the group from cache.
static __global__ void group_kernel(const float* C, const ob_bf16* conv_bias, const ob_bf16* gamma, const ob_bf16* beta, float* share,
                                    int64_t Cg, int64_t P, int64_t Pp, int64_t ld) {
  const int64_t g = blockIdx.x, s = blockIdx.y;
  float sum = 0.0f;
  for (int64_t o = g * Cg; o < (g + 1) * Cg; ++o) {
    const float* c = C + o * ld + s * Pp;
    const float bo = ob_load(conv_bias, o);
    for (int64_t p = threadIdx.x; p < P; p += blockDim.x) sum += c[p] + bo;
  }
  const float mean = ob_block_sum(sum) / float(Cg * P);
  float sq = 0.0f, weighted = 0.0f, betas = 0.0f;  // weighted = Σ_o gamma[o]·D_o
  for (int64_t o = g * Cg; o < (g + 1) * Cg; ++o) {
    const float* c = C + o * ld + s * Pp;
    const float bo = ob_load(conv_bias, o);
    float dsum = 0.0f;
    for (int64_t p = threadIdx.x; p < P; p += blockDim.x) {
      const float d = c[p] + bo - mean;
      dsum += d;
      sq += d * d;
    }
    weighted += ob_load(gamma, o) * ob_block_sum(dsum);
    betas += ob_load(beta, o);
  }
  const float inv_std = 1.0f / sqrtf(ob_block_sum(sq) / float(Cg * P) + 1e-5f);  // eps 1e-5
  if (threadIdx.x == 0) share[s * gridDim.x + g] = weighted * inv_std + float(P) * betas;
}

// out[s] = (Σ_g share[s, g]) / (Cout·P): a thread per sample.
static __global__ void mean_kernel(const float* share, ob_bf16* out, int64_t S, int64_t Cout, int64_t P) {
  const int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (s >= S) return;
  float total = 0.0f;
  for (int64_t g = 0; g < kGroups; ++g) total += share[s * kGroups + g];
  ob_store(out, s, total / (float(Cout) * float(P)));
}

struct Plan {
  int64_t N, Cin, D, H, W, Cout, K, OD, OH, OW, P, Pp, Kc, S;  // S: samples per chunk
  uint64_t col_bytes;                                            // im2col buffer of one chunk (then C)
};

static Plan plan_for(const ob_call* call) {
  const ob_tensor& x = call->inputs[0];
  const ob_tensor& w = call->inputs[1];
  Plan q;
  q.N = x.shape[0], q.Cin = x.shape[1], q.D = x.shape[2], q.H = x.shape[3], q.W = x.shape[4], q.Cout = w.shape[0], q.K = w.shape[2];
  q.OD = q.D - q.K + 1, q.OH = q.H - q.K + 1, q.OW = q.W - q.K + 1, q.P = q.OD * q.OH * q.OW, q.Pp = padded(q.P);
  q.Kc = q.Cin * q.K * q.K * q.K;
  q.S = chunk_samples(q.N, (uint64_t(q.Kc) * sizeof(ob_bf16) + uint64_t(q.Cout) * sizeof(float)) * uint64_t(q.Pp));
  q.col_bytes = align256(uint64_t(q.Kc * q.S * q.Pp) * sizeof(ob_bf16));
  return q;
}

// One chunk's im2col buffer (Kc, S·Pp) in bf16, GEMM output C (Cout, S·Pp) and the groups' shares (S, 8) in
// fp32.
extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const Plan q = plan_for(call);
  return q.col_bytes + uint64_t(q.Cout * q.S * q.Pp + q.S * kGroups) * sizeof(float);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const Plan q = plan_for(call);
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t blas = ob_blas(stream);
  const ob_bf16* x = ob_in_bf16(call, 0);
  ob_bf16* col = static_cast<ob_bf16*>(call->workspace);
  float* C = reinterpret_cast<float*>(static_cast<char*>(call->workspace) + q.col_bytes);
  float* share = C + q.Cout * q.S * q.Pp;
  ob_bf16* out = ob_out_bf16(call, 0);
  if (q.Cout % kGroups != 0) return 1;  // 8 groups of Cout / 8 channels
  const int64_t Cg = q.Cout / kGroups;
  for (int64_t n0 = 0; n0 < q.N; n0 += q.S) {
    const int64_t S = q.N - n0 < q.S ? q.N - n0 : q.S, ld = S * q.Pp;  // this chunk's samples, row stride
    im2col_kernel<<<dim3(unsigned(ob_cdiv(q.Pp, kThreads)), unsigned(S)), kThreads, 0, stream>>>(
        x + n0 * q.Cin * q.D * q.H * q.W, col, int(q.Cin), int(q.D), int(q.H), int(q.W), int(q.K), int(q.OH), int(q.OW), q.P,
        q.Pp, ld);
    OB_CUDA_TRY(cudaGetLastError());
    // C (Cout, S·Pp) = W (Cout, Kc) · col (Kc, S·Pp); W's OIDHW layout is already (Cout, Kc) row-major.
    OB_CUBLAS_TRY(ob_gemm(blas, false, false, q.Cout, ld, q.Kc, 1.0f, call->inputs[1].data, q.Kc, col, ld, 0.0f, C, CUDA_R_32F, ld));
    group_kernel<<<dim3(unsigned(kGroups), unsigned(S)), kGroupThreads, 0, stream>>>(C, ob_in_bf16(call, 2), ob_in_bf16(call, 3),
                                                                                   ob_in_bf16(call, 4), share, Cg, q.P, q.Pp, ld);
    OB_CUDA_TRY(cudaGetLastError());
    mean_kernel<<<unsigned(ob_cdiv(S, kThreads)), kThreads, 0, stream>>>(share, out + n0, S, q.Cout, q.P);
    OB_CUDA_TRY(cudaGetLastError());
  }
  return 0;
}
