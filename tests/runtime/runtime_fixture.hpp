// runtime_fixture.hpp — a runtime with the CPU backend (the fallback target) and the C test plugins loaded
// explicitly, plus small helpers to make tensors on host-visible and simulated devices.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "primkit/primkit.h"

namespace pk::test {

inline std::string plugin(const std::string &name) {
  return std::string(PK_TEST_PLUGIN_DIR) + "/lib" + name + ".so";
}
inline std::string cpu_plugin() {
  return std::string(PK_CPU_PLUGIN_DIR) + "/libprimkit_backend_cpu.so";
}

inline pk_error_info last_error() {
  pk_error_info e;
  e.struct_size = sizeof(e);
  pk_get_last_error(&e);
  return e;
}

inline pk_dtype f32() {
  return pk_dtype PK_DTYPE_F32_DESC;
}

// A tensor on a device with its own shape storage, backed by a pk_buffer.
struct DeviceTensor {
  pk_buffer_t buffer = nullptr;
  std::vector<int64_t> shape, strides;
  pk_tensor t{};
  DeviceTensor() = default;
  DeviceTensor(pk_device_t dev, pk_dtype dtype, std::vector<int64_t> shp, uint64_t bytes = 0) : shape(std::move(shp)) {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    uint64_t need = bytes ? bytes : static_cast<uint64_t>(n) * (dtype.bits / 8);
    EXPECT_EQ(pk_buffer_create(dev, need ? need : 1, &buffer), PK_OK) << last_error().message;
    pk_buffer_tensor(buffer, dtype, static_cast<int32_t>(shape.size()), shape.data(), nullptr, 0, &t);
  }
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  ~DeviceTensor() { pk_buffer_destroy(buffer); }
  void set_strides(std::vector<int64_t> s) {
    strides = std::move(s);
    t.strides = strides.data();
  }
  void upload(pk_stream_t s, const void *src, uint64_t bytes) {
    ASSERT_EQ(pk_copy_host_to_buffer(s, buffer, 0, src, bytes), PK_OK) << last_error().message;
  }
  template <typename T>
  std::vector<T> download(pk_stream_t s, size_t count) {
    std::vector<T> out(count);
    EXPECT_EQ(pk_copy_buffer_to_host(s, out.data(), buffer, 0, count * sizeof(T)), PK_OK) << last_error().message;
    EXPECT_EQ(pk_stream_synchronize(s), PK_OK) << last_error().message;
    return out;
  }
};

// A host-visible CPU tensor over `bytes` of caller memory, so that a test can see what was (not) written.
inline pk_tensor host_bytes(void *data, uint64_t bytes, const std::vector<int64_t> &shape, pk_dtype dt = f32()) {
  pk_tensor t;
  PK_STRUCT_INIT(t);
  t.data = data;
  t.storage_bytes = bytes;
  t.device_type = PK_DEVICE_CPU;
  t.device_id = 0;
  t.dtype = dt;
  t.ndim = static_cast<int32_t>(shape.size());
  t.shape = shape.data();
  t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
  return t;
}
// The call returned `want`, and the thread's last error says so, names argument `arg` and contains every part.
inline void expect_error(pk_status got, pk_status want, int32_t arg, const std::vector<std::string> &parts) {
  EXPECT_EQ(got, want);
  pk_error_info e = last_error();
  EXPECT_EQ(e.status, want) << e.message;
  EXPECT_EQ(e.arg_index, arg) << e.message;
  for (const auto &p : parts)
    EXPECT_NE(std::string(e.message).find(p), std::string::npos) << "'" << p << "' in: " << e.message;
}

class RuntimeTest : public ::testing::Test {
 protected:
  void open(uint32_t flags = 0) {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = flags | PK_RUNTIME_NO_DISCOVERY;
    ASSERT_EQ(pk_runtime_create(&o, &rt), PK_OK);
    ASSERT_EQ(pk_runtime_load_plugin(rt, cpu_plugin().c_str(), &cpu), PK_OK) << last_error().message;
    ASSERT_EQ(pk_backend_device(cpu, 0, &cpu_dev), PK_OK);
    ASSERT_EQ(pk_stream_create(cpu_dev, &cpu_stream), PK_OK);
  }
  void open_sim(const char *name = "primkit_backend_sim") {
    ASSERT_EQ(pk_runtime_load_plugin(rt, plugin(name).c_str(), &sim), PK_OK) << last_error().message;
    ASSERT_EQ(pk_backend_device(sim, 0, &sim_dev), PK_OK);
    ASSERT_EQ(pk_stream_create(sim_dev, &sim_stream), PK_OK);
  }
  void SetUp() override { open(); }
  void TearDown() override {
    pk_stream_destroy(cpu_stream);
    pk_stream_destroy(sim_stream);
    pk_runtime_destroy(rt);
  }
  pk_runtime_t rt = nullptr;
  pk_backend_t cpu = nullptr, sim = nullptr;
  pk_device_t cpu_dev = nullptr, sim_dev = nullptr;
  pk_stream_t cpu_stream = nullptr, sim_stream = nullptr;
};

// A graph under construction and the executable compiled from it, freed after each test.
class GraphTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    ASSERT_EQ(pk_graph_create(&g), PK_OK);
  }
  void TearDown() override {
    pk_executable_destroy(exe);
    pk_graph_destroy(g);
    RuntimeTest::TearDown();
  }
  uint32_t input(std::vector<int64_t> shape) {
    uint32_t v = 0;
    EXPECT_EQ(pk_graph_add_input(g, f32(), static_cast<int32_t>(shape.size()), shape.data(), &v), PK_OK);
    return v;
  }
  uint32_t node(uint32_t op, std::vector<uint32_t> ins, const void *attrs = nullptr) {
    uint32_t out = 0;
    EXPECT_EQ(pk_graph_add_node(g, op, ins.data(), static_cast<uint32_t>(ins.size()), attrs, &out, 1), PK_OK)
        << last_error().message;
    return out;
  }
  void stats(uint32_t &fk, uint32_t &fn, uint32_t &sn) { ASSERT_EQ(pk_executable_stats(exe, &fk, &fn, &sn), PK_OK); }
  pk_graph_t g = nullptr;
  pk_executable_t exe = nullptr;
};

// Distance in units in the last place between two floats (0 if both NaN).
inline int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(static_cast<int64_t>(ia) - ib);
}

// A capability query of `op` over the given tensors and attributes (see pk_device_query_op).
inline pk_op_query op_query(uint32_t op, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                            uint32_t num_outputs, const void *attrs = nullptr) {
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = op;
  q.num_inputs = num_inputs;
  q.inputs = inputs;
  q.num_outputs = num_outputs;
  q.outputs = outputs;
  q.attrs = attrs;
  return q;
}

}  // namespace pk::test
