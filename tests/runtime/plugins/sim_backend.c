/* sim_backend.c — a small simulated accelerator written in plain C99 against primkit.h, used by the runtime
 * tests. Its "device memory" is host memory the runtime may not touch directly (no unified memory), so every
 * fallback goes through copies. It runs add and mul for f32 only, claims chains of those two in the fusion
 * hook, and fails on purpose for sub (a device error with a vendor code) and div (a status outside the ABI). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "primkit/primkit.h"

struct pk_be_context {
  int open;
};
struct pk_be_stream {
  int failed;
};
struct pk_be_event {
  int recorded;
};
#define SIM_MAX_NODES 16
struct pk_be_kernel {
  uint32_t num_nodes;
  uint32_t op[SIM_MAX_NODES];
  /* operands: index into the argument list (< num_args) or num_args + k for the output of node k */
  uint32_t a[SIM_MAX_NODES], b[SIM_MAX_NODES];
  uint32_t num_inputs, num_outputs;
  uint32_t out_node[SIM_MAX_NODES]; /* which node produces kernel output j */
};

static struct pk_be_context g_context;
/* Per thread, as get_last_error reports the calling thread's error: the stress test fails calls on several
 * threads at once. (__thread: C99 has no thread storage class; GCC and clang accept this one in C99 mode.) */
static __thread pk_error_info g_error;

/* What the host holds right now (allocations, streams, events, fused kernels) and the bytes of every allocation
 * so far, so that the tests can see what the runtime frees and allocates (sim_live_objects below). Atomic: a
 * test may use the simulated device from several threads. */
enum { SIM_LIVE_MEMORY, SIM_LIVE_STREAMS, SIM_LIVE_EVENTS, SIM_LIVE_KERNELS, SIM_ALLOCATED_BYTES, SIM_COUNTERS };
static long long g_counters[SIM_COUNTERS];
static void count(int which, long long delta) {
  __atomic_fetch_add(&g_counters[which], delta, __ATOMIC_RELAXED);
}

/* Not part of the ABI: tests find it with dlsym on the loaded plugin. */
PK_EXPORT void sim_live_objects(long long out[SIM_COUNTERS]);
PK_EXPORT void sim_live_objects(long long out[SIM_COUNTERS]) {
  int i;
  for (i = 0; i < SIM_COUNTERS; ++i) out[i] = __atomic_load_n(&g_counters[i], __ATOMIC_RELAXED);
}

static pk_status fail(pk_status st, uint32_t op, int32_t vendor, const char *msg) {
  g_error.struct_size = sizeof(g_error);
  g_error.status = st;
  g_error.op_id = op;
  g_error.arg_index = -1;
  g_error.vendor_code = vendor;
  snprintf(g_error.message, sizeof(g_error.message), "%s", msg);
  return st;
}

/* One context for the process, shared by every runtime that loads the plugin (several may open and close it at
 * once): it counts the opens that are not closed yet. */
