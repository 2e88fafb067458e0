#include "targets/cpu/compiler_sandbox.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/files.h"
#include "targets/cpu/sandbox.h"

namespace opbench::cpu {
namespace {

namespace fs = std::filesystem;

// The places an included file may come from: the toolchain's own headers and what the jail lists.
bool inside_allowed(const fs::path& file, const CompilerJail& jail) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(file, ec);
  const std::string text = (ec ? file : real).string();
  if (text.rfind("/usr/", 0) == 0) return true;
  for (const auto& allowed : jail.readable) {
    const std::string root = fs::weakly_canonical(allowed, ec).string();
    if (text == root || (fs::is_directory(allowed) && text.rfind(root + "/", 0) == 0)) return true;
  }
  return false;
}

// The files of a make-style dependency list ("out: a.cpp b.h \ c.h").
std::vector<std::string> dependency_files(const std::string& text) {
  std::string flat;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      flat += ' ';
    } else {
      flat += text[i];
    }
  }
  const size_t colon = flat.find(": ");
  std::istringstream words(colon == std::string::npos ? flat : flat.substr(colon + 2));
  std::vector<std::string> files;
  for (std::string w; words >> w;) files.push_back(w);
  return files;
}

// Without namespaces: preprocess first (warnings off, so no line of a host file is quoted), list
// the included files and refuse the build if one lies outside the allowed places or the text asks
// the assembler to include a file. Empty when the source may be compiled.
std::string screen_source(const std::vector<std::string>& argv, const CompilerJail& jail, const fs::path& scratch,
                          std::chrono::milliseconds timeout) {
  std::vector<std::string> pre;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "-o") {
      ++i;
      continue;
    }
    if (argv[i].rfind("-l", 0) == 0 || argv[i].rfind("-L", 0) == 0 || argv[i].rfind("-Wl,", 0) == 0 || argv[i] == "-shared") continue;
    pre.push_back(argv[i]);
  }
  const fs::path deps = scratch / "deps.d", text = scratch / "source.ii";
  for (const std::string& f : {std::string("-E"), std::string("-w"), std::string("-MD"), std::string("-MF"), deps.string(),
                               std::string("-o"), text.string()})
    pre.push_back(f);
  ProcessOutcome p = run_process(pre, timeout);
  if (!p.ok()) return "preprocessing failed (the included files are checked before compiling without namespaces)";
  for (const std::string& file : dependency_files(read_file(deps)))
    if (!inside_allowed(file, jail)) return fmt::format("the source includes {}, which is outside the source's folder, include/opbench and the toolchain", file);
  // String pieces and spaces removed: ".inc" "bin" and `. incbin` are still found.
  // Line markers ("# 12 \"/usr/include/...\"") name files, not code: left out.
  std::string squeezed;
  std::istringstream lines(read_file(text));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# ", 0) == 0) continue;
    for (char c : line)
      if (c != '"' && c != ' ' && c != '\t' && c != '\\') squeezed += char(std::tolower(static_cast<unsigned char>(c)));
  }
  if (squeezed.find(".incbin") != std::string::npos || squeezed.find(".include") != std::string::npos)
    return "the source asks the assembler to include a file (.incbin or .include), which kernels may not do";
  return {};
}

// Why the compiler stopped, when it was a limit: searched in its output, which names the signal
// that ended cc1plus ("Killed signal terminated program cc1plus", "CPU time limit exceeded").
std::string stop_reason(const ProcessOutcome& p, const CompilerJail& jail) {
  const std::string& o = p.output;
  if (p.timed_out) return "the compiler was killed: it ran past its wall-clock limit";
  if (o.find("CPU time limit exceeded") != std::string::npos || p.signal == SIGXCPU)
    return fmt::format("the compiler was killed: it used its {} s of CPU time", jail.cpu_seconds);
  if (o.find("virtual memory exhausted") != std::string::npos || o.find("out of memory") != std::string::npos ||
      o.find("Cannot allocate memory") != std::string::npos || o.find("std::bad_alloc") != std::string::npos)
    return fmt::format("the compiler ran out of its {} GiB of memory", jail.memory_bytes >> 30);
  if (o.find("File size limit exceeded") != std::string::npos || p.signal == SIGXFSZ)
    return "the compiler was killed: its output passed the file-size limit";
  if (o.find("terminated program") != std::string::npos || p.signal != 0)
    return fmt::format("the compiler was killed by a signal{}", p.signal ? " (" + describe_signal(p.signal) + ")" : std::string());
  return {};
}

}  // namespace

