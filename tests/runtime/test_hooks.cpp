// The runtime's hooks of ABI 1.2 (pk_runtime_options): the log callback receives what the runtime would print on
// stderr, at the level it was logged and filtered by log_verbosity, and the host allocator sees every handle the
// runtime makes and gets every block back by pk_runtime_destroy. Expected lines and counts are written here by
// hand from the test plugins' sources (plugins/bad_plugins.c logs one warning and one error from open).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "primkit/primkit.h"
#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

struct LogLine {
  int32_t level;
  std::string message;
  bool operator==(const LogLine &o) const { return level == o.level && message == o.message; }
};
std::ostream &operator<<(std::ostream &os, const LogLine &l) {
  return os << "{" << l.level << ", \"" << l.message << "\"}";
}

void record_line(void *user, int32_t level, const char *message) {
  static_cast<std::vector<LogLine> *>(user)->push_back(LogLine{level, message});
}

pk_runtime_t runtime_logging_to(std::vector<LogLine> *lines, uint32_t verbosity, uint32_t flags) {
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = flags;
  o.log = record_line;
  o.log_user = lines;
  o.log_verbosity = verbosity;
  pk_runtime_t rt = nullptr;
  EXPECT_EQ(pk_runtime_create(&o, &rt), PK_OK) << last_error().message;
  return rt;
}

const std::string kBroken = plugin("primkit_backend_broken");
const LogLine kBrokenWarning{PK_LOG_WARNING, "broken: looking for the device"};
const LogLine kBrokenError{PK_LOG_ERROR, "broken: the device is missing"};

// Counts and checks every call: each free must match a live block with the size and alignment it was asked with.
struct CountingAllocator {
  std::mutex mu;
  std::map<void *, std::pair<size_t, size_t>> live;
  size_t allocations = 0, frees = 0, mismatched_frees = 0, bad_alignments = 0;
  size_t fail_after = SIZE_MAX;  // allocations that succeed before every later one returns NULL

  static void *alloc(void *user, size_t bytes, size_t alignment) {
    auto *self = static_cast<CountingAllocator *>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    if (self->allocations >= self->fail_after) return nullptr;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 64) ++self->bad_alignments;
    void *block = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    ++self->allocations;
    self->live[block] = {bytes, alignment};
    return block;
  }
  static void free(void *user, void *block, size_t bytes, size_t alignment) {
    auto *self = static_cast<CountingAllocator *>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    ++self->frees;
    auto it = self->live.find(block);
    if (it == self->live.end() || it->second != std::make_pair(bytes, alignment)) {
      ++self->mismatched_frees;
      return;
    }
    self->live.erase(it);
    std::free(block);
  }
  pk_runtime_options options() {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    o.host_alloc = alloc;
    o.host_free = free;
    o.host_alloc_user = this;
    return o;
  }
};

}  // namespace

TEST(LogHook, ReceivesThePluginsLinesOfAFailedLoadAtTheirLevels) {
  std::vector<LogLine> lines;
  pk_runtime_t rt = runtime_logging_to(&lines, 0, PK_RUNTIME_NO_DISCOVERY);  // default: errors and warnings
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(pk_runtime_load_plugin(rt, kBroken.c_str(), nullptr), PK_ERROR_DEVICE);
  const std::string on_stderr = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(lines, (std::vector<LogLine>{kBrokenWarning, kBrokenError}));
  EXPECT_EQ(on_stderr, "") << "with a callback nothing goes to stderr";
  pk_runtime_destroy(rt);
}

TEST(LogHook, VerbosityKeepsTheMoreSevereLinesOnly) {
  std::vector<LogLine> lines;
  pk_runtime_t rt = runtime_logging_to(&lines, PK_LOG_UP_TO(PK_LOG_ERROR), PK_RUNTIME_NO_DISCOVERY);
  EXPECT_EQ(pk_runtime_load_plugin(rt, kBroken.c_str(), nullptr), PK_ERROR_DEVICE);
  EXPECT_EQ(lines, (std::vector<LogLine>{kBrokenError}));
  pk_runtime_destroy(rt);
}

TEST(LogHook, WithoutACallbackLinesGoToStderrAsBefore) {
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = PK_RUNTIME_NO_DISCOVERY;
  pk_runtime_t rt = nullptr;
  ASSERT_EQ(pk_runtime_create(&o, &rt), PK_OK);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(pk_runtime_load_plugin(rt, kBroken.c_str(), nullptr), PK_ERROR_DEVICE);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "primkit [warning] broken: looking for the device\nprimkit [error] broken: the device is missing\n");
  pk_runtime_destroy(rt);
}

