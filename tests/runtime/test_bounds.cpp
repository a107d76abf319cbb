// Sizes and placement the runtime must bound before any backend computes with them: extents and element
// counts (also of empty tensors and of inferred outputs), views on the runtime's own buffers, the alignment
// and NULL rules of pk_tensor, and empty results that must not allocate.
#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

constexpr int64_t k2_62 = int64_t{1} << 62;

class BoundsTest : public RuntimeTest {};

// Finding 4a: a zero extent made the element count 0, and nothing bounded the others, although an empty
// tensor's row-major strides and a backend's loop bounds are still products of them ([0, 2, 2^62] gives axis 0
// a stride of 2^63). Every extent stays below 2^62, and the count and bytes of the non-empty extents fit int64.
TEST_F(BoundsTest, EmptyTensorsWithHugeExtentsAreRefused) {
  struct Case {
    std::vector<int64_t> shape;
    pk_dtype dtype;
    const char *reason;
  };
  const Case cases[] = {
      {{0, 2, k2_62}, f32(), "2^62 or more"},
      {{0, int64_t{1} << 61, 4}, f32(), "more than 2^63-1 elements"},
      {{int64_t{1} << 61, 0}, pk_dtype PK_DTYPE_F64_DESC, "more than 2^63-1 bytes"},
  };
  for (const Case &c : cases) {
    pk_tensor x = host_bytes(nullptr, 0, c.shape, c.dtype), y = host_bytes(nullptr, 0, c.shape, c.dtype);
    expect_error(pk_launch(cpu_stream, PK_OP_EXP, &x, 1, &y, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"exp", "input 0", c.reason});
    pk_dtype dt;
    int32_t ndim = 0;
    int64_t shape[PK_MAX_RANK];
    expect_error(pk_infer_outputs(PK_OP_EXP, &x, 1, nullptr, 1, &dt, &ndim, shape), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"exp", "input 0", c.reason});
  }
  // Large extents whose non-empty product fits stay legal: nothing to compute, nothing written.
  std::vector<int64_t> fine{0, int64_t{1} << 40, 3};
  pk_tensor x = host_bytes(nullptr, 0, fine), y = host_bytes(nullptr, 0, fine);
  EXPECT_EQ(pk_launch(cpu_stream, PK_OP_EXP, &x, 1, &y, 1, nullptr), PK_OK) << last_error().message;
}

// Finding 4b: an output the shape rule computes can be far larger than any input: avg_pool2d with a padding of
// 2^40 gives [1, 1, ~2^41, ~2^41] per channel window, ~2^82 elements, and pk_infer_outputs returned PK_OK.
TEST_F(BoundsTest, InferredOutputsAreBoundedLikeInputs) {
  std::vector<int64_t> shape{1, 1, 4, 4};
  pk_tensor x = host_bytes(nullptr, 0, shape);
  pk_attrs_avg_pool2d attrs = PK_ATTRS_AVG_POOL2D_INIT;
  attrs.num_kernel_size = 2;
  attrs.kernel_size[0] = attrs.kernel_size[1] = 1;
  attrs.num_stride = 2;
  attrs.stride[0] = attrs.stride[1] = 1;
  attrs.num_padding = 2;
  attrs.padding[0] = attrs.padding[1] = int64_t{1} << 40;
  pk_dtype dt;
  int32_t ndim = 0;
  int64_t out[PK_MAX_RANK];
  pk_status st = pk_infer_outputs(PK_OP_AVG_POOL2D, &x, 1, &attrs, 1, &dt, &ndim, out);
  EXPECT_EQ(st, PK_ERROR_INVALID_ARGUMENT)
      << "inferred shape [" << out[0] << ", " << out[1] << ", " << out[2] << ", " << out[3] << "]";
  std::string msg = last_error().message;
  EXPECT_NE(msg.find("more than 2^63-1"), std::string::npos) << msg;
  // The same op with a sane padding still infers.
  attrs.padding[0] = attrs.padding[1] = 1;
  ASSERT_EQ(pk_infer_outputs(PK_OP_AVG_POOL2D, &x, 1, &attrs, 1, &dt, &ndim, out), PK_OK) << last_error().message;
  EXPECT_EQ(ndim, 4);
  EXPECT_EQ(out[2], 6);
  EXPECT_EQ(out[3], 6);
}

