/* SPDX-License-Identifier: MIT */
/*
 * Forward kinematics' sin/cos (src/scene/simd.c): the scalar function and
 * the vector lanes of every dispatch level give the same bits, within one
 * ulp of a long double reference, on ordinary joint values and on the
 * hard ones (signed zeros, subnormals, multiples of pi/2 and their
 * neighbours, huge finite arguments).
 *
 * The float32 pair filter of batched checks (rp_pairs_near_f32_): a pair
 * it drops is farther apart than its threshold by a long double
 * reference, on pairs built at the threshold and a few float ulp either
 * side, far from the origin and straddling it along a diagonal (where the
 * roundings add up); pairs clearly beyond are dropped; every level gives
 * the same masks; and half of the error bound drops pairs it must keep.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "scene/simd.h"

#define N_RANDOM 60000

/* The inputs: random values over several ranges, then the hard cases. */
static size_t inputs(double *x, size_t cap)
{
    test_rng rng = {0x51eef};
    size_t n = 0;
    static const double ranges[] = {1.0, 4.0, 10.0, 1e3, 1e8};
    for (size_t i = 0; i < N_RANDOM && n < cap; i++) {
        double r = ranges[i % (sizeof ranges / sizeof ranges[0])];
        x[n++] = rng_uniform(&rng, -r, r);
    }
    static const double special[] = {
        0.0,     -0.0,     DBL_TRUE_MIN, -DBL_TRUE_MIN, DBL_MIN,  1e-300,
        1e-9,    1e15,     -1e15,        1e22,          1e300,    -1e300,
        DBL_MAX, -DBL_MAX, 355.0,        103993,        6.283185, 1.5707963267948966};
    for (size_t i = 0; i < sizeof special / sizeof special[0] && n < cap; i++)
        x[n++] = special[i];
    /* k * pi/2 and the eight doubles either side, k up to 1000. */
    for (int k = -1000; k <= 1000 && n + 17 < cap; k += 7) {
        double c = (double)k * 1.5707963267948966;
        for (int u = -8; u <= 8; u++) {
            double v = c;
            for (int s = 0; s < abs(u); s++)
                v = nextafter(v, u < 0 ? -INFINITY : INFINITY);
            x[n++] = v;
        }
    }
    return n;
}

/* |got - want| in units of got's last place. */
static long double ulps(double got, long double want)
{
    double g = fabs(got);
    long double ulp =
        g < DBL_MIN ? (long double)DBL_TRUE_MIN : (long double)(nextafter(g, INFINITY) - g);
    return fabsl((long double)got - want) / ulp;
}

static void scalar_is_within_one_ulp_of_long_double(void **state)
{
    (void)state;
    size_t cap = N_RANDOM + 1000 + 3000;
    double *x = malloc(cap * sizeof *x);
    size_t n = inputs(x, cap);
    long double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double s, c;
        rp_sincos_(x[i], &s, &c);
        long double ws = sinl((long double)x[i]), wc = cosl((long double)x[i]);
        long double es = ulps(s, ws), ec = ulps(c, wc);
        /* Near a zero of sin or cos the ulp of the result is tiny and the
         * long double reference itself is only good to 2^-64 relative to
         * the argument reduction: allow what the reference can resolve. */
        long double floor_s = fabsl(ws) < 1e-10L ? 1e-18L * fabsl((long double)x[i]) : 0;
        long double floor_c = fabsl(wc) < 1e-10L ? 1e-18L * fabsl((long double)x[i]) : 0;
        if (!(es <= 1.0L || fabsl((long double)s - ws) <= floor_s))
            fail_msg("sin(%a) = %a, %.3Lg ulp from %.21Lg", x[i], s, es, ws);
        if (!(ec <= 1.0L || fabsl((long double)c - wc) <= floor_c))
            fail_msg("cos(%a) = %a, %.3Lg ulp from %.21Lg", x[i], c, ec, wc);
        if (es > worst)
            worst = es;
        if (ec > worst)
            worst = ec;
    }
    /* Exact zeros keep their sign: sin(-0) = -0. */
    double s, c;
    rp_sincos_(-0.0, &s, &c);
    assert_true(signbit(s) && c == 1.0);
    printf("%zu arguments, worst %.3Lg ulp (%s)\n", n, worst, rp_sincos_family_());
    free(x);
}

