// decomposition.cpp — expands a composite op into primitive nodes by running its row's decomposition program
// (docs/op-table.md, "The decomposition language") on concrete input types. Each program is parsed once and
// cached. Evaluation allocates: composites are decomposed when one runs without a native kernel or when a graph
// is built, never on a primitive's launch path.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <locale>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "primkit/op_info.hpp"

#if defined(__GNUC__)
#define PK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PK_PRINTF(f, a)
#endif

namespace pk::meta {

namespace {

// Value lists only ever hold axes and extents; the cap keeps a huge attribute from turning iota(n) or
// repeat(v, n) into an allocation storm.
constexpr int64_t kMaxList = 1024;

std::string format(const char *fmt, ...) PK_PRINTF(1, 2);
std::string format(const char *fmt, ...) {
  char buf[PK_MESSAGE_CAPACITY];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

template <class T>
T load(const void *base, size_t off) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char *>(base) + off, sizeof v);
  return v;
}

template <class T>
void store(void *base, size_t off, T v) {
  std::memcpy(static_cast<unsigned char *>(base) + off, &v, sizeof v);
}

std::string type_text(const TensorType &t) {
  std::string s = dtype_name(t.dtype);
  s += '[';
  for (int32_t d = 0; d < t.ndim && d < PK_MAX_RANK; ++d) {
    if (d) s += ',';
    s += std::to_string(t.shape[d]);
  }
  return s + ']';
}

// --- tokens -------------------------------------------------------------------------------------------------

enum class TokKind : uint8_t { integer, real, name, punct, end };

struct Token {
  TokKind kind;
  std::string text;
};

std::string describe(const Token &t) {
  if (t.kind == TokKind::end) return "the end of the line";
  return "'" + t.text + "'";
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

// Mirrors tokenize() in gen_ops.py (numbers \d+\.\d*([eE][-+]?\d+)?, \d+[eE][-+]?\d+ and \d+; identifiers;
// punctuation), so both accept the same programs. "//" is one token here; '#' starts a comment.
bool tokenize(const std::string &line, std::vector<Token> &toks, std::string &err) {
  const size_t n = line.size();
  auto digit_at = [&](size_t k) { return k < n && is_digit(line[k]); };
  auto exponent_at = [&](size_t k) -> size_t {  // length of [eE][-+]?\d+ at k, 0 if there is none
    if (k >= n || (line[k] != 'e' && line[k] != 'E')) return 0;
    size_t j = k + 1;
    if (j < n && (line[j] == '+' || line[j] == '-')) ++j;
    if (!digit_at(j)) return 0;
    while (digit_at(j)) ++j;
    return j - k;
  };
  toks.clear();
  size_t i = 0;
  while (i < n) {
    char c = line[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '#') break;
    size_t b = i;
    if (is_digit(c)) {
      while (digit_at(i)) ++i;
      bool real = false;
      if (i < n && line[i] == '.') {
        real = true;
        ++i;
        while (digit_at(i)) ++i;
        i += exponent_at(i);
      } else if (size_t e = exponent_at(i)) {
        real = true;
        i += e;
      }
      toks.push_back({real ? TokKind::real : TokKind::integer, line.substr(b, i - b)});
    } else if (is_name_start(c)) {
      while (i < n && is_name_char(line[i])) ++i;
      toks.push_back({TokKind::name, line.substr(b, i - b)});
    } else if (c == '/' && i + 1 < n && line[i + 1] == '/') {
      i += 2;
      toks.push_back({TokKind::punct, "//"});
    } else if (std::strchr("+-*/()[],=", c) != nullptr) {
      ++i;
      toks.push_back({TokKind::punct, std::string(1, c)});
    } else {
      unsigned char u = static_cast<unsigned char>(c);
      err = std::isprint(u) ? format("unexpected character '%c'", c) : format("unexpected byte 0x%02x", u);
      return false;
    }
  }
  toks.push_back({TokKind::end, ""});
  return true;
}

// --- values and the program -----------------------------------------------------------------------------------

struct Value {
  enum class Kind : uint8_t { integer, real, boolean, dtype, list, tensor, absent };
  Kind kind = Kind::integer;
  int64_t i = 0;  // integer, boolean (0/1), dtype id or tensor (index into Decomposition::values)
  double f = 0.0;
  std::vector<int64_t> list;
};

const char *kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::integer:
      return "an int";
    case Value::Kind::real:
      return "a float";
    case Value::Kind::boolean:
      return "a bool";
    case Value::Kind::dtype:
      return "a dtype";
    case Value::Kind::list:
      return "a list";
    case Value::Kind::tensor:
      return "a tensor";
    case Value::Kind::absent:
      return "an absent input";
  }
  return "?";
}

// clang-format off
enum class Fn : uint8_t {
  shape, rank, dtype, numel, size, iota, remove, insert, concat, at, slice_list, reverse, prod, repeat,
  permute_inverse, without, compute_dtype, is_bool, min, max, to_float, to_int
};
// clang-format on

enum class ArgKind : uint8_t { value, tensor, any };  // what the function's first argument is

struct FnInfo {
  const char *name;
  Fn fn;
  uint32_t arity;
  ArgKind first;
};

constexpr FnInfo kFns[] = {
    {"shape", Fn::shape, 1, ArgKind::tensor},
    {"rank", Fn::rank, 1, ArgKind::tensor},
    {"dtype", Fn::dtype, 1, ArgKind::tensor},
    {"numel", Fn::numel, 1, ArgKind::tensor},
    {"size", Fn::size, 2, ArgKind::tensor},
    {"iota", Fn::iota, 1, ArgKind::value},
    {"remove", Fn::remove, 2, ArgKind::value},
    {"insert", Fn::insert, 3, ArgKind::value},
    {"concat", Fn::concat, 2, ArgKind::value},
    {"at", Fn::at, 2, ArgKind::value},
    {"slice_list", Fn::slice_list, 3, ArgKind::value},
    {"reverse", Fn::reverse, 1, ArgKind::value},
    {"prod", Fn::prod, 1, ArgKind::value},
    {"repeat", Fn::repeat, 2, ArgKind::value},
    {"permute_inverse", Fn::permute_inverse, 1, ArgKind::value},
    {"without", Fn::without, 2, ArgKind::value},
    {"compute_dtype", Fn::compute_dtype, 1, ArgKind::any},
    {"is_bool", Fn::is_bool, 1, ArgKind::any},
    {"min", Fn::min, 2, ArgKind::value},
    {"max", Fn::max, 2, ArgKind::value},
    {"float", Fn::to_float, 1, ArgKind::value},
    {"int", Fn::to_int, 1, ArgKind::value},
};

