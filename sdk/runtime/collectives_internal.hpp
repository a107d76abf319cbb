// collectives_internal.hpp — what the collectives sources share: engines, the communicator behind pk_comm_t and
// the local reduction. Internal to sdk/runtime.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

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

}  // namespace pk::rt::coll

// The handle behind pk_comm_t.
struct pk_comm_s {
  pk::rt::Device *device = nullptr;
  pk::rt::coll::Engine *engine = nullptr;
  pk_engine_comm *ec = nullptr;
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
  std::atomic<uint64_t> calls{0}, direct_calls{0}, staged_calls{0}, staged_bytes{0}, bytes_sent{0};

  bool checked() const { return (flags & PK_COMM_UNCHECKED) == 0; }
  void fail(pk_status status, const std::string &why) {
    std::lock_guard<std::mutex> lock(fail_mu);
    if (failed == PK_OK) {
      failed = status;
      failure = why;
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
