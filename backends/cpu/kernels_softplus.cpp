// kernels_softplus.cpp — a native kernel for softplus(x; beta, threshold), for f16, bf16, f32 and f64.
// Without it the runtime runs the row's decomposition
//   bx = x * beta; soft = log1p(exp(bx)) / beta; out = where(bx > threshold, x, soft)
// as six launches with full-size temporaries.
//
// Semantics kept from the decomposition: beta and threshold are filled into the computing dtype (f32 for f16, bf16
// and f32 by the row's f32 opmath, f64 for f64), and the switch compares bx rounded to that dtype with the rounded
// threshold, so which elements pass x through is exactly the decomposition's. The other elements get
// softplus(t) / beta for the exact t = x * beta, computed wide (double for f32 and narrower: x * beta of two floats
// is exact in double; long double for f64) and rounded once. The formulation
//   softplus(t) = max(t, 0) + log1p(exp(-|t|))
// never cancels and never overflows, so both tails keep their relative accuracy: for t far below 0 the result is
// about e^t, which in f32 reaches the subnormals at x = -87.3 and must not flush (the row's scale is `none`).
// Special values follow the decomposition's IEEE arithmetic: NaN stays NaN, x = -inf gives 0 (-0 for beta < 0),
// beta rounded to 0 gives ln2 / 0 = +-inf, +inf is passed through by the switch (or gives +inf when the threshold
// is +inf or NaN).
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cpu_kernels.hpp"
#include "vec_math.hpp"

namespace pk::cpu {
namespace {

using kit::View;
using kit::walk;

// beta and threshold as the f32 program fills them (round to nearest), for f32 and the narrow floats.
struct Params32 {
  float beta, threshold;
};

// log1p(e) for e in [0, 1] is 2 atanh(s), s = e / (2 + e) in [0, 1/3]: 2 s sum s^(2k) / (2k + 1). Eleven terms
// truncate at (1/9)^11 / 23 < 1.5e-12 relative; s costs one division but no cancellation, so with e^-|t| accurate
// to 1e-11 the sum is accurate to about 1.2e-11, far below the f32 rounding that follows.
constexpr int kAtanhTerms = 11;
constexpr double kAtanhTaylor[kAtanhTerms] = {1.0,      1.0 / 3,  1.0 / 5,  1.0 / 7,  1.0 / 9, 1.0 / 11,
                                              1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21};

// The scalar formula, in C = double (f32 and narrower) or long double (f64). t > 0 ? t : 0 keeps NaN a NaN.
template <class C>
inline C softplus_wide(C t) {
  return (t > 0 ? t : C(0)) + std::log1p(std::exp(-std::fabs(t)));
}

// One f32 (or narrow, widened) element: the decomposition's switch in f32, the value in double.
inline float softplus_f32(float x, const Params32 &p) {
  if (x * p.beta > p.threshold) return x;
  const double b = p.beta;
  return static_cast<float>(softplus_wide<double>(static_cast<double>(x) * b) / b);
}

// --- AVX2: 8 floats as two groups of 4 double lanes --------------------------------------------------------------

// softplus(t) for 4 doubles: e = e^-|t| by exp4_pd (relative error < 1e-14; 0 below -708, where an f32 result
// divided by any f32 beta is 0 anyway), then the atanh series. max_pd(0, t) returns t when t is NaN.
__attribute__((target("avx2,fma"))) inline __m256d softplus4_pd(__m256d t) {
  const __m256d a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), t);
  const __m256d e = exp4_pd(_mm256_sub_pd(_mm256_setzero_pd(), a));
  const __m256d s = _mm256_div_pd(e, _mm256_add_pd(_mm256_set1_pd(2.0), e)), s2 = _mm256_mul_pd(s, s);
  __m256d q = _mm256_set1_pd(kAtanhTaylor[kAtanhTerms - 1]);
  for (int k = kAtanhTerms - 2; k >= 0; --k) q = _mm256_fmadd_pd(q, s2, _mm256_set1_pd(kAtanhTaylor[k]));
  return _mm256_fmadd_pd(_mm256_add_pd(s, s), q, _mm256_max_pd(_mm256_setzero_pd(), t));
}

// t = x beta is exact (two 24-bit significands); / beta is * (1 / beta) in double, two roundings of 2^-53 that the
// f32 rounding after them cannot see (1 / beta is finite and normal for every nonzero f32 beta; beta = +-0 gives
// ln2 * +-inf = +-inf, as ln2 / +-0).
template <bool kUnitBeta>
__attribute__((target("avx2,fma"))) inline __m128 softplus4_ps(__m128 x, __m256d b, __m256d rb) {
  __m256d t = _mm256_cvtps_pd(x);
  if constexpr (!kUnitBeta) t = _mm256_mul_pd(t, b);
  __m256d y = softplus4_pd(t);
  if constexpr (!kUnitBeta) y = _mm256_mul_pd(y, rb);
  return _mm256_cvtpd_ps(y);
}

