// runner.cpp — runs the cases of each (op, dtype) on a backend through the runtime, in forked children.
//
// Isolation: the parent never loads the backend. A probe child loads it, reports its metadata, devices and the
// capability query of every pair, and exits; then children each run a group of ops (several ops per child: a
// fork per op would dominate the run time) and stream their progress and results back over a pipe, one line
// per event:
//   B <op> <dtype>      a pair starts            C <case id>   a case starts
//   R <encoded result>  a pair is done
// A child that dies (signal, abort, exit) or makes no progress for the timeout turns the pair it was in into
// CRASH or TIMEOUT, naming the case; the ops of its group that had not run yet are re-run one op per child so a
// single bad op cannot take the others with it. Children load the backend themselves (by path with
// PK_RUNTIME_NO_DISCOVERY + pk_runtime_load_plugin, or by name with discovery) in strict mode
// (PK_RUNTIME_STRICT), so a result is the backend's own and never the CPU fallback's; composite ops the backend
// lacks are decomposed by the runtime into the backend's own primitives, which is what a user would run.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <sstream>

#include "conformance_internal.hpp"

namespace pk::conformance {

std::vector<const meta::OpInfo *> fused_composites() {
  std::vector<const meta::OpInfo *> out;
  for (const meta::OpInfo *op = meta::ops_begin(); op != meta::ops_end(); ++op)
    if (op->fused_check) out.push_back(op);
  return out;
}

using detail::decode;
using detail::decode_probe;
using detail::describe_exit;
using detail::encode;
using detail::encode_probe;
using detail::escape;
using detail::last_error;
using detail::Pair;
using detail::ProbeInfo;
using detail::Session;
using detail::unescape;
using detail::write_line;

namespace {

using meta::OpInfo;
using oracle::HostTensor;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// --- backend access -------------------------------------------------------------------------------------------

bool looks_like_path(const std::string &s) {
  return s.find('/') != std::string::npos || (s.size() > 3 && s.compare(s.size() - 3, 3, ".so") == 0);
}

}  // namespace

namespace detail {

std::string last_error() {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  return e.message;
}

Session::Session(const std::string &name_or_path, uint32_t device_index, bool strict) {
  pk_runtime_options opts;
  PK_STRUCT_INIT(opts);
  const bool by_path = looks_like_path(name_or_path);
  opts.flags = (strict ? static_cast<uint32_t>(PK_RUNTIME_STRICT) : 0u) |
               (by_path ? static_cast<uint32_t>(PK_RUNTIME_NO_DISCOVERY) : 0u);
  if (pk_runtime_create(&opts, &runtime) != PK_OK) {
    error = "cannot create the runtime: " + last_error();
    return;
  }
  if (by_path) {
    if (pk_runtime_load_plugin(runtime, name_or_path.c_str(), &backend) != PK_OK) {
      error = last_error();
      return;
    }
  } else if (pk_runtime_find_backend(runtime, name_or_path.c_str(), &backend) != PK_OK) {
    error = "no backend named '" + name_or_path + "' was found";
    const char *errors = pk_runtime_load_errors(runtime);
    if (errors && *errors) error += "; plugins that failed to load:\n" + std::string(errors);
    return;
  }
  uint32_t count = 0;
  pk_backend_device_count(backend, &count);
  if (count == 0) {
    no_devices = last_error();  // the backend's reason, kept by the runtime
    return;
  }
  if (device_index >= count) {
    error = "the backend has " + std::to_string(count) + " devices, no device " + std::to_string(device_index);
    return;
  }
  pk_backend_device(backend, device_index, &device);
}

Session::~Session() {
  if (runtime) pk_runtime_destroy(runtime);
}

std::string describe_exit(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    return std::string("killed by signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  if (WIFEXITED(wstatus)) return "exited with status " + std::to_string(WEXITSTATUS(wstatus));
  return "ended abnormally";
}

}  // namespace detail

bool query_support(pk_device_t dev, const OpInfo &op, int32_t dtype, std::string *reason) {
  std::vector<pk_tensor> ins(op.num_inputs);
  for (uint32_t i = 0; i < op.num_inputs; ++i) {
    PK_STRUCT_INIT(ins[i]);
    const meta::OperandInfo &in = op.inputs[i];
    int32_t d = in.fixed_dtype;
    if (in.type_var == 0) d = dtype;
    if (in.type_var > 0) {
      uint32_t m = op.type_vars[in.type_var].dtype_mask;
      d = (m & (1u << PK_DTYPE_I64)) ? PK_DTYPE_I64 : __builtin_ctz(m);
    }
    ins[i].dtype = meta::dtype_desc(d);
    ins[i].ndim = 2;
  }
  std::vector<uint8_t> attrs;
  if (op.num_inputs == 0 && op.attrs_size) {
    // Creation ops: the dtype is an attribute; ask with it set.
    attrs.assign(meta::kMaxAttrsSize, 0);
    meta::default_attrs(op, attrs.data());
    for (uint32_t k = 0; k < op.num_attrs; ++k)
      if (std::strcmp(op.attrs[k].name, "dtype") == 0) std::memcpy(attrs.data() + op.attrs[k].offset, &dtype, 4);
  }
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = op.id;
  q.num_inputs = op.num_inputs;
  q.inputs = ins.data();
  q.attrs = attrs.empty() ? nullptr : attrs.data();
  pk_op_support s;
  PK_STRUCT_INIT(s);
  if (pk_device_query_op(dev, &q, &s) != PK_OK) {
    if (reason) *reason = "capability query failed: " + last_error();
    return false;
  }
  if (reason) *reason = s.reason;
  return s.supported != 0;
}

namespace {

// --- one case -------------------------------------------------------------------------------------------------

struct Buffer {
  pk_buffer_t handle = nullptr;
  Buffer() = default;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  Buffer(Buffer &&o) noexcept : handle(o.handle) { o.handle = nullptr; }
  ~Buffer() { pk_buffer_destroy(handle); }
};

struct Stream {
  pk_stream_t handle = nullptr;
  explicit Stream(pk_device_t dev) { pk_stream_create(dev, &handle); }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream() { pk_stream_destroy(handle); }
};

const meta::AttrInfo *attr_named(const OpInfo &op, const char *name) {
  for (uint32_t i = 0; i < op.num_attrs; ++i)
    if (std::strcmp(op.attrs[i].name, name) == 0) return &op.attrs[i];
  return nullptr;
}

int64_t read_i64(const Case &c, const meta::AttrInfo *a, int64_t fallback) {
  if (a == nullptr || c.attrs.size() < a->offset + 8) return fallback;
  int64_t v;
  std::memcpy(&v, c.attrs.data() + a->offset, 8);
  return v;
}

std::vector<int64_t> read_ints(const Case &c, const meta::AttrInfo *a) {
  std::vector<int64_t> out;
  if (a == nullptr || c.attrs.empty()) return out;
  int32_t n;
  std::memcpy(&n, c.attrs.data() + a->count_offset, 4);
  for (int32_t i = 0; i < n && i < PK_MAX_RANK; ++i) {
    int64_t v;
    std::memcpy(&v, c.attrs.data() + a->offset + 8 * static_cast<size_t>(i), 8);
    out.push_back(v);
  }
  return out;
}

// Terms per output element of a reduction-contract op (the n of the bound).
int64_t reduction_length(const OpInfo &op, const Case &c, const oracle::OutputValue &out0) {
  auto extent = [&](size_t input, int64_t axis) -> int64_t {
    if (input >= c.inputs.size() || axis < 0 || static_cast<size_t>(axis) >= c.inputs[input].shape.size()) return 1;
    return c.inputs[input].shape[static_cast<size_t>(axis)];
  };
  int64_t max_in = 1;
  for (const auto &t : c.inputs) max_in = std::max(max_in, t.numel());
  if (op.shape == meta::ShapeRule::scan) return std::max<int64_t>(1, extent(0, read_i64(c, attr_named(op, "dim"), 0)));
  if (op.shape == meta::ShapeRule::reduce)
    return std::max<int64_t>(1, c.inputs[0].numel() / std::max<int64_t>(1, out0.numel()));
  const meta::GradingInfo &g = op.grading;
  switch (g.terms) {
    case meta::TermsRule::automatic:
      break;
    case meta::TermsRule::contraction:
      return c.inputs.empty() ? 1 : std::max<int64_t>(1, extent(0, static_cast<int64_t>(c.inputs[0].shape.size()) - 1));
    case meta::TermsRule::attr_axes: {
      int64_t n = 1;
      for (int64_t a : read_ints(c, attr_named(op, g.terms_attr))) n *= extent(0, a);
      return std::max<int64_t>(1, n);
    }
    case meta::TermsRule::attr_product: {
      int64_t n = 1;
      for (int64_t k : read_ints(c, attr_named(op, g.terms_attr))) n *= k;
      return std::max<int64_t>(1, n);
    }
    case meta::TermsRule::widest_bin: {
      // The widest bin [floor(i H / OH), ceil((i + 1) H / OH)) on each trailing spatial axis.
      const std::vector<int64_t> sizes = read_ints(c, attr_named(op, g.terms_attr));
      const int64_t rank = c.inputs.empty() ? 0 : static_cast<int64_t>(c.inputs[0].shape.size());
      int64_t n = 1;
      for (size_t a = 0; a < sizes.size(); ++a) {
        const int64_t in = extent(0, rank - static_cast<int64_t>(sizes.size()) + static_cast<int64_t>(a));
        const int64_t out = std::max<int64_t>(1, sizes[a]);
        int64_t widest = 1;
        for (int64_t i = 0; i < out; ++i) widest = std::max(widest, ((i + 1) * in + out - 1) / out - i * in / out);
        n *= widest;
      }
      return std::max<int64_t>(1, n);
    }
    case meta::TermsRule::weight_fan_in:
      if (c.inputs.size() > 1) return std::max<int64_t>(1, c.inputs[1].numel() / std::max<int64_t>(1, extent(1, 0)));
      break;
  }
  return max_in;
}

// Inputs with subnormal floats flushed to zero (keeping the sign): the reference for DAZ devices.
bool flush_subnormal_inputs(std::vector<HostTensor> &inputs) {
  bool any = false;
  for (HostTensor &t : inputs) {
    if (!meta::is_float(meta::real_of(t.dtype))) continue;
    oracle::BinaryFormat f = oracle::format_of(meta::real_of(t.dtype));
    const size_t part = meta::dtype_size(meta::real_of(t.dtype));
    const uint64_t exp_mask = ((uint64_t{1} << f.exp_bits) - 1) << f.man_bits;
    const uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
    for (size_t off = 0; off + part <= t.storage.size(); off += part) {
      uint64_t bits = 0;
      std::memcpy(&bits, t.storage.data() + off, part);
      if ((bits & exp_mask) == 0 && (bits & man_mask) != 0) {
        bits &= ~man_mask;
        std::memcpy(t.storage.data() + off, &bits, part);
        any = true;
      }
    }
  }
  return any;
}

std::vector<long double> magnitudes(const OpInfo &op, const Case &c, const oracle::OutputValue &expected, size_t output,
                                    int64_t n) {
  std::vector<long double> mag;
  // The row's grading scale (docs/numerics.md): magnitudes evaluates the op exactly on |inputs|, which bounds
  // every partial sum and product an algorithm may form.
  if (op.grading.scale == meta::ErrorScale::magnitudes) {
    std::vector<oracle::OutputValue> outs;
    if (oracle::evaluate(op.id, detail::magnitude_inputs(c.inputs), c.attrs.empty() ? nullptr : c.attrs.data(), outs)
            .ok() &&
        output < outs.size()) {
      for (const oracle::Wide &w : outs[output].wide) mag.push_back(std::fabs(w.re) + std::fabs(w.im));
      return mag;
    }
  }
  long double in_l1 = 0, in_max = 0, out_max = 0;
  for (const HostTensor &t : c.inputs) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      oracle::Wide w = t.at(i);
      long double m = std::fabs(w.re) + std::fabs(w.im);
      if (std::isfinite(m)) {
        in_l1 += m;
        in_max = std::max(in_max, m);
      }
    }
  }
  for (const oracle::Wide &w : expected.wide) {
    long double m = std::fabs(w.re) + std::fabs(w.im);
    if (std::isfinite(m)) out_max = std::max(out_max, m);
  }
  long double scale = out_max;
  // |DFT terms| <= sum |a|; c2r counts each stored non-edge term twice (it stands for the Hermitian pair).
  if (op.grading.scale == meta::ErrorScale::input_l1) scale = in_l1;
  if (op.grading.scale == meta::ErrorScale::input_l1_twice) scale = 2 * in_l1;
  if (op.grading.scale == meta::ErrorScale::squared_spread) {
    // Any algorithm: the squares of deviations are bounded by (2 max|a|)^2; n of them over (n - correction).
    double corr = 1;
    if (const meta::AttrInfo *a = attr_named(op, "correction"); a && c.attrs.size() >= a->offset + 8)
      std::memcpy(&corr, c.attrs.data() + a->offset, 8);
    long double denom = std::max<long double>(static_cast<long double>(n) - corr, 1);
    scale = std::max(out_max, 4 * in_max * in_max * static_cast<long double>(n) / denom);
  }
  // An absolute error: the log of a relative one.
  if (op.grading.scale == meta::ErrorScale::one_plus_input_max) scale = 1 + in_max;
  mag.assign(static_cast<size_t>(expected.numel()), scale);
  return mag;
}

// A composite's decomposition run primitive by primitive on the oracle, every intermediate ROUNDED to its
// dtype: what the normative program yields when each primitive is exact to contract (the runtime's own
// decomposition, in the output precision). Composites are accepted against this or the exact reference: a
// program that overflows or cancels in f16 must not fail a backend that runs exactly that program.
bool rounded_chain(const OpInfo &op, const Case &c, std::vector<oracle::OutputValue> &out) {
  std::vector<meta::TensorType> types(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    types[i] = meta::TensorType{};
    types[i].dtype = c.inputs[i].dtype;
    types[i].ndim = static_cast<int32_t>(c.inputs[i].shape.size());
    for (size_t k = 0; k < c.inputs[i].shape.size(); ++k) types[i].shape[k] = c.inputs[i].shape[k];
  }
  meta::Decomposition dec;
  meta::Diag diag;
  if (!meta::decompose(op, types.data(), static_cast<uint32_t>(types.size()),
                       c.attrs.empty() ? nullptr : c.attrs.data(), dec, diag))
    return false;
  std::vector<HostTensor> values(dec.values.size());
  for (size_t i = 0; i < c.inputs.size() && i < values.size(); ++i) values[i] = c.inputs[i];
  for (const meta::DecomposedNode &node : dec.nodes) {
    std::vector<HostTensor> ins;
    for (int32_t v : node.inputs) ins.push_back(values[static_cast<size_t>(v)]);
    std::vector<oracle::OutputValue> outs;
    if (!oracle::evaluate(node.op_id, ins, node.attrs.empty() ? nullptr : node.attrs.data(), outs).ok()) return false;
    for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k)
      values[static_cast<size_t>(node.outputs[k])] =
          HostTensor::contiguous(outs[k].dtype, outs[k].shape, outs[k].rounded);
  }
  out.clear();
  for (int32_t v : dec.outputs) {
    const HostTensor &t = values[static_cast<size_t>(v)];
    oracle::OutputValue o;
    o.dtype = t.dtype;
    o.shape = t.shape;
    const size_t size = meta::dtype_size(t.dtype);
    o.rounded.resize(static_cast<size_t>(t.numel()) * size);
    for (int64_t i = 0; i < t.numel(); ++i) {
      oracle::Wide w = t.at(i);
      o.wide.push_back(w);
      oracle::store_rounded(w, t.dtype, o.rounded.data() + static_cast<size_t>(i) * size, oracle::Overflow::standard);
    }
    out.push_back(std::move(o));
  }
  return true;
}

