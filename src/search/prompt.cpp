#include "search/prompt.h"

#include <cctype>
#include <cmath>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "core/utf8.h"
#include "targets/registry.h"

namespace opbench {
namespace {

// The context documents, in the order a prompt includes them; the menu comes last because the plan
// phase reads it as the list to choose from.
const char* const kContextFiles[] = {"machine.md", "abi.md", "coding-rules.md", "intrinsics.md", "examples.md"};
const char* const kMenuFile = "optimization-menu.md";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + ")";
}

std::string task_text(const PromptOptions& o, const WorkloadSpec& spec) {
  if (o.phase == "translate")
    return fmt::format(
        "Write a first correct kernel for the workload {} from its reference implementation below. Correctness "
        "comes first: it must match the reference within the tolerance on every input. Make it reasonably fast "
        "(vectorized, parallel) where that does not put correctness at risk.",
        spec.id);
  if (o.phase == "plan")
    return fmt::format(
        "The kernel under \"Parent kernel\" below is correct. Propose {} distinct plans that would make it faster "
        "on this machine. Each plan names the strategies it applies (menu ids such as M03 where they fit), says "
        "what changes in the code and why it should be faster here, and estimates the gain. Plans must keep the "
        "kernel correct.",
        o.candidates);
  return "Apply the plan under \"Plan\" to the parent kernel below and write the complete new kernel. Keep it "
         "correct; if part of the plan cannot be done correctly, leave that part out.";
}

std::string format_text(const PromptOptions& o) {
  if (o.phase == "plan")
    return "Answer with the plans only, each starting with a heading line \"### Plan N: <title>\" (N = 1, 2, ...), "
           "followed by its text.";
  if (o.target == "cuda")
    return "Answer with one complete CUDA C++ source file for nvcc (it includes <opbench/kernel.h> or <opbench/cuda_util.cuh>, "
           "defines OB_DEFINE_ABI_VERSION() and ob_run, and launches on call->stream) in a single ```cpp fenced code block. "
           "Nothing after the block is read.";
  return "Answer with one complete C++ source file (it includes <opbench/kernel.h>, defines OB_DEFINE_ABI_VERSION() "
         "and ob_run) in a single ```cpp fenced code block. Nothing after the block is read.";
}

void section(std::string& out, const std::string& title, const std::string& body) {
  out += "# " + title + "\n\n" + body;
  if (!body.empty() && body.back() != '\n') out += "\n";
  out += "\n";
}

// The measurements of a kernel as the prompt states them.
std::string measurements_text(const nlohmann::json& f) {
  std::string text = fmt::format("status: {}\n", f.value("status", "?"));
  if (f.contains("speedup")) {
    text += fmt::format("speedup over the baseline: {:.3f}x", f["speedup"].get<double>());
    if (f.contains("speedup_ci95") && f["speedup_ci95"].size() == 2)
      text += fmt::format(" (95% interval {:.3f}x to {:.3f}x)", f["speedup_ci95"][0].get<double>(), f["speedup_ci95"][1].get<double>());
    text += "\n";
  }
  if (f.contains("speedup_standing")) text += "speedup standing: " + f["speedup_standing"].get<std::string>() + "\n";
  if (f.contains("median_ms")) {
    const double ms = f["median_ms"].get<double>();
    text += fmt::format("time per call: {:.4f} ms (baseline {:.4f} ms)\n", ms, f.value("baseline_median_ms", 0.0));
    if (f.contains("gflops_per_s") || f.contains("gbytes_per_s"))
      text += fmt::format("achieved: {:.1f} GFLOP/s, {:.1f} GB/s\n", f.value("gflops_per_s", 0.0), f.value("gbytes_per_s", 0.0));
    // The share of the roofline is what there is left to gain; the floor (the least work any input
    // needs, lower than the roofline where work depends on drawn values) is only the limit under
    // which a time is called impossible, so it is not quoted as a share.
    if (f.contains("roofline_ms") && ms > 0)
      text += fmt::format("roofline: {:.4f} ms per call on this machine ({}-bound at its peaks); this kernel reaches {:.0f}% of the roofline\n",
                          f["roofline_ms"].get<double>(), f.value("roofline_bound", std::string("compute")),
                          100 * f["roofline_ms"].get<double>() / ms);
    if (f.contains("roofline_floor_ms"))
      text += fmt::format("impossible-time floor: {:.4f} ms per call (the least work any input needs at peak; a median under half of it is untrusted)\n",
                          f["roofline_floor_ms"].get<double>());
  }
  if (!f.value("message", std::string()).empty()) text += "message: " + f["message"].get<std::string>() + "\n";
  if (!f.value("errors", std::string()).empty()) text += "errors:\n" + f["errors"].get<std::string>() + "\n";
  return text;
}

}  // namespace

