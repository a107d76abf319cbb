// engine_mpi.cpp — the MPI collectives engine: libprimkit's transfers (collective_engine.h) as MPI's nonblocking
// calls. Works with any MPI-3 library (Debian's Open MPI or MPICH); what runs with 2 ranks on one machine under
// mpirun is what runs on a cluster under mpirun or srun.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "collective_engine.h"

namespace {

// Serializes every MPI call: correct whatever thread level the library grants, and cheap (the runtime already
// serializes calls on one communicator, so this is contended only across communicators).
std::mutex g_mpi_mu;
bool g_we_initialized = false;
// A timed-out or abandoned request may never complete: MPI_Finalize could then wait forever, so a process that
// left one behind skips it (the launcher reports the missing finalize; the process was failing anyway).
bool g_abandoned = false;

constexpr char kIdMagic[8] = {'P', 'K', 'M', 'P', 'I', 'I', 'D', '1'};

struct Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 0;
};

// Small collective transfers skip MPI's nonblocking collectives: their schedules (Open MPI's libnbc) advance one
// step per MPI_Test and cost several microseconds more than the blocking calls for a few KiB. Instead each message
// goes straight to its peer (MPI_Isend / MPI_Irecv, tested together), cut into fragments that stay below the
// shared-memory transports' eager limits (Open MPI's vader: 4 KiB including its header), so that no message waits
// for a rendezvous handshake. The choice depends only on what every rank passes alike (count, recv_counts, the
// communicator's size), so all ranks take the same path for a transfer.
constexpr uint64_t kDirectMaxMessage = 16 * 1024;  // bytes per peer, at most
constexpr int kDirectMaxRanks = 32;                // n - 1 messages per rank: a direct exchange, not a tree
constexpr uint64_t kFragmentBytes = 2048;
constexpr int kDirectTag = 32767;  // the runtime's SEND / RECV tags stay below it (collective_engine.h)

struct Request {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<MPI_Request> direct;  // a small transfer's point-to-point messages, when it took the direct path
  // The v-collectives read their count arrays until they complete.
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
};

pk_status fail(char *err, pk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
pk_status fail(char *err, pk_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(err, PK_MESSAGE_CAPACITY, fmt, ap);
  va_end(ap);
  return status;
}

pk_status mpi_fail(char *err, int code, const char *call) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return fail(err, PK_ERROR_DEVICE, "MPI: %s failed: %s (MPI error %d)", call, text, code);
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && g_we_initialized && !g_abandoned) MPI_Finalize();
}

// Elements move as opaque units of their size: the engine never interprets them (libprimkit reduces).
MPI_Datatype unit_type(uint32_t bytes) {
  switch (bytes) {
    case 1:
      return MPI_BYTE;
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    case 8:
      return MPI_UINT64_T;
    default:
      break;
  }
  static MPI_Datatype pair = MPI_DATATYPE_NULL;  // 16-byte complex128 elements; made once, under g_mpi_mu
  if (pair == MPI_DATATYPE_NULL) {
    MPI_Type_contiguous(2, MPI_UINT64_T, &pair);
    MPI_Type_commit(&pair);
  }
  return bytes == 16 ? pair : MPI_DATATYPE_NULL;
}

bool to_int(int64_t v, int &out) {
  if (v < 0 || v > INT_MAX) return false;
  out = static_cast<int>(v);
  return true;
}

bool to_ints(const int64_t *v, int n, std::vector<int> &out) {
  out.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (!to_int(v[i], out[static_cast<size_t>(i)])) return false;
  }
  return true;
}

// Posts `bytes` at `p` to (or from) `peer` as fragments of kFragmentBytes, in order (MPI keeps the order of
// messages between two ranks on one tag, so the fragments of successive transfers cannot cross).
int post_fragments(Request &req, bool send, const uint8_t *p, uint64_t bytes, int peer, MPI_Comm comm) {
  uint64_t off = 0;
  do {
    const int len = static_cast<int>(std::min(kFragmentBytes, bytes - off));
    req.direct.emplace_back(MPI_REQUEST_NULL);
    int rc = send
                 ? MPI_Isend(p + off, len, MPI_BYTE, peer, kDirectTag, comm, &req.direct.back())
                 : MPI_Irecv(const_cast<uint8_t *>(p) + off, len, MPI_BYTE, peer, kDirectTag, comm, &req.direct.back());
    if (rc != MPI_SUCCESS) return rc;
    off += static_cast<uint64_t>(len);
  } while (off < bytes);
  return MPI_SUCCESS;
}

