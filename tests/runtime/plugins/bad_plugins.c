/* bad_plugins.c — plugins that break the loading contract in one way each, selected by a compile definition.
 * The runtime must refuse each with a clear message and keep running. */
#include <stdio.h>
#include <string.h>

#include "primkit/primkit.h"

#if defined(BAD_NO_ENTRY)
/* A shared library that is not a PrimKit backend at all. */
PK_EXPORT int pk_not_the_entry(void) { return 42; }

#elif defined(BAD_NEWER_MAJOR)
/* Built for ABI 2.x: it refuses a 1.x host, as the contract asks. */
PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  (void)host;
  (void)chosen;
  (void)out_api;
  snprintf(message, capacity, "this plugin needs ABI 2.0 or newer");
  return PK_ERROR_ABI_MISMATCH;
}

#elif defined(BAD_WRONG_CHOICE)
/* Claims to have chosen 2.0 although the host offered 1.x: a broken negotiation the host must catch. */
static pk_backend_api g_api;
PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  (void)host;
  (void)message;
  (void)capacity;
  g_api.struct_size = sizeof(g_api);
  *chosen = PK_MAKE_VERSION(2, 0);
  *out_api = &g_api;
  return PK_OK;
}

#elif defined(BAD_NULL_REQUIRED)
/* Negotiates fine but leaves the required open slot NULL. */
static pk_backend_api g_api;
PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  (void)host;
  (void)message;
  (void)capacity;
  memset(&g_api, 0, sizeof(g_api));
  g_api.struct_size = sizeof(g_api);
  g_api.abi_version = PK_ABI_VERSION;
  *chosen = PK_ABI_VERSION;
  *out_api = &g_api;
  return PK_OK;
}

#elif defined(BAD_OPEN_FAILS)
/* Its device is missing: open fails with a device error and a message that must reach the user. On the way it
 * logs through the host a warning and an error (test_hooks.cpp checks where they go and at which level). */
struct pk_be_context {
  int unused;
};
static pk_status bad_open(const pk_host_services *h, pk_be_context **out) {
  (void)out;
  if (h != NULL && h->log != NULL) {
    h->log(PK_LOG_WARNING, "broken: looking for the device");
    h->log(PK_LOG_ERROR, "broken: the device is missing");
  }
  return PK_ERROR_DEVICE;
}
static void bad_close(pk_be_context *c) { (void)c; }
static pk_status bad_info(pk_be_context *c, pk_backend_info *out) {
  (void)c;
  snprintf(out->name, sizeof(out->name), "broken");
  return PK_OK;
}
static pk_status bad_error(pk_be_context *c, pk_error_info *out) {
  (void)c;
  out->vendor_code = -19;
  snprintf(out->message, sizeof(out->message), "no such device: /dev/acme0");
  return PK_OK;
}
static pk_backend_api g_api;
PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  (void)host;
  (void)message;
  (void)capacity;
  memset(&g_api, 0, sizeof(g_api));
  g_api.struct_size = sizeof(g_api);
  g_api.abi_version = PK_ABI_VERSION;
  g_api.open = bad_open;
  g_api.close = bad_close;
  g_api.get_info = bad_info;
  g_api.get_last_error = bad_error;
  *chosen = PK_ABI_VERSION;
  *out_api = &g_api;
  return PK_OK;
}
#else
#error "select a BAD_* variant"
#endif
