// 1p_Flash_Attention expert (cuda, Hopper sm_90a): causal multi-head attention as one fused FlashAttention-style kernel
// (TMA + mbarrier pipeline, wgmma on the tensor cores, online softmax in fp32, no S×S scores in memory).
//
// Estimate at full size (B=4, H=64, S=4096, D=128): useful (causal) work of both products 2·B·H·D·S·(S+1) ≈ 1.10 TFLOP,
// executed ≈ 1.13 TFLOP (the diagonal 128×128 tiles are computed whole). Per 128-key tile a CTA does 8.4 MFLOP on the
// tensor cores (≈ 2050 cycles at the dense bf16 rate of ≈ 4096 FLOP/cycle/SM) and 16384 exponentials on the MUFU
// (≈ 1020 cycles at 16/cycle/SM), so the softmax must overlap the matrix products: it does, between the two consumer
// warpgroups and inside each (below). At 480-560 TFLOP/s sustained: ≈ 2.0-2.35 ms. Memory: q, k, v, out 4 × 268 MB once
// from HBM (k/v re-reads of a head hit L2, see the schedule) ≈ 0.3 ms, overlapped. Target ≤ 2.4 ms (cuDNN 1.91 ms).
//
// Fast path (D ≤ 128, D % 8 == 0, any S ≥ 1, 16-byte aligned tensors; the test size 2×2×45×32 takes it too):
//   - one CTA of 384 threads per (batch·head, 128-query tile): warpgroup 0 is the producer (one thread issues all TMA
//     copies, setmaxnreg 40), warpgroups 1 and 2 are consumers (setmaxnreg 232), each owning 64 query rows;
//   - Q tile (128 × 128, 32 KB) loaded once; K and V tiles (128 keys × 128 dims, 32 KB each) stream through a 2-slot ring
//     each (full barriers: producer arrival + TMA bytes; empty barriers for K and for V separately, 256 consumer
//     arrivals, so a K slot is refilled as soon as its Q·Kᵀ is done); 160 KB of shared memory, one CTA per SM;
//   - every 128 × 64-dim chunk is a TMA box {64 dims, 128 rows} with the 128-byte swizzle; d ≥ D and rows ≥ S are
//     zero-filled by the TMA (out-of-bound boxes), so tails need no special code: zero q/k dims add 0 to the dot products,
//     zero v rows meet p = 0, and every key j ≥ S of a valid row i < S is above the diagonal (masked);
//   - per kv tile, per consumer warpgroup: S = Q·Kᵀ as 8 × wgmma.m64n128k16 (A = Q, B = K, both K-major from shared memory),
//     causal mask on the diagonal tile (j > i → -inf, i.e. p = 0 exactly as the reference's -1e9), online softmax in fp32
//     with exp2 (scale·log2 e folded into one FMA), O rescaled in registers, P converted to bf16 in registers and used as the
//     A operand of O += P·V (8 × wgmma.m64n128k16, B = V MN-major from shared memory, imm-trans-b = 1);
//   - inside a warpgroup the products are software-pipelined (FlashAttention-3's intra-warpgroup overlap): iteration it
//     issues S_it = Q·K_itᵀ and then O += P_{it-1}·V_{it-1}, waits for S_it only (wgmma.wait_group 1), does the softmax of
//     tile it while the P·V runs, then waits for the P·V, rescales O and converts P_it;
//   - kv tiles walked from the diagonal down to 0 (only the first one is masked); tiles above the diagonal are never
//     loaded; the epilogue normalises by the row sums, stages O (bf16) in the CTA's own (finished) Q rows and writes rows
//     < S with 16-byte coalesced stores;
//   - schedule: CTAs ordered by sections of `hs` heads (whose k/v, 2 MB per head at full size, fit in L2 together: 4 heads,
//     8 MB); inside a section the longest (last) query tiles first, head-minor; so the light tiles of a section fill the
//     SMs while the next section's heavy tiles start, and k/v re-reads come from L2.
// Simple path (OB_EXPERT_SIMPLE, or shapes the fast path does not take: D > 128 or D % 8 != 0, misaligned pointers):
// one 128-thread block per query row, fp32 online softmax over key chunks of 128, K and V read from global memory.
//
// Error codes of ob_run: 10 bad inputs/outputs (count, rank, dtype, shapes), 21 cuTensorMapEncodeTiled not reachable
// through cudaGetDriverEntryPointByVersion, 22/23/24 tensor-map encoding of q/k/v refused (at shapes whose boxes all fit;
// smaller shapes then take the simple path), 1000 + cudaError_t for CUDA runtime errors (OB_CUDA_TRY).
//
// Encodings and where they come from (PTX ISA 9.x):
//   - wgmma shared-memory descriptor: §9.7.15.5.1.2.2 "Matrix Descriptor Format" (bits 0-13 start address >> 4, 16-29
//     leading-dimension byte offset >> 4, 32-45 stride-dimension byte offset >> 4, 49-51 base offset, 62-63 swizzle:
//     1 = 128B); strides per §9.7.15.5.1.2.1 (canonical layouts, 128B swizzle: K-major ((8,m),(T,2k)):((8T,SBO),(1,T)),
//     LBO unused; MN-major ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)), T = 8 bf16);
//   - accumulator / A-register fragments: §9.7.15.5.1.1.1 (Figures 148, 149): thread t of the warpgroup, warp w = t/32,
//     lane l: D register 4i+{0,1} holds row 16w + l/4, columns 8i + 2(l%4) + {0,1}; 4i+{2,3} the same columns of row
//     16w + l/4 + 8. A register 0: row 16w + l/4, k 2(l%4)+{0,1}; 1: row +8; 2: k + 8; 3: row +8, k + 8;
//   - cp.async.bulk.tensor (§9.7.9.25.5.1) with mbarrier::complete_tx::bytes, mbarrier (§9.7.13.15), tensor maps per
//     cuTensorMapEncodeTiled (cuda.h), 128B swizzle = 16-byte chunk c of row r of a 1024-byte-aligned 8-row block stored at
//     chunk c ^ (r % 8), the same pattern the wgmma 128B swizzle mode (Swizzle<3,4,3>) reads.
#include <opbench/cuda_util.cuh>

