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

#include "cl_special.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {
namespace {

struct ClType {
  const char *st;  // storage type
  const char *ct;  // compute type
  const char *ut;  // unsigned type of the same width (integers)
  int bits;
  bool flt;    // a floating-point dtype
  bool small;  // stored narrower than it computes (bf16, fp8)
  bool sgn;    // signed integer
  bool boolean;
};

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
    case PK_OP_LGAMMA:
      return "lgamma";
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
bool trig_in_f64(uint32_t op, int32_t t, const DeviceCaps &caps) {
  return caps.fp64 &&
         (op == PK_OP_SIN || op == PK_OP_COS || op == PK_OP_TAN || op == PK_OP_TANH || op == PK_OP_LGAMMA) &&
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
  const std::string sfx = c64 ? "64" : "128";
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
      return "pk_cabs" + sfx + "(" + A + ")";
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
    case PK_OP_EXP:
    case PK_OP_LOG:
    case PK_OP_SQRT:
    case PK_OP_SIN:
    case PK_OP_COS:
    case PK_OP_TANH: {
      const char *f = op == PK_OP_EXP    ? "pk_cexp"
                      : op == PK_OP_LOG  ? "pk_clog"
                      : op == PK_OP_SQRT ? "pk_csqrt"
                      : op == PK_OP_SIN  ? "pk_csin"
                      : op == PK_OP_COS  ? "pk_ccos"
                                         : "pk_ctanh";
      if (c64 && op == PK_OP_SQRT) return "pk_csqrt64(" + A + ")";  // rounded once from double-double
      if (c64) return std::string("convert_float2(") + f + "(convert_double2(" + A + ")))";
      return std::string(f) + "(" + A + ")";
    }
    case PK_OP_POW:
      if (c64) return "convert_float2(pk_cpow_c64(convert_double2(" + A + "), convert_double2(" + B + ")))";
      return "pk_cpow128(" + A + ", " + B + ")";
    case PK_OP_ADD:
      return "((" + A + ") + (" + B + "))";
    case PK_OP_SUB:
      return "((" + A + ") - (" + B + "))";
    case PK_OP_MUL:
      return "pk_cmul" + sfx + "(" + A + ", " + B + ")";
    case PK_OP_DIV:
      return "pk_cdiv" + sfx + "(" + A + ", " + B + ")";
    case PK_OP_RECIPROCAL:
      return "pk_cdiv" + sfx + "((" + C + ")(1, 0), " + A + ")";
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

// The expression of one op over compute-typed operands a[] (of dtype t, the op's type variable), in the compute
// type `C` (a scalar or vector type name). Returns "" when the op has no kernel for t (why says so).
std::string op_expr(uint32_t op, int32_t t, int32_t out_dt, uint32_t variant, uint64_t const_bits, const std::string *a,
                    const std::string &C, const DeviceCaps &caps, std::string *why) {
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
  if (is_cx(t) || op == PK_OP_COMPLEX || op == PK_OP_POLAR)
    return complex_expr(op, t, out_dt, variant, const_bits, a, C, caps, why);
  if (special_op(op)) return special_expr(op, t, a, C, caps, why);
  if (const char *f = float_builtin1(op)) {
    if (!flt) return no("defined for floating-point dtypes only");
    // PoCL's f32 sin/cos/tan go far beyond their ulp bound for subnormal arguments, its tanh of large
    // arguments misses ±1, and its lgamma overflows below FLT_MAX (x ~ 4e36, where lgamma is 3.4e38): the double
    // builtins, rounded once, are within the bounds.
    if (trig_in_f64(op, t, caps)) {
      std::string D = C;
      D.replace(0, 5, "double");
      return "convert_" + C + "(" + f + "(convert_" + D + "(" + A + ")))";
    }
    // tanh(±inf) must be exactly ±1 (gelu_tanh's 1 + tanh(-inf) is 0).
    if (op == PK_OP_TANH) return "(isinf(" + A + ") ? copysign((" + C + ")1, " + A + ") : tanh(" + A + "))";
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

// The type variable's dtype of a node: where's is its second input, copy_to's either; otherwise input 0.
int32_t type_var_dtype(uint32_t op, const int32_t *in_dtypes, uint32_t num_inputs) {
  if (op == PK_OP_WHERE) return num_inputs > 1 ? in_dtypes[1] : -1;
  return num_inputs > 0 ? in_dtypes[0] : -1;
}

}  // namespace

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
  for (const EwNode &n : g.nodes) {
    vec = vec && vector_op(n.op_id) && !trig_in_f64(n.op_id, vt, caps) && n.op_id != PK_OP_TANH;
    if (n.op_id == PK_OP_CONVERT_ELEMENT_TYPE) vec = vec && static_cast<int32_t>(n.variant) == vt;
  }
  // 256-bit vectors (float8 / double4): wider ones change the call ABI of the builtins on AVX2-only PoCL builds
  // (and it warns on every build); two of them per work-item amortize the work-item loop.
  const uint32_t W = vt == PK_DTYPE_F64 ? 4 : 8, U = 2;
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
      const int32_t t = type_var_dtype(n.op_id, in_dt, n.num_inputs);
      const int32_t out_dt = g.dtypes[n.output];
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

// --- reductions -------------------------------------------------------------------------------------------------

namespace {
// f64 sums and float products (in double) as the reference computes them. Sums: the finite terms (x), the same
// scaled by 2^-600 for when x overflows although the exact sum does not (y), and the non-finite terms' IEEE sum
// (z), so that finite terms whose running sum overflows still meet -inf as -inf. Products: a mantissa with the
// sign in [0.5, 1) (x), an exponent (y) and a kind (z: 0 finite, 1 zero, 2 infinite, 3 NaN) as the reference's
// long double product, whose range (2^16384) f64 running products leave far behind.
const char *kFloatAccumulators = R"CL(
inline double4 pk_fsum_ld(double v) {
  const int f = isfinite(v);
  return (double4)(f ? v : 0.0, f ? v * 0x1p-600 : 0.0, f ? 0.0 : v, 0.0);
}
inline double pk_fsum_st(double4 a, double n) {
  if (a.z != 0.0) return a.z;  // an infinity or NaN (NaN != 0 too)
  return isinf(a.x) ? (a.y / n) * 0x1p600 : a.x / n;
}
inline double4 pk_fprod_ld(double v) {
  if (isnan(v)) return (double4)(0.5, 0.0, 3.0, 0.0);
  if (v == 0.0) return (double4)(copysign(0.5, v), 0.0, 1.0, 0.0);
  if (isinf(v)) return (double4)(copysign(0.5, v), 0.0, 2.0, 0.0);
  int e;
  const double m = frexp(v, &e);
  return (double4)(m, (double)e, 0.0, 0.0);
}
inline double4 pk_fprod_mul(double4 a, double4 b) {
  const int ka = (int)a.z, kb = (int)b.z;
  int k = (ka == 3 || kb == 3 || (ka == 1 && kb == 2) || (ka == 2 && kb == 1)) ? 3 : max(ka, kb);
  double m = a.x * b.x, e = a.y + b.y;
  if (fabs(m) < 0.5) {
    m *= 2.0;
    e -= 1.0;
  }
  if (k == 0 && e > 16384.0) k = 2;
  if (k == 0 && e < -16445.0) k = 1;
  return (double4)(m, e, (double)k, 0.0);
}
inline double pk_fprod_st(double4 a) {
  const int k = (int)a.z;
  if (k == 3) return NAN;
  if (k == 1) return copysign(0.0, a.x);
  if (k == 2) return copysign((double)INFINITY, a.x);
  return ldexp(a.x, (int)clamp(a.y, -2200.0, 2200.0));
}
)CL";

struct RedTypes {
  std::string acc;         // accumulator type
  std::string init;        // identity: an expression of the accumulator type
  std::string combine_fn;  // body of pk_comb(acc a, acc x)
};

// Whether the reduction accumulates as kFloatAccumulators does: f64 sums and means, float products (in double).
bool float_sum_acc(uint32_t op, int32_t dt) {
  return dt == PK_DTYPE_F64 && (op == PK_OP_SUM || op == PK_OP_MEAN);
}
bool float_prod_acc(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  return op == PK_OP_PROD && is_flt(dt) && caps.fp64;
}

RedTypes red_types(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  RedTypes r;
  const bool flt = is_flt(dt);
  if (op == PK_OP_ALL || op == PK_OP_ANY) {
    r.acc = "uchar";
    r.init = op == PK_OP_ALL ? "(uchar)1" : "(uchar)0";
    r.combine_fn = op == PK_OP_ALL ? "return a & x;" : "return a | x;";
    return r;
  }
  if (op == PK_OP_XOR_SUM) {
    r.acc = "ulong";
    r.init = "(ulong)0";
    r.combine_fn = "return a ^ x;";
    return r;
  }
  if (is_cx(dt) && (op == PK_OP_SUM || op == PK_OP_PROD)) {
    // Complex values accumulate in double2 (c64's sums and products then round once at the end); products with
    // Annex G recovery of infinities.
    // Sums carry flags of non-finite terms and a scaled copy (pk_csum), products a scale (pk_cprod).
    r.acc = op == PK_OP_PROD ? "pk_cprod" : "pk_csum";
    r.init = op == PK_OP_PROD ? "pk_cprod_one()" : "pk_csum_zero()";
    r.combine_fn = op == PK_OP_PROD ? "return pk_cprod_mul(a, x);" : "return pk_csum_add(a, x);";
    return r;
  }
  if (float_sum_acc(op, dt)) {
    r.acc = "double4";
    r.init = "(double4)(0.0)";
    r.combine_fn = "return a + x;";
    return r;
  }
  if (float_prod_acc(op, dt, caps)) {
    r.acc = "double4";
    r.init = "(double4)(0.5, 1.0, 0.0, 0.0)";
    r.combine_fn = "return pk_fprod_mul(a, x);";
    return r;
  }
  if (op == PK_OP_SUM || op == PK_OP_PROD || op == PK_OP_MEAN) {
    // Integers accumulate modulo 2^64 (ulong), which wraps to their width on the store; floats in double where
    // the device has it (f32 partial sums overflow where the exact result does not), else in their compute type.
    r.acc = flt ? (caps.fp64 ? "double" : ty.ct) : "ulong";
    r.init = "(" + r.acc + ")" + (op == PK_OP_PROD ? "1" : "0");
    r.combine_fn = op == PK_OP_PROD ? "return a * x;" : "return a + x;";
    return r;
  }
  const bool mx = op == PK_OP_AMAX;
  r.acc = ty.ct;
  if (flt) {
    // e4m3fn has no infinities: its lowest (highest) finite value is the identity, and what an empty
    // reduction gives (the op table).
    r.init = std::string("(") + ty.ct + ")" +
             (dt == PK_DTYPE_F8E4M3FN ? (mx ? "-448.0f" : "448.0f")
              : mx                    ? "-INFINITY"
                                      : "INFINITY");
    // NaN sticks; equal ±0 pick +0 for amax and -0 for amin (as maximum/minimum do).
    r.combine_fn = std::string("if (isnan(a)) return a; if (isnan(x)) return x; if (x ") + (mx ? ">" : "<") +
                   " a) return x; if (x == a && signbit(a) != signbit(x)) return " +
                   (mx ? "signbit(a) ? x : a" : "signbit(a) ? a : x") + "; return a;";
  } else {
    const char *lim = nullptr;
    switch (dt) {
      case PK_DTYPE_U8:
        lim = mx ? "0" : "UCHAR_MAX";
        break;
      case PK_DTYPE_I8:
        lim = mx ? "CHAR_MIN" : "CHAR_MAX";
        break;
      case PK_DTYPE_I16:
        lim = mx ? "SHRT_MIN" : "SHRT_MAX";
        break;
      case PK_DTYPE_I32:
        lim = mx ? "INT_MIN" : "INT_MAX";
        break;
      default:
        lim = mx ? "LONG_MIN" : "LONG_MAX";
        break;
    }
    r.init = std::string("(") + ty.ct + ")" + lim;
    r.combine_fn = mx ? "return max(a, x);" : "return min(a, x);";
  }
  return r;
}
}  // namespace

bool reduction_supported(uint32_t op_id, int32_t dt, const DeviceCaps &caps, std::string *why) {
  auto no = [&](const char *r) {
    if (why) *why = r;
    return false;
  };
  if (!dtype_supported(dt, caps, why)) return false;
  switch (op_id) {
    case PK_OP_SUM:
    case PK_OP_PROD:
      if (is_cx(dt) && !caps.fp64) return no("complex kernels compute in double, which needs cl_khr_fp64");
      if (!(is_int(dt) || is_flt(dt) || is_cx(dt))) return no("reductions of this dtype are not generated");
      return true;
    case PK_OP_AMAX:
    case PK_OP_AMIN:
      if (!(is_int(dt) || is_flt(dt))) return no("reductions of this dtype are not generated");
      return true;
    case PK_OP_MEAN:
      if (!is_flt(dt)) return no("mean is defined for floating-point dtypes only");
      return true;
    case PK_OP_ALL:
    case PK_OP_ANY:
      if (!(is_int(dt) || is_flt(dt) || is_cx(dt) || dt == PK_DTYPE_BOOL)) return no("not generated for this dtype");
      return true;
    case PK_OP_XOR_SUM:
      if (!(is_int(dt) || dt == PK_DTYPE_BOOL)) return no("integral dtypes only");
      return true;
    default:
      return no("this reduction is not generated by the OpenCL backend");
  }
}

bool argreduce_supported(uint32_t op_id, int32_t dt, const DeviceCaps &caps, std::string *why) {
  if (op_id != PK_OP_ARGMAX && op_id != PK_OP_ARGMIN) {
    if (why) *why = "not an index reduction";
    return false;
  }
  if (!dtype_supported(dt, caps, why)) return false;
  if (!(is_int(dt) || is_flt(dt))) {
    if (why) *why = "index reductions of this dtype are not generated";
    return false;
  }
  return true;
}

std::string gen_argreduce(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const bool mx = op == PK_OP_ARGMAX;
  std::string src = prelude(caps);
  // The first extreme wins (strict comparison); for floats the first NaN wins and ends the walk.
  src += std::string("__kernel void pk_arg_direct(__global const ") + ty.st +
         " *in, const ulong in_off, const pk_dims ks, const pk_dims kin, const pk_dims kout, const int nkept,\n"
         "    const long len, const long stride, const ulong n_out, __global long *out, const ulong out_off) {\n"
         "  const ulong o = get_global_id(0);\n  if (o >= n_out) return;\n"
         "  long ib = (long)in_off, ob = (long)out_off;\n  ulong rest = o;\n"
         "  for (int d = nkept - 1; d >= 0; --d) {\n    const long x = (long)(rest % (ulong)ks.v[d]);\n"
         "    rest /= (ulong)ks.v[d];\n    ib += x * kin.v[d];\n    ob += x * kout.v[d];\n  }\n"
         "  " +
         ty.ct + " best = " + load_expr(dt, "in[ib]") + ";\n  long at = 0;\n";
  if (is_flt(dt)) src += "  if (!isnan(best)) {\n";
  src += "  for (long j = 1; j < len; ++j) {\n    const " + std::string(ty.ct) +
         " x = " + load_expr(dt, "in[ib + j * stride]") + ";\n";
  if (is_flt(dt)) src += "    if (isnan(x)) { at = j; break; }\n";
  src += std::string("    if (x ") + (mx ? ">" : "<") + " best) { best = x; at = j; }\n  }\n";
  if (is_flt(dt)) src += "  }\n";
  src += "  out[ob] = at;\n}\n";
  return src;
}

size_t reduction_acc_bytes(int32_t dt) {
  // pk_csum (3 double2) and pk_cprod (double2 + double, padded to 32) for complex; double4 for the float
  // accumulators; ulong, double or narrower otherwise.
  return is_cx(dt) ? 48 : is_flt(dt) ? 32 : 8;
}

std::string gen_reduction(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const RedTypes r = red_types(op, dt, caps);
  const std::string ACC = r.acc;
  const bool logical = op == PK_OP_ALL || op == PK_OP_ANY;
  std::string src = prelude(caps);
  if (is_cx(dt) && !logical) src += "#pragma OPENCL FP_CONTRACT OFF\n" + special_helpers(special_helper_bits(op, dt));
  if (float_sum_acc(op, dt) || float_prod_acc(op, dt, caps)) src += kFloatAccumulators;
  src += "inline " + ACC + " pk_comb(" + ACC + " a, " + ACC + " x) { " + r.combine_fn + " }\n";
  if (logical && is_cx(dt)) {
    // A complex value is true when either part is nonzero.
    src += "#define PK_LD(p, e) ((uchar)((p[e]).x != 0 || (p[e]).y != 0))\n#define PK_ST(v) ((uchar)(v))\n";
  } else if (logical) {
    src += "#define PK_LD(p, e) ((uchar)(" + load_expr(dt, "p[e]") + " != 0))\n#define PK_ST(v) ((uchar)(v))\n";
  } else if (is_cx(dt)) {
    const std::string ld = dt == PK_DTYPE_C64 ? "convert_double2(p[e])" : "(p[e])";
    const std::string st = op == PK_OP_SUM ? "pk_csum_st(v)" : "pk_cprod_st(v)";
    src += "#define PK_LD(p, e) (" + std::string(op == PK_OP_SUM ? "pk_csum_ld(" : "pk_cprod_ld(") + ld + "))\n";
    src += "#define PK_ST(v) (" + (dt == PK_DTYPE_C64 ? "convert_float2(" + st + ")" : st) + ")\n";
  } else if (float_sum_acc(op, dt) || float_prod_acc(op, dt, caps)) {
    const bool sum = float_sum_acc(op, dt);
    src += std::string("#define PK_LD(p, e) (") + (sum ? "pk_fsum_ld" : "pk_fprod_ld") + "((double)(" +
           load_expr(dt, "p[e]") + ")))\n";
    const std::string fin =
        sum ? std::string("pk_fsum_st(v, ") + (op == PK_OP_MEAN ? "(double)n_red" : "1.0") + ")" : "pk_fprod_st(v)";
    src += "#define PK_ST(v) (" + store_expr(dt, std::string("(") + ty.ct + ")" + fin) + ")\n";
  } else {
    const std::string conv_in = ACC == "ulong" ? "(ulong)(long)" : "(" + ACC + ")";
    src += "#define PK_LD(p, e) (" + conv_in + "(" + load_expr(dt, "p[e]") + "))\n";
    // mean divides once, in the accumulator type, before the one rounding to the output format.
    const std::string fin = op == PK_OP_MEAN ? "((v) / (" + ACC + ")n_red)" : "(v)";
    src += "#define PK_ST(v) (" + store_expr(dt, std::string("(") + ty.ct + ")" + fin) + ")\n";
  }
  const std::string OT = logical ? "uchar" : ty.st;
  // Offset of reduced element j: the reduced axes' index decomposition (rank nred).
  src += R"CL(
inline long pk_red_off(ulong j, const pk_dims rs, const pk_dims rst, const int nred) {
  long off = 0;
  for (int d = nred - 1; d >= 0; --d) { off += (long)(j % (ulong)rs.v[d]) * rst.v[d]; j /= (ulong)rs.v[d]; }
  return off;
}
inline void pk_out_offs(ulong o, const pk_dims ks, const pk_dims kin, const pk_dims kout, const int nkept,
                        long *in_off, long *out_off) {
  long a = 0, b = 0;
  for (int d = nkept - 1; d >= 0; --d) {
    const long x = (long)(o % (ulong)ks.v[d]);
    o /= (ulong)ks.v[d];
    a += x * kin.v[d];
    b += x * kout.v[d];
  }
  *in_off = a;
  *out_off = b;
}
)CL";
  const std::string T = ty.st;
  const std::string common =
      "__global const " + T +
      " *in, const ulong in_off, const pk_dims ks, const pk_dims kin, "
      "const pk_dims kout, const int nkept, const pk_dims rs, const pk_dims rst, const int nred, "
      "const ulong n_out, const ulong n_red";
  // One work-item per output: walks its reduced elements (the last reduced axis innermost, strided by its step).
  src += "__kernel void pk_red_direct(" + common + ", __global " + OT +
         " *out, const ulong out_off) {\n"
         "  const ulong o = get_global_id(0);\n  if (o >= n_out) return;\n  long ib, ob;\n"
         "  pk_out_offs(o, ks, kin, kout, nkept, &ib, &ob);\n  ib += (long)in_off;\n"
         "  " +
         ACC + " acc = " + r.init +
         ";\n"
         "  if (nred == 1) {\n    const long st = rst.v[0];\n"
         "    for (ulong j = 0; j < n_red; ++j) acc = pk_comb(acc, PK_LD(in, ib + (long)j * st));\n"
         "  } else {\n    for (ulong j = 0; j < n_red; ++j) acc = pk_comb(acc, PK_LD(in, ib + pk_red_off(j, rs, rst, "
         "nred)));\n  }\n"
         "  out[(long)out_off + ob] = PK_ST(acc);\n}\n";
  // Two stages for few outputs with many reduced elements: work-group g reduces slice g % parts of output
  // g / parts into partials[g]; pk_red_final combines each output's parts in order.
  src += "__kernel __attribute__((reqd_work_group_size(" + std::to_string(kRedLocal) +
         ", 1, 1)))\n"
         "void pk_red_partial(" +
         common + ", __global " + ACC +
         " *partials, const uint parts) {\n"
         "  __local " +
         ACC + " scratch[" + std::to_string(kRedLocal) +
         "];\n"
         "  const uint g = get_group_id(0), lid = get_local_id(0);\n"
         "  const ulong o = g / parts, part = g % parts;\n  long ib, ob;\n"
         "  pk_out_offs(o, ks, kin, kout, nkept, &ib, &ob);\n  ib += (long)in_off;\n"
         "  const ulong chunk = (n_red + parts - 1) / parts;\n  const ulong lo = part * chunk;\n"
         "  const ulong hi = min(n_red, lo + chunk);\n"
         "  " +
         ACC + " acc = " + r.init +
         ";\n"
         "  if (nred == 1) {\n    const long st = rst.v[0];\n"
         "    for (ulong j = lo + lid; j < hi; j += " +
         std::to_string(kRedLocal) +
         ") acc = pk_comb(acc, PK_LD(in, ib + (long)j * st));\n"
         "  } else {\n"
         "    for (ulong j = lo + lid; j < hi; j += " +
         std::to_string(kRedLocal) +
         ") acc = pk_comb(acc, PK_LD(in, ib + pk_red_off(j, rs, rst, nred)));\n"
         "  }\n  scratch[lid] = acc;\n  barrier(CLK_LOCAL_MEM_FENCE);\n"
         "  for (uint s = " +
         std::to_string(kRedLocal / 2) +
         "; s > 0; s >>= 1) {\n"
         "    if (lid < s) scratch[lid] = pk_comb(scratch[lid], scratch[lid + s]);\n    "
         "barrier(CLK_LOCAL_MEM_FENCE);\n  }\n"
         "  if (lid == 0) partials[g] = scratch[0];\n}\n";
  src += "__kernel void pk_red_final(__global const " + ACC +
         " *partials, const uint parts, const pk_dims ks, "
         "const pk_dims kout, const int nkept, const ulong n_out, const ulong n_red, __global " +
         OT +
         " *out, const ulong out_off) {\n"
         "  const ulong o = get_global_id(0);\n  if (o >= n_out) return;\n  long ib, ob;\n"
         "  pk_out_offs(o, ks, ks, kout, nkept, &ib, &ob);\n"
         "  " +
         ACC +
         " acc = partials[o * parts];\n"
         "  for (uint p = 1; p < parts; ++p) acc = pk_comb(acc, partials[o * parts + p]);\n"
         "  out[(long)out_off + ob] = PK_ST(acc);\n}\n";
  return src;
}

// --- matmul -----------------------------------------------------------------------------------------------------

bool matmul_supported(int32_t dt, const DeviceCaps &caps, std::string *why) {
  if (!dtype_supported(dt, caps, why)) return false;
  if (is_cx(dt) && !caps.fp64) {
    if (why) *why = "complex kernels compute in double, which needs cl_khr_fp64";
    return false;
  }
  if (!(is_int(dt) || is_flt(dt) || is_cx(dt))) {
    if (why) *why = "matmul of this dtype is not generated";
    return false;
  }
  return true;
}

// Float dot products whose fast accumulation is not finite (an overflow, or inf/NaN operands) are recomputed
// from global memory without intermediate overflow: in double for f32-computed dtypes where the device has it,
// otherwise as a mantissa in [0.5, 1) times a separate int exponent. Exact sums that overflow still give ±inf;
// huge products of opposite signs no longer meet as inf - inf = NaN. Used through PK_FIX(v, A, ia, sa, B, ib, sb,
// K) by the matmul and convolution kernels (PK_LD loads one operand element).
std::string careful_dot(int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const std::string W = (caps.fp64 && dt != PK_DTYPE_F64) ? "double" : ty.ct, T = ty.st, CT = ty.ct;
  return "inline " + CT + " pk_careful(__global const " + T + " *A, long ia, long sa, __global const " + T +
         " *B, long ib, long sb, long K) {\n"
         "  " +
         W +
         " m = 0;\n  int e = 0, nan = 0, pinf = 0, ninf = 0;\n"
         "  for (long k = 0; k < K; ++k) {\n"
         "    const " +
         W + " a = (" + W + ")PK_LD(A, ia + k * sa), b = (" + W +
         ")PK_LD(B, ib + k * sb);\n"
         "    if (isnan(a) || isnan(b)) { nan = 1; continue; }\n"
         "    if (isinf(a) || isinf(b)) {\n"
         "      if (a == 0 || b == 0) nan = 1; else if ((a < 0) != (b < 0)) ninf = 1; else pinf = 1;\n"
         "      continue;\n    }\n"
         "    int ea, eb;\n    const " +
         W +
         " p = frexp(a, &ea) * frexp(b, &eb);\n"
         "    if (p == 0) continue;\n    const int ep = ea + eb;\n"
         "    if (m == 0) { m = p; e = ep; } else if (ep > e) { m = ldexp(m, e - ep) + p; e = ep; } else {\n"
         "      m += ldexp(p, ep - e);\n    }\n"
         "    int r;\n    m = frexp(m, &r);\n    e += r;\n  }\n"
         "  if (nan || (pinf && ninf)) return (" +
         CT +
         ")NAN;\n"
         "  if (pinf) return (" +
         CT + ")INFINITY;\n  if (ninf) return -(" + CT +
         ")INFINITY;\n"
         "  return (" +
         CT +
         ")ldexp(m, e);\n}\n"
         "#define PK_FIX(v, A, ia, sa, B, ib, sb, K) (isfinite(v) ? (v) : pk_careful(A, ia, sa, B, ib, sb, K))\n";
}

namespace {
// Complex dot products: double2 sums of products with Annex G recovery (exact products for c64), one rounding at
// the end; PK_LD loads an operand element as double2, PK_ST stores a double2.
std::string complex_dot_prelude(int32_t dt, const DeviceCaps &caps) {
  const bool c64 = dt == PK_DTYPE_C64;
  std::string src =
      prelude(caps) + "#pragma OPENCL FP_CONTRACT OFF\n" + special_helpers(special_helper_bits(PK_OP_MUL, dt));
  src += std::string("#define PK_LD(p, e) (") + (c64 ? "convert_double2(p[e])" : "(p[e])") + ")\n";
  src += std::string("#define PK_ST(v) (") + (c64 ? "convert_float2(v)" : "(v)") + ")\n";
  src += "inline double2 pk_cmac(double2 acc, double2 a, double2 b) { return acc + pk_cmul_g(a.x, a.y, b.x, b.y); }\n";
  return src;
}
// The matmul kernel's signature (the launcher sets these arguments for every element type): batched A [M, K],
// B [K, N], C [M, N], each with an element offset and strides, in work-groups of LS x LS.
std::string matmul_signature(const std::string &T) {
  return "__kernel __attribute__((reqd_work_group_size(LS, LS, 1)))\nvoid pk_matmul(__global const " + T +
         " *A, const ulong a_off, const long sab, const long sam, const long sak,\n"
         "               __global const " +
         T +
         " *B, const ulong b_off, const long sbb, const long sbk, const long sbn,\n"
         "               __global " +
         T +
         " *C, const ulong c_off, const long scb, const long scm, const long scn,\n"
         "               const long M, const long N, const long K) {\n";
}

}  // namespace

std::string gen_matmul(int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  if (is_cx(dt)) {
    // Same arguments and work-group shape as the tiled kernel, without the local-memory tiles: each work-item
    // walks K for its R x R outputs.
    const std::string T = ty.st;
    std::string src = complex_dot_prelude(dt, caps);
    src += "#define TM " + std::to_string(kMmTile) + "\n#define LS " + std::to_string(kMmLocal) + "\n#define R " +
           std::to_string(kMmTile / kMmLocal) + "\n";
    src += matmul_signature(T) +
           "  const int tx = get_local_id(0), ty = get_local_id(1);\n"
           "  const long n0 = (long)get_group_id(0) * TM, m0 = (long)get_group_id(1) * TM;\n"
           "  const long bt = get_global_id(2);\n"
           "  const long abase = (long)a_off + bt * sab, bbase = (long)b_off + bt * sbb;\n"
           "  for (int i = 0; i < R; ++i) {\n    const long gm = m0 + ty + LS * i;\n    if (gm >= M) continue;\n"
           "    for (int j = 0; j < R; ++j) {\n      const long gn = n0 + tx + LS * j;\n      if (gn >= N) continue;\n"
           "      double2 acc = (double2)(0.0, 0.0);\n"
           "      for (long k = 0; k < K; ++k)\n"
           "        acc = pk_cmac(acc, PK_LD(A, abase + gm * sam + k * sak), PK_LD(B, bbase + k * sbk + gn * sbn));\n"
           "      if (!isfinite(acc.x) || !isfinite(acc.y)) {\n        pk_cdot d;\n        pk_cdot_init(&d);\n"
           "        for (long k = 0; k < K; ++k)\n"
           "          pk_cdot_add(&d, PK_LD(A, abase + gm * sam + k * sak), PK_LD(B, bbase + k * sbk + gn * sbn));\n"
           "        acc = pk_cdot_value(&d);\n      }\n"
           "      C[(long)c_off + bt * scb + gm * scm + gn * scn] = PK_ST(acc);\n    }\n  }\n}\n";
    return src;
  }
  const bool flt = is_flt(dt);
  // Floats accumulate in their compute type (f32 for the narrow formats); integers modulo 2^64.
  const std::string ACC = flt ? ty.ct : "ulong";
  const std::string LD = flt ? "" : "(ulong)(long)";
  const std::string T = ty.st;
  const uint32_t R = kMmTile / kMmLocal;  // outputs per work-item along each axis
  std::string src = prelude(caps);
  src += "#define TM " + std::to_string(kMmTile) + "\n#define TK " + std::to_string(kMmTileK) + "\n#define LS " +
         std::to_string(kMmLocal) + "\n#define R " + std::to_string(R) + "\n";
  src += "#define PK_LD(p, e) (" + LD + "(" + load_expr(dt, "p[e]") + "))\n";
  src += "#define PK_ST(v) (" + store_expr(dt, std::string("(") + ty.ct + ")(v)") + ")\n";
  if (flt) src += careful_dot(dt, caps);
  src += matmul_signature(T) + "  __local " + ACC + " As[TK][TM];\n  __local " + ACC + " Bs[TK][TM];\n";
  src += R"CL(
  const int tx = get_local_id(0), ty = get_local_id(1);
  const long n0 = (long)get_group_id(0) * TM, m0 = (long)get_group_id(1) * TM;
  const long bt = get_global_id(2);
  const long abase = (long)a_off + bt * sab, bbase = (long)b_off + bt * sbb;
  const int lid = ty * LS + tx;
)CL";
  src += "  " + ACC + " acc[R][R];\n  for (int i = 0; i < R; ++i) for (int j = 0; j < R; ++j) acc[i][j] = 0;\n";
  src += R"CL(
  for (long k0 = 0; k0 < K; k0 += TK) {
    // Each work-item stages (TM * TK) / (LS * LS) elements of each tile; out-of-range elements are zero.
    for (int e = lid; e < TM * TK; e += LS * LS) {
      const int mm = e / TK, kk = e % TK;
      const long gm = m0 + mm, gk = k0 + kk;
      As[kk][mm] = (gm < M && gk < K) ? PK_LD(A, abase + gm * sam + gk * sak) : 0;
    }
    for (int e = lid; e < TK * TM; e += LS * LS) {
      const int kk = e / TM, nn = e % TM;
      const long gk = k0 + kk, gn = n0 + nn;
      Bs[kk][nn] = (gk < K && gn < N) ? PK_LD(B, bbase + gk * sbk + gn * sbn) : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TK; ++kk) {
      for (int i = 0; i < R; ++i) {
        for (int j = 0; j < R; ++j) acc[i][j] += As[kk][ty + LS * i] * Bs[kk][tx + LS * j];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < R; ++i) {
    const long gm = m0 + ty + LS * i;
    if (gm >= M) continue;
    for (int j = 0; j < R; ++j) {
      const long gn = n0 + tx + LS * j;
      if (gn < N) C[(long)c_off + bt * scb + gm * scm + gn * scn] = PK_ST(PK_FIX(acc[i][j], A, abase + gm * sam, sak,
                                                                                 B, bbase + gn * sbn, sbk, K));
    }
  }
}
)CL";
  if (!flt) src = "#define PK_FIX(v, A, ia, sa, B, ib, sb, K) (v)\n" + src;
  return src;
}

