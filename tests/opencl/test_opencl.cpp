// OpenCL backend through the public host API, with the CPU backend loaded in the same runtime (and process).
// Every expected value is computed here independently: double-precision loops, hand-derived bit patterns for
// the narrow float formats. Tests skip when the machine has no OpenCL platform.
// This file: devices, elementwise math and conversions, reductions, matmul, streams and events, fallback,
// complex arithmetic, fusion and the program cache. test_opencl_data.cpp and test_opencl_fft.cpp hold the rest.
#include <limits>

#include "opencl_fixture.hpp"

using namespace pk_opencl_test;  // NOLINT: the fixture and its helpers, in every test file

namespace {

TEST_F(OpenCL, DeviceAndCapabilities) {
  pk_device_props p;
  PK_STRUCT_INIT(p);
  ASSERT_EQ(pk_device_get_props(dev_, &p), PK_OK);
  EXPECT_EQ(p.device_type, PK_DEVICE_OPENCL);
  EXPECT_GT(std::strlen(p.name), 0u);
  EXPECT_TRUE(p.features & PK_DEVICE_FEATURE_ASYNC);
  EXPECT_TRUE(supported(PK_OP_ADD, {kF32, kF32}, {kF32}));
  EXPECT_TRUE(supported(PK_OP_MATMUL, {kBF16, kBF16}, {kBF16}));
  std::string why;
  // f16 is only offered with cl_khr_fp16 (PoCL's CPU device has none): the query says so, truthfully.
  if (!(p.dtype_mask & (1u << PK_DTYPE_F16))) {
    EXPECT_FALSE(supported(PK_OP_ADD, {kF16, kF16}, {kF16}, &why));
    EXPECT_NE(why.find("cl_khr_fp16"), std::string::npos) << why;
  }
  // Complex dtypes are generated (in double on the device), pow, the extremes and the FFTs included.
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  EXPECT_TRUE(supported(PK_OP_POLAR, {kF32, kF32}, {c64}));
  EXPECT_TRUE(supported(PK_OP_MUL, {c128, c128}, {c128}));
  EXPECT_TRUE(supported(PK_OP_POW, {c128, c128}, {c128}));
  EXPECT_TRUE(supported(PK_OP_MAXIMUM_VALUE, {}, {c64}));
  EXPECT_TRUE(supported(PK_OP_FFT_C2C, {c64}, {c64}));
  EXPECT_TRUE(supported(PK_OP_FFT_R2C, {kF64}, {c128}));
  EXPECT_TRUE(supported(PK_OP_FFT_C2R, {c128}, {kF64}));
  // An FFT of an integer dtype is no primitive of the table: declined with a reason.
  EXPECT_FALSE(supported(PK_OP_FFT_R2C, {kI32}, {c64}, &why));
  EXPECT_NE(why.find("fft_r2c"), std::string::npos) << why;
}

TEST_F(OpenCL, AddMulAgainstHostAndCpu) {
  const size_t n = 1000;  // not a multiple of the vector width: exercises the tail
  std::vector<float> a = random_floats(n, 1), b = random_floats(n, 2);
  pk_tensor ta = device(a, kF32, {10, 100}), tb = device(b, kF32, {10, 100});
  pk_tensor tsum = empty<float>(n, kF32, {10, 100}), tprod = empty<float>(n, kF32, {10, 100});
  ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {tsum}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_MUL, {ta, tb}, {tprod}), PK_OK) << last_error().message;
  std::vector<float> sum = download<float>(tsum, n), prod = download<float>(tprod, n);
  for (size_t i = 0; i < n; ++i) {
    // Correctly rounded: the double result rounded once to float.
    ASSERT_EQ(sum[i], static_cast<float>(static_cast<double>(a[i]) + b[i])) << i;
    ASSERT_EQ(prod[i], static_cast<float>(static_cast<double>(a[i]) * b[i])) << i;
  }
  expect_native(PK_OP_ADD);
  std::vector<std::vector<float>> in{a, b};
  std::vector<float> cpu(n);
  if (run_cpu(PK_OP_ADD, in, cpu, {10, 100})) {
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(cpu[i], sum[i]) << i;
  }
}

// Hurwitz zeta with a negative non-integer q (s an integer), against hand values: zeta(2, -2.5) = 4/25 + 4/9 + 4 +
// pi^2/2; zeta(3, -1.5) = -(8/27 + 8) + 7 zeta(3); for q = -(93,500,000,000,000 + 1/2), pi^2 - 1/(m + 1/2) with
// m = 93,500,000,000,001. The kernel used to step one unit at a time from q to 9 (weeks for the last one).
TEST_F(OpenCL, HurwitzZetaOfNegativeQIsBoundedAndRight) {
  const pk_dtype f64 = PK_DTYPE_F64_DESC;
  const double pi2 = 9.869604401089358, zeta3 = 1.2020569031595943, m = 93500000000001.0;
  const std::vector<double> s = {2, 3, 2}, q = {-2.5, -1.5, -93500000000000.5};
  const double want[3] = {0.16 + 4.0 / 9 + 4 + pi2 / 2, -(8.0 / 27 + 8) + 7 * zeta3, pi2 - 1 / (m + 0.5)};
  pk_tensor ts = device(s, f64, {3}), tq = device(q, f64, {3}), out = empty<double>(3, f64, {3});
  const pk_status st = launch(PK_OP_ZETA, {ts, tq}, {out});
  if (st == PK_ERROR_FALLBACK_FORBIDDEN || st == PK_UNIMPLEMENTED) GTEST_SKIP() << "no f64 on this OpenCL device";
  ASSERT_EQ(st, PK_OK) << last_error().message;
  const std::vector<double> y = download<double>(out, 3);
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(y[i], want[i], 4e-15 * std::fabs(want[i])) << "zeta(" << s[i] << ", " << q[i] << ")";
}

