/* SPDX-License-Identifier: MIT */
/*
 * Boxes and half-spaces against spheres and capsules (src/geometry/box.c),
 * checked against a reference of our own in ref_real (__float128 where the
 * compiler has it), over families of hard configurations: segments parallel
 * to faces and edges, touching corners and edges, deep inside, thin and
 * zero extents, rotations near 0 and 90 degrees, far from the origin, huge
 * and tiny boxes.
 *
 * The reference shares nothing with the kernel's search: in the box's
 * frame (the kernel's own axes, rp_box_axes, taken exactly), a separated
 * segment's distance is found by golden-section search of the convex
 * distance function over the segment's parameter; a segment that meets the
 * box (tested by clipping it against the three slabs) gets the smallest
 * overlap over the separating-axis candidates, evaluated in ref_real.
 * Every pair must be within 16 eps S of it (geometry.h's contract, S the
 * largest magnitude among the coordinates, extents and radii).  Contacts:
 * unit normals, point_b - point_a = distance * normal, and a penetration's
 * normal is a separating direction: moving the shape by the depth along it
 * separates them, and by a little less along any direction does not.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "reference.h"
#include "repose/geometry.h"

#define EPS 0x1p-52
#define PI_ 3.14159265358979323846
#define BOUND 16.0
#define PAIRS 4000

typedef ref_real R;

static R rabs(R x)
{
    return x < 0 ? -x : x;
}

static double comp(rp_vec3 v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : v.z;
}

/* p - c in the box frame, in ref_real (products of doubles are exact). */
static void local(const rp_vec3 axes[3], rp_vec3 p, rp_vec3 c, R out[3])
{
    R d[3] = {(R)p.x - (R)c.x, (R)p.y - (R)c.y, (R)p.z - (R)c.z};
    for (int i = 0; i < 3; i++)
        out[i] = (R)axes[i].x * d[0] + (R)axes[i].y * d[1] + (R)axes[i].z * d[2];
}

static R point_box2(const R x[3], const R h[3])
{
    R f = 0;
    for (int i = 0; i < 3; i++) {
        R g = rabs(x[i]) - h[i];
        if (g > 0)
            f += g * g;
    }
    return f;
}

static R seg_box_at(const R x0[3], const R x1[3], const R h[3], R t)
{
    R x[3];
    for (int i = 0; i < 3; i++)
        x[i] = x0[i] + t * (x1[i] - x0[i]);
    return point_box2(x, h);
}

/* Whether the segment meets the box: clipping against the slabs. */
static int seg_meets_box(const R x0[3], const R x1[3], const R h[3])
{
    R lo = 0, hi = 1;
    for (int i = 0; i < 3; i++) {
        R e = x1[i] - x0[i];
        if (e == 0) {
            if (rabs(x0[i]) > h[i])
                return 0;
            continue;
        }
        R ta = (-h[i] - x0[i]) / e, tb = (h[i] - x0[i]) / e;
        if (ta > tb) {
            R s = ta;
            ta = tb;
            tb = s;
        }
        if (ta > lo)
            lo = ta;
        if (tb < hi)
            hi = tb;
        if (lo > hi)
            return 0;
    }
    return 1;
}

/* Golden-section minimum over t of the convex squared distance. */
static R golden(const R x0[3], const R x1[3], const R h[3])
{
    R a = 0, b = 1, g = (R)0.6180339887498948482045868343656381L;
    R c = b - g * (b - a), d = a + g * (b - a);
    R fc = seg_box_at(x0, x1, h, c), fd = seg_box_at(x0, x1, h, d);
    for (int k = 0; k < 220; k++) {
        if (fc <= fd) {
            b = d, d = c, fd = fc;
            c = b - g * (b - a);
            fc = seg_box_at(x0, x1, h, c);
        } else {
            a = c, c = d, fc = fd;
            d = a + g * (b - a);
            fd = seg_box_at(x0, x1, h, d);
        }
    }
    R best = fc < fd ? fc : fd;
    R e0 = seg_box_at(x0, x1, h, 0), e1 = seg_box_at(x0, x1, h, 1);
    if (e0 < best)
        best = e0;
    if (e1 < best)
        best = e1;
    return best;
}

/* Smallest overlap over the separating-axis candidates. */
static R sat_depth(const R x0[3], const R x1[3], const R h[3])
{
    R best = -1;
    for (int i = 0; i < 3; i++) {
        R lo = x0[i] < x1[i] ? x0[i] : x1[i], up = x0[i] < x1[i] ? x1[i] : x0[i];
        R d = h[i] - lo < up + h[i] ? h[i] - lo : up + h[i];
        if (best < 0 || d < best)
            best = d;
    }
    R e[3] = {x1[0] - x0[0], x1[1] - x0[1], x1[2] - x0[2]};
    for (int i = 0; i < 3; i++) {
        R u[3] = {0, 0, 0};
        int j = (i + 1) % 3, k = (i + 2) % 3;
        u[j] = e[k];
        u[k] = -e[j];
        R len = ref_sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        if (!(len > 0))
            continue;
        R s = 0, r = 0;
        for (int m = 0; m < 3; m++) {
            u[m] /= len;
            s += x0[m] * u[m];
            r += h[m] * rabs(u[m]);
        }
        R d = r - rabs(s);
        if (d < best)
            best = d;
    }
    return best < 0 ? 0 : best;
}

