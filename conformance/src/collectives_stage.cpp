// collectives_stage.cpp — the collectives stage: `mpirun -np N primkit conformance --backend B --collectives`.
//
// Every rank of the launcher's world runs this stage in its own process, on its backend's first device, and makes
// the same calls in the same order. Each rank derives every rank's inputs from (rank, index) (the shared
// expectation of primkit/collectives_expectation.hpp, which tests/collectives uses too), so it computes every
// expected element itself, in double or int64 — never from PrimKit's output — and judges its own outputs. At the
// end the ranks exchange their verdicts and every row takes the worst rank's (its message names that rank); rank 0
// reports. Rows (op = the name, dtype as named or "-"):
//   collectives:all_reduce:<op>, :reduce_scatter:<op>, :reduce:<op>   every dtype x every reduction it defines
//   collectives:all_gather, :broadcast, :all_to_all, :send_recv       every dtype
//       sizes 0 (empty), 1, odd and non-power-of-two, and past the one-round limit (64 KiB per rank), in place where
//       the collective allows it (all_reduce, all_gather into its own slice, broadcast on the root), every root;
//       the output starts as poison bytes, so a collective that writes nothing fails too.
//   collectives:order           f32, f64, f16, bf16: the promised reduction order, bitwise (below)
//   collectives:nan_and_ties    f32, f64: max/min propagate NaN and keep the lowest rank's zero on ties
//   collectives:mismatch        shapes, dtypes, reductions and roots that disagree across ranks: a clear error on
//                               every rank, no data moved, the communicator usable afterwards
//   collectives:timeout         a rank that never makes the call: PK_ERROR_TIMEOUT within the timeout, not a hang
//   collectives:abort           pk_comm_abort from another thread ends the call in flight
//   collectives:dead_rank       the last rank exits mid-job: the others get an error within the timeout
// The reduction order is the extension's promise (primkit_collectives.h): element i is the left fold in rank order
// ((x0 op x1) op x2) ..., each step rounded in the compute type (f32 for f16/bf16/fp8), stored with one rounding,
// bitwise identical on every rank and between runs. The order row's inputs mix magnitudes so that other
// association orders give other bits (with 3 or more ranks; the row checks that they do).
//
// The last three rows leave transfers abandoned, and one of them ends a rank's process: they run only where the
// launcher survives a rank that ends without MPI_Finalize (Open MPI's mpirun --enable-recovery, detected; or
// Options::collectives_failure_rows), else they are NOT_SUPPORTED with that reason.
//
// The stage runs in the rank's own process, not in forked children as the op cases do: the child would be the
// MPI process, which cannot be replaced by a second child. A hang is caught by the communicator's timeout (the
// run's --timeout), a wrong result by the comparison; a crash ends the rank, and mpirun reports it.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "conformance_internal.hpp"
#include "primkit/collectives_expectation.hpp"

namespace pk::conformance::detail {

namespace coll = pk::conformance::collectives;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr const char *kPrefix = "collectives:";

// Element counts of the data rows: empty, one, odd, non-power-of-two, and past the one-round limit of 64 KiB per
// rank for every dtype (70001 bytes of u8), where the runtime switches from gather-and-fold to all-to-all + fold +
// all-gather.
constexpr int64_t kSizes[] = {0, 1, 5, 127, 70001};
constexpr int64_t kSliceSizes[] = {0, 1, 33, 20001};  // per rank, for collectives whose input has n slices
constexpr uint8_t kPoison = 0x5A;                     // bool 90, f32 1.5e16, ...: never an expected value

std::string row_name(CollectiveRowKind kind, int32_t reduce_op) {
  static const char *const names[] = {"all_reduce", "reduce_scatter", "reduce",   "all_gather",   "broadcast",
                                      "all_to_all", "send_recv",      "order",    "nan_and_ties", "mismatch",
                                      "timeout",    "abort",          "dead_rank"};
  std::string s = kPrefix + std::string(names[static_cast<int>(kind)]);
  if (reduce_op >= 0) s += std::string(":") + coll::reduce_op_name(reduce_op);
  return s;
}

// --- per-rank context -----------------------------------------------------------------------------------------

struct Rank {
  pk_device_t device = nullptr;
  pk_stream_t stream = nullptr;
  pk_comm_t world = nullptr;
  int rank = 0;
  int size = 1;
  uint32_t timeout_ms = 20000;
};

// A dense device tensor of one dtype with host copies in and out (staged backends need real copies).
class Tensor {
 public:
  Tensor(const Rank &w, int32_t dtype, std::vector<int64_t> shape) : w_(w), dtype_(dtype), shape_(std::move(shape)) {
    numel_ = std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<int64_t>());
    bytes_ = static_cast<uint64_t>(numel_) * coll::dtype_case(dtype).size;
    if (pk_buffer_create(w.device, std::max<uint64_t>(bytes_, 1), &buf_) != PK_OK)
      throw std::runtime_error("pk_buffer_create(" + std::to_string(bytes_) + " bytes) failed: " + last_error());
    pk_buffer_tensor(buf_, coll::dtype_case(dtype).desc, static_cast<int32_t>(shape_.size()), shape_.data(), nullptr, 0,
                     &t_);
  }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;
  ~Tensor() { pk_buffer_destroy(buf_); }
  const pk_tensor *t() const { return &t_; }
  uint64_t bytes() const { return bytes_; }
  int64_t numel() const { return numel_; }
  void put(const std::vector<uint8_t> &host) {
    if (bytes_ && pk_copy_host_to_buffer(w_.stream, buf_, 0, host.data(), bytes_) != PK_OK)
      throw std::runtime_error("pk_copy_host_to_buffer failed: " + last_error());
    if (pk_stream_synchronize(w_.stream) != PK_OK)
      throw std::runtime_error("pk_stream_synchronize failed: " + last_error());
  }
  void poison() { put(std::vector<uint8_t>(bytes_, kPoison)); }
  std::vector<uint8_t> get() const {
    std::vector<uint8_t> host(bytes_);
    if (bytes_ && pk_copy_buffer_to_host(w_.stream, host.data(), buf_, 0, bytes_) != PK_OK)
      throw std::runtime_error("pk_copy_buffer_to_host failed: " + last_error());
    if (pk_stream_synchronize(w_.stream) != PK_OK)
      throw std::runtime_error("pk_stream_synchronize failed: " + last_error());
    return host;
  }
  // A view of elements [first, first + count) as a 1-d tensor (an in-place all_gather's send).
  pk_tensor slice(int64_t first, int64_t count, int64_t *shape_storage) const {
    pk_tensor s = t_;
    shape_storage[0] = count;
    s.shape = shape_storage;
    s.ndim = 1;
    s.byte_offset = static_cast<uint64_t>(first) * coll::dtype_case(dtype_).size;
    return s;
  }

