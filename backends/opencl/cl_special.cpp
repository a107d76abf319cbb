// cl_special.cpp — OpenCL C sources of the special functions (see cl_special.hpp). erf_inv, ndtri, erfcx, digamma,
// the Bessel functions and Hurwitz zeta are the device math's (sdk/devmath), whose files this backend embeds as they
// are; the others follow the CPU backend's algorithms (backends/cpu/elementwise_special.cpp), where that one leans on
// long double with double-double (fma-based exact products and sums) or a formulation without the cancellation.
#include "cl_special.hpp"

#include <cstdio>
#include <iterator>
#include <string>

#include "primkit/special_constants.hpp"

#include "cl_complex.hpp"
// Generated at build time from sdk/devmath (CMakeLists.txt): kDevmathPort, kDevmathDd, kDevmathErf, kDevmathZeta,
// kDevmathDigamma, kDevmathBessel.
#include "devmath_opencl.inc"

namespace pk::ocl {
namespace {

enum : uint32_t {
  kDD = 1u << 0,
  kLogDD = 1u << 1,
  kLgammaDD = 1u << 2,
  // The device math (sdk/devmath): its files, embedded at build time (devmath_opencl.inc).
  kDmErf = 1u << 3,  // erf_inv, ndtri, erfcx
  kDmPort = 1u << 4,
  kDmDD = 1u << 5,
  kDmDigamma = 1u << 6,
  kDmBessel = 1u << 7,
  kIgamma = 1u << 9,
  kDmZeta = 1u << 10,
  kNextSmall = 1u << 11,
  kComplex = 1u << 12,
};

// Double-double arithmetic: a value is hi + lo with |lo| <= ulp(hi) / 2. The program is built with
// FP_CONTRACT OFF, which these error-free transformations rely on.
const char *kSrcDD = R"CL(
typedef double2 pk_dd;
inline pk_dd pk_two_sum(double a, double b) {
  const double s = a + b, v = s - a;
  return (double2)(s, (a - (s - v)) + (b - v));
}
inline pk_dd pk_fast_sum(double a, double b) { const double s = a + b; return (double2)(s, b - (s - a)); }
inline pk_dd pk_two_prod(double a, double b) { const double p = a * b; return (double2)(p, fma(a, b, -p)); }
inline pk_dd pk_dd_add(pk_dd a, pk_dd b) {
  pk_dd s = pk_two_sum(a.x, b.x);
  const pk_dd t = pk_two_sum(a.y, b.y);
  s = pk_fast_sum(s.x, s.y + t.x);
  return pk_fast_sum(s.x, s.y + t.y);
}
inline pk_dd pk_dd_sub(pk_dd a, pk_dd b) { return pk_dd_add(a, (double2)(-b.x, -b.y)); }
inline pk_dd pk_dd_add_d(pk_dd a, double b) { const pk_dd s = pk_two_sum(a.x, b); return pk_fast_sum(s.x, s.y + a.y); }
inline pk_dd pk_dd_mul(pk_dd a, pk_dd b) {
  const double p = a.x * b.x;
  return pk_fast_sum(p, fma(a.x, b.x, -p) + (a.x * b.y + a.y * b.x));
}
inline pk_dd pk_dd_mul_d(pk_dd a, double b) { const double p = a.x * b; return pk_fast_sum(p, fma(a.x, b, -p) + a.y * b); }
inline pk_dd pk_dd_div_d(pk_dd a, double b) {
  const double q = a.x / b;
  const pk_dd p = pk_two_prod(q, b);
  return pk_fast_sum(q, (((a.x - p.x) - p.y) + a.y) / b);
}
inline pk_dd pk_dd_div(pk_dd a, pk_dd b) {
  const double q1 = a.x / b.x;
  const pk_dd r = pk_dd_sub(a, pk_dd_mul_d(b, q1));
  const double q2 = r.x / b.x;
  const pk_dd r2 = pk_dd_sub(r, pk_dd_mul_d(b, q2));
  return pk_dd_add_d(pk_fast_sum(q1, q2), r2.x / b.x);
}
)CL";

// log(x) of a finite double x > 0 in double-double: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s)
// with s = (m - 1) / (m + 1), |s| < 0.172, whose odd series converges by a factor 0.03 a term.
const char *kSrcLogDD = R"CL(
pk_dd pk_dd_log(double x) {
  int e;
  double m = frexp(x, &e);
  if (m < 0.70710678118654752) { m *= 2.0; --e; }
  const pk_dd s = pk_dd_div((double2)(m - 1.0, 0.0), pk_two_sum(m, 1.0));
  const pk_dd s2 = pk_dd_mul(s, s);
  pk_dd t = (double2)(0.0, 0.0);
  for (int k = 17; k >= 0; --k) {
    const double n = 2 * k + 1, inv = 1.0 / n;
    t = pk_dd_add(pk_dd_mul(t, s2), (double2)(inv, -fma(inv, n, -1.0) / n));
  }
  const pk_dd ln2 = (double2)(0.6931471805599453, 2.3190468138462996e-17);
  return pk_dd_add(pk_dd_mul_d(ln2, (double)e), pk_dd_mul_d(pk_dd_mul(s, t), 2.0));
}
// log of a double-double: log(hi) + log1p(lo / hi), the second to first order.
inline pk_dd pk_dd_log_dd(pk_dd x) { return pk_dd_add_d(pk_dd_log(x.x), x.y / x.x); }
)CL";

