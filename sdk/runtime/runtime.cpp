// runtime.cpp — runtime, backends, devices, memory, streams and events of libprimkit: argument checks, then
// a call through the plugin's table. Ops and graphs live in dispatch.cpp and graph.cpp.
#include <algorithm>
#include <cstring>

#include "executor.hpp"
#include "runtime_internal.hpp"

using namespace pk::rt;

namespace {

#define PK_CHECK_HANDLE(h, what)                                                                        \
  do {                                                                                                  \
    if ((h) == nullptr)                                                                                 \
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: %s is NULL", __func__, what); \
  } while (0)

#define PK_CHECK_OUT(p)                                                                                       \
  do {                                                                                                        \
    if ((p) == nullptr)                                                                                       \
      return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "%s: output pointer is NULL", __func__); \
  } while (0)

pk_status missing_slot(const Backend &b, const char *slot) {
  return set_error(PK_UNIMPLEMENTED, PK_OP_NONE, -1, 0, "backend '%s' does not implement %s", b.info.name, slot);
}

// Copies the plugin's struct into the caller's, honouring both sides' struct_size.
template <typename T>
void copy_sized(T *out, const T &in) {
  uint32_t size = out->struct_size;
  std::memcpy(out, &in, std::min<size_t>(size, sizeof(T)));
  out->struct_size = size;
}

pk_status check_range(const char *fn, const pk_buffer_s *b, uint64_t offset, uint64_t bytes) {
  if (offset > b->bytes || bytes > b->bytes - offset) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "%s: range [%llu, %llu) is outside the buffer of %llu bytes", fn,
                     static_cast<unsigned long long>(offset), static_cast<unsigned long long>(offset + bytes),
                     static_cast<unsigned long long>(b->bytes));
  }
  return PK_OK;
}

}  // namespace

namespace pk::rt {

// --- caching allocator -------------------------------------------------------------------------------------

uint64_t CachingAllocator::size_class(uint64_t bytes) {
  // Small blocks round to 256 B; larger ones to a quarter of their power of two (at most 25 % slack).
  if (bytes <= 4096) return (bytes + 255) & ~uint64_t{255};
  uint64_t p = uint64_t{1} << (63 - __builtin_clzll(bytes));
  uint64_t step = p / 4;
  return (bytes + step - 1) / step * step;
}

pk_status CachingAllocator::allocate(uint64_t bytes, void **out, uint64_t *capacity) {
  uint64_t want = size_class(bytes == 0 ? 1 : bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(want);
    // Accept a cached block up to 2x the request: beyond that we would waste more than we save.
    if (it != free_.end() && it->first <= want * 2) {
      *out = it->second;
      *capacity = it->first;
      cached_bytes_ -= it->first;
      free_.erase(it);
      return PK_OK;
    }
  }
  Backend &b = *device_.backend;
  if (b.api.mem_alloc == nullptr) return missing_slot(b, "mem_alloc");
  void *p = nullptr;
  pk_status st = b.api.mem_alloc(b.context, device_.index, want, &p);
  if (st == PK_ERROR_OUT_OF_MEMORY) {
    trim();  // give the cache back to the device and try once more
    st = b.api.mem_alloc(b.context, device_.index, want, &p);
  }
  if (st != PK_OK) return forward_backend_error(b, st, PK_OP_NONE, "mem_alloc failed");
  if (p == nullptr) {
    return set_error(PK_ERROR_PLUGIN, PK_OP_NONE, -1, 0, "backend '%s' mem_alloc returned PK_OK and NULL", b.info.name);
  }
  *out = p;
  *capacity = want;
  return PK_OK;
}

void CachingAllocator::release(void *ptr, uint64_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.emplace(capacity, ptr);
  cached_bytes_ += capacity;
}

void CachingAllocator::trim() {
  std::multimap<uint64_t, void *> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
    cached_bytes_ = 0;
  }
  Backend &b = *device_.backend;
  for (auto &kv : blocks) {
    if (b.api.mem_free) b.api.mem_free(b.context, device_.index, kv.second);
  }
}

