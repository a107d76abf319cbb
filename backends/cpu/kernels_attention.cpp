// kernels_attention.cpp — native kernels for scaled_dot_product_attention and scaled_dot_product_attention_masked
// (a bool or additive mask broadcast to [B, Hq, L, S], grouped-query heads), f16, bf16, f32 and f64.
// Without them the runtime runs the decompositions: two batched matmuls, a softmax and full [B, H, L, S]
// temporaries (and, for the masked op, the broadcast mask materialized).
//
// Numerics: the contract is a bound relative to the decomposition evaluated exactly, so the kernels compute in
// double for f16/bf16/f32 and in long double for f64 and round once to the output dtype (attention_rows, with
// double-double scores), and f32, f16 and bf16 have a fast path (AVX-512, double lanes with plain FMA sums, for
// finite inputs of ordinary size; see attention_fast). Both ops share the code; the unmasked op keeps its results.
#include <immintrin.h>

#include <algorithm>
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
// The same softmax(scale q k^T) v, every operation in double with ordinary (FMA) accumulation: the inputs widen
// exactly and q.k in double is off by at most E 2^-53 scale |q| |k|, so the scores keep about 30 bits more than
// f32 would give them (in f32, rounding the scores alone costs about 50 output ulps at [8, 8, 256, 64]: a score's
// absolute error is a relative error of its weight, and f32 sums of the p.v products cost about 20 more). exp
// (exp8_nonpos_pd, 1e-11 relative) and the p.v sums are double too, and each row is scaled by 1 / its sum once at
// the end: the result is the exact one rounded once to T, up to a slip of about 2^-28 sum_j p_j |v_j|. A (batch,
// head, chunk of rows) takes it only when all of its q, all of the head's k and v are finite and
// scale |q|max |k|max E <= 2^23 (|.|max: a bound on the largest row norm), so that every score is within 2^-30
// of exact and every weight within 2^-29 relative; otherwise the chunk runs attention_rows (double-double scores:
// non-finite values, overflowing or cancelling scores, f16/bf16 extremes).
//
// Layout: the head's keys as panels of 8 (kp[(j / 8) E 8 + e 8 + j % 8], zero-padded to whole panels), values as
// rows of Evp = Ev rounded up to 8 (zero-padded). Query rows go in blocks of 32 and micro-blocks of 4: 4 x 32
// scores per micro-kernel call (16 accumulators, q broadcast, k loaded), a group of 4 key panels (16 KB at E = 64)
// serving the block's 8 micro-blocks from L1; softmax of each row in place; then p.v as 4 x 32 outputs, over tiles
// of 64 keys that likewise serve the whole block. Causal micro-blocks stop at the last key any of their rows sees.
// Heads are split into chunks of rows only when there are fewer than 16 of them.
constexpr int64_t kAttnRows = 4, kAttnBlock = 32, kAttnKeyTile = 64;

