// elementwise_unary.cpp — the unary elementwise primitives: math functions (the special ones from
// elementwise_special.cpp), rounding, bit counts, predicates (out: bool) and the real-valued results of complex
// inputs, with the dense f32 exp fast path.
#include <immintrin.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "cpu_kernels.hpp"
#include "devmath.hpp"
#include "elementwise.hpp"
#include "vec_math.hpp"

namespace pk::cpu::elementwise {
namespace {

// --- unary ops ------------------------------------------------------------------------------------------------------

struct Abs {
  static constexpr int64_t grain = kGrainCheap;
  explicit Abs(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  auto operator()(V x) const {
    if constexpr (std::is_integral_v<V>) {
      if constexpr (std::is_signed_v<V>)
        return x < 0 ? wrap_neg(x) : x;
      else
        return x;
    } else if constexpr (is_complex_v<V>) {
      return devmath_abs(x);
    } else {
      return std::fabs(x);
    }
  }
};

struct Neg {
  static constexpr int64_t grain = kGrainCheap;
  explicit Neg(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  V operator()(V x) const {
    if constexpr (std::is_integral_v<V>)
      return wrap_neg(x);
    else
      return -x;
  }
};

// A float function evaluated in the math type: `real` for real dtypes, `cplx` (optional) for complex ones.
#define PK_FLOAT_FN(NAME, HAS_COMPLEX, REAL_EXPR, COMPLEX_EXPR)                                                 \
  struct NAME {                                                                                                 \
    static constexpr int64_t grain = kGrainCostly;                                                              \
    explicit NAME(const Launch &) {}                                                                            \
    template <class T>                                                                                          \
    static constexpr bool admits = is_float_v<T> || ((HAS_COMPLEX) && is_complex_v<T>);                         \
    template <class V>                                                                                          \
    V operator()(V v) const {                                                                                   \
      using M = math_t<V>;                                                                                      \
      if constexpr (is_complex_v<V>) {                                                                          \
        const M x(v);                                                                                           \
        const M r = COMPLEX_EXPR;                                                                               \
        return V(static_cast<typename V::value_type>(r.real()), static_cast<typename V::value_type>(r.imag())); \
      } else {                                                                                                  \
        const M x = static_cast<M>(v);                                                                          \
        return static_cast<V>(REAL_EXPR);                                                                       \
      }                                                                                                         \
    }                                                                                                           \
  };

// The elementary complex functions are the device math's (sdk/devmath/complex.h), the same source as the OpenCL
// and generated kernels': the parts as doubles (exact for c64), the double result rounded once to the part type by
// the caller. Special values follow C11 Annex G there.
template <class V>
std::complex<double> devmath_complex(void (*fn)(double, double, double *), V v) {
  double r[2];
  fn(static_cast<double>(v.real()), static_cast<double>(v.imag()), r);
  return {r[0], r[1]};
}

// `x` is the argument in the math type, `v` as stored.
PK_FLOAT_FN(Exp, true, std::exp(x), M(devmath_complex(devmath::pk_dm_cexp, v)))
PK_FLOAT_FN(Log, true, std::log(x), M(devmath_complex(devmath::pk_dm_clog, v)))
PK_FLOAT_FN(Sqrt, true, std::sqrt(x), M(devmath_sqrt(v)))
PK_FLOAT_FN(Cos, true, std::cos(x), M(devmath_complex(devmath::pk_dm_ccos, v)))
PK_FLOAT_FN(Sin, true, std::sin(x), M(devmath_complex(devmath::pk_dm_csin, v)))
PK_FLOAT_FN(Tanh, true, std::tanh(x), M(devmath_complex(devmath::pk_dm_ctanh, v)))
PK_FLOAT_FN(Reciprocal, true, 1.0 / x, M(devmath_arith(devmath::pk_dm_cdiv, decltype(v)(1), v)))
PK_FLOAT_FN(Acos, false, std::acos(x), x)
PK_FLOAT_FN(Acosh, false, std::acosh(x), x)
PK_FLOAT_FN(Asin, false, std::asin(x), x)
PK_FLOAT_FN(Asinh, false, std::asinh(x), x)
PK_FLOAT_FN(Atan, false, std::atan(x), x)
PK_FLOAT_FN(Atanh, false, std::atanh(x), x)
PK_FLOAT_FN(Cosh, false, std::cosh(x), x)
PK_FLOAT_FN(Sinh, false, std::sinh(x), x)
PK_FLOAT_FN(Tan, false, std::tan(x), x)
PK_FLOAT_FN(Cbrt, false, cbrt_value(x), x)
PK_FLOAT_FN(Erf, false, std::erf(x), x)
PK_FLOAT_FN(Erfc, false, std::erfc(x), x)
PK_FLOAT_FN(Expm1, false, std::expm1(x), x)
PK_FLOAT_FN(Exp2, false, std::exp2(x), x)
PK_FLOAT_FN(Log1p, false, std::log1p(x), x)
PK_FLOAT_FN(Log2, false, std::log2(x), x)
PK_FLOAT_FN(Log10, false, std::log10(x), x)
PK_FLOAT_FN(Rsqrt, false, 1.0 / std::sqrt(x), x)
PK_FLOAT_FN(Floor, false, std::floor(x), x)
PK_FLOAT_FN(Ceil, false, std::ceil(x), x)
PK_FLOAT_FN(Trunc, false, std::trunc(x), x)

// The special functions (the device math shared with the other backends, sdk/devmath; elementwise_special.cpp).
PK_FLOAT_FN(ErfInv, false, devmath::pk_dm_erf_inv(x), x)
PK_FLOAT_FN(Erfcx, false, devmath::pk_dm_erfcx(x), x)
PK_FLOAT_FN(Lgamma, false, devmath::pk_dm_lgamma(x), x)
PK_FLOAT_FN(Digamma, false, devmath::pk_dm_digamma(x), x)
PK_FLOAT_FN(Ndtri, false, devmath::pk_dm_ndtri(x), x)
PK_FLOAT_FN(BesselI0, false, devmath::pk_dm_bessel_i(0, x, 0), x)
PK_FLOAT_FN(BesselI0e, false, devmath::pk_dm_bessel_i(0, x, 1), x)
PK_FLOAT_FN(BesselI1, false, devmath::pk_dm_bessel_i(1, x, 0), x)
PK_FLOAT_FN(BesselI1e, false, devmath::pk_dm_bessel_i(1, x, 1), x)
PK_FLOAT_FN(BesselJ0, false, devmath::pk_dm_bessel_j(0, x), x)
PK_FLOAT_FN(BesselJ1, false, devmath::pk_dm_bessel_j(1, x), x)
PK_FLOAT_FN(SphericalBesselJ0, false, devmath::pk_dm_spherical_j0(x), x)
#undef PK_FLOAT_FN

struct Round {
  static constexpr int64_t grain = kGrainCheap;
  bool half_to_even;
  explicit Round(const Launch &l) : half_to_even(attrs_of<pk_attrs_round>(l).mode == PK_ROUNDING_HALF_TO_EVEN) {}
  template <class T>
  static constexpr bool admits = is_float_v<T>;
  template <class V>
  V operator()(V x) const {
    return half_to_even ? std::nearbyint(x) : std::round(x);  // nearbyint: the default mode, ties to even
  }
};

struct BitwiseNot {
  static constexpr int64_t grain = kGrainCheap;
  explicit BitwiseNot(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T> || is_bool_v<T>;
  template <class V>
  V operator()(V x) const {
    if constexpr (std::is_same_v<V, bool>)
      return !x;
    else
      return static_cast<V>(~x);
  }
};

struct Sign {
  static constexpr int64_t grain = kGrainCheap;
  explicit Sign(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_real_v<T>;
  template <class V>
  V operator()(V x) const {
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(x) || x == 0) return x;  // keeps NaN and the sign of zero
      return x > 0 ? V(1) : V(-1);
    } else {
      return static_cast<V>(x > 0 ? 1 : (x < 0 ? -1 : 0));
    }
  }
};

struct ConjPhysical {
  static constexpr int64_t grain = kGrainCheap;
  explicit ConjPhysical(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_complex_v<T>;
  template <class V>
  V operator()(V x) const {
    return std::conj(x);
  }
};

struct PopulationCount {
  static constexpr int64_t grain = kGrainCheap;
  explicit PopulationCount(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T>;
  template <class V>
  V operator()(V x) const {
    return static_cast<V>(__builtin_popcountll(static_cast<std::make_unsigned_t<V>>(x)));
  }
};

struct CountLeadingZeros {
  static constexpr int64_t grain = kGrainCheap;
  explicit CountLeadingZeros(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T>;
  template <class V>
  V operator()(V x) const {
    constexpr int bits = 8 * sizeof(V);
    const uint64_t u = static_cast<std::make_unsigned_t<V>>(x);
    return static_cast<V>(u == 0 ? bits : __builtin_clzll(u) - (64 - bits));
  }
};

// Predicates (out: bool).
struct IsFinite {
  explicit IsFinite(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  bool operator()(V x) const {
    if constexpr (std::is_integral_v<V>)
      return true;
    else if constexpr (is_complex_v<V>)
      return std::isfinite(x.real()) && std::isfinite(x.imag());
    else
      return std::isfinite(x);
  }
};
struct IsNan {
  explicit IsNan(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  bool operator()(V x) const {
    if constexpr (std::is_integral_v<V>)
      return false;
    else if constexpr (is_complex_v<V>)
      return std::isnan(x.real()) || std::isnan(x.imag());
    else
      return std::isnan(x);
  }
};
struct IsInf {
  explicit IsInf(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  bool operator()(V x) const {
    if constexpr (std::is_integral_v<V>)
      return false;
    else if constexpr (is_complex_v<V>)
      return std::isinf(x.real()) || std::isinf(x.imag());
    else
      return std::isinf(x);
  }
};
struct Signbit {
  explicit Signbit(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_real_v<T>;
  template <class V>
  bool operator()(V x) const {
    if constexpr (std::is_integral_v<V>) {
      if constexpr (std::is_signed_v<V>)
        return x < 0;
      else
        return false;
    } else {
      return std::signbit(x);
    }
  }
};

struct LogicalNot {
  explicit LogicalNot(const Launch &) {}
  template <class T>
  static constexpr bool admits = true;
  template <class V>
  bool operator()(V x) const {
    return !truth(x);
  }
};

// Real-valued results of complex (or real) inputs.
struct RealPart {
  static constexpr int64_t grain = kGrainCheap;
  explicit RealPart(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_complex_v<T>;
  template <class V>
  auto operator()(V x) const {
    return x.real();
  }
};
struct ImagPart {
  static constexpr int64_t grain = kGrainCheap;
  explicit ImagPart(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_complex_v<T>;
  template <class V>
  auto operator()(V x) const {
    return x.imag();
  }
};
struct Angle {
  static constexpr int64_t grain = kGrainCostly;
  explicit Angle(const Launch &) {}
  template <class T>
  static constexpr bool admits = std::is_floating_point_v<T> || is_complex_v<T>;
  template <class V>
  auto operator()(V x) const {
    if constexpr (std::is_same_v<V, c64>) {
      return static_cast<float>(std::atan2(static_cast<double>(x.imag()), static_cast<double>(x.real())));
    } else if constexpr (std::is_same_v<V, c128>) {
      return std::atan2(x.imag(), x.real());
    } else {
      if (std::isnan(x)) return x;
      return x < 0 ? static_cast<V>(kPi) : V(0);
    }
  }
};

// --- the dense f32 exp fast path
// ----------------------------------------------------------------------------------------

// exp of f32 in double precision, 4 lanes: Cody-Waite reduction x = n ln2 + r (|r| <= ln2/2), a degree-10
// Taylor polynomial (truncation < 2e-13 relative), 2^n added to the exponent bits, one rounding to float. That is
// correctly rounded but for results within ~1e-13 of a tie — libmvec's expf is faster but up to 2.1 ulp off,
// beyond exp's 2-ulp quality bound. Lanes outside [-104, 89] (overflow, underflow past the f32 subnormals) and
// NaN take the scalar path.
// f32 exp, 8 lanes (vec_math.hpp); lanes whose result would be subnormal or overflow, and NaN, take the
// double-precision scalar path.
__attribute__((target("avx2,fma"))) void exp_f32_avx2(const float *a, float *o, int64_t lo, int64_t hi) {
  const __m256 lo_lim = _mm256_set1_ps(-86.0f), hi_lim = _mm256_set1_ps(88.0f);
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    const __m256 xf = _mm256_loadu_ps(a + i);
    // In range and not NaN: lo <= x <= hi (ordered compares are false for NaN).
    const int in_range =
        _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(xf, lo_lim, _CMP_GE_OQ), _mm256_cmp_ps(xf, hi_lim, _CMP_LE_OQ)));
    _mm256_storeu_ps(o + i, exp_ps_in_range(_mm256_min_ps(_mm256_max_ps(xf, lo_lim), hi_lim)));
    if (in_range != 0xff) {
      for (int k = 0; k < 8; ++k) {
        if (!((in_range >> k) & 1)) o[i + k] = static_cast<float>(std::exp(static_cast<double>(a[i + k])));
      }
    }
  }
  for (; i < hi; ++i) o[i] = static_cast<float>(std::exp(static_cast<double>(a[i])));
}

// The same on 16 lanes (exp16_reduced, vec_math.hpp: the same split, polynomial and single rounding), 2^n applied
// by vscalefps. Lanes outside [-86, 88] and NaN take the same scalar path.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx2,fma"))) void exp_f32_avx512(const float *a, float *o, int64_t lo, int64_t hi) {
  const __m512 lo_lim = _mm512_set1_ps(-86.0f), hi_lim = _mm512_set1_ps(88.0f);
  int64_t i = lo;
  for (; i + 16 <= hi; i += 16) {
    const __m512 xf = _mm512_loadu_ps(a + i);
    const __mmask16 in_range =
        _mm512_cmp_ps_mask(xf, lo_lim, _CMP_GE_OQ) & _mm512_cmp_ps_mask(xf, hi_lim, _CMP_LE_OQ);  // NaN: false
    __m512 n;
    const __m512 y = exp16_reduced(_mm512_min_ps(_mm512_max_ps(xf, lo_lim), hi_lim), n);
    _mm512_storeu_ps(o + i, _mm512_scalef_ps(y, n));
    if (in_range != 0xffff) {
      for (int k = 0; k < 16; ++k) {
        if (!((in_range >> k) & 1)) o[i + k] = static_cast<float>(std::exp(static_cast<double>(a[i + k])));
      }
    }
  }
  for (; i < hi; ++i) o[i] = static_cast<float>(std::exp(static_cast<double>(a[i])));
}
#pragma GCC diagnostic pop

pk_status k_exp(const Launch &l) {
  using VecExp = void (*)(const float *, float *, int64_t, int64_t);
  static const VecExp vec_exp = have_isa(Isa::avx512) ? exp_f32_avx512 : have_isa(Isa::avx2) ? exp_f32_avx2 : nullptr;
  const View in = kit::view_of(l.inputs[0]);
  const View out = kit::view_of(l.outputs[0]);
  if (vec_exp && l.inputs[0].dtype.code == PK_DTYPE_CODE_FLOAT && l.inputs[0].dtype.bits == 32 && in.contiguous &&
      out.contiguous) {
    const float *a = at<const float>(in, 0);
    float *o = at<float>(out, 0);
    parallel_for(0, out.numel, int64_t{1} << 15, [&](int64_t lo, int64_t hi) { vec_exp(a, o, lo, hi); });
    return PK_OK;
  }
  return unary<Exp>(l);
}

// --- the dense f32 tanh fast path --------------------------------------------------------------------------------

// f32 tanh in double lanes (vec_math.hpp: tanh8_pd / tanh4_pd, relative error < 1e-11 before the one rounding to
// f32): 16 floats per step on AVX-512, 8 on AVX2. Every f32 input has a lane result (inf, NaN, -0, subnormals), so
// no lane takes a scalar path.
// GCC 12 warns that the AVX-512 intrinsics' own placeholder operand (_mm512_undefined_*) is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx2,fma"))) void tanh_f32_avx512(const float *a, float *o, int64_t lo, int64_t hi) {
  int64_t i = lo;
  for (; i + 16 <= hi; i += 16) {
    const __m512 x = _mm512_loadu_ps(a + i);
    const __m256 y0 = _mm512_cvtpd_ps(tanh8_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(x))));
    const __m256 y1 =
        _mm512_cvtpd_ps(tanh8_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))));
    _mm256_storeu_ps(o + i, y0);
    _mm256_storeu_ps(o + i + 8, y1);
  }
  for (; i < hi; ++i) o[i] = static_cast<float>(std::tanh(static_cast<double>(a[i])));
}
#pragma GCC diagnostic pop

__attribute__((target("avx2,fma"))) void tanh_f32_avx2(const float *a, float *o, int64_t lo, int64_t hi) {
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i);
    _mm_storeu_ps(o + i, _mm256_cvtpd_ps(tanh4_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(x)))));
    _mm_storeu_ps(o + i + 4, _mm256_cvtpd_ps(tanh4_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)))));
  }
  for (; i < hi; ++i) o[i] = static_cast<float>(std::tanh(static_cast<double>(a[i])));
}

