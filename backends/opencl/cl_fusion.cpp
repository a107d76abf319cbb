// cl_fusion.cpp — the OpenCL backend's fusion hook. What to fuse is the shared planner's answer (primkit/region.hpp,
// the same as the cpu and cuda backends get): the longest run of elementwise nodes of one shape. cl_region_printer
// prints the region as OpenCL C, built at offer time; a region the printer does not handle on this device, or whose
// program fails to build, is declined (its nodes then run one by one).
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

// Plans the offer: the longest run of elementwise nodes of one shape (claims the nodes in `claimed`).
bool plan(const pk_subgraph &graph, std::vector<uint8_t> &claimed, pk_be_kernel &k, std::string &why) {
  int64_t shape[PK_MAX_RANK];
  int32_t ndim = 0;
  if (!codegen::region_from_subgraph(graph, claimed.data(), k.region, shape, ndim, why)) return false;
  k.shape.assign(shape, shape + ndim);
  if (k.region.reduces()) {
    why = "the run ends in a reduction";
    return false;
  }
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
    bool vector = false;
    uint32_t w = 1;
    const std::string source = print_elementwise_region(k->region, dev.caps, &vector, &w);
    if (make_kernel_set(dev, source, kElementwiseKernels, vector ? 4 : 2, 0, k->kernels) != PK_OK) {
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
  return run_elementwise(s, *k->kernels, ts, num_args, k->numel, static_cast<int32_t>(k->shape.size()), k->shape.data(),
                         0);
}

pk_status ocl_kernel_destroy(pk_be_context *, pk_be_kernel *k) {
  std::unique_ptr<pk_be_kernel> owned(k);
  return PK_OK;
}

}  // namespace pk::ocl
