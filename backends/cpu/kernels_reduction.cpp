// kernels_reduction.cpp — reductions over a list of axes (sum, prod, amax, amin, xor_sum, var, any, all), the
// one-axis index reductions (argmax, argmin) and the scans along one axis (cumsum, cumprod, cummax, cummin,
// logcumsumexp), for every dtype each op admits. Inputs and outputs are walked through their strides.
//
// Numerics: float sums and products accumulate in double (a compensated sum, so f64 also gets better than
// n * eps), complex in std::complex<double>, integers in uint64 and wrap to their width on the store.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <new>
#include <type_traits>

#include "cpu_kernels.hpp"

namespace pk::cpu {
namespace {

using kit::View;
using kit::walk;

template <class T>
constexpr bool is_int_v = std::is_integral_v<T>;  // u8..i64; kit::boolean is a struct
template <class T>
constexpr bool is_float_v = kit::is_small_float<T>::value || std::is_floating_point_v<T>;
template <class T>
constexpr bool is_complex_v = kit::is_complex<T>::value;
template <class T>
constexpr bool is_bool_v = std::is_same_v<T, kit::boolean>;

template <class C>
inline bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// Kept axes (walked once per output element) and reduced axes (walked for each output element) of a reduction.
struct Plan {
  int32_t on = 0;
  int64_t oshape[PK_MAX_RANK] = {0}, o_in[PK_MAX_RANK] = {0}, o_out[PK_MAX_RANK] = {0}, o_out2[PK_MAX_RANK] = {0};
  int32_t rn = 0;
  int64_t rshape[PK_MAX_RANK] = {0}, r_in[PK_MAX_RANK] = {0};
  int64_t outer = 1, inner = 1;
};

// Reductions: the output has the kept axes in order.
Plan reduce_plan(const View &in, const View &out, uint32_t mask) {
  Plan p;
  int32_t r = 0;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (mask & bit(d)) {
      p.rshape[p.rn] = in.shape[d];
      p.r_in[p.rn++] = in.strides[d];
      p.inner *= in.shape[d];
    } else {
      p.oshape[p.on] = in.shape[d];
      p.o_in[p.on] = in.strides[d];
      p.o_out[p.on++] = out.strides[r++];
      p.outer *= in.shape[d];
    }
  }
  return p;
}

// Scans: every output has the input's shape; r_in / line strides describe axis `dim`.
struct ScanPlan {
  Plan p;
  int64_t n = 0, s_in = 0, s_out = 0, s_out2 = 0;
};

ScanPlan scan_plan(const View &in, const View &out, const View *out2, int64_t dim) {
  ScanPlan s;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (d == dim) continue;
    s.p.oshape[s.p.on] = in.shape[d];
    s.p.o_in[s.p.on] = in.strides[d];
    s.p.o_out[s.p.on] = out.strides[d];
    s.p.o_out2[s.p.on++] = out2 ? out2->strides[d] : 0;
    s.p.outer *= in.shape[d];
  }
  s.n = in.shape[dim];
  s.s_in = in.strides[dim];
  s.s_out = out.strides[dim];
  s.s_out2 = out2 ? out2->strides[dim] : 0;
  return s;
}

// Calls f(offset) for every element of one reduction (the reduced axes from `base`).
template <class F>
inline void for_inner(const Plan &p, int64_t base, F &&f) {
  if (p.inner == 0) return;
  walk<1>(p.rshape, p.rn, {p.r_in}, {base}, 0, p.inner, [&](const std::array<int64_t, 1> &o) { f(o[0]); });
}

// Calls f(input_offset, output_offset, output2_offset) once per output element, on the worker threads.
template <class F>
void for_outer(const Plan &p, int64_t work_per_item, F &&f) {
  if (p.outer == 0) return;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work_per_item));
  parallel_for(0, p.outer, grain, [&](int64_t lo, int64_t hi) {
    walk<3>(p.oshape, p.on, {p.o_in, p.o_out, p.o_out2}, {0, 0, 0}, lo, hi,
            [&](const std::array<int64_t, 3> &o) { f(o[0], o[1], o[2]); });
  });
}

