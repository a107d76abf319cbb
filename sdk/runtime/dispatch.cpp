// dispatch.cpp — single-op launches: validation against the op table, dispatch to the stream's backend,
// decomposition of composites the backend lacks, and fallback to the CPU backend with copies.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "executor.hpp"
#include "launch_memo.hpp"
#include "runtime_internal.hpp"

using namespace pk::rt;
using pk::meta::Diag;
using pk::meta::OpInfo;

namespace pk::rt {
namespace {

uint32_t parse_version(const char *since) {
  unsigned major = 0, minor = 0;
  if (since == nullptr || std::sscanf(since, "%u.%u", &major, &minor) != 2) return PK_ABI_VERSION;
  return PK_MAKE_VERSION(major, minor);
}

// A plugin built for an older minor may not know ops added later: the runtime never sends it one.
bool backend_knows_op(const Backend &b, const OpInfo &op) {
  return b.abi_version >= PK_ABI_VERSION || parse_version(op.since) <= b.abi_version;
}

}  // namespace

bool DeviceCheck::check(const pk_tensor &t, const pk::meta::TensorRef &ref, int32_t arg, Diag &diag) const {
  if (t.device_type != dev_.props.device_type || t.device_id != static_cast<int32_t>(dev_.index)) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                     "%s: tensor is on device (%d, %d) but the stream runs on '%s' "
                     "device %u (%d, %u)",
                     ref.name().text, t.device_type, t.device_id, dev_.backend->info.name, dev_.index,
                     dev_.props.device_type, dev_.index);
  }
  // A host pointer handed to a device that cannot address host memory would reach the driver as a device
  // handle (PoCL aborts on it): refuse it here, where the caller can still copy it into a buffer.
  if ((t.flags & PK_TENSOR_FLAG_HOST_VISIBLE) && !dev_.host_visible()) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                     "%s: tensor is flagged HOST_VISIBLE (a host pointer) but '%s' device %u has no unified memory; "
                     "copy it into a buffer (pk_buffer_create + pk_copy_host_to_buffer)",
                     ref.name().text, dev_.backend->info.name, dev_.index);
  }
  // storage_bytes is the caller's word, and the only bound on memory the runtime did not allocate. On a buffer of
  // pk_buffer_create the runtime knows the real size: a view must stay inside it whatever storage_bytes claims (a
  // 64-byte buffer described as 4 MiB would have every backend read and write past it).
  uint64_t lo = 0, hi = 0, start = 0, bytes = 0;
  pk::meta::byte_extent(t, lo, hi);
  if (lo == hi || !dev_.find_buffer(t.data, &start, &bytes)) return true;
  if (hi > bytes || start > bytes - hi) {
    return diag.fail(PK_ERROR_INVALID_ARGUMENT, arg,
                     "%s: the view reaches bytes [%llu, %llu) past its data pointer, which lies %llu bytes into a "
                     "buffer of %llu bytes (storage_bytes claims %llu)",
                     ref.name().text, static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi),
                     static_cast<unsigned long long>(start), static_cast<unsigned long long>(bytes),
                     static_cast<unsigned long long>(t.storage_bytes));
  }
  return true;
}

namespace {

std::string signature(const OpInfo &op, const pk_tensor *inputs, uint32_t num_inputs) {
  std::string s = op.name;
  s += '(';
  for (uint32_t i = 0; i < num_inputs; ++i) {
    if (i) s += ", ";
    s += pk::meta::dtype_name(pk::meta::dtype_id(inputs[i].dtype));
  }
  return s + ')';
}

// A host staging block from the fallback device's cache, returned on scope exit.
struct Staging {
  Device *device = nullptr;
  void *data = nullptr;
  uint64_t capacity = 0;
  Staging() = default;
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;
  ~Staging() {
    if (data) device->allocator->release(data, capacity);
  }
};

pk_status run_on_fallback(Runtime &rt, Backend &fb, const OpInfo &op, const pk_tensor *inputs, uint32_t num_inputs,
                          const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  std::lock_guard<std::mutex> lock(rt.fallback_mu);
  if (rt.fallback_stream == nullptr) {
    if (pk_status st = create_stream(*fb.devices[0], &rt.fallback_stream)) return st;
  }
  pk_status st = fb.api.op_launch ? fb.api.op_launch(rt.fallback_stream->stream, op.id, inputs, num_inputs, outputs,
                                                     num_outputs, attrs)
                                  : PK_UNIMPLEMENTED;
  if (st == PK_OK && fb.api.stream_synchronize) st = fb.api.stream_synchronize(rt.fallback_stream->stream);
  if (st == PK_UNIMPLEMENTED) return st;
  return st == PK_OK ? PK_OK : forward_backend_error(fb, st, op.id, "fallback launch failed");
}

}  // namespace

