// bench_cuda.cpp — the cuda backend on an NVIDIA GPU. Every figure is a ratio against a yardstick on the same GPU
// in the same iteration:
//   add / exp / relu(x*y+z) fused on 64 M f32    bw_ratio = achieved bandwidth / device-to-device copy bandwidth
//                                                 (the copy is the driver's own cuMemcpyDtoD through the backend)
//   relu(x*y+z) fused vs unfused                  ratio = three launches' time / one fused kernel's time (traffic
//                                                 bound 2.0: 32 B/element unfused, 16 fused)
//   sum over rows of [8192, 8192] f32            bw_ratio as above (4 B/element read)
//   matmul f32 2048^3                             GFLOP/s (the peer, torch's cuBLAS, is timed by tools/gpu-check.sh)
//   launch overhead                               host-side submission of a 1-element add: pk_launch vs
//                                                 cuLaunchKernel of a hand-written PTX add on a raw stream
// Device work is synchronized inside each timed region. Without a GPU every benchmark skips with the reason.
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace pk::bench {
namespace {

constexpr int64_t k64M = int64_t{64} << 20;

std::string last_message() {
  pk_error_info e;
  e.struct_size = sizeof(e);
  pk_get_last_error(&e);
  return e.message;
}

struct CudaEnv {
  pk_runtime_t rt = nullptr;
  pk_backend_t be = nullptr;
  pk_device_t dev = nullptr;
  pk_stream_t stream = nullptr;
  std::string why;  // empty when a device is open

  static CudaEnv &get() {
    static CudaEnv env;
    return env;
  }

 private:
  CudaEnv() {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    const char *path = std::getenv("PRIMKIT_BENCH_CUDA_PLUGIN");
    uint32_t n = 0;
    if (pk_runtime_create(&o, &rt) != PK_OK || pk_runtime_load_plugin(rt, path ? path : PK_CUDA_PLUGIN, &be) != PK_OK) {
      why = "cannot load the cuda backend: " + last_message();
    } else if (pk_backend_device_count(be, &n) != PK_OK || n == 0) {
      why = "the cuda backend has no device: " + last_message();
    } else if (pk_backend_device(be, 0, &dev) != PK_OK || pk_stream_create(dev, &stream) != PK_OK) {
      why = "cannot open the GPU: " + last_message();
    } else {
      pk_device_props p;
      PK_STRUCT_INIT(p);
      pk_device_get_props(dev, &p);
      std::printf("cuda device 0: %s, %u SMs\n", p.name, p.compute_units);
    }
  }
};

bool ready(benchmark::State &state) {
  CudaEnv &e = CudaEnv::get();
  if (!e.why.empty()) state.SkipWithError(e.why.c_str());
  return e.why.empty();
}

std::vector<float> pattern(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>((i * 7919) % 2001 - 1000);
  return v;
}

// Yardstick and subject back to back each iteration, each synchronized: bw_ratio = subject bandwidth / yardstick
// bandwidth, with their own byte counts.
template <typename Yard, typename Subject>
void paired_bandwidth(benchmark::State &state, double yard_bytes, double subject_bytes, Yard &&yard,
                      Subject &&subject) {
  const auto [ty, ts] = paired_times(state, yard, subject);
  const double n = static_cast<double>(state.iterations());
  state.counters["subject_GBps"] = subject_bytes * n / ts / 1e9;
  state.counters["copy_GBps"] = yard_bytes * n / ty / 1e9;
  state.counters["bw_ratio"] = (subject_bytes / ts) / (yard_bytes / ty);
}

void copy_d2d(pk_buffer_t dst, pk_buffer_t src, int64_t n) {
  CudaEnv &e = CudaEnv::get();
  must(pk_copy_buffer_to_buffer(e.stream, dst, 0, src, 0, static_cast<uint64_t>(n) * 4));
  must(pk_stream_synchronize(e.stream));
}

void BM_add_vs_copy(benchmark::State &state) {
  if (!ready(state)) return;
  CudaEnv &e = CudaEnv::get();
  auto h = pattern(k64M, 1e-3f);
  DevTensor a(e.dev, e.stream, h.data(), {k64M}), b(e.dev, e.stream, h.data(), {k64M}),
      c(e.dev, e.stream, nullptr, {k64M});
  must(launch_on(e.stream, PK_OP_ADD, {a.t, b.t}, {c.t}));  // compiles and loads the kernel outside the timing
  paired_bandwidth(
      state, 8.0 * k64M, 12.0 * k64M, [&] { copy_d2d(c.buf, a.buf, k64M); },
      [&] {
        must(launch_on(e.stream, PK_OP_ADD, {a.t, b.t}, {c.t}));
        must(pk_stream_synchronize(e.stream));
      });
}

void BM_exp_vs_copy(benchmark::State &state) {
  if (!ready(state)) return;
  CudaEnv &e = CudaEnv::get();
  auto h = pattern(k64M, 1e-2f);
  DevTensor a(e.dev, e.stream, h.data(), {k64M}), c(e.dev, e.stream, nullptr, {k64M});
  must(launch_on(e.stream, PK_OP_EXP, {a.t}, {c.t}));
  paired_bandwidth(
      state, 8.0 * k64M, 8.0 * k64M, [&] { copy_d2d(c.buf, a.buf, k64M); },
      [&] {
        must(launch_on(e.stream, PK_OP_EXP, {a.t}, {c.t}));
        must(pk_stream_synchronize(e.stream));
      });
}

// relu(x*y+z) as a graph of mul, add, relu on [n] f32.
pk_executable_t relu_fma(pk_device_t dev, int64_t n, bool fuse, uint32_t *fused_kernels) {
  pk_graph_t g = nullptr;
  uint32_t x, y, z, xy, s, r;
  const int64_t shape[1] = {n};
  must(pk_graph_create(&g));
  must(pk_graph_add_input(g, f32(), 1, shape, &x));
  must(pk_graph_add_input(g, f32(), 1, shape, &y));
  must(pk_graph_add_input(g, f32(), 1, shape, &z));
  const uint32_t in1[2] = {x, y};
  must(pk_graph_add_node(g, PK_OP_MUL, in1, 2, nullptr, &xy, 1));
  const uint32_t in2[2] = {xy, z};
  must(pk_graph_add_node(g, PK_OP_ADD, in2, 2, nullptr, &s, 1));
  must(pk_graph_add_node(g, PK_OP_RELU, &s, 1, nullptr, &r, 1));
  must(pk_graph_mark_output(g, r));
  pk_compile_options o;
  PK_STRUCT_INIT(o);
  o.disable_fusion = fuse ? 0 : 1;
  pk_executable_t exe = nullptr;
  must(pk_graph_compile(g, dev, &o, &exe));
  pk_graph_destroy(g);
  if (fused_kernels) pk_executable_stats(exe, fused_kernels, nullptr, nullptr);
  return exe;
}

void BM_relu_fma_fused_vs_copy(benchmark::State &state) {
  if (!ready(state)) return;
  CudaEnv &e = CudaEnv::get();
  auto h = pattern(k64M, 1e-3f);
  DevTensor x(e.dev, e.stream, h.data(), {k64M}), y(e.dev, e.stream, h.data(), {k64M}),
      z(e.dev, e.stream, h.data(), {k64M}), out(e.dev, e.stream, nullptr, {k64M});
  uint32_t kernels = 0;
  pk_executable_t exe = relu_fma(e.dev, k64M, true, &kernels);
  const pk_tensor ins[3] = {x.t, y.t, z.t};
  paired_bandwidth(
      state, 8.0 * k64M, 16.0 * k64M, [&] { copy_d2d(out.buf, x.buf, k64M); },
      [&] {
        must(pk_executable_run(exe, e.stream, ins, 3, &out.t, 1));
        must(pk_stream_synchronize(e.stream));
      });
  state.counters["fused_kernels"] = kernels;
  pk_executable_destroy(exe);
}

// The same graph compiled with fusion off (three kernels, intermediates in device memory) as the yardstick.
void BM_relu_fma_fused_vs_unfused(benchmark::State &state) {
  if (!ready(state)) return;
  CudaEnv &e = CudaEnv::get();
  auto h = pattern(k64M, 1e-3f);
  DevTensor x(e.dev, e.stream, h.data(), {k64M}), y(e.dev, e.stream, h.data(), {k64M}),
      z(e.dev, e.stream, h.data(), {k64M}), out(e.dev, e.stream, nullptr, {k64M});
  pk_executable_t fused = relu_fma(e.dev, k64M, true, nullptr);
  pk_executable_t unfused = relu_fma(e.dev, k64M, false, nullptr);
  const pk_tensor ins[3] = {x.t, y.t, z.t};
  must(pk_executable_run(unfused, e.stream, ins, 3, &out.t, 1));
  paired(
      state, 0,
      [&] {
        must(pk_executable_run(unfused, e.stream, ins, 3, &out.t, 1));
        must(pk_stream_synchronize(e.stream));
      },
      [&] {
        must(pk_executable_run(fused, e.stream, ins, 3, &out.t, 1));
        must(pk_stream_synchronize(e.stream));
      });
  pk_executable_destroy(fused);
  pk_executable_destroy(unfused);
}

void BM_sum_rows_vs_copy(benchmark::State &state) {
  if (!ready(state)) return;
  CudaEnv &e = CudaEnv::get();
  const int64_t rows = 8192, cols = 8192;
  auto h = pattern(rows * cols, 1e-3f);
  DevTensor a(e.dev, e.stream, h.data(), {rows, cols}), c(e.dev, e.stream, nullptr, {rows}),
      scratch(e.dev, e.stream, nullptr, {rows * cols / 2});
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 1;
  must(launch_on(e.stream, PK_OP_SUM, {a.t}, {c.t}, &attrs));
  // Yardstick: copy half the input into scratch (reads and writes as many bytes as the sum reads).
  paired_bandwidth(
      state, 4.0 * rows * cols, 4.0 * rows * cols, [&] { copy_d2d(scratch.buf, a.buf, rows * cols / 2); },
      [&] {
        must(launch_on(e.stream, PK_OP_SUM, {a.t}, {c.t}, &attrs));
        must(pk_stream_synchronize(e.stream));
      });
}

void BM_matmul_f32(benchmark::State &state) {
  if (!ready(state)) return;
  CudaEnv &e = CudaEnv::get();
  const int64_t n = state.range(0);
  auto h = pattern(n * n, 1e-3f);
  DevTensor a(e.dev, e.stream, h.data(), {n, n}), b(e.dev, e.stream, h.data(), {n, n}),
      c(e.dev, e.stream, nullptr, {n, n});
  must(launch_on(e.stream, PK_OP_MATMUL, {a.t, b.t}, {c.t}));
  must(pk_stream_synchronize(e.stream));
  double t = 0;
  for (auto _ : state) {
    double t0 = now_s();
    must(launch_on(e.stream, PK_OP_MATMUL, {a.t, b.t}, {c.t}));
    must(pk_stream_synchronize(e.stream));
    double dt = now_s() - t0;
    t += dt;
    state.SetIterationTime(dt);
  }
  state.counters["GFLOPs"] = 2.0 * n * n * n * static_cast<double>(state.iterations()) / t / 1e9;
}

// --- launch overhead: the SDK against the raw driver -------------------------------------------------------------

// What the backend generates for a contiguous f32 add, reduced to its essentials, written by hand.
const char *kRawAddPtx = R"PTX(
.version 7.0
.target sm_80
.address_size 64
.visible .entry raw_add(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pn) {
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<12>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  ld.param.u64 %rd4, [pn];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd5, %r1, %r2;
  cvt.u64.u32 %rd6, %r3;
  add.u64 %rd5, %rd5, %rd6;
  setp.ge.u64 %p1, %rd5, %rd4;
  @%p1 bra DONE;
  shl.b64 %rd6, %rd5, 2;
  add.u64 %rd7, %rd1, %rd6;
  add.u64 %rd8, %rd2, %rd6;
  add.u64 %rd9, %rd3, %rd6;
  ld.global.f32 %f1, [%rd7];
  ld.global.f32 %f2, [%rd8];
  add.rn.f32 %f3, %f1, %f2;
  st.global.f32 [%rd9], %f3;
DONE:
  ret;
}
)PTX";

// The driver API, resolved like the backend does (never linked).
struct RawDriver {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  template <class F>
  F get(const char *name) const {
    return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
  }
};

void BM_launch_overhead_vs_raw_cuda(benchmark::State &state) {
  if (!ready(state)) return;
  CudaEnv &e = CudaEnv::get();
  RawDriver d;
  auto cuDeviceGet = d.get<int (*)(int *, int)>("cuDeviceGet");
  auto cuRetain = d.get<int (*)(void **, int)>("cuDevicePrimaryCtxRetain");
  auto cuSetCurrent = d.get<int (*)(void *)>("cuCtxSetCurrent");
  auto cuLoad = d.get<int (*)(void **, const void *)>("cuModuleLoadData");
  auto cuGetFunction = d.get<int (*)(void **, void *, const char *)>("cuModuleGetFunction");
  auto cuAlloc = d.get<int (*)(unsigned long long *, size_t)>("cuMemAlloc_v2");
  auto cuFree = d.get<int (*)(unsigned long long)>("cuMemFree_v2");
  auto cuStreamCreate = d.get<int (*)(void **, unsigned)>("cuStreamCreate");
  auto cuStreamSync = d.get<int (*)(void *)>("cuStreamSynchronize");
  auto cuStreamDestroy = d.get<int (*)(void *)>("cuStreamDestroy_v2");
  auto cuLaunch = d.get<int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                                void **, void **)>("cuLaunchKernel");
  int cdev = 0;
  void *ctx = nullptr, *mod = nullptr, *fn = nullptr, *raw_stream = nullptr;
  unsigned long long m[3] = {0, 0, 0};
  if (!cuLaunch || cuDeviceGet(&cdev, 0) || cuRetain(&ctx, cdev) || cuSetCurrent(ctx) || cuLoad(&mod, kRawAddPtx) ||
      cuGetFunction(&fn, mod, "raw_add") || cuAlloc(&m[0], 4) || cuAlloc(&m[1], 4) || cuAlloc(&m[2], 4) ||
      cuStreamCreate(&raw_stream, 1)) {
    state.SkipWithError("the raw CUDA driver yardstick could not be set up");
    return;
  }
  const int kLaunches = 200;
  float one = 1.0f;
  DevTensor da(e.dev, e.stream, &one, {1}), db(e.dev, e.stream, &one, {1}), dc(e.dev, e.stream, nullptr, {1});
  must(launch_on(e.stream, PK_OP_ADD, {da.t, db.t}, {dc.t}));
  must(pk_stream_synchronize(e.stream));
  const pk_tensor ins[2] = {da.t, db.t};
  unsigned long long n = 1;
  void *params[4] = {&m[0], &m[1], &m[2], &n};
  double t_raw = 0, t_sdk = 0, t_round = 0;
  for (auto _ : state) {
    double t0 = now_s();
    for (int i = 0; i < kLaunches; ++i) cuLaunch(fn, 1, 1, 1, 256, 1, 1, 0, raw_stream, params, nullptr);
    double t1 = now_s();
    cuStreamSync(raw_stream);
    double t2 = now_s();
    for (int i = 0; i < kLaunches; ++i) must(pk_launch(e.stream, PK_OP_ADD, ins, 2, &dc.t, 1, nullptr));
    double t3 = now_s();
    must(pk_stream_synchronize(e.stream));
    double t4 = now_s();
    must(pk_launch(e.stream, PK_OP_ADD, ins, 2, &dc.t, 1, nullptr));
    must(pk_stream_synchronize(e.stream));
    t_round += now_s() - t4;
    t_raw += t1 - t0;
    t_sdk += t3 - t2;
    state.SetIterationTime(t3 - t2);
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["raw_us"] = t_raw / iters / kLaunches * 1e6;
  state.counters["sdk_us"] = t_sdk / iters / kLaunches * 1e6;
  state.counters["overhead_us"] = (t_sdk - t_raw) / iters / kLaunches * 1e6;
  state.counters["launch_sync_us"] = t_round / iters * 1e6;
  cuStreamDestroy(raw_stream);
  for (auto p : m) cuFree(p);
}

// Host-side cost of one pk_launch of a 1-element add alone (any plugin: with PRIMKIT_BENCH_CUDA_PLUGIN naming the
// cuda-emu plugin it measures the shared glue without a GPU).
void BM_launch_host_side(benchmark::State &state) {
  if (!ready(state)) return;
  CudaEnv &e = CudaEnv::get();
  float one = 1.0f;
  DevTensor da(e.dev, e.stream, &one, {1}), db(e.dev, e.stream, &one, {1}), dc(e.dev, e.stream, nullptr, {1});
  const pk_tensor ins[2] = {da.t, db.t};
  must(pk_launch(e.stream, PK_OP_ADD, ins, 2, &dc.t, 1, nullptr));
  must(pk_stream_synchronize(e.stream));
  for (auto _ : state) must(pk_launch(e.stream, PK_OP_ADD, ins, 2, &dc.t, 1, nullptr));
  must(pk_stream_synchronize(e.stream));
}

}  // namespace
}  // namespace pk::bench

using namespace pk::bench;
#define PK_PAIRED(bm) \
  BENCHMARK(bm)->UseManualTime()->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond)
PK_PAIRED(BM_add_vs_copy);
PK_PAIRED(BM_exp_vs_copy);
PK_PAIRED(BM_relu_fma_fused_vs_copy);
PK_PAIRED(BM_relu_fma_fused_vs_unfused);
PK_PAIRED(BM_sum_rows_vs_copy);
PK_PAIRED(BM_matmul_f32)->Arg(2048);
BENCHMARK(BM_launch_overhead_vs_raw_cuda)
    ->UseManualTime()
    ->Iterations(20)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_launch_host_side)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
