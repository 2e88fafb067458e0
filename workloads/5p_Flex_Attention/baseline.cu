// 5p_Flex_Attention baseline (cuda). Estimate at full size (B=4, H=64, S=4096, D=128): GEMMs 2.2 TFLOP as written ≈ 3.4 ms
// at 650 TFLOP/s; score traffic ≈ 30 GB (bf16 scores written 8.6 GB, softmax reads their causal half 4.3 GB and writes 8.6 GB,
// P·V reads 8.6 GB) plus the bias's lower triangle ≈ 1.1 GB from DRAM (read B times, the B rows sharing a bias row run back
// to back and hit L2) ≈ 9 ms at 3.5 TB/s, partly overlapped: ≈ 10-12 ms against XLA's 20.18 ms.
//
// What XLA emits for MaxText's attention with a dense bias on a GPU (no fused attention kernel): as 1p_Flash_Attention, a
// batched cuBLAS GEMM for the scaled scores D^(-1/2)·q·kᵀ in bf16, one fusion for bias add + causal mask + softmax (fp32 inside:
// s + bias[h, i, j] for j ≤ i, the reference's -1e30 for j > i gives p = 0 exactly; bf16 probabilities written in place), a
// batched GEMM with V. Chunks of `hh` heads with all B batches each (scores at most 4 GiB: two chunks of 32 heads at full
// size), and the softmax grid ordered (head, row, batch) with the batch fastest, so that the bias row bias[h, i, :] is read
// from DRAM once and from L2 by the other B - 1 blocks.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int kSoftmaxThreads = 256;              // a multiple of 32 (block reductions)
constexpr uint64_t kScoreBudget = 4ull << 30;     // bytes of bf16 scores per chunk

// Heads per chunk (each head with its B batches): as many as fit the budget, spread evenly over the chunks.
int64_t heads_per_chunk(int64_t B, int64_t H, int64_t S) {
  const int64_t per_head = B * S * S * int64_t(sizeof(ob_bf16));
  int64_t fit = int64_t(kScoreBudget) / per_head;
  if (fit < 1) fit = 1;
  if (fit > H) fit = H;
  const int64_t chunks = ob_cdiv(H, fit);
  return ob_cdiv(H, chunks);
}

// Two bf16 packed in a 32-bit word to / from floats (memcpy, not pointer casts, between the types: no aliasing questions).
__device__ __forceinline__ float2 unpack2(unsigned w) {
  __nv_bfloat162 h;
  memcpy(&h, &w, sizeof h);
  return __bfloat1622float2(h);
}
__device__ __forceinline__ unsigned pack2(float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  unsigned w;
  memcpy(&w, &h, sizeof w);
  return w;
}

// 8 consecutive bf16 (16-byte aligned) to / from floats, one 16-byte access.
__device__ __forceinline__ void load8(const ob_bf16* p, float* f) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 v = unpack2(w[k]);
    f[2 * k] = v.x;
    f[2 * k + 1] = v.y;
  }
}
__device__ __forceinline__ void store8(ob_bf16* p, const float* f) {
  *reinterpret_cast<uint4*>(p) = make_uint4(pack2(f[0], f[1]), pack2(f[2], f[3]), pack2(f[4], f[5]), pack2(f[6], f[7]));
}