const FnInfo *find_fn(const std::string &name) {
  for (const FnInfo &f : kFns)
    if (name == f.name) return &f;
  return nullptr;
}

struct Expr {
  enum class Kind : uint8_t { literal, var, attr, neg, binary, list, fn, call };
  Kind kind = Kind::literal;
  bool tensor = false;  // known statically: a tensor-valued name or an op call
  char op = 0;          // binary: '+', '-', '*', '/' or 'f' (floor division)
  int32_t index = 0;    // var: slot; attr: the composite's attribute index
  Value lit;
  const FnInfo *fn = nullptr;
  const OpInfo *callee = nullptr;
  std::vector<Expr> args;         // operands, list items, function arguments or the call's tensors
  std::vector<int32_t> kw_attrs;  // call: the callee attribute each keyword sets ...
  std::vector<Expr> kw_values;    // ... and its value
};

struct Stmt {
  int line;
  std::vector<int32_t> targets;  // slots
  Expr rhs;
};

struct Program {
  std::string text;   // what was parsed, so that a cache hit on a reused pointer is confirmed
  std::string error;  // non-empty: the program is broken (reported as PK_ERROR_INTERNAL)
  std::vector<Stmt> stmts;
  std::vector<int32_t> returns;  // slots
  int return_line = 0;
  int32_t num_slots = 0;  // the composite's inputs are slots 0..num_inputs-1
};

// --- parser ---------------------------------------------------------------------------------------------------

class Parser {
 public:
  Parser(const OpInfo &op, Program &prog) : op_(op), prog_(prog) {}

  void run() {
    for (uint32_t i = 0; i < op_.num_inputs; ++i) bind(op_.inputs[i].name, true);
    const std::string &text = prog_.text;
    bool returned = false;
    int line = 0;
    size_t begin = 0;
    while (begin <= text.size()) {
      size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      std::string ln = text.substr(begin, end - begin);
      begin = end + 1;
      ++line;
      size_t first = ln.find_first_not_of(" \t\r");
      if (first == std::string::npos || ln[first] == '#') continue;
      line_ = line;
      if (returned) {
        fail("code after `return`; return must be the last line");
      } else if (!tokenize(ln, toks_, err_)) {
        // err_ is set
      } else if (toks_[0].kind == TokKind::name && toks_[0].text == "return") {
        returned = parse_return();
      } else {
        parse_statement();
      }
      if (!err_.empty()) break;
    }
    if (err_.empty() && !returned) {
      line_ = line_ > 0 ? line_ : 1;
      fail("the program does not end with `return ...`");
    }
    if (!err_.empty()) {
      prog_.error = format("%s: decomposition line %d: %s", op_.name, line_, err_.c_str());
      prog_.stmts.clear();
      prog_.returns.clear();
    }
    prog_.num_slots = static_cast<int32_t>(slot_tensor_.size());
  }

 private:
  bool fail(std::string msg) {
    if (err_.empty()) err_ = std::move(msg);
    return false;
  }
  const Token &peek(size_t k = 0) const { return toks_[pos_ + k < toks_.size() ? pos_ + k : toks_.size() - 1]; }
  bool is(const char *p, size_t k = 0) const { return peek(k).kind == TokKind::punct && peek(k).text == p; }
  bool accept(const char *p) {
    if (!is(p)) return false;
    ++pos_;
    return true;
  }
  bool expect(const char *p, const char *where) {
    if (accept(p)) return true;
    return fail(format("expected '%s' %s, found %s", p, where, describe(peek()).c_str()));
  }
  bool at_end() const { return peek().kind == TokKind::end; }

  void bind(const std::string &name, bool tensor) {
    names_[name] = static_cast<int32_t>(slot_tensor_.size());
    slot_tensor_.push_back(tensor);
  }

  bool reserved(const std::string &name) const {
    return name == "return" || name == "true" || name == "false" || name == "inf" || name == "nan" || name == "pi" ||
           dtype_id(name) >= 0;
  }

  bool parse_return() {
    prog_.return_line = line_;
    pos_ = 1;
    std::vector<std::string> names;
    do {
      if (peek().kind != TokKind::name)
        return fail("`return` lists the names of the outputs, found " + describe(peek()));
      names.push_back(peek().text);
      ++pos_;
    } while (accept(","));
    if (!at_end()) return fail("unexpected " + describe(peek()) + " after `return`");
    for (const std::string &n : names) {
      auto it = names_.find(n);
      if (it == names_.end()) return fail("returns " + n + ", which is not defined");
      if (!slot_tensor_[static_cast<size_t>(it->second)]) return fail("returns " + n + ", which is not a tensor");
      prog_.returns.push_back(it->second);
    }
    if (names.size() != op_.num_outputs) {
      return fail(format("returns %zu value%s but the op has %u output%s", names.size(), names.size() == 1 ? "" : "s",
                         op_.num_outputs, op_.num_outputs == 1 ? "" : "s"));
    }
    return true;
  }

  bool parse_statement() {
    pos_ = 0;
    std::vector<std::string> targets;
    do {
      if (peek().kind != TokKind::name) return fail("expected `name = ...`, found " + describe(peek()));
      const std::string &t = peek().text;
      if (reserved(t)) return fail("cannot bind " + t + " (a keyword, constant or dtype name)");
      for (const std::string &prev : targets)
        if (prev == t) return fail("binds " + t + " twice");
      targets.push_back(t);
      ++pos_;
    } while (accept(","));
    if (!expect("=", "after the names a line binds")) return false;
    Stmt st;
    st.line = line_;
    if (!parse_expr(st.rhs)) return false;
    if (!at_end()) return fail("unexpected " + describe(peek()) + " after the expression");
    if (!check_nested(st.rhs, true)) return false;
    if (st.rhs.kind == Expr::Kind::call) {
      uint32_t n = st.rhs.callee->num_outputs;
      if (n != targets.size()) {
        if (targets.size() == 1) {
          return fail(format("%s has %u outputs; bind them all (`a, b = %s(...)`)", st.rhs.callee->name, n,
                             st.rhs.callee->name));
        }
        return fail(format("binds %zu names but %s has %u output%s", targets.size(), st.rhs.callee->name, n,
                           n == 1 ? "" : "s"));
      }
    } else if (targets.size() != 1) {
      return fail("only an op call with several outputs binds several names");
    }
    for (const std::string &t : targets) {
      bind(t, st.rhs.tensor);
      st.targets.push_back(names_[t]);
    }
    prog_.stmts.push_back(std::move(st));
    return true;
  }

  // Nested op calls yield one tensor each; only a line's own call may bind several outputs.
  bool check_nested(const Expr &e, bool root) {
    if (e.kind == Expr::Kind::call && !root && e.callee->num_outputs != 1) {
      return fail(format("%s has %u outputs and cannot be nested; bind them on a line of their own", e.callee->name,
                         e.callee->num_outputs));
    }
    for (const Expr &a : e.args)
      if (!check_nested(a, false)) return false;
    for (const Expr &a : e.kw_values)
      if (!check_nested(a, false)) return false;
    return true;
  }

