// smoke_test.cpp — loads the @BACKEND_NAME@ plugin through libprimkit (as a framework would) and checks what a
// null backend must already do: negotiate, describe its device, allocate, copy both ways, order work on a stream,
// record and wait for events, and answer the capability query honestly. Run by ctest; the plugin path is argv[1].
//
// TODO(vendor): keep this passing as you replace the simulation with your driver; `primkit conformance` checks
// the ops themselves.
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "primkit/primkit.h"

namespace {

int g_failures = 0;

void check(bool ok, const char *what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) {
    pk_error_info error;
    PK_STRUCT_INIT(error);
    pk_get_last_error(&error);
    std::printf("     last error: %s\n", error.message);
    ++g_failures;
  }
}

struct RuntimeDeleter {
  void operator()(pk_runtime_s *runtime) const { pk_runtime_destroy(runtime); }
};
struct StreamDeleter {
  void operator()(pk_stream_s *stream) const { pk_stream_destroy(stream); }
};
struct EventDeleter {
  void operator()(pk_event_s *event) const { pk_event_destroy(event); }
};
struct BufferDeleter {
  void operator()(pk_buffer_s *buffer) const { pk_buffer_destroy(buffer); }
};
using Runtime = std::unique_ptr<pk_runtime_s, RuntimeDeleter>;
using Stream = std::unique_ptr<pk_stream_s, StreamDeleter>;
using Event = std::unique_ptr<pk_event_s, EventDeleter>;
using Buffer = std::unique_ptr<pk_buffer_s, BufferDeleter>;

Buffer make_buffer(pk_device_t device, uint64_t bytes) {
  pk_buffer_t buffer = nullptr;
  check(pk_buffer_create(device, bytes, &buffer) == PK_OK, "pk_buffer_create");
  return Buffer(buffer);
}

