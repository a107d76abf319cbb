// kernels_attention.cpp — native kernels for scaled_dot_product_attention and scaled_dot_product_attention_masked
// (a bool or additive mask broadcast to [B, Hq, L, S], grouped-query heads), f16, bf16, f32 and f64.
// Without them the runtime runs the decompositions: two batched matmuls, a softmax and full [B, H, L, S]
// temporaries (and, for the masked op, the broadcast mask materialized).
//
// Numerics: the contract is a bound relative to the decomposition evaluated exactly, so the kernels compute in
// double for f16/bf16/f32 and in long double for f64 and round once to the output dtype (attention_rows, with
// double-double scores), and f32, f16 and bf16 have a fast path (AVX-512: f32 lanes for ordinary scores, double lanes
// for larger ones, plain FMA sums, finite inputs only; see attention_fast). Both ops share the code.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "cpu_kernels.hpp"
#include "vec_math.hpp"

namespace pk::cpu {
namespace {

using kit::View;

// --- scaled_dot_product_attention -------------------------------------------------------------------------------

// A score as an unevaluated sum hi + lo: q . k summed with error-free transformations (exact products, TwoSum),
// so that scores far apart from their terms (q . k = 4.9e39 + 335 for bf16 inputs at the format's maximum) still
// keep their differences, which is all the softmax looks at.
template <class C>
struct Score {
  C hi = 0, lo = 0;
  void add(C x) {
    const C s = hi + x, bb = s - hi;
    lo += (hi - (s - bb)) + (x - bb);
    hi = s;
  }
  void add_product(C a, C b) {
    const C p = a * b;
    add(p);
    if (std::isfinite(p)) lo += std::fma(a, b, -p);
  }
  // + an additive mask term b, keeping the sum's rounding error in lo (a bias of -3e38 over a score of 2 still
  // leaves the score's differences to the softmax); a non-finite side keeps no tail.
  void add_bias(C b) {
    if (!std::isfinite(b) || !std::isfinite(hi)) {
      hi += b;
      lo = 0;
      return;
    }
    add(b);
    if (!std::isfinite(hi)) lo = 0;
  }
  // hi = the rounded value, lo the rest; infinities and NaN keep no tail (their TwoSum error is NaN).
  void finish(C scale) {
    const C h = hi * scale, l = std::isfinite(h) ? std::fma(hi, scale, -h) + lo * scale : C(0);
    hi = h + l;
    lo = std::isfinite(hi) ? l - (hi - h) : C(0);
  }
};

// One attention launch: q [B, Hq, L, E], k [B, Hkv, S, E], v [B, Hkv, S, Ev] (query head h reads kv head h / G),
// and the mask of scaled_dot_product_attention_masked, read in place through strides over [B, Hq, L, S] (0 where
// it broadcasts). The unmasked op 1700 has no mask, G = 1 and keeps its NaN for a row whose scores are all -inf;
// the masked op gives such a row 0 (its decomposition guards the max and the sum).
struct AttnArgs {
  View q, k, v, out;
  double scale = 0;
  bool causal = false;
  int64_t group = 1;           // Hq / Hkv
  const char *mask = nullptr;  // null: no mask
  bool mask_bool = false;      // bool (false hides the key), else q's dtype, added to the scaled score
  int64_t mst[4] = {0, 0, 0, 0};
  bool zero_empty_rows = false;

