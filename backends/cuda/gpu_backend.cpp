// gpu_backend.cpp — the PrimKit ABI of the cuda and cuda-emu plugins, written once over pk::gpu::Executor:
// negotiation, metadata, memory, streams and events (sticky errors), the capability query and op launches
// through kernels from the LLVM code generator, and fusion of elementwise regions.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_backend.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

using pk::kit::fail;

// An op launch planned before: its kernel launches, each with its kernel handle once compiled. Immutable once
// published, so a launch uses it without the lock.
struct PlannedOp {
  std::vector<pk::codegen::PlannedLaunch> launches;
  std::vector<void *> kernels;  // per launch, for the device it was planned on
};

struct pk_be_context {
  const pk_host_services *host = nullptr;
  std::unique_ptr<pk::gpu::Executor> exec;
  std::mutex mutex;
  std::map<std::string, void *> kernels;  // "<device>|<spec key>" -> executor kernel handle
  // Op launches by what planning reads (device, op, attributes, dtypes, shapes, strides): a repeated launch skips
  // planning, the spec keys and the kernel map, which cost microseconds per launch on the host.
  std::unordered_map<std::string, std::shared_ptr<const PlannedOp>> planned;
};

struct pk_be_stream {
  pk_be_context *ctx = nullptr;
  uint32_t device = 0;
  void *handle = nullptr;
  pk::kit::StickyError sticky;
};

struct pk_be_event {
  pk_be_context *ctx = nullptr;
  void *handle = nullptr;
  pk_be_stream *recorded_on = nullptr;
};

// A fused region compiled for one device: the dense kernel now, a strided one on the first launch that needs it.
struct pk_be_kernel {
  uint32_t device = 0;
  pk::codegen::KernelSpec spec;  // rank 0
  std::vector<int64_t> shape;    // the element shape
  void *dense = nullptr;
};

namespace {

// PK_OK, or PK_ERROR_STREAM_FAILED once work on the stream failed ("<backend>: stream failed earlier: ...").
pk_status sticky_check(pk_be_stream *s) {
  return s->sticky.check(pk::gpu::backend_name());
}

// Kernel handle for a spec on a device, compiled once per context.
pk_status kernel_for(pk_be_context *ctx, uint32_t device, const pk::codegen::KernelSpec &spec, void **out) {
  const std::string k = std::to_string(device) + "|" + pk::codegen::key(spec);
  std::lock_guard<std::mutex> g(ctx->mutex);
  auto it = ctx->kernels.find(k);
  if (it != ctx->kernels.end()) {
    *out = it->second;
    return PK_OK;
  }
  void *kernel = nullptr;
  if (pk_status st = ctx->exec->load_kernel(device, spec, &kernel)) return st;
  ctx->kernels.emplace(k, kernel);
  *out = kernel;
  return PK_OK;
}

void *element0(const pk_tensor &t) {
  // In integers: an empty view may carry any byte_offset (it reaches no byte), and pointer arithmetic past the
  // allocation is undefined even when the result is never used (UBSan, fuzz_launch: var_mean of an empty input).
  return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(t.data) + t.byte_offset);
}

// Strides of a tensor over the element space of rank `rank`; a tensor of rank rank-1 (a reduced output) gets
// stride 0 on the last axis.
std::vector<int64_t> strides_over(const pk_tensor &t, int32_t rank) {
  pk::kit::View v = pk::kit::view_of(t);
  std::vector<int64_t> s(v.strides, v.strides + v.ndim);
  while (static_cast<int32_t>(s.size()) < rank) s.push_back(0);
  return s;
}

bool strided_launch(const pk::codegen::PlannedLaunch &l) {
  return !l.shape.empty() && !pk::codegen::plan_is_dense(l);
}

// The kernel of a planned launch: the dense one when every view is row-major over the element space, else the
// strided variant of the launch's rank.
pk_status kernel_of(pk_be_context *ctx, uint32_t device, const pk::codegen::PlannedLaunch &l, void **kernel) {
  pk::codegen::KernelSpec spec{l.region, strided_launch(l) ? static_cast<int32_t>(l.shape.size()) : 0};
  return kernel_for(ctx, device, spec, kernel);
}