static R ref_core_box(rp_vec3 p0, rp_vec3 p1, double radius, const rp_box *b)
{
    rp_vec3 axes[3];
    rp_box_axes(b, axes);
    R x0[3], x1[3], h[3] = {b->half_extents.x, b->half_extents.y, b->half_extents.z};
    local(axes, p0, b->center, x0);
    local(axes, p1, b->center, x1);
    if (seg_meets_box(x0, x1, h))
        return -sat_depth(x0, x1, h) - (R)radius;
    return ref_sqrt(golden(x0, x1, h)) - (R)radius;
}

static double maxabs(rp_vec3 v)
{
    return fmax(fabs(v.x), fmax(fabs(v.y), fabs(v.z)));
}

static double box_S(rp_vec3 p0, rp_vec3 p1, double r, const rp_box *b)
{
    return fmax(fmax(maxabs(p0), maxabs(p1)),
                fmax(fmax(maxabs(b->center), maxabs(b->half_extents)), r));
}

/* ---- generators ------------------------------------------------------------------ */

typedef struct pair {
    rp_vec3 p0, p1; /* the core: p0 == p1 for a sphere */
    double r;
    rp_box box;
} pair;

static rp_vec3 rnd3(test_rng *g, double lo, double hi)
{
    return (rp_vec3){rng_uniform(g, lo, hi), rng_uniform(g, lo, hi), rng_uniform(g, lo, hi)};
}

static rp_box mk_box(rp_vec3 c, rp_vec3 h, double w, double x, double y, double z)
{
    rp_box b;
    assert_int_equal(rp_box_new(c, h, w, x, y, z, &b), RP_OK);
    return b;
}

static rp_box random_box(test_rng *g, double size, double reach)
{
    return mk_box(rnd3(g, -reach, reach), rnd3(g, 0, size), rng_uniform(g, -1, 1),
                  rng_uniform(g, -1, 1), rng_uniform(g, -1, 1), rng_uniform(g, -1, 1));
}

/* A world point from box-frame coordinates u. */
static rp_vec3 from_local(const rp_box *b, rp_vec3 u)
{
    rp_vec3 a[3];
    rp_box_axes(b, a);
    return (rp_vec3){b->center.x + a[0].x * u.x + a[1].x * u.y + a[2].x * u.z,
                     b->center.y + a[0].y * u.x + a[1].y * u.y + a[2].y * u.z,
                     b->center.z + a[0].z * u.x + a[1].z * u.y + a[2].z * u.z};
}

typedef void (*gen_fn)(test_rng *g, pair *p);

static void gen_general(test_rng *g, pair *p)
{
    p->box = random_box(g, 2, 2);
    p->p0 = rnd3(g, -5, 5);
    p->p1 = rng_uniform(g, 0, 1) < 0.2 ? p->p0 : rnd3(g, -5, 5);
    p->r = rng_uniform(g, 0, 0.5);
}

/* Parallel to a face or an edge, at, above or below it. */
static void gen_parallel(test_rng *g, pair *p)
{
    p->box = random_box(g, 2, 1);
    rp_vec3 h = p->box.half_extents;
    int i = (int)(rng_next(g) % 3), j = (i + 1) % 3;
    double u0[3] = {rng_uniform(g, -3, 3), rng_uniform(g, -3, 3), rng_uniform(g, -3, 3)};
    double side = comp(h, j) * (rng_uniform(g, 0, 1) < 0.3 ? 1.0 : rng_uniform(g, 0.5, 1.5));
    u0[j] = rng_uniform(g, 0, 1) < 0.5 ? side : -side;
    double u1[3] = {u0[0], u0[1], u0[2]};
    u1[i] += rng_uniform(g, -4, 4);
    if (rng_uniform(g, 0, 1) < 0.5) { /* along an edge too */
        int k = (i + 2) % 3;
        u0[k] = u1[k] = comp(h, k) * (rng_uniform(g, 0, 1) < 0.5 ? 1 : -1);
    }
    p->p0 = from_local(&p->box, (rp_vec3){u0[0], u0[1], u0[2]});
    p->p1 = from_local(&p->box, (rp_vec3){u1[0], u1[1], u1[2]});
    p->r = rng_uniform(g, 0, 0.3);
}

/* Near a corner or an edge, touching or just missing it. */
static void gen_corner(test_rng *g, pair *p)
{
    p->box = random_box(g, 1.5, 1);
    rp_vec3 h = p->box.half_extents;
    rp_vec3 corner = {h.x * (rng_next(g) & 1 ? 1 : -1), h.y * (rng_next(g) & 1 ? 1 : -1),
                      h.z * (rng_next(g) & 1 ? 1 : -1)};
    rp_vec3 out = {corner.x * (1 + rng_uniform(g, -1e-9, 1e-3)),
                   corner.y * (1 + rng_uniform(g, -1e-9, 1e-3)),
                   corner.z * (1 + rng_uniform(g, -1e-9, 1e-3))};
    rp_vec3 d = rnd3(g, -1, 1);
    p->p0 = from_local(&p->box, out);
    p->p1 = rng_uniform(g, 0, 1) < 0.3
                ? p->p0
                : from_local(&p->box, (rp_vec3){out.x + d.x, out.y + d.y, out.z + d.z});
    p->r = rng_uniform(g, 0, 1) < 0.5 ? 0.0 : rng_uniform(g, 0, 0.1);
}