pk_tensor vector_f32(pk_buffer_t buffer, const int64_t *shape) {
  pk_tensor tensor;
  PK_STRUCT_INIT(tensor);
  pk_buffer_tensor(buffer, pk_dtype PK_DTYPE_F32_DESC, 1, shape, nullptr, 0, &tensor);
  return tensor;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s libprimkit_backend_@BACKEND_NAME@.so\n", argv[0]);
    return 2;
  }
  // Strict and without discovery: nothing may silently run on the CPU backend here.
  pk_runtime_options options;
  PK_STRUCT_INIT(options);
  options.flags = PK_RUNTIME_STRICT | PK_RUNTIME_NO_DISCOVERY;
  pk_runtime_t raw_runtime = nullptr;
  check(pk_runtime_create(&options, &raw_runtime) == PK_OK, "pk_runtime_create");
  Runtime runtime(raw_runtime);
  pk_backend_t backend = nullptr;
  check(pk_runtime_load_plugin(runtime.get(), argv[1], &backend) == PK_OK, "the plugin loads and negotiates");
  if (backend == nullptr) return 1;

  pk_backend_info info;
  PK_STRUCT_INIT(info);
  check(pk_backend_get_info(backend, &info) == PK_OK && std::strcmp(info.name, "@BACKEND_NAME@") == 0,
        "get_info names the backend '@BACKEND_NAME@'");
  uint32_t devices = 0;
  // The vendor extension of the template (see kExtensions): found by name, refused for an unknown one.
  const pk_proc memory_fn = pk_backend_get_proc_address(backend, "@BACKEND_NAME@_simulated_memory_bytes");
  check(memory_fn != nullptr && reinterpret_cast<uint64_t (*)(void)>(memory_fn)() > 0, "a vendor extension by name");
  check(pk_backend_get_proc_address(backend, "@BACKEND_NAME@_no_such_extension") == nullptr,
        "an unknown extension is NULL");
  check(pk_backend_device_count(backend, &devices) == PK_OK && devices >= 1, "at least one device");
  if (devices == 0) return 1;
  pk_device_t device = nullptr;
  pk_backend_device(backend, 0, &device);
  pk_device_props props;
  PK_STRUCT_INIT(props);
  check(pk_device_get_props(device, &props) == PK_OK && props.memory_bytes > 0 && props.alignment > 0,
        "device properties: memory size and alignment");

  // Memory: host -> device -> device -> host returns the same bytes.
  const int64_t n = 1000;
  std::vector<float> host_in(n), host_out(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) host_in[i] = 0.5f * static_cast<float>(i) - 7.0f;
  const uint64_t bytes = n * sizeof(float);
  Buffer first = make_buffer(device, bytes);
  Buffer second = make_buffer(device, bytes);
  pk_stream_t raw_stream = nullptr;
  check(pk_stream_create(device, &raw_stream) == PK_OK, "pk_stream_create");
  Stream stream(raw_stream);
  check(pk_copy_host_to_buffer(stream.get(), first.get(), 0, host_in.data(), bytes) == PK_OK, "copy host to device");
  check(pk_copy_buffer_to_buffer(stream.get(), second.get(), 0, first.get(), 0, bytes) == PK_OK,
        "copy device to device");
  check(pk_copy_buffer_to_host(stream.get(), host_out.data(), second.get(), 0, bytes) == PK_OK, "copy device to host");
  pk_event_t raw_event = nullptr;
  check(pk_event_create(device, &raw_event) == PK_OK, "pk_event_create");
  Event event(raw_event);
  check(pk_event_record(event.get(), stream.get()) == PK_OK, "pk_event_record");
  check(pk_event_synchronize(event.get()) == PK_OK, "pk_event_synchronize");
  check(pk_stream_synchronize(stream.get()) == PK_OK, "pk_stream_synchronize");
  check(std::memcmp(host_in.data(), host_out.data(), bytes) == 0, "the round trip returns the same bytes");

  // The capability query agrees with the build: add f32 runs here only with the worked example compiled in.
  const int64_t shape[1] = {n};
  Buffer sum = make_buffer(device, bytes);
  const pk_tensor add_operands[3] = {vector_f32(first.get(), shape), vector_f32(second.get(), shape),
                                     vector_f32(sum.get(), shape)};
  pk_op_query query;
  PK_STRUCT_INIT(query);
  query.op_id = PK_OP_ADD;
  query.num_inputs = 2;
  query.inputs = add_operands;
  query.num_outputs = 1;
  query.outputs = add_operands + 2;
  pk_op_support support;
  PK_STRUCT_INIT(support);
  check(pk_device_query_op(device, &query, &support) == PK_OK, "capability query for add f32");
  const pk_status add_status = pk_launch(stream.get(), PK_OP_ADD, add_operands, 2, add_operands + 2, 1, nullptr);
#ifdef @BACKEND_NAME_UPPER@_ENABLE_EXAMPLE_ADD
  check(support.supported == 1, "add f32 is supported (worked example compiled in)");
  check(add_status == PK_OK, "add f32 launches natively in strict mode");
  check(pk_copy_buffer_to_host(stream.get(), host_out.data(), sum.get(), 0, bytes) == PK_OK &&
            pk_stream_synchronize(stream.get()) == PK_OK,
        "copy the sum back");
  bool sums_exact = true;
  for (int64_t i = 0; i < n; ++i) sums_exact = sums_exact && host_out[i] == host_in[i] + host_in[i];
  check(sums_exact, "add f32 gives a + b exactly for every element");
#else
  check(support.supported == 0, "add f32 is not supported yet (null backend)");
  check(add_status == PK_ERROR_FALLBACK_FORBIDDEN, "strict mode reports the missing kernel instead of falling back");
#endif
  // The stream is still usable after a declined op: declining is not a failure.
  check(pk_stream_synchronize(stream.get()) == PK_OK, "the stream is still healthy");

  std::printf("%s: %d failure%s\n", g_failures ? "FAILED" : "passed", g_failures, g_failures == 1 ? "" : "s");
  return g_failures ? 1 : 0;
}