// --- creation ---------------------------------------------------------------------------------------------------

std::string gen_set(size_t bytes) {
  const char *T = bytes == 1 ? "uchar" : bytes == 2 ? "ushort" : bytes == 4 ? "uint" : bytes == 8 ? "ulong" : "ulong2";
  // 16-byte elements (c128) are a real value's bits and a +0 imaginary part.
  const std::string V = bytes == 16 ? "(ulong2)(bits, 0ul)" : std::string("(") + T + ")bits";
  std::string src = "typedef struct { long v[8]; } pk_dims;\n";
  src += std::string("__kernel void pk_set_contig(__global ") + T +
         " *p, const ulong o, const ulong n, const ulong bits) {\n  const ulong i = get_global_id(0);\n"
         "  if (i < n) p[o + i] = " +
         V + ";\n}\n";
  src +=
      std::string("__kernel void pk_set_strided(__global ") + T +
      " *p, const ulong o, const pk_dims s, const pk_dims shape, const int rank, const ulong n, const ulong bits) {\n"
      "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n  long e = (long)o;\n  ulong rest = i;\n"
      "  for (int d = rank - 1; d >= 0; --d) { e += (long)(rest % (ulong)shape.v[d]) * s.v[d]; rest /= "
      "(ulong)shape.v[d]; }\n"
      "  p[e] = " +
      V + ";\n}\n";
  return src;
}

