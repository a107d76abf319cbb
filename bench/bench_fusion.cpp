// bench_fusion.cpp — fused CPU kernels from the LLVM JIT: relu(x * y + z) on 16 M f32 through the runtime's graph
// API (one fused kernel) against the same three ops unfused into preallocated buffers (three passes over
// memory), a hand-fused loop as the upper bound, and the JIT's costs: compiling one region cold and finding it
// in the cache.
//
// The fused graph runs on the CPU backend when it installs the fusion hooks (cpu_fusion.cpp); until then on the
// test plugin "cpu-fusion-test" (the CPU plugin plus those hooks), which the output names.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "primkit/codegen.hpp"
#include "primkit/primkit.h"

namespace {

constexpr int64_t kN = int64_t{16} << 20;

pk_error_info last_error() {
  pk_error_info e;
  e.struct_size = sizeof e;
  pk_get_last_error(&e);
  return e;
}

void die(const char *what) {
  std::fprintf(stderr, "bench_fusion: %s: %s\n", what, last_error().message);
  std::exit(1);
}

struct Env {
  pk_runtime_t rt = nullptr;
  pk_backend_t be = nullptr;
  pk_device_t dev = nullptr;
  pk_stream_t stream = nullptr;
  std::string backend;
  pk_buffer_t x = nullptr, y = nullptr, z = nullptr, t1 = nullptr, t2 = nullptr, out = nullptr;
  pk_tensor tx{}, ty{}, tz{}, tt1{}, tt2{}, tout{}, tzero{};
  int64_t shape[1] = {kN};
  int64_t zero_stride[1] = {0};
  pk_buffer_t zero = nullptr;
  pk_executable_t fused = nullptr;

  static Env &get() {
    static Env e;
    return e;
  }

  // relu(x * y + z) as a graph.
  pk_graph_t graph() {
    pk_graph_t g;
    pk_dtype f32 = PK_DTYPE_F32_DESC;
    uint32_t a, b, c, ab, s, r;
    if (pk_graph_create(&g) != PK_OK || pk_graph_add_input(g, f32, 1, shape, &a) != PK_OK ||
        pk_graph_add_input(g, f32, 1, shape, &b) != PK_OK || pk_graph_add_input(g, f32, 1, shape, &c) != PK_OK)
      die("graph");
    uint32_t in1[2] = {a, b};
    if (pk_graph_add_node(g, PK_OP_MUL, in1, 2, nullptr, &ab, 1) != PK_OK) die("mul");
    uint32_t in2[2] = {ab, c};
    if (pk_graph_add_node(g, PK_OP_ADD, in2, 2, nullptr, &s, 1) != PK_OK) die("add");
    if (pk_graph_add_node(g, PK_OP_RELU, &s, 1, nullptr, &r, 1) != PK_OK) die("relu");
    if (pk_graph_mark_output(g, r) != PK_OK) die("output");
    return g;
  }

  uint32_t compile(const char *path) {
    if (pk_runtime_load_plugin(rt, path, &be) != PK_OK || pk_backend_device(be, 0, &dev) != PK_OK ||
        pk_stream_create(dev, &stream) != PK_OK)
      return 0;
    pk_graph_t g = graph();
    if (pk_graph_compile(g, dev, nullptr, &fused) != PK_OK) die("compile");
    pk_graph_destroy(g);
    uint32_t kernels = 0;
    pk_executable_stats(fused, &kernels, nullptr, nullptr);
    return kernels;
  }

 private:
  Env() {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    if (pk_runtime_create(&o, &rt) != PK_OK) die("runtime");
    backend = "cpu";
    if (compile(PK_CPU_PLUGIN) == 0) {
      // The CPU backend does not fuse yet: the test plugin with the hooks installed.
      pk_executable_destroy(fused);
      pk_stream_destroy(stream);
      backend = "cpu-fusion-test";
      if (compile(PK_CPU_FUSION_SHIM) == 0) die("no fused kernel from the CPU fusion hooks");
    }
    const uint64_t bytes = static_cast<uint64_t>(kN) * 4;
    pk_dtype f32 = PK_DTYPE_F32_DESC;
    for (auto [buf, t] : {std::pair{&x, &tx}, {&y, &ty}, {&z, &tz}, {&t1, &tt1}, {&t2, &tt2}, {&out, &tout}}) {
      if (pk_buffer_create(dev, bytes, buf) != PK_OK) die("buffer");
      pk_buffer_tensor(*buf, f32, 1, shape, nullptr, 0, t);
      float *p = static_cast<float *>(pk_buffer_data(*buf));
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < kN; ++i) p[i] = 0.001f * static_cast<float>((i * 7919) % 2001 - 1000);
    }
    if (pk_buffer_create(dev, 4, &zero) != PK_OK) die("buffer");
    *static_cast<float *>(pk_buffer_data(zero)) = 0.0f;
    pk_buffer_tensor(zero, f32, 1, shape, zero_stride, 0, &tzero);  // a broadcast 0 for maximum(x, 0)
    std::printf("fused graph runs on backend '%s'\n", backend.c_str());
  }
};

float *data(pk_buffer_t b) {
  return static_cast<float *>(pk_buffer_data(b));
}

void set_bytes(benchmark::State &state, int arrays) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kN * 4 * arrays);
}

// One fused kernel: reads x, y, z once, writes out once (16 B/element).
void BM_relu_fma_fused_graph(benchmark::State &state) {
  Env &e = Env::get();
  pk_tensor ins[3] = {e.tx, e.ty, e.tz};
  for (auto _ : state) {
    if (pk_executable_run(e.fused, e.stream, ins, 3, &e.tout, 1) != PK_OK) die("run");
  }
  set_bytes(state, 4);
}

