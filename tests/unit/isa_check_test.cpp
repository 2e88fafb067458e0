// The instruction check on disassembly text (objdump -d -M intel --insn-width=16), one rule at a
// time, and the levels' flags and library settings.
#include <gtest/gtest.h>

#include "targets/cpu/isa_check.h"
#include "targets/cpu/isa_level.h"

namespace opbench::cpu {
namespace {

std::string listing(const std::string& bytes, const std::string& text) {
  return "\n0000000000001100 <ob_run>:\n    1100:\t" + bytes + "\t" + text + "\n";
}

const std::string kVexFma = listing("c4 e2 75 b8 c2", "vfmadd231ps ymm0,ymm1,ymm2");
const std::string kZmmAdd = listing("62 f1 74 48 58 c2", "vaddps zmm0,zmm1,zmm2");
const std::string kEvexYmm = listing("62 f3 75 28 25 c2 96", "vpternlogd ymm0,ymm1,ymm2,0x96");  // only ymm0-2, but EVEX
const std::string kMaskMove = listing("c5 f8 92 c8", "kmovw k1,eax");
const std::string kHighYmm = listing("62 e1 7c 28 28 c1", "vmovaps ymm16,ymm1");
const std::string kVnni = listing("62 f2 75 48 50 c2", "vpdpbusd zmm0,zmm1,zmm2");
const std::string kAvxVnni = listing("c4 e2 75 50 c2", "{vex} vpdpbusd ymm0,ymm1,ymm2");
const std::string kFp16 = listing("62 f5 74 48 58 c2", "vaddph zmm0,zmm1,zmm2");
const std::string kBf16 = listing("62 f2 76 48 52 c2", "vdpbf16ps zmm0,zmm1,zmm2");
const std::string kF16c = listing("c4 e3 7d 1d c1 00", "vcvtps2ph xmm1,ymm0,0x0");
const std::string kCallK1 = listing("e8 00 00 00 00", "call 1105 <k1_helper>");

TEST(IsaCheck, V3AcceptsAvx2AndF16c) {
  EXPECT_EQ(check_disassembly(kVexFma, IsaLevel::x86_64_v3), "");
  EXPECT_EQ(check_disassembly(kF16c, IsaLevel::x86_64_v3), "");
  EXPECT_EQ(check_disassembly(kCallK1, IsaLevel::x86_64_v3), "");  // a symbol named k1… is not a mask register
}

TEST(IsaCheck, V3RejectsEveryRouteToAvx512) {
  for (const auto& code : {kZmmAdd, kEvexYmm, kMaskMove, kHighYmm}) {
    const std::string why = check_disassembly(code, IsaLevel::x86_64_v3);
    EXPECT_NE(why.find("AVX-512"), std::string::npos) << code;
  }
}

TEST(IsaCheck, V4AcceptsAvx512Foundation) {
  for (const auto& code : {kVexFma, kZmmAdd, kEvexYmm, kMaskMove, kHighYmm, kF16c}) EXPECT_EQ(check_disassembly(code, IsaLevel::x86_64_v4), "") << code;
}

TEST(IsaCheck, V4RejectsExtensionsBeyondIt) {
  EXPECT_NE(check_disassembly(kVnni, IsaLevel::x86_64_v4).find("VNNI"), std::string::npos);
  EXPECT_NE(check_disassembly(kAvxVnni, IsaLevel::x86_64_v4).find("VNNI"), std::string::npos);
  EXPECT_NE(check_disassembly(kFp16, IsaLevel::x86_64_v4).find("FP16"), std::string::npos);
  EXPECT_NE(check_disassembly(kBf16, IsaLevel::x86_64_v4).find("BF16"), std::string::npos);
  // The same extensions are beyond v3 too (AVX-VNNI's VEX form included).
  EXPECT_NE(check_disassembly(kAvxVnni, IsaLevel::x86_64_v3), "");
}

TEST(IsaCheck, NativeAcceptsEverything) {
  for (const auto& code : {kZmmAdd, kVnni, kFp16, kBf16}) EXPECT_EQ(check_disassembly(code, IsaLevel::native), "");
}

TEST(IsaLevel, NamesRoundTripAndFlagsSelectTheLevel) {
  for (const auto& name : isa_level_names()) EXPECT_EQ(isa_level_name(*parse_isa_level(name)), name);
  EXPECT_FALSE(parse_isa_level("avx512").has_value());
  EXPECT_EQ(isa_compiler_flags(IsaLevel::x86_64_v3).front(), "-march=x86-64-v3");
  EXPECT_EQ(isa_compiler_flags(IsaLevel::x86_64_v4).front(), "-march=x86-64-v4");
  const auto v3 = vendor_isa_environment(IsaLevel::x86_64_v3);
  const auto v4 = vendor_isa_environment(IsaLevel::x86_64_v4);
  EXPECT_NE(std::find(v3.begin(), v3.end(), "ONEDNN_MAX_CPU_ISA=AVX2"), v3.end());
  EXPECT_NE(std::find(v4.begin(), v4.end(), "ONEDNN_MAX_CPU_ISA=AVX512_CORE"), v4.end());
  EXPECT_TRUE(vendor_isa_environment(IsaLevel::native).empty());
}

TEST(IsaLevel, DefaultIsWhatTheHostRuns) {
  EXPECT_TRUE(host_supports(default_isa_level()));
  EXPECT_EQ(resolve_isa_level(""), default_isa_level());
  EXPECT_THROW(resolve_isa_level("x86-64-v9"), std::exception);
}

}  // namespace
}  // namespace opbench::cpu