CachingAllocator::~CachingAllocator() {
  trim();
}

pk_status create_stream(Device &device, pk_stream_s **out) {
  Backend &b = *device.backend;
  if (b.api.stream_create == nullptr) return missing_slot(b, "stream_create");
  HostPtr<pk_stream_s> s = runtime_of(device).make<pk_stream_s>();
  if (s == nullptr) return host_out_of_memory("pk_stream_create", "a stream", sizeof(pk_stream_s));
  s->device = &device;
  pk_status st = b.api.stream_create(b.context, device.index, &s->stream);
  if (st != PK_OK) return forward_backend_error(b, st, PK_OP_NONE, "stream_create failed");
  {
    std::lock_guard<std::mutex> lock(device.streams_mu);
    device.streams.push_back(s.get());
  }
  *out = s.release();  // owned by the caller until pk_stream_destroy
  return PK_OK;
}

void destroy_stream(pk_stream_s *stream) {
  if (stream == nullptr) return;
  Device &device = *stream->device;
  HostPtr<pk_stream_s> owned = runtime_of(device).adopt(stream);
  {
    std::lock_guard<std::mutex> lock(device.streams_mu);
    auto &v = device.streams;
    v.erase(std::remove(v.begin(), v.end(), stream), v.end());
  }
  Backend &b = *device.backend;
  if (b.api.stream_destroy) b.api.stream_destroy(stream->stream);  // waits for the stream's work
  release_parked_temporaries(*stream, UINT64_MAX);
}

uint64_t next_generation() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace pk::rt

bool pk_device_s::find_buffer(const void *data, uint64_t *offset, uint64_t *bytes) const {
  const auto p = reinterpret_cast<uintptr_t>(data);
  std::shared_lock<std::shared_mutex> lock(objects_mu);
  auto it = buffers.upper_bound(p);  // the first buffer starting after p
  if (it == buffers.begin()) return false;
  --it;
  const pk_buffer_s &b = *it->second;
  // On a device without unified memory `data` may be an opaque handle (a cl_mem): only the exact value names
  // a buffer there, as arithmetic on a handle means nothing.
  const uint64_t start = p - it->first;
  if (start != 0 && (!host_visible() || start >= b.capacity)) return false;
  *offset = start;
  *bytes = b.bytes;
  return true;
}

void pk_device_s::track_buffer(pk_buffer_s *b) {
  std::unique_lock<std::shared_mutex> lock(objects_mu);
  buffers[reinterpret_cast<uintptr_t>(b->data)] = b;
  // After the change, under the lock: a launch that read the previous key validated before this buffer existed
  // (see validation_key).
  validation_key.store(next_generation(), std::memory_order_release);
}

void pk_device_s::untrack_buffer(pk_buffer_s *b) {
  std::unique_lock<std::shared_mutex> lock(objects_mu);
  buffers.erase(reinterpret_cast<uintptr_t>(b->data));
  validation_key.store(next_generation(), std::memory_order_release);
}

pk_backend_s *pk_runtime_s::fallback_backend() {
  // pk_runtime_load_plugin may append to the list on another thread (reallocating it): read it under the lock.
  std::lock_guard<std::mutex> lock(mu);
  for (auto &b : backends) {
    if (fallback_name == b->info.name && !b->devices.empty()) return b.get();
  }
  return nullptr;
}

