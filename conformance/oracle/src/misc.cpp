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
// exact integer k*n mod N, products accumulated with compensation. Inverse transforms scale by 1/N.
std::vector<Wide> dft(const std::vector<Wide> &x, bool inverse) {
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
    if (inverse) out[k] = {out[k].re / static_cast<long double>(n), out[k].im / static_cast<long double>(n)};
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
}

}  // namespace pk::oracle
