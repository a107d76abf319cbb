// region.cpp — what the generator compiles: which (op, dtype) pairs, the checks of a Region, the canonical key
// that caches compiled kernels, and the single-op regions. Launches become regions in region_plan.cpp, fusion
// offers in region_fusion.cpp. No LLVM here.
#include <algorithm>
#include <cstdio>

#include "primkit/op_info.hpp"
#include "primkit/region.hpp"

#include "region_internal.hpp"

namespace pk::codegen {

namespace detail {

namespace {

bool is_fp(int32_t d) {
  return d == PK_DTYPE_F16 || d == PK_DTYPE_BF16 || d == PK_DTYPE_F32 || d == PK_DTYPE_F64 || d == PK_DTYPE_F8E4M3FN ||
         d == PK_DTYPE_F8E5M2;
}
bool is_int(int32_t d) {
  return d == PK_DTYPE_U8 || d == PK_DTYPE_I8 || d == PK_DTYPE_I16 || d == PK_DTYPE_I32 || d == PK_DTYPE_I64;
}
bool is_bool(int32_t d) {
  return d == PK_DTYPE_BOOL;
}

bool is_cx(int32_t d) {
  return d == PK_DTYPE_C64 || d == PK_DTYPE_C128;
}

constexpr unsigned kF = 1, kI = 2, kB = 4, kC = 8;  // dtype classes: float, integer, bool, complex

}  // namespace

unsigned cls(int32_t d) {
  return is_fp(d) ? kF : is_int(d) ? kI : is_bool(d) ? kB : is_cx(d) ? kC : 0;
}

namespace {

// Dtype classes each op accepts for its (first data) input. Everything absent is answered "not supported".
struct OpRule {
  uint32_t op;
  unsigned classes;
};
const OpRule kRules[] = {
    {PK_OP_ABS, kF | kI | kC},
    {PK_OP_NEG, kF | kI | kC},
    {PK_OP_EXP, kF | kC},
    {PK_OP_LOG, kF | kC},
    {PK_OP_EXP2, kF},
    {PK_OP_LOG2, kF},
    {PK_OP_EXPM1, kF},
    {PK_OP_TANH, kF | kC},
    {PK_OP_LOG1P, kF},
    {PK_OP_LOG10, kF},
    {PK_OP_SIN, kF | kC},
    {PK_OP_COS, kF | kC},
    {PK_OP_TAN, kF},
    {PK_OP_ASIN, kF},
    {PK_OP_ACOS, kF},
    {PK_OP_ATAN, kF},
    {PK_OP_SINH, kF},
    {PK_OP_COSH, kF},
    {PK_OP_ASINH, kF},
    {PK_OP_ACOSH, kF},
    {PK_OP_ATANH, kF},
    {PK_OP_CBRT, kF},
    {PK_OP_ERF, kF},
    {PK_OP_ERFC, kF},
    {PK_OP_ERFCX, kF},
    {PK_OP_ERF_INV, kF},
    {PK_OP_NDTRI, kF},
    {PK_OP_LGAMMA, kF},
    {PK_OP_DIGAMMA, kF},
    {PK_OP_BESSEL_I0, kF},
    {PK_OP_BESSEL_I0E, kF},
    {PK_OP_BESSEL_I1, kF},
    {PK_OP_BESSEL_I1E, kF},
    {PK_OP_BESSEL_J0, kF},
    {PK_OP_BESSEL_J1, kF},
    {PK_OP_SPHERICAL_BESSEL_J0, kF},
    {PK_OP_IGAMMA, kF},
    {PK_OP_IGAMMAC, kF},
    {PK_OP_ZETA, kF},
    {PK_OP_CONVOLUTION, kF},  // the table admits f32 and f64 only
    {PK_OP_POPULATION_COUNT, kI},
    {PK_OP_COUNT_LEADING_ZEROS, kI},
    {PK_OP_SQRT, kF | kC},
    {PK_OP_RECIPROCAL, kF | kC},
    {PK_OP_RSQRT, kF},
    {PK_OP_FLOOR, kF},
    {PK_OP_CEIL, kF},
    {PK_OP_TRUNC, kF},
    {PK_OP_ROUND, kF},
    {PK_OP_BITWISE_NOT, kI | kB},
    {PK_OP_ISFINITE, kF | kI | kC},
    {PK_OP_ISNAN, kF | kI | kC},
    {PK_OP_ISINF, kF | kI | kC},
    {PK_OP_LOGICAL_NOT, kF | kI | kB | kC},
    {PK_OP_FILL, kF | kI | kB | kC},
    {PK_OP_SIGN, kF | kI},
    {PK_OP_SIGNBIT, kF | kI},
    {PK_OP_ADD, kF | kI | kC},
    {PK_OP_SUB, kF | kI | kC},
    {PK_OP_MUL, kF | kI | kC},
    {PK_OP_DIV, kF | kI | kC},
    {PK_OP_MAXIMUM, kF | kI},
    {PK_OP_MINIMUM, kF | kI},
    {PK_OP_FMAX, kF | kI},
    {PK_OP_FMIN, kF | kI},
    {PK_OP_SHIFT_LEFT, kI},
    {PK_OP_SHIFT_RIGHT_ARITHMETIC, kI},
    {PK_OP_SHIFT_RIGHT_LOGICAL, kI},
    {PK_OP_BITWISE_AND, kI | kB},
    {PK_OP_BITWISE_OR, kI | kB},
    {PK_OP_BITWISE_XOR, kI | kB},
    {PK_OP_LOGICAL_AND, kF | kI | kB | kC},
    {PK_OP_LOGICAL_OR, kF | kI | kB | kC},
    {PK_OP_LOGICAL_XOR, kF | kI | kB | kC},
    {PK_OP_COPYSIGN, kF},
    {PK_OP_ATAN2, kF},
    {PK_OP_HYPOT, kF},
    {PK_OP_POW, kF | kC},
    {PK_OP_NEXTAFTER, kF},
    {PK_OP_FMOD, kF | kI},
    {PK_OP_REMAINDER, kF | kI},
    {PK_OP_GCD, kI},
    {PK_OP_LT, kF | kI},
    {PK_OP_LE, kF | kI},
    {PK_OP_GT, kF | kI},
    {PK_OP_GE, kF | kI},
    {PK_OP_EQ, kF | kI | kB | kC},
    {PK_OP_NE, kF | kI | kB | kC},
    {PK_OP_WHERE, kF | kI | kB | kC},  // by the dtype of `a` (input 1)
    {PK_OP_FMA, kF},
    {PK_OP_CONVERT_ELEMENT_TYPE, kF | kI | kB | kC},
    {PK_OP_SUM, kF | kI | kC},
    {PK_OP_AMAX, kF | kI},
    {PK_OP_PROD, kF | kI | kC},
    {PK_OP_AMIN, kF | kI},
    {PK_OP_ANY, kF | kI | kB | kC},
    {PK_OP_ALL, kF | kI | kB | kC},
    {PK_OP_XOR_SUM, kI | kB},
    {PK_OP_ARGMAX, kF | kI},
    {PK_OP_ARGMIN, kF | kI},
    {PK_OP_IOTA, kF | kI | kB | kC},  // by the output dtype
    {PK_OP_VAR, kF | kC},
    {PK_OP_CUMSUM, kF | kI | kC},
    {PK_OP_CUMPROD, kF | kI | kC},
    {PK_OP_CUMMAX, kF | kI},
    {PK_OP_CUMMIN, kF | kI},
    {PK_OP_LOGCUMSUMEXP, kF},
    {PK_OP_ANGLE, kF | kC},  // f32/f64 and complex (check_node)
    {PK_OP_CONJ_PHYSICAL, kC},
    {PK_OP_REAL, kC},
    {PK_OP_IMAG, kC},
    {PK_OP_COMPLEX, kF},  // f32/f64 parts -> c64/c128
    {PK_OP_POLAR, kF},
    {PK_OP_GATHER, kF | kI | kB},        // complex too: single() moves the data as bits
    {PK_OP_INDEX_SELECT, kF | kI | kB},  // planned as a gather
    {PK_OP_DOT_GENERAL, kF | kI | kC},   // matmul and batch_matmul too (planned as a dot_general)
    {PK_OP_SORT, kF | kI},
    {PK_OP_TOPK, kF | kI},
    {PK_OP_SEARCHSORTED, kF | kI},
    {PK_OP_PHILOX_UNIFORM, kF},  // by the output dtype (no inputs)
    {PK_OP_PHILOX_NORMAL, kF},
    {PK_OP_PHILOX_RANDINT, kF | kI},
    {PK_OP_SCATTER, kF | kI | kB},  // moves bits (see single())
    {PK_OP_SCATTER_REDUCE, kF | kI},
    {PK_OP_INDEX_PUT, kF | kI},
    {PK_OP_FFT_C2C, kC},  // direct DFTs (plan_fft)
    {PK_OP_FFT_R2C, kF},  // f32/f64 -> c64/c128 (check_complex)
    {PK_OP_FFT_C2R, kC},
};

const OpRule *rule(uint32_t op) {
  for (const OpRule &r : kRules)
    if (r.op == op) return &r;
  return nullptr;
}

}  // namespace

std::string text(const char *fmt, const char *a, const char *b) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

namespace {

// The dtype rules of nodes with complex operands or results (and angle, complex, polar), which the op table
// states through real_of / complex_of; empty if the generator compiles the node.
std::string check_complex(const Node &n, const std::vector<int32_t> &dtypes, int32_t t, int32_t out, const char *name) {
  const uint32_t op = n.op_id;
  const bool wide = t == PK_DTYPE_F32 || t == PK_DTYPE_F64;
  if (op == PK_OP_COMPLEX || op == PK_OP_POLAR) {
    if (!wide || n.inputs.size() != 2 || dtypes[n.inputs[1]] != t)
      return text("%s: dtype %s is not supported by the code generator (f32 and f64 operands)", name,
                  pk::meta::dtype_name(t));
    if (out != pk::meta::complex_of(t))
      return text("%s: the output must be %s", name, pk::meta::dtype_name(pk::meta::complex_of(t)));
    return "";
  }
  if (op == PK_OP_ANGLE && !(wide || is_cx(t)))
    return text("%s: dtype %s is not supported by the code generator", name, pk::meta::dtype_name(t));
  if (op == PK_OP_CONVERT_ELEMENT_TYPE || op == PK_OP_FILL || op == PK_OP_IOTA) return "";
  if (op == PK_OP_FFT_R2C) {
    if (!wide) return text("%s: dtype %s is not supported by the code generator", name, pk::meta::dtype_name(t));
    if (out != pk::meta::complex_of(t))
      return text("%s: the output must be %s", name, pk::meta::dtype_name(pk::meta::complex_of(t)));
    return "";
  }
  if (!is_cx(t) && op != PK_OP_ANGLE)
    return text("%s: a %s result from real operands is not supported by the code generator", name,
                pk::meta::dtype_name(out));
  for (size_t q = op == PK_OP_WHERE ? 1 : 0; q < n.inputs.size(); ++q)
    if (dtypes[n.inputs[q]] != t) return text("%s: operands of different dtypes", name);
  // The op table's rule for output 0: the operand's dtype, its real part's (abs, real, var, fft_c2r, ...) or a
  // fixed one (bool for the predicates, comparisons, any, all).
  const pk::meta::OpInfo *info = pk::meta::find_op(op);
  int32_t want = t;
  if (info != nullptr && info->num_outputs > 0) {
    const pk::meta::OutputInfo &o0 = info->outputs[0];
    if (o0.rule == pk::meta::DtypeRule::real_of) want = pk::meta::real_of(t);
    if (o0.rule == pk::meta::DtypeRule::fixed) want = o0.arg;
  }
  if (out != want) return text("%s: the output must be %s", name, pk::meta::dtype_name(want));
  return "";
}

}  // namespace

// Checks one node against the rules; empty if the generator compiles it.
std::string check_node(const Node &n, const std::vector<int32_t> &dtypes) {
  const char *name = pk::meta::op_name(n.op_id);
  const OpRule *r = rule(n.op_id);
  if (r == nullptr) return text("%s: the code generator has no lowering for this op", name);
  const bool creates = n.op_id == PK_OP_FILL || n.op_id == PK_OP_IOTA || is_philox_op(n.op_id);
  if (n.inputs.empty() && !creates) return text("%s: no inputs", name);
  if (n.op_id == PK_OP_WHERE && n.inputs.size() != 3) return text("%s: needs three inputs", name);
  if ((n.op_id == PK_OP_GATHER || n.op_id == PK_OP_INDEX_SELECT || n.op_id == PK_OP_DOT_GENERAL ||
       n.op_id == PK_OP_CONVOLUTION || is_order_op(n.op_id)) &&
      n.inputs.size() != 2)
    return text("%s: needs two inputs", name);
  for (uint32_t v : n.inputs)
    if (v >= dtypes.size()) return text("%s: input value out of range", name);
  if (n.output >= dtypes.size()) return text("%s: output value out of range", name);
  const int32_t t = n.inputs.empty() ? dtypes[n.output] : dtypes[n.inputs[n.op_id == PK_OP_WHERE ? 1 : 0]];
  const int32_t out = dtypes[n.output];
  if (!(cls(t) & r->classes))
    return text("%s: dtype %s is not supported by the code generator", name, pk::meta::dtype_name(t));
  if (!cls(out))
    return text("%s: output dtype %s is not supported by the code generator", name, pk::meta::dtype_name(out));
  if (is_cx(t) || is_cx(out) || n.op_id == PK_OP_ANGLE || n.op_id == PK_OP_COMPLEX || n.op_id == PK_OP_POLAR) {
    std::string w = check_complex(n, dtypes, t, out, name);
    if (!w.empty()) return w;
  }
  if (n.op_id == PK_OP_GATHER || n.op_id == PK_OP_INDEX_SELECT) {
    const int32_t it = dtypes[n.inputs[1]];
    if (it != PK_DTYPE_I32 && it != PK_DTYPE_I64)
      return text("%s: index dtype %s is not supported by the code generator", name, pk::meta::dtype_name(it));
  }
  if (n.op_id == PK_OP_CONVERT_ELEMENT_TYPE && out == PK_DTYPE_BF16 &&
      (t == PK_DTYPE_F64 || t == PK_DTYPE_C128 || t == PK_DTYPE_I32 || t == PK_DTYPE_I64)) {
    // Going through f32 would round twice; a direct rounding from 53/64 bits to bf16 is not written yet.
    return text("convert_element_type: %s -> bf16 is not supported by the code generator (double rounding)",
                pk::meta::dtype_name(t));
  }
  if (is_scatter_op(n.op_id)) {
    // a, index, src (scatter) or a, values, indices... (index_put): the data of a's dtype, i32/i64 indices.
    const size_t first_index = n.op_id == PK_OP_INDEX_PUT ? 2 : 1;
    if (n.inputs.size() < first_index + 1 || (n.op_id != PK_OP_INDEX_PUT && n.inputs.size() != 3))
      return text("%s: wrong number of inputs", name);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int32_t d = dtypes[n.inputs[k]];
      const bool is_index = n.op_id == PK_OP_INDEX_PUT ? k >= 2 : k == 1;
      if (is_index && d != PK_DTYPE_I32 && d != PK_DTYPE_I64)
        return text("%s: index dtype %s is not supported by the code generator", name, pk::meta::dtype_name(d));
      if (!is_index && d != t) return text("%s: data operands of one dtype only", name);
    }
    if (out != t) return text("%s: the output has a's dtype", name);
  }
  if ((n.op_id == PK_OP_DOT_GENERAL || n.op_id == PK_OP_CONVOLUTION) && (dtypes[n.inputs[1]] != t || out != t))
    return text("%s: operands and result of one dtype only", name);
  return "";
}

// Fills the per-op attributes of a node from the op's attribute struct (normalized by the runtime).
void take_attrs(Node &n, const void *attrs) {
  if (attrs == nullptr) return;
  if (n.op_id == PK_OP_FILL) n.fill_value = static_cast<const pk_attrs_fill *>(attrs)->value;
  if (n.op_id == PK_OP_ROUND) n.round_mode = static_cast<const pk_attrs_round *>(attrs)->mode;
  if (n.op_id == PK_OP_SORT) n.round_mode = static_cast<const pk_attrs_sort *>(attrs)->descending != 0;
  if (n.op_id == PK_OP_TOPK) n.round_mode = static_cast<const pk_attrs_topk *>(attrs)->largest != 0;
  if (n.op_id == PK_OP_SEARCHSORTED) n.round_mode = static_cast<const pk_attrs_searchsorted *>(attrs)->right != 0;
  if (n.op_id == PK_OP_SCATTER_REDUCE) {
    const auto &a = *static_cast<const pk_attrs_scatter_reduce *>(attrs);
    n.round_mode = a.reduce + (a.include_self ? kIncludeSelf : 0);
  }
  if (n.op_id == PK_OP_INDEX_PUT) n.round_mode = static_cast<const pk_attrs_index_put *>(attrs)->accumulate != 0;
  if (n.op_id == PK_OP_VAR) n.fill_value = static_cast<const pk_attrs_var *>(attrs)->correction;
}

// A reduction qualifies when it reduces exactly the last axis of an input of rank >= 1.
bool last_axis_only(uint32_t op, const void *attrs, int32_t ndim, std::string &why) {
  if (attrs == nullptr) {
    why = text("%s: the code generator reduces only the last axis (no attributes given)", pk::meta::op_name(op));
    return false;
  }
  if (!is_dims_reduction(op)) {
    why = text("%s: the code generator fuses only reductions over a list of axes", pk::meta::op_name(op));
    return false;
  }
  const auto *a = static_cast<const pk_attrs_sum *>(attrs);  // every dims-reduction shares the layout
  if (ndim < 1 || a->num_dims != 1 || a->dims[0] != ndim - 1) {
    why = text("%s: the code generator reduces only the last axis", pk::meta::op_name(op));
    return false;
  }
  return true;
}

// cummax/cummin: one output dtype given (a capability query) or both.
bool single(uint32_t op_id, const int32_t *in_dtypes, uint32_t num_inputs, const int32_t *out_dtypes,
            uint32_t num_outputs, const void *attrs, Region &out, std::string &why) {
  const pk::meta::OpInfo *op = pk::meta::find_op(op_id);
  // sort and topk read their input twice (the element being placed, and the line it is ranked against).
  const bool twice = is_order_op(op_id) && num_inputs == 1;
  const bool indices = op_id == PK_OP_CUMMAX || op_id == PK_OP_CUMMIN || is_order_op(op_id);
  if (op == nullptr || op->tier != pk::meta::Tier::primitive || num_outputs < 1 || num_outputs > (indices ? 2u : 1u) ||
      (num_inputs == 0 && op_id != PK_OP_IOTA && op_id != PK_OP_FILL && !is_philox_op(op_id))) {
    why = text("%s: the code generator has no lowering for this op", op ? op->name : "unknown op");
    return false;
  }
  Region r;
  for (uint32_t i = 0; i < num_inputs; ++i) {
    if (in_dtypes[i] < 0) {
      why = text("%s: unknown input dtype", op->name);
      return false;
    }
    r.dtypes.push_back(in_dtypes[i]);
    r.inputs.push_back(i);
  }
  if (twice) {
    r.dtypes.push_back(in_dtypes[0]);
    r.inputs.push_back(1);
  }
  const uint32_t nin = static_cast<uint32_t>(r.inputs.size());
  r.dtypes.push_back(out_dtypes[0]);
  Node n;
  // matmul and batch_matmul are dot_generals (one kernel: an output element per work item, its dot product the line).
  n.op_id = op_id == PK_OP_MATMUL || op_id == PK_OP_BATCH_MATMUL ? static_cast<uint32_t>(PK_OP_DOT_GENERAL) : op_id;
  for (uint32_t i = 0; i < nin; ++i) n.inputs.push_back(i);
  n.output = nin;
  take_attrs(n, attrs);
  r.outputs.push_back(nin);
  if (indices) {
    r.dtypes.push_back(num_outputs > 1 ? out_dtypes[1] : static_cast<int32_t>(PK_DTYPE_I64));
    r.outputs.push_back(nin + 1);
  }
  if (op_id == PK_OP_IOTA) r.num_extra = 2;
  if (is_philox_op(op_id)) r.num_extra = 4;
  if (op_id == PK_OP_CONVOLUTION) {
    // Spatial axes: 2 unless the planner says otherwise (it sets round_mode and num_extra from the input rank).
    n.round_mode = 2;
    r.num_extra = 8;
  }
  if (is_fft_op(op_id)) {
    // One transformed axis unless the planner says otherwise (it sets round_mode and num_extra from dims).
    n.round_mode = 1;
    r.num_extra = 1;
  }
  int32_t lanes = 1;
  if (is_order_op(op_id) || op_id == PK_OP_SEARCHSORTED || op_id == PK_OP_SCATTER || op_id == PK_OP_SCATTER_REDUCE)
    r.num_extra = 1;
  if (op_id == PK_OP_SCATTER && num_inputs == 3 && cls(in_dtypes[0]) && bits_dtype(in_dtypes[0], lanes) >= 0 &&
      in_dtypes[0] == in_dtypes[2] && in_dtypes[0] == out_dtypes[0]) {
    // A plain scatter moves bits, as gather does: one word per element (c64 as an i64), or two (c128: plan_scatter
    // adds an axis of the two i64 words).
    r.dtypes[0] = r.dtypes[2] = r.dtypes[3] = bits_dtype(in_dtypes[0], lanes);
  }
  if ((op_id == PK_OP_GATHER || op_id == PK_OP_INDEX_SELECT) && num_inputs == 2 && in_dtypes[0] == out_dtypes[0] &&
      bits_dtype(in_dtypes[0], lanes) >= 0) {
    // Indexed loads copy bits: the data moves as the integer of its size (NaN payloads, -0 and fp8 survive;
    // complex as two i64 words, see plan_gather).
    r.dtypes[0] = r.dtypes[2] = bits_dtype(in_dtypes[0], lanes);
    n.op_id = PK_OP_GATHER;
    r.num_extra = 2;
  }
  r.nodes.push_back(n);
  why = check(r);
  if (!why.empty()) return false;
  out = std::move(r);
  return true;
}

}  // namespace detail