// Everything the caller still holds goes, in an order where nothing is freed while something else may use it:
// executables (their fused kernels), events, streams (destroying one waits for its work), and last the buffers
// that work read and wrote. Each destroy function untracks its object, so iterate over copies.
namespace {
void destroy_contents(pk_runtime_s *rt) {
  for (auto &b : rt->backends) {
    for (auto &d : b->devices) {
      d->composite_programs.clear();
      std::vector<pk_executable_s *> exes(d->executables.begin(), d->executables.end());
      for (pk_executable_s *e : exes) pk_executable_destroy(e);
    }
  }
  for (auto &b : rt->backends) {
    for (auto &d : b->devices) {
      std::vector<pk_event_s *> events(d->events.begin(), d->events.end());
      for (pk_event_s *e : events) pk_event_destroy(e);
    }
  }
  destroy_stream(rt->fallback_stream);
  rt->fallback_stream = nullptr;
  for (auto &b : rt->backends) {
    for (auto &d : b->devices) {
      for (pk_stream_s *s : std::vector<pk_stream_s *>(d->streams)) destroy_stream(s);
    }
  }
  for (auto &b : rt->backends) {
    for (auto &d : b->devices) {
      std::vector<pk_buffer_s *> buffers;
      for (const auto &kv : d->buffers) buffers.push_back(kv.second);
      for (pk_buffer_s *buf : buffers) pk_buffer_destroy(buf);
      d->allocator.reset();
    }
  }
  rt->backends.clear();
}
}  // namespace

extern "C" {

// --- runtime ------------------------------------------------------------------------------------------------

pk_status pk_runtime_create(const pk_runtime_options *options, pk_runtime_t *out) {
  PK_CHECK_OUT(out);
  *out = nullptr;
  if (options != nullptr && options->struct_size < offsetof(pk_runtime_options, flags) + sizeof(uint32_t)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_runtime_create: options->struct_size %u is too small", options->struct_size);
  }
  pk_runtime_options opts;
  PK_STRUCT_INIT(opts);
  if (options) std::memcpy(&opts, options, std::min<size_t>(options->struct_size, sizeof(opts)));
  if (opts.log_verbosity > PK_LOG_UP_TO(PK_LOG_DEBUG)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_runtime_create: options->log_verbosity %u is out of range (0 for the default, or "
                     "PK_LOG_UP_TO(level) up to %u)",
                     opts.log_verbosity, PK_LOG_UP_TO(PK_LOG_DEBUG));
  }
  if ((opts.host_alloc == nullptr) != (opts.host_free == nullptr)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_runtime_create: options->%s is set but %s is NULL: give both or neither",
                     opts.host_alloc ? "host_alloc" : "host_free", opts.host_alloc ? "host_free" : "host_alloc");
  }
  const HostAllocator allocator(opts.host_alloc, opts.host_free, opts.host_alloc_user);
  pk_runtime_s *rt = allocator.create<pk_runtime_s>();
  if (rt == nullptr) return host_out_of_memory(__func__, "the runtime", sizeof(pk_runtime_s));
  rt->allocator = allocator;
  rt->env = read_environment();
  uint32_t verbosity = opts.log_verbosity;
  if (verbosity == 0) {
    const int max_level = rt->env.log_level_set ? rt->env.log_max_level : PK_LOG_WARNING;
    verbosity = static_cast<uint32_t>(std::clamp(max_level + 1, 0, static_cast<int>(PK_LOG_UP_TO(PK_LOG_DEBUG))));
  }
  rt->log.configure(opts.log, opts.log_user, verbosity);
  rt->flags = opts.flags;
  if (opts.fallback_backend) rt->fallback_name = opts.fallback_backend;
  rt->fallback = std::make_unique<FallbackCounter[]>(PK_OP_ID_LIMIT);
  if (!(opts.flags & PK_RUNTIME_NO_DISCOVERY)) {
    std::lock_guard<std::mutex> lock(rt->mu);  // no other thread has the runtime yet; taken for uniformity
    LogScope scope(rt->log);
    discover_plugins(*rt, opts.plugin_path);
  }
  *out = rt;
  clear_error();
  return PK_OK;
}

void pk_runtime_destroy(pk_runtime_t rt) {
  if (rt == nullptr) return;
  {
    // What plugins log while they release their objects and close goes to this runtime's log.
    LogScope scope(rt->log);
    destroy_contents(rt);
  }
  const HostAllocator allocator = rt->allocator;  // the runtime's block outlives the runtime's copy of it
  allocator.destroy(rt);
}

