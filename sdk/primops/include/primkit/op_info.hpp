// op_info.hpp — the op table as C++ data (generated from sdk/primops/ops.yaml) and the metadata library built
// on it: dtype facts, shape inference, launch validation and decomposition of composite ops. Shared by the
// runtime, the backends and the conformance suite so that none of them re-derives an op's rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "primkit/primkit.h"

namespace pk::meta {

enum class Tier : uint8_t { primitive, composite };
// derived (composite ops only): the outputs are typed by running the decomposition, so the shape rule cannot
// drift from the program.
enum class ShapeRule : uint8_t { elementwise, reduce, scan, same_as_input, custom, derived };
enum class Alias : uint8_t { new_, view, inplace };
enum class DtypeRule : uint8_t { type_var, fixed, attr, real_of, complex_of };
enum class AttrType : uint8_t { i64, f64, boolean, dtype, ints, enumeration };
enum class Contract : uint8_t { exact, correctly_rounded, ulp, reduction, bound };

struct TypeVarInfo {
  const char *name;
  uint32_t dtype_mask;  // bit (1u << PK_DTYPE_*) per admitted dtype
};

struct OperandInfo {
  const char *name;
  int32_t type_var;     // index into OpInfo::type_vars, or -1
  int32_t fixed_dtype;  // PK_DTYPE_* when type_var == -1
  bool variadic;        // the last input may repeat (>= 1 tensors)
  bool optional;
};

struct OutputInfo {
  const char *name;
  DtypeRule rule;
  int32_t arg;  // type var index, fixed dtype id or attribute index, by rule
};

struct AttrInfo {
  const char *name;
  AttrType type;
  size_t offset;        // of the value (or the list) in the attribute struct
  size_t count_offset;  // of num_<name> for lists
  bool has_min;
  double min;
  bool has_max;
  double max;
  int32_t dim_of;      // input index whose axes the value(s) name, or -1
  int32_t enum_id;     // index of the enum for enumeration attributes, or -1
  int32_t enum_count;  // number of choices
  bool has_default;
  double default_value;
  // ints attributes with a non-empty default list: the list (the generator may leave these unset, which means
  // an empty default list).
  const int64_t *default_ints = nullptr;
  int32_t num_default_ints = 0;
  // No safe default (f64 only): PK_ATTRS_*_INIT and pk_op_init_attrs write NaN, which validation refuses.
  bool required = false;
};

// What the absolute term of a `{bound: N}` contract scales with (docs/numerics.md): nothing (relative only),
// the magnitude of the inputs at the element (elementwise composites), or the largest magnitude of the output
// (row ops: softmax, normalizations, losses).
enum class BoundScale : uint8_t { none, input, output };

struct ContractInfo {
  Contract kind;
  double ulp;        // FAIL limit (ulp) or bound factor
  double quality;    // QUALITY_WARNING limit
  double half;       // limit for 16- and 8-bit floats
  BoundScale scale;  // bound contracts only
};

// How a primitive reduction folds its reduced elements (the row's `reduce:` in ops.yaml): the combine step and the
// identity an empty reduction returns. `line` marks a reduction that is no single fold (var walks each line several
// times); `none` is every op that is not a primitive reduction. Code generators take their reduction list and each
// accumulator's identity and combine from here, so a new reduction with an existing combine is one table row.
enum class Combine : uint8_t { none, line, add, mul, max, min, logical_or, logical_and, bit_xor, argmax, argmin };
enum class Identity : uint8_t { none, zero, one, lowest, highest, false_, true_ };
struct ReduceInfo {
  Combine combine = Combine::none;
  Identity identity = Identity::none;
};
inline bool is_fold(const ReduceInfo &r) {
  return r.combine != Combine::none && r.combine != Combine::line;
}

// How the conformance suite grades an op beyond its contract kind (the row's `grading:`; docs/numerics.md gives
// each rule's formula). `scale` is what a reduction-contract error is measured against; `terms` how many terms
// one output element sums (the n of the reduction bound).
enum class ErrorScale : uint8_t {
  output,             // the largest |output| of the case (default)
  magnitudes,         // the op evaluated exactly on |inputs|, per element (sums, products, contractions; composites)
  input_l1,           // the sum of |inputs| (every DFT term is bounded by it)
  input_l1_twice,     // twice that (a c2r transform counts each stored non-edge term for its Hermitian pair)
  squared_spread,     // (2 max|a|)^2 n / (n - correction): any algorithm's squares of deviations (var)
  one_plus_input_max  // 1 + max|a|: the absolute error of a log of a relative one (logcumsumexp)
};
enum class TermsRule : uint8_t {
  automatic,     // reduce shape: reduced elements per output; scan: the scanned extent; else max input numel
  contraction,   // the last extent of input 0 (matmul's and batch_matmul's K)
  attr_axes,     // the product of input 0's extents at the axes the ints attribute `terms_attr` lists
  attr_product,  // the product of the ints attribute `terms_attr` (a pooling window)
  widest_bin,    // the widest adaptive-pooling bin for the output size in the ints attribute `terms_attr`
  weight_fan_in  // input 1's element count over its first extent (a convolution's terms per output)
};
enum class NonfiniteTerms : uint8_t {
  only_where_exact,  // a non-finite result must match the exact one (default)
  any,               // any non-finite term may make any non-finite result (DFTs mix every term)
  any_complex        // the same, for complex outputs only (complex products)
};
struct GradingInfo {
  ErrorScale scale = ErrorScale::output;
  TermsRule terms = TermsRule::automatic;
  const char *terms_attr = nullptr;  // attr_axes, attr_product, widest_bin: the ints attribute read
  NonfiniteTerms nonfinite = NonfiniteTerms::only_where_exact;
  bool overflow_scale = false;          // also accept what overflows at the magnitudes' scale (products)
  bool complex_zero_sign_free = false;  // the sign of a complex zero result is not graded (div, reciprocal)
};

// A tensor's type as shape inference sees it.
struct TensorType {
  int32_t dtype;  // PK_DTYPE_*
  int32_t ndim;
  int64_t shape[PK_MAX_RANK];
};

// Where a validation or inference failure lands: the status, the argument (inputs first, then outputs; -1 if
// none) and a message that names the op, the argument and the reason. Fixed-size: no allocation on the launch
// path.
struct Diag {
  pk_status status = PK_OK;
  int32_t arg_index = -1;
  char message[PK_MESSAGE_CAPACITY] = {0};
  // printf-style; returns false so that `return d.fail(...)` reads naturally.
  bool fail(pk_status s, int32_t arg, const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 4, 5)))
