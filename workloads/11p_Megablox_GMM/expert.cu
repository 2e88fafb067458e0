// 11p_Megablox_GMM expert (cuda, sm_90a): grouped GEMM. lhs (M,K) bf16, rhs (G,K,N) bf16 stored
// (in, out), group_sizes (G,) int32, out (M,N) bf16: out[r,:] = lhs[r,:] · rhs[g] for the rows r of
// group g (consecutive, start_g = Σ_{g'<g} size_g'), zero for rows past Σ size. fp32 accumulation.
// No libraries: TMA + mbarrier pipeline + wgmma, written from the PTX ISA.
//
// Estimate at full size (M=32768, K=4096, N=1536, G=128): 4.12e11 useful FLOP; with 64-row
// granularity the ragged groups cost ~36.7K row-equivalents (1.12x) -> ~0.66 ms at 700 TFLOP/s;
// rhs is 1.61 GB (+0.37 GB lhs/out) -> ~0.47 ms of HBM traffic, overlapped with the math.
// Target <= 0.8 ms.
//
// Design (fast path):
//  - One launch, no host synchronisation: every CTA reads group_sizes (device int32) and builds the
//    tile schedule in shared memory (warp scan): per group g, row range [rs_g, re_g) (clamped to
//    M; negative sizes read as 0), ceil(rows/128) M-tiles x ceil(N/256) N-tiles, prefix sums of the
//    tile counts. Tile t -> group by binary search; inside a group, M-tile major, N-tile fastest
//    (consecutive tiles share the lhs panel; a group's rhs slice stays in L2 while its tiles run).
//  - Persistent CTAs (grid = #SMs) take tiles from a global atomic counter (dynamic scheduling:
//    tiles of a 47-row group cost half a full tile). The producer thread fetches the next tile id
//    and passes it to the consumers through a 2-slot shared-memory ring (tile_full/tile_empty
//    mbarriers). The counter lives in the workspace and is zeroed by a cudaMemsetAsync per call.
//  - Tiles of 128 rows x 256 columns x 64 k per stage, 4 stages, as in 8p's expert: one producer
//    warpgroup (setmaxnreg 40; one thread issues TMA), two consumer warpgroups (setmaxnreg 232),
//    each 64 rows with wgmma.mma_async.m64n256k16 (bf16, fp32 accumulators), rhs N-major
//    (imm-trans-b = 1). A tile's rows may run past its group (into the next group, or past M: TMA
//    zero-fills those); the epilogue stores only the group's rows. A consumer warpgroup whose 64
//    rows hold no row of the group skips its MMAs (but still waits for / releases every stage, so
//    both warpgroups stay in step with the ring): a <=64-row tile costs half a 128-row tile.
//  - lhs through a 2-D tensor map {K, M}; rhs through a 3-D tensor map {N, K, G} so that a k block
//    past K reads zeros, never the next group's weights.
//  - Epilogue (default for G <= 128, the full size's G): a consumer warpgroup whose 64 rows all belong
//    to the group converts them to bf16 and writes them as 4 boxes of 64x64 through two 8 KiB
//    staging buffers in shared memory (stmatrix into TMA's 128B-swizzled layout,
//    fence.proxy.async, named barrier, one TMA store per box, double-buffered with
//    cp.async.bulk.wait_group.read); the stores drain while the next tile's MMAs run. A warpgroup
//    holding the last, partial rows of a group (a TMA store would overwrite the next group's rows)
//    stores bf16x2 from registers, masked to the group's rows; so does every warpgroup when G > 128
//    (no room for both the staging buffers and a larger schedule) or with OB_EXPERT_DIRECT_EPILOGUE.
//    Shared memory: 4 x 48 KiB stages + 32 KiB staging + schedule + 1 KiB alignment slack <= 227 KiB.
//  - Rows r >= Σ size (none with the workload's sizes) are zeroed by the consumers.
//  Accepted shapes: N % 8 == 0, K % 8 == 0 (TMA pitches), N, K >= 8, 1 <= G <= 1024. Everything
//  else (the test size 301x67x45, G = 9) takes the simple kernel below.
//
// Compile-time switches:
//  - OB_EXPERT_SIMPLE: always use the simple kernel (smem-tiled fp32 FMA per 64-row block, looping
//    over the groups that intersect the block; obviously right, slow).
//  - OB_EXPERT_FORCE_FAST: shapes whose pitches are not multiples of 8 elements are copied into
//    zero-padded workspace buffers and still run the fast kernel (so `opbench crosscheck` at the
//    test size exercises the TMA/wgmma path). Off by default.
//  - OB_EXPERT_DIRECT_EPILOGUE: registers -> global stores only, no staged TMA-store epilogue (to
//    isolate an epilogue fault).
//
// Return codes of ob_run (besides 0 and OB_CUDA_ERROR_BASE + cudaError_t):
//   2 bad ranks/shapes, 3 extents too large, 10 cuTensorMapEncodeTiled entry point not found,
//   11 encoding lhs's tensor map failed, 12 encoding rhs's tensor map failed, 13 no workspace,
//   14 workspace too small, 15 encoding out's tensor map failed.
//
// References (PTX ISA 9.0, "Asynchronous Warpgroup Level Matrix Instructions", section 9.7.15):
//   [ML] 9.7.15.5.1.2 Shared Memory Matrix Layout (canonical layouts, LBO/SBO definitions),
//   [MD] 9.7.15.5.1.2.2 Matrix Descriptor Format, [FD] 9.7.15.5.1.1.1 Figure 149 (accumulator D
//   fragment of m64nNk16), [WG] 9.7.15.5.2 wgmma.mma_async; [TMA] 9.7.9.25 cp.async.bulk.tensor;
//   [MB] 9.7.13.15 mbarrier; CUDA driver API cuTensorMapEncodeTiled (cuda.h).
#include <opbench/cuda_util.cuh>

