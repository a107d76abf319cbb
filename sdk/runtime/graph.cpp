// graph.cpp — graphs of ops: construction with shape inference, compilation for a device (composites the
// backend lacks are decomposed, fusion windows are offered to the backend's fusion hook), and execution.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "launch_memo.hpp"
#include "runtime_internal.hpp"

using namespace pk::rt;
using pk::meta::Diag;
using pk::meta::OpInfo;
using pk::meta::TensorType;

namespace {

struct GraphNode {
  uint32_t op_id = PK_OP_NONE;
  std::vector<uint8_t> attrs;  // normalized attribute struct, empty if the op has none
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
};

bool same_type(const TensorType &a, const TensorType &b) {
  if (a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

std::string shape_text(const TensorType &t) {
  std::string s = pk::meta::dtype_name(t.dtype);
  s += '[';
  for (int i = 0; i < t.ndim; ++i) s += (i ? "," : "") + std::to_string(t.shape[i]);
  return s + ']';
}

// Ops a fusion region may contain: elementwise maps (one output, same shape as the inputs).
bool is_elementwise(const OpInfo &op) {
  return op.tier == pk::meta::Tier::primitive && op.num_outputs == 1 && op.alias == pk::meta::Alias::new_ &&
         (op.shape == pk::meta::ShapeRule::elementwise ||
          (op.shape == pk::meta::ShapeRule::same_as_input && std::strcmp(op.category, "conversion") == 0));
}

bool is_trailing_reduction(const OpInfo &op) {
  return op.tier == pk::meta::Tier::primitive && op.shape == pk::meta::ShapeRule::reduce && op.num_outputs == 1;
}

}  // namespace

struct pk_graph_s {
  std::vector<TensorType> values;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<GraphNode> nodes;
};

struct pk_executable_s {
  struct Step {
    bool fused = false;
    bool alias_view = false;         // a view op whose output aliases its input's storage (see view_of_input)
    GraphNode node;                  // single op (fused == false)
    pk_be_kernel *kernel = nullptr;  // fused kernel
    std::vector<uint32_t> args;      // fused kernel arguments, in pk_fusion_claim order
  };
  Device *device = nullptr;
  uint64_t serial = pk::rt::next_generation();  // names this executable in the validation memo (never reused)
  std::vector<TensorType> values;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<Step> steps;
  uint32_t fused_kernels = 0, fused_nodes = 0, single_nodes = 0;
  ~pk_executable_s() {
    Backend &b = *device->backend;
    for (auto &s : steps) {
      if (s.kernel && b.api.kernel_destroy) b.api.kernel_destroy(b.context, s.kernel);
    }
  }
};

namespace {

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

// Describes the output of view step `n` over the storage of its input `in`: same data pointer and storage,
// new shape (the graph's), strides and byte offset. False when the view is not expressible as strides (a
// reshape of a non-compact input); the caller then runs the op into a buffer of its own.
bool view_of_input(const GraphNode &n, const pk_tensor &in, const TensorType &out_type, int64_t *strides,
                   pk_tensor &out) {
  int64_t ist[PK_MAX_RANK];
  if (in.strides) {
    std::copy(in.strides, in.strides + in.ndim, ist);
  } else {
    int64_t st = 1;
    for (int32_t d = in.ndim - 1; d >= 0; --d) {
      ist[d] = st;
      st *= std::max<int64_t>(in.shape[d], 1);
    }
  }
  const int32_t r = out_type.ndim;
  const uint64_t isz = pk::meta::dtype_size(out_type.dtype);
  uint64_t offset = in.byte_offset;
  const void *a = n.attrs.empty() ? nullptr : n.attrs.data();
  switch (n.op_id) {
    case PK_OP_TRANSPOSE: {
      const auto *t = static_cast<const pk_attrs_transpose *>(a);
      for (int32_t d = 0; d < r; ++d) strides[d] = ist[t->permutation[d]];
      break;
    }
    case PK_OP_BROADCAST_IN_DIM: {
      const auto *t = static_cast<const pk_attrs_broadcast_in_dim *>(a);
      std::fill(strides, strides + r, 0);
      for (int32_t k = 0; k < t->num_broadcast_dimensions; ++k) {
        const int64_t d = t->broadcast_dimensions[k];
        strides[d] = (in.shape[k] == 1 && out_type.shape[d] != 1) ? 0 : ist[k];
      }
      break;
    }
    case PK_OP_EXPAND_DIMS: {
      const auto *t = static_cast<const pk_attrs_expand_dims *>(a);
      bool added[PK_MAX_RANK] = {false};
      for (int32_t k = 0; k < t->num_dims; ++k) added[t->dims[k]] = true;
      for (int32_t d = 0, k = 0; d < r; ++d) strides[d] = added[d] ? 0 : ist[k++];
      break;
    }
    case PK_OP_SQUEEZE: {
      const auto *t = static_cast<const pk_attrs_squeeze *>(a);
      bool removed[PK_MAX_RANK] = {false};
      for (int32_t k = 0; k < t->num_dims; ++k) removed[t->dims[k]] = true;
      for (int32_t k = 0, d = 0; k < in.ndim; ++k)
        if (!removed[k]) strides[d++] = ist[k];
      break;
    }
    case PK_OP_SLICE_IN_DIM: {
      const auto *t = static_cast<const pk_attrs_slice_in_dim *>(a);
      std::copy(ist, ist + r, strides);
      offset += static_cast<uint64_t>(t->start * ist[t->dim]) * isz;
      strides[t->dim] = ist[t->dim] * t->stride;
      break;
    }
    case PK_OP_VIEW_OF:
      std::copy(ist, ist + r, strides);
      break;
    case PK_OP_RESHAPE: {
      int64_t want = 1;  // compact row-major input: the output is compact row-major over the same bytes
      for (int32_t d = in.ndim - 1; d >= 0; --d) {
        if (in.shape[d] != 1 && ist[d] != want) return false;
        want *= in.shape[d];
      }
      int64_t st = 1;
      for (int32_t d = r - 1; d >= 0; --d) {
        strides[d] = st;
        st *= std::max<int64_t>(out_type.shape[d], 1);
      }
      break;
    }
    default:
      return false;
  }
  // An empty view reads nothing: it keeps its source's placement, so that the empty slice of an empty input whose
  // data is NULL (a framework's empty tensor) stays at offset 0, as the placement rule wants of NULL data.
  int64_t elements = 1;
  for (int32_t d = 0; d < r; ++d) elements *= out_type.shape[d];
  out = in;
  out.ndim = r;
  out.shape = out_type.shape;
  out.strides = strides;
  out.byte_offset = elements == 0 ? in.byte_offset : offset;
  return true;
}

const OpInfo &op_of(const GraphNode &n) {
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
  Planner(pk_executable_s &exe, const std::vector<GraphNode> &nodes) : exe_(exe), nodes_(nodes) {
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
    pk_executable_s::Step s;
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
      const GraphNode &n = nodes_[list[q]];
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
      const GraphNode &g = nodes_[run[i]];
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
    pk_executable_s::Step fused;
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

  pk_executable_s &exe_;
  const std::vector<GraphNode> &nodes_;
  std::vector<std::vector<size_t>> consumers_;  // per value: the nodes that read it
  std::vector<size_t> producer_;                // per value: the node that computes it, SIZE_MAX for inputs
  std::vector<bool> graph_output_;
  std::vector<bool> member_;  // scratch: nodes of the offer being built
};

}  // namespace

namespace {

// The caller's tensors of one run, checked as pk_launch checks an op's (fused kernels read and write them
// directly): pk::meta::validate_tensors with the DeviceCheck, then each against the type the graph declared. A
// run that repeats the last run of this executable on this thread with the same bytes (and no buffer created or
// freed on the device since) reuses the verdict.
pk_status check_run_tensors(const pk_executable_s &exe, Device &dev, const pk_tensor *inputs, uint32_t num_inputs,
                            const pk_tensor *outputs, uint32_t num_outputs) {
  static constexpr const char *kEntry = "pk_executable_run";
  thread_local pk::rt::LaunchMemo<4096> memo;
  const uint64_t key = dev.validation_key.load(std::memory_order_acquire);
  if (memo.matches_last(key, exe.serial, inputs, num_inputs, outputs, num_outputs, nullptr)) return PK_OK;
  const size_t n = size_t{num_inputs} + num_outputs;
  std::vector<TensorType> types(n);
  std::vector<pk::meta::ViewSpan> spans(n);
  Diag diag;
  const DeviceCheck on_device(dev);
  if (!pk::meta::validate_tensors(nullptr, kEntry, inputs, num_inputs, outputs, num_outputs, &on_device, types.data(),
                                  spans.data(), diag)) {
    return set_error_from_diag(diag, PK_OP_NONE);
  }
  for (uint32_t k = 0; k < n; ++k) {
    const bool in = k < num_inputs;
    const uint32_t v = in ? exe.inputs[k] : exe.outputs[k - num_inputs];
    if (!same_type(types[k], exe.values[v])) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, static_cast<int32_t>(k), 0,
                       "%s: %s %u is %s but the graph declares %s", kEntry, in ? "input" : "output",
                       in ? k : k - num_inputs, shape_text(types[k]).c_str(), shape_text(exe.values[v]).c_str());
    }
  }
  memo.remember(key, exe.serial, inputs, num_inputs, outputs, num_outputs, nullptr, nullptr, 0);
  return PK_OK;
}

}  // namespace

extern "C" {

pk_status pk_graph_create(pk_graph_t *out) {
  if (out == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_graph_create: out is NULL");
  *out = std::make_unique<pk_graph_s>().release();
  return PK_OK;
}

void pk_graph_destroy(pk_graph_t g) {
  std::unique_ptr<pk_graph_s> owned(g);
}

pk_status pk_graph_add_input(pk_graph_t g, pk_dtype dtype, int32_t ndim, const int64_t *shape, uint32_t *out_value) {
  if (g == nullptr || out_value == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_graph_add_input: NULL graph or out_value");
  }
  TensorType t{};
  t.dtype = pk::meta::dtype_id(dtype);
  if (t.dtype < 0) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_graph_add_input: dtype {code %u, bits %u, lanes %u} is no PrimKit dtype", dtype.code,
                     dtype.bits, dtype.lanes);
  }
  if (ndim < 0 || ndim > PK_MAX_RANK || (ndim > 0 && shape == nullptr)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_graph_add_input: rank %d needs 0..%d and a shape array", ndim, PK_MAX_RANK);
  }
  t.ndim = ndim;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_graph_add_input: extent %d is %lld < 0", i,
                       static_cast<long long>(shape[i]));
    }
    t.shape[i] = shape[i];
  }
  // Bounded as a launch bounds its tensors: every later node infers and allocates from these extents.
  Diag diag;
  if (!pk::meta::check_shape_size(t.shape, t.ndim, t.dtype, "pk_graph_add_input", -1, diag)) {
    return set_error_from_diag(diag, PK_OP_NONE);
  }
  *out_value = static_cast<uint32_t>(g->values.size());
  g->values.push_back(t);
  g->inputs.push_back(*out_value);
  return PK_OK;
}

