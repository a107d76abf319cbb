// primkit conformance — runs the conformance suite (PrimKit::conformance) against one backend and reports
// PASS / FAIL / NOT_SUPPORTED / CRASH / TIMEOUT / NO_REFERENCE per (op, dtype).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli_common.hpp"
#include "primkit/conformance.hpp"

namespace pk::cli {

namespace {

// What the command line sets: the suite's own options and what the command does with the report.
struct ConformanceArgs {
  pk::conformance::Options suite;
  std::string profile = "quick";
  std::string dtypes;  // ','-separated names, checked against the dtype table once parsed
  std::string report_dir;
  bool require_full = false;
};

// Every option of `primkit conformance`, in one place: a new option is one more line here and, when it is not a
// plain field of pk::conformance::Options, one more step in run_conformance.
void add_conformance_options(CLI::App &cmd, ConformanceArgs &a) {
  pk::conformance::Options &o = a.suite;
  cmd.add_option("--backend", o.backend, "A discovered backend's name or a plugin file")
      ->required()
      ->type_name("NAME|PATH");
  cmd.add_option("--ops", o.ops_glob,
                 "Ops to check: shell globs on op names, ','-separated (default: all); a glob that matches no op "
                 "is an error")
      ->type_name("GLOB[,GLOB...]");
  cmd.add_option("--dtypes", a.dtypes, "Dtypes to check, ','-separated (default: every dtype an op admits)")
      ->type_name("LIST");
  cmd.add_option("--profile", a.profile, "quick (CI) or full (larger shapes, exhaustive f16/bf16 sweeps)")
      ->check(CLI::IsMember({"quick", "full"}).description(""))
      ->type_name("quick|full");
  cmd.add_option("--report", a.report_dir,
                 "Write conformance.json, conformance.md, junit.xml, conformance.html into DIR and DIR/<backend>/, "
                 "and DIR/index.html listing every backend reported into DIR")
      ->type_name("DIR");
  cmd.add_option("--expected-failures", o.expected_failures_file,
                 "Lines 'op dtype reason' (dtype may be '*'): failures there are EXPECTED_FAIL; a listed pair that "
                 "passes is an error")
      ->type_name("FILE");
  cmd.add_option("--seed", o.seed, "Seed of the random inputs (default 1)")->check(seed_validator())->type_name("N");
  cmd.add_option("--case", o.case_id,
                 "Run one case, e.g. exp.f32.strided.0 (every failure prints the whole command, with its --profile "
                 "and --seed); an unknown id is an error")
      ->type_name("ID");
  cmd.add_option("--jobs", o.jobs, "Child processes at once, at least 1 (default: the number of CPUs)")
      ->check(CLI::Range(1, 4096).description(""))
      ->type_name("N");
  cmd.add_option("--timeout", o.timeout_s,
                 "One case running longer is killed: TIMEOUT (default 20; less than 1 counts as 1)")
      ->check(CLI::Validator(CLI::PositiveNumber).description(""))
      ->type_name("SECONDS");
  std::string fused_names;  // the op table's fused_check rows
  for (const pk::meta::OpInfo *op : pk::conformance::fused_composites())
    fused_names += (fused_names.empty() ? "" : ", ") + std::string(op->name);
  cmd.add_flag_callback(
      "--no-fusion", [&o] { o.fusion = false; },
      "Skip the fused runs: by default the decompositions of " + fused_names +
          " are also compiled as graphs with fusion on and checked like the op (fused:<op> rows)");
  cmd.add_flag_callback(
      "--no-fork", [&o] { o.isolate = false; }, "Run in this process (debugging; a crash ends the run)");
  cmd.add_flag("--collectives", o.collectives,
               "Check the collectives extension instead of the ops: run under a launcher, e.g. mpirun -np 2 "
               "primkit conformance --backend cpu --collectives (every rank runs it; rank 0 reports). Rows "
               "collectives:<collective>[:<reduction>] per dtype, collectives:order, :nan_and_ties, :mismatch, "
               ":timeout, :abort, :dead_rank; --ops and --dtypes narrow them");
  cmd.add_flag_callback(
      "--no-staging", [&o] { o.collectives_staging = false; },
      "With --collectives: a strict runtime, which refuses to stage collectives through host memory (a backend "
      "without native collectives whose memory the host cannot address gets NOT_SUPPORTED rows)");
  cmd.add_flag("--failure-rows", o.collectives_failure_rows,
               "With --collectives: run the timeout, abort and dead_rank rows although the launcher is not known to "
               "survive a rank that fails (Open MPI's mpirun --enable-recovery is detected by itself)");
  cmd.add_flag("--require-full", a.require_full,
               "Also exit 3 when the run is clean but not fully conformant: primitive-tier pairs are "
               "NOT_SUPPORTED, or --ops, --dtypes, --case or --no-fusion narrowed the run (e.g. for a release gate)");
  cmd.footer(
      "A narrowed run (--ops, --dtypes, --case, --no-fusion) never reports the backend fully conformant:\n"
      "its reports say what narrowed it.\n\n"
      "Exit status: 0 if nothing FAILed, CRASHed, TIMED OUT, had NO_REFERENCE (the oracle could not\n"
      "evaluate it) or passed unexpectedly, except pairs listed in --expected-failures; 1 otherwise; 2 when\n"
      "the run could not start (bad arguments, an --ops glob or --case id that names nothing, backend not\n"
      "found, no devices); 3 with --require-full when the run is clean but not fully conformant.");
}

// The ','-separated dtype names as ids; false after reporting the first unknown name.
bool parse_dtypes(const CLI::App &cmd, const std::string &list, std::vector<int32_t> *out) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    if (!name.empty()) {
      const int32_t id = pk::meta::dtype_id(name);
      if (id < 0) {
        usage_error(cmd, "unknown dtype '" + name + "'");
        return false;
      }
      out->push_back(id);
    }
    start = end + 1;
  }
  return true;
}

