// The CPU backend's fused kernels (backends/cpu/cpu_fusion.cpp, LLVM JIT) through the runtime's graph API, on
// the test plugin "cpu-fusion-test" (the CPU plugin plus those hooks): values against plain loops, dense and
// strided graph inputs, a chain closed by a reduction, a region the generator declines, and the compile cache.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "primkit/codegen.hpp"
#include "primkit/primkit.h"

namespace {

pk_error_info last_error() {
  pk_error_info e;
  e.struct_size = sizeof e;
  pk_get_last_error(&e);
  return e;
}

class CpuFusion : public ::testing::Test {
 protected:
  void SetUp() override {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    ASSERT_EQ(pk_runtime_create(&o, &rt_), PK_OK);
    ASSERT_EQ(pk_runtime_load_plugin(rt_, PK_CPU_FUSION_SHIM, &be_), PK_OK) << last_error().message;
    ASSERT_EQ(pk_backend_device(be_, 0, &dev_), PK_OK);
    ASSERT_EQ(pk_stream_create(dev_, &stream_), PK_OK);
  }
  void TearDown() override {
    for (auto b : bufs_) pk_buffer_destroy(b);  // before the runtime that owns them
    pk_stream_destroy(stream_);
    pk_runtime_destroy(rt_);
  }
  // Host-visible device memory: the CPU backend's buffers are plain host memory.
  float *alloc(size_t n, pk_buffer_t &b) {
    EXPECT_EQ(pk_buffer_create(dev_, n * 4, &b), PK_OK);
    bufs_.push_back(b);
    return static_cast<float *>(pk_buffer_data(b));
  }
  pk_runtime_t rt_ = nullptr;
  pk_backend_t be_ = nullptr;
  pk_device_t dev_ = nullptr;
  pk_stream_t stream_ = nullptr;
  std::vector<pk_buffer_t> bufs_;
};

// relu(x * y + z) over [rows, cols]; optionally closed by sum over the last axis.
pk_graph_t relu_fma_graph(int64_t rows, int64_t cols, bool with_sum, uint32_t &relu_value) {
  pk_graph_t g;
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  const int64_t shape[2] = {rows, cols};
  uint32_t x, y, z, xy, s, r, total;
  EXPECT_EQ(pk_graph_create(&g), PK_OK);
  pk_graph_add_input(g, f32, 2, shape, &x);
  pk_graph_add_input(g, f32, 2, shape, &y);
  pk_graph_add_input(g, f32, 2, shape, &z);
  uint32_t a[2] = {x, y};
  EXPECT_EQ(pk_graph_add_node(g, PK_OP_MUL, a, 2, nullptr, &xy, 1), PK_OK);
  uint32_t b[2] = {xy, z};
  EXPECT_EQ(pk_graph_add_node(g, PK_OP_ADD, b, 2, nullptr, &s, 1), PK_OK);
  EXPECT_EQ(pk_graph_add_node(g, PK_OP_RELU, &s, 1, nullptr, &r, 1), PK_OK);
  relu_value = r;
  EXPECT_EQ(pk_graph_mark_output(g, r), PK_OK);
  if (with_sum) {
    pk_attrs_sum sa = PK_ATTRS_SUM_INIT;
    sa.num_dims = 1;
    sa.dims[0] = 1;
    EXPECT_EQ(pk_graph_add_node(g, PK_OP_SUM, &r, 1, &sa, &total, 1), PK_OK);
    EXPECT_EQ(pk_graph_mark_output(g, total), PK_OK);
  }
  return g;
}

float relu_fma(float x, float y, float z) {
  float v = x * y;
  v = v + z;
  return v > 0.0f || std::isnan(v) ? v : 0.0f;
}

TEST_F(CpuFusion, ReluFmaChainIsOneKernelWithExactValues) {
  const int64_t rows = 300, cols = 1001;  // > one parallel chunk, odd tail for the vector loop
  const size_t n = static_cast<size_t>(rows * cols);
  uint32_t r;
  pk_graph_t g = relu_fma_graph(rows, cols, false, r);
  pk_executable_t exe;
  ASSERT_EQ(pk_graph_compile(g, dev_, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fused = 0, nodes = 0, singles = 0;
  pk_executable_stats(exe, &fused, &nodes, &singles);
  EXPECT_EQ(fused, 1u);
  EXPECT_EQ(nodes, 4u);  // mul, add, fill, maximum
  EXPECT_EQ(singles, 0u);
  pk_buffer_t bx, by, bz, bo;
  float *x = alloc(n, bx), *y = alloc(n, by), *z = alloc(n, bz), *o = alloc(n, bo);
  for (size_t i = 0; i < n; ++i) {
    x[i] = 0.37f * static_cast<float>(static_cast<int64_t>(i % 97) - 48);
    y[i] = 1.0f / static_cast<float>(i % 13 + 1);
    z[i] = 0.001f * static_cast<float>(static_cast<int64_t>(i % 1003) - 500);
  }
  x[5] = NAN;
  x[6] = -0.0f;
  const int64_t shape[2] = {rows, cols};
  pk_tensor t[4];
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  pk_buffer_tensor(bx, f32, 2, shape, nullptr, 0, &t[0]);
  pk_buffer_tensor(by, f32, 2, shape, nullptr, 0, &t[1]);
  pk_buffer_tensor(bz, f32, 2, shape, nullptr, 0, &t[2]);
  pk_buffer_tensor(bo, f32, 2, shape, nullptr, 0, &t[3]);
  ASSERT_EQ(pk_executable_run(exe, stream_, t, 3, &t[3], 1), PK_OK) << last_error().message;
  for (size_t i = 0; i < n; ++i) {
    const float want = relu_fma(x[i], y[i], z[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(o[i])) << i;
    } else {
      ASSERT_EQ(o[i], want) << i;
      ASSERT_EQ(std::signbit(o[i]), std::signbit(want)) << i;
    }
  }
  // A transposed view of x (strides {1, rows} over a [cols, rows] storage): the strided variant.
  std::vector<float> xt(n);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) xt[static_cast<size_t>(j * rows + i)] = x[i * cols + j];
  std::copy(xt.begin(), xt.end(), x);
  const int64_t tstrides[2] = {1, rows};
  pk_buffer_tensor(bx, f32, 2, shape, tstrides, 0, &t[0]);
  ASSERT_EQ(pk_executable_run(exe, stream_, t, 3, &t[3], 1), PK_OK) << last_error().message;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = static_cast<size_t>(i * cols + j);
      const float want = relu_fma(xt[static_cast<size_t>(j * rows + i)], y[k], z[k]);
      if (!std::isnan(want)) {
        ASSERT_EQ(o[k], want) << i << "," << j;
      }
    }
  pk_executable_destroy(exe);
}

TEST_F(CpuFusion, ChainWithTrailingSumStoresBothOutputs) {
  const int64_t rows = 257, cols = 129;
  const size_t n = static_cast<size_t>(rows * cols);
  uint32_t r;
  pk_graph_t g = relu_fma_graph(rows, cols, true, r);
  pk_executable_t exe;
  ASSERT_EQ(pk_graph_compile(g, dev_, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fused = 0, nodes = 0, singles = 0;
  pk_executable_stats(exe, &fused, &nodes, &singles);
  EXPECT_EQ(fused, 1u);
  EXPECT_EQ(nodes, 5u);
  pk_buffer_t bx, by, bz, bo, bs;
  float *x = alloc(n, bx), *y = alloc(n, by), *z = alloc(n, bz), *o = alloc(n, bo), *s = alloc(rows, bs);
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::sin(0.01f * static_cast<float>(i));
    y[i] = 2.0f;
    z[i] = -0.25f;
  }
  const int64_t shape[2] = {rows, cols}, rshape[1] = {rows};
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  pk_tensor in[3], out[2];
  pk_buffer_tensor(bx, f32, 2, shape, nullptr, 0, &in[0]);
  pk_buffer_tensor(by, f32, 2, shape, nullptr, 0, &in[1]);
  pk_buffer_tensor(bz, f32, 2, shape, nullptr, 0, &in[2]);
  pk_buffer_tensor(bo, f32, 2, shape, nullptr, 0, &out[0]);
  pk_buffer_tensor(bs, f32, 1, rshape, nullptr, 0, &out[1]);
  ASSERT_EQ(pk_executable_run(exe, stream_, in, 3, out, 2), PK_OK) << last_error().message;
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = static_cast<size_t>(i * cols + j);
      const float want = relu_fma(x[k], y[k], z[k]);
      ASSERT_EQ(o[k], want) << k;
      sum += want;
    }
    EXPECT_NEAR(s[i], sum, 1e-5 * cols * (std::fabs(sum) + 1)) << i;
  }
  pk_executable_destroy(exe);
}

