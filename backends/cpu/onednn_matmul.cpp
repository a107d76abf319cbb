// onednn_matmul.cpp — the oneDNN engine and the f32 products on oneDNN's sgemm (see onednn_matmul.hpp).
#include "onednn_matmul.hpp"

#include "cpu_kernels.hpp"

#include <algorithm>

#if defined(PRIMKIT_CPU_HAVE_ONEDNN) && DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
// The OpenMP API function (C linkage, libgomp), declared here rather than through omp.h, which clang does not find
// in GCC's folder; the build links libgomp, oneDNN's own runtime, by file.
extern "C" void omp_set_num_threads(int);
#endif

namespace pk::cpu {

#ifdef PRIMKIT_CPU_HAVE_ONEDNN
dnnl::engine &dnnl_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  // oneDNN runs a primitive in an OpenMP region whose size is an ICV of the calling thread: kept at the threads an
  // op may use, so that PRIMKIT_CPU_THREADS (and pk_cpu_set_max_threads) bound oneDNN's threads as they bound the
  // pool's.
  thread_local int64_t threads = 0;
  if (const int64_t want = cpu_threads(); want != threads) {
    omp_set_num_threads(static_cast<int>(want));
    threads = want;
  }
#endif
  return engine;
}

bool onednn_sgemm_f32(const float *a, const float *b, bool b_transposed, int64_t ldb, float *c, int64_t M, int64_t K,
                      int64_t N, bool accumulate) {
  dnnl_engine();  // bounds this thread's OpenMP threads, which sgemm uses too
  return dnnl_sgemm('N', b_transposed ? 'T' : 'N', M, N, K, 1.0f, a, K, b, ldb, accumulate ? 1.0f : 0.0f, c, N) ==
         dnnl_success;
}

bool onednn_linear_f32(const float *x, const float *w, int64_t w_stride_n, int64_t w_stride_k, const float *bias,
                       float *out, int64_t M, int64_t K, int64_t N) {
  // out starts as the bias rows and sgemm adds the product to it (beta 1): the f32 accumulator plus the bias,
  // rounded once, as the table's contract has it.
  // The rows are filled on the backend's threads: [2048, 2048] is a 16 MB write, a tenth of the product's time.
  if (bias != nullptr) {
    parallel_for(0, M, row_grain(N), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) std::copy(bias, bias + N, out + i * N);
    });
  }
  // w [N, K] dense is B^T (ldb K); the transposed view of a dense [K, N] is B itself (ldb N).
  const bool dense_nk = w_stride_k == 1;
  return onednn_sgemm_f32(x, w, dense_nk, dense_nk ? w_stride_n : w_stride_k, out, M, K, N, bias != nullptr);
}
#else
bool onednn_sgemm_f32(const float *, const float *, bool, int64_t, float *, int64_t, int64_t, int64_t, bool) {
  return false;
}
bool onednn_linear_f32(const float *, const float *, int64_t, int64_t, const float *, float *, int64_t, int64_t,
                       int64_t) {
  return false;
}
#endif

}  // namespace pk::cpu
