// The CPU emulation of the CUDA programming model that the cuda_emulation tests run kernels on
// (tests/cuda_emulation/README.md; docs/cuda.md, "Checking cuda code without a GPU").
//
// A .cu file goes through cuda_convert first (launches `k<<<g, b, smem, s>>>(args)` become
// ob_emu::launch(...), `__shared__` declarations get garbage and size tracking), then compiles with
// the host compiler against these headers instead of CUDA's. The CUDA threads of a block are fibers
// on ONE OS thread (runtime/emu_runtime.cpp), run in a shuffled but seeded order between their
// synchronisation points; the grid's blocks run one after the other, in a shuffled order too.
//
// Everything a kernel sees of CUDA that needs the scheduler (barriers, warp operations, shared
// memory, the launch itself) calls out of line into libopbench_cuda_emu.so, so that the scheduler
// state exists once per process, shared by the driver and every kernel library it loads.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>

// ---- CUDA's qualifiers, as host C++ -------------------------------------------------------------
// Device and host code are the same code here. __shared__ and __launch_bounds__ are rewritten by
// the converter where it sees them; these definitions are the fallback for code it did not see.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
#define __constant__ static
#define __managed__
#define __grid_constant__
#define __launch_bounds__(...)

// ---- Built-in vector types (CUDA's sizes and alignments: a misaligned vector access is what
// -fsanitize=alignment reports) --------------------------------------------------------------------
#define OB_EMU_VEC1(T, N, A) \
  struct alignas(A) N##1 { T x; };
#define OB_EMU_VEC2(T, N, A) \
  struct alignas(A) N##2 { T x, y; };
#define OB_EMU_VEC3(T, N) \
  struct N##3 { T x, y, z; };
#define OB_EMU_VEC4(T, N, A) \
  struct alignas(A) N##4 { T x, y, z, w; };
#define OB_EMU_VECS(T, N, A1, A2, A4) \
  OB_EMU_VEC1(T, N, A1) OB_EMU_VEC2(T, N, A2) OB_EMU_VEC3(T, N) OB_EMU_VEC4(T, N, A4)
OB_EMU_VECS(signed char, char, 1, 2, 4)
OB_EMU_VECS(unsigned char, uchar, 1, 2, 4)
OB_EMU_VECS(short, short, 2, 4, 8)
OB_EMU_VECS(unsigned short, ushort, 2, 4, 8)
OB_EMU_VECS(int, int, 4, 8, 16)
OB_EMU_VECS(unsigned, uint, 4, 8, 16)
OB_EMU_VECS(long long, longlong, 8, 16, 16)
OB_EMU_VECS(unsigned long long, ulonglong, 8, 16, 16)
OB_EMU_VECS(float, float, 4, 8, 16)
OB_EMU_VECS(double, double, 8, 16, 16)
#undef OB_EMU_VECS
#undef OB_EMU_VEC1
#undef OB_EMU_VEC2
#undef OB_EMU_VEC3
#undef OB_EMU_VEC4

#define OB_EMU_MAKE(N, T)                                                                      \
  inline N##1 make_##N##1(T x) { return {x}; }                                                 \
  inline N##2 make_##N##2(T x, T y) { return {x, y}; }                                         \
  inline N##3 make_##N##3(T x, T y, T z) { return {x, y, z}; }                                 \
  inline N##4 make_##N##4(T x, T y, T z, T w) { return {x, y, z, w}; }
OB_EMU_MAKE(char, signed char)
OB_EMU_MAKE(uchar, unsigned char)
OB_EMU_MAKE(short, short)
OB_EMU_MAKE(ushort, unsigned short)
OB_EMU_MAKE(int, int)
OB_EMU_MAKE(uint, unsigned)
OB_EMU_MAKE(longlong, long long)
OB_EMU_MAKE(ulonglong, unsigned long long)
OB_EMU_MAKE(float, float)
OB_EMU_MAKE(double, double)
#undef OB_EMU_MAKE

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};

// The built-in variables. The scheduler sets threadIdx before it switches to a CUDA thread's fiber,
// blockIdx / blockDim / gridDim before each block.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
constexpr int warpSize = 32;

// ---- The runtime API's types (the functions are in cuda_runtime.h) -------------------------------
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidPitchValue = 12,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorAssert = 710,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719,
  cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;
typedef struct CUstream_st* cudaStream_t;

