/*
 * primkit.h — the PrimKit stable C ABI, version 1.2.
 *
 * One header for both sides of the plugin boundary:
 *   - the BACKEND side: what a plugin (.so) exports — one entry symbol, `pk_backend_entry`, that negotiates
 *     the ABI version and hands the host a table of function pointers (`pk_backend_api`);
 *   - the HOST side: what `libprimkit` (the runtime) offers frameworks — discovery, devices, memory, streams,
 *     events, validated op launches with fallback, and graphs with fusion.
 * The collectives extension (communicators, all-reduce, ...) is declared beside it, in primkit_collectives.h.
 *
 * Rules that hold for every declaration below (see docs/abi.md for the rationale):
 *   - Plain C99. Opaque handles, `pk_` prefix, no C++ types, no exceptions and no longjmp across the boundary.
 *   - Every struct begins with `uint32_t struct_size`, set by whoever fills it (PK_STRUCT_INIT). Readers
 *     use only the fields that fit inside struct_size; fields are only ever appended.
 *   - Function tables are append-only. A NULL slot means "not implemented": the runtime never calls it.
 *   - Every function returns a pk_status. On failure, pk_get_last_error() (host side) or the backend's
 *     get_last_error slot returns the message, op, argument and vendor subcode of the failure, on the thread
 *     that made the failing call, until that thread's next call into the same API.
 *   - Threading: calls on different handles may run concurrently; calls that enqueue on one stream are
 *     ordered in call order; allocation and freeing are thread-safe; nothing here creates hidden threads in a
 *     backend. Per-function notes below refine this ("Threading:").
 *   - Ownership: pointers passed in are borrowed for the duration of the call unless a function says
 *     otherwise; handles returned through `out` parameters are owned by the caller and released with the
 *     matching destroy/free function.
 */
#ifndef PRIMKIT_H
#define PRIMKIT_H

#include <math.h> /* NAN: the unset value of required f64 attributes in PK_ATTRS_*_INIT */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------------------
 * Versions
 * ---------------------------------------------------------------------------------------------------------- */

/* An ABI version packs major in the high 16 bits and minor in the low 16 bits. A host of version M.n loads
 * every plugin of version M.m (any m): m < n means shorter tables and structs, which the host pads with NULL;
 * m > n means the plugin must answer with n (it negotiates down). A different major is refused cleanly. */
#define PK_MAKE_VERSION(major, minor) ((((uint32_t)(major)) << 16) | ((uint32_t)(minor)&0xffffu))
#define PK_VERSION_MAJOR(v) ((uint32_t)(v) >> 16)
#define PK_VERSION_MINOR(v) ((uint32_t)(v)&0xffffu)

#define PK_ABI_VERSION_MAJOR 1
#define PK_ABI_VERSION_MINOR 2
#define PK_ABI_VERSION PK_MAKE_VERSION(PK_ABI_VERSION_MAJOR, PK_ABI_VERSION_MINOR)

/* Sets struct_size of a struct variable before it is filled: `pk_tensor t; PK_STRUCT_INIT(t);` zeroes it. */
#define PK_STRUCT_INIT(s)                                                                  \
  do {                                                                                     \
    unsigned char *pk_init_p_ = (unsigned char *)&(s);                                     \
    size_t pk_init_i_;                                                                     \
    for (pk_init_i_ = 0; pk_init_i_ < sizeof(s); ++pk_init_i_) pk_init_p_[pk_init_i_] = 0; \
    (s).struct_size = (uint32_t)sizeof(s);                                                 \
  } while (0)

#if defined(_WIN32)
#define PK_EXPORT __declspec(dllexport)
#else
#define PK_EXPORT __attribute__((visibility("default")))
#endif
/* Functions of libprimkit (the host side). */
#if defined(_WIN32) && !defined(PK_BUILDING_RUNTIME)
#define PK_API __declspec(dllimport)
#else
#define PK_API PK_EXPORT
#endif

/* ------------------------------------------------------------------------------------------------------------
 * Status codes
 * ---------------------------------------------------------------------------------------------------------- */

typedef int32_t pk_status;
enum {
  PK_OK = 0,
  /* The backend does not implement this op, dtype combination, layout or feature. An honest answer, not a
   * failure: the runtime falls back (or reports it in strict mode); conformance reports NOT_SUPPORTED. */
  PK_UNIMPLEMENTED = 1,
  PK_ERROR_INVALID_ARGUMENT = 2, /* the caller broke a documented precondition; nothing was changed */
  PK_ERROR_OUT_OF_MEMORY = 3,
  PK_ERROR_ABI_MISMATCH = 4,       /* plugin and host cannot agree on an ABI version */
  PK_ERROR_NOT_FOUND = 5,          /* no such backend, device, symbol or file */
  PK_ERROR_DEVICE = 6,             /* the device or driver failed; vendor_code holds the driver's code */
  PK_ERROR_STREAM_FAILED = 7,      /* sticky: earlier asynchronous work on this stream failed */
  PK_ERROR_FALLBACK_FORBIDDEN = 8, /* strict mode: the op would have needed the fallback backend */
  PK_ERROR_PLUGIN = 9,             /* the plugin misbehaved (broke the ABI contract, returned garbage) */
  PK_ERROR_INTERNAL = 10,          /* a bug in PrimKit or the backend; the message says where */
  PK_NOT_READY = 11,               /* query functions: the work is still in flight (not an error) */
  PK_ERROR_TIMEOUT = 12,           /* ABI 1.2: a collective did not finish within its communicator's timeout */
  PK_ERROR_COMM_FAILED = 13        /* ABI 1.2: the communicator was aborted or failed earlier; destroy it */
};

/* ------------------------------------------------------------------------------------------------------------
 * Data types and devices (layout-compatible with DLPack 1.x: DLDataType and DLDevice)
 * ---------------------------------------------------------------------------------------------------------- */

/* DLPack's DLDataTypeCode values, so a pk_dtype converts to a DLDataType by copying its bytes. */
enum {
  PK_DTYPE_CODE_INT = 0,
  PK_DTYPE_CODE_UINT = 1,
  PK_DTYPE_CODE_FLOAT = 2,
  PK_DTYPE_CODE_OPAQUE_HANDLE = 3,
  PK_DTYPE_CODE_BFLOAT = 4,
  PK_DTYPE_CODE_COMPLEX = 5,
  PK_DTYPE_CODE_BOOL = 6,
  PK_DTYPE_CODE_FLOAT8_E4M3FN = 10,
  PK_DTYPE_CODE_FLOAT8_E5M2 = 12
};

