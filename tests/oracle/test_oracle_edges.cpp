// Hand-checked tables for the oracle: rounding to every format, IEEE edge values, integer semantics and a few
// composite ops against values computed by hand (or with an independent arbitrary-precision tool).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"
#include "primkit/oracle.hpp"

namespace {

using pk::oracle::BinaryFormat;
using pk::oracle::HostTensor;
using pk::oracle::OutputValue;
using pk::oracle::Overflow;

const long double kInf = HUGE_VALL;
const long double kNaN = std::numeric_limits<long double>::quiet_NaN();

using KV = std::vector<std::pair<std::string, std::string>>;

// Runs an op; fails the test on a non-OK status.
std::vector<OutputValue> run(const std::string &op, const std::vector<HostTensor> &inputs, const KV &attrs = {}) {
  const pk::meta::OpInfo *info = pk::meta::find_op(op);
  EXPECT_NE(info, nullptr) << op;
  if (info == nullptr) return {};
  std::vector<uint8_t> bytes;
  pk::oracle::Result r = pk::oracle::build_attrs(info->id, attrs, bytes);
  EXPECT_TRUE(r.ok()) << op << ": " << r.message;
  std::vector<OutputValue> out;
  r = pk::oracle::evaluate(info->id, inputs, bytes.empty() ? nullptr : bytes.data(), out);
  EXPECT_TRUE(r.ok()) << op << ": " << r.message;
  return out;
}

HostTensor vec(int32_t dtype, const std::vector<long double> &v) {
  return HostTensor::from_values(dtype, {static_cast<int64_t>(v.size())}, v);
}

// The rounded outputs of a one-output op as long doubles.
std::vector<long double> values(const std::vector<OutputValue> &out) {
  std::vector<long double> v;
  if (out.empty()) return v;
  for (int64_t i = 0; i < out[0].numel(); ++i) v.push_back(out[0].rounded_at(i).re);
  return v;
}

// Bitwise equality of long doubles that also distinguishes -0 and matches NaN with NaN.
void expect_same(const std::vector<long double> &got, const std::vector<long double> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] = " << static_cast<double>(got[i]);
    } else {
      EXPECT_TRUE(got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]))
          << what << " [" << i << "]: got " << static_cast<double>(got[i]) << " want " << static_cast<double>(want[i]);
    }
  }
}

uint64_t bits(long double x, int32_t dtype, Overflow o = Overflow::standard) {
  return pk::oracle::round_to_format(x, pk::oracle::format_of(dtype), o);
}

// ------------------------------------------------------------------------------------------- format rounding

TEST(OracleFormats, HalfRoundingAndOverflow) {
  EXPECT_EQ(bits(65520, PK_DTYPE_F16), 0x7c00u);  // the midpoint above 65504 ties up to inf
  EXPECT_EQ(bits(65519, PK_DTYPE_F16), 0x7bffu);  // 65504
  EXPECT_EQ(bits(65504, PK_DTYPE_F16), 0x7bffu);
  EXPECT_EQ(bits(-kInf, PK_DTYPE_F16), 0xfc00u);
  EXPECT_EQ(bits(1, PK_DTYPE_F16), 0x3c00u);
  EXPECT_EQ(bits(1 + 1.0L / 2048, PK_DTYPE_F16), 0x3c00u);    // tie to even (down)
  EXPECT_EQ(bits(1 + 3.0L / 2048, PK_DTYPE_F16), 0x3c02u);    // tie to even (up)
  EXPECT_EQ(bits(ldexpl(1, -24), PK_DTYPE_F16), 0x0001u);     // smallest subnormal
  EXPECT_EQ(bits(ldexpl(1, -25), PK_DTYPE_F16), 0x0000u);     // half of it ties to zero
  EXPECT_EQ(bits(ldexpl(3, -26), PK_DTYPE_F16), 0x0001u);     // 0.75 of it rounds up
  EXPECT_EQ(bits(ldexpl(-1, -26), PK_DTYPE_F16), 0x8000u);    // underflow keeps the sign
  EXPECT_EQ(bits(ldexpl(1023, -24), PK_DTYPE_F16), 0x03ffu);  // largest subnormal
  EXPECT_EQ(bits(ldexpl(2047, -25), PK_DTYPE_F16), 0x0400u);  // rounds into the normals
  EXPECT_EQ(bits(-0.0L, PK_DTYPE_F16), 0x8000u);
  EXPECT_EQ(bits(kNaN, PK_DTYPE_F16), 0x7e00u);
}

