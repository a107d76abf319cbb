/* digamma.h — psi(x), the logarithmic derivative of Gamma, in double-double where it cancels. Needs dd.h. */

/* psi near its roots: Taylor coefficients psi^(k)(c) / k!, k = 0..35, at c = x0 + 1 (x0 = 1.46163... the positive
   root), each a double-double (hi, lo) pair, computed with mpmath at 300 bits. The series converges by a factor
   < 0.22 a term on [2, 3), and summed in double-double it gives psi to ~2^-100 absolute, so the cancellation near
   every root (the positive one and, through the recurrence, one per negative unit interval) costs nothing. */
PK_DM_CONST double pk_dm_psi_taylor[72] = {
    0.6841666717870696,      -4.2470892676890727e-17, 0.49958821066342546,    -2.0373158058412316e-17,
    -0.12251567278862602,    -5.736746342749074e-18,  0.03939709733579885,    -2.848907726295464e-18,
    -0.014039965293930434,   3.7000886856729105e-19,  0.00526559187211755,    1.1421864574018889e-19,
    -0.0020324818225491725,  -1.367639138081961e-19,  0.0007983109588290198,  2.5792787182361807e-20,
    -0.0003170368244016943,  6.386474505342981e-21,   0.0001268167281965579,  6.242410702984931e-21,
    -5.097190255450742e-05,  -2.899816628968163e-21,  2.055414125395239e-05,  7.934455385621397e-22,
    -8.306859775003972e-06,  -5.245364615180883e-22,  3.3623594458438883e-06, -5.848225057477412e-23,
    -1.3624395717959079e-06, -9.554616994072804e-23,  5.524792977920754e-07,  3.236012710540175e-23,
    -2.241523416103308e-07,  -1.7523278869736137e-24, 9.097694978453553e-08,  3.5845730933292223e-25,
    -3.6934557862649377e-08, -2.5543605569145614e-24, 1.499735247478639e-08,  -4.936435039341268e-25,
    -6.090500964947203e-09,  -8.737968770447154e-26,  2.473612210913063e-09,  1.104189943720339e-25,
    -1.0047053252261424e-09, 4.9345662340400335e-26,  4.08099443984292e-10,   -3.658449336352175e-27,
    -1.6577065288159067e-10, 1.0606351265373796e-26,  6.733788627268473e-11,  3.630800422672598e-27,
    -2.735385546236437e-11,  -1.1380403373069236e-27, 1.1111757552226734e-11, -9.095302438742379e-29,
    -4.5138863432781286e-12, 1.689784939510438e-28,   1.833669574785134e-12,  1.178190813334153e-28,
    -7.448921271170873e-13,  -1.182405131446126e-29,  3.0259866069106846e-13, 4.9677936958568604e-30,
    -1.2292537778544927e-13, 4.174683408149552e-30,   4.9936346531924656e-14, 2.3885287889309502e-31,
    -2.028581451260793e-14,  6.961802842045823e-31,   8.24078285130796e-15,   -6.973296491133016e-32,
};
/* c = x0 + 1 as hi + lo */
PK_DM_CONST double pk_dm_psi_root_hi = 2.4616321449683625, pk_dm_psi_root_lo = -1.2654465062537432e-16;

/* 2 zeta(2k), k = 1..32, as double-double (hi, lo) pairs (mpmath, 300 bits): pi cot(pi r) = 1/r - r sum_k
   2 zeta(2k) r^(2k-2), whose omitted tail is below 2^-64 for |r| <= 1/2. */
PK_DM_CONST double pk_dm_two_zeta_even[64] = {
    3.289868133696453,
    6.081344700796952e-17,
    2.1646464674222763,
    9.49702408571073e-17,
    2.0346861239688985,
    -1.9517198332883063e-16,
    2.0081547123958887,
    -4.034349661547569e-17,
    2.001989150255636,
    2.1873826341294005e-16,
    2.000492173106616,
    7.113198248766341e-18,
    2.0001224962701176,
    -2.1277148994144281e-16,
    2.0000305645188172,
    8.163518284861808e-17,
    2.00000763458653,
    -8.118713784376256e-17,
    2.0000019079240676,
    1.2218006976829918e-16,
    2.0000004769010054,
    1.0255162665490708e-16,
    2.000000119216378,
    -2.2991747459888093e-19,
    2.0000000298031098,
    -1.0113429419170146e-16,
    2.000000007450668,
    -3.292125447769698e-17,
    2.000000001862655,
    -5.4354237366884023e-17,
    2.000000000465662,
    1.9124914214046255e-16,
    2.0000000001164153,
    1.1993111920333174e-16,
    2.000000000029104,
    1.3325350264858577e-17,
    2.000000000007276,
    1.480573876477154e-18,
    2.000000000001819,
    1.6450692138067656e-19,
    2.0000000000004547,
    1.8278466384087845e-20,
    2.0000000000001137,
    2.0309356824461637e-21,
    2.0000000000000284,
    2.2565920610482366e-22,
    2.000000000000007,
    2.5073225487885697e-23,
    2.0000000000000018,
    2.7859127159414075e-24,
    2.0000000000000004,
    3.0954578063041137e-25,
    2.0,
    1.1102230249690962e-16,
    2.0,
    2.7755575619450464e-17,
    2.0,
    6.938893904331845e-18,
    2.0,
    1.7347234760239866e-18,
    2.0,
    4.33680868999444e-19,
    2.0,
    1.0842021724913292e-19,
};