  int64_t mask_row(int64_t b, int64_t h, int64_t i) const { return b * mst[0] + h * mst[1] + i * mst[2]; }
};

// For each query row: scores = (q . k_j) * scale (hidden: -inf above the diagonal when causal, and where a bool mask
// is false; an additive mask term is added), p = softmax of the scores, out = sum_j p_j v_j, all in C. Every key is
// visited, hidden ones too: p_j = 0 times an infinite v is NaN in the decomposition, and so here. K and V of the
// current (batch, kv head) are copied to dense C buffers. Rows [lo, hi) of the B * Hq * L query rows, on the
// calling thread.
template <class T>
void attention_rows(const AttnArgs &a, int64_t lo, int64_t hi) {
  using C = wide_t<T>;
  const View &q = a.q, &k = a.k, &v = a.v, &out = a.out;
  const bool causal = a.causal;
  const int64_t H = q.shape[1], L = q.shape[2], E = q.shape[3];
  const int64_t S = k.shape[2], Ev = v.shape[3];
  std::vector<C> kb(static_cast<size_t>(S * E)), vb(static_cast<size_t>(S * Ev)), qb(static_cast<size_t>(E)),
      p(static_cast<size_t>(S)), o(static_cast<size_t>(Ev));
  std::vector<Score<C>> sc(static_cast<size_t>(S));
  int64_t cur = -1;
  for (int64_t row = lo; row < hi; ++row) {
    const int64_t bh = row / L, i = row % L, b = bh / H, h = bh % H, kh = h / a.group;
    if (b * k.shape[1] + kh != cur) {
      cur = b * k.shape[1] + kh;
      for (int64_t j = 0; j < S; ++j) {
        const int64_t kr = b * k.strides[0] + kh * k.strides[1] + j * k.strides[2];
        for (int64_t e = 0; e < E; ++e) kb[j * E + e] = load_as<T, C>(k, kr + e * k.strides[3]);
        const int64_t vr = b * v.strides[0] + kh * v.strides[1] + j * v.strides[2];
        for (int64_t e = 0; e < Ev; ++e) vb[j * Ev + e] = load_as<T, C>(v, vr + e * v.strides[3]);
      }
    }
    const int64_t qr = b * q.strides[0] + h * q.strides[1] + i * q.strides[2];
    for (int64_t e = 0; e < E; ++e) qb[e] = load_as<T, C>(q, qr + e * q.strides[3]);
    std::fill(o.begin(), o.end(), C(0));
    if (S > 0) {  // no keys: the empty sums give 0
      const int64_t mr = a.mask ? a.mask_row(b, h, i) : 0;
      Score<C> m{-kInf<C>, 0};
      bool nan = false;
      for (int64_t j = 0; j < S; ++j) {
        Score<C> &x = sc[static_cast<size_t>(j)];
        x = Score<C>{};
        bool hidden = causal && j > i;
        if (a.mask && a.mask_bool) hidden = hidden || a.mask[mr + j * a.mst[3]] == 0;
        if (hidden) {
          x.hi = -kInf<C>;
        } else {
          for (int64_t e = 0; e < E; ++e) x.add_product(qb[e], kb[j * E + e]);
          x.finish(static_cast<C>(a.scale));
          if (a.mask && !a.mask_bool)
            x.add_bias(static_cast<C>(kit::load(reinterpret_cast<const T *>(a.mask)[mr + j * a.mst[3]])));
        }
        nan |= std::isnan(x.hi);
        if (x.hi > m.hi || (x.hi == m.hi && x.lo > m.lo)) m = x;
      }
      if (nan) {
        m.hi = kNaN<C>;
      } else if (a.zero_empty_rows && m.hi == -kInf<C>) {
        m = Score<C>{};  // every key hidden: each weight exp(-inf) = 0, and the sum 0 is replaced by 1
      }
      C s = 0;
      for (int64_t j = 0; j < S; ++j) {
        // max = +inf or -inf: NaN, as in the decomposition; hi_j - hi_max is exact where it matters
        const Score<C> &x = sc[static_cast<size_t>(j)];
        p[j] = std::exp((x.hi - m.hi) + (x.lo - m.lo));
        s += p[j];
      }
      if (a.zero_empty_rows && s == 0) s = 1;
      for (int64_t j = 0; j < S; ++j) {
        const C pj = p[j] / s;
        for (int64_t e = 0; e < Ev; ++e) o[e] += pj * vb[j * Ev + e];
      }
    }
    const int64_t orow = b * out.strides[0] + h * out.strides[1] + i * out.strides[2];
    for (int64_t e = 0; e < Ev; ++e) *out.at<T>(orow + e * out.strides[3]) = kit::store_as<T>(o[e]);
  }
}

template <class T>
void attention(const AttnArgs &a) {
  const int64_t rows = a.q.shape[0] * a.q.shape[1] * a.q.shape[2];
  if (rows == 0 || a.v.shape[3] == 0) return;
  parallel_for(0, rows, row_grain(a.k.shape[2] * (a.q.shape[3] + a.v.shape[3]) + 1),
               [&](int64_t lo, int64_t hi) { attention_rows<T>(a, lo, hi); });
}

// --- the attention fast path (f32, f16, bf16 with AVX-512) ------------------------------------------------------
//
// The same softmax(scale q k^T) v as a blocked kernel with ordinary (FMA) accumulation, in one of two lane types:
//   - f32 lanes (16 per register), the path of ordinary attention: scores, exp, the softmax sum and p . v in f32,
//     each row scaled by 1 / its sum at the end. The contract (a bound: 16 ulp + 16 u max|out| + the change under a
//     backward error of 16 u on every input, docs/numerics.md) is one a careful f32 kernel meets: PyTorch's CPU
//     flash kernel and a plain f32 softmax(q k^T) v meet it too (tests/python/test_contracts_vs_torch.py). A chunk
//     takes it when its q and the head's k and v are finite and scale |q|max |k|max <= 2^14 / E, which keeps each
//     score's absolute error (at most E 2^-24 scale |q| |k|) below 2^-10;
//   - double lanes (8 per register) for larger scores up to scale |q|max |k|max <= 2^23 / E: the inputs widen
//     exactly, each score is within 2^-30 of exact and every weight within 2^-29 relative (exp8_nonpos_pd is 1e-11
//     relative), so the result is the exact one rounded once, up to a slip of about 2^-28 sum_j p_j |v_j|.
// Anything else (non-finite values, overflowing or cancelling scores, f16/bf16 extremes) runs attention_rows
// (double-double scores). |.|max is a bound on the largest row norm.
//
// Layout, for N lanes: the head's keys as panels of N (kp[(j / N) E N + e N + j % N], zero-padded to whole panels),
// values as rows of Evp = Ev rounded up to N (zero-padded). Query rows go in blocks of 32 and micro-blocks of 4:
// 4 x 4N scores per micro-kernel call (16 accumulators, q broadcast, k loaded), a group of 4 key panels serving the
// block's 8 micro-blocks from L1; softmax of each row in place; then p . v as 4 x 4N outputs, over tiles of 64 keys
// that likewise serve the whole block. Causal micro-blocks stop at the last key any of their rows sees. Heads are
// split into chunks of rows only when there are fewer than 16 of them.
constexpr int64_t kAttnRows = 4, kAttnBlock = 32, kAttnKeyTile = 64;

// GCC 12 warns that the AVX-512 intrinsics' own placeholder operand (_mm512_undefined_*) is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define PK_AVX512 __attribute__((target("avx512f,avx2,fma"))) static inline

// The fast path's arithmetic on one AVX-512 register: 8 doubles (LaneD) or 16 floats (LaneF). The kernels below are
// written once over these.
struct LaneD {
  using W = double;
  using V = __m512d;
  using M = __mmask8;
  static constexpr int64_t N = 8;
  PK_AVX512 V load(const W *p) { return _mm512_loadu_pd(p); }
  PK_AVX512 V maskz_load(M m, const W *p) { return _mm512_maskz_loadu_pd(m, p); }
  PK_AVX512 void store(W *p, V v) { _mm512_storeu_pd(p, v); }
  PK_AVX512 void mask_store(W *p, M m, V v) { _mm512_mask_storeu_pd(p, m, v); }
  PK_AVX512 V set1(W x) { return _mm512_set1_pd(x); }
  PK_AVX512 V zero() { return _mm512_setzero_pd(); }
  PK_AVX512 V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  PK_AVX512 V add(V a, V b) { return _mm512_add_pd(a, b); }
  PK_AVX512 V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  PK_AVX512 V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  PK_AVX512 V max(V a, V b) { return _mm512_max_pd(a, b); }
  PK_AVX512 W reduce_add(V v) { return _mm512_reduce_add_pd(v); }
  PK_AVX512 W reduce_max(V v) { return _mm512_reduce_max_pd(v); }
  PK_AVX512 V maskz_mov(M m, V v) { return _mm512_maskz_mov_pd(m, v); }
  PK_AVX512 V blend(M m, V a, V b) { return _mm512_mask_blend_pd(m, a, b); }  // b where m
  PK_AVX512 M lt(V a, V b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
  PK_AVX512 M first(int64_t n) { return n >= N ? M(0xff) : n <= 0 ? M(0) : M((1u << n) - 1); }
  // e^x for x <= 0 (-inf gives 0): relative error < 1e-11.
  PK_AVX512 V exp_nonpos(V x) { return exp8_nonpos_pd(x); }
  // Widens N elements of f32 to W.
  PK_AVX512 V from_f32(const float *p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
  PK_AVX512 V from_f32(M m, const float *p) {
    return _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps(m, p)));
  }
  PK_AVX512 void store_f32(float *p, V v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v)); }
};

