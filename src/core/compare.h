// Tolerance comparison of an output against the expected one: |out - exp| <= atol + rtol·|exp|.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace opbench {

struct Tolerance {
  double atol = 0, rtol = 0;
};

struct Comparison {
  size_t elements = 0;
  size_t mismatches = 0;   // elements outside tolerance, NaN and Inf included
  size_t non_finite = 0;   // NaN or Inf where the expected value is finite
  double max_abs_err = 0;  // over finite elements
  double max_rel_err = 0;  // |out - exp| / |exp|, over finite elements with exp != 0
  int64_t first_mismatch = -1;
  double first_got = 0, first_expected = 0;

  bool passed() const { return mismatches == 0; }
  void merge(const Comparison& other);  // for several outputs or trials: worst of both
};

Comparison compare_tensors(const void* got, const void* expected, size_t elements, DType dtype,
                           const Tolerance& tol);

}  // namespace opbench
