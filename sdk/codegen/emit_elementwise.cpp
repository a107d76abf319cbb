// emit_elementwise.cpp — the nodes of elementwise regions (see emit.cpp for the numerics): the op switch and the
// exact helpers it uses (fmod, nextafter, gcd, IEEE maximum, fma of 16-bit formats), philox, and the element
// program that loads the inputs, computes every node and stores the outputs.
#include "emit_internal.hpp"

#include <cmath>
#include <limits>

namespace pk::codegen::detail {

// C fmod, exact: y 2^k for k = e(x) - e(y) down to 0 is subtracted where it fits (each subtraction exact by
// Sterbenz, since the remainder stays below twice the subtrahend). A loop of at most 2098 steps.
Value *Emitter::fmod_d(Value *x, Value *y) {
  Value *ax = intr(llvm::Intrinsic::fabs, {x}), *ay = intr(llvm::Intrinsic::fabs, {y});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Value *invalid = b_.CreateOr(b_.CreateFCmpUNO(x, y),
                               b_.CreateOr(b_.CreateFCmpOEQ(ax, f64c(HUGE_VAL)), b_.CreateFCmpOEQ(ay, f64c(0.0))));
  Value *work = b_.CreateAnd(b_.CreateNot(invalid), b_.CreateFCmpOGE(ax, ay));
  auto ilogb = [&](Value *v) {  // v > 0 finite
    Value *sub = b_.CreateFCmpOLT(v, f64c(0x1p-1022));
    Value *vs = b_.CreateSelect(sub, b_.CreateFMul(v, f64c(0x1p54)), v);
    Value *e = b_.CreateSub(b_.CreateLShr(b_.CreateBitCast(vs, i64_), 52), i64c(1023));
    return b_.CreateSelect(sub, b_.CreateSub(e, i64c(54)), e);
  };
  Value *axw = b_.CreateSelect(work, ax, f64c(1.0)), *ayw = b_.CreateSelect(work, ay, f64c(1.0));
  Value *k = b_.CreateSub(ilogb(axw), ilogb(ayw));  // 0 .. 2097
  // ay 2^k in three exact steps (each factor a normal power of two; the product stays below 2 |x|).
  Value *k1 = b_.CreateSelect(b_.CreateICmpSGT(k, i64c(1000)), i64c(1000), k);
  Value *k2 = b_.CreateSub(k, k1);
  Value *k3 = b_.CreateSelect(b_.CreateICmpSGT(k2, i64c(1000)), b_.CreateSub(k2, i64c(1000)), i64c(0));
  k2 = b_.CreateSub(k2, k3);
  Value *bb = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(ayw, pow2i(k1)), pow2i(k2)), pow2i(k3));
  llvm::Function *fn = b_.GetInsertBlock()->getParent();
  auto *pre = b_.GetInsertBlock();
  auto *loop = llvm::BasicBlock::Create(ctx_, "fmod_loop", fn);
  auto *done = llvm::BasicBlock::Create(ctx_, "fmod_done", fn);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  auto *i = b_.CreatePHI(i64_, 2), *r = b_.CreatePHI(f64_, 2), *sb = b_.CreatePHI(f64_, 2);
  i->addIncoming(k, pre);
  r->addIncoming(axw, pre);
  sb->addIncoming(bb, pre);
  Value *r2 = b_.CreateSelect(b_.CreateFCmpOGE(r, sb), b_.CreateFSub(r, sb), r);
  Value *sb2 = b_.CreateFMul(sb, f64c(0.5));
  Value *i2 = b_.CreateSub(i, i64c(1));
  i->addIncoming(i2, loop);
  r->addIncoming(r2, loop);
  sb->addIncoming(sb2, loop);
  b_.CreateCondBr(b_.CreateICmpSGE(i2, i64c(0)), loop, done);
  b_.SetInsertPoint(done);
  auto *rf = b_.CreatePHI(f64_, 1);
  rf->addIncoming(r2, loop);
  Value *res = b_.CreateSelect(work, intr(llvm::Intrinsic::copysign, {rf, x}), x);
  return b_.CreateSelect(invalid, f64c(nan), res);
}

// The next value of d's format after x toward y: one step of the bit pattern (sign-magnitude).
Value *Emitter::nextafter(Value *x, Value *y, int32_t d) {
  Value *stored = to_storage(x, d);
  llvm::Type *it = b_.getIntNTy(stored->getType()->getPrimitiveSizeInBits());
  Value *bits = b_.CreateBitCast(stored, it);
  llvm::Type *ft = x->getType();
  Value *zero = llvm::ConstantFP::get(ft, 0.0);
  Value *away = b_.CreateICmpEQ(b_.CreateFCmpOLT(x, y), b_.CreateFCmpOGT(x, zero));
  Value *one = llvm::ConstantInt::get(it, 1);
  Value *nb = b_.CreateSelect(away, b_.CreateAdd(bits, one), b_.CreateSub(bits, one));
  // From zero: the smallest subnormal with y's direction.
  Value *sign = llvm::ConstantInt::get(it, llvm::APInt::getSignMask(it->getIntegerBitWidth()));
  nb = b_.CreateSelect(b_.CreateFCmpOEQ(x, zero),
                       b_.CreateSelect(b_.CreateFCmpOGT(y, zero), one, b_.CreateOr(sign, one)), nb);
  Value *r = from_storage(b_.CreateBitCast(nb, stored->getType()), d);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, y), y, r);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, y), b_.CreateFAdd(x, y), r);
}