// One block per score row of the chunk: blockIdx.x = (hl·S + i)·B + b for chunk head hl (global head h0 + hl), query row i,
// batch b. Scores P[b, hl, i, :] (bf16, already scaled by the GEMM, chunk layout [B][hh][S][S]); query i sees keys j ≤ i with
// logit s + bias[h0 + hl, i, j]. The visible logits are read once into shared memory (S floats) in fp32, the probabilities are
// written in place in bf16, 0 for j > i.
// Vector path (S a multiple of 8): thread-owned chunks of 8 columns; element e of chunk c is kept at srow[e·NC + c]
// (NC = S/8 chunks) so that the shared-memory accesses of a warp fall in distinct banks.
__global__ void __launch_bounds__(kSoftmaxThreads) biased_causal_softmax(ob_bf16* P, const ob_bf16* bias, int S, int B, int hh,
                                                                         int h0) {
  extern __shared__ float srow[];
  const int64_t x = blockIdx.x;
  const int b = int(x % B);
  const int64_t hs = x / B;  // hl·S + i
  const int i = int(hs % S), hl = int(hs / S), n = i + 1;
  ob_bf16* p = P + ((int64_t(b) * hh + hl) * S + i) * S;
  const ob_bf16* br = bias + (int64_t(h0 + hl) * S + i) * S;
  float m = -INFINITY;
  if ((S & 7) == 0) {
    const int NC = S >> 3, nc = (n + 7) >> 3;  // chunks of the row, chunks holding visible keys
    for (int c = threadIdx.x; c < nc; c += blockDim.x) {
      float f[8], g[8];
      load8(p + c * 8, f);
      load8(br + c * 8, g);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float v = c * 8 + e < n ? f[e] + g[e] : -INFINITY;
        srow[e * NC + c] = v;
        m = fmaxf(m, v);
      }
    }
    m = ob_block_max(m);
    float sum = 0.0f;
    for (int e = 0; e < 8; ++e)
      for (int c = threadIdx.x; c < nc; c += blockDim.x) {
        const float y = expf(srow[e * NC + c] - m);  // -inf (masked) gives 0
        srow[e * NC + c] = y;
        sum += y;
      }
    sum = ob_block_sum(sum);
    const float inv = 1.0f / sum;
    for (int c = threadIdx.x; c < NC; c += blockDim.x) {
      float f[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] = c < nc ? srow[e * NC + c] * inv : 0.0f;
      store8(p + c * 8, f);
    }
  } else {
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float v = ob_load(p, j) + ob_load(br, j);
      srow[j] = v;
      m = fmaxf(m, v);
    }
    m = ob_block_max(m);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float y = expf(srow[j] - m);
      srow[j] = y;
      sum += y;
    }
    sum = ob_block_sum(sum);
    const float inv = 1.0f / sum;
    for (int j = threadIdx.x; j < S; j += blockDim.x) ob_store(p, j, j < n ? srow[j] * inv : 0.0f);
  }
}

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2];
  return uint64_t(B * heads_per_chunk(B, H, S) * S * S) * sizeof(ob_bf16);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const ob_tensor& q = call->inputs[0];
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  const ob_bf16* Q = ob_in_bf16(call, 0);
  const ob_bf16* K = ob_in_bf16(call, 1);
  const ob_bf16* V = ob_in_bf16(call, 2);
  const ob_bf16* Bias = ob_in_bf16(call, 3);
  ob_bf16* O = ob_out_bf16(call, 0);
  ob_bf16* P = static_cast<ob_bf16*>(call->workspace);
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t h = ob_blas(stream);
  const float scale = float(1.0 / sqrt(double(D)));
  const int64_t SD = S * D, SS = S * S;  // elements of one head of q/k/v/out, of one score matrix
  const size_t smem = size_t(S) * sizeof(float);
  if (smem > 48 * 1024)
    OB_CUDA_TRY(cudaFuncSetAttribute(biased_causal_softmax, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t hc = heads_per_chunk(B, H, S);
  // Chunk of heads [h0, h0 + hh) for every batch; per batch b one strided-batched GEMM over the chunk's heads (head h of batch b
  // at (b·H + h)·S·D), scores at P[(b·hh + hl)·S·S].
  for (int64_t h0 = 0; h0 < H; h0 += hc) {
    const int64_t hh = H - h0 < hc ? H - h0 : hc;
    for (int64_t b = 0; b < B; ++b)
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, true, S, S, D, scale, Q + (b * H + h0) * SD, D, SD, K + (b * H + h0) * SD, D, SD, 0.0f,
                                    P + b * hh * SS, CUDA_R_16BF, S, SS, hh));
    biased_causal_softmax<<<unsigned(hh * S * B), kSoftmaxThreads, smem, stream>>>(P, Bias, int(S), int(B), int(hh), int(h0));
    OB_CUDA_TRY(cudaGetLastError());
    for (int64_t b = 0; b < B; ++b)
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, S, D, S, 1.0f, P + b * hh * SS, S, SS, V + (b * H + h0) * SD, D, SD, 0.0f,
                                    O + (b * H + h0) * SD, CUDA_R_16BF, D, SD, hh));
  }
  return 0;
}