// The direct path for ALLGATHER, ALLGATHERV and BCAST (see kDirectMaxMessage); false when the transfer is not
// small. `rc` is MPI's verdict on the messages posted. Called under g_mpi_mu.
bool start_direct(const Comm &comm, const pk_engine_transfer &t, Request &req, int &rc) {
  const int n = comm.size, me = comm.rank;
  const uint64_t unit = t.unit_bytes;
  if (n < 2 || n > kDirectMaxRanks) return false;
  const uint8_t *send = static_cast<const uint8_t *>(t.send);
  uint8_t *recv = static_cast<uint8_t *>(t.recv);
  rc = MPI_SUCCESS;
  switch (t.kind) {
    case PK_TRANSFER_ALLGATHER:
    case PK_TRANSFER_ALLGATHERV: {
      const bool v = t.kind == PK_TRANSFER_ALLGATHERV;
      uint64_t largest = 0;
      for (int r = 0; r < n; ++r)
        largest =
            std::max<uint64_t>(largest, v ? static_cast<uint64_t>(t.recv_counts[r]) : static_cast<uint64_t>(t.count));
      if (largest * unit > kDirectMaxMessage) return false;
      auto part = [&](int r) {
        return recv + (v ? static_cast<uint64_t>(t.recv_displs[r]) : static_cast<uint64_t>(r) * t.count) * unit;
      };
      auto bytes = [&](int r) {
        return (v ? static_cast<uint64_t>(t.recv_counts[r]) : static_cast<uint64_t>(t.count)) * unit;
      };
      if (send != nullptr && bytes(me) && send != part(me)) std::memcpy(part(me), send, bytes(me));
      const uint8_t *mine = part(me);
      req.direct.reserve(static_cast<size_t>(2 * (n - 1)) *
                         ((largest * unit + kFragmentBytes - 1) / kFragmentBytes + 1));
      for (int j = 1; j < n && rc == MPI_SUCCESS; ++j) {
        const int from = (me - j + n) % n, to = (me + j) % n;
        if (bytes(from)) rc = post_fragments(req, false, part(from), bytes(from), from, comm.comm);
        if (rc == MPI_SUCCESS && bytes(me)) rc = post_fragments(req, true, mine, bytes(me), to, comm.comm);
      }
      return true;
    }
    case PK_TRANSFER_BCAST: {
      const uint64_t bytes = static_cast<uint64_t>(t.count) * unit;
      if (bytes > kDirectMaxMessage) return false;
      if (bytes == 0) return true;
      if (me != t.peer) return (rc = post_fragments(req, false, recv, bytes, t.peer, comm.comm)), true;
      req.direct.reserve(static_cast<size_t>(n - 1) * ((bytes + kFragmentBytes - 1) / kFragmentBytes));
      for (int r = 0; r < n && rc == MPI_SUCCESS; ++r) {
        if (r != me) rc = post_fragments(req, true, recv, bytes, r, comm.comm);
      }
      return true;
    }
    default:
      return false;
  }
}

pk_status engine_init(char *err) {
  std::lock_guard<std::mutex> lock(g_mpi_mu);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) return fail(err, PK_ERROR_NOT_FOUND, "MPI: the application already called MPI_Finalize");
  if (initialized) return PK_OK;  // the application owns MPI: it initializes and finalizes it
  // libprimkit loads this engine with RTLD_LOCAL; Open MPI's own plugins expect libmpi's symbols to be global.
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&MPI_Init_thread), &info) != 0 && info.dli_fname != nullptr) {
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  }
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) return fail(err, PK_ERROR_NOT_FOUND, "MPI: MPI_Init_thread failed (MPI error %d)", rc);
  g_we_initialized = true;
  std::atexit(finalize_at_exit);  // safe: libprimkit loads engines with RTLD_NODELETE
  return PK_OK;
}

pk_status engine_unique_id(uint8_t *id, char *err) {
  std::memset(id, 0, PK_COMM_UNIQUE_ID_BYTES);
  std::memcpy(id, kIdMagic, sizeof kIdMagic);
  std::random_device rd;
  for (int i = 0; i < 4; ++i) {
    uint32_t r = rd();
    std::memcpy(id + sizeof kIdMagic + 4 * i, &r, 4);
  }
  (void)err;
  return PK_OK;
}

pk_status finish_comm(MPI_Comm c, pk_engine_comm **out, char *err) {
  if (c == MPI_COMM_NULL) {
    *out = nullptr;
    return PK_OK;
  }
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  auto comm = std::make_unique<Comm>();
  comm->comm = c;
  MPI_Comm_rank(c, &comm->rank);
  MPI_Comm_size(c, &comm->size);
  (void)err;
  *out = reinterpret_cast<pk_engine_comm *>(comm.release());
  return PK_OK;
}

