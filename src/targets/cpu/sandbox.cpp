#include "targets/cpu/sandbox.h"

#include <cstdlib>

#include <fmt/format.h>

#include "core/process.h"

namespace opbench::cpu {
namespace {

std::string find_bwrap() {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
    std::filesystem::path p = std::filesystem::path(dir) / "bwrap";
    if (std::filesystem::exists(p)) return p.string();
  }
  return {};
}

std::vector<std::string> namespace_flags(const std::string& bwrap) {
  return {bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"};
}

// The probe only asks whether namespaces can be made here, so it may see the whole root.
std::vector<std::string> common_flags(const std::string& bwrap) {
  std::vector<std::string> argv = namespace_flags(bwrap);
  for (const char* f : {"--ro-bind", "/", "/", "--tmpfs", "/proc", "--dev", "/dev"}) argv.push_back(f);
  return argv;
}

NamespaceSupport probe() {
  NamespaceSupport s;
  if (const char* e = std::getenv("OPBENCH_NO_NAMESPACES"); e && std::string(e) == "1") {
    s.why_not = "disabled by OPBENCH_NO_NAMESPACES=1";
    return s;
  }
  s.bwrap = find_bwrap();
  if (s.bwrap.empty()) {
    s.why_not = "bwrap is not installed (Debian package bubblewrap)";
    return s;
  }
  std::vector<std::string> argv = common_flags(s.bwrap);
  argv.push_back("/bin/true");
  ProcessOutcome r = run_process(argv, std::chrono::seconds(20));
  if (!r.ok()) {
    std::string why = r.output;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    s.why_not = fmt::format("bwrap could not create namespaces here ({})", why.empty() ? "exit " + std::to_string(r.exit_code) : why);
    return s;
  }
  s.available = true;
  return s;
}

}  // namespace

const NamespaceSupport& namespace_support() {
  static const NamespaceSupport support = probe();
  return support;
}

std::vector<std::string> bwrap_command(const std::filesystem::path& worker, const std::filesystem::path& kernel,
                                       const std::vector<std::string>& libraries, const std::vector<std::string>& device_nodes) {
  // An empty root (bwrap's own tmpfs) holding only what the worker needs: no $HOME, no /var/tmp, no
  // /etc, no project tree, no other kernels, no vendor library a candidate does not link.
  std::vector<std::string> argv = namespace_flags(namespace_support().bwrap);
  auto add = [&argv](std::initializer_list<std::string> words) { argv.insert(argv.end(), words); };
  // No /proc at all: nothing of other processes, and no /proc/self/mem to bypass page protections.
  if (device_nodes.empty()) {
    add({"--tmpfs", "/proc"});
  } else {
    // A GPU driver reads its own /proc and /sys entries; the pid namespace's /proc shows no other process.
    add({"--proc", "/proc", "--ro-bind", "/sys", "/sys"});
  }
  add({"--dev", "/dev", "--size", std::to_string(256 << 20), "--tmpfs", "/tmp"});
  for (const std::string& node : device_nodes) add({"--dev-bind", node, node});
  for (const std::string& library : libraries) add({"--ro-bind", library, library});
  // The loader's cache only lists where libraries are; the CPU topology lets libgomp and the
  // vendor libraries size themselves as they do outside. Neither holds anything of the user's.
  for (const char* path : {"/etc/ld.so.cache", "/sys/devices/system/cpu"})
    if (std::filesystem::exists(path)) add({"--ro-bind", path, path});
  add({"--ro-bind", worker.string(), kSandboxWorkerPath, "--ro-bind", kernel.string(), kSandboxKernelPath, "--chdir", "/tmp", "--",
       kSandboxWorkerPath});
  return argv;
}

std::string describe_sandbox(SandboxMode mode) {
  if (mode == SandboxMode::off) return "none (disabled with --sandbox off)";
  const std::string confinement = "seccomp filter, rlimits, no capabilities, not dumpable";
  const NamespaceSupport& ns = namespace_support();
  if (ns.available)
    return "bwrap+seccomp: own user/pid/net/ipc namespaces, a root holding only the worker's libraries and its kernel, "
           "private /tmp, no /proc; " + confinement;
  return fmt::format("seccomp only: {}; namespaces: none ({}); class 5 (host files) not enforced: the worker can read this "
                     "user's files", confinement, ns.why_not);
}

}  // namespace opbench::cpu
