// backend.hpp — what the @BACKEND_NAME@ backend's files share: the ABI's opaque objects (context, stream, event),
// the simulated device's numbers, and the slot functions each file defines. The entry file
// (@BACKEND_NAME@_backend.cpp) puts the slots in the pk_backend_api table.
//
// One file per concern, each starting with what you implement there:
//   device.cpp   open/close, get_info, device_count, device_get_props
//   memory.cpp   mem_alloc, mem_free, the three copies
//   streams.cpp  streams and events (ordering, sticky errors)
//   ops.cpp      op_query and op_launch over the kernel table (kernels.hpp, kernels.cpp, kernel_*.cpp)
//   fusion.cpp   fusion_offer, kernel_launch, kernel_destroy (optional; NULL until you compile fused kernels)
//
// Rules the ABI sets for every slot (primkit.h, docs/abi.md):
//   - never throw, abort or exit: report errors with a status and pk::kit::fail (read back by get_last_error);
//   - the runtime validates every argument first, so a backend never re-checks shapes, dtypes or bounds;
//   - a status other than PK_OK or PK_UNIMPLEMENTED from an enqueue makes the stream fail for good ("sticky").
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "primkit/backend_kit.hpp"
#include "primkit/primkit.h"

// --- the ABI's opaque objects --------------------------------------------------------------------------------------

// Process-wide state of the backend, created by open() and released by close().
// TODO(vendor): hold your driver's handle here.
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
  pk::kit::StickyError sticky;  // the first failure of asynchronous work; every later call reports it
};

// A point in a stream.
// TODO(vendor): hold your driver's event/fence here.
struct pk_be_event {
  pk_status status = PK_OK;  // the recording stream's state when the event was reached
};

namespace @BACKEND_NAME@_backend {

// The name messages start with, and what get_info reports (`primkit list`, --backend NAME).
constexpr const char *kName = "@BACKEND_NAME@";

// TODO(vendor): your device's real numbers (the runtime and conformance read them; see pk_device_props).
constexpr uint32_t kDeviceCount = 1;
constexpr uint64_t kSimulatedMemoryBytes = 1ull << 30;
constexpr uint32_t kAlignment = 64;

// --- device.cpp
pk_status backend_open(const pk_host_services *host, pk_be_context **out);
void backend_close(pk_be_context *context);
pk_status backend_get_info(pk_be_context *context, pk_backend_info *out);
pk_status backend_device_count(pk_be_context *context, uint32_t *out);
pk_status backend_device_get_props(pk_be_context *context, uint32_t index, pk_device_props *out);

// --- memory.cpp
pk_status backend_mem_alloc(pk_be_context *context, uint32_t device, uint64_t bytes, void **out);
pk_status backend_mem_free(pk_be_context *context, uint32_t device, void *pointer);
// Frees what the host left allocated; close() calls it.
void release_allocations(pk_be_context *context);
pk_status backend_copy_host_to_device(pk_be_stream *stream, void *dst, uint64_t dst_offset, const void *src,
                                      uint64_t bytes);
pk_status backend_copy_device_to_host(pk_be_stream *stream, void *dst, const void *src, uint64_t src_offset,
                                      uint64_t bytes);
pk_status backend_copy_device_to_device(pk_be_stream *stream, void *dst, uint64_t dst_offset, const void *src,
                                        uint64_t src_offset, uint64_t bytes);

// --- streams.cpp
pk_status backend_stream_create(pk_be_context *context, uint32_t device, pk_be_stream **out);
pk_status backend_stream_destroy(pk_be_stream *stream);
pk_status backend_stream_synchronize(pk_be_stream *stream);
pk_status backend_stream_query(pk_be_stream *stream);
pk_status backend_event_create(pk_be_context *context, uint32_t device, pk_be_event **out);
pk_status backend_event_destroy(pk_be_event *event);
pk_status backend_event_record(pk_be_event *event, pk_be_stream *stream);
pk_status backend_stream_wait_event(pk_be_stream *stream, pk_be_event *event);
pk_status backend_event_synchronize(pk_be_event *event);
pk_status backend_event_query(pk_be_event *event);

// --- ops.cpp
pk_status backend_op_query(pk_be_context *context, const pk_op_query *query, pk_op_support *out);
pk_status backend_op_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                            const pk_tensor *outputs, uint32_t num_outputs, const void *attrs);

// --- fusion.cpp
// Fills the table's fusion slots, or leaves them NULL (no fusion: the runtime runs every node on its own).
void install_fusion(pk_backend_api &api);

}  // namespace @BACKEND_NAME@_backend