// GCC 12 warns that the AVX-512 intrinsics' own placeholder operand (_mm512_undefined_*) is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The register-blocked product of both attention matmuls: out[r][c*8 + l] (+)= sum over k in [k0, k1) of
// a[r * a_stride + k] * b[k * b_k + c * b_c + l] for kAttnRows rows and C panels of 8 doubles. Scores read k
// packed in panels (b_k = 8, b_c = the panel size); p . v reads v rows (b_k = the row stride, b_c = 8).
template <int C>
__attribute__((target("avx512f,avx2,fma"))) inline void attn_block_kernel(const double *a, int64_t a_stride, int64_t k0,
                                                                          int64_t k1, const double *b, int64_t b_k,
                                                                          int64_t b_c, double *out, int64_t out_stride,
                                                                          bool accumulate) {
  __m512d acc[kAttnRows][C];
#pragma GCC unroll 4
  for (int r = 0; r < kAttnRows; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      acc[r][c] = accumulate ? _mm512_loadu_pd(out + r * out_stride + c * 8) : _mm512_setzero_pd();
  for (int64_t k = k0; k < k1; ++k) {
    __m512d bv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) bv[c] = _mm512_loadu_pd(b + k * b_k + c * b_c);
#pragma GCC unroll 4
    for (int r = 0; r < kAttnRows; ++r) {
      const __m512d av = _mm512_set1_pd(a[r * a_stride + k]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_pd(av, bv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kAttnRows; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) _mm512_storeu_pd(out + r * out_stride + c * 8, acc[r][c]);
}

// s[0, lim) <- exp(s_j - max), s[lim, npad) <- 0 (npad a multiple of 8); returns the sum. A row whose scores are
// all -inf (every key hidden by a mask, or lim = 0) comes out 0 with sum 0; unmasked finite inputs never give one.
__attribute__((target("avx512f,avx2,fma"))) inline double attn_softmax_row(double *s, int64_t lim, int64_t npad) {
  const __m512d ninf = _mm512_set1_pd(-kInf<double>);
  __m512d mv = ninf;
  int64_t j = 0;
  for (; j + 8 <= lim; j += 8) mv = _mm512_max_pd(mv, _mm512_loadu_pd(s + j));
  if (j < lim) mv = _mm512_max_pd(mv, _mm512_mask_loadu_pd(ninf, static_cast<__mmask8>((1u << (lim - j)) - 1), s + j));
  const double mx = _mm512_reduce_max_pd(mv);
  const __m512d m = _mm512_set1_pd(mx == -kInf<double> ? 0.0 : mx);
  __m512d z = _mm512_setzero_pd();
  for (j = 0; j < npad; j += 8) {
    const int64_t left = lim - j;
    const __mmask8 keep = left >= 8 ? __mmask8(0xff) : left <= 0 ? __mmask8(0) : __mmask8((1u << left) - 1);
    const __m512d e = _mm512_maskz_mov_pd(keep, exp8_nonpos_pd(_mm512_sub_pd(_mm512_loadu_pd(s + j), m)));
    _mm512_storeu_pd(s + j, e);
    z = _mm512_add_pd(z, e);
  }
  return _mm512_reduce_add_pd(z);
}

// Widens n elements of T (stride st) to dst, zero-padded to a multiple of 8 when `pad`; returns their squares
// summed lane-wise (lane l: elements l, l + 8, ...), so that a max over rows taken lane by lane and then summed
// bounds the largest squared row norm from above. Not finite iff some element is not.
template <class T>
__attribute__((target("avx512f,avx2,fma"))) inline __m512d attn_widen(const T *src, int64_t st, int64_t n, double *dst,
                                                                      bool pad) {
  int64_t e = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (st == 1)
      for (; e + 8 <= n; e += 8) _mm512_storeu_pd(dst + e, _mm512_cvtps_pd(_mm256_loadu_ps(src + e)));
  }
  for (; e < n; ++e) dst[e] = static_cast<double>(kit::load(src[e * st]));
  if (pad)
    for (; e % 8 != 0; ++e) dst[e] = 0;
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512d x0 = _mm512_loadu_pd(dst + i), x1 = _mm512_loadu_pd(dst + i + 8);
    a0 = _mm512_fmadd_pd(x0, x0, a0);
    a1 = _mm512_fmadd_pd(x1, x1, a1);
  }
  for (; i < n; i += 8) {
    const __m512d x = _mm512_maskz_loadu_pd(n - i >= 8 ? __mmask8(0xff) : __mmask8((1u << (n - i)) - 1), dst + i);
    a0 = _mm512_fmadd_pd(x, x, a0);
  }
  return _mm512_add_pd(a0, a1);
}

// The 8 x 8 transpose of rows r[0..7], in place.
__attribute__((target("avx512f,avx2,fma"))) inline void transpose8x8(__m512d r[8]) {
  __m512d t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);      // a0 b0 a2 b2 a4 b4 a6 b6
    t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);  // a1 b1 a3 b3 a5 b5 a7 b7
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm512_shuffle_f64x2(t[4 * i], t[4 * i + 2], 0x88);      // a0 b0 a4 b4 c0 d0 c4 d4
    u[4 * i + 1] = _mm512_shuffle_f64x2(t[4 * i + 1], t[4 * i + 3], 0x88);  // a1 b1 a5 b5 c1 d1 c5 d5
    u[4 * i + 2] = _mm512_shuffle_f64x2(t[4 * i], t[4 * i + 2], 0xdd);      // a2 b2 a6 b6 c2 d2 c6 d6
    u[4 * i + 3] = _mm512_shuffle_f64x2(t[4 * i + 1], t[4 * i + 3], 0xdd);  // a3 b3 a7 b7 c3 d3 c7 d7
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f64x2(u[i], u[i + 4], 0x88);      // column i
    r[i + 4] = _mm512_shuffle_f64x2(u[i], u[i + 4], 0xdd);  // column i + 4
  }
}

