#include "search/beam_search.h"

#include "targets/registry.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "core/utf8.h"
#include "search/prompt.h"

namespace opbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// One evaluated candidate, as the search remembers it.
struct Candidate {
  std::string key;      // sha256 of the normalized source
  std::string file;     // where its source is kept, relative to the search's folder
  std::string status;
  std::string phase;
  std::string parent;   // key of the parent, empty for translations and starts
  int iteration = 0;
  double speedup = 0, median_ms = 0, baseline_ms = 0, build_s = 0, eval_s = 0;
  bool built = false;
  bool rankable = true;  // false: the speedup is unreliable (the measurement contradicts itself)
  json feedback;

  bool correct() const { return status == "correct"; }
  json to_json() const {
    return {{"key", key},       {"file", file},         {"status", status},     {"phase", phase},   {"parent", parent},
            {"iteration", iteration}, {"speedup", speedup}, {"median_ms", median_ms}, {"baseline_ms", baseline_ms},
            {"build_s", build_s}, {"eval_s", eval_s},   {"built", built},       {"rankable", rankable}, {"feedback", feedback}};
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
    c.rankable = j.value("rankable", true);
    c.feedback = j.value("feedback", json());
    return c;
  }
};

struct BudgetReached {};

// The plan of a repair request: the parent is the failed candidate, the feedback its errors.
constexpr const char* kRepairPlan =
    "Repair: the kernel below failed (see the feedback). Make it correct, keeping whatever makes it fast.";

// A stable 64-bit hash (FNV-1a) for request seeds: std::hash may differ between builds, and the
// seeds are part of the requests a resumed search must find again.
uint64_t stable_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Which of a step's sources are new to this search's history (first seen in the replay), which
// repeat one seen before (duplicates), which were refused (too large).
struct Outcome {
  const Candidate* candidate = nullptr;  // null: refused
  bool duplicate = false;
};

// The persistent state of one workload's search and the operations on it.
class Search {
 public:
  Search(const WorkloadSpec& spec, Proposer& proposer, const SearchOptions& options, Evaluator evaluator,
         const std::function<void(const std::string&)>& progress, DType float_dtype)
      : spec_(spec), proposer_(proposer), o_(options), evaluator_(std::move(evaluator)), progress_(progress),
        dir_(options.out_dir / search_state_dir(spec.id, options)),
        workload_(resolve_workload(spec, options.eval.size, options.eval.overrides, float_dtype)) {
    std::filesystem::create_directories(dir_ / "candidates");
    load();
    summary_.workload = spec.id;
    summary_.proposer = proposer.name();
    summary_.target = o_.target;
    summary_.size = o_.eval.size;
    summary_.state_dir = search_state_dir(spec.id, options).string();
  }

  SearchSummary run();

 private:
  void say(const std::string& s) {
    if (progress_) progress_(fmt::format("[{}] {}", spec_.id, s));
  }
  void load();
  void save();
  void log(json event);
  void fail(const std::string& kind, const std::string& message, bool fresh, const json& where);
  ProposalResponse ask(ProposalRequest request);
  // `fresh[i]`: source i came from the proposer in this invocation (its failures are logged now).
  std::vector<Outcome> evaluate_sources(const std::vector<std::string>& sources, const std::vector<bool>& fresh, const std::string& phase,
                                        const std::string& parent, int iteration);
  std::vector<const Candidate*> translate();
  const Candidate* repaired(const Candidate* c, int iteration, uint64_t seed);
  void optimize_parent(const Candidate& parent, int iteration, std::vector<const Candidate*>* children);
  std::string source_of(const Candidate& c) const { return read_file(dir_ / c.file); }
  PromptOptions prompt_options(const std::string& phase, int candidates, uint64_t seed) const;
  SearchSummary summarize_state();

  const WorkloadSpec& spec_;
  Proposer& proposer_;
  SearchOptions o_;
  Evaluator evaluator_;
  std::function<void(const std::string&)> progress_;
  std::filesystem::path dir_;
  ResolvedWorkload workload_;
  std::map<std::string, Candidate> evaluated_;  // by key: every result the state holds
  json responses_ = json::object();             // proposer answers (and failures) by request hash
  json expert_;                                 // the expert's evaluation, when made
  SearchSummary summary_;
  size_t new_evaluations_ = 0;
  bool fresh_answer_ = false;                   // the last answer came from the proposer now, not the state
  std::set<std::string> seen_;                  // keys met in this replay, in order of decisions
  std::map<std::string, std::vector<std::string>> tried_plans_;  // parent key -> plans implemented on it
};

