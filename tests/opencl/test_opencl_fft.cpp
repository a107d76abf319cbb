// OpenCL backend through the public host API: FFT, complex pow, the elementary complex functions and complex
// extremes (references: a direct DFT in long double here, hand-derived values, mpmath tables). The fixture is in
// opencl_fixture.hpp.
#include "complex_arith_cases.hpp"
#include "complex_elementary_cases.hpp"
#include "opencl_fixture.hpp"

using namespace pk_opencl_test;  // NOLINT: the fixture and its helpers, in every test file

// --- FFT, complex pow and complex extremes (references: a direct DFT in long double here, hand-derived values) ---

namespace {

using cld = std::complex<long double>;

// The DFT along one axis of a row-major [outer, n, inner] complex tensor, in long double with the angle reduced
// exactly (j k mod n) before sin / cos; sign -1 forward, +1 inverse, unnormalized.
std::vector<cld> dft_axis(const std::vector<cld> &x, int64_t outer, int64_t n, int64_t inner, int sign) {
  std::vector<cld> y(x.size());
  const long double two_pi = 6.283185307179586476925286766559005768L;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k = 0; k < n; ++k) {
        cld acc = 0;
        for (int64_t j = 0; j < n; ++j) {
          const long double ang = two_pi * static_cast<long double>((j * k) % n) / static_cast<long double>(n);
          acc += x[static_cast<size_t>((o * n + j) * inner + i)] * cld(std::cos(ang), sign * std::sin(ang));
        }
        y[static_cast<size_t>((o * n + k) * inner + i)] = acc;
      }
  return y;
}

// Largest |a - b| over the elements, relative to the sum of |x| (the scale of a DFT's rounding errors).
template <class T>
double fft_error(const std::vector<T> &got, const std::vector<cld> &want, const std::vector<cld> &x) {
  long double l1 = 0, worst = 0;
  for (const cld &v : x) l1 += std::abs(v);
  for (size_t k = 0; k < want.size(); ++k) {
    const cld g(got[2 * k], got[2 * k + 1]);
    worst = std::max(worst, std::abs(g - want[k]));
  }
  return static_cast<double>(worst / std::max<long double>(l1, 1e-300L));
}

}  // namespace

TEST_F(OpenCL, FftC2cMatchesDirectDftForEveryLengthAndAxis) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_FFT_C2C, {c128}, {c128})) GTEST_SKIP() << "the device has no f64";
  // Powers of two take the radix-2 stages, other lengths the direct DFT up to 64 and Bluestein above; both axes
  // (inner extent 1 and 3).
  for (int64_t n : {1, 2, 3, 5, 8, 12, 16, 17, 64, 100, 128, 300}) {
    for (int axis = 0; axis < 2; ++axis) {
      for (int forward = 0; forward < 2; ++forward) {
        const std::vector<int64_t> shape = axis == 1 ? std::vector<int64_t>{3, n} : std::vector<int64_t>{n, 3};
        const size_t count = static_cast<size_t>(3 * n);
        const std::vector<float> rf = random_floats(2 * count, static_cast<unsigned>(n * 4 + axis * 2 + forward));
        std::vector<double> rd(rf.begin(), rf.end());
        std::vector<cld> x(count);
        for (size_t k = 0; k < count; ++k) x[k] = cld(rf[2 * k], rf[2 * k + 1]);
        const std::vector<cld> want =
            axis == 1 ? dft_axis(x, 3, n, 1, forward ? -1 : 1) : dft_axis(x, 1, n, 3, forward ? -1 : 1);
        pk_attrs_fft_c2c at = PK_ATTRS_FFT_C2C_INIT;
        at.num_dims = 1;
        at.dims[0] = axis;
        at.forward = forward;
        pk_tensor in64 = device(rf, c64, shape), out64 = empty<float>(2 * count, c64, shape);
        pk_tensor in128 = device(rd, c128, shape), out128 = empty<double>(2 * count, c128, shape);
        ASSERT_EQ(launch(PK_OP_FFT_C2C, {in64}, {out64}, &at), PK_OK) << last_error().message;
        ASSERT_EQ(launch(PK_OP_FFT_C2C, {in128}, {out128}, &at), PK_OK) << last_error().message;
        // c64: computed in double and rounded once (a few float ulps of the largest term); c128: ~log2(n) + 2
        // double roundings of the sum of |x|.
        EXPECT_LT(fft_error(download<float>(out64, 2 * count), want, x), 2e-7) << "c64 n=" << n << " axis " << axis;
        EXPECT_LT(fft_error(download<double>(out128, 2 * count), want, x), 2e-15) << "c128 n=" << n << " axis " << axis;
      }
    }
  }
  expect_native(PK_OP_FFT_C2C);
}

