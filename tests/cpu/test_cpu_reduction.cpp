// CPU backend, reductions and scans, through the public host API. Every expected value is worked out by hand in the
// comments or by a small double-precision loop here, never taken from a kernel run.
#include <gtest/gtest.h>

#include <complex>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <vector>

#include "cpu_test_fixture.hpp"
#include "primkit/primkit.h"

namespace {

using pk_test::last_error;

const pk_dtype kF32 = PK_DTYPE_F32_DESC, kF64 = PK_DTYPE_F64_DESC, kI8 = PK_DTYPE_I8_DESC, kI32 = PK_DTYPE_I32_DESC,
               kI64 = PK_DTYPE_I64_DESC, kU8 = PK_DTYPE_U8_DESC, kBool = PK_DTYPE_BOOL_DESC, kC64 = PK_DTYPE_C64_DESC,
               kBF16 = PK_DTYPE_BF16_DESC;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class CpuReduction : public pk_test::CpuBackendTest {};

template <class A>
A dims_attrs(A a, std::vector<int64_t> dims) {
  a.num_dims = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) a.dims[i] = dims[i];
  return a;
}

TEST_F(CpuReduction, SumOfI8Wraps) {
  // Row 0: 127 + 1 = 128 -> -128. Row 1: -128 + -1 = -129 -> 127.
  std::vector<int8_t> a = {127, 1, -128, -1}, out(2, 0);
  pk_attrs_sum at = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {1});
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(a, kI8, {2, 2})}, {tensor(out, kI8, {2})}, &at), PK_OK) << last_error().message;
  EXPECT_EQ(out[0], -128);
  EXPECT_EQ(out[1], 127);
  // 300 * 100 = 30000 = 117 * 256 + 48.
  std::vector<int8_t> b(300, 100), one(1, 0);
  at = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {0});
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(b, kI8, {300})}, {tensor(one, kI8, {})}, &at), PK_OK) << last_error().message;
  EXPECT_EQ(one[0], 48);
}

TEST_F(CpuReduction, SumOfHundredMillionF32OnesIsExact) {
  // A broadcast (stride 0) view of one element: 1e8 ones. Naive f32 accumulation stalls at 2^24 = 16777216;
  // 1e8 = 2^8 * 390625 is exactly representable in f32.
  std::vector<float> one = {1.0f}, out = {0.0f};
  pk_attrs_sum at = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {0});
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(one, kF32, {100000000}, {0})}, {tensor(out, kF32, {})}, &at), PK_OK)
      << last_error().message;
  EXPECT_EQ(out[0], 1e8f);
}