std::string shape_text(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string worst_text(const Case &c, const oracle::OutputValue &expected, const std::vector<uint8_t> &actual,
                       size_t output, int64_t index) {
  std::string s;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const HostTensor &t = c.inputs[i];
    s += "in" + std::to_string(i) + " " + meta::dtype_name(t.dtype) + shape_text(t.shape);
    if (t.numel() == expected.numel() && index < t.numel()) {
      int64_t off = detail::element_byte_offset(t, index);
      s += " = " + detail::element_text(t.dtype, t.storage.data() + off, 0);
    }
    s += "; ";
  }
  s += "out" + std::to_string(output) + "[" + std::to_string(index) + "]: expected " +
       detail::element_text(expected.dtype, expected.rounded.data(), index) + " (wide " +
       detail::wide_text(expected.wide[static_cast<size_t>(index)], expected.dtype) + "), got " +
       detail::element_text(expected.dtype, actual.data(), index);
  return s;
}

}  // namespace

// Runs a composite's decomposition as a graph compiled with fusion on (see fused_composites()). *fused_kernels
// receives how many kernels the backend's fusion hook claimed; with none the graph is not run.
pk_status run_fused_decomposition(pk_device_t device, pk_stream_t stream, const OpInfo &op,
                                  const std::vector<pk_tensor> &ins, const std::vector<pk_tensor> &outs,
                                  const void *attrs, uint32_t *fused_kernels, std::string &why) {
  *fused_kernels = 0;
  meta::Diag diag;
  std::vector<meta::TensorType> types(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) meta::tensor_type(ins[i], types[i], &op, static_cast<int32_t>(i), diag);
  meta::Decomposition dec;
  if (!meta::decompose(op, types.data(), static_cast<uint32_t>(types.size()), attrs, dec, diag)) {
    why = std::string("no decomposition: ") + diag.message;
    return PK_UNIMPLEMENTED;
  }
  pk_graph_t g = nullptr;
  if (pk_graph_create(&g) != PK_OK) return PK_ERROR_OUT_OF_MEMORY;
  std::unique_ptr<pk_graph_s, void (*)(pk_graph_t)> graph(g, pk_graph_destroy);
  std::vector<uint32_t> value(dec.values.size(), UINT32_MAX);
  pk_status st = PK_OK;
  for (size_t i = 0; i < types.size() && st == PK_OK; ++i)
    st = pk_graph_add_input(g, meta::dtype_desc(types[i].dtype), types[i].ndim, types[i].shape, &value[i]);
  for (const auto &node : dec.nodes) {
    std::vector<uint32_t> in, out(node.outputs.size());
    for (int32_t v : node.inputs) in.push_back(value[static_cast<size_t>(v)]);
    if (st == PK_OK)
      st = pk_graph_add_node(g, node.op_id, in.data(), static_cast<uint32_t>(in.size()),
                             node.attrs.empty() ? nullptr : node.attrs.data(), out.data(),
                             static_cast<uint32_t>(out.size()));
    for (size_t k = 0; k < out.size(); ++k) value[static_cast<size_t>(node.outputs[k])] = out[k];
  }
  for (int32_t v : dec.outputs) {
    if (st == PK_OK && static_cast<size_t>(v) < ins.size()) {
      why = "the decomposition returns an input unchanged: nothing to fuse";
      return PK_UNIMPLEMENTED;
    }
    if (st == PK_OK) st = pk_graph_mark_output(g, value[static_cast<size_t>(v)]);
  }
  if (st != PK_OK) {
    why = "building the graph failed: " + last_error();
    return st;
  }
  pk_executable_t exe = nullptr;
  if ((st = pk_graph_compile(g, device, nullptr, &exe)) != PK_OK) {
    why = "compiling the graph failed: " + last_error();
    return st;
  }
  std::unique_ptr<pk_executable_s, void (*)(pk_executable_t)> owned(exe, pk_executable_destroy);
  pk_executable_stats(exe, fused_kernels, nullptr, nullptr);
  if (*fused_kernels == 0) {
    why = "the backend's fusion hook claimed no part of the decomposition";
    return PK_UNIMPLEMENTED;
  }
  st = pk_executable_run(exe, stream, ins.data(), static_cast<uint32_t>(ins.size()), outs.data(),
                         static_cast<uint32_t>(outs.size()));
  if (st != PK_OK) why = last_error();
  return st;
}

