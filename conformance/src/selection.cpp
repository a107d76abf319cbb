// selection.cpp — which (op, dtype) pairs and cases a run covers (--ops, --dtypes, --case, --no-fusion), decided
// in the parent before any backend is loaded.
//
// The selection must tell the truth about itself: a glob or case id that names nothing is an error naming it
// (a typo must not turn into a quiet, smaller run that passes), and a run that leaves pairs out records what
// left them out, so that its reports never call the backend fully conformant.
#include <fnmatch.h>

#include <algorithm>

#include "conformance_internal.hpp"

namespace pk::conformance::detail {

namespace {

using meta::OpInfo;

std::vector<std::string> split_commas(const std::string &list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string dtype_list(const std::vector<int32_t> &dtypes) {
  std::string s;
  for (int32_t d : dtypes) s += (s.empty() ? "" : ",") + std::string(meta::dtype_name(d));
  return s;
}

bool is_fused_composite(const OpInfo &op) {
  return op.fused_check;
}

const char *profile_name(Profile p) {
  return p == Profile::full ? "full" : "quick";
}

// The --case id must name a case the run will generate: otherwise the children would run nothing and the pair
// would read as "no valid case", far from the typo that caused it.
void check_case_exists(const Options &opt, const Pair &pair, const std::string &case_id, const std::string &as_given) {
  const std::vector<Case> cases = generate_cases(*pair.op, pair.dtype, opt.profile, opt.seed);
  for (const Case &c : cases)
    if (c.id == case_id) return;
  std::string msg = "case id '" + as_given + "' does not exist in the " + profile_name(opt.profile) + " profile";
  const Profile other = opt.profile == Profile::full ? Profile::quick : Profile::full;
  for (const Case &c : generate_cases(*pair.op, pair.dtype, other, opt.seed))
    if (c.id == case_id) throw SetupError(msg + " (it is a case of --profile " + profile_name(other) + ")");
  msg += "; " + pair.name() + " " + meta::dtype_name(pair.dtype) + " has " + std::to_string(cases.size()) + " cases";
  for (size_t i = 0; i < cases.size() && i < 6; ++i) msg += (i ? ", " : ": ") + cases[i].id;
  if (cases.size() > 6) msg += ", ...";
  throw SetupError(msg);
}

}  // namespace

bool glob_match(const std::string &globs, const char *name) {
  for (const std::string &g : split_commas(globs))
    if (fnmatch(g.c_str(), name, 0) == 0) return true;
  return false;
}

std::string describe_inputs(const Case &c) {
  std::string s;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const oracle::HostTensor &t = c.inputs[i];
    s += (i ? "; in" : "in") + std::to_string(i) + " " + meta::dtype_name(t.dtype) + "[";
    for (size_t k = 0; k < t.shape.size(); ++k) s += (k ? "," : "") + std::to_string(t.shape[k]);
    s += "]";
    if (!t.strides.empty()) {
      s += " strides [";
      for (size_t k = 0; k < t.strides.size(); ++k) s += (k ? "," : "") + std::to_string(t.strides[k]);
      s += "]";
    }
    if (t.byte_offset) s += " offset " + std::to_string(t.byte_offset) + " B";
  }
  if (c.inputs.empty()) s = "no inputs";
  if (!c.note.empty()) s += " (" + c.note + ")";
  return s;
}

namespace {

// A --collectives run: the collectives stage's rows that --ops and --dtypes keep, and nothing else.
Selection select_collective_rows(const Options &options) {
  Selection sel;
  if (!options.case_id.empty()) throw SetupError("--case does not apply to --collectives (its rows have no cases)");
  const std::vector<CollectiveRow> &rows = collective_rows();
  for (const std::string &g : split_commas(options.ops_glob)) {
    bool any = false;
    for (const CollectiveRow &r : rows) any = any || fnmatch(g.c_str(), r.name.c_str(), 0) == 0;
    if (!any)
      throw SetupError("--ops: '" + g + "' matches no row of the collectives stage (" + rows.front().name + ", " +
                       "collectives:order, collectives:dead_rank, ...)");
  }
  bool ops_left_out = false, dtypes_left_out = false;
  for (size_t k = 0; k < rows.size(); ++k) {
    if (!glob_match(options.ops_glob, rows[k].name.c_str())) {
      ops_left_out = true;
      continue;
    }
    // Rows without a dtype (mismatch, timeout, ...) are not narrowed by --dtypes.
    if (rows[k].dtype >= 0 && !options.dtypes.empty() &&
        std::find(options.dtypes.begin(), options.dtypes.end(), rows[k].dtype) == options.dtypes.end()) {
      dtypes_left_out = true;
      continue;
    }
    sel.collective_rows.push_back(k);
  }
  // The op pairs and the streams stage are another run's: a collectives run never calls the backend conformant.
  sel.narrowed_by.push_back("--collectives");
  if (ops_left_out) sel.narrowed_by.push_back("--ops " + options.ops_glob);
  if (dtypes_left_out) sel.narrowed_by.push_back("--dtypes " + dtype_list(options.dtypes));
  if (sel.collective_rows.empty())
    throw SetupError("no row of the collectives stage matches --ops " + options.ops_glob +
                     (options.dtypes.empty() ? "" : " --dtypes " + dtype_list(options.dtypes)));
  return sel;
}

}  // namespace

Selection select_pairs(const Options &options) {
  if (options.collectives) return select_collective_rows(options);
  Selection sel;
  // A case id names the fused run of a composite as "fused:<op>.<dtype>.<variant>.<k>"; the cases themselves
  // are the op's.
  const std::string fused_prefix = "fused:";
  const bool only_fused = options.case_id.compare(0, fused_prefix.size(), fused_prefix) == 0;
  sel.case_id = only_fused ? options.case_id.substr(fused_prefix.size()) : options.case_id;

  if (!sel.case_id.empty()) {
    const std::string &id = sel.case_id, &given = options.case_id;
    const size_t d1 = id.find('.'), d2 = d1 == std::string::npos ? d1 : id.find('.', d1 + 1);
    if (d2 == std::string::npos) throw SetupError("case id '" + given + "' is not <op>.<dtype>.<variant>.<k>");
    const std::string op_name = id.substr(0, d1), dtype_name = id.substr(d1 + 1, d2 - d1 - 1);
    const OpInfo *op = meta::find_op(op_name);
    if (op == nullptr) throw SetupError("case id '" + given + "': no op named " + op_name);
    if (only_fused && !is_fused_composite(*op))
      throw SetupError("case id '" + given + "': " + op_name + " has no fused run");
    const int32_t dtype = meta::dtype_id(dtype_name);
    const std::vector<int32_t> admitted = op_dtypes(*op);
    if (dtype < 0 || std::find(admitted.begin(), admitted.end(), dtype) == admitted.end())
      throw SetupError("case id '" + given + "': " + op_name + " takes no dtype '" + dtype_name + "' (it takes " +
                       dtype_list(admitted) + ")");
    if (!options.dtypes.empty() &&
        std::find(options.dtypes.begin(), options.dtypes.end(), dtype) == options.dtypes.end())
      throw SetupError("case id '" + given + "': its dtype " + dtype_name + " is left out by --dtypes " +
                       dtype_list(options.dtypes));
    sel.pairs.push_back({op, dtype, only_fused});
    check_case_exists(options, sel.pairs.back(), sel.case_id, given);
    sel.narrowed_by.push_back("--case " + given);
    return sel;
  }

  // Every glob must match an op or a stage row: "exp,lgo" must not quietly check exp alone.
  for (const std::string &g : split_commas(options.ops_glob)) {
    bool any = false;
    for (const OpInfo *op = meta::ops_begin(); op != meta::ops_end() && !any; ++op)
      any = fnmatch(g.c_str(), op->name, 0) == 0;
    for (const char *stage : kStreamStages) any = any || fnmatch(g.c_str(), stage, 0) == 0;
    if (!any) throw SetupError("--ops: '" + g + "' matches no op and no stage (" + kStreamStages[0] + ", ...)");
  }
  bool ops_left_out = false, dtypes_left_out = false;
  auto add_pairs = [&](const OpInfo &op, bool fused) {
    if (!glob_match(options.ops_glob, op.name)) {
      ops_left_out = true;
      return;
    }
    for (int32_t d : op_dtypes(op)) {
      if (!options.dtypes.empty() &&
          std::find(options.dtypes.begin(), options.dtypes.end(), d) == options.dtypes.end()) {
        dtypes_left_out = true;
        continue;
      }
      sel.pairs.push_back({&op, d, fused});
    }
  };
  for (const OpInfo *op = meta::ops_begin(); op != meta::ops_end(); ++op) add_pairs(*op, false);
  if (options.fusion) {
    for (const OpInfo *op : fused_composites()) add_pairs(*op, true);
  }
  // The streams stage is named like ops so that --ops keeps or drops it; it has no dtype, so --dtypes does not
  // narrow it. A stage left out narrows the run like a left-out op.
  for (size_t k = 0; k < kStreamStageCount; ++k) {
    if (glob_match(options.ops_glob, kStreamStages[k]))
      sel.stages.push_back(k);
    else
      ops_left_out = true;
  }
  if (ops_left_out) sel.narrowed_by.push_back("--ops " + options.ops_glob);
  if (dtypes_left_out) sel.narrowed_by.push_back("--dtypes " + dtype_list(options.dtypes));
  if (!options.fusion) sel.narrowed_by.push_back("--no-fusion");
  if (sel.pairs.empty() && sel.stages.empty()) {
    throw SetupError("no (op, dtype) pair matches --ops " + options.ops_glob +
                     (options.dtypes.empty() ? "" : " --dtypes " + dtype_list(options.dtypes)));
  }
  return sel;
}

}  // namespace pk::conformance::detail
