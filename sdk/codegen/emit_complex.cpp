// emit_complex.cpp — complex values in the kernel generator (see emit_complex.hpp). The algorithms follow the
// OpenCL backend's cl_complex.cpp (C11 Annex G special values, glibc's for the elementary functions); the c128
// operations the op table contracts as correctly rounded (abs, mul, div, reciprocal, sqrt) are computed in
// double-double and, when that cannot decide the rounding, decided exactly from sums of error-free products.
#include "emit_complex.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include "primkit/primkit.h"
#include "primkit/special_constants.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace pk::codegen::detail {

bool is_complex_dtype(int32_t d) {
  return d == PK_DTYPE_C64 || d == PK_DTYPE_C128;
}

namespace {
int32_t part_of(int32_t d) {
  return d == PK_DTYPE_C64 ? PK_DTYPE_F32 : PK_DTYPE_F64;
}
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

using llvm::Value;

ComplexEmitter::ComplexEmitter(llvm::IRBuilder<> &b, RealMath &math) : b_(b), m_(math) {
  f32_ = b_.getFloatTy();
  f64_ = b_.getDoubleTy();
  i64_ = b_.getInt64Ty();
}

bool ComplexEmitter::handles(uint32_t op, const std::vector<int32_t> &in_dt, int32_t out_dt) {
  if (op == PK_OP_ANGLE || op == PK_OP_COMPLEX || op == PK_OP_POLAR || is_complex_dtype(out_dt)) return true;
  for (int32_t d : in_dt)
    if (is_complex_dtype(d)) return true;
  return false;
}

llvm::Type *ComplexEmitter::vector_type(int32_t d) const {
  return llvm::FixedVectorType::get(d == PK_DTYPE_C64 ? f32_ : f64_, 2);
}

// ------------------------------------------------------------------------------------------------ basics

Value *ComplexEmitter::d(double v) {
  return llvm::ConstantFP::get(f64_, v);
}
Value *ComplexEmitter::re(Value *z) {
  return b_.CreateExtractElement(z, uint64_t{0});
}
Value *ComplexEmitter::im(Value *z) {
  return b_.CreateExtractElement(z, uint64_t{1});
}
Value *ComplexEmitter::pair(Value *r, Value *i) {
  Value *v = llvm::PoisonValue::get(llvm::FixedVectorType::get(r->getType(), 2));
  return b_.CreateInsertElement(b_.CreateInsertElement(v, r, uint64_t{0}), i, uint64_t{1});
}
Value *ComplexEmitter::fabs(Value *x) {
  return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
}
Value *ComplexEmitter::copysign(Value *x, Value *s) {
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x, s);
}
Value *ComplexEmitter::is_inf(Value *x) {
  return b_.CreateFCmpOEQ(fabs(x), llvm::ConstantFP::get(x->getType(), kInf));
}
Value *ComplexEmitter::is_finite(Value *x) {
  return b_.CreateFCmpOLT(fabs(x), llvm::ConstantFP::get(x->getType(), kInf));
}
Value *ComplexEmitter::fma(Value *a, Value *x, Value *c) {
  return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, x, c});
}
Value *ComplexEmitter::pow2(Value *k) {
  return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, b_.getInt64(1023)), 52), f64_);
}
Value *ComplexEmitter::exponent(Value *x) {
  Value *ax = fabs(x);
  Value *sub = b_.CreateFCmpOLT(ax, d(0x1p-1022));
  Value *v = sel(sub, b_.CreateFMul(ax, d(0x1p54)), ax);
  Value *e = b_.CreateSub(b_.CreateLShr(b_.CreateBitCast(v, i64_), 52), b_.getInt64(1023));
  return sel(sub, b_.CreateSub(e, b_.getInt64(54)), e);
}
Value *ComplexEmitter::widen(Value *z) {
  auto *vt = llvm::cast<llvm::FixedVectorType>(z->getType());
  if (vt->getElementType() == f64_) return z;
  return b_.CreateFPExt(z, llvm::FixedVectorType::get(f64_, 2));
}
Value *ComplexEmitter::round_to(Value *z2, int32_t dt) {
  return dt == PK_DTYPE_C64 ? b_.CreateFPTrunc(z2, vector_type(dt)) : z2;
}
// x 2^k in three power-of-two factors (each within f64's normal range): exact whenever the result is normal,
// 0 or inf beyond the range (k is clamped to +-3000, far past any finite outcome).
Value *ComplexEmitter::scale(Value *x, Value *k) {
  Value *kc = sel(b_.CreateICmpSGT(k, b_.getInt64(3000)), b_.getInt64(3000), k);
  kc = sel(b_.CreateICmpSLT(kc, b_.getInt64(-3000)), b_.getInt64(-3000), kc);
  Value *k1 = b_.CreateSDiv(kc, b_.getInt64(3));
  Value *rest = b_.CreateSub(kc, k1);
  Value *k2 = b_.CreateSDiv(rest, b_.getInt64(2));
  Value *k3 = b_.CreateSub(rest, k2);
  return b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(x, pow2(k1)), pow2(k2)), pow2(k3));
}

// ---------------------------------------------------------------------------------------- double-double

ComplexEmitter::DD ComplexEmitter::two_sum(Value *a, Value *x) {
  Value *s = b_.CreateFAdd(a, x);
  Value *bb = b_.CreateFSub(s, a);
  Value *e = b_.CreateFAdd(b_.CreateFSub(a, b_.CreateFSub(s, bb)), b_.CreateFSub(x, bb));
  return {s, e};
}
ComplexEmitter::DD ComplexEmitter::fast_two_sum(Value *a, Value *x) {
  Value *s = b_.CreateFAdd(a, x);
  return {s, b_.CreateFSub(x, b_.CreateFSub(s, a))};
}
ComplexEmitter::DD ComplexEmitter::two_prod(Value *a, Value *x) {
  Value *p = b_.CreateFMul(a, x);
  return {p, fma(a, x, b_.CreateFNeg(p))};
}
ComplexEmitter::DD ComplexEmitter::dd_add(DD a, DD x) {
  DD s = two_sum(a.hi, x.hi), t = two_sum(a.lo, x.lo);
  s = fast_two_sum(s.hi, b_.CreateFAdd(s.lo, t.hi));
  return fast_two_sum(s.hi, b_.CreateFAdd(s.lo, t.lo));
}
ComplexEmitter::DD ComplexEmitter::dd_add_d(DD a, Value *x) {
  DD s = two_sum(a.hi, x);
  return fast_two_sum(s.hi, b_.CreateFAdd(s.lo, a.lo));
}
ComplexEmitter::DD ComplexEmitter::dd_mul(DD a, DD x) {
  DD p = two_prod(a.hi, x.hi);
  Value *e = b_.CreateFAdd(p.lo, b_.CreateFAdd(b_.CreateFMul(a.hi, x.lo), b_.CreateFMul(a.lo, x.hi)));
  return fast_two_sum(p.hi, e);
}
ComplexEmitter::DD ComplexEmitter::dd_mul_d(DD a, Value *x) {
  DD p = two_prod(a.hi, x);
  return fast_two_sum(p.hi, b_.CreateFAdd(p.lo, b_.CreateFMul(a.lo, x)));
}
// Long division with two correction steps: about 2^-104 relative.
ComplexEmitter::DD ComplexEmitter::dd_div(DD a, DD x) {
  DD nx = {b_.CreateFNeg(x.hi), b_.CreateFNeg(x.lo)};
  Value *q1 = b_.CreateFDiv(a.hi, x.hi);
  DD r = dd_add(a, dd_mul_d(nx, q1));
  Value *q2 = b_.CreateFDiv(r.hi, x.hi);
  DD r2 = dd_add(r, dd_mul_d(nx, q2));
  return dd_add_d(fast_two_sum(q1, q2), b_.CreateFDiv(r2.hi, x.hi));
}
// One Newton step from the f64 root: about 2^-104 relative; sqrt(0) = 0.
ComplexEmitter::DD ComplexEmitter::dd_sqrt(DD s) {
  Value *h = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, s.hi);
  DD hh = two_prod(h, h);
  Value *corr =
      b_.CreateFDiv(b_.CreateFAdd(b_.CreateFSub(b_.CreateFSub(s.hi, hh.hi), hh.lo), s.lo), b_.CreateFMul(d(2.0), h));
  DD r = fast_two_sum(h, corr);
  Value *zero = b_.CreateFCmpOEQ(s.hi, d(0.0));
  return {sel(zero, d(0.0), r.hi), sel(zero, d(0.0), r.lo)};
}

Value *ComplexEmitter::sum_odd(Value *p, Value *q) {
  DD s = two_sum(p, q);
  Value *bits = b_.CreateBitCast(s.hi, i64_);
  Value *even = b_.CreateICmpEQ(b_.CreateAnd(bits, b_.getInt64(1)), b_.getInt64(0));
  // Toward the exact value: away from zero when the error has the sum's sign (bits + 1), else toward it.
  Value *away = b_.CreateICmpEQ(b_.CreateFCmpOGT(s.lo, d(0.0)), b_.CreateFCmpOGT(s.hi, d(0.0)));
  Value *odd = sel(away, b_.CreateAdd(bits, b_.getInt64(1)), b_.CreateSub(bits, b_.getInt64(1)));
  Value *adjust = b_.CreateAnd(b_.CreateAnd(b_.CreateFCmpONE(s.lo, d(0.0)), is_finite(s.hi)), even);
  return b_.CreateBitCast(sel(adjust, odd, bits), f64_);
}
Value *ComplexEmitter::dd_to_float(DD v) {
  return b_.CreateFPTrunc(sum_odd(v.hi, v.lo), f32_);
}

std::vector<Value *> ComplexEmitter::branch(Value *cond, const std::function<std::vector<Value *>()> &then_fn,
                                            const std::function<std::vector<Value *>()> &else_fn) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::LLVMContext &ctx = f->getContext();
  auto *bt = llvm::BasicBlock::Create(ctx, "cx_then", f);
  auto *be = llvm::BasicBlock::Create(ctx, "cx_else", f);
  auto *join = llvm::BasicBlock::Create(ctx, "cx_join", f);
  b_.CreateCondBr(cond, bt, be);
  b_.SetInsertPoint(bt);
  std::vector<Value *> vt = then_fn();
  llvm::BasicBlock *et = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(be);
  std::vector<Value *> ve = else_fn();
  llvm::BasicBlock *ee = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  std::vector<Value *> out;
  for (size_t k = 0; k < vt.size(); ++k) {
    llvm::PHINode *phi = b_.CreatePHI(vt[k]->getType(), 2);
    phi->addIncoming(vt[k], et);
    phi->addIncoming(ve[k], ee);
    out.push_back(phi);
  }
  return out;
}

// The exact sum of the terms by distillation (Priest): passes of error-free two-sums move the sum into the last
// slot and leave a non-overlapping expansion, whose last nonzero term has the sum's sign. The terms live in a
// stack array (allocated in the function's entry block) and the passes are an IR loop, so the code stays small
// however many terms there are; it only runs when a rounding is in doubt.
Value *ComplexEmitter::sign_of_sum(std::vector<Value *> terms) {
  const auto n = static_cast<int64_t>(terms.size());
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::LLVMContext &ctx = f->getContext();
  llvm::IRBuilder<> eb(&f->getEntryBlock(), f->getEntryBlock().begin());
  auto *arr_t = llvm::ArrayType::get(f64_, static_cast<uint64_t>(n));
  llvm::AllocaInst *arr = eb.CreateAlloca(arr_t);
  auto slot = [&](Value *i) { return b_.CreateInBoundsGEP(arr_t, arr, {b_.getInt64(0), i}); };
  for (int64_t k = 0; k < n; ++k) b_.CreateStore(terms[static_cast<size_t>(k)], slot(b_.getInt64(k)));
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  auto *outer = llvm::BasicBlock::Create(ctx, "distill_pass", f);
  auto *inner = llvm::BasicBlock::Create(ctx, "distill_step", f);
  auto *outer_end = llvm::BasicBlock::Create(ctx, "distill_pass_end", f);
  auto *scan = llvm::BasicBlock::Create(ctx, "distill_scan", f);
  auto *done = llvm::BasicBlock::Create(ctx, "distill_done", f);
  b_.CreateBr(outer);
  b_.SetInsertPoint(outer);
  llvm::PHINode *pass = b_.CreatePHI(i64_, 2);
  pass->addIncoming(b_.getInt64(0), pre);
  b_.CreateBr(inner);
  b_.SetInsertPoint(inner);
  llvm::PHINode *i = b_.CreatePHI(i64_, 2);
  i->addIncoming(b_.getInt64(1), outer);
  Value *pa = slot(b_.CreateSub(i, b_.getInt64(1))), *pb = slot(i);
  DD s = two_sum(b_.CreateLoad(f64_, pa), b_.CreateLoad(f64_, pb));
  b_.CreateStore(s.lo, pa);
  b_.CreateStore(s.hi, pb);
  Value *inext = b_.CreateAdd(i, b_.getInt64(1));
  i->addIncoming(inext, inner);
  b_.CreateCondBr(b_.CreateICmpSLT(inext, b_.getInt64(n)), inner, outer_end);
  b_.SetInsertPoint(outer_end);
  Value *pnext = b_.CreateAdd(pass, b_.getInt64(1));
  pass->addIncoming(pnext, outer_end);
  b_.CreateCondBr(b_.CreateICmpSLT(pnext, b_.getInt64(n)), outer, scan);
  b_.SetInsertPoint(scan);
  llvm::PHINode *j = b_.CreatePHI(i64_, 2);
  llvm::PHINode *last = b_.CreatePHI(f64_, 2);
  j->addIncoming(b_.getInt64(0), outer_end);
  last->addIncoming(d(0.0), outer_end);
  Value *v = b_.CreateLoad(f64_, slot(j));
  Value *nl = sel(b_.CreateFCmpONE(v, d(0.0)), v, last);
  Value *jn = b_.CreateAdd(j, b_.getInt64(1));
  j->addIncoming(jn, scan);
  last->addIncoming(nl, scan);
  b_.CreateCondBr(b_.CreateICmpSLT(jn, b_.getInt64(n)), scan, done);
  b_.SetInsertPoint(done);
  Value *sgn = sel(b_.CreateFCmpOGT(nl, d(0.0)), d(1.0), sel(b_.CreateFCmpOLT(nl, d(0.0)), d(-1.0), d(0.0)));
  return sgn;
}

// (hi + lo) 2^k rounded once; a subnormal result is rounded at its quantum from both parts (cl_complex's
// pk_ldexp_dd): q = (hi + lo) scaled to exponent 0, n = q / quantum to nearest even with lo deciding.
Value *ComplexEmitter::ldexp_dd(DD v, Value *k) {
  Value *e = exponent(v.hi);
  Value *normal = b_.CreateOr(b_.CreateFCmpOEQ(v.hi, d(0.0)), b_.CreateICmpSGE(b_.CreateAdd(e, k), b_.getInt64(-1022)));
  Value *direct = scale(v.hi, k);
  Value *qh = scale(v.hi, b_.CreateNeg(e)), *ql = scale(v.lo, b_.CreateNeg(e));
  Value *kk = b_.CreateAdd(k, e);  // below -1022 on this path
  Value *kc = sel(b_.CreateICmpSLT(kk, b_.getInt64(-1080)), b_.getInt64(-1080), kk);
  Value *qu = pow2(b_.CreateSub(b_.getInt64(-1074), kc));  // 2^(-1074 - k): 2^-51 .. 2^6
  Value *n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFDiv(qh, qu));
  // rem = qh - n qu is exact and at most half a quantum; lo (below half an ulp of qh) can only move the value
  // across a midpoint that rem sits on exactly, so the midpoint cases are decided by lo's sign (ties by n's
  // parity only when lo is 0).
  Value *rem = b_.CreateFSub(qh, b_.CreateFMul(n, qu));
  Value *half = b_.CreateFMul(qu, d(0.5));
  Value *odd = b_.CreateFCmpONE(b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(n, d(0.5))),
                                b_.CreateFMul(n, d(0.5)));
  Value *lo_pos = b_.CreateFCmpOGT(ql, d(0.0)), *lo_neg = b_.CreateFCmpOLT(ql, d(0.0));
  Value *lo_zero = b_.CreateFCmpOEQ(ql, d(0.0));
  Value *up = b_.CreateAnd(b_.CreateFCmpOEQ(rem, half), b_.CreateOr(lo_pos, b_.CreateAnd(lo_zero, odd)));
  Value *neg_half = b_.CreateFNeg(half);
  Value *dn = b_.CreateAnd(b_.CreateFCmpOEQ(rem, neg_half), b_.CreateOr(lo_neg, b_.CreateAnd(lo_zero, odd)));
  n = sel(up, b_.CreateFAdd(n, d(1.0)), sel(dn, b_.CreateFSub(n, d(1.0)), n));
  Value *sub = copysign(b_.CreateFMul(n, d(0x1p-1074)), v.hi);  // exact: a multiple of the least subnormal
  sub = sel(b_.CreateICmpSLT(kk, b_.getInt64(-1080)), copysign(d(0.0), v.hi), sub);
  return sel(normal, direct, sub);
}