  bool no_tensor(const Expr &e, const char *what) {
    if (e.tensor) return fail(std::string(what) + " works on values, not tensors");
    return true;
  }

  bool parse_expr(Expr &e) {
    if (!parse_term(e)) return false;
    while (is("+") || is("-")) {
      char op = peek().text[0];
      ++pos_;
      Expr rhs;
      if (!parse_term(rhs)) return false;
      if (!binary(e, op, std::move(rhs))) return false;
    }
    return true;
  }

  bool parse_term(Expr &e) {
    if (!parse_unary(e)) return false;
    while (is("*") || is("/") || is("//")) {
      char op = is("//") ? 'f' : peek().text[0];
      ++pos_;
      Expr rhs;
      if (!parse_unary(rhs)) return false;
      if (!binary(e, op, std::move(rhs))) return false;
    }
    return true;
  }

  bool binary(Expr &lhs, char op, Expr rhs) {
    if (!no_tensor(lhs, "arithmetic") || !no_tensor(rhs, "arithmetic")) return false;
    Expr e;
    e.kind = Expr::Kind::binary;
    e.op = op;
    e.args.push_back(std::move(lhs));
    e.args.push_back(std::move(rhs));
    lhs = std::move(e);
    return true;
  }

  bool parse_unary(Expr &e) {
    if (accept("-")) {
      Expr operand;
      if (!parse_unary(operand) || !no_tensor(operand, "unary minus")) return false;
      e = Expr();
      e.kind = Expr::Kind::neg;
      e.args.push_back(std::move(operand));
      return true;
    }
    return parse_primary(e);
  }

  bool parse_primary(Expr &e) {
    const Token t = peek();
    e = Expr();
    if (t.kind == TokKind::integer) {
      ++pos_;
      int64_t v = 0;
      for (char c : t.text) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) {
          return fail("integer literal " + t.text + " does not fit in 64 bits");
        }
      }
      e.lit.kind = Value::Kind::integer;
      e.lit.i = v;
      return true;
    }
    if (t.kind == TokKind::real) {
      ++pos_;
      // The classic locale: a host application's locale must not change how "0.5" reads.
      std::istringstream in(t.text);
      in.imbue(std::locale::classic());
      double v = 0.0;
      in >> v;
      if (in.fail()) return fail("bad number " + t.text);
      e.lit.kind = Value::Kind::real;
      e.lit.f = v;
      return true;
    }
    if (t.kind == TokKind::name) {
      ++pos_;
      if (is("(")) return parse_call(t.text, e);
      return resolve(t.text, e);
    }
    if (accept("(")) {
      if (!parse_expr(e)) return false;
      return expect(")", "to close the parenthesis");
    }
    if (accept("[")) {
      e.kind = Expr::Kind::list;
      if (accept("]")) return true;
      do {
        Expr item;
        if (!parse_expr(item) || !no_tensor(item, "a list")) return false;
        e.args.push_back(std::move(item));
      } while (accept(","));
      return expect("]", "to close the list");
    }
    return fail("expected a value, found " + describe(t));
  }

  // A bare name: a bound name or input, the composite's attribute, a constant or a dtype.
  bool resolve(const std::string &name, Expr &e) {
    auto it = names_.find(name);
    if (it != names_.end()) {
      e.kind = Expr::Kind::var;
      e.index = it->second;
      e.tensor = slot_tensor_[static_cast<size_t>(it->second)];
      return true;
    }
    for (uint32_t a = 0; a < op_.num_attrs; ++a) {
      if (name == op_.attrs[a].name) {
        e.kind = Expr::Kind::attr;
        e.index = static_cast<int32_t>(a);
        return true;
      }
    }
    e.kind = Expr::Kind::literal;
    if (name == "true" || name == "false") {
      e.lit.kind = Value::Kind::boolean;
      e.lit.i = name == "true";
    } else if (name == "inf" || name == "nan" || name == "pi") {
      e.lit.kind = Value::Kind::real;
      e.lit.f = name == "inf" ? HUGE_VAL : (name == "nan" ? std::nan("") : 3.14159265358979323846);
    } else if (int32_t id = dtype_id(name); id >= 0) {
      e.lit.kind = Value::Kind::dtype;
      e.lit.i = id;
    } else {
      return fail("uses " + name + ", which is not defined");
    }
    return true;
  }

  bool parse_call(const std::string &name, Expr &e) {
    ++pos_;  // the caller saw the "("
    std::vector<std::string> kw_names;
    std::vector<Expr> positional, kw_values;
    if (!accept(")")) {
      do {
        if (peek().kind == TokKind::name && is("=", 1)) {
          kw_names.push_back(peek().text);
          pos_ += 2;
          Expr v;
          if (!parse_expr(v)) return false;
          kw_values.push_back(std::move(v));
        } else {
          if (!kw_names.empty()) return fail("a positional argument of " + name + " follows a keyword argument");
          Expr v;
          if (!parse_expr(v)) return false;
          positional.push_back(std::move(v));
        }
      } while (accept(","));
      if (!expect(")", ("to close the call of " + name).c_str())) return false;
    }
    const FnInfo *fn = find_fn(name);
    const OpInfo *callee = find_op(std::string_view(name));
    bool any_tensor = false;
    for (const Expr &p : positional) any_tensor = any_tensor || p.tensor;
    // A name shared by a function and a primitive (iota, prod) is the primitive when called with keywords or
    // a tensor.
    if (callee != nullptr && (fn == nullptr || !kw_names.empty() || any_tensor)) {
      return op_call(*callee, std::move(positional), kw_names, std::move(kw_values), e);
    }
    if (fn == nullptr) return fail("calls " + name + ", which is neither an op nor a function");
    if (!kw_names.empty()) return fail("function " + name + "() takes no keyword arguments");
    if (positional.size() != fn->arity) {
      return fail(format("%s() takes %u argument%s, got %zu", fn->name, fn->arity, fn->arity == 1 ? "" : "s",
                         positional.size()));
    }
    for (size_t k = 0; k < positional.size(); ++k) {
      ArgKind want = k == 0 ? fn->first : ArgKind::value;
      if (want == ArgKind::tensor && !positional[k].tensor) {
        return fail(format("%s() needs a tensor as argument %zu", fn->name, k + 1));
      }
      if (want == ArgKind::value && positional[k].tensor) {
        return fail(format("argument %zu of %s() is a tensor; it takes values", k + 1, fn->name));
      }
    }
    e.kind = Expr::Kind::fn;
    e.fn = fn;
    e.args = std::move(positional);
    return true;
  }

  bool op_call(const OpInfo &callee, std::vector<Expr> positional, const std::vector<std::string> &kw_names,
               std::vector<Expr> kw_values, Expr &e) {
    if (callee.tier != Tier::primitive) {
      return fail(format("calls %s, a composite op; decompositions call primitives only", callee.name));
    }
    for (size_t k = 0; k < positional.size(); ++k) {
      if (!positional[k].tensor) {
        return fail(
            format("argument %zu of %s is not a tensor (attributes are keyword arguments)", k + 1, callee.name));
      }
    }
    uint32_t n = static_cast<uint32_t>(positional.size());
    uint32_t min_in = callee.num_inputs;
    while (min_in > 0 && callee.inputs[min_in - 1].optional && !callee.inputs[min_in - 1].variadic) --min_in;
    if (callee.variadic() ? n < callee.num_inputs : (n < min_in || n > callee.num_inputs)) {
      return fail(format("%s takes %s%u tensor%s, got %u", callee.name, callee.variadic() ? "at least " : "",
                         callee.num_inputs, callee.num_inputs == 1 ? "" : "s", n));
    }
    std::vector<bool> given(callee.num_attrs, false);
    for (size_t k = 0; k < kw_names.size(); ++k) {
      int32_t idx = -1;
      for (uint32_t a = 0; a < callee.num_attrs; ++a)
        if (kw_names[k] == callee.attrs[a].name) idx = static_cast<int32_t>(a);
      if (idx < 0) return fail(format("%s has no attribute %s", callee.name, kw_names[k].c_str()));
      if (given[static_cast<size_t>(idx)]) {
        return fail(format("attribute %s of %s is given twice", kw_names[k].c_str(), callee.name));
      }
      if (kw_values[k].tensor) {
        return fail(format("attribute %s of %s is given a tensor", kw_names[k].c_str(), callee.name));
      }
      given[static_cast<size_t>(idx)] = true;
      e.kw_attrs.push_back(idx);
    }
    for (uint32_t a = 0; a < callee.num_attrs; ++a) {
      if (!given[a] && !callee.attrs[a].has_default) {
        return fail(
            format("attribute %s of callee %s has no default and is not given", callee.attrs[a].name, callee.name));
      }
    }
    e.kind = Expr::Kind::call;
    e.tensor = true;
    e.callee = &callee;
    e.args = std::move(positional);
    e.kw_values = std::move(kw_values);
    return true;
  }

  const OpInfo &op_;
  Program &prog_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int line_ = 0;
  std::string err_;
  std::map<std::string, int32_t> names_;  // the latest slot of each bound name
  std::vector<bool> slot_tensor_;
};