template <bool kUnitBeta>
__attribute__((target("avx2,fma"))) void softplus_f32_avx2(const float *x, float *o, int64_t lo, int64_t hi,
                                                           const Params32 &p, bool stream) {
  const __m256d b = _mm256_set1_pd(p.beta), rb = _mm256_set1_pd(1.0 / p.beta);
  const __m256 bf = _mm256_set1_ps(p.beta), th = _mm256_set1_ps(p.threshold);
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 bx = kUnitBeta ? v : _mm256_mul_ps(v, bf);
    const __m256 pass = _mm256_cmp_ps(bx, th, _CMP_GT_OQ);
    const __m128 y0 = softplus4_ps<kUnitBeta>(_mm256_castps256_ps128(v), b, rb);
    const __m128 y1 = softplus4_ps<kUnitBeta>(_mm256_extractf128_ps(v, 1), b, rb);
    const __m256 y = _mm256_blendv_ps(_mm256_set_m128(y1, y0), v, pass);
    store4(o + i, _mm256_castps256_ps128(y), stream);
    store4(o + i + 4, _mm256_extractf128_ps(y, 1), stream);
  }
  for (; i < hi; ++i) o[i] = softplus_f32(x[i], p);
  if (stream) _mm_sfence();
}

// --- AVX-512: 16 floats as two groups of 8 double lanes ----------------------------------------------------------

// GCC 12 warns that the AVX-512 intrinsics' own placeholder operand (_mm512_undefined_*) is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// softplus4_pd on 8 doubles; e^-|t| by exp8_nonpos_pd (relative error < 1e-11, subnormal or 0 far below).
__attribute__((target("avx512f,avx2,fma"))) inline __m512d softplus8_pd(__m512d t) {
  const __m512d e = exp8_nonpos_pd(_mm512_sub_pd(_mm512_setzero_pd(), _mm512_abs_pd(t)));
  const __m512d s = _mm512_div_pd(e, _mm512_add_pd(_mm512_set1_pd(2.0), e)), s2 = _mm512_mul_pd(s, s);
  // Estrin-like split of the series in s2 into even and odd halves: two shorter dependency chains.
  const __m512d s4 = _mm512_mul_pd(s2, s2);
  __m512d qe = _mm512_set1_pd(kAtanhTaylor[10]), qo = _mm512_set1_pd(kAtanhTaylor[9]);
  for (int k = 8; k >= 0; k -= 2) qe = _mm512_fmadd_pd(qe, s4, _mm512_set1_pd(kAtanhTaylor[k]));
  for (int k = 7; k >= 1; k -= 2) qo = _mm512_fmadd_pd(qo, s4, _mm512_set1_pd(kAtanhTaylor[k]));
  const __m512d q = _mm512_fmadd_pd(qo, s2, qe);
  return _mm512_fmadd_pd(_mm512_add_pd(s, s), q, _mm512_max_pd(_mm512_setzero_pd(), t));  // NaN t stays NaN
}

template <bool kUnitBeta>
__attribute__((target("avx512f,avx2,fma"))) inline __m256 softplus8_ps(__m256 x, __m512d b, __m512d rb) {
  __m512d t = _mm512_cvtps_pd(x);
  if constexpr (!kUnitBeta) t = _mm512_mul_pd(t, b);
  __m512d y = softplus8_pd(t);
  if constexpr (!kUnitBeta) y = _mm512_mul_pd(y, rb);
  return _mm512_cvtpd_ps(y);
}

template <bool kUnitBeta>
__attribute__((target("avx512f,avx2,fma"))) inline __m512 softplus16(__m512 v, __m512d b, __m512d rb, __m512 bf,
                                                                     __m512 th) {
  const __m512 bx = kUnitBeta ? v : _mm512_mul_ps(v, bf);
  const __mmask16 pass = _mm512_cmp_ps_mask(bx, th, _CMP_GT_OQ);
  const __m256 y0 = softplus8_ps<kUnitBeta>(_mm512_castps512_ps256(v), b, rb);
  const __m256 y1 = softplus8_ps<kUnitBeta>(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)), b, rb);
  const __m512 y =
      _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(y0)), _mm256_castps_pd(y1), 1));
  return _mm512_mask_mov_ps(y, pass, v);
}

