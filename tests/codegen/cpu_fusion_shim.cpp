// cpu_fusion_shim.cpp — a TEST plugin: the real CPU plugin's table (loaded with dlopen) plus the fusion hooks of
// backends/cpu/cpu_fusion.cpp, named "cpu-fusion-test". It exists so the hooks are tested and benchmarked
// through the runtime's graph API before cpu_backend.cpp installs them itself; it also supplies
// the worker-pool entry points of cpu_kernels.hpp, which the real backend defines internally.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu_fusion.hpp"
#include "cpu_kernels.hpp"
#include "primkit/primkit.h"

namespace pk::cpu {
// What cpu_kernels.hpp's parallel_for needs (cpu_backend.cpp has the real pool): hardware threads per call.
bool runs_serially(int64_t n, int64_t grain) {
  return n <= grain || std::thread::hardware_concurrency() <= 1;
}

void parallel_run(int64_t begin, int64_t end, int64_t grain, RangeFn f) {
  const int64_t n = end - begin;
  const int64_t threads = std::max<int64_t>(
      1, std::min<int64_t>(std::thread::hardware_concurrency(), (n + grain - 1) / std::max<int64_t>(grain, 1)));
  const int64_t step = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) {
    const int64_t lo = begin + t * step, hi = std::min(end, lo + step);
    if (lo < hi) pool.emplace_back([f, lo, hi] { f(lo, hi); });
  }
  f(begin, std::min(end, begin + step));
  for (auto &t : pool) t.join();
}
}  // namespace pk::cpu

namespace {

pk_backend_api g_api;
const pk_backend_api *g_real = nullptr;
pk_status g_status = PK_ERROR_NOT_FOUND;
char g_message[256] = {0};

pk_status shim_get_info(pk_be_context *ctx, pk_backend_info *out) {
  pk_status st = g_real->get_info(ctx, out);
  if (st == PK_OK) std::snprintf(out->name, sizeof out->name, "cpu-fusion-test");
  return st;
}

}  // namespace

extern "C" PK_EXPORT pk_status pk_backend_entry(const pk_host_services *host, uint32_t *chosen_version,
                                                const pk_backend_api **out_api, char *message,
                                                size_t message_capacity) {
  static std::once_flag once;
  std::call_once(once, [&] {
    void *lib = dlopen(PK_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    auto entry = lib ? reinterpret_cast<pk_backend_entry_fn>(dlsym(lib, PK_BACKEND_ENTRY_SYMBOL)) : nullptr;
    if (entry == nullptr) {
      std::snprintf(g_message, sizeof g_message, "cannot load %s: %s", PK_CPU_PLUGIN, lib ? "no entry" : dlerror());
      return;
    }
    uint32_t v = 0;
    g_status = entry(host, &v, &g_real, g_message, sizeof g_message);
    if (g_status != PK_OK) return;
    g_api = *g_real;
    g_api.get_info = shim_get_info;
    pk::cpu::install_fusion(g_api);
  });
  if (g_status != PK_OK) {
    if (message && message_capacity) std::snprintf(message, message_capacity, "%s", g_message);
    return g_status;
  }
  *chosen_version = g_api.abi_version;
  *out_api = &g_api;
  return PK_OK;
}
