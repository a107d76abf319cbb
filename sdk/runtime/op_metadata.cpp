// op_metadata.cpp — the op table as data through the C ABI (pk_op_*, ABI 1.1): a thin view of pk::meta's
// generated tables, so that bindings and frameworks never parse primkit_ops.h or copy its defaults.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "runtime_internal.hpp"

using namespace pk::rt;
using pk::meta::AttrInfo;
using pk::meta::AttrType;
using pk::meta::OpInfo;

namespace {

// Copies a fully filled local description into the caller's struct, only as far as the caller's struct_size
// reaches (an older caller knows fewer fields), and reports the size written.
template <class Desc>
pk_status copy_out(const char *fn, uint32_t op_id, const Desc &full, Desc *out) {
  if (out == nullptr) return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: out is NULL", fn);
  uint32_t size = out->struct_size;
  if (size < sizeof(uint32_t) * 2) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0,
                     "%s: out->struct_size %u is too small; set it with PK_STRUCT_INIT", fn, size);
  }
  size = std::min<uint32_t>(size, static_cast<uint32_t>(sizeof(Desc)));
  std::memcpy(out, &full, size);
  out->struct_size = size;
  return PK_OK;
}

const OpInfo *find_or_fail(const char *fn, uint32_t op_id) {
  const OpInfo *op = pk::meta::find_op(op_id);
  if (op == nullptr) set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: unknown op id %u", fn, op_id);
  return op;
}

int32_t c_attr_type(AttrType t) {
  switch (t) {
    case AttrType::i64:
      return PK_ATTR_I64;
    case AttrType::f64:
      return PK_ATTR_F64;
    case AttrType::boolean:
      return PK_ATTR_BOOL;
    case AttrType::dtype:
      return PK_ATTR_DTYPE;
    case AttrType::ints:
      return PK_ATTR_INTS;
    case AttrType::enumeration:
      return PK_ATTR_ENUM;
  }
  return -1;
}

// "a|b|c" per enum, built once (function-local statics are initialised thread-safely).
const char *enum_choices(int32_t enum_id, int32_t count) {
  static const auto table = [] {
    std::array<std::string, 16> t;
    for (size_t e = 0; e < t.size(); ++e) {
      for (int32_t v = 0;; ++v) {
        const char *n = pk::meta::enum_value_name(static_cast<int32_t>(e), v);
        if (std::strcmp(n, "?") == 0) break;
        if (v > 0) t[e] += '|';
        t[e] += n;
      }
    }
    return t;
  }();
  if (enum_id < 0 || static_cast<size_t>(enum_id) >= table.size() || count <= 0) return nullptr;
  return table[static_cast<size_t>(enum_id)].c_str();
}

uint32_t all_dtypes_mask() {
  return PK_DTYPE_COUNT >= 32 ? 0xffffffffu : ((1u << PK_DTYPE_COUNT) - 1u);
}

uint32_t map_mask(uint32_t mask, int32_t (*f)(int32_t)) {
  uint32_t out = 0;
  for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d) {
    if ((mask >> d) & 1u) {
      int32_t r = f(d);
      if (r >= 0) out |= 1u << r;
    }
  }
  return out;
}

}  // namespace

extern "C" {

uint32_t pk_op_count(void) {
  return pk::meta::op_count();
}

pk_status pk_op_describe(uint32_t op_id, pk_op_desc *out) {
  const OpInfo *op = find_or_fail("pk_op_describe", op_id);
  if (op == nullptr) return PK_ERROR_INVALID_ARGUMENT;
  pk_op_desc d;
  std::memset(&d, 0, sizeof d);
  d.op_id = op->id;
  d.name = op->name;
  d.category = op->category;
  d.tier = op->tier == pk::meta::Tier::composite ? PK_OP_TIER_COMPOSITE : PK_OP_TIER_PRIMITIVE;
  d.alias = op->alias == pk::meta::Alias::view      ? PK_OP_ALIAS_VIEW
            : op->alias == pk::meta::Alias::inplace ? PK_OP_ALIAS_INPLACE
                                                    : PK_OP_ALIAS_NEW;
  d.num_inputs = op->num_inputs;
  d.variadic = op->variadic() ? 1 : 0;
  d.num_outputs = op->num_outputs;
  d.num_attrs = op->num_attrs;
  d.attrs_size = static_cast<uint32_t>(op->attrs_size);
  d.contract = static_cast<int32_t>(op->contract.kind);
  d.contract_ulp = op->contract.ulp;
  d.contract_half = op->contract.half;
  d.since = op->since;
  d.doc = op->doc;
  d.decomposition = op->decomposition;
  return copy_out("pk_op_describe", op_id, d, out);
}

pk_status pk_op_describe_at(uint32_t index, pk_op_desc *out) {
  if (index >= pk::meta::op_count()) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0,
                     "pk_op_describe_at: index %u is out of range (the table has %u ops)", index, pk::meta::op_count());
  }
  return pk_op_describe(pk::meta::ops_begin()[index].id, out);
}

pk_status pk_op_find(const char *name, uint32_t *op_id) {
  if (name == nullptr || op_id == nullptr) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, PK_OP_NONE, -1, 0, "pk_op_find: name and op_id must be non-NULL");
  }
  const OpInfo *op = pk::meta::find_op(std::string_view(name));
  if (op == nullptr) {
    return set_error(PK_ERROR_NOT_FOUND, PK_OP_NONE, -1, 0, "pk_op_find: no op is named '%.200s'", name);
  }
  *op_id = op->id;
  return PK_OK;
}

