#include "targets/cpu/isa_check.h"

#include <regex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/process.h"

namespace opbench::cpu {

std::string check_instruction_set(const std::filesystem::path& shared_object) {
  ProcessOutcome dis = run_process({"objdump", "-d", "--no-show-raw-insn", shared_object.string()}, std::chrono::seconds(60));
  if (!dis.ok()) throw std::runtime_error("objdump could not disassemble the kernel: " + dis.output.substr(0, 300));
  // Registers only EVEX (AVX-512) encodes: zmm*, xmm/ymm 16-31, the mask registers k1-k7.
  static const std::regex evex(R"(%(zmm\d+|[xy]mm(1[6-9]|2\d|3[01])\b|k[1-7]\b))");
  std::istringstream lines(dis.output);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, evex)) {
      const size_t tab = line.find('\t');
      std::string instruction = tab == std::string::npos ? line : line.substr(tab + 1);
      return fmt::format("the kernel uses AVX-512 instructions ({}); kernels are held to AVX2 and FMA, like the baselines' libraries",
                         instruction.substr(0, 80));
    }
  }
  return {};
}

}  // namespace opbench::cpu
