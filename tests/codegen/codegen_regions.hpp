// codegen_regions.hpp — the kernel specs the cuda backends generate, for the PTX and emulator tests.
#pragma once

#include <algorithm>
#include <vector>

#include "primkit/codegen.hpp"
#include "row_offer.hpp"

namespace pk::test {

// relu(x * y + z) as the runtime offers it after decomposing relu: mul, add, fill(0), maximum.
inline pk::codegen::Region fused_relu_fma(int32_t dt) {
  pk::codegen::Region r;
  r.dtypes = {dt, dt, dt, dt, dt, dt, dt};
  r.inputs = {0, 1, 2};
  pk::codegen::Node mul{PK_OP_MUL, {0, 1}, 3, 0, 0};
  pk::codegen::Node add{PK_OP_ADD, {3, 2}, 4, 0, 0};
  pk::codegen::Node zero{PK_OP_FILL, {4}, 5, 0.0, 0};
  pk::codegen::Node mx{PK_OP_MAXIMUM, {4, 5}, 6, 0, 0};
  r.nodes = {mul, add, zero, mx};
  r.outputs = {6};
  return r;
}

// sum over the last axis of exp(x - m), also storing the elementwise intermediate t = x - m (softmax's core).
inline pk::codegen::Region fused_sub_exp_sum(int32_t dt) {
  pk::codegen::Region r;
  r.dtypes = {dt, dt, dt, dt, dt};
  r.inputs = {0, 1};
  r.nodes = {pk::codegen::Node{PK_OP_SUB, {0, 1}, 2, 0, 0}, pk::codegen::Node{PK_OP_EXP, {2}, 3, 0, 0},
             pk::codegen::Node{PK_OP_SUM, {3}, 4, 0, 0}};
  r.outputs = {2, 4};
  return r;
}

// amax over the last axis of |convert(x -> f32)|.
inline pk::codegen::Region fused_convert_abs_amax(int32_t from) {
  pk::codegen::Region r;
  r.dtypes = {from, PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F32};
  r.inputs = {0};
  r.nodes = {pk::codegen::Node{PK_OP_CONVERT_ELEMENT_TYPE, {0}, 1, 0, 0}, pk::codegen::Node{PK_OP_ABS, {1}, 2, 0, 0},
             pk::codegen::Node{PK_OP_AMAX, {2}, 3, 0, 0}};
  r.outputs = {3};
  return r;
}

inline std::vector<pk::codegen::Region> fused_regions() {
  return {fused_relu_fma(PK_DTYPE_F32),    fused_relu_fma(PK_DTYPE_F16),         fused_relu_fma(PK_DTYPE_BF16),
          fused_relu_fma(PK_DTYPE_F64),    fused_sub_exp_sum(PK_DTYPE_F32),      fused_sub_exp_sum(PK_DTYPE_F64),
          fused_sub_exp_sum(PK_DTYPE_F16), fused_convert_abs_amax(PK_DTYPE_I32), fused_convert_abs_amax(PK_DTYPE_BF16)};
}

// The row program of a composite's decomposition over the last axis of x [4, 8] (plus weight [8] and, for
// layer_norm, bias [8]), as row_region_from_subgraph builds it for a fusion offer. Empty when it declines.
inline pk::codegen::Region row_program(const char *op, int32_t dt) {
  pk::meta::TensorType x{}, w{};
  x.dtype = w.dtype = dt;
  x.ndim = 2;
  x.shape[0] = 4;
  x.shape[1] = w.shape[0] = 8;
  w.ndim = 1;
  std::vector<pk::meta::TensorType> types{x};
  const std::string name = op;
  if (name == "layer_norm" || name == "rms_norm") types.push_back(w);
  if (name == "layer_norm") types.push_back(w);
  alignas(16) unsigned char attrs[pk::meta::kMaxAttrsSize] = {0};
  const pk::meta::OpInfo *info = pk::meta::find_op(op);
  if (info == nullptr) return {};
  pk::meta::default_attrs(*info, attrs);
  if (name == "softmax" || name == "log_softmax") reinterpret_cast<pk_attrs_softmax *>(attrs)->dim = 1;
  Offer offer;
  std::string why;
  pk::codegen::Region r;
  int64_t shape[PK_MAX_RANK];
  int32_t ndim = 0, red = 0;
  if (!offer.build(op, types, attrs, why) ||
      !pk::codegen::row_region_from_subgraph(offer.graph, offer.claimed.data(), r, shape, ndim, red, why))
    return {};
  return r;
}

inline std::vector<pk::codegen::Region> row_programs() {
  std::vector<pk::codegen::Region> out;
  for (const char *op : {"softmax", "log_softmax", "layer_norm", "rms_norm"})
    for (int32_t dt : {PK_DTYPE_F32, PK_DTYPE_F16, PK_DTYPE_BF16, PK_DTYPE_F64}) out.push_back(row_program(op, dt));
  return out;
}

// The specs the cuda backend builds: each supported single op and the fused regions above in the dense layout;
// the strided layout of rank 3 for one dtype of each op and for the fused regions; ranks 1..8 for
// representatives. (The strided index code depends only on the rank and the argument count, not on the op or
// dtype, so this covers every strided variant's code paths with a third of the ptxas runs.)
inline std::vector<pk::codegen::KernelSpec> all_cuda_specs() {
  std::vector<pk::codegen::KernelSpec> out;
  std::vector<uint32_t> strided_ops;
  for (const auto &r : pk::codegen::supported_single_op_regions()) {
    const uint32_t op = r.nodes[0].op_id;
    // Convolution runs only as the strided kernel over [N, G, O/G, out (2), C/G, k (2)]: every dtype there.
    if (op == PK_OP_CONVOLUTION) {
      out.push_back(pk::codegen::KernelSpec{r, 8});
      continue;
    }
    out.push_back(pk::codegen::KernelSpec{r, 0});
    if (std::find(strided_ops.begin(), strided_ops.end(), op) == strided_ops.end()) {
      strided_ops.push_back(op);
      out.push_back(pk::codegen::KernelSpec{r, 3});
    }
  }
  for (const auto &r : fused_regions()) {
    out.push_back(pk::codegen::KernelSpec{r, 0});
    out.push_back(pk::codegen::KernelSpec{r, 3});
  }
  // Row programs (softmax, log_softmax, layer_norm, rms_norm): dense in every dtype, strided (rank 2) in f32.
  for (const auto &r : row_programs()) {
    out.push_back(pk::codegen::KernelSpec{r, 0});
    if (!r.nodes.empty() && r.dtypes[r.inputs[0]] == PK_DTYPE_F32) out.push_back(pk::codegen::KernelSpec{r, 2});
  }
  for (int rank = 1; rank <= PK_MAX_RANK; ++rank) {
    if (rank == 3) continue;
    out.push_back(pk::codegen::KernelSpec{fused_relu_fma(PK_DTYPE_F32), rank});
    out.push_back(pk::codegen::KernelSpec{fused_sub_exp_sum(PK_DTYPE_F32), rank});
  }
  return out;
}

}  // namespace pk::test
