// elementwise.cpp — unary, binary, comparison and ternary ops, element by element in wide precision.
//
// Each op is written once per dtype class (integer, bool, real float, complex); the output is rounded later,
// once, by evaluate(). Integer results are wrapped to the dtype here (that is the op's semantics, not a
// rounding).
#include <quadmath.h>

#include <complex>
#include <limits>

#include "oracle_internal.hpp"

namespace pk::oracle {
namespace {

using CLD = std::complex<long double>;
CLD cx(const Wide &w) {
  return {w.re, w.im};
}
Wide wd(CLD z) {
  return {z.real(), z.imag()};
}
Wide wr(long double x) {
  return {x, 0};
}
uint64_t bits_of(const Wide &w) {
  return static_cast<uint64_t>(static_cast<int64_t>(w.re));
}
const long double kNaN = std::numeric_limits<long double>::quiet_NaN();

// Element functions get the element and the input and output dtypes.
using Fn1 = std::function<Wide(const Wide &, int32_t dt, int32_t out_dt)>;
using Fn2 = std::function<Wide(const Wide &, const Wide &, int32_t dt, int32_t out_dt)>;
using Fn3 = std::function<Wide(const Wide &, const Wide &, const Wide &, int32_t dt, int32_t out_dt)>;

Kernel map1(Fn1 f) {
  return [f](const Call &c, std::vector<WTensor> &out) {
    WTensor o = c.output(0);
    const WTensor &a = c.a(0);
    for (size_t i = 0; i < o.v.size(); ++i) o.v[i] = f(a.v[i], a.dtype, o.dtype);
    out.push_back(std::move(o));
  };
}

Kernel map2(Fn2 f) {
  return [f](const Call &c, std::vector<WTensor> &out) {
    WTensor o = c.output(0);
    const WTensor &a = c.a(0), &b = c.a(1);
    for (size_t i = 0; i < o.v.size(); ++i) o.v[i] = f(a.v[i], b.v[i], a.dtype, o.dtype);
    out.push_back(std::move(o));
  };
}

Kernel map3(Fn3 f) {
  return [f](const Call &c, std::vector<WTensor> &out) {
    WTensor o = c.output(0);
    const WTensor &a = c.a(0), &b = c.a(1), &d = c.a(2);
    // the dtype passed is that of the second input (where's pred is bool; clamp/fma are uniform)
    for (size_t i = 0; i < o.v.size(); ++i) o.v[i] = f(a.v[i], b.v[i], d.v[i], b.dtype, o.dtype);
    out.push_back(std::move(o));
  };
}

[[noreturn]] void no_dtype(const char *op, int32_t dt) {
  unimplemented(std::string(op) + ": dtype " + meta::dtype_name(dt) + " is not implemented by the oracle");
}

// A real math function applied to float dtypes (and, if given, its complex counterpart).
Fn1 float_fn(const char *name, long double (*real_fn)(long double), CLD (*complex_fn)(const CLD &) = nullptr) {
  return [=](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt)) {
      if (complex_fn == nullptr) no_dtype(name, dt);
      return wd(complex_fn(cx(x)));
    }
    if (!is_float_dtype(dt)) no_dtype(name, dt);
    return wr(real_fn(x.re));
  };
}

// --- special functions glibc lacks -------------------------------------------------------------------------------

long double sigmoid(long double x) {
  return x >= 0 ? 1 / (1 + expl(-x)) : expl(x) / (1 + expl(x));
}

long double erfinv(long double y) {
  if (std::isnan(y) || y < -1 || y > 1) return kNaN;
  if (y == 1) return HUGE_VALL;
  if (y == -1) return -HUGE_VALL;
  if (y == 0) return y;
  // Initial guess (Giles 2010, single precision), then Newton steps on erf(x) - y in long double. Near +-1
  // use erfc to keep relative accuracy of 1 - |y|.
  long double w = -logl((1 - y) * (1 + y)), x;
  if (w < 5) {
    w -= 2.5L;
    long double p = 2.81022636e-08L;
    p = 3.43273939e-07L + p * w;
    p = -3.5233877e-06L + p * w;
    p = -4.39150654e-06L + p * w;
    p = 0.00021858087L + p * w;
    p = -0.00125372503L + p * w;
    p = -0.00417768164L + p * w;
    p = 0.246640727L + p * w;
    p = 1.50140941L + p * w;
    x = p * y;
  } else {
    w = sqrtl(w) - 3;
    long double p = -0.000200214257L;
    p = 0.000100950558L + p * w;
    p = 0.00134934322L + p * w;
    p = -0.00367342844L + p * w;
    p = 0.00573950773L + p * w;
    p = -0.0076224613L + p * w;
    p = 0.00943887047L + p * w;
    p = 1.00167406L + p * w;
    p = 2.83297682L + p * w;
    x = p * y;
  }
  const long double two_over_sqrt_pi = 1.1283791670955125738961589031215452L;
  for (int it = 0; it < 60; ++it) {
    // erf(x) - y, written with erfc where erf(x) is close to +-1
    long double f = y > 0.5L ? (1 - y) - erfcl(x) : (y < -0.5L ? erfcl(-x) - (1 + y) : erfl(x) - y);
    long double step = f / (two_over_sqrt_pi * expl(-x * x));
    x -= step;
    if (fabsl(step) <= fabsl(x) * 1e-21L) break;
  }
  return x;
}

