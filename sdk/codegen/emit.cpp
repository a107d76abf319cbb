// emit.cpp — LLVM IR for a Region: the per-work-item function (`item`), the grid-stride body of the GPU kernel
// (`body`), and the entry of each target (the NVPTX kernel, the host grid emulator, the host CPU loop).
//
// Numerics (the op table's contracts):
// - f16/bf16 values are computed in f32 and rounded back to their format after every node, so a fused chain
//   gives the same bits as the same ops run one by one.
// - Transcendentals are our own IR, identical on every target (no libm, no libdevice): they are evaluated in
//   f64 with range reduction and Taylor polynomials of enough terms to be accurate to about 1 ulp of f64, then
//   rounded once to the value's format. For f32 that is within 1 ulp; f64 stays within the table's 3-5 ulp.
//   The price is f64 arithmetic on GPUs, acceptable for memory-bound elementwise kernels.
// - sqrt, fma, floor, ceil, trunc, rint, round, copysign, fabs use LLVM intrinsics every target lowers to
//   IEEE instructions (NVPTX: sqrt.rn, fma.rn, cvt.rmi/rpi/rzi/rni ...).
// - Narrowing to f16 from f64 is one IEEE conversion; to bf16 it goes through f32 rounded to odd, which makes
//   the second rounding exact (24 >= 8 + 2 bits).
// - Float sums and products accumulate in f64. On the host (CPU target) the accumulation may be reassociated so
//   that row loops vectorize; GPU threads, and the emulator that stands for them, accumulate in index order.
#include "emit.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "primkit/backend_kit.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

namespace pk::codegen::detail {

namespace {

using llvm::Value;

bool is_fp(int32_t d) {
  return d == PK_DTYPE_F16 || d == PK_DTYPE_BF16 || d == PK_DTYPE_F32 || d == PK_DTYPE_F64;
}
bool is_unsigned(int32_t d) {
  return d == PK_DTYPE_U8 || d == PK_DTYPE_BOOL;
}

class Emitter {
 public:
  Emitter(llvm::LLVMContext &ctx, llvm::Module &m, const KernelSpec &spec, Target target)
      : ctx_(ctx), m_(m), b_(ctx), spec_(spec), r_(spec.region), target_(target) {
    i1_ = b_.getInt1Ty();
    i8_ = b_.getInt8Ty();
    i16_ = b_.getInt16Ty();
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
    f16_ = b_.getHalfTy();
    f32_ = b_.getFloatTy();
    f64_ = b_.getDoubleTy();
    ptr_ = llvm::PointerType::getUnqual(ctx);
    nargs_ = static_cast<int>(r_.num_args());
    rank_ = spec.rank;
    nscalars_ = 2 + rank_ + nargs_ * rank_ + static_cast<int>(r_.num_extra);
  }

  // Parameter types shared by item/body/kernel: K pointers then the i64 scalars.
  std::vector<llvm::Type *> param_types() const {
    std::vector<llvm::Type *> t(nargs_, ptr_);
    t.insert(t.end(), nscalars_, i64_);
    return t;
  }

  llvm::Function *build_item();
  llvm::Function *build_body(llvm::Function *item);
  void build_nvptx_kernel(llvm::Function *body, const std::string &name);
  void build_emu_entry(llvm::Function *body, const std::string &name);
  void build_cpu_entry(llvm::Function *item, const std::string &name);

 private:
  // --- types and constants ---
  llvm::Type *storage_type(int32_t d) const {
    switch (d) {
      case PK_DTYPE_BOOL:
      case PK_DTYPE_U8:
      case PK_DTYPE_I8:
        return i8_;
      case PK_DTYPE_I16:
      case PK_DTYPE_BF16:
        return i16_;
      case PK_DTYPE_F16:
        return f16_;
      case PK_DTYPE_I32:
        return i32_;
      case PK_DTYPE_I64:
        return i64_;
      case PK_DTYPE_F32:
        return f32_;
      default:
        return f64_;
    }
  }
  // The type a value is computed in: i1 for bool, the integer itself, f32 for f16/bf16/f32, f64 for f64.
  llvm::Type *compute_type(int32_t d) const {
    switch (d) {
      case PK_DTYPE_BOOL:
        return i1_;
      case PK_DTYPE_U8:
      case PK_DTYPE_I8:
        return i8_;
      case PK_DTYPE_I16:
        return i16_;
      case PK_DTYPE_I32:
        return i32_;
      case PK_DTYPE_I64:
        return i64_;
      case PK_DTYPE_F64:
        return f64_;
      default:
        return f32_;
    }
  }
  Value *f64c(double v) { return llvm::ConstantFP::get(f64_, v); }
  Value *fpc(llvm::Type *t, double v) { return llvm::ConstantFP::get(t, v); }
  Value *i64c(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  Value *intr(llvm::Intrinsic::ID id, llvm::ArrayRef<Value *> args) {
    return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
  }

  // --- memory ---
  Value *load(int32_t d, Value *base, Value *offset);
  void store(int32_t d, Value *v, Value *base, Value *offset);
  Value *offset_of(int arg, Value *linear, const std::vector<Value *> &idx);
  std::vector<Value *> unravel(Value *linear);

  // --- conversions and rounding ---
  Value *round_bf16(Value *f);                           // f32 -> f32 holding the nearest bf16
  Value *narrow(Value *v, int32_t d);                    // compute-type value -> rounded to d's format
  Value *from_double(Value *v, int32_t d);               // f64 -> d's compute type with one rounding
  Value *round_odd_to_float(Value *d, Value *err_sign);  // f64 (plus sign of the lost part) -> f32, rounded to odd
  Value *to_double(Value *v) { return v->getType() == f64_ ? v : b_.CreateFPExt(v, f64_); }
  Value *convert(Value *v, int32_t from, int32_t to);
  Value *truth(Value *v, int32_t d);
  Value *constant(double value, int32_t d);

  // --- math in f64 ---
  Value *int_of(Value *k);
  Value *pow2i(Value *k);  // 2^k for i64 k in [-1022, 1023]
  Value *exp_poly(Value *r);
  Value *expm1_poly(Value *r);
  Value *exp_d(Value *x);
  Value *exp2_d(Value *x);
  Value *expm1_d(Value *x);
  void log_parts(Value *x, Value *&e, Value *&logm);
  Value *log_special(Value *x, Value *r);
  Value *log_d(Value *x);
  Value *log2_d(Value *x);
  Value *tanh_d(Value *x);

  Value *fmaximum(Value *a, Value *c, bool is_max);
  Value *node(const Node &n, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt, int32_t out_dt);
  Value *fma_small(Value *a, Value *b, Value *c, int32_t d);

  // Emits loads of the region's inputs at `linear`, every node, and the stores of element outputs.
  std::vector<Value *> element(Value *linear);

  // --- row programs (regions with reductions) ---
  using Step = std::function<std::vector<Value *>(Value *c, const std::vector<Value *> &accs)>;
  std::vector<Value *> loop_cols(const std::vector<Value *> &init, const Step &step);
  Value *arg_offset(int arg, Kind k, Value *j, Value *row0, Value *c);
  // Computes the element-kind values `need` marks at column c (loads included) on top of the row values.
  // stashed[v] >= 0: v is loaded from that argument instead of computed.
  std::vector<Value *> elem_values(const std::vector<Value *> &rowv, const std::vector<bool> &need,
                                   const std::vector<int> &stashed, Value *j, Value *row0, Value *c);
  void build_rows(Value *j);
  Value *apply(const Node &n, const std::vector<Value *> &val, Value *linear);
  std::vector<Value *> red_init(const Node &n, int32_t xdt);
  std::vector<Value *> red_step(const Node &n, int32_t xdt, const std::vector<Value *> &acc, Value *x, Value *c);
  Value *red_final(const Node &n, int32_t xdt, int32_t ydt, const std::vector<Value *> &acc);

  llvm::LLVMContext &ctx_;
  llvm::Module &m_;
  llvm::IRBuilder<> b_;
  const KernelSpec &spec_;
  const Region &r_;
  Target target_;
  llvm::Type *i1_, *i8_, *i16_, *i32_, *i64_, *f16_, *f32_, *f64_, *ptr_;
  int nargs_, rank_, nscalars_;
  std::vector<Value *> args_;  // the current function's K pointers
  Value *n_ = nullptr, *cols_ = nullptr;
  std::vector<Value *> extra_;
  std::vector<Value *> shape_;
  std::vector<std::vector<Value *>> strides_;
};

// ---------------------------------------------------------------------------------------------------- memory

Value *Emitter::load(int32_t d, Value *base, Value *offset) {
  Value *p = b_.CreateGEP(storage_type(d), base, offset);
  Value *v = b_.CreateLoad(storage_type(d), p);
  switch (d) {
    case PK_DTYPE_BOOL:
      return b_.CreateICmpNE(v, b_.getInt8(0));
    case PK_DTYPE_F16:
      return b_.CreateFPExt(v, f32_);
    case PK_DTYPE_BF16:
      return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, i32_), 16), f32_);
    default:
      return v;
  }
}

