// The CPU backend's fused kernels (backends/cpu/cpu_fusion.cpp, LLVM JIT) through the runtime's graph API, on
// the test plugin "cpu-fusion-test" (the CPU plugin plus those hooks): values against plain loops, dense and
// strided graph inputs, a chain closed by a reduction, a region the generator declines, and the compile cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "primkit/codegen.hpp"
#include "primkit/primkit.h"
#include "row_offer.hpp"

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

// Python scalars reach a graph as a 0-d full broadcast to the element shape (the bridge's form of 0.5 * x). Those
// constants join the run as fills instead of splitting it into kernels around materialized broadcasts: y = 0.5 x +
// 0.044715 x^3 (GELU's tanh argument) is one kernel with no single nodes, and also stores the broadcast 0.044715
// when the graph asks for it. Values against f32 arithmetic in the same order (each op rounds once).
TEST_F(CpuFusion, ScalarConstantsJoinTheRunAsFills) {
  const int64_t rows = 37, cols = 1001;
  const int64_t shape[2] = {rows, cols};
  const size_t n = static_cast<size_t>(rows * cols);
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  pk_graph_t g;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  uint32_t x, c[2], b[2];
  pk_graph_add_input(g, f32, 2, shape, &x);
  const double value[2] = {0.5, 0.044715};
  for (int k = 0; k < 2; ++k) {
    pk_attrs_full fa = PK_ATTRS_FULL_INIT;
    fa.value = value[k];
    fa.dtype = PK_DTYPE_F32;
    ASSERT_EQ(pk_graph_add_node(g, PK_OP_FULL, nullptr, 0, &fa, &c[k], 1), PK_OK) << last_error().message;
    pk_attrs_broadcast_in_dim ba = PK_ATTRS_BROADCAST_IN_DIM_INIT;
    ba.num_shape = 2;
    ba.shape[0] = rows;
    ba.shape[1] = cols;
    ASSERT_EQ(pk_graph_add_node(g, PK_OP_BROADCAST_IN_DIM, &c[k], 1, &ba, &b[k], 1), PK_OK) << last_error().message;
  }
  uint32_t half_x, xx, xxx, kxxx, y;
  uint32_t in0[2] = {b[0], x}, in1[2] = {x, x}, in3[2] = {b[1], 0}, in4[2] = {0, 0};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in0, 2, nullptr, &half_x, 1), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in1, 2, nullptr, &xx, 1), PK_OK);
  uint32_t in2[2] = {xx, x};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in2, 2, nullptr, &xxx, 1), PK_OK);
  in3[1] = xxx;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in3, 2, nullptr, &kxxx, 1), PK_OK);
  in4[0] = half_x;
  in4[1] = kxxx;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_ADD, in4, 2, nullptr, &y, 1), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, y), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, b[1]), PK_OK);
  pk_executable_t exe;
  ASSERT_EQ(pk_graph_compile(g, dev_, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fused = 0, nodes = 0, singles = 0;
  pk_executable_stats(exe, &fused, &nodes, &singles);
  EXPECT_EQ(fused, 1u);
  EXPECT_EQ(nodes, 9u);  // 2 fulls, 2 broadcasts, 4 muls, 1 add
  EXPECT_EQ(singles, 0u);
  pk_buffer_t bx, by, bk;
  float *xp = alloc(n, bx), *yp = alloc(n, by), *kp = alloc(n, bk);
  for (size_t i = 0; i < n; ++i) xp[i] = 0.013f * static_cast<float>(static_cast<int64_t>(i % 1009) - 504);
  xp[3] = -0.0f;
  xp[4] = INFINITY;
  pk_tensor t[3];
  pk_buffer_tensor(bx, f32, 2, shape, nullptr, 0, &t[0]);
  pk_buffer_tensor(by, f32, 2, shape, nullptr, 0, &t[1]);
  pk_buffer_tensor(bk, f32, 2, shape, nullptr, 0, &t[2]);
  ASSERT_EQ(pk_executable_run(exe, stream_, t, 1, &t[1], 2), PK_OK) << last_error().message;
  const float k = 0.044715f;
  for (size_t i = 0; i < n; ++i) {
    const float v = xp[i], want = 0.5f * v + k * ((v * v) * v);
    ASSERT_EQ(yp[i], want) << i;
    ASSERT_EQ(std::signbit(yp[i]), std::signbit(want)) << i;
    ASSERT_EQ(kp[i], k) << i;
  }
  pk_executable_destroy(exe);
}

// Outputs of 16 MiB and more are stored with non-temporal stores (the streaming entry): items are peeled until the
// output is 64-byte aligned, then whole aligned vectors go straight to memory. Every element is checked against a
// reference computed in double and rounded to f32 once per op (exact: a product or sum of two floats is exact in
// double here), with the output and the inputs at several element offsets, so the peel, the aligned loop and the
// tail each cover elements.
TEST_F(CpuFusion, LargeOutputsStreamPastTheCacheAtAnyElementOffset) {
  const int64_t n = (int64_t{16} << 20) + 37;
  uint32_t r;
  pk_graph_t g = relu_fma_graph(1, n, false, r);
  pk_executable_t exe;
  ASSERT_EQ(pk_graph_compile(g, dev_, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  const size_t cap = static_cast<size_t>(n) + 16;
  pk_buffer_t bx, by, bz, bo;
  float *x = alloc(cap, bx), *y = alloc(cap, by), *z = alloc(cap, bz), *o = alloc(cap, bo);
  for (size_t i = 0; i < cap; ++i) {
    x[i] = 0.37f * static_cast<float>(static_cast<int64_t>(i % 97) - 48);
    y[i] = 1.0f / static_cast<float>(i % 13 + 1);
    z[i] = 0.001f * static_cast<float>(static_cast<int64_t>(i % 1003) - 500);
  }
  const int64_t shape[2] = {1, n};
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  for (int64_t out_off : {0, 1, 3, 15}) {
    const int64_t in_off = (out_off * 5) % 16;
    pk_tensor t[4];
    pk_buffer_tensor(bx, f32, 2, shape, nullptr, static_cast<uint64_t>(in_off) * 4, &t[0]);
    pk_buffer_tensor(by, f32, 2, shape, nullptr, static_cast<uint64_t>(in_off) * 4, &t[1]);
    pk_buffer_tensor(bz, f32, 2, shape, nullptr, 0, &t[2]);
    pk_buffer_tensor(bo, f32, 2, shape, nullptr, static_cast<uint64_t>(out_off) * 4, &t[3]);
    std::fill(o, o + cap, -7.0f);
    ASSERT_EQ(pk_executable_run(exe, stream_, t, 3, &t[3], 1), PK_OK) << last_error().message;
    for (int64_t i = 0; i < n; ++i) {
      const double xy = static_cast<float>(static_cast<double>(x[i + in_off]) * y[i + in_off]);
      const float v = static_cast<float>(xy + z[i]);
      const float want = v > 0.0f ? v : 0.0f;
      ASSERT_EQ(o[i + out_off], want) << "output offset " << out_off << ", element " << i;
    }
    // Nothing before or after the output's elements was written.
    for (int64_t i = 0; i < out_off; ++i) ASSERT_EQ(o[i], -7.0f) << "before, offset " << out_off;
    for (size_t i = static_cast<size_t>(n + out_off); i < cap; ++i)
      ASSERT_EQ(o[i], -7.0f) << "after, offset " << out_off;
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
  // A scan is a kernel of its own, never part of a fused run: [mul, cumsum, add] offers no run of two fusible nodes.
  pk_graph_t g;
  pk_dtype f32 = PK_DTYPE_F32_DESC;
  const int64_t shape[1] = {1000};
  uint32_t x, y, a, b, c;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  pk_graph_add_input(g, f32, 1, shape, &x);
  pk_graph_add_input(g, f32, 1, shape, &y);
  uint32_t in[2] = {x, y};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &a, 1), PK_OK);
  pk_attrs_cumsum scan = PK_ATTRS_CUMSUM_INIT;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_CUMSUM, &a, 1, &scan, &b, 1), PK_OK);
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
  pk::codegen::call_jit(reinterpret_cast<pk::codegen::CpuFn>(f1), p.values(), 0, 1000);
  for (int i = 0; i < 1000; ++i) {
    const float want = static_cast<float>(std::tanh(static_cast<long double>(a[i] - b[i])));
    EXPECT_LE(std::fabs(o[i] - want), std::fabs(std::nextafter(want, 2.0f) - want)) << i;
  }
}

