// kernels_linalg.cpp — matmul, batch_matmul, dot_general, linear / addmm / baddbmm, convolution, pooling and the
// FFTs.
//
// Every contraction is brought to one shape: operands are packed (permuted, converted to the accumulation type)
// into dense [B, M, K] and [B, K, N] buffers, a batched matmul runs on those, and the dense [B, M, N] result is
// stored through the output's strides. Accumulation: float for f16/bf16/fp8/f32, double for f64,
// std::complex<double> for complex, uint64 for integers (which then wrap to their width on the store).
// With PRIMKIT_CPU_HAVE_ONEDNN, f32 matmuls and f16/bf16/f32 convolutions (widened to f32) run on oneDNN; bf16
// matmuls and convolutions run on oneDNN's native bf16 kernels where the CPU has them (AVX-512 BF16, AMX) and the
// values are in their exact range; max_pool2d and avg_pool2d of f16, bf16 and f32 (widened to f32) run on it where
// the values allow. Any oneDNN failure falls back to the loops here, so the answer never depends on it.
//
// FFTs run in double on each listed axis in turn: radix-2 for powers of two, Bluestein (through a power-of-two
// FFT) for other lengths above a small size, a direct DFT below it. Twiddles come from sincos of 2 pi m / n with
// m reduced exactly (j k mod n) in integers.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_kernels.hpp"
#include "onednn_matmul.hpp"

namespace pk::cpu {
namespace {

using kit::View;
using kit::walk;
using cd = std::complex<double>;

void dense_strides(const int64_t *shape, int32_t ndim, int64_t *out) {
  int64_t s = 1;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    out[d] = s;
    s *= shape[d];
  }
}

// Chunks that allocate scratch must not throw through parallel_for; a failure is reported after the loop.
template <class F>
pk_status parallel_with_scratch(const Launch &l, int64_t n, int64_t grain, F &&f) {
  std::atomic<bool> failed{false};
  parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
    try {
      f(lo, hi);
    } catch (...) {
      failed.store(true, std::memory_order_relaxed);
    }
  });
  if (failed.load()) return kit::fail(PK_ERROR_OUT_OF_MEMORY, l.op->id, -1, "%s: out of host memory", l.op->name);
  return PK_OK;
}

// --- accumulation types -----------------------------------------------------------------------------------------

template <class T>
struct acc_type {
  using type = float;  // f16, bf16, fp8, f32
};
template <>
struct acc_type<double> {
  using type = double;
};
template <class R>
struct acc_type<std::complex<R>> {
  using type = cd;
};
template <>
struct acc_type<uint8_t> {
  using type = uint64_t;
};
template <>
struct acc_type<int8_t> {
  using type = uint64_t;
};
template <>
struct acc_type<int16_t> {
  using type = uint64_t;
};
template <>
struct acc_type<int32_t> {
  using type = uint64_t;
};
template <>
struct acc_type<int64_t> {
  using type = uint64_t;
};
template <class T>
using acc_t = typename acc_type<T>::type;

// bf16 <-> f32 on the bits, so that the conversion loops vectorize (kit's generic decoder goes through double and
// branches): widening is a shift; narrowing rounds to nearest even on the low 16 bits, as kit::store_as does, and a
// NaN becomes bf16's quiet NaN with its sign, as kit's encoder gives.
inline float bf16_bits_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

template <class A, class T>
inline A to_acc(const T &v) {
  if constexpr (std::is_same_v<T, A>) {
    return v;
  } else if constexpr (std::is_same_v<T, kit::bfloat16> && std::is_same_v<A, float>) {
    return bf16_bits_to_float(v.bits);
  } else if constexpr (kit::is_complex<T>::value) {
    return A(static_cast<double>(v.real()), static_cast<double>(v.imag()));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<A>(v);  // sign-extends, so uint64 arithmetic wraps like the signed type
  } else {
    return static_cast<A>(kit::load(v));
  }
}

template <class T, class A>
inline T from_acc(const A &v) {
  if constexpr (std::is_same_v<T, kit::bfloat16> && std::is_same_v<A, float>) {
    return kit::bfloat16::from_bits(float_to_bf16_bits(v));
  } else if constexpr (kit::is_complex<T>::value) {
    using R = typename T::value_type;
    return T(static_cast<R>(v.real()), static_cast<R>(v.imag()));
  } else {
    return kit::store_as<T>(v);
  }
}

// Per-thread buffers reused across launches, by slot (operands a, b and c, result): a fresh buffer costs a page
// fault per 4 KiB on first touch (about 15 us each here), which for a 1024^2 operand took longer than converting
// it. They keep the largest size seen on the thread, like a caching allocator. Each starts on a cache line (malloc
// gives 16 bytes past a page for large blocks): oneDNN's kernels ran 15-20 % slower on the misaligned ones.
enum ScratchSlot { kScratchA, kScratchB, kScratchC, kScratchOut, kScratchSlots };
template <class A>
A *scratch(ScratchSlot slot, size_t count) {
  constexpr size_t kLine = 64, kSlack = kLine / sizeof(A) + 1;
  thread_local std::vector<A> bufs[kScratchSlots];
  std::vector<A> &b = bufs[slot];
  if (b.size() < count + kSlack) {
    b.clear();
    b.shrink_to_fit();
    b.resize(count + kSlack);
  }
  const size_t misaligned = reinterpret_cast<uintptr_t>(b.data()) % kLine;
  return b.data() + (misaligned % sizeof(A) == 0 ? (kLine - misaligned) % kLine / sizeof(A) : 0);
}

// Dense copy of a view with its axes in `perm` order, converted to A, in the thread's scratch slot. When no
// conversion or permutation is needed and the view is dense already, its storage is used in place.
template <class T, class A>
struct Packed {
  const A *ptr = nullptr;

  Packed(const View &v, const int32_t *perm, ScratchSlot slot) {
    bool identity = v.contiguous;
    for (int32_t d = 0; d < v.ndim; ++d) identity = identity && perm[d] == d;
    if constexpr (std::is_same_v<T, A>) {
      if (identity) {
        ptr = v.at<A>(0);
        return;
      }
    }
    int64_t shape[PK_MAX_RANK], st[PK_MAX_RANK];
    for (int32_t d = 0; d < v.ndim; ++d) {
      shape[d] = v.shape[perm[d]];
      st[d] = v.strides[perm[d]];
    }
    A *dst = scratch<A>(slot, static_cast<size_t>(v.numel));
    if (identity) {  // a plain conversion loop, which the vectorizer takes (bf16: a shift) and the walker is not
      const T *src = v.at<T>(0);
      parallel_for(0, v.numel, 16384, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) dst[i] = to_acc<A>(src[i]);
      });
      ptr = dst;
      return;
    }
    parallel_for(0, v.numel, 16384, [&](int64_t lo, int64_t hi) {
      int64_t i = lo;
      walk<1>(shape, v.ndim, {st}, {0}, lo, hi,
              [&](const std::array<int64_t, 1> &o) { dst[i++] = to_acc<A>(*v.at<T>(o[0])); });
    });
    ptr = dst;
  }
};

// Whether v is finite (integers always are).
template <class A>
inline bool finite_value(const A &v) {
  if constexpr (std::is_integral_v<A>) {
    return true;
  } else if constexpr (kit::is_complex<A>::value) {
    return std::isfinite(v.real()) && std::isfinite(v.imag());
  } else {
    return std::fabs(v) <= std::numeric_limits<A>::max();  // NaN fails too; a compare the vectorizer takes
  }
}

// Stores a dense row-major buffer into a view of the same element count (row-major order on both sides). Returns
// whether every source value was finite.
template <class T, class A>
bool store_dense(const View &out, const A *src) {
  std::atomic<bool> finite{true};
  if (out.contiguous) {
    T *dst = out.at<T>(0);
    parallel_for(0, out.numel, 16384, [&](int64_t lo, int64_t hi) {
      int ok = 1;
      for (int64_t i = lo; i < hi; ++i) {
        dst[i] = from_acc<T>(src[i]);
        ok &= finite_value(src[i]);
      }
      if (!ok) finite.store(false, std::memory_order_relaxed);
    });
    return finite.load();
  }
  parallel_for(0, out.numel, 16384, [&](int64_t lo, int64_t hi) {
    int64_t i = lo;
    int ok = 1;
    walk<1>(out.shape, out.ndim, {out.strides}, {0}, lo, hi, [&](const std::array<int64_t, 1> &o) {
      ok &= finite_value(src[i]);
      *out.at<T>(o[0]) = from_acc<T>(src[i++]);
    });
    if (!ok) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}

// --- batched matmul ---------------------------------------------------------------------------------------------

// c[b] = a[b] x bm[b] for dense a [B, M, K], bm [B, K, N], c [B, M, N]; i-k-j order keeps the B row and the C row in
// cache, and each c element sums its K products in order.
template <class A>
void bmm_loops(const A *a, const A *bm, A *c, int64_t B, int64_t M, int64_t K, int64_t N) {
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, K * N));
  parallel_for(0, B * M, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t b = r / M;
      A *crow = c + r * N;
      std::fill(crow, crow + N, A{});
      const A *arow = a + r * K;
      const A *bmat = bm + b * K * N;
      for (int64_t k = 0; k < K; ++k) {
        const A av = arow[k];
        const A *brow = bmat + k * N;
        for (int64_t j = 0; j < N; ++j) crow[j] += av * brow[j];
      }
    }
  });
}

