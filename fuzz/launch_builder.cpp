// launch_builder.cpp — see launch_builder.hpp.
#include "launch_builder.hpp"

#include <algorithm>

namespace pkfuzz {

namespace {
constexpr uint8_t kCommands = 17;
constexpr size_t kMaxBytes = size_t(1) << 20;  // memory behind one tensor, at most
constexpr size_t kCheckElements = size_t(1) << 15;

// Bytes a view reaches, [0, hi) from `data`: byte_offset + the furthest element (strides >= 0 only; a negative
// stride or an overflow gives `huge`, so the memory is capped and the runtime must refuse the view).
uint64_t needed_bytes(const FuzzTensor &t, bool &huge) {
  huge = false;
  if (t.ndim < 0 || t.ndim > PK_MAX_RANK || t.dtype.bits == 0) return 0;
  __int128 last = 0;
  __int128 st = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    int64_t n = t.shape[d];
    if (n <= 0) return t.byte_offset;  // empty (or invalid): nothing reached
    __int128 s = t.has_strides ? t.strides[d] : st;
    if (s < 0) {
      huge = true;
      return 0;
    }
    last += (n - 1) * s;
    st *= n;
    if (st > ((__int128)1 << 64) || last > ((__int128)1 << 64)) {
      huge = true;
      return 0;
    }
  }
  __int128 bytes = (__int128)t.byte_offset + (last + 1) * ((t.dtype.bits + 7) / 8);
  if (bytes > ((__int128)1 << 63)) {
    huge = true;
    return 0;
  }
  return static_cast<uint64_t>(bytes);
}
}  // namespace

void refresh_stream(pk_device_t device, pk_stream_t &stream) {
  if (pk_stream_synchronize(stream) == PK_OK) return;
  pk_stream_destroy(stream);
  stream = nullptr;
  if (pk_stream_create(device, &stream) != PK_OK) die("cannot recreate a stream");
}

void FuzzLaunch::init_tensor(FuzzTensor &t, const pk::meta::TensorType &tt) {
  t.dtype = pk::meta::dtype_desc(tt.dtype);
  t.ndim = tt.ndim;
  for (int32_t d = 0; d < tt.ndim; ++d) t.shape[d] = tt.shape[d];
  if (on_emu) {
    t.where = FuzzTensor::kBuffer;  // device memory is opaque: only pk_buffers
    t.flags = 0;
    t.device_type = PK_DEVICE_EXT;
  }
}

bool FuzzLaunch::decode(Reader &r) {
  op = &op_at(r.u16());
  uint8_t opts = r.u8();
  World &w = world();
  on_emu = (opts & 1) && w.emu;
  fill = (opts >> 1) & 3;
  device = on_emu ? w.emu : w.cpu;
  stream = on_emu ? &w.emu_stream : &w.cpu_stream;
  Launch l;
  if (!example_launch(*op, l)) return false;
  ins.resize(l.inputs.size());
  outs.resize(l.outputs.size());
  for (size_t i = 0; i < ins.size(); ++i) init_tensor(ins[i], l.inputs[i]);
  for (size_t i = 0; i < outs.size(); ++i) init_tensor(outs[i], l.outputs[i]);
  attrs_size = static_cast<uint32_t>(l.attrs.size());
  std::vector<uint8_t> a = l.attrs;
  // Attribute mutations edit `a`, sized up to the largest struct_size a record asks for.
  while (!r.empty()) {
    uint8_t cmd = r.u8() % kCommands;
    if (cmd == 0) break;
    if (cmd == 11 || cmd == 12 || cmd == 13) {
      if (cmd == 13) {  // the attribute struct's size (and struct_size field): shorter, longer, or NULL
        uint8_t how = r.u8();
        if (how == 0xff) {
          attrs_null = true;
        } else {
          attrs_size = std::max<uint32_t>(4, r.u16() % (pk::meta::kMaxAttrsSize + 64));
          a.resize(attrs_size, 0);
          uint32_t ss = how & 1 ? r.u32() : attrs_size;          // odd: struct_size lies about the allocation
          if (how & 1) ss = std::min<uint32_t>(ss, attrs_size);  // never claim more than the memory holds
          std::memcpy(a.data(), &ss, 4);
        }
        continue;
      }
      if (a.empty()) {
        r.u16();
        r.u64();
        continue;
      }
      // Bytes 0..3 are struct_size: only command 13 sets it, never past the allocation (that would be the
      // caller's lie about its own memory, not a runtime bug).
      if (a.size() <= 4) {
        r.u16();
        r.u64();
        continue;
      }
      size_t off = 4 + r.u16() % (a.size() - 4);
      if (cmd == 11) {
        a[off] = r.u8();
      } else {
        int64_t v = r.edgy_i64();
        size_t n = std::min<size_t>(8, a.size() - off);
        std::memcpy(a.data() + off, &v, n);
      }
      continue;
    }
    mutate(r, cmd);
  }
  if (!attrs_null && attrs_size > 0) {
    attrs.reset(new uint8_t[attrs_size]);
    std::memcpy(attrs.get(), a.data(), std::min<size_t>(a.size(), attrs_size));
  }
  return true;
}

