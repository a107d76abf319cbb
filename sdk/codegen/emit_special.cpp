// emit_special.cpp — the emitter's double-double arithmetic (the sin and cos kernels' and sincos_pi's cancelling
// steps) and if_else. The special functions (erfcx, erf_inv, ndtri, lgamma, digamma, the Bessel functions, the
// incomplete gamma functions and Hurwitz zeta) are the device math's (sdk/devmath, emit_devmath.cpp).
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