 private:
  const Rank &w_;
  int32_t dtype_;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  uint64_t bytes_ = 0;
  pk_buffer_t buf_ = nullptr;
  pk_tensor t_{};
};

// What one row found on this rank. Calls and comparisons never stop a row early: every rank must make the same
// calls in the same order whatever it sees, or the next call would meet a different one on another rank.
class Tally {
 public:
  Tally(const Rank &w, PairResult &r) : w_(w), r_(r) {}
  // Records a call's status; false when it failed (the caller then skips reading its output).
  bool call(pk_status st, const std::string &what) {
    ++r_.cases_run;
    if (st == PK_OK) return true;
    if (!declined(st, what)) problem(what + " returned " + pk_status_name(st) + ": " + last_error());
    return false;
  }
  // Whether st is the backend (or a strict runtime) declining the call, which makes the row NOT_SUPPORTED rather
  // than failed; records it.
  bool declined(pk_status st, const std::string &what) {
    if (st != PK_ERROR_FALLBACK_FORBIDDEN && st != PK_UNIMPLEMENTED) return false;
    if (declined_.empty()) declined_ = what + ": " + pk_status_name(st) + ": " + last_error();
    return true;
  }
  void problem(const std::string &text) {
    ++r_.cases_failed;
    if (first_.empty()) first_ = text;
  }
  // Compares count elements of `got` with expected(i); records the first wrong one and how many are wrong.
  template <class F>
  void compare(int32_t dtype, const std::vector<uint8_t> &got, int64_t count, F expected, const std::string &what) {
    const uint32_t es = coll::dtype_case(dtype).size;
    int64_t wrong = 0, first = -1;
    coll::Value first_got, first_want;
    for (int64_t i = 0; i < count && static_cast<size_t>((i + 1) * es) <= got.size(); ++i) {
      const coll::Value g = coll::read_element(dtype, got.data() + i * es), e = expected(i);
      if (coll::same_value(dtype, g, e)) continue;
      if (wrong++ == 0) {
        first = i;
        first_got = g;
        first_want = e;
      }
    }
    if (wrong == 0) return;
    r_.worst_index = r_.worst_index < 0 ? first : r_.worst_index;
    problem(what + ": element " + std::to_string(first) + " is " + coll::show(dtype, first_got) + ", expected " +
            coll::show(dtype, first_want) + " (" + std::to_string(wrong) + " of " + std::to_string(count) +
            " elements wrong)");
  }
  PairResult &result() { return r_; }
  // The row's status on this rank: a problem fails it; a decline with no problem makes it NOT_SUPPORTED.
  void finish() {
    r_.cases = r_.cases_run;
    const std::string who = "rank " + std::to_string(w_.rank) + " of " + std::to_string(w_.size) + ": ";
    if (!first_.empty()) {
      r_.status = Status::fail;
      r_.message = who + first_;
      if (r_.cases_failed > 1) r_.message += " (problems in " + std::to_string(r_.cases_failed) + " checks in all)";
    } else if (!declined_.empty()) {
      r_.status = Status::not_supported;
      r_.message = declined_;
    } else {
      r_.status = Status::pass;
    }
  }

 private:
  const Rank &w_;
  PairResult &r_;
  std::string first_, declined_;
};

std::string sized(const char *what, const char *dtype, int32_t op, int64_t n, const char *variant) {
  std::string s = std::string(what) + " " + dtype;
  if (op >= 0) s += std::string(" ") + coll::reduce_op_name(op);
  return s + " n=" + std::to_string(n) + " (" + variant + ")";
}

// --- data rows ---------------------------------------------------------------------------------------------------

void all_reduce_row(const Rank &w, int32_t d, int32_t op, Tally &t) {
  const char *dn = coll::dtype_case(d).name;
  auto want = [&](int64_t i) { return coll::expected_reduction(d, op, w.size, i); };
  for (int64_t count : kSizes) {
    Tensor send(w, d, {count}), recv(w, d, {count});
    send.put(coll::make_input(d, w.rank, count));
    recv.poison();
    const std::string what = sized("all_reduce", dn, op, count, "out of place");
    if (t.call(pk_all_reduce(w.world, w.stream, send.t(), recv.t(), op), what))
      t.compare(d, recv.get(), count, want, what);
    if (count != 5 && count != 70001) continue;
    send.put(coll::make_input(d, w.rank, count));
    const std::string inplace = sized("all_reduce", dn, op, count, "in place");
    if (t.call(pk_all_reduce(w.world, w.stream, send.t(), send.t(), op), inplace))
      t.compare(d, send.get(), count, want, inplace);
  }
}

void reduce_scatter_row(const Rank &w, int32_t d, int32_t op, Tally &t) {
  const char *dn = coll::dtype_case(d).name;
  for (int64_t each : kSliceSizes) {
    Tensor send(w, d, {w.size * each}), recv(w, d, {each});
    send.put(coll::make_input(d, w.rank, w.size * each));
    recv.poison();
    const std::string what = sized("reduce_scatter", dn, op, each, "per rank");
    if (t.call(pk_reduce_scatter(w.world, w.stream, send.t(), recv.t(), op), what))
      t.compare(
          d, recv.get(), each, [&](int64_t i) { return coll::expected_reduction(d, op, w.size, w.rank * each + i); },
          what);
  }
}

void reduce_row(const Rank &w, int32_t d, int32_t op, Tally &t) {
  const char *dn = coll::dtype_case(d).name;
  for (int root : {0, w.size - 1}) {
    for (int64_t count : {int64_t{0}, int64_t{7}, int64_t{70001}}) {
      Tensor send(w, d, {count}), recv(w, d, {count});
      send.put(coll::make_input(d, w.rank, count));
      recv.poison();
      const std::string what = sized("reduce", dn, op, count, ("root " + std::to_string(root)).c_str());
      const bool ok =
          t.call(pk_reduce(w.world, w.stream, send.t(), w.rank == root ? recv.t() : nullptr, op, root), what);
      if (ok && w.rank == root)
        t.compare(
            d, recv.get(), count, [&](int64_t i) { return coll::expected_reduction(d, op, w.size, i); }, what);
    }
    if (w.size == 1) break;
  }
}

