/* SPDX-License-Identifier: MIT */
/*
 * Instruction-set dispatch and deterministic sin/cos (simd.h).
 *
 * sin/cos.  Forward kinematics turns every joint value into a sine and a
 * cosine.  glibc's sin and cos are correctly rounded in practice but have
 * no vector form, and a vector library's lanes normally differ from its
 * scalar function in the last bit, which would let a batch of
 * configurations give other distances than the same configurations one at
 * a time.  SLEEF's deterministic families (cinz: no FMA, finz: FMA) give
 * the same bits in the scalar and every vector width, within 1 ulp of the
 * true value.  One family is used for the whole process:
 *
 *   - the build chooses (CMake REPOSE_SINCOS: AUTO takes FMA when the
 *     build machine has it, or FMA / NOFMA);
 *   - a build that chose FMA running on a CPU without FMA (and AVX2, which
 *     SLEEF's 4-lane FMA code needs) uses cinz instead, since it cannot
 *     execute the other;
 *   - `hello` reports the family in force (sleef-finz-u10 or
 *     sleef-cinz-u10), so that clients and replicas can tell when two
 *     daemons' joint-space answers may differ in the last bits.
 */
#include "simd.h"

#include <sleef.h>
#include <stdlib.h>
#include <string.h>

#ifndef REPOSE_SINCOS_FMA
#define REPOSE_SINCOS_FMA 0
#endif

/* The scalar members of the two families.  sleef.h declares the FMA one
 * only when the translation unit is compiled for FMA; it is in the
 * library either way. */
Sleef_double_2 Sleef_finz_sincosd1_u10purecfma(double);

/* -1: not chosen yet. */
static int level_in_force = -1;
static int fma_family = -1;

int rp_simd_best_level_(void)
{
#ifdef RP_SIMD_X86
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma"))
        return RP_SIMD_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return RP_SIMD_AVX2;
#endif
    return RP_SIMD_PORTABLE;
}

const char *rp_simd_level_name_(int level)
{
    return level >= RP_SIMD_AVX512 ? "avx512" : level == RP_SIMD_AVX2 ? "avx2" : "portable";
}

static int cap(int level)
{
    int best = rp_simd_best_level_();
    if (level < RP_SIMD_PORTABLE)
        level = RP_SIMD_PORTABLE;
    return level < best ? level : best;
}

int rp_simd_force_level_(int level)
{
    int l = cap(level);
    __atomic_store_n(&level_in_force, l, __ATOMIC_RELAXED);
    return l;
}

int rp_simd_level_(void)
{
    int l = __atomic_load_n(&level_in_force, __ATOMIC_RELAXED);
    if (l < 0) {
        /* AVX2 by default, AVX-512 on request: on the AVX-512 machine this
         * was measured on, the 512-bit bodies made forward kinematics
         * slower (166 against 139 ns for the 9 frames of kin_bench's arm:
         * a check uses them in bursts too short to pay for the wider
         * registers' start-up and clock). */
        const char *env = getenv("REPOSE_SIMD");
        int want = RP_SIMD_AVX2;
        if (env && (!strcmp(env, "0") || !strcmp(env, "portable")))
            want = RP_SIMD_PORTABLE;
        else if (env && !strcmp(env, "avx512"))
            want = RP_SIMD_AVX512;
        l = cap(want);
        __atomic_store_n(&level_in_force, l, __ATOMIC_RELAXED);
    }
    return l;
}

void rp_simd_force_(int on)
{
    rp_simd_force_level_(on ? RP_SIMD_AVX512 : RP_SIMD_PORTABLE);
}

int rp_simd_enabled_(void)
{
    return rp_simd_level_() >= RP_SIMD_AVX2;
}

static int use_fma(void)
{
    int f = __atomic_load_n(&fma_family, __ATOMIC_RELAXED);
    if (f < 0) {
        f = 0;
#ifdef RP_SIMD_X86
        f = REPOSE_SINCOS_FMA && __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
#endif
        __atomic_store_n(&fma_family, f, __ATOMIC_RELAXED);
    }
    return f;
}

const char *rp_sincos_family_(void)
{
    return use_fma() ? "sleef-finz-u10" : "sleef-cinz-u10";
}

void rp_sincos_(double x, double *s, double *c)
{
    Sleef_double_2 r =
        use_fma() ? Sleef_finz_sincosd1_u10purecfma(x) : Sleef_cinz_sincosd1_u10purec(x);
    *s = r.x;
    *c = r.y;
}

void rp_sincos_n_(const double *x, double *s, double *c, size_t n)
{
    int fma = use_fma();
    size_t done = 0;
#ifdef RP_SIMD_X86
    int level = rp_simd_level_();
    if (level >= RP_SIMD_AVX512 && n >= 8) {
        done = n & ~(size_t)7;
        rp_sincos_n_avx512_(x, s, c, done, fma);
    } else if (level >= RP_SIMD_AVX2 && n >= 4) {
        done = n & ~(size_t)3;
        rp_sincos_n_avx2_(x, s, c, done, fma);
    }
#endif
    for (size_t i = done; i < n; i++)
        rp_sincos_(x[i], &s[i], &c[i]);
}
