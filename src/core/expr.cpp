#include "core/expr.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace opbench {
namespace {

// A recursive-descent parser that evaluates as it parses; expressions are tiny and evaluated
// rarely, so there is no AST.
class Parser {
 public:
  Parser(const std::string& text, const SymbolTable* symbols, std::set<std::string>* seen)
      : text_(text), symbols_(symbols), seen_(seen) {}

  double parse() {
    double v = sum();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected character");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw SpecError(fmt::format("expression '{}': {} at position {}", text_, what, pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  double sum() {
    double v = product();
    for (;;) {
      if (accept('+')) v += product();
      else if (accept('-')) v -= product();
      else return v;
    }
  }
  double product() {
    double v = power();
    for (;;) {
      if (accept('*')) v *= power();
      else if (accept('/')) v /= power();
      else return v;
    }
  }
  double power() {
    double base = unary();
    if (accept('^')) return std::pow(base, power());  // right-associative
    return base;
  }
  double unary() {
    if (accept('-')) return -unary();
    if (accept('+')) return unary();
    return primary();
  }
  double primary() {
    skip_space();
    if (accept('(')) {
      double v = sum();
      if (!accept(')')) fail("expected ')'");
      return v;
    }
    if (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) {
      // strtod, not stod: a literal too large for a double ("1e400") is a spec error with its
      // position, not an out_of_range exception from the library.
      const char* begin = text_.c_str() + pos_;
      char* end = nullptr;
      const double v = std::strtod(begin, &end);
      if (end == begin) fail("expected a number");
      pos_ += size_t(end - begin);
      if (!std::isfinite(v)) fail("a number too large for a double");
      return v;
    }
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      std::string name = text_.substr(start, pos_ - start);
      if (accept('(')) return call(name);
      if (seen_) seen_->insert(name);
      if (!symbols_) return 1.0;
      auto it = symbols_->find(name);
      if (it == symbols_->end()) fail(fmt::format("unknown symbol '{}'", name));
      return it->second;
    }
    fail("expected a number, a symbol or '('");
  }
  double call(const std::string& name) {
    std::vector<double> args{sum()};
    while (accept(',')) args.push_back(sum());
    if (!accept(')')) fail("expected ')' after function arguments");
    auto want = [&](size_t n) {
      if (args.size() != n) fail(fmt::format("{}() takes {} argument(s)", name, n));
    };
    if (name == "sqrt") { want(1); return std::sqrt(args[0]); }
    if (name == "log2") { want(1); return std::log2(args[0]); }
    if (name == "min") { want(2); return std::min(args[0], args[1]); }
    if (name == "max") { want(2); return std::max(args[0], args[1]); }
    fail(fmt::format("unknown function '{}'", name));
  }

  const std::string& text_;
  const SymbolTable* symbols_;
  std::set<std::string>* seen_;
  size_t pos_ = 0;
};

}  // namespace

double evaluate_expression(const std::string& text, const SymbolTable& symbols) {
  const double v = Parser(text, &symbols, nullptr).parse();
  // Division by zero, sqrt or log2 of a negative number, overflow: a shape, a work count or a
  // distribution parameter that is not a finite number would poison everything computed from it.
  if (!std::isfinite(v)) {
    std::string values;
    for (const auto& name : expression_symbols(text)) {
      auto it = symbols.find(name);
      if (it != symbols.end()) values += fmt::format("{}{}={}", values.empty() ? "" : ", ", name, it->second);
    }
    throw SpecError(fmt::format("expression '{}' is {} (not a finite number){}", text, v,
                                values.empty() ? "" : fmt::format(" with {}", values)));
  }
  return v;
}

std::set<std::string> expression_symbols(const std::string& text) {
  std::set<std::string> seen;
  Parser(text, nullptr, &seen).parse();
  return seen;
}

}  // namespace opbench
