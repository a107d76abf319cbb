// cmd_run_model.cpp — `primkit run-model --backend X --model mlp|transformer [--strict]`: a real workload on
// any backend from day one. The model is a PrimKit graph (pk_graph_*) compiled for the backend's device 0;
// composites the backend lacks are decomposed and primitives it lacks fall back to the CPU backend (unless
// --strict). The output is checked against the oracle (pk::oracle), which evaluates the same nodes one by one
// on host tensors, each result rounded once to f32 as a backend stores it; then the run reports max abs/rel
// error with PASS/FAIL and what ran where, with the bytes the fallback copied.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli_common.hpp"
#include "primkit/op_info.hpp"
#include "primkit/oracle.hpp"
#include "primkit/primkit.h"

namespace pk::cli {
namespace {

// A failure the command reports and exits with (never crosses the C ABI).
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(pk_status status, const std::string &what) {
  if (status != PK_OK) throw RunError(what + ": " + pk_status_name(status) + ": " + last_error_message());
}

// --- handles ----------------------------------------------------------------------------------------------------

struct RuntimeDeleter {
  void operator()(pk_runtime_s *p) const { pk_runtime_destroy(p); }
};
struct GraphDeleter {
  void operator()(pk_graph_s *p) const { pk_graph_destroy(p); }
};
struct ExecutableDeleter {
  void operator()(pk_executable_s *p) const { pk_executable_destroy(p); }
};
struct StreamDeleter {
  void operator()(pk_stream_s *p) const { pk_stream_destroy(p); }
};
struct BufferDeleter {
  void operator()(pk_buffer_s *p) const { pk_buffer_destroy(p); }
};
using RuntimeHandle = std::unique_ptr<pk_runtime_s, RuntimeDeleter>;
using GraphHandle = std::unique_ptr<pk_graph_s, GraphDeleter>;
using ExecutableHandle = std::unique_ptr<pk_executable_s, ExecutableDeleter>;
using StreamHandle = std::unique_ptr<pk_stream_s, StreamDeleter>;
using BufferHandle = std::unique_ptr<pk_buffer_s, BufferDeleter>;

// --- weights --------------------------------------------------------------------------------------------------

// SplitMix64: a fixed, portable stream of numbers, so every machine and standard library builds the same
// weights from the same seed (std:: distributions differ between implementations).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // Uniform in [-bound, bound), from the top 24 bits so every value is exact in f32.
  float uniform(float bound) {
    const double unit = static_cast<double>(next() >> 40) / static_cast<double>(1ull << 24);
    return static_cast<float>((2.0 * unit - 1.0) * bound);
  }

 private:
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

// --- the model: one graph for the runtime, the same nodes kept for the oracle ---------------------------------

struct Node {
  uint32_t op_id;
  std::vector<uint32_t> inputs;
  std::vector<uint8_t> attrs;  // the op's attribute struct as given, empty for none
  uint32_t output;
};

struct Input {
  uint32_t value;
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

class Model {
 public:
  explicit Model(std::string description) : description_(std::move(description)) {
    pk_graph_t graph = nullptr;
    check(pk_graph_create(&graph), "pk_graph_create");
    graph_.reset(graph);
  }

  // A graph input with values; weights are inputs too (the graph API has no constants).
  uint32_t input(std::string name, std::vector<int64_t> shape, std::vector<float> data) {
    uint32_t value = 0;
    check(pk_graph_add_input(graph_.get(), pk_dtype PK_DTYPE_F32_DESC, static_cast<int32_t>(shape.size()), shape.data(),
                             &value),
          "graph input " + name);
    inputs_.push_back(Input{value, std::move(name), std::move(shape), std::move(data)});
    return value;
  }

  // A tensor of `shape` uniform in [-bound, bound), plus `center` (1 for layer-norm gains).
  uint32_t random_input(std::string name, std::vector<int64_t> shape, Rng &rng, float bound, float center = 0) {
    int64_t n = 1;
    for (int64_t extent : shape) n *= extent;
    std::vector<float> data(static_cast<size_t>(n));
    for (float &v : data) v = center + rng.uniform(bound);
    return input(std::move(name), std::move(shape), std::move(data));
  }

  uint32_t op(uint32_t op_id, std::vector<uint32_t> inputs) { return add_node(op_id, std::move(inputs), nullptr, 0); }

