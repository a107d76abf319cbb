// region.cpp — what the generator compiles: which (op, dtype) pairs, how a launch or a fusion offer becomes a
// Region, and the canonical key that caches compiled kernels. No LLVM here.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "primkit/backend_kit.hpp"
#include "primkit/codegen.hpp"
#include "primkit/op_info.hpp"

#include "emit.hpp"

namespace pk::codegen {

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
unsigned cls(int32_t d) {
  return is_fp(d) ? kF : is_int(d) ? kI : is_bool(d) ? kB : is_cx(d) ? kC : 0;
}

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

using detail::is_fft_op;
using detail::is_line_op;
using detail::is_order_op;
using detail::is_philox_op;
using detail::is_reduction_op;
using detail::is_scatter_op;
using detail::kFftAxes;
using detail::kFftInverse;
using detail::kIncludeSelf;
// Reductions whose attributes are a `dims` list (all share pk_attrs_sum's layout).
bool is_dims_reduction(uint32_t op) {
  return is_reduction_op(op) && op != PK_OP_ARGMAX && op != PK_OP_ARGMIN;
}
static_assert(sizeof(pk_attrs_sum) == sizeof(pk_attrs_prod) && sizeof(pk_attrs_sum) == sizeof(pk_attrs_amax) &&
                  sizeof(pk_attrs_sum) == sizeof(pk_attrs_amin) && sizeof(pk_attrs_sum) == sizeof(pk_attrs_any) &&
                  sizeof(pk_attrs_sum) == sizeof(pk_attrs_all) && sizeof(pk_attrs_sum) == sizeof(pk_attrs_xor_sum),
              "reduction attribute layouts differ");

std::string text(const char *fmt, const char *a, const char *b = "") {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

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
  int32_t want = t;
  switch (op) {
    case PK_OP_ABS:
    case PK_OP_REAL:
    case PK_OP_IMAG:
    case PK_OP_ANGLE:
    case PK_OP_VAR:
    case PK_OP_FFT_C2R:
      want = pk::meta::real_of(t);
      break;
    case PK_OP_ISNAN:
    case PK_OP_ISINF:
    case PK_OP_ISFINITE:
    case PK_OP_LOGICAL_NOT:
    case PK_OP_LOGICAL_AND:
    case PK_OP_LOGICAL_OR:
    case PK_OP_LOGICAL_XOR:
    case PK_OP_EQ:
    case PK_OP_NE:
    case PK_OP_ANY:
    case PK_OP_ALL:
      want = PK_DTYPE_BOOL;
      break;
    default:
      break;
  }
  if (out != want) return text("%s: the output must be %s", name, pk::meta::dtype_name(want));
  return "";
}

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

}  // namespace

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
      // Kernels of their own: the emitter has a dedicated body for each (see codegen.hpp's Node).
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

namespace {

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

int32_t bits_dtype(int32_t d, int32_t &lanes);

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

// --- planning op launches -----------------------------------------------------------------------------------

using Strides = std::vector<int64_t>;

Strides strides_of(const pk_tensor &t) {
  Strides s(static_cast<size_t>(t.ndim));
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    s[d] = t.strides ? t.strides[d] : expect;
    expect *= t.shape[d];
  }
  return s;
}
Strides dense_strides(const std::vector<int64_t> &shape) {
  Strides s(shape.size());
  int64_t expect = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = expect;
    expect *= shape[d];
  }
  return s;
}
std::vector<int64_t> shape_of(const pk_tensor &t) {
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}
bool is_dense(const pk_tensor &t) {
  const Strides s = strides_of(t), e = dense_strides(shape_of(t));
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] != 1 && s[d] != e[d]) return false;
  return true;
}
int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

// Data movement copies bits: every dtype moves as the unsigned/signed integer of its size (fp8 and bf16 bytes,
// complex as i64 pairs), so NaN payloads and signed zeros survive exactly.
int32_t bits_dtype(int32_t d, int32_t &lanes) {
  lanes = 1;
  switch (pk::meta::dtype_size(d)) {
    case 1:
      return PK_DTYPE_U8;
    case 2:
      return PK_DTYPE_I16;
    case 4:
      return PK_DTYPE_I32;
    case 8:
      return PK_DTYPE_I64;
    case 16:
      lanes = 2;
      return PK_DTYPE_I64;
    default:
      return -1;
  }
}

// out (tensor `dst`, viewed at offset/strides over `shape`) <- src (likewise): one copy launch.
bool copy_launch(int32_t dtype, const std::vector<int64_t> &shape, uint32_t src, int64_t src_off, Strides src_st,
                 uint32_t dst, int64_t dst_off, Strides dst_st, std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t lanes = 1;
  const int32_t bd = bits_dtype(dtype, lanes);
  if (bd < 0) {
    why = text("%s: no storage type for this dtype in the code generator", pk::meta::dtype_name(dtype));
    return false;
  }
  PlannedLaunch l;
  l.shape = shape;
  if (lanes > 1) {
    // 16-byte elements: a trailing axis of two i64 words.
    for (auto *st : {&src_st, &dst_st})
      for (int64_t &v : *st) v *= lanes;
    src_off *= lanes;
    dst_off *= lanes;
    l.shape.push_back(lanes);
    src_st.push_back(1);
    dst_st.push_back(1);
  }
  if (l.shape.size() > PK_MAX_RANK) {
    why = "rank too large for the code generator";
    return false;
  }
  l.region.dtypes = {bd, bd};
  l.region.inputs = {0};
  l.region.nodes = {Node{PK_OP_CONVERT_ELEMENT_TYPE, {0}, 1, 0, 0}};
  l.region.outputs = {1};
  l.args = {PlanArg{src, src_off, std::move(src_st)}, PlanArg{dst, dst_off, std::move(dst_st)}};
  if (numel(l.shape) > 0) out.push_back(std::move(l));
  return true;
}

// The f64 a creation op's value becomes in dtype d, as a FILL node computes it; fp8 is stored as its bits.
bool fill_launch(int32_t dtype, double value, const std::vector<int64_t> &shape, uint32_t dst, int64_t dst_off,
                 Strides dst_st, std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t d = dtype;
  if (d == PK_DTYPE_F8E4M3FN) {
    value = pk::kit::f8e4m3fn(value).bits;
    d = PK_DTYPE_U8;
  } else if (d == PK_DTYPE_F8E5M2) {
    value = pk::kit::f8e5m2(value).bits;
    d = PK_DTYPE_U8;
  }
  if (!cls(d)) {
    why = text("fill: dtype %s is not supported by the code generator", pk::meta::dtype_name(dtype));
    return false;
  }
  PlannedLaunch l;
  l.shape = shape;
  l.region.dtypes = {d};
  l.region.nodes = {Node{PK_OP_FILL, {}, 0, value, 0}};
  l.region.outputs = {0};
  l.args = {PlanArg{dst, dst_off, std::move(dst_st)}};
  if (numel(shape) > 0) out.push_back(std::move(l));
  return true;
}

double extreme_value(int32_t d, bool largest) {
  switch (d) {
    case PK_DTYPE_BOOL:
      return largest ? 1 : 0;
    case PK_DTYPE_U8:
      return largest ? 255 : 0;
    case PK_DTYPE_I8:
      return largest ? 127 : -128;
    case PK_DTYPE_I16:
      return largest ? 32767 : -32768;
    case PK_DTYPE_I32:
      return largest ? 2147483647.0 : -2147483648.0;
    case PK_DTYPE_I64:
      return largest ? 9223372036854775807.0 : -9223372036854775808.0;  // saturating conversion gives the limit
    case PK_DTYPE_F16:
      return largest ? 65504.0 : -65504.0;
    case PK_DTYPE_BF16:
      return largest ? 0x1.fep127 : -0x1.fep127;
    case PK_DTYPE_F32:
    case PK_DTYPE_C64:  // complex: the parts' extreme + 0i (fill's imaginary part), as torch.finfo gives it
      return largest ? 0x1.fffffep127 : -0x1.fffffep127;
    case PK_DTYPE_F64:
    case PK_DTYPE_C128:
      return largest ? std::numeric_limits<double>::max() : -std::numeric_limits<double>::max();
    case PK_DTYPE_F8E4M3FN:
      return largest ? 448.0 : -448.0;
    case PK_DTYPE_F8E5M2:
      return largest ? 57344.0 : -57344.0;
    default:
      return 0;
  }
}

bool plan_reduction(uint32_t op_id, const pk_tensor &in, const pk_tensor &o, const std::vector<int64_t> &dims,
                    std::vector<PlannedLaunch> &out, std::string &why, const void *attrs = nullptr) {
  int32_t dt[2] = {pk::meta::dtype_id(in.dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 1, dt + 1, 1, attrs, l.region, why)) return false;
  // Element space: the kept axes in order, then the reduced ones; the output walks the kept axes only.
  std::vector<bool> red(static_cast<size_t>(in.ndim), false);
  for (int64_t d : dims) red[static_cast<size_t>(d)] = true;
  const Strides is = strides_of(in), os = strides_of(o);
  Strides a, b;
  size_t ko = 0;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (red[d]) continue;
    l.shape.push_back(in.shape[d]);
    a.push_back(is[d]);
    b.push_back(ko < os.size() ? os[ko] : 0);
    ++ko;
  }
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (!red[d]) continue;
    l.shape.push_back(in.shape[d]);
    a.push_back(is[d]);
    b.push_back(0);
    ++l.red;
  }
  l.args = {PlanArg{0, 0, a}, PlanArg{1, 0, b}};
  if (numel(std::vector<int64_t>(l.shape.begin(), l.shape.end() - l.red)) > 0) out.push_back(std::move(l));
  return true;
}

