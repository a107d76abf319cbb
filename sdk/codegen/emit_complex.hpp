// emit_complex.hpp — internal to primkit_codegen: the IR of complex values (c64, c128). A complex value is a
// <2 x f32> or <2 x f64> vector (real part first, as stored), so it flows through the emitter's nodes, loads,
// stores and selects like any other value. c64 values are computed in f64 and rounded once. The arithmetic the op
// table contracts correctly rounded (abs, mul, div, reciprocal, sqrt), the elementary functions and pow are calls to
// the device math (sdk/devmath/complex.h and cpow.h), shared with the CPU and OpenCL backends.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <llvm/IR/IRBuilder.h>

namespace pk::codegen::detail {

bool is_complex_dtype(int32_t d);

// The emitter's real f64 functions that the complex ones are built on (one implementation of each).
class RealMath {
 public:
  virtual llvm::Value *exp(llvm::Value *x) = 0;
  virtual llvm::Value *sin(llvm::Value *x) = 0;
  virtual llvm::Value *cos(llvm::Value *x) = 0;
  virtual llvm::Value *atan2(llvm::Value *y, llvm::Value *x) = 0;
  // A real (f64-valued) function of the device math: name(args...).
  virtual llvm::Value *devmath(const char *name, llvm::ArrayRef<llvm::Value *> args) = 0;
  // A complex function of the device math (sdk/devmath/complex.h): name(args..., double out[2]) -> void, the
  // result's real and imaginary parts (f64).
  virtual void devmath_complex(const char *name, llvm::ArrayRef<llvm::Value *> args, llvm::Value *&re,
                               llvm::Value *&im) = 0;
  // The same with `n` results: name(args..., double out[n]) -> void.
  virtual std::vector<llvm::Value *> devmath_parts(const char *name, llvm::ArrayRef<llvm::Value *> args,
                                                   unsigned n) = 0;
  // Real dtypes only: the emitter's convert_element_type between compute-type values.
  virtual llvm::Value *convert_real(llvm::Value *v, int32_t from, int32_t to) = 0;

 protected:
  ~RealMath() = default;
};

class ComplexEmitter {
 public:
  ComplexEmitter(llvm::IRBuilder<> &b, RealMath &math);

  // Whether the node is the complex emitter's: a complex operand or result, or angle of a real value.
  static bool handles(uint32_t op, const std::vector<int32_t> &in_dt, int32_t out_dt);
  llvm::Type *vector_type(int32_t d) const;  // <2 x f32> for c64, <2 x f64> for c128
  llvm::Value *load(int32_t d, llvm::Value *base, llvm::Value *offset);
  void store(int32_t d, llvm::Value *v, llvm::Value *base, llvm::Value *offset);
  llvm::Value *node(uint32_t op, const std::vector<llvm::Value *> &in, const std::vector<int32_t> &in_dt,
                    int32_t out_dt, double fill_value);
  llvm::Value *convert(llvm::Value *v, int32_t from, int32_t to);
  llvm::Value *truth(llvm::Value *v);

  // Reductions (sum, prod, any, all) and the scans cumsum/cumprod of complex elements, accumulated in f64 by the
  // device math's steps (pk_dm_csum_*, pk_dm_cprod_*: sdk/devmath/complex.h). Sums keep per-part flags of the
  // infinities and NaNs seen (so that finite terms that overflow still meet a later infinity as exact arithmetic
  // does) and a second sum scaled by 2^-600 (used where the first overflows); products a normalized z 2^e.
  std::vector<llvm::Value *> red_init(uint32_t op);
  std::vector<llvm::Value *> red_step(uint32_t op, const std::vector<llvm::Value *> &acc, llvm::Value *x);
  llvm::Value *red_final(uint32_t op, int32_t out_dt, const std::vector<llvm::Value *> &acc);

  // var of a complex line: the mean of each part, corrected by the mean of the residuals, then the sum of
  // |x - mean|^2 (f64; a sum that overflows is redone on values scaled by 2^-600). `loop` runs a loop over
  // the line's elements, `x_at` loads element c.
  using Step = std::function<std::vector<llvm::Value *>(llvm::Value *c, const std::vector<llvm::Value *> &acc)>;
  using Loop = std::function<std::vector<llvm::Value *>(const std::vector<llvm::Value *> &init, const Step &step)>;
  llvm::Value *variance(int32_t xdt, int32_t ydt, llvm::Value *count, double correction, const Loop &loop,
                        const std::function<llvm::Value *(llvm::Value *c)> &x_at);

  // dot_general of complex lines: the sum over `count` terms of x_c y_c, where `terms_at(c)` loads both factors
  // and `loop(n, init, step)` runs a loop of n iterations. c64: every product exact in f64, the sum in f64,
  // rounded once. c128: each part as Ogita, Rump and Oishi's Dot2 (error-free products and sums, the errors summed
  // apart: as if accumulated in double-double), redone with both factors scaled by 2^-550 where a part is not
  // finite (products beyond f64's range). Terms with an infinite or NaN part are Annex G products summed apart;
  // they decide a part where their sum is not finite, as the exact sum does.
  using CountLoop = std::function<std::vector<llvm::Value *>(llvm::Value *count, const std::vector<llvm::Value *> &init,
                                                             const Step &step)>;
  using TermsAt = std::function<std::pair<llvm::Value *, llvm::Value *>(llvm::Value *c)>;
  llvm::Value *dot(int32_t dt, llvm::Value *count, const CountLoop &loop, const TermsAt &terms_at);

 private:
  using Value = llvm::Value;
  struct DD {
    Value *hi, *lo;
  };
  Value *d(double v);
  Value *re(Value *z);
  Value *im(Value *z);
  Value *pair(Value *r, Value *i);
  Value *fabs(Value *x);
  Value *sel(Value *c, Value *a, Value *x) { return b_.CreateSelect(c, a, x); }
  Value *is_nan(Value *x) { return b_.CreateFCmpUNO(x, x); }
  Value *is_inf(Value *x);
  Value *is_finite(Value *x);
  Value *fma(Value *a, Value *x, Value *c);
  Value *widen(Value *z);                 // complex -> (f64, f64) pair vector
  Value *round_to(Value *z2, int32_t d);  // (f64, f64) -> d's vector type, each part rounded once

  // Error-free transformations (the c128 dot product's Dot2).
  DD two_sum(Value *a, Value *x);
  DD two_prod(Value *a, Value *x);

  // C11 Annex G product of (f64, f64) parts (the device math's pk_dm_cmul_g): the plain product, infinities
  // recovered where both parts are NaN.
  Value *mul_g(Value *a, Value *x, Value *c, Value *y);
  Value *devmath_cx(const char *name, Value *z);  // the device math's complex function `name` of a pair vector
  // The device math's `name` (pk_dm_cmul, pk_dm_cdiv, pk_dm_cpow) of two values of dtype d: c64 widened exactly,
  // each part rounded once to float by the device math (its f32 argument), so that the narrowing is exact.
  Value *devmath_arith(const char *name, Value *u, Value *v, int32_t d);

  llvm::IRBuilder<> &b_;
  RealMath &m_;
  llvm::Type *f32_, *f64_;
};

}  // namespace pk::codegen::detail
