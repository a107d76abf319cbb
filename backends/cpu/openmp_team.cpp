// openmp_team.cpp — parallel_for on oneDNN's OpenMP threads, so that the backend runs one set of threads.
//
// oneDNN (the PyPI build this backend links) runs its primitives and sgemm on GNU OpenMP. With the backend's own
// worker pool beside it, a process had two sets of threads per core: after a matmul, oneDNN's team spins waiting
// for its next region while the pool runs the next elementwise kernel on the same cores, and the other way round.
// On 2 cores (AVX-512 Xeon) a transformer block took 72 ms that way and 66 ms with oneDNN's threads told not to spin
// (OMP_WAIT_POLICY=PASSIVE, which the backend cannot set for a process it is loaded into). Here the backend's
// parallel_for runs on the same OpenMP team instead: the team of the calling thread, which libgomp keeps between
// regions and oneDNN uses too.
//
// The team is entered through GOMP_parallel, the entry GCC emits for `#pragma omp parallel` (libgomp's documented
// ABI, symbol version GOMP_4.0): the clang builds (the sanitizer runs) link GNU OpenMP by file and cannot use the
// pragma without LLVM's own OpenMP runtime, a second one. Without oneDNN on OpenMP, team_run is absent and the pool
// runs everything (cpu_backend.cpp).
#include "chunked_range.hpp"
#include "cpu_kernels.hpp"
#include "onednn_matmul.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>

#if defined(PRIMKIT_CPU_HAVE_ONEDNN) && DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
#define PRIMKIT_CPU_OPENMP_TEAM 1
extern "C" {
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
int omp_get_thread_num(void);
}
#else
#define PRIMKIT_CPU_OPENMP_TEAM 0
#endif

namespace pk::cpu {

#if PRIMKIT_CPU_OPENMP_TEAM
namespace {

struct TeamJob {
  const RangeFn *f = nullptr;
  ChunkedRange range;
  int threads = 1;
  ChunkSlice *slices = nullptr;
};

thread_local bool t_in_team = false;

// Each team thread takes its own chunks, then the others' left-overs (ChunkedRange::take). The region's closing
// barrier publishes every chunk's writes to the caller.
void team_body(void *data) {
  const TeamJob &job = *static_cast<const TeamJob *>(data);
  t_in_team = true;
  job.range.take(job.slices, job.threads, omp_get_thread_num(), [&](int64_t lo, int64_t hi) {
    if (lo < hi) (*job.f)(lo, hi);
  });
  t_in_team = false;
}

// PRIMKIT_CPU_THREADING=pool keeps the worker pool even with oneDNN on OpenMP (benchmarks compare the two).
bool team_wanted() {
  static const bool wanted = [] {
    const char *env = std::getenv("PRIMKIT_CPU_THREADING");
    return env == nullptr || std::strcmp(env, "pool") != 0;
  }();
  return wanted;
}

}  // namespace

bool team_available() {
  return team_wanted();
}

bool in_team_thread() {
  return t_in_team;
}

void team_run(int64_t begin, int64_t end, int64_t grain, int threads, const RangeFn &f) {
  thread_local std::unique_ptr<ChunkSlice[]> slices;
  thread_local int capacity = 0;
  if (capacity < threads) {
    slices.reset(new ChunkSlice[static_cast<size_t>(threads)]);
    capacity = threads;
  }
  TeamJob job;
  job.f = &f;
  job.range.plan(begin, end, grain, slices.get(), threads);
  job.threads = threads;
  job.slices = slices.get();
  GOMP_parallel(team_body, &job, static_cast<unsigned>(threads), 0);
}

#else

bool team_available() {
  return false;
}

bool in_team_thread() {
  return false;
}

void team_run(int64_t begin, int64_t end, int64_t, int, const RangeFn &f) {
  f(begin, end);  // never called: team_available() is false
}

#endif

}  // namespace pk::cpu
