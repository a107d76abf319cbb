// Cases come from the op table, are reproducible from their seed, and cover what the suite promises: shapes,
// layouts, edge values, attribute variants and the exhaustive 16-bit sweep.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "primkit/conformance.hpp"

namespace pc = pk::conformance;

namespace {

std::vector<pc::Case> cases_of(const char *op, int32_t dtype, pc::Profile profile = pc::Profile::quick,
                               uint64_t seed = 1) {
  const pk::meta::OpInfo *info = pk::meta::find_op(op);
  EXPECT_NE(info, nullptr) << op;
  return info ? pc::generate_cases(*info, dtype, profile, seed) : std::vector<pc::Case>{};
}

const pc::Case *find(const std::vector<pc::Case> &cases, const std::string &id) {
  for (const pc::Case &c : cases)
    if (c.id == id) return &c;
  return nullptr;
}

}  // namespace

TEST(Cases, SameSeedSameCases) {
  auto a = cases_of("exp", PK_DTYPE_F32, pc::Profile::quick, 42);
  auto b = cases_of("exp", PK_DTYPE_F32, pc::Profile::quick, 42);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 10u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    ASSERT_EQ(a[i].inputs.size(), b[i].inputs.size());
    for (size_t k = 0; k < a[i].inputs.size(); ++k)
      EXPECT_EQ(a[i].inputs[k].storage, b[i].inputs[k].storage) << a[i].id;
  }
  // Another seed keeps the ids (they name shapes and layouts) but draws other values.
  auto c = cases_of("exp", PK_DTYPE_F32, pc::Profile::quick, 43);
  ASSERT_EQ(a.size(), c.size());
  const pc::Case *ra = find(a, "exp.f32.random.0"), *rc = find(c, "exp.f32.random.0");
  ASSERT_NE(ra, nullptr);
  ASSERT_NE(rc, nullptr);
  EXPECT_NE(ra->inputs[0].storage, rc->inputs[0].storage);
}

TEST(Cases, IdsAreUniqueAndNamed) {
  for (const char *op : {"exp", "add", "sum", "matmul", "softmax", "full", "gather", "convert_element_type"}) {
    const pk::meta::OpInfo *info = pk::meta::find_op(op);
    ASSERT_NE(info, nullptr);
    std::vector<int32_t> dtypes = pc::op_dtypes(*info);
    ASSERT_FALSE(dtypes.empty()) << op;
    auto cases = pc::generate_cases(*info, dtypes.back(), pc::Profile::quick, 1);
    EXPECT_GT(cases.size(), 3u) << op;
    std::set<std::string> ids;
    const std::string prefix = std::string(op) + "." + pk::meta::dtype_name(dtypes.back()) + ".";
    for (const pc::Case &c : cases) {
      EXPECT_TRUE(ids.insert(c.id).second) << "duplicate id " << c.id;
      EXPECT_EQ(c.id.compare(0, prefix.size(), prefix), 0) << c.id;
    }
  }
}

TEST(Cases, ShapesOfAnElementwiseOp) {
  auto cases = cases_of("add", PK_DTYPE_F32);
  const pc::Case *scalar = find(cases, "add.f32.scalar.0");
  ASSERT_NE(scalar, nullptr);
  EXPECT_TRUE(scalar->inputs[0].shape.empty());
  const pc::Case *empty = find(cases, "add.f32.empty.0");
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->inputs[0].numel(), 0);
  std::set<int64_t> sizes;
  for (const pc::Case &c : cases) sizes.insert(c.inputs[0].numel());
  for (int64_t n : {1, 23, 1029}) EXPECT_TRUE(sizes.count(n)) << n;
  // Full profile: one larger size.
  auto full = cases_of("add", PK_DTYPE_F32, pc::Profile::full);
  int64_t largest = 0;
  for (const pc::Case &c : full) largest = std::max(largest, c.inputs[0].numel());
  EXPECT_GT(largest, 60000);
}

