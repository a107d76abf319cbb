/* complex.h — the elementary complex functions (exp, log, cosh/sinh and through them cos/sin, tanh, polar) of the
   device math, for c64 and c128 alike: the operand's parts as doubles (c64 parts are exact in double), the result
   written to out[0] (real part) and out[1] (imaginary part). Needs dd.h. Why out-pointers rather than a struct returned
   by value: the code generator calls these functions through the bitcode it links, and a returned struct is lowered
   differently by each target's ABI (two registers on x86-64, a by-value aggregate on NVPTX), while (double, double,
   ptr) -> void is the same call everywhere. Accuracy: finite results are computed in double-double (e^x, sin/cos,
   sinh/cosh, log as ~2^-100-accurate double-doubles, their products and quotients in double-double) and rounded once,
   so c128 results are within about half an ulp per part, as the long double std::complex the CPU backend used before;
   plain double arithmetic (exp(x) cos(y) with three roundings) reached 2.5-5 ulp. A c64 caller rounds the double result
   once more to float. Infinities, NaNs and signed zeros follow C11 Annex G and glibc's special values (the oracle's
   std::complex functions are glibc's cexpl, clogl, ...). */

PK_DM_FN void pk_dm_cset(double *out, double re, double im) {
  out[0] = re;
  out[1] = im;
}

/* 2^k for k in [-1022, 1023]. */
PK_DM_FN double pk_dm_pow2(int k) {
  return pk_dm_from_bits((PK_DM_U64)(k + 1023) << 52);
}
/* x 2^k in three power-of-two factors (ldexp is not a primitive every target has): exact whenever the result is
   normal or a multiple of the least subnormal, 0 or inf beyond the range (k clamped to +-2200, past any finite
   outcome). */
PK_DM_FN double pk_dm_ldexp(double x, int k) {
  k = k > 2200 ? 2200 : k < -2200 ? -2200 : k;
  const int k1 = k / 3, k2 = (k - k1) / 2, k3 = k - k1 - k2;
  return x * pk_dm_pow2(k1) * pk_dm_pow2(k2) * pk_dm_pow2(k3);
}
/* floor(log2 |x|) of a finite nonzero x, subnormals included. */
PK_DM_FN int pk_dm_ilogb(double x) {
  const int sub = pk_dm_fabs(x) < 2.2250738585072014e-308;
  const double s = sub ? x * 18014398509481984.0 : x; /* 2^54 */
  return (int)((pk_dm_bits(s) >> 52) & 0x7ff) - 1023 - (sub ? 54 : 0);
}
/* (q.hi + q.lo) 2^k rounded once: a subnormal result is rounded at its quantum (2^-1074, q_ulp in q's scale) from
   both parts, so that the scaling itself is exact. */
PK_DM_FN double pk_dm_ldexp_dd(pk_dm_dd q, int k) {
  if (q.lo == 0.0) return pk_dm_ldexp(q.hi, k); /* one rounding; keeps the sign of zero */
  int e = pk_dm_ilogb(q.hi);
  if (e + k >= -1022) return pk_dm_ldexp(q.hi + q.lo, k);
  q = pk_dm_dd_make(pk_dm_ldexp(q.hi, -e), pk_dm_ldexp(q.lo, -e)); /* to exponent 0: its quantum is representable */
  k += e;
  if (k < -1080) return pk_dm_copysign(0.0, q.hi); /* below half the least subnormal */
  const double q_ulp = pk_dm_ldexp(1.0, -1074 - k), half_ulp = 0.5 * q_ulp;
  double n = pk_dm_rint(q.hi / q_ulp);
  /* q.hi - n q_ulp is exact and a multiple of ulp(q.hi), which q.lo cannot cross: q.lo only decides an exact half
     (and, when 0, the tie goes to the even n). */
  const double d = q.hi - n * q_ulp;
  const int odd = n * 0.5 != pk_dm_floor(n * 0.5);
  if (d > half_ulp || (d == half_ulp && (q.lo > 0.0 || (q.lo == 0.0 && odd))))
    n += 1.0;
  else if (d < -half_ulp || (d == -half_ulp && (q.lo < 0.0 || (q.lo == 0.0 && odd))))
    n -= 1.0;
  return pk_dm_ldexp(n * q_ulp, k);
}
/* a b 2^k rounded once; a zero factor gives the signed zero of the plain product (double-double sums lose it). */
PK_DM_FN double pk_dm_dd_mul_round(pk_dm_dd a, pk_dm_dd b, int k) {
  if (a.hi == 0.0 || b.hi == 0.0) return a.hi * b.hi;
  return pk_dm_ldexp_dd(pk_dm_dd_mul(a, b), k);
}