struct LaneF {
  using W = float;
  using V = __m512;
  using M = __mmask16;
  static constexpr int64_t N = 16;
  PK_AVX512 V load(const W *p) { return _mm512_loadu_ps(p); }
  PK_AVX512 V maskz_load(M m, const W *p) { return _mm512_maskz_loadu_ps(m, p); }
  PK_AVX512 void store(W *p, V v) { _mm512_storeu_ps(p, v); }
  PK_AVX512 void mask_store(W *p, M m, V v) { _mm512_mask_storeu_ps(p, m, v); }
  PK_AVX512 V set1(W x) { return _mm512_set1_ps(x); }
  PK_AVX512 V zero() { return _mm512_setzero_ps(); }
  PK_AVX512 V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  PK_AVX512 V add(V a, V b) { return _mm512_add_ps(a, b); }
  PK_AVX512 V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  PK_AVX512 V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  PK_AVX512 V max(V a, V b) { return _mm512_max_ps(a, b); }
  PK_AVX512 W reduce_add(V v) { return _mm512_reduce_add_ps(v); }
  PK_AVX512 W reduce_max(V v) { return _mm512_reduce_max_ps(v); }
  PK_AVX512 V maskz_mov(M m, V v) { return _mm512_maskz_mov_ps(m, v); }
  PK_AVX512 V blend(M m, V a, V b) { return _mm512_mask_blend_ps(m, a, b); }
  PK_AVX512 M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  PK_AVX512 M first(int64_t n) { return n >= N ? M(0xffff) : n <= 0 ? M(0) : M((1u << n) - 1); }
  // e^x for x <= 0 (-inf gives 0): exp16_reduced's polynomial (about 1 ulp), 2^n applied by vscalefps so that
  // results below the normal range are subnormal or 0; x is clamped at -110, where e^x is below half the least
  // subnormal.
  PK_AVX512 V exp_nonpos(V x) {
    __m512 n;
    const __m512 y = exp16_reduced(_mm512_max_ps(_mm512_set1_ps(-110.0f), x), n);
    return _mm512_scalef_ps(y, n);
  }
  PK_AVX512 V from_f32(const float *p) { return _mm512_loadu_ps(p); }
  PK_AVX512 V from_f32(M m, const float *p) { return _mm512_maskz_loadu_ps(m, p); }
  PK_AVX512 void store_f32(float *p, V v) { _mm512_storeu_ps(p, v); }
};

#undef PK_AVX512