TEST_F(OpenCL, FftKnownValuesStridedInputAndTwoAxes) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_FFT_C2C, {c64}, {c64})) GTEST_SKIP() << "the device has no f64";
  // DFT [1, 2, 3, 4] = [10, -2+2i, -2, -2-2i], exactly; the input read through stride 2 (every other element).
  std::vector<float> x{1, 0, 9, 9, 2, 0, 9, 9, 3, 0, 9, 9, 4, 0};
  pk_tensor tx = device(x, c64, {4}, {2}), ty = empty<float>(8, c64, {4});
  pk_attrs_fft_c2c at = PK_ATTRS_FFT_C2C_INIT;
  at.num_dims = 1;
  ASSERT_EQ(launch(PK_OP_FFT_C2C, {tx}, {ty}, &at), PK_OK) << last_error().message;
  EXPECT_EQ(download<float>(ty, 8), (std::vector<float>{10, 0, -2, 2, -2, 0, -2, -2}));
  // Two axes of a [4, 6] c128 tensor (dims [1, 0]): the 2-D DFT, also against the direct one.
  const std::vector<float> rf = random_floats(48, 77);
  std::vector<double> rd(rf.begin(), rf.end());
  std::vector<cld> z(24);
  for (size_t k = 0; k < 24; ++k) z[k] = cld(rd[2 * k], rd[2 * k + 1]);
  const std::vector<cld> want = dft_axis(dft_axis(z, 4, 6, 1, -1), 1, 4, 6, -1);
  pk_tensor tz = device(rd, c128, {4, 6}), tw = empty<double>(48, c128, {4, 6});
  at.num_dims = 2;
  at.dims[0] = 1;
  at.dims[1] = 0;
  ASSERT_EQ(launch(PK_OP_FFT_C2C, {tz}, {tw}, &at), PK_OK) << last_error().message;
  EXPECT_LT(fft_error(download<double>(tw, 48), want, z), 2e-15);
  // A non-finite element makes every output of its line non-finite in both parts (as the reference's products
  // with it do); the other line stays exact.
  std::vector<double> nf{1, 0, INFINITY, 0, 2, 0, 3, 0, 1, 0, 1, 0, 1, 0, 1, 0};
  pk_tensor tn = device(nf, c128, {2, 4}), to = empty<double>(16, c128, {2, 4});
  at.num_dims = 1;
  at.dims[0] = 1;
  ASSERT_EQ(launch(PK_OP_FFT_C2C, {tn}, {to}, &at), PK_OK) << last_error().message;
  const std::vector<double> r = download<double>(to, 16);
  for (int k = 0; k < 8; ++k) EXPECT_FALSE(std::isfinite(r[k])) << k;
  EXPECT_EQ(std::vector<double>(r.begin() + 8, r.end()), (std::vector<double>{4, 0, 0, 0, 0, 0, 0, 0}));
  expect_native(PK_OP_FFT_C2C);
}

