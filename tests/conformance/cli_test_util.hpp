// cli_test_util.hpp — what the tests that run the `primkit` command share: running it, reading its reports.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Command {
  int exit_code;
  std::string output;  // stdout and stderr together
};

inline Command run_command(const std::string &cmd) {
  Command r{-1, ""};
  FILE *p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int st = ::pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string temp_dir() {
  char tmpl[] = "/tmp/pk_conformance_test_XXXXXX";
  const char *d = ::mkdtemp(tmpl);
  return d ? d : "/tmp";
}

}  // namespace
