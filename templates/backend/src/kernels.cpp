// kernels.cpp — the table of kernels this backend runs. A row per op: the op id, the dtypes of input 0 it
// accepts, the function. Ops without a row answer "not supported": the runtime then runs them on the CPU backend
// (fallback) and conformance reports them NOT_SUPPORTED, which is honest, not a failure.
#include "kernels.hpp"

namespace @BACKEND_NAME@_backend {
namespace {

constexpr Kernel kKernels[] = {
#ifdef @BACKEND_NAME_UPPER@_ENABLE_EXAMPLE_ADD
    {PK_OP_ADD, dtype_bit(PK_DTYPE_F32), add_f32},
#endif
    // TODO(vendor): one row per op you implement, e.g.
    //   {PK_OP_EXP, dtype_bit(PK_DTYPE_F32), exp_f32},
    //   {PK_OP_SUM, dtype_bit(PK_DTYPE_F32), sum_f32},
    //   {PK_OP_MATMUL, dtype_bit(PK_DTYPE_F32), matmul_f32},
    {PK_OP_NONE, 0, nullptr},  // end of the table (an array may not be empty while no kernel is compiled in)
};

}  // namespace

const Kernel *find_kernel(uint32_t op_id) {
  for (const Kernel &k : kKernels) {
    if (k.run != nullptr && k.op_id == op_id) return &k;
  }
  return nullptr;
}

}  // namespace @BACKEND_NAME@_backend
