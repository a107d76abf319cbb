// emit.cpp — LLVM IR for a Region: the per-work-item function (`item`), the grid-stride body of the GPU kernel
// (`body`), and the entry of each target (the NVPTX kernel, the host grid emulator, the host CPU loop).
//
// Numerics (the op table's contracts):
// - f16/bf16 and fp8 values are computed in f32 and rounded back to their format after every node, so a fused
//   chain gives the same bits as the same ops run one by one.
// - Transcendentals are our own IR, identical on every target (no libm, no libdevice): they are evaluated in
//   f64 with range reduction and Taylor polynomials of enough terms to be accurate to about 1 ulp of f64, then
//   rounded once to the value's format. For f32 that is within 1 ulp; f64 stays within the table's 2-16 ulp,
//   with double-double where f64 alone would not (pow's log, log1p, log10, Payne-Hanek reduction for sin/cos/tan).
//   The price is f64 arithmetic on GPUs, acceptable for memory-bound elementwise kernels.
// - sqrt, fma, floor, ceil, trunc, rint, round, copysign, fabs use LLVM intrinsics every target lowers to
//   IEEE instructions (NVPTX: sqrt.rn, fma.rn, cvt.rmi/rpi/rzi/rni ...).
// - Narrowing to f16 from f64 is one IEEE conversion; to bf16 it goes through f32 rounded to odd, which makes
//   the second rounding exact (24 >= 8 + 2 bits).
// - The special functions (erfcx, erf_inv, ndtri, lgamma, digamma) iterate (Newton steps, recurrences) and carry
//   the steps that cancel in double-double, so that f64 meets the table's 16 ulp with room to spare.
// - var and the scans run one work item per line (var: three passes; scans: one, storing each element).
// - Float sums and products accumulate in f64. On the host (CPU target) the accumulation may be reassociated so
//   that row loops vectorize; GPU threads, and the emulator that stands for them, accumulate in index order.
#include "emit.hpp"
#include "emit_complex.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>

#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"
#include "primkit/special_constants.hpp"

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

bool is_fp8(int32_t d) {
  return d == PK_DTYPE_F8E4M3FN || d == PK_DTYPE_F8E5M2;
}
bool is_fp(int32_t d) {
  return d == PK_DTYPE_F16 || d == PK_DTYPE_BF16 || d == PK_DTYPE_F32 || d == PK_DTYPE_F64 || is_fp8(d);
}
bool is_unsigned(int32_t d) {
  return d == PK_DTYPE_U8 || d == PK_DTYPE_BOOL;
}

class EmitterMath;

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
  void build_cpu_entry(llvm::Function *item, const std::string &name, bool streaming);

 private:
  // --- types and constants ---
  llvm::Type *storage_type(int32_t d) const {
    switch (d) {
      case PK_DTYPE_BOOL:
      case PK_DTYPE_U8:
      case PK_DTYPE_I8:
      case PK_DTYPE_F8E4M3FN:
      case PK_DTYPE_F8E5M2:
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
  // A compute-type value holding a value of d's format as d's storage value (exact), and back.
  Value *to_storage(Value *v, int32_t d);
  Value *from_storage(Value *s, int32_t d);
  Value *offset_of(int arg, Value *linear, const std::vector<Value *> &idx);
  std::vector<Value *> unravel(Value *linear);

  // --- conversions and rounding ---
  Value *round_bf16(Value *f);  // f32 -> f32 holding the nearest bf16
  // f32/f64 -> f32 holding the nearest fp8 value (one rounding). Overflow: inf (e5m2), NaN (e4m3fn), or the
  // largest finite value with `saturate` (convert_element_type and fill to e4m3fn).
  Value *round_fp8(Value *v, int32_t d, bool saturate);
  Value *decode_fp8(Value *bits, int32_t d);             // i8 -> exact f32
  Value *encode_fp8(Value *f, int32_t d);                // f32 holding an fp8 value -> i8
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
  // Double-double helpers: s + e == a + b exactly (fast_two_sum needs |a| >= |b| or a == 0).
  void two_sum(Value *a, Value *b, Value *&s, Value *&e);
  void fast_two_sum(Value *a, Value *b, Value *&s, Value *&e);
  Value *fma(Value *a, Value *b, Value *c) { return intr(llvm::Intrinsic::fma, {a, b, c}); }
  Value *horner(Value *x, const std::vector<double> &c);  // c[0] + x c[1] + x^2 c[2] ...
  Value *sign_neg(Value *x);                              // the sign bit of an f64
  Value *table(const char *name, const std::vector<uint64_t> &words);
  Value *log_dd(Value *x, Value *&lo);  // log(x) as hi + lo for finite x > 0, about 2^-64 relative
  Value *log1p_d(Value *x);
  Value *log10_d(Value *x);
  void rem_pio2(Value *ax, Value *&q, Value *&r, Value *&rl);
  Value *sin_kernel(Value *r, Value *rl);
  Value *cos_kernel(Value *r, Value *rl);
  Value *trig_d(Value *x, uint32_t op);
  Value *asin_poly(Value *z);
  Value *asin_d(Value *x);
  Value *acos_d(Value *x);
  Value *atan_pos(Value *a);
  Value *atan_d(Value *x);
  Value *atan2_d(Value *y, Value *x);
  Value *sinh_d(Value *x);
  Value *cosh_d(Value *x);
  Value *asinh_d(Value *x);
  Value *acosh_d(Value *x);
  Value *atanh_d(Value *x);
  Value *cbrt_d(Value *x);
  Value *hypot_d(Value *x, Value *y);
  Value *pow_d(Value *x, Value *y);
  Value *erfc_pos(Value *x);   // erfc(x) for x >= 0.5
  Value *erf_small(Value *x);  // erf(x) for |x| <= 0.5
  Value *erf_d(Value *x);
  Value *erfc_d(Value *x);
  Value *fmod_d(Value *x, Value *y);
  // Special functions (double-double where the result needs it).
  struct DD {
    Value *hi, *lo;
  };
  DD dd(Value *hi) { return {hi, f64c(0.0)}; }
  DD dd_two_sum(Value *a, Value *b);
  DD dd_add(DD a, DD b);
  DD dd_add_d(DD a, Value *b);
  DD dd_mul(DD a, DD b);
  DD dd_mul_d(DD a, Value *b);
  DD dd_div(DD a, DD b);
  DD dd_log(DD x);             // x.hi > 0 finite
  Value *erfcx_pos(Value *x);  // erfcx(x) for x >= 0.5 (inf included)
  Value *erfcx_d(Value *x);
  Value *erf_inv_small(Value *y);  // erf_inv(y) for 0 <= y <= 1/2
  Value *erfc_inv(Value *q);       // erfc_inv(q) for 0 < q <= 1/2
  Value *erf_inv_d(Value *y);
  Value *ndtri_d(Value *p);
  void sincos_pi(Value *r, Value *&s, Value *&c);  // sin(pi r), cos(pi r) for |r| <= 1/2
  DD lgamma_pos(DD z);                             // ln Gamma(z) for z > 0
  Value *lgamma_d(Value *x);
  Value *digamma_d(Value *x);
  Value *nextafter(Value *x, Value *y, int32_t d);
  Value *gcd(Value *x, Value *y, bool uns);
  Value *bessel_i_d(int order, Value *x, bool scaled);
  Value *bessel_j_d(int order, Value *x);
  Value *spherical_j0_d(Value *x);
  // One value from two branches of real control flow (their loops run only where they converge).
  Value *if_else(Value *cond, const std::function<Value *()> &then_fn, const std::function<Value *()> &else_fn);
  Value *igam_prefactor(Value *a, Value *x, bool plus1);
  Value *igam_series(Value *a, Value *x);
  Value *igamc_fraction(Value *a, Value *x);
  Value *igamc_small_a(Value *a, Value *x);
  Value *igamma_any(Value *a, Value *x, bool upper);
  Value *igamma_d(Value *a, Value *x) { return igamma_any(a, x, false); }
  Value *igammac_d(Value *a, Value *x) { return igamma_any(a, x, true); }
  DD zeta_term(Value *q, Value *k, Value *s, Value *exact);
  Value *zeta_d(Value *s, Value *q);
  DD zeta_sum(Value *s, Value *q, Value *exact, Value *k0);

  Value *fmaximum(Value *a, Value *c, bool is_max);
  Value *node(const Node &n, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt, int32_t out_dt);
  Value *fma_small(Value *a, Value *b, Value *c, int32_t d);

  // Emits loads of the region's inputs at `linear`, every node, and the stores of element outputs.
  std::vector<Value *> element(Value *linear);

  // --- row programs (regions with reductions) ---
  using Step = std::function<std::vector<Value *>(Value *c, const std::vector<Value *> &accs)>;
  std::vector<Value *> loop_cols(const std::vector<Value *> &init, const Step &step) {
    return loop_n(cols_, init, step, "cols");
  }
  // A loop of `count` (i64, may be <= 0) iterations carrying `init` through `step` (c: the iteration, 0-based).
  std::vector<Value *> loop_n(Value *count, const std::vector<Value *> &init, const Step &step,
                              const char *name = "loop");
  // The same with an early exit: `step` returns the next values plus an i1 that ends the loop after them.
  std::vector<Value *> loop_until(Value *count, const std::vector<Value *> &init, const Step &step,
                                  const char *name = "until");
  // Both: with `early_exit`, step's last value is the i1 that stops the loop.
  std::vector<Value *> loop(Value *count, const std::vector<Value *> &init, const Step &step, const char *name,
                            bool early_exit);
  Value *arg_offset(int arg, Kind k, Value *j, Value *row0, Value *c);
  // Computes the element-kind values `need` marks at column c (loads included) on top of the row values.
  // stashed[v] >= 0: v is loaded from that argument instead of computed.
  std::vector<Value *> elem_values(const std::vector<Value *> &rowv, const std::vector<bool> &need,
                                   const std::vector<int> &stashed, Value *j, Value *row0, Value *c);
  void build_rows(Value *j);
  void build_line(Value *j);  // var and the scans: one work item walks one line
  Value *gather(const Node &n, const std::vector<Value *> &idx, Value *linear, const std::vector<Value *> &val);
  Value *apply(const Node &n, const std::vector<Value *> &val, Value *linear);
  Value *philox(const Node &n, Value *linear);  // philox_uniform/normal/randint: element `linear`
  std::vector<Value *> red_init(const Node &n, int32_t xdt);
  std::vector<Value *> red_step(const Node &n, int32_t xdt, const std::vector<Value *> &acc, Value *x, Value *c);
  Value *red_final(const Node &n, int32_t xdt, int32_t ydt, const std::vector<Value *> &acc);
  // The state after a first term x taken as is (a lone -0 stays -0): scatter_reduce without self.
  std::vector<Value *> red_first(const Node &n, int32_t xdt, Value *x, Value *c);
  // f64 sums as the reference computes them: the finite terms exactly (here: in f64, with a copy scaled by
  // 2^-600 for when that overflows) and the infinities and NaNs apart in IEEE arithmetic, so that finite terms
  // whose running sum overflows f64 still meet a later -inf as -inf, not NaN. State {sum, scaled, specials}.
  std::vector<Value *> fsum_init();
  std::vector<Value *> fsum_step(const std::vector<Value *> &a, Value *x);
  Value *fsum_final(const std::vector<Value *> &a);
  // Float products (computed in f64) as the reference's long double running product: the finite part as a
  // mantissa in [0.5, 1) and an i64 exponent (no f64 overflow or underflow on the way), the sign apart, and a kind
  // (0 finite, 1 zero, 2 infinite, 3 NaN) that follows IEEE's 0 * inf = NaN, with long double's own range
  // (2^16384) beyond which its product is infinite or zero too. State {mantissa, exponent, sign, kind}.
  std::vector<Value *> fprod_init();
  std::vector<Value *> fprod_step(const std::vector<Value *> &a, Value *x);
  Value *fprod_final(const std::vector<Value *> &a);
  Value *pow2_d(Value *e);  // 2^e for an i64 e in [-1022, 1023]

  llvm::LLVMContext &ctx_;
  llvm::Module &m_;
  llvm::IRBuilder<> b_;
  [[maybe_unused]] const KernelSpec &spec_;
  const Region &r_;
  Target target_;
  llvm::Type *i1_, *i8_, *i16_, *i32_, *i64_, *f16_, *f32_, *f64_, *ptr_;
  int nargs_, rank_, nscalars_;
  std::vector<Value *> args_;  // the current function's K pointers
  Value *n_ = nullptr, *cols_ = nullptr;
  std::vector<Value *> extra_;
  std::vector<Value *> shape_;
  std::vector<std::vector<Value *>> strides_;

  // Complex values (emit_complex.cpp), built on this emitter's real math.
  friend class EmitterMath;
  ComplexEmitter &cx();
  std::unique_ptr<EmitterMath> cx_math_;
  std::unique_ptr<ComplexEmitter> cx_;
};

class EmitterMath final : public RealMath {
 public:
  explicit EmitterMath(Emitter &e) : e_(e) {}
  Value *exp(Value *x) override { return e_.exp_d(x); }
  Value *log(Value *x) override { return e_.log_d(x); }
  Value *log1p(Value *x) override { return e_.log1p_d(x); }
  Value *log_dd(Value *x, Value *&lo) override { return e_.log_dd(x, lo); }
  Value *sin(Value *x) override { return e_.trig_d(x, PK_OP_SIN); }
  Value *cos(Value *x) override { return e_.trig_d(x, PK_OP_COS); }
  Value *sinh(Value *x) override { return e_.sinh_d(x); }
  Value *cosh(Value *x) override { return e_.cosh_d(x); }
  Value *atan2(Value *y, Value *x) override { return e_.atan2_d(y, x); }
  Value *convert_real(Value *v, int32_t from, int32_t to) override { return e_.convert(v, from, to); }

 private:
  Emitter &e_;
};

ComplexEmitter &Emitter::cx() {
  if (!cx_) {
    cx_math_ = std::make_unique<EmitterMath>(*this);
    cx_ = std::make_unique<ComplexEmitter>(b_, *cx_math_);
  }
  return *cx_;
}

// ---------------------------------------------------------------------------------------------------- memory

Value *Emitter::from_storage(Value *v, int32_t d) {
  switch (d) {
    case PK_DTYPE_BOOL:
      return b_.CreateICmpNE(v, b_.getInt8(0));
    case PK_DTYPE_F16:
      return b_.CreateFPExt(v, f32_);
    case PK_DTYPE_BF16:
      return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, i32_), 16), f32_);
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      return decode_fp8(v, d);
    default:
      return v;
  }
}
Value *Emitter::to_storage(Value *v, int32_t d) {
  switch (d) {
    case PK_DTYPE_BOOL:
      return b_.CreateZExt(v, i8_);
    case PK_DTYPE_F16:
      return b_.CreateFPTrunc(v, f16_);  // exact: v already holds an f16 value
    case PK_DTYPE_BF16:
      return b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(v, i32_), 16), i16_);
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      return encode_fp8(v, d);
    default:
      return v;
  }
}
Value *Emitter::load(int32_t d, Value *base, Value *offset) {
  if (is_complex_dtype(d)) return cx().load(d, base, offset);
  Value *p = b_.CreateGEP(storage_type(d), base, offset);
  return from_storage(b_.CreateLoad(storage_type(d), p), d);
}
void Emitter::store(int32_t d, Value *v, Value *base, Value *offset) {
  if (is_complex_dtype(d)) return cx().store(d, v, base, offset);
  Value *p = b_.CreateGEP(storage_type(d), base, offset);
  b_.CreateStore(to_storage(v, d), p);
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
  if (is_fp8(d)) return round_fp8(v, d, false);
  return v;
}

Value *Emitter::round_fp8(Value *v, int32_t d, bool saturate) {
  const bool e4 = d == PK_DTYPE_F8E4M3FN;
  const int mbits = e4 ? 3 : 2, emin = e4 ? -6 : -14;
  const double max_finite = e4 ? 448.0 : 57344.0;
  Value *x = to_double(v);
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  // The quantum 2^(e - mbits) at a's exponent (subnormals: at emin); scaling by powers of two is exact, and
  // rint rounds half to even.
  Value *e = b_.CreateSub(b_.CreateLShr(b_.CreateBitCast(a, i64_), 52), i64c(1023));
  e = b_.CreateSelect(b_.CreateICmpSLT(e, i64c(emin)), i64c(emin), e);
  e = b_.CreateSelect(b_.CreateICmpSGT(e, i64c(64)), i64c(64), e);  // inf, NaN and beyond: overflow anyway
  Value *r = b_.CreateFMul(intr(llvm::Intrinsic::rint, {b_.CreateFMul(a, pow2i(b_.CreateSub(i64c(mbits), e)))}),
                           pow2i(b_.CreateSub(e, i64c(mbits))));
  const double over = saturate ? max_finite : e4 ? std::numeric_limits<double>::quiet_NaN() : HUGE_VAL;
  r = b_.CreateSelect(b_.CreateFCmpOGT(r, f64c(max_finite)), f64c(over), r);
  r = intr(llvm::Intrinsic::copysign, {r, x});
  r = b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);
  return b_.CreateFPTrunc(r, f32_);  // exact
}