// --- row programs: softmax, layer_norm, rms_norm offered as their decompositions ---------------------------------

// Runs `op` (decomposed by the op table) through the fusion hook as one kernel on [rows, cols] f32 and returns the
// output; the hook must claim every node.
std::vector<float> run_row_program(const char *op, int64_t rows, int64_t cols, const void *attrs,
                                   std::vector<std::vector<float>> inputs, uint32_t *claimed_nodes) {
  pk::test::DirectPlugin plugin(PK_CPU_FUSION_SHIM);
  EXPECT_NE(plugin.api, nullptr) << plugin.error;
  if (plugin.api == nullptr) return {};
  std::vector<pk::meta::TensorType> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    pk::meta::TensorType t{};
    t.dtype = PK_DTYPE_F32;
    if (i == 0) {
      t.ndim = 2;
      t.shape[0] = rows;
      t.shape[1] = cols;
    } else {
      t.ndim = 1;
      t.shape[0] = cols;
    }
    types.push_back(t);
  }
  pk::test::Offer offer;
  std::string why;
  EXPECT_TRUE(offer.build(op, types, attrs, why)) << why;
  pk_be_kernel *kernel = nullptr;
  EXPECT_EQ(plugin.api->fusion_offer(plugin.ctx, 0, &offer.graph, &offer.claim, &kernel), PK_OK);
  *claimed_nodes = static_cast<uint32_t>(offer.num_claimed());
  EXPECT_NE(kernel, nullptr) << op << ": the hook declined the decomposition";
  if (kernel == nullptr) return {};
  EXPECT_EQ(offer.num_claimed(), offer.nodes.size());
  const int64_t shape2[2] = {rows, cols}, shape1[1] = {cols};
  std::vector<float> out(static_cast<size_t>(rows * cols), -1.0f);
  std::vector<pk_tensor> args;
  for (size_t i = 0; i < inputs.size(); ++i)
    args.push_back(
        pk::test::host_tensor(inputs[i].data(), PK_DTYPE_F32_DESC, i == 0 ? 2 : 1, i == 0 ? shape2 : shape1));
  args.push_back(pk::test::host_tensor(out.data(), PK_DTYPE_F32_DESC, 2, shape2));
  EXPECT_EQ(plugin.api->kernel_launch(plugin.stream, kernel, args.data(), static_cast<uint32_t>(args.size())), PK_OK);
  plugin.api->kernel_destroy(plugin.ctx, kernel);
  return out;
}