uint32_t dims_mask(int32_t n, const int64_t *dims) {
  uint32_t m = 0;
  for (int32_t k = 0; k < n; ++k) m |= bit(static_cast<int>(dims[k]));
  return m;
}

// --- numerics ---------------------------------------------------------------------------------------------------

// Neumaier's compensated sum in double: the error stays O(eps) independent of n. Infinite and NaN terms are
// counted apart, as exact arithmetic treats them: an intermediate overflow of finite terms must not meet an
// infinite input and turn into NaN (inf - inf) when the exact sum is that infinity. Once the finite part is no
// longer finite the compensation (which then holds inf - inf) is dropped.
struct KSum {
  // s + c: the finite terms' compensated sum; ss + sc: the same of the terms scaled by 2^-600, which takes over
  // where s overflows although the exact sum does not (DBL_MAX + DBL_MAX - DBL_MAX is DBL_MAX).
  double s = 0.0, c = 0.0, ss = 0.0, sc = 0.0;
  bool pos_inf = false, neg_inf = false, nan = false;
  static void neumaier(double &sum, double &comp, double x) {
    const double t = sum + x;
    if (std::fabs(sum) >= std::fabs(x)) {
      comp += (sum - t) + x;
    } else {
      comp += (x - t) + sum;
    }
    sum = t;
  }
  void add(double x) {
    if (!std::isfinite(x)) {
      nan |= std::isnan(x);
      (x > 0 ? pos_inf : neg_inf) |= !std::isnan(x);
      return;
    }
    neumaier(s, c, x);
    neumaier(ss, sc, x * 0x1p-600);
  }
  double value() const {
    if (nan || (pos_inf && neg_inf)) return std::numeric_limits<double>::quiet_NaN();
    if (pos_inf || neg_inf) return pos_inf ? HUGE_VAL : -HUGE_VAL;
    return std::isfinite(s) ? s + c : (ss + sc) * 0x1p600;
  }
};

template <class T>
inline double to_f64(const T &v) {
  return static_cast<double>(kit::load(v));
}

template <class T>
inline std::complex<double> to_c128(const T &v) {
  return {static_cast<double>(v.real()), static_cast<double>(v.imag())};
}

template <class T>
inline T from_c128(std::complex<double> c) {
  using R = typename T::value_type;
  return T(static_cast<R>(c.real()), static_cast<R>(c.imag()));
}

template <class T>
inline bool nonzero(const T &v) {
  if constexpr (is_bool_v<T>) {
    return v.v != 0;
  } else if constexpr (is_complex_v<T>) {
    return v.real() != 0 || v.imag() != 0;
  } else {
    return kit::load(v) != 0;  // NaN != 0 is true
  }
}

// --- sum, prod --------------------------------------------------------------------------------------------------

// One real reduction's compensated sum (KSum's rules), from the reduced axes at input offset `ib`.
template <class T>
double compensated_sum(const Plan &p, const View &in, int64_t ib) {
  KSum acc;
  for_inner(p, ib, [&](int64_t o) { acc.add(to_f64(*in.at<T>(o))); });
  return acc.value();
}

template <class T, bool Prod>
void sum_prod(const Plan &p, const View &in, const View &out) {
  for_outer(p, p.inner, [&](int64_t ib, int64_t ob, int64_t) {
    T *dst = out.at<T>(ob);
    if constexpr (is_int_v<T>) {
      uint64_t acc = Prod ? 1u : 0u;
      for_inner(p, ib, [&](int64_t o) {
        const uint64_t x = static_cast<uint64_t>(*in.at<T>(o));
        acc = Prod ? acc * x : acc + x;
      });
      *dst = static_cast<T>(acc);
    } else if constexpr (is_complex_v<T>) {
      if constexpr (Prod) {
        // long double: see running() below.
        std::complex<long double> acc(1.0L, 0.0L);
        for_inner(p, ib, [&](int64_t o) {
          const std::complex<double> x = to_c128(*in.at<T>(o));
          acc *= std::complex<long double>(x.real(), x.imag());
        });
        *dst = from_c128<T>({static_cast<double>(acc.real()), static_cast<double>(acc.imag())});
      } else {
        KSum re, im;
        for_inner(p, ib, [&](int64_t o) {
          const T &x = *in.at<T>(o);
          re.add(static_cast<double>(x.real()));
          im.add(static_cast<double>(x.imag()));
        });
        *dst = from_c128<T>({re.value(), im.value()});
      }
    } else {
      if constexpr (Prod) {
        long double acc = 1.0L;
        for_inner(p, ib, [&](int64_t o) { acc *= to_f64(*in.at<T>(o)); });
        *dst = kit::store_as<T>(static_cast<double>(acc));
      } else {
        *dst = kit::store_as<T>(compensated_sum<T>(p, in, ib));
      }
    }
  });
}

