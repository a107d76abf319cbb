/* async_backend.c — a simulated accelerator whose streams really run asynchronously: each stream is a worker
 * thread draining a queue of commands (copies, f32 add and mul, event marks, waits for events). Written in
 * plain C99 with POSIX threads against primkit.h. Its memory is host memory the runtime may not touch (no
 * unified memory), so the runtime's asynchronous paths run for real: copies that complete later, a stream that
 * waits for another stream's event, buffers freed only once queued work is done, fallback through host copies.
 * Each add and mul takes ASYNC_KERNEL_US microseconds, so that work still queued is work still running: a missing
 * wait shows as a wrong value (and, under ThreadSanitizer, as a race between two workers). Two devices: freeing a
 * buffer synchronizes every stream of its device, so a test that checks waits keeps one device free of frees. */
#define _POSIX_C_SOURCE 200809L /* pthreads and nanosleep in strict C99 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "primkit/primkit.h"

#define ASYNC_KERNEL_US 200

struct pk_be_context {
  int unused;
};

/* An event completes when every stream that recorded it has passed the mark; `recorded` counts records,
 * `completed` counts marks passed, `waiters` counts queued waits that still read it (destroy waits for them). */
struct pk_be_event {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned long long recorded, completed;
  int waiters;
};

enum { CMD_COPY, CMD_OP, CMD_MARK, CMD_WAIT };
typedef struct async_tensor {
  char *base; /* data + byte_offset */
  int32_t ndim;
  int64_t shape[PK_MAX_RANK], strides[PK_MAX_RANK]; /* copied: the caller's arrays are borrowed for the call */
} async_tensor;
typedef struct async_cmd {
  int kind;
  struct async_cmd *next;
  void *dst; /* CMD_COPY */
  const void *src;
  uint64_t bytes;
  uint32_t op; /* CMD_OP: out = in0 (op) in1 */
  async_tensor in[2], out;
  pk_be_event *event; /* CMD_MARK, CMD_WAIT */
  unsigned long long target;
} async_cmd;

struct pk_be_stream {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  async_cmd *head, *tail;
  unsigned long long enqueued, done;
  int stop;
  pthread_t thread;
};

static struct pk_be_context g_context;
static __thread pk_error_info g_error; /* per thread, as get_last_error reports the calling thread's error */

static pk_status fail(pk_status st, uint32_t op, const char *msg) {
  g_error.struct_size = sizeof(g_error);
  g_error.status = st;
  g_error.op_id = op;
  g_error.arg_index = -1;
  g_error.vendor_code = 0;
  snprintf(g_error.message, sizeof(g_error.message), "%s", msg);
  return st;
}

static pk_status async_open(const pk_host_services *host, pk_be_context **out) {
  (void)host;
  *out = &g_context;
  return PK_OK;
}
static void async_close(pk_be_context *ctx) {
  (void)ctx;
}
static pk_status async_get_info(pk_be_context *ctx, pk_backend_info *out) {
  (void)ctx;
  snprintf(out->name, sizeof(out->name), "%s", "async");
  snprintf(out->vendor, sizeof(out->vendor), "%s", "PrimKit tests");
  out->abi_version = PK_ABI_VERSION;
  return PK_OK;
}
static pk_status async_get_last_error(pk_be_context *ctx, pk_error_info *out) {
  (void)ctx;
  memcpy(out->message, g_error.message, sizeof(out->message));
  out->status = g_error.status;
  out->vendor_code = g_error.vendor_code;
  out->op_id = g_error.op_id;
  out->arg_index = g_error.arg_index;
  return PK_OK;
}
static pk_status async_device_count(pk_be_context *ctx, uint32_t *out) {
  (void)ctx;
  *out = 2;
  return PK_OK;
}
static pk_status async_device_get_props(pk_be_context *ctx, uint32_t index, pk_device_props *out) {
  (void)ctx;
  snprintf(out->name, sizeof(out->name), "simulated asynchronous accelerator %u", index);
  out->device_type = PK_DEVICE_EXT;
  out->device_id = (int32_t)index;
  out->memory_bytes = 1u << 30;
  out->compute_units = 1;
  out->features = PK_DEVICE_FEATURE_ASYNC;
  out->dtype_mask = 1u << PK_DTYPE_F32;
  out->max_allocation_bytes = 1u << 30;
  out->alignment = 64;
  return PK_OK;
}
static pk_status async_mem_alloc(pk_be_context *ctx, uint32_t device, uint64_t bytes, void **out) {
  (void)ctx;
  (void)device;
  *out = bytes <= (1u << 30) ? malloc((size_t)bytes) : NULL;
  return *out ? PK_OK : fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, "async: out of memory");
}
/* The host guarantees that no queued work still uses ptr. */
static pk_status async_mem_free(pk_be_context *ctx, uint32_t device, void *ptr) {
  (void)ctx;
  (void)device;
  free(ptr);
  return PK_OK;
}

