// vec_math.hpp — AVX2 and AVX-512 vector math shared by the CPU kernel files (compiled only into functions that
// carry __attribute__((target("avx2,fma"))) or target("avx512f,avx2,fma"); callers check have_isa first).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "primkit/backend_kit.hpp"

namespace pk::cpu {

// e^x = 2^n e^r for 8 floats: returns e^r, rounded once, and n (a whole number, as float). A Cody-Waite split
// (n ln2_hi exact for |n| < 2^15, |r| <= ln2/2), e^r - 1 - r by its Taylor polynomial to r^7 (truncation <= 5e-9
// relative), 1 + (r + r^2 P) rounded once. Accurate for |x| <= 88: ln2_lo's own rounding grows with n.
__attribute__((target("avx2,fma"))) inline __m256 exp_ps_reduced(__m256 x, __m256 &n) {
  n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2_hi has 9 significant bits: n * ln2_hi is exact for |n| < 2^15.
  const __m256 r =
      _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x));
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  return _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r));
}

// e^x for 8 floats with x in [-86, 88] (callers clamp or route other lanes elsewhere, so 2^n stays a normal
// float): e^r from exp_ps_reduced, 2^n added to its exponent bits. Measured error <= 1 ulp
// (tests/cpu/test_cpu_elementwise.cpp sweeps the range).
__attribute__((target("avx2,fma"))) inline __m256 exp_ps_in_range(__m256 x) {
  __m256 n;
  const __m256 y = exp_ps_reduced(x, n);
  const __m256i scale = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), scale));
}

// e^x * 2^-k for 8 floats with |x| <= 88, where `k_bits` is k << 23 and the caller keeps n - k within
// [-125, 126] (so the result is a normal float whatever n alone is). Same error as exp_ps_in_range: the power
// of two is exact.
__attribute__((target("avx2,fma"))) inline __m256 exp_ps_scaled(__m256 x, __m256i k_bits) {
  __m256 n;
  const __m256 y = exp_ps_reduced(x, n);
  const __m256i scale = _mm256_sub_epi32(_mm256_slli_epi32(_mm256_cvtps_epi32(n), 23), k_bits);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), scale));
}

// Outputs at least this large are written with non-temporal stores (see kit::kStreamingStoreBytes); for a
// row-wise op like softmax a regular store is half again the traffic of reading its input.
constexpr int64_t kStreamingBytes = pk::kit::kStreamingStoreBytes;

// Stores 4 floats, bypassing the caches when `stream` and p is 16-byte aligned. A chunk of work that streamed
// must end with _mm_sfence() before it counts as done (non-temporal stores are weakly ordered).
__attribute__((target("avx2,fma"))) inline void store4(float *p, __m128 v, bool stream) {
  if (stream && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
    _mm_stream_ps(p, v);
  } else {
    _mm_storeu_ps(p, v);
  }
}

// Eight floats, streamed past the caches when asked and p is 32-byte aligned.
__attribute__((target("avx2,fma"))) inline void store8(float *p, __m256 v, bool stream) {
  if (stream && (reinterpret_cast<uintptr_t>(p) & 31) == 0) {
    _mm256_stream_ps(p, v);
  } else {
    _mm256_storeu_ps(p, v);
  }
}

// --- double lanes: exp and erfc for f32 kernels that compute in double ------------------------------------------

// Taylor coefficients 1/k! of e^r, k = 0..11, and the Cody-Waite split of ln 2 (fdlibm's: ln2_hi has 32 significant
// bits, so n ln2_hi is exact for |n| < 2^21).
constexpr double kExpTaylor[12] = {1.0,       1.0,        1.0 / 2,     1.0 / 6,      1.0 / 24,      1.0 / 120,
                                   1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800};
constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;

