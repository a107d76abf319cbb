// The thread-safety contract of primkit.h ("Threading"), exercised all at once: threads launch on one shared
// stream and on streams of their own, hand work to each other through events and pk_stream_wait_event, build,
// compile and run graphs (one executable run on several streams), allocate and free buffers, load plugins into
// the runtime while others launch with fallback, query devices and the op table, create and destroy runtimes, and
// fail calls on purpose to check that each thread's last error stays its own. Devices: the CPU backend, the
// simulated accelerator (copies, fusion) and the asynchronous one (a worker thread per stream), all test plugins. Every
// result is checked against a value computed here independently (sums of small integers, which f32 holds exactly, and
// exp/softmax in double).
//
// Short by default (a few seconds); PRIMKIT_STRESS_SCALE=N multiplies every iteration count. Built and run
// under ThreadSanitizer by tools/run-tsan.sh, where a data race anywhere in these paths fails the run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

int scale() {
  const char *s = std::getenv("PRIMKIT_STRESS_SCALE");
  const int n = s ? std::atoi(s) : 1;
  return n > 0 ? n : 1;
}

// Worker threads do not use gtest's assertions (their failures would have to name a thread anyway): each check
// records what went wrong here, and the test reports the collected failures on the main thread.
class Failures {
 public:
  void add(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (list_.size() < 50) list_.push_back(std::move(what));
    ++count_;
  }
  std::string report() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s = std::to_string(count_) + " failures";
    for (const auto &f : list_) s += "\n  " + f;
    return s;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> list_;
  size_t count_ = 0;
};

// Opens all workers at once, so that they overlap from their first call.
class StartGate {
 public:
  explicit StartGate(int parties) : waiting_(parties) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--waiting_ == 0) cv_.notify_all();
    cv_.wait(lock, [this] { return waiting_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_;
};

// One thread's view: counts the pk_ calls it makes and records the ones that did not answer as expected, with
// the thread's last error (read right away, on the failing thread).
class Worker {
 public:
  Worker(std::string name, Failures &failures, std::atomic<uint64_t> &ops)
      : name_(std::move(name)), failures_(failures), ops_(ops) {}
  ~Worker() { ops_.fetch_add(calls_, std::memory_order_relaxed); }
  Worker(const Worker &) = delete;
  Worker &operator=(const Worker &) = delete;
  // The status of one pk_ call; false (and a recorded failure) if it is not `want`.
  bool ok(pk_status got, const char *what, pk_status want = PK_OK) {
    ++calls_;
    if (got == want) return true;
    fail(std::string(what) + " returned " + pk_status_name(got) + " (wanted " + pk_status_name(want) +
         "): " + last_error().message);
    return false;
  }
  void count(uint64_t calls = 1) { calls_ += calls; }
  void fail(const std::string &what) { failures_.add(name_ + ": " + what); }

 private:
  std::string name_;
  Failures &failures_;
  std::atomic<uint64_t> &ops_;
  uint64_t calls_ = 0;
};

// A 1-D f32 buffer of n elements on a device with a tensor describing all of it.
class Vec {
 public:
  Vec(Worker &w, pk_device_t dev, int64_t n) : shape_{n} {
    if (w.ok(pk_buffer_create(dev, static_cast<uint64_t>(n) * 4, &buffer_), "pk_buffer_create")) {
      w.ok(pk_buffer_tensor(buffer_, f32(), 1, shape_, nullptr, 0, &t_), "pk_buffer_tensor");
    }
  }
  Vec(const Vec &) = delete;
  Vec &operator=(const Vec &) = delete;
  ~Vec() { pk_buffer_destroy(buffer_); }
  const pk_tensor &t() const { return t_; }
  // Waits for the copy: on an asynchronous device it reads `v` when the stream gets there.
  bool upload(Worker &w, pk_stream_t s, const std::vector<float> &v) {
    return w.ok(pk_copy_host_to_buffer(s, buffer_, 0, v.data(), v.size() * 4), "pk_copy_host_to_buffer") &&
           w.ok(pk_stream_synchronize(s), "pk_stream_synchronize");
  }
  std::vector<float> download(Worker &w, pk_stream_t s) {
    std::vector<float> v(static_cast<size_t>(shape_[0]), std::nanf(""));
    w.ok(pk_copy_buffer_to_host(s, v.data(), buffer_, 0, v.size() * 4), "pk_copy_buffer_to_host");
    w.ok(pk_stream_synchronize(s), "pk_stream_synchronize");
    return v;
  }

 private:
  int64_t shape_[1];
  pk_buffer_t buffer_ = nullptr;
  pk_tensor t_{};
};

bool launch2(Worker &w, pk_stream_t s, uint32_t op, const pk_tensor &a, const pk_tensor &b, const pk_tensor &out,
             const char *what) {
  const pk_tensor in[2] = {a, b};
  return w.ok(pk_launch(s, op, in, 2, &out, 1, nullptr), what);
}

// Every element of `got` equals `want` (exact: the values are small integers).
void expect_all(Worker &w, const std::vector<float> &got, float want, const std::string &what) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want) {
      w.fail(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(want));
      return;
    }
  }
}