std::string gen_iota(int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  std::string src = prelude(caps);
  src += std::string("__kernel void pk_iota(__global ") + ty.st +
         " *p, const ulong o, const long stride, const ulong n, const long start, const long step) {\n"
         "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n"
         "  const long v = (long)((ulong)start + i * (ulong)step);\n"
         "  p[(long)o + (long)i * stride] = " +
         store_expr(dt, convert_expr(PK_DTYPE_I64, dt, "v", caps)) + ";\n}\n";
  return src;
}

// --- data movement ----------------------------------------------------------------------------------------------

namespace {
// Storage type of a dtype-independent kernel over elements of `bytes` bytes.
const char *bytes_type(size_t bytes) {
  return bytes == 1 ? "uchar" : bytes == 2 ? "ushort" : bytes == 4 ? "uint" : bytes == 8 ? "ulong" : "ulong2";
}

// Offset of row-major position f of a tensor with `rank` axes of extents sh and strides st.
const char *kFlatOff = R"CL(
inline long pk_flat_off(long f, const pk_dims sh, const pk_dims st, const int rank) {
  long off = 0;
  for (int d = rank - 1; d >= 0; --d) { off += (f % sh.v[d]) * st.v[d]; f /= sh.v[d]; }
  return off;
}
)CL";

// Loads of the compute type and "less, NaN last" (sort order) for one dtype.
std::string order_helpers(int32_t dt) {
  const ClType &ty = cl_type(dt);
  std::string s = "#define PK_LDC(p, e) (" + load_expr(dt, "p[e]") + ")\n";
  s += std::string("inline int pk_lt(") + ty.ct + " x, " + ty.ct + " y) { ";
  s += is_flt(dt) ? "if (isnan(x)) return 0; if (isnan(y)) return 1; return x < y; }\n" : "return x < y; }\n";
  return s;
}
}  // namespace

