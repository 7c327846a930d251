/* SPDX-License-Identifier: MIT */
/*
 * Signed distance kernels for spheres and capsules.
 *
 * Every pair reduces to the closest points between two "cores": a point (a
 * sphere's centre) or a segment (a capsule's axis).  The signed distance is
 * the core distance minus both radii.
 *
 * Segment-segment without tolerances.  With P(s) = p0 + s*u, Q(t) = q0 + t*v
 * and w = q0 - p0, the squared distance f(s,t) = |w + t*v - s*u|^2 is convex
 * on the unit square, so its minimum is either the interior stationary point
 * or lies on one of the four edges s=0, s=1, t=0, t=1, each of which is a
 * point-to-segment problem with a closed-form, well-conditioned answer.  We
 * evaluate every candidate as an actual pair of points and keep the closest,
 * so a poorly located candidate can only lose, never produce a too-small
 * distance.
 *
 * The interior candidate is where textbook code (Cramer's rule on the 2x2
 * normal equations with det = ac - b^2) loses half its digits on nearly
 * parallel segments: det cancels catastrophically.  We instead minimise the
 * distance from P(s) to the *line* through Q, which is |A - s*B| / |v| with
 * A = w x v and B = u x v, so s* = (A.B)/(B.B).  Cross products keep the
 * small angle in their magnitude instead of cancelling it away, and any
 * remaining error in s* moves the point along the shallow valley of f, where
 * the distance barely changes: the resulting error stays a few eps*S for any
 * angle (the accuracy tests cover angles down to 1e-12 rad).  When B is
 * exactly zero the segments are parallel (or one is a point) and an edge
 * candidate is always optimal, so the interior candidate is skipped with an
 * exact test, not an epsilon.  t for the interior candidate is recomputed as
 * the projection of P(s*) onto Q, which is well conditioned.
 *
 * Range.  The kernels work on coordinate differences and form products of up
 * to four of them (A.B).  While the largest difference lies in
 * [2^-200, 2^200] none of these can overflow or lose precision to
 * underflow.  Outside that range (coordinates near DBL_MAX, or whole pairs
 * smaller than 1e-60 m) the pair is rescaled by a power of two, which is
 * exact, solved, and the result scaled back.  The last step, core length
 * minus both radii, overflows when the core length or the sum of the radii
 * exceeds DBL_MAX (about 1.8e308 m) even though the difference may not:
 * those pairs subtract in the scaled units too (distance_wide).  A
 * signed distance or witness coordinate whose exact value lies beyond the
 * double range saturates to -DBL_MAX or +DBL_MAX, so every result is finite
 * and has the right sign.
 *
 * Symmetry.  rp_capsule_capsule_signed_distance(a, b) must equal (b, a) bit
 * for bit, so the pair is first put in a canonical order (by the bit patterns
 * of their fields) and contacts are mirrored afterwards.
 */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "repose/geometry.h"
#include "vec.h"

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline))
#else
#define ALWAYS_INLINE inline
#define NOINLINE
#endif

/* Which pair of cores is being solved. */
typedef enum core_kind {
    CORES_POINT_POINT,    /* sphere-sphere */
    CORES_SEGMENT_POINT,  /* capsule-sphere */
    CORES_SEGMENT_SEGMENT /* capsule-capsule */
} core_kind;

/* Result of a core solve.  The closest points are p0 + s*(p1-p0) on a and
 * q0 + t*(q1-q0) on b; d is the vector between them (a to b) in units of
 * 2^scale metres, d2 = |d|^2 in those units. */
typedef struct core_result {
    double s, t;
    rp_vec3 d;
    double d2;
    int scale;
} core_result;

/* Bounds of the range where the kernels need no rescaling (see top). */
#define SAFE_MAX 0x1p200
#define SAFE_MIN 0x1p-200

/* Branch-free selects.  The pair's case (which edge of the parameter
 * square, if any, holds the minimum) is random in the hot loops, and a
 * mispredicted branch costs more than the kernel's arithmetic; compilers
 * turn these ternaries into branches, so on x86-64 they are written with
 * SSE2's max, min, compare and mask operations, which compute exactly what
 * the portable ternaries do (a select or a max never rounds). */