// gcd of |x| and |y| (as unsigned numbers of the type's width, so gcd(INT_MIN, 0) wraps to INT_MIN): Euclid's
// loop, at most about 1.44 * bits steps.
Value *Emitter::gcd(Value *x, Value *y, bool uns) {
  llvm::Type *ty = x->getType();
  Value *zero = llvm::ConstantInt::get(ty, 0);
  auto mag = [&](Value *v) { return uns ? v : b_.CreateSelect(b_.CreateICmpSLT(v, zero), b_.CreateNeg(v), v); };
  Value *a0 = mag(x), *c0 = mag(y);
  llvm::Function *fn = b_.GetInsertBlock()->getParent();
  auto *pre = b_.GetInsertBlock();
  auto *loop = llvm::BasicBlock::Create(ctx_, "gcd_loop", fn);
  auto *done = llvm::BasicBlock::Create(ctx_, "gcd_done", fn);
  b_.CreateCondBr(b_.CreateICmpNE(c0, zero), loop, done);
  b_.SetInsertPoint(loop);
  auto *a = b_.CreatePHI(ty, 2), *c = b_.CreatePHI(ty, 2);
  a->addIncoming(a0, pre);
  c->addIncoming(c0, pre);
  Value *rem = b_.CreateURem(a, c);
  a->addIncoming(c, loop);
  c->addIncoming(rem, loop);
  b_.CreateCondBr(b_.CreateICmpNE(rem, zero), loop, done);
  b_.SetInsertPoint(done);
  auto *res = b_.CreatePHI(ty, 2);
  res->addIncoming(a0, pre);
  res->addIncoming(c, loop);
  return res;
}

// IEEE maximum/minimum with NaN propagation and +0 > -0 (maximum) / -0 < +0 (minimum).
Value *Emitter::fmaximum(Value *a, Value *c, bool is_max) {
  llvm::Type *it = a->getType() == f64_ ? i64_ : i32_;
  Value *pick = is_max ? b_.CreateFCmpOGT(a, c) : b_.CreateFCmpOLT(a, c);
  Value *r = b_.CreateSelect(pick, a, c);
  Value *ab = b_.CreateBitCast(a, it), *cb = b_.CreateBitCast(c, it);
  Value *zr = b_.CreateBitCast(is_max ? b_.CreateAnd(ab, cb) : b_.CreateOr(ab, cb), a->getType());
  r = b_.CreateSelect(b_.CreateFCmpOEQ(a, c), zr, r);
  return b_.CreateSelect(b_.CreateFCmpUNO(a, c), b_.CreateFAdd(a, c), r);
}

// fma of f16/bf16 operands: the product is exact in f64; the sum's rounding error (TwoSum) drives a round-to-odd
// result, which then rounds correctly to the 11/8-bit format.
Value *Emitter::fma_small(Value *a, Value *bb, Value *c, int32_t d) {
  Value *p = b_.CreateFMul(to_double(a), to_double(bb));  // exact: 2 x 11 bits
  Value *cd = to_double(c);
  Value *s = b_.CreateFAdd(p, cd);
  Value *bv = b_.CreateFSub(s, p);
  Value *err = b_.CreateFAdd(b_.CreateFSub(p, b_.CreateFSub(s, bv)), b_.CreateFSub(cd, bv));
  // Round s to odd in f64 (one step toward the exact value's truncation, low bit set) when err != 0.
  Value *bits = b_.CreateBitCast(s, i64_);
  Value *neg = b_.CreateICmpSLT(bits, i64c(0));
  Value *err_neg = b_.CreateFCmpOLT(err, f64c(0));
  Value *err_pos = b_.CreateFCmpOGT(err, f64c(0));
  Value *mag_too_big = b_.CreateSelect(neg, err_pos, err_neg);
  Value *trunc = b_.CreateSelect(mag_too_big, b_.CreateSub(bits, i64c(1)), bits);
  Value *inexact = b_.CreateOr(err_neg, err_pos);
  Value *finite = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {s}), f64c(std::numeric_limits<double>::infinity()));
  Value *odd = b_.CreateSelect(b_.CreateAnd(inexact, finite), b_.CreateOr(trunc, i64c(1)), bits);
  Value *sd = b_.CreateBitCast(odd, f64_);
  if (d == PK_DTYPE_F16) return b_.CreateFPExt(b_.CreateFPTrunc(sd, f16_), f32_);
  return round_bf16(round_odd_to_float(sd, f64c(0)));
}

