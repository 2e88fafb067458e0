// cuda_convert's rewrites (convert.h), on the launch syntax CUDA allows and the places it must not
// touch.
#include <gtest/gtest.h>

#include <algorithm>

#include "convert.h"

namespace {

using ob_emu_convert::convert;
using ob_emu_convert::ConvertError;

// The converted text without the two lines the converter puts first.
std::string body(const std::string& src) {
  const std::string out = convert(src, "k.cu");
  const std::string head = "#include <cuda_runtime.h>\n#line 1 \"k.cu\"\n";
  EXPECT_EQ(out.substr(0, head.size()), head);
  return out.substr(head.size());
}

size_t lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

TEST(CudaConvert, PlainLaunch) {
  EXPECT_EQ(body("k<<<g, b>>>(x, y);"), "::ob_emu::launch(k, \"k\", ::ob_emu::config(g, b), x, y);");
  EXPECT_EQ(body("k<<<1, 256, smem, s>>>(p);"), "::ob_emu::launch(k, \"k\", ::ob_emu::config(1, 256, smem, s), p);");
}

TEST(CudaConvert, NoArguments) { EXPECT_EQ(body("k<<<1, 1>>>();"), "::ob_emu::launch(k, \"k\", ::ob_emu::config(1, 1));"); }

TEST(CudaConvert, SpacesEverywhere) {
  EXPECT_EQ(body("k <<< g , b >>> ( x );"), "::ob_emu::launch(k, \"k\", ::ob_emu::config( g , b ),  x );");
}

TEST(CudaConvert, TemplateKernels) {
  EXPECT_EQ(body("k<T, 4><<<g, b>>>(x);"), "::ob_emu::launch(k<T, 4>, \"k<T, 4>\", ::ob_emu::config(g, b), x);");
  EXPECT_EQ(body("gated<true><<<n, 256, 0, s>>>(a);"), "::ob_emu::launch(gated<true>, \"gated<true>\", ::ob_emu::config(n, 256, 0, s), a);");
  // A comparison in parentheses and nested template arguments inside the template-id.
  EXPECT_EQ(body("ns::k<(N > 2), std::pair<int, int>><<<1, 1>>>(v);"),
            "::ob_emu::launch(ns::k<(N > 2), std::pair<int, int>>, \"ns::k<(N > 2), std::pair<int, int>>\", ::ob_emu::config(1, 1), v);");
}

TEST(CudaConvert, QualifiedAndParenthesisedKernels) {
  EXPECT_EQ(body("::a::b::k<<<1, 1>>>(x);"), "::ob_emu::launch(::a::b::k, \"::a::b::k\", ::ob_emu::config(1, 1), x);");
  EXPECT_EQ(body("(flag ? k1 : k2)<<<1, 1>>>(x);"),
            "::ob_emu::launch((flag ? k1 : k2), \"(flag ? k1 : k2)\", ::ob_emu::config(1, 1), x);");
}

TEST(CudaConvert, NestedParenthesesBracesAndLambdas) {
  EXPECT_EQ(body("k<<<dim3(ob_cdiv(n, 256), h), dim3(32, (m + 1) / 2)>>>(f(a, (b, c)), Foo{1, 2}, [&] { return g(x); }(), v[i]);"),
            "::ob_emu::launch(k, \"k\", ::ob_emu::config(dim3(ob_cdiv(n, 256), h), dim3(32, (m + 1) / 2)), f(a, (b, c)), Foo{1, 2}, "
            "[&] { return g(x); }(), v[i]);");
}

TEST(CudaConvert, ShiftsInTheConfiguration) {
  EXPECT_EQ(body("k<<<n >> 1, 1 << 8>>>(x);"), "::ob_emu::launch(k, \"k\", ::ob_emu::config(n >> 1, 1 << 8), x);");
}

TEST(CudaConvert, MultiLineLaunchKeepsLineNumbers) {
  const std::string src =
      "  k<<<dim3(unsigned(ob_cdiv(L, kTile)), unsigned(H)),\n"
      "      kThreads, smem, stream>>>(\n"
      "      Q, K,\n"
      "      int(n));\n"
      "after();\n";
  const std::string out = body(src);
  EXPECT_EQ(lines(out), lines(src));
  EXPECT_EQ(out,
            "  ::ob_emu::launch(k, \"k\", ::ob_emu::config(dim3(unsigned(ob_cdiv(L, kTile)), unsigned(H)),\n"
            "      kThreads, smem, stream), \n"
            "      Q, K,\n"
            "      int(n));\n"
            "after();\n");
  // Line breaks between the kernel, <<< >>> and the arguments are kept too.
  const std::string gaps = "k\n<<<1, 1>>>\n(\n);\nx;\n";
  EXPECT_EQ(lines(body(gaps)), lines(gaps));
}

TEST(CudaConvert, LaunchesInControlFlow) {
  EXPECT_EQ(body("if (v) a<true><<<1, 2>>>(x); else a<false><<<3, 4>>>(y);"),
            "if (v) ::ob_emu::launch(a<true>, \"a<true>\", ::ob_emu::config(1, 2), x); else ::ob_emu::launch(a<false>, \"a<false>\", "
            "::ob_emu::config(3, 4), y);");
}

TEST(CudaConvert, CommentsAndLiteralsAreLeftAlone) {
  const std::string src =
      "// k<<<1, 1>>>(x);\n"
      "/* k<<<1, 1>>>(x); __shared__ float a[2]; */\n"
      "const char* s = \"k<<<1, 1>>>(x) __shared__\";\n"
      "const char* r = R\"(k<<<1,1>>>() __launch_bounds__(1))\";\n"
      "char c = '<'; int n = 1'000'000;\n";
  EXPECT_EQ(body(src), src);
}

TEST(CudaConvert, LaunchInAMacro) {
  const std::string src = "#define RUN(k) k<<<1, \\\n  32>>>()\nRUN(f);\n";
  const std::string out = body(src);
  EXPECT_EQ(out, "#define RUN(k) ::ob_emu::launch(k, \"k\", ::ob_emu::config(1, \\\n  32))\nRUN(f);\n");
}

TEST(CudaConvert, DynamicSharedMemory) {
  EXPECT_EQ(body("extern __shared__ float srow[];"),
            "static float* const& srow = reinterpret_cast<float* const&>(::ob_emu::dynamic_shared_ref());");
  EXPECT_EQ(body("extern __shared__ __align__(16) unsigned char smem[ ];"),
            "static unsigned char* const& smem = reinterpret_cast<unsigned char* const&>(::ob_emu::dynamic_shared_ref());");
  EXPECT_THROW(convert("extern __shared__ float a[], b[];", "k.cu"), ConvertError);
  EXPECT_THROW(convert("extern __shared__ float a[16];", "k.cu"), ConvertError);
}

TEST(CudaConvert, StaticSharedMemory) {
  EXPECT_EQ(body("  __shared__ float part[kThreads];"),
            "  static float part[kThreads]; ::ob_emu::SharedStatic ob_emu_shared_part(&part, sizeof(part));");
  EXPECT_EQ(body("__shared__ __align__(128) ob_bf16 As[2][kBM * kLdA];"),
            "static __align__(128) ob_bf16 As[2][kBM * kLdA]; ::ob_emu::SharedStatic ob_emu_shared_As(&As, sizeof(As));");
  EXPECT_EQ(body("__shared__ float a[kTile][kTile], b[kTile][kTile];"),
            "static float a[kTile][kTile], b[kTile][kTile]; ::ob_emu::SharedStatic ob_emu_shared_a(&a, sizeof(a)), "
            "ob_emu_shared_b(&b, sizeof(b));");
  EXPECT_EQ(body("__shared__ double total;"), "static double total; ::ob_emu::SharedStatic ob_emu_shared_total(&total, sizeof(total));");
  EXPECT_EQ(body("static __shared__ int n;"), "static  int n; ::ob_emu::SharedStatic ob_emu_shared_n(&n, sizeof(n));");
  // In a macro it is left to the header's fallback (#define __shared__ static).
  EXPECT_EQ(body("#define BUF __shared__ float buf[32]\n"), "#define BUF __shared__ float buf[32]\n");
}

TEST(CudaConvert, LaunchBounds) {
  EXPECT_EQ(body("__global__ void __launch_bounds__(256, 2) k(const float* __restrict__ a, int n) {\n  body();\n}"),
            "__global__ void  k(const float* __restrict__ a, int n) { ::ob_emu::launch_bounds(256, 2);\n  body();\n}");
  EXPECT_EQ(body("template <int N> __global__ __launch_bounds__(N) void k(T (*f)(int)) { }"),
            "template <int N> __global__  void k(T (*f)(int)) { ::ob_emu::launch_bounds(N); }");
  // A declaration: removed, nothing inserted.
  EXPECT_EQ(body("__global__ void __launch_bounds__(64) k(int);"), "__global__ void  k(int);");
}

TEST(CudaConvert, ErrorsNameTheLine) {
  try {
    convert("int a;\n\nk<<<1, 1>>>;\n", "k.cu");
    FAIL() << "no error";
  } catch (const ConvertError& e) {
    EXPECT_EQ(e.line, 3);
    EXPECT_NE(std::string(e.what()).find("argument list"), std::string::npos);
  }
  EXPECT_THROW(convert("k<<<1, 1(x);", "k.cu"), ConvertError);
  EXPECT_THROW(convert("<<<1, 1>>>(x);", "k.cu"), ConvertError);
  EXPECT_THROW(convert("k<<<>>>(x);", "k.cu"), ConvertError);
}

TEST(CudaConvert, UntouchedSourceIsUnchanged) {
  const std::string src = "#include <cuda_runtime.h>\nint f(int a) { return a << 2 >> 1 < 3; }\nvector<vector<int>> v;\n";
  EXPECT_EQ(body(src), src);
}

}  // namespace