std::vector<std::filesystem::path> local_headers(const std::filesystem::path& source) {
  std::vector<fs::path> found, pending{source};
  while (!pending.empty()) {
    const fs::path file = pending.back();
    pending.pop_back();
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      const size_t hash = line.find_first_not_of(" \t");
      if (hash == std::string::npos || line[hash] != '#' || line.find("include", hash) == std::string::npos) continue;
      const size_t open = line.find('"', hash), close = open == std::string::npos ? open : line.find('"', open + 1);
      if (close == std::string::npos) continue;
      const std::string name = line.substr(open + 1, close - open - 1);
      if (name.empty() || name[0] == '/') continue;  // absolute: not a local header (and not visible)
      std::error_code ec;
      const fs::path header = fs::weakly_canonical(file.parent_path() / name, ec);
      if (ec || !fs::is_regular_file(header) || std::find(found.begin(), found.end(), header) != found.end()) continue;
      found.push_back(header);
      pending.push_back(header);
    }
  }
  return found;
}

ProcessOutcome run_compiler_confined(const std::vector<std::string>& argv, const CompilerJail& jail, std::chrono::milliseconds timeout) {
  // A private folder for the object: the compiler can write nowhere else, and reads no other kernel.
  std::string pattern = (jail.output.parent_path() / ".build-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a private build folder in " + jail.output.parent_path().string());
  const fs::path scratch = fs::absolute(pattern);
  const fs::path private_output = scratch / "kernel.so";
  std::vector<std::string> compiler = argv;
  for (size_t i = 0; i + 1 < compiler.size(); ++i)
    if (compiler[i] == "-o") compiler[i + 1] = private_output.string();

  const NamespaceSupport& ns = namespace_support();
  std::vector<std::string> command;
  std::string confinement;
  ProcessOutcome out;
  if (ns.available) {
    command = {ns.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr",
               "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc",
               "--dev", "/dev", "--tmpfs", "/tmp",
               // The command line may name files relative to the current folder: it exists inside too (empty
               // but for what is bound below).
               "--dir", fs::current_path().string()};
    for (const auto& path : jail.readable)
      if (fs::exists(path)) command.insert(command.end(), {"--ro-bind", fs::absolute(path).string(), fs::absolute(path).string()});
    // Debian's compiler names (c++, cc, the default toolchain) are symlinks through /etc/alternatives:
    // only symlinks, nothing of the user's.
    if (fs::is_directory("/etc/alternatives")) command.insert(command.end(), {"--ro-bind", "/etc/alternatives", "/etc/alternatives"});
    command.insert(command.end(), {"--bind", scratch.string(), scratch.string(), "--chdir", fs::current_path().string(), "--"});
    confinement = "compiler sandbox: bwrap (only /usr, the source, its local headers and include/opbench visible)";
  } else {
    confinement = fmt::format("compiler sandbox: limits and an include screen only (namespaces: none, {})", ns.why_not);
    if (std::string refusal = screen_source(compiler, jail, scratch, timeout); !refusal.empty()) {
      fs::remove_all(scratch);
      out.exit_code = 1;
      out.output = "compilation refused: " + refusal + "\n" + confinement + "\n";
      return out;
    }
  }
  command.insert(command.end(), {"/usr/bin/prlimit", fmt::format("--cpu={}", jail.cpu_seconds), fmt::format("--as={}", jail.memory_bytes),
                                 fmt::format("--fsize={}", 512ull << 20), "--core=0", "--"});
  command.insert(command.end(), compiler.begin(), compiler.end());
  out = run_process(command, timeout);
  if (std::string reason = stop_reason(out, jail); !reason.empty() && !out.ok()) out.output = reason + "\n" + out.output;
  out.output += confinement + "\n";
  std::error_code ec;
  if (out.ok()) fs::rename(private_output, jail.output, ec);
  if (ec) {
    out.exit_code = 1;
    out.output += "the compiler's object could not be moved out of its folder: " + ec.message() + "\n";
  }
  fs::remove_all(scratch, ec);
  return out;
}

}  // namespace opbench::cpu
