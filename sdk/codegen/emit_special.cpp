// emit_special.cpp — the emitter's special functions (see emit.cpp for the numerics): lgamma and the incomplete
// gamma functions, with the double-double arithmetic they carry their cancelling steps in. erfcx, erf_inv, ndtri,
// digamma, the Bessel functions and Hurwitz zeta are the device math's (sdk/devmath, emit_devmath.cpp).
#include "emit_internal.hpp"

#include <cmath>
#include <limits>

#include "primkit/special_constants.hpp"

namespace pk::codegen::detail {

// ------------------------------------------------------------------------------------- special functions

Emitter::DD Emitter::dd_two_sum(Value *a, Value *b) {
  DD r;
  two_sum(a, b, r.hi, r.lo);
  return r;
}
Emitter::DD Emitter::dd_add(DD a, DD b) {
  DD s = dd_two_sum(a.hi, b.hi), t = dd_two_sum(a.lo, b.lo), r;
  fast_two_sum(s.hi, b_.CreateFAdd(s.lo, t.hi), s.hi, s.lo);
  fast_two_sum(s.hi, b_.CreateFAdd(s.lo, t.lo), r.hi, r.lo);
  return r;
}
Emitter::DD Emitter::dd_add_d(DD a, Value *b) {
  DD s = dd_two_sum(a.hi, b), r;
  fast_two_sum(s.hi, b_.CreateFAdd(s.lo, a.lo), r.hi, r.lo);
  return r;
}
Emitter::DD Emitter::dd_mul(DD a, DD b) {
  Value *p = b_.CreateFMul(a.hi, b.hi);
  Value *e = b_.CreateFAdd(fma(a.hi, b.hi, b_.CreateFNeg(p)),
                           b_.CreateFAdd(b_.CreateFMul(a.hi, b.lo), b_.CreateFMul(a.lo, b.hi)));
  DD r;
  fast_two_sum(p, e, r.hi, r.lo);
  return r;
}
Emitter::DD Emitter::dd_mul_d(DD a, Value *b) {
  Value *p = b_.CreateFMul(a.hi, b);
  DD r;
  fast_two_sum(p, b_.CreateFAdd(fma(a.hi, b, b_.CreateFNeg(p)), b_.CreateFMul(a.lo, b)), r.hi, r.lo);
  return r;
}
// Long division with two correction steps: about 2^-104 relative.
Emitter::DD Emitter::dd_div(DD a, DD b) {
  Value *q1 = b_.CreateFDiv(a.hi, b.hi);
  DD r = dd_add(a, dd_mul_d({b_.CreateFNeg(b.hi), b_.CreateFNeg(b.lo)}, q1));
  Value *q2 = b_.CreateFDiv(r.hi, b.hi);
  DD r2 = dd_add(r, dd_mul_d({b_.CreateFNeg(b.hi), b_.CreateFNeg(b.lo)}, q2));
  DD q;
  fast_two_sum(q1, q2, q.hi, q.lo);
  return dd_add_d(q, b_.CreateFDiv(r2.hi, b.hi));
}
// log(hi + lo) = log(hi) + lo / hi (the next term is below 2^-104); log_dd is good to about 2^-64 relative.
Emitter::DD Emitter::dd_log(DD x) {
  DD r;
  r.hi = log_dd(x.hi, r.lo);
  return dd_add_d(r, b_.CreateFDiv(x.lo, x.hi));
}

// sin(pi r) and cos(pi r) for |r| <= 1/2, pi r in double-double: the kernels directly up to 1/4, else through the
// complement 1/2 - |r| (exact).
void Emitter::sincos_pi(Value *r, Value *&s, Value *&c) {
  using namespace consts;
  Value *ar = intr(llvm::Intrinsic::fabs, {r});
  Value *near = b_.CreateFCmpOLE(ar, f64c(0.25));
  Value *t = b_.CreateSelect(near, ar, b_.CreateFSub(f64c(0.5), ar));
  Value *h = b_.CreateFMul(t, f64c(kPiHi));
  Value *l = b_.CreateFAdd(fma(t, f64c(kPiHi), b_.CreateFNeg(h)), b_.CreateFMul(t, f64c(kPiLo)));
  DD u;
  fast_two_sum(h, l, u.hi, u.lo);
  Value *st = sin_kernel(u.hi, u.lo), *ct = cos_kernel(u.hi, u.lo);
  s = intr(llvm::Intrinsic::copysign, {b_.CreateSelect(near, st, ct), r});
  c = b_.CreateSelect(near, ct, st);
}

// ln Gamma(z), z > 0 in double-double: the recurrence up to w >= 20 (the product in double-double), then
// Stirling's series; (w - 1/2) log w - w is written (w - 1/2)(log w - 1) - 1/2 so that nothing overflows
// before the result does. Near the zeros at 1 and 2 the two terms cancel to an absolute error of about 1e-17.
Emitter::DD Emitter::lgamma_pos(DD z) {
  Value *steps = b_.CreateFPToSI(
      intr(llvm::Intrinsic::ceil,
           {b_.CreateSelect(b_.CreateFCmpOLT(z.hi, f64c(20.0)), b_.CreateFSub(f64c(20.0), z.hi), f64c(0.0))}),
      i64_);
  std::vector<Value *> pr = loop_n(steps, {f64c(1.0), f64c(0.0)}, [&](Value *k, const std::vector<Value *> &a) {
    DD p = dd_mul({a[0], a[1]}, dd_add_d(z, b_.CreateSIToFP(k, f64_)));
    return std::vector<Value *>{p.hi, p.lo};
  });
  DD w = dd_add_d(z, b_.CreateSIToFP(steps, f64_));
  DD L = dd_log(w);
  DD r = dd_add_d(dd_mul(dd_add_d(w, f64c(-0.5)), dd_add_d(L, f64c(-1.0))), f64c(-0.5));
  r = dd_add(r, {f64c(0.9189385332046728), f64c(-3.8782941580672414e-17)});  // log(2 pi) / 2
  r = dd_add(r, dd_div(dd(f64c(1.0)), dd_mul_d(w, f64c(12.0))));
  Value *iw = b_.CreateFDiv(f64c(1.0), w.hi);
  Value *iw2 = b_.CreateFMul(iw, iw);
  r = dd_add_d(r, b_.CreateFMul(b_.CreateFMul(iw, iw2), horner(iw2, {-1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188,
                                                                     -691.0 / 360360, 1.0 / 156, -3617.0 / 122400})));
  DD lp = dd_log({pr[0], pr[1]});
  return dd_add(r, {b_.CreateFNeg(lp.hi), b_.CreateFNeg(lp.lo)});
}

// ln|Gamma(x)|: lgamma_pos for 0 < x <= 1e300; below 0 the reflection log(pi / |sin(pi x)|) - ln Gamma(1 - x)
// (sin(pi x) from the exact x - rint(x)); -log|x| below 1e-300 (the next term, -gamma x, is far below an ulp);
// Stirling in double above 1e300 (no cancellation there). +inf at the poles (non-positive integers) and at
// +-inf; exactly 0 at 1 and 2.
Value *Emitter::lgamma_d(Value *x) {
  using namespace consts;
  const double inf = HUGE_VAL;
  Value *ax = intr(llvm::Intrinsic::fabs, {x});
  Value *ok = b_.CreateAnd(b_.CreateFCmpOGE(ax, f64c(1e-300)), b_.CreateFCmpOLE(ax, f64c(1e300)));
  Value *pos = b_.CreateFCmpOGT(x, f64c(0.0));
  DD zn = dd_two_sum(f64c(1.0), b_.CreateFNeg(x));
  DD z{b_.CreateSelect(ok, b_.CreateSelect(pos, x, zn.hi), f64c(2.0)),
       b_.CreateSelect(b_.CreateAnd(ok, b_.CreateNot(pos)), zn.lo, f64c(0.0))};
  DD P = lgamma_pos(z);
  Value *lg = b_.CreateFAdd(P.hi, P.lo);
  Value *r = b_.CreateFSub(x, intr(llvm::Intrinsic::rint, {x}));
  Value *s, *c;
  sincos_pi(b_.CreateSelect(ok, r, f64c(0.25)), s, c);
  Value *refl = b_.CreateFSub(log_d(b_.CreateFDiv(f64c(kPiHi), intr(llvm::Intrinsic::fabs, {s}))), lg);
  Value *res = b_.CreateSelect(pos, lg, refl);
  Value *L = log_d(ax);
  Value *stirling = b_.CreateFSub(b_.CreateFMul(ax, b_.CreateFSub(L, f64c(1.0))), b_.CreateFMul(L, f64c(0.5)));
  res = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(1e300)), stirling, res);
  res = b_.CreateSelect(b_.CreateFCmpOLT(ax, f64c(1e-300)), b_.CreateFNeg(L), res);
  Value *pole = b_.CreateAnd(b_.CreateFCmpOLE(x, f64c(0.0)), b_.CreateFCmpOEQ(r, f64c(0.0)));
  res = b_.CreateSelect(b_.CreateOr(pole, b_.CreateFCmpOEQ(ax, f64c(inf))), f64c(inf), res);
  res = b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOEQ(x, f64c(1.0)), b_.CreateFCmpOEQ(x, f64c(2.0))), f64c(0.0), res);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::if_else(Value *cond, const std::function<Value *()> &then_fn, const std::function<Value *()> &else_fn) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  auto *then_bb = llvm::BasicBlock::Create(ctx_, "then", f), *else_bb = llvm::BasicBlock::Create(ctx_, "else", f);
  auto *join = llvm::BasicBlock::Create(ctx_, "join", f);
  b_.CreateCondBr(cond, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  Value *t = then_fn();
  auto *then_end = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(else_bb);
  Value *e = else_fn();
  auto *else_end = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  auto *phi = b_.CreatePHI(t->getType(), 2);
  phi->addIncoming(t, then_end);
  phi->addIncoming(e, else_end);
  return phi;
}