// --- evaluation -----------------------------------------------------------------------------------------------

// f16, bf16 and fp8: the floats that compute in f32 (compute_dtype() in programs, and the rows' opmath).
bool is_narrow_float(int32_t dtype) {
  return is_float(dtype) && dtype_size(dtype) < 4;
}

class Evaluator {
 public:
  Evaluator(const OpInfo &op, const Program &prog, const void *attrs, Decomposition &out, Diag &diag)
      : op_(op), prog_(prog), attrs_(attrs), out_(out), diag_(diag) {}

  // input_values[i] is the value the program reads as its input i (the input itself, or its f32 copy under
  // opmath).
  bool run(uint32_t num_inputs, const std::vector<int32_t> &input_values) {
    slots_.resize(static_cast<size_t>(prog_.num_slots));
    for (uint32_t i = 0; i < op_.num_inputs; ++i) {
      slots_[i].kind = i < num_inputs ? Value::Kind::tensor : Value::Kind::absent;
      slots_[i].i = i < num_inputs ? input_values[i] : static_cast<int32_t>(i);
    }
    for (const Stmt &st : prog_.stmts) {
      line_ = st.line;
      if (st.targets.size() > 1) {
        std::vector<int32_t> outs;
        if (!call(st.rhs, outs)) return false;
        for (size_t k = 0; k < st.targets.size(); ++k) {
          Value &v = slots_[static_cast<size_t>(st.targets[k])];
          v.kind = Value::Kind::tensor;
          v.i = outs[k];
        }
      } else {
        Value v;
        if (!eval(st.rhs, v)) return false;
        slots_[static_cast<size_t>(st.targets[0])] = std::move(v);
      }
    }
    line_ = prog_.return_line;
    for (int32_t s : prog_.returns) {
      const Value &v = slots_[static_cast<size_t>(s)];
      if (v.kind != Value::Kind::tensor) return fail(PK_ERROR_INTERNAL, "returns %s", kind_name(v.kind));
      out_.outputs.push_back(static_cast<int32_t>(v.i));
    }
    return true;
  }

 private:
  PK_PRINTF(3, 4) bool fail(pk_status s, const char *fmt, ...) {
    char buf[PK_MESSAGE_CAPACITY];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return diag_.fail(s, -1, "%s: decomposition line %d: %s", op_.name, line_, buf);
  }

  // Wrong kinds are program bugs; bad ranges usually come from the caller's inputs and attributes.
  bool need(const Value &v, Value::Kind k, const char *what) {
    if (v.kind == k) return true;
    return fail(PK_ERROR_INTERNAL, "%s must be %s, got %s", what, kind_name(k), kind_name(v.kind));
  }

  bool number(const Value &v, const char *what, double &out) {
    if (v.kind == Value::Kind::integer) {
      out = static_cast<double>(v.i);
      return true;
    }
    if (v.kind == Value::Kind::real) {
      out = v.f;
      return true;
    }
    return fail(PK_ERROR_INTERNAL, "%s must be a number, got %s%s", what, kind_name(v.kind),
                v.kind == Value::Kind::boolean ? " (float(b) converts a bool)" : "");
  }

  bool index_in(int64_t i, int64_t lo, int64_t hi, const char *fn, const char *what) {
    if (i >= lo && i <= hi) return true;
    return fail(PK_ERROR_INVALID_ARGUMENT, "%s(): %s %lld is outside %lld..%lld", fn, what, static_cast<long long>(i),
                static_cast<long long>(lo), static_cast<long long>(hi));
  }

  bool list_len(int64_t n, const char *fn) {
    if (n <= kMaxList) return true;
    return fail(PK_ERROR_INVALID_ARGUMENT, "%s() would make a list of %lld values (at most %lld)", fn,
                static_cast<long long>(n), static_cast<long long>(kMaxList));
  }

  static Value integer(int64_t i) {
    Value v;
    v.kind = Value::Kind::integer;
    v.i = i;
    return v;
  }
  static Value real(double f) {
    Value v;
    v.kind = Value::Kind::real;
    v.f = f;
    return v;
  }
  static Value list(std::vector<int64_t> l) {
    Value v;
    v.kind = Value::Kind::list;
    v.list = std::move(l);
    return v;
  }