void Emitter::store(int32_t d, Value *v, Value *base, Value *offset) {
  Value *p = b_.CreateGEP(storage_type(d), base, offset);
  switch (d) {
    case PK_DTYPE_BOOL:
      v = b_.CreateZExt(v, i8_);
      break;
    case PK_DTYPE_F16:
      v = b_.CreateFPTrunc(v, f16_);
      break;  // exact: v already holds an f16 value
    case PK_DTYPE_BF16:
      v = b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(v, i32_), 16), i16_);
      break;
    default:
      break;
  }
  b_.CreateStore(v, p);
}

std::vector<Value *> Emitter::unravel(Value *linear) {
  std::vector<Value *> idx(rank_);
  Value *rem = linear;
  for (int d = rank_ - 1; d >= 0; --d) {
    if (d == 0) {
      idx[d] = rem;
    } else {
      // An empty axis still reaches here for a reduction's row store: never divide by zero.
      Value *ext = b_.CreateSelect(b_.CreateICmpEQ(shape_[d], i64c(0)), i64c(1), shape_[d]);
      idx[d] = b_.CreateURem(rem, ext);
      rem = b_.CreateUDiv(rem, ext);
    }
  }
  return idx;
}

Value *Emitter::offset_of(int arg, Value *linear, const std::vector<Value *> &idx) {
  if (rank_ == 0) return linear;
  Value *off = i64c(0);
  for (int d = 0; d < rank_; ++d) off = b_.CreateAdd(off, b_.CreateMul(idx[d], strides_[arg][d]));
  return off;
}

// ------------------------------------------------------------------------------------------ conversions

Value *Emitter::round_bf16(Value *f) {
  // Round to nearest even on the upper 16 bits; NaN keeps its sign and becomes quiet.
  Value *bits = b_.CreateBitCast(f, i32_);
  Value *lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
  Value *rounded = b_.CreateAnd(b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7fff))), b_.getInt32(0xffff0000u));
  Value *nan = b_.CreateOr(b_.CreateAnd(bits, b_.getInt32(0xffff0000u)), b_.getInt32(0x00400000));
  Value *is_nan = b_.CreateFCmpUNO(f, f);
  return b_.CreateBitCast(b_.CreateSelect(is_nan, nan, rounded), f32_);
}

Value *Emitter::narrow(Value *v, int32_t d) {
  if (d == PK_DTYPE_F16) return b_.CreateFPExt(b_.CreateFPTrunc(v, f16_), f32_);
  if (d == PK_DTYPE_BF16) return round_bf16(v);
  return v;
}

Value *Emitter::round_odd_to_float(Value *d, Value *err_sign) {
  // r = d rounded to nearest; if that was inexact, replace it by the truncation of the exact value with its last
  // bit set (round to odd). err_sign > 0 / < 0 says the exact value lies above / below d (0: d is exact).
  Value *r = b_.CreateFPTrunc(d, f32_);
  Value *back = b_.CreateFPExt(r, f64_);
  // Exact value vs r: compare d to back, then the lost part breaks a tie.
  Value *above = b_.CreateOr(b_.CreateFCmpOGT(d, back),
                             b_.CreateAnd(b_.CreateFCmpOEQ(d, back), b_.CreateFCmpOGT(err_sign, f64c(0))));
  Value *below = b_.CreateOr(b_.CreateFCmpOLT(d, back),
                             b_.CreateAnd(b_.CreateFCmpOEQ(d, back), b_.CreateFCmpOLT(err_sign, f64c(0))));
  Value *inexact = b_.CreateOr(above, below);
  Value *bits = b_.CreateBitCast(r, i32_);
  // |exact| < |r| means truncation is one step toward zero from r: magnitude bits - 1.
  Value *neg = b_.CreateICmpSLT(bits, b_.getInt32(0));
  Value *mag_too_big = b_.CreateSelect(neg, above, below);
  Value *trunc = b_.CreateSelect(mag_too_big, b_.CreateSub(bits, b_.getInt32(1)), bits);
  Value *odd = b_.CreateOr(trunc, b_.getInt32(1));
  Value *nan_or_inf = b_.CreateFCmpUNO(b_.CreateFSub(d, d), f64c(0));
  Value *res = b_.CreateSelect(b_.CreateAnd(inexact, b_.CreateNot(nan_or_inf)), odd, bits);
  return b_.CreateBitCast(res, f32_);
}