#include <cuda.h>  // CUtensorMap and its enums only; the encode function comes from cudaGetDriverEntryPointByVersion

#include <stdint.h>
#include <string.h>

OB_DEFINE_ABI_VERSION()

namespace {

// ---------------------------------------------------------------------------------------------
// Tile configuration
// ---------------------------------------------------------------------------------------------
constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 4;
constexpr int kThreads = 384;                     // producer WG + 2 consumer WGs
constexpr uint32_t kABytes = kBM * kBK * 2;       // 16384: 128 rows x 128 B
constexpr uint32_t kBBoxBytes = 64 * kBK * 2;     // 8192: 64 k-rows x 128 B (64 n)
constexpr uint32_t kBBytes = kBN * kBK * 2;       // 32768: 4 boxes
constexpr uint32_t kStageBytes = kABytes + kBBytes;
constexpr int kMaxGroups = 1024;                  // largest G of the fast path
constexpr uint32_t kEpiBufBytes = 64 * 64 * 2;    // 8192: one 64-row x 64-column bf16 staging box (128B-swizzled)
// Shared memory from the 1024-aligned base: stages | epilogue staging (TMA-store variant: 2 boxes per
// consumer warpgroup, 32 KiB) | 256 bytes: 12 mbarriers (full[4], empty[4], tile_full[2],
// tile_empty[2]) in the first 128, then the tile ring [2] and the total row count | the schedule:
// tile_start[maxG + 1], row_start[maxG], row_end[maxG]. The TMA-store variant has room for G <= 128
// only (227 KiB in all); the direct-store variant takes G <= 1024.
template <bool kTmaStore>
struct Layout {
  static constexpr int kMaxG = kTmaStore ? 128 : kMaxGroups;
  static constexpr uint32_t kEpi = kStages * kStageBytes;
  static constexpr uint32_t kMisc = kEpi + (kTmaStore ? 4 * kEpiBufBytes : 0);
  static constexpr uint32_t kSched = kMisc + 256;
  static constexpr size_t kSmemBytes = 1024 /* alignment slack */ + kSched + size_t(3 * kMaxG + 1) * 4;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory budget");
};

// ---------------------------------------------------------------------------------------------
// PTX wrappers
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// [MB] mbarrier.init: expected arrival count of each phase.
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// [MB] arrive (one of the expected arrivals) and add `bytes` to the phase's expected transaction count.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// [MB] try_wait.parity P: true once the phase with parity P has completed. A fresh barrier is in
// phase 0, so waiting for parity 1 succeeds at once (used by the producer's first pass over the ring).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// [TMA] 2-D tiled bulk tensor copy global -> shared, completion counted in bytes on `bar`.
// Coordinates are element indices, innermost dimension first; out-of-bounds elements are zero.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Makes later (non-volatile) uses of r depend on a volatile asm placed after wgmma.wait_group, so
// the compiler cannot hoist reads of the accumulators above the wait.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// stmatrix.m8n8.x4.b16 (PTX ISA 9.7.14.5.16 stmatrix): stores four 8x8 b16 matrices; register ri of
// lane l holds row l/4, columns 2(l%4), 2(l%4)+1 of matrix i; lanes 8i..8i+7 give the 16-byte row
// addresses of matrix i (rows 0..7).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}
// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA) reads.
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// [TMA] 2-D tiled bulk tensor copy shared -> global (bulk-group completion); elements outside the
// tensor are not written.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Wait until at most N of this thread's bulk groups are still reading their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
// Named barrier over `count` threads (ids 1, 2: one per consumer warpgroup; 0 is __syncthreads).
__device__ __forceinline__ void named_bar_sync(int id, int count) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory"); }

// [MD] Matrix descriptor: bits 0-13 start address >> 4, 16-29 leading-dimension byte offset >> 4,
// 32-45 stride-dimension byte offset >> 4, 49-51 base offset (0: every swizzle pattern used here
// starts on a 1024-byte boundary), 62-63 swizzle mode (1 = 128-byte swizzle).
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((saddr & 0x3FFFFu) >> 4) | (uint64_t((lbo & 0x3FFFFu) >> 4) << 16) | (uint64_t((sbo & 0x3FFFFu) >> 4) << 32) |
         (uint64_t(1) << 62);
}

