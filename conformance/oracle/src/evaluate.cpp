// evaluate.cpp — the interpreter: validates a launch with the op table's metadata, runs a primitive's kernel
// or a composite's decomposition on wide tensors, and rounds each output once.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>

#include "oracle_internal.hpp"

namespace pk::oracle {
namespace {

const Registry &registry() {
  static const Registry r = [] {
    Registry reg;
    register_elementwise(reg);
    register_reductions(reg);
    register_shape_ops(reg);
    register_linalg(reg);
    register_misc(reg);
    register_special(reg);
    return reg;
  }();
  return r;
}

const Registry &direct_composites() {
  static const Registry r = [] {
    Registry reg;
    register_direct_composites(reg);
    return reg;
  }();
  return r;
}

meta::TensorType type_of(const WTensor &t) {
  meta::TensorType tt{};
  tt.dtype = t.dtype;
  tt.ndim = t.rank();
  for (int k = 0; k < t.rank(); ++k) tt.shape[k] = t.shape[k];
  return tt;
}

std::vector<int64_t> shape_of(const meta::TensorType &t) {
  return {t.shape, t.shape + t.ndim};
}

// Runs one primitive op on wide tensors. attrs is the normalized attribute struct.
std::vector<WTensor> run_primitive(const meta::OpInfo &op, const std::vector<const WTensor *> &in, const uint8_t *attrs,
                                   const std::vector<meta::TensorType> &out_types) {
  auto it = registry().find(op.name);
  if (it == registry().end()) unimplemented(std::string(op.name) + ": not implemented by the oracle");
  Call call{op, in, Attrs(op, attrs), out_types};
  std::vector<WTensor> out;
  it->second(call, out);
  if (out.size() != out_types.size())
    throw OracleError{PK_ERROR_INTERNAL, std::string(op.name) + ": oracle kernel produced the wrong output count"};
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k].dtype != out_types[k].dtype || out[k].shape != shape_of(out_types[k]) ||
        static_cast<int64_t>(out[k].v.size()) != out[k].numel())
      throw OracleError{PK_ERROR_INTERNAL, std::string(op.name) + ": oracle kernel output does not match its type"};
  }
  return out;
}

// Sees each node of a decomposition with its results, as run_composite computes them.
using NodeObserver = std::function<void(const meta::DecomposedNode &, const std::vector<const WTensor *> &args,
                                        const std::vector<WTensor> &results)>;

// Runs a composite's decomposition with every intermediate wide.
std::vector<WTensor> run_composite(const meta::OpInfo &op, const std::vector<const WTensor *> &in, const uint8_t *attrs,
                                   const NodeObserver &observe = nullptr) {
  std::vector<meta::TensorType> in_types;
  for (const WTensor *t : in) in_types.push_back(type_of(*t));
  meta::Decomposition d;
  meta::Diag diag;
  if (!meta::decompose(op, in_types.data(), static_cast<uint32_t>(in_types.size()), attrs, d, diag))
    throw OracleError{diag.status == PK_OK ? PK_ERROR_INVALID_ARGUMENT : diag.status, diag.message};
  std::vector<WTensor> values(d.values.size());
  std::vector<bool> ready(d.values.size(), false);
  for (size_t k = 0; k < in.size(); ++k) {
    values[k] = *in[k];
    ready[k] = true;
  }
  for (const meta::DecomposedNode &node : d.nodes) {
    const meta::OpInfo *callee = meta::find_op(node.op_id);
    if (callee == nullptr || callee->tier != meta::Tier::primitive)
      throw OracleError{PK_ERROR_INTERNAL, std::string(op.name) + ": decomposition calls a non-primitive"};
    std::vector<const WTensor *> args;
    for (int32_t v : node.inputs) {
      if (!ready.at(static_cast<size_t>(v)))
        throw OracleError{PK_ERROR_INTERNAL, std::string(op.name) + ": decomposition reads an unset value"};
      args.push_back(&values[static_cast<size_t>(v)]);
    }
    std::vector<meta::TensorType> out_types;
    for (int32_t v : node.outputs) out_types.push_back(d.values.at(static_cast<size_t>(v)));
    std::vector<uint8_t> node_attrs(meta::kMaxAttrsSize, 0);
    // An empty vector's data() may be NULL, which memcpy must not get even for 0 bytes (UBSan reports it).
    if (!node.attrs.empty()) std::memcpy(node_attrs.data(), node.attrs.data(), node.attrs.size());
    std::vector<WTensor> res;
    try {
      res = run_primitive(*callee, args, node_attrs.data(), out_types);
    } catch (OracleError &e) {
      e.message = std::string(op.name) + " (decomposition): " + e.message;
      throw;
    }
    if (observe) observe(node, args, res);
    for (size_t k = 0; k < res.size(); ++k) {
      values[static_cast<size_t>(node.outputs[k])] = std::move(res[k]);
      ready[static_cast<size_t>(node.outputs[k])] = true;
    }
  }
  std::vector<WTensor> out;
  for (int32_t v : d.outputs) out.push_back(values.at(static_cast<size_t>(v)));
  return out;
}

