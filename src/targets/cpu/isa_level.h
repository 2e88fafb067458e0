// The instruction-set levels of the cpu target. Kernels, baselines and experts of one evaluation
// are all built and checked at one level, and the vendor libraries run their code paths for it, so
// a speedup measures the kernel, never the instruction set.
//   x86-64-v3  AVX2 + FMA (Haswell, 2013)
//   x86-64-v4  v3 + AVX-512 F/CD/BW/DQ/VL (zmm and mask registers)
//   native     every extension this host has (VNNI, BF16, FP16, IFMA, VBMI...): opt-in only
// The default is the highest named level the host supports.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace opbench::cpu {

enum class IsaLevel { x86_64_v3, x86_64_v4, native };

std::string isa_level_name(IsaLevel level);
std::optional<IsaLevel> parse_isa_level(const std::string& name);
const std::vector<std::string>& isa_level_names();

// Whether this host can run code built at `level` (native: always).
bool host_supports(IsaLevel level);
// The highest named level (v4, else v3) this host supports.
IsaLevel default_isa_level();
// `name` checked and resolved: empty means the default; throws UsageError for an unknown name or a
// level this host cannot run.
IsaLevel resolve_isa_level(const std::string& name);

// Compiler flags selecting the level (-march=..., and the vector width to prefer).
std::vector<std::string> isa_compiler_flags(IsaLevel level);
// NAME=VALUE variables that make the vendor libraries run their code paths for `level`.
std::vector<std::string> vendor_isa_environment(IsaLevel level);

}  // namespace opbench::cpu
