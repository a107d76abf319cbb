// vec_math.hpp — AVX2 and AVX-512 vector math shared by the CPU kernel files (compiled only into functions that
// carry __attribute__((target("avx2,fma"))) or target("avx512f,avx2,fma"); callers check have_isa first).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "primkit/backend_kit.hpp"

namespace pk::cpu {

// e^x = 2^n e^r for 8 floats: returns e^r, rounded once, and n (a whole number, as float). A Cody-Waite split
// (n ln2_hi exact for |n| < 2^15, |r| <= ln2/2), e^r - 1 - r by its Taylor polynomial to r^7 (truncation <= 5e-9
// relative), 1 + (r + r^2 P) rounded once. Accurate for |x| <= 88: ln2_lo's own rounding grows with n.
__attribute__((target("avx2,fma"))) inline __m256 exp_ps_reduced(__m256 x, __m256 &n) {
  n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2_hi has 9 significant bits: n * ln2_hi is exact for |n| < 2^15.
  const __m256 r =
      _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x));
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  return _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r));
}

// e^x for 8 floats with x in [-86, 88] (callers clamp or route other lanes elsewhere, so 2^n stays a normal
// float): e^r from exp_ps_reduced, 2^n added to its exponent bits. Measured error <= 1 ulp
// (tests/cpu/test_cpu_elementwise.cpp sweeps the range).
__attribute__((target("avx2,fma"))) inline __m256 exp_ps_in_range(__m256 x) {
  __m256 n;
  const __m256 y = exp_ps_reduced(x, n);
  const __m256i scale = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), scale));
}

// e^x * 2^-k for 8 floats with |x| <= 88, where `k_bits` is k << 23 and the caller keeps n - k within
// [-125, 126] (so the result is a normal float whatever n alone is). Same error as exp_ps_in_range: the power
// of two is exact.
__attribute__((target("avx2,fma"))) inline __m256 exp_ps_scaled(__m256 x, __m256i k_bits) {
  __m256 n;
  const __m256 y = exp_ps_reduced(x, n);
  const __m256i scale = _mm256_sub_epi32(_mm256_slli_epi32(_mm256_cvtps_epi32(n), 23), k_bits);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), scale));
}

// Outputs at least this large are written with non-temporal stores (see kit::kStreamingStoreBytes); for a
// row-wise op like softmax a regular store is half again the traffic of reading its input.
constexpr int64_t kStreamingBytes = pk::kit::kStreamingStoreBytes;

// Stores 4 floats, bypassing the caches when `stream` and p is 16-byte aligned. A chunk of work that streamed
// must end with _mm_sfence() before it counts as done (non-temporal stores are weakly ordered).
__attribute__((target("avx2,fma"))) inline void store4(float *p, __m128 v, bool stream) {
  if (stream && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
    _mm_stream_ps(p, v);
  } else {
    _mm_storeu_ps(p, v);
  }
}

// Eight floats, streamed past the caches when asked and p is 32-byte aligned.
__attribute__((target("avx2,fma"))) inline void store8(float *p, __m256 v, bool stream) {
  if (stream && (reinterpret_cast<uintptr_t>(p) & 31) == 0) {
    _mm256_stream_ps(p, v);
  } else {
    _mm256_storeu_ps(p, v);
  }
}

// --- AVX-512: the same arithmetic on 16 lanes ----------------------------------------------------------------

// GCC 12 warns that the AVX-512 intrinsics' own placeholder operand (_mm512_undefined_*) is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// exp_ps_reduced on 16 floats: the same split, polynomial and single rounding.
__attribute__((target("avx512f,avx2,fma"))) inline __m512 exp16_reduced(__m512 x, __m512 &n) {
  n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r =
      _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x));
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  return _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r));
}

// exp_ps_scaled on 16 floats (same contract: |x| <= 88, n - k within [-125, 126]).
__attribute__((target("avx512f,avx2,fma"))) inline __m512 exp16_scaled(__m512 x, __m512i k_bits) {
  __m512 n;
  const __m512 y = exp16_reduced(x, n);
  const __m512i scale = _mm512_sub_epi32(_mm512_slli_epi32(_mm512_cvtps_epi32(n), 23), k_bits);
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(y), scale));
}

// Sixteen floats, streamed past the caches when asked and p is 32-byte aligned (as two halves where it is not
// 64-byte aligned, so that a row that store8 would stream is streamed here too).
__attribute__((target("avx512f,avx2,fma"))) inline void store16(float *p, __m512 v, bool stream) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (stream && (a & 63) == 0) {
    _mm512_stream_ps(p, v);
  } else if (stream && (a & 31) == 0) {
    _mm256_stream_ps(p, _mm512_castps512_ps256(v));
    _mm256_stream_ps(p + 8, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  } else {
    _mm512_storeu_ps(p, v);
  }
}

#pragma GCC diagnostic pop

}  // namespace pk::cpu
