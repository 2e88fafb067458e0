#include <gtest/gtest.h>

#include "core/error.h"
#include "core/expr.h"

namespace opbench {

TEST(Expression, EvaluatesArithmeticWithPrecedence) {
  SymbolTable s{{"M", 4}, {"K", 8}, {"N", 2}, {"elem", 4}};
  EXPECT_DOUBLE_EQ(evaluate_expression("2*M*K*N", s), 128);
  EXPECT_DOUBLE_EQ(evaluate_expression("(M*K + K*N + M*N) * elem", s), (32 + 16 + 8) * 4);
  EXPECT_DOUBLE_EQ(evaluate_expression("2^3^2", s), 512);  // right-associative
  EXPECT_DOUBLE_EQ(evaluate_expression("-M + 10", s), 6);
  EXPECT_DOUBLE_EQ(evaluate_expression("5.43/sqrt(K*K)", s), 5.43 / 8);
  EXPECT_DOUBLE_EQ(evaluate_expression("max(M, N) - min(M, N)", s), 2);
  EXPECT_DOUBLE_EQ(evaluate_expression("1e-5", s), 1e-5);
}

TEST(Expression, RejectsUnknownSymbolsAndBadSyntax) {
  SymbolTable s{{"M", 4}};
  EXPECT_THROW(evaluate_expression("M*Q", s), SpecError);
  EXPECT_THROW(evaluate_expression("M*", s), SpecError);
  EXPECT_THROW(evaluate_expression("(M", s), SpecError);
  EXPECT_THROW(evaluate_expression("M M", s), SpecError);
  EXPECT_THROW(evaluate_expression("cos(M)", s), SpecError);
}

TEST(Expression, ListsItsSymbols) {
  auto symbols = expression_symbols("2*B*H*sqrt(S)*D + elem");
  EXPECT_EQ(symbols, (std::set<std::string>{"B", "H", "S", "D", "elem"}));
}

}  // namespace opbench

namespace opbench {
namespace {

TEST(ExprRobustness, NonFiniteValuesAreSpecErrorsNamingTheSymbols) {
  const SymbolTable s{{"M", 4}, {"K", 0}};
  EXPECT_THROW(evaluate_expression("M/K", s), SpecError);
  EXPECT_THROW(evaluate_expression("log2(K)", s), SpecError);
  EXPECT_THROW(evaluate_expression("sqrt(K-M)", s), SpecError);
  EXPECT_THROW(evaluate_expression("1e400", s), SpecError);
  EXPECT_THROW(evaluate_expression("M^100000", s), SpecError);
  try {
    evaluate_expression("M/K", s);
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("K=0"), std::string::npos) << e.what();
  }
  // Finite values pass, however large their factors.
  EXPECT_DOUBLE_EQ(evaluate_expression("2*M + 0.5", s), 8.5);
  EXPECT_DOUBLE_EQ(evaluate_expression("1e300 * 1e-300", s), 1.0);
}

}  // namespace
}  // namespace opbench
