// pow_huge_phase_cases.hpp — complex pow cases where b log a is huge, shared by the backends' tests (values only,
// no test framework). The phase Im(b log a) runs from ~2^26 to ~1e308 radians modulo 2 pi, and where b was chosen
// as s (arg a, log|a|) rounded, Re(b log a) is only the rounding residual of its two cancelling products: both need
// log a far beyond double-double. Each row: {a.re, a.im, b.re, b.im, want.re, want.im}, want from mpmath at 4000
// bits; the contract allows 16 ulp of the larger part.
#pragma once

namespace pk::test {

// c128 operands.
inline constexpr double kPowHugePhaseC128[][6] = {
    {0x1.0000000000000p+1, 0x0.0p+0, 0x0.0p+0, 0x1.7e43c8800759cp+996, 0x1.b80528d30f790p-1,
     -0x1.05c67494c0ab7p-1},  // 0.859-0.511i
    {0x1.487fcb923a29cp-5, -0x0.0000000000001p-1022, -0x1.70a3d70a3d70ap-1, -0x1.f26aa2a5c9f18p+1023,
     -0x1.1f609e556970ap+3, 0x1.2c5e2afa3f3e6p+2},  // -8.98+4.69i
    {0x1.0000000000000p-1, 0x1.0000000000000p-1000, 0x1.0000000000000p+0, 0x1.0000000000000p+1000,
     -0x1.4f2564af3a5d5p-9, -0x1.14f7fd799cba7p-4},  // -0.00256-0.0676i
    {-0x1.3333333333333p-2, 0x1.ccccccccccccdp-1, 0x1.e47df3d0dd4d0p+40, -0x1.af8e8210a415bp+35, -0x1.e2be41536ca4ap-1,
     -0x1.5538b2ea927f8p-2},  // -0.943-0.333i
    {-0x1.3333333333333p-2, 0x1.ccccccccccccdp-1, 0x1.e47df3d0dd4d0p+60, -0x1.af8e8210a415bp+55, 0x1.b2f263133368ap+13,
     0x1.1092ad23d24e8p+14},  // 1.39e+04+1.74e+04i
    {0x1.6666666666666p-1, -0x1.999999999999ap-3, -0x1.1cfa95f7a8dcfp+38, -0x1.450ec3d21b602p+38, 0x1.ea138f0ee7e20p-1,
     0x1.28762b7d4dee4p-2},  // 0.957+0.29i
    {0x1.6666666666666p-1, -0x1.999999999999ap-3, -0x1.1cfa95f7a8dcfp+58, -0x1.450ec3d21b602p+58, 0x1.2ad9746599bb7p+8,
     0x1.28dc0932f0257p+9},  // 299+594i
    {-0x1.8000000000000p+0, -0x1.999999999999ap-4, -0x1.899a67091335fp+41, 0x1.a1777f2ebac21p+38, -0x1.886448447da15p-1,
     -0x1.48efd02304d49p-1},  // -0.766-0.642i
    {-0x1.8000000000000p+0, -0x1.999999999999ap-4, -0x1.899a67091335fp+61, 0x1.a1777f2ebac21p+58, 0x1.33d085e176987p+75,
     -0x1.d215810af54e0p+76},  // 4.54e+22-1.38e+23i
    {0x1.f75104d551d69p-16, -0x1.3880000000000p+14, -0x1.921fb53dd18d1p+40, 0x1.3ce95eba4f8b4p+43,
     -0x1.de79f88c5ef7bp-1, -0x1.672e59bb80f1fp-2},  // -0.935-0.351i
    {0x1.f75104d551d69p-16, -0x1.3880000000000p+14, -0x1.921fb53dd18d1p+60, 0x1.3ce95eba4f8b4p+63, -0x0.0p+0,
     0x0.0p+0},  // -0+0i
    {0x1.0000000001000p+0, 0x1.0000000000000p-30, 0x1.fffffffffe000p+9, 0x1.000007ffff800p+0, 0x1.ffffffffff000p-1,
     0x1.00000ffffed55p-20},  // 1+9.54e-07i
    {0x1.0000000001000p+0, 0x1.0000000000000p-30, 0x1.fffffffffe000p+29, 0x1.000007ffff800p+20, 0x1.14a2660dfcfe3p-1,
     0x1.aed55a3ab6f29p-1},  // 0.54+0.841i
    // Added with complex pow's move to the device math (sdk/devmath/cpow.h), mpmath at 4000 bits: the extremes of
    // the fixed-point path's range and each octant step of its arg a.
    {0x1.8000000000000p+0, 0x0.0p+0, 0x0.0p+0, -0x1.fffffffffffffp+1023, 0x1.426e70d262a72p-2,
     -0x1.e5f4ce20f11aap-1},  // 0.315-0.949i: b the most negative imaginary double, a pure phase
    {0x0.0000000000001p-1022, 0x0.0p+0, 0x0.0p+0, 0x1.3000000000000p+1000, -0x1.44ac8c324f6cep-1,
     0x1.8be473ac4d933p-1},  // -0.634+0.773i: a the least subnormal, log a = -1074 ln 2
    {0x1.fffffffffffffp+1023, 0x0.0p+0, 0x0.0p+0, 0x1.5000000000000p+900, 0x1.77cf9372b2788p-1,
     0x1.5bb8b13b5df27p-1},  // 0.734+0.679i: a the largest double, b above 2^900 (scaled on the way)
    {0x0.0p+0, 0x1.0000000000000p+0, 0x1.921fb54442d18p+40, 0x1.0000000000000p-2, -0x1.853b1665b6a37p-3,
     -0x1.4bbde9ef2c45ep-1},  // -0.19-0.648i: a = i, the phase Re b pi / 2 ~ 2^40.6
    {0x0.0p+0, -0x1.0000000000000p+0, -0x1.5555555555555p+50, -0x1.8000000000000p+1, -0x1.c297f8b27794bp-9,
     0x1.0ff512d08522cp-7},  // -0.00344+0.0083i: a = -i (arg a negated)
    {-0x1.8000000000000p-3, -0x1.4000000000000p+2, -0x1.9bb8283406ad9p+30, 0x1.9c322bb05960bp+30, 0x1.d3c324cc32016p-1,
     0x1.a06084eace806p-2},  // 0.914+0.407i: third quadrant, |y| > |x|: pi - (pi/2 - atan)
};

// c64 operands (floats widened exactly).
inline constexpr double kPowHugePhaseC64[][6] = {
    {0x1.955c280000000p+5, 0x1.b38fb80000000p-127, -0x1.851eb80000000p-2, -0x1.ff933c0000000p+127,
     -0x1.8d8a0cc3889e5p-3, -0x1.233868babdba5p-3},  // -0.194-0.142i
    {0x1.0000000000000p+1, 0x0.0p+0, 0x0.0p+0, 0x1.691ca40000000p+124, -0x1.efc6adc4815c4p-1,
     0x1.ff78354169e2ap-3},  // -0.968+0.25i
    {-0x1.3333340000000p-2, 0x1.cccccc0000000p-1, 0x1.e47df40000000p+24, -0x1.af8e8c0000000p+19, 0x1.7f2d6af11b353p-1,
     -0x1.3814fba84a575p-1},  // 0.748-0.61i
    {-0x1.3333340000000p-2, 0x1.cccccc0000000p-1, 0x1.e47df40000000p+30, -0x1.af8e8c0000000p+25, 0x1.9cab7ce5ce092p-4,
     0x1.918a12553ee6cp-6},  // 0.101+0.0245i
    {0x1.6666660000000p-1, -0x1.99999a0000000p-3, -0x1.1cfa960000000p+22, -0x1.450ec40000000p+22, -0x1.c0520af07e884p-1,
     0x1.0558f154be526p-1},  // -0.876+0.51i
    {0x1.6666660000000p-1, -0x1.99999a0000000p-3, -0x1.1cfa960000000p+28, -0x1.450ec40000000p+28, -0x1.aee65dfff0cd8p+0,
     -0x1.a9905048d5928p+0},  // -1.68-1.66i
    {-0x1.8000000000000p+0, -0x1.99999a0000000p-4, -0x1.899a680000000p+25, 0x1.a177800000000p+22, 0x1.a8e5e38adfa61p-5,
     -0x1.afeb8efccf0b8p-1},  // 0.0519-0.844i
    {-0x1.8000000000000p+0, -0x1.99999a0000000p-4, -0x1.899a680000000p+31, 0x1.a177800000000p+28,
     -0x1.f3ea3e89588bfp-17, -0x1.f6f42c95153f6p-17},  // -1.49e-05-1.5e-05i
    // Added with complex pow's move to the device math (mpmath at 4000 bits).
    {0x1.8000000000000p+0, 0x0.0p+0, 0x0.0p+0, -0x1.fffffe0000000p+127, 0x1.9c04475739ec1p-3,
     -0x1.f58823936a1eep-1},  // 0.201-0.98i: b the most negative imaginary float
    {0x0.0p+0, 0x1.0000000000000p+0, 0x1.921fb60000000p+24, 0x1.0000000000000p-2, -0x1.59b7ff189ac58p-1,
     0x0.0p+0},  // -0.675+1.1e-1197i: a = i, the phase an odd multiple of pi
    {-0x1.8000000000000p-3, -0x1.4000000000000p+2, -0x1.9bb8280000000p+22, 0x1.9c322c0000000p+22, 0x1.366b34e757b30p+0,
     0x1.a4e1b53857349p-3},  // 1.21+0.206i: third quadrant, |y| > |x|
};

}  // namespace pk::test