// Regularized incomplete gamma P(a, x) and Q(a, x), the OpenCL backend's algorithm (after the CPU backend's
// choice of branches): the power series of P and Legendre's continued fraction of Q, each where it converges;
// the prefactor x^a e^-x / Gamma(a) through its logarithm in double-double (a log x and ln Gamma(a) are each
// hundreds where the result is O(1)); series and fraction in double-double; Q for a < 1 where 1 - P would
// cancel by Gautschi's form.

// x^a e^-x / Gamma(a + plus1); plus1 keeps tiny a off the subnormal range.
Value *Emitter::igam_prefactor(Value *a, Value *x, bool plus1) {
  // Far out of range (the double-double would meet inf - inf): the sign of a rough exponent decides.
  Value *ap = plus1 ? b_.CreateFAdd(a, f64c(1.0)) : a;
  Value *rough = b_.CreateFSub(b_.CreateFSub(b_.CreateFMul(a, log_d(x)), x), lgamma_d(ap));
  Value *stirling = b_.CreateFMul(a, b_.CreateFAdd(b_.CreateFSub(log_d(x), log_d(a)), f64c(1.0)));
  rough = b_.CreateSelect(b_.CreateFCmpUNO(rough, rough), stirling, rough);
  DD g = lgamma_pos(plus1 ? dd_two_sum(a, f64c(1.0)) : dd(a));
  Value *llo = nullptr;
  Value *lhi = log_dd(x, llo);
  DD e = dd_add(dd_add_d(dd_mul_d({lhi, llo}, a), b_.CreateFNeg(x)), {b_.CreateFNeg(g.hi), b_.CreateFNeg(g.lo)});
  Value *r = b_.CreateFMul(exp_d(e.hi), b_.CreateFAdd(f64c(1.0), e.lo));
  r = b_.CreateSelect(b_.CreateFCmpOLT(rough, f64c(-800.0)), f64c(0.0), r);
  return b_.CreateSelect(b_.CreateFCmpOGT(rough, f64c(800.0)), f64c(std::numeric_limits<double>::infinity()), r);
}

