// ops.cpp — the capability query (op_query) and the launch (op_launch), both over the kernel table.
//
// What you implement here: usually nothing but the kernels. Add a kernel file (src/kernel_<op>.cpp), declare it
// in kernels.hpp and list it in kernels.cpp; op_query and op_launch both read that one table, so they can never
// disagree. Change this file only to answer per launch (shapes your hardware cannot run) or to enqueue kernels
// on your driver's queue.
#include <cstdio>

#include "backend.hpp"
#include "kernels.hpp"
#include "primkit/op_info.hpp"

namespace @BACKEND_NAME@_backend {

using pk::kit::fail;

namespace {

// Kernels are chosen by the dtype of input 0 (output 0 for ops without inputs); the runtime has already checked
// that the other operands agree with it as the op table demands.
int32_t key_dtype(const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs, uint32_t num_outputs) {
  if (num_inputs > 0 && inputs != nullptr) return pk::kit::dtype_id(inputs[0].dtype);
  if (num_outputs > 0 && outputs != nullptr) return pk::kit::dtype_id(outputs[0].dtype);
  return -1;
}

bool kernel_accepts(const Kernel &kernel, int32_t dtype) {
  return dtype >= 0 && (kernel.dtype_mask & dtype_bit(dtype));
}

}  // namespace

// The capability query: the runtime asks it before every fallback decision and conformance asks it to tell
// NOT_SUPPORTED from FAIL. It must agree with op_launch. With NULL shapes it is a coverage question ("do you run
// this op for these dtypes at all"); with shapes it is about exactly that launch — answer "no" for shapes your
// hardware cannot do and the runtime falls back for just those launches.
// TODO(vendor): decline shapes, strides or attributes your kernels cannot run here, with a reason.
pk_status backend_op_query(pk_be_context *, const pk_op_query *query, pk_op_support *out) {
  pk_op_support support;
  PK_STRUCT_INIT(support);
  const Kernel *kernel = find_kernel(query->op_id);
  const int32_t dtype = key_dtype(query->inputs, query->num_inputs, query->outputs, query->num_outputs);
  if (kernel == nullptr) {
    std::snprintf(support.reason, sizeof support.reason, "@BACKEND_NAME@ has no kernel for %s (op id %u) yet",
                  pk::meta::op_name(query->op_id), query->op_id);
  } else if (!kernel_accepts(*kernel, dtype)) {
    std::snprintf(support.reason, sizeof support.reason, "@BACKEND_NAME@ runs %s, but not for dtype id %d",
                  pk::meta::op_name(query->op_id), dtype);
  } else {
    support.supported = 1;
    support.native = 1;
    std::snprintf(support.reason, sizeof support.reason, "native @BACKEND_NAME@ kernel");
  }
  pk::kit::copy_out(support, out);  // respects the host's struct_size
  return PK_OK;
}

// TODO(vendor): on real hardware a kernel enqueues on the stream's queue; a failure the driver reports later
// (at synchronize) goes through stream->sticky.record(status) there.
pk_status backend_op_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                            const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  if (pk_status status = stream->sticky.check(kName)) return status;
  const Kernel *kernel = find_kernel(op_id);
  if (kernel == nullptr || !kernel_accepts(*kernel, key_dtype(inputs, num_inputs, outputs, num_outputs))) {
    // Declining writes nothing and leaves the stream usable: the runtime falls back (or, strict, reports it).
    return fail(PK_UNIMPLEMENTED, op_id, -1, "@BACKEND_NAME@: no kernel for %s (op id %u) and these dtypes",
                pk::meta::op_name(op_id), op_id);
  }
  const Launch launch{op_id, inputs, num_inputs, outputs, num_outputs, attrs};
  // A failure other than PK_UNIMPLEMENTED makes the stream sticky.
  return stream->sticky.record(pk::kit::catch_exceptions(PK_OP_NONE, "@BACKEND_NAME@: op_launch",
                                                         [&]() -> pk_status { return kernel->run(launch); }));
}

}  // namespace @BACKEND_NAME@_backend
