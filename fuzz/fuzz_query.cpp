// fuzz_query — the capability query and the metadata paths through the public ABI: pk_device_query_op (coverage
// queries without shapes and exact ones with them) and pk_infer_outputs on mutated descriptors, with every
// struct the caller passes (pk_op_query, pk_op_support, pk_error_info, pk_device_props, pk_backend_info,
// pk_op_desc, pk_op_operand_desc, pk_op_attr_desc, attribute structs) allocated at exactly the struct_size the
// input gives, so a read or write past the size the caller declared is an ASan report.
#include "launch_builder.hpp"

namespace {

// A struct of `size` bytes (at least 4: its struct_size field), struct_size set; freed on scope exit.
struct Exact {
  explicit Exact(uint32_t size) : n(size < 4 ? 4 : size), p(new uint8_t[n]) {
    std::memset(p.get(), 0xCC, n);
    uint32_t ss = size;
    std::memcpy(p.get(), &ss, 4);
  }
  template <typename T>
  T *as() {
    return reinterpret_cast<T *>(p.get());
  }
  uint32_t n;
  std::unique_ptr<uint8_t[]> p;
};

uint32_t fuzz_size(pkfuzz::Reader &r, uint32_t full) {
  uint8_t v = r.u8();
  if (v < 160) return full;                // the honest size
  if (v < 240) return 4 + r.u16() % full;  // shorter (an older caller)
  return full + r.u8();                    // longer (a newer caller)
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  pkfuzz::init_launch_harness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pkfuzz::Reader r(data, size);
  pkfuzz::FuzzLaunch l;
  if (!l.decode(r)) return 0;
  // Query descriptors carry no data (the ABI says data pointers are NULL in a query).
  for (auto *v : {&l.ins, &l.outs}) {
    for (auto &t : *v) t.where = pkfuzz::FuzzTensor::kNull;
  }
  if (!l.materialize(r)) return 0;
  uint8_t mode = r.u8();
  if (mode & 1) {  // a coverage query: no shapes
    for (auto *v : {&l.in_desc, &l.out_desc}) {
      for (auto &t : *v) t.shape = nullptr, t.strides = nullptr;
    }
  }
  Exact q(fuzz_size(r, sizeof(pk_op_query)));
  {
    pk_op_query full;
    PK_STRUCT_INIT(full);
    full.op_id = (mode & 2) ? r.u32() : l.op->id;
    full.device_index = (mode & 4) ? r.u32() : 0;
    full.num_inputs = static_cast<uint32_t>(l.in_desc.size());
    full.inputs = l.in_desc.empty() ? nullptr : l.in_desc.data();
    full.num_outputs = static_cast<uint32_t>(l.out_desc.size());
    full.outputs = l.out_desc.empty() ? nullptr : l.out_desc.data();
    full.attrs = l.attrs.get();
    if (mode & 8) full.num_inputs += r.u8() % 3;  // counts that overstate the arrays are the caller's lie: only
    if (full.num_inputs > l.in_desc.size()) full.num_inputs = static_cast<uint32_t>(l.in_desc.size());  // fewer
    full.struct_size = *q.as<uint32_t>();
    std::memcpy(q.p.get(), &full, std::min<size_t>(q.n, sizeof(full)));
  }
  Exact sup(fuzz_size(r, sizeof(pk_op_support)));
  pk_status st = pk_device_query_op(l.device, q.as<pk_op_query>(), sup.as<pk_op_support>());
  if (st == PK_OK && sup.n >= sizeof(pk_op_support)) {
    PKFUZZ_CHECK(std::memchr(sup.as<pk_op_support>()->reason, 0, 256) != nullptr, "the reason is NUL-terminated");
  }

  // Output inference with output arrays of exactly the count the caller claims.
  uint32_t nout = (mode & 16) ? r.u8() % 10 : l.op->num_outputs;
  std::vector<pk_dtype> dts(nout);
  std::vector<int32_t> nds(nout);
  std::unique_ptr<int64_t[]> shapes(new int64_t[std::max<uint32_t>(1, nout) * PK_MAX_RANK]);
  pk_infer_outputs(l.op->id, l.in_desc.empty() ? nullptr : l.in_desc.data(), static_cast<uint32_t>(l.in_desc.size()),
                   l.attrs.get(), nout, nout ? dts.data() : nullptr, nout ? nds.data() : nullptr,
                   nout ? shapes.get() : nullptr);

  // Metadata with structs of any size and ids or indices out of range.
  uint32_t op_id = (mode & 32) ? r.u32() % (PK_OP_ID_LIMIT + 8) : l.op->id;
  {
    Exact e(fuzz_size(r, sizeof(pk_error_info)));
    pk_get_last_error(e.as<pk_error_info>());
  }
  {
    Exact d(fuzz_size(r, sizeof(pk_op_desc)));
    pk_op_describe(op_id, d.as<pk_op_desc>());
    Exact d2(fuzz_size(r, sizeof(pk_op_desc)));
    pk_op_describe_at(r.u16(), d2.as<pk_op_desc>());
  }
  {
    Exact o(fuzz_size(r, sizeof(pk_op_operand_desc)));
    pk_op_operand(op_id, r.u8() % 12, o.as<pk_op_operand_desc>());
    Exact a(fuzz_size(r, sizeof(pk_op_attr_desc)));
    pk_op_attr(op_id, r.u8() % 12, a.as<pk_op_attr_desc>());
  }
  {
    uint32_t n = r.u16() % (pk::meta::kMaxAttrsSize + 16);
    std::unique_ptr<uint8_t[]> buf(new uint8_t[std::max<uint32_t>(1, n)]);
    pk_op_init_attrs(op_id, buf.get(), n);
  }
  {
    Exact p(fuzz_size(r, sizeof(pk_device_props)));
    pk_device_get_props(l.device, p.as<pk_device_props>());
    Exact b(fuzz_size(r, sizeof(pk_backend_info)));
    pk_backend_get_info(pk_device_backend(l.device), b.as<pk_backend_info>());
  }
  {
    char name[48];
    size_t n = std::min<size_t>(r.left(), sizeof(name) - 1);
    r.bytes(name, n);
    name[n] = 0;
    uint32_t id = 0;
    pk_op_find(name, &id);
  }
  return 0;
}
