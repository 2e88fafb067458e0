#include "cluster/run_identity.h"

#include <sys/utsname.h>

#include <fmt/format.h>

namespace opbench {

std::string machine_isa_level() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool v2 = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt");
  const bool v3 = v2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return v4 ? "x86-64-v4" : v3 ? "x86-64-v3" : v2 ? "x86-64-v2" : "x86-64";
#else
  utsname u{};
  uname(&u);
  return u.machine;
#endif
}

RunIdentity identity_of_run(const nlohmann::json& run) {
  RunIdentity id;
  id.target = run.value("target", "");
  id.size = run.value("size", "");
  id.isa_level = run.value("isa_level", "unknown");
  const nlohmann::json machine = run.value("machine", nlohmann::json::object());
  id.cpu = machine.value("cpu", "");
  id.logical_cpus = machine.value("logical_cpus", 0);
  id.hostname = machine.value("hostname", "");
  return id;
}

std::vector<std::string> identity_differences(const RunIdentity& a, const RunIdentity& b) {
  std::vector<std::string> out;
  auto compare = [&](const char* field, const std::string& x, const std::string& y) {
    if (x != y) out.push_back(fmt::format("{}: {} vs {}", field, x.empty() ? "(none)" : x, y.empty() ? "(none)" : y));
  };
  compare("target", a.target, b.target);
  compare("size", a.size, b.size);
  compare("ISA level", a.isa_level, b.isa_level);
  compare("machine (CPU model)", a.cpu, b.cpu);
  if (a.logical_cpus != b.logical_cpus) out.push_back(fmt::format("machine (usable CPUs): {} vs {}", a.logical_cpus, b.logical_cpus));
  return out;
}

}  // namespace opbench