// A dense f32 sum over every element: memory-bound, so it is split across the pool, and each chunk is summed in
// blocks of 1024 floats: f32 lanes within a block (32 terms per lane, 4 independent vector accumulators), each
// block's lanes then added to double accumulators. Error <= 32 * 2^-24 * sum|x| per block plus n * 2^-53 * sum|x|
// overall: inside the table's f32 bound (2 n 2^-24 sum|x|) for every n, and as accurate as numpy's pairwise f32
// sum. (Converting every element to double cost a fifth of the bandwidth: 4 loads and conversions per 16 floats.)
// Partial sums of the chunks are added in order, so the result does not depend on timing.
__attribute__((target("avx2"))) double sum_f32_avx2(const float *a, int64_t n) {
  constexpr int64_t kBlock = 1024;
  __m256d total0 = _mm256_setzero_pd(), total1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t j = i; j < i + kBlock; j += 32) {
      acc0 = _mm256_add_ps(acc0, _mm256_loadu_ps(a + j));
      acc1 = _mm256_add_ps(acc1, _mm256_loadu_ps(a + j + 8));
      acc2 = _mm256_add_ps(acc2, _mm256_loadu_ps(a + j + 16));
      acc3 = _mm256_add_ps(acc3, _mm256_loadu_ps(a + j + 24));
    }
    for (__m256 v : {acc0, acc1, acc2, acc3}) {
      total0 = _mm256_add_pd(total0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
      total1 = _mm256_add_pd(total1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(total0, total1));
  double total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) total += a[i];
  return total;
}

double sum_f32_plain(const float *a, int64_t n) {
  double acc[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) acc[k] += a[i + k];
  }
  double total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < n; ++i) total += a[i];
  return total;
}

bool sum_f32_dense(const View &in, const View &out) {
  if (out.numel != 1 || !in.contiguous || in.numel < (int64_t{1} << 12)) return false;
  static const auto chunk_sum = have_isa(Isa::avx2) ? sum_f32_avx2 : sum_f32_plain;
  const float *a = in.at<float>(0);
  constexpr int64_t kChunk = int64_t{1} << 16;
  const int64_t chunks = (in.numel + kChunk - 1) / kChunk;
  constexpr int64_t kMaxChunks = 4096;  // 256 M elements; larger inputs take the general path
  if (chunks > kMaxChunks) return false;
  double partial[kMaxChunks];
  parallel_for(0, chunks, 4, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) partial[c] = chunk_sum(a + c * kChunk, std::min(kChunk, in.numel - c * kChunk));
  });
  double total = 0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  // An f32 lane overflows where the exact sum need not (3e38 + 3e38 - 3e38 - 3e38), and infinities and NaN follow
  // the exact rules only in the compensated path: anything not finite is recomputed there.
  if (!std::isfinite(total)) return false;
  *out.at<float>(0) = static_cast<float>(total);
  return true;
}

