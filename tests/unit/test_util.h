/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the cmocka unit tests.  cmocka 1.1.5 has no
 * assert_double_equal and its assert_float_equal casts to float, so doubles
 * are compared here with an explicit absolute tolerance.
 */
#ifndef REPOSE_TEST_UTIL_H
#define REPOSE_TEST_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

/* Fails the test when |got - want| > tol or either is NaN. */
#define assert_near(got, want, tol)                                                                \
    do {                                                                                           \
        double g_ = (got), w_ = (want), t_ = (tol);                                                \
        if (!(fabs(g_ - w_) <= t_))                                                                \
            fail_msg("%s = %.17g, want %.17g within %.3g (off by %.3g)", #got, g_, w_, t_,         \
                     fabs(g_ - w_));                                                               \
    } while (0)

/* Bitwise equality of two doubles (distinguishes -0.0 from 0.0). */
/* A scene's shape as a pointer to a temporary (rp_scene_shape_at returns it
 * by value): valid to the end of the enclosing block. */
#define SCENE_SHAPE(sc, i) (&(rp_shape[1]){rp_scene_shape_at((sc), (i))}[0])

static inline int same_bits(double a, double b)
{
    uint64_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    return ua == ub;
}

#define assert_same_bits(a, b)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!same_bits(a_, b_))                                                                    \
            fail_msg("%s = %a and %s = %a differ bitwise", #a, a_, #b, b_);                        \
    } while (0)

/* splitmix64: small deterministic generator for seeded property tests. */
typedef struct test_rng {
    uint64_t s;
} test_rng;

static inline uint64_t rng_next(test_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform double in [lo, hi). */
static inline double rng_uniform(test_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(rng_next(r) >> 11) * 0x1.0p-53);
}

#ifdef REPOSE_TEST_DATA
/* The whole of tests/data/NAME, NUL-terminated (its length in *len); fails
 * the test when it cannot be read.  Free it. */
static inline char *test_read_data(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", REPOSE_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}
#endif

#endif /* REPOSE_TEST_UTIL_H */
