// exact_complex.cpp — the complex results whose contract long double cannot meet, computed with MPFR.
//
// div, reciprocal, sqrt and abs of c128 are contracted correctly rounded. std::complex<long double> rounds
// several times at 64 bits and its result, rounded again to double, is one ulp off about once in 2^11 values;
// a backend that reproduced that error would pass and a correct one would fail. pow's phase b*log(a) needs as
// many bits as |b| has above the point (3.4e38 ~ 2^128 for c64, up to 2^1024 for c128) plus the output's.
// Each function returns the exact result rounded to odd at 64 bits (see make_odd): the oracle's one final
// rounding to the output dtype is then the correct rounding (Boldo & Melquiond).
#include <mpfr.h>

#include <algorithm>
#include <cmath>

#include "mpfr_big.hpp"
#include "oracle_internal.hpp"

namespace pk::oracle {
namespace {

// The odd-rounded 64-bit value of an exact x, given x truncated to 64 bits (`t`, by an MPFR call rounding
// toward zero) and that call's ternary value: if the truncation was inexact, take the odd one of the two
// neighbours, which is the one away from zero when the truncation is even.
long double odd_from_truncated(mpfr_ptr t, int ternary) {
  const long double v = mpfr_get_ld(t, MPFR_RNDN);  // exact: 64 bits fit, and so does the exponent range
  if (ternary == 0 || std::isinf(v)) return v;
  return make_odd(v, mpfr_sgn(t) >= 0 ? 1.0L : -1.0L);
}

// x (an approximation far more precise than 64 bits) rounded to odd at 64 bits.
long double round_to_odd_64(mpfr_ptr x) {
  Big t(64);
  const int ternary = mpfr_set(t, x, MPFR_RNDZ);
  return odd_from_truncated(t, ternary);
}

// p*q + r*s exactly: each product of two 64-bit values is exact at 128 bits, and their sum at 130 bits plus
// the distance between the products' exponents.
void exact_dot2(mpfr_ptr out, long double p, long double q, long double r, long double s) {
  Big a(128), b(128);
  mpfr_mul(a, Big(64, p), Big(64, q), MPFR_RNDN);
  mpfr_mul(b, Big(64, r), Big(64, s), MPFR_RNDN);
  mpfr_prec_t prec = 130;
  if (!mpfr_zero_p(a) && !mpfr_zero_p(b))
    prec += static_cast<mpfr_prec_t>(std::labs(mpfr_get_exp(a) - mpfr_get_exp(b)));
  mpfr_set_prec(out, prec);
  mpfr_add(out, a, b, MPFR_RNDN);
}

}  // namespace

long double exact_hypot(long double x, long double y) {
  if (std::isinf(x) || std::isinf(y)) return HUGE_VALL;
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<long double>::quiet_NaN();
  Big n(64), h(64);
  exact_dot2(n, x, x, y, y);
  const int ternary = mpfr_sqrt(h, n, MPFR_RNDZ);  // correctly truncated, and whether that was exact
  return odd_from_truncated(h, ternary);
}

Wide exact_complex_div(const Wide &a, const Wide &b) {
  Big re(64), im(64), den(64);
  exact_dot2(re, a.re, b.re, a.im, b.im);   // ac + bd
  exact_dot2(im, a.im, b.re, -a.re, b.im);  // bc - ad
  exact_dot2(den, b.re, b.re, b.im, b.im);  // c^2 + d^2
  Big q(64);
  Wide out;
  for (int part = 0; part < 2; ++part) {
    mpfr_ptr num = part == 0 ? re.get() : im.get();
    const int ternary = mpfr_div(q, num, den, MPFR_RNDZ);
    (part == 0 ? out.re : out.im) = odd_from_truncated(q, ternary);
  }
  return out;
}

Wide exact_complex_sqrt(const Wide &z) {
  // sqrt(x + iy) = t + i y / (2t) with t = sqrt((|z| + x) / 2) for x >= 0, and |y| / (2t) + i copysign(t, y)
  // with t = sqrt((|z| - x) / 2) otherwise. At 512 bits every step is exact when its result is representable,
  // so exact square roots stay exact; an inexact component is an algebraic number that, for inputs of at most
  // 64 bits, no 64-bit value approaches within 2^-500 short of the exponent spread of x^2 and y^2.
  const mpfr_prec_t p = 512;
  Big m(p), t(p), u(p), x(p, z.re), y(p, z.im);
  mpfr_hypot(m, x, y, MPFR_RNDN);
  if (z.re >= 0)
    mpfr_add(t, m, x, MPFR_RNDN);
  else
    mpfr_sub(t, m, x, MPFR_RNDN);
  mpfr_div_2ui(t, t, 1, MPFR_RNDN);
  mpfr_sqrt(t, t, MPFR_RNDN);
  mpfr_mul_2ui(u, t, 1, MPFR_RNDN);
  mpfr_div(u, y, u, MPFR_RNDN);  // y / (2t)
  if (z.re >= 0) return {round_to_odd_64(t), round_to_odd_64(u)};
  mpfr_abs(u, u, MPFR_RNDN);
  if (std::signbit(z.im)) mpfr_neg(t, t, MPFR_RNDN);
  return {round_to_odd_64(u), round_to_odd_64(t)};
}

Wide exact_complex_pow(const Wide &a, const Wide &b) {
  // a^b = exp(b log a), log a = ln|a| + i arg(a). The phase b.re arg(a) + b.im ln|a| is reduced modulo 2 pi by
  // MPFR's sin and cos exactly, so it needs only its own bits to be right: |b| up to 2^1024 and |log a| up to
  // 2^10 above the point, plus 200 bits beneath the output's.
  long double big = std::max(std::fabs(b.re), std::fabs(b.im));
  const mpfr_prec_t p = 256 + std::max(0, std::ilogb(std::max(big, 1.0L))) + 16;
  Big ar(p, a.re), ai(p, a.im), br(p, b.re), bi(p, b.im);
  Big lm(p), th(p), wr(p), wi(p), tmp(p);
  mpfr_hypot(lm, ar, ai, MPFR_RNDN);
  mpfr_log(lm, lm, MPFR_RNDN);
  mpfr_atan2(th, ai, ar, MPFR_RNDN);
  mpfr_mul(wr, br, lm, MPFR_RNDN);  // w = b * log a
  mpfr_mul(tmp, bi, th, MPFR_RNDN);
  mpfr_sub(wr, wr, tmp, MPFR_RNDN);
  mpfr_mul(wi, br, th, MPFR_RNDN);
  mpfr_mul(tmp, bi, lm, MPFR_RNDN);
  mpfr_add(wi, wi, tmp, MPFR_RNDN);
  Big mag(p), c(p), s(p);
  mpfr_exp(mag, wr, MPFR_RNDN);
  mpfr_sin_cos(s, c, wi, MPFR_RNDN);
  mpfr_mul(c, c, mag, MPFR_RNDN);
  mpfr_mul(s, s, mag, MPFR_RNDN);
  return {round_to_odd_64(c), round_to_odd_64(s)};
}

}  // namespace pk::oracle
