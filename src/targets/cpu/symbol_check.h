// Vetting a built kernel before it runs: the libraries it needs and the dynamic symbols it imports
// must be on an allow-list (libc and libm basics, the C++ runtime, OpenMP, pthreads). A kernel that
// imports dlopen, BLAS, oneDNN, fork/exec, sockets, ptrace and the like is rejected with the name.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace opbench::cpu {

struct DynamicImports {
  std::vector<std::string> needed;     // DT_NEEDED libraries
  std::vector<std::string> undefined;  // undefined dynamic symbols
  std::vector<std::string> exported;   // defined global or weak dynamic symbols
};

// Reads an ELF64 shared object; throws std::runtime_error if it is not one.
DynamicImports read_dynamic_imports(const std::filesystem::path& shared_object);

// An empty string when every import is allowed and the kernel exports nothing but its ob_* entry
// points (and C++ inline/template instances), else why not ("imports dlopen, which is not allowed: ...").
std::string check_imports(const DynamicImports& imports);

// More a target allows beyond the cpu list (cuda: the CUDA runtime library and its functions).
struct ImportPolicy {
  std::vector<std::string> libraries;         // more DT_NEEDED names
  std::vector<std::string> symbol_prefixes;   // more allowed import prefixes
  std::vector<std::string> forbidden_prefixes;  // refused even though a prefix allows them
  std::string allowed_text;                   // appended to "kernels may use ..." in the message
};
std::string check_imports(const DynamicImports& imports, const ImportPolicy& policy);

}  // namespace opbench::cpu
