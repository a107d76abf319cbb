// kernels_elementwise.cpp — the elementwise primitives: unary, binary, comparisons, where and fma, conversion,
// clone and fill, creation and counter-based RNG, for every dtype each op admits.
//
// One driver per arity walks the tensors (a flat loop when everything is dense, strided otherwise, split across
// the worker pool above a size that pays for it); an op is a small functor on VALUES: bool, the integer itself,
// float for f32 and the 8/16-bit formats, double for f64, std::complex. The driver loads each element into its
// value type and stores the result with exactly one rounding. Which dtypes an op runs is decided at compile time
// by the functor (`admits<T>`), intersected with the op table's admitted dtypes when it is registered, so the
// capability query and the kernels cannot disagree.
//
// Numerics (docs/ops.md has the contracts):
//   * + - * / sqrt of f16/bf16/fp8 computed in f32 and rounded once more are correctly rounded (f32 has more than
//     2p + 2 bits for each of these formats, so the double rounding is innocuous); fma and conversions from wide
//     integers use round-to-odd in double so the final rounding is the correct one.
//   * transcendental functions of f32 and narrower are evaluated in double and rounded once (≤ 1 ulp);
//     f64 uses glibc's double functions (≤ a few ulp); special functions glibc lacks (erf_inv, erfcx, digamma,
//     ndtri, modified Bessel, incomplete gamma, Hurwitz zeta) are implemented below with double/long double
//     algorithms accurate well inside the table's ULP bounds.
//   * integers wrap (computed in the unsigned type of the same width), division truncates, x / 0 = 0.
#include <immintrin.h>
#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include "complex_rounding.hpp"
#include "cpu_kernels.hpp"
#include "vec_math.hpp"

namespace pk::cpu {
namespace {

using kit::bfloat16;
using kit::boolean;
using kit::f8e4m3fn;
using kit::f8e5m2;
using kit::half;
using kit::View;
using kit::walk;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

// --- dtypes as types ----------------------------------------------------------------------------------------------

template <class T>
constexpr bool is_bool_v = std::is_same_v<T, boolean>;
template <class T>
constexpr bool is_int_v = std::is_integral_v<T>;  // u8..i64 (boolean is a struct)
template <class T>
constexpr bool is_small_v = kit::is_small_float<T>::value;
template <class T>
constexpr bool is_float_v = is_small_v<T> || std::is_floating_point_v<T>;
template <class T>
constexpr bool is_complex_v = kit::is_complex<T>::value;
template <class T>
constexpr bool is_real_v = is_int_v<T> || is_float_v<T>;
template <class T>
constexpr bool is_numeric_v = is_real_v<T> || is_complex_v<T>;

// The value type a storage type computes in.
template <class T>
struct value_of {
  using type = T;
};
template <>
struct value_of<boolean> {
  using type = bool;
};
template <>
struct value_of<half> {
  using type = float;
};
template <>
struct value_of<bfloat16> {
  using type = float;
};
template <>
struct value_of<f8e4m3fn> {
  using type = float;
};
template <>
struct value_of<f8e5m2> {
  using type = float;
};
template <class T>
using value_t = typename value_of<T>::type;

// The real type of a complex storage type (real_of in the op table); other types map to themselves.
template <class T>
struct real_of {
  using type = T;
};
template <class R>
struct real_of<std::complex<R>> {
  using type = R;
};
template <class T>
using real_t = typename real_of<T>::type;
template <class T>
using complex_t = std::complex<T>;  // complex_of for f32 / f64

template <class T>
constexpr int32_t dtype_id_of() {
  if constexpr (is_bool_v<T>)
    return PK_DTYPE_BOOL;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return PK_DTYPE_U8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return PK_DTYPE_I8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return PK_DTYPE_I16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return PK_DTYPE_I32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return PK_DTYPE_I64;
  else if constexpr (std::is_same_v<T, half>)
    return PK_DTYPE_F16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return PK_DTYPE_BF16;
  else if constexpr (std::is_same_v<T, float>)
    return PK_DTYPE_F32;
  else if constexpr (std::is_same_v<T, double>)
    return PK_DTYPE_F64;
  else if constexpr (std::is_same_v<T, c64>)
    return PK_DTYPE_C64;
  else if constexpr (std::is_same_v<T, c128>)
    return PK_DTYPE_C128;
  else if constexpr (std::is_same_v<T, f8e4m3fn>)
    return PK_DTYPE_F8E4M3FN;
  else
    return PK_DTYPE_F8E5M2;
}

// The dtypes (bit mask) for which Pred<T>::value holds, over the 14 storage types.
template <template <class> class Pred>
constexpr uint32_t mask_where() {
  uint32_t m = 0;
  auto add = [&](auto tag) {
    using T = decltype(tag);
    if (Pred<T>::value) m |= bit(dtype_id_of<T>());
  };
  add(boolean{}), add(uint8_t{}), add(int8_t{}), add(int16_t{}), add(int32_t{}), add(int64_t{});
  add(half{}), add(bfloat16{}), add(float{}), add(double{}), add(c64{}), add(c128{});
  add(f8e4m3fn{}), add(f8e5m2{});
  return m;
}

// --- loading and storing ------------------------------------------------------------------------------------------

template <class T>
inline value_t<T> load_value(const T &s) {
  if constexpr (is_bool_v<T>)
    return s.v != 0;
  else if constexpr (is_small_v<T>)
    return static_cast<float>(s.to_double());  // exact
  else
    return s;
}

// Rounds a double to a small float format once. Arithmetic overflow of the finite-only e4m3fn is NaN; conversions
// (convert_element_type, fill, creation) saturate to ±448 as the table says.
template <class T>
inline T round_small(double v, bool saturate) {
  T r(v);  // the kit saturates e4m3fn: decide NaN here for arithmetic
  if constexpr (std::is_same_v<T, f8e4m3fn>) {
    if (!saturate && !std::isnan(v) && std::fabs(v) > 464.0) r.bits = static_cast<uint8_t>((r.bits & 0x80u) | 0x7fu);
  }
  return r;
}

template <class T, class V>
inline T store_value(const V &v, bool saturate = false) {
  if constexpr (is_bool_v<T>)
    return boolean{static_cast<uint8_t>(v ? 1 : 0)};
  else if constexpr (is_small_v<T>)
    return round_small<T>(static_cast<double>(v), saturate);
  else
    return static_cast<T>(v);
}

// --- the drivers ----------------------------------------------------------------------------------------------------

// Elements per chunk handed to a worker: cheap ops need large chunks before a second thread pays for its wake-up.
// Cheap ops run serially up to 256 K elements (3 MB for a binary f32 op): there 2 threads gained 1.14-1.25x on a
// quiet machine but lost up to 10% when the host took the second core away mid-chunk, and "threading never hurts"
// is the rule; from 1 M on, 2 threads won in every run (1.15-1.59x).
constexpr int64_t kGrainCheap = int64_t{1} << 18;
constexpr int64_t kGrainCostly = int64_t{1} << 12;

template <class T>
inline T *at(const View &v, int64_t off) {
  return reinterpret_cast<T *>(v.base) + off;
}

// Dense outputs of kStreamingBytes (vec_math.hpp) and more are written with non-temporal stores: a regular store
// first reads the line it writes, a third more memory traffic for a binary op.

// out[i] = f(in_0[i], ..., in_k[i]) for i in [lo, hi), streamed: 256-byte blocks computed into a local buffer (a
// loop the compiler vectorizes like the plain one), each streamed out at once. Measured here for an f32 add:
// 16-byte units assembled lane by lane did not vectorize (scalar loads and shuffles), and blocks of 2 KiB and more
// were slower than plain stores (reads and writes must interleave). The caller fences.
template <class Out, class F, class... In>
inline void stream_chunk(Out *po, int64_t lo, int64_t hi, F &f, const In *...src) {
  int64_t i = lo;
  for (; i < hi && reinterpret_cast<uintptr_t>(po + i) % 16 != 0; ++i) po[i] = f(src[i]...);
#if defined(__SSE2__)
  constexpr int64_t kBlock = 256 / sizeof(Out);
  for (; i + kBlock <= hi; i += kBlock) {
    alignas(16) Out block[kBlock];
    for (int64_t k = 0; k < kBlock; ++k) block[k] = f(src[i + k]...);
    for (size_t b = 0; b < sizeof block; b += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i *>(reinterpret_cast<char *>(po + i) + b),
                       _mm_load_si128(reinterpret_cast<const __m128i *>(reinterpret_cast<const char *>(block) + b)));
    }
  }
#endif
  for (; i < hi; ++i) po[i] = f(src[i]...);
}

// The same with AVX2 (the block computed 8 floats at a time, streamed 32 bytes at a time): an f32 add at one thread
// went from 0.88x to 1.03x the STREAM-like loop. Only "avx2", not "fma": the element function must round exactly
// as in the baseline build (no contraction of a * b + c).
template <class Out, class F, class... In>
__attribute__((target("avx2"))) void stream_chunk_avx2(Out *po, int64_t lo, int64_t hi, F &f, const In *...src) {
  int64_t i = lo;
  for (; i < hi && reinterpret_cast<uintptr_t>(po + i) % 32 != 0; ++i) po[i] = f(src[i]...);
  constexpr int64_t kBlock = 256 / sizeof(Out);
  for (; i + kBlock <= hi; i += kBlock) {
    alignas(32) Out block[kBlock];
    for (int64_t k = 0; k < kBlock; ++k) block[k] = f(src[i + k]...);
    for (size_t b = 0; b < sizeof block; b += 32) {
      _mm256_stream_si256(
          reinterpret_cast<__m256i *>(reinterpret_cast<char *>(po + i) + b),
          _mm256_load_si256(reinterpret_cast<const __m256i *>(reinterpret_cast<const char *>(block) + b)));
    }
  }
  for (; i < hi; ++i) po[i] = f(src[i]...);
}

// out[i] = f(in_0[i], ..., in_k[i]) over n dense elements.
template <class Out, class... In, class F>
void map_dense(Out *po, std::tuple<const In *...> pi, int64_t n, F &f, int64_t grain) {
  const bool streaming = n * static_cast<int64_t>(sizeof(Out)) >= kStreamingBytes && 16 % sizeof(Out) == 0 &&
                         reinterpret_cast<uintptr_t>(po) % sizeof(Out) == 0;
  if (!streaming) {
    parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
      Out *__restrict dst = po;
      std::apply(
          [&](const auto *...src) {
            for (int64_t i = lo; i < hi; ++i) dst[i] = f(src[i]...);
          },
          pi);
    });
    return;
  }
  static const bool avx2 = have_isa(Isa::avx2);
  parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
    std::apply(
        [&](const auto *...src) {
          if (avx2) {
            stream_chunk_avx2(po, lo, hi, f, src...);
          } else {
            stream_chunk(po, lo, hi, f, src...);
          }
        },
        pi);
