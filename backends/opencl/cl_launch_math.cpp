// cl_launch_math.cpp — the OpenCL backend's launches of var, dot_general, convolution (an implicit GEMM), the
// Philox generators and the FFTs (passes over a double2 work tensor).
#include <algorithm>
#include <cstring>
#include <mutex>

#include "cl_backend.hpp"
#include "cl_codegen.hpp"
#include "cl_fft.hpp"
#include "cl_key.hpp"
#include "primkit/backend_kit.hpp"
#include "primkit/op_info.hpp"

namespace pk::ocl {

using kit::fail;

// --- var, dot_general, convolution, rng -------------------------------------------------------------------

pk_status launch_var(pk_be_stream *s, const pk_tensor &in, const pk_tensor &out, const void *attrs) {
  const uint32_t op = PK_OP_VAR;
  const auto *at = static_cast<const pk_attrs_var *>(attrs);
  const int32_t dt = kit::dtype_id(in.dtype);
  uint32_t mask = 0;
  for (int32_t i = 0; i < at->num_dims; ++i) mask |= 1u << at->dims[i];
  const TensorArg ia = tensor_arg(in), oa = tensor_arg(out);
  Dims ks{}, kin{}, kout{}, rs{}, rst{};
  int32_t nk = 0, nr = 0, od = 0;
  uint64_t n_out = 1, n_red = 1;
  for (int32_t d = 0; d < in.ndim; ++d) {
    if (mask & (1u << d)) {
      n_red *= static_cast<uint64_t>(in.shape[d]);
      rs.v[nr] = in.shape[d];
      rst.v[nr++] = ia.strides.v[d];
    } else {
      n_out *= static_cast<uint64_t>(in.shape[d]);
      ks.v[nk] = in.shape[d];
      kin.v[nk] = ia.strides.v[d];
      kout.v[nk++] = oa.strides.v[od++];
    }
  }
  if (n_out == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_var"};
  KernelSet *kset = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::var, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_var(dt, s->dev->caps); }, &kset);
  if (st != PK_OK) return st;
  cl_kernel k = kset->k[0].get();
  std::lock_guard<std::mutex> g(kset->mu);
  Args set{k};
  set(ia.mem)(ia.offset)(ks)(kin)(kout)(static_cast<cl_int>(nk))(rs)(rst)(static_cast<cl_int>(nr))(
      n_out)(n_red)(oa.mem)(oa.offset);
  if (s->dev->caps.fp64) {
    set(at->correction);
  } else {
    set(static_cast<cl_float>(at->correction));
  }
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t local = 64, global = round_up(static_cast<size_t>(n_out), local);
  return enqueue(s, k, 1, &global, &local, op);
}