pk_status pk_runtime_load_plugin(pk_runtime_t rt, const char *path, pk_backend_t *out) {
  PK_CHECK_HANDLE(rt, "runtime");
  if (path == nullptr || path[0] == '\0') {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_runtime_load_plugin: path is empty");
  }
  std::lock_guard<std::mutex> lock(rt->mu);
  LogScope scope(rt->log);
  Backend *b = nullptr;
  pk_status st = load_plugin(*rt, path, &b);
  if (st != PK_OK) return st;
  if (out) *out = b;
  return PK_OK;
}

const char *pk_runtime_load_errors(pk_runtime_t rt) {
  return rt ? rt->load_errors.c_str() : "";
}

pk_status pk_runtime_backend_count(pk_runtime_t rt, uint32_t *out) {
  PK_CHECK_HANDLE(rt, "runtime");
  PK_CHECK_OUT(out);
  std::lock_guard<std::mutex> lock(rt->mu);
  *out = static_cast<uint32_t>(rt->backends.size());
  return PK_OK;
}

pk_status pk_runtime_backend(pk_runtime_t rt, uint32_t index, pk_backend_t *out) {
  PK_CHECK_HANDLE(rt, "runtime");
  PK_CHECK_OUT(out);
  std::lock_guard<std::mutex> lock(rt->mu);
  if (index >= rt->backends.size()) {
    return set_error(PK_ERROR_NOT_FOUND, PK_OP_NONE, -1, 0, "pk_runtime_backend: index %u >= %zu backends", index,
                     rt->backends.size());
  }
  *out = rt->backends[index].get();
  return PK_OK;
}

pk_status pk_runtime_find_backend(pk_runtime_t rt, const char *name, pk_backend_t *out) {
  PK_CHECK_HANDLE(rt, "runtime");
  PK_CHECK_HANDLE(name, "name");
  PK_CHECK_OUT(out);
  std::lock_guard<std::mutex> lock(rt->mu);
  for (auto &b : rt->backends) {
    if (std::strcmp(b->info.name, name) == 0) {
      *out = b.get();
      return PK_OK;
    }
  }
  return set_error(PK_ERROR_NOT_FOUND, PK_OP_NONE, -1, 0, "no backend named '%s' is loaded", name);
}

// --- backends and devices -----------------------------------------------------------------------------------

pk_status pk_backend_get_info(pk_backend_t b, pk_backend_info *out) {
  PK_CHECK_HANDLE(b, "backend");
  PK_CHECK_OUT(out);
  copy_sized(out, b->info);
  return PK_OK;
}

pk_proc pk_backend_get_proc_address(pk_backend_t b, const char *name) {
  if (b == nullptr) {
    set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, 0, 0, "pk_backend_get_proc_address: backend is NULL");
    return nullptr;
  }
  if (name == nullptr || name[0] == '\0') {
    set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, 1, 0, "pk_backend_get_proc_address: name is %s",
              name == nullptr ? "NULL" : "empty");
    return nullptr;
  }
  if (b->api.get_proc_address == nullptr) {
    set_error(PK_UNIMPLEMENTED, PK_OP_NONE, 1, 0, "backend '%s' offers no extensions (no get_proc_address slot)",
              b->info.name);
    return nullptr;
  }
  pk_proc fn = b->api.get_proc_address(b->context, name);
  if (fn == nullptr) {
    set_error(PK_UNIMPLEMENTED, PK_OP_NONE, 1, 0, "backend '%s' has no extension named '%.200s'", b->info.name, name);
    return nullptr;
  }
  clear_error();
  return fn;
}

uint32_t pk_backend_abi_version(pk_backend_t b) {
  return b ? b->abi_version : 0;
}
const char *pk_backend_path(pk_backend_t b) {
  return b ? b->path.c_str() : "";
}

pk_status pk_backend_device_count(pk_backend_t b, uint32_t *out) {
  PK_CHECK_HANDLE(b, "backend");
  PK_CHECK_OUT(out);
  *out = static_cast<uint32_t>(b->devices.size());
  if (b->devices.empty()) {
    set_error(PK_ERROR_NOT_FOUND, PK_OP_NONE, -1, 0, "%s", b->no_device_reason.c_str());
  }
  return PK_OK;
}