#endif
      ;
};

struct OpInfo;
// Shape function of an op with `shape: custom`: checks the inputs' shapes against each other and the
// attributes (already range-checked), and writes the outputs' ndim and shape (dtypes are set by the caller).
// Named shape_<op> in sdk/primops/shape_rules.cpp.
using ShapeFn = bool (*)(const OpInfo &op, const TensorType *inputs, uint32_t num_inputs, const void *attrs,
                         TensorType *outputs, Diag &diag);

struct OpInfo {
  uint32_t id;
  const char *name;
  Tier tier;
  const char *category;
  uint32_t num_type_vars;
  const TypeVarInfo *type_vars;
  uint32_t num_inputs;  // declared inputs; a variadic last input stands for 1..n tensors
  const OperandInfo *inputs;
  uint32_t num_outputs;
  const OutputInfo *outputs;
  uint32_t num_attrs;
  const AttrInfo *attrs;
  size_t attrs_size;  // sizeof(pk_attrs_<name>) of this build, 0 if the op has no attributes
  ShapeRule shape;
  Alias alias;
  ContractInfo contract;
  const char *decomposition;  // composite tier: the normative program; nullptr for primitives
  const char *since;
  const char *doc;
  ShapeFn shape_fn;  // custom shape rules only
  // Sample inputs and attributes, e.g. "x: f32[2,3]; dim=1" (see parse_example); nullptr if the row has none.
  // Every custom- or derived-shape op with inputs has one, so tests and case generators can start from it.
  const char *example;
  // Composite tier: the decomposition computes in f32 when an input of a float type variable is f16, bf16 or
  // fp8 (inputs converted up, each output rounded once at the end), as the row's `opmath: f32` says.
  bool opmath_f32;
  ReduceInfo reduce;    // primitive reductions: the fold (see Combine)
  GradingInfo grading;  // conformance grading rules beyond the contract
  // Composite tier: conformance also runs the decomposition as a graph through the backend's fusion hook
  // ("fused:<op>" rows), as the row's `fused_check: true` says.
  bool fused_check;

  bool variadic() const { return num_inputs > 0 && inputs[num_inputs - 1].variadic; }
};

struct DtypeInfo {
  int32_t id;
  const char *name;
  pk_dtype desc;
  const char *doc;
};

// --- lookup -------------------------------------------------------------------------------------------------
// All lookups are O(1) or O(log n), allocation-free and thread-safe (the tables are immutable).
const OpInfo *find_op(uint32_t id);            // nullptr if unknown
const OpInfo *find_op(std::string_view name);  // nullptr if unknown
const OpInfo *ops_begin();
const OpInfo *ops_end();
uint32_t op_count();
const char *op_name(uint32_t id);  // "op#<id>" style fallback is not provided: returns "unknown" if unknown

