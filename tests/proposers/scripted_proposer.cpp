// A deterministic proposer for the search tests, speaking the cmd: protocol
// (docs/proposer-protocol.md): it answers from a script folder instead of a model.
//
//   scripted_proposer SCRIPT_DIR
//
//   translate  -> every SCRIPT_DIR/translate/*.cpp, in name order
//   plan       -> the lines of SCRIPT_DIR/plans.txt ("FILE free text"), as many as asked for
//   implement  -> the FILE named by the plan's first word (relative to SCRIPT_DIR), once per
//                 implementation asked for; a repair request gets SCRIPT_DIR/repair.cpp
//
// Each request is appended as one line to $SCRIPTED_PROPOSER_LOG when it is set, so tests can count
// what the search asked.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

static std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: scripted_proposer SCRIPT_DIR\n";
    return 2;
  }
  const fs::path dir = argv[1];
  const json request = json::parse(std::cin);
  if (request.value("schema", "") != "opbench.proposer.request" || request.value("version", 0) != 1) {
    std::cerr << "unexpected request schema\n";
    return 2;
  }
  if (const char* log = std::getenv("SCRIPTED_PROPOSER_LOG")) {
    std::ofstream out(log, std::ios::app);
    out << request.value("phase", "") << " " << request.value("iteration", 0) << " " << request.value("plan", json("")).dump() << "\n";
  }
  const std::string phase = request.at("phase");
  const int wanted = request.value("candidates", 1);
  json response = {{"schema", "opbench.proposer.response"}, {"version", 1}, {"candidates", json::array()}, {"plans", json::array()},
                   {"usage", {{"prompt_tokens", int(request.value("prompt", "").size() / 4)}, {"completion_tokens", 100}}}};
  const std::string plan = request.value("plan", json("")).is_string() ? request["plan"].get<std::string>() : "";
  if (phase == "translate") {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir / "translate"))
      if (e.path().extension() == ".cpp") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) response["candidates"].push_back({{"source", slurp(f)}});
  } else if (phase == "plan") {
    std::istringstream lines(slurp(dir / "plans.txt"));
    for (std::string line; std::getline(lines, line) && int(response["plans"].size()) < wanted;)
      if (!line.empty()) response["plans"].push_back(line);
  } else if (plan.rfind("Repair", 0) == 0) {
    response["candidates"].push_back({{"source", slurp(dir / "repair.cpp")}});
  } else {
    const std::string file = plan.substr(0, plan.find(' '));
    for (int i = 0; i < wanted; ++i) response["candidates"].push_back({{"source", slurp(dir / file)}});
  }
  std::cout << response.dump() << "\n";
  return 0;
}
