// reductions.cpp — reductions over a set of axes, arg-reductions along one axis, and cumulative scans.
//
// Float sums accumulate with a compensated accumulator (effectively ~128-bit) whatever the dtype; integer
// sums and products wrap exactly like the dtype's arithmetic.
#include <complex>
#include <limits>

#include "oracle_internal.hpp"

namespace pk::oracle {
namespace {

const long double kNaN = std::numeric_limits<long double>::quiet_NaN();

// Groups the input's elements by output position: out[j] reduces elements groups[j] (in row-major order).
std::vector<std::vector<size_t>> reduce_groups(const std::vector<int64_t> &shape, const std::vector<int64_t> &dims) {
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t d : dims) reduced.at(static_cast<size_t>(d)) = true;
  std::vector<int64_t> out_shape;
  for (size_t k = 0; k < shape.size(); ++k)
    if (!reduced[k]) out_shape.push_back(shape[k]);
  int64_t out_n = 1;
  for (int64_t e : out_shape) out_n *= e;
  std::vector<std::vector<size_t>> groups(static_cast<size_t>(out_n));
  int64_t in_n = 1;
  for (int64_t e : shape) in_n *= e;
  if (in_n == 0) return groups;
  std::vector<int64_t> idx(shape.size(), 0);
  std::vector<int64_t> out_strides = row_major_strides(out_shape);
  size_t i = 0;
  do {
    int64_t j = 0;
    for (size_t k = 0, ok = 0; k < shape.size(); ++k)
      if (!reduced[k]) j += idx[k] * out_strides[ok++];
    groups[static_cast<size_t>(j)].push_back(i++);
  } while (next_index(idx, shape));
  return groups;
}

using Reduce = std::function<Wide(const std::vector<Wide> &, int32_t dt)>;

Kernel reduction(Reduce f) {
  return [f](const Call &c, std::vector<WTensor> &out) {
    const WTensor &a = c.a();
    WTensor o = c.output(0);
    auto groups = reduce_groups(a.shape, c.attrs.ints("dims"));
    std::vector<Wide> vals;
    for (size_t j = 0; j < groups.size(); ++j) {
      vals.clear();
      for (size_t i : groups[j]) vals.push_back(a.v[i]);
      o.v[j] = f(vals, a.dtype);
    }
    out.push_back(std::move(o));
  };
}

Wide sum_of(const std::vector<Wide> &v, int32_t dt) {
  if (is_integral_dtype(dt)) {
    uint64_t s = 0;
    for (const Wide &w : v) s += static_cast<uint64_t>(to_i64(w));
    return {wrap_int(s, dt == PK_DTYPE_BOOL ? PK_DTYPE_I64 : dt), 0};
  }
  Accumulator re, im;
  for (const Wide &w : v) {
    re.add(w.re);
    im.add(w.im);
  }
  return {re.value(), im.value()};
}

Wide prod_of(const std::vector<Wide> &v, int32_t dt) {
  if (is_integral_dtype(dt)) {
    uint64_t p = 1;
    for (const Wide &w : v) p *= static_cast<uint64_t>(to_i64(w));
    return {wrap_int(p, dt), 0};
  }
  if (is_complex_dtype(dt)) {
    std::complex<long double> p = 1;
    for (const Wide &w : v) p *= std::complex<long double>(w.re, w.im);
    return {p.real(), p.imag()};
  }
  long double p = 1;
  for (const Wide &w : v) p *= w.re;  // n roundings at 2^-64 each: far below any output format's ulp
  return {p, 0};
}

// max (sign > 0) or min (sign < 0) with NaN propagation and +0 > -0.
Wide extreme_of(const std::vector<Wide> &v, int sign) {
  if (v.empty()) return {sign > 0 ? -HUGE_VALL : HUGE_VALL, 0};
  long double m = v[0].re;
  for (const Wide &w : v) {
    long double x = w.re;
    if (std::isnan(x) || std::isnan(m)) {
      m = kNaN;
      continue;
    }
    bool better = sign > 0 ? (x > m || (x == m && !std::signbit(x))) : (x < m || (x == m && std::signbit(x)));
    if (better) m = x;
  }
  return {m, 0};
}

// Index of the first extreme element along `dim`. NaN counts as the extreme (the first NaN wins).
Kernel arg_reduction(int sign) {
  return [sign](const Call &c, std::vector<WTensor> &out) {
    const WTensor &a = c.a();
    const int64_t dim = c.attrs.i("dim");
    WTensor o = c.output(0);
    auto groups = reduce_groups(a.shape, {dim});
    for (size_t j = 0; j < groups.size(); ++j) {
      int64_t best = 0;
      long double m = 0;
      for (size_t k = 0; k < groups[j].size(); ++k) {
        long double x = a.v[groups[j][k]].re;
        if (k == 0) {
          m = x;
          continue;
        }
        if (std::isnan(m)) break;
        if (std::isnan(x) || (sign > 0 ? x > m : x < m)) {
          m = x;
          best = static_cast<int64_t>(k);
        }
      }
      o.v[j] = {static_cast<long double>(best), 0};
    }
    out.push_back(std::move(o));
  };
}

// Applies `step` along axis `dim` of every line: out[0] = in[0], out[k] = step(out[k-1], in[k]).
// Float running sums restart a compensated accumulator per line.
Kernel scan(const char *name, int kind) {  // 0 sum, 1 prod, 2 max, 3 min
  return [name, kind](const Call &c, std::vector<WTensor> &out) {
    const WTensor &a = c.a();
    const int64_t dim = c.attrs.i("dim");
    WTensor o = c.output(0);
    if (is_complex_dtype(a.dtype) && kind >= 2) unimplemented(std::string(name) + ": complex");
    const std::vector<int64_t> strides = row_major_strides(a.shape);
    auto lines = reduce_groups(a.shape, {dim});
    for (const auto &line : lines) {
      Accumulator re, im;
      std::vector<Wide> prefix;
      for (size_t k = 0; k < line.size(); ++k) {
        const Wide &x = a.v[line[k]];
        prefix.push_back(x);
        Wide r;
        if (kind == 0) {
          if (is_integral_dtype(a.dtype)) {
            r = sum_of(prefix, a.dtype);
          } else {
            re.add(x.re);
            im.add(x.im);
            r = {re.value(), im.value()};
          }
        } else if (kind == 1) {
          r = prod_of(prefix, a.dtype);
        } else {
          r = extreme_of(prefix, kind == 2 ? 1 : -1);
        }
        o.v[line[k]] = r;
      }
    }
    out.push_back(std::move(o));
  };
}

}  // namespace

