// report_html.cpp — the HTML pages of a report folder: conformance.html for one run (problems first, each linked
// to its details, then the op x dtype matrix) and index.html across every backend reported into the folder.
//
// The pages are ASCII apart from what the run's own messages contain, and declare utf-8: status marks are
// letters, not symbols a reader's fonts may lack.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "conformance_internal.hpp"

namespace pk::conformance {

using namespace detail;

namespace {

// Problems in the order a reader should look at them: wrong values first, then what could not be measured.
constexpr Status kProblemOrder[] = {Status::fail,         Status::crash,           Status::timeout,
                                    Status::no_reference, Status::unexpected_pass, Status::quality_warning};

bool listed_as_problem(Status s) {
  return std::find(std::begin(kProblemOrder), std::end(kProblemOrder), s) != std::end(kProblemOrder);
}

const char *css_class(Status st) {
  switch (st) {
    case Status::pass:
      return "pass";
    case Status::quality_warning:
      return "warn";
    case Status::fail:
    case Status::unexpected_pass:
      return "fail";
    case Status::not_supported:
      return "ns";
    case Status::crash:
    case Status::timeout:
      return "crash";
    case Status::expected_fail:
      return "xfail";
    case Status::no_reference:
      return "noref";
  }
  return "ns";
}

// One or two ASCII letters per matrix cell (see the legend).
const char *mark(Status st) {
  switch (st) {
    case Status::pass:
      return "ok";
    case Status::quality_warning:
      return "Q";
    case Status::fail:
      return "F";
    case Status::not_supported:
      return "-";
    case Status::crash:
      return "C";
    case Status::timeout:
      return "T";
    case Status::expected_fail:
      return "x";
    case Status::unexpected_pass:
      return "!";
    case Status::no_reference:
      return "?";
  }
  return "";
}

// The id of a result's details on the page: op and dtype with anything outside [A-Za-z0-9_.-] as '.', so
// "fused:softmax" stays apart from "softmax".
std::string anchor(const PairResult &p) {
  std::string s = "r-";
  for (char c : p.op + "." + p.dtype)
    s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '.';
  return s;
}

const char *kStyle =
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;font-size:12px}"
    "td,th{border:1px solid #ddd;padding:2px 6px;text-align:center}th{background:#f4f4f4;position:sticky;top:0}"
    "td.op,td.l{text-align:left;font-family:monospace}.pass{background:#b7e4b0}.warn{background:#f5e79e}"
    ".fail{background:#f08080;font-weight:bold}.ns{background:#e6e6e6;color:#777}.crash{background:#b22222;"
    "color:#fff;font-weight:bold}.xfail{background:#f5c48a}.noref{background:#d8c8f0;font-weight:bold}"
    ".na{background:#fff}.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #ccc}"
    "td a{color:inherit}code{background:#f4f4f4;white-space:pre-wrap}section{border-top:1px solid #ddd;"
    "margin-top:1em}dt{font-weight:bold;margin-top:.4em}.verdict{font-size:1.1em}\n";

void details(std::ostringstream &o, const Report &r, const PairResult &p) {
  o << "<section id=\"" << anchor(p) << "\"><h3><span class=\"" << css_class(p.status) << "\">" << status_name(p.status)
    << "</span> <code>" << xml_escape(p.op) << "</code> " << xml_escape(p.dtype) << "</h3>\n<dl>";
  if (!p.message.empty()) o << "<dt>what happened</dt><dd>" << xml_escape(p.message) << "</dd>";
  if (!p.worst_case.empty()) o << "<dt>case</dt><dd><code>" << xml_escape(p.worst_case) << "</code></dd>";
  if (!p.worst_inputs.empty())
    o << "<dt>inputs (dtype[shape], strides, offset)</dt><dd><code>" << xml_escape(p.worst_inputs) << "</code></dd>";
  if (!p.worst_detail.empty()) o << "<dt>worst element</dt><dd><code>" << xml_escape(p.worst_detail) << "</code></dd>";
  if (!p.worst_case.empty())
    o << "<dt>reproduce</dt><dd><code>" << xml_escape(reproducer(r, p.worst_case)) << "</code></dd>";
  o << "<dt>check</dt><dd>" << xml_escape(p.check.empty() ? "-" : p.check) << ", max " << number(p.max_ulp)
    << " ulp, cases run " << p.cases_run << "/" << p.cases << " (failed " << p.cases_failed << ", declined "
    << p.cases_not_supported << ", no reference " << p.cases_no_reference << ")"
    << (p.implementation.empty() ? "" : ", runs by " + xml_escape(p.implementation)) << "</dd>";
  o << "<dt>ULP histogram 0/1/2/3/&gt;=4</dt><dd>" << p.histogram.bucket[0] << " / " << p.histogram.bucket[1] << " / "
    << p.histogram.bucket[2] << " / " << p.histogram.bucket[3] << " / " << p.histogram.bucket[4] << "</dd>";
  if (!p.expected_reason.empty())
    o << "<dt>listed as expected failure</dt><dd>" << xml_escape(p.expected_reason) << "</dd>";
  o << "</dl><p><a href=\"#top\">back to the top</a></p></section>\n";
}

// --- index.html: reading back the per-backend conformance.json files --------------------------------------------

// The value after "key": in text (from `from`): a JSON string unescaped, or the literal (number, true, false).
// The files are our own to_json output, so this small reader of their fixed layout is enough.
std::string json_value(const std::string &text, const std::string &key, size_t from = 0,
                       size_t to = std::string::npos) {
  const std::string needle = "\"" + key + "\": ";
  size_t at = text.find(needle, from);
  if (at == std::string::npos || (to != std::string::npos && at > to)) return "";
  at += needle.size();
  if (text[at] != '"') {
    size_t end = text.find_first_of(",}\n]", at);
    return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
  std::string out;
  for (size_t i = at + 1; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      const char n = text[++i];
      out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
    } else {
      out += text[i];
    }
  }
  return out;
}

struct BackendEntry {
  std::string folder, backend, version, device, profile, seed, total, pass, quality_warning, fail, not_supported, crash,
      timeout, expected_fail, unexpected_pass, no_reference, primitive_not_supported, fully_conformant, narrowed_by,
      seconds;
};

bool read_entry(const std::filesystem::path &json_path, BackendEntry &e) {
  std::ifstream in(json_path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string t = ss.str();
  const size_t sum = t.find("\"summary\": {");
  if (sum == std::string::npos) return false;
  const size_t sum_end = t.find('}', sum);
  e.folder = json_path.parent_path().filename().string();
  e.backend = json_value(t, "backend");
  e.version = json_value(t, "backend_version");
  e.device = json_value(t, "device");
  e.profile = json_value(t, "profile");
  e.seed = json_value(t, "seed");
  e.seconds = json_value(t, "seconds");
  auto field = [&](const char *k) { return json_value(t, k, sum, sum_end); };
  e.total = field("total");
  e.pass = field("pass");
  e.quality_warning = field("quality_warning");
  e.fail = field("fail");
  e.not_supported = field("not_supported");
  e.crash = field("crash");
  e.timeout = field("timeout");
  e.expected_fail = field("expected_fail");
  e.unexpected_pass = field("unexpected_pass");
  e.no_reference = field("no_reference");
  e.primitive_not_supported = field("primitive_not_supported");
  e.fully_conformant = field("fully_conformant");
  // narrowed_by: a list of strings; shown as written.
  const size_t nb = t.find("\"narrowed_by\": [", sum);
  if (nb != std::string::npos && nb < sum_end) {
    const size_t open = t.find('[', nb), close = t.find(']', open);
    e.narrowed_by = t.substr(open + 1, close - open - 1);
    e.narrowed_by.erase(std::remove(e.narrowed_by.begin(), e.narrowed_by.end(), '"'), e.narrowed_by.end());
  }
  return true;
}

}  // namespace

std::string to_html(const Report &r) {
  Summary s = r.summary();
  std::set<std::string> dtype_seen;
  for (const PairResult &p : r.results) dtype_seen.insert(p.dtype);
  std::vector<std::string> dtypes;
  for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d)
    if (dtype_seen.count(meta::dtype_name(d))) dtypes.push_back(meta::dtype_name(d));
  if (dtype_seen.count("-")) dtypes.push_back("-");  // the streams stage's rows, which have no dtype
  std::map<std::string, std::map<std::string, const PairResult *>> cell;
  std::vector<std::string> ops;
  for (const PairResult &p : r.results) {
    if (!cell.count(p.op)) ops.push_back(p.op);
    cell[p.op][p.dtype] = &p;
  }
  const uint32_t passed = s.pass + s.quality_warning;
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>PrimKit conformance: "
    << xml_escape(r.backend) << "</title>\n<style>\n"
    << kStyle << "</style></head><body id=\"top\">\n";
  o << "<h1>PrimKit conformance: " << xml_escape(r.backend) << "</h1>\n<p>" << xml_escape(r.vendor) << " "
    << xml_escape(r.backend_version) << ", ABI " << abi_text(r.abi_version) << ", device " << xml_escape(r.device)
    << ", floats " << policy_text(r.float_policy) << ". Profile <b>" << r.profile << "</b>, seed " << r.seed
    << ", timeout " << number(r.timeout_s) << " s, " << number(r.seconds) << " s.</p>\n";
  o << "<h2>Passed " << passed << "/" << s.total << " (" << percent(passed, s.total) << " %)</h2>\n<p>";
  o << "pass " << s.pass << ", quality warning " << s.quality_warning << ", fail " << s.fail << ", not supported "
    << s.not_supported << ", crash " << s.crash << ", timeout " << s.timeout << ", expected fail " << s.expected_fail
    << ", unexpected pass " << s.unexpected_pass << ", no reference " << s.no_reference << "</p>\n";
  o << "<p class=\"verdict\">Fully conformant: <b>" << xml_escape(conformance_verdict(r)) << "</b></p>\n";

