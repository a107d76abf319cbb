// coll_test_util.hpp — what the multi-rank collectives tests share: the process-wide runtime, device, stream and
// world communicator (one per rank, set up in main) and device tensors; the element model that writes and reads
// every dtype from plain doubles and integers without PrimKit's own conversions (the independent side of the
// comparison) is primkit/collectives_expectation.hpp.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "primkit/collectives_expectation.hpp"
#include "primkit/primkit_collectives.h"

namespace pk::colltest {

struct World {
  pk_runtime_t runtime = nullptr;
  pk_device_t device = nullptr;
  pk_stream_t stream = nullptr;
  pk_comm_t comm = nullptr;
  int rank = 0;
  int size = 1;
  bool host_visible = false;
  bool native = false;  // the backend fills the native collective slots: every call must go through them
  std::string backend;
};
World &world();

inline pk_error_info last_error() {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  return e;
}

// The element model, the inputs and the expected results are the conformance suite's (shared, so that the suite's
// collectives stage and these tests check against the same independent expectation).
using namespace pk::conformance::collectives;

// A dense device tensor of one dtype, on the world's device.
struct DeviceTensor {
  pk_buffer_t buffer = nullptr;
  std::vector<int64_t> shape;
  pk_tensor t{};
  uint64_t bytes = 0;
  DeviceTensor(int32_t dtype, std::vector<int64_t> shp) : shape(std::move(shp)) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    bytes = static_cast<uint64_t>(n) * dtype_case(dtype).size;
    EXPECT_EQ(pk_buffer_create(world().device, bytes ? bytes : 1, &buffer), PK_OK) << last_error().message;
    pk_buffer_tensor(buffer, dtype_case(dtype).desc, static_cast<int32_t>(shape.size()), shape.data(), nullptr, 0, &t);
  }
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  ~DeviceTensor() { pk_buffer_destroy(buffer); }
  void put(const std::vector<uint8_t> &host) {
    ASSERT_EQ(host.size(), bytes);
    if (bytes) {
      ASSERT_EQ(pk_copy_host_to_buffer(world().stream, buffer, 0, host.data(), bytes), PK_OK) << last_error().message;
    }
    ASSERT_EQ(pk_stream_synchronize(world().stream), PK_OK);
  }
  std::vector<uint8_t> get() {
    std::vector<uint8_t> host(bytes);
    if (bytes) {
      EXPECT_EQ(pk_copy_buffer_to_host(world().stream, host.data(), buffer, 0, bytes), PK_OK) << last_error().message;
    }
    EXPECT_EQ(pk_stream_synchronize(world().stream), PK_OK);
    return host;
  }
};

}  // namespace pk::colltest