/* Element type: code (above), bits per lane, lanes (1 for every dtype PrimKit ops accept today). */
typedef struct pk_dtype {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} pk_dtype;

/* DLPack's DLDeviceType values for the kinds PrimKit knows; a vendor accelerator uses PK_DEVICE_EXT. */
enum {
  PK_DEVICE_CPU = 1,
  PK_DEVICE_CUDA = 2,
  PK_DEVICE_CUDA_HOST = 3,
  PK_DEVICE_OPENCL = 4,
  PK_DEVICE_VULKAN = 7,
  PK_DEVICE_METAL = 8,
  PK_DEVICE_ROCM = 10,
  PK_DEVICE_EXT = 12
};

/* ------------------------------------------------------------------------------------------------------------
 * Tensor descriptor: a DLPack DLTensor plus the size of the storage (for bounds checks) and flags.
 * ---------------------------------------------------------------------------------------------------------- */

#define PK_MAX_RANK 8 /* every op accepts ranks 0..PK_MAX_RANK; attribute structs size their lists by it */

enum {
  PK_TENSOR_FLAG_READ_ONLY = 1u << 0,   /* the storage must not be written (the runtime rejects it as output) */
  PK_TENSOR_FLAG_HOST_VISIBLE = 1u << 1 /* `data` is a host pointer the CPU may dereference */
};

/* Sizes: every extent is below 2^62, and the product of the non-zero extents, and that times the element size,
 * are below 2^63, even when another extent is 0 (an empty tensor's strides are still products of the others).
 * Bounds: a view on memory from pk_buffer_create stays inside that buffer, whatever storage_bytes says.
 * Placement: a non-empty tensor's first element, data + byte_offset, is aligned to the element size (bits / 8),
 * as kernels load whole elements. Where `data` is an opaque handle (a cl_mem) the storage it names starts
 * aligned and byte_offset must be a multiple of the element size; the runtime checks data + byte_offset where
 * `data` is a host address (HOST_VISIBLE, CPU and CUDA_HOST tensors) and byte_offset alone elsewhere. `data`
 * may be NULL only for a tensor with zero elements, and then byte_offset is 0. */
typedef struct pk_tensor {
  uint32_t struct_size;
  uint32_t flags;         /* PK_TENSOR_FLAG_* */
  void *data;             /* start of the storage as the device addresses it (device pointer, cl_mem, ...) */
  uint64_t byte_offset;   /* bytes from `data` to element (0, ..., 0) */
  uint64_t storage_bytes; /* bytes addressable from `data`; every element the view reaches must lie inside */
  int32_t device_type;    /* PK_DEVICE_* (DLPack DLDeviceType) */
  int32_t device_id;      /* index of the device within its backend */
  pk_dtype dtype;
  int32_t ndim;           /* 0..PK_MAX_RANK; 0 is a scalar with one element */
  const int64_t *shape;   /* ndim extents, each >= 0; may be NULL when ndim == 0 */
  const int64_t *strides; /* ndim strides IN ELEMENTS (may be 0 or negative for inputs); NULL = row-major */
} pk_tensor;

/* Generated from the op table: dtype ids (PK_DTYPE_*), op ids (PK_OP_*), attribute structs (pk_attrs_*). */
#include "primkit/primkit_ops.h"

/* ------------------------------------------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------------------------------------------- */

#define PK_MESSAGE_CAPACITY 512

/* Details of the last failure on the calling thread. op_id is PK_OP_NONE and arg_index -1 when the failure
 * is not about an op or an argument. arg_index counts inputs first (0..n_in-1), then outputs (n_in..), and
 * attributes are named in the message. */
typedef struct pk_error_info {
  uint32_t struct_size;
  pk_status status;
  int32_t vendor_code;               /* the driver's or backend's own code, 0 if none */
  uint32_t op_id;                    /* PK_OP_NONE when not about an op */
  int32_t arg_index;                 /* -1 when not about one argument */
  char message[PK_MESSAGE_CAPACITY]; /* NUL-terminated, e.g. "add: input 1 (b): dtype f16 != f32 of input 0" */
} pk_error_info;

/* ------------------------------------------------------------------------------------------------------------
 * Metadata
 * ---------------------------------------------------------------------------------------------------------- */

#define PK_NAME_CAPACITY 64

enum {
  PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS = 1u << 0,  /* subnormal results may be flushed to zero (FTZ) */
  PK_FLOAT_FLUSH_SUBNORMAL_INPUTS = 1u << 1,   /* subnormal inputs may be read as zero (DAZ) */
  PK_FLOAT_FAST_MATH_TRANSCENDENTALS = 1u << 2 /* transcendental functions use the ULP limits, not tighter */
};

enum {
  PK_DEVICE_FEATURE_ASYNC = 1u << 0,          /* streams really run asynchronously */
  PK_DEVICE_FEATURE_UNIFIED_MEMORY = 1u << 1, /* device memory is host-addressable (HOST_VISIBLE tensors) */
  PK_DEVICE_FEATURE_FUSION = 1u << 2          /* the backend compiles fused regions (fusion_offer) */
};

typedef struct pk_backend_info {
  uint32_t struct_size;
  char name[PK_NAME_CAPACITY];   /* short unique name, [a-z0-9_-]+, e.g. "cpu", "opencl", "acme" */
  char vendor[PK_NAME_CAPACITY]; /* e.g. "PrimKit reference" */
  uint32_t version_major;        /* the backend's own semantic version */
  uint32_t version_minor;
  uint32_t version_patch;
  uint32_t abi_version; /* PK_MAKE_VERSION the backend was compiled against (its PK_ABI_VERSION) */
} pk_backend_info;

typedef struct pk_device_props {
  uint32_t struct_size;
  char name[PK_NAME_CAPACITY]; /* e.g. "AMD EPYC (2 threads)", "pthread-cpu-pocl" */
  int32_t device_type;         /* PK_DEVICE_* used in tensors on this device */
  int32_t device_id;
  uint64_t memory_bytes; /* total device memory, 0 if unknown */
  uint32_t compute_units;
  uint32_t features;     /* PK_DEVICE_FEATURE_* */
  uint32_t float_policy; /* PK_FLOAT_* : what numerics the conformance suite may accept */
  uint32_t dtype_mask;   /* bit (1u << pk_dtype_id) for each dtype the device can store */
  uint64_t max_allocation_bytes;
  uint32_t alignment; /* alignment in bytes of every allocation */
} pk_device_props;

/* ------------------------------------------------------------------------------------------------------------
 * Capability query
 * ---------------------------------------------------------------------------------------------------------- */

