// "The CLI tells the truth": a printed reproducer reruns the same case, selections that name nothing are errors,
// narrowed runs never claim full conformance, `primkit info` counts pairs as the suite does, NO_REFERENCE is a
// problem, and the HTML report leads with the problems and indexes every backend of a report folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "conformance_internal.hpp"
#include "primkit/conformance.hpp"

namespace pc = pk::conformance;

namespace {

const std::string kPrimkit = PK_PRIMKIT_EXE;
const std::string kCpu = PK_CPU_PLUGIN;
const std::string kFaulty = std::string(PK_CONF_PLUGIN_DIR) + "/libprimkit_test_faulty.so";

// The line of conformance.json's results for (op, dtype): to_json writes one result per line.
std::string result_line(const std::string &json, const std::string &op, const std::string &dtype) {
  const std::string key = "{\"op\": \"" + op + "\", \"dtype\": \"" + dtype + "\"";
  const size_t at = json.find(key);
  if (at == std::string::npos) return "";
  return json.substr(at, json.find('\n', at) - at);
}

// The value of "key" in one line of conformance.json: a string (unescaped quotes only) or a literal.
std::string field(const std::string &line, const std::string &key) {
  const std::string needle = "\"" + key + "\": ";
  size_t at = line.find(needle);
  if (at == std::string::npos) return "";
  at += needle.size();
  if (line[at] != '"') return line.substr(at, line.find_first_of(",}]", at) - at);
  std::string out;
  for (size_t i = at + 1; i < line.size() && line[i] != '"'; ++i) {
    if (line[i] == '\\' && i + 1 < line.size()) ++i;
    out += line[i];
  }
  return out;
}

size_t count_results(const std::string &json) {
  size_t n = 0;
  for (size_t at = json.find("{\"op\": "); at != std::string::npos; at = json.find("{\"op\": ", at + 1)) ++n;
  return n;
}

// The per-op lines of `primkit info BACKEND --ops`: op -> (dtype -> mark '+', '~' or '-').
std::map<std::string, std::map<std::string, char>> info_marks(const std::string &output) {
  std::map<std::string, std::map<std::string, char>> out;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) != 0) continue;
    std::istringstream ls(line);
    std::string op, word;
    ls >> op;
    while (ls >> word) {
      const char m = word.back();
      if (m != '+' && m != '-' && m != '~') break;
      out[op][word.substr(0, word.size() - 1)] = m;
    }
  }
  return out;
}

pc::PairResult result(const std::string &op, pc::Status st) {
  pc::PairResult p;
  p.op = op;
  p.dtype = "f32";
  p.status = st;
  p.check = "ulp 1";
  p.cases = p.cases_run = 3;
  return p;
}

}  // namespace

// Point 1: the reproducer carries the profile and seed; rerun, it measures the same worst element.
TEST(ConformanceCliTruth, ReproducerRerunsTheSameWorstElement) {
  const std::string dir1 = temp_dir(), dir2 = temp_dir();
  Command c = run_command(kPrimkit + " conformance --backend " + kCpu +
                          " --ops exp --dtypes f32 --seed 7 --no-fusion --jobs 1 --report " + dir1);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const std::string first = result_line(read_file(dir1 + "/conformance.json"), "exp", "f32");
  const std::string repro = field(first, "reproducer");
  ASSERT_FALSE(repro.empty()) << first;
  EXPECT_EQ(repro,
            "primkit conformance --backend " + kCpu + " --profile quick --seed 7 --case " + field(first, "worst_case"));
  ASSERT_EQ(repro.rfind("primkit ", 0), 0u);
  c = run_command(kPrimkit + repro.substr(std::string("primkit").size()) + " --report " + dir2);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const std::string json2 = read_file(dir2 + "/conformance.json");
  EXPECT_EQ(count_results(json2), 1u) << json2;
  const std::string again = result_line(json2, "exp", "f32");
  EXPECT_EQ(field(again, "worst_case"), field(first, "worst_case"));
  EXPECT_EQ(field(again, "worst_index"), field(first, "worst_index"));
  EXPECT_FALSE(field(first, "worst").empty()) << first;
  EXPECT_EQ(field(again, "worst"), field(first, "worst"));
  EXPECT_EQ(field(again, "max_ulp"), field(first, "max_ulp"));
  // Library form: the full profile and a non-default timeout are spelled out too.
  EXPECT_EQ(pc::reproducer("cpu", "exp.f32.tail.0", pc::Profile::full, 9, 2),
            "primkit conformance --backend cpu --profile full --seed 9 --timeout 2 --case exp.f32.tail.0");
}