  bool attr_value(int32_t index, Value &v) {
    const AttrInfo &a = op_.attrs[index];
    switch (a.type) {
      case AttrType::i64:
      case AttrType::enumeration:
        v = integer(a.type == AttrType::i64 ? load<int64_t>(attrs_, a.offset) : load<int32_t>(attrs_, a.offset));
        return true;
      case AttrType::f64:
        v = real(load<double>(attrs_, a.offset));
        return true;
      case AttrType::boolean:
        v.kind = Value::Kind::boolean;
        v.i = load<int32_t>(attrs_, a.offset) != 0;
        return true;
      case AttrType::dtype:
        v.kind = Value::Kind::dtype;
        v.i = load<int32_t>(attrs_, a.offset);
        return true;
      case AttrType::ints: {
        int32_t n = load<int32_t>(attrs_, a.count_offset);
        n = n < 0 ? 0 : (n > PK_MAX_RANK ? PK_MAX_RANK : n);  // check_attrs rejected anything else
        std::vector<int64_t> l(static_cast<size_t>(n));
        for (int32_t k = 0; k < n; ++k) l[static_cast<size_t>(k)] = load<int64_t>(attrs_, a.offset + 8 * size_t(k));
        v = list(std::move(l));
        return true;
      }
    }
    return fail(PK_ERROR_INTERNAL, "attribute %s has an unknown type", a.name);
  }

  bool eval(const Expr &e, Value &v) {
    switch (e.kind) {
      case Expr::Kind::literal:
        v = e.lit;
        return true;
      case Expr::Kind::var: {
        const Value &s = slots_[static_cast<size_t>(e.index)];
        if (s.kind == Value::Kind::absent) {
          return fail(PK_ERROR_INVALID_ARGUMENT, "uses input %s, which is not given", op_.inputs[e.index].name);
        }
        v = s;
        return true;
      }
      case Expr::Kind::attr:
        return attr_value(e.index, v);
      case Expr::Kind::neg: {
        Value a;
        if (!eval(e.args[0], a)) return false;
        if (a.kind == Value::Kind::integer) {
          if (a.i == INT64_MIN) return fail(PK_ERROR_INVALID_ARGUMENT, "integer overflow in unary minus");
          v = integer(-a.i);
          return true;
        }
        double f = 0.0;
        if (!number(a, "the operand of unary minus", f)) return false;
        v = real(-f);
        return true;
      }
      case Expr::Kind::binary: {
        Value a, b;
        if (!eval(e.args[0], a) || !eval(e.args[1], b)) return false;
        return arith(e.op, a, b, v);
      }
      case Expr::Kind::list: {
        std::vector<int64_t> l;
        for (const Expr &item : e.args) {
          Value x;
          if (!eval(item, x) || !need(x, Value::Kind::integer, "a list element")) return false;
          l.push_back(x.i);
        }
        v = list(std::move(l));
        return true;
      }
      case Expr::Kind::fn: {
        std::vector<Value> args(e.args.size());
        for (size_t k = 0; k < e.args.size(); ++k)
          if (!eval(e.args[k], args[k])) return false;
        return apply(*e.fn, args, v);
      }
      case Expr::Kind::call: {
        std::vector<int32_t> outs;
        if (!call(e, outs)) return false;
        v.kind = Value::Kind::tensor;
        v.i = outs[0];
        return true;
      }
    }
    return fail(PK_ERROR_INTERNAL, "unknown expression");
  }

  bool arith(char op, const Value &a, const Value &b, Value &v) {
    const char *name = op == 'f' ? "//" : (op == '+' ? "+" : op == '-' ? "-" : op == '*' ? "*" : "/");
    char what[48];
    std::snprintf(what, sizeof what, "an operand of %s", name);
    double x = 0.0, y = 0.0;
    if (!number(a, what, x) || !number(b, what, y)) return false;
    bool ints = a.kind == Value::Kind::integer && b.kind == Value::Kind::integer;
    if (op == '/') {
      v = real(x / y);  // IEEE: x / 0 is +-inf or NaN, which fill() and friends accept
      return true;
    }
    if (op == 'f') {
      if (!ints) return fail(PK_ERROR_INTERNAL, "// is integer floor division; its operands must be ints");
      if (b.i == 0) return fail(PK_ERROR_INVALID_ARGUMENT, "integer division by zero");
      if (a.i == INT64_MIN && b.i == -1) return fail(PK_ERROR_INVALID_ARGUMENT, "integer overflow in //");
      int64_t q = a.i / b.i;
      if (a.i % b.i != 0 && ((a.i < 0) != (b.i < 0))) --q;
      v = integer(q);
      return true;
    }
    if (ints) {
      int64_t r = 0;
      bool over = op == '+' ? __builtin_add_overflow(a.i, b.i, &r)
                            : (op == '-' ? __builtin_sub_overflow(a.i, b.i, &r) : __builtin_mul_overflow(a.i, b.i, &r));
      if (over) {
        return fail(PK_ERROR_INVALID_ARGUMENT, "integer overflow in %lld %s %lld", static_cast<long long>(a.i), name,
                    static_cast<long long>(b.i));
      }
      v = integer(r);
      return true;
    }
    v = real(op == '+' ? x + y : (op == '-' ? x - y : x * y));
    return true;
  }