// oneDNN 3.2's AMX bf16 kernels read a plain [K, N] right operand slower than their own blocked layout (an
// AVX-512 + AMX Xeon, 1 thread, 1024^3: 3.43 ms plain, 2.87 ms blocked including the reorder). Where the product
// has enough rows to pay for one pass over that operand (M >= kRelayoutRows), it is first reordered into scratch
// in the layout the primitive asks for. A reorder is a copy, so the product's values are unchanged.
#ifdef PRIMKIT_CPU_HAVE_ONEDNN
constexpr int64_t kRelayoutRows = 256;
// dnnl_engine() (onednn_matmul.hpp) is the one engine. oneDNN caches the primitives it creates (its primitive
// cache), so building one per launch is cheap after the first.

template <class E>
constexpr dnnl::memory::data_type dnnl_type() {
  static_assert(std::is_same_v<E, float> || std::is_same_v<E, kit::bfloat16>);
  return std::is_same_v<E, float> ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
}

// c = a x bm on oneDNN's matmul primitive, bf16 operands (the AMX / AVX-512 BF16 kernels; f32 products take sgemm,
// bmm_fast) and the result of type Out (f32 or bf16); false when oneDNN has no such primitive here or fails (c may
// then hold anything).
template <class In, class Out>
bool bmm_onednn(const In *a, const In *bm, Out *c, int64_t B, int64_t M, int64_t K, int64_t N) {
  try {
    using dnnl::memory;
    using tag = memory::format_tag;
    dnnl::engine &eng = dnnl_engine();
    static_assert(std::is_same_v<In, kit::bfloat16>);
    const bool relayout = M >= kRelayoutRows && N > 1 && K > 1;
    const memory::desc amd({B, M, K}, dnnl_type<In>(), tag::abc);
    const memory::desc bmd({B, K, N}, dnnl_type<In>(), tag::abc);
    const memory::desc cmd({B, M, N}, dnnl_type<Out>(), tag::abc);
    const memory::desc wmd = relayout ? memory::desc({B, K, N}, dnnl_type<In>(), tag::any) : bmd;
    const dnnl::matmul::primitive_desc pd(eng, amd, wmd, cmd);
    const dnnl::matmul prim(pd);
    memory am(amd, eng, const_cast<In *>(a)), bmem(bmd, eng, const_cast<In *>(bm)), cm(cmd, eng, c);
    dnnl::stream s(eng);
    memory weights = bmem;
    if (pd.weights_desc() != bmd) {
      In *buf = scratch<In>(kScratchC, pd.weights_desc().get_size() / sizeof(In) + 1);
      weights = memory(pd.weights_desc(), eng, buf);
      dnnl::reorder(bmem, weights).execute(s, bmem, weights);
    }
    prim.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, cm}});
    s.wait();
    return true;
  } catch (const dnnl::error &) {
    return false;
  }
}

// Whether oneDNN has optimized bf16 kernels on this CPU (AVX-512 BF16 / AMX, or AVX-512 emulation), probed once
// with a small matmul so that a CPU without them does not pay a failed primitive creation on every launch. Its
// reference implementation ("ref") is declined: the f32 path is faster. PRIMKIT_CPU_ISA below avx512 turns it
// off, so that the f32 path can be tested on such a CPU too.
bool have_native_bf16() {
  static const bool have = [] {
    if (!have_isa(Isa::avx512)) return false;
    try {
      using dnnl::memory;
      const memory::desc md({64, 64}, memory::data_type::bf16, memory::format_tag::ab);
      const dnnl::matmul::primitive_desc pd(dnnl_engine(), md, md, md);
      return std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
    } catch (const dnnl::error &) {
      return false;
    }
  }();
  return have;
}
#endif

// The grain of the range scans that guard a contraction (all_finite, bf16_in_native_range): they run on the
// backend's threads. They ran on the calling thread alone while the worker pool sat beside oneDNN's OpenMP team
// (waking it between oneDNN's regions cost more than the scan saved); on the one team the parallel scan pays
// (bf16 2048^3 on 2 threads, AVX-512 Xeon: 8.2 ms against 8.7 ms serial).
constexpr int64_t kScanGrain = 65536;

// Whether pred holds for every p[i], scanned on the backend's threads (an and-reduction in int lanes, which the
// vectorizer takes for float predicates).
template <class A, class Pred>
bool all_of_parallel(const A *p, int64_t n, Pred pred, int64_t grain = 65536) {
  std::atomic<bool> ok{true};
  parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
    int chunk_ok = 1;
    for (int64_t i = lo; i < hi; ++i) chunk_ok &= pred(p[i]);
    if (!chunk_ok) ok.store(false, std::memory_order_relaxed);
  });
  return ok.load();
}

// Operands this large can overflow a product or a partial sum in the accumulation type, and the plain loops
// would then meet an infinity as inf - inf (NaN) where exact arithmetic gives inf or a finite value; oneDNN's
// blocked kernels also multiply zero padding by inf. Such inputs (and non-finite ones) take the loops in a wider
// type instead, whose range holds every product and sum: double for f32, long double for f64 and complex.
// The scan is O(inputs), the product O(M N K).
template <class A>
bool all_moderate(const A *p, int64_t n) {
  if constexpr (std::is_integral_v<A>) {
    return true;
  } else if constexpr (kit::is_complex<A>::value) {
    return all_of_parallel(p, n, [](const A &v) {
      return std::fabs(static_cast<double>(v.real())) <= 0x1p50 && std::fabs(static_cast<double>(v.imag())) <= 0x1p50;
    });
  } else {
    return all_of_parallel(p, n, [](A v) { return std::fabs(v) <= A(0x1p50); });  // NaN fails too
  }
}

// The same guard, checked on the result instead: every input element meets some product (the output is not
// empty), a non-finite input makes its products inf or NaN, and an overflowing product or partial sum becomes
// inf (then inf - inf = NaN); NaN and inf survive every later add. So a result that is finite everywhere met
// none of the cases above, and one that is not is recomputed in the wider type. Checking the result is the
// cheaper scan when it is no larger than the operands (square and matrix-vector products).
template <class A>
bool all_finite(const A *p, int64_t n) {
  return all_of_parallel(
      p, n, [](const A &v) { return finite_value(v); }, kScanGrain);
}

template <class A>
struct wide_acc {
  using type = A;  // integers wrap in uint64 already
};
template <>
struct wide_acc<float> {
  using type = double;
};
template <>
struct wide_acc<double> {
  using type = long double;
};
template <class R>
struct wide_acc<std::complex<R>> {
  using type = std::complex<long double>;
};

// c = a x bm in the fastest way available (oneDNN's sgemm for f32, else the loops), with no range guard.
template <class A>
void bmm_fast(const A *a, const A *bm, A *c, int64_t B, int64_t M, int64_t K, int64_t N) {
  if constexpr (std::is_same_v<A, float>) {
    bool done = true;
    for (int64_t q = 0; q < B && done; ++q)
      done = onednn_sgemm_f32(a + q * M * K, bm + q * K * N, false, N, c + q * M * N, M, K, N, false);
    if (done) return;
  }
  bmm_loops(a, bm, c, B, M, K, N);
}

// c = a x bm in the wider type (see all_moderate), rounded back to A.
template <class A>
void bmm_wide(const A *a, const A *bm, A *c, int64_t B, int64_t M, int64_t K, int64_t N) {
  using W = typename wide_acc<A>::type;
  const std::vector<W> wa(a, a + B * M * K), wb(bm, bm + B * K * N);
  std::vector<W> wc(static_cast<size_t>(B * M * N));
  bmm_loops(wa.data(), wb.data(), wc.data(), B, M, K, N);
  for (size_t i = 0; i < wc.size(); ++i) c[i] = static_cast<A>(wc[i]);
}

// Whether the range guard checks the result (after the fast product) rather than the operands (before it): the
// smaller scan. Only for types with a wider one.
template <class A>
bool guard_on_result(int64_t B, int64_t M, int64_t K, int64_t N) {
  return !std::is_same_v<typename wide_acc<A>::type, A> && B * M * N <= B * M * K + B * K * N;
}