static pk_status sim_open(const pk_host_services *host, pk_be_context **out) {
  (void)host;
  __atomic_fetch_add(&g_context.open, 1, __ATOMIC_RELAXED);
  *out = &g_context;
  return PK_OK;
}
static void sim_close(pk_be_context *ctx) {
  __atomic_fetch_sub(&ctx->open, 1, __ATOMIC_RELAXED);
}
static pk_status sim_get_info(pk_be_context *ctx, pk_backend_info *out) {
  (void)ctx;
  snprintf(out->name, sizeof(out->name), "%s", "sim");
  snprintf(out->vendor, sizeof(out->vendor), "%s", "PrimKit tests");
  out->version_major = 0;
  out->version_minor = 1;
  out->version_patch = 0;
  out->abi_version = PK_ABI_VERSION;
  return PK_OK;
}
static pk_status sim_get_last_error(pk_be_context *ctx, pk_error_info *out) {
  (void)ctx;
  memcpy(out->message, g_error.message, sizeof(out->message));
  out->status = g_error.status;
  out->vendor_code = g_error.vendor_code;
  out->op_id = g_error.op_id;
  out->arg_index = g_error.arg_index;
  return PK_OK;
}
static pk_status sim_device_count(pk_be_context *ctx, uint32_t *out) {
  (void)ctx;
#ifdef SIM_BILLION_DEVICES
  *out = 0x7f7f7f7fu; /* garbage the host must refuse rather than allocate for */
#else
  *out = 1;
#endif
  return PK_OK;
}
static pk_status sim_device_get_props(pk_be_context *ctx, uint32_t index, pk_device_props *out) {
  (void)ctx;
  (void)index;
  snprintf(out->name, sizeof(out->name), "%s", "simulated accelerator");
  out->device_type = PK_DEVICE_EXT;
  out->memory_bytes = 1u << 30;
  out->compute_units = 1;
  out->features = PK_DEVICE_FEATURE_FUSION;
#ifdef SIM_ASYNC_NO_SYNC
  out->features |= PK_DEVICE_FEATURE_ASYNC; /* says it is asynchronous, yet has no stream_synchronize slot */
#endif
  out->dtype_mask = 1u << PK_DTYPE_F32;
  out->max_allocation_bytes = 1u << 30;
  out->alignment = 64;
  return PK_OK;
}
static pk_status sim_mem_alloc(pk_be_context *ctx, uint32_t device, uint64_t bytes, void **out) {
  (void)ctx;
  (void)device;
  *out = NULL;
  /* A device has its limits: refuse what exceeds max_allocation_bytes, as a driver would. */
  if (bytes > (1u << 30)) return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, 0, "sim: allocation larger than 1 GiB");
  *out = malloc((size_t)bytes);
  if (*out == NULL) return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, 0, "sim: out of memory");
  count(SIM_LIVE_MEMORY, 1);
  count(SIM_ALLOCATED_BYTES, (long long)bytes);
  return PK_OK;
}
static pk_status sim_mem_free(pk_be_context *ctx, uint32_t device, void *ptr) {
  (void)ctx;
  (void)device;
  free(ptr);
  count(SIM_LIVE_MEMORY, -1);
  return PK_OK;
}
static pk_status sim_h2d(pk_be_stream *s, void *dst, uint64_t off, const void *src, uint64_t bytes) {
  (void)s;
  memcpy((char *)dst + off, src, (size_t)bytes);
  return PK_OK;
}
static pk_status sim_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t off, uint64_t bytes) {
  (void)s;
  memcpy(dst, (const char *)src + off, (size_t)bytes);
  return PK_OK;
}
static pk_status sim_d2d(pk_be_stream *s, void *dst, uint64_t doff, const void *src, uint64_t soff, uint64_t bytes) {
  (void)s;
  memcpy((char *)dst + doff, (const char *)src + soff, (size_t)bytes);
  return PK_OK;
}
static pk_status sim_stream_create(pk_be_context *ctx, uint32_t device, pk_be_stream **out) {
  (void)ctx;
  (void)device;
  *out = (pk_be_stream *)calloc(1, sizeof(pk_be_stream));
  if (*out == NULL) return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, 0, "sim: out of memory");
  count(SIM_LIVE_STREAMS, 1);
  return PK_OK;
}
static pk_status sim_stream_destroy(pk_be_stream *s) {
  free(s);
  count(SIM_LIVE_STREAMS, -1);
  return PK_OK;
}
static pk_status sim_stream_sync(pk_be_stream *s) {
  return s->failed ? fail(PK_ERROR_STREAM_FAILED, PK_OP_NONE, 0, "sim: an earlier launch failed") : PK_OK;
}
static pk_status sim_event_create(pk_be_context *ctx, uint32_t device, pk_be_event **out) {
  (void)ctx;
  (void)device;
  *out = (pk_be_event *)calloc(1, sizeof(pk_be_event));
  if (*out == NULL) return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, 0, "sim: out of memory");
  count(SIM_LIVE_EVENTS, 1);
  return PK_OK;
}
static pk_status sim_event_destroy(pk_be_event *e) {
  free(e);
  count(SIM_LIVE_EVENTS, -1);
  return PK_OK;
}
static pk_status sim_event_record(pk_be_event *e, pk_be_stream *s) {
  (void)s;
  e->recorded = 1;
  return PK_OK;
}
static pk_status sim_wait(pk_be_stream *s, pk_be_event *e) {
  (void)s;
  (void)e;
  return PK_OK;
}
static pk_status sim_event_sync(pk_be_event *e) {
  (void)e;
  return PK_OK;
}

static int is_f32(const pk_tensor *t) {
  return t->dtype.code == PK_DTYPE_CODE_FLOAT && t->dtype.bits == 32;
}