#if defined(__SSE2__)
    _mm_sfence();  // non-temporal stores are weakly ordered: make them visible before the chunk counts as done
#endif
  });
}

inline int64_t numel_of(const pk_tensor &t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}
template <class T>
inline T *data_of(const pk_tensor &t) {
  return reinterpret_cast<T *>(static_cast<char *>(t.data) + t.byte_offset);
}

// out[i] = f(in_0[i], ..., in_k[i]) over the output's shape; each input has that shape (zero strides allowed).
template <class Out, class... In, class F, size_t... I>
void map_impl(const View &o, const std::array<View, sizeof...(In)> &in, F &&f, int64_t grain,
              std::index_sequence<I...>) {
  if (o.contiguous && (in[I].contiguous && ...)) {
    map_dense<Out, In...>(at<Out>(o, 0), std::tuple<const In *...>{at<const In>(in[I], 0)...}, o.numel, f, grain);
    return;
  }
  constexpr size_t N = sizeof...(In) + 1;
  const std::array<const int64_t *, N> strides{o.strides, in[I].strides...};
  parallel_for(0, o.numel, grain, [&](int64_t lo, int64_t hi) {
    walk<N>(o.shape, o.ndim, strides, {}, lo, hi,
            [&](const std::array<int64_t, N> &off) { *at<Out>(o, off[0]) = f(*at<const In>(in[I], off[I + 1])...); });
  });
}

template <class Out, class... In, class F, size_t... I>
pk_status map_seq(const Launch &l, F &&f, int64_t grain, std::index_sequence<I...> seq) {
  // Descriptors without strides are dense: the common case skips building views (a measurable part of a small
  // launch).
  if (l.outputs[0].strides == nullptr && ((l.inputs[I].strides == nullptr) && ...)) {
    map_dense<Out, In...>(data_of<Out>(l.outputs[0]), std::tuple<const In *...>{data_of<const In>(l.inputs[I])...},
                          numel_of(l.outputs[0]), f, grain);
    return PK_OK;
  }
  const View o = kit::view_of(l.outputs[0]);
  const std::array<View, sizeof...(In)> in{kit::view_of(l.inputs[I])...};
  if (o.numel == 0) return PK_OK;
  map_impl<Out, In...>(o, in, f, grain, seq);
  return PK_OK;
}

template <class Out, class... In, class F>
pk_status map(const Launch &l, F &&f, int64_t grain = kGrainCheap) {
  return map_seq<Out, In...>(l, f, grain, std::index_sequence_for<In...>{});
}

// Output only (fill, creation, RNG): out[i] = g(i) for the row-major linear index i.
template <class Out, class G>
pk_status generate(const Launch &l, G &&g, int64_t grain = kGrainCheap) {
  const View o = kit::view_of(l.outputs[0]);
  if (o.numel == 0) return PK_OK;
  if (o.contiguous) {
    Out *po = at<Out>(o, 0);
    parallel_for(0, o.numel, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = g(i);
    });
    return PK_OK;
  }
  parallel_for(0, o.numel, grain, [&](int64_t lo, int64_t hi) {
    int64_t i = lo;
    walk<1>(o.shape, o.ndim, {o.strides}, {0}, lo, hi,
            [&](const std::array<int64_t, 1> &off) { *at<Out>(o, off[0]) = g(i++); });
  });
  return PK_OK;
}

// An op functor declares `template <class T> static constexpr bool admits` and the value computation. These
// adapters turn it into kernels keyed on input 0's storage type.
template <class Op>
struct Admits {
  template <class T>
  struct pred : std::bool_constant<Op::template admits<T>> {};
};
template <class Op>
constexpr uint32_t mask_of() {
  return mask_where<Admits<Op>::template pred>();
}

// Dispatches on the key input's storage type, instantiating only the dtypes the functor admits.
template <class Op, class Body>
pk_status dispatch(const Launch &l, int32_t dtype, Body &&body) {
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype, [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (Op::template admits<T>) {
        return body(tag);
      } else {
        return kit::fail(PK_UNIMPLEMENTED, l.op->id, 0, "cpu: %s: dtype %s has no kernel", l.op->name,
                         pk::meta::dtype_name(dtype));
      }
    });
  });
}

// Dtype sets of kernels that are not functors.
struct AdmitAll {
  template <class T>
  static constexpr bool admits = true;
};
struct AdmitFloat {
  template <class T>
  static constexpr bool admits = is_float_v<T>;
};
struct AdmitReal {
  template <class T>
  static constexpr bool admits = is_real_v<T>;
};

// out: T  <-  f(a: T)
template <class Op>
pk_status unary(const Launch &l) {
  return dispatch<Op>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const Op op(l);
    return map<T, T>(
        l, [&](const T &a) { return store_value<T>(op(load_value(a))); }, Op::grain);
  });
}

// out: bool  <-  f(a: T)
template <class Op>
pk_status unary_predicate(const Launch &l) {
  return dispatch<Op>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const Op op(l);
    return map<boolean, T>(l, [&](const T &a) { return store_value<boolean>(op(load_value(a))); });
  });
}

// out: real_of(T)  <-  f(a: T)
template <class Op>
pk_status unary_to_real(const Launch &l) {
  return dispatch<Op>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    using R = real_t<T>;
    const Op op(l);
    return map<R, T>(
        l, [&](const T &a) { return store_value<R>(op(load_value(a))); }, Op::grain);
  });
}

// out: T  <-  f(a: T, b: T)
template <class Op>
pk_status binary(const Launch &l) {
  return dispatch<Op>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const Op op(l);
    return map<T, T, T>(
        l, [&](const T &a, const T &b) { return store_value<T>(op(load_value(a), load_value(b))); }, Op::grain);
  });
}

