// elementwise_creation.cpp — the elementwise primitives that write values rather than compute them from an
// operand's math: convert_element_type, clone, fill, creation (full, scalar_tensor, iota, maximum_value /
// minimum_value) and counter-based RNG (Philox).
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cpu_kernels.hpp"
#include "elementwise.hpp"

namespace pk::cpu::elementwise {
namespace {

// --- conversion
// -------------------------------------------------------------------------------------------------------

// convert_element_type: float -> int truncates and saturates (NaN -> 0); int -> int wraps; -> bool is != 0;
// complex -> real drops the imaginary part; to e4m3fn saturates.
template <class To, class From>
To convert(const From &s) {
  const auto v = load_value(s);
  using VF = std::remove_cv_t<decltype(v)>;
  if constexpr (is_bool_v<To>) {
    return boolean{static_cast<uint8_t>(truth(v) ? 1 : 0)};
  } else if constexpr (is_complex_v<To>) {
    using R = typename To::value_type;
    if constexpr (is_complex_v<VF>)
      return To(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    else
      return To(convert<R>(s), R(0));
  } else if constexpr (is_complex_v<VF>) {
    return convert<To>(v.real());
  } else if constexpr (is_int_v<To>) {
    if constexpr (std::is_floating_point_v<VF>) {
      if (std::isnan(v)) return 0;
      const double t = std::trunc(static_cast<double>(v));
      if (t <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
      // max() of i64 is not a double: 2^63 compares >= exactly.
      if (t >= std::ldexp(1.0, 8 * sizeof(To) - (std::is_signed_v<To> ? 1 : 0))) return std::numeric_limits<To>::max();
      return static_cast<To>(t);
    } else {
      return static_cast<To>(static_cast<uint_of<To>>(static_cast<uint64_t>(v)));  // wraps
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);  // int -> float and narrowing float -> float round to nearest even
  } else {                      // the 8/16-bit formats
    if constexpr (std::is_integral_v<VF> || std::is_same_v<VF, bool>) {
      return round_small<To>(int_round_to_odd(static_cast<int64_t>(v)), true);
    } else {
      return round_small<To>(static_cast<double>(v), true);
    }
  }
}

pk_status k_convert_element_type(const Launch &l) {
  const int32_t from = dtype_of(l.inputs[0]), to = dtype_of(l.outputs[0]);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(from, [&](auto ftag) -> pk_status {
      using F = decltype(ftag);
      return kit::dispatch_dtype(to, [&](auto ttag) -> pk_status {
        using T = decltype(ttag);
        return map<T, F>(l, [](const F &a) { return convert<T>(a); });
      });
    });
  });
}

// clone: a copy into the output's own layout, by element size.
pk_status k_clone(const Launch &l) {
  const View in = kit::view_of(l.inputs[0]);
  const View out = kit::view_of(l.outputs[0]);
  if (in.contiguous && out.contiguous) {
    const size_t bytes = static_cast<size_t>(out.numel) * out.esize;
    parallel_for(0, static_cast<int64_t>(bytes), int64_t{1} << 20, [&](int64_t lo, int64_t hi) {
      std::memcpy(out.base + lo, in.base + lo, static_cast<size_t>(hi - lo));
    });
    return PK_OK;
  }
  auto copy = [&](auto tag) {
    using E = decltype(tag);
    return map<E, E>(l, [](const E &a) { return a; });
  };
  switch (out.esize) {
    case 1:
      return copy(uint8_t{});
    case 2:
      return copy(uint16_t{});
    case 4:
      return copy(uint32_t{});
    case 8:
      return copy(uint64_t{});
    default:
      return copy(c128{});
  }
}

// The value a double converts to, as convert_element_type converts an f64.
template <class T>
T from_double(double v) {
  return convert<T>(v);
}

pk_status k_fill(const Launch &l) {
  const double value = attrs_of<pk_attrs_fill>(l).value;
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const T v = from_double<T>(value);
      return generate<T>(l, [v](int64_t) { return v; });
    });
  });
}

