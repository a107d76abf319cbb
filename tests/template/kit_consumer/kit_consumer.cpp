// kit_consumer.cpp — uses each optional part of the installed backend kit once and checks the answer against
// values computed independently (mpmath at 30 digits, and the C library in long double):
//   1. the device math as C++ (devmath.hpp): erf_inv, digamma and erfcx, which it computes itself;
//   2. the device math as program text (what an OpenCL-style backend compiles): every file embedded, in order;
//   3. the code generator: a JIT-compiled f32 exp kernel over 4096 elements.
// Exit status 0 when every check holds; each failure is printed.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "devmath.hpp"
#include "devmath_text.inc"
#include "primkit/codegen.hpp"

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

double rel_err(double got, double want) {
  return std::fabs(got - want) / std::fabs(want);
}

}  // namespace

int main() {
  // 1. mpmath.erfinv(0.5), mpmath.digamma(0.25), mpmath.exp(25) * mpmath.erfc(5) at 30 digits; 4 ulp of slack.
  expect(rel_err(pk::devmath::pk_dm_erf_inv(0.5), 0.476936276204469873381418353643) < 9e-16, "devmath erf_inv(0.5)");
  expect(rel_err(pk::devmath::pk_dm_digamma(0.25), -4.22745353337626540808953014610) < 9e-16, "devmath digamma(0.25)");
  expect(rel_err(pk::devmath::pk_dm_erfcx(5.0), 0.110704637733068626370212086492) < 9e-16, "devmath erfcx(5)");

  // 2. The text an OpenCL-style program is built from: port.h first (it defines the language mapping), then
  // the functions that use it.
  expect(std::strstr(kDevmathPort, "PK_DM_FN") != nullptr, "embedded port.h defines PK_DM_FN");
  expect(std::strstr(kDevmathErf, "pk_dm_erfcx(") != nullptr, "embedded erf.h holds pk_dm_erfcx");

  // 3. exp over f32 as one generated kernel, run by the host JIT.
  pk::codegen::KernelSpec spec;
  spec.region.dtypes = {PK_DTYPE_F32, PK_DTYPE_F32};
  spec.region.inputs = {0};
  pk::codegen::Node node;
  node.op_id = PK_OP_EXP;
  node.inputs = {0};
  node.output = 1;
  spec.region.nodes = {node};
  spec.region.outputs = {1};
  const std::string why = pk::codegen::check(spec.region);
  expect(why.empty(), "codegen accepts exp f32" + (why.empty() ? std::string() : ": " + why));
  std::string err;
  auto fn = reinterpret_cast<pk::codegen::CpuFn>(pk::codegen::jit_compile(spec, pk::codegen::HostMode::cpu, err));
  expect(fn != nullptr, "codegen compiles exp f32" + (err.empty() ? std::string() : ": " + err));
  if (fn == nullptr) return 1;
  const int64_t n = 4096;
  std::vector<float> x(n), y(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) x[i] = -80.0f + 168.0f * static_cast<float>(i) / static_cast<float>(n);
  pk::codegen::Params params({x.data(), y.data()}, n, 1, {}, {});
  pk::codegen::call_jit(fn, params.values(), 0, n);
  double worst = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const long double want = std::exp(static_cast<long double>(x[i]));
    const long double ulp = std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
    worst = std::fmax(worst, static_cast<double>(std::fabs(y[i] - want) / ulp));
  }
  char line[96];
  std::snprintf(line, sizeof line, "JIT exp f32 over [-80, 88): worst %.2f ulp (limit 1)", worst);
  expect(worst <= 1.0, line);
  return failures == 0 ? 0 : 1;
}