void all_gather_row(const Rank &w, int32_t d, Tally &t) {
  const char *dn = coll::dtype_case(d).name;
  for (int64_t count : kSliceSizes) {
    auto want = [&](int64_t k) { return coll::input(d, static_cast<int>(k / count), k % count); };
    Tensor send(w, d, {count}), recv(w, d, {w.size, count});
    send.put(coll::make_input(d, w.rank, count));
    recv.poison();
    const std::string what = sized("all_gather", dn, -1, count, "out of place");
    if (t.call(pk_all_gather(w.world, w.stream, send.t(), recv.t()), what))
      t.compare(d, recv.get(), w.size * count, want, what);
    if (count == 0) continue;
    // In place: send is this rank's slice of recv, which holds this rank's input there and poison elsewhere.
    std::vector<uint8_t> init(recv.bytes(), kPoison), mine = coll::make_input(d, w.rank, count);
    std::copy(mine.begin(), mine.end(), init.begin() + static_cast<ptrdiff_t>(w.rank * mine.size()));
    recv.put(init);
    int64_t shape[1];
    const pk_tensor slice = recv.slice(w.rank * count, count, shape);
    const std::string inplace = sized("all_gather", dn, -1, count, "in place");
    if (t.call(pk_all_gather(w.world, w.stream, &slice, recv.t()), inplace))
      t.compare(d, recv.get(), w.size * count, want, inplace);
  }
}

void broadcast_row(const Rank &w, int32_t d, Tally &t) {
  const char *dn = coll::dtype_case(d).name;
  for (int root : {0, w.size - 1}) {
    for (int64_t count : {int64_t{0}, int64_t{6}, int64_t{70001}}) {
      auto want = [&](int64_t i) { return coll::input(d, root, i); };
      Tensor send(w, d, {count}), recv(w, d, {count});
      send.put(coll::make_input(d, w.rank, count));
      recv.poison();
      const std::string what = sized("broadcast", dn, -1, count, ("root " + std::to_string(root)).c_str());
      if (t.call(pk_broadcast(w.world, w.stream, w.rank == root ? send.t() : nullptr, recv.t(), root), what))
        t.compare(d, recv.get(), count, want, what);
      // In place on the root: send is recv there.
      if (w.rank == root) recv.put(coll::make_input(d, w.rank, count));
      const std::string inplace = sized("broadcast", dn, -1, count, ("in place, root " + std::to_string(root)).c_str());
      if (t.call(pk_broadcast(w.world, w.stream, w.rank == root ? recv.t() : nullptr, recv.t(), root), inplace))
        t.compare(d, recv.get(), count, want, inplace);
    }
    if (w.size == 1) break;
  }
}

void all_to_all_row(const Rank &w, int32_t d, Tally &t) {
  const char *dn = coll::dtype_case(d).name;
  for (int64_t each : kSliceSizes) {
    Tensor send(w, d, {w.size * each}), recv(w, d, {w.size * each});
    send.put(coll::make_input(d, w.rank, w.size * each));
    recv.poison();
    const std::string what = sized("all_to_all", dn, -1, each, "per rank");
    // Slice i of recv is slice `rank` of rank i's send.
    if (t.call(pk_all_to_all(w.world, w.stream, send.t(), recv.t()), what))
      t.compare(
          d, recv.get(), w.size * each,
          [&](int64_t k) { return coll::input(d, static_cast<int>(k / each), w.rank * each + k % each); }, what);
  }
}

void send_recv_row(const Rank &w, int32_t d, Tally &t) {
  const char *dn = coll::dtype_case(d).name;
  const int next = (w.rank + 1) % w.size, prev = (w.rank + w.size - 1) % w.size;
  for (int64_t count : {int64_t{0}, int64_t{11}, int64_t{70001}}) {
    Tensor send(w, d, {count}), recv(w, d, {count});
    send.put(coll::make_input(d, w.rank, count));
    recv.poison();
    const std::string what =
        sized("send/recv ring in a group", dn, -1, count, ("from rank " + std::to_string(prev)).c_str());
    // Every rank sends before it receives: only the group keeps that from waiting forever.
    bool ok = t.call(pk_group_start(), what + ": pk_group_start");
    const pk_status s1 = pk_send(w.world, w.stream, send.t(), next);
    const pk_status s2 = pk_recv(w.world, w.stream, recv.t(), prev);
    ok = t.call(s1, what + ": pk_send") && ok;
    ok = t.call(s2, what + ": pk_recv") && ok;
    ok = t.call(pk_group_end(), what + ": pk_group_end") && ok;
    if (ok)
      t.compare(
          d, recv.get(), count, [&](int64_t i) { return coll::input(d, prev, i); }, what);
  }
}

// --- the reduction order -------------------------------------------------------------------------------------------

// Rank r's element i for the order row: signed values of magnitudes 2^-k .. 2^k with a few mantissa bits, exact in
// the dtype, so that adding them in another association order rounds differently.
double order_input(int32_t d, int r, int64_t i) {
  const bool narrow = d == PK_DTYPE_F16 || d == PK_DTYPE_BF16;
  const int span = narrow ? 20 : d == PK_DTYPE_F32 ? 48 : 100;
  const int e = static_cast<int>((r * 11 + i * 5) % span) - span / 2;
  const double mantissa =
      narrow ? 1.0 + static_cast<double>((r + i) % 8) / 8.0 : 1.0 + 0.1234567 * static_cast<double>((i + 3 * r) % 7);
  double v = std::ldexp(mantissa, e);
  if (d == PK_DTYPE_F32) v = static_cast<float>(v);
  return (r + i) % 2 ? -v : v;
}

// The code of the dtype's value nearest x, ties to the even code: the expectation's own rounding to f16/bf16.
uint32_t round_to_small(int32_t d, double x) {
  static std::map<int32_t, std::map<double, uint32_t>> tables;
  auto &table = tables[d];
  if (table.empty()) {
    int eb, mb;
    coll::small_format(d, eb, mb);
    const uint32_t top = (1u << eb) - 1;
    for (uint32_t c = 1u << (1 + eb + mb); c-- > 0;)
      if (((c >> mb) & top) != top) table[coll::decode_small(c, eb, mb)] = c;
  }
  auto hi = table.lower_bound(x);
  if (hi == table.end()) return std::prev(hi)->second;
  if (hi->first == x || hi == table.begin()) return hi->second;
  auto lo = std::prev(hi);
  const double dl = x - lo->first, dh = hi->first - x;
  if (dl != dh) return dl < dh ? lo->second : hi->second;
  return (lo->second & 1u) == 0 ? lo->second : hi->second;
}