Value *Emitter::decode_fp8(Value *bits, int32_t d) {
  if (d == PK_DTYPE_F8E5M2)  // the upper byte of an f16
    return b_.CreateFPExt(b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(bits, i16_), 8), f16_), f32_);
  Value *u = b_.CreateZExt(bits, i32_);
  Value *e = b_.CreateAnd(b_.CreateLShr(u, 3), b_.getInt32(15));
  Value *m = b_.CreateAnd(u, b_.getInt32(7));
  Value *normal = b_.CreateICmpNE(e, b_.getInt32(0));
  // (m + 8 [normal]) 2^(max(e, 1) - 10), the power of two built as f32 bits.
  Value *sig = b_.CreateUIToFP(b_.CreateOr(m, b_.CreateSelect(normal, b_.getInt32(8), b_.getInt32(0))), f32_);
  Value *ee = b_.CreateSelect(normal, e, b_.getInt32(1));
  Value *scale = b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(ee, b_.getInt32(127 - 10)), 23), f32_);
  Value *mag = b_.CreateFMul(sig, scale);
  mag = b_.CreateSelect(b_.CreateICmpEQ(b_.CreateAnd(u, b_.getInt32(0x7f)), b_.getInt32(0x7f)),
                        fpc(f32_, std::numeric_limits<double>::quiet_NaN()), mag);
  return b_.CreateSelect(b_.CreateICmpNE(b_.CreateAnd(u, b_.getInt32(0x80)), b_.getInt32(0)), b_.CreateFNeg(mag), mag);
}

Value *Emitter::encode_fp8(Value *f, int32_t d) {
  if (d == PK_DTYPE_F8E5M2)  // exact in f16; its upper byte
    return b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(b_.CreateFPTrunc(f, f16_), i16_), 8), i8_);
  Value *fb = b_.CreateBitCast(f, i32_);
  Value *sign = b_.CreateTrunc(b_.CreateLShr(fb, 24), i8_);
  sign = b_.CreateAnd(sign, b_.getInt8(static_cast<uint8_t>(0x80)));
  Value *a = intr(llvm::Intrinsic::fabs, {f});
  // Subnormal (below 2^-6): a 2^9 is the mantissa; normal: exponent + 7 and the top three mantissa bits.
  Value *sub = b_.CreateFPToUI(b_.CreateFMul(a, fpc(f32_, 512.0)), i32_);
  Value *ab = b_.CreateBitCast(a, i32_);
  Value *nrm = b_.CreateOr(b_.CreateShl(b_.CreateSub(b_.CreateLShr(ab, 23), b_.getInt32(127 - 7)), 3),
                           b_.CreateAnd(b_.CreateLShr(ab, 20), b_.getInt32(7)));
  Value *mag = b_.CreateSelect(b_.CreateFCmpOLT(a, fpc(f32_, 0x1p-6)), sub, nrm);
  mag = b_.CreateSelect(b_.CreateFCmpUNO(f, f), b_.getInt32(0x7f), mag);
  return b_.CreateOr(b_.CreateTrunc(mag, i8_), sign);
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
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      return round_fp8(v, d, false);
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
  if (is_complex_dtype(from) || is_complex_dtype(to)) return cx().convert(v, from, to);
  if (to == PK_DTYPE_BOOL) return truth(v, from);
  llvm::Type *ct = compute_type(to);
  if (!is_fp(from)) {  // bool or integer source
    if (!is_fp(to)) return b_.CreateIntCast(v, ct, !is_unsigned(from));
    if (is_fp8(to))  // every integer below 2^53 is exact in f64; beyond, fp8 overflows anyway
      return round_fp8(is_unsigned(from) ? b_.CreateUIToFP(v, f64_) : b_.CreateSIToFP(v, f64_), to,
                       to == PK_DTYPE_F8E4M3FN);
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
  if (is_fp8(to)) return round_fp8(v, to, to == PK_DTYPE_F8E4M3FN);  // convert_element_type saturates e4m3fn
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
    case PK_DTYPE_F8E4M3FN:  // saturates, as convert_element_type does
      return fpc(f32_, pk::kit::f8e4m3fn(value).to_double());
    case PK_DTYPE_F8E5M2:
      return fpc(f32_, pk::kit::f8e5m2(value).to_double());
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

// ------------------------------------------------------------------------- more f64 math (double-double)

namespace consts {
// Words of 2/pi after the binary point, most significant first, behind one zero word (Payne-Hanek reads a
// window that may start before the point).
const std::vector<uint64_t> kTwoOverPi = {
    0x0000000000000000ull, 0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull, 0xfe5163abdebbc561ull,
    0xb7246e3a424dd2e0ull, 0x06492eea09d1921cull, 0xfe1deb1cb129a73eull, 0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull,
    0x3991d639835339f4ull, 0x9c845f8bbdf9283bull, 0x1ff897ffde05980full, 0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull,
    0x4f463f669e5fea2dull, 0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull, 0x56033046fc7b6babull,
    0xf0cfbc209af4361dull, 0xa9e391615ee61b08ull,
};
constexpr double kPio2Hi = 0x1.921fb54442d18p+0;
constexpr double kPio2Lo = 0x1.1a62633145c07p-54;
constexpr double kPiHi = 0x1.921fb54442d18p+1;
constexpr double kPiLo = 0x1.1a62633145c07p-53;
constexpr double kPio4Hi = 0x1.921fb54442d18p-1;
constexpr double kPio4Lo = 0x1.1a62633145c07p-55;
constexpr double kThreePio4Hi = 0x1.2d97c7f3321d2p+1;
[[maybe_unused]] constexpr double kThreePio4Lo = 0x1.a79394c9e8a0ap-54;
constexpr double kTwoThirdsHi = 0x1.5555555555555p-1;
constexpr double kTwoThirdsLo = 0x1.5555555555555p-55;
constexpr double kTwoOverSqrtPiHi = 0x1.20dd750429b6dp+0;
constexpr double kTwoOverSqrtPiLo = 0x1.1ae3a914fed80p-56;
constexpr double kLog10eHi = 0x1.bcb7b1526e50ep-2;
constexpr double kLog10eLo = 0x1.95355baaafad3p-57;
constexpr double kAtanHalfHi = 0x1.dac670561bb4fp-2;
constexpr double kAtanHalfLo = 0x1.a2b7f222f65e2p-56;
constexpr double kAtanOneHalfHi = 0x1.f730bd281f69bp-1;
constexpr double kAtanOneHalfLo = 0x1.007887af0cbbdp-56;
// erfcx(0.75 + 0.5 j) as hi, lo for j = 0..10: the centres of erfc's Taylor tables.
constexpr double kErfcxAt[][2] = {
    {0x1.038d54ea3d834p-1, -0x1.ec2134d851665p-55}, {0x1.78a692138767ap-2, 0x1.4797400f19192p-63},
    {0x1.23cfc2f1dc7e0p-2, 0x1.3b1040eb318c2p-57},  {0x1.d94446d627932p-3, -0x1.a8198a8216449p-58},
    {0x1.8c9eb68ff27d7p-3, -0x1.bb4e763c64a35p-57}, {0x1.54a7a08d4bb45p-3, -0x1.6a0d91336bdc9p-61},
    {0x1.2a2af19c14930p-3, -0x1.fa04a06a33f29p-57}, {0x1.08e62ce8c89adp-3, -0x1.dc926b221fa47p-57},
    {0x1.dc603a3e77e9bp-4, -0x1.d4e9c037b2163p-59}, {0x1.b096face146fep-4, 0x1.97cf1d947d704p-59},
    {0x1.8c14049cd551ep-4, -0x1.060a6f657761dp-59}, {0x1.6d2f811bf7397p-4, 0x1.8187bba0d21bdp-58},
    {0x1.52b80d463c470p-4, -0x1.f2f9d2243f17bp-58}, {0x1.3bcc59a28358cp-4, 0x1.48de49928652ap-59},
    {0x1.27c2b4d2f8988p-4, -0x1.99408690b9f33p-59}, {0x1.1618fbc75f8a0p-4, 0x1.8e9014246ff9dp-60},
    {0x1.0669c59166c17p-4, 0x1.a9783bfcd417ap-59},  {0x1.f0c9d48847e15p-5, 0x1.5f456df8b85ffp-59},
    {0x1.d7947dc6e8dafp-5, -0x1.248cfc5e9d1afp-60}, {0x1.c0cb9b2935b92p-5, -0x1.d3d9c0c529614p-59},
    {0x1.ac1a2600f9687p-5, -0x1.193568f0788efp-59}, {0x1.9939e4f6ef547p-5, 0x1.94087b6ee7d68p-64},
};
}  // namespace consts

void Emitter::two_sum(Value *a, Value *b, Value *&s, Value *&e) {
  s = b_.CreateFAdd(a, b);
  Value *bv = b_.CreateFSub(s, a);
  e = b_.CreateFAdd(b_.CreateFSub(a, b_.CreateFSub(s, bv)), b_.CreateFSub(b, bv));
}

void Emitter::fast_two_sum(Value *a, Value *b, Value *&s, Value *&e) {
  s = b_.CreateFAdd(a, b);
  e = b_.CreateFSub(b, b_.CreateFSub(s, a));
}

Value *Emitter::horner(Value *x, const std::vector<double> &c) {
  Value *p = f64c(c.back());
  for (size_t i = c.size() - 1; i-- > 0;) p = fma(p, x, f64c(c[i]));
  return p;
}

Value *Emitter::sign_neg(Value *x) {
  return b_.CreateICmpSLT(b_.CreateBitCast(x, i64_), i64c(0));
}

// A constant table in the module (NVPTX places it in global memory), created once per name.
Value *Emitter::table(const char *name, const std::vector<uint64_t> &words) {
  if (llvm::GlobalVariable *g = m_.getGlobalVariable(name, true)) return g;
  auto *init = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<uint64_t>(words));
  return new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::InternalLinkage, init, name);
}

// log(x) = e ln2 + log(1 + f), f = m - 1 exact, m in [sqrt(1/2), sqrt(2)); log(1 + f) = 2 atanh(s) with
// s = f / (2 + f) carried in double-double and its first two series terms in double-double, the rest (below
// 4e-4 of the result) in f64: about 2^-64 relative, which pow needs (its error grows with |y log x|).
Value *Emitter::log_dd(Value *x, Value *&lo) {
  using namespace consts;
  Value *sub = b_.CreateFCmpOLT(x, f64c(0x1p-1022));
  Value *xs = b_.CreateSelect(sub, b_.CreateFMul(x, f64c(0x1p54)), x);
  Value *eadj = b_.CreateSelect(sub, i64c(-54), i64c(0));
  Value *bits = b_.CreateBitCast(xs, i64_);
  Value *ix = b_.CreateAdd(bits, i64c(static_cast<int64_t>(0x3ff0000000000000ull - 0x3fe6a09e00000000ull)));
  Value *ei = b_.CreateAdd(b_.CreateSub(b_.CreateAShr(ix, 52), i64c(1023)), eadj);
  Value *m =
      b_.CreateBitCast(b_.CreateAdd(b_.CreateAnd(ix, i64c(0x000fffffffffffffll)), i64c(0x3fe6a09e00000000ll)), f64_);
  Value *f = b_.CreateFSub(m, f64c(1.0));
  Value *e = b_.CreateSIToFP(ei, f64_);
  Value *dh = b_.CreateFAdd(f64c(2.0), f);
  Value *dl = b_.CreateFAdd(b_.CreateFSub(f64c(2.0), dh), f);
  Value *s = b_.CreateFDiv(f, dh);
  Value *sl = b_.CreateFDiv(b_.CreateFSub(fma(b_.CreateFNeg(s), dh, f), b_.CreateFMul(s, dl)), dh);
  Value *z = b_.CreateFMul(s, s);
  Value *zl = fma(s, s, b_.CreateFNeg(z));
  Value *c3 = b_.CreateFMul(z, s);
  Value *c3l = b_.CreateFAdd(fma(z, s, b_.CreateFNeg(c3)), b_.CreateFMul(zl, s));
  Value *C = b_.CreateFMul(c3, f64c(kTwoThirdsHi));
  Value *Cl =
      b_.CreateFAdd(fma(c3, f64c(kTwoThirdsHi), b_.CreateFNeg(C)),
                    b_.CreateFAdd(b_.CreateFMul(c3, f64c(kTwoThirdsLo)), b_.CreateFMul(c3l, f64c(kTwoThirdsHi))));
  std::vector<double> rc;
  for (int k = 2; k <= 13; ++k) rc.push_back(2.0 / (2 * k + 1));
  Value *D = b_.CreateFMul(b_.CreateFMul(c3, z), horner(z, rc));
  Value *h, *e1;
  two_sum(b_.CreateFMul(s, f64c(2.0)), C, h, e1);
  Value *small = b_.CreateFAdd(b_.CreateFMul(sl, f64c(2.0)), b_.CreateFMul(b_.CreateFMul(z, sl), f64c(2.0)));
  Value *l = b_.CreateFAdd(e1, b_.CreateFAdd(b_.CreateFAdd(Cl, D), small));
  Value *H, *e2;
  two_sum(b_.CreateFMul(e, f64c(kLn2Hi)), h, H, e2);  // e ln2_hi is exact
  Value *L = b_.CreateFAdd(e2, b_.CreateFAdd(l, b_.CreateFMul(e, f64c(kLn2Lo))));
  Value *hi;
  fast_two_sum(H, L, hi, lo);
  return hi;
}

Value *Emitter::log1p_d(Value *x) {
  // 1 + x = u + ul exactly; log1p(x) = log(u) + ul / u (the next term is below 2^-106).
  Value *u, *ul;
  two_sum(f64c(1.0), x, u, ul);
  Value *lo;
  Value *hi = log_dd(u, lo);
  Value *r = b_.CreateFAdd(hi, b_.CreateFAdd(lo, b_.CreateFDiv(ul, u)));
  r = log_special(u, r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(0.0)), x, r);  // keeps -0
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);
}

Value *Emitter::log10_d(Value *x) {
  using namespace consts;
  Value *lo;
  Value *hi = log_dd(x, lo);
  Value *p = b_.CreateFMul(hi, f64c(kLog10eHi));
  Value *pl = b_.CreateFAdd(fma(hi, f64c(kLog10eHi), b_.CreateFNeg(p)),
                            b_.CreateFAdd(b_.CreateFMul(hi, f64c(kLog10eLo)), b_.CreateFMul(lo, f64c(kLog10eHi))));
  return log_special(x, b_.CreateFAdd(p, pl));
}

// ax = q pi/2 + r + rl for finite ax >= 0, |r| <= pi/4, by Payne-Hanek: ax = M 2^E (M < 2^53) times the
// 192 bits of 2/pi from weight 2^(1-E) on (the bits above give multiples of 4), kept modulo 4. The fraction
// keeps 128 bits: enough for the closest approach of any double to a multiple of pi/2 (about 2^-61).
// Below pi/4 nothing is reduced.
void Emitter::rem_pio2(Value *ax, Value *&q, Value *&r, Value *&rl) {
  using namespace consts;
  llvm::Type *i128 = b_.getInt128Ty();
  Value *tbl = table("pk_two_over_pi", kTwoOverPi);
  Value *bits = b_.CreateBitCast(ax, i64_);
  Value *be = b_.CreateLShr(bits, 52);
  Value *M = b_.CreateOr(b_.CreateAnd(bits, i64c(0x000fffffffffffffll)), i64c(int64_t{1} << 52));
  // First bit wanted: b_(E-1) of 2/pi, E = be - 1075; at stream position E - 1 + 63 (one zero word ahead).
  Value *j0 = b_.CreateSub(be, i64c(1013));
  j0 = b_.CreateSelect(b_.CreateICmpSLT(j0, i64c(0)), i64c(0), j0);  // only below pi/4, where it is unused
  Value *k = b_.CreateLShr(j0, 6), *sh = b_.CreateAnd(j0, i64c(63));
  Value *t[4];
  for (int i = 0; i < 4; ++i) t[i] = b_.CreateLoad(i64_, b_.CreateGEP(i64_, tbl, b_.CreateAdd(k, i64c(i))));
  auto fshl = [&](Value *a, Value *c) { return b_.CreateIntrinsic(llvm::Intrinsic::fshl, {i64_}, {a, c, sh}); };
  Value *w0 = fshl(t[0], t[1]), *w1 = fshl(t[1], t[2]), *w2 = fshl(t[2], t[3]);
  Value *M128 = b_.CreateZExt(M, i128);
  Value *p2 = b_.CreateMul(M128, b_.CreateZExt(w2, i128));
  Value *p1 = b_.CreateMul(M128, b_.CreateZExt(w1, i128));
  Value *p0 = b_.CreateMul(M, w0);  // only its low 64 bits matter (mod 4)
  auto hi64 = [&](Value *v) { return b_.CreateTrunc(b_.CreateLShr(v, 64), i64_); };
  Value *r0 = b_.CreateTrunc(p2, i64_);
  Value *mid = b_.CreateAdd(b_.CreateZExt(hi64(p2), i128), b_.CreateZExt(b_.CreateTrunc(p1, i64_), i128));
  Value *r1 = b_.CreateTrunc(mid, i64_);
  Value *r2 = b_.CreateAdd(b_.CreateAdd(p0, hi64(p1)), hi64(mid));
  // r2:r1:r0 = ax 2/pi mod 4 with the point below r2's top two bits. The fraction as a signed 128-bit number
  // is in [-1/2, 1/2): rounding q to nearest comes with it.
  Value *fh = b_.CreateOr(b_.CreateShl(r2, 2), b_.CreateLShr(r1, 62));
  Value *fl = b_.CreateOr(b_.CreateShl(r1, 2), b_.CreateLShr(r0, 62));
  Value *qq = b_.CreateAdd(b_.CreateLShr(r2, 62), b_.CreateLShr(fh, 63));
  Value *F = b_.CreateOr(b_.CreateShl(b_.CreateZExt(fh, i128), 64), b_.CreateZExt(fl, i128));
  Value *neg = b_.CreateICmpSLT(fh, i64c(0));
  Value *A = b_.CreateSelect(neg, b_.CreateNeg(F), F);
  Value *lz = b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {i128}, {A, b_.getFalse()});
  lz = b_.CreateSelect(b_.CreateICmpUGT(lz, llvm::ConstantInt::get(i128, 127)), llvm::ConstantInt::get(i128, 127), lz);
  Value *N = b_.CreateShl(A, lz);
  Value *nh = hi64(N), *nl = b_.CreateTrunc(N, i64_);
  Value *a1 = b_.CreateLShr(nh, 11);  // the top 53 bits: exact in f64
  Value *a2 = b_.CreateOr(b_.CreateShl(nh, 53), b_.CreateLShr(nl, 11));
  Value *lz64 = b_.CreateTrunc(lz, i64_);
  Value *f = b_.CreateFMul(b_.CreateUIToFP(a1, f64_), pow2i(b_.CreateSub(i64c(-53), lz64)));
  Value *flo = b_.CreateFMul(b_.CreateUIToFP(a2, f64_), pow2i(b_.CreateSub(i64c(-117), lz64)));
  Value *ph = b_.CreateFMul(f, f64c(kPio2Hi));
  Value *pl = b_.CreateFAdd(fma(f, f64c(kPio2Hi), b_.CreateFNeg(ph)),
                            b_.CreateFAdd(b_.CreateFMul(f, f64c(kPio2Lo)), b_.CreateFMul(flo, f64c(kPio2Hi))));
  Value *rh, *rlo;
  fast_two_sum(ph, pl, rh, rlo);
  rh = b_.CreateSelect(neg, b_.CreateFNeg(rh), rh);
  rlo = b_.CreateSelect(neg, b_.CreateFNeg(rlo), rlo);
  Value *small = b_.CreateFCmpOLE(ax, f64c(kPio4Hi));
  q = b_.CreateSelect(small, i64c(0), qq);
  r = b_.CreateSelect(small, ax, rh);
  rl = b_.CreateSelect(small, f64c(0.0), rlo);
}

