// Lifetimes across threads and runtimes: the backend list grows while launches read it, a remembered launch
// verdict is never reused on another runtime's device, and pk_runtime_destroy frees what the caller still holds.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

pk_runtime_t new_runtime() {
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = PK_RUNTIME_NO_DISCOVERY;
  pk_runtime_t rt = nullptr;
  EXPECT_EQ(pk_runtime_create(&o, &rt), PK_OK) << last_error().message;
  return rt;
}

// The simulated backend's counters (sim_backend.c): what the host holds now, and the bytes allocated so far.
enum { kLiveMemory, kLiveStreams, kLiveEvents, kLiveKernels, kAllocatedBytes, kCounters };
const char *const kCounterNames[kCounters] = {"allocations", "streams", "events", "fused kernels", "allocated bytes"};

// Opens the sim plugin a second time: the process then keeps it loaded (and its counters alive) after the
// runtimes that load it are destroyed.
class SimCounters {
 public:
  SimCounters() {
    lib_ = dlopen(plugin("primkit_backend_sim").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_) read_ = reinterpret_cast<void (*)(long long *)>(dlsym(lib_, "sim_live_objects"));
  }
  ~SimCounters() {
    if (lib_) dlclose(lib_);
  }
  SimCounters(const SimCounters &) = delete;
  SimCounters &operator=(const SimCounters &) = delete;
  bool ok() const { return read_ != nullptr; }
  std::vector<long long> read() const {
    std::vector<long long> v(kCounters, 0);
    read_(v.data());
    return v;
  }

 private:
  void *lib_ = nullptr;
  void (*read_)(long long *) = nullptr;
};

// Finding 1: pk_runtime_load_plugin appends to the runtime's backend list while a fallback launch on another
// thread looks up the fallback backend in it. Before the list was read under its lock, a reallocation freed
// the array under the reader (a crash, or an ASan/TSan report). The loads here grow the list through several
// reallocations while three threads launch an op the simulated device lacks, which every time consults the
// list; every launch must succeed and be counted.
void load_plugins_while_launching() {
  pk_runtime_t rt = new_runtime();
  ASSERT_NE(rt, nullptr);
  ASSERT_EQ(pk_runtime_load_plugin(rt, cpu_plugin().c_str(), nullptr), PK_OK) << last_error().message;
  pk_backend_t sim = nullptr;
  ASSERT_EQ(pk_runtime_load_plugin(rt, plugin("primkit_backend_sim").c_str(), &sim), PK_OK) << last_error().message;
  pk_device_t dev = nullptr;
  ASSERT_EQ(pk_backend_device(sim, 0, &dev), PK_OK);

  constexpr int kLaunchers = 3, kLoads = 128, kMinLaunches = 20, kN = 16;
  struct Lane {
    pk_stream_t stream = nullptr;
    std::unique_ptr<DeviceTensor> x, y;
    int launches = 0;
    pk_status first_failure = PK_OK;
    std::string message;
  };
  std::vector<Lane> lanes(kLaunchers);
  float hx[kN];
  for (int i = 0; i < kN; ++i) hx[i] = 0.25f * static_cast<float>(i - 8);
  for (Lane &l : lanes) {
    ASSERT_EQ(pk_stream_create(dev, &l.stream), PK_OK) << last_error().message;
    l.x = std::make_unique<DeviceTensor>(dev, f32(), std::vector<int64_t>{kN});
    l.y = std::make_unique<DeviceTensor>(dev, f32(), std::vector<int64_t>{kN});
    l.x->upload(l.stream, hx, sizeof hx);
  }
  std::atomic<bool> loading_done{false};
  pk_status load_failure = PK_OK;
  std::string load_message;
  std::vector<std::thread> threads;
  for (Lane &l : lanes) {
    threads.emplace_back([&l, &loading_done] {
      // At least kMinLaunches, and on until the loader is done, so that launches overlap every load.
      while (l.launches < kMinLaunches || !loading_done.load()) {
        pk_status st = pk_launch(l.stream, PK_OP_EXP, &l.x->t, 1, &l.y->t, 1, nullptr);
        if (st != PK_OK) {
          l.first_failure = st;
          l.message = last_error().message;
          return;
        }
        ++l.launches;
      }
    });
  }
  threads.emplace_back([&] {
    const std::string path = plugin("primkit_test_numbered");
    for (int i = 0; i < kLoads; ++i) {
      pk_status st = pk_runtime_load_plugin(rt, path.c_str(), nullptr);
      if (st != PK_OK) {
        load_failure = st;
        load_message = last_error().message;
        break;
      }
    }
    loading_done = true;
  });
  for (auto &t : threads) t.join();

  EXPECT_EQ(load_failure, PK_OK) << load_message;
  uint32_t count = 0;
  ASSERT_EQ(pk_runtime_backend_count(rt, &count), PK_OK);
  EXPECT_EQ(count, 2u + kLoads);
  uint64_t total = 0;
  for (Lane &l : lanes) {
    EXPECT_EQ(l.first_failure, PK_OK) << l.message;
    EXPECT_GE(l.launches, kMinLaunches);
    total += static_cast<uint64_t>(l.launches);
    auto y = l.y->download<float>(l.stream, kN);
    for (int i = 0; i < kN; ++i) {
      EXPECT_LE(ulp_distance(y[i], static_cast<float>(std::exp(static_cast<double>(hx[i])))), 3) << i;
    }
  }
  uint64_t fallbacks = 0;
  ASSERT_EQ(pk_runtime_fallback_count(rt, PK_OP_EXP, &fallbacks, nullptr), PK_OK);
  EXPECT_EQ(fallbacks, total) << "every launch went through the fallback backend";
  for (Lane &l : lanes) {
    l.x.reset();
    l.y.reset();
    pk_stream_destroy(l.stream);
  }
  pk_runtime_destroy(rt);
}