// exp(x^2) * erfc(x). x^2 is split exactly (h + l) so that exp(x^2) keeps long double accuracy up to x ~ 50;
// beyond, the asymptotic series 1 / (x sqrt(pi)) * sum (-1)^k (2k-1)!! / (2x^2)^k, whose terms fall below
// 2^-70 of the first within 10 terms for x >= 50.
long double erfcx(long double x) {
  if (std::isnan(x)) return x;
  if (x < -110) return HUGE_VALL;  // exp(x^2) overflows even long double; the value is far beyond f64
  if (x >= 50) {
    if (std::isinf(x)) return 0;
    const long double inv2x2 = 1 / (2 * x * x);
    long double term = 1, sum = 1;
    for (int k = 1; k <= 12; ++k) {
      term *= -(2 * k - 1) * inv2x2;
      sum += term;
    }
    return sum / (x * 1.772453850905516027298167483341145183L);  // sqrt(pi)
  }
  const long double h = x * x, l = fmal(x, x, -h);
  return expl(h) * (1 + l) * erfcl(x);
}

// The inverse of the standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2. For p > 1/2, ndtri(p) = -ndtri(1 - p)
// (1 - p is exact). For q <= 1/2: start from Abramowitz & Stegun 26.2.23 (absolute error < 4.5e-4) and take
// Newton steps on Phi(x) - q; near q = 1/2 on erf(x / sqrt 2) / 2 - (q - 1/2) instead (q - 1/2 is exact), so
// that small results keep their relative accuracy.
long double ndtri(long double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -HUGE_VALL;
  if (p == 1) return HUGE_VALL;
  if (p == 0.5L) return 0;
  if (p > 0.5L) return -ndtri(1 - p);
  const long double q = p;
  const long double t = sqrtl(-2 * logl(q));
  long double x = -(t - (2.515517L + 0.802853L * t + 0.010328L * t * t) /
                            (1 + 1.432788L * t + 0.189269L * t * t + 0.001308L * t * t * t));
  const long double rsqrt2 = 0.7071067811865475244008443621048490393L;
  const long double rsqrt2pi = 0.3989422804014326779399460599343818685L;
  const bool central = q >= 0.25L;
  const long double d = q - 0.5L;  // exact for q in [0.25, 0.5]
  for (int it = 0; it < 100; ++it) {
    const long double f = central ? erfl(x * rsqrt2) / 2 - d : erfcl(-x * rsqrt2) / 2 - q;
    const long double step = f / (rsqrt2pi * expl(-x * x / 2));
    x -= step;
    if (!(fabsl(step) > fabsl(x) * 1e-21L)) break;
  }
  return x;
}

// Modified Bessel functions of the first kind, orders 0 and 1, with the scaled forms (scaled: times
// exp(-|x|)). |x| < 40: the power series sum (x/2)^(2k+nu) / (k! (k+nu)!) of positive terms; beyond, the
// asymptotic expansion e^x / sqrt(2 pi x) * sum_k (-1)^k a_k(nu) / x^k, a_k = prod_j (4nu^2 - (2j-1)^2) / (k! 8^k),
// whose smallest term (near k = 2x) is far below 2^-64. I0 is even, I1 odd.
long double bessel_i(int nu, long double x, bool scaled) {
  if (std::isnan(x)) return x;
  const long double ax = fabsl(x);
  const bool negate = nu == 1 && std::signbit(x);
  long double r;
  if (std::isinf(x)) {
    r = scaled ? 0 : HUGE_VALL;
  } else if (ax < 40) {
    const long double y = ax * ax / 4;
    long double term = nu == 0 ? 1 : ax / 2, sum = term;
    for (int k = 1; k < 400 && term > sum * 1e-22L; ++k) {
      term *= y / (static_cast<long double>(k) * (k + nu));
      sum += term;
    }
    r = scaled ? sum * expl(-ax) : sum;
  } else {
    const long double mu = 4.0L * nu * nu;
    long double term = 1, sum = 1;
    for (int k = 1; k < 60; ++k) {
      const long double next = term * -(mu - (2.0L * k - 1) * (2.0L * k - 1)) / (k * 8 * ax);
      if (fabsl(next) >= fabsl(term)) break;  // the asymptotic series starts to diverge
      term = next;
      sum += term;
      if (fabsl(term) < fabsl(sum) * 1e-22L) break;
    }
    const long double scale = sum / sqrtl(2 * 3.141592653589793238462643383279502884L * ax);
    r = scaled ? scale : (ax > 11000 ? HUGE_VALL : expl(ax) * scale);
  }
  return negate ? -r : r;
}

