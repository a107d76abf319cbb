// kernels_nn.cpp — native kernels for the hot composite ops: softmax, log_softmax, layer_norm, rms_norm, gelu,
// gelu_tanh, silu and sigmoid, and for tanhshrink, whose decomposition cancels (attention: kernels_attention.cpp),
// for every dtype their rows admit (f16, bf16, f32, f64).
// Without them the runtime runs each op as its decomposition: several primitive launches and full-size
// temporaries.
//
// Numerics: the contract is a bound relative to the decomposition evaluated exactly, so these kernels compute in
// double for f16/bf16/f32 and in long double for f64, and round once to the output dtype. Special values follow
// what the decomposition's IEEE arithmetic gives (a row with a NaN, +inf or only -inf is NaN for softmax, x = -inf
// gives NaN for silu, ...). The f32 rows of the row-wise ops, when dense, take an AVX2 path with the same
// numerics: f32 lanes widened to double, sums in double, an exp accurate to 8e-9 relative. Dense f32 gelu has a
// vector path too (AVX-512: f32 lanes with an error-compensated erfc, within 1.8 ulp; AVX2: double lanes).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu_kernels.hpp"
#include "vec_math.hpp"

namespace pk::cpu {
namespace {

using kit::View;
using kit::walk;

// Rows of a row-wise op: the row axes (softmax's dim, the normalized trailing axes) and the kept axes.
struct Rows {
  int32_t kn = 0, rn = 0;
  int64_t kshape[PK_MAX_RANK] = {0}, k_in[PK_MAX_RANK] = {0}, k_out[PK_MAX_RANK] = {0};
  int64_t rshape[PK_MAX_RANK] = {0}, r_in[PK_MAX_RANK] = {0}, r_out[PK_MAX_RANK] = {0};
  int64_t count = 1, len = 1;
  bool dense = false;  // row k is elements [k * len, (k + 1) * len) of both input and output
};

Rows rows_of(const View &in, const View &out, uint32_t row_axes) {
  Rows r;
  bool trailing = true, seen_row = false;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (row_axes & bit(d)) {
      seen_row = true;
      r.rshape[r.rn] = in.shape[d];
      r.r_in[r.rn] = in.strides[d];
      r.r_out[r.rn++] = out.strides[d];
      r.len *= in.shape[d];
    } else {
      if (seen_row && in.shape[d] != 1) trailing = false;
      r.kshape[r.kn] = in.shape[d];
      r.k_in[r.kn] = in.strides[d];
      r.k_out[r.kn++] = out.strides[d];
      r.count *= in.shape[d];
    }
  }
  r.dense = trailing && in.contiguous && out.contiguous;
  return r;
}

// Calls f(buffer, input_offset, output_offset) for every row, on the worker threads; the buffer holds len values
// of C and is the task's own.
template <class C, class F>
void each_row(const Rows &r, int64_t work_per_row, F &&f) {
  if (r.count == 0 || r.len == 0) return;
  parallel_for(0, r.count, row_grain(work_per_row), [&](int64_t lo, int64_t hi) {
    std::vector<C> buf(static_cast<size_t>(r.len));
    walk<2>(r.kshape, r.kn, {r.k_in, r.k_out}, {0, 0}, lo, hi,
            [&](const std::array<int64_t, 2> &o) { f(buf.data(), o[0], o[1]); });
  });
}

template <class T, class C>
void gather_row(const Rows &r, const View &in, int64_t base, C *buf) {
  int64_t i = 0;
  walk<1>(r.rshape, r.rn, {r.r_in}, {base}, 0, r.len,
          [&](const std::array<int64_t, 1> &o) { buf[i++] = load_as<T, C>(in, o[0]); });
}

template <class T, class C>
void scatter_row(const Rows &r, const View &out, int64_t base, const C *buf) {
  int64_t i = 0;
  walk<1>(r.rshape, r.rn, {r.r_out}, {base}, 0, r.len,
          [&](const std::array<int64_t, 1> &o) { *out.at<T>(o[0]) = kit::store_as<T>(buf[i++]); });
}

// A whole (small) tensor in row-major order, converted: weight and bias of the norms.
template <class T, class C>
std::vector<C> dense_copy(const View &v) {
  std::vector<C> out(static_cast<size_t>(v.numel));
  if (v.numel == 0) return out;
  size_t i = 0;
  walk<1>(v.shape, v.ndim, {v.strides}, {0}, 0, v.numel,
          [&](const std::array<int64_t, 1> &o) { out[i++] = load_as<T, C>(v, o[0]); });
  return out;
}

// --- the vector exp ---------------------------------------------------------------------------------------------

// exp of 4 doubles in [-708, 708]: x = n ln2 + r with |r| <= ln2/2, a degree-7 Taylor polynomial (truncation
// below 8e-9 relative: 0.13 f32 ulp) evaluated by Estrin's scheme (a short dependency chain: these loops are
// latency-bound), 2^n added to the exponent bits. Callers clamp or route other lanes elsewhere; the range keeps
// 2^n and the result normal doubles.
__attribute__((target("avx2,fma"))) inline __m256d exp_pd(__m256d x) {
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634074)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10),
                                     _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), x));
  const __m256d r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2);
  const __m256d p01 = _mm256_add_pd(r, _mm256_set1_pd(1.0));
  const __m256d p23 = _mm256_fmadd_pd(r, _mm256_set1_pd(1.0 / 6), _mm256_set1_pd(0.5));
  const __m256d p45 = _mm256_fmadd_pd(r, _mm256_set1_pd(1.0 / 120), _mm256_set1_pd(1.0 / 24));
  const __m256d p67 = _mm256_fmadd_pd(r, _mm256_set1_pd(1.0 / 5040), _mm256_set1_pd(1.0 / 720));
  const __m256d p = _mm256_fmadd_pd(r4, _mm256_fmadd_pd(r2, p67, p45), _mm256_fmadd_pd(r2, p23, p01));
  const __m256i scale = _mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n)), 52);
  return _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(p), scale));
}

__attribute__((target("avx2,fma"))) inline double hsum_pd(__m256d v) {
  alignas(32) double t[4];
  _mm256_store_pd(t, v);
  return (t[0] + t[1]) + (t[2] + t[3]);
}

// --- softmax, log_softmax ---------------------------------------------------------------------------------------