TEST(RuntimeThreads, LoadingPluginsWhileFallbackLaunchesReadTheBackendList) {
  // A race shows only sometimes: several rounds, each through several reallocations of the list.
  for (int round = 0; round < 6 && !HasFailure(); ++round) load_plugins_while_launching();
}

// Finding 2: the launch memo remembered the device by its address. Once a runtime is destroyed, a new
// runtime's device is often allocated at the same address, and a launch of the same bytes was then accepted
// without validation. Here the remembered launch is valid on the CPU device, and the same bytes on the
// simulated device are not (its tensors claim to be on the CPU): every round must refuse them.
TEST(RuntimeLifetime, ALaunchVerdictIsNeverReusedOnANewRuntimesDevice) {
  std::vector<int64_t> shape{4};
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, o[4] = {0, 0, 0, 0};
  auto host = [&](float *p) { return host_bytes(p, sizeof a, shape); };
  pk_tensor in[2] = {host(a), host(b)};
  pk_tensor out = host(o);
  int reused = 0;
  for (int round = 0; round < 8; ++round) {
    pk_runtime_t first = new_runtime();
    pk_backend_t cpu = nullptr;
    ASSERT_EQ(pk_runtime_load_plugin(first, cpu_plugin().c_str(), &cpu), PK_OK) << last_error().message;
    pk_device_t cpu_dev = nullptr;
    ASSERT_EQ(pk_backend_device(cpu, 0, &cpu_dev), PK_OK);
    pk_stream_t s = nullptr;
    ASSERT_EQ(pk_stream_create(cpu_dev, &s), PK_OK);
    ASSERT_EQ(pk_launch(s, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_OK) << last_error().message;
    ASSERT_EQ(pk_stream_synchronize(s), PK_OK);
    EXPECT_EQ(o[3], 44.0f);
    const auto old_address = reinterpret_cast<uintptr_t>(cpu_dev);
    pk_stream_destroy(s);
    pk_runtime_destroy(first);

    pk_runtime_t second = new_runtime();
    pk_backend_t sim = nullptr;
    ASSERT_EQ(pk_runtime_load_plugin(second, plugin("primkit_backend_sim").c_str(), &sim), PK_OK)
        << last_error().message;
    pk_device_t sim_dev = nullptr;
    ASSERT_EQ(pk_backend_device(sim, 0, &sim_dev), PK_OK);
    if (reinterpret_cast<uintptr_t>(sim_dev) == old_address) ++reused;
    pk_stream_t t = nullptr;
    ASSERT_EQ(pk_stream_create(sim_dev, &t), PK_OK);
    o[3] = -1.0f;
    EXPECT_EQ(pk_launch(t, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_ERROR_INVALID_ARGUMENT) << "round " << round;
    EXPECT_NE(std::string(last_error().message).find("device"), std::string::npos) << last_error().message;
    EXPECT_EQ(o[3], -1.0f) << "a refused launch writes nothing";
    pk_stream_destroy(t);
    pk_runtime_destroy(second);
  }
  // Not asserted (an allocator with a quarantine, as under ASan, never reuses the address), but reported: the
  // test exercises the finding only where the address came back.
  RecordProperty("rounds_with_a_reused_device_address", reused);
}

// Finding 3: primkit.h promises that pk_runtime_destroy frees every stream, event, buffer and executable of
// the runtime; buffers, events and executables (their fused kernels) used to leak. The simulated backend
// counts what is live.
TEST(RuntimeLifetime, DestroyFreesTheBuffersEventsStreamsAndExecutablesStillAlive) {
  SimCounters counters;
  ASSERT_TRUE(counters.ok()) << dlerror();
  const std::vector<long long> before = counters.read();

  pk_runtime_t rt = new_runtime();
  pk_backend_t sim = nullptr;
  ASSERT_EQ(pk_runtime_load_plugin(rt, plugin("primkit_backend_sim").c_str(), &sim), PK_OK) << last_error().message;
  pk_device_t dev = nullptr;
  ASSERT_EQ(pk_backend_device(sim, 0, &dev), PK_OK);
  pk_buffer_t buffers[3];
  for (pk_buffer_t &b : buffers) ASSERT_EQ(pk_buffer_create(dev, 1024, &b), PK_OK) << last_error().message;
  pk_event_t events[2];
  for (pk_event_t &e : events) ASSERT_EQ(pk_event_create(dev, &e), PK_OK) << last_error().message;
  pk_stream_t streams[2];
  for (pk_stream_t &s : streams) ASSERT_EQ(pk_stream_create(dev, &s), PK_OK) << last_error().message;
  ASSERT_EQ(pk_event_record(events[0], streams[0]), PK_OK);
  // (x + y) * x: the simulated backend fuses the chain into one kernel.
  pk_graph_t g = nullptr;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  const int64_t shape[1] = {8};
  uint32_t x = 0, y = 0, sum = 0, prod = 0;
  ASSERT_EQ(pk_graph_add_input(g, f32(), 1, shape, &x), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, f32(), 1, shape, &y), PK_OK);
  const uint32_t add_in[2] = {x, y};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_ADD, add_in, 2, nullptr, &sum, 1), PK_OK) << last_error().message;
  const uint32_t mul_in[2] = {sum, x};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, mul_in, 2, nullptr, &prod, 1), PK_OK) << last_error().message;
  ASSERT_EQ(pk_graph_mark_output(g, prod), PK_OK);
  pk_executable_t exe = nullptr;
  ASSERT_EQ(pk_graph_compile(g, dev, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fused = 0;
  ASSERT_EQ(pk_executable_stats(exe, &fused, nullptr, nullptr), PK_OK);
  ASSERT_EQ(fused, 1u);

  const std::vector<long long> held = counters.read();
  EXPECT_GE(held[kLiveMemory] - before[kLiveMemory], 3);
  EXPECT_EQ(held[kLiveStreams] - before[kLiveStreams], 2);
  EXPECT_EQ(held[kLiveEvents] - before[kLiveEvents], 2);
  EXPECT_EQ(held[kLiveKernels] - before[kLiveKernels], 1);

  pk_runtime_destroy(rt);  // the caller destroys none of the objects above itself
  const std::vector<long long> after = counters.read();
  for (int i = kLiveMemory; i <= kLiveKernels; ++i) {
    EXPECT_EQ(after[i], before[i]) << "live " << kCounterNames[i] << " after pk_runtime_destroy";
  }
}

}  // namespace
