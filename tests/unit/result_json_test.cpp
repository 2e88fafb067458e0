// A result read back from JSON is the result that was written: result -> JSON -> result -> JSON is
// byte-identical, logs and kernel output included; readers refuse other kinds and major versions.
#include <gtest/gtest.h>

#include <cmath>

#include "core/json_io.h"
#include "harness/result.h"

namespace opbench {
namespace {

Result full_result() {
  Result r;
  r.workload = "8p_GEMM";
  r.size = "cpu";
  r.target = "cpu";
  r.shape = {{"M", 1024}, {"N", 512}, {"K", 256}};
  r.impl = {"candidate", "/tmp/k\xFF.cpp", "ab12"};
  r.status = Status::untrusted;
  r.message = "the worker used 4.00 ms of CPU";
  r.correctness = {3, 3, 1.5e-6, 2.5e-7, 0, 0, 1572864, 1e-4, 1e-4, ""};
  TimingInfo t;
  t.per_call_ms = {1.25, 1.26, 1.2, 1.4, 0.03, 40};
  t.calls = 400;
  t.batches = 40;
  t.calls_per_batch = 10;
  t.worker_median_ms = 1.249;
  t.parent_over_worker = 1.0008;
  t.baseline_per_call_ms = {2.5, 2.51, 2.4, 2.8, 0.05, 40};
  t.baseline_calls = 400;
  t.seconds = 10.02;
  t.stop_reason = "time_cap";
  t.outlier_pairs = 2;
  t.flags = {"precision_not_reached"};
  r.timing = t;
  r.speedup = SpeedupInfo{2.0, 1.9, 2.1, 2.0, 40, "imprecise", "the time cap came first"};
  r.work = {2.7e8, 2.7e8, 6.3e6, 215.0, 5.0, 42.6};
  r.threads = 2;
  r.machine = {{"cpu_model", "AMD EPYC"}, {"logical_cpus", 2}};
  r.build_s = 1.5;
  r.eval_s = 14.25;
  r.build_cached = true;
  r.compiler = "g++ (Debian 12.2.0-14) 12.2.0";
  r.build_log = "k.cpp:3:1: error: expected ';'\n\tcut mid-char: \xE2\x82";
  r.kernel_output = "printed \x01 control and \"quotes\" and <html>";
  r.sandbox = "bwrap namespaces + seccomp";
  r.integrity.calls_verified = 403;
  r.integrity.batches_watched = 12;
  r.integrity.max_idle_cpu_ms = 0.0;
  r.integrity.fresh_over_repeat = 1.01;
  r.integrity.baseline_fresh_over_repeat = NAN;  // written as null, read back as NaN
  r.integrity.fresh_check = "passed";
  r.integrity.input_sets = 64;
  r.integrity.roofline_floor_ms = 0.5;
  r.integrity.worker_cpu_s = INFINITY;
  r.integrity.checks_not_run = {"freezing the idle worker (not offered by the target)"};
  r.timestamp = "2026-12-01T09:00:00Z";
  r.opbench_version = "0.1.0+abc";
  return r;
}

TEST(ResultJson, RoundTripIsByteIdentical) {
  const std::string first = dump_json(to_json(full_result()));
  const Result back = result_from_json(nlohmann::json::parse(first));
  const std::string second = dump_json(to_json(back));
  EXPECT_EQ(first, second);
  EXPECT_EQ(back.kernel_output, full_result().kernel_output);
  EXPECT_EQ(back.opbench_version, "0.1.0+abc");
  EXPECT_EQ(back.speedup->standing, "imprecise");
  EXPECT_TRUE(back.build_cached);
  EXPECT_EQ(back.integrity.checks_not_run.size(), 1u);
}

TEST(ResultJson, ResultsWithoutTimingRoundTripToo) {
  Result r = full_result();
  r.timing.reset();
  r.speedup.reset();
  r.status = Status::compile_error;
  const std::string first = dump_json(to_json(r));
  EXPECT_EQ(first, dump_json(to_json(result_from_json(nlohmann::json::parse(first)))));
}

TEST(ResultJson, ReadersRefuseOtherKindsAndMajorVersions) {
  nlohmann::json j = to_json(full_result());
  EXPECT_EQ(j["schema_version"], schema_version());
  j["schema_version"] = "3.0";
  EXPECT_THROW(result_from_json(j), SchemaError);
  j["schema_version"] = "2.7";  // a newer minor version still reads
  EXPECT_NO_THROW(result_from_json(j));
  j["schema"] = "opbench.run";
  EXPECT_THROW(result_from_json(j), SchemaError);
}

}  // namespace
}  // namespace opbench