// A node's value from its operands': complex nodes through the complex emitter, the others by kind of op.
Value *Emitter::node(const Node &n, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt, int32_t out_dt) {
  if (ComplexEmitter::handles(n.op_id, in_dt, out_dt)) return cx().node(n.op_id, in, in_dt, out_dt, n.fill_value);
  const int32_t t = in_dt.empty() ? out_dt : in_dt[0];
  if (Value *v = math_node(n, in, t)) return v;
  if (Value *v = unary_node(n, in, t, out_dt)) return v;
  return binary_node(n, in, in_dt, t);
}

Value *Emitter::math_node(const Node &n, const std::vector<Value *> &in, int32_t t) {
  Value *a = in.empty() ? nullptr : in[0];
  auto through_double = [&](Value *(Emitter::*fn)(Value *)) { return from_double((this->*fn)(to_double(a)), t); };
  auto through_double2 = [&](Value *(Emitter::*fn)(Value *, Value *)) {
    return from_double((this->*fn)(to_double(a), to_double(in[1])), t);
  };
  switch (n.op_id) {
    case PK_OP_EXP:
      return through_double(&Emitter::exp_d);
    case PK_OP_EXP2:
      return through_double(&Emitter::exp2_d);
    case PK_OP_EXPM1:
      return through_double(&Emitter::expm1_d);
    case PK_OP_LOG:
      return through_double(&Emitter::log_d);
    case PK_OP_LOG2:
      return through_double(&Emitter::log2_d);
    case PK_OP_TANH:
      return through_double(&Emitter::tanh_d);
    case PK_OP_LOG1P:
      return through_double(&Emitter::log1p_d);
    case PK_OP_LOG10:
      return through_double(&Emitter::log10_d);
    case PK_OP_SIN:
    case PK_OP_COS:
    case PK_OP_TAN:
      return from_double(trig_d(to_double(a), n.op_id), t);
    case PK_OP_ASIN:
      return through_double(&Emitter::asin_d);
    case PK_OP_ACOS:
      return through_double(&Emitter::acos_d);
    case PK_OP_ATAN:
      return through_double(&Emitter::atan_d);
    case PK_OP_SINH:
      return through_double(&Emitter::sinh_d);
    case PK_OP_COSH:
      return through_double(&Emitter::cosh_d);
    case PK_OP_ASINH:
      return through_double(&Emitter::asinh_d);
    case PK_OP_ACOSH:
      return through_double(&Emitter::acosh_d);
    case PK_OP_ATANH:
      return through_double(&Emitter::atanh_d);
    case PK_OP_CBRT:
      return through_double(&Emitter::cbrt_d);
    case PK_OP_ERF:
      return through_double(&Emitter::erf_d);
    case PK_OP_ERFC:
      return through_double(&Emitter::erfc_d);
    case PK_OP_ERFCX:
      return through_double(&Emitter::erfcx_d);
    case PK_OP_ERF_INV:
      return through_double(&Emitter::erf_inv_d);
    case PK_OP_NDTRI:
      return through_double(&Emitter::ndtri_d);
    case PK_OP_LGAMMA:
      return through_double(&Emitter::lgamma_d);
    case PK_OP_DIGAMMA:
      return through_double(&Emitter::digamma_d);
    case PK_OP_BESSEL_I0:
    case PK_OP_BESSEL_I0E:
    case PK_OP_BESSEL_I1:
    case PK_OP_BESSEL_I1E: {
      const int order = n.op_id == PK_OP_BESSEL_I1 || n.op_id == PK_OP_BESSEL_I1E;
      const bool scaled = n.op_id == PK_OP_BESSEL_I0E || n.op_id == PK_OP_BESSEL_I1E;
      return from_double(bessel_i_d(order, to_double(a), scaled), t);
    }
    case PK_OP_BESSEL_J0:
    case PK_OP_BESSEL_J1:
      return from_double(bessel_j_d(n.op_id == PK_OP_BESSEL_J1, to_double(a)), t);
    case PK_OP_SPHERICAL_BESSEL_J0:
      return through_double(&Emitter::spherical_j0_d);
    case PK_OP_IGAMMA:
      return through_double2(&Emitter::igamma_d);
    case PK_OP_IGAMMAC:
      return through_double2(&Emitter::igammac_d);
    case PK_OP_ZETA:
      return through_double2(&Emitter::zeta_d);
    case PK_OP_ATAN2:
      return through_double2(&Emitter::atan2_d);
    case PK_OP_HYPOT:
      return through_double2(&Emitter::hypot_d);
    case PK_OP_POW:
      return through_double2(&Emitter::pow_d);
    default:
      return nullptr;
  }
}