static void every_level_and_length_gives_the_scalar_bits(void **state)
{
    (void)state;
    size_t cap = N_RANDOM + 1000 + 3000;
    double *x = malloc(cap * sizeof *x), *s = malloc(cap * sizeof *s), *c = malloc(cap * sizeof *c),
           *s1 = malloc(cap * sizeof *s1), *c1 = malloc(cap * sizeof *c1);
    size_t n = inputs(x, cap);
    for (size_t i = 0; i < n; i++)
        rp_sincos_(x[i], &s1[i], &c1[i]);
    int was = rp_simd_level_(), reached = RP_SIMD_PORTABLE;
    for (int lv = RP_SIMD_PORTABLE; lv <= RP_SIMD_AVX512; lv++) {
        int got = rp_simd_force_level_(lv);
        assert_true(got <= lv && got <= rp_simd_best_level_());
        assert_int_equal(rp_simd_level_(), got);
        if (got > reached)
            reached = got;
        /* The whole array, then every length 1..19 at every offset 0..8
         * (vector bodies and scalar tails). */
        rp_sincos_n_(x, s, c, n);
        for (size_t i = 0; i < n; i++)
            if (!same_bits(s[i], s1[i]) || !same_bits(c[i], c1[i]))
                fail_msg("level %s: sincos(%a) lane gives %a %a, scalar %a %a",
                         rp_simd_level_name_(got), x[i], s[i], c[i], s1[i], c1[i]);
        for (size_t off = 0; off <= 8; off++)
            for (size_t len = 1; len <= 19; len++) {
                size_t at = 2000 + off * 37;
                rp_sincos_n_(x + at, s, c, len);
                for (size_t i = 0; i < len; i++)
                    assert_true(same_bits(s[i], s1[at + i]) && same_bits(c[i], c1[at + i]));
            }
    }
    rp_simd_force_level_(was);
    printf("%zu arguments, levels up to %s (best on this CPU: %s)\n", n,
           rp_simd_level_name_(reached), rp_simd_level_name_(rp_simd_best_level_()));
    free(x);
    free(s);
    free(c);
    free(s1);
    free(c1);
}

static void level_names_and_caps(void **state)
{
    (void)state;
    int was = rp_simd_level_();
    assert_string_equal(rp_simd_level_name_(RP_SIMD_PORTABLE), "portable");
    assert_string_equal(rp_simd_level_name_(RP_SIMD_AVX2), "avx2");
    assert_string_equal(rp_simd_level_name_(RP_SIMD_AVX512), "avx512");
    assert_int_equal(rp_simd_force_level_(-3), RP_SIMD_PORTABLE);
    assert_false(rp_simd_enabled_());
    assert_int_equal(rp_simd_force_level_(99), rp_simd_best_level_());
    rp_simd_force_(0);
    assert_int_equal(rp_simd_level_(), RP_SIMD_PORTABLE);
    rp_simd_force_(1);
    assert_int_equal(rp_simd_level_(), rp_simd_best_level_());
    const char *f = rp_sincos_family_();
    assert_true(!strcmp(f, "sleef-finz-u10") || !strcmp(f, "sleef-cinz-u10"));
    rp_simd_force_level_(was);
}

/* ---- the float32 pair filter ------------------------------------------------ */

#define FP 16 /* pairs per call */

typedef struct fcase {
    double a[FP][3], b[FP][3]; /* ball centres (world) */
    double o[3];               /* the origin the caller subtracts */
    float r[FP];               /* radius sums, floats */
    double at;
} fcase;

/* The filter as check.c calls it: coordinates relative to o rounded to
 * float, R bounding them and the radius sums, `at` rounded up.  Lane c of
 * every ball holds the same centre, so a pair's mask is all lanes or none. */
static float run_filter(const fcase *fc, uint32_t keep[FP])
{
    static float x[2 * FP * RP_LANES], y[2 * FP * RP_LANES], z[2 * FP * RP_LANES];
    uint16_t pa[FP], pb[FP];
    double R = 0.0;
    for (int i = 0; i < FP; i++) {
        for (int s = 0; s < 2; s++) {
            const double *c = s ? fc->b[i] : fc->a[i];
            double X[3] = {c[0] - fc->o[0], c[1] - fc->o[1], c[2] - fc->o[2]};
            for (int k = 0; k < 3; k++)
                R = fmax(R, fabs(X[k]));
            for (int l = 0; l < RP_LANES; l++) {
                size_t at = (size_t)(2 * i + s) * RP_LANES + (size_t)l;
                x[at] = (float)X[0];
                y[at] = (float)X[1];
                z[at] = (float)X[2];
            }
        }
        R = fmax(R, (double)fc->r[i]);
        pa[i] = (uint16_t)(2 * i);
        pb[i] = (uint16_t)(2 * i + 1);
    }
    R *= 1.0 + 0x1p-50; /* bounds the exact C - o too */
    float err = rp_f32_filter_err_(R, fc->at);
    rp_pairs_near_f32_(x, y, z, pa, pb, fc->r, FP, rp_f32_up_(fc->at), err, keep);
    return err;
}

