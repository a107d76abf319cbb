// errors.cpp — the thread-local last error of libprimkit and the status names.
#include <cstdio>
#include <cstring>

#include "runtime_internal.hpp"

namespace pk::rt {
namespace {
thread_local pk_error_info t_last_error = {sizeof(pk_error_info), PK_OK, 0, PK_OP_NONE, -1, {0}};
}  // namespace

pk_status set_error(pk_status status, uint32_t op_id, int32_t arg_index, int32_t vendor_code, const char *fmt,
                    ...) {
  pk_error_info &e = t_last_error;
  e.struct_size = sizeof(pk_error_info);
  e.status = status;
  e.vendor_code = vendor_code;
  e.op_id = op_id;
  e.arg_index = arg_index;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(e.message, sizeof(e.message), fmt, ap);
  va_end(ap);
  return status;
}

pk_status set_error_from_diag(const pk::meta::Diag &diag, uint32_t op_id) {
  return set_error(diag.status == PK_OK ? PK_ERROR_INTERNAL : diag.status, op_id, diag.arg_index, 0, "%s",
                   diag.message[0] ? diag.message : "validation failed without a message");
}

pk_status forward_backend_error(const Backend &backend, pk_status status, uint32_t op_id, const char *what,
                                const char *who) {
  pk_error_info be;
  std::memset(&be, 0, sizeof(be));
  be.struct_size = sizeof(be);
  be.op_id = op_id;
  be.arg_index = -1;
  if (backend.api.get_last_error == nullptr || backend.api.get_last_error(backend.context, &be) != PK_OK) {
    std::snprintf(be.message, sizeof(be.message), "(the backend gave no details)");
  }
  be.message[sizeof(be.message) - 1] = '\0';
  // A status outside the ABI's set is the plugin breaking its contract; report it as such, keeping the code.
  pk_status reported = status;
  if (status < PK_OK || status > PK_ERROR_COMM_FAILED) reported = PK_ERROR_PLUGIN;
  return set_error(reported, op_id != PK_OP_NONE ? op_id : be.op_id, be.arg_index, be.vendor_code,
                   "%s: backend '%s' %s: %s%s", op_id != PK_OP_NONE ? pk::meta::op_name(op_id) : "runtime",
                   who ? who : backend.info.name, what, be.message,
                   reported != status ? " (the backend returned a status code outside the ABI)" : "");
}

void clear_error() {
  t_last_error.status = PK_OK;
  t_last_error.op_id = PK_OP_NONE;
  t_last_error.arg_index = -1;
  t_last_error.vendor_code = 0;
  t_last_error.message[0] = '\0';
}

const pk_error_info &last_error() { return t_last_error; }
}  // namespace pk::rt

extern "C" {

pk_status pk_get_last_error(pk_error_info *out) {
  if (out == nullptr || out->struct_size < offsetof(pk_error_info, message) + 1) return PK_ERROR_INVALID_ARGUMENT;
  const pk_error_info &e = pk::rt::last_error();
  size_t n = out->struct_size < sizeof(e) ? out->struct_size : sizeof(e);
  uint32_t size = out->struct_size;
  std::memcpy(out, &e, n);
  out->struct_size = size;
  reinterpret_cast<char *>(out)[n - 1] = '\0';  // the message is last: keep it terminated when truncated
  return PK_OK;
}

const char *pk_status_name(pk_status status) {
  switch (status) {
    case PK_OK: return "PK_OK";
    case PK_UNIMPLEMENTED: return "PK_UNIMPLEMENTED";
    case PK_ERROR_INVALID_ARGUMENT: return "PK_ERROR_INVALID_ARGUMENT";
    case PK_ERROR_OUT_OF_MEMORY: return "PK_ERROR_OUT_OF_MEMORY";
    case PK_ERROR_ABI_MISMATCH: return "PK_ERROR_ABI_MISMATCH";
    case PK_ERROR_NOT_FOUND: return "PK_ERROR_NOT_FOUND";
    case PK_ERROR_DEVICE: return "PK_ERROR_DEVICE";
    case PK_ERROR_STREAM_FAILED: return "PK_ERROR_STREAM_FAILED";
    case PK_ERROR_FALLBACK_FORBIDDEN: return "PK_ERROR_FALLBACK_FORBIDDEN";
    case PK_ERROR_PLUGIN: return "PK_ERROR_PLUGIN";
    case PK_ERROR_INTERNAL: return "PK_ERROR_INTERNAL";
    case PK_NOT_READY: return "PK_NOT_READY";
    case PK_ERROR_TIMEOUT: return "PK_ERROR_TIMEOUT";
    case PK_ERROR_COMM_FAILED: return "PK_ERROR_COMM_FAILED";
    default: return "PK_STATUS_UNKNOWN";
  }
}

uint32_t pk_runtime_abi_version(void) { return PK_ABI_VERSION; }
}
