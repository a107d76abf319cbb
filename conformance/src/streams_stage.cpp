// streams_stage.cpp — the streams stage: checks of streams and events that no (op, dtype) case makes.
//
// Every case runs on one stream from one thread and waits with pk_stream_synchronize, so a backend whose events
// complete early, whose pk_stream_wait_event does not order anything, or whose streams share scratch memory
// passes every case. This stage runs once per backend run, in a forked child like the cases, and reports three
// rows (op = the row's name, dtype "-"):
//   streams:events      after a chain of dependent launches, pk_event_synchronize, pk_event_query (polled),
//                       pk_stream_synchronize and pk_stream_query (polled) may say "done" only once the chain's
//                       result is visible: it is read back at once on another, idle stream and compared with
//                       values computed here.
//   streams:wait_event  two threads drive two streams; stream B waits (pk_stream_wait_event) on an event that
//                       stream A records after a long chain, then consumes A's result: it must see A's finished
//                       work.
//   streams:scratch     two threads run reductions, matmuls and sorts on two streams at once, on different
//                       inputs: each must get what it gets alone (ops that need internal scratch memory).
// Every value is an exact small integer in f32 (sums, products and sorts of them are exact in any order), so a
// result either equals the host's or is wrong; no tolerance is involved. A few rounds run (new values each
// round, so that a stale result from an earlier round never passes) within a time budget per row, so the stage
// stays within a few seconds even on an emulated device.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "conformance_internal.hpp"

