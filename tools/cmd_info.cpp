// cmd_info.cpp — `primkit info BACKEND [--ops] [--json]`: a backend's op coverage per tier and dtype, counted per
// (op, dtype) pair as `primkit conformance` counts them, with composites native or run by decomposition.
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "primkit/conformance.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace pk::cli {
namespace {

// One op's answer per dtype: '+' native kernel, '~' a composite the runtime decomposes, '-' not supported.
struct OpCoverage {
  const char *name = "";
  std::vector<std::pair<int32_t, char>> marks;
};

struct TierCoverage {
  const char *name = "";
  uint32_t ops = 0, fully = 0, partly = 0, pairs = 0, native = 0, decomposed = 0;
  uint32_t dtype_pairs[PK_DTYPE_COUNT] = {0}, dtype_native[PK_DTYPE_COUNT] = {0};
  std::vector<OpCoverage> per_op;
};

struct Coverage {
  TierCoverage tiers[2];  // primitive, composite
  uint32_t fused_pairs = 0;
  uint32_t op_pairs() const { return tiers[0].pairs + tiers[1].pairs; }
};

// The pairs and the question are the conformance suite's own (pk::conformance::op_dtypes, query_support): a
// creation op counts once per dtype its `dtype` attribute admits, and is asked with that attribute set.
Coverage measure_coverage(pk_device_t dev) {
  Coverage c;
  c.tiers[0].name = "primitive";
  c.tiers[1].name = "composite";
  for (int tier = 0; tier < 2; ++tier) {
    const bool composite = tier == 1;
    TierCoverage &t = c.tiers[tier];
    for (const auto *op = pk::meta::ops_begin(); op != pk::meta::ops_end(); ++op) {
      if (static_cast<int>(op->tier) != tier) continue;
      ++t.ops;
      OpCoverage row;
      row.name = op->name;
      const std::vector<int32_t> dts = pk::conformance::op_dtypes(*op);
      uint32_t ok = 0;
      for (int32_t d : dts) {
        const bool s = pk::conformance::query_support(dev, *op, d, nullptr);
        ok += s;
        ++t.pairs;
        t.native += s;
        t.decomposed += composite && !s;
        ++t.dtype_pairs[d];
        t.dtype_native[d] += s;
        row.marks.emplace_back(d, s ? '+' : composite ? '~' : '-');
      }
      t.fully += ok == dts.size();
      t.partly += ok > 0 && ok < dts.size();
      t.per_op.push_back(std::move(row));
    }
  }
  for (const pk::meta::OpInfo *op : pk::conformance::fused_composites())
    c.fused_pairs += pk::conformance::op_dtypes(*op).size();
  return c;
}

double percent(uint32_t part, uint32_t whole) {
  return whole ? 100.0 * part / whole : 0.0;
}

void print_coverage_text(const pk_backend_info &info, const Coverage &c, bool per_op) {
  std::printf(
      "%s (%s %u.%u.%u), device 0 — op coverage from the capability query, per (op, dtype) pair as\n"
      "`primkit conformance` counts them\n\n",
      info.name, info.vendor, info.version_major, info.version_minor, info.version_patch);
  if (per_op)
    std::printf(
        "  dtype+ native kernel, dtype~ composite the backend has no kernel for: the runtime runs its\n"
        "  decomposition into the backend's primitives, dtype- not supported\n\n");
  for (const TierCoverage &t : c.tiers) {
    if (per_op) {
      for (const OpCoverage &row : t.per_op) {
        std::string line;
        for (const auto &[dtype, mark] : row.marks) line += std::string(" ") + pk::meta::dtype_name(dtype) + mark;
        std::printf("  %-32s%s\n", row.name, line.c_str());
      }
    }
    if (&t == &c.tiers[0]) {
      std::printf(
          "primitive tier: %u ops — %u fully supported, %u partly, %u not at all; %u/%u (op, dtype) pairs "
          "(%.1f %%)\n",
          t.ops, t.fully, t.partly, t.ops - t.fully - t.partly, t.native, t.pairs, percent(t.native, t.pairs));
    } else {
      std::printf(
          "composite tier: %u ops, %u (op, dtype) pairs — %u native (%.1f %%), %u by decomposition\n"
          "  (by decomposition: the backend has no kernel, so the runtime runs the op's decomposition into the\n"
          "  backend's primitives; it works where the backend supports those)\n",
          t.ops, t.pairs, t.native, percent(t.native, t.pairs), t.decomposed);
    }
    std::printf("  by dtype (native/pairs):");
    for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d)
      if (t.dtype_pairs[d]) std::printf(" %s %u/%u", pk::meta::dtype_name(d), t.dtype_native[d], t.dtype_pairs[d]);
    std::printf("\n\n");
  }
  std::printf(
      "fused decompositions: %zu composites, %u (op, dtype) pairs (conformance's fused:<op> rows: checked by "
      "running the fusion hook, which no capability query answers)\n",
      pk::conformance::fused_composites().size(), c.fused_pairs);
  std::printf("conformance checks %u (op, dtype) pairs on this backend: %u op pairs and %u fused\n",
              c.op_pairs() + c.fused_pairs, c.op_pairs(), c.fused_pairs);
}