Value *Emitter::unary_node(const Node &n, const std::vector<Value *> &in, int32_t t, int32_t out_dt) {
  using I = llvm::Intrinsic::ID;
  const bool fp = is_fp(t);
  const bool uns = is_unsigned(t);
  Value *a = in.empty() ? nullptr : in[0];
  auto fp_unary = [&](I id) { return narrow(intr(id, {a}), t); };
  switch (n.op_id) {
    case PK_OP_ABS:
      if (fp) return intr(llvm::Intrinsic::fabs, {a});
      if (uns) return a;
      return b_.CreateSelect(b_.CreateICmpSLT(a, llvm::ConstantInt::get(a->getType(), 0)), b_.CreateNeg(a), a);
    case PK_OP_NEG:
      return fp ? b_.CreateFNeg(a) : b_.CreateNeg(a);
    case PK_OP_POPULATION_COUNT:
      return intr(llvm::Intrinsic::ctpop, {a});
    case PK_OP_COUNT_LEADING_ZEROS:
      return b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {a->getType()}, {a, b_.getFalse()});
    case PK_OP_SQRT:
      return fp_unary(llvm::Intrinsic::sqrt);
    case PK_OP_RECIPROCAL:
      return narrow(b_.CreateFDiv(fpc(a->getType(), 1.0), a), t);
    case PK_OP_RSQRT:
      if (t == PK_DTYPE_F64) return b_.CreateFDiv(f64c(1.0), intr(llvm::Intrinsic::sqrt, {a}));
      // f32 (and the 16-bit formats): in f64, one rounding at the end.
      return from_double(b_.CreateFDiv(f64c(1.0), intr(llvm::Intrinsic::sqrt, {to_double(a)})), t);
    case PK_OP_FLOOR:
      return intr(llvm::Intrinsic::floor, {a});
    case PK_OP_CEIL:
      return intr(llvm::Intrinsic::ceil, {a});
    case PK_OP_TRUNC:
      return intr(llvm::Intrinsic::trunc, {a});
    case PK_OP_ROUND:
      return intr(n.round_mode == PK_ROUNDING_HALF_AWAY_FROM_ZERO ? llvm::Intrinsic::round : llvm::Intrinsic::rint,
                  {a});
    case PK_OP_BITWISE_NOT:
      return b_.CreateNot(a);
    case PK_OP_ISFINITE:
      if (!fp) return b_.getTrue();
      return b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {a}), fpc(a->getType(), HUGE_VAL));
    case PK_OP_ISNAN:
      return fp ? b_.CreateFCmpUNO(a, a) : b_.getFalse();
    case PK_OP_ISINF:
      if (!fp) return b_.getFalse();
      return b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {a}), fpc(a->getType(), HUGE_VAL));
    case PK_OP_LOGICAL_NOT:
      return b_.CreateNot(truth(a, t));
    case PK_OP_FILL:
      return constant(n.fill_value, out_dt);
    case PK_OP_SIGN: {
      if (fp) {
        Value *one = fpc(a->getType(), 1.0), *m1 = fpc(a->getType(), -1.0);
        return b_.CreateSelect(b_.CreateFCmpOGT(a, fpc(a->getType(), 0.0)), one,
                               b_.CreateSelect(b_.CreateFCmpOLT(a, fpc(a->getType(), 0.0)), m1, a));
      }
      llvm::Type *ty = a->getType();
      Value *zero = llvm::ConstantInt::get(ty, 0);
      if (uns) return b_.CreateZExt(b_.CreateICmpNE(a, zero), ty);
      return b_.CreateSelect(b_.CreateICmpSGT(a, zero), llvm::ConstantInt::get(ty, 1),
                             b_.CreateSelect(b_.CreateICmpSLT(a, zero), llvm::ConstantInt::getSigned(ty, -1), zero));
    }
    case PK_OP_SIGNBIT:
      if (fp) {
        llvm::Type *it = a->getType() == f64_ ? i64_ : i32_;
        return b_.CreateICmpSLT(b_.CreateBitCast(a, it), llvm::ConstantInt::get(it, 0));
      }
      return uns ? b_.getFalse() : b_.CreateICmpSLT(a, llvm::ConstantInt::get(a->getType(), 0));
    case PK_OP_CONVERT_ELEMENT_TYPE:
      return convert(a, t, out_dt);
    default:
      return nullptr;
  }
}

