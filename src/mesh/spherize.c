/* SPDX-License-Identifier: MIT */
/*
 * Conservative spherization of a triangle mesh (include/repose/spherize.h).
 *
 * The way of a call:
 *   1. Validate, and measure the mesh: bounding box, M (the largest
 *      |coordinate|), triangle areas.
 *   2. Sample the surface: 4096 points placed by area (stratified along the
 *      cumulative area, a low-discrepancy point inside each triangle), plus
 *      up to 1024 triangle corners (so that thin or zero-area parts, which
 *      area sampling misses, pull a sphere towards them).  When the mesh is
 *      closed (every edge on an even number of triangles), also the inside:
 *      the centres of a grid of some 2048 cells over the bounding box that
 *      ray parity puts inside (add_interior), so that balls fill a solid
 *      instead of lining its surface.  The overshoot of a closed mesh
 *      counts only what the cover reaches beyond the solid.
 *   3. Cluster the samples for k = 1, 2, ... spheres (k-centre: the largest
 *      radius is what sets the overshoot of a cover of a surface).  Each k
 *      starts from the k-1 balls plus a new centre at the sample farthest
 *      from its nearest centre (Gonzalez's farthest-point step), then runs a
 *      Lloyd-like loop: samples to the nearest centre, each cluster's centre
 *      to the centre of its minimum enclosing ball (Welzl, move-to-front);
 *      the best round (smallest largest radius) is kept.
 *   4. Cover (cover()): split every triangle (by bisection across its
 *      longest edge) into pieces no longer than a quarter of the seed
 *      balls' mean radius (fewer when there would be
 *      more than LEAF_CAP pieces), give each piece (and interior sample) to
 *      the ball it makes grow least, refit each ball to its pieces' corners
 *      and samples (REFINE_PASSES times), give the pieces out once more and
 *      set each radius from its pieces' corners, rounded up (below), or
 *      larger to hold its interior samples.
 *   5. Estimate the overshoot on a Fibonacci lattice of each sphere
 *      (estimate()), the exact point-triangle distance through a bounding
 *      volume tree of the triangles.
 *   3b. For a closed mesh, medial seeds (medial_seeds): balls centred
 *      inside, of radius their distance to the surface plus one slack, the
 *      least slack for which a greedy set cover of the surface samples
 *      needs at most k of them (a rounded link's best cover sits on its
 *      axis, which clustering does not find).
 *   With max_overshoot 0, step 4 runs for k = 1, 2, 4, ..., and the budget,
 *   each from two seeds (three from k = 4 on, with the medial ones): the clustered balls and the balls around the
 *   cells of a grid of at most k cells over the bounding box (grid_seeds:
 *   what fills a box best: 0.18 m for the unit cube with 8 spheres, where
 *   clustering gives 0.47 m with 16); the cover with the smallest estimated
 *   overshoot wins (the first on a tie).  A budget sees every candidate of
 *   a smaller power-of-two budget, so from one such budget to any larger
 *   one the overshoot cannot grow.  With max_overshoot > 0 the same
 *   candidates run in order until a cover meets the goal; when none does,
 *   the best of them is returned.
 *
 * Why the cover is airtight.  A triangle with corners a, b, c is the image
 * of the parameter triangle {(u, v): u, v >= 0, u + v <= 1} under
 * P(u, v) = a + u (b - a) + v (c - a).  A triangle is split by repeated
 * bisection in (u, v): a piece is halved through the midpoint of one of
 * its edges, from the opposite corner.  The halves tile the piece exactly,
 * and every corner is dyadic (the midpoint of two dyadic pairs; at most
 * 48 bisections deep), so an exact double: the pieces tile the parameter
 * triangle exactly, hence their images tile the mesh triangle exactly,
 * degenerate triangles included.  Each piece is given
 * wholly to one sphere, whose radius is at least the distance from its
 * centre to each exact corner P(u, v) of each of its pieces; the ball being
 * convex, it then holds each piece.  Only the rounding remains, bounded with
 * rho = 2^-53, eps = 2^-52 and M >= every |coordinate| of the mesh and of
 * the centres (centres are clamped into the bounding box):
 *   - the computed corner P~ = fl(a + fl(fl(u fl(b - a)) + fl(v fl(c - a))))
 *     is off from P by at most 10 rho M per coordinate (|b - a| <= 2M,
 *     |u (b-a) + v (c-a)| <= 2M as u + v <= 1, |P| <= 3M), so |P - P~| <=
 *     sqrt(3) 10 rho M < 9 eps M;
 *   - the computed distance D~ = fl(sqrt(fl(dx^2 + dy^2 + dz^2))), dx =
 *     fl(P~x - cx), has a relative error below 4 rho = 2 eps, so |P~ - c| <=
 *     D~ (1 + 2 eps) + 2^-536: the last term covers squares that underflow
 *     (an absolute error below 2^-1072 in the sum); nothing overflows, as
 *     |coordinates| <= 2^500 (RP_SPHERIZE_MAX_COORD);
 *   - the radius is fl(fl(D~max (1 + 2^-48)) + fl(fl(2^-47 M) + 2^-500)),
 *     which, with each rounding costing at most a factor (1 - rho) and the
 *     product 2^-47 M at most 2^-1075, is >= D~max (1 + 15 eps) + 31 eps M +
 *     2^-501 >= |P - c| + 13 eps D~max + 22 eps M.
 * So every exact point of every triangle lies inside a returned sphere with
 * room to spare: 22 eps M (4.9e-12 m for M = 1000 m), so that a checker
 * that rounds a point of the triangle by far less (long double) still finds
 * it inside.  The clustering, the minimum enclosing balls and the estimate
 * have no bearing on this: they only choose the centres.
 *
 * Deterministic: no clocks, no addresses, no threads; the shuffles of the
 * minimum-enclosing-ball routine use a fixed seed; every tie is broken by
 * the lowest index.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "geometry/vec.h"
#include "repose/spherize.h"

#define AREA_SAMPLES 4096     /* surface points placed by area (step 2) */
#define CORNER_SAMPLES 1024   /* triangle corners among the samples (at most) */
#define LLOYD_ROUNDS 12       /* rounds of the clustering loop per k */
#define REFINE_PASSES 2       /* refits of the balls to their pieces (step 4) */
#define LEAF_FRACTION 0.25    /* piece length / mean ball radius */
#define LEAF_CAP 32768        /* most pieces from splitting (every triangle is one at least) */
#define LATTICE 192           /* surface points per sphere for the estimate */
#define BVH_LEAF 4            /* triangles per leaf of the distance tree */
#define INTERIOR_SAMPLES 2048 /* grid cells over the bounding box of a closed mesh */

/* ---- small vectors -------------------------------------------------------- */

static rp_vec3 vadd(rp_vec3 a, rp_vec3 b)
{
    return v3(a.x + b.x, a.y + b.y, a.z + b.z);
}

static double dist2(rp_vec3 a, rp_vec3 b)
{
    double dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
    return dx * dx + dy * dy + dz * dz;
}

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* splitmix64, for the shuffles of meb(): a fixed sequence. */
static uint64_t mix_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- minimum enclosing ball (Welzl, move-to-front) ------------------------ */

/* A ball; r < 0 is the empty ball (an empty cluster). */
typedef struct ball {
    rp_vec3 c;
    double r;
} ball;

static ball ball_of(rp_vec3 c, const rp_vec3 *p, int n)
{
    double r2 = 0.0;
    for (int i = 0; i < n; i++)
        r2 = max2(r2, dist2(c, p[i]));
    ball b = {c, sqrt(r2)};
    return b;
}

static ball ball2(rp_vec3 a, rp_vec3 b)
{
    rp_vec3 p[2] = {a, b};
    return ball_of(v3(0.5 * (a.x + b.x), 0.5 * (a.y + b.y), 0.5 * (a.z + b.z)), p, 2);
}

