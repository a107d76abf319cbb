// cl_codegen_reduce.cpp — OpenCL C generation of the ops that reduce or walk along axes: reductions (sum, prod,
// amax, amin, mean, all, any, xor_sum), argmax / argmin, the scans (cumsum, cumprod, cummax, cummin,
// logcumsumexp), sort / topk, searchsorted and var.
#include <cstdio>
#include <cstring>
#include <string>

#include "cl_codegen.hpp"
#include "cl_codegen_internal.hpp"
#include "cl_special.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

meta::Combine reduction_fold(uint32_t op_id) {
  if (op_id == PK_OP_MEAN) return meta::Combine::add;
  const meta::OpInfo *info = meta::find_op(op_id);
  return info != nullptr ? info->reduce.combine : meta::Combine::none;
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

using meta::Combine;

struct RedTypes {
  std::string acc;         // accumulator type
  std::string init;        // identity: an expression of the accumulator type
  std::string combine_fn;  // body of pk_comb(acc a, acc x)
};

// Whether the reduction accumulates as kFloatAccumulators does: f64 sums and means, float products (in double).
bool float_sum_acc(uint32_t op, int32_t dt) {
  return dt == PK_DTYPE_F64 && reduction_fold(op) == Combine::add;
}
bool float_prod_acc(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  return reduction_fold(op) == Combine::mul && is_flt(dt) && caps.fp64;
}

RedTypes red_types(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  const ClType &ty = cl_type(dt);
  RedTypes r;
  const bool flt = is_flt(dt);
  const Combine fold = reduction_fold(op);
  if (fold == Combine::logical_and || fold == Combine::logical_or) {
    r.acc = "uchar";
    r.init = fold == Combine::logical_and ? "(uchar)1" : "(uchar)0";
    r.combine_fn = fold == Combine::logical_and ? "return a & x;" : "return a | x;";
    return r;
  }
  if (fold == Combine::bit_xor) {
    r.acc = "ulong";
    r.init = "(ulong)0";
    r.combine_fn = "return a ^ x;";
    return r;
  }
  const bool prod = fold == Combine::mul;
  if (is_cx(dt) && (fold == Combine::add || prod)) {
    // Complex values accumulate in double2 (c64's sums and products then round once at the end); products with
    // Annex G recovery of infinities.
    // Sums carry flags of non-finite terms and a scaled copy (pk_csum), products a scale (pk_cprod).
    r.acc = prod ? "pk_cprod" : "pk_csum";
    r.init = prod ? "pk_cprod_one()" : "pk_csum_zero()";
    r.combine_fn = prod ? "return pk_cprod_mul(a, x);" : "return pk_csum_add(a, x);";
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
  if (fold == Combine::add || prod) {
    // Integers accumulate modulo 2^64 (ulong), which wraps to their width on the store; floats in double where
    // the device has it (f32 partial sums overflow where the exact result does not), else in their compute type.
    r.acc = flt ? (caps.fp64 ? "double" : ty.ct) : "ulong";
    r.init = "(" + r.acc + ")" + (prod ? "1" : "0");
    r.combine_fn = prod ? "return a * x;" : "return a + x;";
    return r;
  }
  const bool mx = fold == Combine::max;
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

RedCode red_code(uint32_t op, int32_t dt, const DeviceCaps &caps) {
  const RedTypes t = red_types(op, dt, caps);
  RedCode r;
  r.acc = t.acc;
  r.init = t.init;
  r.combine = t.combine_fn;
  r.float_acc = float_sum_acc(op, dt) || float_prod_acc(op, dt, caps);
  r.dt = dt;
  r.op = op;
  return r;
}

const char *float_accumulators() {
  return kFloatAccumulators;
}

std::string RedCode::lift(const std::string &x) const {
  const Combine fold = reduction_fold(op);
  if (fold == Combine::logical_and || fold == Combine::logical_or) return "((uchar)((" + x + ") != 0))";
  if (float_acc) return std::string(fold == Combine::add ? "pk_fsum_ld" : "pk_fprod_ld") + "((double)(" + x + "))";
  return (acc == "ulong" ? "(ulong)(long)" : "(" + acc + ")") + "(" + x + ")";
}

std::string RedCode::finish(const std::string &v, const std::string &n) const {
  const Combine fold = reduction_fold(op);
  if (fold == Combine::logical_and || fold == Combine::logical_or) return "((uchar)(" + v + "))";
  const std::string ct = cl_type(dt).ct;
  if (float_acc) {
    const std::string fin = fold == Combine::add
                                ? "pk_fsum_st(" + v + ", " + (op == PK_OP_MEAN ? "(double)" + n : "1.0") + ")"
                                : "pk_fprod_st(" + v + ")";
    return "(" + ct + ")" + fin;
  }
  // mean divides once, in the accumulator type, before the one rounding to the output format.
  return "(" + ct + ")" + (op == PK_OP_MEAN ? "((" + v + ") / (" + acc + ")" + n + ")" : "(" + v + ")");
}

bool reduction_supported(uint32_t op_id, int32_t dt, const DeviceCaps &caps, std::string *why) {
  auto no = [&](const char *r) {
    if (why) *why = r;
    return false;
  };
  if (!dtype_supported(dt, caps, why)) return false;
  if (op_id == PK_OP_MEAN && !is_flt(dt)) return no("mean is defined for floating-point dtypes only");
  switch (reduction_fold(op_id)) {
    case Combine::add:
    case Combine::mul:
      if (is_cx(dt) && !caps.fp64) return no("complex kernels compute in double, which needs cl_khr_fp64");
      if (!(is_int(dt) || is_flt(dt) || is_cx(dt))) return no("reductions of this dtype are not generated");
      return true;
    case Combine::max:
    case Combine::min:
      if (!(is_int(dt) || is_flt(dt))) return no("reductions of this dtype are not generated");
      return true;
    case Combine::logical_and:
    case Combine::logical_or:
      if (!(is_int(dt) || is_flt(dt) || is_cx(dt) || dt == PK_DTYPE_BOOL)) return no("not generated for this dtype");
      return true;
    case Combine::bit_xor:
      if (!(is_int(dt) || dt == PK_DTYPE_BOOL)) return no("integral dtypes only");
      return true;
    default:
      return no("this reduction is not generated by the OpenCL backend");
  }
}

bool argreduce_supported(uint32_t op_id, int32_t dt, const DeviceCaps &caps, std::string *why) {
  if (reduction_fold(op_id) != Combine::argmax && reduction_fold(op_id) != Combine::argmin) {
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
  const bool mx = reduction_fold(op) == Combine::argmax;
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
  const Combine fold = reduction_fold(op);
  const bool logical = fold == Combine::logical_and || fold == Combine::logical_or;
  std::string src = prelude(caps);
  if (is_cx(dt) && !logical) src += "#pragma OPENCL FP_CONTRACT OFF\n" + special_helpers(special_helper_bits(op, dt));
  if (float_sum_acc(op, dt) || float_prod_acc(op, dt, caps)) src += kFloatAccumulators;
  src += "inline " + ACC + " pk_comb(" + ACC + " a, " + ACC + " x) { " + r.combine_fn + " }\n";
  if (logical && is_cx(dt)) {
    // A complex value is true when either part is nonzero.
    src += "#define PK_LD(p, e) ((uchar)((p[e]).x != 0 || (p[e]).y != 0))\n#define PK_ST(v) ((uchar)(v))\n";
  } else if (is_cx(dt) && !logical) {
    const std::string ld = dt == PK_DTYPE_C64 ? "convert_double2(p[e])" : "(p[e])";
    const bool sum = fold == Combine::add;
    const std::string st = sum ? "pk_csum_st(v)" : "pk_cprod_st(v)";
    src += "#define PK_LD(p, e) (" + std::string(sum ? "pk_csum_ld(" : "pk_cprod_ld(") + ld + "))\n";
    src += "#define PK_ST(v) (" + (dt == PK_DTYPE_C64 ? "convert_float2(" + st + ")" : st) + ")\n";
  } else {
    const RedCode rc = red_code(op, dt, caps);
    src += "#define PK_LD(p, e) (" + rc.lift(load_expr(dt, "p[e]")) + ")\n";
    const std::string fin = rc.finish("v", "n_red");
    src += "#define PK_ST(v) (" + (logical ? fin : store_expr(dt, fin)) + ")\n";
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

// --- scans, sorting, var ----------------------------------------------------------------------------------------

namespace {
// Loads of the compute type and "less, NaN last" (sort order) for one dtype.
std::string order_helpers(int32_t dt) {
  const ClType &ty = cl_type(dt);
  std::string s = "#define PK_LDC(p, e) (" + load_expr(dt, "p[e]") + ")\n";
  s += std::string("inline int pk_lt(") + ty.ct + " x, " + ty.ct + " y) { ";
  s += is_flt(dt) ? "if (isnan(x)) return 0; if (isnan(y)) return 1; return x < y; }\n" : "return x < y; }\n";
  return s;
}

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

}  // namespace pk::ocl
