// cl_codegen_linalg.cpp — OpenCL C generation of the contractions: tiled matmul (and its complex form),
// dot_general, and convolution as an implicit GEMM through the matmul's local-memory tiles.
#include <cstdio>
#include <cstring>
#include <string>

#include "cl_codegen.hpp"
#include "cl_codegen_internal.hpp"
#include "cl_special.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

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

}  // namespace pk::ocl