Value *ComplexEmitter::round_dd(DD v, Value *k, const ExactSign &exact_sign) {
  // hi = RN(hi + lo) already; it is wrong only if the exact value lies across the midpoint hi + lo sits near:
  // half an ulp above |hi|, or a quarter of one below a power of two. A double-double within 2^-45 of those
  // half-ulps (its own error is below 2^-100 relative) is decided exactly.
  Value *e = exponent(v.hi);
  Value *hu = pow2(b_.CreateSub(e, b_.getInt64(53)));  // half an ulp of |hi| (hi normal here)
  Value *alo = fabs(v.lo);
  Value *tol = b_.CreateFMul(hu, d(0x1p-45));
  Value *near_half = b_.CreateFCmpOLE(fabs(b_.CreateFSub(alo, hu)), tol);
  Value *near_quarter = b_.CreateFCmpOLE(fabs(b_.CreateFSub(alo, b_.CreateFMul(hu, d(0.5)))), tol);
  Value *in_range = b_.CreateAnd(is_finite(v.hi), b_.CreateICmpSGT(b_.CreateAdd(e, k), b_.getInt64(-1021)));
  Value *doubt =
      b_.CreateAnd(b_.CreateAnd(in_range, b_.CreateFCmpONE(v.hi, d(0.0))), b_.CreateOr(near_half, near_quarter));
  return branch(
      doubt,
      [&]() -> std::vector<Value *> {
        // The neighbour of hi toward lo and the midpoint between them.
        Value *bits = b_.CreateBitCast(v.hi, i64_);
        Value *away = b_.CreateICmpEQ(b_.CreateFCmpOGT(v.lo, d(0.0)), b_.CreateFCmpOGT(v.hi, d(0.0)));
        Value *nb =
            b_.CreateBitCast(sel(away, b_.CreateAdd(bits, b_.getInt64(1)), b_.CreateSub(bits, b_.getInt64(1))), f64_);
        Value *h = b_.CreateFMul(b_.CreateFSub(nb, v.hi), d(0.5));  // exact: half the gap, signed toward lo
        Value *s = exact_sign(v.hi, h);                             // sign of exact - midpoint
        Value *toward = b_.CreateFCmpOGT(b_.CreateFMul(s, h), d(0.0));
        Value *tie = b_.CreateFCmpOEQ(s, d(0.0));
        Value *nb_even = b_.CreateICmpEQ(b_.CreateAnd(b_.CreateBitCast(nb, i64_), b_.getInt64(1)), b_.getInt64(0));
        Value *r = sel(b_.CreateOr(toward, b_.CreateAnd(tie, nb_even)), nb, v.hi);
        return {scale(r, k)};
      },
      [&]() -> std::vector<Value *> { return {ldexp_dd(v, k)}; })[0];
}

// ----------------------------------------------------------------------------------------- products, quotients

// C11 Annex G's _Cmultd: the plain product, and where both parts come out NaN, infinities recovered.
Value *ComplexEmitter::mul_g(Value *a, Value *x, Value *c, Value *y, Value *down_k) {
  auto prod = [&](Value *u, Value *v) {
    if (down_k == nullptr) return b_.CreateFMul(u, v);
    Value *fin = b_.CreateAnd(is_finite(u), is_finite(v));
    return sel(fin, b_.CreateFMul(scale(u, b_.CreateNeg(down_k)), v), b_.CreateFMul(u, v));
  };
  Value *pr = b_.CreateFSub(prod(a, c), prod(x, y));
  Value *pi = b_.CreateFAdd(prod(a, y), prod(x, c));
  auto box = [&](Value *v) { return copysign(sel(is_inf(v), d(1.0), d(0.0)), v); };
  auto unnan = [&](Value *v) { return sel(is_nan(v), copysign(d(0.0), v), v); };
  Value *inf_l = b_.CreateOr(is_inf(a), is_inf(x));
  Value *a1 = sel(inf_l, box(a), a), *x1 = sel(inf_l, box(x), x);
  Value *c1 = sel(inf_l, unnan(c), c), *y1 = sel(inf_l, unnan(y), y);
  Value *inf_r = b_.CreateOr(is_inf(c1), is_inf(y1));
  Value *c2 = sel(inf_r, box(c1), c1), *y2 = sel(inf_r, box(y1), y1);
  Value *a2 = sel(inf_r, unnan(a1), a1), *x2 = sel(inf_r, unnan(x1), x1);
  Value *rr = b_.CreateFMul(d(kInf), b_.CreateFSub(b_.CreateFMul(a2, c2), b_.CreateFMul(x2, y2)));
  Value *ri = b_.CreateFMul(d(kInf), b_.CreateFAdd(b_.CreateFMul(a2, y2), b_.CreateFMul(x2, c2)));
  Value *recover = b_.CreateAnd(b_.CreateAnd(is_nan(pr), is_nan(pi)), b_.CreateOr(inf_l, inf_r));
  return pair(sel(recover, rr, pr), sel(recover, ri, pi));
}

// (a + xi) / (c + yi) by Smith's method with Annex G recovery (libgcc's __divdc3, which the oracle's
// std::complex uses: signs of zero parts follow its evaluation order).
Value *ComplexEmitter::div_g(Value *a, Value *x, Value *c, Value *y) {
  Value *small_c = b_.CreateFCmpOLT(fabs(c), fabs(y));
  // |c| < |y|: ratio = c / y, denom = c ratio + y; else ratio = y / c, denom = y ratio + c.
  Value *ratio = sel(small_c, b_.CreateFDiv(c, y), b_.CreateFDiv(y, c));
  Value *denom = sel(small_c, b_.CreateFAdd(b_.CreateFMul(c, ratio), y), b_.CreateFAdd(b_.CreateFMul(y, ratio), c));
  Value *nr = sel(small_c, b_.CreateFAdd(b_.CreateFMul(a, ratio), x), b_.CreateFAdd(b_.CreateFMul(x, ratio), a));
  Value *ni = sel(small_c, b_.CreateFSub(b_.CreateFMul(x, ratio), a), b_.CreateFSub(x, b_.CreateFMul(a, ratio)));
  Value *qr = b_.CreateFDiv(nr, denom), *qi = b_.CreateFDiv(ni, denom);
  auto box = [&](Value *v) { return copysign(sel(is_inf(v), d(1.0), d(0.0)), v); };
  Value *both_nan = b_.CreateAnd(is_nan(qr), is_nan(qi));
  Value *zero_den = b_.CreateAnd(b_.CreateFCmpOEQ(c, d(0.0)), b_.CreateFCmpOEQ(y, d(0.0)));
  Value *num_not_nan = b_.CreateOr(b_.CreateNot(is_nan(a)), b_.CreateNot(is_nan(x)));
  Value *case1 = b_.CreateAnd(zero_den, num_not_nan);
  Value *inf_c = copysign(d(kInf), c);
  Value *r1 = b_.CreateFMul(inf_c, a), *i1 = b_.CreateFMul(inf_c, x);
  Value *fin_den = b_.CreateAnd(is_finite(c), is_finite(y));
  Value *fin_num = b_.CreateAnd(is_finite(a), is_finite(x));
  Value *case2 = b_.CreateAnd(b_.CreateOr(is_inf(a), is_inf(x)), fin_den);
  Value *ab = box(a), *xb = box(x);
  Value *r2 = b_.CreateFMul(d(kInf), b_.CreateFAdd(b_.CreateFMul(ab, c), b_.CreateFMul(xb, y)));
  Value *i2 = b_.CreateFMul(d(kInf), b_.CreateFSub(b_.CreateFMul(xb, c), b_.CreateFMul(ab, y)));
  Value *case3 = b_.CreateAnd(b_.CreateOr(is_inf(c), is_inf(y)), fin_num);
  Value *cb = box(c), *yb = box(y);
  Value *r3 = b_.CreateFMul(d(0.0), b_.CreateFAdd(b_.CreateFMul(a, cb), b_.CreateFMul(x, yb)));
  Value *i3 = b_.CreateFMul(d(0.0), b_.CreateFSub(b_.CreateFMul(x, cb), b_.CreateFMul(a, yb)));
  Value *rr = sel(case1, r1, sel(case2, r2, sel(case3, r3, qr)));
  Value *ri = sel(case1, i1, sel(case2, i2, sel(case3, i3, qi)));
  return pair(sel(both_nan, rr, qr), sel(both_nan, ri, qi));
}

// c64: products of floats are exact in f64, so each part's sum rounded to odd and then to f32 rounds once.
Value *ComplexEmitter::mul64(Value *u, Value *v) {
  Value *u2 = widen(u), *v2 = widen(v);
  Value *a = re(u2), *x = im(u2), *c = re(v2), *y = im(v2);
  Value *fin = b_.CreateAnd(b_.CreateAnd(is_finite(a), is_finite(x)), b_.CreateAnd(is_finite(c), is_finite(y)));
  Value *exact = pair(sum_odd(b_.CreateFMul(a, c), b_.CreateFNeg(b_.CreateFMul(x, y))),
                      sum_odd(b_.CreateFMul(a, y), b_.CreateFMul(x, c)));
  return round_to(sel(fin, exact, mul_g(a, x, c, y)), PK_DTYPE_C64);
}

// p1 q1 + p2 q2 correctly rounded: a compensated sum (~2^-104 relative) decides unless it lies near a rounding
// boundary or the products leave the range where their fma error terms are exact; then the products are
// scaled to exponent 0 and the rounding decided exactly.
Value *ComplexEmitter::dot2_128(Value *p1, Value *q1, Value *p2, Value *q2) {
  DD p = two_prod(p1, q1), q = two_prod(p2, q2);
  DD s = two_sum(p.hi, q.hi);
  Value *t = b_.CreateFAdd(s.lo, b_.CreateFAdd(p.lo, q.lo));
  auto zero_prod = [&](Value *x, Value *y) {
    return b_.CreateOr(b_.CreateFCmpOEQ(x, d(0.0)), b_.CreateFCmpOEQ(y, d(0.0)));
  };
  Value *z1 = zero_prod(p1, q1), *z2 = zero_prod(p2, q2);
  Value *in_range = b_.CreateAnd(b_.CreateOr(z1, b_.CreateFCmpOGT(fabs(p.hi), d(0x1p-960))),
                                 b_.CreateOr(z2, b_.CreateFCmpOGT(fabs(q.hi), d(0x1p-960))));
  DD r = fast_two_sum(s.hi, t);
  Value *ar = fabs(r.hi);
  Value *half_ulp = b_.CreateFMul(
      d(0.5), b_.CreateFSub(b_.CreateBitCast(b_.CreateAdd(b_.CreateBitCast(ar, i64_), b_.getInt64(1)), f64_), ar));
  Value *clear = b_.CreateFCmpOGT(fabs(b_.CreateFSub(fabs(r.lo), half_ulp)), b_.CreateFMul(half_ulp, d(0x1p-45)));
  Value *fin = b_.CreateAnd(b_.CreateAnd(is_finite(p.hi), is_finite(q.hi)), is_finite(r.hi));
  Value *exact_zero = b_.CreateAnd(b_.CreateAnd(b_.CreateFCmpOEQ(t, d(0.0)), is_finite(s.hi)), in_range);
  Value *quick = b_.CreateOr(exact_zero, b_.CreateAnd(b_.CreateAnd(fin, in_range), clear));
  Value *both_zero = b_.CreateAnd(z1, z2);
  Value *quick_value = sel(exact_zero, s.hi, r.hi);
  quick_value = sel(both_zero, b_.CreateFAdd(b_.CreateFMul(p1, q1), b_.CreateFMul(p2, q2)), quick_value);
  return branch(
      b_.CreateOr(quick, both_zero), [&]() -> std::vector<Value *> { return {quick_value}; },
      [&]() -> std::vector<Value *> {
        DD x, y;
        Value *e = dot2_terms(p1, q1, p2, q2, x, y);
        DD sum = dd_add(x, y);
        // An exact cancellation is +0 (round to nearest).
        Value *res = round_dd(sum, e, [&](Value *mh, Value *ml) {
          return sign_of_sum({x.hi, x.lo, y.hi, y.lo, b_.CreateFNeg(mh), b_.CreateFNeg(ml)});
        });
        return {sel(b_.CreateFCmpOEQ(sum.hi, d(0.0)), d(0.0), res)};
      })[0];
}

// p1 q1 + p2 q2 as (x + y) 2^e, x and y exact products of the factors scaled to [1, 2) (so that the fma error
// terms are exact and nothing overflows or underflows); a product more than 2^1000 below the other keeps only
// its sign at 2^-1000 relative (it can then only break a tie). A zero product is (0, 0).
Value *ComplexEmitter::dot2_terms(Value *p1, Value *q1, Value *p2, Value *q2, DD &x, DD &y) {
  auto zero_prod = [&](Value *a, Value *c) {
    return b_.CreateOr(b_.CreateFCmpOEQ(a, d(0.0)), b_.CreateFCmpOEQ(c, d(0.0)));
  };
  Value *z1 = zero_prod(p1, q1), *z2 = zero_prod(p2, q2);
  auto ex = [&](Value *v, Value *z) { return sel(z, b_.getInt64(0), exponent(v)); };
  Value *k1 = ex(p1, z1), *j1 = ex(q1, z1), *k2 = ex(p2, z2), *j2 = ex(q2, z2);
  Value *e1 = b_.CreateAdd(k1, j1), *e2 = b_.CreateAdd(k2, j2);
  Value *emax = sel(b_.CreateICmpSGT(e1, e2), e1, e2);
  Value *e = sel(z1, e2, sel(z2, e1, emax));
  auto term = [&](Value *pv, Value *qv, Value *k, Value *j, Value *ei, Value *z) {
    Value *diff = b_.CreateSub(ei, e);
    diff = sel(b_.CreateICmpSLT(diff, b_.getInt64(-1000)), b_.getInt64(-1000), diff);
    Value *a = scale(pv, b_.CreateNeg(k));
    Value *bq = scale(scale(qv, b_.CreateNeg(j)), diff);
    DD pr = two_prod(a, bq);
    return DD{sel(z, d(0.0), pr.hi), sel(z, d(0.0), pr.lo)};
  };
  x = term(p1, q1, k1, j1, e1, z1);
  y = term(p2, q2, k2, j2, e2, z2);
  return e;
}

Value *ComplexEmitter::mul128(Value *u, Value *v) {
  Value *a = re(u), *x = im(u), *c = re(v), *y = im(v);
  Value *fin = b_.CreateAnd(b_.CreateAnd(is_finite(a), is_finite(x)), b_.CreateAnd(is_finite(c), is_finite(y)));
  return branch(
      fin, [&]() -> std::vector<Value *> { return {pair(dot2_128(a, c, b_.CreateFNeg(x), y), dot2_128(a, y, x, c))}; },
      [&]() -> std::vector<Value *> { return {mul_g(a, x, c, y)}; })[0];
}

