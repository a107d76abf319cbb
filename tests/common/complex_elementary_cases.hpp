// complex_elementary_cases.hpp — exp, log, sin, cos and tanh of complex arguments against mpmath at 600 bits, shared
// by the backends' tests (values only, no test framework). The three backends evaluate them with one source (the
// device math, sdk/devmath/complex.h) in double-double, so each part of a c128 result is within an ulp of its own
// magnitude (a c64 result, rounded once more, within an ulp of float). The arguments reach the branches: |x| > 700
// (e^x scaled apart), |z| near 1 for log, huge and subnormal parts, tanh beyond |x| = 40, angles beyond 2^30.
// Each row: {op, x, y, want.re, want.im} for the argument x + iy.
#pragma once

#include <cmath>
#include <cstdint>

#include "primkit/primkit.h"

namespace pk::test {

struct ComplexElementaryCase {
  uint32_t op;
  double x, y, re, im;
};

inline constexpr ComplexElementaryCase kComplexElementaryCases[] = {
    {PK_OP_EXP, 0x1.0000000000000p-1, 0x1.4000000000000p+0, 0x1.0a2d8a04967e6p-1,
     0x1.908a5ad790ab7p+0},  // (0.519879 + 1.56461j)
    {PK_OP_EXP, -0x1.8000000000000p+1, 0x1.4000000000000p+1, -0x1.46c03f0081f41p-5,
     0x1.e82e35bdac97ap-6},  // (-0.0398866 + 0.0297962j)
    {PK_OP_EXP, 0x1.60c0000000000p+9, 0x1.8000000000000p-1, 0x1.4afe0323bda67p+1017,
     0x1.3459e7e6942f8p+1017},  // (1.81586e+306 + 1.69165e+306j)
    {PK_OP_EXP, 0x1.6280000000000p+9, -0x1.8000000000000p+1, -0x1.cf737ee9e5e75p+1022,
     -0x1.0840e1766e12ap+1020},  // (-8.13616e+307 - 1.15978e+307j)
    {PK_OP_EXP, 0x1.4f8b588e368f1p-17, 0x1.56e1fc2f8f359p-997, 0x1.0000a7c5e340ep+0,
     0x1.56e2dce60700fp-997},  // (1.00001 + 1.00001e-300j)
    {PK_OP_EXP, -0x1.5e00000000000p+9, 0x1.0000000000000p+1, -0x1.cd011080b275fp-1012,
     0x1.f7a7fec56025dp-1011},  // (-4.10307e-305 + 8.96538e-305j)
    {PK_OP_EXP, 0x1.0000000000000p+1, 0x1.5af1d78b58c40p+66, 0x1.694802b4a9b8fp+2,
     -0x1.312399fda4ecep+2},  // (5.64502 - 4.7678j)
    {PK_OP_EXP, -0x1.0000000000000p-2, -0x1.0624dd2f1a9fcp-10, 0x1.8ebeecd9dbaebp-1,
     -0x1.9850daafee384p-11},  // (0.7788 - 0.000778801j)
    {PK_OP_LOG, 0x1.3333333333333p-1, 0x1.999999999999ap-1, 0x1.999999999999ap-56,
     0x1.dac670561bb50p-1},  // (2.22045e-17 + 0.927295j)
    {PK_OP_LOG, 0x1.0000000000000p+0, 0x1.5798ee2308c3ap-27, 0x1.cd2b297d889bcp-55,
     0x1.5798ee2308c3ap-27},  // (5.0e-17 + 1.0e-8j)
    {PK_OP_LOG, 0x1.fffffca501acbp-1, 0x1.a36e2eb1c432dp-14, -0x1.98059be7d799cp-24,
     0x1.a36e3159ff667p-14},  // (-9.5e-8 + 0.0001j)
    {PK_OP_LOG, 0x1.8000000000000p+1, -0x1.0000000000000p+2, 0x1.9c041f7ed8d33p+0,
     -0x1.dac670561bb4fp-1},  // (1.60944 - 0.927295j)
    {PK_OP_LOG, 0x1.7e43c8800759cp+996, 0x1.7e43c8800759cp+996, 0x1.598fa10585efcp+9,
     0x1.921fb54442d18p-1},  // (691.122 + 0.785398j)
    {PK_OP_LOG, 0x0.012688b70e62bp-1022, 0x0.00000000017b8p-1022, -0x1.64e69394d9508p+9,
     0x1.49d98d8cd7e40p-32},  // (-713.801 + 2.99997e-10j)
    {PK_OP_LOG, -0x1.4000000000000p+1, 0x0.0p+0, 0x1.d5240f0e0e078p-1, 0x1.921fb54442d18p+1},  // (0.916291 + 3.14159j)
    {PK_OP_LOG, 0x1.8000000000000p+0, 0x1.3333333333333p+0, 0x1.4e3d891a20a5ap-1,
     0x1.5977a5103ea92p-1},  // (0.652813 + 0.674741j)
    {PK_OP_SIN, 0x1.0000000000000p-1, 0x1.4000000000000p+0, 0x1.cf8b2abbfa7c8p-1,
     0x1.67e392e3c9db4p+0},  // (0.905359 + 1.40582j)
    {PK_OP_SIN, -0x1.8000000000000p+1, 0x1.4000000000000p+1, -0x1.bb143ba81656bp-1,
     -0x1.7f568a7a53d74p+2},  // (-0.865389 - 5.98966j)
    {PK_OP_SIN, 0x1.0000000000000p+0, 0x1.6080000000000p+9, 0x1.cdc1babb6e9f2p+1015,
     0x1.287d982a30bd0p+1015},  // (6.33314e+305 + 4.06646e+305j)
    {PK_OP_SIN, 0x1.0624dd2f1a9fcp-10, -0x1.4000000000000p+4, 0x1.d9cb4754c5076p+17,
     -0x1.ceb0798d3c438p+27},  // (242583.0 - 2.42582e+8j)
    {PK_OP_SIN, 0x1.9000000000000p+6, 0x1.0c6f7a0b5ed8dp-20, -0x1.03425b78c56a0p-1,
     0x1.cef4340fd1ec7p-21},  // (-0.506366 + 8.62319e-7j)
    {PK_OP_SIN, 0x1.921fb54442d18p+1, 0x1.0000000000000p-1, 0x1.3e6c849827146p-53,
     -0x1.0acd00fe63b97p-1},  // (1.38094e-16 - 0.521095j)
    {PK_OP_COS, 0x1.0000000000000p-1, 0x1.4000000000000p+0, 0x1.a84165617a381p+0,
     -0x1.89376a932144bp-1},  // (1.65725 - 0.768001j)
    {PK_OP_COS, -0x1.8000000000000p+1, 0x1.4000000000000p+1, -0x1.8489f6702d18dp+2,
     0x1.b525eaa1613c6p-1},  // (-6.07092 + 0.853805j)
    {PK_OP_COS, 0x1.0000000000000p+0, -0x1.6080000000000p+9, 0x1.287d982a30bd0p+1015,
     0x1.cdc1babb6e9f2p+1015},  // (4.06646e+305 + 6.33314e+305j)
    {PK_OP_COS, 0x1.921fb54442d18p+0, 0x1.0624dd2f1a9fcp-10, 0x1.1a626c7215866p-54,
     -0x1.0624e00c1c9e3p-10},  // (6.12324e-17 - 0.001j)
    {PK_OP_COS, 0x1.c000000000000p+2, 0x1.e000000000000p+4, 0x1.d4f40f04ca6dcp+41,
     -0x1.98ab1fd536a35p+41},  // (4.02828e+12 - 3.51044e+12j)
    {PK_OP_COS, 0x1.5798ee2308c3ap-27, 0x1.5798ee2308c3ap-27, 0x1.0000000000000p+0,
     -0x1.cd2b297d889bdp-54},  // (1.0 - 1.0e-16j)
    {PK_OP_TANH, 0x1.0000000000000p-1, 0x1.4000000000000p+0, 0x1.957ea295f00e5p+0,
     0x1.9cff3926c4b1fp-1},  // (1.58396 + 0.806635j)
    {PK_OP_TANH, -0x1.8000000000000p+1, 0x1.4000000000000p+1, -0x1.ff4654a9d6a74p-1,
     -0x1.371c3c4935287p-8},  // (-0.998583 - 0.00474717j)
    {PK_OP_TANH, 0x1.47ae147ae147bp-7, 0x1.921fb54442d18p+0, 0x1.900369ceb8d79p+6,
     0x1.58b2291322c9ep-41},  // (100.003 + 6.12303e-13j)
    {PK_OP_TANH, 0x1.4f8b588e368f1p-17, 0x1.4f8b588e368f1p-17, 0x1.4f8b588e96a2cp-17,
     0x1.4f8b588dd67b6p-17},  // (1.0e-5 + 1.0e-5j)
    {PK_OP_TANH, 0x1.9000000000000p+4, 0x1.0000000000000p+1, 0x1.0000000000000p+0,
     -0x1.60edfb997b685p-72},  // (1.0 - 2.91937e-22j)
    {PK_OP_TANH, -0x1.4000000000000p+5, -0x1.0000000000000p+0, -0x1.0000000000000p+0,
     -0x1.5d0886cfaa6b9p-115},  // (-1.0 - 3.28229e-35j)
    {PK_OP_TANH, 0x1.3333333333333p-2, 0x0.012688b70e62bp-1022, 0x1.2a4dda7d914fap-2,
     0x0.010d89fb36a4cp-1022},  // (0.291313 + 9.15137e-311j)
    {PK_OP_TANH, 0x1.4000000000000p+2, 0x1.9000000000000p+6, 0x1.fffa339823010p-1,
     -0x1.4c92e22af4babp-14},  // (0.999956 - 7.92918e-5j)
    {PK_OP_TANH, -0x1.9000000000000p+6, 0x1.0000000000000p-1, -0x1.0000000000000p+0,
     0x1.2884ae35a6b48p-288},  // (-1.0 + 2.32902e-87j)

    // Angles reduced by Payne-Hanek (the device math's bignum.h), where the builtins' sin and cos were used before.
    {PK_OP_EXP, 0x1.0000000000000p-1, 0x1.7e43c8800759cp+996, -0x1.e5b5a043962ccp-1,
     -0x1.5934a108cb10ep+0},  // (-0.948651 - 1.34846j): exp, the angle 1e300 (Payne-Hanek)
    {PK_OP_EXP, 0x1.0000000000000p+1, 0x1.fffffffffffffp+1023, -0x1.d8e4ce05f87c3p+2,
     0x1.2c5a52401d719p-5},  // (-7.38897 + 0.0366642j): exp, the angle the largest double
    {PK_OP_SIN, 0x1.0f0cf064dd592p+73, 0x1.0000000000000p-1, -0x1.ec0372acd4852p-1,
     0x1.173030af6757cp-2},  // (-0.960964 + 0.272645j): sin, the real part 1e22 the angle
    {PK_OP_COS, -0x1.921fb54442d18p+40, 0x1.0000000000000p-2, 0x1.080ab0529be5dp+0,
     -0x1.1d55c4dcb03fdp-16},  // (1.03141 - 1.70073e-5j): cos, the angle -2^40.65
    {PK_OP_TANH, 0x1.8000000000000p-1, 0x1.4e718d7d7625ap+664, 0x1.b01915a0433e6p-1,
     -0x1.8fe9a6a1d83b1p-2},  // (0.843941 - 0.39054j): tanh, the angle 1e200
};

// Distance of `got` from the exact `want` in ulps of want's own binade in a format of `mant` significand bits
// (53: f64, 24: f32), with the least normal's spacing below it; a result of the other sign of zero counts as wrong.
inline double complex_part_ulps(double got, double want, int mant) {
  if (want == 0.0) return got == 0.0 && std::signbit(got) == std::signbit(want) ? 0.0 : INFINITY;
  if (!std::isfinite(got)) return INFINITY;
  const int min_exp = mant == 53 ? -1022 : -126;
  const int e = std::fabs(want) < std::ldexp(1.0, min_exp) ? min_exp : std::ilogb(want);
  return std::fabs(got - want) / std::ldexp(1.0, e - (mant - 1));
}

}  // namespace pk::test
