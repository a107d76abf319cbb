// primkit.hpp — header-only C++17 wrapper over the host side of primkit.h: RAII handles and exceptions.
// Nothing here crosses the plugin boundary: it calls only the C functions of libprimkit, so it adds no ABI.
//
//   pk::Runtime rt;                                   // discovers plugins
//   pk::Device dev = rt.backend("cpu").device(0);
//   pk::Stream s(dev);
//   pk::Buffer a(dev, 1024), b(dev, 1024), c(dev, 1024);
//   pk::launch(s, PK_OP_ADD, {ta, tb}, {tc});         // throws pk::Error with op, argument and reason
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "primkit/primkit.h"

namespace pk {

// A failed call: the status and the runtime's message (which names the op, the argument and the reason).
class Error : public std::runtime_error {
 public:
  explicit Error(const pk_error_info &e)
      : std::runtime_error(std::string(pk_status_name(e.status)) + ": " + e.message),
        status_(e.status),
        op_id_(e.op_id),
        arg_index_(e.arg_index),
        vendor_code_(e.vendor_code) {}
  pk_status status() const { return status_; }
  uint32_t op_id() const { return op_id_; }
  int32_t arg_index() const { return arg_index_; }
  int32_t vendor_code() const { return vendor_code_; }

 private:
  pk_status status_;
  uint32_t op_id_;
  int32_t arg_index_;
  int32_t vendor_code_;
};

// Throws pk::Error for any status but PK_OK (and PK_NOT_READY where `not_ready_ok`).
inline void check(pk_status st, bool not_ready_ok = false) {
  if (st == PK_OK || (not_ready_ok && st == PK_NOT_READY)) return;
  pk_error_info e;
  e.struct_size = sizeof(e);
  pk_get_last_error(&e);
  if (e.status != st) e.status = st;
  throw Error(e);
}

namespace detail {
// Move-only owner of a C handle with its destroy function.
template <typename H, void (*Destroy)(H)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(H h) : h_(h) {}
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  Handle(Handle &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle &operator=(Handle &&o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ~Handle() { reset(); }
  void reset() {
    if (h_) Destroy(h_);
    h_ = nullptr;
  }
  H get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 protected:
  H h_ = nullptr;
};
}  // namespace detail

// A device of a loaded backend (owned by the runtime: a cheap, copyable reference).
class Device {
 public:
  explicit Device(pk_device_t d = nullptr) : d_(d) {}
  pk_device_t get() const { return d_; }
  pk_device_props props() const {
    pk_device_props p;
    PK_STRUCT_INIT(p);
    check(pk_device_get_props(d_, &p));
    return p;
  }
  pk_op_support query(const pk_op_query &q) const {
    pk_op_support s;
    PK_STRUCT_INIT(s);
    check(pk_device_query_op(d_, &q, &s));
    return s;
  }

 private:
  pk_device_t d_;
};

// A loaded backend (owned by the runtime).
class Backend {
 public:
  explicit Backend(pk_backend_t b = nullptr) : b_(b) {}
  pk_backend_t get() const { return b_; }
  pk_backend_info info() const {
    pk_backend_info i;
    PK_STRUCT_INIT(i);
    check(pk_backend_get_info(b_, &i));
    return i;
  }
  uint32_t device_count() const {
    uint32_t n = 0;
    check(pk_backend_device_count(b_, &n));
    return n;
  }
  Device device(uint32_t index) const {
    pk_device_t d = nullptr;
    check(pk_backend_device(b_, index, &d));
    return Device(d);
  }
  uint32_t abi_version() const { return pk_backend_abi_version(b_); }

