// bench_fusion.cpp — fused CPU kernels from the LLVM JIT: relu(x * y + z) on 16 M f32 through the runtime's graph
// API (one fused kernel) against the same three ops unfused into preallocated buffers (three passes over
// memory), a hand-fused loop as the upper bound, a 4-op chain fused and unfused, and the JIT's costs: compiling
// one region cold and finding it in the cache.
//
// The fused graph runs on the CPU backend when it installs the fusion hooks (cpu_fusion.cpp); until then on the
// test plugin "cpu-fusion-test" (the CPU plugin plus those hooks), which the output names.
//
// Row programs: softmax and layer_norm on [4096, 4096] f32, their decompositions built as graphs of primitives
// through the public graph API: compiled with fusion (the graph compiler offers each decomposition whole and the
// CPU backend claims it as one row kernel) against the same graph compiled with fusion disabled (one CPU kernel
// per primitive), plus the graph compile time with a cold JIT.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
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

  // ((x * y) + x) * y - x: four elementwise nodes (the OpenCL benchmark's chain).
  pk_graph_t chain4() {
    pk_graph_t g;
    pk_dtype f32 = PK_DTYPE_F32_DESC;
    uint32_t a, b, v1, v2, v3, v4;
    if (pk_graph_create(&g) != PK_OK || pk_graph_add_input(g, f32, 1, shape, &a) != PK_OK ||
        pk_graph_add_input(g, f32, 1, shape, &b) != PK_OK)
      die("graph");
    uint32_t in[2] = {a, b};
    if (pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &v1, 1) != PK_OK) die("mul");
    in[0] = v1;
    in[1] = a;
    if (pk_graph_add_node(g, PK_OP_ADD, in, 2, nullptr, &v2, 1) != PK_OK) die("add");
    in[0] = v2;
    in[1] = b;
    if (pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &v3, 1) != PK_OK) die("mul");
    in[0] = v3;
    in[1] = a;
    if (pk_graph_add_node(g, PK_OP_SUB, in, 2, nullptr, &v4, 1) != PK_OK) die("sub");
    if (pk_graph_mark_output(g, v4) != PK_OK) die("output");
    return g;
  }
  pk_executable_t fused4 = nullptr;

  uint32_t compile(const char *path) {
    if (pk_runtime_load_plugin(rt, path, &be) != PK_OK || pk_backend_device(be, 0, &dev) != PK_OK ||
        pk_stream_create(dev, &stream) != PK_OK)
      return 0;
    pk_graph_t g = graph();
    if (pk_graph_compile(g, dev, nullptr, &fused) != PK_OK) die("compile");
    pk_graph_destroy(g);
    g = chain4();
    if (pk_graph_compile(g, dev, nullptr, &fused4) != PK_OK) die("compile");
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

// The 4-op chain: one fused kernel (reads x, y, writes out: 12 B/element) against its four ops launched unfused
// through the runtime into preallocated buffers (12 B each: 48 B/element, a traffic bound of 4x).
void BM_chain4_fused_graph(benchmark::State &state) {
  Env &e = Env::get();
  pk_tensor ins[2] = {e.tx, e.ty};
  for (auto _ : state) {
    if (pk_executable_run(e.fused4, e.stream, ins, 2, &e.tout, 1) != PK_OK) die("run");
  }
  set_bytes(state, 3);
}

void BM_chain4_unfused_runtime(benchmark::State &state) {
  Env &e = Env::get();
  pk_tensor a[2] = {e.tx, e.ty}, b[2] = {e.tt1, e.tx}, c[2] = {e.tt2, e.ty}, d[2] = {e.tt1, e.tx};
  for (auto _ : state) {
    pk_launch(e.stream, PK_OP_MUL, a, 2, &e.tt1, 1, nullptr);
    pk_launch(e.stream, PK_OP_ADD, b, 2, &e.tt2, 1, nullptr);
    pk_launch(e.stream, PK_OP_MUL, c, 2, &e.tt1, 1, nullptr);
    if (pk_launch(e.stream, PK_OP_SUB, d, 2, &e.tout, 1, nullptr) != PK_OK) {
      state.SkipWithError(last_error().message);
      break;
    }
  }
  set_bytes(state, 3);
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

// --- row programs ----------------------------------------------------------------------------------------------

constexpr int64_t kRows = 4096, kCols = 4096;

// Builds a graph of primitives through the public API; every helper returns the node's output value.
struct GraphBuilder {
  pk_graph_t g = nullptr;
  GraphBuilder() {
    if (pk_graph_create(&g) != PK_OK) die("graph");
  }
  uint32_t input(int32_t ndim, const int64_t *shape) {
    uint32_t v = 0;
    if (pk_graph_add_input(g, PK_DTYPE_F32_DESC, ndim, shape, &v) != PK_OK) die("graph input");
    return v;
  }
  uint32_t op(uint32_t id, std::vector<uint32_t> in, const void *attrs = nullptr) {
    uint32_t v = 0;
    if (pk_graph_add_node(g, id, in.data(), static_cast<uint32_t>(in.size()), attrs, &v, 1) != PK_OK) die("graph node");
    return v;
  }
  // Row values [kRows] broadcast over the columns (dim 0), column values [kCols] over the rows (dim 1).
  uint32_t bcast(uint32_t v, int64_t dim) {
    pk_attrs_broadcast_in_dim a = PK_ATTRS_BROADCAST_IN_DIM_INIT;
    a.num_shape = 2;
    a.shape[0] = kRows;
    a.shape[1] = kCols;
    a.num_broadcast_dimensions = 1;
    a.broadcast_dimensions[0] = dim;
    return op(PK_OP_BROADCAST_IN_DIM, {v}, &a);
  }
  uint32_t reduce(uint32_t id, uint32_t v) {
    pk_attrs_sum a = PK_ATTRS_SUM_INIT;  // amax shares the layout
    a.num_dims = 1;
    a.dims[0] = 1;
    return op(id, {v}, &a);
  }
  uint32_t full_rows(double value) {
    pk_attrs_full a = PK_ATTRS_FULL_INIT;
    a.num_shape = 1;
    a.shape[0] = kRows;
    a.value = value;
    a.dtype = PK_DTYPE_F32;
    return op(PK_OP_FULL, {}, &a);
  }
  uint32_t to_f32(uint32_t v) {
    pk_attrs_convert_element_type a = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
    a.dtype = PK_DTYPE_F32;
    return op(PK_OP_CONVERT_ELEMENT_TYPE, {v}, &a);
  }
};

const int64_t kShape2[2] = {kRows, kCols}, kShape1[1] = {kCols};

// softmax(x) over the last axis as the op table decomposes it: amax, broadcast, sub, exp, sum, broadcast, div.
pk_graph_t softmax_graph() {
  GraphBuilder b;
  const uint32_t x = b.input(2, kShape2);
  const uint32_t e = b.op(PK_OP_EXP, {b.op(PK_OP_SUB, {x, b.bcast(b.reduce(PK_OP_AMAX, x), 0)})});
  const uint32_t out = b.op(PK_OP_DIV, {e, b.bcast(b.reduce(PK_OP_SUM, e), 0)});
  if (pk_graph_mark_output(b.g, out) != PK_OK) die("output");
  return b.g;
}

// layer_norm(x, w, b) over the last axis as the op table decomposes it (19 primitives).
pk_graph_t layer_norm_graph(double eps) {
  GraphBuilder b;
  const uint32_t x = b.input(2, kShape2), w = b.input(1, kShape1), bias = b.input(1, kShape1);
  const uint32_t xf = b.to_f32(x);
  const uint32_t mean = b.op(PK_OP_DIV, {b.reduce(PK_OP_SUM, xf), b.full_rows(static_cast<double>(kCols))});
  const uint32_t xc = b.op(PK_OP_SUB, {xf, b.bcast(mean, 0)});
  const uint32_t var =
      b.op(PK_OP_DIV, {b.reduce(PK_OP_SUM, b.op(PK_OP_MUL, {xc, xc})), b.full_rows(static_cast<double>(kCols))});
  const uint32_t rstd = b.op(PK_OP_RSQRT, {b.op(PK_OP_ADD, {var, b.full_rows(eps)})});
  const uint32_t y = b.op(PK_OP_MUL, {xc, b.bcast(rstd, 0)});
  const uint32_t wy = b.op(PK_OP_MUL, {y, b.bcast(b.to_f32(w), 1)});
  const uint32_t out = b.to_f32(b.op(PK_OP_ADD, {wy, b.bcast(b.to_f32(bias), 1)}));
  if (pk_graph_mark_output(b.g, out) != PK_OK) die("output");
  return b.g;
}

// Compiles a graph for the fusing backend's device; *ms receives the compile time (offers and JIT included).
pk_executable_t compile_graph(pk_graph_t g, bool fuse, double *ms = nullptr) {
  pk_compile_options o;
  PK_STRUCT_INIT(o);
  o.disable_fusion = fuse ? 0 : 1;
  pk_executable_t exe = nullptr;
  pk_device_t dev = Env::get().dev;  // set up outside the timed region
  const auto t0 = std::chrono::steady_clock::now();
  if (pk_graph_compile(g, dev, &o, &exe) != PK_OK) die("compile");
  if (ms) *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  pk_graph_destroy(g);
  return exe;
}

// Runs a compiled row graph on device buffers: x [kRows, kCols], then (layer_norm) weight and bias [kCols].
void run_rows(benchmark::State &state, pk_executable_t exe, bool norm, double compile_ms) {
  Env &e = Env::get();
  std::vector<pk_buffer_t> bufs;
  std::vector<pk_tensor> ins;
  const size_t nin = norm ? 3 : 1;
  for (size_t i = 0; i < nin; ++i) {
    const int64_t n = i == 0 ? kRows * kCols : kCols;
    pk_buffer_t b;
    if (pk_buffer_create(e.dev, static_cast<uint64_t>(n) * 4, &b) != PK_OK) die("buffer");
    float *p = data(b);
    for (int64_t k = 0; k < n; ++k)
      p[k] = i == 0   ? 0.001f * static_cast<float>((k * 7919) % 2001 - 1000)
             : i == 1 ? 1.0f + 0.001f * static_cast<float>(k % 17)
                      : 0.01f * static_cast<float>(k % 13);
    pk_tensor t;
    pk_buffer_tensor(b, PK_DTYPE_F32_DESC, i == 0 ? 2 : 1, i == 0 ? kShape2 : kShape1, nullptr, 0, &t);
    bufs.push_back(b);
    ins.push_back(t);
  }
  pk_buffer_t ob;
  if (pk_buffer_create(e.dev, static_cast<uint64_t>(kRows * kCols) * 4, &ob) != PK_OK) die("buffer");
  pk_tensor ot;
  pk_buffer_tensor(ob, PK_DTYPE_F32_DESC, 2, kShape2, nullptr, 0, &ot);
  for (auto _ : state) {
    if (pk_executable_run(exe, e.stream, ins.data(), static_cast<uint32_t>(ins.size()), &ot, 1) != PK_OK ||
        pk_stream_synchronize(e.stream) != PK_OK)
      die("run");
  }
  uint32_t fused = 0, single = 0;
  pk_executable_stats(exe, &fused, nullptr, &single);
  state.counters["kernels"] = fused + single;
  state.counters["fused_kernels"] = fused;
  if (compile_ms >= 0) state.counters["first_compile_ms"] = compile_ms;
  pk_executable_destroy(exe);
  for (auto b : bufs) pk_buffer_destroy(b);
  pk_buffer_destroy(ob);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kRows * kCols * 8);
}

// Fused: the graph compiler offers the whole decomposition, the CPU backend claims it as one row kernel.
// first_compile_ms is the process's first compilation of the graph (a cold JIT); later runs hit the cache.
void BM_softmax_fused(benchmark::State &s) {
  static double first_ms = -1;
  double ms = 0;
  pk_executable_t exe = compile_graph(softmax_graph(), true, &ms);
  if (first_ms < 0) first_ms = ms;
  run_rows(s, exe, false, first_ms);
}
// The same graph with fusion disabled: one CPU kernel per primitive.
void BM_softmax_decomposed(benchmark::State &s) {
  run_rows(s, compile_graph(softmax_graph(), false), false, -1);
}
void BM_layer_norm_fused(benchmark::State &s) {
  static double first_ms = -1;
  double ms = 0;
  pk_executable_t exe = compile_graph(layer_norm_graph(1e-5), true, &ms);
  if (first_ms < 0) first_ms = ms;
  run_rows(s, exe, true, first_ms);
}
void BM_layer_norm_decomposed(benchmark::State &s) {
  run_rows(s, compile_graph(layer_norm_graph(1e-5), false), true, -1);
}

// Graph compile time of layer_norm with a cold JIT (a new eps each time makes a new cache key): offer, claim,
// compile of one row program.
void BM_graph_compile_layer_norm_cold(benchmark::State &state) {
  static double eps = 1e-5;
  double total_ms = 0;
  for (auto _ : state) {
    double ms = 0;
    pk_executable_t exe = compile_graph(layer_norm_graph(eps *= 1.01), true, &ms);
    uint32_t fused = 0;
    pk_executable_stats(exe, &fused, nullptr, nullptr);
    pk_executable_destroy(exe);
    if (fused != 1) {
      state.SkipWithError("layer_norm was not fused into one kernel");
      break;
    }
    total_ms += ms;
  }
  state.counters["compile_ms"] = total_ms / static_cast<double>(state.iterations());
}

BENCHMARK(BM_softmax_fused)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(3)->ReportAggregatesOnly(true);
BENCHMARK(BM_softmax_decomposed)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_layer_norm_fused)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_layer_norm_decomposed)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_graph_compile_layer_norm_cold)->Unit(benchmark::kMillisecond)->Iterations(10);

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
BENCHMARK(BM_chain4_fused_graph)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_chain4_unfused_runtime)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_jit_compile_region_cold)->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK(BM_graph_compile_cache_hit)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_jit_cache_hit)->Unit(benchmark::kMicrosecond);

}  // namespace

PK_BENCH_MAIN()