pk_status k_tanh(const Launch &l) {
  using VecFn = void (*)(const float *, float *, int64_t, int64_t);
  static const VecFn vec_tanh = have_isa(Isa::avx512) ? tanh_f32_avx512 : have_isa(Isa::avx2) ? tanh_f32_avx2 : nullptr;
  const View in = kit::view_of(l.inputs[0]);
  const View out = kit::view_of(l.outputs[0]);
  if (vec_tanh && l.inputs[0].dtype.code == PK_DTYPE_CODE_FLOAT && l.inputs[0].dtype.bits == 32 && in.contiguous &&
      out.contiguous) {
    const float *a = at<const float>(in, 0);
    float *o = at<float>(out, 0);
    parallel_for(0, out.numel, int64_t{1} << 14, [&](int64_t lo, int64_t hi) { vec_tanh(a, o, lo, hi); });
    return PK_OK;
  }
  return unary<Tanh>(l);
}

}  // namespace

void register_unary_kernels(KernelRegistry &r) {
  auto u = [&](uint32_t op, auto fn, uint32_t mask) { r.add(op, fn, mask); };
  // unary, same dtype
  u(PK_OP_ABS, unary_to_real<Abs>, mask_of<Abs>());
  u(PK_OP_NEG, unary<Neg>, mask_of<Neg>());
  u(PK_OP_EXP, k_exp, mask_of<Exp>());
  u(PK_OP_LOG, unary<Log>, mask_of<Log>());
  u(PK_OP_SQRT, unary<Sqrt>, mask_of<Sqrt>());
  u(PK_OP_FLOOR, unary<Floor>, mask_of<Floor>());
  u(PK_OP_CEIL, unary<Ceil>, mask_of<Ceil>());
  u(PK_OP_TRUNC, unary<Trunc>, mask_of<Trunc>());
  u(PK_OP_ROUND, unary<Round>, mask_of<Round>());
  u(PK_OP_BITWISE_NOT, unary<BitwiseNot>, mask_of<BitwiseNot>());
  u(PK_OP_ACOS, unary<Acos>, mask_of<Acos>());
  u(PK_OP_ACOSH, unary<Acosh>, mask_of<Acosh>());
  u(PK_OP_ASIN, unary<Asin>, mask_of<Asin>());
  u(PK_OP_ASINH, unary<Asinh>, mask_of<Asinh>());
  u(PK_OP_ATAN, unary<Atan>, mask_of<Atan>());
  u(PK_OP_ATANH, unary<Atanh>, mask_of<Atanh>());
  u(PK_OP_COS, unary<Cos>, mask_of<Cos>());
  u(PK_OP_COSH, unary<Cosh>, mask_of<Cosh>());
  u(PK_OP_SIN, unary<Sin>, mask_of<Sin>());
  u(PK_OP_SINH, unary<Sinh>, mask_of<Sinh>());
  u(PK_OP_TAN, unary<Tan>, mask_of<Tan>());
  u(PK_OP_TANH, k_tanh, mask_of<Tanh>());
  u(PK_OP_CBRT, unary<Cbrt>, mask_of<Cbrt>());
  u(PK_OP_ERF, unary<Erf>, mask_of<Erf>());
  u(PK_OP_ERFC, unary<Erfc>, mask_of<Erfc>());
  u(PK_OP_ERF_INV, unary<ErfInv>, mask_of<ErfInv>());
  u(PK_OP_ERFCX, unary<Erfcx>, mask_of<Erfcx>());
  u(PK_OP_EXPM1, unary<Expm1>, mask_of<Expm1>());
  u(PK_OP_EXP2, unary<Exp2>, mask_of<Exp2>());
  u(PK_OP_LOG1P, unary<Log1p>, mask_of<Log1p>());
  u(PK_OP_LOG2, unary<Log2>, mask_of<Log2>());
  u(PK_OP_LOG10, unary<Log10>, mask_of<Log10>());
  u(PK_OP_LGAMMA, unary<Lgamma>, mask_of<Lgamma>());
  u(PK_OP_DIGAMMA, unary<Digamma>, mask_of<Digamma>());
  u(PK_OP_NDTRI, unary<Ndtri>, mask_of<Ndtri>());
  u(PK_OP_RECIPROCAL, unary<Reciprocal>, mask_of<Reciprocal>());
  u(PK_OP_RSQRT, unary<Rsqrt>, mask_of<Rsqrt>());
  u(PK_OP_SIGN, unary<Sign>, mask_of<Sign>());
  u(PK_OP_CONJ_PHYSICAL, unary<ConjPhysical>, mask_of<ConjPhysical>());
  u(PK_OP_BESSEL_I0, unary<BesselI0>, mask_of<BesselI0>());
  u(PK_OP_BESSEL_I0E, unary<BesselI0e>, mask_of<BesselI0e>());
  u(PK_OP_BESSEL_I1, unary<BesselI1>, mask_of<BesselI1>());
  u(PK_OP_BESSEL_I1E, unary<BesselI1e>, mask_of<BesselI1e>());
  u(PK_OP_BESSEL_J0, unary<BesselJ0>, mask_of<BesselJ0>());
  u(PK_OP_BESSEL_J1, unary<BesselJ1>, mask_of<BesselJ1>());
  u(PK_OP_SPHERICAL_BESSEL_J0, unary<SphericalBesselJ0>, mask_of<SphericalBesselJ0>());
  u(PK_OP_POPULATION_COUNT, unary<PopulationCount>, mask_of<PopulationCount>());
  u(PK_OP_COUNT_LEADING_ZEROS, unary<CountLeadingZeros>, mask_of<CountLeadingZeros>());
  // unary, other output dtype
  u(PK_OP_ISFINITE, unary_predicate<IsFinite>, mask_of<IsFinite>());
  u(PK_OP_ISNAN, unary_predicate<IsNan>, mask_of<IsNan>());
  u(PK_OP_ISINF, unary_predicate<IsInf>, mask_of<IsInf>());
  u(PK_OP_SIGNBIT, unary_predicate<Signbit>, mask_of<Signbit>());
  u(PK_OP_LOGICAL_NOT, unary_predicate<LogicalNot>, mask_of<LogicalNot>());
  u(PK_OP_REAL, unary_to_real<RealPart>, mask_of<RealPart>());
  u(PK_OP_IMAG, unary_to_real<ImagPart>, mask_of<ImagPart>());
  u(PK_OP_ANGLE, unary_to_real<Angle>, mask_of<Angle>());
}

}  // namespace pk::cpu::elementwise