namespace {

// What check_pair keeps across the cases of one pair.
struct PairRun {
  pk_device_t device;
  const OpInfo &op;
  bool fused;
  const std::function<void(const std::string &)> &on_case;
  const std::function<void(bool)> &on_backend;
  pk_device_props props;
  PairResult &r;
  std::string not_supported_reason{}, no_reference_reason{};
  uint32_t cases_with_elements = 0;  // run cases with a non-empty output
  bool quality = false;
  std::unique_ptr<Stream> stream{};
};

// The device side of one case. Members are destroyed in reverse order: the views before the buffers they were
// uploaded to.
struct CaseBuffers {
  std::vector<Buffer> in_bufs, out_bufs;
  std::vector<pk_tensor> ins, outs;
  std::vector<detail::OutputView> views;
  CaseBuffers(size_t inputs, size_t outputs)
      : in_bufs(inputs), out_bufs(outputs), ins(inputs), outs(outputs), views(outputs) {}
};

// Device buffers: inputs hold the case's whole storage (gaps and offsets included), outputs are contiguous.
pk_status upload_inputs(pk_device_t device, pk_stream_t stream, const Case &c, CaseBuffers &b) {
  pk_status st = PK_OK;
  for (size_t i = 0; i < c.inputs.size() && st == PK_OK; ++i) {
    const HostTensor &t = c.inputs[i];
    st = pk_buffer_create(device, std::max<uint64_t>(t.storage.size(), 1), &b.in_bufs[i].handle);
    if (st == PK_OK && !t.storage.empty())
      st = pk_copy_host_to_buffer(stream, b.in_bufs[i].handle, 0, t.storage.data(), t.storage.size());
    if (st == PK_OK)
      st = pk_buffer_tensor(b.in_bufs[i].handle, meta::dtype_desc(t.dtype), static_cast<int32_t>(t.shape.size()),
                            t.shape.data(), t.strides.empty() ? nullptr : t.strides.data(), t.byte_offset, &b.ins[i]);
    if (st == PK_OK) b.ins[i].storage_bytes = t.storage.size();
  }
  return st;
}

// Outputs: poisoned storage with guard regions around the view (an output left unwritten shows up as
// garbage, a write outside the view as a changed guard byte), in the case's output layout.
pk_status upload_outputs(pk_device_t device, pk_stream_t stream, const Case &c,
                         const std::vector<oracle::OutputValue> &expected, CaseBuffers &b) {
  pk_status st = PK_OK;
  for (size_t o = 0; o < expected.size() && st == PK_OK; ++o) {
    b.views[o] = detail::plan_output(c.output_layout, expected[o].dtype, expected[o].shape);
    const uint64_t bytes = b.views[o].storage.size();
    st = pk_buffer_create(device, bytes, &b.out_bufs[o].handle);
    if (st == PK_OK) st = pk_copy_host_to_buffer(stream, b.out_bufs[o].handle, 0, b.views[o].storage.data(), bytes);
    if (st == PK_OK)
      st = pk_buffer_tensor(b.out_bufs[o].handle, meta::dtype_desc(expected[o].dtype),
                            static_cast<int32_t>(expected[o].shape.size()), expected[o].shape.data(),
                            b.views[o].strides.empty() ? nullptr : b.views[o].strides.data(), b.views[o].byte_offset,
                            &b.outs[o]);
    if (st == PK_OK) b.outs[o].storage_bytes = bytes;
  }
  return st;
}

// The exact launch (shapes and strides) through the capability query: a declined layout is reported as
// not supported instead of a failure, and a backend that accepts must then run it. True if it declines.
bool query_declines(PairRun &p, const CaseBuffers &b, const void *attrs, const std::string &cid) {
  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = p.op.id;
  q.num_inputs = static_cast<uint32_t>(b.ins.size());
  q.inputs = b.ins.data();
  q.num_outputs = static_cast<uint32_t>(b.outs.size());
  q.outputs = b.outs.data();
  q.attrs = attrs;
  pk_op_support sup;
  PK_STRUCT_INIT(sup);
  if (pk_device_query_op(p.device, &q, &sup) == PK_OK && !sup.supported) {
    ++p.r.cases_not_supported;
    if (p.not_supported_reason.empty()) p.not_supported_reason = cid + ": " + sup.reason;
    return true;
  }
  return false;
}

// Launches the case (or its fused decomposition) and waits for it. False when the case ends there: declined,
// failed (counted in p.r) or not supported.
bool launch_case(PairRun &p, const Case &c, CaseBuffers &b, const void *attrs, const std::string &cid) {
  PairResult &r = p.r;
  std::unique_ptr<Stream> &stream = p.stream;
  pk_status st = PK_OK;
  if (p.fused) {
    uint32_t kernels = 0;
    std::string why;
    st = run_fused_decomposition(p.device, stream->handle, p.op, b.ins, b.outs, attrs, &kernels, why);
    if (st == PK_UNIMPLEMENTED) {
      ++r.cases_not_supported;
      if (p.not_supported_reason.empty()) p.not_supported_reason = cid + ": " + why;
      return false;
    }
  } else {
    st = pk_launch(stream->handle, p.op.id, b.ins.data(), static_cast<uint32_t>(b.ins.size()), b.outs.data(),
                   static_cast<uint32_t>(b.outs.size()), attrs);
  }
  if (st == PK_OK) st = pk_stream_synchronize(stream->handle);
  if (st == PK_ERROR_FALLBACK_FORBIDDEN || st == PK_UNIMPLEMENTED) {
    std::string msg = last_error();
    if (r.primitive && st == PK_UNIMPLEMENTED) {
      // The query said yes and the launch said no: the backend contradicts itself.
      ++r.cases_failed;
      if (r.message.empty()) r.message = cid + ": the capability query accepts the launch, op_launch declines: " + msg;
    } else {
      ++r.cases_not_supported;
      if (p.not_supported_reason.empty()) p.not_supported_reason = cid + ": " + msg;
    }
    stream = std::make_unique<Stream>(p.device);
    return false;
  }
  if (st != PK_OK) {
    ++r.cases_failed;
    if (r.message.empty()) r.message = cid + ": launch failed: " + pk_status_name(st) + ": " + last_error();
    if (r.worst_case.empty()) {
      r.worst_case = cid;
      r.worst_inputs = detail::describe_inputs(c);
    }
    stream = std::make_unique<Stream>(p.device);
    return false;
  }
  return true;
}

// Copies the outputs' whole storage (guard regions included) back into raw, and the inputs back to compare them
// with what was uploaded.
pk_status read_back(pk_stream_t stream, const Case &c, const CaseBuffers &b, std::vector<std::vector<uint8_t>> &raw,
                    bool &input_modified) {
  pk_status st = PK_OK;
  for (size_t o = 0; o < raw.size() && st == PK_OK; ++o) {
    raw[o].resize(b.views[o].storage.size());
    st = pk_copy_buffer_to_host(stream, raw[o].data(), b.out_bufs[o].handle, 0, raw[o].size());
  }
  // Inputs must come back unchanged (a kernel writing into an input is a bug the outputs may not show).
  input_modified = false;
  for (size_t i = 0; i < c.inputs.size() && st == PK_OK; ++i) {
    const HostTensor &t = c.inputs[i];
    std::vector<uint8_t> back(t.storage.size());
    if (!back.empty()) st = pk_copy_buffer_to_host(stream, back.data(), b.in_bufs[i].handle, 0, back.size());
    if (st == PK_OK) st = pk_stream_synchronize(stream);
    if (st == PK_OK && back != t.storage) input_modified = true;
  }
  if (st == PK_OK) st = pk_stream_synchronize(stream);
  return st;
}

// Compares each output with its reference (or the alternative one) under the op's check, into p.r's histogram,
// worst element and message. True if an output has failed elements.
bool compare_outputs(PairRun &p, const Case &c, const std::vector<oracle::OutputValue> &expected,
                     const std::vector<std::vector<uint8_t>> &actual,
                     const std::vector<oracle::OutputValue> &alternative, bool have_alternative, const void *attrs,
                     const std::string &cid) {
  PairResult &r = p.r;
  const OpInfo &op = p.op;
  bool case_failed = false;
  for (size_t o = 0; o < expected.size(); ++o) {
    detail::Tolerance tol;
    tol.check = classify(op, expected[o].dtype);
    tol.float_policy = p.props.float_policy;
    tol.complex_zero_sign_free = op.grading.complex_zero_sign_free && meta::is_complex(expected[o].dtype);
    if (r.check.empty() || o == 0) {
      r.check = check_name(tol.check.check);
      if (tol.check.fail_limit > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " %g", tol.check.fail_limit);
        r.check += buf;
      }
    }
    if (tol.check.check == Check::composite_bound) {
      tol.sensitivity = detail::composite_sensitivity(op, c.inputs, attrs, o, expected[o]);
      tol.absolute = detail::composite_absolute(op, c.inputs, expected[o]);
    }
    if (tol.check.check == Check::reduction) {
      tol.reduction_length = reduction_length(op, c, expected[0]);
      tol.magnitude = magnitudes(op, c, expected[o], o, tol.reduction_length);
      tol.nonfinite_terms_any =
          op.grading.nonfinite == meta::NonfiniteTerms::any ||
          (op.grading.nonfinite == meta::NonfiniteTerms::any_complex && meta::is_complex(expected[o].dtype));
      if (op.grading.overflow_scale) {
        std::vector<oracle::OutputValue> outs;
        if (oracle::evaluate(op.id, detail::magnitude_inputs(c.inputs, true), attrs, outs).ok() && o < outs.size())
          for (const oracle::Wide &w : outs[o].wide) tol.overflow_scale.push_back(std::fabs(w.re) + std::fabs(w.im));
      }
    }
    detail::OutputComparison cmp = detail::compare_output(
        expected[o], actual[o], tol, have_alternative && o < alternative.size() ? &alternative[o] : nullptr);
    for (int b = 0; b < 5; ++b) r.histogram.bucket[b] += cmp.histogram.bucket[b];
    p.quality = p.quality || cmp.quality_warning;
    r.max_ulp = std::max(r.max_ulp, cmp.max_ulp);
    const bool worse = cmp.worst_index >= 0 && (cmp.worst_ratio > r.worst_ratio || r.worst_index < 0) &&
                       (cmp.failed_elements > 0 || r.cases_failed == 0);
    if (worse) {
      r.worst_ratio = cmp.worst_ratio;
      r.worst_case = cid;
      r.worst_inputs = detail::describe_inputs(c);
      r.worst_index = cmp.worst_index;
      r.worst_detail = worst_text(c, expected[o], actual[o], o, cmp.worst_index);
    }
    if (cmp.failed_elements > 0) {
      case_failed = true;
      if (r.message.empty() || r.message.find("elements differ") != std::string::npos) {
        if (worse || r.message.empty())
          r.message = cid + ": " + std::to_string(cmp.failed_elements) + " of " + std::to_string(expected[o].numel()) +
                      " elements differ (" + c.note + ")";
      }
    }
  }
  return case_failed;
}

