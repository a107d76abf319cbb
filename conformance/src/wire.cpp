// wire.cpp — the lines a child sends its parent over the pipe: tab-separated fields with backslash, tab and
// newline escaped, one result (PairResult) or one probe answer (ProbeInfo) per line. A malformed line (a child that
// died mid-write, a backend writing to our pipe) decodes to false or an error, never to a wrong result.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "conformance_internal.hpp"

namespace pk::conformance::detail {

std::string escape(const std::string &s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '\t')
      out += "\\t";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

std::string unescape(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char n = s[++i];
      out += n == 't' ? '\t' : n == 'n' ? '\n' : n;
    } else {
      out += s[i];
    }
  }
  return out;
}

namespace {

std::vector<std::string> split_tabs(const std::string &line) {
  std::vector<std::string> f;
  size_t start = 0;
  while (true) {
    size_t t = line.find('\t', start);
    f.push_back(unescape(line.substr(start, t == std::string::npos ? std::string::npos : t - start)));
    if (t == std::string::npos) break;
    start = t + 1;
  }
  return f;
}

}  // namespace

std::string encode(const PairResult &r) {
  std::ostringstream o;
  o.precision(17);
  o << escape(r.op) << '\t' << escape(r.dtype) << '\t' << r.primitive << '\t' << static_cast<int>(r.status) << '\t'
    << escape(r.check) << '\t' << r.cases << '\t' << r.cases_run << '\t' << r.cases_failed << '\t'
    << r.cases_not_supported << '\t' << r.cases_no_reference << '\t' << r.max_ulp << '\t' << r.worst_ratio << '\t';
  for (uint64_t b : r.histogram.bucket) o << b << '\t';
  o << escape(r.worst_case) << '\t' << r.worst_index << '\t' << escape(r.worst_detail) << '\t' << escape(r.message)
    << '\t' << r.seconds << '\t' << escape(r.worst_inputs) << '\t' << escape(r.implementation);
  return o.str();
}

namespace {

// strtod, unlike std::stod, accepts subnormal and huge values without throwing.
double to_double(const std::string &s) {
  return std::strtod(s.c_str(), nullptr);
}

bool decode_fields(const std::string &line, PairResult &r) {
  std::vector<std::string> f = split_tabs(line);
  if (f.size() != 24) return false;
  size_t k = 0;
  r.op = f[k++];
  r.dtype = f[k++];
  r.primitive = f[k++] == "1";
  r.status = static_cast<Status>(std::stoi(f[k++]));
  r.check = f[k++];
  r.cases = static_cast<uint32_t>(std::stoul(f[k++]));
  r.cases_run = static_cast<uint32_t>(std::stoul(f[k++]));
  r.cases_failed = static_cast<uint32_t>(std::stoul(f[k++]));
  r.cases_not_supported = static_cast<uint32_t>(std::stoul(f[k++]));
  r.cases_no_reference = static_cast<uint32_t>(std::stoul(f[k++]));
  r.max_ulp = to_double(f[k++]);
  r.worst_ratio = to_double(f[k++]);
  for (uint64_t &b : r.histogram.bucket) b = std::stoull(f[k++]);
  r.worst_case = f[k++];
  r.worst_index = std::stoll(f[k++]);
  r.worst_detail = f[k++];
  r.message = f[k++];
  r.seconds = to_double(f[k++]);
  r.worst_inputs = f[k++];
  r.implementation = f[k++];
  return true;
}

}  // namespace

// A malformed line (a child that died mid-write, a backend writing to our pipe) decodes to false, never throws.
bool decode(const std::string &line, PairResult &r) {
  try {
    return decode_fields(line, r);
  } catch (const std::exception &) {
    return false;
  }
}

void write_line(int fd, const std::string &line) {
  std::string s = line + "\n";
  size_t done = 0;
  while (done < s.size()) {
    ssize_t w = ::write(fd, s.data() + done, s.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    done += static_cast<size_t>(w);
  }
}

std::string encode_probe(const ProbeInfo &p) {
  std::string s = escape(p.name) + '\t' + escape(p.vendor) + '\t' + escape(p.version) + '\t' + escape(p.path) + '\t' +
                  escape(p.device) + '\t' + escape(p.no_devices) + '\t' + escape(p.error) + '\t' +
                  std::to_string(p.abi) + '\t' + std::to_string(p.float_policy) + '\t';
  for (const auto &c : p.coverage) s += std::string(c.first ? "1" : "0") + escape(c.second) + '\t';
  return s;
}

void decode_probe(const std::string &line, ProbeInfo &p) {
  std::vector<std::string> f = split_tabs(line);
  if (f.size() < 9) {
    p.error = "the probe child sent a malformed answer";
    return;
  }
  p.name = f[0];
  p.vendor = f[1];
  p.version = f[2];
  p.path = f[3];
  p.device = f[4];
  p.no_devices = f[5];
  p.error = f[6];
  p.abi = static_cast<uint32_t>(std::stoul(f[7]));
  p.float_policy = static_cast<uint32_t>(std::stoul(f[8]));
  for (size_t i = 9; i < f.size(); ++i)
    if (!f[i].empty()) p.coverage.emplace_back(f[i][0] == '1', f[i].substr(1));
}

}  // namespace pk::conformance::detail