// sin(r + rl) for |r| <= pi/4: Taylor to r^19 (truncation below 2^-63 relative).
Value *Emitter::sin_kernel(Value *r, Value *rl) {
  std::vector<double> c;
  double fact = 1;
  for (int k = 1; k <= 9; ++k) {
    fact *= (2 * k) * (2 * k + 1);
    c.push_back((k % 2 ? -1.0 : 1.0) / fact);
  }
  Value *z = b_.CreateFMul(r, r);
  Value *tail = b_.CreateFMul(b_.CreateFMul(r, z), horner(z, c));
  Value *corr = b_.CreateFMul(rl, fma(z, f64c(-0.5), f64c(1.0)));  // rl cos(r)
  return b_.CreateFAdd(r, b_.CreateFAdd(tail, corr));
}

// cos(r + rl) for |r| <= pi/4: 1 - r^2/2 with its rounding errors carried, then Taylor to r^20.
Value *Emitter::cos_kernel(Value *r, Value *rl) {
  std::vector<double> c;
  double fact = 2;
  for (int k = 2; k <= 10; ++k) {
    fact *= (2 * k - 1) * (2 * k);
    c.push_back((k % 2 ? -1.0 : 1.0) / fact);
  }
  Value *z = b_.CreateFMul(r, r);
  Value *zl = fma(r, r, b_.CreateFNeg(z));
  Value *hz = b_.CreateFMul(z, f64c(0.5));
  Value *w = b_.CreateFSub(f64c(1.0), hz);
  Value *err = b_.CreateFSub(b_.CreateFSub(f64c(1.0), w), hz);  // exact
  Value *corr = b_.CreateFSub(b_.CreateFSub(err, b_.CreateFMul(zl, f64c(0.5))), b_.CreateFMul(r, rl));
  corr = fma(b_.CreateFMul(z, z), horner(z, c), corr);
  return b_.CreateFAdd(w, corr);
}

Value *Emitter::trig_d(Value *x, uint32_t op) {
  Value *ax = intr(llvm::Intrinsic::fabs, {x});
  Value *finite = b_.CreateFCmpOLT(ax, f64c(HUGE_VAL));
  Value *axf = b_.CreateSelect(finite, ax, f64c(0.0));
  Value *q, *r, *rl;
  rem_pio2(axf, q, r, rl);
  Value *s = sin_kernel(r, rl), *c = cos_kernel(r, rl);
  Value *odd = b_.CreateICmpNE(b_.CreateAnd(q, i64c(1)), i64c(0));
  Value *res;
  if (op == PK_OP_TAN) {
    res = b_.CreateSelect(odd, b_.CreateFDiv(b_.CreateFNeg(c), s), b_.CreateFDiv(s, c));
  } else {
    Value *base = op == PK_OP_SIN ? b_.CreateSelect(odd, c, s) : b_.CreateSelect(odd, s, c);
    Value *qs = op == PK_OP_SIN ? q : b_.CreateAdd(q, i64c(1));
    res = b_.CreateSelect(b_.CreateICmpNE(b_.CreateAnd(qs, i64c(2)), i64c(0)), b_.CreateFNeg(base), base);
  }
  if (op != PK_OP_COS) res = b_.CreateSelect(sign_neg(x), b_.CreateFNeg(res), res);  // odd functions
  return b_.CreateSelect(finite, res, f64c(std::numeric_limits<double>::quiet_NaN()));
}

// asin(s) = s + s z P(z), z = s^2 <= 1/4: Taylor (truncation below 2^-56 relative).
Value *Emitter::asin_poly(Value *z) {
  std::vector<double> c;
  long double t = 1;
  for (int n = 1; n <= 27; ++n) {
    t = t * (2 * n - 1) / (2 * n);
    c.push_back(static_cast<double>(t / (2 * n + 1)));
  }
  return horner(z, c);
}

Value *Emitter::asin_d(Value *x) {
  using namespace consts;
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *z = b_.CreateFMul(a, a);
  Value *small = fma(b_.CreateFMul(a, z), asin_poly(z), a);
  // |x| > 1/2: pi/2 - 2 asin(s), s = sqrt((1 - a) / 2) (1 - a exact) carried as s + sl.
  Value *w = b_.CreateFMul(b_.CreateFSub(f64c(1.0), a), f64c(0.5));
  Value *s = intr(llvm::Intrinsic::sqrt, {w});
  Value *sl = b_.CreateFDiv(fma(b_.CreateFNeg(s), s, w), b_.CreateFMul(s, f64c(2.0)));
  sl = b_.CreateSelect(b_.CreateFCmpOEQ(s, f64c(0.0)), f64c(0.0), sl);
  Value *tail = fma(b_.CreateFMul(s, w), asin_poly(w), sl);
  Value *h, *e;
  two_sum(f64c(kPio2Hi), b_.CreateFMul(s, f64c(-2.0)), h, e);
  Value *big = b_.CreateFAdd(h, b_.CreateFAdd(e, fma(tail, f64c(-2.0), f64c(kPio2Lo))));
  Value *res = b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), small, big);
  return intr(llvm::Intrinsic::copysign, {res, x});  // NaN beyond |x| = 1 comes from sqrt
}

Value *Emitter::acos_d(Value *x) {
  using namespace consts;
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *z = b_.CreateFMul(x, x);
  Value *h, *e;
  two_sum(f64c(kPio2Hi), b_.CreateFNeg(x), h, e);
  Value *small = b_.CreateFAdd(
      h, b_.CreateFSub(b_.CreateFAdd(e, f64c(kPio2Lo)), b_.CreateFMul(b_.CreateFMul(x, z), asin_poly(z))));
  Value *w = b_.CreateFMul(b_.CreateFSub(f64c(1.0), a), f64c(0.5));
  Value *s = intr(llvm::Intrinsic::sqrt, {w});
  Value *sl = b_.CreateFDiv(fma(b_.CreateFNeg(s), s, w), b_.CreateFMul(s, f64c(2.0)));
  sl = b_.CreateSelect(b_.CreateFCmpOEQ(s, f64c(0.0)), f64c(0.0), sl);
  Value *tail = fma(b_.CreateFMul(s, w), asin_poly(w), sl);  // asin(s + sl) - s
  Value *pos = b_.CreateFMul(b_.CreateFAdd(s, tail), f64c(2.0));
  Value *h2, *e2;
  two_sum(f64c(kPiHi), b_.CreateFMul(s, f64c(-2.0)), h2, e2);
  Value *negv = b_.CreateFAdd(h2, b_.CreateFAdd(e2, fma(tail, f64c(-2.0), f64c(kPiLo))));
  Value *big = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0.0)), pos, negv);
  Value *res = b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), small, big);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

// atan(a) for a >= 0 (inf included): fdlibm's reduction to |t| <= 0.4375 around 0, 1/2, 1, 3/2 or infinity,
// then Taylor (truncation below 2^-57).
Value *Emitter::atan_pos(Value *a) {
  using namespace consts;
  Value *c0 = b_.CreateFCmpOLT(a, f64c(0.4375)), *c1 = b_.CreateFCmpOLT(a, f64c(0.6875));
  Value *c2 = b_.CreateFCmpOLT(a, f64c(1.1875)), *c3 = b_.CreateFCmpOLT(a, f64c(2.4375));
  auto pick = [&](double v0, double v1, double v2, double v3, double v4) {
    return b_.CreateSelect(
        c0, f64c(v0),
        b_.CreateSelect(c1, f64c(v1), b_.CreateSelect(c2, f64c(v2), b_.CreateSelect(c3, f64c(v3), f64c(v4)))));
  };
  auto pickv = [&](Value *v0, Value *v1, Value *v2, Value *v3, Value *v4) {
    return b_.CreateSelect(c0, v0, b_.CreateSelect(c1, v1, b_.CreateSelect(c2, v2, b_.CreateSelect(c3, v3, v4))));
  };
  // Numerators are exact (Sterbenz); t = (a - c) / (1 + a c).
  Value *num = pickv(a, b_.CreateFSub(b_.CreateFMul(a, f64c(2.0)), f64c(1.0)), b_.CreateFSub(a, f64c(1.0)),
                     b_.CreateFSub(a, f64c(1.5)), f64c(-1.0));
  Value *den =
      pickv(f64c(1.0), b_.CreateFAdd(a, f64c(2.0)), b_.CreateFAdd(a, f64c(1.0)), fma(a, f64c(1.5), f64c(1.0)), a);
  Value *t = b_.CreateFDiv(num, den);
  Value *bh = pick(0.0, kAtanHalfHi, kPio4Hi, kAtanOneHalfHi, kPio2Hi);
  Value *bl = pick(0.0, kAtanHalfLo, kPio4Lo, kAtanOneHalfLo, kPio2Lo);
  std::vector<double> c;
  for (int k = 1; k <= 25; ++k) c.push_back((k % 2 ? -1.0 : 1.0) / (2 * k + 1));
  Value *z = b_.CreateFMul(t, t);
  Value *tail = fma(b_.CreateFMul(t, z), horner(z, c), bl);
  return b_.CreateFAdd(bh, b_.CreateFAdd(t, tail));
}

Value *Emitter::atan_d(Value *x) {
  return intr(llvm::Intrinsic::copysign, {atan_pos(intr(llvm::Intrinsic::fabs, {x})), x});
}

Value *Emitter::atan2_d(Value *y, Value *x) {
  using namespace consts;
  Value *ax = intr(llvm::Intrinsic::fabs, {x}), *ay = intr(llvm::Intrinsic::fabs, {y});
  Value *r = atan_pos(b_.CreateFDiv(ay, ax));
  Value *xneg = sign_neg(x);
  // x < 0: pi - r (r <= pi/2, no cancellation).
  r = b_.CreateSelect(xneg, b_.CreateFAdd(b_.CreateFSub(f64c(kPiHi), r), f64c(kPiLo)), r);
  const double inf = HUGE_VAL;
  Value *zeros = b_.CreateAnd(b_.CreateFCmpOEQ(ax, f64c(0.0)), b_.CreateFCmpOEQ(ay, f64c(0.0)));
  Value *infs = b_.CreateAnd(b_.CreateFCmpOEQ(ax, f64c(inf)), b_.CreateFCmpOEQ(ay, f64c(inf)));
  r = b_.CreateSelect(zeros, b_.CreateSelect(xneg, f64c(kPiHi), f64c(0.0)), r);
  r = b_.CreateSelect(infs, b_.CreateSelect(xneg, f64c(kThreePio4Hi), f64c(kPio4Hi)), r);
  r = intr(llvm::Intrinsic::copysign, {r, y});
  return b_.CreateSelect(b_.CreateFCmpUNO(x, y), b_.CreateFAdd(x, y), r);
}

Value *Emitter::sinh_d(Value *x) {
  // fdlibm: expm1 below 22, then e^a / 2, then (e^(a/2) / 2) e^(a/2) where e^a overflows.
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *t = expm1_d(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(22.0)), a, f64c(0.0)));
  Value *t1 = b_.CreateFAdd(t, f64c(1.0));
  Value *lt1 = b_.CreateFSub(b_.CreateFMul(t, f64c(2.0)), b_.CreateFDiv(b_.CreateFMul(t, t), t1));
  Value *ge1 = b_.CreateFAdd(t, b_.CreateFDiv(t, t1));
  Value *mid = b_.CreateFMul(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(1.0)), lt1, ge1), f64c(0.5));
  Value *big = b_.CreateFMul(exp_d(a), f64c(0.5));
  Value *w = exp_d(b_.CreateFMul(a, f64c(0.5)));
  Value *huge = b_.CreateFMul(b_.CreateFMul(w, f64c(0.5)), w);
  Value *res = b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(22.0)), mid,
                               b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(709.0)), big, huge));
  res = intr(llvm::Intrinsic::copysign, {res, x});
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::cosh_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *t = expm1_d(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(1.0)), a, f64c(0.0)));
  // Below ln2 / 2: 1 + t^2 / (2 (1 + t)).
  Value *tiny = b_.CreateFAdd(
      f64c(1.0), b_.CreateFDiv(b_.CreateFMul(t, t), b_.CreateFMul(b_.CreateFAdd(t, f64c(1.0)), f64c(2.0))));
  Value *e = exp_d(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(22.0)), a, f64c(0.0)));
  Value *mid = b_.CreateFAdd(b_.CreateFMul(e, f64c(0.5)), b_.CreateFDiv(f64c(0.5), e));
  Value *big = b_.CreateFMul(exp_d(a), f64c(0.5));
  Value *w = exp_d(b_.CreateFMul(a, f64c(0.5)));
  Value *huge = b_.CreateFMul(b_.CreateFMul(w, f64c(0.5)), w);
  Value *res = b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(0.3465735902799726547)), tiny,
                               b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(22.0)), mid,
                                               b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(709.0)), big, huge)));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::asinh_d(Value *x) {
  using namespace consts;
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *lo;
  Value *hi = log_dd(b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(0x1p28)), a, f64c(1.0)), lo);
  Value *huge = b_.CreateFAdd(b_.CreateFAdd(hi, f64c(kLn2Hi)), b_.CreateFAdd(lo, f64c(kLn2Lo)));
  huge = b_.CreateSelect(b_.CreateFCmpOEQ(a, f64c(HUGE_VAL)), a, huge);
  Value *sq = intr(llvm::Intrinsic::sqrt, {fma(a, a, f64c(1.0))});
  Value *big = log_d(b_.CreateFAdd(b_.CreateFMul(a, f64c(2.0)), b_.CreateFDiv(f64c(1.0), b_.CreateFAdd(sq, a))));
  Value *z = b_.CreateFMul(a, a);
  Value *small = log1p_d(b_.CreateFAdd(
      a, b_.CreateFDiv(z, b_.CreateFAdd(f64c(1.0), intr(llvm::Intrinsic::sqrt, {b_.CreateFAdd(f64c(1.0), z)})))));
  Value *res = b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(0x1p28)), huge,
                               b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(2.0)), big, small));
  res = intr(llvm::Intrinsic::copysign, {res, x});
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::acosh_d(Value *x) {
  using namespace consts;
  Value *lo;
  Value *hi = log_dd(b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0x1p28)), x, f64c(1.0)), lo);
  Value *huge = b_.CreateFAdd(b_.CreateFAdd(hi, f64c(kLn2Hi)), b_.CreateFAdd(lo, f64c(kLn2Lo)));
  huge = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(HUGE_VAL)), x, huge);
  Value *sq = intr(llvm::Intrinsic::sqrt, {fma(x, x, f64c(-1.0))});
  Value *big = log_d(b_.CreateFSub(b_.CreateFMul(x, f64c(2.0)), b_.CreateFDiv(f64c(1.0), b_.CreateFAdd(x, sq))));
  Value *t = b_.CreateFSub(x, f64c(1.0));
  Value *small = log1p_d(b_.CreateFAdd(t, intr(llvm::Intrinsic::sqrt, {fma(t, t, b_.CreateFMul(t, f64c(2.0)))})));
  Value *res = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0x1p28)), huge,
                               b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(2.0)), big, small));
  res = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(1.0)), f64c(std::numeric_limits<double>::quiet_NaN()), res);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::atanh_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *t = b_.CreateFAdd(a, a);
  Value *om = b_.CreateFSub(f64c(1.0), a);
  Value *small = b_.CreateFAdd(t, b_.CreateFDiv(b_.CreateFMul(t, a), om));
  Value *big = b_.CreateFDiv(t, om);
  Value *res = b_.CreateFMul(log1p_d(b_.CreateSelect(b_.CreateFCmpOLT(a, f64c(0.5)), small, big)), f64c(0.5));
  res = b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(1.0)), f64c(std::numeric_limits<double>::quiet_NaN()), res);
  res = intr(llvm::Intrinsic::copysign, {res, x});
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

