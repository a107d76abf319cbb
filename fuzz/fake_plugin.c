/* fake_plugin.c — a hostile backend plugin for the fuzz_plugin harness. Everything it tells the host comes from
 * configuration bytes the harness sets before pk_runtime_load_plugin (pk_fake_plugin_configure, found by dlsym
 * in the same loaded library): the status and version the entry returns, the function table's struct_size (the
 * table is allocated at exactly that size, so a host read past it is an ASan report), which slots are NULL, and
 * what each slot answers (statuses, device counts and properties, unterminated names and messages, NULL handles
 * with PK_OK, fusion claims). Memory slots really allocate and copy host memory: its "device" is the host. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "primkit/primkit.h"

#define CFG_BYTES 96
static uint8_t cfg[CFG_BYTES];
static pk_backend_api *table; /* the current table, allocated at the size cfg asks for */

PK_EXPORT void pk_fake_plugin_configure(const uint8_t *bytes, size_t n) {
  memset(cfg, 0, sizeof(cfg));
  memcpy(cfg, bytes, n < CFG_BYTES ? n : CFG_BYTES);
}

static uint32_t cfg_u32(int at) {
  return (uint32_t)cfg[at] | ((uint32_t)cfg[at + 1] << 8) | ((uint32_t)cfg[at + 2] << 16) |
         ((uint32_t)cfg[at + 3] << 24);
}
/* A status: mostly the given one, sometimes any code (even unknown ones). */
static pk_status st_of(uint8_t sel, pk_status ok) {
  if (sel < 200) return ok;
  if (sel < 250) return (pk_status)(sel - 200) % 12;
  return (pk_status)(int8_t)sel * 1000;
}

/* Everything the fake allocates for the host (streams, events, kernels, memory) is tracked, so that close()
 * releases what the host could not (the ABI's rule: close frees everything the context owns). Without it, a
 * configuration that leaves a destroy slot NULL would leak by the plugin's own fault. */
#define MAX_LIVE 4096
static void *live[MAX_LIVE];
static void *track(void *p) {
  int i;
  if (p == NULL) return NULL;
  for (i = 0; i < MAX_LIVE; ++i) {
    if (live[i] == NULL) {
      live[i] = p;
      return p;
    }
  }
  free(p);
  return NULL;
}
static void untrack_free(void *p) {
  int i;
  if (p == NULL) return;
  for (i = 0; i < MAX_LIVE; ++i) {
    if (live[i] == p) {
      live[i] = NULL;
      break;
    }
  }
  free(p);
}

struct pk_be_context {
  int dummy;
};
struct pk_be_stream {
  int dummy;
};
struct pk_be_event {
  int dummy;
};
struct pk_be_kernel {
  int dummy;
};