  template <class Attrs>
  uint32_t op(uint32_t op_id, std::vector<uint32_t> inputs, const Attrs &attrs) {
    return add_node(op_id, std::move(inputs), &attrs, sizeof attrs);
  }

  std::vector<int64_t> shape_of(uint32_t value) const {
    int32_t ndim = 0;
    int64_t shape[PK_MAX_RANK] = {0};
    check(pk_graph_value_info(graph_.get(), value, nullptr, &ndim, shape), "pk_graph_value_info");
    return std::vector<int64_t>(shape, shape + ndim);
  }

  pk_dtype dtype_of(uint32_t value) const {
    pk_dtype dtype{};
    check(pk_graph_value_info(graph_.get(), value, &dtype, nullptr, nullptr), "pk_graph_value_info");
    return dtype;
  }

  void mark_output(uint32_t value) {
    check(pk_graph_mark_output(graph_.get(), value), "pk_graph_mark_output");
    output_ = value;
  }

  pk_graph_t graph() const { return graph_.get(); }
  const std::vector<Node> &nodes() const { return nodes_; }
  const std::vector<Input> &inputs() const { return inputs_; }
  uint32_t output() const { return output_; }
  const std::string &description() const { return description_; }

 private:
  uint32_t add_node(uint32_t op_id, std::vector<uint32_t> inputs, const void *attrs, size_t attrs_size) {
    uint32_t out = 0;
    check(pk_graph_add_node(graph_.get(), op_id, inputs.data(), static_cast<uint32_t>(inputs.size()), attrs, &out, 1),
          std::string("graph node ") + pk::meta::op_name(op_id));
    const auto *bytes = static_cast<const uint8_t *>(attrs);
    nodes_.push_back(Node{op_id, std::move(inputs), std::vector<uint8_t>(bytes, bytes + attrs_size), out});
    return out;
  }

  std::string description_;
  GraphHandle graph_;
  std::vector<Node> nodes_;
  std::vector<Input> inputs_;
  uint32_t output_ = 0;
};

pk_attrs_broadcast_in_dim broadcast_attrs(const std::vector<int64_t> &shape, std::vector<int64_t> dims) {
  pk_attrs_broadcast_in_dim a = PK_ATTRS_BROADCAST_IN_DIM_INIT;
  a.num_shape = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) a.shape[i] = shape[i];
  a.num_broadcast_dimensions = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) a.broadcast_dimensions[i] = dims[i];
  return a;
}

pk_attrs_reshape reshape_attrs(const std::vector<int64_t> &shape) {
  pk_attrs_reshape a = PK_ATTRS_RESHAPE_INIT;
  a.num_shape = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) a.shape[i] = shape[i];
  return a;
}

pk_attrs_transpose transpose_attrs(const std::vector<int64_t> &permutation) {
  pk_attrs_transpose a = PK_ATTRS_TRANSPOSE_INIT;
  a.num_permutation = static_cast<int32_t>(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i) a.permutation[i] = permutation[i];
  return a;
}

// x [M, K] · w [K, N] + b [N]: matmul, then the bias broadcast along rows and added — the primitives a vendor
// implements first.
uint32_t dense(Model &m, uint32_t x, uint32_t w, uint32_t b) {
  const uint32_t y = m.op(PK_OP_MATMUL, {x, w});
  const uint32_t bias = m.op(PK_OP_BROADCAST_IN_DIM, {b}, broadcast_attrs(m.shape_of(y), {1}));
  return m.op(PK_OP_ADD, {y, bias});
}

// A 2-layer MLP: x [8, 32] → dense 64 → relu → dense 16.
Model build_mlp(uint64_t seed) {
  constexpr int64_t kBatch = 8, kIn = 32, kHidden = 64, kOut = 16;
  Model m("2-layer MLP: x f32[8,32] -> matmul+bias 64 -> relu -> matmul+bias 16");
  Rng rng(seed);
  const uint32_t x = m.random_input("x", {kBatch, kIn}, rng, 1.0f);
  // Weights scaled by 1/sqrt(fan_in) keep activations near unit size, as trained nets have them.
  const uint32_t w1 = m.random_input("w1", {kIn, kHidden}, rng, 1.0f / std::sqrt(static_cast<float>(kIn)));
  const uint32_t b1 = m.random_input("b1", {kHidden}, rng, 0.1f);
  const uint32_t w2 = m.random_input("w2", {kHidden, kOut}, rng, 1.0f / std::sqrt(static_cast<float>(kHidden)));
  const uint32_t b2 = m.random_input("b2", {kOut}, rng, 0.1f);
  const uint32_t hidden = m.op(PK_OP_RELU, {dense(m, x, w1, b1)});
  m.mark_output(dense(m, hidden, w2, b2));
  return m;
}

