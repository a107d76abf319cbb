/* cpow.h — complex pow of the device math: a^b with the oracle's cases (1 for b = 0, 0 for a = 0 and a real b > 0,
   else exp(b log a)), for c64 and c128 (pk_dm_cpow). Needs dd.h and complex.h. The result's relative error is about
   the absolute error of w = b log a, so w must be good to ~2^-56 absolutely: c128 takes log a, the product and the
   phase in double-double (double alone errs by |w| 2^-53, above a few for every |w|), and where |Im w| passes 2^26
   (double-double's phase error |w| 2^-104 radians) or Re w's two products cancel, the exact path below, in fixed
   point. c64 takes double's w up to |w| ~ 2^20, c128's paths beyond.

   The exact path (pk_dm_cpow_exact): log a and b log a in fixed point, in 32-bit words (least significant first)
   with fl words below the point and two's complement signs, at |log2 |b|| + 110 bits below the point; the phase is
   taken as a fraction of a turn (b log a / (2 pi), modulo 1), and Re(b log a) exactly, however its two products
   cancel. That is up to 36 words below the point (|b| near 2^1024): its series cost ~10^6 word products an element,
   so only the few elements with such a b take it, and the code generator's bitcode keeps it out of line
   (PK_DM_SLOW_FN). Word arrays are PK_DM_BN_WORDS long, twice that for a full product. */

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
/* sum_k sign^k z^(2k+1) / (2k+1) for 0 <= z <= 1/3: atanh (alternate 0) or atan (alternate 1); the terms fall by
   z^2 each until they vanish from the format. */
PK_DM_SLOW_FN void pk_dm_bn_odd_series(PK_DM_U32 *r, const PK_DM_U32 *z, int alternate, int n, int fl) {
  PK_DM_U32 z2[PK_DM_BN_WORDS], p[PK_DM_BN_WORDS], t[PK_DM_BN_WORDS];
  pk_dm_bn_mul(z2, z, z, n, fl);
  pk_dm_bn_copy(p, z, n);
  pk_dm_bn_copy(r, z, n);
  for (PK_DM_U32 k = 3u;; k += 2u) {
    pk_dm_bn_mul(p, p, z2, n, fl);
    if (pk_dm_bn_is_zero(p, n)) break;
    pk_dm_bn_div_u32(t, p, k, n);
    pk_dm_bn_add_sub(r, r, t, n, alternate && (k & 2u));
  }
}
/* log|a| and arg a of a finite nonzero a. With m = max(|x|, |y|) 2^-k in [1, 2): |a|^2 2^-2k = S in [1, 8), exact
   (to the format), log|a| = (2k + j) ln2 / 2 + atanh(z), z = (s - 1) / (s + 1), s = S 2^-j in [1, 2). arg a: atan
   of t = min / max, halved twice (t / (1 + sqrt(1 + t^2))) to below tan(pi / 16), then the octant. */