// Runs one planned launch over the tensors it names with `kernel` (the one kernel_of gives for it).
pk_status run(pk_be_stream *stream, const pk::codegen::PlannedLaunch &l, void *kernel, const pk_tensor *tensors) {
  const size_t rank = l.shape.size();
  int64_t n = 1, cols = 1;
  for (size_t d = 0; d < rank; ++d) (d + static_cast<size_t>(l.red) < rank ? n : cols) *= l.shape[d];
  if (n == 0) return PK_OK;
  std::vector<void *> ptrs;
  const size_t nin = l.region.inputs.size();
  for (size_t k = 0; k < l.args.size(); ++k) {
    const uint32_t v = k < nin ? l.region.inputs[k] : l.region.outputs[k - nin];
    const int64_t esize = static_cast<int64_t>(pk::meta::dtype_size(l.region.dtypes[v]));
    ptrs.push_back(static_cast<char *>(element0(tensors[l.args[k].tensor])) + l.args[k].offset * esize);
  }
  std::vector<int64_t> shp;
  std::vector<std::vector<int64_t>> strides;
  if (strided_launch(l)) {
    shp = l.shape;
    for (const auto &a : l.args) strides.push_back(a.strides);
  }
  pk::codegen::Params params(ptrs, n, cols, shp, strides, l.extra);
  return stream->ctx->exec->launch(stream->handle, kernel, params.values(), n);
}

// What planning an op launch reads, as bytes: the key of its PlannedOp.
void plan_signature(uint32_t device, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                    const pk_tensor *outputs, uint32_t num_outputs, const void *attrs, std::string &sig) {
  sig.clear();
  auto put = [&](const void *p, size_t n) { sig.append(static_cast<const char *>(p), n); };
  const uint32_t head[4] = {device, op_id, num_inputs, num_outputs};
  put(head, sizeof head);
  const pk::meta::OpInfo *op = pk::meta::find_op(op_id);
  if (attrs != nullptr && op != nullptr) put(attrs, op->attrs_size);
  for (uint32_t k = 0; k < num_inputs + num_outputs; ++k) {
    const pk_tensor &t = k < num_inputs ? inputs[k] : outputs[k - num_inputs];
    put(&t.dtype, sizeof t.dtype);
    put(&t.ndim, sizeof t.ndim);
    if (t.ndim > 0) put(t.shape, sizeof(int64_t) * static_cast<size_t>(t.ndim));
    const char has_strides = t.strides != nullptr;
    put(&has_strides, 1);
    if (has_strides && t.ndim > 0) put(t.strides, sizeof(int64_t) * static_cast<size_t>(t.ndim));
  }
}

// The PlannedOp of a launch, planned and its kernels compiled on first sight; NULL with *st set (PK_UNIMPLEMENTED
// when the generator does not handle it).
std::shared_ptr<const PlannedOp> planned_op(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs,
                                            uint32_t num_inputs, const pk_tensor *outputs, uint32_t num_outputs,
                                            const void *attrs, pk_status *st) {
  pk_be_context *ctx = stream->ctx;
  thread_local std::string sig;
  plan_signature(stream->device, op_id, inputs, num_inputs, outputs, num_outputs, attrs, sig);
  {
    std::lock_guard<std::mutex> g(ctx->mutex);
    auto it = ctx->planned.find(sig);
    if (it != ctx->planned.end()) return it->second;
  }
  auto p = std::make_shared<PlannedOp>();
  std::string why;
  if (!pk::codegen::plan_op(op_id, inputs, num_inputs, outputs, num_outputs, attrs, p->launches, why)) {
    *st = fail(PK_UNIMPLEMENTED, op_id, -1, "%s: %s", pk::gpu::backend_name(), why.c_str());
    return nullptr;
  }
  for (const auto &l : p->launches) {
    void *kernel = nullptr;
    if ((*st = kernel_of(ctx, stream->device, l, &kernel)) != PK_OK) return nullptr;
    p->kernels.push_back(kernel);
  }
  std::lock_guard<std::mutex> g(ctx->mutex);
  if (ctx->planned.size() >= 4096) ctx->planned.clear();  // a bound for programs with ever-new shapes
  ctx->planned.emplace(sig, p);
  return p;
}

// --- lifecycle and metadata -------------------------------------------------------------------------------