// c = a x bm for dense non-empty operands, exact to the contract whatever their range.
template <class A>
void bmm(const A *a, const A *bm, A *c, int64_t B, int64_t M, int64_t K, int64_t N) {
  if (K == 0) {
    std::fill(c, c + B * M * N, A{});
    return;
  }
  if constexpr (!std::is_same_v<typename wide_acc<A>::type, A>) {
    if (guard_on_result<A>(B, M, K, N)) {
      bmm_fast(a, bm, c, B, M, K, N);
      if (!all_finite(c, B * M * N)) bmm_wide(a, bm, c, B, M, K, N);
      return;
    }
    if (!all_moderate(a, B * M * K) || !all_moderate(bm, B * K * N)) {
      bmm_wide(a, bm, c, B, M, K, N);
      return;
    }
  }
  bmm_fast(a, bm, c, B, M, K, N);
}

#ifdef PRIMKIT_CPU_HAVE_ONEDNN
// Whether every value of a[0, na) and b[0, nb) is 0 or 2^-50 <= |v| < 2^51 (so neither subnormal, infinite nor
// NaN). oneDNN's bf16 kernels (vdpbf16ps, AMX) read subnormal inputs as zero and flush subnormal results: 2^-130 x
// 2^100 would give 0, not 2^-30. In this range every product is exact in f32, at least 2^-100 and below 2^102, and
// every partial sum is a multiple of 2^-114 (the operands are multiples of 2^-57) and below 2^128 for
// K < 2^26, so no result and no partial sum is subnormal or overflows, and the bf16 kernels compute exactly the f32
// sums of the f32 path.
// On the bits m = v & 0x7fff (exponent and fraction): m == 0, or 77 << 7 <= m < 178 << 7. One pass keeps the
// smallest m - 1 (a zero wraps to 0xffff and drops out) and the largest m: a min/max reduction in 16-bit lanes.
// Only called where oneDNN has bf16 kernels, which need AVX-512, so AVX2 is there.
struct Bf16Magnitudes {
  uint16_t min_nonzero_minus_1 = 0xffff, max = 0;
};
__attribute__((target("avx2"))) Bf16Magnitudes bf16_magnitudes_avx2(const kit::bfloat16 *p, int64_t n) {
  uint16_t lo = 0xffff, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t m = p[i].bits & 0x7fffu;
    lo = std::min<uint16_t>(lo, static_cast<uint16_t>(m - 1u));
    hi = std::max(hi, m);
  }
  return {lo, hi};
}
bool bf16_in_native_range(const kit::bfloat16 *a, int64_t na, const kit::bfloat16 *b, int64_t nb) {
  std::atomic<bool> ok{true};
  const int64_t n = na + nb;
  parallel_for(0, n, kScanGrain, [&](int64_t lo, int64_t hi) {
    Bf16Magnitudes m[2];
    if (lo < na) m[0] = bf16_magnitudes_avx2(a + lo, std::min(hi, na) - lo);
    if (hi > na) m[1] = bf16_magnitudes_avx2(b + std::max(lo, na) - na, hi - std::max(lo, na));
    for (const Bf16Magnitudes &x : m) {
      if (x.min_nonzero_minus_1 < (77u << 7) - 1u || x.max >= (178u << 7)) ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load();
}
// Whether a bf16 contraction with `terms` products per output element may run on the native kernels: the CPU
// has them, and the sums are short enough for the range argument above (K < 2^26).
bool native_bf16_applies(int64_t terms) {
  return terms > 0 && terms < (int64_t{1} << 26) && have_native_bf16();
}
#endif

// c = lhs x rhs (as in contract below) on oneDNN's native bf16 kernels, products exact and sums in f32, with the
// result in Out (bf16: rounded once, to nearest even; float: for an epilogue). False, with c untouched, where this
// CPU lacks them or a value is outside bf16_in_native_range: the caller then takes the f32 path.
template <class Out>
bool bmm_native_bf16(const View &lhs, const int32_t *lperm, const View &rhs, const int32_t *rperm, Out *c, int64_t B,
                     int64_t M, int64_t K, int64_t N) {
#ifdef PRIMKIT_CPU_HAVE_ONEDNN
  using T = kit::bfloat16;
  if (!native_bf16_applies(K)) return false;
  const Packed<T, T> pa(lhs, lperm, kScratchA), pb(rhs, rperm, kScratchB);
  if (!bf16_in_native_range(pa.ptr, B * M * K, pb.ptr, B * K * N)) return false;
  return bmm_onednn(pa.ptr, pb.ptr, c, B, M, K, N);
#else
  (void)lhs, (void)lperm, (void)rhs, (void)rperm, (void)c, (void)B, (void)M, (void)K, (void)N;
  return false;
#endif
}

// out = lhs (axes lperm -> [B, M, K]) x rhs (axes rperm -> [B, K, N]); out's row-major order is [B, M, N].
template <class T>
pk_status contract(const View &lhs, const int32_t *lperm, const View &rhs, const int32_t *rperm, const View &out,
                   int64_t B, int64_t M, int64_t K, int64_t N) {
  using A = acc_t<T>;
  if (out.numel == 0) return PK_OK;
  if constexpr (std::is_same_v<T, kit::bfloat16>) {
    if (out.contiguous) {
      if (bmm_native_bf16(lhs, lperm, rhs, rperm, out.at<T>(0), B, M, K, N)) return PK_OK;
    } else {
      float *c = scratch<float>(kScratchOut, static_cast<size_t>(B * M * N));
      if (bmm_native_bf16(lhs, lperm, rhs, rperm, c, B, M, K, N)) {
        store_dense<T>(out, c);
        return PK_OK;
      }
    }
  }
  const Packed<T, A> pa(lhs, lperm, kScratchA), pb(rhs, rperm, kScratchB);
  if constexpr (std::is_same_v<T, A>) {
    if (out.contiguous) {  // straight into the output: a temporary costs a page fault per 4 KiB on first touch
      bmm(pa.ptr, pb.ptr, out.at<A>(0), B, M, K, N);
      return PK_OK;
    }
  }
  A *c = scratch<A>(kScratchOut, static_cast<size_t>(B * M * N));
  if (K > 0 && guard_on_result<A>(B, M, K, N)) {
    // The result's range check rides on its conversion to T instead of a pass of its own.
    bmm_fast(pa.ptr, pb.ptr, c, B, M, K, N);
    if (store_dense<T>(out, c)) return PK_OK;
    bmm_wide(pa.ptr, pb.ptr, c, B, M, K, N);
  } else {
    bmm(pa.ptr, pb.ptr, c, B, M, K, N);
  }
  store_dense<T>(out, c);
  return PK_OK;
}

template <class F>
pk_status dispatch_numeric(const pk_tensor &t, F &&f) {
  return kit::dispatch_dtype(dtype_of(t), [&](auto tag) -> pk_status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, kit::boolean>) {
      return PK_UNIMPLEMENTED;
    } else {
      return f(tag);
    }
  });
}

pk_status k_matmul(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const View a = kit::view_of(l.inputs[0]), b = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
    const int32_t id[2] = {0, 1};
    return dispatch_numeric(l.inputs[0], [&](auto tag) -> pk_status {
      return contract<decltype(tag)>(a, id, b, id, out, 1, a.shape[0], a.shape[1], b.shape[1]);
    });
  });
}

pk_status k_batch_matmul(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const View a = kit::view_of(l.inputs[0]), b = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
    const int32_t id[3] = {0, 1, 2};
    return dispatch_numeric(l.inputs[0], [&](auto tag) -> pk_status {
      return contract<decltype(tag)>(a, id, b, id, out, a.shape[0], a.shape[1], a.shape[2], b.shape[2]);
    });
  });
}

pk_status k_dot_general(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &at = attrs_of<pk_attrs_dot_general>(l);
    const View a = kit::view_of(l.inputs[0]), b = kit::view_of(l.inputs[1]), out = kit::view_of(l.outputs[0]);
    // lhs as (batch, free, contract), rhs as (batch, contract, free), each list in its given order so the pairs
    // line up.
    int32_t lperm[PK_MAX_RANK], rperm[PK_MAX_RANK];
    uint32_t lused = 0, rused = 0;
    int64_t B = 1, M = 1, K = 1, N = 1;
    int32_t nl = 0, nr = 0;
    for (int32_t k = 0; k < at.num_lhs_batch; ++k) {
      lperm[nl++] = static_cast<int32_t>(at.lhs_batch[k]);
      rperm[nr++] = static_cast<int32_t>(at.rhs_batch[k]);
      lused |= bit(static_cast<int>(at.lhs_batch[k]));
      rused |= bit(static_cast<int>(at.rhs_batch[k]));
      B *= a.shape[at.lhs_batch[k]];
    }
    for (int32_t k = 0; k < at.num_lhs_contract; ++k) {
      lused |= bit(static_cast<int>(at.lhs_contract[k]));
      rused |= bit(static_cast<int>(at.rhs_contract[k]));
      K *= a.shape[at.lhs_contract[k]];
    }
    for (int32_t d = 0; d < a.ndim; ++d) {
      if (lused & bit(d)) continue;
      lperm[nl++] = d;
      M *= a.shape[d];
    }
    for (int32_t k = 0; k < at.num_lhs_contract; ++k) {
      lperm[nl++] = static_cast<int32_t>(at.lhs_contract[k]);
      rperm[nr++] = static_cast<int32_t>(at.rhs_contract[k]);
    }
    for (int32_t d = 0; d < b.ndim; ++d) {
      if (rused & bit(d)) continue;
      rperm[nr++] = d;
      N *= b.shape[d];
    }
    return dispatch_numeric(l.inputs[0], [&](auto tag) -> pk_status {
      return contract<decltype(tag)>(a, lperm, b, rperm, out, B, M, K, N);
    });
  });
}