// Runs a composite op as the Program of its decomposition (planned once per op, input types and attributes, and
// cached on the device) on the same stream.
pk_status launch_decomposed(pk_stream_s *stream, const OpInfo &op, const pk_tensor *inputs, uint32_t num_inputs,
                            const pk_tensor *outputs, const void *attrs) {
  Diag diag;
  std::vector<pk::meta::TensorType> types(num_inputs);
  for (uint32_t i = 0; i < num_inputs; ++i) pk::meta::tensor_type(inputs[i], types[i], &op, i, diag);
  std::shared_ptr<const Program> prog;
  if (pk_status st = composite_program(*stream->device, op, types.data(), num_inputs, attrs, &prog)) return st;
  return run_program(*prog, stream, inputs, outputs);
}

pk_status launch_fallback(pk_stream_s *stream, const OpInfo &op, const pk_tensor *inputs, uint32_t num_inputs,
                          const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  Device &dev = *stream->device;
  Backend &b = *dev.backend;
  Runtime &rt = *b.runtime;
  if (rt.strict()) {
    return set_error(PK_ERROR_FALLBACK_FORBIDDEN, op.id, -1, 0,
                     "%s: backend '%s' does not support %s and the runtime is strict (fallback to '%s' forbidden)",
                     op.name, b.info.name, signature(op, inputs, num_inputs).c_str(), rt.fallback_name.c_str());
  }
  Backend *fb = rt.fallback_backend();
  if (fb == nullptr || fb == &b) {
    return set_error(PK_UNIMPLEMENTED, op.id, -1, 0, "%s: backend '%s' does not support %s%s", op.name, b.info.name,
                     signature(op, inputs, num_inputs).c_str(),
                     fb == nullptr ? " and no fallback backend is loaded" : "");
  }
  Device &fdev = *fb->devices[0];
  if (!fdev.host_visible()) {
    return set_error(PK_ERROR_INTERNAL, op.id, -1, 0, "%s: fallback backend '%s' has no host-visible device", op.name,
                     fb->info.name);
  }
  uint32_t n = num_inputs + num_outputs;
  std::vector<pk_tensor> local(n);
  std::vector<Staging> staging(n);
  std::vector<uint64_t> lo(n), hi(n);
  uint64_t copied = 0;
  pk_status st = PK_OK;
  if (dev.host_visible()) {
    // Unified memory: the fallback reads and writes the same bytes once the device's queued work is done.
    if (b.api.stream_synchronize && (st = b.api.stream_synchronize(stream->stream)) != PK_OK) {
      return forward_backend_error(b, st, op.id, "stream failed before fallback");
    }
    for (uint32_t i = 0; i < n; ++i) {
      local[i] = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
      local[i].device_type = fdev.props.device_type;
      local[i].device_id = 0;
    }
  } else {
    if (!b.api.copy_device_to_host || !b.api.copy_host_to_device || !b.api.stream_synchronize) {
      return set_error(PK_UNIMPLEMENTED, op.id, -1, 0,
                       "%s: backend '%s' does not support %s and cannot copy to the host for fallback", op.name,
                       b.info.name, signature(op, inputs, num_inputs).c_str());
    }
    // Outputs are copied down too: a strided output must keep the bytes between its elements.
    for (uint32_t i = 0; i < n && st == PK_OK; ++i) {
      const pk_tensor &t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
      pk::meta::byte_extent(t, lo[i], hi[i]);
      uint64_t bytes = hi[i] - lo[i];
      staging[i].device = &fdev;
      st = fdev.allocator->allocate(bytes ? bytes : 1, &staging[i].data, &staging[i].capacity);
      if (st == PK_OK && bytes) {
        st = b.api.copy_device_to_host(stream->stream, staging[i].data, t.data, lo[i], bytes);
        if (st != PK_OK) st = forward_backend_error(b, st, op.id, "copy to host for fallback failed");
        copied += bytes;
      }
      local[i] = t;
      local[i].data = staging[i].data;
      local[i].byte_offset = t.byte_offset - lo[i];
      local[i].storage_bytes = bytes;
      local[i].device_type = fdev.props.device_type;
      local[i].device_id = 0;
      local[i].flags |= PK_TENSOR_FLAG_HOST_VISIBLE;
    }
    if (st == PK_OK && (st = b.api.stream_synchronize(stream->stream)) != PK_OK) {
      st = forward_backend_error(b, st, op.id, "stream failed before fallback");
    }
    if (st != PK_OK) return st;
  }
  st = run_on_fallback(rt, *fb, op, local.data(), num_inputs, local.data() + num_inputs, num_outputs, attrs);
  if (st == PK_UNIMPLEMENTED) {
    return set_error(PK_UNIMPLEMENTED, op.id, -1, 0, "%s: neither backend '%s' nor the fallback '%s' supports %s",
                     op.name, b.info.name, fb->info.name, signature(op, inputs, num_inputs).c_str());
  }
  if (st != PK_OK) return st;
  if (!dev.host_visible()) {
    for (uint32_t k = 0; k < num_outputs && st == PK_OK; ++k) {
      uint32_t i = num_inputs + k;
      uint64_t bytes = hi[i] - lo[i];
      if (bytes == 0) continue;
      st = b.api.copy_host_to_device(stream->stream, outputs[k].data, lo[i], staging[i].data, bytes);
      if (st != PK_OK) st = forward_backend_error(b, st, op.id, "copy back after fallback failed");
      copied += bytes;
    }
    // The staging blocks must outlive the copies.
    if (pk_status sync = b.api.stream_synchronize(stream->stream); sync != PK_OK && st == PK_OK) {
      st = forward_backend_error(b, sync, op.id, "stream failed after fallback");
    }
  }
  if (st == PK_OK) {
    rt.fallback[op.id].launches.fetch_add(1, std::memory_order_relaxed);
    rt.fallback[op.id].bytes_copied.fetch_add(copied, std::memory_order_relaxed);
  }
  return st;
}

