/* SPDX-License-Identifier: MIT */
/*
 * Boxes and half-spaces against spheres and capsules: exact signed
 * distance with witness points and normals (include/repose/geometry.h).
 *
 * Every pair reduces to a core (a sphere's centre: a point; a capsule's
 * axis: a segment) against the solid, minus the sphere's or capsule's
 * radius.
 *
 * Half-space {x : n.x <= d}.  The signed distance of a core is the height
 * of its lowest point, min(n.p0, n.p1) - d: a gap above, minus the depth
 * below, and the depth is the shortest separating translation (along n).
 *
 * Box, separated.  In the box's frame (u = R^T (p - c)) the squared
 * distance of the segment point x(t) = x0 + t*e to the box [-h, h] is
 * f(t) = sum_i max(|x_i(t)| - h_i, 0)^2: convex and piecewise quadratic,
 * with its pieces joined where some x_i(t) crosses +-h_i (at most six
 * breakpoints).  On each piece f is one quadratic, whose stationary point
 * clamped to the piece is that piece's minimum.  Every candidate (the ends,
 * the breakpoints, the pieces' minima) is evaluated as an actual point of
 * the segment against its clamp into the box, and the closest wins; so a
 * candidate placed a little off by rounding can only lose, never report a
 * distance below the true one, and where f is flat (a segment parallel to a
 * face) any candidate is as good.
 *
 * Box, intersecting (f = 0 at some t).  The depth is the shortest
 * translation that separates the segment from the box: the smallest
 * overlap over the separating-axis candidates, which for a segment and a
 * box are the three face normals and the three products e x axis_i (the
 * faces of their Minkowski difference).  The products are exact: e x axis_i
 * only permutes and negates components of e.  Along a face normal the
 * overlap is min(h_i - lo, hi + h_i) for the segment's extent [lo, hi];
 * along a product axis (perpendicular to e, so the segment projects to one
 * value s) it is r - |s| with r the box's half width along that axis.
 *
 * The box's rotation is the matrix rp_box_axes computes from its unit
 * quaternion; the kernels work with exactly that matrix, so the box they
 * measure is the one every other function of this library sees.
 *
 * Range: inputs whose largest magnitude lies outside [2^-400, 2^400] are
 * scaled by a power of two (exact) before the solve and the result scaled
 * back, saturating to +-DBL_MAX as the sphere and capsule kernels do.
 */
#include <float.h>
#include <stdbool.h>

#include "repose/geometry.h"
#include "box_int.h"
#include "vec.h"

#define BOX_SAFE_MAX 0x1p400
#define BOX_SAFE_MIN 0x1p-400

/* The power of two a pair whose largest magnitude is m is solved at: 0
 * inside the safe range, else m's exponent. */
static inline int solve_scale(double m)
{
    return m <= BOX_SAFE_MAX && (m >= BOX_SAFE_MIN || m == 0.0) ? 0 : ilogb(m);
}

/* rp_box_axes, inline for the kernels. */
static inline void box_axes(const rp_box *b, rp_vec3 axes[3]);

void rp_box_axes(const rp_box *b, rp_vec3 axes[3])
{
    box_axes(b, axes);
}

static inline void box_axes(const rp_box *b, rp_vec3 axes[3])
{
    double w = b->rotation.w, x = b->rotation.x, y = b->rotation.y, z = b->rotation.z;
    double xx = x * x, yy = y * y, zz = z * z;
    double xy = x * y, xz = x * z, yz = y * z, wx = w * x, wy = w * y, wz = w * z;
    /* The columns of R(q): world = center + sum_i u_i * axes[i]. */
    axes[0] = v3(1.0 - 2.0 * (yy + zz), 2.0 * (xy + wz), 2.0 * (xz - wy));
    axes[1] = v3(2.0 * (xy - wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz + wx));
    axes[2] = v3(2.0 * (xz + wy), 2.0 * (yz - wx), 1.0 - 2.0 * (xx + yy));
}

static inline double comp(rp_vec3 v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : v.z;
}

static inline void set_comp(rp_vec3 *v, int i, double x)
{
    if (i == 0)
        v->x = x;
    else if (i == 1)
        v->y = x;
    else
        v->z = x;
}

/* The point of the segment x0 + t*e at t, from the nearer end (so t = 1 is
 * x1 exactly). */
static inline rp_vec3 seg_at(rp_vec3 x0, rp_vec3 x1, rp_vec3 e, double t)
{
    return t <= 0.5 ? v3_madd(x0, e, t) : v3_madd(x1, e, -(1.0 - t));
}