// f32 sums over the last axes of a dense tensor (rows: softmax's and layer_norm's sums, a mean's) or over its
// leading axes (columns: a bias gradient's sum over the batch), into a dense output. The general path walks every
// element through strides into a compensated double sum, ~30 ns an element; these take the block sum above per
// row, or add rows into double column accumulators (both within the table's f32 bound, error n 2^-53 sum|x| at
// most), at memory speed. A row or column whose sum is not finite is recomputed by the general path's rules.
bool sum_f32_lines(const Plan &p, const View &in, const View &out, uint32_t mask) {
  if (!in.contiguous || !out.contiguous || p.inner == 0 || p.outer == 0 || p.rn == 0 || p.on == 0) return false;
  const int32_t r = in.ndim;
  const uint32_t trailing = static_cast<uint32_t>(((uint64_t{1} << r) - 1) & ~((uint64_t{1} << p.on) - 1));
  const uint32_t leading = static_cast<uint32_t>((uint64_t{1} << p.rn) - 1);
  const float *a = in.at<float>(0);
  float *o = out.at<float>(0);
  static const auto block_sum = have_isa(Isa::avx2) ? sum_f32_avx2 : sum_f32_plain;
  auto exact = [&](int64_t ib, int64_t ob) { o[ob] = static_cast<float>(compensated_sum<float>(p, in, ib)); };
  if (mask == trailing) {
    const int64_t rows = p.outer, cols = p.inner;
    parallel_for(0, rows, std::max<int64_t>(1, 32768 / cols), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const double t = block_sum(a + i * cols, cols);
        if (std::isfinite(t)) {
          o[i] = static_cast<float>(t);
        } else {
          exact(i * cols, i);
        }
      }
    });
    return true;
  }
  if (mask == leading) {
    const int64_t rows = p.inner, cols = p.outer;
    constexpr int64_t kTile = 512;  // columns per work item: the double accumulators stay in L1
    parallel_for(0, (cols + kTile - 1) / kTile, 1, [&](int64_t lo, int64_t hi) {
      double acc[kTile];
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t c0 = t * kTile, n = std::min(kTile, cols - c0);
        std::fill(acc, acc + n, 0.0);
        for (int64_t i = 0; i < rows; ++i) {
          const float *row = a + i * cols + c0;
          for (int64_t j = 0; j < n; ++j) acc[j] += row[j];
        }
        for (int64_t j = 0; j < n; ++j) {
          if (std::isfinite(acc[j])) {
            o[c0 + j] = static_cast<float>(acc[j]);
          } else {
            exact(c0 + j, c0 + j);
          }
        }
      }
    });
    return true;
  }
  return false;
}

template <class A, bool Prod>
pk_status k_sum_prod(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const A &a = attrs_of<A>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const Plan p = reduce_plan(in, out, dims_mask(a.num_dims, a.dims));
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (is_bool_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        if constexpr (std::is_same_v<T, float> && !Prod) {
          if (sum_f32_dense(in, out) || sum_f32_lines(p, in, out, dims_mask(a.num_dims, a.dims))) return PK_OK;
        }
        sum_prod<T, Prod>(p, in, out);
        return PK_OK;
      }
    });
  });
}

// --- amax, amin -------------------------------------------------------------------------------------------------

template <class T, bool Max>
void extremum(const Plan &p, const View &in, const View &out) {
  using C = kit::compute_t<T>;
  // The identity is the dtype's lowest (highest) value: -inf (+inf) for floats, which f8e4m3fn (no inf) stores
  // saturated as -448 (+448).
  C init;
  if constexpr (is_int_v<T>) {
    init = Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  } else {
    init = Max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  }
  for_outer(p, p.inner, [&](int64_t ib, int64_t ob, int64_t) {
    C best = init;
    for_inner(p, ib, [&](int64_t o) {
      const C x = kit::load(*in.at<T>(o));
      if (is_nan(best)) return;
      if (is_nan(x) || (Max ? x > best : x < best)) best = x;
    });
    *out.at<T>(ob) = kit::store_as<T>(best);
  });
}

// A dense f32 amax/amin over every element, split across the pool like sum_f32_dense. The maximum is exact in any
// order; NaN is tracked separately (it wins). A zero result falls back to the ordered scalar loop, which decides
// the sign of zero as the general path does.
struct ExtremumChunk {
  float value;
  bool nan;
};