#if defined(__SSE2__)
#include <emmintrin.h>
typedef __m128d mask;
static inline double clamp01(double x)
{
    /* max(x, 0) then min(., 1): maxsd returns its second operand for a
     * NaN x, so NaN (which valid input cannot produce) maps to 0. */
    __m128d m = _mm_max_sd(_mm_set_sd(x), _mm_setzero_pd());
    return _mm_cvtsd_f64(_mm_min_sd(m, _mm_set_sd(1.0)));
}
static inline mask le_mask(double a, double b)
{
    return _mm_cmple_sd(_mm_set_sd(a), _mm_set_sd(b));
}
static inline mask or_mask(mask a, mask b)
{
    return _mm_or_pd(a, b);
}
/* m ? a : b */
static inline double pick(mask m, double a, double b)
{
    return _mm_cvtsd_f64(_mm_or_pd(_mm_and_pd(m, _mm_set_sd(a)), _mm_andnot_pd(m, _mm_set_sd(b))));
}
/* sqrt of x >= 0: the instruction, without the test for a negative x that
 * libm's errno makes compilers put before it. */
static inline double sqrt_nn(double x)
{
    return _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(x)));
}
#else
typedef bool mask;
static inline double clamp01(double x)
{
    /* NaN cannot reach here from valid input, but would map to 0. */
    double m = x > 0.0 ? x : 0.0;
    return m < 1.0 ? m : 1.0;
}
static inline mask le_mask(double a, double b)
{
    return a <= b;
}
static inline mask or_mask(mask a, mask b)
{
    return a | b;
}
static inline double pick(mask m, double a, double b)
{
    return m ? a : b;
}
static inline double sqrt_nn(double x)
{
    return sqrt(x);
}
#endif

/* num/den clamped to [0,1]; 0 when den is 0 (a degenerate segment, where any
 * parameter gives the same point). */
static inline double ratio01(double num, double den)
{
    return den > 0.0 ? clamp01(num / den) : 0.0;
}

/* Solves for the closest points given w = q0 - p0, u = p1 - p0 and
 * v = q1 - q0, all within the safe range.  Fills s, t, d and d2. */
static ALWAYS_INLINE void solve(core_kind kind, rp_vec3 w, rp_vec3 u, rp_vec3 v, core_result *r)
{
    double s = 0.0, t = 0.0;
    if (kind == CORES_SEGMENT_POINT) {
        /* Project the point onto the segment: minimise |w - s*u|. */
        s = ratio01(v3_dot(w, u), v3_dot(u, u));
    } else if (kind == CORES_SEGMENT_SEGMENT) {
        double a = v3_dot(u, u), c = v3_dot(v, v);
        double wu = v3_dot(w, u), wv = v3_dot(w, v), uv = v3_dot(u, v);
        /* Reciprocals off the critical path (they run beside the division
         * for s).  A subnormal a or c gives an infinite reciprocal;
         * clamp01 below turns the resulting inf into 1 and NaN (0 * inf)
         * into 0, both valid parameters of a segment that is a point at
         * this scale.  (tc * ic is only used when 0 < tc < c, so it is
         * finite there.) */
        double ia = pick(le_mask(a, 0.0), 0.0, 1.0 / a);
        double ic = pick(le_mask(c, 0.0), 0.0, 1.0 / c);
        /* s: minimiser over [0,1] of the distance from P(s) to the line
         * through Q (see the top of the file).  B == 0 exactly when the
         * segments are parallel or one is a point; any s is then as good
         * as another for this step, and 0 is taken (the quotient, NaN
         * then, is not used). */
        rp_vec3 B = v3_cross(u, v);
        double bb = v3_dot(B, B);
        s = pick(le_mask(bb, 0.0), 0.0, clamp01(v3_dot(v3_cross(w, v), B) / bb));
        /* t: the closest point of Q's line to P(s), t*c = (s*u - w).v.
         * When it falls off the segment, the optimum lies on that edge of
         * the unit square (the squared distance is convex, and its minimum
         * over the strip s in [0,1] lies beyond the edge): fix t there and
         * minimise over s instead, as a point-to-segment projection.  The
         * cases are picked by selects, not branches: random pairs fall in
         * each at random. */
        double tc = s * uv - wv;
        mask lo = le_mask(tc, 0.0), hi = le_mask(c, tc);
        double s_edge = clamp01(pick(lo, wu, pick(hi, wu + uv, wu)) * ia);
        t = pick(lo, 0.0, pick(hi, 1.0, tc * ic));
        s = pick(or_mask(lo, hi), s_edge, s);
    }
    r->s = s;
    r->t = t;
    r->d = v3(w.x + t * v.x - s * u.x, w.y + t * v.y - s * u.y, w.z + t * v.z - s * u.z);
    r->d2 = v3_dot(r->d, r->d);
}

/* The rescaling path of closest_cores for pairs whose coordinate
 * differences m lie outside [SAFE_MIN, SAFE_MAX].  Kept out of line: it is
 * rare and would only bloat the inlined fast path. */