pk_status engine_comm_create(const uint8_t *id, int32_t nranks, int32_t rank, pk_engine_comm **out, char *err) {
  std::lock_guard<std::mutex> lock(g_mpi_mu);
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm c = MPI_COMM_NULL;
  if (id == nullptr) {
    if ((nranks != -1 && nranks != world_size) || (rank != -1 && rank != world_rank)) {
      return fail(err, PK_ERROR_INVALID_ARGUMENT,
                  "the launcher started this process as rank %d of %d, but the options ask for rank %d of %d (pass "
                  "-1 for both, or a unique id)",
                  world_rank, world_size, rank, nranks);
    }
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Comm_dup");
    return finish_comm(c, out, err);
  }
  if (std::memcmp(id, kIdMagic, sizeof kIdMagic) != 0) {
    return fail(err, PK_ERROR_INVALID_ARGUMENT, "the unique id was not made by the MPI engine");
  }
  uint32_t color = 0;
  for (size_t i = 0; i < PK_COMM_UNIQUE_ID_BYTES; ++i) color = color * 16777619u ^ id[i];
  // Every process of the world takes part in the split; the members check together that the ranks they claim
  // are 0..nranks-1, each once.
  int rc =
      MPI_Comm_split(MPI_COMM_WORLD, nranks == 0 ? MPI_UNDEFINED : static_cast<int>(color & 0x7fffffffu), rank, &c);
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Comm_split");
  if (c == MPI_COMM_NULL) return finish_comm(c, out, err);
  int got_rank = 0, got_size = 0;
  MPI_Comm_rank(c, &got_rank);
  MPI_Comm_size(c, &got_size);
  int mine[2] = {rank, nranks}, lo[2] = {0, 0}, hi[2] = {0, 0};
  MPI_Allreduce(mine, lo, 2, MPI_INT, MPI_MIN, c);
  MPI_Allreduce(mine, hi, 2, MPI_INT, MPI_MAX, c);
  int bad_local = (got_rank != rank) ? 1 : 0, bad = 0;
  MPI_Allreduce(&bad_local, &bad, 1, MPI_INT, MPI_MAX, c);
  if (lo[1] != hi[1] || hi[1] != got_size || bad) {
    MPI_Comm_free(&c);
    return fail(err, PK_ERROR_INVALID_ARGUMENT,
                "%d processes joined the unique id, claiming nranks from %d to %d and ranks from %d to %d: every "
                "member must pass the same nranks, equal to the number of members, and a distinct rank below it",
                got_size, lo[1], hi[1], lo[0], hi[0]);
  }
  return finish_comm(c, out, err);
}

pk_status engine_comm_split(pk_engine_comm *ec, int32_t color, int32_t key, pk_engine_comm **out, char *err) {
  std::lock_guard<std::mutex> lock(g_mpi_mu);
  Comm *comm = reinterpret_cast<Comm *>(ec);
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Comm_split(comm->comm, color < 0 ? MPI_UNDEFINED : color, key, &c);
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Comm_split");
  return finish_comm(c, out, err);
}

void engine_comm_destroy(pk_engine_comm *ec, int32_t healthy) {
  Comm *comm = reinterpret_cast<Comm *>(ec);
  if (comm == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mpi_mu);
  if (healthy) {
    MPI_Comm_free(&comm->comm);
  } else {
    g_abandoned = true;  // pending requests still name the MPI communicator: keep it
  }
  delete comm;
}

int32_t engine_comm_rank(const pk_engine_comm *ec) {
  return reinterpret_cast<const Comm *>(ec)->rank;
}
int32_t engine_comm_size(const pk_engine_comm *ec) {
  return reinterpret_cast<const Comm *>(ec)->size;
}