// Output overflow rule: conversions to fp8 e4m3fn saturate (the table's convert_element_type doc), and so do
// the ops whose docs say their value is "converted to dtype" / "as convert_element_type does" (creation, fill,
// the fill value of pad); every other result follows the format's own overflow (inf, or NaN for the
// finite-only format).
Overflow overflow_rule(const meta::OpInfo &op, int32_t dtype) {
  if (dtype != PK_DTYPE_F8E4M3FN) return Overflow::standard;
  static const char *const kConverting[] = {"convert_element_type", "fill", "full", "scalar_tensor", "iota", "pad"};
  for (const char *name : kConverting) {
    if (std::strcmp(op.name, name) == 0) return Overflow::saturate;
  }
  return Overflow::standard;
}

// One evaluation's inputs made wide, its attributes normalized and checked, its output types inferred.
struct Prepared {
  std::vector<WTensor> wide_in;
  std::vector<const WTensor *> in_ptrs;
  std::vector<uint8_t> norm;
  std::vector<meta::TensorType> out_types;
};

Result prepare(const meta::OpInfo &op, const std::vector<HostTensor> &inputs, const void *attrs, Prepared &p) {
  p.wide_in.resize(inputs.size());
  std::vector<meta::TensorType> in_types(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const HostTensor &h = inputs[k];
    if (h.shape.size() > PK_MAX_RANK) return {PK_ERROR_INVALID_ARGUMENT, "input rank above PK_MAX_RANK"};
    if (!h.strides.empty() && h.strides.size() != h.shape.size())
      return {PK_ERROR_INVALID_ARGUMENT, "input " + std::to_string(k) + ": strides do not match the shape"};
    p.wide_in[k] = WTensor::of(h.dtype, h.shape);
    for (int64_t i = 0; i < p.wide_in[k].numel(); ++i) p.wide_in[k].v[static_cast<size_t>(i)] = h.at(i);
    in_types[k] = type_of(p.wide_in[k]);
  }
  p.norm.assign(meta::kMaxAttrsSize, 0);
  meta::Diag diag;
  if (!meta::normalize_attrs(op, attrs, p.norm.data(), diag) ||
      !meta::check_attrs(op, p.norm.data(), in_types.data(), static_cast<uint32_t>(in_types.size()), diag))
    return {diag.status, diag.message};
  p.out_types.resize(op.num_outputs);
  if (!meta::infer_outputs(op, in_types.data(), static_cast<uint32_t>(in_types.size()), p.norm.data(),
                           p.out_types.data(), diag))
    return {diag.status, diag.message};
  for (const WTensor &t : p.wide_in) p.in_ptrs.push_back(&t);
  return {};
}

// Runs an evaluation's body; the oracle's own errors and any exception become the Result, with `out` cleared so
// that a failed evaluation leaves no partial results.
template <class Out, class Body>
Result guarded(const meta::OpInfo &op, Out &out, Body &&body) {
  try {
    return body();
  } catch (const OracleError &e) {
    out.clear();
    return {e.status, e.message};
  } catch (const std::exception &e) {
    out.clear();
    return {PK_ERROR_INTERNAL, std::string(op.name) + ": " + e.what()};
  }
}

}  // namespace

Result evaluate(uint32_t op_id, const std::vector<HostTensor> &inputs, const void *attrs,
                std::vector<OutputValue> &outputs) {
  outputs.clear();
  const meta::OpInfo *op = meta::find_op(op_id);
  if (op == nullptr) return {PK_ERROR_INVALID_ARGUMENT, "unknown op id " + std::to_string(op_id)};
  return guarded(*op, outputs, [&]() -> Result {
    Prepared prepared;
    if (Result r = prepare(*op, inputs, attrs, prepared); !r.ok()) return r;
    const std::vector<const WTensor *> &in_ptrs = prepared.in_ptrs;
    const std::vector<uint8_t> &norm = prepared.norm;
    const std::vector<meta::TensorType> &out_types = prepared.out_types;
    const auto direct =
        op->tier == meta::Tier::composite ? direct_composites().find(op->name) : direct_composites().end();
    std::vector<WTensor> res;
    if (direct != direct_composites().end()) {
      direct->second(Call{*op, in_ptrs, Attrs(*op, norm.data()), out_types}, res);
      if (res.size() != out_types.size())
        return {PK_ERROR_INTERNAL, std::string(op->name) + ": oracle kernel produced the wrong output count"};
    } else if (op->tier == meta::Tier::composite) {
      res = run_composite(*op, in_ptrs, norm.data());
    } else {
      res = run_primitive(*op, in_ptrs, norm.data(), out_types);
    }
    for (size_t k = 0; k < res.size(); ++k) {
      WTensor &w = res[k];
      if (w.dtype != out_types[k].dtype || w.shape != shape_of(out_types[k]))
        return {PK_ERROR_INTERNAL, std::string(op->name) + ": output " + std::to_string(k) +
                                       " does not have the type the op's rules give"};
      OutputValue ov;
      ov.dtype = w.dtype;
      ov.shape = w.shape;
      const size_t es = meta::dtype_size(w.dtype);
      ov.rounded.assign(w.v.size() * es, 0);
      const Overflow rule = overflow_rule(*op, w.dtype);
      for (size_t i = 0; i < w.v.size(); ++i) store_rounded(w.v[i], w.dtype, ov.rounded.data() + i * es, rule);
      ov.wide = std::move(w.v);
      outputs.push_back(std::move(ov));
    }
    return Result{};
  });
}

