// cl_key.hpp — the key of the backend's in-memory kernel cache: which kernel family (Path), op, dtypes and variant
// a built program serves. Header-only so that a test can check that keys never collide.
#pragma once

#include <cstdint>

namespace pk::ocl {

// The kernel families (one generator each).
enum class Path {
  none,
  elementwise,
  set,
  iota,
  reduction,
  argreduce,
  matmul,
  move,
  take,
  scatter,
  index_put,
  scan,
  sort,
  search,
  var,
  dot_general,
  conv,
  philox,
  fft
};
constexpr uint32_t kPathCount = static_cast<uint32_t>(Path::fft) + 1;

// Fields: path (5 bits), op (12), four dtypes (4 each, stored as dtype + 1; 0 is "none"), variant (16): none may
// spill into its neighbour.
constexpr uint64_t kernel_key(Path p, uint32_t op, const int32_t *dts, uint32_t n, uint32_t variant) {
  static_assert(kPathCount <= 32, "Path needs more key bits");
  uint64_t k = static_cast<uint64_t>(p) | (static_cast<uint64_t>(op & 0xfffu) << 5);
  for (uint32_t i = 0; i < 4; ++i) k |= static_cast<uint64_t>((i < n ? dts[i] + 1 : 0) & 0xf) << (17 + 4 * i);
  return k | (static_cast<uint64_t>(variant & 0xffffu) << 33);
}

}  // namespace pk::ocl
