/* complex.h — the complex functions of the device math: the elementary ones (exp, log, cosh/sinh and through them
   cos/sin, tanh, polar; e^w of a double-double w for complex pow, cpow.h), in the second half the correctly rounded
   arithmetic (products, quotients, moduli, square roots), and at the end the steps of the complex reductions (running
   products and sums). For c64 and c128 alike: the operands' parts as doubles (c64 parts are exact in double), the
   result written to out[0] (real part) and out[1] (imaginary part). Needs dd.h. Why out-pointers rather than a struct
   returned by value: the code generator calls these functions through the bitcode it links, and a returned struct is
   lowered differently by each target's ABI (two registers on x86-64, a by-value aggregate on NVPTX), while (double,
   double, ptr) -> void is the same call everywhere. Accuracy of the elementary functions: finite results are computed
   in double-double (e^x, sin/cos, sinh/cosh, log as ~2^-100-accurate double-doubles, their products and quotients in
   double-double) and rounded once, so c128 results are within about half an ulp per part, as the long double
   std::complex the CPU backend used before; plain double arithmetic (exp(x) cos(y) with three roundings) reached 2.5-5
   ulp. A c64 caller rounds their double result once more to float (the arithmetic rounds c64 parts once itself: see
   there). Infinities, NaNs and signed zeros follow C11 Annex G and glibc's special values (the oracle's std::complex
   functions are glibc's cexpl, clogl, ...). */