pk_attrs_full full_attrs(const std::vector<int64_t> &shape, double value, int32_t dtype) {
  pk_attrs_full a = PK_ATTRS_FULL_INIT;
  a.num_shape = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) a.shape[i] = shape[i];
  a.value = value;
  a.dtype = dtype;
  return a;
}

// One pre-norm transformer block over a sequence x [L, D] (batch 1): x + attention(layer_norm(x)), then
// + mlp(layer_norm(.)) with a gelu MLP. Attention is written with its pieces — per-head batch_matmul, the causal
// mask from iota/ge/where, softmax — because those are what a vendor implements (and what the
// scaled_dot_product_attention composite decomposes into); layer_norm, softmax and gelu are composites that run
// natively where the backend has them and as their decompositions otherwise.
Model build_transformer(uint64_t seed) {
  constexpr int64_t kSeq = 8, kModel = 32, kHeads = 4, kHeadDim = kModel / kHeads, kFf = 4 * kModel;
  Model m("transformer block: x f32[8,32], layer_norm, 4-head causal attention, layer_norm, dense-gelu-dense");
  Rng rng(seed);
  const float model_scale = 1.0f / std::sqrt(static_cast<float>(kModel));
  const uint32_t x = m.random_input("x", {kSeq, kModel}, rng, 1.0f);
  const uint32_t ln1_w = m.random_input("ln1.weight", {kModel}, rng, 0.1f, 1.0f);
  const uint32_t ln1_b = m.random_input("ln1.bias", {kModel}, rng, 0.1f);
  uint32_t proj_w[4], proj_b[4];
  const char *proj_names[4] = {"attn.q", "attn.k", "attn.v", "attn.out"};
  for (int i = 0; i < 4; ++i) {
    proj_w[i] = m.random_input(std::string(proj_names[i]) + ".weight", {kModel, kModel}, rng, model_scale);
    proj_b[i] = m.random_input(std::string(proj_names[i]) + ".bias", {kModel}, rng, 0.1f);
  }
  const uint32_t ln2_w = m.random_input("ln2.weight", {kModel}, rng, 0.1f, 1.0f);
  const uint32_t ln2_b = m.random_input("ln2.bias", {kModel}, rng, 0.1f);
  const uint32_t fc_w = m.random_input("mlp.fc.weight", {kModel, kFf}, rng, model_scale);
  const uint32_t fc_b = m.random_input("mlp.fc.bias", {kFf}, rng, 0.1f);
  const uint32_t out_w =
      m.random_input("mlp.proj.weight", {kFf, kModel}, rng, 1.0f / std::sqrt(static_cast<float>(kFf)));
  const uint32_t out_b = m.random_input("mlp.proj.bias", {kModel}, rng, 0.1f);

  const pk_attrs_layer_norm ln = PK_ATTRS_LAYER_NORM_INIT;  // over the last axis, eps 1e-5
  const uint32_t h = m.op(PK_OP_LAYER_NORM, {x, ln1_w, ln1_b}, ln);
  // [L, D] -> [L, H, Dh] -> `permutation` ([H, L, Dh] for queries and values, [H, Dh, L] for keys)
  auto heads = [&](uint32_t v, std::vector<int64_t> permutation) {
    const uint32_t r = m.op(PK_OP_RESHAPE, {v}, reshape_attrs({kSeq, kHeads, kHeadDim}));
    return m.op(PK_OP_TRANSPOSE, {r}, transpose_attrs(permutation));
  };
  const uint32_t q = heads(dense(m, h, proj_w[0], proj_b[0]), {1, 0, 2});
  const uint32_t k_t = heads(dense(m, h, proj_w[1], proj_b[1]), {1, 2, 0});
  const uint32_t v = heads(dense(m, h, proj_w[2], proj_b[2]), {1, 0, 2});
  const std::vector<int64_t> scores_shape = {kHeads, kSeq, kSeq};
  const uint32_t scores = m.op(
      PK_OP_MUL,
      {m.op(PK_OP_BATCH_MATMUL, {q, k_t}),
       m.op(PK_OP_FULL, {}, full_attrs(scores_shape, 1.0 / std::sqrt(static_cast<double>(kHeadDim)), PK_DTYPE_F32))});
  // Causal mask: query i sees key j iff j <= i.
  pk_attrs_iota positions = PK_ATTRS_IOTA_INIT;
  positions.length = kSeq;
  positions.dtype = PK_DTYPE_I64;
  const uint32_t index = m.op(PK_OP_IOTA, {}, positions);
  const uint32_t rows = m.op(PK_OP_BROADCAST_IN_DIM, {index}, broadcast_attrs({kSeq, kSeq}, {0}));
  const uint32_t cols = m.op(PK_OP_BROADCAST_IN_DIM, {index}, broadcast_attrs({kSeq, kSeq}, {1}));
  const uint32_t visible =
      m.op(PK_OP_BROADCAST_IN_DIM, {m.op(PK_OP_GE, {rows, cols})}, broadcast_attrs(scores_shape, {1, 2}));
  const uint32_t masked =
      m.op(PK_OP_WHERE, {visible, scores, m.op(PK_OP_FULL, {}, full_attrs(scores_shape, -INFINITY, PK_DTYPE_F32))});
  pk_attrs_softmax over_keys = PK_ATTRS_SOFTMAX_INIT;
  over_keys.dim = 2;
  const uint32_t context = m.op(PK_OP_BATCH_MATMUL, {m.op(PK_OP_SOFTMAX, {masked}, over_keys), v});
  // [H, L, Dh] -> [L, H, Dh] -> [L, D]
  const uint32_t merged = m.op(PK_OP_RESHAPE, {m.op(PK_OP_TRANSPOSE, {context}, transpose_attrs({1, 0, 2}))},
                               reshape_attrs({kSeq, kModel}));
  const uint32_t x1 = m.op(PK_OP_ADD, {x, dense(m, merged, proj_w[3], proj_b[3])});
  const uint32_t h2 = m.op(PK_OP_LAYER_NORM, {x1, ln2_w, ln2_b}, ln);
  const uint32_t ff = m.op(PK_OP_GELU, {dense(m, h2, fc_w, fc_b)});
  m.mark_output(m.op(PK_OP_ADD, {x1, dense(m, ff, out_w, out_b)}));
  return m;
}

