/* SPDX-License-Identifier: MIT */
/*
 * Accuracy of the distance kernels against a __float128 reference
 * (reference.c) over generated families of hard configurations.
 *
 * Every generated pair is checked for:
 *   - |computed - exact| <= 16*eps*S (eps = 2^-52, S = largest magnitude among
 *     the pair's coordinates and radii) for the specialised kernel that fits
 *     the kinds and for the dispatcher rp_shape_signed_distance;
 *   - never NaN; where the exact distance lies beyond the double range (only
 *     in the near_dbl_max family), exactly +DBL_MAX or -DBL_MAX with its
 *     sign (geometry.h: results saturate);
 *   - d(a, b) == d(b, a) bit for bit (capsule-capsule, sphere-sphere and the
 *     dispatcher for every kind combination);
 *   - rp_shape_contact: finite, unit normal (| |n| - 1 | <= 1e-12), distance
 *     bitwise equal to rp_shape_signed_distance, point_b - point_a =
 *     distance*normal within 8*eps*S per component (unless the distance or a
 *     witness coordinate saturated at +-DBL_MAX), and swapping a and b swaps
 *     the points and negates the normal bit for bit.
 * Each capsule b is also checked with its end points exchanged.
 *
 * Generators are seeded splitmix64 streams, so every run sees the same pairs.
 * Each family prints "family <name>: n=<pairs> worst=<x> eps*S" with the worst
 * distance error in units of eps*S.  Failures print the offending pair with
 * %a so that it can be reproduced exactly.  Set REPOSE_ACCURACY_DETAIL=1 to
 * also print the worst witness-point residual per family.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "reference.h"
#include "repose/geometry.h"

#define EPS 0x1p-52
#define DISTANCE_BOUND 16.0 /* contract, in eps*S */
#define CONTACT_BOUND 8.0   /* point_b - point_a vs distance*normal, eps*S per component */
#define NORMAL_TOL 1e-12
#define MAX_REPORTS 6 /* printed failures per family */
#define PAIRS 8000    /* generated pairs per family (capsule b: checked twice) */

/* ---- vectors ------------------------------------------------------------ */