/* Deep inside, or crossing through. */
static void gen_inside(test_rng *g, pair *p)
{
    p->box = random_box(g, 3, 1);
    rp_vec3 h = p->box.half_extents;
    rp_vec3 a = {rng_uniform(g, -h.x, h.x), rng_uniform(g, -h.y, h.y), rng_uniform(g, -h.z, h.z)};
    rp_vec3 b = rng_uniform(g, 0, 1) < 0.5
                    ? rnd3(g, -6, 6)
                    : (rp_vec3){rng_uniform(g, -h.x, h.x), rng_uniform(g, -h.y, h.y),
                                rng_uniform(g, -h.z, h.z)};
    p->p0 = from_local(&p->box, a);
    p->p1 = rng_uniform(g, 0, 1) < 0.2 ? p->p0 : from_local(&p->box, b);
    p->r = rng_uniform(g, 0, 0.5);
}

/* Thin boxes and zero extents: rectangles, segments, points. */
static void gen_thin(test_rng *g, pair *p)
{
    gen_general(g, p);
    rp_vec3 h = p->box.half_extents;
    int zero = (int)(rng_next(g) % 3) + 1;
    if (zero >= 1)
        h.x = rng_uniform(g, 0, 1) < 0.5 ? 0.0 : 1e-12;
    if (zero >= 2)
        h.y = 0.0;
    if (zero >= 3)
        h.z = 0.0;
    p->box.half_extents = h;
}

/* Rotations near 0 and 90 degrees about an axis. */
static void gen_near_axis(test_rng *g, pair *p)
{
    double a = rng_uniform(g, 0, 1) < 0.5 ? rng_uniform(g, -1e-9, 1e-9)
                                          : PI_ / 2 + rng_uniform(g, -1e-9, 1e-9);
    int k = (int)(rng_next(g) % 3);
    double s = sin(a / 2), c = cos(a / 2);
    p->box =
        mk_box(rnd3(g, -1, 1), rnd3(g, 0, 2), c, k == 0 ? s : 0, k == 1 ? s : 0, k == 2 ? s : 0);
    gen_parallel(g, p); /* re-rolls the box: take its local points on this one */
    rp_box keep = p->box;
    p->box =
        mk_box(keep.center, keep.half_extents, c, k == 0 ? s : 0, k == 1 ? s : 0, k == 2 ? s : 0);
}

static void gen_far(test_rng *g, pair *p)
{
    gen_general(g, p);
    double off = ldexp(1.0, (int)(rng_next(g) % 40)) * (rng_uniform(g, 0, 1) < 0.5 ? 1 : -1);
    rp_vec3 o = {off, -off * 0.75, off * 0.5};
    p->box.center = (rp_vec3){p->box.center.x + o.x, p->box.center.y + o.y, p->box.center.z + o.z};
    p->p0 = (rp_vec3){p->p0.x + o.x, p->p0.y + o.y, p->p0.z + o.z};
    p->p1 = (rp_vec3){p->p1.x + o.x, p->p1.y + o.y, p->p1.z + o.z};
}

static void scale_pair(pair *p, int e)
{
    p->p0 = (rp_vec3){ldexp(p->p0.x, e), ldexp(p->p0.y, e), ldexp(p->p0.z, e)};
    p->p1 = (rp_vec3){ldexp(p->p1.x, e), ldexp(p->p1.y, e), ldexp(p->p1.z, e)};
    p->r = ldexp(p->r, e);
    p->box.center =
        (rp_vec3){ldexp(p->box.center.x, e), ldexp(p->box.center.y, e), ldexp(p->box.center.z, e)};
    p->box.half_extents =
        (rp_vec3){ldexp(p->box.half_extents.x, e), ldexp(p->box.half_extents.y, e),
                  ldexp(p->box.half_extents.z, e)};
}

static void gen_huge(test_rng *g, pair *p)
{
    gen_general(g, p);
    scale_pair(p, 1010 - (int)(rng_next(g) % 600));
}

static void gen_tiny(test_rng *g, pair *p)
{
    gen_general(g, p);
    scale_pair(p, -1000 + (int)(rng_next(g) % 600));
}

/* Coordinates within a few binades of DBL_MAX: differences overflow
 * unless the kernel rescales. */
static void gen_near_max(test_rng *g, pair *p)
{
    gen_general(g, p);
    scale_pair(p, 1018 + (int)(rng_next(g) % 3));
}

/* ---- checks -------------------------------------------------------------------- */

static double sd(const pair *p, rp_contact *c)
{
    int sphere = p->p0.x == p->p1.x && p->p0.y == p->p1.y && p->p0.z == p->p1.z;
    rp_sphere s = {p->p0, p->r};
    rp_capsule k = {p->p0, p->p1, p->r};
    double d = sphere ? rp_sphere_box_signed_distance(&s, &p->box)
                      : rp_capsule_box_signed_distance(&k, &p->box);
    *c = sphere ? rp_sphere_box_contact(&s, &p->box) : rp_capsule_box_contact(&k, &p->box);
    return d;
}

