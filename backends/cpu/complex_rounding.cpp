// complex_rounding.cpp — see complex_rounding.hpp.
#include "complex_rounding.hpp"

#include <mpfr.h>
#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

namespace pk::cpu {
namespace {

using f128 = __float128;

f128 magnitude(f128 x) {
  return fabsq(x);  // clears the sign of -0 too: sqrt(-4 - 0i) = +0 - 2i
}

// Complex arithmetic wide enough for C99 Annex G's special values without spurious overflow.
template <class T>
using AnnexG = std::complex<std::conditional_t<std::is_same_v<T, float>, double, long double>>;

template <class T>
std::complex<T> narrow(const AnnexG<T> &r) {
  return {static_cast<T>(r.real()), static_cast<T>(r.imag())};
}

template <class T>
bool finite(std::complex<T> z) {
  return std::isfinite(z.real()) && std::isfinite(z.imag());
}

// `y` = r rounded to T, when r's relative error bound `rel` cannot change which value that is: r lies farther
// than the bound from the midpoint between y and its neighbour on r's side. False when it might, or when the
// result leaves T's finite range (the exact path decides overflow).
template <class T>
bool round_if_certain(f128 r, f128 rel, T &y) {
  y = static_cast<T>(r);
  if (!std::isfinite(y)) return false;
  const f128 err = r - static_cast<f128>(y);
  if (err == 0) return true;
  const T next = std::nextafter(y, err > 0 ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity());
  if (!std::isfinite(next)) return false;
  const f128 half_gap = magnitude(static_cast<f128>(next) - static_cast<f128>(y)) / 2;
  return magnitude(magnitude(err) - half_gap) > magnitude(r) * rel;
}

// An mpfr_t that frees itself.
class Mp {
 public:
  explicit Mp(mpfr_prec_t prec) { mpfr_init2(v_, prec); }
  Mp(mpfr_prec_t prec, double x) : Mp(prec) { mpfr_set_d(v_, x, MPFR_RNDN); }
  ~Mp() { mpfr_clear(v_); }
  Mp(const Mp &) = delete;
  Mp &operator=(const Mp &) = delete;
  operator mpfr_ptr() { return v_; }

