/* faulty_backend.c — a tiny backend in plain C99 that misbehaves on purpose, to prove the conformance runner
 * survives it: `neg` (f32) is correct, `abs` dereferences NULL in op_launch, `floor` never returns and `ceil`
 * calls exit(). Built with FAULTY_ZERO_DEVICES it reports no device (like a GPU backend on a machine without
 * one) and explains why through get_last_error. Device memory is host memory (unified). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "primkit/primkit.h"

struct pk_be_context {
  int open;
};
struct pk_be_stream {
  int unused;
};
struct pk_be_event {
  int unused;
};

static struct pk_be_context g_context;
static struct pk_be_stream g_stream;
static struct pk_be_event g_event;
static char g_message[PK_MESSAGE_CAPACITY];

static pk_status be_open(const pk_host_services *host, pk_be_context **out) {
  (void)host;
  g_context.open = 1;
  *out = &g_context;
  return PK_OK;
}
static void be_close(pk_be_context *ctx) { ctx->open = 0; }
static pk_status be_get_info(pk_be_context *ctx, pk_backend_info *out) {
  (void)ctx;
#ifdef FAULTY_ZERO_DEVICES
  snprintf(out->name, sizeof(out->name), "%s", "faulty_nodev");
#else
  snprintf(out->name, sizeof(out->name), "%s", "faulty");
#endif
  snprintf(out->vendor, sizeof(out->vendor), "%s", "PrimKit tests");
  out->version_major = 0;
  out->version_minor = 1;
  out->version_patch = 0;
  out->abi_version = PK_ABI_VERSION;
  return PK_OK;
}
static pk_status be_get_last_error(pk_be_context *ctx, pk_error_info *out) {
  (void)ctx;
  memcpy(out->message, g_message, sizeof(out->message));
  out->status = PK_ERROR_DEVICE;
  return PK_OK;
}
static pk_status be_device_count(pk_be_context *ctx, uint32_t *out) {
  (void)ctx;
#ifdef FAULTY_ZERO_DEVICES
  snprintf(g_message, sizeof(g_message), "%s", "no accelerator driver found (faulty test backend)");
  *out = 0;
#else
  *out = 1;
#endif
  return PK_OK;
}
static pk_status be_device_get_props(pk_be_context *ctx, uint32_t index, pk_device_props *out) {
  (void)ctx;
  (void)index;
  snprintf(out->name, sizeof(out->name), "%s", "faulty test device");
  out->device_type = PK_DEVICE_CPU;
  out->memory_bytes = 1u << 30;
  out->compute_units = 1;
  out->features = PK_DEVICE_FEATURE_UNIFIED_MEMORY;
  out->dtype_mask = 1u << PK_DTYPE_F32;
  out->max_allocation_bytes = 1u << 30;
  out->alignment = 64;
  return PK_OK;
}
static pk_status be_mem_alloc(pk_be_context *ctx, uint32_t device, uint64_t bytes, void **out) {
  (void)ctx;
  (void)device;
  *out = malloc((size_t)bytes);
  return *out ? PK_OK : PK_ERROR_OUT_OF_MEMORY;
}
static pk_status be_mem_free(pk_be_context *ctx, uint32_t device, void *ptr) {
  (void)ctx;
  (void)device;
  free(ptr);
  return PK_OK;
}
static pk_status be_h2d(pk_be_stream *s, void *dst, uint64_t off, const void *src, uint64_t bytes) {
  (void)s;
  memcpy((char *)dst + off, src, (size_t)bytes);
  return PK_OK;
}
static pk_status be_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t off, uint64_t bytes) {
  (void)s;
  memcpy(dst, (const char *)src + off, (size_t)bytes);
  return PK_OK;
}
static pk_status be_d2d(pk_be_stream *s, void *dst, uint64_t doff, const void *src, uint64_t soff, uint64_t bytes) {
  (void)s;
  memcpy((char *)dst + doff, (const char *)src + soff, (size_t)bytes);
  return PK_OK;
}
static pk_status be_stream_create(pk_be_context *ctx, uint32_t device, pk_be_stream **out) {
  (void)ctx;
  (void)device;
  *out = &g_stream;
  return PK_OK;
}
static pk_status be_stream_destroy(pk_be_stream *s) {
  (void)s;
  return PK_OK;
}
static pk_status be_stream_sync(pk_be_stream *s) {
  (void)s;
  return PK_OK;
}
static pk_status be_event_create(pk_be_context *ctx, uint32_t device, pk_be_event **out) {
  (void)ctx;
  (void)device;
  *out = &g_event;
  return PK_OK;
}
static pk_status be_event_destroy(pk_be_event *e) {
  (void)e;
  return PK_OK;
}
static pk_status be_event_record(pk_be_event *e, pk_be_stream *s) {
  (void)e;
  (void)s;
  return PK_OK;
}
static pk_status be_wait(pk_be_stream *s, pk_be_event *e) {
  (void)s;
  (void)e;
  return PK_OK;
}
static pk_status be_event_sync(pk_be_event *e) {
  (void)e;
  return PK_OK;
}

static int handled(uint32_t op) { return op == PK_OP_NEG || op == PK_OP_ABS || op == PK_OP_FLOOR || op == PK_OP_CEIL; }
static int is_f32(const pk_tensor *t) { return t->dtype.code == PK_DTYPE_CODE_FLOAT && t->dtype.bits == 32; }

static pk_status be_op_query(pk_be_context *ctx, const pk_op_query *q, pk_op_support *out) {
  uint32_t i;
  int ok = handled(q->op_id);
  (void)ctx;
  for (i = 0; ok && i < q->num_inputs; ++i) ok = is_f32(&q->inputs[i]);
  out->supported = ok;
  out->native = ok;
  snprintf(out->reason, sizeof(out->reason), "%s", ok ? "native" : "faulty runs neg, abs, floor and ceil on f32 only");
  return PK_OK;
}

/* Element i (row-major) of a strided f32 tensor. */
static float *at(const pk_tensor *t, int64_t i) {
  int64_t off = 0, d;
  char *base = (char *)t->data + t->byte_offset;
  for (d = t->ndim - 1; d >= 0; --d) {
    int64_t n = t->shape[d], k = i % n, stride = 1, e;
    i /= n;
    if (t->strides) {
      stride = t->strides[d];
    } else {
      for (e = d + 1; e < t->ndim; ++e) stride *= t->shape[e];
    }
    off += k * stride;
  }
  return (float *)(base + off * 4);
}

