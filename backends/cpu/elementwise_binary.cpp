// elementwise_binary.cpp — the binary elementwise primitives (arithmetic, extrema, shifts, moduli, gcd, float
// functions of two operands, pow, nextafter, bitwise ops), logical and comparison ops (out: bool), complex and
// polar, and the ternary where and fma.
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numeric>
#include <type_traits>

#include "complex_rounding.hpp"
#include "cpu_kernels.hpp"
#include "devmath.hpp"
#include "elementwise.hpp"

namespace pk::cpu::elementwise {
namespace {

// --- binary ops -----------------------------------------------------------------------------------------------------

struct Add {
  static constexpr int64_t grain = kGrainCheap;
  explicit Add(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T> || is_bool_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_same_v<V, bool>)
      return a || b;
    else if constexpr (std::is_integral_v<V>)
      return static_cast<V>(static_cast<uint_of<V>>(a) + static_cast<uint_of<V>>(b));
    else
      return a + b;
  }
};
struct Sub {
  static constexpr int64_t grain = kGrainCheap;
  explicit Sub(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>)
      return static_cast<V>(static_cast<uint_of<V>>(a) - static_cast<uint_of<V>>(b));
    else
      return a - b;
  }
};
struct Mul {
  static constexpr int64_t grain = kGrainCheap;
  explicit Mul(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T> || is_bool_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_same_v<V, bool>)
      return a && b;
    else if constexpr (std::is_integral_v<V>) {
      // Promote to at least unsigned int so u16 * u16 cannot overflow a signed int.
      using W = std::conditional_t<(sizeof(V) < sizeof(unsigned)), unsigned, uint_of<V>>;
      return static_cast<V>(static_cast<W>(static_cast<uint_of<V>>(a)) * static_cast<W>(static_cast<uint_of<V>>(b)));
    } else if constexpr (is_complex_v<V>)
      return devmath_arith(devmath::pk_dm_cmul, a, b);
    else
      return a * b;
  }
};
struct Div {
  static constexpr int64_t grain = kGrainCheap;
  explicit Div(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_numeric_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<V>) {
        if (b == -1) return wrap_neg(a);  // INT_MIN / -1 wraps to INT_MIN
      }
      return static_cast<V>(a / b);
    } else if constexpr (is_complex_v<V>) {
      return devmath_arith(devmath::pk_dm_cdiv, a, b);
    } else {
      return a / b;
    }
  }
};

// maximum / minimum propagate NaN and order -0 below +0; fmax / fmin ignore one NaN operand.
template <bool kMax, bool kIgnoreNan>
struct Extremum {
  static constexpr int64_t grain = kGrainCheap;
  explicit Extremum(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_real_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(a)) return kIgnoreNan ? b : a;
      if (std::isnan(b)) return kIgnoreNan ? a : b;
      if (a == b) return (std::signbit(a) == kMax) ? b : a;  // max(-0, +0) = +0, min(-0, +0) = -0
    }
    if constexpr (kMax)
      return a > b ? a : b;
    else
      return a < b ? a : b;
  }
};
using Maximum = Extremum<true, false>;
using Minimum = Extremum<false, false>;
using Fmax = Extremum<true, true>;
using Fmin = Extremum<false, true>;

// Shifts by >= the width or by a negative amount give 0 (an arithmetic right shift gives the sign fill).
enum class ShiftKind { left, right_arithmetic, right_logical };
template <ShiftKind kKind>
struct Shift {
  static constexpr int64_t grain = kGrainCheap;
  explicit Shift(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T>;
  template <class V>
  V operator()(V a, V s) const {
    constexpr int bits = 8 * sizeof(V);
    const uint64_t u = static_cast<uint_of<V>>(a);
    const bool arithmetic = kKind == ShiftKind::right_arithmetic && std::is_signed_v<V>;
    if (s < 0 || static_cast<int64_t>(s) >= bits) return (arithmetic && a < 0) ? V(-1) : V(0);
    if constexpr (kKind == ShiftKind::left) return static_cast<V>(u << s);
    if (arithmetic) return static_cast<V>(a >> s);
    return static_cast<V>(u >> s);
  }
};

// C fmod (sign of the dividend) and the Python-style remainder (sign of the divisor).
template <bool kPython>
struct Modulus {
  static constexpr int64_t grain = kGrainCostly;
  explicit Modulus(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_real_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<V>) {
        if (b == -1) return 0;
      }
      V r = static_cast<V>(a % b);
      if constexpr (kPython && std::is_signed_v<V>) {
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<V>(r + b);
      }
      return r;
    } else {
      V r = std::fmod(a, b);  // exact
      if constexpr (kPython) {
        if (r != 0 && (std::signbit(r) != std::signbit(b))) r += b;  // one rounding of the exact result
        if (r == 0) r = std::copysign(V(0), b);
      }
      return r;
    }
  }
};