pk_status launch_dot_general(pk_be_stream *s, const pk_tensor &a, const pk_tensor &b, const pk_tensor &out,
                             const void *attrs) {
  const uint32_t op = PK_OP_DOT_GENERAL;
  const auto *at = static_cast<const pk_attrs_dot_general *>(attrs);
  const int32_t dt = kit::dtype_id(a.dtype);
  const TensorArg aa = tensor_arg(a), ba = tensor_arg(b), oa = tensor_arg(out);
  // Output axes: batch, lhs free, rhs free (in order).
  Dims osh{}, soa{}, sob{}, csh{}, sca{}, scb{};
  int32_t orank = 0, crank = 0;
  bool a_used[PK_MAX_RANK] = {false}, b_used[PK_MAX_RANK] = {false};
  for (int32_t i = 0; i < at->num_lhs_batch; ++i) {
    osh.v[orank] = a.shape[at->lhs_batch[i]];
    soa.v[orank] = aa.strides.v[at->lhs_batch[i]];
    sob.v[orank++] = ba.strides.v[at->rhs_batch[i]];
    a_used[at->lhs_batch[i]] = b_used[at->rhs_batch[i]] = true;
  }
  for (int32_t i = 0; i < at->num_lhs_contract; ++i) {
    csh.v[crank] = a.shape[at->lhs_contract[i]];
    sca.v[crank] = aa.strides.v[at->lhs_contract[i]];
    scb.v[crank++] = ba.strides.v[at->rhs_contract[i]];
    a_used[at->lhs_contract[i]] = b_used[at->rhs_contract[i]] = true;
  }
  for (int32_t d = 0; d < a.ndim; ++d) {
    if (a_used[d]) continue;
    osh.v[orank] = a.shape[d];
    soa.v[orank++] = aa.strides.v[d];
  }
  for (int32_t d = 0; d < b.ndim; ++d) {
    if (b_used[d]) continue;
    osh.v[orank] = b.shape[d];
    sob.v[orank++] = ba.strides.v[d];
  }
  const uint64_t n = numel_of(out), nc = count_of(csh.v, crank);
  if (n == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_dot_general"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::dot_general, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_dot_general(dt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(aa.mem)(static_cast<cl_long>(aa.offset))(ba.mem)(static_cast<cl_long>(ba.offset))(oa.mem)(
      static_cast<cl_long>(oa.offset));
  set(osh)(static_cast<cl_int>(orank))(soa)(sob)(oa.strides)(csh)(static_cast<cl_int>(crank))(sca)(scb)(nc)(n);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

namespace {

// The layout of pk_conv_geom in the generated source.
struct ConvGeom {
  cl_long xst[8], xsh[8], wst[8], ksh[8], yst[8], ysh[8], stride[8], padl[8], dil[8];
  cl_long S, Cg, Mg, NB, KS, OS;
};

}  // namespace

pk_status launch_conv(pk_be_stream *s, const pk_tensor &x, const pk_tensor &w, const pk_tensor &y, const void *attrs) {
  const uint32_t op = PK_OP_CONVOLUTION;
  const auto *at = static_cast<const pk_attrs_convolution *>(attrs);
  const int32_t dt = kit::dtype_id(x.dtype);
  const TensorArg xa = tensor_arg(x), wa = tensor_arg(w), ya = tensor_arg(y);
  ConvGeom g{};
  const int32_t S = x.ndim - 2;
  const int64_t groups = at->groups > 0 ? at->groups : 1;
  g.S = S;
  g.NB = x.shape[0];
  g.Cg = x.shape[1] / groups;
  g.Mg = w.shape[0] / groups;
  g.KS = 1;
  g.OS = 1;
  for (int32_t d = 0; d < x.ndim; ++d) {
    g.xst[d] = xa.strides.v[d];
    g.wst[d] = wa.strides.v[d];
    g.yst[d] = ya.strides.v[d];
  }
  for (int32_t d = 0; d < S; ++d) {
    g.xsh[d] = x.shape[2 + d];
    g.ksh[d] = w.shape[2 + d];
    g.ysh[d] = y.shape[2 + d];
    g.stride[d] = at->num_stride ? at->stride[d] : 1;
    g.padl[d] = at->num_padding_low ? at->padding_low[d] : 0;
    g.dil[d] = at->num_dilation ? at->dilation[d] : 1;
    g.KS *= g.ksh[d];
    g.OS *= g.ysh[d];
  }
  const int64_t M = g.Mg, N = g.NB * g.OS;
  if (M == 0 || N == 0) return PK_OK;
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_conv"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::conv, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_conv(dt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> lock(ks->mu);
  Args set{k};
  set(xa.mem)(xa.offset)(wa.mem)(wa.offset)(ya.mem)(ya.offset)(g);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t local[3] = {kMmLocal, kMmLocal, 1};
  const size_t global[3] = {static_cast<size_t>((N + kMmTile - 1) / kMmTile) * kMmLocal,
                            static_cast<size_t>((M + kMmTile - 1) / kMmTile) * kMmLocal, static_cast<size_t>(groups)};
  return enqueue(s, k, 3, global, local, op);
}

pk_status launch_philox(pk_be_stream *s, uint32_t op, const pk_tensor &out, const void *attrs) {
  const int32_t dt = kit::dtype_id(out.dtype);
  const uint64_t n = numel_of(out);
  if (n == 0) return PK_OK;
  cl_ulong offset = 0, seed = 0, ispan = 1;
  cl_double low = 0, span = 0, mean = 0, sd = 1;
  cl_long ilow = 0;
  if (op == PK_OP_PHILOX_UNIFORM) {
    const auto *at = static_cast<const pk_attrs_philox_uniform *>(attrs);
    offset = static_cast<cl_ulong>(at->offset);
    seed = static_cast<cl_ulong>(at->seed);
    low = at->low;
    span = at->high - at->low;
  } else if (op == PK_OP_PHILOX_NORMAL) {
    const auto *at = static_cast<const pk_attrs_philox_normal *>(attrs);
    offset = static_cast<cl_ulong>(at->offset);
    seed = static_cast<cl_ulong>(at->seed);
    mean = at->mean;
    sd = at->std;
  } else {
    const auto *at = static_cast<const pk_attrs_philox_randint *>(attrs);
    offset = static_cast<cl_ulong>(at->offset);
    seed = static_cast<cl_ulong>(at->seed);
    ilow = at->low;
    ispan = static_cast<cl_ulong>(at->high) - static_cast<cl_ulong>(at->low);
  }
  const int32_t dts[1] = {dt};
  static const char *const kNames[] = {"pk_philox"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      *s->dev, kernel_key(Path::philox, op, dts, 1, 0), op, kNames, 1,
      [&](bool *, uint32_t *) { return gen_philox(op, dt, s->dev->caps); }, &ks);
  if (st != PK_OK) return st;
  const TensorArg oa = tensor_arg(out);
  const Dims sh = dims_of(out.shape, out.ndim);
  cl_kernel k = ks->k[0].get();
  std::lock_guard<std::mutex> g(ks->mu);
  Args set{k};
  set(oa.mem)(static_cast<cl_long>(oa.offset))(oa.strides)(sh)(static_cast<cl_int>(out.ndim))(n);
  set(offset)(seed)(low)(span)(ilow)(ispan)(mean)(sd);
  if (set.err != CL_SUCCESS) return stream_fail(s, set.err, op, "clSetKernelArg failed");
  const size_t global = round_up(static_cast<size_t>(n), kLocal), local = kLocal;
  return enqueue(s, k, 1, &global, &local, op);
}

// --- FFT --------------------------------------------------------------------------------------------------------

namespace {

// The passes of one FFT launch over its dense double2 work tensor, held in two buffers (each pass reads one and
// writes the other). Twiddle and Bluestein tables are made once per (length, direction) and stream, and kept.
class FftPasses {
 public:
  enum Slot { kLoad, kTwiddle, kRadix2, kDirect, kExtend, kStore, kChirp, kBsKernel, kBsPre, kBsMul, kBsPost };

  FftPasses(pk_be_stream *s, uint32_t op, KernelSet &ks) : s_(s), op_(op), ks_(ks) {}
  FftPasses(const FftPasses &) = delete;
  FftPasses &operator=(const FftPasses &) = delete;
  ~FftPasses() { trim_tables(); }

  pk_status alloc(uint64_t elements) {
    for (Mem &m : buf_)
      if (pk_status st = make_buffer(m, elements, "allocating the FFT work buffers failed")) return st;
    return PK_OK;
  }

  pk_status load(const pk_tensor &in) {
    const TensorArg a = tensor_arg(in);
    const uint64_t count = numel_of(in);
    Args set{kernel(kLoad)};
    set(a.mem)(static_cast<cl_long>(a.offset))(a.strides)(dims_of(in.shape, in.ndim))(static_cast<cl_int>(in.ndim))(
        buf_[cur_].get())(count);
    return run(set, kLoad, count);
  }

  // The 1-D transform along axis `dim` of the work tensor of `shape`.
  pk_status axis(const int64_t *shape, int32_t rank, int64_t dim, bool forward) {
    const uint64_t n = static_cast<uint64_t>(shape[dim]), count = count_of(shape, rank);
    if (count == 0) return PK_OK;
    uint64_t inner = 1;
    for (int32_t d = static_cast<int32_t>(dim) + 1; d < rank; ++d) inner *= static_cast<uint64_t>(shape[d]);
    cl_mem tw = nullptr;
    if (is_pow2(n)) {
      if (pk_status st = table(kTwiddle, n, forward, &tw)) return st;
      int c = cur_;
      if (pk_status st = radix2(buf_[0].get(), buf_[1].get(), &c, tw, n, inner, count)) return st;
      cur_ = c;
      return PK_OK;
    }
    if (n > kFftDirectMax) return bluestein(n, count / n / inner, inner, forward);
    // Other lengths (1 included: its pass still turns a non-finite part into the reference's non-finite pair).
    if (pk_status st = table(kTwiddle, n, forward, &tw)) return st;
    Args set{kernel(kDirect)};
    set(buf_[cur_].get())(buf_[cur_ ^ 1].get())(tw)(n)(inner)(count);
    if (pk_status st = run(set, kDirect, count)) return st;
    cur_ ^= 1;
    return PK_OK;
  }

  // fft_c2r: the onesided axis `dim` (of `half` entries in `shape`) extended to n entries.
  pk_status extend(const int64_t *shape, int32_t rank, int64_t dim, uint64_t half, uint64_t n) {
    uint64_t inner = 1;
    for (int32_t d = static_cast<int32_t>(dim) + 1; d < rank; ++d) inner *= static_cast<uint64_t>(shape[d]);
    const uint64_t count = count_of(shape, rank) / half * n;
    Args set{kernel(kExtend)};
    set(buf_[cur_].get())(buf_[cur_ ^ 1].get())(half)(n)(inner)(count);
    if (pk_status st = run(set, kExtend, count)) return st;
    cur_ ^= 1;
    return PK_OK;
  }

  // The output: element idx of `out` is the work tensor's (of `shape`) at the same coordinates.
  pk_status store(const int64_t *shape, int32_t rank, const pk_tensor &out) {
    const TensorArg a = tensor_arg(out);
    const uint64_t count = numel_of(out);
    Args set{kernel(kStore)};
    set(buf_[cur_].get())(dense_dims(shape, rank))(a.mem)(static_cast<cl_long>(a.offset))(a.strides)(
        dims_of(out.shape, out.ndim))(static_cast<cl_int>(out.ndim))(count);
    return run(set, kStore, count);
  }

 private:
  cl_kernel kernel(Slot k) const { return ks_.k[k].get(); }
  static bool is_pow2(uint64_t n) { return n >= 2 && (n & (n - 1)) == 0; }

  pk_status make_buffer(Mem &m, uint64_t elements, const char *what) {
    cl_int err = CL_SUCCESS;
    m = Mem(clCreateBuffer(s_->dev->context, CL_MEM_READ_WRITE, std::max<uint64_t>(elements, 1) * 16, nullptr, &err));
    return m ? PK_OK : stream_fail(s_, err, op_, what);
  }

  // The radix-2 stages of lines of length n (a power of two) between buffers a (0) and b (1), starting in *c.
  pk_status radix2(cl_mem a, cl_mem b, int *c, cl_mem tw, uint64_t n, uint64_t inner, uint64_t count) {
    const cl_mem bufs[2] = {a, b};
    for (uint64_t p = 1; p < n; p <<= 1) {
      Args set{kernel(kRadix2)};
      set(bufs[*c])(bufs[*c ^ 1])(tw)(n)(p)(inner)(count / 2);
      if (pk_status st = run(set, kRadix2, count / 2)) return st;
      *c ^= 1;
    }
    return PK_OK;
  }

  // Bluestein's algorithm along an axis of length n: lines padded to m >= 2n - 1, transformed, multiplied by the
  // chirp kernel's spectrum (made once per launch), transformed back.
  pk_status bluestein(uint64_t n, uint64_t outer, uint64_t inner, bool forward) {
    uint64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    cl_mem chirp = nullptr, spectrum = nullptr, tw_fwd = nullptr, tw_inv = nullptr;
    if (pk_status st = table(kChirp, n, forward, &chirp)) return st;
    if (pk_status st = table(kTwiddle, m, true, &tw_fwd)) return st;
    if (pk_status st = table(kTwiddle, m, false, &tw_inv)) return st;
    if (pk_status st = table(kBsKernel, n, forward, &spectrum)) return st;
    const uint64_t padded = outer * m * inner;
    if (bs_elements_ < padded) {
      for (Mem &b : bs_)
        if (pk_status st = make_buffer(b, padded, "allocating the FFT's Bluestein buffers failed")) return st;
      bs_elements_ = padded;
    }
    Args pre{kernel(kBsPre)};
    pre(buf_[cur_].get())(bs_[0].get())(chirp)(n)(m)(inner)(padded);
    if (pk_status st = run(pre, kBsPre, padded)) return st;
    int c = 0;
    if (pk_status st = radix2(bs_[0].get(), bs_[1].get(), &c, tw_fwd, m, inner, padded)) return st;
    Args mul{kernel(kBsMul)};
    mul(bs_[c].get())(spectrum)(m)(inner)(padded);
    if (pk_status st = run(mul, kBsMul, padded)) return st;
    if (pk_status st = radix2(bs_[0].get(), bs_[1].get(), &c, tw_inv, m, inner, padded)) return st;
    const uint64_t count = outer * n * inner;
    Args post{kernel(kBsPost)};
    post(bs_[c].get())(buf_[cur_ ^ 1].get())(chirp)(n)(m)(inner)(count);
    if (pk_status st = run(post, kBsPost, count)) return st;
    cur_ ^= 1;
    return PK_OK;
  }

  pk_status run(const Args &set, Slot k, uint64_t items) {
    if (set.err != CL_SUCCESS) return stream_fail(s_, set.err, op_, "clSetKernelArg failed");
    if (items == 0) return PK_OK;
    const size_t global = round_up(static_cast<size_t>(items), kLocal), local = kLocal;
    return enqueue(s_, kernel(k), 1, &global, &local, op_);
  }

  // A table of the launch, made at first use: twiddles e^(+-2 pi i j / n) (kTwiddle), Bluestein's chirp for length n
  // (kChirp) or the spectrum of its convolution kernel (kBsKernel).
  pk_status table(Slot kind, uint64_t n, bool forward, cl_mem *out) {
    for (const auto &t : s_->fft_tables) {
      if (t.kind == kind && t.n == n && t.forward == forward) {
        *out = t.mem.get();
        return PK_OK;
      }
    }
    Mem m;
    const double sign = forward ? -1.0 : 1.0;
    uint64_t bytes = n * 16;
    if (kind == kBsKernel) {
      uint64_t len = 1;
      while (len < 2 * n - 1) len <<= 1;
      bytes = len * 16;
      cl_mem chirp = nullptr, tw = nullptr;
      if (pk_status st = table(kChirp, n, forward, &chirp)) return st;
      if (pk_status st = table(kTwiddle, len, true, &tw)) return st;
      Mem spare;
      if (pk_status st = make_buffer(m, len, "allocating an FFT table failed")) return st;
      if (pk_status st = make_buffer(spare, len, "allocating an FFT table failed")) return st;
      Args set{kernel(kBsKernel)};
      set(chirp)(m.get())(n)(len);
      if (pk_status st = run(set, kBsKernel, len)) return st;
      int c = 0;
      if (pk_status st = radix2(m.get(), spare.get(), &c, tw, len, 1, len)) return st;
      if (c == 1) m = std::move(spare);
    } else {
      if (pk_status st = make_buffer(m, n, "allocating an FFT table failed")) return st;
      Args set{kernel(kind)};
      set(m.get())(n)(static_cast<cl_double>(sign));
      if (pk_status st = run(set, kind, n)) return st;
    }
    *out = m.get();
    s_->fft_tables.push_back(pk_be_stream::FftTable{kind, n, forward, std::move(m), bytes});
    return PK_OK;
  }

  // Drops the oldest tables beyond kFftTableBytes; only between launches, since a launch holds its tables' handles
  // until it has enqueued the passes that read them.
  void trim_tables() {
    auto &cache = s_->fft_tables;
    uint64_t total = 0;
    for (const auto &t : cache) total += t.bytes;
    while (cache.size() > 1 && total > kFftTableBytes) {
      total -= cache.front().bytes;
      cache.erase(cache.begin());
    }
  }

  static constexpr uint64_t kFftTableBytes = uint64_t{64} << 20;
  pk_be_stream *s_;
  uint32_t op_;
  KernelSet &ks_;
  Mem buf_[2], bs_[2];
  uint64_t bs_elements_ = 0;
  int cur_ = 0;
};

}  // namespace

pk_status launch_fft(pk_be_stream *s, uint32_t op, const pk_tensor &in, const pk_tensor &out, const void *attrs) {
  const int32_t in_dt = kit::dtype_id(in.dtype);
  int32_t num_dims = 0;
  const int64_t *dims = nullptr;
  bool forward = true;
  int64_t last_size = 0;
  if (op == PK_OP_FFT_C2C) {
    const auto *at = static_cast<const pk_attrs_fft_c2c *>(attrs);
    num_dims = at->num_dims;
    dims = at->dims;
    forward = at->forward != 0;
  } else if (op == PK_OP_FFT_R2C) {
    const auto *at = static_cast<const pk_attrs_fft_r2c *>(attrs);
    num_dims = at->num_dims;
    dims = at->dims;
  } else {
    const auto *at = static_cast<const pk_attrs_fft_c2r *>(attrs);
    num_dims = at->num_dims;
    dims = at->dims;
    forward = false;
    last_size = at->last_dim_size;
  }
  if (numel_of(out) == 0) return PK_OK;
  // An empty line transforms to zeros (fft_r2c of an empty axis still has its one onesided entry).
  if (numel_of(in) == 0) return launch_fill_bits(s, op, out, 0);
  if (op == PK_OP_FFT_C2R && num_dims == 0)
    return fail(PK_ERROR_INVALID_ARGUMENT, op, -1, "opencl: fft_c2r: attribute dims is empty");
  int64_t shape[PK_MAX_RANK] = {0};
  const int32_t rank = std::min<int32_t>(in.ndim, PK_MAX_RANK);
  for (int32_t d = 0; d < rank; ++d) shape[d] = in.shape[d];
  uint64_t elements = numel_of(in);
  if (op == PK_OP_FFT_C2R) {
    const int64_t last = dims[num_dims - 1];
    elements = std::max(elements, elements / static_cast<uint64_t>(in.shape[last]) * static_cast<uint64_t>(last_size));
  }
  DeviceState &dev = *s->dev;
  if (elements * 16 > dev.max_alloc) {
    return fail(PK_ERROR_OUT_OF_MEMORY, op, -1,
                "opencl: %s: the work buffer of %llu complex<double> elements exceeds the device's largest allocation",
                pk::meta::op_name(op), static_cast<unsigned long long>(elements));
  }
  const int32_t dts[1] = {in_dt};
  static const char *const kNames[kFftKernels] = {
      "pk_fft_load",  "pk_fft_twiddle",   "pk_fft_radix2", "pk_fft_direct", "pk_fft_extend", "pk_fft_store",
      "pk_fft_chirp", "pk_fft_bs_kernel", "pk_fft_bs_pre", "pk_fft_bs_mul", "pk_fft_bs_post"};
  KernelSet *ks = nullptr;
  pk_status st = get_kernels(
      dev, kernel_key(Path::fft, op, dts, 1, 0), op, kNames, kFftKernels,
      [&](bool *all, uint32_t *) {
        *all = true;  // every slot, not only the first two
        return gen_fft(op, in_dt, dev.caps);
      },
      &ks);
  if (st != PK_OK) return st;
  std::lock_guard<std::mutex> g(ks->mu);
  FftPasses f(s, op, *ks);
  if ((st = f.alloc(elements)) || (st = f.load(in))) return st;
  // The passes in the order of dims, as the reference (a repeated axis transforms twice); fft_c2r's last axis is
  // extended by Hermitian symmetry first.
  const int32_t plain = op == PK_OP_FFT_C2R ? num_dims - 1 : num_dims;
  for (int32_t k = 0; k < plain; ++k) {
    if ((st = f.axis(shape, rank, dims[k], forward))) return st;
  }
  if (op == PK_OP_FFT_C2R) {
    const int64_t last = dims[num_dims - 1];
    const uint64_t half = static_cast<uint64_t>(shape[last]);
    if ((st = f.extend(shape, rank, last, half, static_cast<uint64_t>(last_size)))) return st;
    shape[last] = last_size;
    if ((st = f.axis(shape, rank, last, false))) return st;
  }
  return f.store(shape, rank, out);
}

}  // namespace pk::ocl