// A scan along `dim`: the other axes in order, then dim, which each work item walks (one line per item).
bool plan_scan(uint32_t op_id, const pk_tensor *in, const pk_tensor *outs, uint32_t nout, int64_t dim,
               std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(outs[0].dtype),
                   nout > 1 ? pk::meta::dtype_id(outs[1].dtype) : -1};
  PlannedLaunch l;
  if (!single(op_id, dt, 1, dt + 1, nout, nullptr, l.region, why)) return false;
  if (l.region.outputs.size() != nout) {
    why = text("%s: wrong number of outputs", pk::meta::op_name(op_id));
    return false;
  }
  std::vector<Strides> st = {strides_of(in[0])};
  for (uint32_t k = 0; k < nout; ++k) st.push_back(strides_of(outs[k]));
  std::vector<Strides> perm(st.size());
  std::vector<int32_t> order;
  for (int32_t d = 0; d < in[0].ndim; ++d)
    if (d != dim) order.push_back(d);
  if (in[0].ndim > 0) order.push_back(static_cast<int32_t>(dim));
  for (int32_t d : order) {
    l.shape.push_back(in[0].shape[d]);
    for (size_t k = 0; k < st.size(); ++k) perm[k].push_back(st[k][static_cast<size_t>(d)]);
  }
  if (order.empty()) {  // a 0-d tensor is one line of one element
    l.shape.push_back(1);
    for (Strides &p : perm) p.push_back(0);
  }
  l.red = 1;
  for (size_t k = 0; k < st.size(); ++k) l.args.push_back(PlanArg{static_cast<uint32_t>(k), 0, perm[k]});
  if (numel(l.shape) > 0) out.push_back(std::move(l));
  return true;
}

// out[i] = a[i with axis dim replaced by index[i]] (gather; index_select reads its 1-D index along dim only).
bool plan_gather(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, int64_t dim, std::vector<PlannedLaunch> &out,
                 std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 2, dt + 2, 1, nullptr, l.region, why)) return false;
  const size_t d = static_cast<size_t>(dim);
  Strides as = strides_of(in[0]), os = strides_of(o), idx = strides_of(in[1]);
  l.shape = shape_of(o);
  if (op_id == PK_OP_INDEX_SELECT) {
    Strides s(static_cast<size_t>(o.ndim), 0);
    s[d] = idx.empty() ? 0 : idx[0];
    idx = s;
  }
  int32_t lanes = 1;
  bits_dtype(dt[0], lanes);
  if (lanes > 1) {  // 16-byte elements: a trailing axis of two i64 words
    for (Strides *st : {&as, &os})
      for (int64_t &v : *st) v *= lanes;
    as.push_back(1);
    os.push_back(1);
    idx.push_back(0);
    l.shape.push_back(lanes);
  }
  if (l.shape.size() > PK_MAX_RANK) {
    why = "rank too large for the code generator";
    return false;
  }
  Strides a = as;
  a[d] = 0;
  l.args = {PlanArg{0, 0, a}, PlanArg{1, 0, idx}, PlanArg{2, 0, os}};
  l.extra = {in[0].shape[d], as[d]};
  if (numel(l.shape) > 0) out.push_back(std::move(l));
  return true;
}

// A dot product per output element: the element space is the batch axes, a's free axes, b's free axes (the
// output's axes, in order), then the contracting axes, which each work item walks. a has stride 0 on b's free
// axes and b on a's; axes of extent 1 are dropped so that the space fits the generator's rank limit.
bool plan_dot(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, const std::vector<int64_t> &lb,
              const std::vector<int64_t> &rb, const std::vector<int64_t> &lc, const std::vector<int64_t> &rc,
              std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 2, dt + 2, 1, nullptr, l.region, why)) return false;
  const Strides as = strides_of(in[0]), bs = strides_of(in[1]), os = strides_of(o);
  auto free_axes = [](int32_t rank, const std::vector<int64_t> &x, const std::vector<int64_t> &y) {
    std::vector<int64_t> f;
    for (int64_t k = 0; k < rank; ++k)
      if (std::find(x.begin(), x.end(), k) == x.end() && std::find(y.begin(), y.end(), k) == y.end()) f.push_back(k);
    return f;
  };
  const std::vector<int64_t> lf = free_axes(in[0].ndim, lb, lc), rf = free_axes(in[1].ndim, rb, rc);
  Strides sa, sb, so;
  auto axis = [&](int64_t extent, int64_t a, int64_t b, int64_t c, bool reduced) {
    if (extent == 1) return;
    l.shape.push_back(extent);
    sa.push_back(a);
    sb.push_back(b);
    so.push_back(c);
    l.red += reduced ? 1 : 0;
  };
  size_t p = 0;  // the output's axis
  for (size_t k = 0; k < lb.size(); ++k, ++p) axis(in[0].shape[lb[k]], as[lb[k]], bs[rb[k]], os[p], false);
  for (int64_t k : lf) axis(in[0].shape[k], as[k], 0, os[p++], false);
  for (int64_t k : rf) axis(in[1].shape[k], 0, bs[k], os[p++], false);
  for (size_t k = 0; k < lc.size(); ++k) axis(in[0].shape[lc[k]], as[lc[k]], bs[rc[k]], 0, true);
  if (numel(shape_of(o)) == 0) return true;  // nothing to compute
  if (l.red == 0 || numel(l.shape) == 0) {
    // One term (or none: an empty contraction sums to 0): a trailing axis keeps the kernel a line walk.
    const bool empty = numel(l.shape) == 0;
    l.shape.erase(l.shape.end() - l.red, l.shape.end());
    sa.resize(l.shape.size());
    sb.resize(l.shape.size());
    so.resize(l.shape.size());
    l.red = 1;
    l.shape.push_back(empty ? 0 : 1);
    sa.push_back(0);
    sb.push_back(0);
    so.push_back(0);
  }
  l.args = {PlanArg{0, 0, sa}, PlanArg{1, 0, sb}, PlanArg{2, 0, so}};
  out.push_back(std::move(l));
  return true;
}

// sort and topk rank every element of a line against the whole line (the count of elements that go before it:
// smaller or larger, or equal at a lower index) and store it at that rank if it is below extra[0] (the output's
// extent along dim). The element space is the other axes, then the element's position i on dim, then the
// position c it is compared with: input 0 is the line at i (stride 0 on c), input 1 at c (stride 0 on i), the
// outputs are written along c. Quadratic in the line length, but every element is a work item of its own and the
// result is deterministic (stable) without scratch memory.
bool plan_order(uint32_t op_id, const pk_tensor &in, const pk_tensor *outs, uint32_t nout, int64_t dim,
                const void *attrs, std::vector<PlannedLaunch> &out, std::string &why) {
  if (nout != 2) {
    why = text("%s: values and indices are the outputs", pk::meta::op_name(op_id));
    return false;
  }
  int32_t dt[3] = {pk::meta::dtype_id(in.dtype), pk::meta::dtype_id(outs[0].dtype), pk::meta::dtype_id(outs[1].dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 1, dt + 1, 2, attrs, l.region, why)) return false;
  const Strides is = strides_of(in), vs = strides_of(outs[0]), xs = strides_of(outs[1]);
  Strides si, sc, sv, sx;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (d == dim) continue;
    l.shape.push_back(in.shape[d]);
    si.push_back(is[d]);
    sc.push_back(is[d]);
    sv.push_back(vs[d]);
    sx.push_back(xs[d]);
  }
  const int64_t n = in.ndim > 0 ? in.shape[dim] : 1, st = in.ndim > 0 ? is[dim] : 0;
  l.shape.push_back(n);
  l.shape.push_back(n);
  si.insert(si.end(), {st, 0});
  sc.insert(sc.end(), {0, st});
  sv.insert(sv.end(), {0, outs[0].ndim > 0 ? vs[dim] : 0});
  sx.insert(sx.end(), {0, outs[1].ndim > 0 ? xs[dim] : 0});
  l.red = 1;
  l.args = {PlanArg{0, 0, si}, PlanArg{0, 0, sc}, PlanArg{1, 0, sv}, PlanArg{2, 0, sx}};
  l.extra = {outs[0].ndim > 0 ? outs[0].shape[dim] : 1};
  if (numel(l.shape) > 0 && l.extra[0] > 0) out.push_back(std::move(l));
  return true;
}

// searchsorted: for each value (a work item) the count of sequence elements before it in sort order, a walk over
// the whole sequence: the element space is the values' shape, then the sequence's axis.
bool plan_searchsorted(const pk_tensor *in, const pk_tensor &o, const void *attrs, std::vector<PlannedLaunch> &out,
                       std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(PK_OP_SEARCHSORTED, dt, 2, dt + 2, 1, attrs, l.region, why)) return false;
  if (in[0].ndim != 1) {
    why = "searchsorted: the code generator needs a 1-D sorted_sequence";
    return false;
  }
  Strides ss(static_cast<size_t>(in[1].ndim), 0), vs = strides_of(in[1]), os = strides_of(o);
  l.shape = shape_of(in[1]);
  l.shape.push_back(in[0].shape[0]);
  ss.push_back(strides_of(in[0])[0]);
  vs.push_back(0);
  os.push_back(0);
  l.red = 1;
  l.args = {PlanArg{0, 0, ss}, PlanArg{1, 0, vs}, PlanArg{2, 0, os}};
  l.extra = {in[0].shape[0]};
  if (numel(shape_of(in[1])) > 0) out.push_back(std::move(l));
  return true;
}

