/* SPDX-License-Identifier: MIT */
/*
 * rp_spherize (include/repose/spherize.h): conservative sphere covers of
 * triangle meshes.
 *
 * Every mesh (generated here: a box, a thin plate, a long rod, a concave L,
 * a torus, degenerate and duplicate triangles, a non-manifold fan with a
 * dangling triangle, the box 2 km from the origin, a 0.1 mm box) is covered
 * with budgets 1, 4 and 16, and each cover is checked for:
 *   (a) coverage: the points of a barycentric grid of 20 steps per edge on
 *       every triangle (corners and edges included), computed in long
 *       double, each lie in some sphere: |p - c|^2 <= r^2 in long double;
 *   (b) 1 <= n_spheres <= budget;
 *   (c) determinism: a second call gives the same bytes;
 *   (d) the estimated overshoot does not grow with the budget.
 * The coverage checker is shown able to fail (radii shrunk by 1% leave
 * points of the box uncovered), and the errors are checked.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "repose/spherize.h"

#define GRID 20 /* steps per triangle edge of the coverage check */

/* ---- generated meshes -------------------------------------------------- */

typedef struct tmesh {
    double *v;
    uint32_t *t;
    size_t nv, nt, cap_v, cap_t;
} tmesh;

static uint32_t add_v(tmesh *m, double x, double y, double z)
{
    if (m->nv == m->cap_v) {
        m->cap_v = m->cap_v ? 2 * m->cap_v : 64;
        m->v = realloc(m->v, 3 * m->cap_v * sizeof *m->v);
        assert_non_null(m->v);
    }
    m->v[3 * m->nv] = x;
    m->v[3 * m->nv + 1] = y;
    m->v[3 * m->nv + 2] = z;
    return (uint32_t)m->nv++;
}

static void add_t(tmesh *m, uint32_t a, uint32_t b, uint32_t c)
{
    if (m->nt == m->cap_t) {
        m->cap_t = m->cap_t ? 2 * m->cap_t : 64;
        m->t = realloc(m->t, 3 * m->cap_t * sizeof *m->t);
        assert_non_null(m->t);
    }
    m->t[3 * m->nt] = a;
    m->t[3 * m->nt + 1] = b;
    m->t[3 * m->nt + 2] = c;
    m->nt++;
}

static void add_quad(tmesh *m, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    add_t(m, a, b, c);
    add_t(m, a, c, d);
}

static void tmesh_free(tmesh *m)
{
    free(m->v);
    free(m->t);
    memset(m, 0, sizeof *m);
}

static rp_trimesh view(const tmesh *m)
{
    rp_trimesh tm = {m->v, m->nv, m->t, m->nt};
    return tm;
}

/* An axis-aligned box: centre (cx, cy, cz), half extents (hx, hy, hz), 12
 * triangles. */
static void add_box(tmesh *m, double cx, double cy, double cz, double hx, double hy, double hz)
{
    uint32_t i[8];
    for (int k = 0; k < 8; k++)
        i[k] = add_v(m, cx + (k & 1 ? hx : -hx), cy + (k & 2 ? hy : -hy), cz + (k & 4 ? hz : -hz));
    add_quad(m, i[0], i[2], i[3], i[1]); /* z- */
    add_quad(m, i[4], i[5], i[7], i[6]); /* z+ */
    add_quad(m, i[0], i[1], i[5], i[4]); /* y- */
    add_quad(m, i[2], i[6], i[7], i[3]); /* y+ */
    add_quad(m, i[0], i[4], i[6], i[2]); /* x- */
    add_quad(m, i[1], i[3], i[7], i[5]); /* x+ */
}

static tmesh box_mesh(double cx, double cy, double cz, double hx, double hy, double hz)
{
    tmesh m = {0};
    add_box(&m, cx, cy, cz, hx, hy, hz);
    return m;
}

