// region.hpp — PrimKit's fusion planner: one description of a region of work (a single op, a chain of
// elementwise ops, a chain closed by a reduction over the trailing axes, or a row program such as softmax with
// several reductions whose results are broadcast back over the row), the planning of op launches and of offered
// fusion subgraphs into regions, and the checks a launch of a planned region must pass. No LLVM and no device
// here: a printer turns a Region into a kernel for its target (primkit/codegen.hpp: the LLVM printer, for PTX and
// host code; the OpenCL backend prints OpenCL C from the same regions). Installed as PrimKit::region, so an
// out-of-tree backend plans exactly what the reference backends plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

// The planner's types keep the namespace they had when only the LLVM generator used them.
namespace pk::codegen {

// One node: an elementwise op, a reduction over the trailing axes (sum, prod, amax, amin, any, all, xor_sum,
// argmax, argmin), fill (a constant; no input needed), or iota (start + step * linear index, from extra[0..1]).
// Alone in their region: var and the scans (one work item per line of the trailing axis; cummax/cummin store their
// indices in value output + 1), and gather (inputs a, index; a's element-space stride on the gathered axis is 0,
// extra[0..1] hold that axis's extent and stride; an index outside [0, extent) gives 0).
struct Node {
  uint32_t op_id = PK_OP_NONE;
  std::vector<uint32_t> inputs;  // value ids
  uint32_t output = 0;           // value id
  double fill_value = 0.0;       // fill: the value; var: the correction
  int32_t round_mode = 0;        // round: PK_ROUNDING_*; sort/topk/searchsorted: descending/largest/right;
                                 // scatter_reduce: PK_REDUCE_KIND_* (+ 8 with include_self); index_put:
                                 // accumulate; convolution: the number of spatial axes
};

// Where a value lives in a reducing region: per element of a row, once per row (a reduction's result, or a
// row input broadcast over the row), or once per column (e.g. layer_norm's weight, broadcast over the rows).
enum Kind : uint8_t { kElem = 0, kRow = 1, kCol = 2 };

// A region over values numbered 0..dtypes.size(). Without `kinds`, every value has the element shape except
// reduction outputs (one value per row); a row program sets `kinds` for every value.
struct Region {
  std::vector<int32_t> dtypes;    // PK_DTYPE_* of each value
  std::vector<uint32_t> inputs;   // values loaded from memory, in kernel-argument order
  std::vector<Node> nodes;        // topological order
  std::vector<uint32_t> outputs;  // values stored to memory, in kernel-argument order (after the inputs)
  std::vector<uint8_t> kinds;     // Kind per value, or empty
  uint32_t num_extra = 0;         // i64 scalars after the strides

