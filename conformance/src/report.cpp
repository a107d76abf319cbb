// report.cpp — what a conformance run tells people: the console summary, conformance.json (for tools),
// conformance.md (for docs), junit.xml (for CI) and conformance.html (one self-contained page with the op x
// dtype matrix).

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "conformance_internal.hpp"

namespace pk::conformance {

namespace detail {

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string xml_escape(const std::string &s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (c < 0x20 && c != '\n' && c != '\t')
          out += ' ';
        else
          out += static_cast<char>(c);
    }
  }
  return out;
}

std::string number(double v) {
  if (!std::isfinite(v) || v >= kMaxUlp) return "1e300";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string percent(uint32_t n, uint32_t m) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", m ? 100.0 * n / m : 0.0);
  return buf;
}

std::string abi_text(uint32_t v) {
  return std::to_string(PK_VERSION_MAJOR(v)) + "." + std::to_string(PK_VERSION_MINOR(v));
}

std::string policy_text(uint32_t f) {
  std::string s;
  if (f & PK_FLOAT_FLUSH_SUBNORMAL_OUTPUTS) s += "ftz ";
  if (f & PK_FLOAT_FLUSH_SUBNORMAL_INPUTS) s += "daz ";
  if (f & PK_FLOAT_FAST_MATH_TRANSCENDENTALS) s += "fast-transcendentals ";
  if (!s.empty()) s.pop_back();
  return s.empty() ? "ieee" : s;
}

std::string narrowed_text(const Report &r) {
  std::string s;
  for (const std::string &n : r.narrowed_by) s += (s.empty() ? "" : " ") + n;
  return s;
}

bool is_problem(Status s) {
  return s == Status::fail || s == Status::crash || s == Status::timeout || s == Status::unexpected_pass ||
         s == Status::no_reference;
}

std::string conformance_verdict(const Report &r) {
  // A definite "no" outranks narrowing: a failure or a missing primitive is known whatever was left out.
  const Summary s = r.summary();
  if (exit_code(r) != 0) return "no: the run has problems";
  if (s.primitive_not_supported > 0)
    return "no: " + std::to_string(s.primitive_not_supported) + " primitive-tier (op, dtype) pairs are NOT_SUPPORTED";
  if (!r.narrowed_by.empty())
    return "not established: a narrowed run (" + narrowed_text(r) + ") checks part of the backend only";
  return "yes";
}

// A row's tier: an op's ("primitive", "composite"), or "stage" for a row of the streams stage, which checks the
// stream and event machinery rather than an op.
std::string tier_name(const PairResult &p) {
  if (is_stage_row(p.op)) return "stage";
  return p.primitive ? "primitive" : "composite";
}

}  // namespace detail

using namespace detail;

std::string reproducer(const std::string &backend, const std::string &case_id, Profile profile, uint64_t seed,
                       double timeout_s) {
  // Profile and seed are always written, even at their defaults: the line must rerun the same inputs whatever
  // the defaults become.
  std::string s = "primkit conformance --backend " + backend + " --profile " +
                  (profile == Profile::full ? "full" : "quick") + " --seed " + std::to_string(seed);
  if (timeout_s > 0 && timeout_s != Options{}.timeout_s) s += " --timeout " + number(timeout_s);
  return s + " --case " + case_id;
}

std::string reproducer(const Report &r, const std::string &case_id) {
  return reproducer(r.backend_argument.empty() ? r.backend : r.backend_argument, case_id,
                    r.profile == "full" ? Profile::full : Profile::quick, r.seed, r.timeout_s);
}

