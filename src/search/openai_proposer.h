// The built-in proposer for OpenAI-compatible chat-completions endpoints (`--proposer openai:MODEL`).
// Base URL from $OPBENCH_OPENAI_BASE_URL or $OPENAI_BASE_URL (default https://api.openai.com/v1),
// key from $OPENAI_API_KEY. See docs/proposer-protocol.md.
#pragma once

#include <memory>
#include <string>

#include "search/proposer.h"

namespace opbench {

std::unique_ptr<Proposer> make_openai_proposer(const std::string& model);

}  // namespace opbench
