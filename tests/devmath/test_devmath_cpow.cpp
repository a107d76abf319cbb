// The device math's complex pow (sdk/devmath/cpow.h) as C++, the source the OpenCL backend and the code generator
// also compile: its fixed-point log a against mpmath word by word, and a^b where b log a is huge against mpmath at
// 4000 bits (pow_huge_phase_cases.hpp, which the cuda-emu and OpenCL tests check through their kernels, and the CPU
// test through its own MPFR path). Independent references only: mpmath values, never the code's own output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "devmath.hpp"
#include "pow_huge_phase_cases.hpp"

namespace {

namespace dm = pk::devmath;

// The exact path's format at its widest (|b| near 2^1024): 36 words below the point, one above.
constexpr int kFl = 36, kN = kFl + 1;

struct FixedLogCase {
  double x, y;
  std::uint32_t log_abs[kN], arg[kN];  // floor(v 2^(32 fl)) in two's complement, least significant word first
};

// From mpmath at 1600 bits.
const FixedLogCase kFixedLogCases[] = {
    {
        -0x1.8p-3,
        -0x1.4p+2,  // third quadrant, |y| > |x|
        {0x54ff5604u, 0xa6357ea6u, 0x3d1ec623u, 0x6131d2b4u, 0x8bd06fecu, 0x2556f6c6u, 0xa509705au, 0x04d6af31u,
         0x4b6573bdu, 0xe5933d26u, 0x233a8de3u, 0x6ff0b5c7u, 0x524c6b7cu, 0xe64fb690u, 0x9f2aaf82u, 0x94f759a7u,
         0x250177b1u, 0xdff331c4u, 0x7065e270u, 0x62f1f867u, 0x8c1770e1u, 0xc20addc0u, 0x1afe5436u, 0x323d4986u,
         0xe1946c69u, 0xdadd4aebu, 0x3b1729b1u, 0xd66c291cu, 0x9db16ebdu, 0x1d25a792u, 0x76b02531u, 0x0311208eu,
         0x960bd3dau, 0x9d51d3bbu, 0x5960b1ffu, 0x9c322bb0u, 0x00000001u},
        {0xb652603fu, 0x8d52df13u, 0x786256dfu, 0xef3c9cd2u, 0x2e4daa54u, 0x5a19cd25u, 0xbc21bf24u, 0xa25b4a9cu,
         0x88a61152u, 0x771b29e3u, 0xcc728066u, 0xe470aba7u, 0x662fbd29u, 0xa2eee3b8u, 0x900cbd91u, 0xe2b55546u,
         0x4a623b84u, 0xf53f7373u, 0x2e63d334u, 0xf176ef82u, 0xd3df214fu, 0x48055ae1u, 0x8ae3d4d1u, 0xe016160du,
         0xb7539ee9u, 0x6964ab49u, 0xede32988u, 0xd2c7afd2u, 0xcc177565u, 0x2ebda1acu, 0x89001ffbu, 0x1d1db820u,
         0x2ad3ab40u, 0xf5a5b30bu, 0xf9526d59u, 0x6447d7cbu, 0xfffffffeu},
    },
    {
        0x1.6666666666666p-1,
        -0x1.999999999999ap-3,  // |a| < 1 (a negative log), fourth quadrant
        {0x88a5be17u, 0x63cec824u, 0xa65b5f26u, 0x377d39e3u, 0x790781fcu, 0x66287f11u, 0x0f19367bu, 0x0f9310f3u,
         0x5d94e575u, 0x13164524u, 0x480969e9u, 0x2b1e28e6u, 0x6d200560u, 0xaeab779fu, 0x2386948fu, 0x6010c8ffu,
         0x95660473u, 0x4278389eu, 0x7f62d643u, 0xa10c0810u, 0xde95c0cfu, 0xd8bf16b7u, 0x2fb39272u, 0xca159e76u,
         0xb2fb0047u, 0xbfb04ca9u, 0x1c9b8184u, 0x2be17bdfu, 0x40ed0010u, 0xfcb92f45u, 0xe2aee684u, 0x903d88f3u,
         0x174e6c26u, 0x93205975u, 0x7927f6ffu, 0xaebc4f0bu, 0xffffffffu},
        {0x6d3afeefu, 0xc423a017u, 0x38580ee6u, 0xe475577du, 0x093b1652u, 0x2a94d228u, 0xd4a99db5u, 0x70f5eebbu,
         0xd149fb78u, 0xc04e20c7u, 0x4ea07e60u, 0x717debb1u, 0x3ef12d43u, 0xdad27512u, 0xbda7e49eu, 0xe010857du,
         0xdae1d75eu, 0xd544d9b8u, 0xd6eafc2bu, 0x6dd8435fu, 0x551e9953u, 0x8b9d709cu, 0x6f3bb53cu, 0x8deca5c3u,
         0xc3c32f74u, 0x1f46aa22u, 0x3b4f47f9u, 0x3ac65328u, 0x949ac98eu, 0x75cc4015u, 0x7da28055u, 0x00672d9bu,
         0x825cb9ebu, 0xc76b41d3u, 0x15c8c466u, 0xb8c15a82u, 0xffffffffu},
    },
    {
        0x0.0000000000001p-1022,
        0x0p+0,  // the least subnormal: -1074 ln 2
        {0x4fef8274u, 0xd6a88d34u, 0x781a9c48u, 0x9f08408fu, 0x06312732u, 0xacb94746u, 0x4804fec8u, 0xb4cc56dcu,
         0x45cd0c46u, 0x7bb67a2au, 0xad149c84u, 0x598ab8d9u, 0x82f48578u, 0xf1aedff7u, 0x89e047dcu, 0x05be8502u,
         0x64dafc58u, 0x94c723deu, 0x21bb7515u, 0x6b642f24u, 0xf27973bfu, 0xf409cdb4u, 0x62847012u, 0xf229227bu,
         0x72ba72fcu, 0xf389ddbfu, 0xd945e8e8u, 0xdc206bf2u, 0x0cb273cdu, 0xd51401f0u, 0x3b53b4f2u, 0x837048b3u,
         0x6eb114c1u, 0x02b88c3fu, 0xc7938d4bu, 0x8f577251u, 0xfffffd17u},
        {0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u,
         0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u,
         0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u,
         0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u,
         0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u},
    },
};

// |got - want| in units of the last word (2^-1152), or UINT64_MAX where it does not fit one word.
std::uint64_t units_apart(const std::uint32_t *got, const std::uint32_t *want) {
  std::uint32_t d[kN];
  dm::pk_dm_bn_sub(d, got, want, kN);
  if (dm::pk_dm_bn_negative(d, kN)) dm::pk_dm_bn_negate(d, kN);
  for (int i = 1; i < kN; ++i)
    if (d[i] != 0u) return UINT64_MAX;
  return d[0];
}

TEST(DevmathCpow, FixedPointLogAgainstMpmath) {
  // log|a| and arg a as the exact path computes them (atanh and atan series, Newton reciprocals and square roots,
  // the ln 2 and pi / 4 tables): ~1150 bits, where pow needs |log2 |b|| + 100 <= 1124.
  for (const auto &c : kFixedLogCases) {
    std::uint32_t lr[PK_DM_BN_WORDS], li[PK_DM_BN_WORDS];
    dm::pk_dm_bn_clog(lr, li, c.x, c.y, kN, kFl);
    EXPECT_LE(units_apart(lr, c.log_abs), 1u << 12) << "log|a| of " << c.x << " + " << c.y << "i";
    EXPECT_LE(units_apart(li, c.arg), 1u << 12) << "arg a of " << c.x << " + " << c.y << "i";
  }
}

TEST(DevmathCpow, PowWithHugePhaseAgainstMpmath) {
  // Every part within an ulp of the larger part's magnitude (the op's contract allows 16; the double-double result of
  // the exact path is rounded once). c64 operands are floats; the caller narrows the result to float, as the backends
  // do.
  const auto check = [](const auto &cases, size_t count, int f32) {
    const int p = f32 ? 24 : 53;
    for (size_t i = 0; i < count; ++i) {
      const double *c = cases[i];
      double w[2];
      dm::pk_dm_cpow(c[0], c[1], c[2], c[3], f32, w);
      if (f32) {
        w[0] = static_cast<float>(w[0]);
        w[1] = static_cast<float>(w[1]);
      }
      const double big = std::max(std::fabs(c[4]), std::fabs(c[5]));
      const double ulp = big == 0.0 ? 0x1p-1074 : std::ldexp(1.0, std::ilogb(big) - (p - 1));
      EXPECT_LE(std::fabs(w[0] - c[4]), ulp) << (f32 ? "c64" : "c128") << " case " << i;
      EXPECT_LE(std::fabs(w[1] - c[5]), ulp) << (f32 ? "c64" : "c128") << " case " << i;
    }
  };
  check(pk::test::kPowHugePhaseC128, std::size(pk::test::kPowHugePhaseC128), 0);
  check(pk::test::kPowHugePhaseC64, std::size(pk::test::kPowHugePhaseC64), 1);
}

TEST(DevmathCpow, CasesOfTheOracle) {
  // Worked by hand: b = 0 gives 1 (0^0 and inf^0 too), a = 0 with a real b > 0 gives 0, a real power of a positive
  // real keeps a zero imaginary part, (-1)^(1/2) = i (to the rounding of pi / 2's cosine), 2^10 = 1024 exactly.
  double w[2];
  const double inf = std::numeric_limits<double>::infinity();
  for (const double a : {0.0, inf, 3.0}) {
    dm::pk_dm_cpow(a, 0.0, 0.0, 0.0, 0, w);
    EXPECT_EQ(w[0], 1.0);
    EXPECT_EQ(w[1], 0.0);
  }
  dm::pk_dm_cpow(0.0, 0.0, 2.5, 0.0, 0, w);
  EXPECT_EQ(w[0], 0.0);
  EXPECT_EQ(w[1], 0.0);
  dm::pk_dm_cpow(2.0, 0.0, 10.0, 0.0, 0, w);
  EXPECT_EQ(w[0], 1024.0);
  EXPECT_EQ(w[1], 0.0);
  dm::pk_dm_cpow(-1.0, 0.0, 0.5, 0.0, 1, w);
  EXPECT_LE(std::fabs(w[0]), 0x1p-50);
  EXPECT_EQ(static_cast<float>(w[1]), 1.0f);
}

}  // namespace
