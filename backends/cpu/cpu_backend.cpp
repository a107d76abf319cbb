// cpu_backend.cpp — the CPU reference backend's plugin entry: negotiation, metadata, host memory, streams and
// events, the capability query and op dispatch into the kernel files (kernels_*.cpp).
//
// Work runs synchronously inside the enqueueing call (a stream is the calling thread), so a stream has
// finished everything once a call returns; the sticky-error machinery is still kept, because a failed launch
// must fail every later call on that stream as the ABI promises. Intra-op parallelism uses the backend's own
// threads (parallel_for): oneDNN's OpenMP team where oneDNN runs on OpenMP (openmp_team.cpp), else a worker pool.
#include <pthread.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "chunked_range.hpp"
#include "cpu_fusion.hpp"
#include "cpu_kernels.hpp"

namespace pk::cpu {

// --- kernel registry ------------------------------------------------------------------------------------------

// A kernel's dtype mask is keyed on one operand: the first input typed by a type variable (so `where` keys on its
// values, not its bool predicate), else input 0, else output 0 (creation ops).
int32_t key_operand(const pk::meta::OpInfo &op) {
  for (uint32_t i = 0; i < op.num_inputs; ++i) {
    if (op.inputs[i].type_var >= 0) return static_cast<int32_t>(i);
  }
  return op.num_inputs > 0 ? 0 : -1;
}

uint32_t key_dtype_mask(const pk::meta::OpInfo &op) {
  const int32_t k = key_operand(op);
  if (k < 0) return (1u << PK_DTYPE_COUNT) - 1;  // output dtype from an attribute: any
  const pk::meta::OperandInfo &in = op.inputs[k];
  return in.type_var >= 0 ? op.type_vars[in.type_var].dtype_mask : (1u << in.fixed_dtype);
}

int32_t key_dtype(int32_t k, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                  uint32_t num_outputs) {
  if (k >= 0 && static_cast<uint32_t>(k) < num_inputs) return pk::kit::dtype_id(inputs[k].dtype);
  if (num_outputs > 0) return pk::kit::dtype_id(outputs[0].dtype);
  return -1;
}

namespace {
struct RegistryData {
  std::vector<Kernel> by_id;  // indexed by op id; fn == nullptr where there is none
};
RegistryData &registry_data() {
  static RegistryData d;
  return d;
}
}  // namespace

void KernelRegistry::add(uint32_t op_id, KernelFn fn, uint32_t dtype_mask) {
  const pk::meta::OpInfo *op = pk::meta::find_op(op_id);
  if (op == nullptr) return;  // not in the op table this backend was built with: never launched
  auto &v = registry_data().by_id;
  if (op_id >= v.size()) v.resize(op_id + 1);
  v[op_id] = Kernel{op_id, fn, dtype_mask & key_dtype_mask(*op), op, key_operand(*op)};
}

const Kernel *KernelRegistry::find(uint32_t op_id) const {
  const auto &v = registry_data().by_id;
  return op_id < v.size() && v[op_id].fn ? &v[op_id] : nullptr;
}

namespace {
const KernelRegistry &build_kernels() {
  static KernelRegistry r;
  register_elementwise_kernels(r);
  register_reduction_kernels(r);
  register_shape_kernels(r);
  register_linalg_kernels(r);
  register_nn_kernels(r);
  register_attention_kernels(r);
  register_softplus_kernels(r);
  return r;
}

// A function-local static: after the first call its guard is one load. (libstdc++'s std::call_once writes two
// thread_locals and calls pthread_once on every use: a sixth of a 1-element launch.)
const KernelRegistry &kernels() {
  static const KernelRegistry &r = build_kernels();
  return r;
}

// --- worker pool ----------------------------------------------------------------------------------------------

// Set in a child process forked after the backend ran parallel work. Neither set of threads survives fork (the
// child has only the forking thread): libgomp waits forever for its team's threads in the child's first region,
// and the pool's workers are gone. A forked child (Python's multiprocessing, a data loader's workers) therefore
// runs every op on its one thread, oneDNN included, as PyTorch does.
std::atomic<bool> g_forked_child{false};
void mark_forked_child() {
  g_forked_child.store(true, std::memory_order_relaxed);
}

// The threads the backend runs: PRIMKIT_CPU_THREADS (1..256), else every core. Read once, before any thread starts
// (every parallel path asks), which is also when the fork handler is installed.
size_t configured_threads() {
  static const size_t n = [] {
    pthread_atfork(nullptr, nullptr, mark_forked_child);
    unsigned v = std::max(1u, std::thread::hardware_concurrency());
    if (const char *env = std::getenv("PRIMKIT_CPU_THREADS")) {
      long want = std::strtol(env, nullptr, 10);
      if (want >= 1) v = static_cast<unsigned>(std::min<long>(want, 256));
    }
    return static_cast<size_t>(v);
  }();
  return n;
}

// A fixed pool created on first use. A job is a range split into chunks; each thread owns a slice of them and
// claims its own first, then the others' left-overs, from atomic counters, so a worker that wakes late simply finds
// fewer chunks left (the caller never waits for a chunk nobody has started). Workers spin briefly after a job before
// sleeping on the condition variable: a futex wake-up costs tens of microseconds here, more than a mid-sized op, and
// back-to-back ops find them awake. Nested parallel_for calls from inside a chunk run serially.
class Pool {
 public:
  Pool() {
    const size_t n = configured_threads();
    cursors_ = std::vector<ChunkSlice>(n);
    for (unsigned i = 1; i < n; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_.store(true);
    }
    cv_.notify_all();
    for (auto &t : workers_) t.join();
  }
  size_t size() const { return workers_.size() + 1; }