namespace pk::conformance::detail {

const char *const kStreamStages[kStreamStageCount] = {"streams:events", "streams:wait_event", "streams:scratch",
                                                      "streams:leak"};

bool is_stage_row(const std::string &op) {
  if (is_collective_row(op)) return true;  // the collectives stage's rows are stage rows too
  for (const char *name : kStreamStages)
    if (op == name) return true;
  return false;
}

namespace {

// Sizes: a chain link over 2^20 f32 takes long enough (a millisecond on a CPU, more on a device) that a
// completion signal which does not wait is caught reading an unfinished result.
constexpr int64_t kChainElements = int64_t{1} << 20;
constexpr int kChainLength = 8;     // launches in stream A's chain
constexpr int kShortChain = 2;      // launches in stream B's own chain before it waits on A
constexpr int kRounds = 5;          // rounds per row, each with new values...
constexpr double kRowBudget_s = 3;  // ...but no new round once a row has taken this long
constexpr int kScratchRepeats = 3;  // back-to-back launches of each op per thread and round
// A stage row may take several seconds on an emulated device: it gets at least this long before TIMEOUT.
constexpr double kMinRowTimeout_s = 30;

constexpr pk_dtype kF32 = PK_DTYPE_F32_DESC;
constexpr pk_dtype kI64 = PK_DTYPE_I64_DESC;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The row fails (a wrong value, a failing call) or does not apply (the backend declines the ops it needs).
struct StageFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct StageDeclined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(pk_status st, const std::string &what) {
  if (st != PK_OK) throw StageFailure(what + " failed: " + pk_status_name(st) + ": " + last_error());
}

std::string value_text(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

class StreamHandle {
 public:
  explicit StreamHandle(pk_device_t dev) { check(pk_stream_create(dev, &h_), "pk_stream_create"); }
  StreamHandle(const StreamHandle &) = delete;
  StreamHandle &operator=(const StreamHandle &) = delete;
  ~StreamHandle() { pk_stream_destroy(h_); }
  pk_stream_t get() const { return h_; }

 private:
  pk_stream_t h_ = nullptr;
};

class EventHandle {
 public:
  explicit EventHandle(pk_device_t dev) { check(pk_event_create(dev, &h_), "pk_event_create"); }
  EventHandle(const EventHandle &) = delete;
  EventHandle &operator=(const EventHandle &) = delete;
  ~EventHandle() { pk_event_destroy(h_); }
  pk_event_t get() const { return h_; }

 private:
  pk_event_t h_ = nullptr;
};

struct BufferHandle {
  pk_buffer_t h = nullptr;
  BufferHandle() = default;
  BufferHandle(const BufferHandle &) = delete;
  BufferHandle &operator=(const BufferHandle &) = delete;
  ~BufferHandle() { pk_buffer_destroy(h); }
};

// A contiguous device tensor; its descriptor points at the shape held here, so it never moves.
class DeviceTensor {
 public:
  DeviceTensor(pk_device_t dev, pk_dtype dtype, std::vector<int64_t> shape) : shape_(std::move(shape)) {
    numel_ = std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<int64_t>());
    bytes_ = static_cast<uint64_t>(numel_) * ((dtype.bits * dtype.lanes + 7u) / 8u);
    check(pk_buffer_create(dev, std::max<uint64_t>(bytes_, 1), &buf_.h), "pk_buffer_create");
    check(pk_buffer_tensor(buf_.h, dtype, static_cast<int32_t>(shape_.size()), shape_.data(), nullptr, 0, &t_),
          "pk_buffer_tensor");
    t_.storage_bytes = bytes_;
  }
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  const pk_tensor &t() const { return t_; }
  pk_buffer_t buffer() const { return buf_.h; }
  uint64_t bytes() const { return bytes_; }
  int64_t numel() const { return numel_; }

  void upload(pk_stream_t s, const void *src) const {
    check(pk_copy_host_to_buffer(s, buf_.h, 0, src, bytes_), "pk_copy_host_to_buffer");
  }
  // Enqueues the copy back; the caller synchronizes `s` before reading `dst`.
  void download(pk_stream_t s, void *dst) const {
    check(pk_copy_buffer_to_host(s, dst, buf_.h, 0, bytes_), "pk_copy_buffer_to_host");
  }

 private:
  BufferHandle buf_;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  uint64_t bytes_ = 0;
  pk_tensor t_{};
};
using TensorPtr = std::unique_ptr<DeviceTensor>;

// Whether the backend's capability query accepts exactly this launch.
bool accepts(pk_device_t dev, uint32_t op_id, const std::vector<const DeviceTensor *> &ins,
             const std::vector<const DeviceTensor *> &outs, const void *attrs, std::string *reason) {
  std::vector<pk_tensor> in, out;
  for (const DeviceTensor *t : ins) in.push_back(t->t());
  for (const DeviceTensor *t : outs) out.push_back(t->t());
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = op_id;
  q.num_inputs = static_cast<uint32_t>(in.size());
  q.inputs = in.data();
  q.num_outputs = static_cast<uint32_t>(out.size());
  q.outputs = out.data();
  q.attrs = attrs;
  pk_op_support s;
  PK_STRUCT_INIT(s);
  if (pk_device_query_op(dev, &q, &s) != PK_OK) {
    *reason = "capability query failed: " + last_error();
    return false;
  }
  *reason = s.reason;
  return s.supported != 0;
}

void launch(pk_stream_t s, uint32_t op_id, const char *name, const std::vector<const DeviceTensor *> &ins,
            const std::vector<const DeviceTensor *> &outs, const void *attrs) {
  std::vector<pk_tensor> in, out;
  for (const DeviceTensor *t : ins) in.push_back(t->t());
  for (const DeviceTensor *t : outs) out.push_back(t->t());
  check(pk_launch(s, op_id, in.data(), static_cast<uint32_t>(in.size()), out.data(), static_cast<uint32_t>(out.size()),
                  attrs),
        std::string("pk_launch(") + name + ")");
}

// "" when equal, else the first differing element.
template <class T>
std::string first_difference(const std::vector<T> &got, const std::vector<T> &want) {
  for (size_t i = 0; i < want.size() && i < got.size(); ++i)
    if (!(got[i] == want[i]))
      return "element " + std::to_string(i) + " is " + value_text(static_cast<double>(got[i])) + ", expected " +
             value_text(static_cast<double>(want[i]));
  return "";
}

// Runs `body` on a new thread; join() rethrows what it threw (pk_get_last_error is per thread, so each thread
// builds its own messages).
class Worker {
 public:
  explicit Worker(std::function<void()> body)
      : thread_([this, body = std::move(body)] {
          try {
            body();
          } catch (...) {
            error_ = std::current_exception();
          }
        }) {}
  Worker(const Worker &) = delete;
  Worker &operator=(const Worker &) = delete;
  ~Worker() {
    if (thread_.joinable()) thread_.join();
  }
  void join() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
  std::thread thread_;  // last: started once error_ exists
};

// Lets two threads start their launches together, so that their work overlaps.
class StartLine {
 public:
  void arrive_and_wait() {
    std::unique_lock<std::mutex> g(m_);
    if (++arrived_ == 2) {
      cv_.notify_all();
      return;
    }
    cv_.wait(g, [this] { return arrived_ >= 2; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int arrived_ = 0;
};

// --- dependent chains ------------------------------------------------------------------------------------------

// x[i] = i mod 1000 + 1000 tag: exact in f32, different every round and stream, never the poison -1.
std::vector<float> chain_input(float tag) {
  std::vector<float> x(static_cast<size_t>(kChainElements));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000) + 1000.0f * tag;
  return x;
}

// A chain of `length` launches, each adding 1 to the previous result (ping-pong between two buffers, since an
// output may not alias an input): every launch depends on the one before. Returns the buffer of the last.
const DeviceTensor *add_chain(pk_stream_t s, const DeviceTensor &x, const DeviceTensor &ones, const DeviceTensor &p0,
                              const DeviceTensor &p1, int length) {
  const DeviceTensor *in = &x;
  for (int k = 0; k < length; ++k) {
    const DeviceTensor *out = (k % 2 == 0) ? &p1 : &p0;
    launch(s, PK_OP_ADD, "add", {in, &ones}, {out}, nullptr);
    in = out;
  }
  return in;
}

void require_add(pk_device_t dev, const DeviceTensor &t) {
  std::string why;
  if (!accepts(dev, PK_OP_ADD, {&t, &t}, {&t}, nullptr, &why))
    throw StageDeclined("the backend declines f32 add on [" + std::to_string(t.numel()) + "]: " + why);
}

// Polls a query function until it stops answering PK_NOT_READY.
pk_status poll_until_done(const std::function<pk_status()> &query) {
  pk_status st;
  while ((st = query()) == PK_NOT_READY) std::this_thread::yield();
  return st;
}

struct RowTally {
  PairResult r;
  double start = now_s();
  bool more_rounds(int done) const { return done < kRounds && (done == 0 || now_s() - start < kRowBudget_s); }
};

// --- streams:events --------------------------------------------------------------------------------------------

void events_row(pk_device_t dev, RowTally &tally) {
  const std::vector<int64_t> shape = {kChainElements};
  const DeviceTensor x(dev, kF32, shape), ones(dev, kF32, shape), p0(dev, kF32, shape), p1(dev, kF32, shape);
  require_add(dev, x);
  StreamHandle a(dev), reader(dev);
  EventHandle event(dev);
  const std::vector<float> one(static_cast<size_t>(kChainElements), 1.0f), poison(one.size(), -1.0f);
  ones.upload(a.get(), one.data());

  // Each way of asking "is the stream's work done?"; after a yes the result must be readable from anywhere.
  struct Mode {
    const char *name;
    std::function<pk_status(pk_stream_t, pk_event_t)> wait;
  };
  const Mode modes[] = {
      {"pk_event_synchronize",
       [](pk_stream_t s, pk_event_t e) {
         check(pk_event_record(e, s), "pk_event_record");
         return pk_event_synchronize(e);
       }},
      {"pk_event_query",
       [](pk_stream_t s, pk_event_t e) {
         check(pk_event_record(e, s), "pk_event_record");
         return poll_until_done([e] { return pk_event_query(e); });
       }},
      {"pk_stream_synchronize", [](pk_stream_t s, pk_event_t) { return pk_stream_synchronize(s); }},
      {"pk_stream_query",
       [](pk_stream_t s, pk_event_t) { return poll_until_done([s] { return pk_stream_query(s); }); }},
  };
  std::vector<float> got(one.size());
  for (int round = 0; tally.more_rounds(round); ++round) {
    ++tally.r.cases;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; ++m) {
      const std::vector<float> x0 = chain_input(static_cast<float>(round * 4 + static_cast<int>(m) + 1));
      x.upload(a.get(), x0.data());
      p0.upload(a.get(), poison.data());
      p1.upload(a.get(), poison.data());
      const DeviceTensor *result = add_chain(a.get(), x, ones, p0, p1, kChainLength);
      check(modes[m].wait(a.get(), event.get()), modes[m].name);
      // Read on another stream: it is not ordered after stream a, only the completion signal says it may read.
      result->download(reader.get(), got.data());
      check(pk_stream_synchronize(reader.get()), "pk_stream_synchronize (reader stream)");
      std::vector<float> want(x0);
      for (float &v : want) v += kChainLength;
      const std::string diff = first_difference(got, want);
      // Whatever happened, nothing may still run on the host memory of this round once it goes out of scope.
      check(pk_stream_synchronize(a.get()), "pk_stream_synchronize");
      if (!diff.empty()) {
        ++tally.r.cases_failed;
        throw StageFailure(std::string(modes[m].name) + " reported the stream's work complete before its result " +
                           "was visible: read back at once on another stream after a chain of " +
                           std::to_string(kChainLength) + " dependent adds over " + std::to_string(kChainElements) +
                           " f32, " + diff + " (round " + std::to_string(round + 1) + ")");
      }
    }
    ++tally.r.cases_run;
  }
}

// --- streams:wait_event ----------------------------------------------------------------------------------------

void wait_event_row(pk_device_t dev, RowTally &tally) {
  const std::vector<int64_t> shape = {kChainElements};
  const DeviceTensor xa(dev, kF32, shape), xb(dev, kF32, shape), ones(dev, kF32, shape);
  const DeviceTensor pa0(dev, kF32, shape), pa1(dev, kF32, shape), pb0(dev, kF32, shape), pb1(dev, kF32, shape);
  const DeviceTensor z(dev, kF32, shape);
  require_add(dev, xa);
  StreamHandle setup(dev), sa(dev), sb(dev);
  const std::vector<float> one(static_cast<size_t>(kChainElements), 1.0f), poison(one.size(), -1.0f);
  ones.upload(setup.get(), one.data());
  std::vector<float> got(one.size());
  for (int round = 0; tally.more_rounds(round); ++round) {
    ++tally.r.cases;
    const std::vector<float> a0 = chain_input(static_cast<float>(2 * round + 1)),
                             b0 = chain_input(static_cast<float>(2 * round + 2));
    xa.upload(setup.get(), a0.data());
    xb.upload(setup.get(), b0.data());
    for (const DeviceTensor *t : {&pa0, &pa1, &pb0, &pb1, &z}) t->upload(setup.get(), poison.data());
    check(pk_stream_synchronize(setup.get()), "pk_stream_synchronize (setup stream)");
    EventHandle a_done(dev);
    std::promise<void> recorded;
    std::shared_future<void> recorded_f = recorded.get_future().share();
    // Thread A: a long chain, then the event B waits on. The host tells B once the event is recorded (B must
    // not wait on an event that was never recorded), not once the work is done: that is the device's job.
    Worker ta([&] {
      try {
        const DeviceTensor *fa = add_chain(sa.get(), xa, ones, pa0, pa1, kChainLength);
        (void)fa;
        check(pk_event_record(a_done.get(), sa.get()), "pk_event_record (stream A)");
      } catch (...) {
        recorded.set_exception(std::current_exception());
        throw;
      }
      recorded.set_value();
    });
    // Thread B: its own short chain (work of both streams overlaps), then wait on A's event and add A's result.
    Worker tb([&] {
      const DeviceTensor *fb = add_chain(sb.get(), xb, ones, pb0, pb1, kShortChain);
      try {
        recorded_f.get();
      } catch (...) {
        return;  // thread A reports its own failure
      }
      check(pk_stream_wait_event(sb.get(), a_done.get()), "pk_stream_wait_event");
      const DeviceTensor *fa = kChainLength % 2 == 0 ? &pa0 : &pa1;
      launch(sb.get(), PK_OP_ADD, "add", {fa, fb}, {&z}, nullptr);
      z.download(sb.get(), got.data());
      check(pk_stream_synchronize(sb.get()), "pk_stream_synchronize (stream B)");
    });
    ta.join();
    tb.join();
    check(pk_stream_synchronize(sa.get()), "pk_stream_synchronize (stream A)");
    std::vector<float> want(a0.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = a0[i] + kChainLength + b0[i] + kShortChain;
    const std::string diff = first_difference(got, want);
    if (!diff.empty()) {
      ++tally.r.cases_failed;
      throw StageFailure("stream B waited (pk_stream_wait_event) on an event stream A recorded after a chain of " +
                         std::to_string(kChainLength) + " dependent adds, yet B's add of A's result saw A's work " +
                         "unfinished: " + diff + " (expected A's result + B's; round " + std::to_string(round + 1) +
                         ")");
    }
    ++tally.r.cases_run;
  }
}

// --- streams:scratch -------------------------------------------------------------------------------------------

// One op of the scratch row with its two input sets (one per stream), outputs and host-computed results.
struct ScratchOp {
  const char *name = "";
  uint32_t op_id = 0;
  std::vector<uint8_t> attrs;  // empty: none
  std::vector<TensorPtr> inputs[2], outputs[2];
  std::vector<std::vector<uint8_t>> want[2];  // bytes of each output

  const void *attr_ptr() const { return attrs.empty() ? nullptr : attrs.data(); }
  std::vector<const DeviceTensor *> list(const std::vector<TensorPtr> &v) const {
    std::vector<const DeviceTensor *> out;
    for (const TensorPtr &t : v) out.push_back(t.get());
    return out;
  }
};

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class A>
std::vector<uint8_t> attr_bytes(const A &a) {
  std::vector<uint8_t> b(sizeof a);
  std::memcpy(b.data(), &a, sizeof a);
  return b;
}

// Small pseudo-random integers (a fixed LCG: the stage must be the same on every run).
struct Lcg {
  uint64_t s;
  int next(int lo, int hi) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int>((s >> 33) % static_cast<uint64_t>(hi - lo + 1));
  }
};

// Sum over rows of 16384: a long reduction, which backends split into partial sums held in scratch memory.
void make_sum(pk_device_t dev, ScratchOp &op) {
  constexpr int64_t rows = 64, cols = 16384;
  op.name = "sum";
  op.op_id = PK_OP_SUM;
  pk_attrs_sum at = PK_ATTRS_SUM_INIT;
  at.num_dims = 1;
  at.dims[0] = 1;
  op.attrs = attr_bytes(at);
  for (int k = 0; k < 2; ++k) {
    Lcg g{static_cast<uint64_t>(11 + k)};
    std::vector<float> x(static_cast<size_t>(rows * cols)), s(static_cast<size_t>(rows), 0.0f);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(g.next(-8, 8) + (k ? 3 : 0));
      s[i / cols] += x[i];  // |partial sums| <= 11 * 16384 < 2^24: exact
    }
    op.inputs[k].push_back(std::make_unique<DeviceTensor>(dev, kF32, std::vector<int64_t>{rows, cols}));
    op.outputs[k].push_back(std::make_unique<DeviceTensor>(dev, kF32, std::vector<int64_t>{rows}));
    op.want[k] = {bytes_of(x), bytes_of(s)};  // inputs' bytes first, then the outputs' (split by make_inputs)
  }
}

// A 128 x 256 by 256 x 128 matmul of integers in [-4, 4]: every dot product is exact.
void make_matmul(pk_device_t dev, ScratchOp &op) {
  constexpr int64_t m = 128, kk = 256, n = 128;
  op.name = "matmul";
  op.op_id = PK_OP_MATMUL;
  for (int k = 0; k < 2; ++k) {
    Lcg g{static_cast<uint64_t>(21 + k)};
    std::vector<float> a(static_cast<size_t>(m * kk)), b(static_cast<size_t>(kk * n)), c(static_cast<size_t>(m * n));
    for (float &v : a) v = static_cast<float>(g.next(-4, 4));
    for (float &v : b) v = static_cast<float>(g.next(-4, 4));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (int64_t p = 0; p < kk; ++p) acc += a[static_cast<size_t>(i * kk + p)] * b[static_cast<size_t>(p * n + j)];
        c[static_cast<size_t>(i * n + j)] = acc;
      }
    op.inputs[k].push_back(std::make_unique<DeviceTensor>(dev, kF32, std::vector<int64_t>{m, kk}));
    op.inputs[k].push_back(std::make_unique<DeviceTensor>(dev, kF32, std::vector<int64_t>{kk, n}));
    op.outputs[k].push_back(std::make_unique<DeviceTensor>(dev, kF32, std::vector<int64_t>{m, n}));
    op.want[k] = {bytes_of(a), bytes_of(b), bytes_of(c)};
  }
}

// Rows of 1024 distinct values (a shuffled permutation, offset per stream), sorted ascending and stably: the
// values and the indices are both determined. (Rows of 4096 took over a second per launch on an emulated
// device; 1024 still needs several merge passes.)
void make_sort(pk_device_t dev, ScratchOp &op) {
  constexpr int64_t rows = 8, cols = 1024;
  op.name = "sort";
  op.op_id = PK_OP_SORT;
  pk_attrs_sort at = PK_ATTRS_SORT_INIT;
  at.dim = 1;
  op.attrs = attr_bytes(at);
  for (int k = 0; k < 2; ++k) {
    Lcg g{static_cast<uint64_t>(31 + k)};
    std::vector<float> x(static_cast<size_t>(rows * cols)), v(x.size());
    std::vector<int64_t> idx(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> perm(static_cast<size_t>(cols));
      std::iota(perm.begin(), perm.end(), 0);
      for (int64_t i = cols - 1; i > 0; --i)
        std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(g.next(0, static_cast<int>(i)))]);
      for (int64_t i = 0; i < cols; ++i) {
        const float value = static_cast<float>(perm[static_cast<size_t>(i)] - (k ? 1000 : 0));
        x[static_cast<size_t>(r * cols + i)] = value;
        v[static_cast<size_t>(r * cols + perm[static_cast<size_t>(i)])] = value;
        idx[static_cast<size_t>(r * cols + perm[static_cast<size_t>(i)])] = i;
      }
    }
    op.inputs[k].push_back(std::make_unique<DeviceTensor>(dev, kF32, std::vector<int64_t>{rows, cols}));
    op.outputs[k].push_back(std::make_unique<DeviceTensor>(dev, kF32, std::vector<int64_t>{rows, cols}));
    op.outputs[k].push_back(std::make_unique<DeviceTensor>(dev, kI64, std::vector<int64_t>{rows, cols}));
    op.want[k] = {bytes_of(x), bytes_of(v), bytes_of(idx)};
  }
}

