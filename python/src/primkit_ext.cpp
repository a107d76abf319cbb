// primkit_ext.cpp — primkit._primkit, the nanobind layer over libprimkit's C ABI. It only converts: handles
// become reference-counted Python objects, pk_status failures become primkit.PrimKitError, tensors cross by
// DLPack. Everything else (op wrappers, defaults, the torch bridge) is pure Python in python/primkit/.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dlpack_abi.hpp"
#include "primkit/primkit.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// --- errors ---------------------------------------------------------------------------------------------------

// A failed pk_ call, carried to Python as primkit.PrimKitError (see the translator in the module body).
struct PkError {
  pk_status status;
  uint32_t op_id;
  int32_t arg_index;
  std::string message;
};

[[noreturn]] void throw_last(pk_status st, const char *what) {
  pk_error_info info;
  PK_STRUCT_INIT(info);
  std::string msg;
  uint32_t op = PK_OP_NONE;
  int32_t arg = -1;
  if (pk_get_last_error(&info) == PK_OK && info.status == st) {
    msg = info.message;
    op = info.op_id;
    arg = info.arg_index;
  }
  if (msg.empty()) msg = std::string(what) + " failed";
  throw PkError{st, op, arg, msg};
}

void check(pk_status st, const char *what) {
  if (st != PK_OK) throw_last(st, what);
}

[[noreturn]] void fail_arg(const std::string &msg, uint32_t op = PK_OP_NONE, int32_t arg = -1) {
  throw PkError{PK_ERROR_INVALID_ARGUMENT, op, arg, msg};
}

// --- handles --------------------------------------------------------------------------------------------------

struct RuntimeHandle {
  pk_runtime_t rt = nullptr;
  ~RuntimeHandle() {
    if (rt) pk_runtime_destroy(rt);
  }
};
using RuntimeRef = std::shared_ptr<RuntimeHandle>;

struct Device {
  RuntimeRef rt;
  pk_device_t dev;
  std::string backend;
  uint32_t index;
  pk_device_props props;
  std::string label() const { return backend + ":" + std::to_string(index); }
};
using DeviceRef = std::shared_ptr<Device>;

struct Stream {
  DeviceRef device;
  pk_stream_t s = nullptr;
  ~Stream() {
    if (s) pk_stream_destroy(s);
  }
};

struct Event {
  DeviceRef device;
  pk_event_t e = nullptr;
  ~Event() {
    if (e) pk_event_destroy(e);
  }
};

// Where a tensor's bytes live: a PrimKit allocation, or memory a DLPack producer lent us (released through its
// deleter, which may need the GIL).
struct Storage {
  RuntimeRef rt;
  nb::object owner;  // a Python object whose memory this is (the torch fast path), released with the GIL held
  pk_buffer_t buffer = nullptr;
  pk::dl::ManagedTensor *legacy = nullptr;
  pk::dl::ManagedTensorVersioned *versioned = nullptr;
  ~Storage() {
    if (buffer) pk_buffer_destroy(buffer);
    if (legacy && legacy->deleter) legacy->deleter(legacy);
    if (versioned && versioned->deleter) versioned->deleter(versioned);
  }
};

struct Tensor {
  std::shared_ptr<Storage> storage;
  DeviceRef device;  // null: host memory not attached to a PrimKit device (usable on host-addressable devices)
  pk_tensor desc;    // shape/strides point into the arrays below
  int64_t shape[PK_MAX_RANK] = {0};
  int64_t strides[PK_MAX_RANK] = {0};

  Tensor() { PK_STRUCT_INIT(desc); }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;
  void fix_pointers() {
    desc.shape = shape;
    desc.strides = strides;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < desc.ndim; ++i) n *= shape[i];
    return n;
  }
  size_t itemsize() const { return (desc.dtype.bits * desc.dtype.lanes + 7u) / 8u; }
};
using TensorRef = std::shared_ptr<Tensor>;

void row_major(const int64_t *shape, int32_t ndim, int64_t *strides) {
  int64_t s = 1;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
}

// A tensor descriptor as `device` sees it: host memory lent by numpy/torch is tagged with the device's type when
// the device can address host memory (the CPU backend, unified-memory devices).
pk_tensor desc_for(const Tensor &t, const Device *device) {
  pk_tensor d = t.desc;
  if (device && !t.device) {
    d.device_type = device->props.device_type;
    d.device_id = device->props.device_id;
  }
  return d;
}

uint32_t to_u32(size_t n, const char *what) {
  if (n > 0xffffffffu) fail_arg(std::string(what) + ": too many entries");
  return static_cast<uint32_t>(n);
}

void read_shape(const std::vector<int64_t> &shape, int64_t *out, const char *what) {
  if (shape.size() > PK_MAX_RANK) fail_arg(std::string(what) + ": rank " + std::to_string(shape.size()) + " > 8");
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) fail_arg(std::string(what) + ": negative extent " + std::to_string(shape[i]));
    out[i] = shape[i];
  }
}

pk_dtype dtype_of(nb::handle code_bits) {
  auto t = nb::cast<std::tuple<int, int>>(code_bits);
  pk_dtype d;
  d.code = static_cast<uint8_t>(std::get<0>(t));
  d.bits = static_cast<uint8_t>(std::get<1>(t));
  d.lanes = 1;
  return d;
}