/* x clamped to [-h, h], and the squared distance it moved. */
static inline double clamp1(double x, double h, double *q)
{
    *q = x > h ? h : x < -h ? -h : x;
    return (x - *q) * (x - *q);
}

/* The box point nearest x, and |x - q|^2. */
static inline double clamp_box(rp_vec3 x, rp_vec3 h, rp_vec3 *q)
{
    double f = clamp1(x.x, h.x, &q->x);
    f += clamp1(x.y, h.y, &q->y);
    f += clamp1(x.z, h.z, &q->z);
    return f;
}

/* What the segment-box solve found, in the box's frame. */
typedef struct seg_box {
    double f;     /* squared distance (0: they meet) */
    double t;     /* the segment's closest parameter */
    rp_vec3 x, q; /* the segment's and the box's closest points */
    double depth; /* f == 0: the shortest separating translation */
    rp_vec3 axis; /* f == 0: unit direction in which the segment leaves */
} seg_box;

static void try_t(rp_vec3 x0, rp_vec3 x1, rp_vec3 e, rp_vec3 h, double t, seg_box *best)
{
    rp_vec3 x = seg_at(x0, x1, e, t), q;
    double f = clamp_box(x, h, &q);
    if (f < best->f) {
        best->f = f;
        best->t = t;
        best->x = x;
        best->q = q;
    }
}

static void sort_small(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double s = v[j];
            v[j] = v[j - 1];
            v[j - 1] = s;
        }
}

/* The separating translation of a segment meeting the box (see the top). */
static void penetration(rp_vec3 x0, rp_vec3 x1, rp_vec3 e, rp_vec3 h, seg_box *r)
{
    r->depth = DBL_MAX;
    for (int i = 0; i < 3; i++) {
        double a = comp(x0, i), b = comp(x1, i), hi = comp(h, i);
        double lo = a < b ? a : b, up = a < b ? b : a;
        double plus = hi - lo, minus = up + hi;
        double d = plus <= minus ? plus : minus;
        if (d < r->depth) {
            r->depth = d;
            r->axis = v3(0, 0, 0);
            set_comp(&r->axis, i, plus <= minus ? 1.0 : -1.0);
        }
    }
    for (int i = 0; i < 3; i++) {
        /* e x axis_i, exact. */
        rp_vec3 u = i == 0 ? v3(0.0, e.z, -e.y) : i == 1 ? v3(-e.z, 0.0, e.x) : v3(e.y, -e.x, 0.0);
        if (!(maxabs3(u) > 0.0))
            continue;
        u = v3_unit(u);
        double s = 0.5 * (v3_dot(x0, u) + v3_dot(x1, u));
        double rr = h.x * fabs(u.x) + h.y * fabs(u.y) + h.z * fabs(u.z);
        double d = rr - fabs(s);
        if (d < r->depth) {
            r->depth = d;
            r->axis = s >= 0.0 ? u : v3_neg(u);
        }
    }
    if (r->depth < 0.0)
        r->depth = 0.0; /* touching within rounding */
}

/* A point: its clamp, or inside, the nearest face. */
static seg_box solve_point_box(rp_vec3 x, rp_vec3 h)
{
    seg_box r = {.t = 0.0, .x = x};
    r.f = clamp_box(x, h, &r.q);
    if (r.f > 0.0)
        return r;
    r.depth = DBL_MAX;
    for (int i = 0; i < 3; i++) {
        double xi = comp(x, i), d = comp(h, i) - fabs(xi);
        if (d < r.depth) {
            r.depth = d;
            r.axis = v3(0, 0, 0);
            set_comp(&r.axis, i, xi >= 0.0 ? 1.0 : -1.0);
        }
    }
    return r;
}

/* Half the derivative of |x(t) - box|^2 along the segment: the sum over
 * the axes of e_i (x_i(t) - clamp(x_i(t))).  The squared distance is
 * convex and continuously differentiable in t (each axis adds the square
 * of a distance to an interval), so its minimum is where this changes
 * sign. */
static inline double slope_at(rp_vec3 x0, rp_vec3 x1, rp_vec3 e, rp_vec3 h, double t)
{
    rp_vec3 x = seg_at(x0, x1, e, t), q;
    (void)clamp_box(x, h, &q);
    return e.x * (x.x - q.x) + e.y * (x.y - q.y) + e.z * (x.z - q.z);
}

