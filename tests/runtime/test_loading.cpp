// Loading and negotiation: every broken plugin is refused with a message naming the file and the reason,
// and the runtime goes on working.
#include <cstdlib>

#include "runtime_fixture.hpp"

using namespace pk::test;

namespace {

struct BadPlugin {
  const char *file;
  pk_status status;
  const char *message_part;
};

class LoadingTest : public RuntimeTest {};

TEST_F(LoadingTest, BrokenPluginsAreRefusedAndTheRuntimeGoesOn) {
  const BadPlugin cases[] = {
      {"primkit_test_no_entry", PK_ERROR_PLUGIN, "does not export the entry symbol pk_backend_entry"},
      {"primkit_test_newer_major", PK_ERROR_ABI_MISMATCH, "this plugin needs ABI 2.0 or newer"},
      {"primkit_test_wrong_choice", PK_ERROR_ABI_MISMATCH, "chose ABI 2.0"},
      {"primkit_test_null_required", PK_ERROR_PLUGIN, "leaves a required slot NULL"},
      {"primkit_backend_broken", PK_ERROR_DEVICE, "no such device: /dev/acme0"},
      {"does_not_exist", PK_ERROR_PLUGIN, "cannot load plugin"},
  };
  for (const auto &c : cases) {
    pk_backend_t b = nullptr;
    std::string path = plugin(c.file);
    EXPECT_EQ(pk_runtime_load_plugin(rt, path.c_str(), &b), c.status) << c.file;
    EXPECT_EQ(b, nullptr);
    pk_error_info e = last_error();
    EXPECT_EQ(e.status, c.status);
    EXPECT_NE(std::string(e.message).find(c.message_part), std::string::npos) << e.message;
    EXPECT_NE(std::string(e.message).find(c.file), std::string::npos) << "the message names the file: " << e.message;
    if (c.status == PK_ERROR_DEVICE) {
      EXPECT_EQ(e.vendor_code, -19) << "the open failure keeps the plugin's vendor code";
    }
  }
  uint32_t n = 0;
  ASSERT_EQ(pk_runtime_backend_count(rt, &n), PK_OK);
  EXPECT_EQ(n, 1u) << "only the CPU backend is loaded";
}

TEST_F(LoadingTest, NegotiatesTheHostVersionWithAGoodPlugin) {
  open_sim();
  EXPECT_EQ(pk_backend_abi_version(sim), PK_ABI_VERSION);
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  ASSERT_EQ(pk_backend_get_info(sim, &info), PK_OK);
  EXPECT_STREQ(info.name, "sim");
  EXPECT_STREQ(info.vendor, "PrimKit tests");
  pk_device_props p;
  PK_STRUCT_INIT(p);
  ASSERT_EQ(pk_device_get_props(sim_dev, &p), PK_OK);
  EXPECT_EQ(p.device_type, PK_DEVICE_EXT);
  EXPECT_EQ(p.dtype_mask, 1u << PK_DTYPE_F32);
  // A second plugin with the same backend name is refused, not shadowing the first silently.
  pk_backend_t again = nullptr;
  EXPECT_EQ(pk_runtime_load_plugin(rt, plugin("primkit_backend_sim").c_str(), &again), PK_ERROR_PLUGIN);
  EXPECT_NE(std::string(last_error().message).find("already loaded"), std::string::npos);
}

TEST_F(LoadingTest, CallerStructsOfAnOlderSizeAreFilledOnlyUpToTheirSize) {
  // An application compiled against a header whose pk_backend_info ended after `vendor` must not be overrun.
  struct {
    pk_backend_info info;
    char guard[8];
  } s;
  std::memset(&s, 0x5a, sizeof(s));
  s.info.struct_size = offsetof(pk_backend_info, version_major);
  ASSERT_EQ(pk_backend_get_info(cpu, &s.info), PK_OK);
  EXPECT_STREQ(s.info.name, "cpu");
  EXPECT_EQ(s.info.version_major, 0x5a5a5a5au) << "fields beyond struct_size are untouched";
  EXPECT_EQ(s.guard[0], 0x5a);
}

TEST(Discovery, FindsPluginsOnPrimkitPluginPathAndReportsTheBrokenOnes) {
  // The test plugin folder holds a good backend (sim), one whose device is missing (broken) and other
  // libraries not named libprimkit_backend_*.so, which are not candidates at all.
  setenv("PRIMKIT_PLUGIN_PATH", PK_TEST_PLUGIN_DIR, 1);
  pk_runtime_t rt = nullptr;
  ASSERT_EQ(pk_runtime_create(nullptr, &rt), PK_OK);
  pk_backend_t sim = nullptr;
  EXPECT_EQ(pk_runtime_find_backend(rt, "sim", &sim), PK_OK) << pk_runtime_load_errors(rt);
  EXPECT_NE(std::string(pk_backend_path(sim)).find("libprimkit_backend_sim.so"), std::string::npos);
  pk_backend_t cpu = nullptr;
  EXPECT_EQ(pk_runtime_find_backend(rt, "cpu", &cpu), PK_OK) << "the install's plugin folder is searched too";
  std::string errors = pk_runtime_load_errors(rt);
  EXPECT_NE(errors.find("libprimkit_backend_broken.so"), std::string::npos) << errors;
  EXPECT_NE(errors.find("no such device: /dev/acme0"), std::string::npos) << errors;
  EXPECT_EQ(errors.find("primkit_test_"), std::string::npos) << "non-candidates are not tried: " << errors;
  EXPECT_EQ(pk_runtime_find_backend(rt, "nonexistent", &cpu), PK_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(last_error().message).find("nonexistent"), std::string::npos);
  pk_runtime_destroy(rt);
  unsetenv("PRIMKIT_PLUGIN_PATH");
}

TEST_F(LoadingTest, OlderMinorPluginWithAShorterTableLoadsAndItsMissingSlotsAreNull) {
  open_sim("primkit_test_sim_old_minor");
  // Its table stops before op_query: the coverage query reports that instead of calling garbage.
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = PK_OP_ADD;
  pk_op_support s;
  PK_STRUCT_INIT(s);
  ASSERT_EQ(pk_device_query_op(sim_dev, &q, &s), PK_OK);
  EXPECT_EQ(s.supported, 0);
  EXPECT_STREQ(s.reason, "backend has no capability query");
  // And launches fall back to the CPU backend through copies, with a correct result.
  float a[3] = {1.5f, -2.0f, 4.0f}, b[3] = {0.25f, 8.0f, -4.0f};
  DeviceTensor ta(sim_dev, f32(), {3}), tb(sim_dev, f32(), {3}), to(sim_dev, f32(), {3});
  ta.upload(sim_stream, a, sizeof(a));
  tb.upload(sim_stream, b, sizeof(b));
  pk_tensor in[2] = {ta.t, tb.t};
  ASSERT_EQ(pk_launch(sim_stream, PK_OP_ADD, in, 2, &to.t, 1, nullptr), PK_OK) << last_error().message;
  auto r = to.download<float>(sim_stream, 3);
  EXPECT_EQ(r[0], 1.75f);
  EXPECT_EQ(r[1], 6.0f);
  EXPECT_EQ(r[2], 0.0f);
  uint64_t launches = 0, bytes = 0;
  ASSERT_EQ(pk_runtime_fallback_count(rt, PK_OP_ADD, &launches, &bytes), PK_OK);
  EXPECT_EQ(launches, 1u);
  EXPECT_EQ(bytes, 4u * 12u) << "two inputs and the output down, the output back up";
}

TEST_F(LoadingTest, ATableWhoseStructSizeCutsASlotLeavesThatSlotNull) {
  // Found by fuzz_plugin: struct_size ending inside op_launch made the host keep the low half of the pointer and
  // call it (SEGV). The cut slot counts as absent: the launch falls back to the CPU backend with the right result.
  open_sim("primkit_test_sim_torn_table");
  float a[2] = {1.0f, 2.0f}, b[2] = {0.5f, -3.0f};
  DeviceTensor ta(sim_dev, f32(), {2}), tb(sim_dev, f32(), {2}), to(sim_dev, f32(), {2});
  ta.upload(sim_stream, a, sizeof(a));
  tb.upload(sim_stream, b, sizeof(b));
  pk_tensor in[2] = {ta.t, tb.t};
  ASSERT_EQ(pk_launch(sim_stream, PK_OP_ADD, in, 2, &to.t, 1, nullptr), PK_OK) << last_error().message;
  auto r = to.download<float>(sim_stream, 2);
  EXPECT_EQ(r[0], 1.5f);
  EXPECT_EQ(r[1], -1.0f);
  uint64_t launches = 0;
  ASSERT_EQ(pk_runtime_fallback_count(rt, PK_OP_ADD, &launches, nullptr), PK_OK);
  EXPECT_EQ(launches, 1u);
}

TEST_F(LoadingTest, FreeingABufferOnAnAsyncDeviceWithoutStreamSynchronizeDoesNotCallTheNullSlot) {
  // Found by fuzz_plugin: pk_buffer_destroy synchronized every stream of an asynchronous device through the
  // stream_synchronize slot without checking it, and called NULL (SEGV). Without the slot there is nothing to wait
  // with: the buffer is released, and the explicit call says the slot is missing.
  open_sim("primkit_test_sim_async_no_sync");
  pk_buffer_t b = nullptr;
  ASSERT_EQ(pk_buffer_create(sim_dev, 64, &b), PK_OK) << last_error().message;
  pk_buffer_destroy(b);
  EXPECT_NE(pk_stream_synchronize(sim_stream), PK_OK);
}

TEST_F(LoadingTest, APluginReportingBillionsOfDevicesIsRefused) {
  // Found by fuzz_plugin: the host made a device record and allocator for each of 0x7f7f7f7f devices until memory
  // ran out. The count is refused with a message naming the plugin and the count.
  pk_backend_t b = nullptr;
  const std::string path = plugin("primkit_test_sim_billion_devices");
  EXPECT_EQ(pk_runtime_load_plugin(rt, path.c_str(), &b), PK_ERROR_PLUGIN);
  const std::string msg = last_error().message;
  EXPECT_NE(msg.find("2139062143 devices"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

}  // namespace

// DESIGN §3: a plugin built against the oldest released 1.x header (tests/abi/released/) loads in this host and
// runs ops with exact results.
TEST_F(LoadingTest, PluginBuiltAgainstTheOldestReleasedHeaderLoadsAndRuns) {
  open_sim("primkit_test_sim_oldest_header");
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  ASSERT_EQ(pk_backend_get_info(sim, &info), PK_OK);
  EXPECT_EQ(PK_VERSION_MAJOR(info.abi_version), 1u);
  float a[2] = {1.5f, 3.0f}, b[2] = {2.0f, -0.5f};
  DeviceTensor ta(sim_dev, f32(), {2}), tb(sim_dev, f32(), {2}), to(sim_dev, f32(), {2});
  ta.upload(sim_stream, a, sizeof(a));
  tb.upload(sim_stream, b, sizeof(b));
  pk_tensor in[2] = {ta.t, tb.t};
  ASSERT_EQ(pk_launch(sim_stream, PK_OP_MUL, in, 2, &to.t, 1, nullptr), PK_OK) << last_error().message;
  auto r = to.download<float>(sim_stream, 2);
  EXPECT_EQ(r[0], 3.0f);
  EXPECT_EQ(r[1], -1.5f);
}

namespace {

// Vendor extensions by name (pk_backend_get_proc_address): the CPU backend's two, called through the pointer, and
// every refusal with its status and reason. The sim test plugin has no get_proc_address slot.
TEST_F(LoadingTest, VendorExtensionsAreFoundByNameAndRefusedWithAReason) {
  // `cpu`: the fixture loaded the CPU backend.
  const pk_proc isa = pk_backend_get_proc_address(cpu, "cpu_kernel_isa");
  ASSERT_NE(isa, nullptr) << last_error().message;
  const std::string name = reinterpret_cast<const char *(*)(void)>(isa)();
  EXPECT_TRUE(name == "avx512" || name == "avx2" || name == "generic") << name;
  const pk_proc set_max = pk_backend_get_proc_address(cpu, "cpu_set_max_threads");
  ASSERT_NE(set_max, nullptr);
  reinterpret_cast<void (*)(int)>(set_max)(1);  // serial, then back to the whole pool
  reinterpret_cast<void (*)(int)>(set_max)(0);

  EXPECT_EQ(pk_backend_get_proc_address(cpu, "cpu_no_such_thing"), nullptr);
  EXPECT_EQ(last_error().status, PK_UNIMPLEMENTED);
  EXPECT_NE(std::string(last_error().message).find("no extension named 'cpu_no_such_thing'"), std::string::npos);
  EXPECT_EQ(pk_backend_get_proc_address(cpu, ""), nullptr);
  EXPECT_EQ(last_error().status, PK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_backend_get_proc_address(cpu, nullptr), nullptr);
  EXPECT_EQ(last_error().status, PK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_backend_get_proc_address(nullptr, "cpu_kernel_isa"), nullptr);
  EXPECT_EQ(last_error().status, PK_ERROR_INVALID_ARGUMENT);

  open_sim();
  EXPECT_EQ(pk_backend_get_proc_address(sim, "sim_anything"), nullptr);
  EXPECT_EQ(last_error().status, PK_UNIMPLEMENTED);
  EXPECT_NE(std::string(last_error().message).find("offers no extensions"), std::string::npos);
}

}  // namespace