// The promised result of element i: the left fold in rank order in the compute type, stored with one rounding.
coll::Value order_expected(int32_t d, int n, int64_t i) {
  coll::Value v;
  if (d == PK_DTYPE_F64) {
    double acc = order_input(d, 0, i);
    for (int r = 1; r < n; ++r) acc += order_input(d, r, i);
    v.re = acc;
    return v;
  }
  float acc = static_cast<float>(order_input(d, 0, i));  // f32 and the narrow formats compute in f32
  for (int r = 1; r < n; ++r) acc += static_cast<float>(order_input(d, r, i));
  if (d == PK_DTYPE_F32) {
    v.re = acc;
    return v;
  }
  int eb, mb;
  coll::small_format(d, eb, mb);
  v.re = coll::decode_small(round_to_small(d, acc), eb, mb);
  return v;
}

// Whether another association order of element i's fold gives other bits (the row's inputs must show that, or it
// could not fail): the reversed fold, in the same compute type.
bool order_sensitive(int32_t d, int n, int64_t i) {
  if (d == PK_DTYPE_F64) {
    double a = order_input(d, n - 1, i);
    for (int r = n - 2; r >= 0; --r) a += order_input(d, r, i);
    return a != order_expected(d, n, i).re;
  }
  float a = static_cast<float>(order_input(d, n - 1, i));
  for (int r = n - 2; r >= 0; --r) a += static_cast<float>(order_input(d, r, i));
  return a != static_cast<float>(order_expected(d, n, i).re);
}

void order_row(const Rank &w, int32_t d, Tally &t) {
  const char *dn = coll::dtype_case(d).name;
  const uint32_t es = coll::dtype_case(d).size;
  auto inputs = [&](int64_t count, int64_t first) {
    std::vector<uint8_t> b(static_cast<size_t>(count) * es);
    for (int64_t i = 0; i < count; ++i) {
      coll::Value v;
      v.re = order_input(d, w.rank, first + i);
      coll::write_element(d, b.data() + i * es, v);
    }
    return b;
  };
  int64_t sensitive = 0;
  // 1000 elements take the one-round path, 40000 the two-round path (past 64 KiB per rank even for f16).
  for (int64_t count : {int64_t{1000}, int64_t{40000}}) {
    for (int64_t i = 0; i < count; ++i) sensitive += order_sensitive(d, w.size, i);
    auto want = [&](int64_t i) { return order_expected(d, w.size, i); };
    Tensor send(w, d, {count}), recv(w, d, {count}), again(w, d, {count}), all(w, d, {w.size, count});
    send.put(inputs(count, 0));
    recv.poison();
    again.poison();
    const std::string what = sized("all_reduce", dn, PK_REDUCE_SUM, count, "rank-order fold, bitwise");
    if (t.call(pk_all_reduce(w.world, w.stream, send.t(), recv.t(), PK_REDUCE_SUM), what)) {
      const std::vector<uint8_t> first = recv.get();
      t.compare(d, first, count, want, what);
      // The same bits on a second run, and on every rank (gathered here and compared with this rank's).
      if (t.call(pk_all_reduce(w.world, w.stream, send.t(), again.t(), PK_REDUCE_SUM), what + ", second run") &&
          again.get() != first)
        t.problem(what + ": a second run gave other bits");
      if (t.call(pk_all_gather(w.world, w.stream, recv.t(), all.t()), what + ", gathering every rank's result")) {
        const std::vector<uint8_t> everyone = all.get();
        for (int r = 0; r < w.size; ++r)
          if (!std::equal(first.begin(), first.end(), everyone.begin() + static_cast<ptrdiff_t>(r * first.size())))
            t.problem(what + ": rank " + std::to_string(r) + "'s result differs from this rank's");
      }
    }
    // reduce_scatter promises the same fold: rank r's slice of a [n * each] input.
    const int64_t each = count / 8;
    Tensor rs_send(w, d, {w.size * each}), rs_recv(w, d, {each});
    rs_send.put(inputs(w.size * each, 0));
    rs_recv.poison();
    const std::string rs = sized("reduce_scatter", dn, PK_REDUCE_SUM, each, "rank-order fold, bitwise");
    if (t.call(pk_reduce_scatter(w.world, w.stream, rs_send.t(), rs_recv.t(), PK_REDUCE_SUM), rs))
      t.compare(
          d, rs_recv.get(), each, [&](int64_t i) { return order_expected(d, w.size, w.rank * each + i); }, rs);
  }
  if (w.size >= 3 && sensitive == 0) t.problem("the order row's inputs do not distinguish summation orders");
  t.result().worst_detail =
      w.size >= 3 ? std::to_string(sensitive) + " elements where the reversed rank order gives other bits"
                  : "with 2 ranks every order gives the same bits: the order itself shows with 3 or more ranks";
}

void nan_and_ties_row(const Rank &w, int32_t d, Tally &t) {
  // element 0: rank 0 +0, the others -0; element 1: NaN on the last rank only; element 2: rank 0 -0, others +0.
  const double nan = std::nan("");
  const bool last = w.rank == w.size - 1;
  coll::Value e[3];
  e[0].re = w.rank == 0 ? 0.0 : -0.0;
  e[1].re = last ? nan : 1.0 + w.rank;
  e[2].re = w.rank == 0 ? -0.0 : 0.0;
  std::vector<uint8_t> bytes(3 * coll::dtype_case(d).size);
  for (int i = 0; i < 3; ++i) coll::write_element(d, bytes.data() + i * coll::dtype_case(d).size, e[i]);
  for (int32_t op : {PK_REDUCE_MAX, PK_REDUCE_MIN}) {
    Tensor send(w, d, {3}), recv(w, d, {3});
    send.put(bytes);
    recv.poison();
    const std::string what = sized("all_reduce", coll::dtype_case(d).name, op, 3, "NaN and signed zeros");
    if (!t.call(pk_all_reduce(w.world, w.stream, send.t(), recv.t(), op), what)) continue;
    const std::vector<uint8_t> got = recv.get();
    const uint32_t es = coll::dtype_case(d).size;
    const double g0 = coll::read_element(d, got.data()).re, g1 = coll::read_element(d, got.data() + es).re,
                 g2 = coll::read_element(d, got.data() + 2 * es).re;
    if (g0 != 0.0 || std::signbit(g0))
      t.problem(what + ": element 0 is " + coll::show_real(g0) + ", expected +0 (rank 0's zero wins the tie)");
    if (!std::isnan(g1)) t.problem(what + ": element 1 is " + coll::show_real(g1) + ", expected NaN (propagated)");
    if (g2 != 0.0 || !std::signbit(g2))
      t.problem(what + ": element 2 is " + coll::show_real(g2) + ", expected -0 (rank 0's zero wins the tie)");
  }
}

// --- failure behaviour -------------------------------------------------------------------------------------------

bool contains(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}