/* sin and cos of |t| <= pi/4 + tiny in double-double: Taylor series to t^29 / 29! (below 2^-104 of the result). */
PK_DM_FN void pk_dm_dd_sincos_small(pk_dm_dd t, pk_dm_dd *s, pk_dm_dd *c) {
  const pk_dm_dd t2 = pk_dm_dd_mul(t, t);
  pk_dm_dd sv = t, cv = pk_dm_dd_make(1.0, 0.0), ts = t, tc = pk_dm_dd_make(1.0, 0.0);
  for (int k = 1; k <= 14; ++k) {
    ts = pk_dm_dd_div_d(pk_dm_dd_mul(ts, t2), (double)((2 * k) * (2 * k + 1)));
    tc = pk_dm_dd_div_d(pk_dm_dd_mul(tc, t2), (double)((2 * k - 1) * (2 * k)));
    sv = (k & 1) ? pk_dm_dd_sub(sv, ts) : pk_dm_dd_add(sv, ts);
    cv = (k & 1) ? pk_dm_dd_sub(cv, tc) : pk_dm_dd_add(cv, tc);
  }
  *s = sv;
  *c = cv;
}
/* sin and cos of a finite double a: below |a| = 2^30, a - k pi/2 with pi/2 in three parts (k pi/2's error stays
   ~2^-140), the series and the quarter turn k mod 4; beyond, the builtins' (correctly reduced) doubles. sin(+-0)
   is that zero. */
PK_DM_FN void pk_dm_dd_sincos(double a, pk_dm_dd *s, pk_dm_dd *c) {
  if (a == 0.0 || pk_dm_fabs(a) >= 1073741824.0) {
    *s = pk_dm_dd_make(a == 0.0 ? a : pk_dm_sin(a), 0.0);
    *c = pk_dm_dd_make(a == 0.0 ? 1.0 : pk_dm_cos(a), 0.0);
    return;
  }
  const double k = pk_dm_rint(a * 0.63661977236758138); /* 2 / pi */
  pk_dm_dd r = pk_dm_dd_sub(pk_dm_dd_make(a, 0.0), pk_dm_two_prod(k, 1.5707963267948966));
  r = pk_dm_dd_sub(r, pk_dm_two_prod(k, 6.123233995736766e-17));
  r = pk_dm_dd_add_d(r, k * 1.4973849048591698e-33); /* pi/2 = p1 + p2 - 1.497e-33 */
  pk_dm_dd sr, cr;
  pk_dm_dd_sincos_small(r, &sr, &cr);
  const int q = (int)(k - 4.0 * pk_dm_floor(k * 0.25));
  *s = q == 0 ? sr : q == 1 ? cr : q == 2 ? pk_dm_dd_neg(sr) : pk_dm_dd_neg(cr);
  *c = q == 0 ? cr : q == 1 ? pk_dm_dd_neg(sr) : q == 2 ? pk_dm_dd_neg(cr) : sr;
}
/* e^x = m 2^k with m in double-double, for finite |x| <= 1500 (larger magnitudes are clamped: the caller's
   rounding makes them inf or 0): r = x - k ln2, e^r from the builtin refined by one Newton step on the
   double-double log. */
