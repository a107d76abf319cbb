// cl_codegen.cpp — OpenCL C generation. Every value a generated kernel computes with lives in its dtype's
// compute type (float for bf16 and the fp8 formats, the dtype itself otherwise); loads decode the storage and
// stores encode it with one round-to-nearest-even. The op semantics are those of docs/ops.md (integer wrap,
// x / 0 = 0 for integers, NaN propagation of maximum/minimum, saturating conversions ...).
#include "cl_codegen.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

#include "cl_codegen_internal.hpp"
#include "cl_special.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

const ClType &cl_type(int32_t dt) {
  static const ClType kBool{"uchar", "uchar", "uchar", 8, false, false, false, true};
  static const ClType kU8{"uchar", "uchar", "uchar", 8, false, false, false, false};
  static const ClType kI8{"char", "char", "uchar", 8, false, false, true, false};
  static const ClType kI16{"short", "short", "ushort", 16, false, false, true, false};
  static const ClType kI32{"int", "int", "uint", 32, false, false, true, false};
  static const ClType kI64{"long", "long", "ulong", 64, false, false, true, false};
  static const ClType kBf16{"ushort", "float", "ushort", 16, true, true, false, false};
  static const ClType kF32{"float", "float", "uint", 32, true, false, false, false};
  static const ClType kF64{"double", "double", "ulong", 64, true, false, false, false};
  static const ClType kF8{"uchar", "float", "uchar", 8, true, true, false, false};
  // Complex values are (real, imaginary) vectors; `ut` is their storage as raw bits.
  static const ClType kC64{"float2", "float2", "ulong", 64, true, false, false, false};
  static const ClType kC128{"double2", "double2", "ulong2", 128, true, false, false, false};
  switch (dt) {
    case PK_DTYPE_C64:
      return kC64;
    case PK_DTYPE_C128:
      return kC128;
    case PK_DTYPE_BOOL:
      return kBool;
    case PK_DTYPE_U8:
      return kU8;
    case PK_DTYPE_I8:
      return kI8;
    case PK_DTYPE_I16:
      return kI16;
    case PK_DTYPE_I32:
      return kI32;
    case PK_DTYPE_I64:
      return kI64;
    case PK_DTYPE_BF16:
      return kBf16;
    case PK_DTYPE_F64:
      return kF64;
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      return kF8;
    default:
      return kF32;
  }
}

bool is_int(int32_t dt) {
  return dt >= PK_DTYPE_U8 && dt <= PK_DTYPE_I64;
}
bool is_flt(int32_t dt) {
  return cl_type(dt).flt && dt != PK_DTYPE_F16 && dt != PK_DTYPE_C64 && dt != PK_DTYPE_C128;
}
bool is_cx(int32_t dt) {
  return dt == PK_DTYPE_C64 || dt == PK_DTYPE_C128;
}
// The real dtype of a complex one's parts (real_of), and the complex dtype of a real one (complex_of).
int32_t part_dt(int32_t dt) {
  return dt == PK_DTYPE_C128 ? PK_DTYPE_F64 : PK_DTYPE_F32;
}

// Decodes a storage lvalue into the compute type.
std::string load_expr(int32_t dt, const std::string &x) {
  switch (dt) {
    case PK_DTYPE_BF16:
      return "pk_bf16_to_f32(" + x + ")";
    case PK_DTYPE_F8E4M3FN:
      return "pk_e4m3_to_f32(" + x + ")";
    case PK_DTYPE_F8E5M2:
      return "pk_e5m2_to_f32(" + x + ")";
    default:
      return x;
  }
}

// Encodes a compute value into storage (one rounding for the narrow formats).
std::string store_expr(int32_t dt, const std::string &v) {
  switch (dt) {
    case PK_DTYPE_BF16:
      return "pk_f32_to_bf16(" + v + ")";
    case PK_DTYPE_F8E4M3FN:
      return "pk_f32_to_e4m3_arith(" + v + ")";
    case PK_DTYPE_F8E5M2:
      return "pk_f32_to_e5m2(" + v + ")";
    default:
      return v;
  }
}

namespace {

// Helpers every program carries: the storage formats of bf16 and fp8 (same algorithm as backend_kit.hpp's
// encode_small_float, so both backends round identically) and the dims struct of strided kernels.
const char *kPrelude = R"CL(
typedef struct { long v[8]; } pk_dims;
inline float pk_bf16_to_f32(ushort b) { return as_float(((uint)b) << 16); }
inline ushort pk_f32_to_bf16(float f) {
  uint u = as_uint(f);
  if (isnan(f)) return (ushort)(((u >> 16) & 0x8000u) | 0x7fc0u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}
inline float pk_dec_small(uint bits, int ebits, int mbits, int has_inf) {
  const int total = 1 + ebits + mbits;
  const uint neg = (bits >> (total - 1)) & 1u;
  const uint e = (bits >> mbits) & ((1u << ebits) - 1u);
  const uint m = bits & ((1u << mbits) - 1u);
  const int bias = (1 << (ebits - 1)) - 1;
  float v;
  if (has_inf && e == (1u << ebits) - 1u) v = m ? as_float(0x7fc00000u) : INFINITY;
  else if (!has_inf && e == (1u << ebits) - 1u && m == (1u << mbits) - 1u) v = as_float(0x7fc00000u);
  else if (e == 0u) v = ldexp((float)m, 1 - bias - mbits);
  else v = ldexp(1.0f + ldexp((float)m, -mbits), (int)e - bias);
  return neg ? -v : v;
}
#define PK_ENC_SMALL(NAME, T, ONE)                                                                  \
inline uint NAME(T v, int ebits, int mbits, int has_inf, uint nan_bits) {                           \
  const int total = 1 + ebits + mbits;                                                              \
  const uint sign = signbit(v) ? (1u << (total - 1)) : 0u;                                          \
  if (isnan(v)) return sign | nan_bits;                                                             \
  const T a = fabs(v);                                                                              \
  const int bias = (1 << (ebits - 1)) - 1;                                                          \
  const int emax = has_inf ? ((1 << ebits) - 2) - bias : ((1 << ebits) - 1) - bias;                 \
  const T maxf = has_inf ? ldexp((T)2 - ldexp(ONE, -mbits), emax) : ldexp((T)2 - ldexp(ONE, 1 - mbits), emax); \
  const uint max_bits = has_inf ? ((((1u << ebits) - 2u) << mbits) | ((1u << mbits) - 1u))          \
                                : ((((1u << ebits) - 1u) << mbits) | ((1u << mbits) - 2u));         \
  const uint over = has_inf ? (((1u << ebits) - 1u) << mbits) : max_bits;                           \
  if (isinf(a)) return sign | over;                                                                 \
  if (a == (T)0) return sign;                                                                       \
  int e;                                                                                            \
  frexp(a, &e);                                                                                     \
  int ue = e - 1;                                                                                   \
  const int emin = 1 - bias;                                                                        \
  if (ue < emin) ue = emin;                                                                         \
  const T q = ldexp(ONE, ue - mbits);                                                               \
  const T r = rint(a / q) * q;                                                                      \
  if (r > maxf) return sign | over;                                                                 \
  if (r == (T)0) return sign;                                                                       \
  frexp(r, &e);                                                                                     \
  ue = e - 1;                                                                                       \
  uint bits;                                                                                        \
  if (ue < emin) bits = (uint)(r / ldexp(ONE, emin - mbits));                                       \
  else bits = ((uint)(ue + bias) << mbits) | (uint)((r / ldexp(ONE, ue) - (T)1) * ldexp(ONE, mbits)); \
  return sign | bits;                                                                               \
}
PK_ENC_SMALL(pk_enc_small_f, float, 1.0f)
inline float pk_e4m3_to_f32(uchar b) { return pk_dec_small(b, 4, 3, 0); }
inline float pk_e5m2_to_f32(uchar b) { return pk_dec_small(b, 5, 2, 1); }
inline uchar pk_f32_to_e4m3(float v) { return (uchar)pk_enc_small_f(v, 4, 3, 0, 0x7fu); }
inline uchar pk_f32_to_e5m2(float v) { return (uchar)pk_enc_small_f(v, 5, 2, 1, 0x7eu); }
// Arithmetic results beyond e4m3fn's range (past 448 + half a quantum, or infinite) are NaN; only conversions
// saturate.
inline uchar pk_f32_to_e4m3_arith(float v) {
  if (!isnan(v) && fabs(v) > 464.0f) return signbit(v) ? (uchar)0xffu : (uchar)0x7fu;
  return pk_f32_to_e4m3(v);
}
inline ulong pk_gcd(ulong a, ulong b) { while (b != 0) { ulong t = a % b; a = b; b = t; } return a; }
#define PK_REM_FLT(T) inline T pk_rem_##T(T a, T b) { \
  T r = fmod(a, b); \
  if (r != (T)0 && ((r < (T)0) != (b < (T)0))) r += b; else if (r == (T)0) r = copysign((T)0, b); \
  return r; }
#define PK_REM_INT(T) inline T pk_rem_##T(T a, T b) { \
  if (b == 0 || b == (T)-1) return (T)0; \
  T r = (T)(a % b); \
  if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b); \
  return r; }
