// Proposers: whatever writes candidate kernels for the search. A proposer gets one request (the
// workload, the phase, the assembled prompt, the parent's source, feedback on the parent) and answers
// with candidate sources or plans. Built in: `cmd:PROGRAM ARGS` (any program speaking the JSON
// protocol of docs/proposer-protocol.md on stdin/stdout), `openai:MODEL` (an OpenAI-compatible
// chat-completions endpoint) and `tune` (the parameter tuner, moving a parent's declared parameters).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
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

// A failure of one part of a call (one completion of n, an answer without a code block) or of the
// whole call. `kind` is one of the words of docs/proposer-protocol.md ("timeout", "exit", "protocol",
// "transport", "http", "malformed_answer", "answer_too_large", "no_code_block", "truncated",
// "no_plan", "source_too_large"); the search counts failures by kind.
struct ProposerFailure {
  std::string kind;
  std::string message;
};

// Thrown by Proposer::propose when the call produced nothing usable at all.
struct ProposerError : std::runtime_error {
  ProposerError(std::string kind_, const std::string& what) : std::runtime_error(what), kind(std::move(kind_)) {}
  std::string kind;
};

struct ProposalResponse {
  std::vector<std::string> sources;  // translate, implement
  std::vector<std::string> plans;    // plan; each starts with its title line when the answer gave one
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::string note;                  // anything the proposer wants logged
  std::vector<ProposerFailure> failures;  // what was lost inside this call (counted, logged)

  nlohmann::json to_json() const;
  // Validates the schema name and version; throws std::invalid_argument with what is wrong.
  static ProposalResponse from_json(const nlohmann::json& j);
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  // Throws ProposerError (or std::runtime_error, counted as kind "error") when the proposer fails;
  // the search records it, counts it by kind and goes on.
  virtual ProposalResponse propose(const ProposalRequest& request) = 0;
  // False for proposers that cannot write a kernel from the reference (tune): the search then
  // starts from an existing kernel (--start, or the workload's expert).
  virtual bool can_translate() const { return true; }
};

// "cmd:PROGRAM ARGS...", "openai:MODEL" or "tune". Throws UsageError for anything else.
std::unique_ptr<Proposer> make_proposer(const std::string& spec);

// SIGINT and SIGTERM end the process group of the cmd: agent running now (it and whatever it
// started) before opbench itself ends with the same signal. The search installs it.
void end_agent_on_signals();

}  // namespace opbench