// A operand (K-major, 128B swizzle). [ML] canonical K-major SW128 layout, in units of 16-byte
// elements (T = 8 bf16): ((8,m),(T,2k)):((8T,SBO),(1,T)). Our A stage is 128 rows of 64 k (128 B
// per row, as TMA writes it with SWIZZLE_128B), so 8-row groups are 1024 B apart: SBO = 1024.
// LBO is unused for swizzled K-major layouts ("assumed 1"): encode 16 B (field value 1).
// The k16 slice kk of a 64-wide stage starts kk*32 bytes into the row; the swizzle is a function of
// the address bits (16-byte chunk index XOR (address/128)%8), so advancing the start address by 32 B
// inside a 1024-B-aligned atom selects the right chunks (the same address arithmetic TMA used).
__device__ __forceinline__ uint64_t desc_a(uint32_t saddr) { return make_desc(saddr, 16, 1024); }
// B operand (MN-major = N-major, 128B swizzle). [ML] canonical MN-major SW128 layout:
// ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)): 64 contiguous n (128 B) per k-row, 8 k-rows per 1024-B
// swizzle atom; LBO = distance between 64-wide n blocks, SBO = distance between 8-row k groups
// ([ML] "Leading dimension byte offset ... MN-major, swizzled: offset from the first
// (swizzle-byte-size/16) rows to the next (swizzle-byte-size/16) rows" = next 64 n; "Stride
// dimension byte offset ... MN-major, swizzled: offset from the first 8 columns to the next 8
// columns" = next 8 k). Our B stage holds 4 TMA boxes of 64 n x 64 k at 8192-B spacing, each box
// row k at k*128 B: LBO = 8192, SBO = 1024. The k16 slice kk starts kk*16 rows = kk*2048 B in.
__device__ __forceinline__ uint64_t desc_b(uint32_t saddr) { return make_desc(saddr, kBBoxBytes, 1024); }

// [WG] D(64x256, f32) (+)= A(64x16, bf16, smem desc, K-major) * B(16x256, bf16, smem desc, N-major).
// Operands: scale-d predicate (0 for the first k16 step of a tile: D = A*B), imm-scale-a = 1,
// imm-scale-b = 1, imm-trans-a = 0 (K-major), imm-trans-b = 1 (N-major).
__device__ __forceinline__ void wgmma_m64n256k16(float* d, uint64_t da, uint64_t db, uint32_t accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %130, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 1;\n\t}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
        "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
        "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
        "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]),
        "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
        "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]),
        "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]),
        "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]),
        "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]),
        "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]),
        "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(accumulate)
      : "memory");
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low 16 bits, lower address) = lo
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}


