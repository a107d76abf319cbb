// cpu_fusion.hpp — the CPU backend's fused kernels (cpu_fusion.cpp): LLVM-JIT-compiled elementwise chains and
// row windows (softmax, layer_norm, rms_norm).
#pragma once

#include "primkit/primkit.h"

namespace pk::cpu {
// Sets fusion_offer, kernel_launch and kernel_destroy in the backend's table (leaves them NULL when the build
// has no LLVM code generator).
void install_fusion(pk_backend_api &api);
// True when install_fusion installs real hooks: the device then advertises PK_DEVICE_FEATURE_FUSION.
bool fusion_available();
}  // namespace pk::cpu
