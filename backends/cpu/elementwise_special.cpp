// elementwise_special.cpp — the special functions of the elementwise kernels that glibc lacks or does not round
// well enough (lgamma, digamma, modified Bessel, incomplete gamma, cbrt), in double, long double or binary128:
// used by the unary ops (lgamma ... cbrt) and the binary ones (igamma, igammac). erf_inv, ndtri, erfcx and
// Hurwitz zeta are the device math's (sdk/devmath), shared with the other backends.
#include <quadmath.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "elementwise.hpp"

namespace pk::cpu::elementwise {

// --- special functions (double unless said) -------------------------------------------------------------------------

double lgamma_value(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);  // the re-entrant form: lgamma writes the global signgam
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

// glibc's cbrt is within ~3 ulp; one Newton step in long double brings it inside 1.
double cbrt_value(double x) {
  const double y = std::cbrt(x);
  if (y == 0 || !std::isfinite(y)) return y;
  const long double ly = y;
  return static_cast<double>(ly - (ly * ly * ly - x) / (3 * ly * ly));
}

}  // namespace pk::cpu::elementwise