/* An L-shaped prism, 1 m x 1 m with arms 0.3 m wide, 0.2 m thick: concave. */
static tmesh l_mesh(void)
{
    static const double poly[7][2] = {{0, 0},     {1, 0}, {1, 0.3}, {0.3, 0.3},
                                      {0.3, 1.0}, {0, 1}, {0, 0.3}};
    tmesh m = {0};
    uint32_t lo[7], hi[7];
    for (int k = 0; k < 7; k++) {
        lo[k] = add_v(&m, poly[k][0], poly[k][1], 0.0);
        hi[k] = add_v(&m, poly[k][0], poly[k][1], 0.2);
    }
    /* Caps: the two rectangles of the L. */
    add_quad(&m, lo[0], lo[6], lo[2], lo[1]);
    add_quad(&m, lo[6], lo[5], lo[4], lo[3]);
    add_quad(&m, hi[0], hi[1], hi[2], hi[6]);
    add_quad(&m, hi[6], hi[3], hi[4], hi[5]);
    for (int k = 0; k < 7; k++)
        add_quad(&m, lo[k], lo[(k + 1) % 7], hi[(k + 1) % 7], hi[k]);
    return m;
}

/* A torus about z: major radius R, minor radius r, nu x nv quads. */
static tmesh torus_mesh(double big_r, double small_r, int nu, int nv)
{
    tmesh m = {0};
    const double two_pi = 6.283185307179586;
    for (int i = 0; i < nu; i++) {
        for (int j = 0; j < nv; j++) {
            double u = two_pi * i / nu, w = two_pi * j / nv;
            double rr = big_r + small_r * cos(w);
            add_v(&m, rr * cos(u), rr * sin(u), small_r * sin(w));
        }
    }
    for (int i = 0; i < nu; i++) {
        for (int j = 0; j < nv; j++) {
            uint32_t a = (uint32_t)(i * nv + j), b = (uint32_t)(((i + 1) % nu) * nv + j);
            uint32_t c = (uint32_t)(((i + 1) % nu) * nv + (j + 1) % nv);
            uint32_t d = (uint32_t)(i * nv + (j + 1) % nv);
            add_quad(&m, a, b, c, d);
        }
    }
    return m;
}

/* The box with zero-area triangles (a repeated index, three collinear
 * corners, one corner three times, a sliver reaching 0.4 m out of the box)
 * and duplicate triangles (the same, and the same reversed). */
static tmesh degenerate_mesh(void)
{
    tmesh m = box_mesh(0, 0, 0, 0.5, 0.3, 0.2);
    uint32_t far = add_v(&m, 0.9, 0.3, 0.2);
    uint32_t mid = add_v(&m, 0.7, 0.3, 0.2);
    add_t(&m, 0, 0, 7);
    add_t(&m, 7, mid, far);
    add_t(&m, 3, 3, 3);
    add_t(&m, m.t[0], m.t[1], m.t[2]);
    add_t(&m, m.t[5], m.t[4], m.t[3]);
    add_t(&m, m.t[3], m.t[4], m.t[5]);
    return m;
}

/* Three triangles on one edge (a fan of fins) and a dangling triangle away
 * from them. */
static tmesh nonmanifold_mesh(void)
{
    tmesh m = {0};
    uint32_t a = add_v(&m, 0, 0, 0), b = add_v(&m, 0, 0, 0.5);
    uint32_t f0 = add_v(&m, 0.4, 0, 0.25), f1 = add_v(&m, -0.2, 0.35, 0.25);
    uint32_t f2 = add_v(&m, -0.2, -0.35, 0.25);
    add_t(&m, a, b, f0);
    add_t(&m, a, b, f1);
    add_t(&m, b, a, f2);
    uint32_t d0 = add_v(&m, 1.0, 0.2, 0.1), d1 = add_v(&m, 1.3, 0.2, 0.1);
    uint32_t d2 = add_v(&m, 1.1, 0.5, 0.3);
    add_t(&m, d0, d1, d2);
    return m;
}

typedef struct named {
    const char *name;
    tmesh m;
} named;

enum { N_MESHES = 10 };