// erfcx(a) = e^(a^2) erfc(a) on [0, 12] as a polynomial of degree 14 in u = (1.5 a - 3) / (a + 3) (u in [-1, 1]):
// interpolation at the Chebyshev nodes of u, computed with mpmath at 50 digits. Max relative error of the
// polynomial, in double arithmetic, 5.2e-12 over [0, 12] (measured against mpmath on 200,000 points; the cpu.isa_avx2
// run of tests/cpu/test_cpu_nn.cpp sweeps the f32 gelu built on it against erfcl).
constexpr double kErfcxPoly[15] = {0.25539567631050575,     -0.35598820617145455,    0.22714955814007204,
                                   -0.11153315570168336,    0.040285740400030717,    -0.0093879662748785116,
                                   0.00068212036390962534,  0.0003485593119283895,   -9.2803178695120427e-05,
                                   -1.2789856891809164e-05, 7.3543893301794629e-06,  7.2141932729167061e-07,
                                   -5.7176998830079268e-07, -5.2219298668276545e-08, 3.5852438585453579e-08};
constexpr double kErfcxMax = 12.0;

// e^x for 4 doubles: n = round(x / ln2), r = x - n ln2 (|r| <= ln2/2), e^r by its Taylor polynomial to r^11
// (truncation < 7e-15 relative), 2^n added to the exponent bits. Relative error < 1e-14 for x in [-708, 709];
// below -708 the result is 0, above 709 it is e^709; NaN gives NaN.
__attribute__((target("avx2,fma"))) inline __m256d exp4_pd(__m256d x) {
  const __m256d lo = _mm256_set1_pd(-708.0);
  const __m256d under = _mm256_cmp_pd(x, lo, _CMP_LT_OQ);
  x = _mm256_min_pd(_mm256_set1_pd(709.0), _mm256_max_pd(lo, x));  // NaN stays NaN (max/min return operand 2)
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634074)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(kLn2Lo), _mm256_fnmadd_pd(n, _mm256_set1_pd(kLn2Hi), x));
  __m256d p = _mm256_set1_pd(kExpTaylor[11]);
  for (int k = 10; k >= 0; --k) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kExpTaylor[k]));
  const __m256i scale = _mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n)), 52);
  return _mm256_andnot_pd(under, _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(p), scale)));
}

// erfc(w) for 4 doubles, for any w: e^(-a^2) erfcx(a) with a = |w| (kErfcxPoly), 2 - that for w < 0.
// Relative error < 1e-11 for w <= 12 (erfc(12) = 1.4e-64), which covers every w whose erfc matters to an f32
// result: above 12 the value (erfcx frozen at 12) is off by a factor below w / 12, an absolute error under
// 1.4e-64. erfc(+inf) = 0, erfc(-inf) = 2, NaN gives NaN.
__attribute__((target("avx2,fma"))) inline __m256d erfc4_pd(__m256d w) {
  const __m256d a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), w);
  const __m256d ac = _mm256_min_pd(_mm256_set1_pd(kErfcxMax), a);  // NaN stays NaN
  const __m256d u = _mm256_div_pd(_mm256_fmsub_pd(ac, _mm256_set1_pd(1.5), _mm256_set1_pd(3.0)),
                                  _mm256_add_pd(ac, _mm256_set1_pd(3.0)));
  __m256d q = _mm256_set1_pd(kErfcxPoly[14]);
  for (int k = 13; k >= 0; --k) q = _mm256_fmadd_pd(q, u, _mm256_set1_pd(kErfcxPoly[k]));
  const __m256d y = _mm256_mul_pd(exp4_pd(_mm256_sub_pd(_mm256_setzero_pd(), _mm256_mul_pd(a, a))), q);
  const __m256d neg = _mm256_cmp_pd(w, _mm256_setzero_pd(), _CMP_LT_OQ);
  return _mm256_blendv_pd(y, _mm256_sub_pd(_mm256_set1_pd(2.0), y), neg);
}