std::string gen_move(size_t bytes) {
  const std::string E = bytes_type(bytes);
  std::string src = "typedef struct { long v[8]; } pk_dims;\n";
  src += kFlatOff;
  // Iterates `shape`; each side's position is base + sum(index * map) and is either an element offset or (flat) a
  // row-major position of that tensor, mapped through its own shape and strides.
  src += "__kernel void pk_move(__global " + E +
         " *dst, const long doff, const long dbase, const pk_dims dmap,\n"
         "    const int dflat, const pk_dims dsh, const pk_dims dst_st, const int drank,\n"
         "    __global const " +
         E +
         " *src, const long soff, const long sbase, const pk_dims smap,\n"
         "    const int sflat, const pk_dims ssh, const pk_dims sst, const int srank,\n"
         "    const pk_dims shape, const int rank, const ulong n) {\n"
         "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n"
         "  long fd = dbase, fs = sbase;\n  ulong rest = i;\n"
         "  for (int d = rank - 1; d >= 0; --d) {\n"
         "    const long x = (long)(rest % (ulong)shape.v[d]);\n    rest /= (ulong)shape.v[d];\n"
         "    fd += x * dmap.v[d];\n    fs += x * smap.v[d];\n  }\n"
         "  const long od = dflat ? pk_flat_off(fd, dsh, dst_st, drank) : fd;\n"
         "  const long os = sflat ? pk_flat_off(fs, ssh, sst, srank) : fs;\n"
         "  dst[doff + od] = src[soff + os];\n}\n";
  return src;
}

std::string gen_take(size_t bytes, int32_t idx_dt) {
  const std::string E = bytes_type(bytes), I = idx_dt == PK_DTYPE_I64 ? "long" : "int";
  std::string src = "typedef struct { long v[8]; } pk_dims;\n";
  // out[o] = a[base(o) + index[o'] * step] (zero when the index is out of range): gather and index_select.
  src += "__kernel void pk_take(__global " + E +
         " *dst, const long doff, const pk_dims dmap,\n"
         "    __global const " +
         E +
         " *src, const long soff, const pk_dims smap, const long step, const long extent,\n"
         "    __global const " +
         I +
         " *idx, const long ioff, const pk_dims imap,\n"
         "    const pk_dims shape, const int rank, const ulong n) {\n"
         "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n"
         "  long fd = doff, fs = soff, fi = ioff;\n  ulong rest = i;\n"
         "  for (int d = rank - 1; d >= 0; --d) {\n"
         "    const long x = (long)(rest % (ulong)shape.v[d]);\n    rest /= (ulong)shape.v[d];\n"
         "    fd += x * dmap.v[d];\n    fs += x * smap.v[d];\n    fi += x * imap.v[d];\n  }\n"
         "  const long v = (long)idx[fi];\n"
         "  dst[fd] = (v >= 0 && v < extent) ? src[fs + v * step] : (" +
         E + ")0;\n}\n";
  return src;
}

std::string gen_scatter(int32_t dt, int32_t idx_dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const std::string T = ty.st, I = idx_dt == PK_DTYPE_I64 ? "long" : "int";
  const bool flt = is_flt(dt);
  const std::string ACC = is_cx(dt) ? ty.ct : flt ? (caps.fp64 ? "double" : ty.ct) : "long";
  std::string src = prelude(caps);
  src += "#define PK_LDA(p, e) ((" + ACC + ")(" + load_expr(dt, "p[e]") + "))\n";
  src += "#define PK_ST(v) (" + store_expr(dt, std::string("(") + ty.ct + ")(v)") + ")\n";
  // Reduce kinds: 0 sum, 1 prod, 2 amax, 3 amin (NaN wins); integers wrap through ulong.
  src += "inline " + ACC + " pk_comb(int kind, " + ACC + " x, " + ACC + " y) {\n";
  if (is_cx(dt)) {
    src += "  return x + y;\n}\n";  // complex: plain scatter only (scatter_reduce is not generated)
  } else if (flt) {
    src +=
        "  if (kind == 0) return x + y;\n  if (kind == 1) return x * y;\n"
        "  if (isnan(x) || isnan(y)) return x + y;\n  return kind == 2 ? max(x, y) : min(x, y);\n}\n";
  } else {
    src +=
        "  if (kind == 0) return (long)((ulong)x + (ulong)y);\n  if (kind == 1) return (long)((ulong)x * (ulong)y);\n"
        "  return kind == 2 ? max(x, y) : min(x, y);\n}\n";
  }
  // One work-item per output element: it walks the index entries that can address it (those with its
  // coordinates off `dim`) in order, so duplicates resolve as a serial loop would (the last write wins) and
  // nothing races. kind < 0: plain scatter (a raw copy of src's element).
  src += "__kernel void pk_scatter(__global const " + T +
         " *a, const long a_off, const pk_dims sa,\n"
         "    __global const " +
         I +
         " *idx, const long i_off, const pk_dims si, const pk_dims ish,\n"
         "    __global const " +
         T +
         " *s, const long s_off, const pk_dims ss,\n"
         "    __global " +
         T +
         " *out, const long o_off, const pk_dims so,\n"
         "    const pk_dims shape, const int rank, const int dim, const int kind, const int include_self,\n"
         "    const ulong n) {\n"
         "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n"
         "  long ao = a_off, oo = o_off, ib = i_off, sb = s_off, p = 0;\n  int inside = 1;\n  ulong rest = i;\n"
         "  for (int d = rank - 1; d >= 0; --d) {\n"
         "    const long x = (long)(rest % (ulong)shape.v[d]);\n    rest /= (ulong)shape.v[d];\n"
         "    ao += x * sa.v[d];\n    oo += x * so.v[d];\n"
         "    if (d == dim) { p = x; continue; }\n"
         "    if (x >= ish.v[d]) inside = 0;\n    ib += x * si.v[d];\n    sb += x * ss.v[d];\n  }\n"
         "  const long len = inside ? ish.v[dim] : 0;\n"
         "  if (kind < 0) {\n    " +
         T +
         " val = a[ao];\n"
         "    for (long j = 0; j < len; ++j) if ((long)idx[ib + j * si.v[dim]] == p) val = s[sb + j * ss.v[dim]];\n"
         "    out[oo] = val;\n    return;\n  }\n"
         "  " +
         ACC +
         " acc = 0;\n  int touched = 0;\n"
         "  for (long j = 0; j < len; ++j) {\n"
         "    if ((long)idx[ib + j * si.v[dim]] != p) continue;\n"
         "    const " +
         ACC +
         " x = PK_LDA(s, sb + j * ss.v[dim]);\n"
         "    if (touched) acc = pk_comb(kind, acc, x);\n"
         "    else acc = include_self ? pk_comb(kind, PK_LDA(a, ao), x) : x;\n    touched = 1;\n  }\n"
         "  if (touched) out[oo] = PK_ST(acc); else out[oo] = a[ao];\n}\n";
  return src;
}

