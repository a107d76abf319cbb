// oracle_internal.hpp — what the oracle's kernel files share: wide tensors, attribute access, the kernel
// registry and exact arithmetic helpers. Not installed; not part of the oracle's API.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"
#include "primkit/oracle.hpp"

namespace pk::oracle {

// A tensor of wide values, row-major. Integer and bool tensors hold exact integers in `re`.
struct WTensor {
  int32_t dtype = PK_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<Wide> v;

  int64_t numel() const;
  int rank() const { return static_cast<int>(shape.size()); }
  static WTensor of(int32_t dtype, std::vector<int64_t> shape);  // zero-filled
};

// Row-major strides (in elements) of a shape.
std::vector<int64_t> row_major_strides(const std::vector<int64_t> &shape);
// Advances a multi-index over `shape` in row-major order; returns false after the last one.
bool next_index(std::vector<int64_t> &idx, const std::vector<int64_t> &shape);

// Kernels report what they cannot do by throwing: Unimplemented for an honest "not implemented", Invalid
// for a launch that breaks a rule the metadata does not check (e.g. an index out of range).
struct OracleError {
  pk_status status;
  std::string message;
};
[[noreturn]] void unimplemented(const std::string &why);
[[noreturn]] void invalid(const std::string &why);

// Read access to a normalized attribute struct by attribute name.
class Attrs {
 public:
  Attrs(const meta::OpInfo &op, const uint8_t *bytes) : op_(op), bytes_(bytes) {}
  bool has(const char *name) const;
  int64_t i(const char *name) const;
  double f(const char *name) const;
  bool b(const char *name) const;
  int32_t dtype(const char *name) const;
  int32_t e(const char *name) const;  // enum value index
  std::vector<int64_t> ints(const char *name) const;

 private:
  const meta::AttrInfo &find(const char *name) const;
  const meta::OpInfo &op_;
  const uint8_t *bytes_;
};

// One primitive call as a kernel sees it: validated inputs, attributes, and the output types the op's rules
// give (kernels fill outputs of exactly these dtypes and shapes).
struct Call {
  const meta::OpInfo &op;
  std::vector<const WTensor *> in;
  Attrs attrs;
  std::vector<meta::TensorType> out_types;

  const WTensor &a(size_t k = 0) const { return *in.at(k); }
  WTensor output(size_t k) const;  // a zero-filled tensor of out_types[k]
  std::string name() const { return op.name; }
};

// The first of several attribute names the op declares; PK_UNIMPLEMENTED if none.
const char *pick(const Call &c, std::initializer_list<const char *> names);

using Kernel = std::function<void(const Call &, std::vector<WTensor> &)>;
using Registry = std::map<std::string, Kernel>;

// Each kernel file adds its ops to the registry (keyed by op name).
void register_elementwise(Registry &r);
void register_reductions(Registry &r);
void register_shape_ops(Registry &r);
void register_linalg(Registry &r);
void register_misc(Registry &r);
void register_special(Registry &r);                       // igamma, igammac, zeta
void register_direct_activation_composites(Registry &r);  // gelu, gelu_tanh, tanhshrink (elementwise.cpp)
// Composites the oracle evaluates with a dedicated kernel instead of their decomposition: only where running
// the decomposition in long double loses the accuracy the op's contract needs (each says why). The kernel must
// give the decomposition's results, special values included, only more accurately.
void register_direct_composites(Registry &r);
void scaled_dot_product_attention(const Call &c, std::vector<WTensor> &out);  // attention.cpp, exact scores

// Shared by kernel files: reductions of a list of values (kind: PK_REDUCE_KIND_*), and the exact value of a
// convert_element_type.
Wide reduce_values(int kind, const std::vector<Wide> &v, int32_t dtype);
Wide convert_value(const Wide &x, int32_t from, int32_t to);

// --- dtype classes -------------------------------------------------------------------------------------------
inline bool is_float_dtype(int32_t d) {
  return meta::is_float(d);
}
inline bool is_complex_dtype(int32_t d) {
  return meta::is_complex(d);
}
inline bool is_int_dtype(int32_t d) {
  return meta::is_integer(d);
}
inline bool is_bool_dtype(int32_t d) {
  return d == PK_DTYPE_BOOL;
}
inline bool is_integral_dtype(int32_t d) {
  return is_int_dtype(d) || is_bool_dtype(d);
}
int int_bits(int32_t d);  // 8 for bool/u8/i8, 16, 32, 64

// --- exact integer arithmetic ---------------------------------------------------------------------------------
inline int64_t to_i64(const Wide &w) {
  return static_cast<int64_t>(w.re);
}
// Wraps a two's-complement bit pattern to the dtype's width (and signedness); bool: non-zero -> 1.
long double wrap_int(uint64_t bits, int32_t dtype);
// Largest and smallest value of an integer dtype.
long double int_max(int32_t dtype);
long double int_min(int32_t dtype);

// --- rounded-to-odd long double arithmetic ---------------------------------------------------------------------
// Each returns the exact result rounded to odd at 64 bits: a further single rounding to a format of <= 62
// significand bits is then the correct rounding of the exact result (Boldo & Melquiond, 2008).
long double ro_add(long double a, long double b);
long double ro_sub(long double a, long double b);
long double ro_mul(long double a, long double b);
long double ro_div(long double a, long double b);
long double ro_sqrt(long double a);
long double ro_fma(long double a, long double b, long double c);
// Round-to-odd of s, the round-to-nearest result whose exact value is s + err (err exact or of the right sign).
long double make_odd(long double s, long double err);

// --- complex results computed exactly (MPFR), rounded to odd at 64 bits like the ro_* helpers -------------------
// Finite operands only (and a non-zero divisor / base): special values stay with C99 Annex G.
long double exact_hypot(long double x, long double y);
Wide exact_complex_div(const Wide &a, const Wide &b);
Wide exact_complex_sqrt(const Wide &z);
Wide exact_complex_pow(const Wide &a, const Wide &b);

// Compensated (twice-long-double) accumulator: sums and dot products far beyond long double precision.
class Accumulator {
 public:
  void add(long double x);
  void add_product(long double a, long double b);
  long double value() const;  // the sum rounded to odd: safe to round once more
 private:
  long double hi_ = 0, lo_ = 0;  // the sum is hi_ + lo_ (lo_ collects the exact rounding errors)
  int64_t count_ = 0;
  bool nonfinite_ = false;
  long double naive_ = 0;  // the sum of the inf/NaN terms: gives the IEEE result when any term is not finite
};

}  // namespace pk::oracle
