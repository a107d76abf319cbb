// cl_programs.cpp — program builds and the on-disk binary cache (see cl_programs.hpp), plus the OpenCL error
// names every message of this backend carries.
#include "cl_programs.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace pk::ocl {

const char *cl_error_name(cl_int err) {
  switch (err) {
#define PK_CL_ERR(x) \
  case x:            \
    return #x;
    PK_CL_ERR(CL_SUCCESS)
    PK_CL_ERR(CL_DEVICE_NOT_FOUND)
    PK_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    PK_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    PK_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    PK_CL_ERR(CL_OUT_OF_RESOURCES)
    PK_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    PK_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
    PK_CL_ERR(CL_MEM_COPY_OVERLAP)
    PK_CL_ERR(CL_IMAGE_FORMAT_MISMATCH)
    PK_CL_ERR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    PK_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    PK_CL_ERR(CL_MAP_FAILURE)
    PK_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    PK_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    PK_CL_ERR(CL_COMPILE_PROGRAM_FAILURE)
    PK_CL_ERR(CL_LINKER_NOT_AVAILABLE)
    PK_CL_ERR(CL_LINK_PROGRAM_FAILURE)
    PK_CL_ERR(CL_DEVICE_PARTITION_FAILED)
    PK_CL_ERR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    PK_CL_ERR(CL_INVALID_VALUE)
    PK_CL_ERR(CL_INVALID_DEVICE_TYPE)
    PK_CL_ERR(CL_INVALID_PLATFORM)
    PK_CL_ERR(CL_INVALID_DEVICE)
    PK_CL_ERR(CL_INVALID_CONTEXT)
    PK_CL_ERR(CL_INVALID_QUEUE_PROPERTIES)
    PK_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    PK_CL_ERR(CL_INVALID_HOST_PTR)
    PK_CL_ERR(CL_INVALID_MEM_OBJECT)
    PK_CL_ERR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    PK_CL_ERR(CL_INVALID_IMAGE_SIZE)
    PK_CL_ERR(CL_INVALID_SAMPLER)
    PK_CL_ERR(CL_INVALID_BINARY)
    PK_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    PK_CL_ERR(CL_INVALID_PROGRAM)
    PK_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    PK_CL_ERR(CL_INVALID_KERNEL_NAME)
    PK_CL_ERR(CL_INVALID_KERNEL_DEFINITION)
    PK_CL_ERR(CL_INVALID_KERNEL)
    PK_CL_ERR(CL_INVALID_ARG_INDEX)
    PK_CL_ERR(CL_INVALID_ARG_VALUE)
    PK_CL_ERR(CL_INVALID_ARG_SIZE)
    PK_CL_ERR(CL_INVALID_KERNEL_ARGS)
    PK_CL_ERR(CL_INVALID_WORK_DIMENSION)
    PK_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    PK_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    PK_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    PK_CL_ERR(CL_INVALID_EVENT_WAIT_LIST)
    PK_CL_ERR(CL_INVALID_EVENT)
    PK_CL_ERR(CL_INVALID_OPERATION)
    PK_CL_ERR(CL_INVALID_GL_OBJECT)
    PK_CL_ERR(CL_INVALID_BUFFER_SIZE)
    PK_CL_ERR(CL_INVALID_MIP_LEVEL)
    PK_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
    PK_CL_ERR(CL_INVALID_PROPERTY)
    PK_CL_ERR(CL_INVALID_IMAGE_DESCRIPTOR)
    PK_CL_ERR(CL_INVALID_COMPILER_OPTIONS)
    PK_CL_ERR(CL_INVALID_LINKER_OPTIONS)
    PK_CL_ERR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef PK_CL_ERR
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "CL_UNKNOWN_ERROR";
  }
}