/* What the caller wants to launch: an op with concrete dtypes, ranks and (optionally) shapes and strides.
 * When `shape` is NULL in every tensor the query is a COVERAGE query: answer whether the op runs for these
 * dtypes at the shapes the op admits in general (ndim is then only a hint). With shapes, answer for exactly
 * that launch. */
typedef struct pk_op_query {
  uint32_t struct_size;
  uint32_t op_id;
  uint32_t device_index;
  uint32_t num_inputs;
  const pk_tensor *inputs; /* data pointers are NULL: only dtype, ndim, shape, strides are meaningful */
  uint32_t num_outputs;
  const pk_tensor *outputs;
  const void *attrs; /* the op's attribute struct, or NULL for "any attribute values" */
} pk_op_query;

typedef struct pk_op_support {
  uint32_t struct_size;
  int32_t supported; /* 1 = the backend runs this launch; 0 = it returns PK_UNIMPLEMENTED */
  int32_t native;    /* 1 = a native kernel; 0 = supported through the backend's own emulation */
  char reason[256];  /* why not (or how), e.g. "f16 needs cl_khr_fp16, which this device lacks" */
} pk_op_support;

/* ------------------------------------------------------------------------------------------------------------
 * Fusion: the runtime offers a subgraph; the backend may claim some or all of it.
 * ---------------------------------------------------------------------------------------------------------- */

/* A value (edge) of an offered subgraph: an input of the subgraph, or an output of a node. */
typedef struct pk_graph_value {
  uint32_t struct_size;
  pk_dtype dtype;
  int32_t ndim;
  int64_t shape[PK_MAX_RANK];
  int32_t is_input;  /* 1 = provided from outside the subgraph (never produced by a node) */
  int32_t is_output; /* 1 = needed outside the subgraph after it runs */
} pk_graph_value;

typedef struct pk_graph_node {
  uint32_t struct_size;
  uint32_t op_id;
  const void *attrs; /* the op's attribute struct (NULL if the op has none); valid for the offer call only */
  uint32_t num_inputs;
  const uint32_t *inputs; /* indices into pk_subgraph.values */
  uint32_t num_outputs;
  const uint32_t *outputs;
} pk_graph_node;

/* A flat, self-contained description. Nodes are in a topological order. */
typedef struct pk_subgraph {
  uint32_t struct_size;
  uint32_t num_values;
  const pk_graph_value *values;
  uint32_t num_nodes;
  const pk_graph_node *nodes;
} pk_subgraph;

/* The backend's answer to an offer. The backend sets claimed[i] = 1 for each node it fuses (the array is
 * allocated by the runtime, num_nodes long, zeroed). The claimed set must be convex (no path leaves it and
 * comes back). The kernel's arguments, in order, are: the values the claimed nodes read but do not produce
 * (ascending value index), then the values the claimed nodes produce that are read outside the claim or have
 * is_output set (ascending value index). pk_fusion_signature() in primkit_backend.hpp computes that list. */
typedef struct pk_fusion_claim {
  uint32_t struct_size;
  uint32_t num_nodes;
  uint8_t *claimed;
} pk_fusion_claim;

/* ------------------------------------------------------------------------------------------------------------
 * BACKEND SIDE: what a plugin implements.
 * ---------------------------------------------------------------------------------------------------------- */

/* Opaque to the runtime, defined by each backend. */
typedef struct pk_be_context pk_be_context; /* the backend's process-wide state, from open() */
/* ABI 1.2: a vendor extension's address (get_proc_address); a generic function pointer type, since ISO C has no
 * conversion between function and object pointers. The caller casts it to the extension's documented type. */
typedef void (*pk_proc)(void);
typedef struct pk_be_stream pk_be_stream;   /* an in-order queue of work on one device */
typedef struct pk_be_event pk_be_event;     /* a marker in a stream */
typedef struct pk_be_kernel pk_be_kernel;   /* a compiled fused region */
typedef struct pk_be_comm pk_be_comm;       /* ABI 1.2: a communicator of the backend's native collectives */
/* Defined in primkit_collectives.h, which a backend with native collectives includes. */
struct pk_comm_unique_id;
struct pk_collective_desc;

/* Services the host offers a backend. Every slot may be called from any thread. */
typedef struct pk_host_services {
  uint32_t struct_size;
  uint32_t host_abi_version; /* the newest ABI version the host speaks */
  /* Logs a line through the host (level 0 = error, 1 = warning, 2 = info, 3 = debug). May be NULL. */
  void (*log)(int32_t level, const char *message);
} pk_host_services;

/* The function table. All slots except struct_size, abi_version, open, close, get_info and get_last_error
 * may be NULL ("not implemented"). Unless said otherwise a slot returns PK_OK or an error whose details the
 * get_last_error slot reports on the same thread. The runtime validates every argument before calling a slot:
 * a backend sees only well-formed tensors (shapes, dtypes, strides inside their storage, attribute ranges),
 * live handles and device indices < device_count. A backend must never abort, exit or raise a signal on
 * purpose; it reports errors instead. */
