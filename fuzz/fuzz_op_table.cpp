// fuzz_op_table — the C++ that parses op-table text: an op row's `example` ("x: f32[2,3]; dim=1", parsed by
// parse_example into input types and an attribute struct) and a composite's `decomposition` program (parsed and
// evaluated by decompose). The input picks an op and gives the text; the op's real example and program are the
// seeds. Malformed text must give a failure with a message, never a crash, an overflow or an exception.
// (The table's other reader, sdk/primops/gen_ops.py, is checked by tests/primops/test_gen_ops_fuzz.py.)
#include "fuzz_common.hpp"

#include <string>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (pkfuzz::seed_dir()) {
    uint32_t n = pk::meta::op_count();
    for (uint32_t i = 0; i < n; ++i) {
      const auto &op = pkfuzz::op_at(i);
      for (int mode = 1; mode <= 2; ++mode) {
        const char *text = mode == 1 ? op.example : op.decomposition;
        if (!text) continue;
        pkfuzz::SeedWriter w;
        w.u16(static_cast<uint16_t>(i)).u8(static_cast<uint8_t>(mode));
        for (const char *c = text; *c; ++c) w.u8(static_cast<uint8_t>(*c));
        pkfuzz::write_seed(std::string(op.name) + (mode == 1 ? "-example" : "-decomposition"), w.b);
      }
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pkfuzz::Reader r(data, size);
  const pk::meta::OpInfo &op = pkfuzz::op_at(r.u16());
  uint8_t mode = r.u8();
  std::string text(r.left(), '\0');
  r.bytes(text.data(), text.size());
  text = text.c_str();  // up to the first NUL, as a C string in the table would be
  pk::meta::Diag diag;
  if (mode & 1) {
    std::vector<pk::meta::TensorType> inputs;
    alignas(16) uint8_t attrs[pk::meta::kMaxAttrsSize] = {0};
    bool ok = pk::meta::parse_example(op, text.c_str(), inputs, attrs, diag);
    if (!ok) {
      PKFUZZ_CHECK(diag.status != PK_OK && diag.message[0] != '\0', "a refused example says why");
      return 0;
    }
    alignas(16) uint8_t norm[pk::meta::kMaxAttrsSize] = {0};
    if (op.attrs_size && !pk::meta::normalize_attrs(op, attrs, norm, diag)) return 0;
    if (inputs.size() > pk::meta::kMaxLaunchInputs) return 0;
    // As every caller does (validate_launch, pk_infer_outputs): ranges first, then the shape rule.
    if (!pk::meta::check_attrs(op, op.attrs_size ? norm : nullptr, inputs.data(), static_cast<uint32_t>(inputs.size()),
                               diag)) {
      return 0;
    }
    std::vector<pk::meta::TensorType> outs(op.num_outputs);
    bool inferred =
        pk::meta::infer_outputs(op, inputs.data(), static_cast<uint32_t>(inputs.size()), norm, outs.data(), diag);
    if (inferred && op.tier == pk::meta::Tier::composite) {
      pk::meta::Decomposition d;
      int64_t total = 0;
      for (auto &t : inputs) total += pkfuzz::numel(t);
      if (total < (1 << 20))
        pk::meta::decompose(op, inputs.data(), static_cast<uint32_t>(inputs.size()), norm, d, diag);
    }
  }
  if ((mode & 2) && op.tier == pk::meta::Tier::composite) {
    pkfuzz::Launch ex;
    if (!pkfuzz::example_launch(op, ex)) return 0;
    pk::meta::OpInfo copy = op;
    copy.decomposition = text.c_str();
    alignas(16) uint8_t norm[pk::meta::kMaxAttrsSize] = {0};
    if (op.attrs_size && !pk::meta::normalize_attrs(op, ex.attrs.data(), norm, diag)) return 0;
    pk::meta::Decomposition d;
    if (!pk::meta::decompose(copy, ex.inputs.data(), static_cast<uint32_t>(ex.inputs.size()), norm, d, diag)) {
      PKFUZZ_CHECK(diag.status != PK_OK && diag.message[0] != '\0', "a refused program says why");
    }
  }
  return 0;
}