// --- the oracle's answer --------------------------------------------------------------------------------------

pk::oracle::HostTensor oracle_eval(uint32_t op_id, const std::vector<pk::oracle::HostTensor> &args,
                                   const std::vector<uint8_t> &attrs) {
  std::vector<pk::oracle::OutputValue> outs;
  const pk::oracle::Result r = pk::oracle::evaluate(op_id, args, attrs.empty() ? nullptr : attrs.data(), outs);
  if (!r.ok()) throw RunError(std::string("the oracle cannot evaluate ") + pk::meta::op_name(op_id) + ": " + r.message);
  return pk::oracle::HostTensor::contiguous(outs[0].dtype, outs[0].shape, outs[0].rounded);
}

// Evaluates the model node by node in wide precision, rounding each node's result once to f32 (as a backend
// stores every intermediate); returns the output's values.
std::vector<double> oracle_output(const Model &m) {
  std::vector<pk::oracle::HostTensor> values(m.output() + 1);
  auto ensure = [&](uint32_t v) {
    if (v >= values.size()) values.resize(v + 1);
  };
  for (const Input &in : m.inputs()) {
    ensure(in.value);
    values[in.value] = pk::oracle::HostTensor::from_values(PK_DTYPE_F32, in.shape,
                                                           std::vector<long double>(in.data.begin(), in.data.end()));
  }
  for (const Node &node : m.nodes()) {
    std::vector<pk::oracle::HostTensor> args;
    for (uint32_t v : node.inputs) args.push_back(values.at(v));
    ensure(node.output);
    values[node.output] = oracle_eval(node.op_id, args, node.attrs);
  }
  const pk::oracle::HostTensor &out = values.at(m.output());
  std::vector<double> result(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i) result[static_cast<size_t>(i)] = static_cast<double>(out.at(i).re);
  return result;
}

// --- running on the backend -------------------------------------------------------------------------------------

struct DeviceTensor {
  BufferHandle buffer;
  std::vector<int64_t> shape;  // outlives the descriptor that points to it
  pk_tensor desc{};
};

