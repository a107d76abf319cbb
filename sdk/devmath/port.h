/* port.h — what the device-math sources (dd.h and the function files) need from their language, for each of the three
   ways they are compiled:
     - C++ (the CPU backend, through devmath.hpp): the std:: functions, inside namespace pk::devmath;
     - OpenCL C (the OpenCL backend embeds these files' text in its programs): the OpenCL builtins;
     - C99 to LLVM bitcode (devmath.c, for the code generator's NVPTX and host targets): compiler builtins that
       become LLVM intrinsics, and for the rest external pk_dm_* functions that the code generator defines with its
       own IR math when it links the bitcode into a kernel (NVPTX has no libm, so the bitcode may not call one).
   The sources use only these names, plain double arithmetic (evaluated without contraction: the double-double
   steps rely on every product and sum being rounded once), unsigned 32- and 64-bit integers (PK_DM_U32, PK_DM_U64)
   and the fixed-width control flow all three accept.
   No include guard and no #include: the OpenCL backend pastes the text into a program, the other two consumers
   include each file once, in order. */

#if defined(__OPENCL_C_VERSION__)
/* OpenCL C: builtins of the same names; the program is built with FP_CONTRACT OFF. */
#define PK_DM_FN
#define PK_DM_SLOW_FN
#define PK_DM_CONST __constant
#define PK_DM_INF ((double)INFINITY) /* double, so that overloaded builtins (copysign) see one type */
#define PK_DM_NAN ((double)NAN)
#define PK_DM_U64 ulong
#define PK_DM_U32 uint
#define pk_dm_exp exp
#define pk_dm_expm1 expm1
#define pk_dm_log log
#define pk_dm_log1p log1p
#define pk_dm_log2 log2
#define pk_dm_pow pow
#define pk_dm_erf erf
#define pk_dm_erfc erfc
#define pk_dm_sin sin
#define pk_dm_cos cos
#define pk_dm_atan2 atan2
#define pk_dm_sqrt sqrt
#define pk_dm_fma fma
#define pk_dm_fabs fabs
#define pk_dm_floor floor
#define pk_dm_ceil ceil
#define pk_dm_rint rint
#define pk_dm_copysign copysign
#define pk_dm_isnan isnan
#define pk_dm_isinf isinf
#define pk_dm_isfinite isfinite
#define pk_dm_signbit signbit
#define pk_dm_bits as_ulong
#define pk_dm_from_bits as_double

#elif defined(__cplusplus)
/* C++: devmath.hpp includes <cmath>, <cstdint>, <cstring> and <limits> first and these files inside namespace
   pk::devmath. */
#define PK_DM_FN inline
#define PK_DM_SLOW_FN inline
#define PK_DM_CONST constexpr
#define PK_DM_INF HUGE_VAL
#define PK_DM_NAN std::numeric_limits<double>::quiet_NaN()
#define PK_DM_U64 unsigned long long
#define PK_DM_U32 std::uint32_t
inline double pk_dm_exp(double x) {
  return std::exp(x);
}
inline double pk_dm_expm1(double x) {
  return std::expm1(x);
}
inline double pk_dm_log(double x) {
  return std::log(x);
}
inline double pk_dm_log1p(double x) {
  return std::log1p(x);
}
inline double pk_dm_log2(double x) {
  return std::log2(x);
}
inline double pk_dm_pow(double x, double y) {
  return std::pow(x, y);
}
inline double pk_dm_erf(double x) {
  return std::erf(x);
}
inline double pk_dm_erfc(double x) {
  return std::erfc(x);
}
inline double pk_dm_sin(double x) {
  return std::sin(x);
}
inline double pk_dm_cos(double x) {
  return std::cos(x);
}
inline double pk_dm_atan2(double y, double x) {
  return std::atan2(y, x);
}
inline double pk_dm_sqrt(double x) {
  return std::sqrt(x);
}
inline double pk_dm_fma(double x, double y, double z) {
  return std::fma(x, y, z);
}
inline double pk_dm_fabs(double x) {
  return std::fabs(x);
}
inline double pk_dm_floor(double x) {
  return std::floor(x);
}
inline double pk_dm_ceil(double x) {
  return std::ceil(x);
}
inline double pk_dm_rint(double x) {
  return std::rint(x);
}
inline double pk_dm_copysign(double x, double y) {
  return std::copysign(x, y);
}
inline bool pk_dm_isnan(double x) {
  return std::isnan(x);
}
inline bool pk_dm_isinf(double x) {
  return std::isinf(x);
}
inline bool pk_dm_isfinite(double x) {
  return std::isfinite(x);
}
inline bool pk_dm_signbit(double x) {
  return std::signbit(x);
}
inline unsigned long long pk_dm_bits(double x) {
  unsigned long long u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline double pk_dm_from_bits(unsigned long long u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

#else
/* C99 for LLVM bitcode (devmath.c, compiled with -fno-math-errno -ffp-contract=off): exact operations as builtins
   (LLVM intrinsics that every target lowers), the transcendental ones as external functions the code generator
   defines (sdk/codegen/emit_devmath.cpp) before it optimizes the kernel. */
#define PK_DM_FN
/* Long, rarely taken functions (complex pow's fixed-point path) stay out of line in the kernel: called, not inlined
   at each of their many call sites. */
#define PK_DM_SLOW_FN __attribute__((noinline))
#define PK_DM_CONST static const
#define PK_DM_INF __builtin_inf()
#define PK_DM_NAN __builtin_nan("")
#define PK_DM_U64 unsigned long long
#define PK_DM_U32 unsigned int
double pk_dm_exp(double x);
double pk_dm_expm1(double x);
double pk_dm_log(double x);
double pk_dm_log1p(double x);
double pk_dm_log2(double x);
double pk_dm_pow(double x, double y);
double pk_dm_erf(double x);
double pk_dm_erfc(double x);
double pk_dm_sin(double x);
double pk_dm_cos(double x);
double pk_dm_atan2(double y, double x);
#define pk_dm_sqrt __builtin_sqrt
#define pk_dm_fma __builtin_fma
#define pk_dm_fabs __builtin_fabs
#define pk_dm_floor __builtin_floor
#define pk_dm_ceil __builtin_ceil
#define pk_dm_rint __builtin_rint
#define pk_dm_copysign __builtin_copysign
#define pk_dm_isnan __builtin_isnan
#define pk_dm_isinf __builtin_isinf
#define pk_dm_isfinite __builtin_isfinite
#define pk_dm_signbit __builtin_signbit
/* The bits of a double and back (a bitcast in IR). */
PK_DM_FN unsigned long long pk_dm_bits(double x) {
  unsigned long long u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u;
}
PK_DM_FN double pk_dm_from_bits(unsigned long long u) {
  double x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
}
#endif
