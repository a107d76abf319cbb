// elementwise_special.cpp — the special functions of the elementwise kernels that glibc lacks or does not round
// well enough (lgamma, erf_inv, ndtri, erfcx, digamma, modified Bessel, incomplete gamma, Hurwitz zeta, cbrt),
// in double, long double or binary128: used by the unary ops (erf_inv ... cbrt) and the binary ones (igamma,
// igammac, zeta).
#include <quadmath.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "elementwise.hpp"

namespace pk::cpu::elementwise {

// --- special functions (double unless said) -------------------------------------------------------------------------

constexpr double kSqrtPi = 1.772453850905516027298167483341145183;
constexpr double kSqrt2 = 1.414213562373095048801688724209698079;

double lgamma_value(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);  // the re-entrant form: lgamma writes the global signgam
}

// Inverse error function: Giles' single-precision approximation, then Newton steps on erf (or on erfc near ±1,
// where 1 - |y| is exact) until the step is below an ulp.
double erf_inv_value(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return HUGE_VAL;
  if (y == -1) return -HUGE_VAL;
  if (y == 0) return y;
  const double ay = std::fabs(y);
  double w = -std::log((1 - ay) * (1 + ay)), x;
  if (w < 5) {
    w -= 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * w;
    x = p * ay;
  } else {
    w = std::sqrt(w) - 3;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * w;
    x = p * ay;
  }
  if (ay > 0.5) {
    // Newton on log erfc(x) = log(1 - |y|) (1 - |y| is exact here): erfc falls by orders of magnitude per unit of x
    // in the tail, where Newton on erfc itself converges slowly and stopped ~0.03 short for y = 1 - 2^-53.
    const double target = std::log1p(-ay);
    for (int it = 0; it < 60; ++it) {
      const double c = std::erfc(x);
      const double step = (std::log(c) - target) / (-2 / kSqrtPi * std::exp(-x * x) / c);
      x -= step;
      if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
    }
    return std::copysign(x, y);
  }
  for (int it = 0; it < 8; ++it) {
    const double f = std::erf(x) - ay;
    const double step = f / (2 / kSqrtPi * std::exp(-x * x));
    x -= step;
    if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
  }
  return std::copysign(x, y);
}

// Inverse of the standard normal CDF: p <= 1/2 is refined on the small tail (exact 1 - p for p > 1/2).
double ndtri_value(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0) return -HUGE_VAL;
  if (p == 1) return HUGE_VAL;
  if (p > 0.5) return -ndtri_value(1 - p);
  if (p < 1e-200) {
    // Deep tail (x < -30): Newton on log Phi(x) = -x^2/2 - log(|x| sqrt(2 pi)) + log(S(x)), S the asymptotic
    // series 1 - 1/x^2 + 3/x^4 - ...; d/dx log Phi = phi/Phi = |x| / S(x).
    const long double lp = std::log(static_cast<long double>(p));
    long double x = -std::sqrt(-2 * lp);
    for (int it = 0; it < 20; ++it) {
      const long double z = 1 / (x * x);
      long double term = 1, series = 1;
      for (int k = 1; k < 12; ++k) {
        term *= -(2 * k - 1) * z;
        series += term;
      }
      const long double log_phi =
          -x * x / 2 - std::log(-x * std::sqrt(2 * 3.141592653589793238462643383279502884L)) + std::log(series);
      const long double step = (log_phi - lp) / (-x / series);
      x -= step;
      if (std::fabs(step) < 1e-18L * std::fabs(x)) break;
    }
    return static_cast<double>(x);
  }
  double x = -kSqrt2 * erf_inv_value(1 - 2 * p);  // a start; 1 - 2p loses bits for tiny p, Halley restores them
  if (!std::isfinite(x)) x = -std::sqrt(-2 * std::log(p));
  if (p < 1e-10) {
    // The tail: Newton on log Phi(x) = log p, d/dx log Phi = phi / Phi. Halley on Phi itself from the crude start
    // -sqrt(-2 log p) needed more than its 4 steps (p = 1.09e-200 was left 2e7 ulps off).
    const double target = std::log(p);
    for (int it = 0; it < 60; ++it) {
      const double phi_big = 0.5 * std::erfc(-x / kSqrt2);
      const double step = (std::log(phi_big) - target) / (std::exp(-x * x / 2) / std::sqrt(2 * kPi) / phi_big);
      x -= step;
      if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
    }
    return x;
  }
  for (int it = 0; it < 8; ++it) {
    const double e = 0.5 * std::erfc(-x / kSqrt2) - p;
    const double u = e * std::sqrt(2 * kPi) * std::exp(x * x / 2);
    const double step = u / (1 + x * u / 2);
    x -= step;
    if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
  }
  return x;
}

