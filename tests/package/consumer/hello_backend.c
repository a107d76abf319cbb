/* The smallest legal backend: it negotiates, names itself and has no devices yet. */
#include <stdio.h>
#include <string.h>

#include "primkit/primkit.h"

struct pk_be_context {
  int unused;
};
static struct pk_be_context g_ctx;
static pk_status hello_open(const pk_host_services *h, pk_be_context **out) {
  (void)h;
  *out = &g_ctx;
  return PK_OK;
}
static void hello_close(pk_be_context *c) { (void)c; }
static pk_status hello_info(pk_be_context *c, pk_backend_info *out) {
  (void)c;
  snprintf(out->name, sizeof(out->name), "hello");
  snprintf(out->vendor, sizeof(out->vendor), "Consumer Inc.");
  out->version_major = 1;
  out->abi_version = PK_ABI_VERSION;
  return PK_OK;
}
static pk_status hello_error(pk_be_context *c, pk_error_info *out) {
  (void)c;
  out->message[0] = '\0';
  return PK_OK;
}
static pk_status hello_count(pk_be_context *c, uint32_t *n) {
  (void)c;
  *n = 0;
  return PK_OK;
}
static pk_backend_api g_api;
PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out,
                                     char *msg, size_t cap) {
  (void)host;
  (void)msg;
  (void)cap;
  memset(&g_api, 0, sizeof(g_api));
  g_api.struct_size = sizeof(g_api);
  g_api.abi_version = PK_ABI_VERSION;
  g_api.open = hello_open;
  g_api.close = hello_close;
  g_api.get_info = hello_info;
  g_api.get_last_error = hello_error;
  g_api.device_count = hello_count;
  *chosen = PK_ABI_VERSION;
  *out = &g_api;
  return PK_OK;
}
