// The op table as data: coverage of the required op sets, and every row's example launch inferred to the
// output shapes worked out by hand from the op's documented semantics (not from running the shape code).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"

using namespace pk::meta;

namespace {

std::vector<TensorType> infer_example(const OpInfo &op, Diag &d, bool &ok) {
  std::vector<TensorType> in;
  alignas(16) unsigned char attrs[kMaxAttrsSize];
  ok = parse_example(op, op.example, in, attrs, d) &&
       check_attrs(op, op.attrs_size ? attrs : nullptr, in.data(), static_cast<uint32_t>(in.size()), d);
  std::vector<TensorType> out(op.num_outputs);
  if (ok) {
    ok = infer_outputs(op, in.data(), static_cast<uint32_t>(in.size()), op.attrs_size ? attrs : nullptr, out.data(), d);
  }
  return out;
}

std::vector<int64_t> dims(const TensorType &t) {
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}

}  // namespace

TEST(OpTable, HasBothTiersAndAtLeast240Ops) {
  uint32_t prim = 0, comp = 0;
  for (const OpInfo *op = ops_begin(); op != ops_end(); ++op) (op->tier == Tier::primitive ? prim : comp)++;
  EXPECT_GE(op_count(), 240u);
  EXPECT_GE(prim, 140u);
  EXPECT_GE(comp, 90u);
  EXPECT_EQ(prim + comp, op_count());
}

TEST(OpTable, CoversThePrimTorchPrimsWeNeed) {
  // torch._prims names (reference/op-sets.md) minus those that are runtime concerns here (device_put, item,
  // resize, empty_*: buffers are the runtime's; conj: a lazy view flag, conj_physical covers the values; svd).
  const char *prims[] = {
      "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "bessel_i0", "bessel_i0e", "bessel_i1",
      "bessel_i1e", "bessel_j0", "bessel_j1", "bitwise_not", "cbrt", "ceil", "conj_physical", "digamma", "erf",
      "erf_inv", "erfc", "erfcx", "exp", "expm1", "exp2", "fill", "floor", "imag", "isfinite", "lgamma", "log", "log1p",
      "log2", "log10", "ndtri", "neg", "real", "reciprocal", "round", "sign", "signbit", "sin", "sinh",
      "spherical_bessel_j0", "sqrt", "tan", "tanh", "trunc", "add", "atan2", "bitwise_and", "bitwise_or", "bitwise_xor",
      "div", "fmax", "fmin", "fmod", "gcd", "hypot", "igamma", "igammac", "maximum", "minimum", "mul", "nextafter",
      "pow", "remainder", "rsqrt", "shift_left", "shift_right_arithmetic", "shift_right_logical", "sub", "zeta", "eq",
      "ne", "ge", "gt", "le", "lt", "where", "amax", "amin", "prod", "sum", "xor_sum", "var", "as_strided",
      "broadcast_in_dim", "collapse_view", "expand_dims", "slice", "slice_in_dim", "split_dim", "squeeze", "transpose",
      "view_of", "as_strided_scatter", "collapse", "cat", "reshape", "rev", "clone", "convert_element_type",
      "maximum_value", "minimum_value", "copy_to", "scalar_tensor", "iota", "fft_r2c", "fft_c2c", "fft_c2r",
      // what prims lack (issue 2)
      "matmul", "batch_matmul", "dot_general", "convolution", "gather", "scatter", "index_select", "index_put", "sort",
      "topk", "cumsum", "cumprod", "argmax", "argmin", "philox_uniform", "philox_normal"};
  for (const char *n : prims) {
    const OpInfo *op = find_op(n);
    ASSERT_NE(op, nullptr) << n;
    EXPECT_EQ(op->tier, Tier::primitive) << n;
  }
}

TEST(OpTable, CoversTheRequiredComposites) {
  const char *names[] = {"softmax",
                         "log_softmax",
                         "layer_norm",
                         "rms_norm",
                         "group_norm",
                         "batch_norm",
                         "relu",
                         "gelu",
                         "gelu_tanh",
                         "silu",
                         "sigmoid",
                         "hardtanh",
                         "leaky_relu",
                         "elu",
                         "clamp",
                         "linear",
                         "addmm",
                         "max_pool2d",
                         "avg_pool2d",
                         "adaptive_avg_pool2d",
                         "constant_pad_nd",
                         "reflection_pad2d",
                         "replication_pad2d",
                         "upsample_nearest2d",
                         "upsample_bilinear2d",
                         "embedding",
                         "scaled_dot_product_attention",
                         "dropout"};
  for (const char *n : names) {
    const OpInfo *op = find_op(n);
    ASSERT_NE(op, nullptr) << n;
    EXPECT_EQ(op->tier, Tier::composite) << n;
    EXPECT_NE(op->decomposition, nullptr) << n;
  }
}