// scatter / scatter_reduce: out = a, then each element of the box the index reaches (the index's extents off
// dim, a's along dim) is a work item that walks its line of the index along dim and combines the src elements
// whose index equals its own position, in index order (the last one wins for scatter): no atomics, so
// duplicates combine deterministically in the oracle's order. The element space is the other axes, dim (the
// item's position t = j mod extra[0]), then the index's line.
bool plan_scatter(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, int64_t dim, const void *attrs,
                  std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t dt[4] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(in[2].dtype),
                   pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 3, dt + 3, 1, attrs, l.region, why)) return false;
  if (!copy_launch(dt[3], shape_of(o), 0, 0, strides_of(in[0]), 3, 0, strides_of(o), out, why)) return false;
  const Strides as = strides_of(in[0]), is = strides_of(in[1]), ss = strides_of(in[2]), os = strides_of(o);
  Strides sa, si, sv, so;
  const size_t d0 = static_cast<size_t>(dim);
  for (size_t d = 0; d < as.size(); ++d) {
    if (d == d0) continue;
    l.shape.push_back(in[1].shape[d]);
    sa.push_back(as[d]);
    si.push_back(is[d]);
    sv.push_back(ss[d]);
    so.push_back(os[d]);
  }
  int32_t lanes = 1;
  bits_dtype(dt[0], lanes);
  int64_t w = 1;  // the data's strides in words
  if (lanes > 1 && op_id == PK_OP_SCATTER) {
    // 16-byte elements move as two i64 words: an axis of the words ahead of dim (so that the item's position
    // along dim stays the row index modulo extra[0]); the index does not move along it.
    w = lanes;
    for (Strides *st : {&sa, &sv, &so})
      for (int64_t &v : *st) v *= lanes;
    l.shape.push_back(lanes);
    sa.push_back(1);
    si.push_back(0);
    sv.push_back(1);
    so.push_back(1);
  }
  l.shape.insert(l.shape.end(), {in[0].shape[d0], in[1].shape[d0]});
  sa.insert(sa.end(), {w * as[d0], 0});
  si.insert(si.end(), {0, is[d0]});
  sv.insert(sv.end(), {0, w * ss[d0]});
  so.insert(so.end(), {w * os[d0], 0});
  if (w > 1 && l.shape.size() > PK_MAX_RANK) {
    why = "scatter: c128 of this rank is too large for the code generator (the words' axis)";
    return false;
  }
  l.red = 1;
  l.args = {PlanArg{0, 0, sa}, PlanArg{1, 0, si}, PlanArg{2, 0, sv}, PlanArg{3, 0, so}};
  l.extra = {in[0].shape[d0]};
  if (numel(l.shape) > 0) out.push_back(std::move(l));
  return true;
}

// index_put: every element of a is a work item that walks the L index rows and takes (or adds) the values of
// the rows whose k indices equal its first k coordinates, in row order. The element space is a's axes, then L.
bool plan_index_put(const pk_tensor *in, uint32_t nin, const pk_tensor &o, const void *attrs,
                    std::vector<PlannedLaunch> &out, std::string &why) {
  std::vector<int32_t> dt;
  for (uint32_t i = 0; i < nin; ++i) dt.push_back(pk::meta::dtype_id(in[i].dtype));
  const int32_t odt = pk::meta::dtype_id(o.dtype);
  PlannedLaunch l;
  if (!single(PK_OP_INDEX_PUT, dt.data(), nin, &odt, 1, attrs, l.region, why)) return false;
  const uint32_t k = nin - 2;
  if (k < 1 || static_cast<int32_t>(k) > in[0].ndim) {
    why = "index_put: needs 1 to rank(a) index tensors";
    return false;
  }
  const int64_t rows = in[2].ndim > 0 ? in[2].shape[0] : 1;
  const Strides as = strides_of(in[0]), vs = strides_of(in[1]), os = strides_of(o);
  l.shape = shape_of(in[0]);
  l.shape.push_back(rows);
  Strides sa = as, so = os, sv(l.shape.size(), 0);
  sa.push_back(0);
  so.push_back(0);
  // values [L] + a.shape[k:]: its axis 0 walks the rows, the others follow a's trailing axes.
  for (int32_t d = static_cast<int32_t>(k); d < in[0].ndim; ++d)
    sv[static_cast<size_t>(d)] = vs[static_cast<size_t>(d - static_cast<int32_t>(k) + 1)];
  sv.back() = in[1].ndim > 0 ? vs[0] : 0;
  l.args = {PlanArg{0, 0, sa}, PlanArg{1, 0, sv}};
  for (uint32_t i = 0; i < k; ++i) {
    Strides sx(l.shape.size(), 0);
    sx.back() = in[2 + i].ndim > 0 ? strides_of(in[2 + i])[0] : 0;
    l.args.push_back(PlanArg{2 + i, 0, sx});
  }
  l.args.push_back(PlanArg{nin, 0, so});
  l.red = 1;
  if (numel(shape_of(in[0])) > 0) out.push_back(std::move(l));
  return true;
}

// fft_c2c / fft_r2c / fft_c2r as direct DFTs (O(n^2) in the transform size): one work item per output element,
// which walks every input element of its transform as the line, the twiddle from the exact integer index
// sum_d (j_d k_d mod n_d) / n_d. The element space is the output's other axes, its transformed axes k_d, then the
// input's transformed axes j_d; extra[d] is the transform length n_d of dims[d] (last_dim_size for c2r's last
// axis, whose input has n / 2 + 1 entries: the kernel weighs them for the Hermitian half they stand for).
bool plan_fft(uint32_t op_id, const pk_tensor &in, const pk_tensor &o, const void *attrs,
              std::vector<PlannedLaunch> &out, std::string &why) {
  int32_t dt[2] = {pk::meta::dtype_id(in.dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(op_id, dt, 1, dt + 1, 1, attrs, l.region, why)) return false;
  const char *name = pk::meta::op_name(op_id);
  std::vector<int64_t> dims;
  bool inverse = false, onesided = false;
  int64_t last_n = 0;
  auto take_dims = [&](int32_t num, const int64_t *d) {
    for (int32_t i = 0; i < num && i < PK_MAX_RANK; ++i) dims.push_back(d[i]);
  };
  if (op_id == PK_OP_FFT_C2C) {
    const auto &a = *static_cast<const pk_attrs_fft_c2c *>(attrs);
    take_dims(a.num_dims, a.dims);
    inverse = a.forward == 0;
  } else if (op_id == PK_OP_FFT_R2C) {
    const auto &a = *static_cast<const pk_attrs_fft_r2c *>(attrs);
    take_dims(a.num_dims, a.dims);
    onesided = a.onesided != 0;
  } else {
    const auto &a = *static_cast<const pk_attrs_fft_c2r *>(attrs);
    take_dims(a.num_dims, a.dims);
    inverse = true;
    last_n = a.last_dim_size;
  }
  const size_t D = dims.size();
  if (in.ndim != o.ndim || (op_id == PK_OP_FFT_C2R && D == 0)) {
    why = text("%s: the output's rank or dims do not fit the input", name);
    return false;
  }
  std::vector<bool> transformed(static_cast<size_t>(in.ndim), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= in.ndim || transformed[static_cast<size_t>(d)]) {
      why = text("%s: dims must be distinct axes of a", name);
      return false;
    }
    transformed[static_cast<size_t>(d)] = true;
  }
  // Transform lengths, and the output's extents they imply.
  std::vector<int64_t> n(D);
  for (size_t d = 0; d < D; ++d) {
    const size_t ax = static_cast<size_t>(dims[d]);
    n[d] = op_id == PK_OP_FFT_C2R && d + 1 == D ? last_n : in.shape[ax];
    int64_t want = n[d];
    if (op_id == PK_OP_FFT_R2C && onesided && d + 1 == D) want = n[d] / 2 + 1;
    if (o.shape[ax] != want || (op_id == PK_OP_FFT_C2R && d + 1 == D && in.shape[ax] < n[d] / 2 + 1)) {
      why = text("%s: the output's extents do not fit the transform", name);
      return false;
    }
  }
  for (int32_t a = 0; a < in.ndim; ++a)
    if (!transformed[static_cast<size_t>(a)] && in.shape[a] != o.shape[a]) {
      why = text("%s: the output's extents do not fit the input", name);
      return false;
    }
  const Strides is = strides_of(in), os = strides_of(o);
  Strides sa, so;
  for (int32_t a = 0; a < in.ndim; ++a) {
    if (transformed[static_cast<size_t>(a)] || o.shape[a] == 1) continue;
    l.shape.push_back(o.shape[a]);
    sa.push_back(is[static_cast<size_t>(a)]);
    so.push_back(os[static_cast<size_t>(a)]);
  }
  for (int64_t d : dims) {
    l.shape.push_back(o.shape[d]);
    sa.push_back(0);
    so.push_back(os[static_cast<size_t>(d)]);
  }
  for (int64_t d : dims) {
    l.shape.push_back(in.shape[d]);
    sa.push_back(is[static_cast<size_t>(d)]);
    so.push_back(0);
  }
  l.red = static_cast<int>(D);
  if (D == 0) {  // a copy (r2c: to complex): one term per element
    l.shape.push_back(1);
    sa.push_back(0);
    so.push_back(0);
    l.red = 1;
  }
  if (l.shape.size() > PK_MAX_RANK) {
    why = text("%s: too many axes for the code generator (the other axes plus twice the transformed ones)", name);
    return false;
  }
  l.region.nodes[0].round_mode = static_cast<int32_t>(D) | (inverse ? kFftInverse : 0);
  l.region.num_extra = static_cast<uint32_t>(D);
  l.extra = n;
  l.args = {PlanArg{0, 0, sa}, PlanArg{1, 0, so}};
  if (numel(shape_of(o)) > 0) out.push_back(std::move(l));
  return true;
}

