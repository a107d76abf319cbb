// opencl_backend.cpp — the OpenCL reference backend's plugin entry: platform/device discovery through the ICD
// loader, cl_mem device memory, streams as in-order command queues, events as cl_event markers, the capability
// query and launches of kernels generated from the op table (cl_codegen) and built lazily (cl_programs), and the
// fusion hook that compiles elementwise chains into one kernel.
//
// Nothing here waits for the device after an op: the runtime calls stream_synchronize when it needs results.
// A failed enqueue (or a failure clFinish reports) makes its stream's error sticky, as the ABI requires.
//
// This file holds discovery, memory, streams, events, the capability query and the launch dispatch; the launches
// themselves are in cl_launch*.cpp and the fusion hook in cl_fusion.cpp, sharing cl_backend.hpp.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cl_backend.hpp"
#include "cl_codegen.hpp"
#include "cl_fft.hpp"
#include "cl_key.hpp"
#include "cl_programs.hpp"
#include "cl_util.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

using kit::fail;

namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

bool has_extension(const std::string &exts, const char *name) {
  size_t pos = 0;
  const size_t n = std::strlen(name);
  while ((pos = exts.find(name, pos)) != std::string::npos) {
    if ((pos == 0 || exts[pos - 1] == ' ') && (pos + n == exts.size() || exts[pos + n] == ' ')) return true;
    pos += n;
  }
  return false;
}

}  // namespace

pk_status sticky_check(pk_be_stream *s) {
  return s->sticky.check("opencl");
}

// Records an enqueue failure and makes it the stream's sticky error.
pk_status stream_fail(pk_be_stream *s, cl_int err, uint32_t op, const char *what) {
  pk_status st =
      cl_fail(status_of(err), err, op, "opencl: %s%s%s", op ? pk::meta::op_name(op) : "", op ? ": " : "", what);
  s->sticky.set(st);
  return st;
}

void log_line(pk_be_context *ctx, int level, const std::string &msg) {
  if (ctx && ctx->host && ctx->host->log) ctx->host->log(level, msg.c_str());
}