// f64 exp, cosh and sinh up to their overflow thresholds (PoCL's builtins overflowed one input early and gave NaN
// there). Expected bit patterns from 300-bit mpmath, rounded once: the largest finite results stay finite and
// within 2 ulps, a value beyond x = 709 (the guarded range) too, and inputs past the thresholds give ±inf.
TEST_F(OpenCL, ExpCoshSinhF64NearOverflowStayFinite) {
  const pk_dtype f64 = PK_DTYPE_F64_DESC;
  struct Row {
    uint32_t op;
    uint64_t x, want;
  };
  const Row rows[] = {
      {PK_OP_EXP, 0x40862e42fefa39eeull, 0x7feffffffffffb2aull},   // exp(709.78271289338386)
      {PK_OP_EXP, 0x40862e42fefa39efull, 0x7fefffffffffff2aull},   // the largest finite result
      {PK_OP_EXP, 0x408631c000000000ull, 0x7ff0000000000000ull},   // exp(710.21875) = inf
      {PK_OP_COSH, 0x408633ce8fb9f87cull, 0x7feffffffffff93bull},  // cosh(710.47586007394375)
      {PK_OP_COSH, 0x408633ce8fb9f87dull, 0x7feffffffffffd3bull},
      {PK_OP_SINH, 0xc08633ce8fb9f87cull, 0xffeffffffffff93bull},  // sinh(-710.47586007394375)
      {PK_OP_SINH, 0xc086340000000000ull, 0xfff0000000000000ull},  // sinh(-710.5) = -inf
  };
  for (const Row &r : rows) {
    double x;
    std::memcpy(&x, &r.x, 8);
    const std::vector<double> host = {x};  // alive until the download below has synchronized the stream
    pk_tensor in = device(host, f64, {1}), out = empty<double>(1, f64, {1});
    const pk_status st = launch(r.op, {in}, {out});
    if (st == PK_ERROR_FALLBACK_FORBIDDEN || st == PK_UNIMPLEMENTED) GTEST_SKIP() << "no f64 on this OpenCL device";
    ASSERT_EQ(st, PK_OK) << last_error().message;
    const double y = download<double>(out, 1)[0];
    uint64_t got;
    std::memcpy(&got, &y, 8);
    const int64_t ulps = static_cast<int64_t>(got) - static_cast<int64_t>(r.want);
    EXPECT_LE(std::llabs(ulps), 2) << "op " << r.op << "(" << x << ") = " << y << std::hex << " [0x" << got
                                   << "], want 0x" << r.want;
  }
}

// zeta(2, q) = 1/q + 1/(2 q^2) + ...: 5.562684646268004e-309 for q = DBL_MAX (subnormal; mpmath), though every term
// (q + k)^-2 underflows to 0 (the sum stopped there and returned 0).
TEST_F(OpenCL, HurwitzZetaOfHugeQKeepsItsIntegralTail) {
  const pk_dtype f64 = PK_DTYPE_F64_DESC;
  const std::vector<double> s = {2}, q = {std::numeric_limits<double>::max()};
  pk_tensor ts = device(s, f64, {1}), tq = device(q, f64, {1}), out = empty<double>(1, f64, {1});
  const pk_status st = launch(PK_OP_ZETA, {ts, tq}, {out});
  if (st == PK_ERROR_FALLBACK_FORBIDDEN || st == PK_UNIMPLEMENTED) GTEST_SKIP() << "no f64 on this OpenCL device";
  ASSERT_EQ(st, PK_OK) << last_error().message;
  EXPECT_NEAR(download<double>(out, 1)[0], 5.562684646268004e-309, 2 * std::numeric_limits<double>::denorm_min());
}

// Outputs of 16 MiB and more are stored past the cache when 32-byte aligned (pk_ew_vec_nt); one at a 4-byte offset
// takes the plain vector kernel. Both give the correctly rounded result in every element, the partial tail included.
TEST_F(OpenCL, LargeOutputsStoredPastTheCacheAreExact) {
  const size_t n = (size_t{16} << 20) / 4 + 37;
  const int64_t len = static_cast<int64_t>(n);
  std::vector<float> a = random_floats(n, 21), b = random_floats(n, 22);
  pk_tensor ta = device(a, kF32, {len}), tb = device(b, kF32, {len});
  pk_tensor sum = empty<float>(n, kF32, {len});
  pk_tensor prod = device(std::vector<float>(), kF32, {len}, {}, 4, (n + 1) * 4);
  ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {sum}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_MUL, {ta, tb}, {prod}), PK_OK) << last_error().message;
  std::vector<float> rs = download<float>(sum, n), rp = download<float>(prod, n + 1);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(rs[i], static_cast<float>(static_cast<double>(a[i]) + b[i])) << i;
    ASSERT_EQ(rp[i + 1], static_cast<float>(static_cast<double>(a[i]) * b[i])) << i;
  }
  // f64: 8 elements per vector, the same rule.
  const size_t m = (size_t{16} << 20) / 8 + 5;
  std::vector<double> x(m), y(m);
  std::mt19937_64 g(23);
  std::uniform_real_distribution<double> d(-1e3, 1e3);
  for (size_t i = 0; i < m; ++i) x[i] = d(g), y[i] = d(g);
  pk_tensor tx = device(x, kF64, {int64_t(m)}), ty = device(y, kF64, {int64_t(m)});
  pk_tensor diff = empty<double>(m, kF64, {int64_t(m)});
  ASSERT_EQ(launch(PK_OP_SUB, {tx, ty}, {diff}), PK_OK) << last_error().message;
  std::vector<double> rd = download<double>(diff, m);
  for (size_t i = 0; i < m; ++i) ASSERT_EQ(rd[i], x[i] - y[i]) << i;
  expect_native(PK_OP_ADD);
}

TEST_F(OpenCL, IntegerDivisionAndWrap) {
  std::vector<int32_t> a{7, -7, INT32_MIN, 5, INT32_MAX}, b{2, 2, -1, 0, 1};
  pk_tensor ta = device(a, kI32, {5}), tb = device(b, kI32, {5});
  pk_tensor q = empty<int32_t>(5, kI32, {5}), s = empty<int32_t>(5, kI32, {5});
  ASSERT_EQ(launch(PK_OP_DIV, {ta, tb}, {q}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {s}), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(q, 5), (std::vector<int32_t>{3, -3, INT32_MIN, 0, INT32_MAX}));
  EXPECT_EQ(download<int32_t>(s, 5), (std::vector<int32_t>{9, -5, INT32_MAX, 5, INT32_MIN}));
}

