// data_parallel.cpp — data-parallel training with PrimKit's collectives, to copy from.
//
// A two-layer perceptron y = relu(x W1) W2 with a mean-squared-error loss is trained by SGD. Every rank holds the
// same weights and its own slice of the batch; each step it computes the gradient of ITS rows (PrimKit ops on its
// device), sums the gradients of all ranks with pk_all_reduce (one group for both weight matrices), and applies the
// same update, so the weights stay identical everywhere. Each rank then trains a copy on the whole (concatenated)
// batch alone and checks that both end with the same weights, within the reduction contract (the data-parallel sum
// adds per-rank partial sums in rank order; the single run sums all rows at once: rounding differs, a few ulp).
//
//   mpirun -np 2 build/bin/primkit_example_data_parallel [backend]      (backend: cpu by default)
//
// Exit status 0 when the weights agree, 1 otherwise.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "primkit/primkit_collectives.h"

namespace {

constexpr int64_t kBatch = 16, kIn = 8, kHidden = 16, kOut = 4;  // the whole batch; ranks split it
constexpr int kSteps = 5;
constexpr float kLearningRate = 0.05f;

pk_stream_t g_stream = nullptr;
pk_device_t g_device = nullptr;

void check(pk_status st, const char *what) {
  if (st == PK_OK) return;
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  std::fprintf(stderr, "%s failed: %s (%s)\n", what, e.message, pk_status_name(st));
  std::exit(2);
}

// A dense f32 matrix on the device.
struct Matrix {
  pk_buffer_t buffer = nullptr;
  int64_t shape[2];
  pk_tensor t;
  Matrix(int64_t rows, int64_t cols) : shape{rows, cols} {
    check(pk_buffer_create(g_device, static_cast<uint64_t>(rows * cols) * 4, &buffer), "pk_buffer_create");
    check(pk_buffer_tensor(buffer, pk_dtype PK_DTYPE_F32_DESC, 2, shape, nullptr, 0, &t), "pk_buffer_tensor");
  }
  Matrix(const Matrix &) = delete;
  Matrix &operator=(const Matrix &) = delete;
  ~Matrix() { pk_buffer_destroy(buffer); }
  void upload(const std::vector<float> &v) {
    check(pk_copy_host_to_buffer(g_stream, buffer, 0, v.data(), v.size() * 4), "upload");
    check(pk_stream_synchronize(g_stream), "sync");
  }
  std::vector<float> download() {
    std::vector<float> v(static_cast<size_t>(shape[0] * shape[1]));
    check(pk_copy_buffer_to_host(g_stream, v.data(), buffer, 0, v.size() * 4), "download");
    check(pk_stream_synchronize(g_stream), "sync");
    return v;
  }
};

// Views without copies: the transpose of a matrix (swapped strides) and a scalar broadcast to a shape (stride 0),
// since PrimKit ops neither transpose implicitly nor broadcast.
struct View {
  int64_t shape[2], strides[2];
  pk_tensor t;
  static View transposed(const Matrix &m) {
    View v;
    v.t = m.t;
    v.shape[0] = m.shape[1];
    v.shape[1] = m.shape[0];
    v.strides[0] = 1;
    v.strides[1] = m.shape[1];
    return v;
  }
  static View broadcast(const Matrix &scalar, int64_t rows, int64_t cols) {
    View v;
    v.t = scalar.t;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.strides[0] = v.strides[1] = 0;
    return v;
  }
  const pk_tensor *get() {
    t.shape = shape;
    t.strides = strides;
    return &t;
  }
};

void launch(uint32_t op, std::vector<const pk_tensor *> in, const pk_tensor &out, const char *what) {
  std::vector<pk_tensor> inputs;
  for (const pk_tensor *t : in) inputs.push_back(*t);
  check(pk_launch(g_stream, op, inputs.data(), static_cast<uint32_t>(inputs.size()), &out, 1, nullptr), what);
}

struct Model {
  Matrix w1{kIn, kHidden}, w2{kHidden, kOut};
};

// One SGD step on rows [row0, row0 + rows) of (x, target); with `comm`, the gradients of all ranks are summed first.
void train_step(Model &m, const std::vector<float> &x_all, const std::vector<float> &t_all, int64_t row0, int64_t rows,
                pk_comm_t comm) {
  Matrix x(rows, kIn), target(rows, kOut), zero(1, 1), scale(1, 1), lr(1, 1);
  x.upload(std::vector<float>(x_all.begin() + row0 * kIn, x_all.begin() + (row0 + rows) * kIn));
  target.upload(std::vector<float>(t_all.begin() + row0 * kOut, t_all.begin() + (row0 + rows) * kOut));
  zero.upload({0.0f});
  scale.upload({2.0f / kBatch});  // d/dy of mean((y - t)^2) over the WHOLE batch: ranks' gradients then simply add
  lr.upload({kLearningRate});
  // forward
  Matrix pre(rows, kHidden), h(rows, kHidden), y(rows, kOut);
  launch(PK_OP_MATMUL, {&x.t, &m.w1.t}, pre.t, "x W1");
  View z_h = View::broadcast(zero, rows, kHidden);
  launch(PK_OP_MAXIMUM, {&pre.t, z_h.get()}, h.t, "relu");
  launch(PK_OP_MATMUL, {&h.t, &m.w2.t}, y.t, "h W2");
  // backward
  Matrix err(rows, kOut), dy(rows, kOut), dw2(kHidden, kOut), dh_pre(rows, kHidden), dh(rows, kHidden),
      dw1(kIn, kHidden);
  launch(PK_OP_SUB, {&y.t, &target.t}, err.t, "y - t");
  View s = View::broadcast(scale, rows, kOut);
  launch(PK_OP_MUL, {&err.t, s.get()}, dy.t, "dL/dy");
  View ht = View::transposed(h), w2t = View::transposed(m.w2), xt = View::transposed(x);
  launch(PK_OP_MATMUL, {ht.get(), &dy.t}, dw2.t, "h^T dy");
  launch(PK_OP_MATMUL, {&dy.t, w2t.get()}, dh_pre.t, "dy W2^T");
  pk_buffer_t mask_buf = nullptr;
  check(pk_buffer_create(g_device, static_cast<uint64_t>(rows * kHidden), &mask_buf), "mask");
  int64_t mask_shape[2] = {rows, kHidden};
  pk_tensor mask;
  check(pk_buffer_tensor(mask_buf, pk_dtype PK_DTYPE_BOOL_DESC, 2, mask_shape, nullptr, 0, &mask), "mask view");
  View z_h2 = View::broadcast(zero, rows, kHidden);
  launch(PK_OP_GT, {&pre.t, z_h2.get()}, mask, "pre > 0");
  View z_h3 = View::broadcast(zero, rows, kHidden);
  launch(PK_OP_WHERE, {&mask, &dh_pre.t, z_h3.get()}, dh.t, "relu'");
  launch(PK_OP_MATMUL, {xt.get(), &dh.t}, dw1.t, "x^T dh");
  // the data-parallel part: sum the gradients of every rank's rows, in place
  if (comm != nullptr) {
    check(pk_group_start(), "pk_group_start");
    check(pk_all_reduce(comm, g_stream, &dw1.t, &dw1.t, PK_REDUCE_SUM), "all_reduce dW1");
    check(pk_all_reduce(comm, g_stream, &dw2.t, &dw2.t, PK_REDUCE_SUM), "all_reduce dW2");
    check(pk_group_end(), "pk_group_end");
  }
  // W -= lr * dW
  Matrix step1(kIn, kHidden), step2(kHidden, kOut), w1(kIn, kHidden), w2(kHidden, kOut);
  View lr1 = View::broadcast(lr, kIn, kHidden), lr2 = View::broadcast(lr, kHidden, kOut);
  launch(PK_OP_MUL, {&dw1.t, lr1.get()}, step1.t, "lr dW1");
  launch(PK_OP_MUL, {&dw2.t, lr2.get()}, step2.t, "lr dW2");
  launch(PK_OP_SUB, {&m.w1.t, &step1.t}, w1.t, "W1 update");
  launch(PK_OP_SUB, {&m.w2.t, &step2.t}, w2.t, "W2 update");
  check(pk_copy_buffer_to_buffer(g_stream, m.w1.buffer, 0, w1.buffer, 0, kIn * kHidden * 4), "W1 copy");
  check(pk_copy_buffer_to_buffer(g_stream, m.w2.buffer, 0, w2.buffer, 0, kHidden * kOut * 4), "W2 copy");
  check(pk_stream_synchronize(g_stream), "sync");
  pk_buffer_destroy(mask_buf);
}

// Deterministic data and initial weights: every rank makes the same ones.
std::vector<float> pattern(int64_t n, uint32_t seed, float amplitude) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (auto &x : v) {
    s = s * 1664525u + 1013904223u;
    x = amplitude * (static_cast<float>(s >> 8) / 16777216.0f - 0.5f);
  }
  return v;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string backend = argc > 1 ? argv[1] : "cpu";
  pk_runtime_t rt = nullptr;
  check(pk_runtime_create(nullptr, &rt), "pk_runtime_create");  // discovers the installed backends
  pk_backend_t b = nullptr;
  check(pk_runtime_find_backend(rt, backend.c_str(), &b), "find backend");
  check(pk_backend_device(b, 0, &g_device), "device 0");
  check(pk_stream_create(g_device, &g_stream), "stream");
  pk_comm_t world = nullptr;
  check(pk_comm_create(g_device, nullptr, &world), "pk_comm_create");  // the ranks mpirun/srun started
  int32_t rank = 0, size = 1;
  pk_comm_rank(world, &rank);
  pk_comm_size(world, &size);
  if (kBatch % size != 0) {
    std::fprintf(stderr, "the batch of %lld rows does not split over %d ranks\n", static_cast<long long>(kBatch), size);
    return 2;
  }
  const std::vector<float> x = pattern(kBatch * kIn, 1, 2.0f), t = pattern(kBatch * kOut, 2, 1.0f);
  const std::vector<float> w1 = pattern(kIn * kHidden, 3, 0.5f), w2 = pattern(kHidden * kOut, 4, 0.5f);

