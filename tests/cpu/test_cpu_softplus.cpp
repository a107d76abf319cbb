// CPU backend, the native softplus kernel (backends/cpu/kernels_softplus.cpp), through the public host API. The
// expected values are mpmath's (said where) or computed here in long double from the row's definition
//   bx = x * beta; out = bx > threshold ? x : log1p(exp(bx)) / beta
// with beta and threshold filled into the computing dtype (f32 for f16, bf16 and f32, by the row's opmath), never
// taken from a kernel run. The cpu.isa_avx2 and cpu.isa_generic CTest runs repeat every test here with the kernel
// capped at AVX2 and at the portable loop, so all three f32 paths are held to the same bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu_test_fixture.hpp"
#include "primkit/primkit.h"

namespace {

using pk_test::last_error;
using ld = long double;

const pk_dtype kF16 = PK_DTYPE_F16_DESC, kF32 = PK_DTYPE_F32_DESC, kF64 = PK_DTYPE_F64_DESC, kBF16 = PK_DTYPE_BF16_DESC;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The f32 program's value in long double: the switch on bx rounded to f32, else softplus(t) / beta for the exact
// t = x beta, as max(t, 0) + log1p(e^-|t|) (long double's own expl and log1pl; no cancellation in either tail).
ld reference32(float x, float beta, float threshold) {
  if (x * beta > threshold) return x;
  const ld t = static_cast<ld>(x) * beta;
  return ((t > 0 ? t : 0) + log1pl(expl(-fabsl(t)))) / beta;
}

// |a - ref| in ulps of ref in a format with `digits` significant bits whose smallest subnormal is 2^min_exp
// (f32: 24, -149). Infinities, zeros and NaN must match exactly, sign included: returns +inf when they do not.
double ulps_off(double a, ld ref, int digits, int min_exp) {
  if (std::isnan(ref)) return std::isnan(a) ? 0 : HUGE_VAL;
  if (std::isinf(ref) || ref == 0) {
    return static_cast<ld>(a) == ref && std::signbit(a) == std::signbit(static_cast<double>(ref)) ? 0 : HUGE_VAL;
  }
  int ex = 0;
  frexpl(fabsl(ref), &ex);
  return static_cast<double>(fabsl(static_cast<ld>(a) - ref) / ldexpl(1.0L, std::max(ex - digits, min_exp)));
}

class CpuSoftplus : public pk_test::CpuBackendTest {
 protected:
  // Launches softplus on f32 x and returns the worst ulp error against reference32, naming its input in `where`.
  double worst_f32(const std::vector<float> &x, double beta, double threshold, std::string &where) {
    std::vector<float> in = x, out(x.size(), -7.0f);
    pk_attrs_softplus a = PK_ATTRS_SOFTPLUS_INIT;
    a.beta = beta;
    a.threshold = threshold;
    const int64_t n = static_cast<int64_t>(x.size());
    EXPECT_EQ(launch(PK_OP_SOFTPLUS, {tensor(in, kF32, {n})}, {tensor(out, kF32, {n})}, &a), PK_OK)
        << last_error().message;
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const ld ref = reference32(x[i], static_cast<float>(beta), static_cast<float>(threshold));
      if (fabsl(ref) > std::numeric_limits<float>::max()) continue;  // overflows f32: checked by the specials
      const double e = ulps_off(out[i], ref, 24, -149);
      if (e > worst) {
        worst = e;
        char text[160];
        std::snprintf(text, sizeof text, "x = %a, beta = %g, threshold = %g: %a vs %.9Lg", static_cast<double>(x[i]),
                      beta, threshold, static_cast<double>(out[i]), ref);
        where = text;
      }
    }
    return worst;
  }
};