/* The exact distance of pair i, and its threshold at + r. */
static long double pair_dist(const fcase *fc, int i)
{
    long double s = 0.0L;
    for (int k = 0; k < 3; k++) {
        long double d = (long double)fc->a[i][k] - (long double)fc->b[i][k];
        s += d * d;
    }
    return sqrtl(s);
}

/* A float at or below x. */
static float f32_down(long double x)
{
    float f = (float)x;
    while ((long double)f > x)
        f = nextafterf(f, -INFINITY);
    return f;
}

/* Pairs straddling the origin o along the diagonal, coordinates just above
 * 1.155 (their float roundings, the difference's and the threshold's all
 * of the largest size there), each radius sum the smallest float that
 * keeps the pair within at + r: the filter must keep every one. */
static void diagonal_case(fcase *fc, test_rng *rng, double origin)
{
    long double dmin = INFINITY;
    for (int k = 0; k < 3; k++)
        fc->o[k] = origin;
    long double d[FP];
    for (int i = 0; i < FP; i++) {
        double a = 1.155 + rng_uniform(rng, 0.0, 0.01), b = 1.155 + rng_uniform(rng, 0.0, 0.01);
        for (int k = 0; k < 3; k++) {
            fc->a[i][k] = origin + a;
            fc->b[i][k] = origin - b;
        }
        d[i] = pair_dist(fc, i);
        dmin = d[i] < dmin ? d[i] : dmin;
    }
    fc->at = f32_down(dmin - 0.002L);
    for (int i = 0; i < FP; i++) {
        float r = (float)(d[i] - (long double)fc->at);
        while ((long double)fc->at + (long double)r < d[i])
            r = nextafterf(r, INFINITY);
        fc->r[i] = r;
    }
}

/* Close pairs (about 1 apart) on a diagonal at about 600 from the origin
 * o, every coordinate rounding to float by nearly half an ulp the wrong
 * way (A's up, B's down): the float distance exceeds the exact one by
 * about 2 sqrt(3) u R, the most the coordinates' rounding can do; `at` 0
 * and each radius sum the smallest float at or above the distance. */
static void rounding_case(fcase *fc, test_rng *rng, double origin)
{
    const double ulp = 0x1p-14;           /* of floats in [512, 1024) */
    const double s = 0.5 * ulp - 0x1p-36; /* nearly half of it */
    for (int k = 0; k < 3; k++)
        fc->o[k] = origin;
    fc->at = 0.0;
    for (int i = 0; i < FP; i++) {
        double kk = (double)(9000 + rng_next(rng) % 1000);
        double h = 512.0 + (double)(rng_next(rng) % 100000) * ulp, g = h + kk * ulp;
        for (int k = 0; k < 3; k++) {
            fc->a[i][k] = origin + (g - s);
            fc->b[i][k] = origin + (h + s);
        }
        long double d = pair_dist(fc, i);
        float r = (float)d;
        while ((long double)r < d)
            r = nextafterf(r, INFINITY);
        fc->r[i] = r;
    }
}

/* Pairs in random directions about a random point near a far origin, at
 * the threshold times (1 + delta): delta from -40 to +40 float ulp and
 * +-1e-12; `at` of either sign. */
static void random_case(fcase *fc, test_rng *rng, double scale, double origin)
{
    double at = rng_uniform(rng, -0.5, 2.0) * scale;
    fc->at = at;
    for (int k = 0; k < 3; k++)
        fc->o[k] = origin * rng_uniform(rng, -1.0, 1.0);
    for (int i = 0; i < FP; i++) {
        float r = (float)(rng_uniform(rng, 0.6, 1.0) * scale);
        fc->r[i] = r;
        long double want = (long double)at + (long double)r;
        int step = (int)(rng_next(rng) % 83) - 41;
        long double delta = step == 41 ? 1e-12L : step == -41 ? -1e-12L : step * 0x1p-24L;
        long double dist = want * (1.0L + delta);
        double dir[3], n = 0.0;
        for (int k = 0; k < 3; k++) {
            dir[k] = rng_uniform(rng, -1.0, 1.0);
            n += dir[k] * dir[k];
        }
        n = sqrt(n);
        for (int k = 0; k < 3; k++) {
            double c = fc->o[k] + rng_uniform(rng, -1.0, 1.0) * scale;
            fc->a[i][k] = (double)(c + (long double)dir[k] / n * dist / 2);
            fc->b[i][k] = (double)(c - (long double)dir[k] / n * dist / 2);
        }
    }
}