  bool reduces() const;  // some node is a reduction: work items are rows of `cols` elements
  Kind kind(uint32_t v) const;
  size_t num_args() const { return inputs.size() + outputs.size(); }
};

// A region plus the memory layout class it is compiled for: rank 0 = every argument dense row-major (the linear
// index is the element offset), rank r > 0 = arbitrary element strides over an r-dimensional element space.
// The shape itself is a kernel parameter, so one compiled kernel serves every shape of its class.
struct KernelSpec {
  Region region;
  int32_t rank = 0;
  // Dense kernels (rank 0) only: argument i with bit i set is read at its element 0 wherever the others are read at
  // the linear index, for an input broadcast over the whole element space (all strides 0, e.g. a scalar constant),
  // which would otherwise send the whole launch to the strided kernel.
  uint64_t uniform = 0;
};

// Empty when the region is well formed and the LLVM printer compiles each of its nodes; otherwise why not (names
// the op and dtype). Another printer (OpenCL C) checks what it prints on top of this.
std::string check(const Region &region);
// Canonical text of a spec: equal keys mean interchangeable kernels (the caches' key).
std::string key(const KernelSpec &spec);

// A region for one op launch (op_launch of the cuda backends), from the op's table row and the launch's tensors.
// Returns false with `why` set when the generator does not handle it.
bool region_for_op(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                   uint32_t num_outputs, const void *attrs, Region &out, std::string &why);
// The same for a capability query (dtypes only).
bool region_for_query(const pk_op_query &query, Region &out, std::string &why);

// Fusion: chooses the longest run of consecutive offered nodes the generator compiles that all read (and, but for
// a closing reduction, write) values of one shape (a run of a topological order is always convex), marks it in
// `claimed`, and builds its region with the arguments in the order pk_fusion_claim defines. `shape`/`ndim` receive the
// element shape (the reduced node's input shape when the run ends in a reduction). Returns false (claiming nothing)
// when no node qualifies or the run is a lone node not worth a kernel of its own.
bool region_from_subgraph(const pk_subgraph &graph, uint8_t *claimed, Region &out, int64_t *shape, int32_t &ndim,
                          std::string &why);
// Fusion of a whole offered subgraph as one row program: every node is elementwise over the element shape E,
// a reduction over E's trailing `red` axes, a broadcast_in_dim of a row value (shape E[:-red]) or column value
// (shape E[-red:]) back to E, a convert of a column value, or a full of row or element shape — the form
// softmax, log_softmax, layer_norm and rms_norm take when decomposed over the last axes. Claims every node or
// none; `shape` receives E and `red` the number of reduced trailing axes.
bool row_region_from_subgraph(const pk_subgraph &graph, uint8_t *claimed, Region &out, int64_t *shape, int32_t &ndim,
                              int32_t &red, std::string &why);

// Every single-op region the cuda backends answer "supported" for (op x dtype x attribute variant), used by
// tests to prove each generated PTX module assembles and each emulated kernel computes the right values.
std::vector<Region> supported_single_op_regions();

// --- op classes: what a printer must know of a node beyond its op table row -----------------------------------

// The reductions a region holds: the primitive folds of the op table (each row's `reduce:`; planning and every
// printer read the same list, and the accumulator's identity and combine come from the row too).
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
// element) and sort/topk (one work item per element: the line is what it is ranked against).
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

// --- op launches as kernel launches (the cuda backends' op_launch and op_query) --------------------------------

// One argument of a planned launch: a tensor of the op (inputs first, then outputs) seen through a view over
// the launch's element space.
struct PlanArg {
  uint32_t tensor = 0;           // index into inputs ++ outputs
  int64_t offset = 0;            // elements from the tensor's first element
  std::vector<int64_t> strides;  // per axis of the element space
};
struct PlannedLaunch {
  Region region;
  std::vector<int64_t> shape;  // element space; the last `red` axes are reduced per work item
  int32_t red = 0;
  std::vector<PlanArg> args;   // region inputs then outputs
  std::vector<int64_t> extra;  // region.num_extra values
};
// How an op launch runs as generated kernels, in order (data movement ops may need a fill then a copy, cat one
// copy per input). Uses only dtypes, shapes and strides, so a capability query with full descriptors gets the
// same answer as the launch. Returns false with `why` when the generator does not handle it.
bool plan_op(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
             uint32_t num_outputs, const void *attrs, std::vector<PlannedLaunch> &out, std::string &why);
// Whether a planned launch may use the dense (rank 0) kernel: every argument row-major over the element space
// (row values over the leading axes, column values over the reduced ones).
bool plan_is_dense(const PlannedLaunch &l);
// The inputs (bit i: argument i, i < 64) of a planned launch that are broadcast over the whole element space (every
// axis of extent above 1 has stride 0), and whether the launch may use the dense kernel with those inputs read as
// KernelSpec::uniform.
uint64_t plan_uniform_inputs(const PlannedLaunch &l);
bool plan_is_dense(const PlannedLaunch &l, uint64_t uniform);
// Whether `args` are the tensors a fused region was planned for: Region::num_args of them, each with its value's
// dtype and its kind's shape over the element space `shape` (kElem: all of it, kRow: the leading
// shape.size() - red axes, kCol: the trailing `red` axes). The kernel indexes every argument through that space
// alone, so a launch whose arguments differ from the claim the region was built for must be refused, never run:
// it would read and write past the tensors. Returns false with `why` naming the first argument that differs.
bool fused_args_match(const Region &region, const std::vector<int64_t> &shape, int32_t red, const pk_tensor *args,
                      uint32_t num_args, std::string &why);

}  // namespace pk::codegen
