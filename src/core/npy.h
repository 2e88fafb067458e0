// Writes NumPy .npy files (format 1.0), so inputs and outputs can be read by numpy, JAX, PyTorch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/dtype.h"

namespace opbench {

void write_npy(const std::filesystem::path& path, const void* data, DType dtype, const std::vector<int64_t>& shape);

// Reads back a file written by write_npy (used by tests and by tools that compare dumps).
std::vector<char> read_npy(const std::filesystem::path& path, DType* dtype, std::vector<int64_t>* shape);

}  // namespace opbench
