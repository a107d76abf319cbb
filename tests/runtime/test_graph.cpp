// Graphs: shape inference at construction, fusion offers (the sim backend claims add/mul chains), the rest
// op by op with fallback, composites expanded when the backend lacks them.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

TEST_F(GraphTest, ElementwiseChainIsFusedByTheBackend) {
  open_sim();
  const int n = 257;
  uint32_t x = input({n}), y = input({n}), z = input({n});
  uint32_t out = node(PK_OP_ADD, {node(PK_OP_MUL, {x, y}), z});
  ASSERT_EQ(pk_graph_mark_output(g, out), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, sim_dev, nullptr, &exe), PK_OK) << last_error().message;
  uint32_t fk, fn, sn;
  stats(fk, fn, sn);
  EXPECT_EQ(fk, 1u);
  EXPECT_EQ(fn, 2u);
  EXPECT_EQ(sn, 0u);
  std::vector<float> hx(n), hy(n), hz(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = 0.5f * i;
    hy[i] = 3.0f - i;
    hz[i] = 100.0f;
  }
  DeviceTensor tx(sim_dev, f32(), {n}), ty(sim_dev, f32(), {n}), tz(sim_dev, f32(), {n}), to(sim_dev, f32(), {n});
  tx.upload(sim_stream, hx.data(), n * 4);
  ty.upload(sim_stream, hy.data(), n * 4);
  tz.upload(sim_stream, hz.data(), n * 4);
  pk_tensor ins[3] = {tx.t, ty.t, tz.t};
  ASSERT_EQ(pk_executable_run(exe, sim_stream, ins, 3, &to.t, 1), PK_OK) << last_error().message;
  auto r = to.download<float>(sim_stream, n);
  for (int i = 0; i < n; ++i) EXPECT_EQ(r[i], hx[i] * hy[i] + hz[i]) << i;
}

TEST_F(GraphTest, PartialClaimsRunTheRestOneByOneWithFallback) {
  open_sim();
  uint32_t x = input({4}), y = input({4}), z = input({4});
  uint32_t out = node(PK_OP_EXP, {node(PK_OP_ADD, {node(PK_OP_MUL, {x, y}), z})});
  ASSERT_EQ(pk_graph_mark_output(g, out), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, sim_dev, nullptr, &exe), PK_OK) << last_error().message;
  uint32_t fk, fn, sn;
  stats(fk, fn, sn);
  EXPECT_EQ(fk, 1u);
  EXPECT_EQ(fn, 2u);
  EXPECT_EQ(sn, 1u) << "exp is left to a single launch";
  float hx[4] = {0, 1, -1, 0.5f}, hy[4] = {1, 1, 2, 2}, hz[4] = {0, -1, 2, 0};
  DeviceTensor tx(sim_dev, f32(), {4}), ty(sim_dev, f32(), {4}), tz(sim_dev, f32(), {4}), to(sim_dev, f32(), {4});
  tx.upload(sim_stream, hx, 16);
  ty.upload(sim_stream, hy, 16);
  tz.upload(sim_stream, hz, 16);
  pk_tensor ins[3] = {tx.t, ty.t, tz.t};
  ASSERT_EQ(pk_executable_run(exe, sim_stream, ins, 3, &to.t, 1), PK_OK) << last_error().message;
  auto r = to.download<float>(sim_stream, 4);
  const double want[4] = {1.0, 1.0, 1.0, 2.718281828459045};  // exp(0), exp(0), exp(0), exp(1)
  for (int i = 0; i < 4; ++i) EXPECT_LE(ulp_distance(r[i], static_cast<float>(want[i])), 3) << i;
  uint64_t launches = 0;
  pk_runtime_fallback_count(rt, PK_OP_EXP, &launches, nullptr);
  EXPECT_EQ(launches, 1u);
}

TEST_F(GraphTest, FusionCanBeDisabled) {
  open_sim();
  uint32_t x = input({4}), y = input({4});
  ASSERT_EQ(pk_graph_mark_output(g, node(PK_OP_ADD, {node(PK_OP_MUL, {x, y}), x})), PK_OK);
  pk_compile_options o;
  PK_STRUCT_INIT(o);
  o.disable_fusion = 1;
  ASSERT_EQ(pk_graph_compile(g, sim_dev, &o, &exe), PK_OK);
  uint32_t fk, fn, sn;
  stats(fk, fn, sn);
  EXPECT_EQ(fk, 0u);
  EXPECT_EQ(sn, 2u);
}