typedef struct fcount {
    long unsafe;  /* dropped with the exact distance at or below at + r */
    long loose;   /* kept though beyond at + r + 3 err (and a relative 1e-6) */
    long dropped; /* dropped, in all */
    long pairs;
} fcount;

/* Runs one case at every level; the masks must agree and be whole. */
static void judge(const fcase *fc, fcount *n)
{
    uint32_t keep[FP], first[FP];
    int was = rp_simd_level_();
    float err = 0.0f;
    for (int level = RP_SIMD_PORTABLE; level <= rp_simd_best_level_(); level++) {
        rp_simd_force_level_(level);
        err = run_filter(fc, level == RP_SIMD_PORTABLE ? first : keep);
        if (level != RP_SIMD_PORTABLE)
            assert_memory_equal(keep, first, sizeof keep);
    }
    rp_simd_force_level_(was);
    uint32_t all = ((uint32_t)1 << RP_LANES) - 1;
    for (int i = 0; i < FP; i++) {
        assert_true(first[i] == 0 || first[i] == all);
        long double d = pair_dist(fc, i), want = (long double)fc->at + (long double)fc->r[i];
        n->pairs++;
        n->dropped += first[i] == 0;
        n->unsafe += first[i] == 0 && d <= want;
        n->loose += first[i] != 0 && d > want + 3.0L * err + 1e-6L * fabsl(want);
    }
}

static void filter_drops_only_pairs_beyond_the_threshold(void **state)
{
    (void)state;
    test_rng rng = {0xf32f};
    fcase fc;
    fcount n = {0, 0, 0, 0};
    static const double origins[] = {0.0, 1000.25, -3e5};
    for (int t = 0; t < 3000; t++) {
        diagonal_case(&fc, &rng, origins[t % 3]);
        judge(&fc, &n);
    }
    for (int t = 0; t < 3000; t++) {
        rounding_case(&fc, &rng, origins[t % 2]);
        judge(&fc, &n);
    }
    assert_int_equal(n.unsafe, 0);
    static const double scales[] = {1e-3, 1.0, 1e3};
    static const double far[] = {0.0, 10.0, 1e6};
    long dropped_before = n.dropped;
    for (int t = 0; t < 9000; t++) {
        random_case(&fc, &rng, scales[t % 3], far[(t / 3) % 3]);
        judge(&fc, &n);
    }
    assert_int_equal(n.unsafe, 0);
    assert_int_equal(n.loose, 0);
    /* The random pairs beyond the threshold by more than the bound were
     * dropped: the filter decides, it does not only pass pairs on. */
    assert_true(n.dropped - dropped_before > 9000 * FP / 4);
    printf("filter: %ld pairs, %ld dropped, none wrongly\n", n.pairs, n.dropped);
}

/* The bound is not much looser than rounding can reach: with half of it,
 * pairs whose coordinates round the wrong way are dropped though they
 * touch. */
static void half_the_filter_bound_drops_pairs_it_must_keep(void **state)
{
    (void)state;
    test_rng rng = {0xbad};
    fcase fc;
    fcount half = {0, 0, 0, 0}, whole = {0, 0, 0, 0};
    for (int t = 0; t < 3000; t++) {
        rounding_case(&fc, &rng, t % 2 ? 1000.25 : 0.0);
        rp_f32_bound_scale_ = 0.5;
        judge(&fc, &half);
        rp_f32_bound_scale_ = 1.0;
        judge(&fc, &whole);
    }
    printf("half the bound: %ld of %ld touching pairs dropped; whole: %ld\n", half.unsafe,
           half.pairs, whole.unsafe);
    assert_int_equal(whole.unsafe, 0);
    assert_true(half.unsafe > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scalar_is_within_one_ulp_of_long_double),
        cmocka_unit_test(every_level_and_length_gives_the_scalar_bits),
        cmocka_unit_test(level_names_and_caps),
        cmocka_unit_test(filter_drops_only_pairs_beyond_the_threshold),
        cmocka_unit_test(half_the_filter_bound_drops_pairs_it_must_keep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