// psi(x) in __float128 (113 bits; libquadmath's tanq and logq). Near its roots (x0 = 1.46163... and one in each
// interval (-n, -n + 1)) psi is a small difference of terms of size ~ln|x| + |pi cot(pi x)| ~ 4: long double's
// 2^-64 of those left 10 f64 ulp at psi = 1.5e-4 and ~9 bits at the f64 nearest a root (psi ~ 1e-16). 113 bits
// give ~2^-110 absolute: ~2^-57 relative at those nearest f64, a few 2^-64 elsewhere.
long double digamma(long double xl) {
  if (std::isnan(xl)) return xl;
  if (xl == 0) return std::signbit(xl) ? HUGE_VALL : -HUGE_VALL;  // C/SciPy: psi(+-0) = -+inf
  if (xl < 0 && xl == floorl(xl)) return kNaN;
  if (xl == -HUGE_VALL) return kNaN;
  if (xl == HUGE_VALL) return xl;
  using Quad = __float128;
  static const Quad pi = acosq(-1);
  // Stirling's series psi(x) = ln x - 1/(2x) - sum_k B_2k / (2k x^2k): from x = 40 its terms fall by at least
  // (k / (pi x))^2 each, and the first one left out (k = 13) is below 2^-120.
  static const Quad coef[12] = {Quad(1) / 12,         Quad(-1) / 120,      Quad(1) / 252,
                                Quad(-1) / 240,       Quad(1) / 132,       Quad(-691) / 32760,
                                Quad(1) / 12,         Quad(-3617) / 8160,  Quad(43867) / 14364,
                                Quad(-174611) / 6600, Quad(854513) / 3036, Quad(-236364091) / 65520};
  Quad x = xl, result = 0;
  if (x < 0) {  // reflection: psi(1 - x) - psi(x) = pi cot(pi x)
    // cot(pi x) has period 1: reduce x exactly first, or the rounding of pi x (|x| ulps of pi) is magnified by
    // cot's slope near the poles (1e-12 relative error at x = -26.9994 in long double).
    result = -pi / tanq(pi * (x - Quad(nearbyintl(xl))));
    x = 1 - x;
  }
  while (x < 40) {
    result -= 1 / x;
    x += 1;
  }
  const Quad z = 1 / (x * x);
  Quad series = 0;
  for (int k = 11; k >= 0; --k) series = (series + coef[k]) * z;
  return static_cast<long double>(result + logq(x) - 1 / (2 * x) - series);
}

// --- integer helpers ---------------------------------------------------------------------------------------------

long double int_abs(const Wide &x, int32_t dt) {
  int64_t v = to_i64(x);
  return v < 0 ? wrap_int(0 - static_cast<uint64_t>(v), dt) : x.re;
}

// Rounds to an integer value, ties to even, keeping the sign of zero.
long double round_half_even(long double x) {
  if (!std::isfinite(x)) return x;
  long double r = floorl(x);
  long double diff = x - r;
  if (diff > 0.5L || (diff == 0.5L && fmodl(r, 2) != 0)) r += 1;
  return copysignl(r, x);
}

// The next representable value of a float dtype after x toward y.
long double next_after_in(long double x, long double y, int32_t dt) {
  if (std::isnan(x) || std::isnan(y)) return kNaN;
  if (x == y) return y;
  BinaryFormat f = format_of(dt);
  if (x == 0) {
    long double tiny = format_value(1, f);
    return y > 0 ? tiny : -tiny;
  }
  uint64_t bits = round_to_format(x, f);  // x is representable: exact
  bool away = (x < y) == (x > 0);         // moving away from zero increases the magnitude bits
  bits = away ? bits + 1 : bits - 1;
  return format_value(bits, f);
}

int popcount64(uint64_t v) {
  int n = 0;
  for (; v != 0; v &= v - 1) ++n;
  return n;
}

uint64_t width_mask(int32_t dt) {
  int b = int_bits(dt);
  return b == 64 ? ~uint64_t{0} : (uint64_t{1} << b) - 1;
}

// --- binary helpers ------------------------------------------------------------------------------------------------

bool finite(const Wide &a) {
  return std::isfinite(a.re) && std::isfinite(a.im);
}
bool nonzero(const Wide &a) {
  return a.re != 0 || a.im != 0;
}

// Correctly rounded quotient of finite operands; C99 Annex G (std::complex) for infinities, NaNs and 0 divisors.
Wide complex_div(const Wide &a, const Wide &b) {
  if (finite(a) && finite(b) && nonzero(b)) return exact_complex_div(a, b);
  return wd(cx(a) / cx(b));
}