// One case of a pair: its reference, the launch on the backend and the comparison, counted into p.r.
void run_case(PairRun &p, const Case &c) {
  PairResult &r = p.r;
  const OpInfo &op = p.op;
  std::unique_ptr<Stream> &stream = p.stream;
  const std::string cid = (p.fused ? "fused:" : "") + c.id;  // what --case takes to re-run it
  if (p.on_case) p.on_case(cid);
  const void *attrs = c.attrs.empty() ? nullptr : c.attrs.data();
  std::vector<oracle::OutputValue> expected;
  oracle::Result ev = oracle::evaluate(op.id, c.inputs, attrs, expected);
  if (!ev.ok()) {
    ++r.cases_no_reference;
    if (p.no_reference_reason.empty()) p.no_reference_reason = ev.message;
    return;
  }
  if (p.on_backend) p.on_backend(true);
  CaseBuffers b(c.inputs.size(), expected.size());
  pk_status st = upload_inputs(p.device, stream->handle, c, b);
  // The uploads read b.views[o].storage when the stream gets to them (OpenCL copies asynchronously): every way out
  // of this case waits for the stream before the views' memory goes. Found under ASan: a case the capability
  // query declined left the loop with its upload still queued, and PoCL read the freed vector.
  struct SyncOnExit {
    std::unique_ptr<Stream> &stream;
    ~SyncOnExit() {
      if (stream) pk_stream_synchronize(stream->handle);
    }
  } sync_on_exit{stream};
  if (st == PK_OK) st = upload_outputs(p.device, stream->handle, c, expected, b);
  if (st != PK_OK) {
    ++r.cases_failed;
    if (r.message.empty()) r.message = cid + ": setting up buffers failed: " + last_error();
    stream = std::make_unique<Stream>(p.device);
    return;
  }
  if (r.primitive && query_declines(p, b, attrs, cid)) return;
  if (!launch_case(p, c, b, attrs, cid)) return;
  std::vector<std::vector<uint8_t>> actual(expected.size()), raw(expected.size());
  bool input_modified = false;
  st = read_back(stream->handle, c, b, raw, input_modified);
  if (st != PK_OK) {
    ++r.cases_failed;
    if (r.message.empty()) r.message = cid + ": copying results back failed: " + last_error();
    stream = std::make_unique<Stream>(p.device);
    return;
  }
  if (p.on_backend) p.on_backend(false);
  ++r.cases_run;
  for (const oracle::OutputValue &e : expected) p.cases_with_elements += e.numel() > 0 ? 1 : 0;
  if (input_modified) {
    ++r.cases_failed;
    if (r.message.empty()) r.message = cid + ": the backend wrote into an input tensor";
    if (r.worst_case.empty()) {
      r.worst_case = cid;
      r.worst_inputs = detail::describe_inputs(c);
    }
  }
  bool wrote_outside = false;
  for (size_t o = 0; o < expected.size(); ++o) {
    const std::string outside = detail::gather_output(b.views[o], raw[o], actual[o]);
    if (outside.empty()) continue;
    wrote_outside = true;
    if (r.message.empty() || r.message.find("elements differ") != std::string::npos)
      r.message =
          cid + ": output " + std::to_string(o) + " (" + detail::output_layout_name(c.output_layout) + "): " + outside;
    if (r.worst_case.empty()) r.worst_case = cid;
  }
  // Devices that read subnormal inputs as zero get a second reference computed on flushed inputs; composites
  // get the program with rounded intermediates.
  std::vector<oracle::OutputValue> alternative;
  bool have_alternative = false;
  if (op.tier == meta::Tier::composite) {
    have_alternative = rounded_chain(op, c, alternative) && alternative.size() == expected.size();
  } else if (p.props.float_policy & PK_FLOAT_FLUSH_SUBNORMAL_INPUTS) {
    std::vector<HostTensor> in2 = c.inputs;
    if (flush_subnormal_inputs(in2)) have_alternative = oracle::evaluate(op.id, in2, attrs, alternative).ok();
  }
  const bool case_failed = compare_outputs(p, c, expected, actual, alternative, have_alternative, attrs, cid);
  if (case_failed || wrote_outside) ++r.cases_failed;
}