PK_DM_SLOW_FN void pk_dm_bn_clog(PK_DM_U32 *lr, PK_DM_U32 *li, double x, double y, int n, int fl) {
  PK_DM_U32 X[PK_DM_BN_WORDS], Y[PK_DM_BN_WORDS], s[PK_DM_BN_WORDS], t[PK_DM_BN_WORDS], u[PK_DM_BN_WORDS];
  const double ax = pk_dm_fabs(x), ay = pk_dm_fabs(y), mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
  const int k = pk_dm_ilogb(mx);
  pk_dm_bn_from_double(X, pk_dm_ldexp(mx, -k), n, fl);
  pk_dm_bn_from_double(Y, pk_dm_ldexp(mn, -k), n, fl);
  pk_dm_bn_mul(s, X, X, n, fl);
  pk_dm_bn_mul(t, Y, Y, n, fl);
  pk_dm_bn_add(s, s, t, n);
  int j = 0; /* the units word's leading bit: S is in [1, 8) */
  while ((s[fl] >> (j + 1)) != 0u) ++j;
  pk_dm_bn_shr(s, s, j, n);
  pk_dm_bn_copy(t, s, n);
  t[fl] += 1u; /* s + 1 */
  s[fl] -= 1u; /* s - 1 */
  pk_dm_bn_recip(u, t, n, fl);
  pk_dm_bn_mul(t, s, u, n, fl);
  pk_dm_bn_odd_series(lr, t, 0, n, fl);
  const int e = 2 * k + j;
  pk_dm_bn_const(u, 0, n, fl);
  pk_dm_bn_mul_u32(u, u, (PK_DM_U32)(e < 0 ? -e : e), n);
  if (e < 0) pk_dm_bn_negate(u, n);
  pk_dm_bn_shr(u, u, 1, n);
  pk_dm_bn_add(lr, lr, u, n);

  pk_dm_bn_recip(u, X, n, fl);
  pk_dm_bn_mul(t, Y, u, n, fl);
  for (int h = 0; h < 2; ++h) {
    pk_dm_bn_mul(u, t, t, n, fl);
    u[fl] += 1u;
    pk_dm_bn_sqrt(s, u, n, fl);
    s[fl] += 1u;
    pk_dm_bn_recip(u, s, n, fl);
    pk_dm_bn_mul(t, t, u, n, fl);
  }
  pk_dm_bn_odd_series(li, t, 1, n, fl);
  pk_dm_bn_shl(li, li, 2, n);
  pk_dm_bn_const(u, 1, n, fl);
  if (ay > ax) { /* pi/2 - atan */
    pk_dm_bn_shl(u, u, 1, n);
    pk_dm_bn_sub(li, u, li, n);
    pk_dm_bn_shr(u, u, 1, n);
  }
  if (x < 0.0) { /* pi - that */
    pk_dm_bn_shl(u, u, 2, n);
    pk_dm_bn_sub(li, u, li, n);
  }
  if (pk_dm_signbit(y)) pk_dm_bn_negate(li, n);
}
/* a^b for finite a != 0 and finite b, exactly enough for any b: Re(b log a) and the turn Im(b log a) / (2 pi) modulo
   1 in fixed point, then pk_dm_cexp_dd of Re and the phase in [-pi, pi]. */
PK_DM_SLOW_FN void pk_dm_cpow_exact(double ar, double ai, double br, double bi, double *out) {
  PK_DM_U32 lr[PK_DM_BN_WORDS], li[PK_DM_BN_WORDS], c[PK_DM_BN_WORDS], wl[PK_DM_BN_WORDS], wa[PK_DM_BN_WORDS];
  PK_DM_U32 bx[PK_DM_BN_WORDS], by[PK_DM_BN_WORDS], p[PK_DM_BN_WORDS], q[PK_DM_BN_WORDS];
  const double bm = pk_dm_fabs(br) > pk_dm_fabs(bi) ? pk_dm_fabs(br) : pk_dm_fabs(bi);
  int eb = pk_dm_ilogb(bm) + 1;
  if (eb < 0) eb = 0;
  const int fl = (eb + 110 + 31) / 32, n = fl + 1, nw = fl + (eb + 12) / 32 + 2;
  pk_dm_bn_clog(lr, li, ar, ai, n, fl);
  pk_dm_bn_from_double(bx, br, nw, fl);
  pk_dm_bn_from_double(by, bi, nw, fl);
  /* Re(b log a) = bx log|a| - by arg a */
  pk_dm_bn_widen(wl, lr, n, nw);
  pk_dm_bn_widen(wa, li, n, nw);
  pk_dm_bn_mul(p, bx, wl, nw, fl);
  pk_dm_bn_mul(q, by, wa, nw, fl);
  pk_dm_bn_sub(p, p, q, nw);
  const PK_DM_U32 fill = pk_dm_bn_fill(p, nw);
  int big = 0; /* |Re| >= 2^32: exp gives 0 or infinity whatever the phase */
  for (int i = fl + 1; i < nw; ++i) big |= p[i] != fill;
  const pk_dm_dd wr = big ? pk_dm_dd_make(fill ? -0x1p40 : 0x1p40, 0.0) : pk_dm_bn_to_dd(p, nw, fl);
  /* Im(b log a) / (2 pi) = bx arg a / (2 pi) + by log|a| / (2 pi); the fraction words are the turn. */
  pk_dm_bn_const(c, 2, n, fl);
  pk_dm_bn_mul(p, li, c, n, fl);
  pk_dm_bn_widen(wa, p, n, nw);
  pk_dm_bn_mul(p, lr, c, n, fl);
  pk_dm_bn_widen(wl, p, n, nw);
  pk_dm_bn_mul(p, bx, wa, nw, fl);
  pk_dm_bn_mul(q, by, wl, nw, fl);
  pk_dm_bn_add(p, p, q, nw);
  pk_dm_bn_zero(q, nw);
  pk_dm_bn_copy(q, p, fl);
  pk_dm_dd turn = pk_dm_bn_to_dd(q, nw, fl);
  if (turn.hi >= 0.5) turn = pk_dm_dd_add_d(turn, -1.0);
  const pk_dm_dd phase = pk_dm_dd_mul(turn, pk_dm_dd_make(6.283185307179586, 2.4492935982947064e-16));
  pk_dm_cexp_dd(wr.hi, wr.lo, phase.hi, phase.lo, out);
}