// FreeBSD's cbrt: a 23-bit estimate from the exponent and a polynomial, then one step of a third-order
// iteration (error below 0.67 ulp).
Value *Emitter::cbrt_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *sub = b_.CreateFCmpOLT(a, f64c(0x1p-1022));
  Value *as = b_.CreateSelect(sub, b_.CreateFMul(a, f64c(0x1p54)), a);
  Value *hx = b_.CreateLShr(b_.CreateBitCast(as, i64_), 32);
  Value *th = b_.CreateAdd(b_.CreateUDiv(hx, i64c(3)), b_.CreateSelect(sub, i64c(696219795), i64c(715094163)));
  Value *t = b_.CreateBitCast(b_.CreateShl(th, 32), f64_);
  Value *r = b_.CreateFMul(b_.CreateFMul(t, t), b_.CreateFDiv(t, a));
  Value *p1 =
      fma(r, fma(r, f64c(1.621429720105354466140), f64c(-1.88497979543377169875)), f64c(1.87595182427177009643));
  Value *p2 = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(r, r), r),
                            fma(r, f64c(0.145996192886612446982), f64c(-0.758397934778766047437)));
  t = b_.CreateFMul(t, b_.CreateFAdd(p1, p2));
  Value *u = b_.CreateAnd(b_.CreateAdd(b_.CreateBitCast(t, i64_), i64c(0x80000000ll)),
                          i64c(static_cast<int64_t>(0xffffffffc0000000ull)));
  t = b_.CreateBitCast(u, f64_);
  Value *s = b_.CreateFMul(t, t);
  Value *rr = b_.CreateFDiv(a, s);
  Value *w = b_.CreateFAdd(t, t);
  rr = b_.CreateFDiv(b_.CreateFSub(rr, t), b_.CreateFAdd(w, rr));
  t = fma(t, rr, t);
  Value *special = b_.CreateOr(b_.CreateFCmpOEQ(a, f64c(0.0)), b_.CreateFCmpUEQ(a, f64c(HUGE_VAL)));
  return b_.CreateSelect(special, b_.CreateFAdd(x, x), intr(llvm::Intrinsic::copysign, {t, x}));
}

// sqrt(x^2 + y^2) after scaling by a power of two, the sum carried in double-double and the square root
// corrected by one Newton step: under 1 ulp.
Value *Emitter::hypot_d(Value *x, Value *y) {
  Value *ax = intr(llvm::Intrinsic::fabs, {x}), *ay = intr(llvm::Intrinsic::fabs, {y});
  Value *mx = b_.CreateSelect(b_.CreateFCmpOGT(ax, ay), ax, ay);
  Value *big = b_.CreateFCmpOGT(mx, f64c(0x1p500)), *tiny = b_.CreateFCmpOLT(mx, f64c(0x1p-500));
  Value *sc = b_.CreateSelect(big, f64c(0x1p-600), b_.CreateSelect(tiny, f64c(0x1p600), f64c(1.0)));
  Value *un = b_.CreateSelect(big, f64c(0x1p600), b_.CreateSelect(tiny, f64c(0x1p-600), f64c(1.0)));
  Value *a = b_.CreateFMul(ax, sc), *c = b_.CreateFMul(ay, sc);
  Value *a2 = b_.CreateFMul(a, a), *c2 = b_.CreateFMul(c, c);
  Value *a2l = fma(a, a, b_.CreateFNeg(a2)), *c2l = fma(c, c, b_.CreateFNeg(c2));
  Value *S, *Se;
  two_sum(a2, c2, S, Se);
  Se = b_.CreateFAdd(Se, b_.CreateFAdd(a2l, c2l));
  Value *h = intr(llvm::Intrinsic::sqrt, {S});
  Value *corr = b_.CreateFDiv(b_.CreateFAdd(fma(b_.CreateFNeg(h), h, S), Se), b_.CreateFMul(h, f64c(2.0)));
  Value *res = b_.CreateFMul(b_.CreateFAdd(h, b_.CreateSelect(b_.CreateFCmpOEQ(h, f64c(0.0)), f64c(0.0), corr)), un);
  res = b_.CreateSelect(b_.CreateFCmpUNO(x, y), b_.CreateFAdd(x, y), res);
  Value *inf = b_.CreateOr(b_.CreateFCmpOEQ(ax, f64c(HUGE_VAL)), b_.CreateFCmpOEQ(ay, f64c(HUGE_VAL)));
  return b_.CreateSelect(inf, f64c(HUGE_VAL), res);  // inf beats NaN
}

// pow(x, y) = exp(y log|x|) with log and the product in double-double, then C99's special cases.
Value *Emitter::pow_d(Value *x, Value *y) {
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  Value *ax = intr(llvm::Intrinsic::fabs, {x}), *ay = intr(llvm::Intrinsic::fabs, {y});
  Value *finite_x = b_.CreateFCmpOLT(ax, f64c(inf));
  Value *usable = b_.CreateAnd(finite_x, b_.CreateFCmpOGT(ax, f64c(0.0)));
  Value *lo;
  Value *L = log_dd(b_.CreateSelect(usable, ax, f64c(1.0)), lo);
  Value *t = b_.CreateFMul(y, L);
  Value *tl = b_.CreateFAdd(fma(y, L, b_.CreateFNeg(t)), b_.CreateFMul(y, lo));
  Value *E = exp_d(t);
  Value *res = fma(E, tl, E);
  res = b_.CreateSelect(b_.CreateFCmpUNO(res, res), E, res);  // inf * tl
  // y integral / odd integral (|y| >= 2^53 is even).
  Value *yint = b_.CreateFCmpOEQ(intr(llvm::Intrinsic::floor, {y}), y);
  Value *hy = b_.CreateFMul(y, f64c(0.5));
  Value *yodd = b_.CreateAnd(yint, b_.CreateFCmpONE(intr(llvm::Intrinsic::floor, {hy}), hy));
  Value *xneg = sign_neg(x);
  // Negative finite x: NaN unless y is an integer; odd integers keep the sign.
  res = b_.CreateSelect(b_.CreateAnd(xneg, yodd), b_.CreateFNeg(res), res);
  res = b_.CreateSelect(b_.CreateAnd(b_.CreateFCmpOLT(x, f64c(0.0)), b_.CreateNot(yint)), f64c(nan), res);
  // x = +-0 or +-inf: 0 or inf by the sign of y (and of x for odd y).
  Value *ypos = b_.CreateFCmpOGT(y, f64c(0.0));
  Value *zero_inf = b_.CreateSelect(b_.CreateFCmpOEQ(ax, f64c(0.0)), b_.CreateSelect(ypos, f64c(0.0), f64c(inf)),
                                    b_.CreateSelect(ypos, f64c(inf), f64c(0.0)));
  zero_inf = b_.CreateSelect(b_.CreateAnd(xneg, yodd), b_.CreateFNeg(zero_inf), zero_inf);
  res = b_.CreateSelect(b_.CreateNot(usable), zero_inf, res);
  // y = +-inf: by |x| against 1 (|x| = 1 gives 1).
  Value *yinf = b_.CreateFCmpOEQ(ay, f64c(inf));
  Value *grow = b_.CreateICmpEQ(b_.CreateFCmpOGT(ax, f64c(1.0)), ypos);
  Value *yinf_v =
      b_.CreateSelect(b_.CreateFCmpOEQ(ax, f64c(1.0)), f64c(1.0), b_.CreateSelect(grow, f64c(inf), f64c(0.0)));
  res = b_.CreateSelect(yinf, yinf_v, res);
  res = b_.CreateSelect(b_.CreateFCmpUNO(x, y), b_.CreateFAdd(x, y), res);
  res = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(1.0)), f64c(1.0), res);
  return b_.CreateSelect(b_.CreateFCmpOEQ(y, f64c(0.0)), f64c(1.0), res);
}

// erfc(x) for x >= 0.5: exp(-x^2) (x^2 in double-double) times erfcx(x). Below 6, erfcx comes from Taylor
// tables around 0.75 + 0.5 j whose coefficients follow from erfcx' = 2 x erfcx - 2/sqrt(pi):
// (k+1) a_(k+1) = 2 c a_k + 2 a_(k-1), degree 19 on |h| <= 1/4 (below 2^-58 relative). That recurrence
// amplifies its rounding errors by about e^(c/2), harmless (long double) up to c = 5.75 but not beyond, so from
// 6 on erfcx is Laplace's continued fraction, 16 terms (below 2^-58 there). Beyond 27.5 erfc underflows.
Value *Emitter::erfc_pos(Value *x) {
  Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(27.5)), x, f64c(27.0));
  Value *ex = erfcx_pos(xc);
  Value *x2 = b_.CreateFMul(xc, xc);
  Value *x2l = fma(xc, xc, b_.CreateFNeg(x2));
  Value *E = exp_d(b_.CreateFNeg(x2));
  E = fma(E, b_.CreateFNeg(x2l), E);
  Value *res = b_.CreateFMul(E, ex);
  return b_.CreateSelect(b_.CreateFCmpOGE(x, f64c(27.5)), f64c(0.0), res);
}

Value *Emitter::erfcx_pos(Value *xc) {
  using namespace consts;
  constexpr int kDeg = 19, kCentres = 11, kTerms = 16;
  std::vector<uint64_t> words, his;
  for (int j = 0; j < kCentres; ++j) {
    const long double c = 0.75L + 0.5L * j;
    long double a[kDeg + 1];
    a[0] = static_cast<long double>(kErfcxAt[j][0]) + kErfcxAt[j][1];
    a[1] = 2 * c * a[0] - 1.1283791670955125738961589L;  // 2 / sqrt(pi)
    for (int k = 1; k < kDeg; ++k) a[k + 1] = (2 * c * a[k] + 2 * a[k - 1]) / (k + 1);
    for (int k = 0; k <= kDeg; ++k) {
      double v = k == 0 ? kErfcxAt[j][1] : static_cast<double>(a[k]);  // slot 0: a_0's low part
      uint64_t w;
      std::memcpy(&w, &v, 8);
      words.push_back(w);
    }
    uint64_t w;
    std::memcpy(&w, &kErfcxAt[j][0], 8);
    his.push_back(w);
  }
  Value *tbl = table("pk_erfcx_taylor", words);
  Value *xt = b_.CreateSelect(b_.CreateFCmpOLT(xc, f64c(6.0)), xc, f64c(1.0));
  Value *j = b_.CreateFPToSI(b_.CreateFMul(b_.CreateFSub(xt, f64c(0.5)), f64c(2.0)), i64_);
  j = b_.CreateSelect(b_.CreateICmpSGT(j, i64c(kCentres - 1)), i64c(kCentres - 1), j);
  j = b_.CreateSelect(b_.CreateICmpSLT(j, i64c(0)), i64c(0), j);
  Value *c = fma(b_.CreateSIToFP(j, f64_), f64c(0.5), f64c(0.75));
  Value *h = b_.CreateFSub(xt, c);  // exact
  Value *base = b_.CreateMul(j, i64c(kDeg + 1));
  auto coef = [&](int k) { return b_.CreateLoad(f64_, b_.CreateGEP(f64_, tbl, b_.CreateAdd(base, i64c(k)))); };
  Value *p = coef(kDeg);
  for (int k = kDeg - 1; k >= 1; --k) p = fma(p, h, coef(k));
  Value *a0 = b_.CreateLoad(f64_, b_.CreateGEP(f64_, table("pk_erfcx_at", his), j));
  Value *taylor = b_.CreateFAdd(a0, fma(p, h, coef(0)));
  // erfcx(x) = 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))), evaluated from the tail.
  Value *xf = b_.CreateSelect(b_.CreateFCmpOLT(xc, f64c(6.0)), f64c(6.0), xc);
  Value *t = f64c(0.0);
  for (int k = kTerms; k >= 1; --k) t = b_.CreateFDiv(f64c(0.5 * k), b_.CreateFAdd(xf, t));
  Value *frac = b_.CreateFDiv(f64c(0.56418958354775628695), b_.CreateFAdd(xf, t));  // 1 / sqrt(pi)
  return b_.CreateSelect(b_.CreateFCmpOLT(xc, f64c(6.0)), taylor, frac);
}

// erf(x) for |x| <= 1/2: 2/sqrt(pi) (x - x^3/3 + x^5/10 - ...), Taylor to x^29.
Value *Emitter::erf_small(Value *x) {
  using namespace consts;
  std::vector<double> c;
  long double f = 1;
  for (int n = 1; n <= 14; ++n) {
    f *= n;
    c.push_back(static_cast<double>((n % 2 ? -1.0L : 1.0L) / (f * (2 * n + 1))));
  }
  Value *z = b_.CreateFMul(x, x);
  Value *tail = b_.CreateFMul(b_.CreateFMul(x, z), horner(z, c));  // x (erf sum - 1)
  Value *s = b_.CreateFAdd(x, tail);
  Value *sl = b_.CreateFSub(tail, b_.CreateFSub(s, x));
  Value *p = b_.CreateFMul(s, f64c(kTwoOverSqrtPiHi));
  Value *pl = fma(s, f64c(kTwoOverSqrtPiHi), b_.CreateFNeg(p));
  pl = b_.CreateFAdd(
      pl, b_.CreateFAdd(b_.CreateFMul(s, f64c(kTwoOverSqrtPiLo)), b_.CreateFMul(sl, f64c(kTwoOverSqrtPiHi))));
  return b_.CreateFAdd(p, pl);
}

Value *Emitter::erf_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *small = erf_small(b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), x, f64c(0.0)));
  Value *big = b_.CreateFSub(f64c(1.0), erfc_pos(b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(0.5)), a, f64c(1.0))));
  big = intr(llvm::Intrinsic::copysign, {big, x});
  Value *res = b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), small, big);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

Value *Emitter::erfc_d(Value *x) {
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *ec = erfc_pos(b_.CreateSelect(b_.CreateFCmpOGT(a, f64c(0.5)), a, f64c(1.0)));
  Value *small = b_.CreateFSub(f64c(1.0), erf_small(b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), x, f64c(0.0))));
  Value *big = b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0.0)), ec, b_.CreateFSub(f64c(2.0), ec));
  Value *res = b_.CreateSelect(b_.CreateFCmpOLE(a, f64c(0.5)), small, big);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

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

// erfcx(x) = exp(x^2) erfc(x). x >= 1/2: erfc's own tables and continued fraction (which need no exp). |x| < 1/2:
// exp(x^2) (1 - erf(x)), x^2 carried in double-double into the exp. x <= -1/2: 2 exp(x^2) - erfcx(-x), no
// cancellation (the first term is at least 2.5, the second below 0.62); it overflows where the function does.
Value *Emitter::erfcx_d(Value *x) {
  const double inf = HUGE_VAL;
  Value *a = intr(llvm::Intrinsic::fabs, {x});
  Value *small = b_.CreateFCmpOLE(a, f64c(0.5));
  Value *ab = b_.CreateSelect(small, f64c(1.0), a);
  Value *big = erfcx_pos(ab);
  auto exp_sq = [&](Value *v) {  // exp(v^2) with the square's rounding error folded in
    Value *v2 = b_.CreateFMul(v, v);
    Value *v2l = fma(v, v, b_.CreateFNeg(v2));
    Value *E = exp_d(v2);
    return b_.CreateSelect(b_.CreateFCmpOEQ(E, f64c(inf)), E, fma(E, v2l, E));
  };
  Value *xs = b_.CreateSelect(small, x, f64c(0.0));
  Value *near = b_.CreateFMul(exp_sq(xs), b_.CreateFSub(f64c(1.0), erf_small(xs)));
  Value *neg = b_.CreateFSub(b_.CreateFMul(exp_sq(ab), f64c(2.0)), big);
  Value *res = b_.CreateSelect(small, near, b_.CreateSelect(b_.CreateFCmpOGT(x, f64c(0.0)), big, neg));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

// Giles' single-precision erf_inv start for w = -log((1 - y)(1 + y)) < 5, times y.
static const std::vector<double> kGilesSmall = {1.50140941,     0.246640727,    -0.00417768164,
                                                -0.00125372503, 0.00021858087,  -4.39150654e-06,
                                                -3.5233877e-06, 3.43273939e-07, 2.81022636e-08};

// erf_inv(y) for 0 <= y <= 1/2 (so x <= 0.477 < 1/2, erf_small's range): Giles' start (about 1e-7 relative),
// then Newton steps on erf, each squaring the relative error; three reach the rounding of the last step.
Value *Emitter::erf_inv_small(Value *y) {
  Value *w = b_.CreateFNeg(log_d(b_.CreateFMul(b_.CreateFSub(f64c(1.0), y), b_.CreateFAdd(f64c(1.0), y))));
  Value *x0 = b_.CreateFMul(horner(b_.CreateFSub(w, f64c(2.5)), kGilesSmall), y);
  return loop_n(i64c(3), {x0}, [&](Value *, const std::vector<Value *> &a) {
    Value *x = a[0];
    Value *f = b_.CreateFSub(erf_small(x), y);
    Value *d = b_.CreateFMul(f64c(1.1283791670955126), exp_d(b_.CreateFNeg(b_.CreateFMul(x, x))));
    return std::vector<Value *>{b_.CreateFSub(x, b_.CreateFDiv(f, d))};
  })[0];
}

// erfc_inv(q) for 0 < q <= 1/2 (x >= 0.476), relative in the whole tail down to subnormal q: Newton on
// log erfc(x) = log erfcx(x) - x^2, whose derivative is -2 / (sqrt(pi) erfcx(x)); neither side underflows.
// Start: Giles' formula where it was fitted (w < 5), else the asymptotic x^2 = L - log(sqrt(pi L)), L = -log q
// (within 1 %); five steps converge from either.
Value *Emitter::erfc_inv(Value *q) {
  Value *w = b_.CreateFNeg(log_d(b_.CreateFMul(q, b_.CreateFSub(f64c(2.0), q))));
  Value *giles = b_.CreateFMul(horner(b_.CreateFSub(w, f64c(2.5)), kGilesSmall), b_.CreateFSub(f64c(1.0), q));
  Value *lq_lo;
  Value *lq = log_dd(q, lq_lo);
  Value *L = b_.CreateFNeg(lq);
  Value *asym = intr(llvm::Intrinsic::sqrt,
                     {b_.CreateFSub(b_.CreateFSub(L, b_.CreateFMul(f64c(0.5), log_d(L))), f64c(0.5723649429247001))});
  Value *x0 = b_.CreateSelect(b_.CreateFCmpOLT(w, f64c(5.0)), giles, asym);
  return loop_n(i64c(5), {x0}, [&](Value *, const std::vector<Value *> &a) {
    Value *x = a[0];
    Value *e = erfcx_d(x);
    Value *x2 = b_.CreateFMul(x, x);
    Value *x2l = fma(x, x, b_.CreateFNeg(x2));
    // f = log erfc(x) - log q, the two large terms (x^2 and log q) cancelling first.
    Value *f = b_.CreateFAdd(b_.CreateFSub(b_.CreateFNeg(x2), lq), log_d(e));
    f = b_.CreateFSub(b_.CreateFSub(f, x2l), lq_lo);
    return std::vector<Value *>{fma(b_.CreateFMul(f, f64c(0.88622692545275801)), e, x)};  // sqrt(pi) / 2
  })[0];
}

// erf_inv: Newton on erf up to 1/2, on log erfc above (1 - |y| is exact there).
Value *Emitter::erf_inv_d(Value *y) {
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  Value *ay = intr(llvm::Intrinsic::fabs, {y});
  Value *small = b_.CreateFCmpOLE(ay, f64c(0.5));
  Value *xs = erf_inv_small(b_.CreateSelect(small, ay, f64c(0.25)));
  Value *qb = b_.CreateSelect(b_.CreateAnd(b_.CreateNot(small), b_.CreateFCmpOLT(ay, f64c(1.0))),
                              b_.CreateFSub(f64c(1.0), ay), f64c(0.25));
  Value *xb = erfc_inv(qb);
  Value *r = b_.CreateSelect(small, xs, xb);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(ay, f64c(1.0)), f64c(inf), r);
  r = intr(llvm::Intrinsic::copysign, {r, y});
  r = b_.CreateSelect(b_.CreateFCmpOEQ(y, f64c(0.0)), y, r);
  return b_.CreateSelect(b_.CreateFCmpUGT(ay, f64c(1.0)), f64c(nan), r);  // NaN and |y| > 1
}

