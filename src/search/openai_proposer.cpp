#include "search/openai_proposer.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <curl/curl.h>
#include <fmt/format.h>

#include "core/error.h"
#include "core/json_io.h"
#include "core/utf8.h"
#include "harness/result.h"

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

// The C++ blocks of an answer; `unclosed` is set when the answer ends inside one (cut at the token
// limit). Blocks of other languages are tracked so their contents are never mistaken for fences.
std::vector<std::string> cpp_blocks(const std::string& content, bool* unclosed) {
  std::vector<std::string> blocks;
  std::optional<Fence> open;
  std::string body;
  for (const std::string& line : split_lines(content)) {
    auto fence = parse_fence(line);
    if (!open) {
      if (fence) open = fence, body.clear();
      continue;
    }
    if (fence && fence->info.empty() && fence->ticks >= open->ticks && trim(line).find_first_not_of('`') == std::string::npos) {
      if (is_cpp_info(open->info)) blocks.push_back(body);
      open.reset();
      continue;
    }
    body += line;
    body += '\n';
  }
  *unclosed = open.has_value() && is_cpp_info(open->info);
  return blocks;
}

// The kernel of an answer: the last C++ block that defines the entry point ob_run (answers quote
// fragments and sometimes add a test main in a second block); without one, the last C++ block.
std::optional<std::string> kernel_block(const std::vector<std::string>& blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
    if (it->find("ob_run") != std::string::npos) return *it;
  if (!blocks.empty()) return blocks.back();
  return std::nullopt;
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
      current = trim(line.substr(4)) + "\n";  // the title stays: "Plan 2: unroll by 4"
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
  std::optional<double> retry_after_s;  // from a Retry-After header (seconds or an HTTP date)
  bool too_large = false;               // the body passed the answer-size cap and was cut off
};

// Collects the body up to a cap; returning less than given makes curl stop the transfer.
struct BodySink {
  HttpReply* reply;
  size_t cap;
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

size_t append_capped(char* data, size_t size, size_t count, void* out) {
  auto* sink = static_cast<BodySink*>(out);
  if (sink->reply->body.size() + size * count > sink->cap) {
    sink->reply->too_large = true;
    return 0;
  }
  sink->reply->body.append(data, size * count);
  return size * count;
}

size_t read_retry_after(char* data, size_t size, size_t count, void* out) {
  const std::string line(data, size * count);
  const std::string name = "retry-after:";
  if (line.size() > name.size()) {
    std::string head = line.substr(0, name.size());
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (head == name) {
      const std::string value = trim(line.substr(name.size()));
      auto* reply = static_cast<HttpReply*>(out);
      char* end = nullptr;
      const double seconds = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && *end == '\0' && seconds >= 0) {
        reply->retry_after_s = seconds;
      } else if (const time_t when = curl_getdate(value.c_str(), nullptr); when > 0) {
        reply->retry_after_s = std::max(0.0, double(when - std::time(nullptr)));
      }
    }
  }
  return size * count;
}

int64_t token_count(const nlohmann::json& usage, const char* key) {
  if (!usage.is_object() || !usage.contains(key) || !usage[key].is_number_integer()) return 0;
  return usage[key].get<int64_t>();
}

std::string excerpt(const std::string& body) { return utf8_truncate(body, kBodyExcerpt, "..."); }

// A 200 whose body is not a chat completion: retried (proxies and overloaded servers send these).
struct MalformedAnswer : ProposerError {
  explicit MalformedAnswer(const std::string& what) : ProposerError("malformed_answer", what) {}
};

Completion parse_completion(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(utf8_sanitize(body), nullptr, false);
  if (j.is_discarded()) throw MalformedAnswer(fmt::format("the endpoint answered with invalid JSON: {}", excerpt(body)));
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    throw MalformedAnswer(fmt::format("the endpoint's answer has no choices[0]: {}", excerpt(body)));
  const nlohmann::json& choice = j["choices"][0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
    throw MalformedAnswer(fmt::format("the endpoint's answer has no choices[0].message: {}", excerpt(body)));
  const nlohmann::json& message = choice["message"];
  if (!message.contains("content") || !message["content"].is_string())
    throw MalformedAnswer(fmt::format("the endpoint's answer has no choices[0].message.content (a string): {}", excerpt(body)));

  Completion c;
  c.content = utf8_sanitize(message["content"].get<std::string>());
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) c.finish_reason = choice["finish_reason"].get<std::string>();
  if (j.contains("usage")) {
    c.prompt_tokens = token_count(j["usage"], "prompt_tokens");
    c.completion_tokens = token_count(j["usage"], "completion_tokens");
  }
  return c;
}