// out: bool  <-  f(a: T, b: T)
template <class Op>
pk_status binary_predicate(const Launch &l) {
  return dispatch<Op>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const Op op(l);
    return map<boolean, T, T>(
        l, [&](const T &a, const T &b) { return store_value<boolean>(op(load_value(a), load_value(b))); });
  });
}

// out: complex_of(T)  <-  f(a: T, b: T)
template <class Op>
pk_status binary_to_complex(const Launch &l) {
  return dispatch<Op>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const Op op(l);
      return map<complex_t<T>, T, T>(
          l, [&](const T &a, const T &b) { return op(a, b); }, Op::grain);
    } else {
      return PK_UNIMPLEMENTED;
    }
  });
}

// --- shared numerics ----------------------------------------------------------------------------------------------

// The math type of a value type: double for f32 and narrower (so one final rounding gives ≤ 1 ulp), double for
// f64, complex<double> for c64 and complex<long double> for c128.
template <class V>
struct math_of {
  using type = double;
};
template <>
struct math_of<c64> {
  using type = std::complex<double>;
};
template <>
struct math_of<c128> {
  using type = std::complex<long double>;
};
template <class V>
using math_t = typename math_of<V>::type;

// Round-to-odd of the exact sum p + q in double: rounding the result once more to any format with at most 51
// significand bits gives the correctly rounded sum.
inline double sum_round_to_odd(double p, double q) {
  const double s = p + q;
  const double bp = s - q;
  const double err = (p - bp) + (q - (s - bp));  // two-sum: s + err == p + q exactly
  if (err == 0 || !std::isfinite(s)) return s;
  uint64_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  if ((bits & 1u) == 0) {
    // Move one ulp toward the exact value: the result's last bit becomes 1 (odd).
    const bool up = (err > 0) == (s > 0);
    bits = up ? bits + 1 : bits - 1;
    double r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
  }
  return s;
}

// Round-to-odd of an int64 in double (exact below 2^53).
inline double int_round_to_odd(int64_t v) {
  const double d = static_cast<double>(v);
  const long double exact = static_cast<long double>(v);
  if (static_cast<long double>(d) == exact) return d;
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  if ((bits & 1u) == 0) {
    const bool up = (static_cast<long double>(d) < exact) == (d > 0);
    bits = up ? bits + 1 : bits - 1;
    double r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
  }
  return d;
}

template <class V>
bool is_finite_complex(V z) {
  return std::isfinite(z.real()) && std::isfinite(z.imag());
}

// Complex products correctly rounded per component: each component is ac - bd of exact products.
inline c64 mul_c64(c64 x, c64 y) {
  const double a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(c) || !std::isfinite(d)) {
    // Products of floats cannot overflow a double, so an infinite part comes only from an infinite input, as in
    // exact arithmetic; std::complex<double> then applies C99 Annex G recovery when both parts are NaN.
    const std::complex<double> r = std::complex<double>(a, b) * std::complex<double>(c, d);
    return {static_cast<float>(r.real()), static_cast<float>(r.imag())};
  }
  return {static_cast<float>(sum_round_to_odd(a * c, -(b * d))), static_cast<float>(sum_round_to_odd(a * d, b * c))};
}

// p1 q1 + p2 q2 correctly rounded to double: both products are exact in binary128 (106 <= 113 significand bits,
// no overflow or underflow), their sum is rounded to odd there, and rounding that to double's 53 bits is then
// correct. Software binary128 costs ~100 ns: only the rare inputs mul_c128's rounding test doubts come here.
__attribute__((noinline)) inline double exact_dot2(double p1, double q1, double p2, double q2) {
  using f128 = __float128;
  const f128 p = static_cast<f128>(p1) * static_cast<f128>(q1), q = static_cast<f128>(p2) * static_cast<f128>(q2);
  f128 s = p + q;
  const f128 bp = s - q, err = (p - bp) + (q - (s - bp));
  if (err != 0) {
    unsigned __int128 bits;
    std::memcpy(&bits, &s, sizeof bits);
    if ((bits & 1u) == 0) {
      const bool up = (err > 0) == (s > 0);
      bits = up ? bits + 1 : bits - 1;
      std::memcpy(&s, &bits, sizeof s);
    }
  }
  return static_cast<double>(s);
}

inline c128 mul_c128(c128 x, c128 y) {
  const double a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(c) || !std::isfinite(d)) {
    // long double has the exponent range to keep finite products finite (see mul_c64).
    const std::complex<long double> r = std::complex<long double>(a, b) * std::complex<long double>(c, d);
    return {static_cast<double>(r.real()), static_cast<double>(r.imag())};
  }
  // ac - bd from exact products (a*c = p + e by fma), summed with one compensated pass: rounding error below
  // 2^-104 relative, so the result is correctly rounded unless the exact value lies within that distance of a
  // midpoint between two doubles, or a product left the exponent range (an fma error term below the subnormal
  // range is inexact; a product may overflow while the difference does not). Those rare inputs are recomputed
  // exactly in binary128 (Ziv's strategy: a fast path with a rounding test, an exact fallback).
  auto dot2 = [](double p1, double q1, double p2, double q2) {
    const double p = p1 * q1, ep = std::fma(p1, q1, -p);
    const double q = p2 * q2, eq = std::fma(p2, q2, -q);
    const double s = p + q, bp = s - q, es = (p - bp) + (q - (s - bp));
    const double r = s + (es + (ep + eq));
    const double tail = (s - r) + (es + (ep + eq));  // ≈ exact - r
    const double half_ulp = 0.5 * (std::nextafter(std::fabs(r), HUGE_VAL) - std::fabs(r));
    const double tiny = 0x1p-960;
    const bool safe = std::isfinite(p) && std::isfinite(q) && std::isfinite(r) && (p == 0 || std::fabs(p) > tiny) &&
                      (q == 0 || std::fabs(q) > tiny) && std::fabs(std::fabs(tail) - half_ulp) > 0x1p-45 * half_ulp;
    return safe ? r : exact_dot2(p1, q1, p2, q2);
  };
  return {dot2(a, c, -b, d), dot2(a, d, b, c)};
}

// --- unary ops ------------------------------------------------------------------------------------------------------

template <class V>
inline V wrap_neg(V x) {
  using U = std::make_unsigned_t<V>;
  return static_cast<V>(static_cast<U>(0) - static_cast<U>(x));
}

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
      return correctly_rounded_abs(x);
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

double cbrt_value(double x);  // below, with the other special functions

// Complex special values follow std::complex (C99 Annex G); `x` is the argument in the math type.
PK_FLOAT_FN(Exp, true, std::exp(x), std::exp(x))
PK_FLOAT_FN(Log, true, std::log(x), std::log(x))
PK_FLOAT_FN(Sqrt, true, std::sqrt(x), M(correctly_rounded_sqrt(v)))
PK_FLOAT_FN(Cos, true, std::cos(x), std::cos(x))
PK_FLOAT_FN(Sin, true, std::sin(x), std::sin(x))
PK_FLOAT_FN(Tanh, true, std::tanh(x), std::tanh(x))
PK_FLOAT_FN(Reciprocal, true, 1.0 / x, M(correctly_rounded_div(decltype(v)(1), v)))
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

// --- special functions (double unless said) -------------------------------------------------------------------------

constexpr double kPi = 3.141592653589793238462643383279502884;
constexpr double kSqrtPi = 1.772453850905516027298167483341145183;
constexpr double kSqrt2 = 1.414213562373095048801688724209698079;

double lgamma_value(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);  // the re-entrant form: lgamma writes the global signgam
}