// u / v. Finite operands with a nonzero divisor: (a c + x y) / (c^2 + y^2) and (x c - a y) / (c^2 + y^2) with
// exact numerators and denominator (c64: f64 products; c128: the operands scaled to exponent 0, error-free
// products) divided in double-double; a part whose exact numerator is 0 takes Smith's signed zero. Otherwise
// Smith's method with Annex G's recovery.
Value *ComplexEmitter::div_cx(Value *u, Value *v, int32_t dt) {
  Value *u2 = widen(u), *v2 = widen(v);
  Value *a = re(u2), *x = im(u2), *c = re(v2), *y = im(v2);
  Value *fin = b_.CreateAnd(b_.CreateAnd(is_finite(a), is_finite(x)), b_.CreateAnd(is_finite(c), is_finite(y)));
  Value *nonzero = b_.CreateOr(b_.CreateFCmpONE(c, d(0.0)), b_.CreateFCmpONE(y, d(0.0)));
  Value *g = div_g(a, x, c, y);
  if (dt == PK_DTYPE_C64) {
    DD nr = two_sum(b_.CreateFMul(a, c), b_.CreateFMul(x, y));
    DD ni = two_sum(b_.CreateFMul(x, c), b_.CreateFNeg(b_.CreateFMul(a, y)));
    DD den = two_sum(b_.CreateFMul(c, c), b_.CreateFMul(y, y));
    Value *qr = dd_to_float(dd_div(nr, den)), *qi = dd_to_float(dd_div(ni, den));
    Value *gf = round_to(g, dt);
    qr = sel(b_.CreateFCmpOEQ(nr.hi, d(0.0)), re(gf), qr);
    qi = sel(b_.CreateFCmpOEQ(ni.hi, d(0.0)), im(gf), qi);
    return sel(b_.CreateAnd(fin, nonzero), pair(qr, qi), gf);
  }
  return branch(
      b_.CreateAnd(fin, nonzero),
      [&]() -> std::vector<Value *> {
        // Numerator parts and c^2 + y^2 as scaled error-free products (a square far below the other keeps a
        // stand-in that only breaks ties, as the exact value does).
        DD cc, yy;
        Value *ed = dot2_terms(c, c, y, y, cc, yy);
        DD den = dd_add(cc, yy);
        auto part = [&](Value *p1, Value *q1, Value *p2, Value *q2) {
          DD n1, n2;
          Value *e = dot2_terms(p1, q1, p2, q2, n1, n2);
          DD num = dd_add(n1, n2);
          DD q = dd_div(num, den);
          Value *k = b_.CreateSub(e, ed);
          Value *r = round_dd(q, k, [&](Value *mh, Value *ml) {
            // sign(num / den - m) = sign(num - m den), den > 0.
            std::vector<Value *> t = {n1.hi, n1.lo, n2.hi, n2.lo};
            for (Value *dv : {cc.hi, cc.lo, yy.hi, yy.lo}) {
              DD pm = two_prod(mh, dv);
              t.push_back(b_.CreateFNeg(pm.hi));
              t.push_back(b_.CreateFNeg(pm.lo));
              t.push_back(b_.CreateFNeg(b_.CreateFMul(ml, dv)));  // ml is a power of two: exact
            }
            return sign_of_sum(t);
          });
          return std::make_pair(r, num.hi);
        };
        auto [qr, nr] = part(a, c, x, y);
        auto [qi, ni] = part(x, c, b_.CreateFNeg(a), y);
        qr = sel(b_.CreateFCmpOEQ(nr, d(0.0)), re(g), qr);
        qi = sel(b_.CreateFCmpOEQ(ni, d(0.0)), im(g), qi);
        return {pair(qr, qi)};
      },
      [&]() -> std::vector<Value *> { return {g}; })[0];
}

// |z| correctly rounded. c64 (cl_complex's pk_cabs64): x^2 + y^2 = s + e exactly in f64; the f32 nearest
// sqrt(s) is corrected by comparing s + e with the squares of its neighbouring midpoints (exact 25-bit values).
// c128: scaled to exponent 0, x^2 + y^2 in double-double, its square root by a Newton step, and the rounding
// decided exactly when in doubt (sign of x^2 + y^2 - m^2, all error-free products).
Value *ComplexEmitter::abs_cx(Value *z, int32_t dt) {
  Value *z2 = widen(z);
  Value *x = fabs(re(z2)), *y = fabs(im(z2));
  Value *any_inf = b_.CreateOr(is_inf(x), is_inf(y));
  Value *any_nan = b_.CreateOr(is_nan(x), is_nan(y));
  if (dt == PK_DTYPE_C64) {
    DD s = two_sum(b_.CreateFMul(x, x), b_.CreateFMul(y, y));
    Value *r = b_.CreateFPTrunc(b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, s.hi), f32_);
    llvm::Type *i32 = b_.getInt32Ty();
    Value *rb = b_.CreateBitCast(r, i32);
    Value *up = b_.CreateBitCast(b_.CreateAdd(rb, b_.getInt32(1)), f32_);
    Value *dn = b_.CreateBitCast(b_.CreateSub(rb, b_.getInt32(1)), f32_);
    Value *rd = b_.CreateFPExt(r, f64_), *upd = b_.CreateFPExt(up, f64_), *dnd = b_.CreateFPExt(dn, f64_);
    Value *up_fin = is_finite(up);
    Value *hi = b_.CreateFMul(d(0.5), b_.CreateFAdd(rd, upd));
    Value *lo = b_.CreateFMul(d(0.5), b_.CreateFAdd(rd, dnd));
    auto cmp_sq = [&](Value *m) {  // sign of m^2 - (s + e)
      DD t = two_sum(b_.CreateFMul(m, m), b_.CreateFNeg(s.hi));
      return b_.CreateFAdd(t.hi, b_.CreateFSub(t.lo, s.lo));
    };
    Value *ch = sel(up_fin, cmp_sq(hi), d(1.0)), *cl = cmp_sq(lo);
    Value *odd = b_.CreateICmpNE(b_.CreateAnd(rb, b_.getInt32(1)), b_.getInt32(0));
    Value *res = r;
    res = sel(b_.CreateAnd(b_.CreateFCmpOEQ(cl, d(0.0)), odd), dn, res);
    res = sel(b_.CreateAnd(b_.CreateFCmpOEQ(ch, d(0.0)), odd), up, res);
    res = sel(b_.CreateFCmpOGT(cl, d(0.0)), dn, res);
    res = sel(b_.CreateFCmpOLT(ch, d(0.0)), up, res);
    Value *plain = b_.CreateOr(b_.CreateNot(is_finite(r)), b_.CreateFCmpOEQ(s.hi, d(0.0)));
    res = sel(plain, r, res);
    res = sel(any_nan, llvm::ConstantFP::get(f32_, kNaN), res);
    return sel(any_inf, llvm::ConstantFP::get(f32_, kInf), res);
  }
  Value *mx = sel(b_.CreateFCmpOGT(x, y), x, y), *mn = sel(b_.CreateFCmpOGT(x, y), y, x);
  Value *special = b_.CreateOr(b_.CreateOr(any_inf, any_nan), b_.CreateFCmpOEQ(mn, d(0.0)));
  Value *plain = sel(any_inf, d(kInf), sel(any_nan, d(kNaN), mx));
  return branch(
      special, [&]() -> std::vector<Value *> { return {plain}; },
      [&]() -> std::vector<Value *> {
        Value *k = exponent(mx);
        Value *xs = scale(mx, b_.CreateNeg(k)), *ys = scale(mn, b_.CreateNeg(k));
        DD xx = two_prod(xs, xs), yy = two_prod(ys, ys);
        DD h = dd_sqrt(dd_add(xx, yy));
        return {round_dd(h, k, [&](Value *mh, Value *ml) {
          DD m2 = two_prod(mh, mh);
          Value *cross = b_.CreateFMul(d(2.0), b_.CreateFMul(mh, ml));  // exact: ml is a power of two
          return sign_of_sum({xx.hi, xx.lo, yy.hi, yy.lo, b_.CreateFNeg(m2.hi), b_.CreateFNeg(m2.lo),
                              b_.CreateFNeg(cross), b_.CreateFNeg(b_.CreateFMul(ml, ml))});
        })};
      })[0];
}

// Error-free products of two exact sums of terms (every pair, as hi and lo).
std::vector<Value *> ComplexEmitter::expand_mul(const std::vector<Value *> &a, const std::vector<Value *> &x) {
  std::vector<Value *> out;
  for (Value *p : a)
    for (Value *q : x) {
      DD t = two_prod(p, q);
      out.push_back(t.hi);
      out.push_back(t.lo);
    }
  return out;
}

// sqrt(z) (glibc's csqrt and its special cases): with z scaled by an even power of two, R = sqrt((|z| + |x|) / 2)
// and Q = |y| / (2 R) in double-double; x >= 0 gives (R, Q), x < 0 (Q, R), the imaginary part with y's sign.
// For c128 an undecided rounding of R is decided from the sign of |z| - (2 m^2 - |x|), and of Q from the sign of
// 2 m^2 |z| - (y^2 - 2 m^2 |x|) (squared where both sides are positive), all exact sums.
Value *ComplexEmitter::sqrt_cx(Value *z, int32_t dt) {
  Value *z2 = widen(z);
  Value *x = re(z2), *y = im(z2);
  Value *ax = fabs(x), *ay = fabs(y);
  // Special values first (glibc order).
  Value *nan = d(kNaN), *inf = d(kInf), *zero = d(0.0);
  Value *x_neg = b_.CreateFCmpOLT(x, zero);
  Value *y_nan = is_nan(y);
  Value *sr = sel(x_neg, sel(y_nan, nan, zero), x);
  Value *si = sel(x_neg, copysign(inf, y), sel(y_nan, nan, copysign(zero, y)));
  sr = sel(is_inf(y), inf, sel(is_inf(x), sr, nan));
  si = sel(is_inf(y), y, sel(is_inf(x), si, nan));
  Value *special = b_.CreateOr(b_.CreateOr(is_inf(y), is_inf(x)), b_.CreateOr(is_nan(x), y_nan));
  // y == 0: sqrt(|x|) on one side; x == 0: both parts sqrt(|y| / 2), with |y| / 2 or 2 |y| exact.
  Value *rx = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, ax);
  Value *yzr = sel(x_neg, zero, rx), *yzi = sel(x_neg, copysign(rx, y), copysign(zero, y));
  Value *ry =
      sel(b_.CreateFCmpOGE(ay, d(1.0)), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, b_.CreateFMul(ay, d(0.5))),
          b_.CreateFMul(b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, b_.CreateFMul(ay, d(2.0))), d(0.5)));
  Value *y_zero = b_.CreateFCmpOEQ(y, zero), *x_zero = b_.CreateFCmpOEQ(x, zero);
  sr = sel(special, sr, sel(y_zero, yzr, sel(x_zero, ry, nan)));
  si = sel(special, si, sel(y_zero, yzi, sel(x_zero, copysign(ry, y), nan)));
  Value *simple = b_.CreateOr(special, b_.CreateOr(y_zero, x_zero));
  Value *simple_v = round_to(pair(sr, si), dt);
  return branch(
      simple, [&]() -> std::vector<Value *> { return {simple_v}; },
      [&]() -> std::vector<Value *> {
        Value *mx = sel(b_.CreateFCmpOGT(ax, ay), ax, ay);
        Value *k = b_.CreateAnd(exponent(mx), b_.getInt64(~int64_t{1}));  // even, floor
        Value *xs = scale(ax, b_.CreateNeg(k)), *ys = scale(ay, b_.CreateNeg(k));
        DD xx = two_prod(xs, xs), yy = two_prod(ys, ys);
        DD s = dd_add(xx, yy);
        DD dz = dd_sqrt(s);
        DD t = dd_add_d(dz, xs);
        DD r = dd_sqrt({b_.CreateFMul(t.hi, d(0.5)), b_.CreateFMul(t.lo, d(0.5))});
        // Q from |y| scaled on its own (scaled with z it may be subnormal and lose bits).
        Value *ky = exponent(ay);
        Value *yo = scale(ay, b_.CreateNeg(ky));
        DD q = dd_div({b_.CreateFMul(yo, d(0.5)), zero}, r);
        Value *kh = b_.CreateAShr(k, 1);
        Value *kq = b_.CreateAdd(kh, b_.CreateSub(ky, k));
        Value *big, *small;
        if (dt == PK_DTYPE_C64) {
          Value *p = pow2(kh), *pq = pow2(kq);  // within f32's range: the scaling is exact
          big = dd_to_float({b_.CreateFMul(r.hi, p), b_.CreateFMul(r.lo, p)});
          small = dd_to_float({b_.CreateFMul(q.hi, pq), b_.CreateFMul(q.lo, pq)});
        } else {
          // m^2 as four exact terms: mh^2 (hi, lo), 2 mh ml, ml^2 (ml a power of two).
          auto msq = [&](Value *mh, Value *ml) {
            DD m2 = two_prod(mh, mh);
            return std::vector<Value *>{m2.hi, m2.lo, b_.CreateFMul(d(2.0), b_.CreateFMul(mh, ml)),
                                        b_.CreateFMul(ml, ml)};
          };
          auto neg = [&](std::vector<Value *> v) {
            for (Value *&e : v) e = b_.CreateFNeg(e);
            return v;
          };
          const std::vector<Value *> zsq = {xx.hi, xx.lo, yy.hi, yy.lo};
          // sign(R - m) = sign(|z| - T), T = 2 m^2 - |x|: +1 if T <= 0, else sign(|z|^2 - T^2).
          big = round_dd(r, kh, [&](Value *mh, Value *ml) {
            std::vector<Value *> tt = msq(mh, ml);
            for (Value *&e : tt) e = b_.CreateFMul(d(2.0), e);
            tt.push_back(b_.CreateFNeg(xs));
            Value *st = sign_of_sum(tt);
            std::vector<Value *> diff = zsq;
            for (Value *e : neg(expand_mul(tt, tt))) diff.push_back(e);
            return sel(b_.CreateFCmpOLE(st, zero), d(1.0), sign_of_sum(diff));
          });
          // sign(Q - m) = sign(|y| - 2 m R): with U = y^2 - 2 m^2 |x| and V = 2 m^2, sign(U - V |z|): -1 if
          // U <= 0, else sign(U^2 - V^2 |z|^2).
          DD yo2 = two_prod(yo, yo);
          small = round_dd(q, kq, [&](Value *mh, Value *ml) {
            // In q's scale |y| is yo = |y| 2^-ky, while R and |z| keep z's scale 2^-k; the relations hold with
            // yo in place of |y| 2^-k: U = yo^2 - 2 m^2 |x| 2^-k.
            std::vector<Value *> m2 = msq(mh, ml);
            std::vector<Value *> u = {yo2.hi, yo2.lo};
            for (Value *e : neg(expand_mul(m2, {b_.CreateFMul(d(2.0), xs)}))) u.push_back(e);
            std::vector<Value *> v = m2;
            for (Value *&e : v) e = b_.CreateFMul(d(2.0), e);
            Value *su = sign_of_sum(u);
            std::vector<Value *> diff = expand_mul(u, u);
            for (Value *e : neg(expand_mul(expand_mul(v, v), zsq))) diff.push_back(e);
            return sel(b_.CreateFCmpOLE(su, zero), d(-1.0), sign_of_sum(diff));
          });
        }
        Value *pos = b_.CreateNot(x_neg);
        Value *rr = sel(pos, big, small), *ri = sel(pos, small, big);
        return {pair(rr, copysign(ri, dt == PK_DTYPE_C64 ? b_.CreateFPTrunc(y, f32_) : y))};
      })[0];
}

// ------------------------------------------------------------------------------------ elementary functions

// exp(x + iy) with glibc's special values; x > 700 is split so that exp(x) alone does not overflow.
Value *ComplexEmitter::cexp(Value *z) {
  Value *x = re(z), *y = im(z);
  Value *zero = d(0.0), *nan = d(kNaN), *inf = d(kInf);
  Value *c = m_.cos(y), *s = m_.sin(y);
  Value *big = b_.CreateFCmpOGT(x, d(700.0));
  Value *ex = m_.exp(sel(big, b_.CreateFSub(x, d(700.0)), x));
  Value *e2 = sel(big, d(std::exp(700.0)), d(1.0));
  Value *fr = b_.CreateFMul(b_.CreateFMul(ex, c), e2), *fi = b_.CreateFMul(b_.CreateFMul(ex, s), e2);
  Value *y_zero = b_.CreateFCmpOEQ(y, zero);
  fr = sel(y_zero, ex, fr);  // x <= 700 here unless exp overflows anyway
  fr = sel(b_.CreateAnd(y_zero, big), b_.CreateFMul(ex, e2), fr);
  fi = sel(y_zero, y, fi);
  fr = sel(is_finite(y), fr, nan);
  fi = sel(is_finite(y), fi, nan);
  // x infinite.
  Value *xpos = b_.CreateFCmpOGT(x, zero);
  Value *v = sel(xpos, inf, zero);
  Value *ir = sel(y_zero, v, copysign(v, c)), *ii = sel(y_zero, y, copysign(v, s));
  ir = sel(is_finite(y), ir, sel(xpos, inf, zero));
  ii = sel(is_finite(y), ii, sel(xpos, nan, copysign(zero, y)));
  // x NaN.
  Value *nr = nan, *ni = sel(y_zero, y, nan);
  Value *rr = sel(is_finite(x), fr, sel(is_inf(x), ir, nr));
  Value *ri = sel(is_finite(x), fi, sel(is_inf(x), ii, ni));
  return pair(rr, ri);
}