#include <cuda.h>  // CUtensorMap and the cuTensorMapEncodeTiled types only: the function is reached through the runtime
#include <string.h>

OB_DEFINE_ABI_VERSION()

namespace {

// ------------------------------------------------------------------------------------------------------------------------
// Fast path constants
// ------------------------------------------------------------------------------------------------------------------------
constexpr int kBM = 128;                            // query rows per CTA (two consumer warpgroups × 64)
constexpr int kBN = 128;                            // keys per kv tile
constexpr int kDMax = 128;                          // head dims of the fast path: two 64-dim swizzle chunks
constexpr int kStages = 2;                          // K/V ring depth
constexpr int kThreads = 384;                       // producer warpgroup + 2 consumer warpgroups
constexpr int kProducerRegs = 40;                   // setmaxnreg: 128·40 + 256·232 = 64512 ≤ 65536 (= 384 · 168 at entry)
constexpr int kConsumerRegs = 232;
constexpr uint32_t kChunkBytes = 128u * 128u;       // one 64-dim chunk of a 128-row tile: 128 rows × 128 B
constexpr uint32_t kTileBytes = 2u * kChunkBytes;   // a 128 × 128 bf16 tile (32 KB)
constexpr uint32_t kOffQ = 0;
constexpr uint32_t kOffK = kOffQ + kTileBytes;               // stage s at + s·kTileBytes
constexpr uint32_t kOffV = kOffK + kStages * kTileBytes;     // stage s at + s·kTileBytes
constexpr uint32_t kOffBar = kOffV + kStages * kTileBytes;   // 163840: barQ, barK/barV/barEK/barEV[kStages] (8 B each)
constexpr uint32_t kSmemBytes = kOffBar + 128 + 1024;        // + alignment slack for the 1024-byte base
constexpr uint32_t kScratchOff = 120;                        // an unused word of the barrier area (see the loop)
constexpr int kEmptyArrivals = 256;                          // every consumer thread arrives once per slot use
static_assert(kBM == 128 && kBN == 128 && kDMax == 128, "the descriptor offsets below assume 128 × 128 tiles");
static_assert(8 * (1 + 4 * kStages) <= kScratchOff && kScratchOff + 4 <= 128, "barrier area layout");
static_assert(kOffK % 1024 == 0 && kOffV % 1024 == 0, "swizzled tiles must start on 1024-byte boundaries");

// ------------------------------------------------------------------------------------------------------------------------
// PTX wrappers
// ------------------------------------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// The producer's arrival, announcing `bytes` of TMA transactions that complete the phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Wait until the phase with parity `parity` has completed (a fresh barrier counts its "previous" phase, parity 1, as
// complete: waiting for parity 1 on it returns at once, which is how the producer's first pass over the ring starts).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// 4-d tiled TMA load global → shared, completing on `bar` (coordinates innermost first, in elements).
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2,
                                            int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>  // wait until at most kPending of this warpgroup's committed groups are still in flight
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory"); }
// Pin registers in place across the asynchronous wgmma (no move of their reads/writes across this point).
__device__ __forceinline__ void fence_regs(float (&r)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
__device__ __forceinline__ void fence_regs(uint32_t (&r)[32]) {
#pragma unroll
  for (int i = 0; i < 32; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x (low 16 bits) = lo: the lower column / k index
  uint32_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

// wgmma shared-memory descriptors (PTX ISA §9.7.15.5.1.2.2), 128-byte swizzle (bits 62-63 = 1), base offset 0: every
// 8-row pattern starts on a 1024-byte boundary (tile bases are 1024-aligned; the +32 B k-steps inside a 128-byte row move
// the start address only, as the swizzle is applied to the absolute address bits [4:6] ^ [7:9]).
// K-major (Q as A, K as B): rows of 128 B (64 bf16 along k), 8-row groups 1024 B apart → SBO = 1024; LBO unused ("assumed
// 1", §9.7.15.5.1.2.1.1), encoded as 1.
__device__ __forceinline__ uint64_t desc_k_major(uint32_t addr) {
  return uint64_t((addr & 0x3FFFFu) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024u >> 4) << 32) | (uint64_t(1) << 62);
}
// MN-major (V as B, N = head dim contiguous): a swizzle atom is 8 keys (k) × 64 dims (n) = 1024 B; the next 8 keys are
// 1024 B further (SBO, "offset from the first 8 columns to the next 8 columns" in k), the next 64 dims are the other chunk,
// kChunkBytes further (LBO, "offset from the first 8 rows to the next 8 rows" of 128-bit units along n).
__device__ __forceinline__ uint64_t desc_mn_major(uint32_t addr) {
  return uint64_t((addr & 0x3FFFFu) >> 4) | (uint64_t(kChunkBytes >> 4) << 16) | (uint64_t(1024u >> 4) << 32) |
         (uint64_t(1) << 62);
}

// D[64×128] (+)= A[64×16]·B[16×128], A and B from shared memory, both K-major (PTX ISA §9.7.15.5.2, .bf16 form
// "d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b"; scale-d = 0 overwrites D).
__device__ __forceinline__ void wgmma_ss_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// D[64×128] += A[64×16]·B[16×128], A from registers (four bf16x2 per thread, Figure 148), B from shared memory MN-major
// (form "d, a, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b", imm-trans-b = 1, scale-d = 1).
__device__ __forceinline__ void wgmma_rs_m64n128k16(float (&d)[64], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                    uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
      "}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "r"(1));
}

// ------------------------------------------------------------------------------------------------------------------------
// Fast kernel
// ------------------------------------------------------------------------------------------------------------------------
// kBSHD = false: tensors [B, H, S, D] (1p), tensor map dims {D, S, H, B}; true: [B, S, H, D] (2p), dims {D, H, S, B}.
// Work item of CTA `bid`: heads in sections of `hs` (bh = b·Hq + h, section-major), inside a section the query tile
// nT-1-r/nh first (longest first), head h0 + r%nh minor.
struct FastParams {
  ob_bf16* out;
  int S, D, Hq, G;     // G = query heads per kv head (1 for 1p)
  int BH, nT, hs;      // BH = B·Hq, nT = ceil(S/128), hs = heads per section
  float scale_log2;    // D^(-1/2) · log2(e)
};

// One online-softmax step on a fresh score tile s (raw dot products, -inf where masked) for this thread's two rows:
// running maxima m (raw units), s turned into probabilities 2^(s·sl2 - m·sl2), their sum added to this thread's part of
// the running sums l (after rescaling l); corr = 2^((m_old - m_new)·sl2) is returned for the caller's O. Rows rt0 hold
// registers 4i, 4i+1, rows rt0 + 8 registers 4i+2, 4i+3; the 4 lanes of a quad hold one row between them.
__device__ __forceinline__ void softmax_step(float (&s)[64], float& m0, float& m1, float& l0, float& l1, float sl2,
                                             float& corr0, float& corr1) {
  float mx0 = m0, mx1 = m1;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    mx0 = fmaxf(mx0, fmaxf(s[4 * i], s[4 * i + 1]));
    mx1 = fmaxf(mx1, fmaxf(s[4 * i + 2], s[4 * i + 3]));
  }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  // exp2 offsets; a row still all -inf (cannot happen: column 0 of the diagonal tile, the first one, is never masked)
  // would give 0, not NaN.
  const float base0 = mx0 == -INFINITY ? 0.f : mx0 * sl2;
  const float base1 = mx1 == -INFINITY ? 0.f : mx1 * sl2;
  corr0 = ex2(m0 * sl2 - base0);  // m = -inf (first tile) → 0; m unchanged → exactly 1
  corr1 = ex2(m1 * sl2 - base1);
  m0 = mx0;
  m1 = mx1;
  float ps0 = 0.f, ps1 = 0.f;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    s[4 * i] = ex2(fmaf(s[4 * i], sl2, -base0));
    s[4 * i + 1] = ex2(fmaf(s[4 * i + 1], sl2, -base0));
    s[4 * i + 2] = ex2(fmaf(s[4 * i + 2], sl2, -base1));
    s[4 * i + 3] = ex2(fmaf(s[4 * i + 3], sl2, -base1));
    ps0 += s[4 * i] + s[4 * i + 1];
    ps1 += s[4 * i + 2] + s[4 * i + 3];
  }
  l0 = l0 * corr0 + ps0;
  l1 = l1 * corr1 + ps1;
}

// P in bf16 as the A fragments of the k16 steps of P·V: step kk covers keys 16kk..16kk+15 = S registers 8kk..8kk+7, and
// {8kk, 8kk+1} (row r, k lo), {8kk+2, 8kk+3} (row r+8, k lo), {8kk+4, 8kk+5} (row r, k hi), {8kk+6, 8kk+7} (row r+8, k hi)
// are exactly A registers 0..3 of Figure 148: A register 4kk+j = pack(s[8kk+2j], s[8kk+2j+1]).
__device__ __forceinline__ void pack_p(const float (&s)[64], uint32_t (&pa)[32]) {
#pragma unroll
  for (int j = 0; j < 32; ++j) pa[j] = pack_bf16(s[2 * j], s[2 * j + 1]);
}

// S = Q·Kᵀ for this warpgroup's 64 rows: 8 k16 steps over the head dims; step kk reads chunk kk/4 (dims 64·(kk/4)..) at
// +32 B·(kk%4) inside the 128-byte rows, for Q (A) and K (B) alike. Not waited for here.
__device__ __forceinline__ void issue_qk(float (&s)[64], uint32_t sQw, uint32_t sKs) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    const uint32_t koff = uint32_t(kk >> 2) * kChunkBytes + uint32_t(kk & 3) * 32u;
    wgmma_ss_m64n128k16(s, desc_k_major(sQw + koff), desc_k_major(sKs + koff), kk > 0 ? 1 : 0);
  }
  wgmma_commit();
}
// O += P·V: 8 k16 steps over the 128 keys of the tile; step kk reads V rows 16kk.. (16 rows × 128 B = 2048 B further).
__device__ __forceinline__ void issue_pv(float (&o)[64], const uint32_t (&pa)[32], uint32_t sVs) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)
    wgmma_rs_m64n128k16(o, pa[4 * kk], pa[4 * kk + 1], pa[4 * kk + 2], pa[4 * kk + 3],
                        desc_mn_major(sVs + uint32_t(kk) * 2048u));
  wgmma_commit();
}

