/*
 * primkit_collectives.h — the collectives extension of the PrimKit C ABI (since ABI 1.2).
 *
 * Communicators over ranks (processes), and collectives on PrimKit tensors ordered on PrimKit streams:
 * all-reduce (sum, prod, max, min, avg), all-gather, reduce-scatter, broadcast, reduce, all-to-all, send/recv,
 * and groups. The data moves through an existing distributed engine loaded at run time — MPI
 * (libprimkit_engine_mpi.so, Open MPI or MPICH) for every backend, or the backend's own collectives (the native
 * slots of pk_backend_api: NCCL for the cuda backend) — never a
 * transport of PrimKit's own. docs/collectives.md explains the model; this header states each contract.
 *
 * Everything in primkit.h's preamble holds here too (C99, struct_size first, append-only, status codes,
 * thread-local last error, borrowed pointers). In addition:
 *   - Collective calls are COLLECTIVE: every rank of the communicator makes the same calls, in the same order,
 *     with matching arguments (the same dtype, reduction, root, and the shapes each function names). A rank
 *     whose arguments disagree with another's gets PK_ERROR_INVALID_ARGUMENT on every rank, naming the ranks
 *     and what differs, and no data moves (the communicator stays usable), unless the communicator was made with
 *     PK_COMM_UNCHECKED.
 *   - Ordering: a collective on `stream` runs after the work enqueued on `stream` before it and before the work
 *     enqueued after it. With an engine (not the backend's own collectives) the call returns when the collective
 *     has finished on this rank: the host waits. With native collectives it returns once the collective is
 *     enqueued on the stream (after the cross-rank check, unless PK_COMM_UNCHECKED).
 *   - Failure: a call that does not finish within the communicator's timeout returns PK_ERROR_TIMEOUT (a rank
 *     died, hangs, or does not make the call); pk_comm_abort makes calls in flight and later return
 *     PK_ERROR_COMM_FAILED. Either leaves the communicator failed: every later call returns
 *     PK_ERROR_COMM_FAILED with the first reason, and the buffers of the failed call are undefined until the
 *     communicator is destroyed. Destroy it and make a new one.
 *   - Tensors are dense (strides NULL or row-major), on the communicator's device, with a dtype of primkit.h.
 *   - Threading: one communicator is used by one thread at a time, except pk_comm_abort, which any thread may
 *     call at any time. Different communicators may be used concurrently from different threads.
 */
#ifndef PRIMKIT_COLLECTIVES_H
#define PRIMKIT_COLLECTIVES_H

#include "primkit/primkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------------------
 * Types shared by hosts and backends with native collectives
 * ---------------------------------------------------------------------------------------------------------- */

/* The reductions of all-reduce, reduce-scatter and reduce. */
enum {
  PK_REDUCE_SUM = 0,  /* bool: logical or */
  PK_REDUCE_PROD = 1, /* bool: logical and */
  PK_REDUCE_MAX = 2,  /* not for complex dtypes; bool: or */
  PK_REDUCE_MIN = 3,  /* not for complex dtypes; bool: and */
  PK_REDUCE_AVG = 4,  /* sum / nranks; not for bool */
  PK_REDUCE_COUNT = 5
};

/* What a pk_collective_desc asks for. */
enum {
  PK_COLLECTIVE_ALL_REDUCE = 0,
  PK_COLLECTIVE_ALL_GATHER = 1,
  PK_COLLECTIVE_REDUCE_SCATTER = 2,
  PK_COLLECTIVE_BROADCAST = 3,
  PK_COLLECTIVE_REDUCE = 4,
  PK_COLLECTIVE_ALL_TO_ALL = 5,
  PK_COLLECTIVE_SEND = 6,
  PK_COLLECTIVE_RECV = 7,
  PK_COLLECTIVE_COUNT = 8
};

#define PK_COMM_ENGINE_NAME_CAPACITY 16
#define PK_COMM_UNIQUE_ID_BYTES 128

/* The bootstrap token of a communicator, like ncclUniqueId: one rank makes it (pk_comm_get_unique_id), the
 * application hands it to every other rank out of band (a file, a key-value store, MPI_Bcast), and each rank
 * passes it to pk_comm_create. `engine` names the engine (or "native") that made it; `internal` is that
 * engine's, opaque to the caller. Plain bytes: copy it with memcpy. */
typedef struct pk_comm_unique_id {
  uint32_t struct_size;
  char engine[PK_COMM_ENGINE_NAME_CAPACITY]; /* NUL-terminated, e.g. "mpi" */
  uint8_t internal[PK_COMM_UNIQUE_ID_BYTES];
} pk_comm_unique_id;

/* One collective or point-to-point operation, as the backend slot collective_launch receives it (the host API
 * below builds it). Tensors are validated as the host functions say before a backend sees them. */