TEST_F(OpenCL, ExpWithinUlpBound) {
  std::vector<float> a = random_floats(4099, 3, -80.f, 80.f);
  a[0] = 0.f;
  a[1] = -INFINITY;
  a[2] = INFINITY;
  a[3] = NAN;
  pk_tensor ta = device(a, kF32, {4099}), out = empty<float>(a.size(), kF32, {4099});
  ASSERT_EQ(launch(PK_OP_EXP, {ta}, {out}), PK_OK) << last_error().message;
  std::vector<float> r = download<float>(out, a.size());
  EXPECT_EQ(r[0], 1.f);
  EXPECT_EQ(r[1], 0.f);
  EXPECT_EQ(r[2], INFINITY);
  EXPECT_TRUE(std::isnan(r[3]));
  int64_t worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, ulp_distance(r[i], static_cast<float>(std::exp(double(a[i])))));
  EXPECT_LE(worst, 3) << "the op table's limit for exp is 3 ulp";
}

TEST_F(OpenCL, WhereSelects) {
  std::vector<uint8_t> p{1, 0, 1, 0, 0, 1, 1};
  std::vector<float> a{1, 2, 3, 4, 5, 6, 7}, b{-1, -2, -3, -4, -5, -6, -7};
  pk_tensor tp = device(p, kBool, {7}), ta = device(a, kF32, {7}), tb = device(b, kF32, {7});
  pk_tensor out = empty<float>(7, kF32, {7});
  ASSERT_EQ(launch(PK_OP_WHERE, {tp, ta, tb}, {out}), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(out, 7), (std::vector<float>{1, -2, 3, -4, -5, 6, 7}));
  expect_native(PK_OP_WHERE);
}

TEST_F(OpenCL, ConvertF32ToBf16RoundsToNearestEven) {
  // Hand-derived: bf16 keeps the top 16 bits of an f32; the dropped half decides, ties go to the even pattern.
  const std::vector<std::pair<uint32_t, uint16_t>> cases = {
      {0x3f800000u, 0x3f80},  // 1.0
      {0x3f808000u, 0x3f80},  // 1 + 2^-8: a tie, 0x3f80 is even -> stays
      {0x3f818000u, 0x3f82},  // 1 + 3 * 2^-8: a tie, rounds up to the even 0x3f82
      {0x3f808001u, 0x3f81},  // just above the tie -> up
      {0x3f807fffu, 0x3f80},  // just below the tie -> down
      {0xbf818000u, 0xbf82},  // negative tie
      {0x7f7fffffu, 0x7f80},  // FLT_MAX rounds past the largest bf16 -> +inf
      {0x7f800000u, 0x7f80},  // +inf
      {0xff800000u, 0xff80},  // -inf
      {0x80000000u, 0x8000},  // -0
      {0x00000001u, 0x0000},  // smallest subnormal -> +0
      {0x00018000u, 0x0002},  // subnormal tie -> even
      {0x7fc00000u, 0x7fc0},  // NaN stays NaN
  };
  std::vector<float> in;
  for (auto &c : cases) in.push_back(bits_f32(c.first));
  const int64_t n = static_cast<int64_t>(in.size());
  pk_tensor ti = device(in, kF32, {n}), out = empty<uint16_t>(in.size(), kBF16, {n});
  pk_attrs_convert_element_type at = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  at.dtype = PK_DTYPE_BF16;
  ASSERT_EQ(launch(PK_OP_CONVERT_ELEMENT_TYPE, {ti}, {out}, &at), PK_OK) << last_error().message;
  std::vector<uint16_t> r = download<uint16_t>(out, in.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    if ((cases[i].second & 0x7f80) == 0x7f80 && (cases[i].second & 0x7f)) {
      EXPECT_TRUE((r[i] & 0x7f80) == 0x7f80 && (r[i] & 0x7f)) << "case " << i << ": NaN expected";
    } else {
      EXPECT_EQ(r[i], cases[i].second) << "case " << i << " input 0x" << std::hex << cases[i].first;
    }
  }
  // And back: bf16 -> f32 is exact.
  pk_tensor back = empty<float>(in.size(), kF32, {n});
  at.dtype = PK_DTYPE_F32;
  ASSERT_EQ(launch(PK_OP_CONVERT_ELEMENT_TYPE, {out}, {back}, &at), PK_OK) << last_error().message;
  std::vector<float> rb = download<float>(back, in.size());
  EXPECT_EQ(f32_bits(rb[2]), 0x3f820000u);
  EXPECT_EQ(f32_bits(rb[9]), 0x80000000u);
}

TEST_F(OpenCL, ConvertToFp8E4m3Saturates) {
  // e4m3fn: bias 7, 3 mantissa bits, no inf, largest finite 448 = 0x7e, NaN = 0x7f.
  std::vector<float> in{1.0f, 448.0f, 464.0f, 1000.0f, INFINITY, -INFINITY, NAN, 0.0625f, 1.0625f, 1.1875f, -2.5f};
  std::vector<uint8_t> want{0x38, 0x7e, 0x7e, 0x7e, 0x7e, 0xfe, 0x7f, 0x18, 0x38, 0x3a, 0xc2};
  // 464 lies halfway between 448 and 480 (which e4m3fn lacks): saturates. 1.0625 = 1 + 2^-4: a tie -> even 1.0.
  // 1.1875 = 1 + 3 * 2^-4: a tie -> 1.25 (0x3a). 0.0625 = 2^-4 -> exponent 3 -> 0x18.
  const int64_t n = static_cast<int64_t>(in.size());
  pk_tensor ti = device(in, kF32, {n}), out = empty<uint8_t>(in.size(), kE4M3, {n});
  pk_attrs_convert_element_type at = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  at.dtype = PK_DTYPE_F8E4M3FN;
  ASSERT_EQ(launch(PK_OP_CONVERT_ELEMENT_TYPE, {ti}, {out}, &at), PK_OK) << last_error().message;
  std::vector<uint8_t> r = download<uint8_t>(out, in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) {
      EXPECT_EQ(r[i] & 0x7f, 0x7f) << i;
    } else {
      EXPECT_EQ(r[i], want[i]) << "input " << in[i];
    }
  }
}

