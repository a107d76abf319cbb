// Graphs: shape inference at construction, fusion offers (the sim backend claims add/mul chains), the rest
// op by op with fallback, composites expanded when the backend lacks them.
#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

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
  EXPECT_NE(std::string(last_error().message).find("graph declares f32[2,3]"), std::string::npos) << last_error().message;
}

}  // namespace
