// planner.cpp — the executor's planner: turns a Program's nodes into steps, offering fusion windows to the
// backend's fusion hook (pk_fusion_offer) and marking the views the executor describes over their source.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "executor.hpp"

using pk::meta::OpInfo;
using pk::meta::TensorType;

namespace pk::rt {
namespace {

// Ops a fusion region may contain: elementwise maps (one output, same shape as the inputs).
bool is_elementwise(const OpInfo &op) {
  return op.tier == pk::meta::Tier::primitive && op.num_outputs == 1 && op.alias == pk::meta::Alias::new_ &&
         (op.shape == pk::meta::ShapeRule::elementwise ||
          (op.shape == pk::meta::ShapeRule::same_as_input && std::strcmp(op.category, "conversion") == 0));
}

bool is_trailing_reduction(const OpInfo &op) {
  return op.tier == pk::meta::Tier::primitive && op.shape == pk::meta::ShapeRule::reduce && op.num_outputs == 1;
}

// Ops a fusion window may contain besides elementwise maps: reductions, broadcasts of their results back over
// the element shape, and constants of any shape — what softmax, layer_norm and rms_norm decompose into.
bool joins_window(const OpInfo &op) {
  return is_elementwise(op) || is_trailing_reduction(op) ||
         (op.tier == pk::meta::Tier::primitive && op.num_outputs == 1 &&
          (op.id == PK_OP_BROADCAST_IN_DIM || op.id == PK_OP_FULL));
}

// View ops the executor can express as a strided description of their input (reshape only when the input is
// compact, which view_of_input checks at run time).
bool aliasable_view(uint32_t op_id) {
  switch (op_id) {
    case PK_OP_TRANSPOSE:
    case PK_OP_BROADCAST_IN_DIM:
    case PK_OP_EXPAND_DIMS:
    case PK_OP_SQUEEZE:
    case PK_OP_SLICE_IN_DIM:
    case PK_OP_VIEW_OF:
    case PK_OP_RESHAPE:
      return true;
    default:
      return false;
  }
}

const OpInfo &op_of(const ProgramNode &n) {
  return *pk::meta::find_op(n.op_id);
}

// Chooses what pk_graph_compile offers the backend's fusion hook and appends the resulting steps.
//
// Windows are maximal runs of consecutive nodes that may join a window, split into their connected components
// (each component of a run of a topological order is convex). A component is offered whole first, so a
// backend can claim a row program (reductions whose results are broadcast back and consumed in the same
// window) as one kernel. Where it declines, the component gets the smaller offers: runs of consecutive
// elementwise nodes of one shape, optionally closed by a reduction of the run's last value. Where it claims
// part of a component, the nodes before and after the claim get those smaller offers too.
class Planner {
 public:
  Planner(Program &exe, const std::vector<ProgramNode> &nodes) : exe_(exe), nodes_(nodes) {
    consumers_.resize(exe.values.size());
    producer_.assign(exe.values.size(), SIZE_MAX);
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (uint32_t v : nodes[i].inputs) consumers_[v].push_back(i);
      for (uint32_t v : nodes[i].outputs) producer_[v] = i;
    }
    graph_output_.assign(exe.values.size(), false);
    for (uint32_t v : exe.outputs) graph_output_[v] = true;
    member_.assign(nodes.size(), false);
  }

  void single(size_t i) {
    ProgramStep s;
    s.node = nodes_[i];
    // A view whose result stays inside the graph is described over its input's storage at run time instead of
    // being copied; a graph output is still written into the caller's buffer.
    s.alias_view = aliasable_view(s.node.op_id) && s.node.outputs.size() == 1 && !graph_output_[s.node.outputs[0]];
    exe_.steps.push_back(std::move(s));
    ++exe_.single_nodes;
  }

  // Every node in order, fusing what the backend claims.
  void plan(bool can_fuse) {
    size_t i = 0;
    while (i < nodes_.size()) {
      if (!can_fuse || !joins_window(op_of(nodes_[i]))) {
        single(i++);
        continue;
      }
      size_t j = i + 1;
      while (j < nodes_.size() && joins_window(op_of(nodes_[j]))) ++j;
      for (const auto &component : components(i, j)) window(component);
      i = j;
    }
  }

 private:
  // Connected components of nodes [begin, end) (edges: values produced and read inside), each in node order,
  // ordered by their first node.
  std::vector<std::vector<size_t>> components(size_t begin, size_t end) const {
    std::vector<size_t> parent(end - begin);
    for (size_t k = 0; k < parent.size(); ++k) parent[k] = k;
    auto find = [&](size_t k) {
      while (parent[k] != k) k = parent[k] = parent[parent[k]];
      return k;
    };
    for (size_t i = begin; i < end; ++i) {
      for (uint32_t v : nodes_[i].inputs) {
        const size_t p = producer_[v];
        if (p != SIZE_MAX && p >= begin && p < end) parent[find(i - begin)] = find(p - begin);
      }
    }
    std::vector<std::vector<size_t>> out;
    std::vector<size_t> slot(parent.size(), SIZE_MAX);
    for (size_t i = begin; i < end; ++i) {
      const size_t root = find(i - begin);
      if (slot[root] == SIZE_MAX) {
        slot[root] = out.size();
        out.emplace_back();
      }
      out[slot[root]].push_back(i);
    }
    return out;
  }

