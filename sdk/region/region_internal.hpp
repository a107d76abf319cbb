// region_internal.hpp — internal to the region planner (region*.cpp): region.cpp's op rules, node checks and
// single-op regions, and region_plan.cpp's layout helpers, on which launch planning (region_plan.cpp,
// region_plan_lines.cpp) and fusion (region_fusion.cpp) build. No LLVM here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primkit/region.hpp"

namespace pk::codegen::detail {

// --- region.cpp: what the generator compiles

unsigned cls(int32_t d);  // the dtype's class (float, integer, bool, complex: region.cpp's kF ... kC), 0 if none
// Reductions whose attributes are a `dims` list (all share pk_attrs_sum's layout).
inline bool is_dims_reduction(uint32_t op) {
  return is_reduction_op(op) && op != PK_OP_ARGMAX && op != PK_OP_ARGMIN;
}
static_assert(sizeof(pk_attrs_sum) == sizeof(pk_attrs_prod) && sizeof(pk_attrs_sum) == sizeof(pk_attrs_amax) &&
                  sizeof(pk_attrs_sum) == sizeof(pk_attrs_amin) && sizeof(pk_attrs_sum) == sizeof(pk_attrs_any) &&
                  sizeof(pk_attrs_sum) == sizeof(pk_attrs_all) && sizeof(pk_attrs_sum) == sizeof(pk_attrs_xor_sum),
              "reduction attribute layouts differ");

std::string text(const char *fmt, const char *a, const char *b = "");  // fmt (%s twice) formatted
std::string check_node(const Node &n, const std::vector<int32_t> &dtypes);
void take_attrs(Node &n, const void *attrs);
bool last_axis_only(uint32_t op, const void *attrs, int32_t ndim, std::string &why);
// The region of one op with these dtypes; false with `why` where the generator does not compile it.
bool single(uint32_t op_id, const int32_t *in_dtypes, uint32_t num_inputs, const int32_t *out_dtypes,
            uint32_t num_outputs, const void *attrs, Region &out, std::string &why);

// --- region_plan.cpp: tensors as views over an element space

using Strides = std::vector<int64_t>;
Strides strides_of(const pk_tensor &t);  // element strides (row-major where the tensor gives none)
std::vector<int64_t> shape_of(const pk_tensor &t);
int64_t numel(const std::vector<int64_t> &shape);
int32_t bits_dtype(int32_t d, int32_t &lanes);
bool copy_launch(int32_t dtype, const std::vector<int64_t> &shape, uint32_t src, int64_t src_off, Strides src_st,
                 uint32_t dst, int64_t dst_off, Strides dst_st, std::vector<PlannedLaunch> &out, std::string &why);
bool fill_launch(int32_t dtype, double value, const std::vector<int64_t> &shape, uint32_t dst, int64_t dst_off,
                 Strides dst_st, std::vector<PlannedLaunch> &out, std::string &why);

// --- region_plan_lines.cpp: the launches of the line ops and gather (each explained where it is defined)

bool plan_scan(uint32_t op_id, const pk_tensor *in, const pk_tensor *outs, uint32_t nout, int64_t dim,
               std::vector<PlannedLaunch> &out, std::string &why);
bool plan_gather(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, int64_t dim, std::vector<PlannedLaunch> &out,
                 std::string &why);
bool plan_dot(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, const std::vector<int64_t> &lb,
              const std::vector<int64_t> &rb, const std::vector<int64_t> &lc, const std::vector<int64_t> &rc,
              std::vector<PlannedLaunch> &out, std::string &why);
bool plan_order(uint32_t op_id, const pk_tensor &in, const pk_tensor *outs, uint32_t nout, int64_t dim,
                const void *attrs, std::vector<PlannedLaunch> &out, std::string &why);
bool plan_searchsorted(const pk_tensor *in, const pk_tensor &o, const void *attrs, std::vector<PlannedLaunch> &out,
                       std::string &why);
bool plan_scatter(uint32_t op_id, const pk_tensor *in, const pk_tensor &o, int64_t dim, const void *attrs,
                  std::vector<PlannedLaunch> &out, std::string &why);
bool plan_index_put(const pk_tensor *in, uint32_t nin, const pk_tensor &o, const void *attrs,
                    std::vector<PlannedLaunch> &out, std::string &why);
bool plan_fft(uint32_t op_id, const pk_tensor &in, const pk_tensor &o, const void *attrs,
              std::vector<PlannedLaunch> &out, std::string &why);
bool plan_conv(const pk_tensor *in, const pk_tensor &o, const void *attrs, std::vector<PlannedLaunch> &out,
               std::string &why);

}  // namespace pk::codegen::detail
