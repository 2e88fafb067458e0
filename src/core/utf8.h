// Text that enters opbench from outside (kernel output, compiler logs, agent answers, HTTP bodies,
// file names) is not guaranteed to be UTF-8, and JSON must be. These helpers make it so at the
// boundary, and cut long text without splitting a character.
#pragma once

#include <string>
#include <string_view>

namespace opbench {

// True when `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool utf8_valid(std::string_view text);

// `text` with every ill-formed sequence replaced by U+FFFD (one per maximal ill-formed subpart, as
// Unicode recommends); well-formed text comes back unchanged.
std::string utf8_sanitize(std::string_view text);

// The longest prefix of utf8_sanitize(text) that fits in `max_bytes` and ends on a character
// boundary; when anything was cut, `marker` is appended (its bytes count against max_bytes).
std::string utf8_truncate(std::string_view text, size_t max_bytes, std::string_view marker = "\n...(truncated)");

}  // namespace opbench