  // End (exclusive position in `list`) of the small run starting at list[p]: consecutive elementwise nodes of
  // one output shape, optionally closed by a reduction of the run's last value. p + 1 when list[p] starts none.
  size_t small_run_end(const std::vector<size_t> &list, size_t p) const {
    if (!is_elementwise(op_of(nodes_[list[p]]))) return p + 1;
    const TensorType &shape0 = exe_.values[nodes_[list[p]].outputs[0]];
    size_t q = p + 1;
    while (q < list.size()) {
      const ProgramNode &n = nodes_[list[q]];
      const TensorType &t = exe_.values[n.outputs[0]];
      if (!is_elementwise(op_of(n)) || t.ndim != shape0.ndim || !std::equal(t.shape, t.shape + t.ndim, shape0.shape))
        break;
      ++q;
    }
    if (q < list.size() && is_trailing_reduction(op_of(nodes_[list[q]])) &&
        nodes_[list[q]].inputs[0] == nodes_[list[q - 1]].outputs[0]) {
      ++q;
    }
    return q;
  }

  void window(const std::vector<size_t> &list) {
    // A component that is one small run gets exactly that offer (once).
    if (list.size() >= 2 && small_run_end(list, 0) != list.size() && offer(list, true)) return;
    small_runs(list);
  }

  void small_runs(const std::vector<size_t> &list) {
    size_t p = 0;
    while (p < list.size()) {
      const size_t q = small_run_end(list, p);
      if (q - p >= 2) {
        const std::vector<size_t> run(list.begin() + static_cast<std::ptrdiff_t>(p),
                                      list.begin() + static_cast<std::ptrdiff_t>(q));
        if (!offer(run, false))
          for (size_t i : run) single(i);
      } else {
        single(list[p]);
      }
      p = q;
    }
  }

