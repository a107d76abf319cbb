// bench_cpu.cpp — the CPU backend against yardsticks measured in the same run (issue: CPU backend goals).
//   elementwise:  add/mul vs a STREAM-like loop; exp vs a libmvec loop (AVX-512 where the CPU has it, else AVX2)
//   reductions:   sum/amax vs a hand-written reduction (the same ISA)
//   fused-ish:    softmax / layer_norm [4096,4096] vs the copy-bandwidth bound
//   activations:  softplus over 16 M f32 vs the copy-bandwidth bound
//   dispatch:     a 1-element add through the runtime vs the raw plugin table call
//   matmul:       f32 / bf16 at 1024^3 and 2048^3 vs oneDNN called directly (primitive created once)
//   allocation:   allocating 16 M add vs preallocated
//   threading:    2 threads vs 1 thread at every size from 1 K to 16 M; the STREAM-like loop's own 2 vs 1 at 16 M
// Every benchmark takes the thread count as its last argument; ratios are yardstick / subject.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "bench_common.hpp"

#ifdef PK_BENCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

using namespace pk::bench;

extern "C" __m256 _ZGVdN8v_expf(__m256);   // glibc's AVX2 vector expf (libmvec)
extern "C" __m512 _ZGVeN16v_expf(__m512);  // glibc's AVX-512 vector expf (libmvec)

namespace {

constexpr size_t k16M = size_t{1} << 24;

// The yardsticks are hand-vectorized loops in the widest vector ISA of the machine: AVX-512 (16 lanes) where the
// CPU has it, else AVX2 (8 lanes); the `yardstick_lanes` counter says which. Streaming stores where the output is
// not read back, as STREAM does.
__attribute__((target("avx2"))) void stream_add(const float *a, const float *b, float *c, size_t n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < static_cast<long>(n); i += 8) {
    _mm256_stream_ps(c + i, _mm256_add_ps(_mm256_load_ps(a + i), _mm256_load_ps(b + i)));
  }
}

__attribute__((target("avx2"))) void stream_copy(const float *a, float *c, size_t n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < static_cast<long>(n); i += 8) _mm256_stream_ps(c + i, _mm256_load_ps(a + i));
}

__attribute__((target("avx2"))) void mvec_exp(const float *a, float *c, size_t n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < static_cast<long>(n); i += 8) _mm256_store_ps(c + i, _ZGVdN8v_expf(_mm256_load_ps(a + i)));
}

__attribute__((target("avx2"))) float hsum(__m256 v) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

__attribute__((target("avx2"))) float hmax(__m256 v) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  float m = t[0];
  for (float x : t) m = std::max(m, x);
  return m;
}

__attribute__((target("avx2"))) float simd_sum(const float *a, size_t n) {
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
           acc3 = _mm256_setzero_ps();
#pragma omp for schedule(static)
    for (long i = 0; i < static_cast<long>(n); i += 32) {
      acc0 = _mm256_add_ps(acc0, _mm256_load_ps(a + i));
      acc1 = _mm256_add_ps(acc1, _mm256_load_ps(a + i + 8));
      acc2 = _mm256_add_ps(acc2, _mm256_load_ps(a + i + 16));
      acc3 = _mm256_add_ps(acc3, _mm256_load_ps(a + i + 24));
    }
    total += hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  }
  return total;
}

__attribute__((target("avx2"))) float simd_amax(const float *a, size_t n) {
  float best = -INFINITY;
#pragma omp parallel reduction(max : best)
  {
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
#pragma omp for schedule(static)
    for (long i = 0; i < static_cast<long>(n); i += 16) {
      m0 = _mm256_max_ps(m0, _mm256_load_ps(a + i));
      m1 = _mm256_max_ps(m1, _mm256_load_ps(a + i + 8));
    }
    best = std::max(best, hmax(_mm256_max_ps(m0, m1)));
  }
  return best;
}

__attribute__((target("avx512f"))) void stream_add_512(const float *a, const float *b, float *c, size_t n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < static_cast<long>(n); i += 16) {
    _mm512_stream_ps(c + i, _mm512_add_ps(_mm512_load_ps(a + i), _mm512_load_ps(b + i)));
  }
}

__attribute__((target("avx512f"))) void stream_copy_512(const float *a, float *c, size_t n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < static_cast<long>(n); i += 16) _mm512_stream_ps(c + i, _mm512_load_ps(a + i));
}

