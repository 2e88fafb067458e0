// Prompt assembly for the agent loop: the task of the phase, the workload (spec, shapes, tolerance,
// reference source), the kernel interface and, unless the ablation `--context none` asks otherwise,
// the curated hardware context of context/<target>/ (machine model, ABI rules, coding rules,
// intrinsics, examples, optimization menu). `opbench prompt` prints exactly what proposers receive.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/result.h"
#include "workload/spec.h"

namespace opbench {

struct PromptOptions {
  std::string phase = "translate";  // translate | plan | implement
  bool context = true;              // false: --context none, the ablation without curated documents
  std::string parent_source;        // plan, implement
  std::string plan;                 // implement
  nlohmann::json feedback;          // null, or feedback_from_result(...)
  int candidates = 1;               // plans wanted (plan phase)
  double menu_dropout = 0;          // share of optimization-menu entries left out (plan phase)
  uint64_t seed = 0;                // which entries the dropout removes
  std::filesystem::path context_dir;  // default: <source>/context/cpu
};

// Throws UsageError for an unknown phase or a phase missing what it needs (a parent for plan and
// implement, a plan for implement).
std::string assemble_prompt(const WorkloadSpec& spec, const ResolvedWorkload& workload, const PromptOptions& options);

// What a proposer is told about an evaluated kernel: status, message, speedup, timings, and the
// compiler's or the kernel's output when it failed.
nlohmann::json feedback_from_result(const Result& result);

// The optimization menu with a share of its entries ("## Mxx: ..." sections) dropped at random.
std::string drop_menu_entries(const std::string& menu, double dropout, uint64_t seed);

std::filesystem::path default_context_dir();

}  // namespace opbench