void Search::load() {
  const auto path = dir_ / "state.json";
  if (!std::filesystem::exists(path)) return;
  json state;
  try {
    state = read_json_document(path, kSearchStateSchema);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{} is not a search state this opbench reads ({}); use another --out", path.string(), e.what()));
  }
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
  say(fmt::format("resuming: {} candidates evaluated, {} proposer answers kept; replaying", evaluated_.size(), responses_.size()));
}

void Search::save() {
  json list = json::array();
  for (const auto& [key, c] : evaluated_) list.push_back(c.to_json());
  json overrides = json::object();
  for (const auto& [k, v] : o_.eval.overrides) overrides[k] = v;
  json state = {{"workload", spec_.id},       {"proposer", proposer_.name()}, {"target", o_.target},
                {"size", o_.eval.size},       {"overrides", overrides},       {"evaluated", list},
                {"responses", responses_},    {"expert", expert_},            {"isa", o_.eval.isa}};
  write_json_atomic(dir_ / "state.json", stamp_schema(state, kSearchStateSchema));
}

void Search::log(json event) {
  std::ofstream out(dir_ / "log.jsonl", std::ios::app);
  out << dump_json(stamp_schema(std::move(event), kSearchLogSchema), -1) << "\n";
}

// A failure in the search's history: counted in every replay, logged once (when it happened).
void Search::fail(const std::string& kind, const std::string& message, bool fresh, const json& where) {
  ++summary_.failures[kind];
  if (!fresh) return;
  json event = where;
  event["event"] = "failure";
  event["kind"] = kind;
  event["message"] = utf8_truncate(message, 2000);
  log(event);
  say(fmt::format("failure ({}): {}", kind, utf8_truncate(message, 300, "...")));
}

PromptOptions Search::prompt_options(const std::string& phase, int candidates, uint64_t seed) const {
  PromptOptions p;
  p.phase = phase;
  p.context = o_.context;
  p.context_dir = context_dir_for(o_.target);
  p.target = o_.target;
  p.candidates = candidates;
  p.menu_dropout = o_.menu_dropout;
  p.seed = seed;
  return p;
}

