// Single launches: validation errors name the op, the argument and the reason and write nothing; fallback
// copies and counts; strict mode forbids it; backend errors reach the caller with their details.
#include <cstddef>
#include <memory>

#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

class LaunchTest : public RuntimeTest {
 protected:
  // Host-visible CPU tensors over caller memory, so the test can see that nothing was written.
  pk_tensor host(float *data, size_t count, std::vector<int64_t> &shape, pk_dtype dt = f32()) {
    return host_bytes(data, count * (dt.bits / 8), shape, dt);
  }
};

TEST_F(LaunchTest, AddOnTheCpuGivesExactSums) {
  std::vector<int64_t> shape{2, 3};
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0.5f, -2, 1e30f, -4, 0.25f, 1e-30f}, o[6] = {0};
  pk_tensor in[2] = {host(a, 6, shape), host(b, 6, shape)};
  pk_tensor out = host(o, 6, shape);
  ASSERT_EQ(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_OK) << last_error().message;
  ASSERT_EQ(pk_stream_synchronize(cpu_stream), PK_OK);
  const float want[6] = {1.5f, 0.0f, 1e30f, 0.0f, 5.25f, 6.0f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(o[i], want[i]) << i;
}

TEST_F(LaunchTest, InvalidLaunchesAreRefusedWithOpArgumentAndReasonAndWriteNothing) {
  std::vector<int64_t> s23{2, 3}, s32{3, 2}, s6{6}, s23b{2, 3};
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 1, 1, 1, 1, 1}, o[6];
  for (float &x : o) x = -7.0f;
  pk_tensor ta = host(a, 6, s23), tb = host(b, 6, s23b), to = host(o, 6, s23);

  {  // wrong dtype
    pk_tensor bad = tb;
    bad.dtype = pk_dtype PK_DTYPE_F16_DESC;
    pk_tensor in[2] = {ta, bad};
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 1,
                 {"add", "input 1", "(b)", "f16"});
  }
  {  // wrong rank
    pk_tensor bad = host(b, 6, s6);
    pk_tensor in[2] = {ta, bad};
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 1,
                 {"add", "(b)"});
  }
  {  // wrong output shape
    pk_tensor bad = host(o, 6, s32);
    pk_tensor in[2] = {ta, tb};
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &bad, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 2,
                 {"add", "output 0", "(out)"});
  }
  {  // strides reaching outside the storage
    int64_t strides[2] = {3, 2};
    pk_tensor bad = ta;
    bad.strides = strides;
    pk_tensor in[2] = {bad, tb};
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"add", "input 0", "(a)", "storage"});
  }
  {  // a NULL tensor array
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, nullptr, 2, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, -1, {"add"});
  }
  {  // NULL data in a non-empty tensor
    pk_tensor bad = ta;
    bad.data = nullptr;
    pk_tensor in[2] = {bad, tb};
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"add", "(a)"});
  }
  {  // output overlapping an input where the op forbids it (a shifted view of the same storage)
    float buf[12] = {0};
    std::vector<int64_t> s{2, 3};
    pk_tensor x = host(buf, 12, s), y = host(buf, 12, s);
    y.byte_offset = 4 * 3;
    pk_tensor in[2] = {x, tb};
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &y, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 2,
                 {"add", "overlaps"});
  }
  {  // out-of-range attribute: summing over axis 2 of a rank-2 tensor
    pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
    attrs.num_dims = 1;
    attrs.dims[0] = 2;
    std::vector<int64_t> s3{3};
    float r[3];
    pk_tensor out = host(r, 3, s3);
    expect_error(pk_launch(cpu_stream, PK_OP_SUM, &ta, 1, &out, 1, &attrs), PK_ERROR_INVALID_ARGUMENT, -1,
                 {"sum", "dims"});
  }
  {  // unknown op id
    pk_tensor in[2] = {ta, tb};
    expect_error(pk_launch(cpu_stream, 999, in, 2, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, -1,
                 {"unknown op id 999"});
  }
  {  // wrong number of inputs
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, &ta, 1, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, -1, {"add"});
  }
  {  // read-only output
    pk_tensor bad = to;
    bad.flags |= PK_TENSOR_FLAG_READ_ONLY;
    pk_tensor in[2] = {ta, tb};
    expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &bad, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 2,
                 {"add", "read-only"});
  }
  {  // a tensor on another device than the stream
    open_sim();
    pk_tensor in[2] = {ta, tb};
    expect_error(pk_launch(sim_stream, PK_OP_ADD, in, 2, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"add", "input 0", "device"});
  }
  for (float x : o) EXPECT_EQ(x, -7.0f) << "a refused launch writes nothing";
  // And the runtime still works afterwards.
  pk_tensor in[2] = {ta, tb};
  ASSERT_EQ(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &to, 1, nullptr), PK_OK) << last_error().message;
  EXPECT_EQ(o[5], 7.0f);
}

