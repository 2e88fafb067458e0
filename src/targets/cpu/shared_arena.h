// Tensors in shared memory: one memfd holds N sets of a list of tensors. Each tensor starts on a
// page boundary and is followed by canary bytes up to the next page and then a guard page, which
// the worker maps inaccessible. The parent maps everything read-write.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "targets/target.h"

namespace opbench::cpu {

class SharedArena final : public BufferSet {
 public:
  SharedArena(const std::vector<TensorInstance>& tensors, int sets, const std::string& label);
  ~SharedArena() override;
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  int sets() const override { return sets_; }
  int tensors() const override { return int(tensors_.size()); }
  size_t bytes(int tensor) const override { return tensors_[size_t(tensor)].bytes(); }
  void write(int set, int tensor, const void* host, size_t bytes) override;
  void read(int set, int tensor, void* host, size_t bytes) const override;
  void write_part(int set, int tensor, size_t offset, const void* host, size_t bytes) override;
  void read_part(int set, int tensor, size_t offset, void* host, size_t bytes) const override;
  const std::byte* host_view(int set, int tensor) const override { return at(set, tensor); }
  void poison(int set) override;
  uint64_t digest(int set) const override;
  bool canaries_intact(int set, std::string* damaged_tensor) const override;
  void evict(int set) override;
  void poison_and_evict(int set) override;

  // What a worker needs to map the arena and find its tensors.
  int fd() const { return fd_; }
  const std::string& label() const { return label_; }
  size_t total_bytes() const { return total_; }
  size_t offset(int set, int tensor) const { return slot(set, tensor).offset; }
  size_t canary_bytes(int set, int tensor) const { return slot(set, tensor).canary_end - slot(set, tensor).canary_begin; }
  const TensorInstance& tensor(int i) const { return tensors_[size_t(i)]; }
  const std::vector<std::pair<size_t, size_t>>& guard_ranges() const { return guards_; }

 private:
  struct Slot {
    size_t offset = 0, canary_begin = 0, canary_end = 0;
  };
  const Slot& slot(int set, int tensor) const { return slots_[size_t(set) * tensors_.size() + size_t(tensor)]; }
  std::byte* at(int set, int tensor) const { return base_ + slot(set, tensor).offset; }
  void check(int set, int tensor, size_t bytes, size_t offset = 0, bool whole = true) const;

  std::vector<TensorInstance> tensors_;
  std::string label_;
  int sets_ = 0;
  int fd_ = -1;
  size_t total_ = 0;
  std::byte* base_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<std::pair<size_t, size_t>> guards_;  // (offset, length)
};

inline constexpr unsigned char kCanaryByte = 0xCB;

}  // namespace opbench::cpu
