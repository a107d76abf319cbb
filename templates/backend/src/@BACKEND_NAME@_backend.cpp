// @BACKEND_NAME@_backend.cpp — the @BACKEND_NAME@ PrimKit backend: ABI negotiation, metadata, device memory,
// streams, events, the capability query and op dispatch into the kernel table (kernels.cpp).
//
// It starts as a NULL backend on a SIMULATED device: "device memory" is host RAM that the runtime is told it may
// not touch (no unified memory), and a stream runs each piece of work inside the call that enqueues it. So memory,
// copies, streams, events and fallback all work from day one, and every op answers "not supported" until you add
// a kernel. Replace the simulation piece by piece with your driver; every place is marked TODO(vendor).
//
// Rules the ABI sets for every function below (primkit.h, docs/abi.md):
//   - never throw, abort or exit: report errors with a status and pk::kit::fail (read back by get_last_error);
//   - the runtime validates every argument first, so a backend never re-checks shapes, dtypes or bounds;
//   - a status other than PK_OK or PK_UNIMPLEMENTED from an enqueue makes the stream fail for good ("sticky").
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

#include "kernels.hpp"

// --- the ABI's opaque objects --------------------------------------------------------------------------------------

// Process-wide state of the backend, created by open() and released by close().
struct pk_be_context {
  const pk_host_services *host = nullptr;
  std::mutex mutex;                                  // guards the fields below; allocation is called from any thread
  std::unordered_map<void *, uint64_t> allocations;  // live allocations, freed in close() if the host forgot them
  uint64_t bytes_in_use = 0;
};

// An in-order queue of work on one device.
// TODO(vendor): hold your driver's command queue here.
struct pk_be_stream {
  pk_be_context *context = nullptr;
  uint32_t device = 0;
  pk_status sticky = PK_OK;  // the first failure of asynchronous work; every later call reports it
  char sticky_message[PK_MESSAGE_CAPACITY] = {0};
};

// A point in a stream.
// TODO(vendor): hold your driver's event/fence here.
struct pk_be_event {
  pk_status status = PK_OK;  // the recording stream's state when the event was reached
};

namespace @BACKEND_NAME@_backend {
namespace {

using pk::kit::fail;

// TODO(vendor): your device's real numbers (the runtime and conformance read them; see pk_device_props).
constexpr uint32_t kDeviceCount = 1;
constexpr uint64_t kSimulatedMemoryBytes = 1ull << 30;
constexpr uint32_t kAlignment = 64;

// Runs an ABI entry point's body so that no C++ exception ever crosses the plugin boundary.
template <class Body>
pk_status guarded(const char *what, Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, -1, "@BACKEND_NAME@: %s: out of host memory", what);
  } catch (...) {
    return fail(PK_ERROR_INTERNAL, PK_OP_NONE, -1, "@BACKEND_NAME@: %s: unexpected exception", what);
  }
}

// Copies a struct the backend filled into the host's, respecting the host's struct_size (an older host has a
// shorter struct; it must only receive the fields it knows).
template <class T>
void copy_out(const T &value, T *out) {
  const uint32_t n = std::min<uint32_t>(out->struct_size, static_cast<uint32_t>(sizeof value));
  std::memcpy(out, &value, n);
  out->struct_size = n;
}

pk_status sticky_check(pk_be_stream *stream) {
  if (stream->sticky == PK_OK) return PK_OK;
  return fail(PK_ERROR_STREAM_FAILED, PK_OP_NONE, -1, "@BACKEND_NAME@: the stream failed earlier: %s",
              stream->sticky_message);
}

void make_sticky(pk_be_stream *stream, pk_status status) {
  stream->sticky = status;
  std::snprintf(stream->sticky_message, sizeof stream->sticky_message, "%s", pk::kit::last_error().message);
}

// --- lifecycle and metadata ------------------------------------------------------------------------------------

pk_status backend_open(const pk_host_services *host, pk_be_context **out) {
  return guarded("open", [&]() -> pk_status {
    // TODO(vendor): open your driver here; fail with PK_ERROR_DEVICE and the driver's code if it is missing.
    auto context = std::make_unique<pk_be_context>();
    context->host = host;
    *out = context.release();  // the host hands it back to close()
    return PK_OK;
  });
}

void backend_close(pk_be_context *context) {
  std::unique_ptr<pk_be_context> owned(context);
  for (const auto &allocation : owned->allocations) std::free(allocation.first);
  // TODO(vendor): close your driver here.
}

