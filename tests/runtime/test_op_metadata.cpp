// The op metadata of ABI 1.1 (pk_op_*), checked against facts written here by hand from docs/ops.md — not
// against the generated table the functions read — plus the required-attribute rule at launch.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

class OpMetadataTest : public RuntimeTest {};

TEST_F(OpMetadataTest, CountAndLookupAgreeWithTheHeader) {
  EXPECT_EQ(pk_op_count(), static_cast<uint32_t>(PK_OP_COUNT));
  uint32_t id = 0;
  ASSERT_EQ(pk_op_find("scaled_dot_product_attention", &id), PK_OK);
  EXPECT_EQ(id, static_cast<uint32_t>(PK_OP_SCALED_DOT_PRODUCT_ATTENTION));
  EXPECT_EQ(pk_op_find("no_such_op", &id), PK_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(last_error().message).find("no_such_op"), std::string::npos);
  EXPECT_EQ(pk_op_find(nullptr, &id), PK_ERROR_INVALID_ARGUMENT);
  // Positions run in ascending id order and cover every op once.
  uint32_t prev = 0;
  for (uint32_t i = 0; i < pk_op_count(); ++i) {
    pk_op_desc d;
    PK_STRUCT_INIT(d);
    ASSERT_EQ(pk_op_describe_at(i, &d), PK_OK);
    EXPECT_GT(d.op_id, prev);
    prev = d.op_id;
  }
  pk_op_desc d;
  PK_STRUCT_INIT(d);
  EXPECT_EQ(pk_op_describe_at(pk_op_count(), &d), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_op_describe(999999, &d), PK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_op_describe(PK_OP_ADD, nullptr), PK_ERROR_INVALID_ARGUMENT);
}

TEST_F(OpMetadataTest, AttentionRowMatchesTheTable) {
  pk_op_desc d;
  PK_STRUCT_INIT(d);
  ASSERT_EQ(pk_op_describe(PK_OP_SCALED_DOT_PRODUCT_ATTENTION, &d), PK_OK);
  EXPECT_STREQ(d.name, "scaled_dot_product_attention");
  EXPECT_STREQ(d.category, "attention");
  EXPECT_EQ(d.tier, PK_OP_TIER_COMPOSITE);
  EXPECT_EQ(d.num_inputs, 3u);
  EXPECT_EQ(d.num_outputs, 1u);
  EXPECT_EQ(d.num_attrs, 2u);
  EXPECT_EQ(d.attrs_size, sizeof(pk_attrs_scaled_dot_product_attention));
  EXPECT_EQ(d.contract, PK_CONTRACT_BOUND);
  ASSERT_NE(d.decomposition, nullptr);
  const char *names[] = {"q", "k", "v", "out"};
  for (uint32_t i = 0; i < 4; ++i) {
    pk_op_operand_desc o;
    PK_STRUCT_INIT(o);
    ASSERT_EQ(pk_op_operand(PK_OP_SCALED_DOT_PRODUCT_ATTENTION, i, &o), PK_OK);
    EXPECT_STREQ(o.name, names[i]);
    EXPECT_EQ(o.is_output, i == 3 ? 1 : 0);
    // float_std: f16, bf16, f32, f64
    EXPECT_EQ(o.dtype_mask, (1u << PK_DTYPE_F16) | (1u << PK_DTYPE_BF16) | (1u << PK_DTYPE_F32) | (1u << PK_DTYPE_F64));
  }
  pk_op_attr_desc a;
  PK_STRUCT_INIT(a);
  ASSERT_EQ(pk_op_attr(PK_OP_SCALED_DOT_PRODUCT_ATTENTION, 0, &a), PK_OK);
  EXPECT_STREQ(a.name, "scale");
  EXPECT_EQ(a.type, PK_ATTR_F64);
  EXPECT_EQ(a.offset, offsetof(pk_attrs_scaled_dot_product_attention, scale));
  EXPECT_EQ(a.flags & (PK_ATTR_FLAG_REQUIRED | PK_ATTR_FLAG_NAN_UNSET | PK_ATTR_FLAG_HAS_DEFAULT),
            static_cast<uint32_t>(PK_ATTR_FLAG_REQUIRED | PK_ATTR_FLAG_NAN_UNSET));
  PK_STRUCT_INIT(a);
  ASSERT_EQ(pk_op_attr(PK_OP_SCALED_DOT_PRODUCT_ATTENTION, 1, &a), PK_OK);
  EXPECT_STREQ(a.name, "is_causal");
  EXPECT_EQ(a.type, PK_ATTR_BOOL);
  EXPECT_TRUE(a.flags & PK_ATTR_FLAG_HAS_DEFAULT);
  EXPECT_EQ(a.default_value, 0.0);
  EXPECT_EQ(pk_op_attr(PK_OP_SCALED_DOT_PRODUCT_ATTENTION, 2, &a), PK_ERROR_INVALID_ARGUMENT);
}

