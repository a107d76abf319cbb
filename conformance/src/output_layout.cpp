// output_layout.cpp — where a case's outputs live in device memory, and what a kernel wrote outside them.
//
// Every output gets guard regions before and after its view, and the strided and transposed layout variants of
// a case also write their outputs through that layout (gaps between elements, column-major order). The whole storage
// starts as the poison byte 0xa5; after the launch each byte outside the view must still be 0xa5. A kernel that writes
// one element past its end, one before its start, or into the gaps of a strided view is reported with the case, the
// output and the byte — a defect the values alone never show.
#include <algorithm>
#include <cstring>

#include "conformance_internal.hpp"

namespace pk::conformance::detail {

namespace {

constexpr uint8_t kPoison = 0xa5;
constexpr int64_t kGuardElements = 16;  // on each side; at least 64 bytes for every dtype of 4 bytes or more

}  // namespace

OutputView plan_output(OutputLayout layout, int32_t dtype, const std::vector<int64_t> &shape) {
  OutputView v;
  v.dtype = dtype;
  v.shape = shape;
  const size_t rank = shape.size();
  const auto size = static_cast<int64_t>(meta::dtype_size(dtype));
  int64_t count = 1;
  for (int64_t e : shape) count *= e;
  std::vector<int64_t> strides(rank, 1);
  if (layout == OutputLayout::transposed && rank >= 2) {
    int64_t s = 1;
    for (size_t k = 0; k < rank; ++k) {
      strides[k] = s;
      s *= std::max<int64_t>(shape[k], 1);
    }
  } else {
    int64_t s = layout == OutputLayout::strided ? 2 : 1;
    for (size_t k = rank; k-- > 0;) {
      strides[k] = s;
      s *= std::max<int64_t>(shape[k], 1);
    }
  }
  int64_t min_off = 0, max_off = 0;
  if (count > 0) {
    for (size_t k = 0; k < rank; ++k) {
      const int64_t span = (shape[k] - 1) * strides[k];
      (span < 0 ? min_off : max_off) += span;
    }
  }
  const int64_t extent = count > 0 ? max_off - min_off + 1 : 0;
  const int64_t base = kGuardElements - min_off;
  v.byte_offset = static_cast<uint64_t>(base * size);
  v.storage.assign(static_cast<size_t>((kGuardElements + extent + kGuardElements) * size), kPoison);
  if (layout != OutputLayout::contiguous) v.strides = strides;
  v.element_offsets.resize(static_cast<size_t>(count));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t off = base;
    for (size_t k = 0; k < rank; ++k) off += idx[k] * strides[k];
    v.element_offsets[static_cast<size_t>(i)] = off * size;
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return v;
}

std::string gather_output(const OutputView &v, const std::vector<uint8_t> &storage, std::vector<uint8_t> &logical) {
  const size_t size = meta::dtype_size(v.dtype);
  logical.assign(v.element_offsets.size() * size, 0);
  std::vector<bool> inside(storage.size(), false);
  for (size_t i = 0; i < v.element_offsets.size(); ++i) {
    const auto off = static_cast<size_t>(v.element_offsets[i]);
    std::memcpy(logical.data() + i * size, storage.data() + off, size);
    for (size_t b = 0; b < size; ++b) inside[off + b] = true;
  }
  size_t changed = 0, first = storage.size();
  for (size_t b = 0; b < storage.size(); ++b) {
    if (inside[b] || storage[b] == kPoison) continue;
    ++changed;
    first = std::min(first, b);
  }
  if (changed == 0) return {};
  size_t lo = storage.size(), hi = 0;
  for (int64_t off : v.element_offsets) {
    lo = std::min(lo, static_cast<size_t>(off));
    hi = std::max(hi, static_cast<size_t>(off) + size);
  }
  std::string where;
  if (v.element_offsets.empty())
    where = "at byte " + std::to_string(first) + " of the storage around an empty output";
  else if (first < lo)
    where = std::to_string(lo - first) + " bytes before the view's lowest element";
  else if (first >= hi)
    where = std::to_string(first - hi) + " bytes after the view's highest element";
  else
    where = "in a gap between the view's elements (byte " + std::to_string(first - lo) + " from its lowest)";
  return std::to_string(changed) + " bytes outside the output view changed, the first " + where;
}

const char *output_layout_name(OutputLayout l) {
  switch (l) {
    case OutputLayout::contiguous:
      return "contiguous";
    case OutputLayout::strided:
      return "strided";
    case OutputLayout::transposed:
      return "transposed";
  }
  return "?";
}

}  // namespace pk::conformance::detail