  void run(int64_t begin, int64_t end, int64_t grain, const RangeFn &f) {
    std::lock_guard<std::mutex> one_job(job_mutex_);  // one parallel job at a time; others queue here
    bool wake;
    {
      std::lock_guard<std::mutex> g(m_);
      f_ = &f;
      range_.plan(begin, end, grain, cursors_.data(), static_cast<int64_t>(size()));
      remaining_.store(range_.chunks);
      generation_.fetch_add(1);
      wake = sleepers_ > 0;
    }
    if (wake) cv_.notify_all();
    take_chunks(0);
    // Spin for the other chunks a while, then sleep; f_ is cleared under the lock once no worker is inside the
    // job, so a worker that wakes after the end cannot join it (or straddle into the next one).
    for (int spin = 0; spin < kCallerSpins && remaining_.load() != 0; ++spin) pause();
    std::unique_lock<std::mutex> g(m_);
    caller_waiting_ = true;
    done_cv_.wait(g, [this] { return remaining_.load() == 0 && active_ == 0; });
    caller_waiting_ = false;
    f_ = nullptr;
  }

  static thread_local bool in_worker;

 private:
  static constexpr int kWorkerSpins = 1 << 12;  // a pause is ~10-60 cycles: tens of microseconds in all
  static constexpr int kCallerSpins = 1 << 14;
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // Thread `self` takes its own chunks, then the others' left-overs (ChunkedRange::take); the last chunk done
  // wakes a caller that went to sleep waiting.
  void take_chunks(size_t self) {
    in_worker = true;
    range_.take(cursors_.data(), static_cast<int64_t>(size()), static_cast<int64_t>(self),
                [this](int64_t lo, int64_t hi) {
                  if (lo < hi) (*f_)(lo, hi);
                  if (remaining_.fetch_sub(1) == 1) {
                    std::lock_guard<std::mutex> g(m_);
                    if (caller_waiting_) done_cv_.notify_all();
                  }
                });
    in_worker = false;
  }
  void work(size_t self) {
    uint64_t seen = 0;
    while (true) {
      for (int spin = 0; spin < kWorkerSpins && generation_.load() == seen && !stop_.load(); ++spin) pause();
      {
        std::unique_lock<std::mutex> g(m_);
        if (generation_.load() == seen && !stop_.load()) {
          ++sleepers_;
          cv_.wait(g, [&] { return stop_.load() || generation_.load() != seen; });
          --sleepers_;
        }
        if (stop_.load()) return;
        seen = generation_.load();
        if (f_ == nullptr) continue;  // that job is over
        ++active_;
      }
      take_chunks(self);
      std::lock_guard<std::mutex> g(m_);
      if (--active_ == 0 && caller_waiting_) done_cv_.notify_all();
    }
  }

