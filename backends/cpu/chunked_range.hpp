// chunked_range.hpp — how parallel_for splits a range over threads: shared by the worker pool (cpu_backend.cpp)
// and the OpenMP team (openmp_team.cpp), which differ only in how they start and wait for their threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace pk::cpu {

// A thread's slice of a job's chunks: [next, end) left to claim.
struct alignas(64) ChunkSlice {
  std::atomic<int64_t> next{0};
  int64_t end = 0;
};

// [begin, end) in chunks of at least a quarter grain, up to 8 per thread: enough for the others to absorb a thread
// that starts late. Slice t owns a contiguous run of the chunks, the same part of the range in every job, so that a
// chain of ops over one tensor finds each part in the cache of the core that touched it last.
struct ChunkedRange {
  int64_t begin = 0, end = 0, step = 1, chunks = 0;

  // Plans [b, e) (non-empty) over `threads` slices.
  void plan(int64_t b, int64_t e, int64_t grain, ChunkSlice *slices, int64_t threads) {
    const int64_t n = e - b;
    const int64_t min_chunk = std::max<int64_t>(1, grain / 4);
    chunks = std::min<int64_t>(threads * 8, (n + min_chunk - 1) / min_chunk);
    begin = b;
    end = e;
    step = (n + chunks - 1) / chunks;
    for (int64_t t = 0; t < threads; ++t) {
      slices[t].next.store(chunks * t / threads, std::memory_order_relaxed);
      slices[t].end = chunks * (t + 1) / threads;
    }
  }

  // Thread `self` claims the chunks of its own slice first, then the others' left-overs, calling on_chunk(lo, hi)
  // for each chunk it claims (lo >= hi for a chunk past the end, which rounding of the step can leave).
  template <class OnChunk>
  void take(ChunkSlice *slices, int64_t threads, int64_t self, OnChunk &&on_chunk) const {
    for (int64_t k = 0; k < threads; ++k) {
      ChunkSlice &s = slices[(self + k) % threads];
      for (int64_t c = s.next.fetch_add(1); c < s.end; c = s.next.fetch_add(1)) {
        const int64_t lo = begin + c * step;
        on_chunk(lo, std::max(lo, std::min(end, lo + step)));
      }
    }
  }
};

}  // namespace pk::cpu
