// A result's position under the machine's roofline: its arithmetic intensity, the fastest time the
// machine allows for its work (the floor), how close the measured time comes, and which roof binds.
#pragma once

#include "calibrate/machine_profile.h"
#include "harness/result.h"

namespace opbench {

using RooflinePosition = RooflineInfo;

// A measured median below floor_ms is flagged below_roofline_floor, the same rule (and flag name) as
// the harness's verdicts (src/harness/session.cpp), which call a result untrusted only under half the
// floor: cache-resident data can beat the DRAM roof at small sizes, and a profile measured while
// other jobs ran reads low.
inline constexpr double kBelowFloorMargin = 1.0;
inline constexpr const char* kBelowRooflineFloor = "below_roofline_floor";

// Computed from r.work (FLOPs, useful FLOPs, minimum bytes), r.threads and r.timing's median; the
// roofs are the profile's at r.threads (all its threads when r.threads is 0).
RooflinePosition roofline_position(const Result& r, const MachineProfile& profile);

// Sets r.roofline; returns true when the result is flagged below its floor (the harness may then
// call the result untrusted).
bool attach_roofline(Result& r, const MachineProfile& profile);

}  // namespace opbench
