// emit.hpp — internal to primkit_codegen: builds the LLVM module of one kernel for one target.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "primkit/codegen.hpp"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace pk::codegen::detail {

enum class Target { nvptx, emu, cpu };

// The reductions the generator emits (region planning and IR emission must agree on the list).
inline bool is_reduction_op(uint32_t op) {
  switch (op) {
    case PK_OP_SUM:
    case PK_OP_PROD:
    case PK_OP_AMAX:
    case PK_OP_AMIN:
    case PK_OP_ANY:
    case PK_OP_ALL:
    case PK_OP_XOR_SUM:
    case PK_OP_ARGMAX:
    case PK_OP_ARGMIN:
      return true;
    default:
      return false;
  }
}

// Ops that walk whole lines of their input, one work item per line, as the only node of their region: var
// (three passes over the reduced elements, the output once per row) and the scans along one axis (the output per
// element of the line).
inline bool is_scan_op(uint32_t op) {
  return op == PK_OP_CUMSUM || op == PK_OP_CUMPROD || op == PK_OP_CUMMAX || op == PK_OP_CUMMIN ||
         op == PK_OP_LOGCUMSUMEXP;
}
inline bool is_line_op(uint32_t op) {
  return op == PK_OP_VAR || is_scan_op(op);
}

// The module holds the shared item/body functions plus the target's entry, named `entry`. The module has no
// triple or data layout yet; the caller sets them before optimizing.
std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext &ctx, const KernelSpec &spec, Target target,
                                           const std::string &entry);

}  // namespace pk::codegen::detail