// The plan of one launch: shapes, padding, and units of work (head, chunk of rows).
struct AttnPlan {
  int64_t H, L, E, S, Ev, Sp, Evp, per_head, chunk_rows;
  double scale, limit;
  bool causal;
};

// The mask rows of one unit (query rows [r_lo, r_hi) of head h) for the fast path: per row, the end of its visible
// keys (1 + the last key a bool mask shows or an additive term keeps), and whether the unit may take the fast path.
// An additive term must be -inf, at most 2^23 in magnitude (the error bound above then holds for score + term), or
// below -2^64 in a row that also has a term of the second kind among the keys it sees: such a term hides its key
// exactly (exp(-2^64 + 2^25) is 0 in double, and far below any output's last place in exact arithmetic), so it is
// taken as -inf (PyTorch's finfo.min masks). A row of only huge negative terms (whose exact softmax is that of its
// scores: the terms cancel), a NaN, +inf or other large term sends the unit to attention_rows. Keys a causal
// launch hides do not count: the decomposition replaces them by -inf whatever the mask says.
// f32 rows read densely: 16 terms at a time. Bits of `ok` are the lanes inside the row.
__attribute__((target("avx512f,avx2,fma"))) inline bool attn_mask_row_f32(const float *m, int64_t n, int64_t &end,
                                                                          bool &normal, bool &huge) {
  const __m512 lim = _mm512_set1_ps(0x1p23f), neg_huge = _mm512_set1_ps(-0x1p64f), ninf = _mm512_set1_ps(-kInf<float>);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 ok = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(ok, m + j);
    const __mmask16 nrm = _mm512_mask_cmp_ps_mask(ok, _mm512_abs_ps(x), lim, _CMP_LE_OQ);
    const __mmask16 hg = _mm512_mask_cmp_ps_mask(ok, x, neg_huge, _CMP_LT_OQ);  // -inf too
    if ((nrm | hg) != ok) return false;
    if (nrm) {
      normal = true;
      end = j + 32 - __builtin_clz(static_cast<uint32_t>(nrm));
    }
    if (hg & ~_mm512_mask_cmp_ps_mask(ok, x, ninf, _CMP_EQ_OQ)) huge = true;
  }
  return true;
}

template <class T>
__attribute__((target("avx512f,avx2,fma"))) bool attn_mask_unit(const AttnArgs &a, int64_t b, int64_t h, int64_t r_lo,
                                                                int64_t r_hi, int64_t S, int64_t *vis_end) {
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
          if (!attn_mask_row_f32(m + mr, seen, end, normal, huge) || (huge && !normal)) return false;
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
template <class T>
__attribute__((target("avx512f,avx2,fma"))) void attn_apply_mask(const AttnArgs &a, int64_t b, int64_t h, int64_t i,
                                                                 double *s, int64_t lim) {
  const int64_t mr = a.mask_row(b, h, i), st = a.mst[3];
  if (a.mask_bool) {
    for (int64_t j = 0; j < lim; ++j)
      if (!a.mask[mr + j * st]) s[j] = -kInf<double>;
    return;
  }
  const T *m = reinterpret_cast<const T *>(a.mask);
  if constexpr (std::is_same_v<T, float>) {
    if (st == 1) {  // 8 terms at a time, widened to double
      const __m512d neg_huge = _mm512_set1_pd(-0x1p64), ninf = _mm512_set1_pd(-kInf<double>);
      for (int64_t j = 0; j < lim; j += 8) {
        const __mmask8 ok = lim - j >= 8 ? __mmask8(0xff) : __mmask8((1u << (lim - j)) - 1);
        const __m512d x = _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps(ok, m + mr + j)));
        const __m512d sum = _mm512_add_pd(_mm512_maskz_loadu_pd(ok, s + j), x);
        const __mmask8 hidden = _mm512_cmp_pd_mask(x, neg_huge, _CMP_LT_OQ);
        _mm512_mask_storeu_pd(s + j, ok, _mm512_mask_blend_pd(hidden, sum, ninf));
      }
      return;
    }
  }
  for (int64_t j = 0; j < lim; ++j) {
    const double x = static_cast<double>(kit::load(m[mr + j * st]));
    s[j] = x < -0x1p64 ? -kInf<double> : s[j] + x;
  }
}