std::string summary_text(const Report &r) {
  Summary s = r.summary();
  const uint32_t passed = s.pass + s.quality_warning;
  std::ostringstream o;
  o << "Passed " << passed << "/" << s.total << " (" << percent(passed, s.total) << " %)";
  o << "  [pass " << s.pass << ", quality_warning " << s.quality_warning << ", fail " << s.fail << ", not_supported "
    << s.not_supported << ", crash " << s.crash << ", timeout " << s.timeout << ", expected_fail " << s.expected_fail
    << ", unexpected_pass " << s.unexpected_pass << ", no_reference " << s.no_reference << "]\n";
  o << "backend " << r.backend << " " << r.backend_version << " (ABI " << abi_text(r.abi_version) << "), device "
    << r.device << ", profile " << r.profile << ", seed " << r.seed << ", " << number(r.seconds) << " s\n";
  if (s.primitive_not_supported > 0) {
    o << "NOT FULLY CONFORMANT: " << s.primitive_not_supported
      << " primitive-tier (op, dtype) pairs are NOT_SUPPORTED (every conformant backend implements the primitive "
         "tier)\n";
  }
  if (!r.collectives_note.empty()) o << r.collectives_note << "\n";
  if (!r.narrowed_by.empty()) o << "NARROWED RUN (" << narrowed_text(r) << "): only part of the backend was checked\n";
  for (const PairResult &p : r.results) {
    if (!is_problem(p.status)) continue;
    o << "  " << status_name(p.status) << " " << p.op << " " << p.dtype;
    if (p.status == Status::fail) o << " (max " << number(p.max_ulp) << " ulp)";
    o << ": " << p.message << "\n";
    if (!p.worst_inputs.empty()) o << "    inputs: " << p.worst_inputs << "\n";
    if (!p.worst_detail.empty()) o << "    " << p.worst_detail << "\n";
    if (!p.worst_case.empty()) o << "    reproduce: " << reproducer(r, p.worst_case) << "\n";
  }
  o << "fully conformant: " << conformance_verdict(r) << "\n";
  o << (exit_code(r) == 0 ? "RESULT: OK (no FAIL, CRASH, TIMEOUT, NO_REFERENCE or unexpected pass)\n"
                          : "RESULT: FAILED\n");
  return o.str();
}

std::string to_json(const Report &r) {
  Summary s = r.summary();
  std::ostringstream o;
  o << "{\n  \"backend\": " << json_string(r.backend) << ",\n  \"backend_path\": " << json_string(r.backend_path)
    << ",\n  \"vendor\": " << json_string(r.vendor) << ",\n  \"backend_version\": " << json_string(r.backend_version)
    << ",\n  \"abi_version\": " << json_string(abi_text(r.abi_version)) << ",\n  \"device\": " << json_string(r.device)
    << ",\n  \"float_policy\": " << json_string(policy_text(r.float_policy))
    << ",\n  \"profile\": " << json_string(r.profile) << ",\n  \"seed\": " << r.seed
    << ",\n  \"timeout_s\": " << number(r.timeout_s) << ",\n  \"seconds\": " << number(r.seconds) << ",\n";
  o << "  \"summary\": {\"total\": " << s.total << ", \"pass\": " << s.pass << ", \"fail\": " << s.fail
    << ", \"not_supported\": " << s.not_supported << ", \"crash\": " << s.crash << ", \"timeout\": " << s.timeout
    << ", \"quality_warning\": " << s.quality_warning << ", \"expected_fail\": " << s.expected_fail
    << ", \"unexpected_pass\": " << s.unexpected_pass << ", \"no_reference\": " << s.no_reference
    << ", \"primitive_not_supported\": " << s.primitive_not_supported
    << ", \"fully_conformant\": " << (fully_conformant(r) ? "true" : "false")
    << ", \"narrowed\": " << (r.narrowed_by.empty() ? "false" : "true") << ", \"narrowed_by\": [";
  for (size_t i = 0; i < r.narrowed_by.size(); ++i) o << (i ? ", " : "") << json_string(r.narrowed_by[i]);
  o << "]},\n  \"results\": [";
  for (size_t i = 0; i < r.results.size(); ++i) {
    const PairResult &p = r.results[i];
    o << (i ? ",\n" : "\n") << "    {\"op\": " << json_string(p.op) << ", \"dtype\": " << json_string(p.dtype)
      << ", \"tier\": " << json_string(tier_name(p)) << ", \"status\": " << json_string(status_name(p.status))
      << ", \"check\": " << json_string(p.check) << ", \"cases\": " << p.cases << ", \"cases_run\": " << p.cases_run
      << ", \"cases_failed\": " << p.cases_failed << ", \"cases_not_supported\": " << p.cases_not_supported
      << ", \"max_ulp\": " << number(p.max_ulp) << ", \"worst_ratio\": " << number(p.worst_ratio)
      << ", \"ulp_histogram\": [" << p.histogram.bucket[0] << ", " << p.histogram.bucket[1] << ", "
      << p.histogram.bucket[2] << ", " << p.histogram.bucket[3] << ", " << p.histogram.bucket[4]
      << "], \"seconds\": " << number(p.seconds);
    if (!p.worst_case.empty()) {
      o << ", \"worst_case\": " << json_string(p.worst_case) << ", \"worst_index\": " << p.worst_index
        << ", \"reproducer\": " << json_string(reproducer(r, p.worst_case));
    }
    if (!p.worst_detail.empty()) o << ", \"worst\": " << json_string(p.worst_detail);
    if (!p.worst_inputs.empty()) o << ", \"worst_inputs\": " << json_string(p.worst_inputs);
    if (!p.implementation.empty()) o << ", \"implementation\": " << json_string(p.implementation);
    if (!p.message.empty()) o << ", \"message\": " << json_string(p.message);
    if (!p.expected_reason.empty()) o << ", \"expected_failure_reason\": " << json_string(p.expected_reason);
    o << "}";
  }
  o << "\n  ]\n}\n";
  return o.str();
}