// convolution: one work item per output element, the dot product over (C / groups, kernel window) as a line; the
// element space [N, G, O/G, out..., C/G, k...] makes every operand a strided view (the input at offset
// -sum(low * stride) with stride * s on the output axes and dilation * s on the kernel axes) and the kernel masks
// the terms whose input position falls outside. Up to 2 spatial axes (3 would exceed the rank limit).
bool plan_conv(const pk_tensor *in, const pk_tensor &o, const void *attrs, std::vector<PlannedLaunch> &out,
               std::string &why) {
  int32_t dt[3] = {pk::meta::dtype_id(in[0].dtype), pk::meta::dtype_id(in[1].dtype), pk::meta::dtype_id(o.dtype)};
  PlannedLaunch l;
  if (!single(PK_OP_CONVOLUTION, dt, 2, dt + 2, 1, attrs, l.region, why)) return false;
  const auto &a = *static_cast<const pk_attrs_convolution *>(attrs);
  const int32_t nsp = in[0].ndim - 2;
  if (nsp < 1 || 4 + 2 * nsp > PK_MAX_RANK) {
    why = "convolution: the code generator handles 1 or 2 spatial axes";
    return false;
  }
  const int64_t groups = a.groups, N = in[0].shape[0], C = in[0].shape[1], O = in[1].shape[0], Cg = in[1].shape[1];
  if (groups < 1 || O % groups != 0 || Cg * groups != C) {
    why = "convolution: channels do not match groups";
    return false;
  }
  // An empty window (no input channels per group, or a kernel axis of extent 0) sums no terms: every output is 0.
  // The convolution kernel decodes its element-space coordinates over the window axes, which an extent of 0
  // breaks (cuda-emu left half of a grouped output unwritten), so it is a fill.
  int64_t window = Cg;
  for (int32_t i = 0; i < nsp; ++i) window *= in[1].shape[i + 2];
  if (window == 0) return fill_launch(dt[2], 0.0, shape_of(o), 2, 0, strides_of(o), out, why);
  l.region.nodes[0].round_mode = nsp;
  l.region.num_extra = 4 * static_cast<uint32_t>(nsp);
  const Strides xs = strides_of(in[0]), ws = strides_of(in[1]), os = strides_of(o);
  const int64_t Og = O / groups;
  l.shape = {N, groups, Og};
  Strides sx = {xs[0], Cg * xs[1], 0}, sw = {0, Og * ws[0], ws[0]}, so = {os[0], Og * os[1], os[1]};
  int64_t x_off = 0;
  for (int32_t i = 0; i < nsp; ++i) {
    const size_t d = static_cast<size_t>(i + 2);
    const int64_t st = a.num_stride ? a.stride[i] : 1, dil = a.num_dilation ? a.dilation[i] : 1;
    const int64_t lo = a.num_padding_low ? a.padding_low[i] : 0;
    l.shape.push_back(o.shape[d]);
    sx.push_back(st * xs[d]);
    sw.push_back(0);
    so.push_back(os[d]);
    x_off -= lo * xs[d];
    l.extra.insert(l.extra.end(), {st, dil, lo, in[0].shape[d]});
  }
  l.shape.push_back(Cg);
  sx.push_back(xs[1]);
  sw.push_back(ws[1]);
  so.push_back(0);
  for (int32_t i = 0; i < nsp; ++i) {
    const size_t d = static_cast<size_t>(i + 2);
    l.shape.push_back(in[1].shape[d]);
    sx.push_back((a.num_dilation ? a.dilation[i] : 1) * xs[d]);
    sw.push_back(ws[d]);
    so.push_back(0);
  }
  l.red = 1 + nsp;
  l.args = {PlanArg{0, x_off, sx}, PlanArg{1, 0, sw}, PlanArg{2, 0, so}};
  if (numel(shape_of(o)) > 0) out.push_back(std::move(l));
  return true;
}