namespace ob_emu {

// A source position, for the messages: which __syncthreads, which launch.
struct Site {
  const char* file;
  unsigned line;
};
inline Site site_of(const std::source_location& l) { return {l.file_name(), unsigned(l.line())}; }

// ---- Launches --------------------------------------------------------------------------------------
struct LaunchConfig {
  dim3 grid, block;
  size_t shared_bytes;
  cudaStream_t stream;
  Site site;
};
// The converter turns `<<<a, b, c, d>>>` into config(a, b, c, d): ordinary function-call conversions
// apply, as they do to the launch configuration in CUDA.
inline LaunchConfig config(dim3 grid, dim3 block, size_t shared_bytes = 0, cudaStream_t stream = nullptr,
                           std::source_location where = std::source_location::current()) {
  return {grid, block, shared_bytes, stream, site_of(where)};
}

// Runs `body(context)` as every thread of every block of the grid (runtime/emu_runtime.cpp): checks
// the configuration as the device does, and sets cudaGetLastError's error instead of running on a
// bad one.
void launch_grid(const void* kernel, const char* name, const LaunchConfig& config, void (*body)(void*), void* context);

// kernel<<<config>>>(args...): the arguments are converted to the kernel's parameter types once, at
// the launch (as CUDA copies them into the parameter buffer); each CUDA thread then calls the kernel
// with its own copy of them.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), const char* name, const LaunchConfig& config, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel launched with the wrong number of arguments");
  struct Bound {
    void (*kernel)(Params...);
    std::tuple<std::decay_t<Params>...> params;
  };
  Bound bound{kernel, std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)};
  launch_grid(reinterpret_cast<const void*>(kernel), name, config,
              [](void* p) {
                Bound& b = *static_cast<Bound*>(p);
                std::tuple<std::decay_t<Params>...> mine = b.params;
                std::apply(b.kernel, mine);
              },
              &bound);
}

// __launch_bounds__(max_threads, ...): the converter puts this call first in the kernel's body; a
// launch with more threads per block fails as on the device (cudaErrorLaunchOutOfResources).
void launch_bounds(long long max_threads, long long min_blocks = 0, long long max_cluster = 0);

// ---- Shared memory ---------------------------------------------------------------------------------
// `extern __shared__ T name[];` becomes
//   static T* const& name = reinterpret_cast<T* const&>(ob_emu::dynamic_shared_ref());
// a T* that always holds the running block's dynamic shared memory (128-byte aligned, garbage-filled
// before every block, a guard page right after its last byte), at function or namespace scope alike.
void* const& dynamic_shared_ref();
// `__shared__ T name[N];` becomes `static T name[N]; SharedStatic ob_emu_shared_name(&name, sizeof(name));`:
// one copy per process (blocks run one at a time), garbage-filled the first time each block reaches
// the declaration, its size counted against the block's shared-memory limit.
void touch_static_shared(void* p, size_t bytes);
struct SharedStatic {
  SharedStatic(void* p, size_t bytes) { touch_static_shared(p, bytes); }
};

// ---- Synchronisation: the scheduler's switch points -------------------------------------------------
enum class BlockOp : int { sync = 0, count = 1, all = 2, any = 3 };
int block_barrier(BlockOp op, int predicate, Site where);
enum class WarpOp : int { sync = 0, shfl_idx = 1, shfl_up = 2, shfl_down = 3, shfl_xor = 4, ballot = 5, any = 6, all = 7, uniform = 8 };
// One warp-synchronous operation: waits until every lane of `mask` reaches a warp operation of the
// same kind and mask; returns the lane's shuffled bits (shuffles), the vote (votes) or 0.
// `uniform`: every lane must pass the same (a, b) (the collective WMMA calls check their arguments
// with it); `what` names the operation in messages.
uint64_t warp_op(WarpOp op, unsigned mask, uint64_t bits, int lane_arg, int width, Site where, const char* what = nullptr,
                 uint64_t b = 0);
unsigned active_mask();

// A device-side fault the emulation detected (misaligned WMMA pointer, a bad argument of a device
// function): the launch stops with this sticky error, as a faulting kernel does on the device.
[[noreturn]] void device_fault(cudaError_t error, const char* format, ...) __attribute__((format(printf, 2, 3)));

template <class T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp shuffles move values of up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
inline T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

}  // namespace ob_emu