// Taylor coefficients of tanh(a) / a in s = a^2 (mpmath, 40 digits): with these twelve, |a| < 1/2 is truncated at
// 9.3e-13 relative (the series' terms shrink by (2a / pi)^2 <= 0.1 each).
constexpr double kTanhTaylor[12] = {1.0,
                                    -0.3333333333333333,
                                    0.13333333333333333,
                                    -0.05396825396825397,
                                    0.021869488536155203,
                                    -0.008863235529902197,
                                    0.003592128036572481,
                                    -0.0014558343870513183,
                                    0.000590027440945586,
                                    -0.00023912911424355248,
                                    9.691537956929451e-05,
                                    -3.927832388331683e-05};
constexpr double kTanhSeriesMax = 0.5;

// tanh(x) for 4 doubles, for an f32 kernel: a = |x|; below 1/2 the series above, else (1 - t) / (1 + t) with
// t = e^(-2a) <= e^-1 (exp4_pd, relative error < 1e-14; 1 - t >= 0.63 loses nothing). Relative error < 1e-12, so an
// f32 result rounded from it is correctly rounded but within 1e-12 of a tie. The sign is x's (tanh(-0) = -0); inf
// gives 1, NaN gives NaN.
__attribute__((target("avx2,fma"))) inline __m256d tanh4_pd(__m256d x) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d a = _mm256_andnot_pd(sign, x), s = _mm256_mul_pd(a, a);
  __m256d q = _mm256_set1_pd(kTanhTaylor[11]);
  for (int k = 10; k >= 0; --k) q = _mm256_fmadd_pd(q, s, _mm256_set1_pd(kTanhTaylor[k]));
  const __m256d series = _mm256_mul_pd(a, q);
  const __m256d t = exp4_pd(_mm256_mul_pd(a, _mm256_set1_pd(-2.0)));
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d big = _mm256_div_pd(_mm256_sub_pd(one, t), _mm256_add_pd(one, t));
  const __m256d y = _mm256_blendv_pd(series, big, _mm256_cmp_pd(a, _mm256_set1_pd(kTanhSeriesMax), _CMP_GE_OQ));
  const __m256d r = _mm256_or_pd(y, _mm256_and_pd(sign, x));
  return _mm256_blendv_pd(r, x, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));  // NaN stays x
}

// --- AVX-512: the same arithmetic on 16 lanes ----------------------------------------------------------------

// GCC 12 warns that the AVX-512 intrinsics' own placeholder operand (_mm512_undefined_*) is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// exp_ps_reduced on 16 floats: the same split, polynomial and single rounding.
__attribute__((target("avx512f,avx2,fma"))) inline __m512 exp16_reduced(__m512 x, __m512 &n) {
  n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r =
      _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x));
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  return _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r));
}

// exp_ps_scaled on 16 floats (same contract: |x| <= 88, n - k within [-125, 126]).
__attribute__((target("avx512f,avx2,fma"))) inline __m512 exp16_scaled(__m512 x, __m512i k_bits) {
  __m512 n;
  const __m512 y = exp16_reduced(x, n);
  const __m512i scale = _mm512_sub_epi32(_mm512_slli_epi32(_mm512_cvtps_epi32(n), 23), k_bits);
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(y), scale));
}