  bool apply(const FnInfo &fn, const std::vector<Value> &args, Value &v) {
    const char *n = fn.name;
    auto tensor_of = [&](const Value &t) -> const TensorType & { return out_.values[static_cast<size_t>(t.i)]; };
    auto need_list = [&](size_t k) {
      return need(args[k], Value::Kind::list, format("argument %zu of %s()", k + 1, n).c_str());
    };
    auto need_int = [&](size_t k) {
      return need(args[k], Value::Kind::integer, format("argument %zu of %s()", k + 1, n).c_str());
    };
    switch (fn.fn) {
      case Fn::shape:
      case Fn::rank:
      case Fn::dtype:
      case Fn::numel:
      case Fn::size: {
        if (!need(args[0], Value::Kind::tensor, format("argument 1 of %s()", n).c_str())) return false;
        const TensorType &t = tensor_of(args[0]);
        if (fn.fn == Fn::shape) {
          v = list(std::vector<int64_t>(t.shape, t.shape + t.ndim));
        } else if (fn.fn == Fn::rank) {
          v = integer(t.ndim);
        } else if (fn.fn == Fn::dtype) {
          v.kind = Value::Kind::dtype;
          v.i = t.dtype;
        } else if (fn.fn == Fn::numel) {
          int64_t p = 1;
          for (int32_t d = 0; d < t.ndim; ++d)
            if (__builtin_mul_overflow(p, t.shape[d], &p)) return fail(PK_ERROR_INVALID_ARGUMENT, "numel() overflows");
          v = integer(p);
        } else {
          if (!need_int(1) || !index_in(args[1].i, 0, t.ndim - 1, n, "axis")) return false;
          v = integer(t.shape[args[1].i]);
        }
        return true;
      }
      case Fn::compute_dtype: {
        int32_t dt = -1;
        if (args[0].kind == Value::Kind::tensor) {
          dt = tensor_of(args[0]).dtype;
        } else if (args[0].kind == Value::Kind::dtype) {
          dt = static_cast<int32_t>(args[0].i);
        } else {
          return fail(PK_ERROR_INTERNAL, "compute_dtype() takes a tensor or a dtype, got %s", kind_name(args[0].kind));
        }
        // Normalizations compute narrow floats (f16, bf16, fp8) in f32.
        v.kind = Value::Kind::dtype;
        v.i = is_narrow_float(dt) ? PK_DTYPE_F32 : dt;
        return true;
      }
      case Fn::is_bool: {
        // Lets one program serve an input that may be a bool or a number (an attention mask that selects or
        // adds): the language has no branches, so a program computes both forms and selects with where().
        if (args[0].kind != Value::Kind::tensor && args[0].kind != Value::Kind::dtype) {
          return fail(PK_ERROR_INTERNAL, "is_bool() takes a tensor or a dtype, got %s", kind_name(args[0].kind));
        }
        const int32_t dt =
            args[0].kind == Value::Kind::tensor ? tensor_of(args[0]).dtype : static_cast<int32_t>(args[0].i);
        v.kind = Value::Kind::boolean;
        v.i = dt == PK_DTYPE_BOOL ? 1 : 0;
        return true;
      }
      case Fn::iota: {
        if (!need_int(0) || !index_in(args[0].i, 0, kMaxList, n, "length")) return false;
        std::vector<int64_t> l(static_cast<size_t>(args[0].i));
        for (size_t k = 0; k < l.size(); ++k) l[k] = static_cast<int64_t>(k);
        v = list(std::move(l));
        return true;
      }
      case Fn::remove:
      case Fn::at: {
        if (!need_list(0) || !need_int(1)) return false;
        const std::vector<int64_t> &l = args[0].list;
        int64_t len = static_cast<int64_t>(l.size());
        if (len == 0) return fail(PK_ERROR_INVALID_ARGUMENT, "%s(): the list is empty", n);
        if (!index_in(args[1].i, 0, len - 1, n, "index")) return false;
        if (fn.fn == Fn::at) {
          v = integer(l[static_cast<size_t>(args[1].i)]);
        } else {
          std::vector<int64_t> r = l;
          r.erase(r.begin() + args[1].i);
          v = list(std::move(r));
        }
        return true;
      }
      case Fn::insert: {
        if (!need_list(0) || !need_int(1) || !need_int(2)) return false;
        std::vector<int64_t> r = args[0].list;
        if (!index_in(args[1].i, 0, static_cast<int64_t>(r.size()), n, "index")) return false;
        if (!list_len(static_cast<int64_t>(r.size()) + 1, n)) return false;
        r.insert(r.begin() + args[1].i, args[2].i);
        v = list(std::move(r));
        return true;
      }
      case Fn::concat: {
        if (!need_list(0) || !need_list(1)) return false;
        if (!list_len(static_cast<int64_t>(args[0].list.size() + args[1].list.size()), n)) return false;
        std::vector<int64_t> r = args[0].list;
        r.insert(r.end(), args[1].list.begin(), args[1].list.end());
        v = list(std::move(r));
        return true;
      }
      case Fn::slice_list: {
        if (!need_list(0) || !need_int(1) || !need_int(2)) return false;
        const std::vector<int64_t> &l = args[0].list;
        int64_t len = static_cast<int64_t>(l.size());
        if (!index_in(args[1].i, 0, len, n, "begin") || !index_in(args[2].i, args[1].i, len, n, "end")) return false;
        v = list(std::vector<int64_t>(l.begin() + args[1].i, l.begin() + args[2].i));
        return true;
      }
      case Fn::reverse: {
        if (!need_list(0)) return false;
        v = list(std::vector<int64_t>(args[0].list.rbegin(), args[0].list.rend()));
        return true;
      }
      case Fn::prod: {
        if (!need_list(0)) return false;
        int64_t p = 1;
        for (int64_t x : args[0].list)
          if (__builtin_mul_overflow(p, x, &p)) return fail(PK_ERROR_INVALID_ARGUMENT, "prod() overflows");
        v = integer(p);
        return true;
      }
      case Fn::repeat: {
        if (!need_int(0) || !need_int(1) || !index_in(args[1].i, 0, kMaxList, n, "count")) return false;
        v = list(std::vector<int64_t>(static_cast<size_t>(args[1].i), args[0].i));
        return true;
      }
      case Fn::permute_inverse: {
        if (!need_list(0)) return false;
        const std::vector<int64_t> &p = args[0].list;
        std::vector<int64_t> inv(p.size(), -1);
        for (size_t k = 0; k < p.size(); ++k) {
          int64_t x = p[k];
          if (x < 0 || x >= static_cast<int64_t>(p.size()) || inv[static_cast<size_t>(x)] >= 0) {
            return fail(PK_ERROR_INVALID_ARGUMENT, "permute_inverse(): the list is not a permutation of 0..%zu",
                        p.size() ? p.size() - 1 : 0);
          }
          inv[static_cast<size_t>(x)] = static_cast<int64_t>(k);
        }
        v = list(std::move(inv));
        return true;
      }
      case Fn::without: {
        if (!need_list(0) || !need_list(1)) return false;
        std::vector<int64_t> r;
        for (int64_t x : args[0].list) {
          bool drop = false;
          for (int64_t y : args[1].list) drop = drop || x == y;
          if (!drop) r.push_back(x);
        }
        v = list(std::move(r));
        return true;
      }
      case Fn::min:
      case Fn::max: {
        bool lo = fn.fn == Fn::min;
        if (args[0].kind == Value::Kind::integer && args[1].kind == Value::Kind::integer) {
          v = integer(lo ? std::min(args[0].i, args[1].i) : std::max(args[0].i, args[1].i));
          return true;
        }
        double x = 0.0, y = 0.0;
        if (!number(args[0], format("argument 1 of %s()", n).c_str(), x) ||
            !number(args[1], format("argument 2 of %s()", n).c_str(), y))
          return false;
        v = real(lo ? (y < x ? y : x) : (y > x ? y : x));
        return true;
      }
      case Fn::to_float: {
        if (args[0].kind == Value::Kind::boolean) {
          v = real(args[0].i ? 1.0 : 0.0);
          return true;
        }
        double x = 0.0;
        if (!number(args[0], "argument 1 of float()", x)) return false;
        v = real(x);
        return true;
      }
      case Fn::to_int: {
        const Value &a = args[0];
        if (a.kind == Value::Kind::integer || a.kind == Value::Kind::boolean) {
          v = integer(a.i);
          return true;
        }
        if (!need(a, Value::Kind::real, "argument 1 of int()")) return false;
        // Truncates toward zero; 2^63 itself is out of range.
        if (!(std::fabs(a.f) < 9223372036854775808.0)) {
          return fail(PK_ERROR_INVALID_ARGUMENT, "int(%g) is not a 64-bit integer", a.f);
        }
        v = integer(static_cast<int64_t>(a.f));
        return true;
      }
    }
    return fail(PK_ERROR_INTERNAL, "unknown function %s", n);
  }