// f32 sums over the last axis (rows) and over the leading axis (columns) of dense tensors, and over a whole tensor,
// against long double: the fast paths stay within the table's f32 bound, and rows or columns whose f32 partial
// sums overflow (3e38 + 3e38 - 3e38 - 3e38 = 0), or that hold inf or NaN, follow exact arithmetic.
TEST_F(CpuReduction, F32RowColumnAndWholeSumsWithinTheBoundAndExactAtOverflow) {
  const int64_t R = 67, C = 1500;
  std::vector<float> a(R * C);
  for (int64_t i = 0; i < R * C; ++i) a[i] = 0.37f * static_cast<float>((i * 7919) % 2001 - 1000) / 7.0f;
  for (int64_t j = 0; j < 40; ++j) a[5 * C + j] = (j % 4 < 2 ? 3e38f : -3e38f);  // row 5's first 40
  a[9 * C + 3] = INFINITY;
  a[11 * C + 8] = NAN;
  for (int64_t i = 20; i < 60; ++i) a[i * C + 47] = (i % 4 < 2 ? 3e38f : -3e38f);  // column 47 (rows 20..59)
  a[30 * C + 9] = -INFINITY;                                                       // column 9
  std::vector<float> rows(R, -1.0f), cols(C, -1.0f), whole(1, -1.0f);
  pk_attrs_sum at = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {1});
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(a, kF32, {R, C})}, {tensor(rows, kF32, {R})}, &at), PK_OK)
      << last_error().message;
  at = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {0});
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(a, kF32, {R, C})}, {tensor(cols, kF32, {C})}, &at), PK_OK)
      << last_error().message;
  auto check = [](float got, const std::vector<long double> &terms, const std::string &what) {
    long double exact = 0, mag = 0;
    bool nan = false, pinf = false, ninf = false;
    for (long double t : terms) {
      nan |= std::isnan(t);
      pinf |= t == INFINITY;
      ninf |= t == -INFINITY;
      if (std::isfinite(t)) {
        exact += t;
        mag += std::fabs(t);
      }
    }
    if (nan || (pinf && ninf)) {
      EXPECT_TRUE(std::isnan(got)) << what;
    } else if (pinf || ninf) {
      EXPECT_EQ(got, pinf ? INFINITY : -INFINITY) << what;
    } else {
      EXPECT_NEAR(got, static_cast<double>(exact), 2.0 * terms.size() * 0x1p-24 * static_cast<double>(mag)) << what;
    }
  };
  for (int64_t i = 0; i < R; ++i) {
    std::vector<long double> t(a.begin() + i * C, a.begin() + (i + 1) * C);
    check(rows[i], t, "row " + std::to_string(i));
  }
  EXPECT_LT(std::fabs(rows[5]), 1e6f);  // the 3e38 terms cancel exactly
  for (int64_t j = 0; j < C; ++j) {
    std::vector<long double> t;
    for (int64_t i = 0; i < R; ++i) t.push_back(a[i * C + j]);
    check(cols[j], t, "column " + std::to_string(j));
  }
  EXPECT_LT(std::fabs(cols[47]), 1e6f);
  // The whole tensor (the dense path) with only the cancelling terms kept non-finite-free.
  std::vector<float> b(a);
  b[9 * C + 3] = 1.0f;
  b[11 * C + 8] = 2.0f;
  b[30 * C + 9] = 3.0f;
  at = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {0, 1});
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(b, kF32, {R, C})}, {tensor(whole, kF32, {})}, &at), PK_OK)
      << last_error().message;
  check(whole[0], std::vector<long double>(b.begin(), b.end()), "whole");
  EXPECT_LT(std::fabs(whole[0]), 1e7f);
}

TEST_F(CpuReduction, SumOverSeveralAxesOfAStridedInput) {
  // Storage 0..23 viewed as [3, 2, 4] with strides [1, 3, 6]: element (i, j, k) = i + 3j + 6k.
  std::vector<double> a(24);
  for (int i = 0; i < 24; ++i) a[i] = i;
  std::vector<double> out(2, -1.0);
  pk_attrs_sum at = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {0, 2});
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(a, kF64, {3, 2, 4}, {1, 3, 6})}, {tensor(out, kF64, {2})}, &at), PK_OK)
      << last_error().message;
  // j = 0: sum over i < 3, k < 4 of i + 6k = 4 * 3 + 3 * 6 * 6 = 12 + 108 = 120; j = 1 adds 3 * 12 = 36.
  EXPECT_EQ(out[0], 120.0);
  EXPECT_EQ(out[1], 156.0);
}

