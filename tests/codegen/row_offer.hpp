// row_offer.hpp — offers a composite's decomposition (softmax, layer_norm, rms_norm ...) to a backend's fusion
// hook as one subgraph, the way the runtime lays out an offer (external inputs first, then node outputs in node
// order), and launches the claimed kernel on host memory: the row programs tested at the plugin's table, apart
// from the runtime's graph compiler (which offers such windows too).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace pk::test {

// A backend plugin opened outside the runtime: its table, one context and one stream.
struct DirectPlugin {
  pk_host_services host{};
  const pk_backend_api *api = nullptr;
  pk_be_context *ctx = nullptr;
  pk_be_stream *stream = nullptr;
  std::string error;

  explicit DirectPlugin(const char *path) {
    host.struct_size = sizeof host;
    host.host_abi_version = PK_ABI_VERSION;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);  // kept loaded: compiled kernels live in it
    auto entry = lib ? reinterpret_cast<pk_backend_entry_fn>(dlsym(lib, PK_BACKEND_ENTRY_SYMBOL)) : nullptr;
    uint32_t v = 0;
    char msg[256] = {0};
    if (entry == nullptr || entry(&host, &v, &api, msg, sizeof msg) != PK_OK || api->open(&host, &ctx) != PK_OK ||
        api->stream_create(ctx, 0, &stream) != PK_OK) {
      error = lib ? msg : dlerror();
      api = nullptr;
    }
  }
  ~DirectPlugin() {
    if (api && stream) api->stream_destroy(stream);
    if (api && ctx) api->close(ctx);
  }
  DirectPlugin(const DirectPlugin &) = delete;
  DirectPlugin &operator=(const DirectPlugin &) = delete;
};

// The decomposition of `op_name` for the given input types as a pk_subgraph (owning its storage).
struct Offer {
  pk::meta::Decomposition dec;
  std::vector<uint32_t> order;  // subgraph value -> decomposition value
  std::vector<pk_graph_value> values;
  std::vector<std::vector<uint32_t>> ins, outs;
  std::vector<pk_graph_node> nodes;
  pk_subgraph graph{};
  std::vector<uint8_t> claimed;
  pk_fusion_claim claim{};
  std::vector<uint32_t> input_values;  // subgraph values of the composite's inputs
  uint32_t output_value = 0;

  bool build(const char *op_name, const std::vector<pk::meta::TensorType> &types, const void *attrs, std::string &why) {
    const pk::meta::OpInfo *op = pk::meta::find_op(op_name);
    pk::meta::Diag diag;
    if (op == nullptr ||
        !pk::meta::decompose(*op, types.data(), static_cast<uint32_t>(types.size()), attrs, dec, diag)) {
      why = diag.message;
      return false;
    }
    const size_t nv = dec.values.size();
    std::vector<uint32_t> local(nv, UINT32_MAX);
    for (size_t i = 0; i < types.size(); ++i) {
      local[i] = static_cast<uint32_t>(order.size());
      order.push_back(static_cast<uint32_t>(i));
    }
    for (const auto &n : dec.nodes)
      for (int32_t v : n.outputs) {
        local[v] = static_cast<uint32_t>(order.size());
        order.push_back(static_cast<uint32_t>(v));
      }
    for (uint32_t v : order) {
      pk_graph_value gv;
      std::memset(&gv, 0, sizeof gv);
      gv.struct_size = sizeof gv;
      gv.dtype = pk::meta::dtype_desc(dec.values[v].dtype);
      gv.ndim = dec.values[v].ndim;
      std::memcpy(gv.shape, dec.values[v].shape, sizeof gv.shape);
      gv.is_input = v < types.size();
      gv.is_output = static_cast<int32_t>(v) == dec.outputs[0];
      values.push_back(gv);
    }
    for (const auto &n : dec.nodes) {
      ins.emplace_back();
      outs.emplace_back();
      for (int32_t v : n.inputs) ins.back().push_back(local[v]);
      for (int32_t v : n.outputs) outs.back().push_back(local[v]);
    }
    for (size_t i = 0; i < dec.nodes.size(); ++i) {
      pk_graph_node gn;
      std::memset(&gn, 0, sizeof gn);
      gn.struct_size = sizeof gn;
      gn.op_id = dec.nodes[i].op_id;
      gn.attrs = dec.nodes[i].attrs.empty() ? nullptr : dec.nodes[i].attrs.data();
      gn.num_inputs = static_cast<uint32_t>(ins[i].size());
      gn.inputs = ins[i].data();
      gn.num_outputs = static_cast<uint32_t>(outs[i].size());
      gn.outputs = outs[i].data();
      nodes.push_back(gn);
    }
    graph.struct_size = sizeof graph;
    graph.num_values = static_cast<uint32_t>(values.size());
    graph.values = values.data();
    graph.num_nodes = static_cast<uint32_t>(nodes.size());
    graph.nodes = nodes.data();
    claimed.assign(nodes.size(), 0);
    claim.struct_size = sizeof claim;
    claim.num_nodes = graph.num_nodes;
    claim.claimed = claimed.data();
    for (size_t i = 0; i < types.size(); ++i) input_values.push_back(static_cast<uint32_t>(i));
    output_value = local[dec.outputs[0]];
    return true;
  }

  size_t num_claimed() const {
    size_t n = 0;
    for (uint8_t c : claimed) n += c != 0;
    return n;
  }
};

// A dense host tensor descriptor.
inline pk_tensor host_tensor(void *data, pk_dtype dt, int32_t ndim, const int64_t *shape) {
  pk_tensor t;
  std::memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dt;
  t.ndim = ndim;
  t.shape = shape;
  t.device_type = PK_DEVICE_CPU;
  return t;
}

}  // namespace pk::test