pk_status pk_graph_add_node(pk_graph_t g, uint32_t op_id, const uint32_t *inputs, uint32_t num_inputs,
                            const void *attrs, uint32_t *out_values, uint32_t num_outputs) {
  if (g == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "pk_graph_add_node: graph is NULL");
  const OpInfo *op = pk::meta::find_op(op_id);
  if (op == nullptr)
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "pk_graph_add_node: unknown op id %u", op_id);
  if (num_outputs != op->num_outputs || (num_outputs > 0 && out_values == nullptr)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: pk_graph_add_node needs %u output slots, got %u",
                     op->name, op->num_outputs, num_outputs);
  }
  if (num_inputs > 0 && inputs == nullptr)
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: inputs is NULL", op->name);
  std::vector<TensorType> types(num_inputs);
  for (uint32_t i = 0; i < num_inputs; ++i) {
    if (inputs[i] >= g->values.size()) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, static_cast<int32_t>(i), 0,
                       "%s: input %u names value %u, but the graph has %zu values", op->name, i, inputs[i],
                       g->values.size());
    }
    types[i] = g->values[inputs[i]];
  }
  Diag diag;
  GraphNode node;
  node.op_id = op_id;
  alignas(16) unsigned char normalized[pk::meta::kMaxAttrsSize];
  TensorType outs[8];
  if (!pk::meta::normalize_attrs(*op, attrs, normalized, diag) ||
      !pk::meta::check_attrs(*op, normalized, types.data(), num_inputs, diag) ||
      !pk::meta::infer_outputs(*op, types.data(), num_inputs, normalized, outs, diag)) {
    return set_error_from_diag(diag, op_id);
  }
  if (op->num_attrs) node.attrs.assign(normalized, normalized + op->attrs_size);
  node.inputs.assign(inputs, inputs + num_inputs);
  for (uint32_t k = 0; k < num_outputs; ++k) {
    out_values[k] = static_cast<uint32_t>(g->values.size());
    node.outputs.push_back(out_values[k]);
    g->values.push_back(outs[k]);
  }
  g->nodes.push_back(std::move(node));
  return PK_OK;
}