PK_REM_FLT(float)
PK_REM_INT(char)
PK_REM_INT(short)
PK_REM_INT(int)
PK_REM_INT(long)
inline uchar pk_rem_uchar(uchar a, uchar b) { return b == 0 ? (uchar)0 : (uchar)(a % b); }
)CL";

const char *kPreludeFp64 = R"CL(
PK_ENC_SMALL(pk_enc_small_d, double, 1.0)
inline ushort pk_f64_to_bf16(double v) { return (ushort)pk_enc_small_d(v, 8, 7, 1, 0x7fc0u); }
inline uchar pk_f64_to_e4m3(double v) { return (uchar)pk_enc_small_d(v, 4, 3, 0, 0x7fu); }
inline uchar pk_f64_to_e5m2(double v) { return (uchar)pk_enc_small_d(v, 5, 2, 1, 0x7eu); }
// An i64 as a double rounded to odd: toward zero, with the last bit set when that dropped anything. A later
// rounding to any format of at most 51 significand bits is then the correct rounding of the integer (a plain
// convert_double rounds to nearest first: 2^62 + 2^54 + 1 became the bf16 tie 2^62 + 2^54, then rounded to even).
inline double pk_i64_to_f64_odd(long x) {
  const double d = convert_double_rtz(x);
  return convert_long(d) == x ? d : as_double(as_long(d) | 1L);
}
PK_REM_FLT(double)
// a b + c of 8/16-bit format values (held in float) rounded to odd at float precision, so that the store's one
// rounding to the format is the correctly rounded result: a b is exact in double, p + c exact as a two-sum.
inline float pk_fma_small(float a, float b, float c) {
  const double p = (double)a * (double)b, s = p + (double)c, bp = s - (double)c;
  const double err = (p - bp) + ((double)c - (s - bp));
  if (!isfinite(s)) return (float)s;
  float f = convert_float_rtz(s);
  if ((double)f == s && err != 0.0 && (err < 0.0) != (s < 0.0)) f = as_float(as_uint(f) - 1u);  // |exact| < |s|
  if ((double)f != s || err != 0.0) f = as_float(as_uint(f) | 1u);
  return f;
}
)CL";

}  // namespace

