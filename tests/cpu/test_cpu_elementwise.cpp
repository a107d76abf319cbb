// CPU backend, the fast paths of elementwise kernels through the public host API: the 8-lane f32 exp, streaming
// (non-temporal) stores for large dense outputs, and the worker pool under many back-to-back parallel launches.
// References are computed here in double (exp) or are exact (f32 sums of small integers), never taken from a kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "complex_arith_cases.hpp"
#include "complex_elementary_cases.hpp"
#include "cpu_test_fixture.hpp"
#include "igamma_cases.hpp"
#include "lgamma_cases.hpp"
#include "pow_huge_phase_cases.hpp"
#include "primkit/primkit.h"

namespace {

using pk_test::last_error;

const pk_dtype kF32 = PK_DTYPE_F32_DESC, kF64 = PK_DTYPE_F64_DESC;

class CpuElementwise : public pk_test::CpuBackendTest {};

// Distance in f32 ulps of `got` from the exact value `ref` (ulp of the f32 binade of ref; subnormal spacing below).
double ulp_error(float got, double ref) {
  if (std::isnan(ref)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(got) && std::isinf(static_cast<float>(ref)) && std::signbit(got) == std::signbit(ref)) return 0;
  if (std::isinf(ref) || std::isinf(got)) return static_cast<double>(got) == ref ? 0 : INFINITY;
  const double a = std::fabs(ref);
  const int e = a < 0x1p-126 ? -126 : std::ilogb(a);
  return std::fabs(static_cast<double>(got) - ref) / std::ldexp(1.0, e - 23);
}

TEST_F(CpuElementwise, ComplexElementaryFunctionsAgainstMpmath) {
  // exp, log, sin, cos, tanh of c128 (every row) and c64 (the rows whose argument is exact in float and whose result
  // is normal in float) against mpmath: each part within an ulp of its own magnitude (complex_elementary_cases.hpp).
  for (const auto &c : pk::test::kComplexElementaryCases) {
    std::vector<double> z = {c.x, c.y}, w(2, -1.0);
    ASSERT_EQ(launch(c.op, {tensor(z, PK_DTYPE_C128_DESC, {1})}, {tensor(w, PK_DTYPE_C128_DESC, {1})}, nullptr), PK_OK)
        << last_error().message;
    EXPECT_LE(pk::test::complex_part_ulps(w[0], c.re, 53), 1.0) << c.op << " (" << c.x << ", " << c.y << ")";
    EXPECT_LE(pk::test::complex_part_ulps(w[1], c.im, 53), 1.0) << c.op << " (" << c.x << ", " << c.y << ")";
    const auto float_normal = [](double v) { return v == 0.0 || (std::fabs(v) >= 0x1p-126 && std::fabs(v) < 0x1p127); };
    if (static_cast<float>(c.x) != c.x || static_cast<float>(c.y) != c.y || !float_normal(c.re) || !float_normal(c.im))
      continue;
    std::vector<float> zf = {static_cast<float>(c.x), static_cast<float>(c.y)}, wf(2, -1.0f);
    ASSERT_EQ(launch(c.op, {tensor(zf, PK_DTYPE_C64_DESC, {1})}, {tensor(wf, PK_DTYPE_C64_DESC, {1})}, nullptr), PK_OK)
        << last_error().message;
    EXPECT_LE(pk::test::complex_part_ulps(wf[0], c.re, 24), 1.0) << c.op << " c64 (" << c.x << ", " << c.y << ")";
    EXPECT_LE(pk::test::complex_part_ulps(wf[1], c.im, 24), 1.0) << c.op << " c64 (" << c.x << ", " << c.y << ")";
  }
}

TEST_F(CpuElementwise, ComplexArithmeticCorrectlyRoundedAgainstMpmath) {
  // mul, div, reciprocal, abs and sqrt of c128 and c64 (complex_arith_cases.hpp): every part equal to mpmath's value
  // rounded to nearest in the output format, exact ties and a part 2^-250 below a midpoint included.
  const auto run = [&](const pk::test::ComplexArithCase &c, auto zero, pk_dtype cdt, pk_dtype rdt) {
    using T = decltype(zero);
    std::vector<std::vector<T>> in;
    for (const auto &o : pk::test::complex_arith_operands(c))
      in.push_back({static_cast<T>(o[0]), static_cast<T>(o[1])});
    std::vector<pk_tensor> ts;
    for (auto &v : in) ts.push_back(tensor(v, cdt, {1}));
    const bool abs = c.op == PK_OP_ABS;
    std::vector<T> w(abs ? 1 : 2, T(-1));
    EXPECT_EQ(launch(c.op, ts, {tensor(w, abs ? rdt : cdt, {1})}, nullptr), PK_OK) << last_error().message;
    EXPECT_EQ(static_cast<double>(w[0]), c.re) << c.op << (c.c64 ? " c64 " : " c128 ") << c.a << " " << c.c;
    if (!abs) {
      EXPECT_EQ(static_cast<double>(w[1]), c.im) << c.op << (c.c64 ? " c64 " : " c128 ") << c.a << " " << c.c;
    }
  };
  for (const auto &c : pk::test::kComplexArithCases) {
    if (c.c64)
      run(c, 0.0f, PK_DTYPE_C64_DESC, kF32);
    else
      run(c, 0.0, PK_DTYPE_C128_DESC, kF64);
  }
}

TEST_F(CpuElementwise, PowWithHugePhaseAgainstMpmath) {
  // pow where b log a is huge (|Im(b log a)| from 2^26 to ~1e308 radians, Re(b log a) where its products cancel)
  // through the CPU's own MPFR and long double path, against the mpmath values the cuda-emu and OpenCL tests (the
  // device math's path) use: the contract's 16 ulp of the larger part.
  const auto check = [&](const auto &cases, size_t count, auto zero, pk_dtype dt, double eps) {
    using T = decltype(zero);
    std::vector<T> a, b, w(2 * count, T(-1));
    for (size_t i = 0; i < count; ++i) {
      a.insert(a.end(), {static_cast<T>(cases[i][0]), static_cast<T>(cases[i][1])});
      b.insert(b.end(), {static_cast<T>(cases[i][2]), static_cast<T>(cases[i][3])});
    }
    const int64_t n = static_cast<int64_t>(count);
    ASSERT_EQ(launch(PK_OP_POW, {tensor(a, dt, {n}), tensor(b, dt, {n})}, {tensor(w, dt, {n})}, nullptr), PK_OK)
        << last_error().message;
    for (size_t i = 0; i < count; ++i) {
      const double tol = 16 * eps * std::max(std::fabs(cases[i][4]), std::fabs(cases[i][5]));
      EXPECT_NEAR(w[2 * i], cases[i][4], tol) << "case " << i;
      EXPECT_NEAR(w[2 * i + 1], cases[i][5], tol) << "case " << i;
    }
  };
  check(pk::test::kPowHugePhaseC128, std::size(pk::test::kPowHugePhaseC128), 0.0, PK_DTYPE_C128_DESC, 0x1p-52);
  check(pk::test::kPowHugePhaseC64, std::size(pk::test::kPowHugePhaseC64), 0.0f, PK_DTYPE_C64_DESC, 0x1p-23);
}

TEST_F(CpuElementwise, LgammaAgainstMpmath) {
  // ln |Gamma| (the device math's) within an ulp of mpmath's value at every row of lgamma_cases.hpp: the zeros at 1
  // and 2 to relative accuracy, near the zeros below -2, the poles, overflow.
  std::vector<double> x, y;
  for (const auto &c : pk::test::kLgammaCases) x.push_back(c.x);
  y.assign(x.size(), -1.0);
  const int64_t n = static_cast<int64_t>(x.size());
  ASSERT_EQ(launch(PK_OP_LGAMMA, {tensor(x, kF64, {n})}, {tensor(y, kF64, {n})}, nullptr), PK_OK)
      << last_error().message;
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_LE(pk::test::lgamma_ulps(y[i], pk::test::kLgammaCases[i].want), 1.0) << "lgamma(" << x[i] << ") = " << y[i];
}

TEST_F(CpuElementwise, IncompleteGammaForLargeANearX) {
  // P and Q (the device math's) at every row of igamma_cases.hpp against mpmath: a from 2^16 to the f64 maximum with
  // x within 37 sqrt(a) of a, where the series and the fraction would need ~10 sqrt(a) steps (their cap is 10,000)
  // and Temme's expansion answers instead.
  std::vector<double> a, x;
  for (const auto &c : pk::test::kIgammaCases) {
    a.push_back(c.a);
    x.push_back(c.x);
  }
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<double> p(a.size(), -1.0), q(a.size(), -1.0);
  ASSERT_EQ(launch(PK_OP_IGAMMA, {tensor(a, kF64, {n}), tensor(x, kF64, {n})}, {tensor(p, kF64, {n})}, nullptr), PK_OK)
      << last_error().message;
  ASSERT_EQ(launch(PK_OP_IGAMMAC, {tensor(a, kF64, {n}), tensor(x, kF64, {n})}, {tensor(q, kF64, {n})}, nullptr), PK_OK)
      << last_error().message;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto &c = pk::test::kIgammaCases[i];
    EXPECT_LE(pk::test::igamma_ulps(p[i], c.p), pk::test::kIgammaUlps)
        << "igamma(" << c.a << ", " << c.x << ") = " << p[i];
    EXPECT_LE(pk::test::igamma_ulps(q[i], c.q), pk::test::kIgammaUlps)
        << "igammac(" << c.a << ", " << c.x << ") = " << q[i];
  }
}

