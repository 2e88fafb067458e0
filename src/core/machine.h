// What machine a result was measured on.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace opbench {

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cpus = 0;     // usable by this process (affinity mask)
  size_t llc_bytes = 0;     // last-level cache size, 32 MiB if unknown
  std::string os;
};

const MachineInfo& machine_info();
nlohmann::json to_json(const MachineInfo& m);

}  // namespace opbench

namespace opbench {

// MemAvailable from /proc/meminfo now (not cached: it changes), bytes; 8 GiB when unknown.
uint64_t available_memory_bytes();

}  // namespace opbench