// Point 2: a case id or an --ops glob that names nothing is an error naming it, never a smaller run.
TEST(ConformanceCliTruth, UnknownCaseIdsAndGlobsAreErrors) {
  const std::string base = kPrimkit + " conformance --backend " + kCpu + " ";
  for (const char *id : {"exp.f32.nosuchvariant.0", "exp.f32.tail.999", "exp.f99.tail.0", "nosuchop.f32.tail.0",
                         "fused:exp.f32.tail.0", "exp"}) {
    Command c = run_command(base + "--case " + id);
    EXPECT_EQ(c.exit_code, 2) << id << "\n" << c.output;
    EXPECT_NE(c.output.find(std::string("'") + id + "'"), std::string::npos) << id << "\n" << c.output;
  }
  // A case of the full profile asked for in the quick one: the message says which profile has it.
  Command c = run_command(base + "--case exp.f32.large.0");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("--profile full"), std::string::npos) << c.output;
  c = run_command(base + "--ops exp,nosuchop");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("'nosuchop' matches no op"), std::string::npos) << c.output;
}

// The streams stage: its rows are chosen by --ops like ops, have no dtype (--dtypes narrows nothing of them) and
// are tiered "stage"; a glob that leaves them out leaves no stage row and narrows the run.
TEST(ConformanceCliTruth, StreamsStageRowsAreSelectedByOps) {
  const std::string dir = temp_dir();
  Command c =
      run_command(kPrimkit + " conformance --backend " + kCpu + " --ops 'streams:*' --dtypes f32 --report " + dir);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("Passed 4/4"), std::string::npos) << c.output;
  const std::string json = read_file(dir + "/conformance.json");
  for (const char *row : {"streams:events", "streams:wait_event", "streams:scratch", "streams:leak"}) {
    EXPECT_NE(
        json.find(std::string("{\"op\": \"") + row + "\", \"dtype\": \"-\", \"tier\": \"stage\", \"status\": \"PASS\""),
        std::string::npos)
        << row << "\n"
        << json;
    EXPECT_NE(read_file(dir + "/conformance.md").find(std::string("| ") + row + " | - | stage | PASS |"),
              std::string::npos)
        << row;
  }
  EXPECT_NE(json.find("\"narrowed_by\": [\"--ops streams:*\"]"), std::string::npos) << json;

  c = run_command(kPrimkit + " conformance --backend " + kCpu + " --ops streams:events --report " + dir);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("Passed 1/1"), std::string::npos) << c.output;

  c = run_command(kPrimkit + " conformance --backend " + kCpu + " --ops neg --dtypes f32 --report " + dir);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(read_file(dir + "/conformance.json").find("streams:"), std::string::npos);
}

