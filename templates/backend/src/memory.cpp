// memory.cpp — device memory and the copies between it and the host: mem_alloc, mem_free, copy_host_to_device,
// copy_device_to_host, copy_device_to_device.
//
// What you implement here: allocate and free with your driver (*out from mem_alloc is what tensors on the device
// carry in `data`), and enqueue the three copies on the stream as DMA. The simulated device keeps "device memory"
// in host RAM with a byte budget and copies inside the enqueueing call.
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backend.hpp"

namespace @BACKEND_NAME@_backend {

using pk::kit::fail;

pk_status backend_mem_alloc(pk_be_context *context, uint32_t, uint64_t bytes, void **out) {
  return pk::kit::catch_exceptions(PK_OP_NONE, "@BACKEND_NAME@: mem_alloc", [&]() -> pk_status {
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

void release_allocations(pk_be_context *context) {
  // TODO(vendor): free with your driver.
  for (const auto &allocation : context->allocations) std::free(allocation.first);
  context->allocations.clear();
}

// The simulated device runs a copy inside the enqueueing call. TODO(vendor): enqueue a DMA on the stream instead;
// the host keeps `src` alive until the stream passes the copy, and reads `dst` only after synchronizing. A copy
// that fails asynchronously makes the stream sticky: stream->sticky.record(status).
pk_status backend_copy_host_to_device(pk_be_stream *stream, void *dst, uint64_t dst_offset, const void *src,
                                      uint64_t bytes) {
  if (pk_status status = stream->sticky.check(kName)) return status;
  if (bytes) std::memcpy(static_cast<char *>(dst) + dst_offset, src, bytes);
  return PK_OK;
}

pk_status backend_copy_device_to_host(pk_be_stream *stream, void *dst, const void *src, uint64_t src_offset,
                                      uint64_t bytes) {
  if (pk_status status = stream->sticky.check(kName)) return status;
  if (bytes) std::memcpy(dst, static_cast<const char *>(src) + src_offset, bytes);
  return PK_OK;
}

pk_status backend_copy_device_to_device(pk_be_stream *stream, void *dst, uint64_t dst_offset, const void *src,
                                        uint64_t src_offset, uint64_t bytes) {
  if (pk_status status = stream->sticky.check(kName)) return status;
  if (bytes) std::memcpy(static_cast<char *>(dst) + dst_offset, static_cast<const char *>(src) + src_offset, bytes);
  return PK_OK;
}

}  // namespace @BACKEND_NAME@_backend