// Dispatch of a launch that already passed validation (attrs normalized).
pk_status launch_validated(pk_stream_s *stream, const OpInfo &op, const pk_tensor *inputs, uint32_t num_inputs,
                           const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  Backend &b = *stream->device->backend;
  pk_status st = PK_UNIMPLEMENTED;
  if (b.api.op_launch != nullptr && backend_knows_op(b, op)) {
    st = b.api.op_launch(stream->stream, op.id, inputs, num_inputs, outputs, num_outputs, attrs);
  }
  if (st == PK_OK) return PK_OK;
  if (st != PK_UNIMPLEMENTED) return forward_backend_error(b, st, op.id, "launch failed");
  if (op.tier == pk::meta::Tier::composite) {
    return launch_decomposed(stream, op, inputs, num_inputs, outputs, attrs);
  }
  return launch_fallback(stream, op, inputs, num_inputs, outputs, num_outputs, attrs);
}

pk_status validate_and_launch(pk_stream_s *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                              const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  if (stream == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: stream is NULL", pk::meta::op_name(op_id));
  }
  const OpInfo *op = pk::meta::find_op(op_id);
  if (op == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0,
                     "pk_launch: unknown op id %u (this runtime knows ABI %u.%u ops)", op_id, PK_ABI_VERSION_MAJOR,
                     PK_ABI_VERSION_MINOR);
  }
  thread_local LaunchMemo<1024> memo;
  const bool keyed = (inputs != nullptr || num_inputs == 0) && (outputs != nullptr || num_outputs == 0) &&
                     num_inputs <= pk::meta::kMaxLaunchInputs && num_outputs <= pk::meta::kMaxLaunchOutputs;
  // Read before validating: a buffer created or destroyed meanwhile changes the key, so a verdict is never
  // remembered under a key newer than the buffers it was checked against.
  const uint64_t key = stream->device->validation_key.load(std::memory_order_acquire);
  if (keyed && memo.matches_last(key, op_id, inputs, num_inputs, outputs, num_outputs, attrs)) {
    return launch_validated(stream, *op, inputs, num_inputs, outputs, num_outputs,
                            op->num_attrs ? memo.normalized() : nullptr);
  }
  alignas(16) unsigned char normalized[pk::meta::kMaxAttrsSize];
  Diag diag;
  const DeviceCheck on_device(*stream->device);
  if (!pk::meta::validate_launch(*op, inputs, num_inputs, outputs, num_outputs, attrs, normalized, diag, &on_device)) {
    return set_error_from_diag(diag, op_id);
  }
  if (keyed) {
    memo.remember(key, op_id, inputs, num_inputs, outputs, num_outputs, attrs, normalized, op->attrs_size);
  }
  return launch_validated(stream, *op, inputs, num_inputs, outputs, num_outputs, op->num_attrs ? normalized : nullptr);
}