// exp(x^2) erfc(x): direct with an exact square for moderate x, the asymptotic series beyond 10.
double erfcx_value(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x > 0 ? 0.0 : HUGE_VAL;
  if (x < 10) {
    const double hi = x * x, lo = std::fma(x, x, -hi);
    // x^2 beyond exp's range: x < 0 here, erfc(x) ~ 2, so the result overflows. (exp(hi) (1 + lo) with hi = inf,
    // or with lo, the rounding error of a huge x^2, below -1, gave -inf.)
    if (!(hi < 710)) return HUGE_VAL;
    return std::exp(hi) * (1 + lo) * std::erfc(x);
  }
  if (std::isinf(x)) return 0;
  const double inv = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    term *= -(2 * k - 1) * inv;
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  return sum * (1 / kSqrtPi) / x;  // not sum / (x sqrt(pi)): that product overflows for x > 1e308
}

namespace {

// psi(x) for finite non-pole x, in the arithmetic of R (long double, or __float128 near the roots): reflection for
// x < 0 with an exact reduction of x mod 1, recurrence up to 40, then Stirling's series to B_24 (its first omitted
// term is below 2^-120 from 40 on; stopping at 10 with terms to B_14 left ~2e-17 absolute, hundreds of ulps where
// psi is small).
template <class R>
R digamma_terms(double x) {
  static const R coef[12] = {R(1) / 12,        R(-1) / 120,       R(1) / 252,       R(-1) / 240,
                             R(1) / 132,       R(-691) / 32760,   R(1) / 12,        R(-3617) / 8160,
                             R(43867) / 14364, R(-174611) / 6600, R(854513) / 3036, R(-236364091) / 65520};
  R result = 0, v = x;
  if (x < 0) {
    // pi cot(pi x) depends on x mod 1 only: reduce exactly to [-1/2, 1/2] so the small angle keeps its precision.
    const R red = R(x - std::nearbyint(x));
    if constexpr (std::is_same_v<R, long double>) {
      const long double pi = 3.141592653589793238462643383279502884L;
      result = -pi / std::tan(pi * red);
    } else {
      const R pi = acosq(-1);
      result = -pi / tanq(pi * red);
    }
    v = 1 - v;
  }
  while (v < 40) {
    result -= 1 / v;
    v += 1;
  }
  const R z = 1 / (v * v);
  R series = 0;
  for (int k = 11; k >= 0; --k) series = (series + coef[k]) * z;
  if constexpr (std::is_same_v<R, long double>) {
    return result + std::log(v) - 1 / (2 * v) - series;
  } else {
    return result + logq(v) - 1 / (2 * v) - series;
  }
}

}  // namespace

