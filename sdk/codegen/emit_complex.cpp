// emit_complex.cpp — complex values in the kernel generator (see emit_complex.hpp). The arithmetic the op table
// contracts correctly rounded (abs, mul, div, reciprocal, sqrt), exp, log, sin, cos, tanh, polar and pow are the
// device math's (sdk/devmath/complex.h and cpow.h, shared with the CPU and OpenCL backends); reductions and dot
// products follow the OpenCL backend's cl_complex.cpp (C11 Annex G special values).
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
Value *ComplexEmitter::is_inf(Value *x) {
  return b_.CreateFCmpOEQ(fabs(x), llvm::ConstantFP::get(x->getType(), kInf));
}
Value *ComplexEmitter::is_finite(Value *x) {
  return b_.CreateFCmpOLT(fabs(x), llvm::ConstantFP::get(x->getType(), kInf));
}
Value *ComplexEmitter::fma(Value *a, Value *x, Value *c) {
  return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, x, c});
}
Value *ComplexEmitter::widen(Value *z) {
  auto *vt = llvm::cast<llvm::FixedVectorType>(z->getType());
  if (vt->getElementType() == f64_) return z;
  return b_.CreateFPExt(z, llvm::FixedVectorType::get(f64_, 2));
}
Value *ComplexEmitter::round_to(Value *z2, int32_t dt) {
  return dt == PK_DTYPE_C64 ? b_.CreateFPTrunc(z2, vector_type(dt)) : z2;
}

// ---------------------------------------------------------------------------------------- double-double

ComplexEmitter::DD ComplexEmitter::two_sum(Value *a, Value *x) {
  Value *s = b_.CreateFAdd(a, x);
  Value *bb = b_.CreateFSub(s, a);
  Value *e = b_.CreateFAdd(b_.CreateFSub(a, b_.CreateFSub(s, bb)), b_.CreateFSub(x, bb));
  return {s, e};
}
ComplexEmitter::DD ComplexEmitter::two_prod(Value *a, Value *x) {
  Value *p = b_.CreateFMul(a, x);
  return {p, fma(a, x, b_.CreateFNeg(p))};
}

// ----------------------------------------------------------------------------------------- products, quotients

// C11 Annex G's _Cmultd (the plain product, and where both parts come out NaN, infinities recovered): the device
// math's (sdk/devmath/complex.h), as the OpenCL backend's reductions use it.
Value *ComplexEmitter::mul_g(Value *a, Value *x, Value *c, Value *y) {
  Value *r = nullptr, *i = nullptr;
  m_.devmath_complex("pk_dm_cmul_g", {a, x, c, y}, r, i);
  return pair(r, i);
}

Value *ComplexEmitter::devmath_arith(const char *name, Value *u, Value *v, int32_t dt) {
  Value *u2 = widen(u), *v2 = widen(v), *r = nullptr, *i = nullptr;
  m_.devmath_complex(name, {re(u2), im(u2), re(v2), im(v2), b_.getInt32(dt == PK_DTYPE_C64 ? 1 : 0)}, r, i);
  return round_to(pair(r, i), dt);
}

// ------------------------------------------------------------------------------------ elementary functions

// exp, log, cos, sin and tanh of an (f64, f64) pair are the device math's (sdk/devmath/complex.h, the same source
// the CPU and OpenCL backends use), linked into the kernel by emit_devmath.cpp.
Value *ComplexEmitter::devmath_cx(const char *name, Value *z) {
  Value *r = nullptr, *i = nullptr;
  m_.devmath_complex(name, {re(z), im(z)}, r, i);
  return pair(r, i);
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
    case PK_OP_ABS: {  // c64: rounded once to float by the device math, so the narrowing is exact
      Value *z = widen(a);
      Value *r = m_.devmath("pk_dm_cabs", {re(z), im(z), b_.getInt32(t == PK_DTYPE_C64 ? 1 : 0)});
      return t == PK_DTYPE_C64 ? b_.CreateFPTrunc(r, f32_) : r;
    }
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
      return devmath_arith("pk_dm_cmul", a, c, t);
    case PK_OP_DIV:
      return devmath_arith("pk_dm_cdiv", a, c, t);
    case PK_OP_RECIPROCAL:
      return devmath_arith("pk_dm_cdiv", pair(d(1.0), d(0.0)), a, t);
    case PK_OP_SQRT: {
      Value *z = widen(a), *r = nullptr, *i = nullptr;
      m_.devmath_complex("pk_dm_csqrt", {re(z), im(z), b_.getInt32(t == PK_DTYPE_C64 ? 1 : 0)}, r, i);
      return round_to(pair(r, i), t);
    }
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
      return devmath_arith("pk_dm_cpow", a, c, t);  // sdk/devmath/cpow.h: its cases, paths and exact phase
    default:
      return nullptr;  // check() keeps other ops away
  }
}

// ------------------------------------------------------------------------------------------------ reductions

// The running sums and products are the device math's steps (sdk/devmath/complex.h, the OpenCL backend's too) on
// states of f64 scalars: a sum (sum.re, sum.im, scaled.re, scaled.im, flags.re, flags.im), a product (z.re, z.im, e).
std::vector<Value *> ComplexEmitter::red_init(uint32_t op) {
  switch (op) {
    case PK_OP_SUM:
    case PK_OP_CUMSUM:
      return std::vector<Value *>(6, d(0.0));
    case PK_OP_PROD:
    case PK_OP_CUMPROD:  // the value 2^e z: z = 1/2, e = 1
      return {d(0.5), d(0.0), d(1.0)};
    case PK_OP_ANY:
      return {b_.getFalse()};
    default:  // all
      return {b_.getTrue()};
  }
}

std::vector<Value *> ComplexEmitter::red_step(uint32_t op, const std::vector<Value *> &acc, Value *x) {
  Value *w = widen(x);
  switch (op) {
    case PK_OP_SUM:
    case PK_OP_CUMSUM: {
      std::vector<Value *> args = acc;
      for (Value *t : m_.devmath_parts("pk_dm_csum_term", {re(w), im(w)}, 6)) args.push_back(t);
      return m_.devmath_parts("pk_dm_csum_add", args, 6);
    }
    case PK_OP_PROD:
    case PK_OP_CUMPROD: {
      std::vector<Value *> args = acc;
      for (Value *t : m_.devmath_parts("pk_dm_cprod_norm", {re(w), im(w), d(0.0)}, 3)) args.push_back(t);
      return m_.devmath_parts("pk_dm_cprod_mul", args, 3);
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
    case PK_OP_CUMSUM:
      return round_to(pair(m_.devmath("pk_dm_csum_part", {acc[0], acc[2], acc[4]}),
                           m_.devmath("pk_dm_csum_part", {acc[1], acc[3], acc[5]})),
                      out_dt);
    case PK_OP_PROD:
    case PK_OP_CUMPROD: {
      const std::vector<Value *> v = m_.devmath_parts("pk_dm_cprod_value", {acc[0], acc[1], acc[2]}, 2);
      return round_to(pair(v[0], v[1]), out_dt);
    }
    default:
      return acc[0];
  }
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