// log|z| + i arg z. Near |z| = 1 the real part is log1p(x^2 + y^2 - 1) / 2 with x^2 + y^2 - 1 in double-double;
// elsewhere log(2^k) + log(|z| / 2^k), the squares of the scaled parts in double-double.
Value *ComplexEmitter::clog(Value *z) {
  Value *x = re(z), *y = im(z);
  Value *ax = fabs(x), *ay = fabs(y);
  Value *im_part = m_.atan2(y, x);
  Value *mx = sel(b_.CreateFCmpOGT(ax, ay), ax, ay), *mn = sel(b_.CreateFCmpOGT(ax, ay), ay, ax);
  // Near 1.
  Value *mx1 = sel(b_.CreateFCmpOLE(mx, d(2.0)), mx, d(1.0)), *mn1 = sel(b_.CreateFCmpOLT(mn, d(1.5)), mn, d(0.0));
  DD s = dd_add_d(dd_add(two_prod(mx1, mx1), two_prod(mn1, mn1)), d(-1.0));
  Value *t = b_.CreateFAdd(s.hi, s.lo);
  DD s1 = dd_add_d(s, d(1.0));
  Value *l_hi_lo;
  Value *l_hi = m_.log_dd(sel(b_.CreateFCmpOGT(s1.hi, d(0.0)), s1.hi, d(1.0)), l_hi_lo);
  DD l = dd_add_d({l_hi, l_hi_lo}, b_.CreateFDiv(s1.lo, s1.hi));
  Value *near = sel(b_.CreateFCmpOLT(fabs(t), d(0.5)), b_.CreateFMul(d(0.5), m_.log1p(t)), b_.CreateFMul(d(0.5), l.hi));
  // Elsewhere.
  Value *mxf = sel(b_.CreateFCmpOGT(mx, d(0.0)), sel(is_finite(mx), mx, d(1.0)), d(1.0));
  Value *k = exponent(mxf);
  Value *as = scale(mxf, b_.CreateNeg(k)), *bs = scale(sel(is_finite(mn), mn, d(0.0)), b_.CreateNeg(k));
  DD q = dd_add(two_prod(as, as), two_prod(bs, bs));
  Value *lq_lo;
  Value *lq_hi = m_.log_dd(q.hi, lq_lo);
  DD lq = dd_add_d({lq_hi, lq_lo}, b_.CreateFDiv(q.lo, q.hi));
  Value *kf = b_.CreateSIToFP(k, f64_);
  DD lk = dd_mul_d({d(0.6931471805599453), d(2.3190468138462996e-17)}, kf);
  DD far_dd = dd_add(lk, {b_.CreateFMul(lq.hi, d(0.5)), b_.CreateFMul(lq.lo, d(0.5))});
  Value *far = b_.CreateFAdd(far_dd.hi, far_dd.lo);
  Value *use_near = b_.CreateAnd(b_.CreateAnd(b_.CreateFCmpOGE(mx, d(0.5)), b_.CreateFCmpOLE(mx, d(2.0))),
                                 b_.CreateFCmpOLT(mn, d(1.5)));
  Value *rr = sel(use_near, near, far);
  Value *any_inf = b_.CreateOr(is_inf(ax), is_inf(ay));
  rr = sel(b_.CreateFCmpOEQ(mx, d(0.0)), d(-kInf), rr);
  rr = sel(any_inf, d(kInf), rr);
  Value *any_nan = b_.CreateOr(is_nan(x), is_nan(y));
  rr = sel(any_nan, sel(any_inf, d(kInf), d(kNaN)), rr);
  Value *ri = sel(any_nan, d(kNaN), im_part);
  return pair(rr, ri);
}

// cosh and sinh of x + iy with glibc's special cases; |x| > 700 scaled through e^701 / 2.
Value *ComplexEmitter::cosh_sinh(Value *z, bool is_cosh) {
  Value *x = re(z), *y = im(z);
  Value *zero = d(0.0), *nan = d(kNaN), *inf = d(kInf), *one = d(1.0);
  Value *c = m_.cos(y), *s = m_.sin(y);
  Value *sx = copysign(one, x);
  Value *big = b_.CreateFCmpOGT(fabs(x), d(700.0));
  Value *e = b_.CreateFMul(m_.exp(b_.CreateFSub(sel(big, fabs(x), d(701.0)), d(701.0))), d(0.5));
  Value *e2 = d(std::exp(701.0));
  Value *ch = m_.cosh(sel(big, zero, x)), *sh = m_.sinh(sel(big, zero, x));
  Value *fr, *fi;
  if (is_cosh) {
    fr = sel(big, b_.CreateFMul(b_.CreateFMul(e, c), e2), b_.CreateFMul(ch, c));
    fi = sel(big, b_.CreateFMul(sx, b_.CreateFMul(b_.CreateFMul(e, s), e2)), b_.CreateFMul(sh, s));
  } else {
    fr = sel(big, b_.CreateFMul(sx, b_.CreateFMul(b_.CreateFMul(e, c), e2)), b_.CreateFMul(sh, c));
    fi = sel(big, b_.CreateFMul(b_.CreateFMul(e, s), e2), b_.CreateFMul(ch, s));
  }
  Value *x_zero = b_.CreateFCmpOEQ(x, zero), *y_zero = b_.CreateFCmpOEQ(y, zero);
  Value *ymy = b_.CreateFSub(y, y);  // NaN for infinite or NaN y
  // x finite, y not.
  Value *nr = is_cosh ? ymy : sel(x_zero, x, nan);
  Value *ni = is_cosh ? sel(x_zero, zero, nan) : sel(x_zero, ymy, nan);
  fr = sel(is_finite(y), fr, nr);
  fi = sel(is_finite(y), fi, ni);
  // x infinite.
  Value *ir, *ii;
  if (is_cosh) {
    ir = sel(y_zero, inf, copysign(inf, c));
    ii = sel(y_zero, b_.CreateFMul(y, sx), b_.CreateFMul(copysign(inf, s), sx));
    ir = sel(is_finite(y), ir, inf);
    ii = sel(is_finite(y), ii, ymy);
  } else {
    ir = sel(y_zero, x, b_.CreateFMul(copysign(inf, c), sx));
    ii = sel(y_zero, y, copysign(inf, s));
    ir = sel(is_finite(y), ir, x);
    ii = sel(is_finite(y), ii, ymy);
  }
  // x NaN.
  Value *xr = nan, *xi = sel(y_zero, y, nan);
  return pair(sel(is_finite(x), fr, sel(is_inf(x), ir, xr)), sel(is_finite(x), fi, sel(is_inf(x), ii, xi)));
}

// tanh per glibc's ctanh: sinh x cosh x / den and sin y cos y / den with den = sinh^2 x + cos^2 y, and its
// large-|x| branch.
Value *ComplexEmitter::ctanh(Value *z) {
  Value *x = re(z), *y = im(z);
  Value *zero = d(0.0), *one = d(1.0);
  const double t = 18.714973875118524;
  const double tiny = 0x1p-1022;
  Value *ys = sel(is_finite(y), y, zero);
  Value *sy0 = m_.sin(ys), *cy0 = m_.cos(ys);
  Value *ytiny = b_.CreateFCmpOLE(fabs(y), d(tiny));
  Value *sy = sel(ytiny, y, sy0), *cy = sel(ytiny, one, cy0);
  // Large |x|.
  Value *e2t = d(std::exp(2.0 * t));
  Value *ax = b_.CreateFSub(fabs(x), d(t));
  Value *imb = b_.CreateFDiv(b_.CreateFMul(b_.CreateFMul(d(4.0), sy), cy), e2t);
  Value *xb = sel(is_finite(x), ax, zero);
  imb = sel(b_.CreateFCmpOGT(xb, d(t)), b_.CreateFDiv(imb, e2t),
            b_.CreateFDiv(imb, m_.exp(b_.CreateFMul(d(2.0), sel(b_.CreateFCmpOGT(xb, d(t)), zero, xb)))));
  // Moderate |x|.
  Value *xm = sel(b_.CreateFCmpOGT(fabs(x), d(t)), zero, x);
  Value *xtiny = b_.CreateFCmpOLE(fabs(x), d(tiny));
  Value *sx = sel(xtiny, x, m_.sinh(xm)), *chx = sel(xtiny, one, m_.cosh(xm));
  // Products, den and the quotients in double-double: one rounding at the end on top of the four functions'.
  DD den = dd_add(two_prod(sx, sx), two_prod(cy, cy));
  Value *mr = dd_div(two_prod(sx, chx), den).hi, *mi = dd_div(two_prod(sy, cy), den).hi;
  Value *large = b_.CreateFCmpOGT(fabs(x), d(t));
  Value *fr = sel(large, copysign(one, x), mr), *fi = sel(large, imb, mi);
  // Non-finite parts.
  Value *iim = sel(b_.CreateAnd(is_finite(y), b_.CreateFCmpOGT(fabs(y), one)), copysign(zero, b_.CreateFMul(sy0, cy0)),
                   copysign(zero, y));
  Value *nan = d(kNaN);
  Value *y_zero = b_.CreateFCmpOEQ(y, zero);
  Value *or_ = sel(is_inf(x), copysign(one, x), sel(y_zero, x, sel(b_.CreateFCmpOEQ(x, zero), x, nan)));
  Value *oi = sel(is_inf(x), iim, sel(y_zero, y, nan));
  Value *fin = b_.CreateAnd(is_finite(x), is_finite(y));
  return pair(sel(fin, fr, or_), sel(fin, fi, oi));
}

// a^b as the oracle defines it: 1 for b = 0, 0 for a = 0 with a real b > 0, else exp(b log a).
Value *ComplexEmitter::cpow(Value *a, Value *x) {
  Value *l = clog(a);
  Value *p = mul_g(re(x), im(x), re(l), im(l));
  Value *r = cexp(p);
  Value *zero = d(0.0);
  Value *b_zero = b_.CreateAnd(b_.CreateFCmpOEQ(re(x), zero), b_.CreateFCmpOEQ(im(x), zero));
  Value *a_zero = b_.CreateAnd(b_.CreateFCmpOEQ(re(a), zero), b_.CreateFCmpOEQ(im(a), zero));
  Value *pos_real = b_.CreateAnd(b_.CreateFCmpOEQ(im(x), zero), b_.CreateFCmpOGT(re(x), zero));
  r = sel(b_.CreateAnd(a_zero, pos_real), pair(zero, zero), r);
  return sel(b_zero, pair(d(1.0), zero), r);
}

// --- c128 pow: exp(b log a) with log a, the product and the phase in double-double (the OpenCL backend's
// algorithm). The result's relative error is about the absolute error of w = b log a, so w must be good to
// ~2^-56 absolutely, which double alone (whose w errs by |w| 2^-53) misses for every |w| above a few.

// An IR loop over k = from .. to (inclusive, either direction), carrying `init` through `body`.
std::vector<Value *> ComplexEmitter::repeat(int from, int to, const std::vector<Value *> &init, const Body &body) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::LLVMContext &ctx = f->getContext();
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  auto *head = llvm::BasicBlock::Create(ctx, "cx_loop", f);
  auto *exit = llvm::BasicBlock::Create(ctx, "cx_loop_end", f);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode *k = b_.CreatePHI(i64_, 2);
  k->addIncoming(b_.getInt64(static_cast<uint64_t>(from)), pre);
  std::vector<llvm::PHINode *> phis;
  std::vector<Value *> cur;
  for (Value *v : init) {
    phis.push_back(b_.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, pre);
    cur.push_back(phis.back());
  }
  std::vector<Value *> next = body(k, cur);
  Value *kn = b_.CreateAdd(k, b_.getInt64(static_cast<uint64_t>(to >= from ? 1 : -1)));
  Value *done = b_.CreateICmpEQ(k, b_.getInt64(static_cast<uint64_t>(to)));
  llvm::BasicBlock *latch = b_.GetInsertBlock();
  k->addIncoming(kn, latch);
  for (size_t i = 0; i < phis.size(); ++i) phis[i]->addIncoming(next[i], latch);
  b_.CreateCondBr(done, exit, head);
  b_.SetInsertPoint(exit);
  return next;
}

ComplexEmitter::DD ComplexEmitter::dd_div_d(DD a, Value *x) {
  Value *q = b_.CreateFDiv(a.hi, x);
  DD p = two_prod(q, x);
  return fast_two_sum(q, b_.CreateFDiv(b_.CreateFAdd(b_.CreateFSub(b_.CreateFSub(a.hi, p.hi), p.lo), a.lo), x));
}

// log x = e ln2 + 2 atanh(s), x = m 2^e with m in [sqrt(1/2), sqrt(2)), s = (m - 1) / (m + 1) (|s| < 0.172): the
// odd series in double-double, each coefficient 1/n as a double-double.
ComplexEmitter::DD ComplexEmitter::dd_log(Value *x) {
  Value *e = exponent(x);
  Value *m = scale(x, b_.CreateNeg(e));  // [1, 2)
  Value *top = b_.CreateFCmpOGE(m, d(M_SQRT2));
  m = sel(top, b_.CreateFMul(m, d(0.5)), m);
  e = sel(top, b_.CreateAdd(e, b_.getInt64(1)), e);
  DD s = dd_div({b_.CreateFSub(m, d(1.0)), d(0.0)}, two_sum(m, d(1.0)));
  DD s2 = dd_mul(s, s);
  std::vector<Value *> t = repeat(17, 0, {d(0.0), d(0.0)}, [&](Value *k, const std::vector<Value *> &acc) {
    Value *n = b_.CreateSIToFP(b_.CreateAdd(b_.CreateMul(k, b_.getInt64(2)), b_.getInt64(1)), f64_);
    Value *inv = b_.CreateFDiv(d(1.0), n);
    Value *lo = b_.CreateFDiv(b_.CreateFNeg(fma(inv, n, d(-1.0))), n);
    DD r = dd_add(dd_mul({acc[0], acc[1]}, s2), {inv, lo});
    return std::vector<Value *>{r.hi, r.lo};
  });
  const DD ln2 = {d(0.6931471805599453), d(2.3190468138462996e-17)};
  return dd_add(dd_mul_d(ln2, b_.CreateSIToFP(e, f64_)), dd_scale(dd_mul(s, {t[0], t[1]}), d(2.0)));
}
// log of a double-double: log(hi) + log1p(lo / hi), the second to first order.
ComplexEmitter::DD ComplexEmitter::dd_log_dd(DD x) {
  return dd_add_d(dd_log(x.hi), b_.CreateFDiv(x.lo, x.hi));
}
// log1p of a double-double: 2 atanh(s / (2 + s)) by its odd series where |s| < 1/4, else log(1 + s).
ComplexEmitter::DD ComplexEmitter::dd_log1p_dd(DD s) {
  std::vector<Value *> r = branch(
      b_.CreateFCmpOGE(fabs(s.hi), d(0.25)),
      [&]() -> std::vector<Value *> {
        DD l = dd_log_dd(dd_add_d(s, d(1.0)));
        return {l.hi, l.lo};
      },
      [&]() -> std::vector<Value *> {
        DD t = dd_div(s, dd_add_d(s, d(2.0)));
        DD t2 = dd_mul(t, t);
        std::vector<Value *> sum = repeat(20, 0, {d(0.0), d(0.0)}, [&](Value *k, const std::vector<Value *> &acc) {
          Value *n = b_.CreateSIToFP(b_.CreateAdd(b_.CreateMul(k, b_.getInt64(2)), b_.getInt64(1)), f64_);
          Value *inv = b_.CreateFDiv(d(1.0), n);
          Value *lo = b_.CreateFDiv(b_.CreateFNeg(fma(inv, n, d(-1.0))), n);
          DD v = dd_add(dd_mul({acc[0], acc[1]}, t2), {inv, lo});
          return std::vector<Value *>{v.hi, v.lo};
        });
        DD l = dd_scale(dd_mul(t, {sum[0], sum[1]}), d(2.0));
        return {l.hi, l.lo};
      });
  return {r[0], r[1]};
}