  std::vector<ChunkSlice> cursors_;  // one per thread (the caller is 0); sized once, before the workers start
  std::vector<std::thread> workers_;
  std::mutex job_mutex_, m_;
  std::condition_variable cv_, done_cv_;
  // Job description: written under m_ before generation_ moves, read by workers that joined under m_.
  const RangeFn *f_ = nullptr;
  ChunkedRange range_;
  std::atomic<int64_t> remaining_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  int active_ = 0, sleepers_ = 0;  // under m_
  bool caller_waiting_ = false;    // under m_
};
thread_local bool Pool::in_worker = false;

// The pool lives until the plugin is unloaded, where its destructor stops and joins the workers. Not in a forked
// child: its copies of the workers are no threads, and its copy of the condition variable still counts their waits,
// so glibc's broadcast and destroy would wait forever for them; the child leaves the pool as it is.
struct PoolOwner {
  Pool *pool = new Pool;
  ~PoolOwner() {
    if (!g_forked_child.load(std::memory_order_relaxed)) delete pool;
  }
};

Pool &pool() {
  static PoolOwner owner;
  return *owner.pool;
}
}  // namespace

namespace {
// Upper bound on the threads one parallel_for uses (0 = the whole pool); see pk_cpu_set_max_threads.
std::atomic<int> g_max_threads{0};
}  // namespace

Isa cpu_isa() {
  // Asked on first use, not in a static initializer: the CPU model may not be set up yet while libraries load.
  static const Isa isa = [] {
    Isa have = Isa::generic;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      have = __builtin_cpu_supports("avx512f") ? Isa::avx512 : Isa::avx2;
    }
    Isa cap = Isa::avx512;
    if (const char *env = std::getenv("PRIMKIT_CPU_ISA")) {
      const std::string v = env;
      cap = v == "generic" ? Isa::generic : v == "avx2" ? Isa::avx2 : Isa::avx512;
    }
    return static_cast<int>(cap) < static_cast<int>(have) ? cap : have;
  }();
  return isa;
}

bool runs_serially(int64_t n, int64_t grain) {
  return n <= std::max<int64_t>(grain, 1) || Pool::in_worker || in_team_thread() ||
         g_max_threads.load(std::memory_order_relaxed) == 1 || configured_threads() == 1 ||
         g_forked_child.load(std::memory_order_relaxed);
}

int64_t cpu_threads() {
  const int64_t have = static_cast<int64_t>(configured_threads());
  if (g_forked_child.load(std::memory_order_relaxed)) return 1;
  const int cap = g_max_threads.load(std::memory_order_relaxed);
  return cap > 0 ? std::min<int64_t>(cap, have) : have;
}

void parallel_run(int64_t begin, int64_t end, int64_t grain, RangeFn f) {
  if (end <= begin) return;
  if (runs_serially(end - begin, grain)) {
    f(begin, end);
    return;
  }
  if (team_available()) {
    team_run(begin, end, std::max<int64_t>(grain, 1), static_cast<int>(cpu_threads()), f);
    return;
  }
  pool().run(begin, end, std::max<int64_t>(grain, 1), f);
}

}  // namespace pk::cpu

// --- the ABI objects --------------------------------------------------------------------------------------------

struct pk_be_context {
  const pk_host_services *host = nullptr;
  std::mutex mutex;
  std::vector<void *> allocations;  // freed in close() if the host forgot them
};

struct pk_be_stream {
  pk_be_context *ctx = nullptr;
  pk::kit::StickyError sticky;
};

struct pk_be_event {
  pk_be_stream *recorded_on = nullptr;
  pk_status status = PK_OK;
};

