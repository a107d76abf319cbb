// region.cpp — what the generator compiles: which (op, dtype) pairs, how a launch or a fusion offer becomes a
// Region, and the canonical key that caches compiled kernels. No LLVM here.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "primkit/codegen.hpp"
#include "primkit/op_info.hpp"

namespace pk::codegen {

namespace {

bool is_fp(int32_t d) {
  return d == PK_DTYPE_F16 || d == PK_DTYPE_BF16 || d == PK_DTYPE_F32 || d == PK_DTYPE_F64;
}
bool is_int(int32_t d) {
  return d == PK_DTYPE_U8 || d == PK_DTYPE_I8 || d == PK_DTYPE_I16 || d == PK_DTYPE_I32 || d == PK_DTYPE_I64;
}
bool is_bool(int32_t d) {
  return d == PK_DTYPE_BOOL;
}

constexpr unsigned kF = 1, kI = 2, kB = 4;  // dtype classes: float, integer, bool
unsigned cls(int32_t d) {
  return is_fp(d) ? kF : is_int(d) ? kI : is_bool(d) ? kB : 0;
}

// Dtype classes each op accepts for its (first data) input. Everything absent is answered "not supported".
struct OpRule {
  uint32_t op;
  unsigned classes;
};
const OpRule kRules[] = {
    {PK_OP_ABS, kF | kI},
    {PK_OP_NEG, kF | kI},
    {PK_OP_EXP, kF},
    {PK_OP_LOG, kF},
    {PK_OP_EXP2, kF},
    {PK_OP_LOG2, kF},
    {PK_OP_EXPM1, kF},
    {PK_OP_TANH, kF},
    {PK_OP_SQRT, kF},
    {PK_OP_RECIPROCAL, kF},
    {PK_OP_RSQRT, kF},
    {PK_OP_FLOOR, kF},
    {PK_OP_CEIL, kF},
    {PK_OP_TRUNC, kF},
    {PK_OP_ROUND, kF},
    {PK_OP_BITWISE_NOT, kI | kB},
    {PK_OP_ISFINITE, kF | kI},
    {PK_OP_ISNAN, kF | kI},
    {PK_OP_ISINF, kF | kI},
    {PK_OP_LOGICAL_NOT, kF | kI | kB},
    {PK_OP_FILL, kF | kI | kB},
    {PK_OP_SIGN, kF | kI},
    {PK_OP_SIGNBIT, kF | kI},
    {PK_OP_ADD, kF | kI},
    {PK_OP_SUB, kF | kI},
    {PK_OP_MUL, kF | kI},
    {PK_OP_DIV, kF | kI},
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
    {PK_OP_LOGICAL_AND, kF | kI | kB},
    {PK_OP_LOGICAL_OR, kF | kI | kB},
    {PK_OP_LOGICAL_XOR, kF | kI | kB},
    {PK_OP_COPYSIGN, kF},
    {PK_OP_LT, kF | kI},
    {PK_OP_LE, kF | kI},
    {PK_OP_GT, kF | kI},
    {PK_OP_GE, kF | kI},
    {PK_OP_EQ, kF | kI | kB},
    {PK_OP_NE, kF | kI | kB},
    {PK_OP_WHERE, kF | kI | kB},  // by the dtype of `a` (input 1)
    {PK_OP_FMA, kF},
    {PK_OP_CONVERT_ELEMENT_TYPE, kF | kI | kB},
    {PK_OP_SUM, kF | kI},
    {PK_OP_AMAX, kF | kI},
};

const OpRule *rule(uint32_t op) {
  for (const OpRule &r : kRules)
    if (r.op == op) return &r;
  return nullptr;
}

bool is_reduction(uint32_t op) {
  return op == PK_OP_SUM || op == PK_OP_AMAX;
}

std::string text(const char *fmt, const char *a, const char *b = "") {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

// Checks one node against the rules; empty if the generator compiles it.
std::string check_node(const Node &n, const std::vector<int32_t> &dtypes) {
  const char *name = pk::meta::op_name(n.op_id);
  const OpRule *r = rule(n.op_id);
  if (r == nullptr) return text("%s: the code generator has no lowering for this op", name);
  if (n.inputs.empty() && n.op_id != PK_OP_FILL) return text("%s: no inputs", name);
  for (uint32_t v : n.inputs)
    if (v >= dtypes.size()) return text("%s: input value out of range", name);
  if (n.output >= dtypes.size()) return text("%s: output value out of range", name);
  const int32_t t = dtypes[n.inputs[n.op_id == PK_OP_WHERE ? 1 : 0]];
  const int32_t out = dtypes[n.output];
  if (!(cls(t) & r->classes))
    return text("%s: dtype %s is not supported by the code generator", name, pk::meta::dtype_name(t));
  if (!cls(out))
    return text("%s: output dtype %s is not supported by the code generator", name, pk::meta::dtype_name(out));
  if (n.op_id == PK_OP_CONVERT_ELEMENT_TYPE && out == PK_DTYPE_BF16 &&
      (t == PK_DTYPE_F64 || t == PK_DTYPE_I32 || t == PK_DTYPE_I64)) {
    // Going through f32 would round twice; a direct rounding from 53/64 bits to bf16 is not written yet.
    return text("convert_element_type: %s -> bf16 is not supported by the code generator (double rounding)",
                pk::meta::dtype_name(t));
  }
  return "";
}

}  // namespace

bool Region::reduces() const {
  return !nodes.empty() && is_reduction(nodes.back().op_id);
}

std::string check(const Region &r) {
  if (r.nodes.empty()) return "empty region";
  if (r.outputs.empty()) return "region without outputs";
  std::vector<bool> known(r.dtypes.size(), false);
  for (uint32_t v : r.inputs) {
    if (v >= r.dtypes.size()) return "input value out of range";
    known[v] = true;
  }
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node &n = r.nodes[i];
    std::string why = check_node(n, r.dtypes);
    if (!why.empty()) return why;
    if (n.op_id != PK_OP_FILL)
      for (uint32_t v : n.inputs)
        if (!known[v])
          return text("%s: reads a value that is neither an input nor computed before", pk::meta::op_name(n.op_id));
    if (is_reduction(n.op_id) && i + 1 != r.nodes.size()) return "a reduction must be the region's last node";
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
  for (const Node &n : r.nodes) {
    k += "|" + std::to_string(n.op_id) + ":";
    for (uint32_t v : n.inputs) k += std::to_string(v) + ",";
    k += ">" + std::to_string(n.output);
    if (n.op_id == PK_OP_FILL) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "=%a", n.fill_value);
      k += buf;
    }
    if (n.op_id == PK_OP_ROUND) k += "m" + std::to_string(n.round_mode);
  }
  return k;
}