// Inverse error function: Giles' single-precision approximation, then Newton steps on erf (or on erfc near ±1,
// where 1 - |y| is exact) until the step is below an ulp.
double erf_inv_value(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return HUGE_VAL;
  if (y == -1) return -HUGE_VAL;
  if (y == 0) return y;
  const double ay = std::fabs(y);
  double w = -std::log((1 - ay) * (1 + ay)), x;
  if (w < 5) {
    w -= 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * w;
    x = p * ay;
  } else {
    w = std::sqrt(w) - 3;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * w;
    x = p * ay;
  }
  if (ay > 0.5) {
    // Newton on log erfc(x) = log(1 - |y|) (1 - |y| is exact here): erfc falls by orders of magnitude per unit of x
    // in the tail, where Newton on erfc itself converges slowly and stopped ~0.03 short for y = 1 - 2^-53.
    const double target = std::log1p(-ay);
    for (int it = 0; it < 60; ++it) {
      const double c = std::erfc(x);
      const double step = (std::log(c) - target) / (-2 / kSqrtPi * std::exp(-x * x) / c);
      x -= step;
      if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
    }
    return std::copysign(x, y);
  }
  for (int it = 0; it < 8; ++it) {
    const double f = std::erf(x) - ay;
    const double step = f / (2 / kSqrtPi * std::exp(-x * x));
    x -= step;
    if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
  }
  return std::copysign(x, y);
}

// Inverse of the standard normal CDF: p <= 1/2 is refined on the small tail (exact 1 - p for p > 1/2).
double ndtri_value(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0) return -HUGE_VAL;
  if (p == 1) return HUGE_VAL;
  if (p > 0.5) return -ndtri_value(1 - p);
  if (p < 1e-200) {
    // Deep tail (x < -30): Newton on log Phi(x) = -x^2/2 - log(|x| sqrt(2 pi)) + log(S(x)), S the asymptotic
    // series 1 - 1/x^2 + 3/x^4 - ...; d/dx log Phi = phi/Phi = |x| / S(x).
    const long double lp = std::log(static_cast<long double>(p));
    long double x = -std::sqrt(-2 * lp);
    for (int it = 0; it < 20; ++it) {
      const long double z = 1 / (x * x);
      long double term = 1, series = 1;
      for (int k = 1; k < 12; ++k) {
        term *= -(2 * k - 1) * z;
        series += term;
      }
      const long double log_phi =
          -x * x / 2 - std::log(-x * std::sqrt(2 * 3.141592653589793238462643383279502884L)) + std::log(series);
      const long double step = (log_phi - lp) / (-x / series);
      x -= step;
      if (std::fabs(step) < 1e-18L * std::fabs(x)) break;
    }
    return static_cast<double>(x);
  }
  double x = -kSqrt2 * erf_inv_value(1 - 2 * p);  // a start; 1 - 2p loses bits for tiny p, Halley restores them
  if (!std::isfinite(x)) x = -std::sqrt(-2 * std::log(p));
  if (p < 1e-10) {
    // The tail: Newton on log Phi(x) = log p, d/dx log Phi = phi / Phi. Halley on Phi itself from the crude start
    // -sqrt(-2 log p) needed more than its 4 steps (p = 1.09e-200 was left 2e7 ulps off).
    const double target = std::log(p);
    for (int it = 0; it < 60; ++it) {
      const double phi_big = 0.5 * std::erfc(-x / kSqrt2);
      const double step = (std::log(phi_big) - target) / (std::exp(-x * x / 2) / std::sqrt(2 * kPi) / phi_big);
      x -= step;
      if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
    }
    return x;
  }
  for (int it = 0; it < 8; ++it) {
    const double e = 0.5 * std::erfc(-x / kSqrt2) - p;
    const double u = e * std::sqrt(2 * kPi) * std::exp(x * x / 2);
    const double step = u / (1 + x * u / 2);
    x -= step;
    if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
  }
  return x;
}

// exp(x^2) erfc(x): direct with an exact square for moderate x, the asymptotic series beyond 10.
double erfcx_value(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x > 0 ? 0.0 : HUGE_VAL;
  if (x < 10) {
    const double hi = x * x, lo = std::fma(x, x, -hi);
    // x^2 beyond exp's range: x < 0 here, erfc(x) ~ 2, so the result overflows. (exp(hi) (1 + lo) with hi = inf,
    // or with lo, the rounding error of a huge x^2, below -1, gave -inf.)
    if (!(hi < 710)) return HUGE_VAL;
    return std::exp(hi) * (1 + lo) * std::erfc(x);
  }
  if (std::isinf(x)) return 0;
  const double inv = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    term *= -(2 * k - 1) * inv;
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  return sum * (1 / kSqrtPi) / x;  // not sum / (x sqrt(pi)): that product overflows for x > 1e308
}

// psi(x) for finite non-pole x, in the arithmetic of R (long double, or __float128 near the roots): reflection for
// x < 0 with an exact reduction of x mod 1, recurrence up to 40, then Stirling's series to B_24 (its first omitted
// term is below 2^-120 from 40 on; stopping at 10 with terms to B_14 left ~2e-17 absolute, hundreds of ulps where
// psi is small).
template <class R>
R digamma_terms(double x) {
  static const R coef[12] = {R(1) / 12,        R(-1) / 120,       R(1) / 252,       R(-1) / 240,
                             R(1) / 132,       R(-691) / 32760,   R(1) / 12,        R(-3617) / 8160,
                             R(43867) / 14364, R(-174611) / 6600, R(854513) / 3036, R(-236364091) / 65520};
  R result = 0, v = x;
  if (x < 0) {
    // pi cot(pi x) depends on x mod 1 only: reduce exactly to [-1/2, 1/2] so the small angle keeps its precision.
    const R red = R(x - std::nearbyint(x));
    if constexpr (std::is_same_v<R, long double>) {
      const long double pi = 3.141592653589793238462643383279502884L;
      result = -pi / std::tan(pi * red);
    } else {
      const R pi = acosq(-1);
      result = -pi / tanq(pi * red);
    }
    v = 1 - v;
  }
  while (v < 40) {
    result -= 1 / v;
    v += 1;
  }
  const R z = 1 / (v * v);
  R series = 0;
  for (int k = 11; k >= 0; --k) series = (series + coef[k]) * z;
  if constexpr (std::is_same_v<R, long double>) {
    return result + std::log(v) - 1 / (2 * v) - series;
  } else {
    return result + logq(v) - 1 / (2 * v) - series;
  }
}

// Digamma: reflection for x < 0 (with an exact reduction of x mod 2), recurrence and Stirling's series (digamma_terms),
// a Taylor series at the positive root.
double digamma_value(double x) {
  if (std::isnan(x)) return x;
  if (x == 0) return std::signbit(x) ? HUGE_VAL : -HUGE_VAL;
  if (std::isinf(x)) return x > 0 ? x : std::numeric_limits<double>::quiet_NaN();
  if (x < 0 && x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(x - 1.4616321449683622) < 0.12) {
    // Near the positive root x0 the recurrence below cancels to a tiny result: use the Taylor series at x0
    // (coefficients psi^(k)(x0) / k!, |ratio| ~ 0.68, so 18 terms reach 1e-20 for |x - x0| < 0.12) with x0 split
    // hi + lo so that x - x0 keeps its relative precision.
    static const long double kC[18] = {
        0.9676722454476211704274448L,    -0.4427631689835921060928653L,   0.2584997609556510106244014L,
        -0.1639427054424065275042513L,   0.1078240506912623657571829L,    -0.07219956125645471092612178L,
        0.04880428816414310722509253L,   -0.0331611264748473592922584L,   0.02259764823221810465962483L,
        -0.01542476590494895913880032L,  0.01053879161661217538812405L,   -0.007204534386356868240970474L,
        0.004926781395729853446354266L,  -0.003369801655439328082792857L, 0.00230512632673492783693838L,
        -0.001576936771430197259270935L, 0.001078825201916296580691918L,  -0.0007380709389960051295660474L};
    const long double dx = static_cast<long double>(x - 1.4616321449683622) - 9.549995429965697e-17L;
    long double sum = 0;
    for (int k = 17; k >= 0; --k) sum = (sum + kC[k]) * dx;
    return static_cast<double>(sum);
  }
  const long double r = digamma_terms<long double>(x);
  // The terms are ~ln|x| + |pi cot(pi x)| (a few units): where psi is far smaller than that (near the negative
  // roots, one per unit interval) long double's 2^-64 of them is many f64 ulps; redo those in 113 bits.
  if (std::fabs(r) < 0x1p-6L) return static_cast<double>(digamma_terms<__float128>(x));
  return static_cast<double>(r);
}
// Modified Bessel functions of the first kind, order 0 and 1, scaled by exp(-|x|) when `scaled`: the power series
// (all terms positive, in long double) below 20, the asymptotic expansion above (its smallest term is ~e^-2x).
double bessel_i_value(int order, double xd, bool scaled) {
  if (std::isnan(xd)) return xd;
  const long double x = std::fabs(static_cast<long double>(xd));
  const double sign = (order == 1 && xd < 0) ? -1.0 : 1.0;
  long double r;
  if (x < 20) {
    const long double q = x * x / 4;
    long double term = order == 0 ? 1 : x / 2, sum = term;
    for (int k = 1; k < 200; ++k) {
      term *= q / (static_cast<long double>(k) * (k + order));
      sum += term;
      if (term < sum * 1e-21L) break;
    }
    r = scaled ? sum * std::exp(-x) : sum;
  } else {
    if (std::isinf(xd)) return scaled ? 0.0 : sign * HUGE_VAL;
    const long double mu = 4.0L * order * order;
    long double term = 1, sum = 1;
    for (int k = 1; k < 60; ++k) {
      const long double odd = 2 * k - 1;
      term *= -(mu - odd * odd) / (k * 8 * x);
      sum += term;
      if (std::fabs(term) < 1e-21L * std::fabs(sum)) break;
    }
    const long double pre = 1 / std::sqrt(2 * static_cast<long double>(kPi) * x);
    r = scaled ? pre * sum : (x > 11350 ? HUGE_VALL : pre * sum * std::exp(x));
  }
  return sign * static_cast<double>(r);
}

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