__attribute__((target("avx512f"))) void mvec_exp_512(const float *a, float *c, size_t n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < static_cast<long>(n); i += 16) _mm512_store_ps(c + i, _ZGVeN16v_expf(_mm512_load_ps(a + i)));
}

__attribute__((target("avx512f"))) float simd_sum_512(const float *a, size_t n) {
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps(), acc2 = _mm512_setzero_ps(),
           acc3 = _mm512_setzero_ps();
#pragma omp for schedule(static)
    for (long i = 0; i < static_cast<long>(n); i += 64) {
      acc0 = _mm512_add_ps(acc0, _mm512_load_ps(a + i));
      acc1 = _mm512_add_ps(acc1, _mm512_load_ps(a + i + 16));
      acc2 = _mm512_add_ps(acc2, _mm512_load_ps(a + i + 32));
      acc3 = _mm512_add_ps(acc3, _mm512_load_ps(a + i + 48));
    }
    total += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
  }
  return total;
}

__attribute__((target("avx512f"))) float simd_amax_512(const float *a, size_t n) {
  float best = -INFINITY;
#pragma omp parallel reduction(max : best)
  {
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
#pragma omp for schedule(static)
    for (long i = 0; i < static_cast<long>(n); i += 32) {
      m0 = _mm512_max_ps(m0, _mm512_load_ps(a + i));
      m1 = _mm512_max_ps(m1, _mm512_load_ps(a + i + 16));
    }
    best = std::max(best, _mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));
  }
  return best;
}

// The widest yardstick this CPU runs (n a multiple of 64, arrays 64-byte aligned).
const bool kAvx512 = __builtin_cpu_supports("avx512f");
void yard_add(const float *a, const float *b, float *c, size_t n) {
  kAvx512 ? stream_add_512(a, b, c, n) : stream_add(a, b, c, n);
}
void yard_copy(const float *a, float *c, size_t n) {
  kAvx512 ? stream_copy_512(a, c, n) : stream_copy(a, c, n);
}
void yard_exp(const float *a, float *c, size_t n) {
  kAvx512 ? mvec_exp_512(a, c, n) : mvec_exp(a, c, n);
}
float yard_sum(const float *a, size_t n) {
  return kAvx512 ? simd_sum_512(a, n) : simd_sum(a, n);
}
float yard_amax(const float *a, size_t n) {
  return kAvx512 ? simd_amax_512(a, n) : simd_amax(a, n);
}
void count_lanes(benchmark::State &state) {
  state.counters["yardstick_lanes"] = kAvx512 ? 16 : 8;
}

// --- elementwise and reductions on 16 M f32 ---------------------------------------------------------------------

void BM_add_vs_stream(benchmark::State &state) {
  count_lanes(state);
  set_threads(state);
  HostArray a(k16M), b(k16M), c(k16M);
  HostTensor ta(a.p, {int64_t(k16M)}, f32(), k16M * 4), tb(b.p, {int64_t(k16M)}, f32(), k16M * 4),
      tc(c.p, {int64_t(k16M)}, f32(), k16M * 4);
  paired(
      state, 3.0 * k16M * 4, [&] { yard_add(a.p, b.p, c.p, k16M); },
      [&] {
        launch(PK_OP_ADD, {ta.t, tb.t}, {tc.t});
      });
}

void BM_mul_vs_stream(benchmark::State &state) {
  count_lanes(state);
  set_threads(state);
  HostArray a(k16M), b(k16M), c(k16M);
  HostTensor ta(a.p, {int64_t(k16M)}, f32(), k16M * 4), tb(b.p, {int64_t(k16M)}, f32(), k16M * 4),
      tc(c.p, {int64_t(k16M)}, f32(), k16M * 4);
  paired(
      state, 3.0 * k16M * 4, [&] { yard_add(a.p, b.p, c.p, k16M); },
      [&] {
        launch(PK_OP_MUL, {ta.t, tb.t}, {tc.t});
      });
}

void BM_exp_vs_libmvec(benchmark::State &state) {
  count_lanes(state);
  set_threads(state);
  HostArray a(k16M, -3.0f), c(k16M);
  HostTensor ta(a.p, {int64_t(k16M)}, f32(), k16M * 4), tc(c.p, {int64_t(k16M)}, f32(), k16M * 4);
  paired(
      state, 2.0 * k16M * 4, [&] { yard_exp(a.p, c.p, k16M); }, [&] { launch(PK_OP_EXP, {ta.t}, {tc.t}); });
}

