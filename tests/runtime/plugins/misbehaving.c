/* misbehaving.c — plugins that do what a plugin must never do (abort, exit, hang, print to stdout), one per
 * compile definition. Loaded in-process they would take the host down; discovery must probe them in a child
 * process, list each with the reason and keep them out of the host. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "primkit/primkit.h"

struct pk_be_context {
  int unused;
};
static pk_be_context g_context;

#if defined(MIS_CHATTY)
/* A working (deviceless) backend, except that it prints to stdout when opened. When $PK_TEST_PROBE_LOG names
 * a file it appends "probe" or "host" to it on each open, so a test can count the child probes. */
static pk_status mis_open(const pk_host_services *h, pk_be_context **out) {
  const char *log = getenv("PK_TEST_PROBE_LOG");
  (void)h;
  printf("chatty: hello from open\n");
  fflush(stdout);
  if (log != NULL) {
    FILE *f = fopen(log, "a");
    if (f != NULL) {
      fprintf(f, "%s\n", getenv("PRIMKIT_PROBE_CHILD") ? "probe" : "host");
      fclose(f);
    }
  }
  *out = &g_context;
  return PK_OK;
}
#define MIS_NAME "chatty"
#elif defined(MIS_EXIT_OPEN)
static pk_status mis_open(const pk_host_services *h, pk_be_context **out) {
  (void)h;
  *out = &g_context;
  exit(0); /* "success", from the host's point of view, with nothing printed */
}
#define MIS_NAME "exit_open"
#elif defined(MIS_HANG_OPEN)
static pk_status mis_open(const pk_host_services *h, pk_be_context **out) {
  (void)h;
  *out = &g_context;
  for (;;) pause(); /* waits for a device that never answers */
  return PK_OK;
}
#define MIS_NAME "hang_open"
#elif defined(MIS_ABORT_ENTRY)
static pk_status mis_open(const pk_host_services *h, pk_be_context **out) {
  (void)h;
  *out = &g_context;
  return PK_OK;
}
#define MIS_NAME "abort_entry"
#else
#error "select a MIS_* variant"
#endif

static void mis_close(pk_be_context *c) {
  (void)c;
}
static pk_status mis_info(pk_be_context *c, pk_backend_info *out) {
  (void)c;
  snprintf(out->name, sizeof(out->name), "%s", MIS_NAME);
  snprintf(out->vendor, sizeof(out->vendor), "PrimKit tests");
  return PK_OK;
}
static pk_status mis_error(pk_be_context *c, pk_error_info *out) {
  (void)c;
  out->status = PK_ERROR_NOT_FOUND;
  snprintf(out->message, sizeof(out->message), "%s: a test plugin without devices", MIS_NAME);
  return PK_OK;
}
static pk_status mis_device_count(pk_be_context *c, uint32_t *out) {
  (void)c;
  *out = 0;
  return PK_OK;
}

static const pk_backend_api g_api = {.struct_size = sizeof(pk_backend_api),
                                     .abi_version = PK_ABI_VERSION,
                                     .open = mis_open,
                                     .close = mis_close,
                                     .get_info = mis_info,
                                     .get_last_error = mis_error,
                                     .device_count = mis_device_count};

PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  (void)message;
  (void)capacity;
#if defined(MIS_ABORT_ENTRY)
  fprintf(stderr, "abort_entry: giving up on this machine\n");
  abort();
#endif
  if (PK_VERSION_MAJOR(host->host_abi_version) != PK_ABI_VERSION_MAJOR) return PK_ERROR_ABI_MISMATCH;
  *chosen = PK_ABI_VERSION;
  *out_api = &g_api;
  return PK_OK;
}