typedef struct pk_backend_api {
  uint32_t struct_size;
  uint32_t abi_version; /* the version the plugin chose in negotiation */

  /* --- lifecycle and metadata --- */
  /* Creates the backend's state. `host` outlives the context. Threading: called once per context, not
   * concurrently with any other call on it. Ownership: *out is released with close(). */
  pk_status (*open)(const pk_host_services *host, pk_be_context **out);
  /* Releases everything the context owns (streams, events, memory the host forgot to free). Threading: no
   * other call on ctx may be in flight. Never fails. */
  void (*close)(pk_be_context *ctx);
  /* Fills *out (the host set struct_size). Threading: any thread. */
  pk_status (*get_info)(pk_be_context *ctx, pk_backend_info *out);
  /* Copies the calling thread's last error into *out (the host set struct_size). Threading: thread-local. */
  pk_status (*get_last_error)(pk_be_context *ctx, pk_error_info *out);
  /* Number of usable devices. Zero is legal (e.g. no driver); get_last_error then explains why. */
  pk_status (*device_count)(pk_be_context *ctx, uint32_t *out);
  /* Fills *out for device `index`. Threading: any thread. */
  pk_status (*device_get_props)(pk_be_context *ctx, uint32_t index, pk_device_props *out);

  /* --- memory --- */
  /* Allocates `bytes` (> 0) of device memory aligned to at least props.alignment. *out is what tensors on
   * this device carry in `data`. Threading: any thread. Errors: PK_ERROR_OUT_OF_MEMORY. */
  pk_status (*mem_alloc)(pk_be_context *ctx, uint32_t device, uint64_t bytes, void **out);
  /* Frees memory from mem_alloc. The host guarantees no queued work still uses it (it synchronizes first). */
  pk_status (*mem_free)(pk_be_context *ctx, uint32_t device, void *ptr);
  /* Enqueues a copy of `bytes` from host memory `src` to device memory `dst` + dst_offset. The host keeps
   * `src` alive and unchanged until the stream passes this point. */
  pk_status (*copy_host_to_device)(pk_be_stream *stream, void *dst, uint64_t dst_offset, const void *src,
                                   uint64_t bytes);
  /* Enqueues a copy from device memory `src` + src_offset to host memory `dst`; `dst` is valid once the
   * stream has passed this point (stream_synchronize or an event). */
  pk_status (*copy_device_to_host)(pk_be_stream *stream, void *dst, const void *src, uint64_t src_offset,
                                   uint64_t bytes);
  /* Enqueues a copy between two allocations of the same device (regions may not overlap). */
  pk_status (*copy_device_to_device)(pk_be_stream *stream, void *dst, uint64_t dst_offset, const void *src,
                                     uint64_t src_offset, uint64_t bytes);

  /* --- streams --- */
  /* Creates an in-order stream on `device`. Threading: any thread; one stream may be used from several threads
   * if the caller orders its calls. */
  pk_status (*stream_create)(pk_be_context *ctx, uint32_t device, pk_be_stream **out);
  /* Waits for the stream's work, then destroys it. */
  pk_status (*stream_destroy)(pk_be_stream *stream);
  /* Blocks until all work enqueued so far has finished. Returns the stream's sticky error if any earlier
   * asynchronous work failed (PK_ERROR_STREAM_FAILED or the original code; details via get_last_error);
   * once failed, a stream stays failed and every later enqueue returns PK_ERROR_STREAM_FAILED. */
  pk_status (*stream_synchronize)(pk_be_stream *stream);
  /* PK_OK if all work has finished, PK_NOT_READY if not, or the sticky error. Never blocks. */
  pk_status (*stream_query)(pk_be_stream *stream);

  /* --- events --- */
  pk_status (*event_create)(pk_be_context *ctx, uint32_t device, pk_be_event **out);
  pk_status (*event_destroy)(pk_be_event *event);
  /* Captures the point the stream has reached; the event completes when the stream passes it. */
  pk_status (*event_record)(pk_be_event *event, pk_be_stream *stream);
  /* Makes later work on `stream` wait for `event` (which may be on another stream of the same backend). */
  pk_status (*stream_wait_event)(pk_be_stream *stream, pk_be_event *event);
  /* Blocks until the event completes; returns the recording stream's sticky error if it failed. */
  pk_status (*event_synchronize)(pk_be_event *event);
  /* PK_OK if complete, PK_NOT_READY if not, or an error. Never blocks. */
  pk_status (*event_query)(pk_be_event *event);

  /* --- ops --- */
  /* Answers whether op_launch would run this query's launch. Must agree with op_launch: a backend that says
   * supported and then returns PK_UNIMPLEMENTED is reported as lying. Threading: any thread. */
  pk_status (*op_query)(pk_be_context *ctx, const pk_op_query *query, pk_op_support *out);
  /* Enqueues one op. `attrs` points to the op's attribute struct (primkit_ops.h) or is NULL for ops without
   * attributes. Outputs were allocated by the caller with the shapes the op's shape rule gives. Returns
   * PK_UNIMPLEMENTED (writing nothing) for what it does not support. Asynchronous failures surface as the
   * stream's sticky error. Threading: ordered with other work on `stream`. */
  pk_status (*op_launch)(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                         const pk_tensor *outputs, uint32_t num_outputs, const void *attrs);

  /* --- fusion --- */
  /* Offered a subgraph of device `device`, the backend may claim nodes (see pk_fusion_claim) and return a
   * compiled kernel in *out, or claim nothing and set *out = NULL (always legal, returns PK_OK).
   * Ownership: the subgraph is borrowed for this call only (copy what you keep); *out is released with
   * kernel_destroy. Threading: any thread. */
  pk_status (*fusion_offer)(pk_be_context *ctx, uint32_t device, const pk_subgraph *graph, pk_fusion_claim *claim,
                            pk_be_kernel **out);
  /* Enqueues a fused kernel with its arguments in the order pk_fusion_claim defines. */
  pk_status (*kernel_launch)(pk_be_stream *stream, pk_be_kernel *kernel, const pk_tensor *args, uint32_t num_args);
  /* Releases a kernel. The host guarantees no enqueued launch still uses it. */
  pk_status (*kernel_destroy)(pk_be_context *ctx, pk_be_kernel *kernel);

  /* --- native collectives (ABI 1.2; primkit_collectives.h) ---
   * All NULL, or all set: a backend whose chips talk to each other directly (an NCCL-like library) fills them;
   * NULL means the runtime carries collectives through an engine (MPI), staging through host memory when the
   * device memory is not host-addressable; a plugin filling some but not all is refused at load (PK_ERROR_PLUGIN).
   * Contracts are those of the host functions of the same names; the runtime validates every argument (and, unless
   * PK_COMM_UNCHECKED, that the ranks agree: their call headers travel as ALL_GATHER, or SEND and RECV in a group,
   * of u8 tensors through these same slots, on a stream of the runtime's) first. A communicator on such a backend
   * uses these slots by default (engine "native"; docs/collectives.md). The backend enforces desc->timeout_ms. */
  /* Writes a fresh bootstrap token (the runtime sets engine = "native"; the backend fills internal). */
  pk_status (*comm_get_unique_id)(pk_be_context *ctx, struct pk_comm_unique_id *out);
  /* Joins the communicator `id` as `rank` of `nranks` on `device`. Collective over the ranks. */
  pk_status (*comm_create)(pk_be_context *ctx, uint32_t device, const struct pk_comm_unique_id *id, int32_t nranks,
                           int32_t rank, pk_be_comm **out);
  /* As pk_comm_split: *out = NULL for color -1. */
  pk_status (*comm_split)(pk_be_comm *comm, int32_t color, int32_t key, pk_be_comm **out);
  pk_status (*comm_destroy)(pk_be_comm *comm);
  /* Fails work in flight and every later call; may be called from any thread at any time. */
  pk_status (*comm_abort)(pk_be_comm *comm);
  /* Enqueues one collective on `stream`, ordered like op_launch. Asynchronous failures (a timeout included)
   * surface as the stream's sticky error. */
  pk_status (*collective_launch)(pk_be_stream *stream, pk_be_comm *comm, const struct pk_collective_desc *desc);
  /* Brackets the launches of a group (pk_group_start / pk_group_end) on this backend. */
  pk_status (*group_start)(pk_be_context *ctx);
  pk_status (*group_end)(pk_be_context *ctx);

  /* --- vendor extensions (ABI 1.2) ---
   * The address of a function the backend offers beyond this table, by name (NUL-terminated, by convention
   * prefixed with the backend's name: "acme_set_clock"), or NULL when it offers none by that name. The host hands
   * the pointer to the application (pk_backend_get_proc_address), which casts it to the type the backend
   * documents; the runtime neither calls nor validates extensions. NULL slot: no extensions. Threading: any
   * thread; never fails (NULL is the answer for an unknown name). */
  pk_proc (*get_proc_address)(pk_be_context *ctx, const char *name);
} pk_backend_api;