TEST(LogHook, PrimkitLogIsReadOnceWhenTheRuntimeIsCreated) {
  setenv("PRIMKIT_LOG", "0", 1);  // errors only
  std::vector<LogLine> lines;
  pk_runtime_t rt = runtime_logging_to(&lines, 0, PK_RUNTIME_NO_DISCOVERY);
  setenv("PRIMKIT_LOG", "3", 1);  // too late for rt; the next runtime sees it
  std::vector<LogLine> later_lines;
  pk_runtime_t later = runtime_logging_to(&later_lines, 0, PK_RUNTIME_NO_DISCOVERY);
  unsetenv("PRIMKIT_LOG");
  EXPECT_EQ(pk_runtime_load_plugin(rt, kBroken.c_str(), nullptr), PK_ERROR_DEVICE);
  EXPECT_EQ(lines, (std::vector<LogLine>{kBrokenError}));
  EXPECT_EQ(pk_runtime_load_plugin(later, kBroken.c_str(), nullptr), PK_ERROR_DEVICE);
  EXPECT_EQ(later_lines, (std::vector<LogLine>{kBrokenWarning, kBrokenError}));
  pk_runtime_destroy(rt);
  pk_runtime_destroy(later);
}

TEST(LogHook, DiscoveryReportsWhatItLoadedAndRefusedAtInfoLevel) {
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  std::vector<LogLine> lines;
  o.plugin_path = PK_TEST_PLUGIN_DIR;
  o.log = record_line;
  o.log_user = &lines;
  o.log_verbosity = PK_LOG_UP_TO(PK_LOG_INFO);
  pk_runtime_t rt = nullptr;
  ASSERT_EQ(pk_runtime_create(&o, &rt), PK_OK) << last_error().message;
  const std::string sim_path = std::string(PK_TEST_PLUGIN_DIR) + "/libprimkit_backend_sim.so";
  const LogLine loaded{PK_LOG_INFO, "discovery: loaded backend 'sim' from " + sim_path};
  bool saw_loaded = false, saw_refused = false, saw_plugin_error = false;
  for (const LogLine &l : lines) {
    saw_loaded = saw_loaded || l == loaded;
    saw_refused = saw_refused || (l.level == PK_LOG_INFO && l.message.find("discovery: ") == 0 &&
                                  l.message.find("libprimkit_backend_broken.so") != std::string::npos &&
                                  l.message.find("no such device: /dev/acme0") != std::string::npos);
    saw_plugin_error = saw_plugin_error || l == kBrokenError;
  }
  EXPECT_TRUE(saw_loaded) << ::testing::PrintToString(lines);
  EXPECT_TRUE(saw_refused) << ::testing::PrintToString(lines);
  EXPECT_TRUE(saw_plugin_error) << "the plugin's own line, logged while discovery opened it";
  pk_runtime_destroy(rt);
}

TEST(LogHook, OutOfRangeVerbosityIsRefused) {
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = PK_RUNTIME_NO_DISCOVERY;
  o.log_verbosity = PK_LOG_UP_TO(PK_LOG_DEBUG) + 1;
  pk_runtime_t rt = reinterpret_cast<pk_runtime_t>(&o);
  expect_error(pk_runtime_create(&o, &rt), PK_ERROR_INVALID_ARGUMENT, -1, {"pk_runtime_create", "log_verbosity 5"});
  EXPECT_EQ(rt, nullptr);
}

TEST(LogHook, AnOlderCallersOptionsGetTheDefaults) {
  // A 1.1 caller's struct ends before `log`: whatever follows it in memory is not read.
  struct {
    pk_runtime_options o;
  } padded;
  std::memset(&padded, 0x5a, sizeof(padded));
  padded.o.struct_size = offsetof(pk_runtime_options, log);
  padded.o.flags = PK_RUNTIME_NO_DISCOVERY;
  padded.o.plugin_path = nullptr;
  padded.o.fallback_backend = nullptr;
  pk_runtime_t rt = nullptr;
  ASSERT_EQ(pk_runtime_create(&padded.o, &rt), PK_OK) << last_error().message;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(pk_runtime_load_plugin(rt, kBroken.c_str(), nullptr), PK_ERROR_DEVICE);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("primkit [error] broken: the device is missing"),
            std::string::npos);
  pk_runtime_destroy(rt);
}

