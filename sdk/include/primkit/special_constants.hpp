// special_constants.hpp — constant tables of special-function algorithms, shared by the code generators (the LLVM
// generator in sdk/codegen and the OpenCL backend's source generator) so each table exists once. Header-only,
// installed: a vendor's own kernels may use them too. The tables of the functions in the device math
// (sdk/devmath: digamma, the incomplete gamma functions, Hurwitz zeta) live there, with the code that reads them.
#pragma once

#include <cstdint>

namespace pk::kit::special {

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
