#include "core/utf8.h"

namespace opbench {
namespace {

// Examines the sequence starting at text[i]. Returns its length when well-formed, else 0 and sets
// `bad` to the length of the maximal ill-formed subpart there (a lead byte and the continuation
// bytes that could still have completed it; at least 1), as Unicode recommends for replacement.
size_t sequence_length(std::string_view text, size_t i, size_t* bad = nullptr) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    if (bad) *bad = 1;
    return 0;
  }
  size_t k = 1;
  for (; k < n && i + k < text.size(); ++k) {
    const unsigned char low = k == 1 ? lo : 0x80, high = k == 1 ? hi : 0xBF;
    if (byte(i + k) < low || byte(i + k) > high) break;
  }
  if (k == n) return n;
  if (bad) *bad = k;
  return 0;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

bool utf8_valid(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t bad = 1;
    const size_t n = sequence_length(text, i, &bad);
    if (n) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append(kReplacement);
      i += bad;
    }
  }
  return out;
}

std::string utf8_truncate(std::string_view text, size_t max_bytes, std::string_view marker) {
  std::string clean = utf8_sanitize(text);
  if (clean.size() <= max_bytes) return clean;
  const size_t room = max_bytes > marker.size() ? max_bytes - marker.size() : 0;
  size_t cut = room;
  while (cut > 0 && (static_cast<unsigned char>(clean[cut]) & 0xC0) == 0x80) --cut;  // back to a boundary
  clean.resize(cut);
  clean.append(marker.substr(0, max_bytes - cut));
  return clean;
}

}  // namespace opbench
