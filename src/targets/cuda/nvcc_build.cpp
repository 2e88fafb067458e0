#include "targets/cuda/nvcc_build.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/process.h"
#include "targets/cpu/compiler_sandbox.h"
#include "targets/cpu/kernel_cache.h"

#ifndef OPBENCH_SOURCE_DIR
#define OPBENCH_SOURCE_DIR "."
#endif

namespace opbench::cuda {
namespace {

namespace fs = std::filesystem;

std::string find_nvcc() {
  if (const char* env = std::getenv("OPBENCH_NVCC"); env && *env) return env;
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = path.find(':', start);
    const std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && access((fs::path(dir) / "nvcc").c_str(), X_OK) == 0) return (fs::path(dir) / "nvcc").string();
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  return {};
}

// Every header under include/opbench is part of what a kernel is built from.
std::string opbench_headers(const fs::path& include_dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(include_dir / "opbench"))
    if (e.is_regular_file()) files[e.path().filename().string()] = read_file(e.path());
  std::string text;
  for (const auto& [name, content] : files) text += name + '\0' + content + '\0';
  return text;
}

}  // namespace

NvccConfig NvccConfig::from_environment() {
  NvccConfig c;
  c.nvcc = find_nvcc();
  if (c.nvcc.empty()) c.why_not = "nvcc not found (install the CUDA toolkit, put nvcc on PATH or set OPBENCH_NVCC)";
  std::error_code ec;
  if (!c.nvcc.empty()) c.toolkit = fs::weakly_canonical(c.nvcc, ec).parent_path().parent_path();
  for (const char* sub : {"lib64", "targets/x86_64-linux/lib", "lib"})
    if (!c.toolkit.empty() && fs::exists(c.toolkit / sub / "libcudart.so")) {
      c.library_dir = c.toolkit / sub;
      break;
    }
  if (const char* env = std::getenv("OPBENCH_CUDA_LIBRARY_DIR"); env && *env) c.library_dir = env;
  c.include_dir = source_root() / "include";
  if (const char* dir = std::getenv("OPBENCH_CACHE"); dir && *dir) c.cache_dir = dir;
  else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) c.cache_dir = fs::path(xdg) / "opbench";
  else if (const char* home = std::getenv("HOME"); home && *home) c.cache_dir = fs::path(home) / ".cache" / "opbench";
  else c.cache_dir = "/tmp/opbench-cache";
  c.cache_dir /= "kernels-cuda";
  // sm_90a: Hopper's own instructions (wgmma, setmaxnreg) need the "a" target; the compute_90a PTX
  // rides along for the driver. -cudart shared: one CUDA runtime in the worker, the kernel's.
  c.base_flags = {"-std=c++20", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-gencode=arch=compute_90a,code=compute_90a",
                  "-cudart", "shared", "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden", "-shared"};
  if (!c.library_dir.empty()) {
    c.base_flags.push_back("-L" + c.library_dir.string());
    c.base_flags.push_back("-Xlinker");
    c.base_flags.push_back("-rpath," + c.library_dir.string());
  }
  c.vendor_flags = {"-lcublas", "-lcublasLt"};
  return c;
}

std::string nvcc_version(const std::string& nvcc) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard lock(mutex);
  if (auto it = versions.find(nvcc); it != versions.end()) return it->second;
  ProcessOutcome out = run_process({nvcc, "--version"}, std::chrono::seconds(30));
  if (!out.ok()) throw UsageError(fmt::format("nvcc ('{}') does not run: {}", nvcc, out.output.substr(0, 200)));
  // The last line names the exact build ("Build cuda_13.0.r13.0/compiler.36424714_0").
  std::string text = out.output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string line = text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  return versions[nvcc] = line;
}

BuildOutcome build_cuda_kernel(const BuildRequest& request, const NvccConfig& config) {
  BuildOutcome outcome;
  if (!fs::is_regular_file(request.source)) throw UsageError(fmt::format("kernel source {} not found", request.source.string()));
  if (!config.why_not.empty()) throw UsageError("the cuda target cannot build kernels here: " + config.why_not);
  std::vector<std::string> flags = config.base_flags;
  flags.push_back("-I" + config.include_dir.string());
  for (const auto& [name, value] : request.defines) flags.push_back(fmt::format("-D{}={}", name, value));
  flags.insert(flags.end(), request.extra_flags.begin(), request.extra_flags.end());
  outcome.compiler = nvcc_version(config.nvcc);

  const std::string source_text = read_file(request.source);
  std::string key_material = source_text + '\0' + opbench_headers(config.include_dir);
  for (const fs::path& header : cpu::local_headers(request.source)) key_material += '\0' + read_file(header);
  key_material += '\0' + outcome.compiler;
  for (const auto& f : flags) key_material += '\0' + f;
  if (request.vendor_libraries)
    for (const auto& f : config.vendor_flags) key_material += '\0' + f;
  outcome.cache_key = xxh3_128_hex(key_material);

  fs::create_directories(config.cache_dir);
  outcome.artifact = config.cache_dir / fmt::format("{}-{}.so", request.source.stem().string(), outcome.cache_key.substr(0, 20));
  const cpu::KernelCache cache(config.cache_dir);
  static std::once_flag cleaned;
  std::call_once(cleaned, [&] { cache.remove_stale_temporaries(); });
  std::string cache_note;
  if (cache.lookup(outcome.artifact, &outcome.log, &cache_note)) {
    outcome.ok = true;
    outcome.cached = true;
    return outcome;
  }
  const fs::path temp = cache.temporary_for(outcome.artifact);
  std::vector<std::string> argv{config.nvcc};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(request.source.string());
  argv.push_back("-o");
  argv.push_back(temp.string());
  if (request.vendor_libraries) argv.insert(argv.end(), config.vendor_flags.begin(), config.vendor_flags.end());
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;

  const auto start = std::chrono::steady_clock::now();
  cpu::CompilerJail jail;
  jail.readable = cpu::local_headers(request.source);
  jail.readable.push_back(fs::weakly_canonical(request.source));
  jail.readable.push_back(config.include_dir / "opbench");
  if (!config.toolkit.empty()) jail.readable.push_back(config.toolkit);  // when it lies outside /usr
  jail.output = temp;
  jail.cpu_seconds = 300;               // cicc and ptxas on a large wgmma kernel take minutes
  jail.memory_bytes = 16ull << 30;
  ProcessOutcome proc = cpu::run_compiler_confined(argv, jail, std::chrono::seconds(400));
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.log = (cache_note.empty() ? "" : "(" + cache_note + ")\n") + "$ " + command + "\n" + proc.output;
  if (proc.timed_out) outcome.log += "\n(nvcc killed after 400 s)\n";
  if (!proc.ok()) {
    fs::remove(temp);
    return outcome;
  }
  cache.commit(temp, outcome.artifact, outcome.log);
  outcome.ok = true;
  return outcome;
}

}  // namespace opbench::cuda
