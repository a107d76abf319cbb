/* bignum.h — fixed-point numbers of the device math, for the few results that need far more than double-double:
   complex pow's phase where b log a is huge (cpow.h) and the reduction of a huge angle modulo 2 pi (Payne-Hanek:
   pk_dm_bn_turns, which complex.h's sin and cos take beyond 2^30). A number is an array of 32-bit words (least
   significant first) with fl words below the point and a two's complement sign; the functions take the word count n
   and fl. Word arrays are PK_DM_BN_WORDS long (twice that for a full product), enough for 36 words below the point
   and 34 above (|log2 x| up to 1074). The long ones are PK_DM_SLOW_FN: the code generator's bitcode keeps them out of
   line. Needs dd.h. */

/* ln 2, pi / 4 and 1 / (2 pi) as 1280-bit binary fractions: 40 32-bit words, most significant first (the value is
   sum_j word[j] 2^(-32 (j + 1)), truncated); the exact path needs them to ~1152 bits below the point. Computed with
   mpmath at 1500 bits; a test checks every word against MPFR (tests/oracle/test_special_constants.cpp). */
PK_DM_CONST PK_DM_U32 pk_dm_ln2_words[40] = {
    0xb17217f7u, 0xd1cf79abu, 0xc9e3b398u, 0x03f2f6afu, 0x40f34326u, 0x7298b62du, 0x8a0d175bu, 0x8baafa2bu,
    0xe7b87620u, 0x6debac98u, 0x559552fbu, 0x4afa1b10u, 0xed2eae35u, 0xc1382144u, 0x27573b29u, 0x1169b825u,
    0x3e96ca16u, 0x224ae8c5u, 0x1acbda11u, 0x317c387eu, 0xb9ea9bc3u, 0xb136603bu, 0x256fa0ecu, 0x7657f74bu,
    0x72ce87b1u, 0x9d6548cau, 0xf5dfa6bdu, 0x38303248u, 0x655fa187u, 0x2f20e3a2u, 0xda2d97c5u, 0x0f3fd5c6u,
    0x07f4ca11u, 0xfb5bfb90u, 0x610d30f8u, 0x8fe551a2u, 0xee569d6du, 0xfc1efa15u, 0x7d2e23deu, 0x1400b396u,
};
PK_DM_CONST PK_DM_U32 pk_dm_pi4_words[40] = {
    0xc90fdaa2u, 0x2168c234u, 0xc4c6628bu, 0x80dc1cd1u, 0x29024e08u, 0x8a67cc74u, 0x020bbea6u, 0x3b139b22u,
    0x514a0879u, 0x8e3404ddu, 0xef9519b3u, 0xcd3a431bu, 0x302b0a6du, 0xf25f1437u, 0x4fe1356du, 0x6d51c245u,
    0xe485b576u, 0x625e7ec6u, 0xf44c42e9u, 0xa637ed6bu, 0x0bff5cb6u, 0xf406b7edu, 0xee386bfbu, 0x5a899fa5u,
    0xae9f2411u, 0x7c4b1fe6u, 0x49286651u, 0xece45b3du, 0xc2007cb8u, 0xa163bf05u, 0x98da4836u, 0x1c55d39au,
    0x69163fa8u, 0xfd24cf5fu, 0x83655d23u, 0xdca3ad96u, 0x1c62f356u, 0x208552bbu, 0x9ed52907u, 0x7096966du,
};
PK_DM_CONST PK_DM_U32 pk_dm_inv2pi_words[40] = {
    0x28be60dbu, 0x9391054au, 0x7f09d5f4u, 0x7d4d3770u, 0x36d8a566u, 0x4f10e410u, 0x7f9458eau, 0xf7aef158u,
    0x6dc91b8eu, 0x909374b8u, 0x01924bbau, 0x82746487u, 0x3f877ac7u, 0x2c4a69cfu, 0xba208d7du, 0x4baed121u,
    0x3a671c09u, 0xad17df90u, 0x4e64758eu, 0x60d4ce7du, 0x272117e2u, 0xef7e4a0eu, 0xc7fe25ffu, 0xf7816603u,
    0xfbcbc462u, 0xd6829b47u, 0xdb4d9fb3u, 0xc9f2c26du, 0xd3d18fd9u, 0xa797fa8bu, 0x5d49eeb1u, 0xfaf97c5eu,
    0xcf41ce7du, 0xe294a4bau, 0x9afed7ecu, 0x47e35742u, 0x1580cc11u, 0xbf1edaeau, 0xfc33ef08u, 0x26bd0d87u,
};