TensorRef alloc_tensor(const DeviceRef &dev, pk_dtype dtype, const std::vector<int64_t> &shape) {
  auto t = std::make_shared<Tensor>();
  read_shape(shape, t->shape, "empty");
  int32_t ndim = static_cast<int32_t>(shape.size());
  uint64_t bytes = (dtype.bits + 7u) / 8u;
  for (int32_t i = 0; i < ndim; ++i) bytes *= static_cast<uint64_t>(t->shape[i]);
  t->storage = std::make_shared<Storage>();
  t->storage->rt = dev->rt;
  // Zero-byte tensors still get a one-element allocation so that every tensor has storage.
  check(pk_buffer_create(dev->dev, std::max<uint64_t>(bytes, 1), &t->storage->buffer), "pk_buffer_create");
  row_major(t->shape, ndim, t->strides);
  check(pk_buffer_tensor(t->storage->buffer, dtype, ndim, t->shape, t->strides, 0, &t->desc), "pk_buffer_tensor");
  t->fix_pointers();
  t->device = dev;
  return t;
}

// --- DLPack import ----------------------------------------------------------------------------------------------

// Completes the descriptor of host memory lent by another library: t.shape, t.strides and t.desc.dtype are set,
// `first` points at element (0, ..., 0). data is rebased to the lowest byte the view touches (negative strides
// reach below the first element) and storage_bytes spans to one past the highest.
void describe_host_view(Tensor &t, char *first, int32_t nd) {
  const int64_t isz = (t.desc.dtype.bits + 7) / 8;
  int64_t lo = 0, hi = 0;
  bool empty = false;
  for (int32_t i = 0; i < nd; ++i) {
    if (t.shape[i] == 0) empty = true;
    const int64_t span = (t.shape[i] - 1) * t.strides[i];
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  pk_tensor &d = t.desc;
  d.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
  d.device_type = PK_DEVICE_CPU;
  d.device_id = 0;
  d.ndim = nd;
  d.data = first + lo * isz;
  d.byte_offset = static_cast<uint64_t>(-lo * isz);
  d.storage_bytes = empty ? 0 : static_cast<uint64_t>((hi - lo + 1) * isz);
  t.fix_pointers();
}

TensorRef from_capsule(nb::handle capsule) {
  PyObject *cap = capsule.ptr();
  auto t = std::make_shared<Tensor>();
  t->storage = std::make_shared<Storage>();
  const pk::dl::Tensor *dl = nullptr;
  bool read_only = false;
  if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    auto *m = static_cast<pk::dl::ManagedTensorVersioned *>(PyCapsule_GetPointer(cap, "dltensor_versioned"));
    if (m->version.major > pk::dl::kMajorVersion) {
      throw nb::buffer_error("from_dlpack: the producer's DLPack major version is newer than 1");
    }
    dl = &m->dl_tensor;
    read_only = (m->flags & pk::dl::kFlagReadOnly) != 0;
    t->storage->versioned = m;
    PyCapsule_SetName(cap, "used_dltensor_versioned");
  } else if (PyCapsule_IsValid(cap, "dltensor")) {
    auto *m = static_cast<pk::dl::ManagedTensor *>(PyCapsule_GetPointer(cap, "dltensor"));
    dl = &m->dl_tensor;
    t->storage->legacy = m;
    PyCapsule_SetName(cap, "used_dltensor");
  } else {
    throw nb::type_error("from_dlpack: expected a DLPack capsule ('dltensor' or 'dltensor_versioned'), unused");
  }
  if (dl->ndim < 0 || dl->ndim > PK_MAX_RANK) {
    throw nb::value_error(("from_dlpack: rank " + std::to_string(dl->ndim) + " is outside 0..8").c_str());
  }
  if (dl->dtype.lanes != 1) throw nb::value_error("from_dlpack: vector dtypes (lanes != 1) are not supported");
  if (dl->device.device_type != PK_DEVICE_CPU && dl->device.device_type != PK_DEVICE_CUDA_HOST) {
    throw nb::buffer_error(("from_dlpack: memory on DLPack device type " + std::to_string(dl->device.device_type) +
                            " is not host-addressable; primkit imports host memory (copy it to the host first)")
                               .c_str());
  }
  int32_t nd = dl->ndim;
  for (int32_t i = 0; i < nd; ++i) t->shape[i] = dl->shape[i];
  if (dl->strides) {
    for (int32_t i = 0; i < nd; ++i) t->strides[i] = dl->strides[i];
  } else {
    row_major(t->shape, nd, t->strides);
  }
  pk_tensor &d = t->desc;
  d.dtype.code = dl->dtype.code;
  d.dtype.bits = dl->dtype.bits;
  d.dtype.lanes = 1;
  describe_host_view(*t, static_cast<char *>(dl->data) + dl->byte_offset, nd);
  if (read_only) d.flags |= PK_TENSOR_FLAG_READ_ONLY;
  return t;
}

// torch.Tensor without a capsule: torch's own __dlpack__ costs about 2 us in Python-level checks, reading the
// pointer, sizes and strides a fraction of that. `dtypes` maps torch dtypes to (code, bits); the tensor itself is
// held as the owner of the memory.
TensorRef import_torch(nb::handle obj, nb::dict dtypes) {
  if (!nb::cast<bool>(obj.attr("is_cpu"))) {
    throw nb::buffer_error("from_dlpack: a torch tensor on a non-CPU device is not host-addressable; .cpu() it");
  }
  nb::object dt = dtypes.get(obj.attr("dtype"), nb::none());
  if (dt.is_none()) throw nb::type_error("from_dlpack: this torch dtype has no PrimKit equivalent");
  auto t = std::make_shared<Tensor>();
  t->storage = std::make_shared<Storage>();
  t->storage->owner = nb::borrow(obj);
  nb::tuple shape = nb::tuple(obj.attr("shape"));
  nb::tuple strides = nb::tuple(obj.attr("stride")());
  const size_t nd = nb::len(shape);
  if (nd > PK_MAX_RANK) throw nb::value_error("from_dlpack: rank above 8");
  t->desc.dtype = dtype_of(dt);
  for (size_t i = 0; i < nd; ++i) {
    t->shape[i] = nb::cast<int64_t>(shape[i]);
    t->strides[i] = nb::cast<int64_t>(strides[i]);
  }
  const uintptr_t ptr = nb::cast<uintptr_t>(obj.attr("data_ptr")());
  describe_host_view(*t, reinterpret_cast<char *>(ptr), static_cast<int32_t>(nd));
  return t;
}