// [TMA] 3-D tiled bulk tensor copy global -> shared (coordinates innermost first).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Largest g in [0, G) with tile_start[g] <= t (tile_start[0] = 0 <= t). For t < total tiles that group
// is non-empty: an empty g has tile_start[g + 1] == tile_start[g] <= t, so g + 1 qualifies too.
__device__ __forceinline__ int find_group(const int* tile_start, int G, int t) {
  int lo = 0, hi = G - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (tile_start[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// ---------------------------------------------------------------------------------------------
// Fast kernel
// ---------------------------------------------------------------------------------------------
// kTmaStore: a warpgroup whose 64 rows all belong to the tile's group writes them through 128B-
// swizzled shared staging boxes (stmatrix) and TMA stores (needs N % 8 == 0); a warpgroup with a
// partial slice (the last rows of a group), and every warpgroup of the other variant, stores
// bf16x2 straight from registers, masked to the group's rows.
template <bool kTmaStore>
__global__ void __launch_bounds__(kThreads, 1)
    gmm_tma_wgmma(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                  const __grid_constant__ CUtensorMap tmC, ob_bf16* __restrict__ out, const int32_t* __restrict__ group_sizes,
                  int* __restrict__ tile_counter, int M, int N, int K, int G) {
  using L = Layout<kTmaStore>;
  extern __shared__ uint8_t smem_raw[];
  // 1024-byte alignment: the 128B swizzle pattern repeats every 1024 B and both TMA and wgmma
  // compute it from address bits, so every stage (and every A/B sub-tile) starts on a 1024-B boundary.
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  uint8_t* const gbase = smem_raw + (base - raw);  // generic pointer to `base`
  const uint32_t epi = base + L::kEpi;  // staging box (warpgroup cw, buffer b) at epi + (2cw + b) * 8192
  const uint32_t bars = base + L::kMisc;
  auto full_bar = [&](int s) { return bars + 8u * uint32_t(s); };
  auto empty_bar = [&](int s) { return bars + 8u * uint32_t(kStages + s); };
  auto tile_full_bar = [&](int i) { return bars + 8u * uint32_t(2 * kStages + i); };
  auto tile_empty_bar = [&](int i) { return bars + 8u * uint32_t(2 * kStages + 2 + i); };
  auto stage_a = [&](int s) { return base + uint32_t(s) * kStageBytes; };
  auto stage_b = [&](int s) { return base + uint32_t(s) * kStageBytes + kABytes; };
  volatile int* const tile_ring = reinterpret_cast<volatile int*>(gbase + L::kMisc + 128);  // [2]
  int* const total_rows_p = reinterpret_cast<int*>(gbase + L::kMisc + 136);
  int* const tile_start = reinterpret_cast<int*>(gbase + L::kSched);  // [G + 1]
  int* const row_start = tile_start + (L::kMaxG + 1);                 // [G]
  int* const row_end = row_start + L::kMaxG;                          // [G]

  const int num_n = (N + kBN - 1) / kBN;
  const int nk = (K + kBK - 1) / kBK;
  const int warp_id = threadIdx.x / 32, lane = threadIdx.x & 31;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_bar(s), 1);    // the producer's arrive.expect_tx (+ the TMA bytes)
      mbar_init(empty_bar(s), 8);   // lane 0 of each of the 8 consumer warps
    }
    for (int i = 0; i < 2; ++i) {
      mbar_init(tile_full_bar(i), 1);   // the producer, after writing tile_ring[i]
      mbar_init(tile_empty_bar(i), 8);  // lane 0 of each consumer warp, after reading it
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  if (warp_id == 1) {
    // The schedule, 32 groups at a time: inclusive warp scans of the (clamped) sizes and tile counts.
    long long run_rows = 0;
    int run_tiles = 0;
    for (int g0 = 0; g0 < G; g0 += 32) {
      const int g = g0 + lane;
      long long size = 0;
      if (g < G) {
        const int v = group_sizes[g];
        size = v > 0 ? v : 0;
      }
      long long incl = size;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const long long y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += y;
      }
      const long long start = run_rows + incl - size;
      const long long rs = start < M ? start : M;
      const long long re = start + size < M ? start + size : M;
      const int rows = int(re - rs);
      const int tiles = ((rows + kBM - 1) / kBM) * num_n;
      int tincl = tiles;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, tincl, o);
        if (lane >= o) tincl += y;
      }
      if (g < G) {
        row_start[g] = int(rs);
        row_end[g] = int(re);
        tile_start[g] = run_tiles + tincl - tiles;
      }
      run_rows += __shfl_sync(0xffffffffu, incl, 31);
      run_tiles += __shfl_sync(0xffffffffu, tincl, 31);
    }
    if (lane == 0) {
      tile_start[G] = run_tiles;
      *total_rows_p = int(run_rows < M ? run_rows : M);
    }
  }
  __syncthreads();
  const int total_tiles = tile_start[G];

  if (threadIdx.x < 128) {
    // ------------------------------- producer -------------------------------
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      tma_prefetch_desc(&tmA);
      tma_prefetch_desc(&tmB);
      int s = 0;
      uint32_t phase = 0;
      for (int it = 0;; ++it) {
        int t = atomicAdd(tile_counter, 1);
        if (t >= total_tiles) t = -1;
        const int slot = it & 1;
        mbar_wait(tile_empty_bar(slot), ((uint32_t(it) >> 1) & 1u) ^ 1u);
        tile_ring[slot] = t;
        mbar_arrive(tile_full_bar(slot));  // release: orders the store above before the arrival
        if (t < 0) break;
        const int g = find_group(tile_start, G, t);
        const int local = t - tile_start[g];
        const int m0 = row_start[g] + (local / num_n) * kBM;
        const int n0 = (local % num_n) * kBN;
        for (int kb = 0; kb < nk; ++kb) {
          mbar_wait(empty_bar(s), phase ^ 1u);  // consumers released this slot (first pass: free)
          // rhs boxes wholly past N (only when N % 256 != 0) are not loaded: the columns they would
          // feed are never stored, so stale shared memory there is harmless. Every other box is at
          // least partly in bounds (m0 < M, k0 < K) and its out-of-bounds part reads as zero.
          const int nboxes = min(4, (N - n0 + 63) / 64);
          mbar_arrive_expect_tx(full_bar(s), kABytes + uint32_t(nboxes) * kBBoxBytes);
          const int k0 = kb * kBK;
          tma_load_2d(stage_a(s), &tmA, full_bar(s), k0, m0);  // lhs box {64 k, 128 rows}
#pragma unroll
          for (int j = 0; j < 4; ++j)  // rhs box {64 n, 64 k, 1 group}
            if (j < nboxes) tma_load_3d(stage_b(s) + uint32_t(j) * kBBoxBytes, &tmB, full_bar(s), n0 + 64 * j, k0, g);
          if (++s == kStages) {
            s = 0;
            phase ^= 1u;
          }
        }
      }
    }
  } else {
    // ------------------------------- consumers -------------------------------
    setmaxnreg_inc<232>();
    const int cw = warp_id / 4 - 1;          // this warpgroup's 64-row half of the tile
    const int warp = warp_id & 3;            // warp within the warpgroup: rows 16*warp .. +15
    const bool n_even = (N & 1) == 0;

    // Rows past the sum of the group sizes are zero (never with the workload's sizes).
    const int total_rows = *total_rows_p;
    if (total_rows < M) {
      const int64_t end = int64_t(M) * N, stride = int64_t(gridDim.x) * 256;
      for (int64_t i = int64_t(total_rows) * N + int64_t(blockIdx.x) * 256 + (threadIdx.x - 128); i < end; i += stride)
        out[i] = __float2bfloat16_rn(0.0f);
    }

    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
    int s = 0;
    uint32_t phase = 0;
    uint32_t epi_count = 0;  // staging boxes written so far by this warpgroup (buffer = epi_count % 2)
    (void)epi_count;
    for (int it = 0;; ++it) {
      const int slot = it & 1;
      mbar_wait(tile_full_bar(slot), (uint32_t(it) >> 1) & 1u);
      const int t = tile_ring[slot];
      __syncwarp();
      if (lane == 0) mbar_arrive(tile_empty_bar(slot));
      if (t < 0) break;
      const int g = find_group(tile_start, G, t);
      const int local = t - tile_start[g];
      const int m0 = row_start[g] + (local / num_n) * kBM;
      const int n0 = (local % num_n) * kBN;
      const int rows_valid = min(kBM, row_end[g] - m0);  // 1..128 rows of this tile belong to group g
      const bool active = rows_valid > 64 * cw;          // warpgroup-uniform

      if (!active) {
        // Nothing of this tile's rows is ours: wait for each stage (to stay in step with the ring)
        // and release it at once. A separate loop, so that no path with wgmma in flight merges with
        // one without (ptxas would serialise the wgmmas, warning C7518).
        for (int kb = 0; kb < nk; ++kb) {
          mbar_wait(full_bar(s), phase);
          __syncwarp();
          if (lane == 0) mbar_arrive(empty_bar(s));
          if (++s == kStages) {
            s = 0;
            phase ^= 1u;
          }
        }
        continue;
      }
      int prev = 0;
      for (int kb = 0; kb < nk; ++kb) {
        mbar_wait(full_bar(s), phase);
        __syncwarp();  // reconverge the warp after the polling loop: wgmma.* are .sync.aligned
        const uint32_t a = stage_a(s) + uint32_t(cw) * (64u * 128u);  // rows 64*cw.. of the 128-row A box
        const uint32_t b = stage_b(s);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) wgmma_m64n256k16(acc, desc_a(a + 32u * kk), desc_b(b + 2048u * kk), (kb | kk) != 0);
        wgmma_commit();
        if (kb > 0) {
          wgmma_wait<1>();  // the previous stage's group is complete: its smem may be overwritten
          if (lane == 0) mbar_arrive(empty_bar(prev));
        }
        prev = s;
        if (++s == kStages) {
          s = 0;
          phase ^= 1u;
        }
      }
      wgmma_wait<0>();
      if (lane == 0) mbar_arrive(empty_bar(prev));
#pragma unroll
      for (int i = 0; i < 128; ++i) fence_operand(acc[i]);

      // Epilogue. [FD] accumulator fragment of m64nNk16 (f32): thread (warp w, lane l) holds, for
      // j = 0..N/8-1: d[4j+0], d[4j+1] at row 16w + l/4, columns 8j + 2(l%4) + {0,1}; d[4j+2],
      // d[4j+3] at row 16w + l/4 + 8, same columns. Only the group's rows are stored.
      bool staged = false;
      if constexpr (kTmaStore) staged = rows_valid >= 64 * (cw + 1);  // all 64 rows are the group's (warpgroup-uniform)
      if (staged) {
        // The warpgroup's 64 x 256 slice goes out as 4 boxes of 64 rows x 64 columns. Each box is
        // staged in one of the warpgroup's two 8 KiB buffers in TMA's SWIZZLE_128B layout (row r at
        // r*128 B, 16-byte chunk c at chunk position c ^ (r % 8)) and written by one TMA store.
        // stmatrix x4 number p of box q stores the 8x8 matrices (block j = 8q + 2p, rows 0-7),
        // (j, rows 8-15), (j + 1, rows 0-7), (j + 1, rows 8-15) of this warp's 16 rows: their
        // registers are bf16x2(d[4j], d[4j+1]), (d[4j+2], d[4j+3]), (d[4j+4], d[4j+5]),
        // (d[4j+6], d[4j+7]); lane l addresses row (l%8) + 8((l/8)%2) of block j + l/16.
        const int wg_tid = threadIdx.x & 127;
        const uint32_t lrow = uint32_t(warp * 16 + (lane & 7) + 8 * ((lane >> 3) & 1));  // row within the 64
        const uint32_t lblk = uint32_t(lane >> 4);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const uint32_t buf = epi + (2u * uint32_t(cw) + (epi_count & 1u)) * kEpiBufBytes;
          if (epi_count >= 2) {
            // This buffer was the source of the store issued two boxes ago: wait until it is read.
            if (wg_tid == 0) bulk_wait_read<1>();
            named_bar_sync(1 + cw, 128);
          }
#pragma unroll
          for (int p = 0; p < 4; ++p) {
            const int j = 8 * q + 2 * p;
            const uint32_t chunk = uint32_t(2 * p) + lblk;
            stmatrix_x4(buf + lrow * 128u + ((chunk ^ (lrow & 7u)) << 4), pack_bf16x2(acc[4 * j], acc[4 * j + 1]),
                        pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]), pack_bf16x2(acc[4 * j + 4], acc[4 * j + 5]),
                        pack_bf16x2(acc[4 * j + 6], acc[4 * j + 7]));
          }
          fence_proxy_async_smem();
          named_bar_sync(1 + cw, 128);
          if (wg_tid == 0) {
            tma_store_2d(&tmC, buf, n0 + 64 * q, m0 + cw * 64);
            bulk_commit();
          }
          ++epi_count;
        }
      } else {
        const int lrow0 = cw * 64 + warp * 16 + (lane >> 2);  // row within the tile
        const int col0 = n0 + 2 * (lane & 3);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int lrow = lrow0 + 8 * h;
          if (lrow < rows_valid) {
            ob_bf16* orow = out + int64_t(m0 + lrow) * N;
#pragma unroll
            for (int j = 0; j < 32; ++j) {
              const int col = col0 + 8 * j;
              const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
              if (n_even) {
                // N even and col even: col < N implies col + 1 < N, and the 4-byte store is aligned.
                if (col < N) *reinterpret_cast<uint32_t*>(orow + col) = pack_bf16x2(v0, v1);
              } else {
                if (col < N) orow[col] = __float2bfloat16_rn(v0);
                if (col + 1 < N) orow[col + 1] = __float2bfloat16_rn(v1);
              }
            }
          }
        }
      }
    }
    if constexpr (kTmaStore) {
      if ((threadIdx.x & 127) == 0) bulk_wait<0>();  // the last stores are complete before the CTA exits
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Simple path
// ---------------------------------------------------------------------------------------------
// group_end[g] = min(M, Σ_{g' <= g} max(size_g', 0)) (one thread; G is small).
__global__ void group_ends(const int32_t* __restrict__ sizes, int* __restrict__ ends, int G, int M) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  long long run = 0;
  for (int g = 0; g < G; ++g) {
    const int v = sizes[g];
    run += v > 0 ? v : 0;
    ends[g] = int(run < M ? run : M);
  }
}

