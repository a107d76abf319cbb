// cl_special.cpp — OpenCL C sources of the special functions (see cl_special.hpp). erf_inv, ndtri, erfcx, lgamma,
// digamma, the Bessel functions, the incomplete gamma functions and Hurwitz zeta are the device math's (sdk/devmath),
// whose files this backend embeds as they are, and so is the complex math (complex.h and cpow.h; cl_complex.cpp keeps
// the complex reductions). What is left here: nextafter of the small formats.
#include "cl_special.hpp"

#include <string>

#include "cl_complex.hpp"
// Generated at build time from sdk/devmath (CMakeLists.txt): kDevmathPort, kDevmathDd, kDevmathErf, kDevmathZeta,
// kDevmathDigamma, kDevmathBessel, kDevmathIgammaTemme, kDevmathIgamma, kDevmathComplex, kDevmathCpow,
// kDevmathBignum.
#include "devmath_opencl.inc"

namespace pk::ocl {
namespace {

enum : uint32_t {
  // The device math (sdk/devmath): its files, embedded at build time (devmath_opencl.inc).
  kDmErf = 1u << 3,  // erf_inv, ndtri, erfcx
  kDmPort = 1u << 4,
  kDmDD = 1u << 5,
  kDmDigamma = 1u << 6,
  kDmBessel = 1u << 7,
  kDmIgamma = 1u << 9,
  kDmZeta = 1u << 10,
  kNextSmall = 1u << 11,
  kComplex = 1u << 12,
  kDmComplex = 1u << 13,  // the complex functions (complex.h)
  kDmCpow = 1u << 14,     // complex pow (cpow.h)
  kDmBignum = 1u << 15,   // fixed-point numbers (bignum.h: pow's phase, huge angles' reduction)
};

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
    case PK_OP_LGAMMA:
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
    case PK_OP_LGAMMA:
      call = "pk_dm_lgamma(" + A + ")";
      break;
    case PK_OP_IGAMMA:
    case PK_OP_IGAMMAC:
      call = "pk_dm_igamma(" + A + ", " + d(a[1]) + (op == PK_OP_IGAMMAC ? ", 1)" : ", 0)");
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
    case PK_OP_LGAMMA:
    case PK_OP_IGAMMA:
    case PK_OP_IGAMMAC:
      return kDmIgamma;
    case PK_OP_ZETA:
      return kDmZeta;
    case PK_OP_NEXTAFTER:
      return (t == PK_DTYPE_BF16 || t == PK_DTYPE_F8E4M3FN || t == PK_DTYPE_F8E5M2) ? uint32_t{kNextSmall} : 0u;
    default:
      return 0;
  }
}

std::string special_helpers(uint32_t bits) {
  // Dependencies first.
  if (bits & kComplex) bits |= kDmComplex | kDmCpow;
  if (bits & kDmComplex) bits |= kDmBignum;
  if (bits & kDmIgamma) bits |= kDmErf;  // Temme's expansion of P and Q takes erfcx
  if (bits & (kDmZeta | kDmDigamma | kDmBessel | kDmIgamma | kDmComplex | kDmBignum)) bits |= kDmDD;
  if (bits & (kDmErf | kDmDD)) bits |= kDmPort;
  static const struct {
    uint32_t bit;
    const char *src;
  } kChunks[] = {{kDmPort, kDevmathPort},     {kDmDD, kDevmathDd},
                 {kDmBignum, kDevmathBignum}, {kDmErf, kDevmathErf},
                 {kDmZeta, kDevmathZeta},     {kDmDigamma, kDevmathDigamma},
                 {kDmBessel, kDevmathBessel}, {kDmIgamma, kDevmathIgammaTemme},
                 {kDmIgamma, kDevmathIgamma}, {kDmComplex, kDevmathComplex},
                 {kDmCpow, kDevmathCpow},     {kNextSmall, kSrcNextSmall},
                 {kComplex, complex_source()}};
  std::string s;
  for (const auto &c : kChunks)
    if (bits & c.bit) s += c.src;
  return s;
}

}  // namespace pk::ocl
