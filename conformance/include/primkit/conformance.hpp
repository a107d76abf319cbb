// conformance.hpp — the PrimKit conformance suite as a library (PrimKit::conformance).
//
// `primkit conformance` is a thin command line over this header; a vendor may link the library into their own
// GoogleTest binary instead and check their backend op by op:
//
//   pk::conformance::Options opts;
//   opts.backend = "/path/to/libprimkit_backend_acme.so";
//   opts.ops_glob = "exp";
//   pk::conformance::Report r = pk::conformance::run(opts);      // forks one child per group of ops
//   EXPECT_EQ(pk::conformance::exit_code(r), 0) << pk::conformance::summary_text(r);
//
// or, inside one process on a device they opened themselves, `check_pair(device, op, dtype, ...)`.
//
// Pieces, in the order a run uses them:
//   cases   (cases.cpp)   — every case comes from the op table (pk::meta): dtypes, shapes, layouts, edge
//                           values, attribute variants; seeded and reproducible, each with a stable id.
//   compare (compare.cpp) — each (op, dtype)'s numeric contract decides how an output is compared with the
//                           oracle (pk::oracle): exact, correctly rounded, ULP bound, reduction bound.
//   runner  (runner.cpp)  — runs cases through the runtime in strict mode inside forked children; a crash or
//                           hang becomes CRASH or TIMEOUT for that (op, dtype), never the end of the run.
//   report  (report.cpp)  — console summary, conformance.json / .md / junit.xml / .html.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"
#include "primkit/oracle.hpp"
#include "primkit/primkit.h"