// The collectives stage: --ops and --case name its rows or fail before any backend (or MPI) is touched, and its
// rows never mix with the ops' (a --collectives run has no op pair; an op run has no collectives row).
TEST(ConformanceCliTruth, CollectivesRowsAreSelectedByOpsAndNamelessSelectionsAreErrors) {
  const std::string base = kPrimkit + " conformance --backend " + kCpu + " --collectives ";
  Command c = run_command(base + "--ops 'collectives:all_reduce:sum,collectives:nosuch*'");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("'collectives:nosuch*' matches no row of the collectives stage"), std::string::npos)
      << c.output;
  c = run_command(base + "--ops exp");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("'exp' matches no row of the collectives stage"), std::string::npos) << c.output;
  c = run_command(base + "--case exp.f32.tail.0");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("--case does not apply to --collectives"), std::string::npos) << c.output;
  c = run_command(kPrimkit + " conformance --backend " + kCpu + " --ops 'collectives:*'");
  EXPECT_EQ(c.exit_code, 2) << "an op run has no collectives row\n" << c.output;

  namespace pd = pk::conformance::detail;
  pc::Options o;
  o.collectives = true;
  o.ops_glob = "collectives:all_reduce:*,collectives:dead_rank";
  o.dtypes = {PK_DTYPE_F32};
  const pd::Selection sel = pd::select_pairs(o);
  EXPECT_TRUE(sel.pairs.empty());
  EXPECT_TRUE(sel.stages.empty());
  std::set<std::string> names;
  for (size_t k : sel.collective_rows)
    names.insert(pd::collective_rows()[k].name + " " + std::to_string(pd::collective_rows()[k].dtype));
  const std::string f32 = " " + std::to_string(PK_DTYPE_F32);
  EXPECT_EQ(names, (std::set<std::string>{"collectives:all_reduce:sum" + f32, "collectives:all_reduce:prod" + f32,
                                          "collectives:all_reduce:max" + f32, "collectives:all_reduce:min" + f32,
                                          "collectives:all_reduce:avg" + f32, "collectives:dead_rank -1"}));
  EXPECT_EQ(sel.narrowed_by, (std::vector<std::string>{"--collectives", "--ops " + o.ops_glob, "--dtypes f32"}));
  // Every reduction a dtype defines has its rows, and none it does not (complex max/min, bool avg).
  size_t all_reduce_rows = 0;
  for (const pd::CollectiveRow &r : pd::collective_rows()) {
    all_reduce_rows += r.kind == pd::CollectiveRowKind::all_reduce;
    EXPECT_FALSE(r.name == "collectives:all_reduce:max" && r.dtype == PK_DTYPE_C64);
    EXPECT_FALSE(r.name == "collectives:all_reduce:avg" && r.dtype == PK_DTYPE_BOOL);
  }
  EXPECT_EQ(all_reduce_rows, 11u * 5 + 2 * 3 + 4) << "11 real and integer dtypes, 2 complex, bool";
}

