// cl_fft.cpp — OpenCL C of the FFTs (see cl_fft.hpp).
//
// Accuracy: the twiddles are within half an ulp of e^(+-2 pi i m / n) (m / n reduced to an octant exactly in
// integers, then cos / sin series in double-double), the radix-2 stages and Bluestein's convolution compute in
// double (as the CPU backend's FFT), and the direct DFT sums in double for c64 / f32 (far beyond their contract)
// and with error-free products and sums (one rounding per pass) for c128 / f64. Non-finite values: every output of a
// 1-D transform depends on every input of its line, and the reference's products with an infinite or NaN term make both
// parts of such outputs non-finite; the passes write (NaN, NaN) for any output with a non-finite part, so a later pass
// spreads it the same way (an output part that stayed finite would differ from the reference's NaN).
#include "cl_fft.hpp"

#include "cl_special.hpp"
#include "primkit/primkit.h"

namespace pk::ocl {
namespace {

const char *kSrcFft = R"CL(
inline double2 pk_fft_fix(double2 v) { return (isfinite(v.x) && isfinite(v.y)) ? v : (double2)(NAN, NAN); }
inline double2 pk_fft_mul(double2 a, double2 b) { return (double2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

// e^(sign 2 pi i m / n): 8m = o n + r, so the angle is (pi/4)(o + r/n); odd octants are measured back from the next
// quarter turn, leaving t = (pi/4) num / n in [0, pi/4] for the double-double series (the device math's dd.h).
inline double2 pk_fft_cis(ulong m, ulong n, double sign) {
  const ulong m8 = 8ul * m, o = m8 / n, r = m8 - o * n;
  const int odd = (int)(o & 1ul);
  const ulong num = odd ? n - r : r;
  const int q = (int)(((o + (ulong)odd) >> 1) & 3ul);
  pk_dm_dd t = pk_dm_dd_div_d(pk_dm_dd_make((double)num, 0.0), (double)n), sn, cs;
  t = pk_dm_dd_mul(t, pk_dm_dd_make(0x1.921fb54442d18p-1, 0x1.1a62633145c07p-55));
  pk_dm_dd_sincos_small(t, &sn, &cs);
  const double cv = cs.hi + cs.lo, sv = odd ? -(sn.hi + sn.lo) : sn.hi + sn.lo;
  double re, im;
  switch (q) {
    case 0: re = cv; im = sv; break;
    case 1: re = -sv; im = cv; break;
    case 2: re = -cv; im = -sv; break;
    default: re = sv; im = -cv; break;
  }
  return (double2)(re, sign * im);
}

__kernel void pk_fft_twiddle(__global double2 *tw, const ulong n, const double sign) {
  const ulong m = get_global_id(0);
  if (m < n) tw[m] = pk_fft_cis(m, n, sign);
}

// Stockham radix-2 stage: butterfly b of a line takes elements b and b + n/2, whose sub-transforms of length p are
// done, and writes the two halves of a sub-transform of length 2p (natural order after the last stage).
__kernel void pk_fft_radix2(__global const double2 *src, __global double2 *dst, __global const double2 *tw,
                            const ulong n, const ulong p, const ulong inner, const ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  const ulong i = g % inner, t = g / inner, h = n / 2, b = t % h, o = t / h;
  const ulong k = b & (p - 1), base = o * n;
  const double2 u0 = src[(base + b) * inner + i], u1 = src[(base + b + h) * inner + i];
  const double2 v = pk_fft_mul(u1, tw[k * (n / (2 * p))]);
  const ulong j = ((b - k) << 1) + k;
  dst[(base + j) * inner + i] = pk_fft_fix(u0 + v);
  dst[(base + j + p) * inner + i] = pk_fft_fix(u0 - v);
}

// Output k of a line: sum_j x_j tw[j k mod n], the index stepped exactly.
__kernel void pk_fft_direct(__global const double2 *src, __global double2 *dst, __global const double2 *tw,
                            const ulong n, const ulong inner, const ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  const ulong i = g % inner, t = g / inner, k = t % n, o = t / n;
  __global const double2 *x = src + o * n * inner + i;
  ulong m = 0;
#if PK_FFT_EXACT_SUMS
  // Re and Im as s + e: every product split exactly (fma), every addition's error kept (two-sum).
  double sr = 0.0, er = 0.0, si = 0.0, ei = 0.0;
  for (ulong j = 0; j < n; ++j) {
    const double2 a = x[j * inner], w = tw[m];
    const pk_dm_dd p1 = pk_dm_two_prod(a.x, w.x), p2 = pk_dm_two_prod(-a.y, w.y);
    const pk_dm_dd p3 = pk_dm_two_prod(a.x, w.y), p4 = pk_dm_two_prod(a.y, w.x);
    pk_dm_dd q = pk_dm_two_sum(sr, p1.hi);
    sr = q.hi;
    er += q.lo + p1.lo;
    q = pk_dm_two_sum(sr, p2.hi);
    sr = q.hi;
    er += q.lo + p2.lo;
    q = pk_dm_two_sum(si, p3.hi);
    si = q.hi;
    ei += q.lo + p3.lo;
    q = pk_dm_two_sum(si, p4.hi);
    si = q.hi;
    ei += q.lo + p4.lo;
    m += k;
    if (m >= n) m -= n;
  }
  dst[(o * n + k) * inner + i] = pk_fft_fix((double2)(sr + er, si + ei));
#else
  double2 acc = (double2)(0.0, 0.0);
  for (ulong j = 0; j < n; ++j) {
    acc += pk_fft_mul(x[j * inner], tw[m]);
    m += k;
    if (m >= n) m -= n;
  }
  dst[(o * n + k) * inner + i] = pk_fft_fix(acc);
#endif
}

// Bluestein (other lengths above kFftDirectMax): X_k = w_k sum_j (x_j w_j) conj(w_(k-j)), w_k = e^(sign pi i k^2 / n),
// a convolution done with radix-2 transforms of length m >= 2n - 1. The chirp's angle is reduced exactly:
// k^2 mod 2n.
__kernel void pk_fft_chirp(__global double2 *w, const ulong n, const double sign) {
  const ulong k = get_global_id(0);
  if (k < n) w[k] = pk_fft_cis((k * k) % (2 * n), 2 * n, sign);
}
// The convolution kernel conj(w_k) at k and m - k (k < n), zero between; transformed by the launcher.
__kernel void pk_fft_bs_kernel(__global const double2 *w, __global double2 *b, const ulong n, const ulong m) {
  const ulong k = get_global_id(0);
  if (k >= m) return;
  const ulong j = k < n ? k : m - k;
  b[k] = j < n ? (double2)(w[j].x, -w[j].y) : (double2)(0.0, 0.0);
}
// x_j w_j into lines of length m (zero padded), from the work tensor's lines of length n.
__kernel void pk_fft_bs_pre(__global const double2 *src, __global double2 *dst, __global const double2 *w,
                            const ulong n, const ulong m, const ulong inner, const ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  const ulong i = g % inner, t = g / inner, j = t % m, o = t / m;
  dst[g] = j < n ? pk_fft_mul(src[(o * n + j) * inner + i], w[j]) : (double2)(0.0, 0.0);
}
__kernel void pk_fft_bs_mul(__global double2 *x, __global const double2 *b, const ulong m, const ulong inner,
                            const ulong count) {
  const ulong g = get_global_id(0);
  if (g < count) x[g] = pk_fft_fix(pk_fft_mul(x[g], b[(g / inner) % m]));
}
// X_k = w_k y_k / m (the inverse transform of length m being unnormalized), back into lines of length n.
__kernel void pk_fft_bs_post(__global const double2 *src, __global double2 *dst, __global const double2 *w,
                             const ulong n, const ulong m, const ulong inner, const ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  const ulong i = g % inner, t = g / inner, k = t % n, o = t / n;
  dst[g] = pk_fft_fix(pk_fft_mul(src[(o * m + k) * inner + i], w[k]) * (1.0 / (double)m));
}

// fft_c2r: entry k of the full line is X[k] for the `kept` (n / 2 + 1) entries given, else conj(X[n - k]).
__kernel void pk_fft_extend(__global const double2 *src, __global double2 *dst, const ulong kept, const ulong n,
                            const ulong inner, const ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  const ulong i = g % inner, t = g / inner, k = t % n, o = t / n;
  if (k < kept) {
    dst[g] = src[(o * kept + k) * inner + i];
  } else {
    const double2 v = src[(o * kept + (n - k)) * inner + i];
    dst[g] = (double2)(v.x, -v.y);
  }
}

// Row-major element g of a tensor of `shape`: its offset through `st`, and through the second stride set `st2`.
inline void pk_fft_offsets(ulong g, const pk_dims shape, const int rank, const pk_dims st, const pk_dims st2,
                           long *a, long *b) {
  long x = 0, y = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const long c = (long)(g % (ulong)shape.v[d]);
    g /= (ulong)shape.v[d];
    x += c * st.v[d];
    y += c * st2.v[d];
  }
  *a += x;
  *b += y;
}

__kernel void pk_fft_load(__global const PK_IN *src, const long off, const pk_dims strides, const pk_dims shape,
                          const int rank, __global double2 *work, const ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  long e = off, unused = 0;
  pk_fft_offsets(g, shape, rank, strides, strides, &e, &unused);
  work[g] = PK_LOAD(src[e]);
}

__kernel void pk_fft_store(__global const double2 *work, const pk_dims work_strides, __global PK_OUT *dst,
                           const long off, const pk_dims strides, const pk_dims shape, const int rank,
                           const ulong count) {
  const ulong g = get_global_id(0);
  if (g >= count) return;
  long e = off, w = 0;
  pk_fft_offsets(g, shape, rank, strides, work_strides, &e, &w);
  const double2 v = work[w];
  dst[e] = PK_STORE(v);
}
)CL";

}  // namespace

bool fft_supported(uint32_t op, int32_t in_dt, const DeviceCaps &caps, std::string *why) {
  auto no = [&](const char *r) {
    if (why) *why = r;
    return false;
  };
  if (!dtype_supported(in_dt, caps, why)) return false;
  if (!caps.fp64) return no("the FFT kernels compute in double, which needs cl_khr_fp64");
  if (op == PK_OP_FFT_R2C) {
    if (in_dt != PK_DTYPE_F32 && in_dt != PK_DTYPE_F64) return no("fft_r2c is defined for f32 and f64");
  } else if (in_dt != PK_DTYPE_C64 && in_dt != PK_DTYPE_C128) {
    return no("fft_c2c and fft_c2r are defined for c64 and c128");
  }
  return true;
}

std::string gen_fft(uint32_t op, int32_t in_dt, const DeviceCaps &) {
  const bool wide = in_dt == PK_DTYPE_F64 || in_dt == PK_DTYPE_C128;
  const bool real_in = op == PK_OP_FFT_R2C, real_out = op == PK_OP_FFT_C2R;
  const char *in_t = real_in ? (wide ? "double" : "float") : (wide ? "double2" : "float2");
  const char *out_t = real_out ? (wide ? "double" : "float") : (wide ? "double2" : "float2");
  std::string s = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n";
  s += "typedef struct { long v[8]; } pk_dims;\n";
  s += std::string("#define PK_IN ") + in_t + "\n#define PK_OUT " + out_t + "\n";
  s += real_in ? "#define PK_LOAD(x) ((double2)((double)(x), 0.0))\n" : "#define PK_LOAD(x) convert_double2(x)\n";
  if (real_out) {
    s += wide ? "#define PK_STORE(v) ((v).x)\n" : "#define PK_STORE(v) ((float)(v).x)\n";
  } else {
    s += wide ? "#define PK_STORE(v) (v)\n" : "#define PK_STORE(v) convert_float2(v)\n";
  }
  s += std::string("#define PK_FFT_EXACT_SUMS ") + (wide ? "1" : "0") + "\n";
  // The device math's double-double (the twiddle series needs it) comes with the complex helpers.
  s += special_helpers(special_helper_bits(PK_OP_MUL, PK_DTYPE_C128));
  return s + kSrcFft;
}

}  // namespace pk::ocl