pk_status g_open(const pk_host_services *host, pk_be_context **out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "%s: open: out is NULL", pk::gpu::backend_name());
  auto ctx = std::unique_ptr<pk_be_context>(new (std::nothrow) pk_be_context);
  if (!ctx) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "%s: open: no memory", pk::gpu::backend_name());
  ctx->host = host;
  try {
    ctx->exec = pk::gpu::make_executor();
  } catch (...) {
    return fail(PK_ERROR_INTERNAL, 0, -1, "%s: open: executor construction failed", pk::gpu::backend_name());
  }
  *out = ctx.release();
  return PK_OK;
}

void g_close(pk_be_context *ctx) {
  std::unique_ptr<pk_be_context> owned(ctx);
}

pk_status g_get_info(pk_be_context *, pk_backend_info *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "get_info: out is NULL");
  return pk::kit::write_backend_info(out, pk::gpu::backend_name(), "PrimKit reference (LLVM codegen)", 0, 1);
}

pk_status g_device_count(pk_be_context *ctx, uint32_t *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "device_count: out is NULL");
  *out = ctx->exec->device_count();
  return PK_OK;
}

pk_status g_device_get_props(pk_be_context *ctx, uint32_t index, pk_device_props *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "device_get_props: out is NULL");
  pk_device_props p;
  PK_STRUCT_INIT(p);
  if (pk_status st = ctx->exec->device_props(index, p)) return st;
  pk::kit::copy_out(p, out);
  return PK_OK;
}

// --- memory, streams, events --------------------------------------------------------------------------------

pk_status g_mem_alloc(pk_be_context *ctx, uint32_t device, uint64_t bytes, void **out) {
  return ctx->exec->alloc(device, bytes, out);
}
pk_status g_mem_free(pk_be_context *ctx, uint32_t device, void *ptr) {
  return ctx->exec->free(device, ptr);
}

pk_status g_copy_h2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  return s->sticky.record(s->ctx->exec->copy_h2d(s->handle, static_cast<char *>(dst) + dst_offset, src, bytes));
}
pk_status g_copy_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t src_offset, uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  return s->sticky.record(s->ctx->exec->copy_d2h(s->handle, dst, static_cast<const char *>(src) + src_offset, bytes));
}
pk_status g_copy_d2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t src_offset,
                     uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  return s->sticky.record(s->ctx->exec->copy_d2d(s->handle, static_cast<char *>(dst) + dst_offset,
                                                 static_cast<const char *>(src) + src_offset, bytes));
}

pk_status g_stream_create(pk_be_context *ctx, uint32_t device, pk_be_stream **out) {
  auto s = std::unique_ptr<pk_be_stream>(new (std::nothrow) pk_be_stream);
  if (!s) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "%s: no memory for a stream", pk::gpu::backend_name());
  s->ctx = ctx;
  s->device = device;
  if (pk_status st = ctx->exec->stream_create(device, &s->handle)) return st;
  *out = s.release();
  return PK_OK;
}
pk_status g_stream_destroy(pk_be_stream *s) {
  std::unique_ptr<pk_be_stream> owned(s);
  return s->ctx->exec->stream_destroy(s->handle);
}
pk_status g_stream_synchronize(pk_be_stream *s) {
  if (pk_status st = sticky_check(s)) return st;
  return s->sticky.record(s->ctx->exec->stream_synchronize(s->handle));
}
pk_status g_stream_query(pk_be_stream *s) {
  if (pk_status st = sticky_check(s)) return st;
  return s->sticky.record(s->ctx->exec->stream_query(s->handle));
}
pk_status g_event_create(pk_be_context *ctx, uint32_t device, pk_be_event **out) {
  auto e = std::unique_ptr<pk_be_event>(new (std::nothrow) pk_be_event);
  if (!e) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "%s: no memory for an event", pk::gpu::backend_name());
  e->ctx = ctx;
  if (pk_status st = ctx->exec->event_create(device, &e->handle)) return st;
  *out = e.release();
  return PK_OK;
}
pk_status g_event_destroy(pk_be_event *e) {
  std::unique_ptr<pk_be_event> owned(e);
  return e->ctx->exec->event_destroy(e->handle);
}
pk_status g_event_record(pk_be_event *e, pk_be_stream *s) {
  if (pk_status st = sticky_check(s)) return st;
  e->recorded_on = s;
  return s->sticky.record(s->ctx->exec->event_record(e->handle, s->handle));
}
pk_status g_stream_wait_event(pk_be_stream *s, pk_be_event *e) {
  if (pk_status st = sticky_check(s)) return st;
  return s->sticky.record(s->ctx->exec->stream_wait_event(s->handle, e->handle));
}
pk_status g_event_synchronize(pk_be_event *e) {
  if (e->recorded_on && e->recorded_on->sticky.failed()) return sticky_check(e->recorded_on);
  return e->ctx->exec->event_synchronize(e->handle);
}
pk_status g_event_query(pk_be_event *e) {
  if (e->recorded_on && e->recorded_on->sticky.failed()) return sticky_check(e->recorded_on);
  return e->ctx->exec->event_query(e->handle);
}

