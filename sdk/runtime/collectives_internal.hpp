// collectives_internal.hpp — what the collectives sources share: engines, the communicator behind pk_comm_t and
// the local reduction. Internal to sdk/runtime.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collective_engine.h"
#include "primkit/primkit_collectives.h"
#include "runtime_internal.hpp"

namespace pk::rt::coll {

// A collectives engine (collective_engine.h), loaded once per process.
struct Engine {
  std::string name;
  const pk_engine_api *api = nullptr;
  pk_status status = PK_OK;  // of loading and init: PK_OK, or why the engine cannot run here
  std::string reason;
};

inline const char *kind_name(int32_t kind) {
  static const char *const names[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                      "reduce",     "all_to_all", "send",           "recv"};
  return kind >= 0 && kind < PK_COLLECTIVE_COUNT ? names[kind] : "collective";
}
inline const char *reduce_name(int32_t op) {
  static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < PK_REDUCE_COUNT ? names[op] : "?";
}

// Whether reduction `op` is defined for `dtype`; otherwise *why completes "reduction <op> ...".
bool reduce_supported(int32_t dtype, int32_t op, const char **why);

// out[i] = rows[0][i] op rows[1][i] op ... op rows[nrows-1][i], in rank order (primkit_collectives.h's contract).
// Row r starts at rows + r * row_stride; rows and out hold `count` elements of PK_DTYPE_* `dtype`, aligned to
// the element size. `out` may be row 0 (it is read before it is written), not another row.
void reduce_rows(int32_t dtype, int32_t op, const uint8_t *rows, uint64_t row_stride, int32_t nrows, int64_t count,
                 uint8_t *out);

// --- native collectives (collectives_native.cpp): a backend that fills the native slots of pk_backend_api ---

// Whether the backend fills the native collective slots (plugin_loader.cpp refuses a partial set at load).
bool has_native_slots(const pk_backend_api &api);
// The first native slot a plugin's table leaves NULL while filling another, or nullptr when they are all or none.
const char *partial_native_slot(const pk_backend_api &api);
// Backends with native collectives, live in this process: pk_comm_get_unique_id("native") asks one of them.
void native_backend_loaded(Backend *backend);
void native_backend_gone(Backend *backend);
// The one kind of backend with native collectives loaded in this process (pk_comm_get_unique_id("native") asks it):
// PK_ERROR_NOT_FOUND when there is none, PK_ERROR_INVALID_ARGUMENT when two differently named ones are loaded.
pk_status find_native_backend(const char *fn, Backend **out);
bool native_backend_available();

// Sets the thread's last error from the backend's after native slot `slot` returned `status` for `what` (a
// collective's name, or the host function's): "<what>: backend '<name>' native <slot> failed: <its message>", or
// for PK_ERROR_TIMEOUT with the communicator's timeout_ms, "<what>: did not finish within <ms> ms: ..." as an
// engine's timeout reads.
pk_status native_error(const Backend &backend, pk_status status, const char *what, const char *slot,
                       uint32_t timeout_ms = 0);

// One small exchange of host bytes over a native communicator, run on the communicator's private check stream
// through the backend's own collectives: ALL_GATHER (recv gets every rank's `bytes`, in rank order), SEND or RECV.
struct NativeExchange {
  pk_comm_s *comm = nullptr;
  int32_t kind = PK_COLLECTIVE_ALL_GATHER;
  int32_t peer = -1;
  const void *send = nullptr;
  void *recv = nullptr;
  uint64_t bytes = 0;  // per rank
};
// Runs the exchanges together (in one backend group when there are several) and waits for them. `what` names the
// caller in errors. A failure leaves the communicator failed (its ranks may now disagree about what was exchanged).
pk_status run_native_exchanges(std::vector<NativeExchange> &xs, const char *what);

// pk_comm_create on a backend with native collectives: from o.unique_id, or (unique_id NULL) from the launcher's
// world, whose rank 0 makes the token and broadcasts it through `bootstrap`'s world communicator `ec` (consumed,
// except when *use_engine comes back true: native collectives were the default, not named, and the backend says they
// are unavailable here, so the caller makes an engine communicator of `ec` instead).
pk_status create_native_comm(pk::rt::Device &device, const pk_comm_options &o, Engine *bootstrap, pk_engine_comm *ec,
                             bool by_default, bool *use_engine, pk_comm_t *out);
pk_status split_native_comm(pk_comm_t comm, int32_t color, int32_t key, pk_comm_t *out);
void destroy_native_comm(pk_comm_t comm);

}  // namespace pk::rt::coll