// The head's keys and values (kv head kh of batch b), widened: keys as 8-key panels, values as padded rows.
// Returns whether all are finite; kmax2 bounds the largest squared key norm.
template <class T>
__attribute__((target("avx512f,avx2,fma"))) bool attn_widen_head(const AttnArgs &a, const AttnPlan &pl, int64_t b,
                                                                 int64_t kh, double *kp, double *vb, double *rows,
                                                                 double &kmax2) {
  const View &k = a.k, &v = a.v;
  const int64_t E = pl.E, S = pl.S, Ev = pl.Ev, Evp = pl.Evp, Ep = (E + 7) / 8 * 8;
  __m512d kmax = _mm512_setzero_pd(), sum = _mm512_setzero_pd();
  for (int64_t j0 = 0; j0 < S; j0 += 8) {  // a panel of 8 keys: 8 rows widened, then transposed 8 x 8
    for (int64_t j = j0; j < j0 + 8; ++j) {
      double *rj = rows + (j - j0) * Ep;
      if (j >= S) {
        std::fill(rj, rj + Ep, 0.0);
        continue;
      }
      const __m512d n2 =
          attn_widen(k.at<T>(b * k.strides[0] + kh * k.strides[1] + j * k.strides[2]), k.strides[3], E, rj, true);
      kmax = _mm512_max_pd(kmax, n2);
      sum = _mm512_add_pd(sum, n2);  // NaN or inf if any k is not finite (max could drop a NaN)
      double *vd = vb + j * Evp;
      sum = _mm512_add_pd(sum, attn_widen(v.at<T>(b * v.strides[0] + kh * v.strides[1] + j * v.strides[2]),
                                          v.strides[3], Ev, vd, true));
    }
    double *panel = kp + j0 * E;
    for (int64_t e0 = 0; e0 < E; e0 += 8) {
      __m512d r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_pd(rows + i * Ep + e0);
      transpose8x8(r);
      for (int64_t e = e0; e < std::min(E, e0 + 8); ++e) _mm512_storeu_pd(panel + e * 8, r[e - e0]);
    }
  }
  kmax2 = _mm512_reduce_add_pd(kmax);
  return std::isfinite(_mm512_reduce_add_pd(sum));
}

