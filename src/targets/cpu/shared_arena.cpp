#include "targets/cpu/shared_arena.h"

#include "core/hash.h"
#include "core/parallel.h"
#include "core/poison.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace opbench::cpu {
namespace {

size_t page_size() { return size_t(sysconf(_SC_PAGESIZE)); }
size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

constexpr size_t kCacheLine = 64;

// Tensors above one chunk are poisoned, hashed and evicted by several threads, a chunk at a time:
// both workers are frozen while the parent does this, so their cores are idle (at 12p's cpu size,
// 512 MiB in and 512 MiB out, hashing, copying and comparing were most of the parent's samples in perf).
constexpr size_t kChunkBytes = size_t(8) << 20;

int parent_threads() {
  static const int n = [] {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    const int usable = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    return std::clamp(usable, 1, 8);
  }();
  return n;
}

// fn(chunk index, offset, length) for every kChunkBytes piece of [0, bytes), spread over threads.
template <class Fn>
void for_each_chunk(size_t bytes, Fn fn) {
  const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  parallel_for(chunks, parent_threads(), [&](size_t c, size_t) { fn(c, c * kChunkBytes, std::min(kChunkBytes, bytes - c * kChunkBytes)); });
}

bool has_clflushopt() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23));
}

// clflushopt flushes lines in parallel; clflush (every x86-64) one after another.
__attribute__((target("clflushopt"))) void flush_lines_opt(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; i += kCacheLine) _mm_clflushopt(const_cast<std::byte*>(p + i));
}

void flush_lines(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; i += kCacheLine) _mm_clflush(p + i);
}

// The poison pattern with streaming stores: the lines go to memory without being read first, and
// any cached copy is dropped, so the tensor is out of the caches as evict() would leave it, at half
// the traffic of stores plus flushes (12p's cpu size: two 512 MiB outputs a timed pair). `p` is
// 16-byte aligned; the last n % 16 bytes are stored normally and their line flushed.
void stream_poison(std::byte* p, size_t n) {
  const __m128i pattern = _mm_set1_epi32(int(kPoisonWord));
  const size_t vectors = n / 16;
  for (size_t i = 0; i < vectors; ++i) _mm_stream_si128(reinterpret_cast<__m128i*>(p + 16 * i), pattern);
  if (n % 16) {
    fill_poison(p + 16 * vectors, n % 16);
    _mm_clflush(p + 16 * vectors);
  }
  _mm_sfence();  // streaming stores are ordered only by a fence on the thread that issued them
}

}  // namespace