static void print_pair(const pair *p)
{
    fprintf(stderr, "  core %a %a %a -> %a %a %a r %a\n  box c %a %a %a h %a %a %a q %a %a %a %a\n",
            p->p0.x, p->p0.y, p->p0.z, p->p1.x, p->p1.y, p->p1.z, p->r, p->box.center.x,
            p->box.center.y, p->box.center.z, p->box.half_extents.x, p->box.half_extents.y,
            p->box.half_extents.z, p->box.rotation.w, p->box.rotation.x, p->box.rotation.y,
            p->box.rotation.z);
}

static void run_family(const char *name, uint64_t seed, gen_fn gen)
{
    test_rng g = {seed};
    double worst = 0;
    int bad = 0;
    for (int n = 0; n < PAIRS; n++) {
        pair p;
        gen(&g, &p);
        rp_contact c;
        double d = sd(&p, &c);
        double S = box_S(p.p0, p.p1, p.r, &p.box);
        double err = ref_error_in_eps_S(d, ref_core_box(p.p0, p.p1, p.r, &p.box), S);
        if (err > worst)
            worst = err;
        /* The contact: the same distance, a unit normal, b - a = d n. */
        double nn =
            sqrt(c.normal.x * c.normal.x + c.normal.y * c.normal.y + c.normal.z * c.normal.z);
        int ok = err <= BOUND && d == c.distance && fabs(nn - 1) <= 1e-12 && isfinite(d);
        if (ok && fabs(d) < DBL_MAX / 4 && maxabs(p.p0) < 1e300) {
            for (int i = 0; i < 3; i++) {
                double res = comp(c.point_b, i) - comp(c.point_a, i) - d * comp(c.normal, i);
                if (fabs(res) > 8 * EPS * S)
                    ok = 0;
            }
        }
        if (!ok && bad++ < 5) {
            fprintf(stderr, "%s: pair %d: d=%a err=%g eps*S |n|=%.17g contact d=%a\n", name, n, d,
                    err, nn, c.distance);
            print_pair(&p);
        }
    }
    printf("family %s: n=%d worst=%.3g eps*S\n", name, PAIRS, worst);
    assert_int_equal(bad, 0);
}

static void box_pairs_are_within_16_eps_S_of_the_reference(void **state)
{
    (void)state;
    run_family("general", 1, gen_general);
    run_family("parallel_to_faces_and_edges", 2, gen_parallel);
    run_family("corners_and_edges", 3, gen_corner);
    run_family("inside_and_crossing", 4, gen_inside);
    run_family("thin_and_zero_extents", 5, gen_thin);
    run_family("rotations_near_0_and_90", 6, gen_near_axis);
    run_family("far_from_the_origin", 7, gen_far);
    run_family("huge", 8, gen_huge);
    run_family("tiny", 9, gen_tiny);
    run_family("near_dbl_max", 10, gen_near_max);
}

/* A penetration's normal separates: moving the shape back by the depth
 * along it leaves them touching, and by 0.999 of it along random
 * directions they still overlap. */
static void penetration_depth_is_the_shortest_separating_translation(void **state)
{
    (void)state;
    test_rng g = {11};
    int tried = 0;
    for (int n = 0; n < 2000; n++) {
        pair p;
        gen_inside(&g, &p);
        rp_contact c;
        double d = sd(&p, &c);
        if (!(d < -1e-6))
            continue;
        tried++;
        rp_vec3 back = {c.normal.x * d, c.normal.y * d, c.normal.z * d};
        pair moved = p;
        moved.p0 = (rp_vec3){p.p0.x + back.x, p.p0.y + back.y, p.p0.z + back.z};
        moved.p1 = (rp_vec3){p.p1.x + back.x, p.p1.y + back.y, p.p1.z + back.z};
        rp_contact c2;
        double d2 = sd(&moved, &c2);
        if (fabs(d2) > 1e-12 * (1 + fabs(d)))
            fail_msg("pair %d: moved by the depth %.17g along the normal, distance %.17g", n, d,
                     d2);
        for (int k = 0; k < 20; k++) {
            rp_vec3 v = rnd3(&g, -1, 1);
            double len = sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
            if (len < 1e-3)
                continue;
            double s = 0.999 * d / len;
            pair m2 = p;
            m2.p0 = (rp_vec3){p.p0.x + v.x * s, p.p0.y + v.y * s, p.p0.z + v.z * s};
            m2.p1 = (rp_vec3){p.p1.x + v.x * s, p.p1.y + v.y * s, p.p1.z + v.z * s};
            if (!(sd(&m2, &c2) < 0))
                fail_msg("pair %d: a translation shorter than the depth separates", n);
        }
    }
    assert_true(tried > 500);
}

/* Translating both by an exact offset changes nothing beyond rounding. */
static void box_distances_are_invariant_under_translation(void **state)
{
    (void)state;
    test_rng g = {12};
    for (int n = 0; n < 2000; n++) {
        pair p;
        gen_general(&g, &p);
        pair q = p;
        double off = ldexp(1.0, (int)(rng_next(&g) % 20));
        q.p0.x += off, q.p1.x += off, q.box.center.x += off;
        q.p0.z -= off, q.p1.z -= off, q.box.center.z -= off;
        rp_contact c;
        double a = sd(&p, &c), b = sd(&q, &c);
        double S = box_S(q.p0, q.p1, q.r, &q.box);
        if (fabs(a - b) > 2 * BOUND * EPS * S)
            fail_msg("pair %d: %.17g moved by %g gives %.17g", n, a, off, b);
    }
}