// The pair's status and message from its counts.
void finish_pair(PairRun &p) {
  PairResult &r = p.r;
  if (r.cases_failed > 0) {
    r.status = Status::fail;
  } else if (r.cases_run == 0 || (p.cases_with_elements == 0 && r.cases_not_supported > 0)) {
    // Only empty results ran (a composite's decomposition needs no launch for them) while the backend declined
    // every case with elements: not supported, not a pass.
    if (r.cases_not_supported > 0) {
      r.status = Status::not_supported;
      r.message = p.not_supported_reason;
    } else {
      r.status = Status::no_reference;
      r.message =
          r.cases == 0 ? "no valid case could be generated" : "the oracle cannot evaluate it: " + p.no_reference_reason;
    }
  } else {
    r.status = p.quality ? Status::quality_warning : Status::pass;
    if (r.cases_not_supported > 0)
      r.message = std::to_string(r.cases_not_supported) + " cases declined: " + p.not_supported_reason;
    // Cases the oracle cannot evaluate were checked by nothing: a pair that passes the rest says so, at the quality
    // level, instead of passing as if they had run (igamma near a = x in the millions: its series needs about
    // sqrt(a) terms).
    if (r.cases_no_reference > 0) {
      r.status = Status::quality_warning;
      if (!r.message.empty()) r.message += "; ";
      r.message += std::to_string(r.cases_no_reference) + " of " + std::to_string(r.cases) +
                   " cases have no reference (the oracle cannot evaluate them): " + p.no_reference_reason;
    }
  }
}

}  // namespace

PairResult check_pair(pk_device_t device, const OpInfo &op, int32_t dtype, Profile profile, uint64_t seed,
                      const std::string &only_case, const std::function<void(const std::string &)> &on_case,
                      const std::function<void(bool)> &on_backend, bool fused) {
  const double start = now_s();
  PairResult r;
  r.op = fused ? std::string("fused:") + op.name : std::string(op.name);
  r.dtype = meta::dtype_name(dtype);
  r.primitive = !fused && op.tier == meta::Tier::primitive;
  pk_device_props props;
  PK_STRUCT_INIT(props);
  pk_device_get_props(device, &props);

  std::vector<Case> cases = generate_cases(op, dtype, profile, seed);
  if (!only_case.empty()) {
    cases.erase(std::remove_if(cases.begin(), cases.end(), [&](const Case &c) { return c.id != only_case; }),
                cases.end());
  }
  r.cases = static_cast<uint32_t>(cases.size());
  PairRun p{device, op, fused, on_case, on_backend, props, r};
  p.stream = std::make_unique<Stream>(device);

  for (const Case &c : cases) run_case(p, c);

  finish_pair(p);
  r.seconds = now_s() - start;
  return r;
}