// 64x64 output tile per 256-thread block (4x4 outputs per thread), 16-deep k slabs in shared memory
// (fp32). The block's rows [r0, r0 + 64) may span several groups: for each group g intersecting
// them, lhs rows outside g are read as zero and rhs[g] is used. Rows past Σ size stay zero.
__global__ void __launch_bounds__(256) gmm_simple(const ob_bf16* __restrict__ lhs, const ob_bf16* __restrict__ rhs,
                                                  const int* __restrict__ ends, ob_bf16* __restrict__ out, int M, int N, int K,
                                                  int G) {
  __shared__ float As[16][65];  // As[k][m]
  __shared__ float Bs[16][65];  // Bs[k][n]
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int r0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float acc[4][4];
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;
  // First group whose end is past r0 (ends are non-decreasing); G if none.
  int lo = 0, hi = G;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (ends[mid] > r0) hi = mid;
    else lo = mid + 1;
  }
  for (int g = lo; g < G; ++g) {
    const int gs = g == 0 ? 0 : ends[g - 1], ge = ends[g];
    if (gs >= r0 + 64) break;
    const int rs = gs > r0 ? gs : r0, re = ge < r0 + 64 ? ge : r0 + 64;
    if (rs >= re) continue;  // empty group
    const ob_bf16* B = rhs + int64_t(g) * K * N;
    for (int k0 = 0; k0 < K; k0 += 16) {
      for (int i = threadIdx.x; i < 64 * 16; i += 256) {
        const int am = i >> 4, ak = i & 15;
        const int gr = r0 + am, gk = k0 + ak;
        As[ak][am] = (gr >= rs && gr < re && gk < K) ? __bfloat162float(lhs[int64_t(gr) * K + gk]) : 0.0f;
        const int bk = i >> 6, bn = i & 63;
        const int gk2 = k0 + bk, gn = n0 + bn;
        Bs[bk][bn] = (gk2 < K && gn < N) ? __bfloat162float(B[int64_t(gk2) * N + gn]) : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < 16; ++k) {
        float a[4], b[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) a[r] = As[k][ty + 16 * r];
#pragma unroll
        for (int c = 0; c < 4; ++c) b[c] = Bs[k][tx + 16 * c];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
      }
      __syncthreads();
    }
  }
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int m = r0 + ty + 16 * r, n = n0 + tx + 16 * c;
      if (m < M && n < N) out[int64_t(m) * N + n] = __float2bfloat16_rn(acc[r][c]);
    }
}

