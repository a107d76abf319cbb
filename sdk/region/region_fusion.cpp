// region_fusion.cpp — fusion: the region of a run of offered nodes the generator compiles (region_from_subgraph),
// or of a whole offered subgraph as one row program (row_region_from_subgraph). No LLVM here.
#include <algorithm>
#include <cstdint>
#include <map>

#include "primkit/op_info.hpp"
#include "primkit/region.hpp"

#include "region_internal.hpp"

namespace pk::codegen {

// The detail helpers the functions below use (emit.hpp, region_internal.hpp).
using detail::check_node;
using detail::is_dims_reduction;
using detail::last_axis_only;
using detail::take_attrs;
using detail::text;

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
  // Constants do not break a run: a 0-d `full` read only by `broadcast_in_dim`s (the bridge's form of a Python
  // scalar, e.g. 0.5 * x), and those broadcasts, join the run whose element shape they broadcast to. In the region
  // the full is a fill node and each broadcast an alias of it, so the kernel splats an immediate instead of
  // reading a materialized tensor of copies (a 12 MiB buffer per scalar for a [1024, 3072] GELU). `konst[i]`:
  // node i is such a full (1) or broadcast (2); `source[i]`: a broadcast's full.
  std::vector<uint8_t> konst(nn, 0);
  std::vector<uint32_t> source(nn, 0);
  std::vector<std::vector<uint32_t>> readers(g.num_values);
  for (uint32_t i = 0; i < nn; ++i)
    for (uint32_t k = 0; k < g.nodes[i].num_inputs; ++k)
      if (g.nodes[i].inputs[k] < g.num_values) readers[g.nodes[i].inputs[k]].push_back(i);
  for (uint32_t i = 0; i < nn; ++i) {
    const pk_graph_node &gn = g.nodes[i];
    if (gn.op_id != PK_OP_FULL || gn.num_inputs != 0 || gn.num_outputs != 1 || gn.attrs == nullptr ||
        gn.outputs[0] >= g.num_values || g.values[gn.outputs[0]].ndim != 0 || g.values[gn.outputs[0]].is_output)
      continue;
    const std::vector<uint32_t> &rd = readers[gn.outputs[0]];
    bool only_broadcasts = !rd.empty();
    for (uint32_t j : rd)
      only_broadcasts = only_broadcasts && g.nodes[j].op_id == PK_OP_BROADCAST_IN_DIM && g.nodes[j].num_outputs == 1 &&
                        g.nodes[j].outputs[0] < g.num_values;
    if (!only_broadcasts) continue;
    Node &n = nodes[i];
    n = Node{};
    n.op_id = PK_OP_FILL;
    n.output = gn.outputs[0];
    n.fill_value = static_cast<const pk_attrs_full *>(gn.attrs)->value;
    if (!check_node(n, dtypes).empty()) continue;
    konst[i] = 1;
    for (uint32_t j : rd) {
      konst[j] = 2;
      source[j] = i;
    }
  }
  auto real = [&](uint32_t i) { return konst[i] == 0; };
  constexpr uint32_t kNoShape = UINT32_MAX;  // a run's element shape: the value it was first seen on
  // Whether constant node i may join a run from `begin` over the shape of value `elem`: a full always (its
  // broadcasts are checked), a broadcast when it produces that shape from a full inside the run.
  auto joins = [&](uint32_t i, uint32_t begin, uint32_t elem) {
    if (konst[i] == 1) return true;
    return (elem == kNoShape || same_shape(g.nodes[i].outputs[0], elem)) && source[i] >= begin;
  };
  // The longest run of compilable nodes over one element shape (counting real nodes only); a reduction closes its
  // run. An offered window mixes shapes (batch_norm computes per-channel [C] values and broadcasts them over
  // [N, C, H, W]): a run that spanned two shapes would read and write the smaller values far past their end.
  uint32_t best_begin = 0, best_len = 0, best_end = 0;
  for (uint32_t b = 0; b < nn; ++b) {
    if (!real(b) && konst[b] != 1) continue;  // a run starts at a real node or a full
    uint32_t elem = kNoShape, e = b, len = 0;
    while (e < nn) {
      if (!real(e)) {
        if (!joins(e, b, elem)) break;
        if (konst[e] == 2 && elem == kNoShape) elem = g.nodes[e].outputs[0];
        ++e;
        continue;
      }
      if (!ok[e]) break;
      if (elem != kNoShape && !same_shape(nodes[e].inputs[0], elem)) break;
      if (elem == kNoShape) elem = nodes[e].inputs[0];
      ++e;
      ++len;
      if (is_reduction_op(nodes[e - 1].op_id)) break;
    }
    if (len > best_len) {
      best_begin = b;
      best_len = len;
      best_end = e;
    }
  }
  if (best_len < 2) {
    why = best_len == 0 ? "no offered node is supported by the code generator"
                        : "only a single node is supported: not worth a fused kernel";
    return false;
  }
  // Constants at the run's end that nothing in the run reads stay outside it (a full whose broadcasts all fell
  // outside would otherwise become a 0-d output); a full keeps the run only with every one of its broadcasts.
  std::vector<uint8_t> in_run(nn, 0);
  for (uint32_t i = best_begin; i < best_end; ++i) in_run[i] = 1;
  for (uint32_t i = best_begin; i < best_end; ++i)
    if (konst[i] == 1)
      for (uint32_t j : readers[g.nodes[i].outputs[0]])
        if (!in_run[j]) in_run[i] = 0;
  for (uint32_t i = best_begin; i < best_end; ++i)
    if (konst[i] == 2) in_run[i] = in_run[source[i]];  // its full lies in the run (joins); kept or not with it
  // Arguments in pk_fusion_claim order: read-but-not-produced values, then produced values used outside.
  std::vector<bool> produced(g.num_values, false), read_in(g.num_values, false), read_out(g.num_values, false);
  for (uint32_t i = 0; i < nn; ++i) {
    const bool in = in_run[i] != 0;
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
  for (uint32_t i = best_begin; i < best_end; ++i) {
    if (!in_run[i]) continue;
    if (konst[i] == 2) {  // a broadcast of a fill: the fill's value, as the region has one element space
      id[g.nodes[i].outputs[0]] = map(g.nodes[i].inputs[0]);
      continue;
    }
    Node n = nodes[i];
    for (uint32_t &v : n.inputs) v = map(v);
    n.output = map(n.output);
    r.nodes.push_back(n);
  }
  for (uint32_t v : args_out) r.outputs.push_back(map(v));
  why = check(r);
  if (!why.empty()) return false;
  uint32_t first_real = best_begin;
  while (!real(first_real)) ++first_real;
  const pk_graph_value &elem = g.values[nodes[first_real].inputs[0]];  // every run node reads this shape
  ndim = elem.ndim;
  std::copy(elem.shape, elem.shape + elem.ndim, shape);
  for (uint32_t i = best_begin; i < best_end; ++i) claimed[i] = in_run[i];
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

}  // namespace pk::codegen