TEST(OracleFormats, Bfloat16) {
  EXPECT_EQ(bits(1.00390625L, PK_DTYPE_BF16), 0x3f80u);                                // tie to even: 1.0
  EXPECT_EQ(bits(1.01171875L, PK_DTYPE_BF16), 0x3f82u);                                // tie to even: 1.015625
  EXPECT_EQ(bits(1.0078125L, PK_DTYPE_BF16), 0x3f81u);                                 // exact
  EXPECT_EQ(bits(3.3895313892515355e38L, PK_DTYPE_BF16), 0x7f7fu);                     // bf16 max
  EXPECT_EQ(bits(3.40282346638528859811704183484516925e38L, PK_DTYPE_BF16), 0x7f80u);  // f32 max -> inf
  EXPECT_EQ(bits(kNaN, PK_DTYPE_BF16), 0x7fc0u);
  EXPECT_EQ(bits(ldexpl(1, -133), PK_DTYPE_BF16), 0x0001u);  // smallest bf16 subnormal
}

TEST(OracleFormats, Fp8) {
  EXPECT_EQ(bits(448, PK_DTYPE_F8E4M3FN), 0x7eu);
  EXPECT_EQ(bits(464, PK_DTYPE_F8E4M3FN), 0x7eu);  // midpoint 448/480 ties to even 448
  EXPECT_EQ(bits(465, PK_DTYPE_F8E4M3FN), 0x7fu);  // non-saturating overflow: NaN
  EXPECT_EQ(bits(465, PK_DTYPE_F8E4M3FN, Overflow::saturate), 0x7eu);
  EXPECT_EQ(bits(kInf, PK_DTYPE_F8E4M3FN, Overflow::saturate), 0x7eu);
  EXPECT_EQ(bits(-1e6L, PK_DTYPE_F8E4M3FN, Overflow::saturate), 0xfeu);
  EXPECT_EQ(bits(kNaN, PK_DTYPE_F8E4M3FN), 0x7fu);
  EXPECT_EQ(bits(kNaN, PK_DTYPE_F8E4M3FN, Overflow::saturate), 0x7fu);
  EXPECT_EQ(bits(ldexpl(1, -9), PK_DTYPE_F8E4M3FN), 0x01u);  // smallest subnormal 2^-9
  EXPECT_EQ(bits(240, PK_DTYPE_F8E4M3FN), 0x77u);
  EXPECT_EQ(bits(57344, PK_DTYPE_F8E5M2), 0x7bu);  // e5m2 max
  EXPECT_EQ(bits(61439, PK_DTYPE_F8E5M2), 0x7bu);
  EXPECT_EQ(bits(61440, PK_DTYPE_F8E5M2), 0x7cu);  // midpoint to inf
  EXPECT_EQ(bits(kNaN, PK_DTYPE_F8E5M2), 0x7eu);
  EXPECT_EQ(bits(ldexpl(1, -16), PK_DTYPE_F8E5M2), 0x01u);
  // every e4m3fn / e5m2 pattern decodes and re-encodes to itself (NaNs to the canonical NaN of the sign)
  for (uint64_t b = 0; b < 256; ++b) {
    for (int32_t dt : {PK_DTYPE_F8E4M3FN, PK_DTYPE_F8E5M2}) {
      BinaryFormat f = pk::oracle::format_of(dt);
      long double v = pk::oracle::format_value(b, f);
      if (std::isnan(v)) continue;
      EXPECT_EQ(pk::oracle::round_to_format(v, f), b) << "dtype " << dt << " pattern " << b;
    }
  }
  EXPECT_EQ(pk::oracle::format_value(0x7e, pk::oracle::format_of(PK_DTYPE_F8E4M3FN)), 448);
  EXPECT_TRUE(std::isnan(pk::oracle::format_value(0xff, pk::oracle::format_of(PK_DTYPE_F8E4M3FN))));
  EXPECT_EQ(pk::oracle::format_value(0x7b, pk::oracle::format_of(PK_DTYPE_F8E5M2)), 57344);
}