TEST(OpTable, IdsAreStableAndLookupsAgree) {
  // A few ids are frozen by the ABI: changing them breaks every compiled plugin.
  EXPECT_EQ(PK_OP_ABS, 1);
  EXPECT_EQ(PK_OP_ADD, 100);
  EXPECT_EQ(PK_OP_SUM, 300);
  EXPECT_EQ(PK_OP_MATMUL, 800);
  EXPECT_EQ(PK_OP_RELU, 1000);
  EXPECT_EQ(PK_OP_SOFTMAX, 1001);
  for (const OpInfo *op = ops_begin(); op != ops_end(); ++op) {
    EXPECT_EQ(find_op(op->id), op);
    EXPECT_EQ(find_op(op->name), op);
    EXPECT_EQ(op->tier == Tier::composite, op->id >= 1000) << op->name;
  }
  EXPECT_EQ(find_op(999u), nullptr);
  EXPECT_EQ(find_op("no_such_op"), nullptr);
}

TEST(OpTable, DtypeFacts) {
  EXPECT_EQ(dtype_size(PK_DTYPE_C128), 16u);
  EXPECT_EQ(dtype_size(PK_DTYPE_F8E5M2), 1u);
  EXPECT_EQ(real_of(PK_DTYPE_C64), PK_DTYPE_F32);
  EXPECT_EQ(complex_of(PK_DTYPE_F64), PK_DTYPE_C128);
  EXPECT_EQ(dtype_id(pk_dtype{PK_DTYPE_CODE_BFLOAT, 16, 1}), PK_DTYPE_BF16);
  EXPECT_EQ(dtype_id(pk_dtype{PK_DTYPE_CODE_FLOAT, 32, 4}), -1) << "vector lanes are no PrimKit dtype";
  EXPECT_STREQ(dtype_name(PK_DTYPE_F8E4M3FN), "f8e4m3fn");
}

