#include "targets/cpu/kernel_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "core/utf8.h"

namespace opbench::cpu {
namespace {

// Temporaries are named ".<artifact file name>.<pid>.build"; the pid tells whether the build that
// owns one may still be running.
constexpr const char* kTemporarySuffix = ".build";

std::string content_hash(const std::filesystem::path& file) { return xxh3_128_hex(read_file(file)); }

bool process_alive(long pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }

}  // namespace

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path KernelCache::record_path(const std::filesystem::path& artifact) {
  return std::filesystem::path(artifact.string() + ".record");
}

std::filesystem::path KernelCache::log_path(const std::filesystem::path& artifact) {
  std::filesystem::path p = artifact;
  return p.replace_extension(".log");
}

bool KernelCache::lookup(const std::filesystem::path& artifact, std::string* log, std::string* note) const {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(artifact, ec)) return false;
  std::string why;
  const std::string record_text = read_file(record_path(artifact));
  const nlohmann::json record = nlohmann::json::parse(record_text, nullptr, false);
  const uint64_t size = std::filesystem::file_size(artifact, ec);
  if (record.is_discarded() || !record.is_object() || !record.contains("size") || !record.contains("xxh3")) {
    why = "it has no valid record of its size and hash";
  } else if (ec || record["size"].get<uint64_t>() != size) {
    why = fmt::format("its size is {} bytes, its record says {}", ec ? 0 : size, record["size"].get<uint64_t>());
  } else if (record["xxh3"].get<std::string>() != content_hash(artifact)) {
    why = "its content does not match the hash recorded when it was built";
  }
  if (!why.empty()) {
    std::filesystem::remove(artifact, ec);
    std::filesystem::remove(record_path(artifact), ec);
    if (note) *note = fmt::format("cached {} was rebuilt: {}", artifact.filename().string(), why);
    return false;
  }
  if (log) *log = read_file(log_path(artifact));
  return true;
}

std::filesystem::path KernelCache::temporary_for(const std::filesystem::path& artifact) const {
  return dir_ / fmt::format(".{}.{}{}", artifact.filename().string(), ::getpid(), kTemporarySuffix);
}

void KernelCache::commit(const std::filesystem::path& temporary, const std::filesystem::path& artifact, const std::string& log) const {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(temporary, ec);
  if (ec) throw std::runtime_error(fmt::format("the kernel build left no object at {}: {}", temporary.string(), ec.message()));
  // The object's own bytes must be on disk before the rename publishes it.
  if (const int fd = ::open(temporary.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  write_text_atomic(log_path(artifact), utf8_sanitize(log));
  write_json_atomic(record_path(artifact), {{"size", size}, {"xxh3", content_hash(temporary)}});
  std::filesystem::rename(temporary, artifact, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw std::runtime_error(fmt::format("cannot put {} into the kernel cache: {}", artifact.string(), ec.message()));
  }
}

void KernelCache::remove_stale_temporaries() const {
  std::error_code ec;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.front() != '.') continue;
    std::error_code age_ec;
    const auto age = now - std::filesystem::last_write_time(it->path(), age_ec);
    const bool old = !age_ec && age > std::chrono::hours(24);
    bool orphan = false;
    if (name.size() > std::string(kTemporarySuffix).size() && name.ends_with(kTemporarySuffix)) {
      const std::string stem = name.substr(0, name.size() - std::string(kTemporarySuffix).size());
      const size_t dot = stem.rfind('.');
      orphan = dot != std::string::npos && !process_alive(std::atol(stem.c_str() + dot + 1));
    } else if (name.ends_with(".tmp")) {
      // write_text_atomic's temporaries live for milliseconds: an hour-old one is a leftover.
      orphan = !age_ec && age > std::chrono::hours(1);
    } else {
      continue;
    }
    if (orphan || old) std::filesystem::remove(it->path(), age_ec);
  }
}

}  // namespace opbench::cpu
