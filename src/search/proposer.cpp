#include "search/proposer.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_io.h"
#include "core/process.h"
#include "core/utf8.h"
#include "search/openai_proposer.h"
#include "search/params.h"

namespace opbench {
namespace {

using nlohmann::json;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

// `cmd:PROGRAM ARGS`: one process per request, the request on stdin, the response on stdout.
class CommandProposer final : public Proposer {
 public:
  explicit CommandProposer(std::string command) : command_(std::move(command)) {
    std::istringstream words(command_);
    for (std::string w; words >> w;) argv_.push_back(w);
    if (argv_.empty()) throw UsageError("--proposer cmd: needs a program, e.g. cmd:./my-agent --model x");
  }
  std::string name() const override { return "cmd:" + command_; }

  ProposalResponse propose(const ProposalRequest& request) override {
    double timeout_s = 1800;
    if (const char* e = std::getenv("OPBENCH_PROPOSER_TIMEOUT_S"); e && *e) timeout_s = std::atof(e);
    ProcessIo io = run_process_io(argv_, dump_json(request.to_json(), -1) + "\n",
                                  std::chrono::milliseconds(int64_t(timeout_s * 1000)));
    // The agent's output is not trusted to be UTF-8: repaired before it goes anywhere.
    auto tail = [](const std::string& s) {
      const std::string clean = utf8_sanitize(s);
      if (clean.size() <= 600) return clean;
      size_t from = clean.size() - 600;
      while (from < clean.size() && (static_cast<unsigned char>(clean[from]) & 0xC0) == 0x80) ++from;  // a character boundary
      return "..." + clean.substr(from);
    };
    if (io.timed_out) throw ProposerError("timeout", fmt::format("the proposer did not answer within {:.0f} s", timeout_s));
    if (!io.ok())
      throw ProposerError("exit", fmt::format("the proposer {} (stderr: {})",
                                              io.signal ? fmt::format("died of signal {}", io.signal) : fmt::format("exited with {}", io.exit_code),
                                              tail(io.err)));
    json answer = json::parse(utf8_sanitize(io.out), nullptr, false);
    if (answer.is_discarded()) throw ProposerError("protocol", "the proposer's stdout is not one JSON document: " + tail(io.out));
    try {
      return ProposalResponse::from_json(answer);
    } catch (const std::exception& e) {
      throw ProposerError("protocol", std::string("the proposer's answer does not follow the protocol: ") + e.what());
    }
  }

 private:
  std::string command_;
  std::vector<std::string> argv_;
};

// `tune`: the parameter tuner as a proposer. Plans are neighbouring points of the parent's declared
// parameter space (one parameter moved one step); implementing a plan rewrites the parent's
// #define defaults, so every point is a distinct source.
class TuneProposer final : public Proposer {
 public:
  std::string name() const override { return "tune"; }
  bool can_translate() const override { return false; }

  ProposalResponse propose(const ProposalRequest& request) override {
    ProposalResponse out;
    if (request.phase == "translate") throw std::runtime_error("the tune proposer cannot write a kernel from the reference");
    const auto params = parse_tunable_params(request.parent_source);
    if (params.empty()) {
      out.note = "the parent declares no // opbench:param lines: nothing to tune";
      return out;
    }
    if (request.phase == "plan") {
      const ParamPoint current = default_point(params);
      std::vector<ParamPoint> singles, doubles;  // one parameter moved one step, or two steps
      for (const auto& p : params) {
        const long i = long(std::find(p.values.begin(), p.values.end(), current.at(p.name)) - p.values.begin());
        for (long step : {-1L, 1L, -2L, 2L}) {
          const long j = i + step;
          if (j < 0 || j >= long(p.values.size())) continue;
          ParamPoint next = current;
          next[p.name] = p.values[size_t(j)];
          (std::abs(step) == 1 ? singles : doubles).push_back(next);
        }
      }
      // Single steps first, in an order the request's seed shuffles (different parents and
      // iterations explore different directions); double steps after them.
      std::mt19937_64 rng(request.seed);
      std::shuffle(singles.begin(), singles.end(), rng);
      std::vector<ParamPoint> moves = singles;
      moves.insert(moves.end(), doubles.begin(), doubles.end());
      for (const auto& m : moves) {
        if (int(out.plans.size()) >= request.candidates) break;
        out.plans.push_back(describe_point(m));
      }
      return out;
    }
    // implement: "NAME=VALUE ..." applied to the #define lines.
    std::istringstream words(request.plan);
    std::string source = request.parent_source;
    for (std::string word; words >> word;) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      source = with_default(source, word.substr(0, eq), word.substr(eq + 1));
    }
    out.sources.push_back(source);
    return out;
  }

