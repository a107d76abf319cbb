// complex_arith_cases.hpp — complex products, quotients, reciprocals, moduli and square roots against mpmath at 2000
// bits, each part rounded to nearest (ties to even) in the output format (generated once, values only, no test
// framework). The op table contracts these correctly rounded per part; the three backends evaluate them with one
// source (the device math, sdk/devmath/complex.h), so every part must equal `re` / `im` exactly. The rows reach the
// branches: exact ties between doubles (decided by the exact sums), a part 2^-250 below a midpoint, products and
// quotients beyond double's range or in its subnormal range, |z| overflowing, c64 parts that round once to float.
// Each row: {op, c64, a, b, c, d, re, im}: mul / div (a + bi, c + di), reciprocal (c + di), abs and sqrt (a + bi);
// abs has im = 0. c64 rows hold floats.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "primkit/primkit.h"

namespace pk::test {

struct ComplexArithCase {
  uint32_t op;
  bool c64;
  double a, b, c, d, re, im;
};

inline constexpr double kArithInf = std::numeric_limits<double>::infinity();

inline constexpr ComplexArithCase kComplexArithCases[] = {
    {PK_OP_MUL, false, -0x1.d5694afffe854p-5, -0x1.4000000000000p+2, 0x1.e0bf8fc8e6da6p-5, -0x1.0000000000000p+0,
     -0x1.4037184add525p+2, -0x1.e39520fb20efap-3},  // imaginary part an exact tie
    {PK_OP_DIV, false, -0x1.fec499d827361p-5, 0x1.0000000000000p+0, 0x1.0000000000000p+3, -0x1.0000000000000p+2,
     -0x1.ccad42959d856p-5, 0x1.8cd4af5a989eap-4},  // real part an exact tie
    {PK_OP_DIV, true, 0x1.0800000000000p-19, 0x1.0000000000000p+1, -0x1.0000000000000p+2, -0x1.0000000000000p+2,
     -0x1.0000100000000p-2, -0x1.ffffe00000000p-3},  // c64 tie
    {PK_OP_MUL, true, 0x1.b8a0000000000p-3, -0x1.5880000000000p+1, 0x1.d380000000000p-23, 0x1.9720000000000p-24,
     0x1.4439cc0000000p-22, -0x1.2f9bea0000000p-21},  // c64 short mantissas
    {PK_OP_SQRT, true, 0x1.0000000000000p+0, 0x1.fffffc0000000p-127, 0x0.0p+0, 0x0.0p+0, 0x1.0000000000000p+0,
     0x1.fffff80000000p-128},  // imaginary part a hair below a midpoint, subnormal
    {PK_OP_SQRT, false, 0x1.0000000000000p+0, 0x1.fffffffffffffp-1022, 0x0.0p+0, 0x0.0p+0, 0x1.0000000000000p+0,
     0x1.0000000000000p-1022},  // the same in double
    {PK_OP_SQRT, false, -0x1.0000000000000p+2, 0x0.0000000000001p-1022, 0x0.0p+0, 0x0.0p+0, 0x0.0p+0,
     0x1.0000000000000p+1},  // x < 0, least subnormal y
    {PK_OP_SQRT, false, 0x0.0000000000001p-1022, 0x0.0000000000001p-1022, 0x0.0p+0, 0x0.0p+0, 0x1.19435caffa9f9p-537,
     0x1.d203138f6c828p-539},  // subnormal parts
    {PK_OP_SQRT, false, 0x1.fffffffffffffp+1023, 0x1.fffffffffffffp+1023, 0x0.0p+0, 0x0.0p+0, 0x1.19435caffa9f8p+512,
     0x1.d203138f6c828p+510},  // largest parts: |z| overflows double
    {PK_OP_SQRT, false, 0x0.0p+0, 0x1.8000000000000p+1, 0x0.0p+0, 0x0.0p+0, 0x1.3988e1409212ep+0,
     0x1.3988e1409212ep+0},  // x = 0
    {PK_OP_SQRT, false, -0x1.8000000000000p+600, 0x1.4000000000000p-600, 0x0.0p+0, 0x0.0p+0, 0x1.0547666079ba7p-901,
     0x1.3988e1409212ep+300},  // x < 0, parts 2^1200 apart
    {PK_OP_SQRT, true, 0x1.8000000000000p+1, -0x1.0000000000000p+2, 0x0.0p+0, 0x0.0p+0, 0x1.0000000000000p+1,
     -0x1.0000000000000p+0},  // exact result 2 - i
    {PK_OP_ABS, false, 0x1.8000000000000p+1, 0x1.0000000000000p+2, 0x0.0p+0, 0x0.0p+0, 0x1.4000000000000p+2,
     0x0.0p+0},  // exact 5
    {PK_OP_ABS, false, 0x1.fffffffffffffp+1023, 0x1.fffffffffffffp+1023, 0x0.0p+0, 0x0.0p+0, kArithInf,
     0x0.0p+0},  // overflows
    {PK_OP_ABS, false, 0x0.0000000000001p-1022, 0x0.0000000000001p-1022, 0x0.0p+0, 0x0.0p+0, 0x0.0000000000001p-1022,
     0x0.0p+0},  // subnormal
    {PK_OP_ABS, false, 0x1.0000000000000p+0, 0x1.0000000000000p-27, 0x0.0p+0, 0x0.0p+0, 0x1.0000000000000p+0,
     0x0.0p+0},  // y^2 at half an ulp of x^2
    {PK_OP_ABS, true, 0x1.0000000000000p+0, 0x1.0000000000000p-12, 0x0.0p+0, 0x0.0p+0, 0x1.0000000000000p+0,
     0x0.0p+0},  // c64: y^2 at half an ulp of x^2
    {PK_OP_ABS, true, 0x1.0000000000000p-149, 0x1.0000000000000p-149, 0x0.0p+0, 0x0.0p+0, 0x1.0000000000000p-149,
     0x0.0p+0},  // c64 subnormal
    {PK_OP_MUL, false, 0x1.0000000000000p+600, 0x1.0000000000000p+600, 0x1.0000000000000p+500, -0x1.0000000000000p+500,
     kArithInf, 0x0.0p+0},  // real part 2^1101 overflows, imaginary part exactly 0
    {PK_OP_MUL, false, 0x1.0000000000001p+0, 0x1.0000000000000p+0, 0x1.fffffffffffffp-1, 0x1.0000000000001p+0,
     -0x1.0000000000001p-53, 0x1.0000000000001p+1},  // cancellation to 2^-104
    {PK_OP_MUL, false, 0x1.0000000000000p-540, 0x1.8000000000000p-540, 0x1.4000000000000p-540, 0x1.0000000000000p-540,
     -0.0, 0x0.0p+0},  // products below the subnormal range
    {PK_OP_MUL, false, 0x1.3000000000000p-520, 0x1.7000000000000p-530, 0x1.9000000000000p-540, 0x1.1000000000000p-530,
     0x0.0000000001500p-1022, 0x0.0000001430024p-1022},  // subnormal result
    {PK_OP_MUL, true, 0x1.fffffe0000000p+127, 0x1.fffffe0000000p+127, 0x1.0000000000000p+1, 0x1.0000000000000p+1,
     0x0.0p+0, kArithInf},  // c64: real part exactly 0, imaginary part overflows
    {PK_OP_MUL, true, 0x1.0000000000000p-100, 0x1.0000000000000p-100, 0x1.8000000000000p-49, 0x1.8000000000000p-49,
     0x0.0p+0, 0x1.8000000000000p-148},  // c64 subnormal imaginary part
    {PK_OP_DIV, false, 0x1.0000000000000p+0, 0x1.0000000000000p+0, 0x0.0000000000001p-1022, 0x0.0000000000001p-1022,
     kArithInf, 0x0.0p+0},  // quotient overflows
    {PK_OP_DIV, false, 0x0.0000000000001p-1022, 0x0.0000000000001p-1022, 0x1.0000000000000p+1000,
     0x1.0000000000000p+1000, 0x0.0p+0, 0x0.0p+0},  // quotient underflows to 0 and subnormal
    {PK_OP_DIV, false, 0x1.fffffffffffffp+1023, 0x1.0000000000000p+1000, 0x1.0000000000000p-20, 0x1.0000000000000p-20,
     kArithInf, -kArithInf},  // huge dividend
    {PK_OP_DIV, false, 0x1.8000000000000p+1, 0x1.0000000000000p-1000, 0x1.0000000000000p+0, 0x1.0000000000000p-1000,
     0x1.8000000000000p+1, -0x1.0000000000000p-999},  // parts 2^1000 apart
    {PK_OP_DIV, true, 0x1.0000000000000p-140, 0x1.0000000000000p-140, 0x1.0000000000000p+100, 0x1.8000000000000p+1,
     0x0.0p+0, 0x0.0p+0},  // c64 subnormal quotient
    {PK_OP_RECIPROCAL, false, 0x0.0p+0, 0x0.0p+0, 0x0.0000000000010p-1022, 0x0.0000000000002p-1022, kArithInf,
     -kArithInf},  // overflows
    {PK_OP_RECIPROCAL, false, 0x0.0p+0, 0x0.0p+0, 0x1.8000000000000p+1, 0x1.0000000000000p+2, 0x1.eb851eb851eb8p-4,
     -0x1.47ae147ae147bp-3},  // 0.12 - 0.16 i
    {PK_OP_RECIPROCAL, true, 0x0.0p+0, 0x0.0p+0, 0x1.8000000000000p+126, 0x1.2000000000000p+125, 0x1.2b404c0000000p-127,
     -0x1.c0e0700000000p-129},  // c64 subnormal parts
    {PK_OP_MUL, false, -0x1.52e6b43e54e9cp+104, -0x1.a6a3a4418b900p+248, -0x1.1818e80bb3b94p+219,
     -0x1.36f675c1332a2p+144, -0x1.00b086477af2bp+393, 0x1.ce6c1a16b5645p+467},  // random
    {PK_OP_MUL, false, -0x1.6b0d54823c417p-208, -0x1.8d116ecd95a94p+279, -0x1.1fb17c3e51820p+296,
     0x1.f29d0da1fac62p-250, 0x1.97ffa628455a2p+88, 0x1.be39d4fb313ddp+575},  // random
    {PK_OP_MUL, false, -0x1.f9ebdac7131a3p+270, 0x1.dbc496c442f7dp+129, -0x1.24ede6b14d4c8p+284,
     -0x1.4ef8aa31eda0ap-195, 0x1.2173966673bd6p+555, -0x1.10332ed9c90ecp+414},  // random
    {PK_OP_MUL, false, -0x1.fe00000000000p+10, -0x1.3880000000000p+24, -0x1.7f80000000000p+25, -0x1.8600000000000p+28,
     -0x1.dc1181ff80000p+52, 0x1.d484de8000000p+49},  // short mantissas
    {PK_OP_MUL, false, -0x1.6a00000000000p+18, 0x1.6b80000000000p+9, 0x1.b980000000000p+26, 0x1.a000000000000p+12,
     -0x1.3827824eb0000p+45, 0x1.3041a00000000p+36},  // short mantissas
    {PK_OP_MUL, false, 0x1.9600000000000p+2, -0x1.2000000000000p+3, -0x1.5880000000000p+25, 0x1.9a00000000000p+20,
     -0x1.02c3800000000p+28, 0x1.8db8f00000000p+28},  // short mantissas
    {PK_OP_MUL, true, 0x1.7ebff20000000p+17, -0x1.49b64a0000000p-25, -0x1.830e080000000p+3, 0x1.26e8760000000p+13,
     -0x1.2158920000000p+21, 0x1.b8ebfe0000000p+30},  // random
    {PK_OP_MUL, true, -0x1.0a097c0000000p+31, 0x1.92b1d40000000p+3, 0x1.b1fee00000000p+34, -0x1.cc011c0000000p-29,
     -0x1.c302e80000000p+65, 0x1.5557da0000000p+38},  // random
    {PK_OP_MUL, true, 0x1.f1d69e0000000p-32, 0x1.0f88080000000p+33, 0x1.fe3b8a0000000p-4, 0x1.b774ec0000000p-38,
     -0x1.d21e4a0000000p-5, 0x1.0e98140000000p+30},  // random
    {PK_OP_MUL, true, 0x1.b180000000000p+11, -0x1.5000000000000p+27, -0x1.1080000000000p+20, -0x1.8780000000000p+2,
     -0x1.26f3600000000p+32, 0x1.65a8000000000p+47},  // short mantissas
    {PK_OP_MUL, true, 0x1.3200000000000p-5, -0x1.4000000000000p+8, 0x1.2080000000000p+20, -0x1.5b00000000000p-1,
     0x1.5727400000000p+15, -0x1.68a0000000000p+28},  // short mantissas
    {PK_OP_MUL, true, 0x1.9780000000000p+14, 0x1.c800000000000p-6, 0x1.7180000000000p+24, 0x1.d000000000000p+12,
     0x1.2615a00000000p+39, 0x1.7295160000000p+27},  // short mantissas
    {PK_OP_DIV, false, 0x1.fc891b4b7b0dap-64, -0x1.26a2c0a2a7cf8p-146, -0x1.3b61867512919p-288, -0x1.7c26847a98518p-31,
     0x1.8cd366c2b523ap-116, 0x1.5674f05083d74p-33},  // random
    {PK_OP_DIV, false, -0x1.482c9ca02188ep+129, 0x1.88daf40bd0ecep-172, -0x1.b0c4313b7e951p+167, 0x1.e647cb9bdf106p+107,
     0x1.84422cfcfd5a4p-39, 0x1.b444d7ad011aep-99},  // random
    {PK_OP_DIV, false, -0x1.66237a0c9ca19p+193, -0x1.a260cd0cd06d1p-105, -0x1.113db17f8265ap+151,
     0x1.298cb3a384886p-247, 0x1.4f8a6c3b11034p+42, 0x1.87fab0cb99755p-256},  // random
    {PK_OP_DIV, false, -0x1.2e80000000000p-11, -0x1.9500000000000p+22, -0x1.3080000000000p+12, -0x1.cc00000000000p-7,
     0x1.0131bd854a023p-8, 0x1.547e1bbe604fcp+10},  // short mantissas
    {PK_OP_DIV, false, -0x1.5a00000000000p+26, 0x1.0280000000000p-2, 0x1.2000000000000p+5, 0x1.d300000000000p+18,
     -0x1.d3dcef1c14044p-7, 0x1.7b5728f8fcac5p+7},  // short mantissas
    {PK_OP_DIV, false, -0x1.0480000000000p-4, 0x1.e780000000000p+18, 0x1.d780000000000p+19, 0x1.fa00000000000p-8,
     -0x1.091f5d7c838d6p-24, 0x1.08afea48364bcp-1},  // short mantissas
    {PK_OP_DIV, true, 0x1.24e4e20000000p-7, -0x1.7a86f80000000p+26, 0x1.05e99a0000000p-22, -0x1.b0a8440000000p+27,
     0x1.bff17c0000000p-2, 0x1.5a9a2a0000000p-35},  // random
    {PK_OP_DIV, true, -0x1.4c4f9c0000000p-7, -0x1.84b5a80000000p+5, 0x1.c59dba0000000p-12, -0x1.9cfc860000000p-10,
     0x1.c016960000000p+14, -0x1.ec92d60000000p+12},  // random
    {PK_OP_DIV, true, -0x1.d17e440000000p-15, 0x1.8483f80000000p-37, 0x1.fd56aa0000000p+20, 0x1.4259400000000p+17,
     -0x1.d103ee0000000p-36, 0x1.264c5a0000000p-39},  // random
    {PK_OP_DIV, true, 0x1.9700000000000p+11, -0x1.5b80000000000p+3, -0x1.2f00000000000p+3, 0x1.c280000000000p+1,
     -0x1.2e80280000000p+8, -0x1.bd2b880000000p+6},  // short mantissas
    {PK_OP_DIV, true, 0x1.6700000000000p+1, 0x1.dc00000000000p+28, -0x1.fc80000000000p+19, 0x1.8100000000000p-7,
     0x1.6c46dc0000000p-19, -0x1.df46bc0000000p+8},  // short mantissas
    {PK_OP_DIV, true, -0x1.0a80000000000p+13, -0x1.a000000000000p+17, -0x1.2500000000000p+15, 0x1.5100000000000p-7,
     0x1.d1b08c0000000p-3, 0x1.6b77b40000000p+2},  // short mantissas
    {PK_OP_RECIPROCAL, false, 0x0.0p+0, 0x0.0p+0, -0x1.2b855c1fc7939p-272, 0x1.26b1cff2e7ef3p-151,
     -0x1.c40e7d88063b1p+29, -0x1.bcc5b89a86fbep+150},  // random
    {PK_OP_RECIPROCAL, false, 0x0.0p+0, 0x0.0p+0, -0x1.03a56cd994552p+239, -0x1.bfdefc1de0412p+144,
     -0x1.f8cf5d9b512d9p-240, 0x1.b3616991539d0p-334},  // random
    {PK_OP_RECIPROCAL, false, 0x0.0p+0, 0x0.0p+0, 0x1.804c25c7b27fap-35, -0x1.8b5ab3ed688d0p-238, 0x1.5511b2f0d7609p+34,
     0x1.5ee1dacdebdf5p-169},  // random
    {PK_OP_RECIPROCAL, false, 0x0.0p+0, 0x0.0p+0, -0x1.e900000000000p+22, -0x1.9300000000000p+21,
     -0x1.ca44cae592bcep-24, 0x1.79ac6434096c0p-25},  // short mantissas
    {PK_OP_RECIPROCAL, false, 0x0.0p+0, 0x0.0p+0, -0x1.f800000000000p-2, -0x1.3f00000000000p-3, -0x1.d8c6fe3992c33p+0,
     0x1.2b3cef216482bp-1},  // short mantissas
    {PK_OP_RECIPROCAL, false, 0x0.0p+0, 0x0.0p+0, -0x1.8200000000000p+9, 0x1.dc00000000000p-5, -0x1.5390946efb0ebp-10,
     -0x1.a2bce6cb2da2cp-24},  // short mantissas
    {PK_OP_RECIPROCAL, true, 0x0.0p+0, 0x0.0p+0, -0x1.81f98c0000000p-32, -0x1.7178ba0000000p-5, -0x1.7299e60000000p-23,
     0x1.62c15a0000000p+4},  // random
    {PK_OP_RECIPROCAL, true, 0x0.0p+0, 0x0.0p+0, -0x1.e48b960000000p+17, -0x1.231b3e0000000p+10, -0x1.0e7fcc0000000p-18,
     0x1.4505c40000000p-26},  // random
    {PK_OP_RECIPROCAL, true, 0x0.0p+0, 0x0.0p+0, -0x1.c8b0080000000p+6, -0x1.249a460000000p+19, -0x1.5d93ae0000000p-32,
     0x1.bff3c40000000p-20},  // random
    {PK_OP_RECIPROCAL, true, 0x0.0p+0, 0x0.0p+0, -0x1.6600000000000p+2, -0x1.6b00000000000p+15, -0x1.641b380000000p-29,
     0x1.6914740000000p-16},  // short mantissas
    {PK_OP_RECIPROCAL, true, 0x0.0p+0, 0x0.0p+0, 0x1.b400000000000p+8, -0x1.4380000000000p+12, 0x1.0f1c6c0000000p-16,
     0x1.9250580000000p-13},  // short mantissas
    {PK_OP_RECIPROCAL, true, 0x0.0p+0, 0x0.0p+0, -0x1.db00000000000p+13, 0x1.4d00000000000p+21, -0x1.18b8080000000p-29,
     -0x1.8998ee0000000p-22},  // short mantissas
    {PK_OP_ABS, false, -0x1.9fb9af49745c2p-185, -0x1.fc2e6a5d64bf1p-193, 0x0.0p+0, 0x0.0p+0, 0x1.9fbae5e27fd33p-185,
     0x0.0p+0},  // random
    {PK_OP_ABS, false, 0x1.c17a92642551bp-36, 0x1.67ec3264c79f4p+34, 0x0.0p+0, 0x0.0p+0, 0x1.67ec3264c79f4p+34,
     0x0.0p+0},  // random
    {PK_OP_ABS, false, -0x1.f037afc089e2ap-34, -0x1.1570267376308p-232, 0x0.0p+0, 0x0.0p+0, 0x1.f037afc089e2ap-34,
     0x0.0p+0},  // random
    {PK_OP_ABS, false, -0x1.ef00000000000p-10, -0x1.8000000000000p-8, 0x0.0p+0, 0x0.0p+0, 0x1.93729dc177939p-8,
     0x0.0p+0},  // short mantissas
    {PK_OP_ABS, false, -0x1.8c00000000000p+6, 0x1.c200000000000p+20, 0x0.0p+0, 0x0.0p+0, 0x1.c200000ae3d71p+20,
     0x0.0p+0},  // short mantissas
    {PK_OP_ABS, false, -0x1.2800000000000p+5, 0x1.8d00000000000p-11, 0x0.0p+0, 0x0.0p+0, 0x1.280000010a3b4p+5,
     0x0.0p+0},  // short mantissas
    {PK_OP_ABS, true, -0x1.bbab280000000p+25, 0x1.7989ea0000000p-27, 0x0.0p+0, 0x0.0p+0, 0x1.bbab280000000p+25,
     0x0.0p+0},  // random
    {PK_OP_ABS, true, -0x1.4ecade0000000p-11, -0x1.57bb7e0000000p+11, 0x0.0p+0, 0x0.0p+0, 0x1.57bb7e0000000p+11,
     0x0.0p+0},  // random
    {PK_OP_ABS, true, -0x1.29ca860000000p+8, 0x1.dedb920000000p+36, 0x0.0p+0, 0x0.0p+0, 0x1.dedb920000000p+36,
     0x0.0p+0},  // random
    {PK_OP_ABS, true, 0x1.9100000000000p-11, 0x1.b000000000000p+8, 0x0.0p+0, 0x0.0p+0, 0x1.b000000000000p+8,
     0x0.0p+0},  // short mantissas
    {PK_OP_ABS, true, -0x1.b980000000000p+8, -0x1.0800000000000p+9, 0x0.0p+0, 0x0.0p+0, 0x1.5821b00000000p+9,
     0x0.0p+0},  // short mantissas
    {PK_OP_ABS, true, -0x1.5480000000000p+19, 0x1.d800000000000p+18, 0x0.0p+0, 0x0.0p+0, 0x1.9e4a420000000p+19,
     0x0.0p+0},  // short mantissas
    {PK_OP_SQRT, false, -0x1.43a08f1a253a0p-153, -0x1.66465d32c7125p+103, 0x0.0p+0, 0x0.0p+0, 0x1.2ed9b3bc6df55p+51,
     -0x1.2ed9b3bc6df55p+51},  // random
    {PK_OP_SQRT, false, 0x1.c3a9e88a6fb22p-147, -0x1.48bfcbd72c48cp-256, 0x0.0p+0, 0x0.0p+0, 0x1.e0e2f10a3d6dcp-74,
     -0x1.5e04f642477d7p-184},  // random
    {PK_OP_SQRT, false, -0x1.cc4793dc920fap-213, -0x1.07fa22e156ef3p+69, 0x0.0p+0, 0x0.0p+0, 0x1.03f53c45a4ca2p+34,
     -0x1.03f53c45a4ca2p+34},  // random
    {PK_OP_SQRT, false, -0x1.7000000000000p+15, 0x1.c000000000000p-15, 0x0.0p+0, 0x0.0p+0, 0x1.08374ad23470ap-23,
     0x1.b211b1c70d023p+7},  // short mantissas
    {PK_OP_SQRT, false, -0x1.7900000000000p+19, 0x1.0000000000000p-13, 0x0.0p+0, 0x0.0p+0, 0x1.2a55c56f96e3ap-24,
     0x1.b7584fc155354p+9},  // short mantissas
    {PK_OP_SQRT, false, 0x1.ae80000000000p+20, 0x1.0f00000000000p-7, 0x0.0p+0, 0x0.0p+0, 0x1.4bf9d4c31021ap+10,
     0x1.a1f542937751ep-19},  // short mantissas
    {PK_OP_SQRT, true, -0x1.a1feb60000000p-31, 0x1.9986480000000p-8, 0x0.0p+0, 0x0.0p+0, 0x1.c9e78e0000000p-5,
     0x1.c9e7920000000p-5},  // random
    {PK_OP_SQRT, true, 0x1.0f877a0000000p-28, 0x1.b1330c0000000p-3, 0x0.0p+0, 0x0.0p+0, 0x1.4d03dc0000000p-2,
     0x1.4d03dc0000000p-2},  // random
    {PK_OP_SQRT, true, -0x1.33020c0000000p+20, 0x1.047b2c0000000p-31, 0x0.0p+0, 0x0.0p+0, 0x1.dbb8520000000p-43,
     0x1.1858a60000000p+10},  // random
    {PK_OP_SQRT, true, -0x1.4780000000000p-2, 0x1.8000000000000p+8, 0x0.0p+0, 0x0.0p+0, 0x1.bb386c0000000p+3,
     0x1.bb96f60000000p+3},  // short mantissas
    {PK_OP_SQRT, true, 0x1.d700000000000p+2, 0x1.fb80000000000p+20, 0x0.0p+0, 0x0.0p+0, 0x1.fdbef60000000p+9,
     0x1.fdbe800000000p+9},  // short mantissas
    {PK_OP_SQRT, true, 0x1.ee80000000000p+17, 0x1.3e00000000000p+8, 0x0.0p+0, 0x0.0p+0, 0x1.f72c8c0000000p+8,
     0x1.4393f20000000p-2},  // short mantissas
};

// A row's operands as (re, im) pairs: two for mul and div, one for the others (reciprocal's is c + di).
inline std::vector<std::vector<double>> complex_arith_operands(const ComplexArithCase &c) {
  if (c.op == PK_OP_MUL || c.op == PK_OP_DIV) return {{c.a, c.b}, {c.c, c.d}};
  if (c.op == PK_OP_RECIPROCAL) return {{c.c, c.d}};
  return {{c.a, c.b}};
}

}  // namespace pk::test