struct Gcd {
  static constexpr int64_t grain = kGrainCostly;
  explicit Gcd(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    using U = uint_of<V>;
    U x = static_cast<U>(a), y = static_cast<U>(b);
    if constexpr (std::is_signed_v<V>) {
      if (a < 0) x = static_cast<U>(U(0) - x);
      if (b < 0) y = static_cast<U>(U(0) - y);
    }
    return static_cast<V>(std::gcd(x, y));  // gcd(INT_MIN, 0) wraps to INT_MIN like abs
  }
};

#define PK_FLOAT_FN2(NAME, ADMITS, EXPR)           \
  struct NAME {                                    \
    static constexpr int64_t grain = kGrainCostly; \
    explicit NAME(const Launch &) {}               \
    template <class T>                             \
    static constexpr bool admits = ADMITS;         \
    template <class V>                             \
    V operator()(V av, V bv) const {               \
      const double a = av, b = bv;                 \
      return static_cast<V>(EXPR);                 \
    }                                              \
  };
PK_FLOAT_FN2(Atan2, is_float_v<T>, std::atan2(a, b))
PK_FLOAT_FN2(Hypot, is_float_v<T>, std::hypot(a, b))
PK_FLOAT_FN2(Copysign, is_float_v<T>, std::copysign(a, b))
PK_FLOAT_FN2(Igamma, is_float_v<T>, devmath::pk_dm_igamma(a, b, 0))
PK_FLOAT_FN2(Igammac, is_float_v<T>, devmath::pk_dm_igamma(a, b, 1))
PK_FLOAT_FN2(Zeta, std::is_floating_point_v<T>, devmath::pk_dm_zeta(a, b))
#undef PK_FLOAT_FN2

struct Pow {
  static constexpr int64_t grain = kGrainCostly;
  explicit Pow(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_float_v<T> || is_complex_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (is_complex_v<V>) {
      using M = math_t<V>;
      if (b == V(0)) return V(1);
      if (a == V(0) && b.imag() == 0 && b.real() > 0) return V(0);
      if (is_finite_complex(a) && is_finite_complex(b) && a != V(0)) {
        // The phase of exp(b log a) needs more bits than M has once |b log a| is large (its error grows with
        // it); 2^20 in double and 2^10 in long double keep that error below an ulp of the output.
        const M w = M(b) * std::log(M(a));
        const double limit = std::is_same_v<V, c64> ? 0x1p20 : 0x1p10;
        if (std::fabs(static_cast<double>(w.real())) > limit || std::fabs(static_cast<double>(w.imag())) > limit)
          return wide_phase_pow(a, b);
      }
      const M r = std::pow(M(a), M(b));
      return V(static_cast<typename V::value_type>(r.real()), static_cast<typename V::value_type>(r.imag()));
    } else {
      return static_cast<V>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

pk_status k_nextafter(const Launch &l) {
  return dispatch<AdmitFloat>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    return map<T, T, T>(l, [](const T &a, const T &b) { return next_after(a, b); });
  });
}

// Bitwise ops keep the dtype (bool: the logical ones).
template <int kOp>  // 0 and, 1 or, 2 xor
struct Bitwise {
  static constexpr int64_t grain = kGrainCheap;
  explicit Bitwise(const Launch &) {}
  template <class T>
  static constexpr bool admits = is_int_v<T> || is_bool_v<T>;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_same_v<V, bool>)
      return kOp == 0 ? (a && b) : kOp == 1 ? (a || b) : (a != b);
    else
      return static_cast<V>(kOp == 0 ? (a & b) : kOp == 1 ? (a | b) : (a ^ b));
  }
};

