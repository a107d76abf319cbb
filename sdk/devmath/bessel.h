/* bessel.h — Bessel functions of the first kind of order 0 and 1, plain (J) and modified (I, optionally scaled by
   exp(-|x|)), and the spherical j0. Needs dd.h. */

/* Modified Bessel functions of the first kind, order 0 and 1, scaled by exp(-|x|) when `scaled`: below 20 the
   power series (positive terms, summed in double-double: in double the rounding of ~30 terms adds up to ~9 ulp);
   above, the asymptotic expansion (its smallest term is ~e^-2x), also in double-double up to the one exp. Beyond
   709 exp(x) is applied as two halves so that the result overflows only where it is out of range itself. */
PK_DM_FN double pk_dm_bessel_i(int order, double xd, int scaled) {
  if (pk_dm_isnan(xd)) return xd;
  const double x = pk_dm_fabs(xd), sign = (order == 1 && xd < 0) ? -1.0 : 1.0;
  double r;
  if (x < 20.0) {
    const pk_dm_dd q = pk_dm_dd_mul_d(pk_dm_two_prod(x, x), 0.25);
    pk_dm_dd term = pk_dm_dd_make(order == 0 ? 1.0 : x * 0.5, 0.0), sum = term;
    for (int k = 1; k < 200; ++k) {
      term = pk_dm_dd_div_d(pk_dm_dd_mul(term, q), (double)(k * (k + order)));
      sum = pk_dm_dd_add(sum, term);
      if (term.hi < sum.hi * 1e-18) break;
    }
    r = scaled ? sum.hi * pk_dm_exp(-x) : sum.hi;
  } else {
    if (pk_dm_isinf(x)) return scaled ? 0.0 : sign * PK_DM_INF;
    const double mu = 4.0 * order * order;
    double term = 1.0;
    pk_dm_dd sum = pk_dm_dd_make(1.0, 0.0);
    for (int k = 1; k < 60; ++k) {
      const double odd = 2 * k - 1;
      term *= -(mu - odd * odd) / (k * 8 * x);
      sum = pk_dm_dd_add_d(sum, term);
      if (pk_dm_fabs(term) < 1e-18 * pk_dm_fabs(sum.hi)) break;
    }
    /* sum / sqrt(2 pi x) in double-double (sqrt(x) with its fma residual), rounded once */
    const double sq = pk_dm_sqrt(x);
    const pk_dm_dd root = pk_dm_fast_sum(sq, pk_dm_fma(-sq, sq, x) / (2.0 * sq));
    const double pre =
        pk_dm_dd_div(pk_dm_dd_mul(sum, pk_dm_dd_make(0.3989422804014327, -2.49232720227773e-17)), root).hi;
    if (scaled) {
      r = pre;
    } else if (x < 709.0) {
      r = pre * pk_dm_exp(x);
    } else {
      const double h = pk_dm_exp(x / 2);
      r = (h * pre) * h;
    }
  }
  return sign * r;
}

/* Bessel functions of the first kind, order 0 and 1 (held to an absolute error near their zeros). Below 20 the
   power series in double-double: its terms reach ~e^x / x before cancelling to a result of O(1). Above, Hankel's
   expansion up to its smallest term, with cos/sin(x - phase) expanded so that sin and cos reduce x itself. */
PK_DM_FN double pk_dm_bessel_j(int order, double xd) {
  if (pk_dm_isnan(xd)) return xd;
  const double x = pk_dm_fabs(xd), sign = (order == 1 && xd < 0) ? -1.0 : 1.0;
  if (pk_dm_isinf(x)) return 0.0;
  if (x < 20.0) {
    const pk_dm_dd q = pk_dm_dd_mul_d(pk_dm_two_prod(x, x), 0.25);
    pk_dm_dd term = pk_dm_dd_make(order == 0 ? 1.0 : x * 0.5, 0.0), sum = term;
    for (int k = 1; k < 80; ++k) {
      term = pk_dm_dd_div_d(pk_dm_dd_mul(term, q), -(double)(k * (k + order)));
      sum = pk_dm_dd_add(sum, term);
      if (pk_dm_fabs(term.hi) < 1e-33 || pk_dm_fabs(term.hi) < pk_dm_fabs(sum.hi) * 1e-33) break;
    }
    return sign * (sum.hi + sum.lo);
  }
  const double mu = 4.0 * order * order, z8 = 8.0 * x;
  double p = 1.0, q = 0.0, term = 1.0;
  for (int k = 1; k < 80; ++k) {
    const double odd = 2 * k - 1, next = term * (mu - odd * odd) / (k * z8);
    if (pk_dm_fabs(next) >= pk_dm_fabs(term)) break;
    term = next;
    /* the terms go to Q, P, Q, P with signs +, -, -, + */
    const int phase = k & 3;
    if (phase == 1)
      q += term;
    else if (phase == 2)
      p -= term;
    else if (phase == 3)
      q -= term;
    else
      p += term;
    if (pk_dm_fabs(term) < 1e-17) break;
  }
  /* sqrt(2 / (pi x)) / sqrt(2) = 1 / sqrt(pi x) */
  const double s = pk_dm_sin(x), c = pk_dm_cos(x), amp = 0.56418958354775628695 / pk_dm_sqrt(x);
  const double v = order == 0 ? p * (c + s) - q * (s - c) : p * (s - c) + q * (s + c);
  return sign * amp * v;
}

/* sin(x) / x: 1 at 0, 0 at the infinities. */
PK_DM_FN double pk_dm_spherical_j0(double x) {
  if (x == 0.0) return 1.0;
  if (pk_dm_isinf(x)) return 0.0;
  return pk_dm_sin(x) / x;
}