const char *mark_word(char mark) {
  return mark == '+' ? "native" : mark == '~' ? "decomposed" : "unsupported";
}

// The same facts as the text, for scripts: counts per tier and dtype, and every op's answer per dtype.
std::string coverage_json(const pk_backend_info &info, const char *path, const char *device, const Coverage &c) {
  char version[64];
  std::snprintf(version, sizeof(version), "%u.%u.%u", info.version_major, info.version_minor, info.version_patch);
  std::string j = "{\"backend\": " + json_string(info.name) + ", \"vendor\": " + json_string(info.vendor) +
                  ", \"version\": \"" + version + "\", \"path\": " + json_string(path) +
                  ", \"device\": " + json_string(device) + ", \"tiers\": {";
  for (const TierCoverage &t : c.tiers) {
    j += std::string(&t == &c.tiers[0] ? "" : ", ") + json_string(t.name) + ": {\"ops\": " + std::to_string(t.ops) +
         ", \"fully_supported\": " + std::to_string(t.fully) + ", \"partly_supported\": " + std::to_string(t.partly) +
         ", \"pairs\": " + std::to_string(t.pairs) + ", \"native\": " + std::to_string(t.native) +
         ", \"decomposed\": " + std::to_string(t.decomposed) + ", \"by_dtype\": {";
    bool first = true;
    for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d) {
      if (!t.dtype_pairs[d]) continue;
      j += std::string(first ? "" : ", ") + json_string(pk::meta::dtype_name(d)) +
           ": {\"native\": " + std::to_string(t.dtype_native[d]) + ", \"pairs\": " + std::to_string(t.dtype_pairs[d]) +
           "}";
      first = false;
    }
    j += "}}";
  }
  j += "}, \"ops\": {";
  bool first_op = true;
  for (const TierCoverage &t : c.tiers) {
    for (const OpCoverage &row : t.per_op) {
      j += std::string(first_op ? "" : ", ") + json_string(row.name) + ": {\"tier\": " + json_string(t.name) +
           ", \"dtypes\": {";
      for (size_t i = 0; i < row.marks.size(); ++i) {
        j += std::string(i ? ", " : "") + json_string(pk::meta::dtype_name(row.marks[i].first)) + ": \"" +
             mark_word(row.marks[i].second) + "\"";
      }
      j += "}}";
      first_op = false;
    }
  }
  j += "}, \"fused\": {\"composites\": " + std::to_string(pk::conformance::fused_composites().size()) +
       ", \"pairs\": " + std::to_string(c.fused_pairs) +
       "}, \"conformance_pairs\": " + std::to_string(c.op_pairs() + c.fused_pairs) + "}\n";
  return j;
}

// The backend's coverage as text or (json) one document. Returns the exit status; *document receives the JSON.
int describe_backend(const std::string &backend, bool per_op, bool json, std::string *document) {
  pk_runtime_t rt = open_runtime_for(backend);
  pk_backend_t b = resolve_backend(rt, backend);
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
    const std::string why = last_error_message();
    if (json) {
      *document = "{\"backend\": " + json_string(info.name) + ", \"path\": " + json_string(pk_backend_path(b)) +
                  ", \"device\": null, \"no_device_reason\": " + json_string(why) + "}\n";
    } else {
      std::printf("%s: no devices, so no op runs here (%s)\n", info.name, why.c_str());
    }
    pk_runtime_destroy(rt);
    return 0;
  }
  pk_device_t dev;
  pk_backend_device(b, 0, &dev);
  pk_device_props props;
  PK_STRUCT_INIT(props);
  pk_device_get_props(dev, &props);
  const Coverage coverage = measure_coverage(dev);
  if (json)
    *document = coverage_json(info, pk_backend_path(b), props.name, coverage);
  else
    print_coverage_text(info, coverage, per_op);
  pk_runtime_destroy(rt);
  return 0;
}

}  // namespace

Subcommand add_info_command(CLI::App &app) {
  struct Args {
    std::string backend;
    bool per_op = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App *cmd = app.add_subcommand(
      "info", "Op coverage per tier and dtype, composites native or by decomposition, as conformance counts pairs");
  cmd->add_option("BACKEND", args->backend, "A discovered backend's name or a plugin file")->required();
  cmd->add_flag("--ops", args->per_op, "Also list every op with its dtypes: + native, ~ by decomposition, - not");
  cmd->add_flag("--json", args->json,
                "Write one JSON document on stdout instead: the counts and every op's answer per dtype");
  return {cmd, [args] {
            if (!args->json) return describe_backend(args->backend, args->per_op, false, nullptr);
            // As for `list --json`: what plugins print while they load and answer goes to stderr.
            std::string document;
            int status = 0;
            {
              StdoutToStderr quiet;
              status = describe_backend(args->backend, args->per_op, true, &document);
            }
            std::fputs(document.c_str(), stdout);
            return std::fflush(stdout) == 0 ? status : 1;
          }};
}

}  // namespace pk::cli
