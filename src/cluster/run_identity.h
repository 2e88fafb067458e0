// What makes the results of two runs comparable enough to be merged into one: the same target, size
// class, ISA level and kind of machine. Hostnames may differ (shards of a cluster run on different
// nodes), the hardware may not: a speedup measured on one CPU model is not a speedup on another.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace opbench {

// The x86-64 micro-architecture level this CPU offers ("x86-64-v4", "x86-64-v3", ...), from its
// feature flags. Kernels are built for v3 everywhere, but the vendor libraries of the baselines pick
// their code paths by what the CPU has, so two levels time different baselines. Other
// architectures: the machine's name for itself (uname -m).
std::string machine_isa_level();

struct RunIdentity {
  std::string target, size, isa_level;
  std::string cpu;       // model name
  int logical_cpus = 0;  // usable by the run
  std::string hostname;  // informational: not part of the comparison
};

// The identity recorded in a run document (results.json, schema opbench.run). Old documents
// without an ISA level read as "unknown".
RunIdentity identity_of_run(const nlohmann::json& run);

// What differs between two identities, one line per field ("size: test vs cpu"); empty when the
// runs are comparable.
std::vector<std::string> identity_differences(const RunIdentity& a, const RunIdentity& b);

}  // namespace opbench
