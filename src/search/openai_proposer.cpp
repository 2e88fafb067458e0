#include "search/openai_proposer.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <curl/curl.h>
#include <fmt/format.h>

#include "core/error.h"

namespace opbench {
namespace {

// The prompt (assembled elsewhere) carries every instruction; the system text only sets the role.
constexpr const char* kSystemPrompt =
    "You write high-performance C++ kernels for the opbench harness. "
    "Follow the output format the user asks for exactly.";
constexpr int kMaxRetries = 3;
constexpr size_t kBodyExcerpt = 300;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

double env_number(const char* name, double fallback, bool allow_zero) {
  auto v = env(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    double x = std::stod(*v, &used);
    if (used == v->size() && (x > 0 || (allow_zero && x == 0))) return x;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("${} must be a {} number, got '{}'", name, allow_zero ? "non-negative" : "positive", *v));
}

std::string trim(const std::string& s) {
  auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  auto b = std::find_if_not(s.begin(), s.end(), is_space);
  auto e = std::find_if_not(s.rbegin(), s.rend(), is_space).base();
  return b < e ? std::string(b, e) : std::string();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// The host part of a URL, lowercased and without brackets or port: enough to recognise loopback.
std::string url_host(const std::string& url) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = url.find_first_of("/?#", start);
  std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (size_t at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
  std::string host;
  if (!authority.empty() && authority[0] == '[') {
    host = authority.substr(1, authority.find(']') - 1);
  } else {
    host = authority.substr(0, authority.find(':'));
  }
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return host;
}

// Local servers (vLLM, llama.cpp, test doubles) usually need no key, and must never go through a proxy.
bool is_loopback(const std::string& url) {
  const std::string host = url_host(url);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// A fence opener or closer: at most three spaces of indent, then three or more backticks.
struct Fence {
  size_t ticks = 0;
  std::string info;  // first word of the info string, lowercased
};

std::optional<Fence> parse_fence(const std::string& line) {
  size_t indent = line.find_first_not_of(' ');
  if (indent == std::string::npos || indent > 3) return std::nullopt;
  size_t ticks = 0;
  while (indent + ticks < line.size() && line[indent + ticks] == '`') ++ticks;
  if (ticks < 3) return std::nullopt;
  std::string info = trim(line.substr(indent + ticks));
  info = info.substr(0, info.find_first_of(" \t{"));
  std::transform(info.begin(), info.end(), info.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return Fence{ticks, info};
}

bool is_cpp_info(const std::string& info) { return info.empty() || info == "cpp" || info == "c++" || info == "cc"; }

// Answers often quote a fragment before the full kernel, so the last C++ block is the candidate.
// Blocks of other languages are still tracked so their contents are never mistaken for fences.
// An unclosed block (an answer cut off at max_tokens) is not a kernel.
std::optional<std::string> last_cpp_block(const std::string& content) {
  std::optional<std::string> found;
  std::optional<Fence> open;
  std::string body;
  for (const std::string& line : split_lines(content)) {
    auto fence = parse_fence(line);
    if (!open) {
      if (fence) open = fence, body.clear();
      continue;
    }
    if (fence && fence->info.empty() && fence->ticks >= open->ticks && trim(line).find_first_not_of('`') == std::string::npos) {
      if (is_cpp_info(open->info)) found = body;
      open.reset();
      continue;
    }
    body += line;
    body += '\n';
  }
  return found;
}

// Text before the first "### Plan" heading is preamble and is dropped; empty sections are skipped.
std::vector<std::string> split_plans(const std::string& content) {
  std::vector<std::string> plans;
  std::optional<std::string> current;
  auto flush = [&] {
    if (current && !trim(*current).empty()) plans.push_back(trim(*current));
  };
  for (const std::string& line : split_lines(content)) {
    if (line.rfind("### Plan", 0) == 0) {
      flush();
      current = std::string();
    } else if (current) {
      *current += line;
      *current += '\n';
    }
  }
  flush();
  if (!current && !trim(content).empty()) plans.push_back(trim(content));
  return plans;
}

struct HttpReply {
  long status = 0;
  std::string body;
};

// A transport failure (no connection, timeout, reset): retried like a 5xx.
struct TransportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Completion {
  std::string content;
  std::string finish_reason;
  int64_t prompt_tokens = 0, completion_tokens = 0;
};

void init_curl_once() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) throw std::runtime_error(fmt::format("curl_global_init failed: {}", curl_easy_strerror(rc)));
}

size_t append_to_string(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

int64_t token_count(const nlohmann::json& usage, const char* key) {
  if (!usage.is_object() || !usage.contains(key) || !usage[key].is_number_integer()) return 0;
  return usage[key].get<int64_t>();
}

Completion parse_completion(const std::string& body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(fmt::format("the endpoint answered with invalid JSON ({}): {}", e.what(), body.substr(0, kBodyExcerpt)));
  }
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    throw std::runtime_error(fmt::format("the endpoint's answer has no choices[0]: {}", body.substr(0, kBodyExcerpt)));
  const nlohmann::json& choice = j["choices"][0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
    throw std::runtime_error(fmt::format("the endpoint's answer has no choices[0].message: {}", body.substr(0, kBodyExcerpt)));
  const nlohmann::json& message = choice["message"];
  if (!message.contains("content") || !message["content"].is_string())
    throw std::runtime_error(fmt::format("the endpoint's answer has no choices[0].message.content (a string): {}", body.substr(0, kBodyExcerpt)));

  Completion c;
  c.content = message["content"].get<std::string>();
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) c.finish_reason = choice["finish_reason"].get<std::string>();
  if (j.contains("usage")) {
    c.prompt_tokens = token_count(j["usage"], "prompt_tokens");
    c.completion_tokens = token_count(j["usage"], "completion_tokens");
  }
  return c;
}

bool retryable(long status) { return status == 429 || status >= 500; }

class OpenAiProposer : public Proposer {
 public:
  explicit OpenAiProposer(std::string model) : model_(std::move(model)) {
    base_url_ = env("OPBENCH_OPENAI_BASE_URL").value_or(env("OPENAI_BASE_URL").value_or("https://api.openai.com/v1"));
    while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
    api_key_ = env("OPENAI_API_KEY").value_or("");
    timeout_s_ = env_number("OPBENCH_OPENAI_TIMEOUT_S", 600, false);
    temperature_ = env_number("OPBENCH_OPENAI_TEMPERATURE", 0.7, true);
    max_tokens_ = int(env_number("OPBENCH_OPENAI_MAX_TOKENS", 8192, false));
    retry_delay_ms_ = env_number("OPBENCH_OPENAI_RETRY_DELAY_MS", 1000, true);
  }

  std::string name() const override { return "openai:" + model_; }

  ProposalResponse propose(const ProposalRequest& request) override {
    if (api_key_.empty() && !is_loopback(base_url_))
      throw std::runtime_error(fmt::format("OPENAI_API_KEY is not set (needed for {}; a loopback base URL needs none)", base_url_));
    const bool plan = request.phase == "plan";
    if (!plan && request.phase != "translate" && request.phase != "implement")
      throw std::runtime_error(fmt::format("openai proposer: unknown phase '{}'", request.phase));

    ProposalResponse response;
    std::vector<std::string> notes;
    for (int i = 0; i < request.candidates; ++i) {
      // One answer usually holds several plans: stop asking once there are enough.
      if (plan && int(response.plans.size()) >= request.candidates) break;
      Completion c = complete(request.prompt, request.seed + uint64_t(i));
      response.prompt_tokens += c.prompt_tokens;
      response.completion_tokens += c.completion_tokens;
      if (plan) {
        for (auto& p : split_plans(c.content)) response.plans.push_back(std::move(p));
      } else if (auto source = last_cpp_block(c.content)) {
        response.sources.push_back(std::move(*source));
      } else {
        notes.push_back(fmt::format("candidate {}: no complete ```cpp code block in the answer{}", i + 1,
                                    c.finish_reason == "length" ? " (cut off at max_tokens)" : ""));
      }
    }
    if (plan && int(response.plans.size()) > request.candidates) response.plans.resize(size_t(request.candidates));
    if (plan && response.plans.empty()) notes.push_back("no plan in the answer");
    for (const auto& n : notes) response.note += (response.note.empty() ? "" : "; ") + n;
    return response;
  }

 private:
  nlohmann::json request_body(const std::string& prompt, uint64_t seed) const {
    return {{"model", model_},
            {"messages", nlohmann::json::array({{{"role", "system"}, {"content", kSystemPrompt}}, {{"role", "user"}, {"content", prompt}}})},
            {"temperature", temperature_},
            {"max_tokens", max_tokens_},
            {"seed", seed}};
  }

  Completion complete(const std::string& prompt, uint64_t seed) {
    const std::string body = request_body(prompt, seed).dump();
    std::string last_failure;
    for (int attempt = 0; attempt <= kMaxRetries; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(retry_delay_ms_ * double(1 << (attempt - 1))));
      HttpReply reply;
      try {
        reply = post(base_url_ + "/chat/completions", body);
      } catch (const TransportError& e) {
        last_failure = e.what();
        continue;
      }
      if (reply.status >= 200 && reply.status < 300) return parse_completion(reply.body);
      std::string failure = fmt::format("{}/chat/completions answered HTTP {}: {}", base_url_, reply.status, reply.body.substr(0, kBodyExcerpt));
      if (!retryable(reply.status)) throw std::runtime_error(failure);
      last_failure = std::move(failure);
    }
    throw std::runtime_error(fmt::format("gave up after {} retries: {}", kMaxRetries, last_failure));
  }

  HttpReply post(const std::string& url, const std::string& body) const {
    init_curl_once();
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) throw TransportError("curl_easy_init failed");
    curl_slist* raw_headers = curl_slist_append(nullptr, "Content-Type: application/json");
    // curl would otherwise wait for "100 Continue" before sending a large prompt.
    raw_headers = curl_slist_append(raw_headers, "Expect:");
    if (!api_key_.empty()) raw_headers = curl_slist_append(raw_headers, ("Authorization: Bearer " + api_key_).c_str());
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(raw_headers, curl_slist_free_all);

    HttpReply reply;
    char error[CURL_ERROR_SIZE] = {0};
    CURL* h = curl.get();
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_to_string);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply.body);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, long(timeout_s_ * 1000));
    // Signals for DNS timeouts are unsafe in a multithreaded program.
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (is_loopback(url)) curl_easy_setopt(h, CURLOPT_NOPROXY, "*");

    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) throw TransportError(fmt::format("POST {} failed: {}", url, error[0] ? error : curl_easy_strerror(rc)));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.status);
    return reply;
  }

  std::string model_;
  std::string base_url_;
  std::string api_key_;
  double timeout_s_ = 600;
  double temperature_ = 0.7;
  int max_tokens_ = 8192;
  double retry_delay_ms_ = 1000;
};

}  // namespace

std::unique_ptr<Proposer> make_openai_proposer(const std::string& model) {
  if (model.empty()) throw UsageError("openai proposer: no model given (use --proposer openai:MODEL)");
  return std::make_unique<OpenAiProposer>(model);
}

}  // namespace opbench