/* The one symbol a plugin exports. The host passes the newest ABI version it speaks in `host->host_abi_version`;
 * the plugin writes the version it chose into *chosen_version and a pointer to its static table into *out_api.
 * A plugin of the same major chooses min(its version, host version) and fills only the slots that exist in the
 * chosen version; a plugin that cannot serve the host's major returns PK_ERROR_ABI_MISMATCH and writes a
 * NUL-terminated reason into message[0..message_capacity). Ownership: *out_api is static for the life of the
 * loaded library. Threading: may be called several times, from any thread. */
#define PK_BACKEND_ENTRY_SYMBOL "pk_backend_entry"
typedef pk_status (*pk_backend_entry_fn)(const pk_host_services *host, uint32_t *chosen_version,
                                         const pk_backend_api **out_api, char *message, size_t message_capacity);
/* The prototype a plugin defines (exported with default visibility). */
PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                     const pk_backend_api **out_api, char *message, size_t message_capacity);

/* ------------------------------------------------------------------------------------------------------------
 * HOST SIDE: libprimkit, the runtime a framework links.
 * ---------------------------------------------------------------------------------------------------------- */

typedef struct pk_runtime_s *pk_runtime_t; /* a set of loaded backends; the root of all other handles */
typedef struct pk_backend_s *pk_backend_t; /* a loaded plugin (owned by its runtime) */
typedef struct pk_device_s *pk_device_t;   /* a device of a backend (owned by the backend) */
typedef struct pk_stream_s *pk_stream_t;
typedef struct pk_event_s *pk_event_t;
typedef struct pk_buffer_s *pk_buffer_t;         /* an allocation of device memory */
typedef struct pk_graph_s *pk_graph_t;           /* a graph under construction */
typedef struct pk_executable_s *pk_executable_t; /* a graph compiled for one device */

/* Returns the calling thread's last error from any pk_ function. `out` must have struct_size set. */
PK_API pk_status pk_get_last_error(pk_error_info *out);
/* Short static name of a status code, e.g. "PK_ERROR_INVALID_ARGUMENT". Never NULL. */
PK_API const char *pk_status_name(pk_status status);
/* The ABI version this libprimkit speaks (PK_ABI_VERSION of its build). */
PK_API uint32_t pk_runtime_abi_version(void);

/* --- runtime and discovery --- */

enum {
  PK_RUNTIME_STRICT = 1u << 0,      /* fallback to the CPU backend is an error (PK_ERROR_FALLBACK_FORBIDDEN) */
  PK_RUNTIME_NO_DISCOVERY = 1u << 1 /* do not scan PRIMKIT_PLUGIN_PATH and the install folder */
};

/* Levels of a log line, most severe first (the `level` of pk_host_services.log and pk_log_fn). */
enum { PK_LOG_ERROR = 0, PK_LOG_WARNING = 1, PK_LOG_INFO = 2, PK_LOG_DEBUG = 3 };
/* pk_runtime_options.log_verbosity that delivers every line of `level` and the more severe ones. */
#define PK_LOG_UP_TO(level) ((uint32_t)(level) + 1u)

/* Receives one diagnostic line of a runtime (since 1.2): `level` is a PK_LOG_* value, `message` a NUL-terminated
 * line without its newline, valid during the call only. Threading: called from any thread that calls into the
 * runtime, never concurrently for one runtime (the runtime serializes its lines). It must not call pk_ functions
 * of the same runtime. */
typedef void (*pk_log_fn)(void *user, int32_t level, const char *message);
/* A host allocator (since 1.2): returns `bytes` bytes aligned to `alignment` (a power of two, at most 64), or NULL
 * when it cannot (the pk_ call that needed it then fails with PK_ERROR_OUT_OF_MEMORY). Threading: called from any
 * thread, possibly concurrently. */
typedef void *(*pk_host_alloc_fn)(void *user, size_t bytes, size_t alignment);
/* Frees a block of pk_host_alloc_fn with the `bytes` and `alignment` it was asked for. Never called with NULL. */
typedef void (*pk_host_free_fn)(void *user, void *block, size_t bytes, size_t alignment);

typedef struct pk_runtime_options {
  uint32_t struct_size;
  uint32_t flags;               /* PK_RUNTIME_* */
  const char *plugin_path;      /* extra ':'-separated folders to scan before the defaults; may be NULL */
  const char *fallback_backend; /* name of the backend used for fallback; NULL = "cpu" */
  /* --- since 1.2 (a caller with an older struct_size gets the defaults) --- */
  /* Where the runtime's diagnostics go: what it would otherwise print to stderr, and the lines its plugins log
   * through pk_host_services.log. NULL: stderr, as "primkit [warning] message". */
  pk_log_fn log;
  void *log_user; /* passed to `log` */
  /* Which lines reach the log: PK_LOG_UP_TO(level) for `level` and the more severe ones; 0 (the default) means
   * $PRIMKIT_LOG (a level, 0-3) when it is set, else PK_LOG_UP_TO(PK_LOG_WARNING). Above PK_LOG_UP_TO(PK_LOG_DEBUG)
   * is PK_ERROR_INVALID_ARGUMENT. */
  uint32_t log_verbosity;
  /* The allocator of the runtime's own host objects, set both or neither (NULL: malloc). It allocates the
   * runtime handle, every backend and device object, every stream, event, buffer and executable handle (not
   * the memory a buffer holds: that is the backend's mem_alloc), and each device's allocator cache. It does
   * not allocate the contents of the runtime's C++ containers and strings (names, paths, lists, maps), graphs
   * (pk_graph_create has no runtime), error messages, or anything a plugin allocates. Every block is freed by
   * pk_runtime_destroy at the latest; both functions must work until it returns. */
  pk_host_alloc_fn host_alloc;
  pk_host_free_fn host_free;
  void *host_alloc_user; /* passed to host_alloc and host_free */
} pk_runtime_options;

