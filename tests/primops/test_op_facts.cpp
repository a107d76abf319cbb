// test_op_facts.cpp — the per-op facts the op table carries for code generators and the conformance suite
// (reduce, grading, fused_check), checked against a hand table of what each op is: an identity or combine that
// drifts in ops.yaml changes every generated reduction kernel and grading rule at once.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>

#include "primkit/op_info.hpp"

namespace {

using namespace pk::meta;

const OpInfo &op(const char *name) {
  const OpInfo *info = find_op(name);
  if (info == nullptr) throw std::runtime_error(std::string("no op ") + name);
  return *info;
}

TEST(OpFacts, EveryPrimitiveReductionDeclaresItsFoldAndNothingElseDoes) {
  struct Row {
    const char *name;
    Combine combine;
    Identity identity;
  };
  const Row folds[] = {
      {"sum", Combine::add, Identity::zero},          {"prod", Combine::mul, Identity::one},
      {"amax", Combine::max, Identity::lowest},       {"amin", Combine::min, Identity::highest},
      {"any", Combine::logical_or, Identity::false_}, {"all", Combine::logical_and, Identity::true_},
      {"xor_sum", Combine::bit_xor, Identity::zero},  {"argmax", Combine::argmax, Identity::lowest},
      {"argmin", Combine::argmin, Identity::highest},
  };
  for (const Row &r : folds) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(op(r.name).reduce.combine, r.combine);
    EXPECT_EQ(op(r.name).reduce.identity, r.identity);
    EXPECT_TRUE(is_fold(op(r.name).reduce));
  }
  EXPECT_EQ(op("var").reduce.combine, Combine::line);
  EXPECT_FALSE(is_fold(op("var").reduce));
  int folds_in_table = 0;
  for (const OpInfo *o = ops_begin(); o != ops_end(); ++o) {
    const bool reduction = o->tier == Tier::primitive && std::strcmp(o->category, "reduction") == 0;
    if (reduction) {
      EXPECT_NE(o->reduce.combine, Combine::none) << o->name << " declares no reduce";
    } else {
      EXPECT_EQ(o->reduce.combine, Combine::none) << o->name;
    }
    folds_in_table += is_fold(o->reduce);
  }
  EXPECT_EQ(folds_in_table, static_cast<int>(std::size(folds)));
}

TEST(OpFacts, GradingRulesMatchWhatEachOpSums) {
  EXPECT_EQ(op("sum").grading.scale, ErrorScale::magnitudes);
  EXPECT_EQ(op("amax").grading.scale, ErrorScale::output);
  EXPECT_EQ(op("matmul").grading.terms, TermsRule::contraction);
  EXPECT_EQ(op("batch_matmul").grading.terms, TermsRule::contraction);
  EXPECT_EQ(op("dot_general").grading.terms, TermsRule::attr_axes);
  EXPECT_STREQ(op("dot_general").grading.terms_attr, "lhs_contract");
  EXPECT_EQ(op("avg_pool2d").grading.terms, TermsRule::attr_product);
  EXPECT_STREQ(op("avg_pool2d").grading.terms_attr, "kernel_size");
  EXPECT_EQ(op("adaptive_avg_pool2d").grading.terms, TermsRule::widest_bin);
  EXPECT_EQ(op("convolution").grading.terms, TermsRule::weight_fan_in);
  EXPECT_EQ(op("fft_c2r").grading.scale, ErrorScale::input_l1_twice);
  EXPECT_EQ(op("fft_c2c").grading.nonfinite, NonfiniteTerms::any);
  EXPECT_EQ(op("prod").grading.nonfinite, NonfiniteTerms::any_complex);
  EXPECT_TRUE(op("cumprod").grading.overflow_scale);
  EXPECT_FALSE(op("cumsum").grading.overflow_scale);
  EXPECT_EQ(op("var").grading.scale, ErrorScale::squared_spread);
  EXPECT_EQ(op("logcumsumexp").grading.scale, ErrorScale::one_plus_input_max);
  EXPECT_TRUE(op("div").grading.complex_zero_sign_free);
  EXPECT_FALSE(op("mul").grading.complex_zero_sign_free);
  // Every composite is graded against its terms' magnitudes (their programs sum and multiply intermediates).
  for (const OpInfo *o = ops_begin(); o != ops_end(); ++o) {
    if (o->tier == Tier::composite) {
      EXPECT_EQ(o->grading.scale, ErrorScale::magnitudes) << o->name;
    }
  }
  // A rule that reads an attribute names one the op has.
  for (const OpInfo *o = ops_begin(); o != ops_end(); ++o) {
    if (o->grading.terms_attr == nullptr) continue;
    bool found = false;
    for (uint32_t i = 0; i < o->num_attrs; ++i)
      found =
          found || (std::strcmp(o->attrs[i].name, o->grading.terms_attr) == 0 && o->attrs[i].type == AttrType::ints);
    EXPECT_TRUE(found) << o->name << ": grading reads " << o->grading.terms_attr;
  }
}

TEST(OpFacts, FusedChecksAreTheNormalizationAndActivationComposites) {
  std::string fused;
  for (const OpInfo *o = ops_begin(); o != ops_end(); ++o)
    if (o->fused_check) {
      EXPECT_EQ(o->tier, Tier::composite) << o->name;
      fused += std::string(fused.empty() ? "" : ",") + o->name;
    }
  EXPECT_EQ(fused, "softmax,log_softmax,gelu,silu,layer_norm,rms_norm");  // id order
}

}  // namespace