TEST_F(CpuReduction, EmptyReductionsGiveTheIdentity) {
  std::vector<float> a(1, 5.0f), out(6, -7.0f);
  pk_tensor in = tensor(a, kF32, {2, 0, 3});
  pk_tensor o = tensor(out, kF32, {2, 3});
  pk_attrs_sum s = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {1});
  ASSERT_EQ(launch(PK_OP_SUM, {in}, {o}, &s), PK_OK) << last_error().message;
  for (float v : out) EXPECT_EQ(v, 0.0f);
  pk_attrs_prod p = dims_attrs(pk_attrs_prod PK_ATTRS_PROD_INIT, {1});
  ASSERT_EQ(launch(PK_OP_PROD, {in}, {o}, &p), PK_OK) << last_error().message;
  for (float v : out) EXPECT_EQ(v, 1.0f);
  pk_attrs_amax mx = dims_attrs(pk_attrs_amax PK_ATTRS_AMAX_INIT, {1});
  ASSERT_EQ(launch(PK_OP_AMAX, {in}, {o}, &mx), PK_OK) << last_error().message;
  for (float v : out) EXPECT_EQ(v, -kInf);
  pk_attrs_amin mn = dims_attrs(pk_attrs_amin PK_ATTRS_AMIN_INIT, {1});
  ASSERT_EQ(launch(PK_OP_AMIN, {in}, {o}, &mn), PK_OK) << last_error().message;
  for (float v : out) EXPECT_EQ(v, kInf);

  std::vector<int32_t> ai(1, 3), oi(2, 0);
  pk_attrs_amax mxi = dims_attrs(pk_attrs_amax PK_ATTRS_AMAX_INIT, {1});
  ASSERT_EQ(launch(PK_OP_AMAX, {tensor(ai, kI32, {2, 0})}, {tensor(oi, kI32, {2})}, &mxi), PK_OK);
  EXPECT_EQ(oi[0], std::numeric_limits<int32_t>::min());
  pk_attrs_amin mni = dims_attrs(pk_attrs_amin PK_ATTRS_AMIN_INIT, {1});
  ASSERT_EQ(launch(PK_OP_AMIN, {tensor(ai, kI32, {2, 0})}, {tensor(oi, kI32, {2})}, &mni), PK_OK);
  EXPECT_EQ(oi[1], std::numeric_limits<int32_t>::max());

  std::vector<uint8_t> ob(2, 7);
  pk_attrs_any an = dims_attrs(pk_attrs_any PK_ATTRS_ANY_INIT, {1});
  ASSERT_EQ(launch(PK_OP_ANY, {tensor(ai, kI32, {2, 0})}, {tensor(ob, kBool, {2})}, &an), PK_OK);
  EXPECT_EQ(ob[0], 0);
  EXPECT_EQ(ob[1], 0);
  pk_attrs_all al = dims_attrs(pk_attrs_all PK_ATTRS_ALL_INIT, {1});
  ASSERT_EQ(launch(PK_OP_ALL, {tensor(ai, kI32, {2, 0})}, {tensor(ob, kBool, {2})}, &al), PK_OK);
  EXPECT_EQ(ob[0], 1);
  EXPECT_EQ(ob[1], 1);
}

// The dense f32 path (>= 4096 elements, split in chunks of 65536): the extreme placed in the last, partial chunk
// and in a vector tail, a NaN in a middle chunk, and an all-zero input (whose sign the ordered loop decides).
TEST_F(CpuReduction, DenseF32AmaxAminOverLongInputs) {
  const int64_t n = 200003;
  std::vector<float> a(static_cast<size_t>(n)), out(1, 0.0f);
  for (int64_t i = 0; i < n; ++i) a[static_cast<size_t>(i)] = static_cast<float>((i * 7919) % 1000) - 500.0f;
  a[static_cast<size_t>(n - 2)] = 1234.5f;  // in the scalar tail of the last chunk
  a[70001] = -4321.25f;
  pk_attrs_amax mx = dims_attrs(pk_attrs_amax PK_ATTRS_AMAX_INIT, {0});
  pk_attrs_amin mn = dims_attrs(pk_attrs_amin PK_ATTRS_AMIN_INIT, {0});
  ASSERT_EQ(launch(PK_OP_AMAX, {tensor(a, kF32, {n})}, {tensor(out, kF32, {})}, &mx), PK_OK);
  EXPECT_EQ(out[0], 1234.5f);
  ASSERT_EQ(launch(PK_OP_AMIN, {tensor(a, kF32, {n})}, {tensor(out, kF32, {})}, &mn), PK_OK);
  EXPECT_EQ(out[0], -4321.25f);
  // A NaN in each of the four vectors of a 32-element block (the kernel checks them in pairs), in the first and
  // the last block of a chunk (the kernel sees a NaN only in the step that loads it), and two NaNs in a row.
  for (int64_t at : {int64_t{0}, int64_t{65535}, int64_t{131072 + 5}, int64_t{131072 + 13}, int64_t{131072 + 21},
                     int64_t{131072 + 29}}) {
    const float keep = a[static_cast<size_t>(at)];
    a[static_cast<size_t>(at)] = kNaN;
    ASSERT_EQ(launch(PK_OP_AMAX, {tensor(a, kF32, {n})}, {tensor(out, kF32, {})}, &mx), PK_OK);
    EXPECT_TRUE(std::isnan(out[0])) << at;
    ASSERT_EQ(launch(PK_OP_AMIN, {tensor(a, kF32, {n})}, {tensor(out, kF32, {})}, &mn), PK_OK);
    EXPECT_TRUE(std::isnan(out[0])) << at;
    a[static_cast<size_t>(at)] = keep;
  }
  a[99] = a[99 + 32] = kNaN;
  ASSERT_EQ(launch(PK_OP_AMAX, {tensor(a, kF32, {n})}, {tensor(out, kF32, {})}, &mx), PK_OK);
  EXPECT_TRUE(std::isnan(out[0]));
  std::vector<float> z(static_cast<size_t>(n), -0.0f);
  ASSERT_EQ(launch(PK_OP_AMAX, {tensor(z, kF32, {n})}, {tensor(out, kF32, {})}, &mx), PK_OK);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_TRUE(std::signbit(out[0]));
}

