// codegen.hpp — PrimKit's LLVM kernel generator: one description of a region (a single op, a chain of
// elementwise ops, a chain closed by a reduction over the trailing axes, or a row program such as softmax with
// several reductions whose results are broadcast back over the row) lowered to LLVM IR once and then
//   (a) to PTX through LLVM's NVPTX target (sm_80, sm_90) for the cuda backend,
//   (b) to host code through ORC LLJIT, either as a grid emulator (the very same kernel body, with block and
//       thread indices supplied by loops: the cuda-emu backend) or as a plain loop over a range of work items
//       (the CPU backend's fused kernels).
// This header deliberately includes no LLVM header, so backends that use it compile quickly and never see
// LLVM's warnings.
//
// Kernel ABI shared by all three targets — the parameters, in order, each passed by value (for PTX through
// cuLaunchKernel's kernelParams, for host entries through an array of pointers to the values, the same shape):
//   ptr arg[0..K)      the region's inputs then outputs (Region::inputs, Region::outputs)
//   i64 n              work items: elements for elementwise regions, rows for reduction regions
//   i64 cols           reduction length (product of the reduced trailing axes); 1 for elementwise regions
//   strided layout only (KernelSpec::rank = r > 0):
//   i64 shape[r]       extents of the element space (the inputs' shape, reduced axes last)
//   i64 strides[K][r]  element strides of each argument; a row value has stride 0 on the reduced axes, a column
//                      value stride 0 on the others
//   i64 extra[Region::num_extra]   op scalars that vary per launch (iota's start and step)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primkit/primkit.h"

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

// Empty when the generator compiles the region; otherwise why not (names the op and dtype).
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

// --- targets ----------------------------------------------------------------------------------------------

// PTX for sm (80 or 90). The kernel is named by `entry`. Thread-safe.
bool emit_ptx(const KernelSpec &spec, int sm, std::string &ptx, std::string &entry, std::string &err);
// The LLVM IR text of the kernel for a target ("nvptx", "emu" or "cpu"), for debugging and tests.
bool emit_ir(const KernelSpec &spec, const std::string &target, std::string &ir, std::string &err);

// Host entry points compiled by the JIT.
//   EmuFn: runs the grid (grid x block threads) of the PTX kernel's body on the calling thread.
//   CpuFn: runs work items [begin, end) as one loop (vectorized by LLVM).
using EmuFn = void (*)(void **params, uint32_t grid, uint32_t block);
using CpuFn = void (*)(void **params, int64_t begin, int64_t end);

// The only calls into JIT-compiled code. UBSan's -fsanitize=function (clang 17+) checks an indirect call by
// reading a type signature that clang places just before every function it compiles; LLVM's JIT emits none, so
// the check reads bytes before the kernel (a SEGV when the kernel starts a page). Sanitizer builds exempt these
// two calls from that one check (cmake/Sanitizers.cmake, tools/run-asan.sh).
#if defined(__clang__)
#define PK_NO_SANITIZE_FUNCTION_TYPE __attribute__((no_sanitize("function")))
#else
#define PK_NO_SANITIZE_FUNCTION_TYPE
#endif
PK_NO_SANITIZE_FUNCTION_TYPE inline void call_jit(EmuFn fn, void **params, uint32_t grid, uint32_t block) {
  fn(params, grid, block);
}
PK_NO_SANITIZE_FUNCTION_TYPE inline void call_jit(CpuFn fn, void **params, int64_t begin, int64_t end) {
  fn(params, begin, end);
}

// cpu_streaming: the cpu entry with non-temporal vector stores (x86; elsewhere the same as cpu), for elementwise
// regions whose outputs are far larger than the caches. Reducing regions get the plain cpu entry.
enum class HostMode { emu, cpu, cpu_streaming };

// Compiles (or finds in the process-wide cache) the host entry of a spec. Thread-safe; compiled code lives
// until the process ends (a kernel handle may be destroyed while another holds the same cached code).
// compile_ms (if not NULL) receives the time spent compiling, 0 on a cache hit.
void *jit_compile(const KernelSpec &spec, HostMode mode, std::string &err, double *compile_ms = nullptr);

// Kernel launch parameters in the kernel ABI above, owning their storage. values() is what kernelParams /
// the host entries take.
class Params {
 public:
  // pointers: one per argument (data + byte_offset); shape/strides only for a strided spec.
  Params(const std::vector<void *> &pointers, int64_t n, int64_t cols, const std::vector<int64_t> &shape,
         const std::vector<std::vector<int64_t>> &strides, const std::vector<int64_t> &extra = {});
  // The slots point into this object's own vectors: it is neither copied nor moved.
  Params(const Params &) = delete;
  Params &operator=(const Params &) = delete;
  void **values() { return slots_.data(); }

 private:
  std::vector<void *> pointers_;
  std::vector<int64_t> scalars_;
  std::vector<void *> slots_;
};

// Block size the generated kernels are launched with, and the grid for n work items.
constexpr uint32_t kBlock = 256;
uint32_t grid_for(int64_t n);

}  // namespace pk::codegen
