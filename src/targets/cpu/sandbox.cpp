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

std::vector<std::string> common_flags(const std::string& bwrap) {
  return {bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/",
          // No /proc at all: nothing of other processes, and no /proc/self/mem to bypass page protections.
          "--tmpfs", "/proc", "--dev", "/dev", "--size", std::to_string(256 << 20), "--tmpfs", "/tmp", "--chdir", "/tmp"};
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

std::vector<std::string> bwrap_command(const std::filesystem::path& worker, const std::filesystem::path& kernel) {
  std::vector<std::string> argv = common_flags(namespace_support().bwrap);
  for (const std::string& s : {std::string("--ro-bind"), worker.string(), std::string(kSandboxWorkerPath), std::string("--ro-bind"),
                               kernel.string(), std::string(kSandboxKernelPath), std::string("--"), std::string(kSandboxWorkerPath)})
    argv.push_back(s);
  return argv;
}

std::string describe_sandbox(SandboxMode mode) {
  if (mode == SandboxMode::off) return "none (disabled with --sandbox off)";
  const std::string confinement = "seccomp filter, rlimits, no capabilities, not dumpable";
  const NamespaceSupport& ns = namespace_support();
  if (ns.available)
    return "bwrap+seccomp: own user/pid/net/ipc namespaces, read-only root, private /tmp, no /proc; " + confinement;
  return fmt::format("seccomp only: {}; namespaces: none ({})", confinement, ns.why_not);
}

}  // namespace opbench::cpu