// Finding 4c: graph inputs had no bound at all on their extents.
TEST_F(BoundsTest, GraphInputsAreBoundedLikeLaunchTensors) {
  pk_graph_t g = nullptr;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  uint32_t v = 0;
  const int64_t empty_huge[3] = {0, 2, k2_62};
  expect_error(pk_graph_add_input(g, f32(), 3, empty_huge, &v), PK_ERROR_INVALID_ARGUMENT, -1,
               {"pk_graph_add_input", "2^62 or more"});
  const int64_t too_many_bytes[2] = {int64_t{1} << 31, int64_t{1} << 31};  // 2^62 elements, 2^64 bytes of f32
  expect_error(pk_graph_add_input(g, f32(), 2, too_many_bytes, &v), PK_ERROR_INVALID_ARGUMENT, -1,
               {"pk_graph_add_input", "more than 2^63-1 bytes"});
  const int64_t fine[2] = {0, int64_t{1} << 40};
  EXPECT_EQ(pk_graph_add_input(g, f32(), 2, fine, &v), PK_OK) << last_error().message;
  EXPECT_EQ(v, 0u) << "refused inputs add no value";
  pk_graph_destroy(g);
}

// Finding 4d: eye(n = 2^31-1, m = 0) has no element, but its decomposition allocated a temporary for an iota
// over n (16 GiB of i64) before anything else. The simulated device refuses allocations over 1 GiB, as a device
// would, and counts the bytes it hands out: an empty result must take none.
TEST_F(BoundsTest, AnEmptyResultOfACompositeAllocatesNothing) {
  open_sim();
  void *lib = dlopen(plugin("primkit_backend_sim").c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto read = reinterpret_cast<void (*)(long long *)>(dlsym(lib, "sim_live_objects"));
  ASSERT_NE(read, nullptr);
  DeviceTensor out(sim_dev, f32(), {(int64_t{1} << 31) - 1, 0});
  long long before[5], after[5];
  read(before);
  pk_attrs_eye attrs = PK_ATTRS_EYE_INIT;
  attrs.n = (int64_t{1} << 31) - 1;
  attrs.m = 0;
  attrs.dtype = PK_DTYPE_F32;
  EXPECT_EQ(pk_launch(sim_stream, PK_OP_EYE, nullptr, 0, &out.t, 1, &attrs), PK_OK) << last_error().message;
  read(after);
  EXPECT_EQ(after[4] - before[4], 0) << "bytes allocated on the device for an empty eye";
  dlclose(lib);
}

// Finding 4e: storage_bytes is the caller's word, but on a buffer of pk_buffer_create the runtime knows the
// real size. A 64-byte buffer described as 4 MiB reached every backend (which then read and wrote past it).
TEST_F(BoundsTest, ViewsOnRuntimeBuffersStayInsideTheBuffer) {
  const int64_t n = int64_t{1} << 20;
  pk_buffer_t small = nullptr;
  ASSERT_EQ(pk_buffer_create(cpu_dev, 64, &small), PK_OK);
  std::vector<int64_t> shape{n};
  pk_tensor lie;
  ASSERT_EQ(pk_buffer_tensor(small, f32(), 1, shape.data(), nullptr, 0, &lie), PK_OK);
  lie.storage_bytes = 4u << 20;
  // The other tensors are on the stack, or absent, so that no overlap with the 4 MiB the view claims is
  // reported first.
  float sum = 0.0f;
  const std::vector<int64_t> rank0;
  pk_tensor scalar = host_bytes(&sum, sizeof sum, rank0);
  pk_attrs_sum all = PK_ATTRS_SUM_INIT;
  all.num_dims = 1;
  all.dims[0] = 0;
  expect_error(pk_launch(cpu_stream, PK_OP_SUM, &lie, 1, &scalar, 1, &all), PK_ERROR_INVALID_ARGUMENT, 0,
               {"sum", "input 0", "buffer of 64 bytes", "4194304"});
  pk_attrs_iota iota = PK_ATTRS_IOTA_INIT;
  iota.length = n;
  iota.dtype = PK_DTYPE_F32;
  expect_error(pk_launch(cpu_stream, PK_OP_IOTA, nullptr, 0, &lie, 1, &iota), PK_ERROR_INVALID_ARGUMENT, 0,
               {"iota", "output 0", "buffer of 64 bytes"});
  // A pointer inside the buffer (host memory) is bounded by what is left of it: 32 bytes from the start, 16
  // floats reach 32 bytes past the end.
  std::vector<int64_t> s16{16}, s8{8};
  pk_tensor inner = host_bytes(static_cast<char *>(pk_buffer_data(small)) + 32, 64, s16);
  float o[16];
  pk_tensor to = host_bytes(o, sizeof o, s16);
  expect_error(pk_launch(cpu_stream, PK_OP_EXP, &inner, 1, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
               {"exp", "input 0", "32 bytes into a buffer of 64 bytes"});
  inner.shape = s8.data();  // 8 floats fit exactly
  to.shape = s8.data();
  EXPECT_EQ(pk_launch(cpu_stream, PK_OP_EXP, &inner, 1, &to, 1, nullptr), PK_OK) << last_error().message;
  // On a device without unified memory the exact pointer is checked too.
  open_sim();
  pk_buffer_t sim_small = nullptr;
  ASSERT_EQ(pk_buffer_create(sim_dev, 64, &sim_small), PK_OK);
  DeviceTensor sim_out(sim_dev, f32(), {n});
  pk_tensor sim_lie;
  ASSERT_EQ(pk_buffer_tensor(sim_small, f32(), 1, shape.data(), nullptr, 0, &sim_lie), PK_OK);
  sim_lie.storage_bytes = 4u << 20;
  pk_tensor ins[2] = {sim_lie, sim_lie};
  expect_error(pk_launch(sim_stream, PK_OP_ADD, ins, 2, &sim_out.t, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
               {"add", "input 0", "buffer of 64 bytes"});
  pk_buffer_destroy(sim_small);
  pk_buffer_destroy(small);
}

// An executable's fused kernels read the caller's tensors directly: pk_executable_run bounds them the same way.
TEST_F(BoundsTest, ExecutablesCheckTheirTensorsAgainstTheirBuffers) {
  const int64_t n = 1024;
  pk_graph_t g = nullptr;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  uint32_t x = 0, y = 0;
  ASSERT_EQ(pk_graph_add_input(g, f32(), 1, &n, &x), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_EXP, &x, 1, nullptr, &y, 1), PK_OK) << last_error().message;
  ASSERT_EQ(pk_graph_mark_output(g, y), PK_OK);
  pk_executable_t exe = nullptr;
  ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  pk_buffer_t small = nullptr;
  ASSERT_EQ(pk_buffer_create(cpu_dev, 64, &small), PK_OK);
  DeviceTensor out(cpu_dev, f32(), {n});
  std::vector<int64_t> shape{n};
  pk_tensor lie;
  ASSERT_EQ(pk_buffer_tensor(small, f32(), 1, shape.data(), nullptr, 0, &lie), PK_OK);
  lie.storage_bytes = n * 4;
  expect_error(pk_executable_run(exe, cpu_stream, &lie, 1, &out.t, 1), PK_ERROR_INVALID_ARGUMENT, 0,
               {"pk_executable_run", "input 0", "buffer of 64 bytes"});
  std::vector<float> host_in(n + 1, 0.0f);
  pk_tensor misaligned = host_bytes(reinterpret_cast<char *>(host_in.data()) + 1, n * 4, shape);
  expect_error(pk_executable_run(exe, cpu_stream, &misaligned, 1, &out.t, 1), PK_ERROR_INVALID_ARGUMENT, 0,
               {"pk_executable_run", "input 0", "not aligned"});
  pk_tensor fine = host_bytes(host_in.data(), n * 4, shape);
  EXPECT_EQ(pk_executable_run(exe, cpu_stream, &fine, 1, &out.t, 1), PK_OK) << last_error().message;
  pk_buffer_destroy(small);
  pk_executable_destroy(exe);
}

// The same check must not be skipped by the memo of repeated launches: a buffer freed and a smaller one created
// at the same address (the caching allocator hands the block back) make the same bytes invalid.
TEST_F(BoundsTest, ARememberedLaunchIsCheckedAgainWhenItsBufferIsReplaced) {
  pk_buffer_t a = nullptr, out = nullptr;
  ASSERT_EQ(pk_buffer_create(cpu_dev, 64, &a), PK_OK);
  ASSERT_EQ(pk_buffer_create(cpu_dev, 64, &out), PK_OK);
  std::vector<int64_t> shape{16};
  pk_tensor ta, tout;
  ASSERT_EQ(pk_buffer_tensor(a, f32(), 1, shape.data(), nullptr, 0, &ta), PK_OK);
  ASSERT_EQ(pk_buffer_tensor(out, f32(), 1, shape.data(), nullptr, 0, &tout), PK_OK);
  ASSERT_EQ(pk_launch(cpu_stream, PK_OP_EXP, &ta, 1, &tout, 1, nullptr), PK_OK) << last_error().message;
  void *old = pk_buffer_data(a);
  pk_buffer_destroy(a);
  pk_buffer_t b = nullptr;
  ASSERT_EQ(pk_buffer_create(cpu_dev, 16, &b), PK_OK);
  ASSERT_EQ(pk_buffer_data(b), old) << "the allocator hands the cached block back";
  expect_error(pk_launch(cpu_stream, PK_OP_EXP, &ta, 1, &tout, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
               {"exp", "input 0", "buffer of 16 bytes"});
  pk_buffer_destroy(b);
  pk_buffer_destroy(out);
}

// Finding 5: the ABI's placement rule (primkit.h, pk_tensor): a non-empty view's first element is aligned to
// its element size, and a NULL data pointer describes only an empty view at offset 0.
TEST_F(BoundsTest, TensorDataIsAlignedToItsElementsAndNullOnlyWhenEmpty) {
  alignas(16) float a[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  float o[4];
  std::vector<int64_t> s4{4};
  char *base = reinterpret_cast<char *>(a);
  pk_tensor to = host_bytes(o, sizeof o, s4);
  {  // a misaligned pointer
    pk_tensor x = host_bytes(base + 2, sizeof a - 2, s4);
    expect_error(pk_launch(cpu_stream, PK_OP_EXP, &x, 1, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"exp", "input 0", "not aligned to the element size of 4 bytes"});
  }
  {  // a misaligned offset
    pk_tensor x = host_bytes(a, sizeof a, s4);
    x.byte_offset = 6;
    expect_error(pk_launch(cpu_stream, PK_OP_EXP, &x, 1, &to, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"exp", "input 0", "not aligned"});
  }
  {  // pointer and offset misaligned by halves that add up to an aligned first element: legal
    pk_tensor x = host_bytes(base + 2, sizeof a - 2, s4);
    x.byte_offset = 2;
    EXPECT_EQ(pk_launch(cpu_stream, PK_OP_EXP, &x, 1, &to, 1, nullptr), PK_OK) << last_error().message;
    EXPECT_LE(ulp_distance(o[0], 2.718281828f), 3) << o[0];  // exp(a[1]): the first element is 4 bytes in
  }
  {  // an output too
    float o5[5];
    pk_tensor x = host_bytes(a, sizeof a, s4), y = host_bytes(reinterpret_cast<char *>(o5) + 1, 4 * sizeof(float), s4);
    expect_error(pk_launch(cpu_stream, PK_OP_EXP, &x, 1, &y, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 1,
                 {"exp", "output 0", "not aligned"});
  }
  {  // NULL data: only empty, at offset 0
    std::vector<int64_t> empty{0, 4};
    pk_tensor x = host_bytes(nullptr, 0, empty), y = host_bytes(nullptr, 0, empty);
    EXPECT_EQ(pk_launch(cpu_stream, PK_OP_EXP, &x, 1, &y, 1, nullptr), PK_OK) << last_error().message;
    x.byte_offset = 8;
    expect_error(pk_launch(cpu_stream, PK_OP_EXP, &x, 1, &y, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"exp", "input 0", "NULL", "byte_offset 8"});
  }
  {  // where data may be a handle (no unified memory), the offset alone is checked
    open_sim();
    DeviceTensor x(sim_dev, f32(), {4}, 32), y(sim_dev, f32(), {4}), z(sim_dev, f32(), {4});
    x.t.byte_offset = 2;
    pk_tensor in[2] = {x.t, y.t};
    expect_error(pk_launch(sim_stream, PK_OP_ADD, in, 2, &z.t, 1, nullptr), PK_ERROR_INVALID_ARGUMENT, 0,
                 {"add", "input 0", "byte_offset 2 is not a multiple of the element size of 4 bytes"});
  }
}

// fuzz_query (long run): a slice step valid by the table (any value >= 1; an axis with one element never takes
// it) was multiplied by the element stride in every backend's and the planner's view arithmetic, a signed
// overflow at 2^63 - 1. Validation now hands backends canonical attributes (canonicalize_attrs): such a step is
// 1, and pad's interior of an axis with one element is 0. The results are those of the table's definition.
TEST_F(BoundsTest, HugeStepsOfOneElementSlicesAndPadsGiveTheDefinedValues) {
  constexpr int64_t kHuge = INT64_MAX;
  float x[18];
  for (int i = 0; i < 18; ++i) x[i] = static_cast<float>(i);  // [3, 6] row-major: x[r][c] = 6 r + c
  // Named shapes: host_bytes keeps a pointer to the vector's data.
  const std::vector<int64_t> s36{3, 6}, s31{3, 1}, s13{1, 3}, s16{1, 6}, s18{1, 8};
  pk_tensor tx = host_bytes(x, sizeof x, s36);
  {  // slice_in_dim [1:3:huge, :] -> row 1 (axis 0's element stride is 6: 6 x step overflowed)
    pk_attrs_slice_in_dim a = PK_ATTRS_SLICE_IN_DIM_INIT;
    a.start = 1, a.limit = 3, a.stride = kHuge, a.dim = 0;
    float o[6] = {-1, -1, -1, -1, -1, -1};
    pk_tensor to = host_bytes(o, sizeof o, s16);
    ASSERT_EQ(pk_launch(cpu_stream, PK_OP_SLICE_IN_DIM, &tx, 1, &to, 1, &a), PK_OK) << last_error().message;
    for (int c = 0; c < 6; ++c) EXPECT_EQ(o[c], x[6 + c]) << c;
  }
  {  // slice [1:3:huge, 0:6:2] -> row 1, columns 0, 2, 4
    pk_attrs_slice a = PK_ATTRS_SLICE_INIT;
    a.num_start_indices = a.num_limit_indices = a.num_strides = 2;
    a.start_indices[0] = 1, a.limit_indices[0] = 3, a.strides[0] = kHuge;
    a.start_indices[1] = 0, a.limit_indices[1] = 6, a.strides[1] = 2;
    float o[3] = {-1, -1, -1};
    pk_tensor to = host_bytes(o, sizeof o, s13);
    ASSERT_EQ(pk_launch(cpu_stream, PK_OP_SLICE, &tx, 1, &to, 1, &a), PK_OK) << last_error().message;
    EXPECT_EQ(o[0], 6.0f);
    EXPECT_EQ(o[1], 8.0f);
    EXPECT_EQ(o[2], 10.0f);
  }
  {  // slice_scatter: one column of src at column 4, step huge
    float src[3] = {100, 200, 300}, o[18];
    pk_tensor in[2] = {tx, host_bytes(src, sizeof src, s31)};
    pk_tensor to = host_bytes(o, sizeof o, s36);
    pk_attrs_slice_scatter a = PK_ATTRS_SLICE_SCATTER_INIT;
    a.dim = 1, a.start = 4, a.stride = kHuge;
    ASSERT_EQ(pk_launch(cpu_stream, PK_OP_SLICE_SCATTER, in, 2, &to, 1, &a), PK_OK) << last_error().message;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 6; ++c) EXPECT_EQ(o[6 * r + c], c == 4 ? src[r] : x[6 * r + c]) << r << ", " << c;
  }
  {  // pad with an interior of 2^62 - 1 on an axis of one element: nothing between elements, nothing added
    float one[6] = {1, 2, 3, 4, 5, 6}, o[8];
    pk_tensor ti = host_bytes(one, sizeof one, s16), to = host_bytes(o, sizeof o, s18);
    pk_attrs_pad a = PK_ATTRS_PAD_INIT;
    a.value = -1;
    a.num_low = a.num_high = a.num_interior = 2;
    a.low[0] = 0, a.high[0] = 0, a.interior[0] = k2_62 - 1;
    a.low[1] = 1, a.high[1] = 1, a.interior[1] = 0;
    ASSERT_EQ(pk_launch(cpu_stream, PK_OP_PAD, &ti, 1, &to, 1, &a), PK_OK) << last_error().message;
    const float want[8] = {-1, 1, 2, 3, 4, 5, 6, -1};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(o[i], want[i]) << i;
  }
  {  // the same slice through a graph (its nodes keep canonical attributes, which the executor's views read)
    pk_attrs_slice_in_dim a = PK_ATTRS_SLICE_IN_DIM_INIT;
    a.start = 2, a.limit = 3, a.stride = kHuge, a.dim = 0;
    pk_graph_t g = nullptr;
    ASSERT_EQ(pk_graph_create(&g), PK_OK);
    uint32_t vin = 0, vout = 0;
    ASSERT_EQ(pk_graph_add_input(g, f32(), 2, s36.data(), &vin), PK_OK) << last_error().message;
    ASSERT_EQ(pk_graph_add_node(g, PK_OP_SLICE_IN_DIM, &vin, 1, &a, &vout, 1), PK_OK) << last_error().message;
    ASSERT_EQ(pk_graph_mark_output(g, vout), PK_OK);
    pk_executable_t exe = nullptr;
    ASSERT_EQ(pk_graph_compile(g, cpu_dev, nullptr, &exe), PK_OK) << last_error().message;
    float o[6] = {-1, -1, -1, -1, -1, -1};
    pk_tensor to = host_bytes(o, sizeof o, s16);
    EXPECT_EQ(pk_executable_run(exe, cpu_stream, &tx, 1, &to, 1), PK_OK) << last_error().message;
    EXPECT_EQ(pk_stream_synchronize(cpu_stream), PK_OK);
    for (int c = 0; c < 6; ++c) EXPECT_EQ(o[c], x[12 + c]) << c;
    pk_executable_destroy(exe);
    pk_graph_destroy(g);
  }
  {  // an exact capability query with that step reaches every backend canonical (cuda-emu planned from it)
    pk_attrs_slice_in_dim a = PK_ATTRS_SLICE_IN_DIM_INIT;
    a.start = 1, a.limit = 3, a.stride = kHuge, a.dim = 0;
    pk_tensor to = host_bytes(nullptr, 0, s16);
    const pk_op_query q = op_query(PK_OP_SLICE_IN_DIM, &tx, 1, &to, 1, &a);
    pk_op_support sup;
    PK_STRUCT_INIT(sup);
    EXPECT_EQ(pk_device_query_op(cpu_dev, &q, &sup), PK_OK) << last_error().message;
    EXPECT_EQ(sup.supported, 1) << sup.reason;
  }
}

// fuzz_query (long run): an exact query's tensors have no storage, and their strides were not bounded at all: an
// element stride of ~2^63 reached cuda-emu's planner, which multiplied it by a slice's step and a convolution's
// stride. A query's view must fit a storage as a launch's must (bytes [lo, hi) within 0 .. 2^63 - 1).
TEST_F(BoundsTest, QueriedViewsMustFitAStorage) {
  const std::vector<int64_t> shape{3, 6};
  const int64_t huge_strides[2] = {int64_t{1} << 61, 1}, negative_strides[2] = {-6, 1};
  pk_tensor x = host_bytes(nullptr, 0, shape), y = host_bytes(nullptr, 0, shape);
  pk_tensor in[2] = {x, x};
  const pk_op_query q = op_query(PK_OP_ADD, in, 2, &y, 1);
  pk_op_support sup;
  PK_STRUCT_INIT(sup);
  ASSERT_EQ(pk_device_query_op(cpu_dev, &q, &sup), PK_OK) << last_error().message;
  EXPECT_EQ(sup.supported, 1) << sup.reason;
  in[1].strides = huge_strides;  // axis 0 reaches 2 x 2^61 x 4 bytes = 2^64
  expect_error(pk_device_query_op(cpu_dev, &q, &sup), PK_ERROR_INVALID_ARGUMENT, 1,
               {"add", "input 1", "outside any storage"});
  in[1].strides = negative_strides;  // before data, with byte_offset 0
  expect_error(pk_device_query_op(cpu_dev, &q, &sup), PK_ERROR_INVALID_ARGUMENT, 1,
               {"add", "input 1", "outside any storage"});
  in[1].byte_offset = 2 * 6 * sizeof(float);  // the same view from the last row: a launch could make it
  ASSERT_EQ(pk_device_query_op(cpu_dev, &q, &sup), PK_OK) << last_error().message;
  EXPECT_EQ(sup.supported, 1) << sup.reason;
}

}  // namespace