// Rows [i0, i0 + nb) of head (b, h), their scaled queries at qs: scores, mask, softmax and p . v, stored to out.
// vis: the rows' visible-key ends from attn_mask_unit (masked launches), indexed from i0.
template <class T>
__attribute__((target("avx512f,avx2,fma"))) void attention_fast_block(const AttnArgs &a, const AttnPlan &pl, int64_t b,
                                                                      int64_t h, int64_t i0, int64_t nb,
                                                                      const double *qs, const int64_t *vis,
                                                                      const double *kp, const double *vb, double *sc,
                                                                      double *ob) {
  const int64_t E = pl.E, S = pl.S, Ev = pl.Ev, Sp = pl.Sp, Evp = pl.Evp;
  const bool causal = pl.causal;
  const View &out = a.out;
  const int64_t nmb = (nb + kAttnRows - 1) / kAttnRows;
  int64_t ncols[kAttnBlock / kAttnRows], npan[kAttnBlock / kAttnRows], max_cols = 0, max_pan = 0;
  double z[kAttnBlock];
  for (int64_t m = 0; m < nmb; ++m) {
    ncols[m] = causal ? std::min(S, i0 + (m + 1) * kAttnRows) : S;  // the last key any row of m sees, + 1
    if (vis != nullptr) {  // keys past every row's last visible one are skipped (fully hidden key panels)
      int64_t end = 0;
      for (int64_t r = m * kAttnRows; r < std::min(nb, (m + 1) * kAttnRows); ++r) end = std::max(end, vis[r]);
      ncols[m] = std::min(ncols[m], end);
    }
    npan[m] = (ncols[m] + 7) / 8;
    max_cols = std::max(max_cols, ncols[m]);
    max_pan = std::max(max_pan, npan[m]);
  }
  for (int64_t pg = 0; pg < max_pan; pg += 4) {
    for (int64_t m = 0; m < nmb; ++m) {
      const double *qm = qs + m * kAttnRows * E;
      double *sm = sc + m * kAttnRows * Sp;
      if (pg + 4 <= npan[m]) {
        attn_block_kernel<4>(qm, E, 0, E, kp + pg * E * 8, 8, E * 8, sm + pg * 8, Sp, false);
      } else {
        for (int64_t pn = pg; pn < npan[m]; ++pn)
          attn_block_kernel<1>(qm, E, 0, E, kp + pn * E * 8, 8, E * 8, sm + pn * 8, Sp, false);
      }
    }
  }
  for (int64_t r = 0; r < nmb * kAttnRows; ++r) {
    const int64_t lim = std::min(causal ? std::min(S, i0 + r + 1) : S, ncols[r / kAttnRows]);
    if (vis != nullptr && r < nb) attn_apply_mask<T>(a, b, h, i0 + r, sc + r * Sp, lim);
    z[r] = attn_softmax_row(sc + r * Sp, lim, npan[r / kAttnRows] * 8);
  }
  for (int64_t m = 0; m < nmb; ++m)  // micro-blocks that see no key: p . v writes nothing there
    if (ncols[m] == 0) std::fill(ob + m * kAttnRows * Evp, ob + (m + 1) * kAttnRows * Evp, 0.0);
  for (int64_t j0 = 0; j0 < max_cols; j0 += kAttnKeyTile) {
    for (int64_t c0 = 0; c0 < Evp; c0 += 32) {
      for (int64_t m = 0; m < nmb; ++m) {
        if (j0 >= ncols[m]) continue;
        const int64_t j1 = std::min(j0 + kAttnKeyTile, ncols[m]);
        const double *pm = sc + m * kAttnRows * Sp;
        double *om = ob + m * kAttnRows * Evp;
        if (c0 + 32 <= Evp) {
          attn_block_kernel<4>(pm, Sp, j0, j1, vb + c0, Evp, 8, om + c0, Evp, j0 > 0);
        } else {
          for (int64_t c = c0; c < Evp; c += 8)
            attn_block_kernel<1>(pm, Sp, j0, j1, vb + c, Evp, 8, om + c, Evp, j0 > 0);
        }
      }
    }
  }
  for (int64_t r = 0; r < nb; ++r) {
    T *orow = out.at<T>(b * out.strides[0] + h * out.strides[1] + (i0 + r) * out.strides[2]);
    const double *o = ob + r * Evp;
    // 2^-53 relative: far below what the f32 (or narrower) result can show; a fully hidden row (sum 0) is 0
    const double zr = z[r] > 0 ? 1 / z[r] : 0.0;
    if constexpr (std::is_same_v<T, float>) {
      if (out.strides[3] == 1) {
        const __m512d zv = _mm512_set1_pd(zr);
        int64_t e = 0;
        for (; e + 8 <= Ev; e += 8)
          _mm256_storeu_ps(orow + e, _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_loadu_pd(o + e), zv)));
        for (; e < Ev; ++e) orow[e] = static_cast<float>(o[e] * zr);
        continue;
      }
    }
    for (int64_t e = 0; e < Ev; ++e) orow[e * out.strides[3]] = kit::store_as<T>(o[e] * zr);
  }
}

