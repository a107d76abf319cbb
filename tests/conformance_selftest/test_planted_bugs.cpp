// test_planted_bugs.cpp — each planted-bug backend (conformance/selftest) really carries its defect, and only
// it: the same launch runs on the clean CPU backend and on the planted one through the runtime (strict mode, no
// discovery), and both results are checked against values computed here by hand. The conformance suite's own
// selftest (check_selftest.py) then shows the suite catches each defect; this file makes sure that a green
// selftest cannot come from a planted bug that plants nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "primkit/primkit.h"

namespace {

std::string bug_plugin(const std::string &bug) {
  return std::string(PK_PLANTED_BUG_DIR) + "/libprimkit_backend_bug_" + bug + ".so";
}
const std::string kCpuPlugin = PK_CPU_PLUGIN;

std::string last_message() {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  return e.message;
}

constexpr pk_dtype kF32 = PK_DTYPE_F32_DESC;
constexpr pk_dtype kF16 = PK_DTYPE_F16_DESC;
constexpr pk_dtype kBF16 = PK_DTYPE_BF16_DESC;
constexpr pk_dtype kI8 = PK_DTYPE_I8_DESC;

// One tensor of a launch on the device: its buffer and a descriptor whose shape/strides live here.
class DeviceTensor {
 public:
  DeviceTensor(pk_device_t dev, pk_dtype dtype, std::vector<int64_t> shape, uint64_t storage_bytes,
               std::vector<int64_t> strides = {}, uint64_t byte_offset = 0)
      : shape_(std::move(shape)), strides_(std::move(strides)) {
    EXPECT_EQ(pk_buffer_create(dev, storage_bytes ? storage_bytes : 1, &buffer_), PK_OK) << last_message();
    EXPECT_EQ(pk_buffer_tensor(buffer_, dtype, static_cast<int32_t>(shape_.size()), shape_.data(),
                               strides_.empty() ? nullptr : strides_.data(), byte_offset, &t_),
              PK_OK)
        << last_message();
  }
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  ~DeviceTensor() { pk_buffer_destroy(buffer_); }

  const pk_tensor &tensor() const { return t_; }
  pk_buffer_t buffer() const { return buffer_; }