TEST_F(OpenCL, SumOverAxesAndAll) {
  const int64_t A = 37, B = 129, C = 5;
  std::vector<float> x = random_floats(static_cast<size_t>(A * B * C), 4, -1.f, 1.f);
  pk_tensor tx = device(x, kF32, {A, B, C});
  // Over axis 1: 185 outputs, 129 elements each (the one-work-item-per-output kernel).
  pk_attrs_sum at = PK_ATTRS_SUM_INIT;
  at.num_dims = 1;
  at.dims[0] = 1;
  pk_tensor o1 = empty<float>(static_cast<size_t>(A * C), kF32, {A, C});
  ASSERT_EQ(launch(PK_OP_SUM, {tx}, {o1}, &at), PK_OK) << last_error().message;
  std::vector<float> r1 = download<float>(o1, static_cast<size_t>(A * C));
  for (int64_t i = 0; i < A; ++i) {
    for (int64_t k = 0; k < C; ++k) {
      double s = 0, sa = 0;
      for (int64_t j = 0; j < B; ++j) {
        s += x[(i * B + j) * C + k];
        sa += std::fabs(x[(i * B + j) * C + k]);
      }
      EXPECT_NEAR(r1[i * C + k], s, B * 1.2e-7 * sa + 1e-30) << i << "," << k;
    }
  }
  // Over everything of a larger tensor: the two-stage kernels.
  const size_t big = 1 << 20;
  std::vector<float> y = random_floats(big, 5, 0.f, 1.f);
  pk_tensor ty = device(y, kF32, {1024, 1024});
  at.num_dims = 2;
  at.dims[0] = 0;
  at.dims[1] = 1;
  pk_tensor o2 = empty<float>(1, kF32, {});
  ASSERT_EQ(launch(PK_OP_SUM, {ty}, {o2}, &at), PK_OK) << last_error().message;
  double s = 0;
  for (float v : y) s += v;
  EXPECT_NEAR(download<float>(o2, 1)[0], s, s * 1e-5);
  // amax with a NaN propagates it.
  y[12345] = NAN;
  pk_tensor tz = device(y, kF32, {1024, 1024});
  pk_attrs_amax am = PK_ATTRS_AMAX_INIT;
  am.num_dims = 1;
  am.dims[0] = 1;
  pk_tensor o3 = empty<float>(1024, kF32, {1024});
  ASSERT_EQ(launch(PK_OP_AMAX, {tz}, {o3}, &am), PK_OK) << last_error().message;
  std::vector<float> r3 = download<float>(o3, 1024);
  for (int64_t i = 0; i < 1024; ++i) {
    float m = -INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < 1024; ++j) {
      nan = nan || std::isnan(y[i * 1024 + j]);
      m = std::max(m, y[i * 1024 + j]);
    }
    if (nan) {
      EXPECT_TRUE(std::isnan(r3[i])) << i;
    } else {
      EXPECT_EQ(r3[i], m) << i;
    }
  }
  expect_native(PK_OP_SUM);
  expect_native(PK_OP_AMAX);
}

TEST_F(OpenCL, ArgmaxArgminFirstWinsAndNaN) {
  const std::vector<float> a{1, 3, 3, 2, 5, NAN, 7, NAN, -1, -4, -4, -2};
  pk_tensor ta = device(a, kF32, {3, 4});
  pk_attrs_argmax am = PK_ATTRS_ARGMAX_INIT;
  am.dim = 1;
  pk_tensor o1 = empty<int64_t>(3, pk_dtype PK_DTYPE_I64_DESC, {3});
  ASSERT_EQ(launch(PK_OP_ARGMAX, {ta}, {o1}, &am), PK_OK) << last_error().message;
  EXPECT_EQ(download<int64_t>(o1, 3), (std::vector<int64_t>{1, 1, 0}));  // tie: the first; NaN wins
  pk_attrs_argmin an = PK_ATTRS_ARGMIN_INIT;
  an.dim = 1;
  pk_tensor o2 = empty<int64_t>(3, pk_dtype PK_DTYPE_I64_DESC, {3});
  ASSERT_EQ(launch(PK_OP_ARGMIN, {ta}, {o2}, &an), PK_OK) << last_error().message;
  EXPECT_EQ(download<int64_t>(o2, 3), (std::vector<int64_t>{0, 1, 1}));
  am.dim = 0;
  pk_tensor o3 = empty<int64_t>(4, pk_dtype PK_DTYPE_I64_DESC, {4});
  ASSERT_EQ(launch(PK_OP_ARGMAX, {ta}, {o3}, &am), PK_OK) << last_error().message;
  EXPECT_EQ(download<int64_t>(o3, 4), (std::vector<int64_t>{1, 1, 1, 1}));
  expect_native(PK_OP_ARGMAX);
}

TEST_F(OpenCL, MatmulTileUnaligned) {
  const int64_t M = 67, K = 45, N = 33;
  std::vector<float> a = random_floats(static_cast<size_t>(M * K), 6), b = random_floats(static_cast<size_t>(K * N), 7);
  pk_tensor ta = device(a, kF32, {M, K}), tb = device(b, kF32, {K, N});
  pk_tensor tc = empty<float>(static_cast<size_t>(M * N), kF32, {M, N});
  ASSERT_EQ(launch(PK_OP_MATMUL, {ta, tb}, {tc}), PK_OK) << last_error().message;
  std::vector<float> c = download<float>(tc, static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double s = 0, sa = 0;
      for (int64_t k = 0; k < K; ++k) {
        s += double(a[i * K + k]) * b[k * N + j];
        sa += std::fabs(double(a[i * K + k]) * b[k * N + j]);
      }
      ASSERT_NEAR(c[i * N + j], s, K * 1.2e-7 * sa) << i << "," << j;
    }
  }
  expect_native(PK_OP_MATMUL);
}

TEST_F(OpenCL, BatchMatmulWithTransposedOperand) {
  // b is stored as [B, N, K] and viewed as [B, K, N] through strides.
  const int64_t Bt = 3, M = 5, K = 40, N = 37;
  std::vector<double> a(static_cast<size_t>(Bt * M * K)), bt(static_cast<size_t>(Bt * N * K));
  std::mt19937 g(8);
  std::uniform_real_distribution<double> d(-1, 1);
  for (auto &x : a) x = d(g);
  for (auto &x : bt) x = d(g);
  pk_tensor ta = device(a, kF64, {Bt, M, K}), tb = device(bt, kF64, {Bt, K, N}, {N * K, 1, K});
  pk_tensor tc = empty<double>(static_cast<size_t>(Bt * M * N), kF64, {Bt, M, N});
  ASSERT_EQ(launch(PK_OP_BATCH_MATMUL, {ta, tb}, {tc}), PK_OK) << last_error().message;
  std::vector<double> c = download<double>(tc, static_cast<size_t>(Bt * M * N));
  for (int64_t p = 0; p < Bt; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        long double s = 0;
        for (int64_t k = 0; k < K; ++k) s += (long double)a[(p * M + i) * K + k] * bt[(p * N + j) * K + k];
        ASSERT_NEAR(c[(p * M + i) * N + j], static_cast<double>(s), 1e-13) << p << "," << i << "," << j;
      }
}

