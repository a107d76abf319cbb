// runtime_internal.hpp — the objects behind libprimkit's opaque handles. Internal to sdk/runtime.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "environment.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

struct pk_runtime_s;
struct pk_backend_s;
struct pk_device_s;
struct pk_stream_s;
struct pk_event_s;
struct pk_buffer_s;
struct pk_executable_s;

namespace pk::rt {
class Program;
using Runtime = pk_runtime_s;
using Backend = pk_backend_s;
using Device = pk_device_s;

// --- errors --------------------------------------------------------------------------------------------------

// Sets the calling thread's last error and returns `status`, so `return set_error(...)` reads naturally.
pk_status set_error(pk_status status, uint32_t op_id, int32_t arg_index, int32_t vendor_code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
pk_status set_error_from_diag(const pk::meta::Diag &diag, uint32_t op_id);
// Copies a backend's error (from its get_last_error slot) into the thread's last error, prefixed with the
// backend's name (or `who`, e.g. the plugin's path before its name is known), after a slot returned `status`.
pk_status forward_backend_error(const Backend &backend, pk_status status, uint32_t op_id, const char *what,
                                const char *who = nullptr);
void clear_error();

// --- validation (dispatch.cpp) ---------------------------------------------------------------------------------
// Every entry point that runs kernels on a caller's tensors (pk_launch, pk_executable_run, and so the graph
// executor's single-op steps) checks them with pk::meta::validate_tensors (descriptors, storage, placement,
// outputs' layout, aliasing) and this device check on each tensor: on the device that runs the kernel, no host
// pointer on a device without unified memory, a view on a runtime-owned buffer inside the buffer's real size.
class DeviceCheck final : public pk::meta::TensorCheck {
 public:
  explicit DeviceCheck(const pk_device_s &dev) : dev_(dev) {}
  bool check(const pk_tensor &t, const pk::meta::TensorRef &ref, int32_t arg, pk::meta::Diag &diag) const override;

 private:
  const pk_device_s &dev_;
};
// pk_launch after the stream and op id are known good: validates (or finds this exact launch in the thread's
// memo) and dispatches.
pk_status validate_and_launch(pk_stream_s *stream, uint32_t op_id, const pk_tensor *inputs, uint32_t num_inputs,
                              const pk_tensor *outputs, uint32_t num_outputs, const void *attrs);
// Dispatch of a launch that already passed validation (attributes normalized): the stream's backend, else the
// composite's decomposition, else the fallback backend.
pk_status launch_validated(pk_stream_s *stream, const pk::meta::OpInfo &op, const pk_tensor *inputs,
                           uint32_t num_inputs, const pk_tensor *outputs, uint32_t num_outputs, const void *attrs);

// --- host allocator and log (pk_runtime_options since ABI 1.2) -----------------------------------------------

// The runtime's own host objects come from here: the caller's pk_host_alloc_fn / pk_host_free_fn, or the C++
// heap. Copyable: a copy frees what the original allocated.
class HostAllocator {
 public:
  HostAllocator() = default;
  HostAllocator(pk_host_alloc_fn alloc, pk_host_free_fn free, void *user) : alloc_(alloc), free_(free), user_(user) {}
  void *allocate(size_t bytes, size_t alignment) const {
    if (alloc_ != nullptr) return alloc_(user_, bytes, alignment);
    return ::operator new(bytes, std::align_val_t(alignment), std::nothrow);
  }
  void release(void *block, size_t bytes, size_t alignment) const {
    if (block == nullptr) return;
    if (free_ != nullptr)
      free_(user_, block, bytes, alignment);
    else
      ::operator delete(block, std::align_val_t(alignment));
  }
  // A T constructed in a block of this allocator; nullptr when the allocator has no memory.
  template <typename T, typename... Args>
  T *create(Args &&...args) const {
    void *block = allocate(sizeof(T), alignof(T));
    if (block == nullptr) return nullptr;
    try {
      return new (block) T(std::forward<Args>(args)...);
    } catch (...) {
      release(block, sizeof(T), alignof(T));
      throw;
    }
  }
  template <typename T>
  void destroy(T *object) const {
    if (object == nullptr) return;
    object->~T();
    release(object, sizeof(T), alignof(T));
  }

 private:
  pk_host_alloc_fn alloc_ = nullptr;
  pk_host_free_fn free_ = nullptr;
  void *user_ = nullptr;
};

// Owns an object made by HostAllocator::create; the allocator (the runtime's) outlives it.
template <typename T>
struct HostDelete {
  const HostAllocator *allocator = nullptr;
  void operator()(T *object) const { allocator->destroy(object); }
};
template <typename T>
using HostPtr = std::unique_ptr<T, HostDelete<T>>;

// Where a runtime's diagnostics go: the caller's pk_log_fn or stderr, filtered by level.
class Log {
 public:
  // Set once, by pk_runtime_create, before any other thread sees the runtime.
  void configure(pk_log_fn sink, void *user, uint32_t verbosity) {
    sink_ = sink;
    user_ = user;
    verbosity_ = verbosity;
  }
  bool enabled(int32_t level) const { return level >= 0 && static_cast<uint32_t>(level) < verbosity_; }
  // One line (without newline), if its level passes; lines of one runtime never overlap.
  void write(int32_t level, const char *message) const;
  void write(int32_t level, const std::string &message) const { write(level, message.c_str()); }

 private:
  pk_log_fn sink_ = nullptr;
  void *user_ = nullptr;
  uint32_t verbosity_ = PK_LOG_UP_TO(PK_LOG_WARNING);
  mutable std::mutex mu_;
};

// The default sink: "primkit [warning] message" on stderr.
void write_stderr_line(int32_t level, const char *message);

// The log of the runtime calling into a plugin on this thread (see LogScope), or null.
const Log *plugin_log_of_this_thread();

// While alive, lines that plugins log through pk_host_services.log on this thread go to `log` (that slot has no
// context argument, so the runtime marks the calls it makes into plugins). Nests.
class LogScope {
 public:
  explicit LogScope(const Log &log);
  ~LogScope();
  LogScope(const LogScope &) = delete;
  LogScope &operator=(const LogScope &) = delete;

 private:
  const Log *previous_;
};

// --- caching allocator -----------------------------------------------------------------------------------------

// Keeps freed device allocations in size classes so that steady-state allocation neither calls the backend
// nor touches fresh pages (a first touch costs ~15 µs per 4 KiB page). Thread-safe.
class CachingAllocator {
 public:
  explicit CachingAllocator(Device &device) : device_(device) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;
  // Returns a block of at least `bytes`; *capacity receives its real size.
  pk_status allocate(uint64_t bytes, void **out, uint64_t *capacity);
  void release(void *ptr, uint64_t capacity);
  // Frees every cached block through the backend.
  void trim();
  static uint64_t size_class(uint64_t bytes);

 private:
  Device &device_;
  std::mutex mu_;
  std::multimap<uint64_t, void *> free_;  // capacity -> block
  uint64_t cached_bytes_ = 0;
};

// --- plugin objects --------------------------------------------------------------------------------------------

// A process-wide counter: every value it returns is new for the life of the process (64 bits never wrap), so
// it can name a device, or a state of a device, where an address could be reused after a free.
uint64_t next_generation();
}  // namespace pk::rt

struct pk_device_s {
  pk::rt::Backend *backend = nullptr;
  uint32_t index = 0;
  pk_device_props props{};
  pk::rt::HostPtr<pk::rt::CachingAllocator> allocator;
  std::mutex streams_mu;
  std::vector<pk_stream_s *> streams;  // live streams, synchronized before memory is reused across streams

