// cpu_kernels.hpp — how the CPU backend's kernel files plug into its entry file (cpu_backend.cpp).
// Every kernels_*.cpp defines one registration function listing its kernels; the entry file builds the
// op id -> kernel table from all of them once. A kernel sees only launches the runtime has validated against the
// op table (dtypes, shapes, strides inside storage, attribute ranges, no output overlap): it never re-checks
// them. It returns PK_OK, PK_UNIMPLEMENTED (writing nothing) or an error recorded with kit::fail.
#pragma once

#include <cstdint>
#include <functional>

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
  uint32_t op_id;
  KernelFn fn;
  uint32_t dtype_mask;  // bit (1u << PK_DTYPE_*)
};

class KernelRegistry {
 public:
  void add(uint32_t op_id, KernelFn fn, uint32_t dtype_mask);
  const Kernel *find(uint32_t op_id) const;
};

// One per kernels file.
void register_elementwise_kernels(KernelRegistry &r);  // unary, binary, compare, ternary, conversion, creation, rng
void register_reduction_kernels(KernelRegistry &r);    // reductions, scans
void register_shape_kernels(KernelRegistry &r);        // views, shape ops, indexing, sorting
void register_linalg_kernels(KernelRegistry &r);       // matmul, dot_general, convolution (oneDNN), fft

}  // namespace pk::cpu

namespace pk::cpu {
// Runs f(lo, hi) over [begin, end) split into chunks of at least `grain` iterations on the backend's worker
// threads (the calling thread takes part); returns when all chunks are done. Serial when the range is small.
// Implemented in cpu_backend.cpp. f must not throw.
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)> &f);
}  // namespace pk::cpu
