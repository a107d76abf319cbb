// The runner end to end: the `primkit conformance` command against the CPU backend, and a backend that
// segfaults, hangs and exits on purpose (CRASH / TIMEOUT, and the run goes on), or has no device at all.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_test_util.hpp"
#include "primkit/conformance.hpp"

namespace pc = pk::conformance;

namespace {

const std::string kFaulty = std::string(PK_CONF_PLUGIN_DIR) + "/libprimkit_test_faulty.so";
const std::string kNoDevice = std::string(PK_CONF_PLUGIN_DIR) + "/libprimkit_test_faulty_nodev.so";

const pc::PairResult *result_of(const pc::Report &r, const std::string &op, const std::string &dtype) {
  for (const pc::PairResult &p : r.results)
    if (p.op == op && p.dtype == dtype) return &p;
  return nullptr;
}

// Whether the CPU backend's capability query covers (op, f32), from `primkit info` (a separate process: this
// one must not load the CPU backend before forking).
bool cpu_covers_f32(const std::string &op) {
  Command c = run_command(std::string(PK_PRIMKIT_EXE) + " info cpu --ops");
  std::istringstream in(c.output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string name;
    ls >> name;
    if (name == op) return line.find(" f32+") != std::string::npos;
  }
  return false;
}

}  // namespace

TEST(ConformanceCli, CpuBackendPassesAFewOpsAndWritesTheReports) {
  const std::string dir = temp_dir();
  Command c = run_command(std::string(PK_PRIMKIT_EXE) + " conformance --backend " + PK_CPU_PLUGIN +
                          " --ops add,exp,sum,matmul --dtypes f32 --jobs 2 --report " + dir);
  const std::string json = read_file(dir + "/conformance.json");
  ASSERT_FALSE(json.empty()) << c.output;
  // The report names the ABI the cpu backend was built with: this tree's header.
  const std::string abi =
      "\"abi_version\": \"" + std::to_string(PK_ABI_VERSION_MAJOR) + "." + std::to_string(PK_ABI_VERSION_MINOR) + "\"";
  EXPECT_NE(json.find(abi), std::string::npos) << abi << "\n" << json;
  for (const char *key :
       {"\"backend\": \"cpu\"", "\"profile\": \"quick\"", "\"summary\": {", "\"pass\": ", "\"fail\": 0",
        "\"not_supported\": ", "\"crash\": 0", "\"timeout\": 0", "\"quality_warning\": ", "\"expected_fail\": 0",
        "\"unexpected_pass\": 0", "\"results\": [", "\"cases\": ", "\"max_ulp\": "}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  for (const char *op : {"sum", "matmul", "add", "exp"}) {
    const bool supported = std::string(op) == "sum" || std::string(op) == "matmul" || cpu_covers_f32(op);
    const std::string expected = std::string("{\"op\": \"") + op + "\", \"dtype\": \"f32\", \"tier\": \"primitive\", " +
                                 "\"status\": \"" + (supported ? "PASS" : "NOT_SUPPORTED") + "\"";
    EXPECT_NE(json.find(expected), std::string::npos) << expected << "\n" << json;
  }
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("Passed "), std::string::npos) << c.output;
  for (const char *f : {"conformance.md", "junit.xml", "conformance.html"})
    EXPECT_FALSE(read_file(dir + "/" + f).empty()) << f;
  EXPECT_NE(read_file(dir + "/junit.xml").find("<testsuites"), std::string::npos);
  EXPECT_NE(read_file(dir + "/conformance.html").find("<table>"), std::string::npos);
}

TEST(ConformanceCli, OneCaseByItsId) {
  Command c =
      run_command(std::string(PK_PRIMKIT_EXE) + " conformance --backend " + PK_CPU_PLUGIN + " --case sum.f32.tail.1");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("Passed 1/1"), std::string::npos) << c.output;
}

// A plugin named by path is loaded on its own: the installed or discovered plugin of the same name must not make
// it fail as "already loaded".
TEST(ConformanceCli, InfoOnAPluginPath) {
  Command c = run_command(std::string(PK_PRIMKIT_EXE) + " info " + PK_CPU_PLUGIN);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("cpu (PrimKit"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("primitive tier: "), std::string::npos) << c.output;
}

TEST(ConformanceCli, BadArgumentsAndUnknownBackends) {
  EXPECT_EQ(run_command(std::string(PK_PRIMKIT_EXE) + " conformance --profile slow --backend cpu").exit_code, 2);
  Command c = run_command(std::string(PK_PRIMKIT_EXE) + " conformance --backend /nonexistent/libprimkit_backend_x.so");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.output.find("nonexistent"), std::string::npos) << c.output;
}