TEST_F(GraphTest, CompositeSoftmaxGraphOnTheCpu) {
  uint32_t x = input({2, 3});
  pk_attrs_softmax a = PK_ATTRS_SOFTMAX_INIT;
  a.dim = 1;
  ASSERT_EQ(pk_graph_mark_output(g, node(PK_OP_SOFTMAX, {x}, &a)), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
  float hx[6] = {1, 2, 3, -1, -1, -1};
  DeviceTensor tx(cpu_dev, f32(), {2, 3}), to(cpu_dev, f32(), {2, 3});
  tx.upload(cpu_stream, hx, sizeof(hx));
  ASSERT_EQ(pk_executable_run(exe, cpu_stream, &tx.t, 1, &to.t, 1), PK_OK) << last_error().message;
  auto r = to.download<float>(cpu_stream, 6);
  const double want[6] = {0.0900305731703804, 0.2447284710547976, 0.6652409557748218, 1 / 3.0, 1 / 3.0, 1 / 3.0};
  for (int i = 0; i < 6; ++i) EXPECT_LE(ulp_distance(r[i], static_cast<float>(want[i])), 4) << i;
}

// The softmax decomposition over the last axis of x [rows, cols], built from primitives. Returns {m's broadcast,
// e, out}.
struct SoftmaxValues {
  uint32_t mb, e, out;
};

class FusionWindowTest : public GraphTest {
 protected:
  SoftmaxValues softmax(uint32_t x, int64_t rows, int64_t cols) {
    pk_attrs_amax red = PK_ATTRS_AMAX_INIT;
    red.num_dims = 1;
    red.dims[0] = 1;
    pk_attrs_broadcast_in_dim bc = PK_ATTRS_BROADCAST_IN_DIM_INIT;
    bc.num_shape = 2;
    bc.shape[0] = rows;
    bc.shape[1] = cols;
    bc.num_broadcast_dimensions = 1;
    bc.broadcast_dimensions[0] = 0;
    SoftmaxValues v{};
    v.mb = node(PK_OP_BROADCAST_IN_DIM, {node(PK_OP_AMAX, {x}, &red)}, &bc);
    v.e = node(PK_OP_EXP, {node(PK_OP_SUB, {x, v.mb})});
    const uint32_t sb = node(PK_OP_BROADCAST_IN_DIM, {node(PK_OP_SUM, {v.e}, &red)}, &bc);  // sum shares amax's layout
    v.out = node(PK_OP_DIV, {v.e, sb});
    return v;
  }
  // Whether this build's CPU backend fuses at all (its fusion hooks need the LLVM code generator).
  bool cpu_fuses() {
    pk_graph_t g2;
    EXPECT_EQ(pk_graph_create(&g2), PK_OK);
    const int64_t shape[1] = {8};
    uint32_t a = 0, b = 0, c = 0;
    pk_graph_add_input(g2, f32(), 1, shape, &a);
    uint32_t ab[2] = {a, a};
    pk_graph_add_node(g2, PK_OP_MUL, ab, 2, nullptr, &b, 1);
    uint32_t bb[2] = {b, a};
    pk_graph_add_node(g2, PK_OP_ADD, bb, 2, nullptr, &c, 1);
    pk_graph_mark_output(g2, c);
    pk_executable_t e2 = nullptr;
    EXPECT_EQ(pk_graph_compile(g2, cpu_dev, nullptr, &e2), PK_OK);
    uint32_t fk = 0;
    pk_executable_stats(e2, &fk, nullptr, nullptr);
    pk_executable_destroy(e2);
    pk_graph_destroy(g2);
    return fk > 0;
  }
};

// exp(x - max) / sum(exp(x - max)) of each row of hx, computed here in long double.
std::vector<double> softmax_rows(const std::vector<float> &hx, int rows, int cols) {
  std::vector<double> out(hx.size());
  for (int r = 0; r < rows; ++r) {
    long double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c) m = std::max<long double>(m, hx[r * cols + c]);
    for (int c = 0; c < cols; ++c) s += std::exp(static_cast<long double>(hx[r * cols + c]) - m);
    for (int c = 0; c < cols; ++c)
      out[r * cols + c] = static_cast<double>(std::exp(static_cast<long double>(hx[r * cols + c]) - m) / s);
  }
  return out;
}