CLD complex_sqrt(const CLD &z) {
  const Wide w = wd(z);
  if (finite(w) && nonzero(w)) return cx(exact_complex_sqrt(w));
  return std::sqrt(z);
}

Wide complex_mul(const Wide &a, const Wide &b) {
  if (!std::isfinite(a.re) || !std::isfinite(a.im) || !std::isfinite(b.re) || !std::isfinite(b.im))
    return wd(cx(a) * cx(b));  // C99 Annex G recovery of infinities
  Accumulator re, im;
  re.add_product(a.re, b.re);
  re.add_product(-a.im, b.im);
  im.add_product(a.re, b.im);
  im.add_product(a.im, b.re);
  return {re.value(), im.value()};
}

long double real_max(long double a, long double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  if (a == b) return std::signbit(a) ? b : a;  // maximum(-0, +0) = +0
  return a > b ? a : b;
}

long double real_min(long double a, long double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  if (a == b) return std::signbit(a) ? a : b;  // minimum(-0, +0) = -0
  return a < b ? a : b;
}

Wide int_div(const Wide &a, const Wide &b, int32_t dt) {
  int64_t x = to_i64(a), y = to_i64(b);
  if (y == 0) return wr(0);
  if (y == -1) return wr(wrap_int(0 - static_cast<uint64_t>(x), dt));  // INT_MIN / -1 wraps
  return wr(static_cast<long double>(x / y));
}

Wide int_rem(const Wide &a, const Wide &b) {  // C semantics: sign of the dividend, x % 0 = 0
  int64_t x = to_i64(a), y = to_i64(b);
  if (y == 0 || y == -1) return wr(0);
  return wr(static_cast<long double>(x % y));
}

Wide shift(const Wide &a, const Wide &b, int32_t dt, int kind) {  // 0: left, 1: arithmetic right, 2: logical
  int64_t x = to_i64(a), s = to_i64(b);
  const int bits = int_bits(dt);
  const uint64_t ux = static_cast<uint64_t>(x) & width_mask(dt);
  if (s < 0 || s >= bits) {
    if (kind == 1 && x < 0) return wr(-1);  // an arithmetic shift by >= width fills with the sign
    return wr(0);
  }
  if (kind == 0) return wr(wrap_int(ux << s, dt));
  if (kind == 2) return wr(wrap_int(ux >> s, dt));
  return wr(static_cast<long double>(x >> s));  // arithmetic: floor(x / 2^s)
}

template <typename IntOp, typename BoolOp>
Fn2 bitwise(const char *name, IntOp iop, BoolOp bop) {
  return [=](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_bool_dtype(dt)) return wr(bop(a.re != 0, b.re != 0) ? 1 : 0);
    if (!is_int_dtype(dt)) no_dtype(name, dt);
    return wr(wrap_int(iop(bits_of(a), bits_of(b)), dt));
  };
}

// A comparison on real values (and == / != on complex). NaN compares false (true for ne).
template <typename Cmp>
Fn2 compare(const char *name, Cmp cmp, bool allow_complex) {
  return [=](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt) && !allow_complex) no_dtype(name, dt);
    return wr(cmp(a, b) ? 1 : 0);
  };
}

}  // namespace

