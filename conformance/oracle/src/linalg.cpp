// linalg.cpp — matmul and friends. Every dot product accumulates exactly-ish (compensated long double with
// exact products), so the result is far closer to the truth than any backend's.
#include <algorithm>
#include <cmath>
#include <complex>

#include "oracle_internal.hpp"

namespace pk::oracle {
namespace {

// Accumulates sum_k a_k * b_k for the dtype class: wraps for integers, compensated for floats and complex.
class Dot {
 public:
  explicit Dot(int32_t dtype) : dtype_(dtype) {}
  void add(const Wide &a, const Wide &b) {
    if (is_integral_dtype(dtype_)) {
      ints_ += static_cast<uint64_t>(to_i64(a)) * static_cast<uint64_t>(to_i64(b));
      return;
    }
    if (is_complex_dtype(dtype_) &&
        !(std::isfinite(a.re) && std::isfinite(a.im) && std::isfinite(b.re) && std::isfinite(b.im))) {
      // A term with an infinite or NaN part is the complex product `mul` gives (C99 Annex G recovers
      // infinities: (inf, 0) x (1, 1) is (inf, inf), not (inf, NaN) as the four real products give).
      const std::complex<long double> p = std::complex<long double>(a.re, a.im) * std::complex<long double>(b.re, b.im);
      re_.add(p.real());
      im_.add(p.imag());
      return;
    }
    re_.add_product(a.re, b.re);
    if (is_complex_dtype(dtype_)) {
      re_.add_product(-a.im, b.im);
      im_.add_product(a.re, b.im);
      im_.add_product(a.im, b.re);
    }
  }
  Wide value() const {
    if (dtype_ == PK_DTYPE_BOOL) return {ints_ != 0 ? 1.0L : 0.0L, 0};
    if (is_int_dtype(dtype_)) return {wrap_int(ints_, dtype_), 0};
    return {re_.value(), is_complex_dtype(dtype_) ? im_.value() : 0};
  }