template <bool Max>
__attribute__((target("avx2"))) ExtremumChunk extremum_f32_avx2(const float *a, int64_t n) {
  const float init = Max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  __m256 acc[4] = {_mm256_set1_ps(init), _mm256_set1_ps(init), _mm256_set1_ps(init), _mm256_set1_ps(init)};
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    // max(acc, x) returns x when either is NaN, so an accumulator holds a NaN exactly when this step's x did (the
    // next step drops it again). Testing the accumulators rather than x lets each load fold into its max: at one
    // thread the loop is bound by the loads in flight, and fewer instructions per load keep more of them in flight.
    for (int k = 0; k < 4; ++k) {
      const __m256 x = _mm256_loadu_ps(a + i + 8 * k);
      acc[k] = Max ? _mm256_max_ps(acc[k], x) : _mm256_min_ps(acc[k], x);
    }
    // A pair compares unordered when either holds a NaN: one compare covers two vectors.
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(acc[0], acc[1], _CMP_UNORD_Q));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(acc[2], acc[3], _CMP_UNORD_Q));
  }
  alignas(32) float lanes[8];
  const __m256 m01 = Max ? _mm256_max_ps(acc[0], acc[1]) : _mm256_min_ps(acc[0], acc[1]);
  const __m256 m23 = Max ? _mm256_max_ps(acc[2], acc[3]) : _mm256_min_ps(acc[2], acc[3]);
  _mm256_store_ps(lanes, Max ? _mm256_max_ps(m01, m23) : _mm256_min_ps(m01, m23));
  ExtremumChunk r{init, _mm256_movemask_ps(nan) != 0};
  for (float v : lanes) r.value = (Max ? v > r.value : v < r.value) ? v : r.value;
  for (; i < n; ++i) {
    if (a[i] != a[i]) r.nan = true;
    if (Max ? a[i] > r.value : a[i] < r.value) r.value = a[i];
  }
  return r;
}

template <bool Max>
bool extremum_f32_dense(const View &in, const View &out) {
  if (out.numel != 1 || !in.contiguous || in.numel < (int64_t{1} << 12) || !have_isa(Isa::avx2)) return false;
  const float *a = in.at<float>(0);
  constexpr int64_t kChunk = int64_t{1} << 16, kMaxChunks = 4096;
  const int64_t chunks = (in.numel + kChunk - 1) / kChunk;
  if (chunks > kMaxChunks) return false;
  ExtremumChunk partial[kMaxChunks];
  parallel_for(0, chunks, 4, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c)
      partial[c] = extremum_f32_avx2<Max>(a + c * kChunk, std::min(kChunk, in.numel - c * kChunk));
  });
  float best = partial[0].value;
  for (int64_t c = 0; c < chunks; ++c) {
    if (partial[c].nan) {
      *out.at<float>(0) = std::numeric_limits<float>::quiet_NaN();
      return true;
    }
    if (Max ? partial[c].value > best : partial[c].value < best) best = partial[c].value;
  }
  if (best == 0) return false;  // the sign of zero depends on the order: the general path decides it
  *out.at<float>(0) = best;
  return true;
}

template <class A, bool Max>
pk_status k_extremum(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const A &a = attrs_of<A>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const Plan p = reduce_plan(in, out, dims_mask(a.num_dims, a.dims));
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (is_bool_v<T> || is_complex_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        if constexpr (std::is_same_v<T, float>) {
          if (extremum_f32_dense<Max>(in, out)) return PK_OK;
        }
        extremum<T, Max>(p, in, out);
        return PK_OK;
      }
    });
  });
}

// --- argmax, argmin ---------------------------------------------------------------------------------------------

template <class T, bool Max>
void arg_extremum(const Plan &p, const View &in, const View &out) {
  using C = kit::compute_t<T>;
  for_outer(p, p.inner, [&](int64_t ib, int64_t ob, int64_t) {
    // The reduced axis is walked in index order, so a strict comparison keeps the first extremum and the first
    // NaN stops the search.
    C best{};
    int64_t best_i = 0, i = 0;
    bool done = false;
    for_inner(p, ib, [&](int64_t o) {
      const int64_t cur = i++;
      if (done) return;
      const C x = kit::load(*in.at<T>(o));
      if (cur == 0 || is_nan(x) || (Max ? x > best : x < best)) {
        best = x;
        best_i = cur;
        done = is_nan(x);
      }
    });
    *out.at<int64_t>(ob) = best_i;
  });
}