// One row in place, in C. The decomposition's special cases come out of the arithmetic: a NaN or +inf anywhere,
// or a row of -inf only, makes the maximum NaN / ±inf and every output NaN; -inf elements of a finite row give 0
// (softmax) or -inf (log_softmax).
template <class C, bool Log>
void softmax_values(C *v, int64_t n) {
  C m = -kInf<C>;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    nan |= std::isnan(v[i]);
    m = v[i] > m ? v[i] : m;
  }
  if (nan || !std::isfinite(m)) {
    std::fill(v, v + n, kNaN<C>);
    return;
  }
  if constexpr (Log) {
    // log of (1 + the other terms), as log1p: the maxima contribute exactly 1 each, and a plain log of a sum
    // just above 1 would lose the small terms' bits that results near 0 need.
    C rest = 0;
    int64_t ones = 0;
    for (int64_t i = 0; i < n; ++i) {
      v[i] -= m;
      if (v[i] == 0) {
        ++ones;
      } else {
        rest += std::exp(v[i]);
      }
    }
    const C lse = std::log1p(rest + static_cast<C>(ones - 1));
    for (int64_t i = 0; i < n; ++i) v[i] -= lse;
  } else {
    C s = 0;
    for (int64_t i = 0; i < n; ++i) {
      v[i] = std::exp(v[i] - m);
      s += v[i];
    }
    for (int64_t i = 0; i < n; ++i) v[i] /= s;
  }
}

// Max and min of a dense f32 row and whether it holds a NaN.
struct RowRange {
  float max = -INFINITY, min = INFINITY;
  bool nan = false;
};

__attribute__((target("avx2,fma"))) RowRange row_range_avx2(const float *x, int64_t n) {
  __m256 hi0 = _mm256_set1_ps(-INFINITY), hi1 = hi0, lo0 = _mm256_set1_ps(INFINITY), lo1 = lo0;
  __m256 un = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    hi0 = _mm256_max_ps(hi0, a);
    hi1 = _mm256_max_ps(hi1, b);
    lo0 = _mm256_min_ps(lo0, a);
    lo1 = _mm256_min_ps(lo1, b);
    un = _mm256_or_ps(un, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
  alignas(32) float hi[8], lo[8];
  _mm256_store_ps(hi, _mm256_max_ps(hi0, hi1));
  _mm256_store_ps(lo, _mm256_min_ps(lo0, lo1));
  RowRange r;
  for (int k = 0; k < 8; ++k) {
    r.max = std::max(r.max, hi[k]);
    r.min = std::min(r.min, lo[k]);
  }
  r.nan = _mm256_movemask_ps(un) != 0;
  for (; i < n; ++i) {
    r.nan |= std::isnan(x[i]);
    r.max = std::max(r.max, x[i]);
    r.min = std::min(r.min, x[i]);
  }
  return r;
}

// A finished softmax row waiting for its scale pass: y = buf * inv.
struct PendingRow {
  const float *buf = nullptr;
  float *y = nullptr;
  float inv = 0;
};

__attribute__((target("avx2,fma"))) void scale_row_avx2(const PendingRow &p, int64_t n, bool stream) {
  const __m256 inv = _mm256_set1_ps(p.inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(p.y + i, _mm256_mul_ps(_mm256_loadu_ps(p.buf + i), inv), stream);
  for (; i < n; ++i) p.y[i] = p.buf[i] * p.inv;
}

// How a softmax row computes its terms q = e^(x - max) / c (c > 0 is the same for the whole row and cancels in
// q / sum q).
enum class SoftmaxTerms {
  // Rows with |x| <= 88 and max - min <= 80, the common case: q = e^x * 2^-k with k = round(max / ln2), so
  // c = e^-max 2^k in [0.7, 1.42]. x itself is reduced (x = n ln2 + r), exactly as a plain exp does, so the
  // inexact f32 difference x - max never enters; n - k stays in [-117, 1], inside the normal range.
  kScaledExp,
  // Any other finite row: q = e^(x - max), with d = x - max made exact as an f32 pair (two-sum) and e^d
  // corrected by the pair's low part; lanes with d < -86 (where 2^n would leave the normal range, -inf
  // included) take the scalar double path, which gives exactly 0 below -104 (q / sum < 2^-150 since sum >= 1).
  kShiftedExp,
};

// Eight softmax terms from x + i (see SoftmaxTerms). A function rather than a lambda: lambdas do not inherit
// the enclosing function's target attribute.
template <SoftmaxTerms Terms>
__attribute__((target("avx2,fma"))) inline __m256 softmax_terms8(const float *x, int64_t i, float mf, __m256i k_bits) {
  const __m256 xv = _mm256_loadu_ps(x + i);
  if constexpr (Terms == SoftmaxTerms::kScaledExp) {
    (void)mf;
    return exp_ps_scaled(xv, k_bits);
  } else {
    (void)k_bits;
    const __m256 m = _mm256_set1_ps(mf), neg_m = _mm256_set1_ps(-mf), lo_lim = _mm256_set1_ps(-86.0f);
    // Two-sum: d + err == x - max exactly.
    const __m256 d = _mm256_sub_ps(xv, m);
    const __m256 bb = _mm256_sub_ps(d, xv);
    const __m256 err = _mm256_add_ps(_mm256_sub_ps(xv, _mm256_sub_ps(d, bb)), _mm256_sub_ps(neg_m, bb));
    __m256 e = exp_ps_in_range(_mm256_max_ps(d, lo_lim));
    e = _mm256_fmadd_ps(e, err, e);  // e^(d + err) = e^d (1 + err)
    const int low = _mm256_movemask_ps(_mm256_cmp_ps(d, lo_lim, _CMP_LT_OQ));
    if (low != 0) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, e);
      for (int j = 0; j < 8; ++j) {
        if ((low >> j) & 1) {
          const double dd = static_cast<double>(x[i + j]) - static_cast<double>(mf);
          lanes[j] = dd < -104.0 ? 0.0f : static_cast<float>(std::exp(dd));
        }
      }
      e = _mm256_load_ps(lanes);
    }
    return e;
  }
}

// Adds the eight floats of e to the double accumulators (low lanes to s0, high lanes to s1).
__attribute__((target("avx2,fma"))) inline void add_to_sum_pd(__m256 e, __m256d &s0, __m256d &s1) {
  s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
  s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}