// --- linear, addmm, baddbmm ---------------------------------------------------------------------------------------

// out = beta c + alpha (lhs x rhs), with c a view of out's shape (zero strides where it broadcasts). The product
// stays in the accumulation type and the epilogue runs in wide_t<T> with one rounding to T. The decomposition
// rounds the product to T first: for bf16 that is 2^-9 of |product|, no reduction error, and a c that cancels the
// product magnifies it (p = 1 + 2^-8 rounds to 1, so c = -1 gives 0 instead of 2^-8).
template <class T>
pk_status contract_affine(const View &lhs, const int32_t *lperm, const View &rhs, const int32_t *rperm, const View &out,
                          int64_t B, int64_t M, int64_t K, int64_t N, const View &c, double beta, double alpha) {
  using A = acc_t<T>;
  using W = wide_t<T>;
  if (out.numel == 0) return PK_OK;
  A *p = scratch<A>(kScratchOut, static_cast<size_t>(B * M * N));
  bool done = false;
  if constexpr (std::is_same_v<T, kit::bfloat16>) done = bmm_native_bf16(lhs, lperm, rhs, rperm, p, B, M, K, N);
  if (!done) {
    const Packed<T, A> pa(lhs, lperm, kScratchA), pb(rhs, rperm, kScratchB);
    bmm(pa.ptr, pb.ptr, p, B, M, K, N);
  }
  const W wb = beta, wa = alpha;
  parallel_for(0, out.numel, 16384, [&](int64_t lo, int64_t hi) {
    int64_t i = lo;
    walk<2>(out.shape, out.ndim, {out.strides, c.strides}, {0, 0}, lo, hi, [&](const std::array<int64_t, 2> &o) {
      const W cv = static_cast<W>(kit::load(*c.at<T>(o[1])));
      *out.at<T>(o[0]) = kit::store_as<T>(wb * cv + wa * static_cast<W>(p[i++]));
    });
  });
  return PK_OK;
}

// addmm (2-d) and baddbmm (3-d): inputs c, a, b; c has the output's shape.
template <class Attrs>
pk_status k_affine_matmul(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &at = attrs_of<Attrs>(l);
    const View c = kit::view_of(l.inputs[0]), a = kit::view_of(l.inputs[1]), b = kit::view_of(l.inputs[2]);
    const View out = kit::view_of(l.outputs[0]);
    const int32_t id[3] = {0, 1, 2};
    const bool batched = a.ndim == 3;
    const int64_t B = batched ? a.shape[0] : 1, M = a.shape[a.ndim - 2], K = a.shape[a.ndim - 1];
    const int64_t N = b.shape[b.ndim - 1];
    return dispatch_std_float(l.inputs[1], [&](auto tag) -> pk_status {
      return contract_affine<decltype(tag)>(a, id, b, id, out, B, M, K, N, c, at.beta, at.alpha);
    });
  });
}

// linear in f32 on dense operands (the weight may be transposed), straight from the caller's memory into out on
// oneDNN with the bias added to the accumulator: no packing, no scratch, no epilogue pass. It meets
// contract_affine's contract: the product is the same f32 accumulation, and an f32 add of it and the bias is the
// one rounding of their exact sum that the wide epilogue gives. The same range guard as bmm (operands or result,
// whichever scan is smaller) sends values that could overflow the f32 accumulation to the exact path. False where
// it does not apply (out untouched, or overwritten by the caller's path).
bool linear_fast_f32(const View &x, const View &w, const View &bias, const View &out, int64_t M, int64_t K, int64_t N) {
  if (M == 0 || K == 0 || N == 0 || !x.contiguous || !out.contiguous) return false;
  // w [N, K] dense, or the transposed view of a dense [K, N] (addmm's weight as nn.Linear's t() leaves it).
  const int64_t wsn = w.strides[0], wsk = w.strides[1];
  if (!((wsk == 1 && wsn == K) || (wsn == 1 && wsk == N))) return false;
  if (N > 1 && bias.strides[0] != 1) return false;
  const float *xp = x.at<float>(0), *wp = w.at<float>(0), *bp = bias.at<float>(0);
  float *op = out.at<float>(0);
  const auto run = [&] { return onednn_linear_f32(xp, wp, wsn, wsk, bp, op, M, K, N); };
  if (guard_on_result<float>(1, M, K, N)) return run() && all_finite(op, M * N);
  return all_moderate(xp, M * K) && all_moderate(wp, K * N) && run();
}

// linear: x [..., K] x weight [N, K]^T + bias [N] along the last axis.
pk_status k_linear(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const View x = kit::view_of(l.inputs[0]), w = kit::view_of(l.inputs[1]), bias = kit::view_of(l.inputs[2]);
    const View out = kit::view_of(l.outputs[0]);
    int32_t xperm[PK_MAX_RANK];
    for (int32_t d = 0; d < x.ndim; ++d) xperm[d] = d;
    const int32_t wperm[2] = {1, 0};
    const int64_t K = x.shape[x.ndim - 1], N = w.shape[0];
    const int64_t M = K > 0 ? x.numel / K : out.numel / std::max<int64_t>(N, 1);
    View c = out;  // bias broadcast over every axis but the last
    c.base = bias.base;
    for (int32_t d = 0; d < c.ndim; ++d) c.strides[d] = d == c.ndim - 1 ? bias.strides[0] : 0;
    return dispatch_std_float(l.inputs[0], [&](auto tag) -> pk_status {
      if constexpr (std::is_same_v<decltype(tag), float>) {
        if (linear_fast_f32(x, w, bias, out, M, K, N)) return PK_OK;
      }
      return contract_affine<decltype(tag)>(x, xperm, w, wperm, out, 1, M, K, N, c, 1.0, 1.0);
    });
  });
}

// --- convolution ------------------------------------------------------------------------------------------------

// The geometry of one convolution with the spatial axes padded to three (leading extent-1 axes).
struct ConvGeom {
  int32_t ns = 0;  // spatial axes of the launch (1..3)
  int64_t n = 0, c = 0, o = 0, g = 1;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
};

ConvGeom conv_geom(const pk_attrs_convolution &a, const View &x, const View &w, const View &y) {
  ConvGeom g;
  g.ns = x.ndim - 2;
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.o = w.shape[0];
  g.g = a.groups;
  for (int32_t s = 0; s < g.ns; ++s) {
    const int32_t q = 3 - g.ns + s;
    g.in[q] = x.shape[2 + s];
    g.k[q] = w.shape[2 + s];
    g.out[q] = y.shape[2 + s];
    g.stride[q] = a.num_stride ? a.stride[s] : 1;
    g.lo[q] = a.num_padding_low ? a.padding_low[s] : 0;
    g.hi[q] = a.num_padding_high ? a.padding_high[s] : 0;
    g.dil[q] = a.num_dilation ? a.dilation[s] : 1;
  }
  return g;
}

// Direct cross-correlation on dense x [N, C, D, H, W], w [O, C/g, KD, KH, KW] into dense y [N, O, OD, OH, OW].
template <class A>
void conv_loops(const ConvGeom &g, const A *x, const A *w, A *y) {
  const int64_t cg = g.c / g.g, og = g.o / g.g;
  const int64_t in_sp = g.in[0] * g.in[1] * g.in[2], k_sp = g.k[0] * g.k[1] * g.k[2];
  const int64_t out_sp = g.out[0] * g.out[1] * g.out[2];
  parallel_for(0, g.n * g.o, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t n = r / g.o, o = r % g.o, grp = o / og;
      const A *xg = x + (n * g.c + grp * cg) * in_sp;
      const A *wo = w + o * cg * k_sp;
      A *yo = y + r * out_sp;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            A acc{};
            for (int64_t ic = 0; ic < cg; ++ic) {
              const A *xc = xg + ic * in_sp;
              const A *wc = wo + ic * k_sp;
              for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                const int64_t id = od * g.stride[0] - g.lo[0] + kd * g.dil[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                  const int64_t ih = oh * g.stride[1] - g.lo[1] + kh * g.dil[1];
                  if (ih < 0 || ih >= g.in[1]) continue;
                  const A *xrow = xc + (id * g.in[1] + ih) * g.in[2];
                  const A *wrow = wc + (kd * g.k[1] + kh) * g.k[2];
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t iw = ow * g.stride[2] - g.lo[2] + kw * g.dil[2];
                    if (iw < 0 || iw >= g.in[2]) continue;
                    acc += xrow[iw] * wrow[kw];
                  }
                }
              }
            }
            yo[(od * g.out[1] + oh) * g.out[2] + ow] = acc;
          }
    }
  });
}