/* Closest points of segment x0-x1 and the box [-h, h] (its frame). */
static seg_box solve_seg_box(rp_vec3 x0, rp_vec3 x1, rp_vec3 h)
{
    seg_box best = {.f = DBL_MAX * 2.0};
    rp_vec3 e = v3_sub(x1, x0);
    /* Where the segment crosses each slab's planes: whether it meets the
     * box decides the branch, by clipping the segment to the three slabs
     * (the search below only ever approaches the box's surface, where
     * rounding may leave its points a hair outside: a segment through a
     * thin box would then look separated by 1e-16), and the crossings
     * inside (0, 1) are where the squared distance's pieces meet. */
    double cross[3][2];
    bool moves[3];
    double lo = 0.0, up = 1.0;
    bool meets = true;
    for (int i = 0; i < 3; i++) {
        double ei = comp(e, i), hi = comp(h, i), xi = comp(x0, i);
        moves[i] = ei != 0.0;
        if (!moves[i]) {
            meets = meets && fabs(xi) <= hi;
            continue;
        }
        double ta = (-hi - xi) / ei, tb = (hi - xi) / ei;
        cross[i][0] = tb;
        cross[i][1] = ta;
        if (ta > tb) {
            double sw = ta;
            ta = tb;
            tb = sw;
        }
        lo = ta > lo ? ta : lo;
        up = tb < up ? tb : up;
    }
    meets = meets && lo <= up;
    if (meets) {
        best.f = 0.0;
        best.t = 0.5 * (lo + up);
        best.x = seg_at(x0, x1, e, best.t);
        clamp_box(best.x, h, &best.q);
        penetration(x0, x1, e, h, &best);
        return best;
    }
    double ts[8];
    int n = 0;
    ts[n++] = 0.0;
    ts[n++] = 1.0;
    for (int i = 0; i < 3; i++) {
        if (!moves[i])
            continue;
        for (int j = 0; j < 2; j++)
            if (cross[i][j] > 0.0 && cross[i][j] < 1.0)
                ts[n++] = cross[i][j];
    }
    sort_small(ts, n);
    /* The first breakpoint where the slope is no longer negative: the
     * minimum lies at it or in the piece before it, where the squared
     * distance is one quadratic (its axes outside the box are those of the
     * piece's midpoint).  Both ends of that piece and its stationary point
     * are tried, so a slope whose sign rounding flipped at a breakpoint
     * (where it is then about zero) costs nothing: the breakpoint itself is
     * a candidate. */
    int k = 0;
    while (k < n - 1 && slope_at(x0, x1, e, h, ts[k]) < 0.0)
        k++;
    try_t(x0, x1, e, h, ts[k], &best);
    if (k > 0 && best.f > 0.0) {
        try_t(x0, x1, e, h, ts[k - 1], &best);
        if (ts[k] > ts[k - 1]) {
            rp_vec3 xm = seg_at(x0, x1, e, 0.5 * (ts[k - 1] + ts[k]));
            double a = 0.0, b = 0.0;
            for (int i = 0; i < 3; i++) {
                double ei = comp(e, i), hi = comp(h, i), xi = comp(x0, i), mi = comp(xm, i);
                if (mi > hi) {
                    a += ei * ei;
                    b += ei * (xi - hi);
                } else if (mi < -hi) {
                    a += ei * ei;
                    b += ei * (xi + hi);
                }
            }
            if (a > 0.0) {
                double t = -b / a;
                t = t < ts[k - 1] ? ts[k - 1] : t > ts[k] ? ts[k] : t;
                try_t(x0, x1, e, h, t, &best);
            }
        }
    }
    if (best.f == 0.0)
        penetration(x0, x1, e, h, &best);
    return best;
}

/* p - c in the frame of axes. */
static rp_vec3 to_frame(const rp_vec3 axes[3], rp_vec3 p, rp_vec3 c)
{
    rp_vec3 d = v3_sub(p, c);
    return v3(v3_dot(axes[0], d), v3_dot(axes[1], d), v3_dot(axes[2], d));
}

/* The power of two the pair is solved at (0 inside the safe range). */
static int pair_scale(const rp_box *b, rp_vec3 p0, rp_vec3 p1, double r)
{
    double m = max2(max2(maxabs3(p0), maxabs3(p1)),
                    max2(max2(maxabs3(b->center), maxabs3(b->half_extents)), r));
    return solve_scale(m);
}

/* Solves core p0-p1 (radius r) against box b: the result in the box frame
 * at 2^scale metres, and the signed distance in metres. */