// Dense f32 softmax row: the max and min (reading the row from memory); then the terms q in f32 lanes, kept in
// buf, summed in double (two lanes' terms added in f32 first: one more rounding of the sum, for half the
// conversions); the row's scale pass (buf * (1 / sum) in f32 into y) is returned pending, and done during the
// next row's exp pass (`prev`), so that its stores to memory overlap that compute-bound pass instead of following
// it. `next` (the following row, or null) is prefetched into L2 during the exp pass, so that its max pass finds it
// there instead of waiting on memory. Error: q <= 1 ulp (kShiftedExp: e^d <= 1 ulp, its correction one rounding),
// the paired sum one rounding, 1 / sum and the product one each: <= 3 ulp, inside the table's 4-ulp bound.
template <bool Prev, SoftmaxTerms Terms>
__attribute__((target("avx2,fma"))) PendingRow softmax_terms_avx2(const float *x, float *y, int64_t n, float *buf,
                                                                  float mf, const PendingRow &prev, bool stream,
                                                                  const float *next) {
  // k is kScaledExp's (|max| <= 88): any other finite row may have a max past int's range (its k is unused).
  const int k = Terms == SoftmaxTerms::kScaledExp
                    ? static_cast<int>(std::nearbyint(static_cast<double>(mf) * 1.4426950408889634))
                    : 0;
  const __m256i k_bits = _mm256_set1_epi32(k * (1 << 23));
  // prev's fields in locals: the intrinsics' stores may alias anything, so fields read through `prev` would be
  // reloaded after each store.
  const float *const pbuf = prev.buf;
  float *const py = prev.y;
  const __m256 prev_inv = _mm256_set1_ps(prev.inv);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (next != nullptr) _mm_prefetch(reinterpret_cast<const char *>(next + i), _MM_HINT_T1);
    const __m256 e0 = softmax_terms8<Terms>(x, i, mf, k_bits), e1 = softmax_terms8<Terms>(x, i + 8, mf, k_bits);
    _mm256_storeu_ps(buf + i, e0);
    _mm256_storeu_ps(buf + i + 8, e1);
    add_to_sum_pd(_mm256_add_ps(e0, e1), s0, s1);
    if (Prev) {
      store8(py + i, _mm256_mul_ps(_mm256_loadu_ps(pbuf + i), prev_inv), stream);
      store8(py + i + 8, _mm256_mul_ps(_mm256_loadu_ps(pbuf + i + 8), prev_inv), stream);
    }
  }
  if (i + 8 <= n) {
    const __m256 e0 = softmax_terms8<Terms>(x, i, mf, k_bits);
    _mm256_storeu_ps(buf + i, e0);
    add_to_sum_pd(e0, s0, s1);
    if (Prev) store8(py + i, _mm256_mul_ps(_mm256_loadu_ps(pbuf + i), prev_inv), stream);
    i += 8;
  }
  double s = hsum_pd(_mm256_add_pd(s0, s1));
  for (; i < n; ++i) {
    const double xi = x[i];
    buf[i] = static_cast<float>(Terms == SoftmaxTerms::kScaledExp ? std::ldexp(std::exp(xi), -k)
                                                                  : std::exp(xi - static_cast<double>(mf)));
    s += buf[i];
    if (Prev) py[i] = pbuf[i] * prev.inv;
  }
  return {buf, y, static_cast<float>(1.0 / s)};
}

template <bool Prev>
__attribute__((target("avx2,fma"))) PendingRow softmax_row_avx2(const float *x, float *y, int64_t n, float *buf,
                                                                const PendingRow &prev, bool stream,
                                                                const float *next) {
  const RowRange r = row_range_avx2(x, n);
  if (r.nan || !std::isfinite(r.max)) {
    if (Prev) scale_row_avx2(prev, n, stream);
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return {};
  }
  if (r.min >= -88.0f && r.max <= 88.0f && r.max - r.min <= 80.0f)
    return softmax_terms_avx2<Prev, SoftmaxTerms::kScaledExp>(x, y, n, buf, r.max, prev, stream, next);
  return softmax_terms_avx2<Prev, SoftmaxTerms::kShiftedExp>(x, y, n, buf, r.max, prev, stream, next);
}

// --- the same softmax row on AVX-512 (16 lanes) ---
// Half the instructions of the AVX2 row for the common case (kScaledExp) with the same arithmetic per element, so
// the same error bound; rows that need kShiftedExp take the AVX2 code. On a CPU that splits 512-bit operations in
// two (AMD Zen 4) this still pays: the loop was bound by issuing instructions, not by the execution units.

// GCC 12 warns that the AVX-512 intrinsics' own placeholder operand (_mm512_undefined_*) is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

__attribute__((target("avx512f,avx2,fma"))) RowRange row_range_avx512(const float *x, int64_t n) {
  __m512 hi0 = _mm512_set1_ps(-INFINITY), hi1 = hi0, lo0 = _mm512_set1_ps(INFINITY), lo1 = lo0;
  __mmask16 un = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    hi0 = _mm512_max_ps(hi0, a);
    hi1 = _mm512_max_ps(hi1, b);
    lo0 = _mm512_min_ps(lo0, a);
    lo1 = _mm512_min_ps(lo1, b);
    un = static_cast<__mmask16>(un | _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q));
  }
  RowRange r;
  r.max = _mm512_reduce_max_ps(_mm512_max_ps(hi0, hi1));
  r.min = _mm512_reduce_min_ps(_mm512_min_ps(lo0, lo1));
  r.nan = un != 0;
  for (; i < n; ++i) {
    r.nan |= std::isnan(x[i]);
    r.max = std::max(r.max, x[i]);
    r.min = std::min(r.min, x[i]);
  }
  return r;
}

// Sixteen f32 terms added pairwise-free into two double accumulators (low and high eight lanes).
__attribute__((target("avx512f,avx2,fma"))) inline void add_to_sum_pd16(__m512 e, __m512d &s0, __m512d &s1) {
  s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
  s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
}

// softmax_terms_avx2<Prev, kScaledExp> on 16 lanes: the same terms, the same pairing of two terms in f32 before
// the double sum (lanes i and i + 16 here, i and i + 8 there), the same pending scale pass and prefetch.
template <bool Prev>
__attribute__((target("avx512f,avx2,fma"))) PendingRow softmax_scaled_terms_avx512(const float *x, float *y, int64_t n,
                                                                                   float *buf, float mf,
                                                                                   const PendingRow &prev, bool stream,
                                                                                   const float *next) {
  const int k = static_cast<int>(std::nearbyint(static_cast<double>(mf) * 1.4426950408889634));
  const __m512i k_bits = _mm512_set1_epi32(k * (1 << 23));
  const float *const pbuf = prev.buf;
  float *const py = prev.y;
  const __m512 prev_inv = _mm512_set1_ps(prev.inv);
  __m512d s0 = _mm512_setzero_pd(), s1 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if (next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char *>(next + i), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char *>(next + i + 16), _MM_HINT_T1);
    }
    const __m512 e0 = exp16_scaled(_mm512_loadu_ps(x + i), k_bits);
    const __m512 e1 = exp16_scaled(_mm512_loadu_ps(x + i + 16), k_bits);
    _mm512_storeu_ps(buf + i, e0);
    _mm512_storeu_ps(buf + i + 16, e1);
    add_to_sum_pd16(_mm512_add_ps(e0, e1), s0, s1);
    if (Prev) {
      store16(py + i, _mm512_mul_ps(_mm512_loadu_ps(pbuf + i), prev_inv), stream);
      store16(py + i + 16, _mm512_mul_ps(_mm512_loadu_ps(pbuf + i + 16), prev_inv), stream);
    }
  }
  if (i + 16 <= n) {
    const __m512 e0 = exp16_scaled(_mm512_loadu_ps(x + i), k_bits);
    _mm512_storeu_ps(buf + i, e0);
    add_to_sum_pd16(e0, s0, s1);
    if (Prev) store16(py + i, _mm512_mul_ps(_mm512_loadu_ps(pbuf + i), prev_inv), stream);
    i += 16;
  }
  double s = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
  for (; i < n; ++i) {
    buf[i] = static_cast<float>(std::ldexp(std::exp(static_cast<double>(x[i])), -k));
    s += buf[i];
    if (Prev) py[i] = pbuf[i] * prev.inv;
  }
  return {buf, y, static_cast<float>(1.0 / s)};
}