// The detail helpers the functions below use (emit.hpp, region_internal.hpp).
using detail::check_node;
using detail::cls;
using detail::kRules;
using detail::OpRule;
using detail::single;
using detail::text;

bool Region::reduces() const {
  for (const Node &n : nodes)
    if (is_reduction_op(n.op_id) || is_line_op(n.op_id)) return true;
  return false;
}

Kind Region::kind(uint32_t v) const {
  if (!kinds.empty()) return v < kinds.size() ? static_cast<Kind>(kinds[v]) : kElem;
  for (const Node &n : nodes)
    if (n.output == v && (is_reduction_op(n.op_id) || n.op_id == PK_OP_VAR || n.op_id == PK_OP_DOT_GENERAL ||
                          n.op_id == PK_OP_CONVOLUTION || is_fft_op(n.op_id)))
      return kRow;
  return kElem;
}

std::string check(const Region &r) {
  if (r.nodes.empty()) return "empty region";
  if (r.outputs.empty()) return "region without outputs";
  std::vector<bool> known(r.dtypes.size(), false);
  for (uint32_t v : r.inputs) {
    if (v >= r.dtypes.size()) return "input value out of range";
    known[v] = true;
  }
  if (!r.kinds.empty() && r.kinds.size() != r.dtypes.size()) return "kinds do not cover every value";
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node &n = r.nodes[i];
    std::string why = check_node(n, r.dtypes);
    if (!why.empty()) return why;
    if (n.op_id != PK_OP_FILL)
      for (uint32_t v : n.inputs)
        if (!known[v])
          return text("%s: reads a value that is neither an input nor computed before", pk::meta::op_name(n.op_id));
    if (known[n.output]) return "a value is computed twice";
    if (is_line_op(n.op_id) || n.op_id == PK_OP_GATHER || n.op_id == PK_OP_INDEX_SELECT) {
      // Kernels of their own: the emitter has a dedicated body for each (see region.hpp's Node).
      if (r.nodes.size() != 1 || !r.kinds.empty())
        return text("%s: only as a region's single node", pk::meta::op_name(n.op_id));
      if (n.op_id == PK_OP_INDEX_SELECT) return "index_select: planned as a gather";
      if (n.op_id == PK_OP_GATHER && r.num_extra < 2) return "gather needs two extra scalars";
      if ((is_order_op(n.op_id) || n.op_id == PK_OP_SEARCHSORTED || n.op_id == PK_OP_SCATTER ||
           n.op_id == PK_OP_SCATTER_REDUCE) &&
          r.num_extra < 1)
        return text("%s needs one extra scalar", pk::meta::op_name(n.op_id));
      if (n.op_id == PK_OP_SEARCHSORTED && r.dtypes[n.output] != PK_DTYPE_I64) return "searchsorted: i64 output only";
      if (n.op_id == PK_OP_CONVOLUTION && (n.round_mode < 1 || r.num_extra < 4u * static_cast<uint32_t>(n.round_mode)))
        return "convolution: four extra scalars per spatial axis";
      if (is_fft_op(n.op_id) && r.num_extra < static_cast<uint32_t>(n.round_mode & kFftAxes))
        return text("%s: one extra scalar per transformed axis", pk::meta::op_name(n.op_id));
      if (n.op_id == PK_OP_CUMMAX || n.op_id == PK_OP_CUMMIN || is_order_op(n.op_id)) {
        if (r.outputs.size() != 2 || r.outputs[0] != n.output || r.outputs[1] != n.output + 1 ||
            r.outputs[1] >= r.dtypes.size() || r.dtypes[r.outputs[1]] != PK_DTYPE_I64 || known[n.output + 1])
          return text("%s: values and i64 indices are the outputs", pk::meta::op_name(n.op_id));
        known[n.output + 1] = true;
      }
    } else if (is_reduction_op(n.op_id)) {
      if (r.kinds.empty() && i + 1 != r.nodes.size()) return "a reduction must be the region's last node";
      if (n.inputs.size() != 1 || r.kind(n.inputs[0]) == kRow || r.kind(n.output) != kRow)
        return "a reduction folds element values into a row value";
    } else if (!r.kinds.empty() && n.op_id != PK_OP_FILL && n.op_id != PK_OP_IOTA) {
      // Over row values only: a row value; over column values only: a column value; otherwise an element value.
      bool any_row = false, any_col = false, any_elem = false;
      for (uint32_t v : n.inputs) {
        const Kind kv = r.kind(v);
        any_row = any_row || kv == kRow;
        any_col = any_col || kv == kCol;
        any_elem = any_elem || kv == kElem;
      }
      const Kind k = any_elem || (any_row && any_col) ? kElem : any_col ? kCol : kRow;
      if (r.kind(n.output) != k) return "a node's kind does not follow from its inputs'";
    }
    if (n.op_id == PK_OP_IOTA && r.num_extra < 2) return "iota needs two extra scalars";
    if (is_philox_op(n.op_id) && r.num_extra < 4) return "philox needs four extra scalars";
    known[n.output] = true;
  }
  for (uint32_t v : r.outputs)
    if (v >= r.dtypes.size() || !known[v]) return "an output is never computed";
  return "";
}