 private:
  pk_buffer_t buffer_ = nullptr;
  std::vector<int64_t> shape_, strides_;
  pk_tensor t_{};
};

// A runtime holding exactly one backend (the clean CPU or a planted bug), strict: nothing may fall back, so a
// result always comes from the backend under test.
class Session {
 public:
  explicit Session(const std::string &plugin) {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_STRICT | PK_RUNTIME_NO_DISCOVERY;
    ok_ = pk_runtime_create(&o, &rt_) == PK_OK && pk_runtime_load_plugin(rt_, plugin.c_str(), &backend_) == PK_OK &&
          pk_backend_device(backend_, 0, &dev_) == PK_OK && pk_stream_create(dev_, &stream_) == PK_OK;
    if (!ok_) error_ = plugin + ": " + last_message();
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  ~Session() {
    pk_stream_destroy(stream_);
    pk_runtime_destroy(rt_);
  }

  bool ok() const { return ok_; }
  const std::string &error() const { return error_; }
  pk_device_t device() const { return dev_; }
  pk_stream_t stream() const { return stream_; }
  pk_backend_t backend() const { return backend_; }

  std::unique_ptr<DeviceTensor> upload(pk_dtype dtype, std::vector<int64_t> shape, const void *bytes,
                                       uint64_t storage_bytes, std::vector<int64_t> strides = {},
                                       uint64_t byte_offset = 0) {
    auto t =
        std::make_unique<DeviceTensor>(dev_, dtype, std::move(shape), storage_bytes, std::move(strides), byte_offset);
    if (storage_bytes) {
      EXPECT_EQ(pk_copy_host_to_buffer(stream_, t->buffer(), 0, bytes, storage_bytes), PK_OK) << last_message();
    }
    return t;
  }

  template <class T>
  std::vector<T> download(const DeviceTensor &t, size_t count) {
    std::vector<T> out(count);
    if (count == 0) return out;
    EXPECT_EQ(pk_copy_buffer_to_host(stream_, out.data(), t.buffer(), 0, count * sizeof(T)), PK_OK) << last_message();
    EXPECT_EQ(pk_stream_synchronize(stream_), PK_OK) << last_message();
    return out;
  }

 private:
  pk_runtime_t rt_ = nullptr;
  pk_backend_t backend_ = nullptr;
  pk_device_t dev_ = nullptr;
  pk_stream_t stream_ = nullptr;
  bool ok_ = false;
  std::string error_;
};

// Runs one op with contiguous host inputs (or one strided/offset input described by `layout`) and returns the
// output's elements; `launched` is false when the backend does not run the op (the CPU kernel has not landed).
struct Layout {
  std::vector<int64_t> strides;  // empty = row-major
  uint64_t byte_offset = 0;
};

template <class TOut, class TIn>
std::vector<TOut> run_op(const std::string &plugin, uint32_t op_id, pk_dtype in_dtype,
                         const std::vector<std::vector<TIn>> &in_storage, std::vector<int64_t> in_shape,
                         pk_dtype out_dtype, std::vector<int64_t> out_shape, const void *attrs, bool *launched,
                         const Layout &layout = {}) {
  Session s(plugin);
  EXPECT_TRUE(s.ok()) << s.error();
  if (!s.ok()) return {};
  std::vector<std::unique_ptr<DeviceTensor>> ins;
  std::vector<pk_tensor> descs;
  for (const auto &storage : in_storage) {
    ins.push_back(
        s.upload(in_dtype, in_shape, storage.data(), storage.size() * sizeof(TIn), layout.strides, layout.byte_offset));
    descs.push_back(ins.back()->tensor());
  }
  int64_t n = 1;
  for (int64_t e : out_shape) n *= e;
  DeviceTensor out(s.device(), out_dtype, out_shape, static_cast<uint64_t>(n) * sizeof(TOut));
  const pk_status st =
      pk_launch(s.stream(), op_id, descs.data(), static_cast<uint32_t>(descs.size()), &out.tensor(), 1, attrs);
  *launched = st == PK_OK;
  if (st != PK_OK) {
    // Strict mode: an op the CPU lacks is refused up front; anything else is a real failure.
    EXPECT_TRUE(st == PK_ERROR_FALLBACK_FORBIDDEN || st == PK_UNIMPLEMENTED)
        << pk_status_name(st) << ": " << last_message();
    return {};
  }
  return s.download<TOut>(out, static_cast<size_t>(n));
}

#define SKIP_IF_CPU_LACKS(launched, op) \
  if (!(launched)) GTEST_SKIP() << "the CPU backend has no " op " kernel for this dtype yet"

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// Signed distance in representable f32 values from a to b (both finite and of one sign here).
int64_t ulps_between(float a, float b) {
  return static_cast<int64_t>(bits_of(b)) - static_cast<int64_t>(bits_of(a));
}

std::vector<std::string> planted_bugs() {
  std::vector<std::string> names;
  std::stringstream in(PK_PLANTED_BUGS);
  for (std::string n; std::getline(in, n, ',');) names.push_back(n);
  return names;
}

// --- identity -------------------------------------------------------------------------------------------------

TEST(PlantedBugs, EachLoadsAsItsOwnBackend) {
  const std::vector<std::string> bugs = planted_bugs();
  EXPECT_GE(bugs.size(), 28u);
  for (const std::string &bug : bugs) {
    Session s(bug_plugin(bug));
    ASSERT_TRUE(s.ok()) << s.error();
    pk_backend_info info;
    PK_STRUCT_INIT(info);
    ASSERT_EQ(pk_backend_get_info(s.backend(), &info), PK_OK) << last_message();
    EXPECT_EQ(std::string(info.name), "bug_" + bug);
    EXPECT_EQ(pk_backend_abi_version(s.backend()), static_cast<uint32_t>(PK_ABI_VERSION));
  }
}

// --- numeric defects ----------------------------------------------------------------------------------------

void check_exp_shift(const std::string &bug, int64_t shift) {
  const std::vector<float> x = {-1.0f, 0.5f, 1.0f, 2.5f, 10.0f};
  const std::vector<int64_t> shape = {5};
  bool launched = false;
  const auto clean = run_op<float, float>(kCpuPlugin, PK_OP_EXP, kF32, {x}, shape, kF32, shape, nullptr, &launched);
  SKIP_IF_CPU_LACKS(launched, "exp");
  const auto buggy =
      run_op<float, float>(bug_plugin(bug), PK_OP_EXP, kF32, {x}, shape, kF32, shape, nullptr, &launched);
  ASSERT_TRUE(launched);
  for (size_t i = 0; i < x.size(); ++i) {
    const float exact = static_cast<float>(std::exp(static_cast<double>(x[i])));
    EXPECT_LE(std::llabs(ulps_between(exact, clean[i])), 1) << "clean exp(" << x[i] << ")";
    EXPECT_EQ(ulps_between(clean[i], buggy[i]), shift) << bug << " exp(" << x[i] << ")";
  }
}

TEST(PlantedBugs, ExpTwoUlp) {
  check_exp_shift("exp_2ulp", 2);
}
TEST(PlantedBugs, ExpFourUlp) {
  check_exp_shift("exp_4ulp", 4);
}

TEST(PlantedBugs, Bf16ConversionTruncates) {
  // Above a tie, a tie to odd, a tie to even, below a tie: round-to-nearest-even vs truncation differ on the first
  // three.
  const std::vector<uint32_t> bits = {0x3F80C000u, 0x3F818000u, 0x3F808000u, 0x40490FDBu};
  std::vector<float> x;
  for (uint32_t b : bits) x.push_back(float_of(b));
  const std::vector<int64_t> shape = {4};
  pk_attrs_convert_element_type attrs = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  attrs.dtype = PK_DTYPE_BF16;
  bool launched = false;
  const auto clean = run_op<uint16_t, float>(kCpuPlugin, PK_OP_CONVERT_ELEMENT_TYPE, kF32, {x}, shape, kBF16, shape,
                                             &attrs, &launched);
  SKIP_IF_CPU_LACKS(launched, "convert_element_type");
  const auto buggy = run_op<uint16_t, float>(bug_plugin("bf16_truncate"), PK_OP_CONVERT_ELEMENT_TYPE, kF32, {x}, shape,
                                             kBF16, shape, &attrs, &launched);
  ASSERT_TRUE(launched);
  const std::vector<uint16_t> nearest_even = {0x3F81, 0x3F82, 0x3F80, 0x4049};
  const std::vector<uint16_t> truncated = {0x3F80, 0x3F81, 0x3F80, 0x4049};
  EXPECT_EQ(clean, nearest_even);
  EXPECT_EQ(buggy, truncated);
}

TEST(PlantedBugs, MaximumDropsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a = {nan, 1.0f, nan, 3.0f}, b = {2.0f, nan, nan, 1.0f};
  const std::vector<int64_t> shape = {4};
  bool launched = false;
  const auto clean =
      run_op<float, float>(kCpuPlugin, PK_OP_MAXIMUM, kF32, {a, b}, shape, kF32, shape, nullptr, &launched);
  SKIP_IF_CPU_LACKS(launched, "maximum");
  const auto buggy = run_op<float, float>(bug_plugin("maximum_nan"), PK_OP_MAXIMUM, kF32, {a, b}, shape, kF32, shape,
                                          nullptr, &launched);
  ASSERT_TRUE(launched);
  EXPECT_TRUE(std::isnan(clean[0]) && std::isnan(clean[1]) && std::isnan(clean[2]));
  EXPECT_EQ(clean[3], 3.0f);
  EXPECT_EQ(buggy[0], 2.0f);
  EXPECT_EQ(buggy[1], 1.0f);
  EXPECT_TRUE(std::isnan(buggy[2]));
  EXPECT_EQ(buggy[3], 3.0f);
}

TEST(PlantedBugs, IntegerAddSaturates) {
  const std::vector<int8_t> a = {100, -100, 1}, b = {100, -100, 2};
  const std::vector<int64_t> shape = {3};
  bool launched = false;
  const auto clean = run_op<int8_t, int8_t>(kCpuPlugin, PK_OP_ADD, kI8, {a, b}, shape, kI8, shape, nullptr, &launched);
  SKIP_IF_CPU_LACKS(launched, "add");
  const auto buggy =
      run_op<int8_t, int8_t>(bug_plugin("add_saturate"), PK_OP_ADD, kI8, {a, b}, shape, kI8, shape, nullptr, &launched);
  ASSERT_TRUE(launched);
  EXPECT_EQ(clean, (std::vector<int8_t>{-56, 56, 3}));  // 200 - 256, -200 + 256: wraps modulo 2^8
  EXPECT_EQ(buggy, (std::vector<int8_t>{127, -128, 3}));
}

TEST(PlantedBugs, SumAccumulatesInF16) {
  // 4096 ones: in f16, 2048 + 1 is a tie between 2048 and 2050 that rounds to even (2048), so an f16 accumulator
  // stalls at 2048; the exact sum 4096 is representable in f16.
  const std::vector<uint16_t> ones(4096, 0x3C00);
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  bool launched = false;
  const auto clean =
      run_op<uint16_t, uint16_t>(kCpuPlugin, PK_OP_SUM, kF16, {ones}, {4096}, kF16, {}, &attrs, &launched);
  SKIP_IF_CPU_LACKS(launched, "sum");
  const auto buggy = run_op<uint16_t, uint16_t>(bug_plugin("sum_f16_acc"), PK_OP_SUM, kF16, {ones}, {4096}, kF16, {},
                                                &attrs, &launched);
  ASSERT_TRUE(launched);
  EXPECT_EQ(clean, (std::vector<uint16_t>{0x6C00}));  // 4096
  EXPECT_EQ(buggy, (std::vector<uint16_t>{0x6800}));  // 2048
}

// --- layout defects -------------------------------------------------------------------------------------------

TEST(PlantedBugs, IgnoresInputStrides) {
  // Storage 1..6 read as the transpose of a row-major 2x3: rows [1,4], [2,5], [3,6]; summed along axis 1.
  const std::vector<float> storage = {1, 2, 3, 4, 5, 6};
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 1;
  const Layout transposed{{1, 3}, 0};
  bool launched = false;
  const auto clean =
      run_op<float, float>(kCpuPlugin, PK_OP_SUM, kF32, {storage}, {3, 2}, kF32, {3}, &attrs, &launched, transposed);
  SKIP_IF_CPU_LACKS(launched, "sum");
  const auto buggy = run_op<float, float>(bug_plugin("ignore_strides"), PK_OP_SUM, kF32, {storage}, {3, 2}, kF32, {3},
                                          &attrs, &launched, transposed);
  ASSERT_TRUE(launched);
  EXPECT_EQ(clean, (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(buggy, (std::vector<float>{3, 7, 11}));  // [1,2], [3,4], [5,6]: the storage read row-major
}

TEST(PlantedBugs, IgnoresInputByteOffset) {
  const std::vector<float> storage = {1, 2, 3, 4};
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  const Layout skip_first{{}, sizeof(float)};
  bool launched = false;
  const auto clean =
      run_op<float, float>(kCpuPlugin, PK_OP_SUM, kF32, {storage}, {3}, kF32, {}, &attrs, &launched, skip_first);
  SKIP_IF_CPU_LACKS(launched, "sum");
  const auto buggy = run_op<float, float>(bug_plugin("ignore_offset"), PK_OP_SUM, kF32, {storage}, {3}, kF32, {},
                                          &attrs, &launched, skip_first);
  ASSERT_TRUE(launched);
  EXPECT_EQ(clean, (std::vector<float>{9}));  // 2 + 3 + 4
  EXPECT_EQ(buggy, (std::vector<float>{6}));  // 1 + 2 + 3
}

TEST(PlantedBugs, BroadcastMapsTheWrongAxis) {
  const std::vector<float> a = {1, 2, 3};
  pk_attrs_broadcast_in_dim attrs = PK_ATTRS_BROADCAST_IN_DIM_INIT;
  attrs.num_shape = 2;
  attrs.shape[0] = 2;
  attrs.shape[1] = 3;
  attrs.num_broadcast_dimensions = 1;
  attrs.broadcast_dimensions[0] = 1;
  bool launched = false;
  const auto clean =
      run_op<float, float>(kCpuPlugin, PK_OP_BROADCAST_IN_DIM, kF32, {a}, {3}, kF32, {2, 3}, &attrs, &launched);
  SKIP_IF_CPU_LACKS(launched, "broadcast_in_dim");
  const auto buggy = run_op<float, float>(bug_plugin("broadcast_axis"), PK_OP_BROADCAST_IN_DIM, kF32, {a}, {3}, kF32,
                                          {2, 3}, &attrs, &launched);
  ASSERT_TRUE(launched);
  EXPECT_EQ(clean, (std::vector<float>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(buggy, (std::vector<float>{1, 1, 1, 2, 2, 2}));  // a indexed by the row, not the column
}

TEST(PlantedBugs, SliceIsOffByOne) {
  const std::vector<float> a = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  pk_attrs_slice attrs = PK_ATTRS_SLICE_INIT;
  attrs.num_start_indices = 1;
  attrs.start_indices[0] = 2;
  attrs.num_limit_indices = 1;
  attrs.limit_indices[0] = 5;
  bool launched = false;
  const auto clean = run_op<float, float>(kCpuPlugin, PK_OP_SLICE, kF32, {a}, {10}, kF32, {3}, &attrs, &launched);
  SKIP_IF_CPU_LACKS(launched, "slice");
  const auto buggy =
      run_op<float, float>(bug_plugin("slice_off_by_one"), PK_OP_SLICE, kF32, {a}, {10}, kF32, {3}, &attrs, &launched);
  ASSERT_TRUE(launched);
  EXPECT_EQ(clean, (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(buggy, (std::vector<float>{3, 4, 5}));
}

// --- the racy stream --------------------------------------------------------------------------------------------

struct RaceReads {
  float after_event = NAN;  // read in place (the CPU device is host-visible) once an event says the sum is done
  float after_sync = NAN;   // copied back after stream_synchronize: the conformance runner's path
  float eventually = NAN;   // read in place once the write had time to land
};

// Sums 256 ones into an output that holds a sentinel, then reads the output as a caller trusting the stream's
// completion signals would.
RaceReads sum_then_read(const std::string &plugin) {
  RaceReads r;
  Session s(plugin);
  EXPECT_TRUE(s.ok()) << s.error();
  if (!s.ok()) return r;
  const std::vector<float> ones(256, 1.0f);
  const float sentinel = -1.0f;
  auto in = s.upload(kF32, {256}, ones.data(), ones.size() * sizeof(float));
  auto out = s.upload(kF32, {}, &sentinel, sizeof sentinel);
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  EXPECT_EQ(pk_launch(s.stream(), PK_OP_SUM, &in->tensor(), 1, &out->tensor(), 1, &attrs), PK_OK) << last_message();
  pk_event_t event = nullptr;
  EXPECT_EQ(pk_event_create(s.device(), &event), PK_OK) << last_message();
  EXPECT_EQ(pk_event_record(event, s.stream()), PK_OK) << last_message();
  EXPECT_EQ(pk_event_synchronize(event), PK_OK) << last_message();
  const auto read_in_place = [&] {
    float v;
    std::memcpy(&v, pk_buffer_data(out->buffer()), sizeof v);
    return v;
  };
  r.after_event = read_in_place();
  pk_event_destroy(event);
  r.after_sync = s.download<float>(*out, 1)[0];
  // The write must land in the end (a lost write would be another bug): poll for up to 5 s.
  for (int i = 0; i < 500 && read_in_place() != 256.0f; ++i) usleep(10000);
  r.eventually = read_in_place();
  return r;
}

TEST(PlantedBugs, StreamSignalsCompletionBeforeTheWriteLands) {
  const RaceReads clean = sum_then_read(kCpuPlugin);
  EXPECT_EQ(clean.after_event, 256.0f);
  EXPECT_EQ(clean.after_sync, 256.0f);
  const RaceReads buggy = sum_then_read(bug_plugin("event_race"));
  EXPECT_EQ(buggy.after_event, -1.0f) << "the event waited for the write: no race is planted";
  EXPECT_EQ(buggy.after_sync, -1.0f) << "synchronize and the copy waited for the write: no race is planted";
  EXPECT_EQ(buggy.eventually, 256.0f) << "the write never landed";
}

// --- events that complete early, streams that share scratch (found by the streams stage) -----------------------

struct EarlyReads {
  std::vector<float> after_event;  // read on another stream once pk_event_synchronize says the neg is done
  std::vector<float> after_sync;   // read on another stream once pk_stream_synchronize says so
};

// neg of {1, 2, 3, 4} into an output holding the sentinel -7, read back on a second (idle) stream after each
// completion signal: the reads a caller that trusts the signal makes.
EarlyReads neg_then_read_elsewhere(const std::string &plugin) {
  EarlyReads r;
  Session s(plugin);
  EXPECT_TRUE(s.ok()) << s.error();
  if (!s.ok()) return r;
  const std::vector<float> x = {1, 2, 3, 4}, sentinel(4, -7.0f);
  auto in = s.upload(kF32, {4}, x.data(), 16);
  auto out = s.upload(kF32, {4}, sentinel.data(), 16);
  EXPECT_EQ(pk_stream_synchronize(s.stream()), PK_OK) << last_message();
  pk_stream_t reader = nullptr;
  pk_event_t event = nullptr;
  EXPECT_EQ(pk_stream_create(s.device(), &reader), PK_OK) << last_message();
  EXPECT_EQ(pk_event_create(s.device(), &event), PK_OK) << last_message();
  const auto read_on_reader = [&] {
    std::vector<float> v(4);
    EXPECT_EQ(pk_copy_buffer_to_host(reader, v.data(), out->buffer(), 0, 16), PK_OK) << last_message();
    EXPECT_EQ(pk_stream_synchronize(reader), PK_OK) << last_message();
    return v;
  };
  EXPECT_EQ(pk_launch(s.stream(), PK_OP_NEG, &in->tensor(), 1, &out->tensor(), 1, nullptr), PK_OK) << last_message();
  EXPECT_EQ(pk_event_record(event, s.stream()), PK_OK) << last_message();
  EXPECT_EQ(pk_event_synchronize(event), PK_OK) << last_message();
  r.after_event = read_on_reader();
  EXPECT_EQ(pk_stream_synchronize(s.stream()), PK_OK) << last_message();
  r.after_sync = read_on_reader();
  pk_event_destroy(event);
  pk_stream_destroy(reader);
  return r;
}

TEST(PlantedBugs, EventsCompleteBeforeTheWorkWhileSynchronizeWaits) {
  const std::vector<float> negated = {-1, -2, -3, -4}, sentinel(4, -7.0f);
  const EarlyReads clean = neg_then_read_elsewhere(kCpuPlugin);
  EXPECT_EQ(clean.after_event, negated);
  EXPECT_EQ(clean.after_sync, negated);
  const EarlyReads buggy = neg_then_read_elsewhere(bug_plugin("event_early"));
  EXPECT_EQ(buggy.after_event, sentinel) << "the event waited for the neg: no early event is planted";
  // Unlike event_race, stream_synchronize is honest: the runner's per-case path cannot see this defect.
  EXPECT_EQ(buggy.after_sync, negated) << "stream_synchronize does not wait: this is event_race, not event_early";
}

// Sums the rows of a 4 x 8 tensor of `value` on a stream of its own, on this thread, after `start` lets both
// threads go; returns the four sums.
std::vector<float> sum_rows_of(Session &s, pk_stream_t stream, float value, std::atomic<int> *start) {
  const std::vector<float> x(32, value), sentinel(4, -1.0f);
  // Uploaded through `stream`: each thread touches only its own stream.
  auto in = std::make_unique<DeviceTensor>(s.device(), kF32, std::vector<int64_t>{4, 8}, 128);
  auto out = std::make_unique<DeviceTensor>(s.device(), kF32, std::vector<int64_t>{4}, 16);
  EXPECT_EQ(pk_copy_host_to_buffer(stream, in->buffer(), 0, x.data(), 128), PK_OK) << last_message();
  EXPECT_EQ(pk_copy_host_to_buffer(stream, out->buffer(), 0, sentinel.data(), 16), PK_OK) << last_message();
  EXPECT_EQ(pk_stream_synchronize(stream), PK_OK) << last_message();
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 1;
  if (start) {
    start->fetch_add(1);
    while (start->load() < 2) std::this_thread::yield();
  }
  EXPECT_EQ(pk_launch(stream, PK_OP_SUM, &in->tensor(), 1, &out->tensor(), 1, &attrs), PK_OK) << last_message();
  std::vector<float> v(4);
  EXPECT_EQ(pk_copy_buffer_to_host(stream, v.data(), out->buffer(), 0, 16), PK_OK) << last_message();
  EXPECT_EQ(pk_stream_synchronize(stream), PK_OK) << last_message();
  return v;
}

// Rounds of two concurrent sums (rows of ones on one stream, rows of twos on another); returns how many rounds
// gave one stream exactly the other's sums (8 <-> 16): the signature of a shared scratch array. Any other wrong
// value fails the test. Alone, each must give 8 and 16.
int concurrent_sum_rounds_wrong(const std::string &plugin, int rounds) {
  Session s(plugin);
  EXPECT_TRUE(s.ok()) << s.error();
  if (!s.ok()) return -1;
  pk_stream_t second = nullptr;
  EXPECT_EQ(pk_stream_create(s.device(), &second), PK_OK) << last_message();
  EXPECT_EQ(sum_rows_of(s, s.stream(), 1.0f, nullptr), std::vector<float>(4, 8.0f)) << plugin << " alone";
  EXPECT_EQ(sum_rows_of(s, second, 2.0f, nullptr), std::vector<float>(4, 16.0f)) << plugin << " alone";
  int wrong = 0;
  for (int k = 0; k < rounds; ++k) {
    std::atomic<int> start{0};
    std::vector<float> twos;
    std::thread t([&] { twos = sum_rows_of(s, second, 2.0f, &start); });
    const std::vector<float> ones = sum_rows_of(s, s.stream(), 1.0f, &start);
    t.join();
    const std::vector<float> eights(4, 8.0f), sixteens(4, 16.0f);
    EXPECT_TRUE(ones == eights || ones == sixteens) << plugin << ": ones summed to " << ones[0] << ", ...";
    EXPECT_TRUE(twos == sixteens || twos == eights) << plugin << ": twos summed to " << twos[0] << ", ...";
    if (ones == sixteens || twos == eights) ++wrong;
  }
  pk_stream_destroy(second);
  return wrong;
}

TEST(PlantedBugs, StreamsShareOneScratchArray) {
  EXPECT_EQ(concurrent_sum_rounds_wrong(kCpuPlugin, 10), 0);
  // Each sum holds the shared array for 5 ms between writing and reading it; threads let go together overlap
  // in nearly every round, so most rounds read the other stream's sums.
  // On a loaded machine (other tests running on both cores) the two threads may not overlap in ten rounds: a
  // second, longer try before concluding that nothing is shared.
  int wrong = concurrent_sum_rounds_wrong(bug_plugin("stream_shared_scratch"), 10);
  if (wrong == 0) wrong = concurrent_sum_rounds_wrong(bug_plugin("stream_shared_scratch"), 40);
  EXPECT_GE(wrong, 1) << "two concurrent sums never disturbed each other: no shared scratch is planted";
}

// --- memory kept per launch (found by the streams stage's leak row) -----------------------------------------------

// Resident bytes of this process (/proc/self/statm).
uint64_t resident_bytes() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

struct LeakRun {
  std::vector<float> result;  // neg of {1, 2, 3, 4} after the launches
  double growth = 0;          // resident bytes gained over the 400 measured launches
};

LeakRun neg_many_times(const std::string &plugin) {
  LeakRun r;
  Session s(plugin);
  EXPECT_TRUE(s.ok()) << s.error();
  if (!s.ok()) return r;
  const std::vector<float> x = {1, 2, 3, 4};
  auto in = s.upload(kF32, {4}, x.data(), 16);
  DeviceTensor out(s.device(), kF32, {4}, 16);
  const auto launches = [&](int n) {
    for (int k = 0; k < n; ++k)
      EXPECT_EQ(pk_launch(s.stream(), PK_OP_NEG, &in->tensor(), 1, &out.tensor(), 1, nullptr), PK_OK) << last_message();
    EXPECT_EQ(pk_stream_synchronize(s.stream()), PK_OK) << last_message();
  };
  launches(50);  // warm-up: pools and caches settle
  const uint64_t before = resident_bytes();
  launches(400);
  const uint64_t after = resident_bytes();
  r.growth = after > before ? static_cast<double>(after - before) : 0.0;
  r.result = s.download<float>(out, 4);
  return r;
}

TEST(PlantedBugs, KeepsMemoryOnEveryLaunch) {
  const std::vector<float> negated = {-1, -2, -3, -4};
  const LeakRun clean = neg_many_times(kCpuPlugin);
  EXPECT_EQ(clean.result, negated);
  EXPECT_LT(clean.growth, 1024.0 * 1024.0) << "the clean CPU backend grows by " << clean.growth << " bytes";
  const LeakRun buggy = neg_many_times(bug_plugin("leak_per_launch"));
  EXPECT_EQ(buggy.result, negated) << "the leak must not change results";
  // 400 launches x 16 KiB = 6.25 MiB kept; allow 10 % for pages the allocator had already made resident.
  EXPECT_GE(buggy.growth, 0.9 * 400 * 16 * 1024) << "no memory is kept per launch: no leak is planted";
}

// --- crash and hang -----------------------------------------------------------------------------------------

// A sum over an empty vector (= 0) on `plugin`; exits 0 when the launch returns.
void sum_of_empty(const std::string &plugin) {
  Session s(plugin);
  if (!s.ok()) std::exit(2);
  auto in = s.upload(kF32, {0}, nullptr, 0);
  const float sentinel = -1.0f;
  auto out = s.upload(kF32, {}, &sentinel, sizeof sentinel);
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  if (pk_launch(s.stream(), PK_OP_SUM, &in->tensor(), 1, &out->tensor(), 1, &attrs) != PK_OK) std::exit(3);
  std::exit(s.download<float>(*out, 1)[0] == 0.0f ? 0 : 4);
}

TEST(PlantedBugs, CrashesOnAnEmptyTensor) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the runtime and the CPU pool run threads
  EXPECT_EXIT(sum_of_empty(kCpuPlugin), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(sum_of_empty(bug_plugin("crash_empty")), ::testing::KilledBySignal(SIGSEGV), "");
}

// A sum over a 4x7 f32 tensor (the default shape of hang_shape) on `plugin`, which must return within a
// second (SIGALRM otherwise).
void sum_of_4x7(const std::string &plugin) {
  unsetenv("PRIMKIT_BUG_HANG_SHAPE");
  alarm(1);
  Session s(plugin);
  if (!s.ok()) std::exit(2);
  const std::vector<float> x(28, 1.0f);
  auto in = s.upload(kF32, {4, 7}, x.data(), x.size() * sizeof(float));
  auto out = s.upload(kF32, {4}, x.data(), 4 * sizeof(float));
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 1;
  if (pk_launch(s.stream(), PK_OP_SUM, &in->tensor(), 1, &out->tensor(), 1, &attrs) != PK_OK) std::exit(3);
  std::exit(s.download<float>(*out, 4) == std::vector<float>{7, 7, 7, 7} ? 0 : 4);
}

TEST(PlantedBugs, HangsOnOneShape) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(sum_of_4x7(kCpuPlugin), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(sum_of_4x7(bug_plugin("hang_shape")), ::testing::KilledBySignal(SIGALRM), "");
}

// --- defects the guard regions, empty axes, edge values, ties and long rows find ------------------------------

// One input per (dtype, shape, bytes); the output is written into `storage` (initial contents given) through
// `out_strides` / `out_offset` (bytes); returns the whole storage after the launch.
struct In {
  pk_dtype dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
template <class T>
In in(pk_dtype dtype, std::vector<int64_t> shape, const std::vector<T> &values) {
  In r{dtype, std::move(shape), std::vector<uint8_t>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(r.bytes.data(), values.data(), r.bytes.size());
  return r;
}
template <class TOut>
std::vector<TOut> launch_into(const std::string &plugin, uint32_t op_id, const std::vector<In> &inputs,
                              pk_dtype out_dtype, std::vector<int64_t> out_shape, std::vector<TOut> storage,
                              std::vector<int64_t> out_strides = {}, uint64_t out_offset = 0,
                              const void *attrs = nullptr) {
  Session s(plugin);
  EXPECT_TRUE(s.ok()) << s.error();
  if (!s.ok()) return {};
  std::vector<std::unique_ptr<DeviceTensor>> ins;
  std::vector<pk_tensor> descs;
  for (const In &x : inputs) {
    ins.push_back(s.upload(x.dtype, x.shape, x.bytes.data(), x.bytes.size()));
    descs.push_back(ins.back()->tensor());
  }
  auto out = s.upload(out_dtype, std::move(out_shape), storage.data(), storage.size() * sizeof(TOut),
                      std::move(out_strides), out_offset);
  const pk_status st =
      pk_launch(s.stream(), op_id, descs.data(), static_cast<uint32_t>(descs.size()), &out->tensor(), 1, attrs);
  EXPECT_EQ(st, PK_OK) << last_message();
  if (st != PK_OK) return {};
  return s.download<TOut>(*out, storage.size());
}

TEST(PlantedBugs, WritesOutsideTheOutputView) {
  // neg of [1, 2, 3, 4] into elements 2..5 of an 8-element storage filled with 7.
  const auto x = in(kF32, {4}, std::vector<float>{1, 2, 3, 4});
  const std::vector<float> init(8, 7.0f);
  const auto run = [&](const std::string &plugin) {
    return launch_into<float>(plugin, PK_OP_NEG, {x}, kF32, {4}, init, {}, 2 * sizeof(float));
  };
  EXPECT_EQ(run(kCpuPlugin), (std::vector<float>{7, 7, -1, -2, -3, -4, 7, 7}));
  EXPECT_EQ(run(bug_plugin("write_past_end")), (std::vector<float>{7, 7, -1, -2, -3, -4, -1, 7}));
  EXPECT_EQ(run(bug_plugin("write_before_start")), (std::vector<float>{7, -1, -1, -2, -3, -4, 7, 7}));
}

TEST(PlantedBugs, WritesAStridedOutputAsIfRowMajor) {
  const auto x = in(kF32, {3}, std::vector<float>{1, 2, 3});
  const std::vector<float> init(6, 7.0f);
  const auto run = [&](const std::string &plugin) {
    return launch_into<float>(plugin, PK_OP_NEG, {x}, kF32, {3}, init, {2});
  };
  EXPECT_EQ(run(kCpuPlugin), (std::vector<float>{-1, 7, -2, 7, -3, 7}));
  EXPECT_EQ(run(bug_plugin("strided_output")), (std::vector<float>{-1, -2, -3, 7, 7, 7}));
}

TEST(PlantedBugs, LeavesEmptyReductionsUnwritten) {
  // [2, 0] x [0, 3]: K = 0, the product is all zeros. A sum over an empty axis is 0.
  const auto a = in(kF32, {2, 0}, std::vector<float>{}), b = in(kF32, {0, 3}, std::vector<float>{});
  const std::vector<float> init(6, 7.0f);
  EXPECT_EQ(launch_into<float>(kCpuPlugin, PK_OP_MATMUL, {a, b}, kF32, {2, 3}, init), std::vector<float>(6, 0.0f));
  EXPECT_EQ(launch_into<float>(bug_plugin("k0_garbage"), PK_OP_MATMUL, {a, b}, kF32, {2, 3}, init), init);
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  const auto e = in(kF32, {0, 3}, std::vector<float>{});
  const std::vector<float> init3(3, 7.0f);
  EXPECT_EQ(launch_into<float>(kCpuPlugin, PK_OP_SUM, {e}, kF32, {3}, init3, {}, 0, &attrs),
            std::vector<float>(3, 0.0f));
  EXPECT_EQ(launch_into<float>(bug_plugin("empty_sum_garbage"), PK_OP_SUM, {e}, kF32, {3}, init3, {}, 0, &attrs),
            init3);
}

TEST(PlantedBugs, FlushesSubnormals) {
  // 2^-126 * 0.5 = 2^-127 and 1 * 2^-140: subnormal f32 results; the device declares no FTZ.
  const auto a = in(kF32, {2}, std::vector<float>{std::ldexp(1.0f, -126), 1.0f});
  const auto b = in(kF32, {2}, std::vector<float>{0.5f, std::ldexp(1.0f, -140)});
  const std::vector<float> init(2, 7.0f);
  EXPECT_EQ(launch_into<float>(kCpuPlugin, PK_OP_MUL, {a, b}, kF32, {2}, init),
            (std::vector<float>{std::ldexp(1.0f, -127), std::ldexp(1.0f, -140)}));
  EXPECT_EQ(launch_into<float>(bug_plugin("ftz_results"), PK_OP_MUL, {a, b}, kF32, {2}, init),
            (std::vector<float>{0.0f, 0.0f}));
  // neg of the f16 subnormals 0x0001 and 0x8200 (and of 1.0): a DAZ device reads the subnormals as zeros.
  const auto h = in(kF16, {3}, std::vector<uint16_t>{0x0001, 0x8200, 0x3c00});
  const std::vector<uint16_t> hinit(3, 0x7777);
  EXPECT_EQ(launch_into<uint16_t>(kCpuPlugin, PK_OP_NEG, {h}, kF16, {3}, hinit),
            (std::vector<uint16_t>{0x8001, 0x0200, 0xbc00}));
  EXPECT_EQ(launch_into<uint16_t>(bug_plugin("daz_f16_inputs"), PK_OP_NEG, {h}, kF16, {3}, hinit),
            (std::vector<uint16_t>{0x8000, 0x0000, 0xbc00}));
}

TEST(PlantedBugs, MatmulReadsSubnormalsAsZero) {
  // [2^-130, 1] x [[0.5], [2^-140]] = 2^-131 + 2^-140 (exact in f32: both are multiples of 2^-149); a DAZ matmul
  // reads both subnormal operands as zero and returns 0.
  const auto a = in(kF32, {1, 2}, std::vector<float>{std::ldexp(1.0f, -130), 1.0f});
  const auto b = in(kF32, {2, 1}, std::vector<float>{0.5f, std::ldexp(1.0f, -140)});
  const std::vector<float> init(1, 7.0f);
  EXPECT_EQ(launch_into<float>(kCpuPlugin, PK_OP_MATMUL, {a, b}, kF32, {1, 1}, init),
            (std::vector<float>{std::ldexp(1.0f, -131) + std::ldexp(1.0f, -140)}));
  EXPECT_EQ(launch_into<float>(bug_plugin("matmul_daz"), PK_OP_MATMUL, {a, b}, kF32, {1, 1}, init),
            (std::vector<float>{0.0f}));
}

TEST(PlantedBugs, TiesAndSignedZeros) {
  // argmax of [1, 3, 2, 3, 0]: the first maximum is at 1, the last at 3.
  const auto x = in(kF32, {5}, std::vector<float>{1, 3, 2, 3, 0});
  pk_attrs_argmax attrs = PK_ATTRS_ARGMAX_INIT;
  const std::vector<int64_t> init = {-7};
  constexpr pk_dtype kI64 = PK_DTYPE_I64_DESC;
  EXPECT_EQ(launch_into<int64_t>(kCpuPlugin, PK_OP_ARGMAX, {x}, kI64, {}, init, {}, 0, &attrs),
            std::vector<int64_t>{1});
  EXPECT_EQ(launch_into<int64_t>(bug_plugin("argmax_last_tie"), PK_OP_ARGMAX, {x}, kI64, {}, init, {}, 0, &attrs),
            std::vector<int64_t>{3});
  // minimum(-0, +0) and minimum(+0, -0) are -0.
  const auto a = in(kF32, {2}, std::vector<float>{-0.0f, 0.0f}), b = in(kF32, {2}, std::vector<float>{0.0f, -0.0f});
  const std::vector<uint32_t> zinit(2, 7);
  EXPECT_EQ(launch_into<uint32_t>(kCpuPlugin, PK_OP_MINIMUM, {a, b}, kF32, {2}, zinit),
            (std::vector<uint32_t>{0x80000000u, 0x80000000u}));
  EXPECT_EQ(launch_into<uint32_t>(bug_plugin("minimum_zero_sign"), PK_OP_MINIMUM, {a, b}, kF32, {2}, zinit),
            (std::vector<uint32_t>{0u, 0u}));
}

TEST(PlantedBugs, ConvertsIntegersThroughF32) {
  // 2^30 + 2^22 + 1 lies just above the bf16 tie between 2^30 (0x4E80) and 2^30 + 2^23 (0x4E81): one rounding
  // gives 0x4E81. Through f32 the + 1 is lost (2^30 + 2^22 exactly), a tie, which rounds to even: 0x4E80.
  const auto x = in(PK_DTYPE_I32_DESC, {1}, std::vector<int32_t>{(1 << 30) + (1 << 22) + 1});
  pk_attrs_convert_element_type attrs = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  attrs.dtype = PK_DTYPE_BF16;
  const std::vector<uint16_t> init = {0x7777};
  EXPECT_EQ(launch_into<uint16_t>(kCpuPlugin, PK_OP_CONVERT_ELEMENT_TYPE, {x}, kBF16, {1}, init, {}, 0, &attrs),
            std::vector<uint16_t>{0x4E81});
  EXPECT_EQ(launch_into<uint16_t>(bug_plugin("convert_double_round"), PK_OP_CONVERT_ELEMENT_TYPE, {x}, kBF16, {1}, init,
                                  {}, 0, &attrs),
            std::vector<uint16_t>{0x4E80});
}

TEST(PlantedBugs, SigmoidComputedInF16) {
  // sigmoid(-14) = 8.3153e-7, the f16 subnormal 14 * 2^-24 (0x000e); in f16 exp(14) overflows and 1 / inf = 0.
  const auto x = in(kF16, {2}, std::vector<uint16_t>{0xcb00, 0x0000});
  const std::vector<uint16_t> init(2, 0x7777);
  EXPECT_EQ(launch_into<uint16_t>(kCpuPlugin, PK_OP_SIGMOID, {x}, kF16, {2}, init),
            (std::vector<uint16_t>{0x000e, 0x3800}));
  EXPECT_EQ(launch_into<uint16_t>(bug_plugin("sigmoid_f16"), PK_OP_SIGMOID, {x}, kF16, {2}, init),
            (std::vector<uint16_t>{0x0000, 0x3800}));
}

TEST(PlantedBugs, LongBf16SumsAccumulateInBf16) {
  // 4096 halves: the exact sum 2048 is a bf16 (0x4500). A bf16 accumulator stalls at 128, where 128 + 0.5 is a
  // tie between 128 and 129 that rounds to even (0x4300). Rows under 2048 elements stay right.
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 1;
  attrs.dims[0] = 0;
  const std::vector<uint16_t> init = {0x7777};
  for (const auto &[n, exact] : std::vector<std::pair<int64_t, uint16_t>>{{4096, 0x4500}, {1024, 0x4400}}) {
    const auto x = in(kBF16, {n}, std::vector<uint16_t>(static_cast<size_t>(n), 0x3f00));
    EXPECT_EQ(launch_into<uint16_t>(kCpuPlugin, PK_OP_SUM, {x}, kBF16, {}, init, {}, 0, &attrs),
              std::vector<uint16_t>{exact});
    EXPECT_EQ(launch_into<uint16_t>(bug_plugin("sum_long_bf16"), PK_OP_SUM, {x}, kBF16, {}, init, {}, 0, &attrs),
              std::vector<uint16_t>{n >= 2048 ? uint16_t{0x4300} : exact});
  }
}

TEST(PlantedBugs, NanByPatternAndSaturatingAbs) {
  // f16 NaNs other than the canonical 0x7e00 (a signalling 0x7c01, a payload 0x7fff, a negative 0xfc10) are NaN.
  const auto h = in(kF16, {5}, std::vector<uint16_t>{0x7e00, 0x7c01, 0x7fff, 0xfc10, 0x3c00});
  const std::vector<uint8_t> binit(5, 7);
  constexpr pk_dtype kBool = PK_DTYPE_BOOL_DESC;
  EXPECT_EQ(launch_into<uint8_t>(kCpuPlugin, PK_OP_ISNAN, {h}, kBool, {5}, binit),
            (std::vector<uint8_t>{1, 1, 1, 1, 0}));
  EXPECT_EQ(launch_into<uint8_t>(bug_plugin("isnan_canonical"), PK_OP_ISNAN, {h}, kBool, {5}, binit),
            (std::vector<uint8_t>{1, 0, 0, 0, 0}));
  // abs(INT32_MIN) wraps to INT32_MIN; abs(-5) = 5.
  const auto x = in(PK_DTYPE_I32_DESC, {2}, std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -5});
  const std::vector<int32_t> iinit(2, 7);
  EXPECT_EQ(launch_into<int32_t>(kCpuPlugin, PK_OP_ABS, {x}, PK_DTYPE_I32_DESC, {2}, iinit),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 5}));
  EXPECT_EQ(launch_into<int32_t>(bug_plugin("abs_saturate"), PK_OP_ABS, {x}, PK_DTYPE_I32_DESC, {2}, iinit),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::max(), 5}));
}

}  // namespace
