/* SPDX-License-Identifier: MIT */
/*
 * The AVX-512 bodies of simd.h, compiled with -mavx512f -mavx2 -mfma
 * (CMakeLists.txt): called only when rp_simd_level_ says the CPU has them.
 */
#include "simd.h"

#include <immintrin.h>
#include <sleef.h>

void rp_sincos_n_avx512_(const double *x, double *s, double *c, size_t n, int fma)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        __m512d v = _mm512_loadu_pd(x + i);
        Sleef___m512d_2 r =
            fma ? Sleef_finz_sincosd8_u10avx512f(v) : Sleef_cinz_sincosd8_u10avx512fnofma(v);
        _mm512_storeu_pd(s + i, r.x);
        _mm512_storeu_pd(c + i, r.y);
    }
}

void rp_pairs_near_f32_avx512_(const float *x, const float *y, const float *z, const uint16_t *a,
                               const uint16_t *b, const float *r, size_t n, float at_up, float err,
                               uint32_t *keep)
{
    for (size_t i = 0; i < n; i++) {
        __m512 lim = _mm512_set1_ps(rp_f32_pair_limit_(at_up, r[i], err));
        size_t pa = (size_t)a[i] * RP_LANES, pb = (size_t)b[i] * RP_LANES;
        __m512 dx = _mm512_sub_ps(_mm512_loadu_ps(x + pa), _mm512_loadu_ps(x + pb));
        __m512 dy = _mm512_sub_ps(_mm512_loadu_ps(y + pa), _mm512_loadu_ps(y + pb));
        __m512 dz = _mm512_sub_ps(_mm512_loadu_ps(z + pa), _mm512_loadu_ps(z + pb));
        __m512 d2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)),
                                  _mm512_mul_ps(dz, dz));
        keep[i] = (uint32_t)_mm512_cmp_ps_mask(d2, lim, _CMP_LE_OQ);
    }
}