  // What the caller still holds on this device, so that pk_runtime_destroy can free it as primkit.h promises,
  // and so that a view on a buffer is checked against the buffer's real size (see find_buffer).
  mutable std::shared_mutex objects_mu;
  std::map<uintptr_t, pk_buffer_s *> buffers;  // by data pointer (ordered: interior pointers on host memory)
  std::unordered_set<pk_event_s *> events;
  std::unordered_set<pk_executable_s *> executables;
  // Programs of the composite launches the backend does not run natively (executor.hpp), by op, input types and
  // attributes.
  std::mutex programs_mu;
  std::unordered_map<std::string, std::shared_ptr<const pk::rt::Program>> composite_programs;
  // Names this device together with the set of its live buffers: a new generation at load and after every
  // buffer create or destroy. A verdict remembered under one key (dispatch.cpp's LaunchMemo) depended on
  // nothing that has changed since, which the device's address cannot promise once a runtime is destroyed
  // and a new device lands at the same address.
  std::atomic<uint64_t> validation_key{0};

  // If `data` lies in a live buffer of this device (the exact pointer; on a host-visible device also a
  // pointer inside one), sets *offset to data's distance from the buffer's start and *bytes to the buffer's
  // size, and returns true. Memory the runtime did not allocate returns false.
  bool find_buffer(const void *data, uint64_t *offset, uint64_t *bytes) const;
  void track_buffer(pk_buffer_s *b);
  void untrack_buffer(pk_buffer_s *b);

