#include "search/beam_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "core/json_io.h"
#include "core/hash.h"
#include "search/prompt.h"

namespace opbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// One evaluated candidate, as the search remembers it.
struct Candidate {
  std::string key;      // sha256 of the normalized source
  std::string file;     // where its source is kept
  std::string status;
  std::string phase;
  std::string parent;   // key of the parent, empty for translations and starts
  int iteration = 0;
  double speedup = 0, median_ms = 0, baseline_ms = 0, build_s = 0, eval_s = 0;
  bool built = false;
  json feedback;

  bool correct() const { return status == "correct"; }
  json to_json() const {
    return {{"key", key},       {"file", file},         {"status", status},     {"phase", phase},   {"parent", parent},
            {"iteration", iteration}, {"speedup", speedup}, {"median_ms", median_ms}, {"baseline_ms", baseline_ms},
            {"build_s", build_s}, {"eval_s", eval_s},   {"built", built},       {"feedback", feedback}};
  }
  static Candidate from_json(const json& j) {
    Candidate c;
    c.key = j.at("key");
    c.file = j.at("file");
    c.status = j.at("status");
    c.phase = j.value("phase", "");
    c.parent = j.value("parent", "");
    c.iteration = j.value("iteration", 0);
    c.speedup = j.value("speedup", 0.0);
    c.median_ms = j.value("median_ms", 0.0);
    c.baseline_ms = j.value("baseline_ms", 0.0);
    c.build_s = j.value("build_s", 0.0);
    c.eval_s = j.value("eval_s", 0.0);
    c.built = j.value("built", false);
    c.feedback = j.value("feedback", json());
    return c;
  }
};

struct BudgetReached {};

// The plan of a repair request: the parent is the failed candidate, the feedback its errors.
constexpr const char* kRepairPlan =
    "Repair: the kernel below failed (see the feedback). Make it correct, keeping whatever makes it fast.";

// The persistent state of one workload's search and the operations on it.
class Search {
 public:
  Search(const WorkloadSpec& spec, Proposer& proposer, Target& target, const SearchOptions& options,
         const std::function<void(const std::string&)>& progress)
      : spec_(spec), proposer_(proposer), target_(target), o_(options), progress_(progress),
        dir_(options.out_dir / spec.id), workload_(resolve_workload(spec, options.eval.size, options.eval.overrides, target.float_dtype())) {
    std::filesystem::create_directories(dir_ / "candidates");
    load();
    summary_.workload = spec.id;
    summary_.proposer = proposer.name();
  }

  SearchSummary run();

 private:
  void say(const std::string& s) {
    if (progress_) progress_(fmt::format("[{}] {}", spec_.id, s));
  }
  void load();
  void save();
  void log(const json& event);
  ProposalResponse ask(ProposalRequest request);
  // Evaluates a source unless an equal one was; nullptr for a duplicate within this search step.
  const Candidate* evaluate_source(const std::string& source, const std::string& phase, const std::string& parent, int iteration,
                                   bool* duplicate);
  const Candidate& evaluate_file(const std::filesystem::path& file, const std::string& phase, int iteration);
  std::vector<const Candidate*> translate();
  const Candidate* repaired(const Candidate* c, int iteration, uint64_t seed);
  // Implements and evaluates; a failure is re-prompted with its errors up to `repairs` times.
  void implement(const Candidate& parent, const std::string& plan, int iteration, std::vector<const Candidate*>* children);
  std::string prompt(const std::string& phase, const std::string& parent_source, const std::string& plan, const json& feedback,
                     int candidates, uint64_t seed);
  SearchSummary summarize_state();

  const WorkloadSpec& spec_;
  Proposer& proposer_;
  Target& target_;
  SearchOptions o_;
  std::function<void(const std::string&)> progress_;
  std::filesystem::path dir_;
  ResolvedWorkload workload_;
  std::map<std::string, Candidate> evaluated_;  // by key
  json responses_ = json::object();             // proposer answers by request hash
  json expert_;                                 // the expert's evaluation, when made
  SearchSummary summary_;
  size_t new_evaluations_ = 0;
};