ProposalResponse Search::ask(ProposalRequest request) {
  request.workload = spec_.id;
  // The request's identity is everything but nothing random: the same search asks the same things.
  const std::string key = sha256_hex(dump_json(request.to_json(), -1));
  const json where = {{"phase", request.phase}, {"iteration", request.iteration}};
  fresh_answer_ = !responses_.contains(key);
  if (fresh_answer_) {
    const auto start = Clock::now();
    json kept;
    try {
      kept = proposer_.propose(request).to_json();
    } catch (const ProposerError& e) {
      kept = {{"failed", e.kind}, {"error", utf8_sanitize(e.what())}};
    } catch (const std::exception& e) {
      kept = {{"failed", "error"}, {"error", utf8_sanitize(e.what())}};
    }
    kept["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
    responses_[key] = kept;
    save();
  }
  const json& kept = responses_[key];
  if (kept.contains("failed")) {
    ++summary_.proposer_failures;
    fail(kept["failed"].get<std::string>(), kept.value("error", ""), fresh_answer_, where);
    return {};
  }
  ProposalResponse response = ProposalResponse::from_json(kept);
  for (const auto& f : response.failures) fail(f.kind, f.message, fresh_answer_, where);
  if (fresh_answer_ && !response.note.empty()) log({{"event", "proposer_note"}, {"phase", request.phase}, {"note", utf8_truncate(response.note, 2000)}});
  return response;
}

std::vector<Outcome> Search::evaluate_sources(const std::vector<std::string>& sources, const std::vector<bool>& fresh, const std::string& phase,
                                              const std::string& parent, int iteration) {
  std::vector<Outcome> outcomes(sources.size());
  std::vector<size_t> to_measure;  // indexes into sources
  std::vector<size_t> repeats;     // duplicates of a source measured in this same batch
  std::vector<std::string> keys(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].size() > o_.max_source_bytes) {
      fail("source_too_large", fmt::format("a {} candidate of {} bytes is over the cap of {} bytes", phase, sources[i].size(), o_.max_source_bytes),
           fresh.at(i), {{"phase", phase}, {"iteration", iteration}});
      continue;
    }
    keys[i] = sha256_hex(normalize_source(sources[i]));
    if (!seen_.insert(keys[i]).second) {  // met before in this search's history
      ++summary_.duplicates;
      if (auto it = evaluated_.find(keys[i]); it != evaluated_.end()) outcomes[i] = {&it->second, true};
      else repeats.push_back(i);  // an earlier source of this batch: known once the batch is measured
      continue;
    }
    if (auto it = evaluated_.find(keys[i]); it != evaluated_.end()) outcomes[i].candidate = &it->second;  // measured by an earlier run
    else to_measure.push_back(i);
  }
  // Measure what is new, as one batch, within the --max-evals budget of this invocation.
  size_t fits = to_measure.size();
  if (o_.max_evals > 0) fits = std::min(fits, size_t(std::max(0, o_.max_evals - int(new_evaluations_))));
  std::vector<Implementation> jobs;
  for (size_t j = 0; j < fits; ++j) {
    const size_t i = to_measure[j];
    const std::string file = "candidates/" + keys[i].substr(0, 16) + target_info(o_.target).source_extension;
    write_text_atomic(dir_ / file, sources[i]);
    say(fmt::format("evaluating {} ({}, iteration {})", file, phase, iteration));
    jobs.push_back(Implementation{"candidate", dir_ / file, {}});
  }
  const std::vector<Result> results = jobs.empty() ? std::vector<Result>{} : evaluator_(spec_, jobs);
  if (results.size() != jobs.size()) throw std::runtime_error(fmt::format("the evaluator returned {} results for {} candidates", results.size(), jobs.size()));
  for (size_t j = 0; j < fits; ++j) {
    const size_t i = to_measure[j];
    const Result& r = results[j];
    Candidate c;
    c.key = keys[i];
    c.file = "candidates/" + keys[i].substr(0, 16) + target_info(o_.target).source_extension;
    write_json_atomic(dir_ / "candidates" / (keys[i].substr(0, 16) + ".json"), to_json(r));
    c.status = std::string(status_name(r.status));
    c.phase = phase;
    c.parent = parent;
    c.iteration = iteration;
    c.built = r.status != Status::compile_error;
    c.build_s = r.build_s;
    c.eval_s = r.eval_s;
    if (r.speedup) {
      c.speedup = r.speedup->vs_baseline;
      c.rankable = r.speedup->standing != "unreliable";
    }
    if (r.timing) {
      c.median_ms = r.timing->per_call_ms.median;
      c.baseline_ms = r.timing->baseline_per_call_ms.median;
    }
    c.feedback = feedback_from_result(r);
    ++new_evaluations_;
    log({{"event", "evaluated"}, {"candidate", c.file}, {"phase", phase}, {"iteration", iteration}, {"status", c.status},
         {"speedup", c.speedup}, {"message", utf8_truncate(r.message, 2000)}});
    say(fmt::format("  -> {}{}", c.status, c.correct() ? fmt::format(" {:.3f}x", c.speedup) : ": " + utf8_truncate(r.message, 120, "...")));
    outcomes[i].candidate = &evaluated_.emplace(c.key, c).first->second;
  }
  if (fits > 0) save();
  if (fits < to_measure.size()) throw BudgetReached{};
  for (size_t i : repeats) outcomes[i] = {&evaluated_.at(keys[i]), true};
  return outcomes;
}

std::vector<const Candidate*> Search::translate() {
  std::vector<const Candidate*> correct;
  auto keep = [&](const Candidate* c) {
    if (c && c->correct() && std::find(correct.begin(), correct.end(), c) == correct.end()) correct.push_back(c);
  };
  // A start kernel (given, or the expert for proposers that cannot translate) replaces translation.
  std::filesystem::path start = o_.start;
  if (start.empty() && !proposer_.can_translate()) {
    if (!spec_.has_implementation("expert"))
      throw UsageError(fmt::format("{} cannot write a first kernel and {} has no expert: give --start FILE", proposer_.name(), spec_.id));
    start = spec_.implementation("expert");
  }
  if (!start.empty()) {
    const Outcome c = evaluate_sources({read_file(start)}, {true}, "start", "", 0).front();
    if (!c.candidate) throw UsageError(fmt::format("the start kernel {} is over the source-size cap", start.string()));
    if (c.candidate->correct()) correct.push_back(c.candidate);
    else say(fmt::format("the start kernel is {}: {}", c.candidate->status, c.candidate->feedback.value("message", "")));
    return correct;
  }
  ProposalRequest request;
  request.phase = "translate";
  request.candidates = o_.beam_width;
  request.seed = o_.seed;
  request.prompt = assemble_prompt(spec_, workload_, prompt_options("translate", 1, o_.seed));
  ProposalResponse answer = ask(request);
  const std::vector<Outcome> outcomes = evaluate_sources(answer.sources, std::vector<bool>(answer.sources.size(), fresh_answer_), "translate", "", 0);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].candidate) continue;
    keep(outcomes[i].duplicate ? outcomes[i].candidate : repaired(outcomes[i].candidate, 0, o_.seed + 1000 * (i + 1)));
  }
  return correct;
}