// The generic rounding agrees with the hardware's conversions of long double to float and double.
TEST(OracleFormats, MatchesHardwareCasts) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    uint64_t m = rng() | (uint64_t{1} << 63);
    int e = static_cast<int>(rng() % 2400) - 1200;
    long double x = ldexpl(static_cast<long double>(m), e - 63);
    if (rng() & 1) x = -x;
    float f = static_cast<float>(x);
    double d = static_cast<double>(x);
    uint32_t fb;
    uint64_t db;
    std::memcpy(&fb, &f, 4);
    std::memcpy(&db, &d, 8);
    ASSERT_EQ(bits(x, PK_DTYPE_F32), fb) << static_cast<double>(x);
    ASSERT_EQ(bits(x, PK_DTYPE_F64), db) << static_cast<double>(x);
  }
}

// ------------------------------------------------------------------------------------------ conversions

TEST(OracleConvert, FloatFormats) {
  auto conv = [](int32_t from, int32_t to, const std::vector<long double> &v) {
    return values(run("convert_element_type", {vec(from, v)}, {{"dtype", pk::meta::dtype_name(to)}}));
  };
  expect_same(conv(PK_DTYPE_F32, PK_DTYPE_F16, {65520, 65519, -65520, 1e-8L}), {kInf, 65504, -kInf, 0}, "f32->f16");
  expect_same(conv(PK_DTYPE_F32, PK_DTYPE_BF16, {1.00390625L, 1.01171875L}), {1.0L, 1.015625L}, "f32->bf16");
  expect_same(conv(PK_DTYPE_F32, PK_DTYPE_F8E4M3FN, {448, 464, 1000, -1e30L, kInf, kNaN}),
              {448, 448, 448, -448, 448, kNaN}, "f32->e4m3fn saturates");
  expect_same(conv(PK_DTYPE_F32, PK_DTYPE_F8E5M2, {57344, 61440, 1e9L}), {57344, kInf, kInf}, "f32->e5m2");
  auto e4 = run("convert_element_type", {vec(PK_DTYPE_F32, {448, kNaN, -kNaN})}, {{"dtype", "f8e4m3fn"}});
  ASSERT_EQ(e4.size(), 1u);
  EXPECT_EQ(e4[0].rounded_bits(0), 0x7eu);
  EXPECT_EQ(e4[0].rounded_bits(1), 0x7fu);
  EXPECT_EQ(e4[0].rounded_bits(2), 0xffu);
}

TEST(OracleConvert, FloatToIntTruncatesAndSaturates) {
  auto conv = [](int32_t to, const std::vector<long double> &v) {
    return values(run("convert_element_type", {vec(PK_DTYPE_F32, v)}, {{"dtype", pk::meta::dtype_name(to)}}));
  };
  expect_same(conv(PK_DTYPE_I32, {3.9L, -3.9L, kNaN, 1e10L, -kInf, -0.0L}),
              {3, -3, 0, 2147483647.0L, -2147483648.0L, 0}, "f32->i32");
  expect_same(conv(PK_DTYPE_U8, {-1.5L, 255.9L, 300, kNaN}), {0, 255, 255, 0}, "f32->u8");
  expect_same(conv(PK_DTYPE_I8, {-128.9L, 127.5L}), {-128, 127}, "f32->i8");
  expect_same(conv(PK_DTYPE_BOOL, {0, -0.0L, 0.5L, kNaN}), {0, 0, 1, 1}, "f32->bool");
}

