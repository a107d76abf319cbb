// graph.cpp — graphs of ops: construction with shape inference, and the pk_graph_compile / pk_executable_* entry
// points over the executor (executor.hpp: lowering, fusion planning in planner.cpp, the arena, running).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "executor.hpp"
#include "launch_memo.hpp"
#include "runtime_internal.hpp"

using namespace pk::rt;
using pk::meta::Diag;
using pk::meta::OpInfo;
using pk::meta::TensorType;

namespace {

using GraphNode = pk::rt::ProgramNode;

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

}  // namespace

struct pk_graph_s {
  std::vector<TensorType> values;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<GraphNode> nodes;
};

// A compiled graph: its Program, and a serial that names it in the validation memo (never reused).
struct pk_executable_s {
  explicit pk_executable_s(Device &device) : program(device) {}
  Program program;
  uint64_t serial = pk::rt::next_generation();
};

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
    const uint32_t v = in ? exe.program.inputs[k] : exe.program.outputs[k - num_inputs];
    if (!same_type(types[k], exe.program.values[v])) {
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, static_cast<int32_t>(k), 0,
                       "%s: %s %u is %s but the graph declares %s", kEntry, in ? "input" : "output",
                       in ? k : k - num_inputs, shape_text(types[k]).c_str(),
                       shape_text(exe.program.values[v]).c_str());
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
  pk::meta::canonicalize_attrs(*op, types.data(), num_inputs, normalized);
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
  HostPtr<pk_executable_s> exe = runtime_of(*device).make<pk_executable_s>(*device);
  if (exe == nullptr) return host_out_of_memory(__func__, "an executable", sizeof(pk_executable_s));
  LogScope scope(runtime_of(*device).log);  // a backend may log why it declines a fused region
  Program &prog = exe->program;
  prog.values = g->values;
  prog.inputs = g->inputs;
  prog.outputs = g->outputs;
  if (pk_status st = build_program(prog, g->nodes, fusion, false)) return st;
  {
    std::unique_lock<std::shared_mutex> lock(device->objects_mu);  // freed by pk_runtime_destroy if not before
    device->executables.insert(exe.get());
  }
  *out = exe.release();
  return PK_OK;
}

void pk_executable_destroy(pk_executable_t exe) {
  if (exe == nullptr) return;
  HostPtr<pk_executable_s> owned = runtime_of(*exe->program.device).adopt(exe);
  std::unique_lock<std::shared_mutex> lock(exe->program.device->objects_mu);
  exe->program.device->executables.erase(exe);
}

pk_status pk_executable_stats(pk_executable_t exe, uint32_t *fused_kernels, uint32_t *fused_nodes,
                              uint32_t *single_nodes) {
  if (exe == nullptr)
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_executable_stats: NULL executable");
  if (fused_kernels) *fused_kernels = exe->program.fused_kernels;
  if (fused_nodes) *fused_nodes = exe->program.fused_nodes;
  if (single_nodes) *single_nodes = exe->program.single_nodes;
  return PK_OK;
}

pk_status pk_executable_memory(pk_executable_t exe, uint64_t *arena_bytes, uint64_t *unshared_bytes) {
  if (exe == nullptr)
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_executable_memory: NULL executable");
  if (arena_bytes) *arena_bytes = exe->program.arena_bytes;
  if (unshared_bytes) *unshared_bytes = exe->program.temporary_bytes;
  return PK_OK;
}

pk_status pk_executable_run(pk_executable_t exe, pk_stream_t stream, const pk_tensor *inputs, uint32_t num_inputs,
                            const pk_tensor *outputs, uint32_t num_outputs) {
  if (exe == nullptr || stream == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_executable_run: NULL executable or stream");
  }
  if (stream->device != exe->program.device) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_executable_run: the stream is on another device than the executable was compiled for");
  }
  if (num_inputs != exe->program.inputs.size() || num_outputs != exe->program.outputs.size() ||
      (num_inputs && !inputs) || (num_outputs && !outputs)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_executable_run: the graph takes %zu inputs and %zu outputs, got %u and %u",
                     exe->program.inputs.size(), exe->program.outputs.size(), num_inputs, num_outputs);
  }
  Device &dev = *exe->program.device;
  if (pk_status st = check_run_tensors(*exe, dev, inputs, num_inputs, outputs, num_outputs)) return st;
  return run_program(exe->program, stream, inputs, outputs);
}

}  // extern "C"