TEST_F(LaunchTest, UnsupportedOpsFallBackToTheCpuThroughCopiesAndAreCounted) {
  open_sim();
  const int n = 1000;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = -10.0f + 20.0f * i / n;
  DeviceTensor tx(sim_dev, f32(), {n}), ty(sim_dev, f32(), {n});
  tx.upload(sim_stream, x.data(), n * 4);
  ASSERT_EQ(pk_launch(sim_stream, PK_OP_EXP, &tx.t, 1, &ty.t, 1, nullptr), PK_OK) << last_error().message;
  auto y = ty.download<float>(sim_stream, n);
  for (int i = 0; i < n; ++i) {
    float want = static_cast<float>(std::exp(static_cast<double>(x[i])));  // independent reference
    EXPECT_LE(ulp_distance(y[i], want), 3) << "exp(" << x[i] << ")";
  }
  uint64_t launches = 0, bytes = 0;
  ASSERT_EQ(pk_runtime_fallback_count(rt, PK_OP_EXP, &launches, &bytes), PK_OK);
  EXPECT_EQ(launches, 1u);
  EXPECT_EQ(bytes, 3u * n * 4u) << "input down, output down (to keep gaps), output up";
  std::string report = pk_runtime_fallback_report(rt);
  EXPECT_NE(report.find("exp launches=1 bytes_copied=12000 fallback=cpu"), std::string::npos) << report;
  // Supported ops run on the backend itself and are not counted.
  pk_tensor in[2] = {tx.t, tx.t};
  ASSERT_EQ(pk_launch(sim_stream, PK_OP_ADD, in, 2, &ty.t, 1, nullptr), PK_OK) << last_error().message;
  ASSERT_EQ(pk_runtime_fallback_count(rt, PK_OP_ADD, &launches, &bytes), PK_OK);
  EXPECT_EQ(launches, 0u);
  EXPECT_EQ(ty.download<float>(sim_stream, n)[7], 2 * x[7]);
}

TEST_F(LaunchTest, StridedOutputOnAFallbackKeepsTheBytesBetweenItsElements) {
  open_sim();
  // out is every second element of a 6-float buffer; the other elements must survive the round trip.
  float init[6] = {-1, -2, -3, -4, -5, -6}, x[3] = {0.0f, 1.0f, 2.0f};
  DeviceTensor tx(sim_dev, f32(), {3}), to(sim_dev, f32(), {3}, 6 * 4);
  to.set_strides({2});
  tx.upload(sim_stream, x, sizeof(x));
  to.upload(sim_stream, init, sizeof(init));
  ASSERT_EQ(pk_launch(sim_stream, PK_OP_EXP, &tx.t, 1, &to.t, 1, nullptr), PK_OK) << last_error().message;
  auto r = to.download<float>(sim_stream, 6);
  EXPECT_EQ(r[0], 1.0f);
  EXPECT_EQ(r[1], -2.0f);
  EXPECT_LE(ulp_distance(r[2], 2.718281828f), 3);
  EXPECT_EQ(r[3], -4.0f);
  EXPECT_LE(ulp_distance(r[4], 7.389056099f), 3);
  EXPECT_EQ(r[5], -6.0f);
}