 private:
  pk_backend_t b_;
};

class Runtime : public detail::Handle<pk_runtime_t, pk_runtime_destroy> {
 public:
  explicit Runtime(uint32_t flags = 0, const char *plugin_path = nullptr) {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = flags;
    o.plugin_path = plugin_path;
    check(pk_runtime_create(&o, &h_));
  }
  Backend load(const std::string &path) {
    pk_backend_t b = nullptr;
    check(pk_runtime_load_plugin(h_, path.c_str(), &b));
    return Backend(b);
  }
  Backend backend(const std::string &name) const {
    pk_backend_t b = nullptr;
    check(pk_runtime_find_backend(h_, name.c_str(), &b));
    return Backend(b);
  }
  std::vector<Backend> backends() const {
    uint32_t n = 0;
    check(pk_runtime_backend_count(h_, &n));
    std::vector<Backend> out;
    for (uint32_t i = 0; i < n; ++i) {
      pk_backend_t b = nullptr;
      check(pk_runtime_backend(h_, i, &b));
      out.emplace_back(b);
    }
    return out;
  }
  std::string load_errors() const { return pk_runtime_load_errors(h_); }
  std::string fallback_report() const { return pk_runtime_fallback_report(h_); }
};

class Stream : public detail::Handle<pk_stream_t, pk_stream_destroy> {
 public:
  explicit Stream(const Device &d) { check(pk_stream_create(d.get(), &h_)); }
  void synchronize() { check(pk_stream_synchronize(h_)); }
  bool done() { return pk_stream_query(h_) == PK_OK; }
};

class Event : public detail::Handle<pk_event_t, pk_event_destroy> {
 public:
  explicit Event(const Device &d) { check(pk_event_create(d.get(), &h_)); }
  void record(Stream &s) { check(pk_event_record(h_, s.get())); }
  void synchronize() { check(pk_event_synchronize(h_)); }
};

class Buffer : public detail::Handle<pk_buffer_t, pk_buffer_destroy> {
 public:
  Buffer(const Device &d, uint64_t bytes) { check(pk_buffer_create(d.get(), bytes, &h_)); }
  uint64_t size() const { return pk_buffer_size(h_); }
  void upload(Stream &s, const void *src, uint64_t bytes, uint64_t offset = 0) {
    check(pk_copy_host_to_buffer(s.get(), h_, offset, src, bytes));
  }
  void download(Stream &s, void *dst, uint64_t bytes, uint64_t offset = 0) {
    check(pk_copy_buffer_to_host(s.get(), dst, h_, offset, bytes));
  }
  // A descriptor over the buffer; `shape` (and `strides`) must outlive its uses.
  pk_tensor tensor(pk_dtype dtype, const std::vector<int64_t> &shape, const int64_t *strides = nullptr,
                   uint64_t byte_offset = 0) const {
    pk_tensor t;
    check(pk_buffer_tensor(h_, dtype, static_cast<int32_t>(shape.size()), shape.data(), strides, byte_offset, &t));
    return t;
  }
};

// Validated launch (see pk_launch): `attrs` is the op's pk_attrs_* struct or nullptr.
inline void launch(Stream &s, uint32_t op_id, std::initializer_list<pk_tensor> inputs,
                   std::initializer_list<pk_tensor> outputs, const void *attrs = nullptr) {
  std::vector<pk_tensor> in(inputs), out(outputs);
  check(pk_launch(s.get(), op_id, in.data(), static_cast<uint32_t>(in.size()), out.data(),
                  static_cast<uint32_t>(out.size()), attrs));
}

class Executable : public detail::Handle<pk_executable_t, pk_executable_destroy> {
 public:
  Executable() = default;
  explicit Executable(pk_executable_t e) : Handle(e) {}
  void run(Stream &s, const std::vector<pk_tensor> &inputs, const std::vector<pk_tensor> &outputs) {
    check(pk_executable_run(h_, s.get(), inputs.data(), static_cast<uint32_t>(inputs.size()), outputs.data(),
                            static_cast<uint32_t>(outputs.size())));
  }
};

class Graph : public detail::Handle<pk_graph_t, pk_graph_destroy> {
 public:
  Graph() { check(pk_graph_create(&h_)); }
  uint32_t input(pk_dtype dtype, const std::vector<int64_t> &shape) {
    uint32_t v = 0;
    check(pk_graph_add_input(h_, dtype, static_cast<int32_t>(shape.size()), shape.data(), &v));
    return v;
  }
  // Adds a node with one output and returns its value id.
  uint32_t node(uint32_t op_id, std::initializer_list<uint32_t> inputs, const void *attrs = nullptr) {
    std::vector<uint32_t> in(inputs);
    uint32_t out = 0;
    check(pk_graph_add_node(h_, op_id, in.data(), static_cast<uint32_t>(in.size()), attrs, &out, 1));
    return out;
  }
  std::vector<uint32_t> node_n(uint32_t op_id, const std::vector<uint32_t> &inputs, uint32_t num_outputs,
                               const void *attrs = nullptr) {
    std::vector<uint32_t> out(num_outputs);
    check(pk_graph_add_node(h_, op_id, inputs.data(), static_cast<uint32_t>(inputs.size()), attrs, out.data(),
                            num_outputs));
    return out;
  }
  void output(uint32_t value) { check(pk_graph_mark_output(h_, value)); }
  Executable compile(const Device &d, bool fusion = true) {
    pk_compile_options o;
    PK_STRUCT_INIT(o);
    o.disable_fusion = fusion ? 0 : 1;
    pk_executable_t e = nullptr;
    check(pk_graph_compile(h_, d.get(), &o, &e));
    return Executable(e);
  }
};

}  // namespace pk
