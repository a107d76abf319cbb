// bench_common.hpp — the runtime and CPU backend under test, host tensors, and paired timing: every figure is
// a ratio against a yardstick measured in the same iteration, so machine noise (±20–30 % here) cancels.
#pragma once

#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "primkit/primkit.h"

namespace pk::bench {

// GNU OpenMP's idle threads spin after each parallel region (300 000 rounds by default) before they sleep; on a
// 2-core machine that takes a core from the subject timed right after an OpenMP yardstick, so 2-thread ratios
// measured the overlap, not the subject. The spin is cut to the CPU backend's own (a few thousand pauses, tens
// of microseconds): GOMP_SPINCOUNT is read when libgomp loads, so the benchmark re-executes itself with it set.
// An explicit OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment is left alone.
inline void brief_openmp_spin_or_reexec(char **argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  setenv("GOMP_SPINCOUNT", "10000", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then run with the default spin
  std::fprintf(stderr, "bench: could not re-execute with GOMP_SPINCOUNT set; OpenMP threads spin by default\n");
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The runtime with the CPU backend loaded from the build tree, one device and one stream, created once.
struct Env {
  pk_runtime_t rt = nullptr;
  pk_backend_t cpu = nullptr;
  pk_device_t dev = nullptr;
  pk_stream_t stream = nullptr;
  static Env &get() {
    static Env env;
    return env;
  }

 private:
  Env() {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    if (pk_runtime_create(&o, &rt) != PK_OK || pk_runtime_load_plugin(rt, PK_CPU_PLUGIN, &cpu) != PK_OK ||
        pk_backend_device(cpu, 0, &dev) != PK_OK || pk_stream_create(dev, &stream) != PK_OK) {
      pk_error_info e;
      e.struct_size = sizeof(e);
      pk_get_last_error(&e);
      std::fprintf(stderr, "bench: cannot open the CPU backend: %s\n", e.message);
      std::exit(1);
    }
  }
};

// 64-byte aligned host memory, first-touched (so page faults are not measured unless a benchmark wants them).
struct HostArray {
  float *p = nullptr;
  size_t n = 0;
  explicit HostArray(size_t count, float fill = 1.0f) : n(count) {
    void *mem = nullptr;
    if (posix_memalign(&mem, 64, count * sizeof(float) + 64) != 0) std::abort();
    p = static_cast<float *>(mem);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < static_cast<long>(count); ++i) p[i] = fill + 1e-3f * static_cast<float>(i % 1000);
  }
  ~HostArray() {
    std::free(p);
  }
  HostArray(const HostArray &) = delete;
  HostArray &operator=(const HostArray &) = delete;
};

// A CPU tensor descriptor over caller memory (shape kept alive by the object).
struct HostTensor {
  std::vector<int64_t> shape;
  pk_tensor t{};
  HostTensor(void *data, std::vector<int64_t> shp, pk_dtype dt, size_t bytes) : shape(std::move(shp)) {
    PK_STRUCT_INIT(t);
    t.data = data;
    t.storage_bytes = bytes;
    t.device_type = PK_DEVICE_CPU;
    t.dtype = dt;
    t.ndim = static_cast<int32_t>(shape.size());
    t.shape = shape.data();
    t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
  }
};

inline pk_dtype f32() {
  return pk_dtype PK_DTYPE_F32_DESC;
}

inline void must(pk_status st) {
  if (st != PK_OK) {
    pk_error_info e;
    e.struct_size = sizeof(e);
    pk_get_last_error(&e);
    std::fprintf(stderr, "bench: %s\n", e.message);
    std::abort();
  }
}

// One launch on the CPU backend's stream; aborts with the runtime's message on failure.
inline void launch(uint32_t op, std::initializer_list<pk_tensor> in, std::initializer_list<pk_tensor> out,
                   const void *attrs = nullptr) {
  Env &env = Env::get();
  std::vector<pk_tensor> i(in), o(out);
  must(pk_launch(env.stream, op, i.data(), static_cast<uint32_t>(i.size()), o.data(), static_cast<uint32_t>(o.size()),
                 attrs));
}

// The CPU backend's thread cap (its "cpu_set_max_threads" extension) and OpenMP's, for the yardsticks.
inline void use_threads(int n) {
  static auto set_max =
      reinterpret_cast<void (*)(int)>(pk_backend_get_proc_address(Env::get().cpu, "cpu_set_max_threads"));
  if (set_max == nullptr) {
    std::fprintf(stderr, "bench: the CPU backend lacks its cpu_set_max_threads extension\n");
    std::abort();
  }
  set_max(n);
  omp_set_num_threads(n);
}

// The thread count is every benchmark's first argument.
inline void set_threads(benchmark::State &state) {
  use_threads(static_cast<int>(state.range(0)));
}

// A device buffer with a tensor view over it.
struct DevTensor {
  pk_buffer_t buf = nullptr;
  std::vector<int64_t> shape;
  pk_tensor t{};
  // f32 elements by default; `parts` floats per element (2: c64).
  DevTensor(pk_device_t dev, pk_stream_t s, const float *init, std::vector<int64_t> shp, pk_dtype dt = f32(),
            size_t parts = 1)
      : shape(std::move(shp)) {
    size_t n = parts;
    for (int64_t x : shape) n *= static_cast<size_t>(x);
    must(pk_buffer_create(dev, n * 4, &buf));
    if (init) must(pk_copy_host_to_buffer(s, buf, 0, init, n * 4));
    must(pk_stream_synchronize(s));
    must(pk_buffer_tensor(buf, dt, static_cast<int32_t>(shape.size()), shape.data(), nullptr, 0, &t));
  }
  ~DevTensor() { pk_buffer_destroy(buf); }
  DevTensor(const DevTensor &) = delete;
  DevTensor &operator=(const DevTensor &) = delete;
};

inline pk_status launch_on(pk_stream_t s, uint32_t op, std::vector<pk_tensor> in, std::vector<pk_tensor> out,
                           const void *attrs = nullptr) {
  return pk_launch(s, op, in.data(), static_cast<uint32_t>(in.size()), out.data(), static_cast<uint32_t>(out.size()),
                   attrs);
}

// Runs the yardstick and the subject back to back in every iteration; reports subject time as the iteration
// time and counters: ratio = yardstick time / subject time (higher is better for PrimKit), plus GB/s of each
// when `bytes` is given. Use with ->Repetitions(7)->ReportAggregatesOnly(true) so the median is of 7 ratios.
// The total yardstick and subject times of such a run, for callers that report their own counters.
template <typename Yard, typename Subject>
std::pair<double, double> paired_times(benchmark::State &state, Yard &&yard, Subject &&subject) {
  double ty = 0, ts = 0;
  for (auto _ : state) {
    double t0 = now_s();
    yard();
    double t1 = now_s();
    subject();
    double t2 = now_s();
    ty += t1 - t0;
    ts += t2 - t1;
    state.SetIterationTime(t2 - t1);
  }
  return {ty, ts};
}

template <typename Yard, typename Subject>
void paired(benchmark::State &state, double bytes, Yard &&yard, Subject &&subject) {
  const auto [ty, ts] = paired_times(state, yard, subject);
  state.counters["ratio"] = ty / ts;
  if (bytes > 0) {
    double n = static_cast<double>(state.iterations());
    state.counters["subject_GBps"] = bytes * n / ts / 1e9;
    state.counters["yardstick_GBps"] = bytes * n / ty / 1e9;
  }
}

}  // namespace pk::bench

// BENCHMARK_MAIN with the OpenMP spin set first (see brief_openmp_spin_or_reexec).
#define PK_BENCH_MAIN()                                               \
  int main(int argc, char **argv) {                                   \
    pk::bench::brief_openmp_spin_or_reexec(argv);                     \
    benchmark::Initialize(&argc, argv);                               \
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1; \
    benchmark::RunSpecifiedBenchmarks();                              \
    benchmark::Shutdown();                                            \
    return 0;                                                         \
  }