TensorRef import_object(nb::handle obj) {
  if (nb::isinstance<Tensor>(obj)) return nb::cast<TensorRef>(obj);
  if (!nb::hasattr(obj, "__dlpack__")) {
    throw nb::type_error("primkit: expected a primkit.Tensor or an object with __dlpack__ (numpy, torch, ...)");
  }
  nb::object cap;
  try {
    cap = obj.attr("__dlpack__")("max_version"_a = nb::make_tuple(1, 0));
  } catch (nb::python_error &e) {
    if (!e.matches(PyExc_TypeError)) throw;
    cap = obj.attr("__dlpack__")();  // a producer older than DLPack 1.0
  }
  TensorRef t = from_capsule(cap);
  return t;
}

// --- DLPack export ----------------------------------------------------------------------------------------------

struct ExportCtx {
  PyObject *owner;  // a strong reference to the exported primkit.Tensor
  int64_t shape[PK_MAX_RANK];
  int64_t strides[PK_MAX_RANK];
};

void release_owner(ExportCtx *ctx) {
  PyGILState_STATE g = PyGILState_Ensure();  // the consumer may free from any thread
  Py_DECREF(ctx->owner);
  PyGILState_Release(g);
  delete ctx;
}

void fill_dl(const Tensor &t, ExportCtx *ctx, pk::dl::Tensor &dl) {
  for (int i = 0; i < t.desc.ndim; ++i) {
    ctx->shape[i] = t.shape[i];
    ctx->strides[i] = t.strides[i];
  }
  dl.data = t.desc.data;
  dl.device = {PK_DEVICE_CPU, 0};
  dl.ndim = t.desc.ndim;
  dl.dtype = {t.desc.dtype.code, t.desc.dtype.bits, 1};
  dl.shape = ctx->shape;
  dl.strides = ctx->strides;
  dl.byte_offset = t.desc.byte_offset;
}

// Whether the host may dereference the tensor's data pointer: memory lent by numpy/torch, the CPU backend's, or a
// unified-memory device's host-visible allocation (pk_buffer_data is a device handle such as a cl_mem otherwise).
bool exportable(const Tensor &t) {
  if (!t.device) return true;
  if (t.desc.device_type == PK_DEVICE_CPU) return true;
  return (t.device->props.features & PK_DEVICE_FEATURE_UNIFIED_MEMORY) && (t.desc.flags & PK_TENSOR_FLAG_HOST_VISIBLE);
}

nb::object export_capsule(nb::handle self, bool versioned) {
  Tensor &t = nb::cast<Tensor &>(self);
  if (!exportable(t)) {
    throw nb::buffer_error(("__dlpack__: this tensor lives in " + t.device->label() +
                            " memory that the host cannot address; call .cpu() (a copy) first")
                               .c_str());
  }
  auto *ctx = new ExportCtx;
  ctx->owner = self.ptr();
  Py_INCREF(ctx->owner);
  if (versioned) {
    auto *m = new pk::dl::ManagedTensorVersioned;
    m->version = {pk::dl::kMajorVersion, pk::dl::kMinorVersion};
    m->manager_ctx = ctx;
    m->flags = (t.desc.flags & PK_TENSOR_FLAG_READ_ONLY) ? pk::dl::kFlagReadOnly : 0;
    m->deleter = [](pk::dl::ManagedTensorVersioned *self_) {
      release_owner(static_cast<ExportCtx *>(self_->manager_ctx));
      delete self_;
    };
    fill_dl(t, ctx, m->dl_tensor);
    PyObject *cap = PyCapsule_New(m, "dltensor_versioned", [](PyObject *c) {
      if (PyCapsule_IsValid(c, "dltensor_versioned")) {  // never consumed: we still own it
        auto *mm = static_cast<pk::dl::ManagedTensorVersioned *>(PyCapsule_GetPointer(c, "dltensor_versioned"));
        mm->deleter(mm);
      }
    });
    if (!cap) throw nb::python_error();
    return nb::steal(cap);
  }
  auto *m = new pk::dl::ManagedTensor;
  m->manager_ctx = ctx;
  m->deleter = [](pk::dl::ManagedTensor *self_) {
    release_owner(static_cast<ExportCtx *>(self_->manager_ctx));
    delete self_;
  };
  fill_dl(t, ctx, m->dl_tensor);
  PyObject *cap = PyCapsule_New(m, "dltensor", [](PyObject *c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto *mm = static_cast<pk::dl::ManagedTensor *>(PyCapsule_GetPointer(c, "dltensor"));
      mm->deleter(mm);
    }
  });
  if (!cap) throw nb::python_error();
  return nb::steal(cap);
}

// --- launch helpers -------------------------------------------------------------------------------------------

// Descriptors of one call. pk_launch takes at most 64 inputs and 8 outputs (the runtime says so by name);
// executables take any number, so these grow.
struct Descs {
  std::vector<pk_tensor> in_v, out_v;
  pk_tensor *in = nullptr, *out = nullptr;
  uint32_t n_in = 0, n_out = 0;
  void resize(size_t ni, size_t no) {
    in_v.resize(std::max<size_t>(ni, 1));
    out_v.resize(std::max<size_t>(no, 1));
    in = in_v.data();
    out = out_v.data();
    n_in = to_u32(ni, "inputs");
    n_out = to_u32(no, "outputs");
  }
};