Value *Emitter::from_double(Value *v, int32_t d) {
  switch (d) {
    case PK_DTYPE_F64:
      return v;
    case PK_DTYPE_F32:
      return b_.CreateFPTrunc(v, f32_);
    case PK_DTYPE_F16:
      return b_.CreateFPExt(b_.CreateFPTrunc(v, f16_), f32_);
    case PK_DTYPE_BF16:
      return round_bf16(round_odd_to_float(v, f64c(0)));
    default:
      return v;
  }
}

Value *Emitter::truth(Value *v, int32_t d) {
  if (d == PK_DTYPE_BOOL) return v;
  if (is_fp(d)) return b_.CreateFCmpUNE(v, fpc(v->getType(), 0.0));  // NaN is nonzero
  return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
}

Value *Emitter::convert(Value *v, int32_t from, int32_t to) {
  if (from == to) return v;
  if (to == PK_DTYPE_BOOL) return truth(v, from);
  llvm::Type *ct = compute_type(to);
  if (!is_fp(from)) {  // bool or integer source
    if (!is_fp(to)) return b_.CreateIntCast(v, ct, !is_unsigned(from));
    if (to == PK_DTYPE_BF16 && (from == PK_DTYPE_I32 || from == PK_DTYPE_I64)) {
      // i32 is exact in f64; then one correct rounding through round-to-odd f32 (i64 is refused by check()).
      Value *dv = is_unsigned(from) ? b_.CreateUIToFP(v, f64_) : b_.CreateSIToFP(v, f64_);
      return from_double(dv, to);
    }
    Value *f = is_unsigned(from) ? b_.CreateUIToFP(v, ct) : b_.CreateSIToFP(v, ct);
    // Integers wider than 24 bits round once into f32; every such value overflows f16 anyway, and bf16 from
    // i8/u8/i16 is exact in f32, so one more rounding to the 16-bit format is the only one.
    return narrow(f, to);
  }
  if (!is_fp(to)) {  // float -> integer: truncate toward zero, saturate, NaN -> 0
    auto id = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return b_.CreateIntrinsic(id, {ct, v->getType()}, {v});
  }
  // float -> float
  if (to == PK_DTYPE_F64) return to_double(v);
  if (from == PK_DTYPE_F64) return from_double(v, to);
  // f16/bf16/f32 (all held in f32) to f32/f16/bf16: one rounding of an exact f32 value.
  return narrow(v, to);
}

Value *Emitter::constant(double value, int32_t d) {
  switch (d) {
    case PK_DTYPE_BOOL:
      return b_.getInt1(value != 0.0 || std::isnan(value));
    case PK_DTYPE_F64:
      return f64c(value);
    case PK_DTYPE_F32:
      return fpc(f32_, static_cast<double>(static_cast<float>(value)));
    case PK_DTYPE_F16:
      return fpc(f32_, pk::kit::half(value).to_double());
    case PK_DTYPE_BF16:
      return fpc(f32_, pk::kit::bfloat16(value).to_double());
    default:
      break;
  }
  // Integers: truncate toward zero and saturate, NaN -> 0 (convert_element_type's rule).
  llvm::Type *t = compute_type(d);
  const unsigned bits = t->getIntegerBitWidth();
  double lo = is_unsigned(d) ? 0.0 : -std::ldexp(1.0, static_cast<int>(bits) - 1);
  double hi =
      is_unsigned(d) ? std::ldexp(1.0, static_cast<int>(bits)) - 1.0 : std::ldexp(1.0, static_cast<int>(bits) - 1);
  if (std::isnan(value)) return llvm::ConstantInt::get(t, 0);
  double tv = std::trunc(value);
  if (tv <= lo) return llvm::ConstantInt::get(t, static_cast<uint64_t>(static_cast<int64_t>(lo)));
  if (tv >= hi) {
    // hi is 2^(bits-1) for signed (not representable): the maximum is hi - 1.
    if (is_unsigned(d)) return llvm::ConstantInt::get(t, static_cast<uint64_t>(hi));
    return llvm::ConstantInt::get(t, llvm::APInt::getSignedMaxValue(bits));
  }
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(static_cast<int64_t>(tv)), true);
}

// -------------------------------------------------------------------------------------------- f64 math

// k (an integral f64, |k| < 2^51) as i64 without fptosi, which x86 before AVX-512 cannot vectorize: adding
// 1.5 * 2^52 puts k in the low mantissa bits; subtracting that constant's bits leaves k. Same value as fptosi.
Value *Emitter::int_of(Value *k) {
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  Value *bits = b_.CreateBitCast(b_.CreateFAdd(k, f64c(kMagic)), i64_);
  return b_.CreateSub(bits, i64c(0x4338000000000000ll));
}

Value *Emitter::pow2i(Value *k) {
  return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, i64c(1023)), 52), f64_);
}

// e^r for |r| <= ln2/2: Taylor to r^13 (truncation 4e-18 relative), Horner with fma.
Value *Emitter::exp_poly(Value *r) {
  double c[14];
  c[0] = 1.0;
  for (int i = 1; i < 14; ++i) c[i] = c[i - 1] / i;
  Value *p = f64c(c[13]);
  for (int i = 12; i >= 0; --i) p = intr(llvm::Intrinsic::fma, {p, r, f64c(c[i])});
  return p;
}

// e^r - 1 for |r| <= ln2/2 without cancellation: r + r^2 (1/2 + r/6 + ... r^12/14!).
Value *Emitter::expm1_poly(Value *r) {
  double c[15];
  c[0] = 1.0;
  for (int i = 1; i < 15; ++i) c[i] = c[i - 1] / i;
  Value *q = f64c(c[14]);
  for (int i = 13; i >= 2; --i) q = intr(llvm::Intrinsic::fma, {q, r, f64c(c[i])});
  return intr(llvm::Intrinsic::fma, {b_.CreateFMul(r, r), q, r});
}

namespace consts {
constexpr double kInvLn2 = 1.4426950408889634074;
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3fe62e42fee00000: k * kLn2Hi is exact for |k| < 2^20
constexpr double kLn2Lo = 1.90821492927058770002e-10;  // 0x3dea39ef35793c76
constexpr double kLog2eHi = 1.4426950408889634;
constexpr double kLog2eLo = 2.0355273740931033e-17;
}  // namespace consts

