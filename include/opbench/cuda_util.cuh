/* Small device-side helpers for kernels of the cuda target (any implementation may include this).
 *
 * On the cuda target floating tensors are bf16 (OB_BF16, __nv_bfloat16 in device memory), ragged
 * metadata int32; accumulate in fp32. Launch on the call's stream, never the legacy default stream:
 *
 *   cudaStream_t s = ob_stream(call);
 *   my_kernel<<<grid, block, 0, s>>>(...);
 *   OB_CUDA_TRY(cudaGetLastError());
 *
 * ob_run returns 0 on success; OB_CUDA_TRY returns OB_CUDA_ERROR_BASE + the cudaError_t value, so the
 * result names the CUDA error.
 */
#ifndef OPBENCH_CUDA_UTIL_CUH
#define OPBENCH_CUDA_UTIL_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <opbench/kernel.h>

/* ob_run's return code for a failed CUDA runtime call: this base plus the cudaError_t value. */
#define OB_CUDA_ERROR_BASE 1000

#define OB_CUDA_TRY(expr)                                       \
  do {                                                          \
    const cudaError_t ob_cuda_err_ = (expr);                    \
    if (ob_cuda_err_ != cudaSuccess) return OB_CUDA_ERROR_BASE + int(ob_cuda_err_); \
  } while (0)

typedef __nv_bfloat16 ob_bf16;

static inline cudaStream_t ob_stream(const ob_call* call) { return static_cast<cudaStream_t>(call->stream); }

/* Typed views of a tensor's device pointer. */
static inline const ob_bf16* ob_in_bf16(const ob_call* call, int i) { return static_cast<const ob_bf16*>(call->inputs[i].data); }
static inline const int32_t* ob_in_i32(const ob_call* call, int i) { return static_cast<const int32_t*>(call->inputs[i].data); }
static inline ob_bf16* ob_out_bf16(const ob_call* call, int i) { return static_cast<ob_bf16*>(call->outputs[i].data); }

/* Ceiling division for grid sizes. */
static inline __host__ __device__ int64_t ob_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Blocks for a grid-stride loop over n elements: enough to fill the device, never more than needed. */
static inline unsigned ob_grid_for(int64_t n, int threads) {
  const int64_t blocks = ob_cdiv(n, threads);
  return unsigned(blocks < 65535 * 16 ? (blocks < 1 ? 1 : blocks) : 65535 * 16);
}

static __device__ __forceinline__ float ob_load(const ob_bf16* p, int64_t i) { return __bfloat162float(p[i]); }
static __device__ __forceinline__ void ob_store(ob_bf16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

/* Reductions over a warp (all 32 lanes take part) and over a block (blockDim.x a multiple of 32, at
 * most 1024; every thread calls it; the result is returned to every thread). */
static __device__ __forceinline__ float ob_warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
static __device__ __forceinline__ float ob_warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

template <bool kMax>
static __device__ __forceinline__ float ob_block_reduce(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = kMax ? ob_warp_max(v) : ob_warp_sum(v);
  __syncthreads(); /* partial and total may still be read by an earlier call */
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? partial[lane] : (kMax ? -INFINITY : 0.0f);
    w = kMax ? ob_warp_max(w) : ob_warp_sum(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;
}
static __device__ __forceinline__ float ob_block_sum(float v) { return ob_block_reduce<false>(v); }
static __device__ __forceinline__ float ob_block_max(float v) { return ob_block_reduce<true>(v); }

#endif /* OPBENCH_CUDA_UTIL_CUH */