Value *Emitter::binary_node(const Node &n, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt,
                            int32_t t) {
  const bool fp = is_fp(t);
  const bool uns = is_unsigned(t);
  Value *a = in.empty() ? nullptr : in[0];
  Value *c = in.size() > 1 ? in[1] : nullptr;
  switch (n.op_id) {
    case PK_OP_NEXTAFTER:
      return nextafter(a, c, t);
    case PK_OP_GCD:
      return gcd(a, c, uns);
    case PK_OP_FMOD:
    case PK_OP_REMAINDER: {
      if (fp) {
        Value *y = to_double(c);
        Value *m = fmod_d(to_double(a), y);
        if (n.op_id == PK_OP_REMAINDER) {
          // Python's modulus: the sign of y. m + y is rounded once (in f64 it is exact or far from a tie of
          // the narrower formats).
          Value *differ = b_.CreateXor(sign_neg(m), sign_neg(y));
          Value *adj = b_.CreateAnd(b_.CreateFCmpONE(m, f64c(0.0)), differ);
          m = b_.CreateSelect(adj, b_.CreateFAdd(m, y), m);
          m = b_.CreateSelect(b_.CreateFCmpOEQ(m, f64c(0.0)), intr(llvm::Intrinsic::copysign, {f64c(0.0), y}), m);
        }
        return from_double(m, t);
      }
      // C's a % b (sign of a), x % 0 = 0, x % -1 = 0 (INT_MIN % -1 must not trap).
      llvm::Type *ty = a->getType();
      Value *zero = llvm::ConstantInt::get(ty, 0), *one = llvm::ConstantInt::get(ty, 1);
      Value *bad = b_.CreateICmpEQ(c, zero);
      if (!uns) bad = b_.CreateOr(bad, b_.CreateICmpEQ(c, llvm::ConstantInt::getSigned(ty, -1)));
      Value *safe = b_.CreateSelect(bad, one, c);
      Value *m = b_.CreateSelect(bad, zero, uns ? b_.CreateURem(a, safe) : b_.CreateSRem(a, safe));
      if (n.op_id == PK_OP_REMAINDER && !uns) {
        Value *differ = b_.CreateXor(b_.CreateICmpSLT(m, zero), b_.CreateICmpSLT(c, zero));
        m = b_.CreateSelect(b_.CreateAnd(b_.CreateICmpNE(m, zero), differ), b_.CreateAdd(m, c), m);
      }
      return m;
    }
    case PK_OP_ADD:
      return fp ? narrow(b_.CreateFAdd(a, c), t) : b_.CreateAdd(a, c);
    case PK_OP_SUB:
      return fp ? narrow(b_.CreateFSub(a, c), t) : b_.CreateSub(a, c);
    case PK_OP_MUL:
      return fp ? narrow(b_.CreateFMul(a, c), t) : b_.CreateMul(a, c);
    case PK_OP_DIV: {
      if (fp) return narrow(b_.CreateFDiv(a, c), t);
      llvm::Type *ty = a->getType();
      Value *zero = llvm::ConstantInt::get(ty, 0), *one = llvm::ConstantInt::get(ty, 1);
      Value *by_zero = b_.CreateICmpEQ(c, zero);
      if (uns) return b_.CreateSelect(by_zero, zero, b_.CreateUDiv(a, b_.CreateSelect(by_zero, one, c)));
      // x / 0 = 0 and INT_MIN / -1 = INT_MIN (dividing by 1 gives it) — never trap on the GPU or the host.
      Value *ovf = b_.CreateAnd(
          b_.CreateICmpEQ(a, llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(ty->getIntegerBitWidth()))),
          b_.CreateICmpEQ(c, llvm::ConstantInt::getSigned(ty, -1)));
      Value *safe = b_.CreateSelect(b_.CreateOr(by_zero, ovf), one, c);
      return b_.CreateSelect(by_zero, zero, b_.CreateSDiv(a, safe));
    }
    case PK_OP_MAXIMUM:
    case PK_OP_MINIMUM:
    case PK_OP_FMAX:
    case PK_OP_FMIN: {
      const bool mx = n.op_id == PK_OP_MAXIMUM || n.op_id == PK_OP_FMAX;
      if (!fp) {
        Value *pick = mx ? (uns ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c))
                         : (uns ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c));
        return b_.CreateSelect(pick, a, c);
      }
      Value *m = fmaximum(a, c, mx);
      if (n.op_id == PK_OP_MAXIMUM || n.op_id == PK_OP_MINIMUM) return m;
      // fmax/fmin ignore one NaN operand.
      return b_.CreateSelect(b_.CreateFCmpUNO(a, a), c, b_.CreateSelect(b_.CreateFCmpUNO(c, c), a, m));
    }
    case PK_OP_SHIFT_LEFT:
    case PK_OP_SHIFT_RIGHT_ARITHMETIC:
    case PK_OP_SHIFT_RIGHT_LOGICAL: {
      llvm::Type *ty = a->getType();
      const unsigned w = ty->getIntegerBitWidth();
      Value *zero = llvm::ConstantInt::get(ty, 0);
      Value *valid = b_.CreateICmpULT(c, llvm::ConstantInt::get(ty, w));  // negative counts are huge unsigned
      Value *sh = b_.CreateSelect(valid, c, zero);
      if (n.op_id == PK_OP_SHIFT_LEFT) return b_.CreateSelect(valid, b_.CreateShl(a, sh), zero);
      if (n.op_id == PK_OP_SHIFT_RIGHT_LOGICAL || uns) return b_.CreateSelect(valid, b_.CreateLShr(a, sh), zero);
      return b_.CreateSelect(valid, b_.CreateAShr(a, sh), b_.CreateAShr(a, llvm::ConstantInt::get(ty, w - 1)));
    }
    case PK_OP_BITWISE_AND:
      return b_.CreateAnd(a, c);
    case PK_OP_BITWISE_OR:
      return b_.CreateOr(a, c);
    case PK_OP_BITWISE_XOR:
      return b_.CreateXor(a, c);
    case PK_OP_LOGICAL_AND:
      return b_.CreateAnd(truth(a, t), truth(c, in_dt[1]));
    case PK_OP_LOGICAL_OR:
      return b_.CreateOr(truth(a, t), truth(c, in_dt[1]));
    case PK_OP_LOGICAL_XOR:
      return b_.CreateXor(truth(a, t), truth(c, in_dt[1]));
    case PK_OP_COPYSIGN:
      return intr(llvm::Intrinsic::copysign, {a, c});
    case PK_OP_LT:
      return fp ? b_.CreateFCmpOLT(a, c) : uns ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c);
    case PK_OP_LE:
      return fp ? b_.CreateFCmpOLE(a, c) : uns ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c);
    case PK_OP_GT:
      return fp ? b_.CreateFCmpOGT(a, c) : uns ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c);
    case PK_OP_GE:
      return fp ? b_.CreateFCmpOGE(a, c) : uns ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c);
    case PK_OP_EQ:
      return fp ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
    case PK_OP_NE:
      return fp ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
    case PK_OP_WHERE:
      return b_.CreateSelect(a, c, in[2]);
    case PK_OP_FMA:
      if (t == PK_DTYPE_F16 || t == PK_DTYPE_BF16) return fma_small(a, c, in[2], t);
      // fp8: the product is exact in f64 and the sum is exact or far from an fp8 tie.
      if (is_fp8(t)) return from_double(intr(llvm::Intrinsic::fma, {to_double(a), to_double(c), to_double(in[2])}), t);
      return intr(llvm::Intrinsic::fma, {a, c, in[2]});
    default:
      return nullptr;  // check() keeps unsupported ops away
  }
}