pk_status backend_get_info(pk_be_context *, pk_backend_info *out) {
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  std::snprintf(info.name, sizeof info.name, "@BACKEND_NAME@");  // what `primkit list` and --backend NAME use
  // TODO(vendor): your company's name.
  std::snprintf(info.vendor, sizeof info.vendor, "@BACKEND_NAME@ (vendor not set)");
  // The version comes from project(VERSION) in CMakeLists.txt.
  info.version_major = @BACKEND_NAME_UPPER@_VERSION_MAJOR;
  info.version_minor = @BACKEND_NAME_UPPER@_VERSION_MINOR;
  info.version_patch = @BACKEND_NAME_UPPER@_VERSION_PATCH;
  info.abi_version = PK_ABI_VERSION;
  copy_out(info, out);
  return PK_OK;
}

pk_status backend_get_last_error(pk_be_context *, pk_error_info *out) {
  return pk::kit::copy_last_error(out);
}

pk_status backend_device_count(pk_be_context *, uint32_t *out) {
  // TODO(vendor): ask your driver; zero devices is legal (say why through fail() so `primkit list` can show it).
  *out = kDeviceCount;
  return PK_OK;
}

pk_status backend_device_get_props(pk_be_context *, uint32_t index, pk_device_props *out) {
  pk_device_props props;
  PK_STRUCT_INIT(props);
  std::snprintf(props.name, sizeof props.name, "@BACKEND_NAME@ simulated device %u", index);
  props.device_type = PK_DEVICE_EXT;  // DLPack's code for a vendor accelerator
  props.device_id = static_cast<int32_t>(index);
  props.memory_bytes = kSimulatedMemoryBytes;
  props.compute_units = 1;
  // No PK_DEVICE_FEATURE_UNIFIED_MEMORY: the runtime never dereferences this device's pointers, it copies through
  // the stream — exactly what it must do for a real accelerator. No FUSION: fusion_offer is NULL.
  props.features = 0;
  // TODO(vendor): declare what your hardware really does (PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS for FTZ, ...):
  // conformance accepts flushed subnormals only from a device that declares them.
  props.float_policy = 0;
  props.dtype_mask = (1u << PK_DTYPE_COUNT) - 1;  // the simulated memory stores any dtype
  props.max_allocation_bytes = kSimulatedMemoryBytes;
  props.alignment = kAlignment;
  copy_out(props, out);
  return PK_OK;
}

// --- memory ----------------------------------------------------------------------------------------------------

pk_status backend_mem_alloc(pk_be_context *context, uint32_t, uint64_t bytes, void **out) {
  return guarded("mem_alloc", [&]() -> pk_status {
    std::lock_guard<std::mutex> lock(context->mutex);
    if (bytes > kSimulatedMemoryBytes - context->bytes_in_use) {
      return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, -1,
                  "@BACKEND_NAME@: cannot allocate %llu bytes: %llu of %llu bytes of device memory are in use",
                  static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(context->bytes_in_use),
                  static_cast<unsigned long long>(kSimulatedMemoryBytes));
    }
    // TODO(vendor): allocate device memory with your driver; *out is what tensors on this device carry in `data`.
    const uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void *memory = std::aligned_alloc(kAlignment, rounded);
    if (memory == nullptr) {
      return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, -1, "@BACKEND_NAME@: host allocation of %llu bytes failed",
                  static_cast<unsigned long long>(bytes));
    }
    try {
      context->allocations.emplace(memory, bytes);
    } catch (...) {
      std::free(memory);
      throw;
    }
    context->bytes_in_use += bytes;
    *out = memory;
    return PK_OK;
  });
}

pk_status backend_mem_free(pk_be_context *context, uint32_t, void *pointer) {
  std::lock_guard<std::mutex> lock(context->mutex);
  auto it = context->allocations.find(pointer);
  if (it == context->allocations.end()) {
    return fail(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, "@BACKEND_NAME@: mem_free of a pointer it never allocated");
  }
  context->bytes_in_use -= it->second;
  context->allocations.erase(it);
  std::free(pointer);  // TODO(vendor): free with your driver.
  return PK_OK;
}

// The simulated device runs a copy inside the enqueueing call. TODO(vendor): enqueue a DMA on the stream instead;
// the host keeps `src` alive until the stream passes the copy, and reads `dst` only after synchronizing.
pk_status backend_copy_host_to_device(pk_be_stream *stream, void *dst, uint64_t dst_offset, const void *src,
                                      uint64_t bytes) {
  if (pk_status status = sticky_check(stream)) return status;
  if (bytes) std::memcpy(static_cast<char *>(dst) + dst_offset, src, bytes);
  return PK_OK;
}