#ifdef OB_EXPERT_FORCE_FAST
// dst (rows x ld) = src (rows x cols) zero-padded on the right.
__global__ void pad_copy(const ob_bf16* __restrict__ src, ob_bf16* __restrict__ dst, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t total = rows * ld;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / ld, c = i % ld;
    dst[i] = c < cols ? src[r * cols + c] : __float2bfloat16_rn(0.0f);
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------
typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                                  const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn g_encode = nullptr;
bool g_attr_set = false;

EncodeTiledFn encode_fn() {
  EncodeTiledFn& fn = g_encode;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess && p)
      fn = reinterpret_cast<EncodeTiledFn>(p);
    else
      (void)cudaGetLastError();
  }
  return fn;
}

// bf16 tensor map of rank 2 or 3 (dims innermost first, pitches in bytes for dims 1..rank-1), 128B
// swizzle (box[0] * 2 bytes must be <= 128), out-of-bounds elements read as zero.
bool make_map(EncodeTiledFn fn, CUtensorMap* map, const void* ptr, int rank, const uint64_t* dims, const uint64_t* pitches,
              const uint32_t* box) {
  cuuint64_t d[3], p[2];
  cuuint32_t b[3], e[3];
  for (int i = 0; i < rank; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
    e[i] = 1;
    if (i + 1 < rank) p[i] = pitches[i];
  }
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, cuuint32_t(rank), const_cast<void*>(ptr), d, p, b, e, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Tensor maps depend only on pointers and shapes: keep the last few (input sets rotate).
struct MapCacheEntry {
  CUtensorMap a, b, c;
  const void* pa;
  const void* pb;
  const void* pc;
  int64_t M, N, K, G, lda, ldb;
  bool valid;
};
MapCacheEntry g_maps[8];
int g_maps_next = 0;
bool g_attr_set_direct = false;

constexpr uint64_t kCounterBytes = 256;  // the tile counter, at the start of the workspace

uint64_t round256(uint64_t x) { return (x + 255) / 256 * 256; }
#ifdef OB_EXPERT_FORCE_FAST
int64_t round8(int64_t x) { return (x + 7) / 8 * 8; }
#endif

[[maybe_unused]] int32_t run_fast(const ob_bf16* lhs, int64_t lda, const ob_bf16* rhs, int64_t ldb, const int32_t* sizes, ob_bf16* out,
                                  int64_t M, int64_t N, int64_t K, int64_t G, int* counter, cudaStream_t stream) {
#ifdef OB_EXPERT_DIRECT_EPILOGUE
  const bool tma_store = false;
#else
  // out's row pitch must be a multiple of 16 bytes for a tensor map; the staged variant's schedule
  // arrays hold G <= 128.
  const bool tma_store = N % 8 == 0 && G <= Layout<true>::kMaxG;
#endif
  MapCacheEntry* e = nullptr;
  for (auto& c : g_maps)
    if (c.valid && c.pa == lhs && c.pb == rhs && c.pc == out && c.M == M && c.N == N && c.K == K && c.G == G && c.lda == lda &&
        c.ldb == ldb)
      e = &c;
  if (!e) {
    EncodeTiledFn fn = encode_fn();
    if (!fn) return 10;
    e = &g_maps[g_maps_next];
    g_maps_next = (g_maps_next + 1) % 8;
    e->valid = false;
    // lhs: dims {K, M}, row pitch lda*2; box {64 k, 128 rows}.
    const uint64_t a_dims[2] = {uint64_t(K), uint64_t(M)}, a_pitch[1] = {uint64_t(lda) * 2};
    const uint32_t a_box[2] = {uint32_t(kBK), uint32_t(kBM)};
    if (!make_map(fn, &e->a, lhs, 2, a_dims, a_pitch, a_box)) return 11;
    // rhs: dims {N, K, G}, pitches {ldb*2 (k), K*ldb*2 (g)}; box {64 n, 64 k, 1}.
    const uint64_t b_dims[3] = {uint64_t(N), uint64_t(K), uint64_t(G)}, b_pitch[2] = {uint64_t(ldb) * 2, uint64_t(K * ldb) * 2};
    const uint32_t b_box[3] = {64u, uint32_t(kBK), 1u};
    if (!make_map(fn, &e->b, rhs, 3, b_dims, b_pitch, b_box)) return 12;
    // out: dims {N, M}, row pitch N*2; box {64 n, 64 rows} (stores of one warpgroup's box).
    if (N % 8 == 0) {
      const uint64_t c_dims[2] = {uint64_t(N), uint64_t(M)}, c_pitch[1] = {uint64_t(N) * 2};
      const uint32_t c_box[2] = {64u, 64u};
      if (!make_map(fn, &e->c, out, 2, c_dims, c_pitch, c_box)) return 15;
    } else {
      memset(&e->c, 0, sizeof e->c);  // unused by the direct-store kernel
    }
    e->pa = lhs;
    e->pb = rhs;
    e->pc = out;
    e->M = M;
    e->N = N;
    e->K = K;
    e->G = G;
    e->lda = lda;
    e->ldb = ldb;
    e->valid = true;
  }
  bool& attr_set = tma_store ? g_attr_set : g_attr_set_direct;
  if (!attr_set) {
    if (tma_store)
      OB_CUDA_TRY(cudaFuncSetAttribute(gmm_tma_wgmma<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Layout<true>::kSmemBytes)));
    else
      OB_CUDA_TRY(
          cudaFuncSetAttribute(gmm_tma_wgmma<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Layout<false>::kSmemBytes)));
    attr_set = true;
  }
  int device = 0, sms = 0;
  OB_CUDA_TRY(cudaGetDevice(&device));
  OB_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // At most ceil(M/128) + G M-tiles (one partial tile per group) times the N-tiles.
  const int64_t max_tiles = (ob_cdiv(M, kBM) + G) * ob_cdiv(N, kBN);
  const int grid = int(max_tiles < sms ? max_tiles : sms);
  OB_CUDA_TRY(cudaMemsetAsync(counter, 0, sizeof(int), stream));
  if (tma_store)
    gmm_tma_wgmma<true><<<grid, kThreads, Layout<true>::kSmemBytes, stream>>>(e->a, e->b, e->c, out, sizes, counter, int(M), int(N),
                                                                              int(K), int(G));
  else
    gmm_tma_wgmma<false><<<grid, kThreads, Layout<false>::kSmemBytes, stream>>>(e->a, e->b, e->c, out, sizes, counter, int(M),
                                                                                int(N), int(K), int(G));
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}