// A --collectives run that left transfers abandoned or lost a rank cannot finalize MPI (it could wait forever):
// it ends here, after flushing, with the run's status. Its launcher survives that (mpirun --enable-recovery),
// and then reports success whatever the ranks return, so the exit status is also printed, for scripts and CTest.
int finish_rank(const pk::conformance::Report &report, int code) {
  if (!report.end_without_finalize) return code;
  if (report.rank == 0) std::printf("primkit conformance --collectives: exit status %d\n", code);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);
}

int run_conformance(const CLI::App &cmd, ConformanceArgs &args) {
  using namespace pk::conformance;
  Options &opt = args.suite;
  if (!parse_dtypes(cmd, args.dtypes, &opt.dtypes)) return kUsageError;
  opt.profile = args.profile == "full" ? Profile::full : Profile::quick;
  opt.timeout_s = std::max(1.0, opt.timeout_s);  // a shorter limit would kill healthy cases while they start
  const std::string &report_dir = args.report_dir;
  const bool require_full = args.require_full;
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
    const int code = exit_code(report);
    // Under a launcher every rank holds the same combined results: rank 0 alone prints and writes them.
    if (report.rank != 0) return finish_rank(report, code);
    if (tty) std::fprintf(stderr, "\r\033[K");
    std::printf("%s", summary_text(report).c_str());
    if (!report_dir.empty()) {
      write_reports(report, report_dir);
      std::printf(
          "reports: %s/conformance.{json,md,html}, %s/junit.xml (also in %s/%s/), index of backends: "
          "%s/index.html\n",
          report_dir.c_str(), report_dir.c_str(), report_dir.c_str(), report.backend.c_str(), report_dir.c_str());
    }
    if (code == 0 && require_full && !fully_conformant(report)) return finish_rank(report, 3);
    return finish_rank(report, code);
  } catch (const SetupError &e) {
    std::fprintf(stderr, "primkit conformance: %s\n", e.what());
    return 2;
  }
}

}  // namespace

Subcommand add_conformance_command(CLI::App &app) {
  auto args = std::make_shared<ConformanceArgs>();
  args->suite.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CLI::App *cmd = app.add_subcommand("conformance", "Check a backend against the oracle, per op and dtype");
  add_conformance_options(*cmd, *args);
  return {cmd, [cmd, args] { return run_conformance(*cmd, *args); }};
}

}  // namespace pk::cli
