// attention.cpp — scaled_dot_product_attention evaluated directly, with its scores exact.
//
// The decomposition subtracts each row's maximum score from the scores. Scores far larger than their spread
// (q . k = -5e39 + 12 for f32 inputs holding the format's maximum) keep none of the spread in long double: the
// evaluation made both rows' weights equal where the exact ones are e^-6 apart. Here each score is the exact sum
// of its exact products (MPFR), times the scale, and the differences score - max are taken exactly before they
// are rounded to long double; the rest (exp, the normalized weights, the weighted sum of v) follows the
// decomposition in long double, as its wide evaluation would. Special values follow the decomposition: masked
// keys are -inf, a NaN or +inf score or an all -inf row makes the row NaN, 0 * inf in a product is NaN.
#include <mpfr.h>

#include <cmath>
#include <memory>
#include <vector>

#include "mpfr_big.hpp"
#include "oracle_internal.hpp"

namespace pk::oracle {

void scaled_dot_product_attention(const Call &c, std::vector<WTensor> &out) {
  const WTensor &q = c.a(0), &k = c.a(1), &v = c.a(2);
  if (!is_float_dtype(q.dtype))
    unimplemented("scaled_dot_product_attention: dtype " + std::string(meta::dtype_name(q.dtype)));
  const int64_t batch = q.shape[0] * q.shape[1], nl = q.shape[2], e = q.shape[3];
  const int64_t ns = k.shape[2], ev = v.shape[3];
  const bool causal = c.attrs.b("is_causal");
  const long double scale = c.attrs.f("scale");
  WTensor o = c.output(0);
  // Products of two 64-bit significands are exact at 128 bits. Their sum is exact at 4400 bits: the products of
  // f64 values span 2^-2148 (subnormals) to 2^2048, and a score near 2^1025 needs its units (rounding it at
  // 1024 bits moved it by ~1, an e-fold in a weight).
  constexpr mpfr_prec_t kProduct = 128, kSum = 4400, kScaled = kSum + 64;
  std::vector<std::unique_ptr<Big>> products;
  for (int64_t t = 0; t < e; ++t) products.push_back(std::make_unique<Big>(kProduct));
  std::vector<mpfr_ptr> terms(static_cast<size_t>(e));
  Big sum(kSum), scale_big(64, scale), diff(kScaled + 64);
  std::vector<std::unique_ptr<Big>> scores;
  for (int64_t j = 0; j < ns; ++j) scores.push_back(std::make_unique<Big>(kScaled));
  std::vector<bool> masked(static_cast<size_t>(ns));
  std::vector<long double> w(static_cast<size_t>(ns));
  for (int64_t bh = 0; bh < batch; ++bh) {
    for (int64_t i = 0; i < nl; ++i) {
      bool any_nan = false, max_set = false;
      long double max_ld = -HUGE_VALL;  // the maximum when it is not finite
      int64_t max_j = -1;
      for (int64_t j = 0; j < ns; ++j) {
        masked[static_cast<size_t>(j)] = causal && j > i;
        if (masked[static_cast<size_t>(j)]) continue;
        for (int64_t t = 0; t < e; ++t) {
          Big a(64, q.v[static_cast<size_t>((bh * nl + i) * e + t)].re);
          Big b(64, k.v[static_cast<size_t>((bh * ns + j) * e + t)].re);
          mpfr_mul(*products[static_cast<size_t>(t)], a, b, MPFR_RNDN);
          terms[static_cast<size_t>(t)] = *products[static_cast<size_t>(t)];
        }
        if (e > 0) {
          mpfr_sum(sum, terms.data(), static_cast<unsigned long>(e), MPFR_RNDN);
        } else {
          mpfr_set_zero(sum, 1);
        }
        Big &s = *scores[static_cast<size_t>(j)];
        mpfr_mul(s, sum, scale_big, MPFR_RNDN);
        if (mpfr_nan_p(s)) {
          any_nan = true;
        } else if (!max_set || mpfr_greater_p(s, *scores[static_cast<size_t>(max_j)])) {
          max_set = true;
          max_j = j;
        }
      }
      // The row maximum over the masked scores (-inf) too: NaN wins, an all-masked row has -inf.
      const bool finite_max = !any_nan && max_set && mpfr_number_p(*scores[static_cast<size_t>(max_j)]);
      if (any_nan) {
        max_ld = std::numeric_limits<long double>::quiet_NaN();
      } else if (max_set) {
        max_ld = mpfr_get_ld(*scores[static_cast<size_t>(max_j)], MPFR_RNDN);
      }
      Accumulator total;
      for (int64_t j = 0; j < ns; ++j) {
        long double d;
        const size_t sj = static_cast<size_t>(j);
        if (finite_max && !masked[sj]) {
          mpfr_sub(diff, *scores[sj], *scores[static_cast<size_t>(max_j)], MPFR_RNDN);
          d = mpfr_get_ld(diff, MPFR_RNDN);
        } else {
          const long double sc = masked[sj] ? -HUGE_VALL : mpfr_get_ld(*scores[sj], MPFR_RNDN);
          d = sc - max_ld;  // IEEE: -inf - finite = -inf; inf - inf and anything - NaN = NaN
        }
        w[sj] = expl(d);
        total.add(w[sj]);
      }
      const long double denom = total.value();
      for (int64_t col = 0; col < ev; ++col) {
        Accumulator acc;
        for (int64_t j = 0; j < ns; ++j)
          acc.add_product(ro_div(w[static_cast<size_t>(j)], denom),
                          v.v[static_cast<size_t>((bh * ns + j) * ev + col)].re);
        o.v[static_cast<size_t>((bh * nl + i) * ev + col)] = {acc.value(), 0};
      }
    }
  }
  out.push_back(std::move(o));
}

}  // namespace pk::oracle
