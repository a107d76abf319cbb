/* dd.h — double-double arithmetic for the device math: a value is hi + lo with |lo| <= ulp(hi) / 2, and the
   elementary functions the function files share in it (sqrt, log, log1p, sin and cos of small arguments), and exact
   scaling by powers of two. The error-free transformations need every + - * rounded once (no contraction into fma);
   see port.h. */

typedef struct {
  double hi, lo;
} pk_dm_dd;

PK_DM_FN pk_dm_dd pk_dm_dd_make(double hi, double lo) {
  pk_dm_dd r;
  r.hi = hi;
  r.lo = lo;
  return r;
}
PK_DM_FN pk_dm_dd pk_dm_dd_neg(pk_dm_dd a) {
  return pk_dm_dd_make(-a.hi, -a.lo);
}
/* s + e == a + b exactly. */
PK_DM_FN pk_dm_dd pk_dm_two_sum(double a, double b) {
  const double s = a + b, v = s - a;
  return pk_dm_dd_make(s, (a - (s - v)) + (b - v));
}
/* The same for |a| >= |b| (or a == 0). */
PK_DM_FN pk_dm_dd pk_dm_fast_sum(double a, double b) {
  const double s = a + b;
  return pk_dm_dd_make(s, b - (s - a));
}
PK_DM_FN pk_dm_dd pk_dm_two_prod(double a, double b) {
  const double p = a * b;
  return pk_dm_dd_make(p, pk_dm_fma(a, b, -p));
}
PK_DM_FN pk_dm_dd pk_dm_dd_add(pk_dm_dd a, pk_dm_dd b) {
  pk_dm_dd s = pk_dm_two_sum(a.hi, b.hi);
  const pk_dm_dd t = pk_dm_two_sum(a.lo, b.lo);
  s = pk_dm_fast_sum(s.hi, s.lo + t.hi);
  return pk_dm_fast_sum(s.hi, s.lo + t.lo);
}
PK_DM_FN pk_dm_dd pk_dm_dd_sub(pk_dm_dd a, pk_dm_dd b) {
  return pk_dm_dd_add(a, pk_dm_dd_neg(b));
}
PK_DM_FN pk_dm_dd pk_dm_dd_add_d(pk_dm_dd a, double b) {
  const pk_dm_dd s = pk_dm_two_sum(a.hi, b);
  return pk_dm_fast_sum(s.hi, s.lo + a.lo);
}
PK_DM_FN pk_dm_dd pk_dm_dd_mul(pk_dm_dd a, pk_dm_dd b) {
  const double p = a.hi * b.hi;
  return pk_dm_fast_sum(p, pk_dm_fma(a.hi, b.hi, -p) + (a.hi * b.lo + a.lo * b.hi));
}
PK_DM_FN pk_dm_dd pk_dm_dd_mul_d(pk_dm_dd a, double b) {
  const double p = a.hi * b;
  return pk_dm_fast_sum(p, pk_dm_fma(a.hi, b, -p) + a.lo * b);
}
PK_DM_FN pk_dm_dd pk_dm_dd_div_d(pk_dm_dd a, double b) {
  const double q = a.hi / b;
  const pk_dm_dd p = pk_dm_two_prod(q, b);
  return pk_dm_fast_sum(q, (((a.hi - p.hi) - p.lo) + a.lo) / b);
}
/* Long division with two correction steps: about 2^-104 relative. */
PK_DM_FN pk_dm_dd pk_dm_dd_div(pk_dm_dd a, pk_dm_dd b) {
  const double q1 = a.hi / b.hi;
  const pk_dm_dd r = pk_dm_dd_sub(a, pk_dm_dd_mul_d(b, q1));
  const double q2 = r.hi / b.hi;
  const pk_dm_dd r2 = pk_dm_dd_sub(r, pk_dm_dd_mul_d(b, q2));
  return pk_dm_dd_add_d(pk_dm_fast_sum(q1, q2), r2.hi / b.hi);
}

/* The square root of s >= 0: one Newton step from the double root, about 2^-104 relative; sqrt(0) = 0. */
PK_DM_FN pk_dm_dd pk_dm_dd_sqrt(pk_dm_dd s) {
  if (s.hi == 0.0) return pk_dm_dd_make(0.0, 0.0);
  const double h = pk_dm_sqrt(s.hi);
  const pk_dm_dd hh = pk_dm_two_prod(h, h);
  return pk_dm_fast_sum(h, (((s.hi - hh.hi) - hh.lo) + s.lo) / (2.0 * h));
}

/* log(x) of a finite double x > 0 in double-double: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s)
   with s = (m - 1) / (m + 1), |s| < 0.172, whose odd series converges by a factor 0.03 a term. m and e come from
   the bits (frexp is not a primitive every target has). */
PK_DM_FN pk_dm_dd pk_dm_dd_log(double x) {
  double scaled = x;
  int e = 0;
  if (x < 2.2250738585072014e-308) { /* subnormal: scaled by 2^54 to a normal number first */
    scaled = x * 18014398509481984.0;
    e = -54;
  }
  const PK_DM_U64 bits = pk_dm_bits(scaled);
  e += (int)((bits >> 52) & 0x7ff) - 1022;
  double m = pk_dm_from_bits((bits & 0x000fffffffffffffUL) | 0x3fe0000000000000UL); /* [1/2, 1) */
  if (m < 0.70710678118654752) {
    m *= 2.0;
    --e;
  }
  const pk_dm_dd s = pk_dm_dd_div(pk_dm_dd_make(m - 1.0, 0.0), pk_dm_two_sum(m, 1.0));
  const pk_dm_dd s2 = pk_dm_dd_mul(s, s);
  pk_dm_dd t = pk_dm_dd_make(0.0, 0.0);
  for (int k = 17; k >= 0; --k) {
    const double n = 2 * k + 1, inv = 1.0 / n;
    t = pk_dm_dd_add(pk_dm_dd_mul(t, s2), pk_dm_dd_make(inv, -pk_dm_fma(inv, n, -1.0) / n));
  }
  const pk_dm_dd ln2 = pk_dm_dd_make(0.6931471805599453, 2.3190468138462996e-17);
  return pk_dm_dd_add(pk_dm_dd_mul_d(ln2, (double)e), pk_dm_dd_mul_d(pk_dm_dd_mul(s, t), 2.0));
}
/* log of a double-double: log(hi) + log1p(lo / hi), the second to first order. */
PK_DM_FN pk_dm_dd pk_dm_dd_log_dd(pk_dm_dd x) {
  return pk_dm_dd_add_d(pk_dm_dd_log(x.hi), x.lo / x.hi);
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
