// Discovery probes each plugin in a child process before loading it: a plugin that aborts, exits or hangs is
// listed with the reason and kept out of the host; verdicts are cached per file, and a changed file is probed
// again. Also: a C++ exception escaping a slot of a backend-kit plugin reaches the host as an error.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string read_text(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t count_lines(const std::string &text, const std::string &line) {
  size_t n = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    n += text.compare(pos, nl - pos, line) == 0 && nl - pos == line.size();
    pos = nl + 1;
  }
  return n;
}

void copy_file(const std::string &from, const std::string &to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
}

const char *const kPlugins[] = {"abort_entry", "exit_open", "hang_open", "chatty", "sim"};

// A private copy of the misbehaving folder (so a test may change a plugin file), a private cache folder and a
// short probe timeout; the environment is restored afterwards.
class ProbeDiscovery : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/primkit-probe-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root = tmpl;
    plugins = root + "/plugins";
    cache = root + "/cache";
    log = root + "/opens.log";
    ASSERT_EQ(mkdir(plugins.c_str(), 0755), 0);
    for (const char *p : kPlugins) copy_file(source(p), plugin_file(p));
    if (const char *outer = std::getenv("PRIMKIT_CACHE_DIR")) outer_cache = outer;
    setenv("PRIMKIT_CACHE_DIR", cache.c_str(), 1);
    setenv("PRIMKIT_PROBE_TIMEOUT", "1", 1);
    setenv("PK_TEST_PROBE_LOG", log.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("PRIMKIT_PROBE_TIMEOUT");
    unsetenv("PK_TEST_PROBE_LOG");
    if (outer_cache.empty()) {
      unsetenv("PRIMKIT_CACHE_DIR");
    } else {
      setenv("PRIMKIT_CACHE_DIR", outer_cache.c_str(), 1);
    }
    std::string cmd = "rm -rf '" + root + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  static std::string source(const char *name) {
    return std::string(PK_MISBEHAVING_PLUGIN_DIR) + "/libprimkit_backend_" + name + ".so";
  }
  std::string plugin_file(const char *name) const { return plugins + "/libprimkit_backend_" + name + ".so"; }
  // Discovery over the copied folder, through PRIMKIT_PLUGIN_PATH as a user would set it (and the install's
  // plugin folder, as always).
  pk_runtime_t discover() {
    setenv("PRIMKIT_PLUGIN_PATH", plugins.c_str(), 1);
    pk_runtime_t rt = nullptr;
    EXPECT_EQ(pk_runtime_create(nullptr, &rt), PK_OK);
    unsetenv("PRIMKIT_PLUGIN_PATH");
    return rt;
  }
  // `timeout_s`: the PRIMKIT_PROBE_TIMEOUT the probes ran with, which the hanging plugin's verdict names.
  void expect_verdicts(pk_runtime_t rt, int timeout_s = 1) {
    pk_backend_t b = nullptr;
    EXPECT_EQ(pk_runtime_find_backend(rt, "sim", &b), PK_OK) << pk_runtime_load_errors(rt);
    EXPECT_EQ(pk_runtime_find_backend(rt, "chatty", &b), PK_OK) << pk_runtime_load_errors(rt);
    for (const char *bad : {"abort_entry", "exit_open", "hang_open"})
      EXPECT_EQ(pk_runtime_find_backend(rt, bad, &b), PK_ERROR_NOT_FOUND) << bad;
    const std::string errors = pk_runtime_load_errors(rt);
    EXPECT_NE(errors.find(plugin_file("abort_entry") + " was not loaded: probe: killed by SIGABRT during entry"),
              std::string::npos)
        << errors;
    EXPECT_NE(errors.find("giving up on this machine"), std::string::npos) << "the probe's last words: " << errors;
    EXPECT_NE(errors.find(plugin_file("exit_open") + " was not loaded: probe: exited with status 0 during open"),
              std::string::npos)
        << errors;
    EXPECT_NE(errors.find(plugin_file("hang_open") + " was not loaded: probe: hung (no answer within " +
                          std::to_string(timeout_s) + " s) during open"),
              std::string::npos)
        << errors;
  }
  std::string root, plugins, cache, log, outer_cache;
};