PK_DM_FN pk_dm_dd pk_dm_dd_exp(double x, int *k) {
  x = x > 1500.0 ? 1500.0 : x < -1500.0 ? -1500.0 : x;
  const double kf = pk_dm_rint(x * 1.4426950408889634);
  const pk_dm_dd r = pk_dm_dd_sub(pk_dm_dd_make(x, 0.0),
                                  pk_dm_dd_mul_d(pk_dm_dd_make(0.6931471805599453, 2.3190468138462996e-17), kf));
  const double er = pk_dm_exp(r.hi);
  const pk_dm_dd d = pk_dm_dd_sub(r, pk_dm_dd_log(er));
  *k = (int)kf;
  return pk_dm_fast_sum(er, er * (d.hi + d.lo));
}
/* sinh x = s 2^k and cosh x = c 2^k in double-double for a finite x (k = 0 below |x| = 40): the Taylor series
   below |x| = 1/2 (t^27 / 27! is below 2^-110 of the sum), (e^|x| -+ e^-|x|) / 2 up to 40 (no cancellation worth a
   bit), and e^|x| / 2 beyond (e^-2|x| < 2^-115). */
PK_DM_FN void pk_dm_dd_sinh_cosh(double x, pk_dm_dd *s, pk_dm_dd *c, int *k) {
  const double ax = pk_dm_fabs(x);
  *k = 0;
  if (ax < 0.5) {
    const pk_dm_dd t2 = pk_dm_two_prod(x, x);
    pk_dm_dd sv = pk_dm_dd_make(x, 0.0), cv = pk_dm_dd_make(1.0, 0.0), ts = sv, tc = cv;
    if (x != 0.0) {
      for (int j = 1; j <= 13; ++j) {
        ts = pk_dm_dd_div_d(pk_dm_dd_mul(ts, t2), (double)((2 * j) * (2 * j + 1)));
        tc = pk_dm_dd_div_d(pk_dm_dd_mul(tc, t2), (double)((2 * j - 1) * (2 * j)));
        sv = pk_dm_dd_add(sv, ts);
        cv = pk_dm_dd_add(cv, tc);
      }
    }
    *s = sv;
    *c = cv;
    return;
  }
  int ke;
  const pk_dm_dd m = pk_dm_dd_exp(ax, &ke);
  if (ax < 40.0) {
    const pk_dm_dd e = pk_dm_dd_mul_d(m, pk_dm_pow2(ke)), inv = pk_dm_dd_div(pk_dm_dd_make(1.0, 0.0), e);
    const pk_dm_dd sh = pk_dm_dd_mul_d(pk_dm_dd_sub(e, inv), 0.5);
    *s = x < 0.0 ? pk_dm_dd_neg(sh) : sh;
    *c = pk_dm_dd_mul_d(pk_dm_dd_add(e, inv), 0.5);
  } else {
    *s = x < 0.0 ? pk_dm_dd_neg(m) : m;
    *c = m;
    *k = ke - 1;
  }
}
/* log1p of a double-double s > -1: 2 atanh(s / (2 + s)) by its odd series where |s| < 1/4 (ratio below 0.021 a
   term), else log(1 + s). */
PK_DM_FN pk_dm_dd pk_dm_dd_log1p_dd(pk_dm_dd s) {
  if (pk_dm_fabs(s.hi) >= 0.25) return pk_dm_dd_log_dd(pk_dm_dd_add_d(s, 1.0));
  const pk_dm_dd t = pk_dm_dd_div(s, pk_dm_dd_add_d(s, 2.0)), t2 = pk_dm_dd_mul(t, t);
  pk_dm_dd sum = pk_dm_dd_make(0.0, 0.0);
  for (int k = 20; k >= 0; --k) {
    const double n = 2 * k + 1, inv = 1.0 / n;
    sum = pk_dm_dd_add(pk_dm_dd_mul(sum, t2), pk_dm_dd_make(inv, -pk_dm_fma(inv, n, -1.0) / n));
  }
  return pk_dm_dd_mul_d(pk_dm_dd_mul(t, sum), 2.0);
}