  bool set_attr(const OpInfo &callee, const AttrInfo &a, const Value &v, unsigned char *buf) {
    auto wrong = [&](const char *want) {
      return fail(PK_ERROR_INTERNAL, "attribute %s of %s needs %s, got %s", a.name, callee.name, want,
                  kind_name(v.kind));
    };
    switch (a.type) {
      case AttrType::i64:
        if (v.kind != Value::Kind::integer) return wrong("an int");
        store<int64_t>(buf, a.offset, v.i);
        return true;
      case AttrType::f64:
        if (v.kind == Value::Kind::integer) {
          store<double>(buf, a.offset, static_cast<double>(v.i));
        } else if (v.kind == Value::Kind::real) {
          store<double>(buf, a.offset, v.f);
        } else {
          return wrong("a number");
        }
        return true;
      case AttrType::boolean:
        if (v.kind != Value::Kind::boolean) return wrong("a bool");
        store<int32_t>(buf, a.offset, v.i ? 1 : 0);
        return true;
      case AttrType::dtype:
        if (v.kind != Value::Kind::dtype) return wrong("a dtype");
        store<int32_t>(buf, a.offset, static_cast<int32_t>(v.i));
        return true;
      case AttrType::enumeration:
        if (v.kind != Value::Kind::integer) return wrong("an int (enum value)");
        if (v.i < INT32_MIN || v.i > INT32_MAX) {
          return fail(PK_ERROR_INVALID_ARGUMENT, "attribute %s of %s = %lld is out of range", a.name, callee.name,
                      static_cast<long long>(v.i));
        }
        store<int32_t>(buf, a.offset, static_cast<int32_t>(v.i));
        return true;
      case AttrType::ints: {
        if (v.kind != Value::Kind::list) return wrong("a list");
        if (v.list.size() > PK_MAX_RANK) {
          return fail(PK_ERROR_INVALID_ARGUMENT, "attribute %s of %s gets %zu values; at most %d", a.name, callee.name,
                      v.list.size(), PK_MAX_RANK);
        }
        store<int32_t>(buf, a.count_offset, static_cast<int32_t>(v.list.size()));
        for (size_t k = 0; k < PK_MAX_RANK; ++k)
          store<int64_t>(buf, a.offset + 8 * k, k < v.list.size() ? v.list[k] : 0);
        return true;
      }
    }
    return fail(PK_ERROR_INTERNAL, "attribute %s of %s has an unknown type", a.name, callee.name);
  }

  // Runs one primitive: its attribute struct from the keywords and the table defaults, then the checks a launch
  // makes, then a node whose outputs are new values.
  bool call(const Expr &e, std::vector<int32_t> &outs) {
    const OpInfo &callee = *e.callee;
    std::vector<int32_t> in_idx;
    std::vector<TensorType> in_types;
    for (const Expr &a : e.args) {
      Value t;
      if (!eval(a, t) || !need(t, Value::Kind::tensor, "a positional argument")) return false;
      in_idx.push_back(static_cast<int32_t>(t.i));
      in_types.push_back(out_.values[static_cast<size_t>(t.i)]);
    }
    if (callee.attrs_size > kMaxAttrsSize) {
      return fail(PK_ERROR_INTERNAL, "%s: attribute struct of %zu bytes exceeds kMaxAttrsSize", callee.name,
                  callee.attrs_size);
    }
    alignas(16) unsigned char buf[kMaxAttrsSize];
    std::memset(buf, 0, sizeof buf);
    default_attrs(callee, buf);
    for (size_t k = 0; k < e.kw_attrs.size(); ++k) {
      Value x;
      if (!eval(e.kw_values[k], x)) return false;
      if (!set_attr(callee, callee.attrs[e.kw_attrs[k]], x, buf)) return false;
    }
    const void *ap = callee.attrs_size ? buf : nullptr;
    uint32_t n = static_cast<uint32_t>(in_types.size());
    std::vector<TensorType> types(callee.num_outputs);
    Diag sub;
    if (!check_attrs(callee, ap, in_types.data(), n, sub) ||
        !infer_outputs(callee, in_types.data(), n, ap, types.data(), sub)) {
      return diag_.fail(sub.status != PK_OK ? sub.status : PK_ERROR_INVALID_ARGUMENT, -1,
                        "%s decomposition line %d (%s): %s", op_.name, line_, callee.name, sub.message);
    }
    DecomposedNode node;
    node.op_id = callee.id;
    if (callee.attrs_size) node.attrs.assign(buf, buf + callee.attrs_size);
    node.inputs = std::move(in_idx);
    for (const TensorType &t : types) {
      node.outputs.push_back(static_cast<int32_t>(out_.values.size()));
      out_.values.push_back(t);
    }
    outs = node.outputs;
    out_.nodes.push_back(std::move(node));
    return true;
  }

  const OpInfo &op_;
  const Program &prog_;
  const void *attrs_;
  Decomposition &out_;
  Diag &diag_;
  int line_ = 0;
  std::vector<Value> slots_;
};

// --- cache ----------------------------------------------------------------------------------------------------

// Keyed by the op and the addresses of its text and operand tables: an OpInfo copy with another program (as in
// tests) gets its own entry. A hit also compares the text, in case a freed string's address was reused.
using CacheKey = std::tuple<uint32_t, uintptr_t, uintptr_t, uintptr_t>;

struct Cache {
  std::mutex mutex;
  std::map<CacheKey, std::shared_ptr<const Program>> programs;
};

Cache &cache() {
  static Cache c;
  return c;
}