// --- ops -------------------------------------------------------------------------------------------------------

pk_status g_op_query(pk_be_context *, const pk_op_query *q, pk_op_support *out) {
  if (q == nullptr || out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "op_query: NULL argument");
  pk_op_support s;
  PK_STRUCT_INIT(s);
  pk::codegen::Region r;
  std::string why;
  if (pk::codegen::region_for_query(*q, r, why)) {
    s.supported = 1;
    s.native = 1;
    std::snprintf(s.reason, sizeof s.reason, "LLVM-generated kernel (any strides)");
  } else {
    std::snprintf(s.reason, sizeof s.reason, "%s", why.c_str());
  }
  pk::kit::copy_out(s, out);
  return PK_OK;
}

pk_status g_op_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                      const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  if (pk_status st = sticky_check(stream)) return st;
  try {
    pk_status st = PK_OK;
    std::shared_ptr<const PlannedOp> plan =
        planned_op(stream, op_id, inputs, num_inputs, outputs, num_outputs, attrs, &st);
    if (plan == nullptr) return stream->sticky.record(st);  // PK_UNIMPLEMENTED leaves the stream usable
    std::vector<pk_tensor> tensors(inputs, inputs + num_inputs);
    tensors.insert(tensors.end(), outputs, outputs + num_outputs);
    // Launches of one plan run in order on the stream (pad: the fill, then the copy over it).
    for (size_t i = 0; i < plan->launches.size(); ++i) {
      if (pk_status st2 = run(stream, plan->launches[i], plan->kernels[i], tensors.data()))
        return stream->sticky.record(st2);
    }
    return PK_OK;
  } catch (const std::bad_alloc &) {
    return stream->sticky.record(fail(PK_ERROR_OUT_OF_MEMORY, op_id, -1, "%s: out of memory", pk::gpu::backend_name()));
  }
}

// --- fusion ---------------------------------------------------------------------------------------------------

pk_status g_fusion_offer(pk_be_context *ctx, uint32_t device, const pk_subgraph *graph, pk_fusion_claim *claim,
                         pk_be_kernel **out) {
  if (graph == nullptr || claim == nullptr || out == nullptr || claim->num_nodes != graph->num_nodes) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "fusion_offer: bad arguments");
  }
  *out = nullptr;
  try {
    std::vector<uint8_t> claimed(graph->num_nodes, 0);
    auto k = std::make_unique<pk_be_kernel>();
    int64_t shape[PK_MAX_RANK];
    int32_t ndim = 0;
    std::string why;
    if (!pk::codegen::region_from_subgraph(*graph, claimed.data(), k->spec.region, shape, ndim, why)) {
      return PK_OK;  // declining is always legal
    }
    k->device = device;
    k->shape.assign(shape, shape + ndim);
    // Compile now: a kernel that cannot be built is declined here rather than failing at run time.
    if (kernel_for(ctx, device, k->spec, &k->dense) != PK_OK) return PK_OK;
    std::copy(claimed.begin(), claimed.end(), claim->claimed);
    *out = k.release();
    return PK_OK;
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "%s: fusion_offer: out of memory", pk::gpu::backend_name());
  }
}