pk_status pk_backend_device(pk_backend_t b, uint32_t index, pk_device_t *out) {
  PK_CHECK_HANDLE(b, "backend");
  PK_CHECK_OUT(out);
  if (index >= b->devices.size()) {
    return set_error(PK_ERROR_NOT_FOUND, PK_OP_NONE, -1, 0, "backend '%s' has %zu devices, no device %u", b->info.name,
                     b->devices.size(), index);
  }
  *out = b->devices[index].get();
  return PK_OK;
}

pk_status pk_device_get_props(pk_device_t d, pk_device_props *out) {
  PK_CHECK_HANDLE(d, "device");
  PK_CHECK_OUT(out);
  copy_sized(out, d->props);
  return PK_OK;
}

pk_backend_t pk_device_backend(pk_device_t d) {
  return d ? d->backend : nullptr;
}

// --- memory -------------------------------------------------------------------------------------------------

pk_status pk_buffer_create(pk_device_t d, uint64_t bytes, pk_buffer_t *out) {
  PK_CHECK_HANDLE(d, "device");
  PK_CHECK_OUT(out);
  *out = nullptr;
  if (d->props.max_allocation_bytes != 0 && bytes > d->props.max_allocation_bytes) {
    return set_error(PK_ERROR_OUT_OF_MEMORY, PK_OP_NONE, -1, 0,
                     "pk_buffer_create: %llu bytes exceed the device's largest allocation (%llu)",
                     static_cast<unsigned long long>(bytes),
                     static_cast<unsigned long long>(d->props.max_allocation_bytes));
  }
  HostPtr<pk_buffer_s> b = runtime_of(*d).make<pk_buffer_s>();
  if (b == nullptr) return host_out_of_memory(__func__, "a buffer handle", sizeof(pk_buffer_s));
  b->device = d;
  b->bytes = bytes;
  pk_status st = d->allocator->allocate(bytes, &b->data, &b->capacity);
  if (st != PK_OK) return st;
  d->track_buffer(b.get());
  *out = b.release();
  return PK_OK;
}

void pk_buffer_destroy(pk_buffer_t b) {
  if (b == nullptr) return;
  Device &d = *b->device;
  HostPtr<pk_buffer_s> owned = runtime_of(d).adopt(b);
  d.untrack_buffer(b);
  // Memory returns to the cache and may be reused on another stream: on an asynchronous device wait for the
  // work already queued (the CPU and other synchronous devices have none left).
  if (d.async() && d.backend->api.stream_synchronize) {  // a NULL slot is never called
    std::lock_guard<std::mutex> lock(d.streams_mu);
    for (pk_stream_s *s : d.streams) {
      const uint64_t through = parked_through(*s);
      if (d.backend->api.stream_synchronize(s->stream) == PK_OK) release_parked_temporaries(*s, through);
    }
  }
  d.allocator->release(b->data, b->capacity);
}

uint64_t pk_buffer_size(pk_buffer_t b) {
  return b ? b->bytes : 0;
}
void *pk_buffer_data(pk_buffer_t b) {
  return b ? b->data : nullptr;
}
pk_device_t pk_buffer_device(pk_buffer_t b) {
  return b ? b->device : nullptr;
}

pk_status pk_buffer_tensor(pk_buffer_t b, pk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *strides,
                           uint64_t byte_offset, pk_tensor *out) {
  PK_CHECK_HANDLE(b, "buffer");
  PK_CHECK_OUT(out);
  if (ndim < 0 || ndim > PK_MAX_RANK || (ndim > 0 && shape == nullptr)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_buffer_tensor: ndim %d needs 0..%d and a shape array", ndim, PK_MAX_RANK);
  }
  PK_STRUCT_INIT(*out);
  out->data = b->data;
  out->byte_offset = byte_offset;
  out->storage_bytes = b->bytes;
  out->device_type = b->device->props.device_type;
  out->device_id = static_cast<int32_t>(b->device->index);
  out->dtype = dtype;
  out->ndim = ndim;
  out->shape = shape;
  out->strides = strides;
  if (b->device->host_visible()) out->flags |= PK_TENSOR_FLAG_HOST_VISIBLE;
  return PK_OK;
}

