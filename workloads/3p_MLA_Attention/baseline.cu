// 3p_MLA_Attention baseline (cuda). Estimate at full size (B=4, S=2048, E=7168, H=128, RQ=1536, RKV=512, DN=128, DR=64,
// DV=128): projections 3.07 TFLOP ≈ 4.7 ms at 650 TFLOP/s; attention GEMMs 1.37 TFLOP as written ≈ 2.1 ms, with bf16 score
// traffic ≈ 15 GB (QKᵀ writes 4.3 GB, softmax reads the causal half 2.1 GB and writes 4.3 GB, P·V reads 4.3 GB) ≈ 4.3 ms,
// partly overlapped; RoPE and key assembly ≈ 0.4 GB ≈ 0.1 ms: ≈ 9.5-11.5 ms against XLA's 12.43 ms.
//
// What XLA emits for the MaxText MLA on a GPU, every dot a cuBLAS GEMM with bf16 result (fp32 accumulation):
//   1. cq = x·Wqd, q = cq·Wqu (T×RQ, T×H·W, W = DN+DR), c = x·Wkvd = [latent ‖ kr] (T×(RKV+DR)), v = latent·Wvu (T×H·DV): one
//      GEMM each over all T = B·S tokens, the latent slice of c read in place through its leading dimension;
//   2. k_nope = latent·Wku written straight into the nope columns of the assembled key buffer k (T, H, W): one strided-batched
//      GEMM over the heads (latent at batch stride 0, Wku's DN-column block of head h, output at column h·W, row stride H·W),
//      which is the concat [k_nope ‖ broadcast rope(kr)] of the JAX code without a separate k_nope tensor;
//   3. one fused RoPE kernel, a block per token: cos/sin of s·θ_j (θ_j = 10000^(-2j/DR), angle and cos/sin in double, kept in
//      fp32; JAX rounds cos/sin to bf16, which only adds error), rotate q_rope of every head in place in q, rotate the shared
//      kr and broadcast it into the rope columns of every head of k;
//   4. attention as 1p_Flash_Attention: per (batch, head) scores = W^(-1/2)·Q·Kᵀ (strided-batched over the heads of a batch,
//      head h at column h·W of q and k), bf16 into a workspace of `hc` heads' S×S scores (chunks keep the whole workspace
//      ≤ 4 GiB: two chunks of 256 heads at full size), a causal softmax kernel in fp32 (a block per row, probabilities written
//      in place in bf16, 0 for j > i), O = P·V into o (T, H·DV) at column h·DV;
//   5. out = o·Wo.
#include <opbench/cuda_blas.cuh>

OB_DEFINE_ABI_VERSION()

