// elementwise_special.cpp — the special functions of the elementwise kernels that glibc lacks or does not round
// well enough (lgamma, incomplete gamma, cbrt), in double or long double: used by the unary ops lgamma and cbrt and
// the binary ones igamma and igammac. erf_inv, ndtri, erfcx, digamma, the Bessel functions and Hurwitz zeta are
// the device math's (sdk/devmath), shared with the other backends.
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