pk_status pk_graph_mark_output(pk_graph_t g, uint32_t value) {
  if (g == nullptr)
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_graph_mark_output: graph is NULL");
  if (value >= g->values.size()) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_graph_mark_output: no value %u (graph has %zu)",
                     value, g->values.size());
  }
  if (std::find(g->inputs.begin(), g->inputs.end(), value) != g->inputs.end()) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_graph_mark_output: value %u is a graph input; outputs must be computed", value);
  }
  if (std::find(g->outputs.begin(), g->outputs.end(), value) != g->outputs.end()) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_graph_mark_output: value %u is already an output", value);
  }
  g->outputs.push_back(value);
  return PK_OK;
}

pk_status pk_graph_value_info(pk_graph_t g, uint32_t value, pk_dtype *dtype, int32_t *ndim, int64_t *shape) {
  if (g == nullptr || value >= g->values.size()) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_graph_value_info: no such graph or value");
  }
  const TensorType &t = g->values[value];
  if (dtype) *dtype = pk::meta::dtype_desc(t.dtype);
  if (ndim) *ndim = t.ndim;
  if (shape)
    for (int i = 0; i < PK_MAX_RANK; ++i) shape[i] = i < t.ndim ? t.shape[i] : 0;
  return PK_OK;
}

pk_status pk_graph_compile(pk_graph_t g, pk_device_t device, const pk_compile_options *options, pk_executable_t *out) {
  if (g == nullptr || device == nullptr || out == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_graph_compile: NULL graph, device or out");
  }
  *out = nullptr;
  if (g->outputs.empty()) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_graph_compile: the graph has no outputs");
  }
  bool fusion = !(options && options->struct_size >= sizeof(pk_compile_options) && options->disable_fusion);
  Backend &b = *device->backend;
  HostPtr<pk_executable_s> exe = runtime_of(*device).make<pk_executable_s>();
  if (exe == nullptr) return host_out_of_memory(__func__, "an executable", sizeof(pk_executable_s));
  LogScope scope(runtime_of(*device).log);  // a backend may log why it declines a fused region
  exe->device = device;
  exe->values = g->values;
  exe->inputs = g->inputs;
  exe->outputs = g->outputs;
  // 1. Composites the backend does not run natively become their primitives.
  std::vector<GraphNode> nodes;
  for (const GraphNode &node : g->nodes) {
    const OpInfo &op = *pk::meta::find_op(node.op_id);
    if (op.tier != pk::meta::Tier::composite) {
      nodes.push_back(node);
      continue;
    }
    bool native = false;
    if (b.api.op_query) {
      std::vector<pk_tensor> qin(node.inputs.size()), qout(node.outputs.size());
      auto fill = [&](pk_tensor &t, uint32_t v) {
        PK_STRUCT_INIT(t);
        const TensorType &tt = exe->values[v];
        t.dtype = pk::meta::dtype_desc(tt.dtype);
        t.ndim = tt.ndim;
        t.shape = exe->values[v].shape;
        t.device_type = device->props.device_type;
        t.device_id = static_cast<int32_t>(device->index);
      };
      for (size_t i = 0; i < qin.size(); ++i) fill(qin[i], node.inputs[i]);
      for (size_t i = 0; i < qout.size(); ++i) fill(qout[i], node.outputs[i]);
      pk_op_query q;
      PK_STRUCT_INIT(q);
      q.op_id = node.op_id;
      q.device_index = device->index;
      q.num_inputs = static_cast<uint32_t>(qin.size());
      q.inputs = qin.data();
      q.num_outputs = static_cast<uint32_t>(qout.size());
      q.outputs = qout.data();
      q.attrs = node.attrs.empty() ? nullptr : node.attrs.data();
      pk_op_support sup;
      PK_STRUCT_INIT(sup);
      native = b.api.op_query(b.context, &q, &sup) == PK_OK && sup.supported;
    }
    if (native) {
      nodes.push_back(node);
      continue;
    }
    std::vector<TensorType> types;
    for (uint32_t v : node.inputs) types.push_back(exe->values[v]);
    pk::meta::Decomposition dec;
    Diag diag;
    if (!pk::meta::decompose(op, types.data(), static_cast<uint32_t>(types.size()),
                             node.attrs.empty() ? nullptr : node.attrs.data(), dec, diag)) {
      return set_error_from_diag(diag, op.id);
    }
    // Map the decomposition's values into the executable's.
    std::vector<uint32_t> map(dec.values.size(), UINT32_MAX);
    for (size_t i = 0; i < node.inputs.size(); ++i) map[i] = node.inputs[i];
    for (size_t k = 0; k < dec.outputs.size(); ++k) map[dec.outputs[k]] = node.outputs[k];
    for (size_t v = 0; v < dec.values.size(); ++v) {
      if (map[v] == UINT32_MAX) {
        map[v] = static_cast<uint32_t>(exe->values.size());
        exe->values.push_back(dec.values[v]);
      }
    }
    for (const auto &dn : dec.nodes) {
      GraphNode gn;
      gn.op_id = dn.op_id;
      gn.attrs = dn.attrs;
      for (int32_t v : dn.inputs) gn.inputs.push_back(map[v]);
      for (int32_t v : dn.outputs) gn.outputs.push_back(map[v]);
      nodes.push_back(std::move(gn));
    }
  }
  // 2. Fusion offers (see Planner), everything else one op at a time.
  bool can_fuse = fusion && b.api.fusion_offer && b.api.kernel_launch;
  Planner(*exe, nodes).plan(can_fuse);
  {
    std::unique_lock<std::shared_mutex> lock(device->objects_mu);  // freed by pk_runtime_destroy if not before
    device->executables.insert(exe.get());
  }
  *out = exe.release();
  return PK_OK;
}