// e^x for 8 doubles x <= 0 (x = -inf gives 0), for kernels that need it to well below an f32 ulp: n = round(x / ln2),
// r = x - n ln2 (|r| <= ln2/2; x clamped at -16384, so n ln2_hi is exact), e^r by its Taylor polynomial to r^9
// (truncation < 7e-12 relative), evaluated by Estrin's scheme (a short dependency chain), 2^n applied by vscalefpd, so
// results below the normal range are subnormal or 0 as they should be. Relative error < 1e-11 where the result is
// normal.
__attribute__((target("avx512f,avx2,fma"))) inline __m512d exp8_nonpos_pd(__m512d x) {
  x = _mm512_max_pd(_mm512_set1_pd(-16384.0), x);  // NaN stays NaN (operand 2)
  const __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634074)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(kLn2Lo), _mm512_fnmadd_pd(n, _mm512_set1_pd(kLn2Hi), x));
  const __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2);
  __m512d pk[5];
  for (int k = 0; k < 5; ++k)
    pk[k] = _mm512_fmadd_pd(r, _mm512_set1_pd(kExpTaylor[2 * k + 1]), _mm512_set1_pd(kExpTaylor[2 * k]));
  const __m512d p01 = pk[0], p23 = pk[1], p45 = pk[2], p67 = pk[3], p89 = pk[4];
  const __m512d lo = _mm512_fmadd_pd(r2, p23, p01), hi = _mm512_fmadd_pd(r2, p67, p45);
  const __m512d p = _mm512_fmadd_pd(r4, _mm512_fmadd_pd(r4, p89, hi), lo);
  return _mm512_scalef_pd(p, n);
}

// tanh4_pd on 8 doubles (the same series and formula; e^(-2a) from exp8_nonpos_pd, relative error < 1e-11, so
// the result's is below 1e-11).
__attribute__((target("avx512f,avx2,fma"))) inline __m512d tanh8_pd(__m512d x) {
  const __m512d a = _mm512_abs_pd(x), s = _mm512_mul_pd(a, a);
  __m512d q = _mm512_set1_pd(kTanhTaylor[11]);
  for (int k = 10; k >= 0; --k) q = _mm512_fmadd_pd(q, s, _mm512_set1_pd(kTanhTaylor[k]));
  const __m512d series = _mm512_mul_pd(a, q);
  const __m512d t = exp8_nonpos_pd(_mm512_mul_pd(a, _mm512_set1_pd(-2.0)));
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d big = _mm512_div_pd(_mm512_sub_pd(one, t), _mm512_add_pd(one, t));
  const __m512d y =
      _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, _mm512_set1_pd(kTanhSeriesMax), _CMP_GE_OQ), series, big);
  const __m512i sign_bits = _mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64(INT64_MIN));
  const __m512d r = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(y), sign_bits));
  return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q), r, x);  // NaN stays x
}