std::shared_ptr<const Program> program_of(const OpInfo &op) {
  CacheKey key{op.id, reinterpret_cast<uintptr_t>(op.decomposition), reinterpret_cast<uintptr_t>(op.inputs),
               reinterpret_cast<uintptr_t>(op.attrs)};
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.programs.find(key);
  if (it != c.programs.end() && it->second->text == op.decomposition) return it->second;
  auto prog = std::make_shared<Program>();
  prog->text = op.decomposition;
  Parser(op, *prog).run();
  c.programs[key] = prog;
  return prog;
}

// Stands in for a derived shape rule when the composite's own dtype rules are checked: the program types the
// outputs, and asking infer_outputs for the derived shape would recurse into decompose.
bool untyped_shapes(const OpInfo &op, const TensorType *, uint32_t, const void *, TensorType *outputs, Diag &) {
  for (uint32_t k = 0; k < op.num_outputs; ++k) outputs[k].ndim = 0;
  return true;
}

// --- opmath ---------------------------------------------------------------------------------------------------

// A node converting value `from` to dtype; returns the new value's index.
int32_t append_convert(Decomposition &out, int32_t from, int32_t dtype) {
  const OpInfo *cvt = find_op(static_cast<uint32_t>(PK_OP_CONVERT_ELEMENT_TYPE));
  pk_attrs_convert_element_type a = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  a.dtype = dtype;
  DecomposedNode node;
  node.op_id = cvt->id;
  const auto *bytes = reinterpret_cast<const uint8_t *>(&a);
  node.attrs.assign(bytes, bytes + cvt->attrs_size);
  node.inputs = {from};
  TensorType t = out.values[static_cast<size_t>(from)];
  t.dtype = dtype;
  const auto index = static_cast<int32_t>(out.values.size());
  node.outputs = {index};
  out.values.push_back(t);
  out.nodes.push_back(std::move(node));
  return index;
}

// The row's `opmath: f32` rule: each input whose type variable is bound to a 16- or 8-bit float (and admits f32)
// is read by the program as an f32 copy. Returns the value each program input reads; converts are appended to out.
std::vector<int32_t> opmath_inputs(const OpInfo &op, const TensorType *inputs, uint32_t num_inputs,
                                   Decomposition &out) {
  std::vector<int32_t> reads(num_inputs);
  for (uint32_t i = 0; i < num_inputs; ++i) {
    reads[i] = static_cast<int32_t>(i);
    if (!op.opmath_f32 || i >= op.num_inputs) continue;
    const int32_t var = op.inputs[i].type_var;
    if (var < 0 || !is_narrow_float(inputs[i].dtype)) continue;
    if ((op.type_vars[var].dtype_mask & (1u << PK_DTYPE_F32)) == 0) continue;
    reads[i] = append_convert(out, static_cast<int32_t>(i), PK_DTYPE_F32);
  }
  return reads;
}

bool decompose_impl(const OpInfo &op, const TensorType *inputs, uint32_t num_inputs, const void *attrs,
                    Decomposition &out, Diag &diag) {
  if (op.tier != Tier::composite || op.decomposition == nullptr) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: is a primitive op; only composites decompose", op.name);
  }
  if (op.variadic()) {
    return diag.fail(PK_UNIMPLEMENTED, -1, "%s: decompositions of ops with a variadic input are not supported",
                     op.name);
  }
  if (num_inputs > 0 && inputs == nullptr)
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, -1, "%s: inputs is NULL", op.name);
  if (op.num_outputs > kMaxLaunchOutputs) {
    return diag.fail(PK_ERROR_INTERNAL, -1, "%s: %u outputs; at most %u supported", op.name, op.num_outputs,
                     kMaxLaunchOutputs);
  }
  alignas(16) unsigned char defaults[kMaxAttrsSize];
  if (op.num_attrs > 0 && attrs == nullptr) {
    if (!normalize_attrs(op, nullptr, defaults, diag)) return false;
    attrs = defaults;
  }
  if (op.num_attrs == 0) attrs = nullptr;
  // The composite's own rules first, so a bad launch is reported in the composite's terms.
  TensorType expected[kMaxLaunchOutputs];
  bool derived = op.shape == ShapeRule::derived;
  OpInfo typed = op;
  if (derived) {
    typed.shape = ShapeRule::custom;
    typed.shape_fn = &untyped_shapes;
  }
  if (!check_attrs(op, attrs, inputs, num_inputs, diag)) return false;
  if (!infer_outputs(typed, inputs, num_inputs, attrs, expected, diag)) return false;

  std::shared_ptr<const Program> prog = program_of(op);
  if (!prog->error.empty()) return diag.fail(PK_ERROR_INTERNAL, -1, "%s", prog->error.c_str());
  out.values.assign(inputs, inputs + num_inputs);
  const std::vector<int32_t> reads = opmath_inputs(op, inputs, num_inputs, out);
  const bool promoted = out.nodes.size() > 0;
  if (!Evaluator(op, *prog, attrs, out, diag).run(num_inputs, reads)) return false;

  for (uint32_t k = 0; k < op.num_outputs; ++k) {
    // Under opmath an output computed in f32 is rounded once to the dtype the op table gives it.
    int32_t &o = out.outputs[k];
    if (promoted && out.values[static_cast<size_t>(o)].dtype == PK_DTYPE_F32 && is_narrow_float(expected[k].dtype))
      o = append_convert(out, o, expected[k].dtype);
    const TensorType &got = out.values[static_cast<size_t>(o)], &want = expected[k];
    bool same = got.dtype == want.dtype;
    if (!derived) {
      same = same && got.ndim == want.ndim;
      for (int32_t d = 0; same && d < got.ndim; ++d) same = got.shape[d] == want.shape[d];
    }
    if (!same) {
      std::string g = type_text(got), w = derived ? dtype_name(want.dtype) : type_text(want);
      return diag.fail(PK_ERROR_INTERNAL, -1,
                       "decomposition of %s yields %s for output %u (%s) but the op table says %s (op table bug)",
                       op.name, g.c_str(), k, op.outputs[k].name, w.c_str());
    }
  }
  return true;
}

}  // namespace

bool decompose(const OpInfo &op, const TensorType *inputs, uint32_t num_inputs, const void *attrs, Decomposition &out,
               Diag &diag) {
  out.values.clear();
  out.nodes.clear();
  out.outputs.clear();
  bool ok = false;
  try {
    ok = decompose_impl(op, inputs, num_inputs, attrs, out, diag);
  } catch (const std::bad_alloc &) {
    ok = diag.fail(PK_ERROR_OUT_OF_MEMORY, -1, "%s: out of memory while decomposing", op.name);
  } catch (...) {
    ok = diag.fail(PK_ERROR_INTERNAL, -1, "%s: unexpected exception while decomposing", op.name);
  }
  if (!ok) {
    out.values.clear();
    out.nodes.clear();
    out.outputs.clear();
  }
  return ok;
}

}  // namespace pk::meta
