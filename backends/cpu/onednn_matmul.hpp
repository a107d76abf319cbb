// onednn_matmul.hpp — the CPU backend's one oneDNN engine, and linear's f32 fast path on oneDNN's matmul.
#pragma once

#include <cstdint>

#ifdef PRIMKIT_CPU_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace pk::cpu {

#ifdef PRIMKIT_CPU_HAVE_ONEDNN
// One CPU engine per process, created on first use (thread-safe static initialization). Every oneDNN call goes
// through it, and it bounds the calling thread's OpenMP threads (oneDNN's) by the worker pool's size.
dnnl::engine &dnnl_engine();
#endif

// c[M, N] = a[M, K] x b (+ c when `accumulate`) for dense row-major f32 a and c, on oneDNN's sgemm: b is [K, N]
// with row stride ldb, or, `b_transposed`, the transpose of a [N, K] with row stride ldb. Its JIT gemm kernels ran
// the GPT-2 and square shapes at MKL's speed on an AVX-512 Xeon (1 thread, 1024 x 768 x 3072: 42 ms, MKL 42 ms),
// where the matmul primitive's brgemm kernels took 53-102 ms, depending on b's layout. No range guard: the caller
// checks the operands or the result. False where oneDNN is absent or fails (c may then hold anything).
bool onednn_sgemm_f32(const float *a, const float *b, bool b_transposed, int64_t ldb, float *c, int64_t M, int64_t K,
                      int64_t N, bool accumulate);

// out[M, N] = x[M, K] x w^T + bias[N] for dense row-major f32 x and out, and a weight w[N, K] with element strides
// (w_stride_n, w_stride_k) — dense [N, K] (K, 1), or the transposed view of a dense [K, N] (1, N) — read in place;
// bias may be null (no bias). The product is accumulated onto the bias rows: one rounding, as an f32 add after the
// product. No range guard: the caller checks the operands or the result. False where oneDNN is absent or fails
// (out may then hold anything).
bool onednn_linear_f32(const float *x, const float *w, int64_t w_stride_n, int64_t w_stride_k, const float *bias,
                       float *out, int64_t M, int64_t K, int64_t N);

}  // namespace pk::cpu