/* The smallest ball with a, b, c on its sphere; for (nearly) collinear
 * points the ball of the farthest pair. */
static ball ball3(rp_vec3 a, rp_vec3 b, rp_vec3 c)
{
    rp_vec3 u = v3_sub(b, a), v = v3_sub(c, a), w = v3_cross(u, v);
    double uu = v3_dot(u, u), vv = v3_dot(v, v), ww = v3_dot(w, w);
    if (!(ww > 1e-20 * uu * vv)) {
        ball best = ball2(a, b), o = ball2(a, c);
        if (o.r > best.r)
            best = o;
        o = ball2(b, c);
        return o.r > best.r ? o : best;
    }
    rp_vec3 n = vadd(v3_scale(v3_cross(v, w), uu), v3_scale(v3_cross(w, u), vv));
    rp_vec3 p[3] = {a, b, c};
    return ball_of(vadd(a, v3_scale(n, 0.5 / ww)), p, 3);
}

/* The ball with a, b, c, d on its sphere; for (nearly) coplanar points the
 * largest of the balls of three of them. */
static ball ball4(rp_vec3 a, rp_vec3 b, rp_vec3 c, rp_vec3 d)
{
    rp_vec3 u = v3_sub(b, a), v = v3_sub(c, a), w = v3_sub(d, a);
    rp_vec3 vw = v3_cross(v, w), wu = v3_cross(w, u), uv = v3_cross(u, v);
    double det = v3_dot(u, vw);
    double uu = v3_dot(u, u), vv = v3_dot(v, v), ww = v3_dot(w, w);
    if (!(fabs(det) > 1e-10 * sqrt(uu * vv * ww))) {
        ball best = ball3(a, b, c), o = ball3(a, b, d);
        if (o.r > best.r)
            best = o;
        o = ball3(a, c, d);
        if (o.r > best.r)
            best = o;
        o = ball3(b, c, d);
        return o.r > best.r ? o : best;
    }
    rp_vec3 n = vadd(vadd(v3_scale(vw, uu), v3_scale(wu, vv)), v3_scale(uv, ww));
    rp_vec3 p[4] = {a, b, c, d};
    return ball_of(vadd(a, v3_scale(n, 0.5 / det)), p, 4);
}

static ball support_ball(const rp_vec3 *s, int ns)
{
    switch (ns) {
    case 0: {
        ball b = {v3(0, 0, 0), -1.0};
        return b;
    }
    case 1: {
        ball b = {s[0], 0.0};
        return b;
    }
    case 2:
        return ball2(s[0], s[1]);
    case 3:
        return ball3(s[0], s[1], s[2]);
    default:
        return ball4(s[0], s[1], s[2], s[3]);
    }
}

/* Outside by more than a relative 2^-40: the tolerance keeps rounding noise
 * from re-opening the recursion; the cover never relies on these balls. */
static int outside(ball b, rp_vec3 p)
{
    return b.r < 0.0 || dist2(p, b.c) > b.r * b.r * (1.0 + 0x1p-40);
}

static ball mtf(rp_vec3 *p, size_t n, rp_vec3 *sup, int ns)
{
    ball b = support_ball(sup, ns);
    if (ns == 4)
        return b;
    for (size_t i = 0; i < n; i++) {
        if (!outside(b, p[i]))
            continue;
        rp_vec3 q = p[i];
        sup[ns] = q;
        b = mtf(p, i, sup, ns + 1);
        memmove(p + 1, p, i * sizeof *p);
        p[0] = q;
    }
    return b;
}

/* The minimum enclosing ball of p[0..n) (reordered), up to rounding.  The
 * fixed-seed shuffle gives Welzl's expected linear time whatever the order
 * of the mesh. */
static ball meb(rp_vec3 *p, size_t n)
{
    uint64_t seed = 0x5EEDu;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(mix_next(&seed) % i);
        rp_vec3 t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
    rp_vec3 sup[4];
    return mtf(p, n, sup, 0);
}

/* ---- the mesh ------------------------------------------------------------- */

/* One leaf of the cover: a piece of a triangle, its three computed corners. */
typedef struct leaf {
    rp_vec3 p[3];
} leaf;

typedef struct bnode {
    rp_vec3 lo, hi;
    uint32_t first; /* leaf: first index into tri_order; inner: left child (right = first + 1) */
    uint32_t count; /* triangles of a leaf; 0 for an inner node */
} bnode;

typedef struct bitem {
    double key[3];
    uint32_t tri;
} bitem;

typedef struct sctx {
    const double *vx;
    const uint32_t *tris;
    size_t nt;
    rp_vec3 lo, hi; /* bounding box of the triangles' corners */
    double m;       /* largest |coordinate| of any vertex */

    rp_vec3 *samples; /* step 2: surface samples, then interior ones */
    size_t ns, ns_surf;
    int closed; /* the mesh bounds a solid (add_interior): parity tells inside */

    leaf *leaves; /* step 4: grown on demand */
    size_t nleaves, leaves_cap;
    uint32_t *leaf_asg;
    rp_vec3 *gather;  /* 3 * leaves_cap corners of one cluster */
    uint32_t *order;  /* leaves sorted by cluster */
    uint32_t *in_asg; /* interior sample -> ball */

    bnode *nodes; /* step 5 */
    uint32_t nnodes;
    uint32_t *tri_order;
    rp_vec3 dirs[LATTICE];
} sctx;

static rp_vec3 vert(const sctx *s, uint32_t i)
{
    const double *p = s->vx + 3 * (size_t)i;
    return v3(p[0], p[1], p[2]);
}

static void tri_corners(const sctx *s, size_t t, rp_vec3 *a, rp_vec3 *b, rp_vec3 *c)
{
    *a = vert(s, s->tris[3 * t]);
    *b = vert(s, s->tris[3 * t + 1]);
    *c = vert(s, s->tris[3 * t + 2]);
}

/* P(u, v) = a + (u (b - a) + v (c - a)), in the order the coverage argument
 * bounds (file comment). */
static rp_vec3 param_point(rp_vec3 a, rp_vec3 ab, rp_vec3 ac, double u, double v)
{
    return v3(a.x + (u * ab.x + v * ac.x), a.y + (u * ab.y + v * ac.y),
              a.z + (u * ab.z + v * ac.z));
}

static rp_vec3 clamp_box(const sctx *s, rp_vec3 c)
{
    return v3(clampd(c.x, s->lo.x, s->hi.x), clampd(c.y, s->lo.y, s->hi.y),
              clampd(c.z, s->lo.z, s->hi.z));
}

/* ---- step 2: samples ------------------------------------------------------- */

static rp_status make_samples(sctx *s)
{
    double *cum = malloc((s->nt + 1) * sizeof *cum);
    if (!cum)
        return RP_ERR_NOMEM;
    cum[0] = 0.0;
    for (size_t t = 0; t < s->nt; t++) {
        rp_vec3 a, b, c;
        tri_corners(s, t, &a, &b, &c);
        rp_vec3 n = v3_cross(v3_sub(b, a), v3_sub(c, a));
        cum[t + 1] = cum[t] + 0.5 * sqrt(v3_dot(n, n));
    }
    double area = cum[s->nt];
    size_t n_area = area > 0.0 ? AREA_SAMPLES : 0;
    size_t corners = 3 * s->nt;
    size_t stride = (corners + CORNER_SAMPLES - 1) / CORNER_SAMPLES;
    size_t n_corner = (corners + stride - 1) / stride;
    s->samples = malloc((n_area + n_corner) * sizeof *s->samples);
    if (!s->samples) {
        free(cum);
        return RP_ERR_NOMEM;
    }
    /* Stratified along the cumulative area: sample i at (i + 1/2) A / n in
     * the triangle whose share of the area holds it; inside the triangle
     * the R2 low-discrepancy sequence, folded into the triangle. */
    const double a1 = 0.7548776662466927, a2 = 0.5698402909980532;
    size_t t = 0;
    for (size_t i = 0; i < n_area; i++) {
        double target = ((double)i + 0.5) * (area / (double)n_area);
        while (t + 1 < s->nt && cum[t + 1] < target)
            t++;
        double u = fmod(0.5 + a1 * (double)(i + 1), 1.0);
        double v = fmod(0.5 + a2 * (double)(i + 1), 1.0);
        if (u + v > 1.0) {
            u = 1.0 - u;
            v = 1.0 - v;
        }
        rp_vec3 a, b, c;
        tri_corners(s, t, &a, &b, &c);
        s->samples[s->ns++] = param_point(a, v3_sub(b, a), v3_sub(c, a), u, v);
    }
    for (size_t f = 0; f < corners; f += stride)
        s->samples[s->ns++] = vert(s, s->tris[f]);
    free(cum);
    return RP_OK;
}

