/* numbered_backend.c — a deviceless plugin that names each context it opens "numbered-<n>" (n counts opens in
 * the process). The runtime refuses a second backend of one name, so this is the one plugin a test can load
 * again and again into one runtime, growing its backend list while other threads use the runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "primkit/primkit.h"

struct pk_be_context {
  unsigned number;
};

static unsigned g_opens; /* atomic: loads may run on several threads (in several runtimes) */

static pk_status numbered_open(const pk_host_services *host, pk_be_context **out) {
  pk_be_context *ctx = (pk_be_context *)malloc(sizeof(pk_be_context));
  (void)host;
  if (ctx == NULL) return PK_ERROR_OUT_OF_MEMORY;
  ctx->number = __atomic_add_fetch(&g_opens, 1u, __ATOMIC_RELAXED);
  *out = ctx;
  return PK_OK;
}
static void numbered_close(pk_be_context *ctx) {
  free(ctx);
}
static pk_status numbered_get_info(pk_be_context *ctx, pk_backend_info *out) {
  snprintf(out->name, sizeof(out->name), "numbered-%u", ctx->number);
  snprintf(out->vendor, sizeof(out->vendor), "%s", "PrimKit tests");
  out->abi_version = PK_ABI_VERSION;
  return PK_OK;
}
static pk_status numbered_get_last_error(pk_be_context *ctx, pk_error_info *out) {
  (void)ctx;
  out->status = PK_ERROR_NOT_FOUND;
  out->vendor_code = 0;
  out->op_id = PK_OP_NONE;
  out->arg_index = -1;
  snprintf(out->message, sizeof(out->message), "%s", "numbered: a test plugin without devices");
  return PK_OK;
}
static pk_status numbered_device_count(pk_be_context *ctx, uint32_t *out) {
  (void)ctx;
  *out = 0;
  return PK_OK;
}

/* Initialized at compile time, as entry may run on several threads at once; the slots not listed are NULL (no
 * devices, so nothing else to do). */
static const pk_backend_api g_api = {.struct_size = sizeof(pk_backend_api),
                                     .abi_version = PK_ABI_VERSION,
                                     .open = numbered_open,
                                     .close = numbered_close,
                                     .get_info = numbered_get_info,
                                     .get_last_error = numbered_get_last_error,
                                     .device_count = numbered_device_count};

PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  if (PK_VERSION_MAJOR(host->host_abi_version) != PK_ABI_VERSION_MAJOR) {
    snprintf(message, capacity, "numbered speaks ABI major %d only", PK_ABI_VERSION_MAJOR);
    return PK_ERROR_ABI_MISMATCH;
  }
  *chosen = PK_ABI_VERSION;
  *out_api = &g_api;
  return PK_OK;
}