DeviceTensor device_tensor(pk_device_t device, std::vector<int64_t> shape) {
  DeviceTensor t;
  t.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t extent : t.shape) n *= extent;
  pk_buffer_t buffer = nullptr;
  check(pk_buffer_create(device, static_cast<uint64_t>(n) * sizeof(float), &buffer), "pk_buffer_create");
  t.buffer.reset(buffer);
  PK_STRUCT_INIT(t.desc);
  check(pk_buffer_tensor(buffer, pk_dtype PK_DTYPE_F32_DESC, static_cast<int32_t>(t.shape.size()), t.shape.data(),
                         nullptr, 0, &t.desc),
        "pk_buffer_tensor");
  return t;
}

struct RunResult {
  std::vector<float> output;
  uint32_t fused_kernels = 0, fused_nodes = 0, single_nodes = 0;
  double milliseconds = 0;
};

RunResult run_on_device(const Model &m, pk_device_t device) {
  RunResult result;
  pk_executable_t exe_raw = nullptr;
  check(pk_graph_compile(m.graph(), device, nullptr, &exe_raw), "pk_graph_compile");
  ExecutableHandle exe(exe_raw);
  check(pk_executable_stats(exe.get(), &result.fused_kernels, &result.fused_nodes, &result.single_nodes),
        "pk_executable_stats");
  pk_stream_t stream_raw = nullptr;
  check(pk_stream_create(device, &stream_raw), "pk_stream_create");
  StreamHandle stream(stream_raw);

  std::vector<DeviceTensor> inputs;
  std::vector<pk_tensor> input_descs;
  for (const Input &in : m.inputs()) {
    inputs.push_back(device_tensor(device, in.shape));
    check(pk_copy_host_to_buffer(stream.get(), inputs.back().buffer.get(), 0, in.data.data(),
                                 in.data.size() * sizeof(float)),
          "copy " + in.name + " to the device");
  }
  for (const DeviceTensor &t : inputs) input_descs.push_back(t.desc);
  DeviceTensor output = device_tensor(device, m.shape_of(m.output()));
  check(pk_stream_synchronize(stream.get()), "upload");

  const auto start = std::chrono::steady_clock::now();
  check(pk_executable_run(exe.get(), stream.get(), input_descs.data(), static_cast<uint32_t>(input_descs.size()),
                          &output.desc, 1),
        "pk_executable_run");
  check(pk_stream_synchronize(stream.get()), "pk_stream_synchronize");
  result.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  int64_t n = 1;
  for (int64_t extent : output.shape) n *= extent;
  result.output.assign(static_cast<size_t>(n), 0.0f);
  check(pk_copy_buffer_to_host(stream.get(), result.output.data(), output.buffer.get(), 0,
                               result.output.size() * sizeof(float)),
        "copy the output to the host");
  check(pk_stream_synchronize(stream.get()), "download");
  return result;
}

// --- reports ------------------------------------------------------------------------------------------------------