 private:
  int32_t dtype_;
  uint64_t ints_ = 0;
  Accumulator re_, im_;
};

// [..., M, K] x [..., K, N] -> [..., M, N]; leading (batch) extents equal. Rank 1 operands are not taken.
void matmul(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a(0), &b = c.a(1);
  WTensor o = c.output(0);
  if (a.rank() < 2 || b.rank() < 2 || a.rank() != b.rank()) unimplemented("matmul: only [..., M, K] x [..., K, N]");
  const int r = a.rank();
  const int64_t M = a.shape[r - 2], K = a.shape[r - 1], N = b.shape[r - 1];
  int64_t batch = 1;
  for (int k = 0; k < r - 2; ++k) batch *= a.shape[k];
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        Dot d(a.dtype);
        for (int64_t k = 0; k < K; ++k)
          d.add(a.v[static_cast<size_t>(t * M * K + i * K + k)], b.v[static_cast<size_t>(t * K * N + k * N + j)]);
        o.v[static_cast<size_t>(t * M * N + i * N + j)] = d.value();
      }
  out.push_back(std::move(o));
}

// XLA DotGeneral: output axes are the batch axes, then a's free axes, then b's free axes (each in order); every
// output element is the compensated sum over all contracting index tuples.
void dot_general(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a(0), &b = c.a(1);
  WTensor o = c.output(0);
  const std::vector<int64_t> lb = c.attrs.ints("lhs_batch"), rb = c.attrs.ints("rhs_batch");
  const std::vector<int64_t> lc = c.attrs.ints("lhs_contract"), rc = c.attrs.ints("rhs_contract");
  auto free_axes = [](int rank, const std::vector<int64_t> &x, const std::vector<int64_t> &y) {
    std::vector<int64_t> f;
    for (int64_t k = 0; k < rank; ++k)
      if (std::find(x.begin(), x.end(), k) == x.end() && std::find(y.begin(), y.end(), k) == y.end()) f.push_back(k);
    return f;
  };
  const std::vector<int64_t> lf = free_axes(a.rank(), lb, lc), rf = free_axes(b.rank(), rb, rc);
  std::vector<int64_t> cshape;  // the contracting extents
  for (int64_t k : lc) cshape.push_back(a.shape[static_cast<size_t>(k)]);
  const std::vector<int64_t> as = row_major_strides(a.shape), bs = row_major_strides(b.shape);
  int64_t cn = 1;
  for (int64_t e : cshape) cn *= e;
  if (o.numel() > 0) {
    std::vector<int64_t> idx(o.shape.size(), 0);
    size_t i = 0;
    do {
      // the output index fixes a's and b's batch and free axes
      int64_t abase = 0, bbase = 0;
      size_t p = 0;
      for (size_t k = 0; k < lb.size(); ++k, ++p) {
        abase += idx[p] * as[static_cast<size_t>(lb[k])];
        bbase += idx[p] * bs[static_cast<size_t>(rb[k])];
      }
      for (int64_t k : lf) abase += idx[p++] * as[static_cast<size_t>(k)];
      for (int64_t k : rf) bbase += idx[p++] * bs[static_cast<size_t>(k)];
      Dot d(a.dtype);
      if (cn > 0) {
        std::vector<int64_t> cidx(cshape.size(), 0);
        do {
          int64_t ao = abase, bo = bbase;
          for (size_t k = 0; k < cidx.size(); ++k) {
            ao += cidx[k] * as[static_cast<size_t>(lc[k])];
            bo += cidx[k] * bs[static_cast<size_t>(rc[k])];
          }
          d.add(a.v[static_cast<size_t>(ao)], b.v[static_cast<size_t>(bo)]);
        } while (next_index(cidx, cshape));
      }
      o.v[i++] = d.value();
    } while (next_index(idx, o.shape));
  }
  out.push_back(std::move(o));
}

// One-sided (Hestenes) Jacobi SVD of an m x n real matrix (row-major), m >= n, in long double: rotates
// column pairs of a working copy until all are orthogonal; the column norms are the singular values.
// Returns U (m x n, orthonormal columns where sigma > 0), S (n, descending) and V (n x n).
void jacobi_svd(std::vector<long double> a, int64_t m, int64_t n, std::vector<long double> &u,
                std::vector<long double> &sv, std::vector<long double> &v) {
  auto A = [&](int64_t i, int64_t j) -> long double & { return a[static_cast<size_t>(i * n + j)]; };
  std::vector<long double> vv(static_cast<size_t>(n * n), 0);
  auto V = [&](int64_t i, int64_t j) -> long double & { return vv[static_cast<size_t>(i * n + j)]; };
  for (int64_t i = 0; i < n; ++i) V(i, i) = 1;
  const long double eps = 1e-19L;  // ~ 2^-63
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        Accumulator alpha, beta, gamma;
        for (int64_t i = 0; i < m; ++i) {
          alpha.add_product(A(i, p), A(i, p));
          beta.add_product(A(i, q), A(i, q));
          gamma.add_product(A(i, p), A(i, q));
        }
        const long double al = alpha.value(), be = beta.value(), ga = gamma.value();
        if (ga == 0 || fabsl(ga) <= eps * sqrtl(al * be)) continue;
        rotated = true;
        const long double zeta = (be - al) / (2 * ga);
        const long double t = (zeta >= 0 ? 1 : -1) / (fabsl(zeta) + sqrtl(1 + zeta * zeta));
        const long double cs = 1 / sqrtl(1 + t * t), sn = cs * t;
        for (int64_t i = 0; i < m; ++i) {
          const long double x = A(i, p), y = A(i, q);
          A(i, p) = cs * x - sn * y;
          A(i, q) = sn * x + cs * y;
        }
        for (int64_t i = 0; i < n; ++i) {
          const long double x = V(i, p), y = V(i, q);
          V(i, p) = cs * x - sn * y;
          V(i, q) = sn * x + cs * y;
        }
      }
    if (!rotated) break;
  }
  std::vector<long double> norms(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    Accumulator s2;
    for (int64_t i = 0; i < m; ++i) s2.add_product(A(i, j), A(i, j));
    norms[static_cast<size_t>(j)] = sqrtl(s2.value());
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) order[static_cast<size_t>(j)] = j;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return norms[static_cast<size_t>(x)] > norms[static_cast<size_t>(y)]; });
  u.assign(static_cast<size_t>(m * n), 0);
  sv.assign(static_cast<size_t>(n), 0);
  v.assign(static_cast<size_t>(n * n), 0);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t src = order[static_cast<size_t>(j)];
    const long double s = norms[static_cast<size_t>(src)];
    sv[static_cast<size_t>(j)] = s;
    for (int64_t i = 0; i < m; ++i) u[static_cast<size_t>(i * n + j)] = s > 0 ? A(i, src) / s : 0;
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * n + j)] = V(i, src);
  }
}

// svd: [..., M, N] -> U [..., M, K], S [..., K], and V [..., N, K] or Vh [..., K, N] (by the op's third output
// name), K = min(M, N). Only the reduced factorization; singular vectors are unique up to sign.
void svd(const Call &c, std::vector<WTensor> &out) {
  const WTensor &a = c.a();
  if (is_complex_dtype(a.dtype)) unimplemented("svd: complex");
  if (c.out_types.size() != 3) unimplemented("svd: expected outputs U, S, V");
  const int r = a.rank();
  const int64_t m = a.shape[r - 2], n = a.shape[r - 1], k = std::min(m, n);
  WTensor U = c.output(0), S = c.output(1), V = c.output(2);
  const std::string vname = c.op.outputs[2].name;
  const bool vh = vname.find('h') != std::string::npos || vname.find('t') != std::string::npos;
  if (U.shape[r - 1] != k) unimplemented("svd: full_matrices");
  int64_t batch = 1;
  for (int d = 0; d < r - 2; ++d) batch *= a.shape[d];
  for (int64_t b = 0; b < batch; ++b) {
    const bool tall = m >= n;
    const int64_t rows = tall ? m : n, cols = tall ? n : m;  // work on A or A^T so that rows >= cols
    std::vector<long double> w(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        long double x = a.v[static_cast<size_t>(b * m * n + i * n + j)].re;
        w[static_cast<size_t>(tall ? i * n + j : j * m + i)] = x;
      }
    std::vector<long double> uu, ss, vv;
    jacobi_svd(w, rows, cols, uu, ss, vv);
    // tall: A = uu diag(ss) vv^T.  wide: A^T = uu diag(ss) vv^T, so A = vv diag(ss) uu^T.
    const std::vector<long double> &left = tall ? uu : vv, &right = tall ? vv : uu;
    for (int64_t j = 0; j < k; ++j) S.v[static_cast<size_t>(b * k + j)] = {ss[static_cast<size_t>(j)], 0};
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j)
        U.v[static_cast<size_t>(b * m * k + i * k + j)] = {left[static_cast<size_t>(i * k + j)], 0};
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const Wide x{right[static_cast<size_t>(i * k + j)], 0};
        V.v[static_cast<size_t>(vh ? b * k * n + j * n + i : b * n * k + i * k + j)] = x;
      }
  }
  out.push_back(std::move(U));
  out.push_back(std::move(S));
  out.push_back(std::move(V));
}

