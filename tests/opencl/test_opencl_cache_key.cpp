// The OpenCL backend's kernel-cache key (cl_key.hpp): every kernel family, op, dtype and variant maps to its own
// key. Two families once shared a key when the family field was too narrow; a collision makes one launch run
// another family's kernels.
#include <gtest/gtest.h>

#include <cstdint>
#include <unordered_set>

#include "cl_key.hpp"
#include "primkit/primkit.h"

namespace {

using pk::ocl::kernel_key;
using pk::ocl::kPathCount;
using pk::ocl::Path;

TEST(OpenCLCacheKey, FieldsHoldEveryValue) {
  // The key's field widths against the op table: 12 bits of op id, 4 bits of dtype + 1.
  EXPECT_LE(static_cast<uint32_t>(PK_OP_ID_LIMIT), 1u << 12);
  EXPECT_LE(static_cast<uint32_t>(PK_DTYPE_COUNT) + 1, 1u << 4);
}

TEST(OpenCLCacheKey, EveryFamilyAndOpDistinct) {
  // Every (family, op, first dtype): pairwise distinct keys.
  std::unordered_set<uint64_t> keys;
  size_t count = 0;
  for (uint32_t p = 0; p < kPathCount; ++p) {
    for (uint32_t op = 0; op < PK_OP_ID_LIMIT; ++op) {
      for (int32_t dt = -1; dt < PK_DTYPE_COUNT; ++dt) {
        const int32_t dts[1] = {dt};
        keys.insert(kernel_key(static_cast<Path>(p), op, dts, 1, 0));
        ++count;
      }
    }
  }
  EXPECT_EQ(keys.size(), count);
}

TEST(OpenCLCacheKey, EveryDtypeSlotAndVariantDistinct) {
  // Per family, the other dtype slots and the variant (a target dtype, a rounding mode, an index count) change
  // the key too; ops at both ends of the id range.
  std::unordered_set<uint64_t> keys;
  size_t count = 0;
  const uint32_t ops[] = {0, PK_OP_ID_LIMIT - 1};
  const uint32_t variants[] = {0, 1, 2, 13, 0x8000, 0xffff};
  for (uint32_t p = 0; p < kPathCount; ++p) {
    for (uint32_t op : ops) {
      for (uint32_t v : variants) {
        for (int32_t d1 = -1; d1 < PK_DTYPE_COUNT; ++d1) {
          for (int32_t d2 = -1; d2 < PK_DTYPE_COUNT; ++d2) {
            for (int32_t d3 = -1; d3 < PK_DTYPE_COUNT; ++d3) {
              const int32_t dts[4] = {PK_DTYPE_F32, d1, d2, d3};
              keys.insert(kernel_key(static_cast<Path>(p), op, dts, 4, v));
              ++count;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(keys.size(), count);
  // Fewer dtypes than slots read as "none" in the rest: (f32) and (f32, none) are one kernel.
  const int32_t one[1] = {PK_DTYPE_F32}, two[2] = {PK_DTYPE_F32, -1};
  EXPECT_EQ(kernel_key(Path::elementwise, 1, one, 1, 0), kernel_key(Path::elementwise, 1, two, 2, 0));
}

}  // namespace
