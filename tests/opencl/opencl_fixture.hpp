// opencl_fixture.hpp — the OpenCL test fixture (a runtime with the OpenCL and CPU backends loaded, device
// buffers, launches, downloads) and the helpers the test files share. Every expected value is computed in the
// tests themselves: double-precision loops, hand-derived bit patterns for the narrow float formats.
#pragma once

#include <gtest/gtest.h>

#include <dirent.h>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "pow_huge_phase_cases.hpp"
#include "primkit/primkit.h"

namespace pk_opencl_test {

inline pk_error_info last_error() {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  return e;
}

const pk_dtype kF32 = PK_DTYPE_F32_DESC, kF64 = PK_DTYPE_F64_DESC, kBool = PK_DTYPE_BOOL_DESC,
               kBF16 = PK_DTYPE_BF16_DESC, kF16 = PK_DTYPE_F16_DESC, kE4M3 = PK_DTYPE_F8E4M3FN_DESC,
               kI32 = PK_DTYPE_I32_DESC;

// Kernels compile on first use; a test-local program cache keeps repeated runs fast (PRIMKIT_CACHE_DIR wins if
// the caller set it).
inline const std::string &cache_dir() {
  static const std::string dir = [] {
    if (const char *d = std::getenv("PRIMKIT_CACHE_DIR")) return std::string(d);
    std::string d = std::string(PK_TEST_CACHE_DIR);
    setenv("PRIMKIT_CACHE_DIR", d.c_str(), 1);
    return d;
  }();
  return dir;
}
inline const std::string &g_cache_dir_init = cache_dir();

inline float bits_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(static_cast<int64_t>(ia) - ib);
}

class OpenCL : public ::testing::Test {
 protected:
  void SetUp() override { open(); }
  void open() {
    (void)cache_dir();
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    ASSERT_EQ(pk_runtime_create(&o, &rt_), PK_OK);
    const std::string dir = PK_PLUGIN_DIR;
    ASSERT_EQ(pk_runtime_load_plugin(rt_, (dir + "/libprimkit_backend_cpu.so").c_str(), &cpu_), PK_OK)
        << last_error().message;
    ASSERT_EQ(pk_runtime_load_plugin(rt_, (dir + "/libprimkit_backend_opencl.so").c_str(), &ocl_), PK_OK)
        << last_error().message;
    uint32_t n = 0;
    ASSERT_EQ(pk_backend_device_count(ocl_, &n), PK_OK);
    if (n == 0) GTEST_SKIP() << "no OpenCL device on this machine";
    ASSERT_EQ(pk_backend_device(ocl_, 0, &dev_), PK_OK);
    ASSERT_EQ(pk_stream_create(dev_, &stream_), PK_OK) << last_error().message;
    ASSERT_EQ(pk_backend_device(cpu_, 0, &cpu_dev_), PK_OK);
    ASSERT_EQ(pk_stream_create(cpu_dev_, &cpu_stream_), PK_OK);
  }
  void close() {
    for (pk_buffer_t b : buffers_) pk_buffer_destroy(b);
    buffers_.clear();
    pk_stream_destroy(stream_);
    pk_stream_destroy(cpu_stream_);
    pk_runtime_destroy(rt_);
    stream_ = cpu_stream_ = nullptr;
    rt_ = nullptr;
  }
  void TearDown() override { close(); }

