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

/* ---- the float32 pair filter ----------------------------------------------------
 *
 * A batch of configurations asks, for every eligible ball pair of the
 * robot, in which configurations the two balls may come within `at` of
 * touching.  Asked in float with the configurations across the lanes, a
 * pair costs one or two vector instructions per step for sixteen
 * configurations.  A float answer is only a filter: a lane it keeps goes
 * on to the exact double kernels, so keeping too many costs time and never
 * changes a result; dropping a lane whose balls come within `at` could.
 * So a lane is dropped only when the float computation proves the balls
 * far, with this bound (u = 2^-24, the float unit roundoff; every
 * operation is IEEE single precision, round to nearest, never fused):
 *
 *   Coordinates.  Callers subtract an origin o from the double centres C
 *   in double and round to float: every coordinate X~ is within
 *   (u + 2^-53 (1 + u))|C - o| <= c1 u R of C - o, c1 = 1 + 2^-28, R
 *   bounding every |C - o| and every radius sum r below.
 *   Differences.  e = A~ - B~ (exact, in real numbers) is within
 *   2 c1 u R of the exact difference d of the centres in each component,
 *   so | |e| - |d| | <= 2 sqrt(3) c1 u R <= 3.4642 u R.  The computed
 *   components dx~ = fl(A~x - B~x) are within u|e_x| of e's.
 *   Squares.  d2 = fl(fl(fl(dx~^2) + fl(dy~^2)) + fl(dz~^2)) is at most
 *   (1 + gamma_3)(1 + u)^2 |e|^2, gamma_3 = 3u / (1 - 3u).  The limit
 *   L = fl(fl(T * T) * K) with K = 1 + 2^-21 = 1 + 8u is at least
 *   T^2 (1 - u)^2 (1 + 8u) > T^2 (1 + gamma_3)(1 + u)^2 for T >= 0, so
 *   dropping (d2 > L) gives |e| > T: the relative errors of the
 *   subtractions, squares and sums are all inside K.
 *   Threshold.  at_up >= at and r~ >= r (both rounded up), so
 *   t~ = fl(at_up + r~) >= at + r - u (|at| + r) (1 + 3u), and
 *   T = fl(t~ + err) >= t~ + err - u |t~ + err|
 *     >= at + r + err (1 - u) - 2u (|at| + r) (1 + 3u).
 *   Decision.  Dropping then gives |d| >= |e| - 3.4642 u R > T - 3.4642 u R
 *   >= at + r + err (1 - u) - (5.4642 R + 2 |at|) u (1 + 3u), which is
 *   > at + r whenever err >= (5.4642 R + 2 |at|) u (1 + 5u).
 *   rp_f32_filter_err_ takes (5.47 R + 2.01 |at|) u (1 + 2^-20) + 1e-20,
 *   rounded up; the last term covers squares that underflow (components
 *   below 1e-19 lose their low bits, by at most 1e-45 each).  The bound is
 *   close to what rounding reaches: two balls near each other far from the
 *   origin, on a diagonal, whose coordinates all round by half an ulp the
 *   wrong way, come out 3.46 u R farther apart than they are; test_simd
 *   builds such pairs and shows that half the bound drops pairs it must
 *   keep.
 *   Range.  With R and |at| at most RP_F32_RANGE (1e15), no square or sum
 *   overflows a float (3.4e38); callers beyond it use the double filters.
 *
 * test_simd checks the bound against long double distances. */

double rp_f32_bound_scale_ = 1.0;

static void pairs_near_f32_portable(const float *x, const float *y, const float *z,
                                    const uint16_t *a, const uint16_t *b, const float *r, size_t n,
                                    float at_up, float err, uint32_t *keep)
{
    for (size_t i = 0; i < n; i++) {
        float lim = rp_f32_pair_limit_(at_up, r[i], err);
        const float *ax = x + (size_t)a[i] * RP_LANES, *ay = y + (size_t)a[i] * RP_LANES,
                    *az = z + (size_t)a[i] * RP_LANES;
        const float *bx = x + (size_t)b[i] * RP_LANES, *by = y + (size_t)b[i] * RP_LANES,
                    *bz = z + (size_t)b[i] * RP_LANES;
        uint32_t k = 0;
        for (unsigned c = 0; c < RP_LANES; c++) {
            float dx = ax[c] - bx[c], dy = ay[c] - by[c], dz = az[c] - bz[c];
            float d2 = (dx * dx + dy * dy) + dz * dz;
            k |= (uint32_t)(d2 <= lim) << c;
        }
        keep[i] = k;
    }
}

void rp_pairs_near_f32_(const float *x, const float *y, const float *z, const uint16_t *a,
                        const uint16_t *b, const float *r, size_t n, float at_up, float err,
                        uint32_t *keep)
{
#ifdef RP_SIMD_X86
    int level = rp_simd_level_();
    if (level >= RP_SIMD_AVX512) {
        rp_pairs_near_f32_avx512_(x, y, z, a, b, r, n, at_up, err, keep);
        return;
    }
    if (level >= RP_SIMD_AVX2) {
        rp_pairs_near_f32_avx2_(x, y, z, a, b, r, n, at_up, err, keep);
        return;
    }
#endif
    pairs_near_f32_portable(x, y, z, a, b, r, n, at_up, err, keep);
}