const Candidate* Search::repaired(const Candidate* c, int iteration, uint64_t seed) {
  // A failed candidate gets its errors back, `repairs` times, as an implement request whose plan is
  // the repair; the last attempt stands (a duplicate ends the attempts).
  for (int repair = 0; repair < o_.repairs && !c->correct(); ++repair) {
    ProposalRequest fix;
    fix.phase = "implement";
    fix.parent_source = source_of(*c);
    fix.plan = kRepairPlan;
    fix.feedback = c->feedback;
    fix.candidates = 1;
    fix.iteration = iteration;
    fix.seed = seed + uint64_t(repair);
    PromptOptions p = prompt_options("implement", 1, fix.seed);
    p.parent_source = fix.parent_source;
    p.plan = fix.plan;
    p.feedback = c->feedback;
    fix.prompt = assemble_prompt(spec_, workload_, p);
    ProposalResponse fixed = ask(fix);
    if (fixed.sources.empty()) break;
    const Outcome f = evaluate_sources({fixed.sources[0]}, {fresh_answer_}, "repair", c->key, iteration).front();
    if (!f.candidate || f.duplicate) break;
    c = f.candidate;
  }
  return c;
}

// One parent in one iteration: its plans, the implementations of every plan (measured as one
// batch), then the repairs of those that failed.
void Search::optimize_parent(const Candidate& parent, int iteration, std::vector<const Candidate*>* children) {
  const std::string parent_source = source_of(parent);
  ProposalRequest request;
  request.phase = "plan";
  request.parent_source = parent_source;
  request.feedback = parent.feedback;
  request.candidates = o_.plans_per_parent;
  request.iteration = iteration;
  request.seed = o_.seed + stable_hash(parent.key) % 1000003 + uint64_t(iteration) * 7919;
  PromptOptions p = prompt_options("plan", o_.plans_per_parent, request.seed);
  p.parent_source = parent_source;
  p.parent_measurements = parent.feedback;
  p.tried_plans = tried_plans_[parent.key];
  request.prompt = assemble_prompt(spec_, workload_, p);
  ProposalResponse plans = ask(request);
  if (plans.plans.size() > size_t(o_.plans_per_parent)) plans.plans.resize(size_t(o_.plans_per_parent));

  std::vector<std::string> sources;
  std::vector<bool> fresh;
  std::vector<uint64_t> seeds;
  for (const std::string& plan : plans.plans) {
    ProposalRequest impl;
    impl.phase = "implement";
    impl.parent_source = parent_source;
    impl.plan = plan;
    impl.feedback = parent.feedback;
    impl.candidates = o_.impls_per_plan;
    impl.iteration = iteration;
    impl.seed = o_.seed + stable_hash(parent.key + plan) % 1000003 + uint64_t(iteration);
    PromptOptions ip = prompt_options("implement", o_.impls_per_plan, impl.seed);
    ip.parent_source = parent_source;
    ip.plan = plan;
    ip.parent_measurements = parent.feedback;
    impl.prompt = assemble_prompt(spec_, workload_, ip);
    ProposalResponse answer = ask(impl);
    tried_plans_[parent.key].push_back(plan);
    for (const std::string& source : answer.sources) {
      sources.push_back(source);
      fresh.push_back(fresh_answer_);
      seeds.push_back(impl.seed + 7);
    }
  }
  const std::vector<Outcome> outcomes = evaluate_sources(sources, fresh, "implement", parent.key, iteration);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].candidate) continue;
    if (outcomes[i].duplicate) {
      say("  duplicate of an evaluated candidate: skipped");
      continue;
    }
    const Candidate* c = repaired(outcomes[i].candidate, iteration, seeds[i]);
    if (c->correct() && c->rankable) children->push_back(c);
  }
}

