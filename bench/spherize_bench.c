/* SPDX-License-Identifier: MIT */
/*
 * rp_spherize timing and overshoot: a torus (major 0.3 m, minor 0.05 m,
 * 200 x 50 quads: 20,000 triangles) and a 1 m x 0.6 m x 0.4 m box, budgets
 * 4, 8, 16, 32; the best of 5 calls each.  Not built by CMake; from the
 * repository root, after building build/spherize:
 *
 *   cc -O2 -std=c11 -Iinclude bench/spherize_bench.c \
 *      build/spherize/librepose.a -lexpat -lm -o build/spherize/spherize_bench
 *
 * (add the link flags the library needs besides expat, e.g. those of
 * `pkg-config --libs assimp` when it is built with mesh loading).
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "repose/spherize.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void torus(int nu, int nv, double **v, uint32_t **t, size_t *n_v, size_t *n_t)
{
    *n_v = (size_t)nu * (size_t)nv;
    *n_t = 2 * *n_v;
    *v = malloc(3 * *n_v * sizeof **v);
    *t = malloc(3 * *n_t * sizeof **t);
    const double two_pi = 6.283185307179586;
    for (int i = 0; i < nu; i++) {
        for (int j = 0; j < nv; j++) {
            double u = two_pi * i / nu, w = two_pi * j / nv, rr = 0.3 + 0.05 * cos(w);
            double *p = *v + 3 * (size_t)(i * nv + j);
            p[0] = rr * cos(u);
            p[1] = rr * sin(u);
            p[2] = 0.05 * sin(w);
        }
    }
    size_t k = 0;
    for (int i = 0; i < nu; i++) {
        for (int j = 0; j < nv; j++) {
            uint32_t a = (uint32_t)(i * nv + j), b = (uint32_t)(((i + 1) % nu) * nv + j);
            uint32_t c = (uint32_t)(((i + 1) % nu) * nv + (j + 1) % nv);
            uint32_t d = (uint32_t)(i * nv + (j + 1) % nv);
            uint32_t q[6] = {a, b, c, a, c, d};
            for (int e = 0; e < 6; e++)
                (*t)[k++] = q[e];
        }
    }
}

static void run(const char *name, const rp_trimesh *m)
{
    static const size_t budgets[] = {4, 8, 16, 32};
    for (size_t b = 0; b < 4; b++) {
        rp_spherize_opts o = {budgets[b], 0.0};
        double best = INFINITY;
        rp_spherize_result r = {0};
        for (int rep = 0; rep < 5; rep++) {
            rp_spherize_result_free(&r);
            double t0 = now();
            if (rp_spherize(m, &o, &r) != RP_OK) {
                fprintf(stderr, "rp_spherize failed\n");
                exit(1);
            }
            best = fmin(best, now() - t0);
        }
        printf("%-6s %6zu triangles  budget %2zu: %7.2f ms  %2zu spheres  overshoot %.4f m\n", name,
               m->n_triangles, budgets[b], 1e3 * best, r.n_spheres, r.overshoot);
        rp_spherize_result_free(&r);
    }
}

int main(void)
{
    double *v;
    uint32_t *t;
    size_t nv, nt;
    torus(200, 50, &v, &t, &nv, &nt);
    rp_trimesh tm = {v, nv, t, nt};
    run("torus", &tm);
    free(v);
    free(t);

    double bv[24];
    for (int k = 0; k < 8; k++) {
        bv[3 * k] = k & 1 ? 0.5 : -0.5;
        bv[3 * k + 1] = k & 2 ? 0.3 : -0.3;
        bv[3 * k + 2] = k & 4 ? 0.2 : -0.2;
    }
    static const uint32_t bt[36] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                    2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};
    rp_trimesh bm = {bv, 8, bt, 12};
    run("box", &bm);
    return 0;
}