TEST(StrictMode, FallbackIsAnErrorNamingOpAndBackend) {
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = PK_RUNTIME_STRICT | PK_RUNTIME_NO_DISCOVERY;
  pk_runtime_t rt = nullptr;
  ASSERT_EQ(pk_runtime_create(&o, &rt), PK_OK);
  ASSERT_EQ(pk_runtime_load_plugin(rt, cpu_plugin().c_str(), nullptr), PK_OK) << last_error().message;
  pk_backend_t sim;
  ASSERT_EQ(pk_runtime_load_plugin(rt, plugin("primkit_backend_sim").c_str(), &sim), PK_OK) << last_error().message;
  pk_device_t dev;
  pk_backend_device(sim, 0, &dev);
  pk_stream_t s;
  ASSERT_EQ(pk_stream_create(dev, &s), PK_OK);
  {
    DeviceTensor tx(dev, f32(), {4}), ty(dev, f32(), {4});
    float x[4] = {0, 1, 2, 3}, sentinel[4] = {9, 9, 9, 9};
    tx.upload(s, x, sizeof(x));
    ty.upload(s, sentinel, sizeof(sentinel));
    EXPECT_EQ(pk_launch(s, PK_OP_EXP, &tx.t, 1, &ty.t, 1, nullptr), PK_ERROR_FALLBACK_FORBIDDEN);
    std::string msg = last_error().message;
    EXPECT_NE(msg.find("exp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'sim'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("strict"), std::string::npos) << msg;
    EXPECT_EQ(ty.download<float>(s, 4)[0], 9.0f);
    uint64_t launches = 1;
    pk_runtime_fallback_count(rt, PK_OP_EXP, &launches, nullptr);
    EXPECT_EQ(launches, 0u);
  }
  pk_stream_destroy(s);
  pk_runtime_destroy(rt);
}

TEST_F(LaunchTest, BackendErrorsReachTheCallerWithTheirDetails) {
  open_sim();
  DeviceTensor ta(sim_dev, f32(), {2}), tb(sim_dev, f32(), {2}), to(sim_dev, f32(), {2});
  pk_tensor in[2] = {ta.t, tb.t};
  EXPECT_EQ(pk_launch(sim_stream, PK_OP_SUB, in, 2, &to.t, 1, nullptr), PK_ERROR_DEVICE);
  pk_error_info e = last_error();
  EXPECT_EQ(e.vendor_code, 77);
  EXPECT_EQ(e.op_id, static_cast<uint32_t>(PK_OP_SUB));
  EXPECT_NE(std::string(e.message).find("sub"), std::string::npos) << e.message;
  EXPECT_NE(std::string(e.message).find("'sim'"), std::string::npos) << e.message;
  EXPECT_NE(std::string(e.message).find("the sub unit is on fire"), std::string::npos) << e.message;
  // A status code outside the ABI is reported as the plugin breaking its contract.
  EXPECT_EQ(pk_launch(sim_stream, PK_OP_DIV, in, 2, &to.t, 1, nullptr), PK_ERROR_PLUGIN);
  EXPECT_NE(std::string(last_error().message).find("outside the ABI"), std::string::npos) << last_error().message;
}

TEST_F(LaunchTest, CompositeWithoutANativeKernelRunsAsItsDecomposition) {
  // relu = maximum(x, full(0)) — whether or not the CPU has relu natively, the values are the same.
  open_sim();
  float x[5] = {-2.0f, -0.0f, 0.0f, 0.5f, 3.0f};
  DeviceTensor tx(sim_dev, f32(), {5}), ty(sim_dev, f32(), {5});
  tx.upload(sim_stream, x, sizeof(x));
  ASSERT_EQ(pk_launch(sim_stream, PK_OP_RELU, &tx.t, 1, &ty.t, 1, nullptr), PK_OK) << last_error().message;
  auto y = ty.download<float>(sim_stream, 5);
  const float want[5] = {0.0f, 0.0f, 0.0f, 0.5f, 3.0f};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y[i], want[i]) << i;
  uint64_t launches = 0;
  pk_runtime_fallback_count(rt, PK_OP_MAXIMUM, &launches, nullptr);
  EXPECT_EQ(launches, 1u) << "sim lacks maximum, so the decomposition's maximum fell back";
}

TEST_F(LaunchTest, SoftmaxMatchesAHandComputation) {
  std::vector<int64_t> shape{2, 3};
  float x[6] = {1, 2, 3, 0, 0, 0}, y[6];
  pk_tensor tx = host(x, 6, shape), ty = host(y, 6, shape);
  pk_attrs_softmax attrs = PK_ATTRS_SOFTMAX_INIT;
  attrs.dim = 1;
  ASSERT_EQ(pk_launch(cpu_stream, PK_OP_SOFTMAX, &tx, 1, &ty, 1, &attrs), PK_OK) << last_error().message;
  // softmax([1,2,3]) = [0.09003057, 0.24472847, 0.66524096]; softmax([0,0,0]) = 1/3 each.
  const double want[6] = {0.0900305731703804, 0.2447284710547976, 0.6652409557748218, 1 / 3.0, 1 / 3.0, 1 / 3.0};
  for (int i = 0; i < 6; ++i) EXPECT_LE(ulp_distance(y[i], static_cast<float>(want[i])), 4) << i;
}

TEST_F(LaunchTest, InferOutputsFollowsTheShapeRule) {
  std::vector<int64_t> shape{2, 3, 4};
  pk_tensor t;
  PK_STRUCT_INIT(t);
  t.dtype = f32();
  t.ndim = 3;
  t.shape = shape.data();
  pk_attrs_sum attrs = PK_ATTRS_SUM_INIT;
  attrs.num_dims = 2;
  attrs.dims[0] = 0;
  attrs.dims[1] = 2;
  pk_dtype dt;
  int32_t ndim = -1;
  int64_t out[PK_MAX_RANK];
  ASSERT_EQ(pk_infer_outputs(PK_OP_SUM, &t, 1, &attrs, 1, &dt, &ndim, out), PK_OK) << last_error().message;
  EXPECT_EQ(ndim, 1);
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(dt.bits, 32);
}

TEST_F(LaunchTest, StreamsAndEventsOrderWork) {
  pk_event_t ev;
  ASSERT_EQ(pk_event_create(cpu_dev, &ev), PK_OK);
  ASSERT_EQ(pk_event_record(ev, cpu_stream), PK_OK);
  ASSERT_EQ(pk_event_synchronize(ev), PK_OK);
  EXPECT_EQ(pk_event_query(ev), PK_OK);
  pk_stream_t other;
  ASSERT_EQ(pk_stream_create(cpu_dev, &other), PK_OK);
  EXPECT_EQ(pk_stream_wait_event(other, ev), PK_OK);
  EXPECT_EQ(pk_stream_synchronize(other), PK_OK);
  pk_stream_destroy(other);
  pk_event_destroy(ev);
  // Copies are bounds-checked against the buffer.
  pk_buffer_t b;
  ASSERT_EQ(pk_buffer_create(cpu_dev, 16, &b), PK_OK);
  float x[8] = {0};
  EXPECT_EQ(pk_copy_host_to_buffer(cpu_stream, b, 8, x, 16), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error().message).find("outside the buffer of 16 bytes"), std::string::npos);
  pk_buffer_destroy(b);
}