TEST_F(CpuReduction, AmaxAndAminPropagateNaN) {
  std::vector<float> a = {1, kNaN, 3, -2, 5, 4}, out(2, 0.0f);
  pk_attrs_amax mx = dims_attrs(pk_attrs_amax PK_ATTRS_AMAX_INIT, {1});
  ASSERT_EQ(launch(PK_OP_AMAX, {tensor(a, kF32, {2, 3})}, {tensor(out, kF32, {2})}, &mx), PK_OK);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 5.0f);
  pk_attrs_amin mn = dims_attrs(pk_attrs_amin PK_ATTRS_AMIN_INIT, {1});
  ASSERT_EQ(launch(PK_OP_AMIN, {tensor(a, kF32, {2, 3})}, {tensor(out, kF32, {2})}, &mn), PK_OK);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], -2.0f);
  // bf16 bits: 1.0 = 0x3f80, -3.0 = 0xc040, 2.5 = 0x4020; the max is 2.5.
  std::vector<uint16_t> h = {0x3f80, 0xc040, 0x4020}, ho(1, 0);
  pk_attrs_amax all = dims_attrs(pk_attrs_amax PK_ATTRS_AMAX_INIT, {0});
  ASSERT_EQ(launch(PK_OP_AMAX, {tensor(h, kBF16, {3})}, {tensor(ho, kBF16, {})}, &all), PK_OK);
  EXPECT_EQ(ho[0], 0x4020);
}

TEST_F(CpuReduction, ArgmaxAndArgminTakeTheFirstOccurrenceAndTheFirstNaN) {
  std::vector<float> a = {1, 3, 3, 2, /**/ 1, kNaN, 5, kNaN, /**/ 2, 1, 1, 7};
  std::vector<int64_t> out(3, -1);
  pk_attrs_argmax am = PK_ATTRS_ARGMAX_INIT;
  am.dim = 1;
  ASSERT_EQ(launch(PK_OP_ARGMAX, {tensor(a, kF32, {3, 4})}, {tensor(out, kI64, {3})}, &am), PK_OK)
      << last_error().message;
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 3);
  pk_attrs_argmin an = PK_ATTRS_ARGMIN_INIT;
  an.dim = 1;
  ASSERT_EQ(launch(PK_OP_ARGMIN, {tensor(a, kF32, {3, 4})}, {tensor(out, kI64, {3})}, &an), PK_OK);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 1);
  // Along axis 0 of the same data: columns (1, 1, 2), (3, NaN, 1), (3, 5, 1), (2, NaN, 7).
  std::vector<int64_t> col(4, -1);
  am.dim = 0;
  ASSERT_EQ(launch(PK_OP_ARGMAX, {tensor(a, kF32, {3, 4})}, {tensor(col, kI64, {4})}, &am), PK_OK);
  EXPECT_EQ(col, (std::vector<int64_t>{2, 1, 1, 1}));
}

TEST_F(CpuReduction, VarWithCorrectionZeroAndOne) {
  // mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5.
  std::vector<double> a = {1, 2, 3, 4}, out(1, 0.0);
  pk_attrs_var v = dims_attrs(pk_attrs_var PK_ATTRS_VAR_INIT, {0});
  v.correction = 0.0;
  ASSERT_EQ(launch(PK_OP_VAR, {tensor(a, kF64, {4})}, {tensor(out, kF64, {})}, &v), PK_OK) << last_error().message;
  EXPECT_EQ(out[0], 1.25);
  v.correction = 1.0;
  ASSERT_EQ(launch(PK_OP_VAR, {tensor(a, kF64, {4})}, {tensor(out, kF64, {})}, &v), PK_OK);
  EXPECT_DOUBLE_EQ(out[0], 5.0 / 3.0);
  // n - correction <= 0 is NaN.
  std::vector<double> one = {3.0};
  ASSERT_EQ(launch(PK_OP_VAR, {tensor(one, kF64, {1})}, {tensor(out, kF64, {})}, &v), PK_OK);
  EXPECT_TRUE(std::isnan(out[0]));
  // Complex: 1+1i and 3+3i, mean 2+2i, |dev|^2 = 2 each; var (correction 1) = 4, a real f32.
  std::vector<float> c = {1, 1, 3, 3}, cr(1, 0.0f);
  ASSERT_EQ(launch(PK_OP_VAR, {tensor(c, kC64, {2})}, {tensor(cr, kF32, {})}, &v), PK_OK) << last_error().message;
  EXPECT_EQ(cr[0], 4.0f);
}