SharedArena::SharedArena(const std::vector<TensorInstance>& tensors, int sets, const std::string& label)
    : tensors_(tensors), label_(label), sets_(sets) {
  const size_t page = page_size();
  size_t cursor = page;  // a guard page before the first tensor
  guards_.push_back({0, page});
  for (int s = 0; s < sets; ++s) {
    for (const auto& t : tensors_) {
      Slot slot;
      slot.offset = cursor;
      slot.canary_begin = cursor + t.bytes();
      slot.canary_end = round_up(slot.canary_begin + 64, page);  // at least 64 canary bytes
      slots_.push_back(slot);
      guards_.push_back({slot.canary_end, page});
      cursor = slot.canary_end + page;
    }
  }
  total_ = cursor;
  fd_ = memfd_create(("opbench-" + label).c_str(), MFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(fmt::format("memfd_create failed: {}", strerror(errno)));
  if (ftruncate(fd_, off_t(total_)) != 0)
    throw std::runtime_error(fmt::format("cannot size shared memory to {} bytes: {}", total_, strerror(errno)));
  void* p = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap of {} bytes failed: {}", total_, strerror(errno)));
  base_ = static_cast<std::byte*>(p);
  for (const auto& slot : slots_) std::memset(base_ + slot.canary_begin, kCanaryByte, slot.canary_end - slot.canary_begin);
}

SharedArena::~SharedArena() {
  if (base_) munmap(base_, total_);
  if (fd_ >= 0) close(fd_);
}

void SharedArena::check(int set, int tensor, size_t n, size_t offset, bool whole) const {
  const bool ok = set >= 0 && set < sets_ && tensor >= 0 && tensor < tensors() &&
                  (whole ? n == bytes(tensor) && offset == 0 : offset <= bytes(tensor) && n <= bytes(tensor) - offset);
  if (!ok) throw std::logic_error(fmt::format("shared arena: set {} tensor {} with {} bytes at {} is out of range", set, tensor, n, offset));
}

void SharedArena::write_part(int set, int tensor, size_t offset, const void* host, size_t n) {
  check(set, tensor, n, offset, false);
  std::memcpy(at(set, tensor) + offset, host, n);
}

void SharedArena::read_part(int set, int tensor, size_t offset, void* host, size_t n) const {
  check(set, tensor, n, offset, false);
  std::memcpy(host, at(set, tensor) + offset, n);
}

void SharedArena::write(int set, int tensor, const void* host, size_t n) {
  check(set, tensor, n);
  std::memcpy(at(set, tensor), host, n);
}

void SharedArena::read(int set, int tensor, void* host, size_t n) const {
  check(set, tensor, n);
  std::memcpy(host, at(set, tensor), n);
}

void SharedArena::poison(int set) {
  for (int t = 0; t < tensors(); ++t) {
    std::byte* base = at(set, t);
    // Chunks are multiples of the 4-byte pattern, so the pieces join into the whole pattern.
    for_each_chunk(bytes(t), [&](size_t, size_t offset, size_t n) { fill_poison(base + offset, n); });
  }
}

void SharedArena::evict(int set) {
  static const bool opt = has_clflushopt();
  for (int t = 0; t < tensors(); ++t) {
    const std::byte* begin = at(set, t);
    // From the line that holds the first byte to the one that holds the last.
    const auto first = reinterpret_cast<uintptr_t>(begin) & ~uintptr_t(kCacheLine - 1);
    const size_t n = reinterpret_cast<uintptr_t>(begin) + bytes(t) - first;
    const auto* from = reinterpret_cast<const std::byte*>(first);
    for_each_chunk(n, [&](size_t, size_t offset, size_t length) {
      if (opt) flush_lines_opt(from + offset, length);
      else flush_lines(from + offset, length);
      _mm_sfence();  // clflushopt is ordered only by a fence on the thread that issued it
    });
  }
  _mm_sfence();  // the flushes are done before the batch's request goes out
}

void SharedArena::poison_and_evict(int set) {
  for (int t = 0; t < tensors(); ++t) {
    std::byte* base = at(set, t);  // page-aligned; chunks are multiples of 16 bytes and of the pattern
    for_each_chunk(bytes(t), [&](size_t, size_t offset, size_t n) { stream_poison(base + offset, n); });
  }
}

uint64_t SharedArena::digest(int set) const {
  uint64_t h = 0;
  for (int t = 0; t < tensors(); ++t) {
    const std::byte* base = at(set, t);
    if (bytes(t) <= kChunkBytes) {
      h = h * 31 + xxh3_64(base, bytes(t));
      continue;
    }
    // A large tensor's digest is that of its chunks' hashes, whatever the number of threads.
    std::vector<uint64_t> parts((bytes(t) + kChunkBytes - 1) / kChunkBytes);
    for_each_chunk(bytes(t), [&](size_t c, size_t offset, size_t n) { parts[c] = xxh3_64(base + offset, n); });
    h = h * 31 + xxh3_64(parts.data(), parts.size() * sizeof(uint64_t));
  }
  return h;
}

bool SharedArena::canaries_intact(int set, std::string* damaged_tensor) const {
  for (int t = 0; t < tensors(); ++t) {
    const Slot& s = slot(set, t);
    for (size_t i = s.canary_begin; i < s.canary_end; ++i) {
      if (static_cast<unsigned char>(base_[i]) != kCanaryByte) {
        if (damaged_tensor) *damaged_tensor = fmt::format("{} (byte {} past its end)", tensors_[size_t(t)].name, i - s.canary_begin);
        return false;
      }
    }
  }
  return true;
}

}  // namespace opbench::cpu