// Hurwitz zeta(s, q) = sum_k (k + q)^-s for s > 1: direct terms, then Euler-Maclaurin with Bernoulli numbers.
// In long double: for q < 0 the terms over negative and positive bases cancel (zeta(3, -3.5): +-8 leave 0.031).
long double hurwitz_zeta_ld(double s, long double q) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(s) || std::isnan(q)) return nan;
  if (s == 1) return HUGE_VAL;
  if (s < 1) return nan;
  if (std::isinf(s)) return q > 1 ? 0.0 : (q == 1 ? 1.0 : HUGE_VAL);  // only the k = 0 term can survive
  if (std::isinf(q))
    return q > 0 ? 0.0 : HUGE_VAL;  // +inf: every term vanishes; -inf: the poles' limit, as for
                                    // the other non-positive integers below
  if (q <= 0) {
    if (q == std::floor(q)) return HUGE_VAL;
    if (s != std::floor(s)) return nan;  // q^-s is complex
    // The terms over negative bases, k < m = ceil(-q), are (-1)^s (f + j)^-s for j < m with f = -(q + m - 1) in
    // (0, 1), i.e. (-1)^s [zeta(s, f) - zeta(s, f + m)]; the rest is zeta(s, q + m). Two
    // positive-argument sums: bounded work however negative q is (stepping one unit at a time from q = -9.35e13
    // to 9 would run for weeks).
    const long double m = std::ceil(-q);
    const long double f = -(q + (m - 1));  // |q + (m - 1)| <= |q|: a multiple of q's ulp, exact
    const long double negative = hurwitz_zeta_ld(s, f) - hurwitz_zeta_ld(s, f + m);
    const long double sign = std::fmod(s, 2.0) == 0 ? 1.0L : -1.0L;
    return sign * negative + hurwitz_zeta_ld(s, q + m);
  }
  // (2k)! / B_2k for k = 1..12, from the Bernoulli numbers B_2 .. B_24.
  static const long double kA[12] = {2.0L / (1.0L / 6),
                                     24.0L / (-1.0L / 30),
                                     720.0L / (1.0L / 42),
                                     40320.0L / (-1.0L / 30),
                                     3628800.0L / (5.0L / 66),
                                     479001600.0L / (-691.0L / 2730),
                                     87178291200.0L / (7.0L / 6),
                                     20922789888000.0L / (-3617.0L / 510),
                                     6402373705728000.0L / (43867.0L / 798),
                                     2432902008176640000.0L / (-174611.0L / 330),
                                     1124000727777607680000.0L / (854513.0L / 138),
                                     620448401733239439360000.0L / (-236364091.0L / 2730)};
  long double sum = std::pow(q, -static_cast<long double>(s)), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -static_cast<long double>(s));
    sum += b;
    // q > 0 here, so the terms only shrink: once one underflows to 0 the rest add nothing (for a huge s the
    // Euler-Maclaurin tail would otherwise meet inf * 0).
    if (b == 0 || std::fabs(b / sum) < 1e-20L) return sum;
  }
  const long double w = a;
  sum += b * w / (s - 1) - 0.5L * b;
  long double fac = 1, k = 0;
  for (int j = 0; j < 12; ++j) {
    fac *= s + k;
    b /= w;
    const long double t = fac * b / kA[j];
    sum += t;
    if (std::fabs(t / sum) < 1e-20L) break;
    k += 1;
    fac *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

double hurwitz_zeta_value(double s, double q) {
  return static_cast<double>(hurwitz_zeta_ld(s, q));
}

// glibc's cbrt is within ~3 ulp; one Newton step in long double brings it inside 1.
double cbrt_value(double x) {
  const double y = std::cbrt(x);
  if (y == 0 || !std::isfinite(y)) return y;
  const long double ly = y;
  return static_cast<double>(ly - (ly * ly * ly - x) / (3 * ly * ly));
}

PK_FLOAT_FN(ErfInv, false, erf_inv_value(x), x)
PK_FLOAT_FN(Erfcx, false, erfcx_value(x), x)
PK_FLOAT_FN(Lgamma, false, lgamma_value(x), x)
PK_FLOAT_FN(Digamma, false, digamma_value(x), x)
PK_FLOAT_FN(Ndtri, false, ndtri_value(x), x)
PK_FLOAT_FN(BesselI0, false, bessel_i_value(0, x, false), x)
PK_FLOAT_FN(BesselI0e, false, bessel_i_value(0, x, true), x)
PK_FLOAT_FN(BesselI1, false, bessel_i_value(1, x, false), x)
PK_FLOAT_FN(BesselI1e, false, bessel_i_value(1, x, true), x)
PK_FLOAT_FN(BesselJ0, false, ::j0(x), x)
PK_FLOAT_FN(BesselJ1, false, ::j1(x), x)
PK_FLOAT_FN(SphericalBesselJ0, false, (x == 0 ? 1.0 : (std::isinf(x) ? 0.0 : std::sin(x) / x)), x)
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

template <class V>
inline bool truth(V x) {
  if constexpr (is_complex_v<V>)
    return x.real() != 0 || x.imag() != 0;
  else
    return x != 0;  // NaN != 0
}

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

// --- binary ops -----------------------------------------------------------------------------------------------------

template <class V>
using uint_of = std::make_unsigned_t<V>;

struct Add {
  static constexpr int64_t grain = kGrainCheap;
  explicit Add(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T> || is_bool_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_same_v<V, bool>)
      return a || b;
    else if constexpr (std::is_integral_v<V>)
      return static_cast<V>(static_cast<uint_of<V>>(a) + static_cast<uint_of<V>>(b));
    else
      return a + b;
  }
};
struct Sub {
  static constexpr int64_t grain = kGrainCheap;
  explicit Sub(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>)
      return static_cast<V>(static_cast<uint_of<V>>(a) - static_cast<uint_of<V>>(b));
    else
      return a - b;
  }
};
struct Mul {
  static constexpr int64_t grain = kGrainCheap;
  explicit Mul(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T> || is_bool_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_same_v<V, bool>)
      return a && b;
    else if constexpr (std::is_integral_v<V>) {
      // Promote to at least unsigned int so u16 * u16 cannot overflow a signed int.
      using W = std::conditional_t<(sizeof(V) < sizeof(unsigned)), unsigned, uint_of<V>>;
      return static_cast<V>(static_cast<W>(static_cast<uint_of<V>>(a)) * static_cast<W>(static_cast<uint_of<V>>(b)));
    } else if constexpr (std::is_same_v<V, c64>)
      return mul_c64(a, b);
    else if constexpr (std::is_same_v<V, c128>)
      return mul_c128(a, b);
    else
      return a * b;
  }
};
struct Div {
  static constexpr int64_t grain = kGrainCheap;
  explicit Div(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<V>) {
        if (b == -1) return wrap_neg(a);  // INT_MIN / -1 wraps to INT_MIN
      }
      return static_cast<V>(a / b);
    } else if constexpr (is_complex_v<V>) {
      return correctly_rounded_div(a, b);
    } else {
      return a / b;
    }
  }
};

