#include "targets/cpu/compiler.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/process.h"
#include "targets/cpu/kernel_cache.h"
#include "targets/cpu/compiler_sandbox.h"
#include "targets/cpu/isa_level.h"

#ifndef OPBENCH_SOURCE_DIR
#define OPBENCH_SOURCE_DIR "."
#endif
#ifndef OPBENCH_BLAS_INCLUDE
#define OPBENCH_BLAS_INCLUDE "/usr/include/x86_64-linux-gnu/openblas-openmp"
#endif
#ifndef OPBENCH_BLAS_LIBDIR
#define OPBENCH_BLAS_LIBDIR "/usr/lib/x86_64-linux-gnu/openblas-openmp"
#endif

namespace opbench::cpu {
namespace {


// The names in `#include "NAME"` lines of a source text.
std::vector<std::string> local_includes(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t hash = line.find_first_not_of(" \t");
    if (hash == std::string::npos || line.compare(hash, 1, "#") != 0) continue;
    const size_t word = line.find("include", hash);
    const size_t open = line.find('"', hash);
    if (word == std::string::npos || open == std::string::npos || open < word) continue;
    const size_t close = line.find('"', open + 1);
    if (close != std::string::npos) names.push_back(line.substr(open + 1, close - open - 1));
  }
  return names;
}

// What -march=native enables on this host, as the compiler reports it (computed once).
std::string native_march_description(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> described;
  std::lock_guard lock(mutex);
  auto it = described.find(compiler);
  if (it != described.end()) return it->second;
  ProcessOutcome out = run_process({compiler, "-march=native", "-Q", "--help=target"}, std::chrono::seconds(30));
  return described[compiler] = out.output;
}

}  // namespace

CompilerConfig CompilerConfig::from_environment() {
  CompilerConfig c;
  const char* cxx = std::getenv("OPBENCH_CXX");
  c.compiler = cxx && *cxx ? cxx : "c++";
  c.include_dir = source_root() / "include";
  if (const char* dir = std::getenv("OPBENCH_CACHE"); dir && *dir) {
    c.cache_dir = dir;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    c.cache_dir = std::filesystem::path(xdg) / "opbench";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    c.cache_dir = std::filesystem::path(home) / ".cache" / "opbench";
  } else {
    c.cache_dir = "/tmp/opbench-cache";
  }
  c.cache_dir /= "kernels";
  // The instruction-set level (-march) is added per build from the request (isa_level.h): baseline
  // and candidate of one evaluation share it, and the workers run the vendor libraries at it too.
  c.base_flags = {"-std=c++20", "-O3", "-mtune=native", "-fopenmp", "-fPIC", "-shared", "-fvisibility=hidden"};
  c.vendor_flags = {std::string("-I") + OPBENCH_BLAS_INCLUDE, std::string("-L") + OPBENCH_BLAS_LIBDIR,
                    std::string("-Wl,-rpath,") + OPBENCH_BLAS_LIBDIR, "-lopenblas", "-ldnnl"};
  return c;
}

std::string compiler_version(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard lock(mutex);
  auto it = versions.find(compiler);
  if (it != versions.end()) return it->second;
  ProcessOutcome out = run_process({compiler, "--version"}, std::chrono::seconds(30));
  if (!out.ok())
    throw UsageError(fmt::format("the kernel compiler '{}' does not run ({}); install g++ or set OPBENCH_CXX",
                                 compiler, out.output.substr(0, 200)));
  std::string line = out.output.substr(0, out.output.find('\n'));
  versions[compiler] = line;
  return line;
}

BuildOutcome build_kernel(const BuildRequest& request, const CompilerConfig& config) {
  BuildOutcome outcome;
  if (!std::filesystem::is_regular_file(request.source))
    throw UsageError(fmt::format("kernel source {} not found", request.source.string()));
  const IsaLevel level = resolve_isa_level(request.isa);
  outcome.isa = isa_level_name(level);
  std::vector<std::string> flags = config.base_flags;
  for (const auto& f : isa_compiler_flags(level)) flags.push_back(f);
  flags.push_back("-I" + config.include_dir.string());
  for (const auto& [name, value] : request.defines) flags.push_back(fmt::format("-D{}={}", name, value));
  flags.insert(flags.end(), request.extra_flags.begin(), request.extra_flags.end());
  // Libraries go after the source on the command line, so they are added there below.
  outcome.compiler = compiler_version(config.compiler);

  const std::string source_text = read_file(request.source);
  std::string key_material = source_text;
  key_material += '\0' + read_file(config.include_dir / "opbench" / "kernel.h");
  // Headers included with quotes from the source's own folder are part of what gets built.
  for (const std::string& header : local_includes(source_text)) {
    const auto path = request.source.parent_path() / header;
    if (std::filesystem::is_regular_file(path)) key_material += '\0' + read_file(path);
  }
  key_material += '\0' + outcome.compiler;
  key_material += '\0';
  key_material += "isa=" + outcome.isa;
  // -march=native means a different instruction set on another host sharing the cache.
  if (level == IsaLevel::native) key_material += '\0' + native_march_description(config.compiler);
  for (const auto& f : request.extra_flags)  // a force-included header is part of the source
    if (std::filesystem::is_regular_file(f)) key_material += '\0' + read_file(f);
  for (const auto& f : flags) key_material += '\0' + f;
  if (request.vendor_libraries)
    for (const auto& f : config.vendor_flags) key_material += '\0' + f;
  outcome.cache_key = xxh3_128_hex(key_material);

  std::filesystem::create_directories(config.cache_dir);
  const std::string stem = request.source.stem().string();
  outcome.artifact = config.cache_dir / fmt::format("{}-{}.so", stem, outcome.cache_key.substr(0, 20));
  // Entries are verified before use and built under a private name (targets/cpu/kernel_cache.h).
  const KernelCache cache(config.cache_dir);
  static std::once_flag cleaned;
  std::call_once(cleaned, [&] { cache.remove_stale_temporaries(); });
  std::string cache_note;
  if (cache.lookup(outcome.artifact, &outcome.log, &cache_note)) {
    outcome.ok = true;
    outcome.cached = true;
    return outcome;
  }
  const std::filesystem::path temp = cache.temporary_for(outcome.artifact);
  std::vector<std::string> argv{config.compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(request.source.string());
  argv.push_back("-o");
  argv.push_back(temp.string());
  if (request.vendor_libraries) argv.insert(argv.end(), config.vendor_flags.begin(), config.vendor_flags.end());

  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  auto start = std::chrono::steady_clock::now();
  // The source is untrusted too: the compiler sees only it, its local headers, include/opbench and
  // the toolchain, under CPU and memory limits (compiler_sandbox.h).
  CompilerJail jail;
  jail.readable = local_headers(request.source);
  jail.readable.push_back(std::filesystem::weakly_canonical(request.source));
  jail.readable.push_back(config.include_dir / "opbench");
  for (const auto& f : request.extra_flags)
    if (std::filesystem::is_regular_file(f)) jail.readable.push_back(std::filesystem::absolute(f));
  jail.output = temp;
  ProcessOutcome proc = run_compiler_confined(argv, jail, std::chrono::seconds(180));
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.log = (cache_note.empty() ? "" : "(" + cache_note + ")\n") + "$ " + command + "\n" + proc.output;
  if (proc.timed_out) outcome.log += "\n(compiler killed after 180 s)\n";
  if (!proc.ok()) {
    std::filesystem::remove(temp);
    return outcome;
  }
  cache.commit(temp, outcome.artifact, outcome.log);
  outcome.ok = true;
  return outcome;
}

}  // namespace opbench::cpu