// The register-blocked product of both attention matmuls: out[r][c*N + l] (+)= sum over k in [k0, k1) of
// a[r * a_stride + k] * b[k * b_k + c * b_c + l] for kAttnRows rows and C panels of N lanes. Scores read k packed in
// panels (b_k = N, b_c = the panel size); p . v reads v rows (b_k = the row stride, b_c = N).
template <class L, int C>
__attribute__((target("avx512f,avx2,fma"))) inline void attn_block_kernel(const typename L::W *a, int64_t a_stride,
                                                                          int64_t k0, int64_t k1,
                                                                          const typename L::W *b, int64_t b_k,
                                                                          int64_t b_c, typename L::W *out,
                                                                          int64_t out_stride, bool accumulate) {
  typename L::V acc[kAttnRows][C];
#pragma GCC unroll 4
  for (int r = 0; r < kAttnRows; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = accumulate ? L::load(out + r * out_stride + c * L::N) : L::zero();
  for (int64_t k = k0; k < k1; ++k) {
    typename L::V bv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) bv[c] = L::load(b + k * b_k + c * b_c);
#pragma GCC unroll 4
    for (int r = 0; r < kAttnRows; ++r) {
      const typename L::V av = L::set1(a[r * a_stride + k]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = L::fma(av, bv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kAttnRows; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) L::store(out + r * out_stride + c * L::N, acc[r][c]);
}

// s[0, lim) <- exp(s_j - max), s[lim, npad) <- 0 (npad a multiple of N); returns the sum. A row whose scores are
// all -inf (every key hidden by a mask, or lim = 0) comes out 0 with sum 0; unmasked finite inputs never give one.
template <class L>
__attribute__((target("avx512f,avx2,fma"))) inline typename L::W attn_softmax_row(typename L::W *s, int64_t lim,
                                                                                  int64_t npad) {
  using W = typename L::W;
  const typename L::V ninf = L::set1(-kInf<W>);
  typename L::V mv = ninf;
  int64_t j = 0;
  for (; j + L::N <= lim; j += L::N) mv = L::max(mv, L::load(s + j));
  if (j < lim) mv = L::max(mv, L::blend(L::first(lim - j), ninf, L::maskz_load(L::first(lim - j), s + j)));
  const W mx = L::reduce_max(mv);
  const typename L::V m = L::set1(mx == -kInf<W> ? W(0) : mx);
  typename L::V z = L::zero();
  for (j = 0; j < npad; j += L::N) {
    const typename L::V e = L::maskz_mov(L::first(lim - j), L::exp_nonpos(L::sub(L::load(s + j), m)));
    L::store(s + j, e);
    z = L::add(z, e);
  }
  return L::reduce_add(z);
}

// Converts n elements of T (stride st) to W at dst, zero-padded to a multiple of N when `pad`; returns their squares
// summed (in double) lane-wise over 8 lanes (lane l: elements l, l + 8, ...), so that a max over rows taken lane by
// lane and then summed bounds the largest squared row norm from above. Not finite iff some element is not.
template <class L, class T>
__attribute__((target("avx512f,avx2,fma"))) inline __m512d attn_widen(const T *src, int64_t st, int64_t n,
                                                                      typename L::W *dst, bool pad) {
  using W = typename L::W;
  int64_t e = 0;
  if constexpr (std::is_same_v<T, float> && std::is_same_v<W, double>) {
    if (st == 1)
      for (; e + 8 <= n; e += 8) _mm512_storeu_pd(dst + e, _mm512_cvtps_pd(_mm256_loadu_ps(src + e)));
  } else if constexpr (std::is_same_v<T, float>) {
    if (st == 1) {
      std::copy(src, src + n, dst);
      e = n;
    }
  }
  for (; e < n; ++e) dst[e] = static_cast<W>(kit::load(src[e * st]));
  if (pad)
    for (; e % L::N != 0; ++e) dst[e] = 0;
  __m512d acc = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = n - i >= 8 ? __mmask8(0xff) : __mmask8((1u << (n - i)) - 1);
    __m512d x;
    if constexpr (std::is_same_v<W, double>) {
      x = _mm512_maskz_loadu_pd(m, dst + i);
    } else {
      x = _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps(__mmask16(m), dst + i)));
    }
    acc = _mm512_fmadd_pd(x, x, acc);
  }
  return acc;
}

// The plan of one launch: shapes, and units of work (head, chunk of rows).
struct AttnPlan {
  int64_t H, L, E, S, Ev, per_head, chunk_rows;
  double scale;
  bool causal;
};

// The mask rows of one unit (query rows [r_lo, r_hi) of head h) for the fast path: per row, the end of its visible
// keys (1 + the last key a bool mask shows or an additive term keeps), and whether the unit may take the fast path.
// An additive term must be -inf, at most 2^23 in magnitude (the error bound above then holds for score + term), or
// below -2^64 in a row that also has a term of the second kind among the keys it sees: such a term hides its key
// exactly (exp(-2^64 + 2^25) is 0 in double, and far below any output's last place in exact arithmetic), so it is
// taken as -inf (PyTorch's finfo.min masks). A row of only huge negative terms (whose exact softmax is that of its
// scores: the terms cancel), a NaN, +inf or other large term sends the unit to attention_rows. Keys a causal
// launch hides do not count: the decomposition replaces them by -inf whatever the mask says. term_max receives the
// largest magnitude of the additive terms that count (0 for a bool mask).
// f32 rows read densely: 16 terms at a time. Bits of `ok` are the lanes inside the row.
__attribute__((target("avx512f,avx2,fma"))) inline bool attn_mask_row_f32(const float *m, int64_t n, int64_t &end,
                                                                          bool &normal, bool &huge, double &term_max) {
  const __m512 lim = _mm512_set1_ps(0x1p23f), neg_huge = _mm512_set1_ps(-0x1p64f), ninf = _mm512_set1_ps(-kInf<float>);
  __m512 big = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 ok = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(ok, m + j);
    const __mmask16 nrm = _mm512_mask_cmp_ps_mask(ok, _mm512_abs_ps(x), lim, _CMP_LE_OQ);
    const __mmask16 hg = _mm512_mask_cmp_ps_mask(ok, x, neg_huge, _CMP_LT_OQ);  // -inf too
    if ((nrm | hg) != ok) return false;
    if (nrm) {
      normal = true;
      end = j + 32 - __builtin_clz(static_cast<uint32_t>(nrm));
      big = _mm512_max_ps(big, _mm512_maskz_mov_ps(nrm, _mm512_abs_ps(x)));
    }
    if (hg & ~_mm512_mask_cmp_ps_mask(ok, x, ninf, _CMP_EQ_OQ)) huge = true;
  }
  term_max = std::max(term_max, static_cast<double>(_mm512_reduce_max_ps(big)));
  return true;
}