/* exp(x + iy) = e^x cis(y), e^x = m 2^k: each part m cos y (m sin y) in double-double, scaled and rounded once. */
PK_DM_FN void pk_dm_cexp(double x, double y, double *out) {
  if (pk_dm_isfinite(x)) {
    if (!pk_dm_isfinite(y)) {
      pk_dm_cset(out, PK_DM_NAN, PK_DM_NAN);
    } else if (y == 0.0) {
      pk_dm_cset(out, pk_dm_exp(x), y); /* a real argument: exp's own rounding, overflow included */
    } else {
      int k;
      pk_dm_dd s, c;
      const pk_dm_dd m = pk_dm_dd_exp(x, &k);
      pk_dm_dd_sincos(y, &s, &c);
      pk_dm_cset(out, pk_dm_dd_mul_round(m, c, k), pk_dm_dd_mul_round(m, s, k));
    }
  } else if (pk_dm_isinf(x)) {
    const double v = x > 0.0 ? PK_DM_INF : 0.0;
    if (!pk_dm_isfinite(y))
      pk_dm_cset(out, v, x > 0.0 ? PK_DM_NAN : pk_dm_copysign(0.0, y));
    else if (y == 0.0)
      pk_dm_cset(out, v, y);
    else
      pk_dm_cset(out, pk_dm_copysign(v, pk_dm_cos(y)), pk_dm_copysign(v, pk_dm_sin(y)));
  } else {
    pk_dm_cset(out, PK_DM_NAN, y == 0.0 ? y : PK_DM_NAN);
  }
}

/* log z of a finite nonzero z in double-double: log|z| (near |z| = 1 as log1p(x^2 + y^2 - 1) / 2 with exact
   squares, so that it keeps its relative accuracy as it goes to 0; elsewhere k ln2 + log(|z|^2 / 4^k) / 2 with
   the parts scaled by 2^-k, so that the squares neither overflow nor underflow), and arg z = atan2(y, x) refined
   by one Newton step: theta0 + (y cos theta0 - x sin theta0) / |z|, whose terms scale with |y| where theta is
   small (relative accuracy there too). */
PK_DM_FN void pk_dm_clog_dd(double x, double y, pk_dm_dd *re, pk_dm_dd *im) {
  const double ax = pk_dm_fabs(x), ay = pk_dm_fabs(y);
  const double mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
  const int k = pk_dm_ilogb(mx);
  if (mx >= 0.5 && mx <= 2.0 && mn < 1.5) {
    const pk_dm_dd s = pk_dm_dd_add_d(pk_dm_dd_add(pk_dm_two_prod(mx, mx), pk_dm_two_prod(mn, mn)), -1.0);
    *re = pk_dm_dd_mul_d(pk_dm_dd_log1p_dd(s), 0.5);
  } else {
    const double a = pk_dm_ldexp(mx, -k), b = pk_dm_ldexp(mn, -k);
    const pk_dm_dd s = pk_dm_dd_add(pk_dm_two_prod(a, a), pk_dm_two_prod(b, b));
    *re = pk_dm_dd_add(pk_dm_dd_mul_d(pk_dm_dd_make(0.6931471805599453, 2.3190468138462996e-17), (double)k),
                       pk_dm_dd_mul_d(pk_dm_dd_log_dd(s), 0.5));
  }
  const double theta = pk_dm_atan2(y, x), xs = pk_dm_ldexp(x, -k), ys = pk_dm_ldexp(y, -k);
  pk_dm_dd st, ct;
  pk_dm_dd_sincos(theta, &st, &ct);
  const pk_dm_dd num = pk_dm_dd_sub(pk_dm_dd_mul_d(ct, ys), pk_dm_dd_mul_d(st, xs));
  *im = pk_dm_fast_sum(theta, (num.hi + num.lo) / pk_dm_sqrt(xs * xs + ys * ys));
}
/* log|z| + i arg z with glibc's special values. */
PK_DM_FN void pk_dm_clog(double x, double y, double *out) {
  if (pk_dm_isnan(x) || pk_dm_isnan(y)) {
    pk_dm_cset(out, (pk_dm_isinf(x) || pk_dm_isinf(y)) ? PK_DM_INF : PK_DM_NAN, PK_DM_NAN);
  } else if (pk_dm_isinf(x) || pk_dm_isinf(y)) {
    pk_dm_cset(out, PK_DM_INF, pk_dm_atan2(y, x));
  } else if (x == 0.0 && y == 0.0) {
    pk_dm_cset(out, -PK_DM_INF, pk_dm_atan2(y, x));
  } else {
    pk_dm_dd re, im;
    pk_dm_clog_dd(x, y, &re, &im);
    /* y = +-0: atan2 is exact (+-0 or +-pi rounded) and keeps the zero's sign, which the refinement would lose. */
    pk_dm_cset(out, re.hi, y == 0.0 ? pk_dm_atan2(y, x) : im.hi);
  }
}

