/* cpow.h — complex pow of the device math: a^b with the oracle's cases (1 for b = 0, 0 for a = 0 and a real b > 0,
   else exp(b log a)), for c64 and c128 (pk_dm_cpow). Needs dd.h, bignum.h and complex.h. The result's relative error is
   about the absolute error of w = b log a, so w must be good to ~2^-56 absolutely: c128 takes log a, the product and
   the phase in double-double (double alone errs by |w| 2^-53, above a few for every |w|), and where |Im w| passes 2^26
   (double-double's phase error |w| 2^-104 radians) or Re w's two products cancel, the exact path below, in fixed
   point. c64 takes double's w up to |w| ~ 2^20, c128's paths beyond.

   The exact path (pk_dm_cpow_exact): log a and b log a in fixed point, in 32-bit words (least significant first)
   with fl words below the point and two's complement signs, at |log2 |b|| + 110 bits below the point; the phase is
   taken as a fraction of a turn (b log a / (2 pi), modulo 1), and Re(b log a) exactly, however its two products
   cancel. That is up to 36 words below the point (|b| near 2^1024): its series cost ~10^6 word products an element,
   so only the few elements with such a b take it, and the code generator's bitcode keeps it out of line
   (PK_DM_SLOW_FN). The words and the constants' tables are bignum.h's. */

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
  if (pk_dm_isnan(x) && pk_dm_isnan(y)) pk_dm_cmul_recover(p, q, c, d, &x, &y);
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