int32_t run_simple(const ob_bf16* lhs, const ob_bf16* rhs, const int32_t* sizes, ob_bf16* out, int64_t M, int64_t N, int64_t K,
                   int64_t G, int* ends, cudaStream_t stream) {
  const int64_t gx = ob_cdiv(N, 64), gy = ob_cdiv(M, 64);
  if (gy > 65535 || gx > 0x7FFFFFFF) return 3;
  group_ends<<<1, 32, 0, stream>>>(sizes, ends, int(G), int(M));
  OB_CUDA_TRY(cudaGetLastError());
  gmm_simple<<<dim3(unsigned(gx), unsigned(gy)), 256, 0, stream>>>(lhs, rhs, ends, out, int(M), int(N), int(K), int(G));
  OB_CUDA_TRY(cudaGetLastError());
  return 0;
}

[[maybe_unused]] bool fast_shape(int64_t M, int64_t N, int64_t K, int64_t G) {
  return M >= 1 && N >= 8 && K >= 8 && N % 8 == 0 && K % 8 == 0 && G >= 1 && G <= kMaxGroups &&
         (ob_cdiv(M, kBM) + G) * ob_cdiv(N, kBN) < (int64_t(1) << 30);
}

// Workspace: [0, 256) the tile counter; then group ends (simple path, G ints); then, with
// OB_EXPERT_FORCE_FAST, padded copies of lhs and rhs when their pitches need it.
uint64_t workspace_for(int64_t M, int64_t N, int64_t K, int64_t G) {
  uint64_t bytes = kCounterBytes + round256(uint64_t(G > 0 ? G : 1) * 4);
#ifdef OB_EXPERT_FORCE_FAST
  if (M >= 1 && N >= 1 && K >= 1 && G >= 1 && G <= kMaxGroups && !fast_shape(M, N, K, G))
    bytes += round256(uint64_t(M * round8(K)) * 2) + round256(uint64_t(G * K * round8(N)) * 2);
#else
  (void)M;
  (void)N;
  (void)K;
#endif
  return bytes;
}

}  // namespace