Value *Emitter::exp_d(Value *x) {
  using namespace consts;
  // Clamp (NaN goes to the upper bound and is restored at the end); beyond the clamps the result is inf or 0.
  Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(710.0)), x, f64c(710.0));
  xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, f64c(-746.0)), xc, f64c(-746.0));
  Value *k = intr(llvm::Intrinsic::rint, {b_.CreateFMul(xc, f64c(kInvLn2))});
  Value *r = intr(llvm::Intrinsic::fma, {b_.CreateFNeg(k), f64c(kLn2Hi), xc});
  r = intr(llvm::Intrinsic::fma, {b_.CreateFNeg(k), f64c(kLn2Lo), r});
  Value *p = exp_poly(r);
  // 2^k in two factors so that k in [-1077, 1025] stays inside the normal exponent range of each.
  Value *ki = int_of(k);
  Value *k1 = b_.CreateAShr(ki, 1);
  Value *k2 = b_.CreateSub(ki, k1);
  Value *res = b_.CreateFMul(b_.CreateFMul(p, pow2i(k1)), pow2i(k2));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::exp2_d(Value *x) {
  using namespace consts;
  Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(1025.0)), x, f64c(1025.0));
  xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, f64c(-1077.0)), xc, f64c(-1077.0));
  Value *k = intr(llvm::Intrinsic::rint, {xc});
  Value *f = b_.CreateFSub(xc, k);  // exact, |f| <= 1/2
  // t = f * ln2 carried in two parts to keep the reduced argument accurate to ~2^-60.
  Value *t = intr(llvm::Intrinsic::fma, {f, f64c(kLn2Hi), b_.CreateFMul(f, f64c(kLn2Lo))});
  Value *p = exp_poly(t);
  Value *ki = int_of(k);
  Value *k1 = b_.CreateAShr(ki, 1);
  Value *k2 = b_.CreateSub(ki, k1);
  Value *res = b_.CreateFMul(b_.CreateFMul(p, pow2i(k1)), pow2i(k2));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::expm1_d(Value *x) {
  using namespace consts;
  // Main path valid for k in [-60, 1023]; below, the result is -1 to double precision; above 709 it is e^x.
  Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(709.0)), x, f64c(709.0));
  xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, f64c(-41.0)), xc, f64c(-41.0));
  Value *k = intr(llvm::Intrinsic::rint, {b_.CreateFMul(xc, f64c(kInvLn2))});
  Value *r = intr(llvm::Intrinsic::fma, {b_.CreateFNeg(k), f64c(kLn2Hi), xc});
  r = intr(llvm::Intrinsic::fma, {b_.CreateFNeg(k), f64c(kLn2Lo), r});
  Value *em = expm1_poly(r);
  Value *s = pow2i(int_of(k));
  // 2^k (1 + em) - 1 = 2^k em + (2^k - 1): no cancellation for k != 0, and exactly em for k == 0.
  Value *res = intr(llvm::Intrinsic::fma, {s, em, b_.CreateFSub(s, f64c(1.0))});
  res = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(-40.0)), f64c(-1.0), res);
  res = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(709.0)), exp_d(x), res);
  res = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(0.0)), x, res);  // keeps -0
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

void Emitter::log_parts(Value *x, Value *&e, Value *&logm) {
  // Subnormals are scaled into the normal range first.
  Value *sub = b_.CreateFCmpOLT(x, f64c(0x1p-1022));
  Value *xs = b_.CreateSelect(sub, b_.CreateFMul(x, f64c(0x1p54)), x);
  Value *eadj = b_.CreateSelect(sub, i64c(-54), i64c(0));
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)) (fdlibm's split at 0x3fe6a09e).
  Value *bits = b_.CreateBitCast(xs, i64_);
  Value *ix = b_.CreateAdd(bits, i64c(static_cast<int64_t>(0x3ff0000000000000ull - 0x3fe6a09e00000000ull)));
  Value *ei = b_.CreateAdd(b_.CreateSub(b_.CreateAShr(ix, 52), i64c(1023)), eadj);
  Value *mbits = b_.CreateAdd(b_.CreateAnd(ix, i64c(0x000fffffffffffffll)), i64c(0x3fe6a09e00000000ll));
  Value *m = b_.CreateBitCast(mbits, f64_);
  Value *f = b_.CreateFSub(m, f64c(1.0));  // exact (Sterbenz)
  Value *s = b_.CreateFDiv(f, b_.CreateFAdd(f64c(2.0), f));
  Value *z = b_.CreateFMul(s, s);
  // R = sum_{k=1..11} 2 z^k / (2k + 1); log(1 + f) = 2 atanh(s) = f - s (f - R). z <= 0.0295 so the next term
  // is below 2^-60 relative.
  Value *q = f64c(2.0 / 23.0);
  for (int k = 10; k >= 1; --k) q = intr(llvm::Intrinsic::fma, {q, z, f64c(2.0 / (2 * k + 1))});
  Value *R = b_.CreateFMul(z, q);
  logm = b_.CreateFSub(f, b_.CreateFMul(s, b_.CreateFSub(f, R)));
  e = b_.CreateSIToFP(ei, f64_);
}

Value *Emitter::log_special(Value *x, Value *r) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(inf)), x, r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(0.0)), f64c(-inf), r);
  r = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(0.0)), f64c(nan), r);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);
}

Value *Emitter::log_d(Value *x) {
  using namespace consts;
  Value *e, *logm;
  log_parts(x, e, logm);
  Value *hi = b_.CreateFMul(e, f64c(kLn2Hi));  // exact
  Value *lo = intr(llvm::Intrinsic::fma, {e, f64c(kLn2Lo), logm});
  return log_special(x, b_.CreateFAdd(hi, lo));
}

Value *Emitter::log2_d(Value *x) {
  using namespace consts;
  Value *e, *logm;
  log_parts(x, e, logm);
  Value *t = intr(llvm::Intrinsic::fma, {logm, f64c(kLog2eHi), b_.CreateFMul(logm, f64c(kLog2eLo))});
  return log_special(x, b_.CreateFAdd(e, t));  // exact powers of two give exact results
}

Value *Emitter::tanh_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *t = expm1_d(b_.CreateFMul(a, f64c(-2.0)));  // in (-1, 0]
  Value *y = b_.CreateFDiv(b_.CreateFNeg(t), b_.CreateFAdd(t, f64c(2.0)));
  y = b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(22.0)), f64c(1.0), y);
  return intr(llvm::Intrinsic::copysign, {y, x});
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

