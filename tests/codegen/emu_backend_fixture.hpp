// emu_backend_fixture.hpp — the runtime, the backend under test (cuda-emu, or the plugin PRIMKIT_CODEGEN_TEST_BACKEND
// names or points to: tools/gpu-check.sh re-runs the suites on the real cuda backend), its first device and a stream,
// created once per test suite. Strict and without discovery: nothing may silently run elsewhere. Tests skip when the
// backend has no device.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "primkit/primkit.h"

namespace pk::test {

inline pk_error_info last_runtime_error() {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  return e;
}

class EmuBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY | PK_RUNTIME_STRICT;
    ASSERT_EQ(pk_runtime_create(&o, &rt_), PK_OK);
    const char *name = std::getenv("PRIMKIT_CODEGEN_TEST_BACKEND");
    // A name means the plugin of this build tree; a path (with a '/') a plugin elsewhere, e.g. a relocated build.
    const std::string chosen = name ? name : "cuda-emu";
    const std::string path = chosen.find('/') != std::string::npos
                                 ? chosen
                                 : std::string(PK_PLUGIN_DIR "/libprimkit_backend_") + chosen + ".so";
    ASSERT_EQ(pk_runtime_load_plugin(rt_, path.c_str(), &be_), PK_OK) << last_runtime_error().message;
    uint32_t count = 0;
    pk_backend_device_count(be_, &count);
    if (count == 0) return;  // SetUp skips every test
    ASSERT_EQ(pk_backend_device(be_, 0, &dev_), PK_OK);
    ASSERT_EQ(pk_stream_create(dev_, &stream_), PK_OK);
  }
  void SetUp() override {
    if (dev_ == nullptr) GTEST_SKIP() << "the backend under test has no device";
  }
  // Every suite deriving from this one shares the handles: each tears down what it set up and leaves them null.
  static void TearDownTestSuite() {
    pk_stream_destroy(stream_);
    pk_runtime_destroy(rt_);
    rt_ = nullptr;
    be_ = nullptr;
    dev_ = nullptr;
    stream_ = nullptr;
  }

  static inline pk_runtime_t rt_ = nullptr;
  static inline pk_backend_t be_ = nullptr;
  static inline pk_device_t dev_ = nullptr;
  static inline pk_stream_t stream_ = nullptr;
};

}  // namespace pk::test
