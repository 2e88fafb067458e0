#include "cluster/shard.h"

#include <charconv>

#include <fmt/format.h>

#include "core/error.h"

namespace opbench {
namespace {

bool parse_int(std::string_view text, int* value) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

Shard parse_shard(const std::string& text, const std::string& option) {
  const size_t slash = text.find('/');
  Shard s;
  if (slash == std::string::npos || !parse_int(std::string_view(text).substr(0, slash), &s.index) ||
      !parse_int(std::string_view(text).substr(slash + 1), &s.count))
    throw UsageError(fmt::format("{} expects I/N (shard I of N, numbered from 0), got '{}'", option, text));
  if (s.count < 1) throw UsageError(fmt::format("{} {}: the number of shards must be at least 1", option, text));
  if (s.index < 0 || s.index >= s.count)
    throw UsageError(fmt::format("{} {}: shards are numbered 0 to {} (like Slurm array task ids)", option, text, s.count - 1));
  return s;
}

}  // namespace opbench
