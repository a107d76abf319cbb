// special.cpp — the regularized incomplete gamma functions P(a, x), Q(a, x) and the Hurwitz zeta function, in
// long double.
//
// igamma / igammac: the power series of P for x < a + 1 (positive terms) and Legendre's continued fraction of Q
// for x >= a + 1; the other function is 1 minus the first only where that loses at most a few bits. The common
// factor x^a e^-x / Gamma(a) is computed so that its relative error stays a few 2^-64 times the size of its
// exponent (see prefactor()); Q for small a and x uses Gautschi's form with an accurate 1 - x^a / Gamma(1 + a),
// where 1 - P would cancel; for large a with x near a, Temme's uniform expansion. zeta: direct summation of the first
// terms, then Euler-Maclaurin.
#include <cstdio>
#include <limits>

#include "mpfr_big.hpp"
#include "oracle_internal.hpp"

namespace pk::oracle {
namespace {

// A value for a message: 17 significant digits, exponent form where it is long (std::to_string prints 309 digits
// for 1.8e308).
std::string num(long double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17Lg", v);
  return b;
}

const long double kNaN = std::numeric_limits<long double>::quiet_NaN();
const long double kPi = 3.141592653589793238462643383279502884L;
const long double kEpsilon = 0x1p-66L;  // series stop when a term is below this fraction of the sum
const long long kMaxTerms = 2000000;    // beyond this the expansions used here are too slow: unimplemented

// Bernoulli numbers B_2, B_4, ..., B_30 (exact rationals, each rounded once to long double).
const long double kBernoulli2k[] = {1.0L / 6,
                                    -1.0L / 30,
                                    1.0L / 42,
                                    -1.0L / 30,
                                    5.0L / 66,
                                    -691.0L / 2730,
                                    7.0L / 6,
                                    -3617.0L / 510,
                                    43867.0L / 798,
                                    -174611.0L / 330,
                                    854513.0L / 138,
                                    -236364091.0L / 2730,
                                    8553103.0L / 6,
                                    -23749461029.0L / 870,
                                    8615841276005.0L / 14322};

// Hurwitz zeta(s, q) = sum over k >= 0 of (k + q)^-s for s > 1. The first terms are summed directly (stopping
// early once the tail, at most term * (q + k) / (s - 1), is negligible); from w = q + N >= max(25, 2 s) on the
// tail is Euler-Maclaurin's: w^(1-s) / (s-1) + w^-s / 2 + sum_j B_2j / (2j)! s (s+1) ... (s+2j-2) w^(-s-2j+1),
// whose terms fall by at least ((s + 2j) / (2 pi w))^2 <= 0.2^2 each, so 15 of them reach 2^-66.
long double hurwitz_zeta(long double s, long double q) {
  if (std::isnan(s) || std::isnan(q)) return kNaN;
  if (s == 1) return HUGE_VALL;
  if (s < 1) return kNaN;
  if (q <= 0 && q == floorl(q)) return HUGE_VALL;  // a pole: the term k = -q is 0^-s
  // q < 0 off the integers: (k + q)^-s is real for every k only when s is an integer (as Cephes / SciPy)
  if (q < 0 && s != floorl(s)) return kNaN;
  if (std::isinf(q)) return 0;  // q = -inf was rejected above (an "integer")
  if (std::isinf(s)) return q > 1 ? 0 : (q == 1 ? 1 : HUGE_VALL);
  const long double w_min = fmaxl(25, 2 * s);
  // The direct sum is compensated (Neumaier: sum + comp): for q < 0 its terms have both signs and may cancel to far
  // below their size (zeta(7, -7.5) = zeta(7, 8.5) = 6.2e-7 after terms of up to 128 cancel in pairs), where a
  // plain long double sum kept an error of 128 * 2^-64, 4e-12 of the result.
  long double sum = 0, comp = 0;
  long double w = q;
  for (long long k = 0; w < w_min; ++k, w = q + static_cast<long double>(k)) {
    if (k > kMaxTerms) unimplemented("zeta: too many terms for s = " + num(s) + ", q = " + num(q));
    const long double term = powl(w, -s);
    const long double t = sum + term;
    if (std::isfinite(t)) comp += fabsl(sum) >= fabsl(term) ? (sum - t) + term : (term - t) + sum;
    sum = t;
    const long double total = std::isfinite(sum) ? sum + comp : sum;  // an infinite sum keeps no correction
    // the remaining terms add up to at most term * w / (s - 1) (an integral bound), when all are positive. `<=`: a
    // term that underflowed to 0 with the sum still 0 (s in the millions and beyond: zeta(1e23, 2) is 2^-1e23) ends
    // the sum at once; with `<` the loop ran to kMaxTerms for every such s, seconds per case generation.
    if (w > 0 && term * w / (s - 1) <= fabsl(total) * kEpsilon) return total;
  }
  if (std::isfinite(sum)) sum += comp;
  const long double ws = powl(w, -s);
  long double tail = w * ws / (s - 1) + ws / 2;
  // t_j = B_2j / (2j)! * s (s+1) ... (s+2j-2) * w^(-s-2j+1), built up from t_1 = B_2 / 2 * s * w^(-s-1)
  long double factor = s * ws / w;  // s * w^(-s-1), then times (s+2j-1)(s+2j) / ((2j+1)(2j+2) w^2) per step
  for (int j = 1; j <= 15; ++j) {
    const long double t = kBernoulli2k[j - 1] * factor / 2;  // the 1/(2j)! is carried in factor except 1/2
    tail += t;
    if (fabsl(t) < fabsl(tail) * kEpsilon) break;
    factor *= (s + 2 * j - 1) * (s + 2 * j) / ((2.0L * j + 1) * (2.0L * j + 2) * w * w);
  }
  return sum + tail;
}

// ln Gamma(1 + a) for 0 <= a < 1 with relative accuracy near a = 0 (where 1 + a is inexact and lgammal(1 + a)
// would be accurate only absolutely): -gamma a + sum_{k>=2} (-1)^k zeta(k) a^k / k for a <= 1/2; above, 1 + a is
// exact in long double (a has at most 53 significant bits) and lgammal is accurate, its zero at 2 included.
long double lgamma1p(long double a) {
  if (a > 0.5L) return lgammal(1 + a);
  static const std::vector<long double> zeta_k = [] {
    std::vector<long double> z(80);
    for (int k = 2; k < 80; ++k) z[static_cast<size_t>(k)] = hurwitz_zeta(k, 1);
    return z;
  }();
  const long double euler_gamma = 0.5772156649015328606065120900824024310L;
  long double sum = 0, pw = -a;
  for (int k = 2; k < 80; ++k) {
    pw *= -a;  // (-a)^k
    const long double t = zeta_k[static_cast<size_t>(k)] * pw / k;
    sum += t;
    if (fabsl(t) < 0x1p-70L * a) break;
  }
  return -euler_gamma * a + sum;
}

// log1p(t) - t for t >= -1/4, accurate relative to the result: the series -t^2/2 + t^3/3 - ... for |t| < 1/4, else
// log1pl (the cancellation there costs at most ~3 bits).
long double log1pmx(long double t) {
  if (fabsl(t) >= 0.25L) return log1pl(t) - t;
  long double sum = 0, pw = t;
  for (int k = 2; k < 100; ++k) {
    pw *= -t;  // (-1)^(k+1) t^k
    const long double term = pw / k;
    sum += term;
    if (fabsl(term) < fabsl(sum) * kEpsilon) break;
  }
  return sum;
}

// ln Gamma*(a) = ln( Gamma(a) e^a / (sqrt(2 pi) a^(a - 1/2)) ), Stirling's series for a >= 20:
// sum_k B_2k / (2k (2k-1) a^(2k-1)); its terms fall by ~(k / (pi a))^2, 12 of them reach 2^-66.
long double log_gamma_star(long double a) {
  long double sum = 0, inv = 1 / a, pw = inv;
  for (int k = 1; k <= 12; ++k) {
    const long double t = kBernoulli2k[k - 1] / (2.0L * k * (2 * k - 1)) * pw;
    sum += t;
    if (fabsl(t) < fabsl(sum) * kEpsilon) break;
    pw *= inv * inv;
  }
  return sum;
}

// x^a e^-x / Gamma(a), for a > 0 and 0 < x < inf. For a < 20 from powl, expl and tgammal (a few 2^-64 each),
// up to x = 2^14: beyond, the product is below e^(20 ln 2^14 - 2^14) = e^-16190, under the smallest long double
// (e^-11430), while x^a alone would overflow long double near the f64 maximum for a > 16 (inf * 0 = NaN). For a >= 20
// as sqrt(a / (2 pi)) / Gamma*(a) * exp(a (ln(x/a) - x/a + 1)), with x/a - 1 = (x - a) / a from the exact difference,
// so the exponent carries a relative error of a few 2^-64 (not a ln x and x separately, whose absolute error a ln x *
// 2^-64 would be amplified by exp).
long double prefactor(long double a, long double x) {
  if (a < 20) {
    if (x > 0x1p14L) return 0;  // x^a e^-x decreases for x > a: 0 in long double from here on
    const long double p = powl(x, a) * expl(-x);
    return a < 1 ? p * a / tgammal(a + 1) : p / tgammal(a);
  }
  const long double t = (x - a) / a;
  // below t = -1/4, ln(x/a) straight from x/a: log1p(t) would amplify t's absolute rounding error by a/x
  const long double e = t < -0.25L ? logl(x / a) - t : log1pmx(t);
  return sqrtl(a / (2 * kPi)) * expl(a * e - log_gamma_star(a));
}

// P(a, x) by its power series: x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1) ... (a+n)); all terms positive.
long double p_series(long double a, long double x) {
  // a prefactor below the long double range leaves P there too (the sum is below ~sqrt(a) + 8): skip the summation
  const long double pre = prefactor(a, x);
  if (pre == 0) return 0;
  long double term = 1, sum = 1;
  for (long long n = 1;; ++n) {
    if (n > kMaxTerms) unimplemented("igamma: series too slow for a = " + num(a) + ", x = " + num(x));
    term *= x / (a + static_cast<long double>(n));
    sum += term;
    if (term < sum * kEpsilon) break;
  }
  return pre / a * sum;
}

// Q(a, x) by Legendre's continued fraction x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)),
// evaluated by the modified Lentz method (Numerical Recipes 6.2), for x >= a + 1.
long double q_fraction(long double a, long double x) {
  // The fraction is at most 1 here: Q = 0 with the prefactor. Not only faster: where x - a >= 2^65 (a = 1e300,
  // x = 1e305) b += 2 is lost, delta stays at 1 - 2^-64 and the loop below would never stop.
  const long double pre = prefactor(a, x);
  if (pre == 0) return 0;
  const long double tiny = 0x1p-16000L;
  long double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (long long n = 1;; ++n) {
    if (n > kMaxTerms) unimplemented("igammac: fraction too slow for a = " + num(a) + ", x = " + num(x));
    const long double an = -static_cast<long double>(n) * (static_cast<long double>(n) - a);
    b += 2;
    d = an * d + b;
    if (fabsl(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabsl(c) < tiny) c = tiny;
    d = 1 / d;
    const long double delta = d * c;
    h *= delta;
    if (fabsl(delta - 1) < kEpsilon) break;
  }
  return pre * h;
}

// Q(a, x) for 0 < a < 1 and x < a + 1 (Gautschi 1979): Q = (1 - x^a / Gamma(1 + a)) - x^a / Gamma(a) * S with
// S = sum_{n>=1} (-x)^n / (n! (a + n)); 1 - x^a / Gamma(1 + a) = -expm1(a ln x - ln Gamma(1 + a)) keeps its
// relative accuracy as a -> 0, where 1 - P would lose all of it.
long double q_small_a(long double a, long double x) {
  const long double v = a * logl(x) - lgamma1p(a);
  long double s = 0, term = 1;
  for (int n = 1; n < 1000; ++n) {
    term *= -x / n;  // (-x)^n / n!
    const long double t = term / (a + n);
    s += t;
    if (fabsl(t) < fabsl(s) * kEpsilon) break;
  }
  return -expm1l(v) - a * expl(v) * s;
}

#include "igamma_temme.inc"

// Temme's uniform expansion (DLMF 8.12.3-10) for large a with x near a, where the series and the fraction need
// ~10 sqrt(a) terms (past kMaxTerms from a ~ 10^10 on): with sigma = (x - a) / a, E = a (sigma - log1p(sigma)) =
// a eta^2 / 2 and y = sign(sigma) sqrt(E),
//   Q(a, x) = erfc(y) / 2 + e^-E / sqrt(2 pi a) S,  S = sum_k c_k(eta) a^-k  (c_k: igamma_temme.inc),
// and the smaller of P and Q is erfc(|y|) / 2 + sign(sigma) e^-E S / sqrt(2 pi a) (no 1 - Q). E reaches ~11000
// where the result is still a long double, so E, e^-E and erfc(|y|) are computed in MPFR (E's relative error in
// long double, times E, would be the result's); S varies slowly and stays in long double. Used for a >= 1000 and
// |eta| <= 0.6 (x / a in about [0.58, 1.7]): 30 terms of each c_k leave below 2^-70 there, and the a^-k sum's 10
// terms below 1000^-10.
bool temme_applies(long double a, long double x) {
  if (a < 1000) return false;
  const long double sigma = (x - a) / a;
  return sigma > -0.5L && sigma < 1.0L && -2 * log1pmx(sigma) <= 0.36L;
}
long double temme_smaller_tail(long double a, long double x, bool &is_q) {
  const mpfr_prec_t prec = 256;  // x - a exact; log1p(sigma) - sigma keeps ~200 bits where sigma is 2^-53
  Big ba(prec, a), sigma(prec, x), e(prec), y(prec), tail(128), scale(128);
  mpfr_sub(sigma, sigma, ba, MPFR_RNDN);
  mpfr_div(sigma, sigma, ba, MPFR_RNDN);
  mpfr_log1p(e, sigma, MPFR_RNDN);
  mpfr_sub(e, sigma, e, MPFR_RNDN);  // sigma - log1p(sigma) >= 0
  mpfr_mul(e, e, ba, MPFR_RNDN);     // E
  mpfr_sqrt(y, e, MPFR_RNDN);
  mpfr_erfc(tail, y, MPFR_RNDN);
  mpfr_neg(scale, e, MPFR_RNDN);
  mpfr_exp(scale, scale, MPFR_RNDN);
  const bool above = mpfr_sgn(sigma.get()) >= 0;
  const long double eta = copysignl(sqrtl(2 * mpfr_get_ld(e, MPFR_RNDN) / a), above ? 1.0L : -1.0L);
  long double sum = 0, apow = 1;
  for (int k = 0; k < 10; ++k) {
    long double ck = 0;
    for (int n = 29; n >= 0; --n) ck = ck * eta + kTemme[k][n];
    sum += ck * apow;
    apow /= a;
  }
  is_q = above;
  return mpfr_get_ld(tail, MPFR_RNDN) / 2 + (above ? 1 : -1) * mpfr_get_ld(scale, MPFR_RNDN) * sum / sqrtl(2 * kPi * a);
}

// The shared special values; returns true (and sets r) when one applies.
bool igamma_special(long double a, long double x, bool upper, long double &r) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) {
    r = kNaN;
  } else if (x == 0) {
    r = upper ? 1 : 0;  // P(a, 0) = 0 for every a >= 0, a = 0 included (the table's special values)
  } else if (std::isinf(a)) {
    r = std::isinf(x) ? kNaN : (upper ? 1 : 0);
  } else if (a == 0 || std::isinf(x)) {
    r = upper ? 0 : 1;  // P(0, x > 0) = 1: the limit a -> 0 of P(a, x)
  } else {
    return false;
  }
  return true;
}

long double igamma_p(long double a, long double x) {
  long double r;
  if (igamma_special(a, x, false, r)) return r;
  if (temme_applies(a, x)) {
    bool is_q = false;
    const long double t = temme_smaller_tail(a, x, is_q);
    return is_q ? 1 - t : t;
  }
  if (x < a + 1) return p_series(a, x);
  return 1 - q_fraction(a, x);  // Q <= ~0.6 here: no cancellation
}

long double igamma_q(long double a, long double x) {
  long double r;
  if (igamma_special(a, x, true, r)) return r;
  if (temme_applies(a, x)) {
    bool is_q = false;
    const long double t = temme_smaller_tail(a, x, is_q);
    return is_q ? t : 1 - t;
  }
  if (x >= a + 1) return q_fraction(a, x);
  if (a < 1) return q_small_a(a, x);
  return 1 - p_series(a, x);  // a >= 1 and x < a + 1: P <= P(1, 2) = 0.865, at most 3 bits cancel
}

}  // namespace

void register_special(Registry &r) {
  auto real2 = [](const char *name, long double (*fn)(long double, long double)) -> Kernel {
    return [name, fn](const Call &c, std::vector<WTensor> &out) {
      const WTensor &a = c.a(0), &b = c.a(1);
      if (!is_float_dtype(a.dtype))
        unimplemented(std::string(name) + ": dtype " + meta::dtype_name(a.dtype) + " is not implemented by the oracle");
      WTensor o = c.output(0);
      for (size_t i = 0; i < o.v.size(); ++i) o.v[i] = {fn(a.v[i].re, b.v[i].re), 0};
      out.push_back(std::move(o));
    };
  };
  r["igamma"] = real2("igamma", igamma_p);
  r["igammac"] = real2("igammac", igamma_q);
  r["zeta"] = real2("zeta", hurwitz_zeta);
}

}  // namespace pk::oracle
