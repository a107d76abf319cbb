// kernels.hpp — the @BACKEND_NAME@ kernel table: which (op, dtype) pairs this backend runs, and the function that
// runs each. The capability query (op_query) and the launch (op_launch) both read this one table, so the two can
// never disagree — conformance reports a backend whose query says "supported" and whose launch then declines.
#pragma once

#include <cstdint>

#include "primkit/backend_kit.hpp"
#include "primkit/primkit.h"

namespace @BACKEND_NAME@_backend {

// One launch exactly as the runtime validated it: arity, dtypes, shapes (from the op's shape rule), strides inside
// each storage and attribute ranges are already checked, so a kernel never re-checks them.
struct Launch {
  uint32_t op_id;
  const pk_tensor *inputs;
  uint32_t num_inputs;
  const pk_tensor *outputs;
  uint32_t num_outputs;
  const void *attrs;  // the op's pk_attrs_<op> struct (primkit_ops.h), or NULL for ops without attributes
};

// Returns PK_OK, or an error recorded with pk::kit::fail (the host reads it through get_last_error).
using KernelFn = pk_status (*)(const Launch &launch);

struct Kernel {
  uint32_t op_id;       // PK_OP_*
  uint32_t dtype_mask;  // bit (1u << PK_DTYPE_*) for each dtype of input 0 (of output 0 for ops without inputs)
  KernelFn run;
};

constexpr uint32_t dtype_bit(int32_t dtype_id) {
  return 1u << dtype_id;
}

// The kernel for op_id, or nullptr: the backend then answers "not supported" and the runtime falls back.
const Kernel *find_kernel(uint32_t op_id);

// --- kernels, one source file each -------------------------------------------------------------------------------
#ifdef @BACKEND_NAME_UPPER@_ENABLE_EXAMPLE_ADD
pk_status add_f32(const Launch &launch);  // src/kernel_add.cpp: the worked example
#endif
// TODO(vendor): declare each kernel you write here and list it in kernels.cpp, e.g.
//   pk_status exp_f32(const Launch &launch);   // src/kernel_exp.cpp

}  // namespace @BACKEND_NAME@_backend