void register_elementwise(Registry &r) {
  // ---------------------------------------------------------------- unary
  r["abs"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (is_int_dtype(dt)) return wr(int_abs(x, dt));
    if (is_complex_dtype(dt)) return wr(exact_hypot(x.re, x.im));
    if (is_bool_dtype(dt)) return x;
    return wr(fabsl(x.re));
  });
  r["neg"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (is_int_dtype(dt)) return wr(wrap_int(0 - bits_of(x), dt));
    if (is_bool_dtype(dt)) no_dtype("neg", dt);
    return {-x.re, -x.im};
  });
  r["exp"] = map1(float_fn("exp", expl, [](const CLD &z) { return std::exp(z); }));
  r["exp2"] = map1(float_fn("exp2", exp2l, [](const CLD &z) { return std::pow(CLD(2), z); }));
  r["expm1"] = map1(float_fn("expm1", expm1l));
  r["log"] = map1(float_fn("log", logl, [](const CLD &z) { return std::log(z); }));
  r["log2"] = map1(float_fn("log2", log2l, [](const CLD &z) { return std::log(z) / logl(2); }));
  r["log10"] = map1(float_fn("log10", log10l, [](const CLD &z) { return std::log10(z); }));
  r["log1p"] = map1(float_fn("log1p", log1pl));
  r["sqrt"] = map1(float_fn("sqrt", ro_sqrt, complex_sqrt));
  r["rsqrt"] = map1(float_fn(
      "rsqrt", [](long double x) { return x == 0 ? copysignl(HUGE_VALL, x) : ro_div(1, sqrtl(x)); },
      [](const CLD &z) { return CLD(1) / std::sqrt(z); }));
  r["cbrt"] = map1(float_fn("cbrt", cbrtl));
  r["sin"] = map1(float_fn("sin", sinl, [](const CLD &z) { return std::sin(z); }));
  r["cos"] = map1(float_fn("cos", cosl, [](const CLD &z) { return std::cos(z); }));
  r["tan"] = map1(float_fn("tan", tanl, [](const CLD &z) { return std::tan(z); }));
  r["asin"] = map1(float_fn("asin", asinl, [](const CLD &z) { return std::asin(z); }));
  r["acos"] = map1(float_fn("acos", acosl, [](const CLD &z) { return std::acos(z); }));
  r["atan"] = map1(float_fn("atan", atanl, [](const CLD &z) { return std::atan(z); }));
  r["sinh"] = map1(float_fn("sinh", sinhl, [](const CLD &z) { return std::sinh(z); }));
  r["cosh"] = map1(float_fn("cosh", coshl, [](const CLD &z) { return std::cosh(z); }));
  r["tanh"] = map1(float_fn("tanh", tanhl, [](const CLD &z) { return std::tanh(z); }));
  r["asinh"] = map1(float_fn("asinh", asinhl, [](const CLD &z) { return std::asinh(z); }));
  r["acosh"] = map1(float_fn("acosh", acoshl, [](const CLD &z) { return std::acosh(z); }));
  r["atanh"] = map1(float_fn("atanh", atanhl, [](const CLD &z) { return std::atanh(z); }));
  r["erf"] = map1(float_fn("erf", erfl));
  r["erfc"] = map1(float_fn("erfc", erfcl));
  r["erfinv"] = map1(float_fn("erfinv", erfinv));
  r["erf_inv"] = r["erfinv"];  // the table's name
  r["erfcx"] = map1(float_fn("erfcx", erfcx));
  // glibc's long double j0l / j1l: a few ulp of long double away from the zeros, ~2^-64 absolute near them
  // (the table's contract is absolute there too)
  r["bessel_j0"] = map1(float_fn("bessel_j0", [](long double x) { return j0l(x); }));
  r["bessel_j1"] = map1(float_fn("bessel_j1", [](long double x) { return j1l(x); }));
  r["ndtri"] = map1(float_fn("ndtri", ndtri));
  r["bessel_i0"] = map1(float_fn("bessel_i0", [](long double x) { return bessel_i(0, x, false); }));
  r["bessel_i0e"] = map1(float_fn("bessel_i0e", [](long double x) { return bessel_i(0, x, true); }));
  r["bessel_i1"] = map1(float_fn("bessel_i1", [](long double x) { return bessel_i(1, x, false); }));
  r["bessel_i1e"] = map1(float_fn("bessel_i1e", [](long double x) { return bessel_i(1, x, true); }));
  r["lgamma"] = map1(float_fn("lgamma", [](long double x) { return lgammal(x); }));
  r["digamma"] = map1(float_fn("digamma", digamma));
  r["sigmoid"] = map1(float_fn("sigmoid", sigmoid));
  // sin(x) / x; 1 at 0 and 0 at +-inf (the limit, as torch.special.spherical_bessel_j0 gives)
  r["spherical_bessel_j0"] = map1(float_fn("spherical_bessel_j0", [](long double x) {
    if (std::isinf(x)) return 0.0L;
    return x == 0 ? 1.0L : ro_div(sinl(x), x);
  }));
  r["logistic"] = r["sigmoid"];
  r["floor"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    return is_float_dtype(dt) ? wr(floorl(x.re)) : (is_integral_dtype(dt) ? x : (no_dtype("floor", dt), x));
  });
  r["ceil"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    return is_float_dtype(dt) ? wr(ceill(x.re)) : (is_integral_dtype(dt) ? x : (no_dtype("ceil", dt), x));
  });
  r["trunc"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    return is_float_dtype(dt) ? wr(truncl(x.re)) : (is_integral_dtype(dt) ? x : (no_dtype("trunc", dt), x));
  });
  r["round"] = [](const Call &c, std::vector<WTensor> &out) {
    const bool even = !c.attrs.has("mode") || c.attrs.e("mode") == PK_ROUNDING_HALF_TO_EVEN;
    WTensor o = c.output(0);
    for (size_t i = 0; i < o.v.size(); ++i) {
      const Wide &x = c.a().v[i];
      o.v[i] = is_float_dtype(c.a().dtype) ? wr(even ? round_half_even(x.re) : roundl(x.re)) : x;
    }
    out.push_back(std::move(o));
  };
  r["sign"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt)) {
      long double m = hypotl(x.re, x.im);
      return m == 0 ? x : Wide{x.re / m, x.im / m};
    }
    if (std::isnan(x.re)) return x;
    if (x.re == 0) return x;  // keeps the sign of zero
    return wr(x.re > 0 ? 1 : -1);
  });
  r["signbit"] = map1([](const Wide &x, int32_t, int32_t) { return wr(std::signbit(x.re) ? 1 : 0); });
  r["reciprocal"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt)) return complex_div(Wide{1, 0}, x);
    if (!is_float_dtype(dt)) no_dtype("reciprocal", dt);
    return wr(ro_div(1, x.re));
  });
  r["square"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (is_int_dtype(dt)) return wr(wrap_int(bits_of(x) * bits_of(x), dt));
    if (is_complex_dtype(dt)) return complex_mul(x, x);
    return wr(ro_mul(x.re, x.re));
  });
  r["bitwise_not"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (is_bool_dtype(dt)) return wr(x.re != 0 ? 0 : 1);
    if (!is_int_dtype(dt)) no_dtype("bitwise_not", dt);
    return wr(wrap_int(~bits_of(x), dt));
  });
  r["logical_not"] = map1([](const Wide &x, int32_t, int32_t) { return wr(x.re == 0 && x.im == 0 ? 1 : 0); });
  r["isfinite"] =
      map1([](const Wide &x, int32_t, int32_t) { return wr(std::isfinite(x.re) && std::isfinite(x.im) ? 1 : 0); });
  r["isnan"] = map1([](const Wide &x, int32_t, int32_t) { return wr(std::isnan(x.re) || std::isnan(x.im) ? 1 : 0); });
  r["isinf"] = map1([](const Wide &x, int32_t, int32_t) { return wr(std::isinf(x.re) || std::isinf(x.im) ? 1 : 0); });
  r["real"] = map1([](const Wide &x, int32_t, int32_t) { return wr(x.re); });
  r["imag"] = map1([](const Wide &x, int32_t, int32_t) { return wr(x.im); });
  r["conj_physical"] = map1([](const Wide &x, int32_t, int32_t) { return Wide{x.re, -x.im}; });
  r["conj"] = map1([](const Wide &x, int32_t, int32_t) { return Wide{x.re, -x.im}; });
  r["angle"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt)) return wr(atan2l(x.im, x.re));
    if (std::isnan(x.re)) return x;
    return wr(x.re < 0 ? 3.141592653589793238462643383279502884L : 0);  // the table: pi if a < 0, so -0 gives 0
  });
  r["popcount"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (!is_int_dtype(dt)) no_dtype("popcount", dt);
    return wr(popcount64(bits_of(x) & width_mask(dt)));
  });
  r["population_count"] = r["popcount"];
  r["clz"] = map1([](const Wide &x, int32_t dt, int32_t) -> Wide {
    if (!is_int_dtype(dt)) no_dtype("clz", dt);
    uint64_t v = bits_of(x) & width_mask(dt);
    int n = 0;
    for (int b = int_bits(dt) - 1; b >= 0 && ((v >> b) & 1) == 0; --b) ++n;
    return wr(n);
  });
  r["count_leading_zeros"] = r["clz"];

  // ---------------------------------------------------------------- binary
  r["add"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_bool_dtype(dt)) return wr(a.re != 0 || b.re != 0 ? 1 : 0);
    if (is_int_dtype(dt)) return wr(wrap_int(bits_of(a) + bits_of(b), dt));
    return {ro_add(a.re, b.re), is_complex_dtype(dt) ? ro_add(a.im, b.im) : 0};
  });
  r["sub"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_bool_dtype(dt)) no_dtype("sub", dt);
    if (is_int_dtype(dt)) return wr(wrap_int(bits_of(a) - bits_of(b), dt));
    return {ro_sub(a.re, b.re), is_complex_dtype(dt) ? ro_sub(a.im, b.im) : 0};
  });
  r["mul"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_bool_dtype(dt)) return wr(a.re != 0 && b.re != 0 ? 1 : 0);
    if (is_int_dtype(dt)) return wr(wrap_int(bits_of(a) * bits_of(b), dt));
    if (is_complex_dtype(dt)) return complex_mul(a, b);
    return wr(ro_mul(a.re, b.re));
  });
  r["div"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_bool_dtype(dt)) no_dtype("div", dt);
    if (is_int_dtype(dt)) return int_div(a, b, dt);
    if (is_complex_dtype(dt)) return complex_div(a, b);
    return wr(ro_div(a.re, b.re));
  });
  r["maximum"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt)) no_dtype("maximum", dt);
    return wr(real_max(a.re, b.re));
  });
  r["minimum"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt)) no_dtype("minimum", dt);
    return wr(real_min(a.re, b.re));
  });
  r["fmax"] = map2([](const Wide &a, const Wide &b, int32_t, int32_t) -> Wide {
    if (std::isnan(a.re)) return b;
    if (std::isnan(b.re)) return a;
    return wr(real_max(a.re, b.re));
  });
  r["fmin"] = map2([](const Wide &a, const Wide &b, int32_t, int32_t) -> Wide {
    if (std::isnan(a.re)) return b;
    if (std::isnan(b.re)) return a;
    return wr(real_min(a.re, b.re));
  });
  r["pow"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt)) {
      if (b.re == 0 && b.im == 0) return wr(1);
      if (a.re == 0 && a.im == 0 && b.im == 0 && b.re > 0) return wr(0);
      if (finite(a) && finite(b) && nonzero(a)) return exact_complex_pow(a, b);
      return wd(std::pow(cx(a), cx(b)));
    }
    if (is_int_dtype(dt)) {  // exact power by squaring, wrapped; negative exponents: 1/x truncated
      int64_t x = to_i64(a), e = to_i64(b);
      if (e < 0) return wr(x == 1 ? 1 : (x == -1 ? ((e & 1) ? -1 : 1) : 0));
      uint64_t result = 1, base = static_cast<uint64_t>(x);
      for (; e > 0; e >>= 1, base *= base)
        if (e & 1) result *= base;
      return wr(wrap_int(result, dt));
    }
    return wr(powl(a.re, b.re));
  });
  r["atan2"] = map2([](const Wide &a, const Wide &b, int32_t, int32_t) { return wr(atan2l(a.re, b.re)); });
  r["hypot"] = map2([](const Wide &a, const Wide &b, int32_t, int32_t) { return wr(hypotl(a.re, b.re)); });
  r["copysign"] = map2([](const Wide &a, const Wide &b, int32_t, int32_t) { return wr(copysignl(a.re, b.re)); });
  r["nextafter"] =
      map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) { return wr(next_after_in(a.re, b.re, dt)); });
  r["fmod"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_integral_dtype(dt)) return int_rem(a, b);
    return wr(fmodl(a.re, b.re));  // exact; sign of the dividend
  });
  r["rem"] = r["fmod"];
  // Python-style modulus, sign of b. Floats: fmod is exact; when its sign differs from b's, the result is
  // fmod + b, computed round-to-odd so that the one final rounding is correct (numpy rounds that sum too).
  r["remainder"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (is_integral_dtype(dt)) {
      const int64_t x = to_i64(a), y = to_i64(b);
      if (y == 0 || y == -1) return wr(0);  // x % -1 is 0 (and INT_MIN % -1 must not trap)
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return wr(static_cast<long double>(m));
    }
    long double m = fmodl(a.re, b.re);
    if (std::isnan(m)) return wr(m);
    if (m != 0 && std::signbit(m) != std::signbit(b.re)) return wr(ro_add(m, b.re));
    if (m == 0) return wr(copysignl(0, b.re));
    return wr(m);
  });
  r["gcd"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) -> Wide {
    if (!is_int_dtype(dt)) no_dtype("gcd", dt);
    auto mag = [](int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); };
    uint64_t x = mag(to_i64(a)), y = mag(to_i64(b));
    while (y != 0) {
      const uint64_t t = x % y;
      x = y;
      y = t;
    }
    return wr(wrap_int(x, dt));  // gcd(INT_MIN, 0) = 2^(bits-1) wraps to INT_MIN, as in two's complement
  });
  r["complex"] = map2([](const Wide &a, const Wide &b, int32_t, int32_t) { return Wide{a.re, b.re}; });
  // abs * (cos + i sin): long double cos/sin, each product rounded to odd (a few 2^-64 relative).
  r["polar"] = map2([](const Wide &a, const Wide &b, int32_t, int32_t) {
    return Wide{ro_mul(a.re, cosl(b.re)), ro_mul(a.re, sinl(b.re))};
  });
  r["shift_left"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) { return shift(a, b, dt, 0); });
  r["shift_right_arithmetic"] = map2(
      [](const Wide &a, const Wide &b, int32_t dt, int32_t) { return shift(a, b, dt, meta::is_signed(dt) ? 1 : 2); });
  r["shift_right_logical"] = map2([](const Wide &a, const Wide &b, int32_t dt, int32_t) { return shift(a, b, dt, 2); });
  r["bitwise_and"] = map2(bitwise(
      "bitwise_and", [](uint64_t x, uint64_t y) { return x & y; }, [](bool x, bool y) { return x && y; }));
  r["bitwise_or"] = map2(bitwise(
      "bitwise_or", [](uint64_t x, uint64_t y) { return x | y; }, [](bool x, bool y) { return x || y; }));
  r["bitwise_xor"] = map2(bitwise(
      "bitwise_xor", [](uint64_t x, uint64_t y) { return x ^ y; }, [](bool x, bool y) { return x != y; }));
  auto truth = [](const Wide &w) { return w.re != 0 || w.im != 0; };
  r["logical_and"] =
      map2([=](const Wide &a, const Wide &b, int32_t, int32_t) { return wr(truth(a) && truth(b) ? 1 : 0); });
  r["logical_or"] =
      map2([=](const Wide &a, const Wide &b, int32_t, int32_t) { return wr(truth(a) || truth(b) ? 1 : 0); });
  r["logical_xor"] =
      map2([=](const Wide &a, const Wide &b, int32_t, int32_t) { return wr(truth(a) != truth(b) ? 1 : 0); });

  // ---------------------------------------------------------------- comparisons
  r["eq"] = map2(compare(
      "eq", [](const Wide &a, const Wide &b) { return a.re == b.re && a.im == b.im; }, true));
  r["ne"] = map2(compare(
      "ne", [](const Wide &a, const Wide &b) { return !(a.re == b.re && a.im == b.im); }, true));
  r["lt"] = map2(compare(
      "lt", [](const Wide &a, const Wide &b) { return a.re < b.re; }, false));
  r["le"] = map2(compare(
      "le", [](const Wide &a, const Wide &b) { return a.re <= b.re; }, false));
  r["gt"] = map2(compare(
      "gt", [](const Wide &a, const Wide &b) { return a.re > b.re; }, false));
  r["ge"] = map2(compare(
      "ge", [](const Wide &a, const Wide &b) { return a.re >= b.re; }, false));

  // ---------------------------------------------------------------- ternary
  r["where"] = map3([](const Wide &p, const Wide &a, const Wide &b, int32_t, int32_t) { return p.re != 0 ? a : b; });
  r["fma"] = map3([](const Wide &a, const Wide &b, const Wide &c, int32_t dt, int32_t) -> Wide {
    if (is_int_dtype(dt)) return wr(wrap_int(bits_of(a) * bits_of(b) + bits_of(c), dt));
    if (!is_float_dtype(dt)) no_dtype("fma", dt);
    return wr(ro_fma(a.re, b.re, c.re));
  });
  r["clamp"] = map3([](const Wide &x, const Wide &lo, const Wide &hi, int32_t dt, int32_t) -> Wide {
    if (is_complex_dtype(dt)) no_dtype("clamp", dt);
    return wr(real_min(real_max(x.re, lo.re), hi.re));
  });
}