/* u v 2^-k where both are finite (u the scaled operand), else the IEEE product (its inf or NaN, unscaled). */
PK_DM_FN double pk_dm_mul_down(double u, double v, int k) {
  return (pk_dm_isfinite(u) && pk_dm_isfinite(v)) ? pk_dm_ldexp(u, -k) * v : u * v;
}
/* A part of w 2^-k back to w: finite values beyond double's range are finite in the oracle's wider w, so they stay
   finite (the largest double): exp gives the same 0 or infinity, and its phase is arbitrary in both. */
PK_DM_FN double pk_dm_scale_back(double v, int k) {
  if (!pk_dm_isfinite(v)) return v;
  const double r = pk_dm_ldexp(v, k);
  return pk_dm_isinf(r) ? pk_dm_copysign(0x1.fffffffffffffp+1023, v) : r;
}
/* exp(b log a) in double, with Annex G's product (pk_dm_cmul_g's recovery of infinities) taken on b scaled by
   2^-kb (the oracle's w is wider than double: no product of finite parts overflows there) and scaled back. */
PK_DM_FN void pk_dm_cpow_plain(double ar, double ai, double br, double bi, int kb, double *out) {
  double l[2];
  pk_dm_clog(ar, ai, l);
  /* Parts of log a below double's range are not 0 in the oracle: an infinite b part times them is infinite, not
     NaN. Their signs are those of y (arg) and of |a| - 1 (> 0: |a| = 1 only exactly). */
  if (pk_dm_isfinite(ar) && pk_dm_isfinite(ai)) {
    if (l[1] == 0.0 && ai != 0.0) l[1] = pk_dm_copysign(0x1p-1074, ai);
    if (l[0] == 0.0 && ar != 0.0 && ai != 0.0) l[0] = 0x1p-1074;
  }
  double p = br, q = bi, c = l[0], d = l[1];
  double x = pk_dm_mul_down(p, c, kb) - pk_dm_mul_down(q, d, kb),
         y = pk_dm_mul_down(p, d, kb) + pk_dm_mul_down(q, c, kb);
  if (pk_dm_isnan(x) && pk_dm_isnan(y)) { /* pk_dm_cmul_g's recovery of infinities */
    int re = 0;
    if (pk_dm_isinf(p) || pk_dm_isinf(q)) {
      p = pk_dm_box(p);
      q = pk_dm_box(q);
      c = pk_dm_unnan(c);
      d = pk_dm_unnan(d);
      re = 1;
    }
    if (pk_dm_isinf(c) || pk_dm_isinf(d)) {
      c = pk_dm_box(c);
      d = pk_dm_box(d);
      p = pk_dm_unnan(p);
      q = pk_dm_unnan(q);
      re = 1;
    }
    if (re) {
      x = PK_DM_INF * (p * c - q * d);
      y = PK_DM_INF * (p * d + q * c);
    }
  }
  pk_dm_cexp(pk_dm_scale_back(x, kb), pk_dm_scale_back(y, kb), out);
}
/* c128 a^b (a = 0 and b = 0 handled by the caller). Non-finite operands and a = 0: pk_dm_cpow_plain, then cexp's
   special values. Otherwise log a, w and the phase in double-double; where w's real part is beyond exp's range the
   result is 0 or a complex infinity whatever the phase; where |Im w| >= 2^26 or Re w's products cancel, the exact
   path. */