TEST(Cases, LayoutsAreStridedOffsetAndZeroStride) {
  auto cases = cases_of("add", PK_DTYPE_F32);
  const pc::Case *strided = find(cases, "add.f32.strided.0");
  ASSERT_NE(strided, nullptr);
  ASSERT_EQ(strided->inputs[0].strides.size(), 2u);
  EXPECT_EQ(strided->inputs[0].strides[1], 2);  // a gap between neighbours
  const pc::Case *transposed = find(cases, "add.f32.transposed.0");
  ASSERT_NE(transposed, nullptr);
  EXPECT_EQ(transposed->inputs[0].strides[0], 1);  // column-major storage of a [5,6] view
  EXPECT_EQ(transposed->inputs[0].strides[1], 5);
  const pc::Case *offset = find(cases, "add.f32.offset.0");
  ASSERT_NE(offset, nullptr);
  EXPECT_GT(offset->inputs[0].byte_offset, 0u);
  const pc::Case *reversed = find(cases, "add.f32.reversed.0");
  ASSERT_NE(reversed, nullptr);
  EXPECT_LT(reversed->inputs[0].strides.back(), 0);
  // Zero stride on input 0 in one case and on input 1 in the next; the other input stays contiguous.
  const pc::Case *b0 = find(cases, "add.f32.broadcast.0"), *b1 = find(cases, "add.f32.broadcast.1");
  ASSERT_NE(b0, nullptr);
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b0->inputs[0].strides[0], 0);
  EXPECT_TRUE(b0->inputs[1].strides.empty());
  EXPECT_EQ(b1->inputs[1].strides[0], 0);
}

TEST(Cases, EdgeValuesAreMixedIn) {
  bool nan = false, pinf = false, ninf = false, nzero = false, subnormal = false;
  for (const pc::Case &c : cases_of("exp", PK_DTYPE_F32)) {
    for (int64_t i = 0; i < c.inputs[0].numel(); ++i) {
      long double v = c.inputs[0].at(i).re;
      nan = nan || std::isnan(v);
      pinf = pinf || v == INFINITY;
      ninf = ninf || v == -INFINITY;
      nzero = nzero || (v == 0 && std::signbit(v));
      subnormal = subnormal || (v != 0 && std::fabs(v) < 1.17549435e-38L);
    }
  }
  EXPECT_TRUE(nan && pinf && ninf && nzero && subnormal);
  bool int_min = false, int_max = false;
  for (const pc::Case &c : cases_of("add", PK_DTYPE_I32)) {
    for (int64_t i = 0; i < c.inputs[0].numel(); ++i) {
      long double v = c.inputs[0].at(i).re;
      int_min = int_min || v == -2147483648.0L;
      int_max = int_max || v == 2147483647.0L;
    }
  }
  EXPECT_TRUE(int_min && int_max);
}

TEST(Cases, AttributeVariantsComeFromTheTable) {
  // round: every choice of its `rounding` enum.
  std::set<int32_t> modes;
  for (const pc::Case &c : cases_of("round", PK_DTYPE_F32)) {
    int32_t m;
    std::memcpy(&m, c.attrs.data() + pk::meta::find_op("round")->attrs[0].offset, 4);
    modes.insert(m);
  }
  EXPECT_EQ(modes.size(), 2u);
  // sum: reductions over several axis sets, including none and all.
  std::set<int32_t> counts;
  const pk::meta::AttrInfo &dims = pk::meta::find_op("sum")->attrs[0];
  for (const pc::Case &c : cases_of("sum", PK_DTYPE_F32)) {
    int32_t n;
    std::memcpy(&n, c.attrs.data() + dims.count_offset, 4);
    counts.insert(n);
  }
  EXPECT_TRUE(counts.count(0) && counts.count(1) && counts.count(2));
  // Creation ops take the pair's dtype as their dtype attribute.
  for (const pc::Case &c : cases_of("full", PK_DTYPE_BF16)) {
    int32_t d;
    std::memcpy(&d, c.attrs.data() + pk::meta::find_op("full")->attrs[2].offset, 4);
    EXPECT_EQ(d, PK_DTYPE_BF16) << c.id;
  }
}