template <class T>
__attribute__((target("avx512f,avx2,fma"))) bool attn_mask_unit(const AttnArgs &a, int64_t b, int64_t h, int64_t r_lo,
                                                                int64_t r_hi, int64_t S, int64_t *vis_end,
                                                                double &term_max) {
  term_max = 0;
  for (int64_t i = r_lo; i < r_hi; ++i) {
    const int64_t mr = a.mask_row(b, h, i), st = a.mst[3], seen = a.causal ? std::min(S, i + 1) : S;
    int64_t end = 0;
    if (a.mask_bool) {
      for (int64_t j = 0; j < seen; ++j)
        if (a.mask[mr + j * st]) end = j + 1;
    } else {
      const T *m = reinterpret_cast<const T *>(a.mask);
      bool normal = false, huge = false;
      if constexpr (std::is_same_v<T, float>) {
        if (st == 1) {
          if (!attn_mask_row_f32(m + mr, seen, end, normal, huge, term_max) || (huge && !normal)) return false;
          vis_end[i - r_lo] = end;
          continue;
        }
      }
      for (int64_t j = 0; j < seen; ++j) {
        const double x = static_cast<double>(kit::load(m[mr + j * st]));
        if (x == -kInf<double>) continue;
        if (std::fabs(x) <= 0x1p23) {
          normal = true;
          end = j + 1;
          term_max = std::max(term_max, std::fabs(x));
        } else if (x < -0x1p64) {
          huge = true;
        } else {
          return false;
        }
      }
      if (huge && !normal) return false;
    }
    vis_end[i - r_lo] = end;
  }
  return true;
}

// Row i's mask over its first lim scores s (already scaled): hidden keys to -inf, additive terms added (the huge
// negative ones attn_mask_unit admitted as -inf).
template <class L, class T>
__attribute__((target("avx512f,avx2,fma"))) void attn_apply_mask(const AttnArgs &a, int64_t b, int64_t h, int64_t i,
                                                                 typename L::W *s, int64_t lim) {
  using W = typename L::W;
  const int64_t mr = a.mask_row(b, h, i), st = a.mst[3];
  if (a.mask_bool) {
    for (int64_t j = 0; j < lim; ++j)
      if (!a.mask[mr + j * st]) s[j] = -kInf<W>;
    return;
  }
  const T *m = reinterpret_cast<const T *>(a.mask);
  if constexpr (std::is_same_v<T, float>) {
    if (st == 1) {  // N terms at a time
      const typename L::V neg_huge = L::set1(W(-0x1p64)), ninf = L::set1(-kInf<W>);
      for (int64_t j = 0; j < lim; j += L::N) {
        const typename L::M ok = L::first(lim - j);
        const typename L::V x = L::from_f32(ok, m + mr + j);
        const typename L::V sum = L::add(L::maskz_load(ok, s + j), x);
        L::mask_store(s + j, ok, L::blend(L::lt(x, neg_huge), sum, ninf));
      }
      return;
    }
  }
  for (int64_t j = 0; j < lim; ++j) {
    const double x = static_cast<double>(kit::load(m[mr + j * st]));
    s[j] = x < -0x1p64 ? -kInf<W> : static_cast<W>(s[j] + x);
  }
}

// The fast path's per-thread buffers for one lane type, and the kv head they hold.
template <class L>
struct AttnBuffers {
  using W = typename L::W;
  int64_t Sp = 0, Evp = 0;  // S and Ev rounded up to N
  std::vector<W> kp, vb, qb, sc, ob;
  int64_t head = -1;  // b * Hkv + kv head of kp and vb, -1 for none
  bool head_finite = true;
  double kmax2 = 0;

  AttnBuffers(const AttnPlan &pl)
      : Sp((pl.S + L::N - 1) / L::N * L::N),
        Evp((pl.Ev + L::N - 1) / L::N * L::N),
        kp(static_cast<size_t>(Sp * pl.E)),
        vb(static_cast<size_t>(pl.S * Evp)),
        qb(static_cast<size_t>((pl.chunk_rows + kAttnRows) * pl.E)),
        sc(static_cast<size_t>(kAttnBlock * Sp)),
        ob(static_cast<size_t>(kAttnBlock * Evp)) {}
};