// A call whose arguments disagree across ranks must fail on every rank with PK_ERROR_INVALID_ARGUMENT, with a
// message that says the ranks disagree and names them, and write nothing.
void expect_disagreement(Tally &t, pk_status st, const std::string &what, const std::vector<std::string> &needles,
                         const Tensor *untouched) {
  ++t.result().cases_run;
  const std::string msg = last_error();
  if (t.declined(st, what)) return;
  if (st != PK_ERROR_INVALID_ARGUMENT) {
    t.problem(what + ": returned " + pk_status_name(st) + " (" + msg +
              "), expected PK_ERROR_INVALID_ARGUMENT on every rank");
    return;
  }
  for (const std::string &n : needles)
    if (!contains(msg, n)) t.problem(what + ": the message does not say '" + n + "': " + msg);
  if (untouched && untouched->get() != std::vector<uint8_t>(untouched->bytes(), kPoison))
    t.problem(what + ": data moved into recv although the call failed");
}

void mismatch_row(const Rank &w, Tally &t) {
  const int last = w.size - 1;
  const std::string last_name = "rank " + std::to_string(last);
  {  // shapes: the last rank passes one element fewer
    const int64_t count = w.rank == last ? 7 : 8;
    Tensor send(w, PK_DTYPE_F32, {count}), recv(w, PK_DTYPE_F32, {count});
    send.put(coll::make_input(PK_DTYPE_F32, w.rank, count));
    recv.poison();
    expect_disagreement(
        t, pk_all_reduce(w.world, w.stream, send.t(), recv.t(), PK_REDUCE_SUM),
        "all_reduce of f32[8] against f32[7] on " + last_name,
        {"the ranks disagree", "rank 0 calls all_reduce(f32[8], sum)", last_name + " calls all_reduce(f32[7], sum)"},
        &recv);
  }
  {  // dtypes: the last rank passes i32
    const int32_t d = w.rank == last ? PK_DTYPE_I32 : PK_DTYPE_F32;
    Tensor send(w, d, {4}), recv(w, d, {w.size, 4});
    send.put(coll::make_input(d, w.rank, 4));
    recv.poison();
    expect_disagreement(t, pk_all_gather(w.world, w.stream, send.t(), recv.t()),
                        "all_gather of f32 against i32 on " + last_name,
                        {"the ranks disagree", last_name + " calls all_gather(i32"}, &recv);
  }
  {  // reductions: rank 0 asks for max, the others for sum
    Tensor send(w, PK_DTYPE_F32, {4}), recv(w, PK_DTYPE_F32, {4});
    send.put(coll::make_input(PK_DTYPE_F32, w.rank, 4));
    recv.poison();
    expect_disagreement(
        t, pk_all_reduce(w.world, w.stream, send.t(), recv.t(), w.rank == 0 ? PK_REDUCE_MAX : PK_REDUCE_SUM),
        "all_reduce max on rank 0 against sum", {"the ranks disagree", "rank 0 calls all_reduce(f32[4], max)"}, &recv);
  }
  {  // roots: rank 0 names itself, the others the last rank
    Tensor buf(w, PK_DTYPE_I16, {5});
    buf.poison();
    const int root = w.rank == 0 ? 0 : last;
    expect_disagreement(t, pk_broadcast(w.world, w.stream, w.rank == root ? buf.t() : nullptr, buf.t(), root),
                        "broadcast from root 0 on rank 0 against root " + std::to_string(last), {"the ranks disagree"},
                        &buf);
  }
  // The communicator is still usable, and its ranks in step: a correct call gives the right values.
  Tensor send(w, PK_DTYPE_I32, {9}), recv(w, PK_DTYPE_I32, {9});
  send.put(coll::make_input(PK_DTYPE_I32, w.rank, 9));
  recv.poison();
  const std::string after = "all_reduce i32 sum after the refused calls";
  if (t.call(pk_all_reduce(w.world, w.stream, send.t(), recv.t(), PK_REDUCE_SUM), after))
    t.compare(
        PK_DTYPE_I32, recv.get(), 9,
        [&](int64_t i) { return coll::expected_reduction(PK_DTYPE_I32, PK_REDUCE_SUM, w.size, i); }, after);
}

// A communicator of the row's own (a split of the world), so that the world stays healthy for the rows after it
// and for the exchange of the verdicts.
pk_comm_t fresh_comm(const Rank &w, Tally &t, const std::string &what) {
  pk_comm_t c = nullptr;
  t.call(pk_comm_split(w.world, 0, w.rank, &c), what + ": pk_comm_split");
  return c;
}

void timeout_row(const Rank &w, Tally &t) {
  pk_comm_t c = fresh_comm(w, t, "timeout");
  if (c == nullptr) return;
  constexpr uint32_t kTimeoutMs = 1000;
  if (w.rank == 0) {
    // The other ranks never make this call: only the timeout can end it.
    Tensor x(w, PK_DTYPE_I32, {1000});
    t.call(pk_comm_set_timeout(c, kTimeoutMs), "pk_comm_set_timeout");
    const auto t0 = Clock::now();
    const pk_status st = pk_broadcast(c, w.stream, x.t(), x.t(), 0);
    const double s = seconds_since(t0);
    const std::string msg = last_error();
    ++t.result().cases_run;
    if (t.declined(st, "a broadcast the other ranks never join")) return pk_comm_destroy(c);
    if (st != PK_ERROR_TIMEOUT)
      t.problem(std::string("a broadcast the other ranks never join returned ") + pk_status_name(st) + " (" + msg +
                "), expected PK_ERROR_TIMEOUT");
    else if (!contains(msg, "broadcast: did not finish within 1000 ms"))
      t.problem("the timeout's message does not name the collective and the timeout: " + msg);
    if (s < 0.9 || s > 10) t.problem("the broadcast with a 1000 ms timeout returned after " + std::to_string(s) + " s");
    const pk_status later = pk_all_reduce(c, w.stream, x.t(), x.t(), PK_REDUCE_SUM);
    if (later != PK_ERROR_COMM_FAILED)
      t.problem(std::string("a call after the timeout returned ") + pk_status_name(later) +
                ", expected PK_ERROR_COMM_FAILED");
    t.result().worst_detail = "rank 0: " + msg;
  }
  pk_comm_destroy(c);
}