std::string shape_text(const std::vector<int64_t> &shape) {
  std::string s = "f32[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// Where each op of the model runs: the backend's own kernel (capability query with the node's shapes), its
// decomposition (composites), or the fallback backend (primitives the backend declines).
void print_placement(const Model &m, pk_device_t device, const char *backend_name, const char *fallback_name) {
  std::printf("placement (capability query of %s for each node of the model):\n", backend_name);
  std::vector<uint32_t> seen;
  for (const Node &node : m.nodes()) {
    bool repeated = false;
    for (uint32_t id : seen) repeated = repeated || id == node.op_id;
    if (repeated) continue;
    seen.push_back(node.op_id);
    std::vector<uint32_t> operands = node.inputs;
    operands.push_back(node.output);
    std::vector<std::vector<int64_t>> shapes;
    for (uint32_t v : operands) shapes.push_back(m.shape_of(v));
    std::vector<pk_tensor> tensors(shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
      PK_STRUCT_INIT(tensors[i]);
      tensors[i].dtype = m.dtype_of(operands[i]);
      tensors[i].ndim = static_cast<int32_t>(shapes[i].size());
      tensors[i].shape = shapes[i].data();
    }
    pk_op_query query;
    PK_STRUCT_INIT(query);
    query.op_id = node.op_id;
    query.num_inputs = static_cast<uint32_t>(node.inputs.size());
    query.inputs = tensors.data();
    query.num_outputs = 1;
    query.outputs = tensors.data() + node.inputs.size();
    query.attrs = node.attrs.empty() ? nullptr : node.attrs.data();
    pk_op_support support;
    PK_STRUCT_INIT(support);
    const bool native = pk_device_query_op(device, &query, &support) == PK_OK && support.supported;
    const pk::meta::OpInfo *op = pk::meta::find_op(node.op_id);
    const bool composite = op != nullptr && op->tier == pk::meta::Tier::composite;
    std::printf("  %-30s %s\n", pk::meta::op_name(node.op_id),
                native      ? (std::string("native on ") + backend_name).c_str()
                : composite ? (std::string("decomposed into primitives (") + support.reason + ")").c_str()
                            : (std::string("fallback to ") + fallback_name + " (" + support.reason + ")").c_str());
  }
}

void print_fallback(pk_runtime_t rt, const char *backend_name, const char *fallback_name, bool completed) {
  uint64_t total_launches = 0, total_bytes = 0, ops = 0;
  for (const pk::meta::OpInfo *op = pk::meta::ops_begin(); op != pk::meta::ops_end(); ++op) {
    uint64_t launches = 0, bytes = 0;
    if (pk_runtime_fallback_count(rt, op->id, &launches, &bytes) != PK_OK || launches == 0) continue;
    ++ops;
    total_launches += launches;
    total_bytes += bytes;
  }
  if (ops == 0) {
    std::printf("fallback: none%s\n",
                completed ? (std::string(" — every launch ran on ") + backend_name).c_str() : " before the failure");
    return;
  }
  std::printf("fallback: %llu ops ran on %s instead of %s: %llu launches, %llu bytes copied\n",
              static_cast<unsigned long long>(ops), fallback_name, backend_name,
              static_cast<unsigned long long>(total_launches), static_cast<unsigned long long>(total_bytes));
  const char *report = pk_runtime_fallback_report(rt);
  // One line per op from the runtime, indented under the summary.
  for (const char *line = report; line && *line;) {
    const char *end = std::strchr(line, '\n');
    const size_t length = end ? static_cast<size_t>(end - line) : std::strlen(line);
    std::printf("  %.*s\n", static_cast<int>(length), line);
    line = end ? end + 1 : line + length;
  }
}

struct Comparison {
  double max_abs = 0, max_rel = 0, max_ref = 0;
  int64_t worst = -1;
  bool pass = true;
};

// The output passes if every element is within kAbsTolerance + kRelTolerance * |oracle|. f32 kernels that round
// each op once land far inside (the cpu backend: 6e-8 absolute on mlp, 2.4e-7 on transformer, outputs of size
// ~1), while a wrong kernel, mask or fallback copy misses by far more than 1e-4 relative.
constexpr double kRelTolerance = 1e-4;
constexpr double kAbsTolerance = 1e-5;
// Relative errors are taken against max(|oracle|, kRelFloor), so values that happen to be near 0 do not turn a
// tiny absolute error into a huge relative one.
constexpr double kRelFloor = 1e-3;

Comparison compare(const std::vector<float> &got, const std::vector<double> &want) {
  Comparison c;
  for (size_t i = 0; i < want.size(); ++i) {
    const double ref = want[i];
    const double err = std::fabs(static_cast<double>(got[i]) - ref);
    const bool ok = err <= kAbsTolerance + kRelTolerance * std::fabs(ref);  // false for NaN too
    c.pass = c.pass && ok;
    c.max_ref = std::max(c.max_ref, std::fabs(ref));
    if (!(err <= c.max_abs)) {
      c.max_abs = err;
      c.worst = static_cast<int64_t>(i);
    }
    c.max_rel = std::max(c.max_rel, err / std::max(std::fabs(ref), kRelFloor));
  }
  return c;
}

struct RunModelArgs {
  std::string backend;
  std::string model;
  bool strict = false;
  uint64_t seed = 2026;
};

int run_model(const RunModelArgs &args) {
  const std::string &backend_arg = args.backend, &model_name = args.model;
  const bool strict = args.strict;
  const uint64_t seed = args.seed;
  RuntimeHandle rt(open_runtime(strict ? PK_RUNTIME_STRICT : 0));
  pk_backend_t backend = resolve_backend(rt.get(), backend_arg);
  if (backend == nullptr) return 1;
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  pk_backend_get_info(backend, &info);
  uint32_t devices = 0;
  pk_backend_device_count(backend, &devices);
  if (devices == 0) {
    std::fprintf(stderr, "primkit run-model: backend '%s' has no devices: %s\n", info.name,
                 last_error_message().c_str());
    return 1;
  }
  pk_device_t device = nullptr;
  pk_backend_device(backend, 0, &device);
  pk_device_props props;
  PK_STRUCT_INIT(props);
  pk_device_get_props(device, &props);
  const char *fallback_name = "cpu";
  pk_backend_t fallback = nullptr;
  const bool have_fallback = pk_runtime_find_backend(rt.get(), fallback_name, &fallback) == PK_OK;

  try {
    const Model model = model_name == "mlp" ? build_mlp(seed) : build_transformer(seed);
    std::printf("model %s: %s; %zu nodes, weights from seed %llu\n", model_name.c_str(), model.description().c_str(),
                model.nodes().size(), static_cast<unsigned long long>(seed));
    std::printf("backend %s %u.%u.%u (%s), device 0: %s%s\n", info.name, info.version_major, info.version_minor,
                info.version_patch, pk_backend_path(backend), props.name, strict ? ", strict: no fallback" : "");
    if (!strict && !have_fallback && std::strcmp(info.name, fallback_name) != 0) {
      std::printf("note: no '%s' backend is loaded, so nothing can fall back\n", fallback_name);
    }
    print_placement(model, device, info.name, fallback_name);
    // The reference first: an oracle gap is reported as such, not hidden behind a failed run.
    const std::vector<double> want = oracle_output(model);
    pk_runtime_reset_fallback_counters(rt.get());
    RunResult run;
    try {
      run = run_on_device(model, device);
    } catch (const RunError &e) {
      std::printf("run: FAILED: %s\n", e.what());
      print_fallback(rt.get(), info.name, fallback_name, false);
      return 1;
    }
    std::printf("compiled: %u single launches, %u fused kernels covering %u nodes; ran in %.2f ms\n", run.single_nodes,
                run.fused_kernels, run.fused_nodes, run.milliseconds);
    print_fallback(rt.get(), info.name, fallback_name, true);
    const Comparison c = compare(run.output, want);
    std::printf("output %s vs oracle: max abs error %.3g, max rel error %.3g (|ref| floor %g), max |ref| %.3g\n",
                shape_text(model.shape_of(model.output())).c_str(), c.max_abs, c.max_rel, kRelFloor, c.max_ref);
    if (c.worst >= 0) {
      std::printf("  worst element %lld: got %.9g, oracle %.9g\n", static_cast<long long>(c.worst),
                  static_cast<double>(run.output[static_cast<size_t>(c.worst)]), want[static_cast<size_t>(c.worst)]);
    }
    std::printf("%s (tolerance per element: %g + %g * |oracle|)\n", c.pass ? "PASS" : "FAIL", kAbsTolerance,
                kRelTolerance);
    return c.pass ? 0 : 1;
  } catch (const RunError &e) {
    std::fprintf(stderr, "primkit run-model: %s\n", e.what());
    return 1;
  }
}

}  // namespace