// ndtri(p) = -sqrt(2) erfc_inv(2 p) on the lower half (2 p exact), mirrored for p > 1/2 (1 - p exact); for p in
// [1/4, 3/4] it is sqrt(2) erf_inv(2 p - 1), which keeps the relative precision near 1/2.
Value *Emitter::ndtri_d(Value *p) {
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  Value *lower = b_.CreateFCmpOLT(p, f64c(0.5));
  Value *pl = b_.CreateSelect(lower, p, b_.CreateFSub(f64c(1.0), p));
  Value *mid = b_.CreateFCmpOGE(pl, f64c(0.25));
  Value *xm = erf_inv_small(b_.CreateSelect(mid, b_.CreateFSub(f64c(1.0), b_.CreateFMul(pl, f64c(2.0))), f64c(0.25)));
  Value *q = b_.CreateFMul(pl, f64c(2.0));
  Value *xt = erfc_inv(b_.CreateSelect(b_.CreateAnd(b_.CreateNot(mid), b_.CreateFCmpOGT(q, f64c(0.0))), q, f64c(0.25)));
  Value *x = b_.CreateSelect(mid, xm, xt);
  Value *r = fma(x, f64c(0x1.6a09e667f3bcdp+0), b_.CreateFMul(x, f64c(-0x1.bdd3413b26456p-54)));  // x sqrt(2)
  r = b_.CreateSelect(lower, b_.CreateFNeg(r), r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(p, f64c(0.5)), f64c(0.0), r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(p, f64c(0.0)), f64c(-inf), r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(p, f64c(1.0)), f64c(inf), r);
  return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpULT(p, f64c(0.0)), b_.CreateFCmpUGT(p, f64c(1.0))), f64c(nan), r);
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

// Digamma (the OpenCL backend's algorithm): every x in [-128, 10) moves by whole steps into [2, 3), where a
// Taylor series at c = x0 + 1 (x0 the positive root; coefficients psi^(k)(c) / k! as hi/lo pairs) converges by a
// factor < 0.22 a term; the steps' reciprocals and the series are summed in double-double, so the cancellation
// near the roots costs nothing. Above 10 the asymptotic series, below -128 the reflection formula, in double.
Value *Emitter::digamma_d(Value *x) {
  using namespace consts;
  const double *const kTaylor = pk::kit::special::kDigammaTaylorAtRootPlusOne;
  std::vector<uint64_t> words(72);
  std::memcpy(words.data(), kTaylor, 72 * sizeof(double));
  Value *tbl = table("pk_psi_taylor", words);
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  auto asym = [&](Value *v) {
    Value *z = b_.CreateFDiv(f64c(1.0), b_.CreateFMul(v, v));
    Value *series =
        b_.CreateFMul(z, horner(z, {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12}));
    return b_.CreateFSub(b_.CreateFSub(log_d(v), b_.CreateFDiv(f64c(0.5), v)), series);
  };
  Value *mid = b_.CreateAnd(b_.CreateFCmpOGE(x, f64c(-128.0)), b_.CreateFCmpOLT(x, f64c(10.0)));
  Value *xm = b_.CreateSelect(mid, x, f64c(2.5));
  Value *ge3 = b_.CreateFCmpOGE(xm, f64c(3.0)), *lt2 = b_.CreateFCmpOLT(xm, f64c(2.0));
  Value *n =
      b_.CreateSelect(ge3, b_.CreateFSub(intr(llvm::Intrinsic::floor, {xm}), f64c(2.0)),
                      b_.CreateSelect(lt2, intr(llvm::Intrinsic::ceil, {b_.CreateFSub(f64c(2.0), xm)}), f64c(0.0)));
  Value *base = b_.CreateSelect(ge3, b_.CreateFSub(xm, n), xm);  // exact: x - k for whole k below x
  DD zt = dd_two_sum(xm, n);
  DD z{b_.CreateSelect(lt2, zt.hi, base), b_.CreateSelect(lt2, zt.lo, f64c(0.0))};
  std::vector<Value *> sum =
      loop_n(b_.CreateFPToSI(n, i64_), {f64c(0.0), f64c(0.0)}, [&](Value *k, const std::vector<Value *> &a) {
        DD t = dd_add({a[0], a[1]}, dd_div(dd(f64c(1.0)), dd_two_sum(base, b_.CreateSIToFP(k, f64_))));
        return std::vector<Value *>{t.hi, t.lo};
      });
  DD dx = dd_add(z, {f64c(-pk::kit::special::kDigammaRootPlusOneHi), f64c(-pk::kit::special::kDigammaRootPlusOneLo)});
  auto coef = [&](Value *i) { return b_.CreateLoad(f64_, b_.CreateGEP(f64_, tbl, i)); };
  std::vector<Value *> ps =
      loop_n(i64c(35), {f64c(kTaylor[70]), f64c(kTaylor[71])}, [&](Value *c, const std::vector<Value *> &a) {
        Value *k2 = b_.CreateMul(b_.CreateSub(i64c(34), c), i64c(2));
        DD t = dd_add(dd_mul({a[0], a[1]}, dx), {coef(k2), coef(b_.CreateAdd(k2, i64c(1)))});
        return std::vector<Value *>{t.hi, t.lo};
      });
  Value *sh = b_.CreateSelect(ge3, sum[0], b_.CreateFNeg(sum[0]));
  Value *sl = b_.CreateSelect(ge3, sum[1], b_.CreateFNeg(sum[1]));
  DD m = dd_add({ps[0], ps[1]}, {sh, sl});
  Value *res = b_.CreateFAdd(m.hi, m.lo);
  res = b_.CreateSelect(b_.CreateFCmpOGE(x, f64c(10.0)), asym(b_.CreateSelect(mid, f64c(10.0), x)), res);
  // Below -128: psi(1 - x) - pi cot(pi r), r = x - rint(x) exact, 1 - x exact (larger |x| are integers). Near
  // each negative root the two terms (about log|x|) cancel, so both are carried in double-double: log(1 - x) from
  // log_dd, and pi cot(pi r) = 1/r - r sum_k 2 zeta(2k) r^(2k-2), 32 terms for |r| <= 1/2 (below 2^-64 there).
  Value *xf = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(-128.0)), x, f64c(-128.5));
  Value *rf = b_.CreateFSub(xf, intr(llvm::Intrinsic::rint, {xf}));
  rf = b_.CreateSelect(b_.CreateFCmpOEQ(rf, f64c(0.0)), f64c(0.5), rf);
  constexpr int kZeta = 32;
  std::vector<uint64_t> zw(2 * kZeta);
  std::memcpy(zw.data(), pk::kit::special::kTwoZetaEven, sizeof pk::kit::special::kTwoZetaEven);
  Value *ztbl = table("pk_two_zeta_even", zw);
  DD t;
  t.hi = b_.CreateFMul(rf, rf);
  t.lo = fma(rf, rf, b_.CreateFNeg(t.hi));
  auto zc = [&](Value *i) { return b_.CreateLoad(f64_, b_.CreateGEP(f64_, ztbl, i)); };
  std::vector<Value *> zs = loop_n(i64c(kZeta), {f64c(0.0), f64c(0.0)}, [&](Value *c, const std::vector<Value *> &a) {
    Value *k2 = b_.CreateMul(b_.CreateSub(i64c(kZeta - 1), c), i64c(2));
    DD v = dd_add(dd_mul({a[0], a[1]}, t), {zc(k2), zc(b_.CreateAdd(k2, i64c(1)))});
    return std::vector<Value *>{v.hi, v.lo};
  });
  DD cot = dd_add(dd_div(dd(f64c(1.0)), dd(rf)), dd_mul_d({b_.CreateFNeg(zs[0]), b_.CreateFNeg(zs[1])}, rf));
  Value *vf = b_.CreateFSub(f64c(1.0), xf);
  DD lv;
  lv.hi = log_dd(vf, lv.lo);
  DD fd = dd_add(lv, {b_.CreateFNeg(cot.hi), b_.CreateFNeg(cot.lo)});
  Value *zf = b_.CreateFDiv(f64c(1.0), b_.CreateFMul(vf, vf));
  // 1/(2v) ~ 4e-3 in double-double too: its double rounding alone is 1e-6 of psi at the double nearest a root.
  const DD half_inv = dd_div(dd(f64c(0.5)), dd(vf));
  fd = dd_add(fd, {b_.CreateFNeg(half_inv.hi), b_.CreateFNeg(half_inv.lo)});
  // 1/(12 v^2) likewise; the later terms (below 1e-11 here) in double, through B_14 (the first omitted one is below
  // 1e-30 from v = 129 on).
  DD v2;
  v2.hi = b_.CreateFMul(vf, vf);
  v2.lo = fma(vf, vf, b_.CreateFNeg(v2.hi));
  const DD twelfth = dd_div(dd(f64c(1.0)), dd_mul_d(v2, f64c(12.0)));
  fd = dd_add(fd, {b_.CreateFNeg(twelfth.hi), b_.CreateFNeg(twelfth.lo)});
  Value *small_terms = b_.CreateFMul(
      b_.CreateFMul(zf, zf), horner(zf, {-1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12}));
  fd = dd_add_d(fd, b_.CreateFNeg(small_terms));
  Value *far = b_.CreateFAdd(fd.hi, fd.lo);
  res = b_.CreateSelect(b_.CreateFCmpOLT(x, f64c(-128.0)), far, res);
  res = b_.CreateSelect(b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {x}), f64c(1e-300)), b_.CreateFDiv(f64c(-1.0), x),
                        res);  // -1/x - gamma: the constant is below an ulp
  Value *negint = b_.CreateAnd(b_.CreateFCmpOLT(x, f64c(0.0)), b_.CreateFCmpOEQ(intr(llvm::Intrinsic::floor, {x}), x));
  res = b_.CreateSelect(negint, f64c(nan), res);  // -inf included
  res = b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(inf)), x, res);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

// Modified Bessel functions of the first kind, order 0 and 1, scaled by exp(-|x|) when `scaled` (the OpenCL
// backend's algorithm): below 20 the power series (positive terms) in double-double, above the asymptotic
// expansion, also in double-double up to the one exp; beyond 709 exp(x) is applied as two halves so that the
// result overflows only where it is out of range itself. Each branch runs on an argument clamped to its own
// range, so both converge and a select picks the result.
Value *Emitter::bessel_i_d(int order, Value *xd, bool scaled) {
  Value *x = intr(llvm::Intrinsic::fabs, {xd});
  Value *small = b_.CreateFCmpOLT(x, f64c(20.0));
  Value *xs = b_.CreateSelect(small, x, f64c(0.0)), *xl = b_.CreateSelect(small, f64c(20.0), x);
  // Series: sum_k (x^2/4)^k / (k! (k + order)!) times (x/2)^order.
  DD q = dd_mul_d(dd_two_sum(b_.CreateFMul(xs, xs), fma(xs, xs, b_.CreateFNeg(b_.CreateFMul(xs, xs)))), f64c(0.25));
  DD term0 = dd(order == 0 ? f64c(1.0) : b_.CreateFMul(xs, f64c(0.5)));
  std::vector<Value *> ser =
      loop_until(i64c(199), {term0.hi, term0.lo, term0.hi, term0.lo}, [&](Value *c, const std::vector<Value *> &a) {
        Value *k = b_.CreateSIToFP(b_.CreateAdd(c, i64c(1)), f64_);
        DD term = dd_div(dd_mul({a[0], a[1]}, q), dd(b_.CreateFMul(k, b_.CreateFAdd(k, f64c(order)))));
        DD sum = dd_add({a[2], a[3]}, term);
        return std::vector<Value *>{term.hi, term.lo, sum.hi, sum.lo,
                                    b_.CreateFCmpOLT(term.hi, b_.CreateFMul(sum.hi, f64c(1e-18)))};
      });
  Value *series = scaled ? b_.CreateFMul(ser[2], exp_d(b_.CreateFNeg(xs))) : ser[2];
  // Asymptotic: e^x / sqrt(2 pi x) sum_k (-1)^k prod_j (mu - (2j - 1)^2) / (k! (8x)^k).
  const double mu = 4.0 * order * order;
  std::vector<Value *> as =
      loop_until(i64c(59), {f64c(1.0), f64c(1.0), f64c(0.0)}, [&](Value *c, const std::vector<Value *> &a) {
        Value *k = b_.CreateSIToFP(b_.CreateAdd(c, i64c(1)), f64_);
        Value *odd = b_.CreateFSub(b_.CreateFMul(k, f64c(2.0)), f64c(1.0));
        Value *ratio = b_.CreateFDiv(b_.CreateFNeg(b_.CreateFSub(f64c(mu), b_.CreateFMul(odd, odd))),
                                     b_.CreateFMul(b_.CreateFMul(k, f64c(8.0)), xl));
        Value *term = b_.CreateFMul(a[0], ratio);
        DD sum = dd_add_d({a[1], a[2]}, term);
        Value *stop = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {term}),
                                       b_.CreateFMul(f64c(1e-18), intr(llvm::Intrinsic::fabs, {sum.hi})));
        return std::vector<Value *>{term, sum.hi, sum.lo, stop};
      });
  Value *sq = intr(llvm::Intrinsic::sqrt, {xl});
  DD root;
  fast_two_sum(sq, b_.CreateFDiv(fma(b_.CreateFNeg(sq), sq, xl), b_.CreateFMul(sq, f64c(2.0))), root.hi, root.lo);
  Value *pre = dd_div(dd_mul({as[1], as[2]}, {f64c(0.3989422804014327), f64c(-2.49232720227773e-17)}), root).hi;
  Value *large = pre;
  if (!scaled) {
    Value *h = exp_d(b_.CreateFMul(xl, f64c(0.5)));
    large = b_.CreateSelect(b_.CreateFCmpOLT(xl, f64c(709.0)), b_.CreateFMul(pre, exp_d(xl)),
                            b_.CreateFMul(b_.CreateFMul(h, pre), h));
  }
  const double inf = std::numeric_limits<double>::infinity();
  large = b_.CreateSelect(b_.CreateFCmpOEQ(xl, f64c(inf)), f64c(scaled ? 0.0 : inf), large);
  Value *r = b_.CreateSelect(small, series, large);
  if (order == 1) r = b_.CreateSelect(b_.CreateFCmpOLT(xd, f64c(0.0)), b_.CreateFNeg(r), r);
  return b_.CreateSelect(b_.CreateFCmpUNO(xd, xd), xd, r);
}

