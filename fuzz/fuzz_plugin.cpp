// fuzz_plugin — the plugin function table: a fake plugin (fake_plugin.c) whose entry, table size, slot presence
// and every slot's answers come from the first 96 bytes of the input. Each run makes a runtime with the cpu
// backend (the fallback target), loads the fake plugin by path, then, if it loaded, drives it through the public
// ABI: metadata, devices, buffers, copies, streams, events, a launch of `add` (native or through fallback), the
// capability query, and a graph compiled with fusion offered to the fake's hook and run. The host must turn
// every lie into a status: no crash, no read past the table's declared size, no leak.
#include <dlfcn.h>

#include "fuzz_common.hpp"

namespace {
using configure_fn = void (*)(const uint8_t *, size_t);
configure_fn configure = nullptr;
constexpr size_t kCfg = 96;

void write_seeds() {
  // All-zero: a well-behaved plugin. Then one seed per behaviour byte turned to a value that selects a lie.
  std::vector<uint8_t> good(kCfg, 0);
  pkfuzz::write_seed("good", good);
  const std::pair<int, uint8_t> lies[] = {
      {0, 201}, {1, 1},  {1, 2},  {1, 5},  {6, 8},  {6, 200}, {8, 1},  {8, 0x40}, {12, 1},   {13, 1}, {14, 1},
      {14, 3},  {15, 1}, {15, 3}, {20, 2}, {21, 1}, {26, 1},  {28, 1}, {30, 1},   {32, 201}, {34, 1}, {38, 1},
      {38, 3},  {38, 4}, {39, 1}, {39, 2}, {40, 1}, {40, 2},  {40, 3}, {40, 5},   {41, 203}, {42, 1}};
  for (auto [at, v] : lies) {
    std::vector<uint8_t> s = good;
    s[at] = v;
    pkfuzz::write_seed("lie-" + std::to_string(at) + "-" + std::to_string(v), s);
  }
}

pk_tensor tensor(pk_buffer_t b, const int64_t *shape) {
  pk_tensor t;
  pk_buffer_tensor(b, pk_dtype PK_DTYPE_F32_DESC, 1, shape, nullptr, 0, &t);
  return t;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Keep both libraries loaded for the whole process: the runtime's dlclose then never unloads them, and the
  // configuration set here is the one the runtime's dlopen of the same path sees.
  if (!dlopen(PK_FUZZ_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL)) pkfuzz::die("cannot dlopen", PK_FUZZ_CPU_PLUGIN);
  void *fake = dlopen(PK_FUZZ_FAKE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!fake) pkfuzz::die("cannot dlopen", PK_FUZZ_FAKE_PLUGIN);
  configure = reinterpret_cast<configure_fn>(dlsym(fake, "pk_fake_plugin_configure"));
  if (!configure) pkfuzz::die("the fake plugin lacks pk_fake_plugin_configure");
  if (pkfuzz::seed_dir()) {
    write_seeds();
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  configure(data, std::min(size, kCfg));
  pkfuzz::Reader r(size > kCfg ? data + kCfg : data, size > kCfg ? size - kCfg : 0);
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = PK_RUNTIME_NO_DISCOVERY | ((r.u8() & 1) ? PK_RUNTIME_STRICT : 0);
  pk_runtime_t rt = nullptr;
  if (pk_runtime_create(&o, &rt) != PK_OK) pkfuzz::die("pk_runtime_create");
  if (pk_runtime_load_plugin(rt, PK_FUZZ_CPU_PLUGIN, nullptr) != PK_OK) pkfuzz::die("cannot load the cpu plugin");
  pk_backend_t fake = nullptr;
  pk_status st = pk_runtime_load_plugin(rt, PK_FUZZ_FAKE_PLUGIN, &fake);
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  PKFUZZ_CHECK(std::memchr(e.message, 0, sizeof(e.message)) != nullptr, "the last error is NUL-terminated");
  PKFUZZ_CHECK(std::strlen(pk_runtime_load_errors(rt)) < (1u << 20), "load errors are a C string");
  if (st == PK_OK) {
    pk_backend_info info;
    PK_STRUCT_INIT(info);
    if (pk_backend_get_info(fake, &info) == PK_OK) {
      PKFUZZ_CHECK(std::memchr(info.name, 0, sizeof(info.name)) != nullptr, "the backend name is NUL-terminated");
      PKFUZZ_CHECK(std::memchr(info.vendor, 0, sizeof(info.vendor)) != nullptr, "the vendor is NUL-terminated");
    }
    pk_backend_abi_version(fake);
    PKFUZZ_CHECK(std::strlen(pk_backend_path(fake)) > 0, "the plugin path is a C string");
    uint32_t n = 0;
    pk_backend_device_count(fake, &n);
    pk_device_t dev = nullptr;
    if (n > 0 && pk_backend_device(fake, r.u8() % n, &dev) == PK_OK) {
      pk_device_props p;
      PK_STRUCT_INIT(p);
      if (pk_device_get_props(dev, &p) == PK_OK) {
        PKFUZZ_CHECK(std::memchr(p.name, 0, sizeof(p.name)) != nullptr, "the device name is NUL-terminated");
      }
      pk_stream_t s = nullptr;
      pk_buffer_t a = nullptr, b = nullptr, c = nullptr;
      pk_event_t ev = nullptr;
      const int64_t shape[1] = {4};
      float host[4] = {1, 2, 3, 4}, back[4] = {0, 0, 0, 0};
      pk_buffer_create(dev, 16, &a);
      pk_buffer_create(dev, 16, &b);
      pk_buffer_create(dev, 16, &c);
      if (pk_stream_create(dev, &s) == PK_OK) {
        if (a && b && c) {
          pk_copy_host_to_buffer(s, a, 0, host, sizeof(host));
          pk_copy_host_to_buffer(s, b, 0, host, sizeof(host));
          pk_copy_buffer_to_buffer(s, c, 0, a, 0, 16);
          pk_tensor in[2] = {tensor(a, shape), tensor(b, shape)};
          pk_tensor out[1] = {tensor(c, shape)};
          pk_launch(s, PK_OP_ADD, in, 2, out, 1, nullptr);
          pk_copy_buffer_to_host(s, back, c, 0, sizeof(back));
          pk_op_query q;
          PK_STRUCT_INIT(q);
          q.op_id = PK_OP_ADD;
          q.num_inputs = 2;
          q.inputs = in;
          q.num_outputs = 1;
          q.outputs = out;
          pk_op_support sup;
          PK_STRUCT_INIT(sup);
          if (pk_device_query_op(dev, &q, &sup) == PK_OK) {
            PKFUZZ_CHECK(std::memchr(sup.reason, 0, sizeof(sup.reason)) != nullptr, "the reason is NUL-terminated");
          }
          // A graph the fusion hook is offered: add -> exp -> mul.
          pk_graph_t g = nullptr;
          pk_graph_create(&g);
          uint32_t x = 0, y = 0, v1 = 0, v2 = 0, v3 = 0;
          pk_dtype f32 = PK_DTYPE_F32_DESC;
          if (pk_graph_add_input(g, f32, 1, shape, &x) == PK_OK && pk_graph_add_input(g, f32, 1, shape, &y) == PK_OK) {
            uint32_t ab[2] = {x, y};
            if (pk_graph_add_node(g, PK_OP_ADD, ab, 2, nullptr, &v1, 1) == PK_OK &&
                pk_graph_add_node(g, PK_OP_EXP, &v1, 1, nullptr, &v2, 1) == PK_OK) {
              uint32_t m[2] = {v2, y};
              if (pk_graph_add_node(g, PK_OP_MUL, m, 2, nullptr, &v3, 1) == PK_OK) {
                pk_graph_mark_output(g, v3);
                if (r.u8() & 1) pk_graph_mark_output(g, v1);
                pk_compile_options co;
                PK_STRUCT_INIT(co);
                pk_executable_t exe = nullptr;
                if (pk_graph_compile(g, dev, &co, &exe) == PK_OK) {
                  pk_tensor outs[2] = {tensor(c, shape), tensor(c, shape)};
                  uint32_t fk, fn, sn;
                  pk_executable_stats(exe, &fk, &fn, &sn);
                  pk_executable_run(exe, s, in, 2, outs, 1);
                  pk_executable_destroy(exe);
                }
              }
            }
          }
          pk_graph_destroy(g);
        }
        if (pk_event_create(dev, &ev) == PK_OK) {
          pk_event_record(ev, s);
          pk_stream_wait_event(s, ev);
          pk_event_query(ev);
          pk_event_synchronize(ev);
        }
        pk_stream_query(s);
        pk_stream_synchronize(s);
      }
      pk_event_destroy(ev);
      if (r.u8() & 1) pk_stream_destroy(s);  // else the runtime's destroy releases it
      pk_buffer_destroy(a);
      if (r.u8() & 1) {
        pk_buffer_destroy(b);
        pk_buffer_destroy(c);
      }
    }
    pk_runtime_fallback_report(rt);
  }
  pk_runtime_destroy(rt);
  return 0;
}