Subcommand add_run_model_command(CLI::App &app) {
  auto args = std::make_shared<RunModelArgs>();
  CLI::App *cmd = app.add_subcommand("run-model", "Run a model graph (fallback to cpu) and compare it with the oracle");
  cmd->add_option("--backend", args->backend, "A discovered backend's name or a plugin file; device 0 runs it")
      ->required()
      ->type_name("BACKEND");
  cmd->add_option("--model", args->model,
                  "mlp: x f32[8,32] -> matmul+bias -> relu -> matmul+bias -> f32[8,16]; transformer: one pre-norm "
                  "block, f32[8,32]: layer_norm, 4-head causal attention, gelu MLP")
      ->required()
      ->check(CLI::IsMember({"mlp", "transformer"}).description(""))
      ->type_name("mlp|transformer");
  cmd->add_flag("--strict", args->strict, "Ops the backend declines are an error instead of falling back to cpu");
  cmd->add_option("--seed", args->seed, "Seed of the weights and inputs (default 2026)")
      ->check(seed_validator())
      ->type_name("N");
  cmd->footer(
      "Ops the backend declines fall back to the cpu backend, composites it lacks run as their decompositions.\n"
      "The output is compared with the oracle; exit 0 = PASS, 1 = FAIL or error, 2 = usage.");
  return {cmd, [args] { return run_model(*args); }};
}

}  // namespace pk::cli
