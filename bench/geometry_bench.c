/* SPDX-License-Identifier: MIT */
/*
 * geometry_bench — nanoseconds per call of the repose distance kernels.
 *
 * Pairs are generated up front from a fixed seed (so runs are comparable and
 * generation is not timed): sphere centres and capsule first endpoints are
 * uniform in the unit cube [0, 1]^3, capsule axes have a uniformly random
 * direction and a length uniform in [0, 0.3] m, radii are uniform in
 * [0, 0.05] m.  Random pairs are in general position (no parallel or
 * crossing axes except by chance).
 *
 * A pass calls one kernel on every pair `reps` times, where `reps` is
 * calibrated once per kernel so that a pass takes at least the target time.
 * Results are summed and the sum is stored to a volatile sink, so no call can
 * be dropped.  The table reports the median (and min/max) over the passes.
 *
 * Usage: geometry_bench [--passes N] [--pairs N] [--quick]
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_rng.h"
#include "repose/geometry.h"

#define DEFAULT_PASSES 11
#define DEFAULT_PAIRS 4096
#define QUICK_PASSES 3
#define DEFAULT_PASS_NS 20000000.0 /* 20 ms per pass */
#define QUICK_PASS_NS 2000000.0    /* 2 ms per pass with --quick */
#define SEED UINT64_C(0x5eed0f2e905e2024)

#define MAX_LEN 0.3
#define MAX_RADIUS 0.05

/* Written after every pass so the accumulated results are observable. */
static volatile double g_sink;

/* ---- random inputs (splitmix64 from bench_rng.h) ------------------------- */

static rp_vec3 rng_point(uint64_t *state)
{
    rp_vec3 p;
    p.x = rng_unit(state);
    p.y = rng_unit(state);
    p.z = rng_unit(state);
    return p;
}

/* Uniformly distributed unit vector (rejection sampling in the cube). */
static rp_vec3 rng_direction(uint64_t *state)
{
    for (;;) {
        double x = 2.0 * rng_unit(state) - 1.0;
        double y = 2.0 * rng_unit(state) - 1.0;
        double z = 2.0 * rng_unit(state) - 1.0;
        double n2 = x * x + y * y + z * z;
        if (n2 > 1e-6 && n2 <= 1.0) {
            double inv = 1.0 / sqrt(n2);
            rp_vec3 d = {x * inv, y * inv, z * inv};
            return d;
        }
    }
}

static rp_sphere rng_sphere(uint64_t *state)
{
    rp_sphere s;
    s.center = rng_point(state);
    s.radius = MAX_RADIUS * rng_unit(state);
    return s;
}

static rp_capsule rng_capsule(uint64_t *state)
{
    rp_capsule c;
    c.a = rng_point(state);
    rp_vec3 d = rng_direction(state);
    double len = MAX_LEN * rng_unit(state);
    c.b.x = c.a.x + len * d.x;
    c.b.y = c.a.y + len * d.y;
    c.b.z = c.a.z + len * d.z;
    c.radius = MAX_RADIUS * rng_unit(state);
    return c;
}

/* ---- the data set ------------------------------------------------------ */

typedef struct bench_data {
    size_t n;
    rp_sphere *sa, *sb;
    rp_capsule *ca, *cb;
    rp_shape *ka, *kb; /* capsule pairs as tagged shapes */
} bench_data;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "geometry_bench: out of memory\n");
        exit(EXIT_FAILURE);
    }
    return p;
}

static void data_init(bench_data *d, size_t n)
{
    uint64_t state = SEED;
    d->n = n;
    d->sa = xcalloc(n, sizeof *d->sa);
    d->sb = xcalloc(n, sizeof *d->sb);
    d->ca = xcalloc(n, sizeof *d->ca);
    d->cb = xcalloc(n, sizeof *d->cb);
    d->ka = xcalloc(n, sizeof *d->ka);
    d->kb = xcalloc(n, sizeof *d->kb);
    for (size_t i = 0; i < n; i++) {
        d->sa[i] = rng_sphere(&state);
        d->sb[i] = rng_sphere(&state);
        d->ca[i] = rng_capsule(&state);
        d->cb[i] = rng_capsule(&state);
        d->ka[i] = rp_shape_from_capsule(d->ca[i]);
        d->kb[i] = rp_shape_from_capsule(d->cb[i]);
    }
}

static void data_free(bench_data *d)
{
    free(d->sa);
    free(d->sb);
    free(d->ca);
    free(d->cb);
    free(d->ka);
    free(d->kb);
}

/* ---- kernels ----------------------------------------------------------- */

/* Each runner makes reps * n direct calls and returns the sum of results. */

static double run_sphere_sphere(const bench_data *d, long reps)
{
    double acc = 0.0;
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < d->n; i++)
            acc += rp_sphere_sphere_signed_distance(&d->sa[i], &d->sb[i]);
    return acc;
}

static double run_capsule_sphere(const bench_data *d, long reps)
{
    double acc = 0.0;
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < d->n; i++)
            acc += rp_capsule_sphere_signed_distance(&d->ca[i], &d->sb[i]);
    return acc;
}

static double run_capsule_capsule(const bench_data *d, long reps)
{
    double acc = 0.0;
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < d->n; i++)
            acc += rp_capsule_capsule_signed_distance(&d->ca[i], &d->cb[i]);
    return acc;
}

