// PTX proven valid without a GPU: every module the cuda backend can load — each supported single op (dense and
// strided layouts) and representative fused regions — is generated for sm_80 and sm_90 and assembled with
// ptxas. Skipped (with a message) when ptxas is not on PATH.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "codegen_regions.hpp"
#include "primkit/codegen.hpp"
#include "primkit/op_info.hpp"

namespace {

std::string find_ptxas() {
  const char *path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::string p = path;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string cand = p.substr(start, end - start) + "/ptxas";
    if (end > start && access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

// Assembles one PTX text; returns ptxas's output on failure, "" on success.
std::string assemble(const std::string &ptxas, const std::string &ptx, int sm, const std::string &dir, int id) {
  const std::string src = dir + "/k" + std::to_string(id) + "_sm" + std::to_string(sm) + ".ptx";
  {
    std::ofstream f(src);
    f << ptx;
  }
  const std::string cmd = ptxas + " -arch=sm_" + std::to_string(sm) + " " + src + " -o " + src + ".cubin 2>&1";
  std::string out;
  FILE *p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  int rc = pclose(p);
  std::remove((src + ".cubin").c_str());
  if (rc != 0) return out.empty() ? "ptxas failed" : out;
  std::remove(src.c_str());
  return "";
}

std::string describe(const pk::codegen::Region &r) {
  std::string s;
  for (const auto &n : r.nodes)
    s += std::string(pk::meta::op_name(n.op_id)) + "(" + pk::meta::dtype_name(r.dtypes[n.inputs[0]]) + ") ";
  return s;
}

TEST(CodegenPtx, EveryModuleAssemblesForSm80AndSm90) {
  const std::string ptxas = find_ptxas();
  if (ptxas.empty()) GTEST_SKIP() << "ptxas not on PATH: PTX validity not checked (install the CUDA toolkit)";
  char tmpl[] = "/tmp/primkit_ptx_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::vector<pk::codegen::KernelSpec> specs = pk::test::all_cuda_specs();
  ASSERT_GT(specs.size(), 450u);
  int id = 0, failures = 0;
  for (const auto &spec : specs) {
    for (int sm : {80, 90}) {
      std::string ptx, entry, err;
      ASSERT_TRUE(pk::codegen::emit_ptx(spec, sm, ptx, entry, err)) << describe(spec.region) << ": " << err;
      ASSERT_NE(ptx.find(".entry " + entry), std::string::npos) << "kernel entry missing for " << describe(spec.region);
      // The numerics promise: IEEE instructions only (no approximate division/sqrt, no flush to zero).
      EXPECT_EQ(ptx.find(".approx"), std::string::npos) << describe(spec.region);
      EXPECT_EQ(ptx.find(".ftz"), std::string::npos) << describe(spec.region);
      std::string out = assemble(ptxas, ptx, sm, dir, id++);
      if (!out.empty()) {
        ADD_FAILURE() << "ptxas -arch=sm_" << sm << " rejects " << describe(spec.region) << " (rank " << spec.rank
                      << "):\n"
                      << out;
        if (++failures > 5) return;
      }
    }
  }
  rmdir(dir.c_str());
  std::printf("assembled %d PTX modules\n", id);
}

}  // namespace

namespace {

// What the PTX of relu(x * y + z) in f32 must look like: f32 arithmetic only (no f64 detour), loads and stores
// through the global state space (kernel pointer parameters inferred global), a grid-stride loop over n.
TEST(CodegenPtx, Fp32ChainStaysFp32WithGlobalMemoryAccess) {
  pk::codegen::KernelSpec spec{pk::test::fused_relu_fma(PK_DTYPE_F32), 0};
  for (int sm : {80, 90}) {
    std::string ptx, entry, err;
    ASSERT_TRUE(pk::codegen::emit_ptx(spec, sm, ptx, entry, err)) << err;
    EXPECT_NE(ptx.find(".target sm_" + std::to_string(sm)), std::string::npos);
    EXPECT_EQ(ptx.find(".f64"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("ld.global"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("st.global"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("mul.rn.f32"), std::string::npos) << ptx;  // no contraction into fma: two roundings as unfused
    EXPECT_NE(ptx.find("%nctaid.x"), std::string::npos) << ptx;
  }
}

}  // namespace