// The same ops unfused into preallocated buffers, each op its own pass (2 threads like the backend):
// t1 = x*y, t2 = t1+z, out = max(t2, 0) — 40 B/element of traffic.
void BM_relu_fma_unfused_loops(benchmark::State &state) {
  Env &e = Env::get();
  float *x = data(e.x), *y = data(e.y), *z = data(e.z), *t1 = data(e.t1), *t2 = data(e.t2), *o = data(e.out);
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < kN; ++i) t1[i] = x[i] * y[i];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < kN; ++i) t2[i] = t1[i] + z[i];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < kN; ++i) o[i] = t2[i] > 0.0f || std::isnan(t2[i]) ? t2[i] : 0.0f;
    benchmark::ClobberMemory();
  }
  set_bytes(state, 4);
}

// The same ops unfused through the runtime (pk_launch of the CPU backend's own kernels), when it has them.
void BM_relu_fma_unfused_runtime(benchmark::State &state) {
  Env &e = Env::get();
  pk_backend_t cpu = nullptr;
  if (pk_runtime_find_backend(e.rt, "cpu", &cpu) != PK_OK &&
      pk_runtime_load_plugin(e.rt, PK_CPU_PLUGIN, &cpu) != PK_OK) {
    state.SkipWithError("no cpu backend");
    return;
  }
  pk_device_t dev;
  pk_stream_t s;
  pk_backend_device(cpu, 0, &dev);
  pk_stream_create(dev, &s);
  pk_tensor a[2] = {e.tx, e.ty}, b[2] = {e.tt1, e.tz}, c[2] = {e.tt2, e.tzero};
  if (pk_launch(s, PK_OP_MUL, a, 2, &e.tt1, 1, nullptr) != PK_OK) {
    state.SkipWithError((std::string("the CPU backend cannot run mul yet: ") + last_error().message).c_str());
    pk_stream_destroy(s);
    return;
  }
  for (auto _ : state) {
    pk_launch(s, PK_OP_MUL, a, 2, &e.tt1, 1, nullptr);
    pk_launch(s, PK_OP_ADD, b, 2, &e.tt2, 1, nullptr);
    if (pk_launch(s, PK_OP_MAXIMUM, c, 2, &e.tout, 1, nullptr) != PK_OK) {
      state.SkipWithError(last_error().message);
      break;
    }
  }
  pk_stream_destroy(s);
  set_bytes(state, 4);
}

// Hand-fused loop: the bound a fused kernel can reach.
void BM_relu_fma_hand_fused(benchmark::State &state) {
  Env &e = Env::get();
  float *x = data(e.x), *y = data(e.y), *z = data(e.z), *o = data(e.out);
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < kN; ++i) {
      float v = x[i] * y[i] + z[i];
      o[i] = v > 0.0f || std::isnan(v) ? v : 0.0f;
    }
    benchmark::ClobberMemory();
  }
  set_bytes(state, 4);
}

// JIT compile time of one region (cold: a fill value never seen before makes a new cache key each time).
void BM_jit_compile_region_cold(benchmark::State &state) {
  static double next = 1.0;
  double total_ms = 0;
  for (auto _ : state) {
    pk::codegen::Region r;
    r.dtypes = {PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32};
    r.inputs = {0, 1, 2};
    r.nodes = {pk::codegen::Node{PK_OP_MUL, {0, 1}, 3, 0, 0}, pk::codegen::Node{PK_OP_ADD, {3, 2}, 4, 0, 0},
               pk::codegen::Node{PK_OP_FILL, {4}, 5, next, 0}, pk::codegen::Node{PK_OP_MAXIMUM, {4, 5}, 6, 0, 0}};
    r.outputs = {6};
    next += 1.0;
    std::string err;
    double ms = 0;
    if (!pk::codegen::jit_compile(pk::codegen::KernelSpec{r, 0}, pk::codegen::HostMode::cpu, err, &ms)) {
      state.SkipWithError(err.c_str());
      break;
    }
    total_ms += ms;
  }
  state.counters["compile_ms"] = total_ms / static_cast<double>(state.iterations());
}

// Cache hit at the API level: compiling the same relu(x*y+z) graph again (offer, claim, cached kernel).
void BM_graph_compile_cache_hit(benchmark::State &state) {
  Env &e = Env::get();
  for (auto _ : state) {
    pk_graph_t g = e.graph();
    pk_executable_t exe;
    if (pk_graph_compile(g, e.dev, nullptr, &exe) != PK_OK) die("compile");
    pk_graph_destroy(g);
    pk_executable_destroy(exe);
  }
}

// Cache hit inside the generator alone: key + lookup.
void BM_jit_cache_hit(benchmark::State &state) {
  pk::codegen::Region r;
  r.dtypes = {PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32};
  r.inputs = {0, 1};
  r.nodes = {pk::codegen::Node{PK_OP_ADD, {0, 1}, 2, 0, 0}};
  r.outputs = {2};
  pk::codegen::KernelSpec spec{r, 0};
  std::string err;
  pk::codegen::jit_compile(spec, pk::codegen::HostMode::cpu, err);
  for (auto _ : state) benchmark::DoNotOptimize(pk::codegen::jit_compile(spec, pk::codegen::HostMode::cpu, err));
}

BENCHMARK(BM_relu_fma_fused_graph)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_relu_fma_unfused_loops)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_relu_fma_unfused_runtime)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_relu_fma_hand_fused)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_jit_compile_region_cold)->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK(BM_graph_compile_cache_hit)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_jit_cache_hit)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