TEST_F(CpuElementwise, ExpF32WithinOneUlpOverItsWholeRange) {
  // Every 2^-12 step of [-90, 90] (737 281 values, in both the 8-lane body and the scalar tail/fallback lanes),
  // plus the specials; the reference is glibc's double exp (error < 1 ulp of double, far below f32's).
  std::vector<float> x;
  for (int k = -90 * 4096; k <= 90 * 4096; ++k) x.push_back(static_cast<float>(k) / 4096.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 88.72283f, 88.72284f, -87.33654f,
                  -103.97208f, -103.97209f, 1e-30f, -1e-30f, 0x1p-149f})
    x.push_back(v);
  std::vector<float> y(x.size(), -1.0f);
  ASSERT_EQ(launch(PK_OP_EXP, {tensor(x, kF32, {static_cast<int64_t>(x.size())})},
                   {tensor(y, kF32, {static_cast<int64_t>(y.size())})}, nullptr),
            PK_OK)
      << last_error().message;
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error(y[i], std::exp(static_cast<double>(x[i])));
    if (e > worst) worst = e, worst_at = i;
  }
  EXPECT_LE(worst, 1.0) << "exp(" << x[worst_at] << ") = " << y[worst_at];
  EXPECT_EQ(y[x.size() - 13], 1.0f);         // exp(0)
  EXPECT_EQ(y[x.size() - 11], inf);          // exp(inf)
  EXPECT_EQ(y[x.size() - 10], 0.0f);         // exp(-inf)
  EXPECT_TRUE(std::isnan(y[x.size() - 9]));  // exp(NaN)
  EXPECT_EQ(y[x.size() - 7], inf);           // just past FLT_MAX's log
  EXPECT_EQ(y[x.size() - 1], 1.0f);          // exp(tiny) rounds to 1
  RecordProperty("exp_f32_max_ulp", std::to_string(worst));
}