namespace {

// An exact query (every input's shape given) that the op's shape rule refuses, or whose outputs differ from what
// the rule infers, describes no launch: it is answered "not supported" with the rule's reason and never reaches
// the backend, which plans from the shapes (fuzz_query: cuda-emu's gather, dot and index_put plans indexed past
// such inputs). Without attributes the rule is checked at the defaults. `types` are the validated inputs. True
// when the query may go on.
bool exact_query_is_possible(const OpInfo &op, const pk_op_query &query, const pk::meta::TensorType *types,
                             const void *attrs, pk_op_support &out) {
  Diag diag;
  alignas(16) unsigned char defaults[pk::meta::kMaxAttrsSize];
  if (op.num_attrs > 0 && attrs == nullptr) {
    if (!pk::meta::normalize_attrs(op, nullptr, defaults, diag)) return true;  // a required attribute: unknown
    attrs = defaults;
  }
  pk::meta::TensorType inferred[pk::meta::kMaxLaunchOutputs];
  bool possible = pk::meta::check_attrs(op, attrs, types, query.num_inputs, diag) &&
                  pk::meta::infer_outputs(op, types, query.num_inputs, attrs, inferred, diag);
  for (uint32_t k = 0; possible && k < query.num_outputs && k < op.num_outputs; ++k) {
    const pk_tensor &t = query.outputs[k];
    if (t.ndim > 0 && t.shape == nullptr) continue;
    bool same = pk::meta::dtype_id(t.dtype) == inferred[k].dtype && t.ndim == inferred[k].ndim;
    for (int32_t d = 0; same && d < t.ndim; ++d) same = t.shape[d] == inferred[k].shape[d];
    if (!same) {
      std::snprintf(diag.message, sizeof diag.message,
                    "%s: output %u (%s): dtype or shape differs from what the op gives its inputs", op.name, k,
                    op.outputs[k].name);
      possible = false;
    }
  }
  if (possible) return true;
  out.supported = 0;
  const size_t n = std::min(std::strlen(diag.message), sizeof(out.reason) - 1);  // the rule's reason, cut to fit
  std::memcpy(out.reason, diag.message, n);
  out.reason[n] = '\0';
  return false;
}

}  // namespace

}  // namespace pk::rt