/* --- the worker ----------------------------------------------------------------------------------------- */

static void pause_us(long us) {
  struct timespec t;
  t.tv_sec = 0;
  t.tv_nsec = us * 1000;
  nanosleep(&t, NULL);
}

static int64_t numel(const async_tensor *t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}
/* Element i (row-major index) of a strided tensor. */
static float *at(const async_tensor *t, int64_t i) {
  int64_t off = 0;
  int32_t d;
  for (d = t->ndim - 1; d >= 0; --d) {
    off += (i % t->shape[d]) * t->strides[d];
    i /= t->shape[d];
  }
  return (float *)(t->base + off * 4);
}

static void run(async_cmd *c) {
  int64_t i, n;
  switch (c->kind) {
    case CMD_COPY:
      memcpy(c->dst, c->src, (size_t)c->bytes);
      break;
    case CMD_OP:
      pause_us(ASYNC_KERNEL_US);
      n = numel(&c->out);
      for (i = 0; i < n; ++i) {
        float a = *at(&c->in[0], i), b = *at(&c->in[1], i);
        *at(&c->out, i) = c->op == PK_OP_ADD ? a + b : a * b;
      }
      break;
    case CMD_MARK:
      pthread_mutex_lock(&c->event->mu);
      ++c->event->completed;
      pthread_cond_broadcast(&c->event->cv);
      pthread_mutex_unlock(&c->event->mu);
      break;
    case CMD_WAIT:
      pthread_mutex_lock(&c->event->mu);
      while (c->event->completed < c->target) pthread_cond_wait(&c->event->cv, &c->event->mu);
      --c->event->waiters;
      pthread_cond_broadcast(&c->event->cv);
      pthread_mutex_unlock(&c->event->mu);
      break;
  }
}

static void *worker(void *arg) {
  pk_be_stream *s = (pk_be_stream *)arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    async_cmd *c;
    while (s->head == NULL && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    if (s->head == NULL) break;
    c = s->head;
    pthread_mutex_unlock(&s->mu);
    run(c);
    pthread_mutex_lock(&s->mu);
    s->head = c->next;
    if (s->head == NULL) s->tail = NULL;
    ++s->done;
    free(c);
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static pk_status enqueue(pk_be_stream *s, const async_cmd *proto) {
  async_cmd *c = (async_cmd *)malloc(sizeof(async_cmd));
  if (c == NULL) return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, "async: out of memory");
  *c = *proto;
  c->next = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->tail) {
    s->tail->next = c;
  } else {
    s->head = c;
  }
  s->tail = c;
  ++s->enqueued;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return PK_OK;
}

/* --- streams, copies, events ----------------------------------------------------------------------------- */

static pk_status async_stream_create(pk_be_context *ctx, uint32_t device, pk_be_stream **out) {
  pk_be_stream *s = (pk_be_stream *)calloc(1, sizeof(pk_be_stream));
  (void)ctx;
  (void)device;
  if (s == NULL) return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, "async: out of memory");
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->thread, NULL, worker, s) != 0) {
    free(s);
    return fail(PK_ERROR_DEVICE, PK_OP_NONE, "async: cannot start the stream's worker");
  }
  *out = s;
  return PK_OK;
}
/* Waits until the stream is idle; built with ASYNC_SYNC_SNAPSHOT, only for the work queued before the call (all
 * a driver promises: work another thread queues meanwhile may still run after it returns). */