TEST_F(FusionWindowTest, SoftmaxDecompositionIsOfferedAsOneWindow) {
  const bool fuses = cpu_fuses();
  const int rows = 3, cols = 5;
  uint32_t x = input({rows, cols});
  SoftmaxValues v = softmax(x, rows, cols);
  ASSERT_EQ(pk_graph_mark_output(g, v.out), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, v.e), PK_OK);  // an intermediate needed outside the window
  ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
  uint32_t fk, fn, sn;
  stats(fk, fn, sn);
  if (fuses) {
    EXPECT_EQ(fk, 1u);
    EXPECT_EQ(fn, 7u) << "amax, broadcast, sub, exp, sum, broadcast, div in one kernel";
    EXPECT_EQ(sn, 0u);
  }
  const std::vector<float> hx = {1, 2, 3, 4, 5, -1, -1, -1, -1, -1, 0.5f, -2, 10, 0, 3};
  const std::vector<double> want = softmax_rows(hx, rows, cols);
  DeviceTensor tx(cpu_dev, f32(), {rows, cols}), to(cpu_dev, f32(), {rows, cols}), te(cpu_dev, f32(), {rows, cols});
  tx.upload(cpu_stream, hx.data(), hx.size() * 4);
  pk_tensor outs[2] = {to.t, te.t};
  ASSERT_EQ(pk_executable_run(exe, cpu_stream, &tx.t, 1, outs, 2), PK_OK) << last_error().message;
  auto r = to.download<float>(cpu_stream, hx.size());
  auto e = te.download<float>(cpu_stream, hx.size());
  const float row_max[3] = {5, -1, 10};
  for (int i = 0; i < rows * cols; ++i) {
    EXPECT_LE(ulp_distance(r[i], static_cast<float>(want[i])), 4) << i;
    const float ex = static_cast<float>(std::exp(static_cast<double>(hx[i] - row_max[i / cols])));
    EXPECT_LE(ulp_distance(e[i], ex), 1) << i;
  }
  if (!fuses) GTEST_SKIP() << "values checked; this build's CPU backend does not fuse (no LLVM code generator)";
}

TEST_F(FusionWindowTest, DeclinedWindowFallsBackToSmallerOffersAndProducesEveryOutput) {
  const bool fuses = cpu_fuses();
  const int rows = 2, cols = 4;
  uint32_t x = input({rows, cols});
  SoftmaxValues v = softmax(x, rows, cols);
  // A broadcast needed outside the window: the CPU's row programs refuse to store one, so the whole window is
  // declined and the smaller offers (sub/exp/sum) follow.
  ASSERT_EQ(pk_graph_mark_output(g, v.out), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, v.mb), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
  uint32_t fk, fn, sn;
  stats(fk, fn, sn);
  EXPECT_EQ(fn + sn, 7u) << "every node runs, fused or alone";
  if (fuses) {
    EXPECT_EQ(fk, 1u);
    EXPECT_EQ(fn, 3u) << "sub, exp, sum";
  }
  const std::vector<float> hx = {0, 1, 2, 3, 8, -8, 0.25f, 0};
  const std::vector<double> want = softmax_rows(hx, rows, cols);
  DeviceTensor tx(cpu_dev, f32(), {rows, cols}), to(cpu_dev, f32(), {rows, cols}), tm(cpu_dev, f32(), {rows, cols});
  tx.upload(cpu_stream, hx.data(), hx.size() * 4);
  pk_tensor outs[2] = {to.t, tm.t};
  ASSERT_EQ(pk_executable_run(exe, cpu_stream, &tx.t, 1, outs, 2), PK_OK) << last_error().message;
  auto r = to.download<float>(cpu_stream, hx.size());
  auto m = tm.download<float>(cpu_stream, hx.size());
  for (int i = 0; i < rows * cols; ++i) {
    EXPECT_LE(ulp_distance(r[i], static_cast<float>(want[i])), 4) << i;
    EXPECT_EQ(m[i], i < cols ? 3.0f : 8.0f) << i;
  }
}