// sin and cos of |t| <= pi/4 + tiny: Taylor series to t^29 / 29! (below 2^-104 of the result).
void ComplexEmitter::dd_sincos_small(DD t, DD &s, DD &c) {
  DD t2 = dd_mul(t, t);
  std::vector<Value *> r = repeat(
      1, 14, {t.hi, t.lo, d(1.0), d(0.0), t.hi, t.lo, d(1.0), d(0.0)}, [&](Value *k, const std::vector<Value *> &a) {
        Value *kf = b_.CreateSIToFP(k, f64_);
        Value *k2 = b_.CreateFMul(kf, d(2.0));
        DD ts = dd_div_d(dd_mul({a[4], a[5]}, t2), b_.CreateFMul(k2, b_.CreateFAdd(k2, d(1.0))));
        DD tc = dd_div_d(dd_mul({a[6], a[7]}, t2), b_.CreateFMul(b_.CreateFSub(k2, d(1.0)), k2));
        Value *odd = b_.CreateICmpNE(b_.CreateAnd(k, b_.getInt64(1)), b_.getInt64(0));
        Value *sg = sel(odd, d(-1.0), d(1.0));
        DD sv = dd_add({a[0], a[1]}, dd_scale(ts, sg)), cv = dd_add({a[2], a[3]}, dd_scale(tc, sg));
        return std::vector<Value *>{sv.hi, sv.lo, cv.hi, cv.lo, ts.hi, ts.lo, tc.hi, tc.lo};
      });
  s = {r[0], r[1]};
  c = {r[2], r[3]};
}
// sin and cos of a double-double angle with |a| < 2^30: a - k pi/2 with pi/2 in three parts (k pi/2's error stays
// ~2^-134), then the series and the quarter turn k mod 4.
void ComplexEmitter::dd_sincos(DD a, DD &s, DD &c) {
  Value *k = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(a.hi, d(0x1.45f306dc9c883p-1)));
  DD r = dd_sub(a, two_prod(k, d(0x1.921fb54442d18p0)));
  r = dd_sub(r, two_prod(k, d(0x1.1a62633145c07p-54)));
  r = dd_add_d(r, b_.CreateFMul(k, d(0x1.f1976b7ed8fbcp-110)));
  DD sr, cr;
  dd_sincos_small(r, sr, cr);
  // k is an integer below 2^30 here (callers keep |a| < 2^30; NaN is sent to 0).
  Value *kk = sel(b_.CreateFCmpOLE(fabs(k), d(0x1p31)), k, d(0.0));
  Value *q = b_.CreateAnd(b_.CreateFPToSI(kk, i64_), b_.getInt64(3));
  auto neg = [&](DD v) { return DD{b_.CreateFNeg(v.hi), b_.CreateFNeg(v.lo)}; };
  auto pick = [&](DD v0, DD v1, DD v2, DD v3) {
    auto one = [&](Value *x0, Value *x1, Value *x2, Value *x3) {
      return sel(b_.CreateICmpEQ(q, b_.getInt64(0)), x0,
                 sel(b_.CreateICmpEQ(q, b_.getInt64(1)), x1, sel(b_.CreateICmpEQ(q, b_.getInt64(2)), x2, x3)));
    };
    return DD{one(v0.hi, v1.hi, v2.hi, v3.hi), one(v0.lo, v1.lo, v2.lo, v3.lo)};
  };
  s = pick(sr, cr, neg(sr), neg(cr));
  c = pick(cr, neg(sr), neg(cr), sr);
}

// log z of a finite nonzero z in double-double: log|z| (near |z| = 1 as log1p(x^2 + y^2 - 1) / 2 with exact
// squares), and arg z = atan2(y, x) refined by one Newton step: theta0 + (y cos theta0 - x sin theta0) / |z|, whose
// terms scale with |y| where theta is small (relative accuracy there too).
void ComplexEmitter::clog_dd(Value *x, Value *y, DD &re_out, DD &im_out) {
  Value *ax = fabs(x), *ay = fabs(y);
  Value *mx = sel(b_.CreateFCmpOGT(ax, ay), ax, ay), *mn = sel(b_.CreateFCmpOGT(ax, ay), ay, ax);
  Value *k = exponent(mx);
  Value *near = b_.CreateAnd(b_.CreateAnd(b_.CreateFCmpOGE(mx, d(0.5)), b_.CreateFCmpOLE(mx, d(2.0))),
                             b_.CreateFCmpOLT(mn, d(1.5)));
  std::vector<Value *> l = branch(
      near,
      [&]() -> std::vector<Value *> {
        DD s = dd_add_d(dd_add(two_prod(mx, mx), two_prod(mn, mn)), d(-1.0));
        DD r = dd_scale(dd_log1p_dd(s), d(0.5));
        return {r.hi, r.lo};
      },
      [&]() -> std::vector<Value *> {
        Value *a = scale(mx, b_.CreateNeg(k)), *bb = scale(mn, b_.CreateNeg(k));
        DD s = dd_add(two_prod(a, a), two_prod(bb, bb));
        const DD ln2 = {d(0.6931471805599453), d(2.3190468138462996e-17)};
        DD r = dd_add(dd_mul_d(ln2, b_.CreateSIToFP(k, f64_)), dd_scale(dd_log_dd(s), d(0.5)));
        return {r.hi, r.lo};
      });
  re_out = {l[0], l[1]};
  Value *theta = m_.atan2(y, x);
  Value *xs = scale(x, b_.CreateNeg(k)), *ys = scale(y, b_.CreateNeg(k));
  DD st, ct;
  dd_sincos({theta, d(0.0)}, st, ct);
  DD num = dd_sub(dd_mul_d(ct, ys), dd_mul_d(st, xs));
  Value *mod = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, fma(xs, xs, b_.CreateFMul(ys, ys)));
  im_out = fast_two_sum(theta, b_.CreateFDiv(b_.CreateFAdd(num.hi, num.lo), mod));
}

// e^(wr + i wi) = 2^k e^r cis(wi) with r = wr - k ln2: e^r in double-double (exp refined by one Newton step on the
// double-double log) times the double-double cis, rounded once by ldexp_dd (exact scaling, subnormals included).
// Beyond |wi| = 2^30 the phase from the f64 sin and cos.
Value *ComplexEmitter::cexp_dd(DD wr, DD wi) {
  Value *small = b_.CreateFCmpOLT(fabs(wi.hi), d(0x1p30));
  DD s, c;
  dd_sincos({sel(small, wi.hi, d(0.0)), sel(small, wi.lo, d(0.0))}, s, c);
  Value *big_wi = sel(small, d(0.0), wi.hi);
  s = {sel(small, s.hi, m_.sin(big_wi)), sel(small, s.lo, d(0.0))};
  c = {sel(small, c.hi, m_.cos(big_wi)), sel(small, c.lo, d(0.0))};
  Value *kf = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(wr.hi, d(1.4426950408889634)));
  // Far out of range: an infinity or a zero whatever the phase (a real power: no 0 * inf). NaN stays in range
  // (k = 0), where it gives NaN.
  Value *far = b_.CreateFCmpOGT(fabs(kf), d(2000.0));
  Value *in = b_.CreateFCmpOLE(fabs(kf), d(2000.0));
  Value *kc = sel(in, kf, d(0.0));
  const DD ln2 = {d(0.6931471805599453), d(2.3190468138462996e-17)};
  DD r = dd_sub(wr, dd_mul_d(ln2, kc));
  Value *er = m_.exp(r.hi);
  DD dl = dd_sub(r, dd_log(sel(b_.CreateFCmpOGT(er, d(0.0)), er, d(1.0))));
  DD e = fast_two_sum(er, b_.CreateFMul(er, b_.CreateFAdd(dl.hi, dl.lo)));
  Value *ki = b_.CreateFPToSI(kc, i64_);
  Value *wi0 = b_.CreateFCmpOEQ(wi.hi, d(0.0));
  Value *rr = sel(wi0, ldexp_dd(e, ki), ldexp_dd(dd_mul(e, c), ki));
  Value *ri = sel(wi0, wi.hi, ldexp_dd(dd_mul(e, s), ki));
  Value *ef = sel(b_.CreateFCmpOGT(kf, d(0.0)), d(kInf), d(0.0));
  Value *fr = sel(wi0, ef, b_.CreateFMul(ef, b_.CreateFAdd(c.hi, c.lo)));
  Value *fi = sel(wi0, wi.hi, b_.CreateFMul(ef, b_.CreateFAdd(s.hi, s.lo)));
  return pair(sel(far, fr, rr), sel(far, fi, ri));
}

// c128 a^b (a, x: (f64, f64) pairs) with cpow's cases. The oracle's w = b log a is wider than f64: no product of
// finite parts overflows there, so a huge b is scaled by 2^-kb on the way. Non-finite operands and a = 0: w with
// Annex G's recovery, then cexp's special values. Otherwise log a, w and the phase in double-double; where w's
// real part is beyond exp's range the result is 0 or a complex infinity whatever the phase; where |Im w| >= 2^26 or
// Re w's products cancel, the exact path (cpow_exact).
Value *ComplexEmitter::cpow128(Value *a, Value *x) {
  Value *ar = re(a), *ai = im(a), *br = re(x), *bi = im(x);
  Value *zero = d(0.0);
  Value *abr = sel(is_finite(br), fabs(br), zero), *abi = sel(is_finite(bi), fabs(bi), zero);
  Value *bm = sel(b_.CreateFCmpOGT(abr, abi), abr, abi);
  Value *kb =
      sel(b_.CreateFCmpOGT(bm, d(0x1p900)), exponent(sel(b_.CreateFCmpOGT(bm, zero), bm, d(1.0))), b_.getInt64(0));
  Value *a_zero = b_.CreateAnd(b_.CreateFCmpOEQ(ar, zero), b_.CreateFCmpOEQ(ai, zero));
  Value *a_fin = b_.CreateAnd(is_finite(ar), is_finite(ai));
  Value *fin = b_.CreateAnd(a_fin, b_.CreateAnd(is_finite(br), is_finite(bi)));
  Value *r = branch(
      b_.CreateOr(b_.CreateNot(fin), a_zero),
      [&]() -> std::vector<Value *> {
        Value *l = clog(a);
        Value *lr = re(l), *li = im(l);
        // Parts of log a below f64's range are not 0 in the oracle: an infinite b part times them is infinite,
        // not NaN. Their signs are those of y (arg) and of |a| - 1 (> 0: |a| = 1 only exactly).
        li = sel(b_.CreateAnd(a_fin, b_.CreateAnd(b_.CreateFCmpOEQ(li, zero), b_.CreateFCmpONE(ai, zero))),
                 copysign(d(0x1p-1074), ai), li);
        lr =
            sel(b_.CreateAnd(a_fin, b_.CreateAnd(b_.CreateFCmpOEQ(lr, zero),
                                                 b_.CreateAnd(b_.CreateFCmpONE(ar, zero), b_.CreateFCmpONE(ai, zero)))),
                d(0x1p-1074), lr);
        Value *w = mul_g(br, bi, lr, li, kb);
        // Back to w: finite values beyond f64's range stay finite (the largest double): exp gives the same 0 or
        // infinity, and the phase is arbitrary in both.
        auto back = [&](Value *v) {
          Value *s = scale(v, kb);
          return sel(is_finite(v), sel(is_inf(s), copysign(d(std::numeric_limits<double>::max()), v), s), v);
        };
        return {cexp(pair(back(re(w)), back(im(w))))};
      },
      [&]() -> std::vector<Value *> {
        Value *bx = scale(br, b_.CreateNeg(kb)), *by = scale(bi, b_.CreateNeg(kb));
        DD lr, li;
        clog_dd(ar, ai, lr, li);
        DD wr = dd_sub(dd_mul_d(lr, bx), dd_mul_d(li, by));
        DD wi = dd_add(dd_mul_d(li, bx), dd_mul_d(lr, by));
        // Beyond |Im w| = 2^26 the phase, and where Re w's two products (each good to ~2^-90 of itself) cancel,
        // Re w, need the exact path.
        Value *mb = sel(b_.CreateFCmpOGT(fabs(bx), fabs(by)), fabs(bx), fabs(by));
        Value *ml = sel(b_.CreateFCmpOGT(fabs(lr.hi), fabs(li.hi)), fabs(lr.hi), fabs(li.hi));
        Value *terms = scale(b_.CreateFMul(mb, ml), kb);
        Value *cancel = b_.CreateAnd(
            b_.CreateFCmpOGE(terms, d(0x1p26)),
            b_.CreateFCmpOLE(scale(fabs(wr.hi), kb), b_.CreateFAdd(d(0x1p12), b_.CreateFMul(terms, d(0x1p-90)))));
        Value *exact = b_.CreateOr(b_.CreateFCmpOGE(scale(fabs(wi.hi), kb), d(0x1p26)), cancel);
        return branch(
            exact, [&]() -> std::vector<Value *> { return {cpow_exact(a, x)}; },
            [&]() -> std::vector<Value *> {
              Value *scaled = b_.CreateICmpSGT(kb, b_.getInt64(0));
              Value *rehi = scale(wr.hi, kb);
              Value *under = b_.CreateAnd(scaled, b_.CreateFCmpOLT(rehi, d(-746.0)));
              Value *over = b_.CreateAnd(scaled, b_.CreateFCmpOGT(rehi, d(710.0)));
              wr = {sel(scaled, rehi, wr.hi), sel(scaled, scale(wr.lo, kb), wr.lo)};
              wi = {sel(scaled, scale(wi.hi, kb), wi.hi), sel(scaled, scale(wi.lo, kb), wi.lo)};
              Value *v = cexp_dd(wr, wi);
              v = sel(under, pair(zero, zero), v);
              return {sel(over, pair(d(kInf), d(kInf)), v)};
            });
      })[0];
  Value *b_zero = b_.CreateAnd(b_.CreateFCmpOEQ(br, zero), b_.CreateFCmpOEQ(bi, zero));
  Value *pos_real = b_.CreateAnd(b_.CreateFCmpOEQ(bi, zero), b_.CreateFCmpOGT(br, zero));
  r = sel(b_.CreateAnd(a_zero, pos_real), pair(zero, zero), r);
  return sel(b_zero, pair(d(1.0), zero), r);
}

// --- pow's exact path where b log a is huge (the OpenCL backend's pk_cpow_exact). Beyond |b log a| ~ 2^26
// double-double no longer holds the phase Im(b log a) mod 2 pi (its error is |b log a| 2^-104 radians before the
// reduction): log a and b log a are then computed in fixed point, in 32-bit words (least significant first) with
// fl words below the point and two's complement signs, at |log2 |b|| + 110 bits below the point; the phase is
// taken as a fraction of a turn (b log a / (2 pi), modulo 1), and Re(b log a) exactly, however its two products
// cancel. Up to 36 words below the point (|b| near 2^1024), so each helper is a function of its own in the module
// (internal, not inlined; its loops stay loops and its word arrays are stack arrays of at most kWords words):
// the code stays small, and only the few elements with such a b call it.
class BigNumEmitter {
 public:
  explicit BigNumEmitter(ComplexEmitter &c)
      : c_(c),
        b_(c.b_),
        ctx_(c.b_.getContext()),
        i32_(b_.getInt32Ty()),
        i64_(b_.getInt64Ty()),
        f64_(c.f64_),
        ptr_(b_.getPtrTy()) {}

  // a^b through the module's exact-path function (built on first use).
  Value *cpow_exact(Value *a, Value *x) {
    auto *vt = llvm::FixedVectorType::get(f64_, 2);
    llvm::Function *f = fn("pk_cpow_exact", vt, {f64_, f64_, f64_, f64_}, [&](llvm::Function *g) {
      Value *ar = g->getArg(0), *ai = g->getArg(1), *br = g->getArg(2), *bi = g->getArg(3);
      Value *lr = arr(), *li = arr(), *cc = arr(), *wl = arr(), *wa = arr(), *bx = arr(), *by = arr(), *p = arr(),
            *q = arr();
      Value *bm = c_.sel(b_.CreateFCmpOGT(c_.fabs(br), c_.fabs(bi)), c_.fabs(br), c_.fabs(bi));
      Value *eb = b_.CreateTrunc(b_.CreateAdd(c_.exponent(bm), b_.getInt64(1)), i32_);
      eb = c_.sel(b_.CreateICmpSLT(eb, k(0)), k(0), eb);
      Value *fl = b_.CreateSDiv(b_.CreateAdd(eb, k(110 + 31)), k(32));
      Value *n = b_.CreateAdd(fl, k(1));
      Value *nw = b_.CreateAdd(b_.CreateAdd(fl, b_.CreateSDiv(b_.CreateAdd(eb, k(12)), k(32))), k(2));
      clog(lr, li, ar, ai, n, fl);
      from_double(bx, br, nw, fl);
      from_double(by, bi, nw, fl);
      // Re(b log a) = bx log|a| - by arg a
      widen(wl, lr, n, nw);
      widen(wa, li, n, nw);
      mul(p, bx, wl, nw, fl);
      mul(q, by, wa, nw, fl);
      sub(p, p, q, nw);
      Value *neg = negative(p, nw);
      Value *fill = c_.sel(neg, k(-1), k(0));
      Value *big = var(b_.getInt1Ty(), b_.getFalse());  // |Re| >= 2^32: exp gives 0 or infinity whatever the phase
      loop(b_.CreateAdd(fl, k(1)), nw,
           [&](Value *i) { set(big, b_.CreateOr(get(big), b_.CreateICmpNE(word(p, i), fill))); });
      ComplexEmitter::DD pr = to_dd(p, nw, fl);
      Value *bg = get(big);
      ComplexEmitter::DD wr = {c_.sel(bg, c_.sel(neg, c_.d(-0x1p40), c_.d(0x1p40)), pr.hi),
                               c_.sel(bg, c_.d(0.0), pr.lo)};
      // Im(b log a) / (2 pi) = bx arg a / (2 pi) + by log|a| / (2 pi); the fraction words are the turn.
      constant(cc, table("pk_bn_inv_2pi", pk::kit::special::kInvTwoPiFraction), n, fl);
      mul(p, li, cc, n, fl);
      widen(wa, p, n, nw);
      mul(p, lr, cc, n, fl);
      widen(wl, p, n, nw);
      mul(p, bx, wa, nw, fl);
      mul(q, by, wl, nw, fl);
      add(p, p, q, nw);
      zero(q, nw);
      copy(q, p, fl);
      ComplexEmitter::DD turn = to_dd(q, nw, fl);
      ComplexEmitter::DD tm = c_.dd_add_d(turn, c_.d(-1.0));
      Value *up = b_.CreateFCmpOGE(turn.hi, c_.d(0.5));
      turn = {c_.sel(up, tm.hi, turn.hi), c_.sel(up, tm.lo, turn.lo)};
      ComplexEmitter::DD phase = c_.dd_mul(turn, {c_.d(6.283185307179586), c_.d(2.4492935982947064e-16)});
      b_.CreateRet(c_.cexp_dd(wr, phase));
    });
    return b_.CreateCall(f, {c_.re(a), c_.im(a), c_.re(x), c_.im(x)});
  }

