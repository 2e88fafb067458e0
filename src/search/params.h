// Tunable parameters a kernel declares in its source, one per line:
//
//   // opbench:param TILE_M 32 64 96 128
//
// and reads as a macro with a default:
//
//   #ifndef TILE_M
//   #define TILE_M 64
//   #endif
//
// The tuner builds each point with -DTILE_M=96 ...; without a -D the source's default applies.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace opbench {

struct TunableParam {
  std::string name;
  std::vector<std::string> values;  // in the order declared
  std::string default_value;        // from the #define, else the first value
};

// A point of the parameter space: a value for every parameter.
using ParamPoint = std::map<std::string, std::string>;

// Parses the declarations of `source_text`. Throws UsageError on a malformed line (no values,
// duplicates, a default outside the declared values).
std::vector<TunableParam> parse_tunable_params(const std::string& source_text);

ParamPoint default_point(const std::vector<TunableParam>& params);
std::string describe_point(const ParamPoint& point);  // "TILE_M=64 UNROLL=2"
std::string point_key(const ParamPoint& point);       // canonical JSON object, the cache key
ParamPoint point_from_key(const std::string& key);
double space_size(const std::vector<TunableParam>& params);

}  // namespace opbench