void abort_row(const Rank &w, Tally &t) {
  pk_comm_t c = fresh_comm(w, t, "abort");
  if (c == nullptr) return;
  Tensor x(w, PK_DTYPE_F32, {4});
  if (w.rank == 0) {
    // The others never join this all_reduce: only the abort, from another thread, can end it.
    std::thread aborter([c] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      pk_comm_abort(c);
    });
    const auto t0 = Clock::now();
    const pk_status st = pk_all_reduce(c, w.stream, x.t(), x.t(), PK_REDUCE_SUM);
    const double s = seconds_since(t0);
    aborter.join();
    const std::string msg = last_error();
    ++t.result().cases_run;
    if (t.declined(st, "an all_reduce the other ranks never join")) return pk_comm_destroy(c);
    if (st != PK_ERROR_COMM_FAILED || !contains(msg, "aborted"))
      t.problem(std::string("an all_reduce in flight during pk_comm_abort returned ") + pk_status_name(st) + " (" +
                msg + "), expected PK_ERROR_COMM_FAILED saying it was aborted");
    if (s > 5) t.problem("the aborted all_reduce returned only after " + std::to_string(s) + " s");
  } else {
    t.call(pk_comm_abort(c), "pk_comm_abort");
  }
  // Every later call fails at once, naming the first reason.
  const pk_status later = pk_all_reduce(c, w.stream, x.t(), x.t(), PK_REDUCE_SUM);
  const std::string msg = last_error();
  ++t.result().cases_run;
  if (!t.declined(later, "a call after the abort") &&
      (later != PK_ERROR_COMM_FAILED || !contains(msg, "failed earlier: the communicator was aborted")))
    t.problem(std::string("a call after the abort returned ") + pk_status_name(later) + " (" + msg +
              "), expected PK_ERROR_COMM_FAILED naming the abort");
  if (pk_comm_status(c) != PK_ERROR_COMM_FAILED) t.problem("pk_comm_status does not report the aborted communicator");
  pk_comm_destroy(c);
}

// The last rank ends its process after one good call; the others must get PK_ERROR_TIMEOUT or
// PK_ERROR_COMM_FAILED within the timeout, and still talk to each other on a communicator without it.
void dead_rank_row(const Rank &w, Tally &t, pk_comm_t survivors) {
  pk_comm_t c = fresh_comm(w, t, "dead_rank");
  if (c == nullptr) return;
  Tensor x(w, PK_DTYPE_F32, {256});
  x.put(coll::make_input(PK_DTYPE_F32, w.rank, 256));
  if (!t.call(pk_all_reduce(c, w.stream, x.t(), x.t(), PK_REDUCE_SUM), "all_reduce before the rank dies")) {
    pk_comm_destroy(c);  // declined (or failed) on every rank alike: no rank dies for nothing
    return;
  }
  if (w.rank == w.size - 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(0);  // dies without a word to anyone
  }
  constexpr uint32_t kTimeoutMs = 2000;
  t.call(pk_comm_set_timeout(c, kTimeoutMs), "pk_comm_set_timeout");
  const auto t0 = Clock::now();
  const pk_status st = pk_all_reduce(c, w.stream, x.t(), x.t(), PK_REDUCE_SUM);
  const double s = seconds_since(t0);
  const std::string msg = last_error();
  ++t.result().cases_run;
  if (st != PK_ERROR_TIMEOUT && st != PK_ERROR_COMM_FAILED)
    t.problem(std::string("an all_reduce with a dead rank returned ") + pk_status_name(st) + " (" + msg +
              "), expected PK_ERROR_TIMEOUT or PK_ERROR_COMM_FAILED");
  if (s > 10) t.problem("the all_reduce with a dead rank returned after " + std::to_string(s) + " s (timeout 2 s)");
  t.result().worst_detail = "rank " + std::to_string(w.rank) + " after the last rank died: " + msg;
  Tensor one(w, PK_DTYPE_I32, {1});
  coll::Value v;
  v.i = 1;
  std::vector<uint8_t> bytes(4);
  coll::write_element(PK_DTYPE_I32, bytes.data(), v);
  one.put(bytes);
  if (t.call(pk_all_reduce(survivors, w.stream, one.t(), one.t(), PK_REDUCE_SUM), "the survivors' all_reduce"))
    t.compare(
        PK_DTYPE_I32, one.get(), 1,
        [&](int64_t) {
          coll::Value n;
          n.i = w.size - 1;
          return n;
        },
        "the survivors' all_reduce");
  pk_comm_destroy(c);
}

// --- the verdicts of every rank ----------------------------------------------------------------------------------

// How bad a row's status is, to combine the ranks' verdicts: the worst rank's decides the row.
int severity(Status s) {
  switch (s) {
    case Status::pass:
      return 0;
    case Status::quality_warning:
      return 1;
    case Status::not_supported:
      return 2;
    case Status::fail:
      return 3;
    case Status::timeout:
      return 4;
    default:
      return 5;
  }
}

// Every rank's results for `rows` over `comm` (an all-gather of their encoded lines through the collectives under
// test: when that exchange itself fails, every row FAILs, saying so), combined per row: the worst rank's status and
// message, and the other ranks that saw a problem.
std::vector<PairResult> combine_across_ranks(const Rank &w, pk_comm_t comm, std::vector<PairResult> mine) {
  int32_t n = 1;
  pk_comm_size(comm, &n);
  if (n == 1 || mine.empty()) return mine;
  std::string text;
  for (const PairResult &r : mine) text += encode(r) + "\n";
  std::string failure;
  std::vector<std::string> per_rank;
  try {
    Tensor len(w, PK_DTYPE_I64, {1}), lens(w, PK_DTYPE_I64, {n});
    coll::Value v;
    v.i = static_cast<int64_t>(text.size());
    std::vector<uint8_t> b(8);
    coll::write_element(PK_DTYPE_I64, b.data(), v);
    len.put(b);
    if (pk_all_gather(comm, w.stream, len.t(), lens.t()) != PK_OK)
      throw std::runtime_error("all_gather of the lengths: " + last_error());
    const std::vector<uint8_t> lb = lens.get();
    std::vector<int64_t> sizes(static_cast<size_t>(n));
    int64_t longest = 0;
    for (int r = 0; r < n; ++r) {
      sizes[r] = coll::read_element(PK_DTYPE_I64, lb.data() + 8 * r).i;
      if (sizes[r] < 0 || sizes[r] > (int64_t{1} << 30))
        throw std::runtime_error("a rank sent a length of " + std::to_string(sizes[r]));
      longest = std::max(longest, sizes[r]);
    }
    Tensor mine_t(w, PK_DTYPE_U8, {longest}), all(w, PK_DTYPE_U8, {n, longest});
    std::vector<uint8_t> padded(static_cast<size_t>(longest), 0);
    std::copy(text.begin(), text.end(), padded.begin());
    mine_t.put(padded);
    if (pk_all_gather(comm, w.stream, mine_t.t(), all.t()) != PK_OK)
      throw std::runtime_error("all_gather of the results: " + last_error());
    const std::vector<uint8_t> bytes = all.get();
    for (int r = 0; r < n; ++r)
      per_rank.emplace_back(reinterpret_cast<const char *>(bytes.data()) + r * longest, static_cast<size_t>(sizes[r]));
  } catch (const std::exception &e) {
    failure = e.what();
  }
  for (size_t k = 0; k < mine.size(); ++k) {
    PairResult &row = mine[k];
    if (!failure.empty()) {
      row.status = Status::fail;
      row.message = "could not collect the other ranks' results: " + failure;
      continue;
    }
    std::vector<int> troubled;
    PairResult worst = row;
    for (int r = 0; r < n; ++r) {
      std::istringstream lines(per_rank[r]);
      std::string line;
      for (size_t j = 0; j <= k && std::getline(lines, line);) ++j;
      PairResult theirs;
      if (!decode(line, theirs) || theirs.op != row.op || theirs.dtype != row.dtype) {
        theirs = row;
        theirs.status = Status::fail;
        theirs.message = "rank " + std::to_string(r) + " sent no result for this row (the ranks are out of step)";
      }
      if (severity(theirs.status) >= severity(Status::fail)) troubled.push_back(r);
      if (severity(theirs.status) > severity(worst.status)) worst = theirs;
      worst.seconds = std::max(worst.seconds, theirs.seconds);
      worst.cases_run = std::max(worst.cases_run, theirs.cases_run);
      worst.cases = worst.cases_run;
    }
    if (troubled.size() > 1) {
      worst.message += " (ranks with problems in this row:";
      for (int r : troubled) worst.message += " " + std::to_string(r);
      worst.message += ")";
    }
    worst.implementation = row.implementation;
    row = worst;
  }
  return mine;
}

