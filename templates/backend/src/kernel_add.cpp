// kernel_add.cpp — the worked example: add for f32, compiled in with -D@BACKEND_NAME_UPPER@_ENABLE_EXAMPLE_ADD=ON.
//
// What the runtime guarantees before this runs: two f32 inputs and one f32 output of the same shape (add has no
// implicit broadcasting: a broadcast input arrives as a view with zero strides), every element inside its
// storage, the output not overlapping an input. What the kernel must honour: strides (in elements, possibly 0 or
// negative for inputs) and byte_offset — conformance feeds transposed, offset and broadcast views, and an
// "ignores strides" bug is one of the planted bugs it must catch.
//
// The simulated device keeps its memory in host RAM, so this kernel reads tensor data directly.
// TODO(vendor): on real hardware, this is where you enqueue your device's add kernel on the stream.
#include "kernels.hpp"

namespace @BACKEND_NAME@_backend {

pk_status add_f32(const Launch &launch) {
  const pk::kit::View a = pk::kit::view_of(launch.inputs[0]);
  const pk::kit::View b = pk::kit::view_of(launch.inputs[1]);
  const pk::kit::View out = pk::kit::view_of(launch.outputs[0]);
  if (a.contiguous && b.contiguous && out.contiguous) {
    // The common case: one flat loop the compiler vectorizes.
    const float *pa = a.at<float>(0);
    const float *pb = b.at<float>(0);
    float *po = out.at<float>(0);
    for (int64_t i = 0; i < out.numel; ++i) po[i] = pa[i] + pb[i];
    return PK_OK;
  }
  const pk::kit::View *views[] = {&a, &b, &out};
  pk::kit::for_each_offsets(views, out.shape, out.ndim, [&](const int64_t *offset) {
    // IEEE add in f32 is correctly rounded, which is add's contract (docs/ops.md).
    *out.at<float>(offset[2]) = *a.at<float>(offset[0]) + *b.at<float>(offset[1]);
  });
  return PK_OK;
}

}  // namespace @BACKEND_NAME@_backend