  // A device tensor holding `host` (uploaded on stream_; the caller keeps `host` alive until stream_ is
  // synchronized), viewed with shape/strides/byte_offset.
  template <class T>
  pk_tensor device(const std::vector<T> &host, pk_dtype dt, std::vector<int64_t> shape,
                   std::vector<int64_t> strides = {}, uint64_t byte_offset = 0, uint64_t min_bytes = 0) {
    pk_buffer_t b = nullptr;
    const uint64_t bytes = std::max<uint64_t>({1, min_bytes, host.size() * sizeof(T)});
    EXPECT_EQ(pk_buffer_create(dev_, bytes, &b), PK_OK) << last_error().message;
    buffers_.push_back(b);
    if (!host.empty()) {
      EXPECT_EQ(pk_copy_host_to_buffer(stream_, b, 0, host.data(), host.size() * sizeof(T)), PK_OK);
    }
    dims_.push_back(std::move(shape));
    const std::vector<int64_t> &sh = dims_.back();
    const int64_t *st = nullptr;
    if (!strides.empty()) {
      dims_.push_back(std::move(strides));
      st = dims_.back().data();
    }
    pk_tensor t;
    EXPECT_EQ(pk_buffer_tensor(b, dt, static_cast<int32_t>(sh.size()), sh.data(), st, byte_offset, &t), PK_OK)
        << last_error().message;
    return t;
  }
  // An output tensor: storage only. (Uploading a temporary here would break the ABI's rule that the host keeps
  // the source of an enqueued copy alive until the stream has passed it.)
  template <class T>
  pk_tensor empty(size_t count, pk_dtype dt, std::vector<int64_t> shape) {
    return device(std::vector<T>(), dt, std::move(shape), {}, 0, count * sizeof(T));
  }
  template <class T>
  std::vector<T> download(const pk_tensor &t, size_t count) {
    std::vector<T> out(count);
    pk_buffer_t b = nullptr;
    for (pk_buffer_t c : buffers_)
      if (pk_buffer_data(c) == t.data) b = c;
    EXPECT_NE(b, nullptr);
    EXPECT_EQ(pk_copy_buffer_to_host(stream_, out.data(), b, 0, count * sizeof(T)), PK_OK) << last_error().message;
    EXPECT_EQ(pk_stream_synchronize(stream_), PK_OK) << last_error().message;
    return out;
  }
  pk_status launch(uint32_t op, std::vector<pk_tensor> in, std::vector<pk_tensor> out, const void *attrs = nullptr) {
    return pk_launch(stream_, op, in.data(), static_cast<uint32_t>(in.size()), out.data(),
                     static_cast<uint32_t>(out.size()), attrs);
  }
  // The op ran on the OpenCL backend itself (no fallback).
  void expect_native(uint32_t op) {
    uint64_t n = 0;
    pk_runtime_fallback_count(rt_, op, &n, nullptr);
    EXPECT_EQ(n, 0u) << "op " << op << " fell back to the CPU backend";
  }
  bool supported(uint32_t op, std::vector<pk_dtype> in, std::vector<pk_dtype> out, std::string *reason = nullptr) {
    std::vector<pk_tensor> ti(in.size()), to(out.size());
    for (size_t i = 0; i < in.size(); ++i) {
      PK_STRUCT_INIT(ti[i]);
      ti[i].dtype = in[i];
    }
    for (size_t i = 0; i < out.size(); ++i) {
      PK_STRUCT_INIT(to[i]);
      to[i].dtype = out[i];
    }
    pk_op_query q;
    PK_STRUCT_INIT(q);
    q.op_id = op;
    q.num_inputs = static_cast<uint32_t>(ti.size());
    q.inputs = ti.data();
    q.num_outputs = static_cast<uint32_t>(to.size());
    q.outputs = to.data();
    pk_op_support s;
    PK_STRUCT_INIT(s);
    EXPECT_EQ(pk_device_query_op(dev_, &q, &s), PK_OK);
    if (reason) *reason = s.reason;
    return s.supported != 0;
  }

  // Runs `op` on the CPU backend over host copies (the same inputs), for cross-checks. Returns false when the CPU
  // backend lacks the kernel (its elementwise kernels land separately).
  bool run_cpu(uint32_t op, std::vector<std::vector<float>> &in, std::vector<float> &out, std::vector<int64_t> shape,
               const void *attrs = nullptr) {
    std::vector<pk_tensor> ti(in.size()), to(1);
    auto host = [&](pk_tensor &t, std::vector<float> &v) {
      PK_STRUCT_INIT(t);
      t.data = v.data();
      t.storage_bytes = v.size() * 4;
      t.device_type = PK_DEVICE_CPU;
      t.dtype = kF32;
      t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
      t.ndim = static_cast<int32_t>(shape.size());
      t.shape = shape.data();
    };
    for (size_t i = 0; i < in.size(); ++i) host(ti[i], in[i]);
    host(to[0], out);
    pk_status st = pk_launch(cpu_stream_, op, ti.data(), static_cast<uint32_t>(ti.size()), to.data(), 1, attrs);
    if (st == PK_UNIMPLEMENTED) return false;
    EXPECT_EQ(st, PK_OK) << last_error().message;
    EXPECT_EQ(pk_stream_synchronize(cpu_stream_), PK_OK);
    return st == PK_OK;
  }

  pk_runtime_t rt_ = nullptr;
  pk_backend_t cpu_ = nullptr, ocl_ = nullptr;
  pk_device_t dev_ = nullptr, cpu_dev_ = nullptr;
  pk_stream_t stream_ = nullptr, cpu_stream_ = nullptr;
  std::vector<pk_buffer_t> buffers_;
  std::deque<std::vector<int64_t>> dims_;
};

inline std::vector<float> random_floats(size_t n, unsigned seed, float lo = -4.f, float hi = 4.f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto &x : v) x = d(g);
  return v;
}

}  // namespace pk_opencl_test