TEST_F(CpuFusion, UnsupportedOpsAreLeftToSingleLaunches) {
  // sin is not compiled by the generator: the run [mul, sin, add] offers no run of two supported nodes.
  pk_graph_t g;
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  const int64_t shape[1] = {1000};
  uint32_t x, y, a, b, c;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  pk_graph_add_input(g, f32, 1, shape, &x);
  pk_graph_add_input(g, f32, 1, shape, &y);
  uint32_t in[2] = {x, y};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &a, 1), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_SIN, &a, 1, nullptr, &b, 1), PK_OK);
  uint32_t in2[2] = {b, y};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_ADD, in2, 2, nullptr, &c, 1), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, c), PK_OK);
  pk_executable_t exe;
  ASSERT_EQ(pk_graph_compile(g, dev_, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fused = 0, nodes = 0, singles = 0;
  pk_executable_stats(exe, &fused, &nodes, &singles);
  EXPECT_EQ(fused, 0u);
  EXPECT_EQ(singles, 3u);
  pk_executable_destroy(exe);
}

TEST(CpuFusionJit, CompileOnceThenCacheHits) {
  pk::codegen::Region r;
  r.dtypes = {PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32};
  r.inputs = {0, 1};
  r.nodes = {pk::codegen::Node{PK_OP_SUB, {0, 1}, 2, 0, 0}, pk::codegen::Node{PK_OP_TANH, {2}, 3, 0, 0}};
  r.outputs = {3};
  std::string err;
  double ms = -1;
  void *f1 = pk::codegen::jit_compile(pk::codegen::KernelSpec{r, 0}, pk::codegen::HostMode::cpu, err, &ms);
  ASSERT_NE(f1, nullptr) << err;
  EXPECT_GT(ms, 0.0);
  std::printf("JIT compile of sub+tanh (f32): %.1f ms\n", ms);
  void *f2 = pk::codegen::jit_compile(pk::codegen::KernelSpec{r, 0}, pk::codegen::HostMode::cpu, err, &ms);
  EXPECT_EQ(f1, f2);
  EXPECT_EQ(ms, 0.0);
  // The layout class is part of the key: the strided variant is a different kernel.
  void *f3 = pk::codegen::jit_compile(pk::codegen::KernelSpec{r, 2}, pk::codegen::HostMode::cpu, err, &ms);
  ASSERT_NE(f3, nullptr) << err;
  EXPECT_NE(f1, f3);
  // And it computes: tanh(a - b) against the long-double reference, within 1 ulp of f32.
  std::vector<float> a(1000), b(1000), o(1000);
  for (int i = 0; i < 1000; ++i) a[i] = 0.013f * static_cast<float>(i - 500), b[i] = 0.5f;
  pk::codegen::Params p({a.data(), b.data(), o.data()}, 1000, 1, {}, {});
  reinterpret_cast<pk::codegen::CpuFn>(f1)(p.values(), 0, 1000);
  for (int i = 0; i < 1000; ++i) {
    const float want = static_cast<float>(std::tanh(static_cast<long double>(a[i] - b[i])));
    EXPECT_LE(std::fabs(o[i] - want), std::fabs(std::nextafter(want, 2.0f) - want)) << i;
  }
}

}  // namespace
