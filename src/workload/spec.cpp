#include "workload/spec.h"

#include <unistd.h>

#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/error.h"
#include "workload/inputs.h"

namespace opbench {
namespace {

// "FILE:LINE" of a node, so a spec error points at the line to fix.
std::string at(const std::string& file, const toml::node& node) {
  const auto line = node.source().begin.line;
  return line > 0 ? fmt::format("{}:{}", file, line) : file;
}

std::string expression_text(const toml::node& node, const std::string& where) {
  if (auto s = node.value<std::string>()) return *s;
  if (auto i = node.value<int64_t>()) return std::to_string(*i);
  if (auto d = node.value<double>()) {
    if (!std::isfinite(*d)) throw SpecError(fmt::format("{}: {} is not a finite number", where, *d));
    return fmt::format("{:.17g}", *d);
  }
  throw SpecError(fmt::format("{}: expected a number or an expression string", where));
}

std::string required_string(const toml::table& t, const char* key, const std::string& file) {
  auto v = t[key].value<std::string>();
  if (!v) throw SpecError(fmt::format("{}: missing string field '{}'", at(file, t), key));
  return *v;
}

// A tolerance bound: present, a finite number, not negative ("atol = nan" would pass everything).
double tolerance_bound(const toml::table& t, const char* key, const std::string& file, const std::string& dtype) {
  const toml::node* node = t.get(key);
  if (!node) throw SpecError(fmt::format("{}: tolerance.{} needs {}", at(file, t), dtype, key));
  const std::optional<double> v = node->value<double>();
  if (!v || !std::isfinite(*v) || *v < 0)
    throw SpecError(fmt::format("{}: tolerance.{}.{} must be a finite number >= 0", at(file, *node), dtype, key));
  return *v;
}

// The largest tensor dimension (2^40): more cannot be allocated anywhere, and products of such
// values are still checked for overflow.
constexpr double kLargestDimension = double(int64_t(1) << 40);

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

bool known_distribution(const std::string& name) {
  for (const auto& d : known_distributions())
    if (name == d.name) return true;
  return false;
}

TensorSpec parse_tensor(const toml::table& t, const std::string& file, bool is_input) {
  TensorSpec spec;
  spec.name = required_string(t, "name", file);
  const toml::array* shape = t["shape"].as_array();
  if (!shape) throw SpecError(fmt::format("{}: tensor '{}' has no shape list", at(file, t), spec.name));
  for (const auto& dim : *shape) spec.shape.push_back(expression_text(dim, at(file, dim) + " shape of " + spec.name));
  if (const toml::node* d = t.get("dtype")) {
    try {
      spec.fixed_dtype = parse_dtype(d->value_or(std::string{}));
    } catch (const std::exception& e) {
      throw SpecError(fmt::format("{}: tensor '{}': {}", at(file, *d), spec.name, e.what()));
    }
  }
  if (is_input) {
    const toml::table* init = t["init"].as_table();
    if (!init) throw SpecError(fmt::format("{}: input '{}' has no init table", at(file, t), spec.name));
    for (const auto& [key, value] : *init) {
      if (key == "dist") {
        auto dist = value.value<std::string>();
        if (!dist) throw SpecError(fmt::format("{}: init.dist of '{}' must be a string", at(file, value), spec.name));
        if (!known_distribution(*dist))
          throw SpecError(fmt::format("{}: input '{}' has the unknown distribution '{}' (docs/workloads.md lists them)",
                                      at(file, value), spec.name, *dist));
        spec.init.dist = *dist;
      } else {
        spec.init.params[std::string(key.str())] = expression_text(value, at(file, value) + " init of " + spec.name);
      }
    }
    if (spec.init.dist.empty()) throw SpecError(fmt::format("{}: input '{}' init has no dist", at(file, *init), spec.name));
  }
  return spec;
}

}  // namespace

bool WorkloadSpec::has_implementation(const std::string& kind, const std::string& extension) const {
  return std::filesystem::exists(implementation(kind, extension));
}

WorkloadSpec load_workload(const std::filesystem::path& dir) {
  const std::string file = (dir / "workload.toml").string();
  toml::table root;
  try {
    root = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw SpecError(fmt::format("{}:{}: {}", file, e.source().begin.line, e.description()));
  }
  WorkloadSpec w;
  w.dir = dir;
  w.id = required_string(root, "id", file);
  if (w.id != dir.filename().string())
    throw SpecError(fmt::format("{}: id '{}' does not match its folder name", at(file, *root.get("id")), w.id));
  w.category = required_string(root, "category", file);
  w.model = root["model"].value_or(std::string{});
  w.op = root["operator"].value_or(std::string{});
  w.op_class = root["op_class"].value_or(std::string{});
  w.summary = required_string(root, "summary", file);
  w.description = root["description"].value_or(std::string{});
  w.changes_from_jaxbench = root["changes_from_jaxbench"].value_or(std::string{});

  const toml::table* sizes = root["sizes"].as_table();
  if (!sizes) throw SpecError(fmt::format("{}: missing [sizes]", file));
  for (const auto& size : size_classes()) {
    const toml::table* t = (*sizes)[size].as_table();
    if (!t) throw SpecError(fmt::format("{}: missing [sizes.{}]", at(file, *sizes), size));
    for (const auto& [key, value] : *t) {
      auto v = value.value<double>();
      if (!v || !std::isfinite(*v)) throw SpecError(fmt::format("{}: sizes.{}.{} is not a finite number", at(file, value), size, key.str()));
      w.sizes[size][std::string(key.str())] = *v;
    }
  }
  auto tensors = [&](const char* key, bool is_input) {
    std::vector<TensorSpec> out;
    if (const toml::array* list = root[key].as_array()) {
      for (const auto& node : *list) {
        const toml::table* t = node.as_table();
        if (!t) throw SpecError(fmt::format("{}: [[{}]] entries must be tables", at(file, node), key));
        out.push_back(parse_tensor(*t, file, is_input));
      }
    }
    if (out.empty()) throw SpecError(fmt::format("{}: no [[{}]]", file, key));
    return out;
  };
  w.inputs = tensors("inputs", true);
  w.outputs = tensors("outputs", false);

  const toml::table* work = root["work"].as_table();
  if (!work) throw SpecError(fmt::format("{}: missing [work]", file));
  w.flops = required_string(*work, "flops", file);
  w.min_bytes = required_string(*work, "min_bytes", file);
  w.useful_flops = (*work)["useful_flops"].value_or(std::string{});
  w.floor_flops = (*work)["floor_flops"].value_or(std::string{});
  w.floor_bytes = (*work)["floor_bytes"].value_or(std::string{});

  const toml::table* tol = root["tolerance"].as_table();
  if (!tol) throw SpecError(fmt::format("{}: missing [tolerance]", file));
  for (const auto& [key, value] : *tol) {
    const toml::table* t = value.as_table();
    if (!t) continue;
    const std::string dtype(key.str());
    w.tolerances[dtype] = Tolerance{tolerance_bound(*t, "atol", file, dtype), tolerance_bound(*t, "rtol", file, dtype)};
  }
  if (!w.tolerances.count("f32")) throw SpecError(fmt::format("{}: missing [tolerance.f32]", file));

  if (const toml::array* gemms = root["gemms"].as_array()) {
    for (const auto& node : *gemms) {
      const toml::table* t = node.as_table();
      if (!t) throw SpecError(fmt::format("{}: [[gemms]] entries must be tables", at(file, node)));
      GemmSpec g;
      for (auto [key, field] : {std::pair{"m", &g.m}, {"n", &g.n}, {"k", &g.k}, {"count", &g.count}}) {
        if (const toml::node* v = t->get(key)) *field = expression_text(*v, file + " gemms." + key);
        else if (std::string(key) != "count") throw SpecError(fmt::format("{}: a [[gemms]] entry needs '{}'", at(file, *t), key));
      }
      w.gemms.push_back(g);
    }
  }

  // Resolve every size once now, so a broken formula is reported when the suite loads.
  for (const auto& size : size_classes()) {
    try {
      resolve_workload(w, size);
    } catch (const std::exception& e) {
      throw SpecError(fmt::format("{}: at size {}: {}", file, size, e.what()));
    }
  }
  return w;
}

double ResolvedInit::param(const std::string& name, double fallback) const {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

size_t TensorInstance::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

size_t ResolvedWorkload::input_bytes() const {
  size_t n = 0;
  for (const auto& t : inputs) n += t.bytes();
  return n;
}

size_t ResolvedWorkload::output_bytes() const {
  size_t n = 0;
  for (const auto& t : outputs) n += t.bytes();
  return n;
}

ResolvedWorkload resolve_workload(const WorkloadSpec& spec, const std::string& size, const SymbolTable& overrides,
                                  DType float_dtype) {
  auto it = spec.sizes.find(size);
  if (it == spec.sizes.end())
    throw UsageError(fmt::format("unknown size '{}' for {} (use test, cpu or full)", size, spec.id));
  ResolvedWorkload r;
  r.spec = &spec;
  r.size = size;
  r.float_dtype = float_dtype;
  r.symbols = it->second;
  for (const auto& [name, value] : overrides) {
    if (!r.symbols.count(name)) {
      std::string known;
      for (const auto& [k, v] : it->second) known += (known.empty() ? "" : ", ") + k;
      throw UsageError(fmt::format("{} has no shape symbol '{}' (its symbols: {})", spec.id, name, known));
    }
    r.symbols[name] = value;
  }
  r.symbols["elem"] = double(dtype_size(float_dtype));
  // Errors a --set value causes are the user's (exit 2); the same errors at a size the spec itself
  // declares are the suite's.
  auto fail = [&](const std::string& what) -> void {
    if (!overrides.empty()) {
      std::string given;
      for (const auto& [name, value] : overrides) given += fmt::format("{}{}={}", given.empty() ? "" : ", ", name, value);
      throw UsageError(fmt::format("{} with --set {}: {}", spec.id, given, what));
    }
    throw SpecError(fmt::format("{}: {}", spec.id, what));
  };
  uint64_t total_bytes = 0;
  auto instance = [&](const TensorSpec& t) {
    TensorInstance inst;
    inst.name = t.name;
    inst.dtype = t.fixed_dtype.value_or(float_dtype);
    uint64_t bytes = dtype_size(inst.dtype);
    for (const auto& dim : t.shape) {
      double v = evaluate_expression(dim, r.symbols);
      if (v < 1 || v != std::floor(v) || v > kLargestDimension)
        fail(fmt::format("dimension '{}' of {} is {} at size {} (a whole number from 1 to 2^40 is needed)", dim, t.name, v, size));
      inst.shape.push_back(int64_t(v));
      // Element and byte counts in 64 bits, checked: a product that wraps would allocate a small
      // buffer for a huge tensor.
      if (__builtin_mul_overflow(bytes, uint64_t(v), &bytes))
        fail(fmt::format("tensor {} (dimension '{}' = {}) has more bytes than 64 bits can count", t.name, dim, v));
    }
    if (__builtin_add_overflow(total_bytes, bytes, &total_bytes)) fail("the tensors have more bytes than 64 bits can count");
    inst.init.dist = t.init.dist;
    for (const auto& [k, expr] : t.init.params) inst.init.params[k] = evaluate_expression(expr, r.symbols);
    return inst;
  };
  for (const auto& t : spec.inputs) r.inputs.push_back(instance(t));
  for (const auto& t : spec.outputs) r.outputs.push_back(instance(t));
  // A shape the user made up is checked against the machine now, by name, rather than failing in
  // an allocation deep in the harness (a spec's own sizes are the harness's --max-memory business).
  if (!overrides.empty()) {
    const uint64_t memory = physical_memory_bytes();
    if (memory > 0 && total_bytes > memory)
      fail(fmt::format("one set of inputs and outputs needs {:.1f} GiB, more than this machine's {:.1f} GiB of memory",
                       double(total_bytes) / double(1ull << 30), double(memory) / double(1ull << 30)));
  }
  r.flops = evaluate_expression(spec.flops, r.symbols);
  r.useful_flops = spec.useful_flops.empty() ? r.flops : evaluate_expression(spec.useful_flops, r.symbols);
  r.min_bytes = evaluate_expression(spec.min_bytes, r.symbols);
  if (r.flops < 0 || r.useful_flops < 0 || r.min_bytes <= 0)
    fail(fmt::format("work at size {}: flops {}, useful_flops {}, min_bytes {} (flops must be >= 0, min_bytes > 0)", size, r.flops,
                     r.useful_flops, r.min_bytes));
  r.floor_flops = spec.floor_flops.empty() ? r.useful_flops : evaluate_expression(spec.floor_flops, r.symbols);
  r.floor_bytes = spec.floor_bytes.empty() ? r.min_bytes : evaluate_expression(spec.floor_bytes, r.symbols);
  if (r.floor_flops < 0 || r.floor_flops > r.useful_flops * (1 + 1e-12) || r.floor_bytes <= 0 || r.floor_bytes > r.min_bytes * (1 + 1e-12))
    fail(fmt::format("work at size {}: floor_flops {} and floor_bytes {} must be at least 0 and at most useful_flops {} and "
                     "min_bytes {} (they are the least work any input needs)",
                     size, r.floor_flops, r.floor_bytes, r.useful_flops, r.min_bytes));
  auto tol = spec.tolerances.find(std::string(dtype_name(float_dtype)));
  if (tol == spec.tolerances.end())
    throw SpecError(fmt::format("{}: no tolerance for dtype {}", spec.id, dtype_name(float_dtype)));
  r.tolerance = tol->second;
  for (const auto& g : spec.gemms) {
    auto dim = [&](const std::string& e) {
      const double v = evaluate_expression(e, r.symbols);
      if (v < 1 || v > kLargestDimension) fail(fmt::format("[[gemms]] dimension '{}' is {} at size {}", e, v, size));
      return int64_t(std::llround(v));
    };
    r.gemms.push_back({dim(g.m), dim(g.n), dim(g.k), dim(g.count)});
  }
  // The generators of integer metadata (group sizes, ragged batches) have conditions of their own
  // that a shape can break (11p with G=1 cannot have one empty group): drawn once now, a few KB, so
  // that a --set the generator cannot meet is a usage error here and not a failure deep in a run.
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const TensorInstance& t = r.inputs[i];
    if (element_wise(t)) continue;
    std::vector<std::byte> trial(t.bytes());
    try {
      fill_input(trial.data(), t, /*set_seed=*/1, i, 1);
    } catch (const SpecError& e) {
      fail(fmt::format("input {} cannot be drawn: {}", t.name, e.what()));
    }
  }
  return r;
}

}  // namespace opbench
