#include "core/hash.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <fmt/format.h>

namespace opbench {

uint64_t xxh3_64(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

std::string xxh3_128_hex(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

}  // namespace opbench
