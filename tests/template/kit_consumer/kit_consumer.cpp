// kit_consumer.cpp — uses each optional part of the installed backend kit once and checks the answer against
// values computed independently (mpmath at 30 digits, and the C library in long double):
//   1. the device math as C++ (devmath.hpp): erf_inv, digamma and erfcx, which it computes itself;
//   2. the device math as program text (what an OpenCL-style backend compiles): every file embedded, in order;
//   3. the fusion planner (PrimKit::region, no LLVM): an elementwise chain and a row program (x - amax(x) over the
//      last axis, broadcast back) planned from small offered subgraphs, checked node by node;
//   4. the code generator, where the prefix has it (KIT_HAS_CODEGEN): a JIT-compiled f32 exp kernel over 4096
//      elements.
// Exit status 0 when every check holds; each failure is printed.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "devmath.hpp"
#include "devmath_text.inc"
#include "primkit/op_info.hpp"
#include "primkit/region.hpp"
#if defined(KIT_HAS_CODEGEN)
#include "primkit/codegen.hpp"
#endif

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

double rel_err(double got, double want) {
  return std::fabs(got - want) / std::fabs(want);
}

pk_graph_value value(int64_t rows, int64_t cols, bool is_input, bool is_output) {
  pk_graph_value v{};
  v.struct_size = sizeof v;
  v.dtype = pk::meta::dtype_desc(PK_DTYPE_F32);
  v.ndim = cols > 0 ? 2 : 1;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.is_input = is_input;
  v.is_output = is_output;
  return v;
}

pk_graph_node node(uint32_t op, const void *attrs, const uint32_t *in, uint32_t nin, const uint32_t *out) {
  pk_graph_node n{};
  n.struct_size = sizeof n;
  n.op_id = op;
  n.attrs = attrs;
  n.num_inputs = nin;
  n.inputs = in;
  n.num_outputs = 1;
  n.outputs = out;
  return n;
}

// 3. The planner alone, on the subgraphs a runtime offers a backend's fusion hook.
void check_planner() {
  // mul(exp(x), y) over [4, 8]: values x, y, exp(x), the product (the graph's output).
  {
    const pk_graph_value vals[] = {value(4, 8, true, false), value(4, 8, true, false), value(4, 8, false, false),
                                   value(4, 8, false, true)};
    const uint32_t in0[] = {0}, out0[] = {2}, in1[] = {2, 1}, out1[] = {3};
    const pk_graph_node nodes[] = {node(PK_OP_EXP, nullptr, in0, 1, out0), node(PK_OP_MUL, nullptr, in1, 2, out1)};
    const pk_subgraph g{sizeof(pk_subgraph), 4, vals, 2, nodes};
    uint8_t claimed[2] = {0, 0};
    pk::codegen::Region r;
    int64_t shape[PK_MAX_RANK] = {0};
    int32_t ndim = 0;
    std::string why;
    const bool ok = pk::codegen::region_from_subgraph(g, claimed, r, shape, ndim, why);
    expect(ok && claimed[0] && claimed[1], "planner claims exp -> mul" + (ok ? std::string() : ": " + why));
    // Arguments in claim order (x, y, then the product); the nodes read the renumbered values.
    expect(ok && r.inputs.size() == 2 && r.outputs.size() == 1 && r.nodes.size() == 2 &&
               r.nodes[0].op_id == PK_OP_EXP && r.nodes[0].inputs == std::vector<uint32_t>{r.inputs[0]} &&
               r.nodes[1].op_id == PK_OP_MUL &&
               r.nodes[1].inputs == std::vector<uint32_t>{r.nodes[0].output, r.inputs[1]} &&
               r.outputs[0] == r.nodes[1].output && !r.reduces() && ndim == 2 && shape[0] == 4 && shape[1] == 8,
           "planner's elementwise region: two inputs, exp then mul, one output over [4, 8]");
  }
  // sub(x, broadcast_in_dim(amax(x, dims = [1]))) over [3, 5]: one row program over the last axis.
  {
    const pk_graph_value vals[] = {value(3, 5, true, false), value(3, 0, false, false), value(3, 5, false, false),
                                   value(3, 5, false, true)};
    pk_attrs_amax amax{};
    amax.struct_size = sizeof amax;
    amax.num_dims = 1;
    amax.dims[0] = 1;
    pk_attrs_broadcast_in_dim bcast{};
    bcast.struct_size = sizeof bcast;
    bcast.num_shape = 2;
    bcast.shape[0] = 3;
    bcast.shape[1] = 5;
    bcast.num_broadcast_dimensions = 1;
    bcast.broadcast_dimensions[0] = 0;
    const uint32_t in0[] = {0}, out0[] = {1}, in1[] = {1}, out1[] = {2}, in2[] = {0, 2}, out2[] = {3};
    const pk_graph_node nodes[] = {node(PK_OP_AMAX, &amax, in0, 1, out0),
                                   node(PK_OP_BROADCAST_IN_DIM, &bcast, in1, 1, out1),
                                   node(PK_OP_SUB, nullptr, in2, 2, out2)};
    const pk_subgraph g{sizeof(pk_subgraph), 4, vals, 3, nodes};
    uint8_t claimed[3] = {0, 0, 0};
    pk::codegen::Region r;
    int64_t shape[PK_MAX_RANK] = {0};
    int32_t ndim = 0, red = 0;
    std::string why;
    const bool ok = pk::codegen::row_region_from_subgraph(g, claimed, r, shape, ndim, red, why);
    expect(ok && claimed[0] && claimed[1] && claimed[2],
           "planner claims x - amax(x) as a row program" + (ok ? std::string() : ": " + why));
    // The broadcast disappears: the row value (amax's result) is read per element directly.
    const bool shape_ok = ok && r.nodes.size() == 2 && r.nodes[0].op_id == PK_OP_AMAX &&
                          r.nodes[1].op_id == PK_OP_SUB && r.kind(r.nodes[0].output) == pk::codegen::kRow &&
                          r.kind(r.nodes[1].output) == pk::codegen::kElem && r.inputs.size() == 1 &&
                          r.outputs.size() == 1 && red == 1 && ndim == 2 && shape[0] == 3 && shape[1] == 5;
    expect(shape_ok, "planner's row program: amax per row, sub per element, one reduced axis of [3, 5]");
    // A launch must pass the tensors the region was planned for, and nothing else.
    int64_t good[2] = {3, 5}, bad[2] = {3, 6};
    float storage[2][18] = {};
    pk_tensor args[2] = {};
    for (int i = 0; i < 2; ++i) {
      pk_tensor &t = args[i];
      t.struct_size = sizeof t;
      t.data = storage[i];
      t.dtype = pk::meta::dtype_desc(PK_DTYPE_F32);
      t.ndim = 2;
      t.shape = good;
    }
    const std::vector<int64_t> space(shape, shape + ndim);
    std::string mismatch;
    const bool match = ok && pk::codegen::fused_args_match(r, space, red, args, 2, mismatch);
    expect(match, "planner accepts matching args" + (match ? std::string() : ": " + mismatch));
    args[1].shape = bad;
    expect(ok && !pk::codegen::fused_args_match(r, space, red, args, 2, mismatch), "planner refuses [3, 6] output");
  }
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

  check_planner();

#if defined(KIT_HAS_CODEGEN)
  // 4. exp over f32 as one generated kernel, run by the host JIT.
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
#endif
  return failures == 0 ? 0 : 1;
}