extern "C" {

pk_status pk_launch(pk_stream_t stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                    const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  return validate_and_launch(stream, op_id, inputs, num_inputs, outputs, num_outputs, attrs);
}

pk_status pk_infer_outputs(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const void *attrs,
                           uint32_t num_outputs, pk_dtype *out_dtypes, int32_t *out_ndims, int64_t *out_shapes) {
  const OpInfo *op = pk::meta::find_op(op_id);
  if (op == nullptr)
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "pk_infer_outputs: unknown op id %u", op_id);
  if (num_outputs != op->num_outputs || !out_dtypes || !out_ndims || !out_shapes) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0,
                     "%s: pk_infer_outputs needs %u outputs and non-NULL result arrays", op->name, op->num_outputs);
  }
  if (num_inputs > 0 && inputs == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: inputs is NULL", op->name);
  }
  Diag diag;
  pk::meta::TensorType types[64];
  if (num_inputs > 64) return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: more than 64 inputs", op->name);
  for (uint32_t i = 0; i < num_inputs; ++i) {
    if (!pk::meta::tensor_type(inputs[i], types[i], op, static_cast<int32_t>(i), diag))
      return set_error_from_diag(diag, op_id);
  }
  alignas(16) unsigned char normalized[pk::meta::kMaxAttrsSize];
  pk::meta::TensorType outs[8];
  if (!pk::meta::normalize_attrs(*op, attrs, normalized, diag) ||
      !pk::meta::check_attrs(*op, normalized, types, num_inputs, diag) ||
      !pk::meta::infer_outputs(*op, types, num_inputs, normalized, outs, diag)) {
    return set_error_from_diag(diag, op_id);
  }
  for (uint32_t k = 0; k < num_outputs; ++k) {
    out_dtypes[k] = pk::meta::dtype_desc(outs[k].dtype);
    out_ndims[k] = outs[k].ndim;
    for (int d = 0; d < PK_MAX_RANK; ++d) out_shapes[k * PK_MAX_RANK + d] = d < outs[k].ndim ? outs[k].shape[d] : 0;
  }
  return PK_OK;
}

pk_status pk_device_query_op(pk_device_t device, const pk_op_query *query, pk_op_support *out) {
  if (device == nullptr || query == nullptr || out == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_device_query_op: NULL argument");
  }
  if (query->struct_size < offsetof(pk_op_query, attrs) || out->struct_size < sizeof(pk_op_support)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_device_query_op: struct_size of query or result too small");
  }
  const OpInfo *op = pk::meta::find_op(query->op_id);
  if (op == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, query->op_id, -1, 0, "pk_device_query_op: unknown op id %u",
                     query->op_id);
  }
  Backend &b = *device->backend;
  uint32_t size = out->struct_size;
  std::memset(out, 0, size);
  out->struct_size = size;
  if (b.api.op_query == nullptr || !backend_knows_op(b, *op)) {  // answered without calling the backend
    out->supported = 0;
    std::snprintf(out->reason, sizeof(out->reason), "%s",
                  b.api.op_query ? "op is newer than the plugin's ABI" : "backend has no capability query");
    return PK_OK;
  }
  // The query is validated as a launch is, as far as a query says anything (shapes may be NULL and outputs left
  // out for a coverage query), so that no backend sees a NULL array, an impossible rank or a short attribute
  // struct.
  uint32_t required = op->num_inputs;
  while (required > 0 && op->inputs[required - 1].optional) --required;  // trailing optional inputs may be left out
  const bool arity_ok = query->num_inputs >= required && (op->variadic() || query->num_inputs <= op->num_inputs);
  if (!arity_ok || (query->num_outputs != 0 && query->num_outputs != op->num_outputs)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op->id, -1, 0,
                     "%s: pk_device_query_op: %u inputs and %u outputs given; the op takes %s%u inputs and %u outputs",
                     op->name, query->num_inputs, query->num_outputs, op->variadic() ? "at least " : "", required,
                     op->num_outputs);
  }
  if (query->num_inputs > pk::meta::kMaxLaunchInputs || (query->num_inputs && !query->inputs) ||
      (query->num_outputs && !query->outputs)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op->id, -1, 0,
                     "%s: pk_device_query_op: inputs/outputs is NULL or has more than %u tensors", op->name,
                     pk::meta::kMaxLaunchInputs);
  }
  // The inputs' types, validated once: the attribute check and the shape rule below read them. A query is exact
  // when every input's shape is given (a scalar's is empty); one that gives no shape at all (`shaped` false) asks
  // about dtypes only, one that leaves some out is a coverage query: neither has shapes to infer from.
  pk::meta::TensorType types[pk::meta::kMaxLaunchInputs];
  bool exact = true, shaped = false;
  for (uint32_t i = 0; i < query->num_inputs + query->num_outputs; ++i) {
    const bool in = i < query->num_inputs;
    const uint32_t k = in ? i : i - query->num_inputs;
    pk::meta::TensorType type;
    Diag diag;
    const pk_tensor &t = in ? query->inputs[k] : query->outputs[k];
    if (!pk::meta::validate_query_tensor(*op, t, !in, k, static_cast<int32_t>(i), type, diag)) {
      return set_error_from_diag(diag, op->id);
    }
    if (!in) continue;
    types[k] = type;
    exact = exact && (t.ndim == 0 || t.shape != nullptr);
    shaped = shaped || t.shape != nullptr;
  }
  alignas(16) unsigned char normalized[pk::meta::kMaxAttrsSize];
  const void *attrs = nullptr;
  // attrs counts only when the whole pointer lies inside struct_size (fuzz_query: a struct_size ending inside it
  // had the pointer read past the caller's struct).
  if (op->num_attrs > 0 && query->struct_size >= offsetof(pk_op_query, attrs) + sizeof(query->attrs) &&
      query->attrs != nullptr) {
    Diag diag;
    if (!pk::meta::normalize_attrs(*op, query->attrs, normalized, diag)) return set_error_from_diag(diag, op->id);
    attrs = normalized;  // an older caller's shorter struct reaches the backend at this build's size
    // An exact query (shapes given) has its attributes checked against its inputs as a launch's are (axes within
    // the rank, ...): backends plan from them. fuzz_query: cuda-emu's reduction plan indexed past the rank.
    if (exact && !pk::meta::check_attrs(*op, attrs, types, query->num_inputs, diag))
      return set_error_from_diag(diag, op->id);
    if (exact) pk::meta::canonicalize_attrs(*op, types, query->num_inputs, normalized);
  }
  if (exact && shaped && !exact_query_is_possible(*op, *query, types, attrs, *out)) return PK_OK;
  pk_op_query q;
  PK_STRUCT_INIT(q);
  std::memcpy(&q, query, std::min<size_t>(query->struct_size, sizeof(q)));
  q.struct_size = sizeof(q);
  q.device_index = device->index;
  q.attrs = attrs;
  pk_status st = b.api.op_query(b.context, &q, out);
  out->reason[sizeof(out->reason) - 1] = '\0';
  if (st != PK_OK) return forward_backend_error(b, st, op->id, "op_query failed");
  return PK_OK;
}

