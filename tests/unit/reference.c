/* SPDX-License-Identifier: MIT */
/*
 * High-precision reference distances; see reference.h.
 */
#include "reference.h"

#include <math.h>

typedef ref_real R;

typedef struct rv {
    R x, y, z;
} rv;

static rv rv_of(rp_vec3 p)
{
    rv v = {p.x, p.y, p.z};
    return v;
}

static rv rv_sub(rv a, rv b)
{
    rv v = {a.x - b.x, a.y - b.y, a.z - b.z};
    return v;
}

/* a + t*u */
static rv rv_axpy(rv a, R t, rv u)
{
    rv v = {a.x + t * u.x, a.y + t * u.y, a.z + t * u.z};
    return v;
}

static R rv_dot(rv a, rv b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

static rv rv_cross(rv a, rv b)
{
    rv v = {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
    return v;
}

static R rv_norm(rv a)
{
    return ref_sqrt(rv_dot(a, a));
}

static R r_min(R a, R b)
{
    return b < a ? b : a;
}

R ref_sqrt(R x)
{
    if (x != x)
        return x;
    if (!(x > 0))
        return 0;
    /* Bring x into the range of double so the seed is meaningful. */
    R scale = 1;
    while (x > (R)0x1p900) {
        x *= (R)0x1p-1000;
        scale *= (R)0x1p500;
    }
    while (x < (R)0x1p-900) {
        x *= (R)0x1p1000;
        scale *= (R)0x1p-500;
    }
    /* Each Newton step doubles the number of correct bits: 53 -> 106 -> 113. */
    R y = (R)sqrt((double)x);
    for (int i = 0; i < 3; i++)
        y = (y + x / y) * (R)0.5;
    return y * scale;
}

static R point_segment(rv p, rv a, rv b)
{
    rv u = rv_sub(b, a);
    R uu = rv_dot(u, u);
    R t = 0;
    if (uu > 0) {
        t = rv_dot(rv_sub(p, a), u) / uu;
        if (t < 0)
            t = 0;
        else if (t > 1)
            t = 1;
    }
    return rv_norm(rv_sub(p, rv_axpy(a, t, u)));
}

ref_real ref_point_segment_distance(rp_vec3 p, rp_vec3 a, rp_vec3 b)
{
    return point_segment(rv_of(p), rv_of(a), rv_of(b));
}

ref_real ref_segment_segment_distance(rp_vec3 p0, rp_vec3 p1, rp_vec3 q0, rp_vec3 q1)
{
    rv P0 = rv_of(p0), P1 = rv_of(p1), Q0 = rv_of(q0), Q1 = rv_of(q1);

    /* (b) the four endpoint-to-segment distances */
    R best = point_segment(P0, Q0, Q1);
    best = r_min(best, point_segment(P1, Q0, Q1));
    best = r_min(best, point_segment(Q0, P0, P1));
    best = r_min(best, point_segment(Q1, P0, P1));

    /* (a) the interior stationary point of |w + s*u - t*v|^2, by Cramer's
     * rule on the normal equations [a -b; b -c] (s, t) = (-d, -e) with
     * a = u.u, b = u.v, c = v.v, d = u.w, e = v.w:
     *     det = a*c - b*b,  s = (b*e - c*d) / det,  t = (a*e - b*d) / det.
     * Evaluated literally, a*c - b*b and the numerators cancel
     * catastrophically for nearly parallel axes (relative error ~2^-113 /
     * angle^2, i.e. ~1e-10 at 1e-12 rad, which misplaces the point and
     * overestimates the distance by ~1e-11).  So they are evaluated through
     * the Lagrange / Binet-Cauchy identities, which are exact algebra:
     *     det = |u x v|^2,  b*e - c*d = (u x v).(v x w),
     *     a*e - b*d = (u x v).(u x w).
     * Each cross-product component is one subtraction of two exact products
     * of double differences, so n = u x v carries a relative error of 2^-113
     * per component whatever the angle, and s, t come out with a relative
     * error ~2^-113 / angle instead. */
    rv u = rv_sub(P1, P0), v = rv_sub(Q1, Q0), w = rv_sub(P0, Q0);
    rv n = rv_cross(u, v);
    R det = rv_dot(n, n);
    if (det > 0) {
        R s = rv_dot(n, rv_cross(v, w)) / det;
        R t = rv_dot(n, rv_cross(u, w)) / det;
        if (s >= 0 && s <= 1 && t >= 0 && t <= 1)
            best = r_min(best, rv_norm(rv_sub(rv_axpy(P0, s, u), rv_axpy(Q0, t, v))));
    }
    return best;
}

ref_real ref_segment_segment_distance_golden(rp_vec3 p0, rp_vec3 p1, rp_vec3 q0, rp_vec3 q1)
{
    rv P0 = rv_of(p0), Q0 = rv_of(q0), Q1 = rv_of(q1);
    rv u = rv_sub(rv_of(p1), P0);
    const R invphi = (ref_sqrt(5) - 1) / 2;

    R lo = 0, hi = 1;
    R best = r_min(point_segment(P0, Q0, Q1), point_segment(rv_axpy(P0, 1, u), Q0, Q1));
    R x1 = hi - invphi * (hi - lo), x2 = lo + invphi * (hi - lo);
    R f1 = point_segment(rv_axpy(P0, x1, u), Q0, Q1);
    R f2 = point_segment(rv_axpy(P0, x2, u), Q0, Q1);
    for (int i = 0; i < 170; i++) {
        best = r_min(best, r_min(f1, f2));
        if (f1 < f2) {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - invphi * (hi - lo);
            f1 = point_segment(rv_axpy(P0, x1, u), Q0, Q1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + invphi * (hi - lo);
            f2 = point_segment(rv_axpy(P0, x2, u), Q0, Q1);
        }
    }
    return r_min(best, r_min(f1, f2));
}

static void core_of(const rp_shape *s, rp_vec3 *p0, rp_vec3 *p1, double *radius)
{
    if (s->kind == RP_SHAPE_SPHERE) {
        *p0 = s->sphere.center;
        *p1 = s->sphere.center;
        *radius = s->sphere.radius;
    } else {
        *p0 = s->capsule.a;
        *p1 = s->capsule.b;
        *radius = s->capsule.radius;
    }
}

ref_real ref_shape_core_distance(const rp_shape *a, const rp_shape *b)
{
    rp_vec3 p0, p1, q0, q1;
    double ra, rb;
    core_of(a, &p0, &p1, &ra);
    core_of(b, &q0, &q1, &rb);
    return ref_segment_segment_distance(p0, p1, q0, q1);
}

ref_real ref_shape_distance(const rp_shape *a, const rp_shape *b)
{
    rp_vec3 p0, p1, q0, q1;
    double ra, rb;
    core_of(a, &p0, &p1, &ra);
    core_of(b, &q0, &q1, &rb);
    return ref_segment_segment_distance(p0, p1, q0, q1) - (R)ra - (R)rb;
}

static double max_abs_vec(double m, rp_vec3 v)
{
    m = fmax(m, fabs(v.x));
    m = fmax(m, fabs(v.y));
    return fmax(m, fabs(v.z));
}

double ref_scale_S(const rp_shape *a, const rp_shape *b)
{
    double m = 0;
    const rp_shape *s[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        rp_vec3 p0, p1;
        double r;
        core_of(s[i], &p0, &p1, &r);
        m = max_abs_vec(m, p0);
        m = max_abs_vec(m, p1);
        m = fmax(m, fabs(r));
    }
    return m;
}

double ref_error_in_eps_S(double computed, ref_real reference, double S)
{
    if (computed != computed)
        return computed;
    R err = (R)computed - reference;
    if (err < 0)
        err = -err;
    if (S == 0)
        return err == 0 ? 0.0 : HUGE_VAL;
    return (double)(err / ((R)S * (R)0x1p-52));
}

void ref_split(ref_real x, double *hi, double *lo)
{
    *hi = (double)x;
    *lo = (double)(x - (R)*hi);
}
