// Prompt assembly for the agent loop: the task of the phase, the workload (spec, shapes, tolerance,
// reference source), the kernel interface and, unless the ablation `--context none` asks otherwise,
// the curated hardware context of context/<target>/ (machine model, ABI rules, coding rules,
// intrinsics, examples, optimization menu). `opbench prompt` prints exactly what proposers receive.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/result.h"
#include "workload/spec.h"

namespace opbench {

struct PromptOptions {
  std::string phase = "translate";  // translate | plan | implement
  bool context = true;              // false: --context none, the ablation without curated documents
  std::string parent_source;        // plan, implement
  std::string plan;                 // implement
  nlohmann::json feedback;          // null, or feedback_from_result(...) of a failed attempt (repairs, opbench prompt --feedback)
  nlohmann::json parent_measurements;  // null, or feedback_from_result(...) of the parent (plan, implement)
  std::vector<std::string> tried_plans;  // plans already implemented on this parent (plan): not to be proposed again
  int candidates = 1;               // plans wanted (plan phase)
  double menu_dropout = 0;          // share of optimization-menu entries left out (plan phase)
  uint64_t seed = 0;                // which entries the dropout removes
  std::string target = "cpu";         // what the kernel is written for (the answer format names its language)
  std::filesystem::path context_dir;  // default: <source>/context/cpu; the target's own: context_dir_for(target)
};

// Throws UsageError for an unknown phase or a phase missing what it needs (a parent for plan and
// implement, a plan for implement).
std::string assemble_prompt(const WorkloadSpec& spec, const ResolvedWorkload& workload, const PromptOptions& options);

// What a proposer is told about an evaluated kernel: status, message, speedup and its interval,
// timings, achieved GFLOP/s and GB/s, the share of the roofline and the impossible-time floor, and the compiler's or the kernel's
// output when it failed (absolute local paths cut to file names: this text goes to remote APIs).
// The search and `opbench prompt --feedback` both use it, so they show the same text.
nlohmann::json feedback_from_result(const Result& result);

// `text` with every absolute path (/home/x/build/cand.cpp) cut to its last component (cand.cpp).
std::string strip_local_paths(const std::string& text);

// The optimization menu with a share of its entries ("## Mxx: ..." sections) dropped at random.
std::string drop_menu_entries(const std::string& menu, double dropout, uint64_t seed);

std::filesystem::path default_context_dir();
// <source>/context/<the target's context folder> (context/cpu, context/cuda).
std::filesystem::path context_dir_for(const std::string& target);

}  // namespace opbench
