// cpu_kernels.hpp — how the CPU backend's kernel files plug into its entry file (cpu_backend.cpp).
// Every kernels_*.cpp defines one registration function listing its kernels; the entry file builds the
// op id -> kernel table from all of them once. A kernel sees only launches the runtime has validated against the
// op table (dtypes, shapes, strides inside storage, attribute ranges, no output overlap): it never re-checks
// them. It returns PK_OK, PK_UNIMPLEMENTED (writing nothing) or an error recorded with kit::fail.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <type_traits>

#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::cpu {

struct Launch {
  const pk::meta::OpInfo *op;  // the op's table row
  const pk_tensor *inputs;
  uint32_t num_inputs;
  const pk_tensor *outputs;
  uint32_t num_outputs;
  const void *attrs;  // the op's pk_attrs_<name> (normalized by the runtime), or NULL if it has none
};

using KernelFn = pk_status (*)(const Launch &launch);
// Which input dtypes a kernel covers, by the dtype of input 0 (or of output 0 for ops without inputs).
// op_query answers from this mask, so it must agree with what the kernel really does.
struct Kernel {
  uint32_t op_id = 0;
  KernelFn fn = nullptr;
  uint32_t dtype_mask = 0;  // bit (1u << PK_DTYPE_*)
  // Looked up once at registration, not on every launch: the op's table entry and the operand whose dtype the
  // mask is keyed on (-1: output 0).
  const pk::meta::OpInfo *op = nullptr;
  int32_t key_operand = -1;
};

// Kernels register the dtypes they can run; the registry keeps only those the op table admits for the op, so the
// capability query can never claim a dtype the table forbids.
class KernelRegistry {
 public:
  void add(uint32_t op_id, KernelFn fn, uint32_t dtype_mask);
  const Kernel *find(uint32_t op_id) const;
};

// One per kernels file.
void register_elementwise_kernels(KernelRegistry &r);  // unary, binary, compare, ternary, conversion, creation, rng
void register_reduction_kernels(KernelRegistry &r);    // reductions, scans
void register_shape_kernels(KernelRegistry &r);        // views, shape ops, indexing, sorting
void register_linalg_kernels(KernelRegistry &r);       // matmul, dot_general, convolution, pooling (oneDNN), fft
void register_nn_kernels(KernelRegistry &r);           // softmax, norms, activations (composites)
void register_attention_kernels(KernelRegistry &r);    // scaled_dot_product_attention[_masked]
void register_softplus_kernels(KernelRegistry &r);     // softplus

}  // namespace pk::cpu

namespace pk::cpu {
// A non-owning reference to a callable (void(int64_t, int64_t)): what the pool runs, without the allocation a
// std::function of a large lambda would cost on every launch.
class RangeFn {
 public:
  template <class F>
  RangeFn(const F &f)
      : object_(&f), call_([](const void *o, int64_t lo, int64_t hi) { (*static_cast<const F *>(o))(lo, hi); }) {}
  void operator()(int64_t lo, int64_t hi) const { call_(object_, lo, hi); }

 private:
  const void *object_;
  void (*call_)(const void *, int64_t, int64_t);
};

// The widest vector ISA the hand-vectorized kernels may use: the CPU's, capped by the environment variable
// PRIMKIT_CPU_ISA (generic, avx2 or avx512; read once), so that one machine can test every path. avx2 means AVX2
// and FMA, avx512 AVX-512F. Implemented in cpu_backend.cpp.
enum class Isa : int { generic = 0, avx2 = 1, avx512 = 2 };
Isa cpu_isa();
inline bool have_isa(Isa isa) {
  return static_cast<int>(cpu_isa()) >= static_cast<int>(isa);
}

// The threads an op may use, the calling thread included: PRIMKIT_CPU_THREADS, else every core, capped by
// pk_cpu_set_max_threads.
int64_t cpu_threads();
// True when a range of n iterations with this grain runs on the calling thread alone.
bool runs_serially(int64_t n, int64_t grain);
// Splits [begin, end) into chunks of at least `grain` over the backend's threads (the calling thread takes part):
// oneDNN's OpenMP team where oneDNN runs on OpenMP, else the worker pool. Implemented in cpu_backend.cpp.
void parallel_run(int64_t begin, int64_t end, int64_t grain, RangeFn f);
// The OpenMP team (openmp_team.cpp): whether parallel_run uses it, whether the calling thread is one of its
// threads inside a job, and a job on `threads` threads of the calling thread's team.
bool team_available();
bool in_team_thread();
void team_run(int64_t begin, int64_t end, int64_t grain, int threads, const RangeFn &f);

// Runs f(lo, hi) over [begin, end) split into chunks of at least `grain` iterations on the backend's worker
// threads (the calling thread takes part); returns when all chunks are done. Serial, with no overhead, when the
// range is small. f must not throw.
template <class F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain, const F &f) {
  if (end <= begin) return;
  if (runs_serially(end - begin, grain)) {
    f(begin, end);
    return;
  }
  parallel_run(begin, end, grain, RangeFn(f));
}
}  // namespace pk::cpu

