// emit_complex.cpp — complex values in the kernel generator (see emit_complex.hpp). exp, log, sin, cos, tanh and
// polar are the device math's (sdk/devmath/complex.h, shared with the CPU and OpenCL backends); the rest follows
// the OpenCL backend's cl_complex.cpp (C11 Annex G special values); the c128 operations the op table contracts as
// correctly rounded (abs, mul, div, reciprocal, sqrt) are computed in double-double and, when that cannot decide the
// rounding, decided exactly from sums of error-free products.
// pow's c128 and exact paths are in emit_complex_pow.cpp.
#include "emit_complex.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include "primkit/primkit.h"

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

// exp, log, cos, sin and tanh of an (f64, f64) pair are the device math's (sdk/devmath/complex.h, the same source
// the CPU and OpenCL backends use), linked into the kernel by emit_devmath.cpp.
Value *ComplexEmitter::devmath_cx(const char *name, Value *z) {
  Value *r = nullptr, *i = nullptr;
  m_.devmath_complex(name, {re(z), im(z)}, r, i);
  return pair(r, i);
}
Value *ComplexEmitter::cexp(Value *z) {
  return devmath_cx("pk_dm_cexp", z);
}
Value *ComplexEmitter::clog(Value *z) {
  return devmath_cx("pk_dm_clog", z);
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
  // c64 parts are exact in f64: the device math's f64 result rounded once.
  auto through_dm = [&](const char *name) { return round_to(devmath_cx(name, widen(a)), t); };
  switch (op) {
    case PK_OP_COMPLEX:
      return pair(a, c);
    case PK_OP_POLAR: {  // f32 operands are exact in f64: the device math's f64 result rounded once
      Value *r = a->getType() == f64_ ? a : b_.CreateFPExt(a, f64_);
      Value *th = c->getType() == f64_ ? c : b_.CreateFPExt(c, f64_);
      Value *pr = nullptr, *pi = nullptr;
      m_.devmath_complex("pk_dm_cpolar", {r, th}, pr, pi);
      return round_to(pair(pr, pi), out_dt);
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
      return through_dm("pk_dm_cexp");
    case PK_OP_LOG:
      return through_dm("pk_dm_clog");
    case PK_OP_TANH:
      return through_dm("pk_dm_ctanh");
    case PK_OP_COS:
      return through_dm("pk_dm_ccos");
    case PK_OP_SIN:
      return through_dm("pk_dm_csin");
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