TEST_F(GraphTest, PartialClaimOfAWindowOffersTheRestAgain) {
  open_sim();
  // o = (x*y + z) + broadcast(sum(x*y + z)) * x: one window; the sim backend claims its leading mul/add, the
  // sum and broadcast run alone (CPU fallback), and the trailing mul/add is offered again and claimed.
  const int rows = 2, cols = 4;
  uint32_t x = input({rows, cols}), y = input({rows, cols}), z = input({rows, cols});
  uint32_t s = node(PK_OP_ADD, {node(PK_OP_MUL, {x, y}), z});
  pk_attrs_sum red = PK_ATTRS_SUM_INIT;
  red.num_dims = 1;
  red.dims[0] = 1;
  pk_attrs_broadcast_in_dim bc = PK_ATTRS_BROADCAST_IN_DIM_INIT;
  bc.num_shape = 2;
  bc.shape[0] = rows;
  bc.shape[1] = cols;
  bc.num_broadcast_dimensions = 1;
  bc.broadcast_dimensions[0] = 0;
  uint32_t rb = node(PK_OP_BROADCAST_IN_DIM, {node(PK_OP_SUM, {s}, &red)}, &bc);
  uint32_t out = node(PK_OP_ADD, {node(PK_OP_MUL, {rb, x}), s});
  ASSERT_EQ(pk_graph_mark_output(g, out), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, sim_dev, nullptr, &exe), PK_OK) << last_error().message;
  uint32_t fk, fn, sn;
  stats(fk, fn, sn);
  EXPECT_EQ(fk, 2u);
  EXPECT_EQ(fn, 4u);
  EXPECT_EQ(sn, 2u);
  const float hx[8] = {1, 2, 3, 4, -1, 0, 1, 2}, hy[8] = {1, 1, 1, 1, 2, 2, 2, 2}, hz[8] = {0, 0, 0, 1, 1, 1, 1, 1};
  // s = {1, 2, 3, 5 | -1, 1, 3, 5}; row sums 11 and 8; out = s + sum * x.
  const float want[8] = {12, 24, 36, 49, -9, 1, 11, 21};
  DeviceTensor tx(sim_dev, f32(), {rows, cols}), ty(sim_dev, f32(), {rows, cols}), tz(sim_dev, f32(), {rows, cols}),
      to(sim_dev, f32(), {rows, cols});
  tx.upload(sim_stream, hx, sizeof hx);
  ty.upload(sim_stream, hy, sizeof hy);
  tz.upload(sim_stream, hz, sizeof hz);
  pk_tensor ins[3] = {tx.t, ty.t, tz.t};
  ASSERT_EQ(pk_executable_run(exe, sim_stream, ins, 3, &to.t, 1), PK_OK) << last_error().message;
  auto r = to.download<float>(sim_stream, 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r[i], want[i]) << i;
}

TEST_F(GraphTest, MalformedGraphsAreRefusedClearly) {
  uint32_t x = input({2, 3}), y = input({3, 2});
  uint32_t out = 0;
  uint32_t ins[2] = {x, y};
  EXPECT_EQ(pk_graph_add_node(g, PK_OP_ADD, ins, 2, nullptr, &out, 1), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error().message).find("add"), std::string::npos) << last_error().message;
  uint32_t bad[2] = {x, 42};
  EXPECT_EQ(pk_graph_add_node(g, PK_OP_ADD, bad, 2, nullptr, &out, 1), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error().message).find("value 42"), std::string::npos) << last_error().message;
  EXPECT_EQ(pk_graph_mark_output(g, 99), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_ERROR_INVALID_ARGUMENT) << "no outputs yet";
  uint32_t ok = node(PK_OP_EXP, {x});
  ASSERT_EQ(pk_graph_mark_output(g, ok), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK);
  DeviceTensor wrong(cpu_dev, f32(), {3, 2}), tout(cpu_dev, f32(), {2, 3}), ty(cpu_dev, f32(), {3, 2});
  pk_tensor run_in[2] = {wrong.t, ty.t};
  EXPECT_EQ(pk_executable_run(exe, cpu_stream, run_in, 2, &tout.t, 1), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error().message).find("graph declares f32[2,3]"), std::string::npos)
      << last_error().message;
}

// --- values computed inside the graph and broadcast over a larger shape (CPU fusion) ------------------------

// Runs `exe` on the CPU with host inputs (dense, of the given shapes) and returns its single f32 output of `out`
// elements.
std::vector<float> run_on_cpu(pk_executable_t exe, pk_device_t dev, pk_stream_t stream,
                              const std::vector<std::vector<int64_t>> &shapes,
                              const std::vector<std::vector<float>> &data, const std::vector<int64_t> &out_shape) {
  std::vector<std::unique_ptr<DeviceTensor>> ins;
  std::vector<pk_tensor> descs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    ins.push_back(std::make_unique<DeviceTensor>(dev, f32(), shapes[i]));
    ins.back()->upload(stream, data[i].data(), data[i].size() * 4);
    descs.push_back(ins.back()->t);
  }
  DeviceTensor out(dev, f32(), out_shape);
  size_t n = 1;
  for (int64_t e : out_shape) n *= static_cast<size_t>(e);
  EXPECT_EQ(pk_executable_run(exe, stream, descs.data(), static_cast<uint32_t>(descs.size()), &out.t, 1), PK_OK)
      << last_error().message;
  return out.download<float>(stream, n);
}

std::vector<float> test_values(size_t n, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = 0.37f * static_cast<float>(static_cast<int64_t>((i * 29 + salt * 13) % 23) - 11);
  return v;
}

// Row-major coordinate `axis` of element `i` of `shape`.
int64_t coordinate(int64_t i, const std::vector<int64_t> &shape, size_t axis) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  return (i / inner) % shape[axis];
}

