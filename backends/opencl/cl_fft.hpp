// cl_fft.hpp — OpenCL C of the FFTs (fft_c2c, fft_r2c, fft_c2r). Every transform runs in double on a dense
// double2 work tensor, one 1-D pass per axis of `dims`: radix-2 Stockham stages (one launch each) for powers of two,
// a direct DFT (one work-item per output) for other short lengths, Bluestein's algorithm (a convolution done with
// radix-2 transforms) for longer ones; twiddles e^(+-2 pi i m / n) from an exact integer
// octant reduction of m / n and double-double series. c64 and f32 results are rounded once at the end.
#pragma once

#include <cstdint>
#include <string>

#include "cl_codegen.hpp"

namespace pk::ocl {

// Whether op (one of the three FFTs) runs for input dtype in_dt; `why` says why not.
bool fft_supported(uint32_t op, int32_t in_dt, const DeviceCaps &caps, std::string *why);

// The program of one FFT op and input dtype. Kernels, in this order (the launcher's slots):
//   pk_fft_load(src, off, strides, shape, rank, work, count): the input, any strides, into the dense work tensor
//   pk_fft_twiddle(tw, n, sign): tw[m] = e^(sign 2 pi i m / n), m < n
//   pk_fft_radix2(src, dst, tw, n, p, inner, count): one Stockham stage of half-size p along an axis of length n
//   pk_fft_direct(src, dst, tw, n, inner, count): the DFT along an axis of length n
//   pk_fft_extend(src, dst, kept, n, inner, count): a onesided spectrum of `kept` entries extended to n entries
//       by Hermitian symmetry (fft_c2r only)
//   pk_fft_store(work, work_strides, dst, off, strides, shape, rank, count): the output (the leading part of the
//       work tensor; the real parts for fft_c2r) through the output's strides
//   pk_fft_chirp(w, n, sign), pk_fft_bs_kernel(w, b, n, m), pk_fft_bs_pre(src, dst, w, n, m, inner, count),
//   pk_fft_bs_mul(x, b, m, inner, count), pk_fft_bs_post(src, dst, w, n, m, inner, count): Bluestein's algorithm
//       for lengths that are not powers of two above kFftDirectMax (a convolution by radix-2 transforms of m)
// An axis of the work tensor is addressed as [outer, n, inner] (inner: the product of the later extents); count is
// the number of work-items (butterflies, outputs or elements).
constexpr int kFftKernels = 11;
// Lengths up to this that are not powers of two take the direct DFT (O(n^2), but no padding to 2n).
constexpr uint64_t kFftDirectMax = 64;
std::string gen_fft(uint32_t op, int32_t in_dt, const DeviceCaps &caps);

}  // namespace pk::ocl
