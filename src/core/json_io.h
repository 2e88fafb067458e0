// Every JSON document opbench writes carries {"schema": KIND, "schema_version": "MAJOR.MINOR"} and
// is written atomically; readers check the kind and refuse a major version they do not know.
// Adding a field is a minor version; renaming or removing one, or changing a meaning, is a major.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string_view>
#include <string>

#include <nlohmann/json.hpp>

namespace opbench {

// The one version of every document kind (result, run, search state and summary, leaderboard,
// tune store rows, machine profile).
inline constexpr int kSchemaMajor = 2;
inline constexpr int kSchemaMinor = 1;  // 2.1: work.floor_flops, work.floor_bytes, roofline.roof_ms
std::string schema_version();  // "2.1"

// Adds "schema" and "schema_version" to `doc` (an object) and returns it.
nlohmann::json stamp_schema(nlohmann::json doc, const std::string& kind);

// Throws SchemaError when `doc` is not of `kind` or has a major version this program does not read;
// `where` (a path) goes into the message.
struct SchemaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void check_schema(const nlohmann::json& doc, const std::string& kind, const std::string& where);

// JSON text that is always valid UTF-8 (invalid bytes in strings become U+FFFD rather than aborting).
std::string dump_json(const nlohmann::json& doc, int indent = 2);

// Writes `text` to `path` through a temporary file in the same folder, fsync, rename and a sync of
// the folder: a reader, a crash or a full disk never leaves half a file, and the old file stays
// intact when writing fails. Throws std::runtime_error naming the path and the system's reason.
void write_text_atomic(const std::filesystem::path& path, const std::string& text);
// The same for binary data given in pieces (a header and a tensor), written one after the other.
void write_file_atomic(const std::filesystem::path& path, std::initializer_list<std::string_view> pieces);
inline void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& doc) {
  write_text_atomic(path, dump_json(doc) + "\n");
}

// Parses the JSON file at `path` and checks its schema; throws SchemaError (bad kind or version)
// or std::runtime_error (unreadable, not JSON) naming the path.
nlohmann::json read_json_document(const std::filesystem::path& path, const std::string& kind);

}  // namespace opbench