std::string gen_index_put(int32_t dt, int32_t idx_dt, uint32_t k, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const std::string T = ty.st, I = idx_dt == PK_DTYPE_I64 ? "long" : "int";
  const bool flt = is_flt(dt);
  const std::string ACC = flt ? (caps.fp64 ? "double" : ty.ct) : "ulong";
  std::string src = prelude(caps);
  src += "#define PK_LDA(p, e) ((" + ACC + ")" + (flt ? "" : "(long)") + "(" + load_expr(dt, "p[e]") + "))\n";
  src += "#define PK_ST(v) (" + store_expr(dt, std::string("(") + ty.ct + ")(v)") + ")\n";
  std::string params;
  for (uint32_t j = 0; j < k; ++j) {
    const std::string J = std::to_string(j);
    params += "__global const " + I + " *x" + J + ", const long x" + J + "_off, const long x" + J + "_st, ";
  }
  // One work-item per output element: rows whose k indices address it, in order (the last one wins, or all add).
  src += "__kernel void pk_index_put(__global const " + T +
         " *a, const long a_off, const pk_dims sa,\n"
         "    __global const " +
         T + " *vals, const long v_off, const pk_dims sv, " + params + "\n    __global " + T +
         " *out, const long o_off, const pk_dims so, const pk_dims shape, const int rank,\n"
         "    const long rows, const int accumulate, const ulong n) {\n"
         "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n"
         "  long ao = a_off, oo = o_off, vb = v_off, c[8];\n  ulong rest = i;\n"
         "  for (int d = rank - 1; d >= 0; --d) {\n"
         "    const long x = (long)(rest % (ulong)shape.v[d]);\n    rest /= (ulong)shape.v[d];\n"
         "    c[d] = x;\n    ao += x * sa.v[d];\n    oo += x * so.v[d];\n"
         "    if (d >= " +
         std::to_string(k) + ") vb += x * sv.v[d - " + std::to_string(k) +
         " + 1];\n  }\n"
         "  long hit = -1;\n  " +
         ACC + " acc = accumulate ? PK_LDA(a, ao) : (" + ACC +
         ")0;\n"
         "  for (long r = 0; r < rows; ++r) {\n    int m = 1;\n";
  for (uint32_t j = 0; j < k; ++j) {
    const std::string J = std::to_string(j);
    src += "    m = m && (long)x" + J + "[x" + J + "_off + r * x" + J + "_st] == c[" + J + "];\n";
  }
  src +=
      "    if (!m) continue;\n    hit = r;\n    if (accumulate) acc += PK_LDA(vals, vb + r * sv.v[0]);\n  }\n"
      "  if (accumulate) out[oo] = PK_ST(acc);\n"
      "  else out[oo] = hit >= 0 ? vals[vb + hit * sv.v[0]] : a[ao];\n}\n";
  return src;
}

// --- scans, sorting, var ----------------------------------------------------------------------------------------

namespace {
// A "line" kernel's work-item o addresses line o of three tensors (in, out, out2): the kept axes' offsets.
const char *kLines = R"CL(
inline void pk_line(ulong o, const pk_dims sh, const int r, const pk_dims s0, const pk_dims s1, const pk_dims s2,
                    long *b0, long *b1, long *b2) {
  long a = 0, b = 0, c = 0;
  for (int d = r - 1; d >= 0; --d) {
    const long x = (long)(o % (ulong)sh.v[d]);
    o /= (ulong)sh.v[d];
    a += x * s0.v[d];
    b += x * s1.v[d];
    c += x * s2.v[d];
  }
  *b0 += a;
  *b1 += b;
  *b2 += c;
}
)CL";
const char *kLineParams =
    "const pk_dims sh, const int r, const pk_dims s0, const pk_dims s1, const pk_dims s2, const ulong n_lines, "
    "const long len, const long t0, const long t1, const long t2";
}  // namespace

bool scan_supported(uint32_t op, int32_t dt, const DeviceCaps &caps, std::string *why) {
  auto no = [&](const char *r) {
    if (why) *why = r;
    return false;
  };
  if (!dtype_supported(dt, caps, why)) return false;
  if (is_cx(dt)) {
    if (op != PK_OP_CUMSUM && op != PK_OP_CUMPROD && op != PK_OP_VAR) return no("not generated for complex dtypes");
    return caps.fp64 ? true : no("complex kernels compute in double, which needs cl_khr_fp64");
  }
  switch (op) {
    case PK_OP_CUMSUM:
    case PK_OP_CUMPROD:
    case PK_OP_CUMMAX:
    case PK_OP_CUMMIN:
    case PK_OP_SORT:
    case PK_OP_TOPK:
    case PK_OP_SEARCHSORTED:
      return (is_int(dt) || is_flt(dt)) ? true : no("not generated for this dtype");
    case PK_OP_LOGCUMSUMEXP:
    case PK_OP_VAR:
      return is_flt(dt) ? true : no("floating-point dtypes only");
    default:
      return no("not a scan");
  }
}

std::string gen_scan(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const std::string T = ty.st, CT = ty.ct;
  if (is_cx(dt)) {
    // cumsum / cumprod of complex values: a double2 running value (products with Annex G recovery), each output
    // rounded once.
    const bool c64 = dt == PK_DTYPE_C64, prod = op == PK_OP_CUMPROD;
    const std::string v = prod ? "pk_cprod_st(acc)" : "pk_csum_st(acc)";
    std::string src =
        prelude(caps) + "#pragma OPENCL FP_CONTRACT OFF\n" + special_helpers(special_helper_bits(op, dt)) + kLines;
    src += "__kernel void pk_scan(__global const " + T + " *in, const long in_off, __global " + T +
           " *out, const long out_off, __global long *idx, const long idx_off, " + kLineParams +
           ") {\n  const ulong o = get_global_id(0);\n  if (o >= n_lines) return;\n"
           "  long bi = in_off, bo = out_off, bx = idx_off;\n  pk_line(o, sh, r, s0, s1, s2, &bi, &bo, &bx);\n"
           "  " +
           std::string(prod ? "pk_cprod acc = pk_cprod_one()" : "pk_csum acc = pk_csum_zero()") +
           ";\n  for (long i = 0; i < len; ++i) {\n    const double2 x = " +
           (c64 ? "convert_double2(in[bi + i * t0])" : "in[bi + i * t0]") +
           ";\n    acc = " + (prod ? "pk_cprod_mul(acc, pk_cprod_ld(x))" : "pk_csum_add(acc, pk_csum_ld(x))") +
           ";\n    out[bo + i * t1] = " + (c64 ? "convert_float2(" + v + ")" : v) + ";\n  }\n}\n";
    return src;
  }
  std::string src = prelude(caps) + kLines + order_helpers(dt);
  if ((op == PK_OP_CUMSUM || op == PK_OP_CUMPROD) && is_flt(dt) && caps.fp64) src += kFloatAccumulators;
  src += "#define PK_ST(v) (" + store_expr(dt, "(" + CT + ")(v)") + ")\n";
  src += "__kernel void pk_scan(__global const " + T + " *in, const long in_off, __global " + T +
         " *out, const long out_off, __global long *idx, const long idx_off, " + kLineParams +
         ") {\n  const ulong o = get_global_id(0);\n  if (o >= n_lines) return;\n"
         "  long bi = in_off, bo = out_off, bx = idx_off;\n  pk_line(o, sh, r, s0, s1, s2, &bi, &bo, &bx);\n";
  const bool flt = is_flt(dt);
  const std::string W = flt ? (caps.fp64 ? "double" : CT) : "ulong";
  if ((op == PK_OP_CUMSUM || op == PK_OP_CUMPROD) && flt && caps.fp64) {
    // The running value as the sum (prod) reductions accumulate it (kFloatAccumulators); f32 and narrower sums
    // in double cannot overflow, so only f64 sums need the scaled copy, but one accumulator serves all.
    const bool prod = op == PK_OP_CUMPROD;
    src += std::string("  double4 acc = ") + (prod ? "(double4)(0.5, 1.0, 0.0, 0.0)" : "(double4)(0.0)") +
           ";\n  for (long i = 0; i < len; ++i) {\n    const double x = (double)PK_LDC(in, bi + i * t0);\n" +
           (prod ? "    acc = pk_fprod_mul(acc, pk_fprod_ld(x));\n    out[bo + i * t1] = PK_ST(pk_fprod_st(acc));\n"
                 : "    acc += pk_fsum_ld(x);\n    out[bo + i * t1] = PK_ST(pk_fsum_st(acc, 1.0));\n") +
           "  }\n}\n";
  } else if (op == PK_OP_CUMSUM && flt) {
    // The finite terms' running sum, with flags of the non-finite terms seen (1: +inf, 2: -inf, 4: NaN): a sum
    // whose finite terms overflow still meets a later infinity as exact arithmetic does (DBL_MAX + DBL_MAX - inf
    // is -inf, not NaN).
    src += "  " + W +
           " acc = 0;\n  int fl = 0;\n  for (long i = 0; i < len; ++i) {\n"
           "    const " +
           W + " x = (" + W +
           ")PK_LDC(in, bi + i * t0);\n"
           "    if (isfinite(x)) acc += x; else fl |= isnan(x) ? 4 : (x > 0 ? 1 : 2);\n"
           "    const " +
           W + " v = fl == 0 ? acc : ((fl & 4) || fl == 3) ? (" + W + ")NAN : (fl == 1 ? (" + W + ")INFINITY : -(" + W +
           ")INFINITY);\n"
           "    out[bo + i * t1] = PK_ST(v);\n  }\n}\n";
  } else if (op == PK_OP_CUMSUM || op == PK_OP_CUMPROD) {
    const bool prod = op == PK_OP_CUMPROD;
    src += "  " + W + " acc = " + (prod ? "1" : "0") +
           ";\n  for (long i = 0; i < len; ++i) {\n"
           "    acc = acc " +
           (prod ? "*" : "+") + " (" + W + ")" + (flt ? "" : "(long)") +
           "PK_LDC(in, bi + i * t0);\n"
           "    out[bo + i * t1] = PK_ST(acc);\n  }\n}\n";
  } else if (op == PK_OP_CUMMAX || op == PK_OP_CUMMIN) {
    // The last occurrence of the extremum; NaN is the extremum once seen and a later NaN moves the index.
    const std::string cmp = op == PK_OP_CUMMAX ? ">=" : "<=";
    src += "  " + CT + " m = 0;\n  " + T +
           " raw = 0;\n  long mi = 0;\n  for (long i = 0; i < len; ++i) {\n"
           "    const " +
           T + " s = in[bi + i * t0];\n    const " + CT + " x = PK_LDC(in, bi + i * t0);\n";
    if (flt) {
      src += "    if (i == 0 || isnan(x) || (!isnan(m) && x " + cmp + " m)) { m = x; raw = s; mi = i; }\n";
    } else {
      src += "    if (i == 0 || x " + cmp + " m) { m = x; raw = s; mi = i; }\n";
    }
    src += "    out[bo + i * t1] = raw;\n    idx[bx + i * t2] = mi;\n  }\n}\n";
  } else {  // logcumsumexp: log(exp(a) + exp(b)) with the larger term factored out
    src += "  " + W +
           " acc = -INFINITY;\n  for (long i = 0; i < len; ++i) {\n"
           "    const " +
           W + " x = (" + W +
           ")PK_LDC(in, bi + i * t0);\n"
           "    if (isnan(acc) || isnan(x)) acc = NAN;\n    else {\n"
           "      const " +
           W +
           " m = max(acc, x);\n"
           "      if (!isinf(m)) acc = m + log1p(exp(min(acc, x) - m)); else acc = m;\n    }\n"
           "    out[bo + i * t1] = PK_ST(acc);\n  }\n}\n";
  }
  return src;
}