void Search::load() {
  const auto path = dir_ / "state.json";
  if (!std::filesystem::exists(path)) return;
  json state = json::parse(read_file(path), nullptr, false);
  if (state.is_discarded() || state.value("schema", "") != "opbench.search.state")
    throw UsageError(fmt::format("{} is not a search state; use another --out", path.string()));
  if (state.value("proposer", "") != proposer_.name())
    throw UsageError(fmt::format("{} belongs to a search with proposer {}; use another --out", path.string(), state.value("proposer", "?")));
  if (!o_.eval.isa.empty() && state.value("isa", "x86-64-v3") != o_.eval.isa)  // speedups at two instruction-set levels never mix
    throw UsageError(fmt::format("{} was searched at --isa {}; use that level or another --out", path.string(), state.value("isa", "x86-64-v3")));
  for (const auto& c : state.at("evaluated")) {
    Candidate cand = Candidate::from_json(c);
    evaluated_[cand.key] = cand;
  }
  responses_ = state.value("responses", json::object());
  expert_ = state.value("expert", json());
  say(fmt::format("resuming: {} candidates evaluated, {} proposer answers kept", evaluated_.size(), responses_.size()));
}

void Search::save() {
  json list = json::array();
  for (const auto& [key, c] : evaluated_) list.push_back(c.to_json());
  json state = {{"schema", "opbench.search.state"}, {"version", 1},          {"workload", spec_.id},
                {"proposer", proposer_.name()},      {"evaluated", list},    {"responses", responses_},
                {"expert", expert_},                 {"isa", o_.eval.isa}};
  write_text_atomic(dir_ / "state.json", state.dump(1));
}

void Search::log(const json& event) {
  std::ofstream out(dir_ / "log.jsonl", std::ios::app);
  out << event.dump() << "\n";
}

std::string Search::prompt(const std::string& phase, const std::string& parent_source, const std::string& plan, const json& feedback,
                           int candidates, uint64_t seed) {
  PromptOptions p;
  p.phase = phase;
  p.context = o_.context;
  p.parent_source = parent_source;
  p.plan = plan;
  p.feedback = feedback;
  p.candidates = candidates;
  p.menu_dropout = o_.menu_dropout;
  p.seed = seed;
  return assemble_prompt(spec_, workload_, p);
}