void gather(const std::vector<TensorRef> &ins, const std::vector<TensorRef> &outs, const Device *dev, Descs &d,
            uint32_t op_id) {
  d.resize(ins.size(), outs.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i]) fail_arg("input " + std::to_string(i) + " is None", op_id, static_cast<int32_t>(i));
    d.in[i] = desc_for(*ins[i], dev);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i]) fail_arg("output " + std::to_string(i) + " is None", op_id, static_cast<int32_t>(ins.size() + i));
    d.out[i] = desc_for(*outs[i], dev);
  }
}

const void *attrs_ptr(const std::optional<nb::bytes> &attrs) {
  return attrs ? static_cast<const void *>(attrs->c_str()) : nullptr;
}

// --- graphs ---------------------------------------------------------------------------------------------------

struct Graph {
  pk_graph_t g = nullptr;
  Graph() { check(pk_graph_create(&g), "pk_graph_create"); }
  ~Graph() {
    if (g) pk_graph_destroy(g);
  }
};

struct ValueSpec {
  pk_dtype dtype;
  int32_t ndim;
  int64_t shape[PK_MAX_RANK];
  int64_t strides[PK_MAX_RANK];
  uint64_t bytes;
};

ValueSpec value_spec(pk_graph_t g, uint32_t v) {
  ValueSpec s{};
  check(pk_graph_value_info(g, v, &s.dtype, &s.ndim, s.shape), "pk_graph_value_info");
  row_major(s.shape, s.ndim, s.strides);
  s.bytes = (s.dtype.bits + 7u) / 8u;
  for (int32_t i = 0; i < s.ndim; ++i) s.bytes *= static_cast<uint64_t>(s.shape[i]);
  return s;
}

struct Executable {
  DeviceRef device;
  pk_executable_t exe = nullptr;
  std::vector<ValueSpec> inputs, outputs;
  ~Executable() {
    if (exe) pk_executable_destroy(exe);
  }
  // Host pointers of compact row-major tensors in the declared shapes: the torch bridge's fast path (no
  // per-tensor Python objects). Only for devices that address host memory.
  void run_ptrs(Stream &stream, const std::vector<uintptr_t> &in, const std::vector<uintptr_t> &out) {
    if (in.size() != inputs.size() || out.size() != outputs.size()) {
      fail_arg("Executable.run_ptrs: expected " + std::to_string(inputs.size()) + " inputs and " +
               std::to_string(outputs.size()) + " outputs");
    }
    Descs d;
    auto fill = [&](const ValueSpec &s, uintptr_t p, pk_tensor &t) {
      PK_STRUCT_INIT(t);
      t.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
      t.data = reinterpret_cast<void *>(p);
      t.storage_bytes = s.bytes;
      t.device_type = device->props.device_type;
      t.device_id = device->props.device_id;
      t.dtype = s.dtype;
      t.ndim = s.ndim;
      t.shape = s.shape;
      t.strides = s.strides;
    };
    d.resize(in.size(), out.size());
    for (size_t i = 0; i < in.size(); ++i) fill(inputs[i], in[i], d.in[i]);
    for (size_t i = 0; i < out.size(); ++i) fill(outputs[i], out[i], d.out[i]);
    pk_status st;
    {
      nb::gil_scoped_release nogil;
      st = pk_executable_run(exe, stream.s, d.in, to_u32(in.size(), "inputs"), d.out, to_u32(out.size(), "outputs"));
    }
    check(st, "pk_executable_run");
  }
};

nb::dict props_dict(const pk_device_props &p) {
  nb::dict d;
  d["name"] = std::string(p.name);
  d["device_type"] = p.device_type;
  d["device_id"] = p.device_id;
  d["memory_bytes"] = p.memory_bytes;
  d["compute_units"] = p.compute_units;
  d["async"] = (p.features & PK_DEVICE_FEATURE_ASYNC) != 0;
  d["unified_memory"] = (p.features & PK_DEVICE_FEATURE_UNIFIED_MEMORY) != 0;
  d["fusion"] = (p.features & PK_DEVICE_FEATURE_FUSION) != 0;
  d["float_policy"] = p.float_policy;
  d["dtype_mask"] = p.dtype_mask;
  d["alignment"] = p.alignment;
  return d;
}

nb::object cstr(const char *s) {
  return s ? nb::object(nb::str(s)) : nb::none();
}