template <class A, bool Max>
pk_status k_arg_extremum(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const A &a = attrs_of<A>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const Plan p = reduce_plan(in, out, bit(static_cast<int>(a.dim)));
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (is_bool_v<T> || is_complex_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        arg_extremum<T, Max>(p, in, out);
        return PK_OK;
      }
    });
  });
}

// --- xor_sum ----------------------------------------------------------------------------------------------------

pk_status k_xor_sum(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_xor_sum>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const Plan p = reduce_plan(in, out, dims_mask(a.num_dims, a.dims));
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (is_bool_v<T>) {
        for_outer(p, p.inner, [&](int64_t ib, int64_t ob, int64_t) {
          uint8_t acc = 0;
          for_inner(p, ib, [&](int64_t o) { acc ^= static_cast<uint8_t>(in.at<T>(o)->v != 0); });
          out.at<T>(ob)->v = acc;
        });
        return PK_OK;
      } else if constexpr (is_int_v<T>) {
        for_outer(p, p.inner, [&](int64_t ib, int64_t ob, int64_t) {
          uint64_t acc = 0;
          for_inner(p, ib, [&](int64_t o) { acc ^= static_cast<uint64_t>(*in.at<T>(o)); });
          *out.at<T>(ob) = static_cast<T>(acc);
        });
        return PK_OK;
      } else {
        return PK_UNIMPLEMENTED;
      }
    });
  });
}

// --- var --------------------------------------------------------------------------------------------------------

template <class T>
void variance(const Plan &p, const View &in, const View &out, double correction) {
  const double n = static_cast<double>(p.inner);
  const double divisor = n - correction;
  for_outer(p, 2 * p.inner, [&](int64_t ib, int64_t ob, int64_t) {
    // Passes in double: the mean (corrected), then the squared deviations from it.
    double v, unscale = 1;
    if constexpr (is_complex_v<T>) {
      KSum re, im;
      for_inner(p, ib, [&](int64_t o) {
        const T &x = *in.at<T>(o);
        re.add(static_cast<double>(x.real()));
        im.add(static_cast<double>(x.imag()));
      });
      double mr = re.value() / n, mi = im.value() / n;
      KSum cr, ci;  // the corrected two-pass mean (see below)
      for_inner(p, ib, [&](int64_t o) {
        const T &x = *in.at<T>(o);
        cr.add(static_cast<double>(x.real()) - mr);
        ci.add(static_cast<double>(x.imag()) - mi);
      });
      mr += cr.value() / n;
      mi += ci.value() / n;
      KSum ss;
      for_inner(p, ib, [&](int64_t o) {
        const T &x = *in.at<T>(o);
        const double dr = static_cast<double>(x.real()) - mr, di = static_cast<double>(x.imag()) - mi;
        ss.add(dr * dr + di * di);
      });
      v = ss.value();
    } else {
      // A sum of finite values that overflows is redone on values scaled by 2^-600 (exact), and the variance
      // scaled back: otherwise the mean is inf and every deviation NaN.
      double scale = 1;
      KSum s;
      for_inner(p, ib, [&](int64_t o) { s.add(to_f64(*in.at<T>(o))); });
      if (std::isinf(s.value())) {
        scale = 0x1p-600;
        s = KSum{};
        for_inner(p, ib, [&](int64_t o) { s.add(to_f64(*in.at<T>(o)) * scale); });
      }
      double mean = s.value() / n;
      // The corrected two-pass mean: sum/n is off by up to an ulp, and for a constant row every deviation would
      // then be that ulp instead of 0. Adding the mean of the residuals makes such a row's variance exactly 0.
      KSum c;
      for_inner(p, ib, [&](int64_t o) { c.add(to_f64(*in.at<T>(o)) * scale - mean); });
      mean += c.value() / n;
      KSum ss;
      for_inner(p, ib, [&](int64_t o) {
        const double d = to_f64(*in.at<T>(o)) * scale - mean;
        ss.add(d * d);
      });
      v = ss.value();
      unscale = scale == 1 ? 1 : 0x1p600;  // applied twice, after the division
    }
    const double r = divisor > 0 ? v / divisor * unscale * unscale : std::numeric_limits<double>::quiet_NaN();
    if constexpr (is_complex_v<T>) {
      *out.at<typename T::value_type>(ob) = static_cast<typename T::value_type>(r);
    } else {
      *out.at<T>(ob) = kit::store_as<T>(r);
    }
  });
}