template <bool Prev>
__attribute__((target("avx512f,avx2,fma"))) PendingRow softmax_row_avx512(const float *x, float *y, int64_t n,
                                                                          float *buf, const PendingRow &prev,
                                                                          bool stream, const float *next) {
  const RowRange r = row_range_avx512(x, n);
  if (r.nan || !std::isfinite(r.max)) {
    if (Prev) scale_row_avx2(prev, n, stream);
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return {};
  }
  if (r.min >= -88.0f && r.max <= 88.0f && r.max - r.min <= 80.0f)
    return softmax_scaled_terms_avx512<Prev>(x, y, n, buf, r.max, prev, stream, next);
  return softmax_terms_avx2<Prev, SoftmaxTerms::kShiftedExp>(x, y, n, buf, r.max, prev, stream, next);
}

#pragma GCC diagnostic pop

// Dense f32 log_softmax row: block by block (each block read from memory once, then again from L1), the running
// max and the sum of exp(x - max) rescaled when the max grows; then x - max - log(sum) in double.
__attribute__((target("avx2,fma"))) void log_softmax_row_avx2(const float *x, float *y, int64_t n) {
  constexpr int64_t kBlock = 1024;
  double m = -INFINITY, s = 0;
  bool bad = false;
  for (int64_t b = 0; b < n && !bad; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    const RowRange range = row_range_avx2(x + b, len);
    const double bm = range.max;
    if (range.nan || bm == INFINITY) bad = true;
    if (bad || bm == -INFINITY) continue;  // a block of -inf only adds nothing
    if (bm > m) {
      s *= std::exp(m - bm);
      m = bm;
    }
    const __m256d mv = _mm256_set1_pd(m), lo = _mm256_set1_pd(-708.0);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0;
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
      const __m256d d0 = _mm256_max_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + b + i)), mv), lo);
      const __m256d d1 = _mm256_max_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + b + i + 4)), mv), lo);
      s0 = _mm256_add_pd(s0, exp_pd(d0));
      s1 = _mm256_add_pd(s1, exp_pd(d1));
    }
    s += hsum_pd(_mm256_add_pd(s0, s1));
    for (; i < len; ++i) s += std::exp(static_cast<double>(x[b + i]) - m);
  }
  if (bad || m == -INFINITY) {
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  // s >= 1 (the max's own term): log(s) has an absolute error of 2^-53, far below an f32 ulp of any result.
  // x - max is exact in double, so outputs near 0 (x at the max) keep their bits.
  const double lse = std::log(s);
  const __m256d mv = _mm256_set1_pd(m), lv = _mm256_set1_pd(lse);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d a = _mm256_sub_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), mv), lv);
    const __m256d c = _mm256_sub_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)), mv), lv);
    _mm256_storeu_ps(y + i, _mm256_set_m128(_mm256_cvtpd_ps(c), _mm256_cvtpd_ps(a)));
  }
  for (; i < n; ++i) y[i] = static_cast<float>((static_cast<double>(x[i]) - m) - lse);
}

template <class A, bool Log>
pk_status k_softmax(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const A &a = attrs_of<A>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const Rows r = rows_of(in, out, bit(static_cast<int>(a.dim)));
    return dispatch_std_float(l.inputs[0], [&](auto tag) -> pk_status {
      using T = decltype(tag);
      using C = wide_t<T>;
      if constexpr (std::is_same_v<T, float>) {
        // The float buffer stays in L2 up to 64 K elements; longer rows take the generic path.
        if (have_isa(Isa::avx2) && r.dense && r.count > 0 && r.len > 0 && (Log || r.len <= (int64_t{1} << 16))) {
          const float *x = in.at<float>(0);
          float *y = out.at<float>(0);
          const bool stream = !Log && r.count * r.len * 4 >= kStreamingBytes;
          const bool wide = have_isa(Isa::avx512);
          parallel_for(0, r.count, row_grain(r.len), [&](int64_t lo, int64_t hi) {
            // Two row buffers: the row being computed and the previous one, whose scale pass rides along.
            std::vector<float> buf(Log ? 0 : 2 * static_cast<size_t>(r.len));
            PendingRow pending;
            for (int64_t k = lo; k < hi; ++k) {
              if constexpr (Log) {
                log_softmax_row_avx2(x + k * r.len, y + k * r.len, r.len);
              } else {
                float *b = buf.data() + (k & 1) * r.len;
                const float *next = k + 1 < hi ? x + (k + 1) * r.len : nullptr;
                const float *xk = x + k * r.len;
                float *yk = y + k * r.len;
                if (wide) {
                  pending = pending.buf != nullptr ? softmax_row_avx512<true>(xk, yk, r.len, b, pending, stream, next)
                                                   : softmax_row_avx512<false>(xk, yk, r.len, b, pending, stream, next);
                } else {
                  pending = pending.buf != nullptr ? softmax_row_avx2<true>(xk, yk, r.len, b, pending, stream, next)
                                                   : softmax_row_avx2<false>(xk, yk, r.len, b, pending, stream, next);
                }
              }
            }
            if (pending.buf != nullptr) scale_row_avx2(pending, r.len, stream);
            if (stream) _mm_sfence();
          });
          return PK_OK;
        }
      }
      each_row<C>(r, 2 * r.len, [&](C *buf, int64_t ib, int64_t ob) {
        gather_row<T>(r, in, ib, buf);
        softmax_values<C, Log>(buf, r.len);
        scatter_row<T>(r, out, ob, buf);
      });
      return PK_OK;
    });
  });
}

// --- layer_norm, rms_norm ---------------------------------------------------------------------------------------

// One row in place, in C, as the decomposition: two passes (the mean, then the centred squares), y = (x - mean) *
// rstd * w + b. A non-finite input makes the mean or the variance NaN / inf, and so every output NaN, as there.
template <class C>
void layer_norm_values(C *v, int64_t n, const C *w, const C *b, C eps) {
  C s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i];
  const C mean = s / static_cast<C>(n);
  C ss = 0;
  for (int64_t i = 0; i < n; ++i) {
    v[i] -= mean;
    ss += v[i] * v[i];
  }
  const C rstd = 1 / std::sqrt(ss / static_cast<C>(n) + eps);
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] * rstd * w[i] + b[i];
}

// x * rr * w in the decomposition's order: an infinite x gives rr = 0 and NaN for itself, signed zeros elsewhere.
template <class C>
void rms_norm_values(C *v, int64_t n, const C *w, C eps) {
  C ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += v[i] * v[i];
  const C rr = 1 / std::sqrt(ss / static_cast<C>(n) + eps);
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] * rr * w[i];
}