std::string to_markdown(const Report &r) {
  Summary s = r.summary();
  std::ostringstream o;
  o << "# Conformance: " << r.backend << "\n\n";
  o << "Backend `" << r.backend << "` " << r.backend_version << " (" << r.vendor << "), ABI " << abi_text(r.abi_version)
    << ", device " << r.device << ", floats: " << policy_text(r.float_policy) << ". Profile " << r.profile << ", seed "
    << r.seed << ", " << number(r.seconds) << " s.\n\n";
  const uint32_t passed = s.pass + s.quality_warning;
  o << "**Passed " << passed << "/" << s.total << " (" << percent(passed, s.total) << " %)**";
  o << "\n\nFully conformant: **" << conformance_verdict(r) << "**.";
  o << "\n\n| status | pairs |\n|---|---|\n";
  const std::pair<const char *, uint32_t> rows[] = {{"PASS", s.pass},
                                                    {"QUALITY_WARNING", s.quality_warning},
                                                    {"FAIL", s.fail},
                                                    {"NOT_SUPPORTED", s.not_supported},
                                                    {"CRASH", s.crash},
                                                    {"TIMEOUT", s.timeout},
                                                    {"EXPECTED_FAIL", s.expected_fail},
                                                    {"UNEXPECTED_PASS", s.unexpected_pass},
                                                    {"NO_REFERENCE", s.no_reference}};
  for (const auto &row : rows) o << "| " << row.first << " | " << row.second << " |\n";
  o << "\n## Problems\n\n";
  bool any = false;
  for (const PairResult &p : r.results) {
    if (!is_problem(p.status) && p.status != Status::quality_warning && p.status != Status::expected_fail) continue;
    any = true;
    o << "- **" << status_name(p.status) << "** `" << p.op << "` " << p.dtype << " — max " << number(p.max_ulp)
      << " ulp: " << p.message << "\n";
    if (!p.worst_inputs.empty()) o << "  - inputs: " << p.worst_inputs << "\n";
    if (!p.worst_detail.empty()) o << "  - worst: " << p.worst_detail << "\n";
    if (!p.worst_case.empty()) o << "  - reproduce: `" << reproducer(r, p.worst_case) << "`\n";
  }
  if (!any) o << "None.\n";
  o << "\n## All results\n\n| op | dtype | tier | status | check | cases | max ULP | ULP histogram 0/1/2/3/>=4 |\n"
       "|---|---|---|---|---|---|---|---|\n";
  for (const PairResult &p : r.results) {
    o << "| " << p.op << " | " << p.dtype << " | " << tier_name(p) << " | " << status_name(p.status) << " | " << p.check
      << " | " << p.cases_run << "/" << p.cases << " | " << number(p.max_ulp) << " | " << p.histogram.bucket[0] << "/"
      << p.histogram.bucket[1] << "/" << p.histogram.bucket[2] << "/" << p.histogram.bucket[3] << "/"
      << p.histogram.bucket[4] << " |\n";
  }
  return o.str();
}

