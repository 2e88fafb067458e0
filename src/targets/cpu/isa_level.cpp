#include "targets/cpu/isa_level.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace opbench::cpu {

std::string isa_level_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::x86_64_v3: return "x86-64-v3";
    case IsaLevel::x86_64_v4: return "x86-64-v4";
    case IsaLevel::native: return "native";
  }
  return "?";
}

const std::vector<std::string>& isa_level_names() {
  static const std::vector<std::string> names{"x86-64-v3", "x86-64-v4", "native"};
  return names;
}

std::optional<IsaLevel> parse_isa_level(const std::string& name) {
  for (IsaLevel l : {IsaLevel::x86_64_v3, IsaLevel::x86_64_v4, IsaLevel::native})
    if (isa_level_name(l) == name) return l;
  return std::nullopt;
}

bool host_supports(IsaLevel level) {
  __builtin_cpu_init();
  switch (level) {
    case IsaLevel::x86_64_v3: return __builtin_cpu_supports("x86-64-v3");
    case IsaLevel::x86_64_v4: return __builtin_cpu_supports("x86-64-v4");
    case IsaLevel::native: return true;
  }
  return false;
}

IsaLevel default_isa_level() { return host_supports(IsaLevel::x86_64_v4) ? IsaLevel::x86_64_v4 : IsaLevel::x86_64_v3; }

IsaLevel resolve_isa_level(const std::string& name) {
  if (name.empty()) return default_isa_level();
  const auto level = parse_isa_level(name);
  if (!level) throw UsageError(fmt::format("--isa {}: the cpu target offers {}", name, fmt::join(isa_level_names(), ", ")));
  if (!host_supports(*level))
    throw UsageError(fmt::format("--isa {}: this CPU cannot run it (it supports up to {})", name, isa_level_name(default_isa_level())));
  return *level;
}

std::vector<std::string> isa_compiler_flags(IsaLevel level) {
  switch (level) {
    case IsaLevel::x86_64_v3: return {"-march=x86-64-v3"};
    // GCC's generic tuning prefers 256-bit vectors even where AVX-512 is allowed (a choice made for
    // early Intel parts that lowered their clock on zmm code). The level is chosen to use the whole
    // register width, so auto-vectorized loops get it too.
    case IsaLevel::x86_64_v4: return {"-march=x86-64-v4", "-mprefer-vector-width=512"};
    case IsaLevel::native: return {"-march=native", "-mprefer-vector-width=512"};
  }
  return {};
}

std::vector<std::string> vendor_isa_environment(IsaLevel level) {
  switch (level) {
    // OpenBLAS's Haswell kernels, oneDNN's AVX2 primitives.
    case IsaLevel::x86_64_v3: return {"OPENBLAS_CORETYPE=Haswell", "ONEDNN_MAX_CPU_ISA=AVX2"};
    // OpenBLAS's SkylakeX kernels (AVX-512 F/CD/BW/DQ/VL, nothing newer), verified against the
    // references on Zen 5 with OpenBLAS 0.3.21 (see docs/harness.md); oneDNN's AVX-512 core ISA,
    // which excludes VNNI and BF16.
    case IsaLevel::x86_64_v4: return {"OPENBLAS_CORETYPE=SkylakeX", "ONEDNN_MAX_CPU_ISA=AVX512_CORE"};
    // The libraries' own choice for this host.
    case IsaLevel::native: return {};
  }
  return {};
}

}  // namespace opbench::cpu