// ---- The intrinsics ----------------------------------------------------------------------------------
inline void __syncthreads(std::source_location l = std::source_location::current()) {
  ob_emu::block_barrier(ob_emu::BlockOp::sync, 1, ob_emu::site_of(l));
}
inline int __syncthreads_count(int p, std::source_location l = std::source_location::current()) {
  return ob_emu::block_barrier(ob_emu::BlockOp::count, p, ob_emu::site_of(l));
}
inline int __syncthreads_and(int p, std::source_location l = std::source_location::current()) {
  return ob_emu::block_barrier(ob_emu::BlockOp::all, p, ob_emu::site_of(l));
}
inline int __syncthreads_or(int p, std::source_location l = std::source_location::current()) {
  return ob_emu::block_barrier(ob_emu::BlockOp::any, p, ob_emu::site_of(l));
}
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location l = std::source_location::current()) {
  ob_emu::warp_op(ob_emu::WarpOp::sync, mask, 0, 0, 32, ob_emu::site_of(l));
}
template <class T>
inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32, std::source_location l = std::source_location::current()) {
  return ob_emu::from_bits<T>(ob_emu::warp_op(ob_emu::WarpOp::shfl_idx, mask, ob_emu::to_bits(v), src_lane, width, ob_emu::site_of(l)));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32, std::source_location l = std::source_location::current()) {
  return ob_emu::from_bits<T>(ob_emu::warp_op(ob_emu::WarpOp::shfl_up, mask, ob_emu::to_bits(v), int(delta), width, ob_emu::site_of(l)));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, std::source_location l = std::source_location::current()) {
  return ob_emu::from_bits<T>(ob_emu::warp_op(ob_emu::WarpOp::shfl_down, mask, ob_emu::to_bits(v), int(delta), width, ob_emu::site_of(l)));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32, std::source_location l = std::source_location::current()) {
  return ob_emu::from_bits<T>(ob_emu::warp_op(ob_emu::WarpOp::shfl_xor, mask, ob_emu::to_bits(v), lane_mask, width, ob_emu::site_of(l)));
}
inline unsigned __ballot_sync(unsigned mask, int p, std::source_location l = std::source_location::current()) {
  return unsigned(ob_emu::warp_op(ob_emu::WarpOp::ballot, mask, p != 0, 0, 32, ob_emu::site_of(l)));
}
inline int __any_sync(unsigned mask, int p, std::source_location l = std::source_location::current()) {
  return int(ob_emu::warp_op(ob_emu::WarpOp::any, mask, p != 0, 0, 32, ob_emu::site_of(l)));
}
inline int __all_sync(unsigned mask, int p, std::source_location l = std::source_location::current()) {
  return int(ob_emu::warp_op(ob_emu::WarpOp::all, mask, p != 0, 0, 32, ob_emu::site_of(l)));
}
inline unsigned __activemask() { return ob_emu::active_mask(); }

// One OS thread runs everything and every write is visible at once: fences have nothing to order.
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}

// Atomics: plain read-modify-write is atomic when one OS thread runs every CUDA thread and no
// thread switch happens inside it.
template <class T>
inline T atomicAdd(T* p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}
template <class T>
inline T atomicSub(T* p, T v) {
  T old = *p;
  *p = old - v;
  return old;
}
template <class T>
inline T atomicMax(T* p, T v) {
  T old = *p;
  *p = old < v ? v : old;
  return old;
}
template <class T>
inline T atomicMin(T* p, T v) {
  T old = *p;
  *p = v < old ? v : old;
  return old;
}
template <class T>
inline T atomicExch(T* p, T v) {
  T old = *p;
  *p = v;
  return old;
}
template <class T>
inline T atomicCAS(T* p, T compare, T v) {
  T old = *p;
  if (old == compare) *p = v;
  return old;
}
template <class T>
inline T atomicAnd(T* p, T v) {
  T old = *p;
  *p = old & v;
  return old;
}
template <class T>
inline T atomicOr(T* p, T v) {
  T old = *p;
  *p = old | v;
  return old;
}
template <class T>
inline T atomicXor(T* p, T v) {
  T old = *p;
  *p = old ^ v;
  return old;
}

template <class T>
inline T __ldg(const T* p) {
  return *p;
}

// ---- Device math that the host's <cmath> lacks -----------------------------------------------------
// The fast intrinsics (__expf, __fdividef...) are computed exactly here: the emulation checks the
// math, not the hardware's approximation error (docs/cuda.md).
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x), *c = std::cos(x); }
inline void sincosf(float x, float* s, float* c) { *s = std::sin(x), *c = std::cos(x); }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline float __saturatef(float x) { return x != x ? 0.0f : (x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x)); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752); }
inline int __float2int_rn(float x) { return int(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rd(float x) { return int(std::floor(x)); }
inline int __float2int_ru(float x) { return int(std::ceil(x)); }
inline unsigned __float2uint_rn(float x) { return unsigned(std::nearbyint(x)); }
inline float __int2float_rn(int x) { return float(x); }
inline float __uint2float_rn(unsigned x) { return float(x); }
inline int __float_as_int(float x) { return ob_emu::from_bits<int>(ob_emu::to_bits(x)); }
inline unsigned __float_as_uint(float x) { return ob_emu::from_bits<unsigned>(ob_emu::to_bits(x)); }
inline float __int_as_float(int x) { return ob_emu::from_bits<float>(ob_emu::to_bits(x)); }
inline float __uint_as_float(unsigned x) { return ob_emu::from_bits<float>(ob_emu::to_bits(x)); }
inline long long __double_as_longlong(double x) { return ob_emu::from_bits<long long>(ob_emu::to_bits(x)); }
inline double __longlong_as_double(long long x) { return ob_emu::from_bits<double>(ob_emu::to_bits(x)); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline int __mul24(int a, int b) { return (a << 8 >> 8) * (b << 8 >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __mulhi(int a, int b) { return int((long long)a * b >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((unsigned long long)a * b >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)((__int128)a * b >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)((unsigned __int128)a * b >> 64); }

// CUDA's host-and-device min / max overloads (crt/math_functions.hpp), which CUDA code calls unqualified.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
