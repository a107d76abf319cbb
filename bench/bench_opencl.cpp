// bench_opencl.cpp — the OpenCL backend (PoCL here) against the CPU backend in the same run, and the SDK's cost
// per launch against a raw clEnqueueNDRangeKernel:
//   add / exp on 16 M f32         ratio = CPU backend time / OpenCL backend time (goals: >= 0.85, >= 0.45)
//   a 4-op chain on 16 M f32       OpenCL fused executable vs the CPU backend running the same graph
//   fft_c2c of c64 [rows, n]        n = 4096 (radix 2) and 4095 (Bluestein), ratio as above
//   launch overhead                 host-side submission of a 1-element add: pk_launch vs clSetKernelArg +
//                                   clEnqueueNDRangeKernel of the same kernel on a raw queue (overhead_us; goal <= 1
//                                   us)
//   first launch                    a fresh runtime's first add/exp/matmul/sum (compile or cache), in seconds
// Device work is always synchronized inside the timed region.
#include <CL/cl.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace pk::bench {
namespace {

constexpr size_t k16M = size_t{1} << 24;

void fail_with_last_error(const char *what) {
  pk_error_info e;
  e.struct_size = sizeof(e);
  pk_get_last_error(&e);
  std::fprintf(stderr, "bench_opencl: %s: %s\n", what, e.message);
  std::exit(1);
}

struct OclEnv {
  pk_runtime_t rt = nullptr;
  pk_backend_t cpu = nullptr, ocl = nullptr;
  pk_device_t cpu_dev = nullptr, dev = nullptr;
  pk_stream_t cpu_stream = nullptr, stream = nullptr;
  static OclEnv &get() {
    static OclEnv env = [] {
      OclEnv e;
      open(e);
      return e;
    }();
    return env;
  }
  static void open(OclEnv &e) {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    if (pk_runtime_create(&o, &e.rt) != PK_OK || pk_runtime_load_plugin(e.rt, PK_CPU_PLUGIN, &e.cpu) != PK_OK ||
        pk_runtime_load_plugin(e.rt, PK_OPENCL_PLUGIN, &e.ocl) != PK_OK) {
      fail_with_last_error("cannot load the backends");
    }
    uint32_t n = 0;
    pk_backend_device_count(e.ocl, &n);
    if (n == 0) {
      std::fprintf(stderr, "bench_opencl: no OpenCL device\n");
      std::exit(0);
    }
    must(pk_backend_device(e.cpu, 0, &e.cpu_dev));
    must(pk_backend_device(e.ocl, 0, &e.dev));
    must(pk_stream_create(e.cpu_dev, &e.cpu_stream));
    must(pk_stream_create(e.dev, &e.stream));
  }
};

// The CPU backend's elementwise kernels may be missing (they land separately): then an OpenMP loop stands in as
// the yardstick, and the counter cpu_backend says which one ran.
bool cpu_has(uint32_t op) {
  OclEnv &e = OclEnv::get();
  pk_tensor t;
  PK_STRUCT_INIT(t);
  t.dtype = f32();
  pk_tensor ins[2] = {t, t};
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = op;
  q.num_inputs = op == PK_OP_EXP ? 1 : 2;
  q.inputs = ins;
  q.num_outputs = 1;
  q.outputs = &t;
  pk_op_support s;
  PK_STRUCT_INIT(s);
  return pk_device_query_op(e.cpu_dev, &q, &s) == PK_OK && s.supported;
}

void BM_add_opencl_vs_cpu(benchmark::State &state) {
  OclEnv &e = OclEnv::get();
  HostArray a(k16M), b(k16M, 2.0f), c(k16M);
  HostTensor ha(a.p, {static_cast<int64_t>(k16M)}, f32(), k16M * 4),
      hb(b.p, {static_cast<int64_t>(k16M)}, f32(), k16M * 4), hc(c.p, {static_cast<int64_t>(k16M)}, f32(), k16M * 4);
  DevTensor da(e.dev, e.stream, a.p, {static_cast<int64_t>(k16M)}),
      db(e.dev, e.stream, b.p, {static_cast<int64_t>(k16M)}),
      dc(e.dev, e.stream, nullptr, {static_cast<int64_t>(k16M)});
  const bool cpu = cpu_has(PK_OP_ADD);
  paired(
      state, 3.0 * k16M * 4,
      [&] {
        if (cpu) {
          must(launch_on(e.cpu_stream, PK_OP_ADD, {ha.t, hb.t}, {hc.t}));
          must(pk_stream_synchronize(e.cpu_stream));
        } else {
#pragma omp parallel for schedule(static)
          for (long i = 0; i < static_cast<long>(k16M); ++i) c.p[i] = a.p[i] + b.p[i];
        }
      },
      [&] {
        must(launch_on(e.stream, PK_OP_ADD, {da.t, db.t}, {dc.t}));
        must(pk_stream_synchronize(e.stream));
      });
  state.counters["cpu_backend"] = cpu ? 1 : 0;
}

void BM_exp_opencl_vs_cpu(benchmark::State &state) {
  OclEnv &e = OclEnv::get();
  HostArray a(k16M, -3.0f), c(k16M);
  HostTensor ha(a.p, {static_cast<int64_t>(k16M)}, f32(), k16M * 4),
      hc(c.p, {static_cast<int64_t>(k16M)}, f32(), k16M * 4);
  DevTensor da(e.dev, e.stream, a.p, {static_cast<int64_t>(k16M)}),
      dc(e.dev, e.stream, nullptr, {static_cast<int64_t>(k16M)});
  const bool cpu = cpu_has(PK_OP_EXP);
  paired(
      state, 2.0 * k16M * 4,
      [&] {
        if (cpu) {
          must(launch_on(e.cpu_stream, PK_OP_EXP, {ha.t}, {hc.t}));
          must(pk_stream_synchronize(e.cpu_stream));
        } else {
#pragma omp parallel for simd schedule(static)
          for (long i = 0; i < static_cast<long>(k16M); ++i) c.p[i] = std::exp(a.p[i]);
        }
      },
      [&] {
        must(launch_on(e.stream, PK_OP_EXP, {da.t}, {dc.t}));
        must(pk_stream_synchronize(e.stream));
      });
  state.counters["cpu_backend"] = cpu ? 1 : 0;
}

// fft_c2c of c64 [rows, n] along the last axis: n = 4096 (radix-2 passes; the twiddles come from the stream's table
// cache after the first launch) and 4095 (Bluestein), the CPU backend as the yardstick.
void BM_fft_opencl_vs_cpu(benchmark::State &state) {
  OclEnv &e = OclEnv::get();
  const int64_t rows = state.range(0), n = state.range(1);
  const size_t floats = static_cast<size_t>(2 * rows * n);
  HostArray a(floats, 0.25f), c(floats);
  for (size_t i = 0; i < floats; ++i) a.p[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  const pk_dtype c64 = PK_DTYPE_C64_DESC;
  HostTensor ha(a.p, {rows, n}, c64, floats * 4), hc(c.p, {rows, n}, c64, floats * 4);
  DevTensor da(e.dev, e.stream, a.p, {rows, n}, c64, 2), dc(e.dev, e.stream, nullptr, {rows, n}, c64, 2);
  pk_attrs_fft_c2c at = PK_ATTRS_FFT_C2C_INIT;
  at.num_dims = 1;
  at.dims[0] = 1;
  paired(
      state, 2.0 * static_cast<double>(floats) * 4,
      [&] {
        must(launch_on(e.cpu_stream, PK_OP_FFT_C2C, {ha.t}, {hc.t}, &at));
        must(pk_stream_synchronize(e.cpu_stream));
      },
      [&] {
        must(launch_on(e.stream, PK_OP_FFT_C2C, {da.t}, {dc.t}, &at));
        must(pk_stream_synchronize(e.stream));
      });
}

// out = ((x * y) + x) * y - x: four elementwise nodes, one fused kernel on OpenCL.
pk_executable_t chain(pk_device_t dev, bool fuse) {
  pk_graph_t g = nullptr;
  must(pk_graph_create(&g));
  const int64_t shape[1] = {static_cast<int64_t>(k16M)};
  uint32_t x, y, v1, v2, v3, v4;
  must(pk_graph_add_input(g, f32(), 1, shape, &x));
  must(pk_graph_add_input(g, f32(), 1, shape, &y));
  uint32_t in[2] = {x, y};
  must(pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &v1, 1));
  in[0] = v1;
  in[1] = x;
  must(pk_graph_add_node(g, PK_OP_ADD, in, 2, nullptr, &v2, 1));
  in[0] = v2;
  in[1] = y;
  must(pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &v3, 1));
  in[0] = v3;
  in[1] = x;
  must(pk_graph_add_node(g, PK_OP_SUB, in, 2, nullptr, &v4, 1));
  must(pk_graph_mark_output(g, v4));
  pk_compile_options o;
  PK_STRUCT_INIT(o);
  o.disable_fusion = fuse ? 0 : 1;
  pk_executable_t exe = nullptr;
  must(pk_graph_compile(g, dev, &o, &exe));
  pk_graph_destroy(g);
  return exe;
}