// ------------------------------------------------------------------------------------------- functions

Value *Emitter::apply(const Node &n, const std::vector<Value *> &val, Value *linear) {
  const int32_t out_dt = r_.dtypes[n.output];
  if (n.op_id == PK_OP_IOTA) {
    // start + step * i in i64 (wrapping like the integer ops), then converted as convert_element_type does.
    Value *v = b_.CreateAdd(extra_.at(0), b_.CreateMul(extra_.at(1), linear));
    return convert(v, PK_DTYPE_I64, out_dt);
  }
  if (is_philox_op(n.op_id)) return philox(n, linear);
  std::vector<Value *> in;
  std::vector<int32_t> dt;
  for (uint32_t v : n.inputs) {
    in.push_back(val[v]);
    dt.push_back(r_.dtypes[v]);
  }
  return node(n, in, dt, out_dt);
}

// Philox4x32-10 of counter offset + i / 4 (words 0, 1; words 2, 3 zero) and key seed (low, high words), as the
// op table and the CPU backend define it; extra = {seed, offset, then the op's two parameters (f64 bits for
// uniform's low/high and normal's mean/std, i64 for randint's low/high)}.
Value *Emitter::philox(const Node &n, Value *linear) {
  const int32_t d = r_.dtypes[n.output];
  Value *counter = b_.CreateAdd(extra_.at(1), b_.CreateLShr(linear, 2));
  auto lo32 = [&](Value *v) { return b_.CreateTrunc(v, i32_); };
  auto hi32 = [&](Value *v) { return b_.CreateTrunc(b_.CreateLShr(v, 32), i32_); };
  Value *c0 = lo32(counter), *c1 = hi32(counter), *c2 = b_.getInt32(0), *c3 = b_.getInt32(0);
  Value *k0 = lo32(extra_.at(0)), *k1 = hi32(extra_.at(0));
  for (int round = 0; round < 10; ++round) {
    Value *p0 = b_.CreateMul(b_.CreateZExt(c0, i64_), i64c(0xD2511F53));
    Value *p1 = b_.CreateMul(b_.CreateZExt(c2, i64_), i64c(0xCD9E8D57));
    Value *n0 = b_.CreateXor(b_.CreateXor(hi32(p1), c1), k0), *n2 = b_.CreateXor(b_.CreateXor(hi32(p0), c3), k1);
    c1 = lo32(p1);
    c3 = lo32(p0);
    c0 = n0;
    c2 = n2;
    k0 = b_.CreateAdd(k0, b_.getInt32(0x9E3779B9u));
    k1 = b_.CreateAdd(k1, b_.getInt32(0xBB67AE85u));
  }
  Value *lane = b_.CreateAnd(linear, i64c(3));
  auto pick = [&](Value *k, Value *w0, Value *w1, Value *w2, Value *w3) {
    return b_.CreateSelect(
        b_.CreateICmpEQ(k, i64c(0)), w0,
        b_.CreateSelect(b_.CreateICmpEQ(k, i64c(1)), w1, b_.CreateSelect(b_.CreateICmpEQ(k, i64c(2)), w2, w3)));
  };
  auto as_f64 = [&](Value *bits) { return b_.CreateBitCast(bits, f64_); };
  if (n.op_id == PK_OP_PHILOX_RANDINT) {
    // low + word mod (high - low) as a wrapping 64-bit integer, converted like convert_element_type.
    Value *word = b_.CreateZExt(pick(lane, c0, c1, c2, c3), i64_);
    Value *span = b_.CreateSub(extra_.at(3), extra_.at(2));
    return convert(b_.CreateAdd(extra_.at(2), b_.CreateURem(word, span)), PK_DTYPE_I64, d);
  }
  if (n.op_id == PK_OP_PHILOX_UNIFORM) {
    // low + (high - low) u in f64 (three roundings), then rounded toward -inf so that `high` is never reached.
    Value *u = b_.CreateFMul(b_.CreateUIToFP(pick(lane, c0, c1, c2, c3), f64_), f64c(0x1p-32));
    Value *low = as_f64(extra_.at(2)), *high = as_f64(extra_.at(3));
    Value *v = b_.CreateFAdd(low, b_.CreateFMul(b_.CreateFSub(high, low), u));
    if (d == PK_DTYPE_F64) return v;
    Value *r = from_double(v, d);
    return b_.CreateSelect(b_.CreateFCmpOGT(to_double(r), v), nextafter(r, fpc(r->getType(), -HUGE_VAL), d), r);
  }
  // Box-Muller on the pair (w0, w1) for lanes 0, 1 and (w2, w3) for lanes 2, 3: u1 = (w + 1) 2^-32 > 0,
  // u2 = w' 2^-32. Everything is carried in double-double (about 2^-100 relative), as the CPU backend's long
  // double does, because mean + std z may cancel: r = sqrt(-2 log u1) from log in double-double plus a Newton
  // correction; the angle 2 pi u2 is reduced exactly to a quarter turn q and |t| <= 1/8 turn, whose sine and
  // cosine are Taylor series with the leading terms in double-double.
  Value *upper = b_.CreateICmpUGE(lane, i64c(2));
  Value *wa = b_.CreateSelect(upper, c2, c0), *wb = b_.CreateSelect(upper, c3, c1);
  Value *u1 = b_.CreateFMul(b_.CreateFAdd(b_.CreateUIToFP(wa, f64_), f64c(1.0)), f64c(0x1p-32));
  Value *u2 = b_.CreateFMul(b_.CreateUIToFP(wb, f64_), f64c(0x1p-32));
  Value *log_lo = nullptr;
  Value *log_hi = log_dd(u1, log_lo);
  Value *r2_hi = b_.CreateFMul(f64c(-2.0), log_hi), *r2_lo = b_.CreateFMul(f64c(-2.0), log_lo);
  DD rad;
  rad.hi = intr(llvm::Intrinsic::sqrt, {r2_hi});
  Value *resid = b_.CreateFAdd(fma(b_.CreateFNeg(rad.hi), rad.hi, r2_hi), r2_lo);
  rad.lo = b_.CreateSelect(b_.CreateFCmpOGT(rad.hi, f64c(0.0)), b_.CreateFDiv(resid, b_.CreateFMul(rad.hi, f64c(2.0))),
                           f64c(0.0));  // u1 = 1 gives r = 0
  Value *quarter = intr(llvm::Intrinsic::rint, {b_.CreateFMul(u2, f64c(4.0))});
  Value *t = b_.CreateFSub(u2, b_.CreateFMul(quarter, f64c(0.25)));  // exact
  const double two_pi_hi = 6.283185307179586232, two_pi_lo = 2.4492935982947064e-16;
  DD a;
  a.hi = b_.CreateFMul(t, f64c(two_pi_hi));
  a.lo = fma(t, f64c(two_pi_lo), fma(t, f64c(two_pi_hi), b_.CreateFNeg(a.hi)));
  const DD a2 = dd_mul(a, a);
  // 1/k! as double-double (the low part from long double: 64 bits, ample for these leading terms).
  auto inv_fact = [&](int k, bool negative) {
    long double f = 1;
    for (int q = 2; q <= k; ++q) f *= q;
    const long double v = (negative ? -1.0L : 1.0L) / f;
    const double hi = static_cast<double>(v);
    return DD{f64c(hi), f64c(static_cast<double>(v - hi))};
  };
  // sin t = t (1 - t^2/3! + t^4/5! - t^6 S), cos t = 1 - t^2/2! + t^4/4! - t^6/6! + t^8 C: the tails S and C
  // (below 4e-5 and 3e-6 of the value at |t| = pi/4) in double, to t^21 / t^20.
  Value *sin_tail =
      horner(a2.hi, {-1.0 / 5040, 1.0 / 362880, -1.0 / 39916800, 1.0 / 6227020800.0, -1.0 / 1307674368000.0,
                     1.0 / 355687428096000.0, -1.0 / 121645100408832000.0, 1.0 / 51090942171709440000.0});
  DD sp = dd_add(inv_fact(5, false), dd_mul_d(a2, sin_tail));
  sp = dd_add(inv_fact(3, true), dd_mul(a2, sp));
  sp = dd_add_d(dd_mul(a2, sp), f64c(1.0));
  const DD sn = dd_mul(a, sp);
  Value *cos_tail = horner(a2.hi, {1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600, -1.0 / 87178291200.0,
                                   1.0 / 20922789888000.0, -1.0 / 6402373705728000.0, 1.0 / 2432902008176640000.0});
  DD cp = dd_add(inv_fact(6, true), dd_mul_d(a2, cos_tail));
  cp = dd_add(inv_fact(4, false), dd_mul(a2, cp));
  cp = dd_add(inv_fact(2, true), dd_mul(a2, cp));
  const DD cs = dd_add_d(dd_mul(a2, cp), f64c(1.0));
  // Rotate by q quarter turns; lane parity picks the cosine or the sine.
  Value *q = b_.CreateAnd(b_.CreateFPToSI(quarter, i64_), i64c(3));
  Value *odd = b_.CreateICmpEQ(b_.CreateAnd(linear, i64c(1)), i64c(1));
  // cos(t + q pi/2) = cos, -sin, -cos, sin; sin(t + q pi/2) = sin, cos, -sin, -cos.
  Value *use_sin = b_.CreateXor(odd, b_.CreateICmpEQ(b_.CreateAnd(q, i64c(1)), i64c(1)));
  // Signs: cosine (even lanes) negative for q = 1, 2; sine (odd lanes) for q = 2, 3.
  Value *negative = b_.CreateSelect(odd, b_.CreateICmpUGE(q, i64c(2)),
                                    b_.CreateOr(b_.CreateICmpEQ(q, i64c(1)), b_.CreateICmpEQ(q, i64c(2))));
  DD trig{b_.CreateSelect(use_sin, sn.hi, cs.hi), b_.CreateSelect(use_sin, sn.lo, cs.lo)};
  trig = {b_.CreateSelect(negative, b_.CreateFNeg(trig.hi), trig.hi),
          b_.CreateSelect(negative, b_.CreateFNeg(trig.lo), trig.lo)};
  const DD z = dd_mul(rad, trig);
  const DD v = dd_add_d(dd_mul_d(z, as_f64(extra_.at(3))), as_f64(extra_.at(2)));
  return from_double(b_.CreateFAdd(v.hi, v.lo), d);
}

