// gpu_backend.hpp — what the cuda and cuda-emu plugins share: the ABI glue (gpu_backend.cpp) is written once
// against this Executor interface; cuda_driver.cpp implements it with the CUDA driver API (PTX kernels), and
// emu_executor.cpp with host memory and the JIT-compiled grid emulator of the very same kernels.
#pragma once

#include <cstdint>
#include <memory>

#include "primkit/codegen.hpp"
#include "primkit/primkit.h"

namespace pk::gpu {

// Every method returns PK_OK or an error recorded with kit::fail (message naming the driver call and its code).
class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char *name() const = 0;
  // Number of usable devices; 0 (recording why with kit::fail) when there is no driver or device.
  virtual uint32_t device_count() = 0;
  virtual pk_status device_props(uint32_t device, pk_device_props &out) = 0;

  virtual pk_status alloc(uint32_t device, uint64_t bytes, void **out) = 0;
  virtual pk_status free(uint32_t device, void *ptr) = 0;

  virtual pk_status stream_create(uint32_t device, void **out) = 0;
  virtual pk_status stream_destroy(void *stream) = 0;
  virtual pk_status stream_synchronize(void *stream) = 0;
  virtual pk_status stream_query(void *stream) = 0;  // PK_OK, PK_NOT_READY or an error
  virtual pk_status copy_h2d(void *stream, void *dst, const void *src, uint64_t bytes) = 0;
  virtual pk_status copy_d2h(void *stream, void *dst, const void *src, uint64_t bytes) = 0;
  virtual pk_status copy_d2d(void *stream, void *dst, const void *src, uint64_t bytes) = 0;

  virtual pk_status event_create(uint32_t device, void **out) = 0;
  virtual pk_status event_destroy(void *event) = 0;
  virtual pk_status event_record(void *event, void *stream) = 0;
  virtual pk_status stream_wait_event(void *stream, void *event) = 0;
  virtual pk_status event_synchronize(void *event) = 0;
  virtual pk_status event_query(void *event) = 0;

  // Compiles and loads the kernel of a spec for a device. The handle stays valid until the executor dies; the
  // caller caches it per (device, spec key).
  virtual pk_status load_kernel(uint32_t device, const codegen::KernelSpec &spec, void **kernel) = 0;
  // Enqueues a kernel over n work items with parameters in the codegen kernel ABI.
  virtual pk_status launch(void *stream, void *kernel, void **params, int64_t n) = 0;
  // Makes the device current on the calling thread, for a library that takes the driver's current context (NCCL).
  virtual pk_status make_current(uint32_t device) {
    (void)device;
    return PK_OK;
  }
};

// Each plugin defines these three.
std::unique_ptr<Executor> make_executor();
const char *backend_name();  // "cuda" or "cuda-emu"
// Fills the native collective slots of the table (cuda: NCCL, nccl_collectives.cpp), or leaves them NULL.
void install_native_collectives(pk_backend_api &api);

// What the native collectives need of gpu_backend.cpp's handles.
Executor &executor_of(pk_be_context *ctx);
pk_be_context *context_of(pk_be_stream *stream);
uint32_t device_of(pk_be_stream *stream);
void *handle_of(pk_be_stream *stream);  // the executor's stream (a CUstream on cuda)
// PK_OK, or PK_ERROR_STREAM_FAILED once work on the stream failed; and making `status` the stream's sticky error.
pk_status stream_check(pk_be_stream *stream);
pk_status stream_record(pk_be_stream *stream, pk_status status);

}  // namespace pk::gpu