void FuzzLaunch::mutate(Reader &r, uint8_t cmd) {
  size_t total = ins.size() + outs.size();
  uint8_t which = r.u8();
  if (cmd == 14) {  // add or remove a tensor
    bool out = which & 0x80;
    auto &v = out ? outs : ins;
    if ((which & 0x40) && !v.empty()) {
      v.pop_back();
    } else if (v.size() < pk::meta::kMaxLaunchInputs + 2) {
      v.push_back(v.empty() ? FuzzTensor{} : FuzzTensor{});
      FuzzTensor &t = v.back();
      if (v.size() > 1) {
        const FuzzTensor &src = v[v.size() - 2];
        t.dtype = src.dtype;
        t.ndim = src.ndim;
        std::copy(std::begin(src.shape), std::end(src.shape), std::begin(t.shape));
        t.where = src.where;
        t.flags = src.flags;
        t.device_type = src.device_type;
      } else {
        t.dtype = pk::meta::dtype_desc(PK_DTYPE_F32);
      }
    }
    return;
  }
  if (total == 0) return;
  size_t k = which % total;
  FuzzTensor &t = k < ins.size() ? ins[k] : outs[k - ins.size()];
  switch (cmd) {
    case 1: {  // dtype: a table dtype, or raw code/bits/lanes
      uint8_t v = r.u8();
      if (v < 0xf0) {
        t.dtype = pk::meta::dtype_desc(v % PK_DTYPE_COUNT);
      } else {
        t.dtype.code = r.u8();
        t.dtype.bits = r.u8();
        t.dtype.lanes = r.u16();
      }
      break;
    }
    case 2:
      t.ndim = static_cast<int8_t>(r.u8()) % (PK_MAX_RANK + 3);
      break;
    case 3:
      t.shape[r.u8() % (PK_MAX_RANK + 2)] = r.edgy_i64();
      break;
    case 4: {
      uint8_t d = r.u8();
      if (d == 0xff) {
        t.has_strides = false;
      } else {
        if (!t.has_strides) {  // start from the row-major strides
          int64_t s = 1;
          for (int32_t i = std::min<int32_t>(std::max<int32_t>(t.ndim, 0), PK_MAX_RANK + 2) - 1; i >= 0; --i) {
            t.strides[i] = s;
            s *= std::max<int64_t>(1, std::min<int64_t>(t.shape[i], 1 << 20));
          }
        }
        t.has_strides = true;
        t.strides[d % (PK_MAX_RANK + 2)] = r.edgy_i64();
      }
      break;
    }
    case 5:
      t.byte_offset = r.u8() < 200 ? r.u16() % 4096 : static_cast<uint64_t>(r.edgy_i64());
      break;
    case 6:
      t.flags = r.u8();
      break;
    case 7: {
      uint8_t v = r.u8();
      if (v < 128) {
        t.storage_delta = static_cast<int8_t>(r.u8()) * (v % 4 == 0 ? 64 : 1);
      } else {
        t.storage_lie = true;
        t.storage_raw = static_cast<uint64_t>(r.edgy_i64());
      }
      break;
    }
    case 8:
      t.where = static_cast<FuzzTensor::Where>(r.u8() % 3);
      break;
    case 9:
      t.struct_size = r.u8() < 128 ? r.u8() : r.u32();
      break;
    case 10:
      t.device_type = static_cast<int8_t>(r.u8());
      t.device_id = static_cast<int8_t>(r.u8());
      break;
    case 15:
      if (!ins.empty()) t.alias_of = r.u8() % ins.size();
      break;
    case 16: {  // a whole new small shape, keeping the rank
      for (int32_t d = 0; d < std::min<int32_t>(t.ndim, PK_MAX_RANK); ++d) t.shape[d] = r.u8() % 9;
      break;
    }
    default:
      break;
  }
  if (on_emu && t.where == FuzzTensor::kHost) t.where = FuzzTensor::kBuffer;
}