PK_DM_FN void pk_dm_cset(double *out, double re, double im) {
  out[0] = re;
  out[1] = im;
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

/* sin and cos of a double-double angle |a| < 2^30: a - k pi/2 with pi/2 in three parts (k pi/2's error stays
   ~2^-140), the series and the quarter turn k mod 4. */
PK_DM_FN void pk_dm_dd_sincos_dd(pk_dm_dd a, pk_dm_dd *s, pk_dm_dd *c) {
  const double k = pk_dm_rint(a.hi * 0.63661977236758138); /* 2 / pi */
  pk_dm_dd r = pk_dm_dd_sub(a, pk_dm_two_prod(k, 1.5707963267948966));
  r = pk_dm_dd_sub(r, pk_dm_two_prod(k, 6.123233995736766e-17));
  r = pk_dm_dd_add_d(r, k * 1.4973849048591698e-33); /* pi/2 = p1 + p2 - 1.497e-33 */
  pk_dm_dd sr, cr;
  pk_dm_dd_sincos_small(r, &sr, &cr);
  const int q = (int)(k - 4.0 * pk_dm_floor(k * 0.25));
  *s = q == 0 ? sr : q == 1 ? cr : q == 2 ? pk_dm_dd_neg(sr) : pk_dm_dd_neg(cr);
  *c = q == 0 ? cr : q == 1 ? pk_dm_dd_neg(sr) : q == 2 ? pk_dm_dd_neg(cr) : sr;
}
/* sin and cos of 2 pi t for a turn t in [-1/2, 1/2] (bignum.h's reduction of a huge angle). */
PK_DM_FN void pk_dm_dd_sincos_turn(pk_dm_dd t, pk_dm_dd *s, pk_dm_dd *c) {
  pk_dm_dd_sincos_dd(pk_dm_dd_mul(t, pk_dm_dd_make(6.283185307179586, 2.4492935982947064e-16)), s, c);
}
/* sin and cos of a finite double a: pk_dm_dd_sincos_dd below |a| = 2^30; beyond, of a's turn (Payne-Hanek,
   pk_dm_bn_turns), as accurate whatever |a|. sin(+-0) is that zero. */
PK_DM_FN void pk_dm_dd_sincos(double a, pk_dm_dd *s, pk_dm_dd *c) {
  if (a == 0.0) {
    *s = pk_dm_dd_make(a, 0.0);
    *c = pk_dm_dd_make(1.0, 0.0);
  } else if (pk_dm_fabs(a) >= 1073741824.0) {
    pk_dm_dd_sincos_turn(pk_dm_bn_turns(a), s, c);
  } else {
    pk_dm_dd_sincos_dd(pk_dm_dd_make(a, 0.0), s, c);
  }
}
/* e^x = m 2^k with m in double-double, for a double-double x with |x.hi| <= 1500 (larger magnitudes are clamped:
   the caller's rounding makes them inf or 0): r = x - k ln2, e^r from the builtin refined by one Newton step on the
   double-double log. */
PK_DM_FN pk_dm_dd pk_dm_dd_exp_dd(pk_dm_dd x, int *k) {
  if (x.hi > 1500.0 || x.hi < -1500.0) x = pk_dm_dd_make(x.hi > 0.0 ? 1500.0 : -1500.0, 0.0);
  const double kf = pk_dm_rint(x.hi * 1.4426950408889634);
  const pk_dm_dd r = pk_dm_dd_sub(x, pk_dm_dd_mul_d(pk_dm_dd_make(0.6931471805599453, 2.3190468138462996e-17), kf));
  const double er = pk_dm_exp(r.hi);
  const pk_dm_dd d = pk_dm_dd_sub(r, pk_dm_dd_log(er));
  *k = (int)kf;
  return pk_dm_fast_sum(er, er * (d.hi + d.lo));
}
/* The same for a finite double x. */
PK_DM_FN pk_dm_dd pk_dm_dd_exp(double x, int *k) {
  return pk_dm_dd_exp_dd(pk_dm_dd_make(x, 0.0), k);
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

/* e^(wr + i wi) for double-double wr and wi (complex pow's w = b log a, whose absolute accuracy the result's relative
   accuracy is): 2^k e^r cis(wi) with e^r 2^k from pk_dm_dd_exp_dd, each part rounded once (pk_dm_ldexp_dd: exact
   scaling, subnormals included). Beyond |wi| = 2^30 the phase from wi's turn (Payne-Hanek, bignum.h). |k| > 2000: an
   infinity or a zero whatever the phase (a real power, wi = 0, keeps its zero imaginary part rather than 0 * inf). A
   NaN wr gives NaN parts. */
PK_DM_FN void pk_dm_cexp_dd(double wr_hi, double wr_lo, double wi_hi, double wi_lo, double *out) {
  pk_dm_dd s, c;
  if (pk_dm_fabs(wi_hi) < 1073741824.0) {
    pk_dm_dd_sincos_dd(pk_dm_dd_make(wi_hi, wi_lo), &s, &c);
  } else if (pk_dm_isfinite(wi_hi)) { /* the turns of both parts (lo may itself be huge) */
    pk_dm_dd t = pk_dm_bn_turns(wi_hi);
    if (pk_dm_fabs(wi_lo) >= 1073741824.0)
      t = pk_dm_dd_add(t, pk_dm_bn_turns(wi_lo));
    else
      t = pk_dm_dd_add(t, pk_dm_dd_mul_d(pk_dm_dd_make(0.15915494309189535, -9.839338337591243e-18), wi_lo));
    t = pk_dm_dd_add_d(t, -pk_dm_rint(t.hi)); /* back to [-1/2, 1/2] */
    pk_dm_dd_sincos_turn(t, &s, &c);
  } else {
    s = pk_dm_dd_make(pk_dm_sin(wi_hi), 0.0);
    c = pk_dm_dd_make(pk_dm_cos(wi_hi), 0.0);
  }
  const double kf = pk_dm_rint(wr_hi * 1.4426950408889634);
  if (pk_dm_fabs(kf) > 2000.0) {
    const double e = kf > 0.0 ? PK_DM_INF : 0.0;
    if (wi_hi == 0.0)
      pk_dm_cset(out, e, wi_hi);
    else
      pk_dm_cset(out, e * (c.hi + c.lo), e * (s.hi + s.lo));
    return;
  }
  if (pk_dm_isnan(wr_hi)) {
    pk_dm_cset(out, wr_hi, wr_hi);
    return;
  }
  int k;
  const pk_dm_dd e = pk_dm_dd_exp_dd(pk_dm_dd_make(wr_hi, wr_lo), &k);
  if (wi_hi == 0.0)
    pk_dm_cset(out, pk_dm_ldexp_dd(e, k), wi_hi);
  else
    pk_dm_cset(out, pk_dm_ldexp_dd(pk_dm_dd_mul(e, c), k), pk_dm_ldexp_dd(pk_dm_dd_mul(e, s), k));
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

/* ---------------------------------------------------------------------------------------------------------------
   Complex arithmetic: products, quotients (and through them reciprocals), moduli and square roots, which the op
   table contracts correctly rounded per part. f32 = 0 rounds each part to double; f32 = 1 (c64: the parts are
   floats, exact in double) rounds it once to float and returns that float as a double, so that the caller's
   conversion is exact: rounding a double result once more to float would be a second rounding, wrong by one ulp
   near float midpoints. The parts are computed in double-double (~2^-100 relative) and rounded once at the format's
   precision; where that lies too near a rounding midpoint to decide, the exact sign of (value - midpoint), a sum of
   error-free products, decides (Ziv's strategy: the exact test runs for about one operand in 2^40). Non-finite
   operands and zero divisors take C11 Annex G's values (libgcc's __muldc3 / __divdc3, as the oracle's std::complex),
   computed in double. */

PK_DM_FN int pk_dm_cfinite(double a, double b, double c, double d) {
  return pk_dm_isfinite(a) && pk_dm_isfinite(b) && pk_dm_isfinite(c) && pk_dm_isfinite(d);
}
/* v rounded to the caller's format (a double holding a float for f32). */
PK_DM_FN double pk_dm_to_fmt(double v, int f32) {
  return f32 ? (double)(float)v : v;
}
PK_DM_FN double pk_dm_box(double v) {
  return pk_dm_copysign(pk_dm_isinf(v) ? 1.0 : 0.0, v);
}
PK_DM_FN double pk_dm_unnan(double v) {
  return pk_dm_isnan(v) ? pk_dm_copysign(0.0, v) : v;
}
/* Annex G's recovery of infinities (G.5.1's _Cmultd) for a product (a + bi)(c + di) whose two parts both came out
   NaN: where an operand is infinite, *x and *y become the complex infinity the limit gives. Shared by pk_dm_cmul_g
   and complex pow's scaled product (cpow.h). */
PK_DM_FN void pk_dm_cmul_recover(double a, double b, double c, double d, double *x, double *y) {
  int re = 0;
  if (pk_dm_isinf(a) || pk_dm_isinf(b)) {
    a = pk_dm_box(a);
    b = pk_dm_box(b);
    c = pk_dm_unnan(c);
    d = pk_dm_unnan(d);
    re = 1;
  }
  if (pk_dm_isinf(c) || pk_dm_isinf(d)) {
    c = pk_dm_box(c);
    d = pk_dm_box(d);
    a = pk_dm_unnan(a);
    b = pk_dm_unnan(b);
    re = 1;
  }
  if (re) {
    *x = PK_DM_INF * (a * c - b * d);
    *y = PK_DM_INF * (a * d + b * c);
  }
}
/* (a + bi)(c + di) with Annex G's recovery of infinities where both parts come out NaN. Its recovery of products
   that overflow is left out: exact arithmetic (and the oracle) has no such overflow, and finite operands take the
   correctly rounded paths. */
PK_DM_FN void pk_dm_cmul_g(double a, double b, double c, double d, double *out) {
  double x = a * c - b * d, y = a * d + b * c;
  if (pk_dm_isnan(x) && pk_dm_isnan(y)) pk_dm_cmul_recover(a, b, c, d, &x, &y);
  pk_dm_cset(out, x, y);
}
/* (a + bi) / (c + di) by Smith's method with Annex G's recovery of infinities and zeros (libgcc's __divdc3: the
   signs of zero parts follow its evaluation order). */
PK_DM_FN void pk_dm_cdiv_g(double a, double b, double c, double d, double *out) {
  double x, y;
  if (pk_dm_fabs(c) < pk_dm_fabs(d)) {
    const double ratio = c / d, denom = (c * ratio) + d;
    x = ((a * ratio) + b) / denom;
    y = ((b * ratio) - a) / denom;
  } else {
    const double ratio = d / c, denom = (d * ratio) + c;
    x = ((b * ratio) + a) / denom;
    y = (b - (a * ratio)) / denom;
  }
  if (pk_dm_isnan(x) && pk_dm_isnan(y)) {
    if (c == 0.0 && d == 0.0 && (!pk_dm_isnan(a) || !pk_dm_isnan(b))) {
      x = pk_dm_copysign(PK_DM_INF, c) * a;
      y = pk_dm_copysign(PK_DM_INF, c) * b;
    } else if ((pk_dm_isinf(a) || pk_dm_isinf(b)) && pk_dm_isfinite(c) && pk_dm_isfinite(d)) {
      a = pk_dm_box(a);
      b = pk_dm_box(b);
      x = PK_DM_INF * (a * c + b * d);
      y = PK_DM_INF * (b * c - a * d);
    } else if ((pk_dm_isinf(c) || pk_dm_isinf(d)) && pk_dm_isfinite(a) && pk_dm_isfinite(b)) {
      c = pk_dm_box(c);
      d = pk_dm_box(d);
      x = 0.0 * (a * c + b * d);
      y = 0.0 * (b * c - a * d);
    }
  }
  pk_dm_cset(out, x, y);
}

/* The exact sign of t[0] + ... + t[n-1] (no overflow): two-sum sweeps keep the sum and converge to a
   nonoverlapping expansion, whose leading term has the sum's sign. t is overwritten. */
PK_DM_FN int pk_dm_sum_sign(double *t, int n) {
  for (int pass = 0; pass <= n; ++pass) {
    for (int i = n - 1; i > 0; --i) {
      const pk_dm_dd s = pk_dm_two_sum(t[i - 1], t[i]);
      t[i - 1] = s.hi;
      t[i] = s.lo;
    }
  }
  for (int i = 0; i < n; ++i)
    if (t[i] != 0.0) return t[i] > 0.0 ? 1 : -1;
  return 0;
}

/* A double-double q standing for q 2^k, rounded once to p bits (53: double, 24: float) with the format's least
   subnormal 2^emin (-1074, -149). pk_dm_rnd_at finds, in q's scale (|q.hi| near 1, within 2^+-800), the quantum u
   at the value's exponent, the candidate n u nearest q.hi, the side s (+-1) of the value beyond it and the midpoint
   mh + ml = n u + s u / 2 (p + 1 bits: two doubles, both exact); r is q's own decision, and doubt says that q lies
   within 2^-90 of itself of the midpoint, where its error could put it on the wrong side (an exact tie included).
   pk_dm_rnd_settle then decides from the exact sign of value - midpoint. The result is r 2^k (pk_dm_ldexp: exact, r
   being a multiple of the format's quantum; beyond the range the infinity the rounding gives). */
typedef struct {
  double n, u, mh, ml, r, sign;
  int s, doubt;
} pk_dm_rnd;

PK_DM_FN pk_dm_rnd pk_dm_rnd_at(pk_dm_dd q, int k, int p, int emin) {
  pk_dm_rnd o;
  o.s = 0;
  o.doubt = 0;
  o.mh = o.ml = o.n = 0.0;
  o.u = 1.0;
  o.r = q.hi;
  o.sign = q.hi;
  if (q.hi == 0.0) return o;
  int e = pk_dm_ilogb(q.hi);
  /* Just below a power of two the value lies in the binade below, whose quantum is half. */
  if (q.lo != 0.0 && (q.lo < 0.0) != (q.hi < 0.0) && pk_dm_fabs(q.hi) == pk_dm_pow2(e)) e -= 1;
  int qe = e - (p - 1);
  if (qe < emin - k) qe = emin - k; /* subnormal: the format's least subnormal */
  if (qe > e + 2) {                 /* below a quarter of the least subnormal: a zero */
    o.r = pk_dm_copysign(0.0, q.hi);
    return o;
  }
  o.u = pk_dm_pow2(qe);
  o.n = pk_dm_rint(q.hi / o.u);
  const double d = q.hi - o.n * o.u; /* exact; |d| <= u / 2 */
  o.s = d > 0.0 ? 1 : d < 0.0 ? -1 : q.lo > 0.0 ? 1 : q.lo < 0.0 ? -1 : 0;
  o.r = pk_dm_copysign(o.n * o.u, q.hi);
  if (o.s == 0) return o; /* q is exactly representable */
  /* How far the value lies beyond the midpoint (|d| - u/2 is exact). */
  const double beyond = (pk_dm_fabs(d) - 0.5 * o.u) + (o.s > 0 ? q.lo : -q.lo);
  o.mh = o.n * o.u;
  o.ml = 0.5 * o.s * o.u;
  o.doubt = pk_dm_fabs(beyond) <= pk_dm_fabs(q.hi) * 0x1p-90;
  if (beyond > 0.0 || (beyond == 0.0 && o.n * 0.5 != pk_dm_floor(o.n * 0.5)))
    o.r = pk_dm_copysign((o.n + o.s) * o.u, q.hi);
  return o;
}
/* The rounding decided by sg, the exact sign of value - midpoint: beyond it, below it, or a tie (to the even
   quantum). */
PK_DM_FN double pk_dm_rnd_settle(pk_dm_rnd o, int sg) {
  double n = o.n;
  if (sg == o.s || (sg == 0 && n * 0.5 != pk_dm_floor(n * 0.5))) n += o.s;
  return pk_dm_copysign(n * o.u, o.sign);
}
/* m^2 for the midpoint m = mh + ml as four exact terms (ml is a power of two, or 0): mh^2 (two parts), 2 mh ml,
   ml^2. mh and ml are near 1 in the callers' scale: nothing underflows. */
PK_DM_FN void pk_dm_rnd_mid_sq(pk_dm_rnd o, double *t) {
  const pk_dm_dd mm = pk_dm_two_prod(o.mh, o.mh);
  t[0] = mm.hi;
  t[1] = mm.lo;
  t[2] = 2.0 * o.mh * o.ml;
  t[3] = o.ml * o.ml;
}

/* p1 q1 + p2 q2 as (t[0] + t[1] + t[2] + t[3]) 2^e: t[0] + t[1] and t[2] + t[3] the exact products of the factors
   scaled into [1, 2) (so that the fma error terms are exact and nothing overflows or underflows). A product more
   than 2^1000 below the other keeps only its sign at 2^-1000 relative: it can then only break a tie. A zero
   product is two zeros. */
PK_DM_FN int pk_dm_dot2_terms(double p1, double q1, double p2, double q2, double *t) {
  const int z1 = p1 == 0.0 || q1 == 0.0, z2 = p2 == 0.0 || q2 == 0.0;
  const int k1 = z1 ? 0 : pk_dm_ilogb(p1), j1 = z1 ? 0 : pk_dm_ilogb(q1);
  const int k2 = z2 ? 0 : pk_dm_ilogb(p2), j2 = z2 ? 0 : pk_dm_ilogb(q2);
  const int e1 = k1 + j1, e2 = k2 + j2, e = z1 ? e2 : z2 ? e1 : (e1 > e2 ? e1 : e2);
  t[0] = t[1] = t[2] = t[3] = 0.0;
  if (!z1) {
    const double a = pk_dm_ldexp(p1, -k1), b = pk_dm_ldexp(pk_dm_ldexp(q1, -j1), e1 - e < -1000 ? -1000 : e1 - e);
    t[0] = a * b;
    t[1] = pk_dm_fma(a, b, -t[0]);
  }
  if (!z2) {
    const double a = pk_dm_ldexp(p2, -k2), b = pk_dm_ldexp(pk_dm_ldexp(q2, -j2), e2 - e < -1000 ? -1000 : e2 - e);
    t[2] = a * b;
    t[3] = pk_dm_fma(a, b, -t[2]);
  }
  return e;
}
/* p1 q1 + p2 q2 rounded once to p bits from its scaled exact terms. Two zero products: their plain sum (its sign of
   zero); an exact cancellation is +0, as round to nearest gives. */
PK_DM_FN double pk_dm_dot2_round(double p1, double q1, double p2, double q2, int p, int emin) {
  if ((p1 == 0.0 || q1 == 0.0) && (p2 == 0.0 || q2 == 0.0)) return p1 * q1 + p2 * q2;
  double t[6];
  const int e = pk_dm_dot2_terms(p1, q1, p2, q2, t);
  const pk_dm_dd s = pk_dm_dd_add(pk_dm_dd_make(t[0], t[1]), pk_dm_dd_make(t[2], t[3]));
  if (s.hi == 0.0) return 0.0;
  pk_dm_rnd o = pk_dm_rnd_at(s, e, p, emin);
  if (o.doubt) {
    t[4] = -o.mh;
    t[5] = -o.ml;
    o.r = pk_dm_rnd_settle(o, pk_dm_sum_sign(t, 6));
  }
  return pk_dm_ldexp(o.r, e);
}
/* p1 q1 + p2 q2 correctly rounded to double. A compensated sum (error-free products, error below 2^-104 relative)
   decides unless it lies near a rounding boundary (half an ulp of the result, or a quarter below a power of two)
   or a product leaves the range where its fma error term is exact; those rare operands take pk_dm_dot2_round. */
PK_DM_FN double pk_dm_dot2(double p1, double q1, double p2, double q2) {
  const double p = p1 * q1, ep = pk_dm_fma(p1, q1, -p), q = p2 * q2, eq = pk_dm_fma(p2, q2, -q);
  const double s = p + q, bp = s - q, es = (p - bp) + (q - (s - bp)), t = es + (ep + eq);
  /* Products of zero factors are exact zeros; others must stay far from the subnormal range. */
  const int in_range =
      (p1 == 0.0 || q1 == 0.0 || pk_dm_fabs(p) > 0x1p-960) && (p2 == 0.0 || q2 == 0.0 || pk_dm_fabs(q) > 0x1p-960);
  if (t == 0.0 && pk_dm_isfinite(s) && in_range) return s;
  const double r = s + t, tail = (s - r) + t;
  if (pk_dm_isfinite(p) && pk_dm_isfinite(q) && pk_dm_isfinite(r) && in_range && r != 0.0) {
    const double ar = pk_dm_fabs(r), half_ulp = 0.5 * (pk_dm_from_bits(pk_dm_bits(ar) + 1) - ar);
    const double at = pk_dm_fabs(tail), tol = 0x1p-45 * half_ulp;
    if (pk_dm_fabs(at - half_ulp) > tol && pk_dm_fabs(at - 0.5 * half_ulp) > tol) return r;
  }
  return pk_dm_dot2_round(p1, q1, p2, q2, 53, -1074);
}
/* p + q (doubles) rounded to odd: the exact sum's rounding once more to float (24 bits) is its correct rounding. */
PK_DM_FN double pk_dm_sum_odd(double p, double q) {
  const pk_dm_dd s = pk_dm_two_sum(p, q);
  if (s.lo == 0.0 || !pk_dm_isfinite(s.hi)) return s.hi;
  PK_DM_U64 bits = pk_dm_bits(s.hi);
  if ((bits & 1) == 0) bits = ((s.lo > 0.0) == (s.hi > 0.0)) ? bits + 1 : bits - 1;
  return pk_dm_from_bits(bits);
}

/* (a + bi)(c + di). c64: the products of floats are exact in double, so ac - bd rounded to odd and then to float
   rounds once; c128: each part by pk_dm_dot2. */
PK_DM_FN void pk_dm_cmul(double a, double b, double c, double d, int f32, double *out) {
  if (!pk_dm_cfinite(a, b, c, d)) {
    pk_dm_cmul_g(a, b, c, d, out);
    pk_dm_cset(out, pk_dm_to_fmt(out[0], f32), pk_dm_to_fmt(out[1], f32));
  } else if (f32) {
    pk_dm_cset(out, (float)pk_dm_sum_odd(a * c, -(b * d)), (float)pk_dm_sum_odd(a * d, b * c));
  } else {
    pk_dm_cset(out, pk_dm_dot2(a, c, -b, d), pk_dm_dot2(a, d, b, c));
  }
}

/* (p1 q1 + p2 q2) / den rounded once to p bits: the numerator's and den's scaled exact terms (den > 0, its four
   terms in dt, 2^ed) divided in double-double; near the midpoint m = mh + ml the sign of num - m den decides (mh
   times a term is an exact product, ml a power of two). An exact zero numerator gives zero_part (Smith's signed
   zero). */
PK_DM_FN double pk_dm_quot_part(double p1, double q1, double p2, double q2, const double *dt, int ed, int p, int emin,
                                double zero_part) {
  if ((p1 == 0.0 || q1 == 0.0) && (p2 == 0.0 || q2 == 0.0)) return pk_dm_copysign(0.0, zero_part);
  double t[16];
  const int en = pk_dm_dot2_terms(p1, q1, p2, q2, t);
  const pk_dm_dd num = pk_dm_dd_add(pk_dm_dd_make(t[0], t[1]), pk_dm_dd_make(t[2], t[3]));
  if (num.hi == 0.0) return pk_dm_copysign(0.0, zero_part);
  const pk_dm_dd den = pk_dm_dd_add(pk_dm_dd_make(dt[0], dt[1]), pk_dm_dd_make(dt[2], dt[3]));
  pk_dm_rnd o = pk_dm_rnd_at(pk_dm_dd_div(num, den), en - ed, p, emin);
  if (o.doubt) {
    for (int i = 0; i < 4; ++i) {
      const pk_dm_dd pr = pk_dm_two_prod(o.mh, dt[i]);
      t[4 + 3 * i] = -pr.hi;
      t[5 + 3 * i] = -pr.lo;
      t[6 + 3 * i] = -o.ml * dt[i];
    }
    o.r = pk_dm_rnd_settle(o, pk_dm_sum_sign(t, 16));
  }
  return pk_dm_ldexp(o.r, en - ed);
}
/* (a + bi) / (c + di): (ac + bd) / (c^2 + d^2) and (bc - ad) / (c^2 + d^2), each part rounded once. A zero
   dividend, a zero divisor or a non-finite operand: Smith's quotient with Annex G's recovery. */
PK_DM_FN void pk_dm_cdiv(double a, double b, double c, double d, int f32, double *out) {
  double g[2], den[4];
  pk_dm_cdiv_g(a, b, c, d, g);
  if (!pk_dm_cfinite(a, b, c, d) || (c == 0.0 && d == 0.0) || (a == 0.0 && b == 0.0)) {
    pk_dm_cset(out, pk_dm_to_fmt(g[0], f32), pk_dm_to_fmt(g[1], f32));
    return;
  }
  const int p = f32 ? 24 : 53, emin = f32 ? -149 : -1074;
  const int ed = pk_dm_dot2_terms(c, c, d, d, den);
  pk_dm_cset(out, pk_dm_quot_part(a, c, b, d, den, ed, p, emin, g[0]),
             pk_dm_quot_part(b, c, -a, d, den, ed, p, emin, g[1]));
}

/* |x + iy| rounded once: scaled into [1, 2), sqrt(x^2 + y^2) in double-double; near a midpoint m the exact sign of
   m^2 - x^2 - y^2 decides. (A y^2 below double's range does not matter there: m^2 - x^2 is 0 or at least 2^-106.) */
PK_DM_FN double pk_dm_cabs(double x, double y, int f32) {
  const double ax = pk_dm_fabs(x), ay = pk_dm_fabs(y);
  if (pk_dm_isinf(ax) || pk_dm_isinf(ay)) return PK_DM_INF;
  if (pk_dm_isnan(ax) || pk_dm_isnan(ay)) return PK_DM_NAN;
  const double mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
  if (mn == 0.0) return mx;
  const int k = pk_dm_ilogb(mx);
  const double a = pk_dm_ldexp(mx, -k), b = pk_dm_ldexp(mn, -k);
  const pk_dm_dd pa = pk_dm_two_prod(a, a), pb = pk_dm_two_prod(b, b);
  pk_dm_rnd o = pk_dm_rnd_at(pk_dm_dd_sqrt(pk_dm_dd_add(pa, pb)), k, f32 ? 24 : 53, f32 ? -149 : -1074);
  if (o.doubt) {
    double t[8];
    pk_dm_rnd_mid_sq(o, t);
    t[4] = -pa.hi;
    t[5] = -pa.lo;
    t[6] = -pb.hi;
    t[7] = -pb.lo;
    o.r = pk_dm_rnd_settle(o, -pk_dm_sum_sign(t, 8)); /* m^2 above x^2 + y^2: |z| below m */
  }
  return pk_dm_ldexp(o.r, k);
}

/* Double-doubles with an int exponent: m 2^e with |m.hi| in [1, 2) (or m = +-0), for the square root's steps,
   whose intermediates (|z| + |x|, ...) may leave double's range; ~2^-104 relative per operation. */
typedef struct {
  pk_dm_dd m;
  int e;
} pk_dm_xd;

PK_DM_FN pk_dm_xd pk_dm_xd_norm(pk_dm_dd m, int e) {
  pk_dm_xd r;
  r.m = pk_dm_dd_make(m.hi, 0.0);
  r.e = 0;
  if (m.hi == 0.0) return r;
  const int k = pk_dm_ilogb(m.hi);
  r.m = pk_dm_dd_make(pk_dm_ldexp(m.hi, -k), pk_dm_ldexp(m.lo, -k));
  r.e = e + k;
  return r;
}
PK_DM_FN pk_dm_xd pk_dm_xd_of(double v) {
  return pk_dm_xd_norm(pk_dm_dd_make(v, 0.0), 0);
}
PK_DM_FN pk_dm_xd pk_dm_xd_neg(pk_dm_xd a) {
  a.m = pk_dm_dd_neg(a.m);
  return a;
}
PK_DM_FN pk_dm_xd pk_dm_xd_mul(pk_dm_xd a, pk_dm_xd b) {
  if (a.m.hi == 0.0 || b.m.hi == 0.0) return pk_dm_xd_norm(pk_dm_dd_make(a.m.hi * b.m.hi, 0.0), 0);
  return pk_dm_xd_norm(pk_dm_dd_mul(a.m, b.m), a.e + b.e);
}
PK_DM_FN pk_dm_xd pk_dm_xd_div(pk_dm_xd a, pk_dm_xd b) {
  if (a.m.hi == 0.0) return pk_dm_xd_norm(pk_dm_dd_make(a.m.hi / b.m.hi, 0.0), 0);
  return pk_dm_xd_norm(pk_dm_dd_div(a.m, b.m), a.e - b.e);
}
PK_DM_FN pk_dm_xd pk_dm_xd_add(pk_dm_xd a, pk_dm_xd b) {
  if (b.m.hi == 0.0) return a.m.hi == 0.0 ? pk_dm_xd_norm(pk_dm_dd_make(a.m.hi + b.m.hi, 0.0), 0) : a;
  if (a.m.hi == 0.0) return b;
  if (a.e < b.e) {
    const pk_dm_xd t = a;
    a = b;
    b = t;
  }
  /* b aligned to a's exponent; one more than 2^-1000 below only keeps its sign (a sticky bit). */
  const int sh = b.e - a.e;
  const pk_dm_dd bm = sh < -1000 ? pk_dm_dd_make(pk_dm_copysign(0x1p-1000, b.m.hi), 0.0)
                                 : pk_dm_dd_make(pk_dm_ldexp(b.m.hi, sh), pk_dm_ldexp(b.m.lo, sh));
  const pk_dm_dd s = pk_dm_dd_add(a.m, bm);
  if (s.hi == 0.0) return pk_dm_xd_norm(pk_dm_dd_make(0.0, 0.0), 0); /* an exact cancellation is +0 */
  return pk_dm_xd_norm(s, a.e);
}
PK_DM_FN pk_dm_xd pk_dm_xd_sqrt(pk_dm_xd a) {
  if (a.m.hi == 0.0) return a;
  pk_dm_dd m = a.m;
  int e = a.e;
  if (e & 1) {
    m = pk_dm_dd_mul_d(m, 2.0);
    e -= 1;
  }
  return pk_dm_xd_norm(pk_dm_dd_sqrt(m), e / 2);
}
/* |x + iy| as an xd (x, y finite). */
PK_DM_FN pk_dm_xd pk_dm_xd_hypot(double x, double y) {
  const double ax = pk_dm_fabs(x), ay = pk_dm_fabs(y);
  const double mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
  if (mn == 0.0) return pk_dm_xd_of(mx);
  const int k = pk_dm_ilogb(mx);
  const double a = pk_dm_ldexp(mx, -k), b = pk_dm_ldexp(mn, -k);
  return pk_dm_xd_norm(pk_dm_dd_sqrt(pk_dm_dd_add(pk_dm_two_prod(a, a), pk_dm_two_prod(b, b))), k);
}
/* a rounded once to p bits from its double-double (no exact check). */
PK_DM_FN double pk_dm_xd_round(pk_dm_xd a, int p, int emin) {
  if (a.m.hi == 0.0) return a.m.hi;
  return pk_dm_ldexp(pk_dm_rnd_at(a.m, a.e, p, emin).r, a.e);
}
/* P = sqrt((|z| + |x|) / 2) rounded once to p bits from its xd value pv: z is scaled by 4^-j into [1, 4) (P by
   2^-j, exactly); near a midpoint m, P < m exactly when (2 m^2 - |x|)^2 > x^2 + y^2 (2 m^2 - |x| is about |z| > 0
   there), an exact sum of 54 products' parts. */
PK_DM_FN double pk_dm_csqrt_root(double x, double y, pk_dm_xd pv, int p, int emin) {
  const double mx = pk_dm_fabs(x) > pk_dm_fabs(y) ? pk_dm_fabs(x) : pk_dm_fabs(y);
  const int j = (int)pk_dm_floor(0.5 * pk_dm_ilogb(mx));
  const double xs = pk_dm_ldexp(pk_dm_fabs(x), -2 * j), ys = pk_dm_ldexp(y, -2 * j);
  const pk_dm_dd q = pk_dm_dd_make(pk_dm_ldexp(pv.m.hi, pv.e - j), pk_dm_ldexp(pv.m.lo, pv.e - j));
  pk_dm_rnd o = pk_dm_rnd_at(q, j, p, emin);
  if (o.doubt) {
    double f[5], t[54];
    pk_dm_rnd_mid_sq(o, f);
    for (int i = 0; i < 4; ++i) f[i] *= 2.0;
    f[4] = -xs; /* 2 m^2 - |x| */
    int n = 0;
    for (int a = 0; a < 5; ++a) {
      for (int b = 0; b < 5; ++b) {
        const pk_dm_dd pr = pk_dm_two_prod(f[a], f[b]);
        t[n++] = pr.hi;
        t[n++] = pr.lo;
      }
    }
    const pk_dm_dd x2 = pk_dm_two_prod(xs, xs), y2 = pk_dm_two_prod(ys, ys);
    t[n++] = -x2.hi;
    t[n++] = -x2.lo;
    /* y^2 far below x^2 may underflow: its sign still breaks an exact tie of the rest. */
    t[n++] = (y2.hi == 0.0 && ys != 0.0) ? -0x1p-1074 : -y2.hi;
    t[n++] = -y2.lo;
    o.r = pk_dm_rnd_settle(o, -pk_dm_sum_sign(t, n));
  }
  return pk_dm_ldexp(o.r, j);
}
/* sqrt(z) per glibc's csqrt: its special values, then its steps in xd (2 Re Im = y avoids the cancellation of
   |z| - |x|): for x >= 0, P + i y / (2P); for x < 0, |y| / (2P) + i copysign(P, y), P = sqrt((|z| + |x|) / 2).
   P is correctly rounded (pk_dm_csqrt_root); the other part is rounded once from its ~2^-100-accurate
   double-double (wrong only within ~2^-90 of a midpoint). */
PK_DM_FN void pk_dm_csqrt(double x, double y, int f32, double *out) {
  const int p = f32 ? 24 : 53, emin = f32 ? -149 : -1074;
  if (pk_dm_isinf(y)) {
    pk_dm_cset(out, PK_DM_INF, y);
  } else if (pk_dm_isinf(x)) {
    if (x < 0.0)
      pk_dm_cset(out, pk_dm_isnan(y) ? PK_DM_NAN : 0.0, pk_dm_copysign(PK_DM_INF, y));
    else
      pk_dm_cset(out, x, pk_dm_isnan(y) ? PK_DM_NAN : pk_dm_copysign(0.0, y));
  } else if (pk_dm_isnan(x) || pk_dm_isnan(y)) {
    pk_dm_cset(out, PK_DM_NAN, PK_DM_NAN);
  } else if (y == 0.0) { /* sqrt of a float rounded to double and then to float is its correct rounding */
    const double r = pk_dm_to_fmt(pk_dm_sqrt(pk_dm_fabs(x)), f32);
    if (x < 0.0)
      pk_dm_cset(out, 0.0, pk_dm_copysign(r, y));
    else
      pk_dm_cset(out, r, pk_dm_copysign(0.0, y));
  } else {
    const pk_dm_xd hf = pk_dm_xd_of(0.5);
    if (x == 0.0) { /* both parts sqrt(|y| / 2) */
      const double r = pk_dm_csqrt_root(x, y, pk_dm_xd_sqrt(pk_dm_xd_mul(hf, pk_dm_xd_of(pk_dm_fabs(y)))), p, emin);
      pk_dm_cset(out, r, pk_dm_copysign(r, y));
      return;
    }
    const pk_dm_xd big =
        pk_dm_xd_sqrt(pk_dm_xd_mul(hf, pk_dm_xd_add(pk_dm_xd_hypot(x, y), pk_dm_xd_of(pk_dm_fabs(x)))));
    pk_dm_xd small = pk_dm_xd_mul(hf, pk_dm_xd_div(pk_dm_xd_of(y), big));
    const double r = pk_dm_csqrt_root(x, y, big, p, emin);
    if (x > 0.0) {
      pk_dm_cset(out, r, pk_dm_xd_round(small, p, emin));
    } else {
      if (small.m.hi < 0.0) small = pk_dm_xd_neg(small);
      pk_dm_cset(out, pk_dm_xd_round(small, p, emin), pk_dm_copysign(r, y));
    }
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   The complex reductions' steps (prod, cumprod, sum, cumsum), as the OpenCL backend's work-group combines and the
   code generator's loops take them: each state as doubles, the state of one term, two states combined, the value.
   Parts accumulate in double (c64 parts exact there; the caller rounds the value once). */

/* Running products z 2^e as the oracle's long double ones: z scaled after each product so that its larger part is in
   [0.5, 1) (a double running product overflows, or goes subnormal and loses its bits, where long double's does not);
   a product with Annex G's recovery of infinities (pk_dm_cmul_g). out = (z.re, z.im, e). A z that is zero, infinite
   or NaN in its larger part stays as it is (a NaN part does not decide the scale: the other part does, as fmax). */
PK_DM_FN void pk_dm_cprod_norm(double x, double y, double e, double *out) {
  const double ax = pk_dm_fabs(x), ay = pk_dm_fabs(y);
  const double big = (ax > ay || pk_dm_isnan(ay)) ? ax : ay;
  const int k = (pk_dm_isfinite(big) && big != 0.0) ? pk_dm_ilogb(big) + 1 : 0;
  out[0] = pk_dm_ldexp(x, -k);
  out[1] = pk_dm_ldexp(y, -k);
  out[2] = e + k;
}
/* (a 2^ae)(b 2^be), normalized. */
PK_DM_FN void pk_dm_cprod_mul(double ar, double ai, double ae, double br, double bi, double be, double *out) {
  double p[2];
  pk_dm_cmul_g(ar, ai, br, bi, p);
  pk_dm_cprod_norm(p[0], p[1], ae + be, out);
}
/* z 2^e as a double pair (each part rounded once; beyond the range the infinity or zero the scaling gives). */
PK_DM_FN void pk_dm_cprod_value(double zr, double zi, double e, double *out) {
  const int k = e > 2200.0 ? 2200 : e < -2200.0 ? -2200 : (int)e;
  pk_dm_cset(out, pk_dm_ldexp(zr, k), pk_dm_ldexp(zi, k));
}

/* Sums: per part the finite terms' sum, the same scaled by 2^-600 (for when the first overflows although the exact
   sum does not: exact down to 2^-474 absolute) and flags of the non-finite terms seen (1: +inf, 2: -inf, 4: NaN), so
   that finite terms that overflow still meet a later infinity as exact arithmetic does (DBL_MAX + DBL_MAX - inf is
   -inf, not NaN). A state is six doubles: (sum.re, sum.im, scaled.re, scaled.im, flags.re, flags.im). */
PK_DM_FN double pk_dm_csum_flag(double v) {
  return pk_dm_isnan(v) ? 4.0 : pk_dm_isinf(v) ? (v > 0.0 ? 1.0 : 2.0) : 0.0;
}
/* The state of the one term x + iy. */
PK_DM_FN void pk_dm_csum_term(double x, double y, double *out) {
  out[0] = pk_dm_isfinite(x) ? x : 0.0;
  out[1] = pk_dm_isfinite(y) ? y : 0.0;
  out[2] = out[0] * 0x1p-600;
  out[3] = out[1] * 0x1p-600;
  out[4] = pk_dm_csum_flag(x);
  out[5] = pk_dm_csum_flag(y);
}
/* Two states (a, b: six doubles each) combined. */
PK_DM_FN void pk_dm_csum_add(double a0, double a1, double a2, double a3, double a4, double a5, double b0, double b1,
                             double b2, double b3, double b4, double b5, double *out) {
  out[0] = a0 + b0;
  out[1] = a1 + b1;
  out[2] = a2 + b2;
  out[3] = a3 + b3;
  out[4] = (double)((int)a4 | (int)b4);
  out[5] = (double)((int)a5 | (int)b5);
}
/* A part's value from its sum s, scaled sum sc and flags f: NaN where a NaN or both infinities were seen, else the
   infinity seen, else the sum (the scaled one where the sum overflowed). */
PK_DM_FN double pk_dm_csum_part(double s, double sc, double f) {
  const int k = (int)f;
  if ((k & 4) || (k & 3) == 3) return PK_DM_NAN;
  if (k & 1) return PK_DM_INF;
  if (k & 2) return -PK_DM_INF;
  return pk_dm_isinf(s) ? sc * 0x1p600 : s;
}
