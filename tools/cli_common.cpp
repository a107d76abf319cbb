// cli_common.cpp — helpers shared by the primkit subcommands (declared in cli_common.hpp).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace pk::cli {

std::string last_error_message() {
  pk_error_info e;
  e.struct_size = sizeof(e);
  pk_get_last_error(&e);
  return e.message;
}

pk_runtime_t open_runtime(uint32_t flags) {
  pk_runtime_options opts;
  PK_STRUCT_INIT(opts);
  opts.flags = flags;
  pk_runtime_t rt = nullptr;
  if (pk_runtime_create(&opts, &rt) != PK_OK) {
    std::fprintf(stderr, "primkit: cannot create the runtime: %s\n", last_error_message().c_str());
    std::exit(2);
  }
  return rt;
}

bool looks_like_path(const std::string &name_or_path) {
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > 3 && name_or_path.compare(name_or_path.size() - 3, 3, ".so") == 0);
}

// A runtime for one backend named on the command line: with a plugin path, discovery is off, so the installed
// plugin of the same name cannot clash with the one asked for.
pk_runtime_t open_runtime_for(const std::string &name_or_path) {
  return open_runtime(looks_like_path(name_or_path) ? PK_RUNTIME_NO_DISCOVERY : 0);
}

pk_backend_t resolve_backend(pk_runtime_t rt, const std::string &name_or_path) {
  pk_backend_t b = nullptr;
  if (looks_like_path(name_or_path)) {
    if (pk_runtime_load_plugin(rt, name_or_path.c_str(), &b) == PK_OK) return b;
    // Already discovered under the same name? Then the explicit path shadows nothing: report clearly.
    std::fprintf(stderr, "primkit: %s\n", last_error_message().c_str());
    return nullptr;
  }
  if (pk_runtime_find_backend(rt, name_or_path.c_str(), &b) == PK_OK) return b;
  std::fprintf(stderr, "primkit: no backend named '%s' was found", name_or_path.c_str());
  const char *errors = pk_runtime_load_errors(rt);
  if (errors && *errors)
    std::fprintf(stderr, "; plugins that failed to load:\n%s", errors);
  else
    std::fprintf(stderr, " (searched $PRIMKIT_PLUGIN_PATH and the install's plugin folder)\n");
  return nullptr;
}

std::vector<int32_t> op_primary_dtypes(const pk::meta::OpInfo &op) {
  std::vector<int32_t> out;
  uint32_t mask = op.num_type_vars ? op.type_vars[0].dtype_mask : 0;
  for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d)
    if (mask & (1u << d)) out.push_back(d);
  return out;
}

bool query_coverage(pk_device_t dev, const pk::meta::OpInfo &op, int32_t dtype, std::string *reason) {
  // Operands of the first type variable take `dtype`; other variables take i64 if admitted, else their first.
  std::vector<int32_t> var_dtype(op.num_type_vars, -1);
  for (uint32_t v = 0; v < op.num_type_vars; ++v) {
    uint32_t m = op.type_vars[v].dtype_mask;
    var_dtype[v] = v == 0 ? dtype : ((m & (1u << PK_DTYPE_I64)) ? PK_DTYPE_I64 : __builtin_ctz(m));
  }
  std::vector<pk_tensor> ins(op.num_inputs);
  for (uint32_t i = 0; i < op.num_inputs; ++i) {
    PK_STRUCT_INIT(ins[i]);
    int32_t d = op.inputs[i].type_var >= 0 ? var_dtype[op.inputs[i].type_var] : op.inputs[i].fixed_dtype;
    ins[i].dtype = pk::meta::dtype_desc(d);
    ins[i].ndim = 2;
  }
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = op.id;
  q.num_inputs = op.num_inputs;
  q.inputs = ins.data();
  pk_op_support s;
  PK_STRUCT_INIT(s);
  if (pk_device_query_op(dev, &q, &s) != PK_OK) {
    if (reason) *reason = last_error_message();
    return false;
  }
  if (reason) *reason = s.reason;
  return s.supported != 0;
}

}  // namespace pk::cli