TEST_F(ProbeDiscovery, BadPluginsAreListedWithTheirReasonAndTheCacheMakesTheSecondDiscoveryFast) {
  auto t0 = std::chrono::steady_clock::now();
  pk_runtime_t rt = discover();
  const double cold = seconds_since(t0);
  expect_verdicts(rt);
  pk_runtime_destroy(rt);
  EXPECT_GE(cold, 1.0) << "the hanging plugin's probe runs into the 1 s timeout";
  EXPECT_EQ(read_text(log), "probe\nhost\n") << "chatty was probed in a child, then loaded in the host";
  EXPECT_NE(read_text(cache + "/plugin-probes-v1.tsv").find("libprimkit_backend_hang_open.so"), std::string::npos);

  t0 = std::chrono::steady_clock::now();
  rt = discover();
  const double warm = seconds_since(t0);
  expect_verdicts(rt);
  pk_runtime_destroy(rt);
  EXPECT_LT(warm, 0.5) << "cached verdicts: no child, so no wait for the hanging one";
  EXPECT_EQ(read_text(log), "probe\nhost\nhost\n") << "the second discovery started no probe";
  std::printf("discovery of 5 plugins: cold %.3f s (1 s probe timeout), warm %.4f s\n", cold, warm);
}

TEST_F(ProbeDiscovery, AChangedPluginFileIsProbedAgain) {
  pk_runtime_destroy(discover());
  ASSERT_EQ(count_lines(read_text(log), "probe"), 1u);
  // Same size and mtime, one byte different: only the content hash tells. The last byte of the file lies in the
  // section header table, which the dynamic loader does not read, so the plugin still loads.
  const std::string chatty = plugin_file("chatty");
  struct stat before;
  ASSERT_EQ(stat(chatty.c_str(), &before), 0);
  {
    std::fstream f(chatty, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char c = 0;
    f.get(c);
    f.seekp(-1, std::ios::end);
    f.put(static_cast<char>(c ^ 0x40));
  }
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, chatty.c_str(), times, 0), 0);
  pk_runtime_t rt = discover();
  pk_backend_t b = nullptr;
  EXPECT_EQ(pk_runtime_find_backend(rt, "chatty", &b), PK_OK) << pk_runtime_load_errors(rt);
  pk_runtime_destroy(rt);
  EXPECT_EQ(count_lines(read_text(log), "probe"), 2u) << "the changed file was probed again: " << read_text(log);
  // A bigger file (a rebuilt plugin) too.
  { std::ofstream(chatty, std::ios::app | std::ios::binary) << '\0'; }
  pk_runtime_destroy(discover());
  EXPECT_EQ(count_lines(read_text(log), "probe"), 3u) << read_text(log);
}

TEST_F(ProbeDiscovery, WithoutAWritableCacheDiscoveryStillProbesAndWorks) {
  setenv("PRIMKIT_CACHE_DIR", "/proc/primkit-no-such-folder", 1);
  pk_runtime_t rt = discover();
  expect_verdicts(rt);
  pk_runtime_destroy(rt);
  pk_runtime_destroy(discover());
  EXPECT_EQ(count_lines(read_text(log), "probe"), 2u) << "no cache: every discovery probes";
}