pk_status pk_copy_host_to_buffer(pk_stream_t s, pk_buffer_t dst, uint64_t dst_offset, const void *src, uint64_t bytes) {
  PK_CHECK_HANDLE(s, "stream");
  PK_CHECK_HANDLE(dst, "dst buffer");
  if (bytes > 0) PK_CHECK_HANDLE(src, "src");
  if (dst->device != s->device) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_copy_host_to_buffer: the buffer is on another device than the stream");
  }
  if (pk_status st = check_range(__func__, dst, dst_offset, bytes)) return st;
  if (bytes == 0) return PK_OK;
  Backend &b = *s->device->backend;
  if (!b.api.copy_host_to_device) return missing_slot(b, "copy_host_to_device");
  pk_status st = b.api.copy_host_to_device(s->stream, dst->data, dst_offset, src, bytes);
  return st == PK_OK ? PK_OK : forward_backend_error(b, st, PK_OP_NONE, "copy_host_to_device failed");
}

pk_status pk_copy_buffer_to_host(pk_stream_t s, void *dst, pk_buffer_t src, uint64_t src_offset, uint64_t bytes) {
  PK_CHECK_HANDLE(s, "stream");
  PK_CHECK_HANDLE(src, "src buffer");
  if (bytes > 0) PK_CHECK_HANDLE(dst, "dst");
  if (src->device != s->device) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_copy_buffer_to_host: the buffer is on another device than the stream");
  }
  if (pk_status st = check_range(__func__, src, src_offset, bytes)) return st;
  if (bytes == 0) return PK_OK;
  Backend &b = *s->device->backend;
  if (!b.api.copy_device_to_host) return missing_slot(b, "copy_device_to_host");
  pk_status st = b.api.copy_device_to_host(s->stream, dst, src->data, src_offset, bytes);
  return st == PK_OK ? PK_OK : forward_backend_error(b, st, PK_OP_NONE, "copy_device_to_host failed");
}

pk_status pk_copy_buffer_to_buffer(pk_stream_t s, pk_buffer_t dst, uint64_t dst_offset, pk_buffer_t src,
                                   uint64_t src_offset, uint64_t bytes) {
  PK_CHECK_HANDLE(s, "stream");
  PK_CHECK_HANDLE(dst, "dst buffer");
  PK_CHECK_HANDLE(src, "src buffer");
  if (dst->device != s->device || src->device != s->device) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_copy_buffer_to_buffer: both buffers must be on the stream's device");
  }
  if (pk_status st = check_range(__func__, dst, dst_offset, bytes)) return st;
  if (pk_status st = check_range(__func__, src, src_offset, bytes)) return st;
  if (dst == src && dst_offset < src_offset + bytes && src_offset < dst_offset + bytes) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_copy_buffer_to_buffer: regions overlap");
  }
  if (bytes == 0) return PK_OK;
  Backend &b = *s->device->backend;
  if (!b.api.copy_device_to_device) return missing_slot(b, "copy_device_to_device");
  pk_status st = b.api.copy_device_to_device(s->stream, dst->data, dst_offset, src->data, src_offset, bytes);
  return st == PK_OK ? PK_OK : forward_backend_error(b, st, PK_OP_NONE, "copy_device_to_device failed");
}

// --- streams and events -------------------------------------------------------------------------------------

pk_status pk_stream_create(pk_device_t d, pk_stream_t *out) {
  PK_CHECK_HANDLE(d, "device");
  PK_CHECK_OUT(out);
  *out = nullptr;
  return create_stream(*d, out);
}

void pk_stream_destroy(pk_stream_t s) {
  destroy_stream(s);
}

pk_status pk_stream_synchronize(pk_stream_t s) {
  PK_CHECK_HANDLE(s, "stream");
  Backend &b = *s->device->backend;
  if (!b.api.stream_synchronize) return missing_slot(b, "stream_synchronize");
  const uint64_t through = parked_through(*s);  // read first: blocks parked while we wait may still be in use
  pk_status st = b.api.stream_synchronize(s->stream);
  if (st == PK_OK) release_parked_temporaries(*s, through);  // their work is done: other streams may take them
  return st == PK_OK ? PK_OK : forward_backend_error(b, st, PK_OP_NONE, "stream failed");
}

