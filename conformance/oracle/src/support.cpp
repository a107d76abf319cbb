// support.cpp — wide tensors, attribute access, exact integer helpers and round-to-odd arithmetic.
#include <cfenv>
#include <cstring>

#include "oracle_internal.hpp"

namespace pk::oracle {

int64_t WTensor::numel() const {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

WTensor WTensor::of(int32_t dtype, std::vector<int64_t> shape) {
  WTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.v.assign(static_cast<size_t>(t.numel()), Wide{});
  return t;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

bool next_index(std::vector<int64_t> &idx, const std::vector<int64_t> &shape) {
  for (size_t k = shape.size(); k-- > 0;) {
    if (++idx[k] < shape[k]) return true;
    idx[k] = 0;
  }
  return false;
}

void unimplemented(const std::string &why) {
  throw OracleError{PK_UNIMPLEMENTED, why};
}
void invalid(const std::string &why) {
  throw OracleError{PK_ERROR_INVALID_ARGUMENT, why};
}

// --- attributes ------------------------------------------------------------------------------------------------

const meta::AttrInfo &Attrs::find(const char *name) const {
  for (uint32_t k = 0; k < op_.num_attrs; ++k)
    if (std::strcmp(op_.attrs[k].name, name) == 0) return op_.attrs[k];
  throw OracleError{PK_ERROR_INTERNAL, std::string(op_.name) + ": the oracle reads attribute '" + name +
                                           "', which the op table does not declare"};
}

bool Attrs::has(const char *name) const {
  for (uint32_t k = 0; k < op_.num_attrs; ++k)
    if (std::strcmp(op_.attrs[k].name, name) == 0) return true;
  return false;
}

template <typename T>
static T read_at(const uint8_t *bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes + offset, sizeof v);
  return v;
}

int64_t Attrs::i(const char *name) const {
  return read_at<int64_t>(bytes_, find(name).offset);
}
double Attrs::f(const char *name) const {
  return read_at<double>(bytes_, find(name).offset);
}
bool Attrs::b(const char *name) const {
  return read_at<int32_t>(bytes_, find(name).offset) != 0;
}
int32_t Attrs::dtype(const char *name) const {
  return read_at<int32_t>(bytes_, find(name).offset);
}
int32_t Attrs::e(const char *name) const {
  return read_at<int32_t>(bytes_, find(name).offset);
}
std::vector<int64_t> Attrs::ints(const char *name) const {
  const meta::AttrInfo &a = find(name);
  int32_t n = read_at<int32_t>(bytes_, a.count_offset);
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int32_t k = 0; k < n; ++k) out[k] = read_at<int64_t>(bytes_, a.offset + sizeof(int64_t) * k);
  return out;
}

const char *pick(const Call &c, std::initializer_list<const char *> names) {
  for (const char *n : names)
    if (c.attrs.has(n)) return n;
  unimplemented(c.name() + ": the oracle does not know this op's attribute names");
}

WTensor Call::output(size_t k) const {
  const meta::TensorType &t = out_types.at(k);
  return WTensor::of(t.dtype, std::vector<int64_t>(t.shape, t.shape + t.ndim));
}

// --- integers --------------------------------------------------------------------------------------------------

int int_bits(int32_t d) {
  switch (d) {
    case PK_DTYPE_BOOL:
    case PK_DTYPE_U8:
    case PK_DTYPE_I8:
      return 8;
    case PK_DTYPE_I16:
      return 16;
    case PK_DTYPE_I32:
      return 32;
    default:
      return 64;
  }
}

long double wrap_int(uint64_t bits, int32_t dtype) {
  switch (dtype) {
    case PK_DTYPE_BOOL:
      return bits != 0 ? 1 : 0;
    case PK_DTYPE_U8:
      return static_cast<long double>(bits & 0xffu);
    case PK_DTYPE_I8:
      return static_cast<int8_t>(bits & 0xffu);
    case PK_DTYPE_I16:
      return static_cast<int16_t>(bits & 0xffffu);
    case PK_DTYPE_I32:
      return static_cast<int32_t>(bits & 0xffffffffu);
    case PK_DTYPE_I64:
      return static_cast<long double>(static_cast<int64_t>(bits));
    default:
      throw OracleError{PK_ERROR_INTERNAL, "wrap_int: not an integer dtype"};
  }
}

long double int_max(int32_t dtype) {
  switch (dtype) {
    case PK_DTYPE_BOOL:
      return 1;
    case PK_DTYPE_U8:
      return 255;
    case PK_DTYPE_I8:
      return 127;
    case PK_DTYPE_I16:
      return 32767;
    case PK_DTYPE_I32:
      return 2147483647.0L;
    default:
      return 9223372036854775807.0L;
  }
}

long double int_min(int32_t dtype) {
  switch (dtype) {
    case PK_DTYPE_BOOL:
    case PK_DTYPE_U8:
      return 0;
    case PK_DTYPE_I8:
      return -128;
    case PK_DTYPE_I16:
      return -32768;
    case PK_DTYPE_I32:
      return -2147483648.0L;
    default:
      return -9223372036854775808.0L;
  }
}

// --- round-to-odd arithmetic -------------------------------------------------------------------------------------
// Each op computes the round-to-nearest result s and the exact sign of (exact - s) with an error-free
// transformation, then make_odd() moves s to the odd neighbour when needed.

static bool odd_significand(long double s) {
  int e;
  long double m = frexpl(fabsl(s), &e);  // m in [0.5, 1)
  auto sig = static_cast<uint64_t>(ldexpl(m, 64));
  return (sig & 1) != 0;
}

long double make_odd(long double s, long double err) {
  if (err == 0 || !std::isfinite(s) || std::isnan(err)) return s;
  if (s != 0 && odd_significand(s)) return s;
  return nextafterl(s, err > 0 ? HUGE_VALL : -HUGE_VALL);
}

static long double two_sum_err(long double a, long double b, long double s) {
  long double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

long double ro_add(long double a, long double b) {
  long double s = a + b;
  if (!std::isfinite(s)) return s;
  return make_odd(s, two_sum_err(a, b, s));
}

long double ro_sub(long double a, long double b) {
  return ro_add(a, -b);
}

long double ro_mul(long double a, long double b) {
  long double p = a * b;
  if (!std::isfinite(p) || p == 0) return p;
  return make_odd(p, fmal(a, b, -p));
}

long double ro_div(long double a, long double b) {
  long double q = a / b;
  if (!std::isfinite(q) || q == 0 || !std::isfinite(b)) return q;
  long double r = fmal(-q, b, a);  // exact remainder a - q*b
  if (r == 0) return q;
  return make_odd(q, (r > 0) == (b > 0) ? 1.0L : -1.0L);
}

long double ro_sqrt(long double a) {
  long double s = sqrtl(a);
  if (!(a > 0) || !std::isfinite(a)) return s;
  return make_odd(s, fmal(-s, s, a));  // exact residual a - s*s
}

long double ro_fma(long double a, long double b, long double c) {
  // The exact a*b+c has no cheap error-free form, so ask the FPU: truncate, and if the result was inexact
  // take the odd neighbour away from zero. glibc's fmal is correctly rounded in every rounding mode.
  volatile long double va = a, vb = b, vc = c;
  const int saved = std::fegetround();
  std::feclearexcept(FE_INEXACT);
  std::fesetround(FE_TOWARDZERO);
  volatile long double t = fmal(va, vb, vc);
  const bool inexact = std::fetestexcept(FE_INEXACT) != 0;
  std::fesetround(saved);
  long double r = t;
  if (!inexact || !std::isfinite(r)) return std::isfinite(r) ? r : fmal(a, b, c);
  if (r != 0 && odd_significand(r)) return r;
  return nextafterl(r, std::signbit(r) ? -HUGE_VALL : HUGE_VALL);
}

// --- compensated accumulation ------------------------------------------------------------------------------------

void Accumulator::add(long double x) {
  if (!std::isfinite(x)) {
    nonfinite_ = true;
    naive_ += x;
    return;
  }
  if (count_ == 0) {
    hi_ = x;  // keeps the sign of a lone zero
  } else {
    long double s = hi_ + x;
    lo_ += two_sum_err(hi_, x, s);
    hi_ = s;
  }
  ++count_;
}

void Accumulator::add_product(long double a, long double b) {
  long double p = a * b;
  if (!std::isfinite(p) || p == 0) {
    add(p);
    return;
  }
  add(p);
  lo_ += fmal(a, b, -p);
}

long double Accumulator::value() const {
  if (nonfinite_) return naive_ + hi_;
  if (count_ == 0) return 0;
  if (lo_ == 0) return hi_;
  long double s = hi_ + lo_;
  return make_odd(s, two_sum_err(hi_, lo_, s));
}

}  // namespace pk::oracle
