#include "targets/cpu/symbol_check.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "core/files.h"

namespace opbench::cpu {
namespace {

// Libraries a kernel may be linked against.
const std::set<std::string> kAllowedLibraries = {
    "libc.so.6", "libm.so.6", "libmvec.so.1", "libgomp.so.1", "libstdc++.so.6", "libgcc_s.so.1",
    "libpthread.so.0", "ld-linux-x86-64.so.2",
};

// Exact names: memory and string basics, printing (it lands in the result's kernel_output), the
// process-local clock, and libm.
const std::set<std::string> kAllowedSymbols = {
    "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "malloc", "calloc", "realloc", "free",
    "aligned_alloc", "posix_memalign", "abort", "__stack_chk_fail", "__assert_fail", "__errno_location",
    "__tls_get_addr", "__cxa_finalize", "__cxa_atexit", "__cxa_thread_atexit_impl", "__gmon_start__",
    "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable", "_Unwind_Resume", "__gxx_personality_v0",
    "printf", "fprintf", "puts", "putchar", "fputs", "fputc", "fwrite", "fflush", "snprintf", "sprintf",
    "vsnprintf", "__printf_chk", "__fprintf_chk", "__snprintf_chk", "__sprintf_chk", "stderr", "stdout",
    "clock_gettime", "sched_yield", "sysconf", "qsort", "abs", "labs",
};

// libm functions, allowed with their f/l variants and glibc's __*_finite forms.
const std::set<std::string> kMathFunctions = {
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "pow", "sin", "cos", "tan",
    "sincos", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "erf", "erfc", "fabs", "floor",
    "ceil", "round", "lround", "trunc", "nearbyint", "rint", "fmax", "fmin", "fmod", "hypot", "ldexp",
    "frexp", "fma", "copysign",
};

// Prefixes: OpenMP, pthreads, the C++ runtime (new/delete, std:: helpers, exceptions), libmvec.
const char* const kAllowedPrefixes[] = {
    "GOMP_", "omp_", "pthread_", "_Znw", "_Zna", "_Zdl", "_Zda", "_ZSt", "_ZNSt", "_ZNKSt", "__cxa_", "_ZGV",
};

bool math_function(const std::string& name) {
  std::string base = name;
  if (base.rfind("__", 0) == 0 && base.size() > 9 && base.substr(base.size() - 7) == "_finite") base = base.substr(2, base.size() - 9);
  if (kMathFunctions.count(base)) return true;
  if (!base.empty() && (base.back() == 'f' || base.back() == 'l')) return kMathFunctions.count(base.substr(0, base.size() - 1)) > 0;
  return false;
}

bool allowed_symbol(const std::string& name) {
  if (kAllowedSymbols.count(name) || math_function(name)) return true;
  return std::any_of(std::begin(kAllowedPrefixes), std::end(kAllowedPrefixes),
                     [&](const char* p) { return name.rfind(p, 0) == 0; });
}

// What a forbidden import is for, to make the rejection read as a reason.
std::string why_forbidden(const std::string& name) {
  static const std::pair<const char*, const char*> kinds[] = {
      {"dl", "loading code at run time"}, {"cblas_", "a vendor BLAS"}, {"sgemm", "a vendor BLAS"},
      {"dnnl_", "oneDNN"}, {"fork", "new processes"}, {"exec", "new processes"}, {"system", "new processes"},
      {"popen", "new processes"}, {"socket", "network access"}, {"connect", "network access"},
      {"ptrace", "tracing other processes"}, {"process_vm", "reading other processes"}, {"open", "opening files"},
      {"mmap", "mapping memory"}, {"syscall", "raw system calls"}, {"getenv", "reading the environment"},
  };
  for (const auto& [needle, what] : kinds)
    if (name.find(needle) != std::string::npos) return what;
  return "not on the allow-list";
}

template <class T>
const T* at(const std::string& bytes, uint64_t offset, uint64_t count = 1) {
  if (offset > bytes.size() || count > (bytes.size() - offset) / sizeof(T)) throw std::runtime_error("truncated ELF file");
  return reinterpret_cast<const T*>(bytes.data() + offset);
}

std::string string_at(const std::string& bytes, const Elf64_Shdr& strtab, uint64_t index) {
  if (index >= strtab.sh_size) throw std::runtime_error("bad ELF string index");
  const char* start = at<char>(bytes, strtab.sh_offset + index);
  size_t limit = size_t(strtab.sh_size - index);
  return std::string(start, strnlen(start, limit));
}

}  // namespace

DynamicImports read_dynamic_imports(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  const auto* header = at<Elf64_Ehdr>(bytes, 0);
  if (std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 || header->e_ident[EI_CLASS] != ELFCLASS64)
    throw std::runtime_error(path.string() + " is not an ELF64 object");
  const auto* sections = at<Elf64_Shdr>(bytes, header->e_shoff, header->e_shnum);
  DynamicImports out;
  for (int i = 0; i < header->e_shnum; ++i) {
    const Elf64_Shdr& s = sections[i];
    if (s.sh_link >= header->e_shnum) continue;
    const Elf64_Shdr& strtab = sections[s.sh_link];
    if (s.sh_type == SHT_DYNSYM) {
      const auto* symbols = at<Elf64_Sym>(bytes, s.sh_offset, s.sh_size / sizeof(Elf64_Sym));
      for (uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Sym); ++k) {
        if (symbols[k].st_name == 0) continue;
        const int binding = ELF64_ST_BIND(symbols[k].st_info);
        if (symbols[k].st_shndx == SHN_UNDEF) out.undefined.push_back(string_at(bytes, strtab, symbols[k].st_name));
        else if (binding == STB_GLOBAL || binding == STB_WEAK) out.exported.push_back(string_at(bytes, strtab, symbols[k].st_name));
      }
    } else if (s.sh_type == SHT_DYNAMIC) {
      const auto* entries = at<Elf64_Dyn>(bytes, s.sh_offset, s.sh_size / sizeof(Elf64_Dyn));
      for (uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Dyn) && entries[k].d_tag != DT_NULL; ++k)
        if (entries[k].d_tag == DT_NEEDED) out.needed.push_back(string_at(bytes, strtab, entries[k].d_un.d_val));
    }
  }
  return out;
}