// maximum / minimum propagate NaN and order -0 below +0; fmax / fmin ignore one NaN operand.
template <bool kMax, bool kIgnoreNan>
struct Extremum {
  static constexpr int64_t grain = kGrainCheap;
  explicit Extremum(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_real_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(a)) return kIgnoreNan ? b : a;
      if (std::isnan(b)) return kIgnoreNan ? a : b;
      if (a == b) return (std::signbit(a) == kMax) ? b : a;  // max(-0, +0) = +0, min(-0, +0) = -0
    }
    if constexpr (kMax)
      return a > b ? a : b;
    else
      return a < b ? a : b;
  }
};
using Maximum = Extremum<true, false>;
using Minimum = Extremum<false, false>;
using Fmax = Extremum<true, true>;
using Fmin = Extremum<false, true>;

// Shifts by >= the width or by a negative amount give 0 (an arithmetic right shift gives the sign fill).
enum class ShiftKind { left, right_arithmetic, right_logical };
template <ShiftKind kKind>
struct Shift {
  static constexpr int64_t grain = kGrainCheap;
  explicit Shift(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T>;
  template <class V>
  V operator()(V a, V s) const {
    constexpr int bits = 8 * sizeof(V);
    const uint64_t u = static_cast<uint_of<V>>(a);
    const bool arithmetic = kKind == ShiftKind::right_arithmetic && std::is_signed_v<V>;
    if (s < 0 || static_cast<int64_t>(s) >= bits) return (arithmetic && a < 0) ? V(-1) : V(0);
    if constexpr (kKind == ShiftKind::left) return static_cast<V>(u << s);
    if (arithmetic) return static_cast<V>(a >> s);
    return static_cast<V>(u >> s);
  }
};

// C fmod (sign of the dividend) and the Python-style remainder (sign of the divisor).
template <bool kPython>
struct Modulus {
  static constexpr int64_t grain = kGrainCostly;
  explicit Modulus(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_real_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<V>) {
        if (b == -1) return 0;
      }
      V r = static_cast<V>(a % b);
      if constexpr (kPython && std::is_signed_v<V>) {
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<V>(r + b);
      }
      return r;
    } else {
      V r = std::fmod(a, b);  // exact
      if constexpr (kPython) {
        if (r != 0 && (std::signbit(r) != std::signbit(b))) r += b;  // one rounding of the exact result
        if (r == 0) r = std::copysign(V(0), b);
      }
      return r;
    }
  }
};

struct Gcd {
  static constexpr int64_t grain = kGrainCostly;
  explicit Gcd(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    using U = uint_of<V>;
    U x = static_cast<U>(a), y = static_cast<U>(b);
    if constexpr (std::is_signed_v<V>) {
      if (a < 0) x = static_cast<U>(U(0) - x);
      if (b < 0) y = static_cast<U>(U(0) - y);
    }
    return static_cast<V>(std::gcd(x, y));  // gcd(INT_MIN, 0) wraps to INT_MIN like abs
  }
};

#define PK_FLOAT_FN2(NAME, ADMITS, EXPR)           \
  struct NAME {                                    \
    static constexpr int64_t grain = kGrainCostly; \
    explicit NAME(const Launch &) {}               \
    template <class T>                             \
    static constexpr bool admits = ADMITS;         \
    template <class V>                             \
    V operator()(V av, V bv) const {               \
      const double a = av, b = bv;                 \
      return static_cast<V>(EXPR);                 \
    }                                              \
  };
PK_FLOAT_FN2(Atan2, is_float_v<T>, std::atan2(a, b))
PK_FLOAT_FN2(Hypot, is_float_v<T>, std::hypot(a, b))
PK_FLOAT_FN2(Copysign, is_float_v<T>, std::copysign(a, b))
PK_FLOAT_FN2(Igamma, is_float_v<T>, igamma_value(a, b, false))
PK_FLOAT_FN2(Igammac, is_float_v<T>, igamma_value(a, b, true))
PK_FLOAT_FN2(Zeta, std::is_floating_point_v<T>, hurwitz_zeta_value(a, b))
#undef PK_FLOAT_FN2

struct Pow {
  static constexpr int64_t grain = kGrainCostly;
  explicit Pow(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_float_v<T> || is_complex_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (is_complex_v<V>) {
      using M = math_t<V>;
      if (b == V(0)) return V(1);
      if (a == V(0) && b.imag() == 0 && b.real() > 0) return V(0);
      if (is_finite_complex(a) && is_finite_complex(b) && a != V(0)) {
        // The phase of exp(b log a) needs more bits than M has once |b log a| is large (its error grows with
        // it); 2^20 in double and 2^10 in long double keep that error below an ulp of the output.
        const M w = M(b) * std::log(M(a));
        const double limit = std::is_same_v<V, c64> ? 0x1p20 : 0x1p10;
        if (std::fabs(static_cast<double>(w.real())) > limit || std::fabs(static_cast<double>(w.imag())) > limit)
          return wide_phase_pow(a, b);
      }
      const M r = std::pow(M(a), M(b));
      return V(static_cast<typename V::value_type>(r.real()), static_cast<typename V::value_type>(r.imag()));
    } else {
      return static_cast<V>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

// nextafter steps in the STORAGE format, so it works on bits rather than values.
template <class T>
T next_after(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nextafter(a, b);
  } else {
    const double x = a.to_double(), y = b.to_double();
    if (std::isnan(x) || std::isnan(y)) return T(std::numeric_limits<double>::quiet_NaN());
    if (x == y) return b;
    constexpr unsigned sign_bit = 1u << (8 * sizeof(a.bits) - 1);
    if (x == 0) return T::from_bits(static_cast<decltype(a.bits)>(y > 0 ? 1u : (sign_bit | 1u)));
    const bool away = (x < y) == (x > 0);  // away from zero increases the magnitude bits
    return T::from_bits(static_cast<decltype(a.bits)>(away ? a.bits + 1 : a.bits - 1));
  }
}

pk_status k_nextafter(const Launch &l) {
  return dispatch<AdmitFloat>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    return map<T, T, T>(l, [](const T &a, const T &b) { return next_after(a, b); });
  });
}

// Bitwise ops keep the dtype (bool: the logical ones).
template <int kOp>  // 0 and, 1 or, 2 xor
struct Bitwise {
  static constexpr int64_t grain = kGrainCheap;
  explicit Bitwise(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T> || is_bool_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_same_v<V, bool>)
      return kOp == 0 ? (a && b) : kOp == 1 ? (a || b) : (a != b);
    else
      return static_cast<V>(kOp == 0 ? (a & b) : kOp == 1 ? (a | b) : (a ^ b));
  }
};

// Logical and comparison ops (out: bool).
template <int kOp>  // 0 and, 1 or, 2 xor
struct Logical {
  explicit Logical(const Launch &) {}
  template <class T>
  static constexpr bool admits = true;
  template <class V>
  bool operator()(V a, V b) const {
    const bool x = truth(a), y = truth(b);
    return kOp == 0 ? (x && y) : kOp == 1 ? (x || y) : (x != y);
  }
};

enum class Cmp { lt, le, gt, ge, eq, ne };
template <Cmp kCmp>
struct Compare {
  explicit Compare(const Launch &) {}
  template <class T>
  static constexpr bool admits = (kCmp == Cmp::eq || kCmp == Cmp::ne) ? true : is_real_v<T>;
  template <class V>
  bool operator()(V a, V b) const {
    if constexpr (kCmp == Cmp::eq)
      return a == b;
    else if constexpr (kCmp == Cmp::ne)
      return !(a == b);
    else if constexpr (kCmp == Cmp::lt)
      return a < b;
    else if constexpr (kCmp == Cmp::le)
      return a <= b;
    else if constexpr (kCmp == Cmp::gt)
      return a > b;
    else
      return a >= b;
  }
};

