// Device-side helpers of the cuda worker: a digest of a device buffer (to see whether a kernel
// changed its inputs without copying them back) and the L2 flush.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace opbench::cuda {

// An order-independent digest of `bytes` bytes (a multiple of 8 is not required): the sum over
// 8-byte words of a mix of the word and its index, accumulated into *out (zeroed by the caller).
cudaError_t launch_digest(const void* data, size_t bytes, unsigned long long* out, cudaStream_t stream);

// Writes `bytes` of `buffer` (at least twice the L2) so that no input of the next call is left in L2.
cudaError_t flush_l2(void* buffer, size_t bytes, int round, cudaStream_t stream);

}  // namespace opbench::cuda
