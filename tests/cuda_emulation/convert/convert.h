// cuda_convert: rewrites the CUDA-only syntax of a .cu file into plain C++ for the emulation headers
// (tests/cuda_emulation/include). Only what the host compiler cannot parse or the emulation must
// see is touched; everything else, line numbers included, stays as written:
//
//   kernel<<<grid, block[, smem[, stream]]>>>(args)
//       -> ::ob_emu::launch(kernel, "kernel", ::ob_emu::config(grid, block[, smem[, stream]]), args)
//          (any kernel expression: qualified, a template-id such as k<T, (N > 2)>, parenthesised;
//          config and arguments over several lines, nested parentheses, braces, lambdas)
//   extern __shared__ [__align__(n)] T name[];
//       -> static T* const& name = reinterpret_cast<T* const&>(::ob_emu::dynamic_shared_ref());
//   __shared__ T a[N], b;
//       -> static T a[N], b; ::ob_emu::SharedStatic ob_emu_shared_a(&a, sizeof(a)), ob_emu_shared_b(&b, sizeof(b));
//   __launch_bounds__(args) on a kernel definition
//       -> removed, and ::ob_emu::launch_bounds(args); put first in the kernel's body
//
// Comments, string and character literals are never rewritten. The output starts with
// #include <cuda_runtime.h> (nvcc includes it implicitly) and #line 1 "<file>", so compiler
// messages and the emulation's source positions name the .cu file's own lines.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace ob_emu_convert {

struct ConvertError : std::runtime_error {
  int line;
  ConvertError(int l, const std::string& what) : std::runtime_error(what), line(l) {}
};

// Throws ConvertError (with the 1-based line) on syntax it cannot rewrite.
std::string convert(std::string_view source, const std::string& file_name);

}  // namespace ob_emu_convert