std::string gen_sort(int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const std::string T = ty.st, CT = ty.ct;
  std::string src = prelude(caps) + kLines + order_helpers(dt);
  // One work-item per element: its rank in the line's order (ties by position, so the order is stable) is where
  // it lands; topk keeps ranks below k. The stored element is copied as is (NaN payloads, -0 survive).
  src += "__kernel void pk_sort(__global const " + T + " *in, const long in_off, __global " + T +
         " *vals, const long v_off, __global long *inds, const long x_off, " + kLineParams +
         ", const long keep, const int desc) {\n"
         "  const ulong g = get_global_id(0);\n  if (g >= n_lines * (ulong)len) return;\n"
         "  const ulong o = g / (ulong)len;\n  const long i = (long)(g % (ulong)len);\n"
         "  long bi = in_off, bv = v_off, bx = x_off;\n  pk_line(o, sh, r, s0, s1, s2, &bi, &bv, &bx);\n"
         "  const " +
         CT +
         " xi = PK_LDC(in, bi + i * t0);\n  long rank = 0;\n"
         "  for (long j = 0; j < len; ++j) {\n    if (j == i) continue;\n"
         "    const " +
         CT +
         " xj = PK_LDC(in, bi + j * t0);\n"
         "    const int jb = desc ? pk_lt(xi, xj) : pk_lt(xj, xi);\n"
         "    const int ib = desc ? pk_lt(xj, xi) : pk_lt(xi, xj);\n"
         "    if (jb || (!ib && j < i)) ++rank;\n  }\n"
         "  if (rank < keep) {\n    vals[bv + rank * t1] = in[bi + i * t0];\n    inds[bx + rank * t2] = i;\n  }\n}\n";
  // Lines longer than a run: runs of `run` elements sorted as above into dense line-major scratch (kv, ki), then
  // merge passes doubling the run width: an element's place in the merged pair is its place in its own run plus
  // the number of the other run's elements that go before it, found by binary search (those of the right run
  // strictly before it, of the left run not after it: ties keep the left run first, so the sort stays stable).
  // O(n log^2 n) work in log2(len / run) passes.
  src +=
      "inline int pk_before(" + CT + " x, " + CT + " y, const int desc) { return desc ? pk_lt(y, x) : pk_lt(x, y); }\n";
  src += "__kernel void pk_sort_runs(__global const " + T + " *in, const long in_off, __global " + T +
         " *kv, __global long *ki, " + kLineParams +
         ", const long run, const int desc) {\n"
         "  const ulong g = get_global_id(0);\n  if (g >= n_lines * (ulong)len) return;\n"
         "  const ulong o = g / (ulong)len;\n  const long i = (long)(g % (ulong)len);\n"
         "  long bi = in_off, b1 = 0, b2 = 0;\n  pk_line(o, sh, r, s0, s1, s2, &bi, &b1, &b2);\n"
         "  const long lo = i - i % run, hi = min(lo + run, len);\n"
         "  const " +
         CT +
         " xi = PK_LDC(in, bi + i * t0);\n  long rank = 0;\n"
         "  for (long j = lo; j < hi; ++j) {\n"
         "    const " +
         CT +
         " xj = PK_LDC(in, bi + j * t0);\n"
         "    if (pk_before(xj, xi, desc) || (j < i && !pk_before(xi, xj, desc))) ++rank;\n  }\n"
         "  const ulong d = o * (ulong)len + (ulong)(lo + rank);\n  kv[d] = in[bi + i * t0];\n  ki[d] = i;\n}\n";
  src += "__kernel void pk_sort_merge(__global const " + T + " *kv, __global const long *ki, __global " + T +
         " *ov, __global long *oi, const ulong n_lines, const long len, const long w, const int desc) {\n"
         "  const ulong g = get_global_id(0);\n  if (g >= n_lines * (ulong)len) return;\n"
         "  const ulong base = g - g % (ulong)len;\n  const long p = (long)(g % (ulong)len);\n"
         "  const long a0 = p - p % (2 * w), b0 = min(a0 + w, len), b1 = min(a0 + 2 * w, len);\n"
         "  const int left = p < b0;\n"
         "  const long lo0 = left ? b0 : a0, hi0 = left ? b1 : b0;\n"
         "  const " +
         CT +
         " x = PK_LDC(kv, base + p);\n"
         "  long lo = lo0, hi = hi0;\n"
         "  while (lo < hi) {\n    const long mid = lo + (hi - lo) / 2;\n"
         "    const " +
         CT +
         " y = PK_LDC(kv, base + mid);\n"
         "    if (left ? pk_before(y, x, desc) : !pk_before(x, y, desc)) lo = mid + 1; else hi = mid;\n  }\n"
         "  const ulong d = base + (ulong)(a0 + (p - (left ? a0 : b0)) + (lo - lo0));\n"
         "  ov[d] = kv[base + p];\n  oi[d] = ki[base + p];\n}\n";
  src +=
      "__kernel void pk_sort_out(__global const " + T + " *kv, __global const long *ki, __global " + T +
      " *vals, const long v_off, __global long *inds, const long x_off, " + kLineParams +
      ", const long keep) {\n"
      "  const ulong g = get_global_id(0);\n  if (g >= n_lines * (ulong)keep) return;\n"
      "  const ulong o = g / (ulong)keep;\n  const long i = (long)(g % (ulong)keep);\n"
      "  long b0 = 0, bv = v_off, bx = x_off;\n  pk_line(o, sh, r, s0, s1, s2, &b0, &bv, &bx);\n"
      "  vals[bv + i * t1] = kv[o * (ulong)len + (ulong)i];\n  inds[bx + i * t2] = ki[o * (ulong)len + (ulong)i];\n}\n";
  // searchsorted: the first position whose element is not below v (left) or is above v (right).
  src += "__kernel void pk_search(__global const " + T +
         " *seq, const long q_off, const long q_st, const long q_n,\n"
         "    __global const " +
         T +
         " *vals, const long v_off, const pk_dims sv, __global long *out, const long o_off,\n"
         "    const pk_dims so, const pk_dims shape, const int rank, const int right, const ulong n) {\n"
         "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n"
         "  long vo = v_off, oo = o_off;\n  ulong rest = i;\n"
         "  for (int d = rank - 1; d >= 0; --d) {\n"
         "    const long x = (long)(rest % (ulong)shape.v[d]);\n    rest /= (ulong)shape.v[d];\n"
         "    vo += x * sv.v[d];\n    oo += x * so.v[d];\n  }\n"
         "  const " +
         CT +
         " v = PK_LDC(vals, vo);\n  long first = 0, count = q_n;\n"
         "  while (count > 0) {\n    const long hh = count / 2, mid = first + hh;\n"
         "    const " +
         CT +
         " x = PK_LDC(seq, q_off + mid * q_st);\n"
         "    if (right ? !pk_lt(v, x) : pk_lt(x, v)) { first = mid + 1; count -= hh + 1; } else count = hh;\n"
         "  }\n  out[oo] = first;\n}\n";
  return src;
}