  // Problems first: a list linking to each one's details.
  std::vector<const PairResult *> problems;
  for (Status st : kProblemOrder)
    for (const PairResult &p : r.results)
      if (p.status == st) problems.push_back(&p);
  o << "<h2 id=\"problems\">Problems (" << problems.size() << ")</h2>\n";
  if (problems.empty()) {
    o << "<p>None.</p>\n";
  } else {
    o << "<table><thead><tr><th>status</th><th>op</th><th>dtype</th><th>case</th><th>what happened</th></tr>"
         "</thead><tbody>\n";
    for (const PairResult *p : problems) {
      o << "<tr><td class=\"" << css_class(p->status) << "\"><a href=\"#" << anchor(*p) << "\">"
        << status_name(p->status) << "</a></td><td class=\"l\"><a href=\"#" << anchor(*p) << "\">" << xml_escape(p->op)
        << "</a></td><td>" << xml_escape(p->dtype) << "</td><td class=\"l\">" << xml_escape(p->worst_case)
        << "</td><td class=\"l\">" << xml_escape(p->message.substr(0, 160)) << "</td></tr>\n";
    }
    o << "</tbody></table>\n";
    for (const PairResult *p : problems) details(o, r, *p);
  }

  o << "<h2>All results</h2>\n<p class=\"legend\"><span class=\"pass\">ok pass</span><span class=\"warn\">Q quality "
       "warning</span><span class=\"fail\">F fail, ! unexpected pass</span><span class=\"ns\">- not supported</span>"
       "<span class=\"crash\">C crash, T timeout</span><span class=\"xfail\">x expected fail</span>"
       "<span class=\"noref\">? no reference</span></p>\n";
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
      std::string title = std::string(status_name(p.status)) + " - " + p.check + ", max " + number(p.max_ulp) +
                          " ulp, cases " + std::to_string(p.cases_run) + "/" + std::to_string(p.cases) +
                          (p.implementation.empty() ? "" : ", " + p.implementation) +
                          (p.message.empty() ? "" : "\n" + p.message);
      o << "<td class=\"" << css_class(p.status) << "\" title=\"" << xml_escape(title) << "\">";
      if (listed_as_problem(p.status))
        o << "<a href=\"#" << anchor(p) << "\">" << mark(p.status) << "</a>";
      else
        o << mark(p.status);
      o << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</tbody></table>\n";
  bool any_expected = false;
  for (const PairResult &p : r.results) {
    if (p.status != Status::expected_fail) continue;
    if (!any_expected) o << "<h2>Expected failures</h2>\n";
    any_expected = true;
    o << "<p><b>" << xml_escape(p.op) << "</b> " << xml_escape(p.dtype) << ": " << xml_escape(p.message) << "</p>\n";
  }
  o << "</body></html>\n";
  return o.str();
}

