// Proposers: whatever writes candidate kernels for the search. A proposer gets one request (the
// workload, the phase, the assembled prompt, the parent's source, feedback on the parent) and answers
// with candidate sources or plans. Built in: `cmd:PROGRAM ARGS` (any program speaking the JSON
// protocol of docs/proposer-protocol.md on stdin/stdout), `openai:MODEL` (an OpenAI-compatible
// chat-completions endpoint) and `tune` (the parameter tuner, moving a parent's declared parameters).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace opbench {

inline constexpr const char* kProposerRequestSchema = "opbench.proposer.request";
inline constexpr const char* kProposerResponseSchema = "opbench.proposer.response";
inline constexpr int kProposerProtocolVersion = 1;

// The phases of the search: translate (reference -> a first correct kernel), plan (ideas for making
// a parent faster, in words) and implement (a plan applied to the parent). A failed candidate is
// re-prompted in the phase that made it, with its errors as feedback.
struct ProposalRequest {
  std::string workload;
  std::string phase;            // translate | plan | implement
  std::string prompt;           // the assembled prompt (opbench prompt prints the same text)
  std::string parent_source;    // empty in translate
  std::string plan;             // implement: the plan to apply
  nlohmann::json feedback;      // null, or {status, message, speedup, median_ms, baseline_median_ms, errors}
  int candidates = 1;           // how many sources (translate, implement) or plans (plan) are wanted
  int iteration = 0;
  uint64_t seed = 0;            // deterministic per request: proposers may use it for sampling

  nlohmann::json to_json() const;
  static ProposalRequest from_json(const nlohmann::json& j);  // throws std::invalid_argument
};

struct ProposalResponse {
  std::vector<std::string> sources;  // translate, implement
  std::vector<std::string> plans;    // plan
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::string note;                  // anything the proposer wants logged

  nlohmann::json to_json() const;
  // Validates the schema name and version; throws std::invalid_argument with what is wrong.
  static ProposalResponse from_json(const nlohmann::json& j);
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  // Throws std::runtime_error when the proposer fails (the search logs it and goes on).
  virtual ProposalResponse propose(const ProposalRequest& request) = 0;
  // False for proposers that cannot write a kernel from the reference (tune): the search then
  // starts from an existing kernel (--start, or the workload's expert).
  virtual bool can_translate() const { return true; }
};

// "cmd:PROGRAM ARGS...", "openai:MODEL" or "tune". Throws UsageError for anything else.
std::unique_ptr<Proposer> make_proposer(const std::string& spec);

}  // namespace opbench