bool FuzzLaunch::place(FuzzTensor &t, bool output, Reader &r) {
  pk_tensor &d = t.desc;
  std::memset(&d, 0, sizeof(d));
  d.struct_size = t.struct_size;
  d.flags = t.flags;
  d.byte_offset = t.byte_offset;
  d.device_type = t.device_type;
  d.device_id = t.device_id;
  d.dtype = t.dtype;
  d.ndim = t.ndim;
  d.shape = t.shape;
  d.strides = t.has_strides ? t.strides : nullptr;
  bool huge = false;
  uint64_t need = needed_bytes(t, huge);
  uint64_t storage = huge ? 256 : need;
  storage = static_cast<uint64_t>(
      std::max<int64_t>(0, static_cast<int64_t>(std::min<uint64_t>(storage, kMaxBytes)) + t.storage_delta));
  storage = std::min<uint64_t>(storage, kMaxBytes);
  if (t.where == FuzzTensor::kNull) {
    d.data = nullptr;
    d.storage_bytes = storage;
    return true;
  }
  auto pattern = [&](uint8_t *p, size_t n) {
    if (output) {
      std::memset(p, kGuardByte, n);
      return;
    }
    uint32_t x = 0x9e3779b9u * (r.u8() + 1);
    for (size_t i = 0; i < n; ++i) {
      x = x * 1664525u + 1013904223u;
      switch (fill) {
        case 0:
          p[i] = static_cast<uint8_t>(x >> 24);
          break;  // random bits (NaNs, huge indices)
        case 1:
          p[i] = (i % 4 == 0) ? static_cast<uint8_t>((x >> 24) % 4) : 0;
          break;  // small values
        case 2:
          p[i] = 0;
          break;
        default:
          p[i] = static_cast<uint8_t>(i);
          break;
      }
    }
  };
  if (t.where == FuzzTensor::kHost) {
    t.host_size = std::max<size_t>(1, storage);
    t.host.reset(new uint8_t[t.host_size]);
    pattern(t.host.get(), t.host_size);
    d.data = t.host.get();
    d.storage_bytes = storage;  // never more than the allocation: past it ASan reports any access
  } else {
    // [guard][view's storage][guard] in one buffer; storage_bytes may lie (the runtime bounds views by the buffer).
    t.buffer_size = storage + 2 * kGuard;
    if (pk_buffer_create(device, t.buffer_size, &t.buffer) != PK_OK) return false;
    std::vector<uint8_t> init(t.buffer_size);
    pattern(init.data(), init.size());
    if (pk_copy_host_to_buffer(*stream, t.buffer, 0, init.data(), init.size()) != PK_OK ||
        pk_stream_synchronize(*stream) != PK_OK) {
      return false;
    }
    pk_tensor base;
    if (pk_buffer_tensor(t.buffer, t.dtype, 0, nullptr, nullptr, 0, &base) != PK_OK) return false;
    d.data = base.data;
    d.byte_offset = t.byte_offset + kGuard;
    d.storage_bytes = t.storage_lie ? t.storage_raw : storage + kGuard;
  }
  return true;
}

