// UTF-8 repair and the atomic, versioned JSON writer: what enters from outside must always come out
// as valid JSON, and a failed write must leave nothing behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "core/files.h"
#include "core/json_io.h"
#include "core/utf8.h"

namespace opbench {
namespace {

TEST(Utf8, ValidTextIsUnchanged) {
  const std::string text = "plain ascii, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80";
  EXPECT_TRUE(utf8_valid(text));
  EXPECT_EQ(utf8_sanitize(text), text);
}

TEST(Utf8, IllFormedBytesBecomeReplacementCharacters) {
  EXPECT_EQ(utf8_sanitize("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_sanitize("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");        // overlong
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(utf8_sanitize("x\xE2\x82"), "x\xEF\xBF\xBD");                  // cut mid-character
  EXPECT_FALSE(utf8_valid("\xF5\x80\x80\x80"));
  EXPECT_TRUE(utf8_valid(utf8_sanitize(std::string("\x80\x81\xFE\xC3", 4))));
}

TEST(Utf8, TruncationEndsOnACharacterBoundary) {
  const std::string euros = "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC";  // three 3-byte characters
  const std::string cut = utf8_truncate(euros, 5, "");
  EXPECT_EQ(cut, "\xE2\x82\xAC");
  EXPECT_TRUE(utf8_valid(utf8_truncate(euros, 7, "...")));
  EXPECT_LE(utf8_truncate(euros, 7, "...").size(), 7u);
  EXPECT_EQ(utf8_truncate("short", 100), "short");
}

TEST(JsonIo, InvalidUtf8InAStringStillDumps) {
  nlohmann::json j = {{"log", std::string("bad \xFF byte")}};
  std::string text;
  ASSERT_NO_THROW(text = dump_json(j));
  EXPECT_TRUE(utf8_valid(text));
  EXPECT_NE(text.find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(JsonIo, SchemaIsStampedAndChecked) {
  auto doc = stamp_schema({{"x", 1}}, "opbench.result");
  EXPECT_EQ(doc["schema_version"], schema_version());
  EXPECT_NO_THROW(check_schema(doc, "opbench.result", "mem"));
  EXPECT_THROW(check_schema(doc, "opbench.run", "mem"), SchemaError);
  doc["schema_version"] = "99.0";
  try {
    check_schema(doc, "opbench.result", "r.json");
    FAIL() << "a newer major version was accepted";
  } catch (const SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("newer opbench"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("r.json"), std::string::npos) << e.what();
  }
}

TEST(JsonIo, AtomicWriteReplacesAndLeavesNoTemporaries) {
  const auto dir = std::filesystem::temp_directory_path() / ("opbench-atomic-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_text_atomic(dir / "a.json", "first");
  write_text_atomic(dir / "a.json", "second");
  EXPECT_EQ(read_file(dir / "a.json"), "second");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);
  // A folder that does not exist: an error naming the path, nothing written.
  EXPECT_THROW(write_text_atomic(dir / "missing" / "b.json", "x"), std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace opbench