// Digamma: reflection for x < 0 (with an exact reduction of x mod 2), recurrence and Stirling's series (digamma_terms),
// a Taylor series at the positive root.
double digamma_value(double x) {
  if (std::isnan(x)) return x;
  if (x == 0) return std::signbit(x) ? HUGE_VAL : -HUGE_VAL;
  if (std::isinf(x)) return x > 0 ? x : std::numeric_limits<double>::quiet_NaN();
  if (x < 0 && x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(x - 1.4616321449683622) < 0.12) {
    // Near the positive root x0 the recurrence below cancels to a tiny result: use the Taylor series at x0
    // (coefficients psi^(k)(x0) / k!, |ratio| ~ 0.68, so 18 terms reach 1e-20 for |x - x0| < 0.12) with x0 split
    // hi + lo so that x - x0 keeps its relative precision.
    static const long double kC[18] = {
        0.9676722454476211704274448L,    -0.4427631689835921060928653L,   0.2584997609556510106244014L,
        -0.1639427054424065275042513L,   0.1078240506912623657571829L,    -0.07219956125645471092612178L,
        0.04880428816414310722509253L,   -0.0331611264748473592922584L,   0.02259764823221810465962483L,
        -0.01542476590494895913880032L,  0.01053879161661217538812405L,   -0.007204534386356868240970474L,
        0.004926781395729853446354266L,  -0.003369801655439328082792857L, 0.00230512632673492783693838L,
        -0.001576936771430197259270935L, 0.001078825201916296580691918L,  -0.0007380709389960051295660474L};
    const long double dx = static_cast<long double>(x - 1.4616321449683622) - 9.549995429965697e-17L;
    long double sum = 0;
    for (int k = 17; k >= 0; --k) sum = (sum + kC[k]) * dx;
    return static_cast<double>(sum);
  }
  const long double r = digamma_terms<long double>(x);
  // The terms are ~ln|x| + |pi cot(pi x)| (a few units): where psi is far smaller than that (near the negative
  // roots, one per unit interval) long double's 2^-64 of them is many f64 ulps; redo those in 113 bits.
  if (std::fabs(r) < 0x1p-6L) return static_cast<double>(digamma_terms<__float128>(x));
  return static_cast<double>(r);
}
// Modified Bessel functions of the first kind, order 0 and 1, scaled by exp(-|x|) when `scaled`: the power series
// (all terms positive, in long double) below 20, the asymptotic expansion above (its smallest term is ~e^-2x).
double bessel_i_value(int order, double xd, bool scaled) {
  if (std::isnan(xd)) return xd;
  const long double x = std::fabs(static_cast<long double>(xd));
  const double sign = (order == 1 && xd < 0) ? -1.0 : 1.0;
  long double r;
  if (x < 20) {
    const long double q = x * x / 4;
    long double term = order == 0 ? 1 : x / 2, sum = term;
    for (int k = 1; k < 200; ++k) {
      term *= q / (static_cast<long double>(k) * (k + order));
      sum += term;
      if (term < sum * 1e-21L) break;
    }
    r = scaled ? sum * std::exp(-x) : sum;
  } else {
    if (std::isinf(xd)) return scaled ? 0.0 : sign * HUGE_VAL;
    const long double mu = 4.0L * order * order;
    long double term = 1, sum = 1;
    for (int k = 1; k < 60; ++k) {
      const long double odd = 2 * k - 1;
      term *= -(mu - odd * odd) / (k * 8 * x);
      sum += term;
      if (std::fabs(term) < 1e-21L * std::fabs(sum)) break;
    }
    const long double pre = 1 / std::sqrt(2 * static_cast<long double>(kPi) * x);
    r = scaled ? pre * sum : (x > 11350 ? HUGE_VALL : pre * sum * std::exp(x));
  }
  return sign * static_cast<double>(r);
}

