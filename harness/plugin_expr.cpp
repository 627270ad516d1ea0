#include "harness/plugin_expr.h"

#include <cmath>

#ifdef CONVTUNE_HAVE_MUPARSER
#include <muParser.h>
#endif

namespace convtune {

std::string expressions_hint() {
  return "plug-ins need muparser: apt-get install libmuparser-dev, or `bash scripts/deps.sh muparser` (unpacks it "
         "into .deps/muparser, which a copied tree can carry), then configure again";
}

#ifdef CONVTUNE_HAVE_MUPARSER

bool expressions_available() { return true; }

namespace {
double floor_of(double x) { return std::floor(x); }
double ceil_of(double x) { return std::ceil(x); }
double ceil_div(double a, double b) { return std::ceil(a / b); }
double round_up(double a, double b) { return std::ceil(a / b) * b; }
double modulo(double a, double b) { return std::fmod(a, b); }
}  // namespace

struct Expr::Impl {
  mu::Parser parser;
  std::map<std::string, double> storage;  // node-based: the addresses the parser holds stay valid
  std::vector<std::string> used;           // the symbols the expression names
};

Expr::Expr(const std::string& text, const std::vector<std::string>& allowed) : text_(text), impl_(std::make_unique<Impl>()) {
  mu::Parser& p = impl_->parser;
  try {
    p.DefineFun("floor", floor_of);
    p.DefineFun("ceil", ceil_of);
    p.DefineFun("ceil_div", ceil_div);
    p.DefineFun("round_up", round_up);
    p.DefineOprt("%", modulo, mu::prMUL_DIV, mu::oaLEFT, true);
    for (const auto& name : allowed) p.DefineVar(name, &impl_->storage[name]);
    p.SetExpr(text);
    p.Eval();  // parses now: a bad expression fails at load, not mid-sweep
    for (const auto& used : p.GetUsedVar()) impl_->used.push_back(used.first);
  } catch (const mu::Parser::exception_type& e) {
    if (e.GetCode() == mu::ecUNASSIGNABLE_TOKEN) throw ExprError("unknown symbol '" + e.GetToken() + "'");
    if (text.find_first_not_of(" \t") == std::string::npos) throw ExprError("is empty");
    throw ExprError("does not parse: " + e.GetMsg());
  }
}

double Expr::eval(const Symbols& values) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& name : impl_->used) {
    auto it = values.find(name);
    if (it == values.end()) throw ExprError("'" + text_ + "' names '" + name + "', which has no value here");
    impl_->storage[name] = it->second;
  }
  try {
    return impl_->parser.Eval();
  } catch (const mu::Parser::exception_type& e) {
    throw ExprError("'" + text_ + "': " + e.GetMsg());
  }
}

const std::vector<std::string>& Expr::used() const { return impl_->used; }

#else

bool expressions_available() { return false; }
struct Expr::Impl {
  std::vector<std::string> used;
};
const std::vector<std::string>& Expr::used() const { return impl_->used; }
Expr::Expr(const std::string& text, const std::vector<std::string>&) : text_(text) { throw ExprError(expressions_hint()); }
double Expr::eval(const Symbols&) const { throw ExprError(expressions_hint()); }

#endif

Expr::~Expr() = default;

}  // namespace convtune