TEST_F(OpenCL, StridedOffsetAndBroadcastInputs) {
  // x: a 4x6 buffer viewed transposed (6x4); y: an offset view; z: a row broadcast by a zero stride.
  std::vector<float> x(24), y(30), z(4);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>(i);
  for (int i = 0; i < 30; ++i) y[i] = 100.f + i;
  for (int i = 0; i < 4; ++i) z[i] = 1000.f * (i + 1);
  pk_tensor tx = device(x, kF32, {6, 4}, {1, 6});
  pk_tensor ty = device(y, kF32, {6, 4}, {}, 6 * sizeof(float));
  pk_tensor tz = device(z, kF32, {6, 4}, {0, 1});
  pk_tensor t1 = empty<float>(24, kF32, {6, 4}), t2 = empty<float>(24, kF32, {6, 4});
  ASSERT_EQ(launch(PK_OP_ADD, {tx, ty}, {t1}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_ADD, {t1, tz}, {t2}), PK_OK) << last_error().message;
  std::vector<float> r = download<float>(t2, 24);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(r[i * 4 + j], x[j * 6 + i] + y[6 + i * 4 + j] + z[j]) << i << "," << j;
  expect_native(PK_OP_ADD);
}

TEST_F(OpenCL, StreamsOrderedByEvents) {
  pk_stream_t s2 = nullptr;
  ASSERT_EQ(pk_stream_create(dev_, &s2), PK_OK);
  pk_event_t ev = nullptr;
  ASSERT_EQ(pk_event_create(dev_, &ev), PK_OK);
  const size_t n = 1 << 20;
  std::vector<float> a(n, 1.5f);
  pk_tensor ta = device(a, kF32, {static_cast<int64_t>(n)});
  pk_tensor tb = empty<float>(n, kF32, {static_cast<int64_t>(n)}),
            tc = empty<float>(n, kF32, {static_cast<int64_t>(n)});
  ASSERT_EQ(pk_stream_synchronize(stream_), PK_OK);
  // Stream 1: b = a + a; stream 2 waits for it, then c = b * b. Only stream 2 is synchronized.
  ASSERT_EQ(launch(PK_OP_ADD, {ta, ta}, {tb}), PK_OK);
  ASSERT_EQ(pk_event_record(ev, stream_), PK_OK) << last_error().message;
  ASSERT_EQ(pk_stream_wait_event(s2, ev), PK_OK) << last_error().message;
  std::vector<pk_tensor> in{tb, tb}, out{tc};
  ASSERT_EQ(pk_launch(s2, PK_OP_MUL, in.data(), 2, out.data(), 1, nullptr), PK_OK) << last_error().message;
  std::vector<float> r(n);
  pk_buffer_t bc = nullptr;
  for (pk_buffer_t c : buffers_)
    if (pk_buffer_data(c) == tc.data) bc = c;
  ASSERT_EQ(pk_copy_buffer_to_host(s2, r.data(), bc, 0, n * 4), PK_OK);
  ASSERT_EQ(pk_stream_synchronize(s2), PK_OK) << last_error().message;
  EXPECT_EQ(pk_event_query(ev), PK_OK);
  EXPECT_EQ(pk_event_synchronize(ev), PK_OK);
  for (size_t i = 0; i < n; i += 4097) ASSERT_EQ(r[i], 9.0f) << i;
  pk_event_destroy(ev);
  pk_stream_destroy(s2);
}

