// op_table.cpp — the generated op table (generated/op_table.inc) and its lookups: ops by id and name, dtype
// facts and enum names. Everything here is immutable after static initialization, allocation-free and
// thread-safe.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "primkit/op_info.hpp"

namespace pk::meta {

namespace {
// Used through the `sizeof` macro below: every attribute struct named by the generated table is checked at
// compile time against kMaxAttrsSize, the size of the runtime's normalized-attribute buffers.
template <class T>
constexpr size_t checked_attrs_size() {
  static_assert(sizeof(T) <= kMaxAttrsSize, "an attribute struct of the op table exceeds pk::meta::kMaxAttrsSize");
  static_assert(alignof(T) <= 16, "attribute structs are copied into 16-byte aligned buffers");
  return sizeof(T);
}
}  // namespace

// The generator spells Alias::new_ as `Alias::new` (a keyword) and sizes attribute structs with sizeof; both are
// rewritten for the generated rows only.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wkeyword-macro"
#endif
#define new new_
#define sizeof(T) checked_attrs_size<T>()
#include "generated/op_table.inc"
#undef sizeof
#undef new
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

namespace {

constexpr uint32_t kOpCount = static_cast<uint32_t>(sizeof(k_op_table) / sizeof(k_op_table[0]));
constexpr uint32_t kDtypeCount = static_cast<uint32_t>(sizeof(k_dtype_table) / sizeof(k_dtype_table[0]));
static_assert(kDtypeCount == PK_DTYPE_COUNT, "op_table.inc and primkit_ops.h disagree on the dtypes");
static_assert(kOpCount == PK_OP_COUNT, "op_table.inc and primkit_ops.h disagree on the ops");
static_assert(kOpCount < 0xffffu, "the dense op index stores 16-bit positions");
constexpr uint16_t kNoOp = 0xffffu;
constexpr size_t kEnumWidth = sizeof(k_enum_values[0]) / sizeof(k_enum_values[0][0]);

[[noreturn]] void table_broken(const char *what, const char *op) {
  std::fprintf(stderr, "primkit: the op table is inconsistent: %s (op %s)\n", what, op);
  std::abort();
}

// Slot of a bit width 8, 16, 32, 64 or 128 in Index::by_desc; -1 for any other width.
int bits_slot(uint32_t bits) {
  switch (bits) {
    case 8: return 0;
    case 16: return 1;
    case 32: return 2;
    case 64: return 3;
    case 128: return 4;
    default: return -1;
  }
}
constexpr uint32_t kCodeSlots = 16;

struct Index {
  std::array<uint16_t, PK_OP_ID_LIMIT> by_id;
  std::array<uint16_t, kOpCount> by_name;  // positions in k_op_table, sorted by name
  int8_t by_desc[kCodeSlots][5];           // dtype id by DLPack code and bits slot, -1 if none
};

// Built on first use (a function-local static: safe to use from other translation units' static
// initializers). Also checks the invariants the validation code relies on, so that a broken generator or table
// fails loudly at the first lookup instead of corrupting memory.
Index build_index() {
  Index ix{};
  ix.by_id.fill(kNoOp);
  for (uint32_t i = 0; i < kOpCount; ++i) {
    const OpInfo &op = k_op_table[i];
    if (op.id == PK_OP_NONE || op.id >= PK_OP_ID_LIMIT) table_broken("op id out of range", op.name);
    if (ix.by_id[op.id] != kNoOp) table_broken("duplicate op id", op.name);
    ix.by_id[op.id] = static_cast<uint16_t>(i);
    ix.by_name[i] = static_cast<uint16_t>(i);
    if (op.attrs_size > kMaxAttrsSize) table_broken("attribute struct larger than kMaxAttrsSize", op.name);
    if (op.num_outputs > kMaxLaunchOutputs) table_broken("more outputs than kMaxLaunchOutputs", op.name);
    if (op.num_inputs > kMaxLaunchInputs) table_broken("more inputs than kMaxLaunchInputs", op.name);
    if (op.shape == ShapeRule::custom && op.shape_fn == nullptr) table_broken("custom shape without function", op.name);
    for (uint32_t a = 0; a < op.num_attrs; ++a) {
      const AttrInfo &ai = op.attrs[a];
      if (ai.dim_of >= static_cast<int32_t>(op.num_inputs)) table_broken("dim_of names no input", op.name);
      if (ai.type == AttrType::enumeration &&
          (ai.enum_id < 0 || static_cast<uint32_t>(ai.enum_id) >= k_enum_count || ai.enum_count > int32_t(kEnumWidth)))
        table_broken("bad enum attribute", op.name);
    }
  }
  std::memset(ix.by_desc, -1, sizeof(ix.by_desc));
  for (uint32_t i = 0; i < kDtypeCount; ++i) {
    const pk_dtype &d = k_dtype_table[i].desc;
    int slot = bits_slot(d.bits);
    if (d.code >= kCodeSlots || slot < 0) table_broken("dtype code or width not indexable", k_dtype_table[i].name);
    ix.by_desc[d.code][slot] = static_cast<int8_t>(i);
  }
  std::sort(ix.by_name.begin(), ix.by_name.end(),
            [](uint16_t a, uint16_t b) { return std::strcmp(k_op_table[a].name, k_op_table[b].name) < 0; });
  for (uint32_t i = 1; i < kOpCount; ++i) {
    if (std::strcmp(k_op_table[ix.by_name[i - 1]].name, k_op_table[ix.by_name[i]].name) == 0)
      table_broken("duplicate op name", k_op_table[ix.by_name[i]].name);
  }
  return ix;
}

const Index &index() {
  static const Index ix = build_index();
  return ix;
}

bool valid_dtype(int32_t id) { return id >= 0 && id < static_cast<int32_t>(kDtypeCount); }

}  // namespace

// --- ops ------------------------------------------------------------------------------------------------------

const OpInfo *find_op(uint32_t id) {
  if (id >= PK_OP_ID_LIMIT) return nullptr;
  uint16_t pos = index().by_id[id];
  return pos == kNoOp ? nullptr : &k_op_table[pos];
}

const OpInfo *find_op(std::string_view name) {
  const auto &by_name = index().by_name;
  auto it = std::lower_bound(by_name.begin(), by_name.end(), name,
                             [](uint16_t pos, std::string_view n) { return std::string_view(k_op_table[pos].name) < n; });
  if (it == by_name.end() || std::string_view(k_op_table[*it].name) != name) return nullptr;
  return &k_op_table[*it];
}

const OpInfo *ops_begin() { return k_op_table; }
const OpInfo *ops_end() { return k_op_table + kOpCount; }
uint32_t op_count() { return kOpCount; }

const char *op_name(uint32_t id) {
  const OpInfo *op = find_op(id);
  return op ? op->name : "unknown";
}

// --- dtypes ---------------------------------------------------------------------------------------------------

const DtypeInfo &dtype_info(int32_t id) {
  static const DtypeInfo k_unknown = {-1, "?", {0, 0, 0}, "not a PrimKit dtype"};
  return valid_dtype(id) ? k_dtype_table[id] : k_unknown;
}

int32_t dtype_id(pk_dtype d) {
  int slot = bits_slot(d.bits);
  if (d.lanes != 1 || d.code >= kCodeSlots || slot < 0) return -1;
  return index().by_desc[d.code][slot];
}

int32_t dtype_id(std::string_view name) {
  for (uint32_t i = 0; i < kDtypeCount; ++i) {
    if (name == k_dtype_table[i].name) return static_cast<int32_t>(i);
  }
  return -1;
}

pk_dtype dtype_desc(int32_t id) {
  if (!valid_dtype(id)) return pk_dtype{0, 0, 0};
  return k_dtype_table[id].desc;
}

const char *dtype_name(int32_t id) { return valid_dtype(id) ? k_dtype_table[id].name : "?"; }

size_t dtype_size(int32_t id) { return valid_dtype(id) ? k_dtype_table[id].desc.bits / 8u : 0; }

bool is_float(int32_t id) {
  switch (id) {
    case PK_DTYPE_F16:
    case PK_DTYPE_BF16:
    case PK_DTYPE_F32:
    case PK_DTYPE_F64:
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      return true;
    default:
      return false;
  }
}

bool is_complex(int32_t id) { return id == PK_DTYPE_C64 || id == PK_DTYPE_C128; }

bool is_integer(int32_t id) {
  switch (id) {
    case PK_DTYPE_U8:
    case PK_DTYPE_I8:
    case PK_DTYPE_I16:
    case PK_DTYPE_I32:
    case PK_DTYPE_I64:
      return true;
    default:
      return false;
  }
}

// Signed integers, floats and complex types (every dtype that represents negative values).
bool is_signed(int32_t id) {
  switch (id) {
    case PK_DTYPE_I8:
    case PK_DTYPE_I16:
    case PK_DTYPE_I32:
    case PK_DTYPE_I64:
      return true;
    default:
      return is_float(id) || is_complex(id);
  }
}

int32_t real_of(int32_t id) {
  if (id == PK_DTYPE_C64) return PK_DTYPE_F32;
  if (id == PK_DTYPE_C128) return PK_DTYPE_F64;
  return id;
}

int32_t complex_of(int32_t id) {
  if (id == PK_DTYPE_F32) return PK_DTYPE_C64;
  if (id == PK_DTYPE_F64) return PK_DTYPE_C128;
  return -1;
}

// --- enums ----------------------------------------------------------------------------------------------------

const char *enum_value_name(int32_t enum_id, int32_t value) {
  if (enum_id < 0 || static_cast<uint32_t>(enum_id) >= k_enum_count) return "?";
  if (value < 0 || static_cast<size_t>(value) >= kEnumWidth) return "?";
  const char *n = k_enum_values[enum_id][value];
  return n ? n : "?";
}

const char *enum_name(int32_t enum_id) {
  if (enum_id < 0 || static_cast<uint32_t>(enum_id) >= k_enum_count) return "?";
  return k_enum_names[enum_id];
}

}  // namespace pk::meta