constexpr int64_t kN = 64;  // elements per vector: small, so that threads collide on the runtime, not in kernels
constexpr int64_t kBig = int64_t{1} << 17;  // big enough for the CPU backend's parallel_for to use its pool

// The objects every worker shares: one runtime with the CPU backend (the fallback target), the simulated
// accelerator (no unified memory: its fallbacks copy through host memory, and it fuses add/mul chains) and the
// asynchronous one (each stream a worker thread: events, waits and frees of memory still in use are real).
struct Shared {
  pk_runtime_t rt = nullptr;
  pk_backend_t cpu = nullptr, sim = nullptr, async = nullptr;
  pk_device_t cpu_dev = nullptr, sim_dev = nullptr, async_dev = nullptr;
  pk_device_t async_waits_dev = nullptr;  // the async backend's second device: only the event handoff uses it
  pk_stream_t cpu_shared = nullptr, sim_shared = nullptr, async_shared = nullptr;  // several threads enqueue here
  pk_executable_t cpu_exe = nullptr, sim_exe = nullptr;  // compiled once, run by several threads
  pk_executable_t async_exe = nullptr;                   // run by several threads on the shared async stream
  Failures failures;
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> exp_launches{0};  // every launch of exp on the sim and async devices falls back
  std::atomic<bool> loading_done{false};
};

// --- the workers --------------------------------------------------------------------------------------------

// A chain of adds whose end value is known: a <- a + inc, `iters` times (through a second buffer, as an output
// may not alias an input), on `stream` (shared with other threads or the worker's own). Each iteration also
// allocates a scratch buffer, writes it and frees it, so that buffers come and go while other threads launch.
// With n = kBig the CPU backend splits each add over its worker pool, which two such chains then share.
void add_chain(Worker &w, pk_device_t dev, pk_stream_t stream, float inc, int iters, int64_t n = kN) {
  Vec a(w, dev, n), b(w, dev, n), step(w, dev, n);
  a.upload(w, stream, std::vector<float>(n, 0.0f));
  step.upload(w, stream, std::vector<float>(n, inc));
  for (int i = 0; i < iters; ++i) {
    if (!launch2(w, stream, PK_OP_ADD, a.t(), step.t(), b.t(), "add (chain)")) return;
    {
      Vec scratch(w, dev, n);
      launch2(w, stream, PK_OP_ADD, b.t(), step.t(), scratch.t(), "add (scratch)");
    }
    if (!launch2(w, stream, PK_OP_ADD, b.t(), step.t(), a.t(), "add (chain)")) return;
    if (i % 8 == 0) {
      const pk_status q = pk_stream_query(stream);
      w.count();
      if (q != PK_OK && q != PK_NOT_READY) w.fail(std::string("pk_stream_query: ") + pk_status_name(q));
    }
  }
  expect_all(w, a.download(w, stream), 2.0f * inc * static_cast<float>(iters), "add chain");
}

// exp on a device that lacks it: every launch falls back to the CPU backend through host copies while the loader
// thread grows the runtime's backend list. Runs until the loader is done (and at least `iters`).
void fallback_exp(Shared &sh, Worker &w, pk_device_t dev, int iters) {
  pk_stream_t stream = nullptr;
  if (!w.ok(pk_stream_create(dev, &stream), "pk_stream_create")) return;
  {
    Vec x(w, dev, kN), y(w, dev, kN);
    std::vector<float> hx(kN);
    for (int64_t i = 0; i < kN; ++i) hx[i] = 0.125f * static_cast<float>(i - kN / 2);
    x.upload(w, stream, hx);
    int done = 0;
    while (done < iters || !sh.loading_done.load()) {
      const pk_tensor in = x.t(), out = y.t();
      if (!w.ok(pk_launch(stream, PK_OP_EXP, &in, 1, &out, 1, nullptr), "exp (fallback)")) break;
      sh.exp_launches.fetch_add(1, std::memory_order_relaxed);
      ++done;
    }
    const std::vector<float> got = y.download(w, stream);
    for (int64_t i = 0; i < kN; ++i) {
      const float want = static_cast<float>(std::exp(static_cast<double>(hx[i])));
      if (ulp_distance(got[i], want) > 3) {
        w.fail("exp(" + std::to_string(hx[i]) + ") = " + std::to_string(got[i]) + ", expected " + std::to_string(want));
        break;
      }
    }
  }
  pk_stream_destroy(stream);
  w.count();
}