namespace {

constexpr int kSoftmaxThreads = 256;              // a multiple of 32 (block reductions)
constexpr int kRopeThreads = 256;
constexpr uint64_t kWorkspaceBudget = 4ull << 30;  // intermediates + one chunk of bf16 scores

struct Dims {
  int64_t B, S, E, RQ, RKV, H, DN, DR, DV;
};

Dims dims_of(const ob_call* call) {
  Dims d;
  d.B = call->inputs[0].shape[0];
  d.S = call->inputs[0].shape[1];
  d.E = call->inputs[0].shape[2];
  d.RQ = call->inputs[1].shape[1];
  d.RKV = call->inputs[4].shape[0];
  d.DR = call->inputs[3].shape[1] - d.RKV;
  d.H = (call->inputs[2].shape[1] - call->inputs[4].shape[1]) / d.DR;
  d.DN = call->inputs[4].shape[1] / d.H;
  d.DV = call->inputs[5].shape[1] / d.H;
  return d;
}

int64_t align_elems(int64_t n) { return (n + 127) / 128 * 128; }  // 256 bytes of bf16

// Workspace plan (bf16 elements): cq (T×RQ), q (T×H·W), c (T×(RKV+DR)), k (T×H·W), v and o (T×H·DV each), then the scores of
// hc heads (hc·S·S).
struct Plan {
  int64_t cq, q, c, k, v, o, scores, hc, total;
};

Plan plan_of(const Dims& d) {
  const int64_t T = d.B * d.S, W = d.DN + d.DR;
  Plan p;
  p.cq = 0;
  p.q = p.cq + align_elems(T * d.RQ);
  p.c = p.q + align_elems(T * d.H * W);
  p.k = p.c + align_elems(T * (d.RKV + d.DR));
  p.v = p.k + align_elems(T * d.H * W);
  p.o = p.v + align_elems(T * d.H * d.DV);
  p.scores = p.o + align_elems(T * d.H * d.DV);
  const int64_t heads = d.B * d.H, per_head = d.S * d.S;
  const int64_t left = int64_t(kWorkspaceBudget / sizeof(ob_bf16)) - p.scores;
  int64_t fit = left / per_head;
  if (fit < 1) fit = 1;
  if (fit > heads) fit = heads;
  const int64_t chunks = ob_cdiv(heads, fit);
  p.hc = ob_cdiv(heads, chunks);
  p.total = p.scores + p.hc * per_head;
  return p;
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

// One block per token t = b·S + s. Shared memory: cos and sin of s·θ_j (half = DR/2 each), the rotated rope key (DR).
// Rotate-half RoPE: u'[j] = u[j]·cos_j - u[j+half]·sin_j, u'[j+half] = u[j+half]·cos_j + u[j]·sin_j for j < half.
__global__ void __launch_bounds__(kRopeThreads) rope_assemble(ob_bf16* q, const ob_bf16* c, ob_bf16* k, int S, int H, int DN,
                                                              int DR, int RKV) {
  extern __shared__ float sm[];
  const int half = DR / 2, W = DN + DR;
  const int64_t HW = int64_t(H) * W, C = RKV + DR;
  float* cs = sm;
  float* sn = sm + half;
  float* kr = sm + 2 * half;
  const int64_t t = blockIdx.x;
  const int s = int(t % S);
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    const double angle = double(s) * pow(10000.0, -2.0 * double(j) / double(DR));
    cs[j] = float(cos(angle));
    sn[j] = float(sin(angle));
  }
  __syncthreads();
  const ob_bf16* cr = c + t * C + RKV;  // kr of token t
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    const float a = ob_load(cr, j), b = ob_load(cr, j + half);
    kr[j] = a * cs[j] - b * sn[j];
    kr[j + half] = b * cs[j] + a * sn[j];
  }
  for (int e = 2 * half + threadIdx.x; e < DR; e += blockDim.x) kr[e] = ob_load(cr, e);  // odd DR: last channel unrotated
  __syncthreads();
  ob_bf16* qt = q + t * HW;
  for (int idx = threadIdx.x; idx < H * half; idx += blockDim.x) {
    const int h = idx / half, j = idx - h * half;
    ob_bf16* u = qt + int64_t(h) * W + DN;  // q_rope of head h
    const float a = ob_load(u, j), b = ob_load(u, j + half);
    ob_store(u, j, a * cs[j] - b * sn[j]);
    ob_store(u, j + half, b * cs[j] + a * sn[j]);
  }
  ob_bf16* kt = k + t * HW;
  for (int idx = threadIdx.x; idx < H * DR; idx += blockDim.x) {
    const int h = idx / DR, e = idx - h * DR;
    ob_store(kt + int64_t(h) * W + DN, e, kr[e]);
  }
}

// One block per score row r of the chunk (rows·S bf16 scores, row stride S); query i = r mod S sees keys j ≤ i. The visible
// scores are read once into shared memory (S floats), the probabilities are written in place, 0 for j > i.
// Vector path (S a multiple of 8): thread-owned chunks of 8 columns; element e of chunk c is kept at srow[e·NC + c]
// (NC = S/8 chunks) so that the shared-memory accesses of a warp fall in distinct banks.
__global__ void __launch_bounds__(kSoftmaxThreads) causal_softmax(ob_bf16* P, int S) {
  extern __shared__ float srow[];
  const int64_t r = blockIdx.x;
  const int i = int(r % S), n = i + 1;  // keys 0 .. i
  ob_bf16* p = P + r * S;
  float m = -INFINITY;
  if ((S & 7) == 0) {
    const int NC = S >> 3, nc = (n + 7) >> 3;  // chunks of the row, chunks holding visible keys
    for (int c = threadIdx.x; c < nc; c += blockDim.x) {
      float f[8];
      load8(p + c * 8, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float v = c * 8 + e < n ? f[e] : -INFINITY;
        srow[e * NC + c] = v;
        m = fmaxf(m, v);
      }
    }
    m = ob_block_max(m);
    float sum = 0.0f;
    for (int e = 0; e < 8; ++e)
      for (int c = threadIdx.x; c < nc; c += blockDim.x) {
        const float x = expf(srow[e * NC + c] - m);  // -inf (masked) gives 0
        srow[e * NC + c] = x;
        sum += x;
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
      const float v = ob_load(p, j);
      srow[j] = v;
      m = fmaxf(m, v);
    }
    m = ob_block_max(m);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float x = expf(srow[j] - m);
      srow[j] = x;
      sum += x;
    }
    sum = ob_block_sum(sum);
    const float inv = 1.0f / sum;
    for (int j = threadIdx.x; j < S; j += blockDim.x) ob_store(p, j, j < n ? srow[j] * inv : 0.0f);
  }
}

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  return uint64_t(plan_of(dims_of(call)).total) * sizeof(ob_bf16);
}