#ifdef PRIMKIT_CPU_HAVE_ONEDNN
// y = conv(x, w) on oneDNN for dense operands of element type In (f32 or bf16) and a dense result of type Out; false
// when oneDNN declines or fails.
template <class In, class Out>
bool conv_onednn(const ConvGeom &g, const In *x, const In *w, Out *y) {
  // oneDNN's kernels index in 32 bits in places; a geometry beyond that (a stride or padding of 2^40 that leaves
  // a small output, which validation allows) runs the loops, whose index sums stay below 2^63.
  for (int32_t q = 0; q < 3; ++q) {
    if (g.stride[q] > INT32_MAX || g.lo[q] > INT32_MAX || g.hi[q] > INT32_MAX || g.dil[q] > INT32_MAX) return false;
  }
  try {
    using dnnl::memory;
    using tag = memory::format_tag;
    dnnl::engine &eng = dnnl_engine();
    memory::dims xd{g.n, g.c}, yd{g.n, g.o}, wd, strides, dilates, pl, pr;
    if (g.g > 1) {
      wd = {g.g, g.o / g.g, g.c / g.g};
    } else {
      wd = {g.o, g.c};
    }
    for (int32_t q = 3 - g.ns; q < 3; ++q) {
      xd.push_back(g.in[q]);
      yd.push_back(g.out[q]);
      wd.push_back(g.k[q]);
      strides.push_back(g.stride[q]);
      dilates.push_back(g.dil[q] - 1);  // oneDNN counts the gaps: 0 is a dense kernel
      pl.push_back(g.lo[q]);
      pr.push_back(g.hi[q]);
    }
    const tag act = g.ns == 1 ? tag::abc : g.ns == 2 ? tag::abcd : tag::abcde;
    // [O, C/g, k...] row-major is exactly [g, O/g, C/g, k...] row-major, the grouped plain layout.
    const tag wt = g.g > 1 ? (g.ns == 1 ? tag::abcd : g.ns == 2 ? tag::abcde : tag::abcdef) : act;
    const memory::desc xmd(xd, dnnl_type<In>(), act), ymd(yd, dnnl_type<Out>(), act);
    const memory::desc wmd(wd, dnnl_type<In>(), wt);
    const dnnl::convolution_forward::primitive_desc pd(eng, dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, xmd, wmd, ymd, strides,
                                                       dilates, pl, pr);
    const dnnl::convolution_forward prim(pd);
    memory xm(xmd, eng, const_cast<In *>(x)), wm(wmd, eng, const_cast<In *>(w)), ym(ymd, eng, y);
    dnnl::stream s(eng);
    prim.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym}});
    s.wait();
    return true;
  } catch (const dnnl::error &) {
    return false;
  }
}
#endif

// y = conv(x, w), each output element a sum of K = C/groups x kernel-size products: f16, bf16 and f32 widen to f32
// (exactly) and run on oneDNN's f32 kernels, bf16 on its native ones where the CPU has them and the values allow
// (see bf16_in_native_range); f64, and whatever oneDNN declines, runs the loops.
template <class T>
pk_status convolution(const pk_attrs_convolution &a, const View &x, const View &w, const View &y) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  if (y.numel == 0) return PK_OK;
  const ConvGeom g = conv_geom(a, x, w, y);
  const int32_t id[PK_MAX_RANK] = {0, 1, 2, 3, 4, 5, 6, 7};
  A *out = scratch<A>(kScratchOut, static_cast<size_t>(y.numel));
#ifdef PRIMKIT_CPU_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, kit::bfloat16>) {
    const int64_t terms = g.c / g.g * g.k[0] * g.k[1] * g.k[2];
    if (x.numel > 0 && native_bf16_applies(terms)) {
      const Packed<T, T> px(x, id, kScratchA), pw(w, id, kScratchB);
      if (bf16_in_native_range(px.ptr, x.numel, pw.ptr, w.numel) && conv_onednn(g, px.ptr, pw.ptr, out)) {
        store_dense<T>(y, out);
        return PK_OK;
      }
    }
  }
#endif
  const Packed<T, A> px(x, id, kScratchA), pw(w, id, kScratchB);
  // Huge or non-finite operands run in the wider type (see all_moderate): products of f32 values near the top of
  // the range overflow to opposite infinities in f32 and meet as NaN where the exact sum is -inf.
  if (!all_moderate(px.ptr, x.numel) || !all_moderate(pw.ptr, w.numel)) {
    using W = typename wide_acc<A>::type;
    const std::vector<W> wx(px.ptr, px.ptr + x.numel), ww(pw.ptr, pw.ptr + w.numel);
    std::vector<W> wy(static_cast<size_t>(y.numel));
    conv_loops(g, wx.data(), ww.data(), wy.data());
    for (size_t i = 0; i < wy.size(); ++i) out[i] = static_cast<A>(wy[i]);
    store_dense<T>(y, out);
    return PK_OK;
  }
  bool done = false;
#ifdef PRIMKIT_CPU_HAVE_ONEDNN
  if constexpr (std::is_same_v<A, float>) {
    if (x.numel > 0 && w.numel > 0) done = conv_onednn(g, px.ptr, pw.ptr, out);
  }
#endif
  if (!done) conv_loops(g, px.ptr, pw.ptr, out);
  store_dense<T>(y, out);
  return PK_OK;
}

pk_status k_convolution(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_convolution>(l);
    const View x = kit::view_of(l.inputs[0]), w = kit::view_of(l.inputs[1]), y = kit::view_of(l.outputs[0]);
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, kit::half> || std::is_same_v<T, kit::bfloat16> || std::is_same_v<T, float> ||
                    std::is_same_v<T, double>) {
        return convolution<T>(a, x, w, y);
      } else {
        return PK_UNIMPLEMENTED;
      }
    });
  });
}

// --- pooling ----------------------------------------------------------------------------------------------------

// One 2-d pooling over x [N, C, H, W] into y [N, C, OH, OW] (floor mode; windows never leave the padded extent).
struct PoolGeom {
  int64_t planes = 0, in[2] = {1, 1}, out[2] = {1, 1};
  int64_t k[2] = {1, 1}, stride[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1};
  // Whether some window holds padding only (padding >= the dilated kernel's reach past it).
  bool has_empty_window() const {
    for (int a = 0; a < 2; ++a) {
      if ((k[a] - 1) * dil[a] < pad[a]) return true;  // the first window
      const int64_t last = (out[a] - 1) * stride[a] - pad[a];
      if (last >= in[a]) return true;  // the last window starts in the high padding
    }
    return false;
  }
};

PoolGeom pool_geom(const View &x, const View &y, const int64_t *k, const int64_t *stride, const int64_t *pad,
                   const int64_t *dil) {
  PoolGeom g;
  g.planes = x.shape[0] * x.shape[1];
  for (int a = 0; a < 2; ++a) {
    g.in[a] = x.shape[2 + a];
    g.out[a] = y.shape[2 + a];
    g.k[a] = k[a];
    g.stride[a] = stride[a];
    g.pad[a] = pad[a];
    g.dil[a] = dil ? dil[a] : 1;
  }
  return g;
}

// Element offset of x[plane][h][w] through the view's strides (planes run over N then C).
inline int64_t plane_offset(const View &v, int64_t plane) {
  return (plane / v.shape[1]) * v.strides[0] + (plane % v.shape[1]) * v.strides[1];
}