// Dense f32 layer_norm row, reading x twice: one pass for the sums of d = x - x[0] and d^2 in double (shifting by
// a sample keeps the cancellation in S2/n - (S1/n)^2 to n * 2^-53 relative, since (x[0] - mean)^2 <= n var), one
// for the output, during which `next` (the following row, or null) is prefetched into L2, as softmax does.
__attribute__((target("avx2,fma"))) void layer_norm_row_avx2(const float *x, float *y, int64_t n, const float *w,
                                                             const float *b, double eps, bool stream,
                                                             const float *next) {
  const double x0 = x[0];
  const __m256d sh = _mm256_set1_pd(x0);
  // Four independent chains per sum: the adds and fmas are latency-bound with fewer.
  __m256d s1a = _mm256_setzero_pd(), s1b = s1a, s1c = s1a, s1d = s1a, s2a = s1a, s2b = s1a, s2c = s1a, s2d = s1a;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), sh);
    const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)), sh);
    const __m256d d2 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)), sh);
    const __m256d d3 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)), sh);
    s1a = _mm256_add_pd(s1a, d0);
    s1b = _mm256_add_pd(s1b, d1);
    s1c = _mm256_add_pd(s1c, d2);
    s1d = _mm256_add_pd(s1d, d3);
    s2a = _mm256_fmadd_pd(d0, d0, s2a);
    s2b = _mm256_fmadd_pd(d1, d1, s2b);
    s2c = _mm256_fmadd_pd(d2, d2, s2c);
    s2d = _mm256_fmadd_pd(d3, d3, s2d);
  }
  s1a = _mm256_add_pd(s1a, s1c);
  s1b = _mm256_add_pd(s1b, s1d);
  s2a = _mm256_add_pd(s2a, s2c);
  s2b = _mm256_add_pd(s2b, s2d);
  double s1 = hsum_pd(_mm256_add_pd(s1a, s1b)), s2 = hsum_pd(_mm256_add_pd(s2a, s2b));
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - x0;
    s1 += d;
    s2 += d * d;
  }
  const double nd = static_cast<double>(n), dm = s1 / nd;
  double var = s2 / nd - dm * dm;  // NaN when any x is NaN or infinite (inf - inf), as the decomposition's
  if (var < 0) var = 0;
  const double mean = x0 + dm;
  const double rstd = 1 / std::sqrt(var + eps);
  const __m256d mv = _mm256_set1_pd(mean), rv = _mm256_set1_pd(rstd);
  i = 0;
  for (; i + 4 <= n; i += 4) {
    if (next != nullptr && (i & 15) == 0) _mm_prefetch(reinterpret_cast<const char *>(next + i), _MM_HINT_T1);
    const __m256d yv = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), mv), rv);
    const __m256d o = _mm256_fmadd_pd(yv, _mm256_cvtps_pd(_mm_loadu_ps(w + i)), _mm256_cvtps_pd(_mm_loadu_ps(b + i)));
    store4(y + i, _mm256_cvtpd_ps(o), stream);
  }
  for (; i < n; ++i)
    y[i] = static_cast<float>((static_cast<double>(x[i]) - mean) * rstd * static_cast<double>(w[i]) +
                              static_cast<double>(b[i]));
}

__attribute__((target("avx2,fma"))) void rms_norm_row_avx2(const float *x, float *y, int64_t n, const float *w,
                                                           double eps, bool stream, const float *next) {
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), c = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    s0 = _mm256_fmadd_pd(a, a, s0);
    s1 = _mm256_fmadd_pd(c, c, s1);
  }
  double ss = hsum_pd(_mm256_add_pd(s0, s1));
  for (; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double rr = 1 / std::sqrt(ss / static_cast<double>(n) + eps);
  const __m256d rv = _mm256_set1_pd(rr);
  i = 0;
  for (; i + 4 <= n; i += 4) {
    if (next != nullptr && (i & 15) == 0) _mm_prefetch(reinterpret_cast<const char *>(next + i), _MM_HINT_T1);
    const __m256d o =
        _mm256_mul_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), rv), _mm256_cvtps_pd(_mm_loadu_ps(w + i)));
    store4(y + i, _mm256_cvtpd_ps(o), stream);
  }
  for (; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) * rr * static_cast<double>(w[i]));
}

// The two rows above on AVX-512: eight doubles per vector instead of four, the same arithmetic per element (the
// sums are in double, so their order does not matter to the bound).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

__attribute__((target("avx512f,avx2,fma"))) inline __m512d load8_pd(const float *p) {
  return _mm512_cvtps_pd(_mm256_loadu_ps(p));
}

__attribute__((target("avx512f,avx2,fma"))) void layer_norm_row_avx512(const float *x, float *y, int64_t n,
                                                                       const float *w, const float *b, double eps,
                                                                       bool stream, const float *next) {
  const double x0 = x[0];
  const __m512d sh = _mm512_set1_pd(x0);
  __m512d s1a = _mm512_setzero_pd(), s1b = s1a, s1c = s1a, s1d = s1a, s2a = s1a, s2b = s1a, s2c = s1a, s2d = s1a;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512d d0 = _mm512_sub_pd(load8_pd(x + i), sh), d1 = _mm512_sub_pd(load8_pd(x + i + 8), sh);
    const __m512d d2 = _mm512_sub_pd(load8_pd(x + i + 16), sh), d3 = _mm512_sub_pd(load8_pd(x + i + 24), sh);
    s1a = _mm512_add_pd(s1a, d0);
    s1b = _mm512_add_pd(s1b, d1);
    s1c = _mm512_add_pd(s1c, d2);
    s1d = _mm512_add_pd(s1d, d3);
    s2a = _mm512_fmadd_pd(d0, d0, s2a);
    s2b = _mm512_fmadd_pd(d1, d1, s2b);
    s2c = _mm512_fmadd_pd(d2, d2, s2c);
    s2d = _mm512_fmadd_pd(d3, d3, s2d);
  }
  double s1 = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(s1a, s1c), _mm512_add_pd(s1b, s1d)));
  double s2 = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(s2a, s2c), _mm512_add_pd(s2b, s2d)));
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - x0;
    s1 += d;
    s2 += d * d;
  }
  const double nd = static_cast<double>(n), dm = s1 / nd;
  double var = s2 / nd - dm * dm;  // NaN when any x is NaN or infinite, as in the AVX2 row
  if (var < 0) var = 0;
  const double mean = x0 + dm;
  const double rstd = 1 / std::sqrt(var + eps);
  const __m512d mv = _mm512_set1_pd(mean), rv = _mm512_set1_pd(rstd);
  i = 0;
  for (; i + 8 <= n; i += 8) {
    if (next != nullptr && (i & 15) == 0) _mm_prefetch(reinterpret_cast<const char *>(next + i), _MM_HINT_T1);
    const __m512d yv = _mm512_mul_pd(_mm512_sub_pd(load8_pd(x + i), mv), rv);
    store8(y + i, _mm512_cvtpd_ps(_mm512_fmadd_pd(yv, load8_pd(w + i), load8_pd(b + i))), stream);
  }
  for (; i < n; ++i)
    y[i] = static_cast<float>((static_cast<double>(x[i]) - mean) * rstd * static_cast<double>(w[i]) +
                              static_cast<double>(b[i]));
}