 private:
  static constexpr int kWords = 72;
  using Body = std::function<void(llvm::Function *)>;

  // The module's function `name`, built by `body` (which emits its return) on first use.
  llvm::Function *fn(const char *name, llvm::Type *ret, const std::vector<llvm::Type *> &params, const Body &body) {
    llvm::Module *m = b_.GetInsertBlock()->getModule();
    if (llvm::Function *f = m->getFunction(name)) return f;
    auto *f =
        llvm::Function::Create(llvm::FunctionType::get(ret, params, false), llvm::Function::InternalLinkage, name, m);
    f->addFnAttr(llvm::Attribute::NoInline);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    body(f);
    return f;
  }
  llvm::Function *proc(const char *name, const std::vector<llvm::Type *> &params, const Body &body) {
    return fn(name, b_.getVoidTy(), params, [&](llvm::Function *f) {
      body(f);
      b_.CreateRetVoid();
    });
  }
  // A constant word table (most significant first) in the module.
  Value *table(const char *name, const std::uint32_t (&words)[40]) {
    llvm::Module *m = b_.GetInsertBlock()->getModule();
    if (llvm::GlobalVariable *g = m->getGlobalVariable(name, true)) return g;
    auto *init = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<std::uint32_t>(words));
    return new llvm::GlobalVariable(*m, init->getType(), true, llvm::GlobalValue::InternalLinkage, init, name);
  }

  Value *k(int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }
  // Stack storage in the current function's entry block: a word array, or a variable (set to init here).
  Value *arr(int words = kWords) {
    llvm::BasicBlock &entry = b_.GetInsertBlock()->getParent()->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
    return eb.CreateAlloca(llvm::ArrayType::get(i32_, static_cast<uint64_t>(words)));
  }
  Value *var(llvm::Type *t, Value *init) {
    llvm::BasicBlock &entry = b_.GetInsertBlock()->getParent()->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
    Value *v = eb.CreateAlloca(t);
    b_.CreateStore(init, v);
    return v;
  }
  Value *get(Value *v) { return b_.CreateLoad(llvm::cast<llvm::AllocaInst>(v)->getAllocatedType(), v); }
  void set(Value *v, Value *x) { b_.CreateStore(x, v); }
  Value *word(Value *a, Value *i) { return b_.CreateLoad(i32_, b_.CreateGEP(i32_, a, i)); }
  void put(Value *a, Value *i, Value *x) { b_.CreateStore(x, b_.CreateGEP(i32_, a, i)); }
  Value *wide(Value *w) { return b_.CreateZExt(w, i64_); }
  Value *narrow(Value *c) { return b_.CreateTrunc(c, i32_); }
  Value *lt(Value *x, Value *y) { return b_.CreateICmpSLT(x, y); }
  Value *min(Value *x, Value *y) { return c_.sel(lt(x, y), x, y); }
  // i = from .. to - 1 (i32), an IR loop.
  void loop(Value *from, Value *to, const std::function<void(Value *)> &body) {
    llvm::Function *f = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    auto *head = llvm::BasicBlock::Create(ctx_, "bn_loop", f);
    auto *exit = llvm::BasicBlock::Create(ctx_, "bn_loop_end", f);
    b_.CreateCondBr(lt(from, to), head, exit);
    b_.SetInsertPoint(head);
    llvm::PHINode *i = b_.CreatePHI(i32_, 2);
    i->addIncoming(from, pre);
    body(i);
    Value *next = b_.CreateAdd(i, k(1));
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(lt(next, to), head, exit);
    b_.SetInsertPoint(exit);
  }
  void when(Value *cond, const std::function<void()> &body) {
    llvm::Function *f = b_.GetInsertBlock()->getParent();
    auto *then = llvm::BasicBlock::Create(ctx_, "bn_then", f);
    auto *join = llvm::BasicBlock::Create(ctx_, "bn_join", f);
    b_.CreateCondBr(cond, then, join);
    b_.SetInsertPoint(then);
    body();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }
  // The word a[i] where 0 <= i < n, else `fill` (nothing is read outside the array).
  Value *word_or(Value *a, Value *i, Value *n, Value *fill) {
    Value *in = b_.CreateAnd(b_.CreateICmpSGE(i, k(0)), lt(i, n));
    return c_.sel(in, word(a, c_.sel(in, i, k(0))), fill);
  }
  Value *negative(Value *a, Value *n) { return b_.CreateICmpSLT(word(a, b_.CreateSub(n, k(1))), k(0)); }
  Value *fill_of(Value *a, Value *n) { return c_.sel(negative(a, n), k(-1), k(0)); }

  // --- the word-array helpers, each a call of its function.
  void zero(Value *r, Value *n) {
    b_.CreateCall(
        proc("pk_bn_zero", {ptr_, i32_},
             [&](llvm::Function *f) { loop(k(0), f->getArg(1), [&](Value *i) { put(f->getArg(0), i, k(0)); }); }),
        {r, n});
  }
  void copy(Value *r, Value *a, Value *n) {
    b_.CreateCall(proc("pk_bn_copy", {ptr_, ptr_, i32_},
                       [&](llvm::Function *f) {
                         loop(k(0), f->getArg(2), [&](Value *i) { put(f->getArg(0), i, word(f->getArg(1), i)); });
                       }),
                  {r, a, n});
  }
  Value *is_zero(Value *a, Value *n) {
    llvm::Function *f = fn("pk_bn_is_zero", b_.getInt1Ty(), {ptr_, i32_}, [&](llvm::Function *g) {
      Value *any = var(i32_, k(0));
      loop(k(0), g->getArg(1), [&](Value *i) { set(any, b_.CreateOr(get(any), word(g->getArg(0), i))); });
      b_.CreateRet(b_.CreateICmpEQ(get(any), k(0)));
    });
    return b_.CreateCall(f, {a, n});
  }
  void negate(Value *r, Value *n) {
    b_.CreateCall(proc("pk_bn_negate", {ptr_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *c = var(i64_, b_.getInt64(1));
                         loop(k(0), f->getArg(1), [&](Value *i) {
                           Value *s = b_.CreateAdd(get(c), wide(b_.CreateNot(word(rr, i))));
                           put(rr, i, narrow(s));
                           set(c, b_.CreateLShr(s, 32));
                         });
                       }),
                  {r, n});
  }
  // r = a + b (flip 0) or a - b (flip 1), modulo the format. r may alias a or b.
  void add_sub(Value *r, Value *a, Value *x, Value *n, Value *flip) {
    b_.CreateCall(proc("pk_bn_add_sub", {ptr_, ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *fl = f->getArg(4), *c = var(i64_, wide(fl));
                         Value *mask = b_.CreateNeg(fl);
                         loop(k(0), f->getArg(3), [&](Value *i) {
                           Value *s = b_.CreateAdd(get(c), wide(word(f->getArg(1), i)));
                           s = b_.CreateAdd(s, wide(b_.CreateXor(word(f->getArg(2), i), mask)));
                           put(f->getArg(0), i, narrow(s));
                           set(c, b_.CreateLShr(s, 32));
                         });
                       }),
                  {r, a, x, n, flip});
  }
  void add(Value *r, Value *a, Value *x, Value *n) { add_sub(r, a, x, n, k(0)); }
  void sub(Value *r, Value *a, Value *x, Value *n) { add_sub(r, a, x, n, k(1)); }
  // r = a b, truncated to the format (the product's magnitude is truncated, then signed). r may alias a or b.
  void mul(Value *r, Value *a, Value *x, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_mul", {ptr_, ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *aa = f->getArg(1), *xx = f->getArg(2), *nn = f->getArg(3),
                               *ff = f->getArg(4);
                         Value *u = arr(), *v = arr(), *p = arr(2 * kWords);
                         Value *neg = b_.CreateXor(negative(aa, nn), negative(xx, nn));
                         Value *top = b_.CreateAdd(ff, nn);
                         copy(u, aa, nn);
                         copy(v, xx, nn);
                         when(negative(u, nn), [&] { negate(u, nn); });
                         when(negative(v, nn), [&] { negate(v, nn); });
                         loop(k(0), top, [&](Value *i) { put(p, i, k(0)); });
                         Value *c = var(i64_, b_.getInt64(0));
                         loop(k(0), nn, [&](Value *i) {
                           Value *ui = word(u, i);
                           when(b_.CreateICmpNE(ui, k(0)), [&] {
                             set(c, b_.getInt64(0));
                             Value *jn = min(nn, b_.CreateSub(top, i));
                             loop(k(0), jn, [&](Value *j) {
                               Value *ij = b_.CreateAdd(i, j);
                               Value *s = b_.CreateAdd(b_.CreateMul(wide(ui), wide(word(v, j))), wide(word(p, ij)));
                               s = b_.CreateAdd(s, get(c));
                               put(p, ij, narrow(s));
                               set(c, b_.CreateLShr(s, 32));
                             });
                             Value *end = b_.CreateAdd(i, jn);
                             when(lt(end, top), [&] { put(p, end, narrow(get(c))); });
                           });
                         });
                         loop(k(0), nn, [&](Value *i) { put(rr, i, word(p, b_.CreateAdd(ff, i))); });
                         when(neg, [&] { negate(rr, nn); });
                       }),
                  {r, a, x, n, fl});
  }
  // r = a m (two's complement times an unsigned word, modulo the format's range: exact while it fits).
  void mul_u32(Value *r, Value *a, Value *m, Value *n) {
    b_.CreateCall(proc("pk_bn_mul_u32", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *c = var(i64_, b_.getInt64(0));
                         loop(k(0), f->getArg(3), [&](Value *i) {
                           Value *s =
                               b_.CreateAdd(get(c), b_.CreateMul(wide(word(f->getArg(1), i)), wide(f->getArg(2))));
                           put(f->getArg(0), i, narrow(s));
                           set(c, b_.CreateLShr(s, 32));
                         });
                       }),
                  {r, a, m, n});
  }
  // r = a / d, truncated, for a >= 0.
  void div_u32(Value *r, Value *a, Value *dv, Value *n) {
    b_.CreateCall(proc("pk_bn_div_u32", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *nn = f->getArg(3), *dd = wide(f->getArg(2)), *rem = var(i64_, b_.getInt64(0));
                         loop(k(0), nn, [&](Value *t) {
                           Value *i = b_.CreateSub(b_.CreateSub(nn, k(1)), t);
                           Value *cur = b_.CreateOr(b_.CreateShl(get(rem), 32), wide(word(f->getArg(1), i)));
                           put(f->getArg(0), i, narrow(b_.CreateUDiv(cur, dd)));
                           set(rem, b_.CreateURem(cur, dd));
                         });
                       }),
                  {r, a, dv, n});
  }
  // r = floor(a / 2^s) and r = a 2^s, s >= 0. r may alias a.
  void shr(Value *r, Value *a, Value *s, Value *n) {
    b_.CreateCall(proc("pk_bn_shr", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *aa = f->getArg(1), *ss = f->getArg(2), *nn = f->getArg(3);
                         Value *fill = fill_of(aa, nn);
                         Value *q = b_.CreateLShr(ss, 5), *bits = b_.CreateAnd(ss, 31);
                         Value *back = b_.CreateAnd(b_.CreateSub(k(32), bits), 31);
                         loop(k(0), nn, [&](Value *i) {
                           Value *lo = word_or(aa, b_.CreateAdd(i, q), nn, fill);
                           Value *hi = word_or(aa, b_.CreateAdd(b_.CreateAdd(i, q), k(1)), nn, fill);
                           Value *v = b_.CreateOr(b_.CreateLShr(lo, bits), b_.CreateShl(hi, back));
                           put(f->getArg(0), i, c_.sel(b_.CreateICmpEQ(bits, k(0)), lo, v));
                         });
                       }),
                  {r, a, s, n});
  }
  void shl(Value *r, Value *a, Value *s, Value *n) {
    b_.CreateCall(proc("pk_bn_shl", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *aa = f->getArg(1), *ss = f->getArg(2), *nn = f->getArg(3);
                         Value *q = b_.CreateLShr(ss, 5), *bits = b_.CreateAnd(ss, 31);
                         Value *back = b_.CreateAnd(b_.CreateSub(k(32), bits), 31);
                         loop(k(0), nn, [&](Value *t) {
                           Value *i = b_.CreateSub(b_.CreateSub(nn, k(1)), t);
                           Value *hi = word_or(aa, b_.CreateSub(i, q), nn, k(0));
                           Value *lo = word_or(aa, b_.CreateSub(b_.CreateSub(i, q), k(1)), nn, k(0));
                           Value *v = b_.CreateOr(b_.CreateShl(hi, bits), b_.CreateLShr(lo, back));
                           put(f->getArg(0), i, c_.sel(b_.CreateICmpEQ(bits, k(0)), hi, v));
                         });
                       }),
                  {r, a, s, n});
  }
  // Sign extension from n to nw words.
  void widen(Value *r, Value *a, Value *n, Value *nw) {
    b_.CreateCall(proc("pk_bn_widen", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *fill = fill_of(f->getArg(1), f->getArg(2));
                         loop(k(0), f->getArg(3),
                              [&](Value *i) { put(f->getArg(0), i, word_or(f->getArg(1), i, f->getArg(2), fill)); });
                       }),
                  {r, a, n, nw});
  }
  // A finite double, exact down to the format's last bit (below it truncated towards zero).
  void from_double(Value *r, Value *v, Value *n, Value *fl) {
    b_.CreateCall(
        proc("pk_bn_from_double", {ptr_, f64_, i32_, i32_},
             [&](llvm::Function *f) {
               Value *rr = f->getArg(0), *vv = f->getArg(1), *nn = f->getArg(2), *ff = f->getArg(3);
               zero(rr, nn);
               when(b_.CreateFCmpONE(vv, c_.d(0.0)), [&] {
                 Value *av = c_.fabs(vv), *e = c_.exponent(av);  // |v| = mi 2^(e - 52), mi < 2^53
                 Value *mi = b_.CreateFPToUI(c_.scale(av, b_.CreateSub(b_.getInt64(52), e)), i64_);
                 Value *pos =
                     b_.CreateAdd(b_.CreateSub(e, b_.getInt64(52)), b_.CreateSExt(b_.CreateMul(ff, k(32)), i64_));
                 Value *under = b_.CreateICmpSLT(pos, b_.getInt64(0));
                 Value *drop = b_.CreateNeg(pos);
                 Value *shifted =
                     b_.CreateLShr(mi, c_.sel(b_.CreateICmpSGT(drop, b_.getInt64(63)), b_.getInt64(63), drop));
                 mi = c_.sel(under, c_.sel(b_.CreateICmpSGE(drop, b_.getInt64(64)), b_.getInt64(0), shifted), mi);
                 pos = c_.sel(under, b_.getInt64(0), pos);
                 Value *q = b_.CreateLShr(pos, 5), *bits = b_.CreateAnd(pos, 31);
                 Value *lo = b_.CreateShl(mi, bits);
                 Value *hi = c_.sel(b_.CreateICmpEQ(bits, b_.getInt64(0)), b_.getInt64(0),
                                    b_.CreateLShr(mi, b_.CreateAnd(b_.CreateSub(b_.getInt64(64), bits), 63)));
                 Value *n64 = b_.CreateSExt(nn, i64_);
                 Value *parts[3] = {narrow(lo), narrow(b_.CreateLShr(lo, 32)), narrow(hi)};
                 for (int t = 0; t < 3; ++t) {
                   Value *at = b_.CreateAdd(q, b_.getInt64(static_cast<uint64_t>(t)));
                   when(b_.CreateICmpSLT(at, n64), [&] { put(rr, narrow(at), parts[t]); });
                 }
                 when(b_.CreateFCmpOLT(vv, c_.d(0.0)), [&] { negate(rr, nn); });
               });
             }),
        {r, v, n, fl});
  }
  // The value as a double-double from its four leading words (finite: callers keep it below 2^1000).
  ComplexEmitter::DD to_dd(Value *a, Value *n, Value *fl) {
    auto *st = llvm::StructType::get(ctx_, {f64_, f64_});
    llvm::Function *f = fn("pk_bn_to_dd", st, {ptr_, i32_, i32_}, [&](llvm::Function *g) {
      Value *aa = g->getArg(0), *nn = g->getArg(1), *ff = g->getArg(2);
      Value *x = arr();
      copy(x, aa, nn);
      Value *neg = negative(x, nn);
      when(neg, [&] { negate(x, nn); });
      Value *top = var(i32_, k(0));  // the leading nonzero word (0 if none)
      loop(k(0), nn, [&](Value *i) { set(top, c_.sel(b_.CreateICmpNE(word(x, i), k(0)), i, get(top))); });
      Value *tp = get(top);
      ComplexEmitter::DD s = {c_.d(0.0), c_.d(0.0)};
      for (int t = 0; t < 4; ++t) {
        Value *i = b_.CreateSub(tp, k(t));
        Value *w = b_.CreateUIToFP(word_or(x, i, nn, k(0)), f64_);
        s = c_.dd_add_d(s, c_.scale(w, b_.CreateSExt(b_.CreateMul(b_.CreateSub(i, ff), k(32)), i64_)));
      }
      Value *hi = c_.sel(neg, b_.CreateFNeg(s.hi), s.hi), *lo = c_.sel(neg, b_.CreateFNeg(s.lo), s.lo);
      Value *out = b_.CreateInsertValue(llvm::PoisonValue::get(st), hi, {0});
      b_.CreateRet(b_.CreateInsertValue(out, lo, {1}));
    });
    Value *r = b_.CreateCall(f, {a, n, fl});
    return {b_.CreateExtractValue(r, {0}), b_.CreateExtractValue(r, {1})};
  }
  // A constant's fraction (a table of kit::special, most significant word first).
  void constant(Value *r, Value *t, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_const", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *ff = f->getArg(3);
                         zero(f->getArg(0), f->getArg(2));
                         loop(k(0), ff, [&](Value *j) {
                           put(f->getArg(0), b_.CreateSub(b_.CreateSub(ff, k(1)), j), word(f->getArg(1), j));
                         });
                       }),
                  {r, t, n, fl});
  }
  Value *add_unit(Value *a, Value *fl, int delta) {  // a += delta at the units word
    put(a, fl, b_.CreateAdd(word(a, fl), k(delta)));
    return a;
  }
  // r = 1 / d for d in [1, 8): Newton's r (2 - d r) from the double quotient, 53 bits doubling to beyond 1152.
  void recip(Value *r, Value *dv, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_recip", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *dd = f->getArg(1), *nn = f->getArg(2), *ff = f->getArg(3);
                         Value *e = arr(), *two = arr();
                         from_double(rr, b_.CreateFDiv(c_.d(1.0), to_dd(dd, nn, ff).hi), nn, ff);
                         zero(two, nn);
                         put(two, ff, k(2));
                         loop(k(0), k(6), [&](Value *) {
                           mul(e, dd, rr, nn, ff);
                           sub(e, two, e, nn);
                           mul(rr, rr, e, nn, ff);
                         });
                       }),
                  {r, dv, n, fl});
  }
  // r = sqrt(x) for x in [1, 4]: x y with y = 1 / sqrt(x) by Newton's y (3 - x y^2) / 2.
  void sqrt(Value *r, Value *x, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_sqrt", {ptr_, ptr_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *xx = f->getArg(1), *nn = f->getArg(2), *ff = f->getArg(3);
                         Value *y = arr(), *t = arr(), *three = arr();
                         Value *s = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, to_dd(xx, nn, ff).hi);
                         from_double(y, b_.CreateFDiv(c_.d(1.0), s), nn, ff);
                         zero(three, nn);
                         put(three, ff, k(3));
                         loop(k(0), k(6), [&](Value *) {
                           mul(t, y, y, nn, ff);
                           mul(t, t, xx, nn, ff);
                           sub(t, three, t, nn);
                           mul(y, y, t, nn, ff);
                           shr(y, y, k(1), nn);
                         });
                         mul(rr, xx, y, nn, ff);
                       }),
                  {r, x, n, fl});
  }
  // sum_k sign^k z^(2k+1) / (2k+1) for 0 <= z <= 1/3: atanh (alternate 0) or atan (alternate 1); the terms fall
  // by z^2 each until they vanish from the format.
  void odd_series(Value *r, Value *z, int alternate, Value *n, Value *fl) {
    b_.CreateCall(proc("pk_bn_odd_series", {ptr_, ptr_, i32_, i32_, i32_},
                       [&](llvm::Function *f) {
                         Value *rr = f->getArg(0), *zz = f->getArg(1), *alt = f->getArg(2), *nn = f->getArg(3),
                               *ff = f->getArg(4);
                         Value *z2 = arr(), *p = arr(), *t = arr();
                         mul(z2, zz, zz, nn, ff);
                         copy(p, zz, nn);
                         copy(rr, zz, nn);
                         llvm::Function *g = b_.GetInsertBlock()->getParent();
                         llvm::BasicBlock *pre = b_.GetInsertBlock();
                         auto *head = llvm::BasicBlock::Create(ctx_, "bn_series", g);
                         auto *more = llvm::BasicBlock::Create(ctx_, "bn_term", g);
                         auto *exit = llvm::BasicBlock::Create(ctx_, "bn_series_end", g);
                         b_.CreateBr(head);
                         b_.SetInsertPoint(head);
                         llvm::PHINode *kk = b_.CreatePHI(i32_, 2);
                         kk->addIncoming(k(3), pre);
                         mul(p, p, z2, nn, ff);
                         b_.CreateCondBr(is_zero(p, nn), exit, more);
                         b_.SetInsertPoint(more);
                         div_u32(t, p, kk, nn);
                         Value *flip = b_.CreateAnd(alt, b_.CreateAnd(b_.CreateLShr(kk, 1), k(1)));
                         add_sub(rr, rr, t, nn, flip);
                         kk->addIncoming(b_.CreateAdd(kk, k(2)), b_.GetInsertBlock());
                         b_.CreateBr(head);
                         b_.SetInsertPoint(exit);
                       }),
                  {r, z, k(alternate), n, fl});
  }
  // log|a| and arg a of a finite nonzero a. With m = max(|x|, |y|) 2^-k in [1, 2): |a|^2 2^-2k = S in [1, 8),
  // exact (to the format), log|a| = (2k + j) ln2 / 2 + atanh(z), z = (s - 1) / (s + 1), s = S 2^-j in [1, 2).
  // arg a: atan of t = min / max, halved twice (t / (1 + sqrt(1 + t^2))) to below tan(pi / 16), then the octant.
  void clog(Value *lr, Value *li, Value *x, Value *y, Value *n, Value *fl) {
    Value *ln2 = table("pk_bn_ln2", pk::kit::special::kLn2Fraction);
    Value *pi4 = table("pk_bn_pi_4", pk::kit::special::kPiOver4Fraction);
    b_.CreateCall(proc("pk_bn_clog", {ptr_, ptr_, f64_, f64_, i32_, i32_, ptr_, ptr_},
                       [&](llvm::Function *f) {
                         Value *lr_ = f->getArg(0), *li_ = f->getArg(1), *xx = f->getArg(2), *yy = f->getArg(3),
                               *nn = f->getArg(4), *ff = f->getArg(5);
                         Value *X = arr(), *Y = arr(), *s = arr(), *t = arr(), *u = arr();
                         Value *ax = c_.fabs(xx), *ay = c_.fabs(yy);
                         Value *mx = c_.sel(b_.CreateFCmpOGT(ax, ay), ax, ay),
                               *mn = c_.sel(b_.CreateFCmpOGT(ax, ay), ay, ax);
                         Value *kx = c_.exponent(mx);
                         from_double(X, c_.scale(mx, b_.CreateNeg(kx)), nn, ff);
                         from_double(Y, c_.scale(mn, b_.CreateNeg(kx)), nn, ff);
                         mul(s, X, X, nn, ff);
                         mul(t, Y, Y, nn, ff);
                         add(s, s, t, nn);
                         Value *j = b_.CreateSub(
                             k(31), b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, word(s, ff), b_.getFalse()));
                         shr(s, s, j, nn);
                         copy(t, s, nn);
                         add_unit(t, ff, 1);   // s + 1
                         add_unit(s, ff, -1);  // s - 1
                         recip(u, t, nn, ff);
                         mul(t, s, u, nn, ff);
                         odd_series(lr_, t, 0, nn, ff);
                         Value *e = b_.CreateAdd(b_.CreateMul(narrow(kx), k(2)), j);
                         constant(u, f->getArg(6), nn, ff);
                         mul_u32(u, u, c_.sel(lt(e, k(0)), b_.CreateNeg(e), e), nn);
                         when(lt(e, k(0)), [&] { negate(u, nn); });
                         shr(u, u, k(1), nn);
                         add(lr_, lr_, u, nn);

                         recip(u, X, nn, ff);
                         mul(t, Y, u, nn, ff);
                         loop(k(0), k(2), [&](Value *) {
                           mul(u, t, t, nn, ff);
                           add_unit(u, ff, 1);
                           sqrt(s, u, nn, ff);
                           add_unit(s, ff, 1);
                           recip(u, s, nn, ff);
                           mul(t, t, u, nn, ff);
                         });
                         odd_series(li_, t, 1, nn, ff);
                         shl(li_, li_, k(2), nn);
                         constant(u, f->getArg(7), nn, ff);
                         when(b_.CreateFCmpOGT(ay, ax), [&] {  // pi/2 - atan
                           shl(u, u, k(1), nn);
                           sub(li_, u, li_, nn);
                           shr(u, u, k(1), nn);
                         });
                         when(b_.CreateFCmpOLT(xx, c_.d(0.0)), [&] {  // pi - that
                           shl(u, u, k(2), nn);
                           sub(li_, u, li_, nn);
                         });
                         when(b_.CreateICmpSLT(b_.CreateBitCast(yy, i64_), b_.getInt64(0)), [&] { negate(li_, nn); });
                       }),
                  {lr, li, x, y, n, fl, ln2, pi4});
  }

  ComplexEmitter &c_;
  llvm::IRBuilder<> &b_;
  llvm::LLVMContext &ctx_;
  llvm::Type *i32_, *i64_, *f64_, *ptr_;
};