Value *Emitter::igam_series(Value *a, Value *x) {
  Value *pre = igam_prefactor(a, x, true);
  std::vector<Value *> s = loop_until(
      i64c(10000), {a, f64c(0.0), f64c(1.0), f64c(0.0), f64c(1.0), f64c(0.0)},
      [&](Value *, const std::vector<Value *> &v) {
        DD r = dd_add_d({v[0], v[1]}, f64c(1.0));
        DD c = dd_mul_d(dd_div({v[2], v[3]}, r), x);
        DD ans = dd_add({v[4], v[5]}, c);
        return std::vector<Value *>{
            r.hi, r.lo, c.hi, c.lo, ans.hi, ans.lo, b_.CreateFCmpOLE(c.hi, b_.CreateFMul(ans.hi, f64c(1e-18)))};
      });
  return b_.CreateSelect(b_.CreateFCmpOEQ(pre, f64c(0.0)), f64c(0.0), b_.CreateFMul(s[4], pre));
}

// Legendre's continued fraction by the modified Lentz method, in double-double (in double its ~30+ rounded steps
// drift by tens of ulps).
Value *Emitter::igamc_fraction(Value *a, Value *x) {
  Value *pre = igam_prefactor(a, x, false);
  const double tiny = 1e-300;
  auto floor_tiny = [&](DD v) {
    Value *small = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {v.hi}), f64c(tiny));
    return DD{b_.CreateSelect(small, f64c(tiny), v.hi), b_.CreateSelect(small, f64c(0.0), v.lo)};
  };
  DD b0 = dd_add_d(dd_two_sum(f64c(1.0), b_.CreateFNeg(a)), x);
  DD d0 = dd_div(dd(f64c(1.0)), b0);
  std::vector<Value *> s = loop_until(
      i64c(9999), {b0.hi, b0.lo, f64c(1.0 / tiny), f64c(0.0), d0.hi, d0.lo, d0.hi, d0.lo},
      [&](Value *c, const std::vector<Value *> &v) {
        Value *nn = b_.CreateSIToFP(b_.CreateAdd(c, i64c(1)), f64_);
        DD an = dd_mul_d(dd_two_sum(nn, b_.CreateFNeg(a)), b_.CreateFNeg(nn));
        DD bb = dd_add_d({v[0], v[1]}, f64c(2.0));
        DD d = floor_tiny(dd_add(dd_mul(an, {v[4], v[5]}), bb));
        DD cc = floor_tiny(dd_add(bb, dd_div(an, {v[2], v[3]})));
        d = dd_div(dd(f64c(1.0)), d);
        DD delta = dd_mul(d, cc);
        DD h = dd_mul({v[6], v[7]}, delta);
        Value *conv = b_.CreateFCmpOLT(
            intr(llvm::Intrinsic::fabs, {b_.CreateFAdd(b_.CreateFSub(delta.hi, f64c(1.0)), delta.lo)}), f64c(1e-20));
        return std::vector<Value *>{bb.hi, bb.lo, cc.hi, cc.lo, d.hi, d.lo, h.hi, h.lo, conv};
      });
  return b_.CreateSelect(b_.CreateFCmpOEQ(pre, f64c(0.0)), f64c(0.0), b_.CreateFMul(s[6], pre));
}