TEST(Cases, ExhaustiveSixteenBitSweepInTheFullProfile) {
  auto quick = cases_of("exp", PK_DTYPE_F16);
  EXPECT_EQ(find(quick, "exp.f16.exhaustive.0"), nullptr);
  auto full = cases_of("exp", PK_DTYPE_BF16, pc::Profile::full);
  const pc::Case *sweep = find(full, "exp.bf16.exhaustive.0");
  ASSERT_NE(sweep, nullptr);
  ASSERT_EQ(sweep->inputs[0].numel(), 65536);
  std::set<uint16_t> patterns;
  for (int64_t i = 0; i < 65536; ++i) {
    uint16_t b;
    std::memcpy(&b, sweep->inputs[0].storage.data() + 2 * i, 2);
    patterns.insert(b);
  }
  EXPECT_EQ(patterns.size(), 65536u);
  // fp8: 256 values, in every profile.
  auto fp8 = cases_of("exp", PK_DTYPE_F8E5M2);
  const pc::Case *f8 = find(fp8, "exp.f8e5m2.exhaustive.0");
  ASSERT_NE(f8, nullptr);
  EXPECT_EQ(f8->inputs[0].numel(), 256);
}

// The thresholds family lands exactly on the inputs where exp's f32 result changes class. Hand-derived with
// 200-bit arithmetic: exp(0x42b17217) = FLT_MAX e^-7.3e-6 is finite, exp(0x42b17218) exceeds FLT_MAX + half an ulp;
// exp(0xc2aeac4f) >= 2^-126 - 2^-150 rounds to a normal, exp(0xc2aeac50) to a subnormal; exp(0xc2cff1b4) > 2^-150
// rounds to the smallest subnormal, exp(0xc2cff1b5) to zero. Both neighbours of each pair are in the case.
TEST(Cases, ThresholdsAreTheExactInputsWhereTheResultChangesClass) {
  auto cases = cases_of("exp", PK_DTYPE_F32);
  const pc::Case *t = find(cases, "exp.f32.thresholds.0");
  ASSERT_NE(t, nullptr);
  std::set<uint32_t> bits;
  for (int64_t i = 0; i < t->inputs[0].numel(); ++i) {
    uint32_t b;
    std::memcpy(&b, t->inputs[0].storage.data() + 4 * i, 4);
    bits.insert(b);
  }
  for (uint32_t want : {0x42b17217u, 0x42b17218u, 0xc2aeac4fu, 0xc2aeac50u, 0xc2cff1b4u, 0xc2cff1b5u})
    EXPECT_EQ(bits.count(want), 1u) << std::hex << want;
  EXPECT_LT(bits.size(), 200u);  // a handful per threshold, not a sweep
  // Same cases in the full profile, and none for an op whose result is no float (isnan's bool).
  EXPECT_NE(find(cases_of("exp", PK_DTYPE_F64, pc::Profile::full), "exp.f64.thresholds.0"), nullptr);
  EXPECT_EQ(find(cases_of("isnan", PK_DTYPE_F32), "isnan.f32.thresholds.0"), nullptr);
}

TEST(Cases, ThresholdsIncludeWhereACompositeChangesFormula) {
  // The branch points of the table's decompositions, derived by hand: hardswish = x min(max(x + 3, 0), 6) / 6
  // changes formula after x = -3 (0xc0400000: max takes 0 beyond it) and after x = 3 (0x40400000: min takes 6);
  // softplus (beta 1, threshold 20) returns x once x > 20 (0x41a00000). Each threshold comes as the last input of
  // one formula and the first of the next. Neither op's result class changes there: only the formula does.
  auto bits_of = [](const pc::Case &c) {
    std::set<uint32_t> bits;
    for (int64_t i = 0; i < c.inputs[0].numel(); ++i) {
      uint32_t b;
      std::memcpy(&b, c.inputs[0].storage.data() + 4 * i, 4);
      bits.insert(b);
    }
    return bits;
  };
  auto hardswish = cases_of("hardswish", PK_DTYPE_F32);
  const pc::Case *h = find(hardswish, "hardswish.f32.thresholds.0");
  ASSERT_NE(h, nullptr);
  const std::set<uint32_t> hb = bits_of(*h);
  for (uint32_t want : {0xc0400000u, 0xc0400001u, 0x40400000u, 0x40400001u})
    EXPECT_EQ(hb.count(want), 1u) << std::hex << want;
  auto softplus = cases_of("softplus", PK_DTYPE_F32);
  const pc::Case *sp = find(softplus, "softplus.f32.thresholds.0");
  ASSERT_NE(sp, nullptr);
  const std::set<uint32_t> sb = bits_of(*sp);
  for (uint32_t want : {0x41a00000u, 0x41a00001u}) EXPECT_EQ(sb.count(want), 1u) << std::hex << want;
}
