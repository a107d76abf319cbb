// throwing_backend.cpp — a C++ backend built with the backend kit whose op_launch throws. Its table puts every
// slot behind pk::kit::guarded, so the exception must reach the host as PK_ERROR_INTERNAL with its what() in
// the message, not as std::terminate in the host.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "primkit/backend_kit.hpp"

struct pk_be_context {
  int unused;
};
struct pk_be_stream {
  int unused;
};

namespace {

pk_be_context g_context;

pk_status t_open(const pk_host_services *, pk_be_context **out) {
  *out = &g_context;
  return PK_OK;
}
void t_close(pk_be_context *) {}
pk_status t_info(pk_be_context *, pk_backend_info *out) {
  std::snprintf(out->name, sizeof(out->name), "thrower");
  std::snprintf(out->vendor, sizeof(out->vendor), "PrimKit tests");
  return PK_OK;
}
pk_status t_error(pk_be_context *, pk_error_info *out) {
  return pk::kit::copy_last_error(out);
}
pk_status t_device_count(pk_be_context *, uint32_t *out) {
  *out = 1;
  return PK_OK;
}
pk_status t_props(pk_be_context *, uint32_t, pk_device_props *out) {
  std::snprintf(out->name, sizeof(out->name), "thrower device");
  out->device_type = PK_DEVICE_EXT;
  out->features = PK_DEVICE_FEATURE_UNIFIED_MEMORY;
  out->dtype_mask = 1u << PK_DTYPE_F32;
  out->alignment = 64;
  return PK_OK;
}
pk_status t_alloc(pk_be_context *, uint32_t, uint64_t bytes, void **out) {
  *out = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  return *out ? PK_OK : PK_ERROR_OUT_OF_MEMORY;
}
pk_status t_free(pk_be_context *, uint32_t, void *p) {
  std::free(p);
  return PK_OK;
}
pk_status t_stream_create(pk_be_context *, uint32_t, pk_be_stream **out) {
  *out = new pk_be_stream{};
  return PK_OK;
}
pk_status t_stream_destroy(pk_be_stream *s) {
  delete s;
  return PK_OK;
}
pk_status t_sync(pk_be_stream *) {
  return PK_OK;
}
pk_status t_query(pk_be_context *, const pk_op_query *, pk_op_support *out) {
  out->supported = 1;
  out->native = 1;
  return PK_OK;
}
pk_status t_launch(pk_be_stream *, uint32_t, const pk_tensor *, uint32_t, const pk_tensor *, uint32_t, const void *) {
  throw std::runtime_error("thrower: the kernel cache is corrupt");
}

pk_backend_api make_api() {
  pk_backend_api a;
  PK_STRUCT_INIT(a);
  a.abi_version = PK_ABI_VERSION;
  a.open = pk::kit::guarded<t_open>;
  a.close = pk::kit::guarded<t_close>;
  a.get_info = pk::kit::guarded<t_info>;
  a.get_last_error = pk::kit::guarded<t_error>;
  a.device_count = pk::kit::guarded<t_device_count>;
  a.device_get_props = pk::kit::guarded<t_props>;
  a.mem_alloc = pk::kit::guarded<t_alloc>;
  a.mem_free = pk::kit::guarded<t_free>;
  a.stream_create = pk::kit::guarded<t_stream_create>;
  a.stream_destroy = pk::kit::guarded<t_stream_destroy>;
  a.stream_synchronize = pk::kit::guarded<t_sync>;
  a.stream_query = pk::kit::guarded<t_sync>;
  a.op_query = pk::kit::guarded<t_query>;
  a.op_launch = pk::kit::guarded<t_launch>;
  return a;
}
const pk_backend_api k_api = make_api();

}  // namespace

extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen,
                                                const pk_backend_api **out_api, char *message, size_t capacity) {
  return pk::kit::negotiate(&k_api, "thrower", host, chosen, out_api, message, capacity);
}