// erfc(v / sqrt2) / 2 (= Phi(-v), the normal distribution's lower tail) for 16 floats v in [0, 16), as
// (hi + lo) 2^n: hi + lo an unevaluated sum in [0.015, 0.75] (hi the interval's constant term below, |lo| < 0.7 hi),
// n a whole number as float, so that a caller can multiply by other factors and apply 2^n last, rounding into the
// subnormal range only once (vscalefps). The f32 kernels use it where erfc(-z) / 2, z = x / sqrt2, stands for
// (1 + erf(z)) / 2 (gelu); 1/sqrt2 is the op table's double constant, whose error (1e-17 relative) is ignored.
//   e^(-v^2/2) = 2^n (1 + el): v^2 = h + l exactly (FMA), -2r = (h + 2n ln2_hi) + (l + 2n ln2_lo) (Cody-Waite:
//     the first sum is exact), el = e^r - 1 by its Taylor polynomial to r^7 (truncation 5e-9 relative).
//   erfcx(v / sqrt2) / 2 = e^(v^2/2) erfc(v / sqrt2) / 2: 32 intervals of v of width 1/2, on each a degree-6
//     polynomial in s = 4v - (2k + 1) in [-1, 1] (interpolation at the Chebyshev nodes, mpmath at 40 digits;
//     truncation error below 0.09 ulp), its constant term c0 carried as c0 + c0lo. Coefficients picked per lane
//     by vpermt2ps (the 32 intervals are one two-register table per coefficient).
//   hi + lo = c0 + ((erfcx/2 - c0) + el erfcx/2), each part rounded once; the rounding errors of the small parts
//     add well under 1.5 ulp in all. Measured: gelu built on it (kernels_nn.cpp) is within 1.77 ulp of x/2
//     erfc(-x/sqrt2) for every f32 x with |x| < 16, checked exhaustively against erfcl; tests/cpu/test_cpu_nn.cpp
//     sweeps every 97th input and holds it to 2.
constexpr float kHalfErfcxTable[8][32] = {
    {0.414032102f,  0.30023247f,   0.230760321f,  0.185231671f,  0.153651938f,  0.130724728f,  0.113452062f,
     0.100039206f,  0.0893593207f, 0.0806754008f, 0.073488228f,  0.0674492344f, 0.0623084866f, 0.0578826331f,
     0.0540343598f, 0.0506589822f, 0.0476753898f, 0.0450198315f, 0.0426415503f, 0.0404996499f, 0.038560845f,
     0.0367977731f, 0.0351877399f, 0.0337117724f, 0.0323538966f, 0.03110056f,   0.0299402028f, 0.0288628954f,
     0.0278600696f, 0.0269242916f, 0.0260490831f, 0.0252287686f},  // c0
    {-0.073858574f,    -0.0434419885f,   -0.0276229717f,   -0.0186967179f,   -0.0133063551f,   -0.00986231584f,
     -0.00755576976f,  -0.0059488113f,   -0.00479129422f,  -0.00393353356f,  -0.00328226713f,  -0.00277730008f,
     -0.00237855921f,  -0.00205862918f,  -0.00179829367f,  -0.0015837918f,   -0.00140507671f,  -0.00125468546f,
     -0.00112698704f,  -0.00101767248f,  -0.000923401618f, -0.000841554662f, -0.000770054641f, -0.000707238622f,
     -0.000651763112f, -0.000602533226f, -0.000558650005f, -0.000519369845f, -0.000484073535f, -0.000452242151f,
     -0.000423438265f, -0.00039729118f},  // c1
    {0.0106304241f,   0.00530957896f,  0.00289517106f,  0.00169858278f,  0.00105921063f,  0.000694977003f,
     0.000475845532f, 0.000337720121f, 0.000247103744f, 0.000185570665f, 0.00014251942f,  0.00011160408f,
     8.88907598e-05f, 7.1863964e-05f,  5.88700932e-05f, 4.87948673e-05f, 4.08705855e-05f, 3.45576154e-05f,
     2.94696893e-05f, 2.53257349e-05f, 2.19181275e-05f, 1.90913725e-05f, 1.67275375e-05f, 1.47361461e-05f,
     1.30470225e-05f, 1.16052079e-05f, 1.03672537e-05f, 9.29852376e-06f, 8.37117841e-06f, 7.56268037e-06f,
     6.85465284e-06f, 6.23201413e-06f},  // c2
    {-0.0013171481f,   -0.000573162863f, -0.000273888814f, -0.000141801691f, -7.86125165e-05f, -4.61988348e-05f,
     -2.85368169e-05f, -1.83959273e-05f, -1.23026712e-05f, -8.49353819e-06f, -6.02830232e-06f, -4.38345432e-06f,
     -3.25604469e-06f, -2.46462173e-06f, -1.89710261e-06f, -1.48231072e-06f, -1.17390357e-06f, -9.41018811e-07f,
     -7.62677303e-07f, -6.24349525e-07f, -5.15799115e-07f, -4.29701004e-07f, -3.60737232e-07f, -3.04995467e-07f,
     -2.59562086e-07f, -2.22242335e-07f, -1.91365487e-07f, -1.65647123e-07f, -1.44090777e-07f, -1.25916657e-07f,
     -1.10509667e-07f, -9.73809193e-08f},  // c3
    {0.000145509694f, 5.60915214e-05f, 2.38380999e-05f, 1.10302317e-05f, 5.49503602e-06f, 2.91847778e-06f,
     1.63849029e-06f, 9.65302888e-07f, 5.93083541e-07f, 3.78013823e-07f, 2.48824335e-07f, 1.68506944e-07f,
     1.17023788e-07f, 8.31110256e-08f, 6.02198114e-08f, 4.44250432e-08f, 3.33085417e-08f, 2.53428372e-08f,
     1.95408969e-08f, 1.52515263e-08f, 1.20368506e-08f, 9.59725011e-09f, 7.72437847e-09f, 6.27119334e-09f,
     5.13247977e-09f, 4.23198454e-09f, 3.51378637e-09f, 2.93641755e-09f, 2.46880894e-09f, 2.08745665e-09f,
     1.77441761e-09f, 1.51587731e-09f},  // c4
    {-1.48559002e-05f, -5.12090082e-06f, -1.95259713e-06f, -8.13917609e-07f, -3.66932738e-07f, -1.77198757e-07f,
     -9.08924633e-08f, -4.91567178e-08f, -2.78516037e-08f, -1.6441323e-08f,  -1.00642925e-08f, -6.36236352e-09f,
     -4.13920676e-09f, -2.76288858e-09f, -1.88720439e-09f, -1.31612199e-09f, -9.35265532e-10f, -6.76057876e-10f,
     -4.96345243e-10f, -3.69619363e-10f, -2.78858464e-10f, -2.12920098e-10f, -1.64379912e-10f, -1.28209138e-10f,
     -1.00949436e-10f, -8.01886196e-11f, -6.42219472e-11f, -5.18297662e-11f, -4.21294041e-11f, -3.44751797e-11f,
     -2.83899709e-11f, -2.35178786e-11f},  // c5
    {1.3803857e-06f,  4.30609617e-07f, 1.48896135e-07f, 5.64406477e-08f, 2.32151276e-08f, 1.02658531e-08f,
     4.84019935e-09f, 2.41540343e-09f, 1.2675837e-09f,  6.95633162e-10f, 3.97257532e-10f, 2.35072101e-10f,
     1.43600909e-10f, 9.02690839e-11f, 5.82270135e-11f, 3.84455072e-11f, 2.59278311e-11f, 1.78264035e-11f,
     1.24742074e-11f, 8.87099942e-12f, 6.40285264e-12f, 4.68499762e-12f, 3.47158652e-12f, 2.60270213e-12f,
     1.9725816e-12f,  1.51019128e-12f, 1.16713019e-12f, 9.09973811e-13f, 7.15347649e-13f, 5.66711933e-13f,
     4.52232788e-13f, 3.63354962e-13f},  // c6
    {1.31657085e-09f,  -7.69560238e-09f, 2.84551743e-10f,  -6.0590275e-09f,  -4.18527463e-10f, 5.99329475e-09f,
     1.18533558e-10f,  3.19023608e-09f,  -2.08049711e-09f, -1.621003e-09f,   2.82964074e-09f,  -3.07456283e-09f,
     3.57315705e-10f,  -1.33633693e-09f, -3.43896328e-10f, 8.80827217e-11f,  9.30055422e-10f,  1.49285351e-09f,
     -8.58398463e-10f, 3.63446495e-10f,  1.28105415e-09f,  1.03444898e-10f,  -1.03917186e-09f, 2.35240039e-12f,
     -4.81259199e-10f, 6.11886097e-10f,  -5.38726952e-10f, -8.26370805e-10f, -4.36116115e-10f, 7.01265768e-10f,
     6.5828526e-10f,   6.6069139e-10f},  // c0lo
};