  bool ok = false;
  {  // the models' buffers go before the runtime that owns them
    Model parallel, single;
    parallel.w1.upload(w1);
    parallel.w2.upload(w2);
    single.w1.upload(w1);
    single.w2.upload(w2);
    const int64_t rows = kBatch / size;
    for (int step = 0; step < kSteps; ++step) {
      train_step(parallel, x, t, rank * rows, rows, world);  // my rows, gradients summed across ranks
      train_step(single, x, t, 0, kBatch, nullptr);          // the whole batch, alone
    }
    double worst = 0, scale = 0;
    for (auto pair : {std::make_pair(parallel.w1.download(), single.w1.download()),
                      std::make_pair(parallel.w2.download(), single.w2.download())}) {
      for (size_t i = 0; i < pair.first.size(); ++i) {
        worst = std::fmax(worst, std::fabs(static_cast<double>(pair.first[i]) - pair.second[i]));
        scale = std::fmax(scale, std::fabs(static_cast<double>(pair.second[i])));
      }
    }
    // Summation order differs (per-rank partial sums, then the rank-order fold): f32 rounding of a 16-term sum per
    // step, a few ulp of the largest weight over 5 steps.
    const double tolerance = 64 * 0x1p-24 * scale;
    ok = worst <= tolerance;
    std::printf(
        "rank %d of %d: %d SGD steps, data-parallel vs whole batch on one rank: max |dW| = %.3g (tolerance %.3g): "
        "%s\n",
        rank, size, kSteps, worst, tolerance, ok ? "same weights" : "WEIGHTS DIFFER");
  }
  pk_comm_destroy(world);
  pk_stream_destroy(g_stream);
  pk_runtime_destroy(rt);
  return ok ? 0 : 1;
}
