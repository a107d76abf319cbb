// launch_memo.hpp — the per-thread memo of the last validated launch or executable run (see LaunchMemo).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "primkit/op_info.hpp"
#include "primkit/primkit.h"

namespace pk::rt {

// The last launch this thread validated, as the bytes validation depends on: the subject (an op id for pk_launch;
// for pk_executable_run the executable's serial, which is never reused, unlike its address), the device's
// validation key (never reused, and changed whenever its set of live buffers changes, see
// pk_device_s::validation_key), every descriptor field with its shape and strides, and the caller's attribute
// bytes. Validation is a pure function of these, so a launch with the same bytes (a training or inference loop
// re-running one op or one graph on the same buffers) reuses the verdict and the normalized attributes instead of
// validating again. Fixed-size, thread-local: no allocation; a launch larger than kCapacity is not memoized.
template <size_t kCapacity>
class LaunchMemo {
 public:
  // True if this launch's bytes equal the remembered launch's: compared in place, field by field, so the hot path
  // (a loop re-running one op) copies nothing.
  bool matches_last(uint64_t key, uint64_t subject, const pk_tensor *inputs, uint32_t num_inputs,
                    const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) const {
    if (!valid_) return false;
    Compare c{last_, last_len_};
    return walk(c, key, subject, inputs, num_inputs, outputs, num_outputs, attrs) && c.pos == last_len_;
  }
  // Serializes the launch as the remembered one, with the attributes validation normalized; a launch that does
  // not fit is simply not memoized.
  void remember(uint64_t key, uint64_t subject, const pk_tensor *inputs, uint32_t num_inputs, const pk_tensor *outputs,
                uint32_t num_outputs, const void *attrs, const unsigned char *normalized, size_t attrs_size) {
    Store st{last_};
    valid_ = walk(st, key, subject, inputs, num_inputs, outputs, num_outputs, attrs);
    last_len_ = st.pos;
    if (valid_ && attrs_size != 0) std::memcpy(normalized_, normalized, attrs_size);
  }
  const unsigned char *normalized() const { return normalized_; }

 private:
  // Each sink takes fixed-size pieces (put<N>: unrolled word by word, the common case) and variable ones (put).
  struct Store {
    unsigned char *buf;
    size_t pos = 0;
    template <size_t N>
    bool put(const void *p) {
      return put(p, N);
    }
    bool put(const void *p, size_t n) {
      if (pos + n > kCapacity) return false;
      std::memcpy(buf + pos, p, n);
      pos += n;
      return true;
    }
  };
  struct Compare {
    const unsigned char *buf;
    size_t len, pos = 0;
    // A piece of a size known here compares as straight-line word loads and one branch: a 1-element launch is
    // ~27 words, and a generic loop per piece (or a library memcmp call) was a third of its cost.
    template <size_t N>
    bool put(const void *p) {
      static_assert(N % 8 == 0, "fixed pieces are whole words");
      if (pos + N > len) return false;
      const auto *x = buf + pos, *y = static_cast<const unsigned char *>(p);
      uint64_t diff = 0;
#pragma GCC unroll 16
      for (size_t i = 0; i < N; i += 8) diff |= word(x + i) ^ word(y + i);
      pos += N;
      return diff == 0;
    }
    bool put(const void *p, size_t n) {
      if (pos + n > len) return false;
      const auto *x = buf + pos, *y = static_cast<const unsigned char *>(p);
      uint64_t diff = 0;
      size_t i = 0;
      for (; i + 8 <= n; i += 8) diff |= word(x + i) ^ word(y + i);
      for (; i < n; ++i) diff |= static_cast<uint64_t>(x[i] ^ y[i]);
      pos += n;
      return diff == 0;
    }
    static uint64_t word(const unsigned char *p) {
      uint64_t w;
      std::memcpy(&w, p, sizeof w);
      return w;
    }
  };
  // The launch as bytes: the device's validation key (never reused, unlike its address, and changed whenever
  // its set of live buffers changes), op, counts, every descriptor (its shape/strides pointers replaced by their
  // contents), the caller's attribute bytes. Feeds each piece to the sink; false as soon as the sink refuses.
  template <class Sink>
  static bool walk(Sink &sink, uint64_t key, uint64_t subject, const pk_tensor *inputs, uint32_t num_inputs,
                   const pk_tensor *outputs, uint32_t num_outputs, const void *attrs) {
    // Whole words (built in registers: 4-byte stores read back as 8-byte loads stall store forwarding).
    const uint64_t head[3] = {key, subject, num_inputs | (uint64_t{num_outputs} << 32)};
    if (!sink.template put<sizeof head>(head)) return false;
    for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) {
      const pk_tensor &t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
      if (t.struct_size != sizeof(pk_tensor) || t.ndim < 0 || t.ndim > PK_MAX_RANK) return false;
      // Every field before the shape pointer as it is, then whether strides are given, then the extents.
      static_assert(offsetof(pk_tensor, shape) % 8 == 0, "the descriptor's leading fields are whole words");
      const uint64_t has_strides = t.strides != nullptr;
      const size_t dims = static_cast<size_t>(t.ndim) * sizeof(int64_t);
      if (!sink.template put<offsetof(pk_tensor, shape)>(&t) || !sink.template put<sizeof has_strides>(&has_strides) ||
          (t.ndim > 0 && (t.shape == nullptr || !sink.put(t.shape, dims))) ||
          (t.strides != nullptr && t.ndim > 0 && !sink.put(t.strides, dims))) {
        return false;
      }
    }
    if (attrs != nullptr) {
      uint32_t size;
      std::memcpy(&size, attrs, sizeof size);
      if (size > pk::meta::kMaxAttrsSize || !sink.put(attrs, size)) return false;
    }
    return true;
  }
  // No initializers: a thread_local of a trivially constructible type is zero-initialized (valid_ = false) with
  // no per-access initialization guard.
  unsigned char last_[kCapacity];
  size_t last_len_;
  bool valid_;
  alignas(16) unsigned char normalized_[pk::meta::kMaxAttrsSize];
};
static_assert(std::is_trivially_default_constructible_v<LaunchMemo<1024>>, "see the comment on LaunchMemo's fields");

}  // namespace pk::rt
