// cpu_test_fixture.hpp — the fixture every CPU backend test file uses: a runtime with only the CPU backend
// (strict: a kernel the backend declines is an error, not a silent fallback) and host tensors over test-owned
// memory (the CPU device addresses host memory directly).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "primkit/primkit.h"

namespace pk_test {

inline pk_error_info last_error() {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  return e;
}

class CpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_STRICT;
#ifdef PK_CPU_PLUGIN_DIR
    o.flags |= PK_RUNTIME_NO_DISCOVERY;
    ASSERT_EQ(pk_runtime_create(&o, &rt_), PK_OK);
    const std::string path = std::string(PK_CPU_PLUGIN_DIR) + "/libprimkit_backend_cpu.so";
    ASSERT_EQ(pk_runtime_load_plugin(rt_, path.c_str(), &cpu_), PK_OK) << last_error().message;
#else
    ASSERT_EQ(pk_runtime_create(&o, &rt_), PK_OK);
    ASSERT_EQ(pk_runtime_find_backend(rt_, "cpu", &cpu_), PK_OK) << pk_runtime_load_errors(rt_);
#endif
    ASSERT_EQ(pk_backend_device(cpu_, 0, &dev_), PK_OK);
    ASSERT_EQ(pk_stream_create(dev_, &stream_), PK_OK);
  }
  void TearDown() override {
    pk_stream_destroy(stream_);
    pk_runtime_destroy(rt_);
  }

  // A tensor over `data` (row-major unless strides are given); the shape and stride arrays live in the fixture.
  template <class T>
  pk_tensor tensor(std::vector<T> &data, pk_dtype dt, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
    pk_tensor t;
    PK_STRUCT_INIT(t);
    t.data = data.data();
    t.storage_bytes = data.size() * sizeof(T);
    t.device_type = PK_DEVICE_CPU;
    t.dtype = dt;
    t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
    shapes_.push_back(std::move(shape));
    t.ndim = static_cast<int32_t>(shapes_.back().size());
    t.shape = shapes_.back().data();
    if (!strides.empty()) {
      shapes_.push_back(std::move(strides));
      t.strides = shapes_.back().data();
    }
    return t;
  }

  pk_status launch(uint32_t op, std::vector<pk_tensor> in, std::vector<pk_tensor> out, const void *attrs) {
    pk_status st = pk_launch(stream_, op, in.data(), static_cast<uint32_t>(in.size()), out.data(),
                             static_cast<uint32_t>(out.size()), attrs);
    if (st != PK_OK) return st;
    return pk_stream_synchronize(stream_);
  }

  pk_runtime_t rt_ = nullptr;
  pk_backend_t cpu_ = nullptr;
  pk_device_t dev_ = nullptr;
  pk_stream_t stream_ = nullptr;
  std::deque<std::vector<int64_t>> shapes_;
};

// A seeded, deterministic normal-ish value (a sum of four uniforms), scaled: inputs for the kernels' sweeps.
struct Lcg {
  uint64_t s;
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * 0x1p-53;
  }
  float normal(double scale) {
    double t = 0;
    for (int i = 0; i < 4; ++i) t += next();
    return static_cast<float>((t - 2.0) * std::sqrt(3.0) * scale);
  }
};

}  // namespace pk_test