// --- the rows and the run ----------------------------------------------------------------------------------------

bool failure_rows_allowed(const Options &opt) {
  if (opt.collectives_failure_rows) return true;
  const char *recovery = std::getenv("OMPI_MCA_orte_enable_recovery");  // Open MPI 4's mpirun --enable-recovery
  return recovery != nullptr && std::strcmp(recovery, "1") == 0;
}

bool is_failure_row(CollectiveRowKind k) {
  return k == CollectiveRowKind::timeout || k == CollectiveRowKind::abort || k == CollectiveRowKind::dead_rank;
}

PairResult empty_row(const CollectiveRow &row) {
  PairResult r;
  r.op = row.name;
  r.dtype = row.dtype >= 0 ? coll::dtype_case(row.dtype).name : "-";
  r.primitive = false;
  r.check = row.kind == CollectiveRowKind::order                                  ? "bitwise (rank-order fold)"
            : is_failure_row(row.kind) || row.kind == CollectiveRowKind::mismatch ? "error within the timeout"
                                                                                  : "exact";
  return r;
}

void run_row(const Rank &w, const CollectiveRow &row, Tally &t, pk_comm_t survivors) {
  const int32_t d = row.dtype, op = row.reduce_op;
  switch (row.kind) {
    case CollectiveRowKind::all_reduce:
      return all_reduce_row(w, d, op, t);
    case CollectiveRowKind::reduce_scatter:
      return reduce_scatter_row(w, d, op, t);
    case CollectiveRowKind::reduce:
      return reduce_row(w, d, op, t);
    case CollectiveRowKind::all_gather:
      return all_gather_row(w, d, t);
    case CollectiveRowKind::broadcast:
      return broadcast_row(w, d, t);
    case CollectiveRowKind::all_to_all:
      return all_to_all_row(w, d, t);
    case CollectiveRowKind::send_recv:
      return send_recv_row(w, d, t);
    case CollectiveRowKind::order:
      return order_row(w, d, t);
    case CollectiveRowKind::nan_and_ties:
      return nan_and_ties_row(w, d, t);
    case CollectiveRowKind::mismatch:
      return mismatch_row(w, t);
    case CollectiveRowKind::timeout:
      return timeout_row(w, t);
    case CollectiveRowKind::abort:
      return abort_row(w, t);
    case CollectiveRowKind::dead_rank:
      return dead_rank_row(w, t, survivors);
  }
}

// One row on this rank: its result from this rank's view, and how its calls ran (from the communicator's stats).
PairResult check_row(const Rank &w, const CollectiveRow &row, pk_comm_t survivors) {
  PairResult r = empty_row(row);
  const auto t0 = Clock::now();
  pk_comm_stats before, after;
  PK_STRUCT_INIT(before);
  PK_STRUCT_INIT(after);
  pk_comm_get_stats(w.world, &before);
  Tally t(w, r);
  try {
    run_row(w, row, t, survivors);
  } catch (const std::exception &e) {
    t.problem(e.what());  // a host copy failed: the device, not the collective
  }
  t.finish();
  pk_comm_get_stats(w.world, &after);
  r.implementation = after.native_calls > before.native_calls   ? "native"
                     : after.staged_calls > before.staged_calls ? "staged"
                     : after.direct_calls > before.direct_calls ? "direct"
                                                                : "";
  r.seconds = seconds_since(t0);
  return r;
}

PairResult declined_row(const CollectiveRow &row, const std::string &why) {
  PairResult r = empty_row(row);
  r.status = Status::not_supported;
  r.message = why;
  return r;
}

}  // namespace

const std::vector<CollectiveRow> &collective_rows() {
  static const std::vector<CollectiveRow> rows = [] {
    std::vector<CollectiveRow> v;
    using K = CollectiveRowKind;
    for (K k : {K::all_reduce, K::reduce_scatter, K::reduce})
      for (int32_t op = 0; op < PK_REDUCE_COUNT; ++op)
        for (const coll::DtypeCase &d : coll::all_dtypes())
          if (coll::reduction_defined(d.id, op)) v.push_back({row_name(k, op), d.id, op, k});
    for (K k : {K::all_gather, K::broadcast, K::all_to_all, K::send_recv})
      for (const coll::DtypeCase &d : coll::all_dtypes()) v.push_back({row_name(k, -1), d.id, -1, k});
    for (int32_t d : {PK_DTYPE_F32, PK_DTYPE_F64, PK_DTYPE_F16, PK_DTYPE_BF16})
      v.push_back({row_name(K::order, -1), d, PK_REDUCE_SUM, K::order});
    for (int32_t d : {PK_DTYPE_F32, PK_DTYPE_F64}) v.push_back({row_name(K::nan_and_ties, -1), d, -1, K::nan_and_ties});
    for (K k : {K::mismatch, K::timeout, K::abort, K::dead_rank}) v.push_back({row_name(k, -1), -1, -1, k});
    return v;
  }();
  return rows;
}

