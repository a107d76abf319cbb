// plugin_probe.cpp — before discovery loads a plugin into the host, a child process (primkit-plugin-probe,
// probe_main.cpp) loads it, negotiates, opens it and counts its devices. A plugin that aborts, exits, crashes or
// hangs there is listed with the reason and not loaded, so one bad plugin cannot take down every application
// that discovers backends. The verdict is cached per file, so only a new or changed plugin costs a child.
//
// Why posix_spawn of a helper executable rather than fork: the host may be multi-threaded (Python, a framework
// with worker pools), and a forked child of such a process may only call async-signal-safe functions until it
// execs; dlopen and a plugin's open are anything but. posix_spawn execs at once (vfork-like, no copy of the
// host's locks in use), and the helper starts as a clean single-threaded process.
#include "plugin_probe.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "primkit/primkit.h"

extern char **environ;

namespace pk::rt {
namespace {

// --- settings (read once per runtime: environment.cpp) -------------------------------------------------------

std::string cache_file(const Environment &env) {
  if (!env.probe_cache) return {};
  // v1: the probe's steps (probe_main.cpp). A probe that checks more must use a new name, so that verdicts
  // of the older probe are not trusted.
  return env.cache_dir.empty() ? std::string() : env.cache_dir + "/plugin-probes-v1.tsv";
}

// The helper sits in the install's plugin folder next to the backends it probes (<libdir>/primkit/), found
// relative to libprimkit.so like that folder; $PRIMKIT_PROBE_HELPER overrides it.
std::string helper_path(const Environment &env) {
  if (!env.probe_helper.empty()) return env.probe_helper;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&pk_runtime_create), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string lib = info.dli_fname;
  size_t slash = lib.rfind('/');
  std::string dir = slash == std::string::npos ? std::string(".") : lib.substr(0, slash);
  return dir + "/primkit/primkit-plugin-probe";
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// --- file identity -------------------------------------------------------------------------------------------

// What names a plugin file's contents. dev, ino and ctime are for the fast path only: when they, size and mtime
// are those cached, the file was not written since (any write, and any utimensat that would hide one, sets
// ctime to now), so it is not read again. Otherwise its hash decides: the installed CPU backend is ~100 MB,
// and hashing it on every discovery would double the time of `primkit list`.
struct FileId {
  uint64_t size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  uint64_t dev = 0, ino = 0;
  uint64_t hash = 0;
  bool same_stat(const FileId &o) const {
    return size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns && dev == o.dev && ino == o.ino;
  }
};

bool file_stat(const std::string &path, FileId *out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  out->size = static_cast<uint64_t>(st.st_size);
  out->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  out->ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  out->dev = static_cast<uint64_t>(st.st_dev);
  out->ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

// xxHash64's round over 32-byte stripes: several GB/s, so hashing a large plugin on every discovery costs a few
// milliseconds. The hash catches a plugin rewritten within one mtime tick (or with its mtime restored); it is
// not a defence against an attacker, who could as well change the plugin after the probe.
constexpr uint64_t kP1 = 11400714785074694791ull, kP2 = 14029467366897019727ull, kP3 = 1609587929392839161ull;
inline uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
inline uint64_t round64(uint64_t acc, uint64_t in) {
  return rotl(acc + in * kP2, 31) * kP1;
}

bool file_hash(const std::string &path, uint64_t *out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint64_t acc[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  uint64_t total = 0;
  std::vector<unsigned char> buf(1 << 20);
  size_t have = 0;  // bytes carried over (less than a stripe)
  for (;;) {
    ssize_t n = read(fd, buf.data() + have, buf.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return false;
    }
    have += static_cast<size_t>(n);
    total += static_cast<uint64_t>(n);
    size_t stripes = n == 0 ? (have + 31) / 32 : have / 32;  // at the end, the tail is zero-padded
    if (n == 0) std::memset(buf.data() + have, 0, stripes * 32 - have);
    for (size_t s = 0; s < stripes; ++s) {
      for (int lane = 0; lane < 4; ++lane) {
        uint64_t w;
        std::memcpy(&w, buf.data() + s * 32 + lane * 8, 8);
        acc[lane] = round64(acc[lane], w);
      }
    }
    if (n == 0) break;
    size_t used = stripes * 32;
    std::memmove(buf.data(), buf.data() + used, have - used);
    have -= used;
  }
  close(fd);
  uint64_t h = rotl(acc[0], 1) + rotl(acc[1], 7) + rotl(acc[2], 12) + rotl(acc[3], 18) + total;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  *out = h;
  return true;
}

// --- the cache -----------------------------------------------------------------------------------------------

// One line per plugin (by real path): "ok|bad size mtime_ns ctime_ns dev ino hash path reason", tab-separated. A
// line that does not parse is dropped; a path with a tab or newline is never cached.
struct CacheEntry {
  FileId id;
  ProbeVerdict verdict;
};

std::map<std::string, CacheEntry> read_cache(const std::string &file) {
  std::map<std::string, CacheEntry> entries;
  FILE *f = file.empty() ? nullptr : std::fopen(file.c_str(), "re");
  if (f == nullptr) return entries;
  char line[8192];
  while (std::fgets(line, sizeof(line), f)) {
    std::vector<std::string> fields;
    std::string cur;
    for (const char *p = line; *p && *p != '\n'; ++p) {
      if (*p == '\t') {
        fields.push_back(cur);
        cur.clear();
      } else {
        cur += *p;
      }
    }
    fields.push_back(cur);
    if (fields.size() != 9 || (fields[0] != "ok" && fields[0] != "bad")) continue;
    CacheEntry e;
    e.verdict.safe = fields[0] == "ok";
    e.id.size = std::strtoull(fields[1].c_str(), nullptr, 10);
    e.id.mtime_ns = std::strtoll(fields[2].c_str(), nullptr, 10);
    e.id.ctime_ns = std::strtoll(fields[3].c_str(), nullptr, 10);
    e.id.dev = std::strtoull(fields[4].c_str(), nullptr, 10);
    e.id.ino = std::strtoull(fields[5].c_str(), nullptr, 10);
    e.id.hash = std::strtoull(fields[6].c_str(), nullptr, 16);
    e.verdict.reason = fields[8];
    entries[fields[7]] = e;
  }
  std::fclose(f);
  return entries;
}

// Writes a temporary file and renames it over the cache, so that a process reading the cache meanwhile sees
// the old or the new file, never half of one. Failures are ignored: no cache only means probing again.
void write_cache(const std::string &file, const std::map<std::string, CacheEntry> &entries) {
  if (file.empty()) return;
  std::string dir = file.substr(0, file.rfind('/'));
  // Create the folder and its parent (~/.cache may not exist yet); private, as it lists the user's plugins.
  std::string parent = dir.substr(0, dir.rfind('/'));
  if (!parent.empty()) mkdir(parent.c_str(), 0700);
  mkdir(dir.c_str(), 0700);
  // A unique name: runtimes created on several threads (or processes) at once each write their own file.
  std::string tmp = file + ".XXXXXX";
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  if (f == nullptr) {
    close(fd);
    unlink(tmp.c_str());
    return;
  }
  bool ok = true;
  for (const auto &kv : entries) {
    struct stat st;
    if (stat(kv.first.c_str(), &st) != 0) continue;  // the plugin is gone: forget it
    const FileId &id = kv.second.id;
    ok = ok &&
         std::fprintf(f, "%s\t%llu\t%lld\t%lld\t%llu\t%llu\t%016llx\t%s\t%s\n", kv.second.verdict.safe ? "ok" : "bad",
                      static_cast<unsigned long long>(id.size), static_cast<long long>(id.mtime_ns),
                      static_cast<long long>(id.ctime_ns), static_cast<unsigned long long>(id.dev),
                      static_cast<unsigned long long>(id.ino), static_cast<unsigned long long>(id.hash),
                      kv.first.c_str(), kv.second.verdict.reason.c_str()) > 0;
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), file.c_str()) != 0) unlink(tmp.c_str());
}

bool cacheable(const std::string &s) {
  return s.find_first_of("\t\n") == std::string::npos;
}

// --- children ------------------------------------------------------------------------------------------------

const char *signal_name(int sig) {
  switch (sig) {
    case SIGABRT:
      return "SIGABRT";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGSYS:
      return "SIGSYS";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return nullptr;
  }
}

struct Child {
  size_t index = 0;  // into paths
  pid_t pid = -1;
  int report_fd = -1;  // the probe's fd 3
  int err_fd = -1;     // the probe's stderr: its last line says more than a signal number
  std::string report, err;
  bool reaped = false, hung = false;
  int wstatus = 0;
  bool status_known = false;
  double deadline = 0;
};

void close_fd(int &fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Starts the helper on one plugin; false when it cannot be started (the caller then judges the plugin safe).
bool spawn_probe(const std::string &helper, const std::string &plugin, const ProbeLog &log_info, Child *c) {
  int rep[2], err[2];
  if (pipe2(rep, O_CLOEXEC) != 0) return false;
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(rep[0]);
    close(rep[1]);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // stdin and stdout go to /dev/null: a plugin's chatter must not reach the host's terminal or a pipe the
  // host's stdout feeds (JSON output, say). dup2 onto a new number clears O_CLOEXEC, so only these survive exec.
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_adddup2(&fa, rep[1], 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Default signal handling in the child: a host that ignores SIGPIPE or blocks signals must not change what
  // the probe sees. Its own process group, so that a plugin's grandchildren can be killed with it on a hang.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> env_store;
  for (char **e = environ; e && *e; ++e) env_store.emplace_back(*e);
  // Tells a plugin it runs under the probe (a test plugin counts its probes with it).
  env_store.emplace_back("PRIMKIT_PROBE_CHILD=1");
  std::vector<char *> envp;
  for (auto &s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string arg0 = helper, arg1 = plugin;
  char *argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, helper.c_str(), &fa, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(rep[1]);
  close(err[1]);
  if (rc != 0) {
    close(rep[0]);
    close(err[0]);
    log_info("cannot start the plugin probe " + helper + ": " + std::strerror(rc));
    return false;
  }
  c->pid = pid;
  c->report_fd = rep[0];
  c->err_fd = err[0];
  return true;
}

// Reads what is there; returns false at end of file or on error (then the fd is closed).
bool drain(int &fd, std::string &into, size_t keep_tail) {
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    close_fd(fd);
    return false;
  }
  into.append(buf, static_cast<size_t>(n));
  if (into.size() > keep_tail) into.erase(0, into.size() - keep_tail);
  return true;
}

// Takes what the pipe holds now and closes it.
void drain_now(int &fd, std::string &into, size_t keep_tail) {
  while (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) {
      close_fd(fd);
      return;
    }
    if (!drain(fd, into, keep_tail)) return;
  }
}

void try_reap(Child &c) {
  if (c.reaped) return;
  int ws = 0;
  pid_t r = waitpid(c.pid, &ws, WNOHANG);
  if (r == c.pid) {
    c.reaped = true;
    c.status_known = true;
    c.wstatus = ws;
  } else if (r < 0 && errno == ECHILD) {
    // The host reaps its children itself (SIGCHLD ignored, or a handler of its own): the report decides.
    c.reaped = true;
  }
}

std::string last_line(const std::string &s) {
  size_t end = s.find_last_not_of("\n\r \t");
  if (end == std::string::npos) return {};
  size_t start = s.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  std::string line = s.substr(start, end - start + 1);
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  for (char &ch : line)
    if (ch == '\t') ch = ' ';
  return line;
}

ProbeVerdict judge(const Child &c, double timeout) {
  ProbeVerdict v;
  std::string stage = "load";
  bool done = false;
  size_t pos = 0;
  while (pos < c.report.size()) {
    size_t nl = c.report.find('\n', pos);
    if (nl == std::string::npos) break;
    std::string line = c.report.substr(pos, nl - pos);
    if (line.compare(0, 6, "stage ") == 0) stage = line.substr(6);
    if (line == "done") done = true;
    pos = nl + 1;
  }
  // A child that said "done" passed, whatever happened after (its exit status is then not the plugin's).
  if (done && !c.hung) return v;
  v.safe = false;
  char what[256];
  if (c.hung) {
    std::snprintf(what, sizeof(what), "probe: hung (no answer within %g s) during %s", timeout, stage.c_str());
  } else if (c.status_known && WIFSIGNALED(c.wstatus)) {
    const char *name = signal_name(WTERMSIG(c.wstatus));
    if (name) {
      std::snprintf(what, sizeof(what), "probe: killed by %s during %s", name, stage.c_str());
    } else {
      std::snprintf(what, sizeof(what), "probe: killed by signal %d during %s", WTERMSIG(c.wstatus), stage.c_str());
    }
  } else if (c.status_known && WIFEXITED(c.wstatus)) {
    std::snprintf(what, sizeof(what), "probe: exited with status %d during %s", WEXITSTATUS(c.wstatus), stage.c_str());
  } else {
    std::snprintf(what, sizeof(what), "probe: ended without an answer during %s", stage.c_str());
  }
  v.reason = what;
  std::string words = last_line(c.err);
  if (!words.empty()) v.reason += " (its last words: \"" + words + "\")";
  return v;
}

// Waits for every child, reading their pipes, until each has exited or passed its deadline (then it is killed).
void wait_children(std::vector<Child> &children) {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Child *, int *>> owners;
    double now = now_s(), next_deadline = 1e300;
    bool pending = false;
    for (Child &c : children) {
      if (!c.reaped) try_reap(c);
      if (!c.reaped && now >= c.deadline) {
        // Hung: kill the probe and whatever it started (its process group), then collect it.
        kill(-c.pid, SIGKILL);
        kill(c.pid, SIGKILL);
        c.hung = true;
        int ws = 0;
        while (waitpid(c.pid, &ws, 0) < 0 && errno == EINTR) {
        }
        c.reaped = true;
        drain_now(c.report_fd, c.report, 1 << 16);
        drain_now(c.err_fd, c.err, 4096);
        continue;
      }
      // An exited child has written all it will: take what its pipes hold, without waiting for an end of file
      // that never comes while a grandchild keeps them open.
      if (c.reaped) {
        drain_now(c.report_fd, c.report, 1 << 16);
        drain_now(c.err_fd, c.err, 4096);
        continue;
      }
      pending = true;
      if (c.deadline < next_deadline) next_deadline = c.deadline;
      for (int *fd : {&c.report_fd, &c.err_fd}) {
        if (*fd < 0) continue;
        fds.push_back(pollfd{*fd, POLLIN, 0});
        owners.emplace_back(&c, fd);
      }
    }
    if (!pending) return;
    // Wake at the nearest deadline, and at least every 20 ms to notice a child that exited with its pipes held.
    double wait = next_deadline - now_s();
    int ms = wait <= 0 ? 0 : wait > 0.02 ? 20 : static_cast<int>(wait * 1000) + 1;
    int n = poll(fds.data(), fds.size(), ms);
    if (n <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Child &c = *owners[i].first;
      int *fd = owners[i].second;
      drain(*fd, fd == &c.report_fd ? c.report : c.err, fd == &c.report_fd ? size_t{1} << 16 : 4096);
    }
  }
}

}  // namespace

std::vector<ProbeVerdict> probe_plugins(const std::vector<std::string> &paths, const Environment &env,
                                        const ProbeLog &log_info) {
  std::vector<ProbeVerdict> verdicts(paths.size());
  const std::string file = cache_file(env);
  std::map<std::string, CacheEntry> cache = read_cache(file);
  std::vector<FileId> ids(paths.size());
  std::vector<std::string> keys(paths.size());
  std::vector<size_t> todo;
  bool changed = false;
  for (size_t i = 0; i < paths.size(); ++i) {
    // By real path: a relative PRIMKIT_PLUGIN_PATH or a symlinked folder names the same file as another run.
    char real[4096];
    keys[i] = realpath(paths[i].c_str(), real) ? std::string(real) : paths[i];
    // An unreadable file is left to the in-process load, which reports why dlopen fails.
    if (!file_stat(keys[i], &ids[i])) continue;
    auto it = cache.find(keys[i]);
    if (it != cache.end() && it->second.id.same_stat(ids[i])) {
      verdicts[i] = it->second.verdict;
      continue;
    }
    if (!file_hash(keys[i], &ids[i].hash)) continue;
    if (it != cache.end() && it->second.id.size == ids[i].size && it->second.id.hash == ids[i].hash) {
      // Touched or copied back, same contents: the verdict holds; remember the new stat.
      verdicts[i] = it->second.verdict;
      it->second.id = ids[i];
      changed = true;
      continue;
    }
    todo.push_back(i);
  }
  if (todo.empty()) {
    if (changed) write_cache(file, cache);
    return verdicts;
  }
  const std::string helper = helper_path(env);
  if (helper.empty() || access(helper.c_str(), X_OK) != 0) {
    log_info("no plugin probe at '" + helper + "': plugins are loaded without probing");
    if (changed) write_cache(file, cache);
    return verdicts;
  }
  const double timeout = env.probe_timeout_s;
  std::vector<Child> children;
  children.reserve(todo.size());
  for (size_t i : todo) {
    Child c;
    c.index = i;
    if (!spawn_probe(helper, paths[i], log_info, &c)) continue;  // judged safe, and not cached: try again next time
    c.deadline = now_s() + timeout;
    children.push_back(std::move(c));
  }
  wait_children(children);
  for (const Child &c : children) {
    verdicts[c.index] = judge(c, timeout);
    const std::string &path = keys[c.index];
    log_info("probed " + path + ": " + (verdicts[c.index].safe ? "ok" : verdicts[c.index].reason));
    if (cacheable(path) && cacheable(verdicts[c.index].reason)) {
      cache[path] = CacheEntry{ids[c.index], verdicts[c.index]};
      changed = true;
    }
  }
  if (changed) write_cache(file, cache);
  return verdicts;
}

}  // namespace pk::rt