static NOINLINE core_result closest_cores_rescaled(core_kind kind, rp_vec3 p0, rp_vec3 p1,
                                                   rp_vec3 q0, rp_vec3 q1, double m)
{
    core_result r;
    rp_vec3 w = v3_sub(q0, p0), u = v3_sub(p1, p0), v = v3_sub(q1, q0);
    /* Huge coordinates: scale every coordinate down by a power of two
     * first, so that the differences cannot overflow. */
    int scale = 0;
    if (!(m <= SAFE_MAX)) {
        double big = max2(max3(maxabs3(p0), maxabs3(p1), maxabs3(q0)), maxabs3(q1));
        scale = ilogb(big);
        p0 = scale_vec(p0, -scale);
        p1 = scale_vec(p1, -scale);
        q0 = scale_vec(q0, -scale);
        q1 = scale_vec(q1, -scale);
        w = v3_sub(q0, p0), u = v3_sub(p1, p0), v = v3_sub(q1, q0);
        m = max3(maxabs3(w), maxabs3(u), maxabs3(v));
    }
    /* Tiny differences: scale them up. */
    if (m > 0.0 && m < SAFE_MIN) {
        int e = ilogb(m);
        w = scale_vec(w, -e), u = scale_vec(u, -e), v = scale_vec(v, -e);
        scale += e;
    }
    solve(kind, w, u, v, &r);
    r.scale = scale;
    return r;
}

/* Closest points between cores p0-p1 (a) and q0-q1 (b); p1 == p0 for a
 * point, likewise q.  Works for any finite coordinates. */
static ALWAYS_INLINE core_result closest_cores(core_kind kind, rp_vec3 p0, rp_vec3 p1, rp_vec3 q0,
                                               rp_vec3 q1)
{
    core_result r;
    rp_vec3 w = v3_sub(q0, p0), u = v3_sub(p1, p0), v = v3_sub(q1, q0);
    double m = max3(maxabs3(w), maxabs3(u), maxabs3(v));
    if (m <= SAFE_MAX && (m >= SAFE_MIN || m == 0.0)) {
        solve(kind, w, u, v, &r);
        r.scale = 0;
        return r;
    }
    return closest_cores_rescaled(kind, p0, p1, q0, q1, m);
}

/* Length of the core distance vector in metres. */
static inline double core_length(const core_result *r)
{
    double len = sqrt(r->d2);
    return r->scale ? ldexp(len, r->scale) : len;
}

/* Core distance minus both radii in units of 2^e metres, scaled back: for
 * pairs whose core length in metres or ra + rb overflows.  Both fit at that
 * scale (the core length is below 8 units of 2^scale, see
 * closest_cores_rescaled, and ra + rb below 2*DBL_MAX).  Only radii far below
 * eps*2^e lose bits to underflow, far inside the accuracy bound.  Never NaN;
 * a result beyond the double range saturates. */
static NOINLINE double distance_wide(double d2, int scale, double ra, double rb)
{
    int e = (scale > 0 ? scale : 0) + 1;
    double len = ldexp(sqrt(d2), scale - e);
    double d = len - (ldexp(ra, -e) + ldexp(rb, -e));
    return saturate(ldexp(d, e));
}

/* Core length minus both radii, in metres, for solved cores r.  The plain
 * subtraction is finite unless the core length or ra + rb overflowed
 * (inf - inf = NaN, or an infinity whose true value may be representable);
 * those pairs take distance_wide. */
static inline double finish_distance(const core_result *r, double ra, double rb)
{
    double d = core_length(r) - (ra + rb);
    if (fabs(d) <= DBL_MAX)
        return d;
    return distance_wide(r->d2, r->scale, ra, rb);
}

/* The rare path of signed_distance, out of line. */
static NOINLINE double signed_distance_rescaled(core_kind kind, const rp_vec3 *p0,
                                                const rp_vec3 *p1, const rp_vec3 *q0,
                                                const rp_vec3 *q1, double ra, double rb)
{
    core_result r = closest_cores(kind, *p0, *p1, *q0, *q1);
    return finish_distance(&r, ra, rb);
}

/* Signed distance between cores p0-p1 (radius ra) and q0-q1 (radius rb), in
 * metres: closest_cores and finish_distance, with the fast path's test
 * extended to the radii, so that the common case (differences in the safe
 * range, ra + rb finite) needs no test after the subtraction: its core
 * length is finite, and so is the difference. */