TEST(ConformanceRunner, CrashHangAndExitBecomeCrashAndTimeout) {
  pc::Options opt;
  opt.backend = kFaulty;
  opt.ops_glob = "neg,abs,floor,ceil";
  opt.dtypes = {PK_DTYPE_F32, PK_DTYPE_F16};
  opt.timeout_s = 2;
  opt.jobs = 2;
  opt.ops_per_group = 8;  // all four in one child first: the crash of abs must not take neg with it
  pc::Report r = pc::run(opt);
  ASSERT_EQ(r.backend, "faulty");
  const pc::PairResult *neg = result_of(r, "neg", "f32"), *abs = result_of(r, "abs", "f32"),
                       *floor = result_of(r, "floor", "f32"), *ceil = result_of(r, "ceil", "f32"),
                       *neg16 = result_of(r, "neg", "f16");
  ASSERT_TRUE(neg && abs && floor && ceil && neg16);
  EXPECT_EQ(neg->status, pc::Status::pass) << neg->message;
  EXPECT_GT(neg->cases_run, 5u);
  EXPECT_EQ(abs->status, pc::Status::crash);
  EXPECT_NE(abs->message.find("signal 11"), std::string::npos) << abs->message;
  EXPECT_EQ(abs->message.find("in case abs.f32."), abs->message.find("in case ")) << abs->message;
  EXPECT_EQ(abs->worst_case.rfind("abs.f32.", 0), 0u) << abs->worst_case;
  EXPECT_EQ(floor->status, pc::Status::timeout) << floor->message;
  EXPECT_EQ(ceil->status, pc::Status::crash);
  EXPECT_NE(ceil->message.find("exited with status 7"), std::string::npos) << ceil->message;
  EXPECT_EQ(neg16->status, pc::Status::not_supported);  // the capability query declines f16
  EXPECT_EQ(pc::exit_code(r), 1);
  pc::Summary s = r.summary();
  EXPECT_EQ(s.crash, 2u);
  EXPECT_EQ(s.timeout, 1u);
  EXPECT_EQ(s.pass, 1u);
  // The reproducer spells out what decides the case (profile, seed) and the run's non-default timeout.
  EXPECT_NE(pc::summary_text(r).find("reproduce: primkit conformance --backend " + kFaulty +
                                     " --profile quick --seed 1 --timeout 2 --case abs.f32."),
            std::string::npos)
      << pc::summary_text(r);
  EXPECT_NE(floor->worst_inputs.find("in0 f32["), std::string::npos) << floor->worst_inputs;
}

TEST(ConformanceRunner, ExpectedFailuresAndUnexpectedPasses) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/xfail.txt") << "abs f32 segfaults on purpose\nneg * listed but fixed long ago\n";
  pc::Options opt;
  opt.backend = kFaulty;
  opt.ops_glob = "neg,abs";
  opt.dtypes = {PK_DTYPE_F32};
  opt.expected_failures_file = dir + "/xfail.txt";
  pc::Report r = pc::run(opt);
  ASSERT_NE(result_of(r, "abs", "f32"), nullptr);
  EXPECT_EQ(result_of(r, "abs", "f32")->status, pc::Status::expected_fail);
  EXPECT_EQ(result_of(r, "abs", "f32")->expected_reason, "segfaults on purpose");
  EXPECT_EQ(result_of(r, "neg", "f32")->status, pc::Status::unexpected_pass);
  EXPECT_EQ(pc::exit_code(r), 1);  // the stale entry must be removed
  std::ofstream(dir + "/xfail.txt") << "abs f32 segfaults on purpose\n";
  r = pc::run(opt);
  EXPECT_EQ(pc::exit_code(r), 0);
}

TEST(ConformanceRunner, ZeroDevicesIsAClearErrorNotAPass) {
  pc::Options opt;
  opt.backend = kNoDevice;
  opt.ops_glob = "neg";
  try {
    pc::run(opt);
    FAIL() << "a backend without devices passed";
  } catch (const pc::SetupError &e) {
    EXPECT_EQ(std::string(e.what()), "no devices: no accelerator driver found (faulty test backend)");
  }
  Command c = run_command(std::string(PK_PRIMKIT_EXE) + " conformance --backend " + kNoDevice);
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.output.find("no devices: no accelerator driver found"), std::string::npos) << c.output;
  // The runtime keeps the backend's reason, so every tool can say it, not only the conformance runner.
  c = run_command(std::string(PK_PRIMKIT_EXE) + " info " + kNoDevice);
  EXPECT_NE(c.output.find("no devices, so no op runs here (no accelerator driver found (faulty test backend))"),
            std::string::npos)
      << c.output;
}

// The fused runs: softmax's decomposition compiled with fusion on claims fused kernels on the CPU backend and is
// held to softmax's contract against the oracle; a fused case re-runs by its "fused:" id.
TEST(ConformanceRunner, FusedDecompositionsAreCheckedAndReproducible) {
  pc::Options opt;
  opt.backend = PK_CPU_PLUGIN;
  opt.ops_glob = "softmax";
  opt.dtypes = {PK_DTYPE_F32};
  pc::Report r = pc::run(opt);
  bool plain = false, fused = false;
  for (const auto &p : r.results) {
    if (p.op == "softmax") plain = p.status == pc::Status::pass;
    if (p.op == "fused:softmax") {
      fused = p.status == pc::Status::pass && p.cases_run > 0 && p.cases_not_supported == 0;
      EXPECT_FALSE(p.primitive);
    }
  }
  EXPECT_TRUE(plain);
  EXPECT_TRUE(fused);
  opt.fusion = false;
  for (const auto &p : pc::run(opt).results) EXPECT_EQ(p.op.rfind("fused:", 0), std::string::npos) << p.op;
  Command c = run_command(std::string(PK_PRIMKIT_EXE) + " conformance --backend " + PK_CPU_PLUGIN +
                          " --case fused:softmax.f32.example.0");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("Passed 1/1 (100.0 %)  [pass 1,"), std::string::npos) << c.output;
}
