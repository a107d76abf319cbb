// cl_codegen.hpp — OpenCL C 1.2 source generation from the op table: elementwise graphs (one op, or a fused
// chain), reductions, tiled matmul and creation kernels. Sources are generated at run time, the first time a
// (kernel kind, op, dtypes) is launched, and compiled by cl_programs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"
#include "primkit/primkit.h"
#include "primkit/region.hpp"

namespace pk::ocl {

// What the device's OpenCL C compiler offers beyond the core language.
struct DeviceCaps {
  bool fp64 = false;  // cl_khr_fp64
  bool fp16 = false;  // cl_khr_fp16
};

// The shape/strides of one tensor as kernels receive them (a struct argument; layout-identical to the OpenCL C
// `pk_dims` the generated sources declare).
struct Dims {
  int64_t v[PK_MAX_RANK];
};

// Whether kernels can compute in this dtype on the device; `why` says why not.
bool dtype_supported(int32_t dtype, const DeviceCaps &caps, std::string *why);
// Storage bytes of a dtype (1, 2, 4 or 8; 16 for c128).
size_t dtype_bytes(int32_t dtype);

// One node of an elementwise graph: op, dtypes of its inputs and output, and op specifics.
struct EwNode {
  uint32_t op_id = 0;
  uint32_t num_inputs = 0;
  int32_t inputs[3] = {-1, -1, -1};  // value indices
  int32_t output = -1;
  uint32_t variant = 0;     // round: the rounding mode; convert_element_type: the target dtype
  uint64_t const_bits = 0;  // fill: the value, already converted to the output dtype's storage bits
};

// A graph of elementwise nodes over values of one shape. The kernel's arguments are args[0..num_in_args) (loaded)
// then args[num_in_args..) (stored), each a tensor of its value's dtype.
struct EwGraph {
  std::vector<int32_t> dtypes;  // per value
  std::vector<int32_t> args;
  uint32_t num_in_args = 0;
  std::vector<EwNode> nodes;
};

// Whether one elementwise op (categories unary, binary, compare, ternary, conversion, plus copy_to) runs for
// these dtypes. in_dtypes has num_inputs entries. `variant` as in EwNode.
bool ew_op_supported(uint32_t op_id, const int32_t *in_dtypes, uint32_t num_inputs, int32_t out_dtype, uint32_t variant,
                     const DeviceCaps &caps, std::string *why);

// OpenCL C for an elementwise graph, with kernels pk_ew_contig (dense tensors: one element per work-item),
// pk_ew_strided (any strides) and, when *vector is set on return, pk_ew_vec (dense, *vec_elems elements per
// work-item through vloadN/vstoreN) and pk_ew_vec_nt (the same with non-temporal stores: outputs 32-byte aligned).
// Arguments: for each tensor `ptr, ulong offset` (+ `pk_dims strides` in the strided kernel), then (strided) `pk_dims
// shape, int rank`, then `ulong n`.
std::string gen_elementwise(const EwGraph &g, const DeviceCaps &caps, bool *vector, uint32_t *vec_elems);

// Reductions sum/prod/amax/amin for one dtype: kernels pk_red_direct (one work-item per output),
// pk_red_partial and pk_red_final (two-stage, work-groups of kRedLocal over a slice of the reduced elements).
constexpr uint32_t kRedLocal = 64;
// The fold of a reduction op: its op table row's `reduce:` combine (mean, a composite this backend runs natively,
// folds as a sum); meta::Combine::none for every other op.
meta::Combine reduction_fold(uint32_t op_id);
bool reduction_supported(uint32_t op_id, int32_t dtype, const DeviceCaps &caps, std::string *why);
std::string gen_reduction(uint32_t op_id, int32_t dtype, const DeviceCaps &caps);
// argmax / argmin along one axis: kernel pk_arg_direct, one work-item per output (i64 indices).
bool argreduce_supported(uint32_t op_id, int32_t dtype, const DeviceCaps &caps, std::string *why);
std::string gen_argreduce(uint32_t op_id, int32_t dtype, const DeviceCaps &caps);
// The accumulator's size in bytes (for the partials buffer of the two-stage path).
size_t reduction_acc_bytes(int32_t dtype);

// Tiled matmul C[b] = A[b] x B[b] through local memory: tiles of kMmTile x kMmTile outputs per work-group of
// kMmLocal x kMmLocal work-items (each computes a kMmTile/kMmLocal square of outputs), K in steps of kMmTileK.
constexpr uint32_t kMmTile = 32, kMmLocal = 8, kMmTileK = 16;
bool matmul_supported(int32_t dtype, const DeviceCaps &caps, std::string *why);
std::string gen_matmul(int32_t dtype, const DeviceCaps &caps);

// Data movement by element size: pk_move copies an iteration space between two tensors, each side addressed as
// base + sum(index * map), either directly as an element offset or (flat) as a row-major position mapped through
// that tensor's shape and strides. pk_take gathers through an i32/i64 index tensor (gather, index_select).
std::string gen_move(size_t bytes);
std::string gen_take(size_t bytes, int32_t idx_dt);
// scatter (plain, a raw copy) and scatter_reduce: kernel pk_scatter, one work-item per output element.
std::string gen_scatter(int32_t dt, int32_t idx_dt, const DeviceCaps &caps);
// index_put with k index tensors: kernel pk_index_put, one work-item per output element.
std::string gen_index_put(int32_t dt, int32_t idx_dt, uint32_t k, const DeviceCaps &caps);
// Ops along one axis: cumsum/cumprod/cummax/cummin/logcumsumexp (pk_scan, a work-item per line), sort/topk
// (pk_sort, a work-item per element) and searchsorted (pk_search), var (pk_var, a work-item per output).
bool scan_supported(uint32_t op, int32_t dtype, const DeviceCaps &caps, std::string *why);
std::string gen_scan(uint32_t op, int32_t dtype, const DeviceCaps &caps);
std::string gen_sort(int32_t dtype, const DeviceCaps &caps);
std::string gen_var(int32_t dtype, const DeviceCaps &caps);
// dot_general: pk_dot_general, one work-item per output. convolution: pk_conv, an implicit GEMM through the
// matmul's local-memory tiles (kMmTile, kMmLocal, kMmTileK), one group per global z.
std::string gen_dot_general(int32_t dtype, const DeviceCaps &caps);
std::string gen_conv(int32_t dtype, const DeviceCaps &caps);
// philox_uniform / philox_normal / philox_randint: pk_philox, one work-item per element.
std::string gen_philox(uint32_t op, int32_t dtype, const DeviceCaps &caps);

// Creation: pk_set_contig / pk_set_strided write one storage pattern (passed as ulong) into a tensor of `bytes`
// wide elements (16-byte c128 elements: the pattern is the real part's, the imaginary part +0); pk_iota writes
// start + i * step converted to dtype.
std::string gen_set(size_t bytes);
std::string gen_iota(int32_t dtype, const DeviceCaps &caps);

// The fusion planner's regions (primkit/region.hpp) as OpenCL C (cl_region_printer.cpp), printed with the
// expressions and accumulators of the kernels above. Whether `r` prints for this device (every node an op and dtype
// the backend generates; no complex values, per-launch scalars or index reductions; at most kMaxRegionArgs
// arguments); `why` says why not.
constexpr size_t kMaxRegionArgs = 16;
bool region_printable(const codegen::Region &r, const DeviceCaps &caps, std::string *why);
// A region without reductions: gen_elementwise's program (its kernels, arguments and vector variants).
std::string print_elementwise_region(const codegen::Region &r, const DeviceCaps &caps, bool *vector,
                                     uint32_t *vec_elems);
// A reducing region (a row program, or a chain closed by a reduction over the last axis) over rows of `cols`
// elements: kernels pk_row (every argument dense over its kind's shape) and pk_row_strided, one work-item per row
// (work-groups of kRowLocal). Arguments: for each of Region::num_args tensors `ptr, ulong offset` (+ `pk_dims
// strides` over the element space in the strided kernel), then (strided) `pk_dims shape, int rank, int lead` (lead:
// the unreduced axes), then `ulong rows, ulong cols`. Empty (with `why`) when it does not print.
constexpr uint32_t kRowLocal = 64;
std::string print_row_region(const codegen::Region &r, const DeviceCaps &caps, std::string *why);

// Host-side: the storage bits of `value` converted to dtype as convert_element_type does (round to nearest even,
// ints truncate and saturate, NaN -> 0, f8e4m3fn saturates, bool is value != 0).
uint64_t value_bits(double value, int32_t dtype);
// The largest / lowest finite value of a dtype (maximum_value / minimum_value), as storage bits; complex dtypes: that
// of their parts' dtype as the real part, +0 as the imaginary part.
uint64_t extreme_bits(int32_t dtype, bool largest);

}  // namespace pk::ocl
