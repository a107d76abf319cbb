// fuzz_attrs — attribute structs of every size: an op's valid example tensors with its attribute struct
// allocated at exactly N bytes (N from the input: 4 up to the struct's size plus 64, so older, newer, truncated
// and padded callers), filled by pk_op_init_attrs(op, buf, N) and then overwritten in places by the input, with a
// struct_size that is N or a smaller lie. Passed to pk_launch, pk_infer_outputs, the capability query and
// pk_graph_add_node: every call returns a status and reads nothing past N (ASan).
#include "launch_builder.hpp"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  pkfuzz::world();
  if (pkfuzz::seed_dir()) {
    // Per op with attributes: the exact size, one byte short, 8 longer (zero tail), and a truncated struct.
    uint32_t n = pk::meta::op_count();
    for (uint32_t i = 0; i < n; ++i) {
      const auto &op = pkfuzz::op_at(i);
      pkfuzz::Launch l;
      if (op.attrs_size == 0 || !pkfuzz::example_launch(op, l)) continue;
      uint32_t sizes[] = {static_cast<uint32_t>(op.attrs_size), static_cast<uint32_t>(op.attrs_size) - 1,
                          static_cast<uint32_t>(op.attrs_size) + 8, 8};
      for (uint32_t s : sizes) {
        pkfuzz::SeedWriter w;
        w.u16(static_cast<uint16_t>(i)).u16(static_cast<uint16_t>(s)).u8(0);
        pkfuzz::write_seed(std::string(op.name) + "-" + std::to_string(s), w.b);
      }
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pkfuzz::Reader r(data, size);
  const pk::meta::OpInfo &op = pkfuzz::op_at(r.u16());
  pkfuzz::Launch ex;
  if (!pkfuzz::example_launch(op, ex)) return 0;
  uint32_t n = std::max<uint32_t>(4, r.u16() % (static_cast<uint32_t>(op.attrs_size) + 65));
  std::unique_ptr<uint8_t[]> attrs(new uint8_t[n]);
  std::memset(attrs.get(), 0, n);
  pk_op_init_attrs(op.id, attrs.get(), n);
  // Start from the example's attribute values where they fit, then the input's edits.
  if (!ex.attrs.empty()) std::memcpy(attrs.get() + 4, ex.attrs.data() + 4, std::min<size_t>(n, ex.attrs.size()) - 4);
  uint32_t ss = std::min<uint32_t>(n, static_cast<uint32_t>(std::max<size_t>(op.attrs_size, 4)));
  std::memcpy(attrs.get(), &ss, 4);
  uint8_t opts = r.u8();
  if (opts & 4) std::memcpy(attrs.get(), &n, 4);  // a newer caller: struct_size past this build's struct
  if (opts & 1) {
    uint32_t lie = std::min<uint32_t>(n, r.u32());
    std::memcpy(attrs.get(), &lie, 4);
  }
  while (!r.empty()) {
    uint8_t cmd = r.u8();
    if (cmd == 0) break;
    size_t off = 4 + r.u16() % (n > 4 ? n - 4 : 1);
    if (off >= n) continue;
    if (cmd & 1) {
      attrs[off] = r.u8();
    } else {
      int64_t v = r.edgy_i64();
      std::memcpy(attrs.get() + off, &v, std::min<size_t>(8, n - off));
    }
  }

  // Real tensors on the CPU, host memory, for the example's types.
  pkfuzz::World &w = pkfuzz::world();
  std::vector<std::vector<uint8_t>> mem;
  std::vector<pk_tensor> ins, outs;
  auto make = [&](const pk::meta::TensorType &t, bool output) {
    int64_t count = pkfuzz::numel(t);
    size_t bytes = static_cast<size_t>(count) * pk::meta::dtype_size(t.dtype);
    mem.emplace_back(std::max<size_t>(1, bytes), output ? pkfuzz::kGuardByte : 1);
    pk_tensor d;
    PK_STRUCT_INIT(d);
    d.flags = PK_TENSOR_FLAG_HOST_VISIBLE;
    d.data = mem.back().data();
    d.storage_bytes = bytes;
    d.device_type = PK_DEVICE_CPU;
    d.dtype = pk::meta::dtype_desc(t.dtype);
    d.ndim = t.ndim;
    return d;
  };
  mem.reserve(ex.inputs.size() + ex.outputs.size());
  for (auto &t : ex.inputs) ins.push_back(make(t, false));
  for (auto &t : ex.outputs) outs.push_back(make(t, true));
  for (size_t i = 0; i < ins.size(); ++i) ins[i].shape = ex.inputs[i].shape;
  for (size_t i = 0; i < outs.size(); ++i) outs[i].shape = ex.outputs[i].shape;
  std::vector<std::vector<uint8_t>> before(mem.begin() + ins.size(), mem.end());

  pk_status st = pk_launch(w.cpu_stream, op.id, ins.data(), static_cast<uint32_t>(ins.size()), outs.data(),
                           static_cast<uint32_t>(outs.size()), attrs.get());
  pk_status sync = pk_stream_synchronize(w.cpu_stream);
  if (st != PK_OK) {
    for (size_t i = 0; i < before.size(); ++i) {
      PKFUZZ_CHECK(mem[ins.size() + i] == before[i], "a refused launch wrote nothing");
    }
  }
  if (sync != PK_OK) pkfuzz::refresh_stream(w.cpu, w.cpu_stream);

  std::vector<pk_dtype> dts(op.num_outputs + 1);
  std::vector<int32_t> nds(op.num_outputs + 1);
  std::vector<int64_t> shapes((op.num_outputs + 1) * PK_MAX_RANK);
  pk_infer_outputs(op.id, ins.data(), static_cast<uint32_t>(ins.size()), attrs.get(), op.num_outputs, dts.data(),
                   nds.data(), shapes.data());

  pk_op_query q;
  PK_STRUCT_INIT(q);
  q.op_id = op.id;
  q.num_inputs = static_cast<uint32_t>(ins.size());
  q.inputs = ins.data();
  q.num_outputs = static_cast<uint32_t>(outs.size());
  q.outputs = outs.data();
  q.attrs = attrs.get();
  pk_op_support sup;
  PK_STRUCT_INIT(sup);
  pk_device_query_op(w.cpu, &q, &sup);

  if (opts & 2) {
    pk_graph_t g = nullptr;
    if (pk_graph_create(&g) == PK_OK) {
      std::vector<uint32_t> vals;
      bool ok = true;
      for (auto &t : ex.inputs) {
        uint32_t v = 0;
        ok = ok && pk_graph_add_input(g, pk::meta::dtype_desc(t.dtype), t.ndim, t.shape, &v) == PK_OK;
        vals.push_back(v);
      }
      std::vector<uint32_t> outv(op.num_outputs + 1);
      if (ok)
        pk_graph_add_node(g, op.id, vals.data(), static_cast<uint32_t>(vals.size()), attrs.get(), outv.data(),
                          op.num_outputs);
      pk_graph_destroy(g);
    }
  }
  return 0;
}
