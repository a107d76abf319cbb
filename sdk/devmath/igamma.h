/* igamma.h — the regularized incomplete gamma functions P(a, x) and Q(a, x), with the double-double ln Gamma they
   need. Needs dd.h. */

/* ln Gamma(z) for z > 0 in double-double: the recurrence up to w >= 20, then Stirling's series (its terms past
   1/(12 w) are below 4e-7 there, so double holds them well enough; 8 terms leave < 1e-21). */
PK_DM_FN pk_dm_dd pk_dm_dd_lgamma(pk_dm_dd z) {
  pk_dm_dd prod = pk_dm_dd_make(1.0, 0.0), w = z;
  int shifted = 0;
  while (w.hi < 20.0) {
    prod = pk_dm_dd_mul(prod, w);
    w = pk_dm_dd_add_d(w, 1.0);
    shifted = 1;
  }
  pk_dm_dd r = pk_dm_dd_sub(pk_dm_dd_mul(pk_dm_dd_add_d(w, -0.5), pk_dm_dd_log_dd(w)), w);
  r = pk_dm_dd_add(r, pk_dm_dd_make(0.9189385332046728, -3.8782941580672414e-17)); /* log(2 pi) / 2 */
  r = pk_dm_dd_add(r, pk_dm_dd_div(pk_dm_dd_make(1.0, 0.0), pk_dm_dd_mul_d(w, 12.0)));
  const double iw = 1.0 / w.hi, iw2 = iw * iw;
  r = pk_dm_dd_add_d(
      r, iw * iw2 *
             (-1.0 / 360 +
              iw2 * (1.0 / 1260 +
                     iw2 * (-1.0 / 1680 + iw2 * (1.0 / 1188 + iw2 * (-691.0 / 360360 +
                                                                     iw2 * (1.0 / 156 + iw2 * (-3617.0 / 122400))))))));
  if (shifted) r = pk_dm_dd_sub(r, pk_dm_dd_log_dd(prod));
  return r;
}

/* x^a e^-x / Gamma(a + plus1) (plus1: 0 or 1; the second keeps tiny a off the subnormal range), through its
   logarithm in double-double: a log x and ln Gamma(a) are each hundreds where the result is O(1). */
PK_DM_FN double pk_dm_igam_prefactor(double a, double x, int plus1) {
  /* Far out of range (the double-double would meet inf - inf): the sign of a rough exponent decides. */
  double rough = a * pk_dm_log(x) - x - pk_dm_lgamma(a + plus1);
  if (pk_dm_isnan(rough)) rough = a * (pk_dm_log(x) - pk_dm_log(a) + 1.0); /* inf - inf for huge a: Stirling */
  if (rough < -800.0) return 0.0;
  if (rough > 800.0) return PK_DM_INF;
  const pk_dm_dd g = pk_dm_dd_lgamma(plus1 ? pk_dm_two_sum(a, 1.0) : pk_dm_dd_make(a, 0.0));
  const pk_dm_dd e = pk_dm_dd_sub(pk_dm_dd_add_d(pk_dm_dd_mul_d(pk_dm_dd_log(x), a), -x), g);
  return pk_dm_exp(e.hi) * (1.0 + e.lo);
}

/* P(a, x) by its power series (Cephes'), in double-double. */
PK_DM_FN double pk_dm_igam_series(double a, double x) {
  const double pre = pk_dm_igam_prefactor(a, x, 1);
  if (pre == 0.0) return 0.0;
  pk_dm_dd r = pk_dm_dd_make(a, 0.0), c = pk_dm_dd_make(1.0, 0.0), ans = pk_dm_dd_make(1.0, 0.0);
  for (int k = 0; k < 10000; ++k) {
    r = pk_dm_dd_add_d(r, 1.0);
    c = pk_dm_dd_mul_d(pk_dm_dd_div(c, r), x);
    ans = pk_dm_dd_add(ans, c);
    if (c.hi <= ans.hi * 1e-18) break;
  }
  return ans.hi * pre;
}

/* Q(a, x) by Legendre's continued fraction (the modified Lentz method), in double-double: in double its ~30+
   rounded steps drift by tens of ulps. */
PK_DM_FN double pk_dm_igamc_fraction(double a, double x) {
  const double pre = pk_dm_igam_prefactor(a, x, 0);
  if (pre == 0.0) return 0.0;
  const double tiny = 1e-300;
  const pk_dm_dd one = pk_dm_dd_make(1.0, 0.0);
  pk_dm_dd b = pk_dm_dd_add_d(pk_dm_two_sum(1.0, -a), x), c = pk_dm_dd_make(1.0 / tiny, 0.0), d = pk_dm_dd_div(one, b),
           h = d;
  for (int n = 1; n < 10000; ++n) {
    const pk_dm_dd an = pk_dm_dd_mul_d(pk_dm_two_sum((double)n, -a), -(double)n);
    b = pk_dm_dd_add_d(b, 2.0);
    d = pk_dm_dd_add(pk_dm_dd_mul(an, d), b);
    if (pk_dm_fabs(d.hi) < tiny) d = pk_dm_dd_make(tiny, 0.0);
    c = pk_dm_dd_add(b, pk_dm_dd_div(an, c));
    if (pk_dm_fabs(c.hi) < tiny) c = pk_dm_dd_make(tiny, 0.0);
    d = pk_dm_dd_div(one, d);
    const pk_dm_dd delta = pk_dm_dd_mul(d, c);
    h = pk_dm_dd_mul(h, delta);
    if (pk_dm_fabs(delta.hi - 1.0 + delta.lo) < 1e-20) break;
  }
  return h.hi * pre;
}