static inline double core_box_ax(const rp_box *b, rp_vec3 p0, rp_vec3 p1, double r, seg_box *out,
                                 const rp_vec3 axes[3], int *scale_out)
{
    int scale = pair_scale(b, p0, p1, r);
    rp_vec3 h = b->half_extents, c = b->center;
    double rs = r;
    if (scale) { /* ldexp per value: 2^-scale itself may overflow (denormal inputs) */
        h = scale_vec(h, -scale), c = scale_vec(c, -scale), p0 = scale_vec(p0, -scale);
        p1 = scale_vec(p1, -scale);
        rs = ldexp(r, -scale);
    }
    rp_vec3 x0 = to_frame(axes, p0, c);
    seg_box s = p0.x == p1.x && p0.y == p1.y && p0.z == p1.z
                    ? solve_point_box(x0, h)
                    : solve_seg_box(x0, to_frame(axes, p1, c), h);
    double d = s.f > 0.0 ? sqrt(s.f) - rs : -s.depth - rs;
    *out = s;
    *scale_out = scale;
    return saturate(scale ? ldexp(d, scale) : d);
}

static double core_box(const rp_box *b, rp_vec3 p0, rp_vec3 p1, double r, seg_box *out,
                       rp_vec3 axes[3], int *scale_out)
{
    box_axes(b, axes);
    return core_box_ax(b, p0, p1, r, out, axes, scale_out);
}

double rp_sphere_box_ax_(const rp_sphere *a, const rp_box *b, const rp_vec3 ax[3])
{
    /* The common case first, as core_box computes it (the same operations,
     * so the same bits): in range, and the centre outside the box. */
    if (pair_scale(b, a->center, a->center, a->radius) == 0) {
        rp_vec3 q;
        double f = clamp_box(to_frame(ax, a->center, b->center), b->half_extents, &q);
        if (f > 0.0)
            return saturate(sqrt(f) - a->radius);
    }
    seg_box s;
    int scale;
    return core_box_ax(b, a->center, a->center, a->radius, &s, ax, &scale);
}

double rp_sphere_box_signed_distance(const rp_sphere *a, const rp_box *b)
{
    rp_vec3 ax[3];
    box_axes(b, ax);
    return rp_sphere_box_ax_(a, b, ax);
}

double rp_capsule_box_ax_(const rp_capsule *a, const rp_box *b, const rp_vec3 ax[3])
{
    seg_box s;
    int scale;
    return core_box_ax(b, a->a, a->b, a->radius, &s, ax, &scale);
}

double rp_capsule_box_signed_distance(const rp_capsule *a, const rp_box *b)
{
    rp_vec3 ax[3];
    box_axes(b, ax);
    return rp_capsule_box_ax_(a, b, ax);
}

/* A box-frame vector in world coordinates. */
static rp_vec3 to_world(const rp_vec3 axes[3], rp_vec3 u)
{
    return v3(axes[0].x * u.x + axes[1].x * u.y + axes[2].x * u.z,
              axes[0].y * u.x + axes[1].y * u.y + axes[2].y * u.z,
              axes[0].z * u.x + axes[1].z * u.y + axes[2].z * u.z);
}

static rp_vec3 unit_or(rp_vec3 v, rp_vec3 fallback)
{
    double m = maxabs3(v);
    return m > 0.0 && m <= DBL_MAX ? v3_unit(v) : fallback;
}

static rp_contact core_box_contact(const rp_box *b, rp_vec3 p0, rp_vec3 p1, double r)
{
    seg_box s;
    rp_vec3 axes[3];
    int scale;
    rp_contact c;
    c.distance = core_box(b, p0, p1, r, &s, axes, &scale);
    /* From the core (a) towards the box (b). */
    rp_vec3 n_local = s.f > 0.0 ? v3_sub(s.q, s.x) : v3_neg(s.axis);
    c.normal = unit_or(to_world(axes, n_local), v3(0, 0, 1));
    rp_vec3 core;
    if (s.f > 0.0) {
        rp_vec3 e = v3_sub(p1, p0);
        /* (an axis longer than DBL_MAX: blend the ends instead) */
        core = v3_isfinite(e) ? seg_at(p0, p1, e, s.t) : v3_lerp(p0, p1, s.t);
    } else {
        /* The core's deepest point along the normal. */
        core = v3_dot(c.normal, p0) >= v3_dot(c.normal, p1) ? p0 : p1;
    }
    c.point_a = saturate3(v3_madd(core, c.normal, r));
    c.point_b = saturate3(v3_madd(c.point_a, c.normal, c.distance));
    return c;
}

rp_contact rp_sphere_box_contact(const rp_sphere *a, const rp_box *b)
{
    return core_box_contact(b, a->center, a->center, a->radius);
}

rp_contact rp_capsule_box_contact(const rp_capsule *a, const rp_box *b)
{
    return core_box_contact(b, a->a, a->b, a->radius);
}

