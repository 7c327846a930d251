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
