// emit_special.cpp — the emitter's lgamma (see emit.cpp for the numerics), with the double-double arithmetic it
// carries its cancelling steps in. erfcx, erf_inv, ndtri, digamma, the Bessel functions, the incomplete gamma
// functions and Hurwitz zeta are the device math's (sdk/devmath, emit_devmath.cpp).
#include "emit_internal.hpp"

#include <cmath>
#include <limits>

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

}  // namespace pk::codegen::detail