namespace pk::conformance {

enum class Profile { quick, full };

// Result of one (op, dtype) pair. Order matters only for display.
enum class Status {
  pass,
  quality_warning,  // within the contract's FAIL limit but beyond its tighter "quality" limit
  fail,
  not_supported,    // the backend's capability query (or a strict-mode launch) declines
  crash,            // the child process died (signal, abort, exit) while running this pair
  timeout,          // no progress within the timeout
  expected_fail,    // failed (or crashed) and listed in --expected-failures
  unexpected_pass,  // listed in --expected-failures but passed: the list is stale
  no_reference      // the oracle cannot evaluate this op/dtype: nothing was measured
};
const char *status_name(Status s);  // "PASS", "FAIL", ...

// --- cases ---------------------------------------------------------------------------------------------------

// How a case's outputs are laid out in their buffers (the strided and transposed layout variants write through
// the same layout they read). Every output also has guard regions before and after it.
enum class OutputLayout { contiguous, strided, transposed };

struct Case {
  std::string id;  // stable: "<op>.<dtype>.<variant>.<k>", e.g. "exp.f32.strided.3"
  uint32_t op_id = 0;
  int32_t dtype = 0;                       // the pair's dtype
  std::vector<oracle::HostTensor> inputs;  // any strides, byte offsets, zero strides
  std::vector<uint8_t> attrs;              // normalized attribute struct, empty if the op has none
  std::string note;                        // what the case exercises, for reports
  OutputLayout output_layout = OutputLayout::contiguous;
};

// The dtypes a pair may take for this op: the op's first type variable, or for ops without inputs (creation,
// RNG) the dtypes its `dtype` attribute admits.
std::vector<int32_t> op_dtypes(const meta::OpInfo &op);
// Every case of (op, dtype), valid by the op table's rules (invalid candidates are dropped). Deterministic in
// (op, dtype, profile, seed).
std::vector<Case> generate_cases(const meta::OpInfo &op, int32_t dtype, Profile profile, uint64_t seed);

// --- comparison ----------------------------------------------------------------------------------------------

// Largest reported distance: finite vs non-finite, NaN vs number (as StableHLO reports it).
constexpr double kMaxUlp = 1.0e300;

// How an output of an (op, dtype) is compared.
enum class Check {
  exact,              // bit-for-bit (any NaN matches any NaN)
  correctly_rounded,  // equal to the oracle's rounded value (any NaN matches any NaN; the sign of zero counts)
  ulp,                // ULP distance to the oracle's wide value <= limit
  reduction,          // |err| <= ulp(expected) + 2 * n * eps_acc * magnitude (see compare.cpp)
  composite_bound     // |err| <= N ulps of max(|expected|, rms of the output)
};
struct ContractCheck {
  Check check = Check::exact;
  double fail_limit = 0;     // ULP limit (ulp, composite_bound)
  double quality_limit = 0;  // QUALITY_WARNING limit (ulp); 0 = none
  // ulp: the row's doc promises an absolute error near the function's zeros (bessel_j0, lgamma, ...): an
  // error is measured in ULPs of max(|expected|, 1).
  bool absolute_near_zero = false;
};
const char *check_name(Check c);
// The comparison for outputs of dtype `out_dtype` of op `op`. Integer and bool outputs are always exact.
ContractCheck classify(const meta::OpInfo &op, int32_t out_dtype);

// Distance in representable values between two bit patterns of a float dtype (f16, bf16, f32, f64, fp8):
// 0 for equal values (-0 == +0) and for any two NaNs; kMaxUlp for NaN vs non-NaN and for a finite value vs an
// infinity. Integer dtypes: |a - b| as integers.
double ulp_distance_bits(int32_t dtype, uint64_t a_bits, uint64_t b_bits);
// ULP error of `actual` (bits of dtype) against an unrounded reference: |actual - wide| / ulp(wide), where
// ulp(x) is the spacing of the dtype's values at |x| (subnormal spacing below the normal range). NaN/inf rules
// as ulp_distance_bits.
double ulp_error(int32_t dtype, uint64_t actual_bits, long double wide);
// Spacing of dtype's values at |x| (the ULP of x); for a value beyond the largest finite, the top binade's.
long double ulp_of(int32_t dtype, long double x);

// Histogram of ULP distances between actual and the oracle's rounded value (StableHLO's buckets).
struct Histogram {
  uint64_t bucket[5] = {0, 0, 0, 0, 0};  // 0, 1, 2, 3, >= 4
  void add(double ulps);
};

// --- results -------------------------------------------------------------------------------------------------

struct PairResult {
  std::string op;
  std::string dtype;
  bool primitive = true;
  Status status = Status::pass;
  std::string check;       // the contract check used ("ulp 3", "exact", ...)
  uint32_t cases = 0;      // cases generated
  uint32_t cases_run = 0;  // cases launched and compared
  uint32_t cases_failed = 0;
  uint32_t cases_not_supported = 0;  // declined by the capability query / strict launch
  uint32_t cases_no_reference = 0;   // the oracle could not evaluate them
  double max_ulp = 0;                // worst ULP error (ulp/bound checks) or ULP distance (exact checks)
  double worst_ratio = 0;            // worst error / allowed error (> 1 fails)
  Histogram histogram;
  std::string worst_case;    // case id of the worst element
  int64_t worst_index = -1;  // its row-major output index
  std::string worst_detail;  // inputs, expected (rounded and wide) and actual at the worst element
  // The worst (or crashing, hanging) case's inputs: dtype, shape, strides, offset of each, and what the case
  // exercises; what a reader needs to rebuild the failing launch without re-running it.
  std::string worst_inputs;
  std::string message;          // why it failed / is not supported / crashed
  std::string expected_reason;  // from --expected-failures
  double seconds = 0;
  // How the backend runs the pair, from its capability query: "native" (it accepts the op), "decomposition"
  // (a composite it declines: the runtime runs the op's decomposition into the backend's primitives), "fusion"
  // (fused:<op> rows) or "" (not supported, or not known).
  std::string implementation;
};

struct Summary {
  uint32_t pass = 0, fail = 0, not_supported = 0, crash = 0, timeout = 0, quality_warning = 0, expected_fail = 0,
           unexpected_pass = 0, no_reference = 0;
  uint32_t total = 0;
  uint32_t primitive_not_supported = 0;
};

struct Report {
  std::string backend;           // the backend's info name
  std::string backend_argument;  // what --backend said (a name or a path), for reproducer lines
  std::string backend_path;
  std::string vendor;
  std::string backend_version;
  uint32_t abi_version = 0;  // negotiated with the plugin
  std::string device;
  uint32_t float_policy = 0;
  std::string profile;
  uint64_t seed = 0;
  double timeout_s = 0;  // the per-case timeout the run used (0: not recorded)
  // Non-empty: the run checked part of the backend only (the options that narrowed it, e.g. "--ops exp,add"),
  // so it cannot say the backend is fully conformant.
  std::vector<std::string> narrowed_by;
  double seconds = 0;
  std::vector<PairResult> results;  // op table order, then dtype order
  // A --collectives run: this process's rank and the rank count (rank 0 reports; every rank returns the same
  // results), and what the summary says about the run (ranks, engine, whether the failure rows ran).
  int32_t rank = 0;
  int32_t nranks = 1;
  std::string collectives_note;
  // A --collectives run left transfers abandoned or a rank died: MPI_Finalize could wait forever, so the process
  // must end with _exit (after flushing its output) instead of returning from main.
  bool end_without_finalize = false;
  Summary summary() const;
};

// --- running -------------------------------------------------------------------------------------------------

struct Options {
  std::string backend;          // name (found by discovery) or plugin path
  std::string ops_glob = "*";   // shell glob(s) on op names, ','-separated
  std::vector<int32_t> dtypes;  // empty: every dtype the op admits
  Profile profile = Profile::quick;
  uint64_t seed = 1;
  std::string case_id;                 // run only this case (its op and dtype are taken from the id)
  int jobs = 1;                        // children running at once
  double timeout_s = 20;               // one case running longer is killed: TIMEOUT
  int ops_per_group = 6;               // ops run by one child
  bool isolate = true;                 // false: run everything in this process (debugging)
  bool fusion = true;                  // also run the fused decompositions of fused_composites() ("fused:<op>")
  std::string expected_failures_file;  // lines "op dtype reason"; dtype may be '*'
  uint32_t device_index = 0;
  // The collectives stage instead of the op pairs and the streams stage: run under a launcher (mpirun -np N), every
  // rank runs it (see docs/collectives.md). --ops and --dtypes narrow its rows.
  bool collectives = false;
  // false: a strict runtime, which refuses staging through host memory (rows of a backend without native
  // collectives whose memory the host cannot address are then NOT_SUPPORTED).
  bool collectives_staging = true;
  // Run the timeout, abort and dead-rank rows even where the launcher is not known to survive a failed rank (they
  // run by themselves under Open MPI's mpirun --enable-recovery).
  bool collectives_failure_rows = false;
  // Progress lines (stderr in the CLI); empty = silent.
  std::function<void(const std::string &)> progress;
};

// Thrown for problems that stop a run before any case runs: backend not found, no devices, bad options.
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs the suite. Throws SetupError (e.g. "no devices: <reason>").
Report run(const Options &options);
// 0 iff no FAIL, CRASH, TIMEOUT, NO_REFERENCE or UNEXPECTED_PASS (and no setup error). A pair the oracle
// cannot evaluate measured nothing of the backend: it counts against the run unless --expected-failures lists
// it.
int exit_code(const Report &report);
// True only for a run of every pair (not narrowed) that exits 0 with every primitive-tier pair supported.
bool fully_conformant(const Report &report);

// Runs every case of one (op, dtype) on an opened device through `stream`'s runtime, in this process. The
// runtime should be strict (PK_RUNTIME_STRICT) so that the backend's own result is measured. `on_case` (may
// be empty) is called with each case id before the oracle evaluates it; `on_backend` (may be empty) with true
// when the backend is about to run it and false when the oracle takes over again to compare (so a hang or crash
// is blamed on the right side).
PairResult check_pair(pk_device_t device, const meta::OpInfo &op, int32_t dtype, Profile profile, uint64_t seed,
                      const std::string &only_case = "",
                      const std::function<void(const std::string &)> &on_case = nullptr,
                      const std::function<void(bool)> &on_backend = nullptr, bool fused = false);

// The composites whose decompositions are also checked fused (fused = true above, results named "fused:<op>"):
// each case's decomposition is built as a graph of primitives, compiled for the device with fusion on, so the
// graph compiler offers its elementwise chains and row programs to the backend's fusion hook, and run; the
// result is held to the composite's contract against the oracle, like the unfused launch (a reference with the
// decomposition's intermediates rounded is accepted too). A case whose graph gets no fused kernel is
// NOT_SUPPORTED: the backend's hook declined it.
// They are the composite rows of the op table with `fused_check: true`, in id order.
std::vector<const meta::OpInfo *> fused_composites();

// The same, by op and dtype name ("exp", "f32"); a PairResult with status NO_REFERENCE and a message if either
// name is unknown.
PairResult check_pair(pk_device_t device, const std::string &op_name, const std::string &dtype_name,
                      Profile profile = Profile::quick, uint64_t seed = 1);

// Expected failures: (op, dtype or "*") -> reason.
std::map<std::pair<std::string, std::string>, std::string> parse_expected_failures(const std::string &text);
// Applies the list: FAIL/CRASH/TIMEOUT/QUALITY_WARNING/NO_REFERENCE -> EXPECTED_FAIL, PASS -> UNEXPECTED_PASS.
void apply_expected_failures(Report &report,
                             const std::map<std::pair<std::string, std::string>, std::string> &expected);

// --- reports -------------------------------------------------------------------------------------------------

// The command that re-runs one case: every option that decides the case's inputs (profile, seed) or its
// outcome (a non-default timeout, timeout_s > 0) is spelled out, so the command reruns exactly that case.
std::string reproducer(const std::string &backend, const std::string &case_id, Profile profile = Profile::quick,
                       uint64_t seed = 1, double timeout_s = 0);
// The same for a case of a report (its backend argument, profile, seed and timeout).
std::string reproducer(const Report &report, const std::string &case_id);
// "Passed n/m (x %)" plus the counts per status and the conformance verdict.
std::string summary_text(const Report &report);
std::string to_json(const Report &report);
std::string to_markdown(const Report &report);
std::string to_junit(const Report &report);
std::string to_html(const Report &report);
// Writes conformance.json, conformance.md, junit.xml and conformance.html into dir (created if missing), the
// same four into dir/<backend>/ (so that runs of several backends into one folder keep each backend's), and
// dir/index.html: every backend reported into dir, with its summary and a link to its page.
void write_reports(const Report &report, const std::string &dir);
// The cross-backend index.html of a report folder, from the dir/<backend>/conformance.json files in it.
std::string index_html(const std::string &dir);

// --- coverage ------------------------------------------------------------------------------------------------

// The capability query for one (op, dtype) pair as the runner asks it (operands of the first type variable
// take dtype; creation ops get dtype as their `dtype` attribute). `primkit info` asks the same question, so its
// counts and the suite's agree. Returns whether the backend accepts; reason receives its words.
bool query_support(pk_device_t device, const meta::OpInfo &op, int32_t dtype, std::string *reason);

}  // namespace pk::conformance