pk_status backend_copy_device_to_host(pk_be_stream *stream, void *dst, const void *src, uint64_t src_offset,
                                      uint64_t bytes) {
  if (pk_status status = sticky_check(stream)) return status;
  if (bytes) std::memcpy(dst, static_cast<const char *>(src) + src_offset, bytes);
  return PK_OK;
}

pk_status backend_copy_device_to_device(pk_be_stream *stream, void *dst, uint64_t dst_offset, const void *src,
                                        uint64_t src_offset, uint64_t bytes) {
  if (pk_status status = sticky_check(stream)) return status;
  if (bytes) std::memcpy(static_cast<char *>(dst) + dst_offset, static_cast<const char *>(src) + src_offset, bytes);
  return PK_OK;
}

// --- streams and events ------------------------------------------------------------------------------------------

pk_status backend_stream_create(pk_be_context *context, uint32_t device, pk_be_stream **out) {
  return guarded("stream_create", [&]() -> pk_status {
    // TODO(vendor): create your driver's queue on `device`.
    auto stream = std::make_unique<pk_be_stream>();
    stream->context = context;
    stream->device = device;
    *out = stream.release();  // the host hands it back to stream_destroy()
    return PK_OK;
  });
}

pk_status backend_stream_destroy(pk_be_stream *stream) {
  std::unique_ptr<pk_be_stream> owned(stream);  // TODO(vendor): drain and destroy your queue.
  return PK_OK;
}

// Work already ran inside the enqueueing calls, so waiting means reporting the sticky state.
// TODO(vendor): wait for your queue to drain, then report its failure if any.
pk_status backend_stream_synchronize(pk_be_stream *stream) {
  return sticky_check(stream);
}
pk_status backend_stream_query(pk_be_stream *stream) {
  return sticky_check(stream);
}

pk_status backend_event_create(pk_be_context *, uint32_t, pk_be_event **out) {
  return guarded("event_create", [&]() -> pk_status {
    auto event = std::make_unique<pk_be_event>();
    *out = event.release();  // the host hands it back to event_destroy()
    return PK_OK;
  });
}

pk_status backend_event_destroy(pk_be_event *event) {
  std::unique_ptr<pk_be_event> owned(event);
  return PK_OK;
}

// TODO(vendor): record a fence of your queue; waiting and querying then ask the driver about that fence.
pk_status backend_event_record(pk_be_event *event, pk_be_stream *stream) {
  event->status = stream->sticky;
  return PK_OK;
}

pk_status backend_stream_wait_event(pk_be_stream *stream, pk_be_event *) {
  return sticky_check(stream);
}

pk_status backend_event_synchronize(pk_be_event *event) {
  if (event->status != PK_OK) {
    return fail(PK_ERROR_STREAM_FAILED, PK_OP_NONE, -1, "@BACKEND_NAME@: the stream that recorded the event failed");
  }
  return PK_OK;
}

pk_status backend_event_query(pk_be_event *event) {
  return backend_event_synchronize(event);
}

// --- ops ---------------------------------------------------------------------------------------------------------

// Kernels are chosen by the dtype of input 0 (output 0 for ops without inputs); the runtime has already checked
// that the other operands agree with it as the op table demands.
int32_t key_dtype(const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs, uint32_t num_outputs) {
  if (num_inputs > 0 && inputs != nullptr) return pk::kit::dtype_id(inputs[0].dtype);
  if (num_outputs > 0 && outputs != nullptr) return pk::kit::dtype_id(outputs[0].dtype);
  return -1;
}

bool kernel_accepts(const Kernel &kernel, int32_t dtype) {
  return dtype >= 0 && (kernel.dtype_mask & dtype_bit(dtype));
}

// The capability query: the runtime asks it before every fallback decision and conformance asks it to tell
// NOT_SUPPORTED from FAIL. It must agree with op_launch. With NULL shapes it is a coverage question ("do you run
// this op for these dtypes at all"); with shapes it is about exactly that launch — answer "no" for shapes your
// hardware cannot do and the runtime falls back for just those launches.
pk_status backend_op_query(pk_be_context *, const pk_op_query *query, pk_op_support *out) {
  pk_op_support support;
  PK_STRUCT_INIT(support);
  const Kernel *kernel = find_kernel(query->op_id);
  const int32_t dtype = key_dtype(query->inputs, query->num_inputs, query->outputs, query->num_outputs);
  if (kernel == nullptr) {
    std::snprintf(support.reason, sizeof support.reason, "@BACKEND_NAME@ has no kernel for op id %u yet", query->op_id);
  } else if (!kernel_accepts(*kernel, dtype)) {
    std::snprintf(support.reason, sizeof support.reason, "@BACKEND_NAME@ runs op id %u, but not for dtype id %d",
                  query->op_id, dtype);
  } else {
    support.supported = 1;
    support.native = 1;
    std::snprintf(support.reason, sizeof support.reason, "native @BACKEND_NAME@ kernel");
  }
  copy_out(support, out);
  return PK_OK;
}

