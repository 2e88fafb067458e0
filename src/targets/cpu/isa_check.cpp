#include "targets/cpu/isa_check.h"

#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "core/process.h"

namespace opbench::cpu {
namespace {

struct Instruction {
  std::vector<int> bytes;  // the encoding
  std::string mnemonic;    // lower case, prefixes such as {vex} or lock skipped
  std::string text;        // mnemonic and operands, annotations (<symbol>, # comment) removed
};

// One line of `objdump -d --insn-width=16 -M intel`: "  addr:\tb0 b1 ...\tmnemonic operands".
// Lines that are not instructions (headers, labels) give nullopt.
std::optional<Instruction> parse_line(const std::string& line) {
  const size_t tab1 = line.find('\t');
  if (tab1 == std::string::npos || line.find(':') > tab1) return std::nullopt;
  const size_t tab2 = line.find('\t', tab1 + 1);
  if (tab2 == std::string::npos) return std::nullopt;
  Instruction in;
  std::istringstream hex(line.substr(tab1 + 1, tab2 - tab1 - 1));
  for (std::string b; hex >> b;) in.bytes.push_back(std::stoi(b, nullptr, 16));
  in.text = line.substr(tab2 + 1);
  for (char stop : {'<', '#'})
    if (size_t at = in.text.find(stop); at != std::string::npos) in.text.resize(at);
  std::istringstream words(in.text);
  static const std::vector<std::string> prefixes{"lock", "rep", "repz", "repnz", "repe", "repne", "data16", "addr32",
                                                 "bnd", "notrack", "cs", "ds", "es", "ss", "fs", "gs", "rex", "rex.w"};
  for (std::string w; words >> w;) {
    if (w.front() == '{' || std::find(prefixes.begin(), prefixes.end(), w) != prefixes.end()) continue;
    in.mnemonic = w;
    break;
  }
  return in;
}

// EVEX (the AVX-512 encoding) starts with 0x62 after any legacy prefixes; in 64-bit mode that byte
// means nothing else.
bool evex_encoded(const std::vector<int>& bytes) {
  for (int b : bytes) {
    if (b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 ||
        b == 0x65 || b == 0xf0)
      continue;
    return b == 0x62;
  }
  return false;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// The extension an instruction belongs to when it is beyond x86-64-v4 (and so beyond v3); empty
// otherwise. By mnemonic: these extensions add instructions, not encodings.
std::string extension_beyond_v4(const std::string& m) {
  if (starts_with(m, "vpdp")) return "VNNI";  // vpdpbusd[s], vpdpwssd[s]; AVX-VNNI's VEX forms too
  if (starts_with(m, "vpmadd52")) return "IFMA";
  if (m == "vpermb" || m == "vpermi2b" || m == "vpermt2b" || m == "vpmultishiftqb") return "VBMI";
  if (m == "vpcompressb" || m == "vpcompressw" || m == "vpexpandb" || m == "vpexpandw" || starts_with(m, "vpshld") ||
      starts_with(m, "vpshrd"))
    return "VBMI2";
  if (m == "vpopcntb" || m == "vpopcntw" || m == "vpshufbitqmb") return "BITALG";
  if (m == "vpopcntd" || m == "vpopcntq") return "VPOPCNTDQ";
  if (m.find("bf16") != std::string::npos) return "BF16";
  if (starts_with(m, "vp2intersect")) return "VP2INTERSECT";
  if (m.find("gf2p8") != std::string::npos) return "GFNI";
  if (starts_with(m, "aes") || starts_with(m, "vaes")) return "AES";
  if (m.find("pclmul") != std::string::npos) return "PCLMULQDQ";
  if (starts_with(m, "sha1") || starts_with(m, "sha256")) return "SHA";
  // FP16: half-precision arithmetic (…ph, …sh) and conversions (vcvtph2…, vcvt…sh2…), except F16C's
  // two conversions, which v3 has.
  if (m.size() > 3 && m[0] == 'v' && m != "vcvtps2ph" && m != "vcvtph2ps" &&
      (ends_with(m, "ph") || ends_with(m, "sh") || m.find("ph2") != std::string::npos || m.find("sh2") != std::string::npos ||
       m == "vmovw" || ends_with(m, "phx")))
    return "FP16";
  return {};
}

std::string shown(const Instruction& in) {
  std::string t = in.text;
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  return t.substr(0, 80);
}

}  // namespace

std::string check_disassembly(const std::string& objdump_output, IsaLevel level) {
  if (level == IsaLevel::native) return {};
  // Registers only EVEX reaches: zmm*, xmm/ymm 16-31, the mask registers k0-k7 (kmov* is VEX-encoded,
  // so the encoding test alone misses it).
  static const std::regex avx512_register(R"(\b(zmm\d+|[xy]mm(1[6-9]|2\d|3[01])|k[0-7])\b)");
  std::istringstream lines(objdump_output);
  for (std::string line; std::getline(lines, line);) {
    const auto in = parse_line(line);
    if (!in || in->mnemonic.empty()) continue;
    if (const std::string ext = extension_beyond_v4(in->mnemonic); !ext.empty())
      return fmt::format("the kernel uses {} ({}), an extension beyond {}; it is allowed only with --isa native", ext, shown(*in),
                         isa_level_name(level));
    if (level == IsaLevel::x86_64_v3 && (evex_encoded(in->bytes) || std::regex_search(in->text, avx512_register)))
      return fmt::format("the kernel uses AVX-512 instructions ({}); this evaluation is at x86-64-v3 (AVX2 and FMA), like the "
                         "baselines' libraries (--isa x86-64-v4 allows AVX-512)",
                         shown(*in));
  }
  return {};
}

std::string check_instruction_set(const std::filesystem::path& shared_object, IsaLevel level) {
  if (level == IsaLevel::native) return {};
  ProcessOutcome dis = run_process({"objdump", "-d", "-M", "intel", "--insn-width=16", shared_object.string()}, std::chrono::seconds(60));
  if (!dis.ok()) throw std::runtime_error("objdump could not disassemble the kernel: " + dis.output.substr(0, 300));
  return check_disassembly(dis.output, level);
}

}  // namespace opbench::cpu
