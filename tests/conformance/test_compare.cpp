// The comparator against hand-checked values: ULP distances, ULP errors against wide references, ULP sizes,
// and the contract each (op, dtype) is measured with (read off sdk/primops/ops.yaml by hand).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "conformance_internal.hpp"
#include "primkit/conformance.hpp"
#include "primkit/oracle.hpp"

namespace pc = pk::conformance;

namespace {

uint64_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
uint64_t bits_of(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

}  // namespace

TEST(UlpDistance, NeighboursAreOneApart) {
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, bits_of(1.0f), bits_of(std::nextafter(1.0f, 2.0f))), 1.0);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, bits_of(1.0f), bits_of(std::nextafter(1.0f, 0.0f))), 1.0);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F64, bits_of(1.0), bits_of(std::nextafter(1.0, 2.0))), 1.0);
  // f16: 1.0 = 0x3c00, next up 0x3c01; bf16: 1.0 = 0x3f80.
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F16, 0x3c00, 0x3c01), 1.0);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_BF16, 0x3f80, 0x3f83), 3.0);
  // 1.0f and 2.0f are 2^23 values apart (one binade).
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, bits_of(1.0f), bits_of(2.0f)), 8388608.0);
}

TEST(UlpDistance, OppositeSignsOfF64DoNotOverflow) {
  // +max and -max f64 are 2 * 0x7fefffffffffffff values apart (zero counted once: -0 and +0 are one point),
  // about 2^64: past int64. 1.0 and -1.0: 2 * 0x3ff0000000000000.
  const double max = std::numeric_limits<double>::max();
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F64, bits_of(max), bits_of(-max)),
            2.0 * static_cast<double>(0x7fefffffffffffffull));
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F64, bits_of(1.0), bits_of(-1.0)), 2.0 * 0x3ff0000000000000ull);
  // Near 1.0 the distance stays exact: one step.
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F64, bits_of(1.0), bits_of(std::nextafter(1.0, 0.0))), 1.0);
}

TEST(UlpDistance, ZerosAndTheSmallestSubnormals) {
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, bits_of(-0.0f), bits_of(0.0f)), 0.0);
  // The smallest positive and negative subnormals straddle zero: two steps apart.
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, 0x00000001u, 0x80000001u), 2.0);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F16, 0x0001, 0x0000), 1.0);
}

TEST(UlpDistance, NaNsAndInfinities) {
  // Two different NaN payloads (quiet and signalling, either sign) are equal for the comparison.
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, 0x7fc00000u, 0xffa00001u), 0.0);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, 0x7fc00000u, bits_of(1.0f)), pc::kMaxUlp);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, bits_of(inf), bits_of(inf)), 0.0);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, bits_of(std::numeric_limits<float>::max()), bits_of(inf)), pc::kMaxUlp);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F32, bits_of(-inf), bits_of(inf)), pc::kMaxUlp);
  // e4m3fn has no infinity; 0x7f is its NaN, 0x7e is 448.
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F8E4M3FN, 0x7f, 0xff), 0.0);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F8E4M3FN, 0x7e, 0x7f), pc::kMaxUlp);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_F8E4M3FN, 0x7d, 0x7e), 1.0);
}

TEST(UlpDistance, Integers) {
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_I32, static_cast<uint32_t>(-5), 7), 12.0);
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_I8, 0x80, 0x7f), 255.0);  // -128 vs 127
  EXPECT_EQ(pc::ulp_distance_bits(PK_DTYPE_U8, 0x80, 0x7f), 1.0);
}

TEST(UlpSize, SpacingOfTheFormats) {
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_F32, 1.0L), std::ldexp(1.0L, -23));
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_F32, 1.9L), std::ldexp(1.0L, -23));
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_F32, 2.0L), std::ldexp(1.0L, -22));
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_F32, -0.75L), std::ldexp(1.0L, -24));
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_F32, 0.0L), std::ldexp(1.0L, -149));  // subnormal spacing
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_F16, 1.0L), std::ldexp(1.0L, -10));
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_F16, 1e-7L), std::ldexp(1.0L, -24));
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_BF16, 1.0L), std::ldexp(1.0L, -7));
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_F64, 1.0L), std::ldexp(1.0L, -52));
  EXPECT_EQ(pc::ulp_of(PK_DTYPE_C64, 1.0L), std::ldexp(1.0L, -23));  // complex: the part's format
}