// ------------------------------------------------------------------------------------------ IEEE edges

TEST(OracleFloat, SignedZerosNaNAndInf) {
  const int32_t f = PK_DTYPE_F32;
  expect_same(values(run("maximum", {vec(f, {-0.0L, 0.0L, kNaN, 1}), vec(f, {0.0L, -0.0L, 1, kNaN})})),
              {0.0L, 0.0L, kNaN, kNaN}, "maximum");
  expect_same(values(run("sqrt", {vec(f, {-0.0L, -1, kInf, 4, 2})})),
              {-0.0L, kNaN, kInf, 2, 1.41421353816986083984375L}, "sqrt");
  expect_same(values(run("add", {vec(f, {kInf, -0.0L, -0.0L, kNaN}), vec(f, {-kInf, -0.0L, 0.0L, 1})})),
              {kNaN, -0.0L, 0.0L, kNaN}, "add");
  expect_same(values(run("div", {vec(f, {1, -1, 0, 1}), vec(f, {0.0L, 0.0L, 0.0L, -0.0L})})),
              {kInf, -kInf, kNaN, -kInf}, "div by zero");
  expect_same(values(run("log", {vec(f, {0, -0.0L, -1, 1})})), {-kInf, -kInf, kNaN, 0}, "log");
  const long double sub = ldexpl(1, -149);
  expect_same(values(run("add", {vec(f, {sub, ldexpl(1, -126)}), vec(f, {sub, -sub})})),
              {ldexpl(1, -148), ldexpl(1, -126) - sub}, "subnormals");
  // products below the smallest subnormal: 0.5 and 0.75 of 2^-149, and 1.5 of it (ties go to even)
  expect_same(values(run("mul", {vec(f, {sub, ldexpl(1, -75), ldexpl(3, -75)}),
                                 vec(f, {0.5L, ldexpl(3, -76), ldexpl(1, -75)})})),
              {0, sub, 2 * sub}, "underflow rounding");
  expect_same(values(run("lt", {vec(f, {kNaN, 1, -0.0L}), vec(f, {1, kNaN, 0.0L})})), {0, 0, 0}, "lt");
  expect_same(values(run("floor", {vec(f, {-0.5L, -0.0L, 1.5L, kInf})})), {-1, -0.0L, 1, kInf}, "floor");
  expect_same(values(run("round", {vec(f, {0.5L, 1.5L, 2.5L, -0.5L, -2.5L})})), {0, 2, 2, -0.0L, -2}, "round");
  expect_same(values(run("round", {vec(f, {0.5L, 1.5L, 2.5L, -0.5L})}, {{"mode", "half_away_from_zero"}})),
              {1, 2, 3, -1}, "round away");
  expect_same(values(run("isfinite", {vec(f, {kNaN, kInf, -kInf, 0})})), {0, 0, 0, 1}, "isfinite");
  expect_same(values(run("abs", {vec(f, {-0.0L, -kInf, kNaN})})), {0.0L, kInf, kNaN}, "abs");
}

TEST(OracleFloat, PowSpecialCases) {
  const int32_t f = PK_DTYPE_F64;
  expect_same(values(run("pow", {vec(f, {kNaN, 1, -1, 0, -0.0L, 2}), vec(f, {0, kNaN, kInf, -1, -3, 0.5L})})),
              {1, 1, 1, kInf, -kInf, static_cast<long double>(std::sqrt(2.0))}, "pow");
}