// Loads the deviceless numbered plugin again and again (each load appends to the backend list) while others
// launch with fallback, which reads that list; also reads the list and the fallback report meanwhile.
void load_plugins(Shared &sh, Worker &w, int loads) {
  const std::string path = plugin("primkit_test_numbered");
  for (int i = 0; i < loads; ++i) {
    pk_backend_t b = nullptr;
    if (!w.ok(pk_runtime_load_plugin(sh.rt, path.c_str(), &b), "pk_runtime_load_plugin")) break;
    uint32_t devices = 99;
    w.ok(pk_backend_device_count(b, &devices), "pk_backend_device_count");
    if (devices != 0) w.fail("the numbered plugin should have no device, has " + std::to_string(devices));
    pk_backend_t found = nullptr;
    w.ok(pk_runtime_find_backend(sh.rt, "sim", &found), "pk_runtime_find_backend(sim)");
    if (found != sh.sim) w.fail("pk_runtime_find_backend(sim) found another backend");
    uint32_t count = 0;
    w.ok(pk_runtime_backend_count(sh.rt, &count), "pk_runtime_backend_count");
    pk_backend_t last = nullptr;
    w.ok(pk_runtime_backend(sh.rt, count - 1, &last), "pk_runtime_backend");
    const std::string report = pk_runtime_fallback_report(sh.rt);
    w.count();
    if (!report.empty() && report.back() != '\n') w.fail("a fallback report line is cut: '" + report + "'");
  }
  sh.loading_done = true;
}

// A producer and a consumer on two streams of one device, handing over through events: round r, the producer
// computes cur_r = cur_{r-1} + 1 into a fresh buffer and records an event after it; the consumer makes its own
// stream wait for that event (pk_stream_wait_event) and adds cur_r into its sum. The sum ends at 1 + 2 + ... + R.
// On the asynchronous device a wait that let the consumer's add run before the producer's shows as a wrong sum
// (and as a race under ThreadSanitizer); the buffers are freed only at the end, because freeing one synchronizes
// every stream of its device, which would hide a missing wait. The two go in lockstep (the producer starts round
// r + 1 once the consumer has enqueued round r), so that the consumer's add is enqueued while the producer's add
// it reads is still running.
class EventHandoff {
 public:
  EventHandoff(pk_device_t dev, int rounds) : dev_(dev), rounds_(rounds) {}

  void produce(Worker &w) {
    pk_stream_t stream = nullptr;
    if (!w.ok(pk_stream_create(dev_, &stream), "pk_stream_create")) return finish();
    Vec one(w, dev_, kN);
    one.upload(w, stream, std::vector<float>(kN, 1.0f));
    auto prev = std::make_unique<Vec>(w, dev_, kN);
    prev->upload(w, stream, std::vector<float>(kN, 0.0f));
    Vec *last = prev.get();
    push(Item{std::move(prev), nullptr});  // round 0: the consumer keeps it
    for (int r = 1; r <= rounds_; ++r) {
      auto cur = std::make_unique<Vec>(w, dev_, kN);
      pk_event_t ev = nullptr;
      if (!launch2(w, stream, PK_OP_ADD, last->t(), one.t(), cur->t(), "add (producer)") ||
          !w.ok(pk_event_create(dev_, &ev), "pk_event_create") ||
          !w.ok(pk_event_record(ev, stream), "pk_event_record")) {
        pk_event_destroy(ev);
        break;
      }
      last = cur.get();
      push(Item{std::move(cur), ev});
      wait_for_ack(r);
    }
    // The buffers the consumer still holds were written on this stream: they outlive it (a destroyed stream
    // waits for its work first).
    pk_stream_destroy(stream);
    w.count();
    finish();
  }

  void consume(Worker &w) {
    pk_stream_t stream = nullptr;
    if (!w.ok(pk_stream_create(dev_, &stream), "pk_stream_create")) return ack(INT_MAX);  // releases the producer
    {
      Vec sum_a(w, dev_, kN), sum_b(w, dev_, kN);
      sum_a.upload(w, stream, std::vector<float>(kN, 0.0f));
      Vec *sum = &sum_a, *other = &sum_b;
      std::vector<std::unique_ptr<Vec>> kept;  // every round's buffer, freed after the last round
      int rounds = 0;
      for (Item item; pop(item);) {
        if (item.event) {
          w.ok(pk_stream_wait_event(stream, item.event), "pk_stream_wait_event");
          const pk_status q = pk_event_query(item.event);
          w.count();
          if (q != PK_OK && q != PK_NOT_READY) w.fail(std::string("pk_event_query: ") + pk_status_name(q));
          launch2(w, stream, PK_OP_ADD, sum->t(), item.buffer->t(), other->t(), "add (consumer)");
          ack(rounds + 1);
          std::swap(sum, other);
          w.ok(pk_event_synchronize(item.event), "pk_event_synchronize");
          pk_event_destroy(item.event);
          w.count();
          ++rounds;
        }
        kept.push_back(std::move(item.buffer));
      }
      if (rounds != rounds_)
        w.fail("consumed " + std::to_string(rounds) + " of " + std::to_string(rounds_) + " rounds");
      const float want = 0.5f * static_cast<float>(rounds_) * static_cast<float>(rounds_ + 1);
      expect_all(w, sum->download(w, stream), want, "sum over the event handoff");
    }
    pk_stream_destroy(stream);
    w.count();
  }

