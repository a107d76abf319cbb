// fusion.cpp — the optional fusion hooks of pk_backend_api: fusion_offer, kernel_launch, kernel_destroy.
//
// What you implement here, once single ops run: the runtime offers a subgraph of a device's pending work
// (pk_subgraph); fusion_offer may claim nodes (pk_fusion_claim) and return one compiled kernel that computes
// them, which the runtime then launches with kernel_launch in place of the claimed nodes, and releases with
// kernel_destroy. Claiming nothing (*out = NULL, PK_OK) is always legal. Until you compile fused kernels the
// three slots stay NULL (kEnableFusion below) and the runtime runs every node on its own; the stubs here compile
// against the ABI so that turning fusion on is filling in bodies, not finding signatures.
//
// To turn it on: implement the TODO(vendor) bodies, set kEnableFusion, and declare PK_DEVICE_FEATURE_FUSION in
// device_get_props (device.cpp). The PrimKit ABI notes (docs/abi.md, "Fusion hooks") say what is offered when.
#include <memory>

#include "backend.hpp"

// A fused kernel compiled by fusion_offer for one device.
// TODO(vendor): hold your compiled kernel (module, function handle) and the shapes it was built for.
struct pk_be_kernel {
  uint32_t device = 0;
};

namespace @BACKEND_NAME@_backend {

using pk::kit::fail;

namespace {

// TODO(vendor): true once fusion_offer claims nodes and kernel_launch runs what it claimed.
constexpr bool kEnableFusion = false;

// Borrowed `graph` for this call only: copy what the kernel keeps. Leave claim->claimed[i] = 0 for a node you
// do not compute.
pk_status backend_fusion_offer(pk_be_context *, uint32_t device, const pk_subgraph *graph, pk_fusion_claim *claim,
                               pk_be_kernel **out) {
  (void)device;
  (void)graph;
  (void)claim;
  // TODO(vendor): find a chain your compiler fuses, compile it, set claim->claimed for its nodes and return it:
  //   auto kernel = std::make_unique<pk_be_kernel>(); kernel->device = device; ... *out = kernel.release();
  *out = nullptr;  // declining is always legal
  return PK_OK;
}

// Arguments come in the order pk_fusion_claim defines: the values the claimed nodes read but do not produce, then
// the values they produce that are needed outside the claim, each group in ascending value index.
pk_status backend_kernel_launch(pk_be_stream *stream, pk_be_kernel *kernel, const pk_tensor *args, uint32_t num_args) {
  if (pk_status status = stream->sticky.check(kName)) return status;
  (void)kernel;
  (void)args;
  (void)num_args;
  // TODO(vendor): enqueue the compiled kernel on the stream; a failure goes through stream->sticky.record(status).
  return fail(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, "@BACKEND_NAME@: kernel_launch: no fused kernels yet");
}

// The host guarantees no enqueued launch still uses the kernel.
pk_status backend_kernel_destroy(pk_be_context *, pk_be_kernel *kernel) {
  std::unique_ptr<pk_be_kernel> owned(kernel);  // TODO(vendor): release your compiled kernel.
  return PK_OK;
}

}  // namespace

void install_fusion(pk_backend_api &api) {
  if (!kEnableFusion) return;  // NULL slots: "not implemented", the runtime runs every node on its own
  api.fusion_offer = pk::kit::guarded<backend_fusion_offer>;
  api.kernel_launch = pk::kit::guarded<backend_kernel_launch>;
  api.kernel_destroy = pk::kit::guarded<backend_kernel_destroy>;
}

}  // namespace @BACKEND_NAME@_backend