// ln Gamma(z) for z > 0 in double-double: the recurrence up to w >= 20, then Stirling's series (its terms past
// 1/(12 w) are below 4e-7 there, so double holds them well enough; 8 terms leave < 1e-21).
const char *kSrcLgammaDD = R"CL(
pk_dd pk_dd_lgamma(pk_dd z) {
  pk_dd prod = (double2)(1.0, 0.0), w = z;
  int shifted = 0;
  while (w.x < 20.0) {
    prod = pk_dd_mul(prod, w);
    w = pk_dd_add_d(w, 1.0);
    shifted = 1;
  }
  pk_dd r = pk_dd_sub(pk_dd_mul(pk_dd_add_d(w, -0.5), pk_dd_log_dd(w)), w);
  r = pk_dd_add(r, (double2)(0.9189385332046728, -3.8782941580672414e-17));  /* log(2 pi) / 2 */
  r = pk_dd_add(r, pk_dd_div((double2)(1.0, 0.0), pk_dd_mul_d(w, 12.0)));
  const double iw = 1.0 / w.x, iw2 = iw * iw;
  r = pk_dd_add_d(r, iw * iw2 * (-1.0 / 360 + iw2 * (1.0 / 1260 + iw2 * (-1.0 / 1680 + iw2 * (1.0 / 1188 +
                       iw2 * (-691.0 / 360360 + iw2 * (1.0 / 156 + iw2 * (-3617.0 / 122400))))))));
  if (shifted) r = pk_dd_sub(r, pk_dd_log_dd(prod));
  return r;
}
)CL";

// Regularized incomplete gamma P(a, x) and Q(a, x): the power series of P and Legendre's continued fraction of Q
// (each chosen where it converges, as the CPU backend chooses). The prefactor x^a e^-x / Gamma(a) goes through its
// logarithm in double-double (a log x and ln Gamma(a) are each hundreds where the result is O(1)); the series and
// the fraction run in double-double too. Q for a < 1 where 1 - P would cancel: Gautschi's form (below).
const char *kSrcIgamma = R"CL(
/* x^a e^-x / Gamma(a + plus1) (plus1: 0 or 1; the second keeps tiny a off the subnormal range) */
double pk_igam_prefactor(double a, double x, int plus1) {
  /* Far out of range (the double-double would meet inf - inf): the sign of a rough exponent decides. */
  double rough = a * log(x) - x - lgamma(a + plus1);
  if (isnan(rough)) rough = a * (log(x) - log(a) + 1.0);  /* inf - inf for huge a: Stirling's leading term */
  if (rough < -800.0) return 0.0;
  if (rough > 800.0) return INFINITY;
  const pk_dd g = pk_dd_lgamma(plus1 ? pk_two_sum(a, 1.0) : (double2)(a, 0.0));
  const pk_dd e = pk_dd_sub(pk_dd_add_d(pk_dd_mul_d(pk_dd_log(x), a), -x), g);
  return exp(e.x) * (1.0 + e.y);
}
double pk_igam_series(double a, double x) {
  const double pre = pk_igam_prefactor(a, x, 1);
  if (pre == 0.0) return 0.0;
  pk_dd r = (double2)(a, 0.0), c = (double2)(1.0, 0.0), ans = (double2)(1.0, 0.0);
  for (int k = 0; k < 10000; ++k) {
    r = pk_dd_add_d(r, 1.0);
    c = pk_dd_mul_d(pk_dd_div(c, r), x);
    ans = pk_dd_add(ans, c);
    if (c.x <= ans.x * 1e-18) break;
  }
  return ans.x * pre;
}
/* Legendre's continued fraction by the modified Lentz method, in double-double: in double its ~30+ rounded
   steps drift by tens of ulps. */
