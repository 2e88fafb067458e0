// The kernel cache's entries, verified. A built shared object is put in place only with a record of
// its size and content hash; an entry whose object does not match its record (truncated by a full
// disk, a crash, a hand edit) is removed and rebuilt instead of being loaded as a "kernel" that
// fails. Builds write to temporary names in the cache folder and rename into place; temporaries
// that killed builds left behind are removed.
#pragma once

#include <filesystem>
#include <string>

namespace opbench::cpu {

class KernelCache {
 public:
  explicit KernelCache(std::filesystem::path dir);

  // True when `artifact` exists and matches its record; then *log is the build log kept with it.
  // A bad entry is removed and *note says why (the caller rebuilds).
  bool lookup(const std::filesystem::path& artifact, std::string* log, std::string* note) const;

  // A private name in the cache folder for a build of `artifact` by this process.
  std::filesystem::path temporary_for(const std::filesystem::path& artifact) const;

  // Puts a finished build in place: the log and the record first, then the object by rename, so a
  // kill at any point leaves either no entry or a whole one. Throws std::runtime_error when the
  // cache cannot be written.
  void commit(const std::filesystem::path& temporary, const std::filesystem::path& artifact, const std::string& log) const;

  // Removes temporaries of builds whose process is gone, and any older than a day.
  void remove_stale_temporaries() const;

  static std::filesystem::path record_path(const std::filesystem::path& artifact);
  static std::filesystem::path log_path(const std::filesystem::path& artifact);

 private:
  std::filesystem::path dir_;
};

}  // namespace opbench::cpu
