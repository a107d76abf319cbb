// engine_nccl.cpp — the NCCL collectives engine, for the cuda backend. NCCL is loaded with dlopen, as the cuda
// backend loads libcuda, so this library loads everywhere and says why it cannot run where NCCL or a GPU is absent.
//
// This increment only finds and identifies NCCL: driving it needs the cuda backend's CUDA streams and device
// pointers handed to the engine, which the runtime does not do yet. Until then init() reports the engine
// unavailable, naming what it found, rather than pretending.
#include <dlfcn.h>

#include <cstdio>

#include "collective_engine.h"

namespace {

using nccl_get_version_fn = int (*)(int *);

pk_status engine_init(char *err) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  const char *cuda_why = cuda ? nullptr : dlerror();
  void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (nccl == nullptr) {
    const char *why = dlerror();
    std::snprintf(err, PK_MESSAGE_CAPACITY, "NCCL engine unavailable: libnccl.so.2 not found (%s)",
                  why ? why : "dlopen failed");
    if (cuda) dlclose(cuda);
    return PK_ERROR_NOT_FOUND;
  }
  int version = 0;
  auto get_version = reinterpret_cast<nccl_get_version_fn>(dlsym(nccl, "ncclGetVersion"));
  if (get_version != nullptr) get_version(&version);
  if (cuda == nullptr) {
    std::snprintf(err, PK_MESSAGE_CAPACITY,
                  "NCCL engine unavailable: libnccl.so.2 (NCCL %d.%d.%d) loads, but there is no NVIDIA driver "
                  "(libcuda.so.1: %s)",
                  version / 10000, (version / 100) % 100, version % 100, cuda_why ? cuda_why : "dlopen failed");
  } else {
    std::snprintf(err, PK_MESSAGE_CAPACITY,
                  "NCCL engine unavailable: libnccl.so.2 (NCCL %d.%d.%d) and the driver load, but this runtime "
                  "does not yet hand the cuda backend's streams to engines",
                  version / 10000, (version / 100) % 100, version % 100);
    dlclose(cuda);
  }
  dlclose(nccl);
  return PK_ERROR_NOT_FOUND;
}

const pk_engine_api k_api = {sizeof(pk_engine_api),
                             PK_ENGINE_INTERFACE_VERSION,
                             "nccl",
                             engine_init,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

}  // namespace

extern "C" PK_EXPORT pk_status pk_collective_engine_entry(uint32_t host_interface_version, const pk_engine_api **out,
                                                          char *err) {
  if (host_interface_version != PK_ENGINE_INTERFACE_VERSION) {
    std::snprintf(err, PK_MESSAGE_CAPACITY, "NCCL engine speaks engine interface %u, libprimkit %u",
                  PK_ENGINE_INTERFACE_VERSION, host_interface_version);
    return PK_ERROR_ABI_MISMATCH;
  }
  *out = &k_api;
  return PK_OK;
}