SearchSummary Search::run() {
  std::vector<const Candidate*> beam;
  auto by_speed = [](const Candidate* a, const Candidate* b) { return a->speedup != b->speedup ? a->speedup > b->speedup : a->key < b->key; };
  auto record_beam = [&] {
    summary_.beam.clear();
    for (const Candidate* c : beam) summary_.beam.push_back(c->key);
  };
  try {
    if (o_.compare_expert && spec_.has_implementation("expert") && expert_.is_null()) {
      say("evaluating the expert (for the share-of-expert figure)");
      Result r = evaluator_(spec_, {builtin_implementation(spec_, "expert")}).at(0);
      expert_ = {{"status", std::string(status_name(r.status))}, {"speedup", r.speedup ? r.speedup->vs_baseline : 0.0},
                 {"eval_s", r.eval_s}};
      save();
    }
    beam = translate();
    std::sort(beam.begin(), beam.end(), by_speed);
    if (beam.size() > size_t(o_.beam_width)) beam.resize(size_t(o_.beam_width));
    record_beam();
    if (new_evaluations_ > 0 || fresh_answer_) log({{"event", "translated"}, {"correct", beam.size()}});
    if (beam.empty()) {
      summary_.stop_reason = "no correct kernel";
      return summarize_state();
    }
    for (int it = 1; it <= o_.iterations; ++it) {
      say(fmt::format("iteration {}/{}: beam of {}, best {:.3f}x", it, o_.iterations, beam.size(), beam.front()->speedup));
      std::vector<const Candidate*> children;
      const size_t seen_before = seen_.size(), duplicates_before = summary_.duplicates, evaluations_before = new_evaluations_;
      for (const Candidate* parent : beam) optimize_parent(*parent, it, &children);
      std::vector<const Candidate*> pool = beam;
      for (const Candidate* c : children)
        if (std::find(pool.begin(), pool.end(), c) == pool.end()) pool.push_back(c);
      std::sort(pool.begin(), pool.end(), by_speed);
      if (pool.size() > size_t(o_.beam_width)) pool.resize(size_t(o_.beam_width));
      beam = pool;
      record_beam();
      summary_.iterations_done = it;
      if (new_evaluations_ > evaluations_before || fresh_answer_)
        log({{"event", "iteration"}, {"iteration", it}, {"new_candidates", seen_.size() - seen_before},
             {"duplicates", summary_.duplicates - duplicates_before}, {"correct_children", children.size()},
             {"best_speedup", beam.front()->speedup}, {"best", beam.front()->file}});
      // New to the search's history, not to this invocation: a replayed iteration is not "converged".
      if (seen_.size() == seen_before) {
        summary_.stop_reason = "converged (no new candidates)";
        return summarize_state();
      }
    }
    summary_.stop_reason = "iterations done";
  } catch (const BudgetReached&) {
    summary_.budget_stopped = true;
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
  }
  // The best is the head of the final beam: what the search decided, not the fastest row anywhere.
  if (!s.beam.empty()) best = &evaluated_.at(s.beam.front());
  s.prompt_tokens = s.completion_tokens = 0;
  s.proposer_s = s.proposer_failed_s = 0;
  s.agent_calls = s.agent_calls_ok = 0;
  for (const auto& [key, r] : responses_.items()) {
    ++s.agent_calls;
    const bool failed = r.contains("failed");
    s.agent_calls_ok += !failed && (!r.value("candidates", json::array()).empty() || !r.value("plans", json::array()).empty());
    s.prompt_tokens += r.value("usage", json::object()).value("prompt_tokens", int64_t(0));
    s.completion_tokens += r.value("usage", json::object()).value("completion_tokens", int64_t(0));
    s.proposer_s += r.value("seconds", 0.0);
    if (failed) s.proposer_failed_s += r.value("seconds", 0.0);
  }
  if (!expert_.is_null()) {
    s.expert_speedup = expert_.value("speedup", 0.0);
    s.eval_s += expert_.value("eval_s", 0.0);
  }
  if (best && best->correct()) {
    s.best_speedup = best->speedup;
    s.best_key = best->key;
    s.best_source = (std::filesystem::path(s.state_dir) / best->file).string();
    s.best_ms = best->median_ms;
    s.baseline_ms = best->baseline_ms;
    if (s.expert_speedup > 0) s.share_of_expert = s.best_speedup / s.expert_speedup;
    // Time saved per call by the speedup of record (the paired estimate), on the baseline's time.
    const double saved_ms = best->speedup > 0 ? best->baseline_ms * (1.0 - 1.0 / best->speedup) : 0.0;
    if (saved_ms > 0) s.payback_calls = std::ceil((s.build_s + s.eval_s) * 1e3 / saved_ms);
  }
  write_json_atomic(dir_ / "summary.json", s.to_json());
  return s;
}

}  // namespace