std::vector<Value *> Emitter::element(Value *linear) {
  std::vector<Value *> val(r_.dtypes.size(), nullptr);
  std::vector<Value *> idx = unravel(linear);
  // Loads only of inputs some node reads as data (fill reads only its input's shape).
  std::vector<bool> used(r_.dtypes.size(), false);
  for (const Node &n : r_.nodes)
    if (n.op_id != PK_OP_FILL)
      for (size_t q = 0; q < n.inputs.size(); ++q)
        if (n.op_id != PK_OP_GATHER || q != 0) used[n.inputs[q]] = true;  // gather loads its data itself
  for (uint32_t v : r_.outputs) used[v] = true;                           // a copy region stores its input
  for (size_t k = 0; k < r_.inputs.size(); ++k) {
    uint32_t v = r_.inputs[k];
    if (used[v]) val[v] = load(r_.dtypes[v], args_[k], offset_of(static_cast<int>(k), linear, idx));
  }
  for (const Node &n : r_.nodes)
    val[n.output] = n.op_id == PK_OP_GATHER ? gather(n, idx, linear, val) : apply(n, val, linear);
  for (size_t k = 0; k < r_.outputs.size(); ++k) {
    uint32_t v = r_.outputs[k];
    const int arg = static_cast<int>(r_.inputs.size() + k);
    store(r_.dtypes[v], val[v], args_[arg], offset_of(arg, linear, idx));
  }
  return val;
}

