// formats.cpp — exact decoding of every dtype and the one rounding to a binary format.
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "oracle_internal.hpp"

namespace pk::oracle {

BinaryFormat format_of(int32_t dtype) {
  switch (dtype) {
    case PK_DTYPE_F16:
      return {5, 10, true};
    case PK_DTYPE_BF16:
      return {8, 7, true};
    case PK_DTYPE_F32:
    case PK_DTYPE_C64:
      return {8, 23, true};
    case PK_DTYPE_F64:
    case PK_DTYPE_C128:
      return {11, 52, true};
    case PK_DTYPE_F8E4M3FN:
      return {4, 3, false};
    case PK_DTYPE_F8E5M2:
      return {5, 2, true};
    default:
      throw std::logic_error("format_of: not a float dtype");
  }
}

// Rounds |x| (finite, > 0) to the format: returns the magnitude's bit pattern, or -1 on overflow.
static int64_t round_magnitude(long double a, const BinaryFormat &f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int emin = 1 - bias;  // exponent of the smallest normal
  const int64_t max_biased = f.ieee ? (1 << f.exp_bits) - 2 : (1 << f.exp_bits) - 1;
  const int64_t max_mantissa = f.ieee ? (int64_t{1} << f.man_bits) - 1 : (int64_t{1} << f.man_bits) - 2;
  // The quantum (value of the last significand bit) of the binade a lies in, clamped at the subnormals.
  int e = ilogbl(a);  // a = 1.xxx * 2^e
  int quantum_exp = (e < emin ? emin : e) - f.man_bits;
  long double scaled = ldexpl(a, -quantum_exp);  // exact: scaling by a power of two
  // Round the scaled value to an integer, ties to even. floorl and the subtraction are exact.
  long double whole = floorl(scaled);
  long double frac = scaled - whole;
  int64_t n = static_cast<int64_t>(whole);
  if (frac > 0.5L || (frac == 0.5L && (n & 1) != 0)) ++n;
  if (n == (int64_t{1} << (f.man_bits + 1))) {  // rounding carried into the next binade
    n >>= 1;
    ++quantum_exp;
  }
  int64_t biased, mantissa;
  if (n < (int64_t{1} << f.man_bits)) {  // subnormal (or zero after rounding)
    biased = 0;
    mantissa = n;
  } else {
    biased = quantum_exp + f.man_bits + bias;
    mantissa = n - (int64_t{1} << f.man_bits);
  }
  if (biased > max_biased || (biased == max_biased && mantissa > max_mantissa)) return -1;
  return (biased << f.man_bits) | mantissa;
}

uint64_t round_to_format(long double x, const BinaryFormat &f, Overflow overflow) {
  const uint64_t sign = std::signbit(x) ? uint64_t{1} << (f.exp_bits + f.man_bits) : 0;
  const uint64_t exp_all_ones = ((uint64_t{1} << f.exp_bits) - 1) << f.man_bits;
  const uint64_t nan_bits =
      f.ieee ? exp_all_ones | (uint64_t{1} << (f.man_bits - 1)) : exp_all_ones | ((uint64_t{1} << f.man_bits) - 1);
  const uint64_t inf_bits = exp_all_ones;
  const uint64_t max_finite =
      f.ieee ? exp_all_ones - (uint64_t{1} << f.man_bits) + ((uint64_t{1} << f.man_bits) - 1) : nan_bits - 1;
  const uint64_t on_overflow = overflow == Overflow::saturate ? max_finite : (f.ieee ? inf_bits : nan_bits);
  if (std::isnan(x)) return sign | nan_bits;
  if (std::isinf(x)) return sign | on_overflow;
  if (x == 0) return sign;
  int64_t m = round_magnitude(fabsl(x), f);
  if (m < 0) return sign | on_overflow;
  return sign | static_cast<uint64_t>(m);
}

long double format_value(uint64_t bits, const BinaryFormat &f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const bool negative = (bits >> (f.exp_bits + f.man_bits)) & 1;
  const int64_t biased = static_cast<int64_t>((bits >> f.man_bits) & ((uint64_t{1} << f.exp_bits) - 1));
  const int64_t mantissa = static_cast<int64_t>(bits & ((uint64_t{1} << f.man_bits) - 1));
  const int64_t max_exp = (int64_t{1} << f.exp_bits) - 1;
  long double v;
  if (f.ieee && biased == max_exp) {
    v = mantissa == 0 ? HUGE_VALL : NAN;
  } else if (!f.ieee && biased == max_exp && mantissa == (int64_t{1} << f.man_bits) - 1) {
    v = NAN;
  } else if (biased == 0) {
    v = ldexpl(static_cast<long double>(mantissa), 1 - bias - f.man_bits);
  } else {
    v = ldexpl(static_cast<long double>(mantissa + (int64_t{1} << f.man_bits)),
               static_cast<int>(biased) - bias - f.man_bits);
  }
  return negative ? -v : v;
}

static uint64_t load_bits(const void *src, size_t n) {
  uint64_t b = 0;
  std::memcpy(&b, src, n);  // little-endian hosts: the low bytes
  return b;
}

static void store_bits(void *dst, uint64_t b, size_t n) {
  std::memcpy(dst, &b, n);
}

Wide load_element(const void *src, int32_t dtype) {
  Wide w;
  switch (dtype) {
    case PK_DTYPE_BOOL:
      w.re = *static_cast<const uint8_t *>(src) != 0 ? 1 : 0;
      break;
    case PK_DTYPE_U8:
      w.re = *static_cast<const uint8_t *>(src);
      break;
    case PK_DTYPE_I8:
      w.re = static_cast<int8_t>(load_bits(src, 1));
      break;
    case PK_DTYPE_I16:
      w.re = static_cast<int16_t>(load_bits(src, 2));
      break;
    case PK_DTYPE_I32:
      w.re = static_cast<int32_t>(load_bits(src, 4));
      break;
    case PK_DTYPE_I64:
      w.re = static_cast<long double>(static_cast<int64_t>(load_bits(src, 8)));
      break;
    case PK_DTYPE_F16:
    case PK_DTYPE_BF16:
      w.re = format_value(load_bits(src, 2), format_of(dtype));
      break;
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      w.re = format_value(load_bits(src, 1), format_of(dtype));
      break;
    case PK_DTYPE_F32: {
      float v;
      std::memcpy(&v, src, 4);
      w.re = v;
      break;
    }
    case PK_DTYPE_F64: {
      double v;
      std::memcpy(&v, src, 8);
      w.re = v;
      break;
    }
    case PK_DTYPE_C64: {
      float v[2];
      std::memcpy(v, src, 8);
      w.re = v[0];
      w.im = v[1];
      break;
    }
    case PK_DTYPE_C128: {
      double v[2];
      std::memcpy(v, src, 16);
      w.re = v[0];
      w.im = v[1];
      break;
    }
    default:
      throw std::logic_error("load_element: unknown dtype");
  }
  return w;
}

void store_rounded(const Wide &w, int32_t dtype, void *dst, Overflow overflow) {
  auto *out = static_cast<uint8_t *>(dst);
  switch (dtype) {
    case PK_DTYPE_BOOL:
      out[0] = w.re != 0 ? 1 : 0;
      break;
    case PK_DTYPE_U8:
    case PK_DTYPE_I8:
    case PK_DTYPE_I16:
    case PK_DTYPE_I32:
    case PK_DTYPE_I64:
      store_bits(dst, static_cast<uint64_t>(static_cast<int64_t>(w.re)), meta::dtype_size(dtype));
      break;
    case PK_DTYPE_F16:
    case PK_DTYPE_BF16:
    case PK_DTYPE_F32:
    case PK_DTYPE_F64:
    case PK_DTYPE_F8E4M3FN:
    case PK_DTYPE_F8E5M2:
      store_bits(dst, round_to_format(w.re, format_of(dtype), overflow), meta::dtype_size(dtype));
      break;
    case PK_DTYPE_C64:
    case PK_DTYPE_C128: {
      size_t half = meta::dtype_size(dtype) / 2;
      store_bits(out, round_to_format(w.re, format_of(dtype), overflow), half);
      store_bits(out + half, round_to_format(w.im, format_of(dtype), overflow), half);
      break;
    }
    default:
      throw std::logic_error("store_rounded: unknown dtype");
  }
}

// --- tensors -----------------------------------------------------------------------------------------------

static int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

int64_t HostTensor::numel() const {
  return product(shape);
}

HostTensor HostTensor::contiguous(int32_t dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (bytes.size() != static_cast<size_t>(t.numel()) * meta::dtype_size(dtype))
    throw std::invalid_argument("HostTensor::contiguous: byte count does not match the shape");
  t.storage = std::move(bytes);
  return t;
}

HostTensor HostTensor::from_complex(int32_t dtype, std::vector<int64_t> shape, const std::vector<Wide> &values) {
  const size_t es = meta::dtype_size(dtype);
  std::vector<uint8_t> bytes(values.size() * es);
  for (size_t i = 0; i < values.size(); ++i) store_rounded(values[i], dtype, bytes.data() + i * es);
  return contiguous(dtype, std::move(shape), std::move(bytes));
}

HostTensor HostTensor::from_values(int32_t dtype, std::vector<int64_t> shape, const std::vector<long double> &values) {
  std::vector<Wide> w(values.size());
  for (size_t i = 0; i < values.size(); ++i) w[i].re = values[i];
  return from_complex(dtype, std::move(shape), w);
}

HostTensor HostTensor::from_pk_tensor(const pk_tensor &t) {
  HostTensor h;
  h.dtype = meta::dtype_id(t.dtype);
  if (h.dtype < 0) throw std::invalid_argument("HostTensor::from_pk_tensor: unknown dtype");
  h.shape.assign(t.shape, t.shape + t.ndim);
  if (t.strides != nullptr) h.strides.assign(t.strides, t.strides + t.ndim);
  uint64_t lo = 0, hi = 0;
  meta::byte_extent(t, lo, hi);
  const auto *base = static_cast<const uint8_t *>(t.data);
  h.storage.assign(base + lo, base + hi);
  h.byte_offset = t.byte_offset - lo;
  return h;
}

Wide HostTensor::at(int64_t i) const {
  const int64_t es = static_cast<int64_t>(meta::dtype_size(dtype));
  int64_t elem = 0;  // element offset of row-major index i
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    int64_t idx = i % shape[k];
    i /= shape[k];
    elem += idx * (strides.empty() ? stride : strides[k]);
    stride *= shape[k];
  }
  int64_t byte = static_cast<int64_t>(byte_offset) + elem * es;
  if (byte < 0 || byte + es > static_cast<int64_t>(storage.size()))
    throw std::out_of_range("HostTensor::at: the view reaches outside its storage");
  return load_element(storage.data() + byte, dtype);
}

int64_t OutputValue::numel() const {
  return product(shape);
}

Wide OutputValue::rounded_at(int64_t i) const {
  return load_element(rounded.data() + static_cast<size_t>(i) * meta::dtype_size(dtype), dtype);
}

uint64_t OutputValue::rounded_bits(int64_t i) const {
  size_t es = meta::dtype_size(dtype);
  return load_bits(rounded.data() + static_cast<size_t>(i) * es, es > 8 ? 8 : es);
}

}  // namespace pk::oracle