std::string key(const KernelSpec &spec) {
  const Region &r = spec.region;
  std::string k = "r" + std::to_string(spec.rank) + "|";
  if (spec.uniform) k += "u" + std::to_string(spec.uniform) + "|";
  for (int32_t d : r.dtypes) k += std::to_string(d) + ",";
  k += "|in";
  for (uint32_t v : r.inputs) k += " " + std::to_string(v);
  k += "|out";
  for (uint32_t v : r.outputs) k += " " + std::to_string(v);
  if (!r.kinds.empty()) {
    k += "|kinds";
    for (uint8_t v : r.kinds) k += std::to_string(v);
  }
  if (r.num_extra) k += "|x" + std::to_string(r.num_extra);
  for (const Node &n : r.nodes) {
    k += "|" + std::to_string(n.op_id) + ":";
    for (uint32_t v : n.inputs) k += std::to_string(v) + ",";
    k += ">" + std::to_string(n.output);
    if (n.op_id == PK_OP_FILL) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "=%a", n.fill_value);
      k += buf;
    }
    if (n.op_id == PK_OP_ROUND || is_order_op(n.op_id) || n.op_id == PK_OP_SEARCHSORTED || is_scatter_op(n.op_id) ||
        n.op_id == PK_OP_CONVOLUTION || is_fft_op(n.op_id))
      k += "m" + std::to_string(n.round_mode);
    if (n.op_id == PK_OP_VAR) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "c%a", n.fill_value);
      k += buf;
    }
  }
  return k;
}