// The runtime reuses the verdict of an identical repeated launch; anything validation depends on changing in
// place (here the shape array's contents and the strides) must be validated again.
TEST_F(LaunchTest, RepeatedLaunchesAreRevalidatedWhenAnyDescriptorByteChanges) {
  std::vector<int64_t> shape{2, 3};
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60}, o[6] = {0};
  pk_tensor in[2] = {host(a, 6, shape), host(b, 6, shape)};
  pk_tensor out = host(o, 6, shape);
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_EQ(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_OK) << last_error().message;
  }
  for (int i = 0; i < 6; ++i) EXPECT_EQ(o[i], a[i] + b[i]);
  shape[1] = 4;  // the same array, now reaching past the 6-element storage
  expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
               {"add", "storage"});
  shape[1] = 3;
  ASSERT_EQ(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_OK) << last_error().message;
  int64_t transposed[2] = {1, 2};  // a[j][i] read as a 2x3 view of the same storage: reaches element 5 at most
  in[0].strides = transposed;
  ASSERT_EQ(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_OK) << last_error().message;
  EXPECT_EQ(o[1], a[2] + b[1]);  // out[0][1] = a at offset 0*1 + 1*2
  EXPECT_EQ(o[3], a[1] + b[3]);  // out[1][0] = a at offset 1*1 + 0*2
  // Each leading descriptor field compares too: an offset, a storage size, a dtype changed in place.
  in[1].byte_offset = 4;
  expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 1,
               {"add", "storage"});
  in[1].byte_offset = 0;
  out.storage_bytes = 20;
  expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 2,
               {"add", "storage"});
  out.storage_bytes = sizeof o;
  in[0].dtype = pk_dtype{PK_DTYPE_CODE_INT, 32, 1};
  expect_error(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 1, {"add"});
  in[0].dtype = pk_dtype{PK_DTYPE_CODE_FLOAT, 32, 1};
  ASSERT_EQ(pk_launch(cpu_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_OK) << last_error().message;
}

}  // namespace