/* ---- half-spaces ----------------------------------------------------------------- */

/* The height above the plane of core p0-p1, minus r. */
static double core_halfspace(const rp_halfspace *h, rp_vec3 p0, rp_vec3 p1, double r, rp_vec3 *low)
{
    double m = max2(max2(maxabs3(p0), maxabs3(p1)), max2(fabs(h->offset), r));
    int scale = solve_scale(m);
    rp_vec3 q0 = scale ? scale_vec(p0, -scale) : p0, q1 = scale ? scale_vec(p1, -scale) : p1;
    double h0 = v3_dot(h->normal, q0), h1 = v3_dot(h->normal, q1);
    *low = h0 <= h1 ? p0 : p1;
    double d = (h0 <= h1 ? h0 : h1) - (scale ? ldexp(h->offset, -scale) : h->offset) -
               (scale ? ldexp(r, -scale) : r);
    return saturate(scale ? ldexp(d, scale) : d);
}

double rp_sphere_halfspace_signed_distance(const rp_sphere *a, const rp_halfspace *b)
{
    rp_vec3 low;
    return core_halfspace(b, a->center, a->center, a->radius, &low);
}

double rp_capsule_halfspace_signed_distance(const rp_capsule *a, const rp_halfspace *b)
{
    rp_vec3 low;
    return core_halfspace(b, a->a, a->b, a->radius, &low);
}

static rp_contact core_halfspace_contact(const rp_halfspace *h, rp_vec3 p0, rp_vec3 p1, double r)
{
    rp_contact c;
    rp_vec3 low;
    c.distance = core_halfspace(h, p0, p1, r, &low);
    c.normal = v3_neg(h->normal); /* from the shape down into the solid */
    c.point_a = saturate3(v3_madd(low, c.normal, r));
    c.point_b = saturate3(v3_madd(c.point_a, c.normal, c.distance));
    return c;
}

rp_contact rp_sphere_halfspace_contact(const rp_sphere *a, const rp_halfspace *b)
{
    return core_halfspace_contact(b, a->center, a->center, a->radius);
}

rp_contact rp_capsule_halfspace_contact(const rp_capsule *a, const rp_halfspace *b)
{
    return core_halfspace_contact(b, a->a, a->b, a->radius);
}

/* A box's lowest point above the plane: n.c - sum_i h_i |n.axis_i| - d,
 * and the vertex that has it. */
static double box_halfspace(const rp_box *b, const rp_halfspace *h, rp_vec3 *vertex)
{
    rp_vec3 axes[3];
    box_axes(b, axes);
    rp_vec3 c = b->center, e = b->half_extents;
    double off = h->offset;
    double m = max2(max2(maxabs3(c), maxabs3(e)), fabs(off));
    int scale = solve_scale(m);
    if (scale)
        c = scale_vec(c, -scale), e = scale_vec(e, -scale), off = ldexp(off, -scale);
    double height = v3_dot(h->normal, c) - off;
    rp_vec3 v = b->center;
    for (int i = 0; i < 3; i++) {
        double ni = v3_dot(h->normal, axes[i]), hi = comp(e, i);
        height -= hi * fabs(ni);
        /* The vertex, in metres (as the kernel's other witnesses). */
        v = v3_madd(v, axes[i], ni > 0.0 ? -comp(b->half_extents, i) : comp(b->half_extents, i));
    }
    *vertex = v;
    return saturate(scale ? ldexp(height, scale) : height);
}

double rp_box_halfspace_signed_distance(const rp_box *a, const rp_halfspace *b)
{
    rp_vec3 v;
    return box_halfspace(a, b, &v);
}

rp_contact rp_box_halfspace_contact(const rp_box *a, const rp_halfspace *b)
{
    rp_contact c;
    c.distance = box_halfspace(a, b, &c.point_a);
    c.normal = v3_neg(b->normal);
    c.point_a = saturate3(c.point_a);
    c.point_b = saturate3(v3_madd(c.point_a, c.normal, c.distance));
    return c;
}

/* ---- box against box ------------------------------------------------------------ */

/* Box b in the frame of box a (a's centre at the origin, a's axes the
 * coordinate axes): its centre and axes. */
typedef struct box_in_a {
    rp_vec3 c, ax[3], h;
} box_in_a;