typedef struct pk_collective_desc {
  uint32_t struct_size;
  int32_t kind;          /* PK_COLLECTIVE_* */
  int32_t reduce_op;     /* PK_REDUCE_* for reductions, -1 otherwise */
  int32_t peer;          /* broadcast/reduce: the root rank; send/recv: the other rank; -1 otherwise */
  const pk_tensor *send; /* NULL where the operation reads nothing on this rank (recv; broadcast off root) */
  const pk_tensor *recv; /* NULL where the operation writes nothing on this rank (send; reduce off root) */
  uint32_t timeout_ms;   /* the communicator's timeout for this call */
} pk_collective_desc;

/* ------------------------------------------------------------------------------------------------------------
 * Host side: communicators
 * ---------------------------------------------------------------------------------------------------------- */

typedef struct pk_comm_s *pk_comm_t; /* a group of ranks, one device per rank (owned by the caller) */

enum {
  /* Skip the exchange that compares every rank's arguments before data moves: one fewer round trip per call,
   * and arguments that disagree across ranks are then undefined behaviour, as with MPI and NCCL. */
  PK_COMM_UNCHECKED = 1u << 0
};

#define PK_COMM_DEFAULT_TIMEOUT_MS 300000u /* 5 minutes, when pk_comm_options.timeout_ms is 0 */

typedef struct pk_comm_options {
  uint32_t struct_size;
  uint32_t flags; /* PK_COMM_* */
  /* The engine: "mpi", "native" (the backend's own collectives), or NULL for $PRIMKIT_COLLECTIVES_ENGINE,
   * else "native" where the device's backend offers native collectives and "mpi" elsewhere. */
  const char *engine;
  /* NULL: the ranks are the processes the launcher started (mpirun, srun: the engine's world), and nranks and
   * rank must be -1 or agree with it. Otherwise the token every rank received from pk_comm_get_unique_id, with
   * nranks (>= 1) and this process's rank (0..nranks-1). */
  const pk_comm_unique_id *unique_id;
  int32_t nranks;
  int32_t rank;
  uint32_t timeout_ms; /* per-call timeout; 0 = PK_COMM_DEFAULT_TIMEOUT_MS */
} pk_comm_options;

/* Whether the engine `name` ("mpi"; "native": a loaded backend offers native collectives) can run here:
 * PK_OK, or PK_ERROR_NOT_FOUND with the reason in pk_get_last_error (library absent, symbols missing, no device).
 * Loads the engine on first use. Threading: any thread. */
PK_API pk_status pk_comm_engine_available(const char *name);

/* Makes a fresh bootstrap token of engine `engine` (NULL: $PRIMKIT_COLLECTIVES_ENGINE, else "native" while a
 * loaded backend offers native collectives, else "mpi"). Call it on one rank.
 * With the MPI engine, every process of the launcher's world takes part in each pk_comm_create made from a
 * token (MPI_Comm_split underneath); ranks that do not join pass nranks = 0 and get *out = NULL. */
PK_API pk_status pk_comm_get_unique_id(const char *engine, pk_comm_unique_id *out);

/* Creates this rank's handle of a communicator whose rank runs on `device`. Collective over the ranks (see
 * options->unique_id). The ranks agree on nranks and on their ranks being distinct, or every rank gets
 * PK_ERROR_INVALID_ARGUMENT. options may be NULL (launcher world, default engine and timeout).
 * Errors: PK_ERROR_NOT_FOUND (engine unavailable; the message says why), PK_ERROR_INVALID_ARGUMENT,
 * PK_ERROR_TIMEOUT. */
PK_API pk_status pk_comm_create(pk_device_t device, const pk_comm_options *options, pk_comm_t *out);

/* Splits `comm` like MPI_Comm_split: ranks passing the same color >= 0 form a new communicator, ordered by
 * key, then by their rank in `comm`; a rank passing color -1 takes part and gets *out = NULL. Collective over
 * `comm`; the new communicator inherits device, engine, flags and timeout. */
PK_API pk_status pk_comm_split(pk_comm_t comm, int32_t color, int32_t key, pk_comm_t *out);

/* Releases this rank's handle and the engine's resources. After a call was given up in flight (a timeout, an
 * abort), the engine's pending transfers and their buffers are kept alive instead (they may still complete).
 * NULL is ignored. Not collective. */
PK_API void pk_comm_destroy(pk_comm_t comm);

/* Marks the communicator failed: a call in flight on another thread returns PK_ERROR_COMM_FAILED within a
 * few milliseconds, as does every later call. Local: the other ranks see their calls time out, unless they
 * abort too. Threading: any thread, any time. */
PK_API pk_status pk_comm_abort(pk_comm_t comm);