std::string gen_var(int32_t dt, const DeviceCaps &caps) {
  const bool cx = is_cx(dt);
  // Complex inputs: values and means are double2 (vector arithmetic is per part), |d|^2 sums both parts' squares,
  // and the output is real.
  const int32_t odt = cx ? part_dt(dt) : dt;
  const ClType &ty = cl_type(dt), &oty = cl_type(odt);
  const std::string T = ty.st, OT = oty.st, W = caps.fp64 ? "double" : "float", V = cx ? "double2" : W;
  std::string src = prelude(caps);
  if (cx) {
    src += "#pragma OPENCL FP_CONTRACT OFF\n";
    src += std::string("#define PK_LD(p, e) (") + (dt == PK_DTYPE_C64 ? "convert_double2(p[e])" : "(p[e])") + ")\n";
    src += "#define PK_INF(v) (isinf((v).x) || isinf((v).y))\n#define PK_SQ(d) ((d).x * (d).x + (d).y * (d).y)\n";
  } else {
    src += "#define PK_LD(p, e) ((" + W + ")(" + load_expr(dt, "p[e]") + "))\n";
    src += "#define PK_INF(v) isinf(v)\n#define PK_SQ(d) ((d) * (d))\n";
  }
  src += "#define PK_ST(v) (" + store_expr(odt, std::string("(") + oty.ct + ")(v)") + ")\n";
  src += R"CL(
inline long pk_red_off(ulong j, const pk_dims rs, const pk_dims rst, const int nred) {
  long off = 0;
  for (int d = nred - 1; d >= 0; --d) { off += (long)(j % (ulong)rs.v[d]) * rst.v[d]; j /= (ulong)rs.v[d]; }
  return off;
}
)CL";
  // Two-pass variance per output: the mean (corrected by the mean of the residuals, so a constant row gives
  // exactly 0), then the squared deviations; divisor n - correction, NaN when it is not positive.
  src += "__kernel void pk_var(__global const " + T +
         " *in, const ulong in_off, const pk_dims ks, const pk_dims kin, const pk_dims kout, const int nkept,\n"
         "    const pk_dims rs, const pk_dims rst, const int nred, const ulong n_out, const ulong n_red,\n"
         "    __global " +
         OT + " *out, const ulong out_off, const " + W +
         " correction) {\n"
         "  const ulong o = get_global_id(0);\n  if (o >= n_out) return;\n"
         "  long ib = (long)in_off, ob = (long)out_off;\n  ulong rest = o;\n"
         "  for (int d = nkept - 1; d >= 0; --d) {\n    const long x = (long)(rest % (ulong)ks.v[d]);\n"
         "    rest /= (ulong)ks.v[d];\n    ib += x * kin.v[d];\n    ob += x * kout.v[d];\n  }\n"
         "  const " +
         W + " n = (" + W + ")n_red;\n  " + V + " s = 0, c = 0;\n  " + W +
         " ss = 0, scale = 1;\n"
         "  for (ulong j = 0; j < n_red; ++j) s += PK_LD(in, ib + pk_red_off(j, rs, rst, nred));\n"
         // A sum of finite values that overflows is redone on values scaled by a power of two (exact) and the
         // variance scaled back after the division: otherwise the mean is inf and every deviation NaN.
         "  if (PK_INF(s)) {\n    scale = " +
         std::string(caps.fp64 ? "0x1p-600" : "0x1p-64f") +
         ";\n    s = 0;\n"
         "    for (ulong j = 0; j < n_red; ++j) s += PK_LD(in, ib + pk_red_off(j, rs, rst, nred)) * scale;\n  }\n"
         "  " +
         V +
         " mean = s / n;\n"
         "  for (ulong j = 0; j < n_red; ++j) c += PK_LD(in, ib + pk_red_off(j, rs, rst, nred)) * scale - mean;\n"
         "  mean += c / n;\n"
         "  for (ulong j = 0; j < n_red; ++j) {\n    const " +
         V +
         " d = PK_LD(in, ib + pk_red_off(j, rs, rst, nred)) * scale - mean;\n    ss += PK_SQ(d);\n  }\n"
         "  const " +
         W +
         " div = n - correction, unscale = 1 / scale;\n"
         "  out[ob] = PK_ST(div > 0 ? ss / div * unscale * unscale : (" +
         W + ")NAN);\n}\n";
  return src;
}

// --- dot_general, convolution -----------------------------------------------------------------------------------

std::string gen_dot_general(int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const bool flt = is_flt(dt), cx = is_cx(dt);
  const std::string ACC = cx ? "double2" : flt ? ty.ct : "ulong", T = ty.st;
  std::string src;
  if (cx) {
    // A non-finite sum is redone without intermediate overflow (pk_cdot) along one contracted axis.
    src = complex_dot_prelude(dt, caps) + "inline double2 pk_cfix(double2 v, __global const " + T +
          " *A, long ia, long sa, __global const " + T +
          " *B, long ib, long sb, long K) {\n"
          "  if (isfinite(v.x) && isfinite(v.y)) return v;\n  pk_cdot d;\n  pk_cdot_init(&d);\n"
          "  for (long k = 0; k < K; ++k) pk_cdot_add(&d, PK_LD(A, ia + k * sa), PK_LD(B, ib + k * sb));\n"
          "  return pk_cdot_value(&d);\n}\n#define PK_FIX(v, A, ia, sa, B, ib, sb, K) pk_cfix(v, A, ia, sa, B, ib, sb, "
          "K)\n";
  } else {
    src = prelude(caps);
    src += "#define PK_LD(p, e) (" + std::string(flt ? "" : "(ulong)(long)") + "(" + load_expr(dt, "p[e]") + "))\n";
    src += "#define PK_ST(v) (" + store_expr(dt, std::string("(") + ty.ct + ")(v)") + ")\n";
    src += flt ? careful_dot(dt, caps) : "#define PK_FIX(v, A, ia, sa, B, ib, sb, K) (v)\n";
  }
  const std::string MAC =
      cx ? "    acc = pk_cmac(acc, PK_LD(A, ja), PK_LD(B, jb));\n" : "    acc += PK_LD(A, ja) * PK_LD(B, jb);\n";
  // One work-item per output element (batch, lhs free, rhs free axes); the contracted axes are walked as one
  // row-major index. With one contracted axis, a non-finite sum is recomputed without intermediate overflow.
  src +=
      "__kernel void pk_dot_general(__global const " + T + " *A, const long a_off, __global const " + T +
      " *B, const long b_off, __global " + T +
      " *C, const long c_off,\n"
      "    const pk_dims osh, const int orank, const pk_dims oa, const pk_dims ob, const pk_dims oc,\n"
      "    const pk_dims csh, const int crank, const pk_dims ca, const pk_dims cb, const ulong nc, const ulong n) {\n"
      "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n"
      "  long ia = a_off, ib = b_off, ic = c_off;\n  ulong rest = i;\n"
      "  for (int d = orank - 1; d >= 0; --d) {\n"
      "    const long x = (long)(rest % (ulong)osh.v[d]);\n    rest /= (ulong)osh.v[d];\n"
      "    ia += x * oa.v[d];\n    ib += x * ob.v[d];\n    ic += x * oc.v[d];\n  }\n"
      "  " +
      ACC +
      " acc = 0;\n"
      "  for (ulong j = 0; j < nc; ++j) {\n    long ja = ia, jb = ib;\n    ulong r = j;\n"
      "    for (int d = crank - 1; d >= 0; --d) {\n"
      "      const long x = (long)(r % (ulong)csh.v[d]);\n      r /= (ulong)csh.v[d];\n"
      "      ja += x * ca.v[d];\n      jb += x * cb.v[d];\n    }\n" +
      MAC +
      "  }\n"
      "  if (crank == 1) acc = PK_FIX(acc, A, ia, ca.v[0], B, ib, cb.v[0], (long)nc);\n"
      "  C[ic] = PK_ST(acc);\n}\n";
  return src;
}

std::string gen_conv(int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  const std::string T = ty.st, ACC = ty.ct;
  const std::string W = (caps.fp64 && dt != PK_DTYPE_F64) ? "double" : ty.ct;
  const uint32_t R = kMmTile / kMmLocal;
  std::string src = prelude(caps);
  src += "#define TM " + std::to_string(kMmTile) + "\n#define TK " + std::to_string(kMmTileK) + "\n#define LS " +
         std::to_string(kMmLocal) + "\n#define R " + std::to_string(R) + "\n";
  src += "#define PK_LD(p, e) (" + load_expr(dt, "p[e]") + ")\n";
  src += "#define PK_ST(v) (" + store_expr(dt, std::string("(") + ty.ct + ")(v)") + ")\n";
  // Implicit GEMM per group: A = weights [Mg x Cg*KS], B = the input patches [Cg*KS x NB*OS] gathered on the fly
  // (padding reads as zero), C = the output. The geometry travels in one struct.
  src += R"CL(
typedef struct {
  long xst[8], xsh[8], wst[8], ksh[8], yst[8], ysh[8], stride[8], padl[8], dil[8];
  long S, Cg, Mg, NB, KS, OS;
} pk_conv_geom;
inline long pk_w_off(const pk_conv_geom *g, long grp, long m, long k) {
  const long ci = k / g->KS;
  long kr = k % g->KS, off = (grp * g->Mg + m) * g->wst[0] + ci * g->wst[1];
  for (int d = (int)g->S - 1; d >= 0; --d) { off += (kr % g->ksh[d]) * g->wst[2 + d]; kr /= g->ksh[d]; }
  return off;
}
// The input element patch row k of output column n reads, or PK_PAD inside the padding (offsets themselves may
// be negative: strides can be).
#define PK_PAD LONG_MIN
inline long pk_x_off(const pk_conv_geom *g, long grp, long k, long n) {
  const long ci = k / g->KS, nb = n / g->OS;
  long kr = k % g->KS, orr = n % g->OS, off = nb * g->xst[0] + (grp * g->Cg + ci) * g->xst[1];
  for (int d = (int)g->S - 1; d >= 0; --d) {
    const long kc = kr % g->ksh[d], oc = orr % g->ysh[d];
    kr /= g->ksh[d];
    orr /= g->ysh[d];
    const long ic = oc * g->stride[d] - g->padl[d] + kc * g->dil[d];
    if (ic < 0 || ic >= g->xsh[d]) return PK_PAD;
    off += ic * g->xst[2 + d];
  }
  return off;
}
inline long pk_y_off(const pk_conv_geom *g, long grp, long m, long n) {
  const long nb = n / g->OS;
  long orr = n % g->OS, off = nb * g->yst[0] + (grp * g->Mg + m) * g->yst[1];
  for (int d = (int)g->S - 1; d >= 0; --d) { off += (orr % g->ysh[d]) * g->yst[2 + d]; orr /= g->ysh[d]; }
  return off;
}
)CL";
  // The no-overflow recomputation of one output (see careful_dot).
  src += "inline " + ACC + " pk_careful_conv(__global const " + T + " *X, long x_off, __global const " + T +
         " *Wt, long w_off, const pk_conv_geom *g, long grp, long m, long n, long K) {\n"
         "  " +
         W +
         " m_ = 0;\n  int e = 0, nan = 0, pinf = 0, ninf = 0;\n"
         "  for (long k = 0; k < K; ++k) {\n    const long xo = pk_x_off(g, grp, k, n);\n"
         "    if (xo == PK_PAD) continue;  // padding contributes no product (as the reference loops skip it)\n"
         "    const " +
         W + " a = (" + W + ")PK_LD(Wt, w_off + pk_w_off(g, grp, m, k)), b = (" + W +
         ")PK_LD(X, x_off + xo);\n"
         "    if (isnan(a) || isnan(b)) { nan = 1; continue; }\n"
         "    if (isinf(a) || isinf(b)) {\n"
         "      if (a == 0 || b == 0) nan = 1; else if ((a < 0) != (b < 0)) ninf = 1; else pinf = 1;\n"
         "      continue;\n    }\n"
         "    int ea, eb;\n    const " +
         W +
         " p = frexp(a, &ea) * frexp(b, &eb);\n"
         "    if (p == 0) continue;\n    const int ep = ea + eb;\n"
         "    if (m_ == 0) { m_ = p; e = ep; } else if (ep > e) { m_ = ldexp(m_, e - ep) + p; e = ep; } else {\n"
         "      m_ += ldexp(p, ep - e);\n    }\n"
         "    int r;\n    m_ = frexp(m_, &r);\n    e += r;\n  }\n"
         "  if (nan || (pinf && ninf)) return (" +
         ACC +
         ")NAN;\n"
         "  if (pinf) return (" +
         ACC + ")INFINITY;\n  if (ninf) return -(" + ACC +
         ")INFINITY;\n"
         "  return (" +
         ACC + ")ldexp(m_, e);\n}\n";
  src +=
      "__kernel __attribute__((reqd_work_group_size(LS, LS, 1)))\n"
      "void pk_conv(__global const " +
      T + " *X, const ulong x_off, __global const " + T + " *Wt, const ulong w_off,\n    __global " + T +
      " *Y, const ulong y_off, const pk_conv_geom geom) {\n"
      "  __local " +
      ACC + " As[TK][TM];\n  __local " + ACC + " Bs[TK][TM];\n";
  src += R"CL(
  const pk_conv_geom *g = &geom;
  const int tx = get_local_id(0), ty = get_local_id(1);
  const long n0 = (long)get_group_id(0) * TM, m0 = (long)get_group_id(1) * TM;
  const long grp = get_global_id(2);
  const long M = g->Mg, N = g->NB * g->OS, K = g->Cg * g->KS;
  const int lid = ty * LS + tx;
)CL";
  src += "  " + ACC + " acc[R][R];\n  for (int i = 0; i < R; ++i) for (int j = 0; j < R; ++j) acc[i][j] = 0;\n";
  src += R"CL(
  for (long k0 = 0; k0 < K; k0 += TK) {
    for (int e = lid; e < TM * TK; e += LS * LS) {
      const int mm = e / TK, kk = e % TK;
      const long gm = m0 + mm, gk = k0 + kk;
      As[kk][mm] = (gm < M && gk < K) ? PK_LD(Wt, (long)w_off + pk_w_off(g, grp, gm, gk)) : 0;
    }
    for (int e = lid; e < TK * TM; e += LS * LS) {
      const int kk = e / TM, nn = e % TM;
      const long gk = k0 + kk, gn = n0 + nn;
      long xo = PK_PAD;
      if (gk < K && gn < N) xo = pk_x_off(g, grp, gk, gn);
      Bs[kk][nn] = xo != PK_PAD ? PK_LD(X, (long)x_off + xo) : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TK; ++kk) {
      for (int i = 0; i < R; ++i) {
        for (int j = 0; j < R; ++j) acc[i][j] += As[kk][ty + LS * i] * Bs[kk][tx + LS * j];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < R; ++i) {
    const long gm = m0 + ty + LS * i;
    if (gm >= M) continue;
    for (int j = 0; j < R; ++j) {
      const long gn = n0 + tx + LS * j;
      if (gn >= N) continue;
      const ACC_T v = isfinite(acc[i][j]) ? acc[i][j] : pk_careful_conv(X, (long)x_off, Wt, (long)w_off, g, grp, gm, gn, K);
      Y[(long)y_off + pk_y_off(g, grp, gm, gn)] = PK_ST(v);
    }
  }
}
)CL";
  src = "#define ACC_T " + ACC + "\n" + src;
  return src;
}