bool is_collective_row(const std::string &op) {
  return op.compare(0, std::strlen(kPrefix), kPrefix) == 0;
}

namespace {

// The communicator the ranks exchange their verdicts over: on the cpu backend where it can be found (host memory:
// no staging, so a strict run or a backend with broken copies still reports), else on the device under test.
struct Reporter {
  std::unique_ptr<Session> session;
  Rank via;
};

void open_reporter(const Rank &w, Reporter &rep) {
  rep.via = w;
  rep.session = std::make_unique<Session>("cpu", 0, false);
  if (rep.session->device == nullptr || pk_stream_create(rep.session->device, &rep.via.stream) != PK_OK) return;
  pk_comm_options o;
  PK_STRUCT_INIT(o);
  o.nranks = o.rank = -1;
  o.timeout_ms = w.timeout_ms;
  pk_comm_t c = nullptr;
  if (pk_comm_create(rep.session->device, &o, &c) != PK_OK) {
    pk_stream_destroy(rep.via.stream);
    rep.via.stream = w.stream;
    return;
  }
  rep.via.device = rep.session->device;
  rep.via.world = c;
}

}  // namespace

std::vector<PairResult> run_collectives_stage(const Options &opt, const std::vector<size_t> &rows,
                                              CollectivesOutcome *outcome,
                                              const std::function<void(const PairResult &)> &done) {
  const std::vector<CollectiveRow> &table = collective_rows();
  // Not strict unless staging is refused: staging through host memory is how a backend without native collectives
  // runs them (its copies and stream order are part of what is checked).
  auto session = std::make_unique<Session>(opt.backend, opt.device_index, !opt.collectives_staging);
  Session &s = *session;
  if (s.device == nullptr) throw SetupError(s.error.empty() ? "no devices: " + s.no_devices : s.error);
  std::vector<PairResult> out;
  auto finish_all = [&](std::vector<PairResult> results) {
    for (PairResult &r : results) {
      if (done && outcome->rank == 0) done(r);
      out.push_back(std::move(r));
    }
  };
  // No engine (no MPI here, say): every row is NOT_SUPPORTED with the engine's reason.
  const char *engine = std::getenv("PRIMKIT_COLLECTIVES_ENGINE");
  if (pk_comm_engine_available(engine && *engine ? engine : "mpi") != PK_OK) {
    const std::string why = last_error();
    std::vector<PairResult> results;
    for (size_t k : rows) results.push_back(declined_row(table[k], why));
    outcome->note = "collectives: no engine: " + why;
    finish_all(std::move(results));
    return out;
  }
  Rank w;
  w.device = s.device;
  w.timeout_ms = static_cast<uint32_t>(std::max(1.0, opt.timeout_s) * 1000);
  if (pk_stream_create(w.device, &w.stream) != PK_OK) throw SetupError("pk_stream_create: " + last_error());
  pk_comm_options o;
  PK_STRUCT_INIT(o);
  o.nranks = o.rank = -1;
  o.timeout_ms = w.timeout_ms;
  if (pk_comm_create(w.device, &o, &w.world) != PK_OK) throw SetupError("pk_comm_create: " + last_error());
  pk_comm_rank(w.world, &w.rank);
  pk_comm_size(w.world, &w.size);
  outcome->rank = w.rank;
  outcome->nranks = w.size;
  Reporter rep;
  open_reporter(w, rep);
  const bool failures = failure_rows_allowed(opt);
  outcome->note =
      "collectives: " + std::to_string(w.size) +
      (w.size == 1 ? " rank (run it under mpirun -np 2 or more to check anything across ranks)" : " ranks") +
      ", engine " + pk_comm_engine(w.world) + (opt.collectives_staging ? "" : ", staging refused (strict runtime)") +
      (failures ? "; timeout, abort and dead_rank rows run (the launcher survives a failed rank)"
                : "; timeout, abort and dead_rank rows need a launcher that survives a failed rank "
                  "(mpirun --enable-recovery)");
  // Rows before the dead rank are combined over the world while every rank lives; the dead-rank row over the
  // survivors.
  std::vector<PairResult> living;
  std::vector<size_t> dead_rank_rows;
  for (size_t k : rows) {
    const CollectiveRow &row = table[k];
    const bool needs_ranks = row.kind == CollectiveRowKind::mismatch || is_failure_row(row.kind);
    if (needs_ranks && w.size < 2) {
      living.push_back(declined_row(row, "needs at least 2 ranks: run it under mpirun -np 2 or more"));
    } else if (is_failure_row(row.kind) && !failures) {
      living.push_back(declined_row(row,
                                    "leaves a rank failed, which ends an MPI job unless its launcher survives a rank "
                                    "that exits without MPI_Finalize: run under mpirun --enable-recovery (Open MPI), "
                                    "or pass --failure-rows with a launcher that does"));
    } else if (row.kind == CollectiveRowKind::dead_rank) {
      dead_rank_rows.push_back(k);
    } else {
      living.push_back(check_row(w, row, nullptr));
      if (is_failure_row(row.kind)) outcome->end_without_finalize = true;
    }
  }
  finish_all(combine_across_ranks(rep.via, rep.via.world, std::move(living)));
  for (size_t k : dead_rank_rows) {
    const int color = w.rank < w.size - 1 ? 0 : -1;
    pk_comm_t survivors = nullptr, reporting_survivors = nullptr;
    pk_comm_split(w.world, color, w.rank, &survivors);
    pk_comm_split(rep.via.world, color, w.rank, &reporting_survivors);
    outcome->end_without_finalize = true;
    std::vector<PairResult> dead{check_row(w, table[k], survivors)};  // the last rank ends in here
    if (reporting_survivors) finish_all(combine_across_ranks(rep.via, reporting_survivors, std::move(dead)));
  }
  // A call that timed out or failed on the world (a rank crashed, a collective hung) left its transfers behind too.
  if (pk_comm_status(w.world) != PK_OK || pk_comm_status(rep.via.world) != PK_OK) outcome->end_without_finalize = true;
  if (outcome->end_without_finalize) {
    // Transfers were abandoned (or a peer died): tearing the communicators and the runtimes down could wait on
    // them. The process ends without MPI_Finalize anyway, so all of it is left to the exit.
    session.release();
    rep.session.release();
    return out;
  }
  if (rep.via.world != w.world) {
    pk_comm_destroy(rep.via.world);
    pk_stream_destroy(rep.via.stream);
  }
  pk_comm_destroy(w.world);
  pk_stream_destroy(w.stream);
  return out;
}

}  // namespace pk::conformance::detail
