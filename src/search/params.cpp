#include "search/params.h"

#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace opbench {

std::vector<TunableParam> parse_tunable_params(const std::string& text) {
  std::vector<TunableParam> params;
  std::istringstream in(text);
  static const std::regex declaration(R"(^\s*//\s*opbench:param\s+([A-Za-z_][A-Za-z0-9_]*)\s*(.*)$)");
  std::set<std::string> seen;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    std::smatch m;
    if (!std::regex_match(line, m, declaration)) continue;
    TunableParam p;
    p.name = m[1];
    std::istringstream values(m[2].str());
    for (std::string v; values >> v;) p.values.push_back(v);
    if (p.values.empty()) throw UsageError(fmt::format("line {}: parameter {} declares no values", line_number, p.name));
    if (!seen.insert(p.name).second) throw UsageError(fmt::format("line {}: parameter {} declared twice", line_number, p.name));
    params.push_back(p);
  }
  for (auto& p : params) {
    const std::regex define("#\\s*define\\s+" + p.name + "\\s+(\\S+)");
    std::smatch m;
    if (std::regex_search(text, m, define)) {
      p.default_value = m[1];
      if (std::find(p.values.begin(), p.values.end(), p.default_value) == p.values.end())
        throw UsageError(fmt::format("parameter {}: the default {} is not among its declared values", p.name, p.default_value));
    } else {
      p.default_value = p.values.front();
    }
  }
  return params;
}

ParamPoint default_point(const std::vector<TunableParam>& params) {
  ParamPoint point;
  for (const auto& p : params) point[p.name] = p.default_value;
  return point;
}

std::string describe_point(const ParamPoint& point) {
  std::string out;
  for (const auto& [k, v] : point) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out.empty() ? "(defaults)" : out;
}

std::string point_key(const ParamPoint& point) { return nlohmann::json(point).dump(); }

ParamPoint point_from_key(const std::string& key) { return nlohmann::json::parse(key).get<ParamPoint>(); }

double space_size(const std::vector<TunableParam>& params) {
  double n = 1;
  for (const auto& p : params) n *= double(p.values.size());
  return n;
}

}  // namespace opbench