// Launches every op of `ops` on input set k, `repeats` times, reading every output back after each repeat;
// returns the first difference from the host's results ("" if none).
std::string run_scratch_ops(pk_stream_t s, std::vector<ScratchOp> &ops, int k, int repeats, StartLine *start) {
  std::vector<std::vector<std::vector<uint8_t>>> got(ops.size());
  for (size_t o = 0; o < ops.size(); ++o)
    for (const TensorPtr &t : ops[o].outputs[k]) got[o].emplace_back(t->bytes());
  if (start) start->arrive_and_wait();
  for (int rep = 0; rep < repeats; ++rep) {
    for (ScratchOp &op : ops)
      launch(s, op.op_id, op.name, op.list(op.inputs[k]), op.list(op.outputs[k]), op.attr_ptr());
    for (size_t o = 0; o < ops.size(); ++o)
      for (size_t j = 0; j < ops[o].outputs[k].size(); ++j) ops[o].outputs[k][j]->download(s, got[o][j].data());
    check(pk_stream_synchronize(s), "pk_stream_synchronize");
    for (size_t o = 0; o < ops.size(); ++o) {
      for (size_t j = 0; j < got[o].size(); ++j) {
        const std::vector<uint8_t> &want = ops[o].want[k][j];
        if (got[o][j] == want) continue;
        const bool indices = ops[o].outputs[k][j]->t().dtype.code == PK_DTYPE_CODE_INT;
        std::string diff;
        if (indices) {
          std::vector<int64_t> g(want.size() / 8), w(want.size() / 8);
          std::memcpy(g.data(), got[o][j].data(), want.size());
          std::memcpy(w.data(), want.data(), want.size());
          diff = first_difference(g, w);
        } else {
          std::vector<float> g(want.size() / 4), w(want.size() / 4);
          std::memcpy(g.data(), got[o][j].data(), want.size());
          std::memcpy(w.data(), want.data(), want.size());
          diff = first_difference(g, w);
        }
        return std::string(ops[o].name) + " output " + std::to_string(j) + ": " + diff;
      }
    }
  }
  return "";
}