/* Half-spaces: the lowest point's height, exact within the contract. */
static void halfspace_distances_are_the_lowest_points_height(void **state)
{
    (void)state;
    test_rng g = {13};
    double worst = 0;
    for (int n = 0; n < 20000; n++) {
        rp_halfspace h;
        double big = ldexp(1.0, (int)(rng_next(&g) % 60) - 30);
        assert_int_equal(rp_halfspace_new(rnd3(&g, -1, 1), rng_uniform(&g, -2, 2) * big, &h),
                         RP_OK);
        rp_vec3 a = rnd3(&g, -3 * big, 3 * big), b = rnd3(&g, -3 * big, 3 * big);
        if (n % 3 == 0) /* parallel to the plane */
            b = (rp_vec3){a.x + h.normal.y * big, a.y - h.normal.x * big, a.z};
        double r = rng_uniform(&g, 0, big);
        rp_capsule k = {a, b, r};
        rp_sphere s = {a, r};
        R ha = (R)h.normal.x * a.x + (R)h.normal.y * a.y + (R)h.normal.z * a.z - (R)h.offset;
        R hb = (R)h.normal.x * b.x + (R)h.normal.y * b.y + (R)h.normal.z * b.z - (R)h.offset;
        double S = fmax(fmax(maxabs(a), maxabs(b)), fmax(fabs(h.offset), r));
        double e1 = ref_error_in_eps_S(rp_capsule_halfspace_signed_distance(&k, &h),
                                       (ha < hb ? ha : hb) - (R)r, S);
        double e2 = ref_error_in_eps_S(rp_sphere_halfspace_signed_distance(&s, &h), ha - (R)r, S);
        worst = fmax(worst, fmax(e1, e2));
        if (e1 > BOUND || e2 > BOUND)
            fail_msg("pair %d: errors %g and %g eps*S", n, e1, e2);
        rp_contact c = rp_capsule_halfspace_contact(&k, &h);
        assert_true(c.distance == rp_capsule_halfspace_signed_distance(&k, &h));
        assert_true(c.normal.x == -h.normal.x && c.normal.z == -h.normal.z);
        /* point_b lies on the plane. */
        double on = h.normal.x * c.point_b.x + h.normal.y * c.point_b.y + h.normal.z * c.point_b.z -
                    h.offset;
        assert_true(fabs(on) <= 16 * EPS * 4 * S);
    }
    printf("family halfspace: n=20000 worst=%.3g eps*S\n", worst);
}

/* A box above, on or through a half-space: its lowest vertex's height,
 * against the lowest of its eight vertices in ref_real. */
static void box_halfspace_distance_is_the_lowest_vertex_height(void **state)
{
    (void)state;
    test_rng g = {14};
    double worst = 0;
    for (int n = 0; n < 20000; n++) {
        double big = ldexp(1.0, (int)(rng_next(&g) % 80) - 40);
        rp_box b = random_box(&g, 2 * big, 2 * big);
        if (n % 4 == 0) /* a face parallel to the plane */
            b.rotation = (rp_quat){1, 0, 0, 0};
        rp_halfspace h;
        rp_vec3 nrm = n % 4 == 0 ? (rp_vec3){0, 0, 1} : rnd3(&g, -1, 1);
        assert_int_equal(rp_halfspace_new(nrm, rng_uniform(&g, -3, 3) * big, &h), RP_OK);
        rp_vec3 axes[3];
        rp_box_axes(&b, axes);
        R low = 0;
        for (int k = 0; k < 8; k++) {
            R v[3] = {b.center.x, b.center.y, b.center.z};
            for (int i = 0; i < 3; i++) {
                R s = (k >> i & 1) ? (R)comp(b.half_extents, i) : -(R)comp(b.half_extents, i);
                v[0] += s * axes[i].x, v[1] += s * axes[i].y, v[2] += s * axes[i].z;
            }
            R height =
                (R)h.normal.x * v[0] + (R)h.normal.y * v[1] + (R)h.normal.z * v[2] - (R)h.offset;
            if (k == 0 || height < low)
                low = height;
        }
        double S = fmax(fmax(maxabs(b.center), maxabs(b.half_extents)), fabs(h.offset));
        double d = rp_box_halfspace_signed_distance(&b, &h);
        double err = ref_error_in_eps_S(d, low, S);
        worst = fmax(worst, err);
        if (err > BOUND)
            fail_msg("pair %d: %.17g, error %g eps*S", n, d, err);
        rp_contact c = rp_box_halfspace_contact(&b, &h);
        assert_true(c.distance == d);
        double on = h.normal.x * c.point_b.x + h.normal.y * c.point_b.y + h.normal.z * c.point_b.z -
                    h.offset;
        assert_true(fabs(on) <= 4 * BOUND * EPS * S);
    }
    printf("family box_halfspace: n=20000 worst=%.3g eps*S\n", worst);
}

/* ---- box against box: the reference --------------------------------------------- */

typedef struct rv3 {
    R x, y, z;
} rv3;

