// elementwise.hpp — what the CPU backend's elementwise kernel files share: dtypes as types, loading and storing,
// the drivers and the functor adapters, the numerics several op families use, the special functions
// (elementwise_special.cpp) and each file's registration function. Private to backends/cpu: one file per op
// family (elementwise_unary.cpp, elementwise_binary.cpp, elementwise_creation.cpp), all registered by
// register_elementwise_kernels (kernels_elementwise.cpp).
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
//     f64 uses glibc's double functions (≤ a few ulp); special functions glibc lacks are implemented with
//     algorithms accurate well inside the table's ULP bounds: erf_inv, erfcx, ndtri, digamma, the Bessel
//     functions, the incomplete gamma functions and Hurwitz zeta in the device math every backend shares
//     (sdk/devmath, double and double-double); so are lgamma and the complex functions but pow: exp, log, sin, cos,
//     tanh, and the correctly rounded products, quotients, moduli and square roots (c64 and c128).
//   * integers wrap (computed in the unsigned type of the same width), division truncates, x / 0 = 0.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cpu_kernels.hpp"
#include "devmath.hpp"
#include "vec_math.hpp"

namespace pk::cpu::elementwise {

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

// Complex products, quotients, moduli and square roots are the device math's (sdk/devmath/complex.h), the same
// source as the OpenCL and generated kernels': each part correctly rounded, a c64 part rounded once to float there
// (f32 = 1), so that converting its double back to float is exact.
template <class V>
V devmath_arith(void (*fn)(double, double, double, double, int, double *), V x, V y) {
  double r[2];
  fn(x.real(), x.imag(), y.real(), y.imag(), std::is_same_v<V, c64>, r);
  return V(static_cast<typename V::value_type>(r[0]), static_cast<typename V::value_type>(r[1]));
}
template <class V>
V devmath_sqrt(V z) {
  double r[2];
  devmath::pk_dm_csqrt(z.real(), z.imag(), std::is_same_v<V, c64>, r);
  return V(static_cast<typename V::value_type>(r[0]), static_cast<typename V::value_type>(r[1]));
}
template <class V>
typename V::value_type devmath_abs(V z) {
  return static_cast<typename V::value_type>(devmath::pk_dm_cabs(z.real(), z.imag(), std::is_same_v<V, c64>));
}

// --- helpers of several op families ---------------------------------------------------------------------------

constexpr double kPi = 3.141592653589793238462643383279502884;

template <class V>
inline V wrap_neg(V x) {
  using U = std::make_unsigned_t<V>;
  return static_cast<V>(static_cast<U>(0) - static_cast<U>(x));
}

template <class V>
inline bool truth(V x) {
  if constexpr (is_complex_v<V>)
    return x.real() != 0 || x.imag() != 0;
  else
    return x != 0;  // NaN != 0
}

template <class V>
using uint_of = std::make_unsigned_t<V>;

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

// --- special functions (elementwise_special.cpp; double unless said) ---------------------------------------------

double cbrt_value(double x);

// --- registration ------------------------------------------------------------------------------------------------

// Each op file registers its kernels; register_elementwise_kernels calls these in this order.
void register_unary_kernels(KernelRegistry &r);                // elementwise_unary.cpp
void register_fill_kernel(KernelRegistry &r);                  // elementwise_creation.cpp
void register_binary_kernels(KernelRegistry &r);               // elementwise_binary.cpp
void register_ternary_kernels(KernelRegistry &r);              // elementwise_binary.cpp
void register_conversion_creation_kernels(KernelRegistry &r);  // elementwise_creation.cpp

}  // namespace pk::cpu::elementwise
