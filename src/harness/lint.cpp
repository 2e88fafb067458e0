#include "harness/lint.h"

#include "core/files.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "core/compare.h"
#include "core/rng.h"
#include "workload/inputs.h"

#ifndef OPBENCH_SOURCE_DIR
#define OPBENCH_SOURCE_DIR "."
#endif

namespace opbench {
namespace {

using Outputs = std::vector<std::vector<double>>;

std::vector<double> to_doubles(const std::byte* data, size_t n, DType dtype) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DType::f32) v[i] = reinterpret_cast<const float*>(data)[i];
    else if (dtype == DType::i32) v[i] = reinterpret_cast<const int32_t*>(data)[i];
    else {
      uint32_t bits = uint32_t(reinterpret_cast<const uint16_t*>(data)[i]) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      v[i] = f;
    }
  }
  return v;
}

double rms(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return v.empty() ? 0 : std::sqrt(s / double(v.size()));
}

// One worker running the reference on one input set that the lint refills between runs.
class ReferenceRunner {
 public:
  ReferenceRunner(const ResolvedWorkload& w, Target& target, const BuildOutcome& build) : w_(w) {
    inputs_ = target.allocate(w.inputs, 1, "lint-inputs");
    outputs_ = target.allocate(w.outputs, 1, "lint-outputs");
    LaunchOptions options;
    options.threads = 1;
    launch_ = target.launch(build, *inputs_, *outputs_, options);
    if (!launch_.runner) throw std::runtime_error("the reference did not load: " + launch_.reason);
  }

  // Runs with input t drawn from seeds[t]; returns the outputs as doubles.
  Outputs run(const std::vector<uint64_t>& seeds) {
    std::vector<std::byte> host;
    for (size_t t = 0; t < w_.inputs.size(); ++t) {
      host.resize(w_.inputs[t].bytes());
      fill_input(host.data(), w_.inputs[t], seeds[t], t, 1);
      inputs_->write(0, int(t), host.data(), host.size());
    }
    for (int t = 0; t < outputs_->tensors(); ++t) {
      host.assign(outputs_->bytes(t), std::byte{0xFF});
      outputs_->write(0, t, host.data(), host.size());
    }
    BatchOutcome b = launch_.runner->run(0, 1, std::chrono::minutes(5));
    if (!b.ok()) throw std::runtime_error("the reference failed: " + b.detail);
    Outputs out;
    for (size_t t = 0; t < w_.outputs.size(); ++t)
    {
      host.resize(outputs_->bytes(int(t)));
      outputs_->read(0, int(t), host.data(), host.size());
      out.push_back(to_doubles(host.data(), w_.outputs[t].numel(), w_.outputs[t].dtype));
    }
    return out;
  }

  int64_t operations() { return launch_.runner->operation_count(); }

 private:
  const ResolvedWorkload& w_;
  std::unique_ptr<BufferSet> inputs_, outputs_;
  LaunchOutcome launch_;
};

// Does `got` pass against `expected` under `tol`? Also the share of elements that pass.
bool passes(const std::vector<double>& got, const std::vector<double>& expected, const Tolerance& tol, double* share) {
  size_t ok = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::isfinite(got[i]) && std::fabs(got[i] - expected[i]) <= tol.atol + tol.rtol * std::fabs(expected[i])) ++ok;
  *share = got.empty() ? 1 : double(ok) / double(got.size());
  return ok == got.size();
}

}  // namespace

bool LintReport::passed() const {
  return std::none_of(findings.begin(), findings.end(), [](const LintFinding& f) { return f.failed; });
}

