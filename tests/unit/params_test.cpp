#include <gtest/gtest.h>

#include "core/error.h"
#include "search/params.h"

namespace opbench {

TEST(Params, ParsesDeclarationsAndDefaults) {
  const std::string source = R"(
// opbench:param TILE_M 32 64 128
// opbench:param UNROLL 1 2 4
#ifndef TILE_M
#define TILE_M 64
#endif
)";
  auto params = parse_tunable_params(source);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].name, "TILE_M");
  EXPECT_EQ(params[0].values, (std::vector<std::string>{"32", "64", "128"}));
  EXPECT_EQ(params[0].default_value, "64");
  EXPECT_EQ(params[1].default_value, "1");  // no #define: the first value
  EXPECT_DOUBLE_EQ(space_size(params), 9);
  ParamPoint d = default_point(params);
  EXPECT_EQ(describe_point(d), "TILE_M=64 UNROLL=1");
  EXPECT_EQ(point_from_key(point_key(d)), d);
}

TEST(Params, RejectsMalformedDeclarations) {
  EXPECT_THROW(parse_tunable_params("// opbench:param EMPTY\n"), UsageError);
  EXPECT_THROW(parse_tunable_params("// opbench:param A 1 2\n// opbench:param A 3\n"), UsageError);
  EXPECT_THROW(parse_tunable_params("// opbench:param A 1 2\n#define A 7\n"), UsageError);
  EXPECT_TRUE(parse_tunable_params("int main() {}\n").empty());
}

}  // namespace opbench