TEST_F(OpenCL, FftR2cAndC2rInvertEachOther) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_FFT_R2C, {kF64}, {c128})) GTEST_SKIP() << "the device has no f64";
  // r2c over the last axis (odd and even lengths, onesided n/2 + 1 entries) against the direct DFT, then c2r of
  // it, which is n times the input (unnormalized inverse); also both axes of a 2-D tensor (n0 n1 times).
  for (int64_t n : {5, 6, 16}) {
    const int64_t half = n / 2 + 1;
    const std::vector<float> rf = random_floats(static_cast<size_t>(2 * n), static_cast<unsigned>(n));
    std::vector<double> rd(rf.begin(), rf.end());
    std::vector<cld> x(rd.begin(), rd.end());
    const std::vector<cld> full = dft_axis(x, 2, n, 1, -1);
    std::vector<cld> want;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t k = 0; k < half; ++k) want.push_back(full[static_cast<size_t>(r * n + k)]);
    pk_attrs_fft_r2c ar = PK_ATTRS_FFT_R2C_INIT;
    ar.num_dims = 1;
    ar.dims[0] = 1;
    pk_tensor t64 = device(rd, kF64, {2, n}), s128 = empty<double>(static_cast<size_t>(4 * half), c128, {2, half});
    pk_tensor t32 = device(rf, kF32, {2, n}), s64 = empty<float>(static_cast<size_t>(4 * half), c64, {2, half});
    ASSERT_EQ(launch(PK_OP_FFT_R2C, {t64}, {s128}, &ar), PK_OK) << last_error().message;
    ASSERT_EQ(launch(PK_OP_FFT_R2C, {t32}, {s64}, &ar), PK_OK) << last_error().message;
    EXPECT_LT(fft_error(download<double>(s128, static_cast<size_t>(4 * half)), want, x), 2e-15) << n;
    EXPECT_LT(fft_error(download<float>(s64, static_cast<size_t>(4 * half)), want, x), 2e-7) << n;
    pk_attrs_fft_c2r ac = PK_ATTRS_FFT_C2R_INIT;
    ac.num_dims = 1;
    ac.dims[0] = 1;
    ac.last_dim_size = n;
    pk_tensor back = empty<double>(static_cast<size_t>(2 * n), kF64, {2, n});
    ASSERT_EQ(launch(PK_OP_FFT_C2R, {s128}, {back}, &ac), PK_OK) << last_error().message;
    const std::vector<double> b = download<double>(back, static_cast<size_t>(2 * n));
    for (size_t k = 0; k < b.size(); ++k) EXPECT_NEAR(b[k], n * rd[k], 1e-13) << n << " " << k;
  }
  // Both axes of [4, 6], not onesided for r2c's full spectrum check, then onesided and back through c2r.
  const std::vector<float> rf = random_floats(24, 5);
  std::vector<double> rd(rf.begin(), rf.end());
  pk_attrs_fft_r2c ar = PK_ATTRS_FFT_R2C_INIT;
  ar.num_dims = 2;
  ar.dims[0] = 0;
  ar.dims[1] = 1;
  pk_tensor t = device(rd, kF64, {4, 6}), spec = empty<double>(32, c128, {4, 4});
  ASSERT_EQ(launch(PK_OP_FFT_R2C, {t}, {spec}, &ar), PK_OK) << last_error().message;
  pk_attrs_fft_c2r ac = PK_ATTRS_FFT_C2R_INIT;
  ac.num_dims = 2;
  ac.dims[0] = 0;
  ac.dims[1] = 1;
  ac.last_dim_size = 6;
  pk_tensor back = empty<double>(24, kF64, {4, 6});
  ASSERT_EQ(launch(PK_OP_FFT_C2R, {spec}, {back}, &ac), PK_OK) << last_error().message;
  const std::vector<double> b = download<double>(back, 24);
  for (size_t k = 0; k < b.size(); ++k) EXPECT_NEAR(b[k], 24 * rd[k], 1e-12) << k;
  expect_native(PK_OP_FFT_R2C);
  expect_native(PK_OP_FFT_C2R);
}

// pow where b log a is huge: the phase Im(b log a) ~ 2^30..2^1000 radians modulo 2 pi and Re(b log a) where its
// two products cancel (b chosen as s (arg a, log|a|) rounded, so Re is only the rounding residual) need log a far
// beyond double-double. Values from mpmath at 4000 bits (tests/common); the contract's 16 ulp of the larger part.
TEST_F(OpenCL, PowWithHugePhaseAgainstMpmath) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_POW, {c128, c128}, {c128})) GTEST_SKIP() << "the device has no f64";
  const auto &wide = pk::test::kPowHugePhaseC128;
  const auto &narrow = pk::test::kPowHugePhaseC64;
  const auto check = [&](const auto &cases, size_t count, pk_dtype dt, auto zero, double eps) {
    using T = decltype(zero);
    std::vector<T> a, b;
    for (size_t i = 0; i < count; ++i) {
      a.insert(a.end(), {static_cast<T>(cases[i][0]), static_cast<T>(cases[i][1])});
      b.insert(b.end(), {static_cast<T>(cases[i][2]), static_cast<T>(cases[i][3])});
    }
    const int64_t n = static_cast<int64_t>(count);
    pk_tensor ta = device(a, dt, {n}), tb = device(b, dt, {n}), tp = empty<T>(2 * count, dt, {n});
    ASSERT_EQ(launch(PK_OP_POW, {ta, tb}, {tp}), PK_OK) << last_error().message;
    const std::vector<T> p = download<T>(tp, 2 * count);
    for (size_t i = 0; i < count; ++i) {
      const double tol = 16 * eps * std::max(std::fabs(cases[i][4]), std::fabs(cases[i][5]));
      EXPECT_NEAR(p[2 * i], cases[i][4], tol) << "case " << i;
      EXPECT_NEAR(p[2 * i + 1], cases[i][5], tol) << "case " << i;
    }
  };
  check(wide, std::size(wide), c128, 0.0, 0x1p-52);
  check(narrow, std::size(narrow), c64, 0.0f, 0x1p-23);
}