/* ---- step 3: clustering ---------------------------------------------------- */

typedef struct clus {
    size_t k;      /* balls in use */
    ball *b;       /* the current round's balls */
    ball *best;    /* the best round's balls for this k */
    uint32_t *asg; /* sample -> ball */
    uint32_t *cnt; /* samples per ball, then offsets */
    uint32_t *ord; /* samples sorted by ball */
    rp_vec3 *tmp;  /* one cluster's samples, for meb() */
    double *near2; /* squared distance of each sample to its ball's centre */
} clus;

/* Each sample to the nearest centre (the lowest index on a tie).  Returns
 * how many samples changed ball. */
static size_t assign_nearest(const sctx *s, clus *cl, const ball *b)
{
    size_t changed = 0;
    for (size_t i = 0; i < s->ns; i++) {
        uint32_t bj = 0;
        double bd = INFINITY;
        for (size_t j = 0; j < cl->k; j++) {
            double d = dist2(s->samples[i], b[j].c);
            if (d < bd) {
                bd = d;
                bj = (uint32_t)j;
            }
        }
        changed += cl->asg[i] != bj;
        cl->asg[i] = bj;
        cl->near2[i] = bd;
    }
    return changed;
}

/* The balls of the clusters cl->asg describes: minimum enclosing balls,
 * centres clamped into the bounding box (a minimum enclosing ball's centre
 * lies in the convex hull; clamping only undoes rounding). */
static void fit_clusters(const sctx *s, clus *cl)
{
    memset(cl->cnt, 0, (cl->k + 1) * sizeof *cl->cnt);
    for (size_t i = 0; i < s->ns; i++)
        cl->cnt[cl->asg[i] + 1]++;
    for (size_t j = 0; j < cl->k; j++)
        cl->cnt[j + 1] += cl->cnt[j];
    for (size_t i = 0; i < s->ns; i++)
        cl->ord[cl->cnt[cl->asg[i]]++] = (uint32_t)i;
    /* cnt[j] is now the end of cluster j. */
    size_t begin = 0;
    for (size_t j = 0; j < cl->k; j++) {
        size_t end = cl->cnt[j], n = end - begin;
        for (size_t i = 0; i < n; i++)
            cl->tmp[i] = s->samples[cl->ord[begin + i]];
        if (n == 0) {
            cl->b[j].r = -1.0;
        } else {
            cl->b[j].c = clamp_box(s, meb(cl->tmp, n).c);
            double r2 = 0.0;
            for (size_t i = 0; i < n; i++)
                r2 = max2(r2, dist2(cl->b[j].c, cl->tmp[i]));
            cl->b[j].r = sqrt(r2);
        }
        begin = end;
    }
}

/* The sample farthest from its nearest centre (near2 must be current), and
 * its squared distance. */
static size_t farthest_sample(const sctx *s, const clus *cl, double *d2)
{
    size_t far = 0;
    for (size_t i = 1; i < s->ns; i++)
        if (cl->near2[i] > cl->near2[far])
            far = i;
    *d2 = cl->near2[far];
    return far;
}

static double largest_radius(const ball *b, size_t k)
{
    double r = 0.0;
    for (size_t j = 0; j < k; j++)
        r = max2(r, b[j].r);
    return r;
}

/* Goes from cl->k balls (cl->best) to cl->k + 1.  Returns 0 when no sample
 * lies outside the centres (no further ball can help). */
static int cluster_step(const sctx *s, clus *cl)
{
    if (cl->k == 0) {
        cl->k = 1;
        memset(cl->asg, 0, s->ns * sizeof *cl->asg);
        fit_clusters(s, cl);
        cl->best[0] = cl->b[0];
        return 1;
    }
    double d2;
    assign_nearest(s, cl, cl->best);
    size_t far = farthest_sample(s, cl, &d2);
    if (!(d2 > 0.0))
        return 0;
    memcpy(cl->b, cl->best, cl->k * sizeof *cl->b);
    cl->b[cl->k].c = s->samples[far];
    cl->b[cl->k].r = 0.0;
    cl->k++;
    double best_score = INFINITY;
    for (int round = 0; round < LLOYD_ROUNDS; round++) {
        size_t changed = assign_nearest(s, cl, cl->b);
        if (round > 0 && changed == 0)
            break;
        fit_clusters(s, cl);
        /* An empty cluster restarts at the sample farthest from its centre. */
        for (size_t j = 0; j < cl->k; j++) {
            if (cl->b[j].r >= 0.0)
                continue;
            size_t f = farthest_sample(s, cl, &d2);
            cl->b[j].c = s->samples[f];
            cl->b[j].r = 0.0;
            cl->near2[f] = 0.0;
        }
        double score = largest_radius(cl->b, cl->k);
        if (score < best_score) {
            best_score = score;
            memcpy(cl->best, cl->b, cl->k * sizeof *cl->b);
        }
    }
    return 1;
}

/* ---- step 5: distance to the mesh ------------------------------------------ */

static int cmp_x(const void *pa, const void *pb)
{
    const bitem *a = pa, *b = pb;
    if (a->key[0] != b->key[0])
        return a->key[0] < b->key[0] ? -1 : 1;
    return a->tri < b->tri ? -1 : a->tri > b->tri;
}

static int cmp_y(const void *pa, const void *pb)
{
    const bitem *a = pa, *b = pb;
    if (a->key[1] != b->key[1])
        return a->key[1] < b->key[1] ? -1 : 1;
    return a->tri < b->tri ? -1 : a->tri > b->tri;
}

static int cmp_z(const void *pa, const void *pb)
{
    const bitem *a = pa, *b = pb;
    if (a->key[2] != b->key[2])
        return a->key[2] < b->key[2] ? -1 : 1;
    return a->tri < b->tri ? -1 : a->tri > b->tri;
}

static void grow_box(rp_vec3 *lo, rp_vec3 *hi, rp_vec3 p)
{
    lo->x = fmin(lo->x, p.x);
    lo->y = fmin(lo->y, p.y);
    lo->z = fmin(lo->z, p.z);
    hi->x = fmax(hi->x, p.x);
    hi->y = fmax(hi->y, p.y);
    hi->z = fmax(hi->z, p.z);
}

/* Builds node `at` over items[first, first + n): median splits on the
 * longest axis of the centroids' box. */