// complex(real, imag) and polar(abs, angle): f32 -> c64, f64 -> c128.
struct MakeComplex {
  static constexpr int64_t grain = kGrainCheap;
  explicit MakeComplex(const Launch &) {}
  template <class T>
  static constexpr bool admits = std::is_floating_point_v<T>;
  template <class V>
  std::complex<V> operator()(V re, V im) const {
    return {re, im};
  }
};
struct Polar {
  static constexpr int64_t grain = kGrainCostly;
  explicit Polar(const Launch &) {}
  template <class T>
  static constexpr bool admits = std::is_floating_point_v<T>;
  template <class V>
  std::complex<V> operator()(V r, V theta) const {
    using M = std::conditional_t<std::is_same_v<V, float>, double, long double>;
    const M m = r, t = theta;
    return {static_cast<V>(m * std::cos(t)), static_cast<V>(m * std::sin(t))};
  }
};

// --- ternary
// ----------------------------------------------------------------------------------------------------------

pk_status k_where(const Launch &l) {
  return dispatch<AdmitAll>(l, dtype_of(l.inputs[1]), [&](auto tag) {
    using T = decltype(tag);
    return map<T, boolean, T, T>(l, [](const boolean &p, const T &a, const T &b) { return p.v ? a : b; });
  });
}

// fma with one rounding: std::fma for f32 / f64; the 8/16-bit formats take the exact product in double and a
// round-to-odd sum, so the final rounding to the format is the correct one.
pk_status k_fma(const Launch &l) {
  return dispatch<AdmitFloat>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    return map<T, T, T, T>(
        l,
        [](const T &a, const T &b, const T &c) -> T {
          if constexpr (std::is_floating_point_v<T>) {
            return std::fma(a, b, c);
          } else {
            const double p = static_cast<double>(load_value(a)) * static_cast<double>(load_value(b));  // exact
            return store_value<T>(sum_round_to_odd(p, static_cast<double>(load_value(c))));
          }
        },
        kGrainCostly);
  });
}

// --- conversion
// -------------------------------------------------------------------------------------------------------

// convert_element_type: float -> int truncates and saturates (NaN -> 0); int -> int wraps; -> bool is != 0;
// complex -> real drops the imaginary part; to e4m3fn saturates.
template <class To, class From>
To convert(const From &s) {
  const auto v = load_value(s);
  using VF = std::remove_cv_t<decltype(v)>;
  if constexpr (is_bool_v<To>) {
    return boolean{static_cast<uint8_t>(truth(v) ? 1 : 0)};
  } else if constexpr (is_complex_v<To>) {
    using R = typename To::value_type;
    if constexpr (is_complex_v<VF>)
      return To(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    else
      return To(convert<R>(s), R(0));
  } else if constexpr (is_complex_v<VF>) {
    return convert<To>(v.real());
  } else if constexpr (is_int_v<To>) {
    if constexpr (std::is_floating_point_v<VF>) {
      if (std::isnan(v)) return 0;
      const double t = std::trunc(static_cast<double>(v));
      if (t <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
      // max() of i64 is not a double: 2^63 compares >= exactly.
      if (t >= std::ldexp(1.0, 8 * sizeof(To) - (std::is_signed_v<To> ? 1 : 0))) return std::numeric_limits<To>::max();
      return static_cast<To>(t);
    } else {
      return static_cast<To>(static_cast<uint_of<To>>(static_cast<uint64_t>(v)));  // wraps
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);  // int -> float and narrowing float -> float round to nearest even
  } else {                      // the 8/16-bit formats
    if constexpr (std::is_integral_v<VF> || std::is_same_v<VF, bool>) {
      return round_small<To>(int_round_to_odd(static_cast<int64_t>(v)), true);
    } else {
      return round_small<To>(static_cast<double>(v), true);
    }
  }
}

pk_status k_convert_element_type(const Launch &l) {
  const int32_t from = dtype_of(l.inputs[0]), to = dtype_of(l.outputs[0]);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(from, [&](auto ftag) -> pk_status {
      using F = decltype(ftag);
      return kit::dispatch_dtype(to, [&](auto ttag) -> pk_status {
        using T = decltype(ttag);
        return map<T, F>(l, [](const F &a) { return convert<T>(a); });
      });
    });
  });
}

// clone: a copy into the output's own layout, by element size.
pk_status k_clone(const Launch &l) {
  const View in = kit::view_of(l.inputs[0]);
  const View out = kit::view_of(l.outputs[0]);
  if (in.contiguous && out.contiguous) {
    const size_t bytes = static_cast<size_t>(out.numel) * out.esize;
    parallel_for(0, static_cast<int64_t>(bytes), int64_t{1} << 20, [&](int64_t lo, int64_t hi) {
      std::memcpy(out.base + lo, in.base + lo, static_cast<size_t>(hi - lo));
    });
    return PK_OK;
  }
  auto copy = [&](auto tag) {
    using E = decltype(tag);
    return map<E, E>(l, [](const E &a) { return a; });
  };
  switch (out.esize) {
    case 1:
      return copy(uint8_t{});
    case 2:
      return copy(uint16_t{});
    case 4:
      return copy(uint32_t{});
    case 8:
      return copy(uint64_t{});
    default:
      return copy(c128{});
  }
}

// The value a double converts to, as convert_element_type converts an f64.
template <class T>
T from_double(double v) {
  return convert<T>(v);
}

pk_status k_fill(const Launch &l) {
  const double value = attrs_of<pk_attrs_fill>(l).value;
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const T v = from_double<T>(value);
      return generate<T>(l, [v](int64_t) { return v; });
    });
  });
}

// --- creation
// -----------------------------------------------------------------------------------------------------------

pk_status k_full(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_full>(l);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const T v = from_double<T>(a.value);
      return generate<T>(l, [v](int64_t) { return v; });
    });
  });
}

pk_status k_scalar_tensor(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_scalar_tensor>(l);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const T v = from_double<T>(a.value);
      return generate<T>(l, [v](int64_t) { return v; });
    });
  });
}

pk_status k_iota(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_iota>(l);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const uint64_t start = static_cast<uint64_t>(a.start), step = static_cast<uint64_t>(a.step);
      return generate<T>(l, [=](int64_t i) {
        return convert<T>(static_cast<int64_t>(start + step * static_cast<uint64_t>(i)));  // i64 arithmetic wraps
      });
    });
  });
}

// The largest (or lowest) finite value of a dtype; true / false for bool.
template <class T, bool kMax>
T extreme_value() {
  if constexpr (is_bool_v<T>)
    return boolean{static_cast<uint8_t>(kMax ? 1 : 0)};
  else if constexpr (is_complex_v<T>)
    return T(extreme_value<typename T::value_type, kMax>(), 0);
  else if constexpr (is_small_v<T>) {
    // The largest finite bit pattern: exponent field all ones minus one (IEEE-like) or mantissa 110 (e4m3fn).
    using B = decltype(T{}.bits);
    constexpr int total = 8 * sizeof(B);
    B mag;
    if constexpr (std::is_same_v<T, half>)
      mag = 0x7bff;
    else if constexpr (std::is_same_v<T, bfloat16>)
      mag = 0x7f7f;
    else if constexpr (std::is_same_v<T, f8e4m3fn>)
      mag = 0x7e;
    else
      mag = 0x7b;  // e5m2
    return T::from_bits(static_cast<B>(kMax ? mag : (mag | (B{1} << (total - 1)))));
  } else {
    return kMax ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
  }
}

template <bool kMax>
pk_status k_extreme_value(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const T v = extreme_value<T, kMax>();
      return generate<T>(l, [v](int64_t) { return v; });
    });
  });
}

// --- counter-based RNG
// ---------------------------------------------------------------------------------------------------- Element i reads
// word i % 4 of Philox4x32-10(counter = offset + i / 4, key = seed): the 64-bit counter fills words 0 (low) and 1
// (high), words 2 and 3 are zero; the key is the seed's low and high 32 bits.

void philox(uint64_t counter, uint64_t seed, uint32_t out[4]) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0, p1 = uint64_t{0xCD9E8D57u} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

uint32_t philox_word(uint64_t offset, uint64_t seed, int64_t i) {
  uint32_t w[4];
  philox(offset + static_cast<uint64_t>(i) / 4, seed, w);
  return w[i % 4];
}

// Rounds v down (toward -inf) to the format, so a uniform draw never reaches `high`.
template <class T>
T round_down(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    const float r = static_cast<float>(v);
    return static_cast<double>(r) > v ? std::nextafter(r, -HUGE_VALF) : r;
  } else {
    const T r = round_small<T>(v, true);
    return r.to_double() > v ? next_after(r, T(-HUGE_VAL)) : r;
  }
}