TEST_F(CpuElementwise, TanhF32CorrectlyRoundedAcrossTheSeriesAndExpBranches) {
  // Every 2^-12 step of [-12, 12] (98 305 values; the series below |x| = 1/2, e^(-2|x|) above, saturation to +-1
  // near 9), small magnitudes down to the subnormals, and the specials; the reference is long double tanh. The
  // double-lane kernel is correctly rounded but within ~1e-11 of a tie, so no result may be 1/2 ulp or more off
  // by more than that; the 16-lane body, the 8-lane body (cpu.isa_avx2) and the scalar path (cpu.isa_generic) all
  // run this test.
  std::vector<float> x;
  for (int k = -12 * 4096; k <= 12 * 4096; ++k) x.push_back(static_cast<float>(k) / 4096.0f);
  for (int e = -149; e <= 0; ++e) {
    x.push_back(std::ldexp(1.0f, e));
    x.push_back(-std::ldexp(1.3f, e < -126 ? -126 : e));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.49999997f, 0.5f, 0.50000006f})
    x.push_back(v);
  std::vector<float> y(x.size(), -7.0f);
  ASSERT_EQ(launch(PK_OP_TANH, {tensor(x, kF32, {static_cast<int64_t>(x.size())})},
                   {tensor(y, kF32, {static_cast<int64_t>(y.size())})}, nullptr),
            PK_OK)
      << last_error().message;
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error(y[i], static_cast<double>(std::tanh(static_cast<long double>(x[i]))));
    if (e > worst) worst = e, worst_at = i;
  }
  EXPECT_LE(worst, 0.5 + 1e-6) << "tanh(" << x[worst_at] << ") = " << y[worst_at];
  const size_t sp = x.size() - 8;
  EXPECT_TRUE(y[sp] == 0.0f && !std::signbit(y[sp]));         // tanh(0) = 0
  EXPECT_TRUE(y[sp + 1] == 0.0f && std::signbit(y[sp + 1]));  // tanh(-0) = -0
  EXPECT_EQ(y[sp + 2], 1.0f);                                 // tanh(inf)
  EXPECT_EQ(y[sp + 3], -1.0f);                                // tanh(-inf)
  EXPECT_TRUE(std::isnan(y[sp + 4]));                         // tanh(NaN)
  RecordProperty("tanh_f32_max_ulp", std::to_string(worst));
}

