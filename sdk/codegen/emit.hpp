// emit.hpp — internal to primkit_codegen: builds the LLVM module of one kernel for one target.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "primkit/codegen.hpp"
#include "primkit/op_info.hpp"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace pk::codegen::detail {

// cpu_streaming: the cpu entry of an elementwise region laid out for non-temporal stores (items peeled until the
// first output is 64-byte aligned, then the main loop); targets.cpp marks its vector stores after vectorization.
enum class Target { nvptx, emu, cpu, cpu_streaming };

// The reductions the generator emits: the primitive folds of the op table (each row's `reduce:`; region planning
// and IR emission read the same list, and the accumulator's identity and combine come from the row too).
inline meta::Combine combine_of(uint32_t op) {
  const meta::OpInfo *info = meta::find_op(op);
  return info != nullptr ? info->reduce.combine : meta::Combine::none;
}
inline bool is_reduction_op(uint32_t op) {
  const meta::OpInfo *info = meta::find_op(op);
  return info != nullptr && meta::is_fold(info->reduce);
}

// Ops that walk whole lines of their input, one work item per line, as the only node of their region: var
// (three passes over the reduced elements, the output once per row), the scans along one axis (the output per
// element of the line), dot_general (the line is the contraction of both operands, the output once per row),
// searchsorted (the line is the sequence), the scatters (the line is the index entries that may land on the
// element) and sort/topk (one work item per element: the line is what it is ranked
// against).
inline bool is_scan_op(uint32_t op) {
  return op == PK_OP_CUMSUM || op == PK_OP_CUMPROD || op == PK_OP_CUMMAX || op == PK_OP_CUMMIN ||
         op == PK_OP_LOGCUMSUMEXP;
}
// sort and topk: values and i64 indices, written at each element's rank in its line.
inline bool is_order_op(uint32_t op) {
  return op == PK_OP_SORT || op == PK_OP_TOPK;
}
// scatter, scatter_reduce, index_put: each output element walks the index entries that may land on it.
inline bool is_scatter_op(uint32_t op) {
  return op == PK_OP_SCATTER || op == PK_OP_SCATTER_REDUCE || op == PK_OP_INDEX_PUT;
}
// scatter_reduce's node: round_mode = PK_REDUCE_KIND_* plus this flag when a's own value is combined too.
constexpr int32_t kIncludeSelf = 8;
// fft_c2c, fft_r2c, fft_c2r: direct DFTs, each output element walks its transform's input elements. The node's
// round_mode is the number of transformed axes (extra scalars: their transform lengths) plus kFftInverse.
inline bool is_fft_op(uint32_t op) {
  return op == PK_OP_FFT_C2C || op == PK_OP_FFT_R2C || op == PK_OP_FFT_C2R;
}
constexpr int32_t kFftAxes = 15, kFftInverse = 16;
inline bool is_line_op(uint32_t op) {
  return op == PK_OP_VAR || op == PK_OP_DOT_GENERAL || op == PK_OP_CONVOLUTION || op == PK_OP_SEARCHSORTED ||
         is_order_op(op) || is_scatter_op(op) || is_scan_op(op) || is_fft_op(op);
}

// Counter-based random numbers: creation nodes (no inputs) of the element's row-major index, extra[0..3] their
// seed, offset and two parameters.
inline bool is_philox_op(uint32_t op) {
  return op == PK_OP_PHILOX_UNIFORM || op == PK_OP_PHILOX_NORMAL || op == PK_OP_PHILOX_RANDINT;
}

// The module holds the shared item/body functions plus the target's entry, named `entry`. The module has no
// triple or data layout yet; the caller sets them before optimizing.
std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext &ctx, const KernelSpec &spec, Target target,
                                           const std::string &entry);

}  // namespace pk::codegen::detail
