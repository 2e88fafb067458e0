#include "targets/cpu/worker_view.h"
#include "targets/cpu/isa_level.h"

#include <sys/stat.h>

#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/process.h"

namespace opbench::cpu {

std::vector<std::string> shared_libraries_of(const std::filesystem::path& elf) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<int64_t, std::vector<std::string>>> cache;
  struct stat st{};
  if (stat(elf.c_str(), &st) != 0) throw std::runtime_error(fmt::format("{} not found", elf.string()));
  const int64_t stamp = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  {
    std::lock_guard lock(mutex);
    auto it = cache.find(elf.string());
    if (it != cache.end() && it->second.first == stamp) return it->second.second;
  }
  ProcessOutcome out = run_process({"/usr/bin/ldd", elf.string()}, std::chrono::seconds(30));
  if (!out.ok()) throw std::runtime_error(fmt::format("ldd {} failed: {:.300}", elf.string(), out.output));
  std::vector<std::string> libraries;
  std::istringstream lines(out.output);
  for (std::string line; std::getline(lines, line);) {
    // "\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x...)" or "\t/lib64/ld-linux-x86-64.so.2 (0x...)";
    // "linux-vdso.so.1 (0x...)" has no file. "not found" means the loader would fail too.
    if (line.find("not found") != std::string::npos)
      throw std::runtime_error(fmt::format("{} needs a library that is not installed: {}", elf.filename().string(), line));
    const size_t arrow = line.find("=> ");
    const size_t start = arrow != std::string::npos ? arrow + 3 : line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] != '/') continue;
    const size_t end = line.find(" (", start);
    libraries.push_back(line.substr(start, end == std::string::npos ? std::string::npos : end - start));
  }
  std::lock_guard lock(mutex);
  cache[elf.string()] = {stamp, libraries};
  return libraries;
}

bool needs_vendor_library(const std::vector<std::string>& libraries) {
  for (const auto& path : libraries) {
    const std::string name = std::filesystem::path(path).filename().string();
    for (const char* vendor : {"libopenblas", "libblas", "libcblas", "liblapack", "libdnnl", "libmkl", "libblis"})
      if (name.rfind(vendor, 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> worker_environment(int threads, const std::string& isa, char** parent_environment, bool allow_list) {
  // Prefixes and exact names the worker may inherit. The pinned ones below replace the parent's.
  static const char* const kPrefixes[] = {"OMP_", "GOMP_", "KMP_", "LC_"};
  static const char* const kNames[] = {"LANG", "LANGUAGE", "TZ", "OPBENCH_NO_SECCOMP"};
  static const char* const kPinned[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOMP_SPINCOUNT", "OPENBLAS_CORETYPE",
                                        "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "PATH", "HOME", "TMPDIR",
                                        // Binding threads calls sched_setaffinity, which the sandbox refuses:
                                        // the parent already pinned the worker to its CPUs.
                                        "OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY"};
  std::vector<std::string> env;
  for (char** e = parent_environment; e && *e; ++e) {
    const std::string var = *e;
    const std::string name = var.substr(0, var.find('='));
    bool allowed = !allow_list;
    for (const char* p : kPrefixes) allowed = allowed || name.rfind(p, 0) == 0;
    for (const char* n : kNames) allowed = allowed || name == n;
    for (const char* n : kPinned) allowed = allowed && (name != n || (!allow_list && (name == "PATH" || name == "HOME" || name == "TMPDIR")));
    if (allowed) env.push_back(var);
  }
  // One instruction set for everything timed: the vendor libraries of the baselines run their code
  // paths for the level the kernels were built at (isa_level.h).
  for (const auto& var : vendor_isa_environment(resolve_isa_level(isa))) env.push_back(var);
  env.push_back(fmt::format("OMP_NUM_THREADS={}", threads));
  env.push_back(fmt::format("OPENBLAS_NUM_THREADS={}", threads));
  // Two workers (baseline and candidate) take turns on the same cores; libgomp's default spin
  // (~300k iterations, milliseconds) would let one run into the other's batch.
  env.push_back("GOMP_SPINCOUNT=1000");
  if (!allow_list) return env;
  env.push_back("PATH=/usr/bin:/bin");
  env.push_back("HOME=/tmp");
  env.push_back("TMPDIR=/tmp");
  return env;
}

}  // namespace opbench::cpu
