// lgamma_cases.hpp — ln |Gamma(x)| against mpmath at 1000 bits, rounded to nearest in double (generated once, values
// only, no test framework). The three backends evaluate it with one source (the device math, sdk/devmath/igamma.h),
// in double-double and rounded once, so each f64 result must be within an ulp of its own magnitude, including
// near the zeros at 1 and 2 (relative accuracy, where the table's contract only asks for absolute) and 2^-30 and
// 2^-20 from the zeros below -2, where the reflection's two terms cancel. The rows reach every branch: the series
// around 1 and 2, the recurrence down from [2.5, 12), Stirling's series, the scaled form beyond 1e17 (and its
// overflow), tiny |x|, the reflection below 0, the poles.
#pragma once

#include <cmath>
#include <limits>

namespace pk::test {

struct LgammaCase {
  double x, want;
};

inline constexpr double kLgammaInf = std::numeric_limits<double>::infinity();

inline constexpr LgammaCase kLgammaCases[] = {
    {0x1.0000000000000p+0, 0x0.0p+0},                    // zero at 1
    {0x1.0000000000000p+1, 0x0.0p+0},                    // zero at 2
    {0x1.0000000000001p+0, -0x1.2788cfc6fb617p-53},      // next above 1: -gamma 2^-52
    {0x1.fffffffffffffp-1, 0x1.2788cfc6fb61ap-54},       // next below 1
    {0x1.0000000000001p+1, 0x1.b0ee6072093d1p-53},       // next above 2
    {0x1.fffffffffffffp+0, -0x1.b0ee6072093cdp-54},      // next below 2
    {0x1.0000100000000p+0, -0x1.2788b57555cc6p-21},      // near 1
    {0x1.fae147ae147aep-1, 0x1.7fb35b942e13bp-8},        // near 1
    {0x1.762d86356be3fp+0, -0x1.f19b9bcc38a42p-4},       // the minimum near 1.4616
    {0x1.fff972474538fp+0, -0x1.62a151ce4a3dfp-15},      // near 2
    {0x1.2666666666666p+1, 0x1.3bc7ae538475dp-3},        // near 2
    {0x1.0000000000000p-1, 0x1.250d048e7a1bdp-1},        // ln sqrt(pi)
    {0x1.4000000000000p+1, 0x1.2383e809a67e8p-2},        // [2.5, 12): down by the recurrence
    {0x1.8000000000000p+1, 0x1.62e42fefa39efp-1},        // ln 2
    {0x1.d000000000000p+2, 0x1.c35701a50ff06p+2},        // recurrence
    {0x1.7fae147ae147bp+3, 0x1.17a56b585af84p+4},        // recurrence
    {0x1.8000000000000p+3, 0x1.180973f3a8d74p+4},        // Stirling above 12
    {0x1.e800000000000p+4, 0x1.23d05ac006be7p+6},        // Stirling
    {0x1.86a0400000000p+16, 0x1.00a9a965301c8p+20},      // Stirling
    {0x1.6345785d8a000p+56, 0x1.a77b9ddb24c20p+61},      // large: scaled form
    {0x1.7e43c8800759cp+996, 0x1.017f38e7a1ab5p+1006},   // large
    {0x1.74c4124f14eb0p+1014, 0x1.ff4324deb3e3bp+1023},  // just below the overflow
    {0x1.7b236a943b4a5p+1014, kLgammaInf},               // overflows
    {0x1.fffffffffffffp+1023, kLgammaInf},               // largest double: overflows
    {0x1.0000000000000p-60, 0x1.4cb5ecf0a9650p+5},       // tiny: -log x
    {-0x1.0000000000000p-60, 0x1.4cb5ecf0a9650p+5},      // tiny negative
    {0x0.0000000000001p-1022, 0x1.74385446d71c3p+9},     // least subnormal
    {0x1.3333333333333p-2, 0x1.188637a6c4196p+0},        // (0, 0.5)
    {0x1.b7cdfd9d7bdbbp-34, 0x1.7069e2aa26ae4p+4},       // small
    {-0x1.0000000000000p-1, 0x1.43f89a3f0edd6p+0},       // ln 2 sqrt(pi)
    {-0x1.4000000000000p+1, -0x1.ccbf9f5ed0f16p-5},      // ln(8 sqrt(pi) / 15)
    {-0x1.8000000000000p+0, 0x1.b858151820f86p-1},       // reflection
    {-0x1.999999999999ap-4, 0x1.2f3a1ffcc7843p+1},       // reflection near 0
    {-0x1.8000000036f9cp+1, 0x1.53bed699c203fp+4},       // near a pole
    {-0x1.9133333333333p+6, -0x1.6bc42616a0967p+8},      // reflection, large
    {-0x1.2a05f20040000p+33, -0x1.9a43711051a31p+37},    // reflection, huge
    {-0x1.0000000000002p+4, 0x1.e7f360606a8d8p+0},       // near the pole -16 (8.26 ulp in the emitter's former lgamma)
    {-0x0.0p+0, kLgammaInf},                             // pole (-0)
    {-0x1.0000000000000p+1, kLgammaInf},                 // pole
    {-0x1.0000000000000p+52, kLgammaInf},                // pole: every double beyond 2^52 is an integer
    {-0x1.3a7fc95b2587ap+1, 0x1.dca7efa6efebfp-29},      // near the zero -2.457025
    {-0x1.3a7fc964f985ep+1, -0x1.dca7ee2e7ac31p-29},     // near the zero -2.457025
    {-0x1.3a7fb5b812f0cp+1, 0x1.dca8dba3446dbp-19},      // near the zero -2.457025
    {-0x1.3a7fdd080c1ccp+1, -0x1.dca7065d374dfp-19},     // near the zero -2.457025
    {-0x1.5fb4109c3ebfdp+1, -0x1.50a445b7328b0p-28},     // near the zero -2.747683
    {-0x1.5fb410a73c605p+1, 0x1.50a447d77f8a8p-28},      // near the zero -2.747683
    {-0x1.5fb3faa67c85fp+1, -0x1.50a326394568ap-18},     // near the zero -2.747683
    {-0x1.5fb4269cfe9a3p+1, 0x1.50a5688c5d094p-18},      // near the zero -2.747683
    {-0x1.9260dbc39c178p+1, 0x1.876864288dc67p-26},      // near the zero -3.143581
    {-0x1.9260dbd02f1e6p+1, -0x1.87685fd62abfap-26},     // near the zero -3.143581
    {-0x1.9260c2a3d7de5p+1, 0x1.87696110bde82p-16},      // near the zero -3.143581
    {-0x1.9260f4eff3579p+1, -0x1.87676286a0615p-16},     // near the zero -3.143581
    {-0x1.fa47153fd9e20p+1, -0x1.47e513cbf6badp-24},     // near the zero -3.955294
    {-0x1.fa47154fac1aap+1, 0x1.47e5157c7bebdp-24},      // near the zero -3.955294
    {-0x1.fa46f5a351a9dp+1, -0x1.47e13d0c5233cp-14},     // near the zero -3.955294
    {-0x1.fa4734ec3452dp+1, 0x1.47e8ee012b632p-14},      // near the zero -3.955294
    {-0x1.0284e7818f447p+2, 0x1.b0dda48f574afp-24},      // near the zero -4.039362
    {-0x1.0284e789a36bbp+2, -0x1.b0dda52a5b1fdp-24},     // near the zero -4.039362
    {-0x1.0284d75d4adfbp+2, 0x1.b0e2ced2911d5p-14},      // near the zero -4.039362
    {-0x1.0284f7ade7d07p+2, -0x1.b0d8797a8c889p-14},     // near the zero -4.039362
    {-0x1.3f7577a1f0d9fp+2, -0x1.22d8c0d2ec6aap-21},     // near the zero -4.991545
    {-0x1.3f7577abec85bp+2, 0x1.22d8ccb4c3724p-21},      // near the zero -4.991545
    {-0x1.3f7563af97356p+2, -0x1.22c381ee3c845p-11},     // near the zero -4.991545
    {-0x1.3f758b9e462a4p+2, 0x1.22ee0f0dd0cdep-11},      // near the zero -4.991545
    {-0x1.4086a57a09530p+2, 0x1.34e9954cfe333p-21},      // near the zero -5.008218
    {-0x1.4086a5840d882p+2, -0x1.34e989955fe13p-21},     // near the zero -5.008218
    {-0x1.40869176a115ap+2, 0x1.35003f22f13f2p-11},      // near the zero -5.008218
    {-0x1.4086b98775c58p+2, -0x1.34d2e720cc1cbp-11},     // near the zero -5.008218
    {-0x1.e2af929720f90p+2, -0x1.0f76928ab72b2p+3},      // random negative
    {-0x1.4a833d46a262cp+2, -0x1.9c0aa1bd89bcap+1},      // random negative
    {-0x1.0626f8f1874c2p+2, -0x1.eeddd02c79f57p-1},      // random negative
    {-0x1.26a790656ed80p+0, 0x1.db7a33a2fd3d3p+0},       // random negative
    {-0x1.4cee08f7acc84p+2, -0x1.bbf53dbd36692p+1},      // random negative
    {-0x1.8db22e2cc6460p+0, 0x1.abfe398e5c0e7p-1},       // random negative
    {-0x1.36b7e44662d5ep+4, -0x1.3b51cf4d50e06p+5},      // random negative
    {-0x1.56006261ec5e7p+3, -0x1.ed3f58847fa4ep+3},      // random negative
    {-0x1.22037be09b370p+0, 0x1.fc64b20ea6aaep+0},       // random negative
    {-0x1.c15004b7b4176p+2, -0x1.2b73c7062eb32p+2},      // random negative
    {-0x1.fb63b51b9d7b0p+0, 0x1.ab9ea2dce7b01p+1},       // random negative
    {-0x1.1bc62ad920d61p+4, -0x1.116c273ee3229p+5},      // random negative
    {0x1.2c3445d579c35p+3, 0x1.6dbdd7ce1a06cp+3},        // random positive
    {0x1.3b9cfc5cebd82p+2, 0x1.89a4cec2e6552p+1},        // random positive
    {0x1.5c01c778286f8p+3, 0x1.d9f96e54d3f59p+3},        // random positive
    {0x1.6f528633f24b0p+3, 0x1.03dc19685c2dap+4},        // random positive
    {0x1.0c941f4fd48e0p-2, 0x1.3cc31e8ac493cp+0},        // random positive
    {0x1.156a05614dddep+2, 0x1.1d1d75b7ef8d6p+1},        // random positive
    {0x1.65bcc81d21d19p+2, 0x1.06983701b70a2p+2},        // random positive
    {0x1.253b034ab2c7fp+4, 0x1.138cf4d9415b8p+5},        // random positive
};

// got's distance from want in ulps of want (0 when equal: the zeros and infinities must be exact).
inline double lgamma_ulps(double got, double want) {
  if (got == want) return 0.0;
  if (!std::isfinite(got) || !std::isfinite(want) || want == 0.0) return INFINITY;
  const int e = std::fabs(want) < 0x1p-1022 ? -1022 : std::ilogb(want);
  return std::fabs(got - want) / std::ldexp(1.0, e - 52);
}

}  // namespace pk::test
