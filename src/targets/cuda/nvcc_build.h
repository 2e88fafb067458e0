// Builds a cuda-target kernel (.cu) into a shared object with nvcc: sm_90a machine code plus
// compute_90a PTX, the CUDA runtime linked as a shared library (so the worker and the kernel share
// one runtime), cached by a hash of the source, include/opbench, the flags and nvcc's version, and
// compiled in the same sandbox as the cpu target's compiler.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "targets/target.h"

namespace opbench::cuda {

struct NvccConfig {
  std::string nvcc;                        // $OPBENCH_NVCC, else nvcc on PATH, else /usr/local/cuda/bin/nvcc
  std::filesystem::path toolkit;           // nvcc's toolkit root (…/cuda)
  std::filesystem::path library_dir;       // the toolkit's libraries (libcudart, libcublas)
  std::filesystem::path include_dir;       // holds opbench/kernel.h
  std::filesystem::path cache_dir;         // shared with the cpu target's cache root, under kernels-cuda
  std::vector<std::string> base_flags;     // every kernel
  std::vector<std::string> vendor_flags;   // trusted implementations only: cuBLAS
  std::string why_not;                     // empty when nvcc was found
  static NvccConfig from_environment();
};

std::string nvcc_version(const std::string& nvcc);

BuildOutcome build_cuda_kernel(const BuildRequest& request, const NvccConfig& config);

}  // namespace opbench::cuda