namespace {

using pk::kit::fail;

constexpr uint32_t kAllDtypes = (1u << PK_DTYPE_COUNT) - 1;

// PK_OK, or PK_ERROR_STREAM_FAILED once a launch on the stream failed ("cpu: stream failed earlier: ...").
pk_status sticky_check(pk_be_stream *s) {
  return s->sticky.check("cpu");
}

pk_status cpu_open(const pk_host_services *host, pk_be_context **out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: open: out is NULL");
  auto ctx = std::unique_ptr<pk_be_context>(new (std::nothrow) pk_be_context);
  if (!ctx) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cpu: open: no memory for the context");
  ctx->host = host;
  *out = ctx.release();
  return PK_OK;
}

void cpu_close(pk_be_context *ctx) {
  if (ctx == nullptr) return;
  for (void *p : ctx->allocations) std::free(p);
  std::unique_ptr<pk_be_context> owned(ctx);
}

pk_status cpu_get_info(pk_be_context *, pk_backend_info *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: get_info: out is NULL");
  return pk::kit::write_backend_info(out, "cpu", "PrimKit reference", 1);
}

pk_status cpu_device_count(pk_be_context *, uint32_t *out) {
  if (out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: device_count: out is NULL");
  *out = 1;
  return PK_OK;
}

std::string cpu_model_name() {
  std::string name = "host CPU";
  if (FILE *f = std::fopen("/proc/cpuinfo", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "model name", 10) == 0) {
        const char *colon = std::strchr(line, ':');
        if (colon) {
          name = colon + 1;
          while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.erase(0, 1);
          while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
        }
        break;
      }
    }
    std::fclose(f);
  }
  return name;
}

pk_status cpu_device_get_props(pk_be_context *, uint32_t index, pk_device_props *out) {
  if (out == nullptr || index != 0) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: no device %u", index);
  pk_device_props p;
  PK_STRUCT_INIT(p);
  std::snprintf(p.name, sizeof p.name, "%s", cpu_model_name().c_str());
  p.device_type = PK_DEVICE_CPU;
  p.device_id = 0;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  p.memory_bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  p.compute_units = static_cast<uint32_t>(pk::cpu::configured_threads());
  p.features =
      PK_DEVICE_FEATURE_UNIFIED_MEMORY | (pk::cpu::fusion_available() ? uint32_t{PK_DEVICE_FEATURE_FUSION} : 0u);
  p.float_policy = 0;  // IEEE, subnormals kept
  p.dtype_mask = kAllDtypes;
  p.max_allocation_bytes = p.memory_bytes;
  p.alignment = 64;
  pk::kit::copy_out(p, out);
  return PK_OK;
}

pk_status cpu_mem_alloc(pk_be_context *ctx, uint32_t, uint64_t bytes, void **out) {
  if (out == nullptr || bytes == 0) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: mem_alloc of 0 bytes");
  const uint64_t rounded = (bytes + 63) / 64 * 64;
  void *p = rounded >= bytes ? std::aligned_alloc(64, rounded) : nullptr;
  if (p == nullptr) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cpu: cannot allocate %llu bytes",
                static_cast<unsigned long long>(bytes));
  }
  std::lock_guard<std::mutex> g(ctx->mutex);
  try {
    ctx->allocations.push_back(p);
  } catch (...) {
    std::free(p);
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cpu: cannot track an allocation");
  }
  *out = p;
  return PK_OK;
}

pk_status cpu_mem_free(pk_be_context *ctx, uint32_t, void *ptr) {
  std::lock_guard<std::mutex> g(ctx->mutex);
  auto it = std::find(ctx->allocations.begin(), ctx->allocations.end(), ptr);
  if (it == ctx->allocations.end())
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: mem_free of an unknown pointer");
  *it = ctx->allocations.back();
  ctx->allocations.pop_back();
  std::free(ptr);
  return PK_OK;
}

pk_status cpu_copy_h2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes) std::memcpy(static_cast<char *>(dst) + dst_offset, src, bytes);
  return PK_OK;
}

pk_status cpu_copy_d2h(pk_be_stream *s, void *dst, const void *src, uint64_t src_offset, uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes) std::memcpy(dst, static_cast<const char *>(src) + src_offset, bytes);
  return PK_OK;
}

pk_status cpu_copy_d2d(pk_be_stream *s, void *dst, uint64_t dst_offset, const void *src, uint64_t src_offset,
                       uint64_t bytes) {
  if (pk_status st = sticky_check(s)) return st;
  if (bytes) std::memmove(static_cast<char *>(dst) + dst_offset, static_cast<const char *>(src) + src_offset, bytes);
  return PK_OK;
}