TEST_F(OpenCL, ComplexExtremesAndPowKnownValues) {
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_POW, {c128, c128}, {c128})) GTEST_SKIP() << "the device has no f64";
  // maximum_value / minimum_value of a complex dtype: its parts' extreme as the real part, +0 imaginary (as the
  // CPU backend answers).
  pk_attrs_maximum_value amx = PK_ATTRS_MAXIMUM_VALUE_INIT;
  amx.dtype = PK_DTYPE_C64;
  pk_attrs_minimum_value amn = PK_ATTRS_MINIMUM_VALUE_INIT;
  amn.dtype = PK_DTYPE_C128;
  pk_tensor mx = empty<float>(2, c64, {}), mn = empty<double>(2, c128, {});
  ASSERT_EQ(launch(PK_OP_MAXIMUM_VALUE, {}, {mx}, &amx), PK_OK) << last_error().message;
  ASSERT_EQ(launch(PK_OP_MINIMUM_VALUE, {}, {mn}, &amn), PK_OK) << last_error().message;
  const std::vector<float> m = download<float>(mx, 2);
  const std::vector<double> l = download<double>(mn, 2);
  EXPECT_EQ(m[0], std::numeric_limits<float>::max());
  EXPECT_EQ(f32_bits(m[1]), 0u);
  EXPECT_EQ(l[0], -std::numeric_limits<double>::max());
  EXPECT_EQ(l[1], 0.0);
  EXPECT_FALSE(std::signbit(l[1]));
  // (1+i)^2 = 2i; (-1)^(1/2) = i (real part cos(pi/2) ~ 6e-17); i^i = e^(-pi/2); 2^10 = 1024; 0^2 = 0; z^0 = 1.
  std::vector<double> a{1, 1, -1, 0, 0, 1, 2, 0, 0, 0, INFINITY, NAN}, b{2, 0, 0.5, 0, 0, 1, 10, 0, 2, 0, 0, 0};
  pk_tensor ta = device(a, c128, {6}), tb = device(b, c128, {6}), tp = empty<double>(12, c128, {6});
  ASSERT_EQ(launch(PK_OP_POW, {ta, tb}, {tp}), PK_OK) << last_error().message;
  const std::vector<double> p = download<double>(tp, 12);
  EXPECT_NEAR(p[0], 0.0, 1e-15);
  EXPECT_NEAR(p[1], 2.0, 4e-16);
  EXPECT_NEAR(p[2], 0.0, 1e-16);
  EXPECT_NEAR(p[3], 1.0, 2e-16);
  EXPECT_NEAR(p[4], 0.20787957635076190855, 3e-17);
  EXPECT_EQ(p[5], 0.0);
  EXPECT_EQ(p[6], 1024.0);
  EXPECT_EQ(p[8], 0.0);
  EXPECT_EQ(p[9], 0.0);
  EXPECT_EQ(p[10], 1.0);
  EXPECT_EQ(p[11], 0.0);
  expect_native(PK_OP_POW);
  expect_native(PK_OP_MAXIMUM_VALUE);
}