// out = neg(x) * broadcast_in_dim(exp(s)) with s a vector along one axis of x's shape: a window whose nodes
// have two shapes. A fused kernel must not span both (it would index s and exp(s) with x's elements); the
// results are checked against a double-precision loop, with and without fusion.
TEST_F(GraphTest, BroadcastOfAComputedValueAlongAnyAxisFusesCorrectly) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  const Case cases[] = {
      {{2, 8}, 1},       {{16, 8}, 1},   {{2, 8, 4}, 1},    {{8, 4, 2}, 0},    {{4, 2, 8}, 2},
      {{1, 8, 4, 4}, 1}, {{3, 5, 7}, 1}, {{2, 3, 5, 7}, 1}, {{2, 3, 5, 7}, 2}, {{1, 1, 9}, 2},
  };
  for (const Case &c : cases) {
    for (int32_t disable_fusion : {0, 1}) {
      std::string name = "[";
      for (int64_t e : c.shape) name += std::to_string(e) + ",";
      name += "] along " + std::to_string(c.axis) + (disable_fusion ? ", unfused" : ", fused");
      SCOPED_TRACE(name);
      pk_graph_t graph = nullptr;
      ASSERT_EQ(pk_graph_create(&graph), PK_OK);
      const int64_t channels = c.shape[static_cast<size_t>(c.axis)];
      const int32_t rank = static_cast<int32_t>(c.shape.size());
      uint32_t x = 0, s = 0, nx = 0, es = 0, bs = 0, out = 0;
      ASSERT_EQ(pk_graph_add_input(graph, f32(), rank, c.shape.data(), &x), PK_OK);
      ASSERT_EQ(pk_graph_add_input(graph, f32(), 1, &channels, &s), PK_OK);
      ASSERT_EQ(pk_graph_add_node(graph, PK_OP_NEG, &x, 1, nullptr, &nx, 1), PK_OK);
      ASSERT_EQ(pk_graph_add_node(graph, PK_OP_EXP, &s, 1, nullptr, &es, 1), PK_OK);
      pk_attrs_broadcast_in_dim bc = PK_ATTRS_BROADCAST_IN_DIM_INIT;
      bc.num_shape = rank;
      std::copy(c.shape.begin(), c.shape.end(), bc.shape);
      bc.num_broadcast_dimensions = 1;
      bc.broadcast_dimensions[0] = c.axis;
      ASSERT_EQ(pk_graph_add_node(graph, PK_OP_BROADCAST_IN_DIM, &es, 1, &bc, &bs, 1), PK_OK) << last_error().message;
      const uint32_t product[2] = {nx, bs};
      ASSERT_EQ(pk_graph_add_node(graph, PK_OP_MUL, product, 2, nullptr, &out, 1), PK_OK);
      ASSERT_EQ(pk_graph_mark_output(graph, out), PK_OK);
      pk_compile_options o;
      PK_STRUCT_INIT(o);
      o.disable_fusion = disable_fusion;
      pk_executable_t e = nullptr;
      ASSERT_EQ(pk_graph_compile(graph, cpu_dev, &o, &e), PK_OK) << last_error().message;
      pk_graph_destroy(graph);
      uint32_t fk = 0, fn = 0, sn = 0;
      ASSERT_EQ(pk_executable_stats(e, &fk, &fn, &sn), PK_OK);
      EXPECT_EQ(fn + sn, 4u) << "every node runs, fused or alone";
      int64_t n = 1;
      for (int64_t d : c.shape) n *= d;
      const std::vector<float> hx = test_values(static_cast<size_t>(n), 1);
      const std::vector<float> hs = test_values(static_cast<size_t>(channels), 2);
      const std::vector<float> got = run_on_cpu(e, cpu_dev, cpu_stream, {c.shape, {channels}}, {hx, hs}, c.shape);
      pk_executable_destroy(e);
      ASSERT_EQ(got.size(), static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const size_t ch = static_cast<size_t>(coordinate(i, c.shape, static_cast<size_t>(c.axis)));
        const double want = -static_cast<double>(hx[i]) * std::exp(static_cast<double>(hs[ch]));
        // exp within a few ulp of f32, then one rounded product.
        EXPECT_LE(std::fabs(got[i] - want), 4 * 0x1p-23 * std::fabs(want)) << "element " << i;
      }
    }
  }
}