// Outputs of 16 MiB and more are written with non-temporal stores in 16- or 32-byte units: check the unaligned head,
// the body and the tail on a misaligned output, for 4- and 8-byte elements.
TEST_F(CpuElementwise, LargeAddWithStreamingStoresIsExact) {
  const int64_t n = (int64_t{1} << 22) + 7;  // 16 MiB + 28 bytes of f32
  std::vector<float> a(n + 1), b(n), out(n + 1, -1.0f);
  for (int64_t i = 0; i < n + 1; ++i) a[i] = static_cast<float>(i % 1000);
  for (int64_t i = 0; i < n; ++i) b[i] = static_cast<float>((i * 7) % 1000) - 500.0f;
  pk_tensor ta = tensor(a, kF32, {n}), tb = tensor(b, kF32, {n}), to = tensor(out, kF32, {n});
  to.byte_offset = 4;  // output starts 4 bytes past a 16-byte boundary (vector storage is at least 16-aligned)
  to.storage_bytes = (n + 1) * 4;
  ta.storage_bytes = (n + 1) * 4;
  ASSERT_EQ(launch(PK_OP_ADD, {ta, tb}, {to}, nullptr), PK_OK) << last_error().message;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += out[i + 1] != static_cast<float>(i % 1000) + b[i];
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(out[0], -1.0f);  // before the output: untouched

  // f64 (two lanes per 16 bytes), 32 MiB + 56 bytes.
  std::vector<double> p(n), q(n), r(n, -1.0);
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<double>(i % 4096), q[i] = 0.5;
  ASSERT_EQ(launch(PK_OP_MUL, {tensor(p, kF64, {n}), tensor(q, kF64, {n})}, {tensor(r, kF64, {n})}, nullptr), PK_OK)
      << last_error().message;
  bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += r[i] != static_cast<double>(i % 4096) * 0.5;
  EXPECT_EQ(bad, 0);
}

// Back-to-back parallel launches of sizes around the pool's split points: a worker that wakes late or joins after
// a job ended must neither lose a chunk nor run one of the next job with the previous job's arguments.
TEST_F(CpuElementwise, ManyParallelLaunchesOfMixedSizesAreExact) {
  const int64_t sizes[] = {(1 << 18) + 1, 1 << 19, 600001, 1 << 20, 5, (1 << 18) * 3 + 17};
  for (int round = 0; round < 40; ++round) {
    for (int64_t n : sizes) {
      std::vector<float> a(n), b(n), out(n, -1.0f);
      for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i & 1023), b[i] = static_cast<float>(round);
      ASSERT_EQ(launch(PK_OP_ADD, {tensor(a, kF32, {n}), tensor(b, kF32, {n})}, {tensor(out, kF32, {n})}, nullptr),
                PK_OK)
          << last_error().message;
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) bad += out[i] != static_cast<float>((i & 1023) + round);
      ASSERT_EQ(bad, 0) << "n = " << n << ", round " << round;
    }
  }
}

}  // namespace