std::filesystem::path default_context_dir() { return source_root() / "context" / "cpu"; }

std::filesystem::path context_dir_for(const std::string& target) { return source_root() / "context" / target_info(target).context_dir; }

std::string drop_menu_entries(const std::string& menu, double dropout, uint64_t seed) {
  if (dropout <= 0) return menu;
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution drop(std::min(dropout, 1.0));
  std::istringstream lines(menu);
  std::string out;
  bool keeping = true;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("## M", 0) == 0) keeping = !drop(rng);  // an entry starts: keep or drop it whole
    if (keeping) out += line + "\n";
  }
  return out;
}

std::string strip_local_paths(const std::string& text) {
  auto path_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+' || c == '/'; };
  auto starts_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_'; };
  const std::string before = " \t\n'\"(`=[<:,";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const bool boundary = i == 0 || before.find(text[i - 1]) != std::string::npos ||
                          (i >= 2 && text[i - 2] == '-' && (text[i - 1] == 'I' || text[i - 1] == 'L'));  // -I/path, -L/path
    if (text[i] == '/' && boundary && i + 1 < text.size() && starts_name(text[i + 1])) {
      size_t end = i;
      while (end < text.size() && path_char(text[end])) ++end;
      const std::string path = text.substr(i, end - i);
      if (path.find('/', 1) != std::string::npos) {  // at least two components: /usr/include/x.h -> x.h
        std::string last = path.substr(path.rfind('/') + 1);
        out += last.empty() ? "." : last;
        i = end;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

nlohmann::json feedback_from_result(const Result& r) {
  nlohmann::json f = {{"status", std::string(status_name(r.status))}, {"message", utf8_sanitize(strip_local_paths(r.message))}};
  if (r.speedup) {
    f["speedup"] = r.speedup->vs_baseline;
    f["speedup_ci95"] = {r.speedup->ci95_low, r.speedup->ci95_high};
    if (r.speedup->standing != "ok") f["speedup_standing"] = r.speedup->standing + (r.speedup->standing_reason.empty() ? "" : ": " + r.speedup->standing_reason);
  }
  if (r.timing) {
    f["median_ms"] = r.timing->per_call_ms.median;
    f["baseline_median_ms"] = r.timing->baseline_per_call_ms.median;
  }
  if (r.work.gflops_per_s > 0) f["gflops_per_s"] = r.work.gflops_per_s;
  if (r.work.gbytes_per_s > 0) f["gbytes_per_s"] = r.work.gbytes_per_s;
  if (r.integrity.roofline_floor_ms > 0) f["roofline_floor_ms"] = r.integrity.roofline_floor_ms;
  if (r.roofline && r.roofline->roof_ms > 0 && std::isfinite(r.roofline->roof_ms)) {
    f["roofline_ms"] = r.roofline->roof_ms;
    f["roofline_bound"] = r.roofline->bound;
  }
  std::string errors;
  if (r.status == Status::compile_error) errors = r.build_log;
  else if (r.status != Status::correct) errors = r.correctness.reason;
  if (!r.kernel_output.empty() && r.status != Status::correct) errors += "\nkernel output:\n" + r.kernel_output;
  f["errors"] = utf8_truncate(strip_local_paths(errors), 6000);
  return f;
}

std::string assemble_prompt(const WorkloadSpec& spec, const ResolvedWorkload& w, const PromptOptions& o) {
  if (o.phase != "translate" && o.phase != "plan" && o.phase != "implement")
    throw UsageError(fmt::format("unknown phase '{}' (use translate, plan or implement)", o.phase));
  if (o.phase != "translate" && o.parent_source.empty()) throw UsageError(fmt::format("the {} phase needs a parent kernel (--parent FILE)", o.phase));
  if (o.phase == "implement" && o.plan.empty()) throw UsageError("the implement phase needs a plan (--plan FILE)");

  std::string out;
  section(out, "Task", task_text(o, spec));

  std::string workload = fmt::format("{}: {}\n\n{}\n", spec.id, spec.summary, spec.description);
  workload += fmt::format("\nShapes to optimize for (size '{}', the one the search times):", w.size);
  for (const auto& [k, v] : w.symbols)
    if (k != "elem") workload += fmt::format(" {}={}", k, v);
  workload += "\n\nInputs (in ob_call order):\n";
  for (const auto& t : w.inputs) workload += fmt::format("  {} {} {}\n", t.name, dtype_name(t.dtype), shape_text(t.shape));
  workload += "Outputs:\n";
  for (const auto& t : w.outputs) workload += fmt::format("  {} {} {}\n", t.name, dtype_name(t.dtype), shape_text(t.shape));
  workload += fmt::format("\nAn output element passes when |got - expected| <= {:g} + {:g}·|expected|. Work: {:.3g} FLOP, at least {:.3g} bytes moved.\n",
                          w.tolerance.atol, w.tolerance.rtol, w.useful_flops, w.min_bytes);
  workload += o.target == "cuda"
                  ? "Speed is measured against the baseline (cuBLAS plus fused CUDA kernels, as XLA composes them) on the same inputs, "
                    "paired, by CUDA events with L2 flushed before every call.\n"
                  : "Speed is measured against the baseline (vendor BLAS/oneDNN plus fused loops) on the same inputs, paired.\n";
  section(out, "Workload", workload);

  section(out, "Reference implementation", "```cpp\n" + read_file(spec.implementation("reference")) + "```\n");
  section(out, "Kernel interface (include/opbench/kernel.h)",
          "```c\n" + read_file(source_root() / "include" / "opbench" / "kernel.h") + "```\n");

  if (o.context) {
    const auto dir = o.context_dir.empty() ? default_context_dir() : o.context_dir;
    for (const char* name : kContextFiles)
      if (std::filesystem::exists(dir / name)) section(out, std::string("Context: ") + name, read_file(dir / name));
    // The plan phase chooses from a thinned menu; the implement phase gets all of it, since plans cite its ids.
    if (o.phase != "translate" && std::filesystem::exists(dir / kMenuFile))
      section(out, "Context: optimization menu",
              drop_menu_entries(read_file(dir / kMenuFile), o.phase == "plan" ? o.menu_dropout : 0.0, o.seed));
  }

  if (!o.parent_source.empty()) section(out, "Parent kernel", "```cpp\n" + o.parent_source + (o.parent_source.back() == '\n' ? "" : "\n") + "```\n");
  if (o.phase == "implement") section(out, "Plan", o.plan);
  if (!o.parent_measurements.is_null()) section(out, "Measurements of the parent", measurements_text(o.parent_measurements));
  if (!o.tried_plans.empty()) {
    std::string tried = "These plans were already implemented on this parent in earlier iterations; propose different ones.\n\n";
    for (const auto& plan : o.tried_plans) tried += "- " + utf8_truncate(plan.substr(0, plan.find('\n')), 300, "...") + "\n";
    section(out, "Plans already tried on this parent", tried);
  }
  if (!o.feedback.is_null())
    section(out, o.phase == "plan" ? "Measurements of the parent" : "Feedback on the previous attempt (fix this)", measurements_text(o.feedback));
  section(out, "Answer format", format_text(o));
  return out;
}

}  // namespace opbench