PK_DM_FN void pk_dm_cpow128(double ar, double ai, double br, double bi, double *out) {
  const double abr = pk_dm_isfinite(br) ? pk_dm_fabs(br) : 0.0, abi = pk_dm_isfinite(bi) ? pk_dm_fabs(bi) : 0.0;
  const double bm = abr > abi ? abr : abi;
  const int kb = bm > 0x1p900 ? pk_dm_ilogb(bm) : 0;
  if (!pk_dm_cfinite(ar, ai, br, bi) || (ar == 0.0 && ai == 0.0)) {
    pk_dm_cpow_plain(ar, ai, br, bi, kb, out);
    return;
  }
  const double bx = pk_dm_ldexp(br, -kb), by = pk_dm_ldexp(bi, -kb);
  pk_dm_dd lr, li;
  pk_dm_clog_dd(ar, ai, &lr, &li);
  pk_dm_dd wr = pk_dm_dd_sub(pk_dm_dd_mul_d(lr, bx), pk_dm_dd_mul_d(li, by));
  pk_dm_dd wi = pk_dm_dd_add(pk_dm_dd_mul_d(li, bx), pk_dm_dd_mul_d(lr, by));
  /* Beyond |Im w| = 2^26 the phase, and where Re w's two products (each good to ~2^-90 of itself) cancel, Re w, need
     the exact path. */
  const double mb = pk_dm_fabs(bx) > pk_dm_fabs(by) ? pk_dm_fabs(bx) : pk_dm_fabs(by);
  const double ml = pk_dm_fabs(lr.hi) > pk_dm_fabs(li.hi) ? pk_dm_fabs(lr.hi) : pk_dm_fabs(li.hi);
  const double terms = pk_dm_ldexp(mb * ml, kb);
  if (pk_dm_ldexp(pk_dm_fabs(wi.hi), kb) >= 0x1p26 ||
      (terms >= 0x1p26 && pk_dm_ldexp(pk_dm_fabs(wr.hi), kb) <= 0x1p12 + terms * 0x1p-90)) {
    pk_dm_cpow_exact(ar, ai, br, bi, out);
    return;
  }
  if (kb > 0) {
    const double re = pk_dm_ldexp(wr.hi, kb);
    if (re < -746.0 || re > 710.0) {
      const double v = re > 0.0 ? PK_DM_INF : 0.0;
      pk_dm_cset(out, v, v);
      return;
    }
    wr = pk_dm_dd_make(re, pk_dm_ldexp(wr.lo, kb));
    wi = pk_dm_dd_make(pk_dm_ldexp(wi.hi, kb), pk_dm_ldexp(wi.lo, kb));
  }
  pk_dm_cexp_dd(wr.hi, wr.lo, wi.hi, wi.lo, out);
}
/* a^b as the oracle defines it: 1 for b = 0, 0 for a = 0 with a real b > 0, else exp(b log a). f32 = 1: c64 operands
   (floats, exact in double), the parts rounded once to float (as pk_dm_cmul's f32): w in double holds the phase to
   the float result's accuracy up to |w| ~ 2^20, c128's paths beyond. f32 = 0: c128 (pk_dm_cpow128). */
PK_DM_FN void pk_dm_cpow(double ar, double ai, double br, double bi, int f32, double *out) {
  if (br == 0.0 && bi == 0.0) {
    pk_dm_cset(out, 1.0, 0.0);
  } else if (ar == 0.0 && ai == 0.0 && bi == 0.0 && br > 0.0) {
    pk_dm_cset(out, 0.0, 0.0);
  } else if (!f32) {
    pk_dm_cpow128(ar, ai, br, bi, out);
  } else {
    int wide = 0;
    if (pk_dm_cfinite(ar, ai, br, bi) && (ar != 0.0 || ai != 0.0)) {
      double l[2];
      pk_dm_clog(ar, ai, l);
      const double mb = pk_dm_fabs(br) > pk_dm_fabs(bi) ? pk_dm_fabs(br) : pk_dm_fabs(bi);
      const double ml = pk_dm_fabs(l[0]) > pk_dm_fabs(l[1]) ? pk_dm_fabs(l[0]) : pk_dm_fabs(l[1]);
      wide = mb * ml >= 0x1p20;
    }
    if (wide) {
      pk_dm_cpow128(ar, ai, br, bi, out);
    } else { /* exp(b log a), Annex G's product (no scaling: c64 parts cannot overflow it) */
      double l[2], w[2];
      pk_dm_clog(ar, ai, l);
      pk_dm_cmul_g(br, bi, l[0], l[1], w);
      pk_dm_cexp(w[0], w[1], out);
    }
    pk_dm_cset(out, pk_dm_to_fmt(out[0], 1), pk_dm_to_fmt(out[1], 1));
  }
}
