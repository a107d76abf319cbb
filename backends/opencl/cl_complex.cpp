// cl_complex.cpp — OpenCL C helpers of the complex dtypes (c64 = float2, c128 = double2: real part first). The
// arithmetic (products, quotients, moduli, square roots: each part correctly rounded, a c64 part once to float) and
// exp, log, sin, cos, tanh and polar are the device math's (sdk/devmath/complex.h, which the program carries ahead
// of this text); they compute in double (c64 parts are exact there). What is left here: running products, sums and
// dot products of complex values, and pow's cases and its fixed-point phase (c128 in the device math's
// double-double: log a, e^w and cis w are its functions).
#include "cl_complex.hpp"

namespace pk::ocl {

const char *complex_source() {
  return R"CL(
// The device math's Annex G product (C11 G.5.1: infinities recovered where both parts come out NaN) as a double2.
inline double2 pk_cmul_g(double a, double b, double c, double d) {
  double r[2];
  pk_dm_cmul_g(a, b, c, d, r);
  return (double2)(r[0], r[1]);
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
  if (!pk_dm_cfinite(a.x, a.y, b.x, b.y)) { d->sp += pk_cmul_g(a.x, a.y, b.x, b.y); return; }
  pk_me_add(&d->mr, &d->er, a.x, b.x);
  pk_me_add(&d->mr, &d->er, -a.y, b.y);
  pk_me_add(&d->mi, &d->ei, a.x, b.y);
  pk_me_add(&d->mi, &d->ei, a.y, b.x);
}
inline double2 pk_cdot_value(const pk_cdot *d) {
  return (double2)(isfinite(d->sp.x) ? ldexp(d->mr, d->er) + d->sp.x : d->sp.x,
                   isfinite(d->sp.y) ? ldexp(d->mi, d->ei) + d->sp.y : d->sp.y);
}

// --- elementary functions: the device math's (sdk/devmath/complex.h, which the program carries ahead of this
// text), as double2 for the expressions. c64 arguments are exact in double; the callers round the result once.
inline double2 pk_cexp(double2 z) { double r[2]; pk_dm_cexp(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_clog(double2 z) { double r[2]; pk_dm_clog(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_csin(double2 z) { double r[2]; pk_dm_csin(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_ccos(double2 z) { double r[2]; pk_dm_ccos(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_ctanh(double2 z) { double r[2]; pk_dm_ctanh(z.x, z.y, r); return (double2)(r[0], r[1]); }
inline double2 pk_polar(double m, double t) { double r[2]; pk_dm_cpolar(m, t, r); return (double2)(r[0], r[1]); }
// The arithmetic (sdk/devmath/complex.h): f32 = 1 for c64 operands (widened exactly), whose parts it rounds once to
// float, so that the caller's convert_float2 is exact.
inline double2 pk_cmul(double2 u, double2 v, int f32) {
  double r[2];
  pk_dm_cmul(u.x, u.y, v.x, v.y, f32, r);
  return (double2)(r[0], r[1]);
}
inline double2 pk_cdiv(double2 u, double2 v, int f32) {
  double r[2];
  pk_dm_cdiv(u.x, u.y, v.x, v.y, f32, r);
  return (double2)(r[0], r[1]);
}
inline double2 pk_csqrt(double2 z, int f32) {
  double r[2];
  pk_dm_csqrt(z.x, z.y, f32, r);
  return (double2)(r[0], r[1]);
}
inline double pk_cabs(double2 z, int f32) { return pk_dm_cabs(z.x, z.y, f32); }
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
// e^(wr + i wi) for double-double parts: the device math's (complex.h), each part rounded once.
inline double2 pk_cexp_dd(pk_dm_dd wr, pk_dm_dd wi) {
  double r[2];
  pk_dm_cexp_dd(wr.hi, wr.lo, wi.hi, wi.lo, r);
  return (double2)(r[0], r[1]);
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
inline pk_dm_dd pk_bn_to_dd(const uint *a, int n, int fl) {
  uint x[PK_BN];
  pk_bn_copy(x, a, n);
  const int neg = pk_bn_negative(x, n);
  if (neg) pk_bn_negate(x, n);
  int top = n - 1;
  while (top > 0 && x[top] == 0u) --top;
  pk_dm_dd s = pk_dm_dd_make(0.0, 0.0);
  for (int i = top; i >= 0 && i > top - 4; --i) s = pk_dm_dd_add_d(s, ldexp((double)x[i], 32 * (i - fl)));
  return neg ? pk_dm_dd_neg(s) : s;
}
// A constant's fraction (a table of kit::special, most significant word first).
inline void pk_bn_const(uint *r, __constant const uint *t, int n, int fl) {
  pk_bn_zero(r, n);
  for (int j = 0; j < fl; ++j) r[fl - 1 - j] = t[j];
}
// r = 1 / d for d in [1, 8): Newton's r (2 - d r) from the double quotient, 53 bits doubling to beyond 1152.
inline void pk_bn_recip(uint *r, const uint *d, int n, int fl) {
  uint e[PK_BN], two[PK_BN];
  pk_bn_from_double(r, 1.0 / pk_bn_to_dd(d, n, fl).hi, n, fl);
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
  pk_bn_from_double(y, 1.0 / sqrt(pk_bn_to_dd(x, n, fl).hi), n, fl);
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
  pk_dm_dd wr;
  int big = 0;  // |Re| >= 2^32: exp gives 0 or infinity whatever the phase
  for (int i = fl + 1; i < nw; ++i) big |= p[i] != (pk_bn_negative(p, nw) ? 0xffffffffu : 0u);
  wr = big ? pk_dm_dd_make(pk_bn_negative(p, nw) ? -0x1p40 : 0x1p40, 0.0) : pk_bn_to_dd(p, nw, fl);
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
  pk_dm_dd turn = pk_bn_to_dd(q, nw, fl);
  if (turn.hi >= 0.5) turn = pk_dm_dd_add_d(turn, -1.0);
  const pk_dm_dd phase = pk_dm_dd_mul(turn, pk_dm_dd_make(6.283185307179586, 2.4492935982947064e-16));
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
  if (!pk_dm_cfinite(a.x, a.y, b.x, b.y) || (a.x == 0.0 && a.y == 0.0)) {
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
      if (isinf(p) || isinf(q)) { p = pk_dm_box(p); q = pk_dm_box(q); c = pk_dm_unnan(c); d = pk_dm_unnan(d); re = 1; }
      if (isinf(c) || isinf(d)) { c = pk_dm_box(c); d = pk_dm_box(d); p = pk_dm_unnan(p); q = pk_dm_unnan(q); re = 1; }
      if (re) { x = INFINITY * (p * c - q * d); y = INFINITY * (p * d + q * c); }
    }
    return pk_cexp((double2)(pk_scale_back(x, kb), pk_scale_back(y, kb)));
  }
  const double bx = ldexp(b.x, -kb), by = ldexp(b.y, -kb);
  pk_dm_dd lr, li;  // log a in double-double: the device math's (sdk/devmath/complex.h)
  pk_dm_clog_dd(a.x, a.y, &lr, &li);
  pk_dm_dd wr = pk_dm_dd_sub(pk_dm_dd_mul_d(lr, bx), pk_dm_dd_mul_d(li, by));
  pk_dm_dd wi = pk_dm_dd_add(pk_dm_dd_mul_d(li, bx), pk_dm_dd_mul_d(lr, by));
  // Beyond |Im w| = 2^26 the phase, and where Re w's two products (each good to ~2^-90 of itself) cancel, Re w,
  // need the exact path.
  const double terms = ldexp(fmax(fabs(bx), fabs(by)) * fmax(fabs(lr.hi), fabs(li.hi)), kb);
  if (ldexp(fabs(wi.hi), kb) >= 0x1p26 || (terms >= 0x1p26 && ldexp(fabs(wr.hi), kb) <= 0x1p12 + terms * 0x1p-90))
    return pk_cpow_exact(a, b);
  if (kb > 0) {
    const double re = ldexp(wr.hi, kb);
    if (re < -746.0) return (double2)(0.0, 0.0);
    if (re > 710.0) return (double2)(INFINITY, INFINITY);
    wr = pk_dm_dd_make(re, ldexp(wr.lo, kb));
    wi = pk_dm_dd_make(ldexp(wi.hi, kb), ldexp(wi.lo, kb));
  }
  return pk_cexp_dd(wr, wi);
}
// c64 a^b: w = b log a in double holds the phase to the float result's accuracy up to |w| ~ 2^20; beyond, c128's
// double-double and exact paths.
inline double2 pk_cpow_c64(double2 a, double2 b) {
  if (pk_dm_cfinite(a.x, a.y, b.x, b.y) && (a.x != 0.0 || a.y != 0.0)) {
    const double2 l = pk_clog(a);
    if (fmax(fabs(b.x), fabs(b.y)) * fmax(fabs(l.x), fabs(l.y)) >= 0x1p20) return pk_cpow128(a, b);
  }
  return pk_cpow(a, b);
}
)CL";
}

}  // namespace pk::ocl