pk_status pk_op_operand(uint32_t op_id, uint32_t index, pk_op_operand_desc *out) {
  const OpInfo *op = find_or_fail("pk_op_operand", op_id);
  if (op == nullptr) return PK_ERROR_INVALID_ARGUMENT;
  if (index >= op->num_inputs + op->num_outputs) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: pk_op_operand index %u: the op has %u operands",
                     op->name, index, op->num_inputs + op->num_outputs);
  }
  pk_op_operand_desc d;
  std::memset(&d, 0, sizeof d);
  if (index < op->num_inputs) {
    const pk::meta::OperandInfo &in = op->inputs[index];
    d.name = in.name;
    d.type_var = in.type_var;
    d.optional = in.optional ? 1 : 0;
    d.variadic = in.variadic ? 1 : 0;
    if (in.type_var >= 0) {
      d.dtype_rule = PK_DTYPE_RULE_TYPE_VAR;
      d.rule_arg = in.type_var;
      d.dtype_mask = op->type_vars[in.type_var].dtype_mask;
    } else {
      d.dtype_rule = PK_DTYPE_RULE_FIXED;
      d.rule_arg = in.fixed_dtype;
      d.dtype_mask = 1u << in.fixed_dtype;
    }
  } else {
    const pk::meta::OutputInfo &o = op->outputs[index - op->num_inputs];
    d.name = o.name;
    d.is_output = 1;
    d.type_var = -1;
    d.rule_arg = o.arg;
    switch (o.rule) {
      case pk::meta::DtypeRule::type_var:
        d.dtype_rule = PK_DTYPE_RULE_TYPE_VAR;
        d.type_var = o.arg;
        d.dtype_mask = op->type_vars[o.arg].dtype_mask;
        break;
      case pk::meta::DtypeRule::fixed:
        d.dtype_rule = PK_DTYPE_RULE_FIXED;
        d.dtype_mask = 1u << o.arg;
        break;
      case pk::meta::DtypeRule::attr:
        d.dtype_rule = PK_DTYPE_RULE_ATTR;
        d.dtype_mask = all_dtypes_mask();
        break;
      case pk::meta::DtypeRule::real_of:
        d.dtype_rule = PK_DTYPE_RULE_REAL_OF;
        d.dtype_mask = map_mask(op->type_vars[o.arg].dtype_mask, pk::meta::real_of);
        break;
      case pk::meta::DtypeRule::complex_of:
        d.dtype_rule = PK_DTYPE_RULE_COMPLEX_OF;
        d.dtype_mask = map_mask(op->type_vars[o.arg].dtype_mask, pk::meta::complex_of);
        break;
    }
  }
  return copy_out("pk_op_operand", op_id, d, out);
}

pk_status pk_op_attr(uint32_t op_id, uint32_t index, pk_op_attr_desc *out) {
  const OpInfo *op = find_or_fail("pk_op_attr", op_id);
  if (op == nullptr) return PK_ERROR_INVALID_ARGUMENT;
  if (index >= op->num_attrs) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: pk_op_attr index %u: the op has %u attributes",
                     op->name, index, op->num_attrs);
  }
  const AttrInfo &a = op->attrs[index];
  pk_op_attr_desc d;
  std::memset(&d, 0, sizeof d);
  d.name = a.name;
  d.type = c_attr_type(a.type);
  uint32_t flags = a.has_default ? uint32_t{PK_ATTR_FLAG_HAS_DEFAULT} : uint32_t{PK_ATTR_FLAG_REQUIRED};
  if (a.has_min) flags |= PK_ATTR_FLAG_HAS_MIN;
  if (a.has_max) flags |= PK_ATTR_FLAG_HAS_MAX;
  if (a.required) flags |= PK_ATTR_FLAG_NAN_UNSET;
  d.flags = flags;
  d.offset = static_cast<uint32_t>(a.offset);
  d.count_offset = static_cast<uint32_t>(a.count_offset);
  d.default_value = a.has_default ? a.default_value : 0.0;
  d.default_ints = a.num_default_ints > 0 ? a.default_ints : nullptr;
  d.num_default_ints = a.num_default_ints > 0 ? static_cast<uint32_t>(a.num_default_ints) : 0u;
  d.min_value = a.has_min ? a.min : 0.0;
  d.max_value = a.has_max ? a.max : 0.0;
  d.dim_of = a.dim_of;
  d.enum_count = a.enum_count > 0 ? static_cast<uint32_t>(a.enum_count) : 0u;
  d.choices = a.type == AttrType::enumeration ? enum_choices(a.enum_id, a.enum_count) : nullptr;
  return copy_out("pk_op_attr", op_id, d, out);
}

pk_status pk_op_init_attrs(uint32_t op_id, void *attrs, uint32_t size) {
  const OpInfo *op = find_or_fail("pk_op_init_attrs", op_id);
  if (op == nullptr) return PK_ERROR_INVALID_ARGUMENT;
  if (op->num_attrs == 0) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0, "%s: pk_op_init_attrs: the op has no attributes",
                     op->name);
  }
  if (attrs == nullptr || size < sizeof(uint32_t)) {
    return set_error(PK_ERROR_INVALID_ARGUMENT, op_id, -1, 0,
                     "%s: pk_op_init_attrs needs a non-NULL struct of at least 4 bytes (got %u)", op->name, size);
  }
  alignas(16) unsigned char full[pk::meta::kMaxAttrsSize];
  pk::meta::default_attrs(*op, full);
  uint32_t n = std::min<uint32_t>(size, static_cast<uint32_t>(op->attrs_size));
  std::memcpy(attrs, full, n);
  std::memcpy(attrs, &n, sizeof n);
  return PK_OK;
}

}  // extern "C"
