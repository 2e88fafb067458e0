// The host side of kernels.cu, for emulation_test.cpp.
#pragma once

#include <cuda_runtime.h>

constexpr int kShuffleResults = 16;  // per thread of shuffle_kernel

cudaError_t run_shuffles(int* out);  // 64 threads × kShuffleResults ints
cudaError_t run_deadlock();
cudaError_t run_exit_before_barrier();
cudaError_t run_two_barriers();
cudaError_t run_shuffle_with_exited_lane(int* out);
cudaError_t run_partial_warp_shuffle(int* out);
cudaError_t run_empty(dim3 grid, dim3 block);
cudaError_t run_dynamic_smem(size_t bytes);
cudaError_t allow_dynamic_smem(int bytes);
cudaError_t allow_static_plus_dynamic(int bytes);
cudaError_t run_static_smem(size_t dynamic_bytes);  // 40 KiB static
cudaError_t run_bounded(int threads, int* out);     // __launch_bounds__(128)
cudaError_t run_garbage(unsigned* out);
cudaError_t run_smem_overrun(int floats);
cudaError_t run_wmma(const void* a, const void* b, float* c, int offset, int skew);
cudaError_t run_order(int* order, int* counter, int blocks, int threads);
cudaError_t run_args(int* out, int* evaluations);