 private:
  struct Item {
    std::unique_ptr<Vec> buffer;
    pk_event_t event = nullptr;
  };
  void push(Item item) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(item));
    cv_.notify_all();
  }
  void ack(int round) {
    std::lock_guard<std::mutex> lock(mu_);
    acked_ = round;
    cv_.notify_all();
  }
  void wait_for_ack(int round) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return acked_ >= round; });
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  bool pop(Item &out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty() || done_; });
    if (queue_.empty()) return false;
    out = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }
  pk_device_t dev_;
  int rounds_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool done_ = false;
  int acked_ = 0;  // rounds the consumer has enqueued its add for
};

// The graphs the workers build: on the simulated devices |x * y + z| (the sim backend fuses mul and add; abs runs
// on its own with fallback), on the CPU softmax(x * y + z) over the vector (a composite, decomposed).
pk_graph_t build_graph(Worker &w, bool softmax) {
  pk_graph_t g = nullptr;
  if (!w.ok(pk_graph_create(&g), "pk_graph_create")) return nullptr;
  const int64_t shape[1] = {kN};
  uint32_t x = 0, y = 0, z = 0, prod = 0, sum = 0, out = 0;
  w.ok(pk_graph_add_input(g, f32(), 1, shape, &x), "pk_graph_add_input");
  w.ok(pk_graph_add_input(g, f32(), 1, shape, &y), "pk_graph_add_input");
  w.ok(pk_graph_add_input(g, f32(), 1, shape, &z), "pk_graph_add_input");
  const uint32_t mul_in[2] = {x, y};
  w.ok(pk_graph_add_node(g, PK_OP_MUL, mul_in, 2, nullptr, &prod, 1), "pk_graph_add_node(mul)");
  const uint32_t add_in[2] = {prod, z};
  w.ok(pk_graph_add_node(g, PK_OP_ADD, add_in, 2, nullptr, &sum, 1), "pk_graph_add_node(add)");
  if (softmax) {
    pk_attrs_softmax attrs = PK_ATTRS_SOFTMAX_INIT;
    attrs.dim = 0;
    w.ok(pk_graph_add_node(g, PK_OP_SOFTMAX, &sum, 1, &attrs, &out, 1), "pk_graph_add_node(softmax)");
  } else {
    w.ok(pk_graph_add_node(g, PK_OP_ABS, &sum, 1, nullptr, &out, 1), "pk_graph_add_node(abs)");
  }
  w.ok(pk_graph_mark_output(g, out), "pk_graph_mark_output");
  return g;
}

pk_executable_t compile_graph(Worker &w, pk_device_t dev, bool softmax) {
  pk_graph_t g = build_graph(w, softmax);
  pk_executable_t exe = nullptr;
  if (g) w.ok(pk_graph_compile(g, dev, nullptr, &exe), "pk_graph_compile");
  pk_graph_destroy(g);
  w.count();
  return exe;
}

