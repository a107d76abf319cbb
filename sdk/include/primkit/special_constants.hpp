// special_constants.hpp — constant tables of special-function algorithms, shared by the code generators (the LLVM
// generator in sdk/codegen and the OpenCL backend's source generator) so each table exists once. Header-only,
// installed: a vendor's own kernels may use them too.
#pragma once

#include <cstdint>

namespace pk::kit::special {

// psi(x) near its roots: Taylor coefficients psi^(k)(c) / k!, k = 0..35, at c = x0 + 1 (x0 = 1.46163... the positive
// root of digamma), each as a double-double (hi, lo) pair; computed with mpmath at 300 bits. The series converges
// by a factor < 0.22 a term on the interval the generators use it for, and summed in double-double it gives psi to
// ~2^-100 absolute, so the cancellation near every root (the positive one and, through the recurrence, one per
// negative unit interval) costs nothing.
constexpr double kDigammaTaylorAtRootPlusOne[72] = {
    0.6841666717870696,      -4.2470892676890727e-17, 0.49958821066342546,    -2.0373158058412316e-17,
    -0.12251567278862602,    -5.736746342749074e-18,  0.03939709733579885,    -2.848907726295464e-18,
    -0.014039965293930434,   3.7000886856729105e-19,  0.00526559187211755,    1.1421864574018889e-19,
    -0.0020324818225491725,  -1.367639138081961e-19,  0.0007983109588290198,  2.5792787182361807e-20,
    -0.0003170368244016943,  6.386474505342981e-21,   0.0001268167281965579,  6.242410702984931e-21,
    -5.097190255450742e-05,  -2.899816628968163e-21,  2.055414125395239e-05,  7.934455385621397e-22,
    -8.306859775003972e-06,  -5.245364615180883e-22,  3.3623594458438883e-06, -5.848225057477412e-23,
    -1.3624395717959079e-06, -9.554616994072804e-23,  5.524792977920754e-07,  3.236012710540175e-23,
    -2.241523416103308e-07,  -1.7523278869736137e-24, 9.097694978453553e-08,  3.5845730933292223e-25,
    -3.6934557862649377e-08, -2.5543605569145614e-24, 1.499735247478639e-08,  -4.936435039341268e-25,
    -6.090500964947203e-09,  -8.737968770447154e-26,  2.473612210913063e-09,  1.104189943720339e-25,
    -1.0047053252261424e-09, 4.9345662340400335e-26,  4.08099443984292e-10,   -3.658449336352175e-27,
    -1.6577065288159067e-10, 1.0606351265373796e-26,  6.733788627268473e-11,  3.630800422672598e-27,
    -2.735385546236437e-11,  -1.1380403373069236e-27, 1.1111757552226734e-11, -9.095302438742379e-29,
    -4.5138863432781286e-12, 1.689784939510438e-28,   1.833669574785134e-12,  1.178190813334153e-28,
    -7.448921271170873e-13,  -1.182405131446126e-29,  3.0259866069106846e-13, 4.9677936958568604e-30,
    -1.2292537778544927e-13, 4.174683408149552e-30,   4.9936346531924656e-14, 2.3885287889309502e-31,
    -2.028581451260793e-14,  6.961802842045823e-31,   8.24078285130796e-15,   -6.973296491133016e-32,
};
constexpr double kDigammaRootPlusOneHi = 2.4616321449683625, kDigammaRootPlusOneLo = -1.2654465062537432e-16;

// 2 zeta(2k), k = 1..32, as double-double (hi, lo) pairs (mpmath, 300 bits): pi cot(pi r) = 1/r - r sum_k 2 zeta(2k)
// r^(2k-2), whose omitted tail is below 2^-64 for |r| <= 1/2. digamma's reflection below -128 carries it in
// double-double, because near each negative root psi(1 - x) and pi cot(pi r) (both about log|x|) cancel.
constexpr double kTwoZetaEven[64] = {
    3.289868133696453,
    6.081344700796952e-17,
    2.1646464674222763,
    9.49702408571073e-17,
    2.0346861239688985,
    -1.9517198332883063e-16,
    2.0081547123958887,
    -4.034349661547569e-17,
    2.001989150255636,
    2.1873826341294005e-16,
    2.000492173106616,
    7.113198248766341e-18,
    2.0001224962701176,
    -2.1277148994144281e-16,
    2.0000305645188172,
    8.163518284861808e-17,
    2.00000763458653,
    -8.118713784376256e-17,
    2.0000019079240676,
    1.2218006976829918e-16,
    2.0000004769010054,
    1.0255162665490708e-16,
    2.000000119216378,
    -2.2991747459888093e-19,
    2.0000000298031098,
    -1.0113429419170146e-16,
    2.000000007450668,
    -3.292125447769698e-17,
    2.000000001862655,
    -5.4354237366884023e-17,
    2.000000000465662,
    1.9124914214046255e-16,
    2.0000000001164153,
    1.1993111920333174e-16,
    2.000000000029104,
    1.3325350264858577e-17,
    2.000000000007276,
    1.480573876477154e-18,
    2.000000000001819,
    1.6450692138067656e-19,
    2.0000000000004547,
    1.8278466384087845e-20,
    2.0000000000001137,
    2.0309356824461637e-21,
    2.0000000000000284,
    2.2565920610482366e-22,
    2.000000000000007,
    2.5073225487885697e-23,
    2.0000000000000018,
    2.7859127159414075e-24,
    2.0000000000000004,
    3.0954578063041137e-25,
    2.0,
    1.1102230249690962e-16,
    2.0,
    2.7755575619450464e-17,
    2.0,
    6.938893904331845e-18,
    2.0,
    1.7347234760239866e-18,
    2.0,
    4.33680868999444e-19,
    2.0,
    1.0842021724913292e-19,
};

// zeta(k), k = 2..13, and Euler's gamma as a double-double (hi, lo): ln Gamma(1 + a) = -gamma a + sum_k (-1)^k
// zeta(k) a^k / k, which the incomplete gamma functions use for |a| <= 0.05 (where the recurrence and Stirling
// would leave ln Gamma(1 + a) only absolutely accurate).
constexpr double kZetaAtIntegers2To13[12] = {1.6449340668482264, 1.2020569031595943, 1.0823232337111382,
                                             1.0369277551433699, 1.0173430619844491, 1.0083492773819228,
                                             1.0040773561979443, 1.0020083928260822, 1.0009945751278181,
                                             1.0004941886041195, 1.0002460865533080, 1.0001227133475785};
constexpr double kEulerGammaHi = 0.5772156649015329, kEulerGammaLo = -4.942915152430645e-18;

// (2k)! / B_2k, k = 1..12: the Euler-Maclaurin tail of the Hurwitz zeta function (sum of the terms from w on).
constexpr double kZetaEulerMaclaurin[12] = {12.0,
                                            -720.0,
                                            30240.0,
                                            -1209600.0,
                                            47900160.0,
                                            -1892437580.3183792,
                                            74724249600.0,
                                            -2950130727918.164,
                                            116467828143500.67,
                                            -4597978722407473.0,
                                            1.8152105401943546e+17,
                                            -7.166165256175667e+18};

// ln 2, pi / 4 and 1 / (2 pi) as 1280-bit binary fractions: 40 32-bit words, most significant first (the value is
// sum_j word[j] 2^(-32 (j + 1)), truncated). Complex pow's exact path needs log a and the phase b log a mod 2 pi to
// ~|log2 |b|| + 100 bits where b is near the largest double (2^1024): fixed-point arithmetic at up to 1152 bits
// below the point, which these supply. Computed with mpmath at 1500 bits; a test checks them against MPFR.
constexpr std::uint32_t kLn2Fraction[40] = {
    0xb17217f7, 0xd1cf79ab, 0xc9e3b398, 0x03f2f6af, 0x40f34326, 0x7298b62d, 0x8a0d175b, 0x8baafa2b,
    0xe7b87620, 0x6debac98, 0x559552fb, 0x4afa1b10, 0xed2eae35, 0xc1382144, 0x27573b29, 0x1169b825,
    0x3e96ca16, 0x224ae8c5, 0x1acbda11, 0x317c387e, 0xb9ea9bc3, 0xb136603b, 0x256fa0ec, 0x7657f74b,
    0x72ce87b1, 0x9d6548ca, 0xf5dfa6bd, 0x38303248, 0x655fa187, 0x2f20e3a2, 0xda2d97c5, 0x0f3fd5c6,
    0x07f4ca11, 0xfb5bfb90, 0x610d30f8, 0x8fe551a2, 0xee569d6d, 0xfc1efa15, 0x7d2e23de, 0x1400b396,
};
constexpr std::uint32_t kPiOver4Fraction[40] = {
    0xc90fdaa2, 0x2168c234, 0xc4c6628b, 0x80dc1cd1, 0x29024e08, 0x8a67cc74, 0x020bbea6, 0x3b139b22,
    0x514a0879, 0x8e3404dd, 0xef9519b3, 0xcd3a431b, 0x302b0a6d, 0xf25f1437, 0x4fe1356d, 0x6d51c245,
    0xe485b576, 0x625e7ec6, 0xf44c42e9, 0xa637ed6b, 0x0bff5cb6, 0xf406b7ed, 0xee386bfb, 0x5a899fa5,
    0xae9f2411, 0x7c4b1fe6, 0x49286651, 0xece45b3d, 0xc2007cb8, 0xa163bf05, 0x98da4836, 0x1c55d39a,
    0x69163fa8, 0xfd24cf5f, 0x83655d23, 0xdca3ad96, 0x1c62f356, 0x208552bb, 0x9ed52907, 0x7096966d,
};
constexpr std::uint32_t kInvTwoPiFraction[40] = {
    0x28be60db, 0x9391054a, 0x7f09d5f4, 0x7d4d3770, 0x36d8a566, 0x4f10e410, 0x7f9458ea, 0xf7aef158,
    0x6dc91b8e, 0x909374b8, 0x01924bba, 0x82746487, 0x3f877ac7, 0x2c4a69cf, 0xba208d7d, 0x4baed121,
    0x3a671c09, 0xad17df90, 0x4e64758e, 0x60d4ce7d, 0x272117e2, 0xef7e4a0e, 0xc7fe25ff, 0xf7816603,
    0xfbcbc462, 0xd6829b47, 0xdb4d9fb3, 0xc9f2c26d, 0xd3d18fd9, 0xa797fa8b, 0x5d49eeb1, 0xfaf97c5e,
    0xcf41ce7d, 0xe294a4ba, 0x9afed7ec, 0x47e35742, 0x1580cc11, 0xbf1edaea, 0xfc33ef08, 0x26bd0d87,
};

}  // namespace pk::kit::special