std::string check_imports(const DynamicImports& imports) { return check_imports(imports, ImportPolicy{}); }

std::string check_imports(const DynamicImports& imports, const ImportPolicy& policy) {
  auto starts = [](const std::string& name, const std::vector<std::string>& prefixes) {
    return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return name.rfind(p, 0) == 0; });
  };
  for (const auto& lib : imports.needed)
    if (!kAllowedLibraries.count(lib) && std::find(policy.libraries.begin(), policy.libraries.end(), lib) == policy.libraries.end())
      return fmt::format("the kernel links {}, which is not allowed (kernels may use libc, libm, the C++ runtime, OpenMP and pthreads{})",
                         lib, policy.allowed_text);
  std::string forbidden;
  for (const auto& name : imports.undefined) {
    const bool refused = starts(name, policy.forbidden_prefixes);
    if (refused || (!allowed_symbol(name) && !starts(name, policy.symbol_prefixes)))
      forbidden += fmt::format("{}{} ({})", forbidden.empty() ? "" : ", ", name, refused ? "not allowed on this target" : why_forbidden(name));
  }
  if (!forbidden.empty()) return fmt::format("the kernel imports {}, which is not allowed", forbidden);
  // Exports: the entry points, C++ vague-linkage instances (mangled _Z names) and the linker's own
  // markers. A plain C name (clock_gettime, malloc) would shadow the runtime's.
  std::string shadowing;
  for (const auto& name : imports.exported) {
    if (name.rfind("ob_", 0) == 0 || name.rfind("_Z", 0) == 0 || name == "_init" || name == "_fini" || name == "_edata" ||
        name == "_end" || name == "__bss_start")
      continue;
    shadowing += fmt::format("{}{}", shadowing.empty() ? "" : ", ", name);
  }
  if (!shadowing.empty())
    return fmt::format("the kernel exports {}; a kernel may export only its ob_* entry points (use static or an anonymous namespace)", shadowing);
  return {};
}

}  // namespace opbench::cpu
