// A workload as its folder declares it (workload.toml), and the same workload resolved at one size
// class: concrete shapes, work counts and tolerance.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/compare.h"
#include "core/dtype.h"
#include "core/expr.h"

namespace opbench {

inline const std::vector<std::string>& size_classes() {
  static const std::vector<std::string> sizes{"test", "cpu", "full"};
  return sizes;
}

// How an input is filled: a distribution name and its parameters, each a number or an expression
// over the size symbols (kept as text until the workload is resolved at a size).
struct InitSpec {
  std::string dist;
  std::map<std::string, std::string> params;
};

struct TensorSpec {
  std::string name;
  std::vector<std::string> shape;  // expressions over the size symbols, usually one symbol each
  std::optional<DType> fixed_dtype;  // int32 metadata; floating tensors follow the target's dtype
  InitSpec init;                   // inputs only
};

// A GEMM the workload performs (dimensions as expressions), for comparing the baseline with the
// bare library calls (`opbench gemm-floor`).
struct GemmSpec {
  std::string m, n, k, count = "1";
};

struct WorkloadSpec {
  std::string id, category, model, op, op_class, summary, description, changes_from_jaxbench;
  std::filesystem::path dir;
  std::map<std::string, SymbolTable> sizes;
  std::vector<TensorSpec> inputs, outputs;
  std::string flops, useful_flops, min_bytes;  // expressions; useful_flops may be empty
  // The least work any input the data law can draw needs (default: useful_flops and min_bytes). Where
  // the work depends on drawn values (random sequence lengths), useful_flops and min_bytes are the
  // law's expectation and these its minimum: the roofline floor that calls a time impossible must
  // hold for every input, not only for the average one.
  std::string floor_flops, floor_bytes;
  std::map<std::string, Tolerance> tolerances;  // by dtype name
  std::vector<GemmSpec> gemms;

  // kind + the target's source extension: baseline.cpp (cpu), baseline.cu (cuda). The reference is
  // always reference.cpp: the fp32 oracle every target's baseline is checked against.
  std::filesystem::path implementation(const std::string& kind, const std::string& extension = ".cpp") const {
    return dir / (kind + (kind == "reference" ? std::string(".cpp") : extension));
  }
  bool has_implementation(const std::string& kind, const std::string& extension = ".cpp") const;
};

// Parses `dir/workload.toml`; throws SpecError naming the file and the problem.
WorkloadSpec load_workload(const std::filesystem::path& dir);

struct ResolvedInit {
  std::string dist;
  std::map<std::string, double> params;
  double param(const std::string& name, double fallback) const;
};

struct TensorInstance {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  ResolvedInit init;
  size_t numel() const;
  size_t bytes() const { return numel() * dtype_size(dtype); }
};

struct ResolvedGemm {
  int64_t m = 0, n = 0, k = 0, count = 1;
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(count); }
};

struct ResolvedWorkload {
  const WorkloadSpec* spec = nullptr;
  std::string size;
  SymbolTable symbols;  // includes `elem`, the floating element size in bytes
  DType float_dtype = DType::f32;
  std::vector<TensorInstance> inputs, outputs;
  double flops = 0, useful_flops = 0, min_bytes = 0;
  double floor_flops = 0, floor_bytes = 0;  // <= useful_flops, min_bytes (see WorkloadSpec)
  Tolerance tolerance;
  std::vector<ResolvedGemm> gemms;

  size_t input_bytes() const;
  size_t output_bytes() const;
  double intensity() const { return min_bytes > 0 ? useful_flops / min_bytes : 0; }
};

// Resolves `spec` at a size class, with optional symbol overrides (`--set M=256`).
ResolvedWorkload resolve_workload(const WorkloadSpec& spec, const std::string& size, const SymbolTable& overrides = {},
                                  DType float_dtype = DType::f32);

}  // namespace opbench
