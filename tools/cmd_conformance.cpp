// primkit conformance — runs the conformance suite (PrimKit::conformance) against one backend and reports
// PASS / FAIL / NOT_SUPPORTED / CRASH / TIMEOUT / NO_REFERENCE per (op, dtype).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "cli_common.hpp"
#include "primkit/conformance.hpp"

namespace pk::cli {

namespace {

void conformance_usage(FILE *to) {
  std::fprintf(to,
               "usage: primkit conformance --backend NAME|PATH [options]\n\n"
               "  --backend NAME|PATH        a discovered backend's name or a plugin file\n"
               "  --ops GLOB[,GLOB...]       ops to check (shell globs on op names; default: all); a glob that\n"
               "                             matches no op is an error\n"
               "  --dtypes LIST              dtypes to check, ','-separated (default: every dtype an op admits)\n"
               "  --profile quick|full       quick (CI) or full (larger shapes, exhaustive f16/bf16 sweeps)\n"
               "  --report DIR               write conformance.json, conformance.md, junit.xml, conformance.html\n"
               "                             into DIR and DIR/<backend>/, and DIR/index.html listing every backend\n"
               "                             reported into DIR\n"
               "  --expected-failures FILE   lines 'op dtype reason' (dtype may be '*'): failures there are\n"
               "                             EXPECTED_FAIL; a listed pair that passes is an error\n"
               "  --seed N                   seed of the random inputs (default 1)\n"
               "  --case ID                  run one case, e.g. exp.f32.strided.0 (every failure prints the whole\n"
               "                             command, with its --profile and --seed); an unknown id is an error\n"
               "  --jobs N                   child processes at once (default: the number of CPUs)\n"
               "  --timeout SECONDS          one case running longer is killed: TIMEOUT (default 20)\n"
               "  --no-fusion                skip the fused runs: by default the decompositions of softmax,\n"
               "                             log_softmax, layer_norm, rms_norm, gelu and silu are also compiled\n"
               "                             as graphs with fusion on and checked like the op (fused:<op> rows)\n"
               "  --no-fork                  run in this process (debugging; a crash ends the run)\n"
               "  --require-full             also exit 3 when the run is clean but not fully conformant:\n"
               "                             primitive-tier pairs are NOT_SUPPORTED, or --ops, --dtypes, --case or\n"
               "                             --no-fusion narrowed the run (e.g. for a release gate)\n\n"
               "A narrowed run (--ops, --dtypes, --case, --no-fusion) never reports the backend fully conformant:\n"
               "its reports say what narrowed it.\n\n"
               "Exit status: 0 if nothing FAILed, CRASHed, TIMED OUT, had NO_REFERENCE (the oracle could not\n"
               "evaluate it) or passed unexpectedly, except pairs listed in --expected-failures; 1 otherwise; 2 when\n"
               "the run could not start (bad arguments, an --ops glob or --case id that names nothing, backend not\n"
               "found, no devices); 3 with --require-full when the run is clean but not fully conformant.\n");
}

}  // namespace

int cmd_conformance(int argc, char **argv) {
  using namespace pk::conformance;
  Options opt;
  opt.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string report_dir;
  bool require_full = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *name) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "primkit conformance: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](const char *name, const std::string &v) -> double {
      char *end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0') {
        std::fprintf(stderr, "primkit conformance: %s: '%s' is not a number\n", name, v.c_str());
        std::exit(2);
      }
      return d;
    };
    if (a == "--backend") {
      opt.backend = value("--backend");
    } else if (a == "--ops") {
      opt.ops_glob = value("--ops");
    } else if (a == "--dtypes") {
      std::string list = value("--dtypes");
      size_t start = 0;
      while (start <= list.size()) {
        size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        std::string name = list.substr(start, end - start);
        if (!name.empty()) {
          int32_t id = pk::meta::dtype_id(name);
          if (id < 0) {
            std::fprintf(stderr, "primkit conformance: unknown dtype '%s'\n", name.c_str());
            return 2;
          }
          opt.dtypes.push_back(id);
        }
        start = end + 1;
      }
    } else if (a == "--profile") {
      std::string p = value("--profile");
      if (p != "quick" && p != "full") {
        std::fprintf(stderr, "primkit conformance: --profile is quick or full, not '%s'\n", p.c_str());
        return 2;
      }
      opt.profile = p == "full" ? Profile::full : Profile::quick;
    } else if (a == "--report") {
      report_dir = value("--report");
    } else if (a == "--expected-failures") {
      opt.expected_failures_file = value("--expected-failures");
    } else if (a == "--seed") {
      opt.seed = static_cast<uint64_t>(number("--seed", value("--seed")));
    } else if (a == "--case") {
      opt.case_id = value("--case");
    } else if (a == "--jobs") {
      opt.jobs = std::max(1, static_cast<int>(number("--jobs", value("--jobs"))));
    } else if (a == "--timeout") {
      opt.timeout_s = std::max(1.0, number("--timeout", value("--timeout")));
    } else if (a == "--no-fusion") {
      opt.fusion = false;
    } else if (a == "--no-fork") {
      opt.isolate = false;
    } else if (a == "--require-full") {
      require_full = true;
    } else if (a == "-h" || a == "--help") {
      conformance_usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "primkit conformance: unknown argument '%s'\n\n", a.c_str());
      conformance_usage(stderr);
      return 2;
    }
  }
  if (opt.backend.empty()) {
    conformance_usage(stderr);
    return 2;
  }
  // Progress: one overwritten line on a terminal; on a log, every problem plus a line per 100 pairs.
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  size_t seen = 0;
  opt.progress = [&](const std::string &line) {
    ++seen;
    const bool problem = line.find(" PASS") == std::string::npos && line.find(" NOT_SUPPORTED") == std::string::npos;
    if (tty) {
      if (problem)
        std::fprintf(stderr, "\r\033[K%s\n", line.c_str());
      else
        std::fprintf(stderr, "\r\033[K%s", line.substr(0, 100).c_str());
    } else if (problem || seen % 100 == 0) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  };
  try {
    Report report = run(opt);
    if (tty) std::fprintf(stderr, "\r\033[K");
    std::printf("%s", summary_text(report).c_str());
    if (!report_dir.empty()) {
      write_reports(report, report_dir);
      std::printf(
          "reports: %s/conformance.{json,md,html}, %s/junit.xml (also in %s/%s/), index of backends: "
          "%s/index.html\n",
          report_dir.c_str(), report_dir.c_str(), report_dir.c_str(), report.backend.c_str(), report_dir.c_str());
    }
    const int code = exit_code(report);
    if (code == 0 && require_full && !fully_conformant(report)) return 3;
    return code;
  } catch (const SetupError &e) {
    std::fprintf(stderr, "primkit conformance: %s\n", e.what());
    return 2;
  }
}

}  // namespace pk::cli