std::vector<float> pattern(int64_t n, int salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = 0.01f * static_cast<float>((i * 37 + salt * 11) % 601 - 300);
  return v;
}

// Relative error against a long-double reference, in units of f32 epsilon.
void expect_close(const std::vector<float> &got, const std::vector<long double> &want, double eps_units) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const long double tol = eps_units * 0x1p-23L * std::max<long double>(std::fabs(want[i]), 1e-3L);
    ASSERT_LE(std::fabs(static_cast<long double>(got[i]) - want[i]), tol) << "element " << i;
  }
}

TEST(CpuFusionRows, SoftmaxDecompositionIsOneKernel) {
  const int64_t rows = 7, cols = 300;
  std::vector<float> x = pattern(rows * cols, 1);
  x[5] = 80.0f;  // a large logit: the max subtraction must happen first
  pk_attrs_softmax a = PK_ATTRS_SOFTMAX_INIT;
  a.dim = 1;
  uint32_t claimed = 0;
  std::vector<float> got = run_row_program("softmax", rows, cols, &a, {x}, &claimed);
  EXPECT_EQ(claimed, 7u);  // amax, broadcast, sub, exp, sum, broadcast, div
  std::vector<long double> want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    long double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max<long double>(m, x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<long double>(x[r * cols + c]) - m);
    for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = std::exp(static_cast<long double>(x[r * cols + c]) - m) / s;
  }
  expect_close(got, want, 4);
}

