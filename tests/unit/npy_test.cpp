#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/npy.h"

namespace opbench {

TEST(Npy, RoundTripsWithAlignedHeader) {
  auto path = std::filesystem::temp_directory_path() / "opbench_npy_test.npy";
  std::vector<float> data{1, 2, 3, 4, 5, 6};
  write_npy(path, data.data(), DType::f32, {2, 3});
  std::ifstream in(path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(raw.size(), 10u);
  uint16_t header_len;
  std::memcpy(&header_len, raw.data() + 8, 2);
  EXPECT_EQ((10 + header_len) % 64, 0u);  // numpy's alignment rule
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<char> payload = read_npy(path, &dtype, &shape);
  EXPECT_EQ(dtype, DType::f32);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(payload.size(), data.size() * 4);
  EXPECT_EQ(std::memcmp(payload.data(), data.data(), payload.size()), 0);
  std::filesystem::remove(path);
}

TEST(Npy, WritesOneDimensionalShapeWithTrailingComma) {
  auto path = std::filesystem::temp_directory_path() / "opbench_npy_1d.npy";
  std::vector<int32_t> data{7, 8, 9};
  write_npy(path, data.data(), DType::i32, {3});
  std::ifstream in(path, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(raw.find("'shape': (3,)"), std::string::npos);
  EXPECT_NE(raw.find("'<i4'"), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace opbench

namespace opbench {

TEST(Npy, ATruncatedFileIsAnErrorNotASmallerArray) {
  auto path = std::filesystem::temp_directory_path() / "opbench_npy_truncated.npy";
  std::vector<float> data(100, 1.5f);
  write_npy(path, data.data(), DType::f32, {10, 10});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 7);
  DType dtype;
  std::vector<int64_t> shape;
  EXPECT_THROW(read_npy(path, &dtype, &shape), std::runtime_error);
  std::filesystem::resize_file(path, 20);  // inside the header
  EXPECT_THROW(read_npy(path, &dtype, &shape), std::runtime_error);
  std::filesystem::remove(path);
}

TEST(Npy, AWriteIntoAMissingFolderFailsAndLeavesNothing) {
  auto dir = std::filesystem::temp_directory_path() / "opbench_npy_missing_dir";
  std::filesystem::remove_all(dir);
  float v = 1;
  EXPECT_THROW(write_npy(dir / "x.npy", &v, DType::f32, {1}), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace opbench
