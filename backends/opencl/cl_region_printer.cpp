// cl_region_printer.cpp — the fusion planner's regions (primkit/region.hpp) printed as OpenCL C: the OpenCL
// backend's counterpart of the LLVM printer (sdk/codegen), so both fuse what the one planner plans. Every node is
// printed by the expressions the backend's own kernels use (cl_codegen.cpp's op_expr, cl_special's device math,
// cl_codegen_reduce.cpp's accumulators): a fused chain computes what its ops compute one by one.
//
//   elementwise regions: gen_elementwise's program (dense, strided and vector kernels) of the region's nodes;
//   reducing regions (row programs such as softmax, layer_norm, rms_norm, log_softmax, and elementwise chains
//   closed by a reduction over the last axis): one work-item per row, as the reduction kernel pk_red_direct, making
//   its passes over the row in column order: each pass folds the reductions whose inputs are known by then (with
//   gen_reduction's accumulators, so a fused sum adds in the order and precision of the sum kernel), the last one
//   stores the element outputs. Element values a later pass needs again are recomputed from the inputs (the row
//   is in cache by then). Where gen_elementwise would vectorize the element nodes (every value f32, or every one
//   f64), the dense kernel computes them 8 (4) columns at a time through vectors and folds the lanes in column
//   order: PoCL's vector exp is what makes a fused softmax faster than the unfused ops (scalar, it took 3x as
//   long). A work-group per row with a tree in local memory was 5x slower on PoCL: its work-item loop wraps each
//   work-item's strided column loop and nothing vectorizes.
#include <algorithm>
#include <string>
#include <vector>

#include "cl_backend.hpp"
#include "cl_codegen.hpp"
#include "cl_codegen_internal.hpp"
#include "cl_special.hpp"
#include "primkit/op_info.hpp"
#include "primkit/region.hpp"

