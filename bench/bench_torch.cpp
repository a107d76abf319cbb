// bench_torch.cpp — the CPU backend against libtorch (ATen, Debian's libtorch-dev) as the peer, on the same memory
// and the same thread count (at::set_num_threads and the backend's cap set together). Every ratio is
// libtorch time / PrimKit time, measured in the same iteration: above 1, PrimKit is faster.
//   elementwise:  add / mul / exp on 16 M f32 into preallocated outputs (at::*_out)
//   reductions:   sum / amax over 16 M f32 into a 0-d output
//   rows:         softmax and layer_norm over [4096, 4096] f32
//   matmul:       f32 and bf16 at 1024^3 and 2048^3 (at::mm_out)
//   dispatch:     a 1-element f32 add into a caller-provided output, 1000 launches per timing
//   allocation:   an allocating 16 M add (at::add; PrimKit: buffer from the caching allocator + add)
//   fusion:       relu(x*y+z) and ((x*y)+x)*y-x, one fused kernel (graph API) against libtorch eager, both as
//                 written (allocating) and into preallocated outputs (what a caching allocator would give it)
// Built only where CMake finds Torch (tools/setup.sh --peers installs it).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>

#include "bench_common.hpp"

using namespace pk::bench;

namespace {

constexpr int64_t k16M = int64_t{1} << 24;

at::Tensor wrap(void *p, at::IntArrayRef shape, at::ScalarType t = at::kFloat) {
  return at::from_blob(p, shape, at::TensorOptions().dtype(t));
}

// Both sides get the same thread count; libtorch's intra-op pool is OpenMP here, like the backend's.
void peer_threads(benchmark::State &state) {
  set_threads(state);
  at::set_num_threads(static_cast<int>(state.range(0)));
}

// --- elementwise and reductions on 16 M f32 ---------------------------------------------------------------------

void BM_add_vs_torch(benchmark::State &state) {
  peer_threads(state);
  HostArray a(k16M), b(k16M), c(k16M), d(k16M);
  HostTensor ta(a.p, {k16M}, f32(), k16M * 4), tb(b.p, {k16M}, f32(), k16M * 4), tc(c.p, {k16M}, f32(), k16M * 4);
  at::Tensor xa = wrap(a.p, {k16M}), xb = wrap(b.p, {k16M}), xd = wrap(d.p, {k16M});
  paired(
      state, 3.0 * k16M * 4, [&] { at::add_out(xd, xa, xb); },
      [&] {
        launch(PK_OP_ADD, {ta.t, tb.t}, {tc.t});
      });
}

void BM_mul_vs_torch(benchmark::State &state) {
  peer_threads(state);
  HostArray a(k16M), b(k16M), c(k16M), d(k16M);
  HostTensor ta(a.p, {k16M}, f32(), k16M * 4), tb(b.p, {k16M}, f32(), k16M * 4), tc(c.p, {k16M}, f32(), k16M * 4);
  at::Tensor xa = wrap(a.p, {k16M}), xb = wrap(b.p, {k16M}), xd = wrap(d.p, {k16M});
  paired(
      state, 3.0 * k16M * 4, [&] { at::mul_out(xd, xa, xb); },
      [&] {
        launch(PK_OP_MUL, {ta.t, tb.t}, {tc.t});
      });
}

void BM_exp_vs_torch(benchmark::State &state) {
  peer_threads(state);
  HostArray a(k16M, -3.0f), c(k16M), d(k16M);
  HostTensor ta(a.p, {k16M}, f32(), k16M * 4), tc(c.p, {k16M}, f32(), k16M * 4);
  at::Tensor xa = wrap(a.p, {k16M}), xd = wrap(d.p, {k16M});
  paired(
      state, 2.0 * k16M * 4, [&] { at::exp_out(xd, xa); }, [&] { launch(PK_OP_EXP, {ta.t}, {tc.t}); });
}

void BM_sum_vs_torch(benchmark::State &state) {
  peer_threads(state);
  HostArray a(k16M, 0.5f);
  float out = 0, peer = 0;
  HostTensor ta(a.p, {k16M}, f32(), k16M * 4), to(&out, {}, f32(), 4);
  at::Tensor xa = wrap(a.p, {k16M}), xo = wrap(&peer, {});
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  paired(
      state, 1.0 * k16M * 4, [&] { at::sum_out(xo, xa, {0}); }, [&] { launch(PK_OP_SUM, {ta.t}, {to.t}, &attrs); });
}

void BM_amax_vs_torch(benchmark::State &state) {
  peer_threads(state);
  HostArray a(k16M, 0.5f);
  float out = 0, peer = 0;
  HostTensor ta(a.p, {k16M}, f32(), k16M * 4), to(&out, {}, f32(), 4);
  at::Tensor xa = wrap(a.p, {k16M}), xo = wrap(&peer, {});
  pk_attrs_amax attrs = PK_ATTRS_AMAX_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  paired(
      state, 1.0 * k16M * 4, [&] { at::amax_out(xo, xa, {0}); }, [&] { launch(PK_OP_AMAX, {ta.t}, {to.t}, &attrs); });
}

// --- softmax and layer_norm over [4096, 4096] ---------------------------------------------------------------------

void BM_softmax_vs_torch(benchmark::State &state) {
  peer_threads(state);
  const int64_t n = 4096;
  HostArray x(n * n, -1.0f), y(n * n), z(n * n);
  HostTensor tx(x.p, {n, n}, f32(), n * n * 4), ty(y.p, {n, n}, f32(), n * n * 4);
  at::Tensor xx = wrap(x.p, {n, n}), xz = wrap(z.p, {n, n});
  pk_attrs_softmax attrs = PK_ATTRS_SOFTMAX_INIT;
  attrs.dim = 1;
  paired(
      state, 2.0 * n * n * 4, [&] { at::_softmax_out(xz, xx, 1, false); },
      [&] { launch(PK_OP_SOFTMAX, {tx.t}, {ty.t}, &attrs); });
}

// ATen has no public out= variant of layer_norm: its kernel writes a fresh output (and the saved mean/rstd), so
// the peer pays an allocation of 64 MiB per call. That is libtorch as a user calls it.
void BM_layer_norm_vs_torch(benchmark::State &state) {
  peer_threads(state);
  const int64_t n = 4096;
  HostArray x(n * n, -1.0f), y(n * n), w(n, 0.5f), b(n, 0.25f);
  HostTensor tx(x.p, {n, n}, f32(), n * n * 4), ty(y.p, {n, n}, f32(), n * n * 4), tw(w.p, {n}, f32(), n * 4),
      tb(b.p, {n}, f32(), n * 4);
  at::Tensor xx = wrap(x.p, {n, n}), xw = wrap(w.p, {n}), xb = wrap(b.p, {n});
  pk_attrs_layer_norm attrs = PK_ATTRS_LAYER_NORM_INIT;
  paired(
      state, 2.0 * n * n * 4, [&] { benchmark::DoNotOptimize(at::layer_norm(xx, {n}, xw, xb, 1e-5)); },
      [&] {
        launch(PK_OP_LAYER_NORM, {tx.t, tw.t, tb.t}, {ty.t}, &attrs);
      });
}

// --- matmul ----------------------------------------------------------------------------------------------------------
// Args: threads, n (M = N = K), bf16 (0/1).

void BM_matmul_vs_torch(benchmark::State &state) {
  peer_threads(state);
  const int64_t n = state.range(1);
  const bool bf16 = state.range(2) != 0;
  const at::ScalarType st = bf16 ? at::kBFloat16 : at::kFloat;
  at::Tensor a = at::rand({n, n}).sub_(0.5).to(st), b = at::rand({n, n}).sub_(0.5).to(st), c = at::empty({n, n}, st),
             d = at::empty({n, n}, st);
  const pk_dtype dt = bf16 ? pk_dtype PK_DTYPE_BF16_DESC : f32();
  const size_t bytes = static_cast<size_t>(n * n) * (bf16 ? 2 : 4);
  HostTensor ta(a.data_ptr(), {n, n}, dt, bytes), tb(b.data_ptr(), {n, n}, dt, bytes),
      tc(c.data_ptr(), {n, n}, dt, bytes);
  paired(
      state, 0, [&] { at::mm_out(d, a, b); },
      [&] {
        launch(PK_OP_MATMUL, {ta.t, tb.t}, {tc.t});
      });
  state.counters["subject_GFLOPs"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

// --- dispatch: 1-element add into a caller-provided output -------------------------------------------------------

void BM_launch_1elem_add_vs_torch(benchmark::State &state) {
  peer_threads(state);
  Env &env = Env::get();
  constexpr int kReps = 1000;
  float a = 1, b = 2, c = 0, d = 0;
  HostTensor ta(&a, {1}, f32(), 4), tb(&b, {1}, f32(), 4), tc(&c, {1}, f32(), 4);
  at::Tensor xa = wrap(&a, {1}), xb = wrap(&b, {1}), xd = wrap(&d, {1});
  pk_tensor in[2] = {ta.t, tb.t};
  paired(
      state, 0,
      [&] {
        for (int r = 0; r < kReps; ++r) at::add_out(xd, xa, xb);
      },
      [&] {
        for (int r = 0; r < kReps; ++r) must(pk_launch(env.stream, PK_OP_ADD, in, 2, &tc.t, 1, nullptr));
      });
  if (c != 3.0f || d != 3.0f) state.SkipWithError("1 + 2 is not 3");
}

// --- allocation: an allocating add, as a framework's eager mode issues it -----------------------------------------

void BM_add_allocating_vs_torch(benchmark::State &state) {
  peer_threads(state);
  Env &env = Env::get();
  HostArray a(k16M), b(k16M);
  HostTensor ta(a.p, {k16M}, f32(), k16M * 4), tb(b.p, {k16M}, f32(), k16M * 4);
  at::Tensor xa = wrap(a.p, {k16M}), xb = wrap(b.p, {k16M});
  const int64_t shape[1] = {k16M};
  paired(
      state, 3.0 * k16M * 4, [&] { benchmark::DoNotOptimize(at::add(xa, xb)); },
      [&] {
        pk_buffer_t out = nullptr;
        must(pk_buffer_create(env.dev, k16M * 4, &out));
        pk_tensor to;
        must(pk_buffer_tensor(out, f32(), 1, shape, nullptr, 0, &to));
        launch(PK_OP_ADD, {ta.t, tb.t}, {to});
        pk_buffer_destroy(out);
      });
}

// --- fusion: one JIT-compiled kernel against libtorch eager --------------------------------------------------------

// A graph over 16 M f32 inputs, compiled once on the CPU backend (its fusion hook claims the chain).
struct FusedChain {
  pk_executable_t exec = nullptr;
  explicit FusedChain(int variant) {
    const int64_t shape[1] = {k16M};
    pk_dtype f = f32();
    pk_graph_t g = nullptr;
    uint32_t x, y, z = 0, v;
    must(pk_graph_create(&g));
    must(pk_graph_add_input(g, f, 1, shape, &x));
    must(pk_graph_add_input(g, f, 1, shape, &y));
    auto node = [&](uint32_t op, uint32_t l, uint32_t r) {
      uint32_t in[2] = {l, r}, out;
      must(pk_graph_add_node(g, op, in, r == UINT32_MAX ? 1 : 2, nullptr, &out, 1));
      return out;
    };
    if (variant == 0) {  // relu(x * y + z)
      must(pk_graph_add_input(g, f, 1, shape, &z));
      v = node(PK_OP_RELU, node(PK_OP_ADD, node(PK_OP_MUL, x, y), z), UINT32_MAX);
    } else {  // ((x * y) + x) * y - x
      v = node(PK_OP_SUB, node(PK_OP_MUL, node(PK_OP_ADD, node(PK_OP_MUL, x, y), x), y), x);
    }
    must(pk_graph_mark_output(g, v));
    must(pk_graph_compile(g, Env::get().dev, nullptr, &exec));
    pk_graph_destroy(g);
    uint32_t kernels = 0;
    pk_executable_stats(exec, &kernels, nullptr, nullptr);
    if (kernels != 1) std::fprintf(stderr, "bench: the chain compiled to %u kernels, not one fused kernel\n", kernels);
  }
  ~FusedChain() { pk_executable_destroy(exec); }
};

// Args: threads, variant (0: relu(x*y+z), 1: the 4-op chain), peer_preallocated (0: as written, allocating each
// intermediate; 1: into preallocated outputs, in place where ATen allows).
void BM_fused_chain_vs_torch_eager(benchmark::State &state) {
  peer_threads(state);
  const int variant = static_cast<int>(state.range(1));
  const bool prealloc = state.range(2) != 0;
  static FusedChain relu_fma(0), chain4(1);
  FusedChain &chain = variant == 0 ? relu_fma : chain4;
  HostArray x(k16M, -0.5f), y(k16M, 0.75f), z(k16M, 0.125f), out(k16M), t1(k16M), t2(k16M);
  HostTensor tx(x.p, {k16M}, f32(), k16M * 4), ty(y.p, {k16M}, f32(), k16M * 4), tz(z.p, {k16M}, f32(), k16M * 4),
      tout(out.p, {k16M}, f32(), k16M * 4);
  at::Tensor ax = wrap(x.p, {k16M}), ay = wrap(y.p, {k16M}), az = wrap(z.p, {k16M}), a1 = wrap(t1.p, {k16M}),
             a2 = wrap(t2.p, {k16M});
  const pk_tensor ins[3] = {tx.t, ty.t, tz.t};
  Env &env = Env::get();
  auto peer = [&] {
    if (variant == 0 && !prealloc) benchmark::DoNotOptimize(at::relu(ax * ay + az));
    if (variant == 0 && prealloc) at::relu_(at::add_out(a2, at::mul_out(a1, ax, ay), az));
    if (variant == 1 && !prealloc) benchmark::DoNotOptimize((ax * ay + ax) * ay - ax);
    if (variant == 1 && prealloc)
      at::sub_out(a2, at::mul_out(a2, at::add_out(a2, at::mul_out(a1, ax, ay), ax), ay), ax);
  };
  paired(state, (variant == 0 ? 4.0 : 3.0) * k16M * 4, peer,
         [&] { must(pk_executable_run(chain.exec, env.stream, ins, variant == 0 ? 3 : 2, &tout.t, 1)); });
  // The fused result against the peer's, elementwise (both round each op to f32, so they agree exactly).
  peer();
  at::Tensor ref = variant == 0 ? at::relu(ax * ay + az) : (ax * ay + ax) * ay - ax;
  if (!at::equal(ref, wrap(out.p, {k16M}))) state.SkipWithError("the fused result differs from libtorch's");
}

}  // namespace

#define PK_PAIRED(bm) \
  BENCHMARK(bm)->UseManualTime()->Repetitions(7)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond)
PK_PAIRED(BM_add_vs_torch)->Arg(1)->Arg(2);
PK_PAIRED(BM_mul_vs_torch)->Arg(1)->Arg(2);
PK_PAIRED(BM_exp_vs_torch)->Arg(1)->Arg(2);
PK_PAIRED(BM_sum_vs_torch)->Arg(1)->Arg(2);
PK_PAIRED(BM_amax_vs_torch)->Arg(1)->Arg(2);
PK_PAIRED(BM_softmax_vs_torch)->Arg(1)->Arg(2);
PK_PAIRED(BM_layer_norm_vs_torch)->Arg(1)->Arg(2);
PK_PAIRED(BM_matmul_vs_torch)->ArgsProduct({{1, 2}, {1024, 2048}, {0, 1}});
PK_PAIRED(BM_launch_1elem_add_vs_torch)->Arg(1)->Unit(benchmark::kMicrosecond);
PK_PAIRED(BM_add_allocating_vs_torch)->Arg(1)->Arg(2);
PK_PAIRED(BM_fused_chain_vs_torch_eager)->ArgsProduct({{1, 2}, {0, 1}, {0, 1}});

PK_BENCH_MAIN();
