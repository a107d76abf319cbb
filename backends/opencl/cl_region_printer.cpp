// cl_region_printer.cpp — the fusion planner's regions (primkit/region.hpp) printed as OpenCL C: the OpenCL
// backend's counterpart of the LLVM printer (sdk/codegen), so both fuse what the one planner plans. Every node is
// printed by the expressions the backend's own kernels use (cl_codegen.cpp's op_expr, cl_special's device math):
// a fused chain computes what its ops compute one by one.
//
//   elementwise regions: gen_elementwise's program (dense, strided and vector kernels) of the region's nodes.
#include <string>
#include <vector>

#include "cl_backend.hpp"
#include "cl_codegen.hpp"
#include "cl_codegen_internal.hpp"
#include "primkit/op_info.hpp"
#include "primkit/region.hpp"

namespace pk::ocl {

using codegen::Node;
using codegen::Region;

namespace {

bool no(std::string *why, const std::string &reason) {
  if (why) *why = reason;
  return false;
}

// The node as the elementwise generator's EwNode (round mode, conversion target, fill value as storage bits).
EwNode ew_node(const Node &n, const std::vector<int32_t> &dtypes) {
  EwNode e;
  e.op_id = n.op_id;
  e.num_inputs = static_cast<uint32_t>(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size() && i < 3; ++i) e.inputs[i] = static_cast<int32_t>(n.inputs[i]);
  e.output = static_cast<int32_t>(n.output);
  const int32_t out_dt = dtypes[n.output];
  if (n.op_id == PK_OP_CONVERT_ELEMENT_TYPE) e.variant = static_cast<uint32_t>(out_dt);
  if (n.op_id == PK_OP_ROUND) e.variant = static_cast<uint32_t>(n.round_mode);
  if (n.op_id == PK_OP_FILL) e.const_bits = value_bits(n.fill_value, out_dt);
  return e;
}

// Whether one node prints: an elementwise op the backend generates for these dtypes, a fill, or (reducing
// regions, later) a reduction.
bool node_printable(const Node &n, const std::vector<int32_t> &dtypes, const DeviceCaps &caps, std::string *why) {
  const char *name = pk::meta::op_name(n.op_id);
  const int32_t out_dt = dtypes[n.output];
  if (codegen::is_reduction_op(n.op_id)) return no(why, std::string(name) + ": reductions are not printed yet");
  for (uint32_t v : n.inputs)
    if (is_cx(dtypes[v])) return no(why, std::string(name) + ": complex values are not fused");
  if (is_cx(out_dt)) return no(why, std::string(name) + ": complex values are not fused");
  if (n.op_id == PK_OP_FILL) {
    static const std::string kNone[3];
    if (!dtype_supported(out_dt, caps, why)) return false;
    return !op_expr(n.op_id, out_dt, out_dt, 0, 0, kNone, cl_type(out_dt).ct, caps, why).empty();
  }
  const meta::OpInfo *op = meta::find_op(n.op_id);
  if (op == nullptr || !is_ew_op(*op) || n.inputs.empty() || n.inputs.size() > 3)
    return no(why, std::string(name) + ": not an elementwise op of the OpenCL backend");
  int32_t in_dt[3] = {-1, -1, -1};
  for (size_t i = 0; i < n.inputs.size(); ++i) in_dt[i] = dtypes[n.inputs[i]];
  return ew_op_supported(n.op_id, in_dt, static_cast<uint32_t>(n.inputs.size()), out_dt, ew_node(n, dtypes).variant,
                         caps, why);
}

}  // namespace

bool region_printable(const Region &r, const DeviceCaps &caps, std::string *why) {
  const std::string w = codegen::check(r);
  if (!w.empty()) return no(why, w);
  if (r.num_extra != 0) return no(why, "regions with per-launch scalars are not printed");
  if (r.num_args() > kMaxRegionArgs) return no(why, "more arguments than a fused kernel takes");
  for (int32_t dt : r.dtypes)
    if (!dtype_supported(dt, caps, why)) return false;
  for (const Node &n : r.nodes) {
    if (!node_printable(n, r.dtypes, caps, why)) return false;
    // gen_elementwise takes a node's type from its inputs: a fill without one (full) only in reducing regions.
    if (n.op_id == PK_OP_FILL && n.inputs.empty() && !r.reduces())
      return no(why, "fill without input: not printed in elementwise regions");
  }
  return true;
}

std::string print_elementwise_region(const Region &r, const DeviceCaps &caps, bool *vector, uint32_t *vec_elems) {
  EwGraph g;
  g.dtypes = r.dtypes;
  for (uint32_t v : r.inputs) g.args.push_back(static_cast<int32_t>(v));
  g.num_in_args = static_cast<uint32_t>(g.args.size());
  for (uint32_t v : r.outputs) g.args.push_back(static_cast<int32_t>(v));
  for (const Node &n : r.nodes) g.nodes.push_back(ew_node(n, r.dtypes));
  return gen_elementwise(g, caps, vector, vec_elems);
}

}  // namespace pk::ocl