void BM_fused_chain_opencl_vs_cpu(benchmark::State &state) {
  OclEnv &e = OclEnv::get();
  HostArray x(k16M), y(k16M, 0.5f), out(k16M);
  HostTensor hx(x.p, {static_cast<int64_t>(k16M)}, f32(), k16M * 4),
      hy(y.p, {static_cast<int64_t>(k16M)}, f32(), k16M * 4), ho(out.p, {static_cast<int64_t>(k16M)}, f32(), k16M * 4);
  DevTensor dx(e.dev, e.stream, x.p, {static_cast<int64_t>(k16M)}),
      dy(e.dev, e.stream, y.p, {static_cast<int64_t>(k16M)}),
      dout(e.dev, e.stream, nullptr, {static_cast<int64_t>(k16M)});
  pk_executable_t ocl_exe = chain(e.dev, true);
  HostArray scratch(k16M);  // the stand-in yardstick's intermediate, allocated (and first-touched) once
  float *t1 = scratch.p;
  const bool cpu = cpu_has(PK_OP_MUL) && cpu_has(PK_OP_ADD) && cpu_has(PK_OP_SUB);
  pk_executable_t cpu_exe = cpu ? chain(e.cpu_dev, true) : nullptr;
  uint32_t fused = 0;
  pk_executable_stats(ocl_exe, &fused, nullptr, nullptr);
  pk_tensor hin[2] = {hx.t, hy.t}, din[2] = {dx.t, dy.t};
  paired(
      state, 3.0 * k16M * 4,
      [&] {
        if (cpu) {
          must(pk_executable_run(cpu_exe, e.cpu_stream, hin, 2, &ho.t, 1));
        } else {
      // Stand-in: the same chain as four separate passes, like an unfused eager runtime.
#pragma omp parallel for schedule(static)
          for (long i = 0; i < static_cast<long>(k16M); ++i) t1[i] = x.p[i] * y.p[i];
#pragma omp parallel for schedule(static)
          for (long i = 0; i < static_cast<long>(k16M); ++i) t1[i] = t1[i] + x.p[i];
#pragma omp parallel for schedule(static)
          for (long i = 0; i < static_cast<long>(k16M); ++i) t1[i] = t1[i] * y.p[i];
#pragma omp parallel for schedule(static)
          for (long i = 0; i < static_cast<long>(k16M); ++i) out.p[i] = t1[i] - x.p[i];
        }
      },
      [&] {
        must(pk_executable_run(ocl_exe, e.stream, din, 2, &dout.t, 1));
        must(pk_stream_synchronize(e.stream));
      });
  state.counters["fused_kernels"] = fused;
  state.counters["cpu_backend"] = cpu ? 1 : 0;
  pk_executable_destroy(ocl_exe);
  if (cpu_exe) pk_executable_destroy(cpu_exe);
}