LintReport lint_workload(const WorkloadSpec& spec, Target& target) {
  LintReport report;
  report.workload = spec.id;
  auto add = [&](const std::string& check, bool failed, const std::string& detail) {
    report.findings.push_back({check, failed, detail});
  };
  const ResolvedWorkload w = resolve_workload(spec, "test", {}, target.float_dtype());
  BuildOutcome build = target.build({spec.implementation("reference"), "reference", true, {}, {}});
  if (!build.ok) {
    add("builds", true, "the reference does not build:\n" + build.log);
    return report;
  }
  ReferenceRunner reference(w, target, build);

  // Seeds: A for the base run, B for everything redrawn, C for one input redrawn.
  const uint64_t A = 0x1111, B = 0x2222, C = 0x3333;
  const std::vector<uint64_t> base(w.inputs.size(), A);
  const Outputs out_a = reference.run(base);
  const Outputs out_b = reference.run(std::vector<uint64_t>(w.inputs.size(), B));

  for (size_t o = 0; o < w.outputs.size(); ++o) {
    const auto& name = w.outputs[o].name;
    const auto& v = out_a[o];
    if (std::any_of(v.begin(), v.end(), [](double x) { return !std::isfinite(x); })) {
      add("finite_reference", true, fmt::format("the reference's output {} has NaN or Inf", name));
      return report;
    }
    double mean = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    std::vector<double> centred(v.size());
    for (size_t i = 0; i < v.size(); ++i) centred[i] = v[i] - mean;
    const double spread = rms(centred) / std::max(rms(v), 1e-300);
    if (v.size() >= 2)
      add("varies_across_elements", spread < 1e-3, fmt::format("{}: std/rms across elements = {:.3g}", name, spread));
    std::vector<double> diff(v.size());
    for (size_t i = 0; i < v.size(); ++i) diff[i] = v[i] - out_b[o][i];
    const double change = rms(diff) / std::max(rms(v), 1e-300);
    add("varies_across_seeds", change < 1e-3, fmt::format("{}: rms change between seeds / rms = {:.3g}", name, change));

    for (const auto& [dtype, tol] : spec.tolerances) {
      double share = 0;
      std::vector<double> zeros(v.size(), 0.0), constant(v.size(), mean);
      const bool zero_passes = passes(zeros, v, tol, &share);
      add("zero_output_fails", zero_passes,
          fmt::format("{} under {} tolerance: an all-zero output matches {:.1f}% of elements", name, dtype, 100 * share));
      const bool constant_passes = passes(constant, v, tol, &share);
      add("constant_output_fails", constant_passes,
          fmt::format("{} under {} tolerance: the constant {:.3g} matches {:.1f}% of elements", name, dtype, mean, 100 * share));
    }
  }

  // Inputs drawn by one joint generator change together (their values must agree).
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t t = 0; t < w.inputs.size(); ++t) {
    const auto& dist = w.inputs[t].init.dist;
    if (dist == "iota") {  // structural metadata (offsets of a fixed layout): the same for every seed
      add("every_input_matters", false, fmt::format("{} is deterministic by design (iota); not redrawn", w.inputs[t].name));
      continue;
    }
    groups[dist == "ragged_batch" ? "ragged_batch (" + w.inputs[t].name + "...)" : w.inputs[t].name].push_back(t);
  }
  std::map<std::string, std::vector<size_t>> merged;
  std::vector<size_t> joint;
  for (auto& [name, members] : groups) {
    if (w.inputs[members[0]].init.dist == "ragged_batch") joint.insert(joint.end(), members.begin(), members.end());
    else merged[name] = members;
  }
  if (!joint.empty()) {
    std::string names;
    for (size_t t : joint) names += (names.empty() ? "" : "+") + w.inputs[t].name;
    merged[names] = joint;
  }
  for (const auto& [name, members] : merged) {
    std::vector<uint64_t> seeds = base;
    for (size_t t : members) seeds[t] = C;
    const Outputs moved = reference.run(seeds);
    double worst_share = 1;
    for (size_t o = 0; o < w.outputs.size(); ++o) {
      double share = 0;
      passes(moved[o], out_a[o], w.tolerance, &share);
      worst_share = std::min(worst_share, share);
    }
    add("every_input_matters", worst_share == 1.0,
        fmt::format("redrawing {} moves {:.1f}% of output elements beyond the f32 tolerance", name, 100 * (1 - worst_share)));
  }

  // The FLOP formula against the reference's own operation count.
  const std::string counter = (source_root() / "src" / "lint" / "counting_double.h").string();
  BuildOutcome counted = target.build({spec.implementation("reference"), "reference-counted", true, {}, {"-include", counter}});
  if (!counted.ok) {
    add("flop_formula", true, "the reference does not build with the operation counter (keep all arithmetic in `double`):\n" +
                                  counted.log.substr(0, 2000));
    return report;
  }
  ReferenceRunner counting(w, target, counted);
  counting.run(base);
  report.counted_operations = double(counting.operations());
  report.formula_flops = w.flops;
  const double ratio = report.counted_operations > 0 ? w.flops / report.counted_operations : INFINITY;
  add("flop_formula", !(ratio >= 0.5 && ratio <= 2.0),
      fmt::format("spec {:.4g} FLOPs, reference counted {:.4g} operations: ratio {:.3f}", w.flops, report.counted_operations, ratio));
  return report;
}

nlohmann::json to_json(const LintReport& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings) findings.push_back({{"check", f.check}, {"failed", f.failed}, {"detail", f.detail}});
  return {{"workload", r.workload}, {"passed", r.passed()}, {"formula_flops", r.formula_flops},
          {"counted_operations", r.counted_operations}, {"findings", findings}};
}

}  // namespace opbench
