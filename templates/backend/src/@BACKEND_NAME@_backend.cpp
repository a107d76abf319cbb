// @BACKEND_NAME@_backend.cpp — the @BACKEND_NAME@ PrimKit backend's entry point: the pk_backend_api table and the
// one exported symbol, pk_backend_entry. The slots themselves live one file per concern (see backend.hpp).
//
// It starts as a NULL backend on a SIMULATED device: "device memory" is host RAM that the runtime is told it may
// not touch (no unified memory), and a stream runs each piece of work inside the call that enqueues it. So memory,
// copies, streams, events and fallback all work from day one, and every op answers "not supported" until you add
// a kernel. Replace the simulation piece by piece with your driver; every place is marked TODO(vendor).
//
// What you implement here: usually nothing. TODO(vendor): add a slot to the table only when you implement one that
// is still NULL (the native collectives of ABI 1.2, say); a NULL slot means "not implemented".
#include "backend.hpp"

namespace @BACKEND_NAME@_backend {
namespace {

using pk::kit::guarded;

// Every slot sits behind pk::kit::guarded<fn>: a C++ exception that still escapes a slot becomes
// PK_ERROR_INTERNAL instead of unwinding into the host's C frames. get_last_error is the kit's own.
// TODO(vendor): functions your users need beyond the ABI table (a clock setting, a profiler hook, ...), each
// named "@BACKEND_NAME@_<what>" and documented with its C type; applications find them with
// pk_backend_get_proc_address(backend, "@BACKEND_NAME@_<what>") and cast. Keep each extension's type stable:
// it is your ABI. This example reports the simulated device's memory size: uint64_t (*)(void).
uint64_t backend_simulated_memory_bytes() noexcept { return kSimulatedMemoryBytes; }
const pk::kit::Extension kExtensions[] = {
    {"@BACKEND_NAME@_simulated_memory_bytes", pk::kit::as_proc(&backend_simulated_memory_bytes)},
};
pk_proc backend_get_proc_address(pk_be_context *, const char *name) {
  return pk::kit::find_extension(kExtensions, name);
}

pk_backend_api make_api() {
  pk_backend_api api = pk::kit::api_table();
  api.open = guarded<backend_open>;
  api.close = guarded<backend_close>;
  api.get_info = guarded<backend_get_info>;
  api.device_count = guarded<backend_device_count>;
  api.device_get_props = guarded<backend_device_get_props>;
  api.mem_alloc = guarded<backend_mem_alloc>;
  api.mem_free = guarded<backend_mem_free>;
  api.copy_host_to_device = guarded<backend_copy_host_to_device>;
  api.copy_device_to_host = guarded<backend_copy_device_to_host>;
  api.copy_device_to_device = guarded<backend_copy_device_to_device>;
  api.stream_create = guarded<backend_stream_create>;
  api.stream_destroy = guarded<backend_stream_destroy>;
  api.stream_synchronize = guarded<backend_stream_synchronize>;
  api.stream_query = guarded<backend_stream_query>;
  api.event_create = guarded<backend_event_create>;
  api.event_destroy = guarded<backend_event_destroy>;
  api.event_record = guarded<backend_event_record>;
  api.stream_wait_event = guarded<backend_stream_wait_event>;
  api.event_synchronize = guarded<backend_event_synchronize>;
  api.event_query = guarded<backend_event_query>;
  api.op_query = guarded<backend_op_query>;
  api.op_launch = guarded<backend_op_launch>;
  install_fusion(api);  // fusion.cpp: NULL slots until you compile fused kernels
  api.get_proc_address = backend_get_proc_address;  // vendor extensions: see kExtensions
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
  return pk::kit::negotiate(&@BACKEND_NAME@_backend::kApi, @BACKEND_NAME@_backend::kName, host, chosen_version, out_api,
                            message, message_capacity);
}