Value *ComplexEmitter::cpow_exact(Value *a, Value *x) {
  return BigNumEmitter(*this).cpow_exact(a, x);
}

// c64 a^b: w = b log a in f64 holds the phase to the f32 result's accuracy up to |w| ~ 2^20; beyond, c128's
// double-double and exact paths.
Value *ComplexEmitter::cpow_c64(Value *a, Value *x) {
  Value *l = clog(a);
  Value *zero = d(0.0);
  Value *fin =
      b_.CreateAnd(b_.CreateAnd(is_finite(re(a)), is_finite(im(a))), b_.CreateAnd(is_finite(re(x)), is_finite(im(x))));
  Value *nonzero = b_.CreateOr(b_.CreateFCmpONE(re(a), zero), b_.CreateFCmpONE(im(a), zero));
  Value *mb = sel(b_.CreateFCmpOGT(fabs(re(x)), fabs(im(x))), fabs(re(x)), fabs(im(x)));
  Value *ml = sel(b_.CreateFCmpOGT(fabs(re(l)), fabs(im(l))), fabs(re(l)), fabs(im(l)));
  Value *huge = b_.CreateFCmpOGE(b_.CreateFMul(mb, ml), d(0x1p20));
  return branch(
      b_.CreateAnd(b_.CreateAnd(fin, nonzero), huge), [&]() -> std::vector<Value *> { return {cpow128(a, x)}; },
      [&]() -> std::vector<Value *> { return {cpow(a, x)}; })[0];
}

// ------------------------------------------------------------------------------------------------ nodes

Value *ComplexEmitter::load(int32_t dt, Value *base, Value *offset) {
  llvm::Type *pt = dt == PK_DTYPE_C64 ? f32_ : f64_;
  Value *p = b_.CreateGEP(pt, base, b_.CreateShl(offset, 1));
  return b_.CreateAlignedLoad(vector_type(dt), p, llvm::Align(dt == PK_DTYPE_C64 ? 4 : 8));
}
void ComplexEmitter::store(int32_t dt, Value *v, Value *base, Value *offset) {
  llvm::Type *pt = dt == PK_DTYPE_C64 ? f32_ : f64_;
  Value *p = b_.CreateGEP(pt, base, b_.CreateShl(offset, 1));
  b_.CreateAlignedStore(v, p, llvm::Align(dt == PK_DTYPE_C64 ? 4 : 8));
}

Value *ComplexEmitter::truth(Value *z) {
  Value *zero = llvm::ConstantFP::get(re(z)->getType(), 0.0);
  return b_.CreateOr(b_.CreateFCmpUNE(re(z), zero), b_.CreateFCmpUNE(im(z), zero));  // NaN is nonzero
}

Value *ComplexEmitter::convert(Value *v, int32_t from, int32_t to) {
  if (from == to) return v;
  if (is_complex_dtype(from) && is_complex_dtype(to))
    return to == PK_DTYPE_C128 ? b_.CreateFPExt(v, vector_type(to)) : b_.CreateFPTrunc(v, vector_type(to));
  if (is_complex_dtype(from)) {
    if (to == PK_DTYPE_BOOL) return truth(v);
    return m_.convert_real(re(v), part_of(from), to);  // the imaginary part is dropped
  }
  Value *r = m_.convert_real(v, from, part_of(to));
  return pair(r, llvm::ConstantFP::get(r->getType(), 0.0));
}

