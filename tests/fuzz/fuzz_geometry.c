/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the distance kernels (include/repose/geometry.h) on any
 * shapes the constructors accept.  The input is read as doubles, 8 bytes
 * each (missing bytes are zero); a leading byte picks, per value, whether it
 * is taken as it is or mapped to a small, a unit-scale or a huge magnitude,
 * so that ordinary pairs, tiny ones and pairs near DBL_MAX all come up.
 *
 * Invariants, for a sphere, a capsule, a box and a half-space built from
 * the input (a shape whose constructor refuses it is skipped):
 *   - every signed distance is finite (never NaN, at most DBL_MAX);
 *   - each contact's distance equals the signed distance bit for bit, its
 *     normal is finite and of unit length within 1e-12;
 *   - a capsule whose ends coincide gives the sphere's bits exactly;
 *   - sphere and capsule pairs are symmetric bit for bit (the dispatcher);
 *   - box-box too gives finite distances and unit normals;
 *   - a sphere's distance to a box lies between its distance to the box's
 *     bounding ball and to its centre (both within rounding).
 */
#include <float.h>
#include <string.h>

#include "fuzz_util.h"
#include "repose/geometry.h"

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
    uint8_t modes[8];
    unsigned k;
} reader;

static double next(reader *r)
{
    uint8_t b[8] = {0};
    for (int i = 0; i < 8; i++)
        b[i] = r->at < r->n ? r->p[r->at++] : 0;
    double x;
    memcpy(&x, b, sizeof x);
    if (!isfinite(x))
        return x; /* the constructors must refuse it */
    unsigned mode = (r->modes[(r->k / 4) % 8] >> (2 * (r->k % 4))) & 3u;
    r->k++;
    /* 0: as read; 1: unit scale; 2: tiny; 3: huge (same sign). */
    double m = frexp(x, &(int){0});
    switch (mode) {
    case 1:
        return ldexp(m, 2);
    case 2:
        return ldexp(m, -1000 + (int)(r->k * 37 % 200));
    case 3:
        return ldexp(m, 1000 + (int)(r->k % 23));
    default:
        return x;
    }
}

static rp_vec3 next3(reader *r)
{
    rp_vec3 v;
    v.x = next(r);
    v.y = next(r);
    v.z = next(r);
    return v;
}

static void check_contact(rp_contact c, double d, const char *what)
{
    FUZZ_CHECK(isfinite(d) && fabs(d) <= DBL_MAX, "%s: distance %g", what, d);
    FUZZ_CHECK(memcmp(&c.distance, &d, sizeof d) == 0, "%s: contact %a, distance %a", what,
               c.distance, d);
    double n = sqrt(c.normal.x * c.normal.x + c.normal.y * c.normal.y + c.normal.z * c.normal.z);
    FUZZ_CHECK(fabs(n - 1.0) <= 1e-12, "%s: |normal| = %.17g", what, n);
}

static double maxabs(rp_vec3 v)
{
    return fmax(fabs(v.x), fmax(fabs(v.y), fabs(v.z)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size, 0, {0}, 0};
    for (int i = 0; i < 8; i++)
        r.modes[i] = r.at < r.n ? r.p[r.at++] : 0;
    rp_sphere s;
    rp_capsule k;
    rp_box b;
    rp_halfspace h;
    rp_vec3 c = next3(&r), a2 = next3(&r);
    double rad = fabs(next(&r));
    bool have_s = rp_sphere_new(c, rad, &s) == RP_OK;
    bool have_k = rp_capsule_new(c, a2, rad, &k) == RP_OK;
    rp_vec3 bc = next3(&r), he = next3(&r);
    he = (rp_vec3){fabs(he.x), fabs(he.y), fabs(he.z)};
    double qw = next(&r), qx = next(&r), qy = next(&r), qz = next(&r);
    bool have_b = rp_box_new(bc, he, qw, qx, qy, qz, &b) == RP_OK;
    rp_vec3 hn = next3(&r);
    bool have_h = rp_halfspace_new(hn, next(&r), &h) == RP_OK;

    if (have_s && have_b) {
        double d = rp_sphere_box_signed_distance(&s, &b);
        check_contact(rp_sphere_box_contact(&s, &b), d, "sphere-box");
        rp_capsule point = {s.center, s.center, s.radius};
        double dp = rp_capsule_box_signed_distance(&point, &b);
        FUZZ_CHECK(memcmp(&d, &dp, sizeof d) == 0, "sphere-box %a, point capsule %a", d, dp);
        /* Between the bounding ball and the centre, where nothing is huge. */
        double S =
            fmax(fmax(maxabs(s.center), maxabs(b.center)), fmax(maxabs(b.half_extents), s.radius));
        if (S < 1e150 && S > 1e-150) {
            rp_vec3 dc = {s.center.x - b.center.x, s.center.y - b.center.y,
                          s.center.z - b.center.z};
            double to_c = sqrt(dc.x * dc.x + dc.y * dc.y + dc.z * dc.z);
            double ball =
                sqrt(b.half_extents.x * b.half_extents.x + b.half_extents.y * b.half_extents.y +
                     b.half_extents.z * b.half_extents.z);
            double slack = 64 * DBL_EPSILON * S;
            FUZZ_CHECK(d <= to_c - s.radius + slack, "sphere-box %g above the centre's %g", d,
                       to_c - s.radius);
            FUZZ_CHECK(d >= to_c - ball - s.radius - slack, "sphere-box %g below the ball's %g", d,
                       to_c - ball - s.radius);
        }
    }
    if (have_k && have_b) {
        double d = rp_capsule_box_signed_distance(&k, &b);
        check_contact(rp_capsule_box_contact(&k, &b), d, "capsule-box");
    }
    if (have_s && have_h) {
        double d = rp_sphere_halfspace_signed_distance(&s, &h);
        check_contact(rp_sphere_halfspace_contact(&s, &h), d, "sphere-halfspace");
        rp_capsule point = {s.center, s.center, s.radius};
        double dp = rp_capsule_halfspace_signed_distance(&point, &h);
        FUZZ_CHECK(memcmp(&d, &dp, sizeof d) == 0, "sphere-halfspace %a, point capsule %a", d, dp);
    }
    if (have_k && have_h) {
        double d = rp_capsule_halfspace_signed_distance(&k, &h);
        check_contact(rp_capsule_halfspace_contact(&k, &h), d, "capsule-halfspace");
    }
    if (have_b && have_h) {
        double d = rp_box_halfspace_signed_distance(&b, &h);
        check_contact(rp_box_halfspace_contact(&b, &h), d, "box-halfspace");
    }
    if (have_b) {
        /* b against itself moved: a second box from the sphere's numbers. */
        rp_box b2;
        if (rp_box_new(c, a2, qx, qy, qz, qw, &b2) == RP_OK) {
            double d = rp_box_box_signed_distance(&b, &b2);
            check_contact(rp_box_box_contact(&b, &b2), d, "box-box");
        }
    }
    if (have_s && have_k) {
        rp_shape x = rp_shape_from_sphere(s), y = rp_shape_from_capsule(k);
        double d1 = rp_shape_signed_distance(&x, &y), d2 = rp_shape_signed_distance(&y, &x);
        FUZZ_CHECK(memcmp(&d1, &d2, sizeof d1) == 0, "sphere-capsule %a, capsule-sphere %a", d1,
                   d2);
        check_contact(rp_shape_contact(&x, &y), d1, "sphere-capsule");
    }
    return 0;
}
