// Plain-text tables for the terminal: columns sized to their content, numbers right-aligned.
#pragma once

#include <string>
#include <vector>

namespace opbench {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);
  void add_row(std::vector<std::string> row);
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Number formatting shared by the views: 3 significant digits, "-" for missing values.
std::string format_ms(double ms);
std::string format_rate(double value);
std::string format_sci(double value);

}  // namespace opbench