ProposalResponse Search::ask(ProposalRequest request) {
  request.workload = spec_.id;
  // The request's identity is everything but nothing random: the same search asks the same things.
  const std::string key = sha256_hex(request.to_json().dump());
  if (responses_.contains(key)) return ProposalResponse::from_json(responses_[key]);
  const auto start = Clock::now();
  ProposalResponse response;
  try {
    response = proposer_.propose(request);
  } catch (const std::exception& e) {
    ++summary_.proposer_failures;
    log({{"event", "proposer_failed"}, {"phase", request.phase}, {"iteration", request.iteration}, {"error", e.what()}});
    say(fmt::format("the proposer failed ({}): {}", request.phase, e.what()));
    return {};
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  json kept = response.to_json();
  kept["seconds"] = seconds;
  responses_[key] = kept;
  save();
  return response;
}

const Candidate& Search::evaluate_file(const std::filesystem::path& file, const std::string& phase, int iteration) {
  bool duplicate = false;  // a start kernel evaluated before is simply reused
  return *evaluate_source(read_file(file), phase, "", iteration, &duplicate);
}

const Candidate* Search::evaluate_source(const std::string& source, const std::string& phase, const std::string& parent, int iteration,
                                         bool* duplicate) {
  const std::string key = sha256_hex(normalize_source(source));
  *duplicate = false;
  if (auto it = evaluated_.find(key); it != evaluated_.end()) {
    *duplicate = true;
    return &it->second;
  }
  if (o_.max_evals > 0 && int(new_evaluations_) >= o_.max_evals) throw BudgetReached{};
  const auto file = dir_ / "candidates" / (key.substr(0, 16) + ".cpp");
  write_text_atomic(file, source);
  say(fmt::format("evaluating {} ({}, iteration {})", file.filename().string(), phase, iteration));
  Result r = evaluate(spec_, Implementation{"candidate", file, {}}, target_, o_.eval);
  write_text_atomic(dir_ / "candidates" / (key.substr(0, 16) + ".json"), to_json(r).dump(2));
  Candidate c;
  c.key = key;
  c.file = file.string();
  c.status = std::string(status_name(r.status));
  c.phase = phase;
  c.parent = parent;
  c.iteration = iteration;
  c.built = r.status != Status::compile_error;
  c.build_s = r.build_s;
  c.eval_s = r.eval_s;
  if (r.speedup) c.speedup = r.speedup->vs_baseline;
  if (r.timing) {
    c.median_ms = r.timing->per_call_ms.median;
    c.baseline_ms = r.timing->baseline_per_call_ms.median;
  }
  c.feedback = feedback_from_result(r);
  ++new_evaluations_;
  log({{"event", "evaluated"}, {"candidate", c.file}, {"phase", phase}, {"iteration", iteration}, {"status", c.status},
       {"speedup", c.speedup}, {"message", r.message}});
  say(fmt::format("  -> {}{}", c.status, c.correct() ? fmt::format(" {:.3f}x", c.speedup) : ": " + r.message.substr(0, 120)));
  auto [it, inserted] = evaluated_.emplace(key, c);
  save();
  return &it->second;
}

std::vector<const Candidate*> Search::translate() {
  std::vector<const Candidate*> correct;
  // A start kernel (given, or the expert for proposers that cannot translate) replaces translation.
  std::filesystem::path start = o_.start;
  if (start.empty() && !proposer_.can_translate()) {
    if (!spec_.has_implementation("expert"))
      throw UsageError(fmt::format("{} cannot write a first kernel and {} has no expert: give --start FILE", proposer_.name(), spec_.id));
    start = spec_.implementation("expert");
  }
  if (!start.empty()) {
    const Candidate& c = evaluate_file(start, "start", 0);
    if (c.correct()) correct.push_back(&c);
    else say(fmt::format("the start kernel is {}: {}", c.status, c.feedback.value("message", "")));
    return correct;
  }
  ProposalRequest request;
  request.phase = "translate";
  request.candidates = o_.beam_width;
  request.seed = o_.seed;
  request.prompt = prompt("translate", "", "", json(), 1, o_.seed);
  ProposalResponse answer = ask(request);
  for (size_t i = 0; i < answer.sources.size(); ++i) {
    bool duplicate = false;
    const Candidate* c = evaluate_source(answer.sources[i], "translate", "", 0, &duplicate);
    if (duplicate) {
      ++summary_.duplicates;
      if (c->correct() && std::find(correct.begin(), correct.end(), c) == correct.end()) correct.push_back(c);
      continue;
    }
    c = repaired(c, 0, o_.seed + 1000 * (i + 1));
    if (c->correct() && std::find(correct.begin(), correct.end(), c) == correct.end()) correct.push_back(c);
  }
  return correct;
}

const Candidate* Search::repaired(const Candidate* c, int iteration, uint64_t seed) {
  // A failed candidate gets its errors back, `repairs` times, as an implement request whose plan is
  // the repair; the last attempt stands (a duplicate ends the attempts).
  for (int repair = 0; repair < o_.repairs && !c->correct(); ++repair) {
    ProposalRequest fix;
    fix.phase = "implement";
    fix.parent_source = read_file(c->file);
    fix.plan = kRepairPlan;
    fix.feedback = c->feedback;
    fix.candidates = 1;
    fix.iteration = iteration;
    fix.seed = seed + uint64_t(repair);
    fix.prompt = prompt("implement", fix.parent_source, fix.plan, c->feedback, 1, fix.seed);
    ProposalResponse fixed = ask(fix);
    if (fixed.sources.empty()) break;
    bool duplicate = false;
    const Candidate* f = evaluate_source(fixed.sources[0], "repair", c->key, iteration, &duplicate);
    if (duplicate) {
      ++summary_.duplicates;
      break;
    }
    c = f;
  }
  return c;
}

void Search::implement(const Candidate& parent, const std::string& plan, int iteration, std::vector<const Candidate*>* children) {
  const std::string parent_source = read_file(parent.file);
  ProposalRequest request;
  request.phase = "implement";
  request.parent_source = parent_source;
  request.plan = plan;
  request.candidates = o_.impls_per_plan;
  request.iteration = iteration;
  request.seed = o_.seed + std::hash<std::string>{}(parent.key + plan) % 1000003 + uint64_t(iteration);
  request.prompt = prompt("implement", parent_source, plan, json(), o_.impls_per_plan, request.seed);
  ProposalResponse answer = ask(request);
  for (const std::string& source : answer.sources) {
    bool duplicate = false;
    const Candidate* c = evaluate_source(source, "implement", parent.key, iteration, &duplicate);
    if (duplicate) {
      ++summary_.duplicates;
      say("  duplicate of an evaluated candidate: skipped");
      continue;
    }
    c = repaired(c, iteration, request.seed + 7);
    if (c->correct()) children->push_back(c);
  }
}

SearchSummary Search::run() {
  std::vector<const Candidate*> beam;
  auto by_speed = [](const Candidate* a, const Candidate* b) { return a->speedup != b->speedup ? a->speedup > b->speedup : a->key < b->key; };
  try {
    if (o_.compare_expert && spec_.has_implementation("expert") && expert_.is_null()) {
      say("evaluating the expert (for the share-of-expert figure)");
      Result r = evaluate(spec_, builtin_implementation(spec_, "expert"), target_, o_.eval);
      expert_ = {{"status", std::string(status_name(r.status))}, {"speedup", r.speedup ? r.speedup->vs_baseline : 0.0},
                 {"eval_s", r.eval_s}};
      save();
    }
    beam = translate();
    std::sort(beam.begin(), beam.end(), by_speed);
    if (beam.size() > size_t(o_.beam_width)) beam.resize(size_t(o_.beam_width));
    log({{"event", "translated"}, {"correct", beam.size()}});
    if (beam.empty()) {
      summary_.stop_reason = "no correct kernel";
      return summarize_state();
    }
    for (int it = 1; it <= o_.iterations; ++it) {
      say(fmt::format("iteration {}/{}: beam of {}, best {:.3f}x", it, o_.iterations, beam.size(), beam.front()->speedup));
      std::vector<const Candidate*> children;
      const size_t evaluated_before = evaluated_.size(), duplicates_before = summary_.duplicates;
      for (const Candidate* parent : beam) {
        ProposalRequest request;
        request.phase = "plan";
        request.parent_source = read_file(parent->file);
        request.feedback = parent->feedback;
        request.candidates = o_.plans_per_parent;
        request.iteration = it;
        request.seed = o_.seed + std::hash<std::string>{}(parent->key) % 1000003 + uint64_t(it) * 7919;
        request.prompt = prompt("plan", request.parent_source, "", parent->feedback, o_.plans_per_parent, request.seed);
        ProposalResponse plans = ask(request);
        for (size_t p = 0; p < plans.plans.size() && p < size_t(o_.plans_per_parent); ++p) implement(*parent, plans.plans[p], it, &children);
      }
      std::vector<const Candidate*> pool = beam;
      for (const Candidate* c : children)
        if (std::find(pool.begin(), pool.end(), c) == pool.end()) pool.push_back(c);
      std::sort(pool.begin(), pool.end(), by_speed);
      if (pool.size() > size_t(o_.beam_width)) pool.resize(size_t(o_.beam_width));
      beam = pool;
      summary_.iterations_done = it;
      log({{"event", "iteration"}, {"iteration", it}, {"new_candidates", evaluated_.size() - evaluated_before},
           {"duplicates", summary_.duplicates - duplicates_before}, {"correct_children", children.size()},
           {"best_speedup", beam.front()->speedup}, {"best", beam.front()->file}});
      if (evaluated_.size() == evaluated_before) {
        summary_.stop_reason = "converged (no new candidates)";
        return summarize_state();
      }
    }
    summary_.stop_reason = "iterations done";
  } catch (const BudgetReached&) {
    summary_.stop_reason = fmt::format("stopped after {} new evaluations (--max-evals); run again to resume", new_evaluations_);
  }
  return summarize_state();
}

SearchSummary Search::summarize_state() {
  SearchSummary& s = summary_;
  s.evaluated = evaluated_.size();
  s.evaluated_now = new_evaluations_;
  s.correct = s.built = 0;
  s.build_s = s.eval_s = 0;
  const Candidate* best = nullptr;
  for (const auto& [key, c] : evaluated_) {
    s.correct += c.correct();
    s.built += c.built;
    s.build_s += c.build_s;
    s.eval_s += c.eval_s;
    if (c.correct() && (!best || c.speedup > best->speedup)) best = &c;
  }
  s.prompt_tokens = s.completion_tokens = 0;
  s.proposer_s = 0;
  for (const auto& [key, r] : responses_.items()) {
    s.prompt_tokens += r.value("usage", json::object()).value("prompt_tokens", int64_t(0));
    s.completion_tokens += r.value("usage", json::object()).value("completion_tokens", int64_t(0));
    s.proposer_s += r.value("seconds", 0.0);
  }
  if (!expert_.is_null()) {
    s.expert_speedup = expert_.value("speedup", 0.0);
    s.eval_s += expert_.value("eval_s", 0.0);
  }
  if (best) {
    s.best_speedup = best->speedup;
    s.best_source = best->file;
    s.best_ms = best->median_ms;
    s.baseline_ms = best->baseline_ms;
    if (s.expert_speedup > 0) s.share_of_expert = s.best_speedup / s.expert_speedup;
    // Time saved per call by the speedup of record (the paired estimate), on the baseline's time.
    const double saved_ms = best->speedup > 0 ? best->baseline_ms * (1.0 - 1.0 / best->speedup) : 0.0;
    if (saved_ms > 0) s.payback_calls = std::ceil((s.build_s + s.eval_s) * 1e3 / saved_ms);
  }
  write_text_atomic(dir_ / "summary.json", s.to_json().dump(2));
  return s;
}

}  // namespace