namespace {

// --- ABI slots --------------------------------------------------------------------------------------------------

// Runtimes created on several threads open this backend at once (the ABI allows opens of different contexts to
// overlap), and PoCL 3.1 does not survive concurrent discovery: clGetDeviceInfo(CL_DEVICE_NAME) crashed in strlen
// while other threads ran clGetPlatformIDs and clCreateContext. Opening and closing are rare and short, so they
// take turns in the process.
std::mutex &discovery_mutex() {
  static std::mutex mu;
  return mu;
}

pk_status ocl_open(const pk_host_services *host, pk_be_context **out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: open: out is NULL");
  auto ctx = std::unique_ptr<pk_be_context>(new (std::nothrow) pk_be_context);
  if (!ctx) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: open: no memory for the context");
  ctx->host = host;
  std::lock_guard<std::mutex> discovery(discovery_mutex());
  try {
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, nullptr, &np);
    // No platform is not a failure: the backend loads and reports zero devices (get_last_error says why).
    if (err != CL_SUCCESS || np == 0) {
      ctx->discovery_note = std::string("opencl: no OpenCL platform (clGetPlatformIDs: ") + cl_error_name(err) + ")";
    }
    std::vector<cl_platform_id> platforms(np);
    if (np) clGetPlatformIDs(np, platforms.data(), nullptr);
    for (cl_platform_id p : platforms) {
      cl_uint nd = 0;
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
      std::vector<cl_device_id> all(nd), usable;
      clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, all.data(), nullptr);
      for (cl_device_id d : all) {
        // Kernels are compiled at run time: a device without a compiler cannot run any.
        if (device_value<cl_bool>(d, CL_DEVICE_AVAILABLE) && device_value<cl_bool>(d, CL_DEVICE_COMPILER_AVAILABLE)) {
          usable.push_back(d);
        }
      }
      if (usable.empty()) continue;
      // One context per platform, so events and buffers are shared by all its devices.
      const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(p), 0};
      Context c(clCreateContext(props, static_cast<cl_uint>(usable.size()), usable.data(), nullptr, nullptr, &err));
      if (!c) {
        log_line(ctx.get(), 1, std::string("opencl: clCreateContext failed: ") + cl_error_name(err));
        continue;
      }
      const std::string pname = platform_string(p, CL_PLATFORM_NAME), pver = platform_string(p, CL_PLATFORM_VERSION);
      for (cl_device_id d : usable) {
        auto ds = std::make_unique<DeviceState>();
        ds->platform = p;
        ds->id = d;
        ds->context = c.get();
        ds->name = device_string(d, CL_DEVICE_NAME);
        ds->key = pname + '|' + pver + '|' + ds->name + '|' + device_string(d, CL_DRIVER_VERSION) + '|' +
                  device_string(d, CL_DEVICE_VERSION);
        const std::string exts = device_string(d, CL_DEVICE_EXTENSIONS);
        ds->caps.fp64 = has_extension(exts, "cl_khr_fp64");
        ds->caps.fp16 = has_extension(exts, "cl_khr_fp16");
        ds->memory = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
        ds->max_alloc = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
        ds->compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
        ds->alignment = std::max<cl_uint>(1, device_value<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
        const cl_device_fp_config fp = device_value<cl_device_fp_config>(d, CL_DEVICE_SINGLE_FP_CONFIG);
        ds->denormals = (fp & CL_FP_DENORM) != 0;
        ds->options = "-cl-std=CL1.2";
        // OpenCL allows 2.5 ulp for f32 division and 3 ulp for sqrt; the op table says correctly rounded.
        if (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ds->options += " -cl-fp32-correctly-rounded-divide-sqrt";
        ctx->devices.push_back(std::move(ds));
      }
      ctx->contexts.push_back(std::move(c));
    }
    if (ctx->devices.empty() && ctx->discovery_note.empty()) {
      ctx->discovery_note = "opencl: no available OpenCL device with a compiler";
    }
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: open: out of memory");
  }
  *out = ctx.release();
  return PK_OK;
}

void ocl_close(pk_be_context *ctx) {
  if (ctx == nullptr) return;
  std::lock_guard<std::mutex> discovery(discovery_mutex());  // releasing the contexts may end PoCL's devices
  for (cl_mem m : ctx->allocations) clReleaseMemObject(m);
  std::unique_ptr<pk_be_context> owned(ctx);
}

pk_status ocl_get_info(pk_be_context *, pk_backend_info *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: get_info: out is NULL");
  return kit::write_backend_info(out, "opencl", "PrimKit reference", 1);
}

pk_status ocl_device_count(pk_be_context *ctx, uint32_t *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: device_count: out is NULL");
  *out = static_cast<uint32_t>(ctx->devices.size());
  if (ctx->devices.empty()) fail(PK_OK, 0, -1, "%s", ctx->discovery_note.c_str());
  return PK_OK;
}

pk_status ocl_device_get_props(pk_be_context *ctx, uint32_t index, pk_device_props *out) {
  if (out == nullptr || index >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: no device %u", index);
  }
  const DeviceState &d = *ctx->devices[index];
  pk_device_props p;
  PK_STRUCT_INIT(p);
  std::snprintf(p.name, sizeof p.name, "%s", d.name.c_str());
  p.device_type = PK_DEVICE_OPENCL;
  p.device_id = static_cast<int32_t>(index);
  p.memory_bytes = d.memory;
  p.compute_units = d.compute_units;
  p.features = PK_DEVICE_FEATURE_ASYNC | PK_DEVICE_FEATURE_FUSION;
  // OpenCL's ULP table is the limit for the builtins; subnormals only where the device keeps them.
  p.float_policy = PK_FLOAT_FAST_MATH_TRANSCENDENTALS |
                   (d.denormals ? 0u : (PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS | PK_FLOAT_FLUSH_SUBNORMAL_INPUTS));
  for (int32_t dt = 0; dt < PK_DTYPE_COUNT; ++dt) {
    if (dtype_supported(dt, d.caps, nullptr)) p.dtype_mask |= 1u << dt;
  }
  p.max_allocation_bytes = d.max_alloc;
  p.alignment = d.alignment;
  kit::copy_out(p, out);
  return PK_OK;
}

