// Hashes: xxh3 for fast content checks and cache keys, SHA-256 for the identity of a submitted
// source in results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace opbench {

uint64_t xxh3_64(const void* data, size_t bytes);
std::string xxh3_128_hex(std::string_view data);
std::string sha256_hex(std::string_view data);

}  // namespace opbench
