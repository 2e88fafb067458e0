// Emulated WMMA (nvcuda::wmma, tests/cuda_emulation). Every lane's fragment holds the WHOLE tile
// (row-major, x[r * cols + c]): the device's distribution of elements over lanes is unspecified and
// not modelled, so code that reads or writes fragment elements by position (x[i] meaning a particular
// row and column) is not checked by this emulation; whole-fragment element-wise code (x[i] *= s for
// every i) is. What is checked is what the WMMA documentation requires: load / store / mma are
// collective over the full warp (all 32 lanes arrive, with the same pointer, ldm and layout), the
// pointer is 256-bit aligned and ldm a multiple of 16 bytes. Products of bf16 (or half) inputs are
// accumulated in fp32, k in order.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <class Use, int M, int N, int K>
struct tile;
template <int M, int N, int K>
struct tile<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct tile<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct tile<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};
template <class T>
inline float widen(T v) {
  return float(v);
}
inline float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
inline T narrow(float v) {
  return T(v);
}
template <>
inline __nv_bfloat16 narrow<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// The collective's checks: full warp, same arguments in every lane, 256-bit pointer, 16-byte ldm.
inline void collective(const char* what, const void* p, unsigned ldm, unsigned elem_bytes, int layout, std::source_location l) {
  const ob_emu::Site site = ob_emu::site_of(l);
  if (p) {
    if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
      ob_emu::device_fault(cudaErrorMisalignedAddress, "%s at %s:%u: pointer %p is not 256-bit aligned", what, site.file, site.line, p);
    if ((ldm * elem_bytes) % 16 != 0)
      ob_emu::device_fault(cudaErrorMisalignedAddress, "%s at %s:%u: ldm %u is not a multiple of 16 bytes", what, site.file, site.line, ldm);
  }
  ob_emu::warp_op(ob_emu::WarpOp::uniform, 0xffffffffu, reinterpret_cast<uintptr_t>(p), 0, 32, site, what,
                  (uint64_t(ldm) << 8) | uint64_t(layout));
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int rows = detail::tile<Use, M, N, K>::rows, cols = detail::tile<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  typedef T element_type;
  typedef T storage_element_type;
  T x[num_elements];
};

template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, const V& v) {
  const T t = T(v);
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = t;
}

// matrix_a / matrix_b: the layout is the fragment's.
template <class Use, int M, int N, int K, class T, class L>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const T* p, unsigned ldm,
                             std::source_location l = std::source_location::current()) {
  static_assert(std::is_same_v<L, row_major> || std::is_same_v<L, col_major>, "a matrix_a / matrix_b fragment has a layout");
  constexpr bool row = std::is_same_v<L, row_major>;
  detail::collective("wmma::load_matrix_sync", p, ldm, sizeof(T), row ? 0 : 1, l);
  for (int r = 0; r < f.rows; ++r)
    for (int c = 0; c < f.cols; ++c) f.x[r * f.cols + c] = row ? p[size_t(r) * ldm + c] : p[size_t(c) * ldm + r];
}

// Accumulators: the layout is the call's.
template <int M, int N, int K, class T>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& f, const T* p, unsigned ldm, layout_t layout,
                             std::source_location l = std::source_location::current()) {
  detail::collective("wmma::load_matrix_sync", p, ldm, sizeof(T), int(layout), l);
  for (int r = 0; r < f.rows; ++r)
    for (int c = 0; c < f.cols; ++c)
      f.x[r * f.cols + c] = layout == mem_row_major ? p[size_t(r) * ldm + c] : p[size_t(c) * ldm + r];
}

template <int M, int N, int K, class T>
inline void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T, void>& f, unsigned ldm, layout_t layout,
                              std::source_location l = std::source_location::current()) {
  detail::collective("wmma::store_matrix_sync", p, ldm, sizeof(T), int(layout), l);
  for (int r = 0; r < f.rows; ++r)
    for (int c = 0; c < f.cols; ++c) (layout == mem_row_major ? p[size_t(r) * ldm + c] : p[size_t(c) * ldm + r]) = f.x[r * f.cols + c];
}

template <int M, int N, int K, class Tab, class La, class Lb, class Tc>
inline void mma_sync(fragment<accumulator, M, N, K, Tc, void>& d, const fragment<matrix_a, M, N, K, Tab, La>& a,
                     const fragment<matrix_b, M, N, K, Tab, Lb>& b, const fragment<accumulator, M, N, K, Tc, void>& c,
                     std::source_location l = std::source_location::current()) {
  detail::collective("wmma::mma_sync", nullptr, 0, 0, 0, l);
  float out[M * N];
  for (int r = 0; r < M; ++r)
    for (int col = 0; col < N; ++col) {
      float acc = detail::widen(c.x[r * N + col]);
      for (int kk = 0; kk < K; ++kk) acc += detail::widen(a.x[r * K + kk]) * detail::widen(b.x[kk * N + col]);
      out[r * N + col] = acc;
    }
  for (int i = 0; i < M * N; ++i) d.x[i] = detail::narrow<Tc>(out[i]);
}

}  // namespace wmma
}  // namespace nvcuda