PairResult check_pair(pk_device_t device, const std::string &op_name, const std::string &dtype_name, Profile profile,
                      uint64_t seed) {
  const OpInfo *op = meta::find_op(op_name);
  const int32_t dtype = meta::dtype_id(dtype_name);
  if (op == nullptr || dtype < 0) {
    PairResult r;
    r.op = op_name;
    r.dtype = dtype_name;
    r.status = Status::no_reference;
    r.message = op == nullptr ? "no op named " + op_name : "no dtype named " + dtype_name;
    return r;
  }
  return check_pair(device, *op, dtype, profile, seed);
}

// --- children --------------------------------------------------------------------------------------------------------

namespace {

void probe_in(const Options &opt, const std::vector<Pair> &pairs, ProbeInfo &p) {
  Session s(opt.backend, opt.device_index);
  if (!s.error.empty()) {
    p.error = s.error;
    return;
  }
  pk_backend_info info;
  PK_STRUCT_INIT(info);
  pk_backend_get_info(s.backend, &info);
  p.name = info.name;
  p.vendor = info.vendor;
  p.version = std::to_string(info.version_major) + "." + std::to_string(info.version_minor) + "." +
              std::to_string(info.version_patch);
  p.abi = pk_backend_abi_version(s.backend);
  p.path = pk_backend_path(s.backend);
  if (!s.no_devices.empty()) {
    p.no_devices = s.no_devices;
    return;
  }
  pk_device_props props;
  PK_STRUCT_INIT(props);
  pk_device_get_props(s.device, &props);
  p.device = props.name;
  p.float_policy = props.float_policy;
  for (const Pair &pr : pairs) {
    std::string reason;
    bool ok = pr.fused || query_support(s.device, *pr.op, pr.dtype, &reason);
    p.coverage.emplace_back(ok, reason);
  }
}

// Reads everything a child writes until EOF, with no progress timeout: used for the probe.
std::string read_all(int fd, pid_t pid, double timeout_s, bool &timed_out) {
  std::string data;
  char buf[65536];
  double deadline = now_s() + timeout_s;
  timed_out = false;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int left = static_cast<int>(std::max(0.0, (deadline - now_s()) * 1000));
    int pr = ::poll(&p, 1, left);
    if (pr == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (pr < 0) {
      if (errno == EINTR) continue;
      break;
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

// The work of one child: pairs of a group, in order.
[[noreturn]] void child_main(const Options &opt, const std::vector<Pair> &pairs, int fd) {
  {
    Session s(opt.backend, opt.device_index);
    if (!s.error.empty() || s.device == nullptr) {
      write_line(fd, "X\t" + escape(s.error.empty() ? "no device: " + s.no_devices : s.error));
      ::_exit(3);
    }
    for (const Pair &p : pairs) {
      write_line(fd, "B\t" + p.name() + '\t' + meta::dtype_name(p.dtype));
      PairResult r = check_pair(
          s.device, *p.op, p.dtype, opt.profile, opt.seed, opt.case_id,
          [&](const std::string &id) { write_line(fd, "C\t" + escape(id)); },
          [&](bool backend) { write_line(fd, backend ? "L\t" : "K\t"); }, p.fused);
      write_line(fd, "R\t" + encode(r));
    }
  }
  ::_exit(0);
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::vector<Pair> pairs;
  size_t next = 0;  // pairs[next] is the one in progress (or next to start)
  bool in_pair = false;
  bool in_oracle = false;  // the current case is still being evaluated by the oracle (not the backend)
  std::string current_case;
  std::string buffer;
  double last_progress = 0;  // when the current case (or pair) started
  bool killed_for_timeout = false;
};
}  // namespace

Summary Report::summary() const {
  Summary s;
  for (const PairResult &r : results) {
    ++s.total;
    switch (r.status) {
      case Status::pass:
        ++s.pass;
        break;
      case Status::quality_warning:
        ++s.quality_warning;
        break;
      case Status::fail:
        ++s.fail;
        break;
      case Status::not_supported:
        ++s.not_supported;
        if (r.primitive) ++s.primitive_not_supported;
        break;
      case Status::crash:
        ++s.crash;
        break;
      case Status::timeout:
        ++s.timeout;
        break;
      case Status::expected_fail:
        ++s.expected_fail;
        break;
      case Status::unexpected_pass:
        ++s.unexpected_pass;
        break;
      case Status::no_reference:
        ++s.no_reference;
        break;
    }
  }
  return s;
}

int exit_code(const Report &report) {
  Summary s = report.summary();
  return s.fail + s.crash + s.timeout + s.unexpected_pass + s.no_reference == 0 ? 0 : 1;
}

bool fully_conformant(const Report &report) {
  return report.narrowed_by.empty() && report.summary().primitive_not_supported == 0 && exit_code(report) == 0;
}

std::map<std::pair<std::string, std::string>, std::string> parse_expected_failures(const std::string &text) {
  std::map<std::pair<std::string, std::string>, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    if (hash == 0) continue;
    std::istringstream ls(line);
    std::string op, dtype, reason;
    if (!(ls >> op >> dtype)) continue;
    std::getline(ls, reason);
    size_t b = reason.find_first_not_of(" \t");
    reason = b == std::string::npos ? "" : reason.substr(b);
    out[{op, dtype}] = reason.empty() ? "(no reason given)" : reason;
  }
  return out;
}

void apply_expected_failures(Report &report,
                             const std::map<std::pair<std::string, std::string>, std::string> &expected) {
  for (PairResult &r : report.results) {
    auto it = expected.find({r.op, r.dtype});
    if (it == expected.end()) it = expected.find({r.op, "*"});
    if (it == expected.end()) continue;
    r.expected_reason = it->second;
    if (r.status == Status::fail || r.status == Status::crash || r.status == Status::timeout ||
        r.status == Status::quality_warning || r.status == Status::no_reference) {
      r.message = "expected: " + it->second + (r.message.empty() ? "" : " — " + r.message);
      r.status = Status::expected_fail;
    } else if (r.status == Status::pass) {
      r.status = Status::unexpected_pass;
      r.message = "listed as an expected failure (" + it->second + ") but passes: remove it from the list";
    }
  }
}

namespace {

// Probe: load the backend once, in a child unless isolation is off.
ProbeInfo probe_backend(const Options &opt, const std::vector<Pair> &pairs) {
  ProbeInfo probe;
  if (!opt.isolate) {
    probe_in(opt, pairs, probe);
  } else {
    int fds[2];
    if (::pipe(fds) != 0) throw SetupError("pipe() failed");
    pid_t pid = ::fork();
    if (pid < 0) throw SetupError("fork() failed");
    if (pid == 0) {
      ::close(fds[0]);
      ProbeInfo p;
      probe_in(opt, pairs, p);
      write_line(fds[1], encode_probe(p));
      ::_exit(0);
    }
    ::close(fds[1]);
    bool timed_out = false;
    std::string data = read_all(fds[0], pid, std::max(60.0, opt.timeout_s), timed_out);
    ::close(fds[0]);
    int ws = 0;
    ::waitpid(pid, &ws, 0);
    if (timed_out) throw SetupError("loading the backend hangs (no answer within the timeout)");
    if (data.empty()) throw SetupError("loading the backend crashed the process: " + describe_exit(ws));
    if (!data.empty() && data.back() == '\n') data.pop_back();
    try {
      decode_probe(data, probe);
    } catch (const std::exception &) {
      throw SetupError("the probe child sent a malformed answer");
    }
  }
  return probe;
}

// The groups of pairs a child runs (up to opt.ops_per_group ops each, in order). A pair the probe's capability
// query declined is finished here as NOT_SUPPORTED.
std::vector<std::vector<size_t>> group_pairs(const Options &opt, const std::vector<Pair> &pairs, const ProbeInfo &probe,
                                             std::vector<PairResult> &results, std::vector<bool> &done,
                                             const std::function<void(const PairResult &)> &progress) {
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> current;
  const OpInfo *last_op = nullptr;
  int ops_in_group = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair &p = pairs[i];
    bool covered = i < probe.coverage.size() ? probe.coverage[i].first : true;
    if (!covered && !p.fused && p.op->tier == meta::Tier::primitive) {
      PairResult &r = results[i];
      r.op = p.name();
      r.dtype = meta::dtype_name(p.dtype);
      r.primitive = true;
      r.status = Status::not_supported;
      r.message = probe.coverage[i].second;
      done[i] = true;
      progress(r);
      continue;
    }
    if (p.op != last_op) {
      if (ops_in_group >= std::max(1, opt.ops_per_group) && !current.empty()) {
        groups.push_back(current);
        current.clear();
        ops_in_group = 0;
      }
      ++ops_in_group;
      last_op = p.op;
    }
    current.push_back(i);
  }
  if (!current.empty()) groups.push_back(current);
  return groups;
}

// Isolation off: every pair in this process.
void run_in_process(const Options &opt, const std::vector<Pair> &pairs, const std::vector<std::vector<size_t>> &groups,
                    std::vector<PairResult> &results, const std::function<void(const PairResult &)> &progress) {
  Session s(opt.backend, opt.device_index);
  if (s.device == nullptr) throw SetupError(s.error.empty() ? "no devices: " + s.no_devices : s.error);
  for (const auto &g : groups)
    for (size_t i : g) {
      results[i] = check_pair(s.device, *pairs[i].op, pairs[i].dtype, opt.profile, opt.seed, opt.case_id, nullptr,
                              nullptr, pairs[i].fused);
      progress(results[i]);
    }
}

// Isolation on: each group in a forked child (opt.jobs at a time) that streams its progress back (see the file
// comment). A child that dies or hangs ends the pair it was in; the ops of its group that had not started are
// queued again, one op per child.
class ChildRunner {
 public:
  ChildRunner(const Options &opt, const std::vector<Pair> &pairs, const std::vector<std::vector<size_t>> &groups,
              std::vector<PairResult> &results, std::vector<bool> &done,
              const std::function<void(const PairResult &)> &progress)
      : opt_(opt),
        pairs_(pairs),
        results_(results),
        done_(done),
        progress_(progress),
        queue_(groups.begin(), groups.end()),
        jobs_(std::max(1, opt.jobs)) {}

  void run() {
    while (!queue_.empty() || !running_.empty()) {
      while (static_cast<int>(running_.size()) < jobs_ && !queue_.empty()) {
        std::vector<size_t> g = queue_.front();
        queue_.pop_front();
        start_child(g);
      }
      std::vector<pollfd> pfds;
      for (const Child &ch : running_) pfds.push_back({ch.fd, POLLIN, 0});
      int pr = ::poll(pfds.data(), pfds.size(), 200);
      if (pr < 0 && errno != EINTR) throw SetupError("poll() failed");
      const double t = now_s();
      for (size_t k = 0; k < running_.size(); ++k) {
        Child &ch = running_[k];
        bool eof = false;
        if (pr > 0 && (pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) eof = read_child(ch);
        take_lines(ch, t);
        if (!eof && t - ch.last_progress > opt_.timeout_s) {
          ::kill(ch.pid, SIGKILL);
          ch.killed_for_timeout = true;
          eof = true;
        }
        if (!eof) continue;
        end_child(ch);
        running_.erase(running_.begin() + static_cast<long>(k));
        pfds.erase(pfds.begin() + static_cast<long>(k));
        --k;
      }
    }
  }

 private:
  // Forks a child for group g.
  void start_child(const std::vector<size_t> &g) {
    std::vector<Pair> ps;
    for (size_t i : g) ps.push_back(pairs_[i]);
    int fds[2];
    if (::pipe(fds) != 0) throw SetupError("pipe() failed");
    pid_t pid = ::fork();
    if (pid < 0) throw SetupError("fork() failed");
    if (pid == 0) {
      ::close(fds[0]);
      for (const Child &other : running_) ::close(other.fd);
      child_main(opt_, ps, fds[1]);
    }
    ::close(fds[1]);
    Child ch;
    ch.pid = pid;
    ch.fd = fds[0];
    ch.last_progress = now_s();
    for (size_t i : g) ch.pairs.push_back({pairs_[i].op, static_cast<int32_t>(i), pairs_[i].fused});  // dtype: index
    running_.push_back(std::move(ch));
  }

  // Reads what the child wrote so far; true at its end (EOF or a failed read).
  static bool read_child(Child &ch) {
    char buf[65536];
    ssize_t n = ::read(ch.fd, buf, sizeof buf);
    if (n > 0) {
      ch.buffer.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return true;
    }
    return false;
  }

  // Takes the child's complete lines: pairs and cases starting, results, a setup error.
  void take_lines(Child &ch, double t) {
    size_t nl;
    while ((nl = ch.buffer.find('\n')) != std::string::npos) {
      std::string line = ch.buffer.substr(0, nl);
      ch.buffer.erase(0, nl + 1);
      if (line.size() < 2) continue;
      // The clock restarts only where a pair or a case starts (B, C, R), so the timeout bounds a whole
      // case: its reference, its launch and its comparison together, the oracle's time included.
      if (line[0] == 'B' || line[0] == 'C' || line[0] == 'R') ch.last_progress = t;
      if (line[0] == 'B') {
        ch.in_pair = true;
        ch.current_case.clear();
      } else if (line[0] == 'C') {
        ch.current_case = unescape(line.substr(2));
        ch.in_oracle = true;
      } else if (line[0] == 'L' || line[0] == 'K') {
        ch.in_oracle = line[0] == 'K';
      } else if (line[0] == 'R' && ch.next < ch.pairs.size()) {
        size_t idx = static_cast<size_t>(ch.pairs[ch.next].dtype);
        PairResult r;
        if (decode(line.substr(2), r)) {
          results_[idx] = r;
        } else {
          results_[idx].op = pairs_[idx].name();
          results_[idx].dtype = meta::dtype_name(pairs_[idx].dtype);
          results_[idx].status = Status::crash;
          results_[idx].message = "the child sent a malformed result";
        }
        done_[idx] = true;
        progress_(results_[idx]);
        ++ch.next;
        ch.in_pair = false;
        ch.current_case.clear();
      } else if (line[0] == 'X') {
        ch.current_case = "";
        ch.buffer = "X" + unescape(line.substr(2));  // keep the child's setup error for the report
        break;
      }
    }
  }

  // Reaps a child that ended or was killed. If a pair was still in progress, it is a CRASH or TIMEOUT (or, when
  // the oracle was the one running, NO_REFERENCE) and the pairs after it go back to the queue.
  void end_child(Child &ch) {
    int ws = 0;
    ::waitpid(ch.pid, &ws, 0);
    ::close(ch.fd);
    if (ch.next < ch.pairs.size()) {
      const size_t idx = static_cast<size_t>(ch.pairs[ch.next].dtype);
      std::string why;
      Status st = Status::crash;
      if (ch.killed_for_timeout) {
        st = Status::timeout;
        char buf[96];
        std::snprintf(buf, sizeof buf, "still running after %.0f s (killed)", opt_.timeout_s);
        why = buf;
      } else if (!ch.buffer.empty() && ch.buffer[0] == 'X') {
        why = "the child could not set up the backend: " + ch.buffer.substr(1);
      } else {
        why = "the child " + describe_exit(ws);
      }
      if (ch.in_oracle && ch.killed_for_timeout) {
        // The case's time limit covers the oracle too: a reference that does not finish is a TIMEOUT of the
        // case like any other (a problem of the run), said to be the oracle's so nobody blames the backend.
        why = "the ORACLE (not the backend) was " + why;
      } else if (ch.in_oracle) {
        // The reference itself crashed: nothing of the backend was measured.
        st = Status::no_reference;
        why = "the ORACLE (not the backend) crashed: " + why;
      }
      abort_pair(ch, idx, st, why);
      // The pairs that had not started: one op per child from now on.
      std::vector<size_t> rest;
      const OpInfo *op = nullptr;
      for (size_t j = ch.next + 1; j < ch.pairs.size(); ++j) {
        size_t i = static_cast<size_t>(ch.pairs[j].dtype);
        if (op != nullptr && pairs_[i].op != op) {
          queue_.push_front(rest);
          rest.clear();
        }
        op = pairs_[i].op;
        rest.push_back(i);
      }
      if (!rest.empty()) queue_.push_front(rest);
    }
  }

  // The inputs of a case that crashed or hung, regenerated here (a case depends only on profile, seed and id)
  // since the child died before it could say.
  std::string inputs_of_case(const Pair &p, const std::string &cid) const {
    const std::string id = cid.compare(0, 6, "fused:") == 0 ? cid.substr(6) : cid;
    if (id.empty()) return "";
    for (const Case &c : generate_cases(*p.op, p.dtype, opt_.profile, opt_.seed))
      if (c.id == id) return detail::describe_inputs(c);
    return "";
  }

  // A pair ended by its child dying or hanging.
  void abort_pair(Child &ch, size_t idx, Status st, const std::string &why) {
    PairResult &r = results_[idx];
    r.op = pairs_[idx].name();
    r.dtype = meta::dtype_name(pairs_[idx].dtype);
    r.primitive = !pairs_[idx].fused && pairs_[idx].op->tier == meta::Tier::primitive;
    r.status = st;
    r.worst_case = ch.current_case;
    r.message = why + (ch.current_case.empty() ? "" : " in case " + ch.current_case);
    r.worst_inputs = inputs_of_case(pairs_[idx], ch.current_case);
    done_[idx] = true;
    progress_(r);
  }

  const Options &opt_;
  const std::vector<Pair> &pairs_;
  std::vector<PairResult> &results_;
  std::vector<bool> &done_;
  const std::function<void(const PairResult &)> &progress_;
  std::deque<std::vector<size_t>> queue_;
  std::vector<Child> running_;
  const int jobs_;
};

}  // namespace

namespace {

void apply_expected_failures_file(const Options &opt, Report &report) {
  if (opt.expected_failures_file.empty()) return;
  std::ifstream in(opt.expected_failures_file);
  if (!in) throw SetupError("cannot read " + opt.expected_failures_file);
  std::stringstream ss;
  ss << in.rdbuf();
  apply_expected_failures(report, parse_expected_failures(ss.str()));
}

}  // namespace

Report run(const Options &options) {
  const double start = now_s();
  // Which pairs (and, for --case, which case): errors here name what matched nothing.
  detail::Selection selection = detail::select_pairs(options);
  Options stripped = options;
  stripped.case_id = selection.case_id;
  const Options &opt = stripped;
  const std::vector<Pair> &pairs = selection.pairs;
  Report report;
  report.profile = opt.profile == Profile::full ? "full" : "quick";
  report.seed = opt.seed;
  report.timeout_s = opt.timeout_s;
  report.narrowed_by = selection.narrowed_by;

  const ProbeInfo probe = probe_backend(opt, pairs);
  if (!probe.error.empty()) throw SetupError(probe.error);
  if (!probe.no_devices.empty()) throw SetupError("no devices: " + probe.no_devices);
  report.backend = probe.name;
  report.backend_argument = opt.backend;
  report.vendor = probe.vendor;
  report.backend_version = probe.version;
  report.backend_path = probe.path;
  report.abi_version = probe.abi;
  report.device = probe.device;
  report.float_policy = probe.float_policy;

  // Pairs the capability query declines are NOT_SUPPORTED without running (composites excepted: the runtime
  // decomposes them into the backend's primitives).
  std::vector<PairResult> results(pairs.size());
  std::vector<bool> done(pairs.size(), false);
  size_t completed = 0;
  const size_t total = pairs.size() + selection.stages.size() + selection.collective_rows.size();
  const std::function<void(const PairResult &)> progress = [&](const PairResult &r) {
    ++completed;
    if (!opt.progress) return;
    std::string line = "[" + std::to_string(completed) + "/" + std::to_string(total) + "] " + r.op + " " + r.dtype +
                       " " + status_name(r.status);
    if (r.status == Status::fail || r.status == Status::quality_warning || r.status == Status::crash ||
        r.status == Status::timeout || r.status == Status::no_reference) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " (max %.3g ulp)", r.max_ulp);
      if (r.status == Status::fail || r.status == Status::quality_warning) line += buf;
      if (!r.message.empty()) line += ": " + r.message;
      if (!r.worst_case.empty()) line += "\n    reproduce: " + reproducer(report, r.worst_case);
    }
    opt.progress(line);
  };
  if (opt.collectives) {
    // Every rank runs the stage in its own process; the rows come back combined across the ranks.
    detail::CollectivesOutcome outcome;
    report.results = detail::run_collectives_stage(opt, selection.collective_rows, &outcome, progress);
    report.rank = outcome.rank;
    report.nranks = outcome.nranks;
    report.collectives_note = outcome.note;
    report.end_without_finalize = outcome.end_without_finalize;
    apply_expected_failures_file(opt, report);
    report.seconds = now_s() - start;
    return report;
  }
  const std::vector<std::vector<size_t>> groups = group_pairs(opt, pairs, probe, results, done, progress);

  if (!opt.isolate) {
    run_in_process(opt, pairs, groups, results, progress);
  } else {
    ChildRunner(opt, pairs, groups, results, done, progress).run();
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    // How the pair ran, in the words `primkit info` uses for it.
    const bool accepted = i < probe.coverage.size() ? probe.coverage[i].first : true;
    if (pairs[i].fused)
      results[i].implementation = "fusion";
    else if (accepted)
      results[i].implementation = "native";
    else if (pairs[i].op->tier == meta::Tier::composite)
      results[i].implementation = "decomposition";
  }
  report.results = std::move(results);
  // The streams stage, once per run after the pairs (its rows follow them in the report).
  if (!selection.stages.empty()) {
    for (PairResult &r : detail::run_stream_stages(opt, selection.stages, progress))
      report.results.push_back(std::move(r));
  }
  apply_expected_failures_file(opt, report);
  report.seconds = now_s() - start;
  return report;
}

}  // namespace pk::conformance