Evaluator local_evaluator(Target& target, const EvalOptions& options) {
  return [&target, options](const WorkloadSpec& spec, const std::vector<Implementation>& candidates) {
    std::vector<Result> results;
    for (const Implementation& impl : candidates) results.push_back(evaluate(spec, impl, target, options));
    return results;
  };
}

std::filesystem::path search_state_dir(const std::string& workload, const SearchOptions& options) {
  // Target, instruction-set level and size: searches that differ in any of them never share results.
  std::string key = options.target + (options.eval.isa.empty() ? "" : "-" + options.eval.isa) + "-" + options.eval.size;
  for (const auto& [symbol, value] : options.eval.overrides) key += fmt::format("-{}{}", symbol, value);
  return std::filesystem::path(workload) / key;
}

json SearchSummary::to_json() const {
  json j = {{"workload", workload},               {"proposer", proposer},
            {"target", target},                   {"size", size},
            {"state_dir", state_dir},
            {"stop_reason", stop_reason},         {"iterations_done", iterations_done},
            {"budget_stopped", budget_stopped},
            {"evaluated", evaluated},             {"evaluated_now", evaluated_now},
            {"correct", correct},                 {"built", built},
            {"duplicates", duplicates},           {"proposer_failures", proposer_failures},
            {"agent_calls", agent_calls},         {"agent_calls_ok", agent_calls_ok},
            {"no_successful_agent_call", no_successful_agent_call()},
            {"failures", failures},
            {"correctness_rate", correctness_rate()},
            {"build_s", build_s},                 {"eval_s", eval_s},
            {"proposer_s", proposer_s},           {"proposer_failed_s", proposer_failed_s},
            {"prompt_tokens", prompt_tokens},     {"completion_tokens", completion_tokens},
            {"best_speedup", best_speedup},       {"best_source", best_source},
            {"best_key", best_key},               {"beam", beam},
            {"best_ms", best_ms},                 {"baseline_ms", baseline_ms},
            {"expert_speedup", expert_speedup},   {"share_of_expert", share_of_expert},
            {"payback_calls", payback_calls}};
  return stamp_schema(j, kSearchSummarySchema);
}

SearchSummary SearchSummary::from_json(const json& j) {
  check_schema(j, kSearchSummarySchema, "a search summary");
  SearchSummary s;
  s.workload = j.at("workload");
  s.proposer = j.value("proposer", "");
  s.target = j.value("target", "");
  s.size = j.value("size", "");
  s.state_dir = j.value("state_dir", "");
  s.stop_reason = j.value("stop_reason", "");
  s.iterations_done = j.value("iterations_done", 0);
  s.budget_stopped = j.value("budget_stopped", false);
  s.evaluated = j.value("evaluated", size_t(0));
  s.evaluated_now = j.value("evaluated_now", size_t(0));
  s.correct = j.value("correct", size_t(0));
  s.built = j.value("built", size_t(0));
  s.duplicates = j.value("duplicates", size_t(0));
  s.proposer_failures = j.value("proposer_failures", size_t(0));
  s.agent_calls = j.value("agent_calls", size_t(0));
  s.agent_calls_ok = j.value("agent_calls_ok", size_t(0));
  s.failures = j.value("failures", std::map<std::string, size_t>());
  s.build_s = j.value("build_s", 0.0);
  s.eval_s = j.value("eval_s", 0.0);
  s.proposer_s = j.value("proposer_s", 0.0);
  s.proposer_failed_s = j.value("proposer_failed_s", 0.0);
  s.prompt_tokens = j.value("prompt_tokens", int64_t(0));
  s.completion_tokens = j.value("completion_tokens", int64_t(0));
  s.best_speedup = j.value("best_speedup", 0.0);
  s.best_source = j.value("best_source", "");
  s.best_key = j.value("best_key", "");
  s.beam = j.value("beam", std::vector<std::string>());
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
  Evaluator evaluator = options.evaluator ? options.evaluator : local_evaluator(target, options.eval);
  Search search(spec, proposer, options, std::move(evaluator), progress, target.float_dtype());
  return search.run();
}

}  // namespace opbench