// The batch_norm composite decomposes into per-channel [C] arithmetic broadcast over [N, C, H, W] (axis 1): the
// CPU compiles that window with fusion. Checked against a double-precision loop of the op's definition, fused and
// unfused, at a small shape and at a ResNet-like one.
TEST_F(GraphTest, BatchNormCompositeFusedOnTheCpuMatchesADoubleReference) {
  for (const std::vector<int64_t> &shape : {std::vector<int64_t>{2, 3, 4, 5}, std::vector<int64_t>{2, 64, 14, 14}}) {
    for (int32_t disable_fusion : {0, 1}) {
      SCOPED_TRACE(std::to_string(shape[1]) + " channels" + (disable_fusion ? ", unfused" : ", fused"));
      const int64_t channels = shape[1], n = shape[0] * shape[1] * shape[2] * shape[3];
      pk_graph_t graph = nullptr;
      ASSERT_EQ(pk_graph_create(&graph), PK_OK);
      uint32_t in[5] = {0, 0, 0, 0, 0}, out = 0;
      ASSERT_EQ(pk_graph_add_input(graph, f32(), 4, shape.data(), &in[0]), PK_OK);
      for (int k = 1; k < 5; ++k) ASSERT_EQ(pk_graph_add_input(graph, f32(), 1, &channels, &in[k]), PK_OK);
      pk_attrs_batch_norm a = PK_ATTRS_BATCH_NORM_INIT;
      a.eps = 1e-3;
      ASSERT_EQ(pk_graph_add_node(graph, PK_OP_BATCH_NORM, in, 5, &a, &out, 1), PK_OK) << last_error().message;
      ASSERT_EQ(pk_graph_mark_output(graph, out), PK_OK);
      pk_compile_options o;
      PK_STRUCT_INIT(o);
      o.disable_fusion = disable_fusion;
      pk_executable_t e = nullptr;
      ASSERT_EQ(pk_graph_compile(graph, cpu_dev, &o, &e), PK_OK) << last_error().message;
      pk_graph_destroy(graph);
      const size_t c = static_cast<size_t>(channels);
      const std::vector<float> x = test_values(static_cast<size_t>(n), 3), mean = test_values(c, 4),
                               weight = test_values(c, 6), bias = test_values(c, 7);
      std::vector<float> var = test_values(c, 5);
      for (float &v : var) v = std::fabs(v) + 0.25f;
      const std::vector<float> got =
          run_on_cpu(e, cpu_dev, cpu_stream, {shape, {channels}, {channels}, {channels}, {channels}},
                     {x, mean, var, weight, bias}, shape);
      pk_executable_destroy(e);
      ASSERT_EQ(got.size(), static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const size_t ch = static_cast<size_t>(coordinate(i, shape, 1));
        const double scale = weight[ch] / std::sqrt(static_cast<double>(var[ch]) + a.eps);
        const double want = (x[i] - static_cast<double>(mean[ch])) * scale + bias[ch];
        // The decomposition rounds x * scale and bias - mean * scale separately: its error is relative to those
        // terms, not to their (possibly cancelling) sum.
        const double terms = std::fabs(x[i] * scale) + std::fabs(mean[ch] * scale) + std::fabs(bias[ch]);
        EXPECT_LE(std::fabs(got[i] - want), 8 * 0x1p-23 * terms) << "element " << i;
      }
    }
  }
}

}  // namespace