json SearchSummary::to_json() const {
  return {{"schema", "opbench.search.summary"}, {"version", 1},
          {"workload", workload},               {"proposer", proposer},
          {"stop_reason", stop_reason},         {"iterations_done", iterations_done},
          {"evaluated", evaluated},             {"evaluated_now", evaluated_now},
          {"correct", correct},                 {"built", built},
          {"duplicates", duplicates},           {"proposer_failures", proposer_failures},
          {"correctness_rate", correctness_rate()},
          {"build_s", build_s},                 {"eval_s", eval_s},
          {"proposer_s", proposer_s},
          {"prompt_tokens", prompt_tokens},     {"completion_tokens", completion_tokens},
          {"best_speedup", best_speedup},       {"best_source", best_source},
          {"best_ms", best_ms},                 {"baseline_ms", baseline_ms},
          {"expert_speedup", expert_speedup},   {"share_of_expert", share_of_expert},
          {"payback_calls", payback_calls}};
}

SearchSummary SearchSummary::from_json(const json& j) {
  SearchSummary s;
  s.workload = j.at("workload");
  s.proposer = j.value("proposer", "");
  s.stop_reason = j.value("stop_reason", "");
  s.iterations_done = j.value("iterations_done", 0);
  s.evaluated = j.value("evaluated", size_t(0));
  s.evaluated_now = j.value("evaluated_now", size_t(0));
  s.correct = j.value("correct", size_t(0));
  s.built = j.value("built", size_t(0));
  s.duplicates = j.value("duplicates", size_t(0));
  s.proposer_failures = j.value("proposer_failures", size_t(0));
  s.build_s = j.value("build_s", 0.0);
  s.eval_s = j.value("eval_s", 0.0);
  s.proposer_s = j.value("proposer_s", 0.0);
  s.prompt_tokens = j.value("prompt_tokens", int64_t(0));
  s.completion_tokens = j.value("completion_tokens", int64_t(0));
  s.best_speedup = j.value("best_speedup", 0.0);
  s.best_source = j.value("best_source", "");
  s.best_ms = j.value("best_ms", 0.0);
  s.baseline_ms = j.value("baseline_ms", 0.0);
  s.expert_speedup = j.value("expert_speedup", 0.0);
  s.share_of_expert = j.value("share_of_expert", 0.0);
  s.payback_calls = j.value("payback_calls", 0.0);
  return s;
}

std::string normalize_source(const std::string& source) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (c == '"' || c == '\'') {  // literals are copied as they are
      const char quote = c;
      if (space && !out.empty()) out += ' ';
      out += c;
      for (++i; i < source.size(); ++i) {
        out += source[i];
        if (source[i] == '\\' && i + 1 < source.size()) out += source[++i];
        else if (source[i] == quote) break;
      }
      space = false;
      continue;
    }
    if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
      while (i < source.size() && source[i] != '\n') ++i;
      space = true;
      continue;
    }
    if (c == '/' && i + 1 < source.size() && source[i + 1] == '*') {
      const size_t end = source.find("*/", i + 2);
      i = end == std::string::npos ? source.size() : end + 1;
      space = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

SearchSummary beam_search(const WorkloadSpec& spec, Proposer& proposer, Target& target, const SearchOptions& options,
                          const std::function<void(const std::string&)>& progress) {
  Search search(spec, proposer, target, options, progress);
  return search.run();
}

}  // namespace opbench
