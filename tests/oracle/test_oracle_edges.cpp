// Hand-checked tables for the oracle: rounding to every format, IEEE edge values, integer semantics and a few
// composite ops against values computed by hand (or with an independent arbitrary-precision tool).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "igamma_cases.hpp"
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

// Conversion rounding, overflow and saturation, one table per target format. Every value was checked by hand
// (format spacing and ties) and against numpy / ml_dtypes casts.
TEST(OracleConvert, NarrowFloatRoundingTables) {
  auto conv = [](int32_t from, int32_t to, const std::vector<long double> &v) {
    return values(run("convert_element_type", {vec(from, v)}, {{"dtype", pk::meta::dtype_name(to)}}));
  };
  const int32_t f32 = PK_DTYPE_F32, f64 = PK_DTYPE_F64, i32 = PK_DTYPE_I32;
  // f16: subnormal steps of 2^-24 (half of one ties to zero, 0.75 rounds up, a negative underflow keeps its
  // sign); spacing 2 in [2048, 4096): 2049 ties down to even 2048, 2051 ties up to even 2052
  expect_same(conv(f32, PK_DTYPE_F16, {ldexpl(1, -24), ldexpl(1, -25), ldexpl(3, -26), ldexpl(-1, -26), 2049, 2051}),
              {ldexpl(1, -24), 0, ldexpl(1, -24), -0.0L, 2048, 2052}, "f32->f16");
  expect_same(conv(i32, PK_DTYPE_F16, {65519, 65520, 2049, -65536}), {65504, kInf, 2048, -kInf}, "i32->f16");
  // bf16: max = 255 * 2^120; f32 max lies above the midpoint between bf16 max and 2^128, so it overflows to inf;
  // subnormals step by 2^-133, and half of that ties to zero; spacing 2 in [256, 512)
  expect_same(conv(f32, PK_DTYPE_BF16,
                   {ldexpl(255, 120), 3.40282346638528859811704183484516925e38L, -ldexpl(1, -133), ldexpl(1, -134)}),
              {ldexpl(255, 120), kInf, -ldexpl(1, -133), 0}, "f32->bf16");
  expect_same(conv(i32, PK_DTYPE_BF16, {257, 259}), {256, 260}, "i32->bf16");
  // e5m2 (2 mantissa bits): 1.125 ties to 1.0, 1.375 ties to 1.5; subnormal step 2^-16: 2^-17 ties to 0,
  // 1.5 * 2^-16 ties to 2^-15; inf stays inf (IEEE-like format)
  expect_same(conv(f32, PK_DTYPE_F8E5M2, {1.125L, 1.375L, ldexpl(1, -17), ldexpl(3, -17), -kInf}),
              {1, 1.5L, 0, ldexpl(1, -15), -kInf}, "f32->e5m2");
  // e4m3fn (3 mantissa bits, subnormal step 2^-9): 2^-10 ties to 0, 3 * 2^-10 ties to 2^-8; spacing 2 in
  // [16, 32): 17 ties to 16, 19 ties to 20; the conversion saturates: -inf and out-of-range values give +-448
  expect_same(conv(f32, PK_DTYPE_F8E4M3FN, {ldexpl(1, -10), ldexpl(3, -10), 17, 19, -kInf, 480}),
              {0, ldexpl(1, -8), 16, 20, -448, 448}, "f32->e4m3fn");
  expect_same(conv(i32, PK_DTYPE_F8E4M3FN, {1000, -500, 0}), {448, -448, 0}, "i32->e4m3fn saturates");
  expect_same(conv(PK_DTYPE_F16, PK_DTYPE_F8E4M3FN, {-kInf, 65504}), {-448, 448}, "f16->e4m3fn saturates");
  // f64 -> f32: 1 + 2^-24 ties to 1, 1 + 3 * 2^-24 ties to 1 + 2^-22; (2 - 2^-24) * 2^127, the midpoint
  // above f32 max, ties to inf (max's significand is odd)
  expect_same(conv(f64, f32, {1 + ldexpl(1, -24), 1 + ldexpl(3, -24), ldexpl(2 - ldexpl(1, -24), 127)}),
              {1, 1 + ldexpl(1, -22), kInf}, "f64->f32");
  // i64 -> f32: 2^24 + 1 ties to 2^24; INT64_MAX rounds to 2^63
  expect_same(conv(PK_DTYPE_I64, f32, {16777217, 9223372036854775807.0L}), {16777216, ldexpl(1, 63)}, "i64->f32");
}