template <bool kBSHD>
__global__ void __launch_bounds__(kThreads, 1)
    fa_fwd_wgmma(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                 const __grid_constant__ CUtensorMap tmV, const FastParams p) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;  // 1024-aligned: the 128B swizzle pattern repeats every 1024 B
  const uint32_t sQ = base + kOffQ, sK = base + kOffK, sV = base + kOffV;
  // barriers (+ 8·stage): Q full; K full, V full (producer arrival + TMA bytes); K empty, V empty (256 consumer arrivals)
  const uint32_t barQ = base + kOffBar;
  const uint32_t barK = barQ + 8, barV = barK + 8 * kStages, barEK = barV + 8 * kStages, barEV = barEK + 8 * kStages;

  // ---- work item ----
  const int bid = int(blockIdx.x);
  const int per_sec = p.hs * p.nT;
  const int sec = bid / per_sec;
  const int r = bid - sec * per_sec;
  const int h0 = sec * p.hs;
  const int nh = min(p.hs, p.BH - h0);
  const int t = p.nT - 1 - r / nh;  // query tile: rows 128t .. 128t+127
  const int bh = h0 + r % nh;
  const int b = bh / p.Hq, h = bh - b * p.Hq;
  const int g = h / p.G;            // kv head of query head h: ⌊h / G⌋
  const int nkv = t + 1;            // kv tiles t, t-1, .., 0 (kBM == kBN: tile t is the diagonal one)

  const int tid = int(threadIdx.x);
  const int wg = tid >> 7;

  if (tid == 0) {
    mbar_init(barQ, 1);
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      mbar_init(barK + 8 * s, 1);
      mbar_init(barV + 8 * s, 1);
      mbar_init(barEK + 8 * s, kEmptyArrivals);
      mbar_init(barEV + 8 * s, kEmptyArrivals);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    fence_proxy_async();  // the barrier inits visible to the async proxy (TMA complete_tx)
  }
  __syncthreads();

  if (wg == 0) {
    // ================= producer warpgroup: one thread issues every TMA copy =================
    setmaxnreg_dec<kProducerRegs>();
    if (tid == 0) {
      // Q tile: coordinates {dim, row or head, head or row, batch}; rows 128t.. of query head h.
      const int qrow = t * kBM;
      mbar_arrive_expect_tx(barQ, kTileBytes);
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        if (kBSHD) tma_load_4d(sQ + c * kChunkBytes, &tmQ, barQ, 64 * c, h, qrow, b);
        else tma_load_4d(sQ + c * kChunkBytes, &tmQ, barQ, 64 * c, qrow, h, b);
      }
#pragma unroll 1
      for (int it = 0; it < nkv; ++it) {
        const int krow = (t - it) * kBN;      // kv tile t - it: diagonal first
        const int st = it % kStages;
        const uint32_t ph = uint32_t(it / kStages) & 1u;
        mbar_wait(barEK + 8 * st, ph ^ 1u);    // K slot free (first pass over the ring: returns at once)
        mbar_arrive_expect_tx(barK + 8 * st, kTileBytes);
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const uint32_t dst = sK + st * kTileBytes + c * kChunkBytes;
          if (kBSHD) tma_load_4d(dst, &tmK, barK + 8 * st, 64 * c, g, krow, b);
          else tma_load_4d(dst, &tmK, barK + 8 * st, 64 * c, krow, g, b);
        }
        mbar_wait(barEV + 8 * st, ph ^ 1u);    // V slot free
        mbar_arrive_expect_tx(barV + 8 * st, kTileBytes);
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const uint32_t dst = sV + st * kTileBytes + c * kChunkBytes;
          if (kBSHD) tma_load_4d(dst, &tmV, barV + 8 * st, 64 * c, g, krow, b);
          else tma_load_4d(dst, &tmV, barV + 8 * st, 64 * c, krow, g, b);
        }
      }
    }
  } else {
    // ================= consumer warpgroups: 64 query rows each =================
    setmaxnreg_inc<kConsumerRegs>();
    const int w = wg - 1;                    // rows 64w .. 64w+63 of the tile
    const int lane = tid & 31;
    const int wq = (tid >> 5) & 3;           // warp in the warpgroup: rows 16wq .. 16wq+15 of the 64
    const int q4 = lane & 3;
    const int rl0 = 16 * wq + (lane >> 2);   // this thread's rows in the warpgroup's 64: rl0 and rl0 + 8
    const int rt0 = 64 * w + rl0;            // ... and in the 128-row tile
    const float sl2 = p.scale_log2;
    // This warpgroup's 64 rows of Q: row 64w at 64w·128 B = 8192w (1024-aligned) inside each 64-dim chunk.
    const uint32_t sQw = sQ + uint32_t(w) * 8192u;
    const uint32_t scratch = barQ + kScratchOff;  // see the st.shared in the loop

    float o[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY;    // running max of the raw scores of rows rt0, rt0 + 8
    float l0 = 0.f, l1 = 0.f;                // this thread's part of the running sums (quad-reduced at the end)
    float s[64];                             // scores, then probabilities, of the current tile
    uint32_t pa[32];                         // probabilities of the previous tile in bf16 (A operand of P·V)
    float corr0, corr1;

    // ---- first tile (it = 0, the diagonal one, n = t): S, causal mask, softmax, P ----
    mbar_wait(barQ, 0);
    mbar_wait(barK, 0);
    wgmma_fence();
    issue_qk(s, sQw, sK);
    wgmma_wait<0>();
    fence_regs(s);
    mbar_arrive(barEK);  // K slot 0 read
    // tile-local column c > tile-local row → -inf (the reference's -1e9: p = 0 exactly)
#pragma unroll
    for (int i = 0; i < 16; ++i) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = 8 * i + 2 * q4 + e;
        if (c > rt0) s[4 * i + e] = -INFINITY;
        if (c > rt0 + 8) s[4 * i + 2 + e] = -INFINITY;
      }
    }
    softmax_step(s, m0, m1, l0, l1, sl2, corr0, corr1);  // O is still 0: nothing to rescale
    pack_p(s, pa);

    // ---- steady state: tile it's S = Q·Kᵀ runs on the tensor cores together with tile it-1's O += P·V; the softmax of
    // tile it overlaps the P·V; O is rescaled once the P·V is done ----