namespace pk::ocl {

using codegen::kCol;
using codegen::kElem;
using codegen::Kind;
using codegen::kRow;
using codegen::Node;
using codegen::Region;

namespace {

bool no(std::string *why, const std::string &reason) {
  if (why) *why = reason;
  return false;
}

std::string num(uint64_t v) {
  return std::to_string(v);
}

std::string val(uint32_t v) {
  return "v" + num(v);
}

// The type variable of a node (a fill has none: its output's).
int32_t node_type(const Node &n, const std::vector<int32_t> &dtypes) {
  if (n.op_id == PK_OP_FILL) return dtypes[n.output];
  int32_t in_dt[3] = {-1, -1, -1};
  for (size_t i = 0; i < n.inputs.size() && i < 3; ++i) in_dt[i] = dtypes[n.inputs[i]];
  return type_var_dtype(n.op_id, in_dt, static_cast<uint32_t>(std::min<size_t>(n.inputs.size(), 3)));
}

// The node as the elementwise generator's EwNode (round mode, conversion target, fill value as storage bits).
EwNode ew_node(const Node &n, const std::vector<int32_t> &dtypes) {
  EwNode e;
  e.op_id = n.op_id;
  e.num_inputs = static_cast<uint32_t>(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size() && i < 3; ++i) e.inputs[i] = static_cast<int32_t>(n.inputs[i]);
  e.output = static_cast<int32_t>(n.output);
  const int32_t out_dt = dtypes[n.output];
  if (n.op_id == PK_OP_CONVERT_ELEMENT_TYPE) e.variant = static_cast<uint32_t>(out_dt);
  if (n.op_id == PK_OP_ROUND) e.variant = static_cast<uint32_t>(n.round_mode);
  if (n.op_id == PK_OP_FILL) e.const_bits = value_bits(n.fill_value, out_dt);
  return e;
}

// The compute type of dtype dt, as a vector of w lanes (w > 1) or a scalar.
std::string ctype(int32_t dt, uint32_t w) {
  return w > 1 ? cl_type(dt).ct + num(w) : std::string(cl_type(dt).ct);
}

// `const <compute type> v<out> = <expression>;` of an elementwise node (or a fill) over scalar values (w = 1), or
// over vectors of w lanes named w<id> (vector_node ops only).
std::string node_stmt(const Node &n, const std::vector<int32_t> &dtypes, const DeviceCaps &caps, uint32_t w = 1) {
  const EwNode e = ew_node(n, dtypes);
  const int32_t t = node_type(n, dtypes);
  const char *prefix = w > 1 ? "w" : "v";
  std::string a[3];
  for (size_t i = 0; i < n.inputs.size() && i < 3; ++i) a[i] = prefix + num(n.inputs[i]);
  // The variable holds the output's compute type; op_expr yields its type variable's (equal-valued where they
  // differ), as in gen_elementwise.
  return "const " + ctype(dtypes[n.output], w) + " " + prefix + num(n.output) + " = " +
         op_expr(n.op_id, t, dtypes[n.output], e.variant, e.const_bits, a, ctype(t, w), caps, nullptr) + ";\n";
}

// Whether one node prints: an elementwise op the backend generates for these dtypes, a fill, or (reducing
// regions) a fold of a real or integer dtype into its own dtype (any/all into bool).
bool node_printable(const Node &n, const std::vector<int32_t> &dtypes, const DeviceCaps &caps, std::string *why) {
  const char *name = pk::meta::op_name(n.op_id);
  const int32_t out_dt = dtypes[n.output];
  if (codegen::is_reduction_op(n.op_id)) {
    const int32_t in_dt = dtypes[n.inputs[0]];
    const meta::Combine fold = codegen::combine_of(n.op_id);
    const bool logical = fold == meta::Combine::logical_and || fold == meta::Combine::logical_or;
    if (fold == meta::Combine::argmax || fold == meta::Combine::argmin || is_cx(in_dt))
      return no(why, std::string(name) + ": not printed in fused kernels");
    if (out_dt != (logical ? PK_DTYPE_BOOL : in_dt)) return no(why, std::string(name) + ": output dtype differs");
    return reduction_supported(n.op_id, in_dt, caps, why);
  }
  for (uint32_t v : n.inputs)
    if (is_cx(dtypes[v])) return no(why, std::string(name) + ": complex values are not fused");
  if (is_cx(out_dt)) return no(why, std::string(name) + ": complex values are not fused");
  if (n.op_id == PK_OP_FILL) {
    static const std::string kNone[3];
    if (!dtype_supported(out_dt, caps, why)) return false;
    return !op_expr(n.op_id, out_dt, out_dt, 0, 0, kNone, cl_type(out_dt).ct, caps, why).empty();
  }
  const meta::OpInfo *op = meta::find_op(n.op_id);
  if (op == nullptr || !is_ew_op(*op) || n.inputs.empty() || n.inputs.size() > 3)
    return no(why, std::string(name) + ": not an elementwise op of the OpenCL backend");
  int32_t in_dt[3] = {-1, -1, -1};
  for (size_t i = 0; i < n.inputs.size(); ++i) in_dt[i] = dtypes[n.inputs[i]];
  return ew_op_supported(n.op_id, in_dt, static_cast<uint32_t>(n.inputs.size()), out_dt, ew_node(n, dtypes).variant,
                         caps, why);
}

// The special-function helpers (cl_special) the region's nodes call.
std::string helpers_of(const Region &r) {
  uint32_t bits = 0;
  for (const Node &n : r.nodes)
    if (!codegen::is_reduction_op(n.op_id)) bits |= special_helper_bits(n.op_id, node_type(n, r.dtypes));
  return special_helpers(bits);
}

// --- row programs --------------------------------------------------------------------------------------------

// Prints the kernel of a reducing region, dense or strided (they differ only in parameters and offsets).
class RowPrinter {
 public:
  RowPrinter(const Region &r, const DeviceCaps &caps) : r_(r), caps_(caps), nv_(r.dtypes.size()) {
    producer_.assign(nv_, -1);
    for (size_t i = 0; i < r_.nodes.size(); ++i) producer_[r_.nodes[i].output] = static_cast<int>(i);
  }

