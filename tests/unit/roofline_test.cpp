#include <gtest/gtest.h>

#include <cmath>

#include "calibrate/roofline.h"
#include "report_fixtures.h"

namespace opbench {
namespace {

using testing::made_profile;
using testing::made_result;

TEST(Roofline, ComputeBoundFloorIsUsefulFlopsOverPeak) {
  // 1e9 useful FLOP at 200 GFLOP/s: 5 ms; 1e8 B at 20 GB/s: 5 ms... make compute dominate.
  Result r = made_result("8p", "expert", 10.0, 2, 1.9, 2.1, 2e9, 1e8);
  RooflinePosition f = roofline_position(r, made_profile());
  EXPECT_EQ(f.bound, "compute");
  EXPECT_NEAR(f.floor_ms, 10.0, 1e-9);  // 2e9 / 200e9 s
  EXPECT_NEAR(f.fraction, 1.0, 1e-9);
  EXPECT_NEAR(f.intensity, 30.0, 1e-9);         // 3e9 written FLOP / 1e8 B
  EXPECT_NEAR(f.useful_intensity, 20.0, 1e-9);  // 2e9 / 1e8
  EXPECT_EQ(f.threads, 2);
  EXPECT_EQ(f.profile_id, "cpu-test-profile");
  EXPECT_TRUE(f.flags.empty());
}

TEST(Roofline, MemoryBoundFloorUsesTheBestBandwidth) {
  Result r = made_result("12p", "baseline", 40.0, 1, 0.99, 1.01, 1e8, 4e8);
  RooflinePosition f = roofline_position(r, made_profile());
  EXPECT_EQ(f.bound, "memory");
  EXPECT_NEAR(f.peak_gbytes_per_s, 20.0, 1e-12);  // max(read 20, copy 16, triad 18)
  EXPECT_NEAR(f.floor_ms, 20.0, 1e-9);            // 4e8 B / 20e9 B/s
  EXPECT_NEAR(f.fraction, 0.5, 1e-9);
}

TEST(Roofline, OneThreadUsesTheOneThreadRoofs) {
  Result r = made_result("8p", "expert", 20.0, 2, 1.9, 2.1, 2e9, 1e8);
  r.threads = 1;
  RooflinePosition f = roofline_position(r, made_profile());
  EXPECT_NEAR(f.peak_gflops, 100, 1e-12);
  EXPECT_NEAR(f.floor_ms, 20.0, 1e-9);
}

TEST(Roofline, UnmeasuredThreadCountScalesTheNearestFmaRow) {
  MachineProfile p = made_profile();
  EXPECT_NEAR(p.peak_gflops(4), 400, 1e-9);
  EXPECT_NEAR(p.peak_gbytes_per_s(4), 20, 1e-9);
}

// Work that depends on drawn values (6p, 7p): the share is of the expected (useful) work, the floor
// of the least work any input needs. A time under the first but over the second is honest.
TEST(Roofline, TheFloorIsTheLeastWorkAnyInputNeedsAndTheShareTheExpectedWork) {
  Result r = made_result("7p", "baseline", 8.0, 5, 4.9, 5.1, 2e9, 1e8);  // useful work at the roofs: 10 ms
  r.work.floor_flops = 4e8;                                              // 2 ms
  r.work.floor_bytes = 2e7;                                              // 1 ms
  Result copy = r;
  EXPECT_FALSE(attach_roofline(copy, made_profile()));
  ASSERT_TRUE(copy.roofline);
  EXPECT_NEAR(copy.roofline->roof_ms, 10.0, 1e-9);
  EXPECT_NEAR(copy.roofline->floor_ms, 2.0, 1e-9);
  EXPECT_NEAR(copy.roofline->fraction, 10.0 / 8.0, 1e-9);
  EXPECT_TRUE(copy.roofline->flags.empty());
  r.timing->per_call_ms.median = 1.5;  // under the least work's floor: impossible
  EXPECT_TRUE(attach_roofline(r, made_profile()));
  r.work.floor_flops = 0;  // a floor of no FLOPs is a floor, not "not given": the bytes' 1 ms
  EXPECT_NEAR(roofline_position(r, made_profile()).floor_ms, 1.0, 1e-9);
}

TEST(Roofline, FasterThanTheFloorIsFlagged) {
  // Floor 10 ms; 8 ms is faster than the machine allows.
  Result r = made_result("8p", "candidate", 8.0, 5, 4.9, 5.1, 2e9, 1e8);
  Result copy = r;
  EXPECT_TRUE(attach_roofline(copy, made_profile()));
  ASSERT_TRUE(copy.roofline);
  ASSERT_EQ(copy.roofline->flags.size(), 1u);
  EXPECT_EQ(copy.roofline->flags[0], kBelowRooflineFloor);
  EXPECT_GT(copy.roofline->fraction, 1.0);
}

TEST(Roofline, AtOrAboveTheFloorIsNotFlagged) {
  Result r = made_result("8p", "candidate", 10.0, 5, 4.9, 5.1, 2e9, 1e8);  // exactly the 10 ms floor
  EXPECT_FALSE(attach_roofline(r, made_profile()));
  Result slightly_under = made_result("8p", "candidate", 9.9, 5, 4.9, 5.1, 2e9, 1e8);
  EXPECT_TRUE(attach_roofline(slightly_under, made_profile()));
  EXPECT_TRUE(r.roofline->flags.empty());
}

TEST(Roofline, UntimedResultHasAFloorButNoFraction) {
  Result r = made_result("8p", "candidate", 8.0, 5, 4.9, 5.1, 2e9, 1e8);
  r.timing.reset();
  r.status = Status::incorrect;
  EXPECT_FALSE(attach_roofline(r, made_profile()));
  EXPECT_NEAR(r.roofline->floor_ms, 10.0, 1e-9);
  EXPECT_TRUE(std::isnan(r.roofline->fraction));
}

TEST(Roofline, BlockSurvivesTheJsonRoundTrip) {
  Result r = made_result("8p", "candidate", 8.0, 5, 4.9, 5.1, 2e9, 1e8);
  attach_roofline(r, made_profile());
  const nlohmann::json j = to_json(r);
  ASSERT_TRUE(j.contains("roofline"));
  Result back = result_from_json(j);
  ASSERT_TRUE(back.roofline);
  EXPECT_EQ(back.roofline->profile_id, r.roofline->profile_id);
  EXPECT_EQ(back.roofline->flags, r.roofline->flags);
  EXPECT_DOUBLE_EQ(back.roofline->floor_ms, r.roofline->floor_ms);
  EXPECT_EQ(back.roofline->bound, "compute");
  EXPECT_EQ(to_json(back).dump(), j.dump());
}

TEST(Roofline, ResultWithoutABlockReadsBackWithout) {
  Result r = made_result("8p", "candidate", 8.0, 5, 4.9, 5.1);
  const nlohmann::json j = to_json(r);
  EXPECT_FALSE(j.contains("roofline"));
  EXPECT_FALSE(result_from_json(j).roofline);
}

}  // namespace
}  // namespace opbench