// The backend claims softplus as a native kernel for every dtype of the row (not as its decomposition).
TEST_F(CpuSoftplus, IsNativeForEveryFloatDtype) {
  for (pk_dtype dt : {kF16, kBF16, kF32, kF64}) {
    pk_tensor in;
    PK_STRUCT_INIT(in);
    in.dtype = dt;
    pk_op_query q;
    PK_STRUCT_INIT(q);
    q.op_id = PK_OP_SOFTPLUS;
    q.num_inputs = 1;
    q.inputs = &in;
    pk_op_support s;
    PK_STRUCT_INIT(s);
    ASSERT_EQ(pk_device_query_op(dev_, &q, &s), PK_OK);
    EXPECT_EQ(s.supported, 1) << s.reason;
    EXPECT_EQ(s.native, 1) << s.reason;
  }
}

// f32 over [-120, 30] every 2^-10 (153,601 inputs: a partial last vector, every x the switch passes through, and
// results down through the subnormals to 0 near x = -104), for the default attributes and for beta / threshold
// pairs that scale t, flip its sign, make it tiny, or move the switch. The kernel computes in double and rounds
// once: within 1 ulp everywhere (measured: 0.5001), where the contract allows 4.
TEST_F(CpuSoftplus, F32SweepIsWithinOneUlp) {
  std::vector<float> x;
  for (int64_t k = -120 * 1024; k <= 30 * 1024; ++k) x.push_back(static_cast<float>(std::ldexp(k, -10)));
  const struct {
    double beta, threshold;
  } pairs[] = {{1, 20}, {2, 20}, {0.25, 3}, {3, 0.25}, {-1, 20}, {-2.5, -4}, {1.0 / 3, 20}, {1e-3, 20}, {40, 1e30}};
  for (const auto &p : pairs) {
    std::string where;
    const double worst = worst_f32(x, p.beta, p.threshold, where);
    EXPECT_LE(worst, 1.0) << where;
  }
}

// Results below f32's normal range, for x from -87 down to -104 every 2^-16 (e^x crosses 2^-126 at x = -87.3 and
// 2^-150 at -103.97): each is e^x rounded once into the subnormals, never flushed. And mpmath's values at 300
// bits, rounded to f32, for a few inputs across the range.
TEST_F(CpuSoftplus, SubnormalResultsKeepTheirAccuracy) {
  std::vector<float> x;
  for (int64_t k = -104 * 65536; k <= -87 * 65536; ++k) x.push_back(static_cast<float>(std::ldexp(k, -16)));
  std::string where;
  EXPECT_LE(worst_f32(x, 1, 20, where), 1.0) << where;
  const struct {
    float x, want;
  } rows[] = {{-103.0f, 0x1p-149f},      {-100.0f, 0x1.bp-145f},    {-95.5f, 0x1.2acp-138f}, {-88.0f, 0x1.07b71p-127f},
              {-87.5f, 0x1.b2cafp-127f}, {-10.0f, 0x1.7cd564p-15f}, {-1.0f, 0x1.40c7acp-2f}, {0.0f, 0x1.62e43p-1f},
              {1.0f, 0x1.5031eap+0f},    {5.0f, 0x1.406e06p+2f},    {19.5f, 19.5f}};
  std::vector<float> in, out(std::size(rows));
  for (const auto &r : rows) in.push_back(r.x);
  const int64_t n = static_cast<int64_t>(in.size());
  pk_attrs_softplus a = PK_ATTRS_SOFTPLUS_INIT;
  ASSERT_EQ(launch(PK_OP_SOFTPLUS, {tensor(in, kF32, {n})}, {tensor(out, kF32, {n})}, &a), PK_OK);
  for (size_t i = 0; i < std::size(rows); ++i) {
    EXPECT_LE(ulps_off(out[i], rows[i].want, 24, -149), 1.0) << "softplus(" << rows[i].x << ") = " << out[i];
  }
}