bool retryable(long status) { return status == 408 || status == 429 || status >= 500; }

// A number from the environment, or nullopt for "none" (the field is then left out of requests).
std::optional<double> env_number_or_none(const char* name, double fallback) {
  if (auto v = env(name); v && *v == "none") return std::nullopt;
  return env_number(name, fallback, true);
}

class OpenAiProposer : public Proposer {
 public:
  explicit OpenAiProposer(std::string model) : model_(std::move(model)) {
    base_url_ = env("OPBENCH_OPENAI_BASE_URL").value_or(env("OPENAI_BASE_URL").value_or("https://api.openai.com/v1"));
    while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
    api_key_ = env("OPENAI_API_KEY").value_or("");
    timeout_s_ = env_number("OPBENCH_OPENAI_TIMEOUT_S", 600, false);
    temperature_ = env_number_or_none("OPBENCH_OPENAI_TEMPERATURE", 0.7);
    token_field_ = env("OPBENCH_OPENAI_TOKEN_FIELD").value_or("max_tokens");
    if (token_field_ != "max_tokens" && token_field_ != "max_completion_tokens" && token_field_ != "none")
      throw UsageError(fmt::format("$OPBENCH_OPENAI_TOKEN_FIELD must be max_tokens, max_completion_tokens or none, got '{}'", token_field_));
    max_tokens_ = int64_t(env_number("OPBENCH_OPENAI_MAX_TOKENS", 8192, false));
    retry_delay_ms_ = env_number("OPBENCH_OPENAI_RETRY_DELAY_MS", 1000, true);
    retry_after_cap_s_ = env_number("OPBENCH_OPENAI_RETRY_AFTER_MAX_S", 60, true);
    max_retries_ = int(env_number("OPBENCH_OPENAI_RETRIES", kMaxRetries, true));
    max_answer_bytes_ = size_t(env_number("OPBENCH_OPENAI_MAX_ANSWER_BYTES", 4 << 20, false));
    if (auto extra = env("OPBENCH_OPENAI_EXTRA")) {
      extra_ = nlohmann::json::parse(*extra, nullptr, false);
      if (!extra_.is_object()) throw UsageError("$OPBENCH_OPENAI_EXTRA must be a JSON object, e.g. {\"top_p\": 0.95}");
      for (const char* reserved : {"model", "messages"})
        if (extra_.contains(reserved)) throw UsageError(fmt::format("$OPBENCH_OPENAI_EXTRA may not set \"{}\"", reserved));
    }
  }

  std::string name() const override { return "openai:" + model_; }

  ProposalResponse propose(const ProposalRequest& request) override {
    if (api_key_.empty() && !is_loopback(base_url_))
      throw ProposerError("usage", fmt::format("OPENAI_API_KEY is not set (needed for {}; a loopback base URL needs none)", base_url_));
    const bool plan = request.phase == "plan";
    if (!plan && request.phase != "translate" && request.phase != "implement")
      throw ProposerError("protocol", fmt::format("openai proposer: unknown phase '{}'", request.phase));

    // One completion per candidate; a failed completion is recorded and the others are kept.
    ProposalResponse response;
    int completions_ok = 0;
    for (int i = 0; i < request.candidates; ++i) {
      // One answer usually holds several plans: stop asking once there are enough.
      if (plan && int(response.plans.size()) >= request.candidates) break;
      Completion c;
      try {
        c = complete(request.prompt, request.seed + uint64_t(i));
      } catch (const ProposerError& e) {
        response.failures.push_back({e.kind, fmt::format("completion {}: {}", i + 1, e.what())});
        continue;
      }
      ++completions_ok;
      response.prompt_tokens += c.prompt_tokens;
      response.completion_tokens += c.completion_tokens;
      if (plan) {
        auto plans = split_plans(c.content);
        if (plans.empty()) response.failures.push_back({"no_plan", fmt::format("completion {}: no plan in the answer", i + 1)});
        for (auto& p : plans) response.plans.push_back(std::move(p));
        continue;
      }
      bool unclosed = false;
      const auto blocks = cpp_blocks(c.content, &unclosed);
      if (auto source = kernel_block(blocks)) {
        response.sources.push_back(std::move(*source));
      } else if (unclosed || c.finish_reason == "length") {
        response.failures.push_back({"truncated", fmt::format("completion {}: the answer was cut off at the token limit ({} {}) inside its code block",
                                                              i + 1, token_field_, max_tokens_)});
      } else {
        response.failures.push_back({"no_code_block", fmt::format("completion {}: no ```cpp code block in the answer", i + 1)});
      }
    }
    if (plan && int(response.plans.size()) > request.candidates) response.plans.resize(size_t(request.candidates));
    if (completions_ok == 0 && !response.failures.empty()) {
      // Nothing came back: the call failed as a whole, with the kind of its last failure.
      std::string what;
      for (const auto& f : response.failures) what += (what.empty() ? "" : "; ") + f.message;
      throw ProposerError(response.failures.back().kind, what);
    }
    return response;
  }