static rv3 r3(R x, R y, R z)
{
    rv3 v = {x, y, z};
    return v;
}
static rv3 rsub(rv3 a, rv3 b)
{
    return r3(a.x - b.x, a.y - b.y, a.z - b.z);
}
static R rdot(rv3 a, rv3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
static rv3 rcross(rv3 a, rv3 b)
{
    return r3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static rv3 raxpy(rv3 a, R t, rv3 u)
{
    return r3(a.x + t * u.x, a.y + t * u.y, a.z + t * u.z);
}
static R rnorm(rv3 a)
{
    return ref_sqrt(rdot(a, a));
}

static R r_point_segment(rv3 p, rv3 a, rv3 b)
{
    rv3 u = rsub(b, a);
    R uu = rdot(u, u), t = 0;
    if (uu > 0) {
        t = rdot(rsub(p, a), u) / uu;
        t = t < 0 ? 0 : t > 1 ? 1 : t;
    }
    return rnorm(rsub(p, raxpy(a, t, u)));
}

/* Segment-segment in ref_real: the four end distances and the interior
 * stationary point (Cramer's rule through the Lagrange identity). */
static R r_seg_seg(rv3 p0, rv3 p1, rv3 q0, rv3 q1)
{
    R best = r_point_segment(p0, q0, q1), d;
    if ((d = r_point_segment(p1, q0, q1)) < best)
        best = d;
    if ((d = r_point_segment(q0, p0, p1)) < best)
        best = d;
    if ((d = r_point_segment(q1, p0, p1)) < best)
        best = d;
    rv3 u = rsub(p1, p0), v = rsub(q1, q0), w = rsub(p0, q0), n = rcross(u, v);
    R det = rdot(n, n);
    if (det > 0) {
        R s = rdot(n, rcross(v, w)) / det, t = rdot(n, rcross(u, w)) / det;
        if (s >= 0 && s <= 1 && t >= 0 && t <= 1 &&
            (d = rnorm(rsub(raxpy(p0, s, u), raxpy(q0, t, v)))) < best)
            best = d;
    }
    return best;
}

/* A box's axes (the kernel's doubles, exactly) and vertices in ref_real. */
static void r_box(const rp_box *b, rv3 ax[3], rv3 v[8])
{
    rp_vec3 a[3];
    rp_box_axes(b, a);
    for (int i = 0; i < 3; i++)
        ax[i] = r3(a[i].x, a[i].y, a[i].z);
    for (int k = 0; k < 8; k++) {
        rv3 p = r3(b->center.x, b->center.y, b->center.z);
        for (int i = 0; i < 3; i++)
            p = raxpy(p, (k >> i & 1) ? (R)comp(b->half_extents, i) : -(R)comp(b->half_extents, i),
                      ax[i]);
        v[k] = p;
    }
}

/* Squared distance of p to the box (centre c, axes ax, half extents h). */
static R r_point_box2(rv3 p, rv3 c, const rv3 ax[3], rp_vec3 h)
{
    R x[3], hh[3] = {h.x, h.y, h.z};
    for (int i = 0; i < 3; i++)
        x[i] = rdot(ax[i], rsub(p, c));
    return point_box2(x, hh);
}

static R ref_box_box(const rp_box *a, const rp_box *b)
{
    rv3 axa[3], axb[3], va[8], vb[8];
    r_box(a, axa, va);
    r_box(b, axb, vb);
    rv3 ca = r3(a->center.x, a->center.y, a->center.z),
        cb = r3(b->center.x, b->center.y, b->center.z);
    /* Separating axes: 3 + 3 faces, 9 edge products. */
    R depth = -1;
    int separated = 0;
    for (int n = 0; n < 15; n++) {
        rv3 l = n < 3 ? axa[n] : n < 6 ? axb[n - 3] : rcross(axa[(n - 6) / 3], axb[(n - 6) % 3]);
        R len = rnorm(l);
        if (!(len > 0))
            continue;
        l = r3(l.x / len, l.y / len, l.z / len);
        R ra = 0, rb = 0;
        for (int i = 0; i < 3; i++) {
            R x = rdot(l, axa[i]), y = rdot(l, axb[i]);
            ra += (R)comp(a->half_extents, i) * (x < 0 ? -x : x);
            rb += (R)comp(b->half_extents, i) * (y < 0 ? -y : y);
        }
        R s = rdot(l, rsub(cb, ca));
        R o = ra + rb - (s < 0 ? -s : s);
        if (o < 0)
            separated = 1;
        if (depth < 0 || o < depth)
            depth = o;
    }
    if (!separated)
        return -depth;
    R best2 = -1;
    for (int k = 0; k < 8; k++) {
        R f = r_point_box2(vb[k], ca, axa, a->half_extents);
        if (best2 < 0 || f < best2)
            best2 = f;
        f = r_point_box2(va[k], cb, axb, b->half_extents);
        if (f < best2)
            best2 = f;
    }
    R best = ref_sqrt(best2);
    static const int ends[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                    {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++) {
            R d = r_seg_seg(va[ends[i][0]], va[ends[i][1]], vb[ends[j][0]], vb[ends[j][1]]);
            if (d < best)
                best = d;
        }
    return best;
}

static void gen_box_box(test_rng *g, rp_box *a, rp_box *b, int family)
{
    *a = random_box(g, 1.5, 1);
    *b = random_box(g, 1.5, 2);
    if (family == 1) { /* nearly aligned: parallel faces and edges */
        double e = rng_uniform(g, -1e-9, 1e-9);
        b->rotation = (rp_quat){a->rotation.w, a->rotation.x + e, a->rotation.y, a->rotation.z};
        *b = mk_box(b->center, b->half_extents, b->rotation.w, b->rotation.x, b->rotation.y,
                    b->rotation.z);
    } else if (family == 2) { /* thin plates and zero extents */
        a->half_extents.z = 0.0;
        b->half_extents.x = rng_uniform(g, 0, 1) < 0.5 ? 0.0 : 1e-9;
    } else if (family == 3) { /* far from the origin */
        double off = ldexp(1.0, 20 + (int)(rng_next(g) % 20));
        a->center.x += off, b->center.x += off;
        a->center.y -= off, b->center.y -= off;
    }
}

static void box_box_pairs_are_within_16_eps_S_of_the_reference(void **state)
{
    (void)state;
    static const char *names[] = {"box_box_general", "box_box_nearly_aligned", "box_box_thin",
                                  "box_box_far"};
    for (int family = 0; family < 4; family++) {
        test_rng g = {(uint64_t)(21 + family)};
        double worst = 0;
        int separated = 0;
        for (int n = 0; n < 600; n++) {
            rp_box a, b;
            gen_box_box(&g, &a, &b, family);
            double d = rp_box_box_signed_distance(&a, &b);
            double S = fmax(fmax(maxabs(a.center), maxabs(b.center)),
                            fmax(maxabs(a.half_extents), maxabs(b.half_extents)));
            double err = ref_error_in_eps_S(d, ref_box_box(&a, &b), S);
            worst = fmax(worst, err);
            separated += d > 0;
            if (err > BOUND)
                fail_msg("%s pair %d: d=%.17g, error %g eps*S", names[family], n, d, err);
            rp_contact c = rp_box_box_contact(&a, &b);
            assert_true(c.distance == d);
            double nn =
                sqrt(c.normal.x * c.normal.x + c.normal.y * c.normal.y + c.normal.z * c.normal.z);
            assert_true(fabs(nn - 1) <= 1e-12);
        }
        printf("family %s: n=600 (separated %d) worst=%.3g eps*S\n", names[family], separated,
               worst);
        assert_true(separated > 50 && separated < 550);
    }
}

static void bad_boxes_and_halfspaces_are_refused(void **state)
{
    (void)state;
    rp_box b;
    rp_halfspace h;
    rp_vec3 o = {0, 0, 0}, one = {1, 1, 1};
    assert_int_equal(rp_box_new(o, (rp_vec3){1, -1e-300, 1}, 1, 0, 0, 0, &b),
                     RP_ERR_EXTENT_NEGATIVE);
    assert_int_equal(rp_box_new((rp_vec3){NAN, 0, 0}, one, 1, 0, 0, 0, &b), RP_ERR_NONFINITE);
    assert_int_equal(rp_box_new(o, (rp_vec3){INFINITY, 0, 0}, 1, 0, 0, 0, &b), RP_ERR_NONFINITE);
    assert_int_equal(rp_box_new(o, one, 0, 0, 0, 0, &b), RP_ERR_QUATERNION);
    assert_int_equal(rp_box_new(o, one, NAN, 0, 0, 0, &b), RP_ERR_QUATERNION);
    assert_int_equal(rp_box_new(o, one, NAN, 0, 0, 1e-310, &b), RP_ERR_QUATERNION);
    assert_int_equal(rp_box_new(o, one, 1, INFINITY, 0, 0, &b), RP_ERR_QUATERNION);
    assert_int_equal(rp_box_new(o, one, 1, 0, 0, 0, NULL), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_box_new(o, one, 2, 0, 0, 0, &b), RP_OK);
    assert_true(b.rotation.w == 1.0);
    assert_int_equal(rp_halfspace_new(o, 1, &h), RP_ERR_NORMAL);
    assert_int_equal(rp_halfspace_new((rp_vec3){0, 0, NAN}, 1, &h), RP_ERR_NONFINITE);
    assert_int_equal(rp_halfspace_new((rp_vec3){0, 0, 1}, INFINITY, &h), RP_ERR_NONFINITE);
    /* Normalised with its offset: the same solid. */
    assert_int_equal(rp_halfspace_new((rp_vec3){0, 0, 4}, 2, &h), RP_OK);
    assert_true(h.normal.z == 1.0 && h.offset == 0.5);
    assert_int_equal(rp_halfspace_new((rp_vec3){0, 0, 1e-300}, 1e-300, &h), RP_OK);
    assert_true(h.normal.z == 1.0 && h.offset == 1.0);

    /* validate: what the constructors make passes, literals that skip them
     * are held to the same rules. */
    rp_shape s = rp_shape_from_box(b);
    assert_int_equal(rp_shape_validate(&s), RP_OK);
    s.box.rotation.w = 1.0 + 1e-12;
    assert_int_equal(rp_shape_validate(&s), RP_ERR_QUATERNION);
    s.box.rotation.w = NAN;
    assert_int_equal(rp_shape_validate(&s), RP_ERR_QUATERNION);
    s = rp_shape_from_box(b);
    s.box.half_extents.y = -0.0; /* a zero extent, signed or not */
    assert_int_equal(rp_shape_validate(&s), RP_OK);
    s.box.half_extents.y = -1e-300;
    assert_int_equal(rp_shape_validate(&s), RP_ERR_EXTENT_NEGATIVE);
    s.box.half_extents.y = NAN;
    assert_int_equal(rp_shape_validate(&s), RP_ERR_NONFINITE);
    s = rp_shape_from_halfspace(h);
    assert_int_equal(rp_shape_validate(&s), RP_OK);
    s.halfspace.normal.z = 2.0;
    assert_int_equal(rp_shape_validate(&s), RP_ERR_NORMAL);
    s.halfspace.normal.z = 0.0;
    assert_int_equal(rp_shape_validate(&s), RP_ERR_NORMAL);
    s = rp_shape_from_halfspace(h);
    s.halfspace.offset = INFINITY;
    assert_int_equal(rp_shape_validate(&s), RP_ERR_NONFINITE);
}

/* What the constructors made, built again, is the same bits: a box or
 * half-space printed and read back (the daemon's journal, a client putting
 * what scene.get returned) does not drift by an ulp per round trip. */
static void constructors_give_back_what_they_made(void **state)
{
    (void)state;
    test_rng g = {0xb0c5};
    for (int i = 0; i < 20000; i++) {
        double q[4];
        for (int k = 0; k < 4; k++)
            q[k] = rng_uniform(&g, -1, 1) * ldexp(1.0, (int)(rng_next(&g) % 40) - 20);
        rp_vec3 c = {rng_uniform(&g, -5, 5), 0, 1}, h = {1, 2, 0};
        rp_box a, b;
        if (rp_box_new(c, h, q[0], q[1], q[2], q[3], &a) != RP_OK)
            continue;
        rp_quat r = a.rotation;
        assert_true(fabs(r.w * r.w + r.x * r.x + r.y * r.y + r.z * r.z - 1.0) <= 4 * DBL_EPSILON);
        assert_int_equal(rp_box_new(c, h, r.w, r.x, r.y, r.z, &b), RP_OK);
        assert_memory_equal(&a, &b, sizeof a);
        rp_vec3 n = {q[0], q[1], q[2]};
        rp_halfspace u, v;
        if (rp_halfspace_new(n, q[3], &u) != RP_OK)
            continue;
        assert_int_equal(rp_halfspace_new(u.normal, u.offset, &v), RP_OK);
        assert_memory_equal(&u, &v, sizeof u);
    }
}

/* Hand-computed cases. */
static void known_box_distances(void **state)
{
    (void)state;
    rp_box b = mk_box((rp_vec3){0, 0, 0}, (rp_vec3){1, 2, 3}, 1, 0, 0, 0);
    rp_sphere s = {{4, 0, 0}, 1};
    assert_true(rp_sphere_box_signed_distance(&s, &b) == 2.0);
    s.center = (rp_vec3){4, 6, 0}; /* off an edge: (3, 4) away */
    assert_true(rp_sphere_box_signed_distance(&s, &b) == 4.0);
    s.center = (rp_vec3){0.5, 0, 0}; /* inside: 0.5 to the +x face */
    assert_true(rp_sphere_box_signed_distance(&s, &b) == -1.5);
    rp_capsule k = {{-5, 0, 0}, {5, 0, 0}, 0.25}; /* through along x: out by y (2) */
    assert_true(rp_capsule_box_signed_distance(&k, &b) == -2.25);
    k = (rp_capsule){{2, -5, 4}, {2, 5, 4}, 0}; /* across above an edge: (1, 1) */
    assert_true(fabs(rp_capsule_box_signed_distance(&k, &b) - sqrt(2.0)) <= 4 * EPS * 5);
    /* Rotated 90 degrees about z: x and y swap. */
    rp_box r = mk_box((rp_vec3){0, 0, 0}, (rp_vec3){1, 2, 3}, cos(PI_ / 4), 0, 0, sin(PI_ / 4));
    s = (rp_sphere){{0, 4, 0}, 0};
    assert_true(fabs(rp_sphere_box_signed_distance(&s, &r) - 3.0) <= 8 * EPS * 4);
    rp_halfspace floor_;
    assert_int_equal(rp_halfspace_new((rp_vec3){0, 0, 1}, 0, &floor_), RP_OK);
    k = (rp_capsule){{0, 0, 1}, {3, 0, -0.5}, 0.25};
    assert_true(rp_capsule_halfspace_signed_distance(&k, &floor_) == -0.75);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_box_distances),
        cmocka_unit_test(constructors_give_back_what_they_made),
        cmocka_unit_test(bad_boxes_and_halfspaces_are_refused),
        cmocka_unit_test(box_pairs_are_within_16_eps_S_of_the_reference),
        cmocka_unit_test(penetration_depth_is_the_shortest_separating_translation),
        cmocka_unit_test(box_distances_are_invariant_under_translation),
        cmocka_unit_test(halfspace_distances_are_the_lowest_points_height),
        cmocka_unit_test(box_halfspace_distance_is_the_lowest_vertex_height),
        cmocka_unit_test(box_box_pairs_are_within_16_eps_S_of_the_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
