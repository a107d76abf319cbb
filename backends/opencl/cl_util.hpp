// cl_util.hpp — small OpenCL helpers of the OpenCL backend: RAII owners for cl_* objects, the names of OpenCL
// error codes (every message the backend reports carries one), and error recording into the backend kit's
// thread-local last error.
#pragma once

#include <CL/cl.h>

#include <cstdarg>
#include <cstdio>
#include <utility>

#include "primkit/backend_kit.hpp"

namespace pk::ocl {

// "CL_OUT_OF_RESOURCES" etc.; "CL_UNKNOWN_ERROR" for a code this header does not know.
const char *cl_error_name(cl_int err);

// Owns one reference of a cl_* object and releases it; move-only so a reference is never released twice.
template <class T, cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  Handle(Handle &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle &operator=(Handle &&o) noexcept {
    if (this != &o) reset(std::exchange(o.h_, nullptr));
    return *this;
  }
  ~Handle() { reset(); }
  void reset(T h = nullptr) {
    if (h_) Release(h_);
    h_ = h;
  }
  T get() const { return h_; }
  T release() { return std::exchange(h_, nullptr); }
  // For out-parameters of clEnqueue* (cl_event *): drops the current reference first.
  T *out() {
    reset();
    return &h_;
  }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};

using Context = Handle<cl_context, clReleaseContext>;
using Queue = Handle<cl_command_queue, clReleaseCommandQueue>;
using Program = Handle<cl_program, clReleaseProgram>;
using Kernel = Handle<cl_kernel, clReleaseKernel>;
using Mem = Handle<cl_mem, clReleaseMemObject>;
using Event = Handle<cl_event, clReleaseEvent>;

// Records an OpenCL failure as the thread's last error: "<what>: CL_NAME (code)", vendor_code = the CL code.
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
inline pk_status
cl_fail(pk_status status, cl_int err, uint32_t op_id, const char *fmt, ...) {
  char what[PK_MESSAGE_CAPACITY];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  pk_status st = kit::fail(status, op_id, -1, "%s: %s (%d)", what, cl_error_name(err), static_cast<int>(err));
  kit::last_error().vendor_code = err;
  return st;
}

// The status an OpenCL error code maps to.
inline pk_status status_of(cl_int err) {
  switch (err) {
    case CL_OUT_OF_HOST_MEMORY:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_INVALID_BUFFER_SIZE:
      return PK_ERROR_OUT_OF_MEMORY;
    default:
      return PK_ERROR_DEVICE;
  }
}

}  // namespace pk::ocl