static double run_shape_distance(const bench_data *d, long reps)
{
    double acc = 0.0;
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < d->n; i++)
            acc += rp_shape_signed_distance(&d->ka[i], &d->kb[i]);
    return acc;
}

static double run_shape_contact(const bench_data *d, long reps)
{
    double acc = 0.0;
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < d->n; i++) {
            rp_contact c = rp_shape_contact(&d->ka[i], &d->kb[i]);
            acc += c.distance + c.normal.x + c.point_a.y + c.point_b.z;
        }
    return acc;
}

typedef struct kernel {
    const char *name;
    double (*run)(const bench_data *d, long reps);
} kernel;

static const kernel KERNELS[] = {
    {"sphere-sphere", run_sphere_sphere},      {"capsule-sphere", run_capsule_sphere},
    {"capsule-capsule", run_capsule_capsule},  {"shape-distance (cc)", run_shape_distance},
    {"shape-contact (cc)", run_shape_contact},
};
#define N_KERNELS (sizeof KERNELS / sizeof KERNELS[0])

/* ---- timing ------------------------------------------------------------ */

static double now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("geometry_bench: clock_gettime");
        exit(EXIT_FAILURE);
    }
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Wall time of one pass of `reps` repetitions, ns. */
static double time_pass(const kernel *k, const bench_data *d, long reps)
{
    double t0 = now_ns();
    double acc = k->run(d, reps);
    double t1 = now_ns();
    g_sink = g_sink + acc;
    return t1 - t0;
}

/* Smallest repetition count whose pass takes at least target_ns (also warms
 * caches and branch predictors). */
static long calibrate(const kernel *k, const bench_data *d, double target_ns)
{
    long reps = 1;
    for (;;) {
        double t = time_pass(k, d, reps);
        if (t >= target_ns)
            return reps;
        if (t < target_ns / 64.0) {
            reps *= 8;
        } else {
            double want = (double)reps * target_ns / t * 1.05 + 1.0;
            long next = (long)want;
            reps = next > reps ? next : reps + 1;
        }
        if ((double)reps * (double)d->n > 1e10) /* kernel too fast to time */
            return reps;
    }
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static double median_sorted(const double *v, size_t n)
{
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- command line ------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: geometry_bench [--passes N] [--pairs N] [--quick]\n"
            "  --passes N  timed passes per kernel (default %d)\n"
            "  --pairs N   random pairs per pass (default %d)\n"
            "  --quick     %d short passes (~2 ms), for a smoke run\n",
            DEFAULT_PASSES, DEFAULT_PAIRS, QUICK_PASSES);
}

/* Parses a positive integer option value; exits with usage on error. */
static long parse_count(const char *opt, const char *s, long max)
{
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *s == '\0' || *end != '\0' || errno != 0 || v < 1 || v > max) {
        fprintf(stderr, "geometry_bench: %s needs an integer in 1..%ld, got '%s'\n", opt, max,
                s ? s : "");
        usage(stderr);
        exit(2);
    }
    return v;
}

/* Matches "--name VALUE" and "--name=VALUE"; advances *i past the value. */
static const char *option_value(const char *name, int argc, char **argv, int *i)
{
    size_t len = strlen(name);
    const char *arg = argv[*i];
    if (strncmp(arg, name, len) != 0)
        return NULL;
    if (arg[len] == '=')
        return arg + len + 1;
    if (arg[len] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "geometry_bench: %s needs a value\n", name);
        usage(stderr);
        exit(2);
    }
    return argv[++*i];
}

int main(int argc, char **argv)
{
    long passes = DEFAULT_PASSES, pairs = DEFAULT_PAIRS;
    int passes_set = 0;
    int quick = 0;

    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if ((v = option_value("--passes", argc, argv, &i)) != NULL) {
            passes = parse_count("--passes", v, 100000);
            passes_set = 1;
        } else if ((v = option_value("--pairs", argc, argv, &i)) != NULL) {
            pairs = parse_count("--pairs", v, 100000000);
        } else {
            fprintf(stderr, "geometry_bench: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (quick && !passes_set)
        passes = QUICK_PASSES;
    double target_ns = quick ? QUICK_PASS_NS : DEFAULT_PASS_NS;

    bench_data d;
    data_init(&d, (size_t)pairs);
    double *ns = xcalloc((size_t)passes, sizeof *ns);

    printf("repose geometry_bench: %ld pairs, %ld passes of >= %.0f ms each, seed 0x%016llx\n",
           pairs, passes, target_ns / 1e6, (unsigned long long)SEED);

    double checksum = 0.0;
    for (size_t k = 0; k < N_KERNELS; k++) {
        const kernel *kn = &KERNELS[k];
        /* One plain pass over the pairs: a result that does not depend on
         * the repetition count, for comparing builds. */
        checksum += kn->run(&d, 1);

        long reps = calibrate(kn, &d, target_ns);
        double calls = (double)reps * (double)pairs;
        for (long p = 0; p < passes; p++)
            ns[p] = time_pass(kn, &d, reps) / calls;
        qsort(ns, (size_t)passes, sizeof *ns, cmp_double);

        printf("%-20s median %7.2f ns/call  (%.2f .. %.2f, %ld pairs x %ld reps x %ld passes)\n",
               kn->name, median_sorted(ns, (size_t)passes), ns[0], ns[passes - 1], pairs, reps,
               passes);
        fflush(stdout);
    }
    printf("checksum %.17g\n", checksum);

    free(ns);
    data_free(&d);
    return 0;
}
