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

void rp_pairs_near_f32_avx2_(const float *x, const float *y, const float *z, const uint16_t *a,
                             const uint16_t *b, const float *r, size_t n, float at_up, float err,
                             uint32_t *keep)
{
    for (size_t i = 0; i < n; i++) {
        __m256 lim = _mm256_set1_ps(rp_f32_pair_limit_(at_up, r[i], err));
        size_t pa = (size_t)a[i] * RP_LANES, pb = (size_t)b[i] * RP_LANES;
        uint32_t k = 0;
        for (unsigned c = 0; c < RP_LANES; c += 8) {
            __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(x + pa + c), _mm256_loadu_ps(x + pb + c));
            __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(y + pa + c), _mm256_loadu_ps(y + pb + c));
            __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(z + pa + c), _mm256_loadu_ps(z + pb + c));
            __m256 d2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                      _mm256_mul_ps(dz, dz));
            k |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(d2, lim, _CMP_LE_OQ)) << c;
        }
        keep[i] = k;
    }
}