  // The kernel; empty (with why) when some row value never becomes computable.
  std::string kernel(bool strided, std::string *why) {
    strided_ = strided;
    w_ = strided ? 1 : vector_lanes();
    const size_t nin = r_.inputs.size();
    std::string p;
    for (size_t k = 0; k < r_.num_args(); ++k) {
      const uint32_t v = k < nin ? r_.inputs[k] : r_.outputs[k - nin];
      p += std::string(k < nin ? "__global const " : "__global ") + cl_type(r_.dtypes[v]).st + " *p" + num(k) +
           ", const ulong o" + num(k) + ", ";
      if (strided) p += "const pk_dims s" + num(k) + ", ";
    }
    if (strided) p += "const pk_dims shape, const int rank, const int lead, ";
    std::string s = std::string("__kernel void ") + (strided ? "pk_row_strided(" : "pk_row(") + p +
                    "const ulong rows, const ulong cols) {\n";
    s += "  const ulong row = get_global_id(0);\n  if (row >= rows) return;\n";
    avail_.assign(nv_, false);
    for (size_t k = 0; k < nin; ++k) {
      const uint32_t v = r_.inputs[k];
      if (r_.kind(v) != kRow) continue;
      s += "  const " + std::string(cl_type(r_.dtypes[v]).ct) + " " + val(v) + " = " + load(k, v, kRow) + ";\n";
      avail_[v] = true;
    }
    std::vector<bool> done(r_.nodes.size(), false);
    for (;;) {
      s += compute_rows();
      std::vector<size_t> reds;
      std::vector<bool> need(nv_, false);
      for (size_t i = 0; i < r_.nodes.size(); ++i) {
        const Node &n = r_.nodes[i];
        if (done[i] || !codegen::is_reduction_op(n.op_id)) continue;
        std::vector<bool> mine(nv_, false), rows(nv_, false);
        mark(n.inputs[0], mine, &rows);
        bool ready = true;
        for (size_t v = 0; v < nv_; ++v) ready = ready && (!rows[v] || avail_[v]);
        if (!ready) continue;
        reds.push_back(i);
        for (size_t v = 0; v < nv_; ++v) need[v] = need[v] || mine[v];
      }
      if (reds.empty()) break;
      for (size_t i : reds) done[i] = true;
      s += pass(reds, need);
    }
    s += compute_rows();
    for (size_t i = 0; i < r_.nodes.size(); ++i)
      if (!done[i] && codegen::is_reduction_op(r_.nodes[i].op_id)) {
        no(why, "a reduction reads a row value that is never computed");
        return "";
      }
    s += stores();
    return s + "}\n";
  }

 private:
  // The offset of argument k's element at column expression `c` (kRow: the row's value).
  std::string offset(size_t k, Kind kind, const std::string &c) const {
    const std::string K = num(k);
    if (!strided_) {
      if (kind == kRow) return "o" + K + " + row";
      if (kind == kCol) return "o" + K + " + " + c;
      return "o" + K + " + row * cols + " + c;
    }
    // Element-space strides (row values have none on the reduced axes, column values none on the leading ones).
    if (kind == kRow) return "(long)o" + K + " + pk_off(row, shape, 0, lead, s" + K + ")";
    if (kind == kCol) return "(long)o" + K + " + pk_off(" + c + ", shape, lead, rank, s" + K + ")";
    return "(long)o" + K + " + pk_off(row * cols + " + c + ", shape, 0, rank, s" + K + ")";
  }
  std::string load(size_t k, uint32_t v, Kind kind, const std::string &c = "0") const {
    return load_expr(r_.dtypes[v], "p" + num(k) + "[" + offset(k, kind, c) + "]");
  }

  // The lanes of the vector loop: every value of the region f32 (or every one f64) and every element node's
  // expression valid for vectors, as in gen_elementwise's vector kernels; else 1 (no vector loop).
  uint32_t vector_lanes() const {
    const int32_t vt = r_.dtypes.empty() ? -1 : r_.dtypes[0];
    for (int32_t d : r_.dtypes)
      if (d != vt) return 1;
    for (const Node &n : r_.nodes) {
      if (codegen::is_reduction_op(n.op_id) || r_.kind(n.output) == kRow) continue;
      if (n.op_id == PK_OP_FILL || !vector_node(n.op_id, vt, ew_node(n, r_.dtypes).variant, caps_)) return 1;
    }
    return vector_width(vt);
  }

  // The row's columns in order: w_ at a time through vectors (vbody), then the rest one by one (body).
  std::string col_loop(const std::string &vbody, const std::string &body) const {
    std::string s = "  {\n  ulong c = 0;\n";
    if (w_ > 1) s += "  for (; c + " + num(w_) + " <= cols; c += " + num(w_) + ") {\n" + vbody + "  }\n";
    return s + "  for (; c < cols; ++c) {\n" + body + "  }\n  }\n";
  }

  // Element (and column) values needed to compute v at a column; row values met on the way go to `rows`.
  void mark(uint32_t v, std::vector<bool> &need, std::vector<bool> *rows) const {
    if (r_.kind(v) == kRow) {
      if (rows) (*rows)[v] = true;
      return;
    }
    if (need[v]) return;
    need[v] = true;
    if (producer_[v] < 0) return;
    const Node &n = r_.nodes[producer_[v]];
    if (n.op_id != PK_OP_FILL)
      for (uint32_t u : n.inputs) mark(u, need, rows);
  }

