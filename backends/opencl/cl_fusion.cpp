// cl_fusion.cpp — the OpenCL backend's fusion hook. What to fuse is the shared planner's answer (primkit/region.hpp,
// the same as the cpu and cuda backends get): first the whole offered subgraph as one row program (softmax,
// log_softmax, layer_norm, rms_norm decomposed over their trailing axes), otherwise the longest run of elementwise
// nodes of one shape, optionally closed by a reduction over the last axis. cl_region_printer prints the region as
// OpenCL C, built at offer time; a region the printer does not handle on this device, or whose program fails to
// build, is declined (its nodes then run one by one).
#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cl_backend.hpp"
#include "cl_codegen.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"
#include "primkit/region.hpp"

namespace pk::ocl {

using kit::fail;

namespace {

// Plans the offer: a row program over the whole subgraph, else a run (claims the nodes in `claimed`).
bool plan(const pk_subgraph &graph, std::vector<uint8_t> &claimed, pk_be_kernel &k, std::string &why) {
  int64_t shape[PK_MAX_RANK];
  int32_t ndim = 0;
  std::string row_why;
  if (codegen::row_region_from_subgraph(graph, claimed.data(), k.region, shape, ndim, k.red, row_why)) {
    k.shape.assign(shape, shape + ndim);
    return true;
  }
  std::fill(claimed.begin(), claimed.end(), uint8_t{0});
  if (!codegen::region_from_subgraph(graph, claimed.data(), k.region, shape, ndim, why)) return false;
  k.shape.assign(shape, shape + ndim);
  // A run closed by a reduction reduces the last axis (the planner's rule for runs).
  k.red = k.region.reduces() ? 1 : 0;
  return true;
}

}  // namespace

pk_status ocl_fusion_offer(pk_be_context *ctx, uint32_t device, const pk_subgraph *graph, pk_fusion_claim *claim,
                           pk_be_kernel **out) {
  if (graph == nullptr || claim == nullptr || out == nullptr || device >= ctx->devices.size() ||
      claim->num_nodes != graph->num_nodes) {
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: fusion_offer: bad arguments");
  }
  *out = nullptr;
  DeviceState &dev = *ctx->devices[device];
  try {
    auto k = std::make_unique<pk_be_kernel>();
    k->dev = &dev;
    std::vector<uint8_t> claimed(graph->num_nodes, 0);
    std::string why;
    if (!plan(*graph, claimed, *k, why)) return PK_OK;
    if (!region_printable(k->region, dev.caps, &why)) {
      log_line(ctx, PK_LOG_INFO, "opencl: fused region declined: " + why);
      return PK_OK;
    }
    for (int64_t d : k->shape) k->numel *= static_cast<uint64_t>(d);
    std::string source;
    bool vector = false;
    uint32_t w = 1;
    if (k->red == 0) {
      source = print_elementwise_region(k->region, dev.caps, &vector, &w);
    } else {
      source = print_row_region(k->region, dev.caps, &why);
      if (source.empty()) {
        log_line(ctx, PK_LOG_INFO, "opencl: fused region declined: " + why);
        return PK_OK;
      }
    }
    const char *const *names = k->red == 0 ? kElementwiseKernels : kRowKernels;
    const size_t count = k->red == 0 ? (vector ? 4 : 2) : 2;
    if (make_kernel_set(dev, source, names, count, 0, k->kernels) != PK_OK) {
      // A region that fails to build is declined (the nodes then run one by one), but said in the log.
      log_line(ctx, PK_LOG_WARNING, std::string("opencl: fused region declined: ") + kit::last_error().message);
      return PK_OK;
    }
    k->kernels->vector = vector;
    k->kernels->vec_elems = w;
    std::copy(claimed.begin(), claimed.end(), claim->claimed);
    *out = k.release();
  } catch (const std::bad_alloc &) {
    return fail(PK_ERROR_OUT_OF_MEMORY, 0, -1, "opencl: fusion_offer: out of host memory");
  }
  return PK_OK;
}

namespace {

// A row program's launch: one work-item per row; the dense kernel where every argument is row-major over its
// kind's shape, else the strided one with every argument's strides over the element space.
pk_status run_rows(pk_be_stream *s, pk_be_kernel &k, const pk_tensor *args, uint32_t num_args) {
  const int32_t rank = static_cast<int32_t>(k.shape.size()), lead = rank - k.red;
  uint64_t rows = 1, cols = 1;
  for (int32_t d = 0; d < rank; ++d) (d < lead ? rows : cols) *= static_cast<uint64_t>(k.shape[d]);
  if (rows == 0) return PK_OK;
  const size_t nin = k.region.inputs.size();
  TensorArg a[kMaxRegionArgs];
  bool dense = true;
  for (uint32_t i = 0; i < num_args; ++i) {
    a[i] = tensor_arg(args[i]);
    dense = dense && a[i].dense;
    // Strides over the element space: a row value has none on the reduced axes, a column value none on the others.
    const uint32_t v = i < nin ? k.region.inputs[i] : k.region.outputs[i - nin];
    const codegen::Kind kind = k.region.kind(v);
    Dims st{};
    for (int32_t d = 0; d < args[i].ndim; ++d) st.v[kind == codegen::kCol ? lead + d : d] = a[i].strides.v[d];
    a[i].strides = st;
  }
  KernelSet &ks = *k.kernels;
  cl_kernel kern = ks.k[dense ? 0 : 1].get();
  std::lock_guard<std::mutex> g(ks.mu);
  Args set{kern};
  for (uint32_t i = 0; i < num_args; ++i) {
    set(a[i].mem)(a[i].offset);
    if (!dense) set(a[i].strides);
  }
  if (!dense) set(dims_of(k.shape.data(), rank))(static_cast<cl_int>(rank))(static_cast<cl_int>(lead));
  set(rows)(cols);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, 0, "clSetKernelArg failed");
  const size_t local = kRowLocal, global = round_up(static_cast<size_t>(rows), local);
  return enqueue(s, kern, 1, &global, &local, 0);
}

}  // namespace

pk_status ocl_kernel_launch(pk_be_stream *s, pk_be_kernel *k, const pk_tensor *args, uint32_t num_args) {
  if (pk_status st = sticky_check(s)) return st;
  if (k == nullptr) return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: kernel_launch: NULL kernel");
  // The kernel indexes every argument through the element space it was planned for: other tensors are refused.
  std::string mismatch;
  if (!codegen::fused_args_match(k->region, k->shape, k->red, args, num_args, mismatch))
    return fail(PK_ERROR_INVALID_ARGUMENT, 0, -1, "opencl: kernel_launch: %s", mismatch.c_str());
  const pk_tensor *ts[kMaxRegionArgs];
  for (uint32_t i = 0; i < num_args; ++i) {
    if (!aligned_offset(args[i])) {
      return fail(PK_ERROR_INVALID_ARGUMENT, 0, static_cast<int32_t>(i),
                  "opencl: kernel_launch: argument %u has a byte_offset that is not a multiple of its element size", i);
    }
    ts[i] = &args[i];
  }
  if (k->red > 0) return run_rows(s, *k, args, num_args);
  return run_elementwise(s, *k->kernels, ts, num_args, k->numel, static_cast<int32_t>(k->shape.size()), k->shape.data(),
                         0);
}

pk_status ocl_kernel_destroy(pk_be_context *, pk_be_kernel *k) {
  std::unique_ptr<pk_be_kernel> owned(k);
  return PK_OK;
}

}  // namespace pk::ocl