/* psi(z) for z in [2, 3]: the Taylor series at c. */
PK_DM_FN pk_dm_dd pk_dm_psi_23(pk_dm_dd z) {
  const pk_dm_dd dx = pk_dm_dd_sub(z, pk_dm_dd_make(pk_dm_psi_root_hi, pk_dm_psi_root_lo));
  pk_dm_dd s = pk_dm_dd_make(pk_dm_psi_taylor[70], pk_dm_psi_taylor[71]);
  for (int k = 34; k >= 0; --k)
    s = pk_dm_dd_add(pk_dm_dd_mul(s, dx), pk_dm_dd_make(pk_dm_psi_taylor[2 * k], pk_dm_psi_taylor[2 * k + 1]));
  return s;
}

/* psi(x) for x >= 10: the asymptotic series through B_14 (its first omitted term is below 2^-60 there). */
PK_DM_FN double pk_dm_psi_asym(double x) {
  const double z = 1.0 / (x * x);
  const double series =
      z *
      (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return pk_dm_log(x) - 0.5 / x - series;
}

/* psi(x) for x < -128: psi(1 - x) - pi cot(pi r) in double-double. r = x - rint(x) and 1 - x are exact, and near
   each negative root the two terms (about log|x|) cancel. */
PK_DM_FN double pk_dm_psi_reflected(double x) {
  const double r = x - pk_dm_rint(x), v = 1.0 - x, z = 1.0 / (v * v);
  const pk_dm_dd t = pk_dm_two_prod(r, r);
  pk_dm_dd s = pk_dm_dd_make(0.0, 0.0);
  for (int k = 31; k >= 0; --k)
    s = pk_dm_dd_add(pk_dm_dd_mul(s, t), pk_dm_dd_make(pk_dm_two_zeta_even[2 * k], pk_dm_two_zeta_even[2 * k + 1]));
  const pk_dm_dd cot = pk_dm_dd_sub(pk_dm_dd_div(pk_dm_dd_make(1.0, 0.0), pk_dm_dd_make(r, 0.0)), pk_dm_dd_mul_d(s, r));
  pk_dm_dd f = pk_dm_dd_sub(pk_dm_dd_log(v), cot);
  /* 1/(2v) ~ 4e-3: its double rounding alone is 1e-6 of a root's psi; 1/(12 v^2) likewise */
  f = pk_dm_dd_sub(f, pk_dm_dd_div_d(pk_dm_dd_make(0.5, 0.0), v));
  f = pk_dm_dd_sub(f, pk_dm_dd_div(pk_dm_dd_make(1.0, 0.0), pk_dm_dd_mul_d(pk_dm_two_prod(v, v), 12.0)));
  f = pk_dm_dd_add_d(
      f, z * z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return f.hi + f.lo;
}

/* Digamma. Every x in [-128, 10) is moved by whole steps into [2, 3) (pk_dm_psi_23); the steps' reciprocals and
   the series are summed in double-double, so the cancellation near the roots costs nothing. Above 10 the
   asymptotic series, below -128 the reflection formula. */
PK_DM_FN double pk_dm_digamma(double x) {
  if (pk_dm_isnan(x)) return x;
  if (x == 0.0) return pk_dm_signbit(x) ? PK_DM_INF : -PK_DM_INF;
  if (pk_dm_isinf(x)) return x > 0 ? x : PK_DM_NAN;
  if (x < 0.0 && x == pk_dm_floor(x)) return PK_DM_NAN;
  if (x >= 10.0) return pk_dm_psi_asym(x);
  if (pk_dm_fabs(x) < 1e-300) return -1.0 / x; /* -1/x - gamma: the constant is far below an ulp */
  if (x < -128.0) return pk_dm_psi_reflected(x);
  pk_dm_dd sum = pk_dm_dd_make(0.0, 0.0), r;
  if (x >= 3.0) {
    const double n = pk_dm_floor(x) - 2.0; /* x - k is exact for these k */
    for (double k = 1.0; k <= n; k += 1.0)
      sum = pk_dm_dd_add(sum, pk_dm_dd_div(pk_dm_dd_make(1.0, 0.0), pk_dm_dd_make(x - k, 0.0)));
    r = pk_dm_dd_add(pk_dm_psi_23(pk_dm_dd_make(x - n, 0.0)), sum);
  } else if (x >= 2.0) {
    r = pk_dm_psi_23(pk_dm_dd_make(x, 0.0));
  } else {
    const double n = pk_dm_ceil(2.0 - x);
    for (double k = 0.0; k < n; k += 1.0)
      sum = pk_dm_dd_add(sum, pk_dm_dd_div(pk_dm_dd_make(1.0, 0.0), pk_dm_two_sum(x, k)));
    r = pk_dm_dd_sub(pk_dm_psi_23(pk_dm_two_sum(x, n)), sum);
  }
  return r.hi + r.lo;
}