// Output shapes of every example, derived by hand from each op's doc line in docs/ops.md.
TEST(OpTable, EveryExampleInfersTheHandDerivedShape) {
  const std::map<std::string, std::vector<std::vector<int64_t>>> expected = {
      {"argmax", {{3}}},
      {"argmin", {{4}}},
      {"broadcast_in_dim", {{2, 3}}},
      {"cat", {{2, 4}}},
      {"as_strided", {{3, 3}}},
      {"collapse_view", {{6, 4}}},
      {"expand_dims", {{1, 2, 3, 1}}},
      {"slice", {{2, 2}}},  // (4-1)/2 rounded up = 2, (6-0)/3 = 2
      {"slice_in_dim", {{5, 2}}},
      {"split_dim", {{3, 2, 2}}},
      {"squeeze", {{3}}},
      {"transpose", {{4, 2, 3}}},
      {"collapse", {{2, 12}}},
      {"reshape", {{3, 4}}},
      {"as_strided_scatter", {{4, 4}}},
      {"pad", {{4, 5}}},  // axis 0: 1 + 0 + 2 + 1 interior; axis 1: 0 + 2 + 3
      {"slice_scatter", {{4, 5}}},
      {"full", {{2, 3}}},
      {"iota", {{5}}},
      {"scalar_tensor", {{}}},
      {"maximum_value", {{}}},
      {"minimum_value", {{}}},
      {"philox_uniform", {{4, 5}}},
      {"philox_normal", {{6}}},
      {"philox_randint", {{8}}},
      {"matmul", {{4, 5}}},
      {"batch_matmul", {{2, 4, 5}}},
      {"dot_general", {{2, 3, 5}}},
      {"convolution", {{1, 6, 3, 5}}},  // H: (6+1+1-3)/2+1 = 3; W: (6+1+0-3)/1+1 = 5
      {"gather", {{3, 2}}},
      {"scatter", {{3, 4}}},
      {"scatter_reduce", {{3, 4}}},
      {"index_select", {{5, 3}}},
      {"index_put", {{4, 3}}},
      {"topk", {{3, 2}, {3, 2}}},
      {"searchsorted", {{2, 3}}},
      {"fft_r2c", {{4, 4}}},
      {"fft_c2r", {{4, 6}}},
      {"softmax", {{2, 5}}},
      {"log_softmax", {{3, 4}}},
      {"glu", {{3, 2}}},
      {"prelu", {{2, 3, 4}}},
      {"layer_norm", {{2, 3, 4}}},
      {"rms_norm", {{2, 3, 8}}},
      {"group_norm", {{2, 6, 3}}},
      {"batch_norm", {{2, 3, 4, 4}}},
      {"normalize", {{3, 4}}},
      {"linear", {{2, 3, 5}}},
      {"addmm", {{4, 5}}},
      {"baddbmm", {{2, 4, 5}}},
      {"outer", {{3, 4}}},
      {"dot", {{}}},
      {"mv", {{3}}},
      {"max_pool2d", {{1, 2, 3, 3}}},  // (5+2-2-1)/2+1 = 3, (6-1-1)/2+1 = 3
      {"avg_pool2d", {{1, 2, 3, 6}}},  // (5+2-2)/2+1 = 3, (6+2-3)/1+1 = 6
      {"adaptive_avg_pool2d", {{1, 2, 3, 2}}},
      {"constant_pad_nd", {{3, 6}}},
      {"reflection_pad2d", {{1, 6, 7}}},
      {"replication_pad2d", {{1, 6, 7}}},
      {"upsample_nearest2d", {{1, 2, 5, 8}}},
      {"upsample_bilinear2d", {{1, 2, 5, 7}}},
      {"embedding", {{2, 3, 4}}},
      {"one_hot", {{2, 3, 5}}},
      {"scaled_dot_product_attention", {{1, 2, 3, 6}}},
      {"scaled_dot_product_attention_masked", {{2, 6, 4, 7}}},
      {"dropout", {{4, 8}}},
      {"mse_loss", {{}}},
      {"l1_loss", {{}}},
      {"smooth_l1_loss", {{}}},
      {"huber_loss", {{}}},
      {"binary_cross_entropy", {{}}},
      {"cross_entropy", {{}}},
      {"nll_loss", {{}}},
      {"kl_div", {{}}},
      {"cosine_similarity", {{3}}},
      {"mean", {{4}}},
      {"std", {{3}}},
      {"logsumexp", {{3}}},
      {"vector_norm", {{}}},
      {"count_nonzero", {{3}}},
      {"nansum", {{3}}},
      {"var_mean", {{5}, {5}}},
      {"flatten", {{2, 12, 5}}},
      {"unsqueeze", {{2, 3, 1}}},
      {"movedim", {{3, 4, 2}}},
      {"narrow", {{4, 3}}},
      {"select", {{6}}},
      {"roll", {{3, 5}}},
      {"tril", {{2, 4, 5}}},
      {"triu", {{4, 3}}},
      {"eye", {{3, 4}}},
      {"linspace", {{7}}},
      {"t", {{5, 3}}},
      {"argsort", {{3, 5}}},
      {"kthvalue", {{3}, {3}}},
      {"clamp", {{2, 3}}},
      {"clamp_min", {{2, 3}}},
      {"clamp_max", {{2, 3}}}};
  std::set<std::string> seen;
  for (const OpInfo *op = ops_begin(); op != ops_end(); ++op) {
    if (op->example == nullptr) continue;
    Diag d;
    bool ok = false;
    std::vector<TensorType> out = infer_example(*op, d, ok);
    ASSERT_TRUE(ok) << op->name << ": " << d.message;
    auto it = expected.find(op->name);
    ASSERT_NE(it, expected.end()) << op->name << " has an example but no hand-derived shape in this test";
    ASSERT_EQ(it->second.size(), out.size()) << op->name;
    for (size_t k = 0; k < out.size(); ++k) EXPECT_EQ(dims(out[k]), it->second[k]) << op->name << " output " << k;
    seen.insert(op->name);
  }
  for (const auto &e : expected) EXPECT_TRUE(seen.count(e.first)) << e.first << " lost its example";
}

// The op's example text parsed, its attributes checked and its outputs inferred into `out`; false with `d` filled
// where any step refuses (a parse failure is a test error, reported through ADD_FAILURE).
static bool infer_example(const char *name, const char *example, std::vector<TensorType> &out, Diag &d) {
  const OpInfo *op = find_op(name);
  if (op == nullptr) {
    ADD_FAILURE() << name << " is not in the table";
    return false;
  }
  std::vector<TensorType> in;
  alignas(16) unsigned char attrs[kMaxAttrsSize];
  if (!parse_example(*op, example, in, attrs, d)) {
    ADD_FAILURE() << example << ": " << d.message;
    return false;
  }
  out.assign(op->num_outputs, TensorType{});
  const void *ap = op->attrs_size ? attrs : nullptr;
  return check_attrs(*op, ap, in.data(), static_cast<uint32_t>(in.size()), d) &&
         infer_outputs(*op, in.data(), static_cast<uint32_t>(in.size()), ap, out.data(), d);
}