static void bvh_build(sctx *s, bitem *items, uint32_t at, uint32_t first, uint32_t n)
{
    bnode *nd = &s->nodes[at];
    rp_vec3 lo = v3(INFINITY, INFINITY, INFINITY), hi = v3(-INFINITY, -INFINITY, -INFINITY);
    rp_vec3 clo = lo, chi = hi;
    for (uint32_t i = first; i < first + n; i++) {
        rp_vec3 a, b, c;
        tri_corners(s, items[i].tri, &a, &b, &c);
        grow_box(&lo, &hi, a);
        grow_box(&lo, &hi, b);
        grow_box(&lo, &hi, c);
        grow_box(&clo, &chi, v3(items[i].key[0], items[i].key[1], items[i].key[2]));
    }
    nd->lo = lo;
    nd->hi = hi;
    if (n <= BVH_LEAF) {
        nd->first = first;
        nd->count = n;
        for (uint32_t i = first; i < first + n; i++)
            s->tri_order[i] = items[i].tri;
        return;
    }
    rp_vec3 ext = v3_sub(chi, clo);
    int (*cmp)(const void *, const void *) = cmp_x;
    if (ext.y > ext.x && ext.y >= ext.z)
        cmp = cmp_y;
    else if (ext.z > ext.x && ext.z > ext.y)
        cmp = cmp_z;
    qsort(items + first, n, sizeof *items, cmp);
    uint32_t left = s->nnodes;
    s->nnodes += 2;
    nd->first = left;
    nd->count = 0;
    bvh_build(s, items, left, first, n / 2);
    bvh_build(s, items, left + 1, first + n / 2, n - n / 2);
}

static rp_status bvh_make(sctx *s)
{
    uint32_t nt = (uint32_t)s->nt;
    bitem *items = malloc(s->nt * sizeof *items);
    s->nodes = malloc(2 * s->nt * sizeof *s->nodes);
    s->tri_order = malloc(s->nt * sizeof *s->tri_order);
    if (!items || !s->nodes || !s->tri_order) {
        free(items);
        return RP_ERR_NOMEM;
    }
    for (uint32_t t = 0; t < nt; t++) {
        rp_vec3 a, b, c;
        tri_corners(s, t, &a, &b, &c);
        items[t].key[0] = (a.x + b.x + c.x) / 3.0;
        items[t].key[1] = (a.y + b.y + c.y) / 3.0;
        items[t].key[2] = (a.z + b.z + c.z) / 3.0;
        items[t].tri = t;
    }
    s->nnodes = 1;
    bvh_build(s, items, 0, 0, nt);
    free(items);
    return RP_OK;
}

static double seg_d2(rp_vec3 p, rp_vec3 a, rp_vec3 b)
{
    rp_vec3 ab = v3_sub(b, a);
    double l2 = v3_dot(ab, ab);
    double t = l2 > 0.0 ? clampd(v3_dot(v3_sub(p, a), ab) / l2, 0.0, 1.0) : 0.0;
    return dist2(p, v3_madd(a, ab, t));
}

/* Squared distance from p to triangle abc: Ericson's closest-point regions
 * (Real-Time Collision Detection, 5.1.5); a degenerate triangle is its
 * three edges. */
static double tri_d2(rp_vec3 p, rp_vec3 a, rp_vec3 b, rp_vec3 c)
{
    rp_vec3 ab = v3_sub(b, a), ac = v3_sub(c, a), n = v3_cross(ab, ac);
    double nn = v3_dot(n, n);
    if (!(nn > 1e-24 * v3_dot(ab, ab) * v3_dot(ac, ac)))
        return fmin(seg_d2(p, a, b), fmin(seg_d2(p, b, c), seg_d2(p, c, a)));
    rp_vec3 ap = v3_sub(p, a);
    double d1 = v3_dot(ab, ap), d2 = v3_dot(ac, ap);
    if (d1 <= 0.0 && d2 <= 0.0)
        return dist2(p, a);
    rp_vec3 bp = v3_sub(p, b);
    double d3 = v3_dot(ab, bp), d4 = v3_dot(ac, bp);
    if (d3 >= 0.0 && d4 <= d3)
        return dist2(p, b);
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0)
        return seg_d2(p, a, b);
    rp_vec3 cp = v3_sub(p, c);
    double d5 = v3_dot(ab, cp), d6 = v3_dot(ac, cp);
    if (d6 >= 0.0 && d5 <= d6)
        return dist2(p, c);
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0)
        return seg_d2(p, a, c);
    double va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0)
        return seg_d2(p, b, c);
    /* Inside the face: the distance to the plane. */
    double h = v3_dot(ap, n);
    return h * h / nn;
}

static double box_d2(rp_vec3 p, const bnode *nd)
{
    double dx = max2(0.0, max2(nd->lo.x - p.x, p.x - nd->hi.x));
    double dy = max2(0.0, max2(nd->lo.y - p.y, p.y - nd->hi.y));
    double dz = max2(0.0, max2(nd->lo.z - p.z, p.z - nd->hi.z));
    return dx * dx + dy * dy + dz * dz;
}

/* Squared distance from p to the mesh, or any value <= stop2 once the
 * distance is known to be at most that (the caller wants a maximum and
 * needs no more). */
static double mesh_d2(const sctx *s, rp_vec3 p, double stop2)
{
    uint32_t stack[128]; /* depth <= 30 (check_mesh), two entries a level */
    int top = 0;
    double best = INFINITY;
    stack[top++] = 0;
    while (top > 0) {
        const bnode *nd = &s->nodes[stack[--top]];
        if (box_d2(p, nd) >= best)
            continue;
        if (nd->count > 0) {
            for (uint32_t i = nd->first; i < nd->first + nd->count; i++) {
                rp_vec3 a, b, c;
                tri_corners(s, s->tri_order[i], &a, &b, &c);
                best = fmin(best, tri_d2(p, a, b, c));
            }
            if (best <= stop2)
                return best;
            continue;
        }
        /* The nearer child last, so that it is searched first. */
        double dl = box_d2(p, &s->nodes[nd->first]), dr = box_d2(p, &s->nodes[nd->first + 1]);
        if (dl < dr) {
            stack[top++] = nd->first + 1;
            stack[top++] = nd->first;
        } else {
            stack[top++] = nd->first;
            stack[top++] = nd->first + 1;
        }
    }
    return best;
}

static void make_lattice(sctx *s)
{
    const double golden = 2.399963229728653; /* pi (3 - sqrt 5) */
    for (int i = 0; i < LATTICE; i++) {
        double z = 1.0 - (2.0 * i + 1.0) / LATTICE;
        double rho = sqrt(1.0 - z * z);
        s->dirs[i] = v3(rho * cos(golden * i), rho * sin(golden * i), z);
    }
}

static int solid_inside(const sctx *s, rp_vec3 p);

/* The estimated overshoot of the balls b[0..k) (r < 0: absent): over the
 * lattice points of each sphere inside no other ball (points of the
 * cover's boundary), the largest distance to the mesh; for a closed mesh,
 * only of those outside the solid it bounds (a boundary point inside the
 * link reaches no further than the link does). */
static double estimate(const sctx *s, const ball *b, size_t k)
{
    double worst2 = 0.0;
    for (size_t i = 0; i < k; i++) {
        if (b[i].r < 0.0)
            continue;
        for (int l = 0; l < LATTICE; l++) {
            rp_vec3 x = v3_madd(b[i].c, s->dirs[l], b[i].r);
            int inside = 0;
            for (size_t j = 0; j < k && !inside; j++)
                inside = j != i && b[j].r > 0.0 && dist2(x, b[j].c) < b[j].r * b[j].r;
            if (inside)
                continue;
            double d2 = mesh_d2(s, x, worst2);
            if (d2 > worst2 && !(s->closed && solid_inside(s, x)))
                worst2 = d2; /* (the parity only for a point that would raise it) */
        }
    }
    return sqrt(worst2);
}

/* ---- step 2b: the inside of a closed mesh -------------------------------------- */

typedef struct vkey {
    double x, y, z;
    uint32_t i;
} vkey;