TEST(UlpError, AgainstAnUnroundedReference) {
  // 1 + 2^-24 lies halfway between 1 and its upper neighbour: both are half an ULP away.
  const long double half_up = 1.0L + std::ldexp(1.0L, -24);
  EXPECT_EQ(pc::ulp_error(PK_DTYPE_F32, bits_of(1.0f), half_up), 0.5);
  EXPECT_EQ(pc::ulp_error(PK_DTYPE_F32, bits_of(std::nextafter(1.0f, 2.0f)), half_up), 0.5);
  // 3 ULPs above 1.
  EXPECT_EQ(pc::ulp_error(PK_DTYPE_F32, bits_of(1.0f + 3 * std::ldexp(1.0f, -23)), 1.0L), 3.0);
  EXPECT_EQ(pc::ulp_error(PK_DTYPE_F32, 0x7fc00000u, std::nanl("")), 0.0);
  EXPECT_EQ(pc::ulp_error(PK_DTYPE_F32, bits_of(1.0f), std::nanl("")), pc::kMaxUlp);
  EXPECT_EQ(pc::ulp_error(PK_DTYPE_F32, bits_of(std::numeric_limits<float>::infinity()), 1e30L), pc::kMaxUlp);
}

TEST(Histogram, StableHloBuckets) {
  pc::Histogram h;
  for (double d : {0.0, 0.5, 1.0, 2.0, 3.0, 3.5, 4.0, 1e300}) h.add(d);
  EXPECT_EQ(h.bucket[0], 1u);
  EXPECT_EQ(h.bucket[1], 2u);  // (0, 1]
  EXPECT_EQ(h.bucket[2], 1u);
  EXPECT_EQ(h.bucket[3], 1u);
  EXPECT_EQ(h.bucket[4], 3u);
}

TEST(Contract, ClassificationFromTheOpTable) {
  auto check = [](const char *op, int32_t dtype) { return pc::classify(*pk::meta::find_op(op), dtype); };
  // exp: {ulp: 3, quality: 2, half: 1}.
  pc::ContractCheck exp32 = check("exp", PK_DTYPE_F32);
  EXPECT_EQ(exp32.check, pc::Check::ulp);
  EXPECT_EQ(exp32.fail_limit, 3.0);
  EXPECT_EQ(exp32.quality_limit, 2.0);
  pc::ContractCheck exp16 = check("exp", PK_DTYPE_F16);
  EXPECT_EQ(exp16.check, pc::Check::ulp);
  EXPECT_EQ(exp16.fail_limit, 1.0);
  EXPECT_EQ(check("exp", PK_DTYPE_F8E5M2).fail_limit, 1.0);
  // tan: {ulp: 5, quality: 4, half: 3}.
  EXPECT_EQ(check("tan", PK_DTYPE_F64).fail_limit, 5.0);
  EXPECT_EQ(check("tan", PK_DTYPE_BF16).fail_limit, 3.0);
  EXPECT_EQ(check("add", PK_DTYPE_F32).check, pc::Check::correctly_rounded);
  EXPECT_EQ(check("add", PK_DTYPE_I32).check, pc::Check::exact);  // integers never round
  EXPECT_EQ(check("maximum", PK_DTYPE_F16).check, pc::Check::exact);
  EXPECT_EQ(check("sum", PK_DTYPE_F32).check, pc::Check::reduction);
  EXPECT_EQ(check("sum", PK_DTYPE_I64).check, pc::Check::exact);
  EXPECT_EQ(check("matmul", PK_DTYPE_BF16).check, pc::Check::reduction);
  // softmax: {bound: 4}; leaky_relu: {bound: 1}; relu: exact.
  EXPECT_EQ(check("softmax", PK_DTYPE_F32).check, pc::Check::composite_bound);
  EXPECT_EQ(check("softmax", PK_DTYPE_F32).fail_limit, 4.0);
  EXPECT_EQ(check("leaky_relu", PK_DTYPE_F16).fail_limit, 1.0);
  EXPECT_EQ(check("relu", PK_DTYPE_F32).check, pc::Check::exact);
  EXPECT_EQ(check("isfinite", PK_DTYPE_BOOL).check, pc::Check::exact);
}