namespace {

// FNV-1a over the bytes, with two offset bases for a 128-bit key.
uint64_t fnv1a(const void *data, size_t n, uint64_t h) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

bool make_dirs(const std::string &path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') {
      const std::string part = path.substr(0, pos);
      if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string find_cache_dir() {
  if (const char *off = std::getenv("PRIMKIT_OPENCL_DISK_CACHE"); off && std::strcmp(off, "0") == 0) return "";
  std::string base;
  if (const char *d = std::getenv("PRIMKIT_CACHE_DIR"); d && *d) {
    base = d;
  } else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    base = std::string(x) + "/primkit";
  } else if (const char *h = std::getenv("HOME"); h && *h) {
    base = std::string(h) + "/.cache/primkit";
  } else {
    return "";
  }
  const std::string dir = base + "/opencl";
  return make_dirs(dir) ? dir : "";
}

// Where the entry locks live: one folder per user, whatever PRIMKIT_CACHE_DIR says, because the race they prevent
// is in PoCL's kernel cache, which is per user (below). With the lock beside the entry, two processes with different
// cache folders (two test binaries of one CTest run, two checkouts) built the same program at once and one stored a
// binary PoCL later aborts on (seen as SIGABRT in the OpenCL conformance of c64 ops). Empty: no such folder.
std::string lock_dir() {
  const char *run = std::getenv("XDG_RUNTIME_DIR");
  const std::string dir = std::string(run && *run ? run : "/tmp") + "/primkit-opencl-locks-" + std::to_string(getuid());
  return make_dirs(dir) ? dir : "";
}

// Entry layout: magic, binary length, FNV hash of the binary, the binary. Version 2: entries written before the
// entry lock below may hold a binary PoCL aborts on; they are ignored (and rewritten). Version 3: the same for
// entries written while the lock was per cache folder (see lock_dir()).
constexpr char kMagic[8] = {'P', 'K', 'C', 'L', 'B', 'I', 'N', '3'};

// An exclusive advisory lock on "<entry name>.lock" (in lock_dir()), held while one process builds a program and reads
// its binary back, or loads the entry. PoCL keeps its own kernel cache shared by every process of the user, in a folder
// named after the program; the binary it hands back is a snapshot of that folder. A second process building the same
// program at the same moment snapshots a kernel file another is still writing (empty), the entry stores a binary
// that passes our hash, and every later load aborts inside PoCL (pocl_binary.c: "len > 0"). Found with two test
// runs side by side. Only processes building the same program wait on each other. No lock (no cache) when the
// lock file cannot be opened.
class EntryLock {
 public:
  explicit EntryLock(const std::string &entry_path) {
    fd_ = open((entry_path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    int rc;
    do {
      rc = flock(fd_, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~EntryLock() {
    if (fd_ >= 0) close(fd_);  // closing the descriptor releases the lock
  }
  EntryLock(const EntryLock &) = delete;
  EntryLock &operator=(const EntryLock &) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

bool read_entry(const std::string &path, std::vector<unsigned char> &bin) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char magic[8];
  uint64_t len = 0, hash = 0;
  bool ok = std::fread(magic, 1, 8, f) == 8 && std::memcmp(magic, kMagic, 8) == 0 && std::fread(&len, 8, 1, f) == 1 &&
            std::fread(&hash, 8, 1, f) == 1 && len > 0 && len < (1ull << 31);
  if (ok) {
    bin.resize(len);
    ok = std::fread(bin.data(), 1, len, f) == len && std::fgetc(f) == EOF &&
         fnv1a(bin.data(), len, 0xcbf29ce484222325ull) == hash;
  }
  std::fclose(f);
  return ok;
}

void write_entry(const std::string &path, const std::vector<unsigned char> &bin) {
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long>(getpid()));
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  const uint64_t len = bin.size(), hash = fnv1a(bin.data(), bin.size(), 0xcbf29ce484222325ull);
  bool ok = std::fwrite(kMagic, 1, 8, f) == 8 && std::fwrite(&len, 8, 1, f) == 1 && std::fwrite(&hash, 8, 1, f) == 1 &&
            std::fwrite(bin.data(), 1, bin.size(), f) == bin.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

std::string build_log(cl_program p, cl_device_id dev) {
  size_t n = 0;
  if (clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string log(n, '\0');
  clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

const std::string &disk_cache_dir() {
  static const std::string dir = find_cache_dir();
  return dir;
}

Program build_program(cl_context context, cl_device_id device, const std::string &device_key, const std::string &source,
                      const std::string &options, BuildInfo *info) {
  const auto t0 = std::chrono::steady_clock::now();
  auto done = [&](Program p, bool from_disk) {
    if (info) {
      info->from_disk = from_disk;
      info->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    return p;
  };
  const std::string &dir = disk_cache_dir();
  std::string path;
  std::unique_ptr<EntryLock> lock;  // held to the end: the build and the binary's read-back are one step
  if (!dir.empty()) {
    const std::string key = source + '\0' + options + '\0' + device_key;
    char name[64];
    std::snprintf(name, sizeof name, "/%016llx%016llx.bin",
                  static_cast<unsigned long long>(fnv1a(key.data(), key.size(), 0xcbf29ce484222325ull)),
                  static_cast<unsigned long long>(fnv1a(key.data(), key.size(), 0x84222325cbf29ce4ull)));
    path = dir + name;
    static const std::string locks = lock_dir();
    lock = std::make_unique<EntryLock>(locks.empty() ? path : locks + name);
    if (!lock->held()) path.clear();  // no lock, no cache: build from source and store nothing
  }
  if (!path.empty()) {
    std::vector<unsigned char> bin;
    if (read_entry(path, bin)) {
      const unsigned char *ptr = bin.data();
      const size_t len = bin.size();
      cl_int status = CL_SUCCESS, err = CL_SUCCESS;
      Program p(clCreateProgramWithBinary(context, 1, &device, &len, &ptr, &status, &err));
      // A binary the driver refuses (another build of it, a damaged file) is not an error: compile instead.
      if (p && err == CL_SUCCESS && status == CL_SUCCESS &&
          clBuildProgram(p.get(), 1, &device, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
        return done(std::move(p), true);
      }
    }
  }
  const char *text = source.c_str();
  const size_t len = source.size();
  cl_int err = CL_SUCCESS;
  Program p(clCreateProgramWithSource(context, 1, &text, &len, &err));
  if (!p) {
    cl_fail(status_of(err), err, 0, "opencl: clCreateProgramWithSource failed");
    return Program();
  }
  err = clBuildProgram(p.get(), 1, &device, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log = build_log(p.get(), device);
    if (log.size() > 300) log = log.substr(0, 300) + "...";
    cl_fail(PK_ERROR_INTERNAL, err, 0, "opencl: building a generated kernel failed (%s)", log.c_str());
    return Program();
  }
  if (!path.empty()) {
    size_t bin_size = 0;
    if (clGetProgramInfo(p.get(), CL_PROGRAM_BINARY_SIZES, sizeof bin_size, &bin_size, nullptr) == CL_SUCCESS &&
        bin_size > 0) {
      std::vector<unsigned char> bin(bin_size);
      unsigned char *ptr = bin.data();
      if (clGetProgramInfo(p.get(), CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) == CL_SUCCESS)
        write_entry(path, bin);
    }
  }
  return done(std::move(p), false);
}

}  // namespace pk::ocl