// f64 + - * / and sqrt must be correctly rounded, and the hardware's double arithmetic is: the oracle's
// round-to-odd long double arithmetic must reproduce it bit for bit.
TEST(OracleFloat, F64BasicOpsAreCorrectlyRounded) {
  std::mt19937_64 rng(7);
  const int n = 4000;
  std::vector<long double> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    uint64_t x = rng(), y = rng();
    double da, db;
    std::memcpy(&da, &x, 8);
    std::memcpy(&db, &y, 8);
    if (!std::isfinite(da)) da = 1.5;
    if (!std::isfinite(db)) db = -0.75;
    if (i % 2 == 0) db = std::ldexp(std::fabs(da), -(static_cast<int>(rng() % 60)));  // close exponents
    a[i] = da;
    b[i] = db;
  }
  auto check = [&](const char *op, auto hw) {
    auto out = run(op, {vec(PK_DTYPE_F64, a), vec(PK_DTYPE_F64, b)});
    ASSERT_EQ(out.size(), 1u);
    for (int i = 0; i < n; ++i) {
      double want = hw(static_cast<double>(a[i]), static_cast<double>(b[i]));
      double got = static_cast<double>(out[0].rounded_at(i).re);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got));
      } else {
        ASSERT_EQ(std::memcmp(&got, &want, 8), 0) << op << " " << static_cast<double>(a[i]) << ", "
                                                  << static_cast<double>(b[i]) << ": " << got << " vs " << want;
      }
    }
  };
  check("add", [](double x, double y) { return x + y; });
  check("sub", [](double x, double y) { return x - y; });
  check("mul", [](double x, double y) { return x * y; });
  check("div", [](double x, double y) { return x / y; });
  std::vector<long double> pos(a);
  for (auto &x : pos) x = fabsl(x);
  auto out = run("sqrt", {vec(PK_DTYPE_F64, pos)});
  ASSERT_EQ(out.size(), 1u);
  for (int i = 0; i < n; ++i) {
    double want = std::sqrt(static_cast<double>(pos[i]));
    double got = static_cast<double>(out[0].rounded_at(i).re);
    ASSERT_EQ(got, want) << static_cast<double>(pos[i]);
  }
}

// ------------------------------------------------------------------------------------------ integers

TEST(OracleInt, WrapAndDivision) {
  const int32_t i8 = PK_DTYPE_I8, i32 = PK_DTYPE_I32;
  expect_same(values(run("add", {vec(i8, {127, -128, 100}), vec(i8, {1, -1, 100})})), {-128, 127, -56}, "i8 add");
  expect_same(values(run("mul", {vec(i8, {16, -128}), vec(i8, {16, -1})})), {0, -128}, "i8 mul");
  expect_same(values(run("neg", {vec(i8, {-128, 5})})), {-128, -5}, "neg(INT_MIN)");
  expect_same(values(run("abs", {vec(i8, {-128, -5})})), {-128, 5}, "abs(INT_MIN)");
  expect_same(values(run("div", {vec(i32, {-7, 7, 7, -7, -2147483648.0L, 5}), vec(i32, {2, -2, 0, -2, -1, 7})})),
              {-3, -3, 0, 3, -2147483648.0L, 0}, "i32 div truncates, x/0 = 0");
  expect_same(values(run("div", {vec(PK_DTYPE_U8, {255, 7}), vec(PK_DTYPE_U8, {2, 0})})), {127, 0}, "u8 div");
  expect_same(values(run("sub", {vec(PK_DTYPE_U8, {0}), vec(PK_DTYPE_U8, {1})})), {255}, "u8 wrap");
}

TEST(OracleInt, Shifts) {
  const int32_t i8 = PK_DTYPE_I8;
  expect_same(values(run("shift_left", {vec(i8, {1, 1, 1, 1, -1, 64}), vec(i8, {7, 8, 100, -1, 0, 1})})),
              {-128, 0, 0, 0, -1, -128}, "i8 shift_left");
  expect_same(values(run("shift_left", {vec(PK_DTYPE_I64, {1, 1}), vec(PK_DTYPE_I64, {63, 64})})),
              {-9223372036854775808.0L, 0}, "i64 shift_left");
  expect_same(values(run("shift_left", {vec(PK_DTYPE_U8, {255}), vec(PK_DTYPE_U8, {4})})), {240}, "u8 shift_left");
}

