// fuzz_common.hpp — what the libFuzzer harnesses share: a front-to-back byte reader (exhausted input reads as
// zeros, so a seed of a few bytes means "the valid launch, unchanged"), the runtime with the reference plugins,
// valid starting launches taken from the op table's examples, memory with guard bytes, and seed writing.
//
// The property every harness checks: each call returns a status (any status) and never crashes, leaks, reads or
// writes outside its buffers (ASan), overflows (UBSan), writes outside an output's view after success, or writes
// anything after a failure (guard bytes, checked here).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace pkfuzz {

[[noreturn]] inline void die(const char *what, const char *detail = "") {
  std::fprintf(stderr, "pkfuzz: PROPERTY VIOLATED: %s %s\n", what, detail);
  std::abort();
}
#define PKFUZZ_CHECK(cond, what)             \
  do {                                       \
    if (!(cond)) ::pkfuzz::die(what, #cond); \
  } while (0)

// Reads the fuzz input front to back; past its end every read is 0.
class Reader {
 public:
  Reader(const uint8_t *d, size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  size_t left() const { return i_ < n_ ? n_ - i_ : 0; }
  uint8_t u8() { return i_ < n_ ? d_[i_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | (static_cast<uint32_t>(u16()) << 16); }
  uint64_t u64() { return static_cast<uint64_t>(u32()) | (static_cast<uint64_t>(u32()) << 32); }
  // An int64 that is usually small, sometimes a value at an edge of some range.
  int64_t edgy_i64() {
    static const int64_t kEdges[] = {0,
                                     1,
                                     2,
                                     3,
                                     4,
                                     5,
                                     7,
                                     8,
                                     16,
                                     31,
                                     64,
                                     255,
                                     -1,
                                     -2,
                                     -3,
                                     -8,
                                     -128,
                                     INT32_MAX,
                                     INT32_MIN,
                                     (int64_t)UINT32_MAX,
                                     (int64_t)1 << 31,
                                     (int64_t)1 << 32,
                                     (int64_t)1 << 61,
                                     (int64_t)1 << 62,
                                     ((int64_t)1 << 62) - 1,
                                     INT64_MAX,
                                     INT64_MIN,
                                     INT64_MAX / 2,
                                     INT64_MIN / 2 - 1,
                                     -((int64_t)1 << 62)};
    uint8_t sel = u8();
    constexpr size_t n = sizeof(kEdges) / sizeof(kEdges[0]);
    if (sel < n) return kEdges[sel];
    if (sel < 200) return static_cast<int8_t>(u8());
    return static_cast<int64_t>(u64());
  }
  void bytes(void *out, size_t n) {
    auto *o = static_cast<uint8_t *>(out);
    for (size_t k = 0; k < n; ++k) o[k] = u8();
  }

 private:
  const uint8_t *d_;
  size_t n_;
  size_t i_ = 0;
};

// Appends little-endian values to a seed.
struct SeedWriter {
  std::vector<uint8_t> b;
  SeedWriter &u8(uint8_t v) {
    b.push_back(v);
    return *this;
  }
  SeedWriter &u16(uint16_t v) { return u8(v & 0xff).u8(v >> 8); }
  SeedWriter &u32(uint32_t v) { return u16(v & 0xffff).u16(v >> 16); }
};

// When PK_FUZZ_WRITE_SEEDS names a folder, LLVMFuzzerInitialize writes the harness's seeds there and exits.
inline const char *seed_dir() {
  return std::getenv("PK_FUZZ_WRITE_SEEDS");
}
inline void write_seed(const std::string &name, const std::vector<uint8_t> &bytes) {
  std::string path = std::string(seed_dir()) + "/" + name;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) die("cannot write seed", path.c_str());
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// The runtime every harness but the plugin one shares: the cpu and cuda-emu plugins loaded by path (no
// discovery, so no probe child processes), a stream on each device. Created once per process.
struct World {
  pk_runtime_t rt = nullptr;
  pk_device_t cpu = nullptr, emu = nullptr;
  pk_stream_t cpu_stream = nullptr, emu_stream = nullptr;
};
World &world();

// A valid launch of an op, from its table example (or, for ops without one, its first admitted dtypes at a
// small shape), with output types from pk_infer_outputs. false if the op has no launch the harness can build.
struct Launch {
  const pk::meta::OpInfo *op = nullptr;
  std::vector<pk::meta::TensorType> inputs, outputs;
  std::vector<uint8_t> attrs;  // op->attrs_size bytes (empty if none)
};
bool example_launch(const pk::meta::OpInfo &op, Launch &out);

// The op at position `index` of the table (ascending id), wrapping.
const pk::meta::OpInfo &op_at(uint32_t index);

// Guarded host memory: [guard][payload][guard], guards and payload filled with a known pattern.
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

// Every byte offset (relative to `data`) a view reaches, up to `limit` elements; false if the view has more
// elements than that or an extent/stride the check cannot follow (the caller then checks guards only).
bool view_bytes(const pk_tensor &t, size_t limit, std::vector<uint64_t> &offsets);

int64_t numel(const pk::meta::TensorType &t);

}  // namespace pkfuzz