// Strides, dilations and paddings anywhere up to 2^62 are valid where the output is: the shape rules form their
// sums in 128 bits, so a stride of 2^62 - 1 gives one element, not an overflowed extent.
TEST(OpTable, HugeStridesAndPaddingsGiveExactExtents) {
  struct Case {
    const char *op;
    const char *example;
    std::vector<int64_t> shape;
  } cases[] = {
      {"slice", "a: f32[5,6]; start_indices=[1,0]; limit_indices=[4,6]; strides=[4611686018427387903,1]", {1, 6}},
      {"slice_in_dim", "a: f32[5,6]; start=1; limit=5; stride=4611686018427387903; dim=1", {5, 1}},
      {"slice_in_dim", "a: f32[5,6]; start=3; limit=3; stride=4611686018427387903; dim=1", {5, 0}},
      // padded W = 6 + 2^61 + 1, span 3: (2^61 + 4) / 2^61 + 1 = 2
      {"convolution",
       "input: f32[1,4,6,6]; weight: f32[6,2,3,3]; stride=[1,2305843009213693952]; "
       "padding_low=[0,2305843009213693952]; padding_high=[0,1]; groups=2",
       {1, 6, 4, 2}},
      {"pad", "a: f32[3]; low=[-4611686018427387903]; high=[4611686018427387903]", {3}},
  };
  for (const Case &c : cases) {
    std::vector<TensorType> out;
    Diag d;
    ASSERT_TRUE(infer_example(c.op, c.example, out, d)) << c.op << ": " << d.message;
    EXPECT_EQ(std::vector<int64_t>(out[0].shape, out[0].shape + out[0].ndim), c.shape) << c.example;
  }
}

TEST(OpTable, BadShapesNameTheOpArgumentAndReason) {
  struct Case {
    const char *op;
    const char *example;
    std::vector<const char *> words;
  } cases[] = {
      {"reshape", "a: f32[2,6]; shape=[5,2]", {"reshape", "12", "10"}},
      // fuzz_launch: the element count of this shape overflowed int64 before it was compared (UBSan)
      {"reshape", "a: f32[2,6]; shape=[144115188075855875,65536]", {"reshape", "attribute shape"}},
      {"matmul", "a: f32[4,3]; b: f32[2,5]", {"matmul", "input 1 (b)", "K"}},
      {"broadcast_in_dim", "a: f32[3]; shape=[2,4]; broadcast_dimensions=[1]", {"broadcast_in_dim", "extent 3"}},
      {"cat", "tensors: f32[2,3], f32[3,1]; dim=1", {"cat", "input 1"}},
      // fuzz_query: extents each below 2^62 summed past 2^63 (UBSan)
      {"cat",
       "tensors: f32[2305843009213693952,0], f32[2305843009213693952,0], f32[2305843009213693952,0], "
       "f32[2305843009213693952,0], f32[2305843009213693952,0]; dim=0",
       {"cat", "input 1", "2^62"}},
      {"convolution", "input: f32[1,3,6,6]; weight: f32[6,2,3,3]; groups=2", {"convolution", "groups"}},
      {"pad", "a: f32[2]; low=[-3]; high=[0]", {"pad", "crop"}},
      // fuzz_attrs: a padding near 2^63 overflowed the padded extent (UBSan); offsets are bounded like extents
      {"convolution",
       "input: f32[1,4,6,6]; weight: f32[6,2,3,3]; padding_low=[1,8286623310970011649]; groups=2",
       {"convolution", "padding_low[1]", "2^62"}},
      {"convolution",
       "input: f32[1,4,6,6]; weight: f32[6,2,3,3]; padding_low=[0,4611686018427387903]; "
       "padding_high=[0,4611686018427387903]; groups=2",
       {"convolution", "spatial axis 1", "2^62"}},
      {"convolution",
       "input: f32[1,4,6,6]; weight: f32[6,2,3,3]; dilation=[1,4611686018427387903]; groups=2",
       {"convolution", "dilated kernel"}},
      {"pad", "a: f32[2]; low=[4611686018427387903]; high=[4611686018427387903]", {"pad", "axis 0", "2^62"}},
      {"pad", "a: f32[2]; low=[-9223372036854775807]; high=[0]", {"pad", "low[0]", "2^62"}},
      {"slice_scatter",
       "a: f32[4,5]; src: f32[4,2]; dim=1; start=1; stride=9223372036854775807",
       {"slice_scatter", "input 1 (src)", "overrun"}},
      {"layer_norm", "x: f32[2,3,4]; weight: f32[3]; bias: f32[4]", {"layer_norm", "broadcast_in_dim"}},
      {"softmax", "x: i32[2,3]; dim=1", {"softmax", "i32"}},
      {"group_norm", "x: f32[2,5,3]; weight: f32[5]; bias: f32[5]; num_groups=2", {"group_norm", "reshape"}},
  };
  for (const Case &c : cases) {
    std::vector<TensorType> out;
    Diag d;
    EXPECT_FALSE(infer_example(c.op, c.example, out, d)) << c.op;
    EXPECT_EQ(d.status, PK_ERROR_INVALID_ARGUMENT) << c.op << ": " << d.message;
    for (const char *w : c.words) EXPECT_NE(std::string(d.message).find(w), std::string::npos) << d.message;
  }
}