pk_status k_philox_uniform(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_philox_uniform>(l);
  return dispatch<AdmitFloat>(l, dtype_of(l.outputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const uint64_t offset = static_cast<uint64_t>(a.offset), seed = static_cast<uint64_t>(a.seed);
    const double low = a.low, span = a.high - a.low;
    return generate<T>(
        l, [=](int64_t i) { return round_down<T>(low + span * std::ldexp(philox_word(offset, seed, i), -32)); },
        kGrainCostly);
  });
}

pk_status k_philox_normal(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_philox_normal>(l);
  return dispatch<AdmitFloat>(l, dtype_of(l.outputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const uint64_t offset = static_cast<uint64_t>(a.offset), seed = static_cast<uint64_t>(a.seed);
    const double mean = a.mean, stddev = a.std;
    return generate<T>(
        l,
        [=](int64_t i) {
          uint32_t w[4];
          philox(offset + static_cast<uint64_t>(i) / 4, seed, w);
          const int pair = static_cast<int>(i % 4) / 2;  // elements 4k, 4k+1 use (w0, w1); 4k+2, 4k+3 use (w2, w3)
          const double u1 = (static_cast<double>(w[2 * pair]) + 1) * 0x1p-32, u2 = w[2 * pair + 1] * 0x1p-32;
          // In long double, with 2 pi u2 reduced exactly to a quadrant and |angle| <= pi/4: near a zero of
          // cos or sin the value is tiny, and an angle rounded in double would leave it only absolutely accurate.
          const long double r = std::sqrt(-2 * std::log(static_cast<long double>(u1)));
          const double quarter = std::nearbyint(4 * u2);  // 4 u2 and u2 - quarter / 4 are exact
          const long double angle = 2 * 3.141592653589793238462643383279502884L * (u2 - quarter / 4);
          const long double sn = std::sin(angle), cs = std::cos(angle);
          const int q = static_cast<int>(quarter) & 3;  // rotate by q quarter turns
          const long double cos_v = q == 0 ? cs : q == 1 ? -sn : q == 2 ? -cs : sn;
          const long double sin_v = q == 0 ? sn : q == 1 ? cs : q == 2 ? -sn : -cs;
          const long double z = r * ((i % 2 == 0) ? cos_v : sin_v);
          return store_value<T>(static_cast<double>(mean + stddev * z), true);
        },
        kGrainCostly);
  });
}

pk_status k_philox_randint(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_philox_randint>(l);
  return dispatch<AdmitReal>(l, dtype_of(l.outputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const uint64_t offset = static_cast<uint64_t>(a.offset), seed = static_cast<uint64_t>(a.seed);
    const uint64_t span = static_cast<uint64_t>(a.high) - static_cast<uint64_t>(a.low);
    const int64_t low = a.low;
    return generate<T>(l, [=](int64_t i) {
      return convert<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + philox_word(offset, seed, i) % span));
    });
  });
}

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

pk_status k_exp(const Launch &l) {
  using VecExp = void (*)(const float *, float *, int64_t, int64_t);
  static const VecExp vec_exp = have_isa(Isa::avx2) ? exp_f32_avx2 : nullptr;
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

}  // namespace

void register_elementwise_kernels(KernelRegistry &r) {
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
  u(PK_OP_TANH, unary<Tanh>, mask_of<Tanh>());
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
  u(PK_OP_FILL, k_fill, kAll);
  // binary
  u(PK_OP_ADD, binary<Add>, mask_of<Add>());
  u(PK_OP_SUB, binary<Sub>, mask_of<Sub>());
  u(PK_OP_MUL, binary<Mul>, mask_of<Mul>());
  u(PK_OP_DIV, binary<Div>, mask_of<Div>());
  u(PK_OP_MAXIMUM, binary<Maximum>, mask_of<Maximum>());
  u(PK_OP_MINIMUM, binary<Minimum>, mask_of<Minimum>());
  u(PK_OP_FMAX, binary<Fmax>, mask_of<Fmax>());
  u(PK_OP_FMIN, binary<Fmin>, mask_of<Fmin>());
  u(PK_OP_SHIFT_LEFT, binary<Shift<ShiftKind::left>>, mask_of<Shift<ShiftKind::left>>());
  u(PK_OP_SHIFT_RIGHT_ARITHMETIC, binary<Shift<ShiftKind::right_arithmetic>>,
    mask_of<Shift<ShiftKind::right_arithmetic>>());
  u(PK_OP_SHIFT_RIGHT_LOGICAL, binary<Shift<ShiftKind::right_logical>>, mask_of<Shift<ShiftKind::right_logical>>());
  u(PK_OP_FMOD, binary<Modulus<false>>, mask_of<Modulus<false>>());
  u(PK_OP_REMAINDER, binary<Modulus<true>>, mask_of<Modulus<true>>());
  u(PK_OP_GCD, binary<Gcd>, mask_of<Gcd>());
  u(PK_OP_POW, binary<Pow>, mask_of<Pow>());
  u(PK_OP_ATAN2, binary<Atan2>, mask_of<Atan2>());
  u(PK_OP_HYPOT, binary<Hypot>, mask_of<Hypot>());
  u(PK_OP_COPYSIGN, binary<Copysign>, mask_of<Copysign>());
  u(PK_OP_IGAMMA, binary<Igamma>, mask_of<Igamma>());
  u(PK_OP_IGAMMAC, binary<Igammac>, mask_of<Igammac>());
  u(PK_OP_ZETA, binary<Zeta>, mask_of<Zeta>());
  u(PK_OP_NEXTAFTER, k_nextafter, kFloat);
  u(PK_OP_BITWISE_AND, binary<Bitwise<0>>, mask_of<Bitwise<0>>());
  u(PK_OP_BITWISE_OR, binary<Bitwise<1>>, mask_of<Bitwise<1>>());
  u(PK_OP_BITWISE_XOR, binary<Bitwise<2>>, mask_of<Bitwise<2>>());
  u(PK_OP_LOGICAL_AND, binary_predicate<Logical<0>>, mask_of<Logical<0>>());
  u(PK_OP_LOGICAL_OR, binary_predicate<Logical<1>>, mask_of<Logical<1>>());
  u(PK_OP_LOGICAL_XOR, binary_predicate<Logical<2>>, mask_of<Logical<2>>());
  u(PK_OP_LT, binary_predicate<Compare<Cmp::lt>>, mask_of<Compare<Cmp::lt>>());
  u(PK_OP_LE, binary_predicate<Compare<Cmp::le>>, mask_of<Compare<Cmp::le>>());
  u(PK_OP_GT, binary_predicate<Compare<Cmp::gt>>, mask_of<Compare<Cmp::gt>>());
  u(PK_OP_GE, binary_predicate<Compare<Cmp::ge>>, mask_of<Compare<Cmp::ge>>());
  u(PK_OP_EQ, binary_predicate<Compare<Cmp::eq>>, mask_of<Compare<Cmp::eq>>());
  u(PK_OP_NE, binary_predicate<Compare<Cmp::ne>>, mask_of<Compare<Cmp::ne>>());
  u(PK_OP_COMPLEX, binary_to_complex<MakeComplex>, mask_of<MakeComplex>());
  u(PK_OP_POLAR, binary_to_complex<Polar>, mask_of<Polar>());
  // ternary, conversion, creation, rng
  u(PK_OP_WHERE, k_where, kAll);
  u(PK_OP_FMA, k_fma, kFloat);
  u(PK_OP_CONVERT_ELEMENT_TYPE, k_convert_element_type, kAll);
  u(PK_OP_CLONE, k_clone, kAll);
  u(PK_OP_FULL, k_full, kAll);
  u(PK_OP_SCALAR_TENSOR, k_scalar_tensor, kAll);
  u(PK_OP_IOTA, k_iota, kAll);
  u(PK_OP_MAXIMUM_VALUE, k_extreme_value<true>, kAll);
  u(PK_OP_MINIMUM_VALUE, k_extreme_value<false>, kAll);
  u(PK_OP_PHILOX_UNIFORM, k_philox_uniform, kFloat);
  u(PK_OP_PHILOX_NORMAL, k_philox_normal, kFloat);
  u(PK_OP_PHILOX_RANDINT, k_philox_randint, kReal);
}

}  // namespace pk::cpu
