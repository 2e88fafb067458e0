#include "core/json_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "core/files.h"

namespace opbench {

std::string schema_version() { return fmt::format("{}.{}", kSchemaMajor, kSchemaMinor); }

nlohmann::json stamp_schema(nlohmann::json doc, const std::string& kind) {
  doc["schema"] = kind;
  doc["schema_version"] = schema_version();
  return doc;
}

void check_schema(const nlohmann::json& doc, const std::string& kind, const std::string& where) {
  if (!doc.is_object()) throw SchemaError(fmt::format("{}: not an opbench {} document (not a JSON object)", where, kind));
  const auto s = doc.find("schema");
  if (s == doc.end() || !s->is_string() || s->get<std::string>() != kind)
    throw SchemaError(fmt::format("{}: not an opbench {} document (schema is {})", where, kind, s == doc.end() ? "missing" : s->dump()));
  const auto v = doc.find("schema_version");
  int major = -1;
  if (v != doc.end() && v->is_string()) {
    try {
      major = std::stoi(v->get<std::string>());
    } catch (const std::exception&) {
    }
  } else if (v != doc.end() && v->is_number_integer()) {
    major = v->get<int>();  // the first round wrote a bare integer
  }
  if (major != kSchemaMajor)
    throw SchemaError(fmt::format("{}: {} schema version {} is not one this opbench reads (it reads {}.x); {}", where, kind,
                                  v == doc.end() ? "missing" : v->dump(), kSchemaMajor,
                                  major > kSchemaMajor ? "it was written by a newer opbench" : "re-run it with this opbench"));
}

std::string dump_json(const nlohmann::json& doc, int indent) {
  return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_text_atomic(const std::filesystem::path& path, const std::string& text) { write_file_atomic(path, {std::string_view(text)}); }

void write_file_atomic(const std::filesystem::path& path, std::initializer_list<std::string_view> pieces) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::random_device rd;
  const std::filesystem::path temp = dir / fmt::format(".{}.{:08x}.tmp", path.filename().string(), rd());
  auto fail = [&](const char* what, int err) {
    ::unlink(temp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {} failed: {}", path.string(), what, std::strerror(err)));
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  for (const std::string_view text : pieces) {
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : ENOSPC;
        ::close(fd);
        fail("write", err);
      }
      done += size_t(n);
    }
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("fsync", err);
  }
  if (::close(fd) != 0) fail("close", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("rename", errno);
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // the rename itself durable; best effort (some file systems refuse it)
    ::close(dfd);
  }
}

nlohmann::json read_json_document(const std::filesystem::path& path, const std::string& kind) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw std::runtime_error(fmt::format("{}: no such file", path.string()));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not valid JSON ({})", path.string(), e.what()));
  }
  check_schema(doc, kind, path.string());
  return doc;
}

}  // namespace opbench