void BM_sum_vs_simd(benchmark::State &state) {
  count_lanes(state);
  set_threads(state);
  HostArray a(k16M, 0.5f);
  float out = 0;
  HostTensor ta(a.p, {int64_t(k16M)}, f32(), k16M * 4), to(&out, {}, f32(), 4);
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  volatile float sink = 0;
  paired(
      state, 1.0 * k16M * 4, [&] { sink = yard_sum(a.p, k16M); }, [&] { launch(PK_OP_SUM, {ta.t}, {to.t}, &attrs); });
  (void)sink;
}

void BM_amax_vs_simd(benchmark::State &state) {
  count_lanes(state);
  set_threads(state);
  HostArray a(k16M, 0.5f);
  float out = 0;
  HostTensor ta(a.p, {int64_t(k16M)}, f32(), k16M * 4), to(&out, {}, f32(), 4);
  pk_attrs_amax attrs = PK_ATTRS_AMAX_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  volatile float sink = 0;
  paired(
      state, 1.0 * k16M * 4, [&] { sink = yard_amax(a.p, k16M); }, [&] { launch(PK_OP_AMAX, {ta.t}, {to.t}, &attrs); });
  (void)sink;
}

// --- softmax and layer_norm over [4096, 4096] vs the copy bound ----------------------------------------------------
// The yardstick is a streaming copy of the same 64 MiB (read + write): the least traffic either op can cause.
// ratio = copy time / op time; the goal is >= 0.5.

void BM_softmax_vs_copy_bound(benchmark::State &state) {
  count_lanes(state);
  set_threads(state);
  const int64_t n = 4096;
  HostArray x(n * n, -1.0f), y(n * n);
  HostTensor tx(x.p, {n, n}, f32(), n * n * 4), ty(y.p, {n, n}, f32(), n * n * 4);
  pk_attrs_softmax attrs = PK_ATTRS_SOFTMAX_INIT;
  attrs.dim = 1;
  paired(
      state, 2.0 * n * n * 4, [&] { yard_copy(x.p, y.p, n * n); },
      [&] { launch(PK_OP_SOFTMAX, {tx.t}, {ty.t}, &attrs); });
}

void BM_layer_norm_vs_copy_bound(benchmark::State &state) {
  count_lanes(state);
  set_threads(state);
  const int64_t n = 4096;
  HostArray x(n * n, -1.0f), y(n * n), w(n, 0.5f), b(n, 0.25f);
  HostTensor tx(x.p, {n, n}, f32(), n * n * 4), ty(y.p, {n, n}, f32(), n * n * 4), tw(w.p, {n}, f32(), n * 4),
      tb(b.p, {n}, f32(), n * 4);
  pk_attrs_layer_norm attrs = PK_ATTRS_LAYER_NORM_INIT;
  paired(
      state, 2.0 * n * n * 4, [&] { yard_copy(x.p, y.p, n * n); },
      [&] {
        launch(PK_OP_LAYER_NORM, {tx.t, tw.t, tb.t}, {ty.t}, &attrs);
      });
}

// --- softplus over 16 M f32 vs the copy bound -------------------------------------------------------------------
// An elementwise op with an exp and a log1p per element: the native kernel (16 double lanes on AVX-512) should stay
// near the traffic bound of a copy. Inputs sweep [-30, 30) so that both branches of the formula and the switch at
// the threshold (20) are taken. ratio = copy time / op time.

void BM_softplus_vs_copy_bound(benchmark::State &state) {
  count_lanes(state);
  set_threads(state);
  HostArray x(k16M), y(k16M);
  for (size_t i = 0; i < k16M; ++i) x.p[i] = -30.0f + 60.0f * static_cast<float>(i % 4099) / 4099.0f;
  HostTensor tx(x.p, {int64_t(k16M)}, f32(), k16M * 4), ty(y.p, {int64_t(k16M)}, f32(), k16M * 4);
  pk_attrs_softplus attrs = PK_ATTRS_SOFTPLUS_INIT;
  paired(
      state, 2.0 * k16M * 4, [&] { yard_copy(x.p, y.p, k16M); },
      [&] { launch(PK_OP_SOFTPLUS, {tx.t}, {ty.t}, &attrs); });
}

// --- matmul vs oneDNN called directly ------------------------------------------------------------------------------
// The yardstick is oneDNN's matmul primitive for the same shapes, created once before timing and executed on the same
// buffers with the same thread count (both run on the caller's OpenMP team). bf16 uses oneDNN's bf16 matmul where
// this oneDNN has one for the CPU; where it does not (oneDNN 2.x needs AVX-512 for bf16), the yardstick is the f32
// primitive on the same values, and the `yardstick_bf16` counter says 0.

