/* SPDX-License-Identifier: MIT */
/*
 * The AVX2 bodies of simd.h, compiled with -mavx2 -mfma (CMakeLists.txt):
 * called only when rp_simd_level_ says the CPU has them.
 */
#include "simd.h"

#include <immintrin.h>
#include <sleef.h>

void rp_sincos_n_avx2_(const double *x, double *s, double *c, size_t n, int fma)
{
    for (size_t i = 0; i + 4 <= n; i += 4) {
        __m256d v = _mm256_loadu_pd(x + i);
        Sleef___m256d_2 r = fma ? Sleef_finz_sincosd4_u10avx2(v) : Sleef_cinz_sincosd4_u10avx(v);
        _mm256_storeu_pd(s + i, r.x);
        _mm256_storeu_pd(c + i, r.y);
    }
}
