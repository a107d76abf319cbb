// cpu_fusion.cpp — the CPU backend's fused kernels: elementwise chains (optionally closed by a reduction over the
// last axis) offered by the runtime's graph compiler are compiled by the LLVM code generator through ORC LLJIT
// into one vectorized loop, run in chunks on the backend's threads. A whole offered subgraph that is a row
// program — softmax, log_softmax, layer_norm or rms_norm decomposed over their trailing axes: reductions whose
// results are broadcast back over the row, per-column weights — becomes one kernel that makes its passes over
// each row while the row is in cache, instead of one pass over memory per primitive.
//
// Compiled code is cached by the generator per (region signature, layout class): the signature is the region's
// canonical key (ops, dtypes, attributes, argument order, values renumbered), the layout class is dense or
// strided-of-rank-r. Shapes are kernel parameters, so one compilation serves every shape of its class, and a
// second graph with the same chain costs only a hash lookup.
//
// Without LLVM (PRIMKIT_CPU_HAVE_CODEGEN undefined) install_fusion leaves the slots NULL: declining is legal.
#include "cpu_fusion.hpp"

#if defined(PRIMKIT_CPU_HAVE_CODEGEN)

#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cpu_kernels.hpp"
#include "primkit/codegen.hpp"
#include "vec_math.hpp"

// A fused region: what the offer compiled (dense layout) plus what a launch needs to find a strided variant.
struct pk_be_kernel {
  pk::codegen::KernelSpec spec;
  std::vector<int64_t> shape;  // element shape
  int32_t red = 0;             // trailing axes of `shape` each work item reduces
  pk::codegen::CpuFn dense = nullptr;
};