std::vector<Region> supported_single_op_regions() {
  const int32_t all[] = {PK_DTYPE_BOOL, PK_DTYPE_U8,   PK_DTYPE_I8,       PK_DTYPE_I16,   PK_DTYPE_I32,
                         PK_DTYPE_I64,  PK_DTYPE_F16,  PK_DTYPE_BF16,     PK_DTYPE_F32,   PK_DTYPE_F64,
                         PK_DTYPE_C64,  PK_DTYPE_C128, PK_DTYPE_F8E4M3FN, PK_DTYPE_F8E5M2};
  std::vector<Region> out;
  for (const OpRule &rl : kRules) {
    const pk::meta::OpInfo *op = pk::meta::find_op(rl.op);
    if (op == nullptr || rl.op == PK_OP_INDEX_SELECT) continue;  // index_select compiles as a gather
    for (int32_t t : all) {
      if (!(cls(t) & rl.classes)) continue;
      // Output dtypes: the op's rule (bool for predicates, T otherwise); every target for conversions.
      std::vector<int32_t> outs;
      if (rl.op == PK_OP_CONVERT_ELEMENT_TYPE) {
        outs.assign(std::begin(all), std::end(all));
      } else if (op->num_outputs && op->outputs[0].rule == pk::meta::DtypeRule::fixed) {
        outs.push_back(op->outputs[0].arg);
      } else if (op->num_outputs && op->outputs[0].rule == pk::meta::DtypeRule::real_of) {
        outs.push_back(pk::meta::real_of(t));
      } else if (op->num_outputs && op->outputs[0].rule == pk::meta::DtypeRule::complex_of) {
        outs.push_back(pk::meta::complex_of(t));
      } else {
        outs.push_back(t);
      }
      for (int32_t o : outs) {
        std::vector<int32_t> ins;
        if (rl.op == PK_OP_WHERE) {
          ins = std::vector<int32_t>{PK_DTYPE_BOOL, t, t};
        } else if (rl.op == PK_OP_GATHER) {
          ins = std::vector<int32_t>{t, PK_DTYPE_I64};
        } else if (rl.op == PK_OP_SCATTER || rl.op == PK_OP_SCATTER_REDUCE) {
          ins = std::vector<int32_t>{t, PK_DTYPE_I64, t};
        } else if (rl.op == PK_OP_INDEX_PUT) {
          ins = std::vector<int32_t>{t, t, PK_DTYPE_I32, PK_DTYPE_I64};
        } else {
          // Every input of these ops has the type variable's dtype (iota has none).
          ins.assign(op->num_inputs, t);
        }
        const int rounds = rl.op == PK_OP_ROUND || is_order_op(rl.op) || rl.op == PK_OP_SEARCHSORTED ? 2 : 1;
        for (int m = 0; m < rounds; ++m) {
          Region r;
          std::string why;
          if (!single(rl.op, ins.data(), static_cast<uint32_t>(ins.size()), &o, 1, nullptr, r, why)) continue;
          if (rounds > 1) r.nodes[0].round_mode = m;
          if (rl.op == PK_OP_FILL) r.nodes[0].fill_value = 1.5;
          out.push_back(std::move(r));
        }
      }
    }
  }
  // The creation ops' fills (full, scalar_tensor, pad's border, maximum_value ...): a FILL without input.
  for (int32_t t : all) {
    Region r;
    r.dtypes.assign(1, t);  // not `= {t}`: GCC 12 at -O3 takes the copy into an empty vector for a null memmove
    r.nodes = {Node{PK_OP_FILL, {}, 0, -2.5, 0}};
    r.outputs = {0};
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace pk::codegen
