// Emulated cuda_bf16.h (tests/cuda_emulation): __nv_bfloat16 and __nv_bfloat162 with CUDA's layout
// (2 and 4 bytes, aligned as such), its conversions (round to nearest even; NaN becomes 0x7fff as
// on the device) and the arithmetic this suite's kernels use, computed in fp32 and rounded once.
#pragma once

#include <ob_emu/runtime.h>

namespace ob_emu {
inline unsigned short f32_to_bf16_rn(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
inline unsigned short f32_to_bf16_rz(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  return (unsigned short)(u >> 16);
}
inline float bf16_to_f32(unsigned short h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace ob_emu

struct __nv_bfloat16_raw {
  unsigned short x;
};
struct __nv_bfloat162_raw {
  unsigned short x, y;
};

struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  constexpr __nv_bfloat16(const __nv_bfloat16_raw& r) : __x(r.x) {}
  __nv_bfloat16(float f) : __x(ob_emu::f32_to_bf16_rn(f)) {}
  __nv_bfloat16(double d) : __x(ob_emu::f32_to_bf16_rn(float(d))) {}
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>  // short ... unsigned long long, as cuda_bf16.hpp
  __nv_bfloat16(I v) : __x(ob_emu::f32_to_bf16_rn(float(v))) {}
  operator float() const { return ob_emu::bf16_to_f32(__x); }
  operator __nv_bfloat16_raw() const { return {__x}; }
};

struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
  __nv_bfloat162() = default;
  constexpr __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
  constexpr __nv_bfloat162(const __nv_bfloat162_raw& r) : x(__nv_bfloat16_raw{r.x}), y(__nv_bfloat16_raw{r.y}) {}
  operator __nv_bfloat162_raw() const { return {x.__x, y.__x}; }
};

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

inline float __bfloat162float(__nv_bfloat16 h) { return ob_emu::bf16_to_f32(h.__x); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16_raw{ob_emu::f32_to_bf16_rn(f)}; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16_raw{ob_emu::f32_to_bf16_rn(f)}; }
inline __nv_bfloat16 __float2bfloat16_rz(float f) { return __nv_bfloat16_raw{ob_emu::f32_to_bf16_rz(f)}; }
inline __nv_bfloat16 __double2bfloat16(double d) { return __float2bfloat16_rn(float(d)); }
inline __nv_bfloat16 __int2bfloat16_rn(int v) { return __float2bfloat16_rn(float(v)); }
inline int __bfloat162int_rn(__nv_bfloat16 h) { return int(std::nearbyint(__bfloat162float(h))); }
inline int __bfloat162int_rz(__nv_bfloat16 h) { return int(__bfloat162float(h)); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline short __bfloat16_as_short(__nv_bfloat16 h) { return short(h.__x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16_raw{u}; }
inline __nv_bfloat16 __short_as_bfloat16(short u) { return __nv_bfloat16_raw{(unsigned short)u}; }

inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)}; }
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return {__float2bfloat16_rn(a), __float2bfloat16_rn(a)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return {__float2bfloat16_rn(f.x), __float2bfloat16_rn(f.y)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return {__bfloat162float(h.x), __bfloat162float(h.y)}; }
inline float __low2float(__nv_bfloat162 h) { return __bfloat162float(h.x); }
inline float __high2float(__nv_bfloat162 h) { return __bfloat162float(h.y); }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return {a, a}; }
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return {a.x, b.x}; }
inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return {a.y, b.y}; }

#define OB_EMU_BF16_BINARY(name, expr)                                                                 \
  inline __nv_bfloat16 name(__nv_bfloat16 a, __nv_bfloat16 b) {                                        \
    const float x = __bfloat162float(a), y = __bfloat162float(b);                                      \
    return __float2bfloat16_rn(expr);                                                                  \
  }                                                                                                    \
  inline __nv_bfloat162 name##2(__nv_bfloat162 a, __nv_bfloat162 b) { return {name(a.x, b.x), name(a.y, b.y)}; }
OB_EMU_BF16_BINARY(__hadd, x + y)
OB_EMU_BF16_BINARY(__hsub, x - y)
OB_EMU_BF16_BINARY(__hmul, x * y)
OB_EMU_BF16_BINARY(__hdiv, x / y)
OB_EMU_BF16_BINARY(__hmax, std::fmax(x, y))
OB_EMU_BF16_BINARY(__hmin, std::fmin(x, y))
#undef OB_EMU_BF16_BINARY
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __float2bfloat16_rn(std::fma(__bfloat162float(a), __bfloat162float(b), __bfloat162float(c)));
}
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) { return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return __nv_bfloat16_raw{(unsigned short)(a.__x ^ 0x8000u)}; }
inline __nv_bfloat16 __habs(__nv_bfloat16 a) { return __nv_bfloat16_raw{(unsigned short)(a.__x & 0x7fffu)}; }
inline __nv_bfloat162 __hneg2(__nv_bfloat162 a) { return {__hneg(a.x), __hneg(a.y)}; }
inline __nv_bfloat162 __habs2(__nv_bfloat162 a) { return {__habs(a.x), __habs(a.y)}; }
inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7fffu) > 0x7f80u; }

// The operators cuda_bf16.hpp defines (bf16 results; comparisons in fp32). Without them `a + b`
// would pick among the built-in float/double/int candidates through operator float.
inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return __hadd(a, b); }
inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) { return __hsub(a, b); }
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return __hmul(a, b); }
inline __nv_bfloat16 operator/(__nv_bfloat16 a, __nv_bfloat16 b) { return __hdiv(a, b); }
inline __nv_bfloat16 operator-(__nv_bfloat16 a) { return __hneg(a); }
inline __nv_bfloat16 operator+(__nv_bfloat16 a) { return a; }
inline __nv_bfloat16& operator+=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a + b; }
inline __nv_bfloat16& operator-=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a - b; }
inline __nv_bfloat16& operator*=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a * b; }
inline __nv_bfloat16& operator/=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a / b; }
inline bool operator==(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) == __bfloat162float(b); }
inline bool operator!=(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) != __bfloat162float(b); }
inline bool operator<(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) < __bfloat162float(b); }
inline bool operator<=(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) <= __bfloat162float(b); }
inline bool operator>(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) > __bfloat162float(b); }
inline bool operator>=(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) >= __bfloat162float(b); }
inline __nv_bfloat162 operator+(__nv_bfloat162 a, __nv_bfloat162 b) { return __hadd2(a, b); }
inline __nv_bfloat162 operator-(__nv_bfloat162 a, __nv_bfloat162 b) { return __hsub2(a, b); }
inline __nv_bfloat162 operator*(__nv_bfloat162 a, __nv_bfloat162 b) { return __hmul2(a, b); }
inline __nv_bfloat162 operator/(__nv_bfloat162 a, __nv_bfloat162 b) { return __hdiv2(a, b); }