// The op table as data (pk_op_*).
void bind_op_metadata(nb::module_ &m) {
  m.def("op_count", &pk_op_count);
  m.def("op_find", [](const std::string &name) {
    uint32_t id = 0;
    check(pk_op_find(name.c_str(), &id), "pk_op_find");
    return id;
  });
  m.def("op_describe", [](uint32_t id) {
    pk_op_desc d;
    PK_STRUCT_INIT(d);
    check(pk_op_describe(id, &d), "pk_op_describe");
    nb::dict r;
    r["id"] = d.op_id;
    r["name"] = cstr(d.name);
    r["category"] = cstr(d.category);
    r["tier"] = d.tier == PK_OP_TIER_COMPOSITE ? "composite" : "primitive";
    r["alias"] = d.alias;
    r["num_inputs"] = d.num_inputs;
    r["variadic"] = d.variadic != 0;
    r["num_outputs"] = d.num_outputs;
    r["num_attrs"] = d.num_attrs;
    r["attrs_size"] = d.attrs_size;
    r["contract"] = d.contract;
    r["contract_ulp"] = d.contract_ulp;
    r["contract_half"] = d.contract_half;
    r["since"] = cstr(d.since);
    r["doc"] = cstr(d.doc);
    r["decomposition"] = cstr(d.decomposition);
    return r;
  });
  m.def("op_id_at", [](uint32_t index) {
    pk_op_desc d;
    PK_STRUCT_INIT(d);
    check(pk_op_describe_at(index, &d), "pk_op_describe_at");
    return d.op_id;
  });
  m.def("op_operand", [](uint32_t id, uint32_t index) {
    pk_op_operand_desc d;
    PK_STRUCT_INIT(d);
    check(pk_op_operand(id, index, &d), "pk_op_operand");
    nb::dict r;
    r["name"] = cstr(d.name);
    r["is_output"] = d.is_output != 0;
    r["type_var"] = d.type_var;
    r["dtype_mask"] = d.dtype_mask;
    r["optional"] = d.optional != 0;
    r["variadic"] = d.variadic != 0;
    r["dtype_rule"] = d.dtype_rule;
    r["rule_arg"] = d.rule_arg;
    return r;
  });
  m.def("op_attr", [](uint32_t id, uint32_t index) {
    pk_op_attr_desc d;
    PK_STRUCT_INIT(d);
    check(pk_op_attr(id, index, &d), "pk_op_attr");
    static const char *types[] = {"i64", "f64", "bool", "dtype", "ints", "enum"};
    nb::dict r;
    r["name"] = cstr(d.name);
    r["type"] = (d.type >= 0 && d.type < 6) ? types[d.type] : "?";
    r["has_default"] = (d.flags & PK_ATTR_FLAG_HAS_DEFAULT) != 0;
    r["required"] = (d.flags & PK_ATTR_FLAG_REQUIRED) != 0;
    r["nan_unset"] = (d.flags & PK_ATTR_FLAG_NAN_UNSET) != 0;
    r["offset"] = d.offset;
    r["count_offset"] = d.count_offset;
    r["default"] = d.default_value;
    std::vector<int64_t> di(d.default_ints, d.default_ints + d.num_default_ints);
    r["default_ints"] = di;
    r["min"] = (d.flags & PK_ATTR_FLAG_HAS_MIN) ? nb::object(nb::float_(d.min_value)) : nb::none();
    r["max"] = (d.flags & PK_ATTR_FLAG_HAS_MAX) ? nb::object(nb::float_(d.max_value)) : nb::none();
    r["dim_of"] = d.dim_of;
    r["choices"] = cstr(d.choices);
    return r;
  });
  m.def("op_init_attrs", [](uint32_t id, uint32_t size) {
    std::string buf(size, '\0');
    check(pk_op_init_attrs(id, buf.data(), size), "pk_op_init_attrs");
    return nb::bytes(buf.data(), buf.size());
  });
}