// Converts the head's keys and values (kv head kh of batch b) into bf unless it holds them: keys as N-key panels,
// values as padded rows. Records whether all are finite and a bound on the largest squared key norm.
template <class L, class T>
__attribute__((target("avx512f,avx2,fma"))) void attn_widen_head(const AttnArgs &a, const AttnPlan &pl, int64_t b,
                                                                 int64_t kh, AttnBuffers<L> &bf) {
  const int64_t id = b * a.k.shape[1] + kh;
  if (bf.head == id) return;
  bf.head = id;
  const View &k = a.k, &v = a.v;
  const int64_t E = pl.E, S = pl.S, Ev = pl.Ev, N = L::N;
  std::vector<typename L::W> row(static_cast<size_t>(E));
  __m512d kmax = _mm512_setzero_pd(), sum = _mm512_setzero_pd();
  std::fill(bf.kp.begin(), bf.kp.end(), typename L::W(0));
  for (int64_t j = 0; j < S; ++j) {
    const __m512d n2 = attn_widen<L>(k.at<T>(b * k.strides[0] + kh * k.strides[1] + j * k.strides[2]), k.strides[3], E,
                                     row.data(), false);
    kmax = _mm512_max_pd(kmax, n2);
    sum = _mm512_add_pd(sum, n2);  // NaN or inf if any k is not finite (max could drop a NaN)
    typename L::W *panel = bf.kp.data() + (j / N) * E * N + j % N;
    for (int64_t e = 0; e < E; ++e) panel[e * N] = row[e];
    sum = _mm512_add_pd(sum, attn_widen<L>(v.at<T>(b * v.strides[0] + kh * v.strides[1] + j * v.strides[2]),
                                           v.strides[3], Ev, bf.vb.data() + j * bf.Evp, true));
  }
  bf.kmax2 = _mm512_reduce_add_pd(kmax);
  bf.head_finite = std::isfinite(_mm512_reduce_add_pd(sum));
}

// Rows [i0, i0 + nb) of head (b, h), their scaled queries at qs: scores, mask, softmax and p . v, stored to out.
// vis: the rows' visible-key ends from attn_mask_unit (masked launches), indexed from i0.
template <class L, class T>
__attribute__((target("avx512f,avx2,fma"))) void attention_fast_block(const AttnArgs &a, const AttnPlan &pl, int64_t b,
                                                                      int64_t h, int64_t i0, int64_t nb,
                                                                      const typename L::W *qs, const int64_t *vis,
                                                                      AttnBuffers<L> &bf) {
  using W = typename L::W;
  constexpr int64_t N = L::N;
  const int64_t E = pl.E, S = pl.S, Ev = pl.Ev, Sp = bf.Sp, Evp = bf.Evp;
  const W *kp = bf.kp.data(), *vb = bf.vb.data();
  W *sc = bf.sc.data(), *ob = bf.ob.data();
  const bool causal = pl.causal;
  const View &out = a.out;
  const int64_t nmb = (nb + kAttnRows - 1) / kAttnRows;
  int64_t ncols[kAttnBlock / kAttnRows], npan[kAttnBlock / kAttnRows], max_cols = 0, max_pan = 0;
  W z[kAttnBlock];
  for (int64_t m = 0; m < nmb; ++m) {
    ncols[m] = causal ? std::min(S, i0 + (m + 1) * kAttnRows) : S;  // the last key any row of m sees, + 1
    if (vis != nullptr) {  // keys past every row's last visible one are skipped (fully hidden key panels)
      int64_t end = 0;
      for (int64_t r = m * kAttnRows; r < std::min(nb, (m + 1) * kAttnRows); ++r) end = std::max(end, vis[r]);
      ncols[m] = std::min(ncols[m], end);
    }
    npan[m] = (ncols[m] + N - 1) / N;
    max_cols = std::max(max_cols, ncols[m]);
    max_pan = std::max(max_pan, npan[m]);
  }
  for (int64_t pg = 0; pg < max_pan; pg += 4) {
    for (int64_t m = 0; m < nmb; ++m) {
      const W *qm = qs + m * kAttnRows * E;
      W *sm = sc + m * kAttnRows * Sp;
      if (pg + 4 <= npan[m]) {
        attn_block_kernel<L, 4>(qm, E, 0, E, kp + pg * E * N, N, E * N, sm + pg * N, Sp, false);
      } else {
        for (int64_t pn = pg; pn < npan[m]; ++pn)
          attn_block_kernel<L, 1>(qm, E, 0, E, kp + pn * E * N, N, E * N, sm + pn * N, Sp, false);
      }
    }
  }
  for (int64_t r = 0; r < nmb * kAttnRows; ++r) {
    const int64_t lim = std::min(causal ? std::min(S, i0 + r + 1) : S, ncols[r / kAttnRows]);
    if (vis != nullptr && r < nb) attn_apply_mask<L, T>(a, b, h, i0 + r, sc + r * Sp, lim);
    z[r] = attn_softmax_row<L>(sc + r * Sp, lim, npan[r / kAttnRows] * N);
  }
  for (int64_t m = 0; m < nmb; ++m)  // micro-blocks that see no key: p . v writes nothing there
    if (ncols[m] == 0) std::fill(ob + m * kAttnRows * Evp, ob + (m + 1) * kAttnRows * Evp, W(0));
  for (int64_t j0 = 0; j0 < max_cols; j0 += kAttnKeyTile) {
    for (int64_t c0 = 0; c0 < Evp; c0 += 4 * N) {
      for (int64_t m = 0; m < nmb; ++m) {
        if (j0 >= ncols[m]) continue;
        const int64_t j1 = std::min(j0 + kAttnKeyTile, ncols[m]);
        const W *pm = sc + m * kAttnRows * Sp;
        W *om = ob + m * kAttnRows * Evp;
        if (c0 + 4 * N <= Evp) {
          attn_block_kernel<L, 4>(pm, Sp, j0, j1, vb + c0, Evp, N, om + c0, Evp, j0 > 0);
        } else {
          for (int64_t c = c0; c < Evp; c += N)
            attn_block_kernel<L, 1>(pm, Sp, j0, j1, vb + c, Evp, N, om + c, Evp, j0 > 0);
        }
      }
    }
  }
  for (int64_t r = 0; r < nb; ++r) {
    T *orow = out.at<T>(b * out.strides[0] + h * out.strides[1] + (i0 + r) * out.strides[2]);
    const W *o = ob + r * Evp;
    const W zr = z[r] > 0 ? 1 / z[r] : W(0);  // a fully hidden row (sum 0) is 0
    if constexpr (std::is_same_v<T, float>) {
      if (out.strides[3] == 1) {
        const typename L::V zv = L::set1(zr);
        int64_t e = 0;
        for (; e + N <= Ev; e += N) L::store_f32(orow + e, L::mul(L::load(o + e), zv));
        for (; e < Ev; ++e) orow[e] = static_cast<float>(o[e] * zr);
        continue;
      }
    }
    for (int64_t e = 0; e < Ev; ++e) orow[e * out.strides[3]] = kit::store_as<T>(o[e] * zr);
  }
}