// --- creation
// -----------------------------------------------------------------------------------------------------------

pk_status k_full(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_full>(l);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const T v = from_double<T>(a.value);
      return generate<T>(l, [v](int64_t) { return v; });
    });
  });
}

pk_status k_scalar_tensor(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_scalar_tensor>(l);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const T v = from_double<T>(a.value);
      return generate<T>(l, [v](int64_t) { return v; });
    });
  });
}

pk_status k_iota(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_iota>(l);
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const uint64_t start = static_cast<uint64_t>(a.start), step = static_cast<uint64_t>(a.step);
      return generate<T>(l, [=](int64_t i) {
        return convert<T>(static_cast<int64_t>(start + step * static_cast<uint64_t>(i)));  // i64 arithmetic wraps
      });
    });
  });
}

// The largest (or lowest) finite value of a dtype; true / false for bool.
template <class T, bool kMax>
T extreme_value() {
  if constexpr (is_bool_v<T>)
    return boolean{static_cast<uint8_t>(kMax ? 1 : 0)};
  else if constexpr (is_complex_v<T>)
    return T(extreme_value<typename T::value_type, kMax>(), 0);
  else if constexpr (is_small_v<T>) {
    // The largest finite bit pattern: exponent field all ones minus one (IEEE-like) or mantissa 110 (e4m3fn).
    using B = decltype(T{}.bits);
    constexpr int total = 8 * sizeof(B);
    B mag;
    if constexpr (std::is_same_v<T, half>)
      mag = 0x7bff;
    else if constexpr (std::is_same_v<T, bfloat16>)
      mag = 0x7f7f;
    else if constexpr (std::is_same_v<T, f8e4m3fn>)
      mag = 0x7e;
    else
      mag = 0x7b;  // e5m2
    return T::from_bits(static_cast<B>(kMax ? mag : (mag | (B{1} << (total - 1)))));
  } else {
    return kMax ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
  }
}

template <bool kMax>
pk_status k_extreme_value(const Launch &l) {
  return guarded(l, [&]() -> pk_status {
    return kit::dispatch_dtype(dtype_of(l.outputs[0]), [&](auto tag) -> pk_status {
      using T = decltype(tag);
      const T v = extreme_value<T, kMax>();
      return generate<T>(l, [v](int64_t) { return v; });
    });
  });
}

// --- counter-based RNG
// ---------------------------------------------------------------------------------------------------- Element i reads
// word i % 4 of Philox4x32-10(counter = offset + i / 4, key = seed): the 64-bit counter fills words 0 (low) and 1
// (high), words 2 and 3 are zero; the key is the seed's low and high 32 bits.

void philox(uint64_t counter, uint64_t seed, uint32_t out[4]) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0, p1 = uint64_t{0xCD9E8D57u} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

uint32_t philox_word(uint64_t offset, uint64_t seed, int64_t i) {
  uint32_t w[4];
  philox(offset + static_cast<uint64_t>(i) / 4, seed, w);
  return w[i % 4];
}

// Rounds v down (toward -inf) to the format, so a uniform draw never reaches `high`.
template <class T>
T round_down(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    const float r = static_cast<float>(v);
    return static_cast<double>(r) > v ? std::nextafter(r, -HUGE_VALF) : r;
  } else {
    const T r = round_small<T>(v, true);
    return r.to_double() > v ? next_after(r, T(-HUGE_VAL)) : r;
  }
}

pk_status k_philox_uniform(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_philox_uniform>(l);
  return dispatch<AdmitFloat>(l, dtype_of(l.outputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const uint64_t offset = static_cast<uint64_t>(a.offset), seed = static_cast<uint64_t>(a.seed);
    const double low = a.low, span = a.high - a.low;
    return generate<T>(
        l, [=](int64_t i) { return round_down<T>(low + span * std::ldexp(philox_word(offset, seed, i), -32)); },
        kGrainCostly);
  });
}

