/* zeta.h — the Hurwitz zeta function zeta(s, q) = sum_k (k + q)^-s for s > 1: direct terms, then Euler-Maclaurin
   with the Bernoulli numbers. The direct terms are summed in double-double; for q < 0 (s is then an integer)
   terms of both signs cancel (zeta(3, -3.5): +-8 +-0.296 ... leave 0.031), so there they are exact integer powers
   in double-double too, where those stay in range. Needs dd.h. */

/* (2k)! / B_2k, k = 1..12: the Euler-Maclaurin tail's coefficients. */
PK_DM_CONST double pk_dm_zeta_em[12] = {12.0,
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

/* (q + k)^-s; with `exact` the base q + k is formed exactly and raised to the integer s by squaring in
   double-double (s <= 2^20: at most 21 steps), unless the power leaves double's range. Otherwise the base is still
   formed exactly, hi + lo, and its rounding error applied as (hi + lo)^-s = hi^-s e^(-s log1p(lo / hi)): the power
   amplifies that error s times (zeta(22.74, 63.02) was 14.5 ulp off with q + k rounded). */
PK_DM_FN pk_dm_dd pk_dm_zeta_term(double q, double k, double s, int exact) {
  const pk_dm_dd b = pk_dm_two_sum(q, k);
  if (!exact) {
    const double p = pk_dm_pow(b.hi, -s);
    if (b.lo == 0.0 || !pk_dm_isfinite(p) || p == 0.0) return pk_dm_dd_make(p, 0.0);
    return pk_dm_dd_make(p + p * pk_dm_expm1(-s * pk_dm_log1p(b.lo / b.hi)), 0.0);
  }
  if (pk_dm_fabs(s * pk_dm_log2(pk_dm_fabs(b.hi))) > 900.0) return pk_dm_dd_make(pk_dm_pow(b.hi, -s), 0.0);
  pk_dm_dd r = pk_dm_dd_make(1.0, 0.0), p = b;
  for (PK_DM_U64 e = (PK_DM_U64)s; e != 0; e >>= 1) {
    if (e & 1) r = pk_dm_dd_mul(r, p);
    if (e > 1) p = pk_dm_dd_mul(p, p);
  }
  return pk_dm_dd_div(pk_dm_dd_make(1.0, 0.0), r);
}

/* sum_{k >= k0} (q + k)^-s with q + k0 > 0: direct terms until the ninth and q + k > 9, then Euler-Maclaurin. */
PK_DM_FN pk_dm_dd pk_dm_zeta_sum(double s, double q, int exact, double k0) {
  pk_dm_dd sum = pk_dm_zeta_term(q, k0, s, exact);
  double a = q + k0, b = 0.0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    ++i;
    a = q + (k0 + i);
    const pk_dm_dd t = pk_dm_zeta_term(q, k0 + i, s, exact);
    b = t.hi;
    /* an infinite term (a pole's neighbour, or s huge) would make the double-double arithmetic NaN */
    sum = pk_dm_isfinite(t.hi) && pk_dm_isfinite(sum.hi) ? pk_dm_dd_add(sum, t) : pk_dm_dd_make(sum.hi + t.hi, 0.0);
    /* The terms only shrink: one below double's normal range ends the sum (for a huge s the tail would meet
       inf * 0), with the tail's leading term, the integral a^(1-s) / (s - 1), from a power of its own: for a huge
       q the terms (q + k)^-s underflow where the sum ~q^(1-s) / (s - 1) does not (zeta(2, 1.8e308) = 5.6e-309
       came out 0). */
    if (b < 2.2250738585072014e-308)
      return pk_dm_isfinite(sum.hi) ? pk_dm_dd_add_d(sum, pk_dm_pow(a, 1.0 - s) / (s - 1.0)) : sum;
    if (pk_dm_fabs(b / sum.hi) < 1e-18) return sum;
  }
  const double w = a;
  double tail = b * w / (s - 1.0) - 0.5 * b;
  double fac = 1.0, k = 0.0;
  for (int j = 0; j < 12; ++j) {
    fac *= s + k;
    b /= w;
    const double t = fac * b / pk_dm_zeta_em[j];
    tail += t;
    if (pk_dm_fabs(t / (sum.hi + tail)) < 1e-18) break;
    k += 1.0;
    fac *= s + k;
    b /= w;
    k += 1.0;
  }
  return pk_dm_isfinite(sum.hi) ? pk_dm_dd_add_d(sum, tail) : sum;
}

PK_DM_FN double pk_dm_zeta(double s, double q) {
  if (pk_dm_isnan(s) || pk_dm_isnan(q)) return PK_DM_NAN;
  if (s == 1.0) return PK_DM_INF;
  if (s < 1.0) return PK_DM_NAN;
  if (pk_dm_isinf(s)) return q > 1.0 ? 0.0 : (q == 1.0 ? 1.0 : PK_DM_INF); /* only the k = 0 term can survive */
  if (pk_dm_isinf(q)) return q > 0.0 ? 0.0 : PK_DM_INF; /* -inf: the poles' limit, as for the integers below */
  if (q > 0.0) return pk_dm_zeta_sum(s, q, 0, 0.0).hi;
  if (q == pk_dm_floor(q)) return PK_DM_INF;
  if (s != pk_dm_floor(s)) return PK_DM_NAN; /* q^-s is complex */
  /* q < 0, s an integer: the terms over negative bases, k < m = ceil(-q), are (-1)^s (f + j)^-s for j < m with
     f = -(q + (m - 1)) in (0, 1) (exact: |q + (m - 1)| <= |q| is a multiple of q's ulp), i.e.
     (-1)^s [zeta(s, f) - zeta(s, f + m)]; the rest are the terms from k = m on. Bounded work however negative q
     is (stepping from q = -9.35e13 one unit at a time ran for weeks). */
  const int exact = s <= 1048576.0;
  const double m = pk_dm_ceil(-q), f = -(q + (m - 1.0));
  const double sign = pk_dm_floor(s * 0.5) == s * 0.5 ? 1.0 : -1.0;
  const pk_dm_dd zf = pk_dm_zeta_sum(s, f, exact, 0.0), zfm = pk_dm_zeta_sum(s, f + m, 0, 0.0);
  const pk_dm_dd zp = pk_dm_zeta_sum(s, q, exact, m);
  if (!pk_dm_isfinite(zf.hi) || !pk_dm_isfinite(zp.hi)) return sign * (zf.hi - zfm.hi) + zp.hi;
  const pk_dm_dd neg = pk_dm_dd_sub(zf, zfm);
  return pk_dm_dd_add(pk_dm_dd_make(sign * neg.hi, sign * neg.lo), zp).hi;
}
