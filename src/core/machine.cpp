#include "core/machine.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <algorithm>
#include <string>


namespace opbench {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

size_t parse_cache_size(const std::string& text) {
  if (text.empty()) return 0;
  size_t value = std::stoull(text);
  char unit = text.back();
  if (unit == 'K') value <<= 10;
  if (unit == 'M') value <<= 20;
  return value;
}

MachineInfo probe() {
  MachineInfo m;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m.hostname = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  m.logical_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : int(sysconf(_SC_NPROCESSORS_ONLN));
  for (int index = 0; index < 8; ++index) {
    std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::string level = read_first_line(base + "level");
    if (level.empty()) break;
    m.llc_bytes = std::max(m.llc_bytes, parse_cache_size(read_first_line(base + "size")));
  }
  if (m.llc_bytes == 0) m.llc_bytes = size_t(32) << 20;
  utsname u{};
  uname(&u);
  m.os = std::string(u.sysname) + " " + u.release;
  return m;
}

}  // namespace

const MachineInfo& machine_info() {
  static const MachineInfo info = probe();
  return info;
}

nlohmann::json to_json(const MachineInfo& m) {
  return {{"hostname", m.hostname}, {"cpu", m.cpu_model}, {"logical_cpus", m.logical_cpus},
          {"llc_bytes", m.llc_bytes}, {"os", m.os}};
}

}  // namespace opbench

namespace opbench {

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return uint64_t(8) << 30;
}

}  // namespace opbench