// The decomposition's IEEE arithmetic at the special values, and its switch: bx = x beta rounded to f32 against
// the threshold rounded to f32. Expected values by hand: ln2 = 0.6931472 at 0, 0 at -inf (-0 for beta < 0: 0 /
// beta), x itself where bx > threshold, +inf at +inf when the switch cannot pass it (threshold +inf or NaN, where
// log1p(e^inf) = inf), and ln2 / 0 = inf when beta rounds to 0 in f32.
TEST_F(CpuSoftplus, SpecialValuesFollowTheDecomposition) {
  const float ln2 = 0.693147181f;
  struct Case {
    float x;
    double beta, threshold;
    float want;
  };
  const Case cases[] = {
      {0.0f, 1, 20, ln2},
      {-0.0f, 1, 20, ln2},
      {-kInf, 1, 20, 0.0f},
      {kInf, 1, 20, kInf},
      {kInf, 1, HUGE_VAL, kInf},
      {kInf, 1, std::nan(""), kInf},
      {-kInf, -1, 20, -kInf},        // bx = +inf > 20: x
      {kInf, -1, 20, -0.0f},         // bx = -inf: 0 / -1
      {-kInf, -1, HUGE_VAL, -kInf},  // inf / -1
      {21.0f, 1, 20, 21.0f},
      {20.0f, 1, 20, 20.0f},       // 20 + log1p(e^-20) = 20 + 2.06e-9 rounds to 20
      {3.0f, 2, 20, 3.00123784f},  // log1p(e^6) / 2 (mpmath: 3.0012378425...)
      {11.0f, 2, 20, 11.0f},       // bx = 22 > 20
      {1.0f, 1, 0.5, 1.0f},
      {0.25f, 1, 0.25, 0.825939420f},  // bx = 0.25 is not > 0.25: log1p(e^0.25) (mpmath: 0.82593941...)
      {1.0f, 1e-50, 20, kInf},         // beta rounds to +0 in f32: ln2 / 0
      {-5.0f, -1e-50, 20, -kInf},      // beta rounds to -0: ln2 / -0
      {1e30f, 1e30, 20, 1e30f},        // bx overflows to +inf > 20
      {-1e30f, 1e30, 20, 0.0f},        // bx = -inf: 0 / beta
      {-2.0f, 100, 1e30, 0.0f},        // e^-200 / 100 = 1.4e-89: 0 in f32
      {1e-30f, 1, -5, 1e-30f},         // the switch passes x for any bx > threshold
  };
  std::vector<float> x, out(std::size(cases));
  for (const Case &c : cases) {
    pk_attrs_softplus a = PK_ATTRS_SOFTPLUS_INIT;
    a.beta = c.beta;
    a.threshold = c.threshold;
    // One element, then the same element inside a 37-element run of its own (a full vector and a partial one).
    std::vector<float> one = {c.x}, y(1), many(37, c.x), ym(37);
    ASSERT_EQ(launch(PK_OP_SOFTPLUS, {tensor(one, kF32, {1})}, {tensor(y, kF32, {1})}, &a), PK_OK);
    ASSERT_EQ(launch(PK_OP_SOFTPLUS, {tensor(many, kF32, {37})}, {tensor(ym, kF32, {37})}, &a), PK_OK);
    const std::string what = "x = " + std::to_string(c.x) + ", beta = " + std::to_string(c.beta) +
                             ", threshold = " + std::to_string(c.threshold);
    for (float got : {y[0], ym[0], ym[20], ym[36]}) {
      EXPECT_LE(ulps_off(got, c.want, 24, -149), 1.0) << what << ": " << got;
    }
  }
  // NaN stays NaN, with any attributes.
  std::vector<float> nan(19, kNaN), out_nan(19);
  for (double beta : {1.0, -2.0, 0.0}) {
    pk_attrs_softplus a = PK_ATTRS_SOFTPLUS_INIT;
    a.beta = beta;
    ASSERT_EQ(launch(PK_OP_SOFTPLUS, {tensor(nan, kF32, {19})}, {tensor(out_nan, kF32, {19})}, &a), PK_OK);
    for (float v : out_nan) EXPECT_TRUE(std::isnan(v)) << "beta = " << beta;
  }
}