namespace {

// Views inside a graph are described over their input's storage instead of copied (transpose, broadcast,
// slice, reshape of a compact value); a reshape of a non-compact view still runs as a copy. Fused and
// unfused, against a plain loop.
TEST_F(GraphTest, ViewsInsideAGraphAliasTheirInputAndStayCorrect) {
  for (int32_t disable_fusion : {0, 1}) {
    SCOPED_TRACE(disable_fusion ? "unfused" : "fused");
    pk_graph_t graph = nullptr;
    ASSERT_EQ(pk_graph_create(&graph), PK_OK);
    const std::vector<int64_t> xs{2, 3, 4}, ss{6}, ws{4, 12}, out_shape{4, 6};
    uint32_t x = 0, s = 0, w = 0;
    ASSERT_EQ(pk_graph_add_input(graph, f32(), 3, xs.data(), &x), PK_OK);
    ASSERT_EQ(pk_graph_add_input(graph, f32(), 1, ss.data(), &s), PK_OK);
    ASSERT_EQ(pk_graph_add_input(graph, f32(), 2, ws.data(), &w), PK_OK);
    auto add = [&](uint32_t op, std::vector<uint32_t> ins, const void *attrs) {
      uint32_t o = 0;
      EXPECT_EQ(pk_graph_add_node(graph, op, ins.data(), static_cast<uint32_t>(ins.size()), attrs, &o, 1), PK_OK)
          << last_error().message;
      return o;
    };
    pk_attrs_transpose tr = PK_ATTRS_TRANSPOSE_INIT;  // [2,3,4] -> [4,2,3]
    tr.num_permutation = 3;
    tr.permutation[0] = 2, tr.permutation[1] = 0, tr.permutation[2] = 1;
    pk_attrs_reshape rs = PK_ATTRS_RESHAPE_INIT;  // of a non-compact view: a copy
    rs.num_shape = 2;
    rs.shape[0] = 4, rs.shape[1] = 6;
    pk_attrs_broadcast_in_dim bd = PK_ATTRS_BROADCAST_IN_DIM_INIT;
    bd.num_shape = 2;
    bd.shape[0] = 4, bd.shape[1] = 6;
    bd.num_broadcast_dimensions = 1;
    bd.broadcast_dimensions[0] = 1;
    pk_attrs_slice_in_dim sl = PK_ATTRS_SLICE_IN_DIM_INIT;  // w[:, 3:9]
    sl.start = 3, sl.limit = 9, sl.stride = 1, sl.dim = 1;
    uint32_t y = add(PK_OP_ADD,
                     {add(PK_OP_RESHAPE, {add(PK_OP_TRANSPOSE, {x}, &tr)}, &rs),
                      add(PK_OP_BROADCAST_IN_DIM, {add(PK_OP_EXP, {s}, nullptr)}, &bd)},
                     nullptr);
    uint32_t out = add(PK_OP_MUL, {y, add(PK_OP_SLICE_IN_DIM, {w}, &sl)}, nullptr);
    ASSERT_EQ(pk_graph_mark_output(graph, out), PK_OK);
    pk_compile_options o;
    PK_STRUCT_INIT(o);
    o.disable_fusion = disable_fusion;
    pk_executable_t e = nullptr;
    ASSERT_EQ(pk_graph_compile(graph, cpu_dev, &o, &e), PK_OK) << last_error().message;
    pk_graph_destroy(graph);
    const std::vector<float> hx = test_values(24, 11), hs = test_values(6, 12), hw = test_values(48, 13);
    const std::vector<float> got = run_on_cpu(e, cpu_dev, cpu_stream, {xs, ss, ws}, {hx, hs, hw}, out_shape);
    pk_executable_destroy(e);
    ASSERT_EQ(got.size(), 24u);
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 6; ++j) {
        // reshape of transpose: element (i, j) of [4, 6] is t[i][j / 3][j % 3] = x[j / 3][j % 3][i]
        const double t = hx[static_cast<size_t>((j / 3) * 12 + (j % 3) * 4 + i)];
        const double want =
            (t + std::exp(static_cast<double>(hs[static_cast<size_t>(j)]))) * hw[static_cast<size_t>(i * 12 + 3 + j)];
        EXPECT_NEAR(got[static_cast<size_t>(i * 6 + j)], want, 4e-6 * (std::fabs(want) + 1)) << i << "," << j;
      }
    }
  }
}

}  // namespace

namespace {

// A compiled graph checks the caller's tensors as a launch does, fused or not: views past their storage, NULL
// data, read-only outputs and host pointers on the wrong device are refused, nothing runs.
TEST_F(GraphTest, ExecutableRunChecksTheCallersTensors) {
  const int64_t n = 4;
  uint32_t x = input({n}), y = node(PK_OP_EXP, {node(PK_OP_ADD, {x, x})});
  ASSERT_EQ(pk_graph_mark_output(g, y), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
  float a[n] = {0, 1, 2, 3}, o[n] = {7, 7, 7, 7};
  std::vector<int64_t> shape{n};
  auto host = [&](float *p) {
    pk_tensor t;
    PK_STRUCT_INIT(t);
    t.data = p;
    t.storage_bytes = sizeof(float) * n;
    t.device_type = PK_DEVICE_CPU;
    t.dtype = f32();
    t.ndim = 1;
    t.shape = shape.data();
    t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
    return t;
  };
  pk_tensor in = host(a), out = host(o);
  in.storage_bytes = 4;  // one element of storage for a four-element view
  EXPECT_EQ(pk_executable_run(exe, cpu_stream, &in, 1, &out, 1), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error().message).find("storage_bytes"), std::string::npos) << last_error().message;
  in = host(nullptr);
  EXPECT_EQ(pk_executable_run(exe, cpu_stream, &in, 1, &out, 1), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error().message).find("NULL"), std::string::npos) << last_error().message;
  in = host(a);
  out.flags |= PK_TENSOR_FLAG_READ_ONLY;
  EXPECT_EQ(pk_executable_run(exe, cpu_stream, &in, 1, &out, 1), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error().message).find("read-only"), std::string::npos) << last_error().message;
  EXPECT_EQ(o[0], 7.0f) << "nothing ran";
  out = host(o);
  ASSERT_EQ(pk_executable_run(exe, cpu_stream, &in, 1, &out, 1), PK_OK) << last_error().message;
  for (int i = 0; i < n; ++i) EXPECT_NEAR(o[i], std::exp(2.0 * a[i]), 1e-5 * std::exp(2.0 * a[i]));
}

}  // namespace

