// What the emulation's driver (and its self-tests) control and read back: device buffers, the
// scheduling seed and garbage, the stream a call must use, the errors and statistics of a run.
// Kernels never include this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

namespace ob_emu {

// A device allocation: page-aligned, `bytes` followed by canary bytes up to at least kCanaryBytes
// and the end of its last page, then an inaccessible guard page (another before it). While host code
// runs, every device allocation is inaccessible (mprotect): only kernels, the cudaMemcpy* /
// cudaMemset* calls, cuBLAS and the functions below touch it, so host code that dereferences a device
// pointer faults and is named. `label` names it in messages ("input 2 (kv_lens)").
constexpr size_t kCanaryBytes = 256;
constexpr unsigned char kCanary = 0xCB;
void* device_alloc(size_t bytes, const std::string& label);
void device_free(void* p);
void copy_to_device(void* device, const void* host, size_t bytes);
void copy_from_device(void* host, const void* device, size_t bytes);
void fill_device(void* device, unsigned char byte, size_t bytes);
// Empty when the canaries after the allocation are intact, else where the first damaged byte is.
std::string canary_damage(const void* device);

struct Options {
  uint64_t schedule_seed = 1;           // the order of blocks and of threads between barriers
  unsigned char shared_garbage = 0xFF;  // what shared memory holds before a block writes it
  bool protect_device_memory = true;    // host code may not touch device allocations
};
void set_options(const Options& options);

// The stream the current ob_call was given: work on any other stream (the legacy default stream
// included) is counted as a violation (cuda_util.cuh: "never the legacy default stream").
void set_call_stream(cudaStream_t stream);
void clear_call_stream();  // no stream check

struct Stats {
  uint64_t launches = 0, blocks = 0, threads = 0, switches = 0, gemms = 0, memcpys = 0, memsets = 0;
  uint64_t stream_violations = 0;
};
Stats stats();
void reset_stats();

// The sticky error of a device fault (cudaSuccess if none) and its message; reset_device() clears it,
// as a fresh CUDA context would.
cudaError_t sticky_error();
std::string fault_message();
void reset_device();

}  // namespace ob_emu