TEST_F(CpuReduction, XorSumAnyAll) {
  std::vector<uint8_t> a = {0x0f, 0xf0, 0xff, 0x01}, out(1, 9);
  pk_attrs_xor_sum x = dims_attrs(pk_attrs_xor_sum PK_ATTRS_XOR_SUM_INIT, {0});
  ASSERT_EQ(launch(PK_OP_XOR_SUM, {tensor(a, kU8, {4})}, {tensor(out, kU8, {})}, &x), PK_OK) << last_error().message;
  EXPECT_EQ(out[0], 0x01);  // 0x0f ^ 0xf0 = 0xff; ^ 0xff = 0; ^ 0x01 = 1
  // any / all of floats: -0 counts as zero, NaN as nonzero.
  std::vector<float> f = {-0.0f, 0.0f, kNaN, 1.0f, 0.0f, -0.0f};
  std::vector<uint8_t> b(3, 9);
  pk_attrs_any an = dims_attrs(pk_attrs_any PK_ATTRS_ANY_INIT, {1});
  ASSERT_EQ(launch(PK_OP_ANY, {tensor(f, kF32, {3, 2})}, {tensor(b, kBool, {3})}, &an), PK_OK);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 1, 0}));
  pk_attrs_all al = dims_attrs(pk_attrs_all PK_ATTRS_ALL_INIT, {1});
  ASSERT_EQ(launch(PK_OP_ALL, {tensor(f, kF32, {3, 2})}, {tensor(b, kBool, {3})}, &al), PK_OK);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 1, 0}));
}

TEST_F(CpuReduction, CumsumAlongEitherAxisAndStridedOutput) {
  // [[1, 2, 3], [4, 5, 6]].
  std::vector<int32_t> a = {1, 2, 3, 4, 5, 6}, out(6, 0);
  pk_attrs_cumsum c = PK_ATTRS_CUMSUM_INIT;
  c.dim = 1;
  ASSERT_EQ(launch(PK_OP_CUMSUM, {tensor(a, kI32, {2, 3})}, {tensor(out, kI32, {2, 3})}, &c), PK_OK)
      << last_error().message;
  EXPECT_EQ(out, (std::vector<int32_t>{1, 3, 6, 4, 9, 15}));
  // Along axis 0, into a column-major output: out(i, j) lives at i + 2j.
  c.dim = 0;
  ASSERT_EQ(launch(PK_OP_CUMSUM, {tensor(a, kI32, {2, 3})}, {tensor(out, kI32, {2, 3}, {1, 2})}, &c), PK_OK);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 5, 2, 7, 3, 9}));
  // Floats: 0.1 three times, accumulated in double: 0.1f + 0.1f + 0.1f rounded once.
  std::vector<float> f = {0.1f, 0.1f, 0.1f}, fo(3, 0.0f);
  ASSERT_EQ(launch(PK_OP_CUMSUM, {tensor(f, kF32, {3})}, {tensor(fo, kF32, {3})}, &c), PK_OK);
  const double t = static_cast<double>(0.1f);
  EXPECT_EQ(fo[0], 0.1f);
  EXPECT_EQ(fo[1], static_cast<float>(2 * t));
  EXPECT_EQ(fo[2], static_cast<float>(3 * t));
}

