// onednn_matmul.cpp — the oneDNN engine and linear's f32 fast path (see onednn_matmul.hpp).
#include "onednn_matmul.hpp"

#include "cpu_kernels.hpp"

#ifdef PRIMKIT_CPU_HAVE_ONEDNN
#include <exception>
#include <map>
#include <tuple>
#endif

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

namespace {

// Primitives by shape, per thread (a primitive may run on several threads, but the map itself would need a lock).
// Creating the primitive descriptor costs tens of microseconds even when oneDNN's own primitive cache then hands
// back the kernel; a model calls the same few shapes over and over. Bounded: cleared when it fills.
using LinearKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool>;
constexpr size_t kMaxCachedLinear = 64;

// The weight as oneDNN's [K, N] operand: w^T, through w's strides.
dnnl::memory::desc weight_desc(int64_t K, int64_t N, int64_t w_stride_n, int64_t w_stride_k) {
  return dnnl::memory::desc({K, N}, dnnl::memory::data_type::f32, {w_stride_k, w_stride_n});
}

const dnnl::matmul &linear_primitive(int64_t M, int64_t K, int64_t N, int64_t w_stride_n, int64_t w_stride_k,
                                     bool with_bias) {
  thread_local std::map<LinearKey, dnnl::matmul> cache;
  const LinearKey key{M, K, N, w_stride_n, w_stride_k, with_bias};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedLinear) cache.clear();
  using dnnl::memory;
  const memory::desc xmd({M, K}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc wmd = weight_desc(K, N, w_stride_n, w_stride_k);
  const memory::desc bmd =
      with_bias ? memory::desc({1, N}, memory::data_type::f32, memory::format_tag::ab) : memory::desc();
  const memory::desc omd({M, N}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl_engine(), xmd, wmd, bmd, omd);
  return cache.emplace(key, dnnl::matmul(pd)).first->second;
}

}  // namespace

bool onednn_linear_f32(const float *x, const float *w, int64_t w_stride_n, int64_t w_stride_k, const float *bias,
                       float *out, int64_t M, int64_t K, int64_t N) {
  try {
    using dnnl::memory;
    dnnl::engine &eng = dnnl_engine();
    const dnnl::matmul &prim = linear_primitive(M, K, N, w_stride_n, w_stride_k, bias != nullptr);
    memory xm({{M, K}, memory::data_type::f32, memory::format_tag::ab}, eng, const_cast<float *>(x));
    memory wm(weight_desc(K, N, w_stride_n, w_stride_k), eng, const_cast<float *>(w));
    memory om({{M, N}, memory::data_type::f32, memory::format_tag::ab}, eng, out);
    dnnl::stream s(eng);
    if (bias) {
      memory bm({{1, N}, memory::data_type::f32, memory::format_tag::ab}, eng, const_cast<float *>(bias));
      prim.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, om}});
    } else {
      prim.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, om}});
    }
    s.wait();
    return true;
  } catch (const std::exception &) {  // dnnl::error, or no memory for the cache
    return false;
  }
}
#else
bool onednn_linear_f32(const float *, const float *, int64_t, int64_t, const float *, float *, int64_t, int64_t,
                       int64_t) {
  return false;
}
#endif

}  // namespace pk::cpu