  // Row values whose inputs are known, computed once per work-item (each holds the row's values).
  std::string compute_rows() {
    std::string s;
    for (bool changed = true; changed;) {
      changed = false;
      for (const Node &n : r_.nodes) {
        if (codegen::is_reduction_op(n.op_id) || r_.kind(n.output) != kRow || avail_[n.output]) continue;
        bool ready = true;
        if (n.op_id != PK_OP_FILL)
          for (uint32_t u : n.inputs) ready = ready && avail_[u];
        if (!ready) continue;
        s += "  " + node_stmt(n, r_.dtypes, caps_);
        avail_[n.output] = true;
        changed = true;
      }
    }
    return s;
  }

  // The statements computing the needed element values at column c (loads, then nodes in order).
  std::string elem_values(const std::vector<bool> &need, const char *indent) const {
    std::string s;
    for (size_t k = 0; k < r_.inputs.size(); ++k) {
      const uint32_t v = r_.inputs[k];
      if (!need[v] || r_.kind(v) == kRow) continue;
      s += std::string(indent) + "const " + cl_type(r_.dtypes[v]).ct + " " + val(v) + " = " +
           load(k, v, r_.kind(v), "c") + ";\n";
    }
    for (const Node &n : r_.nodes)
      if (need[n.output] && r_.kind(n.output) != kRow && !codegen::is_reduction_op(n.op_id))
        s += indent + node_stmt(n, r_.dtypes, caps_);
    return s;
  }

  // The same over w_ columns from c as vectors w<id> (dense kernel only): row values read are broadcast.
  std::string vec_values(const std::vector<bool> &need, const char *indent) const {
    std::string s;
    std::vector<bool> rows(nv_, false);
    for (const Node &n : r_.nodes)
      if (need[n.output] && r_.kind(n.output) != kRow && !codegen::is_reduction_op(n.op_id))
        for (uint32_t u : n.inputs) rows[u] = rows[u] || r_.kind(u) == kRow;
    for (size_t v = 0; v < nv_; ++v)
      if (rows[v])
        s += std::string(indent) + "const " + ctype(r_.dtypes[v], w_) + " w" + num(v) + " = (" +
             ctype(r_.dtypes[v], w_) + ")(" + val(static_cast<uint32_t>(v)) + ");\n";
    for (size_t k = 0; k < r_.inputs.size(); ++k) {
      const uint32_t v = r_.inputs[k];
      if (!need[v] || r_.kind(v) == kRow) continue;
      s += std::string(indent) + "const " + ctype(r_.dtypes[v], w_) + " w" + num(v) + " = vload" + num(w_) + "(0, p" +
           num(k) + " + " + offset(k, r_.kind(v), "c") + ");\n";
    }
    for (const Node &n : r_.nodes)
      if (need[n.output] && r_.kind(n.output) != kRow && !codegen::is_reduction_op(n.op_id))
        s += indent + node_stmt(n, r_.dtypes, caps_, w_);
    return s;
  }

  // One pass over the row folding reductions `reds`; their results become row values.
  std::string pass(const std::vector<size_t> &reds, const std::vector<bool> &need) {
    std::string s;
    for (size_t i : reds) {
      const Node &n = r_.nodes[i];
      const RedCode rc = red_code(n.op_id, r_.dtypes[n.inputs[0]], caps_);
      s += "  " + rc.acc + " a" + num(i) + " = " + rc.init + ";\n";
    }
    std::string body = elem_values(need, "    "), vbody = w_ > 1 ? vec_values(need, "    ") : "";
    for (size_t i : reds) {
      const Node &n = r_.nodes[i];
      const RedCode rc = red_code(n.op_id, r_.dtypes[n.inputs[0]], caps_);
      body += "    a" + num(i) + " = pk_comb" + num(i) + "(a" + num(i) + ", " + rc.lift(val(n.inputs[0])) + ");\n";
      // The lanes fold in column order: the same sum as the scalar loop's.
      for (uint32_t l = 0; l < w_ && w_ > 1; ++l)
        vbody += "    a" + num(i) + " = pk_comb" + num(i) + "(a" + num(i) + ", " +
                 rc.lift("w" + num(n.inputs[0]) + ".s" + num(l)) + ");\n";
    }
    s += col_loop(vbody, body);
    for (size_t i : reds) {
      const Node &n = r_.nodes[i];
      const int32_t dt = r_.dtypes[n.output];
      const RedCode rc = red_code(n.op_id, r_.dtypes[n.inputs[0]], caps_);
      std::string v = rc.finish("a" + num(i), "cols");
      // Narrow formats round once, as the reduction kernel's store does.
      if (cl_type(dt).small) v = load_expr(dt, store_expr(dt, v));
      s += "  const " + std::string(cl_type(dt).ct) + " " + val(n.output) + " = " + v + ";\n";
      avail_[n.output] = true;
    }
    return s;
  }