// Runs `exe` on the worker's own stream with inputs that depend on `seed`, and checks the output against the
// same formula evaluated here in double.
void run_graph(Worker &w, pk_executable_t exe, pk_device_t dev, pk_stream_t stream, bool softmax, int seed) {
  std::vector<float> hx(kN), hy(kN), hz(kN);
  for (int64_t i = 0; i < kN; ++i) {
    hx[i] = static_cast<float>((i + seed) % 7 - 3);
    hy[i] = 0.25f * static_cast<float>(seed % 5 + 1);
    hz[i] = static_cast<float>(-((i + seed) % 3));
  }
  Vec x(w, dev, kN), y(w, dev, kN), z(w, dev, kN), out(w, dev, kN);
  x.upload(w, stream, hx);
  y.upload(w, stream, hy);
  z.upload(w, stream, hz);
  const pk_tensor ins[3] = {x.t(), y.t(), z.t()};
  const pk_tensor outs[1] = {out.t()};
  if (!w.ok(pk_executable_run(exe, stream, ins, 3, outs, 1), "pk_executable_run")) return;
  const std::vector<float> got = out.download(w, stream);
  std::vector<double> want(kN);
  double max = -INFINITY, total = 0.0;
  for (int64_t i = 0; i < kN; ++i) {
    want[i] = static_cast<double>(hx[i]) * hy[i] + hz[i];  // exact in f32 too: small multiples of 1/4
    max = std::max(max, want[i]);
  }
  if (softmax) {
    for (double &v : want) total += (v = std::exp(v - max));
    for (double &v : want) v /= total;
  }
  for (int64_t i = 0; i < kN; ++i) {
    const double v = softmax ? want[i] : std::fabs(want[i]);
    if (std::fabs(got[i] - v) > (softmax ? 1e-6 + 1e-5 * v : 0.0)) {
      w.fail(std::string(softmax ? "softmax" : "abs") + " graph, seed " + std::to_string(seed) + ": element " +
             std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " + std::to_string(v));
      return;
    }
  }
}

// Builds and compiles its own graphs and runs them, and also runs the executables compiled once up front, which
// other workers run at the same time on their own streams.
void graphs(Worker &w, pk_device_t dev, pk_executable_t shared_exe, bool softmax, int iters, int seed) {
  pk_stream_t stream = nullptr;
  if (!w.ok(pk_stream_create(dev, &stream), "pk_stream_create")) return;
  for (int i = 0; i < iters; ++i) {
    pk_executable_t own = compile_graph(w, dev, softmax);
    if (own) run_graph(w, own, dev, stream, softmax, seed + 2 * i);
    pk_executable_destroy(own);
    w.count();
    if (shared_exe) run_graph(w, shared_exe, dev, stream, softmax, seed + 2 * i + 1);
  }
  pk_stream_destroy(stream);
  w.count();
}

// Fails calls on purpose, with messages that name this thread, and checks after each that the thread's last
// error is its own: a shared last error would show another thread's name (the others fail at the same time).
// Three kinds of failure: the runtime's own (find_backend), a size check naming the byte count, and a backend's
// error forwarded by the runtime (the simulated device's sub fails with vendor code 77).
void errors(Shared &sh, Worker &w, int thread, int iters) {
  pk_stream_t stream = nullptr;
  if (!w.ok(pk_stream_create(sh.sim_dev, &stream), "pk_stream_create")) return;
  Vec a(w, sh.sim_dev, kN), b(w, sh.sim_dev, kN), out(w, sh.sim_dev, kN);
  auto expect_last = [&](pk_status status, const std::string &part, const char *call) {
    const pk_error_info e = last_error();
    if (e.status != status || std::string(e.message).find(part) == std::string::npos) {
      w.fail(std::string(call) + ": the last error is " + pk_status_name(e.status) + " '" + e.message + "', expected " +
             pk_status_name(status) + " with '" + part + "'");
    }
  };
  for (int i = 0; i < iters; ++i) {
    const std::string name = "absent-T" + std::to_string(thread) + "-" + std::to_string(i);
    pk_backend_t b_out = nullptr;
    w.ok(pk_runtime_find_backend(sh.rt, name.c_str(), &b_out), "pk_runtime_find_backend", PK_ERROR_NOT_FOUND);
    std::this_thread::yield();  // let another thread fail in between
    expect_last(PK_ERROR_NOT_FOUND, "no backend named '" + name + "'", "pk_runtime_find_backend");

    const unsigned long long bytes = (1ull << 30) + 1 + 1000000ull * thread + i;  // over sim's 1 GiB limit
    pk_buffer_t big = nullptr;
    w.ok(pk_buffer_create(sh.sim_dev, bytes, &big), "pk_buffer_create (too big)", PK_ERROR_OUT_OF_MEMORY);
    std::this_thread::yield();
    expect_last(PK_ERROR_OUT_OF_MEMORY, std::to_string(bytes) + " bytes", "pk_buffer_create");

    const pk_tensor in[2] = {a.t(), b.t()};
    w.ok(pk_launch(stream, PK_OP_SUB, in, 2, &out.t(), 1, nullptr), "sub (fails in the backend)", PK_ERROR_DEVICE);
    std::this_thread::yield();
    const pk_error_info e = last_error();
    if (e.vendor_code != 77 || std::string(e.message).find("the sub unit is on fire") == std::string::npos) {
      w.fail(std::string("sub: the last error is '") + e.message + "' with vendor code " +
             std::to_string(e.vendor_code));
    }
  }
  pk_stream_destroy(stream);
  w.count();
}

// The read-only calls the contract lets any thread make meanwhile: capability queries (the sim device runs add on
// f32 and not exp), shape inference, the op table, device and backend facts, an executable's counts.
void queries(Shared &sh, Worker &w, int iters) {
  const int64_t shape[2] = {3, 5};
  pk_tensor t;
  PK_STRUCT_INIT(t);
  t.dtype = f32();
  t.ndim = 2;
  t.shape = shape;
  const pk_tensor pair[2] = {t, t};
  for (int i = 0; i < iters; ++i) {
    for (uint32_t op : {static_cast<uint32_t>(PK_OP_ADD), static_cast<uint32_t>(PK_OP_EXP)}) {
      pk_op_query q;
      PK_STRUCT_INIT(q);
      q.op_id = op;
      q.num_inputs = op == PK_OP_ADD ? 2 : 1;
      q.inputs = pair;
      pk_op_support support;
      PK_STRUCT_INIT(support);
      if (w.ok(pk_device_query_op(sh.sim_dev, &q, &support), "pk_device_query_op") &&
          support.supported != (op == PK_OP_ADD ? 1 : 0)) {
        w.fail("sim answered supported=" + std::to_string(support.supported) + " for op " + std::to_string(op));
      }
    }
    pk_dtype dtype{};
    int32_t ndim = 0;
    int64_t out_shape[PK_MAX_RANK] = {0};
    if (w.ok(pk_infer_outputs(PK_OP_ADD, pair, 2, nullptr, 1, &dtype, &ndim, out_shape), "pk_infer_outputs") &&
        (ndim != 2 || out_shape[0] != 3 || out_shape[1] != 5 || dtype.bits != 32)) {
      w.fail("pk_infer_outputs(add, [3, 5] f32) gave rank " + std::to_string(ndim));
    }
    uint32_t id = 0;
    pk_op_desc desc;
    PK_STRUCT_INIT(desc);
    if (w.ok(pk_op_find("softmax", &id), "pk_op_find") && id != PK_OP_SOFTMAX) w.fail("pk_op_find(softmax)");
    if (w.ok(pk_op_describe(PK_OP_EXP, &desc), "pk_op_describe") && std::string(desc.name) != "exp") {
      w.fail(std::string("pk_op_describe(exp) named it ") + desc.name);
    }
    pk_device_props props;
    PK_STRUCT_INIT(props);
    if (w.ok(pk_device_get_props(sh.async_dev, &props), "pk_device_get_props") &&
        !(props.features & PK_DEVICE_FEATURE_ASYNC)) {
      w.fail("the async device does not say it is asynchronous");
    }
    pk_backend_info info;
    PK_STRUCT_INIT(info);
    if (w.ok(pk_backend_get_info(sh.cpu, &info), "pk_backend_get_info") && std::string(info.name) != "cpu") {
      w.fail(std::string("the cpu backend calls itself ") + info.name);
    }
    // The report is rewritten by every call: with the loader calling it too, each thread must read its own.
    const bool exp_fell_back = sh.exp_launches.load() > 0;
    const std::string report = pk_runtime_fallback_report(sh.rt);
    w.count();
    if (exp_fell_back && report.find("exp launches=") == std::string::npos) {
      w.fail("the fallback report lacks exp: '" + report + "'");
    }
    uint32_t fused = 0, fused_nodes = 0, single = 0;
    if (w.ok(pk_executable_stats(sh.sim_exe, &fused, &fused_nodes, &single), "pk_executable_stats") &&
        (fused != 1 || fused_nodes != 2 || single != 1)) {
      w.fail("the sim executable's counts changed");
    }
  }
}

// Whole runtimes on several threads at once: create, load the CPU and simulated backends, compute, destroy.
// Every other round leaves a stream and a buffer to pk_runtime_destroy, which frees what the caller still holds.
void runtimes(Worker &w, int iters) {
  for (int i = 0; i < iters; ++i) {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    pk_runtime_t rt = nullptr;
    if (!w.ok(pk_runtime_create(&o, &rt), "pk_runtime_create")) return;
    for (const std::string &path : {cpu_plugin(), plugin("primkit_backend_sim"), plugin("primkit_test_async")}) {
      pk_backend_t b = nullptr;
      pk_device_t dev = nullptr;
      pk_stream_t s = nullptr;
      if (!w.ok(pk_runtime_load_plugin(rt, path.c_str(), &b), "pk_runtime_load_plugin") ||
          !w.ok(pk_backend_device(b, 0, &dev), "pk_backend_device") ||
          !w.ok(pk_stream_create(dev, &s), "pk_stream_create")) {
        continue;
      }
      {
        Vec a(w, dev, kN), c(w, dev, kN), out(w, dev, kN);
        a.upload(w, s, std::vector<float>(kN, static_cast<float>(i)));
        c.upload(w, s, std::vector<float>(kN, 3.0f));
        launch2(w, s, PK_OP_MUL, a.t(), c.t(), out.t(), "mul (own runtime)");
        expect_all(w, out.download(w, s), 3.0f * static_cast<float>(i), "mul in a runtime of its own");
      }
      if (i % 2 == 0) {
        pk_stream_destroy(s);
        w.count();
      } else {
        pk_buffer_t left = nullptr;
        w.ok(pk_buffer_create(dev, 256, &left), "pk_buffer_create");
      }
    }
    pk_runtime_destroy(rt);
    w.count();
  }
}

// --- the test -------------------------------------------------------------------------------------------------

TEST(ThreadStress, EveryThreadSafeCallAtOnceGivesTheValuesComputedIndependently) {
  const int k = scale();
  Shared sh;
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = PK_RUNTIME_NO_DISCOVERY;
  ASSERT_EQ(pk_runtime_create(&o, &sh.rt), PK_OK);
  ASSERT_EQ(pk_runtime_load_plugin(sh.rt, cpu_plugin().c_str(), &sh.cpu), PK_OK) << last_error().message;
  ASSERT_EQ(pk_runtime_load_plugin(sh.rt, plugin("primkit_backend_sim").c_str(), &sh.sim), PK_OK)
      << last_error().message;
  ASSERT_EQ(pk_runtime_load_plugin(sh.rt, plugin("primkit_test_async").c_str(), &sh.async), PK_OK)
      << last_error().message;
  ASSERT_EQ(pk_backend_device(sh.cpu, 0, &sh.cpu_dev), PK_OK);
  ASSERT_EQ(pk_backend_device(sh.sim, 0, &sh.sim_dev), PK_OK);
  ASSERT_EQ(pk_backend_device(sh.async, 0, &sh.async_dev), PK_OK);
  ASSERT_EQ(pk_backend_device(sh.async, 1, &sh.async_waits_dev), PK_OK);
  ASSERT_EQ(pk_stream_create(sh.cpu_dev, &sh.cpu_shared), PK_OK);
  ASSERT_EQ(pk_stream_create(sh.sim_dev, &sh.sim_shared), PK_OK);
  ASSERT_EQ(pk_stream_create(sh.async_dev, &sh.async_shared), PK_OK);
  {
    Worker setup("setup", sh.failures, sh.ops);
    sh.cpu_exe = compile_graph(setup, sh.cpu_dev, true);
    sh.sim_exe = compile_graph(setup, sh.sim_dev, false);
    sh.async_exe = compile_graph(setup, sh.async_dev, false);
  }
  ASSERT_NE(sh.cpu_exe, nullptr) << sh.failures.report();
  ASSERT_NE(sh.sim_exe, nullptr) << sh.failures.report();
  uint32_t fused = 0;
  ASSERT_EQ(pk_executable_stats(sh.sim_exe, &fused, nullptr, nullptr), PK_OK);
  EXPECT_EQ(fused, 1u) << "the simulated backend fuses mul + add";

  EventHandoff cpu_handoff(sh.cpu_dev, 40 * k), sim_handoff(sh.sim_dev, 40 * k),
      async_handoff(sh.async_waits_dev, 40 * k);
  const int kLoads = 64 * k;
  std::vector<std::pair<std::string, std::function<void(Worker &)>>> jobs = {
      {"chain on the shared cpu stream #1", [&](Worker &w) { add_chain(w, sh.cpu_dev, sh.cpu_shared, 1, 60 * k); }},
      {"chain on the shared cpu stream #2",
       [&](Worker &w) { add_chain(w, sh.cpu_dev, sh.cpu_shared, 2, 20 * k, kBig); }},
      {"chain on the shared sim stream #1", [&](Worker &w) { add_chain(w, sh.sim_dev, sh.sim_shared, 3, 60 * k); }},
      {"chain on the shared sim stream #2", [&](Worker &w) { add_chain(w, sh.sim_dev, sh.sim_shared, 4, 60 * k); }},
      {"chain on the shared async stream #1",
       [&](Worker &w) { add_chain(w, sh.async_dev, sh.async_shared, 6, 30 * k); }},
      {"chain on the shared async stream #2",
       [&](Worker &w) { add_chain(w, sh.async_dev, sh.async_shared, 7, 30 * k); }},
      {"chain on its own cpu stream",
       [&](Worker &w) {
         pk_stream_t s = nullptr;
         if (w.ok(pk_stream_create(sh.cpu_dev, &s), "pk_stream_create")) add_chain(w, sh.cpu_dev, s, 5, 20 * k, kBig);
         pk_stream_destroy(s);
       }},
      {"fallback exp from sim #1", [&](Worker &w) { fallback_exp(sh, w, sh.sim_dev, 20 * k); }},
      {"fallback exp from sim #2", [&](Worker &w) { fallback_exp(sh, w, sh.sim_dev, 20 * k); }},
      {"fallback exp from async", [&](Worker &w) { fallback_exp(sh, w, sh.async_dev, 20 * k); }},
      {"plugin loader", [&](Worker &w) { load_plugins(sh, w, kLoads); }},
      {"cpu event producer", [&](Worker &w) { cpu_handoff.produce(w); }},
      {"cpu event consumer", [&](Worker &w) { cpu_handoff.consume(w); }},
      {"sim event producer", [&](Worker &w) { sim_handoff.produce(w); }},
      {"sim event consumer", [&](Worker &w) { sim_handoff.consume(w); }},
      {"async event producer", [&](Worker &w) { async_handoff.produce(w); }},
      {"async event consumer", [&](Worker &w) { async_handoff.consume(w); }},
      {"cpu graphs #1", [&](Worker &w) { graphs(w, sh.cpu_dev, sh.cpu_exe, true, 6 * k, 1); }},
      {"cpu graphs #2", [&](Worker &w) { graphs(w, sh.cpu_dev, sh.cpu_exe, true, 6 * k, 100); }},
      {"sim graphs #1", [&](Worker &w) { graphs(w, sh.sim_dev, sh.sim_exe, false, 6 * k, 7); }},
      {"sim graphs #2", [&](Worker &w) { graphs(w, sh.sim_dev, sh.sim_exe, false, 6 * k, 200); }},
      {"async graphs", [&](Worker &w) { graphs(w, sh.async_dev, nullptr, false, 6 * k, 300); }},
      // One executable run by two threads on one asynchronous stream, which their downloads (and every buffer
      // free) synchronize while the other thread parks intermediates: a synchronize may hand back only the
      // blocks parked before it began.
      {"async graphs on the shared stream #1",
       [&](Worker &w) {
         for (int i = 0; i < 6 * k; ++i) run_graph(w, sh.async_exe, sh.async_dev, sh.async_shared, false, 500 + i);
       }},
      {"async graphs on the shared stream #2",
       [&](Worker &w) {
         for (int i = 0; i < 6 * k; ++i) run_graph(w, sh.async_exe, sh.async_dev, sh.async_shared, false, 600 + i);
       }},
      {"errors #1", [&](Worker &w) { errors(sh, w, 1, 30 * k); }},
      {"errors #2", [&](Worker &w) { errors(sh, w, 2, 30 * k); }},
      {"errors #3", [&](Worker &w) { errors(sh, w, 3, 30 * k); }},
      {"queries #1", [&](Worker &w) { queries(sh, w, 100 * k); }},
      {"queries #2", [&](Worker &w) { queries(sh, w, 100 * k); }},
      {"runtimes #1", [&](Worker &w) { runtimes(w, 4 * k); }},
      {"runtimes #2", [&](Worker &w) { runtimes(w, 4 * k); }},
  };
  StartGate gate(static_cast<int>(jobs.size()));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (auto &job : jobs) {
    threads.emplace_back([&sh, &gate, &job] {
      Worker w(job.first, sh.failures, sh.ops);
      gate.arrive_and_wait();
      job.second(w);
    });
  }
  for (auto &t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  EXPECT_EQ(sh.failures.count(), 0u) << sh.failures.report();
  uint32_t backends = 0;
  ASSERT_EQ(pk_runtime_backend_count(sh.rt, &backends), PK_OK);
  EXPECT_EQ(backends, 3u + static_cast<uint32_t>(kLoads));
  uint64_t exp_fallbacks = 0;
  ASSERT_EQ(pk_runtime_fallback_count(sh.rt, PK_OP_EXP, &exp_fallbacks, nullptr), PK_OK);
  EXPECT_EQ(exp_fallbacks, sh.exp_launches.load()) << "every exp on the simulated device fell back, once each";
  EXPECT_GE(sh.exp_launches.load(), 60u * k);
  uint64_t abs_fallbacks = 0;
  ASSERT_EQ(pk_runtime_fallback_count(sh.rt, PK_OP_ABS, &abs_fallbacks, nullptr), PK_OK);
  // Sim graphs: two threads, two runs an iteration; async: one thread with one run, two on the shared stream.
  EXPECT_EQ(abs_fallbacks, (2u * 2u + 1u + 2u) * 6u * k) << "abs in each sim and async graph run";
  std::printf("thread stress: %zu threads, %llu pk_ calls in %.2f s\n", jobs.size(),
              static_cast<unsigned long long>(sh.ops.load()), seconds);
  RecordProperty("pk_calls", static_cast<int>(sh.ops.load()));

  pk_executable_destroy(sh.cpu_exe);
  pk_executable_destroy(sh.sim_exe);
  pk_executable_destroy(sh.async_exe);
  pk_stream_destroy(sh.cpu_shared);
  pk_stream_destroy(sh.sim_shared);
  pk_stream_destroy(sh.async_shared);
  pk_runtime_destroy(sh.rt);
}

}  // namespace
