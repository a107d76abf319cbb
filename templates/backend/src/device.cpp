// device.cpp — the backend's lifecycle and what it says about itself: open/close, get_info, device_count and
// device_get_props.
//
// What you implement here: open and close your driver, count your devices, and describe each one truthfully
// (memory, alignment, features, float_policy, storable dtypes): the runtime decides copies and fallback from these
// numbers, and conformance judges results against what the device declares.
#include <cstdio>
#include <memory>

#include "backend.hpp"

namespace @BACKEND_NAME@_backend {

pk_status backend_open(const pk_host_services *host, pk_be_context **out) {
  return pk::kit::catch_exceptions(PK_OP_NONE, "@BACKEND_NAME@: open", [&]() -> pk_status {
    // TODO(vendor): open your driver here; fail with PK_ERROR_DEVICE and the driver's code if it is missing.
    auto context = std::make_unique<pk_be_context>();
    context->host = host;
    *out = context.release();  // the host hands it back to close()
    return PK_OK;
  });
}

void backend_close(pk_be_context *context) {
  std::unique_ptr<pk_be_context> owned(context);
  release_allocations(context);
  // TODO(vendor): close your driver here.
}

pk_status backend_get_info(pk_be_context *, pk_backend_info *out) {
  // TODO(vendor): your company's name. The version comes from project(VERSION) in CMakeLists.txt.
  return pk::kit::write_backend_info(out, kName, "@BACKEND_NAME@ (vendor not set)", @BACKEND_NAME_UPPER@_VERSION_MAJOR,
                                     @BACKEND_NAME_UPPER@_VERSION_MINOR, @BACKEND_NAME_UPPER@_VERSION_PATCH);
}

pk_status backend_device_count(pk_be_context *, uint32_t *out) {
  // TODO(vendor): ask your driver; zero devices is legal (say why through fail() so `primkit list` can show it).
  *out = kDeviceCount;
  return PK_OK;
}

pk_status backend_device_get_props(pk_be_context *, uint32_t index, pk_device_props *out) {
  pk_device_props props;
  PK_STRUCT_INIT(props);
  // TODO(vendor): your device's name as the driver reports it.
  std::snprintf(props.name, sizeof props.name, "@BACKEND_NAME@ simulated device %u", index);
  props.device_type = PK_DEVICE_EXT;  // DLPack's code for a vendor accelerator
  props.device_id = static_cast<int32_t>(index);
  props.memory_bytes = kSimulatedMemoryBytes;
  props.compute_units = 1;
  // No PK_DEVICE_FEATURE_UNIFIED_MEMORY: the runtime never dereferences this device's pointers, it copies through
  // the stream — exactly what it must do for a real accelerator. No FUSION: the fusion slots are NULL (fusion.cpp).
  props.features = 0;
  // TODO(vendor): declare what your hardware really does (PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS for FTZ, ...):
  // conformance accepts flushed subnormals only from a device that declares them.
  props.float_policy = 0;
  props.dtype_mask = (1u << PK_DTYPE_COUNT) - 1;  // the simulated memory stores any dtype
  props.max_allocation_bytes = kSimulatedMemoryBytes;
  props.alignment = kAlignment;
  pk::kit::copy_out(props, out);  // respects the host's struct_size
  return PK_OK;
}

}  // namespace @BACKEND_NAME@_backend