// Q(a, x) for a < 1 and x <= 1 or x <= a (Gautschi): Q = -expm1(v) - a e^v S with v = a ln x - ln Gamma(1 + a),
// S = sum_{n>=1} (-x)^n / (n! (a + n)); the two terms cancel up to ~4x, so v, S and their product carry
// double-double. ln Gamma(1 + a) for |a| <= 0.05 from its zeta series (special_constants.hpp).
Value *Emitter::igamc_small_a(Value *a, Value *x) {
  namespace sp = pk::kit::special;
  Value *sum = f64c(0.0), *power = b_.CreateFNeg(a);
  for (int k = 2; k <= 13; ++k) {
    power = b_.CreateFMul(power, b_.CreateFNeg(a));
    sum = b_.CreateFAdd(sum, b_.CreateFDiv(b_.CreateFMul(f64c(sp::kZetaAtIntegers2To13[k - 2]), power), f64c(k)));
  }
  DD series_lg = dd_add_d(dd_mul_d({f64c(sp::kEulerGammaHi), f64c(sp::kEulerGammaLo)}, b_.CreateFNeg(a)), sum);
  Value *tiny_a = b_.CreateFCmpOLE(intr(llvm::Intrinsic::fabs, {a}), f64c(0.05));
  // lgamma_pos of 1 + a is only needed (and well-conditioned) above 0.05; the select keeps its argument sane.
  DD rec_lg = lgamma_pos(dd_two_sum(f64c(1.0), b_.CreateSelect(tiny_a, f64c(0.5), a)));
  DD lg{b_.CreateSelect(tiny_a, series_lg.hi, rec_lg.hi), b_.CreateSelect(tiny_a, series_lg.lo, rec_lg.lo)};
  Value *llo = nullptr;
  Value *lhi = log_dd(x, llo);
  DD v = dd_add(dd_mul_d({lhi, llo}, a), {b_.CreateFNeg(lg.hi), b_.CreateFNeg(lg.lo)});
  Value *em1 = b_.CreateFAdd(expm1_d(v.hi), b_.CreateFMul(exp_d(v.hi), v.lo));
  std::vector<Value *> s =
      loop_until(i64c(199), {f64c(1.0), f64c(0.0), f64c(0.0), f64c(0.0)}, [&](Value *c, const std::vector<Value *> &w) {
        Value *nn = b_.CreateSIToFP(b_.CreateAdd(c, i64c(1)), f64_);
        DD term = dd_div(dd_mul_d({w[0], w[1]}, b_.CreateFNeg(x)), dd(nn));
        DD t = dd_div(term, dd_two_sum(a, nn));
        DD series = dd_add({w[2], w[3]}, t);
        Value *stop = b_.CreateFCmpOLE(intr(llvm::Intrinsic::fabs, {t.hi}),
                                       b_.CreateFMul(f64c(1e-20), intr(llvm::Intrinsic::fabs, {series.hi})));
        return std::vector<Value *>{term.hi, term.lo, series.hi, series.lo, stop};
      });
  DD f = dd_mul(dd_mul_d({s[2], s[3]}, a), dd_two_sum(f64c(1.0), em1));
  return dd_add_d({b_.CreateFNeg(f.hi), b_.CreateFNeg(f.lo)}, b_.CreateFNeg(em1)).hi;
}