double pk_igamc_fraction(double a, double x) {
  const double pre = pk_igam_prefactor(a, x, 0);
  if (pre == 0.0) return 0.0;
  const double tiny = 1e-300;
  const pk_dd one = (double2)(1.0, 0.0);
  pk_dd b = pk_dd_add_d(pk_two_sum(1.0, -a), x), c = (double2)(1.0 / tiny, 0.0), d = pk_dd_div(one, b), h = d;
  for (int n = 1; n < 10000; ++n) {
    const pk_dd an = pk_dd_mul_d(pk_two_sum((double)n, -a), -(double)n);
    b = pk_dd_add_d(b, 2.0);
    d = pk_dd_add(pk_dd_mul(an, d), b);
    if (fabs(d.x) < tiny) d = (double2)(tiny, 0.0);
    c = pk_dd_add(b, pk_dd_div(an, c));
    if (fabs(c.x) < tiny) c = (double2)(tiny, 0.0);
    d = pk_dd_div(one, d);
    const pk_dd delta = pk_dd_mul(d, c);
    h = pk_dd_mul(h, delta);
    if (fabs(delta.x - 1.0 + delta.y) < 1e-20) break;
  }
  return h.x * pre;
}
/* ln Gamma(1 + a) for |a| <= 0.05: -gamma a + sum_k (-1)^k zeta(k) a^k / k, the leading term in double-double */
pk_dd pk_lgamma1p_small(double a) {
  double sum = 0.0, power = -a;
  for (int k = 2; k <= 13; ++k) {
    power *= -a;
    sum += pk_zeta_2_13[k - 2] * power / k;
  }
  return pk_dd_add_d(pk_dd_mul_d((double2)(pk_euler_gamma[0], pk_euler_gamma[1]), -a), sum);
}
/* Q(a, x) for a < 1 and x <= 1 or x <= a (Gautschi): Q = -expm1(v) - a e^v S with v = a ln x - ln Gamma(1 + a),
   S = sum_{n>=1} (-x)^n / (n! (a + n)); the two terms cancel up to ~4x, so v, S and their product carry
   double-double. */
double pk_igamc_small_a(double a, double x) {
  const pk_dd lg = fabs(a) <= 0.05 ? pk_lgamma1p_small(a) : pk_dd_lgamma(pk_two_sum(1.0, a));
  const pk_dd v = pk_dd_sub(pk_dd_mul_d(pk_dd_log(x), a), lg);
  const double em1 = expm1(v.x) + exp(v.x) * v.y;
  pk_dd term = (double2)(1.0, 0.0), series = (double2)(0.0, 0.0);
  for (int n = 1; n < 200; ++n) {
    term = pk_dd_div_d(pk_dd_mul_d(term, -x), (double)n);
    const pk_dd t = pk_dd_div(term, pk_two_sum(a, (double)n));
    series = pk_dd_add(series, t);
    if (fabs(t.x) <= 1e-20 * fabs(series.x)) break;
  }
  const pk_dd f = pk_dd_mul(pk_dd_mul_d(series, a), pk_two_sum(1.0, em1));
  return pk_dd_add_d((double2)(-f.x, -f.y), -em1).x;
}
double pk_igamma(double a, double x, int upper) {
  if (isnan(a) || isnan(x) || a < 0.0 || x < 0.0) return NAN;
  if (x == 0.0) return upper ? 1.0 : 0.0;
  if (a == 0.0) return upper ? 0.0 : 1.0;
  if (isinf(a)) return isinf(x) ? NAN : (upper ? 1.0 : 0.0);
  if (isinf(x)) return upper ? 0.0 : 1.0;
  if (x > 1.0 && x > a) {
    const double q = pk_igamc_fraction(a, x);
    return upper ? q : 1.0 - q;
  }
  if (!upper) return pk_igam_series(a, x);
  return a < 1.0 ? pk_igamc_small_a(a, x) : 1.0 - pk_igam_series(a, x);
}
)CL";

