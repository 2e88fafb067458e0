// The proposer protocol's JSON, the tuner as a proposer, and source normalization for dedupe.
#include <gtest/gtest.h>

#include "core/files.h"
#include "search/beam_search.h"
#include "search/proposer.h"

namespace opbench {
namespace {

TEST(ProposerProtocol, RequestCarriesEverySchemaField) {
  ProposalRequest r;
  r.workload = "8p_GEMM";
  r.phase = "plan";
  r.prompt = "p";
  r.parent_source = "src";
  r.candidates = 3;
  r.seed = 9;
  const nlohmann::json j = r.to_json();
  const nlohmann::json schema = nlohmann::json::parse(read_file(std::filesystem::path(OPBENCH_SOURCE_DIR) / "docs/schemas/proposer-request.schema.json"));
  for (const auto& key : schema["required"]) EXPECT_TRUE(j.contains(key.get<std::string>())) << key;
  for (const auto& [key, value] : j.items()) EXPECT_TRUE(schema["properties"].contains(key)) << key;
  EXPECT_TRUE(j["plan"].is_null());
  const ProposalRequest back = ProposalRequest::from_json(j);
  EXPECT_EQ(back.parent_source, "src");
  EXPECT_EQ(back.candidates, 3);
  EXPECT_EQ(back.seed, 9u);
}

TEST(ProposerProtocol, ResponsesAreValidated) {
  nlohmann::json ok = {{"schema", "opbench.proposer.response"}, {"version", 1}, {"candidates", {{{"source", "x"}}}},
                       {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 7}}}};
  ProposalResponse r = ProposalResponse::from_json(ok);
  ASSERT_EQ(r.sources.size(), 1u);
  EXPECT_EQ(r.prompt_tokens, 5);
  EXPECT_EQ(ProposalResponse::from_json(r.to_json()).sources, r.sources);
  nlohmann::json wrong_schema = ok;
  wrong_schema["schema"] = "something.else";
  EXPECT_THROW(ProposalResponse::from_json(wrong_schema), std::invalid_argument);
  nlohmann::json wrong_version = ok;
  wrong_version["version"] = 2;
  EXPECT_THROW(ProposalResponse::from_json(wrong_version), std::invalid_argument);
  nlohmann::json no_source = ok;
  no_source["candidates"] = {{{"code", "x"}}};
  EXPECT_THROW(ProposalResponse::from_json(no_source), std::invalid_argument);
  nlohmann::json bad_plans = ok;
  bad_plans["plans"] = {1, 2};
  EXPECT_THROW(ProposalResponse::from_json(bad_plans), std::invalid_argument);
}

TEST(TuneProposer, PlansNeighboursAndImplementsThemAsDefaults) {
  auto tune = make_proposer("tune");
  EXPECT_FALSE(tune->can_translate());
  ProposalRequest plan;
  plan.phase = "plan";
  plan.parent_source = read_file(std::filesystem::path(OPBENCH_SOURCE_DIR) / "tests/kernels/gemm_tunable.cpp");
  plan.candidates = 10;
  ProposalResponse plans = tune->propose(plan);
  // BLOCK_K 8 [32] 128 and ROWS_PER_TASK [1] 4: three single steps, no double step possible.
  ASSERT_EQ(plans.plans.size(), 3u);
  ProposalRequest impl;
  impl.phase = "implement";
  impl.parent_source = plan.parent_source;
  impl.plan = "BLOCK_K=128 ROWS_PER_TASK=4";
  ProposalResponse built = tune->propose(impl);
  ASSERT_EQ(built.sources.size(), 1u);
  EXPECT_NE(built.sources[0].find("#define BLOCK_K 128\n"), std::string::npos);
  EXPECT_NE(built.sources[0].find("#define ROWS_PER_TASK 4\n"), std::string::npos);
  EXPECT_EQ(built.sources[0].find("#define BLOCK_K 32\n"), std::string::npos);
}

TEST(MakeProposer, RefusesUnknownSpecs) {
  EXPECT_THROW(make_proposer("gpt"), std::exception);
  EXPECT_THROW(make_proposer("cmd:"), std::exception);
  EXPECT_EQ(make_proposer("cmd:./agent --x 1")->name(), "cmd:./agent --x 1");
}

TEST(NormalizeSource, IgnoresCommentsAndSpacingButNotCode) {
  const std::string a = "int f() {\n  return 1; // one\n}\n";
  const std::string b = "/* header */ int f()   {\treturn 1;\n\n}";
  const std::string c = "int f() { return 2; }";
  EXPECT_EQ(normalize_source(a), normalize_source(b));
  EXPECT_NE(normalize_source(a), normalize_source(c));
  EXPECT_NE(normalize_source("s = \"a  b\";"), normalize_source("s = \"a b\";"));  // literals kept as they are
  EXPECT_EQ(normalize_source("s = \"// not a comment\";"), "s = \"// not a comment\";");
}

}  // namespace
}  // namespace opbench