void scratch_row(pk_device_t dev, RowTally &tally) {
  StreamHandle sa(dev), sb(dev);
  std::vector<ScratchOp> all(3), ops;
  make_sum(dev, all[0]);
  make_matmul(dev, all[1]);
  make_sort(dev, all[2]);
  std::string declined;
  for (ScratchOp &op : all) {
    // want[k] holds the inputs' bytes, then the outputs': upload the inputs and keep the outputs' for checks.
    std::string why;
    if (!accepts(dev, op.op_id, op.list(op.inputs[0]), op.list(op.outputs[0]), op.attr_ptr(), &why)) {
      declined += std::string(declined.empty() ? "" : "; ") + op.name + ": " + why;
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      for (size_t i = 0; i < op.inputs[k].size(); ++i) op.inputs[k][i]->upload(sa.get(), op.want[k][i].data());
      check(pk_stream_synchronize(sa.get()), "pk_stream_synchronize");
      op.want[k].erase(op.want[k].begin(), op.want[k].begin() + static_cast<long>(op.inputs[k].size()));
    }
    ops.push_back(std::move(op));
  }
  if (ops.empty()) throw StageDeclined("the backend declines every op of the check (" + declined + ")");
  std::string names;
  for (const ScratchOp &op : ops) names += std::string(names.empty() ? "" : ", ") + op.name;
  for (int round = 0; tally.more_rounds(round); ++round) {
    ++tally.r.cases;
    // Alone first: a wrong result here is the op's own failure (its row says more), not the streams'.
    for (int k = 0; k < 2; ++k) {
      const std::string diff = run_scratch_ops(k ? sb.get() : sa.get(), ops, k, 1, nullptr);
      if (!diff.empty()) {
        ++tally.r.cases_failed;
        throw StageFailure("run alone on one stream, " + diff + " (a plain wrong result: see the op's own row)");
      }
    }
    StartLine start;
    std::string diff_a, diff_b;
    Worker ta([&] { diff_a = run_scratch_ops(sa.get(), ops, 0, kScratchRepeats, &start); });
    Worker tb([&] { diff_b = run_scratch_ops(sb.get(), ops, 1, kScratchRepeats, &start); });
    ta.join();
    tb.join();
    if (!diff_a.empty() || !diff_b.empty()) {
      ++tally.r.cases_failed;
      throw StageFailure("two streams on two threads running " + names +
                         " at once on different inputs disagree with the same launches run alone (shared scratch "
                         "memory or missing isolation between streams): stream " +
                         (diff_a.empty() ? "B, " + diff_b : "A, " + diff_a) + " (round " + std::to_string(round + 1) +
                         ")");
    }
    ++tally.r.cases_run;
  }
  if (!declined.empty()) tally.r.message = "declined, not checked: " + declined;
}