#ifdef PRIMKIT_CPU_HAVE_ONEDNN
// Pooling of dense f32 x [N, C, H, W] into dense y on oneDNN; false if oneDNN declines. oneDNN's pooling of the
// plain layout is a slow generic kernel (0.4-0.9 GB/s here, 2-3x slower than the loops below); its JIT kernels
// take channel-blocked tensors. So x is reordered to blocks of 8 channels (16 where AVX-512 is there), pooled,
// and reordered back: 3-4x faster than the loops even with both reorders.
bool pool_onednn(const PoolGeom &g, dnnl::algorithm alg, int64_t n, int64_t c, const float *x, float *y) {
  try {
    using dnnl::memory;
    using tag = memory::format_tag;
    dnnl::engine &eng = dnnl_engine();
    const tag blocked = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? tag::aBcd16b : tag::aBcd8b;
    const memory::dims xd{n, c, g.in[0], g.in[1]}, yd{n, c, g.out[0], g.out[1]};
    const memory::desc xmd(xd, memory::data_type::f32, tag::abcd), ymd(yd, memory::data_type::f32, tag::abcd);
    const memory::desc xbd(xd, memory::data_type::f32, blocked), ybd(yd, memory::data_type::f32, blocked);
    // oneDNN wants the high padding that makes its output extent exactly ours (floor mode drops a remainder).
    memory::dims strides, kernel, dilation, pl, pr;
    for (int a = 0; a < 2; ++a) {
      strides.push_back(g.stride[a]);
      kernel.push_back(g.k[a]);
      dilation.push_back(g.dil[a] - 1);  // oneDNN counts the gaps
      pl.push_back(g.pad[a]);
      pr.push_back((g.out[a] - 1) * g.stride[a] + (g.k[a] - 1) * g.dil[a] + 1 - g.in[a] - g.pad[a]);
    }
    const dnnl::pooling_forward::primitive_desc pd(eng, dnnl::prop_kind::forward_inference, alg, xbd, ybd, strides,
                                                   kernel, dilation, pl, pr);
    float *xb = scratch<float>(kScratchB, xbd.get_size() / sizeof(float));
    float *yb = scratch<float>(kScratchC, ybd.get_size() / sizeof(float));
    memory xm(xmd, eng, const_cast<float *>(x)), ym(ymd, eng, y), xbm(xbd, eng, xb), ybm(ybd, eng, yb);
    dnnl::stream s(eng);
    dnnl::reorder(xm, xbm).execute(s, xm, xbm);
    dnnl::pooling_forward(pd).execute(s, {{DNNL_ARG_SRC, xbm}, {DNNL_ARG_DST, ybm}});
    dnnl::reorder(ybm, ym).execute(s, ybm, ym);
    s.wait();
    return true;
  } catch (const dnnl::error &) {
    return false;
  }
}
#endif

// Inputs for which oneDNN's max equals the table's: no NaN (oneDNN's max may drop it; the table propagates it)
// and no -0 (oneDNN's max may keep -0 over +0; the table's prefers +0). Only pool_fast's oneDNN path calls it.
#ifdef PRIMKIT_CPU_HAVE_ONEDNN
bool onednn_max_poolable(const float *p, int64_t n) {
  return all_of_parallel(p, n, [](float v) {
    uint32_t u;  // on the bits, which the vectorizer takes (the float compares it did not)
    std::memcpy(&u, &v, sizeof u);
    return static_cast<int>(((u & 0x7fffffffu) <= 0x7f800000u) & (u != 0x80000000u));
  });
}
#endif

// f16, bf16 and f32 pooled on oneDNN in f32 (widening is exact; max returns an input, avg rounds once more to the
// dtype) when the values and the geometry allow; returns false to leave it to the loops. Small tensors skip it:
// the reorders and the primitive lookup cost more than the loops there. avg checks its result: finite values in
// f32 give a finite mean unless a window sum overflowed, which the loops then redo in double.
template <class T>
bool pool_fast(const PoolGeom &g, const View &x, const View &y, bool is_max, bool include_pad) {
#ifdef PRIMKIT_CPU_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, kit::half> || std::is_same_v<T, kit::bfloat16>) {
    // Dilated windows only have oneDNN's reference implementation, no faster than the loops.
    if (g.has_empty_window() || x.numel < (int64_t{1} << 16) || g.dil[0] != 1 || g.dil[1] != 1) return false;
    const int32_t id[PK_MAX_RANK] = {0, 1, 2, 3};
    const Packed<T, float> px(x, id, kScratchA);
    if (is_max && !onednn_max_poolable(px.ptr, x.numel)) return false;
    constexpr bool kF32 = std::is_same_v<T, float>;
    float *out = kF32 && y.contiguous ? y.at<float>(0) : scratch<float>(kScratchOut, static_cast<size_t>(y.numel));
    const dnnl::algorithm alg = is_max        ? dnnl::algorithm::pooling_max
                                : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                              : dnnl::algorithm::pooling_avg_exclude_padding;
    if (!pool_onednn(g, alg, x.shape[0], x.shape[1], px.ptr, out)) return false;
    if (!is_max && !all_finite(out, y.numel)) return false;
    if (!kF32 || !y.contiguous) store_dense<T>(y, out);
    return true;
  }
#endif
  (void)g, (void)x, (void)y, (void)is_max, (void)include_pad;
  return false;
}

// max over each window, padding counting as the pad value (-inf, or what -inf converts to): NaN wins, then the
// larger value, +0 over -0 — the table's amax of the padded windows.
template <class T>
void max_pool_loops(const PoolGeom &g, const View &x, const View &y) {
  using C = kit::compute_t<T>;
  T pad_value;
  if constexpr (std::is_integral_v<T>) {
    pad_value = std::numeric_limits<T>::lowest();
  } else {
    pad_value = kit::store_as<T>(-HUGE_VAL);
  }
  auto better = [](C v, C m) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(m)) return false;
      if (std::isnan(v)) return true;
      return v > m || (v == m && !std::signbit(v));
    } else {
      return v > m;
    }
  };
  parallel_for(0, g.planes * g.out[0], 16, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t plane = r / g.out[0], oh = r % g.out[0];
      const int64_t xbase = plane_offset(x, plane), ybase = plane_offset(y, plane) + oh * y.strides[2];
      for (int64_t ow = 0; ow < g.out[1]; ++ow) {
        bool any = false, padded = false;
        T best = pad_value;
        for (int64_t kh = 0; kh < g.k[0]; ++kh) {
          const int64_t ih = oh * g.stride[0] - g.pad[0] + kh * g.dil[0];
          if (ih < 0 || ih >= g.in[0]) {
            padded = true;
            continue;
          }
          for (int64_t kw = 0; kw < g.k[1]; ++kw) {
            const int64_t iw = ow * g.stride[1] - g.pad[1] + kw * g.dil[1];
            if (iw < 0 || iw >= g.in[1]) {
              padded = true;
              continue;
            }
            const T v = *x.at<T>(xbase + ih * x.strides[2] + iw * x.strides[3]);
            if (!any || better(kit::load(v), kit::load(best))) best = v;
            any = true;
          }
        }
        if (any && padded && better(kit::load(pad_value), kit::load(best))) best = pad_value;
        *y.at<T>(ybase + ow * y.strides[3]) = best;
      }
    }
  });
}

// A window [h0, h1) x [w0, w1), clipped to the input, and the count its sum is divided by.
struct Window {
  int64_t h0, h1, w0, w1, count;
};

// The window's sum in the wider type (double, long double for f64: no overflow, no cancellation in f32).
template <class T>
wide_t<T> window_sum(const View &x, int64_t xbase, const Window &w) {
  wide_t<T> s = 0;
  for (int64_t ih = w.h0; ih < w.h1; ++ih)
    for (int64_t iw = w.w0; iw < w.w1; ++iw)
      s += static_cast<wide_t<T>>(kit::load(*x.at<T>(xbase + ih * x.strides[2] + iw * x.strides[3])));
  return s;
}

pk_status k_max_pool2d(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_max_pool2d>(l);
    const View x = kit::view_of(l.inputs[0]), y = kit::view_of(l.outputs[0]);
    if (y.numel == 0) return PK_OK;
    const PoolGeom g = pool_geom(x, y, a.kernel_size, a.stride, a.padding, a.dilation);
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, kit::boolean> || kit::is_complex<T>::value) {
        return PK_UNIMPLEMENTED;
      } else {
        if (!pool_fast<T>(g, x, y, true, false)) max_pool_loops<T>(g, x, y);
        return PK_OK;
      }
    });
  });
}

pk_status k_avg_pool2d(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_avg_pool2d>(l);
    const View x = kit::view_of(l.inputs[0]), y = kit::view_of(l.outputs[0]);
    if (y.numel == 0) return PK_OK;
    const PoolGeom g = pool_geom(x, y, a.kernel_size, a.stride, a.padding, nullptr);
    const bool include = a.count_include_pad != 0;
    return dispatch_std_float(l.inputs[0], [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if (pool_fast<T>(g, x, y, false, include)) return PK_OK;
      // The window in the padded extent, clipped to the input; with count_include_pad the padding counts (the
      // window never leaves the padded extent in floor mode, so that is the whole window). 0 / 0 gives NaN.
      parallel_for(0, g.planes * g.out[0], 16, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          const int64_t plane = r / g.out[0], oh = r % g.out[0];
          const int64_t xbase = plane_offset(x, plane), ybase = plane_offset(y, plane) + oh * y.strides[2];
          for (int64_t ow = 0; ow < g.out[1]; ++ow) {
            Window w;
            const int64_t h = oh * g.stride[0] - g.pad[0], v = ow * g.stride[1] - g.pad[1];
            w.h0 = std::max<int64_t>(h, 0);
            w.h1 = std::max(std::min(h + g.k[0], g.in[0]), w.h0);
            w.w0 = std::max<int64_t>(v, 0);
            w.w1 = std::max(std::min(v + g.k[1], g.in[1]), w.w0);
            w.count = include ? g.k[0] * g.k[1] : (w.h1 - w.h0) * (w.w1 - w.w0);
            *y.at<T>(ybase + ow * y.strides[3]) =
                kit::store_as<T>(window_sum<T>(x, xbase, w) / static_cast<wide_t<T>>(w.count));
          }
        }
      });
      return PK_OK;
    });
  });
}