// The handle behind pk_comm_t.
struct pk_comm_s {
  pk::rt::Device *device = nullptr;
  pk::rt::coll::Engine *engine = nullptr;  // null on a native communicator
  pk_engine_comm *ec = nullptr;
  // A native communicator (the backend fills the native slots): the backend's handle, and a private stream on
  // the device for the small exchanges of the cross-rank checks, so that they never wait for the caller's stream.
  pk_be_comm *bc = nullptr;
  pk_stream_s *check_stream = nullptr;
  void *check_mem = nullptr;  // device memory of those exchanges (mem_alloc), grown as needed
  uint64_t check_cap = 0;
  int32_t rank = 0;
  int32_t size = 0;
  uint32_t flags = 0;
  std::atomic<uint32_t> timeout_ms{PK_COMM_DEFAULT_TIMEOUT_MS};
  std::atomic<bool> aborted{false};
  // Set when a transfer was given up (timeout, abort): the engine may still touch its buffers and communicator.
  std::atomic<bool> abandoned{false};
  std::mutex fail_mu;  // guards failed and failure (abort may come from any thread)
  pk_status failed = PK_OK;
  std::string failure;
  uint64_t seq = 0;  // collectives started on this rank: the ranks compare it
  // Scratch blocks reused across calls (a fresh 100 MiB block costs more in page faults than the transfer).
  std::multimap<uint64_t, std::unique_ptr<uint8_t[]>> scratch;
  std::atomic<uint64_t> calls{0}, direct_calls{0}, staged_calls{0}, staged_bytes{0}, bytes_sent{0}, native_calls{0};

  bool native() const { return bc != nullptr; }
  pk::rt::Backend &backend() const { return *device->backend; }
  bool checked() const { return (flags & PK_COMM_UNCHECKED) == 0; }
  void fail(pk_status status, const std::string &why) {
    std::lock_guard<std::mutex> lock(fail_mu);
    if (failed == PK_OK) {
      // A call that failed because of an abort (a native backend's error then says only what it saw) is recorded
      // as the abort, the first reason.
      const bool by_abort = aborted.load();
      failed = by_abort ? PK_ERROR_COMM_FAILED : status;
      failure = by_abort ? "the communicator was aborted (pk_comm_abort)" : why;
    }
  }
  pk_status state(std::string *why) {
    std::lock_guard<std::mutex> lock(fail_mu);
    if (failed == PK_OK && aborted.load()) {
      failed = PK_ERROR_COMM_FAILED;
      failure = "the communicator was aborted (pk_comm_abort)";
    }
    if (why) *why = failure;
    return failed;
  }
  std::unique_ptr<uint8_t[]> take_scratch(uint64_t bytes, uint64_t *capacity) {
    auto it = scratch.lower_bound(bytes);
    if (it != scratch.end() && it->first <= 2 * bytes + 4096) {
      *capacity = it->first;
      auto block = std::move(it->second);
      scratch.erase(it);
      return block;
    }
    *capacity = bytes ? bytes : 1;
    return std::unique_ptr<uint8_t[]>(new uint8_t[*capacity]);
  }
  void give_scratch(std::unique_ptr<uint8_t[]> block, uint64_t capacity) {
    if (block) scratch.emplace(capacity, std::move(block));
  }
};
