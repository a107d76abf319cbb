// cl_complex.cpp — OpenCL C helpers of the complex dtypes (c64 = float2, c128 = double2: real part first). The
// arithmetic (products, quotients, moduli, square roots: each part correctly rounded, a c64 part once to float) and
// exp, log, sin, cos, tanh, polar and pow are the device math's (sdk/devmath/complex.h and cpow.h, which the program
// carries ahead of this text); they compute in double (c64 parts are exact there), and so are the steps of the
// running products and sums. What is left here: their structs, and the dot products of complex values.
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
// The reductions' running products and sums: the device math's steps (complex.h), in structs that the work-group
// combines keep in local memory. A product z 2^e (z normalized after each factor, Annex G recovery of infinities);
// a sum of the finite terms per part, its copy scaled by 2^-600 and flags of the non-finite terms seen.
typedef struct {
  double2 z;
  double e;
} pk_cprod;
inline pk_cprod pk_cprod_of(const double *r) {
  pk_cprod p;
  p.z = (double2)(r[0], r[1]);
  p.e = r[2];
  return p;
}
inline pk_cprod pk_cprod_one(void) {
  const double r[3] = {0.5, 0.0, 1.0};
  return pk_cprod_of(r);
}
inline pk_cprod pk_cprod_ld(double2 v) {
  double r[3];
  pk_dm_cprod_norm(v.x, v.y, 0.0, r);
  return pk_cprod_of(r);
}
inline pk_cprod pk_cprod_mul(pk_cprod a, pk_cprod b) {
  double r[3];
  pk_dm_cprod_mul(a.z.x, a.z.y, a.e, b.z.x, b.z.y, b.e, r);
  return pk_cprod_of(r);
}
inline double2 pk_cprod_st(pk_cprod a) {
  double r[2];
  pk_dm_cprod_value(a.z.x, a.z.y, a.e, r);
  return (double2)(r[0], r[1]);
}
typedef struct {
  double2 s, sc, fl;
} pk_csum;
inline pk_csum pk_csum_of(const double *r) {
  pk_csum c;
  c.s = (double2)(r[0], r[1]);
  c.sc = (double2)(r[2], r[3]);
  c.fl = (double2)(r[4], r[5]);
  return c;
}
inline pk_csum pk_csum_zero(void) {
  const double r[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  return pk_csum_of(r);
}
inline pk_csum pk_csum_ld(double2 v) {
  double r[6];
  pk_dm_csum_term(v.x, v.y, r);
  return pk_csum_of(r);
}
inline pk_csum pk_csum_add(pk_csum a, pk_csum b) {
  double r[6];
  pk_dm_csum_add(a.s.x, a.s.y, a.sc.x, a.sc.y, a.fl.x, a.fl.y, b.s.x, b.s.y, b.sc.x, b.sc.y, b.fl.x, b.fl.y, r);
  return pk_csum_of(r);
}
inline double2 pk_csum_st(pk_csum a) {
  return (double2)(pk_dm_csum_part(a.s.x, a.sc.x, a.fl.x), pk_dm_csum_part(a.s.y, a.sc.y, a.fl.y));
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
// a^b with the oracle's cases: the device math's (sdk/devmath/cpow.h, which the program carries ahead of this text).
// f32 = 1 for c64 operands (widened exactly), whose parts it rounds once to float, so that the caller's
// convert_float2 is exact.
inline double2 pk_cpow(double2 a, double2 b, int f32) {
  double r[2];
  pk_dm_cpow(a.x, a.y, b.x, b.y, f32, r);
  return (double2)(r[0], r[1]);
}
)CL";
}

}  // namespace pk::ocl