// PyTorch's adaptive bins [floor(i H / OH), ceil((i + 1) H / OH)) overlap and vary in size, which oneDNN's
// pooling cannot express: the loops run them, a plane at a time. The table defines the op as two products with
// bin-weight matrices (mean over H, then over W), so a non-finite input meets the zero weights of the other bins
// (inf * 0 = NaN) and spreads through its plane; planes holding one are computed as those two products.
template <class T>
void adaptive_avg_plane(const View &x, const View &y, int64_t plane, int64_t oh_n, int64_t ow_n) {
  using W = wide_t<T>;
  const int64_t h_n = x.shape[2], w_n = x.shape[3];
  const int64_t xbase = plane_offset(x, plane), ybase = plane_offset(y, plane);
  auto bin = [](int64_t i, int64_t in, int64_t out, int64_t &lo, int64_t &hi) {
    lo = i * in / out;
    hi = ((i + 1) * in + out - 1) / out;
  };
  auto at = [&](int64_t ih, int64_t iw) {
    return static_cast<W>(kit::load(*x.at<T>(xbase + ih * x.strides[2] + iw * x.strides[3])));
  };
  bool finite = true;
  for (int64_t ih = 0; ih < h_n && finite; ++ih)
    for (int64_t iw = 0; iw < w_n; ++iw) finite = finite && std::isfinite(at(ih, iw));
  if (finite) {
    for (int64_t oh = 0; oh < oh_n; ++oh)
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        Window w;
        bin(oh, h_n, oh_n, w.h0, w.h1);
        bin(ow, w_n, ow_n, w.w0, w.w1);
        w.count = (w.h1 - w.h0) * (w.w1 - w.w0);
        // An empty input plane (H or W = 0) has empty bins: the row's program contracts over nothing, giving 0.
        *y.at<T>(ybase + oh * y.strides[2] + ow * y.strides[3]) =
            kit::store_as<T>(w.count == 0 ? W(0) : window_sum<T>(x, xbase, w) / static_cast<W>(w.count));
      }
    return;
  }
  // t[oh][iw] = sum_ih x[ih][iw] wh[oh][ih], then y[oh][ow] = sum_iw t[oh][iw] ww[ow][iw], every weight taken.
  std::vector<W> t(static_cast<size_t>(oh_n * w_n));
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    int64_t lo, hi;
    bin(oh, h_n, oh_n, lo, hi);
    const W weight = W(1) / static_cast<W>(hi - lo);
    for (int64_t iw = 0; iw < w_n; ++iw) {
      W s = 0;
      for (int64_t ih = 0; ih < h_n; ++ih) s += at(ih, iw) * (ih >= lo && ih < hi ? weight : W(0));
      t[static_cast<size_t>(oh * w_n + iw)] = s;
    }
  }
  for (int64_t ow = 0; ow < ow_n; ++ow) {
    int64_t lo, hi;
    bin(ow, w_n, ow_n, lo, hi);
    const W weight = W(1) / static_cast<W>(hi - lo);
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      W s = 0;
      for (int64_t iw = 0; iw < w_n; ++iw)
        s += t[static_cast<size_t>(oh * w_n + iw)] * (iw >= lo && iw < hi ? weight : W(0));
      *y.at<T>(ybase + oh * y.strides[2] + ow * y.strides[3]) = kit::store_as<T>(s);
    }
  }
}

pk_status k_adaptive_avg_pool2d(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const View x = kit::view_of(l.inputs[0]), y = kit::view_of(l.outputs[0]);
    if (y.numel == 0) return PK_OK;
    return dispatch_std_float(l.inputs[0], [&](auto tag) -> pk_status {
      using T = decltype(tag);
      parallel_for(0, y.shape[0] * y.shape[1], 1, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) adaptive_avg_plane<T>(x, y, p, y.shape[2], y.shape[3]);
      });
      return PK_OK;
    });
  });
}

// --- FFT --------------------------------------------------------------------------------------------------------

// e^(sign 2 pi i m / n) for m in [0, n), with m the exactly reduced product index.
std::vector<cd> twiddles(int64_t n, int64_t count, double sign) {
  std::vector<cd> t(static_cast<size_t>(count));
  const double pi = 3.14159265358979323846264338327950288;
  for (int64_t m = 0; m < count; ++m) {
    const double ang = 2.0 * pi * static_cast<double>(m) / static_cast<double>(n);
    t[static_cast<size_t>(m)] = cd(std::cos(ang), sign * std::sin(ang));
  }
  return t;
}

bool is_pow2(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// In-place iterative radix-2 FFT of length m (a power of two) with the twiddles e^(-2 pi i k / m), k < m / 2;
// `inverse` conjugates them.
void fft_pow2(cd *x, int64_t m, const cd *tw, bool inverse) {
  for (int64_t i = 1, j = 0; i < m; ++i) {
    int64_t b = m >> 1;
    for (; j & b; b >>= 1) j ^= b;
    j ^= b;
    if (i < j) std::swap(x[i], x[j]);
  }
  for (int64_t len = 2; len <= m; len <<= 1) {
    const int64_t half = len / 2, step = m / len;
    for (int64_t s = 0; s < m; s += len) {
      for (int64_t k = 0; k < half; ++k) {
        const cd w = inverse ? std::conj(tw[k * step]) : tw[k * step];
        const cd u = x[s + k], v = x[s + k + half] * w;
        x[s + k] = u + v;
        x[s + k + half] = u - v;
      }
    }
  }
}

// A 1-D DFT of one length and direction, planned once and run on many lines (run() is const: thread-safe).
class Dft {
 public:
  Dft(int64_t n, bool forward) : n_(n), forward_(forward) {
    const double sign = forward ? -1.0 : 1.0;
    if (n <= 1) {
      kind_ = Kind::identity;
    } else if (is_pow2(n)) {
      kind_ = Kind::pow2;
      tw_ = twiddles(n, n / 2, -1.0);
    } else if (n <= 64) {
      kind_ = Kind::direct;
      tw_ = twiddles(n, n, sign);
    } else {
      // Bluestein: X_k = w_k sum_j (x_j w_j) conj(w_{k-j}), w_k = e^(sign pi i k^2 / n), a convolution done with
      // power-of-two FFTs of length m >= 2n - 1.
      kind_ = Kind::bluestein;
      m_ = 1;
      while (m_ < 2 * n - 1) m_ <<= 1;
      tw_ = twiddles(m_, m_ / 2, -1.0);
      chirp_.resize(static_cast<size_t>(n));
      const double pi = 3.14159265358979323846264338327950288;
      // q = k^2 mod 2n, stepped exactly: (k + 1)^2 = k^2 + 2k + 1.
      for (int64_t k = 0, q = 0; k < n; ++k) {
        const double ang = pi * static_cast<double>(q) / static_cast<double>(n);
        chirp_[static_cast<size_t>(k)] = cd(std::cos(ang), sign * std::sin(ang));
        q = (q + 2 * k + 1) % (2 * n);
      }
      kernel_.assign(static_cast<size_t>(m_), cd(0.0, 0.0));
      kernel_[0] = std::conj(chirp_[0]);
      for (int64_t k = 1; k < n; ++k) {
        kernel_[static_cast<size_t>(k)] = std::conj(chirp_[static_cast<size_t>(k)]);
        kernel_[static_cast<size_t>(m_ - k)] = std::conj(chirp_[static_cast<size_t>(k)]);
      }
      fft_pow2(kernel_.data(), m_, tw_.data(), false);
    }
  }

  // Scratch elements run() needs.
  int64_t scratch_size() const { return kind_ == Kind::bluestein ? m_ : kind_ == Kind::direct ? n_ : 0; }

  void run(cd *x, cd *scratch) const {
    switch (kind_) {
      case Kind::identity:
        return;
      case Kind::pow2:
        fft_pow2(x, n_, tw_.data(), !forward_);
        return;
      case Kind::direct:
        for (int64_t k = 0; k < n_; ++k) {
          cd acc(0.0, 0.0);
          int64_t m = 0;  // j * k mod n, kept exact by stepping
          for (int64_t j = 0; j < n_; ++j) {
            acc += x[j] * tw_[static_cast<size_t>(m)];
            m += k;
            if (m >= n_) m -= n_;
          }
          scratch[k] = acc;
        }
        std::copy(scratch, scratch + n_, x);
        return;
      case Kind::bluestein: {
        for (int64_t k = 0; k < n_; ++k) scratch[k] = x[k] * chirp_[static_cast<size_t>(k)];
        std::fill(scratch + n_, scratch + m_, cd(0.0, 0.0));
        fft_pow2(scratch, m_, tw_.data(), false);
        for (int64_t k = 0; k < m_; ++k) scratch[k] *= kernel_[static_cast<size_t>(k)];
        fft_pow2(scratch, m_, tw_.data(), true);
        const double inv = 1.0 / static_cast<double>(m_);
        for (int64_t k = 0; k < n_; ++k) x[k] = scratch[k] * chirp_[static_cast<size_t>(k)] * inv;
        return;
      }
    }
  }

 private:
  enum class Kind { identity, pow2, direct, bluestein };
  int64_t n_;
  bool forward_;
  Kind kind_ = Kind::identity;
  int64_t m_ = 0;
  std::vector<cd> tw_, chirp_, kernel_;
};

// The lines of a dense buffer of `shape` along axis `dim`: their start offsets (row-major over the other axes)
// with, optionally, a second stride set (an output view) for the same lines.
struct Lines {
  int32_t on = 0;
  int64_t oshape[PK_MAX_RANK] = {0}, st[2][PK_MAX_RANK] = {{0}};
  int64_t outer = 1;
};

Lines lines_of(const int64_t *shape, int32_t ndim, const int64_t *st0, const int64_t *st1, int64_t dim) {
  Lines r;
  for (int32_t d = 0; d < ndim; ++d) {
    if (d == dim) continue;
    r.oshape[r.on] = shape[d];
    r.st[0][r.on] = st0[d];
    r.st[1][r.on] = st1 ? st1[d] : 0;
    ++r.on;
    r.outer *= shape[d];
  }
  return r;
}

// Transforms axis `dim` of the dense complex buffer `buf` of `shape` in place.
pk_status dft_axis(const Launch &l, cd *buf, const int64_t *shape, int32_t ndim, int64_t dim, bool forward) {
  const int64_t n = shape[dim];
  if (n <= 1) return PK_OK;
  int64_t st[PK_MAX_RANK];
  dense_strides(shape, ndim, st);
  const Lines ln = lines_of(shape, ndim, st, nullptr, dim);
  if (ln.outer == 0) return PK_OK;
  const Dft plan(n, forward);
  const int64_t s = st[dim];
  return parallel_with_scratch(l, ln.outer, std::max<int64_t>(1, 16384 / n), [&](int64_t lo, int64_t hi) {
    std::vector<cd> line(static_cast<size_t>(n)), scratch(static_cast<size_t>(plan.scratch_size()));
    walk<1>(ln.oshape, ln.on, {ln.st[0]}, {0}, lo, hi, [&](const std::array<int64_t, 1> &o) {
      cd *p = buf + o[0];
      for (int64_t i = 0; i < n; ++i) line[static_cast<size_t>(i)] = p[i * s];
      plan.run(line.data(), scratch.data());
      for (int64_t i = 0; i < n; ++i) p[i * s] = line[static_cast<size_t>(i)];
    });
  });
}

// Loads a view (real or complex) into a dense complex<double> buffer of its shape.
template <class T>
void load_complex(const View &v, cd *dst) {
  parallel_for(0, v.numel, 16384, [&](int64_t lo, int64_t hi) {
    int64_t i = lo;
    walk<1>(v.shape, v.ndim, {v.strides}, {0}, lo, hi, [&](const std::array<int64_t, 1> &o) {
      const T &x = *v.at<T>(o[0]);
      if constexpr (kit::is_complex<T>::value) {
        dst[i++] = cd(static_cast<double>(x.real()), static_cast<double>(x.imag()));
      } else {
        dst[i++] = cd(static_cast<double>(x), 0.0);
      }
    });
  });
}

pk_status k_fft_c2c(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_fft_c2c>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (!kit::is_complex<T>::value) {
        return PK_UNIMPLEMENTED;
      } else {
        if (in.numel == 0) return PK_OK;
        std::vector<cd> buf(static_cast<size_t>(in.numel));
        load_complex<T>(in, buf.data());
        for (int32_t k = 0; k < a.num_dims; ++k) {
          const pk_status st = dft_axis(l, buf.data(), in.shape, in.ndim, a.dims[k], a.forward != 0);
          if (st != PK_OK) return st;
        }
        store_dense<T>(out, buf.data());
        return PK_OK;
      }
    });
  });
}