// Coefficient j of each lane's interval k (0..31).
__attribute__((target("avx512f,avx2,fma"))) inline __m512 erfcx_coef16(int j, __m512i k) {
  return _mm512_permutex2var_ps(_mm512_loadu_ps(kHalfErfcxTable[j]), k, _mm512_loadu_ps(kHalfErfcxTable[j] + 16));
}

struct Erfc16 {
  __m512 hi, lo, n;
};
__attribute__((target("avx512f,avx2,fma"))) inline Erfc16 half_erfc_sqrt2_16(__m512 v) {
  Erfc16 out;
  const __m512 h = _mm512_mul_ps(v, v), l = _mm512_fmsub_ps(v, v, h);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(h, _mm512_set1_ps(-0.72134752044448170f)),  // -log2(e) / 2
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // R = v^2 + 2n ln2 = -2r: h + 2n ln2_hi is exact (2n ln2_hi has at most 17 bits, and cancels h's leading bits),
  // l + 2n ln2_lo is small.
  const __m512 R = _mm512_add_ps(_mm512_fmadd_ps(n, _mm512_set1_ps(1.38671875f), h),
                                 _mm512_fmadd_ps(n, _mm512_set1_ps(-4.24388880e-4f), l));
  // el = e^(-R/2) - 1 = -R/2 + R^2 (c2 + R (c3 + ... + R c7)), c_k = (-1/2)^k / k!; -R/2 exact
  __m512 p = _mm512_set1_ps(-1.0f / 645120);
  p = _mm512_fmadd_ps(p, R, _mm512_set1_ps(1.0f / 46080));
  p = _mm512_fmadd_ps(p, R, _mm512_set1_ps(-1.0f / 3840));
  p = _mm512_fmadd_ps(p, R, _mm512_set1_ps(1.0f / 384));
  p = _mm512_fmadd_ps(p, R, _mm512_set1_ps(-1.0f / 48));
  p = _mm512_fmadd_ps(p, R, _mm512_set1_ps(0.125f));
  const __m512 el = _mm512_fmadd_ps(p, _mm512_mul_ps(R, R), _mm512_mul_ps(R, _mm512_set1_ps(-0.5f)));
  // t = 2v - 1/2 (exact unless v < 1/8), k = round(t) = floor(2v) (or the one below where 2v is about a whole
  // number: s is about 1 then) as the low bits of m = 1.5 2^23 + k (a float whose spacing is 1); s = 2t - 2k =
  // 4v - (2k + 1), in [-1, 1].
  const __m512 t2 = _mm512_fmadd_ps(v, _mm512_set1_ps(2.0f), _mm512_set1_ps(-0.5f));
  const __m512 m = _mm512_add_ps(t2, _mm512_set1_ps(0x1.8p23f));
  const __m512i k = _mm512_castps_si512(m);  // vpermt2ps reads the low 5 bits
  const __m512 s =
      _mm512_fmsub_ps(t2, _mm512_set1_ps(2.0f), _mm512_fmadd_ps(m, _mm512_set1_ps(2.0f), _mm512_set1_ps(-0x1.8p24f)));
  __m512 q = erfcx_coef16(6, k);
  for (int j = 5; j >= 1; --j) q = _mm512_fmadd_ps(q, s, erfcx_coef16(j, k));
  const __m512 c0 = erfcx_coef16(0, k);
  const __m512 ql = _mm512_fmadd_ps(q, s, erfcx_coef16(7, k));  // erfcx/2 - c0
  out.hi = c0;
  out.lo = _mm512_fmadd_ps(el, _mm512_add_ps(c0, ql), ql);
  out.n = n;
  return out;
}

// Sixteen floats, streamed past the caches when asked and p is 32-byte aligned (as two halves where it is not
// 64-byte aligned, so that a row that store8 would stream is streamed here too).
__attribute__((target("avx512f,avx2,fma"))) inline void store16(float *p, __m512 v, bool stream) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (stream && (a & 63) == 0) {
    _mm512_stream_ps(p, v);
  } else if (stream && (a & 31) == 0) {
    _mm256_stream_ps(p, _mm512_castps512_ps256(v));
    _mm256_stream_ps(p + 8, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  } else {
    _mm512_storeu_ps(p, v);
  }
}

#pragma GCC diagnostic pop

}  // namespace pk::cpu