__attribute__((target("avx512f,avx2,fma"))) void rms_norm_row_avx512(const float *x, float *y, int64_t n,
                                                                     const float *w, double eps, bool stream,
                                                                     const float *next) {
  __m512d s0 = _mm512_setzero_pd(), s1 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512d a = load8_pd(x + i), c = load8_pd(x + i + 8);
    s0 = _mm512_fmadd_pd(a, a, s0);
    s1 = _mm512_fmadd_pd(c, c, s1);
  }
  double ss = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
  for (; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double rr = 1 / std::sqrt(ss / static_cast<double>(n) + eps);
  const __m512d rv = _mm512_set1_pd(rr);
  i = 0;
  for (; i + 8 <= n; i += 8) {
    if (next != nullptr && (i & 15) == 0) _mm_prefetch(reinterpret_cast<const char *>(next + i), _MM_HINT_T1);
    store8(y + i, _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_mul_pd(load8_pd(x + i), rv), load8_pd(w + i))), stream);
  }
  for (; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) * rr * static_cast<double>(w[i]));
}

#pragma GCC diagnostic pop

template <class A, bool Rms>
pk_status k_norm(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const A &a = attrs_of<A>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const View wv = kit::view_of(l.inputs[1]);
    uint32_t axes = 0;
    for (int32_t d = in.ndim - static_cast<int32_t>(a.normalized_ndim); d < in.ndim; ++d) axes |= bit(d);
    const Rows r = rows_of(in, out, axes);
    return dispatch_std_float(l.inputs[0], [&](auto tag) -> pk_status {
      using T = decltype(tag);
      using C = wide_t<T>;
      if (r.count == 0 || r.len == 0) return PK_OK;
      if constexpr (std::is_same_v<T, float>) {
        if (have_isa(Isa::avx2) && r.dense) {
          // Weight and bias in row order, as f32 (exact copies; usually already dense, and small).
          const std::vector<float> w = dense_copy<float, float>(wv);
          const std::vector<float> b = Rms ? std::vector<float>() : dense_copy<float, float>(kit::view_of(l.inputs[2]));
          const float *x = in.at<float>(0);
          float *y = out.at<float>(0);
          const bool stream = r.count * r.len * 4 >= kStreamingBytes;
          const bool wide = have_isa(Isa::avx512);
          parallel_for(0, r.count, row_grain(2 * r.len), [&](int64_t lo, int64_t hi) {
            for (int64_t k = lo; k < hi; ++k) {
              const float *next = k + 1 < hi ? x + (k + 1) * r.len : nullptr;
              const float *xk = x + k * r.len;
              float *yk = y + k * r.len;
              if constexpr (Rms) {
                (wide ? rms_norm_row_avx512 : rms_norm_row_avx2)(xk, yk, r.len, w.data(), a.eps, stream, next);
              } else {
                (wide ? layer_norm_row_avx512 : layer_norm_row_avx2)(xk, yk, r.len, w.data(), b.data(), a.eps, stream,
                                                                     next);
              }
            }
            if (stream) _mm_sfence();
          });
          return PK_OK;
        }
      }
      const std::vector<C> w = dense_copy<T, C>(wv);
      const std::vector<C> b = Rms ? std::vector<C>() : dense_copy<T, C>(kit::view_of(l.inputs[2]));
      const C eps = static_cast<C>(a.eps);
      each_row<C>(r, 3 * r.len, [&](C *buf, int64_t ib, int64_t ob) {
        gather_row<T>(r, in, ib, buf);
        if constexpr (Rms) {
          rms_norm_values<C>(buf, r.len, w.data(), eps);
        } else {
          layer_norm_values<C>(buf, r.len, w.data(), b.data(), eps);
        }
        scatter_row<T>(r, out, ob, buf);
      });
      return PK_OK;
    });
  });
}

// --- gelu, gelu_tanh, silu --------------------------------------------------------------------------------------

// The decomposition's constants are doubles, kept exact (not rounded to the input dtype).
constexpr double kInvSqrt2 = 0.7071067811865476, kSqrt2OverPi = 0.7978845608028654, kGeluCubic = 0.044715;

// 1 + erf(z) and 1 + tanh(u) cancel for x well below 0: the kernels use the equal forms erfc(-z) and
// x / (1 + e^-2u), accurate in relative terms everywhere (f64 in long double, narrower types in double).

// x/2 (1 + erf(x c)) as x/2 erfc(-x c).
struct Gelu {
  template <class C>
  static C f(C x) {
    return x * C(0.5) * std::erfc(-(x * C(kInvSqrt2)));
  }
};

// x/2 (1 + tanh(u)) as x / (1 + exp(-2u)). x = -inf gives NaN (-inf * 0 in the decomposition; -inf / inf here).
struct GeluTanh {
  template <class C>
  static C f(C x) {
    const C u = (x + x * x * x * C(kGeluCubic)) * C(kSqrt2OverPi);
    return x / (1 + std::exp(-2 * u));
  }
};

struct Silu {
  template <class C>
  static C f(C x) {
    return x / (1 + std::exp(-x));
  }
};

// sigmoid's decomposition 1 / (1 + exp(-x)), computed wide and rounded once: never cancels (both tails are
// relatively accurate); x = -inf gives 0, +inf gives 1.
struct Sigmoid {
  template <class C>
  static C f(C x) {
    return 1 / (1 + std::exp(-x));
  }
};

// Taylor coefficients t_k of tanh(x) = sum t_k x^(2k+1), from tanh' = 1 - tanh^2: (2k+1) t_k = -sum t_i t_(k-1-i).
template <size_t N>
constexpr std::array<long double, N> tanh_taylor() {
  std::array<long double, N> t{};
  t[0] = 1;
  for (size_t k = 1; k < N; ++k) {
    long double s = 0;
    for (size_t i = 0; i < k; ++i) s += t[i] * t[k - 1 - i];
    t[k] = -s / static_cast<long double>(2 * k + 1);
  }
  return t;
}