pk_status ocl_mem_alloc(pk_be_context *ctx, uint32_t device, uint64_t bytes, void **out) {
  if (out == nullptr || bytes == 0 || device >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: mem_alloc: bad arguments (%llu bytes on device %u)",
                static_cast<unsigned long long>(bytes), device);
  }
  DeviceState &d = *ctx->devices[device];
  if (bytes > d.max_alloc) {
    // Checked here because some drivers accept the size and fail only at first use.
    pk_status st = fail(PK_ERROR_OUT_OF_MEMORY, 0, -1,
                        "opencl: mem_alloc: %llu bytes exceed the device's largest allocation of %llu bytes "
                        "(CL_DEVICE_MAX_MEM_ALLOC_SIZE): CL_INVALID_BUFFER_SIZE (%d)",
                        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(d.max_alloc),
                        static_cast<int>(CL_INVALID_BUFFER_SIZE));
    kit::last_error().vendor_code = CL_INVALID_BUFFER_SIZE;
    return st;
  }
  cl_int err = CL_SUCCESS;
  Mem m(clCreateBuffer(d.context, CL_MEM_READ_WRITE, static_cast<size_t>(bytes), nullptr, &err));
  if (!m) {
    return cl_fail(status_of(err), err, 0, "opencl: mem_alloc of %llu bytes: clCreateBuffer failed",
                   static_cast<unsigned long long>(bytes));
  }
  std::lock_guard<std::mutex> g(ctx->mu);
  try {
    ctx->allocations.insert(m.get());
  } catch (...) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: cannot track an allocation");
  }
  *out = m.release();
  return PK_OK;
}

pk_status ocl_mem_free(pk_be_context *ctx, uint32_t, void *ptr) {
  cl_mem m = static_cast<cl_mem>(ptr);
  std::lock_guard<std::mutex> g(ctx->mu);
  if (ctx->allocations.erase(m) == 0)
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: mem_free of an unknown buffer");
  clReleaseMemObject(m);
  return PK_OK;
}

pk_status ocl_copy_h2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  cl_int err = clEnqueueWriteBuffer(s->queue.get(), static_cast<cl_mem>(dst), CL_FALSE, dst_offset, bytes, src, 0,
                                    nullptr, nullptr);
  return err == CL_SUCCESS ? PK_OK : stream_fail(s, err, 0, "copy host to device: clEnqueueWriteBuffer failed");
}

pk_status ocl_copy_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t src_offset, uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  cl_int err = clEnqueueReadBuffer(s->queue.get(), static_cast<cl_mem>(const_cast<void *>(src)), CL_FALSE, src_offset,
                                   bytes, dst, 0, nullptr, nullptr);
  return err == CL_SUCCESS ? PK_OK : stream_fail(s, err, 0, "copy device to host: clEnqueueReadBuffer failed");
}

pk_status ocl_copy_d2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t src_offset,
                       uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes == 0) return PK_OK;
  cl_int err = clEnqueueCopyBuffer(s->queue.get(), static_cast<cl_mem>(const_cast<void *>(src)),
                                   static_cast<cl_mem>(dst), src_offset, dst_offset, bytes, 0, nullptr, nullptr);
  return err == CL_SUCCESS ? PK_OK : stream_fail(s, err, 0, "copy device to device: clEnqueueCopyBuffer failed");
}