static void all_meshes(named *out)
{
    out[0] = (named){"box", box_mesh(0, 0, 0, 0.5, 0.5, 0.5)};
    out[1] = (named){"plate", box_mesh(0, 0, 0, 0.5, 0.5, 0.001)};
    out[2] = (named){"rod", box_mesh(0, 0, 0, 0.5, 0.005, 0.005)};
    out[3] = (named){"L", l_mesh()};
    out[4] = (named){"torus", torus_mesh(0.3, 0.05, 32, 16)};
    out[5] = (named){"degenerate", degenerate_mesh()};
    out[6] = (named){"nonmanifold", nonmanifold_mesh()};
    out[7] = (named){"far box", box_mesh(1000, -2000, 500, 0.5, 0.3, 0.2)};
    out[8] = (named){"tiny box", box_mesh(0, 0, 0, 5e-5, 5e-5, 5e-5)};
    out[9] = (named){"far torus", torus_mesh(0.3, 0.05, 32, 16)};
    for (size_t i = 0; i < out[9].m.nv; i++) {
        out[9].m.v[3 * i] += 1000.0;
        out[9].m.v[3 * i + 1] -= 2000.0;
        out[9].m.v[3 * i + 2] += 500.0;
    }
}

static void free_meshes(named *ms)
{
    for (int i = 0; i < N_MESHES; i++)
        tmesh_free(&ms[i].m);
}

/* ---- the coverage checker ---------------------------------------------- */

/* How many grid points of the mesh's triangles lie in no sphere, in long
 * double: p = a + (i/n)(b - a) + (j/n)(c - a), inside when |p - c|^2 <= r^2.
 * The first miss is printed. */
static size_t uncovered(const tmesh *m, const rp_sphere *s, size_t ns)
{
    size_t misses = 0;
    for (size_t t = 0; t < m->nt; t++) {
        const double *v[3];
        for (int k = 0; k < 3; k++)
            v[k] = m->v + 3 * (size_t)m->t[3 * t + k];
        for (int i = 0; i <= GRID; i++) {
            for (int j = 0; i + j <= GRID; j++) {
                long double u = (long double)i / GRID, w = (long double)j / GRID, p[3];
                for (int q = 0; q < 3; q++)
                    p[q] = (long double)v[0][q] + u * ((long double)v[1][q] - v[0][q]) +
                           w * ((long double)v[2][q] - v[0][q]);
                int in = 0;
                for (size_t k = 0; k < ns && !in; k++) {
                    long double dx = p[0] - s[k].center.x, dy = p[1] - s[k].center.y,
                                dz = p[2] - s[k].center.z, r = s[k].radius;
                    in = dx * dx + dy * dy + dz * dz <= r * r;
                }
                if (!in && misses++ == 0)
                    print_message("uncovered: triangle %zu, point (%d, %d)/%d = (%.17Lg, "
                                  "%.17Lg, %.17Lg)\n",
                                  t, i, j, GRID, p[0], p[1], p[2]);
            }
        }
    }
    return misses;
}

static rp_spherize_result run(const tmesh *m, size_t budget)
{
    rp_trimesh tm = view(m);
    rp_spherize_opts o = {budget, 0.0};
    rp_spherize_result r;
    assert_int_equal(rp_spherize(&tm, &o, &r), RP_OK);
    return r;
}

/* ---- tests --------------------------------------------------------------- */

static const size_t budgets[] = {1, 4, 16};

static void every_mesh_is_covered_within_budget_deterministically(void **state)
{
    (void)state;
    named ms[N_MESHES];
    all_meshes(ms);
    for (int i = 0; i < N_MESHES; i++) {
        double prev = INFINITY;
        for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
            rp_spherize_result r = run(&ms[i].m, budgets[b]), again = run(&ms[i].m, budgets[b]);
            print_message("%-12s budget %2zu: %2zu spheres, overshoot %.4g\n", ms[i].name,
                          budgets[b], r.n_spheres, r.overshoot);
            /* (a) */
            if (uncovered(&ms[i].m, r.spheres, r.n_spheres) != 0)
                fail_msg("%s, budget %zu: points left uncovered", ms[i].name, budgets[b]);
            /* (b) */
            assert_true(r.n_spheres >= 1 && r.n_spheres <= budgets[b]);
            for (size_t k = 0; k < r.n_spheres; k++) {
                rp_sphere sp;
                assert_int_equal(rp_sphere_new(r.spheres[k].center, r.spheres[k].radius, &sp),
                                 RP_OK);
            }
            /* (c) */
            assert_int_equal(again.n_spheres, r.n_spheres);
            assert_memory_equal(again.spheres, r.spheres, r.n_spheres * sizeof *r.spheres);
            assert_same_bits(again.overshoot, r.overshoot);
            /* (d) */
            assert_true(isfinite(r.overshoot) && r.overshoot >= 0.0);
            if (!(r.overshoot <= prev))
                fail_msg("%s: overshoot %.17g at budget %zu above %.17g at a smaller one",
                         ms[i].name, r.overshoot, budgets[b], prev);
            prev = r.overshoot;
            rp_spherize_result_free(&r);
            rp_spherize_result_free(&again);
        }
    }
    free_meshes(ms);
}