// Runtimes, backends and devices.
void bind_runtime(nb::module_ &m) {
  nb::class_<Device>(m, "Device")
      .def_prop_ro("backend", [](const Device &d) { return d.backend; })
      .def_prop_ro("index", [](const Device &d) { return d.index; })
      .def_prop_ro("label", &Device::label)
      .def_prop_ro("device_type", [](const Device &d) { return d.props.device_type; })
      .def("props", [](const Device &d) { return props_dict(d.props); })
      .def(
          "query_op",
          [](const Device &d, uint32_t op_id,
             const std::vector<std::tuple<std::tuple<int, int>, std::vector<int64_t>>> &ins,
             const std::vector<std::tuple<std::tuple<int, int>, std::vector<int64_t>>> &outs,
             std::optional<nb::bytes> attrs, bool with_shapes) {
            std::vector<pk_tensor> ti(ins.size()), to(outs.size());
            std::vector<std::vector<int64_t>> keep;
            keep.reserve(ins.size() + outs.size());
            auto fill = [&](const std::tuple<std::tuple<int, int>, std::vector<int64_t>> &spec, pk_tensor &t) {
              PK_STRUCT_INIT(t);
              t.device_type = d.props.device_type;
              t.device_id = d.props.device_id;
              t.dtype.code = static_cast<uint8_t>(std::get<0>(std::get<0>(spec)));
              t.dtype.bits = static_cast<uint8_t>(std::get<1>(std::get<0>(spec)));
              t.dtype.lanes = 1;
              keep.push_back(std::get<1>(spec));
              t.ndim = static_cast<int32_t>(keep.back().size());
              t.shape = with_shapes ? keep.back().data() : nullptr;
            };
            for (size_t i = 0; i < ins.size(); ++i) fill(ins[i], ti[i]);
            for (size_t i = 0; i < outs.size(); ++i) fill(outs[i], to[i]);
            pk_op_query q;
            PK_STRUCT_INIT(q);
            q.op_id = op_id;
            q.device_index = d.index;
            q.num_inputs = to_u32(ti.size(), "inputs");
            q.inputs = ti.data();
            q.num_outputs = to_u32(to.size(), "outputs");
            q.outputs = to.data();
            q.attrs = attrs_ptr(attrs);
            pk_op_support s;
            PK_STRUCT_INIT(s);
            check(pk_device_query_op(d.dev, &q, &s), "pk_device_query_op");
            return nb::make_tuple(s.supported != 0, s.native != 0, std::string(s.reason));
          },
          "op_id"_a, "inputs"_a, "outputs"_a, "attrs"_a = nb::none(), "with_shapes"_a = true)
      .def("__repr__", [](const Device &d) { return "<primkit.Device " + d.label() + " '" + d.props.name + "'>"; });

  nb::class_<RuntimeHandle>(m, "RuntimeHandle");

  m.def(
      "runtime_create",
      [](std::optional<std::string> plugin_path, bool strict, bool discover) {
        auto h = std::make_shared<RuntimeHandle>();
        pk_runtime_options o;
        PK_STRUCT_INIT(o);
        o.flags = 0;
        if (strict) o.flags |= PK_RUNTIME_STRICT;
        if (!discover) o.flags |= PK_RUNTIME_NO_DISCOVERY;
        o.plugin_path = plugin_path ? plugin_path->c_str() : nullptr;
        check(pk_runtime_create(&o, &h->rt), "pk_runtime_create");
        return h;
      },
      "plugin_path"_a = nb::none(), "strict"_a = false, "discover"_a = true);
  m.def("runtime_load_plugin", [](const RuntimeRef &rt, const std::string &path) {
    pk_backend_t b = nullptr;
    check(pk_runtime_load_plugin(rt->rt, path.c_str(), &b), "pk_runtime_load_plugin");
  });
  m.def("runtime_load_errors", [](const RuntimeRef &rt) { return std::string(pk_runtime_load_errors(rt->rt)); });
  m.def("runtime_fallback_report", [](const RuntimeRef &rt) {
    const char *r = pk_runtime_fallback_report(rt->rt);
    return std::string(r ? r : "");
  });
  m.def("runtime_fallback_count", [](const RuntimeRef &rt, uint32_t op) {
    uint64_t n = 0, b = 0;
    check(pk_runtime_fallback_count(rt->rt, op, &n, &b), "pk_runtime_fallback_count");
    return nb::make_tuple(n, b);
  });
  m.def("runtime_reset_fallback_counters", [](const RuntimeRef &rt) { pk_runtime_reset_fallback_counters(rt->rt); });
  m.def("runtime_backends", [](const RuntimeRef &rt) {
    uint32_t n = 0;
    check(pk_runtime_backend_count(rt->rt, &n), "pk_runtime_backend_count");
    nb::list out;
    for (uint32_t i = 0; i < n; ++i) {
      pk_backend_t b;
      check(pk_runtime_backend(rt->rt, i, &b), "pk_runtime_backend");
      pk_backend_info info;
      PK_STRUCT_INIT(info);
      check(pk_backend_get_info(b, &info), "pk_backend_get_info");
      uint32_t nd = 0;
      check(pk_backend_device_count(b, &nd), "pk_backend_device_count");
      nb::list devs;
      for (uint32_t k = 0; k < nd; ++k) {
        auto d = std::make_shared<Device>();
        d->rt = rt;
        d->backend = info.name;
        d->index = k;
        check(pk_backend_device(b, k, &d->dev), "pk_backend_device");
        PK_STRUCT_INIT(d->props);
        check(pk_device_get_props(d->dev, &d->props), "pk_device_get_props");
        devs.append(nb::cast(d));
      }
      nb::dict e;
      e["name"] = std::string(info.name);
      e["vendor"] = std::string(info.vendor);
      e["version"] = nb::make_tuple(info.version_major, info.version_minor, info.version_patch);
      e["abi_version"] = nb::make_tuple(PK_VERSION_MAJOR(info.abi_version), PK_VERSION_MINOR(info.abi_version));
      const char *path = pk_backend_path(b);
      e["path"] = cstr(path);
      e["devices"] = devs;
      out.append(e);
    }
    return out;
  });
}

// Streams and events.
void bind_streams(nb::module_ &m) {
  nb::class_<Stream>(m, "Stream")
      .def("synchronize",
           [](Stream &s) {
             pk_status st;
             {
               nb::gil_scoped_release nogil;
               st = pk_stream_synchronize(s.s);
             }
             check(st, "pk_stream_synchronize");
           })
      .def("wait_event", [](Stream &s, Event &e) { check(pk_stream_wait_event(s.s, e.e), "pk_stream_wait_event"); })
      .def_prop_ro("device", [](const Stream &s) { return s.device; });
  m.def("stream_create", [](const DeviceRef &d) {
    auto s = std::make_shared<Stream>();
    s->device = d;
    check(pk_stream_create(d->dev, &s->s), "pk_stream_create");
    return s;
  });
  nb::class_<Event>(m, "Event")
      .def("record", [](Event &e, Stream &s) { check(pk_event_record(e.e, s.s), "pk_event_record"); })
      .def("synchronize",
           [](Event &e) {
             pk_status st;
             {
               nb::gil_scoped_release nogil;
               st = pk_event_synchronize(e.e);
             }
             check(st, "pk_event_synchronize");
           })
      .def("query", [](Event &e) { return pk_event_query(e.e) == PK_OK; });
  m.def("event_create", [](const DeviceRef &d) {
    auto e = std::make_shared<Event>();
    e->device = d;
    check(pk_event_create(d->dev, &e->e), "pk_event_create");
    return e;
  });
}