#ifdef PK_BENCH_HAVE_ONEDNN
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

void BM_matmul_vs_onednn(benchmark::State &state) {
  const int64_t n = state.range(0);
  const bool bf16 = state.range(1) != 0;
  Env::get();
  use_threads(static_cast<int>(state.range(2)));
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::vector<float> af(n * n), bf(n * n), cf(n * n), cy(n * n);
  for (int64_t i = 0; i < n * n; ++i) {
    af[i] = static_cast<float>((i * 7) % 13) / 13.0f - 0.5f;
    bf[i] = static_cast<float>((i * 5) % 11) / 11.0f - 0.5f;
  }
  std::vector<uint16_t> ah(n * n), bh(n * n), ch(n * n), chy(n * n);
  for (int64_t i = 0; i < n * n; ++i) ah[i] = to_bf16(af[i]), bh[i] = to_bf16(bf[i]);
  const memory::dims dims{n, n};
  auto md = [&](memory::data_type t) { return memory::desc(dims, t, memory::format_tag::ab); };
  bool native_bf16 = false;
  dnnl::matmul prim;
  memory am, bm, cm;
  if (bf16) {
    try {
      const auto t = memory::data_type::bf16;
      prim = dnnl::matmul(dnnl::matmul::primitive_desc(eng, md(t), md(t), md(t)));
      am = memory(md(t), eng, ah.data()), bm = memory(md(t), eng, bh.data()), cm = memory(md(t), eng, chy.data());
      native_bf16 = true;
    } catch (const dnnl::error &) {
    }
  }
  if (!native_bf16) {
    const auto t = memory::data_type::f32;
    prim = dnnl::matmul(dnnl::matmul::primitive_desc(eng, md(t), md(t), md(t)));
    am = memory(md(t), eng, af.data()), bm = memory(md(t), eng, bf.data()), cm = memory(md(t), eng, cy.data());
  }
  const pk_dtype dt = bf16 ? pk_dtype PK_DTYPE_BF16_DESC : f32();
  const size_t es = bf16 ? 2 : 4;
  HostTensor ta(bf16 ? static_cast<void *>(ah.data()) : af.data(), {n, n}, dt, n * n * es),
      tb(bf16 ? static_cast<void *>(bh.data()) : bf.data(), {n, n}, dt, n * n * es),
      tc(bf16 ? static_cast<void *>(ch.data()) : cf.data(), {n, n}, dt, n * n * es);
  paired(
      state, 0,
      [&] {
        prim.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
        strm.wait();
      },
      [&] {
        launch(PK_OP_MATMUL, {ta.t, tb.t}, {tc.t});
      });
  state.counters["subject_GFLOPs"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["yardstick_bf16"] = native_bf16 ? 1 : 0;
}

// max_pool2d / avg_pool2d, 3 x 3 windows, stride 2, padding 1 over f32 [32, 64, 56, 56] (a ResNet stem's pool),
// against oneDNN called directly the fastest way it pools a plain NCHW tensor: reorder to channel blocks, its JIT
// pooling, reorder back (its plain-layout pooling is 4-9x slower here). The subject adds the runtime's validation
// and, for max, the scan that decides whether oneDNN's max equals the op table's (NaN, -0).
void BM_pool_vs_onednn(benchmark::State &state) {
  const bool is_max = state.range(0) == 0;
  Env::get();
  use_threads(static_cast<int>(state.range(1)));
  using dnnl::memory;
  using tag = memory::format_tag;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const int64_t n = 32, c = 64, h = 56, oh = 28;
  std::vector<float> x(n * c * h * h), y(n * c * oh * oh), yy(y.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 13) / 13.0f - 0.5f;
  const tag blocked = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? tag::aBcd16b : tag::aBcd8b;
  const memory::desc xmd({n, c, h, h}, memory::data_type::f32, tag::abcd);
  const memory::desc ymd({n, c, oh, oh}, memory::data_type::f32, tag::abcd);
  const memory::desc xbd({n, c, h, h}, memory::data_type::f32, blocked);
  const memory::desc ybd({n, c, oh, oh}, memory::data_type::f32, blocked);
  const dnnl::algorithm alg = is_max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
  const dnnl::pooling_forward prim(dnnl::pooling_forward::primitive_desc(
      eng, dnnl::prop_kind::forward_inference, alg, xbd, ybd, {2, 2}, {3, 3}, {0, 0}, {1, 1}, {0, 0}));
  memory xm(xmd, eng, x.data()), ym(ymd, eng, yy.data()), xbm(xbd, eng), ybm(ybd, eng);
  const dnnl::reorder to_blocked(xm, xbm), to_plain(ybm, ym);
  HostTensor tx(x.data(), {n, c, h, h}, f32(), x.size() * 4), ty(y.data(), {n, c, oh, oh}, f32(), y.size() * 4);
  pk_attrs_max_pool2d am = PK_ATTRS_MAX_POOL2D_INIT;
  pk_attrs_avg_pool2d aa = PK_ATTRS_AVG_POOL2D_INIT;
  am.num_kernel_size = aa.num_kernel_size = 2;
  am.num_stride = aa.num_stride = 2;
  for (int a = 0; a < 2; ++a) {
    am.kernel_size[a] = aa.kernel_size[a] = 3;
    am.stride[a] = aa.stride[a] = 2;
    am.padding[a] = aa.padding[a] = 1;
  }
  paired(
      state, 4.0 * static_cast<double>(x.size() + y.size()),
      [&] {
        to_blocked.execute(strm, xm, xbm);
        prim.execute(strm, {{DNNL_ARG_SRC, xbm}, {DNNL_ARG_DST, ybm}});
        to_plain.execute(strm, ybm, ym);
        strm.wait();
      },
      [&] {
        if (is_max) {
          launch(PK_OP_MAX_POOL2D, {tx.t}, {ty.t}, &am);
        } else {
          launch(PK_OP_AVG_POOL2D, {tx.t}, {ty.t}, &aa);
        }
      });
}
#endif

// --- dispatch cost ----------------------------------------------------------------------------------------------

void BM_launch_1elem_add(benchmark::State &state) {
  Env &env = Env::get();
  float a = 1, b = 2, c = 0;
  HostTensor ta(&a, {1}, f32(), 4), tb(&b, {1}, f32(), 4), tc(&c, {1}, f32(), 4);
  pk_tensor in[2] = {ta.t, tb.t};
  for (auto _ : state) {
    pk_launch(env.stream, PK_OP_ADD, in, 2, &tc.t, 1, nullptr);
    benchmark::DoNotOptimize(c);
  }
  state.counters["ns_per_launch"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// A composite the CPU backend has no kernel for (hardswish f32, 256 elements) launched with pk_launch: the runtime
// runs the Program of its decomposition, planned once and cached. The yardstick is the caller launching the same
// nine primitives by hand into temporaries it allocated beforehand: the dispatch floor of that decomposition.
// ratio = by hand / pk_launch; 1.0 means the runtime adds nothing per launch for decomposing.
void BM_composite_launch_vs_its_primitives(benchmark::State &state) {
  const int64_t n = 256;
  std::vector<float> x(n), y(n), t(6 * n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) / 16.0f - 8.0f;
  HostTensor tx(x.data(), {n}, f32(), n * 4), ty(y.data(), {n}, f32(), n * 4);
  std::vector<HostTensor> tmp;
  for (int k = 0; k < 6; ++k) tmp.emplace_back(t.data() + k * n, std::vector<int64_t>{n}, f32(), n * 4);
  auto fill = [&](const HostTensor &out, double v) {
    pk_attrs_fill a = PK_ATTRS_FILL_INIT;
    a.value = v;
    launch(PK_OP_FILL, {tx.t}, {out.t}, &a);
  };
  paired(
      state, 0,
      [&] {
        fill(tmp[0], 3);
        launch(PK_OP_ADD, {tx.t, tmp[0].t}, {tmp[1].t});
        fill(tmp[0], 0);
        launch(PK_OP_MAXIMUM, {tmp[1].t, tmp[0].t}, {tmp[2].t});
        fill(tmp[0], 6);
        launch(PK_OP_MINIMUM, {tmp[2].t, tmp[0].t}, {tmp[3].t});
        fill(tmp[4], 6);
        launch(PK_OP_DIV, {tmp[3].t, tmp[4].t}, {tmp[5].t});
        launch(PK_OP_MUL, {tx.t, tmp[5].t}, {ty.t});
      },
      [&] { launch(PK_OP_HARDSWISH, {tx.t}, {ty.t}); });
  state.counters["us_per_launch"] = benchmark::Counter(static_cast<double>(state.iterations()) * 1e-6,
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// --- allocation: allocating vs preallocated output ---------------------------------------------------------------

void BM_add_allocating_vs_preallocated(benchmark::State &state) {
  set_threads(state);
  Env &env = Env::get();
  HostArray a(k16M), b(k16M), c(k16M);
  std::vector<int64_t> shape{int64_t(k16M)};
  HostTensor ta(a.p, shape, f32(), k16M * 4), tb(b.p, shape, f32(), k16M * 4), tc(c.p, shape, f32(), k16M * 4);
  paired(
      state, 3.0 * k16M * 4,
      [&] {
        launch(PK_OP_ADD, {ta.t, tb.t}, {tc.t});
      },
      [&] {
        pk_buffer_t out = nullptr;
        must(pk_buffer_create(env.dev, k16M * 4, &out));
        pk_tensor to;
        must(pk_buffer_tensor(out, f32(), 1, shape.data(), nullptr, 0, &to));
        launch(PK_OP_ADD, {ta.t, tb.t}, {to});
        pk_buffer_destroy(out);
      });
}

// --- threading never hurts: the 2-thread time relative to the 1-thread time at each size ------------------------

void BM_add_2threads_vs_1thread(benchmark::State &state) {
  size_t n = static_cast<size_t>(state.range(0));
  HostArray a(n), b(n), c(n);
  HostTensor ta(a.p, {int64_t(n)}, f32(), n * 4), tb(b.p, {int64_t(n)}, f32(), n * 4),
      tc(c.p, {int64_t(n)}, f32(), n * 4);
  int reps = static_cast<int>(std::max<size_t>(1, (size_t{1} << 24) / n / 4));
  paired(
      state, 0,
      [&] {
        use_threads(1);
        for (int r = 0; r < reps; ++r) launch(PK_OP_ADD, {ta.t, tb.t}, {tc.t});
      },
      [&] {
        use_threads(2);
        for (int r = 0; r < reps; ++r) launch(PK_OP_ADD, {ta.t, tb.t}, {tc.t});
      });
}

// The machine's own scaling, for the figure above: the STREAM-like add loop at 2 threads vs 1 thread (ratio = the
// 1-thread time / the 2-thread time). The subject's 16 M speedup cannot exceed what the memory system gives this
// loop.
void BM_stream_add_2threads_vs_1thread(benchmark::State &state) {
  count_lanes(state);
  size_t n = static_cast<size_t>(state.range(0));
  HostArray a(n), b(n), c(n);
  paired(
      state, 0,
      [&] {
        use_threads(1);
        yard_add(a.p, b.p, c.p, n);
      },
      [&] {
        use_threads(2);
        yard_add(a.p, b.p, c.p, n);
      });
}

#define PK_PAIRED(bm) \
  BENCHMARK(bm)->UseManualTime()->Repetitions(7)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond)
PK_PAIRED(BM_add_vs_stream)->Arg(1)->Arg(2);
PK_PAIRED(BM_mul_vs_stream)->Arg(1)->Arg(2);
PK_PAIRED(BM_exp_vs_libmvec)->Arg(1)->Arg(2);
PK_PAIRED(BM_sum_vs_simd)->Arg(1)->Arg(2);
PK_PAIRED(BM_amax_vs_simd)->Arg(1)->Arg(2);
PK_PAIRED(BM_softmax_vs_copy_bound)->Arg(1)->Arg(2);
PK_PAIRED(BM_layer_norm_vs_copy_bound)->Arg(1)->Arg(2);
PK_PAIRED(BM_softplus_vs_copy_bound)->Arg(1)->Arg(2);
PK_PAIRED(BM_add_allocating_vs_preallocated)->Arg(1)->Arg(2);
#ifdef PK_BENCH_HAVE_ONEDNN
// Args: n (M = N = K), bf16 (0/1), threads.
PK_PAIRED(BM_matmul_vs_onednn)->ArgsProduct({{1024, 2048}, {0, 1}, {1, 2}});
// Args: 0 max / 1 avg, threads.
PK_PAIRED(BM_pool_vs_onednn)->ArgsProduct({{0, 1}, {1, 2}});
#endif
PK_PAIRED(BM_add_2threads_vs_1thread)->RangeMultiplier(4)->Range(1 << 10, 1 << 24)->Unit(benchmark::kMicrosecond);
PK_PAIRED(BM_stream_add_2threads_vs_1thread)->Arg(1 << 24)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_launch_1elem_add)->Repetitions(7)->ReportAggregatesOnly(true);
PK_PAIRED(BM_composite_launch_vs_its_primitives)->Unit(benchmark::kMicrosecond);

}  // namespace

PK_BENCH_MAIN()