namespace {

// Regularized incomplete gamma P(a, x) and Q(a, x) (Cephes' series and continued fraction, in long double).
long double igam_series(long double a, long double x);
long double igamc_fraction(long double a, long double x);
long double igam_prefactor(long double a, long double x) {  // x^a e^-x / Gamma(a)
  int sign = 0;
  return std::exp(a * std::log(x) - x - ::lgammal_r(a, &sign));
}
long double igam_series(long double a, long double x) {
  long double r = a, c = 1, ans = 1;
  for (int k = 0; k < 10000; ++k) {
    r += 1;
    c *= x / r;
    ans += c;
    if (c <= ans * 1e-20L) break;
  }
  return ans * igam_prefactor(a, x) / a;
}
long double igamc_fraction(long double a, long double x) {
  long double y = 1 - a, z = x + y + 1, c = 0;
  long double pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x, ans = pkm1 / qkm1;
  for (int k = 0; k < 10000; ++k) {
    c += 1;
    y += 1;
    z += 2;
    const long double yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    long double t = 1;
    if (qk != 0) {
      const long double r = pk / qk;
      t = std::fabs((ans - r) / r);
      ans = r;
    }
    pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;
    if (std::fabs(pk) > 1e300L) pkm2 *= 1e-300L, pkm1 *= 1e-300L, qkm2 *= 1e-300L, qkm1 *= 1e-300L;
    if (t <= 1e-20L) break;
  }
  return ans * igam_prefactor(a, x);
}
// ln Gamma(1 + a) for |a| <= 0.05: -gamma a + sum_k (-1)^k zeta(k) a^k / k (lgammal's absolute error near 1 would
// swamp a result of size a).
long double lgamma1p_small(long double a) {
  static const long double kZeta[12] = {
      1.6449340668482264364724L, 1.2020569031595942853997L, 1.0823232337111381915160L,
      1.0369277551433699263314L, 1.0173430619844491397145L, 1.0083492773819228268398L,
      1.0040773561979443393786L, 1.0020083928260822144178L, 1.0009945751278180853372L,
      1.0004941886041194645588L, 1.0002460865533080482986L, 1.0001227133475784891468L};  // zeta(2..13)
  long double sum = 0, power = -a;  // (-a)^(k-1) before the update below
  for (int k = 2; k <= 13; ++k) {
    power *= -a;
    sum += kZeta[k - 2] * power / k;
  }
  return -0.5772156649015328606065L * a + sum;
}

// Q(a, x) for a < 1 where the series would give 1 - P (x <= 1 or x <= a): 1 - P cancels to nothing when Q is
// tiny (Q ~ a E1(x) as a -> 0). Instead (as in DiDonato and Morris):
//   a Gamma(a, x) = (Gamma(1 + a) - 1) - (x^a - 1) - a x^a sum_{n>=1} (-x)^n / ((a + n) n!),
//   Q = a Gamma(a, x) / Gamma(1 + a),
// where Gamma(1 + a) - 1 and x^a - 1 are computed without cancellation (expm1).
long double igamc_small_a(long double a, long double x) {
  int sign = 0;
  const long double lg = std::fabs(a) <= 0.05L ? lgamma1p_small(a) : ::lgammal_r(1 + a, &sign);
  const long double gm1 = std::expm1(lg), xam1 = std::expm1(a * std::log(x));
  long double term = 1, series = 0;
  for (int n = 1; n < 200; ++n) {
    term *= -x / n;
    const long double t = term / (a + n);
    series += t;
    if (std::fabs(t) <= 1e-21L * std::fabs(series)) break;
  }
  return (gm1 - xam1 - a * (xam1 + 1) * series) / (gm1 + 1);
}

}  // namespace

double igamma_value(double a, double x, bool upper) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return nan;
  if (x == 0) return upper ? 1.0 : 0.0;  // also P(0, 0) = 0, Q(0, 0) = 1
  if (a == 0) return upper ? 0.0 : 1.0;
  if (std::isinf(a)) return std::isinf(x) ? nan : (upper ? 1.0 : 0.0);
  if (std::isinf(x)) return upper ? 0.0 : 1.0;
  const bool use_fraction = x > 1 && x > a;
  const long double p = use_fraction ? 1 - igamc_fraction(a, x) : igam_series(a, x);
  const long double q = use_fraction ? igamc_fraction(a, x) : (a < 1 ? igamc_small_a(a, x) : 1 - igam_series(a, x));
  return static_cast<double>(upper ? q : p);
}