namespace {

// Fills the per-op attributes of a node from the op's attribute struct (normalized by the runtime).
void take_attrs(Node &n, const void *attrs) {
  if (attrs == nullptr) return;
  if (n.op_id == PK_OP_FILL) n.fill_value = static_cast<const pk_attrs_fill *>(attrs)->value;
  if (n.op_id == PK_OP_ROUND) n.round_mode = static_cast<const pk_attrs_round *>(attrs)->mode;
}

// A reduction qualifies when it reduces exactly the last axis of an input of rank >= 1.
bool last_axis_only(uint32_t op, const void *attrs, int32_t ndim, std::string &why) {
  if (attrs == nullptr) {
    why = text("%s: the code generator reduces only the last axis (no attributes given)", pk::meta::op_name(op));
    return false;
  }
  const auto *a = static_cast<const pk_attrs_sum *>(attrs);  // sum and amax share the layout
  static_assert(sizeof(pk_attrs_sum) == sizeof(pk_attrs_amax), "sum/amax attribute layouts differ");
  if (ndim < 1 || a->num_dims != 1 || a->dims[0] != ndim - 1) {
    why = text("%s: the code generator reduces only the last axis", pk::meta::op_name(op));
    return false;
  }
  return true;
}

bool single(uint32_t op_id, const int32_t *in_dtypes, uint32_t num_inputs, const int32_t *out_dtypes,
            uint32_t num_outputs, const void *attrs, int32_t in_ndim, Region &out, std::string &why) {
  const pk::meta::OpInfo *op = pk::meta::find_op(op_id);
  if (op == nullptr || op->tier != pk::meta::Tier::primitive || num_outputs != 1 || num_inputs == 0) {
    why = text("%s: the code generator has no lowering for this op", op ? op->name : "unknown op");
    return false;
  }
  if (is_reduction(op_id) && !last_axis_only(op_id, attrs, in_ndim, why)) return false;
  Region r;
  for (uint32_t i = 0; i < num_inputs; ++i) {
    if (in_dtypes[i] < 0) {
      why = text("%s: unknown input dtype", op->name);
      return false;
    }
    r.dtypes.push_back(in_dtypes[i]);
    r.inputs.push_back(i);
  }
  r.dtypes.push_back(out_dtypes[0]);
  Node n;
  n.op_id = op_id;
  for (uint32_t i = 0; i < num_inputs; ++i) n.inputs.push_back(i);
  n.output = num_inputs;
  take_attrs(n, attrs);
  r.nodes.push_back(n);
  r.outputs.push_back(num_inputs);
  why = check(r);
  if (!why.empty()) return false;
  out = std::move(r);
  return true;
}

}  // namespace

bool region_for_op(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                   uint32_t num_outputs, const void *attrs, Region &out, std::string &why) {
  if (num_inputs > 8 || num_outputs != 1) {
    why = "the code generator handles ops with one output and at most 8 inputs";
    return false;
  }
  int32_t in[8], o[1];
  for (uint32_t i = 0; i < num_inputs; ++i) in[i] = pk::meta::dtype_id(inputs[i].dtype);
  o[0] = pk::meta::dtype_id(outputs[0].dtype);
  return single(op_id, in, num_inputs, o, 1, attrs, num_inputs ? inputs[0].ndim : 0, out, why);
}