Result evaluate(std::string_view op_name, const std::vector<HostTensor> &inputs, const void *attrs,
                std::vector<OutputValue> &outputs) {
  const meta::OpInfo *op = meta::find_op(op_name);
  if (op == nullptr) return {PK_ERROR_INVALID_ARGUMENT, "unknown op " + std::string(op_name)};
  return evaluate(op->id, inputs, attrs, outputs);
}

Result decomposition_conditions(uint32_t op_id, const std::vector<HostTensor> &inputs, const void *attrs,
                                std::vector<std::vector<uint8_t>> &conditions) {
  conditions.clear();
  const meta::OpInfo *op = meta::find_op(op_id);
  if (op == nullptr) return {PK_ERROR_INVALID_ARGUMENT, "unknown op id " + std::to_string(op_id)};
  if (op->tier != meta::Tier::composite || op->num_outputs == 0) return {};
  return guarded(*op, conditions, [&]() -> Result {
    Prepared p;
    if (Result r = prepare(*op, inputs, attrs, p); !r.ok()) return r;
    const int64_t elements = meta::numel(p.out_types[0]);
    auto observe = [&](const meta::DecomposedNode &node, const std::vector<const WTensor *> &args,
                       const std::vector<WTensor> &results) {
      if (results.empty() || results[0].numel() != elements) return;
      const WTensor &r = results[0];
      const bool choice =
          (node.op_id == PK_OP_MAXIMUM || node.op_id == PK_OP_MINIMUM) && !args.empty() && args[0]->numel() == elements;
      if (r.dtype != PK_DTYPE_BOOL && !choice) return;
      std::vector<uint8_t> c(static_cast<size_t>(elements));
      for (size_t i = 0; i < c.size(); ++i) {
        // A bool node's value, or which operand a maximum / minimum took (its first where they are equal).
        c[i] = choice ? r.v[i].re == args[0]->v[i].re : r.v[i].re != 0;
      }
      conditions.push_back(std::move(c));
    };
    run_composite(*op, p.in_ptrs, p.norm.data(), observe);
    return Result{};
  });
}

namespace {

// The primitive ops a composite's decomposition calls that the oracle has no kernel for (found by scanning
// the program text for `name(` where name is an op of the table).
std::vector<std::string> missing_callees(const meta::OpInfo &op) {
  std::vector<std::string> missing;
  const std::string text = op.decomposition != nullptr ? op.decomposition : "";
  for (size_t i = 0; i < text.size();) {
    if (!(std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
    const std::string word = text.substr(i, j - i);
    const meta::OpInfo *callee = j < text.size() && text[j] == '(' ? meta::find_op(word) : nullptr;
    if (callee != nullptr && registry().count(callee->name) == 0 &&
        std::find(missing.begin(), missing.end(), word) == missing.end())
      missing.push_back(word);
    i = j;
  }
  return missing;
}

}  // namespace

bool implements(uint32_t op_id) {
  const meta::OpInfo *op = meta::find_op(op_id);
  if (op == nullptr) return false;
  if (op->tier == meta::Tier::primitive) return registry().count(op->name) != 0;
  return missing_callees(*op).empty();
}

std::vector<std::pair<std::string, std::string>> unimplemented_ops() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const meta::OpInfo *op = meta::ops_begin(); op != meta::ops_end(); ++op) {
    if (op->tier == meta::Tier::primitive) {
      if (registry().count(op->name) == 0) out.emplace_back(op->name, "no oracle kernel");
      continue;
    }
    std::vector<std::string> missing = missing_callees(*op);
    if (missing.empty()) continue;
    std::string why = "its decomposition calls ops without an oracle kernel:";
    for (const std::string &m : missing) why += " " + m;
    out.emplace_back(op->name, why);
  }
  return out;
}

}  // namespace pk::oracle
