/* dd.h — double-double arithmetic for the device math: a value is hi + lo with |lo| <= ulp(hi) / 2. The error-free
   transformations need every + - * rounded once (no contraction into fma); see port.h. */

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