TEST(CpuFusionRows, LayerNormDecompositionIsOneKernel) {
  const int64_t rows = 5, cols = 96;
  std::vector<float> x = pattern(rows * cols, 2), w = pattern(cols, 3), b = pattern(cols, 4);
  pk_attrs_layer_norm a = PK_ATTRS_LAYER_NORM_INIT;
  uint32_t claimed = 0;
  std::vector<float> got = run_row_program("layer_norm", rows, cols, &a, {x, w, b}, &claimed);
  EXPECT_GT(claimed, 10u);
  std::vector<long double> want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    long double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    var /= cols;
    const long double rstd = 1.0L / std::sqrt(var + static_cast<long double>(a.eps));
    for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = (x[r * cols + c] - mean) * rstd * w[c] + b[c];
  }
  expect_close(got, want, 64);  // cancellation in y*w + b; the composite's bound is 8 ulp of the decomposition
}

TEST(CpuFusionRows, RmsNormDecompositionIsOneKernel) {
  const int64_t rows = 4, cols = 128;
  std::vector<float> x = pattern(rows * cols, 5), w = pattern(cols, 6);
  pk_attrs_rms_norm a = PK_ATTRS_RMS_NORM_INIT;
  uint32_t claimed = 0;
  std::vector<float> got = run_row_program("rms_norm", rows, cols, &a, {x, w}, &claimed);
  EXPECT_GT(claimed, 5u);
  std::vector<long double> want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    long double ms = 0;
    for (int64_t c = 0; c < cols; ++c) ms += static_cast<long double>(x[r * cols + c]) * x[r * cols + c];
    ms /= cols;
    const long double rr = 1.0L / std::sqrt(ms + static_cast<long double>(a.eps));
    for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = x[r * cols + c] * rr * w[c];
  }
  expect_close(got, want, 8);
}

// A row program with two independent reductions of x (amax and sum) and an exp needed by two passes:
// out = exp(x - max) / sum(exp(x - max)) + sum(x).
pk::codegen::Region two_reductions_region() {
  pk::codegen::Region r;
  r.dtypes.assign(8, PK_DTYPE_F32);
  r.kinds = {pk::codegen::kElem, pk::codegen::kRow, pk::codegen::kRow,  pk::codegen::kElem,
             pk::codegen::kElem, pk::codegen::kRow, pk::codegen::kElem, pk::codegen::kElem};
  r.inputs = {0};
  r.nodes = {pk::codegen::Node{PK_OP_AMAX, {0}, 1, 0, 0},   pk::codegen::Node{PK_OP_SUM, {0}, 2, 0, 0},
             pk::codegen::Node{PK_OP_SUB, {0, 1}, 3, 0, 0}, pk::codegen::Node{PK_OP_EXP, {3}, 4, 0, 0},
             pk::codegen::Node{PK_OP_SUM, {4}, 5, 0, 0},    pk::codegen::Node{PK_OP_DIV, {4, 5}, 6, 0, 0},
             pk::codegen::Node{PK_OP_ADD, {6, 2}, 7, 0, 0}};
  r.outputs = {7};
  return r;
}

// Basic blocks of the IR named `name` or `name` plus a number (LLVM numbers repeated names).
size_t count_blocks(const std::string &ir, const std::string &name) {
  size_t n = 0;
  for (size_t pos = 0; (pos = ir.find("\n" + name, pos)) != std::string::npos; ++pos) {
    const size_t end = ir.find_first_not_of("0123456789", pos + 1 + name.size());
    if (end != std::string::npos && ir[end] == ':') ++n;
  }
  return n;
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t pos = 0; (pos = text.find(what, pos)) != std::string::npos; pos += what.size()) ++n;
  return n;
}

