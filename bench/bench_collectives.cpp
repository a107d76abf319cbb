// bench_collectives.cpp — all-reduce bus bandwidth of the collectives extension against its engine called directly:
// pk_all_reduce (checked, and PK_COMM_UNCHECKED) vs MPI_Allreduce on the same buffers (the CPU backend's memory,
// which MPI reads in place), f32 sum, 4 KiB to 256 MiB. Run it under the launcher, e.g.
//   mpirun -np 2 build/bin/primkit_bench_collectives [max_bytes [plugin]]
// A plugin path in place of the CPU backend measures another backend whose memory the host addresses, e.g. the test
// backend with native collectives (the "pk" columns are then its native path: header check and collective_launch).
// (Google Benchmark is not used: its adaptive iteration counts would differ between ranks, and every rank must make
// the same calls.) Bus bandwidth follows nccl-tests: bytes * 2(n-1)/n / time. Every figure is the median of 5
// batches (and, in the last columns, the fastest batch), each batch timed between barriers; "pk xMPI" is
// PrimKit's bandwidth as a multiple of MPI's (1.0 = equal; the target is >= 0.9). MPI and PrimKit
// alternate batch by batch so that drift in a shared machine's load hits both alike.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "primkit/primkit_collectives.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char *what) {
  pk_error_info e;
  PK_STRUCT_INIT(e);
  pk_get_last_error(&e);
  std::fprintf(stderr, "%s: %s\n", what, e.message);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double best(const std::vector<double> &v) {
  return *std::min_element(v.begin(), v.end());
}

template <class F>
double batch_seconds(int iters, F call) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) call();
  double local = std::chrono::duration<double>(Clock::now() - t0).count() / iters, slowest = 0;
  // The slowest rank's time is the collective's time.
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // the application owns MPI here
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const uint64_t max_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : (uint64_t{256} << 20);

  pk_runtime_options ro;
  PK_STRUCT_INIT(ro);
  ro.flags = PK_RUNTIME_NO_DISCOVERY;
  pk_runtime_t rt = nullptr;
  pk_backend_t cpu = nullptr;
  pk_device_t dev = nullptr;
  pk_stream_t stream = nullptr;
  const char *plugin = argc > 2 ? argv[2] : PK_CPU_PLUGIN;
  if (pk_runtime_create(&ro, &rt) != PK_OK || pk_runtime_load_plugin(rt, plugin, &cpu) != PK_OK ||
      pk_backend_device(cpu, 0, &dev) != PK_OK || pk_stream_create(dev, &stream) != PK_OK)
    die("cpu backend");
  pk_comm_t checked = nullptr, unchecked = nullptr;
  pk_comm_options o;
  PK_STRUCT_INIT(o);
  o.nranks = o.rank = -1;
  if (pk_comm_create(dev, &o, &checked) != PK_OK) die("pk_comm_create");
  o.flags = PK_COMM_UNCHECKED;
  if (pk_comm_create(dev, &o, &unchecked) != PK_OK) die("pk_comm_create (unchecked)");

  pk_buffer_t sbuf = nullptr, rbuf = nullptr;
  if (pk_buffer_create(dev, max_bytes, &sbuf) != PK_OK || pk_buffer_create(dev, max_bytes, &rbuf) != PK_OK)
    die("pk_buffer_create");
  float *send = static_cast<float *>(pk_buffer_data(sbuf));
  float *recv = static_cast<float *>(pk_buffer_data(rbuf));
  for (uint64_t i = 0; i < max_bytes / 4; ++i) send[i] = static_cast<float>((i * 7 + rank) % 13) * 0.25f;
  std::memset(recv, 0, max_bytes);  // first touch outside the timing

  if (rank == 0) {
    pk_backend_info info;
    PK_STRUCT_INIT(info);
    pk_backend_get_info(cpu, &info);
    std::printf("all-reduce f32 sum, %d ranks, backend '%s' (engine %s); bus bandwidth GB/s = bytes*2(n-1)/n/time\n",
                size, info.name, pk_comm_engine(checked));
    std::printf("%10s %6s %10s %10s %10s %8s %8s %9s %9s %9s %9s %9s\n", "bytes", "iters", "MPI us", "pk us",
                "unchk us", "pk xMPI", "unck xMPI", "MPI GB/s", "pk GB/s", "bestMPIus", "best pk", "best unck");
  }
  for (uint64_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    const int64_t count = static_cast<int64_t>(bytes / 4);
    int64_t shape[1] = {count};
    pk_tensor ts, tr;
    pk_buffer_tensor(sbuf, pk_dtype PK_DTYPE_F32_DESC, 1, shape, nullptr, 0, &ts);
    pk_buffer_tensor(rbuf, pk_dtype PK_DTYPE_F32_DESC, 1, shape, nullptr, 0, &tr);
    const int iters = static_cast<int>(std::clamp<uint64_t>((uint64_t{512} << 20) / bytes, 3, 2000));
    auto mpi = [&] { MPI_Allreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
    auto pk = [&] {
      if (pk_all_reduce(checked, stream, &ts, &tr, PK_REDUCE_SUM) != PK_OK) die("pk_all_reduce");
    };
    auto pku = [&] {
      if (pk_all_reduce(unchecked, stream, &ts, &tr, PK_REDUCE_SUM) != PK_OK) die("pk_all_reduce (unchecked)");
    };
    batch_seconds(1, mpi);  // warm-up: connections, scratch blocks
    batch_seconds(1, pk);
    batch_seconds(1, pku);
    std::vector<double> tm, tp, tu;
    for (int b = 0; b < 5; ++b) {
      tm.push_back(batch_seconds(iters, mpi));
      tp.push_back(batch_seconds(iters, pk));
      tu.push_back(batch_seconds(iters, pku));
    }
    const double m = median(tm), p = median(tp), u = median(tu);
    const double bus = static_cast<double>(bytes) * 2.0 * (size - 1) / size;
    if (rank == 0) {
      std::printf("%10llu %6d %10.2f %10.2f %10.2f %8.3f %8.3f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
                  static_cast<unsigned long long>(bytes), iters, m * 1e6, p * 1e6, u * 1e6, m / p, m / u, bus / m / 1e9,
                  bus / p / 1e9, best(tm) * 1e6, best(tp) * 1e6, best(tu) * 1e6);
      std::fflush(stdout);
    }
  }
  pk_buffer_destroy(sbuf);
  pk_buffer_destroy(rbuf);
  pk_comm_destroy(checked);
  pk_comm_destroy(unchecked);
  pk_stream_destroy(stream);
  pk_runtime_destroy(rt);
  MPI_Finalize();
  return 0;
}