static void checker_finds_radii_shrunk_by_one_percent(void **state)
{
    (void)state;
    tmesh m = box_mesh(0, 0, 0, 0.5, 0.5, 0.5);
    for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
        rp_spherize_result r = run(&m, budgets[b]);
        assert_int_equal(uncovered(&m, r.spheres, r.n_spheres), 0);
        for (size_t k = 0; k < r.n_spheres; k++)
            r.spheres[k].radius *= 0.99;
        assert_true(uncovered(&m, r.spheres, r.n_spheres) > 0);
        rp_spherize_result_free(&r);
    }
    tmesh_free(&m);
}

/* One sphere around the unit cube: the circumscribed sphere (radius
 * sqrt(3)/2 = 0.866 m) is the smallest ball holding the corners, and its
 * surface reaches 0.866 - 0.5 = 0.366 m beyond a face centre.  With 8
 * spheres the cube can be filled: the balls circumscribing its octants
 * (centres (+-0.25)^3, radius sqrt(3)/4 = 0.433 m) hold the whole solid,
 * so no point of their union's boundary lies inside the cube, and outside
 * each reaches at most 0.433 - 0.25 = 0.183 m beyond a face (along the face
 * normal through its centre; elsewhere less).  Budget 16 includes the
 * candidates of budget 8, so its estimate must be at most about that: 0.19
 * allows for the lattice not hitting the worst point exactly (it can only
 * make the estimate smaller). */
static void box_overshoot_falls_with_the_budget(void **state)
{
    (void)state;
    tmesh m = box_mesh(0, 0, 0, 0.5, 0.5, 0.5);
    rp_spherize_result one = run(&m, 1), sixteen = run(&m, 16);
    assert_int_equal(one.n_spheres, 1);
    assert_near(one.spheres[0].radius, sqrt(0.75), 1e-9);
    assert_near(one.overshoot, sqrt(0.75) - 0.5, 0.01);
    print_message("box: overshoot %.4f with 1 sphere, %.4f with 16 (%zu spheres)\n", one.overshoot,
                  sixteen.overshoot, sixteen.n_spheres);
    assert_true(sixteen.overshoot <= 0.19);
    rp_spherize_result_free(&one);
    rp_spherize_result_free(&sixteen);
    tmesh_free(&m);
}

static void a_goal_stops_early(void **state)
{
    (void)state;
    tmesh m = torus_mesh(0.3, 0.05, 32, 16);
    rp_trimesh tm = view(&m);
    rp_spherize_opts loose = {32, 0.2}, none = {32, 0.0};
    rp_spherize_result a, b;
    assert_int_equal(rp_spherize(&tm, &loose, &a), RP_OK);
    assert_int_equal(rp_spherize(&tm, &none, &b), RP_OK);
    print_message("torus: goal 0.2 -> %zu spheres (overshoot %.4f); no goal -> %zu (%.4f)\n",
                  a.n_spheres, a.overshoot, b.n_spheres, b.overshoot);
    assert_true(a.n_spheres < b.n_spheres);
    assert_true(a.overshoot <= 0.2);
    assert_int_equal(uncovered(&m, a.spheres, a.n_spheres), 0);
    rp_spherize_result_free(&a);
    /* A goal no cover meets gives the best cover found, no worse than the
     * search without a goal (which sees fewer candidates). */
    rp_spherize_opts tight = {32, 1e-9};
    assert_int_equal(rp_spherize(&tm, &tight, &a), RP_OK);
    print_message("torus: goal 1e-9 -> %zu spheres (overshoot %.4f)\n", a.n_spheres, a.overshoot);
    assert_true(a.overshoot <= b.overshoot);
    assert_int_equal(uncovered(&m, a.spheres, a.n_spheres), 0);
    rp_spherize_result_free(&a);
    rp_spherize_result_free(&b);
    /* NULL options: the default budget. */
    assert_int_equal(rp_spherize(&tm, NULL, &a), RP_OK);
    assert_true(a.n_spheres >= 1 && a.n_spheres <= RP_SPHERIZE_DEFAULT_SPHERES);
    rp_spherize_result_free(&a);
    rp_spherize_result_free(&a); /* emptied: freeing again is fine */
    rp_spherize_result_free(NULL);
    tmesh_free(&m);
}

