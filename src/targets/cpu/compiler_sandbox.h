// Running the kernel compiler on an untrusted source. The source is hostile too: `#include
// "/root/.ssh/id_rsa"` puts a host file into the compiler's error messages (and so into the result's
// build log), `.incbin` into the built object. The compiler runs in bubblewrap namespaces over a
// root that holds only the toolchain (/usr), the source and the headers it includes from its own
// folder, include/opbench and a private output folder, under CPU-time, memory and file-size limits.
// Without namespaces (OPBENCH_NO_NAMESPACES, containers) it runs with the limits and a preprocessing
// pass first that refuses any included file outside those places and any `.incbin`.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "core/process.h"

namespace opbench::cpu {

struct CompilerJail {
  std::vector<std::filesystem::path> readable;  // files and folders the compiler may read (besides /usr)
  std::filesystem::path output;                 // the object it writes (the value after -o in argv)
  uint64_t cpu_seconds = 120;                   // RLIMIT_CPU of every compiler process
  uint64_t memory_bytes = 4ull << 30;           // RLIMIT_AS of every compiler process
};

// The headers `source` includes with quotes, relative to its own folder, and theirs in turn.
std::vector<std::filesystem::path> local_headers(const std::filesystem::path& source);

// Runs `argv` (a compiler command line that has "-o <jail.output>") confined as above. The output's
// first line says why the compiler stopped when a limit or the sandbox stopped it (so a truncated
// log keeps the reason), and the last line says how the compiler was confined.
ProcessOutcome run_compiler_confined(const std::vector<std::string>& argv, const CompilerJail& jail, std::chrono::milliseconds timeout);

}  // namespace opbench::cpu
