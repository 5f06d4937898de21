/* Peak arithmetic rate loops for bench/hw.py: independent chains of one instruction each, so
 * the loop runs at the instruction's throughput. Each returns a value that depends on every
 * step (the compiler cannot drop the work); the caller counts the operations. */
#include <immintrin.h>
#include <stdint.h>

#define CHAINS 12

__attribute__((target("avx2,fma"))) float fma256_loop(int64_t iters) {
    __m256 acc[CHAINS];
    for (int j = 0; j < CHAINS; ++j) acc[j] = _mm256_set1_ps((float)j);
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, c);
    float out = 0.0f;
    for (int j = 0; j < CHAINS; ++j) out += _mm256_cvtss_f32(acc[j]);
    return out;
}

__attribute__((target("avx512f"))) float fma512_loop(int64_t iters) {
    __m512 acc[CHAINS];
    for (int j = 0; j < CHAINS; ++j) acc[j] = _mm512_set1_ps((float)j);
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, c);
    float out = 0.0f;
    for (int j = 0; j < CHAINS; ++j) out += _mm512_reduce_add_ps(acc[j]);
    return out;
}

__attribute__((target("avx512f,avx512bf16"))) float bf16dot512_loop(int64_t iters) {
    __m512 acc[CHAINS];
    for (int j = 0; j < CHAINS; ++j) acc[j] = _mm512_set1_ps((float)j);
    const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, a);
    float out = 0.0f;
    for (int j = 0; j < CHAINS; ++j) out += _mm512_reduce_add_ps(acc[j]);
    return out;
}

__attribute__((target("avx512f,avx512vnni"))) int32_t vnni512_loop(int64_t iters) {
    __m512i acc[CHAINS];
    for (int j = 0; j < CHAINS; ++j) acc[j] = _mm512_set1_epi32(j);
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
    int32_t out = 0;
    for (int j = 0; j < CHAINS; ++j) out += _mm512_reduce_add_epi32(acc[j]);
    return out;
}

/* Streaming read: sums n floats (n a multiple of 64) with eight independent accumulators,
 * so that enough loads are in flight to reach the memory's read bandwidth on one core. */
__attribute__((target("avx512f"))) float read512_loop(const float* p, int64_t n) {
    __m512 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 128) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) acc[j] = _mm512_add_ps(acc[j], _mm512_loadu_ps(p + i + 16 * j));
    }
    float out = 0.0f;
    for (int j = 0; j < 8; ++j) out += _mm512_reduce_add_ps(acc[j]);
    return out;
}

__attribute__((target("avx2"))) float read256_loop(const float* p, int64_t n) {
    __m256 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 64) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) acc[j] = _mm256_add_ps(acc[j], _mm256_loadu_ps(p + i + 8 * j));
    }
    float out = 0.0f;
    for (int j = 0; j < 8; ++j) {
        float lanes[8];
        _mm256_storeu_ps(lanes, acc[j]);
        for (int l = 0; l < 8; ++l) out += lanes[l];
    }
    return out;
}