 private:
  mpfr_t v_;
};

// Rounding to odd at 66 bits (truncate; if inexact, make the last bit 1) and then once to T's 24 or 53 bits is
// the correct rounding of the exact value, subnormal and overflowing results included (Boldo & Melquiond).
template <class T>
T round_odd_then_to(mpfr_ptr truncated66, int ternary) {
  if (ternary != 0 && mpfr_regular_p(truncated66) && mpfr_min_prec(truncated66) < 66) {
    if (mpfr_sgn(truncated66) > 0)
      mpfr_nextabove(truncated66);
    else
      mpfr_nextbelow(truncated66);
  }
  if constexpr (std::is_same_v<T, float>)
    return mpfr_get_flt(truncated66, MPFR_RNDN);
  else
    return mpfr_get_d(truncated66, MPFR_RNDN);
}

// p q + r s exactly: products of doubles are exact at 106 bits, their sum at 108 plus the exponents' distance.
void exact_dot2(mpfr_ptr out, double p, double q, double r, double s) {
  Mp x(106), y(106);
  mpfr_mul(x, Mp(53, p), Mp(53, q), MPFR_RNDN);
  mpfr_mul(y, Mp(53, r), Mp(53, s), MPFR_RNDN);
  mpfr_prec_t prec = 108;
  if (mpfr_regular_p(x) && mpfr_regular_p(y)) prec += std::labs(mpfr_get_exp(x) - mpfr_get_exp(y));
  mpfr_set_prec(out, prec);
  mpfr_add(out, x, y, MPFR_RNDN);
}

// (p q + r s) / (c^2 + d^2), correctly rounded to T.
template <class T>
T exact_quotient(double p, double q, double r, double s, double c, double d) {
  Mp num(53), den(53), quo(66);
  exact_dot2(num, p, q, r, s);
  exact_dot2(den, c, c, d, d);
  return round_odd_then_to<T>(quo, mpfr_div(quo, num, den, MPFR_RNDZ));
}

// Error bounds of the binary128 evaluations below (a few roundings of 2^-113 each, with room to spare).
const f128 kDivError = static_cast<f128>(0x1p-110);
const f128 kSqrtError = static_cast<f128>(0x1p-108);

template <class T>
std::complex<T> div_impl(std::complex<T> x, std::complex<T> y) {
  const double a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  if (!finite(x) || !finite(y) || (c == 0 && d == 0)) return narrow<T>(AnnexG<T>(x) / AnnexG<T>(y));
  // Products of doubles are exact in binary128 (106 of 113 bits, and the exponent range to spare), so each
  // numerator is one rounding of its exact value, even when it cancels.
  const f128 den = static_cast<f128>(c) * c + static_cast<f128>(d) * d;
  const f128 re = (static_cast<f128>(a) * c + static_cast<f128>(b) * d) / den;
  const f128 im = (static_cast<f128>(b) * c - static_cast<f128>(a) * d) / den;
  T out_re, out_im;
  if (!round_if_certain(re, kDivError, out_re)) out_re = exact_quotient<T>(a, c, b, d, c, d);
  if (!round_if_certain(im, kDivError, out_im)) out_im = exact_quotient<T>(b, c, -a, d, c, d);
  return {out_re, out_im};
}

template <class T>
T abs_impl(std::complex<T> z) {
  const double x = z.real(), y = z.imag();
  if (std::isinf(x) || std::isinf(y)) return std::numeric_limits<T>::infinity();
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<T>::quiet_NaN();
  T out;
  if (round_if_certain(sqrtq(static_cast<f128>(x) * x + static_cast<f128>(y) * y), kSqrtError, out)) return out;
  Mp sum(53), root(66);
  exact_dot2(sum, x, x, y, y);
  return round_odd_then_to<T>(root, mpfr_sqrt(root, sum, MPFR_RNDZ));
}

template <class T>
std::complex<T> sqrt_impl(std::complex<T> z) {
  const double x = z.real(), y = z.imag();
  if (!finite(z) || (x == 0 && y == 0)) return narrow<T>(std::sqrt(AnnexG<T>(z)));
  // sqrt(x + iy) = t + i y / (2t), t = sqrt((|z| + |x|) / 2), for x >= 0; for x < 0 the parts trade places:
  // |y| / (2t) + i copysign(t, y). Both terms of |z| + |x| are positive, so nothing cancels.
  const f128 m = sqrtq(static_cast<f128>(x) * x + static_cast<f128>(y) * y);
  const f128 t = sqrtq((m + magnitude(x)) / 2);
  const f128 u = static_cast<f128>(y) / (2 * t);
  T big, small;
  const bool big_ok = round_if_certain(t, kSqrtError, big);
  const bool small_ok = round_if_certain(x >= 0 ? u : magnitude(u), kSqrtError, small);
  if (!big_ok || !small_ok) {
    // The parts are algebraic numbers: at 512 bits no 53-bit input brings them within reach of a boundary.
    const mpfr_prec_t p = 512;
    Mp mx(p, x), my(p, y), mm(p), mt(p), mu(p), out(66);
    mpfr_hypot(mm, mx, my, MPFR_RNDN);
    mpfr_abs(mx, mx, MPFR_RNDN);
    mpfr_add(mt, mm, mx, MPFR_RNDN);
    mpfr_div_2ui(mt, mt, 1, MPFR_RNDN);
    mpfr_sqrt(mt, mt, MPFR_RNDN);
    mpfr_mul_2ui(mu, mt, 1, MPFR_RNDN);
    mpfr_div(mu, my, mu, MPFR_RNDN);
    if (x < 0) mpfr_abs(mu, mu, MPFR_RNDN);
    if (!big_ok) big = round_odd_then_to<T>(out, mpfr_set(out, mt, MPFR_RNDZ));
    if (!small_ok) small = round_odd_then_to<T>(out, mpfr_set(out, mu, MPFR_RNDZ));
  }
  if (x >= 0) return {big, small};
  return {small, std::copysign(big, static_cast<T>(y))};
}

template <class T>
std::complex<T> pow_impl(std::complex<T> a, std::complex<T> b) {
  // The phase b.re arg(a) + b.im ln|a| keeps all its bits (|b| up to 2^1024, |ln|a|| below 2^10), then MPFR's
  // sin and cos reduce it modulo 2 pi exactly; 200 bits beyond the output's cover the remaining roundings.
  const double top =
      std::max({std::fabs(static_cast<double>(b.real())), std::fabs(static_cast<double>(b.imag())), 1.0});
  const mpfr_prec_t p = 256 + std::ilogb(top) + 16;
  Mp ar(p, a.real()), ai(p, a.imag()), br(p, b.real()), bi(p, b.imag());
  Mp log_abs(p), arg(p), w_re(p), w_im(p), t(p);
  mpfr_hypot(log_abs, ar, ai, MPFR_RNDN);
  mpfr_log(log_abs, log_abs, MPFR_RNDN);
  mpfr_atan2(arg, ai, ar, MPFR_RNDN);
  mpfr_mul(w_re, br, log_abs, MPFR_RNDN);
  mpfr_mul(t, bi, arg, MPFR_RNDN);
  mpfr_sub(w_re, w_re, t, MPFR_RNDN);
  mpfr_mul(w_im, br, arg, MPFR_RNDN);
  mpfr_mul(t, bi, log_abs, MPFR_RNDN);
  mpfr_add(w_im, w_im, t, MPFR_RNDN);
  Mp scale(p), cos_w(p), sin_w(p), out(66);
  mpfr_exp(scale, w_re, MPFR_RNDN);
  mpfr_sin_cos(sin_w, cos_w, w_im, MPFR_RNDN);
  mpfr_mul(cos_w, cos_w, scale, MPFR_RNDN);
  mpfr_mul(sin_w, sin_w, scale, MPFR_RNDN);
  const T re = round_odd_then_to<T>(out, mpfr_set(out, cos_w, MPFR_RNDZ));
  const T im = round_odd_then_to<T>(out, mpfr_set(out, sin_w, MPFR_RNDZ));
  return {re, im};
}

}  // namespace

std::complex<float> correctly_rounded_div(std::complex<float> a, std::complex<float> b) {
  return div_impl(a, b);
}
std::complex<double> correctly_rounded_div(std::complex<double> a, std::complex<double> b) {
  return div_impl(a, b);
}
std::complex<float> correctly_rounded_sqrt(std::complex<float> z) {
  return sqrt_impl(z);
}
std::complex<double> correctly_rounded_sqrt(std::complex<double> z) {
  return sqrt_impl(z);
}
float correctly_rounded_abs(std::complex<float> z) {
  return abs_impl(z);
}
double correctly_rounded_abs(std::complex<double> z) {
  return abs_impl(z);
}
std::complex<float> wide_phase_pow(std::complex<float> a, std::complex<float> b) {
  return pow_impl(a, b);
}
std::complex<double> wide_phase_pow(std::complex<double> a, std::complex<double> b) {
  return pow_impl(a, b);
}

}  // namespace pk::cpu