void pk_executable_destroy(pk_executable_t exe) {
  if (exe == nullptr) return;
  HostPtr<pk_executable_s> owned = runtime_of(*exe->device).adopt(exe);
  std::unique_lock<std::shared_mutex> lock(exe->device->objects_mu);
  exe->device->executables.erase(exe);
}

pk_status pk_executable_stats(pk_executable_t exe, uint32_t *fused_kernels, uint32_t *fused_nodes,
                              uint32_t *single_nodes) {
  if (exe == nullptr)
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_executable_stats: NULL executable");
  if (fused_kernels) *fused_kernels = exe->fused_kernels;
  if (fused_nodes) *fused_nodes = exe->fused_nodes;
  if (single_nodes) *single_nodes = exe->single_nodes;
  return PK_OK;
}

pk_status pk_executable_run(pk_executable_t exe, pk_stream_t stream, const pk_tensor *inputs, uint32_t num_inputs,
                            const pk_tensor *outputs, uint32_t num_outputs) {
  if (exe == nullptr || stream == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_executable_run: NULL executable or stream");
  }
  if (stream->device != exe->device) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_executable_run: the stream is on another device than the executable was compiled for");
  }
  if (num_inputs != exe->inputs.size() || num_outputs != exe->outputs.size() || (num_inputs && !inputs) ||
      (num_outputs && !outputs)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_executable_run: the graph takes %zu inputs and %zu outputs, got %u and %u", exe->inputs.size(),
                     exe->outputs.size(), num_inputs, num_outputs);
  }
  Device &dev = *exe->device;
  if (pk_status st = check_run_tensors(*exe, dev, inputs, num_inputs, outputs, num_outputs)) return st;
  std::vector<pk_tensor> desc(exe->values.size());
  std::vector<bool> bound(exe->values.size(), false);
  for (uint32_t k = 0; k < num_inputs + num_outputs; ++k) {
    const bool in = k < num_inputs;
    const uint32_t v = in ? exe->inputs[k] : exe->outputs[k - num_inputs];
    desc[v] = in ? inputs[k] : outputs[k - num_inputs];
    bound[v] = true;
  }
  struct Temp {
    void *data = nullptr;
    uint64_t capacity = 0;
  };
  std::vector<Temp> temps(exe->values.size());
  std::vector<bool> view_out(exe->values.size(), false);  // described over another value's storage, no buffer
  for (const auto &step : exe->steps)
    if (step.alias_view) view_out[step.node.outputs[0]] = true;
  std::vector<std::array<int64_t, PK_MAX_RANK>> view_strides(exe->values.size());
  pk_status st = PK_OK;
  auto allocate = [&](size_t v) {
    const TensorType &t = exe->values[v];
    uint64_t bytes = static_cast<uint64_t>(pk::meta::numel(t)) * pk::meta::dtype_size(t.dtype);
    pk_status a = dev.allocator->allocate(bytes ? bytes : 1, &temps[v].data, &temps[v].capacity);
    pk_tensor &d = desc[v];
    PK_STRUCT_INIT(d);
    d.data = temps[v].data;
    d.storage_bytes = bytes;
    d.device_type = dev.props.device_type;
    d.device_id = static_cast<int32_t>(dev.index);
    d.dtype = pk::meta::dtype_desc(t.dtype);
    d.ndim = t.ndim;
    d.shape = exe->values[v].shape;
    if (dev.host_visible()) d.flags |= PK_TENSOR_FLAG_HOST_VISIBLE;
    return a;
  };
  for (size_t v = 0; v < exe->values.size() && st == PK_OK; ++v) {
    if (bound[v] || view_out[v]) continue;
    st = allocate(v);
  }
  std::vector<pk_tensor> ins, outs;
  Backend &b = *dev.backend;
  for (const auto &step : exe->steps) {
    if (st != PK_OK) break;
    if (step.fused) {
      ins.clear();
      for (uint32_t v : step.args) ins.push_back(desc[v]);
      st = b.api.kernel_launch(stream->stream, step.kernel, ins.data(), static_cast<uint32_t>(ins.size()));
      if (st != PK_OK) st = forward_backend_error(b, st, PK_OP_NONE, "fused kernel launch failed");
      continue;
    }
    if (step.alias_view) {
      const uint32_t in = step.node.inputs[0], out = step.node.outputs[0];
      if (view_of_input(step.node, desc[in], exe->values[out], view_strides[out].data(), desc[out])) continue;
      st = allocate(out);  // not expressible as strides: run the op into a buffer of its own
      if (st != PK_OK) break;
    }
    ins.clear();
    outs.clear();
    for (uint32_t v : step.node.inputs) ins.push_back(desc[v]);
    for (uint32_t v : step.node.outputs) outs.push_back(desc[v]);
    st = validate_and_launch(stream, step.node.op_id, ins.data(), static_cast<uint32_t>(ins.size()), outs.data(),
                             static_cast<uint32_t>(outs.size()),
                             step.node.attrs.empty() ? nullptr : step.node.attrs.data());
  }
  if (dev.async() && b.api.stream_synchronize) {
    pk_status sync = b.api.stream_synchronize(stream->stream);
    if (st == PK_OK && sync != PK_OK) st = forward_backend_error(b, sync, PK_OP_NONE, "stream failed");
  }
  for (auto &t : temps)
    if (t.data) dev.allocator->release(t.data, t.capacity);
  return st;
}

}  // extern "C"