Value *Emitter::igamma_any(Value *a, Value *x, bool upper) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // The special cases first; the branches then see finite a, x > 0 (and a, x replaced by 1 elsewhere).
  Value *bad =
      b_.CreateOr(b_.CreateOr(b_.CreateFCmpUNO(a, x), b_.CreateFCmpOLT(a, f64c(0.0))), b_.CreateFCmpOLT(x, f64c(0.0)));
  Value *x0 = b_.CreateFCmpOEQ(x, f64c(0.0)), *a0 = b_.CreateFCmpOEQ(a, f64c(0.0));
  Value *ainf = b_.CreateFCmpOEQ(a, f64c(inf)), *xinf = b_.CreateFCmpOEQ(x, f64c(inf));
  Value *special = b_.CreateOr(b_.CreateOr(bad, b_.CreateOr(x0, a0)), b_.CreateOr(ainf, xinf));
  Value *sa = b_.CreateSelect(special, f64c(1.0), a), *sx = b_.CreateSelect(special, f64c(1.0), x);
  Value *frac = b_.CreateAnd(b_.CreateFCmpOGT(sx, f64c(1.0)), b_.CreateFCmpOGT(sx, sa));
  Value *r = if_else(
      frac,
      [&]() {
        Value *q = igamc_fraction(sa, sx);
        return upper ? q : b_.CreateFSub(f64c(1.0), q);
      },
      [&]() -> Value * {
        if (!upper) return igam_series(sa, sx);
        return if_else(
            b_.CreateFCmpOLT(sa, f64c(1.0)), [&]() { return igamc_small_a(sa, sx); },
            [&]() { return b_.CreateFSub(f64c(1.0), igam_series(sa, sx)); });
      });
  Value *lo = f64c(upper ? 1.0 : 0.0), *hi = f64c(upper ? 0.0 : 1.0);
  r = b_.CreateSelect(xinf, hi, r);
  r = b_.CreateSelect(ainf, b_.CreateSelect(xinf, f64c(nan), lo), r);
  r = b_.CreateSelect(a0, hi, r);
  r = b_.CreateSelect(x0, lo, r);
  return b_.CreateSelect(bad, f64c(nan), r);
}

}  // namespace pk::codegen::detail
