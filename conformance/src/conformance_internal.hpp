// conformance_internal.hpp — what the parts of the conformance library share but do not publish.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "primkit/conformance.hpp"

namespace pk::conformance::detail {

// What the comparison of one case needs besides the two outputs.
struct Tolerance {
  ContractCheck check;
  uint32_t float_policy = 0;  // the device's PK_FLOAT_* bits
  int64_t reduction_length = 1;
  // Reduction checks: per output element, the magnitude the error bound scales with (the sum of |terms|);
  // empty = use the largest |expected| of the output.
  std::vector<long double> magnitude;
  // Per output element, the largest partial result any evaluation order may meet (products); empty = the
  // magnitude. Beyond the format's range an overflowed (non-finite or saturated) result is accepted.
  std::vector<long double> overflow_scale;
  // Where a term is not finite, any non-finite result matches a non-finite reference: complex products
  // (prod, cumprod: where the finite partial products overflow decides inf or NaN per part, and wider arithmetic
  // moves that) and FFTs (an infinite input times a twiddle that is 0 exactly but ±1e-17 in floating point).
  bool nonfinite_terms_any = false;
  // A zero part of a complex quotient matches a zero of either sign: C11 Annex G leaves the sign to the
  // algorithm (the textbook (ac + bd) / (c^2 + d^2) and Smith's method, which numpy and libgcc use, differ).
  bool complex_zero_sign_free = false;
  // Composite bound checks: per output element, how far the exact result moves under a backward error of N unit
  // roundoffs of the computation on every float input (see composite_sensitivity); empty = not available, and
  // the bound's absolute term is then N ulps of the output's rms.
  std::vector<long double> sensitivity;
  // Composite bound checks: per output element, the absolute term N u S of the row's `scale` (see
  // composite_absolute); empty = none.
  std::vector<long double> absolute;
};

// Outcome of comparing one output of one case.
struct OutputComparison {
  uint64_t failed_elements = 0;
  bool quality_warning = false;
  double max_ulp = 0;      // worst error in ULPs (see Check)
  double worst_ratio = 0;  // worst error / allowed error
  int64_t worst_index = -1;
  Histogram histogram;
};

// Compares `actual` (row-major bytes of expected.dtype, expected.numel elements) with the oracle's output.
// `alternative` (may be null) is a second acceptable reference: for a composite, its program run with every
// intermediate rounded; else the oracle run on inputs with subnormals flushed, for devices that declare
// PK_FLOAT_FLUSH_SUBNORMAL_INPUTS.
OutputComparison compare_output(const oracle::OutputValue &expected, const std::vector<uint8_t> &actual,
                                const Tolerance &tol, const oracle::OutputValue *alternative);

// Text of element i of a row-major byte buffer of dtype, e.g. "1.5 (0x3fc00000)".
std::string element_text(int32_t dtype, const uint8_t *bytes, int64_t i);
std::string wide_text(const oracle::Wide &w, int32_t dtype);

// Inputs with every float/complex element replaced by its magnitude (|re| + |im| for complex), the inputs on
// which the oracle gives a reduction's error scale; with `at_least_one`, by max(magnitude, 1): a product of those
// bounds every partial product in any order. A finite element's magnitude saturates at the format's largest value
// (an infinity would stand for an infinite term that is not there); infinite elements stay infinite; NaN gives 0.
std::vector<oracle::HostTensor> magnitude_inputs(const std::vector<oracle::HostTensor> &inputs,
                                                 bool at_least_one = false);

// The absolute term of a composite's bound, per element of output `output`: the largest change of the exact
// result when every float input element x is replaced by x (1 + s e) and by x (1 - s e), with s = ±1 a fixed
// pseudo-random sign per element and e = N u (N the row's bound, u the unit roundoff the composite computes with:
// 2^-24 for f32 and narrower, which compute in f32, 2^-53 for f64). A backward-stable implementation in that
// precision — the standard a careful library meets — has exactly this kind of error: where the op is badly
// conditioned (layer_norm outputs near 0, softmax entries of rows with large logits, gelu/silu tails) it is
// large, and where it is well conditioned (sigmoid and softplus tails, whose results stay relatively accurate)
// it is far below one ulp, so a flushed or overflowed tail fails. Inputs are evaluated in f64 so that the
// perturbation is representable; empty when the op cannot be evaluated that way.
std::vector<long double> composite_sensitivity(const meta::OpInfo &op, const std::vector<oracle::HostTensor> &inputs,
                                               const void *attrs, size_t output, const oracle::OutputValue &expected);

// The absolute term of a `{bound: N}` contract per output element: N u S, u the unit roundoff of the computation
// (2^-24 for f32 and narrower, 2^-53 for f64) and S what the row's `scale` names: the largest |input| at the
// element (elementwise composites, whose float inputs have the output's shape), or the largest |output| of the
// tensor (row ops). Empty for `scale: none`.
std::vector<long double> composite_absolute(const meta::OpInfo &op, const std::vector<oracle::HostTensor> &inputs,
                                            const oracle::OutputValue &expected);

// Row-major index -> byte offset of that element in a host tensor view.
int64_t element_byte_offset(const oracle::HostTensor &t, int64_t index);

// --- output layouts (output_layout.cpp) -------------------------------------------------------------------------

// One output's device storage: guard regions of poison bytes around the view, the view in the case's layout.
struct OutputView {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements; empty: row-major
  uint64_t byte_offset = 0;
  std::vector<uint8_t> storage;          // the initial contents: all poison
  std::vector<int64_t> element_offsets;  // byte offset of each logical (row-major) element
};
OutputView plan_output(OutputLayout layout, int32_t dtype, const std::vector<int64_t> &shape);
// Gathers the view's elements (row-major) from the storage read back; returns "" when every byte outside the view
// is unchanged, else what changed and where.
std::string gather_output(const OutputView &v, const std::vector<uint8_t> &storage, std::vector<uint8_t> &logical);
const char *output_layout_name(OutputLayout l);

// --- selection (selection.cpp) -------------------------------------------------------------------------------

// One (op, dtype) pair of a run.
struct Pair {
  const meta::OpInfo *op;
  int32_t dtype;
  bool fused = false;  // the op's decomposition through the fusion hook (the row's fused_check)
  std::string name() const { return fused ? std::string("fused:") + op->name : std::string(op->name); }
};

// What a run covers, decided before any backend is loaded.
struct Selection {
  std::vector<Pair> pairs;
  // The streams stage's rows the run checks (indices into kStreamStages): those whose name the --ops globs
  // match; none for a --case run.
  std::vector<size_t> stages;
  // The collectives stage's rows a --collectives run checks (indices into collective_rows()); such a run checks no
  // pair and no streams row.
  std::vector<size_t> collective_rows;
  // The case a --case run keeps, without its "fused:" prefix (the cases are the op's); empty: every case.
  std::string case_id;
  // The options that left pairs of the backend unchecked ("--ops exp", "--dtypes f32", "--case ...",
  // "--no-fusion"): such a run cannot call the backend fully conformant.
  std::vector<std::string> narrowed_by;
};
// Throws SetupError for a selection that names nothing: an --ops glob that matches no op, a --case id whose
// op, dtype or case does not exist in this profile, or no pair at all. Every message names what was not found.
Selection select_pairs(const Options &options);
// Whether name matches one of the ','-separated shell globs.
bool glob_match(const std::string &globs, const char *name);
// The case's inputs (dtype, shape, strides, byte offset of each) and note, for reports.
std::string describe_inputs(const Case &c);

// --- the backend in a child (runner.cpp) ---------------------------------------------------------------------

// A strict runtime with the backend loaded (by path without discovery, or by name). Owns the runtime.
struct Session {
  pk_runtime_t runtime = nullptr;
  pk_backend_t backend = nullptr;
  pk_device_t device = nullptr;
  std::string error;
  std::string no_devices;  // non-empty: the backend loaded but has no device (the reason)
  // strict: PK_RUNTIME_STRICT (the op cases, so that nothing falls back); the collectives stage passes false unless
  // staging is refused.
  Session(const std::string &name_or_path, uint32_t device_index, bool strict = true);
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  ~Session();
};
// "killed by signal 11 (Segmentation fault)", "exited with status 3", ... for a waitpid() status.
std::string describe_exit(int wstatus);
// The calling thread's last PrimKit error message.
std::string last_error();

// --- the streams stage (streams_stage.cpp) -----------------------------------------------------------------------

// Checks of the stream and event machinery that run once per backend run, not per op, each reported as its own
// row (op = the name below, dtype "-"): --ops selects them by these names like ops.
constexpr size_t kStreamStageCount = 4;
extern const char *const kStreamStages[kStreamStageCount];
// Whether a result row is a stage row (not an (op, dtype) pair).
bool is_stage_row(const std::string &op);
// Runs stage row `which` in this process on an opened device. Never throws: a problem is the row's status.
PairResult check_stream_stage(pk_device_t device, size_t which);
// Runs the rows in forked children (in this process when options.isolate is off), like the pairs: a child that
// dies or hangs turns the row it was in into CRASH or TIMEOUT and the rows after it run in a new child.
// `done` is called with each row's result as it comes in.
std::vector<PairResult> run_stream_stages(const Options &options, const std::vector<size_t> &rows,
                                          const std::function<void(const PairResult &)> &done);

// --- the collectives stage (collectives_stage.cpp) -----------------------------------------------------------------

// Rows checked once per rank under a launcher (op = "collectives:<name>[:<reduction>]", dtype or "-"); --ops
// selects them by name, --dtypes by dtype, in a --collectives run only.
enum class CollectiveRowKind {
  all_reduce,
  reduce_scatter,
  reduce,
  all_gather,
  broadcast,
  all_to_all,
  send_recv,
  order,
  nan_and_ties,
  mismatch,
  timeout,
  abort,
  dead_rank
};
struct CollectiveRow {
  std::string name;
  int32_t dtype = -1;      // -1: the row has no dtype ("-")
  int32_t reduce_op = -1;  // PK_REDUCE_* or -1
  CollectiveRowKind kind = CollectiveRowKind::all_reduce;
};
// Every row, in the order they run (the failure rows last, the dead rank's the very last).
const std::vector<CollectiveRow> &collective_rows();
bool is_collective_row(const std::string &op);
struct CollectivesOutcome {
  int32_t rank = 0, nranks = 1;
  bool end_without_finalize = false;
  std::string note;  // ranks, engine, and whether the failure rows ran, for the summary
};
// Runs the rows (indices into collective_rows()) in this process, on this rank; every rank of the launcher's world
// must call it with the same rows. Returns every row combined across the ranks (the worst rank's verdict); `done`
// is called with each on rank 0. Throws SetupError when the backend cannot be opened or no communicator made.
std::vector<PairResult> run_collectives_stage(const Options &options, const std::vector<size_t> &rows,
                                              CollectivesOutcome *outcome,
                                              const std::function<void(const PairResult &)> &done);

// --- report text (report.cpp), shared with the HTML pages (report_html.cpp) -----------------------------------

std::string json_string(const std::string &s);
std::string xml_escape(const std::string &s);
std::string number(double v);  // %.6g; 1e300 for non-finite and kMaxUlp
std::string percent(uint32_t n, uint32_t m);
std::string abi_text(uint32_t version);
std::string policy_text(uint32_t float_policy);
std::string narrowed_text(const Report &r);  // the narrowing options, space-separated
std::string tier_name(const PairResult &p);  // "primitive", "composite" or "stage"
// FAIL, CRASH, TIMEOUT, NO_REFERENCE and UNEXPECTED_PASS: the statuses that make the run exit 1.
bool is_problem(Status s);
// "yes", or "no: ..." / "not established: ..." with the reason, for every report format alike.
std::string conformance_verdict(const Report &r);

// --- lines between a child and its parent (wire.cpp) ---------------------------------------------------------

// What the probe child learns of the backend before any case runs.
struct ProbeInfo {
  std::string name, vendor, version, path, device, no_devices, error;
  uint32_t abi = 0, float_policy = 0;
  // Per pair: whether the capability query accepts it, and its reason. Composites it declines still run (the
  // runtime decomposes them).
  std::vector<std::pair<bool, std::string>> coverage;
};
std::string escape(const std::string &s);
std::string unescape(const std::string &s);
std::string encode(const PairResult &r);
// False for a malformed line; never throws.
bool decode(const std::string &line, PairResult &r);
std::string encode_probe(const ProbeInfo &p);
// Throws std::exception for a malformed line.
void decode_probe(const std::string &line, ProbeInfo &p);
// Writes line + '\n' in full (retrying on EINTR); gives up silently when the reader is gone.
void write_line(int fd, const std::string &line);

}  // namespace pk::conformance::detail
