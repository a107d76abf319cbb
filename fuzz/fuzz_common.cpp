// fuzz_common.cpp — see fuzz_common.hpp.
#include "fuzz_common.hpp"

#include <algorithm>

namespace pkfuzz {

World &world() {
  static World *w = [] {
    auto *w = new World();
    pk_runtime_options o;
    PK_STRUCT_INIT(o);
    o.flags = PK_RUNTIME_NO_DISCOVERY;
    if (pk_runtime_create(&o, &w->rt) != PK_OK) die("pk_runtime_create failed");
    pk_backend_t b = nullptr;
    if (pk_runtime_load_plugin(w->rt, PK_FUZZ_CPU_PLUGIN, &b) != PK_OK) die("cannot load", PK_FUZZ_CPU_PLUGIN);
    if (pk_backend_device(b, 0, &w->cpu) != PK_OK || pk_stream_create(w->cpu, &w->cpu_stream) != PK_OK) {
      die("cpu backend has no usable device 0");
    }
#ifdef PK_FUZZ_EMU_PLUGIN
    if (pk_runtime_load_plugin(w->rt, PK_FUZZ_EMU_PLUGIN, &b) == PK_OK && pk_backend_device(b, 0, &w->emu) == PK_OK) {
      if (pk_stream_create(w->emu, &w->emu_stream) != PK_OK) w->emu = nullptr;
    }
#endif
    return w;
  }();
  return *w;
}

const pk::meta::OpInfo &op_at(uint32_t index) {
  uint32_t n = pk::meta::op_count();
  return pk::meta::ops_begin()[index % n];
}

int64_t numel(const pk::meta::TensorType &t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

namespace {
int32_t first_dtype(uint32_t mask) {
  // f32 first when admitted (the common case of every kernel), else the lowest admitted id.
  if (mask & (1u << PK_DTYPE_F32)) return PK_DTYPE_F32;
  for (int32_t d = 0; d < PK_DTYPE_COUNT; ++d) {
    if (mask & (1u << d)) return d;
  }
  return PK_DTYPE_F32;
}
}  // namespace

bool example_launch(const pk::meta::OpInfo &op, Launch &out) {
  out = Launch{};
  out.op = &op;
  alignas(8) uint8_t attrs[pk::meta::kMaxAttrsSize] = {0};
  pk::meta::Diag diag;
  if (op.example) {
    if (!pk::meta::parse_example(op, op.example, out.inputs, attrs, diag)) return false;
  } else {
    pk::meta::default_attrs(op, attrs);
    for (uint32_t i = 0; i < op.num_inputs; ++i) {
      const auto &in = op.inputs[i];
      if (in.optional) break;
      pk::meta::TensorType t{};
      t.dtype = in.type_var >= 0 ? first_dtype(op.type_vars[in.type_var].dtype_mask) : in.fixed_dtype;
      t.ndim = 2;
      t.shape[0] = 2;
      t.shape[1] = 3;
      out.inputs.push_back(t);
    }
  }
  alignas(8) uint8_t norm[pk::meta::kMaxAttrsSize] = {0};
  if (op.attrs_size && !pk::meta::normalize_attrs(op, attrs, norm, diag)) return false;
  out.outputs.resize(op.num_outputs);
  if (!pk::meta::infer_outputs(op, out.inputs.data(), static_cast<uint32_t>(out.inputs.size()), norm,
                               out.outputs.data(), diag)) {
    return false;
  }
  out.attrs.assign(attrs, attrs + op.attrs_size);
  return true;
}

bool view_bytes(const pk_tensor &t, size_t limit, std::vector<uint64_t> &offsets) {
  offsets.clear();
  if (t.ndim < 0 || t.ndim > PK_MAX_RANK || t.dtype.bits % 8 != 0) return false;
  if (t.ndim > 0 && t.shape == nullptr) return false;
  int64_t esize = t.dtype.bits / 8;
  int64_t shape[PK_MAX_RANK], strides[PK_MAX_RANK];
  size_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) {
    shape[d] = t.shape[d];
    if (shape[d] < 0) return false;
    if (shape[d] == 0) return true;  // empty: reaches nothing
    if (n > limit / static_cast<size_t>(shape[d]) + 1) return false;
    n *= static_cast<size_t>(shape[d]);
  }
  if (n > limit) return false;
  int64_t st = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.strides) {
      strides[d] = t.strides[d];
      if (strides[d] > (int64_t)1 << 40 || strides[d] < -((int64_t)1 << 40)) return false;
    } else {
      strides[d] = st;
    }
    st *= shape[d];
  }
  if (t.byte_offset > (uint64_t)1 << 40) return false;
  int64_t idx[PK_MAX_RANK] = {0};
  for (size_t k = 0; k < n; ++k) {
    int64_t e = 0;
    for (int32_t d = 0; d < t.ndim; ++d) e += idx[d] * strides[d];
    int64_t first = static_cast<int64_t>(t.byte_offset) + e * esize;
    for (int64_t b = 0; b < esize; ++b) offsets.push_back(static_cast<uint64_t>(first + b));
    for (int32_t d = t.ndim - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return true;
}

}  // namespace pkfuzz