TEST(CpuFusionRows, IndependentReductionsShareAPassAndExpIsComputedOnce) {
  const pk::codegen::KernelSpec dense{two_reductions_region(), 0};
  std::string ir, err;
  ASSERT_TRUE(pk::codegen::emit_ir(dense, "cpu", ir, err)) << err;
  // Passes over a row: {amax, sum(x)}, {sum(exp)}, the output pass — each one column loop.
  EXPECT_EQ(count_blocks(ir, "cols"), 3u) << ir;
  // exp (one llvm.rint per evaluation) is evaluated in the sum pass only: stored in out, then scaled in place.
  EXPECT_EQ(count(ir, "call double @llvm.rint.f64"), 1u) << ir;
  // The strided variant recomputes it instead (a strided output may reach one element from several places).
  std::string strided;
  ASSERT_TRUE(pk::codegen::emit_ir(pk::codegen::KernelSpec{two_reductions_region(), 2}, "cpu", strided, err)) << err;
  EXPECT_EQ(count(strided, "call double @llvm.rint.f64"), 2u);
}

TEST_F(CpuFusion, TwoReductionRowProgramThroughTheGraphApi) {
  const int64_t rows = 6, cols = 37;  // not a multiple of the vector width
  const int64_t shape[2] = {rows, cols};
  pk_graph_t g;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  uint32_t x = 0;
  ASSERT_EQ(pk_graph_add_input(g, PK_DTYPE_F32_DESC, 2, shape, &x), PK_OK);
  auto add = [&](uint32_t op, std::vector<uint32_t> in, const void *attrs) {
    uint32_t v = 0;
    EXPECT_EQ(pk_graph_add_node(g, op, in.data(), static_cast<uint32_t>(in.size()), attrs, &v, 1), PK_OK)
        << last_error().message;
    return v;
  };
  pk_attrs_sum red = PK_ATTRS_SUM_INIT;
  red.num_dims = 1;
  red.dims[0] = 1;
  pk_attrs_broadcast_in_dim bc = PK_ATTRS_BROADCAST_IN_DIM_INIT;
  bc.num_shape = 2;
  bc.shape[0] = rows;
  bc.shape[1] = cols;
  bc.num_broadcast_dimensions = 1;
  const uint32_t m = add(PK_OP_AMAX, {x}, &red), s = add(PK_OP_SUM, {x}, &red);
  const uint32_t e = add(PK_OP_EXP, {add(PK_OP_SUB, {x, add(PK_OP_BROADCAST_IN_DIM, {m}, &bc)}, nullptr)}, nullptr);
  const uint32_t q = add(PK_OP_DIV, {e, add(PK_OP_BROADCAST_IN_DIM, {add(PK_OP_SUM, {e}, &red)}, &bc)}, nullptr);
  const uint32_t out = add(PK_OP_ADD, {q, add(PK_OP_BROADCAST_IN_DIM, {s}, &bc)}, nullptr);
  ASSERT_EQ(pk_graph_mark_output(g, out), PK_OK);
  pk_executable_t exe;
  ASSERT_EQ(pk_graph_compile(g, dev_, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fk = 0, fn = 0, sn = 0;
  pk_executable_stats(exe, &fk, &fn, &sn);
  EXPECT_EQ(fk, 1u);
  EXPECT_EQ(fn, 10u);
  EXPECT_EQ(sn, 0u);
  std::vector<float> hx = pattern(rows * cols, 7);
  hx[40] = 30.0f;
  pk_buffer_t bx, bo;
  float *px = alloc(hx.size(), bx), *po = alloc(hx.size(), bo);
  std::copy(hx.begin(), hx.end(), px);
  pk_tensor tx, to;
  pk_buffer_tensor(bx, PK_DTYPE_F32_DESC, 2, shape, nullptr, 0, &tx);
  pk_buffer_tensor(bo, PK_DTYPE_F32_DESC, 2, shape, nullptr, 0, &to);
  ASSERT_EQ(pk_executable_run(exe, stream_, &tx, 1, &to, 1), PK_OK) << last_error().message;
  ASSERT_EQ(pk_stream_synchronize(stream_), PK_OK);
  pk_executable_destroy(exe);
  std::vector<long double> want(hx.size());
  for (int64_t r = 0; r < rows; ++r) {
    long double mx = -INFINITY, se = 0, sx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      mx = std::max<long double>(mx, hx[r * cols + c]);
      sx += hx[r * cols + c];
    }
    // sum(x) is rounded to f32 before the add, as the graph computes it.
    const float sxf = static_cast<float>(sx);
    for (int64_t c = 0; c < cols; ++c) se += std::exp(static_cast<long double>(hx[r * cols + c]) - mx);
    for (int64_t c = 0; c < cols; ++c)
      want[r * cols + c] = std::exp(static_cast<long double>(hx[r * cols + c]) - mx) / se + sxf;
  }
  expect_close(std::vector<float>(po, po + hx.size()), want, 4);
}

// --- windows of several shapes, and launches that do not match the plan ----------------------------------------

// batch_norm's decomposition mixes per-channel [C] values with [N, C, H, W] ones (joined by broadcast_in_dim over
// axis 1). The generator's elementwise region has one element space indexed linearly, so the run it claims must
// read and write values of exactly the element shape it reports (a reduction's output excepted).
TEST(CpuFusionRegions, ClaimedRunsNeverSpanTwoShapes) {
  auto type = [](std::vector<int64_t> shape) {
    pk::meta::TensorType t{};
    t.dtype = PK_DTYPE_F32;
    t.ndim = static_cast<int32_t>(shape.size());
    std::copy(shape.begin(), shape.end(), t.shape);
    return t;
  };
  for (const std::vector<int64_t> &x : {std::vector<int64_t>{2, 3, 4, 5}, std::vector<int64_t>{1, 8, 4, 4}}) {
    const std::vector<int64_t> c = {x[1]};
    pk::test::Offer offer;
    std::string why;
    pk_attrs_batch_norm a = PK_ATTRS_BATCH_NORM_INIT;
    ASSERT_TRUE(offer.build("batch_norm", {type(x), type(c), type(c), type(c), type(c)}, &a, why)) << why;
    pk::codegen::Region region;
    int64_t shape[PK_MAX_RANK];
    int32_t ndim = 0;
    if (!pk::codegen::region_from_subgraph(offer.graph, offer.claimed.data(), region, shape, ndim, why)) continue;
    auto has_element_shape = [&](uint32_t v) {
      const pk_graph_value &gv = offer.graph.values[v];
      return gv.ndim == ndim && std::equal(gv.shape, gv.shape + ndim, shape);
    };
    size_t claimed = 0;
    for (uint32_t i = 0; i < offer.graph.num_nodes; ++i) {
      if (!offer.claimed[i]) continue;
      ++claimed;
      const pk_graph_node &n = offer.graph.nodes[i];
      for (uint32_t k = 0; k < n.num_inputs; ++k) EXPECT_TRUE(has_element_shape(n.inputs[k])) << "node " << i;
      EXPECT_TRUE(has_element_shape(n.outputs[0])) << "node " << i;
    }
    EXPECT_GE(claimed, 2u);
  }
}

// What the runtime passes a fused kernel is fixed by the claim; a backend must still refuse a launch whose
// arguments differ from what it planned (count, dtype, or the shape of a per-element, per-row or per-column value)
// with an error instead of indexing past the tensors. The real CPU plugin (it installs the same hooks as the shim)
// so that its get_last_error sees the messages the hooks set.
TEST(CpuFusionRegions, LaunchWithArgumentsOtherThanPlannedIsAnError) {
  const int64_t rows = 3, cols = 16;
  pk::test::DirectPlugin plugin((std::string(PK_PLUGIN_DIR) + "/libprimkit_backend_cpu.so").c_str());
  ASSERT_NE(plugin.api, nullptr) << plugin.error;
  pk::meta::TensorType tx{}, tc{};
  tx.dtype = tc.dtype = PK_DTYPE_F32;
  tx.ndim = 2;
  tx.shape[0] = rows;
  tx.shape[1] = cols;
  tc.ndim = 1;
  tc.shape[0] = cols;
  pk::test::Offer offer;
  std::string why;
  pk_attrs_layer_norm attrs = PK_ATTRS_LAYER_NORM_INIT;
  ASSERT_TRUE(offer.build("layer_norm", {tx, tc, tc}, &attrs, why)) << why;
  pk_be_kernel *kernel = nullptr;
  ASSERT_EQ(plugin.api->fusion_offer(plugin.ctx, 0, &offer.graph, &offer.claim, &kernel), PK_OK);
  ASSERT_NE(kernel, nullptr) << "layer_norm's decomposition is one row program";
  // Storage large enough for every wrong shape below: a refused launch must fail before touching any of it.
  std::vector<float> x(4 * rows * cols, 0.5f), w(4 * cols, 1.0f), b(4 * cols, 0.0f), out(4 * rows * cols, -1.0f);
  const int64_t s_x[2] = {rows, cols}, s_c[1] = {cols};
  const pk_dtype f32 = PK_DTYPE_F32_DESC;
  auto args = [&]() {
    return std::vector<pk_tensor>{
        pk::test::host_tensor(x.data(), f32, 2, s_x), pk::test::host_tensor(w.data(), f32, 1, s_c),
        pk::test::host_tensor(b.data(), f32, 1, s_c), pk::test::host_tensor(out.data(), f32, 2, s_x)};
  };
  auto launch = [&](const std::vector<pk_tensor> &a) {
    return plugin.api->kernel_launch(plugin.stream, kernel, a.data(), static_cast<uint32_t>(a.size()));
  };
  auto message = [&]() {
    pk_error_info e;
    e.struct_size = sizeof e;
    plugin.api->get_last_error(plugin.ctx, &e);
    return std::string(e.message);
  };
  ASSERT_EQ(launch(args()), PK_OK) << message();
  std::vector<pk_tensor> a = args();
  a.pop_back();
  EXPECT_EQ(launch(a), PK_ERROR_INVALID_ARGUMENT) << "an argument missing";
  const int64_t more_rows[2] = {2 * rows, cols}, wider[2] = {rows, 2 * cols}, batched[3] = {1, rows, cols},
                long_column[1] = {2 * cols}, column_as_rows[2] = {rows, cols};
  a = args();
  a[0].shape = more_rows;
  EXPECT_EQ(launch(a), PK_ERROR_INVALID_ARGUMENT) << "x with more rows";
  EXPECT_NE(message().find("argument 0"), std::string::npos) << message();
  a = args();
  a[3].shape = wider;
  EXPECT_EQ(launch(a), PK_ERROR_INVALID_ARGUMENT) << "an output of other columns";
  a = args();
  a[0].ndim = 3;
  a[0].shape = batched;
  EXPECT_EQ(launch(a), PK_ERROR_INVALID_ARGUMENT) << "x of another rank";
  a = args();
  a[1].shape = long_column;
  EXPECT_EQ(launch(a), PK_ERROR_INVALID_ARGUMENT) << "a per-column weight of other length";
  a = args();
  a[2].ndim = 2;
  a[2].shape = column_as_rows;
  EXPECT_EQ(launch(a), PK_ERROR_INVALID_ARGUMENT) << "a per-column bias with the element shape";
  a = args();
  a[3].dtype = pk_dtype PK_DTYPE_F64_DESC;
  EXPECT_EQ(launch(a), PK_ERROR_INVALID_ARGUMENT) << "an output of another dtype";
  EXPECT_NE(message().find("f64"), std::string::npos) << message();
  plugin.api->kernel_destroy(plugin.ctx, kernel);
}

}  // namespace