#define PK_DM_BN_WORDS 72

PK_DM_FN void pk_dm_bn_zero(PK_DM_U32 *r, int n) {
  for (int i = 0; i < n; ++i) r[i] = 0u;
}
PK_DM_FN void pk_dm_bn_copy(PK_DM_U32 *r, const PK_DM_U32 *a, int n) {
  for (int i = 0; i < n; ++i) r[i] = a[i];
}
PK_DM_FN int pk_dm_bn_negative(const PK_DM_U32 *a, int n) {
  return (int)(a[n - 1] >> 31);
}
PK_DM_FN PK_DM_U32 pk_dm_bn_fill(const PK_DM_U32 *a, int n) { /* the sign-extension word */
  return pk_dm_bn_negative(a, n) ? 0xffffffffu : 0u;
}
PK_DM_FN int pk_dm_bn_is_zero(const PK_DM_U32 *a, int n) {
  for (int i = 0; i < n; ++i)
    if (a[i] != 0u) return 0;
  return 1;
}
PK_DM_SLOW_FN void pk_dm_bn_negate(PK_DM_U32 *r, int n) {
  PK_DM_U64 c = 1u;
  for (int i = 0; i < n; ++i) {
    c += (PK_DM_U64)(PK_DM_U32)(~r[i]);
    r[i] = (PK_DM_U32)c;
    c >>= 32;
  }
}
/* r = a + b (flip 0) or a - b (flip 1), modulo the format. r may alias a or b. */
PK_DM_SLOW_FN void pk_dm_bn_add_sub(PK_DM_U32 *r, const PK_DM_U32 *a, const PK_DM_U32 *b, int n, int flip) {
  const PK_DM_U32 mask = flip ? 0xffffffffu : 0u;
  PK_DM_U64 c = flip ? 1u : 0u;
  for (int i = 0; i < n; ++i) {
    c += (PK_DM_U64)a[i] + (PK_DM_U64)(PK_DM_U32)(b[i] ^ mask);
    r[i] = (PK_DM_U32)c;
    c >>= 32;
  }
}
PK_DM_FN void pk_dm_bn_add(PK_DM_U32 *r, const PK_DM_U32 *a, const PK_DM_U32 *b, int n) {
  pk_dm_bn_add_sub(r, a, b, n, 0);
}
PK_DM_FN void pk_dm_bn_sub(PK_DM_U32 *r, const PK_DM_U32 *a, const PK_DM_U32 *b, int n) {
  pk_dm_bn_add_sub(r, a, b, n, 1);
}
/* r = a b, truncated to the format (the product's magnitude is truncated, then signed). r may alias a or b. */
PK_DM_SLOW_FN void pk_dm_bn_mul(PK_DM_U32 *r, const PK_DM_U32 *a, const PK_DM_U32 *b, int n, int fl) {
  PK_DM_U32 x[PK_DM_BN_WORDS], y[PK_DM_BN_WORDS], p[2 * PK_DM_BN_WORDS];
  const int neg = pk_dm_bn_negative(a, n) ^ pk_dm_bn_negative(b, n), top = fl + n;
  pk_dm_bn_copy(x, a, n);
  pk_dm_bn_copy(y, b, n);
  if (pk_dm_bn_negative(a, n)) pk_dm_bn_negate(x, n);
  if (pk_dm_bn_negative(b, n)) pk_dm_bn_negate(y, n);
  for (int k = 0; k < top; ++k) p[k] = 0u;
  for (int i = 0; i < n; ++i) {
    if (x[i] == 0u) continue;
    PK_DM_U64 c = 0u;
    int j = 0;
    for (; j < n && i + j < top; ++j) {
      c += (PK_DM_U64)x[i] * y[j] + p[i + j];
      p[i + j] = (PK_DM_U32)c;
      c >>= 32;
    }
    if (i + j < top) p[i + j] = (PK_DM_U32)c;
  }
  for (int k = 0; k < n; ++k) r[k] = p[fl + k];
  if (neg) pk_dm_bn_negate(r, n);
}
/* r = a m (two's complement times an unsigned word, modulo the format's range: exact while it fits). */
PK_DM_FN void pk_dm_bn_mul_u32(PK_DM_U32 *r, const PK_DM_U32 *a, PK_DM_U32 m, int n) {
  PK_DM_U64 c = 0u;
  for (int i = 0; i < n; ++i) {
    c += (PK_DM_U64)a[i] * m;
    r[i] = (PK_DM_U32)c;
    c >>= 32;
  }
}
/* r = a / d, truncated, for a >= 0. */
PK_DM_SLOW_FN void pk_dm_bn_div_u32(PK_DM_U32 *r, const PK_DM_U32 *a, PK_DM_U32 d, int n) {
  PK_DM_U64 rem = 0u;
  for (int i = n - 1; i >= 0; --i) {
    const PK_DM_U64 cur = (rem << 32) | (PK_DM_U64)a[i];
    r[i] = (PK_DM_U32)(cur / d);
    rem = cur % d;
  }
}
/* r = floor(a / 2^s) and r = a 2^s, s >= 0. r may alias a. */
PK_DM_SLOW_FN void pk_dm_bn_shr(PK_DM_U32 *r, const PK_DM_U32 *a, int s, int n) {
  const PK_DM_U32 fill = pk_dm_bn_fill(a, n);
  const int q = s >> 5, b = s & 31;
  for (int i = 0; i < n; ++i) {
    const PK_DM_U32 lo = i + q < n ? a[i + q] : fill, hi = i + q + 1 < n ? a[i + q + 1] : fill;
    r[i] = b ? (lo >> b) | (hi << (32 - b)) : lo;
  }
}
PK_DM_SLOW_FN void pk_dm_bn_shl(PK_DM_U32 *r, const PK_DM_U32 *a, int s, int n) {
  const int q = s >> 5, b = s & 31;
  for (int i = n - 1; i >= 0; --i) {
    const PK_DM_U32 hi = i - q >= 0 ? a[i - q] : 0u, lo = i - q - 1 >= 0 ? a[i - q - 1] : 0u;
    r[i] = b ? (hi << b) | (lo >> (32 - b)) : hi;
  }
}
/* Sign extension from n to nw words. */
PK_DM_FN void pk_dm_bn_widen(PK_DM_U32 *r, const PK_DM_U32 *a, int n, int nw) {
  const PK_DM_U32 fill = pk_dm_bn_fill(a, n);
  for (int i = 0; i < nw; ++i) r[i] = i < n ? a[i] : fill;
}
/* A finite double, exact down to the format's last bit (below it truncated towards zero). */
PK_DM_SLOW_FN void pk_dm_bn_from_double(PK_DM_U32 *r, double v, int n, int fl) {
  pk_dm_bn_zero(r, n);
  if (v == 0.0) return;
  const int e = pk_dm_ilogb(v);
  PK_DM_U64 mi = (PK_DM_U64)pk_dm_ldexp(pk_dm_fabs(v), 52 - e); /* |v| = mi 2^(e - 52), mi < 2^53 */
  int pos = e - 52 + 32 * fl;                                   /* the format's bit index of mi's last bit */
  if (pos < 0) {
    mi = pos <= -64 ? 0u : mi >> (-pos);
    pos = 0;
  }
  const int q = pos >> 5, b = pos & 31;
  const PK_DM_U64 lo = mi << b;
  const PK_DM_U32 hi = b ? (PK_DM_U32)(mi >> (64 - b)) : 0u;
  if (q < n) r[q] = (PK_DM_U32)lo;
  if (q + 1 < n) r[q + 1] = (PK_DM_U32)(lo >> 32);
  if (q + 2 < n) r[q + 2] = hi;
  if (v < 0.0) pk_dm_bn_negate(r, n);
}
/* The value as a double-double from its four leading words (finite: callers keep it below 2^1000). */
PK_DM_SLOW_FN pk_dm_dd pk_dm_bn_to_dd(const PK_DM_U32 *a, int n, int fl) {
  PK_DM_U32 x[PK_DM_BN_WORDS];
  pk_dm_bn_copy(x, a, n);
  const int neg = pk_dm_bn_negative(a, n);
  if (neg) pk_dm_bn_negate(x, n);
  int top = n - 1;
  while (top > 0 && x[top] == 0u) --top;
  pk_dm_dd s = pk_dm_dd_make(0.0, 0.0);
  for (int i = top; i >= 0 && i > top - 4; --i) s = pk_dm_dd_add_d(s, pk_dm_ldexp((double)x[i], 32 * (i - fl)));
  return neg ? pk_dm_dd_neg(s) : s;
}
/* A constant's fraction: which 0 ln 2, 1 pi / 4, 2 1 / (2 pi). */
PK_DM_FN void pk_dm_bn_const(PK_DM_U32 *r, int which, int n, int fl) {
  pk_dm_bn_zero(r, n);
  for (int j = 0; j < fl; ++j)
    r[fl - 1 - j] = which == 0 ? pk_dm_ln2_words[j] : which == 1 ? pk_dm_pi4_words[j] : pk_dm_inv2pi_words[j];
}
/* r = 1 / d for d in [1, 8): Newton's r (2 - d r) from the double quotient, 53 bits doubling to beyond 1152. */
PK_DM_SLOW_FN void pk_dm_bn_recip(PK_DM_U32 *r, const PK_DM_U32 *d, int n, int fl) {
  PK_DM_U32 e[PK_DM_BN_WORDS], two[PK_DM_BN_WORDS];
  pk_dm_bn_from_double(r, 1.0 / pk_dm_bn_to_dd(d, n, fl).hi, n, fl);
  pk_dm_bn_zero(two, n);
  two[fl] = 2u;
  for (int it = 0; it < 6; ++it) {
    pk_dm_bn_mul(e, d, r, n, fl);
    pk_dm_bn_sub(e, two, e, n);
    pk_dm_bn_mul(r, r, e, n, fl);
  }
}
/* r = sqrt(x) for x in [1, 4]: x y with y = 1 / sqrt(x) by Newton's y (3 - x y^2) / 2. */
PK_DM_SLOW_FN void pk_dm_bn_sqrt(PK_DM_U32 *r, const PK_DM_U32 *x, int n, int fl) {
  PK_DM_U32 y[PK_DM_BN_WORDS], t[PK_DM_BN_WORDS], three[PK_DM_BN_WORDS];
  pk_dm_bn_from_double(y, 1.0 / pk_dm_sqrt(pk_dm_bn_to_dd(x, n, fl).hi), n, fl);
  pk_dm_bn_zero(three, n);
  three[fl] = 3u;
  for (int it = 0; it < 6; ++it) {
    pk_dm_bn_mul(t, y, y, n, fl);
    pk_dm_bn_mul(t, t, x, n, fl);
    pk_dm_bn_sub(t, three, t, n);
    pk_dm_bn_mul(y, y, t, n, fl);
    pk_dm_bn_shr(y, y, 1, n);
  }
  pk_dm_bn_mul(r, x, y, n, fl);
}
/* a / (2 pi) modulo 1, in [-1/2, 1/2), for a finite double a (Payne-Hanek): a in fixed point times 1 / (2 pi)'s bits
   down to ~110 bits below the point whatever a's exponent, the integer part dropped; good to ~2^-105 absolutely (the
   table's 1280 bits reach |a| near 2^1024). */
PK_DM_SLOW_FN pk_dm_dd pk_dm_bn_turns(double a) {
  PK_DM_U32 x[PK_DM_BN_WORDS], c[PK_DM_BN_WORDS], w[PK_DM_BN_WORDS], p[PK_DM_BN_WORDS];
  int ea = a == 0.0 ? 0 : pk_dm_ilogb(a) + 1;
  if (ea < 0) ea = 0;
  const int fl = (ea + 110 + 31) / 32, n = fl + 1, nw = fl + (ea + 12) / 32 + 2;
  pk_dm_bn_from_double(x, a, nw, fl);
  pk_dm_bn_const(c, 2, n, fl);
  pk_dm_bn_widen(w, c, n, nw);
  pk_dm_bn_mul(p, x, w, nw, fl);
  pk_dm_bn_zero(w, nw);
  pk_dm_bn_copy(w, p, fl); /* the fraction: p - floor(p), in [0, 1) */
  pk_dm_dd t = pk_dm_bn_to_dd(w, nw, fl);
  if (t.hi >= 0.5) t = pk_dm_dd_add_d(t, -1.0);
  return t;
}