namespace {

// digamma f64 where psi is tiny beside its terms: the doubles nearest its first five negative roots and its positive
// root, and points near roots from earlier conformance failures. Expected: mpmath.digamma at 300 bits, rounded to
// f64 (float(psi).hex()); the backend's contract is 4 ulps, here asked to be within 2.
TEST_F(CpuElementwise, DigammaF64NearItsRoots) {
  const struct {
    double x;
    uint64_t psi_bits;
  } cases[] = {
      {-0x1.02172b05ee260p-1, 0x3c9502e5780c52dau}, {-0x1.92d0cbc289d4ap+0, 0x3ca68dc0bb58132fu},
      {-0x1.4e2c19f679e5ap+1, 0xbcd34fdacb52af39u}, {-0x1.d1514b041b2a8p+1, 0xbcc6e558890267e6u},
      {-0x1.29cea5c1ccbd0p+2, 0x3cec6723103dc2cbu}, {0x1.762d86356be3fp+0, 0xbc9aa2d9b3ce29e0u},
      {-0x1.021504c6a3a83p-1, 0x3f23371793ce9550u}, {-0x1.92e164996bce7p+0, 0xbf64a109a3bf13ecu},
      {-0x1.ec03b898a3ea4p+2, 0x3f4c6b5ff7df3535u}, {-0x1.d14e977600854p+1, 0x3f4f784d13846746u},
  };
  std::vector<double> x, y(std::size(cases), 0.0);
  for (const auto &c : cases) x.push_back(c.x);
  const int64_t n = static_cast<int64_t>(x.size());
  ASSERT_EQ(launch(PK_OP_DIGAMMA, {tensor(x, kF64, {n})}, {tensor(y, kF64, {n})}, nullptr), PK_OK)
      << last_error().message;
  for (int64_t i = 0; i < n; ++i) {
    double want;
    std::memcpy(&want, &cases[i].psi_bits, 8);
    EXPECT_LE(std::fabs(y[i] - want), 2 * (std::nextafter(std::fabs(want), INFINITY) - std::fabs(want)))
        << "digamma(" << x[i] << ") = " << y[i] << ", want " << want;
  }
}

// Hurwitz zeta with a negative non-integer q (integer s): sum_k (k + q)^-s. zeta(2, -2.5) = (-2.5)^-2 + (-1.5)^-2 +
// (-0.5)^-2 + zeta(2, 1/2) = 4/25 + 4/9 + 4 + pi^2/2; zeta(3, -1.5) = -(8/27 + 8) + zeta(3, 1/2), zeta(3, 1/2) =
// 7 zeta(3). For q = -(93,500,000,000,000 + 1/2) the negative bases give pi^2/2 - zeta(2, m + 1/2) and the rest
// zeta(2, 1/2) = pi^2/2, so the sum is pi^2 - 1/(m + 1/2) + O(m^-2), m = 93,500,000,000,001. Stepping one unit at a
// time from q to 9 took weeks there; the launch must return at once.
TEST_F(CpuElementwise, HurwitzZetaOfNegativeQIsBoundedAndRight) {
  const double pi2 = 9.869604401089358, zeta3 = 1.2020569031595943;
  const double m = 93500000000001.0;
  std::vector<double> s = {2, 3, 2}, q = {-2.5, -1.5, -93500000000000.5}, y(3, 0.0);
  const double want[3] = {0.16 + 4.0 / 9 + 4 + pi2 / 2, -(8.0 / 27 + 8) + 7 * zeta3, pi2 - 1 / (m + 0.5)};
  ASSERT_EQ(launch(PK_OP_ZETA, {tensor(s, kF64, {3}), tensor(q, kF64, {3})}, {tensor(y, kF64, {3})}, nullptr), PK_OK)
      << last_error().message;
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(y[i], want[i], 4e-15 * std::fabs(want[i])) << "zeta(" << s[i] << ", " << q[i] << ")";
}

// zeta(s, q) for a non-integer s: each base q + k rounded to double before the power was off by up to s ulps of the
// term (zeta(22.74, 63.02) came out 14.5 ulp high); the bases are now exact. mpmath at 50 digits:
// 4.1837899575489197014386e-41.
TEST_F(CpuElementwise, HurwitzZetaKeepsTheBasesExact) {
  double s0, q0;
  const uint64_t sb = 0x4036bc992fe84778ull, qb = 0x404f820e098965f9ull;  // 22.73671245022658, 63.01605338295844
  std::memcpy(&s0, &sb, 8);
  std::memcpy(&q0, &qb, 8);
  std::vector<double> s = {s0}, q = {q0}, y(1, 0.0);
  ASSERT_EQ(launch(PK_OP_ZETA, {tensor(s, kF64, {1}), tensor(q, kF64, {1})}, {tensor(y, kF64, {1})}, nullptr), PK_OK)
      << last_error().message;
  EXPECT_NEAR(y[0], 4.1837899575489197014386e-41, 2 * 4.1837899575489197e-41 * 0x1p-53);  // 2 ulp
}

// zeta(2, q) = 1/q + 1/(2 q^2) + ...: 5.562684646268004e-309 for q = DBL_MAX (subnormal; mpmath), though every term
// (q + k)^-2 underflows to 0 (the sum stopped there and returned 0).
TEST_F(CpuElementwise, HurwitzZetaOfHugeQKeepsItsIntegralTail) {
  std::vector<double> s = {2}, q = {std::numeric_limits<double>::max()}, y(1, 0.0);
  ASSERT_EQ(launch(PK_OP_ZETA, {tensor(s, kF64, {1}), tensor(q, kF64, {1})}, {tensor(y, kF64, {1})}, nullptr), PK_OK)
      << last_error().message;
  EXPECT_NEAR(y[0], 5.562684646268004e-309, 2 * std::numeric_limits<double>::denorm_min());
}

}  // namespace