// The same add kernel the backend generates for contiguous f32 (its pk_ew_contig), on a raw context and queue.
const char *kRawAdd = R"CL(
__kernel void raw_add(__global const float *p0, const ulong o0, __global const float *p1, const ulong o1,
                      __global float *p2, const ulong o2, const ulong n) {
  const ulong i = get_global_id(0);
  if (i >= n) return;
  p2[o2 + i] = p0[o0 + i] + p1[o1 + i];
}
)CL";

void BM_launch_overhead_vs_raw_opencl(benchmark::State &state) {
  OclEnv &e = OclEnv::get();
  const int kLaunches = 200;
  float one = 1.0f;
  DevTensor da(e.dev, e.stream, &one, {1}), db(e.dev, e.stream, &one, {1}), dc(e.dev, e.stream, nullptr, {1});
  // Raw OpenCL: first platform's first device, its own context, queue and buffers.
  cl_platform_id plat = nullptr;
  cl_device_id cdev = nullptr;
  clGetPlatformIDs(1, &plat, nullptr);
  clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &cdev, nullptr);
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &cdev, nullptr, nullptr, &err);
  cl_command_queue q = clCreateCommandQueue(ctx, cdev, 0, &err);
  size_t len = std::strlen(kRawAdd);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &kRawAdd, &len, &err);
  clBuildProgram(prog, 1, &cdev, "-cl-std=CL1.2", nullptr, nullptr);
  cl_kernel k = clCreateKernel(prog, "raw_add", &err);
  cl_mem m[3];
  for (auto &x : m) x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, nullptr, &err);
  if (err != CL_SUCCESS) std::abort();
  const cl_ulong zero = 0, n = 1;
  const size_t global = 256, local = 256;
  must(launch_on(e.stream, PK_OP_ADD, {da.t, db.t}, {dc.t}));  // builds the kernel outside the timing
  must(pk_stream_synchronize(e.stream));
  // Host-side submission cost only: the device work is drained outside the timed part, so PoCL's execution (the
  // same kernel either way) does not drown the difference.
  const pk_tensor ins[2] = {da.t, db.t};
  double t_raw = 0, t_sdk = 0;
  for (auto _ : state) {
    double t0 = now_s();
    for (int i = 0; i < kLaunches; ++i) {
      clSetKernelArg(k, 0, sizeof(cl_mem), &m[0]);
      clSetKernelArg(k, 1, sizeof zero, &zero);
      clSetKernelArg(k, 2, sizeof(cl_mem), &m[1]);
      clSetKernelArg(k, 3, sizeof zero, &zero);
      clSetKernelArg(k, 4, sizeof(cl_mem), &m[2]);
      clSetKernelArg(k, 5, sizeof zero, &zero);
      clSetKernelArg(k, 6, sizeof n, &n);
      clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    }
    double t1 = now_s();
    clFinish(q);
    double t2 = now_s();
    for (int i = 0; i < kLaunches; ++i) must(pk_launch(e.stream, PK_OP_ADD, ins, 2, &dc.t, 1, nullptr));
    double t3 = now_s();
    must(pk_stream_synchronize(e.stream));
    t_raw += t1 - t0;
    t_sdk += t3 - t2;
    state.SetIterationTime(t3 - t2);
  }
  const double iters = static_cast<double>(state.iterations()) * kLaunches;
  state.counters["raw_us"] = t_raw / iters * 1e6;
  state.counters["sdk_us"] = t_sdk / iters * 1e6;
  state.counters["overhead_us"] = (t_sdk - t_raw) / iters * 1e6;
  for (auto &x : m) clReleaseMemObject(x);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
}