static pk_status async_stream_sync(pk_be_stream *s) {
  pthread_mutex_lock(&s->mu);
#ifdef ASYNC_SYNC_SNAPSHOT
  {
    const unsigned long long target = s->enqueued;
    while (s->done < target) pthread_cond_wait(&s->cv, &s->mu);
  }
#else
  while (s->done < s->enqueued) pthread_cond_wait(&s->cv, &s->mu);
#endif
  pthread_mutex_unlock(&s->mu);
  return PK_OK;
}
static pk_status async_stream_query(pk_be_stream *s) {
  pk_status st;
  pthread_mutex_lock(&s->mu);
  st = s->done < s->enqueued ? PK_NOT_READY : PK_OK;
  pthread_mutex_unlock(&s->mu);
  return st;
}
static pk_status async_stream_destroy(pk_be_stream *s) {
  async_stream_sync(s);
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
  return PK_OK;
}
static pk_status async_h2d(pk_be_stream *s, void *dst, uint64_t off, const void *src, uint64_t bytes) {
  async_cmd c;
  memset(&c, 0, sizeof(c));
  c.kind = CMD_COPY;
  c.dst = (char *)dst + off;
  c.src = src;
  c.bytes = bytes;
  return enqueue(s, &c);
}
static pk_status async_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t off, uint64_t bytes) {
  async_cmd c;
  memset(&c, 0, sizeof(c));
  c.kind = CMD_COPY;
  c.dst = dst;
  c.src = (const char *)src + off;
  c.bytes = bytes;
  return enqueue(s, &c);
}
static pk_status async_d2d(pk_be_stream *s, void *dst, uint64_t doff, const void *src, uint64_t soff, uint64_t bytes) {
  async_cmd c;
  memset(&c, 0, sizeof(c));
  c.kind = CMD_COPY;
  c.dst = (char *)dst + doff;
  c.src = (const char *)src + soff;
  c.bytes = bytes;
  return enqueue(s, &c);
}

static pk_status async_event_create(pk_be_context *ctx, uint32_t device, pk_be_event **out) {
  pk_be_event *e = (pk_be_event *)calloc(1, sizeof(pk_be_event));
  (void)ctx;
  (void)device;
  if (e == NULL) return fail(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, "async: out of memory");
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  *out = e;
  return PK_OK;
}
/* Waits for the marks and waits still queued that name the event, which would otherwise touch freed memory. */
static pk_status async_event_destroy(pk_be_event *e) {
  pthread_mutex_lock(&e->mu);
  while (e->completed < e->recorded || e->waiters > 0) pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
  pthread_cond_destroy(&e->cv);
  pthread_mutex_destroy(&e->mu);
  free(e);
  return PK_OK;
}
static pk_status async_event_record(pk_be_event *e, pk_be_stream *s) {
  async_cmd c;
  pk_status st;
  memset(&c, 0, sizeof(c));
  c.kind = CMD_MARK;
  c.event = e;
  pthread_mutex_lock(&e->mu);
  ++e->recorded;
  pthread_mutex_unlock(&e->mu);
  st = enqueue(s, &c);
  if (st != PK_OK) {
    pthread_mutex_lock(&e->mu);
    --e->recorded;
    pthread_mutex_unlock(&e->mu);
  }
  return st;
}
static pk_status async_wait(pk_be_stream *s, pk_be_event *e) {
  async_cmd c;
  pk_status st;
  memset(&c, 0, sizeof(c));
  c.kind = CMD_WAIT;
  c.event = e;
  pthread_mutex_lock(&e->mu);
  c.target = e->recorded; /* the records made so far, as CUDA's cudaStreamWaitEvent */
  ++e->waiters;
  pthread_mutex_unlock(&e->mu);
  st = enqueue(s, &c);
  if (st != PK_OK) {
    pthread_mutex_lock(&e->mu);
    --e->waiters;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
  }
  return st;
}
static pk_status async_event_sync(pk_be_event *e) {
  pthread_mutex_lock(&e->mu);
  while (e->completed < e->recorded) pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
  return PK_OK;
}
static pk_status async_event_query(pk_be_event *e) {
  pk_status st;
  pthread_mutex_lock(&e->mu);
  st = e->completed < e->recorded ? PK_NOT_READY : PK_OK;
  pthread_mutex_unlock(&e->mu);
  return st;
}