pk_status ocl_stream_create(pk_be_context *ctx, uint32_t device, pk_be_stream **out) {
  if (out == nullptr || device >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: stream_create: no device %u", device);
  }
  auto s = std::unique_ptr<pk_be_stream>(new (std::nothrow) pk_be_stream);
  if (!s) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: no memory for a stream");
  s->ctx = ctx;
  s->dev = ctx->devices[device].get();
  cl_int err = CL_SUCCESS;
  s->queue = Queue(clCreateCommandQueue(s->dev->context, s->dev->id, 0, &err));  // in order, no profiling
  if (!s->queue) return cl_fail(status_of(err), err, 0, "opencl: stream_create: clCreateCommandQueue failed");
  *out = s.release();
  return PK_OK;
}

pk_status ocl_stream_destroy(pk_be_stream *s) {
  std::unique_ptr<pk_be_stream> owned(s);
  if (s && s->queue) clFinish(s->queue.get());
  return PK_OK;
}

pk_status ocl_stream_synchronize(pk_be_stream *s) {
  cl_int err = clFinish(s->queue.get());
  if (err != CL_SUCCESS && !s->sticky.failed()) stream_fail(s, err, 0, "stream_synchronize: clFinish failed");
  return sticky_check(s);
}

pk_status ocl_stream_query(pk_be_stream *s) {
  if (pk_status st = sticky_check(s)) return st;
  Event ev;
  cl_int err = clEnqueueMarkerWithWaitList(s->queue.get(), 0, nullptr, ev.out());
  if (err == CL_SUCCESS) err = clFlush(s->queue.get());
  cl_int status = CL_COMPLETE;
  if (err == CL_SUCCESS) {
    err = clGetEventInfo(ev.get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  }
  if (err != CL_SUCCESS) return stream_fail(s, err, 0, "stream_query failed");
  if (status < 0) return stream_fail(s, status, 0, "earlier work on the stream failed");
  return status == CL_COMPLETE ? PK_OK : PK_NOT_READY;
}

pk_status ocl_event_create(pk_be_context *ctx, uint32_t device, pk_be_event **out) {
  if (out == nullptr || device >= ctx->devices.size()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: event_create: no device %u", device);
  }
  auto e = std::unique_ptr<pk_be_event>(new (std::nothrow) pk_be_event);
  if (!e) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: no memory for an event");
  e->dev = ctx->devices[device].get();
  *out = e.release();
  return PK_OK;
}

pk_status ocl_event_destroy(pk_be_event *e) {
  std::unique_ptr<pk_be_event> owned(e);
  return PK_OK;
}

pk_status ocl_event_record(pk_be_event *e, pk_be_stream *s) {
  if (pk_status st = sticky_check(s)) return st;
  cl_int err = clEnqueueMarkerWithWaitList(s->queue.get(), 0, nullptr, e->event.out());
  // Flushed so that event_query on another thread sees progress without anyone else flushing this queue.
  if (err == CL_SUCCESS) err = clFlush(s->queue.get());
  if (err != CL_SUCCESS) return stream_fail(s, err, 0, "event_record: clEnqueueMarkerWithWaitList failed");
  e->recorded_on = s;
  return PK_OK;
}

pk_status ocl_stream_wait_event(pk_be_stream *s, pk_be_event *e) {
  if (pk_status st = sticky_check(s)) return st;
  if (!e->event) return PK_OK;  // never recorded: nothing to wait for
  cl_event ev = e->event.get();
  cl_int err;
  if (e->dev->context == s->dev->context) {
    err = clEnqueueBarrierWithWaitList(s->queue.get(), 1, &ev, nullptr);
  } else {
    // Another platform's event cannot enter this queue's wait list: wait on the host instead.
    err = clWaitForEvents(1, &ev);
  }
  return err == CL_SUCCESS ? PK_OK : stream_fail(s, err, 0, "stream_wait_event failed");
}

pk_status event_status(pk_be_event *e, bool block) {
  if (!e->event) return PK_OK;
  cl_event ev = e->event.get();
  cl_int status = CL_COMPLETE;
  cl_int err = block ? clWaitForEvents(1, &ev) : CL_SUCCESS;
  if (err == CL_SUCCESS || err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
    err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  }
  if (err != CL_SUCCESS) return cl_fail(status_of(err), err, 0, "opencl: event status unavailable");
  if (status < 0) {
    return cl_fail(PK_ERROR_STREAM_FAILED, status, 0, "opencl: the recording stream failed before the event");
  }
  if (e->recorded_on && e->recorded_on->sticky.failed()) return sticky_check(e->recorded_on);
  return status == CL_COMPLETE ? PK_OK : PK_NOT_READY;
}

pk_status ocl_event_synchronize(pk_be_event *e) {
  return event_status(e, true);
}
pk_status ocl_event_query(pk_be_event *e) {
  return event_status(e, false);
}

// Dtype ids of a query's or launch's tensors; false if one is no PrimKit dtype.
bool dtype_ids(const pk_tensor *ts, uint32_t n, int32_t *out) {
  for (uint32_t i = 0; i < n; ++i) {
    out[i] = kit::dtype_id(ts[i].dtype);
    if (out[i] < 0) return false;
  }
  return true;
}

// A coverage query (no output descriptors) still needs output dtypes to classify: derive them from the op's
// dtype rules and the inputs (an attribute-given dtype is read from attrs when present, else taken as the key
// input's dtype, or f32 for ops without inputs).
uint32_t coverage_output_dtypes(const pk::meta::OpInfo &op, const int32_t *in_dt, uint32_t nin, const void *attrs,
                                int32_t *out_dt) {
  auto var_dtype = [&](int32_t var) {
    for (uint32_t i = 0; i < nin && i < op.num_inputs; ++i) {
      if (op.inputs[i].type_var == var) return in_dt[i];
    }
    return nin > 0 ? in_dt[0] : static_cast<int32_t>(PK_DTYPE_F32);
  };
  for (uint32_t k = 0; k < op.num_outputs && k < 8; ++k) {
    const pk::meta::OutputInfo &o = op.outputs[k];
    switch (o.rule) {
      case pk::meta::DtypeRule::type_var:
        out_dt[k] = var_dtype(o.arg);
        break;
      case pk::meta::DtypeRule::fixed:
        out_dt[k] = o.arg;
        break;
      case pk::meta::DtypeRule::real_of:
        out_dt[k] = pk::meta::real_of(var_dtype(o.arg));
        break;
      case pk::meta::DtypeRule::complex_of:
        out_dt[k] = pk::meta::complex_of(var_dtype(o.arg));
        break;
      case pk::meta::DtypeRule::attr: {
        int32_t d = nin > 0 ? in_dt[0] : static_cast<int32_t>(PK_DTYPE_F32);
        if (attrs != nullptr) std::memcpy(&d, static_cast<const char *>(attrs) + op.attrs[o.arg].offset, sizeof d);
        out_dt[k] = d;
        break;
      }
    }
  }
  return op.num_outputs < 8 ? op.num_outputs : 8;
}

pk_status ocl_op_query(pk_be_context *ctx, const pk_op_query *q, pk_op_support *out) {
  if (q == nullptr || out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: op_query: NULL argument");
  pk_op_support s;
  PK_STRUCT_INIT(s);
  std::string why;
  int32_t in_dt[8], out_dt[8];
  if (q->device_index >= ctx->devices.size()) {
    why = "no such device";
  } else if (q->num_inputs > 8 || q->num_outputs > 8 || !dtype_ids(q->inputs, q->num_inputs, in_dt) ||
             !dtype_ids(q->outputs, q->num_outputs, out_dt)) {
    why = "unsupported arity or dtype";
  } else {
    uint32_t num_outputs = q->num_outputs;
    const pk::meta::OpInfo *op = pk::meta::find_op(q->op_id);
    if (num_outputs == 0 && op != nullptr && op->num_outputs > 0) {
      num_outputs = coverage_output_dtypes(*op, in_dt, q->num_inputs, q->attrs, out_dt);
    }
    const Path p =
        classify(*ctx->devices[q->device_index], q->op_id, in_dt, q->num_inputs, out_dt, num_outputs, q->attrs, &why);
    bool ok = p != Path::none;
    for (uint32_t i = 0; ok && i < q->num_inputs + q->num_outputs; ++i) {
      const pk_tensor &t = i < q->num_inputs ? q->inputs[i] : q->outputs[i - q->num_inputs];
      if (!aligned_offset(t)) {
        ok = false;
        why = "a byte_offset that is not a multiple of the element size";
      }
    }
    s.supported = ok ? 1 : 0;
    s.native = ok ? 1 : 0;
  }
  std::snprintf(s.reason, sizeof s.reason, "%s", why.c_str());
  kit::copy_out(s, out);
  return PK_OK;
}

pk_status ocl_op_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                        const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  if (pk_status st = sticky_check(stream)) return st;
  int32_t in_dt[8], out_dt[8];
  if (num_inputs > 8 || num_outputs > 8 || !dtype_ids(inputs, num_inputs, in_dt) ||
      !dtype_ids(outputs, num_outputs, out_dt)) {
    return fail(PK_UNIMPLEMENTED, op_id, -1, "opencl: %s: unsupported arity or dtype", pk::meta::op_name(op_id));
  }
  for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) {
    if (!aligned_offset(i < num_inputs ? inputs[i] : outputs[i - num_inputs])) {
      return fail(PK_UNIMPLEMENTED, op_id, static_cast<int32_t>(i),
                  "opencl: %s: a byte_offset that is not a multiple of the element size", pk::meta::op_name(op_id));
    }
  }
  try {
    // Fast path: an elementwise kernel built earlier means classify() said yes for exactly this key before
    // (classify builds the op's expression text, which costs microseconds).
    if (is_ew_id(op_id) && num_inputs >= 1 && num_inputs <= 3 && num_outputs == 1) {
      const uint64_t key = ew_key(op_id, in_dt, num_inputs, out_dt[0], ew_variant(op_id, out_dt[0], attrs));
      if (KernelSet *ks = find_kernels(*stream->dev, key)) {
        return launch_elementwise(stream, op_id, inputs, num_inputs, outputs, in_dt, out_dt[0], attrs, ks);
      }
    }
    std::string why;
    switch (classify(*stream->dev, op_id, in_dt, num_inputs, out_dt, num_outputs, attrs, &why)) {
      case Path::none:
        return fail(PK_UNIMPLEMENTED, op_id, -1, "opencl: %s: %s", pk::meta::op_name(op_id), why.c_str());
      case Path::elementwise:
        return launch_elementwise(stream, op_id, inputs, num_inputs, outputs, in_dt, out_dt[0], attrs);
      case Path::set:
        return launch_set(stream, op_id, outputs[0], out_dt[0], attrs);
      case Path::iota:
        return launch_iota(stream, outputs[0], out_dt[0], *static_cast<const pk_attrs_iota *>(attrs));
      case Path::reduction:
        return launch_reduction(stream, op_id, inputs[0], outputs[0], in_dt[0], attrs);
      case Path::argreduce:
        return launch_argreduce(stream, op_id, inputs[0], outputs[0], in_dt[0], attrs);
      case Path::matmul:
        return launch_matmul(stream, op_id, inputs[0], inputs[1], outputs[0], in_dt[0]);
      case Path::move:
        return launch_move_op(stream, op_id, inputs, num_inputs, outputs[0], attrs);
      case Path::take:
        return launch_take(stream, op_id, inputs[0], inputs[1], outputs[0], attrs);
      case Path::scatter:
        return launch_scatter(stream, op_id, inputs, outputs[0], attrs);
      case Path::index_put:
        return launch_index_put(stream, inputs, num_inputs, outputs[0], attrs);
      case Path::scan:
        return launch_scan(stream, op_id, inputs[0], outputs, num_outputs, attrs);
      case Path::sort:
        return launch_sort(stream, op_id, inputs[0], outputs, attrs);
      case Path::search:
        return launch_search(stream, inputs[0], inputs[1], outputs[0], attrs);
      case Path::var:
        return launch_var(stream, inputs[0], outputs[0], attrs);
      case Path::dot_general:
        return launch_dot_general(stream, inputs[0], inputs[1], outputs[0], attrs);
      case Path::conv:
        return launch_conv(stream, inputs[0], inputs[1], outputs[0], attrs);
      case Path::philox:
        return launch_philox(stream, op_id, outputs[0], attrs);
      case Path::fft:
        return launch_fft(stream, op_id, inputs[0], outputs[0], attrs);
    }
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, op_id, -1, "opencl: %s: out of host memory", pk::meta::op_name(op_id));
  }
  return fail(PK_ERROR_INTERNAL, op_id, -1, "opencl: unreachable");
}

