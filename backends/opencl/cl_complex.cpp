// cl_complex.cpp — OpenCL C helpers of the complex dtypes (c64 = float2, c128 = double2: real part first). They
// compute in double: c64 products of floats are exact there, so one final rounding to float is the correctly
// rounded result; c128 uses double-double (the fma-based helpers of cl_special's kSrcDD, which the program carries
// ahead of these). Infinities and NaNs follow C11 Annex G and glibc's special values, as the CPU backend's and
// the oracle's std::complex do. c128 division, reciprocal and modulus are correctly rounded (a double-double
// result, and near a midpoint between doubles the exact sign of a sum of products); c64 / c128 square roots round
// a ~2^-100-accurate double-double once. exp, log, sin, cos, tanh and polar are the device math's
// (sdk/devmath/complex.h).
#include "cl_complex.hpp"

namespace pk::ocl {

const char *complex_source() {
  return R"CL(
// Round-to-odd of the exact p + q: rounding that once more to float (24 bits) gives the correctly rounded sum.
inline double pk_sum_odd(double p, double q) {
  const double s = p + q, bp = s - q, err = (p - bp) + (q - (s - bp));
  if (err == 0.0 || !isfinite(s)) return s;
  ulong bits = as_ulong(s);
  if ((bits & 1ul) == 0ul) bits = ((err > 0.0) == (s > 0.0)) ? bits + 1ul : bits - 1ul;
  return as_double(bits);
}
inline int pk_cfinite(double a, double b, double c, double d) {
  return isfinite(a) && isfinite(b) && isfinite(c) && isfinite(d);
}
inline double pk_box(double v) { return copysign(isinf(v) ? 1.0 : 0.0, v); }
inline double pk_unnan(double v) { return isnan(v) ? copysign(0.0, v) : v; }
// (a + bi)(c + di) with C11 Annex G recovery of infinities (G.5.1's _Cmultd) for non-finite operands. Its
// recovery of products that overflow is left out: exact arithmetic (and the oracle) has no such overflow, and
// finite operands take the exact paths below.
inline double2 pk_cmul_g(double a, double b, double c, double d) {
  const double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
  double x = ac - bd, y = ad + bc;
  if (isnan(x) && isnan(y)) {
    int re = 0;
    if (isinf(a) || isinf(b)) { a = pk_box(a); b = pk_box(b); c = pk_unnan(c); d = pk_unnan(d); re = 1; }
    if (isinf(c) || isinf(d)) { c = pk_box(c); d = pk_box(d); a = pk_unnan(a); b = pk_unnan(b); re = 1; }
    if (re) { x = INFINITY * (a * c - b * d); y = INFINITY * (a * d + b * c); }
  }
  return (double2)(x, y);
}
// (a + bi) / (c + di) by Smith's method with Annex G recovery of infinities and zeros (as libgcc's __divdc3,
// which std::complex and the oracle use: the signs of zero parts follow its evaluation order).
inline double2 pk_cdiv_g(double a, double b, double c, double d) {
  double x, y;
  if (fabs(c) < fabs(d)) {
    const double ratio = c / d, denom = (c * ratio) + d;
    x = ((a * ratio) + b) / denom;
    y = ((b * ratio) - a) / denom;
  } else {
    const double ratio = d / c, denom = (d * ratio) + c;
    x = ((b * ratio) + a) / denom;
    y = (b - (a * ratio)) / denom;
  }
  if (isnan(x) && isnan(y)) {
    if (c == 0.0 && d == 0.0 && (!isnan(a) || !isnan(b))) {
      x = copysign((double)INFINITY, c) * a;
      y = copysign((double)INFINITY, c) * b;
    } else if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {
      a = pk_box(a); b = pk_box(b);
      x = INFINITY * (a * c + b * d);
      y = INFINITY * (b * c - a * d);
    } else if ((isinf(c) || isinf(d)) && isfinite(a) && isfinite(b)) {
      c = pk_box(c); d = pk_box(d);
      x = 0.0 * (a * c + b * d);
      y = 0.0 * (b * c - a * d);
    }
  }
  return (double2)(x, y);
}
// Running complex products as the reference's long double ones: the value scaled by 2^-e so that its larger
// part is in [0.5, 1) (no overflow or loss to subnormals on the way), products with Annex G recovery.
typedef struct {
  double2 z;
  double e;
} pk_cprod;
inline pk_cprod pk_cprod_one(void) {
  pk_cprod r;
  r.z = (double2)(0.5, 0.0);
  r.e = 1.0;
  return r;
}
inline pk_cprod pk_cprod_norm(double2 z, double e) {
  pk_cprod r;
  const double big = fmax(fabs(z.x), fabs(z.y));
  int k = 0;
  if (isfinite(big) && big != 0.0) frexp(big, &k);
  r.z = (double2)(ldexp(z.x, -k), ldexp(z.y, -k));
  r.e = e + k;
  return r;
}
inline pk_cprod pk_cprod_ld(double2 v) { return pk_cprod_norm(v, 0.0); }
inline pk_cprod pk_cprod_mul(pk_cprod a, pk_cprod b) {
  return pk_cprod_norm(pk_cmul_g(a.z.x, a.z.y, b.z.x, b.z.y), a.e + b.e);
}
inline double2 pk_cprod_st(pk_cprod a) {
  const int e = (int)clamp(a.e, -2200.0, 2200.0);
  return (double2)(ldexp(a.z.x, e), ldexp(a.z.y, e));
}
// c64: the products of floats are exact in double, so ac - bd rounded to odd then to float rounds once.
inline float2 pk_cmul64(float2 u, float2 v) {
  const double a = u.x, b = u.y, c = v.x, d = v.y;
  if (!pk_cfinite(a, b, c, d)) return convert_float2(pk_cmul_g(a, b, c, d));
  return (float2)((float)pk_sum_odd(a * c, -(b * d)), (float)pk_sum_odd(a * d, b * c));
}
// Sums of complex values: the finite terms' sums per part, the same scaled by 2^-600 (for when the first
// overflows although the exact sum does not), and per part flags of the non-finite terms seen (1: +inf, 2: -inf,
// 4: NaN), so that a sum whose finite terms overflow still meets a later infinity as exact arithmetic does
// (DBL_MAX + DBL_MAX - inf is -inf, not NaN).
typedef struct {
  double2 s, sc, fl;
} pk_csum;
inline double pk_flag(double v) { return isnan(v) ? 4.0 : isinf(v) ? (v > 0.0 ? 1.0 : 2.0) : 0.0; }
inline pk_csum pk_csum_zero(void) {
  pk_csum r;
  r.s = r.sc = r.fl = (double2)(0.0, 0.0);
  return r;
}
inline pk_csum pk_csum_ld(double2 v) {
  pk_csum r;
  r.s = (double2)(isfinite(v.x) ? v.x : 0.0, isfinite(v.y) ? v.y : 0.0);
  r.sc = r.s * 0x1p-600;
  r.fl = (double2)(pk_flag(v.x), pk_flag(v.y));
  return r;
}
inline pk_csum pk_csum_add(pk_csum a, pk_csum b) {
  pk_csum r;
  r.s = a.s + b.s;
  r.sc = a.sc + b.sc;
  r.fl = (double2)((double)((int)a.fl.x | (int)b.fl.x), (double)((int)a.fl.y | (int)b.fl.y));
  return r;
}
inline double pk_unflag(double s, double sc, double f) {
  const int k = (int)f;
  return ((k & 4) || (k & 3) == 3) ? NAN : (k & 1) ? INFINITY : (k & 2) ? -INFINITY : isinf(s) ? sc * 0x1p600 : s;
}
inline double2 pk_csum_st(pk_csum a) {
  return (double2)(pk_unflag(a.s.x, a.sc.x, a.fl.x), pk_unflag(a.s.y, a.sc.y, a.fl.y));
}
// Complex dot products whose double accumulation is not finite are redone without intermediate overflow: each
// part as a mantissa in [0.5, 1) times an int exponent, fed the real products of terms with finite parts; terms
// with an infinite or NaN part are multiplied with Annex G recovery and added apart (they decide the part when
// non-finite).
inline void pk_me_add(double *m, int *e, double a, double b) {
  if (a == 0.0 || b == 0.0) return;
  int ea, eb;
  const double p = frexp(a, &ea) * frexp(b, &eb);
  const int ep = ea + eb;
  if (*m == 0.0) {
    *m = p;
    *e = ep;
  } else if (ep > *e) {
    *m = ldexp(*m, *e - ep) + p;
    *e = ep;
  } else {
    *m += ldexp(p, ep - *e);
  }
  int r;
  *m = frexp(*m, &r);
  *e += r;
}
typedef struct { double mr, mi; int er, ei; double2 sp; } pk_cdot;
inline void pk_cdot_init(pk_cdot *d) { d->mr = 0.0; d->mi = 0.0; d->er = 0; d->ei = 0; d->sp = (double2)(0.0, 0.0); }
inline void pk_cdot_add(pk_cdot *d, double2 a, double2 b) {
  if (!pk_cfinite(a.x, a.y, b.x, b.y)) { d->sp += pk_cmul_g(a.x, a.y, b.x, b.y); return; }
  pk_me_add(&d->mr, &d->er, a.x, b.x);
  pk_me_add(&d->mr, &d->er, -a.y, b.y);
  pk_me_add(&d->mi, &d->ei, a.x, b.y);
  pk_me_add(&d->mi, &d->ei, a.y, b.x);
}
inline double2 pk_cdot_value(const pk_cdot *d) {
  return (double2)(isfinite(d->sp.x) ? ldexp(d->mr, d->er) + d->sp.x : d->sp.x,
                   isfinite(d->sp.y) ? ldexp(d->mi, d->ei) + d->sp.y : d->sp.y);
}

// The exact p + ep + q + eq (four doubles, already error-free products) rounded once to double: a two-sum cascade
// leaves f.x + f.y + w exactly, with w far below ulp(f.x); w only matters to break an exact tie in f.x + f.y.
inline double pk_sum4(double p, double ep, double q, double eq) {
  const pk_dd a = pk_two_sum(p, q), b = pk_two_sum(ep, eq);
  const pk_dd c = pk_two_sum(a.x, b.x), d = pk_two_sum(a.y, b.y);
  const pk_dd e = pk_two_sum(c.y, d.x);
  const double w = e.y + d.y;
  const pk_dd f = pk_two_sum(c.x, e.x);
  if (f.y != 0.0 && w != 0.0 && (w > 0.0) == (f.y > 0.0)) {
    const double n = nextafter(f.x, f.y > 0.0 ? (double)INFINITY : -(double)INFINITY);
    if (2.0 * f.y == n - f.x) return n;  // a tie that the remainder breaks away from f.x
  }
  return f.x;
}
// p1 q1 + p2 q2 as (t.x + t.y + t.z + t.w) 2^e, t.x + t.y and t.z + t.w exact products of factors scaled into
// [1, 2) (so the fma error terms are exact and nothing overflows or underflows). A product more than 2^1000 below
// the other keeps only its sign at 2^-1000 relative: it can then only break a tie. Both products must not be 0.
inline int pk_dot2_terms(double p1, double q1, double p2, double q2, double4 *t) {
  const int z1 = p1 == 0.0 || q1 == 0.0, z2 = p2 == 0.0 || q2 == 0.0;
  const int k1 = z1 ? 0 : ilogb(p1), j1 = z1 ? 0 : ilogb(q1), k2 = z2 ? 0 : ilogb(p2), j2 = z2 ? 0 : ilogb(q2);
  const int e1 = k1 + j1, e2 = k2 + j2, e = z1 ? e2 : z2 ? e1 : max(e1, e2);
  double x = 0.0, ex = 0.0, y = 0.0, ey = 0.0;
  if (!z1) {
    const double a = ldexp(p1, -k1), b = ldexp(ldexp(q1, -j1), max(e1 - e, -1000));
    x = a * b;
    ex = fma(a, b, -x);
  }
  if (!z2) {
    const double a = ldexp(p2, -k2), b = ldexp(ldexp(q2, -j2), max(e2 - e, -1000));
    y = a * b;
    ey = fma(a, b, -y);
  }
  *t = (double4)(x, ex, y, ey);
  return e;
}
// (q.x + q.y) 2^k rounded once: a subnormal result is rounded at its quantum (2^-1074, which is q_ulp in q's
// scale) from both parts, so that ldexp's scaling is exact.
inline double pk_ldexp_dd(pk_dd q, int k) {
  if (q.y == 0.0) return ldexp(q.x, k);  // one rounding; keeps the sign of zero
  if (ilogb(q.x) + k >= -1022) return ldexp(q.x + q.y, k);
  const int e = ilogb(q.x);  // q to exponent 0, so that its quantum below is representable
  q = (double2)(ldexp(q.x, -e), ldexp(q.y, -e));
  k += e;
  if (ilogb(q.x) + k < -1080) return copysign(0.0, q.x);  // below half the least subnormal
  const double q_ulp = ldexp(1.0, -1074 - k), half_ulp = 0.5 * q_ulp;
  double n = rint(q.x / q_ulp);
  // q.x - n q_ulp is exact and a multiple of ulp(q.x), which q.y cannot cross: q.y only decides an exact half.
  const double d = q.x - n * q_ulp;
  const int odd = fmod(n, 2.0) != 0.0;
  if (d > half_ulp || (d == half_ulp && (q.y > 0.0 || (q.y == 0.0 && odd)))) n += 1.0;
  else if (d < -half_ulp || (d == -half_ulp && (q.y < 0.0 || (q.y == 0.0 && odd)))) n -= 1.0;
  return ldexp(n * q_ulp, k);
}
// p1 q1 + p2 q2 as a double-double times 2^e, ~2^-104 relative to the result; (0, 0) when both products are 0.
inline pk_dd pk_dot2_dd(double p1, double q1, double p2, double q2, int *e) {
  *e = 0;
  if ((p1 == 0.0 || q1 == 0.0) && (p2 == 0.0 || q2 == 0.0)) return (double2)(0.0, 0.0);
  double4 t;
  *e = pk_dot2_terms(p1, q1, p2, q2, &t);
  return pk_dd_add((double2)(t.x, t.y), (double2)(t.z, t.w));
}
// p1 q1 + p2 q2 correctly rounded.
inline double pk_dot2_exact(double p1, double q1, double p2, double q2) {
  if ((p1 == 0.0 || q1 == 0.0) && (p2 == 0.0 || q2 == 0.0)) return p1 * q1 + p2 * q2;
  double4 t;
  const int e = pk_dot2_terms(p1, q1, p2, q2, &t);
  const double r = pk_sum4(t.x, t.y, t.z, t.w);
  if (r == 0.0 || ilogb(r) + e >= -1022) return ldexp(r, e);
  int e2;
  return pk_ldexp_dd(pk_dot2_dd(p1, q1, p2, q2, &e2), e2);
}
// p1 q1 + p2 q2 for c128 products: a compensated sum accurate to ~2^-104 relative, unless the rounding test doubts
// it (near a midpoint, or products near the ends of the exponent range): then the exact path.
inline double pk_dot2(double p1, double q1, double p2, double q2) {
  const double p = p1 * q1, ep = fma(p1, q1, -p);
  const double q = p2 * q2, eq = fma(p2, q2, -q);
  const double s = p + q, bp = s - q, es = (p - bp) + (q - (s - bp));
  const double t = es + (ep + eq);
  // Products of zero factors are exact zeros; others must stay far from the subnormal range (exact fma terms).
  const int in_range = (p1 == 0.0 || q1 == 0.0 || fabs(p) > 0x1p-960) && (p2 == 0.0 || q2 == 0.0 || fabs(q) > 0x1p-960);
  if (t == 0.0 && isfinite(s) && in_range) return s;
  const double r = s + t, tail = (s - r) + t;
  const double half_ulp = 0.5 * (nextafter(fabs(r), (double)INFINITY) - fabs(r));
  if (isfinite(p) && isfinite(q) && isfinite(r) && in_range && fabs(fabs(tail) - half_ulp) > 0x1p-45 * half_ulp)
    return r;
  return pk_dot2_exact(p1, q1, p2, q2);
}
inline double2 pk_cmul128(double2 u, double2 v) {
  const double a = u.x, b = u.y, c = v.x, d = v.y;
  if (!pk_cfinite(a, b, c, d)) return pk_cmul_g(a, b, c, d);
  return (double2)(pk_dot2(a, c, -b, d), pk_dot2(a, d, b, c));
}
// Double-doubles with an unbounded exponent: m 2^e with m in [1, 2) (or m = +-0), for the complex square root's
// steps, whose intermediates (|z| + |x|, ...) may leave double's range; ~2^-104 relative per operation.
typedef struct { pk_dd m; int e; } pk_x;
inline pk_x pk_x_norm(pk_dd m, int e) {
  pk_x r;
  r.m = m;
  r.e = e;
  if (m.x == 0.0) { r.m = (double2)(m.x, 0.0); r.e = 0; return r; }
  const int k = ilogb(m.x);
  r.m = (double2)(ldexp(m.x, -k), ldexp(m.y, -k));
  r.e = e + k;
  return r;
}
inline pk_x pk_x_of(double v) { return pk_x_norm((double2)(v, 0.0), 0); }
inline pk_x pk_x_mul(pk_x a, pk_x b) {
  if (a.m.x == 0.0 || b.m.x == 0.0) return pk_x_norm((double2)(a.m.x * b.m.x, 0.0), 0);
  return pk_x_norm(pk_dd_mul(a.m, b.m), a.e + b.e);
}
inline pk_x pk_x_div(pk_x a, pk_x b) {
  if (a.m.x == 0.0) return pk_x_norm((double2)(a.m.x / b.m.x, 0.0), 0);
  return pk_x_norm(pk_dd_div(a.m, b.m), a.e - b.e);
}
inline pk_x pk_x_add(pk_x a, pk_x b) {
  if (b.m.x == 0.0) return a.m.x == 0.0 ? pk_x_norm((double2)(a.m.x + b.m.x, 0.0), 0) : a;
  if (a.m.x == 0.0) return b;
  if (a.e < b.e) { const pk_x t = a; a = b; b = t; }
  // b aligned to a's exponent; one more than 2^-1000 below only keeps its sign (a sticky bit).
  const int sh = b.e - a.e;
  const pk_dd bm = sh < -1000 ? (double2)(copysign(0x1p-1000, b.m.x), 0.0)
                              : (double2)(ldexp(b.m.x, sh), ldexp(b.m.y, sh));
  const pk_dd s = pk_dd_add(a.m, bm);
  if (s.x == 0.0) return pk_x_norm((double2)(0.0, 0.0), 0);  // an exact cancellation is +0
  return pk_x_norm(s, a.e);
}
inline pk_x pk_x_neg(pk_x a) { a.m = -a.m; return a; }
inline double pk_x_value(pk_x a) { return a.m.y == 0.0 ? ldexp(a.m.x, a.e) : pk_ldexp_dd(a.m, a.e); }
// --- correctly rounded c128 quotients and moduli. A double-double result (~2^-100 relative) is rounded to double;
// within 2^-40 of its half-ulp of a midpoint between doubles, the exact sign of a sum of doubles (the operands'
// exact products against the midpoint, which has 54 bits) decides. Operands are scaled by powers of two into
// [1, 2) first; products more than ~2^-960 below the others are not exact (they could only break a tie).
// The exact sign of t[0] + ... + t[n-1] (no overflow): two-sum sweeps keep the sum and converge to a
// nonoverlapping expansion, whose leading term has the sum's sign.
inline int pk_sum_sign(double *t, int n) {
  for (int pass = 0; pass <= n; ++pass) {
    for (int i = n - 1; i > 0; --i) {
      const pk_dd s = pk_two_sum(t[i - 1], t[i]);
      t[i - 1] = s.x;
      t[i] = s.y;
    }
  }
  for (int i = 0; i < n; ++i)
    if (t[i] != 0.0) return t[i] > 0.0 ? 1 : -1;
  return 0;
}
// r = q rounded; the midpoint on q's side of r is r + s h (s = +-1, h half the gap to the neighbour r + 2 s h).
// Whether q is too near it for r to be sure.
inline int pk_near_midpoint(pk_dd q, double r, int *s, double *h) {
  const double d = (q.x - r) + q.y;
  *s = d >= 0.0 ? 1 : -1;
  *h = 0.5 * fabs(nextafter(r, d >= 0.0 ? (double)INFINITY : -(double)INFINITY) - r);
  return fabs(fabs(d) - *h) <= 0x1p-40 * *h;
}
inline double pk_pick(double r, int s, double h, int beyond) {  // beyond: > 0 past the midpoint, 0 on it
  const double nb = r + 2.0 * s * h;
  if (beyond == 0) return (as_ulong(r) & 1ul) ? nb : r;
  return beyond > 0 ? nb : r;
}
// (n0 + n1 + n2 + n3) / (d0 + d1 + d2 + d3) correctly rounded, each pair (n0, n1) ... an exact product's two parts,
// the denominator positive, both of moderate exponents.
inline double pk_cr_div4(double n0, double n1, double n2, double n3, double d0, double d1, double d2, double d3) {
  const pk_dd num = pk_dd_add((double2)(n0, n1), (double2)(n2, n3));
  if (num.x == 0.0) return num.x;
  const pk_dd q = pk_dd_div(num, pk_dd_add((double2)(d0, d1), (double2)(d2, d3)));
  const double r = q.x + q.y;
  int s;
  double h;
  if (!pk_near_midpoint(q, r, &s, &h)) return r;
  const double dt[4] = {d0, d1, d2, d3};
  double t[16] = {n0, n1, n2, n3};  // num - (r + s h) den
  for (int i = 0; i < 4; ++i) {
    const pk_dd p = pk_two_prod(r, dt[i]);
    t[4 + 2 * i] = -p.x;
    t[5 + 2 * i] = -p.y;
    t[12 + i] = -s * h * dt[i];
  }
  return pk_pick(r, s, h, s * pk_sum_sign(t, 16));
}
// v 2^k for a double v rounded from q: exact where the result is normal; in the subnormal range q is rounded at
// that quantum directly.
inline double pk_scale_result(double v, pk_dd q, int k) {
  if (v == 0.0 || ilogb(v) + k >= -1022) return ldexp(v, k);
  return pk_ldexp_dd(q, k);
}
// c128 quotient, each part correctly rounded: (ac + bd) / (c^2 + d^2) and (bc - ad) / (c^2 + d^2), each sum of
// products scaled by its own power of two (pk_dot2_terms: factors in [1, 2), so no product underflows). Non-finite
// operands and a zero divisor: Annex G (pk_cdiv_g).
inline double pk_cr_quot_part(double p1, double q1, double p2, double q2, double4 den, int ed) {
  if ((p1 == 0.0 || q1 == 0.0) && (p2 == 0.0 || q2 == 0.0)) return 0.0;  // a zero part: either sign (Annex G)
  double4 t;
  const int en = pk_dot2_terms(p1, q1, p2, q2, &t);
  const double r = pk_cr_div4(t.x, t.y, t.z, t.w, den.x, den.y, den.z, den.w);
  const int k = en - ed;
  if (r == 0.0 || ilogb(r) + k >= -1022) return ldexp(r, k);
  // Subnormal: the double-double quotient rounded at the subnormal quantum.
  const pk_dd q = pk_dd_div(pk_dd_add((double2)(t.x, t.y), (double2)(t.z, t.w)),
                            pk_dd_add((double2)(den.x, den.y), (double2)(den.z, den.w)));
  return pk_ldexp_dd(q, k);
}
inline double2 pk_cdiv128(double2 u, double2 v) {
  const double a = u.x, b = u.y, c = v.x, d = v.y;
  if (!pk_cfinite(a, b, c, d) || (c == 0.0 && d == 0.0) || (a == 0.0 && b == 0.0)) return pk_cdiv_g(a, b, c, d);
  double4 den;
  const int ed = pk_dot2_terms(c, c, d, d, &den);
  return (double2)(pk_cr_quot_part(a, c, b, d, den, ed), pk_cr_quot_part(b, c, -a, d, den, ed));
}
// |z| of c64, correctly rounded: x^2 + y^2 is s + e exactly in double; the float nearest sqrt(s) is corrected
// by comparing s + e with the squares of its neighbouring midpoints (25-bit values: exact squares).
inline double pk_cmp_sq(double m, double s, double e) {  // sign of m^2 - (s + e)
  const double m2 = m * m;
  const pk_dd d = pk_two_sum(m2, -s);
  return d.x + (d.y - e);
}
inline float pk_cabs64(float2 z) {
  const double x = fabs((double)z.x), y = fabs((double)z.y);
  if (isinf(x) || isinf(y)) return INFINITY;
  if (isnan(x) || isnan(y)) return NAN;
  const double p = x * x, q = y * y;
  const double s = p + q, bp = s - q, e = (p - bp) + (q - (s - bp));
  float r = (float)sqrt(s);
  if (!isfinite(r) || s == 0.0) return r;
  const float up = nextafter(r, INFINITY), dn = nextafter(r, 0.0f);
  const double hi = isfinite(up) ? 0.5 * ((double)r + (double)up) : INFINITY;
  const double lo = 0.5 * ((double)r + (double)dn);
  const double ch = isfinite(hi) ? pk_cmp_sq(hi, s, e) : 1.0, cl = pk_cmp_sq(lo, s, e);
  if (ch < 0.0) return up;
  if (cl > 0.0) return dn;
  if (ch == 0.0) return (as_uint(r) & 1u) ? up : r;
  if (cl == 0.0) return (as_uint(r) & 1u) ? dn : r;
  return r;
}
// --- elementary functions: the device math's (sdk/devmath/complex.h, which the program carries ahead of this
// text), as double2 for the expressions. c64 arguments are exact in double; the callers round the result once.
inline double2 pk_cexp(double2 z) { double r[2]; pk_dm_cexp(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_clog(double2 z) { double r[2]; pk_dm_clog(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_csin(double2 z) { double r[2]; pk_dm_csin(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_ccos(double2 z) { double r[2]; pk_dm_ccos(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_ctanh(double2 z) { double r[2]; pk_dm_ctanh(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_polar(double m, double t) { double r[2]; pk_dm_cpolar(m, t, r); return (double2)(r[0], r[1]); }
// sqrt(z) per glibc's csqrt: its special cases, then its steps evaluated in the extended format (pk_x) as the
// reference does.
inline pk_dd pk_dd_sqrt(pk_dd s) {
  const double h = sqrt(s.x);
  const pk_dd hh = pk_two_prod(h, h);
  return pk_fast_sum(h, (((s.x - hh.x) - hh.y) + s.y) / (2.0 * h));
}
// |z| of c128 correctly rounded: scaled into [1, 2), sqrt(x^2 + y^2) in double-double, rounded; near a midpoint
// m = r + s h the exact sign of m^2 - x^2 - y^2 decides.
inline double pk_cabs128(double2 z) {
  const double x = fabs(z.x), y = fabs(z.y);
  if (isinf(x) || isinf(y)) return INFINITY;
  if (isnan(x) || isnan(y)) return NAN;
  const double mx = fmax(x, y), mn = fmin(x, y);
  if (mn == 0.0) return mx;
  const int k = ilogb(mx);
  const double a = ldexp(mx, -k), b = ldexp(mn, -k);
  const pk_dd pa = pk_two_prod(a, a), pb = pk_two_prod(b, b);
  const pk_dd q = pk_dd_sqrt(pk_dd_add(pa, pb));
  double r = q.x + q.y;
  int s;
  double h;
  if (pk_near_midpoint(q, r, &s, &h)) {
    const pk_dd rr = pk_two_prod(r, r);
    double t[8] = {rr.x, rr.y, 2.0 * s * h * r, h * h, -pa.x, -pa.y, -pb.x, -pb.y};
    r = pk_pick(r, s, h, -s * pk_sum_sign(t, 8));  // m^2 above x^2 + y^2: |z| below m
  }
  return pk_scale_result(r, q, k);
}
inline pk_x pk_x_sqrt(pk_x a) {
  if (a.m.x == 0.0) return a;
  pk_dd m = a.m;
  int e = a.e;
  if (e & 1) {
    m = 2.0 * m;
    e -= 1;
  }
  return pk_x_norm(pk_dd_sqrt(m), e / 2);
}
// |x + iy| rounded to the extended format (the reference's hypotl rounds the exact value so).
inline pk_x pk_x_hypot(double x, double y) {
  const double mx = fmax(fabs(x), fabs(y)), mn = fmin(fabs(x), fabs(y));
  if (mn == 0.0) return pk_x_of(mx);
  const int k = ilogb(mx);
  const double a = ldexp(mx, -k), b = ldexp(mn, -k);
  return pk_x_norm(pk_dd_sqrt(pk_dd_add(pk_two_prod(a, a), pk_two_prod(b, b))), k);
}
// Returns 1 with the special value in *sp, or 0 with the parts as pk_x (their signs included).
inline int pk_csqrt_x(double2 z, double2 *sp, pk_x *re, pk_x *im) {
  const double x = z.x, y = z.y;
  if (isinf(y)) { *sp = (double2)(INFINITY, y); return 1; }
  if (isinf(x)) {
    if (x < 0.0) *sp = (double2)(isnan(y) ? NAN : 0.0, copysign((double)INFINITY, y));
    else *sp = (double2)(x, isnan(y) ? NAN : copysign(0.0, y));
    return 1;
  }
  if (isnan(x) || isnan(y)) { *sp = (double2)(NAN, NAN); return 1; }
  const pk_x hf = pk_x_of(0.5);
  if (y == 0.0) {
    const double r = sqrt(fabs(x));  // OpenCL's double sqrt is correctly rounded
    *sp = x < 0.0 ? (double2)(0.0, copysign(r, y)) : (double2)(r, copysign(0.0, y));
    return 1;
  }
  if (x == 0.0) {  // both parts are sqrt(|y| / 2)
    *re = pk_x_sqrt(pk_x_mul(hf, pk_x_of(fabs(y))));
    *im = y < 0.0 ? pk_x_neg(*re) : *re;
    return 0;
  }
  // glibc's csqrt steps: 2 Re Im = y avoids the cancellation of |z| - |x|.
  const pk_x X = pk_x_of(x), Y = pk_x_of(y), D = pk_x_hypot(x, y);
  if (x > 0.0) {
    *re = pk_x_sqrt(pk_x_mul(hf, pk_x_add(D, X)));
    *im = pk_x_mul(hf, pk_x_div(Y, *re));
    return 0;
  }
  const pk_x S = pk_x_sqrt(pk_x_mul(hf, pk_x_add(D, pk_x_neg(X))));
  *im = y < 0.0 ? pk_x_neg(S) : S;
  *re = pk_x_mul(hf, pk_x_div(Y, S));
  if (re->m.x < 0.0) *re = pk_x_neg(*re);
  return 0;
}
// P = sqrt((|z| + |x|) / 2) (the real part for x >= 0, |Im| otherwise) correctly rounded from its double-double
// value p: z is scaled by 4^-j into [1, 4) (P by 2^-j, exactly); near a midpoint m, P < m exactly when
// (2 m^2 - |x|)^2 > x^2 + y^2 (2 m^2 - |x| > 0 there), an exact sum of 54 products' parts.
inline double pk_csqrt_root(double x, double y, pk_x p) {
  const double v = pk_x_value(p);
  const int j = ilogb(fmax(fabs(x), fabs(y))) >> 1;
  const double xs = ldexp(fabs(x), -2 * j), ys = ldexp(y, -2 * j);
  const pk_dd q = (double2)(ldexp(p.m.x, p.e - j), ldexp(p.m.y, p.e - j));
  const double r = q.x + q.y;
  int s;
  double h;
  if (v == 0.0 || !isfinite(v) || !pk_near_midpoint(q, r, &s, &h)) return v;
  const pk_dd rr = pk_two_prod(r, r);
  const double e[5] = {2.0 * rr.x, 2.0 * rr.y, 4.0 * s * h * r, 2.0 * h * h, -xs};  // 2 m^2 - |x|
  double t[54];
  int n = 0;
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b) {
      const pk_dd pr = pk_two_prod(e[a], e[b]);
      t[n++] = pr.x;
      t[n++] = pr.y;
    }
  const pk_dd x2 = pk_two_prod(xs, xs), y2 = pk_two_prod(ys, ys);
  t[n++] = -x2.x;
  t[n++] = -x2.y;
  // y^2 far below x^2 may underflow: its sign still breaks an exact tie of the rest.
  t[n++] = (y2.x == 0.0 && ys != 0.0) ? -0x1p-1074 : -y2.x;
  t[n++] = -y2.y;
  return ldexp(pk_pick(r, s, h, -s * pk_sum_sign(t, n)), j);
}
// c128 sqrt: the square-root part correctly rounded (pk_csqrt_root); the other part, y / (2 P), rounded once from
// its ~2^-100-accurate double-double (no exact check: it is only wrong within ~2^-47 of a midpoint).
inline double2 pk_csqrt(double2 z) {
  double2 sp;
  pk_x re, im;
  if (pk_csqrt_x(z, &sp, &re, &im)) return sp;
  if (z.x == 0.0) {
    const double r = pk_csqrt_root(z.x, z.y, re);
    return (double2)(r, copysign(r, z.y));
  }
  if (z.x > 0.0) return (double2)(pk_csqrt_root(z.x, z.y, re), pk_x_value(im));
  return (double2)(pk_x_value(re), copysign(pk_csqrt_root(z.x, z.y, im.m.x < 0.0 ? pk_x_neg(im) : im), z.y));
}
// A double-double rounded once to float: (float)hi is right unless hi is exactly a midpoint between floats, where
// lo's sign decides.
inline float pk_dd_to_float(pk_dd q) {
  const float r = (float)q.x;
  if (q.y == 0.0 || (double)r == q.x || !isfinite(r)) return r;
  const float other = nextafter(r, (double)r < q.x ? INFINITY : -INFINITY);
  if (0.5 * ((double)r + (double)other) != q.x) return r;
  return ((q.y > 0.0) == (other > r)) ? other : r;
}
// c64 quotient, each part correctly rounded: products of floats are exact in double, so the numerators and
// c^2 + d^2 are exact double-doubles; the double-double quotient is rounded to float, and near a midpoint m between
// floats (25 bits) the exact sign of num - m den decides.
inline float pk_cr_quot64(pk_dd num, pk_dd den) {
  if (num.x == 0.0) return 0.0f;  // a zero part: either sign (Annex G leaves it open)
  const pk_dd q = pk_dd_div(num, den);
  const float r = pk_dd_to_float(q);
  if (!isfinite(r) || r == 0.0f) return r;
  const double gap = (double)nextafter(r, INFINITY) - (double)r;
  const double d = (q.x - (double)r) + q.y;
  const float other = nextafter(r, d >= 0.0 ? INFINITY : -INFINITY);
  if (!isfinite(other) || fabs(fabs(d) - 0.5 * fabs((double)other - (double)r)) > 0x1p-40 * gap) return r;
  const double m = 0.5 * ((double)r + (double)other);
  const pk_dd p0 = pk_two_prod(m, den.x), p1 = pk_two_prod(m, den.y);
  double t[6] = {num.x, num.y, -p0.x, -p0.y, -p1.x, -p1.y};
  const int sg = pk_sum_sign(t, 6), s = other > r ? 1 : -1;
  if (sg == 0) return (as_uint(r) & 1u) ? other : r;
  return sg * s > 0 ? other : r;
}
inline float2 pk_cdiv64(float2 u, float2 v) {
  const double a = u.x, b = u.y, c = v.x, d = v.y;
  if (!pk_cfinite(a, b, c, d) || (c == 0.0 && d == 0.0) || (a == 0.0 && b == 0.0))
    return convert_float2(pk_cdiv_g(a, b, c, d));
  const pk_dd den = pk_two_sum(c * c, d * d);
  return (float2)(pk_cr_quot64(pk_two_sum(a * c, b * d), den), pk_cr_quot64(pk_two_sum(b * c, -(a * d)), den));
}
inline float pk_x_float(pk_x a) { return pk_dd_to_float((double2)(ldexp(a.m.x, a.e), ldexp(a.m.y, a.e))); }
inline float2 pk_csqrt64(float2 z) {
  double2 sp;
  pk_x re, im;
  if (pk_csqrt_x(convert_double2(z), &sp, &re, &im)) return convert_float2(sp);
  return (float2)(pk_x_float(re), pk_x_float(im));
}
// a^b as the oracle defines it: 1 for b = 0, 0 for a = 0 with a real b > 0, else exp(b log a).
inline double2 pk_cpow(double2 a, double2 b) {
  if (b.x == 0.0 && b.y == 0.0) return (double2)(1.0, 0.0);
  if (a.x == 0.0 && a.y == 0.0 && b.y == 0.0 && b.x > 0.0) return (double2)(0.0, 0.0);
  const double2 l = pk_clog(a);
  return pk_cexp(pk_cmul_g(b.x, b.y, l.x, l.y));
}
// --- c128 pow: exp(b log a) with log a, the product and the phase in double-double. The result's relative error
// is about the absolute error of w = b log a, so w must be good to ~2^-56 absolutely, which double alone (whose w
// errs by |w| 2^-53) misses for every |w| above a few.
// sin and cos of |t| <= pi/4 + tiny in double-double: Taylor series to t^29 / 29! (below 2^-104 of the result).
inline void pk_dd_sincos_small(pk_dd t, pk_dd *s, pk_dd *c) {
  const pk_dd t2 = pk_dd_mul(t, t);
  pk_dd sv = t, cv = (double2)(1.0, 0.0), ts = t, tc = (double2)(1.0, 0.0);
  for (int k = 1; k <= 14; ++k) {
    ts = pk_dd_div_d(pk_dd_mul(ts, t2), (double)((2 * k) * (2 * k + 1)));
    tc = pk_dd_div_d(pk_dd_mul(tc, t2), (double)((2 * k - 1) * (2 * k)));
    if (k & 1) {
      sv = pk_dd_sub(sv, ts);
      cv = pk_dd_sub(cv, tc);
    } else {
      sv = pk_dd_add(sv, ts);
      cv = pk_dd_add(cv, tc);
    }
  }
  *s = sv;
  *c = cv;
}
// sin and cos of a double-double angle with |a| < 2^30: a - k pi/2 with pi/2 in three parts (k pi/2's error stays
// ~2^-140), then the series and the quarter turns k mod 4.
inline void pk_dd_sincos(pk_dd a, pk_dd *s, pk_dd *c) {
  const double k = rint(a.x * 0x1.45f306dc9c883p-1);
  pk_dd r = pk_dd_sub(a, pk_two_prod(k, 0x1.921fb54442d18p0));
  r = pk_dd_sub(r, pk_two_prod(k, 0x1.1a62633145c07p-54));
  r = pk_dd_add_d(r, k * 0x1.f1976b7ed8fbcp-110);
  pk_dd sr, cr;
  pk_dd_sincos_small(r, &sr, &cr);
  switch (((long)k) & 3) {
    case 0: *s = sr; *c = cr; break;
    case 1: *s = cr; *c = -sr; break;
    case 2: *s = -sr; *c = -cr; break;
    default: *s = -cr; *c = sr; break;
  }
}
// e^(wr + i wi) = 2^k e^r cis(wi) with r = wr - k ln2: e^r in double-double (the builtin, refined by one Newton step
// on the double-double log) times the double-double cis, rounded once by pk_ldexp_dd (exact scaling, subnormals
// included). Beyond |wi| = 2^30 the phase from the builtins (the reference's own phase is no better there).
inline double2 pk_cexp_dd(pk_dd wr, pk_dd wi) {
  pk_dd s, c;
  if (fabs(wi.x) < 0x1p30) {
    pk_dd_sincos(wi, &s, &c);
  } else {
    s = (double2)(sin(wi.x), 0.0);
    c = (double2)(cos(wi.x), 0.0);
  }
  const double k = rint(wr.x * 1.4426950408889634);
  if (fabs(k) > 2000.0) {  // far out of range: an infinity or a zero whatever the phase (a real power: no 0 * inf)
    const double e = k > 0.0 ? INFINITY : 0.0;
    return wi.x == 0.0 ? (double2)(e, wi.x) : (double2)(e * (c.x + c.y), e * (s.x + s.y));
  }
  const pk_dd r = pk_dd_sub(wr, pk_dd_mul_d((double2)(0.6931471805599453, 2.3190468138462996e-17), k));
  const double er = exp(r.x);
  const pk_dd d = pk_dd_sub(r, pk_dd_log(er));
  const pk_dd e = pk_fast_sum(er, er * (d.x + d.y));
  if (wi.x == 0.0) return (double2)(pk_ldexp_dd(e, (int)k), wi.x);
  return (double2)(pk_ldexp_dd(pk_dd_mul(e, c), (int)k), pk_ldexp_dd(pk_dd_mul(e, s), (int)k));
}
// --- Exact phase of pow where b log a is huge. Beyond |b log a| ~ 2^26 double-double no longer holds the phase
// Im(b log a) mod 2 pi (its error is |b log a| 2^-104 radians before the reduction): log a and b log a are then
// computed in fixed point, in 32-bit words (least significant first) with fl words below the point and two's
// complement signs, at |log2 |b|| + 110 bits below the point; the phase is taken as a fraction of a turn (b times
// log a / (2 pi), modulo 1), and Re(b log a) exactly, however its two products cancel. That is up to 36 words for
// c128 (|b| near 2^1024), so the series below cost ~10^6 word products an element: only the few elements with such
// a b take this path.
#define PK_BN 72
inline void pk_bn_zero(uint *r, int n) { for (int i = 0; i < n; ++i) r[i] = 0u; }
inline void pk_bn_copy(uint *r, const uint *a, int n) { for (int i = 0; i < n; ++i) r[i] = a[i]; }
inline int pk_bn_negative(const uint *a, int n) { return (int)(a[n - 1] >> 31); }
inline int pk_bn_is_zero(const uint *a, int n) {
  for (int i = 0; i < n; ++i)
    if (a[i] != 0u) return 0;
  return 1;
}
inline void pk_bn_negate(uint *r, int n) {
  ulong c = 1ul;
  for (int i = 0; i < n; ++i) {
    c += (ulong)(~r[i]);
    r[i] = (uint)c;
    c >>= 32;
  }
}
inline void pk_bn_add(uint *r, const uint *a, const uint *b, int n) {
  ulong c = 0ul;
  for (int i = 0; i < n; ++i) {
    c += (ulong)a[i] + (ulong)b[i];
    r[i] = (uint)c;
    c >>= 32;
  }
}
inline void pk_bn_sub(uint *r, const uint *a, const uint *b, int n) {
  ulong c = 1ul;
  for (int i = 0; i < n; ++i) {
    c += (ulong)a[i] + (ulong)(~b[i]);
    r[i] = (uint)c;
    c >>= 32;
  }
}
// r = a b, truncated to the format (the product's magnitude is truncated, then signed). r may alias a or b.
inline void pk_bn_mul(uint *r, const uint *a, const uint *b, int n, int fl) {
  uint x[PK_BN], y[PK_BN], p[2 * PK_BN];
  const int neg = pk_bn_negative(a, n) ^ pk_bn_negative(b, n), top = fl + n;
  pk_bn_copy(x, a, n);
  pk_bn_copy(y, b, n);
  if (pk_bn_negative(x, n)) pk_bn_negate(x, n);
  if (pk_bn_negative(y, n)) pk_bn_negate(y, n);
  for (int k = 0; k < top; ++k) p[k] = 0u;
  for (int i = 0; i < n; ++i) {
    if (x[i] == 0u) continue;
    ulong c = 0ul;
    int j = 0;
    for (; j < n && i + j < top; ++j) {
      c += (ulong)x[i] * y[j] + p[i + j];
      p[i + j] = (uint)c;
      c >>= 32;
    }
    if (i + j < top) p[i + j] = (uint)c;
  }
  for (int k = 0; k < n; ++k) r[k] = p[fl + k];
  if (neg) pk_bn_negate(r, n);
}
// r = a m (two's complement times an unsigned word, modulo the format's range: exact while it fits).
inline void pk_bn_mul_u32(uint *r, const uint *a, uint m, int n) {
  ulong c = 0ul;
  for (int i = 0; i < n; ++i) {
    c += (ulong)a[i] * m;
    r[i] = (uint)c;
    c >>= 32;
  }
}
// r = a / d, truncated, for a >= 0.
inline void pk_bn_div_u32(uint *r, const uint *a, uint d, int n) {
  ulong rem = 0ul;
  for (int i = n - 1; i >= 0; --i) {
    const ulong cur = (rem << 32) | (ulong)a[i];
    r[i] = (uint)(cur / d);
    rem = cur % d;
  }
}
// r = floor(a / 2^s) and r = a 2^s, s >= 0. r may alias a.
inline void pk_bn_shr(uint *r, const uint *a, int s, int n) {
  const uint fill = pk_bn_negative(a, n) ? 0xffffffffu : 0u;
  const int q = s >> 5, b = s & 31;
  for (int i = 0; i < n; ++i) {
    const uint lo = i + q < n ? a[i + q] : fill, hi = i + q + 1 < n ? a[i + q + 1] : fill;
    r[i] = b ? (lo >> b) | (hi << (32 - b)) : lo;
  }
}
inline void pk_bn_shl(uint *r, const uint *a, int s, int n) {
  const int q = s >> 5, b = s & 31;
  for (int i = n - 1; i >= 0; --i) {
    const uint hi = i - q >= 0 ? a[i - q] : 0u, lo = i - q - 1 >= 0 ? a[i - q - 1] : 0u;
    r[i] = b ? (hi << b) | (lo >> (32 - b)) : hi;
  }
}
// Sign extension from n to nw words.
inline void pk_bn_widen(uint *r, const uint *a, int n, int nw) {
  const uint fill = pk_bn_negative(a, n) ? 0xffffffffu : 0u;
  for (int i = 0; i < nw; ++i) r[i] = i < n ? a[i] : fill;
}
// A finite double, exact down to the format's last bit (below it truncated towards zero).
inline void pk_bn_from_double(uint *r, double v, int n, int fl) {
  pk_bn_zero(r, n);
  if (v == 0.0) return;
  int e;
  const double m = frexp(fabs(v), &e);
  ulong mi = (ulong)ldexp(m, 53);  // |v| = mi 2^(e - 53)
  int pos = e - 53 + 32 * fl;      // the format's bit index of mi's last bit
  if (pos < 0) {
    mi = pos <= -64 ? 0ul : mi >> (-pos);
    pos = 0;
  }
  const int q = pos >> 5, b = pos & 31;
  const ulong lo = mi << b;
  const uint hi = b ? (uint)(mi >> (64 - b)) : 0u;
  if (q < n) r[q] = (uint)lo;
  if (q + 1 < n) r[q + 1] = (uint)(lo >> 32);
  if (q + 2 < n) r[q + 2] = hi;
  if (v < 0.0) pk_bn_negate(r, n);
}
// The value as a double-double from its four leading words (finite: callers keep it below 2^1000).
inline pk_dd pk_bn_to_dd(const uint *a, int n, int fl) {
  uint x[PK_BN];
  pk_bn_copy(x, a, n);
  const int neg = pk_bn_negative(x, n);
  if (neg) pk_bn_negate(x, n);
  int top = n - 1;
  while (top > 0 && x[top] == 0u) --top;
  pk_dd s = (double2)(0.0, 0.0);
  for (int i = top; i >= 0 && i > top - 4; --i) s = pk_dd_add_d(s, ldexp((double)x[i], 32 * (i - fl)));
  return neg ? -s : s;
}
// A constant's fraction (a table of kit::special, most significant word first).
inline void pk_bn_const(uint *r, __constant const uint *t, int n, int fl) {
  pk_bn_zero(r, n);
  for (int j = 0; j < fl; ++j) r[fl - 1 - j] = t[j];
}
// r = 1 / d for d in [1, 8): Newton's r (2 - d r) from the double quotient, 53 bits doubling to beyond 1152.
inline void pk_bn_recip(uint *r, const uint *d, int n, int fl) {
  uint e[PK_BN], two[PK_BN];
  pk_bn_from_double(r, 1.0 / pk_bn_to_dd(d, n, fl).x, n, fl);
  pk_bn_zero(two, n);
  two[fl] = 2u;
  for (int it = 0; it < 6; ++it) {
    pk_bn_mul(e, d, r, n, fl);
    pk_bn_sub(e, two, e, n);
    pk_bn_mul(r, r, e, n, fl);
  }
}
// r = sqrt(x) for x in [1, 4]: x y with y = 1 / sqrt(x) by Newton's y (3 - x y^2) / 2.
inline void pk_bn_sqrt(uint *r, const uint *x, int n, int fl) {
  uint y[PK_BN], t[PK_BN], three[PK_BN];
  pk_bn_from_double(y, 1.0 / sqrt(pk_bn_to_dd(x, n, fl).x), n, fl);
  pk_bn_zero(three, n);
  three[fl] = 3u;
  for (int it = 0; it < 6; ++it) {
    pk_bn_mul(t, y, y, n, fl);
    pk_bn_mul(t, t, x, n, fl);
    pk_bn_sub(t, three, t, n);
    pk_bn_mul(y, y, t, n, fl);
    pk_bn_shr(y, y, 1, n);
  }
  pk_bn_mul(r, x, y, n, fl);
}
// sum_k sign^k z^(2k+1) / (2k+1) for 0 <= z <= 1/3: atanh (sign +1) or atan (sign -1); the terms fall by z^2 each
// until they vanish from the format.
inline void pk_bn_odd_series(uint *r, const uint *z, int alternate, int n, int fl) {
  uint z2[PK_BN], p[PK_BN], t[PK_BN];
  pk_bn_mul(z2, z, z, n, fl);
  pk_bn_copy(p, z, n);
  pk_bn_copy(r, z, n);
  for (uint k = 3u;; k += 2u) {
    pk_bn_mul(p, p, z2, n, fl);
    if (pk_bn_is_zero(p, n)) break;
    pk_bn_div_u32(t, p, k, n);
    if (alternate && (k & 2u))
      pk_bn_sub(r, r, t, n);
    else
      pk_bn_add(r, r, t, n);
  }
}
// log|a| and arg a of a finite nonzero a. With m = max(|x|, |y|) 2^-k in [1, 2): |a|^2 2^-2k = S in [1, 8), exact
// (to the format), log|a| = (2k + j) ln2 / 2 + atanh(z), z = (s - 1) / (s + 1), s = S 2^-j in [1, 2). arg a:
// atan of t = min / max, halved twice (t / (1 + sqrt(1 + t^2))) to below tan(pi / 16), then the octant.
inline void pk_bn_clog(uint *lr, uint *li, double x, double y, int n, int fl) {
  uint X[PK_BN], Y[PK_BN], s[PK_BN], t[PK_BN], u[PK_BN];
  const double ax = fabs(x), ay = fabs(y), mx = fmax(ax, ay), mn = fmin(ax, ay);
  const int k = ilogb(mx);
  pk_bn_from_double(X, ldexp(mx, -k), n, fl);
  pk_bn_from_double(Y, ldexp(mn, -k), n, fl);
  pk_bn_mul(s, X, X, n, fl);
  pk_bn_mul(t, Y, Y, n, fl);
  pk_bn_add(s, s, t, n);
  const int j = 31 - (int)clz(s[fl]);
  pk_bn_shr(s, s, j, n);
  pk_bn_copy(t, s, n);
  t[fl] += 1u;  // s + 1
  s[fl] -= 1u;  // s - 1
  pk_bn_recip(u, t, n, fl);
  pk_bn_mul(t, s, u, n, fl);
  pk_bn_odd_series(lr, t, 0, n, fl);
  const int e = 2 * k + j;
  pk_bn_const(u, pk_bn_ln2, n, fl);
  pk_bn_mul_u32(u, u, (uint)abs(e), n);
  if (e < 0) pk_bn_negate(u, n);
  pk_bn_shr(u, u, 1, n);
  pk_bn_add(lr, lr, u, n);

  pk_bn_recip(u, X, n, fl);
  pk_bn_mul(t, Y, u, n, fl);
  for (int h = 0; h < 2; ++h) {
    pk_bn_mul(u, t, t, n, fl);
    u[fl] += 1u;
    pk_bn_sqrt(s, u, n, fl);
    s[fl] += 1u;
    pk_bn_recip(u, s, n, fl);
    pk_bn_mul(t, t, u, n, fl);
  }
  pk_bn_odd_series(li, t, 1, n, fl);
  pk_bn_shl(li, li, 2, n);
  pk_bn_const(u, pk_bn_pi_4, n, fl);
  if (ay > ax) {  // pi/2 - atan
    pk_bn_shl(u, u, 1, n);
    pk_bn_sub(li, u, li, n);
    pk_bn_shr(u, u, 1, n);
  }
  if (x < 0.0) {  // pi - that
    pk_bn_shl(u, u, 2, n);
    pk_bn_sub(li, u, li, n);
  }
  if (signbit(y)) pk_bn_negate(li, n);
}
// a^b for finite a != 0 and finite b, exactly enough for any b: Re(b log a) and the turn Im(b log a) / (2 pi)
// modulo 1 in fixed point, then pk_cexp_dd of Re and the phase in [-pi, pi].
inline double2 pk_cpow_exact(double2 a, double2 b) {
  uint lr[PK_BN], li[PK_BN], c[PK_BN], wl[PK_BN], wa[PK_BN], bx[PK_BN], by[PK_BN], p[PK_BN], q[PK_BN];
  const int eb = max(ilogb(fmax(fabs(b.x), fabs(b.y))) + 1, 0);
  const int fl = (eb + 110 + 31) / 32, n = fl + 1, nw = fl + (eb + 12) / 32 + 2;
  pk_bn_clog(lr, li, a.x, a.y, n, fl);
  pk_bn_from_double(bx, b.x, nw, fl);
  pk_bn_from_double(by, b.y, nw, fl);
  // Re(b log a) = bx log|a| - by arg a
  pk_bn_widen(wl, lr, n, nw);
  pk_bn_widen(wa, li, n, nw);
  pk_bn_mul(p, bx, wl, nw, fl);
  pk_bn_mul(q, by, wa, nw, fl);
  pk_bn_sub(p, p, q, nw);
  pk_dd wr;
  int big = 0;  // |Re| >= 2^32: exp gives 0 or infinity whatever the phase
  for (int i = fl + 1; i < nw; ++i) big |= p[i] != (pk_bn_negative(p, nw) ? 0xffffffffu : 0u);
  wr = big ? (double2)(pk_bn_negative(p, nw) ? -0x1p40 : 0x1p40, 0.0) : pk_bn_to_dd(p, nw, fl);
  // Im(b log a) / (2 pi) = bx arg a / (2 pi) + by log|a| / (2 pi); the fraction words are the turn.
  pk_bn_const(c, pk_bn_inv_2pi, n, fl);
  pk_bn_mul(p, li, c, n, fl);
  pk_bn_widen(wa, p, n, nw);
  pk_bn_mul(p, lr, c, n, fl);
  pk_bn_widen(wl, p, n, nw);
  pk_bn_mul(p, bx, wa, nw, fl);
  pk_bn_mul(q, by, wl, nw, fl);
  pk_bn_add(p, p, q, nw);
  pk_bn_zero(q, nw);
  pk_bn_copy(q, p, fl);
  pk_dd turn = pk_bn_to_dd(q, nw, fl);
  if (turn.x >= 0.5) turn = pk_dd_add_d(turn, -1.0);
  const pk_dd phase = pk_dd_mul(turn, (double2)(6.283185307179586, 2.4492935982947064e-16));
  return pk_cexp_dd(wr, phase);
}
// u v 2^-k where both are finite (u the scaled operand), else the IEEE product (its inf or NaN, unscaled).
inline double pk_mul_down(double u, double v, int k) {
  return (isfinite(u) && isfinite(v)) ? ldexp(u, -k) * v : u * v;
}
// A part of w 2^-k back to w: finite values beyond double's range are finite in the reference's long double, so
// they stay finite (the largest double): exp gives the same 0 or infinity, and its phase is arbitrary in both.
inline double pk_scale_back(double v, int k) {
  if (!isfinite(v)) return v;
  const double r = ldexp(v, k);
  return isinf(r) ? copysign(DBL_MAX, v) : r;
}
// c128 a^b with the oracle's cases (pk_cpow's). The reference's w = b log a is a long double: no product of
// finite parts overflows there, so a huge b is scaled by 2^-kb on the way. Non-finite operands and a = 0: w with
// C11 Annex G's recovery (libgcc's __mulxc3), then pk_cexp's special values. Otherwise: log a, w and the phase in
// double-double, and where w's real part is beyond exp's range the result is 0 or a complex infinity whatever
// the phase.
inline double2 pk_cpow128(double2 a, double2 b) {
  if (b.x == 0.0 && b.y == 0.0) return (double2)(1.0, 0.0);
  if (a.x == 0.0 && a.y == 0.0 && b.y == 0.0 && b.x > 0.0) return (double2)(0.0, 0.0);
  const double bm = fmax(isfinite(b.x) ? fabs(b.x) : 0.0, isfinite(b.y) ? fabs(b.y) : 0.0);
  const int kb = bm > 0x1p900 ? ilogb(bm) : 0;
  if (!pk_cfinite(a.x, a.y, b.x, b.y) || (a.x == 0.0 && a.y == 0.0)) {
    double2 l = pk_clog(a);
    // Parts of log a below double's range are not 0 in long double: an infinite b part times them is infinite,
    // not NaN. Their signs are those of y (arg) and of |a| - 1 (> 0: |a| = 1 only exactly).
    if (isfinite(a.x) && isfinite(a.y)) {
      if (l.y == 0.0 && a.y != 0.0) l.y = copysign(0x1p-1074, a.y);
      if (l.x == 0.0 && a.x != 0.0 && a.y != 0.0) l.x = 0x1p-1074;
    }
    double p = b.x, q = b.y, c = l.x, d = l.y;
    double x = pk_mul_down(p, c, kb) - pk_mul_down(q, d, kb), y = pk_mul_down(p, d, kb) + pk_mul_down(q, c, kb);
    if (isnan(x) && isnan(y)) {  // pk_cmul_g's recovery of infinities
      int re = 0;
      if (isinf(p) || isinf(q)) { p = pk_box(p); q = pk_box(q); c = pk_unnan(c); d = pk_unnan(d); re = 1; }
      if (isinf(c) || isinf(d)) { c = pk_box(c); d = pk_box(d); p = pk_unnan(p); q = pk_unnan(q); re = 1; }
      if (re) { x = INFINITY * (p * c - q * d); y = INFINITY * (p * d + q * c); }
    }
    return pk_cexp((double2)(pk_scale_back(x, kb), pk_scale_back(y, kb)));
  }
  const double bx = ldexp(b.x, -kb), by = ldexp(b.y, -kb);
  pk_dm_dd lr_dm, li_dm;  // log a in double-double: the device math's (sdk/devmath/complex.h)
  pk_dm_clog_dd(a.x, a.y, &lr_dm, &li_dm);
  const pk_dd lr = (double2)(lr_dm.hi, lr_dm.lo), li = (double2)(li_dm.hi, li_dm.lo);
  pk_dd wr = pk_dd_sub(pk_dd_mul_d(lr, bx), pk_dd_mul_d(li, by));
  pk_dd wi = pk_dd_add(pk_dd_mul_d(li, bx), pk_dd_mul_d(lr, by));
  // Beyond |Im w| = 2^26 the phase, and where Re w's two products (each good to ~2^-90 of itself) cancel, Re w,
  // need the exact path.
  const double terms = ldexp(fmax(fabs(bx), fabs(by)) * fmax(fabs(lr.x), fabs(li.x)), kb);
  if (ldexp(fabs(wi.x), kb) >= 0x1p26 || (terms >= 0x1p26 && ldexp(fabs(wr.x), kb) <= 0x1p12 + terms * 0x1p-90))
    return pk_cpow_exact(a, b);
  if (kb > 0) {
    const double re = ldexp(wr.x, kb);
    if (re < -746.0) return (double2)(0.0, 0.0);
    if (re > 710.0) return (double2)(INFINITY, INFINITY);
    wr = (double2)(re, ldexp(wr.y, kb));
    wi = (double2)(ldexp(wi.x, kb), ldexp(wi.y, kb));
  }
  return pk_cexp_dd(wr, wi);
}
// c64 a^b: w = b log a in double holds the phase to the float result's accuracy up to |w| ~ 2^20; beyond, c128's
// double-double and exact paths.
inline double2 pk_cpow_c64(double2 a, double2 b) {
  if (pk_cfinite(a.x, a.y, b.x, b.y) && (a.x != 0.0 || a.y != 0.0)) {
    const double2 l = pk_clog(a);
    if (fmax(fabs(b.x), fabs(b.y)) * fmax(fabs(l.x), fabs(l.y)) >= 0x1p20) return pk_cpow128(a, b);
  }
  return pk_cpow(a, b);
}
)CL";
}

}  // namespace pk::ocl