// Widens the chunk's queries (rows [r_lo, r_hi) of head (b, h)) into bf.qb, scaled, with whole micro-blocks of zero
// rows after them; returns scale |q|max (infinite or NaN when some q is not finite).
template <class L, class T>
__attribute__((target("avx512f,avx2,fma"))) double attn_widen_queries(const AttnArgs &a, const AttnPlan &pl, int64_t b,
                                                                      int64_t h, int64_t r_lo, int64_t r_hi,
                                                                      AttnBuffers<L> &bf) {
  using W = typename L::W;
  const View &q = a.q;
  const int64_t E = pl.E;
  __m512d qmax = _mm512_setzero_pd(), qsumv = _mm512_setzero_pd();
  for (int64_t i = r_lo; i < r_hi; ++i) {
    const __m512d n2 = attn_widen<L>(q.at<T>(b * q.strides[0] + h * q.strides[1] + i * q.strides[2]), q.strides[3], E,
                                     bf.qb.data() + (i - r_lo) * E, false);
    qmax = _mm512_max_pd(qmax, n2);
    qsumv = _mm512_add_pd(qsumv, n2);
  }
  const double qsum = _mm512_reduce_add_pd(qsumv);
  const double qn = std::fabs(pl.scale) * std::sqrt(_mm512_reduce_add_pd(qmax));  // bounds |q scale|
  const int64_t n = (r_hi - r_lo) * E;
  const typename L::V sv = L::set1(static_cast<W>(pl.scale));
  int64_t e = 0;
  for (; e + L::N <= n; e += L::N) L::store(bf.qb.data() + e, L::mul(L::load(bf.qb.data() + e), sv));
  for (; e < n; ++e) bf.qb[e] *= static_cast<W>(pl.scale);
  // rows past the chunk's end up to a whole block: zeros (computed, never stored)
  std::fill(bf.qb.begin() + n, bf.qb.begin() + (r_hi - r_lo + kAttnRows - 1) / kAttnRows * kAttnRows * E, W(0));
  return std::isfinite(qsum) ? qn : qsum;
}

template <class L, class T>
__attribute__((target("avx512f,avx2,fma"))) void attention_fast_chunk(const AttnArgs &a, const AttnPlan &pl, int64_t b,
                                                                      int64_t h, int64_t r_lo, int64_t r_hi,
                                                                      const int64_t *vis, AttnBuffers<L> &bf) {
  // Blocks of kAttnBlock rows, so that a group of key panels (or a tile of values) loaded into L1 serves all of the
  // block's 4-row micro-blocks before the next is loaded.
  for (int64_t i0 = r_lo; i0 < r_hi; i0 += kAttnBlock)
    attention_fast_block<L, T>(a, pl, b, h, i0, std::min(kAttnBlock, r_hi - i0), bf.qb.data() + (i0 - r_lo) * pl.E,
                               vis ? vis + (i0 - r_lo) : nullptr, bf);
}

