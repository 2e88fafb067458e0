#include "workload/spec.h"

#include <cmath>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/error.h"

namespace opbench {
namespace {

std::string expression_text(const toml::node& node, const std::string& where) {
  if (auto s = node.value<std::string>()) return *s;
  if (auto i = node.value<int64_t>()) return std::to_string(*i);
  if (auto d = node.value<double>()) return fmt::format("{:.17g}", *d);
  throw SpecError(fmt::format("{}: expected a number or an expression string", where));
}

std::string required_string(const toml::table& t, const char* key, const std::string& file) {
  auto v = t[key].value<std::string>();
  if (!v) throw SpecError(fmt::format("{}: missing string field '{}'", file, key));
  return *v;
}

TensorSpec parse_tensor(const toml::table& t, const std::string& where, bool is_input) {
  TensorSpec spec;
  spec.name = required_string(t, "name", where);
  const toml::array* shape = t["shape"].as_array();
  if (!shape) throw SpecError(fmt::format("{}: tensor '{}' has no shape list", where, spec.name));
  for (const auto& dim : *shape) spec.shape.push_back(expression_text(dim, where + " shape of " + spec.name));
  if (auto d = t["dtype"].value<std::string>()) spec.fixed_dtype = parse_dtype(*d);
  if (is_input) {
    const toml::table* init = t["init"].as_table();
    if (!init) throw SpecError(fmt::format("{}: input '{}' has no init table", where, spec.name));
    for (const auto& [key, value] : *init) {
      if (key == "dist") spec.init.dist = *value.value<std::string>();
      else spec.init.params[std::string(key.str())] = expression_text(value, where + " init of " + spec.name);
    }
    if (spec.init.dist.empty()) throw SpecError(fmt::format("{}: input '{}' init has no dist", where, spec.name));
  }
  return spec;
}

}  // namespace

bool WorkloadSpec::has_implementation(const std::string& kind) const {
  return std::filesystem::exists(implementation(kind));
}

WorkloadSpec load_workload(const std::filesystem::path& dir) {
  const std::string file = (dir / "workload.toml").string();
  toml::table root;
  try {
    root = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw SpecError(fmt::format("{}: {}", file, e.description()));
  }
  WorkloadSpec w;
  w.dir = dir;
  w.id = required_string(root, "id", file);
  if (w.id != dir.filename().string())
    throw SpecError(fmt::format("{}: id '{}' does not match its folder name", file, w.id));
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
    if (!t) throw SpecError(fmt::format("{}: missing [sizes.{}]", file, size));
    for (const auto& [key, value] : *t) {
      auto v = value.value<double>();
      if (!v) throw SpecError(fmt::format("{}: sizes.{}.{} is not a number", file, size, key.str()));
      w.sizes[size][std::string(key.str())] = *v;
    }
  }
  auto tensors = [&](const char* key, bool is_input) {
    std::vector<TensorSpec> out;
    if (const toml::array* list = root[key].as_array()) {
      for (const auto& node : *list) {
        const toml::table* t = node.as_table();
        if (!t) throw SpecError(fmt::format("{}: [[{}]] entries must be tables", file, key));
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

  const toml::table* tol = root["tolerance"].as_table();
  if (!tol) throw SpecError(fmt::format("{}: missing [tolerance]", file));
  for (const auto& [key, value] : *tol) {
    const toml::table* t = value.as_table();
    if (!t) continue;
    Tolerance tolerance{(*t)["atol"].value_or(-1.0), (*t)["rtol"].value_or(-1.0)};
    if (tolerance.atol < 0 || tolerance.rtol < 0)
      throw SpecError(fmt::format("{}: tolerance.{} needs atol and rtol", file, key.str()));
    w.tolerances[std::string(key.str())] = tolerance;
  }
  if (!w.tolerances.count("f32")) throw SpecError(fmt::format("{}: missing [tolerance.f32]", file));

  if (const toml::array* gemms = root["gemms"].as_array()) {
    for (const auto& node : *gemms) {
      const toml::table* t = node.as_table();
      if (!t) throw SpecError(fmt::format("{}: [[gemms]] entries must be tables", file));
      GemmSpec g;
      for (auto [key, field] : {std::pair{"m", &g.m}, {"n", &g.n}, {"k", &g.k}, {"count", &g.count}}) {
        if (const toml::node* v = t->get(key)) *field = expression_text(*v, file + " gemms." + key);
        else if (std::string(key) != "count") throw SpecError(fmt::format("{}: a [[gemms]] entry needs '{}'", file, key));
      }
      w.gemms.push_back(g);
    }
  }

  // Resolve every size once now, so a broken formula is reported when the suite loads.
  for (const auto& size : size_classes()) resolve_workload(w, size);
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
  auto instance = [&](const TensorSpec& t) {
    TensorInstance inst;
    inst.name = t.name;
    inst.dtype = t.fixed_dtype.value_or(float_dtype);
    for (const auto& dim : t.shape) {
      double v = evaluate_expression(dim, r.symbols);
      if (v < 1 || v != std::floor(v))
        throw SpecError(fmt::format("{}: dimension '{}' of {} is {} at size {}", spec.id, dim, t.name, v, size));
      inst.shape.push_back(int64_t(v));
    }
    inst.init.dist = t.init.dist;
    for (const auto& [k, expr] : t.init.params) inst.init.params[k] = evaluate_expression(expr, r.symbols);
    return inst;
  };
  for (const auto& t : spec.inputs) r.inputs.push_back(instance(t));
  for (const auto& t : spec.outputs) r.outputs.push_back(instance(t));
  r.flops = evaluate_expression(spec.flops, r.symbols);
  r.useful_flops = spec.useful_flops.empty() ? r.flops : evaluate_expression(spec.useful_flops, r.symbols);
  r.min_bytes = evaluate_expression(spec.min_bytes, r.symbols);
  auto tol = spec.tolerances.find(std::string(dtype_name(float_dtype)));
  if (tol == spec.tolerances.end())
    throw SpecError(fmt::format("{}: no tolerance for dtype {}", spec.id, dtype_name(float_dtype)));
  r.tolerance = tol->second;
  for (const auto& g : spec.gemms) {
    auto dim = [&](const std::string& e) { return int64_t(std::llround(evaluate_expression(e, r.symbols))); };
    r.gemms.push_back({dim(g.m), dim(g.n), dim(g.k), dim(g.count)});
  }
  return r;
}

}  // namespace opbench
