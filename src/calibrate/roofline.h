// A result's position under the machine's roofline: its arithmetic intensity, the fastest time the
// machine allows for its work (the floor), how close the measured time comes, and which roof binds.
#pragma once

#include "calibrate/machine_profile.h"
#include "harness/result.h"

namespace opbench {

using RooflinePosition = RooflineInfo;

// A measured median below floor_ms * kBelowFloorMargin is flagged below_roofline_floor. The margin
// absorbs calibration noise (a profile measured while other jobs ran reads low; tools/peaks and
// `opbench calibrate` agree within 10% on a quiet machine), so only a time the machine cannot
// deliver is flagged, not one that beat a pessimistic roof by a few percent.
inline constexpr double kBelowFloorMargin = 0.9;
inline constexpr const char* kBelowRooflineFloor = "below_roofline_floor";

// Computed from r.work (FLOPs, useful FLOPs, minimum bytes), r.threads and r.timing's median; the
// roofs are the profile's at r.threads (all its threads when r.threads is 0).
RooflinePosition roofline_position(const Result& r, const MachineProfile& profile);

// Sets r.roofline; returns true when the result is flagged below its floor (the harness may then
// call the result untrusted).
bool attach_roofline(Result& r, const MachineProfile& profile);

}  // namespace opbench
