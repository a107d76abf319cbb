// Loads the installed CPU backend (found in the install's plugin folder) and the hello plugin (by path), then
// adds two tensors on the CPU.
#include <cstdio>

#include "primkit/primkit.h"

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  pk_runtime_t rt = nullptr;
  if (pk_runtime_create(nullptr, &rt) != PK_OK) return 3;
  pk_backend_t hello = nullptr, cpu = nullptr;
  if (pk_runtime_load_plugin(rt, argv[1], &hello) != PK_OK) return 4;
  if (pk_runtime_find_backend(rt, "cpu", &cpu) != PK_OK) {
    std::printf("no cpu backend: %s\n", pk_runtime_load_errors(rt));
    return 5;
  }
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  pk_backend_get_info(hello, &info);
  uint32_t devices = 99;
  pk_backend_device_count(hello, &devices);
  std::printf("loaded %s by %s with %u devices\n", info.name, info.vendor, devices);
  pk_device_t dev;
  pk_backend_device(cpu, 0, &dev);
  pk_stream_t s;
  pk_stream_create(dev, &s);
  int64_t shape[1] = {2};
  float a[2] = {1, 10}, b[2] = {2, 20}, c[2] = {0, 0};
  pk_tensor t[3];
  float *data[3] = {a, b, c};
  for (int i = 0; i < 3; ++i) {
    PK_STRUCT_INIT(t[i]);
    t[i].data = data[i];
    t[i].storage_bytes = sizeof(a);
    t[i].device_type = PK_DEVICE_CPU;
    t[i].dtype = pk_dtype PK_DTYPE_F32_DESC;
    t[i].ndim = 1;
    t[i].shape = shape;
    t[i].flags = PK_TENSOR_FLAG_HOST_VISIBLE;
  }
  pk_status st = pk_launch(s, PK_OP_ADD, t, 2, &t[2], 1, nullptr);
  pk_stream_synchronize(s);
  std::printf("add: %s %g %g\n", pk_status_name(st), c[0], c[1]);
  pk_stream_destroy(s);
  pk_runtime_destroy(rt);
  return st == PK_OK && c[0] == 3.0f && c[1] == 30.0f ? 0 : 1;
}
