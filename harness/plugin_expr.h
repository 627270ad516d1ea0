// Expressions of plug-in manifests (constraints, launch geometry, defines, cost models), evaluated by muparser:
// a well-kept library, not a parser of our own. Optional at build time, like zlib: without it
// expressions_available() is false and loading a plug-in says how to get it.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace convtune {

// An expression that does not parse or names a symbol it may not use. what(): the reason alone
// ("unknown symbol 'blok_x'", "does not parse: Unexpected end of expression at position 5").
class ExprError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bool expressions_available();
// How to get the expression library, for the one-line error where it is missing.
std::string expressions_hint();

// Values of the symbols an expression may name (dims, parameters, device limits, derived values).
using Symbols = std::map<std::string, double>;

// One parsed expression. Numbers are doubles; comparisons and && || give 0 or 1; besides muparser's own
// functions (min, max, abs, sqrt, log2, rint ...) there are floor, ceil, ceil_div(a, b), round_up(a, b)
// and the operator %.
class Expr {
 public:
  // Parses `text`, which may name only `allowed`; throws ExprError.
  Expr(const std::string& text, const std::vector<std::string>& allowed);
  ~Expr();
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;

  const std::string& text() const { return text_; }
  const std::vector<std::string>& used() const;  // the symbols it names
  // Every symbol it names must be in `values`; throws ExprError otherwise (a logic error of the caller).
  double eval(const Symbols& values) const;

 private:
  struct Impl;
  std::string text_;
  std::unique_ptr<Impl> impl_;
  mutable std::mutex mutex_;  // the parser reads its variables from fixed addresses
};

}  // namespace convtune