pk_status pk_stream_query(pk_stream_t s) {
  PK_CHECK_HANDLE(s, "stream");
  Backend &b = *s->device->backend;
  if (!b.api.stream_query) return missing_slot(b, "stream_query");
  pk_status st = b.api.stream_query(s->stream);
  return (st == PK_OK || st == PK_NOT_READY) ? st : forward_backend_error(b, st, PK_OP_NONE, "stream failed");
}

pk_status pk_event_create(pk_device_t d, pk_event_t *out) {
  PK_CHECK_HANDLE(d, "device");
  PK_CHECK_OUT(out);
  *out = nullptr;
  Backend &b = *d->backend;
  if (!b.api.event_create) return missing_slot(b, "event_create");
  HostPtr<pk_event_s> e = runtime_of(*d).make<pk_event_s>();
  if (e == nullptr) return host_out_of_memory(__func__, "an event", sizeof(pk_event_s));
  e->device = d;
  pk_status st = b.api.event_create(b.context, d->index, &e->event);
  if (st != PK_OK) return forward_backend_error(b, st, PK_OP_NONE, "event_create failed");
  {
    std::unique_lock<std::shared_mutex> lock(d->objects_mu);
    d->events.insert(e.get());
  }
  *out = e.release();
  return PK_OK;
}

void pk_event_destroy(pk_event_t e) {
  if (e == nullptr) return;
  HostPtr<pk_event_s> owned = runtime_of(*e->device).adopt(e);
  {
    std::unique_lock<std::shared_mutex> lock(e->device->objects_mu);
    e->device->events.erase(e);
  }
  Backend &b = *e->device->backend;
  if (b.api.event_destroy) b.api.event_destroy(e->event);
}

pk_status pk_event_record(pk_event_t e, pk_stream_t s) {
  PK_CHECK_HANDLE(e, "event");
  PK_CHECK_HANDLE(s, "stream");
  if (e->device->backend != s->device->backend) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_event_record: the event and the stream belong to different backends");
  }
  Backend &b = *s->device->backend;
  if (!b.api.event_record) return missing_slot(b, "event_record");
  pk_status st = b.api.event_record(e->event, s->stream);
  return st == PK_OK ? PK_OK : forward_backend_error(b, st, PK_OP_NONE, "event_record failed");
}

pk_status pk_stream_wait_event(pk_stream_t s, pk_event_t e) {
  PK_CHECK_HANDLE(e, "event");
  PK_CHECK_HANDLE(s, "stream");
  Backend &b = *s->device->backend;
  if (e->device->backend != &b) {
    // Across backends the only portable wait is on the host.
    return pk_event_synchronize(e);
  }
  if (!b.api.stream_wait_event) return missing_slot(b, "stream_wait_event");
  pk_status st = b.api.stream_wait_event(s->stream, e->event);
  return st == PK_OK ? PK_OK : forward_backend_error(b, st, PK_OP_NONE, "stream_wait_event failed");
}

pk_status pk_event_synchronize(pk_event_t e) {
  PK_CHECK_HANDLE(e, "event");
  Backend &b = *e->device->backend;
  if (!b.api.event_synchronize) return missing_slot(b, "event_synchronize");
  pk_status st = b.api.event_synchronize(e->event);
  return st == PK_OK ? PK_OK : forward_backend_error(b, st, PK_OP_NONE, "event failed");
}

pk_status pk_event_query(pk_event_t e) {
  PK_CHECK_HANDLE(e, "event");
  Backend &b = *e->device->backend;
  if (!b.api.event_query) return missing_slot(b, "event_query");
  pk_status st = b.api.event_query(e->event);
  return (st == PK_OK || st == PK_NOT_READY) ? st : forward_backend_error(b, st, PK_OP_NONE, "event failed");
}

}  // extern "C"