// gelu, gelu_tanh and tanhshrink evaluated directly: their decompositions' 1 + erf(z) and 1 + tanh(u) cancel for x well
// below 0, where long double keeps only an absolute 2^-65 (gelu(-12) ~ 1e-32 would come out 0). Mathematically
// 1 + erf(z) = erfc(-z) and x/2 (1 + tanh(u)) = x / (1 + e^-2u), which keep their relative accuracy; the
// decompositions' constants (doubles, exact in `fill`) are used as they are.
void register_direct_activation_composites(Registry &r) {
  r["gelu"] = map1(float_fn(
      "gelu", [](long double x) { return x * 0.5L * erfcl(-(x * static_cast<long double>(0.7071067811865476))); }));
  r["gelu_tanh"] = map1(float_fn("gelu_tanh", [](long double x) {
    const long double u =
        (x + x * x * x * static_cast<long double>(0.044715)) * static_cast<long double>(0.7978845608028654);
    return x / (1 + expl(-2 * u));
  }));
  // x - tanh(x) cancels for small x: for x = 1e-6 long double keeps 64 - 41 bits, fewer than f32 needs. Below
  // |x| = 1/2 the oracle sums the odd Taylor series x - tanh(x) = x^3/3 - 2x^5/15 + 17x^7/315 - ..., whose terms
  // shrink by about (2x / pi)^2 <= 0.1 each; its coefficients c_k (tanh(x) = sum c_k x^(2k+1)) follow from
  // tanh' = 1 - tanh^2: (2k + 1) c_k = -sum_(i<k) c_i c_(k-1-i). Above 1/2 the subtraction loses at most 4 bits.
  r["tanhshrink"] = map1(float_fn("tanhshrink", [](long double x) -> long double {
    constexpr int kTerms = 28;  // 0.1^27 < 2^-89: far below long double's 2^-64
    static const std::vector<long double> c = [] {
      std::vector<long double> t(kTerms);
      t[0] = 1;
      for (int k = 1; k < kTerms; ++k) {
        long double s = 0;
        for (int i = 0; i < k; ++i) s += t[i] * t[k - 1 - i];
        t[k] = -s / (2 * k + 1);
      }
      return t;
    }();
    if (!(fabsl(x) < 0.5L)) return x - tanhl(x);
    if (x == 0) return x - x;  // +0 for both zeros, as the decomposition
    const long double z = x * x;
    long double sum = 0;
    for (int k = kTerms - 1; k >= 1; --k) sum = sum * z - c[k];
    return x * z * sum;
  }));
}

}  // namespace pk::oracle