extern "C" uint64_t ob_workspace_bytes(const ob_call* call) {
  const int64_t M = call->inputs[0].shape[0], K = call->inputs[0].shape[1];
  const int64_t G = call->inputs[1].shape[0], N = call->inputs[1].shape[2];
  return workspace_for(M, N, K, G);
}

extern "C" int32_t ob_run(const ob_call* call) {
  if (call->num_inputs < 3 || call->num_outputs < 1) return 2;
  const ob_tensor& tl = call->inputs[0];
  const ob_tensor& tr = call->inputs[1];
  const ob_tensor& ts = call->inputs[2];
  const ob_tensor& to = call->outputs[0];
  if (tl.rank != 2 || tr.rank != 3 || ts.rank != 1 || to.rank != 2) return 2;
  const int64_t M = tl.shape[0], K = tl.shape[1];
  const int64_t G = tr.shape[0], N = tr.shape[2];
  if (tr.shape[1] != K || ts.shape[0] != G || to.shape[0] != M || to.shape[1] != N) return 2;
  if (M >= (int64_t(1) << 31) || N >= (int64_t(1) << 31) || K >= (int64_t(1) << 31) || G >= (int64_t(1) << 31)) return 3;
  if (M == 0 || N == 0) return 0;
  const ob_bf16* lhs = ob_in_bf16(call, 0);
  const ob_bf16* rhs = ob_in_bf16(call, 1);
  const int32_t* sizes = ob_in_i32(call, 2);
  ob_bf16* out = ob_out_bf16(call, 0);
  cudaStream_t stream = ob_stream(call);
  if (G == 0 || K == 0) {  // no group, or empty products: every row is zero
    OB_CUDA_TRY(cudaMemsetAsync(out, 0, size_t(M * N) * sizeof(ob_bf16), stream));
    return 0;
  }
  if (!call->workspace) return 13;
  if (call->workspace_bytes < workspace_for(M, N, K, G)) return 14;
  uint8_t* ws = static_cast<uint8_t*>(call->workspace);
  int* ends = reinterpret_cast<int*>(ws + kCounterBytes);
#ifndef OB_EXPERT_SIMPLE
  int* counter = reinterpret_cast<int*>(ws);
  if (fast_shape(M, N, K, G)) return run_fast(lhs, K, rhs, N, sizes, out, M, N, K, G, counter, stream);
#ifdef OB_EXPERT_FORCE_FAST
  if (G <= kMaxGroups) {
    const int64_t lda = round8(K), ldb = round8(N);
    uint8_t* pads = ws + kCounterBytes + round256(uint64_t(G) * 4);
    ob_bf16* lp = reinterpret_cast<ob_bf16*>(pads);
    ob_bf16* rp = reinterpret_cast<ob_bf16*>(pads + round256(uint64_t(M * lda) * 2));
    pad_copy<<<ob_grid_for(M * lda, 256), 256, 0, stream>>>(lhs, lp, M, K, lda);
    OB_CUDA_TRY(cudaGetLastError());
    pad_copy<<<ob_grid_for(G * K * ldb, 256), 256, 0, stream>>>(rhs, rp, G * K, N, ldb);
    OB_CUDA_TRY(cudaGetLastError());
    return run_fast(lp, lda, rp, ldb, sizes, out, M, N, K, G, counter, stream);
  }
#endif
#endif
  return run_simple(lhs, rhs, sizes, out, M, N, K, G, ends, stream);
}
