// cl_complex.cpp — OpenCL C helpers of the complex dtypes (c64 = float2, c128 = double2: real part first). They
// compute in double: c64 products of floats are exact there, so one final rounding to float is the correctly
// rounded result; c128 uses double-double (the fma-based helpers of cl_special's kSrcDD, which the program carries
// ahead of these). Infinities and NaNs follow C11 Annex G and glibc's special values, as the CPU backend's and
// the oracle's std::complex do. Where the reference itself rounds through x87 extended precision (c128 division,
// sqrt and modulus), the same steps are evaluated in an emulated 64-bit-significand format (pk_x) so that the
// results agree bit for bit (a correctly rounded result would differ from it about once per 2^11 values).
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
// c64: the products of floats are exact in double, so ac - bd rounded to odd then to float rounds once.
inline float2 pk_cmul64(float2 u, float2 v) {
  const double a = u.x, b = u.y, c = v.x, d = v.y;
  if (!pk_cfinite(a, b, c, d)) return convert_float2(pk_cmul_g(a, b, c, d));
  return (float2)((float)pk_sum_odd(a * c, -(b * d)), (float)pk_sum_odd(a * d, b * c));
}
// Sums of complex values: the finite terms' sums per part plus, per part, flags of the non-finite terms seen (1:
// +inf, 2: -inf, 4: NaN), so that a sum whose finite terms overflow still meets a later infinity as exact
// arithmetic does (DBL_MAX + DBL_MAX - inf is -inf, not NaN).
inline double pk_flag(double v) { return isnan(v) ? 4.0 : isinf(v) ? (v > 0.0 ? 1.0 : 2.0) : 0.0; }
inline double4 pk_csum_ld(double2 v) {
  return (double4)(isfinite(v.x) ? v.x : 0.0, isfinite(v.y) ? v.y : 0.0, pk_flag(v.x), pk_flag(v.y));
}
inline double4 pk_csum_add(double4 a, double4 b) {
  return (double4)(a.x + b.x, a.y + b.y, (double)((int)a.z | (int)b.z), (double)((int)a.w | (int)b.w));
}
inline double pk_unflag(double s, double f) {
  const int k = (int)f;
  return ((k & 4) || (k & 3) == 3) ? NAN : (k & 1) ? INFINITY : (k & 2) ? -INFINITY : s;
}
inline double2 pk_csum_st(double4 a) { return (double2)(pk_unflag(a.x, a.z), pk_unflag(a.y, a.w)); }
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
inline double2 pk_polar(double r, double t) { return (double2)(r * cos(t), r * sin(t)); }
inline float2 pk_cdiv64(float2 u, float2 v) { return convert_float2(pk_cdiv_g(u.x, u.y, v.x, v.y)); }

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
  const double q_ulp = ldexp(1.0, -1074 - k);
  double n = rint(q.x / q_ulp);
  const double d = (q.x - n * q_ulp) + q.y, odd = fmod(n, 2.0);
  if (d > 0.5 * q_ulp || (d == 0.5 * q_ulp && odd != 0.0)) n += 1.0;
  else if (d < -0.5 * q_ulp || (d == -0.5 * q_ulp && odd != 0.0)) n -= 1.0;
  return ldexp(n * q_ulp, k);
}
// q rounded to 64 significant bits (ties to even), as a double-double. The reference computes c128 quotients and
// square roots in x87 extended precision (64-bit significands) and rounds that to double: c128 div, reciprocal,
// sqrt and abs round their ~2^-100-accurate double-double results the same two-step way (RN53(RN64(x))), which
// agrees with it, and with the CPU backend, where a direct rounding would differ at the 2^-11 of values whose
// extended-precision rounding lands on a midpoint between doubles.
inline pk_dd pk_rn64(pk_dd q) {
  if (q.y == 0.0 || !isfinite(q.x)) return q;
  const int e = ilogb(q.x);
  // Just below a power of two (lo of the other sign) the significand's last place is half as large.
  const int below = (fabs(q.x) == ldexp(1.0, e)) && ((q.x > 0.0) != (q.y > 0.0));
  const double u64 = ldexp(1.0, e - 63 - below);
  return (double2)(q.x, rint(q.y / u64) * u64);
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
// Extended-precision numbers (64-bit significand, unbounded exponent) as m 2^e with m a double-double in [1, 2)
// rounded to 64 bits (pk_rn64), or m = ±0. The reference divides c128 values by Smith's method in x87 extended
// precision; evaluating the same steps in this format reproduces its roundings (the double-double operations are
// ~2^-104 accurate, so they round to 64 bits as the exact operations do except within 2^-40 of a tie).
typedef struct { pk_dd m; int e; } pk_x;
inline pk_x pk_x_norm(pk_dd m, int e) {
  pk_x r;
  r.m = m;
  r.e = e;
  if (m.x == 0.0) { r.m = (double2)(m.x, 0.0); r.e = 0; return r; }
  const int k = ilogb(m.x);
  r.m = pk_rn64((double2)(ldexp(m.x, -k), ldexp(m.y, -k)));
  r.e = e + k;
  if (fabs(r.m.x) >= 2.0) { r.m = (double2)(0.5 * r.m.x, 0.5 * r.m.y); r.e += 1; }  // rounded up to 2
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
// c128 quotient: Smith's method (pk_cdiv_g) step by step in the extended format, then one rounding to double.
inline double2 pk_cdiv128(double2 u, double2 v) {
  const double a = u.x, b = u.y, c = v.x, d = v.y;
  if (!pk_cfinite(a, b, c, d) || (c == 0.0 && d == 0.0)) return pk_cdiv_g(a, b, c, d);
  const pk_x A = pk_x_of(a), B = pk_x_of(b), C = pk_x_of(c), D = pk_x_of(d);
  pk_x x, y;
  if (fabs(c) < fabs(d)) {
    const pk_x ratio = pk_x_div(C, D), denom = pk_x_add(pk_x_mul(C, ratio), D);
    x = pk_x_div(pk_x_add(pk_x_mul(A, ratio), B), denom);
    y = pk_x_div(pk_x_add(pk_x_mul(B, ratio), pk_x_neg(A)), denom);
  } else {
    const pk_x ratio = pk_x_div(D, C), denom = pk_x_add(pk_x_mul(D, ratio), C);
    x = pk_x_div(pk_x_add(pk_x_mul(B, ratio), A), denom);
    y = pk_x_div(pk_x_add(B, pk_x_neg(pk_x_mul(A, ratio))), denom);
  }
  return (double2)(pk_x_value(x), pk_x_value(y));
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
// |z| of c128: scaled to exponent 0, x^2 + y^2 in double-double, sqrt refined by one Newton step in double-double.
inline double pk_cabs128(double2 z) {
  double x = fabs(z.x), y = fabs(z.y);
  if (isinf(x) || isinf(y)) return INFINITY;
  if (isnan(x) || isnan(y)) return NAN;
  const double mx = fmax(x, y), mn = fmin(x, y);
  if (mn == 0.0) return mx;
  const int k = ilogb(mx);
  x = ldexp(mx, -k);
  y = ldexp(mn, -k);
  const pk_dd s = pk_dd_add(pk_two_prod(x, x), pk_two_prod(y, y));
  const double h = sqrt(s.x);
  const pk_dd hh = pk_two_prod(h, h);
  // Rounded to 64 bits first, as the reference's extended-precision hypotl is (see pk_rn64).
  return pk_ldexp_dd(pk_rn64(pk_fast_sum(h, (((s.x - hh.x) - hh.y) + s.y) / (2.0 * h))), k);
}
// --- elementary functions, evaluated in double with glibc's special values (the oracle's std::complex<long
// double> functions are glibc's cexpl, clogl, ...). c64 arguments are exact in double, so one final rounding
// to float leaves them within the contracts; c128 uses them where double's own rounding errors fit the contract.
inline double2 pk_cexp(double2 z) {
  const double x = z.x, y = z.y;
  if (isfinite(x)) {
    if (!isfinite(y)) return (double2)(NAN, NAN);
    if (y == 0.0) return (double2)(exp(x), y);
    if (x > 700.0) {  // exp(x) alone would overflow where exp(x) cos(y) may not
      const double e1 = exp(x - 700.0), e2 = exp(700.0);
      return (double2)(e1 * cos(y) * e2, e1 * sin(y) * e2);
    }
    const double ex = exp(x);
    return (double2)(ex * cos(y), ex * sin(y));
  }
  if (isinf(x)) {
    if (isfinite(y)) {
      const double v = x > 0.0 ? INFINITY : 0.0;
      if (y == 0.0) return (double2)(v, y);
      return (double2)(copysign(v, cos(y)), copysign(v, sin(y)));
    }
    return x > 0.0 ? (double2)(INFINITY, NAN) : (double2)(0.0, copysign(0.0, y));
  }
  return (double2)(NAN, y == 0.0 ? y : NAN);
}
// log|z| + i arg z. Near |z| = 1 the real part is log1p(x^2 + y^2 - 1) / 2 with x^2 + y^2 - 1 in double-double
// (exact products), so it keeps its relative accuracy as it goes to 0.
inline double2 pk_clog(double2 z) {
  const double x = z.x, y = z.y;
  if (isnan(x) || isnan(y)) return (double2)((isinf(x) || isinf(y)) ? INFINITY : NAN, NAN);
  const double ax = fabs(x), ay = fabs(y);
  const double im = atan2(y, x);
  if (isinf(ax) || isinf(ay)) return (double2)(INFINITY, im);
  if (ax == 0.0 && ay == 0.0) return (double2)(-INFINITY, im);
  const double mx = fmax(ax, ay), mn = fmin(ax, ay);
  double re;
  if (mx >= 0.5 && mx <= 2.0 && mn < 1.5) {
    const pk_dd s = pk_dd_add_d(pk_dd_add(pk_two_prod(mx, mx), pk_two_prod(mn, mn)), -1.0);
    const double t = s.x + s.y;
    re = fabs(t) < 0.5 ? 0.5 * log1p(t) : 0.5 * pk_dd_log_dd(pk_dd_add_d(s, 1.0)).x;
  } else {
    // log(2^k h) with h = |z| / 2^k in [1, 2): no overflow of x^2 + y^2.
    const int k = ilogb(mx);
    const double a = ldexp(mx, -k), b = ldexp(mn, -k);
    const pk_dd s = pk_dd_add(pk_two_prod(a, a), pk_two_prod(b, b));
    const pk_dd l = pk_dd_add(pk_dd_mul_d((double2)(0.6931471805599453, 2.3190468138462996e-17), (double)k),
                              pk_dd_mul_d(pk_dd_log_dd(s), 0.5));
    re = l.x + l.y;
  }
  return (double2)(re, im);
}
// sqrt(z) per glibc's csqrt: its special cases, then its steps evaluated in the extended format (pk_x) as the
// reference does.
inline pk_dd pk_dd_sqrt(pk_dd s) {
  const double h = sqrt(s.x);
  const pk_dd hh = pk_two_prod(h, h);
  return pk_fast_sum(h, (((s.x - hh.x) - hh.y) + s.y) / (2.0 * h));
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
inline double2 pk_csqrt(double2 z) {
  const double x = z.x, y = z.y;
  if (isinf(y)) return (double2)(INFINITY, y);
  if (isinf(x)) {
    if (x < 0.0) return (double2)(isnan(y) ? NAN : 0.0, copysign((double)INFINITY, y));
    return (double2)(x, isnan(y) ? NAN : copysign(0.0, y));
  }
  if (isnan(x) || isnan(y)) return (double2)(NAN, NAN);
  const pk_x hf = pk_x_of(0.5);
  if (y == 0.0) {
    const double r = pk_x_value(pk_x_sqrt(pk_x_of(fabs(x))));
    return x < 0.0 ? (double2)(0.0, copysign(r, y)) : (double2)(r, copysign(0.0, y));
  }
  if (x == 0.0) {  // both parts are sqrt(|y| / 2)
    const double r = pk_x_value(pk_x_sqrt(pk_x_mul(hf, pk_x_of(fabs(y)))));
    return (double2)(r, copysign(r, y));
  }
  // glibc's csqrt steps in the extended format: 2 Re Im = y avoids the cancellation of |z| - |x|.
  const pk_x X = pk_x_of(x), Y = pk_x_of(y), D = pk_x_hypot(x, y);
  if (x > 0.0) {
    const pk_x R = pk_x_sqrt(pk_x_mul(hf, pk_x_add(D, X)));
    return (double2)(pk_x_value(R), pk_x_value(pk_x_mul(hf, pk_x_div(Y, R))));
  }
  const pk_x S = pk_x_sqrt(pk_x_mul(hf, pk_x_add(D, pk_x_neg(X))));
  return (double2)(fabs(pk_x_value(pk_x_mul(hf, pk_x_div(Y, S)))), copysign(pk_x_value(S), y));
}
// cosh and sinh of x + iy per glibc's ccosh / csinh special cases.
inline double2 pk_ccosh(double2 z) {
  const double x = z.x, y = z.y;
  if (isfinite(x)) {
    if (isfinite(y)) {
      if (fabs(x) > 700.0) {
        const double e = exp(fabs(x) - 701.0) * 0.5, e2 = exp(701.0);
        return (double2)(e * cos(y) * e2, copysign(1.0, x) * e * sin(y) * e2);
      }
      return (double2)(cosh(x) * cos(y), sinh(x) * sin(y));
    }
    return (double2)(y - y, x == 0.0 ? 0.0 : NAN);
  }
  if (isinf(x)) {
    if (isfinite(y)) {
      if (y == 0.0) return (double2)(INFINITY, y * copysign(1.0, x));
      return (double2)(copysign((double)INFINITY, cos(y)), copysign((double)INFINITY, sin(y)) * copysign(1.0, x));
    }
    return (double2)(INFINITY, y - y);
  }
  return (double2)(NAN, y == 0.0 ? y : NAN);
}
inline double2 pk_csinh(double2 z) {
  const double x = z.x, y = z.y;
  if (isfinite(x)) {
    if (isfinite(y)) {
      if (fabs(x) > 700.0) {
        const double e = exp(fabs(x) - 701.0) * 0.5, e2 = exp(701.0);
        return (double2)(copysign(1.0, x) * e * cos(y) * e2, e * sin(y) * e2);
      }
      return (double2)(sinh(x) * cos(y), cosh(x) * sin(y));
    }
    return x == 0.0 ? (double2)(x, y - y) : (double2)(NAN, NAN);
  }
  if (isinf(x)) {
    if (isfinite(y)) {
      if (y == 0.0) return (double2)(x, y);
      return (double2)(copysign((double)INFINITY, cos(y)) * copysign(1.0, x), copysign((double)INFINITY, sin(y)));
    }
    return (double2)(x, y - y);
  }
  return (double2)(NAN, y == 0.0 ? y : NAN);
}
// sin z = -i sinh(iz), cos z = cosh(iz).
inline double2 pk_csin(double2 z) {
  const double2 r = pk_csinh((double2)(-z.y, z.x));
  return (double2)(r.y, -r.x);
}
inline double2 pk_ccos(double2 z) { return pk_ccosh((double2)(-z.y, z.x)); }
// tanh per glibc's ctanh: (sinh 2x + i sin 2y) / (cosh 2x + cos 2y) as sinh x cosh x / den, sin y cos y / den
// with den = sinh^2 x + cos^2 y (no cancellation), and its large-|x| branch.
inline double2 pk_ctanh(double2 z) {
  const double x = z.x, y = z.y;
  if (!isfinite(x) || !isfinite(y)) {
    if (isinf(x)) {
      double im = copysign(0.0, y);
      if (isfinite(y) && fabs(y) > 1.0) im = copysign(0.0, sin(y) * cos(y));
      return (double2)(copysign(1.0, x), im);
    }
    if (y == 0.0) return (double2)(x, y);
    return (double2)(x == 0.0 ? x : NAN, NAN);
  }
  const double t = 18.714973875118524;  // (DBL_MANT_DIG - 1) ln 2 / 2: beyond it tanh x is 1 in double
  const double sy = fabs(y) > DBL_MIN ? sin(y) : y, cy = fabs(y) > DBL_MIN ? cos(y) : 1.0;
  if (fabs(x) > t) {
    const double e2t = exp(2.0 * t), ax = fabs(x) - t;
    double im = 4.0 * sy * cy / e2t;
    im = ax > t ? im / e2t : im / exp(2.0 * ax);
    return (double2)(copysign(1.0, x), im);
  }
  const double sx = fabs(x) > DBL_MIN ? sinh(x) : x, chx = fabs(x) > DBL_MIN ? cosh(x) : 1.0;
  const double den = fabs(sx) > fabs(cy) * DBL_EPSILON ? sx * sx + cy * cy : cy * cy;
  return (double2)(sx * chx / den, sy * cy / den);
}
// a^b as the oracle defines it: 1 for b = 0, 0 for a = 0 with a real b > 0, else exp(b log a).
inline double2 pk_cpow(double2 a, double2 b) {
  if (b.x == 0.0 && b.y == 0.0) return (double2)(1.0, 0.0);
  if (a.x == 0.0 && a.y == 0.0 && b.y == 0.0 && b.x > 0.0) return (double2)(0.0, 0.0);
  const double2 l = pk_clog(a);
  return pk_cexp(pk_cmul_g(b.x, b.y, l.x, l.y));
}
)CL";
}

}  // namespace pk::ocl