static ALWAYS_INLINE double signed_distance(core_kind kind, const rp_vec3 *p0, const rp_vec3 *p1,
                                            const rp_vec3 *q0, const rp_vec3 *q1, double ra,
                                            double rb)
{
    rp_vec3 w = v3_sub(*q0, *p0), u = v3_sub(*p1, *p0), v = v3_sub(*q1, *q0);
    double m = max3(maxabs3(w), maxabs3(u), maxabs3(v));
    double rr = ra + rb;
    if (m <= SAFE_MAX && (m >= SAFE_MIN || m == 0.0) && rr <= DBL_MAX) {
        core_result r;
        solve(kind, w, u, v, &r);
        return sqrt_nn(r.d2) - rr;
    }
    return signed_distance_rescaled(kind, p0, p1, q0, q1, ra, rb);
}

/* ---- canonical order for bitwise symmetry ------------------------------ */

/* Total order on capsules; true when a must be swapped with b to put the
 * pair in canonical order.  The first field almost always decides, so it is
 * compared inline and the rest out of line. */
static NOINLINE bool capsule_after_rest(const rp_capsule *a, const rp_capsule *b)
{
    const double fa[6] = {a->a.y, a->a.z, a->b.x, a->b.y, a->b.z, a->radius};
    const double fb[6] = {b->a.y, b->a.z, b->b.x, b->b.y, b->b.z, b->radius};
    return fields_after(fa, fb, 6);
}

static inline bool capsule_after(const rp_capsule *a, const rp_capsule *b)
{
    uint64_t x = bits_of(a->a.x), y = bits_of(b->a.x);
    if (x != y)
        return x > y;
    return capsule_after_rest(a, b);
}

/* The same for spheres. */
static bool sphere_after(const rp_sphere *a, const rp_sphere *b)
{
    const double fa[4] = {a->center.x, a->center.y, a->center.z, a->radius};
    const double fb[4] = {b->center.x, b->center.y, b->center.z, b->radius};
    return fields_after(fa, fb, 4);
}

/* ---- signed distance --------------------------------------------------- */

double rp_sphere_sphere_signed_distance(const rp_sphere *a, const rp_sphere *b)
{
    return signed_distance(CORES_POINT_POINT, &a->center, &a->center, &b->center, &b->center,
                           a->radius, b->radius);
}

double rp_capsule_sphere_signed_distance(const rp_capsule *a, const rp_sphere *b)
{
    return signed_distance(CORES_SEGMENT_POINT, &a->a, &a->b, &b->center, &b->center, a->radius,
                           b->radius);
}

double rp_capsule_capsule_signed_distance(const rp_capsule *a, const rp_capsule *b)
{
    /* Selects rather than branches: the order of random pairs is random. */
    bool swap = capsule_after(a, b);
    const rp_capsule *x = swap ? b : a, *y = swap ? a : b;
    return signed_distance(CORES_SEGMENT_SEGMENT, &x->a, &x->b, &y->a, &y->b, x->radius, y->radius);
}

double rp_shape_signed_distance(const rp_shape *a, const rp_shape *b)
{
    /* Spheres and capsules (robot links against most obstacles) inline;
     * boxes and half-spaces in dispatch.c. */
    if (a->kind > RP_SHAPE_CAPSULE || b->kind > RP_SHAPE_CAPSULE)
        return rp_solid_signed_distance_(a, b);
    if (a->kind == RP_SHAPE_CAPSULE) {
        if (b->kind == RP_SHAPE_CAPSULE)
            return rp_capsule_capsule_signed_distance(&a->capsule, &b->capsule);
        return rp_capsule_sphere_signed_distance(&a->capsule, &b->sphere);
    }
    if (b->kind == RP_SHAPE_CAPSULE)
        return rp_capsule_sphere_signed_distance(&b->capsule, &a->sphere);
    return rp_sphere_sphere_signed_distance(&a->sphere, &b->sphere);
}

bool rp_shapes_violate_margin(const rp_shape *a, const rp_shape *b, double margin)
{
    return rp_shape_signed_distance(a, b) < margin;
}

/* ---- contacts ----------------------------------------------------------- */

/* A fixed unit perpendicular to a non-zero direction: the cross product with
 * the coordinate axis along which the direction has its smallest component
 * (the first such axis on ties). */
static rp_vec3 perpendicular(rp_vec3 dir)
{
    double ax = fabs(dir.x), ay = fabs(dir.y), az = fabs(dir.z);
    rp_vec3 e;
    if (ax <= ay && ax <= az)
        e = v3(1, 0, 0);
    else if (ay <= az)
        e = v3(0, 1, 0);
    else
        e = v3(0, 0, 1);
    return v3_unit(v3_cross(dir, e));
}