pk_backend_api make_api() {
  // Every slot behind the kit's catch-all: an exception escaping a slot becomes PK_ERROR_INTERNAL (a void slot
  // swallows it) instead of unwinding into the host's C frames and terminating it.
  pk_backend_api a = kit::api_table();  // get_last_error: the kit's
  a.open = pk::kit::guarded<ocl_open>;
  a.close = pk::kit::guarded<ocl_close>;
  a.get_info = pk::kit::guarded<ocl_get_info>;
  a.device_count = pk::kit::guarded<ocl_device_count>;
  a.device_get_props = pk::kit::guarded<ocl_device_get_props>;
  a.mem_alloc = pk::kit::guarded<ocl_mem_alloc>;
  a.mem_free = pk::kit::guarded<ocl_mem_free>;
  a.copy_host_to_device = pk::kit::guarded<ocl_copy_h2d>;
  a.copy_device_to_host = pk::kit::guarded<ocl_copy_d2h>;
  a.copy_device_to_device = pk::kit::guarded<ocl_copy_d2d>;
  a.stream_create = pk::kit::guarded<ocl_stream_create>;
  a.stream_destroy = pk::kit::guarded<ocl_stream_destroy>;
  a.stream_synchronize = pk::kit::guarded<ocl_stream_synchronize>;
  a.stream_query = pk::kit::guarded<ocl_stream_query>;
  a.event_create = pk::kit::guarded<ocl_event_create>;
  a.event_destroy = pk::kit::guarded<ocl_event_destroy>;
  a.event_record = pk::kit::guarded<ocl_event_record>;
  a.stream_wait_event = pk::kit::guarded<ocl_stream_wait_event>;
  a.event_synchronize = pk::kit::guarded<ocl_event_synchronize>;
  a.event_query = pk::kit::guarded<ocl_event_query>;
  a.op_query = pk::kit::guarded<ocl_op_query>;
  a.op_launch = pk::kit::guarded<ocl_op_launch>;
  a.fusion_offer = pk::kit::guarded<ocl_fusion_offer>;
  a.kernel_launch = pk::kit::guarded<ocl_kernel_launch>;
  a.kernel_destroy = pk::kit::guarded<ocl_kernel_destroy>;
  return a;
}

const pk_backend_api k_api = make_api();

}  // namespace
}  // namespace pk::ocl

extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                                const pk_backend_api **out_api, char *message,
                                                size_t message_capacity) {
  return pk::kit::negotiate(&pk::ocl::k_api, "opencl", host, chosen_version, out_api, message, message_capacity);
}
