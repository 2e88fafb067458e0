// Kernels are held to AVX2 + FMA (x86-64-v3), like the vendor libraries of the baselines. The
// compiler flags keep AVX-512 out of ordinary code, but a `target("avx512f")` attribute or inline
// assembly would still get it in: the built object is disassembled and checked.
#pragma once

#include <filesystem>
#include <string>

namespace opbench::cpu {

// Empty when the object's code uses no AVX-512 register (zmm, ymm16-31/xmm16-31, mask registers);
// else why it is rejected, with the first offending instruction. Throws std::runtime_error when
// objdump cannot be run.
std::string check_instruction_set(const std::filesystem::path& shared_object);

}  // namespace opbench::cpu