static void bad_input_is_refused_and_out_untouched(void **state)
{
    (void)state;
    tmesh m = box_mesh(0, 0, 0, 0.5, 0.5, 0.5);
    rp_trimesh tm = view(&m);
    rp_spherize_opts o = {4, 0.0};
    rp_spherize_result r = {(rp_sphere *)&r, 77, 1.5}, keep = r;

    assert_int_equal(rp_spherize(NULL, &o, &r), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_spherize(&tm, &o, NULL), RP_ERR_INVALID_ARG);

    rp_trimesh bad = tm;
    bad.n_triangles = 0;
    assert_int_equal(rp_spherize(&bad, &o, &r), RP_ERR_INVALID_ARG);
    bad = tm;
    bad.triangles = NULL;
    assert_int_equal(rp_spherize(&bad, &o, &r), RP_ERR_INVALID_ARG);
    bad = tm;
    bad.vertices = NULL;
    assert_int_equal(rp_spherize(&bad, &o, &r), RP_ERR_INVALID_ARG);

    m.t[7] = (uint32_t)m.nv; /* one past the last vertex */
    assert_int_equal(rp_spherize(&tm, &o, &r), RP_ERR_INVALID_ARG);
    m.t[7] = UINT32_MAX;
    assert_int_equal(rp_spherize(&tm, &o, &r), RP_ERR_INVALID_ARG);
    m.t[7] = 1;

    double keep_x = m.v[4];
    m.v[4] = NAN;
    assert_int_equal(rp_spherize(&tm, &o, &r), RP_ERR_NONFINITE);
    m.v[4] = INFINITY;
    assert_int_equal(rp_spherize(&tm, &o, &r), RP_ERR_NONFINITE);
    m.v[4] = 1e200;
    assert_int_equal(rp_spherize(&tm, &o, &r), RP_ERR_LIMIT);
    m.v[4] = keep_x;

    rp_spherize_opts bad_goal = {4, -1.0};
    assert_int_equal(rp_spherize(&tm, &bad_goal, &r), RP_ERR_INVALID_ARG);
    bad_goal.max_overshoot = NAN;
    assert_int_equal(rp_spherize(&tm, &bad_goal, &r), RP_ERR_INVALID_ARG);
    assert_memory_equal(&r, &keep, sizeof r);

    /* Repaired, it works. */
    assert_int_equal(rp_spherize(&tm, &o, &r), RP_OK);
    assert_int_equal(uncovered(&m, r.spheres, r.n_spheres), 0);
    rp_spherize_result_free(&r);
    tmesh_free(&m);
}

/* A mesh of one point (every triangle the same corner): one sphere, of a
 * radius that is only the rounding allowance. */
static void a_point_mesh_is_one_tiny_sphere(void **state)
{
    (void)state;
    double v[3] = {0.25, -0.5, 2.0};
    uint32_t t[6] = {0, 0, 0, 0, 0, 0};
    rp_trimesh tm = {v, 1, t, 2};
    rp_spherize_opts o = {16, 0.0};
    rp_spherize_result r;
    assert_int_equal(rp_spherize(&tm, &o, &r), RP_OK);
    assert_int_equal(r.n_spheres, 1);
    assert_true(r.spheres[0].radius > 0.0 && r.spheres[0].radius < 1e-13);
    assert_true(r.spheres[0].center.x == 0.25 && r.spheres[0].center.y == -0.5 &&
                r.spheres[0].center.z == 2.0);
    rp_spherize_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_mesh_is_covered_within_budget_deterministically),
        cmocka_unit_test(checker_finds_radii_shrunk_by_one_percent),
        cmocka_unit_test(box_overshoot_falls_with_the_budget),
        cmocka_unit_test(a_goal_stops_early),
        cmocka_unit_test(bad_input_is_refused_and_out_untouched),
        cmocka_unit_test(a_point_mesh_is_one_tiny_sphere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
