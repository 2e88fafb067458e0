// Reporters: one interface, one class per output format (console table, JSON, CSV, Markdown, HTML),
// in the manner of google/benchmark's reporters. Commands gather a ReportData and ask for a format
// by name; a new format is a new class and one line in make_reporter, not an edit of every command.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "report/report_data.h"

namespace opbench {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual std::string render(const ReportData& data) const = 0;
};

// "console", "json", "csv", "md" (Markdown) or "html". Throws UsageError for anything else.
std::unique_ptr<Reporter> make_reporter(const std::string& format);
const std::vector<std::string>& reporter_formats();

// Cell text shared by the text formats: numbers with 4 significant digits, "" for null.
std::string cell_text(const nlohmann::json& value);

class ConsoleReporter : public Reporter {
 public:
  std::string render(const ReportData& data) const override;
};
class JsonReporter : public Reporter {
 public:
  std::string render(const ReportData& data) const override;
};
class CsvReporter : public Reporter {
 public:
  std::string render(const ReportData& data) const override;
};
class MarkdownReporter : public Reporter {
 public:
  std::string render(const ReportData& data) const override;
};
class HtmlReporter : public Reporter {
 public:
  std::string render(const ReportData& data) const override;
};

}  // namespace opbench