namespace {

// A host pointer flagged HOST_VISIBLE reaches only devices that address host memory: the simulated device
// declares no unified memory, so the launch is refused before the backend sees the pointer (PoCL aborted on
// one), naming the argument.
TEST_F(LaunchTest, HostPointersAreRefusedOnDevicesWithoutUnifiedMemory) {
  open_sim();
  pk_device_props p;
  PK_STRUCT_INIT(p);
  ASSERT_EQ(pk_device_get_props(sim_dev, &p), PK_OK);
  ASSERT_FALSE(p.features & PK_DEVICE_FEATURE_UNIFIED_MEMORY);
  std::vector<int64_t> shape{4};
  float a[4] = {1, 2, 3, 4}, o[4] = {9, 9, 9, 9};
  pk_tensor in[2] = {host(a, 4, shape), host(a, 4, shape)};
  pk_tensor out = host(o, 4, shape);
  for (pk_tensor *t : {&in[0], &in[1], &out}) {
    t->device_type = p.device_type;
    t->device_id = 0;
  }
  expect_error(pk_launch(sim_stream, PK_OP_ADD, in, 2, &out, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
               {"add", "input 0 (a)", "HOST_VISIBLE", "unified memory"});
  EXPECT_EQ(o[0], 9.0f);
}

}  // namespace

namespace {

// The capability query is validated like a launch: no backend sees a NULL array, a bad rank or a short struct.
TEST_F(LaunchTest, CapabilityQueriesAreValidatedBeforeTheBackendSeesThem) {
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = PK_OP_ADD;
  q.num_inputs = 2;
  q.inputs = nullptr;
  q.num_outputs = 1;
  pk_op_support s;
  PK_STRUCT_INIT(s);
  expect_error(pk_device_query_op(cpu_dev, &q, &s), PK_ERROR_INVALID_ARGUMENT, -1, {"add", "NULL"});
  std::vector<int64_t> shape{3};
  float a[3] = {0};
  pk_tensor t[3] = {host(a, 3, shape), host(a, 3, shape), host(a, 3, shape)};
  q.inputs = t;
  q.outputs = t + 2;
  q.num_inputs = 1;
  expect_error(pk_device_query_op(cpu_dev, &q, &s), PK_ERROR_INVALID_ARGUMENT, -1, {"add", "1 inputs"});
  q.num_inputs = 2;
  t[1].ndim = 9;
  expect_error(pk_device_query_op(cpu_dev, &q, &s), PK_ERROR_INVALID_ARGUMENT, 1, {"add", "input 1 (b)", "ndim 9"});
  t[1].ndim = 1;
  // The descriptor rule is the launch's (one check for both): the same message names the same fault.
  t[1].dtype.lanes = 2;
  expect_error(pk_device_query_op(cpu_dev, &q, &s), PK_ERROR_INVALID_ARGUMENT, 1, {"add", "input 1 (b)", "lanes 2"});
  const pk_status launched = pk_launch(cpu_stream, PK_OP_ADD, t, 2, t + 2, 1, nullptr);
  expect_error(launched, PK_ERROR_INVALID_ARGUMENT, 1, {"add", "input 1 (b)", "lanes 2"});
  t[1].dtype.lanes = 1;
  const int64_t negative[1] = {-3};
  t[1].shape = negative;
  expect_error(pk_device_query_op(cpu_dev, &q, &s), PK_ERROR_INVALID_ARGUMENT, 1, {"add", "input 1 (b)", "negative"});
  t[1].shape = shape.data();
  // An exact query the shape rule refuses, or whose outputs differ from what it infers, describes no launch: it is
  // answered "not supported" with the rule's reason without reaching the backend (which plans from the shapes).
  const std::vector<int64_t> two{2};
  t[1].shape = two.data();
  ASSERT_EQ(pk_device_query_op(cpu_dev, &q, &s), PK_OK) << last_error().message;
  EXPECT_EQ(s.supported, 0);
  EXPECT_EQ(std::string(s.reason).rfind("add: ", 0), 0u) << s.reason;
  t[1].shape = shape.data();
  t[2].shape = two.data();
  ASSERT_EQ(pk_device_query_op(cpu_dev, &q, &s), PK_OK) << last_error().message;
  EXPECT_EQ(s.supported, 0);
  EXPECT_NE(std::string(s.reason).find("output 0"), std::string::npos) << s.reason;
  t[2].shape = shape.data();
  ASSERT_EQ(pk_device_query_op(cpu_dev, &q, &s), PK_OK) << last_error().message;
  EXPECT_EQ(s.supported, 1);
  // A coverage query (no shapes) and an older caller's shorter attribute struct are both legal.
  pk_tensor c[2] = {t[0], t[0]};
  c[0].shape = c[1].shape = nullptr;
  c[0].ndim = c[1].ndim = 2;
  pk_attrs_softmax sm = PK_ATTRS_SOFTMAX_INIT;
  sm.struct_size = sizeof(uint32_t);  // knows no field: every attribute takes its default
  q.op_id = PK_OP_SOFTMAX;
  q.num_inputs = 1;
  q.inputs = c;
  q.outputs = c + 1;
  q.attrs = &sm;
  ASSERT_EQ(pk_device_query_op(cpu_dev, &q, &s), PK_OK) << last_error().message;  // normalized to full size
  EXPECT_EQ(s.supported, 1);
  sm.struct_size = sizeof sm;
  sm.dim = 1;
  ASSERT_EQ(pk_device_query_op(cpu_dev, &q, &s), PK_OK) << last_error().message;
  EXPECT_EQ(s.supported, 1);
}

// Found by fuzz_query (ASan): a pk_op_query whose struct_size ends inside the attrs pointer had the runtime read the
// whole pointer past the caller's struct. A struct that short has no attrs ("any attribute values").
TEST_F(LaunchTest, AQueryStructEndingInsideItsAttrsPointerHasNoAttrs) {
  std::vector<int64_t> shape{2, 3};
  float a[6] = {0};
  pk_tensor c[2] = {host(a, 6, shape), host(a, 6, shape)};
  pk_op_query full;
  PK_STRUCT_INIT(full);
  full.op_id = PK_OP_SOFTMAX;
  full.num_inputs = 1;
  full.inputs = c;
  full.num_outputs = 1;
  full.outputs = c + 1;
  const size_t size = offsetof(pk_op_query, attrs) + 4;             // half of the pointer
  std::unique_ptr<unsigned char[]> bytes(new unsigned char[size]);  // exactly that long: ASan sees a read past it
  full.struct_size = static_cast<uint32_t>(size);
  std::memcpy(bytes.get(), &full, size);
  pk_op_support s;
  PK_STRUCT_INIT(s);
  ASSERT_EQ(pk_device_query_op(cpu_dev, reinterpret_cast<const pk_op_query *>(bytes.get()), &s), PK_OK)
      << last_error().message;
  EXPECT_EQ(s.supported, 1) << s.reason;
}

}  // namespace