// nextafter of bf16 / fp8 values (held exactly in float): one step of the storage bits (fmt 0 bf16, 1 e4m3fn,
// 2 e5m2), as the CPU backend does.
const char *kSrcNextSmall = R"CL(
float pk_next_small(float x, float y, int fmt) {
  if (isnan(x) || isnan(y)) return as_float(0x7fc00000u);
  if (x == y) return y;
  uint bits = fmt == 0 ? (uint)pk_f32_to_bf16(x) : fmt == 1 ? (uint)pk_f32_to_e4m3(x) : (uint)pk_f32_to_e5m2(x);
  const uint sign_bit = fmt == 0 ? 0x8000u : 0x80u;
  if (x == 0.0f) bits = y > 0.0f ? 1u : (sign_bit | 1u);
  else bits = ((x < y) == (x > 0.0f)) ? bits + 1u : bits - 1u;
  return fmt == 0 ? pk_bf16_to_f32((ushort)bits) : fmt == 1 ? pk_e4m3_to_f32((uchar)bits) : pk_e5m2_to_f32((uchar)bits);
}
)CL";

}  // namespace

bool special_op(uint32_t op) {
  switch (op) {
    case PK_OP_ERF_INV:
    case PK_OP_ERFCX:
    case PK_OP_DIGAMMA:
    case PK_OP_NDTRI:
    case PK_OP_BESSEL_I0:
    case PK_OP_BESSEL_I0E:
    case PK_OP_BESSEL_I1:
    case PK_OP_BESSEL_I1E:
    case PK_OP_BESSEL_J0:
    case PK_OP_BESSEL_J1:
    case PK_OP_SPHERICAL_BESSEL_J0:
    case PK_OP_IGAMMA:
    case PK_OP_IGAMMAC:
    case PK_OP_ZETA:
      return true;
    default:
      return false;
  }
}

std::string special_expr(uint32_t op, int32_t t, const std::string *a, const std::string &C, const DeviceCaps &caps,
                         std::string *why) {
  auto no = [&](const char *reason) {
    if (why) *why = reason;
    return std::string();
  };
  const bool small = t == PK_DTYPE_BF16 || t == PK_DTYPE_F8E4M3FN || t == PK_DTYPE_F8E5M2;
  if (!(small || t == PK_DTYPE_F32 || t == PK_DTYPE_F64)) return no("defined for floating-point dtypes only");
  if (op == PK_OP_NEXTAFTER) {
    if (!small) return no("nextafter of this dtype is a builtin");
    const char *fmt = t == PK_DTYPE_BF16 ? "0" : t == PK_DTYPE_F8E4M3FN ? "1" : "2";
    return "pk_next_small(" + a[0] + ", " + a[1] + ", " + fmt + ")";
  }
  if (!caps.fp64) return no("special functions are evaluated in double, which needs cl_khr_fp64 (absent here)");
  // f32 and narrower compute in double and round once.
  const bool f64 = t == PK_DTYPE_F64;
  auto d = [&](const std::string &x) { return f64 ? x : "convert_double(" + x + ")"; };
  const std::string A = d(a[0]);
  std::string call;
  switch (op) {
    case PK_OP_ERF_INV:
      call = "pk_dm_erf_inv(" + A + ")";
      break;
    case PK_OP_ERFCX:
      call = "pk_dm_erfcx(" + A + ")";
      break;
    case PK_OP_DIGAMMA:
      call = "pk_dm_digamma(" + A + ")";
      break;
    case PK_OP_NDTRI:
      call = "pk_dm_ndtri(" + A + ")";
      break;
    case PK_OP_BESSEL_I0:
    case PK_OP_BESSEL_I0E:
    case PK_OP_BESSEL_I1:
    case PK_OP_BESSEL_I1E: {
      const bool one = op == PK_OP_BESSEL_I1 || op == PK_OP_BESSEL_I1E;
      const bool scaled = op == PK_OP_BESSEL_I0E || op == PK_OP_BESSEL_I1E;
      call = std::string("pk_dm_bessel_i(") + (one ? "1, " : "0, ") + A + (scaled ? ", 1)" : ", 0)");
      break;
    }
    case PK_OP_BESSEL_J0:
    case PK_OP_BESSEL_J1:
      call = std::string("pk_dm_bessel_j(") + (op == PK_OP_BESSEL_J1 ? "1, " : "0, ") + A + ")";
      break;
    case PK_OP_SPHERICAL_BESSEL_J0:
      call = "pk_dm_spherical_j0(" + A + ")";
      break;
    case PK_OP_IGAMMA:
    case PK_OP_IGAMMAC:
      call = "pk_igamma(" + A + ", " + d(a[1]) + (op == PK_OP_IGAMMAC ? ", 1)" : ", 0)");
      break;
    case PK_OP_ZETA:
      if (small) return no("zeta is defined for f32 and f64");
      call = "pk_dm_zeta(" + A + ", " + d(a[1]) + ")";
      break;
    default:
      return no("not a special function");
  }
  return f64 ? call : "convert_" + C + "(" + call + ")";
}