TEST_F(OpenCL, TooLargeAllocationFailsClearly) {
  pk_device_props p;
  PK_STRUCT_INIT(p);
  ASSERT_EQ(pk_device_get_props(dev_, &p), PK_OK);
  ASSERT_GT(p.max_allocation_bytes, 0u);
  pk_buffer_t b = nullptr;
  EXPECT_EQ(pk_buffer_create(dev_, p.max_allocation_bytes + 1, &b), PK_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(b, nullptr);
  const std::string msg = last_error().message;
  EXPECT_NE(msg.find(std::to_string(p.max_allocation_bytes + 1)), std::string::npos) << msg;
  // The stream is still usable.
  std::vector<float> a{1, 2};
  pk_tensor ta = device(a, kF32, {2}), tb = empty<float>(2, kF32, {2});
  ASSERT_EQ(launch(PK_OP_NEG, {ta}, {tb}), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(tb, 2), (std::vector<float>{-1, -2}));
}

TEST_F(OpenCL, UnsupportedOpFallsBackOrSaysSo) {
  pk_device_props p;
  PK_STRUCT_INIT(p);
  ASSERT_EQ(pk_device_get_props(dev_, &p), PK_OK);
  if (p.dtype_mask & (1u << PK_DTYPE_F16)) GTEST_SKIP() << "the device computes in f16";
  // f16 has no OpenCL kernel here: the runtime either runs it on the CPU backend or reports that neither can.
  std::vector<uint16_t> a{0x3c00, 0x4000}, b{0x4000, 0x4000};  // 1 + 2 = 3 (0x4200), 2 + 2 = 4 (0x4400)
  pk_tensor ta = device(a, kF16, {2}), tb = device(b, kF16, {2}), out = empty<uint16_t>(2, kF16, {2});
  pk_status st = launch(PK_OP_ADD, {ta, tb}, {out});
  if (st == PK_OK) {
    uint64_t n = 0;
    pk_runtime_fallback_count(rt_, PK_OP_ADD, &n, nullptr);
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(download<uint16_t>(out, 2), (std::vector<uint16_t>{0x4200, 0x4400}));
  } else {
    EXPECT_EQ(st, PK_UNIMPLEMENTED);
    EXPECT_NE(std::string(last_error().message).find("add"), std::string::npos);
  }
}

// Complex values are (real, imaginary) pairs of f32 (c64) or f64 (c128). Every expected value below is worked
// out by hand.
TEST_F(OpenCL, ComplexArithmeticKnownValues) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  // (1+2i)(3+4i) = 3 + 4i + 6i - 8 = -5+10i; (-5+10i)/(3+4i) = (-5+10i)(3-4i)/25 = (25+50i)/25 = 1+2i;
  // (inf + NaN i)(1+0i) is an infinity (C11 Annex G); 1/(2i) = -0.5i.
  const double inf = INFINITY, nan = NAN;
  std::vector<double> a{1, 2, -5, 10, inf, nan, 1, 0}, b{3, 4, 3, 4, 1, 0, 0, 2};
  std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
  for (int pass = 0; pass < 2; ++pass) {
    const bool wide = pass == 1;
    const pk_dtype dt = wide ? c128 : c64;
    pk_tensor ta = wide ? device(a, dt, {4}) : device(af, dt, {4});
    pk_tensor tb = wide ? device(b, dt, {4}) : device(bf, dt, {4});
    auto out = [&]() { return wide ? empty<double>(8, dt, {4}) : empty<float>(8, dt, {4}); };
    auto get = [&](const pk_tensor &t, size_t n) {
      if (wide) return download<double>(t, n);
      std::vector<float> f = download<float>(t, n);
      return std::vector<double>(f.begin(), f.end());
    };
    pk_tensor prod = out(), quot = out(), sum = out(), conj = out();
    ASSERT_EQ(launch(PK_OP_MUL, {ta, tb}, {prod}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_DIV, {ta, tb}, {quot}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {sum}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_CONJ_PHYSICAL, {ta}, {conj}), PK_OK) << last_error().message;
    std::vector<double> p = get(prod, 8), q = get(quot, 8), s = get(sum, 8), c = get(conj, 8);
    EXPECT_EQ(p[0], -5.0);
    EXPECT_EQ(p[1], 10.0);
    EXPECT_EQ(p[2], -5.0 * 3 - 10.0 * 4);  // (-5+10i)(3+4i) = -55 + 10i
    EXPECT_EQ(p[3], -5.0 * 4 + 10.0 * 3);
    EXPECT_TRUE(std::isinf(p[4]) || std::isinf(p[5])) << p[4] << " " << p[5];
    EXPECT_EQ(q[2], 1.0);
    EXPECT_EQ(q[3], 2.0);
    EXPECT_EQ(q[6], 0.0);  // 1 / (2i) = 0 - 0.5i
    EXPECT_EQ(q[7], -0.5);
    EXPECT_EQ(s[0], 4.0);
    EXPECT_EQ(s[1], 6.0);
    EXPECT_EQ(c[0], 1.0);
    EXPECT_EQ(c[1], -2.0);
    // |3+4i| = 5, |5+12i| = 13 (the modulus is a real tensor); reciprocal(2i) = -0.5i.
    std::vector<double> m{3, 4, -5, 12, 0, 2};
    std::vector<float> mf(m.begin(), m.end());
    pk_tensor tm = wide ? device(m, dt, {3}) : device(mf, dt, {3});
    pk_tensor ab = wide ? empty<double>(3, kF64, {3}) : empty<float>(3, kF32, {3});
    pk_tensor rc = wide ? empty<double>(6, dt, {3}) : empty<float>(6, dt, {3});
    ASSERT_EQ(launch(PK_OP_ABS, {tm}, {ab}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_RECIPROCAL, {tm}, {rc}), PK_OK) << last_error().message;
    std::vector<double> r = get(ab, 3), inv = get(rc, 6);
    EXPECT_EQ(r[0], 5.0);
    EXPECT_EQ(r[1], 13.0);
    EXPECT_EQ(r[2], 2.0);
    EXPECT_EQ(inv[4], 0.0);
    EXPECT_EQ(inv[5], -0.5);
    // eq compares both parts; isnan sees either part.
    pk_tensor eq = empty<uint8_t>(4, kBool, {4}), isn = empty<uint8_t>(4, kBool, {4});
    ASSERT_EQ(launch(PK_OP_EQ, {ta, ta}, {eq}), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_ISNAN, {ta}, {isn}), PK_OK) << last_error().message;
    EXPECT_EQ(download<uint8_t>(eq, 4), (std::vector<uint8_t>{1, 1, 0, 1}));  // inf + NaN i != itself
    EXPECT_EQ(download<uint8_t>(isn, 4), (std::vector<uint8_t>{0, 0, 1, 0}));
  }
  expect_native(PK_OP_MUL);
  expect_native(PK_OP_DIV);
  expect_native(PK_OP_ABS);
}

TEST_F(OpenCL, ComplexReductionsScansAndMatmul) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  // sum [1+1i, 2-3i, 0.5+0.25i] = 3.5-1.75i; prod [1+2i, 3+4i] = -5+10i; cumsum [1+1i, 2-3i] = [1+1i, 3-2i].
  std::vector<float> x{1, 1, 2, -3, 0.5f, 0.25f};
  pk_tensor tx = device(x, c64, {3});
  pk_attrs_sum as = PK_ATTRS_SUM_INIT;
  as.num_dims = 1;
  pk_tensor s = empty<float>(2, c64, {});
  ASSERT_EQ(launch(PK_OP_SUM, {tx}, {s}, &as), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(s, 2), (std::vector<float>{3.5f, -1.75f}));
  std::vector<double> y{1, 2, 3, 4};
  pk_tensor ty = device(y, c128, {2});
  pk_attrs_prod ap = PK_ATTRS_PROD_INIT;
  ap.num_dims = 1;
  pk_tensor pr = empty<double>(2, c128, {});
  ASSERT_EQ(launch(PK_OP_PROD, {ty}, {pr}, &ap), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(pr, 2), (std::vector<double>{-5, 10}));
  pk_attrs_cumsum ac = PK_ATTRS_CUMSUM_INIT;
  pk_tensor cs = empty<float>(6, c64, {3});
  ASSERT_EQ(launch(PK_OP_CUMSUM, {tx}, {cs}, &ac), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(cs, 6), (std::vector<float>{1, 1, 3, -2, 3.5f, -1.75f}));
  // any / all: a complex value is true when either part is nonzero (0+1i is true).
  std::vector<float> z{0, 0, 0, 1};
  pk_tensor tz = device(z, c64, {2});
  pk_attrs_any aa = PK_ATTRS_ANY_INIT;
  aa.num_dims = 1;
  pk_attrs_all al = PK_ATTRS_ALL_INIT;
  al.num_dims = 1;
  pk_tensor an = empty<uint8_t>(1, kBool, {}), ll = empty<uint8_t>(1, kBool, {});
  ASSERT_EQ(launch(PK_OP_ANY, {tz}, {an}, &aa), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_ALL, {tz}, {ll}, &al), PK_OK) << last_error().message;
  EXPECT_EQ(download<uint8_t>(an, 1)[0], 1);
  EXPECT_EQ(download<uint8_t>(ll, 1)[0], 0);
  // [[1+i, 2]] x [[i], [1-i]] = (1+i)i + 2(1-i) = (-1+i) + (2-2i) = 1-i.
  std::vector<double> ma{1, 1, 2, 0}, mb{0, 1, 1, -1};
  pk_tensor tma = device(ma, c128, {1, 2}), tmb = device(mb, c128, {2, 1}), mc = empty<double>(2, c128, {1, 1});
  ASSERT_EQ(launch(PK_OP_MATMUL, {tma, tmb}, {mc}), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(mc, 2), (std::vector<double>{1, -1}));
  expect_native(PK_OP_SUM);
  expect_native(PK_OP_PROD);
  expect_native(PK_OP_MATMUL);
}

