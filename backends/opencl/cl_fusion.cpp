// cl_fusion.cpp — the OpenCL backend's fusion hook: claims chains of elementwise nodes of one shape, compiles
// each into one generated kernel (cl_codegen's gen_elementwise) at offer time, and launches it.
#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cl_backend.hpp"
#include "cl_codegen.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

using kit::fail;

// --- fusion -----------------------------------------------------------------------------------------------------

// Claims the longest prefix (in the offered topological order) of elementwise nodes this backend generates, all of
// the first node's output shape: a prefix of a topological order is always convex. Fewer than two nodes: decline.
pk_status ocl_fusion_offer(pk_be_context *ctx, uint32_t device, const pk_subgraph *graph, pk_fusion_claim *claim,
                           pk_be_kernel **out) {
  if (graph == nullptr || claim == nullptr || out == nullptr || device >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: fusion_offer: bad arguments");
  }
  *out = nullptr;
  DeviceState &dev = *ctx->devices[device];
  try {
    auto k = std::make_unique<pk_be_kernel>();
    k->dev = &dev;
    EwGraph &g = k->graph;
    for (uint32_t v = 0; v < graph->num_values; ++v) g.dtypes.push_back(kit::dtype_id(graph->values[v].dtype));
    uint32_t claimed = 0;
    const pk_graph_value *shape0 = nullptr;
    for (uint32_t i = 0; i < graph->num_nodes && i < claim->num_nodes; ++i) {
      const pk_graph_node &n = graph->nodes[i];
      const pk::meta::OpInfo *op = pk::meta::find_op(n.op_id);
      if (op == nullptr || !is_ew_op(*op) || n.num_outputs != 1 || n.num_inputs > 3 || n.num_inputs == 0) break;
      const pk_graph_value &ov = graph->values[n.outputs[0]];
      if (shape0 && (ov.ndim != shape0->ndim || !std::equal(ov.shape, ov.shape + ov.ndim, shape0->shape))) break;
      EwNode node;
      node.op_id = n.op_id;
      node.num_inputs = n.num_inputs;
      int32_t in_dt[3] = {-1, -1, -1};
      bool shapes_ok = true;
      for (uint32_t j = 0; j < n.num_inputs; ++j) {
        node.inputs[j] = static_cast<int32_t>(n.inputs[j]);
        in_dt[j] = g.dtypes[n.inputs[j]];
        const pk_graph_value &iv = graph->values[n.inputs[j]];
        shapes_ok = shapes_ok && iv.ndim == ov.ndim && std::equal(iv.shape, iv.shape + iv.ndim, ov.shape);
      }
      node.output = static_cast<int32_t>(n.outputs[0]);
      const int32_t out_dt = g.dtypes[n.outputs[0]];
      if (n.op_id == PK_OP_CONVERT_ELEMENT_TYPE) node.variant = static_cast<uint32_t>(out_dt);
      if (n.op_id == PK_OP_ROUND && n.attrs)
        node.variant = static_cast<uint32_t>(static_cast<const pk_attrs_round *>(n.attrs)->mode);
      if (n.op_id == PK_OP_FILL) {
        if (n.attrs == nullptr) break;
        node.const_bits = value_bits(static_cast<const pk_attrs_fill *>(n.attrs)->value, out_dt);
      }
      if (!shapes_ok || !ew_op_supported(n.op_id, in_dt, n.num_inputs, out_dt, node.variant, dev.caps, nullptr)) break;
      g.nodes.push_back(node);
      shape0 = &ov;
      ++claimed;
    }
    if (claimed < 2) return PK_OK;
    // Arguments in pk_fusion_claim order: values read but not produced by the claim, then produced values read
    // after it or leaving the subgraph; both ascending.
    std::vector<bool> produced(graph->num_values, false), read(graph->num_values, false),
        read_after(graph->num_values, false);
    for (uint32_t i = 0; i < graph->num_nodes; ++i) {
      const pk_graph_node &n = graph->nodes[i];
      for (uint32_t j = 0; j < n.num_inputs; ++j) (i < claimed ? read : read_after)[n.inputs[j]] = true;
      if (i < claimed) produced[n.outputs[0]] = true;
    }
    for (uint32_t v = 0; v < graph->num_values; ++v)
      if (read[v] && !produced[v]) g.args.push_back(static_cast<int32_t>(v));
    g.num_in_args = static_cast<uint32_t>(g.args.size());
    for (uint32_t v = 0; v < graph->num_values; ++v)
      if (produced[v] && (read_after[v] || graph->values[v].is_output)) g.args.push_back(static_cast<int32_t>(v));
    if (g.args.size() > 16 || g.args.size() == g.num_in_args) return PK_OK;
    k->ndim = shape0->ndim;
    std::copy(shape0->shape, shape0->shape + shape0->ndim, k->shape);
    for (int32_t d = 0; d < k->ndim; ++d) k->numel *= static_cast<uint64_t>(k->shape[d]);
    bool vector = false;
    uint32_t w = 1;
    const std::string source = gen_elementwise(g, dev.caps, &vector, &w);
    if (pk_status st = make_kernel_set(dev, source, kElementwiseKernels, vector ? 4 : 2, 0, k->kernels)) {
      // A region that fails to build is declined (the nodes then run one by one), but said in the log.
      log_line(ctx, 1, std::string("opencl: fused region declined: ") + kit::last_error().message);
      (void)st;
      return PK_OK;
    }
    k->kernels->vector = vector;
    k->kernels->vec_elems = w;
    for (uint32_t i = 0; i < claimed; ++i) claim->claimed[i] = 1;
    *out = k.release();
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: fusion_offer: out of host memory");
  }
  return PK_OK;
}

pk_status ocl_kernel_launch(pk_be_stream *s, pk_be_kernel *k, const pk_tensor *args, uint32_t num_args) {
  if (pk_status st = sticky_check(s)) return st;
  if (k == nullptr || num_args != k->graph.args.size() || (num_args && args == nullptr)) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: kernel_launch: expected %zu arguments, got %u",
                k ? k->graph.args.size() : size_t{0}, num_args);
  }
  const pk_tensor *ts[16];
  for (uint32_t i = 0; i < num_args; ++i) {
    if (!aligned_offset(args[i])) {
      return fail(PK_ERROR_INVALID_ARGUMENT, 0, static_cast<int32_t>(i),
                  "opencl: kernel_launch: argument %u has a byte_offset that is not a multiple of its element size", i);
    }
    ts[i] = &args[i];
  }
  return run_elementwise(s, *k->kernels, ts, num_args, k->numel, k->ndim, k->shape, 0);
}

pk_status ocl_kernel_destroy(pk_be_context *, pk_be_kernel *k) {
  std::unique_ptr<pk_be_kernel> owned(k);
  return PK_OK;
}

}  // namespace pk::ocl