PK_API pk_status pk_comm_rank(pk_comm_t comm, int32_t *out);
PK_API pk_status pk_comm_size(pk_comm_t comm, int32_t *out);
PK_API pk_device_t pk_comm_device(pk_comm_t comm);
/* The engine's name ("mpi", ..., or "native"). Static for the life of the process. */
PK_API const char *pk_comm_engine(pk_comm_t comm);
/* Sets the timeout of every later call (ms, > 0). */
PK_API pk_status pk_comm_set_timeout(pk_comm_t comm, uint32_t timeout_ms);
/* PK_OK while healthy; otherwise the status that failed it, with the first reason in pk_get_last_error. */
PK_API pk_status pk_comm_status(pk_comm_t comm);

/* How the communicator's calls ran. Staging is the collectives' fallback: a backend without native collectives
 * whose memory the host cannot address has every buffer copied through host memory; a strict runtime
 * (PK_RUNTIME_STRICT) refuses that with PK_ERROR_FALLBACK_FORBIDDEN instead. */
typedef struct pk_comm_stats {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t calls;        /* collectives and send/recv completed */
  uint64_t direct_calls; /* device memory handed to the engine in place (host-addressable memory) */
  uint64_t staged_calls; /* copied through host memory */
  uint64_t staged_bytes; /* bytes copied device->host plus host->device */
  uint64_t native_calls; /* run by the backend's own collectives */
  uint64_t bytes_sent;   /* payload bytes this rank handed to the engine */
} pk_comm_stats;

PK_API pk_status pk_comm_get_stats(pk_comm_t comm, pk_comm_stats *out);

/* ------------------------------------------------------------------------------------------------------------
 * Host side: collectives. `stream` must be on the communicator's device. Nothing is written on failure
 * before data moves (validation, argument mismatch across ranks); see the preamble for later failures.
 *
 * Reduction contract (all-reduce, reduce-scatter, reduce): element i of the result is the reduction of element
 * i of every rank's input IN RANK ORDER, ((x0 op x1) op x2) ... op x(n-1), computed in the compute type (f32 for
 * f16, bf16 and fp8; the dtype itself otherwise), each step rounded in it, and stored with one rounding; avg
 * divides that sum by nranks in the compute type before the store (integers: the exact sum, truncated toward zero).
 * Integers wrap. max/min propagate NaN (the lowest rank's NaN) and keep the lowest rank's value on ties (so -0 vs +0 is
 * decided by rank). Consequence: results are bitwise identical on every rank and between runs, for a fixed
 * rank count, whatever the engine's own algorithms.
 * ---------------------------------------------------------------------------------------------------------- */

/* recv = reduction of every rank's send. send and recv have the same dtype and shape (the same on every rank);
 * recv may be send (in place). */
PK_API pk_status pk_all_reduce(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv,
                               int32_t reduce_op);
/* recv = the ranks' send tensors concatenated in rank order: recv has nranks times send's elements (any shape
 * with that count, e.g. [nranks, ...] or [nranks * d0, ...]). In place: send may be the rank's slice of recv. */
PK_API pk_status pk_all_gather(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv);
/* send has nranks times recv's elements; rank r receives the reduction of slice r (in rank order, as above). */
PK_API pk_status pk_reduce_scatter(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv,
                                   int32_t reduce_op);
/* recv on every rank = send of `root`. send is read on the root only (NULL elsewhere is fine; on the root it
 * may be recv); every rank passes recv of the same shape. */
PK_API pk_status pk_broadcast(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv,
                              int32_t root);
/* recv on `root` = reduction of every rank's send; recv is written on the root only (NULL elsewhere is fine). */
PK_API pk_status pk_reduce(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv,
                           int32_t reduce_op, int32_t root);
/* send and recv have the same dtype and element count, a multiple of nranks: slice j of send goes to rank j,
 * and slice i of recv comes from rank i. Not in place. */
PK_API pk_status pk_all_to_all(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, const pk_tensor *recv);
/* Point to point: `peer` receives exactly this dtype and shape with pk_recv. A rank that sends to a peer which
 * also sends to it puts both calls in a group (pk_group_start/end), or they wait for each other. */
PK_API pk_status pk_send(pk_comm_t comm, pk_stream_t stream, const pk_tensor *send, int32_t peer);
PK_API pk_status pk_recv(pk_comm_t comm, pk_stream_t stream, const pk_tensor *recv, int32_t peer);

/* Groups, like ncclGroupStart/End: the calls between them (on any communicators, from this thread) are
 * validated when made and run together at the outermost pk_group_end, which returns the first failure. Groups
 * nest. Collectives of one communicator keep their order inside a group; sends and receives may be in any
 * order. The tensors must stay valid until pk_group_end returns. */
PK_API pk_status pk_group_start(void);
PK_API pk_status pk_group_end(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PRIMKIT_COLLECTIVES_H */
