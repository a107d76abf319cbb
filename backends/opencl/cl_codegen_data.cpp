// cl_codegen_data.cpp — OpenCL C generation of creation (set, iota), data movement (move, take, scatter,
// index_put) and the Philox generators, and the host-side storage bits of fill values and extreme values.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "cl_codegen.hpp"
#include "cl_codegen_internal.hpp"
#include "cl_special.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

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