// Convolution (cross-correlation, as in every ML framework): input [N, C, *spatial], weight
// [O, C / groups, *kernel] -> out [N, O, *out_spatial] (the output shape comes from the op's shape rule).
// out[n, o, p] = sum_{c, q} in[n, g*C/groups + c, p*stride + q*dilation - pad_low] * w[o, c, q] (zero outside).
void conv(const Call &c, std::vector<WTensor> &out) {
  const WTensor &x = c.a(0), &w = c.a(1);
  WTensor o = c.output(0);
  const int sp = x.rank() - 2;
  auto list = [&](std::initializer_list<const char *> names, int64_t fallback) {
    std::vector<int64_t> v;
    for (const char *n : names)
      if (c.attrs.has(n)) v = c.attrs.ints(n);
    if (v.empty()) v.assign(static_cast<size_t>(sp), fallback);
    return v;
  };
  const std::vector<int64_t> stride = list({"stride", "strides", "window_strides"}, 1);
  const std::vector<int64_t> dilation = list({"dilation", "rhs_dilation", "dilations"}, 1);
  std::vector<int64_t> pad = list({"padding", "pad", "padding_low", "pads"}, 0);
  std::vector<int64_t> pad_low(static_cast<size_t>(sp));
  for (int d = 0; d < sp; ++d)
    pad_low[static_cast<size_t>(d)] =
        pad.size() == static_cast<size_t>(sp) ? pad[static_cast<size_t>(d)] : pad.at(static_cast<size_t>(2 * d));
  const int64_t groups = c.attrs.has("groups")
                             ? c.attrs.i("groups")
                             : (c.attrs.has("feature_group_count") ? c.attrs.i("feature_group_count") : 1);
  const int64_t N = x.shape[0], C = x.shape[1], O = w.shape[0], Cg = w.shape[1];
  if (Cg * groups != C || O % groups != 0) invalid("conv: channels do not match groups");
  const std::vector<int64_t> xs = row_major_strides(x.shape), ws = row_major_strides(w.shape);
  std::vector<int64_t> kshape(w.shape.begin() + 2, w.shape.end());
  if (o.numel() == 0) {
    out.push_back(std::move(o));
    return;
  }
  std::vector<int64_t> idx(o.shape.size(), 0);
  size_t i = 0;
  do {
    const int64_t n = idx[0], oc = idx[1], g = oc / (O / groups);
    Dot acc(x.dtype);
    int64_t kn = 1;
    for (int64_t e : kshape) kn *= e;
    for (int64_t cc = 0; cc < Cg && kn > 0; ++cc) {
      std::vector<int64_t> q(static_cast<size_t>(sp), 0);
      do {
        int64_t xoff = n * xs[0] + (g * Cg + cc) * xs[1];
        int64_t woff = oc * ws[0] + cc * ws[1];
        bool inside = true;
        for (int d = 0; d < sp; ++d) {
          const size_t ud = static_cast<size_t>(d);
          const int64_t pos = idx[ud + 2] * stride[ud] + q[ud] * dilation[ud] - pad_low[ud];
          if (pos < 0 || pos >= x.shape[ud + 2]) inside = false;
          xoff += pos * xs[ud + 2];
          woff += q[ud] * ws[ud + 2];
        }
        if (inside) acc.add(x.v[static_cast<size_t>(xoff)], w.v[static_cast<size_t>(woff)]);
      } while (next_index(q, kshape));
    }
    o.v[i++] = acc.value();
    (void)N;
  } while (next_index(idx, o.shape));
  out.push_back(std::move(o));
}

}  // namespace

void register_linalg(Registry &r) {
  r["conv"] = conv;
  r["convolution"] = conv;
  r["matmul"] = matmul;
  r["batch_matmul"] = matmul;  // [B, M, K] x [B, K, N]: matmul's batched form
  r["dot_general"] = dot_general;
  r["svd"] = svd;
}

}  // namespace pk::oracle