// Logical and comparison ops (out: bool).
template <int kOp>  // 0 and, 1 or, 2 xor
struct Logical {
  explicit Logical(const Launch &) {}
  template <class T>
  static constexpr bool admits = true;
  template <class V>
  bool operator()(V a, V b) const {
    const bool x = truth(a), y = truth(b);
    return kOp == 0 ? (x && y) : kOp == 1 ? (x || y) : (x != y);
  }
};

enum class Cmp { lt, le, gt, ge, eq, ne };
template <Cmp kCmp>
struct Compare {
  explicit Compare(const Launch &) {}
  template <class T>
  static constexpr bool admits = (kCmp == Cmp::eq || kCmp == Cmp::ne) ? true : is_real_v<T>;
  template <class V>
  bool operator()(V a, V b) const {
    if constexpr (kCmp == Cmp::eq)
      return a == b;
    else if constexpr (kCmp == Cmp::ne)
      return !(a == b);
    else if constexpr (kCmp == Cmp::lt)
      return a < b;
    else if constexpr (kCmp == Cmp::le)
      return a <= b;
    else if constexpr (kCmp == Cmp::gt)
      return a > b;
    else
      return a >= b;
  }
};

// complex(real, imag) and polar(abs, angle): f32 -> c64, f64 -> c128.
struct MakeComplex {
  static constexpr int64_t grain = kGrainCheap;
  explicit MakeComplex(const Launch &) {}
  template <class T>
  static constexpr bool admits = std::is_floating_point_v<T>;
  template <class V>
  std::complex<V> operator()(V re, V im) const {
    return {re, im};
  }
};
struct Polar {
  static constexpr int64_t grain = kGrainCostly;
  explicit Polar(const Launch &) {}
  template <class T>
  static constexpr bool admits = std::is_floating_point_v<T>;
  template <class V>
  std::complex<V> operator()(V r, V theta) const {
    // The device math's (sdk/devmath/complex.h, shared with the other backends): f32 operands are exact in double,
    // the double result is rounded once.
    double out[2];
    devmath::pk_dm_cpolar(static_cast<double>(r), static_cast<double>(theta), out);
    return {static_cast<V>(out[0]), static_cast<V>(out[1])};
  }
};

// --- ternary
// ----------------------------------------------------------------------------------------------------------

pk_status k_where(const Launch &l) {
  return dispatch<AdmitAll>(l, dtype_of(l.inputs[1]), [&](auto tag) {
    using T = decltype(tag);
    return map<T, boolean, T, T>(l, [](const boolean &p, const T &a, const T &b) { return p.v ? a : b; });
  });
}

// fma with one rounding: std::fma for f32 / f64; the 8/16-bit formats take the exact product in double and a
// round-to-odd sum, so the final rounding to the format is the correct one.
pk_status k_fma(const Launch &l) {
  return dispatch<AdmitFloat>(l, dtype_of(l.inputs[0]), [&](auto tag) {
    using T = decltype(tag);
    return map<T, T, T, T>(
        l,
        [](const T &a, const T &b, const T &c) -> T {
          if constexpr (std::is_floating_point_v<T>) {
            return std::fma(a, b, c);
          } else {
            const double p = static_cast<double>(load_value(a)) * static_cast<double>(load_value(b));  // exact
            return store_value<T>(sum_round_to_odd(p, static_cast<double>(load_value(c))));
          }
        },
        kGrainCostly);
  });
}

}  // namespace

