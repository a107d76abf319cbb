// primkit — the command line: list backends, show their op coverage, and (in later subcommands) run
// conformance, generate a backend project and run models.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "primkit/conformance.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

using namespace pk::cli;

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

int cmd_list(int argc, char **argv) {
  bool verbose = false, json = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "-v") == 0) {
      verbose = true;
    } else if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      std::fprintf(stderr, "usage: primkit list [-v] [--json]\n");
      return 2;
    }
  }
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

int cmd_info(int argc, char **argv) {
  if (argc < 1) {
    std::fprintf(stderr, "usage: primkit info BACKEND [--ops]   (BACKEND: a name or a plugin path)\n");
    return 2;
  }
  bool per_op = argc > 1 && std::strcmp(argv[1], "--ops") == 0;
  pk_runtime_t rt = open_runtime_for(argv[0]);
  pk_backend_t b = resolve_backend(rt, argv[0]);
  if (b == nullptr) {
    pk_runtime_destroy(rt);
    return 2;
  }
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  pk_backend_get_info(b, &info);
  uint32_t nd = 0;
  pk_backend_device_count(b, &nd);
  if (nd == 0) {
    std::printf("%s: no devices, so no op runs here (%s)\n", info.name, last_error_message().c_str());
    pk_runtime_destroy(rt);
    return 0;
  }
  pk_device_t dev;
  pk_backend_device(b, 0, &dev);
  std::printf(
      "%s (%s %u.%u.%u), device 0 — op coverage from the capability query, per (op, dtype) pair as\n"
      "`primkit conformance` counts them\n\n",
      info.name, info.vendor, info.version_major, info.version_minor, info.version_patch);
  if (per_op)
    std::printf(
        "  dtype+ native kernel, dtype~ composite the backend has no kernel for: the runtime runs its\n"
        "  decomposition into the backend's primitives, dtype- not supported\n\n");
  // The pairs and the question are the conformance suite's own (pk::conformance::op_dtypes, query_support): a
  // creation op counts once per dtype its `dtype` attribute admits, and is asked with that attribute set.
  uint32_t all_pairs = 0;
  for (int tier = 0; tier < 2; ++tier) {
    const bool composite = tier == 1;
    uint32_t ops = 0, full = 0, part = 0, pairs = 0, native = 0, decomposed = 0;
    uint32_t dt_total[PK_DTYPE_COUNT] = {0}, dt_native[PK_DTYPE_COUNT] = {0};
    for (const auto *op = pk::meta::ops_begin(); op != pk::meta::ops_end(); ++op) {
      if (static_cast<int>(op->tier) != tier) continue;
      ++ops;
      const std::vector<int32_t> dts = pk::conformance::op_dtypes(*op);
      uint32_t ok = 0;
      std::string line;
      for (int32_t d : dts) {
        const bool s = pk::conformance::query_support(dev, *op, d, nullptr);
        ok += s;
        ++pairs;
        native += s;
        decomposed += composite && !s;
        ++dt_total[d];
        dt_native[d] += s;
        if (per_op) line += std::string(" ") + pk::meta::dtype_name(d) + (s ? "+" : composite ? "~" : "-");
      }
      full += ok == dts.size();
      part += ok > 0 && ok < dts.size();
      if (per_op) std::printf("  %-32s%s\n", op->name, line.c_str());
    }
    all_pairs += pairs;
    if (!composite) {
      std::printf(
          "primitive tier: %u ops — %u fully supported, %u partly, %u not at all; %u/%u (op, dtype) pairs "
          "(%.1f %%)\n",
          ops, full, part, ops - full - part, native, pairs, pairs ? 100.0 * native / pairs : 0.0);
    } else {
      std::printf(
          "composite tier: %u ops, %u (op, dtype) pairs — %u native (%.1f %%), %u by decomposition\n"
          "  (by decomposition: the backend has no kernel, so the runtime runs the op's decomposition into the\n"
          "  backend's primitives; it works where the backend supports those)\n",
          ops, pairs, native, pairs ? 100.0 * native / pairs : 0.0, decomposed);
    }
    std::printf("  by dtype (native/pairs):");
    for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d)
      if (dt_total[d]) std::printf(" %s %u/%u", pk::meta::dtype_name(d), dt_native[d], dt_total[d]);
    std::printf("\n\n");
  }
  uint32_t fused_pairs = 0;
  for (const char *name : pk::conformance::kFusedComposites)
    if (const auto *op = pk::meta::find_op(name)) fused_pairs += pk::conformance::op_dtypes(*op).size();
  std::printf(
      "fused decompositions: %zu composites, %u (op, dtype) pairs (conformance's fused:<op> rows: checked by "
      "running the fusion hook, which no capability query answers)\n",
      std::size(pk::conformance::kFusedComposites), fused_pairs);
  std::printf("conformance checks %u (op, dtype) pairs on this backend: %u op pairs and %u fused\n",
              all_pairs + fused_pairs, all_pairs, fused_pairs);
  if (info.name[0] && std::strcmp(argv[0], info.name) == 0) {
    // nothing else
  }
  pk_runtime_destroy(rt);
  return 0;
}