template <class T>
__attribute__((target("avx512f,avx2,fma"))) void attention_fast_units(const AttnArgs &a, const AttnPlan &pl, int64_t lo,
                                                                      int64_t hi) {
  const View &q = a.q;
  const int64_t H = pl.H, L = pl.L, E = pl.E, S = pl.S, Sp = pl.Sp, Evp = pl.Evp, Hkv = a.k.shape[1];
  const int64_t Ep = (E + 7) / 8 * 8;
  const int64_t per_head = pl.per_head, chunk_rows = pl.chunk_rows;
  const double scale = pl.scale, limit = pl.limit;
  std::vector<double> kp(static_cast<size_t>(Sp * E)), vb(static_cast<size_t>(S * Evp)),
      qb(static_cast<size_t>((chunk_rows + kAttnRows) * E)), sc(static_cast<size_t>(kAttnBlock * Sp)),
      ob(static_cast<size_t>(kAttnBlock * Evp)), rows(static_cast<size_t>(8 * Ep));
  std::vector<int64_t> vis(static_cast<size_t>(a.mask ? chunk_rows : 0));
  int64_t cur = -1;
  bool head_finite = true;
  double kmax2 = 0;
  for (int64_t u = lo; u < hi; ++u) {
    const int64_t bh = u / per_head, b = bh / H, h = bh % H, kh = h / a.group;
    const int64_t r_lo = (u % per_head) * chunk_rows, r_hi = std::min(L, r_lo + chunk_rows);
    if (b * Hkv + kh != cur) {  // widen the kv head (all keys: a masked key's v still counts if not finite)
      cur = b * Hkv + kh;
      head_finite = attn_widen_head<T>(a, pl, b, kh, kp.data(), vb.data(), rows.data(), kmax2);
    }
    if (a.mask && !attn_mask_unit<T>(a, b, h, r_lo, r_hi, S, vis.data())) {
      attention_rows<T>(a, bh * L + r_lo, bh * L + r_hi);
      continue;
    }
    // The chunk's queries: finite, and small enough for the error bound above.
    __m512d qmax = _mm512_setzero_pd(), qsumv = _mm512_setzero_pd();
    for (int64_t i = r_lo; i < r_hi; ++i) {
      const __m512d n2 = attn_widen(q.at<T>(b * q.strides[0] + h * q.strides[1] + i * q.strides[2]), q.strides[3], E,
                                    qb.data() + (i - r_lo) * E, false);
      qmax = _mm512_max_pd(qmax, n2);
      qsumv = _mm512_add_pd(qsumv, n2);
    }
    const double qmax2 = _mm512_reduce_add_pd(qmax), qsum = _mm512_reduce_add_pd(qsumv);
    const double qn = std::fabs(scale) * std::sqrt(qmax2);  // bounds |q scale|, which must not overflow
    if (!head_finite || !std::isfinite(qsum) || !(qn <= 0x1p1000) || !(qn * std::sqrt(kmax2) <= limit)) {
      attention_rows<T>(a, bh * L + r_lo, bh * L + r_hi);
      continue;
    }
    {
      const int64_t n = (r_hi - r_lo) * E;
      const __m512d sv = _mm512_set1_pd(scale);
      int64_t e = 0;
      for (; e + 8 <= n; e += 8) _mm512_storeu_pd(qb.data() + e, _mm512_mul_pd(_mm512_loadu_pd(qb.data() + e), sv));
      for (; e < n; ++e) qb[e] *= scale;
      // rows past the chunk's end up to a whole block: zeros (computed, never stored)
      std::fill(qb.begin() + n, qb.begin() + (r_hi - r_lo + kAttnRows - 1) / kAttnRows * kAttnRows * E, 0.0);
    }
    // Blocks of kAttnBlock rows, so that a group of key panels (or a tile of values) loaded into L1 serves all of
    // the block's 4-row micro-blocks before the next is loaded.
    for (int64_t i0 = r_lo; i0 < r_hi; i0 += kAttnBlock) {
      attention_fast_block<T>(a, pl, b, h, i0, std::min(kAttnBlock, r_hi - i0), qb.data() + (i0 - r_lo) * E,
                              a.mask ? vis.data() + (i0 - r_lo) : nullptr, kp.data(), vb.data(), sc.data(), ob.data());
    }
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
  pl.Sp = (pl.S + 7) / 8 * 8;
  pl.Evp = (pl.Ev + 7) / 8 * 8;
  pl.scale = a.scale;
  pl.causal = a.causal;
  pl.limit = std::ldexp(1.0, 23) / static_cast<double>(std::max<int64_t>(pl.E, 1));
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