const char *pk_runtime_fallback_report(pk_runtime_t rt) {
  if (rt == nullptr) return "";
  // Per thread: one string per runtime was rewritten by any thread's call while another thread still read the
  // pointer it had been given (a data race ThreadSanitizer found in the thread stress test). The counters are
  // atomics and the names constant, so building the text needs no lock.
  thread_local std::string report;
  report.clear();
  for (const OpInfo *op = pk::meta::ops_begin(); op != pk::meta::ops_end(); ++op) {
    uint64_t n = rt->fallback[op->id].launches.load();
    if (n == 0) continue;
    char line[256];
    std::snprintf(line, sizeof(line), "%s launches=%llu bytes_copied=%llu fallback=%s\n", op->name,
                  static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(rt->fallback[op->id].bytes_copied.load()), rt->fallback_name.c_str());
    report += line;
  }
  return report.c_str();
}

pk_status pk_runtime_fallback_count(pk_runtime_t rt, uint32_t op_id, uint64_t *launches, uint64_t *bytes_copied) {
  if (rt == nullptr)
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "pk_runtime_fallback_count: runtime is NULL");
  if (op_id >= PK_OP_ID_LIMIT) return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "unknown op id %u", op_id);
  if (launches) *launches = rt->fallback[op_id].launches.load();
  if (bytes_copied) *bytes_copied = rt->fallback[op_id].bytes_copied.load();
  return PK_OK;
}

void pk_runtime_reset_fallback_counters(pk_runtime_t rt) {
  if (rt == nullptr) return;
  for (uint32_t i = 0; i < PK_OP_ID_LIMIT; ++i) {
    rt->fallback[i].launches = 0;
    rt->fallback[i].bytes_copied = 0;
  }
}

}  // extern "C"