// --- streams:leak ----------------------------------------------------------------------------------------------

// Resident memory of this process in bytes (/proc/self/statm); 0 where it cannot be read.
uint64_t resident_bytes() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

// The same small launch many times on one stream: memory a backend keeps per launch (a command it never
// frees, a kernel object built anew each time) grows the child's resident set without bound. A warm-up first
// lets caches, pools and lazily built kernels settle; the growth then must stay under both thresholds (per
// launch and in all), which allocator noise does not reach. Reported as QUALITY_WARNING: a leak is a defect a
// user must hear about, but no result is wrong. The launches stop at a time budget, so a slow (or planted-slow)
// device costs a few seconds, not minutes; fewer launches then rarely pass the total threshold.
constexpr int kLeakWarmup = 200, kLeakLaunches = 10000;
constexpr double kLeakBudget_s = 2;               // for the measured launches (the warm-up gets a quarter of it)
constexpr double kLeakPerLaunch = 1024;           // bytes per launch...
constexpr double kLeakTotal = 4.0 * 1024 * 1024;  // ...and in all, both exceeded for a warning

void leak_row(pk_device_t dev, RowTally &tally) {
  const std::vector<int64_t> shape = {1024};
  const DeviceTensor x(dev, kF32, shape), ones(dev, kF32, shape), out(dev, kF32, shape);
  require_add(dev, x);
  StreamHandle s(dev);
  std::vector<float> x0(1024), got(1024);
  for (size_t i = 0; i < x0.size(); ++i) x0[i] = static_cast<float>(i);
  const std::vector<float> one(1024, 1.0f);
  x.upload(s.get(), x0.data());
  ones.upload(s.get(), one.data());
  ++tally.r.cases;
  // Launches in batches of 100, each synchronized (so an asynchronous queue cannot hold them all), until n ran
  // or the budget is spent; returns how many ran.
  const auto launches = [&](int n, double budget_s) {
    const double deadline = now_s() + budget_s;
    int k = 0;
    while (k < n && (k % 100 != 0 || now_s() < deadline)) {
      launch(s.get(), PK_OP_ADD, "add", {&x, &ones}, {&out}, nullptr);
      if (++k % 100 == 0) check(pk_stream_synchronize(s.get()), "pk_stream_synchronize");
    }
    check(pk_stream_synchronize(s.get()), "pk_stream_synchronize");
    return k;
  };
  const int warm = launches(kLeakWarmup, kLeakBudget_s / 4);
  const uint64_t before = resident_bytes();
  const int measured = launches(kLeakLaunches, kLeakBudget_s);
  const uint64_t after = resident_bytes();
  out.download(s.get(), got.data());
  check(pk_stream_synchronize(s.get()), "pk_stream_synchronize");
  std::vector<float> want(x0);
  for (float &v : want) v += 1;
  if (const std::string diff = first_difference(got, want); !diff.empty()) {
    ++tally.r.cases_failed;
    throw StageFailure("add repeated " + std::to_string(warm + measured) + " times: " + diff);
  }
  ++tally.r.cases_run;
  if (before == 0 || after == 0) {
    tally.r.message = "resident memory not measured (/proc/self/statm unreadable)";
    return;
  }
  const double growth = after > before ? static_cast<double>(after - before) : 0.0;
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "resident memory grew by %.0f bytes per launch over %d launches of add (%.1f MiB in all)",
                growth / measured, measured, growth / (1024.0 * 1024.0));
  tally.r.message = buf;
  if (growth / measured > kLeakPerLaunch && growth > kLeakTotal) tally.r.status = Status::quality_warning;
}

}  // namespace