Value *ComplexEmitter::node(uint32_t op, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt,
                            int32_t out_dt, double fill_value) {
  int32_t t = out_dt;
  for (int32_t dt : in_dt)
    if (is_complex_dtype(dt)) t = dt;
  Value *a = in.empty() ? nullptr : in[0];
  Value *c = in.size() > 1 ? in[1] : nullptr;
  auto through_wide = [&](Value *(ComplexEmitter::*fn)(Value *)) { return round_to((this->*fn)(widen(a)), t); };
  switch (op) {
    case PK_OP_COMPLEX:
      return pair(a, c);
    case PK_OP_POLAR: {
      Value *r = a->getType() == f64_ ? a : b_.CreateFPExt(a, f64_);
      Value *th = c->getType() == f64_ ? c : b_.CreateFPExt(c, f64_);
      return round_to(pair(b_.CreateFMul(r, m_.cos(th)), b_.CreateFMul(r, m_.sin(th))), out_dt);
    }
    case PK_OP_ANGLE: {
      if (!is_complex_dtype(in_dt[0])) {  // pi for a < 0, 0 otherwise (-0 too); NaN stays NaN
        llvm::Type *ty = a->getType();
        Value *pi = llvm::ConstantFP::get(ty, ty == f64_ ? M_PI : static_cast<double>(static_cast<float>(M_PI)));
        Value *r = sel(b_.CreateFCmpOLT(a, llvm::ConstantFP::get(ty, 0.0)), pi, llvm::ConstantFP::get(ty, 0.0));
        return sel(b_.CreateFCmpUNO(a, a), a, r);
      }
      Value *a2 = widen(a);
      Value *r = m_.atan2(im(a2), re(a2));
      return t == PK_DTYPE_C64 ? b_.CreateFPTrunc(r, f32_) : r;
    }
    case PK_OP_ABS:
      return abs_cx(a, t);
    case PK_OP_NEG:
      return b_.CreateFNeg(a);
    case PK_OP_CONJ_PHYSICAL:
      return pair(re(a), b_.CreateFNeg(im(a)));
    case PK_OP_REAL:
      return re(a);
    case PK_OP_IMAG:
      return im(a);
    case PK_OP_ISNAN:
      return b_.CreateOr(is_nan(re(a)), is_nan(im(a)));
    case PK_OP_ISINF:
      return b_.CreateOr(is_inf(re(a)), is_inf(im(a)));
    case PK_OP_ISFINITE:
      return b_.CreateAnd(is_finite(re(a)), is_finite(im(a)));
    case PK_OP_LOGICAL_NOT:
      return b_.CreateNot(truth(a));
    case PK_OP_LOGICAL_AND:
      return b_.CreateAnd(truth(a), truth(c));
    case PK_OP_LOGICAL_OR:
      return b_.CreateOr(truth(a), truth(c));
    case PK_OP_LOGICAL_XOR:
      return b_.CreateXor(truth(a), truth(c));
    case PK_OP_EQ:
      return b_.CreateAnd(b_.CreateFCmpOEQ(re(a), re(c)), b_.CreateFCmpOEQ(im(a), im(c)));
    case PK_OP_NE:
      return b_.CreateOr(b_.CreateFCmpUNE(re(a), re(c)), b_.CreateFCmpUNE(im(a), im(c)));
    case PK_OP_WHERE:
      return sel(a, c, in[2]);
    case PK_OP_FILL: {
      // The value is real: the real part as convert_element_type rounds an f64, the imaginary part +0.
      llvm::Type *pt = out_dt == PK_DTYPE_C64 ? f32_ : f64_;
      const double v = out_dt == PK_DTYPE_C64 ? static_cast<double>(static_cast<float>(fill_value)) : fill_value;
      return pair(llvm::ConstantFP::get(pt, v), llvm::ConstantFP::get(pt, 0.0));
    }
    case PK_OP_CONVERT_ELEMENT_TYPE:
      return convert(a, in_dt[0], out_dt);
    case PK_OP_ADD:
      return b_.CreateFAdd(a, c);  // each part rounded once in its own format
    case PK_OP_SUB:
      return b_.CreateFSub(a, c);
    case PK_OP_MUL:
      return t == PK_DTYPE_C64 ? mul64(a, c) : mul128(a, c);
    case PK_OP_DIV:
      return div_cx(a, c, t);
    case PK_OP_RECIPROCAL: {
      llvm::Type *pt = t == PK_DTYPE_C64 ? f32_ : f64_;
      return div_cx(pair(llvm::ConstantFP::get(pt, 1.0), llvm::ConstantFP::get(pt, 0.0)), a, t);
    }
    case PK_OP_SQRT:
      return sqrt_cx(a, t);
    case PK_OP_EXP:
      return through_wide(&ComplexEmitter::cexp);
    case PK_OP_LOG:
      return through_wide(&ComplexEmitter::clog);
    case PK_OP_TANH:
      return through_wide(&ComplexEmitter::ctanh);
    case PK_OP_COS: {  // cos z = cosh(iz)
      Value *w = widen(a);
      return round_to(cosh_sinh(pair(b_.CreateFNeg(im(w)), re(w)), true), t);
    }
    case PK_OP_SIN: {  // sin z = -i sinh(iz)
      Value *w = widen(a);
      Value *r = cosh_sinh(pair(b_.CreateFNeg(im(w)), re(w)), false);
      return round_to(pair(im(r), b_.CreateFNeg(re(r))), t);
    }
    case PK_OP_POW:
      return t == PK_DTYPE_C128 ? cpow128(a, c) : round_to(cpow_c64(widen(a), widen(c)), t);
    default:
      return nullptr;  // check() keeps other ops away
  }
}

// ------------------------------------------------------------------------------------------------ reductions

std::vector<Value *> ComplexEmitter::red_init(uint32_t op) {
  auto *v2 = llvm::FixedVectorType::get(f64_, 2);
  switch (op) {
    case PK_OP_SUM:
    case PK_OP_CUMSUM:
      return {llvm::Constant::getNullValue(v2), llvm::Constant::getNullValue(llvm::FixedVectorType::get(i64_, 2)),
              llvm::Constant::getNullValue(v2)};
    case PK_OP_PROD:
    case PK_OP_CUMPROD:  // the value 2^e z: z = 1/2, e = 1
      return {pair(d(0.5), d(0.0)), b_.getInt64(1)};
    case PK_OP_ANY:
      return {b_.getFalse()};
    default:  // all
      return {b_.getTrue()};
  }
}

std::vector<Value *> ComplexEmitter::red_step(uint32_t op, const std::vector<Value *> &acc, Value *x) {
  switch (op) {
    case PK_OP_SUM:
    case PK_OP_CUMSUM: {
      // Finite parts summed; per part, flags of the non-finite terms seen (1: +inf, 2: -inf, 4: NaN).
      Value *w = widen(x);
      auto *v2 = llvm::FixedVectorType::get(f64_, 2);
      auto *i2 = llvm::FixedVectorType::get(i64_, 2);
      Value *aw = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, w);
      Value *fin = b_.CreateFCmpOLT(aw, llvm::ConstantFP::get(v2, kInf));
      Value *nan = b_.CreateFCmpUNO(w, w);
      Value *pos = b_.CreateFCmpOGT(w, llvm::Constant::getNullValue(v2));
      auto iv = [&](int64_t k) { return llvm::ConstantInt::get(i2, static_cast<uint64_t>(k)); };
      Value *flag = sel(nan, iv(4), sel(fin, iv(0), sel(pos, iv(1), iv(2))));
      // The finite parts also summed scaled by 2^-600 (exact down to 2^-474 absolute), for when their f64 sum
      // overflows although the exact sum does not.
      Value *wf = sel(fin, w, llvm::Constant::getNullValue(v2));
      return {b_.CreateFAdd(acc[0], wf), b_.CreateOr(acc[1], flag),
              b_.CreateFAdd(acc[2], b_.CreateFMul(wf, llvm::ConstantFP::get(v2, 0x1p-600)))};
    }
    case PK_OP_PROD:
    case PK_OP_CUMPROD: {
      // As the reference's long double product: the running value 2^e z with z normalized after each factor (an
      // f64 running product overflows, or goes subnormal and loses its bits, where long double's does not).
      const auto [w, ew] = normalize(widen(x));
      const auto [z, ez] = normalize(mul_g(re(acc[0]), im(acc[0]), re(w), im(w)));
      return {z, b_.CreateAdd(acc[1], b_.CreateAdd(ew, ez))};
    }
    case PK_OP_ANY:
      return {b_.CreateOr(acc[0], truth(x))};
    default:
      return {b_.CreateAnd(acc[0], truth(x))};
  }
}

Value *ComplexEmitter::red_final(uint32_t op, int32_t out_dt, const std::vector<Value *> &acc) {
  switch (op) {
    case PK_OP_SUM:
    case PK_OP_CUMSUM: {
      auto *v2 = llvm::FixedVectorType::get(f64_, 2);
      auto *i2 = llvm::FixedVectorType::get(i64_, 2);
      auto iv = [&](int64_t k) { return llvm::ConstantInt::get(i2, static_cast<uint64_t>(k)); };
      auto fv = [&](double v) { return llvm::ConstantFP::get(v2, v); };
      Value *k = acc[1];
      Value *has = [&](int64_t bit) { return b_.CreateICmpNE(b_.CreateAnd(k, iv(bit)), iv(0)); }(4);
      Value *both = b_.CreateICmpEQ(b_.CreateAnd(k, iv(3)), iv(3));
      Value *p = b_.CreateICmpNE(b_.CreateAnd(k, iv(1)), iv(0));
      Value *n = b_.CreateICmpNE(b_.CreateAnd(k, iv(2)), iv(0));
      Value *over = b_.CreateFCmpOEQ(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, acc[0]), fv(kInf));
      Value *finite_sum = sel(over, b_.CreateFMul(acc[2], fv(0x1p600)), acc[0]);
      Value *r = sel(b_.CreateOr(has, both), fv(kNaN), sel(p, fv(kInf), sel(n, fv(-kInf), finite_sum)));
      return round_to(r, out_dt);
    }
    case PK_OP_PROD:
    case PK_OP_CUMPROD: {
      // z 2^e in two power-of-two factors (each a normal double); results deep in the subnormal range may round
      // twice.
      Value *e = acc[1];
      e = sel(b_.CreateICmpSGT(e, b_.getInt64(2000)), b_.getInt64(2000), e);
      e = sel(b_.CreateICmpSLT(e, b_.getInt64(-2000)), b_.getInt64(-2000), e);
      Value *e1 = b_.CreateSDiv(e, b_.getInt64(2)), *e2 = b_.CreateSub(e, e1);
      return round_to(b_.CreateFMul(b_.CreateFMul(acc[0], pow2_pair(e1)), pow2_pair(e2)), out_dt);
    }
    default:
      return acc[0];
  }
}

Value *ComplexEmitter::pow2_pair(Value *e) {
  Value *p = b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, b_.getInt64(1023)), b_.getInt64(52)), f64_);
  return b_.CreateVectorSplat(2, p);
}

std::pair<Value *, Value *> ComplexEmitter::normalize(Value *z2) {
  Value *m = b_.CreateMaxNum(fabs(re(z2)), fabs(im(z2)));
  Value *ok = b_.CreateAnd(b_.CreateFCmpOLT(m, d(kInf)), b_.CreateFCmpOGT(m, d(0.0)));
  Value *sub = b_.CreateFCmpOLT(m, d(0x1p-1022));
  Value *v = sel(sub, b_.CreateFMul(z2, pair(d(0x1p64), d(0x1p64))), z2);
  Value *m1 = sel(sub, b_.CreateFMul(m, d(0x1p64)), m);
  Value *bits = b_.CreateBitCast(m1, i64_);
  Value *k = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, b_.getInt64(52)), b_.getInt64(0x7ff)), b_.getInt64(1022));
  // v 2^-k in two exact steps (2^-k alone may be below the normal range).
  Value *k1 = b_.CreateSDiv(k, b_.getInt64(2)), *k2 = b_.CreateSub(k, k1);
  Value *vn = b_.CreateFMul(b_.CreateFMul(v, pow2_pair(b_.CreateNeg(k1))), pow2_pair(b_.CreateNeg(k2)));
  Value *kt = b_.CreateSub(k, sel(sub, b_.getInt64(64), b_.getInt64(0)));
  return {sel(ok, vn, z2), sel(ok, kt, b_.getInt64(0))};
}

Value *ComplexEmitter::variance(int32_t xdt, int32_t ydt, Value *count, double correction, const Loop &loop,
                                const std::function<Value *(Value *c)> &x_at) {
  auto *v2 = llvm::FixedVectorType::get(f64_, 2);
  auto fv = [&](double v) { return llvm::ConstantFP::get(v2, v); };
  (void)xdt;
  std::vector<Value *> s = loop({fv(0.0), fv(0.0)}, [&](Value *c, const std::vector<Value *> &a) {
    Value *x = widen(x_at(c));
    return std::vector<Value *>{b_.CreateFAdd(a[0], x), b_.CreateFAdd(a[1], b_.CreateFMul(x, fv(0x1p-600)))};
  });
  Value *big = b_.CreateOr(is_inf(re(s[0])), is_inf(im(s[0])));
  Value *scl = sel(big, fv(0x1p-600), fv(1.0));
  Value *cnt = b_.CreateSIToFP(count, f64_);
  Value *cntv = pair(cnt, cnt);
  Value *mean = b_.CreateFDiv(sel(big, s[1], s[0]), cntv);
  Value *resid = loop({fv(0.0)}, [&](Value *c, const std::vector<Value *> &a) {
    return std::vector<Value *>{b_.CreateFAdd(a[0], b_.CreateFSub(b_.CreateFMul(widen(x_at(c)), scl), mean))};
  })[0];
  mean = b_.CreateFAdd(mean, b_.CreateFDiv(resid, cntv));
  Value *ss = loop({d(0.0)}, [&](Value *c, const std::vector<Value *> &a) {
    Value *dev = b_.CreateFSub(b_.CreateFMul(widen(x_at(c)), scl), mean);
    Value *sq = b_.CreateFMul(dev, dev);
    return std::vector<Value *>{b_.CreateFAdd(a[0], b_.CreateFAdd(re(sq), im(sq)))};
  })[0];
  Value *divisor = b_.CreateFSub(cnt, d(correction));
  Value *unscale = sel(big, d(0x1p600), d(1.0));
  Value *v = b_.CreateFMul(b_.CreateFMul(b_.CreateFDiv(ss, divisor), unscale), unscale);
  v = sel(b_.CreateFCmpOGT(divisor, d(0.0)), v, d(kNaN));
  return ydt == PK_DTYPE_F32 ? b_.CreateFPTrunc(v, f32_) : v;
}

// ------------------------------------------------------------------------------------------- dot products

Value *ComplexEmitter::dot(int32_t dt, Value *count, const CountLoop &loop, const TermsAt &terms_at) {
  auto *v2 = llvm::FixedVectorType::get(f64_, 2);
  Value *zero2 = llvm::Constant::getNullValue(v2);
  const bool c128 = dt == PK_DTYPE_C128;
  // acc: the finite terms' sum (c128: Dot2's running sum, whose rounding errors go to the second value), and the
  // sum of the terms with a non-finite part. `scale` multiplies the finite factors (the redo of an overflow).
  auto pass = [&](Value *n, Value *scale) {
    return loop(n, {zero2, zero2, zero2}, [&](Value *c, const std::vector<Value *> &acc) {
      std::pair<Value *, Value *> xy = terms_at(c);
      Value *u = widen(xy.first), *v = widen(xy.second);
      Value *a = re(u), *x = im(u), *cr = re(v), *y = im(v);
      Value *fin = b_.CreateAnd(b_.CreateAnd(is_finite(a), is_finite(x)), b_.CreateAnd(is_finite(cr), is_finite(y)));
      Value *special = sel(fin, acc[2], b_.CreateFAdd(acc[2], mul_g(a, x, cr, y)));
      if (scale != nullptr) {
        a = b_.CreateFMul(a, scale);
        x = b_.CreateFMul(x, scale);
        cr = b_.CreateFMul(cr, scale);
        y = b_.CreateFMul(y, scale);
      }
      Value *nx = b_.CreateFNeg(x);
      if (!c128) {  // products of floats are exact in f64
        Value *sr = fma(nx, y, fma(a, cr, re(acc[0])));
        Value *si = fma(x, cr, fma(a, y, im(acc[0])));
        return std::vector<Value *>{sel(fin, pair(sr, si), acc[0]), acc[1], special};
      }
      // Dot2: s + p exactly as two_sum, the product's and the sum's errors added to e.
      auto add = [&](Value *&s, Value *&e, Value *p, Value *q) {
        DD pr = two_prod(p, q);
        DD sm = two_sum(s, pr.hi);
        s = sm.hi;
        e = b_.CreateFAdd(e, b_.CreateFAdd(sm.lo, pr.lo));
      };
      Value *sr = re(acc[0]), *er = re(acc[1]), *si = im(acc[0]), *ei = im(acc[1]);
      add(sr, er, a, cr);
      add(sr, er, nx, y);
      add(si, ei, a, y);
      add(si, ei, x, cr);
      return std::vector<Value *>{sel(fin, pair(sr, si), acc[0]), sel(fin, pair(er, ei), acc[1]), special};
    });
  };
  auto finite2 = [&](Value *w) {
    return b_.CreateFCmpOLT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, w), llvm::ConstantFP::get(v2, kInf));
  };
  std::vector<Value *> first = pass(count, nullptr);
  Value *sum = b_.CreateFAdd(first[0], first[1]);
  if (c128) {
    // A part that is not finite had products (or partial sums) beyond f64's range: redone with the factors scaled
    // by 2^-550 (products by 2^-1100). Terms that underflow there lose at most 2^26 each, far below the bound of
    // a sum whose terms reach 2^1024.
    Value *fin = finite2(sum);
    Value *all = b_.CreateAnd(b_.CreateExtractElement(fin, uint64_t{0}), b_.CreateExtractElement(fin, uint64_t{1}));
    std::vector<Value *> second = pass(sel(all, llvm::Constant::getNullValue(count->getType()), count), d(0x1p-550));
    Value *up = llvm::ConstantFP::get(v2, 0x1p550);
    Value *redo = b_.CreateFMul(b_.CreateFMul(b_.CreateFAdd(second[0], second[1]), up), up);
    sum = sel(fin, sum, redo);
  }
  Value *special = first[2];
  return round_to(sel(finite2(special), b_.CreateFAdd(sum, special), special), dt);
}

}  // namespace pk::codegen::detail