void usage() {
  std::printf(
      "primkit — PrimKit SDK command line (ABI %u.%u)\n\n"
      "  primkit list [-v] [--json]      backends found, their ABI version and devices, and the plugins that\n"
      "                                  failed to load, with why (--json: one JSON document on stdout)\n"
      "  primkit info BACKEND [--ops]    op coverage per tier and dtype, composites native or by decomposition\n"
      "                                  (BACKEND: name or plugin path)\n"
      "  primkit conformance --backend BACKEND [--ops GLOB] [--profile quick|full] [--report DIR] ...\n"
      "                                  check a backend against the oracle, per op and dtype (--help)\n"
      "  primkit new-backend NAME [--dir DIR]\n"
      "                                  write an out-of-tree backend project from the SDK's template\n"
      "  primkit run-model --backend BACKEND --model mlp|transformer [--strict]\n"
      "                                  run a model graph (fallback to cpu), compare with the oracle\n"
      "\nPlugins are found in $PRIMKIT_PLUGIN_PATH (':'-separated folders) and the install's plugin folder.\n"
      "Each is first tried in a child process; one that crashes, exits or hangs there is listed, not loaded.\n",
      PK_ABI_VERSION_MAJOR, PK_ABI_VERSION_MINOR);
}

// A plugin that crashes during a launch (run-model, conformance) kills the process; without this the shell
// shows nothing, or only "Segmentation fault" with no hint where to look. Async-signal-safe: write() a fixed
// text, then die of the same signal with its default action, so the exit status still tells the signal.
void on_fatal_signal(int sig) {
  const char *name = sig == SIGSEGV   ? "SIGSEGV"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGILL  ? "SIGILL"
                     : sig == SIGFPE  ? "SIGFPE"
                     : sig == SIGABRT ? "SIGABRT"
                                      : "a fatal signal";
  static const char head[] = "\nprimkit: killed by ";
  static const char tail[] =
      " (most likely inside a backend plugin's launch; `primkit conformance --backend NAME` narrows it down to "
      "an op)\n";
  ssize_t ignored = write(2, head, sizeof(head) - 1);
  ignored = write(2, name, std::strlen(name));
  ignored = write(2, tail, sizeof(tail) - 1);
  (void)ignored;
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

int main(int argc, char **argv) {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) signal(sig, on_fatal_signal);
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "list") return cmd_list(argc - 2, argv + 2);
  if (cmd == "info") return cmd_info(argc - 2, argv + 2);
  if (cmd == "conformance") return pk::cli::cmd_conformance(argc - 2, argv + 2);
  if (cmd == "new-backend") return cmd_new_backend(argc - 2, argv + 2);
  if (cmd == "run-model") return cmd_run_model(argc - 2, argv + 2);
  std::fprintf(stderr, "primkit: unknown command '%s'\n\n", cmd.c_str());
  usage();
  return 2;
}