static pk_status be_op_launch(pk_be_stream *s, uint32_t op, const pk_tensor *in, uint32_t nin, const pk_tensor *out,
                              uint32_t nout, const void *attrs) {
  int64_t i, n = 1, d;
  (void)s;
  (void)nin;
  (void)nout;
  (void)attrs;
  if (!handled(op) || !is_f32(&in[0])) return PK_UNIMPLEMENTED;
  if (op == PK_OP_ABS) {
    volatile int *nowhere = NULL;
    *nowhere = 1; /* the planted crash */
  }
  if (op == PK_OP_FLOOR) {
    for (;;) sleep(1); /* the planted hang */
  }
  if (op == PK_OP_CEIL) exit(7); /* the planted exit */
  for (d = 0; d < out[0].ndim; ++d) n *= out[0].shape[d];
  for (i = 0; i < n; ++i) *at(&out[0], i) = -*at(&in[0], i);
  return PK_OK;
}

static pk_backend_api g_api;

PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  if (PK_VERSION_MAJOR(host->host_abi_version) != PK_ABI_VERSION_MAJOR) {
    snprintf(message, capacity, "faulty speaks ABI major %d only", PK_ABI_VERSION_MAJOR);
    return PK_ERROR_ABI_MISMATCH;
  }
  memset(&g_api, 0, sizeof(g_api));
  g_api.struct_size = sizeof(g_api);
  g_api.abi_version = PK_ABI_VERSION;
  g_api.open = be_open;
  g_api.close = be_close;
  g_api.get_info = be_get_info;
  g_api.get_last_error = be_get_last_error;
  g_api.device_count = be_device_count;
  g_api.device_get_props = be_device_get_props;
  g_api.mem_alloc = be_mem_alloc;
  g_api.mem_free = be_mem_free;
  g_api.copy_host_to_device = be_h2d;
  g_api.copy_device_to_host = be_d2h;
  g_api.copy_device_to_device = be_d2d;
  g_api.stream_create = be_stream_create;
  g_api.stream_destroy = be_stream_destroy;
  g_api.stream_synchronize = be_stream_sync;
  g_api.stream_query = be_stream_sync;
  g_api.event_create = be_event_create;
  g_api.event_destroy = be_event_destroy;
  g_api.event_record = be_event_record;
  g_api.stream_wait_event = be_wait;
  g_api.event_synchronize = be_event_sync;
  g_api.event_query = be_event_sync;
  g_api.op_query = be_op_query;
  g_api.op_launch = be_op_launch;
  *chosen = PK_ABI_VERSION;
  *out_api = &g_api;
  return PK_OK;
}