TEST_F(CpuReduction, CumprodOfI8Wraps) {
  // 16, 16 * 16 = 256 -> 0, then 0.
  std::vector<int8_t> a = {16, 16, 3}, out(3, 1);
  pk_attrs_cumprod c = PK_ATTRS_CUMPROD_INIT;
  ASSERT_EQ(launch(PK_OP_CUMPROD, {tensor(a, kI8, {3})}, {tensor(out, kI8, {3})}, &c), PK_OK) << last_error().message;
  EXPECT_EQ(out, (std::vector<int8_t>{16, 0, 0}));
  // -3 * 50 = -150 -> 106; 106 * 2 = 212 -> -44.
  std::vector<int8_t> b = {-3, 50, 2};
  ASSERT_EQ(launch(PK_OP_CUMPROD, {tensor(b, kI8, {3})}, {tensor(out, kI8, {3})}, &c), PK_OK);
  EXPECT_EQ(out, (std::vector<int8_t>{-3, 106, -44}));
}

// Running sums and products beyond f64's range come back as the reference's exact sum and long double product do
// (hand-checked): DBL_MAX-sized terms that overflow an f64 running sum and then cancel give a finite sum; a
// product past f64's range times 0 is 0, not NaN; a complex product through the subnormal range keeps its bits
// (2^-1000 (1 + 2^-40) 2^-60 2^1000 2^60 = 1 + 2^-40).
TEST_F(CpuReduction, RunningSumsAndProductsBeyondF64Range) {
  const double big = 1.5e308, inf = HUGE_VAL, hi = 0x1p1000;
  std::vector<std::complex<double>> z = {{1, big}, {2, big}, {3, -big}}, zs(3);
  pk_attrs_cumsum cs = PK_ATTRS_CUMSUM_INIT;
  ASSERT_EQ(launch(PK_OP_CUMSUM, {tensor(z, PK_DTYPE_C128_DESC, {3})}, {tensor(zs, PK_DTYPE_C128_DESC, {3})}, &cs),
            PK_OK)
      << last_error().message;
  EXPECT_EQ(zs[1], std::complex<double>(3, inf));
  EXPECT_EQ(zs[2], std::complex<double>(6, big));
  std::vector<double> x = {hi, hi, 0, -2}, xp(4);
  pk_attrs_cumprod cp = PK_ATTRS_CUMPROD_INIT;
  ASSERT_EQ(launch(PK_OP_CUMPROD, {tensor(x, PK_DTYPE_F64_DESC, {4})}, {tensor(xp, PK_DTYPE_F64_DESC, {4})}, &cp),
            PK_OK);
  EXPECT_EQ(xp[1], inf);
  EXPECT_EQ(xp[2], 0.0);
  EXPECT_TRUE(std::signbit(xp[3]));
  std::vector<std::complex<double>> w = {{0x1p-1000 * (1 + 0x1p-40), 0}, {0x1p-60, 0}, {0x1p1000, 0}, {0x1p60, 0}},
                                    wp(4);
  ASSERT_EQ(launch(PK_OP_CUMPROD, {tensor(w, PK_DTYPE_C128_DESC, {4})}, {tensor(wp, PK_DTYPE_C128_DESC, {4})}, &cp),
            PK_OK);
  EXPECT_EQ(wp[3].real(), 1 + 0x1p-40);
}

TEST_F(CpuReduction, CummaxCumminKeepTheLastOccurrenceAndNaNSticks) {
  std::vector<float> a = {1, 3, 2, 3, kNaN, 5}, v(6, 0.0f);
  std::vector<int64_t> idx(6, -1);
  pk_attrs_cummax cm = PK_ATTRS_CUMMAX_INIT;
  ASSERT_EQ(launch(PK_OP_CUMMAX, {tensor(a, kF32, {6})}, {tensor(v, kF32, {6}), tensor(idx, kI64, {6})}, &cm), PK_OK)
      << last_error().message;
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 3.0f);
  EXPECT_EQ(v[2], 3.0f);
  EXPECT_EQ(v[3], 3.0f);
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_TRUE(std::isnan(v[5]));
  EXPECT_EQ(idx, (std::vector<int64_t>{0, 1, 1, 3, 4, 4}));
  std::vector<int32_t> b = {3, 1, 1, 2}, bv(4, 0);
  std::vector<int64_t> bi(4, -1);
  pk_attrs_cummin cn = PK_ATTRS_CUMMIN_INIT;
  ASSERT_EQ(launch(PK_OP_CUMMIN, {tensor(b, kI32, {4})}, {tensor(bv, kI32, {4}), tensor(bi, kI64, {4})}, &cn), PK_OK);
  EXPECT_EQ(bv, (std::vector<int32_t>{3, 1, 1, 1}));
  EXPECT_EQ(bi, (std::vector<int64_t>{0, 1, 2, 2}));
}

