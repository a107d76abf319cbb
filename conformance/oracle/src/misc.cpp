// misc.cpp — sorting, top-k, the discrete Fourier transform and counter-based RNG.
#include <algorithm>
#include <complex>
#include <numeric>

#include "oracle_internal.hpp"

namespace pk::oracle {
namespace {

// Total order used by sort and topk: NaN above +inf (so ascending puts NaN last, descending first); -0 and +0
// compare equal (their order is kept: stable). Integers compare exactly.
bool less_nan_last(const Wide &x, const Wide &y) {
  if (std::isnan(x.re)) return false;
  if (std::isnan(y.re)) return true;
  return x.re < y.re;
}

// The element positions of every line along `dim` (row-major over the other axes).
std::vector<std::vector<size_t>> lines_along(const std::vector<int64_t> &shape, int64_t dim) {
  std::vector<int64_t> outer = shape;
  const int64_t n = shape.at(static_cast<size_t>(dim));
  outer[static_cast<size_t>(dim)] = 1;
  const std::vector<int64_t> st = row_major_strides(shape);
  std::vector<std::vector<size_t>> lines;
  int64_t total = 1;
  for (int64_t e : outer) total *= e;
  if (total == 0) return lines;
  std::vector<int64_t> idx(shape.size(), 0);
  do {
    int64_t base = 0;
    for (size_t k = 0; k < idx.size(); ++k) base += idx[k] * st[k];
    std::vector<size_t> line;
    for (int64_t j = 0; j < n; ++j) line.push_back(static_cast<size_t>(base + j * st[static_cast<size_t>(dim)]));
    lines.push_back(std::move(line));
  } while (next_index(idx, outer));
  return lines;
}

// Stable order of a line's elements: ascending, or descending (ties keep their original order either way).
std::vector<size_t> stable_order(const WTensor &a, const std::vector<size_t> &line, bool descending) {
  std::vector<size_t> order(line.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) {
    return descending ? less_nan_last(a.v[line[j]], a.v[line[i]]) : less_nan_last(a.v[line[i]], a.v[line[j]]);
  });
  return order;
}

bool flag(const Call &c, const char *name, bool fallback) {
  return c.attrs.has(name) ? c.attrs.b(name) : fallback;
}

// sort: values (and, if the op has a second output, the indices) along dim.
void sort(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a();
  if (is_complex_dtype(a.dtype)) unimplemented("sort: complex");
  const int64_t dim = c.attrs.i("dim");
  const bool desc = flag(c, "descending", false);
  WTensor values = c.output(0);
  WTensor indices = c.out_types.size() > 1 ? c.output(1) : WTensor{};
  for (const auto &line : lines_along(a.shape, dim)) {
    std::vector<size_t> order = stable_order(a, line, desc);
    for (size_t j = 0; j < line.size(); ++j) {
      values.v[line[j]] = a.v[line[order[j]]];
      if (c.out_types.size() > 1) indices.v[line[j]] = {static_cast<long double>(order[j]), 0};
    }
  }
  out.push_back(std::move(values));
  if (c.out_types.size() > 1) out.push_back(std::move(indices));
}

void argsort(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a();
  if (is_complex_dtype(a.dtype)) unimplemented("argsort: complex");
  const int64_t dim = c.attrs.i("dim");
  WTensor indices = c.output(0);
  for (const auto &line : lines_along(a.shape, dim)) {
    std::vector<size_t> order = stable_order(a, line, flag(c, "descending", false));
    for (size_t j = 0; j < line.size(); ++j) indices.v[line[j]] = {static_cast<long double>(order[j]), 0};
  }
  out.push_back(std::move(indices));
}

// topk: the k largest (or smallest) along dim, sorted, ties by lower index first; values and indices.
void topk(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a();
  if (is_complex_dtype(a.dtype)) unimplemented("topk: complex");
  const int64_t dim = c.attrs.i("dim");
  const int64_t k = c.attrs.i("k");
  const bool largest = flag(c, "largest", true);
  WTensor values = c.output(0), indices = c.output(1);
  auto out_lines = lines_along(values.shape, dim);
  auto in_lines = lines_along(a.shape, dim);
  for (size_t l = 0; l < in_lines.size(); ++l) {
    std::vector<size_t> order = stable_order(a, in_lines[l], largest);
    for (int64_t j = 0; j < k; ++j) {
      values.v[out_lines[l][static_cast<size_t>(j)]] = a.v[in_lines[l][order[static_cast<size_t>(j)]]];
      indices.v[out_lines[l][static_cast<size_t>(j)]] = {static_cast<long double>(order[static_cast<size_t>(j)]), 0};
    }
  }
  out.push_back(std::move(values));
  out.push_back(std::move(indices));
}

// Direct O(n^2) DFT along one axis in long double: X[k] = sum_n x[n] e^(-+2 pi i k n / N), twiddles from the
// exact integer k*n mod N, products accumulated with compensation. Inverse transforms scale by 1/N if
// `normalize`.
std::vector<Wide> dft(const std::vector<Wide> &x, bool inverse, bool normalize = true) {
  const size_t n = x.size();
  const long double two_pi = 6.283185307179586476925286766559005768L;
  std::vector<Wide> out(n);
  for (size_t k = 0; k < n; ++k) {
    Accumulator re, im;
    for (size_t j = 0; j < n; ++j) {
      const long double angle = two_pi * static_cast<long double>((k * j) % n) / static_cast<long double>(n);
      const long double cr = cosl(angle), ci = inverse ? sinl(angle) : -sinl(angle);
      re.add_product(x[j].re, cr);
      re.add_product(-x[j].im, ci);
      im.add_product(x[j].re, ci);
      im.add_product(x[j].im, cr);
    }
    out[k] = {re.value(), im.value()};
    if (inverse && normalize)
      out[k] = {out[k].re / static_cast<long double>(n), out[k].im / static_cast<long double>(n)};
  }
  return out;
}

void fft_c2c(const Call &c, std::vector<WTensor> &out, bool inverse) {
  const WTensor &a = c.a();
  const int64_t dim = c.attrs.has("dim") ? c.attrs.i("dim") : a.rank() - 1;
  WTensor o = c.output(0);
  if (o.shape != a.shape) unimplemented(c.name() + ": only same-length transforms");
  for (const auto &line : lines_along(a.shape, dim)) {
    std::vector<Wide> x;
    for (size_t p : line) x.push_back(a.v[p]);
    std::vector<Wide> y = dft(x, inverse);
    for (size_t j = 0; j < line.size(); ++j) o.v[line[j]] = y[j];
  }
  out.push_back(std::move(o));
}

// fft_c2c: the unnormalized DFT over each axis of dims in turn (the multi-axis DFT is separable), the sign of
// the exponent from `forward`. Each pass is a compensated long double DFT: a few 2^-64 of the norm per axis.
void fft_c2c_dims(const Call &c, std::vector<WTensor> &out) {
  const bool forward = c.attrs.b("forward");
  WTensor o = c.output(0);
  o.v = c.a().v;
  for (int64_t dim : c.attrs.ints("dims")) {
    for (const auto &line : lines_along(o.shape, dim)) {
      std::vector<Wide> x;
      for (size_t p : line) x.push_back(o.v[p]);
      std::vector<Wide> y = dft(x, !forward, false);
      for (size_t j = 0; j < line.size(); ++j) o.v[line[j]] = y[j];
    }
  }
  out.push_back(std::move(o));
}

// fft_r2c: the forward DFT of a real tensor over dims; onesided keeps entries 0 .. n/2 of the last axis of dims.
void fft_r2c(const Call &c, std::vector<WTensor> &out) {
  const std::vector<int64_t> dims = c.attrs.ints("dims");
  WTensor full = c.a();
  for (int64_t dim : dims) {
    for (const auto &line : lines_along(full.shape, dim)) {
      std::vector<Wide> x;
      for (size_t p : line) x.push_back(full.v[p]);
      std::vector<Wide> y = dft(x, false, false);
      for (size_t j = 0; j < line.size(); ++j) full.v[line[j]] = y[j];
    }
  }
  WTensor o = c.output(0);
  if (o.numel() > 0) {  // the output is the leading part of the full transform along the last axis of dims
    const std::vector<int64_t> fs = row_major_strides(full.shape);
    std::vector<int64_t> idx(o.shape.size(), 0);
    size_t i = 0;
    do {
      int64_t off = 0;
      for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * fs[k];
      o.v[i++] = full.v[static_cast<size_t>(off)];
    } while (next_index(idx, o.shape));
  }
  out.push_back(std::move(o));
}

// fft_c2r: the unnormalized inverse of a onesided fft_r2c. The other axes of dims are inverse c2c transforms;
// the last one extends its n/2 + 1 entries by Hermitian symmetry (X[n - k] = conj X[k]) to n = last_dim_size,
// transforms, and keeps the real part (so the imaginary parts of X[0] and X[n/2] are ignored, as in
// numpy.fft.irfft).
void fft_c2r(const Call &c, std::vector<WTensor> &out) {
  const std::vector<int64_t> dims = c.attrs.ints("dims");
  if (dims.empty()) invalid(c.name() + ": dims is empty");
  const int64_t last = dims.back(), n = c.attrs.i("last_dim_size");
  WTensor a = c.a();
  for (size_t d = 0; d + 1 < dims.size(); ++d) {
    for (const auto &line : lines_along(a.shape, dims[d])) {
      std::vector<Wide> x;
      for (size_t p : line) x.push_back(a.v[p]);
      std::vector<Wide> y = dft(x, true, false);
      for (size_t j = 0; j < line.size(); ++j) a.v[line[j]] = y[j];
    }
  }
  WTensor o = c.output(0);
  const auto in_lines = lines_along(a.shape, last), out_lines = lines_along(o.shape, last);
  for (size_t l = 0; l < in_lines.size(); ++l) {
    const auto &line = in_lines[l];
    std::vector<Wide> x(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      const int64_t m = k < static_cast<int64_t>(line.size()) ? k : n - k;
      if (m >= static_cast<int64_t>(line.size())) invalid(c.name() + ": too few entries for last_dim_size");
      const Wide &w = a.v[line[static_cast<size_t>(m)]];
      x[static_cast<size_t>(k)] = m == k ? w : Wide{w.re, -w.im};
    }
    std::vector<Wide> y = dft(x, true, false);
    for (size_t j = 0; j < out_lines[l].size(); ++j) o.v[out_lines[l][j]] = {y[j].re, 0};
  }
  out.push_back(std::move(o));
}

// searchsorted: the insertion index of each value into the 1-D ascending sequence, in the sort's total order
// (NaN above +inf, -0 equal to +0): the count of elements below the value (left) or not above it (right).
void searchsorted(const Call &c, std::vector<WTensor> &out) {
  const WTensor &seq = c.a(0), &values = c.a(1);
  const bool right = c.attrs.b("right");
  WTensor o = c.output(0);
  for (size_t i = 0; i < o.v.size(); ++i) {
    int64_t n = 0;
    for (const Wide &e : seq.v) n += right ? !less_nan_last(values.v[i], e) : less_nan_last(e, values.v[i]);
    o.v[i] = {static_cast<long double>(n), 0};
  }
  out.push_back(std::move(o));
}

// --- counter-based RNG ----------------------------------------------------------------------------------------
// The table's mapping: element i (row-major) reads the block Philox4x32-10(counter words (c & 0xffffffff,
// c >> 32, 0, 0) with the 64-bit c = offset + floor(i / 4) (wrapping mod 2^64), key words (seed & 0xffffffff,
// (uint64) seed >> 32)).
void philox_block(int64_t offset, int64_t seed, int64_t i, uint32_t w[4]) {
  const uint64_t c = static_cast<uint64_t>(offset) + static_cast<uint64_t>(i) / 4;
  const uint64_t k = static_cast<uint64_t>(seed);
  const uint32_t counter[4] = {static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0, 0};
  const uint32_t key[2] = {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
  philox4x32_10(counter, key, w);
}

// The largest value of float dtype `dt` not above v (rounding toward -inf). Overflow of a positive value gives
// the largest finite value; of a negative one -inf (NaN in the finite-only e4m3fn); inf and NaN stay.
long double round_down_to(long double v, int32_t dt) {
  if (!std::isfinite(v)) return v;
  const BinaryFormat f = format_of(dt);
  uint64_t bits = round_to_format(v, f, Overflow::saturate);
  const long double r = format_value(bits, f);
  if (r <= v) return r;
  // the neighbour below r: one step up in magnitude for negative r (-0 included: it becomes the smallest
  // negative subnormal), one step down for positive r
  bits = std::signbit(r) ? bits + 1 : bits - 1;
  return format_value(bits, f);
}

// Rounds a long double to f64 once, to nearest: x must be round-to-odd (ro_*) so that this is the correct
// rounding of the exact value; this is how "computed in f64" steps are reproduced exactly.
long double to_f64(long double x) {
  return static_cast<double>(x);
}

// philox_uniform: u = word * 2^-32 (exact); low + (high - low) * u with each of the three operations rounded
// to f64, as the table says; then rounded down to the dtype. The wide value is that final dtype value (the
// op's result is defined by this rounding down, not by a nearest rounding of an exact value).
void philox_uniform(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  const int64_t seed = c.attrs.i("seed"), offset = c.attrs.i("offset");
  const long double low = c.attrs.f("low"), high = c.attrs.f("high");
  const long double span = to_f64(ro_sub(high, low));
  uint32_t w[4];
  for (size_t i = 0; i < o.v.size(); ++i) {
    if (i % 4 == 0) philox_block(offset, seed, static_cast<int64_t>(i), w);
    const long double u = ldexpl(w[i % 4], -32);
    const long double v = to_f64(ro_add(low, to_f64(ro_mul(span, u))));
    o.v[i] = {round_down_to(v, o.dtype), 0};
  }
  out.push_back(std::move(o));
}

// (sin 2 pi u, cos 2 pi u) for u in [0, 1) exact: u = n / 4 + f with n = round(4 u) and |f| <= 1/8 exact, so the
// long double angle 2 pi f is small and results near the zeros keep their relative accuracy.
void sincos_2pi(long double u, long double &s, long double &co) {
  const long double n = nearbyintl(4 * u);
  const long double f = u - n / 4;
  const long double theta = 6.283185307179586476925286766559005768L * f;
  const long double sf = sinl(theta), cf = cosl(theta);
  switch (static_cast<int>(n) & 3) {
    case 0:
      s = sf, co = cf;
      break;
    case 1:
      s = cf, co = -sf;
      break;
    case 2:
      s = -sf, co = -cf;
      break;
    default:
      s = -cf, co = sf;
      break;
  }
}

// philox_normal: Box-Muller on word pairs (w0, w1) -> elements 4k, 4k+1 and (w2, w3) -> 4k+2, 4k+3:
// u1 = (w + 1) 2^-32 in (0, 1], u2 = w' 2^-32, r = sqrt(-2 ln u1), z = r cos(2 pi u2) or r sin(2 pi u2); the value
// mean + std * z in long double (a few 2^-64 relative), rounded once. ln u1 near 1 is log1p of the exact u1 - 1.
void philox_normal(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  const int64_t seed = c.attrs.i("seed"), offset = c.attrs.i("offset");
  const long double mean = c.attrs.f("mean"), sd = c.attrs.f("std");
  uint32_t w[4];
  for (size_t i = 0; i < o.v.size(); ++i) {
    if (i % 4 == 0) philox_block(offset, seed, static_cast<int64_t>(i), w);
    const size_t pair = (i % 4) / 2;
    const long double u1 = ldexpl(static_cast<long double>(w[2 * pair]) + 1, -32);
    const long double u2 = ldexpl(w[2 * pair + 1], -32);
    const long double ln_u1 = u1 < 0.5L ? logl(u1) : log1pl(u1 - 1);
    const long double r = sqrtl(-2 * ln_u1);
    long double s, co;
    sincos_2pi(u2, s, co);
    const long double z = r * (i % 2 == 0 ? co : s);
    o.v[i] = {ro_fma(sd, z, mean), 0};
  }
  out.push_back(std::move(o));
}

// philox_randint: low + (word mod (high - low)), exact (the shape rule admits only 1 <= high - low <= 2^32),
// then converted to the integer dtype (wrapping, as integer conversions do).
void philox_randint(const Call &c, std::vector<WTensor> &out) {
  WTensor o = c.output(0);
  const int64_t seed = c.attrs.i("seed"), offset = c.attrs.i("offset");
  const int64_t low = c.attrs.i("low"), high = c.attrs.i("high");
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  if (!(low < high) || span > (uint64_t{1} << 32)) invalid(c.name() + ": high - low must be in [1, 2^32]");
  uint32_t w[4];
  for (size_t i = 0; i < o.v.size(); ++i) {
    if (i % 4 == 0) philox_block(offset, seed, static_cast<int64_t>(i), w);
    o.v[i] = {wrap_int(static_cast<uint64_t>(low) + w[i % 4] % span, o.dtype), 0};
  }
  out.push_back(std::move(o));
}

}  // namespace

// Philox4x32-10 exactly as published (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as
// 1, 2, 3", SC'11), the Random123 reference: 10 rounds; each round multiplies counter words 0 and 2 by M0
// and M1 (64-bit products split into hi/lo), mixes in the key, then bumps the key by the Weyl constants.
void philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(M0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(M1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    if (round < 9) {
      k0 += W0;
      k1 += W1;
    }
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

void register_misc(Registry &r) {
  r["sort"] = sort;
  r["argsort"] = argsort;
  r["topk"] = topk;
  r["fft"] = [](const Call &c, std::vector<WTensor> &out) {
    fft_c2c(c, out, c.attrs.has("inverse") && c.attrs.b("inverse"));
  };
  r["ifft"] = [](const Call &c, std::vector<WTensor> &out) { fft_c2c(c, out, true); };
  r["fft_c2c"] = fft_c2c_dims;
  r["fft_r2c"] = fft_r2c;
  r["fft_c2r"] = fft_c2r;
  r["searchsorted"] = searchsorted;
  r["philox_uniform"] = philox_uniform;
  r["philox_normal"] = philox_normal;
  r["philox_randint"] = philox_randint;
}

}  // namespace pk::oracle