extern "C" int32_t ob_run(const ob_call* call) {
  const Dims d = dims_of(call);
  const Plan pl = plan_of(d);
  const int64_t T = d.B * d.S, S = d.S, W = d.DN + d.DR, C = d.RKV + d.DR;
  const int64_t HW = d.H * W, HN = d.H * d.DN, HV = d.H * d.DV;
  const ob_bf16* X = ob_in_bf16(call, 0);
  const ob_bf16* Wqd = ob_in_bf16(call, 1);
  const ob_bf16* Wqu = ob_in_bf16(call, 2);
  const ob_bf16* Wkvd = ob_in_bf16(call, 3);
  const ob_bf16* Wku = ob_in_bf16(call, 4);
  const ob_bf16* Wvu = ob_in_bf16(call, 5);
  const ob_bf16* Wo = ob_in_bf16(call, 6);
  ob_bf16* Out = ob_out_bf16(call, 0);
  ob_bf16* ws = static_cast<ob_bf16*>(call->workspace);
  ob_bf16* cq = ws + pl.cq;   // (T, RQ)
  ob_bf16* q = ws + pl.q;     // (T, H, W): [q_nope ‖ q_rope], q_rope rotated in place
  ob_bf16* c = ws + pl.c;     // (T, RKV + DR): [latent ‖ kr]
  ob_bf16* k = ws + pl.k;     // (T, H, W): [k_nope ‖ rope(kr)]
  ob_bf16* v = ws + pl.v;     // (T, H, DV)
  ob_bf16* o = ws + pl.o;     // (T, H, DV)
  ob_bf16* P = ws + pl.scores;  // (hc, S, S)
  cudaStream_t stream = ob_stream(call);
  cublasHandle_t h = ob_blas(stream);
  const cudaDataType_t bf16 = CUDA_R_16BF;

  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, d.RQ, d.E, 1.0f, X, d.E, Wqd, d.RQ, 0.0f, cq, bf16, d.RQ));
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, HW, d.RQ, 1.0f, cq, d.RQ, Wqu, HW, 0.0f, q, bf16, HW));
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, C, d.E, 1.0f, X, d.E, Wkvd, C, 0.0f, c, bf16, C));
  // k_nope of head hh = latent · Wku[:, hh·DN .. hh·DN+DN-1] into k[:, hh, 0 .. DN-1].
  OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, T, d.DN, d.RKV, 1.0f, c, C, 0, Wku, HN, d.DN, 0.0f, k, bf16, HW, W, d.H));
  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, HV, d.RKV, 1.0f, c, C, Wvu, HV, 0.0f, v, bf16, HV));

  const size_t rope_smem = size_t(2 * (d.DR / 2) + d.DR) * sizeof(float);
  rope_assemble<<<unsigned(T), kRopeThreads, rope_smem, stream>>>(q, c, k, int(S), int(d.H), int(d.DN), int(d.DR), int(d.RKV));
  OB_CUDA_TRY(cudaGetLastError());

  const float scale = float(1.0 / sqrt(double(W)));
  const size_t smem = size_t(S) * sizeof(float);
  if (smem > 48 * 1024)
    OB_CUDA_TRY(cudaFuncSetAttribute(causal_softmax, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  // Chunk [c0, c1) of the flat (batch, head) index bh = b·H + hh; its scores P[bh - c0]. Within a chunk, the heads of one batch
  // are one strided-batched GEMM (head hh at column hh·W of q and k, hh·DV of v and o).
  const int64_t BH = d.B * d.H;
  for (int64_t c0 = 0; c0 < BH; c0 += pl.hc) {
    const int64_t c1 = BH - c0 < pl.hc ? BH : c0 + pl.hc;
    for (int64_t bh = c0; bh < c1;) {
      const int64_t b = bh / d.H, hh = bh % d.H, end = (b + 1) * d.H < c1 ? (b + 1) * d.H : c1;
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, true, S, S, W, scale, q + b * S * HW + hh * W, HW, W, k + b * S * HW + hh * W, HW, W,
                                    0.0f, P + (bh - c0) * S * S, bf16, S, S * S, end - bh));
      bh = end;
    }
    causal_softmax<<<unsigned((c1 - c0) * S), kSoftmaxThreads, smem, stream>>>(P, int(S));
    OB_CUDA_TRY(cudaGetLastError());
    for (int64_t bh = c0; bh < c1;) {
      const int64_t b = bh / d.H, hh = bh % d.H, end = (b + 1) * d.H < c1 ? (b + 1) * d.H : c1;
      OB_CUBLAS_TRY(ob_gemm_batched(h, false, false, S, d.DV, S, 1.0f, P + (bh - c0) * S * S, S, S * S,
                                    v + b * S * HV + hh * d.DV, HV, d.DV, 0.0f, o + b * S * HV + hh * d.DV, bf16, HV, d.DV,
                                    end - bh));
      bh = end;
    }
  }

  OB_CUBLAS_TRY(ob_gemm(h, false, false, T, d.E, HV, 1.0f, o, HV, Wo, d.E, 0.0f, Out, bf16, d.E));
  return 0;
}