/* cosh (is_cosh != 0) or sinh of x + iy: cosh x cos y + i sinh x sin y, sinh x cos y + i cosh x sin y, each part a
   double-double product scaled once (beyond |x| = 40 by the 2^k of e^|x| / 2, so that no factor overflows before
   the result does); glibc's ccosh / csinh special cases. */
PK_DM_FN void pk_dm_ccosh_sinh(double x, double y, int is_cosh, double *out) {
  const double sx = pk_dm_copysign(1.0, x);
  if (pk_dm_isfinite(x)) {
    if (pk_dm_isfinite(y)) {
      pk_dm_dd sh, ch, s, c;
      int k;
      pk_dm_dd_sinh_cosh(x, &sh, &ch, &k);
      if (y == 0.0) { /* a real argument: the other part is a signed zero (cosh x > 0, sinh x has x's sign) */
        if (is_cosh)
          pk_dm_cset(out, pk_dm_ldexp_dd(ch, k), pk_dm_copysign(0.0, x) * y);
        else
          pk_dm_cset(out, x == 0.0 ? x : pk_dm_ldexp_dd(sh, k), y);
        return;
      }
      pk_dm_dd_sincos(y, &s, &c);
      if (is_cosh)
        pk_dm_cset(out, pk_dm_dd_mul_round(ch, c, k), pk_dm_dd_mul_round(sh, s, k));
      else
        pk_dm_cset(out, pk_dm_dd_mul_round(sh, c, k), pk_dm_dd_mul_round(ch, s, k));
    } else if (is_cosh) {
      pk_dm_cset(out, y - y, x == 0.0 ? 0.0 : PK_DM_NAN);
    } else {
      pk_dm_cset(out, x == 0.0 ? x : PK_DM_NAN, x == 0.0 ? y - y : PK_DM_NAN);
    }
  } else if (pk_dm_isinf(x)) {
    if (!pk_dm_isfinite(y))
      pk_dm_cset(out, is_cosh ? PK_DM_INF : x, y - y);
    else if (y == 0.0)
      pk_dm_cset(out, is_cosh ? PK_DM_INF : x, is_cosh ? y * sx : y);
    else if (is_cosh)
      pk_dm_cset(out, pk_dm_copysign(PK_DM_INF, pk_dm_cos(y)), pk_dm_copysign(PK_DM_INF, pk_dm_sin(y)) * sx);
    else
      pk_dm_cset(out, pk_dm_copysign(PK_DM_INF, pk_dm_cos(y)) * sx, pk_dm_copysign(PK_DM_INF, pk_dm_sin(y)));
  } else {
    pk_dm_cset(out, PK_DM_NAN, y == 0.0 ? y : PK_DM_NAN);
  }
}