/* Creates a runtime and, unless PK_RUNTIME_NO_DISCOVERY, loads every plugin found in `options->plugin_path`,
 * $PRIMKIT_PLUGIN_PATH and the install's plugin folder (files named libprimkit_backend_*.so). A plugin that
 * fails to load does not fail the runtime: it is listed by pk_runtime_load_errors. options may be NULL.
 * The runtime reads its environment variables (docs/environment.md) here, once: a later change to the
 * environment affects the next runtime created, not this one. PK_ERROR_INVALID_ARGUMENT for a struct_size too
 * small, log_verbosity out of range, or only one of host_alloc and host_free; PK_ERROR_OUT_OF_MEMORY when
 * host_alloc fails.
 * Threading: the runtime may be used from several threads; loading and creation are serialized internally. */
PK_API pk_status pk_runtime_create(const pk_runtime_options *options, pk_runtime_t *out);
/* Destroys every stream, event, buffer, executable and backend of the runtime, then the runtime. */
PK_API void pk_runtime_destroy(pk_runtime_t runtime);
/* Loads one plugin by path. On failure (no entry symbol, ABI mismatch, open failure) nothing is kept and the
 * error names the file and the reason. *out may be NULL. */
PK_API pk_status pk_runtime_load_plugin(pk_runtime_t runtime, const char *path, pk_backend_t *out);
/* Messages of plugins discovery could not load, '\n'-separated (empty string if none). Valid until the next
 * load call. */
PK_API const char *pk_runtime_load_errors(pk_runtime_t runtime);
PK_API pk_status pk_runtime_backend_count(pk_runtime_t runtime, uint32_t *out);
PK_API pk_status pk_runtime_backend(pk_runtime_t runtime, uint32_t index, pk_backend_t *out);
/* Finds a loaded backend by its info name; PK_ERROR_NOT_FOUND otherwise. */
PK_API pk_status pk_runtime_find_backend(pk_runtime_t runtime, const char *name, pk_backend_t *out);

/* --- backends and devices --- */

PK_API pk_status pk_backend_get_info(pk_backend_t backend, pk_backend_info *out);
/* ABI 1.2: a vendor extension of the backend by name (its get_proc_address slot), cast by the caller to the type
 * the backend documents; ggml-backend's get_proc_address. NULL with the reason in pk_get_last_error when the
 * backend is NULL, name is NULL or empty (PK_ERROR_INVALID_ARGUMENT), or the backend offers no
 * extensions or none by that name (PK_UNIMPLEMENTED). The pointer stays valid while the backend is loaded. */
PK_API pk_proc pk_backend_get_proc_address(pk_backend_t backend, const char *name);
/* The ABI version negotiated with this plugin. */
PK_API uint32_t pk_backend_abi_version(pk_backend_t backend);
/* Path the plugin was loaded from (static for the backend's life). */
PK_API const char *pk_backend_path(pk_backend_t backend);
/* The backend's device count, fixed at load. When it is 0 the call still returns PK_OK and pk_get_last_error
 * gives the backend's own reason, as it stated it at load (PK_ERROR_NOT_FOUND; e.g. no driver). */
PK_API pk_status pk_backend_device_count(pk_backend_t backend, uint32_t *out);
PK_API pk_status pk_backend_device(pk_backend_t backend, uint32_t index, pk_device_t *out);
PK_API pk_status pk_device_get_props(pk_device_t device, pk_device_props *out);
PK_API pk_backend_t pk_device_backend(pk_device_t device);
/* The capability query for one op, as the backend answers it (query->device_index is ignored). */
PK_API pk_status pk_device_query_op(pk_device_t device, const pk_op_query *query, pk_op_support *out);

/* --- memory --- */

/* Allocates device memory. Host-visible devices (the CPU) may return cached memory: contents are undefined. */
PK_API pk_status pk_buffer_create(pk_device_t device, uint64_t bytes, pk_buffer_t *out);
/* Frees a buffer after all work queued on it has finished. NULL is ignored. */
PK_API void pk_buffer_destroy(pk_buffer_t buffer);
PK_API uint64_t pk_buffer_size(pk_buffer_t buffer);
/* The pointer tensors on this buffer carry in `data`. */
PK_API void *pk_buffer_data(pk_buffer_t buffer);
PK_API pk_device_t pk_buffer_device(pk_buffer_t buffer);
/* Fills *out with a view of the buffer: data, storage_bytes, device and dtype set; shape and strides point to
 * caller-owned arrays that must outlive every use of the descriptor. strides may be NULL (row-major). */
PK_API pk_status pk_buffer_tensor(pk_buffer_t buffer, pk_dtype dtype, int32_t ndim, const int64_t *shape,
                                  const int64_t *strides, uint64_t byte_offset, pk_tensor *out);
/* Enqueued copies (see the backend slots for the rules). Offsets and sizes are checked against the buffer. */
PK_API pk_status pk_copy_host_to_buffer(pk_stream_t stream, pk_buffer_t dst, uint64_t dst_offset, const void *src,
                                        uint64_t bytes);
PK_API pk_status pk_copy_buffer_to_host(pk_stream_t stream, void *dst, pk_buffer_t src, uint64_t src_offset,
                                        uint64_t bytes);
PK_API pk_status pk_copy_buffer_to_buffer(pk_stream_t stream, pk_buffer_t dst, uint64_t dst_offset, pk_buffer_t src,
                                          uint64_t src_offset, uint64_t bytes);

/* --- streams and events --- */

PK_API pk_status pk_stream_create(pk_device_t device, pk_stream_t *out);
/* Waits for the stream's work, then destroys it. NULL is ignored. */
PK_API void pk_stream_destroy(pk_stream_t stream);
/* Blocks until all enqueued work is done; returns the sticky error of failed asynchronous work. */
PK_API pk_status pk_stream_synchronize(pk_stream_t stream);
PK_API pk_status pk_stream_query(pk_stream_t stream);
PK_API pk_status pk_event_create(pk_device_t device, pk_event_t *out);
PK_API void pk_event_destroy(pk_event_t event);
PK_API pk_status pk_event_record(pk_event_t event, pk_stream_t stream);
PK_API pk_status pk_stream_wait_event(pk_stream_t stream, pk_event_t event);
PK_API pk_status pk_event_synchronize(pk_event_t event);
PK_API pk_status pk_event_query(pk_event_t event);

/* --- single ops --- */