template <class T>
void attention_fast_units(const AttnArgs &a, const AttnPlan &pl, int64_t lo, int64_t hi) {
  const int64_t H = pl.H, L = pl.L;
  const int64_t per_head = pl.per_head, chunk_rows = pl.chunk_rows;
  // Score bounds of the two lane types (see the section's comment): f32 lanes keep every score within 2^-10,
  // double lanes within 2^-30.
  const double limit_f = std::ldexp(1.0, 14) / static_cast<double>(std::max<int64_t>(pl.E, 1));
  const double limit_d = std::ldexp(1.0, 23) / static_cast<double>(std::max<int64_t>(pl.E, 1));
  AttnBuffers<LaneF> bf(pl);
  std::unique_ptr<AttnBuffers<LaneD>> bd;  // made when a chunk needs double lanes
  std::vector<int64_t> vis(static_cast<size_t>(a.mask ? chunk_rows : 0));
  for (int64_t u = lo; u < hi; ++u) {
    const int64_t bh = u / per_head, b = bh / H, h = bh % H, kh = h / a.group;
    const int64_t r_lo = (u % per_head) * chunk_rows, r_hi = std::min(L, r_lo + chunk_rows);
    double term_max = 0;
    if (a.mask && !attn_mask_unit<T>(a, b, h, r_lo, r_hi, pl.S, vis.data(), term_max)) {
      attention_rows<T>(a, bh * L + r_lo, bh * L + r_hi);
      continue;
    }
    const int64_t *v = a.mask ? vis.data() : nullptr;
    attn_widen_head<LaneF, T>(a, pl, b, kh, bf);
    const double qn = attn_widen_queries<LaneF, T>(a, pl, b, h, r_lo, r_hi, bf);
    if (bf.head_finite && qn * std::sqrt(bf.kmax2) <= limit_f && term_max <= limit_f) {
      attention_fast_chunk<LaneF, T>(a, pl, b, h, r_lo, r_hi, v, bf);
      continue;
    }
    // Larger scores (or an f32 overflow of the norms, which double holds): double lanes, if they bound them.
    if (!bd) bd = std::make_unique<AttnBuffers<LaneD>>(pl);
    attn_widen_head<LaneD, T>(a, pl, b, kh, *bd);
    const double qd = attn_widen_queries<LaneD, T>(a, pl, b, h, r_lo, r_hi, *bd);
    if (bd->head_finite && qd <= 0x1p1000 && qd * std::sqrt(bd->kmax2) <= limit_d) {
      attention_fast_chunk<LaneD, T>(a, pl, b, h, r_lo, r_hi, v, *bd);
      continue;
    }
    attention_rows<T>(a, bh * L + r_lo, bh * L + r_hi);
  }
}

#pragma GCC diagnostic pop

template <class T>
void attention_fast(const AttnArgs &a) {
  const View &q = a.q;
  AttnPlan pl;
  pl.H = q.shape[1];
  pl.L = q.shape[2];
  pl.E = q.shape[3];
  pl.S = a.k.shape[2];
  pl.Ev = a.v.shape[3];
  pl.scale = a.scale;
  pl.causal = a.causal;
  // Heads are split into chunks of rows until there are about 16 units (each of >= 32 rows).
  const int64_t BH = q.shape[0] * pl.H;
  int64_t per_head = 1;
  if (BH < 16) per_head = std::max<int64_t>(1, std::min<int64_t>((16 + BH - 1) / BH, pl.L / 32));
  pl.chunk_rows = ((pl.L + per_head - 1) / per_head + kAttnRows - 1) / kAttnRows * kAttnRows;
  pl.per_head = (pl.L + pl.chunk_rows - 1) / pl.chunk_rows;
  const int64_t work = std::max<int64_t>(1, pl.chunk_rows * pl.S * (pl.E + pl.Ev) / (pl.causal ? 2 : 1));
  parallel_for(0, BH * pl.per_head, std::max<int64_t>(1, (int64_t{1} << 16) / work),
               [&](int64_t lo, int64_t hi) { attention_fast_units<T>(a, pl, lo, hi); });
}

// Both ops: the fast path where AVX-512 is there and the dtype is narrower than f64, else the exact rows.
pk_status run_attention(const Launch &l, const AttnArgs &a) {
  return dispatch_std_float(l.inputs[0], [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, double>) {
      if (have_isa(Isa::avx512) && a.q.numel > 0 && a.k.shape[2] > 0 && a.v.shape[3] > 0) {
        attention_fast<T>(a);
        return PK_OK;
      }
    }
    attention<T>(a);
    return PK_OK;
  });
}

AttnArgs attention_args(const Launch &l, double scale, int32_t is_causal) {
  AttnArgs a;
  a.q = kit::view_of(l.inputs[0]);
  a.k = kit::view_of(l.inputs[1]);
  a.v = kit::view_of(l.inputs[2]);
  a.out = kit::view_of(l.outputs[0]);
  a.scale = scale;
  a.causal = is_causal != 0;
  return a;
}

pk_status k_attention(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &at = attrs_of<pk_attrs_scaled_dot_product_attention>(l);
    return run_attention(l, attention_args(l, at.scale, at.is_causal));
  });
}

// The mask is read where it lies: an axis it broadcasts over (absent, or of extent 1) gets stride 0.
pk_status k_attention_masked(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &at = attrs_of<pk_attrs_scaled_dot_product_attention_masked>(l);
    AttnArgs a = attention_args(l, at.scale, at.is_causal);
    const View m = kit::view_of(l.inputs[3]);
    a.mask = m.base;
    a.mask_bool = l.inputs[3].dtype.code == PK_DTYPE_CODE_BOOL;
    for (int32_t ax = 0; ax < 4; ++ax) {
      const int32_t md = ax - (4 - m.ndim);
      a.mst[ax] = md < 0 || m.shape[md] == 1 ? 0 : m.strides[md];
    }
    a.group = a.k.shape[1] > 0 ? std::max<int64_t>(1, a.q.shape[1] / a.k.shape[1]) : 1;
    a.zero_empty_rows = true;
    return run_attention(l, a);
  });
}

}  // namespace

void register_attention_kernels(KernelRegistry &r) {
  r.add(PK_OP_SCALED_DOT_PRODUCT_ATTENTION, k_attention, kFloatStd);
  r.add(PK_OP_SCALED_DOT_PRODUCT_ATTENTION_MASKED, k_attention_masked, kFloatStd);
}

}  // namespace pk::cpu
