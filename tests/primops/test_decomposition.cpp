// Decompositions: composite ops expand into exactly the primitive nodes their ops.yaml programs say, with
// attribute structs and value types worked out by hand from the program text (not by running the code), and
// broken programs or bad launches fail with the right status and a message naming the op and the line.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "primkit/op_info.hpp"

using namespace pk::meta;

namespace {

const OpInfo &op_named(const char *name) {
  const OpInfo *op = find_op(name);
  if (op == nullptr) throw std::runtime_error(std::string("no op ") + name);
  return *op;
}

TensorType type(int32_t dtype, std::vector<int64_t> dims) {
  TensorType t{};
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) t.shape[d] = dims[d];
  return t;
}

std::vector<int64_t> dims(const TensorType &t) {
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}
std::vector<int64_t> list(const int64_t *v, int32_t n) {
  return std::vector<int64_t>(v, v + n);
}

std::vector<std::string> node_names(const Decomposition &d) {
  std::vector<std::string> names;
  for (const DecomposedNode &n : d.nodes) names.push_back(op_name(n.op_id));
  return names;
}

// The node's attribute struct as the callee's C type; the bytes must be exactly the struct.
template <class T>
T attrs_of(const DecomposedNode &n) {
  T a;
  std::memset(&a, 0, sizeof a);
  EXPECT_EQ(n.attrs.size(), sizeof(T)) << op_name(n.op_id);
  std::memcpy(&a, n.attrs.data(), std::min(sizeof a, n.attrs.size()));
  EXPECT_EQ(a.struct_size, sizeof(T)) << op_name(n.op_id);
  return a;
}

bool run(const OpInfo &op, const std::vector<TensorType> &in, const void *attrs, Decomposition &d, Diag &diag) {
  return decompose(op, in.data(), static_cast<uint32_t>(in.size()), attrs, d, diag);
}

// An op-table row with another program: the cache is keyed by the text, so each literal is parsed on its own.
OpInfo with_program(const char *base, const char *text) {
  OpInfo op = op_named(base);
  op.decomposition = text;
  return op;
}

bool contains(const char *haystack, const std::string &needle) {
  return std::strstr(haystack, needle.c_str());
}

}  // namespace

TEST(Decomposition, SoftmaxAlongTheLastAxisIsThePrimitiveChainOfItsProgram) {
  pk_attrs_softmax a = PK_ATTRS_SOFTMAX_INIT;
  a.dim = 1;
  Decomposition d;
  Diag diag;
  ASSERT_TRUE(run(op_named("softmax"), {type(PK_DTYPE_F32, {2, 3})}, &a, d, diag)) << diag.message;
  // keep = [0]; m = amax dims [1]; e = exp(sub(x, bcast(m))); s = sum dims [1]; out = div(e, bcast(s)).
  ASSERT_EQ(node_names(d),
            (std::vector<std::string>{"amax", "broadcast_in_dim", "sub", "exp", "sum", "broadcast_in_dim", "div"}));
  ASSERT_EQ(d.values.size(), 8u);
  for (const TensorType &t : d.values) EXPECT_EQ(t.dtype, PK_DTYPE_F32);
  const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {2}, {2, 3}, {2, 3}, {2, 3}, {2}, {2, 3}, {2, 3}};
  for (size_t v = 0; v < shapes.size(); ++v) EXPECT_EQ(dims(d.values[v]), shapes[v]) << "value " << v;

  const std::vector<std::vector<int32_t>> ins = {{0}, {1}, {0, 2}, {3}, {4}, {5}, {4, 6}};
  for (size_t k = 0; k < ins.size(); ++k) {
    EXPECT_EQ(d.nodes[k].inputs, ins[k]) << "node " << k;
    EXPECT_EQ(d.nodes[k].outputs, std::vector<int32_t>{static_cast<int32_t>(k + 1)}) << "node " << k;
  }
  auto amax = attrs_of<pk_attrs_amax>(d.nodes[0]);
  EXPECT_EQ(list(amax.dims, amax.num_dims), (std::vector<int64_t>{1}));
  for (size_t k : {1u, 5u}) {
    auto b = attrs_of<pk_attrs_broadcast_in_dim>(d.nodes[k]);
    EXPECT_EQ(list(b.shape, b.num_shape), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(list(b.broadcast_dimensions, b.num_broadcast_dimensions), (std::vector<int64_t>{0}));
  }
  auto sum = attrs_of<pk_attrs_sum>(d.nodes[4]);
  EXPECT_EQ(list(sum.dims, sum.num_dims), (std::vector<int64_t>{1}));
  for (size_t k : {2u, 3u, 6u}) EXPECT_TRUE(d.nodes[k].attrs.empty()) << "node " << k << " has no attributes";
  EXPECT_EQ(d.outputs, std::vector<int32_t>{7});
}