/* Validates the launch against the op table (arity, dtypes, ranks, shapes from the shape rule, strides inside
 * each storage, output aliasing, attribute ranges), then runs it on the stream's backend. If the backend's
 * capability query declines, the op runs on the fallback backend with copies through host memory (counted per
 * op, see pk_runtime_fallback_report) unless the runtime is strict. `attrs` must point to the op's attribute
 * struct with struct_size set, or be NULL for ops without attributes. Nothing is written on failure.
 * Run time: bounded by the tensors' sizes, never by their values. A backend's kernel does work within a fixed
 * multiple of the elements it reads and writes whatever they hold (iterative special functions stop after a
 * fixed number of steps per element: the reference backends' longest is the incomplete gamma's, 10,000; the
 * Hurwitz zeta's recurrence is bounded for any q). A launch cannot be cancelled once enqueued: a caller that
 * needs bounded latency splits the work into smaller launches.
 * Threading: ordered with other work on `stream`. The launch path performs no heap allocation. */
PK_API pk_status pk_launch(pk_stream_t stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                           const pk_tensor *outputs, uint32_t num_outputs, const void *attrs);
/* Computes the shapes and dtypes of an op's outputs from its inputs and attributes (the op's shape and dtype
 * rules). `out_shapes` holds num_outputs * PK_MAX_RANK entries. Validates like pk_launch. */
PK_API pk_status pk_infer_outputs(uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs, const void *attrs,
                                  uint32_t num_outputs, pk_dtype *out_dtypes, int32_t *out_ndims, int64_t *out_shapes);

/* One line per op that fell back: "op backend->fallback launches=N bytes_copied=B". Valid until the calling
 * thread's next call of this function (each thread has its own text). */
PK_API const char *pk_runtime_fallback_report(pk_runtime_t runtime);
/* Fallback counters of one op (0 if it never fell back). */
PK_API pk_status pk_runtime_fallback_count(pk_runtime_t runtime, uint32_t op_id, uint64_t *launches,
                                           uint64_t *bytes_copied);
PK_API void pk_runtime_reset_fallback_counters(pk_runtime_t runtime);

/* --- graphs --- */

/* A graph is built once, compiled for a device, then run many times. Values are numbered densely from 0 in
 * creation order. Threading: a graph under construction is used by one thread at a time; an executable may be
 * run from several threads on different streams. */
PK_API pk_status pk_graph_create(pk_graph_t *out);
PK_API void pk_graph_destroy(pk_graph_t graph);
/* Declares a graph input of the given dtype and shape; *out_value receives its value id. */
PK_API pk_status pk_graph_add_input(pk_graph_t graph, pk_dtype dtype, int32_t ndim, const int64_t *shape,
                                    uint32_t *out_value);
/* Adds a node. Its output dtypes and shapes come from the op's rules; the node is validated as pk_launch
 * would validate it. `attrs` is copied. out_values receives num_outputs value ids (the op's output count). */
PK_API pk_status pk_graph_add_node(pk_graph_t graph, uint32_t op_id, const uint32_t *inputs, uint32_t num_inputs,
                                   const void *attrs, uint32_t *out_values, uint32_t num_outputs);
/* Marks a value as a graph output (in call order). */
PK_API pk_status pk_graph_mark_output(pk_graph_t graph, uint32_t value);
/* Dtype and shape of a value (shape: PK_MAX_RANK entries). */
PK_API pk_status pk_graph_value_info(pk_graph_t graph, uint32_t value, pk_dtype *dtype, int32_t *ndim, int64_t *shape);

typedef struct pk_compile_options {
  uint32_t struct_size;
  int32_t disable_fusion; /* 1 = offer nothing to the backend's fusion hook */
} pk_compile_options;

/* Compiles a graph for a device: composite ops without a native kernel are decomposed, fusable regions
 * (elementwise chains, a chain with a trailing reduction) are offered to the backend's fusion hook, and the
 * rest runs op by op (with fallback as for pk_launch). The graph may be destroyed afterwards. */
PK_API pk_status pk_graph_compile(pk_graph_t graph, pk_device_t device, const pk_compile_options *options,
                                  pk_executable_t *out);
PK_API void pk_executable_destroy(pk_executable_t exec);
/* Runs the executable: inputs and outputs in declaration order, on the executable's device, shapes and dtypes
 * as declared. Intermediates live in one block from the runtime's caching allocator, laid out at compile time
 * by liveness (pk_executable_memory). On an asynchronous device the run does not wait for its work: the block
 * stays with the stream (its later work may reuse it) until pk_stream_synchronize or pk_stream_destroy. */
PK_API pk_status pk_executable_run(pk_executable_t exec, pk_stream_t stream, const pk_tensor *inputs,
                                   uint32_t num_inputs, const pk_tensor *outputs, uint32_t num_outputs);
/* Counts of what compilation produced: fused kernels, nodes they cover, and nodes run one by one. */
PK_API pk_status pk_executable_stats(pk_executable_t exec, uint32_t *fused_kernels, uint32_t *fused_nodes,
                                     uint32_t *single_nodes);
/* ABI 1.2. The device memory one run takes for intermediates: *arena_bytes, the block they share (two share
 * bytes only when no step needs both), and *unshared_bytes, what a buffer per intermediate would take. Views the
 * runtime describes over their source take none. Either pointer may be NULL. PK_ERROR_INVALID_ARGUMENT for a
 * NULL executable. */
PK_API pk_status pk_executable_memory(pk_executable_t exec, uint64_t *arena_bytes, uint64_t *unshared_bytes);

/* --- op metadata (ABI 1.1) ---
 *
 * The op table of this libprimkit as data, so that a framework or a binding never parses primkit_ops.h: ids,
 * names, operands, attribute layouts with defaults and ranges, and the numeric contract. Every string is static
 * (valid for the life of the process) and every function is thread-safe and allocation-free. */

enum { PK_OP_TIER_PRIMITIVE = 0, PK_OP_TIER_COMPOSITE = 1 };
/* How an op's outputs relate to its inputs' storage. */
enum { PK_OP_ALIAS_NEW = 0, PK_OP_ALIAS_VIEW = 1, PK_OP_ALIAS_INPLACE = 2 };
/* The numeric contract class of an op (docs/numerics.md gives the formulas). */
enum {
  PK_CONTRACT_EXACT = 0,             /* bit-exact */
  PK_CONTRACT_CORRECTLY_ROUNDED = 1, /* the exact result, rounded once */
  PK_CONTRACT_ULP = 2,               /* within `contract_ulp` units in the last place */
  PK_CONTRACT_REDUCTION = 3,         /* a summation bound growing with the reduced length */
  PK_CONTRACT_BOUND = 4              /* an absolute bound scaled by the op's conditioning */
};