// Bessel functions of the first kind, order 0 and 1 (the OpenCL backend's algorithm; absolute error near the
// zeros): below 20 the alternating power series in double-double (its terms reach ~e^x / x before cancelling to
// O(1)); above, Hankel's expansion up to its smallest term with sin and cos of x itself (Payne-Hanek reduced).
Value *Emitter::bessel_j_d(int order, Value *xd) {
  Value *x = intr(llvm::Intrinsic::fabs, {xd});
  Value *small = b_.CreateFCmpOLT(x, f64c(20.0));
  Value *xs = b_.CreateSelect(small, x, f64c(0.0)), *xl = b_.CreateSelect(small, f64c(20.0), x);
  DD q = dd_mul_d(dd_two_sum(b_.CreateFMul(xs, xs), fma(xs, xs, b_.CreateFNeg(b_.CreateFMul(xs, xs)))), f64c(0.25));
  DD term0 = dd(order == 0 ? f64c(1.0) : b_.CreateFMul(xs, f64c(0.5)));
  std::vector<Value *> ser =
      loop_until(i64c(79), {term0.hi, term0.lo, term0.hi, term0.lo}, [&](Value *c, const std::vector<Value *> &a) {
        Value *k = b_.CreateSIToFP(b_.CreateAdd(c, i64c(1)), f64_);
        DD term = dd_div(dd_mul({a[0], a[1]}, q), dd(b_.CreateFNeg(b_.CreateFMul(k, b_.CreateFAdd(k, f64c(order))))));
        DD sum = dd_add({a[2], a[3]}, term);
        Value *at = intr(llvm::Intrinsic::fabs, {term.hi});
        Value *stop =
            b_.CreateOr(b_.CreateFCmpOLT(at, f64c(1e-33)),
                        b_.CreateFCmpOLT(at, b_.CreateFMul(intr(llvm::Intrinsic::fabs, {sum.hi}), f64c(1e-33))));
        return std::vector<Value *>{term.hi, term.lo, sum.hi, sum.lo, stop};
      });
  Value *series = b_.CreateFAdd(ser[2], ser[3]);
  // Hankel: P and Q from the terms t_k = t_(k-1) (mu - (2k - 1)^2) / (8 k x), by k mod 4: +Q, -P, -Q, +P; stop
  // before the first term that does not decrease.
  const double mu = 4.0 * order * order;
  Value *z8 = b_.CreateFMul(xl, f64c(8.0));
  std::vector<Value *> h =
      loop_until(i64c(79), {f64c(1.0), f64c(0.0), f64c(1.0)}, [&](Value *c, const std::vector<Value *> &a) {
        Value *kk = b_.CreateAdd(c, i64c(1));
        Value *k = b_.CreateSIToFP(kk, f64_);
        Value *odd = b_.CreateFSub(b_.CreateFMul(k, f64c(2.0)), f64c(1.0));
        Value *next =
            b_.CreateFDiv(b_.CreateFMul(a[2], b_.CreateFSub(f64c(mu), b_.CreateFMul(odd, odd))), b_.CreateFMul(k, z8));
        Value *grows = b_.CreateFCmpOGE(intr(llvm::Intrinsic::fabs, {next}), intr(llvm::Intrinsic::fabs, {a[2]}));
        Value *m = b_.CreateAnd(kk, i64c(3));
        Value *p = b_.CreateSelect(b_.CreateICmpEQ(m, i64c(2)), b_.CreateFSub(a[0], next),
                                   b_.CreateSelect(b_.CreateICmpEQ(m, i64c(0)), b_.CreateFAdd(a[0], next), a[0]));
        Value *qq = b_.CreateSelect(b_.CreateICmpEQ(m, i64c(1)), b_.CreateFAdd(a[1], next),
                                    b_.CreateSelect(b_.CreateICmpEQ(m, i64c(3)), b_.CreateFSub(a[1], next), a[1]));
        Value *stop = b_.CreateOr(grows, b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {next}), f64c(1e-17)));
        return std::vector<Value *>{b_.CreateSelect(grows, a[0], p), b_.CreateSelect(grows, a[1], qq),
                                    b_.CreateSelect(grows, a[2], next), stop};
      });
  Value *sn = trig_d(xl, PK_OP_SIN), *cs = trig_d(xl, PK_OP_COS);
  Value *amp = b_.CreateFDiv(f64c(0.56418958354775628695), intr(llvm::Intrinsic::sqrt, {xl}));
  Value *v =
      order == 0
          ? b_.CreateFSub(b_.CreateFMul(h[0], b_.CreateFAdd(cs, sn)), b_.CreateFMul(h[1], b_.CreateFSub(sn, cs)))
          : b_.CreateFAdd(b_.CreateFMul(h[0], b_.CreateFSub(sn, cs)), b_.CreateFMul(h[1], b_.CreateFAdd(sn, cs)));
  Value *large = b_.CreateFMul(amp, v);
  large = b_.CreateSelect(b_.CreateFCmpOEQ(xl, f64c(std::numeric_limits<double>::infinity())), f64c(0.0), large);
  Value *r = b_.CreateSelect(small, series, large);
  if (order == 1) r = b_.CreateSelect(b_.CreateFCmpOLT(xd, f64c(0.0)), b_.CreateFNeg(r), r);
  return b_.CreateSelect(b_.CreateFCmpUNO(xd, xd), xd, r);
}

// sin(x) / x: 1 at 0, 0 at the infinities.
Value *Emitter::spherical_j0_d(Value *x) {
  Value *r = b_.CreateFDiv(trig_d(x, PK_OP_SIN), x);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {x}), f64c(std::numeric_limits<double>::infinity())),
                      f64c(0.0), r);
  return b_.CreateSelect(b_.CreateFCmpOEQ(x, f64c(0.0)), f64c(1.0), r);
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

// Hurwitz zeta(s, q) = sum_k (k + q)^-s for s > 1 (the OpenCL backend's algorithm): direct terms, then
// Euler-Maclaurin with the Bernoulli numbers (special_constants.hpp). The direct terms are summed in
// double-double; for q < 0 (s is then an integer) terms of both signs cancel, so there they are exact integer
// powers in double-double too, where those stay in range.
Emitter::DD Emitter::zeta_term(Value *q, Value *k, Value *s, Value *exact) {
  DD b = dd_two_sum(q, k);
  Value *plain = pow_d(b_.CreateFAdd(q, k), b_.CreateFNeg(s));
  Value *far = b_.CreateFCmpOGT(
      intr(llvm::Intrinsic::fabs, {b_.CreateFMul(s, log2_d(intr(llvm::Intrinsic::fabs, {b.hi})))}), f64c(900.0));
  Value *use_power = b_.CreateAnd(exact, b_.CreateNot(far));
  // b^s by squaring (s <= 2^20: at most 21 steps), only where it is used (the exponent is 0 elsewhere).
  Value *e0 = b_.CreateSelect(use_power, b_.CreateFPToUI(s, i64_), i64c(0));
  std::vector<Value *> pw =
      loop_until(i64c(64), {e0, f64c(1.0), f64c(0.0), b.hi, b.lo}, [&](Value *, const std::vector<Value *> &v) {
        Value *odd = b_.CreateICmpEQ(b_.CreateAnd(v[0], i64c(1)), i64c(1));
        DD r = dd_mul({v[1], v[2]}, {v[3], v[4]});
        DD p = dd_mul({v[3], v[4]}, {v[3], v[4]});
        Value *e = b_.CreateLShr(v[0], 1);
        return std::vector<Value *>{e,    b_.CreateSelect(odd, r.hi, v[1]), b_.CreateSelect(odd, r.lo, v[2]), p.hi,
                                    p.lo, b_.CreateICmpEQ(e, i64c(0))};
      });
  DD inv = dd_div(dd(f64c(1.0)), {pw[1], pw[2]});
  return {b_.CreateSelect(use_power, inv.hi, b_.CreateSelect(exact, pow_d(b.hi, b_.CreateFNeg(s)), plain)),
          b_.CreateSelect(use_power, inv.lo, f64c(0.0))};
}

// sum_{k >= k0} (q + k)^-s for q + k0 > 0: direct terms (zeta_term forms each base q + k exactly, in double-double
// where `exact`) until the ninth and q + k > 9, then Euler-Maclaurin.
Emitter::DD Emitter::zeta_sum(Value *ss, Value *qq, Value *exact, Value *k0) {
  namespace sp = pk::kit::special;
  const double inf = std::numeric_limits<double>::infinity();
  DD t0 = zeta_term(qq, k0, ss, exact);
  // Direct terms until the ninth and q + i > 9; a term below 1e-18 of the sum ends it early (done).
  std::vector<Value *> d = loop_until(
      i64c(std::numeric_limits<int64_t>::max()), {t0.hi, t0.lo, b_.CreateFAdd(qq, k0), f64c(0.0), b_.getFalse()},
      [&](Value *c, const std::vector<Value *> &v) {
        Value *n = b_.CreateSIToFP(b_.CreateAdd(c, i64c(1)), f64_);
        Value *i = b_.CreateFAdd(k0, n);
        Value *a = b_.CreateFAdd(qq, i);
        DD t = zeta_term(qq, i, ss, exact);
        auto finite = [&](Value *x) { return b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {x}), f64c(inf)); };
        DD added = dd_add({v[0], v[1]}, t);
        Value *both = b_.CreateAnd(finite(t.hi), finite(v[0]));
        DD sum{b_.CreateSelect(both, added.hi, b_.CreateFAdd(v[0], t.hi)), b_.CreateSelect(both, added.lo, f64c(0.0))};
        // The terms only shrink: one that underflows ends the sum (the tail would meet inf * 0).
        Value *done =
            b_.CreateOr(b_.CreateFCmpOEQ(t.hi, f64c(0.0)),
                        b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {b_.CreateFDiv(t.hi, sum.hi)}), f64c(1e-18)));
        Value *more = b_.CreateOr(b_.CreateFCmpOLT(n, f64c(9.0)), b_.CreateFCmpOLE(a, f64c(9.0)));
        return std::vector<Value *>{sum.hi, sum.lo, a, t.hi, done, b_.CreateOr(done, b_.CreateNot(more))};
      });
  DD sum{d[0], d[1]};
  Value *w = d[2], *b = d[3];
  Value *tail =
      b_.CreateFSub(b_.CreateFDiv(b_.CreateFMul(b, w), b_.CreateFSub(ss, f64c(1.0))), b_.CreateFMul(b, f64c(0.5)));
  Value *fac = f64c(1.0), *k = f64c(0.0), *stopped = b_.getFalse();
  for (int j = 0; j < 12; ++j) {
    // Unrolled; after convergence the terms stop being added (as the OpenCL loop breaks).
    fac = b_.CreateFMul(fac, b_.CreateFAdd(ss, k));
    b = b_.CreateFDiv(b, w);
    Value *t = b_.CreateFDiv(b_.CreateFMul(fac, b), f64c(sp::kZetaEulerMaclaurin[j]));
    Value *nt = b_.CreateFAdd(tail, t);
    tail = b_.CreateSelect(stopped, tail, nt);
    stopped = b_.CreateOr(
        stopped,
        b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {b_.CreateFDiv(t, b_.CreateFAdd(sum.hi, nt))}), f64c(1e-18)));
    k = b_.CreateFAdd(k, f64c(1.0));
    fac = b_.CreateFMul(fac, b_.CreateFAdd(ss, k));
    b = b_.CreateFDiv(b, w);
    k = b_.CreateFAdd(k, f64c(1.0));
  }
  DD with_tail = dd_add_d(sum, tail);
  Value *use_tail =
      b_.CreateAnd(b_.CreateNot(d[4]), b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {sum.hi}), f64c(inf)));
  return {b_.CreateSelect(use_tail, with_tail.hi, sum.hi), b_.CreateSelect(use_tail, with_tail.lo, sum.lo)};
}

Value *Emitter::zeta_d(Value *s, Value *q) {
  namespace sp = pk::kit::special;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Value *special_result = f64c(nan);
  // The special cases, in the order the OpenCL backend tests them (the first that applies wins).
  struct Case {
    Value *when, *value;
  };
  Value *sinf = b_.CreateFCmpOEQ(s, f64c(inf)), *qinf = b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {q}), f64c(inf));
  Value *qint = b_.CreateFCmpOEQ(q, intr(llvm::Intrinsic::floor, {q}));
  Value *sint = b_.CreateFCmpOEQ(s, intr(llvm::Intrinsic::floor, {s}));
  const Case cases[] = {
      {b_.CreateFCmpUNO(s, q), f64c(nan)},
      {b_.CreateFCmpOEQ(s, f64c(1.0)), f64c(inf)},
      {b_.CreateFCmpOLT(s, f64c(1.0)), f64c(nan)},
      {sinf, b_.CreateSelect(b_.CreateFCmpOGT(q, f64c(1.0)), f64c(0.0),
                             b_.CreateSelect(b_.CreateFCmpOEQ(q, f64c(1.0)), f64c(1.0), f64c(inf)))},
      {qinf, b_.CreateSelect(b_.CreateFCmpOGT(q, f64c(0.0)), f64c(0.0), f64c(inf))},
      {b_.CreateAnd(b_.CreateFCmpOLE(q, f64c(0.0)), qint), f64c(inf)},
      {b_.CreateAnd(b_.CreateFCmpOLE(q, f64c(0.0)), b_.CreateNot(sint)), f64c(nan)},
  };
  Value *none = b_.getTrue();
  for (auto it = std::rbegin(cases); it != std::rend(cases); ++it)
    special_result = b_.CreateSelect(it->when, it->value, special_result);
  for (const Case &c : cases) none = b_.CreateAnd(none, b_.CreateNot(c.when));
  Value *is_special = b_.CreateNot(none);
  // The branches below see s = 2, q = 1 for special inputs.
  Value *ss = b_.CreateSelect(is_special, f64c(2.0), s), *qq = b_.CreateSelect(is_special, f64c(1.0), q);
  // q < 0 (s an integer): the terms over negative bases, k < m = ceil(-q), are (-1)^s (f + j)^-s for j < m with
  // f = -(q + (m - 1)) in (0, 1) (exact: |q + (m - 1)| <= |q| is a multiple of q's ulp), i.e.
  // (-1)^s [zeta(s, f) - zeta(s, f + m)]; the terms from k = m on keep their exact bases. Bounded work however
  // negative q is (stepping one unit at a time from q = -9.35e13 ran for weeks), as the OpenCL backend does.
  Value *neg = b_.CreateFCmpOLT(qq, f64c(0.0));
  Value *exact = b_.CreateAnd(neg, b_.CreateFCmpOLE(ss, f64c(1048576.0)));
  Value *m = b_.CreateSelect(neg, intr(llvm::Intrinsic::ceil, {b_.CreateFNeg(qq)}), f64c(0.0));
  Value *f = b_.CreateSelect(neg, b_.CreateFNeg(b_.CreateFAdd(qq, b_.CreateFSub(m, f64c(1.0)))), f64c(1.0));
  DD zp = zeta_sum(ss, qq, exact, m);
  DD zf = zeta_sum(ss, f, exact, f64c(0.0));
  DD zfm = zeta_sum(ss, b_.CreateFAdd(f, m), b_.getFalse(), f64c(0.0));
  Value *sign = b_.CreateSelect(
      b_.CreateFCmpOEQ(intr(llvm::Intrinsic::floor, {b_.CreateFMul(ss, f64c(0.5))}), b_.CreateFMul(ss, f64c(0.5))),
      f64c(1.0), f64c(-1.0));
  auto finite = [&](Value *x) { return b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {x}), f64c(inf)); };
  DD negative = dd_add(zf, {b_.CreateFNeg(zfm.hi), b_.CreateFNeg(zfm.lo)});
  DD total = dd_add({b_.CreateFMul(sign, negative.hi), b_.CreateFMul(sign, negative.lo)}, zp);
  Value *plain = b_.CreateFAdd(b_.CreateFMul(sign, b_.CreateFSub(zf.hi, zfm.hi)), zp.hi);
  Value *rneg = b_.CreateSelect(b_.CreateAnd(finite(zf.hi), finite(zp.hi)), total.hi, plain);
  Value *r = b_.CreateSelect(neg, rneg, zp.hi);
  return b_.CreateSelect(is_special, special_result, r);
}

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

Value *Emitter::node(const Node &n, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt, int32_t out_dt) {
  using I = llvm::Intrinsic::ID;
  const int32_t t = in_dt.empty() ? out_dt : in_dt[0];
  const bool fp = is_fp(t);
  const bool uns = is_unsigned(t);
  Value *a = in.empty() ? nullptr : in[0];
  Value *c = in.size() > 1 ? in[1] : nullptr;
  auto through_double = [&](Value *(Emitter::*fn)(Value *)) { return from_double((this->*fn)(to_double(a)), t); };
  auto through_double2 = [&](Value *(Emitter::*fn)(Value *, Value *)) {
    return from_double((this->*fn)(to_double(a), to_double(in[1])), t);
  };
  auto fp_unary = [&](I id) { return narrow(intr(id, {a}), t); };
  if (ComplexEmitter::handles(n.op_id, in_dt, out_dt)) return cx().node(n.op_id, in, in_dt, out_dt, n.fill_value);
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
    case PK_OP_NEXTAFTER:
      return nextafter(a, c, t);
    case PK_OP_GCD:
      return gcd(a, c, uns);
    case PK_OP_POPULATION_COUNT:
      return intr(llvm::Intrinsic::ctpop, {a});
    case PK_OP_COUNT_LEADING_ZEROS:
      return b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {a->getType()}, {a, b_.getFalse()});
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
      // fp8: the product is exact in f64 and the sum is exact or far from an fp8 tie.
      if (is_fp8(t)) return from_double(intr(llvm::Intrinsic::fma, {to_double(a), to_double(c), to_double(in[2])}), t);
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

// ------------------------------------------------------------------------------------------- row programs