TEST(OracleInt, BitwiseAndBool) {
  expect_same(values(run("bitwise_not", {vec(PK_DTYPE_I8, {0, -1, 5})})), {-1, 0, -6}, "i8 not");
  expect_same(values(run("bitwise_not", {vec(PK_DTYPE_U8, {0, 255})})), {255, 0}, "u8 not");
  expect_same(values(run("bitwise_not", {vec(PK_DTYPE_BOOL, {0, 1})})), {1, 0}, "bool not");
}

// ------------------------------------------------------------------------------------------ reductions

TEST(OracleReduce, SumIsCompensated) {
  // 1e30 + 1 - 1e30 + 1e-3: a naive f64 sum gives 1e-3.
  std::vector<long double> v = {1e30L, 1, -1e30L, 1e-3L};
  auto out = run("sum", {vec(PK_DTYPE_F64, v)}, {{"dims", "0"}});
  expect_same(values(out), {static_cast<long double>(1.001)}, "sum");
  out = run("sum", {vec(PK_DTYPE_F32, {-0.0L, -0.0L})}, {{"dims", "0"}});
  expect_same(values(out), {-0.0L}, "sum of -0");
  out = run("sum", {vec(PK_DTYPE_I8, {100, 100, 100})}, {{"dims", "0"}});
  expect_same(values(out), {44}, "i8 sum wraps");
  out = run("amax", {vec(PK_DTYPE_F32, {-0.0L, 0.0L, -1})}, {{"dims", "0"}});
  expect_same(values(out), {0.0L}, "amax +0");
  out = run("amax", {vec(PK_DTYPE_F32, {1, kNaN, 3})}, {{"dims", "0"}});
  expect_same(values(out), {kNaN}, "amax NaN");
  out = run("argmax", {vec(PK_DTYPE_F32, {1, 3, kNaN, 3, kNaN})}, {{"dim", "0"}});
  expect_same(values(out), {2}, "argmax NaN first");
  out = run("argmax", {vec(PK_DTYPE_F32, {1, 3, 2, 3})}, {{"dim", "0"}});
  expect_same(values(out), {1}, "argmax first max");
}

TEST(OracleReduce, MatmulAccumulatesExactly) {
  HostTensor a = HostTensor::from_values(PK_DTYPE_F32, {1, 3}, {1e8L, 1, -1e8L});
  HostTensor b = HostTensor::from_values(PK_DTYPE_F32, {3, 1}, {1e8L, 1, 1e8L});
  auto out = run("matmul", {a, b});
  expect_same(values(out), {1}, "matmul cancellation");
}

// ------------------------------------------------------------------------------------------ RNG

TEST(OracleRng, Philox4x32KnownAnswers) {
  // Known-answer vectors of the Random123 distribution (kat_vectors, philox4x32_10).
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  } kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat &k : kats) {
    uint32_t out[4];
    pk::oracle::philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.out[i]) << i;
  }
}

// ------------------------------------------------------------------------------------------ composites

TEST(OracleComposite, Softmax) {
  auto out = run("softmax", {vec(PK_DTYPE_F64, {1, 2, 3})}, {{"dim", "0"}});
  ASSERT_EQ(out.size(), 1u);
  const long double want[] = {0.090030573170380462815L, 0.24472847105479764616L, 0.66524095577481771469L};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(static_cast<double>(out[0].wide[i].re), static_cast<double>(want[i]), 1e-18);
    EXPECT_EQ(static_cast<double>(out[0].rounded_at(i).re), static_cast<double>(want[i]));
  }
}

TEST(OracleComposite, Relu) {
  expect_same(values(run("relu", {vec(PK_DTYPE_F32, {-1, -0.0L, 2, kNaN})})), {0, 0, 2, kNaN}, "relu");
}

}  // namespace