pk_status k_fft_r2c(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_fft_r2c>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double>) {
        return PK_UNIMPLEMENTED;
      } else {
        using C = std::complex<T>;
        if (out.numel == 0) return PK_OK;
        std::vector<cd> buf(static_cast<size_t>(in.numel));
        load_complex<T>(in, buf.data());
        for (int32_t k = 0; k < a.num_dims; ++k) {
          const pk_status st = dft_axis(l, buf.data(), in.shape, in.ndim, a.dims[k], true);
          if (st != PK_OK) return st;
        }
        // The output keeps the first n/2 + 1 entries of the last transformed axis (onesided) or all of them; its
        // coordinates index the full spectrum directly.
        int64_t dense[PK_MAX_RANK];
        dense_strides(in.shape, in.ndim, dense);
        parallel_for(0, out.numel, 16384, [&](int64_t lo, int64_t hi) {
          walk<2>(out.shape, out.ndim, {out.strides, dense}, {0, 0}, lo, hi, [&](const std::array<int64_t, 2> &o) {
            const cd v = buf[static_cast<size_t>(o[1])];
            *out.at<C>(o[0]) = C(static_cast<T>(v.real()), static_cast<T>(v.imag()));
          });
        });
        return PK_OK;
      }
    });
  });
}

pk_status k_fft_c2r(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    const auto &a = attrs_of<pk_attrs_fft_c2r>(l);
    const View in = kit::view_of(l.inputs[0]), out = kit::view_of(l.outputs[0]);
    return kit::dispatch_dtype(dtype_of(l.inputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      if constexpr (!kit::is_complex<T>::value) {
        return PK_UNIMPLEMENTED;
      } else {
        using R = typename T::value_type;
        if (out.numel == 0) return PK_OK;
        const int64_t last = a.dims[a.num_dims - 1];
        std::vector<cd> buf(static_cast<size_t>(in.numel));
        load_complex<T>(in, buf.data());
        // Inverse transforms of the other axes first, then the Hermitian-extended inverse of the last one.
        for (int32_t k = 0; k + 1 < a.num_dims; ++k) {
          const pk_status st = dft_axis(l, buf.data(), in.shape, in.ndim, a.dims[k], false);
          if (st != PK_OK) return st;
        }
        const int64_t len = a.last_dim_size, half = in.shape[last];
        int64_t dense[PK_MAX_RANK];
        dense_strides(in.shape, in.ndim, dense);
        const Lines ln = lines_of(in.shape, in.ndim, dense, out.strides, last);
        const Dft plan(len, false);
        const int64_t sb = dense[last], so = out.strides[last];
        return parallel_with_scratch(l, ln.outer, std::max<int64_t>(1, 16384 / len), [&](int64_t lo, int64_t hi) {
          std::vector<cd> line(static_cast<size_t>(len)), scratch(static_cast<size_t>(plan.scratch_size()));
          walk<2>(ln.oshape, ln.on, {ln.st[0], ln.st[1]}, {0, 0}, lo, hi, [&](const std::array<int64_t, 2> &o) {
            const cd *p = buf.data() + o[0];
            for (int64_t k = 0; k < len; ++k) {
              line[static_cast<size_t>(k)] = k < half ? p[k * sb] : std::conj(p[(len - k) * sb]);
            }
            plan.run(line.data(), scratch.data());
            R *dst = out.at<R>(o[1]);
            for (int64_t k = 0; k < len; ++k) dst[k * so] = static_cast<R>(line[static_cast<size_t>(k)].real());
          });
        });
      }
    });
  });
}

}  // namespace

void register_linalg_kernels(KernelRegistry &r) {
  r.add(PK_OP_MATMUL, k_matmul, kNumeric);
  r.add(PK_OP_BATCH_MATMUL, k_batch_matmul, kNumeric);
  r.add(PK_OP_DOT_GENERAL, k_dot_general, kNumeric);
  r.add(PK_OP_ADDMM, k_affine_matmul<pk_attrs_addmm>, kFloatStd);
  r.add(PK_OP_BADDBMM, k_affine_matmul<pk_attrs_baddbmm>, kFloatStd);
  r.add(PK_OP_LINEAR, k_linear, kFloatStd);
  r.add(PK_OP_CONVOLUTION, k_convolution, kFloatStd);
  r.add(PK_OP_MAX_POOL2D, k_max_pool2d, kReal);
  r.add(PK_OP_AVG_POOL2D, k_avg_pool2d, kFloatStd);
  r.add(PK_OP_ADAPTIVE_AVG_POOL2D, k_adaptive_avg_pool2d, kFloatStd);
  r.add(PK_OP_FFT_C2C, k_fft_c2c, kComplex);
  r.add(PK_OP_FFT_R2C, k_fft_r2c, kFloatWide);
  r.add(PK_OP_FFT_C2R, k_fft_c2r, kComplex);
}

}  // namespace pk::cpu