pk_status cpu_stream_create(pk_be_context *ctx, uint32_t, pk_be_stream **out) {
  auto s = std::unique_ptr<pk_be_stream>(new (std::nothrow) pk_be_stream);
  if (!s) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cpu: no memory for a stream");
  s->ctx = ctx;
  *out = s.release();
  return PK_OK;
}

pk_status cpu_stream_destroy(pk_be_stream *s) {
  std::unique_ptr<pk_be_stream> owned(s);
  return PK_OK;
}

pk_status cpu_stream_synchronize(pk_be_stream *s) {
  return sticky_check(s);
}
pk_status cpu_stream_query(pk_be_stream *s) {
  return sticky_check(s);
}

pk_status cpu_event_create(pk_be_context *, uint32_t, pk_be_event **out) {
  auto e = std::unique_ptr<pk_be_event>(new (std::nothrow) pk_be_event);
  if (!e) return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cpu: no memory for an event");
  *out = e.release();
  return PK_OK;
}

pk_status cpu_event_destroy(pk_be_event *e) {
  std::unique_ptr<pk_be_event> owned(e);
  return PK_OK;
}

// Work is finished when the enqueueing call returns, so recording captures only the stream's status.
pk_status cpu_event_record(pk_be_event *e, pk_be_stream *s) {
  e->recorded_on = s;
  e->status = s->sticky.status;
  return PK_OK;
}
pk_status cpu_stream_wait_event(pk_be_stream *s, pk_be_event *) {
  return sticky_check(s);
}
pk_status cpu_event_synchronize(pk_be_event *e) {
  if (e->status != PK_OK) return fail(PK_ERROR_STREAM_FAILED, 0, -1, "cpu: the recording stream had failed");
  return PK_OK;
}
pk_status cpu_event_query(pk_be_event *e) {
  return cpu_event_synchronize(e);
}