/* Normal from a to b for a solved pair.  When the core points coincide the
 * direction is chosen from the axes: their cross product when they are not
 * parallel, a fixed perpendicular to one axis otherwise, +z for two points.
 * u and v are the axis directions (zero for points). */
static rp_vec3 contact_normal(const core_result *r, rp_vec3 u, rp_vec3 v)
{
    if (v3_maxabs(r->d) > 0.0)
        return v3_unit(r->d);
    /* Bring the axes to unit scale before crossing them, so the product
     * neither overflows nor underflows. */
    double m = fmax(v3_maxabs(u), v3_maxabs(v));
    if (m == 0.0)
        return v3(0, 0, 1);
    u = v3(u.x / m, u.y / m, u.z / m);
    v = v3(v.x / m, v.y / m, v.z / m);
    rp_vec3 n = v3_cross(u, v);
    if (v3_maxabs(n) > 0.0)
        return v3_unit(n);
    return perpendicular(v3_maxabs(u) > 0.0 ? u : v);
}

/* Builds the contact for cores p0-p1 (radius ra) and q0-q1 (radius rb). */
static rp_contact make_contact(core_kind kind, rp_vec3 p0, rp_vec3 p1, double ra, rp_vec3 q0,
                               rp_vec3 q1, double rb)
{
    core_result r = closest_cores(kind, p0, p1, q0, q1);
    rp_contact c;
    c.distance = finish_distance(&r, ra, rb);
    rp_vec3 u = v3_sub(p1, p0), v = v3_sub(q1, q0);
    if (!v3_isfinite(u) || !v3_isfinite(v)) {
        /* Axes longer than DBL_MAX: only their directions matter here. */
        u = v3_sub(v3_scale(p1, 0.5), v3_scale(p0, 0.5));
        v = v3_sub(v3_scale(q1, 0.5), v3_scale(q0, 0.5));
    }
    c.normal = contact_normal(&r, u, v);
    rp_vec3 ca = v3_lerp(p0, p1, r.s), cb = v3_lerp(q0, q1, r.t);
    c.point_a = v3_madd(ca, c.normal, ra);
    c.point_b = v3_madd(cb, c.normal, -rb);
    /* A finite point plus a radius times a unit vector overflows only when
     * the witness lies beyond the double range; it saturates, like the
     * distance (never NaN: no term is infinite).  One test on the sum of
     * the coordinates catches any infinity; when finite coordinates merely
     * sum past DBL_MAX, saturating leaves them as they are. */
    double sum = c.point_a.x + c.point_a.y + c.point_a.z + c.point_b.x + c.point_b.y + c.point_b.z;
    if (!(fabs(sum) <= DBL_MAX)) {
        c.point_a = v3(saturate(c.point_a.x), saturate(c.point_a.y), saturate(c.point_a.z));
        c.point_b = v3(saturate(c.point_b.x), saturate(c.point_b.y), saturate(c.point_b.z));
    }
    return c;
}

rp_contact rp_shape_contact(const rp_shape *a, const rp_shape *b)
{
    if (a->kind > RP_SHAPE_CAPSULE || b->kind > RP_SHAPE_CAPSULE)
        return rp_solid_contact_(a, b);
    if (a->kind == RP_SHAPE_CAPSULE && b->kind == RP_SHAPE_CAPSULE) {
        const rp_capsule *x = &a->capsule, *y = &b->capsule;
        bool swap = capsule_after(x, y);
        if (swap) {
            const rp_capsule *tmp = x;
            x = y;
            y = tmp;
        }
        rp_contact c =
            make_contact(CORES_SEGMENT_SEGMENT, x->a, x->b, x->radius, y->a, y->b, y->radius);
        return swap ? mirror(c) : c;
    }
    if (a->kind == RP_SHAPE_CAPSULE) {
        const rp_capsule *x = &a->capsule;
        const rp_sphere *y = &b->sphere;
        return make_contact(CORES_SEGMENT_POINT, x->a, x->b, x->radius, y->center, y->center,
                            y->radius);
    }
    if (b->kind == RP_SHAPE_CAPSULE)
        return mirror(rp_shape_contact(b, a));
    /* Sphere-sphere distances are symmetric as computed, but signed zeros in
     * the normal are not: canonical order plus mirroring makes them so. */
    const rp_sphere *x = &a->sphere, *y = &b->sphere;
    bool swap = sphere_after(x, y);
    if (swap) {
        const rp_sphere *tmp = x;
        x = y;
        y = tmp;
    }
    rp_contact c = make_contact(CORES_POINT_POINT, x->center, x->center, x->radius, y->center,
                                y->center, y->radius);
    return swap ? mirror(c) : c;
}
