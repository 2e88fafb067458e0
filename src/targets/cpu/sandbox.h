// The parent's half of the worker sandbox: whether bubblewrap can give the worker its own
// namespaces on this machine (probed once), the command line that does it, and the plain-words
// description every result carries. The worker's half (seccomp, rlimits, capabilities) is
// worker_confine.h.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace opbench::cpu {

enum class SandboxMode { on, off };

struct NamespaceSupport {
  bool available = false;
  std::string bwrap;   // path of the bwrap program
  std::string why_not; // when not available: what failed, in words
};

// Probed once per process by running `bwrap ... true`; $OPBENCH_NO_NAMESPACES=1 pretends it failed
// (to exercise the fallback in tests).
const NamespaceSupport& namespace_support();

// Where the worker and the kernel appear inside the sandbox.
inline constexpr const char* kSandboxWorkerPath = "/tmp/opbench/worker";
inline constexpr const char* kSandboxKernelPath = "/tmp/opbench/kernel.so";

// argv that runs `worker` (bound read-only with `kernel`) in fresh user, pid, network, ipc, uts and
// cgroup namespaces and a new session, over an empty root that holds only `libraries` (the shared
// libraries of the worker and the kernel, at their own paths), an empty /proc, a minimal /dev and a
// private size-limited /tmp. The caller appends nothing: the worker takes no arguments.
// `device_nodes` (e.g. /dev/nvidia0) are bound as devices, with /proc and /sys, for a worker that
// drives a GPU.
std::vector<std::string> bwrap_command(const std::filesystem::path& worker, const std::filesystem::path& kernel,
                                       const std::vector<std::string>& libraries, const std::vector<std::string>& device_nodes = {});

// What a result says about its sandbox, e.g. "bwrap+seccomp: ..." or "seccomp only: namespaces
// unavailable (...)" or "none (disabled with --sandbox off)".
std::string describe_sandbox(SandboxMode mode);

}  // namespace opbench::cpu
