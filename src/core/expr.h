// Arithmetic expressions over shape symbols, as written in workload.toml:
// "2*M*K*N", "(M*K + K*N + M*N) * elem", "5.43/sqrt(K)". Numbers, symbols, + - * / ^ (power),
// unary minus, parentheses, and the functions sqrt, log2, min, max.
#pragma once

#include <map>
#include <set>
#include <string>

namespace opbench {

using SymbolTable = std::map<std::string, double>;

// Evaluates `text` with the given symbols. Throws SpecError with the position of the problem on a
// syntax error or an unknown symbol, and SpecError when the value is not finite (division by zero,
// log2 of 0, overflow).
double evaluate_expression(const std::string& text, const SymbolTable& symbols);

// The symbols an expression refers to (function names excluded).
std::set<std::string> expression_symbols(const std::string& text);

}  // namespace opbench