TEST_F(OpMetadataTest, DefaultsRangesListsAndEnumsAreDescribed) {
  pk_op_attr_desc a;
  PK_STRUCT_INIT(a);
  ASSERT_EQ(pk_op_attr(PK_OP_SORT, 2, &a), PK_OK);  // sort: dim, descending, stable = true
  EXPECT_STREQ(a.name, "stable");
  EXPECT_EQ(a.default_value, 1.0);
  PK_STRUCT_INIT(a);
  ASSERT_EQ(pk_op_attr(PK_OP_DROPOUT, 0, &a), PK_OK);  // p in [0, 0.999999], no default
  EXPECT_STREQ(a.name, "p");
  EXPECT_TRUE(a.flags & PK_ATTR_FLAG_HAS_MIN);
  EXPECT_TRUE(a.flags & PK_ATTR_FLAG_HAS_MAX);
  EXPECT_EQ(a.min_value, 0.0);
  EXPECT_EQ(a.max_value, 0.999999);
  EXPECT_TRUE(a.flags & PK_ATTR_FLAG_REQUIRED);
  EXPECT_FALSE(a.flags & PK_ATTR_FLAG_NAN_UNSET);
  PK_STRUCT_INIT(a);
  ASSERT_EQ(pk_op_attr(PK_OP_MAX_POOL2D, 2, &a), PK_OK);  // padding: ints = [0, 0]
  EXPECT_STREQ(a.name, "padding");
  EXPECT_EQ(a.type, PK_ATTR_INTS);
  EXPECT_EQ(a.count_offset, offsetof(pk_attrs_max_pool2d, num_padding));
  ASSERT_EQ(a.num_default_ints, 2u);
  EXPECT_EQ(a.default_ints[0], 0);
  PK_STRUCT_INIT(a);
  ASSERT_EQ(pk_op_attr(PK_OP_SCATTER_REDUCE, 1, &a), PK_OK);
  EXPECT_EQ(a.type, PK_ATTR_ENUM);
  ASSERT_NE(a.choices, nullptr);
  EXPECT_EQ(std::string(a.choices).find("sum"), 0u) << a.choices;
  EXPECT_EQ(a.enum_count, static_cast<uint32_t>(std::count(a.choices, a.choices + std::strlen(a.choices), '|') + 1));
}

TEST_F(OpMetadataTest, AnOlderCallersShortStructIsFilledOnlyAsFarAsItReaches) {
  unsigned char raw[sizeof(pk_op_desc) + 8];
  std::memset(raw, 0xab, sizeof raw);
  uint32_t small = offsetof(pk_op_desc, category);
  std::memcpy(raw, &small, sizeof small);
  ASSERT_EQ(pk_op_describe(PK_OP_ADD, reinterpret_cast<pk_op_desc *>(raw)), PK_OK);
  for (size_t i = small; i < sizeof raw; ++i) ASSERT_EQ(raw[i], 0xab) << "byte " << i << " written";
}

TEST_F(OpMetadataTest, InitAttrsWritesDefaultsAndNanForRequiredScalars) {
  pk_attrs_scaled_dot_product_attention a;
  std::memset(&a, 0x5a, sizeof a);
  ASSERT_EQ(pk_op_init_attrs(PK_OP_SCALED_DOT_PRODUCT_ATTENTION, &a, sizeof a), PK_OK);
  EXPECT_EQ(a.struct_size, sizeof a);
  EXPECT_TRUE(std::isnan(a.scale));
  EXPECT_EQ(a.is_causal, 0);
  pk_attrs_scaled_dot_product_attention b = PK_ATTRS_SCALED_DOT_PRODUCT_ATTENTION_INIT;
  EXPECT_TRUE(std::isnan(b.scale)) << "the C initializer marks the required scale unset";
  EXPECT_EQ(pk_op_init_attrs(PK_OP_ADD, &a, sizeof a), PK_ERROR_INVALID_ARGUMENT);  // add has no attributes
}

TEST_F(OpMetadataTest, ALaunchThatLeavesARequiredAttributeUnsetIsRefused) {
  std::vector<int64_t> shape{1, 1, 2, 2};
  float q[4] = {1, 2, 3, 4}, o[4] = {7, 7, 7, 7};
  pk_tensor t;
  PK_STRUCT_INIT(t);
  t.data = q;
  t.storage_bytes = sizeof q;
  t.device_type = PK_DEVICE_CPU;
  t.dtype = f32();
  t.ndim = 4;
  t.shape = shape.data();
  t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
  pk_tensor out = t;
  out.data = o;
  pk_tensor in[3] = {t, t, t};
  pk_attrs_scaled_dot_product_attention a = PK_ATTRS_SCALED_DOT_PRODUCT_ATTENTION_INIT;
  EXPECT_EQ(pk_launch(cpu_stream, PK_OP_SCALED_DOT_PRODUCT_ATTENTION, in, 3, &out, 1, &a), PK_ERROR_INVALID_ARGUMENT);
  pk_error_info e = last_error();
  EXPECT_NE(std::string(e.message).find("scale"), std::string::npos) << e.message;
  EXPECT_NE(std::string(e.message).find("required"), std::string::npos) << e.message;
  EXPECT_EQ(o[0], 7.0f) << "nothing is written on failure";
  a.scale = 0.5;
  ASSERT_EQ(pk_launch(cpu_stream, PK_OP_SCALED_DOT_PRODUCT_ATTENTION, in, 3, &out, 1, &a), PK_OK)
      << last_error().message;
  pk_stream_synchronize(cpu_stream);
  // One query row [1, 2] against keys [1, 2], [3, 4]: scores 0.5 * (5, 11) = (2.5, 5.5); softmax weights
  // 1 / (1 + e^3) and e^3 / (1 + e^3); output = w0 * [1, 2] + w1 * [3, 4].
  double w1 = std::exp(3.0) / (1.0 + std::exp(3.0)), w0 = 1.0 - w1;
  EXPECT_NEAR(o[0], w0 * 1 + w1 * 3, 1e-6);
  EXPECT_NEAR(o[1], w0 * 2 + w1 * 4, 1e-6);
}

}  // namespace