/* --- ops ------------------------------------------------------------------------------------------------- */

static int is_f32(const pk_tensor *t) {
  return t->dtype.code == PK_DTYPE_CODE_FLOAT && t->dtype.bits == 32;
}

static pk_status async_op_query(pk_be_context *ctx, const pk_op_query *q, pk_op_support *out) {
  uint32_t i;
  int ok = q->op_id == PK_OP_ADD || q->op_id == PK_OP_MUL;
  (void)ctx;
  for (i = 0; ok && i < q->num_inputs; ++i) ok = is_f32(&q->inputs[i]);
  out->supported = ok;
  out->native = ok;
  snprintf(out->reason, sizeof(out->reason), "%s", ok ? "native" : "async runs add and mul on f32 only");
  return PK_OK;
}

/* Copies a descriptor with its shape and strides (row-major strides when the caller gave none). */
static void capture(const pk_tensor *t, async_tensor *out) {
  int32_t d;
  int64_t stride = 1;
  out->base = (char *)t->data + t->byte_offset;
  out->ndim = t->ndim;
  for (d = t->ndim - 1; d >= 0; --d) {
    out->shape[d] = t->shape[d];
    out->strides[d] = t->strides ? t->strides[d] : stride;
    stride *= t->shape[d];
  }
}

static pk_status async_op_launch(pk_be_stream *s, uint32_t op, const pk_tensor *in, uint32_t nin, const pk_tensor *out,
                                 uint32_t nout, const void *attrs) {
  async_cmd c;
  (void)attrs;
  if ((op != PK_OP_ADD && op != PK_OP_MUL) || nin != 2 || nout != 1 || !is_f32(&in[0]) || !is_f32(&in[1])) {
    return PK_UNIMPLEMENTED;
  }
  memset(&c, 0, sizeof(c));
  c.kind = CMD_OP;
  c.op = op;
  capture(&in[0], &c.in[0]);
  capture(&in[1], &c.in[1]);
  capture(&out[0], &c.out);
  return enqueue(s, &c);
}

/* Initialized at compile time, as entry may run on several threads at once. */
static const pk_backend_api g_api = {.struct_size = sizeof(pk_backend_api),
                                     .abi_version = PK_ABI_VERSION,
                                     .open = async_open,
                                     .close = async_close,
                                     .get_info = async_get_info,
                                     .get_last_error = async_get_last_error,
                                     .device_count = async_device_count,
                                     .device_get_props = async_device_get_props,
                                     .mem_alloc = async_mem_alloc,
                                     .mem_free = async_mem_free,
                                     .copy_host_to_device = async_h2d,
                                     .copy_device_to_host = async_d2h,
                                     .copy_device_to_device = async_d2d,
                                     .stream_create = async_stream_create,
                                     .stream_destroy = async_stream_destroy,
                                     .stream_synchronize = async_stream_sync,
                                     .stream_query = async_stream_query,
                                     .event_create = async_event_create,
                                     .event_destroy = async_event_destroy,
                                     .event_record = async_event_record,
                                     .stream_wait_event = async_wait,
                                     .event_synchronize = async_event_sync,
                                     .event_query = async_event_query,
                                     .op_query = async_op_query,
                                     .op_launch = async_op_launch};

PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen, const pk_backend_api **out_api,
                                     char *message, size_t capacity) {
  if (PK_VERSION_MAJOR(host->host_abi_version) != PK_ABI_VERSION_MAJOR) {
    snprintf(message, capacity, "async speaks ABI major %d only", PK_ABI_VERSION_MAJOR);
    return PK_ERROR_ABI_MISMATCH;
  }
  *chosen = PK_ABI_VERSION;
  *out_api = &g_api;
  return PK_OK;
}
