// The openai proposer against a loopback HTTP server that answers with recorded chat-completions
// responses (tests/fixtures/openai) and records what it was sent.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/openai_proposer.h"

namespace opbench {
namespace {

struct RecordedRequest {
  std::string method, path;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

struct CannedResponse {
  int status = 200;  // 0: close the connection without answering (a transport error for the client)
  std::string body;
};

// One connection per request (Connection: close), served in order from a queue of canned answers.
class FakeServer {
 public:
  FakeServer() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 16) != 0)
      throw std::runtime_error("FakeServer: cannot listen on 127.0.0.1");
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

  void enqueue(int status, std::string body) {
    std::lock_guard lock(mu_);
    queue_.push_back({status, std::move(body)});
  }
  std::vector<RecordedRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int conn = accept(fd_, nullptr, nullptr);
      if (conn < 0) continue;
      handle(conn);
      close(conn);
    }
  }

  static bool read_more(int conn, std::string& buffer) {
    char chunk[4096];
    ssize_t n = recv(conn, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, size_t(n));
    return true;
  }

  void handle(int conn) {
    std::string data;
    size_t header_end;
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos)
      if (!read_more(conn, data)) return;
    RecordedRequest r;
    std::istringstream head(data.substr(0, header_end));
    std::string line;
    std::getline(head, line);
    std::istringstream(line) >> r.method >> r.path;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    size_t length = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    while (data.size() < header_end + 4 + length)
      if (!read_more(conn, data)) break;
    r.body = data.substr(header_end + 4, length);

    CannedResponse answer{500, R"({"error":{"message":"FakeServer: no canned response left"}})"};
    {
      std::lock_guard lock(mu_);
      requests_.push_back(std::move(r));
      if (!queue_.empty()) answer = queue_.front(), queue_.pop_front();
    }
    if (answer.status == 0) return;
    std::string reply = "HTTP/1.1 " + std::to_string(answer.status) + " Canned\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(answer.body.size()) + "\r\nConnection: close\r\n\r\n" + answer.body;
    for (size_t sent = 0; sent < reply.size();) {
      ssize_t n = send(conn, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += size_t(n);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::deque<CannedResponse> queue_;
  std::vector<RecordedRequest> requests_;
};

std::string fixture(const std::string& name) {
  std::ifstream in(std::filesystem::path(OPBENCH_SOURCE_DIR) / "tests" / "fixtures" / "openai" / name, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + name);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The full kernel in implement_cpp.json (the last ```cpp block), without its fences.
constexpr const char* kExpectedKernel = R"K(#include <cstddef>

#include "opbench/kernel.h"

// opbench:param TILE 32 64 128
#ifndef TILE
#define TILE 64
#endif

extern "C" void ob_run(const float* x, float* y, std::size_t n) {
  #pragma omp parallel for schedule(static)
  for (std::size_t i0 = 0; i0 < n; i0 += TILE) {
    const std::size_t end = i0 + TILE < n ? i0 + TILE : n;
    for (std::size_t i = i0; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  }
}
)K";

// Sets the proposer's environment for one test and restores the previous values afterwards.
class OpenAiProposerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"OPBENCH_OPENAI_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPBENCH_OPENAI_TIMEOUT_S",
                             "OPBENCH_OPENAI_TEMPERATURE", "OPBENCH_OPENAI_MAX_TOKENS", "OPBENCH_OPENAI_RETRY_DELAY_MS", "OPBENCH_OPENAI_TOKEN_FIELD", "OPBENCH_OPENAI_EXTRA",
                             "OPBENCH_OPENAI_RETRIES", "OPBENCH_OPENAI_MAX_ANSWER_BYTES", "OPBENCH_OPENAI_RETRY_AFTER_MAX_S"}) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
      unsetenv(name);
    }
    setenv("OPBENCH_OPENAI_BASE_URL", server_.base_url().c_str(), 1);
    setenv("OPENAI_API_KEY", "sk-test-123", 1);
    setenv("OPBENCH_OPENAI_RETRY_DELAY_MS", "1", 1);
    setenv("OPBENCH_OPENAI_TIMEOUT_S", "20", 1);
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) value ? setenv(name.c_str(), value->c_str(), 1) : unsetenv(name.c_str());
  }

  ProposalRequest request(const std::string& phase, int candidates) {
    ProposalRequest r;
    r.workload = "12p_RMSNorm";
    r.phase = phase;
    r.prompt = "Make this kernel faster.\nParent:\n```cpp\nint main() {}\n```\n";
    r.candidates = candidates;
    r.seed = 41;
    return r;
  }

  FakeServer server_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(OpenAiProposerTest, ImplementPostsOneRequestPerCandidateAndExtractsSources) {
  server_.enqueue(200, fixture("implement_cpp.json"));
  // The second answer uses the c++ info string and its own token counts.
  auto second = nlohmann::json::parse(fixture("implement_cpp.json"));
  second["choices"][0]["message"]["content"] = "Smaller variant:\n```c++\nint x = 1;\n```\n";
  second["usage"] = {{"prompt_tokens", 1000}, {"completion_tokens", 20}, {"total_tokens", 1020}};
  server_.enqueue(200, second.dump());

  auto proposer = make_openai_proposer("gpt-4o");
  EXPECT_EQ(proposer->name(), "openai:gpt-4o");
  ProposalResponse response = proposer->propose(request("implement", 2));

  auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 2u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].method, "POST");
    EXPECT_EQ(seen[i].path, "/v1/chat/completions");
    EXPECT_EQ(seen[i].headers["authorization"], "Bearer sk-test-123");
    EXPECT_EQ(seen[i].headers["content-type"], "application/json");
    auto body = nlohmann::json::parse(seen[i].body);
    EXPECT_EQ(body["model"], "gpt-4o");
    ASSERT_EQ(body["messages"].size(), 2u);
    EXPECT_EQ(body["messages"][0]["role"], "system");
    EXPECT_EQ(body["messages"][1]["role"], "user");
    EXPECT_EQ(body["messages"][1]["content"], request("implement", 2).prompt);
    EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.7);
    EXPECT_EQ(body["max_tokens"], 8192);
    EXPECT_EQ(body["seed"].get<uint64_t>(), 41 + i);
  }
  ASSERT_EQ(response.sources.size(), 2u);
  EXPECT_EQ(response.sources[0], kExpectedKernel);
  EXPECT_EQ(response.sources[1], "int x = 1;\n");
  EXPECT_EQ(response.prompt_tokens, 1250 + 1000);
  EXPECT_EQ(response.completion_tokens, 412 + 20);
  EXPECT_TRUE(response.note.empty()) << response.note;
}

TEST_F(OpenAiProposerTest, PlanSplitsSectionsAndKeepsOnlyTheCandidatesAsked) {
  server_.enqueue(200, fixture("plan_three.json"));
  ProposalResponse three = make_openai_proposer("gpt-4o")->propose(request("plan", 3));
  ASSERT_EQ(three.plans.size(), 3u);
  // The title line stays with its plan (the search logs and lists plans by it).
  auto ends_with = [](const std::string& s, const std::string& tail) { return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0; };
  EXPECT_TRUE(ends_with(three.plans[0], "Block the reduction loop in tiles of 64 so each tile of B stays in L2.")) << three.plans[0];
  EXPECT_TRUE(ends_with(three.plans[1], "Use `#pragma omp simd` on the inner loop and keep the accumulator in a register.")) << three.plans[1];
  EXPECT_TRUE(ends_with(three.plans[2], "Split the rows across threads with a static schedule.")) << three.plans[2];
  EXPECT_EQ(three.plans[0].rfind("Plan 1", 0), 0u) << three.plans[0];
  EXPECT_TRUE(three.sources.empty());
  EXPECT_EQ(three.prompt_tokens, 980);
  EXPECT_EQ(three.completion_tokens, 156);
  EXPECT_EQ(server_.requests().size(), 1u);  // one answer held all three plans

  server_.enqueue(200, fixture("plan_three.json"));
  ProposalResponse two = make_openai_proposer("gpt-4o")->propose(request("plan", 2));
  ASSERT_EQ(two.plans.size(), 2u);
  EXPECT_EQ(two.plans[1], three.plans[1]);
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(OpenAiProposerTest, PlanWithoutHeadingsIsOnePlan) {
  server_.enqueue(200, fixture("no_code.json"));
  ProposalResponse response = make_openai_proposer("gpt-4o")->propose(request("plan", 1));
  ASSERT_EQ(response.plans.size(), 1u);
  EXPECT_EQ(response.plans[0].rfind("I cannot improve this kernel", 0), 0u);
}

TEST_F(OpenAiProposerTest, AnswerWithoutCodeBlockGivesNoSourceAndANote) {
  server_.enqueue(200, fixture("no_code.json"));
  ProposalResponse response;
  ASSERT_NO_THROW(response = make_openai_proposer("gpt-4o")->propose(request("translate", 1)));
  EXPECT_TRUE(response.sources.empty());
  ASSERT_EQ(response.failures.size(), 1u);  // counted and logged by the search, not lost
  EXPECT_EQ(response.failures[0].kind, "no_code_block");
  EXPECT_EQ(response.prompt_tokens, 870);
}

TEST_F(OpenAiProposerTest, RetriesAfterServerError) {
  server_.enqueue(500, R"({"error":{"message":"The server had an error while processing your request."}})");
  server_.enqueue(200, fixture("implement_cpp.json"));
  ProposalResponse response = make_openai_proposer("gpt-4o")->propose(request("implement", 1));
  EXPECT_EQ(server_.requests().size(), 2u);
  ASSERT_EQ(response.sources.size(), 1u);
  EXPECT_EQ(response.sources[0], kExpectedKernel);
  EXPECT_EQ(server_.requests()[0].body, server_.requests()[1].body);  // the retry resends the same request
}

TEST_F(OpenAiProposerTest, RetriesAfterTransportError) {
  server_.enqueue(0, "");
  server_.enqueue(200, fixture("implement_cpp.json"));
  ProposalResponse response = make_openai_proposer("gpt-4o")->propose(request("implement", 1));
  EXPECT_EQ(server_.requests().size(), 2u);
  EXPECT_EQ(response.sources.size(), 1u);
}

TEST_F(OpenAiProposerTest, GivesUpAfterThreeRetries) {
  for (int i = 0; i < 5; ++i) server_.enqueue(429, R"({"error":{"message":"Rate limit reached"}})");
  try {
    make_openai_proposer("gpt-4o")->propose(request("implement", 1));
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("429"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server_.requests().size(), 4u);
}

TEST_F(OpenAiProposerTest, ClientErrorThrowsWithStatusAndBody) {
  server_.enqueue(401, R"({"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}})");
  try {
    make_openai_proposer("gpt-4o")->propose(request("implement", 1));
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("401"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Incorrect API key"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server_.requests().size(), 1u);  // not retried
}

TEST_F(OpenAiProposerTest, InvalidJsonThrows) {
  server_.enqueue(200, "<html><body>Bad Gateway</body></html>");
  EXPECT_THROW(make_openai_proposer("gpt-4o")->propose(request("implement", 1)), std::runtime_error);
}

TEST_F(OpenAiProposerTest, MissingContentThrowsNamingIt) {
  setenv("OPBENCH_OPENAI_RETRIES", "0", 1);
  server_.enqueue(200, R"({"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null}}]})");
  try {
    make_openai_proposer("gpt-4o")->propose(request("implement", 1));
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("choices[0].message.content"), std::string::npos) << e.what();
  }
}