namespace {

pk_tensor host_view(float *p, uint64_t elements, const std::vector<int64_t> &shape, const int64_t *strides = nullptr) {
  pk_tensor t;
  PK_STRUCT_INIT(t);
  t.data = p;
  t.storage_bytes = sizeof(float) * elements;
  t.device_type = PK_DEVICE_CPU;
  t.dtype = f32();
  t.ndim = static_cast<int32_t>(shape.size());
  t.shape = shape.data();
  t.strides = strides;
  t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
  return t;
}

// The executable's outputs are held to pk_launch's output rules (one validation path): a fused kernel writing an
// output that overlaps one of its inputs, or whose elements share an address, would read what it just wrote.
TEST_F(GraphTest, ExecutableRunRefusesOutputsThatOverlapInputsOrThemselves) {
  const int64_t n = 4;
  uint32_t x = input({n}), y = node(PK_OP_EXP, {node(PK_OP_ADD, {x, x})});
  ASSERT_EQ(pk_graph_mark_output(g, y), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
  std::vector<int64_t> shape{n};
  float buf[2 * n] = {0, 1, 2, 3, 7, 7, 7, 7};
  pk_tensor in = host_view(buf, 2 * n, shape), shifted = host_view(buf + 1, 2 * n - 1, shape);
  expect_error(pk_executable_run(exe, cpu_stream, &in, 1, &shifted, 1), PK_ERROR_INVALID_ARGUMENT, 1,
               {"pk_executable_run", "output 0 overlaps input 0"});
  expect_error(pk_executable_run(exe, cpu_stream, &in, 1, &in, 1), PK_ERROR_INVALID_ARGUMENT, 1,
               {"pk_executable_run", "output 0 overlaps input 0"});
  const int64_t zero[1] = {0};
  pk_tensor one_address = host_view(buf + n, n, shape, zero);
  expect_error(pk_executable_run(exe, cpu_stream, &in, 1, &one_address, 1), PK_ERROR_INVALID_ARGUMENT, 1,
               {"pk_executable_run", "output 0", "zero stride"});
  const float untouched[2 * n] = {0, 1, 2, 3, 7, 7, 7, 7};
  for (int i = 0; i < 2 * n; ++i) EXPECT_EQ(buf[i], untouched[i]) << "nothing ran, element " << i;
  pk_tensor out = host_view(buf + n, n, shape);
  ASSERT_EQ(pk_executable_run(exe, cpu_stream, &in, 1, &out, 1), PK_OK) << last_error().message;
  for (int i = 0; i < n; ++i) EXPECT_NEAR(buf[n + i], std::exp(2.0 * i), 1e-5 * std::exp(2.0 * i));
}

// A run's verdict is remembered per thread under the executable's serial, not its address: an executable
// compiled after another was destroyed (it may land at the same address) checks the same tensors afresh.
TEST_F(GraphTest, ARememberedRunVerdictNeverCarriesOverToANewExecutable) {
  const int64_t n = 4;
  uint32_t x = input({n});
  ASSERT_EQ(pk_graph_mark_output(g, node(PK_OP_NEG, {x})), PK_OK);
  ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
  std::vector<int64_t> shape{n};
  float a[n] = {1, 2, 3, 4}, o[n] = {0, 0, 0, 0};
  pk_tensor in = host_view(a, n, shape), out = host_view(o, n, shape);
  for (int rep = 0; rep < 2; ++rep) {  // the second run finds the first one's verdict
    ASSERT_EQ(pk_executable_run(exe, cpu_stream, &in, 1, &out, 1), PK_OK) << last_error().message;
    for (int i = 0; i < n; ++i) EXPECT_EQ(o[i], -a[i]);
  }
  pk_executable_destroy(exe);
  exe = nullptr;
  pk_graph_t g2 = nullptr;
  ASSERT_EQ(pk_graph_create(&g2), PK_OK);
  const int64_t half[1] = {n / 2};
  uint32_t x2 = 0, y2 = 0;
  ASSERT_EQ(pk_graph_add_input(g2, f32(), 1, half, &x2), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g2, PK_OP_NEG, &x2, 1, nullptr, &y2, 1), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g2, y2), PK_OK);
  ASSERT_EQ(pk_graph_compile(g2, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g2);
  expect_error(pk_executable_run(exe, cpu_stream, &in, 1, &out, 1), PK_ERROR_INVALID_ARGUMENT, 0,
               {"pk_executable_run", "input 0", "graph declares"});
}

}  // namespace
