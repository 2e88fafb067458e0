#include "report/table.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace opbench {
namespace {

// Display width in terminal columns: count UTF-8 code points, not bytes.
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

bool looks_numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+' || s[0] == '.');
}

}  // namespace

TextTable::TextTable(std::vector<std::string> header) : header_(std::move(header)) {}

void TextTable::add_row(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string TextTable::render() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = display_width(header_[c]);
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& row, bool is_header) {
    std::string out;
    for (size_t c = 0; c < row.size(); ++c) {
      size_t pad = width[c] - display_width(row[c]);
      bool right = !is_header && c > 0 && looks_numeric(row[c]);
      if (c) out += "  ";
      if (right) out += std::string(pad, ' ') + row[c];
      else out += row[c] + (c + 1 < row.size() ? std::string(pad, ' ') : "");
    }
    return out + "\n";
  };
  std::string out = line(header_, true);
  size_t total = 0;
  for (size_t w : width) total += w;
  out += std::string(total + 2 * (width.size() - 1), '-') + "\n";
  for (const auto& row : rows_) out += line(row, false);
  return out;
}

std::string format_ms(double ms) {
  if (!std::isfinite(ms) || ms <= 0) return "-";
  if (ms >= 100) return fmt::format("{:.1f}", ms);
  if (ms >= 1) return fmt::format("{:.2f}", ms);
  return fmt::format("{:.4f}", ms);
}

std::string format_rate(double v) {
  if (!std::isfinite(v) || v <= 0) return "-";
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

std::string format_sci(double v) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.3g}", v);
}

}  // namespace opbench