Value *Emitter::node(const Node &n, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt, int32_t out_dt) {
  using I = llvm::Intrinsic::ID;
  const int32_t t = in_dt.empty() ? out_dt : in_dt[0];
  const bool fp = is_fp(t);
  const bool uns = is_unsigned(t);
  Value *a = in.empty() ? nullptr : in[0];
  Value *c = in.size() > 1 ? in[1] : nullptr;
  auto through_double = [&](Value *(Emitter::*fn)(Value *)) { return from_double((this->*fn)(to_double(a)), t); };
  auto fp_unary = [&](I id) { return narrow(intr(id, {a}), t); };
  switch (n.op_id) {
    case PK_OP_ABS:
      if (fp) return intr(llvm::Intrinsic::fabs, {a});
      if (uns) return a;
      return b_.CreateSelect(b_.CreateICmpSLT(a, llvm::ConstantInt::get(a->getType(), 0)), b_.CreateNeg(a), a);
    case PK_OP_NEG:
      return fp ? b_.CreateFNeg(a) : b_.CreateNeg(a);
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
      return intr(llvm::Intrinsic::fma, {a, c, in[2]});
    case PK_OP_CONVERT_ELEMENT_TYPE:
      return convert(a, t, out_dt);
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
  std::vector<Value *> in;
  std::vector<int32_t> dt;
  for (uint32_t v : n.inputs) {
    in.push_back(val[v]);
    dt.push_back(r_.dtypes[v]);
  }
  return node(n, in, dt, out_dt);
}

std::vector<Value *> Emitter::element(Value *linear) {
  std::vector<Value *> val(r_.dtypes.size(), nullptr);
  std::vector<Value *> idx = unravel(linear);
  // Loads only of inputs some node reads as data (fill reads only its input's shape).
  std::vector<bool> used(r_.dtypes.size(), false);
  for (const Node &n : r_.nodes)
    if (n.op_id != PK_OP_FILL)
      for (uint32_t v : n.inputs) used[v] = true;
  for (uint32_t v : r_.outputs) used[v] = true;  // a copy region stores its input
  for (size_t k = 0; k < r_.inputs.size(); ++k) {
    uint32_t v = r_.inputs[k];
    if (used[v]) val[v] = load(r_.dtypes[v], args_[k], offset_of(static_cast<int>(k), linear, idx));
  }
  for (const Node &n : r_.nodes) val[n.output] = apply(n, val, linear);
  for (size_t k = 0; k < r_.outputs.size(); ++k) {
    uint32_t v = r_.outputs[k];
    const int arg = static_cast<int>(r_.inputs.size() + k);
    store(r_.dtypes[v], val[v], args_[arg], offset_of(arg, linear, idx));
  }
  return val;
}

// ------------------------------------------------------------------------------------------- row programs

std::vector<Value *> Emitter::loop_cols(const std::vector<Value *> &init, const Step &step) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  auto *pre = b_.GetInsertBlock();
  auto *body = llvm::BasicBlock::Create(ctx_, "cols", f);
  auto *done = llvm::BasicBlock::Create(ctx_, "cols_done", f);
  b_.CreateCondBr(b_.CreateICmpSGT(cols_, i64c(0)), body, done);
  b_.SetInsertPoint(body);
  auto *c = b_.CreatePHI(i64_, 2);
  c->addIncoming(i64c(0), pre);
  std::vector<llvm::PHINode *> acc;
  std::vector<Value *> cur;
  for (Value *v : init) {
    acc.push_back(b_.CreatePHI(v->getType(), 2));
    acc.back()->addIncoming(v, pre);
    cur.push_back(acc.back());
  }
  std::vector<Value *> next = step(c, cur);
  Value *c1 = b_.CreateAdd(c, i64c(1));
  auto *latch = b_.GetInsertBlock();
  c->addIncoming(c1, latch);
  for (size_t k = 0; k < acc.size(); ++k) acc[k]->addIncoming(next[k], latch);
  b_.CreateCondBr(b_.CreateICmpSLT(c1, cols_), body, done);
  b_.SetInsertPoint(done);
  std::vector<Value *> out;
  for (size_t k = 0; k < init.size(); ++k) {
    auto *phi = b_.CreatePHI(init[k]->getType(), 2);
    phi->addIncoming(init[k], pre);
    phi->addIncoming(next[k], latch);
    out.push_back(phi);
  }
  return out;
}

Value *Emitter::arg_offset(int arg, Kind k, Value *j, Value *row0, Value *c) {
  if (rank_ == 0) return k == kRow ? j : k == kCol ? c : b_.CreateAdd(row0, c);
  // Row values have stride 0 on the reduced axes and column values on the others, so one formula serves all.
  Value *lin = k == kRow ? row0 : b_.CreateAdd(row0, c);
  return offset_of(arg, lin, unravel(lin));
}

std::vector<Value *> Emitter::elem_values(const std::vector<Value *> &rowv, const std::vector<bool> &need,
                                          const std::vector<int> &stashed, Value *j, Value *row0, Value *c) {
  std::vector<Value *> val = rowv;
  for (size_t k = 0; k < r_.inputs.size(); ++k) {
    const uint32_t v = r_.inputs[k];
    if (need[v]) val[v] = load(r_.dtypes[v], args_[k], arg_offset(static_cast<int>(k), r_.kind(v), j, row0, c));
  }
  Value *lin = nullptr;
  for (const Node &n : r_.nodes) {
    if (!need[n.output] || is_reduction_op(n.op_id)) continue;
    if (stashed[n.output] >= 0) {
      const int arg = stashed[n.output];
      val[n.output] = load(r_.dtypes[n.output], args_[arg], arg_offset(arg, kElem, j, row0, c));
      continue;
    }
    if (n.op_id == PK_OP_IOTA && lin == nullptr) lin = b_.CreateAdd(row0, c);
    val[n.output] = apply(n, val, lin);
  }
  return val;
}