std::string to_junit(const Report &r) {
  Summary s = r.summary();
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"primkit-conformance\" tests=\"" << s.total << "\" failures=\"" << s.fail + s.unexpected_pass
    << "\" errors=\"" << s.crash + s.timeout + s.no_reference << "\" time=\"" << number(r.seconds) << "\">\n";
  std::map<std::string, std::vector<const PairResult *>> by_op;
  std::vector<std::string> order;
  for (const PairResult &p : r.results) {
    if (!by_op.count(p.op)) order.push_back(p.op);
    by_op[p.op].push_back(&p);
  }
  for (const std::string &op : order) {
    const auto &list = by_op[op];
    o << "  <testsuite name=\"" << xml_escape(r.backend + "." + op) << "\" tests=\"" << list.size() << "\">\n";
    for (const PairResult *p : list) {
      o << "    <testcase classname=\"" << xml_escape(r.backend + "." + op) << "\" name=\"" << xml_escape(p->dtype)
        << "\" time=\"" << number(p->seconds) << "\">";
      std::string detail = p->message + (p->worst_detail.empty() ? "" : "\n" + p->worst_detail) +
                           (p->worst_case.empty() ? "" : "\nreproduce: " + reproducer(r, p->worst_case));
      switch (p->status) {
        case Status::fail:
        case Status::unexpected_pass:
          o << "<failure message=\"" << xml_escape(status_name(p->status)) << "\">" << xml_escape(detail)
            << "</failure>";
          break;
        case Status::crash:
        case Status::timeout:
        case Status::no_reference:  // nothing was measured: the run cannot vouch for this pair
          o << "<error message=\"" << xml_escape(status_name(p->status)) << "\">" << xml_escape(detail) << "</error>";
          break;
        case Status::not_supported:
        case Status::expected_fail:
          o << "<skipped message=\"" << xml_escape(std::string(status_name(p->status)) + ": " + p->message) << "\"/>";
          break;
        case Status::quality_warning:
          o << "<system-out>" << xml_escape("QUALITY_WARNING: " + detail) << "</system-out>";
          break;
        case Status::pass:
          break;
      }
      o << "</testcase>\n";
    }
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  return o.str();
}

namespace {

// A folder name for the backend: its name with anything but letters, digits, '-', '_' and '.' replaced, so a
// backend cannot write outside the report folder.
std::string folder_name(const std::string &backend) {
  std::string s;
  for (char c : backend) s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  if (s.empty() || s[0] == '.') s = "_" + s;
  return s;
}

void write_files(const Report &report, const std::string &dir) {
  std::error_code ec;  // parents too, like mkdir -p: a report path under a fresh build tree must just work
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir)) throw SetupError("cannot create the folder " + dir);
  const std::pair<const char *, std::string> files[] = {{"conformance.json", to_json(report)},
                                                        {"conformance.md", to_markdown(report)},
                                                        {"junit.xml", to_junit(report)},
                                                        {"conformance.html", to_html(report)}};
  for (const auto &f : files) {
    std::ofstream out(dir + "/" + f.first);
    out << f.second;
    if (!out) throw SetupError("cannot write " + dir + "/" + f.first);
  }
}

}  // namespace

void write_reports(const Report &report, const std::string &dir) {
  // The folder's own files are this run's (what tools have always read there); the backend's sub-folder keeps
  // them after a run of another backend into the same folder, and index.html lists every backend there.
  write_files(report, dir);
  write_files(report, dir + "/" + folder_name(report.backend));
  std::ofstream out(dir + "/index.html");
  out << index_html(dir);
  if (!out) throw SetupError("cannot write " + dir + "/index.html");
}

}  // namespace pk::conformance