TEST_F(CpuReduction, LogcumsumexpDoesNotOverflow) {
  std::vector<double> a = {1000.0, 1000.0, -std::numeric_limits<double>::infinity()}, out(3, 0.0);
  pk_attrs_logcumsumexp c = PK_ATTRS_LOGCUMSUMEXP_INIT;
  ASSERT_EQ(launch(PK_OP_LOGCUMSUMEXP, {tensor(a, kF64, {3})}, {tensor(out, kF64, {3})}, &c), PK_OK)
      << last_error().message;
  EXPECT_EQ(out[0], 1000.0);
  EXPECT_NEAR(out[1], 1000.0 + std::log(2.0), 1e-12);
  EXPECT_NEAR(out[2], 1000.0 + std::log(2.0), 1e-12);
  std::vector<float> f = {-kInf, 0.0f, 0.0f}, fo(3, 1.0f);
  ASSERT_EQ(launch(PK_OP_LOGCUMSUMEXP, {tensor(f, kF32, {3})}, {tensor(fo, kF32, {3})}, &c), PK_OK);
  EXPECT_EQ(fo[0], -kInf);
  EXPECT_EQ(fo[1], 0.0f);
  EXPECT_EQ(fo[2], static_cast<float>(std::log(2.0)));
}

TEST_F(CpuReduction, DenseF32SumOfEverythingStaysWithinItsBlockBound) {
  // The dense whole-tensor path (blocks of 1024 floats summed in f32 lanes, blocks in double): its error is at most
  // 32 * 2^-24 * sum|a| plus one rounding, far below what plain f32 accumulation of 2^20 terms can reach (and the
  // table's 2 n 2^-24 sum|a|). Mixed signs and magnitudes, a length that leaves a tail; long double reference.
  const int64_t n = (int64_t{1} << 20) + 37;
  std::vector<float> a(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    a[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * std::pow(10.0, (i % 7) - 3));
  std::vector<float> out = {0.0f};
  pk_attrs_sum s = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {0});
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(a, kF32, {n})}, {tensor(out, kF32, {})}, &s), PK_OK) << last_error().message;
  long double ref = 0, mag = 0;
  for (float v : a) {
    ref += v;
    mag += std::fabs(v);
  }
  const double bound = std::fabs(static_cast<double>(ref)) * 6e-8 + 32 * 6e-8 * static_cast<double>(mag);
  EXPECT_NEAR(out[0], static_cast<double>(ref), bound);
}

TEST_F(CpuReduction, F32SumMatchesADoubleLoopWithinTheBound) {
  // 1000 x 37 values of mixed magnitude, reduced along the long axis; the reference sums in long double.
  const int rows = 37, n = 1000;
  std::vector<float> a(static_cast<size_t>(rows) * n);
  for (int i = 0; i < rows * n; ++i) a[i] = static_cast<float>(std::sin(0.37 * i) * std::pow(10.0, (i % 7) - 3));
  std::vector<float> out(rows, 0.0f);
  pk_attrs_sum s = dims_attrs(pk_attrs_sum PK_ATTRS_SUM_INIT, {0});
  // View the storage as [n, rows] with strides [rows, 1] so the reduction runs across rows of memory.
  ASSERT_EQ(launch(PK_OP_SUM, {tensor(a, kF32, {n, rows})}, {tensor(out, kF32, {rows})}, &s), PK_OK);
  for (int j = 0; j < rows; ++j) {
    long double ref = 0, mag = 0;
    for (int i = 0; i < n; ++i) {
      ref += a[static_cast<size_t>(i) * rows + j];
      mag += std::fabs(a[static_cast<size_t>(i) * rows + j]);
    }
    // One f32 rounding of the result plus n * eps(f32) * sum |a| as the reduction bound.
    const double bound = std::fabs(static_cast<double>(ref)) * 6e-8 + n * 6e-8 * static_cast<double>(mag);
    EXPECT_NEAR(out[j], static_cast<double>(ref), bound) << j;
  }
}

}  // namespace