bool FuzzLaunch::materialize(Reader &r) {
  in_desc.clear();
  out_desc.clear();
  for (auto &t : ins) {
    if (!place(t, false, r)) return false;
  }
  for (auto &t : outs) {
    if (t.alias_of >= 0 && static_cast<size_t>(t.alias_of) < ins.size()) {
      const FuzzTensor &src = ins[t.alias_of];
      if (!place(t, true, r)) return false;
      t.desc.data = src.desc.data;
      t.desc.storage_bytes = src.desc.storage_bytes;
      t.desc.byte_offset = src.desc.byte_offset;
      continue;
    }
    if (!place(t, true, r)) return false;
    t.before = read_memory(t);
  }
  for (auto &t : ins) in_desc.push_back(t.desc);
  for (auto &t : outs) out_desc.push_back(t.desc);
  return true;
}

std::vector<uint8_t> FuzzLaunch::read_memory(FuzzTensor &t) {
  if (t.where == FuzzTensor::kHost && t.host) return std::vector<uint8_t>(t.host.get(), t.host.get() + t.host_size);
  if (t.where == FuzzTensor::kBuffer && t.buffer) {
    std::vector<uint8_t> v(t.buffer_size);
    refresh_stream(device, *stream);
    if (pk_copy_buffer_to_host(*stream, v.data(), t.buffer, 0, v.size()) != PK_OK ||
        pk_stream_synchronize(*stream) != PK_OK) {
      die("cannot read back an output buffer");
    }
    return v;
  }
  return {};
}

void FuzzLaunch::check_outputs(bool ok) {
  for (auto &t : outs) {
    if (t.alias_of >= 0 || t.before.empty()) continue;
    std::vector<uint8_t> now = read_memory(t);
    if (now.size() != t.before.size()) die("output memory changed size");
    if (!ok) {
      if (now != t.before) die("a failed call wrote to an output");
      continue;
    }
    // Success: every byte outside the output's view is unchanged (the guards included).
    std::vector<uint64_t> reached;
    pk_tensor rel = t.desc;
    if (!view_bytes(rel, kCheckElements, reached)) continue;
    std::vector<uint8_t> mark(now.size(), 0);
    for (uint64_t o : reached) {
      if (o < mark.size()) mark[o] = 1;
    }
    for (size_t i = 0; i < now.size(); ++i) {
      if (!mark[i] && now[i] != t.before[i]) {
        char msg[160];
        std::snprintf(msg, sizeof(msg), "op %s wrote byte %zu of %zu outside its output view", op->name, i, now.size());
        die("write outside an output view", msg);
      }
    }
  }
}

void FuzzLaunch::release() {
  for (auto *v : {&ins, &outs}) {
    for (auto &t : *v) {
      if (t.buffer) {
        pk_buffer_destroy(t.buffer);
        t.buffer = nullptr;
      }
      t.host.reset();
    }
  }
}

void init_launch_harness() {
  world();
  if (!seed_dir()) return;
  uint32_t n = pk::meta::op_count();
  for (uint32_t i = 0; i < n; ++i) {
    const auto &op = op_at(i);
    Launch l;
    if (!example_launch(op, l)) continue;
    SeedWriter s;
    s.u16(static_cast<uint16_t>(i)).u8(0);
    write_seed(op.name, s.b);
    if (i % 8 == 0) {  // the same launch on cuda-emu, strided, offset, in buffers
      SeedWriter e;
      e.u16(static_cast<uint16_t>(i)).u8(1).u8(8).u8(0).u8(1).u8(5).u8(0).u8(200).u16(16).u8(4).u8(0).u8(0).u8(2).u8(0);
      write_seed(std::string(op.name) + "-mutated", e.b);
    }
  }
  std::exit(0);
}

}  // namespace pkfuzz