TEST_F(ProbeDiscovery, RuntimesCreatedOnSeveralThreadsAtOnceAllProbeSafely) {
  // A multi-threaded host (Python with worker threads, a framework's pool) creating runtimes concurrently with a
  // cold cache: every one must come out with the same verdicts, and the cache must stay well-formed.
  // Each runtime probes all its plugins at once, so kRuntimes times as many probe processes share the cores as
  // in the tests above: each gets kRuntimes times their 1 s. With 1 s, a loaded machine (ctest -j2 beside a
  // build) cut a good plugin's probe short now and then, and listed it as hung.
  constexpr int kRuntimes = 4;
  setenv("PRIMKIT_PROBE_TIMEOUT", std::to_string(kRuntimes).c_str(), 1);
  setenv("PRIMKIT_PLUGIN_PATH", plugins.c_str(), 1);
  std::vector<pk_runtime_t> rts(kRuntimes, nullptr);
  std::vector<std::thread> threads;
  for (auto &r : rts) threads.emplace_back([&r] { pk_runtime_create(nullptr, &r); });
  for (auto &t : threads) t.join();
  unsetenv("PRIMKIT_PLUGIN_PATH");
  for (pk_runtime_t r : rts) {
    ASSERT_NE(r, nullptr);
    expect_verdicts(r, kRuntimes);
    pk_runtime_destroy(r);
  }
  const std::string text = read_text(cache + "/plugin-probes-v1.tsv");
  EXPECT_NE(text.find("probe: hung"), std::string::npos) << text;
  pk_runtime_t rt = discover();
  expect_verdicts(rt, kRuntimes);  // from the cache, as the concurrent probes judged
  pk_runtime_destroy(rt);
}

TEST_F(ProbeDiscovery, AHostThatIgnoresSigchldStillGetsVerdicts) {
  // With SIGCHLD ignored the kernel reaps the probes itself and waitpid cannot tell how they ended: the report
  // pipe still tells which stage each one reached, and a hang is still cut off by the timeout.
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGCHLD, &ignore, &old), 0);
  pk_runtime_t rt = discover();
  sigaction(SIGCHLD, &old, nullptr);
  pk_backend_t b = nullptr;
  EXPECT_EQ(pk_runtime_find_backend(rt, "sim", &b), PK_OK) << pk_runtime_load_errors(rt);
  EXPECT_EQ(pk_runtime_find_backend(rt, "chatty", &b), PK_OK) << pk_runtime_load_errors(rt);
  const std::string errors = pk_runtime_load_errors(rt);
  for (const char *bad : {"abort_entry", "exit_open", "hang_open"}) {
    EXPECT_EQ(pk_runtime_find_backend(rt, bad, &b), PK_ERROR_NOT_FOUND) << bad;
    EXPECT_NE(errors.find(plugin_file(bad) + " was not loaded: probe: "), std::string::npos) << errors;
  }
  pk_runtime_destroy(rt);
}

TEST_F(ProbeDiscovery, AnExplicitPathIsLoadedWithoutAProbe) {
  pk_runtime_options o;
  PK_STRUCT_INIT(o);
  o.flags = PK_RUNTIME_NO_DISCOVERY;
  pk_runtime_t rt = nullptr;
  ASSERT_EQ(pk_runtime_create(&o, &rt), PK_OK);
  pk_backend_t b = nullptr;
  EXPECT_EQ(pk_runtime_load_plugin(rt, plugin_file("chatty").c_str(), &b), PK_OK) << last_error().message;
  EXPECT_EQ(read_text(log), "host\n") << "loaded in the host, with no probe and no cache";
  pk_runtime_destroy(rt);
}

TEST_F(RuntimeTest, AnExceptionEscapingAKitSlotBecomesAnInternalErrorWithItsMessage) {
  pk_backend_t thrower = nullptr;
  ASSERT_EQ(pk_runtime_load_plugin(rt, plugin("primkit_test_thrower").c_str(), &thrower), PK_OK)
      << last_error().message;
  pk_device_t dev = nullptr;
  ASSERT_EQ(pk_backend_device(thrower, 0, &dev), PK_OK);
  pk_stream_t stream = nullptr;
  ASSERT_EQ(pk_stream_create(dev, &stream), PK_OK) << last_error().message;
  {
    DeviceTensor a(dev, f32(), {4}), b(dev, f32(), {4}), out(dev, f32(), {4});
    pk_tensor in[2] = {a.t, b.t};
    EXPECT_EQ(pk_launch(stream, PK_OP_ADD, in, 2, &out.t, 1, nullptr), PK_ERROR_INTERNAL);
    const std::string message = last_error().message;
    EXPECT_NE(message.find("C++ exception escaped the backend"), std::string::npos) << message;
    EXPECT_NE(message.find("thrower: the kernel cache is corrupt"), std::string::npos) << message;
  }
  pk_stream_destroy(stream);
}

}  // namespace