pk_status g_kernel_launch(pk_be_stream *stream, pk_be_kernel *kernel, const pk_tensor *args, uint32_t num_args) {
  if (pk_status st = sticky_check(stream)) return st;
  if (kernel == nullptr)
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "%s: kernel_launch: NULL kernel", pk::gpu::backend_name());
  try {
    pk::codegen::PlannedLaunch l;
    l.region = kernel->spec.region;
    l.shape = kernel->shape;
    l.red = l.region.reduces() ? 1 : 0;
    std::string mismatch;
    if (!pk::codegen::fused_args_match(l.region, l.shape, l.red, args, num_args, mismatch)) {
      return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "%s: kernel_launch: %s", pk::gpu::backend_name(), mismatch.c_str());
    }
    const int32_t rank = static_cast<int32_t>(l.shape.size());
    for (uint32_t k = 0; k < num_args; ++k) l.args.push_back(pk::codegen::PlanArg{k, 0, strides_over(args[k], rank)});
    void *k = kernel->dense;
    if (strided_launch(l)) {
      if (pk_status st = kernel_of(stream->ctx, stream->device, l, &k)) return stream->sticky.record(st);
    }
    return stream->sticky.record(run(stream, l, k, args));
  } catch (const std::bad_alloc &) {
    return stream->sticky.record(fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "%s: out of memory", pk::gpu::backend_name()));
  }
}

pk_status g_kernel_destroy(pk_be_context *, pk_be_kernel *kernel) {
  // The compiled code stays in the context's cache for the next region with the same key.
  std::unique_ptr<pk_be_kernel> owned(kernel);
  return PK_OK;
}

pk_backend_api make_api() {
  // Every slot behind the kit's catch-all: an exception escaping a slot becomes PK_ERROR_INTERNAL (a void slot
  // swallows it) instead of unwinding into the host's C frames and terminating it.
  pk_backend_api a = pk::kit::api_table();  // get_last_error: the kit's
  a.open = pk::kit::guarded<g_open>;
  a.close = pk::kit::guarded<g_close>;
  a.get_info = pk::kit::guarded<g_get_info>;
  a.device_count = pk::kit::guarded<g_device_count>;
  a.device_get_props = pk::kit::guarded<g_device_get_props>;
  a.mem_alloc = pk::kit::guarded<g_mem_alloc>;
  a.mem_free = pk::kit::guarded<g_mem_free>;
  a.copy_host_to_device = pk::kit::guarded<g_copy_h2d>;
  a.copy_device_to_host = pk::kit::guarded<g_copy_d2h>;
  a.copy_device_to_device = pk::kit::guarded<g_copy_d2d>;
  a.stream_create = pk::kit::guarded<g_stream_create>;
  a.stream_destroy = pk::kit::guarded<g_stream_destroy>;
  a.stream_synchronize = pk::kit::guarded<g_stream_synchronize>;
  a.stream_query = pk::kit::guarded<g_stream_query>;
  a.event_create = pk::kit::guarded<g_event_create>;
  a.event_destroy = pk::kit::guarded<g_event_destroy>;
  a.event_record = pk::kit::guarded<g_event_record>;
  a.stream_wait_event = pk::kit::guarded<g_stream_wait_event>;
  a.event_synchronize = pk::kit::guarded<g_event_synchronize>;
  a.event_query = pk::kit::guarded<g_event_query>;
  a.op_query = pk::kit::guarded<g_op_query>;
  a.op_launch = pk::kit::guarded<g_op_launch>;
  a.fusion_offer = pk::kit::guarded<g_fusion_offer>;
  a.kernel_launch = pk::kit::guarded<g_kernel_launch>;
  a.kernel_destroy = pk::kit::guarded<g_kernel_destroy>;
  pk::gpu::install_native_collectives(a);
  return a;
}

const pk_backend_api k_api = make_api();

}  // namespace

namespace pk::gpu {
Executor &executor_of(pk_be_context *ctx) {
  return *ctx->exec;
}
pk_be_context *context_of(pk_be_stream *stream) {
  return stream->ctx;
}
uint32_t device_of(pk_be_stream *stream) {
  return stream->device;
}
void *handle_of(pk_be_stream *stream) {
  return stream->handle;
}
pk_status stream_check(pk_be_stream *stream) {
  return sticky_check(stream);
}
pk_status stream_record(pk_be_stream *stream, pk_status status) {
  return stream->sticky.record(status);
}
}  // namespace pk::gpu

extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                                const pk_backend_api **out_api, char *message,
                                                size_t message_capacity) {
  return pk::kit::negotiate(&k_api, pk::gpu::backend_name(), host, chosen_version, out_api, message, message_capacity);
}