// x - tanh(x) cancels for small x (tanh(0.44) rounded to f64 costs 16 ulp of the difference, tanh(1e-5) all of
// it). Below |x| = 1/2 the kernel sums x - tanh(x) = -sum_(k>=1) t_k x^(2k+1), whose terms shrink by about
// (2x / pi)^2 <= 0.1 each (23 terms reach 2^-70); above, the subtraction loses at most 4 bits, which wide_t absorbs
// (long double for f64). Zero gives +0 as the decomposition does (-0 - -0 = +0); inf and NaN pass through x - tanh.
struct Tanhshrink {
  static constexpr std::array<long double, 24> kTanh = tanh_taylor<24>();
  template <class C>
  static C f(C x) {
    if (!(std::fabs(x) < C(0.5))) return x - std::tanh(x);
    if (x == 0) return x - x;
    const C z = x * x;
    C p = -C(kTanh[kTanh.size() - 1]);
    for (size_t k = kTanh.size() - 2; k >= 1; --k) p = p * z - C(kTanh[k]);
    return x * z * p;
  }
};

// Dense f32 gelu_tanh / silu / sigmoid, 4 lanes at a time in double: num / (1 + exp(a)) with a = -2u or -x and num
// = x (1 for sigmoid). Lanes whose a is outside exp_pd's range or not finite (inf, NaN) take the scalar formula.
template <class Op>
__attribute__((target("avx2,fma"))) void sigmoid_like_f32_avx2(const float *a, float *o, int64_t lo, int64_t hi) {
  const __m256d lim = _mm256_set1_pd(708.0), one = _mm256_set1_pd(1.0);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  int64_t i = lo;
  for (; i + 4 <= hi; i += 4) {
    const __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(a + i));
    __m256d arg;
    if constexpr (std::is_same_v<Op, Silu> || std::is_same_v<Op, Sigmoid>) {
      arg = _mm256_sub_pd(_mm256_setzero_pd(), x);
    } else {
      const __m256d x3 = _mm256_mul_pd(_mm256_mul_pd(x, x), x);
      const __m256d u = _mm256_mul_pd(_mm256_fmadd_pd(x3, _mm256_set1_pd(kGeluCubic), x), _mm256_set1_pd(kSqrt2OverPi));
      arg = _mm256_mul_pd(u, _mm256_set1_pd(-2.0));
    }
    // |arg| <= 708 is false for NaN and inf.
    int ok = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_and_pd(arg, abs_mask), lim, _CMP_LE_OQ));
    const __m256d num = std::is_same_v<Op, Sigmoid> ? one : x;
    const __m256d r = _mm256_div_pd(num, _mm256_add_pd(one, exp_pd(_mm256_min_pd(_mm256_max_pd(arg, -lim), lim))));
    _mm_storeu_ps(o + i, _mm256_cvtpd_ps(r));
    if (ok != 0xf) {
      for (int k = 0; k < 4; ++k) {
        if (!((ok >> k) & 1)) o[i + k] = static_cast<float>(Op::f(static_cast<double>(a[i + k])));
      }
    }
  }
  for (; i < hi; ++i) o[i] = static_cast<float>(Op::f(static_cast<double>(a[i])));
}

// GCC 12 warns that the AVX-512 intrinsics' own placeholder operand (_mm512_undefined_*) is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// sigmoid_like_f32_avx2 on 8 double lanes, with no scalar lanes: t = e^(-|a|) (exp8_nonpos_pd, relative error
// < 1e-11, 2^n applied by vscalefpd so tiny t stays right) gives num / (1 + e^a) as num / (1 + t) for a <= 0 and
// num t / (1 + t) for a > 0, so the exponential never overflows. a = -inf gives num; a = +inf gives num * 0 (0 for
// sigmoid; NaN for silu and gelu_tanh at x = -inf, as their formulas -inf / inf give); NaN stays NaN.
template <class Op>
__attribute__((target("avx512f,avx2,fma"))) inline __m512d sigmoid_like8_pd(__m512d x) {
  __m512d arg;
  if constexpr (std::is_same_v<Op, Silu> || std::is_same_v<Op, Sigmoid>) {
    arg = _mm512_sub_pd(_mm512_setzero_pd(), x);
  } else {
    const __m512d x3 = _mm512_mul_pd(_mm512_mul_pd(x, x), x);
    const __m512d u = _mm512_mul_pd(_mm512_fmadd_pd(x3, _mm512_set1_pd(kGeluCubic), x), _mm512_set1_pd(kSqrt2OverPi));
    arg = _mm512_mul_pd(u, _mm512_set1_pd(-2.0));
  }
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d t = exp8_nonpos_pd(_mm512_sub_pd(_mm512_setzero_pd(), _mm512_abs_pd(arg)));
  const __m512d num = std::is_same_v<Op, Sigmoid> ? one : x;
  const __m512d top = _mm512_mask_mul_pd(num, _mm512_cmp_pd_mask(arg, _mm512_setzero_pd(), _CMP_GT_OQ), num, t);
  const __m512d y = _mm512_div_pd(top, _mm512_add_pd(one, t));
  return _mm512_mask_mov_pd(y, _mm512_cmp_pd_mask(arg, arg, _CMP_UNORD_Q), arg);  // NaN stays NaN
}

template <class Op>
__attribute__((target("avx512f,avx2,fma"))) void sigmoid_like_f32_avx512(const float *a, float *o, int64_t lo,
                                                                         int64_t hi) {
  int64_t i = lo;
  for (; i + 16 <= hi; i += 16) {
    const __m512 x = _mm512_loadu_ps(a + i);
    const __m256 y0 = _mm512_cvtpd_ps(sigmoid_like8_pd<Op>(_mm512_cvtps_pd(_mm512_castps512_ps256(x))));
    const __m256 y1 = _mm512_cvtpd_ps(
        sigmoid_like8_pd<Op>(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))));
    _mm256_storeu_ps(o + i, y0);
    _mm256_storeu_ps(o + i + 8, y1);
  }
  for (; i < hi; ++i) o[i] = static_cast<float>(Op::f(static_cast<double>(a[i])));
}

// The arithmetic of gelu16 for lanes with v = |x| <= 15.99 (others get garbage).
__attribute__((target("avx512f,avx2,fma"))) inline __m512 gelu16_core(__m512 x, __m512 v) {
  const Erfc16 e = half_erfc_sqrt2_16(v);
  // x <= 0: x erfc(v/sqrt2) / 2; x > 0: x - that
  const __m512 y = _mm512_scalef_ps(_mm512_fmadd_ps(x, e.hi, _mm512_mul_ps(x, e.lo)), e.n);
  return _mm512_mask_sub_ps(y, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), x, y);
}