// Point 3: a narrowed run says so in every format and is never fully conformant; --require-full refuses it.
TEST(ConformanceCliTruth, NarrowedRunsAreNeverFullyConformant) {
  const std::string dir = temp_dir();
  Command c = run_command(kPrimkit + " conformance --backend " + kCpu + " --ops neg --dtypes f32 --report " + dir);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  const std::string json = read_file(dir + "/conformance.json");
  EXPECT_NE(json.find("\"fully_conformant\": false, \"narrowed\": true, \"narrowed_by\": [\"--ops neg\", "
                      "\"--dtypes f32\"]"),
            std::string::npos)
      << json;
  EXPECT_NE(c.output.find("NARROWED RUN (--ops neg --dtypes f32)"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("fully conformant: not established"), std::string::npos) << c.output;
  EXPECT_NE(read_file(dir + "/conformance.md").find("Fully conformant: **not established"), std::string::npos);
  EXPECT_NE(read_file(dir + "/conformance.html").find("Fully conformant: <b>not established"), std::string::npos);
  c = run_command(kPrimkit + " conformance --backend " + kCpu + " --ops neg --dtypes f32 --require-full");
  EXPECT_EQ(c.exit_code, 3) << c.output;
  c = run_command(kPrimkit + " conformance --backend " + kCpu + " --case sum.f32.tail.1 --report " + dir);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(read_file(dir + "/conformance.json").find("\"narrowed_by\": [\"--case sum.f32.tail.1\"]"),
            std::string::npos);

  // The same report, not narrowed, is fully conformant; narrowed or with a NOT_SUPPORTED primitive it is not.
  pc::Report r;
  r.backend = "x";
  r.results = {result("neg", pc::Status::pass)};
  EXPECT_TRUE(pc::fully_conformant(r));
  EXPECT_NE(pc::to_json(r).find("\"fully_conformant\": true, \"narrowed\": false, \"narrowed_by\": []"),
            std::string::npos);
  r.narrowed_by = {"--no-fusion"};
  EXPECT_FALSE(pc::fully_conformant(r));
  EXPECT_NE(pc::to_json(r).find("\"fully_conformant\": false, \"narrowed\": true"), std::string::npos);
  r.narrowed_by.clear();
  r.results.push_back(result("abs", pc::Status::not_supported));
  EXPECT_FALSE(pc::fully_conformant(r));
}

// Point 4: `primkit info` lists the pairs the suite runs (creation ops per dtype of their attribute), marks
// composites the runtime decomposes apart from native ones, and its total is the suite's number of pairs.
TEST(ConformanceCliTruth, InfoCountsPairsLikeTheSuite) {
  const std::string dir = temp_dir();
  Command c = run_command(kPrimkit + " conformance --backend " + kFaulty +
                          " --ops iota,neg,abs,softmax --no-fusion --timeout 5 --report " + dir);
  const std::string json = read_file(dir + "/conformance.json");
  ASSERT_FALSE(json.empty()) << c.output;
  Command info = run_command(kPrimkit + " info " + kFaulty + " --ops");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  const auto marks = info_marks(info.output);
  for (const char *op : {"iota", "neg", "abs", "softmax"}) {
    ASSERT_TRUE(marks.count(op)) << op << "\n" << info.output;
    std::set<std::string> suite_dtypes;
    for (int32_t d : pc::op_dtypes(*pk::meta::find_op(op))) suite_dtypes.insert(pk::meta::dtype_name(d));
    std::set<std::string> info_dtypes;
    for (const auto &[dtype, mark] : marks.at(op)) {
      info_dtypes.insert(dtype);
      const std::string line = result_line(json, op, dtype);
      ASSERT_FALSE(line.empty()) << op << " " << dtype << " is in info, not in the suite's run";
      // Same answer: '+' ran natively, '~' by decomposition, '-' was NOT_SUPPORTED without running.
      if (mark == '+') {
        EXPECT_EQ(field(line, "implementation"), "native") << line;
      } else if (mark == '~') {
        EXPECT_EQ(field(line, "implementation"), "decomposition") << line;
      } else {
        EXPECT_EQ(field(line, "status"), "NOT_SUPPORTED") << line;
      }
    }
    EXPECT_EQ(info_dtypes, suite_dtypes) << op;
  }
  // The faulty backend has no softmax kernel: every softmax pair is shown as decomposed, none as native.
  for (const auto &[dtype, mark] : marks.at("softmax")) EXPECT_EQ(mark, '~') << dtype;
  EXPECT_EQ(marks.at("neg").at("f32"), '+');
  EXPECT_EQ(marks.at("iota").size(), pc::op_dtypes(*pk::meta::find_op("iota")).size());
  // The total is the number of pairs a whole run of the suite checks.
  const size_t all = pc::detail::select_pairs(pc::Options{}).pairs.size();
  EXPECT_NE(info.output.find("conformance checks " + std::to_string(all) + " (op, dtype) pairs"), std::string::npos)
      << info.output;
  EXPECT_NE(info.output.find("by decomposition"), std::string::npos) << info.output;
}

// Point 5: NO_REFERENCE is a problem (exit 1, listed) unless --expected-failures lists the pair.
TEST(ConformanceCliTruth, NoReferenceIsAProblemUnlessExpected) {
  pc::Report r;
  r.backend = "x";
  r.results = {result("neg", pc::Status::pass), result("abs", pc::Status::no_reference)};
  r.results[1].message = "the oracle cannot evaluate it: unimplemented";
  EXPECT_EQ(pc::exit_code(r), 1);
  const std::string text = pc::summary_text(r);
  EXPECT_NE(text.find("  NO_REFERENCE abs f32: the oracle cannot evaluate it"), std::string::npos) << text;
  EXPECT_NE(text.find("RESULT: FAILED"), std::string::npos) << text;
  EXPECT_NE(pc::to_junit(r).find("<error message=\"NO_REFERENCE\">"), std::string::npos);
  pc::apply_expected_failures(r, pc::parse_expected_failures("abs f32 the oracle lacks it\n"));
  EXPECT_EQ(r.results[1].status, pc::Status::expected_fail);
  EXPECT_EQ(pc::exit_code(r), 0);
}

// Point 5: the oracle's scans finish (they used to look hung on complex cumprod), within the case timeout.
TEST(ConformanceCliTruth, ComplexCumprodFinishesWellInsideTheTimeout) {
  Command c = run_command(kPrimkit + " conformance --backend " + kCpu +
                          " --ops cumprod --dtypes c64,c128 --no-fusion --jobs 1 --timeout 5");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("Passed 2/2"), std::string::npos) << c.output;
}