// var: the mean, a corrected mean, then the squared deviations (three passes, f64; the correction term makes a
// constant row's variance exactly 0). A sum of finite values that overflows is redone on values scaled by
// 2^-600 (exact) and the variance scaled back, as the CPU backend does; both sums come from the first pass.
// Scans: one pass carrying the running value; each step stores its element (and cummax/cummin their index).
void Emitter::build_line(Value *j) {
  const Node &n = r_.nodes[0];
  const int32_t xdt = r_.dtypes[n.inputs[0]], ydt = r_.dtypes[n.output];
  const bool fp = is_fp(xdt), uns = is_unsigned(xdt);
  Value *row0 = b_.CreateMul(j, b_.CreateSelect(b_.CreateICmpEQ(cols_, i64c(0)), i64c(1), cols_));
  auto x_at = [&](Value *c) { return load(xdt, args_[0], arg_offset(0, kElem, j, row0, c)); };
  auto x_at_row = [&](int arg) { return load(xdt, args_[arg], arg_offset(arg, kRow, j, row0, i64c(0))); };
  auto store_at = [&](int arg, int32_t d, Value *v, Value *c) {
    store(d, v, args_[arg], arg_offset(arg, kElem, j, row0, c));
  };
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  if (is_fft_op(n.op_id)) {
    // A direct DFT: the sum over the input elements j of the transform of x_j w(j), w = exp(-+2 pi i f) with
    // f = sum_d (j_d k_d mod n_d) / n_d as an exact fraction num / den (see plan_fft), accumulated as a complex
    // dot product (c64 in f64; c128 compensated). The twiddle: f in quarter turns q plus a remainder
    // r = (4 num - q den) / (2 den) in [-1/4, 1/4], sin and cos of pi r from sincos_pi (double-double pi r).
    const int D = n.round_mode & kFftAxes;
    const bool inverse = (n.round_mode & kFftInverse) != 0;
    const int32_t cdt = is_complex_dtype(xdt) ? xdt : ydt;
    if (D == 0) {  // no axes: the input itself (r2c: as complex), bits untouched
      Value *x = x_at_row(0);
      store(ydt, is_complex_dtype(xdt) ? x : cx().convert(x, xdt, cdt), args_[1],
            arg_offset(1, kRow, j, row0, i64c(0)));
      return;
    }
    auto *v2 = llvm::FixedVectorType::get(f64_, 2);
    Value *v = cx().dot(
        cdt, cols_,
        [&](Value *count, const std::vector<Value *> &init, const ComplexEmitter::Step &step) {
          return loop_n(count, init, step);
        },
        [&](Value *c) {
          Value *lin = b_.CreateAdd(row0, c);
          std::vector<Value *> idx = rank_ ? unravel(lin) : std::vector<Value *>{};
          auto coord = [&](int axis) {  // (the dense kernel has no coordinates; it is never planned)
            return axis >= 0 && axis < static_cast<int>(idx.size()) ? idx[static_cast<size_t>(axis)] : i64c(0);
          };
          Value *x = load(xdt, args_[0], offset_of(0, lin, idx));
          if (!is_complex_dtype(xdt)) x = cx().convert(x, xdt, cdt);
          Value *num = i64c(0), *den = i64c(1), *weight = f64c(1.0);
          for (int d = 0; d < D; ++d) {
            Value *nd = extra_[static_cast<size_t>(d)];
            nd = b_.CreateSelect(b_.CreateICmpSGT(nd, i64c(0)), nd, i64c(1));
            Value *k = coord(rank_ - 2 * D + d), *jd = coord(rank_ - D + d);
            Value *t = b_.CreateURem(b_.CreateMul(k, jd), nd);
            num = b_.CreateAdd(b_.CreateMul(num, nd), b_.CreateMul(t, den));
            den = b_.CreateMul(den, nd);
            num = b_.CreateSelect(b_.CreateICmpUGE(num, den), b_.CreateSub(num, den), num);
            if (n.op_id == PK_OP_FFT_C2R && d == D - 1) {
              // Entry m of the n / 2 + 1 stands for itself and, for 1 <= m <= n - S (S entries given), for its
              // conjugate at n - m, whose term has the same real part; entries at n and beyond are unused.
              Value *S = rank_ ? shape_[static_cast<size_t>(rank_ - 1)] : i64c(1);
              Value *twice = b_.CreateAnd(b_.CreateICmpSGE(jd, i64c(1)), b_.CreateICmpSLE(jd, b_.CreateSub(nd, S)));
              weight =
                  b_.CreateSelect(b_.CreateICmpSGE(jd, nd), f64c(0.0), b_.CreateSelect(twice, f64c(2.0), f64c(1.0)));
            }
          }
          Value *m4 = b_.CreateMul(num, i64c(4));
          Value *q = b_.CreateUDiv(b_.CreateAdd(m4, b_.CreateUDiv(den, i64c(2))), den);
          Value *rem = b_.CreateSub(m4, b_.CreateMul(q, den));
          Value *r = b_.CreateFDiv(b_.CreateSIToFP(rem, f64_), b_.CreateSIToFP(b_.CreateMul(den, i64c(2)), f64_));
          Value *s0, *c0;
          sincos_pi(r, s0, c0);
          Value *qm = b_.CreateAnd(q, i64c(3));
          auto quad = [&](Value *v0, Value *v1, Value *v2, Value *v3) {
            return b_.CreateSelect(b_.CreateICmpEQ(qm, i64c(0)), v0,
                                   b_.CreateSelect(b_.CreateICmpEQ(qm, i64c(1)), v1,
                                                   b_.CreateSelect(b_.CreateICmpEQ(qm, i64c(2)), v2, v3)));
          };
          Value *ns0 = b_.CreateFNeg(s0), *nc0 = b_.CreateFNeg(c0);
          Value *cs = quad(c0, ns0, nc0, s0), *sn = quad(s0, c0, ns0, nc0);
          if (!inverse) sn = b_.CreateFNeg(sn);
          Value *tw = b_.CreateInsertElement(llvm::PoisonValue::get(v2), b_.CreateFMul(cs, weight), uint64_t{0});
          tw = b_.CreateInsertElement(tw, b_.CreateFMul(sn, weight), uint64_t{1});
          return std::make_pair(x, tw);
        });
    if (!is_complex_dtype(ydt)) v = b_.CreateExtractElement(v, uint64_t{0});  // c2r: the real part
    store(ydt, v, args_[1], arg_offset(1, kRow, j, row0, i64c(0)));
    return;
  }
  if (is_complex_dtype(xdt)) {  // var, cumsum, cumprod, dot_general
    if (n.op_id == PK_OP_DOT_GENERAL) {
      // Both operands walk the same element space (see the real case below).
      Value *v = cx().dot(
          xdt, cols_,
          [&](Value *count, const std::vector<Value *> &init, const ComplexEmitter::Step &step) {
            return loop_n(count, init, step);
          },
          [&](Value *c) {
            Value *lin = b_.CreateAdd(row0, c);
            std::vector<Value *> idx = rank_ ? unravel(lin) : std::vector<Value *>{};
            return std::make_pair(load(xdt, args_[0], offset_of(0, lin, idx)),
                                  load(xdt, args_[1], offset_of(1, lin, idx)));
          });
      store(ydt, v, args_[2], arg_offset(2, kRow, j, row0, i64c(0)));
      return;
    }
    if (n.op_id == PK_OP_VAR) {
      Value *v = cx().variance(
          xdt, ydt, cols_, n.fill_value,
          [&](const std::vector<Value *> &init, const ComplexEmitter::Step &step) { return loop_cols(init, step); },
          x_at);
      store(ydt, v, args_[1], arg_offset(1, kRow, j, row0, i64c(0)));
      return;
    }
    loop_cols(cx().red_init(n.op_id), [&](Value *c, const std::vector<Value *> &a) {
      std::vector<Value *> acc = cx().red_step(n.op_id, a, x_at(c));
      store_at(1, ydt, cx().red_final(n.op_id, ydt, acc), c);
      return acc;
    });
    return;
  }
  switch (n.op_id) {
    case PK_OP_VAR: {
      std::vector<Value *> s = loop_cols({f64c(0), f64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
        Value *x = to_double(x_at(c));
        return std::vector<Value *>{b_.CreateFAdd(a[0], x), b_.CreateFAdd(a[1], b_.CreateFMul(x, f64c(0x1p-600)))};
      });
      Value *big = b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {s[0]}), f64c(inf));
      Value *scale = b_.CreateSelect(big, f64c(0x1p-600), f64c(1));
      Value *cnt = b_.CreateSIToFP(cols_, f64_);
      Value *mean = b_.CreateFDiv(b_.CreateSelect(big, s[1], s[0]), cnt);
      Value *resid = loop_cols({f64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
        return std::vector<Value *>{b_.CreateFAdd(a[0], b_.CreateFSub(b_.CreateFMul(to_double(x_at(c)), scale), mean))};
      })[0];
      mean = b_.CreateFAdd(mean, b_.CreateFDiv(resid, cnt));
      Value *ss = loop_cols({f64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
        Value *dev = b_.CreateFSub(b_.CreateFMul(to_double(x_at(c)), scale), mean);
        return std::vector<Value *>{b_.CreateFAdd(a[0], b_.CreateFMul(dev, dev))};
      })[0];
      Value *divisor = b_.CreateFSub(cnt, f64c(n.fill_value));
      Value *unscale = b_.CreateSelect(big, f64c(0x1p600), f64c(1));
      Value *v = b_.CreateFMul(b_.CreateFMul(b_.CreateFDiv(ss, divisor), unscale), unscale);
      v = b_.CreateSelect(b_.CreateFCmpOGT(divisor, f64c(0)), v, f64c(nan));
      store(ydt, from_double(v, ydt), args_[1], arg_offset(1, kRow, j, row0, i64c(0)));
      return;
    }
    case PK_OP_CUMSUM:
    case PK_OP_CUMPROD: {
      // The running sum (product) as the sum (prod) reduction accumulates it, stored at each element.
      Node red;
      red.op_id = n.op_id == PK_OP_CUMPROD ? PK_OP_PROD : PK_OP_SUM;
      loop_cols(red_init(red, xdt), [&](Value *c, const std::vector<Value *> &a) {
        std::vector<Value *> acc = red_step(red, xdt, a, x_at(c), c);  // integers wrap
        store_at(1, ydt, red_final(red, xdt, ydt, acc), c);
        return acc;
      });
      return;
    }
    case PK_OP_LOGCUMSUMEXP: {
      // log(e^acc + e^x) with the larger term factored out; -inf + -inf stays -inf, any +inf wins, NaN sticks.
      loop_cols({f64c(-inf)}, [&](Value *c, const std::vector<Value *> &a) {
        Value *x = to_double(x_at(c));
        Value *gt = b_.CreateFCmpOGT(a[0], x);
        Value *hi = b_.CreateSelect(gt, a[0], x), *lo = b_.CreateSelect(gt, x, a[0]);
        Value *acc = b_.CreateFAdd(hi, log1p_d(exp_d(b_.CreateFSub(lo, hi))));
        acc = b_.CreateSelect(b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {hi}), f64c(inf)), hi, acc);
        acc = b_.CreateSelect(b_.CreateFCmpUNO(a[0], x), f64c(nan), acc);
        store_at(1, ydt, from_double(acc, ydt), c);
        return std::vector<Value *>{acc};
      });
      return;
    }
    case PK_OP_CONVOLUTION:
    case PK_OP_DOT_GENERAL: {
      // Floats: each product is exact in f64 (f32 and narrower) or fused (f64) into an f64 sum rounded once;
      // integers multiply and add in their own width (wrapping, as the table says).
      // Convolution (always the strided kernel, see plan_is_dense): the element space is [N, G, O/G, out..., C/G,
      // k...] with nsp = round_mode spatial axes; a term whose input position out * stride + k * dilation - low
      // (extra[4i..4i+3] = stride, dilation, low, extent of axis i) falls outside the input is no term at all.
      const bool conv = n.op_id == PK_OP_CONVOLUTION;
      const int nsp = conv ? n.round_mode : 0;
      auto dot = [&](Value *count, Value *scale) {
        return loop_n(count, {fp ? f64c(0.0) : llvm::Constant::getNullValue(compute_type(xdt))},
                      [&](Value *c, const std::vector<Value *> &a) {
                        // One unravel serves both operands: they walk the same element space.
                        Value *lin = b_.CreateAdd(row0, c);
                        std::vector<Value *> idx = rank_ ? unravel(lin) : std::vector<Value *>{};
                        Value *inside = b_.getTrue();
                        // (A layout without those axes is never planned, see plan_is_dense; it would read 0.)
                        auto coord = [&](int axis) {
                          return axis < static_cast<int>(idx.size()) ? idx[static_cast<size_t>(axis)] : i64c(0);
                        };
                        for (int i = 0; i < nsp; ++i) {
                          Value *pos = b_.CreateSub(b_.CreateAdd(b_.CreateMul(coord(3 + i), extra_[4 * i]),
                                                                 b_.CreateMul(coord(4 + nsp + i), extra_[4 * i + 1])),
                                                    extra_[4 * i + 2]);
                          inside = b_.CreateAnd(inside, b_.CreateICmpULT(pos, extra_[4 * i + 3]));  // 0 <= pos < extent
                        }
                        Value *x = conv ? if_else(
                                              inside, [&]() { return load(xdt, args_[0], offset_of(0, lin, idx)); },
                                              [&]() { return llvm::Constant::getNullValue(compute_type(xdt)); })
                                        : load(xdt, args_[0], offset_of(0, lin, idx));
                        Value *y = load(xdt, args_[1], offset_of(1, lin, idx));
                        auto term = [&](Value *acc) {
                          return std::vector<Value *>{b_.CreateSelect(inside, acc, a[0])};
                        };
                        if (!fp) return term(b_.CreateAdd(a[0], b_.CreateMul(x, y)));
                        Value *xd = to_double(x), *yd = to_double(y);
                        if (scale == nullptr) return term(fma(xd, yd, a[0]));
                        // Scaled: finite factors only (inf * tiny must stay inf, not become inf * 0).
                        Value *both = b_.CreateAnd(b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {xd}), f64c(HUGE_VAL)),
                                                   b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {yd}), f64c(HUGE_VAL)));
                        return term(b_.CreateSelect(both, fma(b_.CreateFMul(xd, scale), b_.CreateFMul(yd, scale), a[0]),
                                                    b_.CreateFAdd(a[0], b_.CreateFMul(xd, yd))));
                      })[0];
      };
      Value *sum = dot(cols_, nullptr);
      if (xdt == PK_DTYPE_F64) {
        // f64 products (up to 2^2048) may overflow where the exact sum does not, or cancel as inf - inf: a
        // non-finite sum is redone with both factors scaled by 2^-550 and scaled back. A sum that overflowed has
        // terms near 2^1024, so what underflows in the second pass (2^26 absolute per term) is far below the
        // reduction bound. Infinite or NaN inputs give the same non-finite result either way.
        Value *finite = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {sum}), f64c(HUGE_VAL));
        Value *scaled = dot(b_.CreateSelect(finite, i64c(0), cols_), f64c(0x1p-550));
        sum = b_.CreateSelect(finite, sum, b_.CreateFMul(b_.CreateFMul(scaled, f64c(0x1p550)), f64c(0x1p550)));
      }
      store(ydt, fp ? from_double(sum, ydt) : sum, args_[2], arg_offset(2, kRow, j, row0, i64c(0)));
      return;
    }
    case PK_OP_SORT:
    case PK_OP_TOPK:
    case PK_OP_SEARCHSORTED: {
      // The sort order: NaN above +inf, -0 equal to +0 (so they keep their input order), integers exactly.
      auto less = [&](Value *a, Value *c) -> Value * {
        if (fp)
          return b_.CreateAnd(b_.CreateFCmpORD(a, a), b_.CreateOr(b_.CreateFCmpUNO(c, c), b_.CreateFCmpOLT(a, c)));
        return uns ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c);
      };
      const bool flag = n.round_mode != 0;  // sort: descending; topk: largest; searchsorted: right
      // The work item's own value: searchsorted's value (input 1), or the element being placed (input 0).
      const int own = n.op_id == PK_OP_SEARCHSORTED ? 1 : 0;
      Value *v = load(xdt, args_[own], arg_offset(own, kRow, j, row0, i64c(0)));
      if (n.op_id == PK_OP_SEARCHSORTED) {
        // The count of sequence elements below the value (left) or not above it (right).
        Value *count = loop_cols({i64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
          Value *e = load(xdt, args_[0], arg_offset(0, kElem, j, row0, c));
          Value *in = flag ? b_.CreateNot(less(v, e)) : less(e, v);
          return std::vector<Value *>{b_.CreateAdd(a[0], b_.CreateZExt(in, i64_))};
        })[0];
        store(PK_DTYPE_I64, count, args_[2], arg_offset(2, kRow, j, row0, i64c(0)));
        return;
      }
      // The element at position i of its line goes after every element that precedes it in the (stable) order.
      Value *i = b_.CreateURem(j, cols_);
      Value *rank = loop_cols({i64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
        Value *e = load(xdt, args_[1], arg_offset(1, kElem, j, row0, c));
        Value *e_first = flag ? less(v, e) : less(e, v);
        Value *tie = b_.CreateAnd(b_.CreateNot(b_.CreateOr(less(v, e), less(e, v))), b_.CreateICmpULT(c, i));
        return std::vector<Value *>{b_.CreateAdd(a[0], b_.CreateZExt(b_.CreateOr(e_first, tie), i64_))};
      })[0];
      llvm::Function *f = b_.GetInsertBlock()->getParent();
      auto *put = llvm::BasicBlock::Create(ctx_, "put", f), *done = llvm::BasicBlock::Create(ctx_, "put_done", f);
      b_.CreateCondBr(b_.CreateICmpSLT(rank, extra_[0]), put, done);
      b_.SetInsertPoint(put);
      store(ydt, v, args_[2], arg_offset(2, kElem, j, row0, rank));
      store(PK_DTYPE_I64, i, args_[3], arg_offset(3, kElem, j, row0, rank));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      return;
    }
    case PK_OP_SCATTER:
    case PK_OP_SCATTER_REDUCE:
    case PK_OP_INDEX_PUT: {
      // This item's element of a (and of the output). Index entries that land on it are walked in the oracle's
      // order (row-major over the index): the last one wins, or all are combined.
      const bool put = n.op_id == PK_OP_INDEX_PUT;
      const int out_arg = nargs_ - 1, data_arg = put ? 1 : 2;
      Value *self = x_at_row(0);
      // Where the item is: scatter, its position t along dim (the last leading axis); index_put, its first k
      // coordinates (none is above 0 when the dense kernel runs: every axis of a then has extent 1).
      std::vector<Value *> want;
      if (put) {
        std::vector<Value *> idx = rank_ ? unravel(row0) : std::vector<Value *>{};
        for (int k = 2; k < out_arg; ++k) want.push_back(rank_ ? idx[static_cast<size_t>(k - 2)] : i64c(0));
      } else {
        want.push_back(b_.CreateURem(j, extra_[0]));
      }
      auto lands = [&](Value *c) {
        Value *all = b_.getTrue();
        for (size_t k = 0; k < want.size(); ++k) {
          const int arg = put ? static_cast<int>(k) + 2 : 1;
          const int32_t idt = r_.dtypes[r_.inputs[static_cast<size_t>(arg)]];
          Value *ix = load(idt, args_[arg], arg_offset(arg, kElem, j, row0, c));
          if (idt != PK_DTYPE_I64) ix = b_.CreateSExt(ix, i64_);
          all = b_.CreateAnd(all, b_.CreateICmpEQ(ix, want[k]));  // out-of-range indices never equal
        }
        return all;
      };
      auto value_at = [&](Value *c) { return load(xdt, args_[data_arg], arg_offset(data_arg, kElem, j, row0, c)); };
      const bool combine = n.op_id == PK_OP_SCATTER_REDUCE || (put && n.round_mode != 0);
      Value *result;
      if (!combine) {
        result = loop_cols({self}, [&](Value *c, const std::vector<Value *> &a) {
          Value *hit = lands(c);
          // The load sits behind the select's condition only logically: value_at reads a valid element either way.
          return std::vector<Value *>{b_.CreateSelect(hit, value_at(c), a[0])};
        })[0];
      } else {
        // The reduction's own accumulator (f64 for float sums and products); the first term is taken as is, so
        // a lone -0 stays -0.
        Node red;
        const int32_t kind = put ? PK_REDUCE_KIND_SUM : n.round_mode % kIncludeSelf;
        red.op_id = kind == PK_REDUCE_KIND_SUM    ? PK_OP_SUM
                    : kind == PK_REDUCE_KIND_PROD ? PK_OP_PROD
                    : kind == PK_REDUCE_KIND_AMAX ? PK_OP_AMAX
                                                  : PK_OP_AMIN;
        const bool with_self = put || (n.round_mode & kIncludeSelf) != 0;
        std::vector<Value *> acc0 = with_self ? red_first(red, xdt, self, i64c(0)) : red_init(red, xdt);
        const size_t k = acc0.size();
        acc0.push_back(b_.getInt1(with_self));  // whether a term has been taken
        std::vector<Value *> acc = loop_cols(acc0, [&](Value *c, const std::vector<Value *> &a) {
          Value *hit = lands(c);
          Value *x = value_at(c);
          const std::vector<Value *> st(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k));
          const std::vector<Value *> stepped = red_step(red, xdt, st, x, c), firsted = red_first(red, xdt, x, c);
          std::vector<Value *> out;
          for (size_t i = 0; i < k; ++i)
            out.push_back(b_.CreateSelect(hit, b_.CreateSelect(a[k], stepped[i], firsted[i]), st[i]));
          out.push_back(b_.CreateOr(a[k], hit));
          return out;
        });
        const std::vector<Value *> fin(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(k));
        result = b_.CreateSelect(acc[k], red_final(red, xdt, ydt, fin), self);
      }
      store(ydt, result, args_[out_arg], arg_offset(out_arg, kRow, j, row0, i64c(0)));
      return;
    }
    default: {  // cummax, cummin
      // >= (<=) moves the index to the last occurrence of the extremum; a NaN is the extremum once seen (a later
      // NaN moves the index, a number never replaces it).
      const bool mx = n.op_id == PK_OP_CUMMAX;
      llvm::Type *ct = compute_type(xdt);
      loop_cols({llvm::Constant::getNullValue(ct), i64c(0)}, [&](Value *c, const std::vector<Value *> &a) {
        Value *x = x_at(c);
        Value *take;
        if (fp) {
          Value *cmp = mx ? b_.CreateFCmpOGE(x, a[0]) : b_.CreateFCmpOLE(x, a[0]);
          take = b_.CreateOr(b_.CreateFCmpUNO(x, x), b_.CreateAnd(b_.CreateFCmpORD(a[0], a[0]), cmp));
        } else {
          take = mx ? (uns ? b_.CreateICmpUGE(x, a[0]) : b_.CreateICmpSGE(x, a[0]))
                    : (uns ? b_.CreateICmpULE(x, a[0]) : b_.CreateICmpSLE(x, a[0]));
        }
        take = b_.CreateOr(take, b_.CreateICmpEQ(c, i64c(0)));
        Value *m = b_.CreateSelect(take, x, a[0]), *mi = b_.CreateSelect(take, c, a[1]);
        store_at(1, ydt, m, c);
        store_at(2, PK_DTYPE_I64, mi, c);
        return std::vector<Value *>{m, mi};
      });
      return;
    }
  }
}

