/*
 * collective_engine.h — the interface between libprimkit and a collectives engine (libprimkit_engine_<name>.so,
 * a thin adapter over an existing distributed library: MPI, NCCL). Internal to this source tree for now: engines
 * are built with libprimkit, so this interface may change between releases (it carries a version all the same,
 * and is plain C so that an engine can be written against any library).
 *
 * An engine moves bytes; it never reduces. libprimkit composes the collectives of primkit_collectives.h from
 * these transfers and reduces locally, in rank order, which is what makes results reproducible whatever the
 * engine's own algorithms. Every transfer is nonblocking: start() returns a request, test() polls it, so that
 * libprimkit can enforce timeouts and aborts without the engine's cooperation.
 *
 * Errors: a function that fails returns a pk_status and writes a NUL-terminated reason into `err`
 * (PK_MESSAGE_CAPACITY bytes). Threading: the runtime serializes calls on one communicator; calls on different
 * communicators may come from different threads (an engine whose library cannot take that serializes itself).
 */
#ifndef PRIMKIT_COLLECTIVE_ENGINE_H
#define PRIMKIT_COLLECTIVE_ENGINE_H

#include "primkit/primkit_collectives.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PK_ENGINE_INTERFACE_VERSION 1u
#define PK_ENGINE_ENTRY_SYMBOL "pk_collective_engine_entry"

typedef struct pk_engine_comm pk_engine_comm;
typedef struct pk_engine_request pk_engine_request;

enum {
  PK_TRANSFER_ALLGATHER = 0,  /* recv[r*count .. ) = rank r's send[0 .. count) */
  PK_TRANSFER_ALLGATHERV = 1, /* recv[recv_displs[r] ..) = rank r's send, recv_counts[r] units; in place when
                                 send == NULL (this rank's part is already in recv) */
  PK_TRANSFER_ALLTOALLV = 2,  /* send[send_displs[r] ..) of send_counts[r] units -> rank r, into its recv */
  PK_TRANSFER_GATHERV = 3,    /* as ALLGATHERV, but only `peer` (the root) receives */
  PK_TRANSFER_BCAST = 4,      /* recv[0 .. count) on every rank = recv of `peer` (the root) */
  PK_TRANSFER_SEND = 5,       /* count units of send -> `peer`, with `tag` */
  PK_TRANSFER_RECV = 6        /* count units from `peer` with `tag` into recv */
};

/* One nonblocking transfer. Counts and displacements are in units of `unit_bytes` (the element size), arrays of
 * the communicator's size. Buffers are host-addressable and stay valid until test() reports completion. */
typedef struct pk_engine_transfer {
  int32_t kind; /* PK_TRANSFER_* */
  uint32_t unit_bytes;
  const void *send;
  void *recv;
  int64_t count;
  const int64_t *send_counts;
  const int64_t *send_displs;
  const int64_t *recv_counts;
  const int64_t *recv_displs;
  int32_t peer;
  int32_t tag; /* SEND / RECV: 0 .. 32766 (an engine may keep 32767 for itself) */
} pk_engine_transfer;

typedef struct pk_engine_api {
  uint32_t struct_size;
  uint32_t interface_version; /* PK_ENGINE_INTERFACE_VERSION */
  const char *name;           /* "mpi" */
  /* Readies the library (MPI_Init_thread when the application has not). PK_ERROR_NOT_FOUND with the reason
   * when the engine cannot run here. Called once per process before anything else. */
  pk_status (*init)(char *err);
  /* Writes a fresh token of PK_COMM_UNIQUE_ID_BYTES bytes. */
  pk_status (*unique_id)(uint8_t *id, char *err);
  /* id NULL: the launcher's world (nranks and rank -1 or matching). Otherwise every process of the world calls
   * it with the same id; nranks 0 means "not a member" (*out = NULL). */
  pk_status (*comm_create)(const uint8_t *id, int32_t nranks, int32_t rank, pk_engine_comm **out, char *err);
  pk_status (*comm_split)(pk_engine_comm *comm, int32_t color, int32_t key, pk_engine_comm **out, char *err);
  /* healthy = 0: requests may be pending; the engine must not wait for them (it may leak them). */
  void (*comm_destroy)(pk_engine_comm *comm, int32_t healthy);
  int32_t (*comm_rank)(const pk_engine_comm *comm);
  int32_t (*comm_size)(const pk_engine_comm *comm);
  pk_status (*start)(pk_engine_comm *comm, const pk_engine_transfer *transfer, pk_engine_request **out, char *err);
  /* PK_OK: done (the request is freed); PK_NOT_READY: not yet; an error: failed (the request is freed).
   * Never blocks. */
  pk_status (*test)(pk_engine_request *request, char *err);
  /* Drops a request that will never be tested again (after a timeout or abort), without waiting for it. */
  void (*abandon)(pk_engine_request *request);
} pk_engine_api;

typedef pk_status (*pk_engine_entry_fn)(uint32_t host_interface_version, const pk_engine_api **out, char *err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PRIMKIT_COLLECTIVE_ENGINE_H */