// Point 6: problems first, each linked to details with inputs, worst element and reproducer; ASCII marks; an
// index of every backend reported into the folder.
TEST(ConformanceCliTruth, HtmlListsProblemsFirstAndIndexesBackends) {
  const std::string dir = temp_dir();
  Command c = run_command(kPrimkit + " conformance --backend " + kFaulty +
                          " --ops neg,abs,floor --dtypes f32 --timeout 2 --report " + dir);
  EXPECT_EQ(c.exit_code, 1) << c.output;
  c = run_command(kPrimkit + " conformance --backend " + kCpu + " --ops neg --dtypes f32 --report " + dir);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  const std::string html = read_file(dir + "/faulty/conformance.html");
  ASSERT_FALSE(html.empty());
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  const size_t problems = html.find("<h2 id=\"problems\">Problems (2)</h2>"), matrix = html.find("<h2>All results");
  ASSERT_NE(problems, std::string::npos) << html;
  EXPECT_LT(problems, matrix);
  // CRASH (abs) before TIMEOUT (floor), each linked to its details.
  const size_t crash_link = html.find("<a href=\"#r-abs.f32\">CRASH</a>"),
               timeout_link = html.find("<a href=\"#r-floor.f32\">TIMEOUT</a>");
  ASSERT_NE(crash_link, std::string::npos) << html;
  ASSERT_NE(timeout_link, std::string::npos) << html;
  EXPECT_LT(crash_link, timeout_link);
  const size_t details = html.find("<section id=\"r-abs.f32\">");
  ASSERT_NE(details, std::string::npos);
  const std::string section = html.substr(details, html.find("</section>", details) - details);
  for (const char *what : {"inputs (dtype[shape], strides, offset)", "in0 f32[", "reproduce",
                           "--profile quick --seed 1 --timeout 2 --case abs.f32."})
    EXPECT_NE(section.find(what), std::string::npos) << what << "\n" << section;
  // The page's own markup is ASCII: no symbol a font may lack (messages of the run aside, none here).
  size_t non_ascii = 0;
  for (unsigned char ch : html) non_ascii += ch >= 0x80;
  EXPECT_EQ(non_ascii, 0u) << "non-ASCII bytes in conformance.html";
  EXPECT_NE(read_file(dir + "/cpu/conformance.html").find("Problems (0)"), std::string::npos);
  // The index lists both backends with their summaries and links.
  const std::string index = read_file(dir + "/index.html");
  EXPECT_NE(index.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(index.find("<a href=\"cpu/conformance.html\">cpu</a>"), std::string::npos) << index;
  EXPECT_NE(index.find("<a href=\"faulty/conformance.html\">faulty</a>"), std::string::npos) << index;
  EXPECT_NE(index.find("2 backends"), std::string::npos) << index;
  EXPECT_TRUE(std::filesystem::exists(dir + "/faulty/conformance.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/cpu/junit.xml"));
}