bool region_for_query(const pk_op_query &q, Region &out, std::string &why) {
  if (q.num_inputs > 8 || q.num_outputs != 1 || (q.num_inputs && !q.inputs) || !q.outputs) {
    why = "the code generator handles ops with one output and at most 8 inputs";
    return false;
  }
  int32_t in[8], o[1];
  for (uint32_t i = 0; i < q.num_inputs; ++i) in[i] = pk::meta::dtype_id(q.inputs[i].dtype);
  o[0] = pk::meta::dtype_id(q.outputs[0].dtype);
  return single(q.op_id, in, q.num_inputs, o, 1, q.attrs, q.num_inputs ? q.inputs[0].ndim : 0, out, why);
}

bool region_from_subgraph(const pk_subgraph &g, uint8_t *claimed, Region &out, int64_t *shape, int32_t &ndim,
                          std::string &why) {
  const uint32_t nn = g.num_nodes;
  std::vector<int32_t> dtypes(g.num_values);
  for (uint32_t v = 0; v < g.num_values; ++v) dtypes[v] = pk::meta::dtype_id(g.values[v].dtype);
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
    if (!check_node(n, dtypes).empty()) continue;
    if (is_reduction(n.op_id)) {
      std::string ignored;
      if (!last_axis_only(n.op_id, gn.attrs, g.values[n.inputs[0]].ndim, ignored)) continue;
    }
    ok[i] = true;
  }
  // The longest run of compilable nodes; a reduction closes its run.
  uint32_t best_begin = 0, best_len = 0;
  for (uint32_t b = 0; b < nn; ++b) {
    uint32_t e = b;
    while (e < nn && ok[e]) {
      ++e;
      if (is_reduction(nodes[e - 1].op_id)) break;
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
  const pk_graph_value &elem =
      g.values[nodes[best_begin].inputs.empty() ? nodes[best_begin].output : nodes[best_begin].inputs[0]];
  ndim = elem.ndim;
  std::copy(elem.shape, elem.shape + elem.ndim, shape);
  for (uint32_t i = best_begin; i < end; ++i) claimed[i] = 1;
  out = std::move(r);
  return true;
}

std::vector<Region> supported_single_op_regions() {
  const int32_t all[] = {PK_DTYPE_BOOL, PK_DTYPE_U8,  PK_DTYPE_I8,   PK_DTYPE_I16, PK_DTYPE_I32,
                         PK_DTYPE_I64,  PK_DTYPE_F16, PK_DTYPE_BF16, PK_DTYPE_F32, PK_DTYPE_F64};
  std::vector<Region> out;
  for (const OpRule &rl : kRules) {
    const pk::meta::OpInfo *op = pk::meta::find_op(rl.op);
    if (op == nullptr) continue;
    for (int32_t t : all) {
      if (!(cls(t) & rl.classes)) continue;
      // Output dtypes: the op's rule (bool for predicates, T otherwise); every target for conversions.
      std::vector<int32_t> outs;
      if (rl.op == PK_OP_CONVERT_ELEMENT_TYPE) {
        outs.assign(std::begin(all), std::end(all));
      } else if (op->outputs[0].rule == pk::meta::DtypeRule::fixed) {
        outs.push_back(op->outputs[0].arg);
      } else {
        outs.push_back(t);
      }
      for (int32_t o : outs) {
        std::vector<int32_t> ins;
        if (rl.op == PK_OP_WHERE) {
          ins = {PK_DTYPE_BOOL, t, t};
        } else {
          // Every input of these ops has the type variable's dtype.
          uint32_t arity = op->num_inputs;
          ins.assign(arity, t);
        }
        std::vector<int32_t> ov{o};
        pk_attrs_sum last{};
        last.struct_size = sizeof last;
        last.num_dims = 1;
        last.dims[0] = 1;
        const void *attrs = is_reduction(rl.op) ? static_cast<const void *>(&last) : nullptr;
        int rounds = rl.op == PK_OP_ROUND ? 2 : 1;
        for (int m = 0; m < rounds; ++m) {
          Region r;
          std::string why;
          if (!single(rl.op, ins.data(), static_cast<uint32_t>(ins.size()), ov.data(), 1, attrs, 2, r, why)) continue;
          r.nodes[0].round_mode = m;
          if (rl.op == PK_OP_FILL) r.nodes[0].fill_value = 1.5;
          out.push_back(std::move(r));
        }
      }
    }
  }
  return out;
}

Params::Params(const std::vector<void *> &pointers, int64_t n, int64_t cols, const std::vector<int64_t> &shape,
               const std::vector<std::vector<int64_t>> &strides)
    : pointers_(pointers) {
  scalars_.push_back(n);
  scalars_.push_back(cols);
  if (!shape.empty()) {
    scalars_.insert(scalars_.end(), shape.begin(), shape.end());
    for (const auto &s : strides) scalars_.insert(scalars_.end(), s.begin(), s.end());
  }
  for (void *&p : pointers_) slots_.push_back(&p);
  for (int64_t &s : scalars_) slots_.push_back(&s);
}

uint32_t grid_for(int64_t n) {
  // Grid-stride loops cover the rest; 2^20 blocks keep every SM busy without a huge grid.
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<uint32_t>(std::clamp<int64_t>(blocks, 1, int64_t{1} << 20));
}

}  // namespace pk::codegen
