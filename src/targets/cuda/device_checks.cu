#include "targets/cuda/device_checks.cuh"

namespace opbench::cuda {
namespace {

__device__ __forceinline__ unsigned long long mix(unsigned long long word, unsigned long long index) {
  unsigned long long x = word ^ (index * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

__global__ void digest_kernel(const unsigned char* data, size_t bytes, unsigned long long* out) {
  const size_t words = bytes / 8;
  unsigned long long local = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) {
    unsigned long long w;
    memcpy(&w, data + i * 8, 8);  // the buffer's start is 256-byte aligned: an aligned 8-byte load
    local += mix(w, i);
  }
  // The tail bytes, one thread.
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (size_t i = words * 8; i < bytes; ++i) local += mix(data[i], (1ull << 62) + i);
  for (int offset = 16; offset > 0; offset >>= 1) local += __shfl_xor_sync(0xffffffffu, local, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, local);
}

__global__ void flush_kernel(uint4* buffer, size_t vectors, unsigned value) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors; i += stride)
    buffer[i] = make_uint4(value, value ^ unsigned(i), value, unsigned(i));
}

}  // namespace

cudaError_t launch_digest(const void* data, size_t bytes, unsigned long long* out, cudaStream_t stream) {
  digest_kernel<<<1024, 256, 0, stream>>>(static_cast<const unsigned char*>(data), bytes, out);
  return cudaGetLastError();
}

cudaError_t flush_l2(void* buffer, size_t bytes, int round, cudaStream_t stream) {
  flush_kernel<<<1024, 256, 0, stream>>>(static_cast<uint4*>(buffer), bytes / sizeof(uint4), 0x5A5A0000u + unsigned(round));
  return cudaGetLastError();
}

}  // namespace opbench::cuda