  // The last pass: element outputs per column; row outputs once per row.
  std::string stores() const {
    const size_t nin = r_.inputs.size();
    std::vector<bool> need(nv_, false);
    bool any = false;
    for (uint32_t v : r_.outputs)
      if (r_.kind(v) != kRow) {
        mark(v, need, nullptr);
        any = true;
      }
    std::string s;
    if (any) {
      std::string body = elem_values(need, "    "), vbody = w_ > 1 ? vec_values(need, "    ") : "";
      for (size_t k = 0; k < r_.outputs.size(); ++k) {
        const uint32_t v = r_.outputs[k];
        if (r_.kind(v) == kRow) continue;
        body += "    p" + num(nin + k) + "[" + offset(nin + k, r_.kind(v), "c") +
                "] = " + store_expr(r_.dtypes[v], val(v)) + ";\n";
        vbody += "    vstore" + num(w_) + "(w" + num(v) + ", 0, p" + num(nin + k) + " + " +
                 offset(nin + k, r_.kind(v), "c") + ");\n";
      }
      s += col_loop(vbody, body);
    }
    for (size_t k = 0; k < r_.outputs.size(); ++k) {
      const uint32_t v = r_.outputs[k];
      if (r_.kind(v) != kRow) continue;
      s += "  p" + num(nin + k) + "[" + offset(nin + k, kRow, "0") + "] = " + store_expr(r_.dtypes[v], val(v)) + ";\n";
    }
    return s;
  }

  const Region &r_;
  const DeviceCaps &caps_;
  const size_t nv_;
  std::vector<int> producer_;
  std::vector<bool> avail_;
  bool strided_ = false;
  uint32_t w_ = 1;
};

// Offset of linear index `lin` over axes [lo, hi) of `shape` (row-major), through element strides `st`.
const char *kRowOffset = R"CL(
inline long pk_off(ulong lin, const pk_dims shape, const int lo, const int hi, const pk_dims st) {
  long off = 0;
  for (int d = hi - 1; d >= lo; --d) {
    const ulong e = (ulong)shape.v[d];
    off += (long)(lin % e) * st.v[d];
    lin /= e;
  }
  return off;
}
)CL";

}  // namespace

bool region_printable(const Region &r, const DeviceCaps &caps, std::string *why) {
  const std::string w = codegen::check(r);
  if (!w.empty()) return no(why, w);
  if (r.num_extra != 0) return no(why, "regions with per-launch scalars are not printed");
  if (r.num_args() > kMaxRegionArgs) return no(why, "more arguments than a fused kernel takes");
  for (int32_t dt : r.dtypes)
    if (!dtype_supported(dt, caps, why)) return false;
  for (const Node &n : r.nodes)
    if (!node_printable(n, r.dtypes, caps, why)) return false;
  return true;
}

std::string print_elementwise_region(const Region &r, const DeviceCaps &caps, bool *vector, uint32_t *vec_elems) {
  EwGraph g;
  g.dtypes = r.dtypes;
  for (uint32_t v : r.inputs) g.args.push_back(static_cast<int32_t>(v));
  g.num_in_args = static_cast<uint32_t>(g.args.size());
  for (uint32_t v : r.outputs) g.args.push_back(static_cast<int32_t>(v));
  for (const Node &n : r.nodes) g.nodes.push_back(ew_node(n, r.dtypes));
  return gen_elementwise(g, caps, vector, vec_elems);
}

std::string print_row_region(const Region &r, const DeviceCaps &caps, std::string *why) {
  bool float_acc = false;
  std::string combine;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node &n = r.nodes[i];
    if (!codegen::is_reduction_op(n.op_id)) continue;
    const RedCode rc = red_code(n.op_id, r.dtypes[n.inputs[0]], caps);
    float_acc = float_acc || rc.float_acc;
    combine +=
        "inline " + rc.acc + " pk_comb" + num(i) + "(" + rc.acc + " a, " + rc.acc + " x) { " + rc.combine + " }\n";
  }
  // As in every elementwise kernel: each op rounds on its own, no contraction across nodes.
  std::string src = prelude(caps) + "#pragma OPENCL FP_CONTRACT OFF\n" + helpers_of(r);
  if (float_acc) src += float_accumulators();
  src += combine + kRowOffset;
  RowPrinter p(r, caps);
  const std::string dense = p.kernel(false, why);
  if (dense.empty()) return "";
  return src + dense + p.kernel(true, why);
}

}  // namespace pk::ocl