std::string prelude(const DeviceCaps &caps) {
  std::string s;
  if (caps.fp64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  s += kPrelude;
  if (caps.fp64) s += kPreludeFp64;
  return s;
}

// A conversion of compute value x (of src) into dst's compute type, rounding once to dst's format.
std::string convert_expr(int32_t src, int32_t dst, const std::string &x, const DeviceCaps &caps) {
  const ClType &s = cl_type(src), &d = cl_type(dst);
  if (src == dst) return x;
  if (is_cx(src)) {
    // complex -> complex rounds each part; -> bool: either part nonzero; -> real drops the imaginary part.
    if (is_cx(dst)) return std::string("convert_") + d.ct + "(" + x + ")";
    if (d.boolean) return "(uchar)((" + x + ").x != 0 || (" + x + ").y != 0)";
    return convert_expr(part_dt(src), dst, "(" + x + ").x", caps);
  }
  if (is_cx(dst)) {
    const std::string P = cl_type(part_dt(dst)).ct;
    return std::string("((") + d.ct + ")(" + convert_expr(src, part_dt(dst), x, caps) + ", (" + P + ")0))";
  }
  if (d.boolean) return "(uchar)((" + x + ") != 0)";
  if (is_int(dst)) {
    if (s.flt) {
      return std::string("(isnan(") + x + ") ? (" + d.ct + ")0 : convert_" + d.ct + "_sat_rtz(" + x + "))";
    }
    return std::string("(") + d.ct + ")(" + x + ")";  // integer to integer wraps modulo 2^bits
  }
  if (dst == PK_DTYPE_F32 || dst == PK_DTYPE_F64) return std::string("convert_") + d.ct + "(" + x + ")";
  // Narrow float formats: encode straight from the source's value (double for f64 and integers, which f32 could
  // round first), then decode into the compute type, which holds it exactly.
  const char *fmt = dst == PK_DTYPE_BF16 ? "bf16" : dst == PK_DTYPE_F8E4M3FN ? "e4m3" : "e5m2";
  const bool via_double = caps.fp64 && (src == PK_DTYPE_F64 || is_int(src));
  const std::string wide =
      src == PK_DTYPE_I64 ? "pk_i64_to_f64_odd(" + x + ")" : std::string("convert_double(") + x + ")";
  std::string enc = via_double ? std::string("pk_f64_to_") + fmt + "(" + wide + ")"
                               : std::string("pk_f32_to_") + fmt + "(convert_float(" + x + "))";
  return load_expr(dst, enc);
}

namespace {

// Vector-friendly float ops: their expressions are valid for floatN/doubleN unchanged.
bool vector_op(uint32_t op) {
  switch (op) {
    case PK_OP_ADD:
    case PK_OP_SUB:
    case PK_OP_MUL:
    case PK_OP_DIV:
    case PK_OP_NEG:
    case PK_OP_ABS:
    case PK_OP_EXP:
    case PK_OP_LOG:
    case PK_OP_SQRT:
    case PK_OP_FLOOR:
    case PK_OP_CEIL:
    case PK_OP_TRUNC:
    case PK_OP_SIN:
    case PK_OP_COS:
    case PK_OP_TAN:
    case PK_OP_TANH:
    case PK_OP_SINH:
    case PK_OP_COSH:
    case PK_OP_ASIN:
    case PK_OP_ACOS:
    case PK_OP_ATAN:
    case PK_OP_ASINH:
    case PK_OP_ACOSH:
    case PK_OP_ATANH:
    case PK_OP_CBRT:
    case PK_OP_ERF:
    case PK_OP_ERFC:
    case PK_OP_EXPM1:
    case PK_OP_EXP2:
    case PK_OP_LOG1P:
    case PK_OP_LOG2:
    case PK_OP_LOG10:
    case PK_OP_RECIPROCAL:
    case PK_OP_RSQRT:
    case PK_OP_POW:
    case PK_OP_ATAN2:
    case PK_OP_HYPOT:
    case PK_OP_COPYSIGN:
    case PK_OP_FMA:
    case PK_OP_FMOD:
    case PK_OP_ROUND:
    case PK_OP_CLONE:
    case PK_OP_FILL:
      return true;
    default:
      return false;
  }
}

// One-argument float builtins named like the op.
const char *float_builtin1(uint32_t op) {
  switch (op) {
    case PK_OP_EXP:
      return "exp";
    case PK_OP_LOG:
      return "log";
    case PK_OP_SQRT:
      return "sqrt";
    case PK_OP_FLOOR:
      return "floor";
    case PK_OP_CEIL:
      return "ceil";
    case PK_OP_TRUNC:
      return "trunc";
    case PK_OP_ACOS:
      return "acos";
    case PK_OP_ACOSH:
      return "acosh";
    case PK_OP_ASIN:
      return "asin";
    case PK_OP_ASINH:
      return "asinh";
    case PK_OP_ATAN:
      return "atan";
    case PK_OP_ATANH:
      return "atanh";
    case PK_OP_COS:
      return "cos";
    case PK_OP_COSH:
      return "cosh";
    case PK_OP_SIN:
      return "sin";
    case PK_OP_SINH:
      return "sinh";
    case PK_OP_TAN:
      return "tan";
    case PK_OP_TANH:
      return "tanh";
    case PK_OP_CBRT:
      return "cbrt";
    case PK_OP_ERF:
      return "erf";
    case PK_OP_ERFC:
      return "erfc";
    case PK_OP_EXPM1:
      return "expm1";
    case PK_OP_EXP2:
      return "exp2";
    case PK_OP_LOG1P:
      return "log1p";
    case PK_OP_LOG2:
      return "log2";
    case PK_OP_LOG10:
      return "log10";
    case PK_OP_RSQRT:
      return "rsqrt";
    default:
      return nullptr;
  }
}

const char *float_builtin2(uint32_t op) {
  switch (op) {
    case PK_OP_POW:
      return "pow";
    case PK_OP_ATAN2:
      return "atan2";
    case PK_OP_HYPOT:
      return "hypot";
    case PK_OP_COPYSIGN:
      return "copysign";
    case PK_OP_FMOD:
      return "fmod";
    case PK_OP_NEXTAFTER:
      return "nextafter";
    default:
      return nullptr;
  }
}

// sin/cos/tan/tanh of f32-computed dtypes run in double where the device has it.
// PoCL's f64 exp overflows one input early (exp(709.782712893383859) is inf, not DBL_MAX - 2^970 ulps) and its
// cosh/sinh return NaN near their own overflow threshold (x = 710.4758600739437). Above x = 709 the three are
// computed as exp(|x| - 1) times e (or e/2) in double-double (x - 1 is exact there; fma adds the constant's low
// part), one rounding on top of exp's own error. A scalar expression: the vector kernels leave these ops out.
bool overflow_guarded_in_f64(uint32_t op, int32_t t) {
  return (op == PK_OP_EXP || op == PK_OP_COSH || op == PK_OP_SINH) && t == PK_DTYPE_F64;
}
// f: the op's builtin (float_builtin1), used below the threshold.
std::string overflow_guarded_expr(uint32_t op, const char *f, const std::string &A) {
  const std::string x = op == PK_OP_EXP ? "(" + A + ")" : "fabs(" + A + ")";
  // e = 0x1.5bf0a8b145769p+1 + 0x1.4d57ee2b1013ap-53 (to 2^-106); e/2 halves both parts exactly.
  const char *hi = op == PK_OP_EXP ? "0x1.5bf0a8b145769p+1" : "0x1.5bf0a8b145769p+0";
  const char *lo = op == PK_OP_EXP ? "0x1.4d57ee2b1013ap-53" : "0x1.4d57ee2b1013ap-54";
  const std::string big = "fma(exp(" + x + " - 1.0), " + hi + ", exp(" + x + " - 1.0) * " + lo + ")";
  const std::string guarded = op == PK_OP_SINH ? "copysign(" + big + ", " + A + ")" : big;
  return "(" + x + " > 709.0 ? " + guarded + " : " + f + "(" + A + "))";
}

bool trig_in_f64(uint32_t op, int32_t t, const DeviceCaps &caps) {
  return caps.fp64 && (op == PK_OP_SIN || op == PK_OP_COS || op == PK_OP_TAN || op == PK_OP_TANH) &&
         std::strcmp(cl_type(t).ct, "float") == 0;
}

// The expression of an op over complex operands (t c64 / c128; complex and polar: their real operands of dtype t).
// Everything beyond bit copies and sign flips goes through the double helpers of cl_complex.cpp.
std::string complex_expr(uint32_t op, int32_t t, int32_t out_dt, uint32_t variant, uint64_t const_bits,
                         const std::string *a, const std::string &C, const DeviceCaps &caps, std::string *why) {
  auto no = [&](const char *reason) {
    if (why) *why = reason;
    return std::string();
  };
  if (!caps.fp64) return no("complex kernels compute in double, which needs cl_khr_fp64");
  const std::string A = a ? a[0] : "", B = a ? a[1] : "", Cc = a ? a[2] : "";
  if (op == PK_OP_COMPLEX || op == PK_OP_POLAR) {
    if (t != PK_DTYPE_F32 && t != PK_DTYPE_F64) return no("defined for f32 and f64 operands");
    if (out_dt != (t == PK_DTYPE_F32 ? PK_DTYPE_C64 : PK_DTYPE_C128))
      return no("the output is the complex dtype of the operands (c64 for f32, c128 for f64)");
    const std::string O = cl_type(out_dt).ct;
    if (op == PK_OP_COMPLEX) return "((" + O + ")(" + A + ", " + B + "))";
    // polar: r cos(theta), r sin(theta); c64 in double, rounded once.
    if (t == PK_DTYPE_F32) return "convert_float2(pk_polar((double)(" + A + "), (double)(" + B + ")))";
    return "pk_polar(" + A + ", " + B + ")";
  }
  const bool c64 = t == PK_DTYPE_C64;
  const std::string R = cl_type(part_dt(t)).ct;
  auto b = [](const std::string &x) { return "(uchar)(" + x + ")"; };
  auto nz = [](const std::string &x) { return "((" + x + ").x != 0 || (" + x + ").y != 0)"; };
  // abs, real, imag and angle give the real dtype of the operand's parts.
  const bool real_out = op == PK_OP_ABS || op == PK_OP_REAL || op == PK_OP_IMAG || op == PK_OP_ANGLE;
  if (real_out && out_dt != part_dt(t)) return no("the output is the real dtype of the complex operand");
  const bool pred = op == PK_OP_ISNAN || op == PK_OP_ISINF || op == PK_OP_ISFINITE || op == PK_OP_LOGICAL_NOT ||
                    op == PK_OP_LOGICAL_AND || op == PK_OP_LOGICAL_OR || op == PK_OP_LOGICAL_XOR || op == PK_OP_EQ ||
                    op == PK_OP_NE;
  if (pred && out_dt != PK_DTYPE_BOOL) return no("the output is bool");
  if (!real_out && !pred && op != PK_OP_CONVERT_ELEMENT_TYPE && out_dt != t)
    return no("the output has the operands' complex dtype");
  switch (op) {
    case PK_OP_ABS:
      return c64 ? "(float)pk_cabs(convert_double2(" + A + "), 1)" : "pk_cabs(" + A + ", 0)";
    case PK_OP_NEG:
      return "(-(" + A + "))";
    case PK_OP_CONJ_PHYSICAL:
      return "((" + C + ")((" + A + ").x, -(" + A + ").y))";
    case PK_OP_REAL:
      return "((" + A + ").x)";
    case PK_OP_IMAG:
      return "((" + A + ").y)";
    case PK_OP_ANGLE:
      if (c64) return "((float)atan2((double)(" + A + ").y, (double)(" + A + ").x))";
      return "atan2((" + A + ").y, (" + A + ").x)";
    case PK_OP_ISNAN:
      return b("isnan((" + A + ").x) || isnan((" + A + ").y)");
    case PK_OP_ISINF:
      return b("isinf((" + A + ").x) || isinf((" + A + ").y)");
    case PK_OP_ISFINITE:
      return b("isfinite((" + A + ").x) && isfinite((" + A + ").y)");
    case PK_OP_LOGICAL_NOT:
      return b("!" + nz(A));
    case PK_OP_FILL: {
      // The value is real: its bits are the real part's, the imaginary part is +0.
      char lit[96];
      if (c64) {
        std::snprintf(lit, sizeof lit, "((float2)(as_float(0x%08xu), 0.0f))", static_cast<unsigned>(const_bits));
      } else {
        std::snprintf(lit, sizeof lit, "((double2)(as_double(0x%016llxul), 0.0))",
                      static_cast<unsigned long long>(const_bits));
      }
      return lit;
    }
    case PK_OP_SQRT:
      return c64 ? "convert_float2(pk_csqrt(convert_double2(" + A + "), 1))" : "pk_csqrt(" + A + ", 0)";
    case PK_OP_EXP:
    case PK_OP_LOG:
    case PK_OP_SIN:
    case PK_OP_COS:
    case PK_OP_TANH: {
      const char *f = op == PK_OP_EXP   ? "pk_cexp"
                      : op == PK_OP_LOG ? "pk_clog"
                      : op == PK_OP_SIN ? "pk_csin"
                      : op == PK_OP_COS ? "pk_ccos"
                                        : "pk_ctanh";
      if (c64) return std::string("convert_float2(") + f + "(convert_double2(" + A + ")))";
      return std::string(f) + "(" + A + ")";
    }
    case PK_OP_POW:
      if (c64) return "convert_float2(pk_cpow(convert_double2(" + A + "), convert_double2(" + B + "), 1))";
      return "pk_cpow(" + A + ", " + B + ", 0)";
    case PK_OP_ADD:
      return "((" + A + ") + (" + B + "))";
    case PK_OP_SUB:
      return "((" + A + ") - (" + B + "))";
    case PK_OP_MUL:
    case PK_OP_DIV:
    case PK_OP_RECIPROCAL: {
      // The device math's (complex.h): c64 widened exactly, its parts rounded once to float there.
      const std::string f = op == PK_OP_MUL ? "pk_cmul(" : "pk_cdiv(";
      const std::string x = op == PK_OP_RECIPROCAL ? "(double2)(1.0, 0.0)" : c64 ? "convert_double2(" + A + ")" : A;
      const std::string y = op == PK_OP_RECIPROCAL ? A : B;
      if (c64) return "convert_float2(" + f + x + ", convert_double2(" + y + "), 1))";
      return f + x + ", " + y + ", 0)";
    }
    case PK_OP_LOGICAL_AND:
    case PK_OP_LOGICAL_OR:
    case PK_OP_LOGICAL_XOR: {
      const char *o = op == PK_OP_LOGICAL_AND ? "&&" : op == PK_OP_LOGICAL_OR ? "||" : "!=";
      return b(nz(A) + " " + o + " " + nz(B));
    }
    case PK_OP_EQ:
      return b("(" + A + ").x == (" + B + ").x && (" + A + ").y == (" + B + ").y");
    case PK_OP_NE:
      return b("(" + A + ").x != (" + B + ").x || (" + A + ").y != (" + B + ").y");
    case PK_OP_WHERE:
      return "((" + A + ") ? (" + B + ") : (" + Cc + "))";
    case PK_OP_CLONE:
      return A;
    case PK_OP_COPY_TO:
      return B;
    case PK_OP_CONVERT_ELEMENT_TYPE: {
      const int32_t dst = static_cast<int32_t>(variant);
      if (!(is_int(dst) || dst == PK_DTYPE_BOOL || is_flt(dst) || is_cx(dst)))
        return no("not generated for this target dtype");
      return convert_expr(t, dst, A, caps);
    }
    default:
      return no("not generated for complex dtypes");
  }
}

// The expression of an op of op_expr's unary cases (abs ... fill) over compute-typed operand A; std::nullopt for
// the other ops. Returns "" when the op has no kernel for t (why says so).
std::optional<std::string> unary_expr(uint32_t op, int32_t t, int32_t out_dt, uint32_t variant, uint64_t const_bits,
                                      const std::string &A, const std::string &C, std::string *why) {
  const ClType &ty = cl_type(t);
  const bool flt = is_flt(t), in = is_int(t), bl = t == PK_DTYPE_BOOL;
  const std::string UT = ty.ut;
  auto no = [&](const char *reason) {
    if (why) *why = reason;
    return std::string();
  };
  auto b = [](const std::string &s) { return "(uchar)(" + s + ")"; };
  switch (op) {
    case PK_OP_ABS:
      if (flt) return "fabs(" + A + ")";
      if (in)
        return ty.sgn ? "((" + A + ") < 0 ? (" + C + ")((" + UT + ")0 - (" + UT + ")(" + A + ")) : (" + A + "))" : A;
      return no("abs of this dtype is not generated");
    case PK_OP_NEG:
      if (flt) return "(-(" + A + "))";
      if (in) return "(" + C + ")((" + UT + ")0 - (" + UT + ")(" + A + "))";
      return no("neg of this dtype is not generated");
    case PK_OP_ROUND:
      if (!flt) return no("defined for floating-point dtypes only");
      return (variant == PK_ROUNDING_HALF_AWAY_FROM_ZERO ? "round(" : "rint(") + A + ")";
    case PK_OP_RECIPROCAL:
      if (!flt) return no("defined for floating-point dtypes only");
      return "((" + C + ")1 / (" + A + "))";
    case PK_OP_BITWISE_NOT:
      if (bl) return b("(" + A + ") == 0");
      if (in) return "(" + C + ")(~(" + A + "))";
      return no("integral dtypes only");
    case PK_OP_ISFINITE:
      return flt ? b("isfinite(" + A + ")") : (in ? std::string("(uchar)1") : no("not generated"));
    case PK_OP_ISNAN:
      return flt ? b("isnan(" + A + ")") : (in ? std::string("(uchar)0") : no("not generated"));
    case PK_OP_ISINF:
      return flt ? b("isinf(" + A + ")") : (in ? std::string("(uchar)0") : no("not generated"));
    case PK_OP_SIGNBIT:
      if (flt) return b("signbit(" + A + ")");
      if (in) return ty.sgn ? b("(" + A + ") < 0") : std::string("(uchar)0");
      return no("not generated");
    case PK_OP_SIGN:
      if (flt) return "((" + A + ") > 0 ? (" + C + ")1 : ((" + A + ") < 0 ? (" + C + ")-1 : (" + A + ")))";
      if (in) return ty.sgn ? "(" + C + ")(((" + A + ") > 0) - ((" + A + ") < 0))" : "(" + C + ")((" + A + ") > 0)";
      return no("not generated");
    case PK_OP_LOGICAL_NOT:
      if (flt || in || bl) return b("(" + A + ") == 0");
      return no("not generated");
    case PK_OP_ANGLE:
      if (t != PK_DTYPE_F32 && t != PK_DTYPE_F64) return no("angle of complex dtypes is not generated");
      return "(isnan(" + A + ") ? (" + A + ") : ((" + A + ") < 0 ? (" + C + ")M_PI : (" + C + ")0))";
    case PK_OP_POPULATION_COUNT:
      if (!in) return no("integer dtypes only");
      return "(" + C + ")popcount(" + A + ")";
    case PK_OP_COUNT_LEADING_ZEROS:
      if (!in) return no("integer dtypes only");
      return "(" + C + ")clz(" + A + ")";
    case PK_OP_FILL: {
      if (!(flt || in || bl)) return no("not generated");
      // The value arrives as the output dtype's storage bits (converted on the host exactly like
      // convert_element_type), so the kernel holds it as a literal of the compute type.
      char lit[96];
      if (out_dt == PK_DTYPE_F32) {
        std::snprintf(lit, sizeof lit, "as_float(0x%08xu)", static_cast<unsigned>(const_bits));
      } else if (out_dt == PK_DTYPE_F64) {
        std::snprintf(lit, sizeof lit, "as_double(0x%016llxul)", static_cast<unsigned long long>(const_bits));
      } else if (ty.small) {
        char raw[48];
        std::snprintf(raw, sizeof raw, "(%s)0x%llxu", ty.st, static_cast<unsigned long long>(const_bits));
        std::snprintf(lit, sizeof lit, "%s", load_expr(out_dt, raw).c_str());
      } else {
        std::snprintf(lit, sizeof lit, "as_%s((%s)0x%llxul)", ty.ct, ty.ut,
                      static_cast<unsigned long long>(const_bits));
      }
      return "((" + C + ")(" + lit + "))";
    }
    default:
      return std::nullopt;
  }
}

// The expression of an op of op_expr's binary cases (add ... compare), the ternary where and fma, the copies and
// convert_element_type over compute-typed operands a[]. Returns "" when the op has no kernel for t, or is none of
// these (why says so).
std::string binary_expr(uint32_t op, int32_t t, uint32_t variant, const std::string *a, const std::string &C,
                        const DeviceCaps &caps, std::string *why) {
  const ClType &ty = cl_type(t);
  const bool flt = is_flt(t), in = is_int(t), bl = t == PK_DTYPE_BOOL;
  const std::string UT = ty.ut;
  auto no = [&](const char *reason) {
    if (why) *why = reason;
    return std::string();
  };
  auto wrap2 = [&](const char *o) {  // integer arithmetic modulo 2^bits through the unsigned type
    return "(" + C + ")((" + UT + ")(" + a[0] + ") " + o + " (" + UT + ")(" + a[1] + "))";
  };
  auto b = [](const std::string &s) { return "(uchar)(" + s + ")"; };
  const std::string A = a ? a[0] : "", B = a ? a[1] : "", Cc = a ? a[2] : "";
  switch (op) {
    // --- binary
    case PK_OP_ADD:
    case PK_OP_SUB:
    case PK_OP_MUL: {
      const char *o = op == PK_OP_ADD ? "+" : op == PK_OP_SUB ? "-" : "*";
      if (flt) return "((" + A + ") " + o + " (" + B + "))";
      if (in) return wrap2(o);
      return no("not generated for this dtype");
    }
    case PK_OP_DIV:
      if (flt) return "((" + A + ") / (" + B + "))";
      if (in) {
        if (ty.sgn) {
          return "((" + B + ") == 0 ? (" + C + ")0 : ((" + B + ") == (" + C + ")-1 ? (" + C + ")((" + UT + ")0 - (" +
                 UT + ")(" + A + ")) : (" + C + ")((" + A + ") / (" + B + "))))";
        }
        return "((" + B + ") == 0 ? (" + C + ")0 : (" + C + ")((" + A + ") / (" + B + ")))";
      }
      return no("not generated for this dtype");
    case PK_OP_MAXIMUM:
    case PK_OP_MINIMUM:
    case PK_OP_FMAX:
    case PK_OP_FMIN: {
      const bool mx = op == PK_OP_MAXIMUM || op == PK_OP_FMAX;
      if (in) return std::string(mx ? "max(" : "min(") + A + ", " + B + ")";
      if (!flt) return no("not generated for this dtype");
      // Equal operands (±0) pick +0 for max and -0 for min.
      const std::string cmp = mx ? ">" : "<";
      const std::string pick = "((" + A + ") " + cmp + " (" + B + ") ? (" + A + ") : ((" + B + ") " + cmp + " (" + A +
                               ") ? (" + B + ") : (signbit(" + A + ") == " + (mx ? "0" : "1") + " ? (" + A + ") : (" +
                               B + "))))";
      if (op == PK_OP_MAXIMUM || op == PK_OP_MINIMUM) {
        return "((isnan(" + A + ") || isnan(" + B + ")) ? ((" + A + ") + (" + B + ")) : " + pick + ")";
      }
      return "(isnan(" + A + ") ? (" + B + ") : (isnan(" + B + ") ? (" + A + ") : " + pick + "))";
    }
    case PK_OP_SHIFT_LEFT:
    case PK_OP_SHIFT_RIGHT_LOGICAL:
    case PK_OP_SHIFT_RIGHT_ARITHMETIC: {
      if (!in) return no("integer dtypes only");
      const std::string out_of_range = "((" + B + ") < 0 || (long)(" + B + ") >= " + std::to_string(ty.bits) + ")";
      if (op == PK_OP_SHIFT_LEFT) {
        return "(" + out_of_range + " ? (" + C + ")0 : (" + C + ")((" + UT + ")(" + A + ") << (" + B + ")))";
      }
      if (op == PK_OP_SHIFT_RIGHT_LOGICAL || !ty.sgn) {
        return "(" + out_of_range + " ? (" + C + ")0 : (" + C + ")((" + UT + ")(" + A + ") >> (" + B + ")))";
      }
      return "(" + out_of_range + " ? ((" + A + ") < 0 ? (" + C + ")-1 : (" + C + ")0) : (" + C + ")((" + A + ") >> (" +
             B + ")))";
    }
    case PK_OP_REMAINDER:
      // Python-style modulus, through helpers of the prelude (one per compute type).
      if (flt || in) return std::string("pk_rem_") + ty.ct + "(" + A + ", " + B + ")";
      return no("not generated for this dtype");
    case PK_OP_GCD:
      if (!in) return no("integer dtypes only");
      if (ty.sgn) {
        return "(" + C + ")pk_gcd((" + A + ") < 0 ? (ulong)0 - (ulong)(long)(" + A + ") : (ulong)(" + A + "), (" + B +
               ") < 0 ? (ulong)0 - (ulong)(long)(" + B + ") : (ulong)(" + B + "))";
      }
      return "(" + C + ")pk_gcd((ulong)(" + A + "), (ulong)(" + B + "))";
    case PK_OP_BITWISE_AND:
    case PK_OP_BITWISE_OR:
    case PK_OP_BITWISE_XOR: {
      if (!(in || bl)) return no("integral dtypes only");
      const char *o = op == PK_OP_BITWISE_AND ? "&" : op == PK_OP_BITWISE_OR ? "|" : "^";
      return "(" + C + ")((" + A + ") " + o + " (" + B + "))";
    }
    case PK_OP_LOGICAL_AND:
    case PK_OP_LOGICAL_OR:
    case PK_OP_LOGICAL_XOR: {
      if (!(in || bl || flt)) return no("not generated for this dtype");
      const char *o = op == PK_OP_LOGICAL_AND ? "&&" : op == PK_OP_LOGICAL_OR ? "||" : "!=";
      return b("((" + A + ") != 0) " + o + " ((" + B + ") != 0)");
    }
    case PK_OP_LT:
    case PK_OP_LE:
    case PK_OP_GT:
    case PK_OP_GE:
    case PK_OP_EQ:
    case PK_OP_NE: {
      if (!(in || bl || flt)) return no("not generated for this dtype");
      const char *o = op == PK_OP_LT   ? "<"
                      : op == PK_OP_LE ? "<="
                      : op == PK_OP_GT ? ">"
                      : op == PK_OP_GE ? ">="
                      : op == PK_OP_EQ ? "=="
                                       : "!=";
      return b("(" + A + ") " + o + " (" + B + ")");
    }
    case PK_OP_WHERE:
      if (!(in || bl || flt)) return no("not generated for this dtype");
      return "((" + A + ") ? (" + B + ") : (" + Cc + "))";
    case PK_OP_FMA:
      if (!flt) return no("defined for floating-point dtypes only");
      // The 8/16-bit formats compute in float: fma rounded to float and then to the format would round twice.
      if (ty.small && caps.fp64) return "pk_fma_small(" + A + ", " + B + ", " + Cc + ")";
      return "fma(" + A + ", " + B + ", " + Cc + ")";
    case PK_OP_CLONE:
    case PK_OP_COPY_TO:
      if (!(in || bl || flt)) return no("not generated for this dtype");
      return op == PK_OP_COPY_TO ? B : A;
    case PK_OP_CONVERT_ELEMENT_TYPE: {
      const int32_t dst = static_cast<int32_t>(variant);
      if (!(in || bl || flt)) return no("not generated for this source dtype");
      if (is_cx(dst) && !caps.fp64) return no("complex kernels compute in double, which needs cl_khr_fp64");
      if (!(is_int(dst) || dst == PK_DTYPE_BOOL || is_flt(dst) || is_cx(dst)))
        return no("not generated for this target dtype");
      return convert_expr(t, dst, A, caps);
    }
    default:
      return no("no OpenCL kernel is generated for this op");
  }
}

}  // namespace

std::string op_expr(uint32_t op, int32_t t, int32_t out_dt, uint32_t variant, uint64_t const_bits, const std::string *a,
                    const std::string &C, const DeviceCaps &caps, std::string *why) {
  const ClType &ty = cl_type(t);
  const bool flt = is_flt(t), in = is_int(t);
  auto no = [&](const char *reason) {
    if (why) *why = reason;
    return std::string();
  };
  const std::string A = a ? a[0] : "", B = a ? a[1] : "";
  if (is_cx(t) || op == PK_OP_COMPLEX || op == PK_OP_POLAR)
    return complex_expr(op, t, out_dt, variant, const_bits, a, C, caps, why);
  if (special_op(op)) return special_expr(op, t, a, C, caps, why);
  if (const char *f = float_builtin1(op)) {
    if (!flt) return no("defined for floating-point dtypes only");
    // PoCL's f32 sin/cos/tan go far beyond their ulp bound for subnormal arguments and its tanh of large
    // arguments misses ±1: the double builtins, rounded once, are within the bounds.
    if (trig_in_f64(op, t, caps)) {
      std::string D = C;
      D.replace(0, 5, "double");
      return "convert_" + C + "(" + f + "(convert_" + D + "(" + A + ")))";
    }
    // tanh(±inf) must be exactly ±1 (gelu_tanh's 1 + tanh(-inf) is 0).
    if (op == PK_OP_TANH) return "(isinf(" + A + ") ? copysign((" + C + ")1, " + A + ") : tanh(" + A + "))";
    if (overflow_guarded_in_f64(op, t)) return overflow_guarded_expr(op, f, A);
    return std::string(f) + "(" + A + ")";
  }
  if (const char *f = float_builtin2(op)) {
    if (op == PK_OP_FMOD && in) {
      if (ty.sgn)
        return "((" + B + ") == 0 || (" + B + ") == (" + C + ")-1 ? (" + C + ")0 : (" + C + ")((" + A + ") % (" + B +
               ")))";
      return "((" + B + ") == 0 ? (" + C + ")0 : (" + C + ")((" + A + ") % (" + B + ")))";
    }
    if (!flt) return no("defined for floating-point dtypes only");
    // nextafter steps in the storage format, which f32 arithmetic does not see.
    if (op == PK_OP_NEXTAFTER && ty.small) return special_expr(op, t, a, C, caps, why);
    return std::string(f) + "(" + A + ", " + B + ")";
  }
  if (std::optional<std::string> e = unary_expr(op, t, out_dt, variant, const_bits, A, C, why)) return *e;
  return binary_expr(op, t, variant, a, C, caps, why);
}

int32_t type_var_dtype(uint32_t op, const int32_t *in_dtypes, uint32_t num_inputs) {
  if (op == PK_OP_WHERE) return num_inputs > 1 ? in_dtypes[1] : -1;
  return num_inputs > 0 ? in_dtypes[0] : -1;
}

bool vector_node(uint32_t op, int32_t vt, uint32_t variant, const DeviceCaps &caps) {
  if (op == PK_OP_CONVERT_ELEMENT_TYPE && static_cast<int32_t>(variant) != vt) return false;
  return (vt == PK_DTYPE_F32 || vt == PK_DTYPE_F64) && vector_op(op) && !trig_in_f64(op, vt, caps) &&
         op != PK_OP_TANH && !overflow_guarded_in_f64(op, vt);
}

uint32_t vector_width(int32_t vt) {
  // 256-bit vectors (float8 / double4): wider ones change the call ABI of the builtins on AVX2-only PoCL builds
  // (and it warns on every build).
  return vt == PK_DTYPE_F64 ? 4 : 8;
}

bool dtype_supported(int32_t dt, const DeviceCaps &caps, std::string *why) {
  auto no = [&](const char *r) {
    if (why) *why = r;
    return false;
  };
  if (dt < 0 || dt >= PK_DTYPE_COUNT) return no("unknown dtype");
  if (dt == PK_DTYPE_F16) {
    return no(caps.fp16 ? "f16 kernels are not generated yet" : "f16 needs cl_khr_fp16, which this device lacks");
  }
  if ((dt == PK_DTYPE_F64 || dt == PK_DTYPE_C128) && !caps.fp64)
    return no("f64 and c128 need cl_khr_fp64, which this device lacks");
  return true;
}

size_t dtype_bytes(int32_t dt) {
  return static_cast<size_t>(cl_type(dt).bits / 8);
}

bool ew_op_supported(uint32_t op_id, const int32_t *in_dtypes, uint32_t num_inputs, int32_t out_dtype, uint32_t variant,
                     const DeviceCaps &caps, std::string *why) {
  for (uint32_t i = 0; i < num_inputs; ++i)
    if (!dtype_supported(in_dtypes[i], caps, why)) return false;
  if (!dtype_supported(out_dtype, caps, why)) return false;
  const int32_t t = type_var_dtype(op_id, in_dtypes, num_inputs);
  if (t < 0) {
    if (why) *why = "not an elementwise op";
    return false;
  }
  static const std::string kArgs[3] = {"a", "b", "c"};
  const std::string C = cl_type(t).ct;
  return !op_expr(op_id, t, out_dtype, variant, 0, kArgs, C, caps, why).empty();
}

std::string gen_elementwise(const EwGraph &g, const DeviceCaps &caps, bool *vector, uint32_t *vec_elems) {
  // The vector kernel needs every value in one of f32/f64 and every op vector-friendly.
  // Only the values the nodes touch count (a fused graph also lists values of nodes it did not claim).
  std::vector<int32_t> used(g.args.begin(), g.args.end());
  for (const EwNode &n : g.nodes) used.push_back(n.output);
  const int32_t vt = used.empty() ? -1 : g.dtypes[used[0]];
  bool vec = vt == PK_DTYPE_F32 || vt == PK_DTYPE_F64;
  for (int32_t v : used) vec = vec && g.dtypes[v] == vt;
  for (const EwNode &n : g.nodes) vec = vec && vector_node(n.op_id, vt, n.variant, caps);
  const uint32_t W = vector_width(vt), U = 2;  // two vectors per work-item amortize the work-item loop
  if (vector) *vector = vec;
  if (vec_elems) *vec_elems = vec ? W * U : 1;

  // nt: outputs are written with non-temporal stores (vector bodies only; their addresses 32-byte aligned).
  auto body = [&](const std::function<std::string(size_t)> &lvalue, bool vec_body, bool nt = false) {
    std::string s;
    auto ctype = [&](int32_t dt) {
      return vec_body ? std::string(cl_type(dt).ct) + std::to_string(W) : std::string(cl_type(dt).ct);
    };
    for (uint32_t k = 0; k < g.num_in_args; ++k) {
      const int32_t v = g.args[k];
      const int32_t dt = g.dtypes[v];
      s += "    const " + ctype(dt) + " v" + std::to_string(v) + " = " +
           (vec_body ? "vload" + std::to_string(W) + "(0, " + lvalue(k) + ")" : load_expr(dt, lvalue(k))) + ";\n";
    }
    for (const EwNode &n : g.nodes) {
      int32_t in_dt[3] = {-1, -1, -1};
      std::string a[3];
      for (uint32_t i = 0; i < n.num_inputs; ++i) {
        in_dt[i] = g.dtypes[n.inputs[i]];
        a[i] = "v" + std::to_string(n.inputs[i]);
      }
      const int32_t out_dt = g.dtypes[n.output];
      // A fill (a scalar constant the planner took into the run) has no input to take its type from: its output's.
      const int32_t t =
          n.op_id == PK_OP_FILL && n.num_inputs == 0 ? out_dt : type_var_dtype(n.op_id, in_dt, n.num_inputs);
      // Operators yield the compute type of their type variable (or uchar for predicates); the variable holds the
      // output's compute type, so the assignment converts where they differ (only between equal-valued types).
      s += "    const " + ctype(out_dt) + " v" + std::to_string(n.output) + " = " +
           op_expr(n.op_id, t, out_dt, n.variant, n.const_bits, a, ctype(t), caps, nullptr) + ";\n";
    }
    for (size_t k = g.num_in_args; k < g.args.size(); ++k) {
      const int32_t v = g.args[k];
      const int32_t dt = g.dtypes[v];
      if (vec_body && nt) {
        s += "    __builtin_nontemporal_store(v" + std::to_string(v) + ", (__global " + ctype(dt) + " *)(" + lvalue(k) +
             "));\n";
      } else if (vec_body) {
        s += "    vstore" + std::to_string(W) + "(v" + std::to_string(v) + ", 0, " + lvalue(k) + ");\n";
      } else {
        s += "    " + lvalue(k) + " = " + store_expr(dt, "v" + std::to_string(v)) + ";\n";
      }
    }
    return s;
  };
  auto params = [&](bool strided) {
    std::string p;
    for (size_t k = 0; k < g.args.size(); ++k) {
      const bool out = k >= g.num_in_args;
      const std::string K = std::to_string(k);
      p += std::string(out ? "__global " : "__global const ") + cl_type(g.dtypes[g.args[k]]).st + " *p" + K +
           ", const ulong o" + K + ", ";
      if (strided) p += "const pk_dims s" + K + ", ";
    }
    if (strided) p += "const pk_dims shape, const int rank, ";
    return p + "const ulong n";
  };
  // Each op rounds on its own (add, mul ... are correctly rounded): no fused multiply-add across nodes, which
  // would also make a fused chain differ from the same ops run one by one.
  std::string src = prelude(caps) + "#pragma OPENCL FP_CONTRACT OFF\n";
  // Helpers of special functions, only those this graph's ops use (after the pragma: double-double needs it).
  uint32_t helpers = 0;
  for (const EwNode &n : g.nodes) {
    int32_t in_dt[3] = {-1, -1, -1};
    for (uint32_t i = 0; i < n.num_inputs; ++i) in_dt[i] = g.dtypes[n.inputs[i]];
    helpers |= special_helper_bits(n.op_id, type_var_dtype(n.op_id, in_dt, n.num_inputs));
  }
  src += special_helpers(helpers);
  // Dense: element i of every tensor is at its offset + i.
  src += "__kernel void pk_ew_contig(" + params(false) +
         ") {\n  const ulong i = get_global_id(0);\n  if (i >= n) return;\n";
  src += "  {\n" + body([](size_t k) { return "p" + std::to_string(k) + "[o" + std::to_string(k) + " + i]"; }, false) +
         "  }\n}\n";
  // Strided: the row-major index is decomposed once into every tensor's element offset.
  src += "__kernel void pk_ew_strided(" + params(true) +
         ") {\n  const ulong i = get_global_id(0);\n  if (i >= n) return;\n";
  for (size_t k = 0; k < g.args.size(); ++k)
    src += "  long e" + std::to_string(k) + " = (long)o" + std::to_string(k) + ";\n";
  src +=
      "  ulong rest = i;\n  for (int d = rank - 1; d >= 0; --d) {\n    const long x = (long)(rest % "
      "(ulong)shape.v[d]);\n"
      "    rest /= (ulong)shape.v[d];\n";
  for (size_t k = 0; k < g.args.size(); ++k)
    src += "    e" + std::to_string(k) + " += x * s" + std::to_string(k) + ".v[d];\n";
  src += "  }\n  {\n" + body([](size_t k) { return "p" + std::to_string(k) + "[e" + std::to_string(k) + "]"; }, false) +
         "  }\n}\n";
  // W * U elements per work-item through vloadW/vstoreW; the last work-item finishes a partial tail element-wise.
  // pk_ew_vec_nt stores past the cache (outputs larger than it, which nothing reads back soon): plain stores first
  // read each line they write, a third more traffic for an add. The host picks it only for 32-byte aligned
  // outputs. Non-temporal stores are weakly ordered; the runtime's completion of a launch (locked instructions
  // between its threads) drains them before any later command reads the output.
  auto vec_kernel = [&](const char *name, bool nt) {
    const std::string E = std::to_string(W * U);
    src += std::string("__kernel void ") + name + "(" + params(false) +
           ") {\n  const ulong base = get_global_id(0) * " + E + ";\n  if (base + " + E +
           " <= n) {\n    #pragma unroll\n    for (uint u = 0; u < " + std::to_string(U) +
           "; ++u) {\n      const ulong i = base + u * " + std::to_string(W) + ";\n";
    src += body([](size_t k) { return "p" + std::to_string(k) + " + o" + std::to_string(k) + " + i"; }, true, nt) +
           "    }\n  } else {\n";
    src += "    for (ulong i = base; i < n; ++i) {\n" +
           body([](size_t k) { return "p" + std::to_string(k) + "[o" + std::to_string(k) + " + i]"; }, false) +
           "    }\n  }\n}\n";
  };
  if (vec) {
    vec_kernel("pk_ew_vec", false);
    vec_kernel("pk_ew_vec_nt", true);
  }
  return src;
}

}  // namespace pk::ocl