// gelu of 16 floats: x/2 erfc(-x/sqrt2) from half_erfc_sqrt2_16 (vec_math.hpp) at v = |x|, which gives
// erfc(v/sqrt2) / 2 as (hi + lo) 2^n. For x <= 0, x hi + x lo rounded once (an FMA), then scaled by 2^n (rounding
// again only into the subnormal range); for x > 0, x - that (it is x d, d = erfc(x/sqrt2) / 2 <= 1/2, so its
// rounding costs at most 1/2 ulp of the result). |x| > 15.99 gives x (x > 0: d vanishes) or -0 (the exact value
// is below 1e-55); x = -inf gives NaN (-inf * 0 in the decomposition), +inf gives inf and NaN stays NaN.
__attribute__((target("avx512f,avx2,fma"))) inline __m512 gelu16(__m512 x) {
  const __m512 big = _mm512_set1_ps(15.99f);
  const __m512 ax = _mm512_abs_ps(x);
  const __mmask16 special = _mm512_cmp_ps_mask(ax, big, _CMP_NLE_UQ);  // |x| > 15.99, inf, NaN
  if (__builtin_expect(special == 0, 1)) return gelu16_core(x, ax);
  __m512 y = gelu16_core(x, _mm512_min_ps(ax, big));
  y = _mm512_mask_mov_ps(y, _mm512_mask_cmp_ps_mask(special, x, _mm512_setzero_ps(), _CMP_GT_OQ), x);
  y = _mm512_mask_mov_ps(y, _mm512_mask_cmp_ps_mask(special, x, _mm512_setzero_ps(), _CMP_LT_OQ),
                         _mm512_set1_ps(-0.0f));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), _mm512_set1_ps(NAN));
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

__attribute__((target("avx512f,avx2,fma"))) void gelu_f32_avx512(const float *a, float *o, int64_t lo, int64_t hi,
                                                                 bool stream) {
  int64_t i = lo;
  for (; i + 32 <= hi; i += 32) {
    const __m512 y0 = gelu16(_mm512_loadu_ps(a + i)), y1 = gelu16(_mm512_loadu_ps(a + i + 16));
    store16(o + i, y0, stream);
    store16(o + i + 16, y1, stream);
  }
  for (; i + 16 <= hi; i += 16) store16(o + i, gelu16(_mm512_loadu_ps(a + i)), stream);
  if (i < hi) {
    const __mmask16 m = static_cast<__mmask16>((1u << (hi - i)) - 1);
    _mm512_mask_storeu_ps(o + i, m, gelu16(_mm512_maskz_loadu_ps(m, a + i)));
  }
  if (stream) _mm_sfence();
}

#pragma GCC diagnostic pop

// Without AVX-512: 4 double lanes, x/2 erfc(-x/sqrt2) with erfc4_pd (relative error < 1e-11 wherever the result is
// not below f32's range), so the f32 result is the exact value rounded once. +-inf and NaN need no special lane:
// inf * 2 = inf, -inf * 0 = NaN (the decomposition's -inf * (1 + erf(-inf))), NaN stays NaN.
__attribute__((target("avx2,fma"))) void gelu_f32_avx2(const float *a, float *o, int64_t lo, int64_t hi, bool stream) {
  const __m256d c = _mm256_set1_pd(-kInvSqrt2), half = _mm256_set1_pd(0.5);
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    const __m256d x0 = _mm256_cvtps_pd(_mm_loadu_ps(a + i)), x1 = _mm256_cvtps_pd(_mm_loadu_ps(a + i + 4));
    const __m256d y0 = _mm256_mul_pd(_mm256_mul_pd(x0, half), erfc4_pd(_mm256_mul_pd(x0, c)));
    const __m256d y1 = _mm256_mul_pd(_mm256_mul_pd(x1, half), erfc4_pd(_mm256_mul_pd(x1, c)));
    store4(o + i, _mm256_cvtpd_ps(y0), stream);
    store4(o + i + 4, _mm256_cvtpd_ps(y1), stream);
  }
  for (; i < hi; ++i) o[i] = static_cast<float>(Gelu::f(static_cast<double>(a[i])));
  if (stream) _mm_sfence();
}

template <class Op>
pk_status k_activation(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    if (in.numel == 0) return PK_OK;
    return dispatch_std_float(l.inputs[0], [&](auto tag) -> pk_status {
      using T = decltype(tag);
      using C = wide_t<T>;
      constexpr int64_t kGrain = int64_t{1} << 14;
      if (in.contiguous && out.contiguous) {
        const T *x = in.at<T>(0);
        T *y = out.at<T>(0);
        if constexpr (std::is_same_v<T, float> && std::is_same_v<Op, Gelu>) {
          const bool stream = in.numel * 4 >= kStreamingBytes;
          if (have_isa(Isa::avx512)) {
            parallel_for(0, in.numel, kGrain, [&](int64_t lo, int64_t hi) { gelu_f32_avx512(x, y, lo, hi, stream); });
            return PK_OK;
          }
          if (have_isa(Isa::avx2)) {
            parallel_for(0, in.numel, kGrain, [&](int64_t lo, int64_t hi) { gelu_f32_avx2(x, y, lo, hi, stream); });
            return PK_OK;
          }
        }
        if constexpr (std::is_same_v<T, float> &&
                      (std::is_same_v<Op, GeluTanh> || std::is_same_v<Op, Silu> || std::is_same_v<Op, Sigmoid>)) {
          if (have_isa(Isa::avx512)) {
            parallel_for(0, in.numel, kGrain,
                         [&](int64_t lo, int64_t hi) { sigmoid_like_f32_avx512<Op>(x, y, lo, hi); });
            return PK_OK;
          }
          if (have_isa(Isa::avx2)) {
            parallel_for(0, in.numel, kGrain, [&](int64_t lo, int64_t hi) { sigmoid_like_f32_avx2<Op>(x, y, lo, hi); });
            return PK_OK;
          }
        }
        parallel_for(0, in.numel, kGrain, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) y[i] = kit::store_as<T>(Op::f(static_cast<C>(kit::load(x[i]))));
        });
        return PK_OK;
      }
      parallel_for(0, in.numel, kGrain, [&](int64_t lo, int64_t hi) {
        walk<2>(in.shape, in.ndim, {in.strides, out.strides}, {0, 0}, lo, hi, [&](const std::array<int64_t, 2> &o) {
          *out.at<T>(o[1]) = kit::store_as<T>(Op::f(load_as<T, C>(in, o[0])));
        });
      });
      return PK_OK;
    });
  });
}

}  // namespace

void register_nn_kernels(KernelRegistry &r) {
  r.add(PK_OP_SOFTMAX, k_softmax<pk_attrs_softmax, false>, kFloatStd);
  r.add(PK_OP_LOG_SOFTMAX, k_softmax<pk_attrs_log_softmax, true>, kFloatStd);
  r.add(PK_OP_LAYER_NORM, k_norm<pk_attrs_layer_norm, false>, kFloatStd);
  r.add(PK_OP_RMS_NORM, k_norm<pk_attrs_rms_norm, true>, kFloatStd);
  r.add(PK_OP_GELU, k_activation<Gelu>, kFloatStd);
  r.add(PK_OP_GELU_TANH, k_activation<GeluTanh>, kFloatStd);
  r.add(PK_OP_SILU, k_activation<Silu>, kFloatStd);
  r.add(PK_OP_SIGMOID, k_activation<Sigmoid>, kFloatStd);
  r.add(PK_OP_TANHSHRINK, k_activation<Tanhshrink>, kFloatStd);
}

}  // namespace pk::cpu