PairResult check_stream_stage(pk_device_t device, size_t which) {
  RowTally tally;
  PairResult &r = tally.r;
  r.op = which < kStreamStageCount ? kStreamStages[which] : "streams:?";
  r.dtype = "-";
  r.primitive = false;
  r.check = "exact";
  try {
    switch (which) {
      case 0:
        events_row(device, tally);
        break;
      case 1:
        wait_event_row(device, tally);
        break;
      case 2:
        scratch_row(device, tally);
        break;
      case 3:
        leak_row(device, tally);
        break;
      default:
        throw StageFailure("no stage row " + std::to_string(which));
    }
    if (r.status != Status::quality_warning) r.status = Status::pass;
  } catch (const StageDeclined &e) {
    r.status = Status::not_supported;
    r.message = e.what();
  } catch (const std::exception &e) {
    r.status = Status::fail;
    r.message = e.what();
  }
  r.seconds = now_s() - tally.start;
  return r;
}

std::vector<PairResult> run_stream_stages(const Options &opt, const std::vector<size_t> &rows,
                                          const std::function<void(const PairResult &)> &done) {
  std::vector<PairResult> out;
  auto finish = [&](const PairResult &r) {
    out.push_back(r);
    if (done) done(r);
  };
  auto ended_row = [](size_t k, Status st, const std::string &why) {
    PairResult r;
    r.op = kStreamStages[k];
    r.dtype = "-";
    r.primitive = false;
    r.check = "exact";
    r.status = st;
    r.message = why;
    return r;
  };
  if (!opt.isolate) {
    Session s(opt.backend, opt.device_index);
    for (size_t k : rows)
      finish(s.device ? check_stream_stage(s.device, k)
                      : ended_row(k, Status::crash, "could not set up the backend: " + s.error + s.no_devices));
    return out;
  }
  const double limit = std::max(opt.timeout_s, kMinRowTimeout_s);
  std::deque<size_t> pending(rows.begin(), rows.end());
  while (!pending.empty()) {
    int fds[2];
    if (::pipe(fds) != 0) throw SetupError("pipe() failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw SetupError("fork() failed");
    if (pid == 0) {
      ::close(fds[0]);
      {
        Session s(opt.backend, opt.device_index);
        if (s.device == nullptr) {
          write_line(fds[1], "X\t" + escape(s.error.empty() ? "no device: " + s.no_devices : s.error));
          ::_exit(3);
        }
        for (size_t k : pending) {
          write_line(fds[1], "B\t" + std::to_string(k));
          write_line(fds[1], "R\t" + encode(check_stream_stage(s.device, k)));
        }
      }
      ::_exit(0);
    }
    ::close(fds[1]);
    std::string buffer, setup_error;
    double last_progress = now_s();
    bool eof = false, killed = false;
    while (!eof) {
      pollfd p{fds[0], POLLIN, 0};
      const int pr = ::poll(&p, 1, 200);
      if (pr < 0 && errno != EINTR) throw SetupError("poll() failed");
      if (pr > 0) {
        char buf[65536];
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n > 0)
          buffer.append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR)
          eof = true;
      }
      size_t nl;
      while ((nl = buffer.find('\n')) != std::string::npos) {
        const std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (line.size() < 2) continue;
        if (line[0] == 'B') {
          last_progress = now_s();
        } else if (line[0] == 'R' && !pending.empty()) {
          PairResult r;
          if (!decode(line.substr(2), r))
            r = ended_row(pending.front(), Status::crash, "the child sent a malformed result");
          finish(r);
          pending.pop_front();
          last_progress = now_s();
        } else if (line[0] == 'X') {
          setup_error = unescape(line.substr(2));
        }
      }
      if (!eof && now_s() - last_progress > limit) {
        ::kill(pid, SIGKILL);
        killed = true;
        eof = true;
      }
    }
    int ws = 0;
    ::waitpid(pid, &ws, 0);
    ::close(fds[0]);
    if (pending.empty()) break;
    if (!setup_error.empty()) {
      for (size_t k : pending)
        finish(ended_row(k, Status::crash, "the child could not set up the backend: " + setup_error));
      break;
    }
    // The child ended inside the first pending row: that row is its CRASH or TIMEOUT; the rest run in a new child.
    char why[96];
    std::snprintf(why, sizeof why, "still running after %.0f s (killed)", limit);
    finish(ended_row(pending.front(), killed ? Status::timeout : Status::crash,
                     killed ? std::string(why) : "the child " + describe_exit(ws)));
    pending.pop_front();
  }
  return out;
}

}  // namespace pk::conformance::detail