static pk_status sim_op_query(pk_be_context *ctx, const pk_op_query *q, pk_op_support *out) {
  uint32_t i;
  int ok = q->op_id == PK_OP_ADD || q->op_id == PK_OP_MUL;
  (void)ctx;
  for (i = 0; ok && i < q->num_inputs; ++i) ok = is_f32(&q->inputs[i]);
  out->supported = ok;
  out->native = ok;
  snprintf(out->reason, sizeof(out->reason), "%s", ok ? "native" : "sim runs add and mul on f32 only");
  return PK_OK;
}

/* Element i of a strided tensor (row-major index i). */
static float *at(const pk_tensor *t, int64_t i) {
  int64_t off = 0, d;
  char *base = (char *)t->data + t->byte_offset;
  for (d = t->ndim - 1; d >= 0; --d) {
    int64_t n = t->shape[d], k = i % n;
    int64_t stride = 1, e;
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

static int64_t numel(const pk_tensor *t) {
  int64_t n = 1, d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static pk_status sim_op_launch(pk_be_stream *s, uint32_t op, const pk_tensor *in, uint32_t nin, const pk_tensor *out,
                               uint32_t nout, const void *attrs) {
  int64_t i, n;
  (void)nin;
  (void)nout;
  (void)attrs;
  if (s->failed) return fail(PK_ERROR_STREAM_FAILED, op, 0, "sim: stream already failed");
  if (op == PK_OP_SUB) return fail(PK_ERROR_DEVICE, op, 77, "sim: the sub unit is on fire");
  if (op == PK_OP_DIV) return 1234; /* a status the ABI does not define */
  if ((op != PK_OP_ADD && op != PK_OP_MUL) || !is_f32(&in[0])) return PK_UNIMPLEMENTED;
  n = numel(&out[0]);
  for (i = 0; i < n; ++i) {
    float a = *at(&in[0], i), b = *at(&in[1], i);
    *at(&out[0], i) = op == PK_OP_ADD ? a + b : a * b;
  }
  return PK_OK;
}

/* Claims the longest prefix of add/mul f32 nodes; the kernel interprets them per element. */
static pk_status sim_fusion_offer(pk_be_context *ctx, uint32_t device, const pk_subgraph *g, pk_fusion_claim *claim,
                                  pk_be_kernel **out) {
  uint32_t k, j, v, n = 0;
  uint32_t arg_of[64];
  pk_be_kernel *kern;
  int produced[64] = {0};
  int read_inside[64] = {0};
  (void)ctx;
  (void)device;
  *out = NULL;
  if (g->num_values > 64) return PK_OK;
  while (n < g->num_nodes && n < SIM_MAX_NODES && (g->nodes[n].op_id == PK_OP_ADD || g->nodes[n].op_id == PK_OP_MUL) &&
         g->values[g->nodes[n].outputs[0]].dtype.bits == 32 &&
         g->values[g->nodes[n].outputs[0]].dtype.code == PK_DTYPE_CODE_FLOAT)
    ++n;
  if (n < 2) return PK_OK;
  kern = (pk_be_kernel *)calloc(1, sizeof(pk_be_kernel));
  if (!kern) return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, 0, "sim: out of memory");
  count(SIM_LIVE_KERNELS, 1);
  for (k = 0; k < n; ++k) {
    claim->claimed[k] = 1;
    produced[g->nodes[k].outputs[0]] = 1;
  }
  for (k = 0; k < n; ++k)
    for (j = 0; j < 2; ++j) read_inside[g->nodes[k].inputs[j]] = 1;
  /* Arguments: values read but not produced (ascending), then produced values read outside or is_output. */
  for (v = 0; v < g->num_values; ++v) arg_of[v] = UINT32_MAX;
  for (v = 0; v < g->num_values; ++v)
    if (read_inside[v] && !produced[v]) arg_of[v] = kern->num_inputs++;
  for (v = 0; v < g->num_values; ++v) {
    int outside = g->values[v].is_output;
    for (k = n; k < g->num_nodes; ++k)
      for (j = 0; j < g->nodes[k].num_inputs; ++j) outside = outside || g->nodes[k].inputs[j] == v;
    if (produced[v] && outside) {
      for (k = 0; k < n; ++k)
        if (g->nodes[k].outputs[0] == v) kern->out_node[kern->num_outputs] = k;
      ++kern->num_outputs;
    }
  }
  kern->num_nodes = n;
  for (k = 0; k < n; ++k) {
    uint32_t a = g->nodes[k].inputs[0], b = g->nodes[k].inputs[1];
    kern->op[k] = g->nodes[k].op_id;
    for (j = 0; j < 2; ++j) {
      uint32_t val = j == 0 ? a : b, src = 0, m;
      if (!produced[val]) {
        src = arg_of[val];
      } else {
        for (m = 0; m < k; ++m)
          if (g->nodes[m].outputs[0] == val) src = 1000 + m;
      }
      if (j == 0)
        kern->a[k] = src;
      else
        kern->b[k] = src;
    }
  }
  *out = kern;
  return PK_OK;
}

static pk_status sim_kernel_launch(pk_be_stream *s, pk_be_kernel *kern, const pk_tensor *args, uint32_t nargs) {
  int64_t i, n;
  uint32_t k;
  float tmp[SIM_MAX_NODES];
  (void)s;
  if (nargs != kern->num_inputs + kern->num_outputs)
    return fail(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, 0, "sim: wrong number of kernel arguments");
  n = numel(&args[kern->num_inputs]);
  for (i = 0; i < n; ++i) {
    for (k = 0; k < kern->num_nodes; ++k) {
      float a = kern->a[k] >= 1000 ? tmp[kern->a[k] - 1000] : *at(&args[kern->a[k]], i);
      float b = kern->b[k] >= 1000 ? tmp[kern->b[k] - 1000] : *at(&args[kern->b[k]], i);
      tmp[k] = kern->op[k] == PK_OP_ADD ? a + b : a * b;
    }
    for (k = 0; k < kern->num_outputs; ++k) *at(&args[kern->num_inputs + k], i) = tmp[kern->out_node[k]];
  }
  return PK_OK;
}

static pk_status sim_kernel_destroy(pk_be_context *ctx, pk_be_kernel *kern) {
  (void)ctx;
  free(kern);
  count(SIM_LIVE_KERNELS, -1);
  return PK_OK;
}

/* Initialized at compile time, as entry may run on several threads at once (runtimes loading the plugin
 * together): filling it in entry would rewrite it under a host that is copying it. */
/* Built once at compile time: several runtimes may load this plugin at once, and rewriting the table on each
 * entry raced with the hosts copying it. The variants below differ only here. */
static const pk_backend_api g_api = {
#if defined(SIM_TORN_TABLE)
    /* A corrupt table whose struct_size ends in the middle of the op_launch slot: the host must not keep the half
     * pointer (fuzz_plugin found it calling one), so launches fall back as if the slot were NULL. */
    .struct_size = (uint32_t)(offsetof(pk_backend_api, op_launch) + sizeof(void *) / 2),
#elif !defined(SIM_OLD_MINOR)
    .struct_size = sizeof(pk_backend_api),
#else
    /* Simulates a plugin built against an older minor whose table ended before the capability query: the
     * struct_size it reports stops there, and the runtime must treat every later slot as NULL. */
    .struct_size = (uint32_t)offsetof(pk_backend_api, op_query),
#endif
    .abi_version = PK_ABI_VERSION,
    .open = sim_open,
    .close = sim_close,
    .get_info = sim_get_info,
    .get_last_error = sim_get_last_error,
    .device_count = sim_device_count,
    .device_get_props = sim_device_get_props,
    .mem_alloc = sim_mem_alloc,
    .mem_free = sim_mem_free,
    .copy_host_to_device = sim_h2d,
    .copy_device_to_host = sim_d2h,
    .copy_device_to_device = sim_d2d,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
#ifndef SIM_ASYNC_NO_SYNC
    .stream_synchronize = sim_stream_sync,
#endif
    .stream_query = sim_stream_sync,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = sim_event_record,
    .stream_wait_event = sim_wait,
    .event_synchronize = sim_event_sync,
    .event_query = sim_event_sync,
    .op_query = sim_op_query,
    .op_launch = sim_op_launch,
#ifndef SIM_OLD_MINOR
    .fusion_offer = sim_fusion_offer,
    .kernel_launch = sim_kernel_launch,
    .kernel_destroy = sim_kernel_destroy,
#endif
};

PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  if (PK_VERSION_MAJOR(host->host_abi_version) != PK_ABI_VERSION_MAJOR) {
    snprintf(message, capacity, "sim speaks ABI major %d only", PK_ABI_VERSION_MAJOR);
    return PK_ERROR_ABI_MISMATCH;
  }
#ifdef SIM_OLD_MINOR
  (void)sim_fusion_offer; /* slots past the older table's end */
  (void)sim_kernel_launch;
  (void)sim_kernel_destroy;
#endif
  *chosen = PK_ABI_VERSION;
  *out_api = &g_api;
  return PK_OK;
}