// A row program makes passes over each row: one per group of reductions that need no row value still to be
// computed (independent reductions share a pass), then one that stores the element outputs. An element value
// a later pass needs again — softmax's exp(x - max) — is stored in an element output's memory in the pass that
// computes it and loaded from there afterwards instead of recomputed; the last pass overwrites it in place with
// the output. (Dense layout only: strided outputs may reach one element from several positions.)
void Emitter::build_rows(Value *j) {
  const size_t nv = r_.dtypes.size(), nn = r_.nodes.size();
  const size_t nin = r_.inputs.size();
  // Empty reduced axes count as extent 1 in the index math (unravel does the same), so each row keeps its place.
  Value *row0 = b_.CreateMul(j, b_.CreateSelect(b_.CreateICmpEQ(cols_, i64c(0)), i64c(1), cols_));
  std::vector<int> producer(nv, -1);
  for (size_t i = 0; i < nn; ++i) producer[r_.nodes[i].output] = static_cast<int>(i);

  // --- plan: passes, what each computes, which values are stashed where ---
  std::vector<int> stashed(nv, -1);  // output argument holding the value, once a pass has stored it there
  // Element values (and the row values they read, in `rows`) needed to compute v at a column.
  std::function<void(uint32_t, std::vector<bool> &, std::vector<bool> *)> mark =
      [&](uint32_t v, std::vector<bool> &need, std::vector<bool> *rows) {
        if (r_.kind(v) == kRow) {
          if (rows) (*rows)[v] = true;
          return;
        }
        if (need[v]) return;
        need[v] = true;
        if (producer[v] < 0 || stashed[v] >= 0) return;
        const Node &n = r_.nodes[producer[v]];
        if (n.op_id != PK_OP_FILL)
          for (uint32_t u : n.inputs) mark(u, need, rows);
      };
  std::vector<bool> avail(nv, false);  // row values known before the pass being planned
  for (uint32_t v : r_.inputs)
    if (r_.kind(v) == kRow) avail[v] = true;
  auto compute_rows = [&](bool emit, std::vector<Value *> *rowv) {
    for (const Node &n : r_.nodes) {
      if (is_reduction_op(n.op_id) || r_.kind(n.output) != kRow || avail[n.output]) continue;
      bool ready = true;
      if (n.op_id != PK_OP_FILL)
        for (uint32_t u : n.inputs) ready = ready && avail[u];
      if (!ready) continue;
      avail[n.output] = true;
      if (emit) (*rowv)[n.output] = apply(n, *rowv, row0);
    }
  };
  struct Pass {
    std::vector<size_t> reds;    // reduction nodes
    std::vector<bool> need;      // element values computed or loaded
    std::vector<uint32_t> save;  // values this pass stores in their stash
    std::vector<int> stashed;    // stash state the pass reads with
  };
  std::vector<Pass> passes;
  std::vector<bool> done(nn, false), slot_used(r_.outputs.size(), false);
  for (;;) {
    compute_rows(false, nullptr);
    Pass p;
    p.need.assign(nv, false);
    p.stashed = stashed;
    for (size_t i = 0; i < nn; ++i) {
      const Node &n = r_.nodes[i];
      if (done[i] || !is_reduction_op(n.op_id)) continue;
      std::vector<bool> need(nv, false), rows(nv, false);
      mark(n.inputs[0], need, &rows);
      bool ready = true;
      for (size_t v = 0; v < nv; ++v) ready = ready && (!rows[v] || avail[v]);
      if (!ready) continue;
      p.reds.push_back(i);
      for (size_t v = 0; v < nv; ++v) p.need[v] = p.need[v] || need[v];
    }
    if (p.reds.empty()) break;
    for (size_t i : p.reds) done[i] = true;
    if (rank_ == 0) {
      // Stash candidates, latest first (the furthest from the loads saves the most recomputation).
      for (size_t i = nn; i-- > 0;) {
        const Node &n = r_.nodes[i];
        const uint32_t v = n.output;
        if (!p.need[v] || r_.kind(v) != kElem || is_reduction_op(n.op_id) || n.op_id == PK_OP_FILL ||
            n.op_id == PK_OP_IOTA || stashed[v] >= 0)
          continue;
        // Needed later: by a reduction of a later pass or by an element output (with the stashes so far).
        std::vector<bool> later(nv, false);
        for (size_t q = 0; q < nn; ++q)
          if (!done[q] && is_reduction_op(r_.nodes[q].op_id)) mark(r_.nodes[q].inputs[0], later, nullptr);
        for (uint32_t o : r_.outputs)
          if (r_.kind(o) == kElem) mark(o, later, nullptr);
        if (!later[v]) continue;
        int slot = -1;
        for (size_t k = 0; k < r_.outputs.size() && slot < 0; ++k)
          if (r_.outputs[k] == v && !slot_used[k]) slot = static_cast<int>(k);
        for (size_t k = 0; k < r_.outputs.size() && slot < 0; ++k)
          if (!slot_used[k] && r_.kind(r_.outputs[k]) == kElem && r_.dtypes[r_.outputs[k]] == r_.dtypes[v])
            slot = static_cast<int>(k);
        if (slot < 0) continue;
        slot_used[slot] = true;
        stashed[v] = static_cast<int>(nin) + slot;
        p.save.push_back(v);
      }
    }
    for (size_t i : p.reds) avail[r_.nodes[i].output] = true;
    passes.push_back(std::move(p));
  }

  // --- emit ---
  std::fill(avail.begin(), avail.end(), false);
  std::vector<Value *> rowv(nv, nullptr);
  for (size_t k = 0; k < nin; ++k) {
    const uint32_t v = r_.inputs[k];
    if (r_.kind(v) != kRow) continue;
    rowv[v] = load(r_.dtypes[v], args_[k], arg_offset(static_cast<int>(k), kRow, j, row0, i64c(0)));
    avail[v] = true;
  }
  for (const Pass &p : passes) {
    compute_rows(true, &rowv);
    std::vector<Value *> init;
    std::vector<size_t> first;  // each reduction's first accumulator in the combined list
    for (size_t i : p.reds) {
      const Node &n = r_.nodes[i];
      first.push_back(init.size());
      for (Value *a : red_init(n, r_.dtypes[n.inputs[0]])) init.push_back(a);
    }
    first.push_back(init.size());
    std::vector<Value *> acc = loop_cols(init, [&](Value *c, const std::vector<Value *> &a) {
      std::vector<Value *> val = elem_values(rowv, p.need, p.stashed, j, row0, c);
      for (uint32_t v : p.save)
        store(r_.dtypes[v], val[v], args_[stashed[v]], arg_offset(stashed[v], kElem, j, row0, c));
      std::vector<Value *> next;
      for (size_t r = 0; r < p.reds.size(); ++r) {
        const Node &n = r_.nodes[p.reds[r]];
        std::vector<Value *> mine(a.begin() + static_cast<std::ptrdiff_t>(first[r]),
                                  a.begin() + static_cast<std::ptrdiff_t>(first[r + 1]));
        for (Value *x : red_step(n, r_.dtypes[n.inputs[0]], mine, val[n.inputs[0]], c)) next.push_back(x);
      }
      return next;
    });
    for (size_t r = 0; r < p.reds.size(); ++r) {
      const Node &n = r_.nodes[p.reds[r]];
      std::vector<Value *> mine(acc.begin() + static_cast<std::ptrdiff_t>(first[r]),
                                acc.begin() + static_cast<std::ptrdiff_t>(first[r + 1]));
      rowv[n.output] = red_final(n, r_.dtypes[n.inputs[0]], r_.dtypes[n.output], mine);
      avail[n.output] = true;
    }
  }
  compute_rows(true, &rowv);
  std::vector<bool> need(nv, false);
  bool any = false;
  for (uint32_t v : r_.outputs)
    if (r_.kind(v) != kRow) {
      mark(v, need, nullptr);
      any = true;
    }
  if (any) {
    loop_cols({}, [&](Value *c, const std::vector<Value *> &) {
      std::vector<Value *> val = elem_values(rowv, need, stashed, j, row0, c);
      for (size_t k = 0; k < r_.outputs.size(); ++k) {
        const uint32_t v = r_.outputs[k];
        if (r_.kind(v) == kRow) continue;
        const int arg = static_cast<int>(nin + k);
        store(r_.dtypes[v], val[v], args_[arg], arg_offset(arg, r_.kind(v), j, row0, c));
      }
      return std::vector<Value *>{};
    });
  }
  for (size_t k = 0; k < r_.outputs.size(); ++k) {
    const uint32_t v = r_.outputs[k];
    if (r_.kind(v) != kRow) continue;
    const int arg = static_cast<int>(nin + k);
    store(r_.dtypes[v], rowv[v], args_[arg], arg_offset(arg, kRow, j, row0, i64c(0)));
  }
}

