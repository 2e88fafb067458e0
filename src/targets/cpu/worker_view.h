// What of the host a worker sees: the files its process needs to load (the shared libraries of the
// worker program and of its kernel, found the way the loader finds them) and an environment cut
// down to an allow-list. A candidate's kernel links nothing but the C/C++ runtime and OpenMP (the
// import check), so its view has no BLAS to dlopen; a baseline's also holds its vendor libraries.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace opbench::cpu {

// Absolute paths of every shared library `elf` loads, the loader included (ldd, which reads the
// dynamic section and resolves names with the object's RUNPATH and the loader's cache; it runs no
// code of the object). Cached per path and modification time. Throws std::runtime_error on failure.
std::vector<std::string> shared_libraries_of(const std::filesystem::path& elf);

// True when the object needs a vendor library (OpenBLAS, oneDNN): a trusted baseline. Vendor
// libraries may make code at run time (oneDNN's JIT), so such workers keep PROT_EXEC.
bool needs_vendor_library(const std::vector<std::string>& libraries);

// The worker's environment: only names on the allow-list survive (OpenMP's and libgomp's settings,
// the vendor libraries' instruction-set switches, the locale, opbench's own test switches), PATH
// is reset to the system's, and the thread count and instruction set are pinned. API keys, tokens,
// HOME and the user's paths never reach a kernel.
std::vector<std::string> worker_environment(int threads, const std::string& isa, char** parent_environment, bool allow_list = true);

}  // namespace opbench::cpu