uint32_t special_helper_bits(uint32_t op, int32_t t) {
  // Complex arithmetic (and complex / polar, which make complex values of real operands) uses the complex helpers.
  if (t == PK_DTYPE_C64 || t == PK_DTYPE_C128 || op == PK_OP_COMPLEX || op == PK_OP_POLAR) return kComplex;
  switch (op) {
    case PK_OP_ERF_INV:
    case PK_OP_NDTRI:
    case PK_OP_ERFCX:
      return kDmErf;
    case PK_OP_DIGAMMA:
      return kDmDigamma;
    case PK_OP_BESSEL_I0:
    case PK_OP_BESSEL_I0E:
    case PK_OP_BESSEL_I1:
    case PK_OP_BESSEL_I1E:
    case PK_OP_BESSEL_J0:
    case PK_OP_BESSEL_J1:
    case PK_OP_SPHERICAL_BESSEL_J0:
      return kDmBessel;
    case PK_OP_IGAMMA:
    case PK_OP_IGAMMAC:
      return kIgamma;
    case PK_OP_ZETA:
      return kDmZeta;
    case PK_OP_NEXTAFTER:
      return (t == PK_DTYPE_BF16 || t == PK_DTYPE_F8E4M3FN || t == PK_DTYPE_F8E5M2) ? uint32_t{kNextSmall} : 0u;
    default:
      return 0;
  }
}

// The SDK's special_constants.hpp tables as OpenCL C constants: `__constant double name[n] = {...};` (%.17g gives
// every double back exactly).
template <class Doubles>
std::string constant_table(const char *name, const Doubles &values) {
  std::string s = std::string("__constant double ") + name + "[" + std::to_string(std::size(values)) + "] = {";
  char num[32];
  for (double c : values) {
    std::snprintf(num, sizeof num, "%.17g,", c);
    s += num;
  }
  return s + "};\n";
}

// The same for 32-bit words: `__constant uint name[n] = {...};`.
template <class Words>
std::string constant_words(const char *name, const Words &values) {
  std::string s = std::string("__constant uint ") + name + "[" + std::to_string(std::size(values)) + "] = {";
  char num[16];
  for (auto w : values) {
    std::snprintf(num, sizeof num, "0x%08xu,", static_cast<unsigned>(w));
    s += num;
  }
  return s + "};\n";
}

// Complex pow's fixed-point constants.
std::string complex_tables() {
  namespace sp = pk::kit::special;
  return constant_words("pk_bn_ln2", sp::kLn2Fraction) + constant_words("pk_bn_pi_4", sp::kPiOver4Fraction) +
         constant_words("pk_bn_inv_2pi", sp::kInvTwoPiFraction);
}

// The incomplete gamma functions' zeta(k) table and Euler's gamma.
std::string igamma_tables() {
  namespace sp = pk::kit::special;
  const double euler_gamma[2] = {sp::kEulerGammaHi, sp::kEulerGammaLo};
  return constant_table("pk_zeta_2_13", sp::kZetaAtIntegers2To13) + constant_table("pk_euler_gamma", euler_gamma);
}

std::string special_helpers(uint32_t bits) {
  // Dependencies first.
  if (bits & (kDmZeta | kDmDigamma | kDmBessel)) bits |= kDmDD;
  if (bits & (kDmErf | kDmDD)) bits |= kDmPort;
  if (bits & kIgamma) bits |= kLgammaDD;
  if (bits & kLgammaDD) bits |= kLogDD;
  if (bits & kComplex) bits |= kLogDD;
  if (bits & kLogDD) bits |= kDD;
  static const struct {
    uint32_t bit;
    const char *src;
  } kChunks[] = {{kDD, kSrcDD},
                 {kLogDD, kSrcLogDD},
                 {kLgammaDD, kSrcLgammaDD},
                 {kDmPort, kDevmathPort},
                 {kDmDD, kDevmathDd},
                 {kDmErf, kDevmathErf},
                 {kIgamma, kSrcIgamma},
                 {kDmZeta, kDevmathZeta},
                 {kDmDigamma, kDevmathDigamma},
                 {kDmBessel, kDevmathBessel},
                 {kNextSmall, kSrcNextSmall},
                 {kComplex, complex_source()}};
  std::string s;
  for (const auto &c : kChunks) {
    if (bits & c.bit) {
      if (c.bit == kIgamma) s += igamma_tables();
      if (c.bit == kComplex) s += complex_tables();
      s += c.src;
    }
  }
  return s;
}

}  // namespace pk::ocl