static pk_status f_open(const pk_host_services *host, pk_be_context **out) {
  (void)host;
  switch (cfg[13] % 4) {
    case 1:
      *out = NULL;
      return PK_OK;
    case 2:
      *out = NULL;
      return st_of(cfg[13] | 0xC8, PK_ERROR_DEVICE);
    default:
      *out = (pk_be_context *)calloc(1, sizeof(pk_be_context));
      return PK_OK;
  }
}
static void f_close(pk_be_context *ctx) {
  int i;
  for (i = 0; i < MAX_LIVE; ++i) {
    free(live[i]);
    live[i] = NULL;
  }
  free(ctx);
}
static pk_status f_get_info(pk_be_context *ctx, pk_backend_info *out) {
  (void)ctx;
  size_t n = out->struct_size < sizeof(*out) ? out->struct_size : sizeof(*out);
  pk_backend_info i;
  memset(&i, 0, sizeof(i));
  i.struct_size = (uint32_t)n;
  switch (cfg[14] % 6) {
    case 1:
      memset(i.name, 'a', sizeof(i.name));
      break; /* no NUL */
    case 2:
      strcpy(i.name, "Fake Backend!");
      break;
    case 3:
      strcpy(i.name, "cpu");
      break;
    case 5:
      break; /* empty */
    default:
      strcpy(i.name, "fake");
      break;
  }
  memset(i.vendor, 'v', sizeof(i.vendor)); /* never terminated */
  i.abi_version = cfg_u32(2);
  memcpy(out, &i, n);
  return st_of(cfg[14] >= 6 ? cfg[14] : 0, PK_OK);
}
static pk_status f_get_last_error(pk_be_context *ctx, pk_error_info *out) {
  (void)ctx;
  size_t n = out->struct_size < sizeof(*out) ? out->struct_size : sizeof(*out);
  pk_error_info e;
  memset(&e, 0, sizeof(e));
  e.struct_size = (uint32_t)n;
  e.status = (pk_status)cfg_u32(44);
  e.vendor_code = -7;
  e.op_id = cfg_u32(48);
  e.arg_index = (int32_t)cfg_u32(52);
  if (cfg[42] % 3 == 1)
    memset(e.message, 'm', sizeof(e.message)); /* no NUL */
  else
    strcpy(e.message, "fake: configured failure");
  memcpy(out, &e, n);
  return cfg[42] % 3 == 2 ? PK_ERROR_INTERNAL : PK_OK;
}
static pk_status f_device_count(pk_be_context *ctx, uint32_t *out) {
  (void)ctx;
  switch (cfg[15] % 6) {
    case 1:
      *out = 0;
      break;
    case 2:
      *out = 2;
      break;
    case 3:
      *out = 1000;
      break;
    case 4:
      *out = 1;
      return st_of(250, PK_OK);
    case 5:
      *out = cfg_u32(16);
      break;
    default:
      *out = 1;
      break;
  }
  return PK_OK;
}
static pk_status f_device_get_props(pk_be_context *ctx, uint32_t index, pk_device_props *out) {
  (void)ctx;
  size_t n = out->struct_size < sizeof(*out) ? out->struct_size : sizeof(*out);
  pk_device_props p;
  memset(&p, 0, sizeof(p));
  p.struct_size = (uint32_t)n;
  memset(p.name, 'd', sizeof(p.name));
  static const uint32_t aligns[] = {64, 0, 3, 1u << 31};
  p.alignment = aligns[cfg[20] % 4];
  static const int32_t types[] = {PK_DEVICE_EXT, PK_DEVICE_CPU, PK_DEVICE_CUDA, -1};
  p.device_type = types[cfg[21] % 4];
  p.device_id = (int32_t)index * 7;
  p.features = cfg[22];
  p.dtype_mask = cfg[23] ? cfg_u32(23) : 0xffffffffu;
  p.max_allocation_bytes = cfg[24] ? (uint64_t)cfg[24] : (1u << 30);
  p.memory_bytes = (uint64_t)1 << 30;
  memcpy(out, &p, n);
  return st_of(cfg[25] >= 200 ? cfg[25] : 0, PK_OK);
}
static pk_status f_mem_alloc(pk_be_context *ctx, uint32_t device, uint64_t bytes, void **out) {
  (void)ctx;
  (void)device;
  switch (cfg[26] % 4) {
    case 1:
      *out = NULL;
      return PK_OK; /* a lie */
    case 2:
      *out = NULL;
      return PK_ERROR_OUT_OF_MEMORY;
    default:
      if (bytes > ((uint64_t)1 << 26)) return PK_ERROR_OUT_OF_MEMORY;
      *out = track(malloc((size_t)(bytes ? bytes : 1))); /* 16-byte aligned; props say 64: the host must cope */
      return *out ? PK_OK : PK_ERROR_OUT_OF_MEMORY;
  }
}
static pk_status f_mem_free(pk_be_context *ctx, uint32_t device, void *ptr) {
  (void)ctx;
  (void)device;
  untrack_free(ptr);
  return st_of(cfg[27], PK_OK);
}
static pk_status f_h2d(pk_be_stream *s, void *dst, uint64_t off, const void *src, uint64_t bytes) {
  (void)s;
  if (cfg[28] % 3 == 1) return PK_ERROR_DEVICE;
  memcpy((char *)dst + off, src, (size_t)bytes);
  return PK_OK;
}
static pk_status f_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t off, uint64_t bytes) {
  (void)s;
  if (cfg[28] % 3 == 2) return PK_ERROR_DEVICE;
  memcpy(dst, (const char *)src + off, (size_t)bytes);
  return PK_OK;
}
static pk_status f_d2d(pk_be_stream *s, void *dst, uint64_t doff, const void *src, uint64_t soff, uint64_t bytes) {
  (void)s;
  memcpy((char *)dst + doff, (const char *)src + soff, (size_t)bytes);
  return st_of(cfg[29], PK_OK);
}
static pk_status f_stream_create(pk_be_context *ctx, uint32_t device, pk_be_stream **out) {
  (void)ctx;
  (void)device;
  switch (cfg[30] % 3) {
    case 1:
      *out = NULL;
      return PK_OK;
    case 2:
      *out = NULL;
      return PK_ERROR_DEVICE;
    default:
      *out = (pk_be_stream *)track(calloc(1, sizeof(pk_be_stream)));
      return PK_OK;
  }
}
static pk_status f_stream_destroy(pk_be_stream *s) {
  untrack_free(s);
  return st_of(cfg[31], PK_OK);
}
static pk_status f_stream_sync(pk_be_stream *s) {
  (void)s;
  return st_of(cfg[32], PK_OK);
}
static pk_status f_stream_query(pk_be_stream *s) {
  (void)s;
  return st_of(cfg[33], PK_OK);
}
static pk_status f_event_create(pk_be_context *ctx, uint32_t device, pk_be_event **out) {
  (void)ctx;
  (void)device;
  if (cfg[34] % 3 == 1) {
    *out = NULL;
    return PK_OK;
  }
  if (st_of(cfg[34], PK_OK) != PK_OK) {
    *out = NULL;
    return PK_ERROR_DEVICE;
  }
  *out = (pk_be_event *)track(calloc(1, sizeof(pk_be_event)));
  return PK_OK;
}
static pk_status f_event_destroy(pk_be_event *e) {
  untrack_free(e);
  return PK_OK;
}
static pk_status f_event_record(pk_be_event *e, pk_be_stream *s) {
  (void)e;
  (void)s;
  return st_of(cfg[35], PK_OK);
}
static pk_status f_wait_event(pk_be_stream *s, pk_be_event *e) {
  (void)e;
  (void)s;
  return st_of(cfg[36], PK_OK);
}
static pk_status f_event_sync(pk_be_event *e) {
  (void)e;
  return st_of(cfg[37], PK_OK);
}
static pk_status f_event_query(pk_be_event *e) {
  (void)e;
  return st_of(cfg[37], PK_NOT_READY);
}
static pk_status f_op_query(pk_be_context *ctx, const pk_op_query *q, pk_op_support *out) {
  (void)ctx;
  (void)q;
  size_t n = out->struct_size < sizeof(*out) ? out->struct_size : sizeof(*out);
  pk_op_support s;
  memset(&s, 0, sizeof(s));
  s.struct_size = (uint32_t)n;
  switch (cfg[38] % 5) {
    case 1:
      s.supported = 0;
      strcpy(s.reason, "fake: declined");
      break;
    case 2:
      memcpy(out, &s, n);
      return PK_ERROR_DEVICE;
    case 3:
      s.supported = 1;
      memset(s.reason, 'r', sizeof(s.reason));
      break; /* no NUL */
    case 4:
      s.supported = 7;
      s.native = -3;
      break;
    default:
      s.supported = 1;
      s.native = 1;
      break;
  }
  memcpy(out, &s, n);
  return PK_OK;
}
static pk_status f_op_launch(pk_be_stream *s, uint32_t op, const pk_tensor *in, uint32_t ni, const pk_tensor *o,
                             uint32_t no, const void *attrs) {
  (void)s;
  (void)op;
  (void)in;
  (void)ni;
  (void)o;
  (void)no;
  (void)attrs;
  switch (cfg[39] % 3) {
    case 1:
      return PK_UNIMPLEMENTED; /* after saying "supported" */
    case 2:
      return st_of(cfg[39] | 0xC8, PK_ERROR_DEVICE);
    default:
      return PK_OK;
  }
}
static pk_status f_fusion_offer(pk_be_context *ctx, uint32_t device, const pk_subgraph *g, pk_fusion_claim *claim,
                                pk_be_kernel **out) {
  (void)ctx;
  (void)device;
  (void)g;
  uint32_t i;
  *out = NULL;
  switch (cfg[40] % 6) {
    case 1:
      for (i = 0; i < claim->num_nodes; ++i) claim->claimed[i] = 1;
      *out = (pk_be_kernel *)track(calloc(1, sizeof(pk_be_kernel)));
      return PK_OK;
    case 2: /* a claim from the configuration bytes: non-convex sets, values other than 0/1 */
      for (i = 0; i < claim->num_nodes; ++i) claim->claimed[i] = cfg[64 + i % 32];
      *out = (pk_be_kernel *)track(calloc(1, sizeof(pk_be_kernel)));
      return PK_OK;
    case 3:
      for (i = 0; i < claim->num_nodes; ++i) claim->claimed[i] = 1;
      return PK_OK; /* claims, but no kernel */
    case 4:
      return PK_ERROR_INTERNAL;
    case 5:
      *out = (pk_be_kernel *)track(calloc(1, sizeof(pk_be_kernel)));
      return PK_OK; /* a kernel, no claim */
    default:
      return PK_OK;
  }
}
static pk_status f_kernel_launch(pk_be_stream *s, pk_be_kernel *k, const pk_tensor *args, uint32_t n) {
  (void)s;
  (void)k;
  (void)args;
  (void)n;
  return st_of(cfg[41], PK_OK);
}
static pk_status f_kernel_destroy(pk_be_context *ctx, pk_be_kernel *k) {
  (void)ctx;
  untrack_free(k);
  return PK_OK;
}

PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                     const pk_backend_api **out_api, char *message, size_t message_capacity) {
  pk_backend_api full;
  uint32_t size, mask, i;
  void **slots;
  memset(&full, 0, sizeof(full));
  full.struct_size = sizeof(full);
  full.open = f_open;
  full.close = f_close;
  full.get_info = f_get_info;
  full.get_last_error = f_get_last_error;
  full.device_count = f_device_count;
  full.device_get_props = f_device_get_props;
  full.mem_alloc = f_mem_alloc;
  full.mem_free = f_mem_free;
  full.copy_host_to_device = f_h2d;
  full.copy_device_to_host = f_d2h;
  full.copy_device_to_device = f_d2d;
  full.stream_create = f_stream_create;
  full.stream_destroy = f_stream_destroy;
  full.stream_synchronize = f_stream_sync;
  full.stream_query = f_stream_query;
  full.event_create = f_event_create;
  full.event_destroy = f_event_destroy;
  full.event_record = f_event_record;
  full.stream_wait_event = f_wait_event;
  full.event_synchronize = f_event_sync;
  full.event_query = f_event_query;
  full.op_query = f_op_query;
  full.op_launch = f_op_launch;
  full.fusion_offer = f_fusion_offer;
  full.kernel_launch = f_kernel_launch;
  full.kernel_destroy = f_kernel_destroy;
  /* Slot presence: bit k of the mask clears the k-th pointer slot. */
  mask = cfg_u32(8);
  slots = (void **)((char *)&full + offsetof(pk_backend_api, open));
  for (i = 0; i < (sizeof(full) - offsetof(pk_backend_api, open)) / sizeof(void *); ++i) {
    if (mask & (1u << (i % 32))) slots[i] = NULL;
  }
  switch (cfg[1] % 6) {
    case 1:
      *chosen_version = PK_MAKE_VERSION(1, 0);
      break;
    case 2:
      *chosen_version = PK_MAKE_VERSION(2, 0);
      break;
    case 3:
      *chosen_version = PK_MAKE_VERSION(0, 9);
      break;
    case 4:
      *chosen_version = cfg_u32(2);
      break;
    case 5:
      *chosen_version = PK_MAKE_VERSION(1, 99);
      break;
    default:
      *chosen_version = host->host_abi_version;
      break;
  }
  full.abi_version = *chosen_version;
  size = (uint32_t)(cfg[6] | (cfg[7] << 8));
  size = size == 0 ? (uint32_t)sizeof(full) : 4 + size % (uint32_t)(sizeof(full) + 64);
  full.struct_size = size;
  free(table);
  table = (pk_backend_api *)malloc(size);
  memset(table, 0, size);
  memcpy(table, &full, size < sizeof(full) ? size : sizeof(full));
  *out_api = table;
  if (message && message_capacity) {
    if (cfg[12] % 3 == 1)
      memset(message, 'x', message_capacity); /* fills it, no NUL */
    else if (cfg[12] % 3 == 2)
      strncpy(message, "fake: configured refusal", message_capacity - 1);
  }
  return st_of(cfg[0], PK_OK);
}