Wide reduce_values(int kind, const std::vector<Wide> &v, int32_t dtype) {
  switch (kind) {
    case PK_REDUCE_KIND_SUM:
      return sum_of(v, dtype);
    case PK_REDUCE_KIND_PROD:
      return prod_of(v, dtype);
    case PK_REDUCE_KIND_AMAX:
      return extreme_of(v, 1);
    default:
      return extreme_of(v, -1);
  }
}

void register_reductions(Registry &r) {
  r["sum"] = reduction(sum_of);
  r["prod"] = reduction(prod_of);
  r["amax"] = reduction([](const std::vector<Wide> &v, int32_t dt) {
    if (is_complex_dtype(dt)) unimplemented("amax: complex");
    return extreme_of(v, 1);
  });
  r["amin"] = reduction([](const std::vector<Wide> &v, int32_t dt) {
    if (is_complex_dtype(dt)) unimplemented("amin: complex");
    return extreme_of(v, -1);
  });
  r["any"] = reduction([](const std::vector<Wide> &v, int32_t) {
    for (const Wide &w : v)
      if (w.re != 0 || w.im != 0) return Wide{1, 0};
    return Wide{0, 0};
  });
  r["all"] = reduction([](const std::vector<Wide> &v, int32_t) {
    for (const Wide &w : v)
      if (w.re == 0 && w.im == 0) return Wide{0, 0};
    return Wide{1, 0};
  });
  r["argmax"] = arg_reduction(1);
  r["argmin"] = arg_reduction(-1);
  r["cumsum"] = scan("cumsum", 0);
  r["cumprod"] = scan("cumprod", 1);
  r["cummax"] = scan("cummax", 2);
  r["cummin"] = scan("cummin", 3);
}

}  // namespace pk::oracle