// Accumulators: floats sum and multiply in f64 and round once at the end (tighter than the reduction
// contract, and the same on every target); extrema and the logical/bitwise folds are exact in the compute type.
std::vector<Value *> Emitter::red_init(const Node &n, int32_t xdt) {
  const bool fp = is_fp(xdt);
  llvm::Type *ct = compute_type(xdt);
  switch (n.op_id) {
    case PK_OP_SUM:
      return {fp ? f64c(0.0) : llvm::ConstantInt::get(ct, 0)};
    case PK_OP_PROD:
      return {fp ? f64c(1.0) : llvm::ConstantInt::get(ct, 1)};
    case PK_OP_AMAX:
    case PK_OP_AMIN: {
      const bool mx = n.op_id == PK_OP_AMAX;
      if (fp) return {fpc(ct, mx ? -HUGE_VAL : HUGE_VAL)};
      const unsigned w = ct->getIntegerBitWidth();
      if (is_unsigned(xdt))
        return {mx ? llvm::ConstantInt::get(ct, 0) : llvm::ConstantInt::get(ct, llvm::APInt::getMaxValue(w))};
      return {llvm::ConstantInt::get(ct, mx ? llvm::APInt::getSignedMinValue(w) : llvm::APInt::getSignedMaxValue(w))};
    }
    case PK_OP_ANY:
      return {b_.getFalse()};
    case PK_OP_ALL:
      return {b_.getTrue()};
    case PK_OP_XOR_SUM:
      return {llvm::ConstantInt::get(ct, 0)};
    default:  // argmax, argmin: best value, its index, and whether a NaN ended the search
      return {fp ? fpc(ct, 0.0) : llvm::ConstantInt::get(ct, 0), i64c(0), b_.getFalse()};
  }
}

std::vector<Value *> Emitter::red_step(const Node &n, int32_t xdt, const std::vector<Value *> &a, Value *x, Value *c) {
  const bool fp = is_fp(xdt), uns = is_unsigned(xdt);
  // On the host, the f64 accumulations may be reassociated so that the loop vectorizes (partial sums per lane:
  // the order changes, the f64 accumulator keeps the error far below the output's rounding). GPU threads
  // accumulate in order, and the emulator must compute what the GPU does.
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  if (target_ == Target::cpu) {
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    b_.setFastMathFlags(fmf);
  }
  switch (n.op_id) {
    case PK_OP_SUM:
      return {fp ? b_.CreateFAdd(a[0], to_double(x)) : b_.CreateAdd(a[0], x)};
    case PK_OP_PROD:
      return {fp ? b_.CreateFMul(a[0], to_double(x)) : b_.CreateMul(a[0], x)};
    case PK_OP_AMAX:
    case PK_OP_AMIN: {
      const bool mx = n.op_id == PK_OP_AMAX;
      // llvm.maximum/minimum have exactly fmaximum's semantics (NaN propagates, -0 < +0) and vectorize as
      // reductions; the NVPTX backend has no f64 lowering for them, so the GPU keeps the compare-and-select.
      if (fp && target_ == Target::cpu) {
        b_.clearFastMathFlags();
        return {intr(mx ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, {a[0], x})};
      }
      if (fp) return {fmaximum(a[0], x, mx)};
      Value *pick = mx ? (uns ? b_.CreateICmpUGT(x, a[0]) : b_.CreateICmpSGT(x, a[0]))
                       : (uns ? b_.CreateICmpULT(x, a[0]) : b_.CreateICmpSLT(x, a[0]));
      return {b_.CreateSelect(pick, x, a[0])};
    }
    case PK_OP_ANY:
      return {b_.CreateOr(a[0], truth(x, xdt))};
    case PK_OP_ALL:
      return {b_.CreateAnd(a[0], truth(x, xdt))};
    case PK_OP_XOR_SUM:
      return {b_.CreateXor(a[0], x)};
    default: {
      // The first extremum in index order; the first NaN wins and ends the search.
      const bool mx = n.op_id == PK_OP_ARGMAX;
      Value *nan = fp ? b_.CreateFCmpUNO(x, x) : b_.getFalse();
      Value *better = fp   ? (mx ? b_.CreateFCmpOGT(x, a[0]) : b_.CreateFCmpOLT(x, a[0]))
                      : mx ? (uns ? b_.CreateICmpUGT(x, a[0]) : b_.CreateICmpSGT(x, a[0]))
                           : (uns ? b_.CreateICmpULT(x, a[0]) : b_.CreateICmpSLT(x, a[0]));
      Value *first = b_.CreateICmpEQ(c, i64c(0));
      Value *take = b_.CreateAnd(b_.CreateNot(a[2]), b_.CreateOr(first, b_.CreateOr(nan, better)));
      return {b_.CreateSelect(take, x, a[0]), b_.CreateSelect(take, c, a[1]),
              b_.CreateOr(a[2], b_.CreateAnd(take, nan))};
    }
  }
}

Value *Emitter::red_final(const Node &n, int32_t xdt, int32_t ydt, const std::vector<Value *> &a) {
  if (n.op_id == PK_OP_ARGMAX || n.op_id == PK_OP_ARGMIN) return a[1];
  if ((n.op_id == PK_OP_SUM || n.op_id == PK_OP_PROD) && is_fp(xdt)) return from_double(a[0], ydt);
  return a[0];
}

llvm::Function *Emitter::build_item() {
  std::vector<llvm::Type *> types = param_types();
  types.push_back(i64_);  // work item j
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "pk_item", m_);
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  args_.clear();
  shape_.clear();
  extra_.clear();
  strides_.assign(nargs_, {});
  auto it = f->arg_begin();
  for (int k = 0; k < nargs_; ++k, ++it) {
    // Arguments never overlap (the runtime rejects output/input overlap): tell the vectorizer.
    f->addParamAttr(k, llvm::Attribute::NoAlias);
    args_.push_back(&*it);
  }
  n_ = &*it++;
  cols_ = &*it++;
  for (int d = 0; d < rank_; ++d) shape_.push_back(&*it++);
  for (int k = 0; k < nargs_; ++k)
    for (int d = 0; d < rank_; ++d) strides_[k].push_back(&*it++);
  for (uint32_t e = 0; e < r_.num_extra; ++e) extra_.push_back(&*it++);
  Value *j = &*it;
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  b_.SetInsertPoint(entry);
  if (r_.reduces()) {
    build_rows(j);
  } else {
    element(j);
  }
  b_.CreateRetVoid();
  return f;
}