template <bool kUnitBeta>
__attribute__((target("avx512f,avx2,fma"))) void softplus_f32_avx512(const float *x, float *o, int64_t lo, int64_t hi,
                                                                     const Params32 &p, bool stream) {
  const __m512d b = _mm512_set1_pd(p.beta), rb = _mm512_set1_pd(1.0 / p.beta);
  const __m512 bf = _mm512_set1_ps(p.beta), th = _mm512_set1_ps(p.threshold);
  int64_t i = lo;
  for (; i + 16 <= hi; i += 16) store16(o + i, softplus16<kUnitBeta>(_mm512_loadu_ps(x + i), b, rb, bf, th), stream);
  if (i < hi) {
    const __mmask16 m = static_cast<__mmask16>((1u << (hi - i)) - 1);
    _mm512_mask_storeu_ps(o + i, m, softplus16<kUnitBeta>(_mm512_maskz_loadu_ps(m, x + i), b, rb, bf, th));
  }
  if (stream) _mm_sfence();
}

#pragma GCC diagnostic pop

// Dense f32 elements [lo, hi): the widest path the ISA cap allows, the scalar formula elsewhere. beta = 1 (the
// default) skips the multiply and the division, which would change nothing.
void softplus_f32_range(const float *x, float *o, int64_t lo, int64_t hi, const Params32 &p, bool stream) {
  const bool unit = p.beta == 1.0f;
  if (have_isa(Isa::avx512)) {
    unit ? softplus_f32_avx512<true>(x, o, lo, hi, p, stream) : softplus_f32_avx512<false>(x, o, lo, hi, p, stream);
  } else if (have_isa(Isa::avx2)) {
    unit ? softplus_f32_avx2<true>(x, o, lo, hi, p, stream) : softplus_f32_avx2<false>(x, o, lo, hi, p, stream);
  } else {
    for (int64_t i = lo; i < hi; ++i) o[i] = softplus_f32(x[i], p);
  }
}

// f64: the switch on bx rounded to f64, the value in long double. t = x * beta in long double carries a relative
// error of 2^-64, which e^t magnifies by |t| <= 745 where the result is not 0: below 0.35 f64 ulp.
inline double softplus_f64(double x, double beta, double threshold) {
  if (x * beta > threshold) return x;
  const long double b = beta;
  return static_cast<double>(softplus_wide<long double>(static_cast<long double>(x) * b) / b);
}

pk_status k_softplus(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    if (in.numel == 0) return PK_OK;
    const pk_attrs_softplus &a = attrs_of<pk_attrs_softplus>(l);
    const Params32 p{static_cast<float>(a.beta), static_cast<float>(a.threshold)};
    const bool dense = in.contiguous && out.contiguous;
    return dispatch_std_float(l.inputs[0], [&](auto tag) -> pk_status {
      using T = decltype(tag);
      constexpr int64_t kGrain = int64_t{1} << 14;
      const auto one = [&](T v) -> T {
        if constexpr (std::is_same_v<T, double>) {
          return softplus_f64(v, a.beta, a.threshold);
        } else {
          return kit::store_as<T>(softplus_f32(kit::load(v), p));
        }
      };
      if (dense) {
        const T *x = in.at<T>(0);
        T *y = out.at<T>(0);
        if constexpr (std::is_same_v<T, float>) {
          const bool stream = in.numel * 4 >= kStreamingBytes;
          parallel_for(0, in.numel, kGrain,
                       [&](int64_t lo, int64_t hi) { softplus_f32_range(x, y, lo, hi, p, stream); });
        } else if constexpr (std::is_same_v<T, double>) {
          parallel_for(0, in.numel, kGrain, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) y[i] = one(x[i]);
          });
        } else {
          // f16 and bf16: widened to f32 exactly (the program's first convert), the f32 path, then rounded to T.
          // Rounding the f32 result again adds at most 2^-13 ulp of T to the half ulp.
          parallel_for(0, in.numel, kGrain, [&](int64_t lo, int64_t hi) {
            constexpr int64_t kBlock = 512;
            float buf[kBlock], res[kBlock];
            for (int64_t b = lo; b < hi; b += kBlock) {
              const int64_t n = hi - b < kBlock ? hi - b : kBlock;
              for (int64_t i = 0; i < n; ++i) buf[i] = kit::load(x[b + i]);
              softplus_f32_range(buf, res, 0, n, p, false);
              for (int64_t i = 0; i < n; ++i) y[b + i] = kit::store_as<T>(res[i]);
            }
          });
        }
        return PK_OK;
      }
      parallel_for(0, in.numel, kGrain, [&](int64_t lo, int64_t hi) {
        walk<2>(in.shape, in.ndim, {in.strides, out.strides}, {0, 0}, lo, hi,
                [&](const std::array<int64_t, 2> &o) { *out.at<T>(o[1]) = one(*in.at<T>(o[0])); });
      });
      return PK_OK;
    });
  });
}

}  // namespace

void register_softplus_kernels(KernelRegistry &r) {
  r.add(PK_OP_SOFTPLUS, k_softplus, kFloatStd);
}

}  // namespace pk::cpu