pk_status k_var(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_var>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const Plan p = reduce_plan(in, out, dims_mask(a.num_dims, a.dims));
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (is_float_v<T> || is_complex_v<T>) {
        variance<T>(p, in, out, a.correction);
        return PK_OK;
      } else {
        return PK_UNIMPLEMENTED;
      }
    });
  });
}

// --- any, all ---------------------------------------------------------------------------------------------------

template <class A, bool Any>
pk_status k_any_all(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const A &a = attrs_of<A>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const Plan p = reduce_plan(in, out, dims_mask(a.num_dims, a.dims));
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      for_outer(p, p.inner, [&](int64_t ib, int64_t ob, int64_t) {
        bool r = !Any;  // any of nothing is false, all of nothing is true
        for_inner(p, ib, [&](int64_t o) {
          if (nonzero(*in.at<T>(o)) == Any) r = Any;
        });
        *out.at<uint8_t>(ob) = r ? 1 : 0;
      });
      return PK_OK;
    });
  });
}

// --- cumsum, cumprod --------------------------------------------------------------------------------------------

template <class T, bool Prod>
void running(const ScanPlan &s, const View &in, const View &out) {
  for_outer(s.p, s.n, [&](int64_t ib, int64_t ob, int64_t) {
    const T *src = in.at<T>(ib);
    T *dst = out.at<T>(ob);
    if constexpr (is_int_v<T>) {
      uint64_t acc = Prod ? 1u : 0u;
      for (int64_t i = 0; i < s.n; ++i) {
        const uint64_t x = static_cast<uint64_t>(src[i * s.s_in]);
        acc = Prod ? acc * x : acc + x;
        dst[i * s.s_out] = static_cast<T>(acc);
      }
    } else if constexpr (is_complex_v<T>) {
      if constexpr (Prod) {
        // long double, whose range an f64 running product leaves (overflowing, or losing its bits to
        // subnormals) long before its value does: as the reference computes it.
        std::complex<long double> acc(1.0L, 0.0L);
        for (int64_t i = 0; i < s.n; ++i) {
          const std::complex<double> x = to_c128(src[i * s.s_in]);
          acc *= std::complex<long double>(x.real(), x.imag());
          dst[i * s.s_out] = from_c128<T>({static_cast<double>(acc.real()), static_cast<double>(acc.imag())});
        }
      } else {
        KSum re, im;
        for (int64_t i = 0; i < s.n; ++i) {
          re.add(static_cast<double>(src[i * s.s_in].real()));
          im.add(static_cast<double>(src[i * s.s_in].imag()));
          dst[i * s.s_out] = from_c128<T>({re.value(), im.value()});
        }
      }
    } else {
      if constexpr (Prod) {
        long double acc = 1.0L;  // as the complex product above
        for (int64_t i = 0; i < s.n; ++i) {
          acc *= to_f64(src[i * s.s_in]);
          dst[i * s.s_out] = kit::store_as<T>(static_cast<double>(acc));
        }
      } else {
        KSum acc;
        for (int64_t i = 0; i < s.n; ++i) {
          acc.add(to_f64(src[i * s.s_in]));
          dst[i * s.s_out] = kit::store_as<T>(acc.value());
        }
      }
    }
  });
}

template <class A, bool Prod>
pk_status k_running(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const A &a = attrs_of<A>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const ScanPlan s = scan_plan(in, out, nullptr, a.dim);
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (is_bool_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        running<T, Prod>(s, in, out);
        return PK_OK;
      }
    });
  });
}

// --- cummax, cummin ---------------------------------------------------------------------------------------------