bool plan_impl(uint32_t op_id, const pk_tensor *in, uint32_t nin, const pk_tensor *outs, uint32_t nout,
               const void *attrs, std::vector<PlannedLaunch> &out, std::string &why) {
  const pk::meta::OpInfo *op = pk::meta::find_op(op_id);
  if (op == nullptr || op->tier != pk::meta::Tier::primitive || nout != op->num_outputs || nout < 1 ||
      (nin > 0 && in == nullptr) || outs == nullptr ||
      (nout > 1 && op_id != PK_OP_CUMMAX && op_id != PK_OP_CUMMIN && !is_order_op(op_id))) {
    why = text("%s: the code generator has no lowering for this op", op ? op->name : "unknown op");
    return false;
  }
  const pk_tensor &o = outs[0];
  const int32_t odt = pk::meta::dtype_id(o.dtype);
  const uint32_t O = nin;  // the output's tensor index
  const std::vector<int64_t> oshape = shape_of(o);
  auto copy_whole = [&](uint32_t src) {
    return copy_launch(odt, oshape, src, 0, strides_of(in[src]), O, 0, strides_of(o), out, why);
  };
  switch (op_id) {
    case PK_OP_CLONE:
    case PK_OP_VIEW_OF:
      return copy_whole(0);
    case PK_OP_COPY_TO:
      return copy_whole(1);
    case PK_OP_TRANSPOSE: {
      const auto &a = *static_cast<const pk_attrs_transpose *>(attrs);
      const Strides is = strides_of(in[0]);
      Strides src(oshape.size());
      for (size_t d = 0; d < oshape.size(); ++d) src[d] = is[static_cast<size_t>(a.permutation[d])];
      return copy_launch(odt, oshape, 0, 0, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_BROADCAST_IN_DIM: {
      const auto &a = *static_cast<const pk_attrs_broadcast_in_dim *>(attrs);
      const Strides is = strides_of(in[0]);
      Strides src(oshape.size(), 0);
      for (int32_t k = 0; k < in[0].ndim; ++k)
        if (in[0].shape[k] != 1) src[static_cast<size_t>(a.broadcast_dimensions[k])] = is[k];
      return copy_launch(odt, oshape, 0, 0, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_SLICE: {
      const auto &a = *static_cast<const pk_attrs_slice *>(attrs);
      const Strides is = strides_of(in[0]);
      Strides src(oshape.size());
      int64_t off = 0;
      for (int32_t d = 0; d < in[0].ndim; ++d) {
        off += a.start_indices[d] * is[d];
        src[d] = is[d] * (a.num_strides ? a.strides[d] : 1);
      }
      return copy_launch(odt, oshape, 0, off, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_SLICE_IN_DIM: {
      const auto &a = *static_cast<const pk_attrs_slice_in_dim *>(attrs);
      Strides src = strides_of(in[0]);
      const int64_t off = a.start * src[a.dim];
      src[a.dim] *= a.stride;
      return copy_launch(odt, oshape, 0, off, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_REV: {
      const auto &a = *static_cast<const pk_attrs_rev *>(attrs);
      Strides src = strides_of(in[0]);
      int64_t off = 0;
      for (int32_t k = 0; k < a.num_dims; ++k) {
        const int64_t d = a.dims[k];
        off += (in[0].shape[d] - 1) * src[d];
        src[d] = -src[d];
      }
      return copy_launch(odt, oshape, 0, off, src, O, 0, strides_of(o), out, why);
    }
    case PK_OP_EXPAND_DIMS:
    case PK_OP_SQUEEZE:
    case PK_OP_COLLAPSE_VIEW:
    case PK_OP_COLLAPSE:
    case PK_OP_RESHAPE:
    case PK_OP_SPLIT_DIM: {
      // Row-major order is kept: one side dense gives the other side's view over its shape.
      if (is_dense(in[0])) return copy_launch(odt, oshape, 0, 0, dense_strides(oshape), O, 0, strides_of(o), out, why);
      if (is_dense(o)) {
        const std::vector<int64_t> ishape = shape_of(in[0]);
        return copy_launch(odt, ishape, 0, 0, strides_of(in[0]), O, 0, dense_strides(ishape), out, why);
      }
      why = text("%s: the code generator needs a dense input or output", op->name);
      return false;
    }
    case PK_OP_AS_STRIDED: {
      const auto &a = *static_cast<const pk_attrs_as_strided *>(attrs);
      if (!is_dense(in[0])) {
        why = "as_strided: the code generator needs a dense input";
        return false;
      }
      return copy_launch(odt, oshape, 0, a.storage_offset, Strides(a.strides, a.strides + a.num_strides), O, 0,
                         strides_of(o), out, why);
    }
    case PK_OP_CAT: {
      const auto &a = *static_cast<const pk_attrs_cat *>(attrs);
      const Strides os = strides_of(o);
      int64_t pos = 0;
      for (uint32_t i = 0; i < nin; ++i) {
        if (!copy_launch(odt, shape_of(in[i]), i, 0, strides_of(in[i]), O, pos * os[a.dim], os, out, why)) return false;
        pos += in[i].shape[a.dim];
      }
      return true;
    }
    case PK_OP_PAD: {
      const auto &a = *static_cast<const pk_attrs_pad *>(attrs);
      const Strides os = strides_of(o), is = strides_of(in[0]);
      if (!fill_launch(odt, a.value, oshape, O, 0, os, out, why)) return false;
      // Input element i of an axis lands at low + i * (interior + 1); only those inside [0, extent) are copied.
      std::vector<int64_t> shape(static_cast<size_t>(in[0].ndim));
      Strides src = is, dst = os;
      int64_t src_off = 0, dst_off = 0;
      for (int32_t d = 0; d < in[0].ndim; ++d) {
        const int64_t st = (a.num_interior ? a.interior[d] : 0) + 1;
        const int64_t low = a.low[d], n = in[0].shape[d], e = o.shape[d];
        const int64_t i_lo = low >= 0 ? 0 : (-low + st - 1) / st;
        const int64_t room = e - 1 - low;
        const int64_t i_hi = room >= 0 ? std::min(n - 1, room / st) : -1;
        const int64_t count = i_hi - i_lo + 1;
        if (count <= 0) return true;
        shape[d] = count;
        src_off += i_lo * is[d];
        dst_off += (low + i_lo * st) * os[d];
        dst[d] = os[d] * st;
      }
      return copy_launch(odt, shape, 0, src_off, src, O, dst_off, dst, out, why);
    }
    case PK_OP_SLICE_SCATTER: {
      const auto &a = *static_cast<const pk_attrs_slice_scatter *>(attrs);
      if (!copy_whole(0)) return false;
      Strides dst = strides_of(o);
      const int64_t off = a.start * dst[a.dim];
      dst[a.dim] *= a.stride;
      return copy_launch(odt, shape_of(in[1]), 1, 0, strides_of(in[1]), O, off, dst, out, why);
    }
    case PK_OP_AS_STRIDED_SCATTER: {
      const auto &a = *static_cast<const pk_attrs_as_strided_scatter *>(attrs);
      if (!is_dense(o)) {
        why = "as_strided_scatter: the code generator needs a dense output";
        return false;
      }
      if (!copy_whole(0)) return false;
      return copy_launch(odt, shape_of(in[1]), 1, 0, strides_of(in[1]), O, a.storage_offset,
                         Strides(a.strides, a.strides + a.num_strides), out, why);
    }
    case PK_OP_FULL:
      return fill_launch(odt, static_cast<const pk_attrs_full *>(attrs)->value, oshape, O, 0, strides_of(o), out, why);
    case PK_OP_SCALAR_TENSOR:
      return fill_launch(odt, static_cast<const pk_attrs_scalar_tensor *>(attrs)->value, oshape, O, 0, strides_of(o),
                         out, why);
    case PK_OP_MAXIMUM_VALUE:
    case PK_OP_MINIMUM_VALUE:
      return fill_launch(odt, extreme_value(odt, op_id == PK_OP_MAXIMUM_VALUE), oshape, O, 0, strides_of(o), out, why);
    case PK_OP_IOTA: {
      const auto &a = *static_cast<const pk_attrs_iota *>(attrs);
      PlannedLaunch l;
      if (!single(PK_OP_IOTA, nullptr, 0, &odt, 1, nullptr, l.region, why)) return false;
      l.shape = oshape;
      l.args = {PlanArg{O, 0, strides_of(o)}};
      l.extra = {a.start, a.step};
      if (numel(oshape) > 0) out.push_back(std::move(l));
      return true;
    }
    case PK_OP_PHILOX_UNIFORM:
    case PK_OP_PHILOX_NORMAL:
    case PK_OP_PHILOX_RANDINT: {
      if (attrs == nullptr) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      PlannedLaunch l;
      if (!single(op_id, nullptr, 0, &odt, 1, nullptr, l.region, why)) return false;
      auto bits = [](double v) {
        int64_t b;
        std::memcpy(&b, &v, sizeof b);
        return b;
      };
      if (op_id == PK_OP_PHILOX_UNIFORM) {
        const auto &a = *static_cast<const pk_attrs_philox_uniform *>(attrs);
        l.extra = {a.seed, a.offset, bits(a.low), bits(a.high)};
      } else if (op_id == PK_OP_PHILOX_NORMAL) {
        const auto &a = *static_cast<const pk_attrs_philox_normal *>(attrs);
        l.extra = {a.seed, a.offset, bits(a.mean), bits(a.std)};
      } else {
        const auto &a = *static_cast<const pk_attrs_philox_randint *>(attrs);
        l.extra = {a.seed, a.offset, a.low, a.high};
      }
      l.shape = oshape;
      l.args = {PlanArg{O, 0, strides_of(o)}};
      if (numel(oshape) > 0) out.push_back(std::move(l));
      return true;
    }
    case PK_OP_VAR: {
      if (attrs == nullptr) {
        why = "var: no attributes";
        return false;
      }
      const auto &a = *static_cast<const pk_attrs_var *>(attrs);
      return plan_reduction(op_id, in[0], o, std::vector<int64_t>(a.dims, a.dims + a.num_dims), out, why, attrs);
    }
    case PK_OP_CUMSUM:
    case PK_OP_CUMPROD:
    case PK_OP_CUMMAX:
    case PK_OP_CUMMIN:
    case PK_OP_LOGCUMSUMEXP: {
      if (attrs == nullptr || nin != 1) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      // Every scan's attributes are {struct_size, dim}.
      static_assert(sizeof(pk_attrs_cumsum) == sizeof(pk_attrs_cumprod) &&
                        sizeof(pk_attrs_cumsum) == sizeof(pk_attrs_cummax) &&
                        sizeof(pk_attrs_cumsum) == sizeof(pk_attrs_cummin) &&
                        sizeof(pk_attrs_cumsum) == sizeof(pk_attrs_logcumsumexp),
                    "scan attribute layouts differ");
      return plan_scan(op_id, in, outs, nout, static_cast<const pk_attrs_cumsum *>(attrs)->dim, out, why);
    }
    case PK_OP_GATHER:
    case PK_OP_INDEX_SELECT: {
      if (attrs == nullptr || nin != 2) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      static_assert(sizeof(pk_attrs_gather) == sizeof(pk_attrs_index_select), "gather attribute layouts differ");
      return plan_gather(op_id, in, o, static_cast<const pk_attrs_gather *>(attrs)->dim, out, why);
    }
    case PK_OP_SORT:
    case PK_OP_TOPK: {
      if (attrs == nullptr || nin != 1) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      const int64_t dim = op_id == PK_OP_SORT ? static_cast<const pk_attrs_sort *>(attrs)->dim
                                              : static_cast<const pk_attrs_topk *>(attrs)->dim;
      return plan_order(op_id, in[0], outs, nout, dim, attrs, out, why);
    }
    case PK_OP_SCATTER:
    case PK_OP_SCATTER_REDUCE:
      if (attrs == nullptr || nin != 3) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      static_assert(offsetof(pk_attrs_scatter, dim) == offsetof(pk_attrs_scatter_reduce, dim), "scatter dim");
      return plan_scatter(op_id, in, o, static_cast<const pk_attrs_scatter *>(attrs)->dim, attrs, out, why);
    case PK_OP_INDEX_PUT:
      if (attrs == nullptr || nin < 3) {
        why = "index_put: no attributes or no index";
        return false;
      }
      return plan_index_put(in, nin, o, attrs, out, why);
    case PK_OP_FFT_C2C:
    case PK_OP_FFT_R2C:
    case PK_OP_FFT_C2R:
      if (attrs == nullptr || nin != 1) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      return plan_fft(op_id, in[0], o, attrs, out, why);
    case PK_OP_CONVOLUTION:
      if (attrs == nullptr || nin != 2) {
        why = "convolution: no attributes";
        return false;
      }
      return plan_conv(in, o, attrs, out, why);
    case PK_OP_SEARCHSORTED:
      if (attrs == nullptr || nin != 2) {
        why = "searchsorted: no attributes";
        return false;
      }
      return plan_searchsorted(in, o, attrs, out, why);
    case PK_OP_MATMUL:
    case PK_OP_BATCH_MATMUL: {
      if (nin != 2) break;
      const int64_t r = in[0].ndim;  // [B,] M, K x [B,] K, N
      const std::vector<int64_t> batch = r == 3 ? std::vector<int64_t>{0} : std::vector<int64_t>{};
      return plan_dot(op_id, in, o, batch, batch, {r - 1}, {r - 2}, out, why);
    }
    case PK_OP_DOT_GENERAL: {
      if (attrs == nullptr || nin != 2) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      const auto &a = *static_cast<const pk_attrs_dot_general *>(attrs);
      return plan_dot(op_id, in, o, std::vector<int64_t>(a.lhs_batch, a.lhs_batch + a.num_lhs_batch),
                      std::vector<int64_t>(a.rhs_batch, a.rhs_batch + a.num_rhs_batch),
                      std::vector<int64_t>(a.lhs_contract, a.lhs_contract + a.num_lhs_contract),
                      std::vector<int64_t>(a.rhs_contract, a.rhs_contract + a.num_rhs_contract), out, why);
    }
    case PK_OP_ARGMAX:
    case PK_OP_ARGMIN: {
      if (attrs == nullptr) {
        why = text("%s: no attributes", op->name);
        return false;
      }
      static_assert(sizeof(pk_attrs_argmax) == sizeof(pk_attrs_argmin), "argmax/argmin attribute layouts differ");
      return plan_reduction(op_id, in[0], o, {static_cast<const pk_attrs_argmax *>(attrs)->dim}, out, why);
    }
    default:
      break;
  }
  if (is_dims_reduction(op_id)) {
    if (attrs == nullptr) {
      why = text("%s: no attributes", op->name);
      return false;
    }
    const auto &a = *static_cast<const pk_attrs_sum *>(attrs);
    return plan_reduction(op_id, in[0], o, std::vector<int64_t>(a.dims, a.dims + a.num_dims), out, why);
  }
  // Elementwise: every operand walks the output's shape with its own strides.
  if (nin > 8) {
    why = "the code generator handles elementwise ops with at most 8 inputs";
    return false;
  }
  int32_t dts[8];
  for (uint32_t i = 0; i < nin; ++i) dts[i] = pk::meta::dtype_id(in[i].dtype);
  PlannedLaunch l;
  if (!single(op_id, dts, nin, &odt, 1, attrs, l.region, why)) return false;
  l.shape = oshape;
  for (uint32_t i = 0; i < nin; ++i) l.args.push_back(PlanArg{i, 0, strides_of(in[i])});
  l.args.push_back(PlanArg{O, 0, strides_of(o)});
  if (numel(oshape) > 0) out.push_back(std::move(l));
  return true;
}

// Coverage queries give no output descriptors (and attributes may be NULL: "any values"): the answer comes from
// the op's dtype rules.
bool coverage(const pk::meta::OpInfo &op, const int32_t *in, uint32_t nin, const void *attrs, std::string &why) {
  auto var_dtype = [&](int32_t var) {
    for (uint32_t i = 0; i < nin && i < op.num_inputs; ++i)
      if (op.inputs[i].type_var == var) return in[i];
    return nin > 0 ? in[0] : static_cast<int32_t>(PK_DTYPE_F32);
  };
  int32_t odt = PK_DTYPE_F32;
  if (op.num_outputs > 0) {
    const pk::meta::OutputInfo &oi = op.outputs[0];
    switch (oi.rule) {
      case pk::meta::DtypeRule::type_var:
        odt = var_dtype(oi.arg);
        break;
      case pk::meta::DtypeRule::fixed:
        odt = oi.arg;
        break;
      case pk::meta::DtypeRule::attr:
        odt = nin > 0 ? in[0] : static_cast<int32_t>(PK_DTYPE_F32);
        if (attrs != nullptr) std::memcpy(&odt, static_cast<const char *>(attrs) + op.attrs[oi.arg].offset, sizeof odt);
        break;
      case pk::meta::DtypeRule::complex_of:
        odt = pk::meta::complex_of(var_dtype(oi.arg));
        break;
      default:
        odt = pk::meta::real_of(var_dtype(oi.arg));
        break;
    }
  }
  if (op.num_outputs != 1 && op.id != PK_OP_CUMMAX && op.id != PK_OP_CUMMIN && !is_order_op(op.id)) {
    why = text("%s: the code generator handles ops with one output", op.name);
    return false;
  }
  switch (op.id) {
    case PK_OP_CLONE:
    case PK_OP_VIEW_OF:
    case PK_OP_COPY_TO:
    case PK_OP_TRANSPOSE:
    case PK_OP_BROADCAST_IN_DIM:
    case PK_OP_SLICE:
    case PK_OP_SLICE_IN_DIM:
    case PK_OP_REV:
    case PK_OP_EXPAND_DIMS:
    case PK_OP_SQUEEZE:
    case PK_OP_COLLAPSE_VIEW:
    case PK_OP_COLLAPSE:
    case PK_OP_RESHAPE:
    case PK_OP_SPLIT_DIM:
    case PK_OP_AS_STRIDED:
    case PK_OP_CAT:
    case PK_OP_SLICE_SCATTER:
    case PK_OP_AS_STRIDED_SCATTER: {
      int32_t lanes = 1;
      if (bits_dtype(odt, lanes) >= 0) return true;
      why = text("%s: no storage type for this dtype in the code generator", op.name);
      return false;
    }
    case PK_OP_PAD:
    case PK_OP_FULL:
    case PK_OP_SCALAR_TENSOR:
    case PK_OP_MAXIMUM_VALUE:
    case PK_OP_MINIMUM_VALUE:
      if (cls(odt) || odt == PK_DTYPE_F8E4M3FN || odt == PK_DTYPE_F8E5M2) return true;
      why = text("%s: dtype %s is not supported by the code generator", op.name, pk::meta::dtype_name(odt));
      return false;
    default:
      break;
  }
  Region r;
  return single(op.id, in, nin, &odt, 1, nullptr, r, why);
}

}  // namespace

bool plan_op(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
             uint32_t num_outputs, const void *attrs, std::vector<PlannedLaunch> &out, std::string &why) {
  out.clear();
  for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) {
    const pk_tensor &t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
    if (pk::meta::dtype_id(t.dtype) < 0) {
      why = "unknown dtype";
      return false;
    }
  }
  if (!plan_impl(op_id, inputs, num_inputs, outputs, num_outputs, attrs, out, why)) {
    out.clear();
    return false;
  }
  for (const PlannedLaunch &l : out) {
    if (l.shape.size() > PK_MAX_RANK) {
      why = "rank too large for the code generator";
      out.clear();
      return false;
    }
  }
  return true;
}

bool plan_is_dense(const PlannedLaunch &l) {
  // The convolution kernel reads its element-space coordinates, which only the strided kernel has.
  if (l.region.nodes.size() == 1 &&
      (l.region.nodes[0].op_id == PK_OP_CONVOLUTION || is_fft_op(l.region.nodes[0].op_id)))
    return false;
  const size_t r = l.shape.size();
  const size_t lead = r - static_cast<size_t>(l.red);
  std::vector<int64_t> lead_shape(l.shape.begin(), l.shape.begin() + static_cast<std::ptrdiff_t>(lead));
  std::vector<int64_t> red_shape(l.shape.begin() + static_cast<std::ptrdiff_t>(lead), l.shape.end());
  const Strides full = dense_strides(l.shape), ls = dense_strides(lead_shape), rs = dense_strides(red_shape);
  const size_t nin = l.region.inputs.size();
  for (size_t k = 0; k < l.args.size(); ++k) {
    const uint32_t v = k < nin ? l.region.inputs[k] : l.region.outputs[k - nin];
    const Kind kind = l.region.kind(v);
    for (size_t d = 0; d < r; ++d) {
      if (l.shape[d] == 1) continue;
      int64_t want = full[d];
      if (kind == kRow) want = d < lead ? ls[d] : 0;
      if (kind == kCol) want = d < lead ? 0 : rs[d - lead];
      if (l.args[k].strides[d] != want) return false;
    }
  }
  return true;
}

bool fused_args_match(const Region &region, const std::vector<int64_t> &shape, int32_t red, const pk_tensor *args,
                      uint32_t num_args, std::string &why) {
  auto shape_text = [](const int64_t *dims, size_t n) {
    std::string t = "[";
    for (size_t d = 0; d < n; ++d) t += (d ? "," : "") + std::to_string(dims[d]);
    return t + "]";
  };
  if (num_args != region.num_args() || (num_args > 0 && args == nullptr)) {
    why = "the kernel takes " + std::to_string(region.num_args()) + " arguments, got " + std::to_string(num_args);
    return false;
  }
  if (red < 0 || static_cast<size_t>(red) > shape.size()) {
    why = "the kernel's element space has fewer axes than it reduces";
    return false;
  }
  const size_t lead = shape.size() - static_cast<size_t>(red);
  const size_t nin = region.inputs.size();
  for (uint32_t i = 0; i < num_args; ++i) {
    const uint32_t v = i < nin ? region.inputs[i] : region.outputs[i - nin];
    const pk_tensor &t = args[i];
    const std::string which = "argument " + std::to_string(i);
    if (v >= region.dtypes.size()) {
      why = which + ": the region has no such value";
      return false;
    }
    if (pk::meta::dtype_id(t.dtype) != region.dtypes[v]) {
      why = which + " is " + pk::meta::dtype_name(pk::meta::dtype_id(t.dtype)) + ", the kernel was planned for " +
            pk::meta::dtype_name(region.dtypes[v]);
      return false;
    }
    const Kind kind = region.kind(v);
    const size_t first = kind == kCol ? lead : 0, last = kind == kRow ? lead : shape.size();
    const bool readable = t.ndim >= 0 && t.ndim <= PK_MAX_RANK && (t.ndim == 0 || t.shape != nullptr);
    if (!readable || static_cast<size_t>(t.ndim) != last - first ||
        !std::equal(shape.begin() + static_cast<std::ptrdiff_t>(first),
                    shape.begin() + static_cast<std::ptrdiff_t>(last), t.shape)) {
      why = which + " has shape " + (readable ? shape_text(t.shape, static_cast<size_t>(t.ndim)) : "(invalid)") +
            ", the kernel was planned for " + shape_text(shape.data() + first, last - first);
      return false;
    }
    if (t.data == nullptr && numel(shape) != 0) {
      why = which + " has no data";
      return false;
    }
  }
  return true;
}

bool region_for_op(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                   uint32_t num_outputs, const void *attrs, Region &out, std::string &why) {
  std::vector<PlannedLaunch> plan;
  if (!plan_op(op_id, inputs, num_inputs, outputs, num_outputs, attrs, plan, why)) return false;
  if (plan.size() != 1) {
    why = "the op runs as several kernels";
    return false;
  }
  out = plan[0].region;
  return true;
}

bool region_for_query(const pk_op_query &q, Region &out, std::string &why) {
  const pk::meta::OpInfo *op = pk::meta::find_op(q.op_id);
  if (op == nullptr || op->tier != pk::meta::Tier::primitive) {
    why = text("%s: the code generator has no lowering for this op", op ? op->name : "unknown op");
    return false;
  }
  if (q.num_inputs > 0 && q.inputs == nullptr) {
    why = "inputs is NULL";
    return false;
  }
  // A coverage query gives no shape in any tensor (primkit.h), outputs or not; an exact one gives every shape.
  // Found by fuzz_query: a coverage query with outputs went on to plan_op, which read the NULL shapes.
  uint32_t shapeless = 0, ranked = 0;
  for (uint32_t i = 0; i < q.num_inputs + (q.outputs ? q.num_outputs : 0); ++i) {
    const pk_tensor &t = i < q.num_inputs ? q.inputs[i] : q.outputs[i - q.num_inputs];
    if (t.ndim > 0) ++ranked, shapeless += t.shape == nullptr;
  }
  if (shapeless != 0 && shapeless != ranked) {
    why = "some tensors give a shape and others none: neither a coverage nor an exact query";
    return false;
  }
  // NULL attrs mean "any attribute values" (primkit.h): answered as coverage too, never planned from a NULL struct
  // (fuzz_query: an exact as_strided query without attrs bound a reference to NULL).
  if (q.num_outputs == 0 || q.outputs == nullptr || shapeless != 0 || (q.attrs == nullptr && op->num_attrs > 0)) {
    if (q.num_inputs > 64) {
      why = "too many inputs";
      return false;
    }
    int32_t in[64];
    for (uint32_t i = 0; i < q.num_inputs; ++i) in[i] = pk::meta::dtype_id(q.inputs[i].dtype);
    for (uint32_t i = 0; i < q.num_inputs; ++i)
      if (in[i] < 0) {
        why = "unknown dtype";
        return false;
      }
    out = Region{};
    return coverage(*op, in, q.num_inputs, q.attrs, why);
  }
  std::vector<PlannedLaunch> plan;
  if (!plan_op(q.op_id, q.inputs, q.num_inputs, q.outputs, q.num_outputs, q.attrs, plan, why)) return false;
  out = plan.empty() ? Region{} : plan[0].region;
  return true;
}

bool region_from_subgraph(const pk_subgraph &g, uint8_t *claimed, Region &out, int64_t *shape, int32_t &ndim,
                          std::string &why) {
  const uint32_t nn = g.num_nodes;
  std::vector<int32_t> dtypes(g.num_values);
  for (uint32_t v = 0; v < g.num_values; ++v) dtypes[v] = pk::meta::dtype_id(g.values[v].dtype);
  auto same_shape = [&](uint32_t a, uint32_t b) {
    const pk_graph_value &x = g.values[a], &y = g.values[b];
    return x.ndim == y.ndim && std::equal(x.shape, x.shape + x.ndim, y.shape);
  };
  // Which nodes compile on their own.
  std::vector<Node> nodes(nn);
  std::vector<bool> ok(nn, false);
  for (uint32_t i = 0; i < nn; ++i) {
    const pk_graph_node &gn = g.nodes[i];
    Node &n = nodes[i];
    n.op_id = gn.op_id;
    bool shape_ok = gn.num_outputs == 1 && gn.num_inputs >= 1;
    for (uint32_t k = 0; shape_ok && k < gn.num_inputs; ++k) {
      shape_ok = gn.inputs[k] < g.num_values;
      if (shape_ok) n.inputs.push_back(gn.inputs[k]);
    }
    if (!shape_ok || gn.outputs[0] >= g.num_values) continue;
    n.output = gn.outputs[0];
    take_attrs(n, gn.attrs);
    // Line ops and gathers are kernels of their own.
    if (is_line_op(n.op_id) || n.op_id == PK_OP_GATHER || n.op_id == PK_OP_INDEX_SELECT) continue;
    if (!check_node(n, dtypes).empty()) continue;
    if (is_reduction_op(n.op_id)) {
      std::string ignored;
      if (!last_axis_only(n.op_id, gn.attrs, g.values[n.inputs[0]].ndim, ignored)) continue;
    }
    // The kernel runs over one element space and indexes every argument with the element's linear index, so a
    // node qualifies only when all it reads (and what it writes, unless it is a reduction) has one shape.
    bool one_shape = true;
    for (uint32_t v : n.inputs) one_shape = one_shape && same_shape(v, n.inputs[0]);
    if (!is_reduction_op(n.op_id)) one_shape = one_shape && same_shape(n.output, n.inputs[0]);
    ok[i] = one_shape;
  }
  // The longest run of compilable nodes over one element shape; a reduction closes its run. An offered window
  // mixes shapes (batch_norm computes per-channel [C] values and broadcasts them over [N, C, H, W]): a run that
  // spanned two shapes would read and write the smaller values far past their end.
  uint32_t best_begin = 0, best_len = 0;
  for (uint32_t b = 0; b < nn; ++b) {
    uint32_t e = b;
    while (e < nn && ok[e] && same_shape(nodes[e].inputs[0], nodes[b].inputs[0])) {
      ++e;
      if (is_reduction_op(nodes[e - 1].op_id)) break;
    }
    if (e - b > best_len) {
      best_begin = b;
      best_len = e - b;
    }
  }
  if (best_len < 2) {
    why = best_len == 0 ? "no offered node is supported by the code generator"
                        : "only a single node is supported: not worth a fused kernel";
    return false;
  }
  const uint32_t end = best_begin + best_len;
  // Arguments in pk_fusion_claim order: read-but-not-produced values, then produced values used outside.
  std::vector<bool> produced(g.num_values, false), read_in(g.num_values, false), read_out(g.num_values, false);
  for (uint32_t i = 0; i < nn; ++i) {
    const bool in = i >= best_begin && i < end;
    const pk_graph_node &gn = g.nodes[i];
    for (uint32_t k = 0; k < gn.num_inputs; ++k)
      if (gn.inputs[k] < g.num_values) (in ? read_in : read_out)[gn.inputs[k]] = true;
    if (in) produced[gn.outputs[0]] = true;
  }
  std::vector<uint32_t> args_in, args_out;
  for (uint32_t v = 0; v < g.num_values; ++v)
    if (read_in[v] && !produced[v]) args_in.push_back(v);
  for (uint32_t v = 0; v < g.num_values; ++v)
    if (produced[v] && (read_out[v] || g.values[v].is_output)) args_out.push_back(v);
  if (args_out.empty()) {
    why = "the run produces nothing used outside it";
    return false;
  }
  // Renumber compactly (inputs first, then node outputs) so equal structures share one cache key.
  std::map<uint32_t, uint32_t> id;
  Region r;
  auto map = [&](uint32_t v) {
    auto it = id.find(v);
    if (it != id.end()) return it->second;
    uint32_t k = static_cast<uint32_t>(r.dtypes.size());
    id[v] = k;
    r.dtypes.push_back(dtypes[v]);
    return k;
  };
  for (uint32_t v : args_in) r.inputs.push_back(map(v));
  for (uint32_t i = best_begin; i < end; ++i) {
    Node n = nodes[i];
    for (uint32_t &v : n.inputs) v = map(v);
    n.output = map(n.output);
    r.nodes.push_back(n);
  }
  for (uint32_t v : args_out) r.outputs.push_back(map(v));
  why = check(r);
  if (!why.empty()) return false;
  const pk_graph_value &elem = g.values[nodes[best_begin].inputs[0]];  // every run node reads this shape
  ndim = elem.ndim;
  std::copy(elem.shape, elem.shape + elem.ndim, shape);
  for (uint32_t i = best_begin; i < end; ++i) claimed[i] = 1;
  out = std::move(r);
  return true;
}

bool row_region_from_subgraph(const pk_subgraph &g, uint8_t *claimed, Region &out, int64_t *shape, int32_t &ndim,
                              int32_t &red, std::string &why) {
  const uint32_t nv = g.num_values, nn = g.num_nodes;
  auto shape_is = [&](uint32_t v, const std::vector<int64_t> &s) {
    const pk_graph_value &gv = g.values[v];
    return gv.ndim == static_cast<int32_t>(s.size()) && std::equal(s.begin(), s.end(), gv.shape);
  };
  // The element shape and the reduced trailing axes, from the first reduction.
  std::vector<int64_t> E;
  int32_t k = 0;
  for (uint32_t i = 0; i < nn && k == 0; ++i) {
    const pk_graph_node &gn = g.nodes[i];
    if (!is_dims_reduction(gn.op_id) || gn.num_inputs != 1 || gn.attrs == nullptr || gn.inputs[0] >= nv) continue;
    const pk_graph_value &x = g.values[gn.inputs[0]];
    const auto *a = static_cast<const pk_attrs_sum *>(gn.attrs);
    E.assign(x.shape, x.shape + x.ndim);
    k = a->num_dims;
  }
  const int32_t r = static_cast<int32_t>(E.size());
  if (k < 1 || k >= r) {
    why = "no reduction over trailing axes with leading axes left";
    return false;
  }
  const std::vector<int64_t> rows(E.begin(), E.end() - k), cols(E.end() - k, E.end());
  auto trailing = [&](const int64_t *dims, int32_t n) {
    if (n != k) return false;
    for (int32_t i = 0; i < n; ++i)
      if (dims[i] != r - k + i) return false;
    return true;
  };
  auto leading = [&](const int64_t *dims, int32_t n) {
    if (n != r - k) return false;
    for (int32_t i = 0; i < n; ++i)
      if (dims[i] != i) return false;
    return true;
  };
  constexpr uint8_t kUnknown = 255;
  std::vector<uint8_t> kind(nv, kUnknown);
  std::vector<uint32_t> alias(nv);
  for (uint32_t v = 0; v < nv; ++v) {
    alias[v] = v;
    if (shape_is(v, E)) kind[v] = kElem;
  }
  std::vector<int32_t> dtypes(nv);
  for (uint32_t v = 0; v < nv; ++v) dtypes[v] = pk::meta::dtype_id(g.values[v].dtype);
  // Node checks and the kinds they force.
  std::vector<Node> nodes;
  std::vector<std::vector<uint32_t>> groups;  // values that must share a kind (elementwise over row/col values)
  for (uint32_t i = 0; i < nn; ++i) {
    const pk_graph_node &gn = g.nodes[i];
    if (gn.num_outputs != 1 || gn.outputs[0] >= nv) {
      why = "a node without exactly one output";
      return false;
    }
    for (uint32_t q = 0; q < gn.num_inputs; ++q)
      if (gn.inputs[q] >= nv) {
        why = "input value out of range";
        return false;
      }
    const uint32_t y = gn.outputs[0];
    const char *name = pk::meta::op_name(gn.op_id);
    if (gn.op_id == PK_OP_BROADCAST_IN_DIM) {
      const auto *a = static_cast<const pk_attrs_broadcast_in_dim *>(gn.attrs);
      const uint32_t x = gn.inputs[0];
      if (a == nullptr || kind[y] != kElem) {
        why = "broadcast_in_dim: not to the element shape";
        return false;
      }
      uint8_t want = kUnknown;
      if (leading(a->broadcast_dimensions, a->num_broadcast_dimensions) && shape_is(x, rows)) want = kRow;
      if (trailing(a->broadcast_dimensions, a->num_broadcast_dimensions) && shape_is(x, cols)) want = kCol;
      if (want == kUnknown || (kind[x] != kUnknown && kind[x] != want) || g.values[y].is_output) {
        why = "broadcast_in_dim: neither a row nor a column value broadcast over the element shape";
        return false;
      }
      kind[x] = want;
      alias[y] = alias[x];  // row/column values broadcast implicitly in the region
      continue;
    }
    Node n;
    n.op_id = gn.op_id;
    n.output = y;
    if (gn.op_id == PK_OP_FULL) {
      const auto *a = static_cast<const pk_attrs_full *>(gn.attrs);
      if (a == nullptr) {
        why = "full: no attributes";
        return false;
      }
      n.op_id = PK_OP_FILL;
      n.fill_value = a->value;
      if (kind[y] == kUnknown) groups.push_back({y});
    } else if (is_dims_reduction(gn.op_id)) {
      const auto *a = static_cast<const pk_attrs_sum *>(gn.attrs);
      if (a == nullptr || gn.num_inputs != 1 || kind[gn.inputs[0]] != kElem || !trailing(a->dims, a->num_dims) ||
          !shape_is(y, rows)) {
        why = text("%s: not over the trailing axes of the element shape", name);
        return false;
      }
      n.inputs = {alias[gn.inputs[0]]};
      kind[y] = kRow;
    } else {
      for (uint32_t q = 0; q < gn.num_inputs; ++q) n.inputs.push_back(alias[gn.inputs[q]]);
      take_attrs(n, gn.attrs);
      if (kind[y] != kElem) {
        std::vector<uint32_t> grp(n.inputs);
        grp.push_back(y);
        groups.push_back(grp);
      }
    }
    std::string w = check_node(n, dtypes);
    if (!w.empty()) {
      why = w;
      return false;
    }
    nodes.push_back(n);
  }
  // Propagate kinds through groups of row/column values until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &grp : groups) {
      uint8_t known = kUnknown;
      for (uint32_t v : grp)
        if (kind[v] != kUnknown) {
          if (known != kUnknown && kind[v] != known) {
            why = "a value is used both per row and per column";
            return false;
          }
          known = kind[v];
        }
      if (known == kUnknown) continue;
      for (uint32_t v : grp)
        if (kind[v] == kUnknown) {
          kind[v] = known;
          changed = true;
        }
    }
  }
  for (uint32_t v = 0; v < nv; ++v) {
    if (kind[v] == kUnknown && shape_is(v, rows)) kind[v] = kRow;
    if (kind[v] == kUnknown && shape_is(v, cols)) kind[v] = kCol;
    const bool ok = kind[v] == kElem ? shape_is(v, E) : kind[v] == kRow ? shape_is(v, rows) : shape_is(v, cols);
    const bool used = alias[v] == v;
    if (used && (kind[v] == kUnknown || !ok)) {
      why = "a value is neither per element, per row nor per column";
      return false;
    }
  }
  // Arguments in pk_fusion_claim order (every node is claimed): inputs read, then produced values needed outside.
  std::vector<bool> produced(nv, false), read(nv, false);
  for (uint32_t i = 0; i < nn; ++i) {
    produced[g.nodes[i].outputs[0]] = true;
    for (uint32_t q = 0; q < g.nodes[i].num_inputs; ++q) read[g.nodes[i].inputs[q]] = true;
  }
  std::map<uint32_t, uint32_t> id;
  Region reg;
  auto map = [&](uint32_t v) {
    auto it = id.find(v);
    if (it != id.end()) return it->second;
    const uint32_t q = static_cast<uint32_t>(reg.dtypes.size());
    id[v] = q;
    reg.dtypes.push_back(dtypes[v]);
    reg.kinds.push_back(kind[v]);
    return q;
  };
  for (uint32_t v = 0; v < nv; ++v)
    if (read[v] && !produced[v]) reg.inputs.push_back(map(v));
  for (Node n : nodes) {
    for (uint32_t &v : n.inputs) v = map(v);
    n.output = map(n.output);
    reg.nodes.push_back(n);
  }
  for (uint32_t v = 0; v < nv; ++v) {
    if (!produced[v] || !g.values[v].is_output) continue;
    if (kind[v] == kCol) {
      why = "a column value is needed outside";
      return false;
    }
    reg.outputs.push_back(map(v));
  }
  why = check(reg);
  if (!why.empty()) return false;
  std::copy(E.begin(), E.end(), shape);
  ndim = r;
  red = k;
  std::fill(claimed, claimed + nn, uint8_t{1});
  out = std::move(reg);
  return true;
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
          ins = {PK_DTYPE_BOOL, t, t};
        } else if (rl.op == PK_OP_GATHER) {
          ins = {t, PK_DTYPE_I64};
        } else if (rl.op == PK_OP_SCATTER || rl.op == PK_OP_SCATTER_REDUCE) {
          ins = {t, PK_DTYPE_I64, t};
        } else if (rl.op == PK_OP_INDEX_PUT) {
          ins = {t, t, PK_DTYPE_I32, PK_DTYPE_I64};
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
    r.dtypes = {t};
    r.nodes = {Node{PK_OP_FILL, {}, 0, -2.5, 0}};
    r.outputs = {0};
    out.push_back(std::move(r));
  }
  return out;
}

Params::Params(const std::vector<void *> &pointers, int64_t n, int64_t cols, const std::vector<int64_t> &shape,
               const std::vector<std::vector<int64_t>> &strides, const std::vector<int64_t> &extra)
    : pointers_(pointers) {
  scalars_.push_back(n);
  scalars_.push_back(cols);
  if (!shape.empty()) {
    scalars_.insert(scalars_.end(), shape.begin(), shape.end());
    for (const auto &s : strides) scalars_.insert(scalars_.end(), s.begin(), s.end());
  }
  scalars_.insert(scalars_.end(), extra.begin(), extra.end());
  for (void *&p : pointers_) slots_.push_back(&p);
  for (int64_t &s : scalars_) slots_.push_back(&s);
}

uint32_t grid_for(int64_t n) {
  // Grid-stride loops cover the rest; 2^20 blocks keep every SM busy without a huge grid.
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<uint32_t>(std::clamp<int64_t>(blocks, 1, int64_t{1} << 20));
}

}  // namespace pk::codegen