TEST(AllocatorHook, SeesEveryHandleAndGetsEveryBlockBackOnDestroy) {
  CountingAllocator counting;
  pk_runtime_options o = counting.options();
  pk_runtime_t rt = nullptr;
  ASSERT_EQ(pk_runtime_create(&o, &rt), PK_OK) << last_error().message;
  EXPECT_EQ(counting.allocations, 1u) << "the runtime object";
  pk_backend_t sim = nullptr;
  ASSERT_EQ(pk_runtime_load_plugin(rt, plugin("primkit_backend_sim").c_str(), &sim), PK_OK) << last_error().message;
  // sim has one device: the backend, its device and the device's allocator cache.
  EXPECT_EQ(counting.allocations, 4u);
  pk_device_t dev = nullptr;
  ASSERT_EQ(pk_backend_device(sim, 0, &dev), PK_OK);

  pk_buffer_t buffers[3] = {};
  for (pk_buffer_t &b : buffers) ASSERT_EQ(pk_buffer_create(dev, 256, &b), PK_OK) << last_error().message;
  EXPECT_EQ(counting.allocations, 7u) << "one handle per buffer (the bytes are the backend's)";
  pk_stream_t streams[2] = {};
  for (pk_stream_t &s : streams) ASSERT_EQ(pk_stream_create(dev, &s), PK_OK) << last_error().message;
  pk_event_t events[2] = {};
  for (pk_event_t &e : events) ASSERT_EQ(pk_event_create(dev, &e), PK_OK) << last_error().message;
  EXPECT_EQ(counting.allocations, 11u);

  pk_graph_t g = nullptr;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  const int64_t shape[] = {8};
  uint32_t x = 0, y = 0, sum = 0;
  ASSERT_EQ(pk_graph_add_input(g, f32(), 1, shape, &x), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, f32(), 1, shape, &y), PK_OK);
  const uint32_t ins[] = {x, y};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_ADD, ins, 2, nullptr, &sum, 1), PK_OK) << last_error().message;
  ASSERT_EQ(pk_graph_mark_output(g, sum), PK_OK);
  pk_executable_t exe = nullptr;
  ASSERT_EQ(pk_graph_compile(g, dev, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  EXPECT_EQ(counting.allocations, 12u) << "the executable (the graph has no runtime, so it is not counted)";

  // Some are destroyed by the caller, the rest are left for pk_runtime_destroy.
  pk_buffer_destroy(buffers[0]);
  pk_stream_destroy(streams[0]);
  pk_event_destroy(events[0]);
  EXPECT_EQ(counting.frees, 3u);
  pk_runtime_destroy(rt);
  EXPECT_EQ(counting.frees, counting.allocations);
  EXPECT_TRUE(counting.live.empty()) << counting.live.size() << " blocks never freed";
  EXPECT_EQ(counting.mismatched_frees, 0u);
  EXPECT_EQ(counting.bad_alignments, 0u);
}

TEST(AllocatorHook, AnExhaustedAllocatorFailsTheCallCleanly) {
  CountingAllocator counting;
  counting.fail_after = 4;  // the runtime, sim's backend, device and cache; then nothing
  pk_runtime_options o = counting.options();
  pk_runtime_t rt = nullptr;
  ASSERT_EQ(pk_runtime_create(&o, &rt), PK_OK);
  pk_backend_t sim = nullptr;
  ASSERT_EQ(pk_runtime_load_plugin(rt, plugin("primkit_backend_sim").c_str(), &sim), PK_OK) << last_error().message;
  pk_device_t dev = nullptr;
  ASSERT_EQ(pk_backend_device(sim, 0, &dev), PK_OK);
  pk_buffer_t b = reinterpret_cast<pk_buffer_t>(&counting);
  expect_error(pk_buffer_create(dev, 64, &b), PK_ERROR_OUT_OF_MEMORY, -1,
               {"pk_buffer_create", "host allocator", "NULL"});
  EXPECT_EQ(b, nullptr);
  pk_stream_t s = nullptr;
  expect_error(pk_stream_create(dev, &s), PK_ERROR_OUT_OF_MEMORY, -1, {"pk_stream_create", "host allocator"});
  pk_runtime_destroy(rt);
  EXPECT_TRUE(counting.live.empty());

  CountingAllocator empty;
  empty.fail_after = 0;
  o = empty.options();
  rt = reinterpret_cast<pk_runtime_t>(&empty);
  expect_error(pk_runtime_create(&o, &rt), PK_ERROR_OUT_OF_MEMORY, -1, {"pk_runtime_create", "the runtime"});
  EXPECT_EQ(rt, nullptr);
}

TEST(AllocatorHook, HalfAHookIsRefused) {
  CountingAllocator counting;
  pk_runtime_options o = counting.options();
  o.host_free = nullptr;
  pk_runtime_t rt = nullptr;
  expect_error(pk_runtime_create(&o, &rt), PK_ERROR_INVALID_ARGUMENT, -1, {"host_alloc is set but host_free is NULL"});
  EXPECT_EQ(rt, nullptr);
  EXPECT_EQ(counting.allocations, 0u);
}