#pragma unroll 1
    for (int it = 1; it < nkv; ++it) {
      const int st = it % kStages, sp = (it - 1) % kStages;
      const uint32_t ph = uint32_t(it / kStages) & 1u, php = uint32_t((it - 1) / kStages) & 1u;
      mbar_wait(barK + 8 * st, ph);
      mbar_wait(barV + 8 * sp, php);                    // (loaded long ago; waited here so that no branch separates
      fence_regs(o);                                    //  the fence from the wgmma that use the registers)
      fence_regs(pa);
      wgmma_fence();
      issue_qk(s, sQw, sK + st * kTileBytes);           // group 1: S_it
      issue_pv(o, pa, sV + sp * kTileBytes);            // group 2: O += P_{it-1}·V_{it-1}
      wgmma_wait<1>();                                  // S_it done (groups complete in order)
      fence_regs(s);
      mbar_arrive(barEK + 8 * st);                      // K slot st read
      softmax_step(s, m0, m1, l0, l1, sl2, corr0, corr1);
      // A shared store of a value that depends on every exponential: ptxas keeps memory operations in order with the
      // wgmma wait, so the softmax cannot be scheduled after it (without this, ptxas hoists the wait above the
      // exponentials and the P·V no longer overlaps the softmax). The word is an unused one of the barrier area.
      st_shared_u32(scratch, __float_as_uint(l0 + l1));
      wgmma_wait<0>();                                  // P_{it-1}·V_{it-1} done
      fence_regs(o);
      fence_regs(pa);                                   // pa stays untouched until here (read by the async wgmma)
      mbar_arrive(barEV + 8 * sp);                      // V slot sp read
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        o[4 * i] *= corr0;
        o[4 * i + 1] *= corr0;
        o[4 * i + 2] *= corr1;
        o[4 * i + 3] *= corr1;
      }
      pack_p(s, pa);
    }

    // ---- last P·V ----
    {
      const int sp = (nkv - 1) % kStages;
      const uint32_t php = uint32_t((nkv - 1) / kStages) & 1u;
      mbar_wait(barV + 8 * sp, php);
      fence_regs(o);
      fence_regs(pa);
      wgmma_fence();
      issue_pv(o, pa, sV + sp * kTileBytes);
      wgmma_wait<0>();
      fence_regs(o);
      fence_regs(pa);
      mbar_arrive(barEV + 8 * sp);
    }

    // ---- epilogue: O / l, staged in bf16 in this warpgroup's own Q rows (its last wgmma on them has completed), then
    // 16-byte coalesced stores of the rows < S and dims < D ----
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;  // l ≥ 1: the row max contributes exp2(0) = 1
    fence_proxy_async();  // generic writes below follow async-proxy (wgmma) reads of the same bytes
    // Staging layout (same 128B swizzle as the tile): row rl (0..63) of chunk c at sOw + c·kChunkBytes + rl·128,
    // 16-byte unit u at (u ^ (rl % 8))·16. Column 8i + 2q4 lies in chunk i/8, unit i%8, byte 4·q4.
    const uint32_t sOw = sQ + uint32_t(w) * 8192u;
    const int rl1 = rl0 + 8;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int c = i >> 3, u = i & 7;
      st_shared_u32(sOw + c * kChunkBytes + rl0 * 128 + ((u ^ (rl0 & 7)) << 4) + 4 * q4,
                    pack_bf16(o[4 * i] * inv0, o[4 * i + 1] * inv0));
      st_shared_u32(sOw + c * kChunkBytes + rl1 * 128 + ((u ^ (rl1 & 7)) << 4) + 4 * q4,
                    pack_bf16(o[4 * i + 2] * inv1, o[4 * i + 3] * inv1));
    }
    named_barrier_sync(1 + w, 128);
    const int wt = tid & 127;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int cid = wt + 128 * k;         // 64 rows × 16 units of 16 B
      const int rl = cid >> 4, cu = cid & 15, c = cu >> 3, u = cu & 7;
      const int row = t * kBM + 64 * w + rl;
      const int d0 = 64 * c + 8 * u;
      if (row < p.S && d0 < p.D) {
        const uint4 v = ld_shared_v4(sOw + c * kChunkBytes + rl * 128 + ((u ^ (rl & 7)) << 4));
        const int64_t off = kBSHD ? ((int64_t(b) * p.S + row) * p.Hq + h) * p.D + d0
                                  : (int64_t(bh) * p.S + row) * p.D + d0;
        *reinterpret_cast<uint4*>(p.out + off) = v;
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------------------------------
// Simple path: one block of 128 threads per (b, query head, row i); fp32 online softmax over chunks of 128 keys j ≤ i.
// Shared: q[D] (fp32), acc[D], p[128].
// ------------------------------------------------------------------------------------------------------------------------
constexpr int kSimpleThreads = 128;  // a multiple of 32 (ob_block_max / ob_block_sum)

template <bool kBSHD>
__global__ void __launch_bounds__(kSimpleThreads)
    fa_fwd_simple(const ob_bf16* __restrict__ Q, const ob_bf16* __restrict__ K, const ob_bf16* __restrict__ V,
                  ob_bf16* __restrict__ O, int S, int D, int Hq, int Hkv, float scale) {
  extern __shared__ float sh[];
  float* const sq = sh;
  float* const sacc = sh + D;
  float* const sp = sh + 2 * D;
  const int64_t blk = blockIdx.x;  // (b·Hq + h)·S + i
  const int i = int(blk % S);
  const int64_t bh = blk / S;
  const int b = int(bh / Hq), h = int(bh % Hq);
  const int g = h / (Hq / Hkv);
  // element (row s, dim d) of query head h / kv head g
  auto qoff = [&](int64_t s) { return kBSHD ? ((int64_t(b) * S + s) * Hq + h) * D : ((int64_t(b) * Hq + h) * S + s) * D; };
  auto koff = [&](int64_t s) { return kBSHD ? ((int64_t(b) * S + s) * Hkv + g) * D : ((int64_t(b) * Hkv + g) * S + s) * D; };
  const ob_bf16* q = Q + qoff(i);
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    sq[d] = ob_load(q, d);
    sacc[d] = 0.f;
  }
  __syncthreads();
  float m = -INFINITY, l = 0.f;
  for (int j0 = 0; j0 <= i; j0 += kSimpleThreads) {
    const int j = j0 + int(threadIdx.x);
    float sc = -INFINITY;
    if (j <= i) {
      const ob_bf16* k = K + koff(j);
      float dot = 0.f;
      for (int d = 0; d < D; ++d) dot = fmaf(sq[d], ob_load(k, d), dot);
      sc = dot * scale;
    }
    const float mc = ob_block_max(sc);
    const float mn = fmaxf(m, mc);       // finite: key j0 ≤ i is in every chunk
    const float corr = expf(m - mn);     // m = -inf on the first chunk → 0
    const float pj = j <= i ? expf(sc - mn) : 0.f;
    const float ls = ob_block_sum(pj);
    l = l * corr + ls;
    m = mn;
    sp[threadIdx.x] = pj;
    __syncthreads();
    const int cnt = min(kSimpleThreads, i - j0 + 1);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
      float a = sacc[d] * corr;
      for (int jj = 0; jj < cnt; ++jj) a = fmaf(sp[jj], ob_load(V + koff(j0 + jj), d), a);
      sacc[d] = a;
    }
    __syncthreads();
  }
  ob_bf16* o = O + qoff(i);
  for (int d = threadIdx.x; d < D; d += blockDim.x) ob_store(o, d, sacc[d] / l);
}