TEST(Decomposition, SoftmaxAlongTheFirstAxisKeepsAxisOne) {
  pk_attrs_softmax a = PK_ATTRS_SOFTMAX_INIT;
  a.dim = 0;
  Decomposition d;
  Diag diag;
  ASSERT_TRUE(run(op_named("softmax"), {type(PK_DTYPE_F64, {2, 3})}, &a, d, diag)) << diag.message;
  ASSERT_EQ(d.nodes.size(), 7u);
  auto amax = attrs_of<pk_attrs_amax>(d.nodes[0]);
  EXPECT_EQ(list(amax.dims, amax.num_dims), (std::vector<int64_t>{0}));
  EXPECT_EQ(dims(d.values[1]), (std::vector<int64_t>{3}));
  auto b = attrs_of<pk_attrs_broadcast_in_dim>(d.nodes[1]);
  EXPECT_EQ(list(b.broadcast_dimensions, b.num_broadcast_dimensions), (std::vector<int64_t>{1}));
  EXPECT_EQ(d.values[d.outputs[0]].dtype, PK_DTYPE_F64);
}

TEST(Decomposition, ReluIsFillZeroThenMaximum) {
  Decomposition d;
  Diag diag;
  // relu has no attributes: attrs may be NULL.
  ASSERT_TRUE(run(op_named("relu"), {type(PK_DTYPE_F32, {4, 5})}, nullptr, d, diag)) << diag.message;
  ASSERT_EQ(node_names(d), (std::vector<std::string>{"fill", "maximum"}));
  EXPECT_EQ(d.nodes[0].inputs, std::vector<int32_t>{0});
  EXPECT_EQ(d.nodes[0].outputs, std::vector<int32_t>{1});
  EXPECT_EQ(attrs_of<pk_attrs_fill>(d.nodes[0]).value, 0.0);
  EXPECT_EQ(d.values[1].dtype, PK_DTYPE_F32);
  EXPECT_EQ(dims(d.values[1]), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(d.nodes[1].inputs, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(d.nodes[1].outputs, std::vector<int32_t>{2});
  EXPECT_EQ(d.outputs, std::vector<int32_t>{2});
}

// softplus's row: bx = mul(x, fill(beta)); soft = div(log1p(exp(bx)), fill(beta)); out = where(gt(bx, fill(threshold)),
// x, soft). In f16, exp(bx) overflows for x > 11.09 and the program alone would give +inf up to the threshold; the
// row's opmath (f32, the default of a bound contract) makes the program run on an f32 copy of x and round once.
TEST(Decomposition, NarrowFloatCompositesComputeInF32AndRoundOnce) {
  for (int32_t dt : {PK_DTYPE_F16, PK_DTYPE_BF16}) {
    Decomposition d;
    Diag diag;
    ASSERT_TRUE(run(op_named("softplus"), {type(dt, {7})}, nullptr, d, diag)) << diag.message;
    const std::vector<std::string> names = node_names(d);
    ASSERT_GE(names.size(), 3u);
    EXPECT_EQ(names.front(), "convert_element_type");
    EXPECT_EQ(names.back(), "convert_element_type");
    EXPECT_EQ(d.nodes.front().inputs, std::vector<int32_t>{0});
    EXPECT_EQ(attrs_of<pk_attrs_convert_element_type>(d.nodes.front()).dtype, PK_DTYPE_F32);
    EXPECT_EQ(attrs_of<pk_attrs_convert_element_type>(d.nodes.back()).dtype, dt);
    EXPECT_EQ(d.outputs, d.nodes.back().outputs);
    EXPECT_EQ(d.values[static_cast<size_t>(d.outputs[0])].dtype, dt);
    // Between the two converts nothing reads the narrow input or computes in a narrow type (comparisons give
    // bool masks).
    for (size_t k = 1; k + 1 < d.nodes.size(); ++k) {
      for (int32_t v : d.nodes[k].inputs) EXPECT_NE(v, 0) << names[k] << " reads the f16/bf16 input";
      for (int32_t v : d.nodes[k].outputs) {
        const int32_t got = d.values[static_cast<size_t>(v)].dtype;
        EXPECT_TRUE(got == PK_DTYPE_F32 || got == PK_DTYPE_BOOL) << names[k] << " computes in dtype " << got;
      }
    }
  }
  // f32 and f64 launches are unchanged: no converts.
  Decomposition d;
  Diag diag;
  ASSERT_TRUE(run(op_named("softplus"), {type(PK_DTYPE_F32, {7})}, nullptr, d, diag)) << diag.message;
  for (const std::string &n : node_names(d)) EXPECT_NE(n, "convert_element_type");
  // opmath: none rows (linear: one dot_general accumulating in f32 by contract) keep the input dtype.
  Decomposition l;
  ASSERT_TRUE(run(op_named("linear"),
                  {type(PK_DTYPE_BF16, {2, 3}), type(PK_DTYPE_BF16, {4, 3}), type(PK_DTYPE_BF16, {4})}, nullptr, l,
                  diag))
      << diag.message;
  for (const std::string &n : node_names(l)) EXPECT_NE(n, "convert_element_type");
  // Exact rows (relu) never convert.
  Decomposition r;
  ASSERT_TRUE(run(op_named("relu"), {type(PK_DTYPE_F16, {3})}, nullptr, r, diag)) << diag.message;
  EXPECT_EQ(node_names(r), (std::vector<std::string>{"fill", "maximum"}));
}

TEST(Decomposition, BadLaunchesFailAsInvalidArgumentsNamingTheOp) {
  const OpInfo &softmax = op_named("softmax");
  pk_attrs_softmax a = PK_ATTRS_SOFTMAX_INIT;
  a.dim = 1;
  Decomposition d;
  Diag diag;
  EXPECT_FALSE(run(softmax, {type(PK_DTYPE_I32, {2, 3})}, &a, d, diag));
  EXPECT_EQ(diag.status, PK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(diag.message, "softmax")) << diag.message;
  EXPECT_TRUE(contains(diag.message, "i32")) << diag.message;
  EXPECT_TRUE(d.nodes.empty() && d.values.empty() && d.outputs.empty());

  a.dim = 2;
  diag = Diag{};
  EXPECT_FALSE(run(softmax, {type(PK_DTYPE_F32, {2, 3})}, &a, d, diag));
  EXPECT_EQ(diag.status, PK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(diag.message, "softmax") && contains(diag.message, "dim")) << diag.message;

  a.dim = 0;
  diag = Diag{};
  EXPECT_FALSE(run(softmax, {}, &a, d, diag));
  EXPECT_EQ(diag.status, PK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(diag.message, "softmax")) << diag.message;

  // dim has no default, so NULL attributes are the caller's mistake.
  diag = Diag{};
  EXPECT_FALSE(run(softmax, {type(PK_DTYPE_F32, {2, 3})}, nullptr, d, diag));
  EXPECT_EQ(diag.status, PK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(diag.message, "softmax")) << diag.message;

  diag = Diag{};
  EXPECT_FALSE(run(op_named("exp"), {type(PK_DTYPE_F32, {2})}, nullptr, d, diag));
  EXPECT_EQ(diag.status, PK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(diag.message, "exp")) << diag.message;
}

TEST(Decomposition, DerivedShapesComeFromTheProgram) {
  // glu on [3, 4] along 1: n = 2, a = x[:, 0:2], b = x[:, 2:4], out = a * sigmoid(b) of shape [3, 2].
  pk_attrs_glu a = PK_ATTRS_GLU_INIT;
  a.dim = 1;
  const OpInfo &glu = op_named("glu");
  Decomposition d;
  Diag diag;
  ASSERT_TRUE(run(glu, {type(PK_DTYPE_F32, {3, 4})}, &a, d, diag)) << diag.message;
  ASSERT_EQ(node_names(d), (std::vector<std::string>{"slice_in_dim", "slice_in_dim", "fill", "fill", "neg", "exp",
                                                     "add", "div", "mul"}));
  auto s0 = attrs_of<pk_attrs_slice_in_dim>(d.nodes[0]);
  EXPECT_EQ(s0.start, 0);
  EXPECT_EQ(s0.limit, 2);
  EXPECT_EQ(s0.stride, 1);  // the table default
  EXPECT_EQ(s0.dim, 1);
  auto s1 = attrs_of<pk_attrs_slice_in_dim>(d.nodes[1]);
  EXPECT_EQ(s1.start, 2);
  EXPECT_EQ(s1.limit, 4);
  EXPECT_EQ(attrs_of<pk_attrs_fill>(d.nodes[2]).value, 1.0);
  EXPECT_EQ(dims(d.values[d.outputs[0]]), (std::vector<int64_t>{3, 2}));

  // infer_outputs of a derived op runs the program too.
  TensorType in = type(PK_DTYPE_F32, {3, 5}), out{};
  ASSERT_TRUE(infer_outputs(glu, &in, 1, &a, &out, diag)) << diag.message;
  EXPECT_EQ(out.dtype, PK_DTYPE_F32);
  EXPECT_EQ(dims(out), (std::vector<int64_t>{3, 2}));  // 5 // 2 = 2: the odd element is dropped
}

TEST(Decomposition, APrimitiveRejectingADerivedLaunchIsReportedWithTheLine) {
  // prelu: weight must have x's channel count (axis 1); broadcast_in_dim is what notices.
  Decomposition d;
  Diag diag;
  EXPECT_FALSE(run(op_named("prelu"), {type(PK_DTYPE_F32, {2, 3, 4}), type(PK_DTYPE_F32, {4})}, nullptr, d, diag));
  EXPECT_EQ(diag.status, PK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(diag.message, "prelu decomposition line 1 (broadcast_in_dim): ")) << diag.message;
}

TEST(Decomposition, MultiOutputCallsBindSeveralNames) {
  // kthvalue k=2 along 1 of [3, 5]: v, i = sort(x, dim=1); each is sliced to [3, 1] and squeezed to [3].
  pk_attrs_kthvalue a = PK_ATTRS_KTHVALUE_INIT;
  a.k = 2;
  a.dim = 1;
  Decomposition d;
  Diag diag;
  ASSERT_TRUE(run(op_named("kthvalue"), {type(PK_DTYPE_F32, {3, 5})}, &a, d, diag)) << diag.message;
  ASSERT_EQ(node_names(d), (std::vector<std::string>{"sort", "slice_in_dim", "squeeze", "slice_in_dim", "squeeze"}));
  EXPECT_EQ(d.nodes[0].outputs, (std::vector<int32_t>{1, 2}));
  auto sort = attrs_of<pk_attrs_sort>(d.nodes[0]);
  EXPECT_EQ(sort.dim, 1);
  EXPECT_EQ(sort.descending, 0);  // defaults
  EXPECT_EQ(sort.stable, 1);
  EXPECT_EQ(d.values[1].dtype, PK_DTYPE_F32);
  EXPECT_EQ(d.values[2].dtype, PK_DTYPE_I64);
  auto sl = attrs_of<pk_attrs_slice_in_dim>(d.nodes[1]);
  EXPECT_EQ(sl.start, 1);
  EXPECT_EQ(sl.limit, 2);
  EXPECT_EQ(d.nodes[1].inputs, std::vector<int32_t>{1});
  EXPECT_EQ(d.nodes[3].inputs, std::vector<int32_t>{2});
  ASSERT_EQ(d.outputs.size(), 2u);
  EXPECT_EQ(d.values[d.outputs[0]].dtype, PK_DTYPE_F32);
  EXPECT_EQ(d.values[d.outputs[1]].dtype, PK_DTYPE_I64);
  EXPECT_EQ(dims(d.values[d.outputs[0]]), std::vector<int64_t>{3});

  // argsort returns the second output only, and passes its bool attribute through.
  pk_attrs_argsort s = PK_ATTRS_ARGSORT_INIT;
  s.dim = 0;
  s.descending = 1;
  ASSERT_TRUE(run(op_named("argsort"), {type(PK_DTYPE_I32, {3, 5})}, &s, d, diag)) << diag.message;
  ASSERT_EQ(node_names(d), std::vector<std::string>{"sort"});
  EXPECT_EQ(attrs_of<pk_attrs_sort>(d.nodes[0]).descending, 1);
  EXPECT_EQ(d.outputs, std::vector<int32_t>{2});
}

TEST(Decomposition, RollUsesFloorDivisionOfNegativeShifts) {
  // roll shift=-7 along 1 of [3, 5]: m = 5, s = -7 - 5 * (-7 // 5) = -7 - 5 * -2 = 3; a = x[:, 2:5], b = x[:, 0:2].
  pk_attrs_roll a = PK_ATTRS_ROLL_INIT;
  a.shift = -7;
  a.dim = 1;
  Decomposition d;
  Diag diag;
  ASSERT_TRUE(run(op_named("roll"), {type(PK_DTYPE_F32, {3, 5})}, &a, d, diag)) << diag.message;
  ASSERT_EQ(node_names(d), (std::vector<std::string>{"slice_in_dim", "slice_in_dim", "cat"}));
  auto s0 = attrs_of<pk_attrs_slice_in_dim>(d.nodes[0]);
  EXPECT_EQ(s0.start, 2);
  EXPECT_EQ(s0.limit, 5);
  auto s1 = attrs_of<pk_attrs_slice_in_dim>(d.nodes[1]);
  EXPECT_EQ(s1.start, 0);
  EXPECT_EQ(s1.limit, 2);
  EXPECT_EQ(d.nodes[2].inputs, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(attrs_of<pk_attrs_cat>(d.nodes[2]).dim, 1);
  EXPECT_EQ(dims(d.values[d.outputs[0]]), (std::vector<int64_t>{3, 5}));
}

TEST(Decomposition, ValueArithmeticAndFunctions) {
  Decomposition d;
  Diag diag;
  // x: f32[7]. n = 9 // 3 = 3; value = 3 + 1.0 / 4.0 - (-7 // 2) = 3 + 0.25 + 4 = 7.25.
  OpInfo arith = with_program("relu",
                              "n = (size(x, 0) + 2) // 3\n"
                              "out = maximum(x, fill(x, value=n + 1.0 / float(4) - -7 // 2))\n"
                              "return out");
  ASSERT_TRUE(run(arith, {type(PK_DTYPE_F32, {7})}, nullptr, d, diag)) << diag.message;
  EXPECT_EQ(attrs_of<pk_attrs_fill>(d.nodes[0]).value, 7.25);

  // x: f32[2,3,4]. permute_inverse([1,2,0]) = [2,0,1], so t is [4,2,3]; prod([2,3]) = 6,
  // at(without([0,1,2], [0,2]), 0) = 1, min(2, 3.5) = 2.0, max(24, 1) = 24: value 33.
  OpInfo lists = with_program("relu",
                              "p = permute_inverse([1, 2, 0])\n"
                              "t = transpose(x, permutation=p)\n"
                              "back = transpose(t, permutation=[1, 2, 0])\n"
                              "v = prod(slice_list(shape(t), 1, 3)) + at(without(iota(rank(x)), [0, 2]), 0)\n"
                              "out = maximum(back, fill(x, value=v + min(2, 3.5) + max(numel(x), 1)))\n"
                              "return out");
  ASSERT_TRUE(run(lists, {type(PK_DTYPE_F32, {2, 3, 4})}, nullptr, d, diag)) << diag.message;
  ASSERT_EQ(node_names(d), (std::vector<std::string>{"transpose", "transpose", "fill", "maximum"}));
  auto p = attrs_of<pk_attrs_transpose>(d.nodes[0]);
  EXPECT_EQ(list(p.permutation, p.num_permutation), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(dims(d.values[1]), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(attrs_of<pk_attrs_fill>(d.nodes[2]).value, 33.0);

  // reverse [2,3] -> [3,2]; insert 2 at 0 -> [2,3,2]; concat [1,1] -> [2,3,2,1,1]; remove index 2 -> [2,3,1,1].
  OpInfo more = with_program("relu",
                             "s = remove(concat(insert(reverse(shape(x)), 0, 2), repeat(1, 2)), 2)\n"
                             "b = broadcast_in_dim(x, shape=s, broadcast_dimensions=[0, 1])\n"
                             "out = exp(x)\n"
                             "return out");
  ASSERT_TRUE(run(more, {type(PK_DTYPE_F32, {2, 3})}, nullptr, d, diag)) << diag.message;
  auto b = attrs_of<pk_attrs_broadcast_in_dim>(d.nodes[0]);
  EXPECT_EQ(list(b.shape, b.num_shape), (std::vector<int64_t>{2, 3, 1, 1}));

  // Dtype values: compute_dtype(f16) is f32; the returned input itself is allowed (identity).
  OpInfo dt = with_program("relu",
                           "c = compute_dtype(x)\n"
                           "y = convert_element_type(x, dtype=c)  # a trailing comment\n"
                           "\n"
                           "# a comment line\n"
                           "out = convert_element_type(y, dtype=dtype(x))\n"
                           "return out");
  ASSERT_TRUE(run(dt, {type(PK_DTYPE_F16, {2})}, nullptr, d, diag)) << diag.message;
  EXPECT_EQ(attrs_of<pk_attrs_convert_element_type>(d.nodes[0]).dtype, PK_DTYPE_F32);
  EXPECT_EQ(d.values[1].dtype, PK_DTYPE_F32);
  EXPECT_EQ(attrs_of<pk_attrs_convert_element_type>(d.nodes[1]).dtype, PK_DTYPE_F16);

  OpInfo identity = with_program("relu", "return x");
  ASSERT_TRUE(run(identity, {type(PK_DTYPE_F32, {2})}, nullptr, d, diag)) << diag.message;
  EXPECT_TRUE(d.nodes.empty());
  EXPECT_EQ(d.outputs, std::vector<int32_t>{0});
}

TEST(Decomposition, BrokenProgramsAreInternalErrorsWithTheirLine) {
  struct Case {
    const char *text;
    int line;
    const char *reason;
  };
  const Case cases[] = {
      {"keep = remove(iota(rank(x)), dim)\nm = amax(x, dims=[dim]\nreturn m", 2, "expected ')'"},
      {"m = amax(x, dims=[dim])\n\n# comment\nout = bogus_op(m)\nreturn out", 4, "bogus_op"},
      {"out = exp(y)\nreturn out", 1, "y"},
      {"out = softmax(x, dim=dim)\nreturn out", 1, "composite"},
      {"v = sort(x, dim=dim)\nreturn v", 1, "bind them all"},
      {"v, i = sort(exp(sort(x, dim=dim)), dim=dim)\nreturn v", 1, "cannot be nested"},
      {"out = exp(x)\nreturn out, out", 2, "returns 2 values"},
      {"out = amax(x, dim=dim)\nreturn out", 1, "amax has no attribute dim"},
      {"out = amax(x)\nreturn out", 1, "attribute dims of callee amax has no default and is not given"},
      {"out = exp(x)", 1, "return"},
      {"out = exp(x) $ 2\nreturn out", 1, "unexpected character '$'"},
      {"out = exp(x)\nreturn out\nz = exp(x)", 3, "after `return`"},
      {"k = shape(3)\nout = exp(x)\nreturn out", 1, "shape() needs a tensor"},
      {"k = 1 + x\nout = exp(x)\nreturn out", 1, "values, not tensors"},
      {"out = exp(dim)\nreturn out", 1, "not a tensor"},
      {"k = dim\nreturn k", 2, "not a tensor"},
      {"out = add(x, x, dims=[0])\nreturn out", 1, "add has no attribute dims"},
      {"out = exp(x, x)\nreturn out", 1, "exp takes 1 tensor, got 2"},
  };
  for (const Case &c : cases) {
    OpInfo op = with_program("softmax", c.text);
    pk_attrs_softmax a = PK_ATTRS_SOFTMAX_INIT;
    a.dim = 1;
    for (int attempt = 0; attempt < 2; ++attempt) {  // the second run hits the cache
      Decomposition d;
      Diag diag;
      EXPECT_FALSE(run(op, {type(PK_DTYPE_F32, {2, 3})}, &a, d, diag)) << c.text;
      EXPECT_EQ(diag.status, PK_ERROR_INTERNAL) << c.text;
      std::string where = "softmax: decomposition line " + std::to_string(c.line) + ": ";
      EXPECT_TRUE(contains(diag.message, where)) << c.text << "\n -> " << diag.message;
      EXPECT_TRUE(contains(diag.message, c.reason)) << c.text << "\n -> " << diag.message;
    }
  }
}

TEST(Decomposition, EvaluationErrors) {
  pk_attrs_softmax a = PK_ATTRS_SOFTMAX_INIT;
  a.dim = 1;
  const std::vector<TensorType> in = {type(PK_DTYPE_F32, {2, 3})};
  struct Case {
    const char *text;
    pk_status status;
    const char *message;
  };
  const Case cases[] = {
      // Indices are not Python-like: -1 is out of range.
      {"n = at(shape(x), 0 - 1)\nout = exp(x)\nreturn out", PK_ERROR_INVALID_ARGUMENT,
       "softmax: decomposition line 1: at(): index -1 is outside 0..1"},
      {"n = size(x, 2)\nout = exp(x)\nreturn out", PK_ERROR_INVALID_ARGUMENT, "line 1: size(): axis 2"},
      {"n = 1 // (size(x, 0) - 2)\nout = exp(x)\nreturn out", PK_ERROR_INVALID_ARGUMENT, "integer division by zero"},
      {"n = slice_list(shape(x), 1, 3)\nout = exp(x)\nreturn out", PK_ERROR_INVALID_ARGUMENT, "slice_list(): end 3"},
      {"n = shape(x) + 1\nout = exp(x)\nreturn out", PK_ERROR_INTERNAL, "line 1: an operand of + must be a number"},
      {"n = 2.5 // 2\nout = exp(x)\nreturn out", PK_ERROR_INTERNAL, "integer floor division"},
      {"out = fill(x, value=true)\nreturn out", PK_ERROR_INTERNAL,
       "attribute value of fill needs a number, got a bool"},
      {"out = amax(x, dims=dim)\nreturn out", PK_ERROR_INTERNAL, "attribute dims of amax needs a list, got an int"},
      {"out = broadcast_in_dim(x, shape=repeat(1, 9), broadcast_dimensions=[0, 1])\nreturn out",
       PK_ERROR_INVALID_ARGUMENT, "attribute shape of broadcast_in_dim gets 9 values; at most 8"},
      // A primitive's own check, prefixed with the composite and the line, keeping its status.
      {"m = exp(x)\nout = add(x, amax(m, dims=[dim]))\nreturn out", PK_ERROR_INVALID_ARGUMENT,
       "softmax decomposition line 2 (add): add: "},
      // The program's result must match the table's shape rule (same_as_input here).
      {"out = amax(x, dims=[dim])\nreturn out", PK_ERROR_INTERNAL,
       "decomposition of softmax yields f32[2] for output 0 (out) but the op table says f32[2,3]"},
  };
  for (const Case &c : cases) {
    OpInfo op = with_program("softmax", c.text);
    Decomposition d;
    Diag diag;
    EXPECT_FALSE(run(op, in, &a, d, diag)) << c.text;
    EXPECT_EQ(diag.status, c.status) << c.text << "\n -> " << diag.message;
    EXPECT_TRUE(contains(diag.message, c.message)) << c.text << "\n -> " << diag.message;
    EXPECT_TRUE(d.nodes.empty() && d.values.empty() && d.outputs.empty()) << c.text;
  }
}

// Every composite of the table decomposes its example (or, without one, f32[2,3] inputs and default attributes)
// into primitives in topological order.
TEST(Decomposition, EveryCompositeDecomposes) {
  int count = 0;
  for (const OpInfo *op = ops_begin(); op != ops_end(); ++op) {
    if (op->tier != Tier::composite || op->variadic()) continue;
    ++count;
    std::vector<TensorType> in;
    alignas(16) unsigned char attrs[kMaxAttrsSize] = {0};
    Diag diag;
    if (op->example) {
      ASSERT_TRUE(parse_example(*op, op->example, in, attrs, diag)) << op->name << ": " << diag.message;
    } else {
      default_attrs(*op, attrs);
      for (uint32_t i = 0; i < op->num_inputs; ++i) {
        const OperandInfo &o = op->inputs[i];
        int32_t dt = o.fixed_dtype;
        if (o.type_var >= 0) {
          uint32_t mask = op->type_vars[o.type_var].dtype_mask;
          dt = (mask & (1u << PK_DTYPE_F32)) ? PK_DTYPE_F32 : __builtin_ctz(mask);
        }
        in.push_back(type(dt, {2, 3}));
      }
    }
    Decomposition d;
    ASSERT_TRUE(run(*op, in, op->attrs_size ? attrs : nullptr, d, diag)) << op->name << ": " << diag.message;
    ASSERT_EQ(d.outputs.size(), op->num_outputs) << op->name;
    int32_t next = static_cast<int32_t>(in.size());
    for (const DecomposedNode &n : d.nodes) {
      const OpInfo *callee = find_op(n.op_id);
      ASSERT_NE(callee, nullptr) << op->name;
      EXPECT_EQ(callee->tier, Tier::primitive) << op->name;
      EXPECT_EQ(n.attrs.size(), callee->attrs_size) << op->name << " -> " << callee->name;
      for (int32_t v : n.inputs) EXPECT_LT(v, next) << op->name << " -> " << callee->name;
      for (int32_t v : n.outputs) EXPECT_EQ(v, next++) << op->name << " -> " << callee->name;
    }
    EXPECT_EQ(static_cast<size_t>(next), d.values.size()) << op->name;
  }
  EXPECT_GE(count, 90);
}

TEST(Decomposition, ConcurrentDecompositionsAgree) {
  const OpInfo &ln = op_named("layer_norm");
  std::vector<TensorType> in;
  alignas(16) unsigned char attrs[kMaxAttrsSize] = {0};
  Diag diag;
  ASSERT_TRUE(parse_example(ln, ln.example, in, attrs, diag)) << diag.message;
  Decomposition ref;
  ASSERT_TRUE(run(ln, in, attrs, ref, diag)) << diag.message;
  // A program text no thread has parsed yet, so the threads race on the first parse too.
  OpInfo fresh = with_program("relu", "y = exp(x)\nout = maximum(x, y)\nreturn out");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        Decomposition d;
        Diag local;
        if (!run(ln, in, attrs, d, local) || d.nodes.size() != ref.nodes.size()) ++failures;
        TensorType x = type(PK_DTYPE_F32, {3});
        if (!decompose(fresh, &x, 1, nullptr, d, local) || d.nodes.size() != 2) ++failures;
      }
    });
  }
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}
