// executor.cpp — the runtime's one executor (executor.hpp): building a Program (composites lowered, dead nodes
// dropped, steps planned, temporaries laid out by liveness), running it, and the cache of composite programs.
#include "executor.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

using pk::meta::Diag;
using pk::meta::OpInfo;
using pk::meta::TensorType;

namespace pk::rt {
namespace {

uint64_t bytes_of(const TensorType &t) {
  return static_cast<uint64_t>(pk::meta::numel(t)) * pk::meta::dtype_size(t.dtype);
}

// True when the backend runs composite `node` itself (its op_query says so for these types and attributes).
bool backend_runs_natively(const Program &prog, const ProgramNode &node) {
  const Device &device = *prog.device;
  const Backend &b = *device.backend;
  if (!b.api.op_query) return false;
  std::vector<pk_tensor> qin(node.inputs.size()), qout(node.outputs.size());
  auto fill = [&](pk_tensor &t, uint32_t v) {
    PK_STRUCT_INIT(t);
    const TensorType &tt = prog.values[v];
    t.dtype = pk::meta::dtype_desc(tt.dtype);
    t.ndim = tt.ndim;
    t.shape = prog.values[v].shape;
    t.device_type = device.props.device_type;
    t.device_id = static_cast<int32_t>(device.index);
  };
  for (size_t i = 0; i < qin.size(); ++i) fill(qin[i], node.inputs[i]);
  for (size_t i = 0; i < qout.size(); ++i) fill(qout[i], node.outputs[i]);
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = node.op_id;
  q.device_index = device.index;
  q.num_inputs = static_cast<uint32_t>(qin.size());
  q.inputs = qin.data();
  q.num_outputs = static_cast<uint32_t>(qout.size());
  q.outputs = qout.data();
  q.attrs = node.attrs.empty() ? nullptr : node.attrs.data();
  pk_op_support sup;
  PK_STRUCT_INIT(sup);
  return b.api.op_query(b.context, &q, &sup) == PK_OK && sup.supported;
}

// Appends the nodes of decomposition `dec` to `nodes`, its inputs and outputs being the program's values `inputs`
// and `outputs` and its intermediates new values of the program. An output the decomposition returns unchanged (an
// input, or the same value twice) is written by a clone.
void append_decomposition(Program &prog, const pk::meta::Decomposition &dec, const std::vector<uint32_t> &inputs,
                          const std::vector<uint32_t> &outputs, std::vector<ProgramNode> &nodes) {
  std::vector<uint32_t> map(dec.values.size(), UINT32_MAX);
  for (size_t i = 0; i < inputs.size(); ++i) map[i] = inputs[i];
  std::vector<std::pair<uint32_t, uint32_t>> copies;  // (program value, output)
  for (size_t k = 0; k < dec.outputs.size(); ++k) {
    uint32_t &m = map[dec.outputs[k]];
    if (m == UINT32_MAX) {
      m = outputs[k];
    } else {
      copies.emplace_back(m, outputs[k]);
    }
  }
  for (size_t v = 0; v < dec.values.size(); ++v) {
    if (map[v] == UINT32_MAX) {
      map[v] = static_cast<uint32_t>(prog.values.size());
      prog.values.push_back(dec.values[v]);
    }
  }
  for (const auto &dn : dec.nodes) {
    ProgramNode pn;
    pn.op_id = dn.op_id;
    pn.attrs = dn.attrs;
    for (int32_t v : dn.inputs) pn.inputs.push_back(map[v]);
    for (int32_t v : dn.outputs) pn.outputs.push_back(map[v]);
    nodes.push_back(std::move(pn));
  }
  for (const auto &c : copies) {
    ProgramNode clone;
    clone.op_id = PK_OP_CLONE;
    clone.inputs = {c.first};
    clone.outputs = {c.second};
    nodes.push_back(std::move(clone));
  }
}

// Composites the backend does not run natively become their primitives, with their intermediate values appended
// to prog.values.
pk_status lower_composites(Program &prog, const std::vector<ProgramNode> &nodes, std::vector<ProgramNode> &lowered) {
  for (const ProgramNode &node : nodes) {
    const OpInfo &op = *pk::meta::find_op(node.op_id);
    if (op.tier != pk::meta::Tier::composite || backend_runs_natively(prog, node)) {
      lowered.push_back(node);
      continue;
    }
    std::vector<TensorType> types;
    for (uint32_t v : node.inputs) types.push_back(prog.values[v]);
    pk::meta::Decomposition dec;
    Diag diag;
    if (!pk::meta::decompose(op, types.data(), static_cast<uint32_t>(types.size()),
                             node.attrs.empty() ? nullptr : node.attrs.data(), dec, diag)) {
      return set_error_from_diag(diag, op.id);
    }
    append_decomposition(prog, dec, node.inputs, node.outputs, lowered);
  }
  return PK_OK;
}

// Keeps the nodes a non-empty output depends on: the others write nothing anyone reads, and their temporaries
// may be huge (eye(n = 2^31-1, m = 0) has no element, yet its iota over n would take 16 GiB). A node that
// writes its input in place is always kept.
std::vector<ProgramNode> live_nodes(const Program &prog, std::vector<ProgramNode> nodes) {
  std::vector<bool> needed(prog.values.size(), false), keep(nodes.size(), false);
  for (uint32_t v : prog.outputs) needed[v] = true;
  for (size_t n = nodes.size(); n-- > 0;) {
    const OpInfo &op = *pk::meta::find_op(nodes[n].op_id);
    bool live = op.alias == pk::meta::Alias::inplace;
    for (uint32_t v : nodes[n].outputs) live = live || (needed[v] && pk::meta::numel(prog.values[v]) > 0);
    if (!live) continue;
    keep[n] = true;
    for (uint32_t v : nodes[n].inputs) needed[v] = true;
  }
  std::vector<ProgramNode> out;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (keep[n]) out.push_back(std::move(nodes[n]));
  return out;
}

// Places every temporary in one arena: a value lives from the first step that touches it to the last step that
// touches it or a view described over it, and two values share bytes only when their lifetimes are disjoint.
// Largest first, each at the lowest offset clear of the placed values it overlaps in time (greedy by size).
void lay_out_temporaries(Program &prog) {
  const size_t nv = prog.values.size();
  prog.slot.assign(nv, Program::kNoSlot);
  std::vector<bool> caller(nv, false);
  for (uint32_t v : prog.inputs) caller[v] = true;
  for (uint32_t v : prog.outputs) caller[v] = true;
  std::vector<uint32_t> root(nv);
  for (uint32_t v = 0; v < nv; ++v) root[v] = v;
  for (const ProgramStep &s : prog.steps)
    if (s.alias_view) root[s.node.outputs[0]] = root[s.node.inputs[0]];
  std::vector<size_t> first(nv, SIZE_MAX), last(nv, 0);
  auto touch = [&](uint32_t v, size_t step) {
    const uint32_t r = root[v];
    first[r] = std::min(first[r], step);
    last[r] = std::max(last[r], step);
  };
  for (size_t s = 0; s < prog.steps.size(); ++s) {
    const ProgramStep &step = prog.steps[s];
    if (step.fused) {
      for (uint32_t v : step.args) touch(v, s);
      continue;
    }
    for (uint32_t v : step.node.inputs) touch(v, s);
    for (uint32_t v : step.node.outputs) touch(v, s);
  }
  struct Temp {
    uint32_t value;
    uint64_t bytes;
  };
  std::vector<Temp> temps;
  for (uint32_t v = 0; v < nv; ++v) {
    if (caller[v] || root[v] != v || first[v] == SIZE_MAX) continue;
    const uint64_t bytes = bytes_of(prog.values[v]);
    prog.slot[v] = 0;  // an empty temporary reads and writes nothing: any place will do
    if (bytes == 0) continue;
    const uint64_t size = (bytes + Program::kSlotAlignment - 1) / Program::kSlotAlignment * Program::kSlotAlignment;
    temps.push_back({v, size});
    prog.temporary_bytes += size;
  }
  std::stable_sort(temps.begin(), temps.end(), [](const Temp &a, const Temp &b) { return a.bytes > b.bytes; });
  std::vector<Temp> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [offset, end) of placed values alive at the same time
  for (const Temp &t : temps) {
    busy.clear();
    for (const Temp &p : placed) {
      if (first[p.value] <= last[t.value] && first[t.value] <= last[p.value]) {
        busy.emplace_back(prog.slot[p.value], prog.slot[p.value] + p.bytes);
      }
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto &range : busy) {
      if (offset + t.bytes <= range.first) break;
      offset = std::max(offset, range.second);
    }
    prog.slot[t.value] = offset;
    prog.arena_bytes = std::max(prog.arena_bytes, offset + t.bytes);
    placed.push_back(t);
  }
  // Empty temporaries still get a real pointer (a backend may pass it to its driver as is).
  if (prog.arena_bytes == 0 && std::find(prog.slot.begin(), prog.slot.end(), 0) != prog.slot.end())
    prog.arena_bytes = Program::kSlotAlignment;
  // Views are described over their root at run time; they have no bytes of their own.
  for (uint32_t v = 0; v < nv; ++v)
    if (root[v] != v) prog.slot[v] = Program::kNoSlot;
}

}  // namespace

Program::~Program() {
  Backend &b = *device->backend;
  for (auto &s : steps) {
    if (s.kernel && b.api.kernel_destroy) b.api.kernel_destroy(b.context, s.kernel);
  }
}

pk_status build_program(Program &prog, std::vector<ProgramNode> nodes, bool fusion, bool prune) {
  std::vector<ProgramNode> lowered;
  if (pk_status st = lower_composites(prog, nodes, lowered)) return st;
  if (prune) lowered = live_nodes(prog, std::move(lowered));
  const Backend &b = *prog.device->backend;
  plan_steps(prog, lowered, fusion && b.api.fusion_offer && b.api.kernel_launch);
  lay_out_temporaries(prog);
  return PK_OK;
}

namespace {

// Describes the output of view step `n` over the storage of its input `in`: same data pointer and storage,
// new shape (the graph's), strides and byte offset. False when the view is not expressible as strides (a
// reshape of a non-compact input); the caller then runs the op into a buffer of its own.
bool view_of_input(const ProgramNode &n, const pk_tensor &in, const TensorType &out_type, int64_t *strides,
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

// The blocks one run takes: the arena and the buffers of views that could not be described over their source.
class RunMemory {
 public:
  RunMemory(Device &device, pk_stream_s &stream) : device_(device), stream_(stream) {}
  RunMemory(const RunMemory &) = delete;
  RunMemory &operator=(const RunMemory &) = delete;
  // Returns the blocks: to the device's cache on a synchronous device (the work is done), else parked on the
  // stream, whose later work may reuse them and whose synchronize or destroy returns them (executor.hpp).
  ~RunMemory() {
    if (blocks_.empty()) return;
    if (!device_.async()) {
      for (const auto &b : blocks_) device_.allocator->release(b.first, b.second);
      return;
    }
    bool too_many = false;
    uint64_t through = 0;
    {
      std::lock_guard<std::mutex> lock(stream_.parked_mu);
      through = ++stream_.parks;
      for (const auto &b : blocks_) stream_.parked.push_back({b.first, b.second, through});
      too_many = stream_.parked.size() > kMaxParked;
    }
    // Runs of many different sizes would park without bound: wait for the stream once and hand them back.
    const Backend &b = *device_.backend;
    if (too_many && b.api.stream_synchronize && b.api.stream_synchronize(stream_.stream) == PK_OK) {
      release_parked_temporaries(stream_, through);
    }
  }

  // A block of at least `bytes`: one parked on this stream (its earlier users are queued before us), else one
  // from the device's cache.
  pk_status take(uint64_t bytes, void **data) {
    uint64_t capacity = 0;
    if (device_.async()) {
      std::lock_guard<std::mutex> lock(stream_.parked_mu);
      auto &parked = stream_.parked;
      auto best = parked.end();
      for (auto it = parked.begin(); it != parked.end(); ++it) {
        if (it->capacity >= bytes && it->capacity <= 2 * bytes &&
            (best == parked.end() || it->capacity < best->capacity))
          best = it;
      }
      if (best != parked.end()) {
        *data = best->data;
        capacity = best->capacity;
        parked.erase(best);
        blocks_.emplace_back(*data, capacity);
        return PK_OK;
      }
    }
    pk_status st = device_.allocator->allocate(bytes ? bytes : 1, data, &capacity);
    if (st == PK_OK) blocks_.emplace_back(*data, capacity);
    return st;
  }

 private:
  static constexpr size_t kMaxParked = 32;
  Device &device_;
  pk_stream_s &stream_;
  std::vector<std::pair<void *, uint64_t>> blocks_;
};

}  // namespace

pk_status run_program(const Program &prog, pk_stream_s *stream, const pk_tensor *inputs, const pk_tensor *outputs) {
  Device &dev = *prog.device;
  Backend &b = *dev.backend;
  const size_t nv = prog.values.size();
  std::vector<pk_tensor> desc(nv);
  for (size_t k = 0; k < prog.inputs.size(); ++k) desc[prog.inputs[k]] = inputs[k];
  for (size_t k = 0; k < prog.outputs.size(); ++k) desc[prog.outputs[k]] = outputs[k];
  RunMemory memory(dev, *stream);
  auto describe = [&](size_t v, void *data, uint64_t offset, uint64_t storage) {
    const TensorType &t = prog.values[v];
    pk_tensor &d = desc[v];
    PK_STRUCT_INIT(d);
    d.data = data;
    d.byte_offset = data ? offset : 0;
    d.storage_bytes = data ? storage : 0;
    d.device_type = dev.props.device_type;
    d.device_id = static_cast<int32_t>(dev.index);
    d.dtype = pk::meta::dtype_desc(t.dtype);
    d.ndim = t.ndim;
    d.shape = prog.values[v].shape;
    if (dev.host_visible()) d.flags |= PK_TENSOR_FLAG_HOST_VISIBLE;
  };
  void *arena = nullptr;
  if (prog.arena_bytes > 0) {
    if (pk_status st = memory.take(prog.arena_bytes, &arena)) return st;
  }
  for (size_t v = 0; v < nv; ++v)
    if (prog.slot[v] != Program::kNoSlot) describe(v, arena, prog.slot[v], prog.arena_bytes);
  std::vector<std::array<int64_t, PK_MAX_RANK>> view_strides(nv);
  std::vector<pk_tensor> ins, outs;
  pk_status st = PK_OK;
  for (const auto &step : prog.steps) {
    if (step.fused) {
      ins.clear();
      for (uint32_t v : step.args) ins.push_back(desc[v]);
      st = b.api.kernel_launch(stream->stream, step.kernel, ins.data(), static_cast<uint32_t>(ins.size()));
      if (st != PK_OK) st = forward_backend_error(b, st, PK_OP_NONE, "fused kernel launch failed");
    } else if (step.alias_view &&
               view_of_input(step.node, desc[step.node.inputs[0]], prog.values[step.node.outputs[0]],
                             view_strides[step.node.outputs[0]].data(), desc[step.node.outputs[0]])) {
      continue;
    } else {
      if (step.alias_view) {  // not expressible as strides: the op runs into a buffer of its own
        const uint32_t out = step.node.outputs[0];
        const uint64_t bytes = bytes_of(prog.values[out]);
        void *data = nullptr;
        if ((st = memory.take(bytes, &data)) != PK_OK) break;
        describe(out, data, 0, bytes);
      }
      ins.clear();
      outs.clear();
      for (uint32_t v : step.node.inputs) ins.push_back(desc[v]);
      for (uint32_t v : step.node.outputs) outs.push_back(desc[v]);
      const auto num_in = static_cast<uint32_t>(ins.size()), num_out = static_cast<uint32_t>(outs.size());
      const void *attrs = step.node.attrs.empty() ? nullptr : step.node.attrs.data();
      st = prog.check_steps
               ? validate_and_launch(stream, step.node.op_id, ins.data(), num_in, outs.data(), num_out, attrs)
               : launch_validated(stream, *pk::meta::find_op(step.node.op_id), ins.data(), num_in, outs.data(), num_out,
                                  attrs);
    }
    if (st != PK_OK) break;
  }
  return st;
}

uint64_t parked_through(pk_stream_s &stream) {
  std::lock_guard<std::mutex> lock(stream.parked_mu);
  return stream.parks;
}

void release_parked_temporaries(pk_stream_s &stream, uint64_t through) {
  std::vector<pk_stream_s::Parked> done;
  {
    std::lock_guard<std::mutex> lock(stream.parked_mu);
    auto &parked = stream.parked;
    auto keep = std::stable_partition(parked.begin(), parked.end(),
                                      [through](const pk_stream_s::Parked &p) { return p.park > through; });
    done.assign(keep, parked.end());
    parked.erase(keep, parked.end());
  }
  for (const auto &b : done) stream.device->allocator->release(b.data, b.capacity);
}

// --- composite programs ----------------------------------------------------------------------------------------

namespace {

// Programs a device keeps for composite launches; a workload whose shapes never repeat starts the cache over.
constexpr size_t kMaxCompositePrograms = 256;

// The cache key: op, input types, normalized attributes, as bytes.
std::string composite_key(const OpInfo &op, const TensorType *types, uint32_t num_inputs, const void *attrs) {
  std::string key;
  auto put = [&key](const void *p, size_t n) { key.append(static_cast<const char *>(p), n); };
  put(&op.id, sizeof op.id);
  put(&num_inputs, sizeof num_inputs);
  for (uint32_t i = 0; i < num_inputs; ++i) {
    const int32_t dtype = static_cast<int32_t>(types[i].dtype);
    put(&dtype, sizeof dtype);
    put(&types[i].ndim, sizeof types[i].ndim);
    put(types[i].shape, sizeof(int64_t) * static_cast<size_t>(types[i].ndim));
  }
  if (attrs != nullptr) put(attrs, op.attrs_size);
  return key;
}

}  // namespace

pk_status composite_program(Device &device, const OpInfo &op, const TensorType *types, uint32_t num_inputs,
                            const void *attrs, std::shared_ptr<const Program> *out) {
  const std::string key = composite_key(op, types, num_inputs, attrs);
  {
    std::lock_guard<std::mutex> lock(device.programs_mu);
    auto it = device.composite_programs.find(key);
    if (it != device.composite_programs.end()) {
      *out = it->second;
      return PK_OK;
    }
  }
  Diag diag;
  pk::meta::Decomposition dec;
  if (!pk::meta::decompose(op, types, num_inputs, attrs, dec, diag)) return set_error_from_diag(diag, op.id);
  auto prog = std::make_shared<Program>(device);
  prog->check_steps = false;
  prog->values.assign(types, types + num_inputs);
  for (uint32_t i = 0; i < num_inputs; ++i) prog->inputs.push_back(i);
  for (int32_t v : dec.outputs) {
    prog->outputs.push_back(static_cast<uint32_t>(prog->values.size()));
    prog->values.push_back(dec.values[static_cast<size_t>(v)]);
  }
  std::vector<ProgramNode> nodes;
  append_decomposition(*prog, dec, prog->inputs, prog->outputs, nodes);
  // One launch at a time, as the launch it replaces promised: no fusion offers.
  if (pk_status st = build_program(*prog, std::move(nodes), false, true)) return st;
  std::lock_guard<std::mutex> lock(device.programs_mu);
  // Shapes change without bound in some workloads: start over rather than grow forever.
  if (device.composite_programs.size() >= kMaxCompositePrograms) device.composite_programs.clear();
  *out = device.composite_programs.emplace(key, std::move(prog)).first->second;
  return PK_OK;
}

}  // namespace pk::rt