// ------------------------------------------------------------------------------------------------------------------------
// Host side
// ------------------------------------------------------------------------------------------------------------------------
typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                                  const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn load_encode_fn() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<EncodeTiledFn>(fn);
}

// A rank-4 bf16 tensor map, dims {d0 (contiguous), d1, d2, d3} with byte strides {s1, s2, s3}, box {64, b1, b2, 1},
// 128-byte swizzle, zero fill out of bounds.
bool encode_map(EncodeTiledFn enc, CUtensorMap* map, const void* ptr, const uint64_t dims[4], const uint64_t strides[3],
                uint32_t b1, uint32_t b2) {
  const cuuint64_t gdim[4] = {dims[0], dims[1], dims[2], dims[3]};
  const cuuint64_t gstride[3] = {strides[0], strides[1], strides[2]};
  const cuuint32_t box[4] = {64u, b1, b2, 1u};
  const cuuint32_t estride[4] = {1u, 1u, 1u, 1u};
  return enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(ptr), gdim, gstride, box, estride,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Heads per schedule section: whole kv groups whose k and v (2·S·D bf16 each) fit in ~8 MB of L2 together.
int heads_per_section(int BH, int S, int D, int G) {
  const int64_t group_bytes = 2 * int64_t(S) * D * int64_t(sizeof(ob_bf16));
  int64_t groups = (int64_t(8) << 20) / (group_bytes > 0 ? group_bytes : 1);
  if (groups < 1) groups = 1;
  int64_t hs = groups * G;
  if (hs > BH) hs = BH;
  return int(hs);
}

template <bool kBSHD>
int32_t run_simple(const ob_bf16* Q, const ob_bf16* K, const ob_bf16* V, ob_bf16* O, int B, int S, int Hq, int Hkv, int D,
                   float scale, cudaStream_t stream) {
  const int64_t blocks = int64_t(B) * Hq * S;
  const size_t smem = size_t(2 * D + kSimpleThreads) * sizeof(float);
  if (smem > 48 * 1024)
    OB_CUDA_TRY(cudaFuncSetAttribute(fa_fwd_simple<kBSHD>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  fa_fwd_simple<kBSHD><<<unsigned(blocks), kSimpleThreads, smem, stream>>>(Q, K, V, O, S, D, Hq, Hkv, scale);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}

// Runs the attention with layout kBSHD. Q: B·Hq heads, K/V: B·Hkv heads, S rows of D.
template <bool kBSHD>
int32_t run_attention(const ob_bf16* Q, const ob_bf16* K, const ob_bf16* V, ob_bf16* O, int B, int S, int Hq, int Hkv,
                      int D, cudaStream_t stream) {
  const float scale = float(1.0 / sqrt(double(D)));
  bool fast = D >= 8 && D <= kDMax && D % 8 == 0 && aligned16(Q) && aligned16(K) && aligned16(V) && aligned16(O);
#ifdef OB_EXPERT_SIMPLE
  fast = false;
#endif
  if (fast) {
    int dev = 0, optin = 0;
    OB_CUDA_TRY(cudaGetDevice(&dev));
    OB_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (optin < int(kSmemBytes)) fast = false;
  }
  if (!fast) return run_simple<kBSHD>(Q, K, V, O, B, S, Hq, Hkv, D, scale, stream);

  static const EncodeTiledFn enc = load_encode_fn();
  if (!enc) return 21;
  const uint64_t e = sizeof(ob_bf16);
  CUtensorMap tmQ, tmK, tmV;
  int bad = 0;  // 22 / 23 / 24: the q / k / v tensor map was refused
  if (kBSHD) {  // [B, S, H, D]: dims {D, H, S, B}, box {64, 1, 128, 1}
    const uint64_t dq[4] = {uint64_t(D), uint64_t(Hq), uint64_t(S), uint64_t(B)};
    const uint64_t sq[3] = {D * e, uint64_t(Hq) * D * e, uint64_t(S) * Hq * D * e};
    const uint64_t dk[4] = {uint64_t(D), uint64_t(Hkv), uint64_t(S), uint64_t(B)};
    const uint64_t sk[3] = {D * e, uint64_t(Hkv) * D * e, uint64_t(S) * Hkv * D * e};
    if (!encode_map(enc, &tmQ, Q, dq, sq, 1, kBM)) bad = 22;
    else if (!encode_map(enc, &tmK, K, dk, sk, 1, kBN)) bad = 23;
    else if (!encode_map(enc, &tmV, V, dk, sk, 1, kBN)) bad = 24;
  } else {      // [B, H, S, D]: dims {D, S, H, B}, box {64, 128, 1, 1}
    const uint64_t dq[4] = {uint64_t(D), uint64_t(S), uint64_t(Hq), uint64_t(B)};
    const uint64_t sq[3] = {D * e, uint64_t(S) * D * e, uint64_t(Hq) * S * D * e};
    const uint64_t dk[4] = {uint64_t(D), uint64_t(S), uint64_t(Hkv), uint64_t(B)};
    const uint64_t sk[3] = {D * e, uint64_t(S) * D * e, uint64_t(Hkv) * S * D * e};
    if (!encode_map(enc, &tmQ, Q, dq, sq, kBM, 1)) bad = 22;
    else if (!encode_map(enc, &tmK, K, dk, sk, kBN, 1)) bad = 23;
    else if (!encode_map(enc, &tmV, V, dk, sk, kBN, 1)) bad = 24;
  }
  if (bad) {
    // A box larger than the tensor (D < 64 or S < 128: the test size) is legal as far as the documentation goes (the
    // out-of-bound part is zero-filled); should the driver refuse it anyway, such small shapes take the simple path.
    // At sizes where every box fits, a refusal is an error worth seeing.
    if (D < 64 || S < kBM) return run_simple<kBSHD>(Q, K, V, O, B, S, Hq, Hkv, D, scale, stream);
    return bad;
  }
  FastParams fp;
  fp.out = O;
  fp.S = S;
  fp.D = D;
  fp.Hq = Hq;
  fp.G = Hq / Hkv;
  fp.BH = B * Hq;
  fp.nT = int((S + kBM - 1) / kBM);
  fp.hs = heads_per_section(fp.BH, S, D, fp.G);
  fp.scale_log2 = scale * 1.4426950408889634f;
  OB_CUDA_TRY(cudaFuncSetAttribute(fa_fwd_wgmma<kBSHD>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemBytes)));
  const unsigned grid = unsigned(fp.BH) * unsigned(fp.nT);
  fa_fwd_wgmma<kBSHD><<<grid, kThreads, kSmemBytes, stream>>>(tmQ, tmK, tmV, fp);
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}

bool is_bf16_rank4(const ob_tensor& t) { return t.dtype == OB_BF16 && t.rank == 4 && t.data != nullptr; }

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call*) { return 0; }

extern "C" int32_t ob_run(const ob_call* call) {
  if (call->num_inputs != 3 || call->num_outputs != 1) return 10;
  const ob_tensor& q = call->inputs[0];
  const ob_tensor& k = call->inputs[1];
  const ob_tensor& v = call->inputs[2];
  const ob_tensor& o = call->outputs[0];
  if (!is_bf16_rank4(q) || !is_bf16_rank4(k) || !is_bf16_rank4(v) || !is_bf16_rank4(o)) return 10;
  for (int i = 0; i < 4; ++i)
    if (k.shape[i] != q.shape[i] || v.shape[i] != q.shape[i] || o.shape[i] != q.shape[i]) return 10;
  // [B, H, S, D]
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  if (B < 1 || H < 1 || S < 1 || D < 1 || B * H * S > (int64_t(1) << 31) - 1 || S > (int64_t(1) << 30)) return 10;
  return run_attention<false>(ob_in_bf16(call, 0), ob_in_bf16(call, 1), ob_in_bf16(call, 2), ob_out_bf16(call, 0), int(B),
                              int(S), int(H), int(H), int(D), ob_stream(call));
}
