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

// max (sign > 0) or min (sign < 0) with NaN propagation and +0 > -0. An empty reduction gives the lowest
// (highest) value of the dtype: -inf (+inf) for floats, the integer limits otherwise (an infinity would not fit).
Wide extreme_of(const std::vector<Wide> &v, int sign, int32_t dt) {
  if (v.empty()) {
    if (is_integral_dtype(dt)) return {sign > 0 ? int_min(dt) : int_max(dt), 0};
    if (dt == PK_DTYPE_F8E4M3FN) return {sign > 0 ? -448.0L : 448.0L, 0};  // no infinities: its lowest finite
    return {sign > 0 ? -HUGE_VALL : HUGE_VALL, 0};
  }
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

// sum |x - mean|^2 / (n - correction); NaN when n - correction <= 0. The mean is the compensated sum over n
// (one rounding at 2^-64); every deviation and its square is then exact to ~2^-64 relative and the squares
// are summed compensated: a few 2^-64 relative in all, except where the deviations cancel the mean's own
// rounding (values all equal to within ~2^-64, where the variance is ~2^-128 of the mean squared).
long double variance(const std::vector<Wide> &v, long double correction) {
  const long double n = static_cast<long double>(v.size());
  if (!(n - correction > 0)) return kNaN;
  Accumulator sre, sim;
  for (const Wide &w : v) {
    sre.add(w.re);
    sim.add(w.im);
  }
  const long double mre = sre.value() / n, mim = sim.value() / n;
  Accumulator ss;
  for (const Wide &w : v) {
    const long double dre = w.re - mre, dim = w.im - mim;
    ss.add_product(dre, dre);
    ss.add_product(dim, dim);
  }
  return ro_div(ss.value(), n - correction);
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

// cummax (sign > 0) / cummin: the running extreme and the index of its last occurrence, as PyTorch defines
// them: an element replaces the running value when it is NaN, or when the running value is not NaN and the
// element is >= (<=) it. So NaN sticks (its index moves to each later NaN) and ties, -0 against +0 included,
// move the index (and the value) to the later element.
Kernel running_extreme(const char *name, int sign) {
  return [name, sign](const Call &c, std::vector<WTensor> &out) {
    const WTensor &a = c.a();
    if (is_complex_dtype(a.dtype)) unimplemented(std::string(name) + ": complex");
    WTensor values = c.output(0), indices = c.output(1);
    for (const auto &line : reduce_groups(a.shape, {c.attrs.i("dim")})) {
      long double m = 0;
      int64_t at = 0;
      for (size_t k = 0; k < line.size(); ++k) {
        const long double x = a.v[line[k]].re;
        if (k == 0 || std::isnan(x) || (!std::isnan(m) && (sign > 0 ? x >= m : x <= m))) {
          m = x;
          at = static_cast<int64_t>(k);
        }
        values.v[line[k]] = {m, 0};
        indices.v[line[k]] = {static_cast<long double>(at), 0};
      }
    }
    out.push_back(std::move(values));
    out.push_back(std::move(indices));
  };
}

// logcumsumexp: log(sum_{j <= k} exp(x_j)) along dim, as m + log(sum exp(x_j - m)) with m the running maximum
// (no overflow; every term <= 1 and one of them is 1), compensated sums, round-to-odd final addition. -inf
// terms contribute nothing; +inf gives +inf; NaN gives NaN.
Kernel logcumsumexp() {
  return [](const Call &c, std::vector<WTensor> &out) {
    const WTensor &a = c.a();
    WTensor o = c.output(0);
    for (const auto &line : reduce_groups(a.shape, {c.attrs.i("dim")})) {
      for (size_t k = 0; k < line.size(); ++k) {
        long double m = -HUGE_VALL;
        bool nan = false;
        for (size_t j = 0; j <= k; ++j) {
          const long double x = a.v[line[j]].re;
          nan = nan || std::isnan(x);
          if (x > m) m = x;
        }
        long double r;
        if (nan) {
          r = kNaN;
        } else if (std::isinf(m)) {
          r = m;  // all terms -inf, or one is +inf
        } else {
          Accumulator s;
          for (size_t j = 0; j <= k; ++j) s.add(expl(a.v[line[j]].re - m));
          r = ro_add(m, logl(s.value()));
        }
        o.v[line[k]] = {r, 0};
      }
    }
    out.push_back(std::move(o));
  };
}

// Applies `step` along axis `dim` of every line: out[0] = in[0], out[k] = step(out[k-1], in[k]).
// Float running sums restart a compensated accumulator per line.
//
// Each output extends the previous running value by one term, in the order sum_of / prod_of take a whole
// prefix: the same operations on the same values, so the same results, in time linear in the line. Recomputing
// every prefix from its start was quadratic, and complex products whose partial products overflow go through
// __mulxc3's slow inf/NaN recovery on every multiplication: cumprod of c64/c128 took seconds per quick run and
// far longer on longer lines, long enough to look like a hang.
Kernel scan(int kind) {  // 0 sum, 1 prod
  return [kind](const Call &c, std::vector<WTensor> &out) {
    const WTensor &a = c.a();
    const int64_t dim = c.attrs.i("dim");
    WTensor o = c.output(0);
    const bool integral = is_integral_dtype(a.dtype), complex = is_complex_dtype(a.dtype);
    auto lines = reduce_groups(a.shape, {dim});
    for (const auto &line : lines) {
      Accumulator re, im;
      uint64_t int_sum = 0, int_prod = 1;  // wrap like the dtype's arithmetic, as sum_of / prod_of do
      std::complex<long double> complex_prod = 1;
      long double real_prod = 1;
      for (size_t k = 0; k < line.size(); ++k) {
        const Wide &x = a.v[line[k]];
        Wide r;
        if (kind == 0 && integral) {
          int_sum += static_cast<uint64_t>(to_i64(x));
          r = {wrap_int(int_sum, a.dtype == PK_DTYPE_BOOL ? PK_DTYPE_I64 : a.dtype), 0};
        } else if (kind == 0) {
          re.add(x.re);
          im.add(x.im);
          r = {re.value(), im.value()};
        } else if (integral) {
          int_prod *= static_cast<uint64_t>(to_i64(x));
          r = {wrap_int(int_prod, a.dtype), 0};
        } else if (complex) {
          complex_prod *= std::complex<long double>(x.re, x.im);
          r = {complex_prod.real(), complex_prod.imag()};
        } else {
          real_prod *= x.re;
          r = {real_prod, 0};
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
      return extreme_of(v, 1, dtype);
    default:
      return extreme_of(v, -1, dtype);
  }
}

// log_softmax along dim, as its decomposition (sh = x - max; out = sh - log(sum exp(sh))) but with
// log(sum exp(sh)) computed as log1p of (sum - 1): the terms equal to the maximum contribute exactly 1 each, the
// others are summed compensated. The decomposition's log of a long double sum just above 1 has an absolute
// error of 2^-64, which is a large relative error in results near 0 (14 f64 ulp at -1.7e-5, beyond the op's
// 4-ulp bound). Non-finite maxima follow the decomposition (NaN, or the infinities' NaN and -inf results).
void log_softmax(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a();
  if (!is_float_dtype(a.dtype)) unimplemented("log_softmax: dtype " + std::string(meta::dtype_name(a.dtype)));
  WTensor o = c.output(0);
  for (const auto &line : reduce_groups(a.shape, {c.attrs.i("dim")})) {
    std::vector<Wide> vals;
    for (size_t i : line) vals.push_back(a.v[i]);
    const long double m = extreme_of(vals, 1, a.dtype).re;
    std::vector<long double> sh(line.size());
    for (size_t k = 0; k < line.size(); ++k) sh[k] = ro_sub(vals[k].re, m);
    long double lse;
    if (std::isfinite(m)) {
      Accumulator t;  // sum of exp(sh) minus 1
      int64_t ones = 0;
      for (long double x : sh) {
        if (x == 0)
          ++ones;
        else
          t.add(expl(x));
      }
      t.add(static_cast<long double>(ones - 1));
      lse = log1pl(t.value());
    } else {
      Accumulator s;
      for (long double x : sh) s.add(expl(x));
      lse = logl(s.value());
    }
    for (size_t k = 0; k < line.size(); ++k) o.v[line[k]] = {ro_sub(sh[k], lse), 0};
  }
  out.push_back(std::move(o));
}

void register_direct_composites(Registry &r) {
  r["log_softmax"] = log_softmax;
  r["scaled_dot_product_attention"] = scaled_dot_product_attention;
  register_direct_activation_composites(r);
}

void register_reductions(Registry &r) {
  r["sum"] = reduction(sum_of);
  r["prod"] = reduction(prod_of);
  r["amax"] = reduction([](const std::vector<Wide> &v, int32_t dt) {
    if (is_complex_dtype(dt)) unimplemented("amax: complex");
    return extreme_of(v, 1, dt);
  });
  r["amin"] = reduction([](const std::vector<Wide> &v, int32_t dt) {
    if (is_complex_dtype(dt)) unimplemented("amin: complex");
    return extreme_of(v, -1, dt);
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
  r["xor_sum"] = reduction([](const std::vector<Wide> &v, int32_t dt) {
    uint64_t x = 0;
    for (const Wide &w : v) x ^= static_cast<uint64_t>(to_i64(w));
    return Wide{wrap_int(x, dt), 0};
  });
  r["var"] = [](const Call &c, std::vector<WTensor> &out) {
    const WTensor &a = c.a();
    WTensor o = c.output(0);
    const long double correction = static_cast<long double>(c.attrs.f("correction"));
    auto groups = reduce_groups(a.shape, c.attrs.ints("dims"));
    std::vector<Wide> vals;
    for (size_t j = 0; j < groups.size(); ++j) {
      vals.clear();
      for (size_t i : groups[j]) vals.push_back(a.v[i]);
      o.v[j] = {variance(vals, correction), 0};
    }
    out.push_back(std::move(o));
  };
  r["argmax"] = arg_reduction(1);
  r["argmin"] = arg_reduction(-1);
  r["cumsum"] = scan(0);
  r["cumprod"] = scan(1);
  r["logcumsumexp"] = logcumsumexp();
  r["cummax"] = running_extreme("cummax", 1);
  r["cummin"] = running_extreme("cummin", -1);
}

}  // namespace pk::oracle
