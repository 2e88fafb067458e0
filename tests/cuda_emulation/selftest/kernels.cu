// Small kernels for the emulation's own tests (emulation_test.cpp): each exercises one thing the
// emulation models or checks. The host functions at the end launch them; the test calls those.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "kernels.h"

namespace {

__global__ void shuffle_kernel(int* out) {
  const int t = threadIdx.x, lane = t & 31;
  int* o = out + t * kShuffleResults;
  o[0] = __shfl_xor_sync(0xffffffffu, t, 1);
  o[1] = __shfl_xor_sync(0xffffffffu, t, 16);
  o[2] = __shfl_down_sync(0xffffffffu, t, 3);
  o[3] = __shfl_down_sync(0xffffffffu, t, 3, 8);
  o[4] = __shfl_up_sync(0xffffffffu, t, 5);
  o[5] = __shfl_up_sync(0xffffffffu, t, 2, 16);
  o[6] = __shfl_sync(0xffffffffu, t, 7);
  o[7] = __shfl_sync(0xffffffffu, t, 3, 16);
  o[8] = int(__ballot_sync(0xffffffffu, lane % 3 == 0));
  o[9] = __any_sync(0xffffffffu, t == 40);
  o[10] = __all_sync(0xffffffffu, lane < 31);
  // Half-warp groups: lanes 0-15 and 16-31 shuffle among themselves.
  const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  o[11] = __shfl_xor_sync(half, t, 4);
  const double d = __shfl_xor_sync(0xffffffffu, double(t) + 0.25, 2);  // 8-byte values move whole
  o[12] = int(d * 4);
  o[13] = __syncthreads_count(t % 5 == 0);
  o[14] = __syncthreads_or(t == 63);
  o[15] = __syncthreads_and(t < 64);
}

__global__ void deadlock_kernel() {
  if (threadIdx.x == 0) __syncwarp();  // waits for lane 1, which waits at __syncthreads
  else __syncthreads();
}
__global__ void exit_before_barrier_kernel() {
  if (threadIdx.x == 5) return;
  __syncthreads();
}
__global__ void two_barriers_kernel() {
  if (threadIdx.x < 32) __syncthreads();
  else __syncthreads();
}
__global__ void shuffle_with_exited_lane_kernel(int* out) {
  if (threadIdx.x == 3) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 1);
}
__global__ void partial_warp_shuffle_kernel(int* out) { out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 1); }

__global__ void empty_kernel() {}
__global__ void dynamic_smem_kernel(int n) {
  extern __shared__ float buf[];
  if (threadIdx.x == 0) buf[n - 1] = 1.0f;
}
__global__ void static_smem_kernel() {
  __shared__ float big[10 * 1024];  // 40 KiB
  big[threadIdx.x] = 0.0f;
}
__global__ void __launch_bounds__(128) bounded_kernel(int* out) { out[threadIdx.x] = 1; }

__global__ void garbage_kernel(unsigned* out) {
  extern __shared__ unsigned dyn[];
  __shared__ unsigned stat[4];
  if (threadIdx.x == 0) {
    out[0] = dyn[0];  // read before anyone wrote: garbage
    out[1] = stat[3];
    dyn[0] = 7u;
    stat[3] = 9u;
  }
}
__global__ void smem_overrun_kernel(int n) {
  extern __shared__ float buf[];
  buf[threadIdx.x + n] = 1.0f;  // n = the dynamic size in floats: one past the end
}

namespace wmma = nvcuda::wmma;
// C (16×16 fp32) = A (16×16 bf16, row-major) · B (16×16 bf16, col-major), one warp; `skew` shifts
// lane 5's pointer (different arguments in one warp), `offset` every lane's (misaligned).
__global__ void wmma_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int offset, int skew) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.5f);
  wmma::load_matrix_sync(fa, a + offset + (threadIdx.x == 5 ? skew : 0), 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

__global__ void order_kernel(int* order, int* counter) {
  // Which CUDA thread of which block ran its first part in which place.
  const int me = int(blockIdx.x * blockDim.x + threadIdx.x);
  order[me] = atomicAdd(counter, 1);
}
__global__ void args_kernel(int* out, int v, long long w) {
  if (threadIdx.x == 0) out[0] = v, out[1] = int(w);
}

}  // namespace

cudaError_t run_shuffles(int* out) {
  shuffle_kernel<<<1, 64>>>(out);
  return cudaGetLastError();
}
cudaError_t run_deadlock() {
  deadlock_kernel<<<1, 32>>>();
  return cudaGetLastError();
}
cudaError_t run_exit_before_barrier() {
  exit_before_barrier_kernel<<<2, 64>>>();
  return cudaGetLastError();
}
cudaError_t run_two_barriers() {
  two_barriers_kernel<<<1, 64>>>();
  return cudaGetLastError();
}
cudaError_t run_shuffle_with_exited_lane(int* out) {
  shuffle_with_exited_lane_kernel<<<1, 32>>>(out);
  return cudaGetLastError();
}
cudaError_t run_partial_warp_shuffle(int* out) {
  partial_warp_shuffle_kernel<<<1, 48>>>(out);
  return cudaGetLastError();
}
cudaError_t run_empty(dim3 grid, dim3 block) {
  empty_kernel<<<grid, block>>>();
  return cudaGetLastError();
}
cudaError_t run_dynamic_smem(size_t bytes) {
  dynamic_smem_kernel<<<1, 32, bytes>>>(int(bytes / sizeof(float)));
  return cudaGetLastError();
}
cudaError_t allow_dynamic_smem(int bytes) { return cudaFuncSetAttribute(dynamic_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes); }
cudaError_t allow_static_plus_dynamic(int bytes) { return cudaFuncSetAttribute(static_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes); }
cudaError_t run_static_smem(size_t dynamic_bytes) {
  static_smem_kernel<<<2, 32, dynamic_bytes>>>();
  return cudaGetLastError();
}
cudaError_t run_bounded(int threads, int* out) {
  bounded_kernel<<<1, threads>>>(out);
  return cudaGetLastError();
}
cudaError_t run_garbage(unsigned* out) {
  garbage_kernel<<<3, 32, 64>>>(out);
  return cudaGetLastError();
}
cudaError_t run_smem_overrun(int floats) {
  smem_overrun_kernel<<<1, 32, floats * sizeof(float)>>>(floats);
  return cudaGetLastError();
}
cudaError_t run_wmma(const void* a, const void* b, float* c, int offset, int skew) {
  wmma_kernel<<<1, 32>>>(static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b), c, offset, skew);
  return cudaGetLastError();
}
cudaError_t run_order(int* order, int* counter, int blocks, int threads) {
  order_kernel<<<blocks, threads>>>(order, counter);
  return cudaGetLastError();
}
cudaError_t run_args(int* out, int* evaluations) {
  args_kernel<<<2, 32>>>(out, ++*evaluations, (1ll << 40) + 5);
  return cudaGetLastError();
}