// The element of a (input 0) at this position with the gathered axis set to the index; 0 outside [0, extent).
// The load sits behind a branch: with an empty axis there is no element to read at all.
Value *Emitter::gather(const Node &n, const std::vector<Value *> &idx, Value *linear, const std::vector<Value *> &val) {
  int arg = 0;
  while (r_.inputs[static_cast<size_t>(arg)] != n.inputs[0]) ++arg;
  const int32_t d = r_.dtypes[n.inputs[0]];
  Value *i = b_.CreateSExt(val[n.inputs[1]], i64_);
  Value *inside = b_.CreateICmpULT(i, extra_.at(0));  // negative indices are huge unsigned values
  Value *off = b_.CreateAdd(offset_of(arg, linear, idx), b_.CreateMul(i, extra_.at(1)));
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  auto *pre = b_.GetInsertBlock();
  auto *ld = llvm::BasicBlock::Create(ctx_, "gather_load", f);
  auto *join = llvm::BasicBlock::Create(ctx_, "gather_join", f);
  b_.CreateCondBr(inside, ld, join);
  b_.SetInsertPoint(ld);
  Value *v = load(d, args_[arg], off);
  auto *ld_end = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  auto *phi = b_.CreatePHI(v->getType(), 2);
  phi->addIncoming(v, ld_end);
  phi->addIncoming(llvm::Constant::getNullValue(v->getType()), pre);
  return phi;
}

}  // namespace pk::codegen::detail
