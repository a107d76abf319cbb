// fuzz_graph — graph build + compile + run through the public ABI, fused and not, on the cpu backend (its LLVM
// fusion) and cuda-emu (the generated kernels' IR on the host) when the input asks. The input declares graph
// inputs (dtype, shape), then nodes (op, which values feed it, attribute edits), marks outputs, compiles with or
// without fusion and runs on real buffers with guard bytes around every output; optionally it then runs again
// with one tensor that disagrees with the graph (shape, dtype, storage, count), which must be refused.
#include "launch_builder.hpp"

namespace {

const int32_t kDtypes[] = {PK_DTYPE_F32, PK_DTYPE_F32, PK_DTYPE_F16,  PK_DTYPE_BF16, PK_DTYPE_F64,
                           PK_DTYPE_I32, PK_DTYPE_I64, PK_DTYPE_BOOL, PK_DTYPE_U8,   PK_DTYPE_C64};

struct Buf {
  pk_buffer_t b = nullptr;
  size_t payload = 0;
  std::vector<int64_t> shape;
  pk_tensor t{};
  ~Buf() { pk_buffer_destroy(b); }
};

uint16_t op_position(const char *name) {
  const pk::meta::OpInfo *op = pk::meta::find_op(name);
  if (!op) pkfuzz::die("seed names an unknown op", name);
  return static_cast<uint16_t>(op - pk::meta::ops_begin());
}

void write_seeds() {
  using pkfuzz::SeedWriter;
  struct Chain {
    const char *name;
    std::vector<const char *> ops;  // each node reads the previous value (and graph input 0 for binary ops)
    uint8_t dtype_sel, ndim;
  };
  const Chain chains[] = {
      {"add-exp-mul", {"add", "exp", "mul"}, 0, 2},
      {"neg-abs-sqrt", {"neg", "abs", "sqrt"}, 0, 1},
      {"add-sum", {"add", "sum"}, 0, 2},
      {"mul-add-tanh", {"mul", "add", "tanh"}, 4, 2},
      {"softmax", {"softmax"}, 0, 2},
      {"gelu-mul", {"gelu", "mul"}, 2, 2},
      {"sub-amax", {"sub", "amax"}, 0, 3},
      {"i32-add-mul", {"add", "mul", "bitwise_and"}, 5, 2},
      {"where-chain", {"lt", "logical_not"}, 0, 1},
      {"layer_norm", {"layer_norm"}, 0, 2},
      {"exp-log-sigmoid", {"exp", "log", "sigmoid"}, 3, 2},
      {"convert", {"abs", "floor", "ceil"}, 4, 1},
  };
  for (int emu = 0; emu < 2; ++emu) {
    for (int fuse = 0; fuse < 2; ++fuse) {
      for (const Chain &c : chains) {
        SeedWriter w;
        // opts: bit0 emu, bit1 no fusion, bits 3-4: graph inputs - 1 (2 inputs of one shape)
        w.u8(static_cast<uint8_t>(emu | (fuse << 1) | (1 << 3)));
        for (int i = 0; i < 2; ++i) {
          w.u8(c.dtype_sel).u8(c.ndim).u8(i == 0 ? 0 : 1);  // dtype, rank, same shape as input 0 (1)
          for (int d = 0; d < c.ndim; ++d) w.u8(static_cast<uint8_t>(2 + d));
        }
        w.u8(static_cast<uint8_t>(c.ops.size()));
        for (size_t k = 0; k < c.ops.size(); ++k) {
          w.u16(op_position(c.ops[k]));
          // operand sources: 0xF0 = the newest value, else value index
          w.u8(0xF0).u8(0).u8(1).u8(0);  // up to 3 operands; 0 attribute edits
        }
        w.u8(0);  // outputs: the last value only; no mismatched run
        std::string name = std::string(c.name) + (emu ? "-emu" : "-cpu") + (fuse ? "-nofuse" : "-fused");
        pkfuzz::write_seed(name, w.b);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  pkfuzz::world();
  if (pkfuzz::seed_dir()) {
    write_seeds();
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pkfuzz::Reader r(data, size);
  pkfuzz::World &w = pkfuzz::world();
  uint8_t opts = r.u8();
  bool emu = (opts & 1) && w.emu;
  pk_device_t dev = emu ? w.emu : w.cpu;
  pk_stream_t &stream = emu ? w.emu_stream : w.cpu_stream;

  pk_graph_t g = nullptr;
  if (pk_graph_create(&g) != PK_OK) pkfuzz::die("pk_graph_create");
  std::vector<uint32_t> values;  // every value id the graph returned, in order
  std::vector<uint32_t> graph_inputs;
  uint32_t n_in = 1 + ((opts >> 3) & 3);
  int64_t shape0[PK_MAX_RANK] = {0};
  int32_t ndim0 = 0;
  for (uint32_t i = 0; i < n_in; ++i) {
    pk_dtype dt = pk::meta::dtype_desc(kDtypes[r.u8() % (sizeof(kDtypes) / sizeof(kDtypes[0]))]);
    int32_t nd = r.u8() % 5;
    bool same = r.u8() & 1;
    int64_t shape[PK_MAX_RANK] = {0};
    for (int32_t d = 0; d < nd; ++d) {
      uint8_t v = r.u8();
      shape[d] = v == 0xff ? 0 : v == 0xfe ? static_cast<int64_t>(r.u64()) : 1 + v % 6;
    }
    if (same && i > 0) {
      nd = ndim0;
      std::copy(shape0, shape0 + PK_MAX_RANK, shape);
    }
    if (i == 0) {
      ndim0 = nd;
      std::copy(shape, shape + PK_MAX_RANK, shape0);
    }
    uint32_t v = 0;
    if (pk_graph_add_input(g, dt, nd, shape, &v) == PK_OK) {
      values.push_back(v);
      graph_inputs.push_back(v);
    }
  }
  uint32_t n_nodes = r.u8() % 13;
  for (uint32_t k = 0; k < n_nodes && !values.empty(); ++k) {
    const pk::meta::OpInfo &op = pkfuzz::op_at(r.u16());
    std::vector<uint32_t> ins;
    uint32_t want = op.num_inputs;
    for (uint32_t j = 0; j < 3; ++j) {
      uint8_t s = r.u8();
      if (j >= want && !(op.variadic() && s & 0x80)) continue;
      if ((s & 0x7f) == 0x70) {
        ins.push_back(values.back());
      } else if ((s & 0x7f) == 0x7f) {
        ins.push_back(r.u32());  // a value id the graph never made
      } else {
        ins.push_back(values[(s & 0x7f) % values.size()]);
      }
    }
    pkfuzz::Launch ex;
    std::vector<uint8_t> attrs(op.attrs_size);
    if (pkfuzz::example_launch(op, ex))
      attrs = ex.attrs;
    else if (op.attrs_size)
      pk::meta::default_attrs(op, attrs.data());
    uint8_t edits = r.u8() % 4;
    for (uint8_t e = 0; e < edits && !attrs.empty(); ++e) {
      size_t off = 4 + r.u16() % std::max<size_t>(1, attrs.size() - 4);
      if (off < attrs.size()) {
        int64_t v = r.edgy_i64();
        std::memcpy(attrs.data() + off, &v, std::min<size_t>(8, attrs.size() - off));
      }
    }
    std::vector<uint32_t> outv(op.num_outputs);
    if (pk_graph_add_node(g, op.id, ins.data(), static_cast<uint32_t>(ins.size()),
                          attrs.empty() ? nullptr : attrs.data(), outv.data(), op.num_outputs) == PK_OK) {
      for (uint32_t v : outv) values.push_back(v);
    }
  }
  uint8_t marks = r.u8();
  std::vector<uint32_t> outputs;
  if (!values.empty() && pk_graph_mark_output(g, values.back()) == PK_OK) outputs.push_back(values.back());
  for (int b = 0; b < 6; ++b) {
    if (marks & (1 << b) && values.size() > 1) {
      uint32_t v = values[r.u8() % values.size()];
      if (pk_graph_mark_output(g, v) == PK_OK) outputs.push_back(v);
    }
  }
  auto make = [&](uint32_t v, Buf &buf, bool output) -> bool {
    pk_dtype dt;
    int32_t nd = 0;
    int64_t shape[PK_MAX_RANK];
    if (pk_graph_value_info(g, v, &dt, &nd, shape) != PK_OK) return false;
    buf.shape.assign(shape, shape + nd);
    int64_t n = 1;
    for (int32_t d = 0; d < nd; ++d) n *= shape[d];
    if (n < 0 || n > (1 << 16)) return false;
    buf.payload = static_cast<size_t>(n) * (dt.bits / 8);
    if (pk_buffer_create(dev, buf.payload + 2 * pkfuzz::kGuard, &buf.b) != PK_OK) return false;
    std::vector<uint8_t> init(buf.payload + 2 * pkfuzz::kGuard, pkfuzz::kGuardByte);
    if (!output) {
      uint32_t x = 12345u + v;
      for (size_t i = pkfuzz::kGuard; i < pkfuzz::kGuard + buf.payload; ++i) {
        x = x * 1664525u + 1013904223u;
        init[i] = (dt.code == PK_DTYPE_CODE_BOOL) ? (x >> 31) : static_cast<uint8_t>(x >> 24);
      }
    }
    if (pk_copy_host_to_buffer(stream, buf.b, 0, init.data(), init.size()) != PK_OK) return false;
    pk_buffer_tensor(buf.b, dt, nd, buf.shape.data(), nullptr, pkfuzz::kGuard, &buf.t);
    return true;
  };

  // Values past 64 MiB are legal but only test the machine's memory (a fuzzed broadcast of a small input can ask
  // for terabytes, which the allocator under ASan reports instead of failing): such graphs are not run.
  uint32_t max_value = 0;
  for (uint32_t v : values) max_value = std::max(max_value, v);
  for (uint32_t v = 0; v <= max_value && !values.empty(); ++v) {
    pk_dtype dt;
    int32_t nd = 0;
    int64_t shape[PK_MAX_RANK];
    if (pk_graph_value_info(g, v, &dt, &nd, shape) != PK_OK) continue;
    double bytes = dt.bits / 8.0;
    for (int32_t d = 0; d < nd; ++d) bytes *= static_cast<double>(shape[d]);
    if (bytes > 64.0 * (1 << 20)) {
      pk_graph_destroy(g);
      return 0;
    }
  }
  pk_compile_options co;
  PK_STRUCT_INIT(co);
  co.disable_fusion = (opts >> 1) & 1;
  pk_executable_t exe = nullptr;
  pk_status st = pk_graph_compile(g, dev, &co, &exe);
  if (st == PK_OK) {
    std::vector<Buf> ib(graph_inputs.size()), ob(outputs.size());
    bool ok = true;
    for (size_t i = 0; i < ib.size() && ok; ++i) ok = make(graph_inputs[i], ib[i], false);
    for (size_t i = 0; i < ob.size() && ok; ++i) ok = make(outputs[i], ob[i], true);
    if (ok && pk_stream_synchronize(stream) == PK_OK) {
      std::vector<pk_tensor> it, ot;
      for (auto &b : ib) it.push_back(b.t);
      for (auto &b : ob) ot.push_back(b.t);
      uint8_t mis = (opts >> 5) & 7;  // 0..3: none; else one tensor disagrees with the graph
      int64_t bad_shape[PK_MAX_RANK] = {0};
      bool must_refuse = false;
      if (mis >= 4 && !(it.empty() && ot.empty())) {
        size_t k = r.u8() % (it.size() + ot.size());
        pk_tensor &t = k < it.size() ? it[k] : ot[k - it.size()];
        switch (mis) {
          case 4:  // one more element along the first axis (or rank 1 for a scalar)
            if (t.ndim > 0) {
              std::copy(t.shape, t.shape + t.ndim, bad_shape);
              bad_shape[0] += 1;
              t.shape = bad_shape;
              must_refuse = true;
            }
            break;
          case 5: {  // another dtype of the same width
            pk_dtype d = t.dtype;
            t.dtype = d.bits == 32 ? pk::meta::dtype_desc(d.code == PK_DTYPE_CODE_FLOAT ? PK_DTYPE_I32 : PK_DTYPE_F32)
                                   : pk::meta::dtype_desc(PK_DTYPE_F64);
            must_refuse = t.dtype.code != d.code || t.dtype.bits != d.bits;
            break;
          }
          case 6:
            t.storage_bytes = r.u8() % 16;
            break;  // may or may not still cover the view
          default:  // a missing tensor
            if (k < it.size())
              it.pop_back();
            else
              ot.pop_back();
            must_refuse = true;
            break;
        }
      }
      pk_status run = pk_executable_run(exe, stream, it.data(), static_cast<uint32_t>(it.size()), ot.data(),
                                        static_cast<uint32_t>(ot.size()));
      pk_status sync = pk_stream_synchronize(stream);
      if (must_refuse && run == PK_OK) pkfuzz::die("pk_executable_run accepted a tensor that disagrees with the graph");
      if (sync != PK_OK) pkfuzz::refresh_stream(dev, stream);
      // Guards around every output are intact, whatever the run did; a refused run wrote nothing at all.
      for (auto &b : ob) {
        std::vector<uint8_t> now(b.payload + 2 * pkfuzz::kGuard);
        if (pk_copy_buffer_to_host(stream, now.data(), b.b, 0, now.size()) != PK_OK ||
            pk_stream_synchronize(stream) != PK_OK) {
          pkfuzz::die("cannot read back an output buffer");
        }
        for (size_t i = 0; i < now.size(); ++i) {
          bool guard = i < pkfuzz::kGuard || i >= pkfuzz::kGuard + b.payload;
          if ((guard || run != PK_OK) && now[i] != pkfuzz::kGuardByte && !(mis == 6 && run == PK_OK)) {
            char msg[96];
            std::snprintf(msg, sizeof(msg), "byte %zu of %zu (payload %zu, run status %d)", i, now.size(), b.payload,
                          run);
            pkfuzz::die(guard ? "a graph run wrote into an output's guard bytes" : "a refused graph run wrote", msg);
          }
        }
      }
    }
    if (r.u8() & 1) {  // the same executable again (caches, memos)
      std::vector<Buf> ib2(graph_inputs.size()), ob2(outputs.size());
      bool ok2 = true;
      for (size_t i = 0; i < ib2.size() && ok2; ++i) ok2 = make(graph_inputs[i], ib2[i], false);
      for (size_t i = 0; i < ob2.size() && ok2; ++i) ok2 = make(outputs[i], ob2[i], true);
      if (ok2) {
        std::vector<pk_tensor> it, ot;
        for (auto &b : ib2) it.push_back(b.t);
        for (auto &b : ob2) ot.push_back(b.t);
        pk_executable_run(exe, stream, it.data(), static_cast<uint32_t>(it.size()), ot.data(),
                          static_cast<uint32_t>(ot.size()));
      }
      if (pk_stream_synchronize(stream) != PK_OK) pkfuzz::refresh_stream(dev, stream);
    }
    uint32_t fk = 0, fn = 0, sn = 0;
    pk_executable_stats(exe, &fk, &fn, &sn);
    pk_executable_destroy(exe);
  }
  pk_graph_destroy(g);
  return 0;
}