  bool host_visible() const { return (props.features & PK_DEVICE_FEATURE_UNIFIED_MEMORY) != 0; }
  bool async() const { return (props.features & PK_DEVICE_FEATURE_ASYNC) != 0; }
};

struct pk_backend_s {
  pk::rt::Runtime *runtime = nullptr;
  void *library = nullptr;  // dlopen handle
  std::string path;
  pk_backend_api api{};  // this build's full table: slots the plugin's table lacks are NULL
  uint32_t abi_version = 0;
  pk_be_context *context = nullptr;
  pk_backend_info info{};
  std::vector<pk::rt::HostPtr<pk_device_s>> devices;
  std::string no_device_reason;  // the backend's explanation of a zero device count, taken at load
  ~pk_backend_s();
};

namespace pk::rt {
struct FallbackCounter {
  std::atomic<uint64_t> launches{0};
  std::atomic<uint64_t> bytes_copied{0};
};

}  // namespace pk::rt

struct pk_runtime_s {
  // First, so that it outlives every member made with it; the runtime object itself comes from it too.
  pk::rt::HostAllocator allocator;
  pk::rt::Environment env;  // read once, by pk_runtime_create
  pk::rt::Log log;
  uint32_t flags = 0;
  std::string fallback_name = "cpu";
  std::mutex mu;  // guards backends and load_errors: every reader of the list takes it (loads append)
  std::vector<pk::rt::HostPtr<pk_backend_s>> backends;
  std::string load_errors;
  std::unique_ptr<pk::rt::FallbackCounter[]> fallback;  // PK_OP_ID_LIMIT entries
  bool strict() const { return (flags & PK_RUNTIME_STRICT) != 0; }
  // An object from the runtime's host allocator; null when it has no memory.
  template <typename T, typename... Args>
  pk::rt::HostPtr<T> make(Args &&...args) {
    return pk::rt::HostPtr<T>(allocator.create<T>(std::forward<Args>(args)...), pk::rt::HostDelete<T>{&allocator});
  }
  template <typename T>
  pk::rt::HostPtr<T> adopt(T *object) {
    return pk::rt::HostPtr<T>(object, pk::rt::HostDelete<T>{&allocator});
  }
  pk_backend_s *fallback_backend();  // the loaded backend named fallback_name, or nullptr
  // Streams the runtime creates on the fallback backend's device 0 for fallback launches, one per thread.
  std::mutex fallback_mu;
  pk_stream_s *fallback_stream = nullptr;
};

// The remaining opaque handles of primkit.h.
struct pk_stream_s {
  pk::rt::Device *device = nullptr;
  pk_be_stream *stream = nullptr;
  // Temporaries of work queued on this stream (executor.hpp): its own later work may reuse them, other streams
  // only once that work is done. Each block keeps the number of the park that put it here, so that a synchronize
  // returns only the blocks parked before it began (another thread may park while it waits).
  struct Parked {
    void *data;
    uint64_t capacity;
    uint64_t park;
  };
  std::mutex parked_mu;
  std::vector<Parked> parked;
  uint64_t parks = 0;  // parks so far
};
struct pk_event_s {
  pk::rt::Device *device = nullptr;
  pk_be_event *event = nullptr;
};
struct pk_buffer_s {
  pk::rt::Device *device = nullptr;
  void *data = nullptr;
  uint64_t bytes = 0;     // what the caller asked for (bounds checks use this)
  uint64_t capacity = 0;  // what the allocator handed out
};

namespace pk::rt {
inline Runtime &runtime_of(const Device &device) {
  return *device.backend->runtime;
}
// PK_ERROR_OUT_OF_MEMORY naming what the runtime's host allocator could not give.
pk_status host_out_of_memory(const char *function, const char *what, size_t bytes);
pk_status load_plugin(Runtime &rt, const std::string &path, Backend **out);
void discover_plugins(Runtime &rt, const char *extra_path);
// The install's (or build tree's) plugin folder, next to libprimkit: backends, the probe and collectives engines.
std::string install_plugin_dir();
pk_status create_stream(Device &device, pk_stream_s **out);
void destroy_stream(pk_stream_s *stream);
}  // namespace pk::rt