llvm::Function *Emitter::build_body(llvm::Function *item) {
  std::vector<llvm::Type *> types = param_types();
  types.insert(types.end(), 4, i32_);  // tid, ntid, ctaid, nctaid
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "pk_body", m_);
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  std::vector<Value *> params;
  auto it = f->arg_begin();
  for (int k = 0; k < nargs_ + nscalars_; ++k, ++it) params.push_back(&*it);
  Value *tid = &*it++, *ntid = &*it++, *ctaid = &*it++, *nctaid = &*it;
  Value *n = params[nargs_];
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  auto *loop = llvm::BasicBlock::Create(ctx_, "grid_stride", f);
  auto *exit = llvm::BasicBlock::Create(ctx_, "exit", f);
  b_.SetInsertPoint(entry);
  // Global thread index and grid size in i64: n may exceed 2^31.
  Value *gid =
      b_.CreateAdd(b_.CreateMul(b_.CreateZExt(ctaid, i64_), b_.CreateZExt(ntid, i64_)), b_.CreateZExt(tid, i64_));
  Value *stride = b_.CreateMul(b_.CreateZExt(ntid, i64_), b_.CreateZExt(nctaid, i64_));
  b_.CreateCondBr(b_.CreateICmpSLT(gid, n), loop, exit);
  b_.SetInsertPoint(loop);
  auto *j = b_.CreatePHI(i64_, 2);
  j->addIncoming(gid, entry);
  std::vector<Value *> call_args = params;
  call_args.push_back(j);
  b_.CreateCall(item, call_args);
  Value *jn = b_.CreateAdd(j, stride);
  j->addIncoming(jn, loop);
  b_.CreateCondBr(b_.CreateICmpSLT(jn, n), loop, exit);
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();
  return f;
}

void Emitter::build_nvptx_kernel(llvm::Function *body, const std::string &name) {
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), param_types(), false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  for (int k = 0; k < nargs_; ++k) f->addParamAttr(k, llvm::Attribute::NoAlias);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
  std::vector<Value *> args;
  for (auto &a : f->args()) args.push_back(&a);
  args.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}));
  args.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x, {}, {}));
  args.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {}));
  args.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, {}, {}));
  b_.CreateCall(body, args);
  b_.CreateRetVoid();
  llvm::NamedMDNode *md = m_.getOrInsertNamedMetadata("nvvm.annotations");
  llvm::Metadata *ops[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx_, "kernel"),
                           llvm::ConstantAsMetadata::get(b_.getInt32(1))};
  md->addOperand(llvm::MDNode::get(ctx_, ops));
}

// Loads the kernel parameters from a kernelParams-style array (void **: one pointer per parameter value).
static std::vector<Value *> load_params(llvm::IRBuilder<> &b, Value *params, int nargs, int nscalars) {
  std::vector<Value *> out;
  llvm::Type *ptr = b.getPtrTy();
  for (int k = 0; k < nargs + nscalars; ++k) {
    Value *slot = b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, params, static_cast<uint64_t>(k)));
    out.push_back(b.CreateLoad(k < nargs ? ptr : static_cast<llvm::Type *>(b.getInt64Ty()), slot));
  }
  return out;
}

void Emitter::build_emu_entry(llvm::Function *body, const std::string &name) {
  // void entry(void **params, u32 grid, u32 block): every (block, thread) pair of the grid, in order. Threads
  // of the generated kernels never communicate, so a sequential order is one legal schedule.
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i32_, i32_}, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  Value *params = f->getArg(0), *grid = f->getArg(1), *block = f->getArg(2);
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  auto *outer = llvm::BasicBlock::Create(ctx_, "blocks", f);
  auto *inner = llvm::BasicBlock::Create(ctx_, "threads", f);
  auto *outer_latch = llvm::BasicBlock::Create(ctx_, "next_block", f);
  auto *exit = llvm::BasicBlock::Create(ctx_, "exit", f);
  b_.SetInsertPoint(entry);
  std::vector<Value *> p = load_params(b_, params, nargs_, nscalars_);
  Value *any = b_.CreateAnd(b_.CreateICmpUGT(grid, b_.getInt32(0)), b_.CreateICmpUGT(block, b_.getInt32(0)));
  b_.CreateCondBr(any, outer, exit);
  b_.SetInsertPoint(outer);
  auto *bid = b_.CreatePHI(i32_, 2);
  bid->addIncoming(b_.getInt32(0), entry);
  b_.CreateBr(inner);
  b_.SetInsertPoint(inner);
  auto *tid = b_.CreatePHI(i32_, 2);
  tid->addIncoming(b_.getInt32(0), outer);
  std::vector<Value *> args = p;
  args.push_back(tid);
  args.push_back(block);
  args.push_back(bid);
  args.push_back(grid);
  b_.CreateCall(body, args);
  Value *tn = b_.CreateAdd(tid, b_.getInt32(1));
  tid->addIncoming(tn, inner);
  b_.CreateCondBr(b_.CreateICmpULT(tn, block), inner, outer_latch);
  b_.SetInsertPoint(outer_latch);
  Value *bn = b_.CreateAdd(bid, b_.getInt32(1));
  bid->addIncoming(bn, outer_latch);
  b_.CreateCondBr(b_.CreateICmpULT(bn, grid), outer, exit);
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();
}

void Emitter::build_cpu_entry(llvm::Function *item, const std::string &name) {
  // void entry(void **params, i64 begin, i64 end): a plain loop the vectorizer can widen.
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i64_, i64_}, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  Value *params = f->getArg(0), *begin = f->getArg(1), *end = f->getArg(2);
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  auto *loop = llvm::BasicBlock::Create(ctx_, "items", f);
  auto *exit = llvm::BasicBlock::Create(ctx_, "exit", f);
  b_.SetInsertPoint(entry);
  std::vector<Value *> p = load_params(b_, params, nargs_, nscalars_);
  b_.CreateCondBr(b_.CreateICmpSLT(begin, end), loop, exit);
  b_.SetInsertPoint(loop);
  auto *j = b_.CreatePHI(i64_, 2);
  j->addIncoming(begin, entry);
  std::vector<Value *> args = p;
  args.push_back(j);
  b_.CreateCall(item, args);
  Value *jn = b_.CreateAdd(j, i64c(1));
  j->addIncoming(jn, loop);
  b_.CreateCondBr(b_.CreateICmpSLT(jn, end), loop, exit);
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();
}

}  // namespace

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext &ctx, const KernelSpec &spec, Target target,
                                           const std::string &entry) {
  auto m = std::make_unique<llvm::Module>("primkit_kernel", ctx);
  Emitter e(ctx, *m, spec, target);
  llvm::Function *item = e.build_item();
  switch (target) {
    case Target::nvptx:
      e.build_nvptx_kernel(e.build_body(item), entry);
      break;
    case Target::emu:
      e.build_emu_entry(e.build_body(item), entry);
      break;
    case Target::cpu:
      e.build_cpu_entry(item, entry);
      break;
  }
  return m;
}

}  // namespace pk::codegen::detail
