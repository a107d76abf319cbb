// emit_internal.hpp — internal to the emitter (emit*.cpp): the class that builds a kernel's IR, split over
// emit.cpp (memory, conversions, the entries of each target), emit_math.cpp (f64 math), emit_special.cpp (the
// special functions), emit_elementwise.cpp (the nodes of elementwise regions), emit_line.cpp (line ops) and
// emit_rows.cpp (row programs and reductions). emit.cpp states the numerics they follow.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "emit.hpp"
#include "emit_complex.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

namespace pk::codegen::detail {

using llvm::Value;

inline bool is_fp8(int32_t d) {
  return d == PK_DTYPE_F8E4M3FN || d == PK_DTYPE_F8E5M2;
}
inline bool is_fp(int32_t d) {
  return d == PK_DTYPE_F16 || d == PK_DTYPE_BF16 || d == PK_DTYPE_F32 || d == PK_DTYPE_F64 || is_fp8(d);
}
inline bool is_unsigned(int32_t d) {
  return d == PK_DTYPE_U8 || d == PK_DTYPE_BOOL;
}

// Constants of the f64 math (emit_math.cpp's tables stay there); the special functions use pi too.
namespace consts {
constexpr double kInvLn2 = 1.4426950408889634074;
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3fe62e42fee00000: k * kLn2Hi is exact for |k| < 2^20
constexpr double kLn2Lo = 1.90821492927058770002e-10;  // 0x3dea39ef35793c76
constexpr double kLog2eHi = 1.4426950408889634;
constexpr double kLog2eLo = 2.0355273740931033e-17;
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
}  // namespace consts

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
    uniform_ = spec.rank == 0 ? spec.uniform : 0;
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
  // Links the device math the kernel calls (sdk/devmath, emit_devmath.cpp) into the module: after the entries.
  void link_devmath();

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
  Value *erfcx_pos(Value *x);  // erfcx(x) for x >= 0.5 (inf included): erfc's building block
  // The device math (sdk/devmath): a call to its function pk_dm_<name>, which link_devmath links in.
  Value *devmath(const char *name, llvm::ArrayRef<Value *> args);
  // A complex function of the device math: name(args..., double out[2]), its parts read back from the array.
  void devmath_complex(const char *name, llvm::ArrayRef<Value *> args, Value *&re, Value *&im);
  // The same with n results: name(args..., double out[n]).
  std::vector<Value *> devmath_parts(const char *name, llvm::ArrayRef<Value *> args, unsigned n);
  // The IR of a primitive the device math leaves to the emitter (port.h), as the body of its declaration f;
  // nullptr for a name it does not know.
  Value *devmath_primitive(llvm::StringRef name, llvm::Function &f);
  Value *erfcx_d(Value *x) { return devmath("pk_dm_erfcx", {x}); }
  Value *erf_inv_d(Value *y) { return devmath("pk_dm_erf_inv", {y}); }
  Value *ndtri_d(Value *p) { return devmath("pk_dm_ndtri", {p}); }
  void sincos_pi(Value *r, Value *&s, Value *&c);  // sin(pi r), cos(pi r) for |r| <= 1/2
  Value *lgamma_d(Value *x) { return devmath("pk_dm_lgamma", {x}); }
  Value *digamma_d(Value *x) { return devmath("pk_dm_digamma", {x}); }
  Value *nextafter(Value *x, Value *y, int32_t d);
  Value *gcd(Value *x, Value *y, bool uns);
  Value *bessel_i_d(int order, Value *x, bool scaled) {
    return devmath("pk_dm_bessel_i", {b_.getInt32(order), x, b_.getInt32(scaled ? 1 : 0)});
  }
  Value *bessel_j_d(int order, Value *x) { return devmath("pk_dm_bessel_j", {b_.getInt32(order), x}); }
  Value *spherical_j0_d(Value *x) { return devmath("pk_dm_spherical_j0", {x}); }
  // One value from two branches of real control flow (their loops run only where they converge).
  Value *if_else(Value *cond, const std::function<Value *()> &then_fn, const std::function<Value *()> &else_fn);
  Value *igamma_d(Value *a, Value *x) { return devmath("pk_dm_igamma", {a, x, b_.getInt32(0)}); }
  Value *igammac_d(Value *a, Value *x) { return devmath("pk_dm_igamma", {a, x, b_.getInt32(1)}); }
  Value *zeta_d(Value *s, Value *q) { return devmath("pk_dm_zeta", {s, q}); }

  Value *fmaximum(Value *a, Value *c, bool is_max);
  Value *node(const Node &n, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt, int32_t out_dt);
  // node's ops by kind; each returns nullptr for the ops that are not its own. t: the (first) operand's dtype.
  Value *math_node(const Node &n, const std::vector<Value *> &in, int32_t t);  // the functions evaluated in f64
  Value *unary_node(const Node &n, const std::vector<Value *> &in, int32_t t, int32_t out_dt);
  // Binary ops, and the ternary where and fma.
  Value *binary_node(const Node &n, const std::vector<Value *> &in, const std::vector<int32_t> &in_dt, int32_t t);
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
  // The line of work item j: its node, the dtypes of its input and output, and where its row starts.
  struct Line {
    const Node &n;
    int32_t xdt, ydt;
    bool fp, uns;  // of xdt
    Value *j, *row0;
  };
  Value *line_x(const Line &l, Value *c);     // element c of the line (argument 0)
  Value *line_x_row(const Line &l, int arg);  // argument arg's row value, of the input's dtype
  void line_store(const Line &l, int arg, int32_t d, Value *v, Value *c);  // element c of argument arg
  // build_line's programs, one per op family.
  void build_fft_line(const Line &l);
  void build_complex_line(const Line &l);  // var, cumsum, cumprod, dot_general of complex elements
  void build_var_line(const Line &l);
  void build_cumsum_line(const Line &l);  // cumsum, cumprod
  void build_logcumsumexp_line(const Line &l);
  void build_dot_line(const Line &l);      // dot_general, convolution
  void build_order_line(const Line &l);    // sort, topk, searchsorted
  void build_scatter_line(const Line &l);  // scatter, scatter_reduce, index_put
  void build_cumext_line(const Line &l);   // cummax, cummin
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
  uint64_t uniform_ = 0;  // KernelSpec::uniform of a dense kernel
  bool is_uniform(int arg) const { return arg >= 0 && arg < 64 && ((uniform_ >> arg) & 1) != 0; }
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
  Value *sin(Value *x) override { return e_.trig_d(x, PK_OP_SIN); }
  Value *cos(Value *x) override { return e_.trig_d(x, PK_OP_COS); }
  Value *atan2(Value *y, Value *x) override { return e_.atan2_d(y, x); }
  Value *devmath(const char *name, llvm::ArrayRef<Value *> args) override { return e_.devmath(name, args); }
  void devmath_complex(const char *name, llvm::ArrayRef<Value *> args, Value *&re, Value *&im) override {
    e_.devmath_complex(name, args, re, im);
  }
  std::vector<Value *> devmath_parts(const char *name, llvm::ArrayRef<Value *> args, unsigned n) override {
    return e_.devmath_parts(name, args, n);
  }
  Value *convert_real(Value *v, int32_t from, int32_t to) override { return e_.convert(v, from, to); }

 private:
  Emitter &e_;
};

}  // namespace pk::codegen::detail