// --- helpers shared by the kernel files -------------------------------------------------------------------------
namespace pk::cpu {

// Quiet NaN and infinity of a computing type.
template <class C>
constexpr C kNaN = std::numeric_limits<C>::quiet_NaN();
template <class C>
constexpr C kInf = std::numeric_limits<C>::infinity();

// Element `offset` of a view of T, widened to the computing type C.
template <class T, class C>
inline C load_as(const kit::View &v, int64_t offset) {
  return static_cast<C>(kit::load(*v.at<T>(offset)));
}

// Rows per task: about 32 K elements of work each, so small launches stay on the calling thread.
inline int64_t row_grain(int64_t work_per_row) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work_per_row));
}

constexpr uint32_t bit(int d) {
  return 1u << d;
}
// The op table's dtype groups (docs/ops.md), as masks for KernelRegistry::add.
constexpr uint32_t kInt =
    bit(PK_DTYPE_U8) | bit(PK_DTYPE_I8) | bit(PK_DTYPE_I16) | bit(PK_DTYPE_I32) | bit(PK_DTYPE_I64);
constexpr uint32_t kIntegral = kInt | bit(PK_DTYPE_BOOL);
constexpr uint32_t kFloatStd = bit(PK_DTYPE_F16) | bit(PK_DTYPE_BF16) | bit(PK_DTYPE_F32) | bit(PK_DTYPE_F64);
constexpr uint32_t kFloatWide = bit(PK_DTYPE_F32) | bit(PK_DTYPE_F64);
constexpr uint32_t kFloat = kFloatStd | bit(PK_DTYPE_F8E4M3FN) | bit(PK_DTYPE_F8E5M2);
constexpr uint32_t kComplex = bit(PK_DTYPE_C64) | bit(PK_DTYPE_C128);
constexpr uint32_t kReal = kInt | kFloat;
constexpr uint32_t kNumeric = kReal | kComplex;
constexpr uint32_t kFloatComplex = kFloat | kComplex;
constexpr uint32_t kAll = kNumeric | bit(PK_DTYPE_BOOL);

// The element types of kFloatStd, and the type their kernels compute in: double has 2 * 24 + 5 bits, enough for
// every f32 intermediate to stay far inside a bound; f64 needs the wider exponent and mantissa of long double
// (x^2 of a large f64 overflows a double, x - max loses bits an exp then magnifies).
template <class T>
constexpr bool is_std_float_v = std::is_same_v<T, kit::half> || std::is_same_v<T, kit::bfloat16> ||
                                std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T>
using wide_t = std::conditional_t<std::is_same_v<T, double>, long double, double>;

inline int32_t dtype_of(const pk_tensor &t) {
  return kit::dtype_id(t.dtype);
}

// Calls f(T{}) for t's element type if it is one of kFloatStd; PK_UNIMPLEMENTED otherwise.
template <class F>
pk_status dispatch_std_float(const pk_tensor &t, F &&f) {
  return kit::dispatch_dtype(dtype_of(t), [&](auto tag) -> pk_status {
    if constexpr (is_std_float_v<decltype(tag)>) {
      return f(tag);
    } else {
      return PK_UNIMPLEMENTED;
    }
  });
}

// The op's attribute struct; the runtime normalized it (struct_size, defaults), so it is never NULL for an op
// that has attributes.
template <class A>
const A &attrs_of(const Launch &l) {
  return *static_cast<const A *>(l.attrs);
}

// Runs a kernel body, turning an escaped exception into an error status (exceptions never cross the ABI).
template <class F>
pk_status guarded(const Launch &l, F &&f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return kit::fail(PK_ERROR_OUT_OF_MEMORY, l.op->id, -1, "%s: out of host memory", l.op->name);
  } catch (...) {
    return kit::fail(PK_ERROR_INTERNAL, l.op->id, -1, "%s: unexpected exception in the CPU kernel", l.op->name);
  }
}

}  // namespace pk::cpu