TEST_F(OpenAiProposerTest, AMalformed200IsRetried) {
  server_.enqueue(200, "<html>bad gateway</html>");
  server_.enqueue(200, fixture("implement_cpp.json"));
  ProposalResponse response = make_openai_proposer("gpt-4o")->propose(request("implement", 1));
  EXPECT_EQ(server_.requests().size(), 2u);
  ASSERT_EQ(response.sources.size(), 1u);
}

TEST_F(OpenAiProposerTest, TokenFieldTemperatureAndPassthroughAreConfigurable) {
  setenv("OPBENCH_OPENAI_TOKEN_FIELD", "max_completion_tokens", 1);
  setenv("OPBENCH_OPENAI_TEMPERATURE", "none", 1);
  setenv("OPBENCH_OPENAI_EXTRA", R"({"top_p": 0.9, "seed": null})", 1);
  server_.enqueue(200, fixture("implement_cpp.json"));
  make_openai_proposer("o3")->propose(request("implement", 1));
  nlohmann::json body = nlohmann::json::parse(server_.requests().at(0).body);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(body["max_completion_tokens"], 8192);
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_FALSE(body.contains("seed"));
  EXPECT_DOUBLE_EQ(body["top_p"].get<double>(), 0.9);
  EXPECT_EQ(server_.requests().at(0).headers["user-agent"].rfind("opbench/", 0), 0u);
  setenv("OPBENCH_OPENAI_TOKEN_FIELD", "none", 1);
  server_.enqueue(200, fixture("implement_cpp.json"));
  make_openai_proposer("o3")->propose(request("implement", 1));
  body = nlohmann::json::parse(server_.requests().at(1).body);
  EXPECT_FALSE(body.contains("max_completion_tokens"));
  EXPECT_FALSE(body.contains("max_tokens"));
}