// A fresh runtime (so a fresh in-memory kernel cache) runs its first add, exp, matmul and sum: what a user waits
// for at first use. Run once with empty PRIMKIT_CACHE_DIR/POCL_CACHE_DIR folders (cold) and again (warm).
void BM_first_launch(benchmark::State &state) {
  for (auto _ : state) {
    OclEnv env0;
    OclEnv::open(env0);
    double dt = 0;
    {
      std::vector<float> a(64 * 64, 1.0f);
      DevTensor x(env0.dev, env0.stream, a.data(), {64, 64}), y(env0.dev, env0.stream, a.data(), {64, 64}),
          z(env0.dev, env0.stream, nullptr, {64, 64}), s(env0.dev, env0.stream, nullptr, {64});
      pk_attrs_sum at = PK_ATTRS_SUM_INIT;
      at.num_dims = 1;
      at.dims[0] = 1;
      const double t0 = now_s();
      must(launch_on(env0.stream, PK_OP_ADD, {x.t, y.t}, {z.t}));
      must(launch_on(env0.stream, PK_OP_EXP, {x.t}, {z.t}));
      must(launch_on(env0.stream, PK_OP_MATMUL, {x.t, y.t}, {z.t}));
      must(launch_on(env0.stream, PK_OP_SUM, {x.t}, {s.t}, &at));
      must(pk_stream_synchronize(env0.stream));
      dt = now_s() - t0;
    }
    state.SetIterationTime(dt);
    state.counters["first_4_ops_s"] = dt;
    pk_stream_destroy(env0.stream);
    pk_stream_destroy(env0.cpu_stream);
    pk_runtime_destroy(env0.rt);
  }
}

}  // namespace
}  // namespace pk::bench

using namespace pk::bench;
#define PK_PAIRED(bm) \
  BENCHMARK(bm)->UseManualTime()->Repetitions(7)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond)
PK_PAIRED(BM_add_opencl_vs_cpu);
PK_PAIRED(BM_exp_opencl_vs_cpu);
PK_PAIRED(BM_fused_chain_opencl_vs_cpu);
PK_PAIRED(BM_fft_opencl_vs_cpu)->Args({1, 4096})->Args({64, 4096})->Args({64, 4095});
BENCHMARK(BM_launch_overhead_vs_raw_opencl)
    ->UseManualTime()
    ->Iterations(20)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_first_launch)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
PK_BENCH_MAIN()