typedef struct pk_op_desc {
  uint32_t struct_size;
  uint32_t op_id;        /* PK_OP_* */
  const char *name;      /* e.g. "scaled_dot_product_attention" */
  const char *category;  /* e.g. "unary", "reduction", "attention" */
  int32_t tier;          /* PK_OP_TIER_* */
  int32_t alias;         /* PK_OP_ALIAS_* */
  uint32_t num_inputs;   /* declared inputs; a variadic last input stands for 1..n tensors */
  int32_t variadic;      /* 1 if the last input repeats */
  uint32_t num_outputs;
  uint32_t num_attrs;
  uint32_t attrs_size;   /* sizeof(pk_attrs_<name>) of this libprimkit; 0 if the op has no attributes */
  int32_t contract;      /* PK_CONTRACT_* */
  double contract_ulp;   /* the FAIL limit of the contract (ULP or bound factor) for 32/64-bit floats */
  double contract_half;  /* the limit for 16- and 8-bit floats */
  const char *since;     /* ABI version that added the op, e.g. "1.0" */
  const char *doc;       /* one paragraph: what the op computes */
  const char *decomposition; /* composite tier: the normative program in primitives; NULL for primitives */
} pk_op_desc;

/* How an output's dtype follows from the inputs and attributes. */
enum {
  PK_DTYPE_RULE_TYPE_VAR = 0,  /* the dtype bound to type variable `rule_arg` */
  PK_DTYPE_RULE_FIXED = 1,     /* always the dtype id `rule_arg` */
  PK_DTYPE_RULE_ATTR = 2,      /* the dtype attribute number `rule_arg` */
  PK_DTYPE_RULE_REAL_OF = 3,   /* the real type of type variable `rule_arg` (c64 -> f32) */
  PK_DTYPE_RULE_COMPLEX_OF = 4 /* the complex type of type variable `rule_arg` */
};

typedef struct pk_op_operand_desc {
  uint32_t struct_size;
  const char *name;     /* e.g. "q" */
  int32_t is_output;    /* 0 for inputs, 1 for outputs */
  int32_t type_var;     /* inputs: operands with the same type variable share one dtype; -1 if fixed */
  uint32_t dtype_mask;  /* bit (1u << PK_DTYPE_*) per dtype this operand admits (outputs: may produce) */
  int32_t optional;     /* an optional input may be omitted (trailing) */
  int32_t variadic;     /* the last input may repeat */
  int32_t dtype_rule;   /* outputs: PK_DTYPE_RULE_*; inputs: PK_DTYPE_RULE_TYPE_VAR or _FIXED */
  int32_t rule_arg;
} pk_op_operand_desc;

enum { PK_ATTR_I64 = 0, PK_ATTR_F64 = 1, PK_ATTR_BOOL = 2, PK_ATTR_DTYPE = 3, PK_ATTR_INTS = 4, PK_ATTR_ENUM = 5 };
enum {
  PK_ATTR_FLAG_HAS_DEFAULT = 1u << 0, /* default_value / default_ints hold the table's default */
  PK_ATTR_FLAG_REQUIRED = 1u << 1,    /* no default: the caller must choose the value */
  PK_ATTR_FLAG_HAS_MIN = 1u << 2,     /* min_value is an inclusive lower bound (per element for ints) */
  PK_ATTR_FLAG_HAS_MAX = 1u << 3,     /* max_value is an inclusive upper bound */
  PK_ATTR_FLAG_NAN_UNSET = 1u << 4    /* f64 with no safe value to start from (e.g. the attention scale):
                                         * PK_ATTRS_*_INIT and pk_op_init_attrs write NAN, and a launch that
                                         * leaves it NaN is refused */
};

/* One field of an op's attribute struct. Layout: bool, dtype and enum are int32_t; i64 is int64_t; f64 is
 * double; ints is `int32_t num_<name>` at count_offset plus `int64_t <name>[PK_MAX_RANK]` at offset. */
typedef struct pk_op_attr_desc {
  uint32_t struct_size;
  const char *name;
  int32_t type;          /* PK_ATTR_* */
  uint32_t flags;        /* PK_ATTR_FLAG_* */
  uint32_t offset;       /* of the value (or list) in the attribute struct */
  uint32_t count_offset; /* ints: of num_<name>; otherwise 0 */
  double default_value;  /* scalars with HAS_DEFAULT (bool 0/1, dtype id, enum index) */
  const int64_t *default_ints; /* ints with HAS_DEFAULT: the list (NULL when empty) */
  uint32_t num_default_ints;
  double min_value;      /* with HAS_MIN */
  double max_value;      /* with HAS_MAX */
  int32_t dim_of;        /* i64/ints naming axes: the input whose axes the values name; -1 if none */
  uint32_t enum_count;   /* enum: number of choices */
  const char *choices;   /* enum: the choices in index order, separated by '|', e.g. "sum|prod|amax|amin|mean" */
} pk_op_attr_desc;

/* Number of ops in the table (PK_OP_COUNT of this libprimkit, which may exceed the caller's). */
PK_API uint32_t pk_op_count(void);
/* Describes the op at position `index` (0..pk_op_count()-1, ascending id) or, with pk_op_describe, the op of
 * id `op_id`. PK_ERROR_INVALID_ARGUMENT for an index or id out of range or a NULL/short `out`. */
PK_API pk_status pk_op_describe_at(uint32_t index, pk_op_desc *out);
PK_API pk_status pk_op_describe(uint32_t op_id, pk_op_desc *out);
/* The id of the op named `name` (exact match), PK_ERROR_NOT_FOUND if none. */
PK_API pk_status pk_op_find(const char *name, uint32_t *op_id);
/* Operand `index` of an op: inputs 0..num_inputs-1, then outputs num_inputs..num_inputs+num_outputs-1. */
PK_API pk_status pk_op_operand(uint32_t op_id, uint32_t index, pk_op_operand_desc *out);
/* Attribute `index` (0..num_attrs-1) of an op. */
PK_API pk_status pk_op_attr(uint32_t op_id, uint32_t index, pk_op_attr_desc *out);
/* Writes the op's attribute struct with the table's defaults (required f64 attributes: NAN, which a launch
 * refuses until the caller sets them) into `attrs`, `size` bytes, and sets struct_size. `size` must be at
 * least 4; fields past `size` are not written and struct_size is min(size, attrs_size). */
PK_API pk_status pk_op_init_attrs(uint32_t op_id, void *attrs, uint32_t size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PRIMKIT_H */