const DtypeInfo &dtype_info(int32_t id);  // id in [0, PK_DTYPE_COUNT)
int32_t dtype_id(pk_dtype d);             // -1 if the descriptor is no PrimKit dtype
int32_t dtype_id(std::string_view name);  // -1 if unknown
pk_dtype dtype_desc(int32_t id);
const char *dtype_name(int32_t id);  // "?" if out of range
size_t dtype_size(int32_t id);       // bytes per element
bool is_float(int32_t id);           // f16, bf16, f32, f64, fp8
bool is_complex(int32_t id);
bool is_integer(int32_t id);  // u8..i64 (not bool)
bool is_signed(int32_t id);
int32_t real_of(int32_t id);     // c64 -> f32, c128 -> f64, others unchanged
int32_t complex_of(int32_t id);  // f32 -> c64, f64 -> c128, -1 otherwise

const char *enum_value_name(int32_t enum_id, int32_t value);  // "?" if out of range
const char *enum_name(int32_t enum_id);

// --- validation and inference (validate.cpp) -------------------------------------------------------------
// None of these allocate; all are thread-safe. On failure they fill `diag` (status, argument index, message
// "op: argument (name): reason") and return false.

// The bound on every extent (check_shape_size) and on every offset-like attribute (paddings, strides, dilations,
// starts): far above any real tensor, and low enough that an extent plus such an attribute, the sums shape rules
// and kernels compute, cannot overflow int64.
constexpr int64_t kMaxExtent = int64_t{1} << 62;
constexpr size_t kMaxAttrsSize = 1024;  // every attribute struct fits (a static_assert in op_table.cpp checks)
// Most tensors one launch may pass (a variadic input repeats); validate_launch rejects more. Callers may size
// stack arrays of TensorType by these.
constexpr uint32_t kMaxLaunchInputs = 64;
constexpr uint32_t kMaxLaunchOutputs = 8;

int64_t numel(const TensorType &t);
// Converts a descriptor to a TensorType, checking struct_size, ndim, extents >= 0 and a known dtype with one lane.
bool tensor_type(const pk_tensor &t, TensorType &out, const OpInfo *op, int32_t arg_index, Diag &diag);
// Bounds a shape of extents >= 0 and its dtype's size: every extent < 2^62, and the element count and byte
// size of its non-empty extents within int64 (zeros do not exempt the others). `what` starts the message.
bool check_shape_size(const int64_t *shape, int32_t ndim, int32_t dtype, const char *what, int32_t arg, Diag &diag);
// The placement rule of pk_tensor (primkit.h): NULL data only for an empty view at offset 0, and a non-empty
// view's first element aligned to the element size. For a descriptor tensor_type accepted.
bool check_tensor_placement(const pk_tensor &t, const char *what, int32_t arg, Diag &diag);
// The bytes [lo, hi) relative to `data` that the view touches (lo == hi for empty tensors).
void byte_extent(const pk_tensor &t, uint64_t &lo, uint64_t &hi);
// Copies the caller's attribute struct into `out` (kMaxAttrsSize bytes) at this build's size, filling fields
// an older caller did not know with the table's defaults, and rejecting a newer caller's non-zero extra fields.
// attrs may be NULL only for ops without attributes, or when every attribute has a default.
bool normalize_attrs(const OpInfo &op, const void *attrs, void *out, Diag &diag);
// Checks normalized attributes: ranges, enum values, dtype ids, list lengths, dim_of axes of the inputs.
bool check_attrs(const OpInfo &op, const void *attrs, const TensorType *inputs, uint32_t num_inputs, Diag &diag);
// Checks arity, dtypes against the type variables, ranks and the shape rule, and computes every output's dtype
// and shape. `attrs` must be normalized. outputs has op.num_outputs entries.
bool infer_outputs(const OpInfo &op, const TensorType *inputs, uint32_t num_inputs, const void *attrs,
                   TensorType *outputs, Diag &diag);
