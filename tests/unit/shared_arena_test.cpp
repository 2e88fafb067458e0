// The cpu target's shared arena: poison_and_evict (streaming stores) leaves exactly the bytes
// poison() leaves, at every tail length, and touches no canary byte.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/poison.h"
#include "targets/cpu/shared_arena.h"

namespace opbench::cpu {
namespace {

TensorInstance tensor(const char* name, DType dtype, int64_t n) {
  TensorInstance t;
  t.name = name;
  t.dtype = dtype;
  t.shape = {n};
  return t;
}

TEST(SharedArena, PoisonAndEvictWritesWhatPoisonWritesAndNoCanary) {
  // f32 tails of 0, 4, 8 and 12 bytes past a 16-byte vector, a bf16 one of 2, and one over a chunk.
  std::vector<TensorInstance> ts = {tensor("a", DType::f32, 1024), tensor("b", DType::f32, 1001), tensor("c", DType::f32, 1002),
                                    tensor("d", DType::f32, 1003), tensor("e", DType::bf16, 1001),
                                    tensor("f", DType::f32, (int64_t(9) << 20) / 4 + 3)};
  SharedArena streamed(ts, 2, "test-streamed"), plain(ts, 2, "test-plain");
  for (int set = 0; set < 2; ++set)
    for (int t = 0; t < int(ts.size()); ++t) {
      std::vector<unsigned char> junk(ts[size_t(t)].bytes(), 0x5A);
      streamed.write(set, t, junk.data(), junk.size());
      plain.write(set, t, junk.data(), junk.size());
    }
  streamed.poison_and_evict(1);
  plain.poison(1);
  for (int t = 0; t < int(ts.size()); ++t) {
    const size_t n = ts[size_t(t)].bytes();
    std::vector<unsigned char> got(n), want(n);
    streamed.read(1, t, got.data(), n);
    plain.read(1, t, want.data(), n);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), n), 0) << ts[size_t(t)].name;
    uint32_t first;
    std::memcpy(&first, got.data(), 4);
    EXPECT_EQ(first, kPoisonWord) << ts[size_t(t)].name;
    streamed.read(0, t, got.data(), n);  // the other set is left alone
    EXPECT_EQ(got[0], 0x5A);
    EXPECT_EQ(got[n - 1], 0x5A);
  }
  std::string damaged;
  EXPECT_TRUE(streamed.canaries_intact(1, &damaged)) << damaged;
  EXPECT_TRUE(streamed.canaries_intact(0, &damaged)) << damaged;
}

}  // namespace
}  // namespace opbench::cpu