std::string index_html(const std::string &dir) {
  std::vector<BackendEntry> entries;
  std::error_code ec;
  for (const auto &sub : std::filesystem::directory_iterator(dir, ec)) {
    BackendEntry e;
    if (sub.is_directory(ec) && read_entry(sub.path() / "conformance.json", e)) entries.push_back(e);
  }
  std::sort(entries.begin(), entries.end(),
            [](const BackendEntry &a, const BackendEntry &b) { return a.folder < b.folder; });
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>PrimKit conformance: backends"
       "</title>\n<style>\n"
    << kStyle << "</style></head><body id=\"top\">\n<h1>PrimKit conformance: " << entries.size() << " backend"
    << (entries.size() == 1 ? "" : "s") << "</h1>\n";
  o << "<p>The latest run of each backend reported into this folder; each row links to that run's page.</p>\n";
  o << "<table><thead><tr><th>backend</th><th>version</th><th>device</th><th>profile</th><th>seed</th>"
       "<th>passed</th><th>fail</th><th>crash</th><th>timeout</th><th>no reference</th><th>unexpected pass</th>"
       "<th>not supported</th><th>expected fail</th><th>fully conformant</th><th>narrowed by</th><th>seconds</th>"
       "</tr></thead><tbody>\n";
  for (const BackendEntry &e : entries) {
    const auto count = [](const std::string &v) { return v.empty() ? 0L : std::strtol(v.c_str(), nullptr, 10); };
    const long problems =
        count(e.fail) + count(e.crash) + count(e.timeout) + count(e.no_reference) + count(e.unexpected_pass);
    const char *cls = problems ? "fail" : e.fully_conformant == "true" ? "pass" : "warn";
    const long passed = count(e.pass) + count(e.quality_warning);
    // As conformance_verdict words it: a known "no" before a narrowed run's "not established".
    const bool known_no = problems > 0 || count(e.primitive_not_supported) > 0 || e.narrowed_by.empty();
    const char *verdict = e.fully_conformant == "true" ? "yes" : known_no ? "no" : "not established";
    o << "<tr><td class=\"l " << cls << "\"><a href=\"" << xml_escape(e.folder) << "/conformance.html\">"
      << xml_escape(e.backend) << "</a></td><td>" << xml_escape(e.version) << "</td><td class=\"l\">"
      << xml_escape(e.device) << "</td><td>" << xml_escape(e.profile) << "</td><td>" << xml_escape(e.seed)
      << "</td><td>" << passed << "/" << xml_escape(e.total) << "</td><td>" << xml_escape(e.fail) << "</td><td>"
      << xml_escape(e.crash) << "</td><td>" << xml_escape(e.timeout) << "</td><td>" << xml_escape(e.no_reference)
      << "</td><td>" << xml_escape(e.unexpected_pass) << "</td><td>" << xml_escape(e.not_supported) << "</td><td>"
      << xml_escape(e.expected_fail) << "</td><td class=\"" << cls << "\">" << verdict << "</td><td>"
      << xml_escape(e.narrowed_by) << "</td><td>" << xml_escape(e.seconds) << "</td></tr>\n";
  }
  o << "</tbody></table>\n</body></html>\n";
  return o.str();
}

}  // namespace pk::conformance