std::vector<Value *> Emitter::loop_n(Value *count, const std::vector<Value *> &init, const Step &step,
                                     const char *name) {
  return loop(count, init, step, name, false);
}

std::vector<Value *> Emitter::loop_until(Value *count, const std::vector<Value *> &init, const Step &step,
                                         const char *name) {
  return loop(count, init, step, name, true);
}

std::vector<Value *> Emitter::loop(Value *count, const std::vector<Value *> &init, const Step &step, const char *name,
                                   bool early_exit) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  auto *pre = b_.GetInsertBlock();
  auto *body = llvm::BasicBlock::Create(ctx_, name, f);
  auto *done = llvm::BasicBlock::Create(ctx_, std::string(name) + "_done", f);
  b_.CreateCondBr(b_.CreateICmpSGT(count, i64c(0)), body, done);
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
  Value *stop = nullptr;
  if (early_exit) {
    stop = next.back();
    next.pop_back();
  }
  Value *c1 = b_.CreateAdd(c, i64c(1));
  auto *latch = b_.GetInsertBlock();
  c->addIncoming(c1, latch);
  for (size_t k = 0; k < acc.size(); ++k) acc[k]->addIncoming(next[k], latch);
  Value *more = b_.CreateICmpSLT(c1, count);
  if (stop != nullptr) more = b_.CreateAnd(more, b_.CreateNot(stop));
  b_.CreateCondBr(more, body, done);
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
  if (is_complex_dtype(xdt)) return cx().red_init(n.op_id);
  const bool fp = is_fp(xdt);
  llvm::Type *ct = compute_type(xdt);
  switch (n.op_id) {
    case PK_OP_SUM:
      if (xdt == PK_DTYPE_F64) return fsum_init();
      return {fp ? f64c(0.0) : llvm::ConstantInt::get(ct, 0)};
    case PK_OP_PROD:
      if (fp) return fprod_init();
      return {llvm::ConstantInt::get(ct, 1)};
    case PK_OP_AMAX:
    case PK_OP_AMIN: {
      const bool mx = n.op_id == PK_OP_AMAX;
      if (xdt == PK_DTYPE_F8E4M3FN) return {fpc(ct, mx ? -448.0 : 448.0)};  // no infinities
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
  if (is_complex_dtype(xdt)) return cx().red_step(n.op_id, a, x);
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
      if (xdt == PK_DTYPE_F64) return fsum_step(a, x);
      return {fp ? b_.CreateFAdd(a[0], to_double(x)) : b_.CreateAdd(a[0], x)};
    case PK_OP_PROD:
      if (fp) return fprod_step(a, to_double(x));
      return {b_.CreateMul(a[0], x)};
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
  if (is_complex_dtype(xdt)) return cx().red_final(n.op_id, ydt, a);
  if (n.op_id == PK_OP_SUM && xdt == PK_DTYPE_F64) return from_double(fsum_final(a), ydt);
  if (n.op_id == PK_OP_PROD && is_fp(xdt)) return from_double(fprod_final(a), ydt);
  if (n.op_id == PK_OP_SUM && is_fp(xdt)) return from_double(a[0], ydt);
  return a[0];
}

std::vector<Value *> Emitter::red_first(const Node &n, int32_t xdt, Value *x, Value *c) {
  if (n.op_id == PK_OP_SUM && xdt == PK_DTYPE_F64) {
    Value *fin = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {x}), f64c(HUGE_VAL));
    return {b_.CreateSelect(fin, x, f64c(0.0)), b_.CreateSelect(fin, b_.CreateFMul(x, f64c(0x1p-600)), f64c(0.0)),
            b_.CreateSelect(fin, f64c(0.0), x)};
  }
  if (n.op_id == PK_OP_PROD && is_fp(xdt)) return fprod_step(fprod_init(), to_double(x));  // 1 * x is x exactly
  if (n.op_id == PK_OP_SUM && is_fp(xdt)) return {to_double(x)};
  return red_step(n, xdt, red_init(n, xdt), x, c);
}

std::vector<Value *> Emitter::fsum_init() {
  return {f64c(0.0), f64c(0.0), f64c(0.0)};
}

std::vector<Value *> Emitter::fsum_step(const std::vector<Value *> &a, Value *x) {
  Value *fin = b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs, {x}), f64c(HUGE_VAL));
  return {b_.CreateFAdd(a[0], b_.CreateSelect(fin, x, f64c(0.0))),
          b_.CreateFAdd(a[1], b_.CreateSelect(fin, b_.CreateFMul(x, f64c(0x1p-600)), f64c(0.0))),
          b_.CreateSelect(fin, a[2], b_.CreateFAdd(a[2], x))};
}

Value *Emitter::fsum_final(const std::vector<Value *> &a) {
  Value *over = b_.CreateFCmpOEQ(intr(llvm::Intrinsic::fabs, {a[0]}), f64c(HUGE_VAL));
  Value *finite = b_.CreateSelect(over, b_.CreateFMul(a[1], f64c(0x1p600)), a[0]);
  return b_.CreateSelect(b_.CreateFCmpUNE(a[2], f64c(0.0)), a[2], finite);  // an infinity or NaN seen
}

std::vector<Value *> Emitter::fprod_init() {
  return {f64c(0.5), i64c(1), b_.getFalse(), b_.getInt32(0)};
}

Value *Emitter::pow2_d(Value *e) {
  return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, i64c(1023)), i64c(52)), f64_);
}

std::vector<Value *> Emitter::fprod_step(const std::vector<Value *> &a, Value *x) {
  Value *ax = intr(llvm::Intrinsic::fabs, {x});
  Value *is_nan = b_.CreateFCmpUNO(x, x), *is_zero = b_.CreateFCmpOEQ(ax, f64c(0.0));
  Value *is_inf = b_.CreateFCmpOEQ(ax, f64c(HUGE_VAL));
  // |x| = mx 2^ex with mx in [0.5, 1) (subnormals scaled by 2^64 first), for a finite nonzero x.
  Value *sub = b_.CreateFCmpOLT(ax, f64c(0x1p-1022));
  Value *xs = b_.CreateSelect(sub, b_.CreateFMul(ax, f64c(0x1p64)), ax);
  Value *bits = b_.CreateBitCast(xs, i64_);
  Value *ex = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, i64c(52)), i64c(0x7ff)), i64c(1022));
  ex = b_.CreateSub(ex, b_.CreateSelect(sub, i64c(64), i64c(0)));
  Value *mx =
      b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, i64c(0x000fffffffffffffLL)), i64c(0x3fe0000000000000LL)), f64_);
  Value *m = b_.CreateFMul(a[0], mx);  // in [0.25, 1): one rounding
  Value *low = b_.CreateFCmpOLT(m, f64c(0.5));
  m = b_.CreateSelect(low, b_.CreateFMul(m, f64c(2.0)), m);
  Value *e = b_.CreateSub(b_.CreateAdd(a[1], ex), b_.CreateSelect(low, i64c(1), i64c(0)));
  // Long double's range: beyond it the reference's product is infinite (zero).
  Value *kind = a[3];
  Value *finite_x = b_.CreateNot(b_.CreateOr(is_nan, b_.CreateOr(is_zero, is_inf)));
  Value *fin = b_.CreateICmpEQ(kind, b_.getInt32(0));
  Value *upd = b_.CreateAnd(fin, finite_x);
  Value *nk = kind;
  nk = b_.CreateSelect(b_.CreateAnd(upd, b_.CreateICmpSGT(e, i64c(16384))), b_.getInt32(2), nk);
  nk = b_.CreateSelect(b_.CreateAnd(upd, b_.CreateICmpSLT(e, i64c(-16445))), b_.getInt32(1), nk);
  // Zero and infinity: finite -> that kind; zero * inf and inf * zero -> NaN; NaN sticks.
  Value *zk = b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(2)), b_.getInt32(3),
                              b_.CreateSelect(fin, b_.getInt32(1), kind));
  Value *ik = b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(1)), b_.getInt32(3),
                              b_.CreateSelect(fin, b_.getInt32(2), kind));
  nk = b_.CreateSelect(is_zero, zk, nk);
  nk = b_.CreateSelect(is_inf, ik, nk);
  nk = b_.CreateSelect(is_nan, b_.getInt32(3), nk);
  Value *sign = b_.CreateXor(a[2], b_.CreateICmpSLT(b_.CreateBitCast(x, i64_), i64c(0)));
  return {b_.CreateSelect(upd, m, a[0]), b_.CreateSelect(upd, e, a[1]), sign, nk};
}

Value *Emitter::fprod_final(const std::vector<Value *> &a) {
  // 2^e as two factors (each a normal power of two): one rounding, subnormal results included.
  Value *e = b_.CreateSelect(b_.CreateICmpSGT(a[1], i64c(1100)), i64c(1100), a[1]);
  e = b_.CreateSelect(b_.CreateICmpSLT(e, i64c(-1100)), i64c(-1100), e);
  Value *e1 = b_.CreateSDiv(e, i64c(2)), *e2 = b_.CreateSub(e, e1);
  Value *mag = b_.CreateFMul(b_.CreateFMul(a[0], pow2_d(e1)), pow2_d(e2));
  Value *kind = a[3];
  mag = b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(1)), f64c(0.0), mag);
  mag = b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(2)), f64c(HUGE_VAL), mag);
  Value *v = b_.CreateSelect(a[2], b_.CreateFNeg(mag), mag);
  return b_.CreateSelect(b_.CreateICmpEQ(kind, b_.getInt32(3)), f64c(std::nan("")), v);
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
    if (is_line_op(r_.nodes[0].op_id))
      build_line(j);
    else
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

void Emitter::build_cpu_entry(llvm::Function *item, const std::string &name, bool streaming) {
  // void entry(void **params, i64 begin, i64 end): plain loops the vectorizer can widen.
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i64_, i64_}, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  Value *params = f->getArg(0), *begin = f->getArg(1), *end = f->getArg(2);
  auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  auto *exit = llvm::BasicBlock::Create(ctx_, "exit", f);
  b_.SetInsertPoint(entry);
  std::vector<Value *> p = load_params(b_, params, nargs_, nscalars_);
  // Items [lo, hi) as one loop, entered from the current block.
  auto items = [&](Value *lo, Value *hi, llvm::BasicBlock *next, const char *label) {
    auto *loop = llvm::BasicBlock::Create(ctx_, label, f);
    llvm::BasicBlock *from = b_.GetInsertBlock();
    b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), loop, next);
    b_.SetInsertPoint(loop);
    auto *j = b_.CreatePHI(i64_, 2);
    j->addIncoming(lo, from);
    std::vector<Value *> args = p;
    args.push_back(j);
    b_.CreateCall(item, args);
    Value *jn = b_.CreateAdd(j, i64c(1));
    j->addIncoming(jn, loop);
    b_.CreateCondBr(b_.CreateICmpSLT(jn, hi), loop, next);
  };
  if (!streaming || r_.reduces() || r_.outputs.empty()) {
    items(begin, end, exit, "items");
  } else {
    // Non-temporal vector stores need aligned addresses: peel items until the first output is 64-byte aligned
    // (a cache line, which also covers 32-byte AVX stores), tell the optimizer so, then the main loop. An output
    // not aligned to its own element size cannot get there: it takes the plain loop.
    const uint32_t out0 = r_.outputs[0];
    const int64_t es = static_cast<int64_t>(pk::meta::dtype_size(r_.dtypes[out0]));
    Value *out = p[r_.inputs.size()];
    Value *addr = b_.CreateAdd(b_.CreatePtrToInt(out, i64_), b_.CreateMul(begin, i64c(es)));
    Value *elem_aligned = b_.CreateICmpEQ(b_.CreateAnd(addr, i64c(es - 1)), i64c(0));
    Value *to_line = b_.CreateAnd(b_.CreateSub(i64c(0), addr), i64c(63));
    Value *peel_end = b_.CreateAdd(begin, b_.CreateUDiv(to_line, i64c(es)));
    peel_end = b_.CreateSelect(b_.CreateICmpSLT(peel_end, end), peel_end, end);
    auto *peel = llvm::BasicBlock::Create(ctx_, "peel", f);
    auto *plain = llvm::BasicBlock::Create(ctx_, "plain", f);
    auto *aligned = llvm::BasicBlock::Create(ctx_, "aligned", f);
    auto *main = llvm::BasicBlock::Create(ctx_, "main", f);
    b_.CreateCondBr(elem_aligned, peel, plain);
    b_.SetInsertPoint(plain);
    items(begin, end, exit, "items");
    b_.SetInsertPoint(peel);
    items(begin, peel_end, aligned, "peeled_items");
    b_.SetInsertPoint(aligned);
    b_.CreateCondBr(b_.CreateICmpSLT(peel_end, end), main, exit);
    b_.SetInsertPoint(main);
    // Stated on the output pointer itself (its element peel_end is aligned): the alignment pass rewrites the
    // accesses derived from the pointer an assumption names, and the loop's stores derive from `out`.
    b_.CreateAlignmentAssumption(m_.getDataLayout(), out, 64, b_.CreateMul(peel_end, i64c(-es)));
    items(peel_end, end, exit, "aligned_items");
  }
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
    case Target::cpu_streaming:
      e.build_cpu_entry(item, entry, target == Target::cpu_streaming);
      break;
  }
  return m;
}

}  // namespace pk::codegen::detail
