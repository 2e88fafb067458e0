#include "search/prompt.h"

#include <random>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"

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
  return "Answer with one complete C++ source file (it includes <opbench/kernel.h>, defines OB_DEFINE_ABI_VERSION() "
         "and ob_run) in a single ```cpp fenced code block. Nothing after the block is read.";
}

void section(std::string& out, const std::string& title, const std::string& body) {
  out += "# " + title + "\n\n" + body;
  if (!body.empty() && body.back() != '\n') out += "\n";
  out += "\n";
}

}  // namespace

std::filesystem::path default_context_dir() { return std::filesystem::path(OPBENCH_SOURCE_DIR) / "context" / "cpu"; }

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

nlohmann::json feedback_from_result(const Result& r) {
  nlohmann::json f = {{"status", std::string(status_name(r.status))}, {"message", r.message}};
  if (r.speedup) f["speedup"] = r.speedup->vs_baseline;
  if (r.timing) {
    f["median_ms"] = r.timing->per_call_ms.median;
    f["baseline_median_ms"] = r.timing->baseline_per_call_ms.median;
  }
  if (r.work.gflops_per_s > 0) f["gflops_per_s"] = r.work.gflops_per_s;
  std::string errors;
  if (r.status == Status::compile_error) errors = r.build_log;
  else if (r.status != Status::correct) errors = r.correctness.reason;
  if (!r.kernel_output.empty() && r.status != Status::correct) errors += "\nkernel output:\n" + r.kernel_output;
  if (errors.size() > 6000) errors = errors.substr(0, 6000) + "\n...(truncated)";
  f["errors"] = errors;
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
  workload += fmt::format("\nShapes at size '{}':", w.size);
  for (const auto& [k, v] : w.symbols)
    if (k != "elem") workload += fmt::format(" {}={}", k, v);
  workload += "\n\nInputs (in ob_call order):\n";
  for (const auto& t : w.inputs) workload += fmt::format("  {} {} {}\n", t.name, dtype_name(t.dtype), shape_text(t.shape));
  workload += "Outputs:\n";
  for (const auto& t : w.outputs) workload += fmt::format("  {} {} {}\n", t.name, dtype_name(t.dtype), shape_text(t.shape));
  workload += fmt::format("\nAn output element passes when |got - expected| <= {:g} + {:g}·|expected|. Work: {:.3g} FLOP, at least {:.3g} bytes moved.\n",
                          w.tolerance.atol, w.tolerance.rtol, w.useful_flops, w.min_bytes);
  workload += "Speed is measured against the baseline (vendor BLAS/oneDNN plus fused loops) on the same inputs, paired.\n";
  section(out, "Workload", workload);

  section(out, "Reference implementation", "```cpp\n" + read_file(spec.implementation("reference")) + "```\n");
  section(out, "Kernel interface (include/opbench/kernel.h)",
          "```c\n" + read_file(std::filesystem::path(OPBENCH_SOURCE_DIR) / "include" / "opbench" / "kernel.h") + "```\n");

  if (o.context) {
    const auto dir = o.context_dir.empty() ? default_context_dir() : o.context_dir;
    for (const char* name : kContextFiles)
      if (std::filesystem::exists(dir / name)) section(out, std::string("Context: ") + name, read_file(dir / name));
    if (o.phase == "plan" && std::filesystem::exists(dir / kMenuFile))
      section(out, "Context: optimization menu", drop_menu_entries(read_file(dir / kMenuFile), o.menu_dropout, o.seed));
  }

  if (!o.parent_source.empty()) section(out, "Parent kernel", "```cpp\n" + o.parent_source + (o.parent_source.back() == '\n' ? "" : "\n") + "```\n");
  if (o.phase == "implement") section(out, "Plan", o.plan);
  if (!o.feedback.is_null()) {
    std::string f = fmt::format("status: {}\n", o.feedback.value("status", "?"));
    if (o.feedback.contains("speedup")) f += fmt::format("speedup over the baseline: {:.3f}x\n", o.feedback["speedup"].get<double>());
    if (o.feedback.contains("median_ms"))
      f += fmt::format("time per call: {:.4f} ms (baseline {:.4f} ms)\n", o.feedback["median_ms"].get<double>(),
                       o.feedback.value("baseline_median_ms", 0.0));
    if (!o.feedback.value("message", std::string()).empty()) f += "message: " + o.feedback["message"].get<std::string>() + "\n";
    if (!o.feedback.value("errors", std::string()).empty()) f += "errors:\n" + o.feedback["errors"].get<std::string>() + "\n";
    section(out, o.phase == "plan" ? "Measurements of the parent" : "Feedback on the previous attempt (fix this)", f);
  }
  section(out, "Answer format", format_text(o));
  return out;
}

}  // namespace opbench