 private:
  static std::string with_default(const std::string& source, const std::string& name, const std::string& value) {
    std::istringstream lines(source);
    std::string result;
    for (std::string line; std::getline(lines, line);) {
      const size_t start = line.find_first_not_of(" \t");
      const std::string prefix = "#define " + name + " ";
      if (start != std::string::npos && line.compare(start, prefix.size(), prefix) == 0) line = line.substr(0, start) + prefix + value;
      result += line + "\n";
    }
    return result;
  }
};

}  // namespace

json ProposalRequest::to_json() const {
  return {{"schema", kProposerRequestSchema},
          {"version", kProposerProtocolVersion},
          {"workload", workload},
          {"phase", phase},
          {"prompt", prompt},
          {"parent_source", parent_source.empty() ? json(nullptr) : json(parent_source)},
          {"plan", plan.empty() ? json(nullptr) : json(plan)},
          {"feedback", feedback},
          {"candidates", candidates},
          {"iteration", iteration},
          {"seed", seed}};
}

ProposalRequest ProposalRequest::from_json(const json& j) {
  require(j.is_object(), "a request is a JSON object");
  require(j.value("schema", "") == kProposerRequestSchema, fmt::format("schema must be \"{}\"", kProposerRequestSchema));
  require(j.value("version", 0) == kProposerProtocolVersion, fmt::format("version must be {}", kProposerProtocolVersion));
  ProposalRequest r;
  r.workload = j.at("workload").get<std::string>();
  r.phase = j.at("phase").get<std::string>();
  r.prompt = j.at("prompt").get<std::string>();
  if (j.contains("parent_source") && j["parent_source"].is_string()) r.parent_source = j["parent_source"].get<std::string>();
  if (j.contains("plan") && j["plan"].is_string()) r.plan = j["plan"].get<std::string>();
  r.feedback = j.value("feedback", json());
  r.candidates = j.value("candidates", 1);
  r.iteration = j.value("iteration", 0);
  r.seed = j.value("seed", uint64_t(0));
  return r;
}

json ProposalResponse::to_json() const {
  json failures_json = json::array();
  for (const auto& f : failures) failures_json.push_back({{"kind", f.kind}, {"message", f.message}});
  json candidates = json::array();
  for (const auto& s : sources) candidates.push_back({{"source", s}});
  return {{"schema", kProposerResponseSchema},
          {"version", kProposerProtocolVersion},
          {"candidates", candidates},
          {"plans", plans},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}},
          {"note", note},
          {"failures", failures_json}};
}

ProposalResponse ProposalResponse::from_json(const json& j) {
  require(j.is_object(), "the response must be a JSON object");
  require(j.value("schema", "") == kProposerResponseSchema, fmt::format("\"schema\" must be \"{}\"", kProposerResponseSchema));
  require(j.value("version", 0) == kProposerProtocolVersion, fmt::format("\"version\" must be {}", kProposerProtocolVersion));
  ProposalResponse r;
  if (j.contains("candidates")) {
    require(j["candidates"].is_array(), "\"candidates\" must be an array");
    for (const auto& c : j["candidates"]) {
      require(c.is_object() && c.contains("source") && c["source"].is_string(), "every candidate needs a string \"source\"");
      r.sources.push_back(utf8_sanitize(c["source"].get<std::string>()));
    }
  }
  if (j.contains("plans")) {
    require(j["plans"].is_array(), "\"plans\" must be an array of strings");
    for (const auto& p : j["plans"]) {
      require(p.is_string(), "\"plans\" must be an array of strings");
      r.plans.push_back(utf8_sanitize(p.get<std::string>()));
    }
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    r.prompt_tokens = j["usage"].value("prompt_tokens", int64_t(0));
    r.completion_tokens = j["usage"].value("completion_tokens", int64_t(0));
  }
  r.note = utf8_sanitize(j.value("note", std::string()));
  if (j.contains("failures") && j["failures"].is_array())
    for (const auto& f : j["failures"])
      if (f.is_object()) r.failures.push_back({utf8_sanitize(f.value("kind", "error")), utf8_sanitize(f.value("message", ""))});
  return r;
}

std::unique_ptr<Proposer> make_proposer(const std::string& spec) {
  if (spec == "tune") return std::make_unique<TuneProposer>();
  if (spec.rfind("cmd:", 0) == 0) return std::make_unique<CommandProposer>(spec.substr(4));
  if (spec.rfind("openai:", 0) == 0 && spec.size() > 7) return make_openai_proposer(spec.substr(7));
  throw UsageError(fmt::format("unknown proposer '{}' (use cmd:PROGRAM [ARGS], openai:MODEL or tune)", spec));
}

}  // namespace opbench

namespace opbench {
namespace {

void end_agent_and_self(int sig) {
  // Only async-signal-safe calls: kill, signal, raise.
  if (const int group = running_io_child_group(); group > 0) {
    kill(-group, SIGTERM);
    kill(-group, SIGKILL);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void end_agent_on_signals() {
  std::signal(SIGINT, end_agent_and_self);
  std::signal(SIGTERM, end_agent_and_self);
}

}  // namespace opbench