namespace {

// Hurwitz zeta(s, q) = sum_k (k + q)^-s for s > 1: direct terms, then Euler-Maclaurin with Bernoulli numbers.
// In long double: for q < 0 the terms over negative and positive bases cancel (zeta(3, -3.5): +-8 leave 0.031).
long double hurwitz_zeta_ld(double s, long double q) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(s) || std::isnan(q)) return nan;
  if (s == 1) return HUGE_VAL;
  if (s < 1) return nan;
  if (std::isinf(s)) return q > 1 ? 0.0 : (q == 1 ? 1.0 : HUGE_VAL);  // only the k = 0 term can survive
  if (std::isinf(q))
    return q > 0 ? 0.0 : HUGE_VAL;  // +inf: every term vanishes; -inf: the poles' limit, as for
                                    // the other non-positive integers below
  if (q <= 0) {
    if (q == std::floor(q)) return HUGE_VAL;
    if (s != std::floor(s)) return nan;  // q^-s is complex
    // The terms over negative bases, k < m = ceil(-q), are (-1)^s (f + j)^-s for j < m with f = -(q + m - 1) in
    // (0, 1), i.e. (-1)^s [zeta(s, f) - zeta(s, f + m)]; the rest is zeta(s, q + m). Two
    // positive-argument sums: bounded work however negative q is (stepping one unit at a time from q = -9.35e13
    // to 9 would run for weeks).
    const long double m = std::ceil(-q);
    const long double f = -(q + (m - 1));  // |q + (m - 1)| <= |q|: a multiple of q's ulp, exact
    const long double negative = hurwitz_zeta_ld(s, f) - hurwitz_zeta_ld(s, f + m);
    const long double sign = std::fmod(s, 2.0) == 0 ? 1.0L : -1.0L;
    return sign * negative + hurwitz_zeta_ld(s, q + m);
  }
  // (2k)! / B_2k for k = 1..12, from the Bernoulli numbers B_2 .. B_24.
  static const long double kA[12] = {2.0L / (1.0L / 6),
                                     24.0L / (-1.0L / 30),
                                     720.0L / (1.0L / 42),
                                     40320.0L / (-1.0L / 30),
                                     3628800.0L / (5.0L / 66),
                                     479001600.0L / (-691.0L / 2730),
                                     87178291200.0L / (7.0L / 6),
                                     20922789888000.0L / (-3617.0L / 510),
                                     6402373705728000.0L / (43867.0L / 798),
                                     2432902008176640000.0L / (-174611.0L / 330),
                                     1124000727777607680000.0L / (854513.0L / 138),
                                     620448401733239439360000.0L / (-236364091.0L / 2730)};
  long double sum = std::pow(q, -static_cast<long double>(s)), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -static_cast<long double>(s));
    sum += b;
    // q > 0 here, so the terms only shrink: once one underflows to 0 the rest add nothing (for a huge s the
    // Euler-Maclaurin tail would otherwise meet inf * 0).
    if (b == 0 || std::fabs(b / sum) < 1e-20L) return sum;
  }
  const long double w = a;
  sum += b * w / (s - 1) - 0.5L * b;
  long double fac = 1, k = 0;
  for (int j = 0; j < 12; ++j) {
    fac *= s + k;
    b /= w;
    const long double t = fac * b / kA[j];
    sum += t;
    if (std::fabs(t / sum) < 1e-20L) break;
    k += 1;
    fac *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

}  // namespace

double hurwitz_zeta_value(double s, double q) {
  return static_cast<double>(hurwitz_zeta_ld(s, q));
}

// glibc's cbrt is within ~3 ulp; one Newton step in long double brings it inside 1.
double cbrt_value(double x) {
  const double y = std::cbrt(x);
  if (y == 0 || !std::isfinite(y)) return y;
  const long double ly = y;
  return static_cast<double>(ly - (ly * ly * ly - x) / (3 * ly * ly));
}

}  // namespace pk::cpu::elementwise