void register_binary_kernels(KernelRegistry &r) {
  auto u = [&](uint32_t op, auto fn, uint32_t mask) { r.add(op, fn, mask); };
  // binary
  u(PK_OP_ADD, binary<Add>, mask_of<Add>());
  u(PK_OP_SUB, binary<Sub>, mask_of<Sub>());
  u(PK_OP_MUL, binary<Mul>, mask_of<Mul>());
  u(PK_OP_DIV, binary<Div>, mask_of<Div>());
  u(PK_OP_MAXIMUM, binary<Maximum>, mask_of<Maximum>());
  u(PK_OP_MINIMUM, binary<Minimum>, mask_of<Minimum>());
  u(PK_OP_FMAX, binary<Fmax>, mask_of<Fmax>());
  u(PK_OP_FMIN, binary<Fmin>, mask_of<Fmin>());
  u(PK_OP_SHIFT_LEFT, binary<Shift<ShiftKind::left>>, mask_of<Shift<ShiftKind::left>>());
  u(PK_OP_SHIFT_RIGHT_ARITHMETIC, binary<Shift<ShiftKind::right_arithmetic>>,
    mask_of<Shift<ShiftKind::right_arithmetic>>());
  u(PK_OP_SHIFT_RIGHT_LOGICAL, binary<Shift<ShiftKind::right_logical>>, mask_of<Shift<ShiftKind::right_logical>>());
  u(PK_OP_FMOD, binary<Modulus<false>>, mask_of<Modulus<false>>());
  u(PK_OP_REMAINDER, binary<Modulus<true>>, mask_of<Modulus<true>>());
  u(PK_OP_GCD, binary<Gcd>, mask_of<Gcd>());
  u(PK_OP_POW, binary<Pow>, mask_of<Pow>());
  u(PK_OP_ATAN2, binary<Atan2>, mask_of<Atan2>());
  u(PK_OP_HYPOT, binary<Hypot>, mask_of<Hypot>());
  u(PK_OP_COPYSIGN, binary<Copysign>, mask_of<Copysign>());
  u(PK_OP_IGAMMA, binary<Igamma>, mask_of<Igamma>());
  u(PK_OP_IGAMMAC, binary<Igammac>, mask_of<Igammac>());
  u(PK_OP_ZETA, binary<Zeta>, mask_of<Zeta>());
  u(PK_OP_NEXTAFTER, k_nextafter, kFloat);
  u(PK_OP_BITWISE_AND, binary<Bitwise<0>>, mask_of<Bitwise<0>>());
  u(PK_OP_BITWISE_OR, binary<Bitwise<1>>, mask_of<Bitwise<1>>());
  u(PK_OP_BITWISE_XOR, binary<Bitwise<2>>, mask_of<Bitwise<2>>());
  u(PK_OP_LOGICAL_AND, binary_predicate<Logical<0>>, mask_of<Logical<0>>());
  u(PK_OP_LOGICAL_OR, binary_predicate<Logical<1>>, mask_of<Logical<1>>());
  u(PK_OP_LOGICAL_XOR, binary_predicate<Logical<2>>, mask_of<Logical<2>>());
  u(PK_OP_LT, binary_predicate<Compare<Cmp::lt>>, mask_of<Compare<Cmp::lt>>());
  u(PK_OP_LE, binary_predicate<Compare<Cmp::le>>, mask_of<Compare<Cmp::le>>());
  u(PK_OP_GT, binary_predicate<Compare<Cmp::gt>>, mask_of<Compare<Cmp::gt>>());
  u(PK_OP_GE, binary_predicate<Compare<Cmp::ge>>, mask_of<Compare<Cmp::ge>>());
  u(PK_OP_EQ, binary_predicate<Compare<Cmp::eq>>, mask_of<Compare<Cmp::eq>>());
  u(PK_OP_NE, binary_predicate<Compare<Cmp::ne>>, mask_of<Compare<Cmp::ne>>());
  u(PK_OP_COMPLEX, binary_to_complex<MakeComplex>, mask_of<MakeComplex>());
  u(PK_OP_POLAR, binary_to_complex<Polar>, mask_of<Polar>());
}

void register_ternary_kernels(KernelRegistry &r) {
  auto u = [&](uint32_t op, auto fn, uint32_t mask) { r.add(op, fn, mask); };
  u(PK_OP_WHERE, k_where, kAll);
  u(PK_OP_FMA, k_fma, kFloat);
}

}  // namespace pk::cpu::elementwise