TEST(OracleConvert, IntegerTargets) {
  auto conv = [](int32_t from, int32_t to, const std::vector<long double> &v) {
    return values(run("convert_element_type", {vec(from, v)}, {{"dtype", pk::meta::dtype_name(to)}}));
  };
  // int -> int wraps modulo 2^bits
  expect_same(conv(PK_DTYPE_I32, PK_DTYPE_I8, {200, -129, 256, -128}), {-56, 127, 0, -128}, "i32->i8");
  expect_same(conv(PK_DTYPE_I32, PK_DTYPE_U8, {-1, 256, 257}), {255, 0, 1}, "i32->u8");
  expect_same(conv(PK_DTYPE_I64, PK_DTYPE_I32, {4294967301.0L, 2147483648.0L}), {5, -2147483648.0L}, "i64->i32");
  // float -> int truncates toward zero and saturates (2^63 is one above INT64_MAX)
  expect_same(conv(PK_DTYPE_F64, PK_DTYPE_I64, {9.3e18L, -9.3e18L, ldexpl(1, 63), -0.99L}),
              {9223372036854775807.0L, -9223372036854775808.0L, 9223372036854775807.0L, 0}, "f64->i64");
  expect_same(conv(PK_DTYPE_F64, PK_DTYPE_U8, {255.99L, -0.99L, kInf, -kInf}), {255, 0, 255, 0}, "f64->u8");
  expect_same(conv(PK_DTYPE_BF16, PK_DTYPE_I16, {kNaN, 40000, -1.5L}), {0, 32767, -1}, "bf16->i16");
  expect_same(conv(PK_DTYPE_I32, PK_DTYPE_BOOL, {0, -7, 256}), {0, 1, 1}, "i32->bool");
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

TEST(OracleFloat, MoreSignedZerosNaNAndInf) {
  const int32_t f = PK_DTYPE_F32;
  expect_same(values(run("mul", {vec(f, {0, -0.0L, kInf, -2}), vec(f, {kInf, 5, -0.0L, 0})})),
              {kNaN, -0.0L, kNaN, -0.0L}, "mul");
  expect_same(values(run("sub", {vec(f, {kInf, 0, -0.0L, 0}), vec(f, {kInf, 0, 0, -0.0L})})), {kNaN, 0, -0.0L, 0},
              "sub");
  expect_same(values(run("exp", {vec(f, {-kInf, kInf, kNaN, -0.0L})})), {0, kInf, kNaN, 1}, "exp");
  expect_same(values(run("tanh", {vec(f, {-0.0L, -kInf, kInf})})), {-0.0L, -1, 1}, "tanh");
  expect_same(values(run("sign", {vec(f, {-0.0L, 0, kNaN, -kInf, ldexpl(-1, -149)})})), {-0.0L, 0, kNaN, -1, -1},
              "sign keeps the zero's sign");
  expect_same(values(run("copysign", {vec(f, {1, -2, kInf}), vec(f, {-0.0L, 0, -1})})), {-1, 2, -kInf}, "copysign");
  expect_same(values(run("minimum", {vec(f, {-0.0L, 0, kNaN}), vec(f, {0, -0.0L, 1})})), {-0.0L, -0.0L, kNaN},
              "minimum");
  expect_same(values(run("fmax", {vec(f, {kNaN, 1, kNaN, -0.0L}), vec(f, {1, kNaN, kNaN, 0})})), {1, 1, kNaN, 0},
              "fmax");
  expect_same(values(run("eq", {vec(f, {kNaN, -0.0L, kInf}), vec(f, {kNaN, 0, kInf})})), {0, 1, 1}, "eq");
  expect_same(values(run("ne", {vec(f, {kNaN, -0.0L}), vec(f, {kNaN, 0})})), {1, 0}, "ne");
  expect_same(values(run("reciprocal", {vec(f, {-0.0L, kInf, -kInf})})), {-kInf, 0, -0.0L}, "reciprocal");
  expect_same(values(run("rsqrt", {vec(f, {0, -0.0L, kInf, -1})})), {kInf, -kInf, 0, kNaN}, "rsqrt");
  // atan2(y, x) on the signed zeros (C99 F.9.1.4): f32(pi) = 0x40490fdb = 3.1415927410125732421875
  const long double pi32 = 3.1415927410125732421875L;
  expect_same(values(run("atan2", {vec(f, {0, -0.0L, -0.0L}), vec(f, {-0.0L, -0.0L, 0})})), {pi32, -pi32, -0.0L},
              "atan2");
  expect_same(values(run("isnan", {vec(f, {kNaN, kInf, 0})})), {1, 0, 0}, "isnan");
}

TEST(OracleFloat, Subnormals) {
  const int32_t f = PK_DTYPE_F32;
  const long double sub = ldexpl(1, -149);
  // 2^-149 / 2 ties to 0; 1.5 * 2^-149 ties to the even 2^-148; 2^-126 / 2 is the exact subnormal 2^-127
  expect_same(values(run("div", {vec(f, {sub, 3 * sub, ldexpl(1, -126)}), vec(f, {2, 2, 2})})),
              {0, ldexpl(1, -148), ldexpl(1, -127)}, "f32 div into subnormals");
  expect_same(values(run("add", {vec(PK_DTYPE_F16, {ldexpl(1, -24), ldexpl(1, -14)}),
                                 vec(PK_DTYPE_F16, {ldexpl(1, -24), -ldexpl(1, -24)})})),
              {ldexpl(1, -23), ldexpl(1023, -24)}, "f16 subnormal add");
  const int32_t d = PK_DTYPE_F64;
  expect_same(values(run("mul", {vec(d, {ldexpl(1, -1074), ldexpl(3, -1074)}), vec(d, {0.5L, 0.5L})})),
              {0, ldexpl(1, -1073)}, "f64 underflow ties to even");
  expect_same(values(run("sub", {vec(d, {ldexpl(1, -1022)}), vec(d, {ldexpl(1, -1074)})})),
              {ldexpl(1, -1022) - ldexpl(1, -1074)}, "f64 largest subnormal");
  expect_same(values(run("sqrt", {vec(d, {ldexpl(1, -1074)})})), {ldexpl(1, -537)}, "sqrt of the f64 min");
  expect_same(values(run("floor", {vec(f, {-sub, sub})})), {-1, 0}, "floor of subnormals");
  expect_same(values(run("isfinite", {vec(f, {sub})})), {1}, "subnormals are finite");
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

// Signs of integer and float division and remainder: div and fmod truncate (the remainder takes the dividend's
// sign), remainder floors (it takes the divisor's sign); x / 0 = x % 0 = 0 and INT_MIN / -1 wraps. Checked by
// hand and against Python's // and %, numpy's fmod and remainder.
TEST(OracleInt, DivisionAndRemainderSigns) {
  const int32_t i32 = PK_DTYPE_I32;
  const long double int_min = -2147483648.0L;
  const std::vector<long double> a = {-7, 7, -7, 7, int_min, 6, 0}, b = {2, -2, -2, 0, -1, -3, -5};
  expect_same(values(run("div", {vec(i32, a), vec(i32, b)})), {-3, -3, 3, 0, int_min, -2, 0}, "i32 div");
  expect_same(values(run("fmod", {vec(i32, a), vec(i32, b)})), {-1, 1, -1, 0, 0, 0, 0}, "i32 fmod");
  expect_same(values(run("remainder", {vec(i32, a), vec(i32, b)})), {1, -1, -1, 0, 0, 0, 0}, "i32 remainder");
  expect_same(values(run("remainder", {vec(PK_DTYPE_I8, {-128, -128, 127}), vec(PK_DTYPE_I8, {-1, 3, -128})})),
              {0, 1, -1}, "i8 remainder");
  expect_same(values(run("div", {vec(PK_DTYPE_I64, {-9223372036854775808.0L}), vec(PK_DTYPE_I64, {-1})})),
              {-9223372036854775808.0L}, "i64 INT_MIN / -1");
  const int32_t f = PK_DTYPE_F64;
  expect_same(values(run("fmod", {vec(f, {-7.5L, 7.5L, -0.0L, kInf, 1, 1}), vec(f, {2, -2, 1, 1, 0, kInf})})),
              {-1.5L, 1.5L, -0.0L, kNaN, kNaN, 1}, "f64 fmod");
  expect_same(values(run("remainder", {vec(f, {-7.5L, 7.5L, -4, 4, 1, kInf}), vec(f, {2, -2, 2, -2, 0, 1})})),
              {0.5L, -0.5L, 0, -0.0L, kNaN, kNaN}, "f64 remainder: sign of b");
  // -2^-60 mod 1 is 1 - 2^-60: not an f64, it rounds to 1 (the exact value is rounded once)
  expect_same(values(run("remainder", {vec(f, {-ldexpl(1, -60)}), vec(f, {1})})), {1}, "f64 remainder rounds");
}

TEST(OracleInt, Overflow) {
  const int32_t i32 = PK_DTYPE_I32;
  // 65536^2 = 2^32 wraps to 0; 46341^2 = 2147488281 wraps to 2147488281 - 2^32
  expect_same(values(run("mul", {vec(i32, {65536, 46341}), vec(i32, {65536, 46341})})), {0, -2147479015.0L}, "i32 mul");
  expect_same(values(run("add", {vec(PK_DTYPE_I64, {9223372036854775807.0L}), vec(PK_DTYPE_I64, {1})})),
              {-9223372036854775808.0L}, "i64 add");
  expect_same(values(run("sub", {vec(PK_DTYPE_I16, {-32768}), vec(PK_DTYPE_I16, {1})})), {32767}, "i16 sub");
  expect_same(values(run("sum", {vec(PK_DTYPE_I16, {30000, 30000})}, {{"dims", "0"}})), {-5536}, "i16 sum");
  expect_same(values(run("neg", {vec(PK_DTYPE_I64, {-9223372036854775808.0L})})), {-9223372036854775808.0L},
              "neg(INT64_MIN)");
  expect_same(values(run("mul", {vec(PK_DTYPE_U8, {16, 255}), vec(PK_DTYPE_U8, {16, 255})})), {0, 1}, "u8 mul");
}

TEST(OracleInt, RightShiftsBeyondWidth) {
  const int32_t i8 = PK_DTYPE_I8;
  // arithmetic: the sign fills; a shift >= 8 or < 0 gives -1 for negatives, 0 otherwise
  expect_same(values(run("shift_right_arithmetic",
                         {vec(i8, {-128, -128, -128, 64, -1, 5, 127}), vec(i8, {7, 8, 100, 100, -1, 1, 6})})),
              {-1, -1, -1, 0, -1, 2, 1}, "i8 shift_right_arithmetic");
  // logical: zeros fill the 8-bit pattern (-128 = 0x80, -1 = 0xff); a shift >= 8 or < 0 gives 0
  expect_same(values(run("shift_right_logical", {vec(i8, {-128, -1, -1, -1, 64}), vec(i8, {1, 7, 8, -1, 6})})),
              {64, 1, 0, 0, 1}, "i8 shift_right_logical");
  expect_same(values(run("shift_right_arithmetic", {vec(PK_DTYPE_U8, {255, 255}), vec(PK_DTYPE_U8, {1, 8})})), {127, 0},
              "u8 arithmetic shift has no sign");
  expect_same(values(run("shift_left", {vec(PK_DTYPE_I32, {1, 1, 3}), vec(PK_DTYPE_I32, {31, 32, 30})})),
              {-2147483648.0L, 0, -1073741824.0L}, "i32 shift_left");
  expect_same(values(run("shift_right_logical", {vec(PK_DTYPE_I64, {-1, -1}), vec(PK_DTYPE_I64, {63, 64})})), {1, 0},
              "i64 shift_right_logical");
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

TEST(OracleReduce, EmptyAndRunningExtremes) {
  // an empty amax / amin gives the lowest / highest value of the dtype (the table): -inf / +inf for floats,
  // the integer limits for integers
  HostTensor empty_i32 = HostTensor::from_values(PK_DTYPE_I32, {2, 0}, {});
  expect_same(values(run("amax", {empty_i32}, {{"dims", "1"}})), {-2147483648.0L, -2147483648.0L}, "i32 amax of []");
  expect_same(values(run("amin", {empty_i32}, {{"dims", "1"}})), {2147483647.0L, 2147483647.0L}, "i32 amin of []");
  HostTensor empty_f32 = HostTensor::from_values(PK_DTYPE_F32, {1, 0}, {});
  expect_same(values(run("amax", {empty_f32}, {{"dims", "1"}})), {-kInf}, "f32 amax of []");
  // cummax: NaN sticks and its index moves to each later NaN; ties (-0 against +0 too) move to the later one
  auto out = run("cummax", {vec(PK_DTYPE_F32, {1, kNaN, 3, kNaN, 2})}, {{"dim", "0"}});
  ASSERT_EQ(out.size(), 2u);
  expect_same(values(out), {1, kNaN, kNaN, kNaN, kNaN}, "cummax values");
  std::vector<long double> idx;
  for (int64_t i = 0; i < out[1].numel(); ++i) idx.push_back(out[1].rounded_at(i).re);
  expect_same(idx, {0, 1, 1, 3, 3}, "cummax indices");
  out = run("cummin", {vec(PK_DTYPE_F32, {0, -0.0L, 0, 5, -1})}, {{"dim", "0"}});
  ASSERT_EQ(out.size(), 2u);
  expect_same(values(out), {0, -0.0L, 0, 0, -1}, "cummin values");
}

TEST(OracleShape, OutOfRangeIndices) {
  // gathers yield 0 for an index outside [0, extent); scatters skip it (the table's rules, not errors)
  HostTensor x = HostTensor::from_values(PK_DTYPE_F32, {3}, {10, 20, 30});
  HostTensor idx = HostTensor::from_values(PK_DTYPE_I64, {4}, {2, -1, 3, 0});
  expect_same(values(run("gather", {x, idx}, {{"dim", "0"}})), {30, 0, 0, 10}, "gather");
  expect_same(values(run("index_select", {x, idx}, {{"dim", "0"}})), {30, 0, 0, 10}, "index_select");
  HostTensor src = HostTensor::from_values(PK_DTYPE_F32, {4}, {1, 2, 3, 4});
  expect_same(values(run("scatter", {x, idx, src}, {{"dim", "0"}})), {4, 20, 1}, "scatter");
  HostTensor dup = HostTensor::from_values(PK_DTYPE_I64, {4}, {2, 2, 5, 0});
  expect_same(values(run("scatter_reduce", {x, dup, src}, {{"dim", "0"}, {"reduce", "sum"}})), {14, 20, 33},
              "scatter_reduce sum");
  expect_same(
      values(run("scatter_reduce", {x, dup, src}, {{"dim", "0"}, {"reduce", "sum"}, {"include_self", "false"}})),
      {4, 20, 3}, "scatter_reduce sum without self");
  expect_same(
      values(run("scatter_reduce", {x, dup, src}, {{"dim", "0"}, {"reduce", "amin"}, {"include_self", "false"}})),
      {4, 20, 1}, "scatter_reduce amin without self");
}

TEST(OracleFloat, AngleOfReals) {
  // the table: 0, or pi if a < 0 (so -0 gives 0); NaN stays NaN. f64(pi) = 0x400921fb54442d18.
  const long double pi64 = 3.141592653589793115997963468544185161590576171875L;
  expect_same(values(run("angle", {vec(PK_DTYPE_F64, {-0.0L, 0, -1, kInf, -kInf, kNaN})})), {0, 0, pi64, 0, pi64, kNaN},
              "angle");
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

TEST(OracleRng, CounterAndKeyMapping) {
  // seed 0, offset 0: elements 0..3 read counter (0, 0, 0, 0) and key (0, 0), whose block is Random123's first
  // known-answer vector; an f64 uniform on [0, 1) is then word * 2^-32 exactly and randint on [0, 2^32) the word.
  const uint32_t kat[4] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
  auto u = run("philox_uniform", {}, {{"shape", "[4]"}, {"dtype", "f64"}, {"seed", "0"}});
  auto n = run("philox_randint", {}, {{"shape", "[4]"}, {"dtype", "i64"}, {"seed", "0"}, {"high", "4294967296"}});
  ASSERT_EQ(u.size(), 1u);
  ASSERT_EQ(n.size(), 1u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(u[0].rounded_at(i).re, ldexpl(kat[i], -32)) << i;
    EXPECT_EQ(n[0].rounded_at(i).re, static_cast<long double>(kat[i])) << i;
  }
}

TEST(OracleRng, UniformRoundsDown) {
  // [low, high) = [1 - 2^-20, 1) in f16: every draw lies in [1 - 2^-20, 1), which rounds down to 1 - 2^-11 (the
  // largest f16 below 1), never to nearest (1 = high).
  auto u = run("philox_uniform", {},
               {{"shape", "[16]"}, {"dtype", "f16"}, {"seed", "5"}, {"low", "0.99999904632568359375"}, {"high", "1"}});
  ASSERT_EQ(u.size(), 1u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(u[0].rounded_at(i).re, 1 - ldexpl(1, -11)) << i;
}

// ------------------------------------------------------------------------------------------ special functions

TEST(OracleSpecial, IncompleteGammaSpecialValuesAndClosedForms) {
  // the table's special values: P(a, 0) = 0, Q(a, 0) = 1, a < 0 or x < 0 -> NaN, P(0, x > 0) = 1
  HostTensor a = vec(PK_DTYPE_F64, {1, 0, 0, -1, 1, kNaN, 2, kInf});
  HostTensor x = vec(PK_DTYPE_F64, {0, 2, 0, 1, -1, 1, kInf, 2});
  expect_same(values(run("igamma", {a, x})), {0, 1, 0, kNaN, kNaN, kNaN, 1, 0}, "igamma specials");
  expect_same(values(run("igammac", {a, x})), {1, 0, 1, kNaN, kNaN, kNaN, 0, 1}, "igammac specials");
  // closed forms: P(1, x) = 1 - e^-x, Q(1, x) = e^-x, P(1/2, x) = erf(sqrt x), Q(1/2, x) = erfc(sqrt x); the wide
  // values within 2^-60 relative
  HostTensor a2 = vec(PK_DTYPE_F64, {1, 1, 0.5L, 0.5L});
  HostTensor x2 = vec(PK_DTYPE_F64, {0.25L, 30, 4, 9});
  auto p = run("igamma", {a2, x2}), q = run("igammac", {a2, x2});
  const long double want_p[] = {-expm1l(-0.25L), -expm1l(-30), erfl(2), erfl(3)};
  const long double want_q[] = {expl(-0.25L), expl(-30), erfcl(2), erfcl(3)};
  for (int i = 0; i < 4; ++i) {
    EXPECT_LE(fabsl(p[0].wide[i].re - want_p[i]), fabsl(want_p[i]) * ldexpl(1, -60)) << i;
    EXPECT_LE(fabsl(q[0].wide[i].re - want_q[i]), fabsl(want_q[i]) * ldexpl(1, -60)) << i;
  }
}

TEST(OracleSpecial, IncompleteGammaHugeX) {
  // x far above a: P = 1, Q = 0 (mpmath: Q(16.5, f64 max) ~ 1e-78072820862606201654...). x^a alone overflows long
  // double at the f64 maximum for a > 16, and times e^-x = 0 it once gave NaN; 0x1.216d279bf19dcp+4 (18.089...) is
  // the a of such a conformance case.
  const long double big = 0x1.fffffffffffffp+1023L;
  HostTensor a =
      vec(PK_DTYPE_F64, {16.5L, 17, 0x1.216d279bf19dcp+4L, 19.9L, 20, 100, 1e10L, 1e300L, 0.5L, 1e-300L, 19.9L, 19.9L});
  HostTensor x = vec(PK_DTYPE_F64, {big, big, big, big, big, big, big, big, big, big, 16384, 12000});
  const std::vector<long double> ones(12, 1), zeros(12, 0);
  auto p = run("igamma", {a, x}), q = run("igammac", {a, x});
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(q.size(), 1u);
  expect_same(values(p), ones, "igamma at huge x");
  expect_same(values(q), zeros, "igammac at huge x");
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(p[0].wide[i].re, 1) << i;
    EXPECT_EQ(q[0].wide[i].re, 0) << i;
  }
  // Q where x^a e^-x is tiny but not 0, mpmath at 300 bits: Q(17.5, 700) = 1.03674842361584032872694e-271
  // (0x1.c0aecd64150d7p-901 correctly rounded), Q(19.5, 1000) = 5.898730032830746896444718e-396 (below f64, long
  // double holds it), Q(19.5, 11000) = 1.214321662634680440197892e-4719
  auto q2 = run("igammac", {vec(PK_DTYPE_F64, {17.5L, 19.5L, 19.5L}), vec(PK_DTYPE_F64, {700, 1000, 11000})});
  ASSERT_EQ(q2.size(), 1u);
  const long double want[] = {1.03674842361584032872694e-271L, 5.898730032830746896444718e-396L,
                              1.214321662634680440197892e-4719L};
  // the relative error grows with the size of the exponent of x^a e^-x (README): 2^-50 at x = 11000
  const int rel_bits[] = {56, 56, 50};
  for (int i = 0; i < 3; ++i) EXPECT_LE(fabsl(q2[0].wide[i].re - want[i]), want[i] * ldexpl(1, -rel_bits[i])) << i;
  EXPECT_EQ(q2[0].rounded_bits(0), 0x07ac0aecd64150d7u);
}

TEST(OracleSpecial, IncompleteGammaForLargeANearX) {
  // Temme's expansion in the oracle against mpmath (igamma_cases.hpp: a from 2^16 to the f64 maximum, x within
  // 37 sqrt(a) of a): before it, every a beyond ~1e10 was "no reference" (the series needs ~10 sqrt(a) terms). The
  // wide value must round to mpmath's correctly rounded double, within 0.51 ulp of it (2^-60 relative on top).
  std::vector<long double> a, x;
  for (const auto &c : pk::test::kIgammaCases) {
    a.push_back(c.a);
    x.push_back(c.x);
  }
  auto p = run("igamma", {vec(PK_DTYPE_F64, a), vec(PK_DTYPE_F64, x)});
  auto q = run("igammac", {vec(PK_DTYPE_F64, a), vec(PK_DTYPE_F64, x)});
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(q.size(), 1u);
  for (size_t i = 0; i < a.size(); ++i) {
    const auto &c = pk::test::kIgammaCases[i];
    const long double wp = p[0].wide[i].re, wq = q[0].wide[i].re;
    const long double ulp_p = ldexpl(1, (c.p == 0 || fabsl(c.p) < 0x1p-1022L ? -1022 : std::ilogb(c.p)) - 52);
    const long double ulp_q = ldexpl(1, (c.q == 0 || fabsl(c.q) < 0x1p-1022L ? -1022 : std::ilogb(c.q)) - 52);
    EXPECT_LE(fabsl(wp - c.p), 0.51L * ulp_p) << "igamma(" << c.a << ", " << c.x << ") = " << static_cast<double>(wp);
    EXPECT_LE(fabsl(wq - c.q), 0.51L * ulp_q) << "igammac(" << c.a << ", " << c.x << ") = " << static_cast<double>(wq);
  }
}

TEST(OracleSpecial, DigammaNearItsRoots) {
  // psi at the f64 nearest to its first five negative roots and its positive root, where psi is ~1e-16 and its
  // terms ~4, and at inputs of earlier conformance failures near roots. mpmath at 300 bits (mpmath.digamma),
  // then float(psi).hex() for the correctly rounded f64. A long double evaluation is off by ~2^-9 relative at
  // the roots and 10 f64 ulp at -0.5040666.
  struct Case {
    long double x, psi;
    uint64_t f64_bits;
  };
  const Case cases[] = {
      {-0x1.02172b05ee260p-1L, 7.289763902976894944462434e-17L, 0x3c9502e5780c52dau},
      {-0x1.92d0cbc289d4ap+0L, 1.56497884818384533672304e-16L, 0x3ca68dc0bb58132fu},
      {-0x1.4e2c19f679e5ap+1L, -1.072027593641000207125036e-15L, 0xbcd34fdacb52af39u},
      {-0x1.d1514b041b2a8p+1L, -6.354883894064686250492636e-16L, 0xbcc6e558890267e6u},
      {-0x1.29cea5c1ccbd0p+2L, 3.153352998238749258284327e-15L, 0x3cec6723103dc2cbu},
      {0x1.762d86356be3fp+0L, -9.241265521729427516792351e-17L, 0xbc9aa2d9b3ce29e0u},
      {-0x1.021504c6a3a83p-1L, 1.466003685923014029340039e-4L, 0x3f23371793ce9550u},
      {-0x1.92e164996bce7p+0L, -2.518194987688895422909014e-3L, 0xbf64a109a3bf13ecu},
      {-0x1.ec03b898a3ea4p+2L, 8.672922701805975728195868e-4L, 0x3f4c6b5ff7df3535u},
      {-0x1.d14e977600854p+1L, 9.603859280417979139640407e-4L, 0x3f4f784d13846746u},
  };
  std::vector<long double> xs;
  for (const Case &c : cases) xs.push_back(c.x);
  auto out = run("digamma", {vec(PK_DTYPE_F64, xs)});
  ASSERT_EQ(out.size(), 1u);
  for (size_t i = 0; i < xs.size(); ++i) {
    // 113-bit arithmetic: ~2^-110 absolute, i.e. ~2^-57 relative for the results near 1e-16, better elsewhere
    const long double rel = fabsl(out[0].wide[i].re - cases[i].psi) / fabsl(cases[i].psi);
    EXPECT_LE(rel, ldexpl(1, i < 6 ? -55 : -62)) << i << ": relative error " << static_cast<double>(rel);
    EXPECT_EQ(out[0].rounded_bits(static_cast<int64_t>(i)), cases[i].f64_bits) << i;
  }
}

// Complex results the table contracts correctly rounded, at inputs where std::complex<long double> (the oracle's
// arithmetic before MPFR) rounds to the wrong double: the quotients are Python's exact Fraction arithmetic
// rounded by float(), the square roots and moduli mpmath at 400 bits; the large-phase powers mpmath at 1400 bits.
struct ComplexCase {
  double a_re, a_im, b_re, b_im, want_re, want_im;
};

void expect_complex(const std::string &op, int32_t dtype, const std::vector<ComplexCase> &cases, bool binary) {
  std::vector<pk::oracle::Wide> a, b;
  for (const ComplexCase &c : cases) {
    a.push_back({c.a_re, c.a_im});
    b.push_back({c.b_re, c.b_im});
  }
  const int64_t n = static_cast<int64_t>(cases.size());
  std::vector<HostTensor> in = {HostTensor::from_complex(dtype, {n}, a)};
  if (binary) in.push_back(HostTensor::from_complex(dtype, {n}, b));
  auto out = run(op, in);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < n; ++i) {
    const pk::oracle::Wide got = out[0].rounded_at(i);
    const bool real_out = out[0].dtype == PK_DTYPE_F64;
    EXPECT_EQ(static_cast<double>(got.re), cases[i].want_re) << op << " [" << i << "] real part";
    if (!real_out) {
      EXPECT_EQ(static_cast<double>(got.im), cases[i].want_im) << op << " [" << i << "] imaginary part";
    }
  }
}

TEST(OracleComplex, DivSqrtAbsCorrectlyRounded) {
  expect_complex("div", PK_DTYPE_C128,
                 {{-0x1.ba49981322644p+1, -0x1.2feaf18bf6d50p+1, 0x1.15da5df20e540p+1, 0x1.786cee354ebbcp+0,
                   -0x1.99599360692dbp+0, -0x1.5d396429be24dp-7},
                  {-0x1.f6f1c4ecf18d2p+0, 0x1.c87a531597aaap+1, 0x1.87ce806b50798p+0, 0x1.ced5a70fcf6c8p+1,
                   0x1.48635bd1081cfp-1, 0x1.a12e8086747cep-1},
                  {0x1.270d7a50e5d3cp+1, 0x1.1d2407b497480p-5, 0x1.217ef52285454p+1, 0x1.8ae5c224511cep+1,
                   0x1.7455e52e5b976p-2, -0x1.ec237a016f03bp-2},
                  {0x1.ee6084095134cp+0, 0x1.2bc2e68e71d28p+0, -0x1.360de776a4f0ap+1, 0x1.f92c512c38728p+1,
                   -0x1.5987b79731cb7p-9, -0x1.f366b463ad12ap-2}},
                 true);
  expect_complex("sqrt", PK_DTYPE_C128,
                 {{0x1.d64f70b696c2ap+1, -0x1.6cac6636a0246p+1, 0, 0, 0x1.0520e80fa4375p+1, -0x1.6582e355160dep-1},
                  {0x1.b11f93de03b5cp+1, 0x1.d1e16e8d6f5f4p+0, 0, 0, 0x1.e6991d8016ed7p+0, 0x1.ea3372c2fe329p-2},
                  {0x1.d54a3baed3bb4p+0, 0x1.fe9b1ef0770a8p+1, 0, 0, 0x1.c394d884e407dp+0, 0x1.2175f6df9db03p+0},
                  {0x1.7822ffd390f2ap+1, 0x1.441828e387b10p+1, 0, 0, 0x1.d8a5d7b23dc0ep+0, 0x1.5f14012097c5dp-1},
                  // sqrt(3 + 4i) = 2 + i and sqrt(-4 - 0i) = 0 - 2i stay exact
                  {3, 4, 0, 0, 2, 1},
                  {-4, -0.0, 0, 0, 0, -2}},
                 false);
  expect_complex("abs", PK_DTYPE_C128,
                 {{-0x1.41d228fc29f0ep+1, 0x1.04d61d884c760p-3, 0, 0, 0x1.423bcbe960dfbp+1, 0},
                  {-0x1.75d1befd05a72p+1, -0x1.20971fd49d2a2p+1, 0, 0, 0x1.d84168d1b3d1dp+1, 0},
                  {0x1.040ba63d5f8f8p+0, 0x1.b1a769a478ca4p+0, 0, 0, 0x1.f9a5c41c3a2bfp+0, 0},
                  {3e300, 4e300, 0, 0, 5e300, 0}},
                 false);
}

TEST(OracleComplex, PowWithHugePhase) {
  // The phase Im(b log a) is ~5.8e308 radians (c128) and ~1.3e39 (c64): long double reduces it to noise.
  expect_complex("pow", PK_DTYPE_C128,
                 {{0x1.489fc6636d252p-5, -0x1p-1074, -0x1.7093615751bdcp-1, -0x1.fffffffffffffp+1023,
                   0x1.0d5c152d33be7p-3, 0x1.4401edf22ca41p+3}},
                 true);
  expect_complex("pow", PK_DTYPE_C64,
                 {{0x1.955c28p+5, 0x1.b38fb8p-127, -0x1.851eb8p-2, -0x1.ff933cp+127, -0x1.8d8a0cp-3, -0x1.233868p-3}},
                 true);
}

TEST(OracleSpecial, ZetaSpecialValuesAndClosedForms) {
  // zeta(1, q) = inf, s < 1 -> NaN, q a non-positive integer -> inf (a pole), zeta(s, inf) = 0
  HostTensor s = vec(PK_DTYPE_F64, {1, 0.5L, 2, 2, kNaN, 2});
  HostTensor q = vec(PK_DTYPE_F64, {1, 1, 0, -3, 1, kInf});
  expect_same(values(run("zeta", {s, q})), {kInf, kNaN, kInf, kInf, kNaN, 0}, "zeta specials");
  // zeta(2, 1) = pi^2 / 6, zeta(4, 1) = pi^4 / 90, zeta(2, 1/2) = pi^2 / 2, zeta(2, -1/2) = 4 + pi^2 / 2
  const long double pi = 3.141592653589793238462643383279502884L;
  HostTensor s2 = vec(PK_DTYPE_F64, {2, 4, 2, 2});
  HostTensor q2 = vec(PK_DTYPE_F64, {1, 1, 0.5L, -0.5L});
  auto z = run("zeta", {s2, q2});
  const long double want[] = {pi * pi / 6, pi * pi * pi * pi / 90, pi * pi / 2, 4 + pi * pi / 2};
  for (int i = 0; i < 4; ++i) EXPECT_LE(fabsl(z[0].wide[i].re - want[i]), want[i] * ldexpl(1, -60)) << i;
}

// ------------------------------------------------------------------------------------------ composites

TEST(OracleComposite, Softmax) {
  // softmax([1, 2, 3]) = e^k / (e + e^2 + e^3), to 30 digits with mpmath at 300 bits; the f64 patterns are
  // those values correctly rounded (float(mpf).hex()).
  auto out = run("softmax", {vec(PK_DTYPE_F64, {1, 2, 3})}, {{"dim", "0"}});
  ASSERT_EQ(out.size(), 1u);
  const long double want[] = {0.0900305731703804579980221014845L, 0.244728471054797652472959618341L,
                              0.665240955774821889529018280175L};
  const uint64_t want_bits[] = {0x3fb70c3e5f682bdau, 0x3fcf534335ca4bcfu, 0x3fe549a766a06791u};
  for (int i = 0; i < 3; ++i) {
    // The wide value is exp (a few ulp of long double), a compensated sum and a round-to-odd division: within
    // 2^-60 relative of the truth. An f64-accurate value (error ~2^-53) fails this by far.
    const long double rel = fabsl(out[0].wide[i].re - want[i]) / want[i];
    EXPECT_LE(rel, ldexpl(1, -60)) << i << ": wide " << static_cast<double>(out[0].wide[i].re) << ", relative error "
                                   << static_cast<double>(rel);
    EXPECT_EQ(out[0].rounded_bits(i), want_bits[i]) << i;
  }
}

TEST(OracleComposite, LogSoftmaxNearZeroAndSpecials) {
  // log_softmax([0, -20]) = (-log1p(e^-20), -20 - log1p(e^-20)); mpmath at 300 bits: -2.0611536203143807e-09
  // = -0x1.1b48655a5141ep-29 and -0x1.400000008da43p+4 correctly rounded. A log of the long double sum
  // 1 + 2e-9 would be off by ~2^-64 absolute, i.e. thousands of f64 ulp of the first result.
  HostTensor x = HostTensor::from_values(PK_DTYPE_F64, {5, 2}, {0, -20, kInf, 1, -kInf, 1, -kInf, -kInf, 1, kNaN});
  auto out = run("log_softmax", {x}, {{"dim", "1"}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rounded_bits(0), 0xbe21b48655a5141eu);
  EXPECT_EQ(out[0].rounded_bits(1), 0xc03400000008da43u);
  // the decomposition's special values: a +inf maximum gives NaN (inf - inf), a -inf element with a finite
  // maximum gives -inf, an all -inf row and a row with NaN give NaN
  std::vector<long double> v = values(out);
  v.erase(v.begin(), v.begin() + 2);
  expect_same(v, {kNaN, kNaN, -kInf, 0, kNaN, kNaN, kNaN, kNaN}, "log_softmax specials");
}

TEST(OracleComposite, AttentionScoresFarAboveTheirSpread) {
  // One query, two keys, v = [1, 0]: scores s0 = S and s1 = S + 1 give the weights (e^-1, 1) / (1 + e^-1), so the
  // output is 1 / (1 + e) = 0.26894142136999512074884 (mpmath at 200 bits): f32 0x3e89b2b1, f64 0x3fd136561454ba86.
  // f32: q = [2^100, 1], k = [2^100, 0], [2^100, 1], scale 1 (S = 2^200). f64: q = [2^600, 1], k = [2^425, 0],
  // [2^425, 2], scale 1/2 (S = 2^1024). Long double keeps neither + 1; it would give 1/2.
  const KV attrs = {{"scale", "1"}, {"is_causal", "false"}};
  HostTensor q = HostTensor::from_values(PK_DTYPE_F32, {1, 1, 1, 2}, {std::ldexp(1.0L, 100), 1});
  HostTensor k =
      HostTensor::from_values(PK_DTYPE_F32, {1, 1, 2, 2}, {std::ldexp(1.0L, 100), 0, std::ldexp(1.0L, 100), 1});
  HostTensor v = HostTensor::from_values(PK_DTYPE_F32, {1, 1, 2, 1}, {1, 0});
  auto out = run("scaled_dot_product_attention", {q, k, v}, attrs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rounded_bits(0), 0x3e89b2b1u);
  HostTensor q64 = HostTensor::from_values(PK_DTYPE_F64, {1, 1, 1, 2}, {std::ldexp(1.0L, 600), 1});
  HostTensor k64 =
      HostTensor::from_values(PK_DTYPE_F64, {1, 1, 2, 2}, {std::ldexp(1.0L, 425), 0, std::ldexp(1.0L, 425), 2});
  HostTensor v64 = HostTensor::from_values(PK_DTYPE_F64, {1, 1, 2, 1}, {1, 0});
  out = run("scaled_dot_product_attention", {q64, k64, v64}, {{"scale", "0.5"}, {"is_causal", "false"}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rounded_bits(0), 0x3fd136561454ba86u);
  // The decomposition's special values, q rows [1, 0], [inf, 0], [0, 1] against k = [1, 0], [2, inf], causal: row 0
  // sees key 0 only (3); row 1 scores inf and 0 * inf = NaN (NaN); row 2 scores 0 and +inf (inf - inf: NaN).
  HostTensor qs = HostTensor::from_values(PK_DTYPE_F64, {1, 1, 3, 2}, {1, 0, kInf, 0, 0, 1});
  HostTensor ks = HostTensor::from_values(PK_DTYPE_F64, {1, 1, 2, 2}, {1, 0, 2, kInf});
  HostTensor vs = HostTensor::from_values(PK_DTYPE_F64, {1, 1, 2, 1}, {3, 5});
  out = run("scaled_dot_product_attention", {qs, ks, vs}, {{"scale", "1"}, {"is_causal", "true"}});
  expect_same(values(out), {3, kNaN, kNaN}, "attention specials");
}

TEST(OracleComposite, Relu) {
  expect_same(values(run("relu", {vec(PK_DTYPE_F32, {-1, -0.0L, 2, kNaN})})), {0, 0, 2, kNaN}, "relu");
}

// A scan's element k is the reduction of the first k + 1 terms, bit for bit, and the scan takes time linear in
// the line: complex products that overflow go through __mulxc3's slow inf/NaN path, and recomputing every
// prefix from its start made `primkit conformance --ops cumprod --dtypes c64` appear to hang.
TEST(OracleReduction, ScansMatchTheirPrefixReductionsInLinearTime) {
  const int64_t n = 20000;
  for (int32_t dtype : {PK_DTYPE_C64, PK_DTYPE_C128, PK_DTYPE_F32, PK_DTYPE_I32}) {
    const bool cplx = dtype == PK_DTYPE_C64 || dtype == PK_DTYPE_C128;
    std::vector<pk::oracle::Wide> v;
    for (int64_t i = 0; i < n; ++i) {
      // Magnitudes far above 1, so the partial products overflow within a few hundred terms.
      const long double re = dtype == PK_DTYPE_I32 ? (i % 7) - 3 : 1e3L * ((i % 5) + 1) * (i % 2 ? -1 : 1);
      v.push_back({re, cplx ? 2e3L * ((i % 3) + 1) : 0});
    }
    const HostTensor a = HostTensor::from_complex(dtype, {n}, v);
    for (const char *op : {"cumprod", "cumsum"}) {
      const auto start = std::chrono::steady_clock::now();
      const std::vector<OutputValue> scan = run(op, {a}, {{"dim", "0"}});
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ASSERT_EQ(scan.size(), 1u) << op;
      EXPECT_LT(seconds, 5.0) << op << " of " << n << " elements of dtype " << dtype;
      for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{150}, int64_t{777}, n}) {
        std::vector<pk::oracle::Wide> prefix(v.begin(), v.begin() + k);
        const std::vector<OutputValue> red = run(std::string(op) == "cumprod" ? "prod" : "sum",
                                                 {HostTensor::from_complex(dtype, {k}, prefix)}, {{"dims", "[0]"}});
        ASSERT_EQ(red.size(), 1u);
        const size_t size = pk::meta::dtype_size(dtype);
        EXPECT_EQ(std::memcmp(red[0].rounded.data(), scan[0].rounded.data() + (k - 1) * size, size), 0)
            << op << " dtype " << dtype << " k " << k;
      }
    }
  }
}

}  // namespace