TEST_F(OpenCL, ComplexArithmeticCorrectlyRoundedAgainstMpmath) {
  // mul, div, reciprocal, abs and sqrt (the device math's, pasted into the program) of c128 and c64
  // (complex_arith_cases.hpp): every part equal to mpmath's value rounded to nearest in the output format, exact ties
  // and a part 2^-250 below a midpoint included. One launch per op and dtype over all its rows.
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_MUL, {c128, c128}, {c128})) GTEST_SKIP() << "the device has no f64";
  const auto check = [&](uint32_t op, bool is_c64, auto zero, pk_dtype cdt, pk_dtype rdt) {
    using T = decltype(zero);
    std::vector<pk::test::ComplexArithCase> rows;
    std::vector<std::vector<T>> in(2);
    for (const auto &c : pk::test::kComplexArithCases) {
      if (c.op != op || c.c64 != is_c64) continue;
      rows.push_back(c);
      const auto operands = pk::test::complex_arith_operands(c);
      for (size_t k = 0; k < operands.size(); ++k)
        in[k].insert(in[k].end(), {static_cast<T>(operands[k][0]), static_cast<T>(operands[k][1])});
    }
    const auto n = static_cast<int64_t>(rows.size());
    const bool abs = op == PK_OP_ABS;
    const size_t out_count = rows.size() * (abs ? 1 : 2);
    std::vector<pk_tensor> ts;
    for (const auto &v : in)
      if (!v.empty()) ts.push_back(device(v, cdt, {n}));
    pk_tensor tw = empty<T>(out_count, abs ? rdt : cdt, {n});
    ASSERT_EQ(launch(op, ts, {tw}), PK_OK) << last_error().message;
    const std::vector<T> w = download<T>(tw, out_count);
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto &c = rows[i];
      const size_t at = i * (abs ? 1 : 2);
      EXPECT_EQ(static_cast<double>(w[at]), c.re) << op << (is_c64 ? " c64 " : " c128 ") << c.a << " " << c.c;
      if (!abs) {
        EXPECT_EQ(static_cast<double>(w[at + 1]), c.im) << op << (is_c64 ? " c64 " : " c128 ") << c.a << " " << c.c;
      }
    }
    expect_native(op);
  };
  for (uint32_t op : {PK_OP_MUL, PK_OP_DIV, PK_OP_RECIPROCAL, PK_OP_ABS, PK_OP_SQRT}) {
    check(op, false, 0.0, c128, PK_DTYPE_F64_DESC);
    check(op, true, 0.0f, c64, PK_DTYPE_F32_DESC);
  }
}

TEST_F(OpenCL, ComplexElementaryFunctionsAgainstMpmath) {
  // exp, log, sin, cos, tanh (the device math's, pasted into the program) of c128 and, where the argument is exact
  // in float and the result normal there, c64: each part within an ulp of its own magnitude. One launch per op and
  // dtype over all its rows.
  const pk_dtype c64 = PK_DTYPE_C64_DESC, c128 = PK_DTYPE_C128_DESC;
  if (!supported(PK_OP_EXP, {c128}, {c128})) GTEST_SKIP() << "the device has no f64";
  const auto float_normal = [](double v) { return v == 0.0 || (std::fabs(v) >= 0x1p-126 && std::fabs(v) < 0x1p127); };
  for (uint32_t op : {PK_OP_EXP, PK_OP_LOG, PK_OP_SIN, PK_OP_COS, PK_OP_TANH}) {
    std::vector<pk::test::ComplexElementaryCase> rows, rows64;
    std::vector<double> z;
    std::vector<float> zf;
    for (const auto &c : pk::test::kComplexElementaryCases) {
      if (c.op != op) continue;
      rows.push_back(c);
      z.insert(z.end(), {c.x, c.y});
      if (static_cast<float>(c.x) != c.x || static_cast<float>(c.y) != c.y || !float_normal(c.re) ||
          !float_normal(c.im))
        continue;
      rows64.push_back(c);
      zf.insert(zf.end(), {static_cast<float>(c.x), static_cast<float>(c.y)});
    }
    const auto n = static_cast<int64_t>(rows.size()), n64 = static_cast<int64_t>(rows64.size());
    pk_tensor tz = device(z, c128, {n}), tw = empty<double>(z.size(), c128, {n});
    ASSERT_EQ(launch(op, {tz}, {tw}), PK_OK) << last_error().message;
    const std::vector<double> w = download<double>(tw, z.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto &c = rows[i];
      EXPECT_LE(pk::test::complex_part_ulps(w[2 * i], c.re, 53), 1.0) << op << " (" << c.x << ", " << c.y << ")";
      EXPECT_LE(pk::test::complex_part_ulps(w[2 * i + 1], c.im, 53), 1.0) << op << " (" << c.x << ", " << c.y << ")";
    }
    if (rows64.empty()) continue;
    pk_tensor tzf = device(zf, c64, {n64}), twf = empty<float>(zf.size(), c64, {n64});
    ASSERT_EQ(launch(op, {tzf}, {twf}), PK_OK) << last_error().message;
    const std::vector<float> wf = download<float>(twf, zf.size());
    for (size_t i = 0; i < rows64.size(); ++i) {
      const auto &c = rows64[i];
      EXPECT_LE(pk::test::complex_part_ulps(wf[2 * i], c.re, 24), 1.0) << op << " c64 (" << c.x << ", " << c.y << ")";
      EXPECT_LE(pk::test::complex_part_ulps(wf[2 * i + 1], c.im, 24), 1.0)
          << op << " c64 (" << c.x << ", " << c.y << ")";
    }
    expect_native(op);
  }
}