// Tensors: allocation, DLPack and torch import, copies.
void bind_tensors(nb::module_ &m) {
  nb::class_<Tensor>(m, "Tensor")
      .def_prop_ro("shape",
                   [](const Tensor &t) {
                     nb::list l;
                     for (int i = 0; i < t.desc.ndim; ++i) l.append(t.shape[i]);
                     return nb::tuple(l);
                   })
      .def_prop_ro("strides",
                   [](const Tensor &t) {
                     nb::list l;
                     for (int i = 0; i < t.desc.ndim; ++i) l.append(t.strides[i]);
                     return nb::tuple(l);
                   })
      .def_prop_ro("ndim", [](const Tensor &t) { return t.desc.ndim; })
      .def_prop_ro("dtype_code_bits",
                   [](const Tensor &t) { return nb::make_tuple(t.desc.dtype.code, t.desc.dtype.bits); })
      .def_prop_ro("device", [](const Tensor &t) { return t.device; })
      .def_prop_ro("nbytes", [](const Tensor &t) { return static_cast<uint64_t>(t.numel()) * t.itemsize(); })
      .def_prop_ro("host_addressable", [](const Tensor &t) { return exportable(t); })
      .def_prop_ro("data_ptr",
                   [](const Tensor &t) {
                     return reinterpret_cast<uintptr_t>(static_cast<char *>(t.desc.data) + t.desc.byte_offset);
                   })
      .def(
          "__dlpack__",
          [](nb::handle self, nb::object stream, std::optional<std::tuple<int, int>> max_version,
             std::optional<std::tuple<int, int>> dl_device, std::optional<bool> copy) {
            (void)stream;  // PrimKit work is complete when a tensor reaches Python (see primkit.Tensor)
            if (dl_device && std::get<0>(*dl_device) != PK_DEVICE_CPU) {
              throw nb::buffer_error("__dlpack__: primkit exports host memory only (dl_device must be CPU)");
            }
            if (copy && *copy) throw nb::buffer_error("__dlpack__: copy=True is not supported; use .cpu()");
            bool versioned = max_version && std::get<0>(*max_version) >= 1;
            return export_capsule(self, versioned);
          },
          "stream"_a = nb::none(), "max_version"_a = nb::none(), "dl_device"_a = nb::none(), "copy"_a = nb::none())
      .def("__dlpack_device__",
           [](const Tensor &t) {
             if (exportable(t)) return nb::make_tuple(static_cast<int>(PK_DEVICE_CPU), 0);
             return nb::make_tuple(t.desc.device_type, t.desc.device_id);
           })
      .def("__repr__", [](const Tensor &t) {
        std::string s = "<primkit._primkit.Tensor [";
        for (int i = 0; i < t.desc.ndim; ++i) s += (i ? "," : "") + std::to_string(t.shape[i]);
        return s + "] on " + (t.device ? t.device->label() : std::string("host")) + ">";
      });

  m.def("from_dlpack", &import_object, "obj"_a, "Imports a DLPack producer's host memory without copying.");
  m.def("from_torch", &import_torch, "tensor"_a, "dtypes"_a, "Imports a CPU torch.Tensor without a capsule.");
  m.def(
      "empty",
      [](const DeviceRef &dev, std::tuple<int, int> dtype, const std::vector<int64_t> &shape) {
        return alloc_tensor(dev, dtype_of(nb::cast(dtype)), shape);
      },
      "device"_a, "dtype"_a, "shape"_a);
  // Copies a compact host tensor into a new allocation on `dev` (ordered on `stream`, complete on return).
  m.def("to_device", [](const TensorRef &src, const DeviceRef &dev, Stream &stream) {
    if (!exportable(*src)) fail_arg("to_device: the source must be host memory");
    std::vector<int64_t> shape(src->shape, src->shape + src->desc.ndim);
    int64_t want[PK_MAX_RANK];
    row_major(src->shape, src->desc.ndim, want);
    for (int i = 0; i < src->desc.ndim; ++i) {
      if (src->shape[i] > 1 && src->strides[i] != want[i]) fail_arg("to_device: the source must be compact row-major");
    }
    TensorRef t = alloc_tensor(dev, src->desc.dtype, shape);
    uint64_t bytes = static_cast<uint64_t>(src->numel()) * src->itemsize();
    if (bytes > 0) {
      const char *from = static_cast<const char *>(src->desc.data) + src->desc.byte_offset;
      check(pk_copy_host_to_buffer(stream.s, t->storage->buffer, 0, from, bytes), "pk_copy_host_to_buffer");
      pk_status st;
      {
        nb::gil_scoped_release nogil;
        st = pk_stream_synchronize(stream.s);
      }
      check(st, "pk_stream_synchronize");
    }
    return t;
  });
  // Copies an allocation (compact) into host memory at `dst` (nbytes of the tensor); complete on return.
  m.def("copy_to_host", [](const TensorRef &src, Stream &stream, uintptr_t dst) {
    uint64_t bytes = static_cast<uint64_t>(src->numel()) * src->itemsize();
    if (bytes == 0) return;
    if (!src->storage || !src->storage->buffer) {
      std::memcpy(reinterpret_cast<void *>(dst), static_cast<const char *>(src->desc.data) + src->desc.byte_offset,
                  bytes);
      return;
    }
    check(pk_copy_buffer_to_host(stream.s, reinterpret_cast<void *>(dst), src->storage->buffer, src->desc.byte_offset,
                                 bytes),
          "pk_copy_buffer_to_host");
    pk_status st;
    {
      nb::gil_scoped_release nogil;
      st = pk_stream_synchronize(stream.s);
    }
    check(st, "pk_stream_synchronize");
  });

  m.def(
      "launch",
      [](Stream &stream, uint32_t op_id, const std::vector<TensorRef> &ins, const std::vector<TensorRef> &outs,
         std::optional<nb::bytes> attrs) {
        Descs d;
        gather(ins, outs, stream.device.get(), d, op_id);
        pk_status st;
        {
          nb::gil_scoped_release nogil;
          st = pk_launch(stream.s, op_id, d.in, d.n_in, d.out, d.n_out, attrs_ptr(attrs));
        }
        check(st, "pk_launch");
      },
      "stream"_a, "op_id"_a, "inputs"_a, "outputs"_a, "attrs"_a = nb::none());
  m.def(
      "infer_outputs",
      [](uint32_t op_id, const std::vector<TensorRef> &ins, std::optional<nb::bytes> attrs, uint32_t num_outputs) {
        Descs d;
        gather(ins, {}, nullptr, d, op_id);
        pk_dtype dt[8];
        int32_t nd[8];
        int64_t sh[8 * PK_MAX_RANK];
        if (num_outputs > 8) fail_arg("infer_outputs: more than 8 outputs", op_id);
        check(pk_infer_outputs(op_id, d.in, d.n_in, attrs_ptr(attrs), num_outputs, dt, nd, sh), "pk_infer_outputs");
        nb::list out;
        for (uint32_t k = 0; k < num_outputs; ++k) {
          std::vector<int64_t> shape(sh + k * PK_MAX_RANK, sh + k * PK_MAX_RANK + nd[k]);
          out.append(nb::make_tuple(nb::make_tuple(dt[k].code, dt[k].bits), shape));
        }
        return out;
      },
      "op_id"_a, "inputs"_a, "attrs"_a, "num_outputs"_a);
}