pk_status backend_op_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                            const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  if (pk_status status = sticky_check(stream)) return status;
  const Kernel *kernel = find_kernel(op_id);
  if (kernel == nullptr || !kernel_accepts(*kernel, key_dtype(inputs, num_inputs, outputs, num_outputs))) {
    // Declining writes nothing and leaves the stream usable: the runtime falls back (or, strict, reports it).
    return fail(PK_UNIMPLEMENTED, op_id, -1, "@BACKEND_NAME@: no kernel for op id %u and these dtypes", op_id);
  }
  const Launch launch{op_id, inputs, num_inputs, outputs, num_outputs, attrs};
  const pk_status status = guarded("op_launch", [&]() -> pk_status { return kernel->run(launch); });
  if (status != PK_OK && status != PK_UNIMPLEMENTED) make_sticky(stream, status);
  return status;
}

pk_backend_api make_api() {
  pk_backend_api api;
  PK_STRUCT_INIT(api);
  api.abi_version = PK_ABI_VERSION;
  api.open = pk::kit::guarded<backend_open>;
  api.close = pk::kit::guarded<backend_close>;
  api.get_info = pk::kit::guarded<backend_get_info>;
  api.get_last_error = pk::kit::guarded<backend_get_last_error>;
  api.device_count = pk::kit::guarded<backend_device_count>;
  api.device_get_props = pk::kit::guarded<backend_device_get_props>;
  api.mem_alloc = pk::kit::guarded<backend_mem_alloc>;
  api.mem_free = pk::kit::guarded<backend_mem_free>;
  api.copy_host_to_device = pk::kit::guarded<backend_copy_host_to_device>;
  api.copy_device_to_host = pk::kit::guarded<backend_copy_device_to_host>;
  api.copy_device_to_device = pk::kit::guarded<backend_copy_device_to_device>;
  api.stream_create = pk::kit::guarded<backend_stream_create>;
  api.stream_destroy = pk::kit::guarded<backend_stream_destroy>;
  api.stream_synchronize = pk::kit::guarded<backend_stream_synchronize>;
  api.stream_query = pk::kit::guarded<backend_stream_query>;
  api.event_create = pk::kit::guarded<backend_event_create>;
  api.event_destroy = pk::kit::guarded<backend_event_destroy>;
  api.event_record = pk::kit::guarded<backend_event_record>;
  api.stream_wait_event = pk::kit::guarded<backend_stream_wait_event>;
  api.event_synchronize = pk::kit::guarded<backend_event_synchronize>;
  api.event_query = pk::kit::guarded<backend_event_query>;
  api.op_query = pk::kit::guarded<backend_op_query>;
  api.op_launch = pk::kit::guarded<backend_op_launch>;
  // TODO(vendor): fusion_offer / kernel_launch / kernel_destroy stay NULL until you compile fused kernels; a NULL
  // slot means "not implemented" and the runtime runs every node on its own.
  return api;
}

const pk_backend_api kApi = make_api();

}  // namespace
}  // namespace @BACKEND_NAME@_backend

// The one exported symbol. The host says the newest ABI it speaks; this plugin answers with the version it
// chooses (the older of the two) and its table. A host of another major is refused with a reason, never a crash.
extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                                const pk_backend_api **out_api, char *message,
                                                size_t message_capacity) {
  if (host == nullptr || chosen_version == nullptr || out_api == nullptr) return PK_ERROR_INVALID_ARGUMENT;
  if (PK_VERSION_MAJOR(host->host_abi_version) != PK_ABI_VERSION_MAJOR) {
    if (message != nullptr && message_capacity > 0) {
      std::snprintf(message, message_capacity, "@BACKEND_NAME@ was built for PrimKit ABI %u.x; the host speaks %u.%u",
                    PK_ABI_VERSION_MAJOR, PK_VERSION_MAJOR(host->host_abi_version),
                    PK_VERSION_MINOR(host->host_abi_version));
    }
    return PK_ERROR_ABI_MISMATCH;
  }
  *chosen_version = std::min<uint32_t>(PK_ABI_VERSION, host->host_abi_version);
  *out_api = &@BACKEND_NAME@_backend::kApi;
  return PK_OK;
}