static int cmp_vkey(const void *pa, const void *pb)
{
    const vkey *a = pa, *b = pb;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    if (a->y != b->y)
        return a->y < b->y ? -1 : 1;
    if (a->z != b->z)
        return a->z < b->z ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Whether the mesh is closed: every edge, vertices matched by their
 * coordinates (an STL repeats its vertices per triangle), is used by an
 * even number of triangles, so that a ray's crossings tell inside from
 * outside.  Edges of zero length do not count. */
static rp_status is_closed(const sctx *s, size_t nv, int *closed)
{
    *closed = 0;
    vkey *ord = malloc(nv * sizeof *ord);
    uint32_t *canon = malloc(nv * sizeof *canon);
    uint64_t *edges = malloc(3 * s->nt * sizeof *edges);
    if (!ord || !canon || !edges) {
        free(ord);
        free(canon);
        free(edges);
        return RP_ERR_NOMEM;
    }
    for (size_t i = 0; i < nv; i++)
        ord[i] = (vkey){s->vx[3 * i], s->vx[3 * i + 1], s->vx[3 * i + 2], (uint32_t)i};
    qsort(ord, nv, sizeof *ord, cmp_vkey);
    for (size_t i = 0; i < nv; i++) {
        int same = i > 0 && ord[i].x == ord[i - 1].x && ord[i].y == ord[i - 1].y &&
                   ord[i].z == ord[i - 1].z;
        canon[ord[i].i] = same ? canon[ord[i - 1].i] : ord[i].i;
    }
    size_t ne = 0;
    for (size_t t = 0; t < s->nt; t++) {
        for (int q = 0; q < 3; q++) {
            uint64_t a = canon[s->tris[3 * t + q]], b = canon[s->tris[3 * t + (q + 1) % 3]];
            if (a != b)
                edges[ne++] = a < b ? a << 32 | b : b << 32 | a;
        }
    }
    qsort(edges, ne, sizeof *edges, cmp_u64);
    int even = ne > 0;
    for (size_t i = 0; i < ne && even;) {
        size_t j = i;
        while (j < ne && edges[j] == edges[i])
            j++;
        even = (j - i) % 2 == 0;
        i = j;
    }
    *closed = even;
    free(ord);
    free(canon);
    free(edges);
    return RP_OK;
}

/* Whether the ray o + t d (t > 0) meets the node's box. */
static int ray_box(rp_vec3 o, rp_vec3 inv, const bnode *nd)
{
    double t0 = 0.0, t1 = INFINITY;
    const double lo[3] = {nd->lo.x, nd->lo.y, nd->lo.z}, hi[3] = {nd->hi.x, nd->hi.y, nd->hi.z};
    const double po[3] = {o.x, o.y, o.z}, pi[3] = {inv.x, inv.y, inv.z};
    for (int q = 0; q < 3; q++) {
        double a = (lo[q] - po[q]) * pi[q], b = (hi[q] - po[q]) * pi[q];
        t0 = fmax(t0, fmin(a, b));
        t1 = fmin(t1, fmax(a, b));
    }
    return t0 <= t1;
}

/* How many triangles the ray o + t d (t > 0) crosses (Moller-Trumbore;
 * triangles edge-on to the ray are skipped). */
static size_t crossings(const sctx *s, rp_vec3 o, rp_vec3 d)
{
    rp_vec3 inv = v3(1.0 / d.x, 1.0 / d.y, 1.0 / d.z);
    uint32_t stack[128];
    int top = 0;
    size_t hits = 0;
    stack[top++] = 0;
    while (top > 0) {
        const bnode *nd = &s->nodes[stack[--top]];
        if (!ray_box(o, inv, nd))
            continue;
        if (nd->count == 0) {
            stack[top++] = nd->first;
            stack[top++] = nd->first + 1;
            continue;
        }
        for (uint32_t i = nd->first; i < nd->first + nd->count; i++) {
            rp_vec3 a, b, c;
            tri_corners(s, s->tri_order[i], &a, &b, &c);
            rp_vec3 e1 = v3_sub(b, a), e2 = v3_sub(c, a), pv = v3_cross(d, e2);
            double det = v3_dot(e1, pv);
            if (det == 0.0)
                continue;
            rp_vec3 tv = v3_sub(o, a), qv = v3_cross(tv, e1);
            double u = v3_dot(tv, pv) / det, v = v3_dot(d, qv) / det;
            double t = v3_dot(e2, qv) / det;
            hits += u >= 0.0 && v >= 0.0 && u + v <= 1.0 && t > 0.0;
        }
    }
    return hits;
}

/* Whether p is inside the solid a closed mesh bounds: the parity of
 * crossings by a majority of three rays in skew directions (against rays
 * through an edge). */
static int solid_inside(const sctx *s, rp_vec3 p)
{
    static const rp_vec3 rays[3] = {{0.5773502691896258, 0.5773502691896257, 0.5773502691896259},
                                    {-0.2672612419124244, 0.8017837257372732, -0.5345224838248488},
                                    {0.8164965809277261, -0.4082482904638631, -0.408248290463863}};
    int odd = 0;
    for (int r = 0; r < 3; r++)
        odd += (int)(crossings(s, p, rays[r]) & 1);
    return odd >= 2;
}

/* Adds points of the inside of a closed mesh to the samples: the centres
 * of a grid of some INTERIOR_SAMPLES cells over the bounding box that an
 * odd number of triangles surrounds (parity of crossings, by a majority of
 * three rays in skew directions, against rays through an edge).  With
 * them the balls fill a solid instead of lining its surface, whose cover
 * would leave the inner sides of its spheres deep inside, far from the
 * mesh.  Quality only: the cover never depends on them. */
static rp_status add_interior(sctx *s, size_t nv)
{
    s->ns_surf = s->ns;
    int closed;
    rp_status st = is_closed(s, nv, &closed);
    if (st || !closed)
        return st;
    s->closed = 1;
    rp_vec3 ext = v3_sub(s->hi, s->lo);
    double vol = ext.x * ext.y * ext.z;
    if (!(vol > 0.0))
        return RP_OK;
    double cell = cbrt(vol / INTERIOR_SAMPLES);
    size_t nx, ny, nz;
    for (;;) {
        nx = (size_t)fmax(1.0, round(ext.x / cell));
        ny = (size_t)fmax(1.0, round(ext.y / cell));
        nz = (size_t)fmax(1.0, round(ext.z / cell));
        if (nx * ny * nz <= INTERIOR_SAMPLES)
            break;
        cell *= 1.125;
    }
    rp_vec3 *grown = realloc(s->samples, (s->ns + nx * ny * nz) * sizeof *grown);
    if (!grown)
        return RP_ERR_NOMEM;
    s->samples = grown;
    for (size_t i = 0; i < nx; i++) {
        for (size_t j = 0; j < ny; j++) {
            for (size_t k = 0; k < nz; k++) {
                rp_vec3 p = v3(s->lo.x + ext.x * ((double)i + 0.5) / (double)nx,
                               s->lo.y + ext.y * ((double)j + 0.5) / (double)ny,
                               s->lo.z + ext.z * ((double)k + 0.5) / (double)nz);
                if (solid_inside(s, p))
                    s->samples[s->ns++] = p;
            }
        }
    }
    return RP_OK;
}

/* ---- step 4: the cover ------------------------------------------------------ */

/* A piece of a triangle in its parameters (u, v): corners with dyadic
 * coordinates, so exact doubles (each bisection adds one bit; at most
 * BISECT_MAX_DEPTH of them). */
typedef struct ppiece {
    double u[3], v[3];
    int depth;
} ppiece;

#define BISECT_MAX_DEPTH 48

/* Splits triangle t into pieces whose edges are at most h long (in
 * space): each split halves a piece through the midpoint of the edge that
 * is longest in space, from the opposite corner.  The halves tile the
 * piece exactly in (u, v), and a long thin triangle is cut across its
 * length only, not into 4^d cells as a grid would.  With out NULL the
 * pieces are only counted.  Returns their number. */
static size_t split_triangle(const sctx *s, size_t t, double h, leaf *out)
{
    rp_vec3 a, b, c;
    tri_corners(s, t, &a, &b, &c);
    rp_vec3 ab = v3_sub(b, a), ac = v3_sub(c, a);
    ppiece stack[BISECT_MAX_DEPTH + 2];
    int top = 0;
    stack[top++] = (ppiece){{0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, 0};
    size_t n = 0;
    double h2 = h * h;
    while (top > 0) {
        ppiece pc = stack[--top];
        rp_vec3 q[3];
        for (int i = 0; i < 3; i++)
            q[i] = pc.depth == 0 ? (i == 0   ? a
                                    : i == 1 ? b
                                             : c)
                                 : param_point(a, ab, ac, pc.u[i], pc.v[i]);
        double e[3] = {dist2(q[1], q[2]), dist2(q[2], q[0]), dist2(q[0], q[1])};
        int k = e[0] >= e[1] && e[0] >= e[2] ? 0 : e[1] >= e[2] ? 1 : 2;
        if (!(e[k] > h2) || pc.depth >= BISECT_MAX_DEPTH) {
            if (out) {
                out[n].p[0] = q[0];
                out[n].p[1] = q[1];
                out[n].p[2] = q[2];
            }
            n++;
            continue;
        }
        /* Edge k is opposite corner k: split it at its midpoint m. */
        int i = (k + 1) % 3, j = (k + 2) % 3;
        double mu = 0.5 * (pc.u[i] + pc.u[j]), mv = 0.5 * (pc.v[i] + pc.v[j]);
        ppiece h1 = pc, hb = pc;
        h1.u[j] = mu, h1.v[j] = mv;
        hb.u[i] = mu, hb.v[i] = mv;
        h1.depth = hb.depth = pc.depth + 1;
        stack[top++] = hb;
        stack[top++] = h1;
    }
    return n;
}

/* Step 4's pieces: every triangle split into pieces whose edges are at
 * most h (h doubled until there are at most LEAF_CAP pieces, or each
 * triangle is one). */
static rp_status make_leaves(sctx *s, double h)
{
    size_t total;
    for (;;) {
        total = 0;
        for (size_t t = 0; t < s->nt && total <= LEAF_CAP; t++)
            total += split_triangle(s, t, h, NULL);
        if (total <= LEAF_CAP || total == s->nt)
            break;
        h *= 2.0;
    }
    if (total > s->leaves_cap) {
        free(s->leaves);
        free(s->leaf_asg);
        free(s->gather);
        free(s->order);
        s->leaves = malloc(total * sizeof *s->leaves);
        s->leaf_asg = malloc(total * sizeof *s->leaf_asg);
        s->gather = malloc((3 * total + (s->ns - s->ns_surf)) * sizeof *s->gather);
        s->order = malloc(total * sizeof *s->order);
        s->leaves_cap = total;
        if (!s->leaves || !s->leaf_asg || !s->gather || !s->order) {
            s->leaves_cap = 0;
            return RP_ERR_NOMEM;
        }
    }
    size_t n = 0;
    for (size_t t = 0; t < s->nt; t++)
        n += split_triangle(s, t, h, s->leaves + n);
    s->nleaves = n;
    return RP_OK;
}

/* The largest computed distance from c to a corner of lf. */
static double leaf_reach(const leaf *lf, rp_vec3 c)
{
    return sqrt(max3(dist2(lf->p[0], c), dist2(lf->p[1], c), dist2(lf->p[2], c)));
}

/* The ball of b[0..k) that leaf lf makes grow least (reach - radius; the
 * lowest index on a tie); its reach in *reach. */
static uint32_t least_growth(const leaf *lf, const ball *b, size_t k, double *reach)
{
    uint32_t bj = 0;
    double bg = INFINITY, br = 0.0;
    for (size_t j = 0; j < k; j++) {
        if (b[j].r < 0.0)
            continue;
        double rr = leaf_reach(lf, b[j].c), g = rr - b[j].r;
        if (g < bg) {
            bg = g;
            br = rr;
            bj = (uint32_t)j;
        }
    }
    *reach = br;
    return bj;
}

/* The ball of b[0..k) that point p makes grow least; its reach in *reach. */
static uint32_t least_growth_point(rp_vec3 p, const ball *b, size_t k, double *reach)
{
    leaf lf = {{p, p, p}};
    return least_growth(&lf, b, k, reach);
}

/* Refits b[0..k) to the leaves and interior samples each was given:
 * minimum enclosing balls of their points (r = -1 for a ball given none). */
static void refit(sctx *s, ball *b, size_t k, uint32_t *cnt)
{
    size_t n_in = s->ns - s->ns_surf;
    const rp_vec3 *in = s->samples + s->ns_surf;
    memset(cnt, 0, (k + 1) * sizeof *cnt);
    for (size_t i = 0; i < s->nleaves; i++)
        cnt[s->leaf_asg[i] + 1]++;
    for (size_t j = 0; j < k; j++)
        cnt[j + 1] += cnt[j];
    for (size_t i = 0; i < s->nleaves; i++)
        s->order[cnt[s->leaf_asg[i]]++] = (uint32_t)i;
    size_t begin = 0;
    for (size_t j = 0; j < k; j++) {
        size_t end = cnt[j], n = 0;
        for (size_t i = begin; i < end; i++)
            for (int q = 0; q < 3; q++)
                s->gather[n++] = s->leaves[s->order[i]].p[q];
        for (size_t i = 0; i < n_in; i++)
            if (s->in_asg[i] == j)
                s->gather[n++] = in[i];
        if (n == 0) {
            b[j].r = -1.0;
        } else {
            ball m = meb(s->gather, n);
            b[j].c = clamp_box(s, m.c);
            double r2 = 0.0;
            for (size_t i = 0; i < n; i++)
                r2 = max2(r2, dist2(b[j].c, s->gather[i]));
            b[j].r = sqrt(r2);
        }
        begin = end;
    }
}

/* The radius that covers every exact corner at computed distance <= reach
 * from a centre: the bound of the file comment. */
static double inflate(double reach, double m)
{
    return reach * (1.0 + 0x1p-48) + (0x1p-47 * m + 0x1p-500);
}

/* Step 4 from the clustered balls seed[0..k): the final spheres into
 * out[0..*n_out) and their estimated overshoot into *overshoot.  cnt has
 * k + 1 entries of scratch. */
static rp_status cover(sctx *s, const ball *seed, size_t k, int passes, ball *work, uint32_t *cnt,
                       rp_sphere *out, size_t *n_out, double *overshoot)
{
    size_t n_in = s->ns - s->ns_surf;
    const rp_vec3 *in = s->samples + s->ns_surf;
    double sum = 0.0;
    size_t live = 0;
    for (size_t j = 0; j < k; j++) {
        work[j] = seed[j];
        if (seed[j].r > 0.0) {
            sum += seed[j].r;
            live++;
        }
    }
    double h = live > 0 ? LEAF_FRACTION * sum / (double)live : INFINITY;
    rp_status st = make_leaves(s, h);
    if (st)
        return st;
    double reach;
    for (int pass = 0; pass < passes; pass++) {
        for (size_t i = 0; i < s->nleaves; i++)
            s->leaf_asg[i] = least_growth(&s->leaves[i], work, k, &reach);
        for (size_t i = 0; i < n_in; i++)
            s->in_asg[i] = least_growth_point(in[i], work, k, &reach);
        refit(s, work, k, cnt);
    }
    /* The last hand-out grows each ball as it goes, so that later leaves see
     * the room earlier ones made; the leaves' reaches set the radii.  The
     * interior samples may make a ball larger still (to fill a solid), never
     * smaller. */
    double *cov = malloc(2 * k * sizeof *cov), *fill = cov + k;
    if (!cov)
        return RP_ERR_NOMEM;
    for (size_t j = 0; j < k; j++) {
        cov[j] = -1.0;
        fill[j] = 0.0;
    }
    for (size_t i = 0; i < s->nleaves; i++) {
        uint32_t j = least_growth(&s->leaves[i], work, k, &reach);
        cov[j] = max2(cov[j], reach);
        work[j].r = max2(work[j].r, reach);
    }
    for (size_t i = 0; i < n_in; i++) {
        uint32_t j = least_growth_point(in[i], work, k, &reach);
        fill[j] = max2(fill[j], reach);
    }
    size_t n = 0;
    for (size_t j = 0; j < k; j++) {
        if (cov[j] < 0.0 && !(fill[j] > 0.0)) {
            work[j].r = -1.0;
            continue;
        }
        /* The surface's reach sets the radius (the cover's promise); a
         * ball that holds only interior samples is kept at their reach. */
        work[j].r = cov[j] < 0.0 ? fill[j] : inflate(cov[j], s->m);
        out[n].center = work[j].c;
        out[n].radius = work[j].r;
        n++;
    }
    free(cov);
    *n_out = n;
    *overshoot = estimate(s, work, k);
    return RP_OK;
}

/* ---- step 3b: seeds on the medial axis of a closed mesh ------------------------ */

/* Balls centred inside the solid, each of radius its centre's distance to
 * the surface plus one slack delta: for a solid, good covers sit on its
 * medial axis (a rounded cylinder's on its axis, where a ball bulges out
 * by about slice^2 / 8r, where a ball centred on the surface bulges out by
 * its whole radius), which neither clustering the samples nor a grid
 * finds.  For k balls, the least delta (bisection) for which a greedy set
 * cover of the surface samples needs at most k of them gives the seeds;
 * surface samples are candidates too (radius delta), for rims and thin
 * parts where no deep ball fits.  Quality only, like every seed. */
#define MEDIAL_CANDIDATES 384
#define MEDIAL_SURFACE 1024
#define MEDIAL_WORDS (MEDIAL_SURFACE / 64)

typedef struct medial {
    size_t nc, np;
    rp_vec3 c[MEDIAL_CANDIDATES];
    double d[MEDIAL_CANDIDATES];                   /* distance to the surface */
    float need[MEDIAL_CANDIDATES][MEDIAL_SURFACE]; /* slack that covers sample p */
    uint64_t row[MEDIAL_CANDIDATES][MEDIAL_WORDS];
} medial;

static medial *medial_new(const sctx *s)
{
    size_t n_in = s->ns - s->ns_surf;
    if (!s->closed || n_in == 0 || s->ns_surf == 0)
        return NULL;
    medial *md = calloc(1, sizeof *md);
    if (!md)
        return NULL;
    size_t n_deep = n_in < 2 * MEDIAL_CANDIDATES / 3 ? n_in : 2 * MEDIAL_CANDIDATES / 3;
    size_t n_surf = MEDIAL_CANDIDATES - n_deep;
    if (n_surf > s->ns_surf)
        n_surf = s->ns_surf;
    md->nc = n_deep + n_surf;
    md->np = s->ns_surf < MEDIAL_SURFACE ? s->ns_surf : MEDIAL_SURFACE;
    for (size_t i = 0; i < md->nc; i++) {
        md->c[i] = i < n_deep ? s->samples[s->ns_surf + i * n_in / n_deep]
                              : s->samples[(i - n_deep) * s->ns_surf / n_surf];
        md->d[i] = i < n_deep ? sqrt(mesh_d2(s, md->c[i], 0.0)) : 0.0; /* (exact: no early stop) */
    }
    for (size_t i = 0; i < md->nc; i++)
        for (size_t q = 0; q < md->np; q++) {
            rp_vec3 p = s->samples[q * s->ns_surf / md->np];
            md->need[i][q] = (float)(sqrt(dist2(p, md->c[i])) - md->d[i]);
        }
    return md;
}

/* The greedy cover at slack delta with at most k balls (their candidates
 * into pick[]); how many it took, or k + 1 when k do not cover. */
static size_t medial_greedy(medial *md, double delta, size_t k, size_t *pick)
{
    uint64_t covered[MEDIAL_WORDS] = {0};
    size_t words = (md->np + 63) / 64;
    for (size_t i = 0; i < md->nc; i++) {
        memset(md->row[i], 0, sizeof md->row[i]);
        for (size_t q = 0; q < md->np; q++)
            if (md->need[i][q] <= delta)
                md->row[i][q / 64] |= (uint64_t)1 << (q % 64);
    }
    size_t left = md->np;
    for (size_t n = 0; n < k; n++) {
        size_t best = SIZE_MAX, gain = 0;
        for (size_t i = 0; i < md->nc; i++) {
            size_t g = 0;
            for (size_t w = 0; w < words; w++)
                g += (size_t)__builtin_popcountll(md->row[i][w] & ~covered[w]);
            if (g > gain) {
                gain = g;
                best = i;
            }
        }
        if (best == SIZE_MAX)
            return k + 1;
        pick[n] = best;
        for (size_t w = 0; w < words; w++)
            covered[w] |= md->row[best][w];
        left -= gain;
        if (left == 0)
            return n + 1;
    }
    return k + 1;
}

/* Up to k medial seeds into b; how many (0: none). */
static size_t medial_seeds(medial *md, size_t k, ball *b)
{
    if (!md || k == 0)
        return 0;
    size_t *pick = malloc(k * sizeof *pick), *got = malloc(k * sizeof *got);
    size_t n = 0;
    if (pick && got) {
        double lo = 0.0, hi = 0.0;
        for (size_t i = 0; i < md->nc; i++)
            for (size_t q = 0; q < md->np; q++)
                hi = max2(hi, (double)md->need[i][q]);
        n = medial_greedy(md, hi, k, got);
        for (int it = 0; it < 14 && n <= k; it++) {
            double mid = 0.5 * (lo + hi);
            size_t m = medial_greedy(md, mid, k, pick);
            if (m <= k) {
                hi = mid;
                n = m;
                memcpy(got, pick, m * sizeof *got);
            } else {
                lo = mid;
            }
        }
        if (n > k)
            n = 0;
        for (size_t j = 0; j < n; j++)
            b[j] = (ball){md->c[got[j]], md->d[got[j]] + hi};
    }
    free(pick);
    free(got);
    return n;
}

/* Seeds from a grid over the bounding box: at most c cells, as near cubes
 * as the box allows (a thin side gets one cell), each a ball around the
 * cell when a sample lies in it.  For a solid, boxes above all, such
 * balls fill the inside with their centres deep in it, which clustering
 * does not find.  Returns the number of seeds written to b (<= c). */
static size_t grid_seeds(const sctx *s, size_t c, ball *b)
{
    rp_vec3 ext = v3_sub(s->hi, s->lo);
    double e[3] = {ext.x, ext.y, ext.z}, vol = 1.0;
    int dims = 0;
    for (int q = 0; q < 3; q++) {
        if (e[q] > 0.0) {
            vol *= e[q];
            dims++;
        }
    }
    if (dims == 0)
        return 0;
    double cell = pow(vol / (double)c, 1.0 / dims);
    size_t n[3];
    for (;;) {
        for (int q = 0; q < 3; q++)
            n[q] = e[q] > 0.0 ? (size_t)fmax(1.0, round(e[q] / cell)) : 1;
        if (n[0] * n[1] * n[2] <= c)
            break;
        cell *= 1.0625;
    }
    rp_vec3 half =
        v3(0.5 * e[0] / (double)n[0], 0.5 * e[1] / (double)n[1], 0.5 * e[2] / (double)n[2]);
    double r = sqrt(v3_dot(half, half));
    size_t k = 0;
    for (size_t i = 0; i < n[0]; i++) {
        for (size_t j = 0; j < n[1]; j++) {
            for (size_t l = 0; l < n[2]; l++) {
                rp_vec3 cc = v3(s->lo.x + half.x * (double)(2 * i + 1),
                                s->lo.y + half.y * (double)(2 * j + 1),
                                s->lo.z + half.z * (double)(2 * l + 1));
                int used = 0;
                for (size_t q = 0; q < s->ns && !used; q++) {
                    rp_vec3 d = v3_sub(s->samples[q], cc);
                    used = fabs(d.x) <= half.x && fabs(d.y) <= half.y && fabs(d.z) <= half.z;
                }
                if (used) {
                    b[k].c = cc;
                    b[k].r = r;
                    k++;
                }
            }
        }
    }
    return k;
}

/* ---- the API ----------------------------------------------------------------- */

static rp_status check_mesh(const rp_trimesh *mesh, sctx *s)
{
    if (mesh->n_triangles == 0 || !mesh->triangles || (mesh->n_vertices > 0 && !mesh->vertices))
        return RP_ERR_INVALID_ARG;
    if (mesh->n_triangles > UINT32_MAX / 4 || mesh->n_vertices > SIZE_MAX / 24)
        return RP_ERR_LIMIT;
    double m = 0.0;
    for (size_t i = 0; i < 3 * mesh->n_vertices; i++) {
        double x = mesh->vertices[i];
        if (!isfinite(x))
            return RP_ERR_NONFINITE;
        m = max2(m, fabs(x));
    }
    if (m > RP_SPHERIZE_MAX_COORD)
        return RP_ERR_LIMIT;
    for (size_t i = 0; i < 3 * mesh->n_triangles; i++)
        if (mesh->triangles[i] >= mesh->n_vertices)
            return RP_ERR_INVALID_ARG;
    s->vx = mesh->vertices;
    s->tris = mesh->triangles;
    s->nt = mesh->n_triangles;
    s->m = m;
    s->lo = v3(INFINITY, INFINITY, INFINITY);
    s->hi = v3(-INFINITY, -INFINITY, -INFINITY);
    for (size_t i = 0; i < 3 * s->nt; i++)
        grow_box(&s->lo, &s->hi, vert(s, s->tris[i]));
    return RP_OK;
}

static void sctx_free(sctx *s)
{
    free(s->samples);
    free(s->leaves);
    free(s->leaf_asg);
    free(s->gather);
    free(s->order);
    free(s->in_asg);
    free(s->nodes);
    free(s->tri_order);
}

static void clus_free(clus *cl)
{
    free(cl->b);
    free(cl->best);
    free(cl->asg);
    free(cl->cnt);
    free(cl->ord);
    free(cl->tmp);
    free(cl->near2);
}

/* Covers from seeds b[0..g) (nothing when g is 0) into *spare; when it
 * beats *cand's overshoot *over, the two swap and *n, *over follow. */
static rp_status try_seeds(sctx *s, const ball *b, size_t g, int passes, ball *work, uint32_t *cnt,
                           rp_sphere **cand, rp_sphere **spare, size_t *n, double *over)
{
    if (g == 0)
        return RP_OK;
    size_t n2 = 0;
    double over2 = INFINITY;
    rp_status st = cover(s, b, g, passes, work, cnt, *spare, &n2, &over2);
    if (st || !(over2 < *over))
        return st;
    rp_sphere *t = *cand;
    *cand = *spare;
    *spare = t;
    *n = n2;
    *over = over2;
    return RP_OK;
}

/* The candidates for the final cover with max_overshoot 0: 1, 2, 4, ... and
 * the budget. */
static int is_candidate(size_t k, size_t budget)
{
    return k == budget || (k & (k - 1)) == 0;
}

rp_status rp_spherize(const rp_trimesh *mesh, const rp_spherize_opts *opts, rp_spherize_result *out)
{
    if (!mesh || !out)
        return RP_ERR_INVALID_ARG;
    size_t budget = opts && opts->max_spheres ? opts->max_spheres : RP_SPHERIZE_DEFAULT_SPHERES;
    double goal = opts ? opts->max_overshoot : 0.0;
    if (!(goal >= 0.0) || !isfinite(goal))
        return RP_ERR_INVALID_ARG;
    sctx s;
    memset(&s, 0, sizeof s);
    rp_status st = check_mesh(mesh, &s);
    if (st)
        return st;

    clus cl;
    memset(&cl, 0, sizeof cl);
    ball *work = NULL;
    rp_sphere *best = NULL, *cand = NULL, *cand2 = NULL;
    ball *gridb = NULL;
    medial *med = NULL;
    size_t best_n = 0;
    double best_over = INFINITY;
    st = make_samples(&s);
    if (!st)
        st = bvh_make(&s);
    if (!st)
        st = add_interior(&s, mesh->n_vertices);
    if (st)
        goto done;
    s.in_asg = malloc((s.ns - s.ns_surf + 1) * sizeof *s.in_asg);
    /* No more balls than samples: a ball beyond that would be empty. */
    if (budget > s.ns)
        budget = s.ns;
    cl.b = malloc(budget * sizeof *cl.b);
    cl.best = malloc(budget * sizeof *cl.best);
    cl.asg = calloc(s.ns, sizeof *cl.asg);
    cl.cnt = malloc((budget + 1) * sizeof *cl.cnt);
    cl.ord = malloc(s.ns * sizeof *cl.ord);
    cl.tmp = malloc(s.ns * sizeof *cl.tmp);
    cl.near2 = malloc(s.ns * sizeof *cl.near2);
    work = malloc(budget * sizeof *work);
    best = malloc(budget * sizeof *best);
    cand = malloc(budget * sizeof *cand);
    cand2 = malloc(budget * sizeof *cand2);
    gridb = malloc(budget * sizeof *gridb);
    st = RP_ERR_NOMEM;
    if (!cl.b || !cl.best || !cl.asg || !cl.cnt || !cl.ord || !cl.tmp || !cl.near2 || !work ||
        !best || !cand || !cand2 || !gridb || !s.in_asg)
        goto done;
    make_lattice(&s);
    med = medial_new(&s); /* (NULL: no medial seeds; out of memory too) */

    /* With a goal: the first k whose clustered balls meet it, or the last.
     * Without: the best of the candidates, and of the last k when the
     * samples ran out of distinct points before the budget. */
    size_t covered_k = 0;
    for (;;) {
        int more = cl.k < budget && cluster_step(&s, &cl);
        int last = !more || cl.k == budget;
        /* The candidates: the powers of two and the budget (with a goal,
         * until one meets it: each costs three covers). */
        int want = last || is_candidate(cl.k, budget);
        if (want && cl.k != covered_k) {
            size_t n;
            double over;
            st = cover(&s, cl.best, cl.k, REFINE_PASSES, work, cl.cnt, cand, &n, &over);
            if (st)
                goto done;
            covered_k = cl.k;
            /* The grid's seeds, then the medial ones as placed (a refit
             * would pull them off the axis towards the surface), from 4
             * balls on, where they pay for the cover each costs (every
             * candidate k >= 4, so a budget still sees each candidate of a
             * smaller power-of-two budget). */
            st = try_seeds(&s, gridb, grid_seeds(&s, cl.k, gridb), REFINE_PASSES, work, cl.cnt,
                           &cand, &cand2, &n, &over);
            if (!st)
                st = try_seeds(&s, gridb, cl.k >= 4 ? medial_seeds(med, cl.k, gridb) : 0, 0, work,
                               cl.cnt, &cand, &cand2, &n, &over);
            if (st)
                goto done;
            /* The best so far; with a goal, the first that meets it ends
             * the search (else the best of all, as without one). */
            int met = goal > 0.0 && over <= goal;
            if (over < best_over || met) {
                rp_sphere *t = best;
                best = cand;
                cand = t;
                best_n = n;
                best_over = over;
            }
            if (met)
                break;
        }
        if (last)
            break;
    }
    out->spheres = best;
    out->n_spheres = best_n;
    out->overshoot = best_over;
    best = NULL;
    st = RP_OK;
done:
    free(med);
    free(best);
    free(cand);
    free(cand2);
    free(gridb);
    free(work);
    clus_free(&cl);
    sctx_free(&s);
    return st;
}

void rp_spherize_result_free(rp_spherize_result *r)
{
    if (!r)
        return;
    free(r->spheres);
    r->spheres = NULL;
    r->n_spheres = 0;
    r->overshoot = 0.0;
}