// Graphs and compiled executables.
void bind_graphs(nb::module_ &m) {
  nb::class_<Graph>(m, "Graph")
      .def(nb::init<>())
      .def("add_input",
           [](Graph &g, std::tuple<int, int> dtype, const std::vector<int64_t> &shape) {
             int64_t sh[PK_MAX_RANK];
             read_shape(shape, sh, "Graph.add_input");
             uint32_t v = 0;
             check(pk_graph_add_input(g.g, dtype_of(nb::cast(dtype)), static_cast<int32_t>(shape.size()), sh, &v),
                   "pk_graph_add_input");
             return v;
           })
      .def("add_node",
           [](Graph &g, uint32_t op_id, const std::vector<uint32_t> &ins, std::optional<nb::bytes> attrs,
              uint32_t num_outputs) {
             uint32_t outs[8];
             if (num_outputs > 8) fail_arg("Graph.add_node: more than 8 outputs", op_id);
             check(pk_graph_add_node(g.g, op_id, ins.data(), to_u32(ins.size(), "inputs"), attrs_ptr(attrs), outs,
                                     num_outputs),
                   "pk_graph_add_node");
             return std::vector<uint32_t>(outs, outs + num_outputs);
           })
      .def("mark_output", [](Graph &g, uint32_t v) { check(pk_graph_mark_output(g.g, v), "pk_graph_mark_output"); })
      .def("value_info",
           [](Graph &g, uint32_t v) {
             ValueSpec s = value_spec(g.g, v);
             return nb::make_tuple(nb::make_tuple(s.dtype.code, s.dtype.bits),
                                   std::vector<int64_t>(s.shape, s.shape + s.ndim));
           })
      .def(
          "compile",
          [](Graph &g, const DeviceRef &dev, bool disable_fusion, const std::vector<uint32_t> &inputs,
             const std::vector<uint32_t> &outputs) {
            pk_compile_options o;
            PK_STRUCT_INIT(o);
            o.disable_fusion = disable_fusion ? 1 : 0;
            auto e = std::make_shared<Executable>();
            e->device = dev;
            for (uint32_t v : inputs) e->inputs.push_back(value_spec(g.g, v));
            for (uint32_t v : outputs) e->outputs.push_back(value_spec(g.g, v));
            pk_status st;
            {
              nb::gil_scoped_release nogil;
              st = pk_graph_compile(g.g, dev->dev, &o, &e->exe);
            }
            check(st, "pk_graph_compile");
            return e;
          },
          "device"_a, "disable_fusion"_a, "inputs"_a, "outputs"_a);

  nb::class_<Executable>(m, "Executable")
      .def("run",
           [](Executable &e, Stream &stream, const std::vector<TensorRef> &ins, const std::vector<TensorRef> &outs) {
             Descs d;
             gather(ins, outs, e.device.get(), d, PK_OP_NONE);
             pk_status st;
             {
               nb::gil_scoped_release nogil;
               st = pk_executable_run(e.exe, stream.s, d.in, d.n_in, d.out, d.n_out);
             }
             check(st, "pk_executable_run");
           })
      .def("run_ptrs", &Executable::run_ptrs)
      .def("stats",
           [](Executable &e) {
             uint32_t fk = 0, fn = 0, sn = 0;
             check(pk_executable_stats(e.exe, &fk, &fn, &sn), "pk_executable_stats");
             return nb::make_tuple(fk, fn, sn);
           })
      .def("memory", [](Executable &e) {
        uint64_t arena = 0, unshared = 0;
        check(pk_executable_memory(e.exe, &arena, &unshared), "pk_executable_memory");
        return nb::make_tuple(arena, unshared);
      });
}
}  // namespace

NB_MODULE(_primkit, m) {
  m.doc() = "Low-level binding of libprimkit's C ABI; use the `primkit` package instead.";
  // Tensors a user keeps in module globals are still alive when the interpreter tears the module down; that is
  // not a leak of ours, and the warning would only confuse.
  nb::set_leak_warnings(false);

  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const PkError &e) {
      nb::gil_scoped_acquire gil;
      nb::object cls = nb::module_::import_("primkit.errors").attr("error_class")(static_cast<int>(e.status));
      nb::object exc = cls(e.message, static_cast<int>(e.status), pk_status_name(e.status), e.op_id, e.arg_index);
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });

  m.attr("ABI_VERSION") = nb::make_tuple(PK_ABI_VERSION_MAJOR, PK_ABI_VERSION_MINOR);
  m.def("runtime_abi_version", [] {
    uint32_t v = pk_runtime_abi_version();
    return nb::make_tuple(PK_VERSION_MAJOR(v), PK_VERSION_MINOR(v));
  });
  m.def("status_name", [](int s) { return std::string(pk_status_name(static_cast<pk_status>(s))); });

  bind_op_metadata(m);
  bind_runtime(m);
  bind_streams(m);
  bind_tensors(m);
  bind_graphs(m);
}