  // Offers the nodes `run` (ascending, convex) to the backend. On a claim, appends the steps: unclaimed nodes
  // the claim depends on, the fused kernel, the other unclaimed nodes — the unclaimed ones as small runs when
  // `retry_rest`, else one by one. Returns false (appending nothing) when the backend declines.
  bool offer(const std::vector<size_t> &run, bool retry_rest) {
    Backend &b = *exe_.device->backend;
    const size_t n = run.size();
    for (size_t i : run) member_[i] = true;
    // Subgraph values: external inputs (ascending value id), then node outputs in node order.
    std::vector<uint32_t> ids;
    for (size_t i : run)
      for (uint32_t v : nodes_[i].inputs) {
        const size_t p = producer_[v];
        if ((p == SIZE_MAX || !member_[p]) && std::find(ids.begin(), ids.end(), v) == ids.end()) ids.push_back(v);
      }
    std::sort(ids.begin(), ids.end());
    const size_t num_external = ids.size();
    for (size_t i : run)
      for (uint32_t v : nodes_[i].outputs) ids.push_back(v);
    auto local = [&](uint32_t v) { return static_cast<uint32_t>(std::find(ids.begin(), ids.end(), v) - ids.begin()); };
    std::vector<pk_graph_value> values(ids.size());
    for (size_t k = 0; k < ids.size(); ++k) {
      const TensorType &t = exe_.values[ids[k]];
      pk_graph_value &gv = values[k];
      PK_STRUCT_INIT(gv);
      gv.dtype = pk::meta::dtype_desc(t.dtype);
      gv.ndim = t.ndim;
      std::copy(t.shape, t.shape + t.ndim, gv.shape);
      gv.is_input = k < num_external;
      // Needed outside: a graph output, or read by any node not offered (before or after the window).
      bool outside = graph_output_[ids[k]];
      for (size_t c : consumers_[ids[k]]) outside = outside || !member_[c];
      gv.is_output = k >= num_external && outside;
    }
    std::vector<std::vector<uint32_t>> ins(n), outs(n);
    std::vector<pk_graph_node> gnodes(n);
    std::vector<size_t> local_node(nodes_.size(), SIZE_MAX);
    for (size_t i = 0; i < n; ++i) {
      const ProgramNode &g = nodes_[run[i]];
      local_node[run[i]] = i;
      for (uint32_t v : g.inputs) ins[i].push_back(local(v));
      for (uint32_t v : g.outputs) outs[i].push_back(local(v));
      pk_graph_node &gn = gnodes[i];
      PK_STRUCT_INIT(gn);
      gn.op_id = g.op_id;
      gn.attrs = g.attrs.empty() ? nullptr : g.attrs.data();
      gn.num_inputs = static_cast<uint32_t>(ins[i].size());
      gn.inputs = ins[i].data();
      gn.num_outputs = static_cast<uint32_t>(outs[i].size());
      gn.outputs = outs[i].data();
    }
    for (size_t i : run) member_[i] = false;
    pk_subgraph sg;
    PK_STRUCT_INIT(sg);
    sg.num_values = static_cast<uint32_t>(values.size());
    sg.values = values.data();
    sg.num_nodes = static_cast<uint32_t>(n);
    sg.nodes = gnodes.data();
    std::vector<uint8_t> claimed(n, 0);
    pk_fusion_claim claim;
    PK_STRUCT_INIT(claim);
    claim.num_nodes = static_cast<uint32_t>(n);
    claim.claimed = claimed.data();
    pk_be_kernel *kernel = nullptr;
    const pk_status st = b.api.fusion_offer(b.context, exe_.device->index, &sg, &claim, &kernel);
    const size_t num_claimed =
        static_cast<size_t>(std::count_if(claimed.begin(), claimed.end(), [](uint8_t c) { return c != 0; }));
    // anc[j][i]: node j of the run depends on node i, transitively.
    std::vector<std::vector<bool>> anc(n, std::vector<bool>(n, false));
    for (size_t j = 0; j < n; ++j)
      for (uint32_t v : nodes_[run[j]].inputs) {
        const size_t p = producer_[v];
        if (p == SIZE_MAX || local_node[p] == SIZE_MAX) continue;
        const size_t i = local_node[p];
        anc[j][i] = true;
        for (size_t h = 0; h < i; ++h)
          if (anc[i][h]) anc[j][h] = true;
      }
    bool convex = true;
    std::vector<bool> before(n, false);
    for (size_t u = 0; u < n && convex; ++u) {
      if (claimed[u]) continue;
      bool after_claim = false;
      for (size_t c = 0; c < n; ++c) {
        if (!claimed[c]) continue;
        after_claim = after_claim || anc[u][c];
        before[u] = before[u] || anc[c][u];
      }
      convex = !(after_claim && before[u]);
    }
    if (st != PK_OK || kernel == nullptr || num_claimed == 0 || !convex) {
      // Declining (or a claim the runtime cannot schedule): the caller makes the smaller offers.
      if (kernel && b.api.kernel_destroy) b.api.kernel_destroy(b.context, kernel);
      return false;
    }
    // Kernel arguments: values claimed nodes read but do not produce, then values they produce that are read
    // outside the claim or leave the run (both ascending in the subgraph's value order).
    std::vector<bool> by_claim(ids.size(), false), read_by_claim(ids.size(), false), read_outside(ids.size(), false);
    for (size_t i = 0; i < n; ++i) {
      for (uint32_t lv : ins[i]) (claimed[i] ? read_by_claim : read_outside)[lv] = true;
      if (claimed[i])
        for (uint32_t lv : outs[i]) by_claim[lv] = true;
    }
    ProgramStep fused;
    fused.fused = true;
    fused.kernel = kernel;
    for (size_t k = 0; k < ids.size(); ++k)
      if (read_by_claim[k] && !by_claim[k]) fused.args.push_back(ids[k]);
    for (size_t k = 0; k < ids.size(); ++k)
      if (by_claim[k] && (read_outside[k] || values[k].is_output)) fused.args.push_back(ids[k]);
    std::vector<size_t> first, last;
    for (size_t u = 0; u < n; ++u)
      if (!claimed[u]) (before[u] ? first : last).push_back(run[u]);
    auto rest = [&](const std::vector<size_t> &group) {
      if (retry_rest) {
        small_runs(group);
      } else {
        for (size_t i : group) single(i);
      }
    };
    rest(first);
    exe_.steps.push_back(std::move(fused));
    ++exe_.fused_kernels;
    exe_.fused_nodes += static_cast<uint32_t>(num_claimed);
    rest(last);
    return true;
  }

  Program &exe_;
  const std::vector<ProgramNode> &nodes_;
  std::vector<std::vector<size_t>> consumers_;  // per value: the nodes that read it
  std::vector<size_t> producer_;                // per value: the node that computes it, SIZE_MAX for inputs
  std::vector<bool> graph_output_;
  std::vector<bool> member_;  // scratch: nodes of the offer being built
};

}  // namespace

void plan_steps(Program &prog, const std::vector<ProgramNode> &nodes, bool can_fuse) {
  Planner(prog, nodes).plan(can_fuse);
}

}  // namespace pk::rt