TEST(ExpectedFailures, ParsesOpDtypeReason) {
  auto m = pc::parse_expected_failures("# comment\nexp f16 flushes subnormals, tracked in #12\n\nabs * crashes\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at({"exp", "f16"}), "flushes subnormals, tracked in #12");
  EXPECT_EQ(m.at({"abs", "*"}), "crashes");
}

// The reduction bound's inputs (|re| + |im| per element), hand-checked: a finite c128 element whose |re| + |im|
// passes DBL_MAX saturates there (an infinity would meet a zero weight as NaN and fail an exact result); an
// infinite element stays infinite; NaN counts 0; at_least_one raises magnitudes below 1 to 1; real dtypes take |x|.
TEST(MagnitudeInputs, ComplexSaturatesInfinitiesStayNaNIsZero) {
  namespace po = pk::oracle;
  const long double big = 0.75L * DBL_MAX;
  std::vector<po::Wide> values = {{big, -big}, {-INFINITY, 1}, {NAN, 2}, {-0.25L, 0.125L}, {3, -4}};
  std::vector<po::HostTensor> in = {po::HostTensor::from_complex(PK_DTYPE_C128, {5}, values),
                                    po::HostTensor::from_values(PK_DTYPE_F32, {3}, {-2.5L, 0.5L, -0.0L})};
  const std::vector<po::HostTensor> m = pc::detail::magnitude_inputs(in);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].at(0).re, static_cast<long double>(DBL_MAX));
  EXPECT_TRUE(std::isinf(m[0].at(1).re) && m[0].at(1).re > 0);
  EXPECT_EQ(m[0].at(2).re, 0.0L);
  EXPECT_EQ(m[0].at(3).re, 0.375L);
  EXPECT_EQ(m[0].at(4).re, 7.0L);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(m[0].at(i).im, 0.0L) << i;
  EXPECT_EQ(m[1].at(0).re, 2.5L);
  EXPECT_EQ(m[1].at(1).re, 0.5L);
  EXPECT_EQ(m[1].at(2).re, 0.0L);
  const std::vector<po::HostTensor> one = pc::detail::magnitude_inputs(in, true);
  EXPECT_EQ(one[0].at(3).re, 1.0L);
  EXPECT_EQ(one[0].at(4).re, 7.0L);
  EXPECT_EQ(one[0].at(2).re, 1.0L);
  EXPECT_EQ(one[1].at(1).re, 1.0L);
  EXPECT_EQ(one[1].at(0).re, 2.5L);
}

// A composite's bool output is accepted where it equals the exact answer or the program with rounded
// intermediates (isclose bf16: a = 31.75, b = -15.8125, rtol = 3: |a - b| = 47.5625 > 3 |b| = 47.4375 exactly, but
// both round to 47.5 in bf16, so the table's program gives true). Anything else, and any byte other than 0 or 1,
// fails.
TEST(CompareOutput, BoolOutputsOfCompositesMayMatchTheRoundedProgram) {
  pk::oracle::OutputValue expected, program;
  expected.dtype = program.dtype = PK_DTYPE_BOOL;
  expected.shape = program.shape = {4};
  expected.rounded = {0, 1, 0, 0};
  program.rounded = {1, 1, 0, 0};
  pc::detail::Tolerance tol;
  tol.check = pc::ContractCheck{};
  const std::vector<uint8_t> actual = {1, 1, 0, 2};
  const pc::detail::OutputComparison with = pc::detail::compare_output(expected, actual, tol, &program);
  EXPECT_EQ(with.failed_elements, 1u);  // only the 2
  EXPECT_EQ(with.worst_index, 3);
  const pc::detail::OutputComparison without = pc::detail::compare_output(expected, actual, tol, nullptr);
  EXPECT_EQ(without.failed_elements, 2u);  // the 1 that only the program gives, and the 2
  const std::vector<uint8_t> exact = {0, 1, 0, 0};
  EXPECT_EQ(pc::detail::compare_output(expected, exact, tol, &program).failed_elements, 0u);
  const std::vector<uint8_t> neither = {0, 0, 0, 0};
  EXPECT_EQ(pc::detail::compare_output(expected, neither, tol, &program).failed_elements, 1u);
}