/* zeta(k), k = 2..13, and Euler's gamma as a double-double (hi, lo), for ln Gamma(1 + a) near a = 0. */
PK_DM_CONST double pk_dm_zeta_2_13[12] = {
    1.6449340668482264, 1.2020569031595943, 1.0823232337111382, 1.0369277551433699,
    1.0173430619844491, 1.0083492773819228, 1.0040773561979443, 1.0020083928260822,
    1.0009945751278181, 1.0004941886041195, 1.0002460865533080, 1.0001227133475785,
};
PK_DM_CONST double pk_dm_euler_gamma_hi = 0.5772156649015329, pk_dm_euler_gamma_lo = -4.942915152430645e-18;

/* ln Gamma(1 + a) for |a| <= 0.05: -gamma a + sum_k (-1)^k zeta(k) a^k / k, the leading term in double-double
   (the recurrence and Stirling would leave it only absolutely accurate). */
PK_DM_FN pk_dm_dd pk_dm_lgamma1p_small(double a) {
  double sum = 0.0, power = -a;
  for (int k = 2; k <= 13; ++k) {
    power *= -a;
    sum += pk_dm_zeta_2_13[k - 2] * power / k;
  }
  return pk_dm_dd_add_d(pk_dm_dd_mul_d(pk_dm_dd_make(pk_dm_euler_gamma_hi, pk_dm_euler_gamma_lo), -a), sum);
}

/* Q(a, x) for a < 1 and x <= 1 or x <= a, where 1 - P would cancel (Gautschi): Q = -expm1(v) - a e^v S with
   v = a ln x - ln Gamma(1 + a), S = sum_{n>=1} (-x)^n / (n! (a + n)); the two terms cancel up to ~4x, so v, S and
   their product carry double-double. */
PK_DM_FN double pk_dm_igamc_small_a(double a, double x) {
  const pk_dm_dd lg = pk_dm_fabs(a) <= 0.05 ? pk_dm_lgamma1p_small(a) : pk_dm_dd_lgamma(pk_dm_two_sum(1.0, a));
  const pk_dm_dd v = pk_dm_dd_sub(pk_dm_dd_mul_d(pk_dm_dd_log(x), a), lg);
  const double em1 = pk_dm_expm1(v.hi) + pk_dm_exp(v.hi) * v.lo;
  pk_dm_dd term = pk_dm_dd_make(1.0, 0.0), series = pk_dm_dd_make(0.0, 0.0);
  for (int n = 1; n < 200; ++n) {
    term = pk_dm_dd_div_d(pk_dm_dd_mul_d(term, -x), (double)n);
    const pk_dm_dd t = pk_dm_dd_div(term, pk_dm_two_sum(a, (double)n));
    series = pk_dm_dd_add(series, t);
    if (pk_dm_fabs(t.hi) <= 1e-20 * pk_dm_fabs(series.hi)) break;
  }
  const pk_dm_dd f = pk_dm_dd_mul(pk_dm_dd_mul_d(series, a), pk_dm_two_sum(1.0, em1));
  return pk_dm_dd_add_d(pk_dm_dd_neg(f), -em1).hi;
}

/* P(a, x) (upper = 0) or Q(a, x) (upper = 1): the series of P and the continued fraction of Q, each where it
   converges; Q for a < 1 where 1 - P would cancel from Gautschi's form. */
PK_DM_FN double pk_dm_igamma(double a, double x, int upper) {
  if (pk_dm_isnan(a) || pk_dm_isnan(x) || a < 0.0 || x < 0.0) return PK_DM_NAN;
  if (x == 0.0) return upper ? 1.0 : 0.0; /* also P(0, 0) = 0, Q(0, 0) = 1 */
  if (a == 0.0) return upper ? 0.0 : 1.0;
  if (pk_dm_isinf(a)) return pk_dm_isinf(x) ? PK_DM_NAN : (upper ? 1.0 : 0.0);
  if (pk_dm_isinf(x)) return upper ? 0.0 : 1.0;
  if (x > 1.0 && x > a) {
    const double q = pk_dm_igamc_fraction(a, x);
    return upper ? q : 1.0 - q;
  }
  if (!upper) return pk_dm_igam_series(a, x);
  return a < 1.0 ? pk_dm_igamc_small_a(a, x) : 1.0 - pk_dm_igam_series(a, x);
}
