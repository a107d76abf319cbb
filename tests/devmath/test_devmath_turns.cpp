// The device math's reduction of a huge angle (sdk/devmath/bignum.h, pk_dm_bn_turns: Payne-Hanek on the 1280-bit
// 1 / (2 pi) table), which complex exp, sin, cos, tanh and polar take beyond |angle| = 2^30 on every backend, against
// mpmath at 3000 bits: the turn a / (2 pi) modulo 1 and polar(1, a) = cos a + i sin a.
#include <gtest/gtest.h>

#include <cmath>

#include "devmath.hpp"

namespace {

namespace dm = pk::devmath;

struct TurnCase {
  double a, turn_hi, turn_lo, cos_a, sin_a;  // the turn in [-1/2, 1/2) as a double-double; cos and sin rounded
};

const TurnCase kTurnCases[] = {
    {0x1p+30, -0x1.b1bbead603d8bp-4, 0x1.f47d4d377036ep-58, 0x1.92cb46a920144p-1, -0x1.3c12353728cafp-1},
    {-0x1.921fb54442d18p+40, 0x1.678afae35cdd1p-17, -0x1.3d4cda9cb7107p-73, 0x1.ffffffec88318p-1,
     0x1.1a62632db1824p-14},
    {0x1.7e43c8800759cp+996, -0x1.63ea7711d02fcp-2, 0x1.3be5b514521eep-57, -0x1.2699022adc4c1p-1,
     -0x1.a2c16b010e385p-1},
    {0x1.fffffffffffffp+1023, 0x1.ff30fa985ac6cp-2, -0x1.bf737517285d4p-56, -0x1.fffe62ecfab75p-1,
     0x1.452fc98b34e97p-8},
    {-0x1.0f0cf064dd592p+73, 0x1.4c86b083da1b8p-3, -0x1.997a337589e4fp-57, 0x1.0be2cef01c8f4p-1, 0x1.b453ab76bf397p-1},
    {0x1.cbe991a145852p+36, -0x1.ba78ef5790c12p-2, 0x1.684297e1179f8p-56, -0x1.d21c2dac33789p-1, -0x1.a7b937381844cp-2},
};

TEST(DevmathTurns, HugeAnglesAgainstMpmath) {
  for (const auto &c : kTurnCases) {
    const dm::pk_dm_dd t = dm::pk_dm_bn_turns(c.a);
    // ~110 bits below the point whatever a's exponent (2^-100 leaves room for the double-double's own rounding).
    EXPECT_LE(std::fabs((t.hi - c.turn_hi) + (t.lo - c.turn_lo)), 0x1p-100) << c.a;
    // The parts from the double-double sine and cosine, rounded once: within half an ulp (and a hair).
    double w[2];
    dm::pk_dm_cpolar(1.0, c.a, w);
    const auto ulps = [](double got, double want) {
      return std::fabs(got - want) / std::ldexp(1.0, std::ilogb(want) - 52);
    };
    EXPECT_LE(ulps(w[0], c.cos_a), 0.5001) << c.a;
    EXPECT_LE(ulps(w[1], c.sin_a), 0.5001) << c.a;
  }
}

}  // namespace