// Rewrites attribute values that cannot change the op's result into canonical ones, so that no backend's index
// arithmetic meets them: the step of a slice axis with at most one element becomes 1, its limit start + that count
// (slice, slice_in_dim, slice_scatter; a step up to 2^63 - 1 is valid there and stride x step overflowed every
// backend), and pad's
// interior of an axis with at most one element becomes 0. `attrs` must be normalized and checked, and the inputs
// accepted by infer_outputs. Every path that hands attributes to a backend (launch, graph node, exact query) calls
// it.
void canonicalize_attrs(const OpInfo &op, const TensorType *inputs, uint32_t num_inputs, void *attrs);
// The bytes [lo, hi) relative to `data` a validated view reaches (0, 0 when it is empty).
struct ViewSpan {
  uint64_t lo, hi;
};
// One tensor under validation, as a message names it: "add: input 1 (b)", or "pk_executable_run: input 1" when
// the tensors are not an op's.
struct TensorRef {
  const OpInfo *op;
  const char *entry;
  bool output;
  uint32_t idx;
  struct Name {
    char text[192];
  };
  Name name() const;  // built only when a check fails
};
// Checks of one tensor that need what only the caller knows (the runtime: the device that runs the kernel, the real
// size of a buffer it allocated). validate_tensors runs it on each tensor after that tensor's own checks and
// before any check across tensors, so a tensor is known sound before its bytes are compared with others'.
class TensorCheck {
 public:
  virtual bool check(const pk_tensor &t, const TensorRef &ref, int32_t arg, Diag &diag) const = 0;

 protected:
  ~TensorCheck() = default;
};
// The one check of the tensors a kernel will read and write, shared by every entry point that runs kernels on a
// caller's tensors (pk_launch through validate_launch, pk_executable_run): each descriptor (struct_size, rank,
// extents, dtype, size bounds), every view inside its storage_bytes, the placement rule, outputs writable with
// positive non-overlapping strides, no output overlapping an input or another output (except, for an op
// declared in-place, output 0 on exactly input 0's view). `op` names the tensors ("add: input 1 (b)"); without
// one, `entry` does ("pk_executable_run: input 1"). `extra` (may be NULL) adds the caller's checks of each tensor.
// types and spans have num_inputs + num_outputs entries.
bool validate_tensors(const OpInfo *op, const char *entry, const pk_tensor *inputs, uint32_t num_inputs,
                      const pk_tensor *outputs, uint32_t num_outputs, const TensorCheck *extra, TensorType *types,
                      ViewSpan *spans, Diag &diag);
// A capability query's tensor, held to the launch's descriptor rule as far as a query says anything: shape may
// be NULL (any extents; `out`'s extents are then meaningless), struct_size may end before `strides`.
bool validate_query_tensor(const OpInfo &op, const pk_tensor &t, bool output, uint32_t idx, int32_t arg,
                           TensorType &out, Diag &diag);
// Everything the runtime checks before a backend sees a launch: arity, validate_tensors (with `extra`),
// attributes (normalized into attrs_out, kMaxAttrsSize bytes) and inferred output types equal to the outputs.
bool validate_launch(const OpInfo &op, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                     uint32_t num_outputs, const void *attrs, void *attrs_out, Diag &diag,
                     const TensorCheck *extra = nullptr);

// Writes the op's attribute struct with every attribute at its table default (0 / empty where there is none)
// and struct_size set; out has at least op.attrs_size bytes. No-op for ops without attributes.
void default_attrs(const OpInfo &op, void *out);

// --- examples (example.cpp) ---------------------------------------------------------------------------------

// Parses an op's example text, e.g. "x: f32[2,3]; dim=1" or "tensors: f32[2,3], f32[2,1]; dim=1": inputs in
// order (a variadic input lists several types), attributes by name (ints as [1,2], bool as true/false, dtypes
// and enum values by name; unnamed attributes take their defaults). attrs_out (kMaxAttrsSize bytes) receives the
// attribute struct. Fails with PK_ERROR_INVALID_ARGUMENT and a message naming the problem.
bool parse_example(const OpInfo &op, const char *text, std::vector<TensorType> &inputs, void *attrs_out, Diag &diag);

// --- decompositions (decomposition.cpp) -------------------------------------------------------------------

struct DecomposedNode {
  uint32_t op_id;
  std::vector<uint8_t> attrs;   // the callee's normalized attribute struct (empty if it has none)
  std::vector<int32_t> inputs;  // value indices
  std::vector<int32_t> outputs;
};

struct Decomposition {
  std::vector<TensorType> values;     // values[0..num_inputs) are the composite's inputs
  std::vector<DecomposedNode> nodes;  // topological order, primitives only
  std::vector<int32_t> outputs;       // one value index per composite output
};

// Expands a composite op for concrete input types into primitive nodes (the row's decomposition program),
// validating every node as a launch would. The parsed program is cached per op; thread-safe.
bool decompose(const OpInfo &op, const TensorType *inputs, uint32_t num_inputs, const void *attrs, Decomposition &out,
               Diag &diag);

}  // namespace pk::meta
