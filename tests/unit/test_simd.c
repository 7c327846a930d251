/* SPDX-License-Identifier: MIT */
/*
 * Forward kinematics' sin/cos (src/scene/simd.c): the scalar function and
 * the vector lanes of every dispatch level give the same bits, within one
 * ulp of a long double reference, on ordinary joint values and on the
 * hard ones (signed zeros, subnormals, multiples of pi/2 and their
 * neighbours, huge finite arguments).
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scalar_is_within_one_ulp_of_long_double),
        cmocka_unit_test(every_level_and_length_gives_the_scalar_bits),
        cmocka_unit_test(level_names_and_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