pk_status cpu_op_query(pk_be_context *, const pk_op_query *q, pk_op_support *out) {
  if (q == nullptr || out == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: op_query: NULL argument");
  pk_op_support s;
  PK_STRUCT_INIT(s);
  const pk::meta::OpInfo *op = pk::meta::find_op(q->op_id);
  const pk::cpu::Kernel *k = pk::cpu::kernels().find(q->op_id);
  const int32_t dt =
      op ? pk::cpu::key_dtype(pk::cpu::key_operand(*op), q->inputs, q->num_inputs, q->outputs, q->num_outputs) : -1;
  if (op == nullptr) {
    std::snprintf(s.reason, sizeof s.reason, "unknown op id %u", q->op_id);
  } else if (k == nullptr) {
    std::snprintf(s.reason, sizeof s.reason, "no CPU kernel for %s%s", op->name,
                  op->tier == pk::meta::Tier::composite ? " (runs as its decomposition)" : "");
  } else if (dt >= 0 && !(k->dtype_mask & (1u << dt))) {
    std::snprintf(s.reason, sizeof s.reason, "dtype %s not implemented for %s", pk::meta::dtype_name(dt), op->name);
  } else {
    s.supported = 1;
    s.native = 1;
  }
  pk::kit::copy_out(s, out);
  return PK_OK;
}

pk_status cpu_op_launch(pk_be_stream *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                        const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
  if (pk_status st = sticky_check(stream)) return st;
  const pk::cpu::Kernel *k = pk::cpu::kernels().find(op_id);
  if (k == nullptr) {
    const pk::meta::OpInfo *known = pk::meta::find_op(op_id);
    return fail(PK_UNIMPLEMENTED, op_id, -1, "cpu: no kernel for %s", known ? known->name : "an unknown op");
  }
  const pk::meta::OpInfo *op = k->op;
  const int32_t dt = pk::cpu::key_dtype(k->key_operand, inputs, num_inputs, outputs, num_outputs);
  if (dt < 0 || !(k->dtype_mask & (1u << dt))) {
    return fail(PK_UNIMPLEMENTED, op_id, 0, "cpu: %s: dtype %s not implemented", op->name, pk::meta::dtype_name(dt));
  }
  pk::cpu::Launch l{op, inputs, num_inputs, outputs, num_outputs, attrs};
  pk_status st;
  try {
    st = k->fn(l);
  } catch (const std::bad_alloc &) {
    st = fail(PK_ERROR_OUT_OF_MEMORY, op_id, -1, "cpu: %s: out of memory", op->name);
  } catch (...) {
    st = fail(PK_ERROR_INTERNAL, op_id, -1, "cpu: %s: unexpected exception", op->name);
  }
  // PK_UNIMPLEMENTED wrote nothing and leaves the stream usable; a real failure is sticky.
  return stream->sticky.record(st);
}

// The CPU backend's vendor extensions (pk_backend_get_proc_address):
//   "cpu_set_max_threads"  void (*)(int threads): caps the threads one op uses, 1 = serial, 0 = all of the pool
//                          (benchmarks measure 1 vs 2 threads in one run); also exported as pk_cpu_set_max_threads;
//   "cpu_kernel_isa"       const char *(*)(void): the kernels' instruction set, "avx512", "avx2" or "generic"
//                          (the machine's, capped by PRIMKIT_CPU_ISA).
const char *cpu_kernel_isa() noexcept {
  switch (pk::cpu::cpu_isa()) {
    case pk::cpu::Isa::avx512:
      return "avx512";
    case pk::cpu::Isa::avx2:
      return "avx2";
    default:
      return "generic";
  }
}
void cpu_set_max_threads(int threads) noexcept;
pk_proc cpu_get_proc_address(pk_be_context *, const char *name) {
  static const pk::kit::Extension kExtensions[] = {{"cpu_set_max_threads", pk::kit::as_proc(&cpu_set_max_threads)},
                                                   {"cpu_kernel_isa", pk::kit::as_proc(&cpu_kernel_isa)}};
  return pk::kit::find_extension(kExtensions, name);
}

pk_backend_api make_api() {
  pk_backend_api a = pk::kit::api_table();  // get_last_error: the kit's
  a.open = pk::kit::guarded<cpu_open>;
  a.close = pk::kit::guarded<cpu_close>;
  a.get_info = pk::kit::guarded<cpu_get_info>;
  a.device_count = pk::kit::guarded<cpu_device_count>;
  a.device_get_props = pk::kit::guarded<cpu_device_get_props>;
  a.mem_alloc = pk::kit::guarded<cpu_mem_alloc>;
  a.mem_free = pk::kit::guarded<cpu_mem_free>;
  a.copy_host_to_device = pk::kit::guarded<cpu_copy_h2d>;
  a.copy_device_to_host = pk::kit::guarded<cpu_copy_d2h>;
  a.copy_device_to_device = pk::kit::guarded<cpu_copy_d2d>;
  a.stream_create = pk::kit::guarded<cpu_stream_create>;
  a.stream_destroy = pk::kit::guarded<cpu_stream_destroy>;
  a.stream_synchronize = pk::kit::guarded<cpu_stream_synchronize>;
  a.stream_query = pk::kit::guarded<cpu_stream_query>;
  a.event_create = pk::kit::guarded<cpu_event_create>;
  a.event_destroy = pk::kit::guarded<cpu_event_destroy>;
  a.event_record = pk::kit::guarded<cpu_event_record>;
  a.stream_wait_event = pk::kit::guarded<cpu_stream_wait_event>;
  a.event_synchronize = pk::kit::guarded<cpu_event_synchronize>;
  a.event_query = pk::kit::guarded<cpu_event_query>;
  a.op_query = pk::kit::guarded<cpu_op_query>;
  a.op_launch = pk::kit::guarded<cpu_op_launch>;
  // Fused regions through the LLVM JIT when the code generator is built; otherwise the slots stay NULL.
  pk::cpu::install_fusion(a);
  a.get_proc_address = cpu_get_proc_address;
  return a;
}

const pk_backend_api k_api = make_api();

void cpu_set_max_threads(int threads) noexcept {
  pk::cpu::g_max_threads.store(threads < 0 ? 0 : threads, std::memory_order_relaxed);
}

}  // namespace

// The "cpu_set_max_threads" extension under its older exported name, for callers that dlsym it.
extern "C" PK_EXPORT void pk_cpu_set_max_threads(int threads) {
  cpu_set_max_threads(threads);
}

extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                                const pk_backend_api **out_api, char *message,
                                                size_t message_capacity) {
  return pk::kit::negotiate(&k_api, "cpu", host, chosen_version, out_api, message, message_capacity);
}