TEST_F(OpenCL, ComplexCreationConversionAndFunctions) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  // fill writes value + 0i; convert c64 -> f32 drops the imaginary part, f32 -> c128 adds +0i.
  pk_tensor like = empty<double>(6, c128, {3}), f = empty<double>(6, c128, {3});
  pk_attrs_fill af = PK_ATTRS_FILL_INIT;
  af.value = 2.5;
  ASSERT_EQ(launch(PK_OP_FILL, {like}, {f}, &af), PK_OK) << last_error().message;
  EXPECT_EQ(download<double>(f, 6), (std::vector<double>{2.5, 0, 2.5, 0, 2.5, 0}));
  std::vector<float> x{1.5f, -2, -3, 4};
  pk_tensor tx = device(x, c64, {2}), re = empty<float>(2, kF32, {2});
  pk_attrs_convert_element_type ac = PK_ATTRS_CONVERT_ELEMENT_TYPE_INIT;
  ac.dtype = PK_DTYPE_F32;
  ASSERT_EQ(launch(PK_OP_CONVERT_ELEMENT_TYPE, {tx}, {re}, &ac), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(re, 2), (std::vector<float>{1.5f, -3}));
  std::vector<float> r{2, 7}, im{-1, 0.25f};
  pk_tensor tr = device(r, kF32, {2}), ti = device(im, kF32, {2}), cx = empty<float>(4, c64, {2});
  ASSERT_EQ(launch(PK_OP_COMPLEX, {tr, ti}, {cx}), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(cx, 4), (std::vector<float>{2, -1, 7, 0.25f}));
  // sqrt(3+4i) = 2+i and sqrt(-4+0i) = 2i exactly; log(-1+0i) = pi i; exp(0+0i) = 1.
  std::vector<double> z{3, 4, -4, 0, -1, 0, 0, 0};
  pk_tensor tz = device(z, c128, {4}), sq = empty<double>(8, c128, {4}), lg = empty<double>(8, c128, {4}),
            ex = empty<double>(8, c128, {4});
  ASSERT_EQ(launch(PK_OP_SQRT, {tz}, {sq}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_LOG, {tz}, {lg}), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_EXP, {tz}, {ex}), PK_OK) << last_error().message;
  const std::vector<double> s = download<double>(sq, 8), l = download<double>(lg, 8), e = download<double>(ex, 8);
  EXPECT_EQ(s[0], 2.0);
  EXPECT_EQ(s[1], 1.0);
  EXPECT_EQ(s[2], 0.0);
  EXPECT_EQ(s[3], 2.0);
  EXPECT_EQ(l[4], 0.0);
  EXPECT_NEAR(l[5], 3.14159265358979323846, 4e-16);
  EXPECT_EQ(l[6], -INFINITY);  // log 0 = -inf
  EXPECT_EQ(e[6], 1.0);
  EXPECT_EQ(e[7], 0.0);
  // log|3+4i| = log 5.
  EXPECT_NEAR(l[0], std::log(5.0), 2e-16);
  expect_native(PK_OP_SQRT);
  expect_native(PK_OP_COMPLEX);
}

