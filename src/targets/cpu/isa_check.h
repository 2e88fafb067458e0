// The instruction check: a kernel is built at one level (isa_level.h), but a `target("avx512f")`
// attribute, an intrinsic header's pragma or inline assembly can still reach past it, so the built
// object is disassembled and every instruction checked against the level, exactly:
//   x86-64-v3  no EVEX-encoded instruction, no zmm, xmm/ymm16-31 or mask register, no extension
//              beyond v3 (the VEX forms of VNNI/IFMA included)
//   x86-64-v4  AVX-512 F/CD/BW/DQ/VL allowed; no extension beyond v4 (VNNI, BF16, FP16, IFMA,
//              VBMI/VBMI2, BITALG, VPOPCNTDQ, VP2INTERSECT, GFNI, AES/VAES, (V)PCLMULQDQ, SHA)
//   native     anything (the host runs what it has; the rest faults and the kernel crashes)
#pragma once

#include <filesystem>
#include <string>

#include "targets/cpu/isa_level.h"

namespace opbench::cpu {

// Empty when every instruction of the object's disassembly (objdump -d -M intel output) is within
// `level`; else why not, with the first offending instruction.
std::string check_disassembly(const std::string& objdump_output, IsaLevel level);

// The same on a built shared object. Throws std::runtime_error when objdump cannot be run.
std::string check_instruction_set(const std::filesystem::path& shared_object, IsaLevel level);

}  // namespace opbench::cpu
