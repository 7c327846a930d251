/* SPDX-License-Identifier: MIT */
/*
 * The unit templates (include/repose/tessellate.h), placed as the viewer
 * and the glTF export place them: every vertex of a capsule on its surface,
 * normals unit and outward, triangles counter-clockwise seen from outside
 * (the enclosed signed volume is positive, below the capsule's and close to
 * it), the box template a closed cube of volume 8 with outward faces, the
 * square two-sided; resolutions outside the bounds refused.
 */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

#include "repose/tessellate.h"

#define PI 3.14159265358979323846

typedef struct v3 {
    double x, y, z;
} v3;

static v3 sub(v3 a, v3 b)
{
    return (v3){a.x - b.x, a.y - b.y, a.z - b.z};
}
static v3 cross(v3 a, v3 b)
{
    return (v3){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
static double dot(v3 a, v3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
static v3 at(const double *p, size_t k)
{
    return (v3){p[3 * k], p[3 * k + 1], p[3 * k + 2]};
}

/* Signed volume enclosed by triangles (divergence theorem), and checks
 * that each triangle of positive area turns counter-clockwise about the
 * normals of its vertices. */
static double volume(const double *pos, const double *nrm, const uint32_t *tri, size_t nt,
                     size_t nv)
{
    long double vol = 0;
    for (size_t t = 0; t < nt; t++) {
        uint32_t i = tri[3 * t], j = tri[3 * t + 1], k = tri[3 * t + 2];
        assert_true(i < nv && j < nv && k < nv);
        v3 a = at(pos, i), b = at(pos, j), c = at(pos, k);
        v3 n = cross(sub(b, a), sub(c, a));
        vol += (long double)dot(a, cross(b, c)) / 6.0L;
        if (sqrt(dot(n, n)) < 1e-12)
            continue; /* a pole's triangles have no area */
        v3 m = at(nrm, i);
        v3 m2 = at(nrm, j), m3 = at(nrm, k);
        v3 avg = {m.x + m2.x + m3.x, m.y + m2.y + m3.y, m.z + m2.z + m3.z};
        assert_true(dot(n, avg) > 0);
    }
    return (double)vol;
}

static void place_capsule(int segments, int rings, v3 a, v3 b, double r)
{
    size_t nv = rp_tess_round_vertices(segments, rings),
           nt = rp_tess_round_triangles(segments, rings);
    assert_int_equal(nv, (size_t)segments * 2 * (size_t)(rings + 1));
    double *dir = malloc(nv * 3 * sizeof *dir), *pos = malloc(nv * 3 * sizeof *pos),
           *nrm = malloc(nv * 3 * sizeof *nrm);
    uint8_t *end = malloc(nv);
    uint32_t *tri = malloc(nt * 3 * sizeof *tri);
    assert_non_null(dir);
    assert_non_null(pos);
    assert_non_null(nrm);
    assert_non_null(end);
    assert_non_null(tri);
    assert_int_equal(rp_tess_round(segments, rings, dir, end, tri), nv);
    /* A right-handed frame with w along b - a. */
    v3 ax = sub(b, a);
    double len = sqrt(dot(ax, ax));
    v3 w = len > 0 ? (v3){ax.x / len, ax.y / len, ax.z / len} : (v3){0, 0, 1};
    v3 helper = fabs(w.x) < 0.9 ? (v3){1, 0, 0} : (v3){0, 1, 0};
    v3 u = cross(w, helper);
    double un = sqrt(dot(u, u));
    u = (v3){u.x / un, u.y / un, u.z / un};
    v3 v = cross(w, u);
    for (size_t k = 0; k < nv; k++) {
        v3 d = at(dir, k);
        assert_float_equal(dot(d, d), 1.0, 1e-15);
        assert_true(end[k] == (k >= nv / 2));
        v3 n = {d.x * u.x + d.y * v.x + d.z * w.x, d.x * u.y + d.y * v.y + d.z * w.y,
                d.x * u.z + d.y * v.z + d.z * w.z};
        v3 c = end[k] ? b : a;
        v3 p = {c.x + r * n.x, c.y + r * n.y, c.z + r * n.z};
        memcpy(pos + 3 * k, &p, sizeof p);
        memcpy(nrm + 3 * k, &n, sizeof n);
        /* On the surface: r from the segment a-b. */
        v3 ap = sub(p, a);
        double s = len > 0 ? dot(ap, ax) / (len * len) : 0;
        s = s < 0 ? 0 : s > 1 ? 1 : s;
        v3 q = {a.x + s * ax.x, a.y + s * ax.y, a.z + s * ax.z};
        v3 pq = sub(p, q);
        assert_float_equal(sqrt(dot(pq, pq)), r, 1e-12 * (1 + len + r));
    }
    double vol = volume(pos, nrm, tri, nt, nv);
    double want = PI * r * r * len + 4.0 / 3.0 * PI * r * r * r;
    assert_true(vol > 0 && vol < want); /* inscribed: inside the capsule */
    /* ... and close to it for a fine template */
    if (segments >= 24 && rings >= 8)
        assert_true(vol > 0.95 * want);
    free(dir);
    free(pos);
    free(nrm);
    free(end);
    free(tri);
}

static void test_round_template_places_as_capsules_and_spheres(void **state)
{
    (void)state;
    place_capsule(RP_TESS_SEGMENTS, RP_TESS_RINGS, (v3){0.1, 0.2, 0.3}, (v3){0.5, -0.2, 0.9}, 0.2);
    place_capsule(RP_TESS_SEGMENTS, RP_TESS_RINGS, (v3){1, 2, 3}, (v3){1, 2, 3}, 0.5);
    place_capsule(RP_TESS_SEGMENTS, RP_TESS_RINGS, (v3){0, 0, 0}, (v3){1, 0, 0}, 0.05);
    place_capsule(3, 1, (v3){0, 0, 0}, (v3){0, 0, -2}, 1.0);
    place_capsule(RP_TESS_SEGMENTS_MAX, RP_TESS_RINGS_MAX, (v3){0, 0, 0}, (v3){0, 3, 0}, 0.3);
    place_capsule(12, 4, (v3){-1, -1, -1}, (v3){2, 3, 4}, 0.01);
}

static void test_round_template_poles_and_equators_are_exact(void **state)
{
    (void)state;
    int seg = RP_TESS_SEGMENTS, rings = RP_TESS_RINGS;
    size_t nv = rp_tess_round_vertices(seg, rings);
    double *dir = malloc(nv * 3 * sizeof *dir);
    uint8_t *end = malloc(nv);
    uint32_t *tri = malloc(rp_tess_round_triangles(seg, rings) * 3 * sizeof *tri);
    assert_non_null(dir);
    assert_non_null(end);
    assert_non_null(tri);
    rp_tess_round(seg, rings, dir, end, tri);
    for (int s = 0; s < seg; s++) {
        size_t first = (size_t)s, last = nv - (size_t)seg + (size_t)s;
        size_t eq_a = (size_t)rings * (size_t)seg + (size_t)s, eq_b = eq_a + (size_t)seg;
        assert_true(dir[3 * first + 2] == -1.0 && dir[3 * last + 2] == 1.0);
        assert_true(dir[3 * eq_a + 2] == 0.0 && dir[3 * eq_b + 2] == 0.0);
        /* the two equators have the same directions: the cylinder's ends */
        assert_true(dir[3 * eq_a] == dir[3 * eq_b] && dir[3 * eq_a + 1] == dir[3 * eq_b + 1]);
    }
    free(dir);
    free(end);
    free(tri);
}

static void test_resolutions_outside_the_bounds_are_refused(void **state)
{
    (void)state;
    double dir[3];
    uint8_t end[1];
    uint32_t tri[3];
    int bad[][2] = {
        {2, 8}, {24, 0}, {RP_TESS_SEGMENTS_MAX + 1, 8}, {24, RP_TESS_RINGS_MAX + 1}, {-1, -1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rp_tess_round_vertices(bad[i][0], bad[i][1]), 0);
        assert_int_equal(rp_tess_round_triangles(bad[i][0], bad[i][1]), 0);
        assert_int_equal(rp_tess_round(bad[i][0], bad[i][1], dir, end, tri), 0);
    }
}

static void test_box_template_is_a_closed_outward_cube(void **state)
{
    (void)state;
    double c[RP_TESS_BOX_VERTICES * 3], n[RP_TESS_BOX_VERTICES * 3];
    uint32_t t[RP_TESS_BOX_TRIANGLES * 3];
    rp_tess_box(c, n, t);
    for (size_t k = 0; k < RP_TESS_BOX_VERTICES; k++) {
        v3 p = at(c, k), m = at(n, k);
        assert_float_equal(fabs(p.x) + fabs(p.y) + fabs(p.z), 3.0, 0); /* a corner */
        assert_float_equal(dot(m, m), 1.0, 0);
        assert_float_equal(dot(p, m), 1.0, 0); /* on the face its normal names */
    }
    assert_float_equal(volume(c, n, t, RP_TESS_BOX_TRIANGLES, RP_TESS_BOX_VERTICES), 8.0, 1e-15);
}

static void test_square_template_is_two_sided(void **state)
{
    (void)state;
    double c[RP_TESS_SQUARE_VERTICES * 3], n[RP_TESS_SQUARE_VERTICES * 3];
    uint32_t t[RP_TESS_SQUARE_TRIANGLES * 3];
    rp_tess_square(c, n, t);
    double area_up = 0, area_down = 0;
    for (size_t i = 0; i < RP_TESS_SQUARE_TRIANGLES; i++) {
        v3 a = at(c, t[3 * i]), b = at(c, t[3 * i + 1]), d = at(c, t[3 * i + 2]);
        v3 x = cross(sub(b, a), sub(d, a));
        v3 m = at(n, t[3 * i]);
        assert_true(dot(x, m) > 0);
        *(m.z > 0 ? &area_up : &area_down) += sqrt(dot(x, x)) / 2;
    }
    assert_float_equal(area_up, 1.0, 1e-15);
    assert_float_equal(area_down, 1.0, 1e-15);
    (void)volume(c, n, t, RP_TESS_SQUARE_TRIANGLES, RP_TESS_SQUARE_VERTICES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_template_places_as_capsules_and_spheres),
        cmocka_unit_test(test_round_template_poles_and_equators_are_exact),
        cmocka_unit_test(test_resolutions_outside_the_bounds_are_refused),
        cmocka_unit_test(test_box_template_is_a_closed_outward_cube),
        cmocka_unit_test(test_square_template_is_two_sided),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