/* The 8 vertices of a box given by centre, axes and half extents. */
static void vertices(rp_vec3 c, const rp_vec3 ax[3], rp_vec3 h, rp_vec3 v[8])
{
    for (int k = 0; k < 8; k++) {
        rp_vec3 p = c;
        p = v3_madd(p, ax[0], (k & 1) ? h.x : -h.x);
        p = v3_madd(p, ax[1], (k & 2) ? h.y : -h.y);
        p = v3_madd(p, ax[2], (k & 4) ? h.z : -h.z);
        v[k] = p;
    }
}

/* Edge e (0..11) of the box with vertices v: four per axis. */
static void edge(const rp_vec3 v[8], int e, rp_vec3 *p, rp_vec3 *q)
{
    static const int ends[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                    {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    *p = v[ends[e][0]];
    *q = v[ends[e][1]];
}

/* The ball around edge e of the box with vertices v: its midpoint m and
 * half its length r. */
static void edge_ball(const rp_vec3 v[8], int e, rp_vec3 *m, double *r)
{
    rp_vec3 p, q;
    edge(v, e, &p, &q);
    *m = v3(0.5 * p.x + 0.5 * q.x, 0.5 * p.y + 0.5 * q.y, 0.5 * p.z + 0.5 * q.z);
    *r = sqrt(v3_dot(v3_sub(q, p), v3_sub(q, p))) * 0.5;
}

/* A lower bound on the distance from segment p-q to the box [-h, h]: the
 * gap between the segment's bounding box and the box. */
static double edge_gap(rp_vec3 p, rp_vec3 q, rp_vec3 h)
{
    double g2 = 0.0;
    for (int k = 0; k < 3; k++) {
        double a = comp(p, k), b = comp(q, k), hk = comp(h, k);
        double lo = a < b ? a : b, up = a < b ? b : a;
        double g = max3(lo - hk, -hk - up, 0.0);
        g2 += g * g;
    }
    return sqrt(g2);
}

/* What the box-box solve found, in a's frame (at the solve's scale). */
typedef struct box_box {
    double dist;    /* separated: the gap; else minus the depth */
    rp_vec3 pa, pb; /* witnesses on a and on b */
    rp_vec3 normal; /* from a towards b (unit, a's frame) */
} box_box;

/* The smallest overlap over the 15 separating-axis candidates; negative
 * when one of them separates.  axis gets the unit direction from a to b. */
static double sat(const box_in_a *b, rp_vec3 ha, rp_vec3 *axis)
{
    double best = DBL_MAX;
    for (int n = 0; n < 15; n++) {
        rp_vec3 l;
        if (n < 3)
            l = v3(n == 0, n == 1, n == 2);
        else if (n < 6)
            l = b->ax[n - 3];
        else {
            int i = (n - 6) / 3, j = (n - 6) % 3;
            rp_vec3 e = v3(i == 0, i == 1, i == 2);
            l = v3_cross(e, b->ax[j]);
        }
        if (!(maxabs3(l) > 0.0))
            continue;
        l = v3_unit(l);
        double ra = ha.x * fabs(l.x) + ha.y * fabs(l.y) + ha.z * fabs(l.z);
        double rb = b->h.x * fabs(v3_dot(l, b->ax[0])) + b->h.y * fabs(v3_dot(l, b->ax[1])) +
                    b->h.z * fabs(v3_dot(l, b->ax[2]));
        double s = v3_dot(l, b->c);
        double overlap = ra + rb - fabs(s);
        if (overlap < best) {
            best = overlap;
            *axis = s >= 0.0 ? l : v3_neg(l);
        }
    }
    return best;
}

static void solve_box_box(const box_in_a *b, rp_vec3 ha, box_box *r)
{
    rp_vec3 axis = v3(0, 0, 1);
    double overlap = sat(b, ha, &axis);
    rp_vec3 va[8], vb[8], e3[3] = {v3(1, 0, 0), v3(0, 1, 0), v3(0, 0, 1)};
    vertices(v3(0, 0, 0), e3, ha, va);
    vertices(b->c, b->ax, b->h, vb);
    if (overlap >= 0.0) {
        /* They meet: the depth, with witnesses on the deepest vertex of b
         * along the axis and its translate. */
        r->dist = -overlap;
        r->normal = axis;
        int k = 0;
        for (int i = 1; i < 8; i++)
            if (v3_dot(vb[i], axis) < v3_dot(vb[k], axis))
                k = i;
        r->pb = vb[k];
        r->pa = v3_madd(vb[k], axis, overlap);
        return;
    }
    /* Separated: every vertex against the other box, every edge pair. */
    rp_vec3 ua[8]; /* a's vertices in b's frame */
    for (int k = 0; k < 8; k++)
        ua[k] = to_frame(b->ax, va[k], b->c);
    double best2 = DBL_MAX * 2.0;
    for (int k = 0; k < 8; k++) {
        rp_vec3 q;
        double f = clamp_box(vb[k], ha, &q);
        if (f < best2) {
            best2 = f;
            r->pa = q;
            r->pb = vb[k];
        }
        rp_vec3 ql;
        f = clamp_box(ua[k], b->h, &ql);
        if (f < best2) {
            best2 = f;
            r->pa = va[k];
            r->pb = v3_madd(v3_madd(v3_madd(b->c, b->ax[0], ql.x), b->ax[1], ql.y), b->ax[2], ql.z);
        }
    }
    double best = sqrt(best2);
    /* Edge pairs, each skipped when the balls around the two edges (centre
     * the midpoint, radius half the length) are already farther apart than
     * the best so far: no point of the pair can then beat it.  The bound is
     * computed with a slack above its rounding (a few eps of the largest
     * coordinate), so a pair is skipped only when it truly cannot win; the
     * vertices' distance usually leaves a handful of the 144 pairs. */
    /* And each edge's own bound: the gap between the box around it (in the
     * other box's frame) and the other box.  An edge on the far side of
     * its box leaves every pair it is in. */
    rp_vec3 ma[12], mb[12];
    double ra[12], rb[12], ga[12], gb[12], big = 0.0;
    for (int k = 0; k < 8; k++)
        big = max3(big, maxabs3(va[k]), maxabs3(vb[k]));
    for (int i = 0; i < 12; i++) {
        edge_ball(va, i, &ma[i], &ra[i]);
        edge_ball(vb, i, &mb[i], &rb[i]);
        rp_vec3 p, q;
        edge(ua, i, &p, &q);
        ga[i] = edge_gap(p, q, b->h);
        edge(vb, i, &p, &q);
        gb[i] = edge_gap(p, q, ha);
    }
    double slack = 64.0 * DBL_EPSILON * big;
    int bi = -1, bj = -1; /* the closest edge pair, when one beats the vertices */
    for (int i = 0; i < 12; i++) {
        if (ga[i] > best + slack)
            continue;
        rp_capsule ea = {v3(0, 0, 0), v3(0, 0, 0), 0.0};
        edge(va, i, &ea.a, &ea.b);
        for (int j = 0; j < 12; j++) {
            if (gb[j] > best + slack)
                continue;
            rp_vec3 dm = v3_sub(ma[i], mb[j]);
            double reach = ra[i] + rb[j] + best + slack;
            if (v3_dot(dm, dm) > reach * reach)
                continue;
            rp_capsule eb = {v3(0, 0, 0), v3(0, 0, 0), 0.0};
            edge(vb, j, &eb.a, &eb.b);
            double d = rp_capsule_capsule_signed_distance(&ea, &eb);
            if (d < best) {
                best = d;
                bi = i, bj = j;
            }
        }
    }
    if (bi >= 0) { /* its witnesses, once */
        rp_capsule ea = {v3(0, 0, 0), v3(0, 0, 0), 0.0}, eb = ea;
        edge(va, bi, &ea.a, &ea.b);
        edge(vb, bj, &eb.a, &eb.b);
        rp_shape sa = rp_shape_from_capsule(ea), sb = rp_shape_from_capsule(eb);
        rp_contact c = rp_shape_contact(&sa, &sb);
        r->pa = c.point_a;
        r->pb = c.point_b;
    }
    r->dist = best;
    r->normal = v3_sub(r->pb, r->pa);
}

/* Solves a against b in a's frame, at 2^scale metres; the signed distance
 * in metres. */
static double box_box_solve(const rp_box *a, const rp_box *b, box_box *r, rp_vec3 axa[3],
                            int *scale_out)
{
    rp_vec3 axb[3];
    box_axes(a, axa);
    box_axes(b, axb);
    rp_vec3 ca = a->center, cb = b->center, ha = a->half_extents, hb = b->half_extents;
    double m = max2(max2(maxabs3(ca), maxabs3(cb)), max2(maxabs3(ha), maxabs3(hb)));
    int scale = solve_scale(m);
    if (scale)
        ca = scale_vec(ca, -scale), cb = scale_vec(cb, -scale), ha = scale_vec(ha, -scale),
        hb = scale_vec(hb, -scale);
    box_in_a bi;
    bi.c = to_frame(axa, cb, ca);
    for (int j = 0; j < 3; j++)
        bi.ax[j] = v3(v3_dot(axa[0], axb[j]), v3_dot(axa[1], axb[j]), v3_dot(axa[2], axb[j]));
    bi.h = hb;
    solve_box_box(&bi, ha, r);
    *scale_out = scale;
    return saturate(scale ? ldexp(r->dist, scale) : r->dist);
}

/* Canonical order of two boxes (vec.h, fields_after): box-box is solved in
 * a's frame, so the order matters to the rounding, and d(a, b) == d(b, a)
 * bit for bit only because both are solved the same way round. */
static bool box_after(const rp_box *a, const rp_box *b)
{
    const double fa[10] = {a->center.x,       a->center.y,       a->center.z,   a->half_extents.x,
                           a->half_extents.y, a->half_extents.z, a->rotation.w, a->rotation.x,
                           a->rotation.y,     a->rotation.z};
    const double fb[10] = {b->center.x,       b->center.y,       b->center.z,   b->half_extents.x,
                           b->half_extents.y, b->half_extents.z, b->rotation.w, b->rotation.x,
                           b->rotation.y,     b->rotation.z};
    return fields_after(fa, fb, 10);
}

double rp_box_box_signed_distance(const rp_box *a, const rp_box *b)
{
    box_box r;
    rp_vec3 axa[3];
    int scale;
    if (box_after(a, b))
        return box_box_solve(b, a, &r, axa, &scale);
    return box_box_solve(a, b, &r, axa, &scale);
}

rp_contact rp_box_box_contact(const rp_box *a, const rp_box *b)
{
    if (box_after(a, b))
        return mirror(rp_box_box_contact(b, a));
    box_box r;
    rp_vec3 axa[3];
    int scale;
    rp_contact c;
    c.distance = box_box_solve(a, b, &r, axa, &scale);
    rp_vec3 pa = to_world(axa, r.pa);
    if (scale)
        pa = scale_vec(pa, scale);
    c.point_a = saturate3(v3(a->center.x + pa.x, a->center.y + pa.y, a->center.z + pa.z));
    c.normal = unit_or(to_world(axa, r.normal), v3(0, 0, 1));
    c.point_b = saturate3(v3_madd(c.point_a, c.normal, c.distance));
    return c;
}

/* ---- construction -------------------------------------------------------------- */

rp_status rp_box_new(rp_vec3 center, rp_vec3 half_extents, double w, double x, double y, double z,
                     rp_box *out)
{
    if (!out)
        return RP_ERR_INVALID_ARG;
    if (!v3_isfinite(center) || !v3_isfinite(half_extents))
        return RP_ERR_NONFINITE;
    if (half_extents.x < 0.0 || half_extents.y < 0.0 || half_extents.z < 0.0)
        return RP_ERR_EXTENT_NEGATIVE;
    if (!isfinite(w) || !isfinite(x) || !isfinite(y) || !isfinite(z))
        return RP_ERR_QUATERNION; /* (a NaN would slip past the max below) */
    out->center = center;
    out->half_extents = half_extents;
    /* A quaternion already unit to rounding (one this function made, read
     * back from JSON) is kept as it is, so that storing a box again gives
     * the same bits. */
    double n2 = w * w + x * x + y * y + z * z;
    if (fabs(n2 - 1.0) <= 4.0 * DBL_EPSILON) {
        out->rotation = (rp_quat){w, x, y, z};
        return RP_OK;
    }
    double q[4] = {w, x, y, z};
    if (!quat_unit(q))
        return RP_ERR_QUATERNION;
    out->rotation = (rp_quat){q[0], q[1], q[2], q[3]};
    return RP_OK;
}

rp_status rp_halfspace_new(rp_vec3 normal, double offset, rp_halfspace *out)
{
    if (!out)
        return RP_ERR_INVALID_ARG;
    if (!v3_isfinite(normal) || !isfinite(offset))
        return RP_ERR_NONFINITE;
    if (fabs(v3_dot(normal, normal) - 1.0) <= 4.0 * DBL_EPSILON) {
        *out = (rp_halfspace){normal, offset}; /* unit already: kept (see rp_box_new) */
        return RP_OK;
    }
    double m = v3_maxabs(normal);
    if (m == 0.0)
        return RP_ERR_NORMAL;
    /* The same solid with a unit normal: n.p <= d is (n/|n|).p <= d/|n|. */
    rp_vec3 n = v3(normal.x / m, normal.y / m, normal.z / m); /* the largest becomes +-1 */
    double len = sqrt(v3_dot(n, n));
    double off = (offset / m) / len;
    if (!isfinite(off))
        return RP_ERR_NONFINITE; /* the plane lies beyond the double range */
    out->normal = v3(n.x / len, n.y / len, n.z / len);
    out->offset = off;
    return RP_OK;
}