namespace pk::cpu {

namespace {

using pk::kit::fail;

// Work items per chunk: below ~64 K elements a parallel region costs more than it saves.
constexpr int64_t kGrainElements = 1 << 16;

pk_status fusion_offer(pk_be_context *, uint32_t, const pk_subgraph *graph, pk_fusion_claim *claim,
                       pk_be_kernel **out) {
  if (graph == nullptr || claim == nullptr || out == nullptr || claim->num_nodes != graph->num_nodes) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: fusion_offer: bad arguments");
  }
  *out = nullptr;
  try {
    auto k = std::make_unique<pk_be_kernel>();
    std::vector<uint8_t> claimed(graph->num_nodes, 0);
    int64_t shape[PK_MAX_RANK];
    int32_t ndim = 0;
    std::string why;
    if (pk::codegen::row_region_from_subgraph(*graph, claimed.data(), k->spec.region, shape, ndim, k->red, why)) {
      // the whole subgraph as one row program
    } else if (pk::codegen::region_from_subgraph(*graph, claimed.data(), k->spec.region, shape, ndim, why)) {
      k->red = k->spec.region.reduces() ? 1 : 0;
    } else {
      return PK_OK;
    }
    k->shape.assign(shape, shape + ndim);
    // Elementwise regions whose outputs outgrow the caches store past them, like the backend's own kernels.
    int64_t elements = 1, out_bytes = 0;
    for (int64_t d : k->shape) elements *= d;
    for (uint32_t v : k->spec.region.outputs)
      out_bytes += elements * static_cast<int64_t>(pk::meta::dtype_size(k->spec.region.dtypes[v]));
    const bool streaming = k->red == 0 && out_bytes >= kStreamingBytes;
    std::string err;
    k->dense = reinterpret_cast<pk::codegen::CpuFn>(pk::codegen::jit_compile(
        k->spec, streaming ? pk::codegen::HostMode::cpu_streaming : pk::codegen::HostMode::cpu, err));
    if (k->dense == nullptr) return PK_OK;  // cannot compile: decline, the nodes run one by one
    std::copy(claimed.begin(), claimed.end(), claim->claimed);
    *out = k.release();
    return PK_OK;
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cpu: fusion_offer: out of memory");
  }
}

pk_status kernel_launch_impl(pk_be_kernel *k, const pk_tensor *args, uint32_t num_args) {
  const pk::codegen::Region &r = k->spec.region;
  std::string mismatch;
  if (!pk::codegen::fused_args_match(r, k->shape, k->red, args, num_args, mismatch))
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: fused kernel launch: %s", mismatch.c_str());
  const int32_t rank = static_cast<int32_t>(k->shape.size());
  pk::codegen::PlannedLaunch l;  // the launch as the generator's layout check sees it
  l.region = r;
  l.shape = k->shape;
  l.red = k->red;
  int64_t n = 1, cols = 1;
  for (int32_t d = 0; d < rank; ++d) (d < rank - k->red ? n : cols) *= k->shape[d];
  if (n == 0) return PK_OK;
  std::vector<void *> ptrs;
  const size_t nin = r.inputs.size();
  for (uint32_t i = 0; i < num_args; ++i) {
    ptrs.push_back(static_cast<char *>(args[i].data) + args[i].byte_offset);
    // Strides over the element space: a row value has none on the reduced axes, a column value none on the others.
    pk::kit::View v = pk::kit::view_of(args[i]);
    std::vector<int64_t> s(v.strides, v.strides + v.ndim);
    const uint32_t val = i < nin ? r.inputs[i] : r.outputs[i - nin];
    if (r.kind(val) == pk::codegen::kCol) s.insert(s.begin(), static_cast<size_t>(rank - v.ndim), 0);
    s.resize(static_cast<size_t>(rank), 0);
    l.args.push_back(pk::codegen::PlanArg{i, 0, std::move(s)});
  }
  pk::codegen::CpuFn fn = k->dense;
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;
  const uint64_t uniform = rank > 0 && !pk::codegen::plan_is_dense(l) ? pk::codegen::plan_uniform_inputs(l) : 0;
  if (uniform != 0 && pk::codegen::plan_is_dense(l, uniform)) {
    // Dense but for inputs broadcast over everything (scalar constants): the dense kernel reading those at element
    // 0, compiled once (the generator caches it by its key). The strided kernel indexes every element through the
    // shape and does not vectorize: gelu_new's chain ran 20x slower on it.
    pk::codegen::KernelSpec spec = k->spec;
    spec.uniform = uniform;
    std::string err;
    fn = reinterpret_cast<pk::codegen::CpuFn>(pk::codegen::jit_compile(spec, pk::codegen::HostMode::cpu, err));
    if (fn == nullptr) return fail(PK_ERROR_INTERNAL, 0, -1, "cpu: fused kernel (uniform inputs): %s", err.c_str());
  } else if (rank > 0 && !pk::codegen::plan_is_dense(l)) {
    // Strided views (graph inputs or outputs the caller passed with strides): the rank-r variant, compiled once.
    pk::codegen::KernelSpec strided = k->spec;
    strided.rank = rank;
    std::string err;
    fn = reinterpret_cast<pk::codegen::CpuFn>(pk::codegen::jit_compile(strided, pk::codegen::HostMode::cpu, err));
    if (fn == nullptr) return fail(PK_ERROR_INTERNAL, 0, -1, "cpu: fused kernel (strided): %s", err.c_str());
    shape = k->shape;
    for (const auto &a : l.args) strides.push_back(a.strides);
  }
  pk::codegen::Params params(ptrs, n, cols, shape, strides);
  void **values = params.values();
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(cols, 1));
  parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) { pk::codegen::call_jit(fn, values, lo, hi); });
  return PK_OK;
}

pk_status kernel_launch(pk_be_stream *, pk_be_kernel *k, const pk_tensor *args, uint32_t num_args) {
  if (k == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "cpu: kernel_launch: NULL kernel");
  try {
    return kernel_launch_impl(k, args, num_args);
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "cpu: fused kernel: out of memory");
  }
}

pk_status kernel_destroy(pk_be_context *, pk_be_kernel *k) {
  // The machine code stays in the generator's cache for the next region with the same signature.
  std::unique_ptr<pk_be_kernel> owned(k);
  return PK_OK;
}

}  // namespace

void install_fusion(pk_backend_api &api) {
  api.fusion_offer = pk::kit::guarded<fusion_offer>;
  api.kernel_launch = pk::kit::guarded<kernel_launch>;
  api.kernel_destroy = pk::kit::guarded<kernel_destroy>;
}

bool fusion_available() {
  return true;
}

}  // namespace pk::cpu

#else

namespace pk::cpu {
void install_fusion(pk_backend_api &) {}
bool fusion_available() {
  return false;
}
}  // namespace pk::cpu

#endif