/* cos z = cosh(iz). */
PK_DM_FN void pk_dm_ccos(double x, double y, double *out) {
  pk_dm_ccosh_sinh(-y, x, 1, out);
}
/* sin z = -i sinh(iz). */
PK_DM_FN void pk_dm_csin(double x, double y, double *out) {
  double r[2];
  pk_dm_ccosh_sinh(-y, x, 0, r);
  pk_dm_cset(out, r[1], -r[0]);
}

/* tanh per glibc's ctanh: (sinh 2x + i sin 2y) / (cosh 2x + cos 2y) as sinh x cosh x / den and sin y cos y / den
   with den = sinh^2 x + cos^2 y (no cancellation), all in double-double. Beyond |x| = 40 tanh x is 1 to 2^-115
   and the imaginary part 4 sin y cos y e^-2|x| (to the same relative accuracy). */
PK_DM_FN void pk_dm_ctanh(double x, double y, double *out) {
  if (!pk_dm_isfinite(x) || !pk_dm_isfinite(y)) {
    if (pk_dm_isinf(x)) {
      double im = pk_dm_copysign(0.0, y);
      if (pk_dm_isfinite(y) && pk_dm_fabs(y) > 1.0) im = pk_dm_copysign(0.0, pk_dm_sin(y) * pk_dm_cos(y));
      pk_dm_cset(out, pk_dm_copysign(1.0, x), im);
    } else if (y == 0.0) {
      pk_dm_cset(out, x, y);
    } else {
      pk_dm_cset(out, x == 0.0 ? x : PK_DM_NAN, PK_DM_NAN);
    }
    return;
  }
  pk_dm_dd sy, cy;
  pk_dm_dd_sincos(y, &sy, &cy);
  if (pk_dm_fabs(x) >= 40.0) {
    int k;
    const pk_dm_dd e = pk_dm_dd_exp(-2.0 * pk_dm_fabs(x), &k);
    pk_dm_cset(out, pk_dm_copysign(1.0, x), pk_dm_dd_mul_round(pk_dm_dd_mul_d(sy, 4.0), pk_dm_dd_mul(cy, e), k));
    return;
  }
  pk_dm_dd sh, ch;
  int k;
  pk_dm_dd_sinh_cosh(x, &sh, &ch, &k);
  const pk_dm_dd den = pk_dm_dd_add(pk_dm_dd_mul(sh, sh), pk_dm_dd_mul(cy, cy));
  /* A zero part keeps its sign: x = +-0 gives re = +-0, y = +-0 gives im = +-0. */
  pk_dm_cset(out, x == 0.0 ? x : pk_dm_dd_div(pk_dm_dd_mul(sh, ch), den).hi,
             y == 0.0 ? y : pk_dm_dd_div(pk_dm_dd_mul(sy, cy), den).hi);
}

/* r (cos t + i sin t): for finite nonzero r and t, r = m 2^k (m in [1, 2)) times the double-double sin and cos of
   t, each part rounded once (three roundings in double, r cos(t) reached 2 ulp); otherwise the plain products,
   whose infinities and NaNs are the op's special values (r = inf, t = 0 gives inf + NaN i, as r sin t does). */
PK_DM_FN void pk_dm_cpolar(double r, double t, double *out) {
  if (!pk_dm_isfinite(r) || !pk_dm_isfinite(t) || r == 0.0 || t == 0.0) {
    pk_dm_cset(out, r * pk_dm_cos(t), r * pk_dm_sin(t));
    return;
  }
  const int k = pk_dm_ilogb(r);
  const pk_dm_dd m = pk_dm_dd_make(pk_dm_ldexp(r, -k), 0.0);
  pk_dm_dd s, c;
  pk_dm_dd_sincos(t, &s, &c);
  pk_dm_cset(out, pk_dm_dd_mul_round(m, c, k), pk_dm_dd_mul_round(m, s, k));
}