template <class T, bool Max>
void running_extremum(const ScanPlan &s, const View &in, const View &out, const View &idx) {
  using C = kit::compute_t<T>;
  for_outer(s.p, s.n, [&](int64_t ib, int64_t ob, int64_t xb) {
    const T *src = in.at<T>(ib);
    T *dst = out.at<T>(ob);
    int64_t *di = idx.at<int64_t>(xb);
    C m{};
    int64_t mi = 0;
    for (int64_t i = 0; i < s.n; ++i) {
      const C x = kit::load(src[i * s.s_in]);
      // >= (<=) moves the index to the last occurrence of the extremum; NaN is the extremum once seen, so a later
      // NaN moves the index too (as PyTorch does) while a number never replaces it.
      if (i == 0 || is_nan(x) || (!is_nan(m) && (Max ? x >= m : x <= m))) {
        m = x;
        mi = i;
      }
      dst[i * s.s_out] = kit::store_as<T>(m);
      di[i * s.s_out2] = mi;
    }
  });
}

template <class A, bool Max>
pk_status k_running_extremum(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const A &a = attrs_of<A>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]), idx = kit::view_of(l.outputs[1]);
    const ScanPlan s = scan_plan(in, out, &idx, a.dim);
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (is_bool_v<T> || is_complex_v<T>) {
        return PK_UNIMPLEMENTED;
      } else {
        running_extremum<T, Max>(s, in, out, idx);
        return PK_OK;
      }
    });
  });
}

// --- logcumsumexp -----------------------------------------------------------------------------------------------

// log(exp(a) + exp(b)) without overflow: the larger term is factored out.
inline double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  const double m = std::max(a, b);
  if (std::isinf(m)) return m;  // -inf + -inf stays -inf; any +inf wins
  return m + std::log1p(std::exp(std::min(a, b) - m));
}

pk_status k_logcumsumexp(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_logcumsumexp>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    const ScanPlan s = scan_plan(in, out, nullptr, a.dim);
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (is_float_v<T>) {
        for_outer(s.p, s.n, [&](int64_t ib, int64_t ob, int64_t) {
          const T *src = in.at<T>(ib);
          T *dst = out.at<T>(ob);
          double acc = -std::numeric_limits<double>::infinity();
          for (int64_t i = 0; i < s.n; ++i) {
            acc = log_add_exp(acc, to_f64(src[i * s.s_in]));
            dst[i * s.s_out] = kit::store_as<T>(acc);
          }
        });
        return PK_OK;
      } else {
        return PK_UNIMPLEMENTED;
      }
    });
  });
}

}  // namespace

void register_reduction_kernels(KernelRegistry &r) {
  r.add(PK_OP_SUM, k_sum_prod<pk_attrs_sum, false>, kNumeric);
  r.add(PK_OP_PROD, k_sum_prod<pk_attrs_prod, true>, kNumeric);
  r.add(PK_OP_AMAX, k_extremum<pk_attrs_amax, true>, kReal);
  r.add(PK_OP_AMIN, k_extremum<pk_attrs_amin, false>, kReal);
  r.add(PK_OP_ARGMAX, k_arg_extremum<pk_attrs_argmax, true>, kReal);
  r.add(PK_OP_ARGMIN, k_arg_extremum<pk_attrs_argmin, false>, kReal);
  r.add(PK_OP_XOR_SUM, k_xor_sum, kIntegral);
  r.add(PK_OP_VAR, k_var, kFloatComplex);
  r.add(PK_OP_ANY, k_any_all<pk_attrs_any, true>, kAll);
  r.add(PK_OP_ALL, k_any_all<pk_attrs_all, false>, kAll);
  r.add(PK_OP_CUMSUM, k_running<pk_attrs_cumsum, false>, kNumeric);
  r.add(PK_OP_CUMPROD, k_running<pk_attrs_cumprod, true>, kNumeric);
  r.add(PK_OP_CUMMAX, k_running_extremum<pk_attrs_cummax, true>, kReal);
  r.add(PK_OP_CUMMIN, k_running_extremum<pk_attrs_cummin, false>, kReal);
  r.add(PK_OP_LOGCUMSUMEXP, k_logcumsumexp, kFloatStd);
}

}  // namespace pk::cpu