pk_status k_philox_normal(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_philox_normal>(l);
  return dispatch<AdmitFloat>(l, dtype_of(l.outputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const uint64_t offset = static_cast<uint64_t>(a.offset), seed = static_cast<uint64_t>(a.seed);
    const double mean = a.mean, stddev = a.std;
    return generate<T>(
        l,
        [=](int64_t i) {
          uint32_t w[4];
          philox(offset + static_cast<uint64_t>(i) / 4, seed, w);
          const int pair = static_cast<int>(i % 4) / 2;  // elements 4k, 4k+1 use (w0, w1); 4k+2, 4k+3 use (w2, w3)
          const double u1 = (static_cast<double>(w[2 * pair]) + 1) * 0x1p-32, u2 = w[2 * pair + 1] * 0x1p-32;
          // In long double, with 2 pi u2 reduced exactly to a quadrant and |angle| <= pi/4: near a zero of
          // cos or sin the value is tiny, and an angle rounded in double would leave it only absolutely accurate.
          const long double r = std::sqrt(-2 * std::log(static_cast<long double>(u1)));
          const double quarter = std::nearbyint(4 * u2);  // 4 u2 and u2 - quarter / 4 are exact
          const long double angle = 2 * 3.141592653589793238462643383279502884L * (u2 - quarter / 4);
          const long double sn = std::sin(angle), cs = std::cos(angle);
          const int q = static_cast<int>(quarter) & 3;  // rotate by q quarter turns
          const long double cos_v = q == 0 ? cs : q == 1 ? -sn : q == 2 ? -cs : sn;
          const long double sin_v = q == 0 ? sn : q == 1 ? cs : q == 2 ? -sn : -cs;
          const long double z = r * ((i % 2 == 0) ? cos_v : sin_v);
          return store_value<T>(static_cast<double>(mean + stddev * z), true);
        },
        kGrainCostly);
  });
}

pk_status k_philox_randint(const Launch &l) {
  const auto &a = attrs_of<pk_attrs_philox_randint>(l);
  return dispatch<AdmitReal>(l, dtype_of(l.outputs[0]), [&](auto tag) {
    using T = decltype(tag);
    const uint64_t offset = static_cast<uint64_t>(a.offset), seed = static_cast<uint64_t>(a.seed);
    const uint64_t span = static_cast<uint64_t>(a.high) - static_cast<uint64_t>(a.low);
    const int64_t low = a.low;
    return generate<T>(l, [=](int64_t i) {
      return convert<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + philox_word(offset, seed, i) % span));
    });
  });
}

}  // namespace

void register_fill_kernel(KernelRegistry &r) {
  auto u = [&](uint32_t op, auto fn, uint32_t mask) { r.add(op, fn, mask); };
  u(PK_OP_FILL, k_fill, kAll);
}

void register_conversion_creation_kernels(KernelRegistry &r) {
  auto u = [&](uint32_t op, auto fn, uint32_t mask) { r.add(op, fn, mask); };
  u(PK_OP_CONVERT_ELEMENT_TYPE, k_convert_element_type, kAll);
  u(PK_OP_CLONE, k_clone, kAll);
  u(PK_OP_FULL, k_full, kAll);
  u(PK_OP_SCALAR_TENSOR, k_scalar_tensor, kAll);
  u(PK_OP_IOTA, k_iota, kAll);
  u(PK_OP_MAXIMUM_VALUE, k_extreme_value<true>, kAll);
  u(PK_OP_MINIMUM_VALUE, k_extreme_value<false>, kAll);
  u(PK_OP_PHILOX_UNIFORM, k_philox_uniform, kFloat);
  u(PK_OP_PHILOX_NORMAL, k_philox_normal, kFloat);
  u(PK_OP_PHILOX_RANDINT, k_philox_randint, kReal);
}

}  // namespace pk::cpu::elementwise