// f64 computes in long double: within 1 f64 ulp of mpmath's values (300 bits, rounded to f64), both tails
// included (e^-700 is a normal f64; -745 gives the smallest subnormal).
TEST_F(CpuSoftplus, F64MatchesMpmath) {
  const struct {
    double x, want;
  } rows[] = {{-745.0, 0x0.0000000000001p-1022}, {-700.0, 0x1.14f2b0fb9307fp-1010}, {-30.0, 0x1.a56e0c2ac7e1ap-44},
              {-1.0, 0x1.40c7abfbec124p-2},      {0.0, 0x1.62e42fefa39efp-1},       {1.0, 0x1.5031eafefb049p+0},
              {19.5, 0x1.38000000e986fp+4},      {30.0, 0x1.e00000000001ap+4}};
  std::vector<double> x, out(std::size(rows));
  for (const auto &r : rows) x.push_back(r.x);
  const int64_t n = static_cast<int64_t>(x.size());
  pk_attrs_softplus a = PK_ATTRS_SOFTPLUS_INIT;
  a.threshold = 100;  // 30 then takes the formula: 30 + 9.4e-14
  ASSERT_EQ(launch(PK_OP_SOFTPLUS, {tensor(x, kF64, {n})}, {tensor(out, kF64, {n})}, &a), PK_OK);
  for (size_t i = 0; i < std::size(rows); ++i) {
    EXPECT_LE(ulps_off(out[i], rows[i].want, 53, -1074), 1.0) << "softplus(" << rows[i].x << ") = " << out[i];
  }
}

// f16 and bf16 run the f32 program on exact f32 copies and round to their own format: within 1 ulp of that
// format against reference32 (the f32 switch included), subnormal results among them, and in a strided layout.
TEST_F(CpuSoftplus, NarrowFloatsRoundTheF32ProgramOnce) {
  for (pk_dtype dt : {kF16, kBF16}) {
    const bool half = dt.code == kF16.code;
    std::vector<uint16_t> x;
    for (uint32_t b = 0; b < 0x10000; b += 3) x.push_back(static_cast<uint16_t>(b));  // every third bit pattern
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<uint16_t> out(x.size());
    pk_attrs_softplus a = PK_ATTRS_SOFTPLUS_INIT;
    a.beta = 1.5;
    a.threshold = 10;
    ASSERT_EQ(launch(PK_OP_SOFTPLUS, {tensor(x, dt, {n})}, {tensor(out, dt, {n})}, &a), PK_OK);
    const auto value = [&](uint16_t h) -> float {
      if (!half) {
        const uint32_t u = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
      }
      const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
      const float sign = (h & 0x8000) ? -1.0f : 1.0f;
      if (e == 0x1f) return m ? kNaN : sign * kInf;
      return sign * static_cast<float>(e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25));
    };
    const int digits = half ? 11 : 8, min_exp = half ? -24 : -133;
    const ld top = half ? 65504.0L : static_cast<ld>(std::numeric_limits<float>::max());
    for (size_t i = 0; i < x.size(); ++i) {
      const ld ref = reference32(value(x[i]), 1.5f, 10.0f);
      if (fabsl(ref) > top) continue;
      const double e = ulps_off(value(out[i]), ref, digits, min_exp);
      EXPECT_LE(e, 1.0) << (half ? "f16 " : "bf16 ") << std::hex << x[i] << " -> " << out[i];
    }
    // Strided: every second element of a [4, 6] buffer viewed as [4, 3].
    std::vector<uint16_t> base(24), sout(12, 0);
    for (size_t i = 0; i < base.size(); ++i) base[i] = x[i * 97 % x.size()];
    ASSERT_EQ(launch(PK_OP_SOFTPLUS, {tensor(base, dt, {4, 3}, {6, 2})}, {tensor(sout, dt, {4, 3})}, &a), PK_OK);
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 3; ++c) {
        const ld ref = reference32(value(base[static_cast<size_t>(r * 6 + c * 2)]), 1.5f, 10.0f);
        if (fabsl(ref) <= top) {
          EXPECT_LE(ulps_off(value(sout[static_cast<size_t>(r * 3 + c)]), ref, digits, min_exp), 1.0);
        }
      }
    }
  }
}

}  // namespace
