// cmd_list.cpp — `primkit list [-v] [--json]`: the backends discovery found, their ABI version and devices, and the
// plugins that failed to load, with why; --json writes the same facts as one JSON document for scripts.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace pk::cli {
namespace {

std::string features_text(uint32_t f) {
  std::string s;
  if (f & PK_DEVICE_FEATURE_ASYNC) s += "async ";
  if (f & PK_DEVICE_FEATURE_UNIFIED_MEMORY) s += "unified-memory ";
  if (f & PK_DEVICE_FEATURE_FUSION) s += "fusion ";
  if (!s.empty()) s.pop_back();
  return s.empty() ? "-" : s;
}

std::string float_policy_text(uint32_t f) {
  std::string s;
  if (f & PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS) s += "ftz ";
  if (f & PK_FLOAT_FLUSH_SUBNORMAL_INPUTS) s += "daz ";
  if (f & PK_FLOAT_FAST_MATH_TRANSCENDENTALS) s += "fast-transcendentals ";
  if (!s.empty()) s.pop_back();
  return s.empty() ? "ieee (subnormals kept)" : s;
}

std::string dtypes_text(uint32_t mask, const char *sep) {
  std::string dts;
  for (int32_t t = 0; t < PK_DTYPE_COUNT; ++t)
    if (mask & (1u << t)) dts += std::string(dts.empty() ? "" : sep) + pk::meta::dtype_name(t);
  return dts;
}

// What `primkit list` reports of one loaded backend, read once for the text and the JSON forms. The strings the
// backend returns stay valid while the runtime is open.
struct ListedBackend {
  pk_backend_info info;
  uint32_t abi = 0;
  const char *path = "";
  std::vector<pk_device_props> devices;
  std::string no_device_reason;  // when it has no device: the runtime's reason
};

std::vector<ListedBackend> list_backends(pk_runtime_t rt) {
  uint32_t n = 0;
  pk_runtime_backend_count(rt, &n);
  std::vector<ListedBackend> out(n);
  for (uint32_t i = 0; i < n; ++i) {
    ListedBackend &l = out[i];
    pk_backend_t b;
    pk_runtime_backend(rt, i, &b);
    PK_STRUCT_INIT(l.info);
    pk_backend_get_info(b, &l.info);
    l.abi = pk_backend_abi_version(b);
    uint32_t nd = 0;
    pk_backend_device_count(b, &nd);
    if (nd == 0) l.no_device_reason = last_error_message();
    l.path = pk_backend_path(b);
    for (uint32_t d = 0; d < nd; ++d) {
      pk_device_t dev;
      pk_backend_device(b, d, &dev);
      pk_device_props p;
      PK_STRUCT_INIT(p);
      pk_device_get_props(dev, &p);
      l.devices.push_back(p);
    }
  }
  return out;
}

// `primkit list --json`: the same facts as the text, for scripts. Plugins that failed are listed with the
// reason the runtime gives (the probe's verdict for one that crashed, exited or hung).
std::string list_json(pk_runtime_t rt) {
  std::string j = "{\"abi\": \"" + std::to_string(PK_ABI_VERSION_MAJOR) + "." + std::to_string(PK_ABI_VERSION_MINOR) +
                  "\", \"backends\": [";
  const std::vector<ListedBackend> backends = list_backends(rt);
  for (size_t i = 0; i < backends.size(); ++i) {
    const ListedBackend &l = backends[i];
    char version[64];
    std::snprintf(version, sizeof(version), "%u.%u.%u", l.info.version_major, l.info.version_minor,
                  l.info.version_patch);
    j += std::string(i ? ", " : "") + "{\"name\": " + json_string(l.info.name) +
         ", \"vendor\": " + json_string(l.info.vendor) + ", \"version\": \"" + version + "\", \"abi\": \"" +
         std::to_string(PK_VERSION_MAJOR(l.abi)) + "." + std::to_string(PK_VERSION_MINOR(l.abi)) +
         "\", \"path\": " + json_string(l.path) + ", \"devices\": [";
    for (size_t d = 0; d < l.devices.size(); ++d) {
      const pk_device_props &p = l.devices[d];
      j += std::string(d ? ", " : "") + "{\"index\": " + std::to_string(d) + ", \"name\": " + json_string(p.name) +
           ", \"memory_bytes\": " + std::to_string(p.memory_bytes) +
           ", \"compute_units\": " + std::to_string(p.compute_units) +
           ", \"features\": " + json_string(features_text(p.features)) +
           ", \"dtypes\": " + json_string(dtypes_text(p.dtype_mask, " ")) + "}";
    }
    j += "]";
    if (l.devices.empty()) j += ", \"no_device_reason\": " + json_string(l.no_device_reason);
    j += "}";
  }
  j += "], \"load_errors\": [";
  std::string errors = pk_runtime_load_errors(rt);
  size_t start = 0, count = 0;
  while (start < errors.size()) {
    size_t nl = errors.find('\n', start);
    if (nl == std::string::npos) nl = errors.size();
    if (nl > start) j += std::string(count++ ? ", " : "") + json_string(errors.substr(start, nl - start));
    start = nl + 1;
  }
  return j + "]}\n";
}

int run_list(bool verbose, bool json) {
  if (json) {
    // Plugins run while the runtime loads, queries and closes them: anything they print goes to stderr, and
    // stdout carries the JSON document alone.
    std::string doc;
    {
      StdoutToStderr quiet;
      pk_runtime_t rt = open_runtime(0);
      doc = list_json(rt);
      pk_runtime_destroy(rt);
    }
    std::fputs(doc.c_str(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  pk_runtime_t rt = open_runtime(0);
  const std::vector<ListedBackend> backends = list_backends(rt);
  const size_t n = backends.size();
  std::printf("PrimKit runtime, ABI %u.%u — %zu backend%s\n", PK_ABI_VERSION_MAJOR, PK_ABI_VERSION_MINOR, n,
              n == 1 ? "" : "s");
  for (const ListedBackend &l : backends) {
    const size_t nd = l.devices.size();
    std::printf("\n%-10s %s %u.%u.%u  ABI %u.%u  %zu device%s\n", l.info.name, l.info.vendor, l.info.version_major,
                l.info.version_minor, l.info.version_patch, PK_VERSION_MAJOR(l.abi), PK_VERSION_MINOR(l.abi), nd,
                nd == 1 ? "" : "s");
    std::printf("           %s\n", l.path);
    for (size_t d = 0; d < nd; ++d) {
      const pk_device_props &p = l.devices[d];
      std::printf("  device %zu: %s, %.1f GiB, %u compute units, features: %s, floats: %s\n", d, p.name,
                  static_cast<double>(p.memory_bytes) / (1ull << 30), p.compute_units,
                  features_text(p.features).c_str(), float_policy_text(p.float_policy).c_str());
      if (verbose) std::printf("            dtypes: %s\n", dtypes_text(p.dtype_mask, " ").c_str());
    }
    if (nd == 0) std::printf("  no devices: %s\n", l.no_device_reason.c_str());
  }
  const char *errors = pk_runtime_load_errors(rt);
  if (errors && *errors) std::printf("\nplugins that failed to load:\n%s", errors);
  pk_runtime_destroy(rt);
  return 0;
}

}  // namespace

Subcommand add_list_command(CLI::App &app) {
  struct Args {
    bool verbose = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App *cmd = app.add_subcommand(
      "list", "Backends found, their ABI version and devices, and the plugins that failed to load, with why");
  cmd->add_flag("-v,--verbose", args->verbose, "Also list each device's dtypes");
  cmd->add_flag("--json", args->json,
                "Write one JSON document on stdout instead (what a plugin prints goes to stderr)");
  return {cmd, [args] { return run_list(args->verbose, args->json); }};
}

}  // namespace pk::cli