 private:
  nlohmann::json request_body(const std::string& prompt, uint64_t seed) const {
    nlohmann::json body = {
        {"model", model_},
        {"messages", nlohmann::json::array({{{"role", "system"}, {"content", kSystemPrompt}}, {{"role", "user"}, {"content", prompt}}})},
        {"seed", seed}};
    if (temperature_) body["temperature"] = *temperature_;
    if (token_field_ != "none") body[token_field_] = max_tokens_;
    // Passed through as given; a null value removes a field opbench would send (e.g. "seed": null).
    for (const auto& [key, value] : extra_.items()) {
      if (value.is_null()) body.erase(key);
      else body[key] = value;
    }
    return body;
  }

  Completion complete(const std::string& prompt, uint64_t seed) {
    const std::string body = dump_json(request_body(prompt, seed), -1);
    std::string last_failure, last_kind = "transport";
    std::optional<double> wait_s;
    for (int attempt = 0; attempt <= max_retries_; ++attempt) {
      if (attempt > 0) {
        // The server's Retry-After when it gave one (capped), else exponential backoff.
        const double backoff_s = retry_delay_ms_ * double(1 << std::min(attempt - 1, 16)) / 1000.0;
        std::this_thread::sleep_for(std::chrono::duration<double>(wait_s ? std::min(*wait_s, retry_after_cap_s_) : backoff_s));
      }
      wait_s.reset();
      HttpReply reply;
      try {
        reply = post(base_url_ + "/chat/completions", body);
      } catch (const TransportError& e) {
        last_failure = e.what(), last_kind = "transport";
        continue;
      }
      if (reply.too_large)
        throw ProposerError("answer_too_large", fmt::format("{}/chat/completions answered more than {} bytes ($OPBENCH_OPENAI_MAX_ANSWER_BYTES)",
                                                            base_url_, max_answer_bytes_));
      if (reply.status >= 200 && reply.status < 300) {
        try {
          return parse_completion(reply.body);
        } catch (const MalformedAnswer& e) {
          last_failure = e.what(), last_kind = e.kind;
          continue;
        }
      }
      std::string failure = fmt::format("{}/chat/completions answered HTTP {}: {}", base_url_, reply.status, excerpt(reply.body));
      if (!retryable(reply.status)) throw ProposerError("http", failure);
      last_failure = std::move(failure), last_kind = "http";
      wait_s = reply.retry_after_s;
    }
    throw ProposerError(last_kind, fmt::format("gave up after {} retries: {}", max_retries_, last_failure));
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
    BodySink sink{&reply, max_answer_bytes_};
    char error[CURL_ERROR_SIZE] = {0};
    const std::string user_agent = "opbench/" + opbench_version();
    CURL* h = curl.get();
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_capped);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, read_retry_after);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &reply);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, long(timeout_s_ * 1000));
    // Signals for DNS timeouts are unsafe in a multithreaded program.
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (is_loopback(url)) curl_easy_setopt(h, CURLOPT_NOPROXY, "*");

    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_WRITE_ERROR && reply.too_large) return reply;
    if (rc != CURLE_OK)
      throw TransportError(utf8_sanitize(fmt::format("POST {} failed: {}", url, error[0] ? error : curl_easy_strerror(rc))));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.status);
    return reply;
  }

  std::string model_;
  std::string base_url_;
  std::string api_key_;
  double timeout_s_ = 600;
  std::optional<double> temperature_;
  std::string token_field_ = "max_tokens";
  int64_t max_tokens_ = 8192;
  double retry_delay_ms_ = 1000;
  double retry_after_cap_s_ = 60;
  int max_retries_ = kMaxRetries;
  size_t max_answer_bytes_ = 4 << 20;
  nlohmann::json extra_ = nlohmann::json::object();
};

}  // namespace

std::unique_ptr<Proposer> make_openai_proposer(const std::string& model) {
  if (model.empty()) throw UsageError("openai proposer: no model given (use --proposer openai:MODEL)");
  return std::make_unique<OpenAiProposer>(model);
}

}  // namespace opbench
