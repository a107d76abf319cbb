// The device math's steps of the complex reductions (sdk/devmath/complex.h: pk_dm_cprod_*, pk_dm_csum_*), which the
// OpenCL backend's work-group combines and the code generator's loops both take, against values worked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "devmath.hpp"

namespace {

namespace dm = pk::devmath;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMax = std::numeric_limits<double>::max();

// prod of the terms as the reductions take it: each term normalized, multiplied into the running value.
std::vector<double> product(const std::vector<std::vector<double>> &terms) {
  double acc[3] = {0.5, 0.0, 1.0}, t[3], r[3];
  for (const auto &z : terms) {
    dm::pk_dm_cprod_norm(z[0], z[1], 0.0, t);
    dm::pk_dm_cprod_mul(acc[0], acc[1], acc[2], t[0], t[1], t[2], r);
    for (int k = 0; k < 3; ++k) acc[k] = r[k];
  }
  double v[2];
  dm::pk_dm_cprod_value(acc[0], acc[1], acc[2], v);
  return {v[0], v[1]};
}

// sum of the terms: each term's state added to the running one.
std::vector<double> sum(const std::vector<std::vector<double>> &terms) {
  double a[6] = {0, 0, 0, 0, 0, 0}, t[6], r[6];
  for (const auto &z : terms) {
    dm::pk_dm_csum_term(z[0], z[1], t);
    dm::pk_dm_csum_add(a[0], a[1], a[2], a[3], a[4], a[5], t[0], t[1], t[2], t[3], t[4], t[5], r);
    for (int k = 0; k < 6; ++k) a[k] = r[k];
  }
  return {dm::pk_dm_csum_part(a[0], a[2], a[4]), dm::pk_dm_csum_part(a[1], a[3], a[5])};
}

TEST(DevmathCreduce, ProductsKeepTheirScale) {
  // (2^600 i)(2^600)(2^-700 i) = -2^500: a double running product overflows after the second factor.
  EXPECT_EQ(product({{0.0, 0x1p600}, {0x1p600, 0.0}, {0.0, 0x1p-700}}), (std::vector<double>{-0x1p500, 0.0}));
  // (1 + i)^4 = -4; (3 + 4i)(3 - 4i) = 25.
  EXPECT_EQ(product({{1, 1}, {1, 1}, {1, 1}, {1, 1}}), (std::vector<double>{-4.0, 0.0}));
  EXPECT_EQ(product({{3, 4}, {3, -4}}), (std::vector<double>{25.0, 0.0}));
  // The least subnormal times 2^1074 is 1, through values a double product would flush to 0.
  EXPECT_EQ(product({{0x1p-1074, 0.0}, {0x1p-1074, 0.0}, {0x1p1023, 0.0}, {0x1p1023, 0.0}, {0x1p102, 0.0}}),
            (std::vector<double>{1.0, 0.0}));
  // Beyond the range: (2^1000)^2 is an infinity, (2^-1000)^2 a zero; an infinite factor is Annex G's product.
  EXPECT_EQ(product({{0x1p1000, 0.0}, {0x1p1000, 0.0}})[0], kInf);
  EXPECT_EQ(product({{0x1p-1000, 0.0}, {0x1p-1000, 0.0}})[0], 0.0);
  const std::vector<double> g = product({{kInf, 0.0}, {1.0, 1.0}});
  EXPECT_EQ(g[0], kInf);
  EXPECT_EQ(g[1], kInf);
}

TEST(DevmathCreduce, SumsMeetInfinitiesAsExactArithmeticDoes) {
  // max + max - max = max (the scaled sum where the plain one overflows); max + max - inf = -inf, not NaN.
  EXPECT_EQ(sum({{kMax, 1.0}, {kMax, 2.0}, {-kMax, 3.0}}), (std::vector<double>{kMax, 6.0}));
  EXPECT_EQ(sum({{kMax, 0.0}, {kMax, 0.0}, {-kInf, 0.0}})[0], -kInf);
  // inf - inf and a NaN term are NaN in their part only.
  const std::vector<double> n = sum({{kInf, 1.0}, {-kInf, 2.0}});
  EXPECT_TRUE(std::isnan(n[0]));
  EXPECT_EQ(n[1], 3.0);
  const std::vector<double> q = sum({{1.0, std::nan("")}, {2.0, 5.0}});
  EXPECT_EQ(q[0], 3.0);
  EXPECT_TRUE(std::isnan(q[1]));
}

}  // namespace