// Builds x -> mul(x, y) -> add(., x) -> exp -> sub(., y) and runs it fused and unfused on the OpenCL device.
TEST_F(OpenCL, FusedChainMatchesUnfused) {
  const int64_t R = 33, C = 129;
  const size_t n = static_cast<size_t>(R * C);
  std::vector<float> x = random_floats(n, 9, -2.f, 2.f), y = random_floats(n, 10, -2.f, 2.f);
  pk_graph_t g = nullptr;
  ASSERT_EQ(pk_graph_create(&g), PK_OK);
  const int64_t shape[2] = {R, C};
  uint32_t vx, vy, v1, v2, v3, v4;
  ASSERT_EQ(pk_graph_add_input(g, kF32, 2, shape, &vx), PK_OK);
  ASSERT_EQ(pk_graph_add_input(g, kF32, 2, shape, &vy), PK_OK);
  uint32_t in[2] = {vx, vy};
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_MUL, in, 2, nullptr, &v1, 1), PK_OK) << last_error().message;
  in[0] = v1;
  in[1] = vx;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_ADD, in, 2, nullptr, &v2, 1), PK_OK);
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_EXP, &v2, 1, nullptr, &v3, 1), PK_OK);
  in[0] = v3;
  in[1] = vy;
  ASSERT_EQ(pk_graph_add_node(g, PK_OP_SUB, in, 2, nullptr, &v4, 1), PK_OK);
  ASSERT_EQ(pk_graph_mark_output(g, v2), PK_OK);  // an intermediate that leaves the region too
  ASSERT_EQ(pk_graph_mark_output(g, v4), PK_OK);
  pk_compile_options fused_opts, plain_opts;
  PK_STRUCT_INIT(fused_opts);
  PK_STRUCT_INIT(plain_opts);
  plain_opts.disable_fusion = 1;
  pk_executable_t fused = nullptr, plain = nullptr;
  ASSERT_EQ(pk_graph_compile(g, dev_, &fused_opts, &fused), PK_OK) << last_error().message;
  ASSERT_EQ(pk_graph_compile(g, dev_, &plain_opts, &plain), PK_OK) << last_error().message;
  pk_graph_destroy(g);
  uint32_t fk = 0, fn = 0, sn = 0;
  ASSERT_EQ(pk_executable_stats(fused, &fk, &fn, &sn), PK_OK);
  EXPECT_EQ(fk, 1u);
  EXPECT_EQ(fn, 4u);
  EXPECT_EQ(sn, 0u);

  pk_tensor tx = device(x, kF32, {R, C}), ty = device(y, kF32, {R, C});
  pk_tensor f2 = empty<float>(n, kF32, {R, C}), f4 = empty<float>(n, kF32, {R, C});
  pk_tensor p2 = empty<float>(n, kF32, {R, C}), p4 = empty<float>(n, kF32, {R, C});
  pk_tensor ins[2] = {tx, ty}, fo[2] = {f2, f4}, po[2] = {p2, p4};
  ASSERT_EQ(pk_executable_run(fused, stream_, ins, 2, fo, 2), PK_OK) << last_error().message;
  ASSERT_EQ(pk_executable_run(plain, stream_, ins, 2, po, 2), PK_OK) << last_error().message;
  std::vector<float> rf2 = download<float>(f2, n), rf4 = download<float>(f4, n);
  std::vector<float> rp2 = download<float>(p2, n), rp4 = download<float>(p4, n);
  for (size_t i = 0; i < n; ++i) {
    // Same ops in the same precision and kernel flavor (dense, vectorized): fused and unfused agree bit for bit.
    ASSERT_EQ(f32_bits(rf2[i]), f32_bits(rp2[i])) << i;
    ASSERT_EQ(f32_bits(rf4[i]), f32_bits(rp4[i])) << i;
    const float v2h = x[i] * y[i] + x[i];
    ASSERT_EQ(rf2[i], v2h) << i;
    const double ref = std::exp(double(v2h)) - y[i];
    ASSERT_NEAR(rf4[i], ref, 4e-7 * std::fabs(std::exp(double(v2h))) + 1e-6) << i;
  }
  // The fused kernel takes strided arguments too: a transposed view of x^T.
  std::vector<float> xt(n);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) xt[j * R + i] = x[i * C + j];
  pk_tensor txt = device(xt, kF32, {R, C}, {1, R});
  pk_tensor ins2[2] = {txt, ty};
  ASSERT_EQ(pk_executable_run(fused, stream_, ins2, 2, fo, 2), PK_OK) << last_error().message;
  std::vector<float> rs2 = download<float>(f2, n), rs4 = download<float>(f4, n);
  for (size_t i = 0; i < n; ++i) {
    // mul and add round on their own in every kernel flavor (no contraction into fma): bit-exact. exp may come
    // from a vector or a scalar implementation in different flavors: within its ulp bound.
    ASSERT_EQ(f32_bits(rs2[i]), f32_bits(rp2[i])) << i;
    ASSERT_NEAR(rs4[i], rp4[i], 4e-7 * std::fabs(std::exp(double(rp2[i])))) << i;
  }
  pk_executable_destroy(fused);
  pk_executable_destroy(plain);
}

TEST_F(OpenCL, CorruptCacheEntriesAreRebuilt) {
  // Run once so the cache holds entries, damage every entry, then a fresh runtime must still work.
  std::vector<float> a{1, 2, 3}, b{4, 5, 6};
  {
    pk_tensor ta = device(a, kF32, {3}), tb = device(b, kF32, {3}), out = empty<float>(3, kF32, {3});
    ASSERT_EQ(launch(PK_OP_SUB, {ta, tb}, {out}), PK_OK) << last_error().message;
    EXPECT_EQ(download<float>(out, 3), (std::vector<float>{-3, -3, -3}));
  }
  const std::string dir = cache_dir() + "/opencl";
  size_t damaged = 0;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() < 4 || name.substr(name.size() - 4) != ".bin") continue;
      if (FILE *f = std::fopen((dir + "/" + name).c_str(), "r+b")) {
        std::fseek(f, 40, SEEK_SET);
        const char junk[16] = "not a binary!!!";
        std::fwrite(junk, 1, sizeof junk, f);
        std::fclose(f);
        ++damaged;
      }
    }
    closedir(d);
  }
  EXPECT_GT(damaged, 0u) << "no cache entries in " << dir;
  close();
  open();
  pk_tensor ta = device(a, kF32, {3}), tb = device(b, kF32, {3}), out = empty<float>(3, kF32, {3});
  ASSERT_EQ(launch(PK_OP_SUB, {ta, tb}, {out}), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(out, 3), (std::vector<float>{-3, -3, -3}));
}

TEST_F(OpenCL, CreationOps) {
  pk_attrs_iota io = PK_ATTRS_IOTA_INIT;
  io.length = 5;
  io.start = 2;
  io.step = 3;
  io.dtype = PK_DTYPE_I32;
  pk_tensor t = empty<int32_t>(5, kI32, {5});
  ASSERT_EQ(launch(PK_OP_IOTA, {}, {t}, &io), PK_OK) << last_error().message;
  EXPECT_EQ(download<int32_t>(t, 5), (std::vector<int32_t>{2, 5, 8, 11, 14}));
  pk_attrs_full fu = PK_ATTRS_FULL_INIT;
  fu.num_shape = 2;
  fu.shape[0] = 2;
  fu.shape[1] = 3;
  fu.value = 1.00390625;  // 1 + 2^-8: a bf16 tie -> 1.0
  fu.dtype = PK_DTYPE_BF16;
  pk_tensor f = empty<uint16_t>(6, kBF16, {2, 3});
  ASSERT_EQ(launch(PK_OP_FULL, {}, {f}, &fu), PK_OK) << last_error().message;
  EXPECT_EQ(download<uint16_t>(f, 6), std::vector<uint16_t>(6, 0x3f80));
  expect_native(PK_OP_IOTA);
  expect_native(PK_OP_FULL);
}

}  // namespace