static rp_vec3 v3(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

static rp_vec3 vadd(rp_vec3 a, rp_vec3 b)
{
    return v3(a.x + b.x, a.y + b.y, a.z + b.z);
}

static rp_vec3 vsub(rp_vec3 a, rp_vec3 b)
{
    return v3(a.x - b.x, a.y - b.y, a.z - b.z);
}

static rp_vec3 vscale(rp_vec3 a, double s)
{
    return v3(a.x * s, a.y * s, a.z * s);
}

/* a + s*u */
static rp_vec3 vaxpy(rp_vec3 a, double s, rp_vec3 u)
{
    return vadd(a, vscale(u, s));
}

static double vdot(rp_vec3 a, rp_vec3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

static rp_vec3 vcross(rp_vec3 a, rp_vec3 b)
{
    return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

static rp_vec3 vnormalize(rp_vec3 a)
{
    return vscale(a, 1.0 / sqrt(vdot(a, a)));
}

/* ---- random helpers ----------------------------------------------------- */

/* Integer uniform in [lo, hi]. */
static int rand_int(test_rng *r, int lo, int hi)
{
    return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* True with probability 1/n. */
static int one_in(test_rng *r, int n)
{
    return rng_next(r) % (uint64_t)n == 0;
}

static rp_vec3 rand_box(test_rng *r, double h)
{
    return v3(rng_uniform(r, -h, h), rng_uniform(r, -h, h), rng_uniform(r, -h, h));
}

static rp_vec3 rand_unit(test_rng *r)
{
    for (;;) {
        rp_vec3 v = rand_box(r, 1.0);
        double n2 = vdot(v, v);
        if (n2 > 0.01 && n2 <= 1.0)
            return vnormalize(v);
    }
}

/* A unit vector perpendicular to the unit vector u. */
static rp_vec3 rand_perp(test_rng *r, rp_vec3 u)
{
    for (;;) {
        rp_vec3 w = vcross(u, rand_unit(r));
        if (vdot(w, w) > 0.01)
            return vnormalize(w);
    }
}

/* Point whose coordinates are multiples of 2^-10 in [-1, 1]. */
static rp_vec3 rand_grid_point(test_rng *r)
{
    return v3(rand_int(r, -1024, 1024) * 0x1p-10, rand_int(r, -1024, 1024) * 0x1p-10,
              rand_int(r, -1024, 1024) * 0x1p-10);
}

/* Nonzero vector with integer components in [-k, k]. */
static rp_vec3 rand_int_dir(test_rng *r, int k)
{
    for (;;) {
        rp_vec3 v = v3(rand_int(r, -k, k), rand_int(r, -k, k), rand_int(r, -k, k));
        if (vdot(v, v) > 0)
            return v;
    }
}

/* ---- shapes ------------------------------------------------------------- */

static rp_shape mk_capsule(rp_vec3 a, rp_vec3 b, double radius)
{
    rp_capsule c = {a, b, radius};
    return rp_shape_from_capsule(c);
}

static rp_shape mk_sphere(rp_vec3 c, double radius)
{
    rp_sphere s = {c, radius};
    return rp_shape_from_sphere(s);
}

static rp_shape reversed(const rp_shape *s)
{
    return mk_capsule(s->capsule.b, s->capsule.a, s->capsule.radius);
}

/* Radii for cores at (approximately) distance D: zero, independent uniform in
 * [0, rmax], or summing to D - gap with |gap| <= gapmax (near touching). */
static void pick_radii(test_rng *r, double D, double rmax, double gapmax, double *ra, double *rb)
{
    int mode = rand_int(r, 0, 7);
    if (mode == 0) {
        *ra = *rb = 0;
        return;
    }
    if (mode <= 3) {
        *ra = rng_uniform(r, 0, rmax);
        *rb = rng_uniform(r, 0, rmax);
        return;
    }
    double gap = mode == 7 ? 0 : rng_uniform(r, -gapmax, gapmax);
    double total = D - gap;
    if (total < 0)
        total = 0;
    double f = mode == 4 ? 0 : rng_uniform(r, 0, 1);
    double x = total * f, y = total - x;
    if (rng_next(r) & 1) {
        *ra = x;
        *rb = y;
    } else {
        *ra = y;
        *rb = x;
    }
}

/* Builds the pair from axis segments pts[0]-pts[1] and pts[2]-pts[3].  With
 * mixed != 0 one or both sides sometimes become a sphere centred on its
 * segment.  Radii come from pick_radii with the exact core distance. */
static void finish_pair(test_rng *r, const rp_vec3 pts[4], int mixed, double rmax, double gapmax,
                        rp_shape *a, rp_shape *b)
{
    int ka = 1, kb = 1; /* 1 = capsule */
    if (mixed) {
        int k = rand_int(r, 0, 15);
        ka = !(k == 0 || k == 1 || k == 2);
        kb = !(k == 0 || k == 3 || k == 4);
    }
    *a = mk_capsule(pts[0], pts[1], 0);
    *b = mk_capsule(pts[2], pts[3], 0);
    if (!ka)
        *a = mk_sphere(vaxpy(pts[0], rng_uniform(r, 0, 1), vsub(pts[1], pts[0])), 0);
    if (!kb)
        *b = mk_sphere(vaxpy(pts[2], rng_uniform(r, 0, 1), vsub(pts[3], pts[2])), 0);
    /* Cores near DBL_MAX can be farther apart than DBL_MAX (near_dbl_max):
     * radii summing to DBL_MAX are as close to touching as valid radii get. */
    double D = (double)ref_shape_core_distance(a, b);
    if (!(D <= DBL_MAX))
        D = DBL_MAX;
    double ra, rb;
    pick_radii(r, D, rmax, gapmax, &ra, &rb);
    if (ka)
        a->capsule.radius = ra;
    else
        a->sphere.radius = ra;
    if (kb)
        b->capsule.radius = rb;
    else
        b->sphere.radius = rb;
}

/* ---- core generators (unit scale): pts[0]-pts[1] and pts[2]-pts[3] ------- */

static void core_general(test_rng *r, rp_vec3 pts[4])
{
    for (int i = 0; i < 4; i++)
        pts[i] = rand_box(r, 1.0);
}

/* Parallel (or anti-parallel) axes.  Half of the pairs lie on a dyadic grid
 * so that they are parallel exactly; the rest are parallel up to the
 * rounding of the end points.  overlap: the projections onto the axis
 * overlap (possibly in a single point); otherwise they are disjoint.
 * collinear: no lateral offset. */
static void core_parallel(test_rng *r, int overlap, int anti, int collinear, rp_vec3 pts[4])
{
    if (rng_next(r) & 1) {
        rp_vec3 d = vscale(rand_int_dir(r, 4), 0.125);
        rp_vec3 p0 = rand_grid_point(r);
        rp_vec3 off = collinear ? v3(0, 0, 0) : vscale(vcross(d, rand_int_dir(r, 4)), 0.25);
        int m = rand_int(r, 1, 8), len = rand_int(r, 1, 8), lo, hi;
        if (overlap) {
            lo = rand_int(r, 0, m);
            hi = lo + len;
            if (rng_next(r) & 1) { /* shift so the overlap is at the other end */
                hi = m - lo;
                lo = hi - len;
            }
        } else if (rng_next(r) & 1) {
            lo = m + rand_int(r, 1, 6);
            hi = lo + len;
        } else {
            hi = -rand_int(r, 1, 6);
            lo = hi - len;
        }
        int k0 = anti ? hi : lo, k1 = anti ? lo : hi;
        pts[0] = p0;
        pts[1] = vaxpy(p0, m, d);
        pts[2] = vaxpy(vadd(p0, off), k0, d);
        pts[3] = vaxpy(vadd(p0, off), k1, d);
    } else {
        rp_vec3 u = rand_unit(r);
        double L = rng_uniform(r, 0.1, 1.5), len = rng_uniform(r, 0.05, 1.5), lo, hi;
        rp_vec3 p0 = rand_box(r, 1.0);
        rp_vec3 off = collinear ? v3(0, 0, 0) : vscale(rand_perp(r, u), rng_uniform(r, 0, 0.5));
        if (overlap) {
            lo = rng_uniform(r, -len, L);
            hi = lo + len;
        } else if (rng_next(r) & 1) {
            lo = L + rng_uniform(r, 1e-3, 1.0);
            hi = lo + len;
        } else {
            hi = -rng_uniform(r, 1e-3, 1.0);
            lo = hi - len;
        }
        pts[0] = p0;
        pts[1] = vaxpy(p0, L, u);
        pts[2] = vaxpy(vadd(p0, off), anti ? hi : lo, u);
        pts[3] = vaxpy(vadd(p0, off), anti ? lo : hi, u);
    }
}

/* Axis q is axis p rotated by theta about a perpendicular axis k; the lines'
 * closest approach is at parameters (s*, t*) in [-0.5, 1.5]^2, so the interior
 * minimum is inside both segments about a quarter of the time, and the
 * lateral offset along k is zero, tiny or ordinary. */
static void core_nearly_parallel(test_rng *r, double theta, rp_vec3 pts[4])
{
    rp_vec3 u = rand_unit(r);
    rp_vec3 k = rand_perp(r, u);
    rp_vec3 ku = vcross(k, u);
    rp_vec3 v = vaxpy(vscale(u, cos(theta)), sin(theta), ku);
    if (rng_next(r) & 1)
        v = vscale(v, -1.0);
    double L1 = rng_uniform(r, 0.05, 2.0), L2 = rng_uniform(r, 0.05, 2.0);
    double s = rng_uniform(r, -0.5, 1.5), t = rng_uniform(r, -0.5, 1.5);
    int hm = rand_int(r, 0, 3);
    double h = hm == 0 ? 0 : hm == 1 ? rng_uniform(r, -1e-9, 1e-9) : rng_uniform(r, -0.3, 0.3);
    rp_vec3 p0 = rand_box(r, 1.0);
    rp_vec3 c = vaxpy(vaxpy(p0, s * L1, u), h, k);
    pts[0] = p0;
    pts[1] = vaxpy(p0, L1, u);
    pts[2] = vaxpy(c, -t * L2, v);
    pts[3] = vaxpy(pts[2], L2, v);
}

/* Axes that intersect at an interior point of both: on the dyadic grid
 * exactly, or through a common random point up to rounding. */
static void core_crossing(test_rng *r, rp_vec3 pts[4])
{
    if (rng_next(r) & 1) {
        rp_vec3 x = rand_grid_point(r), d1, d2;
        do {
            d1 = vscale(rand_int_dir(r, 4), 0.125);
            d2 = vscale(rand_int_dir(r, 4), 0.125);
        } while (vdot(vcross(d1, d2), vcross(d1, d2)) == 0);
        pts[0] = vaxpy(x, -rand_int(r, 1, 6), d1);
        pts[1] = vaxpy(x, rand_int(r, 1, 6), d1);
        pts[2] = vaxpy(x, -rand_int(r, 1, 6), d2);
        pts[3] = vaxpy(x, rand_int(r, 1, 6), d2);
    } else {
        rp_vec3 x = rand_box(r, 1.0), u = rand_unit(r), v = rand_unit(r);
        double L1 = rng_uniform(r, 0.05, 2.0), L2 = rng_uniform(r, 0.05, 2.0);
        double s = rng_uniform(r, 0.02, 0.98), t = rng_uniform(r, 0.02, 0.98);
        pts[0] = vaxpy(x, -s * L1, u);
        pts[1] = vaxpy(pts[0], L1, u);
        pts[2] = vaxpy(x, -t * L2, v);
        pts[3] = vaxpy(pts[2], L2, v);
    }
}

/* The closest points are an end point of each segment: both segments leave
 * their closest end away from the other. */
static void core_endpoint(test_rng *r, rp_vec3 pts[4])
{
    rp_vec3 x = rand_box(r, 1.0), g = rand_unit(r), a = rand_unit(r), b = rand_unit(r);
    int gm = rand_int(r, 0, 3);
    double gap = gm == 0 ? 0 : gm == 1 ? rng_uniform(r, 0, 1e-9) : rng_uniform(r, 0, 0.5);
    if (vdot(a, g) < 0)
        a = vscale(a, -1.0);
    if (vdot(b, g) < 0)
        b = vscale(b, -1.0);
    rp_vec3 p1 = x, q0 = vaxpy(x, gap, g);
    rp_vec3 p0 = vaxpy(p1, -rng_uniform(r, 0.05, 1.5), a);
    rp_vec3 q1 = vaxpy(q0, rng_uniform(r, 0.05, 1.5), b);
    int flip = rng_next(r) & 1;
    pts[0] = flip ? p1 : p0;
    pts[1] = flip ? p0 : p1;
    pts[2] = q0;
    pts[3] = q1;
}

/* A stem perpendicular to a bar, its end over the bar's interior (or just
 * past an end), at a gap that is zero, tiny or ordinary; a quarter of the
 * stems pass through the bar.  Half on the dyadic grid (exact right angles). */
static void core_t(test_rng *r, rp_vec3 pts[4])
{
    int hm = rand_int(r, 0, 3);
    int through = one_in(r, 4);
    if (rng_next(r) & 1) {
        rp_vec3 d1 = vscale(rand_int_dir(r, 4), 0.125), d2;
        do
            d2 = vcross(d1, rand_int_dir(r, 4));
        while (vdot(d2, d2) == 0);
        int m = rand_int(r, 1, 8);
        rp_vec3 p0 = rand_grid_point(r);
        rp_vec3 foot = vaxpy(p0, rand_int(r, -1, m + 1), d1);
        int h = hm == 0 ? 0 : rand_int(r, 1, 4);
        int l = rand_int(r, 1, 6);
        pts[0] = p0;
        pts[1] = vaxpy(p0, m, d1);
        pts[2] = vaxpy(foot, through ? -rand_int(r, 1, 6) : h, d2);
        pts[3] = vaxpy(foot, through ? l : h + l, d2);
    } else {
        rp_vec3 u = rand_unit(r), p0 = rand_box(r, 1.0);
        rp_vec3 n = rand_perp(r, u);
        double L1 = rng_uniform(r, 0.05, 2.0), L2 = rng_uniform(r, 0.05, 2.0);
        int sm = rand_int(r, 0, 9);
        double s = sm < 7    ? rng_uniform(r, 0, 1)
                   : sm == 7 ? (double)(rng_next(r) & 1)
                   : sm == 8 ? rng_uniform(r, 1.0, 1.3)
                             : rng_uniform(r, -0.3, 0.0);
        double h = hm == 0 ? 0 : hm == 1 ? rng_uniform(r, 0, 1e-10) : rng_uniform(r, 0, 0.5);
        rp_vec3 foot = vaxpy(p0, s * L1, u);
        double f = rng_uniform(r, 0.05, 0.95);
        pts[0] = p0;
        pts[1] = vaxpy(p0, L1, u);
        pts[2] = vaxpy(foot, through ? -f * L2 : h, n);
        pts[3] = vaxpy(foot, through ? (1 - f) * L2 : h + L2, n);
    }
}

/* One of the structured configurations, for the scaled families. */
static void core_mixed(test_rng *r, rp_vec3 pts[4])
{
    switch (rand_int(r, 0, 9)) {
    case 0:
        core_general(r, pts);
        break;
    case 1:
        core_parallel(r, 1, 0, 0, pts);
        break;
    case 2:
        core_parallel(r, 0, 1, 0, pts);
        break;
    case 3:
        core_nearly_parallel(r, 1e-6, pts);
        break;
    case 4:
        core_nearly_parallel(r, 1e-12, pts);
        break;
    case 5:
        core_parallel(r, (int)(rng_next(r) & 1), 0, 1, pts);
        break;
    case 6:
        core_crossing(r, pts);
        break;
    case 7:
        core_endpoint(r, pts);
        break;
    case 8:
        core_t(r, pts);
        break;
    default: /* degenerate axis on one side */
        core_general(r, pts);
        pts[1] = pts[0];
        break;
    }
}

/* ---- checking ----------------------------------------------------------- */

typedef struct family {
    const char *name;
    long n;               /* pairs checked */
    double worst;         /* worst distance error, eps*S */
    double worst_contact; /* worst witness residual, eps*S */
    long failures;
    int reports;
    long saturated; /* pairs whose exact distance is beyond +-DBL_MAX */
} family;

static void print_shape(const char *label, const rp_shape *s)
{
    if (s->kind == RP_SHAPE_SPHERE)
        printf("    %s = sphere{center=(%a, %a, %a), radius=%a}\n", label, s->sphere.center.x,
               s->sphere.center.y, s->sphere.center.z, s->sphere.radius);
    else
        printf("    %s = capsule{a=(%a, %a, %a), b=(%a, %a, %a), radius=%a}\n", label,
               s->capsule.a.x, s->capsule.a.y, s->capsule.a.z, s->capsule.b.x, s->capsule.b.y,
               s->capsule.b.z, s->capsule.radius);
}

/* Counts a failure; returns nonzero when it should be printed (after
 * printing the pair). */
static int failure(family *f, const char *what, const rp_shape *a, const rp_shape *b)
{
    f->failures++;
    if (f->reports >= MAX_REPORTS)
        return 0;
    f->reports++;
    printf("FAIL family %s, pair %ld: %s\n", f->name, f->n, what);
    print_shape("a", a);
    print_shape("b", b);
    return 1;
}

static void check_distance(family *f, const char *what, const rp_shape *a, const rp_shape *b,
                           double computed, ref_real ref, double S)
{
    if (ref > (ref_real)DBL_MAX || ref < -(ref_real)DBL_MAX) {
        /* Not representable: the contract is saturation, with the sign. */
        double want = ref > 0 ? DBL_MAX : -DBL_MAX;
        if (!same_bits(computed, want) && failure(f, what, a, b)) {
            double hi, lo;
            ref_split(ref, &hi, &lo);
            printf("    computed = %a, want %a (saturated; reference = %a + %a)\n", computed, want,
                   hi, lo);
        }
        return;
    }
    double e = ref_error_in_eps_S(computed, ref, S);
    if (isnan(e))
        e = HUGE_VAL;
    if (e > f->worst)
        f->worst = e;
    if (e <= DISTANCE_BOUND)
        return;
    if (failure(f, what, a, b)) {
        double hi, lo;
        ref_split(ref, &hi, &lo);
        printf("    computed = %a (%.17g)\n    reference = %a + %a (%.17g)\n"
               "    error = %.3f eps*S, S = %a\n",
               computed, computed, hi, lo, hi, e, S);
    }
}

static void check_same(family *f, const char *what, const rp_shape *a, const rp_shape *b, double x,
                       double y)
{
    if (!same_bits(x, y) && failure(f, what, a, b))
        printf("    %a vs %a\n", x, y);
}

static int vec_finite(rp_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

static int vec_same_bits(rp_vec3 p, rp_vec3 q)
{
    return same_bits(p.x, q.x) && same_bits(p.y, q.y) && same_bits(p.z, q.z);
}

/* Bitwise identical shapes (kind, coordinates, radius). */
static int same_shape(const rp_shape *a, const rp_shape *b)
{
    if (a->kind != b->kind)
        return 0;
    if (a->kind == RP_SHAPE_SPHERE)
        return vec_same_bits(a->sphere.center, b->sphere.center) &&
               same_bits(a->sphere.radius, b->sphere.radius);
    return vec_same_bits(a->capsule.a, b->capsule.a) && vec_same_bits(a->capsule.b, b->capsule.b) &&
           same_bits(a->capsule.radius, b->capsule.radius);
}

static void print_contact(const char *label, rp_contact c)
{
    printf("    %s: distance=%a point_a=(%a, %a, %a) point_b=(%a, %a, %a) "
           "normal=(%a, %a, %a)\n",
           label, c.distance, c.point_a.x, c.point_a.y, c.point_a.z, c.point_b.x, c.point_b.y,
           c.point_b.z, c.normal.x, c.normal.y, c.normal.z);
}

static int at_dbl_max(double x)
{
    return fabs(x) == DBL_MAX;
}

/* True when the contact's distance or a witness coordinate sits at +-DBL_MAX
 * (saturated, or by chance exactly there). */
static int saturated_contact(rp_contact c)
{
    return at_dbl_max(c.distance) || at_dbl_max(c.point_a.x) || at_dbl_max(c.point_a.y) ||
           at_dbl_max(c.point_a.z) || at_dbl_max(c.point_b.x) || at_dbl_max(c.point_b.y) ||
           at_dbl_max(c.point_b.z);
}

static double residual(double pb, double pa, double dist, double n)
{
    ref_real x = (ref_real)pb - (ref_real)pa - (ref_real)dist * (ref_real)n;
    return fabs((double)x);
}

static void check_contact(family *f, const rp_shape *a, const rp_shape *b, double dab, double S)
{
    rp_contact c = rp_shape_contact(a, b), cs = rp_shape_contact(b, a);
    rp_vec3 n = c.normal;

    if (!(isfinite(c.distance) && vec_finite(c.point_a) && vec_finite(c.point_b) &&
          vec_finite(n))) {
        if (failure(f, "contact not finite", a, b))
            print_contact("contact(a,b)", c);
        return;
    }
    double len = sqrt(vdot(n, n));
    if (!(fabs(len - 1.0) <= NORMAL_TOL) && failure(f, "contact normal not unit", a, b)) {
        print_contact("contact(a,b)", c);
        printf("    |n| - 1 = %.3g\n", len - 1.0);
    }
    if (!same_bits(c.distance, dab) &&
        failure(f, "contact.distance != rp_shape_signed_distance", a, b))
        printf("    %a vs %a\n", c.distance, dab);

    /* A saturated distance or witness no longer satisfies the identity. */
    if (!saturated_contact(c)) {
        double res = residual(c.point_b.x, c.point_a.x, c.distance, n.x);
        res = fmax(res, residual(c.point_b.y, c.point_a.y, c.distance, n.y));
        res = fmax(res, residual(c.point_b.z, c.point_a.z, c.distance, n.z));
        double res_eps = S > 0 ? res / (EPS * S) : (res == 0 ? 0 : HUGE_VAL);
        if (res_eps > f->worst_contact)
            f->worst_contact = res_eps;
        if (!(res_eps <= CONTACT_BOUND) &&
            failure(f, "point_b - point_a != distance*normal", a, b)) {
            print_contact("contact(a,b)", c);
            printf("    residual = %.3f eps*S\n", res_eps);
        }
    }

    /* Identical shapes make contact(b, a) the very same call as contact(a, b),
     * so there the normal cannot be negated; ask for the same result. */
    rp_vec3 neg = same_shape(a, b) ? n : v3(-n.x, -n.y, -n.z);
    if (!(vec_same_bits(cs.point_a, c.point_b) && vec_same_bits(cs.point_b, c.point_a) &&
          vec_same_bits(cs.normal, neg) && same_bits(cs.distance, c.distance)) &&
        failure(f, "contact(b,a) is not contact(a,b) swapped", a, b)) {
        print_contact("contact(a,b)", c);
        print_contact("contact(b,a)", cs);
    }
}

static void check_pair(family *f, const rp_shape *a, const rp_shape *b)
{
    ref_real ref = ref_shape_distance(a, b);
    double S = ref_scale_S(a, b);
    if (ref > (ref_real)DBL_MAX || ref < -(ref_real)DBL_MAX)
        f->saturated++;

    if (a->kind == RP_SHAPE_CAPSULE && b->kind == RP_SHAPE_CAPSULE) {
        double d1 = rp_capsule_capsule_signed_distance(&a->capsule, &b->capsule);
        double d2 = rp_capsule_capsule_signed_distance(&b->capsule, &a->capsule);
        check_distance(f, "rp_capsule_capsule_signed_distance(a, b)", a, b, d1, ref, S);
        check_same(f, "capsule-capsule d(a,b) != d(b,a) bitwise", a, b, d1, d2);
    } else if (a->kind == RP_SHAPE_CAPSULE) {
        double d = rp_capsule_sphere_signed_distance(&a->capsule, &b->sphere);
        check_distance(f, "rp_capsule_sphere_signed_distance(a, b)", a, b, d, ref, S);
    } else if (b->kind == RP_SHAPE_CAPSULE) {
        double d = rp_capsule_sphere_signed_distance(&b->capsule, &a->sphere);
        check_distance(f, "rp_capsule_sphere_signed_distance(b, a)", a, b, d, ref, S);
    } else {
        double d1 = rp_sphere_sphere_signed_distance(&a->sphere, &b->sphere);
        double d2 = rp_sphere_sphere_signed_distance(&b->sphere, &a->sphere);
        check_distance(f, "rp_sphere_sphere_signed_distance(a, b)", a, b, d1, ref, S);
        check_same(f, "sphere-sphere d(a,b) != d(b,a) bitwise", a, b, d1, d2);
    }

    double dab = rp_shape_signed_distance(a, b);
    double dba = rp_shape_signed_distance(b, a);
    check_distance(f, "rp_shape_signed_distance(a, b)", a, b, dab, ref, S);
    check_same(f, "rp_shape_signed_distance d(a,b) != d(b,a) bitwise", a, b, dab, dba);
    check_contact(f, a, b, dab, S);
    f->n++;
}

typedef void (*pair_gen)(test_rng *r, rp_shape *a, rp_shape *b);

static void run_family(const char *name, uint64_t seed, pair_gen gen)
{
    family f = {name, 0, 0, 0, 0, 0, 0};
    test_rng r = {seed};
    for (int i = 0; i < PAIRS; i++) {
        rp_shape a, b;
        gen(&r, &a, &b);
        check_pair(&f, &a, &b);
        if (b.kind == RP_SHAPE_CAPSULE) {
            rp_shape br = reversed(&b);
            check_pair(&f, &a, &br);
        }
    }
    printf("family %s: n=%ld worst=%.3g eps*S", name, f.n, f.worst);
    if (f.saturated)
        printf(" (%ld beyond +-DBL_MAX, saturated)", f.saturated);
    printf("\n");
    if (getenv("REPOSE_ACCURACY_DETAIL"))
        printf("    contact residual worst=%.3g eps*S\n", f.worst_contact);
    fflush(stdout);
    if (f.failures)
        fail_msg("family %s: %ld failed checks over %ld pairs (first %d printed)", name, f.failures,
                 f.n, f.reports);
}

/* ---- pair generators ---------------------------------------------------- */

static void gen_general(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_general(r, pts);
    finish_pair(r, pts, 1, 0.5, 0.1, a, b);
}

static void gen_parallel_overlapping(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_parallel(r, 1, 0, 0, pts);
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

static void gen_parallel_disjoint(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_parallel(r, 0, 0, 0, pts);
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

static void gen_antiparallel(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_parallel(r, (int)(rng_next(r) & 1), 1, 0, pts);
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

static void gen_nearly_parallel(test_rng *r, double theta, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_nearly_parallel(r, theta, pts);
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

static void gen_nearly_parallel_1e3(test_rng *r, rp_shape *a, rp_shape *b)
{
    gen_nearly_parallel(r, 1e-3, a, b);
}

static void gen_nearly_parallel_1e6(test_rng *r, rp_shape *a, rp_shape *b)
{
    gen_nearly_parallel(r, 1e-6, a, b);
}

static void gen_nearly_parallel_1e9(test_rng *r, rp_shape *a, rp_shape *b)
{
    gen_nearly_parallel(r, 1e-9, a, b);
}

static void gen_nearly_parallel_1e12(test_rng *r, rp_shape *a, rp_shape *b)
{
    gen_nearly_parallel(r, 1e-12, a, b);
}

static void gen_collinear_overlapping(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_parallel(r, 1, (int)(rng_next(r) & 1), 1, pts);
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

static void gen_collinear_separated(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_parallel(r, 0, (int)(rng_next(r) & 1), 1, pts);
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

/* A point: random, an end point of the segment q0-q1, on its axis (exactly
 * on the grid or up to rounding), or just off it. */
static rp_vec3 point_near_segment(test_rng *r, rp_vec3 q0, rp_vec3 q1)
{
    switch (rand_int(r, 0, 4)) {
    case 0:
        return rand_box(r, 1.0);
    case 1:
        return (rng_next(r) & 1) ? q0 : q1;
    case 2:
        return vaxpy(q0, rng_uniform(r, -0.2, 1.2), vsub(q1, q0));
    case 3:
        return vaxpy(vaxpy(q0, rng_uniform(r, 0, 1), vsub(q1, q0)), 1e-9, rand_unit(r));
    default:
        return vaxpy(q0, rng_uniform(r, 0, 1), vsub(q1, q0));
    }
}

/* Core pts[0]-pts[1] degenerate (a == b); the other side a capsule or, a
 * quarter of the time, a sphere. */
static void degenerate_pair(test_rng *r, rp_shape *p, rp_shape *q)
{
    rp_vec3 pts[4];
    if (rng_next(r) & 1) {
        /* on the grid: the point exactly on the other axis or its end */
        rp_vec3 d = vscale(rand_int_dir(r, 4), 0.125), q0 = rand_grid_point(r);
        int m = rand_int(r, 1, 8);
        pts[2] = q0;
        pts[3] = vaxpy(q0, m, d);
        pts[0] = vaxpy(q0, rand_int(r, -2, m + 2), d);
        if (one_in(r, 3))
            pts[0] = vadd(pts[0], vscale(rand_int_dir(r, 3), 0x1p-10));
    } else {
        core_general(r, pts);
        pts[0] = point_near_segment(r, pts[2], pts[3]);
    }
    pts[1] = pts[0];
    finish_pair(r, pts, 0, 0.5, 0.1, p, q);
    if (one_in(r, 4))
        *q =
            mk_sphere(vaxpy(pts[2], rng_uniform(r, 0, 1), vsub(pts[3], pts[2])), q->capsule.radius);
}

static void gen_degenerate_first(test_rng *r, rp_shape *a, rp_shape *b)
{
    degenerate_pair(r, a, b);
}

static void gen_degenerate_second(test_rng *r, rp_shape *a, rp_shape *b)
{
    degenerate_pair(r, b, a);
}

static void gen_degenerate_both(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    pts[0] = pts[1] = rng_next(r) & 1 ? rand_grid_point(r) : rand_box(r, 1.0);
    switch (rand_int(r, 0, 3)) {
    case 0:
        pts[2] = pts[0];
        break; /* coincident */
    case 1:
        pts[2] = vaxpy(pts[0], 1e-9, rand_unit(r));
        break;
    default:
        pts[2] = rand_box(r, 1.0);
        break;
    }
    pts[3] = pts[2];
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

static void gen_crossing(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_crossing(r, pts);
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

static void gen_endpoint(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_endpoint(r, pts);
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

static void gen_t_configuration(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_t(r, pts);
    if (rng_next(r) & 1) { /* stem first */
        rp_vec3 t0 = pts[0], t1 = pts[1];
        pts[0] = pts[2];
        pts[1] = pts[3];
        pts[2] = t0;
        pts[3] = t1;
    }
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
}

/* Structured configurations scaled by 2^-13 (exactly; coordinates ~1e-4 m),
 * radii ~1e-5 m or near touching with gaps ~1e-7 m. */
static void gen_sub_millimetre(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_mixed(r, pts);
    for (int i = 0; i < 4; i++)
        pts[i] = vscale(pts[i], 0x1p-13);
    finish_pair(r, pts, 1, 2e-5, 2e-7, a, b);
}

/* Structured configurations translated by ~1e5 m (a multiple of 2^-10, so the
 * grid-exact ones stay exact), radii up to 0.5 m or near touching with gaps of
 * a few micrometres. */
static void gen_far_from_origin(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 pts[4];
    core_mixed(r, pts);
    rp_vec3 t = vscale(rand_unit(r), rng_uniform(r, 0.8e5, 1.2e5));
    t = v3(nearbyint(t.x * 1024) / 1024, nearbyint(t.y * 1024) / 1024,
           nearbyint(t.z * 1024) / 1024);
    for (int i = 0; i < 4; i++)
        pts[i] = vadd(pts[i], t);
    finish_pair(r, pts, 1, 0.5, 3e-6, a, b);
}

/* One shape entirely inside another: the inner core within half the outer
 * radius of the outer core, the inner radius below 0.4 of it.  Sometimes the
 * cores coincide exactly.  Kinds vary; the outer shape is a or b at random. */
static void gen_deep_penetration(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 p0 = rand_box(r, 1.0), u = rand_unit(r);
    double L = one_in(r, 6) ? 0 : rng_uniform(r, 0.05, 1.5);
    double R = rng_uniform(r, 0.3, 1.0);
    rp_vec3 p1 = vaxpy(p0, L, u);
    rp_vec3 q[2];
    for (int i = 0; i < 2; i++)
        q[i] =
            vaxpy(vaxpy(p0, rng_uniform(r, 0, 1) * L, u), rng_uniform(r, 0, 0.5 * R), rand_unit(r));
    if (one_in(r, 8)) {
        q[0] = p0;
        q[1] = p1;
    }
    double rin = rng_uniform(r, 0, 0.4 * R);
    rp_shape outer, inner;
    switch (rand_int(r, 0, 7)) {
    case 0:
    case 1: /* capsule containing a sphere */
        outer = mk_capsule(p0, p1, R);
        inner = mk_sphere(q[0], rin);
        break;
    case 2: /* sphere containing a capsule */
        outer = mk_sphere(p0, R);
        inner = mk_capsule(vaxpy(p0, 0.5, vsub(q[0], p0)), vaxpy(p0, 0.5, vsub(q[1], p0)), rin);
        break;
    case 3: /* sphere in sphere */
        outer = mk_sphere(p0, R);
        inner = mk_sphere(vaxpy(p0, 0.5, vsub(q[0], p0)), rin);
        break;
    default:
        outer = mk_capsule(p0, p1, R);
        inner = mk_capsule(q[0], q[1], rin);
        break;
    }
    if (rng_next(r) & 1) {
        *a = outer;
        *b = inner;
    } else {
        *a = inner;
        *b = outer;
    }
}

/* Uniform in [-h, h) for any finite h: rng_uniform(-h, h) would form 2h,
 * which overflows for h near DBL_MAX. */
static double rand_sym(test_rng *r, double h)
{
    return h * rng_uniform(r, -1.0, 1.0);
}

static double maxabs_pts(const rp_vec3 pts[4])
{
    double m = 0;
    for (int i = 0; i < 4; i++)
        m = fmax(m, fmax(fabs(pts[i].x), fmax(fabs(pts[i].y), fabs(pts[i].z))));
    return m;
}

/* Pairs near the largest double, where coordinate differences, core lengths
 * and sums of radii overflow although the distance may not:
 *   - the distribution: centres and end points uniform in +-1e308,
 *     radii uniform in [0, 1.7e308], sphere or capsule at random (many of
 *     these are beyond the double range and must saturate);
 *   - structured configurations scaled by a power of two so that the largest
 *     coordinate lies in [2^1019, 2^1022) (about 5e306 to 4.5e307; grid
 *     exactness is kept), radii up to 1.7e308 or up to half the scale, or
 *     near touching;
 *   - structured configurations at the scale of 1e300 translated by up to
 *     1.2e308 per axis (a multiple of 2^-10 of that scale), the
 *     far_from_origin family at the top of the range. */
static void gen_near_dbl_max(test_rng *r, rp_shape *a, rp_shape *b)
{
    int mode = rand_int(r, 0, 2);
    if (mode == 0) {
        rp_shape s[2];
        for (int i = 0; i < 2; i++) {
            rp_vec3 p = v3(rand_sym(r, 1e308), rand_sym(r, 1e308), rand_sym(r, 1e308));
            double rad = rng_uniform(r, 0, 1.7e308);
            if (rng_next(r) & 1)
                s[i] = mk_sphere(p, rad);
            else
                s[i] = mk_capsule(p, v3(rand_sym(r, 1e308), rand_sym(r, 1e308), rand_sym(r, 1e308)),
                                  rad);
        }
        *a = s[0];
        *b = s[1];
        return;
    }
    rp_vec3 pts[4];
    core_mixed(r, pts);
    if (mode == 1) {
        int k = 1021 - ilogb(maxabs_pts(pts)) - rand_int(r, 0, 2);
        for (int i = 0; i < 4; i++)
            pts[i] = vscale(pts[i], ldexp(1.0, k));
        double rmax = one_in(r, 2) ? 1.7e308 : ldexp(0.5, k);
        finish_pair(r, pts, 1, rmax, ldexp(0.1, k), a, b);
        return;
    }
    double unit = 0x1p997; /* about 1.3e300 */
    rp_vec3 t = vscale(rand_unit(r), rng_uniform(r, 0.5, 1.0) * 1.2e308 * sqrt(3.0));
    double q = unit * 0x1p-10;
    t = v3(fmax(-1.2e308, fmin(1.2e308, nearbyint(t.x / q) * q)),
           fmax(-1.2e308, fmin(1.2e308, nearbyint(t.y / q) * q)),
           fmax(-1.2e308, fmin(1.2e308, nearbyint(t.z / q) * q)));
    for (int i = 0; i < 4; i++)
        pts[i] = vadd(vscale(pts[i], unit), t);
    finish_pair(r, pts, 1, 0.5 * unit, 3e-6 * unit, a, b);
}

/* A random capsule axis, half the time on the grid. */
static void rand_axis(test_rng *r, rp_vec3 *p0, rp_vec3 *p1)
{
    *p0 = rand_box(r, 1.0);
    *p1 = vaxpy(*p0, rng_uniform(r, 0.05, 1.5), rand_unit(r));
    if (one_in(r, 10))
        *p1 = vaxpy(*p0, 1e-9, rand_unit(r)); /* very short axis */
}

/* Capsule-sphere with the sphere centre near an end point: exactly on it, in
 * the cap region, or beside the cylinder near the end. */
static void gen_sphere_near_end(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 p0, p1;
    rand_axis(r, &p0, &p1);
    rp_vec3 e = (rng_next(r) & 1) ? p0 : p1;
    rp_vec3 c = one_in(r, 5) ? e : vaxpy(e, rng_uniform(r, 0, 0.5), rand_unit(r));
    rp_vec3 pts[4] = {p0, p1, c, c};
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
    *b = mk_sphere(c, b->capsule.radius);
    if (rng_next(r) & 1) {
        rp_shape t = *a;
        *a = *b;
        *b = t;
    }
}

/* Capsule-sphere with the sphere centre beyond an end, on the extension of
 * the axis or off it. */
static void gen_sphere_beyond_end(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 p0, p1;
    rand_axis(r, &p0, &p1);
    rp_vec3 d = vsub(p1, p0);
    double s = (rng_next(r) & 1) ? rng_uniform(r, 1.0, 2.0) : rng_uniform(r, -1.0, 0.0);
    rp_vec3 c = vaxpy(p0, s, d);
    if (rng_next(r) & 1)
        c = vaxpy(c, rng_uniform(r, 0, 0.3), rand_unit(r));
    rp_vec3 pts[4] = {p0, p1, c, c};
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
    *b = mk_sphere(c, b->capsule.radius);
    if (rng_next(r) & 1) {
        rp_shape t = *a;
        *a = *b;
        *b = t;
    }
}

/* Capsule-sphere with the sphere centre on the axis: exactly (grid), at an
 * end point exactly, or up to rounding. */
static void gen_sphere_on_axis(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 p0, p1, c;
    if (rng_next(r) & 1) {
        rp_vec3 d = vscale(rand_int_dir(r, 4), 0.125);
        int m = rand_int(r, 1, 8);
        p0 = rand_grid_point(r);
        p1 = vaxpy(p0, m, d);
        c = vaxpy(p0, rand_int(r, 0, m), d);
    } else {
        rand_axis(r, &p0, &p1);
        c = vaxpy(p0, rng_uniform(r, 0, 1), vsub(p1, p0));
    }
    rp_vec3 pts[4] = {p0, p1, c, c};
    finish_pair(r, pts, 0, 0.5, 0.1, a, b);
    *b = mk_sphere(c, b->capsule.radius);
    if (rng_next(r) & 1) {
        rp_shape t = *a;
        *a = *b;
        *b = t;
    }
}

/* Two spheres whose radii sum to the centre distance: exactly (Pythagorean
 * offsets on the grid) or up to rounding. */
static void gen_spheres_touching(test_rng *r, rp_shape *a, rp_shape *b)
{
    static const int triples[4][4] = {{3, 4, 0, 5}, {1, 2, 2, 3}, {2, 3, 6, 7}, {0, 0, 1, 1}};
    rp_vec3 c1, c2;
    double r1, r2;
    if (rng_next(r) & 1) {
        const int *t = triples[rand_int(r, 0, 3)];
        int k = rand_int(r, 1, 8), perm = rand_int(r, 0, 2);
        double o[3];
        for (int i = 0; i < 3; i++)
            o[(i + perm) % 3] = t[i] * k * 0x1p-5 * ((rng_next(r) & 1) ? 1 : -1);
        c1 = rand_grid_point(r);
        c2 = vadd(c1, v3(o[0], o[1], o[2]));
        int total = t[3] * k, i1 = rand_int(r, 0, total);
        r1 = i1 * 0x1p-5;
        r2 = (total - i1) * 0x1p-5;
    } else {
        c1 = rand_box(r, 1.0);
        c2 = vaxpy(c1, rng_uniform(r, 0, 1.0), rand_unit(r));
        double D = (double)ref_segment_segment_distance(c1, c1, c2, c2);
        r1 = D * rng_uniform(r, 0, 1);
        r2 = D - r1;
    }
    *a = mk_sphere(c1, r1);
    *b = mk_sphere(c2, r2);
}

/* Two spheres with the same centre, radii zero or not. */
static void gen_spheres_concentric(test_rng *r, rp_shape *a, rp_shape *b)
{
    rp_vec3 c;
    switch (rand_int(r, 0, 3)) {
    case 0:
        c = rand_grid_point(r);
        break;
    case 1:
        c = v3(0, 0, 0);
        break;
    default:
        c = rand_box(r, 1.0);
        break;
    }
    double r1 = one_in(r, 4) ? 0 : rng_uniform(r, 0, 0.5);
    double r2 = one_in(r, 4) ? 0 : rng_uniform(r, 0, 0.5);
    *a = mk_sphere(c, r1);
    *b = mk_sphere(c, r2);
}

/* ---- the tests ---------------------------------------------------------- */

static void test_random_general_position_pairs_are_within_bound(void **state)
{
    (void)state;
    run_family("general_position", 0x5eed0001, gen_general);
}

static void test_exactly_parallel_overlapping_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("parallel_overlapping", 0x5eed0002, gen_parallel_overlapping);
}

static void test_exactly_parallel_disjoint_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("parallel_disjoint", 0x5eed0003, gen_parallel_disjoint);
}

static void test_antiparallel_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("antiparallel", 0x5eed0004, gen_antiparallel);
}

static void test_nearly_parallel_1e3_rad_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("nearly_parallel_1e-3", 0x5eed0005, gen_nearly_parallel_1e3);
}

static void test_nearly_parallel_1e6_rad_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("nearly_parallel_1e-6", 0x5eed0006, gen_nearly_parallel_1e6);
}

static void test_nearly_parallel_1e9_rad_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("nearly_parallel_1e-9", 0x5eed0007, gen_nearly_parallel_1e9);
}

static void test_nearly_parallel_1e12_rad_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("nearly_parallel_1e-12", 0x5eed0008, gen_nearly_parallel_1e12);
}

static void test_collinear_overlapping_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("collinear_overlapping", 0x5eed0009, gen_collinear_overlapping);
}

static void test_collinear_separated_capsules_are_within_bound(void **state)
{
    (void)state;
    run_family("collinear_separated", 0x5eed000a, gen_collinear_separated);
}

static void test_degenerate_first_axis_is_within_bound(void **state)
{
    (void)state;
    run_family("degenerate_first", 0x5eed000b, gen_degenerate_first);
}

static void test_degenerate_second_axis_is_within_bound(void **state)
{
    (void)state;
    run_family("degenerate_second", 0x5eed000c, gen_degenerate_second);
}

static void test_degenerate_both_axes_are_within_bound(void **state)
{
    (void)state;
    run_family("degenerate_both", 0x5eed000d, gen_degenerate_both);
}

static void test_crossing_axes_are_within_bound(void **state)
{
    (void)state;
    run_family("crossing_axes", 0x5eed000e, gen_crossing);
}

static void test_endpoint_to_endpoint_closest_is_within_bound(void **state)
{
    (void)state;
    run_family("endpoint_to_endpoint", 0x5eed000f, gen_endpoint);
}

static void test_t_configurations_are_within_bound(void **state)
{
    (void)state;
    run_family("t_configuration", 0x5eed0010, gen_t_configuration);
}

static void test_sub_millimetre_pairs_are_within_bound(void **state)
{
    (void)state;
    run_family("sub_millimetre", 0x5eed0011, gen_sub_millimetre);
}

static void test_far_from_origin_pairs_with_micrometre_gaps_are_within_bound(void **state)
{
    (void)state;
    run_family("far_from_origin", 0x5eed0012, gen_far_from_origin);
}

static void test_pairs_near_the_largest_double_are_within_bound_or_saturate(void **state)
{
    (void)state;
    run_family("near_dbl_max", 0x5eed0019, gen_near_dbl_max);
}

static void test_deep_penetration_is_within_bound(void **state)
{
    (void)state;
    run_family("deep_penetration", 0x5eed0013, gen_deep_penetration);
}

static void test_capsule_sphere_near_an_end_is_within_bound(void **state)
{
    (void)state;
    run_family("capsule_sphere_near_end", 0x5eed0014, gen_sphere_near_end);
}

static void test_capsule_sphere_beyond_an_end_is_within_bound(void **state)
{
    (void)state;
    run_family("capsule_sphere_beyond_end", 0x5eed0015, gen_sphere_beyond_end);
}

static void test_capsule_sphere_on_the_axis_is_within_bound(void **state)
{
    (void)state;
    run_family("capsule_sphere_on_axis", 0x5eed0016, gen_sphere_on_axis);
}

static void test_touching_spheres_are_within_bound(void **state)
{
    (void)state;
    run_family("spheres_touching", 0x5eed0017, gen_spheres_touching);
}

static void test_concentric_spheres_are_within_bound(void **state)
{
    (void)state;
    run_family("spheres_concentric", 0x5eed0018, gen_spheres_concentric);
}

/* ---- the reference itself ----------------------------------------------- */

static void test_reference_sqrt_is_accurate_to_the_last_bits(void **state)
{
    (void)state;
    assert_true(ref_sqrt(4) == 2);
    assert_true(ref_sqrt(0) == 0);
    assert_true(ref_sqrt(-1) == 0);
    assert_true(ref_sqrt((ref_real)0x1p-600) == (ref_real)0x1p-300);
    assert_true(ref_sqrt((ref_real)0x1p-1000 * (ref_real)0x1p-200) == (ref_real)0x1p-600);
    assert_true(ref_sqrt((ref_real)0x1p1000 * (ref_real)0x1p1000) == (ref_real)0x1p1000);
    test_rng r = {0x5eed00ff};
    for (int i = 0; i < 1000; i++) {
        ref_real x = (ref_real)rng_uniform(&r, 0, 8) * (ref_real)rng_uniform(&r, 1e-30, 1e30);
        ref_real y = ref_sqrt(x);
        /* |y^2 - x| <= 2 ulp(x) means y is within about an ulp of sqrt(x) */
        ref_real e = y * y - x;
        if (e < 0)
            e = -e;
#ifdef __SIZEOF_FLOAT128__
        assert_true(e <= x * (ref_real)0x1p-110);
#else
        assert_true(e <= x * (ref_real)0x1p-60);
#endif
    }
}

/* Hand-computed cases with exact answers. */
static void test_reference_matches_hand_computed_distances(void **state)
{
    (void)state;
    rp_shape s1 = mk_sphere(v3(0, 0, 0), 1), s2 = mk_sphere(v3(3, 4, 0), 1);
    assert_true(ref_shape_distance(&s1, &s2) == 3);
    /* parallel, offset (0, 3, 4) */
    assert_true(ref_segment_segment_distance(v3(0, 0, 0), v3(2, 0, 0), v3(1, 3, 4), v3(5, 3, 4)) ==
                5);
    /* crossing */
    rp_shape c1 = mk_capsule(v3(-1, 0, 0), v3(1, 0, 0), 0.5);
    rp_shape c2 = mk_capsule(v3(0, -1, 0), v3(0, 1, 0), 0.5);
    assert_true(ref_shape_distance(&c1, &c2) == -1);
    /* skew, interior closest points */
    assert_true(
        ref_segment_segment_distance(v3(-1, 0, 0), v3(1, 0, 0), v3(0, -1, 2), v3(0, 1, 2)) == 2);
    /* end point to end point: (1,0,0) and (4,4,0) */
    assert_true(ref_segment_segment_distance(v3(0, 0, 0), v3(1, 0, 0), v3(4, 4, 0), v3(4, 9, 0)) ==
                5);
    /* point to segment interior, and a degenerate segment */
    assert_true(ref_point_segment_distance(v3(1, 3, 4), v3(0, 0, 0), v3(2, 0, 0)) == 5);
    assert_true(ref_point_segment_distance(v3(1, 3, 4), v3(1, 0, 0), v3(1, 0, 0)) == 5);
    /* collinear overlapping */
    assert_true(ref_segment_segment_distance(v3(0, 0, 0), v3(2, 2, 2), v3(1, 1, 1), v3(5, 5, 5)) ==
                0);
    rp_shape big = mk_capsule(v3(-1e5, 0, 0), v3(1e5, 0, 0), 3);
    assert_true(ref_scale_S(&big, &s2) == 1e5);

    /* Axes 1e-12 rad apart that cross at an interior point (a generated
     * nearly_parallel_1e-12 pair).  Evaluating a*c - b*b literally, even in
     * __float128, misplaced the stationary point and returned 1.5e-14, 2476
     * eps*S too far; the exact value (rational arithmetic) is
     * 3.17701071427108412291e-17. */
    ref_real d = ref_segment_segment_distance(
        v3(-0x1.419de2694f5a4p-2, 0x1.e40a91367b96cp-1, -0x1.9cdd6a93d1332p-1),
        v3(0x1.005f935f062c4p-1, 0x1.048a01f5dbd7ep-2, -0x1.4fbc5271b43bap-1),
        v3(-0x1.cd2520787299cp-3, 0x1.bd70379f72593p-1, -0x1.9472de11966cep-1),
        v3(-0x1.20eb4f2f8cb78p-2, 0x1.d62d6d4b09701p-1, -0x1.99d7a2150fcbap-1));
    ref_real exact = (ref_real)0x1.25070b688b247p-55 + (ref_real)0x1.64f903054792ap-110;
    ref_real diff = d - exact;
    assert_true(fabs((double)diff) <= 0x1p-100);
}

/* The Cramer-rule reference against golden-section minimisation on samples
 * of every structured configuration. */
static void test_reference_agrees_with_golden_section_search(void **state)
{
    (void)state;
    test_rng r = {0x5eed0100};
    double worst = 0;
    int n = 0;
    for (int i = 0; i < 12 * 100; i++) {
        rp_vec3 pts[4];
        switch (i % 12) {
        case 0:
            core_general(&r, pts);
            break;
        case 1:
            core_parallel(&r, 1, 0, 0, pts);
            break;
        case 2:
            core_parallel(&r, 0, 1, 0, pts);
            break;
        case 3:
            core_nearly_parallel(&r, 1e-3, pts);
            break;
        case 4:
            core_nearly_parallel(&r, 1e-6, pts);
            break;
        case 5:
            core_nearly_parallel(&r, 1e-9, pts);
            break;
        case 6:
            core_nearly_parallel(&r, 1e-12, pts);
            break;
        case 7:
            core_parallel(&r, (int)(rng_next(&r) & 1), 0, 1, pts);
            break;
        case 8:
            core_crossing(&r, pts);
            break;
        case 9:
            core_endpoint(&r, pts);
            break;
        case 10:
            core_t(&r, pts);
            break;
        default:
            core_mixed(&r, pts);
            pts[3] = pts[2];
            break;
        }
        rp_shape a = mk_capsule(pts[0], pts[1], 0), b = mk_capsule(pts[2], pts[3], 0);
        double S = ref_scale_S(&a, &b);
        ref_real x = ref_segment_segment_distance(pts[0], pts[1], pts[2], pts[3]);
        ref_real y = ref_segment_segment_distance_golden(pts[0], pts[1], pts[2], pts[3]);
        ref_real z = ref_segment_segment_distance_golden(pts[2], pts[3], pts[0], pts[1]);
        ref_real e1 = x - y, e2 = x - z;
        double e = fmax(fabs((double)e1), fabs((double)e2)) / (EPS * S);
        if (e > worst)
            worst = e;
        if (!(e <= 0x1p-30)) {
            print_shape("a", &a);
            print_shape("b", &b);
            fail_msg("reference and golden-section search differ by %.3g eps*S", e);
        }
        n++;
    }
    printf("reference vs golden-section search: n=%d worst=%.3g eps*S\n", n, worst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_sqrt_is_accurate_to_the_last_bits),
        cmocka_unit_test(test_reference_matches_hand_computed_distances),
        cmocka_unit_test(test_reference_agrees_with_golden_section_search),
        cmocka_unit_test(test_random_general_position_pairs_are_within_bound),
        cmocka_unit_test(test_exactly_parallel_overlapping_capsules_are_within_bound),
        cmocka_unit_test(test_exactly_parallel_disjoint_capsules_are_within_bound),
        cmocka_unit_test(test_antiparallel_capsules_are_within_bound),
        cmocka_unit_test(test_nearly_parallel_1e3_rad_capsules_are_within_bound),
        cmocka_unit_test(test_nearly_parallel_1e6_rad_capsules_are_within_bound),
        cmocka_unit_test(test_nearly_parallel_1e9_rad_capsules_are_within_bound),
        cmocka_unit_test(test_nearly_parallel_1e12_rad_capsules_are_within_bound),
        cmocka_unit_test(test_collinear_overlapping_capsules_are_within_bound),
        cmocka_unit_test(test_collinear_separated_capsules_are_within_bound),
        cmocka_unit_test(test_degenerate_first_axis_is_within_bound),
        cmocka_unit_test(test_degenerate_second_axis_is_within_bound),
        cmocka_unit_test(test_degenerate_both_axes_are_within_bound),
        cmocka_unit_test(test_crossing_axes_are_within_bound),
        cmocka_unit_test(test_endpoint_to_endpoint_closest_is_within_bound),
        cmocka_unit_test(test_t_configurations_are_within_bound),
        cmocka_unit_test(test_sub_millimetre_pairs_are_within_bound),
        cmocka_unit_test(test_far_from_origin_pairs_with_micrometre_gaps_are_within_bound),
        cmocka_unit_test(test_deep_penetration_is_within_bound),
        cmocka_unit_test(test_capsule_sphere_near_an_end_is_within_bound),
        cmocka_unit_test(test_capsule_sphere_beyond_an_end_is_within_bound),
        cmocka_unit_test(test_capsule_sphere_on_the_axis_is_within_bound),
        cmocka_unit_test(test_touching_spheres_are_within_bound),
        cmocka_unit_test(test_concentric_spheres_are_within_bound),
        cmocka_unit_test(test_pairs_near_the_largest_double_are_within_bound_or_saturate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
