// Force-included (-include) into a reference build by `opbench lint`: replaces `double` with a type
// that counts floating-point operations, so the spec's FLOP formula can be checked against what the
// reference actually computes. + - * / count 1 each, every <cmath> function 1, comparisons and
// negation 0. The standard headers a reference may use are included first, so the macro at the end
// touches only the reference's own code.
#ifndef OPBENCH_COUNTING_DOUBLE_H
#define OPBENCH_COUNTING_DOUBLE_H

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <opbench/kernel.h>

using ob_plain_double = double;

namespace ob_count {

inline uint64_t operations = 0;

struct Real {
  ob_plain_double v;
  Real() = default;
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  constexpr Real(T x) : v(ob_plain_double(x)) {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  explicit constexpr operator T() const { return T(v); }
  Real& operator+=(Real o) { ++operations; v += o.v; return *this; }
  Real& operator-=(Real o) { ++operations; v -= o.v; return *this; }
  Real& operator*=(Real o) { ++operations; v *= o.v; return *this; }
  Real& operator/=(Real o) { ++operations; v /= o.v; return *this; }
  Real operator-() const { return Real(-v); }
  Real operator+() const { return *this; }
};

inline Real operator+(Real a, Real b) { ++operations; return Real(a.v + b.v); }
inline Real operator-(Real a, Real b) { ++operations; return Real(a.v - b.v); }
inline Real operator*(Real a, Real b) { ++operations; return Real(a.v * b.v); }
inline Real operator/(Real a, Real b) { ++operations; return Real(a.v / b.v); }
inline bool operator==(Real a, Real b) { return a.v == b.v; }
inline bool operator!=(Real a, Real b) { return a.v != b.v; }
inline bool operator<(Real a, Real b) { return a.v < b.v; }
inline bool operator<=(Real a, Real b) { return a.v <= b.v; }
inline bool operator>(Real a, Real b) { return a.v > b.v; }
inline bool operator>=(Real a, Real b) { return a.v >= b.v; }

#define OB_COUNT_UNARY(name) \
  inline Real name(Real x) { ++::ob_count::operations; return Real(::std::name(x.v)); }
#define OB_COUNT_BINARY(name)                                                        \
  inline Real name(Real a, Real b) { ++::ob_count::operations; return Real(::std::name(a.v, b.v)); } \
  inline Real name(Real a, ob_plain_double b) { ++::ob_count::operations; return Real(::std::name(a.v, b)); } \
  inline Real name(ob_plain_double a, Real b) { ++::ob_count::operations; return Real(::std::name(a, b.v)); }
#define OB_COUNT_FUNCTIONS                                                                       \
  OB_COUNT_UNARY(exp) OB_COUNT_UNARY(exp2) OB_COUNT_UNARY(expm1) OB_COUNT_UNARY(log)             \
  OB_COUNT_UNARY(log2) OB_COUNT_UNARY(log10) OB_COUNT_UNARY(log1p) OB_COUNT_UNARY(sqrt)          \
  OB_COUNT_UNARY(cbrt) OB_COUNT_UNARY(tanh) OB_COUNT_UNARY(sinh) OB_COUNT_UNARY(cosh)            \
  OB_COUNT_UNARY(sin) OB_COUNT_UNARY(cos) OB_COUNT_UNARY(tan) OB_COUNT_UNARY(atan)               \
  OB_COUNT_UNARY(erf) OB_COUNT_UNARY(erfc) OB_COUNT_UNARY(fabs) OB_COUNT_UNARY(abs)              \
  OB_COUNT_UNARY(floor) OB_COUNT_UNARY(ceil) OB_COUNT_UNARY(round) OB_COUNT_UNARY(trunc)         \
  OB_COUNT_BINARY(pow) OB_COUNT_BINARY(fmax) OB_COUNT_BINARY(fmin) OB_COUNT_BINARY(fmod)         \
  OB_COUNT_BINARY(atan2) OB_COUNT_BINARY(hypot)                                                  \
  inline bool isnan(Real x) { return ::std::isnan(x.v); }                                      \
  inline bool isinf(Real x) { return ::std::isinf(x.v); }                                      \
  inline bool isfinite(Real x) { return ::std::isfinite(x.v); }                                \
  inline bool signbit(Real x) { return ::std::signbit(x.v); }                                  \
  inline Real max(Real a, ob_plain_double b) { return a < Real(b) ? Real(b) : a; }             \
  inline Real max(ob_plain_double a, Real b) { return Real(a) < b ? b : Real(a); }             \
  inline Real min(Real a, ob_plain_double b) { return Real(b) < a ? Real(b) : a; }             \
  inline Real min(ob_plain_double a, Real b) { return b < Real(a) ? b : Real(a); }

OB_COUNT_FUNCTIONS

}  // namespace ob_count

// Qualified std:: calls do not look in ob_count, so the same overloads go into std as well.
namespace std {
using ob_count::Real;
OB_COUNT_FUNCTIONS
template <>
struct numeric_limits<ob_count::Real> : numeric_limits<ob_plain_double> {};
}  // namespace std

extern "C" OB_EXPORT uint64_t ob_count_operations(void) { return ob_count::operations; }

#define double ob_count::Real

#endif