// --- rng ----------------------------------------------------------------------------------------------------------

std::string gen_philox(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  // Each f64 operation rounds on its own, as the table specifies (no contraction into fma).
  std::string src = prelude(caps) + "#pragma OPENCL FP_CONTRACT OFF\n";
  // Philox4x32-10 (Random123's reference): block c = offset + i / 4 with key = seed; element i takes word i % 4.
  src += R"CL(
inline uint pk_philox_word(ulong offset, ulong seed, ulong i, uint *w4) {
  const ulong c = offset + i / 4;
  uint c0 = (uint)c, c1 = (uint)(c >> 32), c2 = 0, c3 = 0, k0 = (uint)seed, k1 = (uint)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const ulong p0 = (ulong)0xD2511F53u * c0, p1 = (ulong)0xCD9E8D57u * c2;
    const uint n0 = (uint)(p1 >> 32) ^ c1 ^ k0, n2 = (uint)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint)p1;
    c3 = (uint)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  w4[0] = c0; w4[1] = c1; w4[2] = c2; w4[3] = c3;
  return w4[i % 4];
}
)CL";
  std::string value;
  if (op == PK_OP_PHILOX_RANDINT) {
    value = "  const ulong v = (ulong)ilow + (ulong)w % ispan;\n  p[o] = (" + std::string(ty.st) + ")(long)v;\n";
  } else if (op == PK_OP_PHILOX_UNIFORM) {
    // low + span * u in f64, then rounded toward -inf to the dtype.
    value = "  const double v = low + span * ldexp((double)w, -32);\n";
    if (dt == PK_DTYPE_F64) {
      value += "  p[o] = v;\n";
    } else if (dt == PK_DTYPE_F32) {
      value += "  p[o] = convert_float_rtn(v);\n";
    } else {
      const char *fmt = dt == PK_DTYPE_BF16 ? "bf16" : dt == PK_DTYPE_F8E4M3FN ? "e4m3" : "e5m2";
      value += std::string("  ") + ty.st + " b = pk_f64_to_" + fmt + "(v);\n";
      value += "  if ((double)" + load_expr(dt, "b") + " > v) b = signbit(" + load_expr(dt, "b") + ") ? (" + ty.st +
               ")(b + 1) : (" + ty.st + ")(b - 1);\n  p[o] = b;\n";
    }
  } else {
    // Box-Muller on word pairs: u1 = (w + 1) 2^-32 in (0, 1], u2 = w' 2^-32; 2 pi u2 reduced by quadrant.
    value =
        "  const uint pair = (uint)(i % 4) / 2;\n"
        "  const double u1 = ldexp((double)w4[2 * pair] + 1.0, -32), u2 = ldexp((double)w4[2 * pair + 1], -32);\n"
        "  const double ln_u1 = u1 < 0.5 ? log(u1) : log1p(u1 - 1.0);\n"
        "  const double rr = sqrt(-2.0 * ln_u1);\n"
        "  const double nq = rint(4.0 * u2), f = u2 - nq / 4.0, th = 6.283185307179586 * f;\n"
        "  const double sf = sin(th), cf = cos(th);\n  double s, co;\n"
        "  switch ((int)nq & 3) {\n    case 0: s = sf; co = cf; break;\n    case 1: s = cf; co = -sf; break;\n"
        "    case 2: s = -sf; co = -cf; break;\n    default: s = -cf; co = sf; break;\n  }\n"
        "  const double z = rr * ((i % 2) == 0 ? co : s);\n"
        "  const double v = fma(sd, z, mean);\n";
    if (dt == PK_DTYPE_F64) {
      value += "  p[o] = v;\n";
    } else if (dt == PK_DTYPE_F32) {
      value += "  p[o] = convert_float(v);\n";
    } else {
      const char *fmt = dt == PK_DTYPE_BF16 ? "bf16" : dt == PK_DTYPE_F8E4M3FN ? "e4m3" : "e5m2";
      value += std::string("  p[o] = pk_f64_to_") + fmt + "(v);\n";
    }
  }
  src += std::string("__kernel void pk_philox(__global ") + ty.st +
         " *p, const long off, const pk_dims st, const pk_dims shape, const int rank, const ulong n,\n"
         "    const ulong offset, const ulong seed, const double low, const double span, const long ilow,\n"
         "    const ulong ispan, const double mean, const double sd) {\n"
         "  const ulong i = get_global_id(0);\n  if (i >= n) return;\n  long o = off;\n  ulong rest = i;\n"
         "  for (int d = rank - 1; d >= 0; --d) { o += (long)(rest % (ulong)shape.v[d]) * st.v[d]; rest /= "
         "(ulong)shape.v[d]; }\n"
         "  uint w4[4];\n  const uint w = pk_philox_word(offset, seed, i, w4);\n";
  src += value + "}\n";
  return src;
}

// --- host-side constants ----------------------------------------------------------------------------------------

uint64_t value_bits(double v, int32_t dt) {
  auto sat_int = [&](double lo, double hi) -> int64_t {
    if (std::isnan(v)) return 0;
    const double t = std::trunc(v);
    if (t <= lo) return static_cast<int64_t>(lo);
    if (t >= hi) return dt == PK_DTYPE_I64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi);
    return static_cast<int64_t>(t);
  };
  switch (dt) {
    case PK_DTYPE_BOOL:
      return v != 0.0 ? 1u : 0u;  // NaN != 0
    case PK_DTYPE_U8:
      return static_cast<uint64_t>(sat_int(0, 255)) & 0xffu;
    case PK_DTYPE_I8:
      return static_cast<uint64_t>(sat_int(-128, 127)) & 0xffu;
    case PK_DTYPE_I16:
      return static_cast<uint64_t>(sat_int(-32768, 32767)) & 0xffffu;
    case PK_DTYPE_I32:
      return static_cast<uint64_t>(sat_int(-2147483648.0, 2147483647.0)) & 0xffffffffu;
    case PK_DTYPE_I64:
      return static_cast<uint64_t>(sat_int(-9223372036854775808.0, 9223372036854775807.0));
    case PK_DTYPE_BF16:
      return kit::bfloat16(v).bits;
    case PK_DTYPE_F8E4M3FN:
      return kit::f8e4m3fn(v).bits;
    case PK_DTYPE_F8E5M2:
      return kit::f8e5m2(v).bits;
    case PK_DTYPE_F32:
    case PK_DTYPE_C64: {  // complex: the real part's bits (the imaginary part is +0)
      const float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case PK_DTYPE_F64:
    case PK_DTYPE_C128: {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      return b;
    }
    default:
      return 0;
  }
}

uint64_t extreme_bits(int32_t dt, bool largest) {
  switch (dt) {
    case PK_DTYPE_BOOL:
      return largest ? 1u : 0u;
    case PK_DTYPE_U8:
      return largest ? 0xffu : 0u;
    case PK_DTYPE_I8:
      return largest ? 0x7fu : 0x80u;
    case PK_DTYPE_I16:
      return largest ? 0x7fffu : 0x8000u;
    case PK_DTYPE_I32:
      return largest ? 0x7fffffffu : 0x80000000u;
    case PK_DTYPE_I64:
      return largest ? 0x7fffffffffffffffull : 0x8000000000000000ull;
    case PK_DTYPE_BF16:
      return largest ? 0x7f7fu : 0xff7fu;
    case PK_DTYPE_F32:
    case PK_DTYPE_C64:  // complex: the real part's bits (the imaginary part is +0), as the CPU backend answers
      return largest ? 0x7f7fffffu : 0xff7fffffu;
    case PK_DTYPE_F64:
    case PK_DTYPE_C128:
      return largest ? 0x7fefffffffffffffull : 0xffefffffffffffffull;
    case PK_DTYPE_F8E4M3FN:
      return largest ? 0x7eu : 0xfeu;
    case PK_DTYPE_F8E5M2:
      return largest ? 0x7bu : 0xfbu;
    default:
      return 0;
  }
}

}  // namespace pk::ocl