TEST_F(OpenAiProposerTest, OneFailedCompletionOfTwoKeepsTheOther) {
  setenv("OPBENCH_OPENAI_RETRIES", "0", 1);
  server_.enqueue(400, R"({"error":"bad"})");
  server_.enqueue(200, fixture("implement_cpp.json"));
  ProposalResponse response = make_openai_proposer("gpt-4o")->propose(request("implement", 2));
  ASSERT_EQ(response.sources.size(), 1u);
  ASSERT_EQ(response.failures.size(), 1u);
  EXPECT_EQ(response.failures[0].kind, "http");
}

TEST_F(OpenAiProposerTest, AnAnswerOverTheSizeCapIsRefused) {
  setenv("OPBENCH_OPENAI_MAX_ANSWER_BYTES", "100", 1);
  server_.enqueue(200, fixture("implement_cpp.json"));
  try {
    make_openai_proposer("gpt-4o")->propose(request("implement", 1));
    FAIL() << "expected a throw";
  } catch (const ProposerError& e) {
    EXPECT_EQ(e.kind, "answer_too_large") << e.what();
  }
}

TEST_F(OpenAiProposerTest, KeyIsOptionalOnLoopbackOnly) {
  unsetenv("OPENAI_API_KEY");
  server_.enqueue(200, fixture("implement_cpp.json"));
  make_openai_proposer("local-model")->propose(request("implement", 1));
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].headers.count("authorization"), 0u);

  // Fails before any connection is attempted, so nothing leaves the machine.
  setenv("OPBENCH_OPENAI_BASE_URL", "https://api.example.invalid/v1/", 1);
  try {
    make_openai_proposer("gpt-4o")->propose(request("implement", 1));
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("OPENAI_API_KEY is not set"), std::string::npos) << e.what();
  }
}

TEST_F(OpenAiProposerTest, TrailingSlashAndSettingsFromEnvironment) {
  setenv("OPBENCH_OPENAI_BASE_URL", (server_.base_url() + "/").c_str(), 1);
  setenv("OPBENCH_OPENAI_TEMPERATURE", "0", 1);
  setenv("OPBENCH_OPENAI_MAX_TOKENS", "1024", 1);
  server_.enqueue(200, fixture("implement_cpp.json"));
  make_openai_proposer("gpt-4o")->propose(request("implement", 1));
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].path, "/v1/chat/completions");
  auto body = nlohmann::json::parse(server_.requests()[0].body);
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.0);
  EXPECT_EQ(body["max_tokens"], 1024);
}

}  // namespace
}  // namespace opbench
