// report.cpp — what a conformance run tells people: the console summary, conformance.json (for tools),
// conformance.md (for docs), junit.xml (for CI) and conformance.html (one self-contained page with the op x
// dtype matrix).

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "conformance_internal.hpp"

namespace pk::conformance {

namespace {

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

bool is_problem(Status s) {
  return s == Status::fail || s == Status::crash || s == Status::timeout || s == Status::unexpected_pass;
}

std::string reproduce_backend(const Report &r) {
  return r.backend_argument.empty() ? r.backend : r.backend_argument;
}

}  // namespace

std::string reproducer(const std::string &backend, const std::string &case_id) {
  return "primkit conformance --backend " + backend + " --case " + case_id;
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
  for (const PairResult &p : r.results) {
    if (!is_problem(p.status)) continue;
    o << "  " << status_name(p.status) << " " << p.op << " " << p.dtype;
    if (p.status == Status::fail) o << " (max " << number(p.max_ulp) << " ulp)";
    o << ": " << p.message << "\n";
    if (!p.worst_detail.empty()) o << "    " << p.worst_detail << "\n";
    if (!p.worst_case.empty()) o << "    reproduce: " << reproducer(reproduce_backend(r), p.worst_case) << "\n";
  }
  o << (exit_code(r) == 0 ? "RESULT: OK (no FAIL, CRASH, TIMEOUT or unexpected pass)\n" : "RESULT: FAILED\n");
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
    << ",\n  \"seconds\": " << number(r.seconds) << ",\n";
  o << "  \"summary\": {\"total\": " << s.total << ", \"pass\": " << s.pass << ", \"fail\": " << s.fail
    << ", \"not_supported\": " << s.not_supported << ", \"crash\": " << s.crash << ", \"timeout\": " << s.timeout
    << ", \"quality_warning\": " << s.quality_warning << ", \"expected_fail\": " << s.expected_fail
    << ", \"unexpected_pass\": " << s.unexpected_pass << ", \"no_reference\": " << s.no_reference
    << ", \"primitive_not_supported\": " << s.primitive_not_supported
    << ", \"fully_conformant\": " << (s.primitive_not_supported == 0 && exit_code(r) == 0 ? "true" : "false")
    << "},\n  \"results\": [";
  for (size_t i = 0; i < r.results.size(); ++i) {
    const PairResult &p = r.results[i];
    o << (i ? ",\n" : "\n") << "    {\"op\": " << json_string(p.op) << ", \"dtype\": " << json_string(p.dtype)
      << ", \"tier\": " << (p.primitive ? "\"primitive\"" : "\"composite\"")
      << ", \"status\": " << json_string(status_name(p.status)) << ", \"check\": " << json_string(p.check)
      << ", \"cases\": " << p.cases << ", \"cases_run\": " << p.cases_run << ", \"cases_failed\": " << p.cases_failed
      << ", \"cases_not_supported\": " << p.cases_not_supported << ", \"max_ulp\": " << number(p.max_ulp)
      << ", \"worst_ratio\": " << number(p.worst_ratio) << ", \"ulp_histogram\": [" << p.histogram.bucket[0] << ", "
      << p.histogram.bucket[1] << ", " << p.histogram.bucket[2] << ", " << p.histogram.bucket[3] << ", "
      << p.histogram.bucket[4] << "], \"seconds\": " << number(p.seconds);
    if (!p.worst_case.empty()) {
      o << ", \"worst_case\": " << json_string(p.worst_case) << ", \"worst_index\": " << p.worst_index
        << ", \"reproducer\": " << json_string(reproducer(reproduce_backend(r), p.worst_case));
    }
    if (!p.worst_detail.empty()) o << ", \"worst\": " << json_string(p.worst_detail);
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
  if (s.primitive_not_supported)
    o << " — not fully conformant: " << s.primitive_not_supported << " primitive-tier pairs NOT_SUPPORTED";
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
    if (!p.worst_detail.empty()) o << "  - worst: " << p.worst_detail << "\n";
    if (!p.worst_case.empty()) o << "  - reproduce: `" << reproducer(reproduce_backend(r), p.worst_case) << "`\n";
  }
  if (!any) o << "None.\n";
  o << "\n## All results\n\n| op | dtype | tier | status | check | cases | max ULP | ULP histogram 0/1/2/3/>=4 |\n"
       "|---|---|---|---|---|---|---|---|\n";
  for (const PairResult &p : r.results) {
    o << "| " << p.op << " | " << p.dtype << " | " << (p.primitive ? "primitive" : "composite") << " | "
      << status_name(p.status) << " | " << p.check << " | " << p.cases_run << "/" << p.cases << " | "
      << number(p.max_ulp) << " | " << p.histogram.bucket[0] << "/" << p.histogram.bucket[1] << "/"
      << p.histogram.bucket[2] << "/" << p.histogram.bucket[3] << "/" << p.histogram.bucket[4] << " |\n";
  }
  return o.str();
}

std::string to_junit(const Report &r) {
  Summary s = r.summary();
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"primkit-conformance\" tests=\"" << s.total << "\" failures=\"" << s.fail + s.unexpected_pass
    << "\" errors=\"" << s.crash + s.timeout << "\" time=\"" << number(r.seconds) << "\">\n";
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
      std::string detail =
          p->message + (p->worst_detail.empty() ? "" : "\n" + p->worst_detail) +
          (p->worst_case.empty() ? "" : "\nreproduce: " + reproducer(reproduce_backend(r), p->worst_case));
      switch (p->status) {
        case Status::fail:
        case Status::unexpected_pass:
          o << "<failure message=\"" << xml_escape(status_name(p->status)) << "\">" << xml_escape(detail)
            << "</failure>";
          break;
        case Status::crash:
        case Status::timeout:
          o << "<error message=\"" << xml_escape(status_name(p->status)) << "\">" << xml_escape(detail) << "</error>";
          break;
        case Status::not_supported:
        case Status::expected_fail:
        case Status::no_reference:
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

std::string to_html(const Report &r) {
  Summary s = r.summary();
  std::set<std::string> dtype_seen;
  for (const PairResult &p : r.results) dtype_seen.insert(p.dtype);
  std::vector<std::string> dtypes;
  for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d)
    if (dtype_seen.count(meta::dtype_name(d))) dtypes.push_back(meta::dtype_name(d));
  std::map<std::string, std::map<std::string, const PairResult *>> cell;
  std::vector<std::string> ops;
  for (const PairResult &p : r.results) {
    if (!cell.count(p.op)) ops.push_back(p.op);
    cell[p.op][p.dtype] = &p;
  }
  auto css_class = [](Status st) {
    switch (st) {
      case Status::pass:
        return "pass";
      case Status::quality_warning:
        return "warn";
      case Status::fail:
        return "fail";
      case Status::not_supported:
        return "ns";
      case Status::crash:
        return "crash";
      case Status::timeout:
        return "crash";
      case Status::expected_fail:
        return "xfail";
      case Status::unexpected_pass:
        return "fail";
      case Status::no_reference:
        return "noref";
    }
    return "ns";
  };
  auto short_text = [](Status st) {
    switch (st) {
      case Status::pass:
        return "✓";
      case Status::quality_warning:
        return "Q";
      case Status::fail:
        return "✗";
      case Status::not_supported:
        return "–";
      case Status::crash:
        return "💥";
      case Status::timeout:
        return "⏱";
      case Status::expected_fail:
        return "x";
      case Status::unexpected_pass:
        return "!";
      case Status::no_reference:
        return "?";
    }
    return "";
  };
  const uint32_t passed = s.pass + s.quality_warning;
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>PrimKit conformance: "
    << xml_escape(r.backend) << "</title>\n<style>\n"
    << "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;font-size:12px}"
       "td,th{border:1px solid #ddd;padding:2px 6px;text-align:center}th{background:#f4f4f4;position:sticky;top:0}"
       "td.op{text-align:left;font-family:monospace}.pass{background:#b7e4b0}.warn{background:#f5e79e}"
       ".fail{background:#f08080;font-weight:bold}.ns{background:#e6e6e6;color:#777}.crash{background:#b22222;"
       "color:#fff;font-weight:bold}.xfail{background:#f5c48a}.noref{background:#fff;color:#999}.na{background:#fff}"
       ".legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #ccc}"
       "details{margin:.3em 0}code{background:#f4f4f4}\n</style></head><body>\n";
  o << "<h1>PrimKit conformance: " << xml_escape(r.backend) << "</h1>\n<p>" << xml_escape(r.vendor) << " "
    << xml_escape(r.backend_version) << ", ABI " << abi_text(r.abi_version) << ", device " << xml_escape(r.device)
    << ", floats " << policy_text(r.float_policy) << ". Profile <b>" << r.profile << "</b>, seed " << r.seed << ", "
    << number(r.seconds) << " s.</p>\n";
  o << "<h2>Passed " << passed << "/" << s.total << " (" << percent(passed, s.total) << " %)</h2>\n<p>";
  o << "pass " << s.pass << " · quality warning " << s.quality_warning << " · fail " << s.fail << " · not supported "
    << s.not_supported << " · crash " << s.crash << " · timeout " << s.timeout << " · expected fail " << s.expected_fail
    << " · unexpected pass " << s.unexpected_pass << " · no reference " << s.no_reference << "</p>\n";
  if (s.primitive_not_supported)
    o << "<p><b>Not fully conformant</b>: " << s.primitive_not_supported
      << " primitive-tier pairs are not supported.</p>\n";
  o << "<p class=\"legend\"><span class=\"pass\">✓ pass</span><span class=\"warn\">Q quality warning</span>"
       "<span class=\"fail\">✗ fail</span><span class=\"ns\">– not supported</span><span class=\"crash\">💥 crash / "
       "⏱ timeout</span><span class=\"xfail\">x expected fail</span><span class=\"noref\">? no reference</span></p>\n";
  o << "<table><thead><tr><th>op</th>";
  for (const std::string &d : dtypes) o << "<th>" << d << "</th>";
  o << "</tr></thead><tbody>\n";
  for (const std::string &op : ops) {
    o << "<tr><td class=\"op\">" << xml_escape(op) << "</td>";
    for (const std::string &d : dtypes) {
      auto it = cell[op].find(d);
      if (it == cell[op].end()) {
        o << "<td class=\"na\"></td>";
        continue;
      }
      const PairResult &p = *it->second;
      std::string title = std::string(status_name(p.status)) + " — " + p.check + ", max " + number(p.max_ulp) +
                          " ulp, cases " + std::to_string(p.cases_run) + "/" + std::to_string(p.cases) +
                          (p.message.empty() ? "" : "\n" + p.message);
      o << "<td class=\"" << css_class(p.status) << "\" title=\"" << xml_escape(title) << "\">" << short_text(p.status)
        << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</tbody></table>\n<h2>Problems</h2>\n";
  bool any = false;
  for (const PairResult &p : r.results) {
    if (!is_problem(p.status) && p.status != Status::quality_warning) continue;
    any = true;
    o << "<details><summary><b>" << status_name(p.status) << "</b> <code>" << xml_escape(p.op) << "</code> " << p.dtype
      << " — max " << number(p.max_ulp) << " ulp</summary><p>" << xml_escape(p.message) << "</p>";
    if (!p.worst_detail.empty()) o << "<p>worst: <code>" << xml_escape(p.worst_detail) << "</code></p>";
    if (!p.worst_case.empty())
      o << "<p>reproduce: <code>" << xml_escape(reproducer(reproduce_backend(r), p.worst_case)) << "</code></p>";
    o << "<p>ULP histogram 0/1/2/3/&ge;4: " << p.histogram.bucket[0] << " / " << p.histogram.bucket[1] << " / "
      << p.histogram.bucket[2] << " / " << p.histogram.bucket[3] << " / " << p.histogram.bucket[4]
      << "</p></details>\n";
  }
  if (!any) o << "<p>None.</p>\n";
  o << "</body></html>\n";
  return o.str();
}

void write_reports(const Report &report, const std::string &dir) {
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

}  // namespace pk::conformance
