// Builds a kernel source into a shared object with the system C++ compiler, cached by a hash of
// the source, the ABI header, the flags and the compiler's version.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "targets/target.h"

namespace opbench::cpu {

struct CompilerConfig {
  std::string compiler;                 // $OPBENCH_CXX, else c++
  std::filesystem::path include_dir;    // holds opbench/kernel.h
  std::filesystem::path cache_dir;      // $OPBENCH_CACHE, else $XDG_CACHE_HOME/opbench, else ~/.cache/opbench
  std::vector<std::string> base_flags;  // every kernel
  std::vector<std::string> vendor_flags;  // trusted implementations only: BLAS
  static CompilerConfig from_environment();
};

std::string compiler_version(const std::string& compiler);

BuildOutcome build_kernel(const BuildRequest& request, const CompilerConfig& config);

}  // namespace opbench::cpu