pk_status engine_start(pk_engine_comm *ec, const pk_engine_transfer *t, pk_engine_request **out, char *err) {
  Comm *comm = reinterpret_cast<Comm *>(ec);
  MPI_Datatype type = unit_type(t->unit_bytes);
  if (type == MPI_DATATYPE_NULL) return fail(err, PK_ERROR_INTERNAL, "MPI engine: no unit of %u bytes", t->unit_bytes);
  auto req = std::make_unique<Request>();
  int count = 0;
  const bool vector =
      t->kind == PK_TRANSFER_ALLGATHERV || t->kind == PK_TRANSFER_ALLTOALLV || t->kind == PK_TRANSFER_GATHERV;
  bool fits = vector || to_int(t->count, count);
  if (fits && (t->kind == PK_TRANSFER_ALLTOALLV)) {
    fits =
        to_ints(t->send_counts, comm->size, req->send_counts) && to_ints(t->send_displs, comm->size, req->send_displs);
  }
  if (fits && vector) {
    fits =
        to_ints(t->recv_counts, comm->size, req->recv_counts) && to_ints(t->recv_displs, comm->size, req->recv_displs);
  }
  if (!fits) {
    return fail(err, PK_ERROR_INVALID_ARGUMENT,
                "the MPI engine moves at most 2^31-1 elements per transfer and rank (MPI-3 counts are int)");
  }
  std::lock_guard<std::mutex> lock(g_mpi_mu);
  int rc = MPI_SUCCESS;
  const char *call = "";
  void *send = const_cast<void *>(t->send);
  if (start_direct(*comm, *t, *req, rc)) {
    if (rc != MPI_SUCCESS) {
      // Messages already posted may still move: the request is dropped as an abandoned one would be.
      g_abandoned = true;
      static_cast<void>(req.release());
      return mpi_fail(err, rc, "MPI_Isend/MPI_Irecv");
    }
    *out = reinterpret_cast<pk_engine_request *>(req.release());
    return PK_OK;
  }
  switch (t->kind) {
    case PK_TRANSFER_ALLGATHER:
      call = "MPI_Iallgather";
      rc = MPI_Iallgather(send, count, type, t->recv, count, type, comm->comm, &req->request);
      break;
    case PK_TRANSFER_ALLGATHERV: {
      call = "MPI_Iallgatherv";
      int mine = req->recv_counts[static_cast<size_t>(comm->rank)];
      rc = MPI_Iallgatherv(send ? send : MPI_IN_PLACE, send ? mine : 0, type, t->recv, req->recv_counts.data(),
                           req->recv_displs.data(), type, comm->comm, &req->request);
      break;
    }
    case PK_TRANSFER_GATHERV: {
      call = "MPI_Igatherv";
      int mine = req->recv_counts[static_cast<size_t>(comm->rank)];
      bool root = comm->rank == t->peer;
      rc = MPI_Igatherv(root && send == nullptr ? MPI_IN_PLACE : send, mine, type, t->recv, req->recv_counts.data(),
                        req->recv_displs.data(), type, t->peer, comm->comm, &req->request);
      break;
    }
    case PK_TRANSFER_ALLTOALLV:
      call = "MPI_Ialltoallv";
      rc = MPI_Ialltoallv(send, req->send_counts.data(), req->send_displs.data(), type, t->recv,
                          req->recv_counts.data(), req->recv_displs.data(), type, comm->comm, &req->request);
      break;
    case PK_TRANSFER_BCAST:
      call = "MPI_Ibcast";
      rc = MPI_Ibcast(t->recv, count, type, t->peer, comm->comm, &req->request);
      break;
    case PK_TRANSFER_SEND:
      call = "MPI_Isend";
      rc = MPI_Isend(send, count, type, t->peer, t->tag, comm->comm, &req->request);
      break;
    case PK_TRANSFER_RECV:
      call = "MPI_Irecv";
      rc = MPI_Irecv(t->recv, count, type, t->peer, t->tag, comm->comm, &req->request);
      break;
    default:
      return fail(err, PK_ERROR_INTERNAL, "MPI engine: unknown transfer kind %d", t->kind);
  }
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, call);
  *out = reinterpret_cast<pk_engine_request *>(req.release());
  return PK_OK;
}

pk_status engine_test(pk_engine_request *er, char *err) {
  Request *req = reinterpret_cast<Request *>(er);
  int done = 0;
  int rc;
  {
    std::lock_guard<std::mutex> lock(g_mpi_mu);
    if (req->direct.empty()) {
      rc = MPI_Test(&req->request, &done, MPI_STATUS_IGNORE);
    } else {
      rc = MPI_Testall(static_cast<int>(req->direct.size()), req->direct.data(), &done, MPI_STATUSES_IGNORE);
    }
  }
  if (rc != MPI_SUCCESS) {
    const bool direct = !req->direct.empty();
    delete req;
    return mpi_fail(err, rc, direct ? "MPI_Testall" : "MPI_Test");
  }
  if (!done) return PK_NOT_READY;
  delete req;
  return PK_OK;
}

void engine_abandon(pk_engine_request *er) {
  // MPI may still read the count arrays and write the buffers: the request is leaked on purpose.
  (void)er;
  std::lock_guard<std::mutex> lock(g_mpi_mu);
  g_abandoned = true;
}

const pk_engine_api k_api = {sizeof(pk_engine_api),
                             PK_ENGINE_INTERFACE_VERSION,
                             "mpi",
                             engine_init,
                             engine_unique_id,
                             engine_comm_create,
                             engine_comm_split,
                             engine_comm_destroy,
                             engine_comm_rank,
                             engine_comm_size,
                             engine_start,
                             engine_test,
                             engine_abandon};

}  // namespace

extern "C" PK_EXPORT pk_status pk_collective_engine_entry(uint32_t host_interface_version, const pk_engine_api **out,
                                                          char *err) {
  if (host_interface_version != PK_ENGINE_INTERFACE_VERSION) {
    return fail(err, PK_ERROR_ABI_MISMATCH, "MPI engine speaks engine interface %u, libprimkit %u",
                PK_ENGINE_INTERFACE_VERSION, host_interface_version);
  }
  *out = &k_api;
  return PK_OK;
}
