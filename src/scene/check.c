/* SPDX-License-Identifier: MIT */
/*
 * Robot checks: one configuration of a model against a scene and itself.
 *
 * Link shapes are moved into the world once per check.  Link-scene pairs go
 * through the scene's per-shape queries (rp_scene_nearest_, rp_scene_below_
 * in bvh.c), never through a scan of our own, so the bounding-volume
 * hierarchy does the pruning.  Link-link pairs are the ones the model's skip
 * matrix leaves eligible.
 *
 * Every report mode walks the pairs in one canonical order: links
 * ascending, and for each link its scene pairs, then its self pairs with
 * higher links ascending.  That order is the tie rule of scene.h minus the
 * distance, so the running minimum only changes hands when a later pair is
 * strictly closer, and rp_scene_nearest_'s bound semantics (carried-in ties
 * never win) do the rest.  Violations are sorted afterwards, so nothing
 * depends on the order in which the tree visits shapes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "simd.h"
#include "util/grow.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RP_HAVE_AVX2_PATH 1
#endif

/* Links whose world shapes live on the stack, so that a FIRST check (the
 * planners' fast path) allocates nothing unless it finds a collision.
 * 64 shapes are 4 KiB. */
#define STACK_LINKS 64

/* Moves every link shape into the world: joint frame f's pose for links on
 * frame f, the base pose (identity when NULL) for links on the base.
 * Valid shapes moved by valid poses can still land beyond the largest
 * double (a link at 1e308 translated by 1e308): RP_ERR_NONFINITE then, and
 * *bad_link names the first such link. */
rp_status rp_place_links_(const rp_model *m, const rp_transform *base, const rp_transform *frames,
                          rp_shape *world, size_t *bad_link)
{
    rp_transform identity;
    if (!base) {
        identity = rp_transform_identity();
        base = &identity;
    }
    double probe = 0.0;
    for (size_t k = 0; k < m->n_links; k++) {
        rp_link_shape ls = {m->links[k].shape, m->links[k].frame};
        world[k] = rp_link_shape_transform_shape(&ls, ls.frame < 0 ? base : &frames[ls.frame]);
        probe += rp_link_probe_(&world[k]);
        if (probe != 0.0) {
            *bad_link = k;
            return RP_ERR_NONFINITE;
        }
    }
    return RP_OK;
}

/* Appends a pair to the result's violations; false when out of memory. */
static bool push_violation(rp_check_result *r, size_t link, rp_pair_kind kind, size_t other,
                           double distance)
{
    if (r->n_violations == r->cap_violations) {
        rp_check_pair *grown =
            rp_grow_(r->violations, &r->cap_violations, r->n_violations + 1, sizeof *grown, 8);
        if (!grown)
            return false;
        r->violations = grown;
    }
    rp_check_pair p = {link, kind, other, distance};
    r->violations[r->n_violations++] = p;
    return true;
}

/* ---- allowed scene pairs -------------------------------------------------------- */

size_t rp_allowed_scene_want_(const rp_model *m, const rp_scene *sc, size_t k)
{
    size_t n = 0;
    if (!m->as_first)
        return 0;
    for (size_t e = m->as_first[k]; e < m->as_first[k + 1]; e++) {
        const rp_object *o = sc && sc->objects ? rp_scene_object_find(sc, m->as_ids[e]) : NULL;
        n += o ? (o->cloud ? 2 : rp_object_shape_count(o)) : 1; /* a cloud: a range */
    }
    return n;
}

size_t rp_allowed_scene_resolve_(const rp_model *m, const rp_scene *sc, size_t k, size_t *out,
                                 size_t cap)
{
    size_t n = 0;
    if (!m->as_first)
        return 0;
    for (size_t e = m->as_first[k]; e < m->as_first[k + 1] && n < cap; e++) {
        /* An object's or robot instance's name stands for all its shapes. */
        const rp_object *o = sc->objects ? rp_scene_object_find(sc, m->as_ids[e]) : NULL;
        if (o && o->cloud) { /* its spheres' storage indices, as a range */
            size_t first = sc->count;
            for (size_t j = 0; sc->objects->clouds[j] != o; j++)
                first += sc->objects->clouds[j]->cloud->n;
            if (n + 2 <= cap && o->cloud->n) {
                out[n++] = first | RP_EXCL_RANGE;
                out[n++] = first + o->cloud->n;
            }
            continue;
        }
        for (size_t j = 0; o && j < rp_object_shape_count(o) && n < cap; j++) {
            char id[2 * 130 + 2];
            snprintf(id, sizeof id, "%s/%s", rp_object_name(o), rp_object_shape_at(o, j)->id);
            size_t idx = rp_scene_find(sc, id);
            if (idx != SIZE_MAX)
                out[n++] = idx;
        }
        if (o)
            continue;
        size_t idx = rp_scene_find(sc, m->as_ids[e]);
        if (idx != SIZE_MAX)
            out[n++] = idx;
    }
    return n;
}

/* The scene shapes link k may touch, as storage indices: in the caller's
 * buffer when they fit, else in a heap block the caller frees (*heap). */
#define EXCL_STACK 32
typedef struct excl_set {
    size_t buf[EXCL_STACK];
    size_t *v, n;
    size_t *heap;
} excl_set;

static bool excl_load(excl_set *x, const rp_model *m, const rp_scene *sc, size_t k)
{
    x->v = x->buf;
    x->n = 0;
    x->heap = NULL;
    if (!m->as_first || m->as_first[k] == m->as_first[k + 1])
        return true;
    size_t want = rp_allowed_scene_want_(m, sc, k);
    if (want > EXCL_STACK) {
        x->heap = malloc(want * sizeof *x->heap);
        if (!x->heap)
            return false;
        x->v = x->heap;
    }
    x->n = rp_allowed_scene_resolve_(m, sc, k, x->v, want);
    return true;
}

static bool excl_has(const excl_set *x, size_t e)
{
    return x && rp_excl_has_(x->v, x->n, e);
}

/* ---- broadphase ------------------------------------------------------------------ */

/* The model's bounding balls (model_int.h) placed for one check.  Every
 * skip they allow is of pairs whose distances cannot matter (at or above
 * the margin, or above the running minimum), and the pairs that are
 * evaluated are reported by the canonical order, so results equal those
 * of the plain path bit for bit.  Balls enclose their shapes as placed
 * (radii are rounded up), and a ball around a shape bounds its signed
 * distance from below, penetrations included (for convex sets the signed
 * distance only shrinks when a set grows).  `slack` covers the rounding of
 * the bound and of the kernels (16 eps S, geometry.h) with a wide margin,
 * S being the size of the robot's spheres.  (A scene shape whose own
 * coordinates are thousands of times larger than the robot's reach, such
 * as a kilometre-long capsule passing by, has a kernel error beyond that
 * slack: a distance within that error of the margin may then be judged on
 * either side of it by the two paths.)
 *
 * Shapes are placed only when a test needs them (state[k] is PLACED when
 * w[k] holds shape k in the world), and a slot's balls when a block of
 * self pairs needs them (px, py, pz: their centres in the world, in
 * slot_shapes order). */
enum { PLACED = 1 };

typedef struct bp_check {
    const rp_model *m;
    size_t slots;
    const rp_transform *tf[RP_BOUND_SLOTS]; /* slot pose: base, then frames */
    rp_vec3 wc[RP_BOUND_SLOTS];
    double size[RP_BOUND_SLOTS]; /* largest |coordinate| of the sphere */
    bool balled[RP_BOUND_SLOTS];
    rp_shape *w;
    uint8_t *state;
    double *px, *py, *pz;
} bp_check;

/* Places the slot spheres.  False (take the plain path) when a sphere
 * reaches beyond 1e300, where sums of coordinates could overflow: then
 * every shape is inside it and finite, which the lazy placement relies on. */
static bool bp_setup(bp_check *b, const rp_model *m, const rp_transform *base,
                     const rp_transform *frames, const rp_transform *identity)
{
    b->m = m;
    b->slots = m->frame_count + 1;
    for (size_t s = 0; s < b->slots; s++) {
        b->tf[s] = s == 0 ? (base ? base : identity) : &frames[s - 1];
        b->wc[s] = rp_xf_point_(b->tf[s], m->bounds[s].c);
        double big = fmax(fmax(fabs(b->wc[s].x), fabs(b->wc[s].y)), fabs(b->wc[s].z));
        b->size[s] = big + m->bounds[s].r;
        if (!(b->size[s] < 1e300))
            return false;
    }
    return true;
}

static inline double bp_slack(const bp_check *b, size_t s, size_t t)
{
    return 1e-13 * (b->size[s] + b->size[t] + 1.0);
}

/* Lower bound of the signed distance between any shape of slot u and any
 * of slot v. */
static inline double slot_lb(const bp_check *b, size_t u, size_t v)
{
    const rp_model *m = b->m;
    rp_vec3 d = {b->wc[u].x - b->wc[v].x, b->wc[u].y - b->wc[v].y, b->wc[u].z - b->wc[v].z};
    return sqrt(d.x * d.x + d.y * d.y + d.z * d.z) - m->bounds[u].r - m->bounds[v].r -
           bp_slack(b, u, v);
}

/* Shape k in the world, as rp_place_links_ computes it (same arithmetic,
 * so the same bits). */
static inline const rp_shape *placed_shape(const bp_check *b, size_t k)
{
    if (!(b->state[k] & PLACED)) {
        const rp_link *l = &b->m->links[k];
        const rp_transform *tf = b->tf[l->frame + 1];
        rp_place_shape_(tf, &l->shape, &b->w[k]);
        b->state[k] |= PLACED;
    }
    return &b->w[k];
}

/* The world centres of slot s's balls (once per check). */
static void slot_balls(bp_check *b, size_t s)
{
    if (b->balled[s])
        return;
    const rp_model *m = b->m;
    const rp_transform *tf = b->tf[s];
    for (uint32_t p = m->slot_first[s]; p < m->slot_first[s + 1]; p++) {
        rp_vec3 c = rp_xf_point_(tf, m->balls[m->slot_shapes[p]].c);
        b->px[p] = c.x;
        b->py[p] = c.y;
        b->pz[p] = c.z;
    }
    b->balled[s] = true;
}

/* ---- ball filters ---------------------------------------------------------------
 *
 * Balls i < n (centres x, y, z, radii r, from position 0 of the arrays)
 * that may come within `at` of the point (px, py, pz) beyond their own
 * radius: t = at + r[i] >= 0 and |c_i - p|^2 <= t^2 * RP_SQUARE_SLACK.  The
 * squares are compared with a margin for their rounding, far below the
 * broadphase's slack, so a ball is only ever kept in doubt: callers put
 * their limit, slack and the other side's radius into `at`.  The AVX2 code
 * does the same operations in the same order (no fused multiply-add), so
 * both give the same bits. */
static uint64_t balls_near_portable(const double *x, const double *y, const double *z,
                                    const double *r, size_t n, double px, double py, double pz,
                                    double at)
{
    uint64_t keep = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = px - x[i], dy = py - y[i], dz = pz - z[i];
        double d2 = dx * dx + dy * dy + dz * dz;
        double t = at + r[i];
        keep |= (uint64_t)(t >= 0.0 && d2 <= t * t * RP_SQUARE_SLACK) << i;
    }
    return keep;
}

#ifdef RP_HAVE_AVX2_PATH
__attribute__((target("avx2"))) static uint64_t balls_near_avx2(const double *x, const double *y,
                                                                const double *z, const double *r,
                                                                size_t n, double px, double py,
                                                                double pz, double at)
{
    __m256d vx = _mm256_set1_pd(px), vy = _mm256_set1_pd(py), vz = _mm256_set1_pd(pz);
    __m256d vat = _mm256_set1_pd(at), zero = _mm256_setzero_pd(),
            slack = _mm256_set1_pd(RP_SQUARE_SLACK);
    uint64_t keep = 0;
    for (size_t i = 0; i < n; i += 4) {
        __m256d cx, cy, cz, cr;
        if (n - i >= 4) {
            cx = _mm256_loadu_pd(x + i);
            cy = _mm256_loadu_pd(y + i);
            cz = _mm256_loadu_pd(z + i);
            cr = _mm256_loadu_pd(r + i);
        } else { /* the tail: no read past the arrays */
            static const int64_t lanes[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
            __m256i m = _mm256_loadu_si256((const __m256i *)(lanes + 4 - (n - i)));
            cx = _mm256_maskload_pd(x + i, m);
            cy = _mm256_maskload_pd(y + i, m);
            cz = _mm256_maskload_pd(z + i, m);
            cr = _mm256_maskload_pd(r + i, m);
        }
        __m256d dx = _mm256_sub_pd(vx, cx), dy = _mm256_sub_pd(vy, cy), dz = _mm256_sub_pd(vz, cz);
        __m256d d2 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
                                   _mm256_mul_pd(dz, dz));
        __m256d t = _mm256_add_pd(vat, cr);
        __m256d in =
            _mm256_and_pd(_mm256_cmp_pd(t, zero, _CMP_GE_OQ),
                          _mm256_cmp_pd(d2, _mm256_mul_pd(_mm256_mul_pd(t, t), slack), _CMP_LE_OQ));
        keep |= (uint64_t)(unsigned)_mm256_movemask_pd(in) << i;
    }
    return n < 64 ? keep & (((uint64_t)1 << n) - 1) : keep;
}
#endif

static inline uint64_t balls_near(const double *x, const double *y, const double *z,
                                  const double *r, size_t n, double px, double py, double pz,
                                  double at)
{
#ifdef RP_HAVE_AVX2_PATH
    if (rp_simd_enabled_())
        return balls_near_avx2(x, y, z, r, n, px, py, pz, at);
#endif
    return balls_near_portable(x, y, z, r, n, px, py, pz, at);
}

/* Word w (64 positions) of slot v's balls that come within lim of slot u's
 * sphere, with the pair's slack. */
static uint64_t slot_side(const bp_check *b, size_t v, size_t u, uint32_t w, double lim,
                          double slack)
{
    const rp_model *m = b->m;
    size_t v0 = m->slot_first[v] + 64 * (size_t)w, nv = m->slot_first[v + 1] - v0;
    return balls_near(b->px + v0, b->py + v0, b->pz + v0, m->slot_ball_r + v0, nv < 64 ? nv : 64,
                      b->wc[u].x, b->wc[u].y, b->wc[u].z, lim + slack + m->bounds[u].r);
}

/* Of the candidates `cand` (bits over slot v's balls, word w), those whose
 * ball pair with position a may have a distance at or below lim:
 * |c_a - c_b| - r_a - r_b - slack > lim rules a pair out. */
static uint64_t row_near(const bp_check *b, const rp_pair_block *blk, size_t a, uint32_t w,
                         double lim, double slack, uint64_t cand)
{
    const rp_model *m = b->m;
    size_t v0 = m->slot_first[blk->v] + 64 * (size_t)w, nv = m->slot_first[blk->v + 1] - v0;
    double at = lim + m->slot_ball_r[a] + slack;
    return cand & balls_near(b->px + v0, b->py + v0, b->pz + v0, m->slot_ball_r + v0,
                             nv < 64 ? nv : 64, b->px[a], b->py[a], b->pz[a], at);
}

/* ---- report first ------------------------------------------------------------- */

typedef struct first_hit {
    size_t index;
    double distance;
    const excl_set *excl;
} first_hit;

/* rp_scene_below_ visitor for FIRST: keeps the shape and stops the scan. */
static bool stop_at_first(void *ctx, size_t index, double distance)
{
    first_hit *h = ctx;
    if (excl_has(h->excl, index))
        return true;
    h->index = index;
    h->distance = distance;
    return false;
}

/* Makes the pair FIRST found the result's one violation. */
static rp_status report_first(rp_check_result *out, size_t link, rp_pair_kind kind, size_t other,
                              double distance)
{
    if (!push_violation(out, link, kind, other, distance))
        return RP_ERR_NOMEM;
    out->collision = true;
    return RP_OK;
}

/* FIRST's scene query for shape i (placed in w[i]): *done when it found a
 * violation, which is then the result's one violation. */
static rp_status first_scene(const rp_model *m, const rp_scene *sc, const rp_shape *w, size_t i,
                             double margin, rp_check_result *out, bool *done)
{
    excl_set x;
    *done = false;
    if (!excl_load(&x, m, sc, i))
        return RP_ERR_NOMEM;
    first_hit h = {0, 0.0, &x};
    bool hit = !rp_scene_below_(sc, &w[i], margin, stop_at_first, &h);
    free(x.heap);
    if (!hit)
        return RP_OK;
    *done = true;
    return report_first(out, i, RP_PAIR_SCENE, h.index, h.distance);
}

/* FIRST: scene pairs link by link, then self pairs; stops at the first pair
 * below the margin and reports it as the only violation.  Allocates only
 * for that violation. */
static rp_status check_first(const rp_model *m, const rp_scene *sc, const rp_shape *w,
                             double margin, rp_check_result *out)
{
    size_t n = m->n_links;
    if (sc) {
        for (size_t i = 0; i < n; i++) {
            bool done;
            rp_status st = first_scene(m, sc, w, i, margin, out, &done);
            if (st || done)
                return st;
        }
    }
    if (!m->skip)
        return RP_OK;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            if (!rp_model_self_pair_(m, i, j))
                continue;
            double d = rp_shape_signed_distance(&w[i], &w[j]);
            if (d < margin)
                return report_first(out, i, RP_PAIR_SELF, j, d);
        }
    return RP_OK;
}

/* FIRST's scene pairs of one slot in one walk of the tree (bvh.c,
 * rp_scene_below_multi_): query k is the slot's k-th shape (slot_shapes
 * order, so ascending links).  A query's first violation in the tree's
 * order is the one rp_scene_below_ would have found for that shape; it
 * drops the query and every later one (a lower link wins), and the lowest
 * query with a violation is kept. */
typedef struct first_multi {
    const rp_model *m;
    const rp_scene *sc;
    bp_check *b;
    const uint32_t *shapes;
    size_t count, below; /* the slot's shapes; only those below link `below` count */
    bool hit;
    unsigned k;
    size_t index;
    double distance;
} first_multi;

/* Places the slot's shapes below the best link as the walk's queries. */
static uint64_t first_multi_fill(void *ctx, rp_multi *q)
{
    first_multi *f = ctx;
    uint64_t active = 0;
    size_t k = 0;
    for (; k < f->count && f->shapes[k] < f->below; k++) {
        rp_multi_set_(q, k, placed_shape(f->b, f->shapes[k]));
        active |= (uint64_t)1 << k;
    }
    q->n = k;
    rp_multi_pad_(q, k);
    return active;
}

/* True when link i may touch scene shape e (an allowed scene pair): the
 * pair names the shape's id, or the object or robot instance it belongs
 * to (the part of its id before '/', proto/PROTOCOL.md, Objects). */
static bool allowed_scene(const rp_model *m, const rp_scene *sc, size_t i, size_t e)
{
    if (!m->as_first)
        return false;
    if (e >= sc->count) { /* a cloud's sphere: the pair names the cloud */
        const rp_object *o = NULL;
        rp_scene_cloud_member(sc, e, &o);
        for (size_t a = m->as_first[i]; o && a < m->as_first[i + 1]; a++)
            if (strcmp(m->as_ids[a], o->name) == 0)
                return true;
        return false;
    }
    const scene_entry *en = RP_ENTRY(sc, e);
    const char *id = en->id;
    size_t owner = 0;
    if (en->shape.tag) {
        const char *slash = strchr(id, '/');
        owner = slash ? (size_t)(slash - id) : 0;
    }
    for (size_t a = m->as_first[i]; a < m->as_first[i + 1]; a++) {
        const char *name = m->as_ids[a];
        if (strcmp(name, id) == 0 || (owner && strncmp(name, id, owner) == 0 && !name[owner]))
            return true;
    }
    return false;
}

static uint64_t first_multi_visit(void *ctx, unsigned k, size_t index, double distance)
{
    first_multi *f = ctx;
    if (allowed_scene(f->m, f->sc, f->shapes[k], index))
        return 0;
    if (!f->hit || k < f->k) {
        f->hit = true;
        f->k = k;
        f->index = index;
        f->distance = distance;
    }
    return ~(uint64_t)0 << k;
}

/* FIRST's scene pairs of a robot of at most RP_MULTI_MAX shapes in one
 * walk of the tree (rp_scene_below_robot_): shape lanes are link indices,
 * gates the slot spheres.  The first pair below the margin the walk meets
 * ends it. */
typedef struct first_robot {
    const rp_model *m;
    const rp_scene *sc;
    bp_check *b;
    bool hit;
    unsigned k;
    size_t index;
    double distance;
} first_robot;

/* Places shapes `lanes` (lane k is link k) as queries of q. */
static void place_lanes(bp_check *b, rp_multi *q, uint64_t lanes)
{
    for (; lanes; lanes &= lanes - 1) {
        unsigned k = (unsigned)__builtin_ctzll(lanes);
        rp_multi_set_(q, k, placed_shape(b, k));
    }
}

static void first_robot_fill(void *ctx, rp_multi *q, uint64_t lanes)
{
    place_lanes(((first_robot *)ctx)->b, q, lanes);
}

static uint64_t first_robot_visit(void *ctx, unsigned k, size_t index, double distance)
{
    first_robot *f = ctx;
    if (allowed_scene(f->m, f->sc, k, index))
        return 0;
    f->hit = true;
    f->k = k;
    f->index = index;
    f->distance = distance;
    return UINT64_MAX; /* found one: the walk ends */
}

/* Sets up a robot walk: a gate per slot with shapes, its sphere placed;
 * returns the slack the gates' threshold needs (the largest of theirs). */
static double robot_walk_init(bp_check *b, rp_robot_walk *w,
                              void (*fill)(void *ctx, rp_multi *q, uint64_t lanes))
{
    const rp_model *m = b->m;
    w->gates.n = 0;
    w->filled = 0;
    w->fill = fill;
    w->shapes.n = m->n_links;
    double slack = 0.0;
    for (size_t s = 0; s < b->slots; s++) {
        if (m->slot_first[s] == m->slot_first[s + 1])
            continue;
        uint64_t lanes = 0;
        for (uint32_t e = m->slot_first[s]; e < m->slot_first[s + 1]; e++)
            lanes |= (uint64_t)1 << m->slot_shapes[e];
        size_t g = w->gates.n++;
        rp_balls_set_(&w->gates, g, b->wc[s], m->bounds[s].r);
        w->gate_shapes[g] = lanes;
        slack = fmax(slack, bp_slack(b, s, s));
    }
    for (size_t g = w->gates.n; g % 4; g++)
        rp_balls_set_(&w->gates, g, (rp_vec3){0, 0, 0}, 0.0);
    return slack;
}

/* FIRST's scene pairs of k <= RP_ROBOTS_MAX configurations of one model
 * in one walk (rp_scene_below_robots_): gates are (configuration, slot)
 * lanes, at most RP_MULTI_MAX; f[r] gets configuration r's pair, if any,
 * the one a walk of its own would have met first. */
static void first_scene_robots(bp_check *const *b, size_t k, const rp_scene *sc, double margin,
                               first_robot *f)
{
    const rp_model *m = b[0]->m;
    rp_robots_walk w;
    rp_robot_lanes lanes[RP_ROBOTS_MAX];
    uint64_t all = m->n_links >= 64 ? UINT64_MAX : ((uint64_t)1 << m->n_links) - 1;
    double slack = 0.0;
    w.gates.n = 0;
    w.n_robots = k;
    for (size_t r = 0; r < k; r++) {
        f[r] = (first_robot){m, sc, b[r], false, 0, 0, 0.0};
        lanes[r].filled = 0;
        lanes[r].active = all;
        lanes[r].fill = first_robot_fill;
        lanes[r].visit = first_robot_visit;
        lanes[r].ctx = &f[r];
        lanes[r].shapes.n = m->n_links;
        w.robot[r] = &lanes[r];
        for (size_t s = 0; s < b[r]->slots; s++) {
            if (m->slot_first[s] == m->slot_first[s + 1])
                continue;
            uint64_t shapes = 0;
            for (uint32_t e = m->slot_first[s]; e < m->slot_first[s + 1]; e++)
                shapes |= (uint64_t)1 << m->slot_shapes[e];
            size_t g = w.gates.n++;
            rp_balls_set_(&w.gates, g, b[r]->wc[s], m->bounds[s].r);
            w.gate_shapes[g] = shapes;
            w.gate_robot[g] = (uint8_t)r;
            slack = fmax(slack, bp_slack(b[r], s, s));
        }
    }
    for (size_t g = w.gates.n; g % 4; g++)
        rp_balls_set_(&w.gates, g, (rp_vec3){0, 0, 0}, 0.0);
    rp_scene_below_robots_(sc, &w, margin + slack, margin);
}

/* Slots with shapes: a configuration's gates in a robots walk. */
static size_t gate_count(const rp_model *m)
{
    size_t n = 0;
    for (size_t s = 0; s <= m->frame_count; s++)
        n += m->slot_first[s] != m->slot_first[s + 1];
    return n;
}

static rp_status first_scene_robot(bp_check *b, const rp_scene *sc, double margin,
                                   rp_check_result *out, bool *done)
{
    first_robot f;
    first_scene_robots(&b, 1, sc, margin, &f);
    *done = f.hit;
    return f.hit ? report_first(out, f.k, RP_PAIR_SCENE, f.index, f.distance) : RP_OK;
}

/* FIRST's scene pairs with the broadphase: the lowest link with a scene
 * pair below the margin, with the first such pair in the tree's order
 * (what check_first finds).  Slots walk the tree once each, in the order
 * of their lowest link; links above the best found so far are left out. */
static rp_status first_scene_bp(bp_check *b, const rp_scene *sc, double margin,
                                rp_check_result *out, bool *done)
{
    const rp_model *m = b->m;
    size_t best = SIZE_MAX, best_e = 0;
    double best_d = 0.0;
    *done = false;
    /* Slots with shapes, by their lowest link (insertion sort: few slots). */
    uint32_t order[RP_BOUND_SLOTS];
    size_t n_order = 0;
    for (size_t s = 0; s < b->slots; s++) {
        if (m->slot_first[s] == m->slot_first[s + 1])
            continue;
        size_t at = n_order++;
        uint32_t low = m->slot_shapes[m->slot_first[s]];
        while (at > 0 && m->slot_shapes[m->slot_first[order[at - 1]]] > low) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = (uint32_t)s;
    }
    rp_multi q;
    for (size_t o = 0; o < n_order; o++) {
        size_t s = order[o];
        const uint32_t *shapes = &m->slot_shapes[m->slot_first[s]];
        size_t count = m->slot_first[s + 1] - m->slot_first[s];
        if (shapes[0] >= best)
            break; /* this slot and every later one start above the best */
        if (count > RP_MULTI_MAX) {
            /* A crowded slot: its shapes one by one. */
            for (size_t k = 0; k < count && shapes[k] < best; k++) {
                bool hit;
                placed_shape(b, shapes[k]);
                first_hit h = {0, 0.0, NULL};
                excl_set x;
                if (!excl_load(&x, m, sc, shapes[k]))
                    return RP_ERR_NOMEM;
                h.excl = &x;
                hit = !rp_scene_below_(sc, &b->w[shapes[k]], margin, stop_at_first, &h);
                free(x.heap);
                if (hit) {
                    best = shapes[k];
                    best_e = h.index;
                    best_d = h.distance;
                }
            }
            continue;
        }
        first_multi f = {m, sc, b, shapes, count, best, false, 0, 0, 0.0};
        if (margin >= 0 && !m->bounds[s].excl) {
            /* The slot's sphere as the gate: its shapes are placed only
             * when a scene shape comes near it (only for margin >= 0, like
             * the slot sphere's lower bound, and not with allowed scene
             * pairs, which the gate ignores). */
            rp_shape ball = rp_shape_from_sphere((rp_sphere){b->wc[s], m->bounds[s].r});
            rp_multi_gate gate = {&ball, margin + bp_slack(b, s, s), first_multi_fill};
            rp_scene_below_multi_(sc, &q, 0, margin, &gate, first_multi_visit, &f);
        } else {
            uint64_t active = first_multi_fill(&f, &q);
            rp_scene_below_multi_(sc, &q, active, margin, NULL, first_multi_visit, &f);
        }
        if (f.hit) {
            best = shapes[f.k];
            best_e = f.index;
            best_d = f.distance;
        }
    }
    if (best == SIZE_MAX)
        return RP_OK;
    *done = true;
    return report_first(out, best, RP_PAIR_SCENE, best_e, best_d);
}

/* Self pairs by blocks: what a search keeps (its limit: pairs whose lower
 * bound exceeds it cannot matter; the filters keep ties) and what it does
 * with a pair that may (visit; false stops the search: out of memory). */
typedef struct self_sink self_sink;
struct self_sink {
    double (*limit)(const self_sink *s);
    bool (*visit)(self_sink *s, bp_check *b, size_t i, size_t j);
};

/* The pairs of block blk that the sink's limit leaves: slot v's shapes
 * whose balls come near slot u's sphere, rows of u whose balls come near
 * v's sphere, then ball against ball (row_near); pairs in row order. */
static bool block_pairs(bp_check *b, const rp_pair_block *blk, self_sink *sink)
{
    const rp_model *m = b->m;
    slot_balls(b, blk->u);
    slot_balls(b, blk->v);
    double slack = bp_slack(b, blk->u, blk->v), lim = sink->limit(sink);
    const uint64_t *masks = &m->block_masks[blk->masks];
    uint64_t side[RP_BOUND_LINKS / 64];
    for (uint32_t w = 0; w < blk->words; w++)
        side[w] = slot_side(b, blk->v, blk->u, w, lim, slack);
    /* Rows of u whose balls come near v's sphere, 64 at a time (with the
     * limit at the start: it only falls, so this keeps every row the
     * running limit would). */
    uint32_t a0 = m->slot_first[blk->u], a1 = m->slot_first[blk->u + 1];
    uint64_t rows = 0;
    for (uint32_t a = a0; a < a1; a++, masks += blk->words) {
        if ((a - a0) % 64 == 0) {
            uint32_t left = a1 - a;
            rows = balls_near(b->px + a, b->py + a, b->pz + a, m->slot_ball_r + a,
                              left < 64 ? left : 64, b->wc[blk->v].x, b->wc[blk->v].y,
                              b->wc[blk->v].z, lim + slack + m->bounds[blk->v].r);
        }
        if (!(rows >> ((a - a0) % 64) & 1))
            continue;
        size_t la = m->slot_shapes[a];
        for (uint32_t w = 0; w < blk->words; w++) {
            uint64_t cand = masks[w] & side[w];
            uint64_t near = cand ? row_near(b, blk, a, w, sink->limit(sink), slack, cand) : 0;
            for (; near; near &= near - 1) {
                size_t lbi = m->slot_shapes[m->slot_first[blk->v] + 64 * w +
                                            (unsigned)__builtin_ctzll(near)];
                if (!sink->visit(sink, b, la < lbi ? la : lbi, la < lbi ? lbi : la))
                    return false;
            }
        }
    }
    return true;
}

/* FIRST: the canonically first pair below the margin, the smallest key
 * (i << 16) | j. */
typedef struct first_sink {
    self_sink base;
    double margin;
    uint32_t best;
    double best_d;
} first_sink;

static double first_limit(const self_sink *s)
{
    return ((const first_sink *)s)->margin;
}

static bool first_visit(self_sink *s, bp_check *b, size_t i, size_t j)
{
    first_sink *f = (first_sink *)s;
    uint32_t key = (uint32_t)(i << 16 | j);
    if (key >= f->best)
        return true;
    double d = rp_shape_signed_distance(placed_shape(b, i), placed_shape(b, j));
    if (d < f->margin) {
        f->best = key;
        f->best_d = d;
    }
    return true;
}

/* FIRST's self pairs with the broadphase, over the blocks whose slot
 * spheres come within the margin. */
static rp_status first_self_bp(bp_check *b, double margin, rp_check_result *out)
{
    const rp_model *m = b->m;
    first_sink f = {{first_limit, first_visit}, margin, UINT32_MAX, 0.0};
    for (size_t k = 0; k < m->n_blocks; k++)
        if (slot_lb(b, m->blocks[k].u, m->blocks[k].v) < margin)
            block_pairs(b, &m->blocks[k], &f.base);
    if (f.best == UINT32_MAX)
        return RP_OK;
    return report_first(out, f.best >> 16, RP_PAIR_SELF, f.best & 0xffffu, f.best_d);
}

/* Fewer configurations than this go one by one (first_self_bp): sixteen
 * lanes for a handful of configurations cost more than they save. */
#define LANES_MIN 8

/* The float centres of a batch (rp_pairs_near_f32_): lane c of ball p at
 * x[p * RP_LANES + c], then the slot spheres' centres (slot s at
 * n_links + s); relative to an origin o. */
typedef struct lane_balls {
    float *x, *y, *z;
} lane_balls;

/* The slot poses of a batch by lane: t[j][c] is entry j of lane c's pose
 * (r[0][0..2], t.x, r[1][0..2], t.y, r[2][0..2], t.z). */
typedef struct lane_pose {
    double t[12][RP_LANES];
} lane_pose;

/* Lanes c0 .. c0 + 3 of one centre: rp_xf_point_'s arithmetic in its
 * order, minus the origin, rounded to float (the portable and AVX2 forms
 * give the same bits). */
static void lane_centre_portable(const lane_pose *lp, rp_vec3 l, rp_vec3 o, float *x, float *y,
                                 float *z)
{
    for (size_t c = 0; c < RP_LANES; c++) {
        x[c] =
            (float)(lp->t[0][c] * l.x + lp->t[1][c] * l.y + lp->t[2][c] * l.z + lp->t[3][c] - o.x);
        y[c] =
            (float)(lp->t[4][c] * l.x + lp->t[5][c] * l.y + lp->t[6][c] * l.z + lp->t[7][c] - o.y);
        z[c] = (float)(lp->t[8][c] * l.x + lp->t[9][c] * l.y + lp->t[10][c] * l.z + lp->t[11][c] -
                       o.z);
    }
}

#ifdef RP_HAVE_AVX2_PATH
__attribute__((target("avx2"))) static void
lane_centre_avx2(const lane_pose *lp, rp_vec3 l, rp_vec3 o, float *x, float *y, float *z)
{
    __m256d lx = _mm256_set1_pd(l.x), ly = _mm256_set1_pd(l.y), lz = _mm256_set1_pd(l.z);
    double oc[3] = {o.x, o.y, o.z};
    float *out[3] = {x, y, z};
    for (int a = 0; a < 3; a++) {
        const double(*t)[RP_LANES] = &lp->t[4 * a];
        __m256d org = _mm256_set1_pd(oc[a]);
        for (size_t c = 0; c < RP_LANES; c += 4) {
            __m256d v = _mm256_add_pd(_mm256_mul_pd(_mm256_loadu_pd(&t[0][c]), lx),
                                      _mm256_mul_pd(_mm256_loadu_pd(&t[1][c]), ly));
            v = _mm256_add_pd(v, _mm256_mul_pd(_mm256_loadu_pd(&t[2][c]), lz));
            v = _mm256_sub_pd(_mm256_add_pd(v, _mm256_loadu_pd(&t[3][c])), org);
            _mm_storeu_ps(out[a] + c, _mm256_cvtpd_ps(v));
        }
    }
}
#endif

/* The balls of slot s in every lane of lb. */
static void lane_centres(const rp_model *m, bp_check *const *b, size_t k, size_t s, rp_vec3 o,
                         lane_balls *lb)
{
    lane_pose lp;
    for (size_t c = 0; c < RP_LANES; c++) {
        const rp_transform *tf = b[c < k ? c : 0]->tf[s]; /* unused lanes: lane 0's pose */
        for (int a = 0; a < 3; a++) {
            lp.t[4 * a][c] = tf->r[a][0];
            lp.t[4 * a + 1][c] = tf->r[a][1];
            lp.t[4 * a + 2][c] = tf->r[a][2];
        }
        lp.t[3][c] = tf->t.x;
        lp.t[7][c] = tf->t.y;
        lp.t[11][c] = tf->t.z;
    }
    for (uint32_t p = m->slot_first[s]; p < m->slot_first[s + 1]; p++) {
        rp_vec3 l = m->balls[m->slot_shapes[p]].c;
        float *x = lb->x + (size_t)p * RP_LANES, *y = lb->y + (size_t)p * RP_LANES,
              *z = lb->z + (size_t)p * RP_LANES;
#ifdef RP_HAVE_AVX2_PATH
        if (rp_simd_enabled_()) {
            lane_centre_avx2(&lp, l, o, x, y, z);
            continue;
        }
#endif
        lane_centre_portable(&lp, l, o, x, y, z);
    }
}

/* FIRST's self pairs of k <= RP_LANES configurations at once, with the
 * configurations across the float filter's lanes (simd.c has its bound):
 * the slot spheres of each block first, as first_self_bp's slot_lb, then
 * the block's ball pairs, and each lane a pair keeps is decided by the
 * exact kernel, as first_visit does.  FIRST reports the smallest key of
 * the pairs below the margin, and every pair below it is kept, so
 * deciding the kept ones in any order gives first_self_bp's result bit
 * for bit.  False (nothing written) when the batch is beyond the filter's
 * range: the caller takes first_self_bp. */
static bool first_self_lanes(bp_check *const *b, size_t k, double margin, lane_balls *lb,
                             first_sink *sinks)
{
    const rp_model *m = b[0]->m;
    size_t slots = b[0]->slots, nl = m->n_links;
    /* Coordinates relative to the first configuration's base slot; R
     * bounds them (each slot sphere holds its balls) and the radius sums
     * (twice the largest slot sphere); the slack is the batch's largest. */
    rp_vec3 o = b[0]->wc[0];
    double R = 0.0, size = 0.0, ball_r = 0.0;
    for (size_t c = 0; c < k; c++)
        for (size_t s = 0; s < slots; s++) {
            rp_vec3 w = b[c]->wc[s];
            double far = fabs(w.x - o.x), fy = fabs(w.y - o.y), fz = fabs(w.z - o.z);
            far = far > fy ? far : fy;
            far = far > fz ? far : fz;
            far += m->bounds[s].r;
            R = R > far ? R : far;
            size = size > b[c]->size[s] ? size : b[c]->size[s];
            ball_r = ball_r > m->bounds[s].r ? ball_r : m->bounds[s].r;
        }
    /* (the last term: the rounding of the centres' world coordinates) */
    R = ((R > 2.0 * ball_r ? R : 2.0 * ball_r) + 1e-12 * size) * (1.0 + 0x1p-40);
    double at = margin + 1e-13 * (2.0 * size + 1.0);
    if (!(R <= RP_F32_RANGE && fabs(at) <= RP_F32_RANGE))
        return false;
    float at_up = rp_f32_up_(at), err = rp_f32_filter_err_(R, at);
    for (size_t c = 0; c < k; c++)
        sinks[c] = (first_sink){{first_limit, first_visit}, margin, UINT32_MAX, 0.0};
    /* The slot spheres (unused lanes: lane 0's), then which lanes of each
     * block they leave. */
    for (size_t s = 0; s < slots; s++)
        for (size_t c = 0; c < RP_LANES; c++) {
            rp_vec3 w = b[c < k ? c : 0]->wc[s];
            size_t at_p = (nl + s) * RP_LANES + c;
            lb->x[at_p] = (float)(w.x - o.x);
            lb->y[at_p] = (float)(w.y - o.y);
            lb->z[at_p] = (float)(w.z - o.z);
        }
    uint32_t all = ((uint32_t)1 << k) - 1, keep[256];
    bool centred[RP_BOUND_SLOTS] = {false};
    for (size_t g0 = 0; g0 < m->n_blocks; g0 += 256) {
        size_t ng = m->n_blocks - g0 < 256 ? m->n_blocks - g0 : 256;
        uint32_t gates[256];
        rp_pairs_near_f32_(lb->x, lb->y, lb->z, m->gate_a + g0, m->gate_b + g0, m->gate_r + g0, ng,
                           at_up, err, gates);
        for (size_t g = 0; g < ng; g++) {
            uint32_t lanes = gates[g] & all;
            if (!lanes)
                continue;
            size_t blk = g0 + g;
            uint32_t ends[2] = {m->blocks[blk].u, m->blocks[blk].v};
            for (int e = 0; e < 2; e++)
                if (!centred[ends[e]]) {
                    lane_centres(m, b, k, ends[e], o, lb);
                    centred[ends[e]] = true;
                }
            /* The block's pairs through the filter, 256 at a time; each
             * lane kept is decided exactly. */
            for (uint32_t i0 = m->block_pair_first[blk]; i0 < m->block_pair_first[blk + 1];
                 i0 += 256) {
                uint32_t n = m->block_pair_first[blk + 1] - i0;
                n = n < 256 ? n : 256;
                rp_pairs_near_f32_(lb->x, lb->y, lb->z, m->pair_a + i0, m->pair_b + i0,
                                   m->pair_r + i0, n, at_up, err, keep);
                for (uint32_t i = 0; i < n; i++)
                    for (uint32_t near = keep[i] & lanes; near; near &= near - 1) {
                        size_t c = (size_t)__builtin_ctz(near);
                        size_t la = m->slot_shapes[m->pair_a[i0 + i]],
                               lbi = m->slot_shapes[m->pair_b[i0 + i]];
                        first_visit(&sinks[c].base, b[c], la < lbi ? la : lbi, la < lbi ? lbi : la);
                    }
            }
        }
    }
    return true;
}

/* FIRST with the broadphase: the same pairs in the same order as
 * check_first.  Each slot walks the scene's tree once for its shapes
 * (first_scene_bp); self pairs go by blocks (first_self_bp).  Shapes are
 * placed only when a test needs them. */
static rp_status check_first_bp(bp_check *b, const rp_scene *sc, double margin,
                                rp_check_result *out)
{
    if (sc && rp_scene_walkable_(sc)) {
        bool done;
        /* The whole robot in one walk when its shapes fit the lanes (and
         * the margin is >= 0, like the slot spheres' lower bound); else
         * slot by slot. */
        rp_status st = b->m->n_links <= RP_MULTI_MAX && margin >= 0
                           ? first_scene_robot(b, sc, margin, out, &done)
                           : first_scene_bp(b, sc, margin, out, &done);
        if (st || done)
            return st;
    }
    return first_self_bp(b, margin, out);
}

/* ---- report closest / all ---------------------------------------------------- */

typedef struct collector {
    rp_check_result *r;
    size_t link;
    bool nomem;
    const excl_set *excl;
} collector;

/* rp_scene_below_ visitor for ALL: collects every pair; stops only when
 * out of memory. */
static bool collect_pair(void *ctx, size_t index, double distance)
{
    collector *c = ctx;
    if (excl_has(c->excl, index))
        return true;
    if (!push_violation(c->r, c->link, RP_PAIR_SCENE, index, distance)) {
        c->nomem = true;
        return false;
    }
    return true;
}

/* The order of scene.h: distance, link, scene before self, then shape id
 * (strcmp) or link index.  A total order on distinct pairs. */
static int pair_cmp(const rp_scene *sc, const rp_check_pair *a, const rp_check_pair *b)
{
    if (a->distance != b->distance)
        return a->distance < b->distance ? -1 : 1;
    if (a->link != b->link)
        return a->link < b->link ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind == RP_PAIR_SCENE ? -1 : 1;
    if (a->kind == RP_PAIR_SCENE)
        return rp_scene_index_cmp_(sc, a->other, b->other);
    return a->other < b->other ? -1 : a->other > b->other;
}

/* pair_cmp for rp_sort_ctx_ (the context is the scene). */
static int pair_cmp_ctx(const void *a, const void *b, const void *ctx)
{
    return pair_cmp(ctx, a, b);
}

/* One self pair for CLOSEST/ALL: the running minimum (only a strictly
 * closer pair takes it: the canonical order is the tie rule), and with
 * `collect` the violations.  False when out of memory. */
static inline bool consider_self(const rp_shape *w, size_t i, size_t j, double margin, bool collect,
                                 rp_check_pair *best, bool *has, rp_check_result *out)
{
    double d = rp_shape_signed_distance(&w[i], &w[j]);
    if (!*has || d < best->distance) {
        rp_check_pair p = {i, RP_PAIR_SELF, j, d};
        *best = p;
        *has = true;
    }
    return !collect || !(d < margin) || push_violation(out, i, RP_PAIR_SELF, j, d);
}

/* True when self pair (i, j) comes before pair p in the canonical order
 * (links ascending; a link's scene pairs before its self pairs, which go by
 * partner ascending). */
static inline bool self_before(size_t i, size_t j, const rp_check_pair *p)
{
    if (i != p->link)
        return i < p->link;
    return p->kind == RP_PAIR_SELF && j < p->other;
}

/* CLOSEST/ALL: the running minimum, ties to the canonical order, and when
 * collecting every pair below the margin. */
typedef struct min_sink {
    self_sink base;
    double margin;
    bool collect;
    rp_check_pair *best;
    bool *has;
    rp_check_result *out;
} min_sink;

static double min_limit(const self_sink *s)
{
    const min_sink *f = (const min_sink *)s;
    if (!*f->has)
        return INFINITY;
    return f->collect && f->margin > f->best->distance ? f->margin : f->best->distance;
}

static bool min_visit(self_sink *s, bp_check *b, size_t i, size_t j)
{
    min_sink *f = (min_sink *)s;
    double d = rp_shape_signed_distance(placed_shape(b, i), placed_shape(b, j));
    if (!*f->has || d < f->best->distance ||
        (d == f->best->distance && self_before(i, j, f->best))) {
        rp_check_pair p = {i, RP_PAIR_SELF, j, d};
        *f->best = p;
        *f->has = true;
    }
    return !f->collect || !(d < f->margin) || push_violation(f->out, i, RP_PAIR_SELF, j, d);
}

/* CLOSEST/ALL's self pairs with the broadphase: blocks nearest first, so
 * that the minimum comes down early and prunes the rest; a pair at the
 * minimum takes it when it comes first in the canonical order, so the
 * result is the canonical minimum whatever the order.  False when out of
 * memory. */
static bool min_self_bp(bp_check *b, double margin, bool collect, rp_check_pair *best, bool *has,
                        rp_check_result *out)
{
    const rp_model *m = b->m;
    /* A stable insertion sort of the blocks by their slot spheres' bound. */
    uint32_t order_stack[64], *order = order_stack;
    double lb_stack[64], *lbs = lb_stack;
    if (m->n_blocks > 64) {
        order = malloc(m->n_blocks * sizeof *order);
        lbs = malloc(m->n_blocks * sizeof *lbs);
        if (!order || !lbs) {
            free(order);
            free(lbs);
            return false;
        }
    }
    for (size_t k = 0; k < m->n_blocks; k++) {
        double lb = slot_lb(b, m->blocks[k].u, m->blocks[k].v);
        size_t at = k;
        while (at > 0 && lbs[at - 1] > lb) {
            lbs[at] = lbs[at - 1];
            order[at] = order[at - 1];
            at--;
        }
        lbs[at] = lb;
        order[at] = (uint32_t)k;
    }
    min_sink f = {{min_limit, min_visit}, margin, collect, best, has, out};
    bool ok = true;
    for (size_t o = 0; o < m->n_blocks && ok; o++) {
        if (lbs[o] > min_limit(&f.base)) {
            if (!collect)
                break; /* the rest are farther still */
            continue;
        }
        ok = block_pairs(b, &m->blocks[order[o]], &f.base);
    }
    if (order != order_stack) {
        free(order);
        free(lbs);
    }
    return ok;
}

/* CLOSEST's scene pairs of a robot of at most RP_MULTI_MAX shapes in one
 * walk (rp_scene_nearest_robot_): every pair at or below the running
 * minimum is offered, and the canonical order (pair_cmp) decides ties, so
 * the result does not depend on the order of the walk. */
typedef struct near_robot {
    const rp_model *m;
    const rp_scene *sc;
    bp_check *b;
    rp_check_pair *best;
    bool *has;
    double bound;
} near_robot;

static void near_robot_fill(void *ctx, rp_multi *q, uint64_t lanes)
{
    place_lanes(((near_robot *)ctx)->b, q, lanes);
}

static int pair_cmp(const rp_scene *sc, const rp_check_pair *a, const rp_check_pair *b);

static uint64_t near_robot_visit(void *ctx, unsigned k, size_t index, double distance)
{
    near_robot *f = ctx;
    if (allowed_scene(f->m, f->sc, k, index))
        return 0;
    rp_check_pair p = {k, RP_PAIR_SCENE, index, distance};
    if (!*f->has || pair_cmp(f->sc, &p, f->best) < 0) {
        *f->best = p;
        *f->has = true;
        f->bound = distance;
    }
    return 0;
}

static void min_scene_robot(bp_check *b, const rp_scene *sc, rp_check_pair *best, bool *has)
{
    rp_robot_walk w;
    double slack = robot_walk_init(b, &w, near_robot_fill);
    const rp_model *m = b->m;
    uint64_t active = m->n_links >= 64 ? UINT64_MAX : ((uint64_t)1 << m->n_links) - 1;
    near_robot f = {m, sc, b, best, has, *has ? best->distance : INFINITY};
    rp_scene_nearest_robot_(sc, &w, active, &f.bound, slack, near_robot_visit, &f);
}

/* CLOSEST, and with `collect` ALL: the minimum over every pair considered
 * under the tie rule, and when collecting every pair below the margin,
 * sorted.  Returns RP_ERR_NOMEM with the violations freed. */
static rp_status check_min(const rp_model *m, const rp_scene *sc, const rp_shape *w, double margin,
                           bool collect, bp_check *b, rp_check_result *out)
{
    size_t n = m->n_links;
    bool has = false, has_self = false;
    rp_check_pair best = {0, RP_PAIR_SCENE, 0, 0.0}, self = best;
    /* With the broadphase the self pairs go first (their minimum then
     * bounds the scene queries), by blocks. */
    if (b && m->skip && !min_self_bp(b, margin, collect, &self, &has_self, out))
        goto nomem;
    if (b && !collect && n <= RP_MULTI_MAX && sc && rp_scene_walkable_(sc)) {
        /* The whole robot in one walk, bounded by the self minimum. */
        best = self;
        has = has_self;
        has_self = false;
        min_scene_robot(b, sc, &best, &has);
        n = 0; /* the loop below has nothing left to do */
    }
    for (size_t i = 0; i < n; i++) {
        if (sc) {
            /* The running minimum is the bound: this link's nearest shape
             * only wins when strictly closer than every earlier pair.  The
             * self minimum bounds it too, but a scene pair of a link up to
             * the self pair's own comes first in the canonical order and
             * wins a tie with it: for those links the bound is the next
             * double up. */
            double d = has ? best.distance : INFINITY;
            if (has_self) {
                double sb = i <= self.link ? nextafter(self.distance, INFINITY) : self.distance;
                d = sb < d ? sb : d;
            }
            size_t e = 0;
            bool found;
            excl_set x;
            if (!excl_load(&x, m, sc, i))
                goto nomem;
            if (b)
                placed_shape(b, i); /* placed lazily with the broadphase */
            rp_scene_nearest_excl_(sc, &w[i], x.v, x.n, &d, &e, &found);
            if (found) {
                best.link = i;
                best.kind = RP_PAIR_SCENE;
                best.other = e;
                best.distance = d;
                has = true;
            }
            if (collect) {
                collector c = {out, i, false, &x};
                rp_scene_below_(sc, &w[i], margin, collect_pair, &c);
                if (c.nomem) {
                    free(x.heap);
                    goto nomem;
                }
            }
            free(x.heap);
        }
        if (!m->skip || b)
            continue;
        for (size_t j = i + 1; j < n; j++)
            if (rp_model_self_pair_(m, i, j) &&
                !consider_self(w, i, j, margin, collect, &best, &has, out))
                goto nomem;
    }
    if (has_self &&
        (!has || self.distance < best.distance ||
         (self.distance == best.distance && self_before(self.link, self.other, &best)))) {
        best = self;
        has = true;
    }
    out->has_min = has;
    out->closest = best;
    out->collision = has && best.distance < margin;
    if (!rp_sort_ctx_(out->violations, out->n_violations, sizeof *out->violations, pair_cmp_ctx,
                      sc))
        goto nomem;
    return RP_OK;

nomem:
    rp_check_result_free(out);
    return RP_ERR_NOMEM;
}

/* ---- entry points ---------------------------------------------------------------- */

static rp_status check_run(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                           const rp_transform *frames, size_t n_frames, const rp_check_opts *opts,
                           rp_check_result *out);

rp_status rp_model_check(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                         const rp_transform *frames, size_t n_frames, const rp_check_opts *opts,
                         rp_check_result *out)
{
    rp_work *work = opts ? opts->work : NULL;
    rp_status st =
        rp_ignore_open_(scene, opts ? opts->ignore : NULL, opts ? opts->n_ignore : 0, NULL);
    if (st) {
        if (out)
            memset(out, 0, sizeof *out);
        return st;
    }
    rp_meter_open_(work);
    st = rp_meter_close_(work, check_run(m, scene, base, frames, n_frames, opts, out));
    rp_ignore_close_();
    if (st == RP_ERR_WORK)
        rp_check_result_free(out); /* found by cut walks: nothing to report */
    return st;
}

static rp_status check_run(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                           const rp_transform *frames, size_t n_frames, const rp_check_opts *opts,
                           rp_check_result *out)
{
    if (!out)
        return RP_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!m || n_frames != m->frame_count || (n_frames && !frames))
        return RP_ERR_INVALID_ARG;
    /* NULL options: the protocol's defaults (closest, the model's margin). */
    rp_check_opts defaults = {.report = RP_REPORT_CLOSEST};
    if (!opts)
        opts = &defaults;
    double margin = opts->has_margin ? opts->margin : m->safety_margin;
    if (isnan(margin))
        return RP_ERR_INVALID_ARG; /* would silently compare false everywhere */
    if (opts->report != RP_REPORT_FIRST && opts->report != RP_REPORT_CLOSEST &&
        opts->report != RP_REPORT_ALL)
        return RP_ERR_INVALID_ARG;

    rp_shape stack[STACK_LINKS];
    rp_shape *world = stack;
    if (m->n_links > STACK_LINKS) {
        world = malloc(m->n_links * sizeof *world);
        if (!world)
            return RP_ERR_NOMEM;
    }
    /* The broadphase when the model has one and the poses are in range. */
    bp_check bpc, *b = NULL;
    rp_transform identity = rp_transform_identity();
    rp_status st = RP_OK;
    double pos_stack[3 * STACK_LINKS], *pos = pos_stack;
    uint8_t state_stack[STACK_LINKS], *state = state_stack;
    if (m->bounds && bp_setup(&bpc, m, base, frames, &identity)) {
        if (m->n_links > STACK_LINKS) {
            pos = malloc(3 * m->n_links * sizeof *pos);
            state = malloc(m->n_links * sizeof *state);
        }
        if (!pos || !state) {
            st = RP_ERR_NOMEM;
            goto done;
        }
        bpc.w = world;
        bpc.state = state;
        bpc.px = pos;
        bpc.py = pos + m->n_links;
        bpc.pz = pos + 2 * m->n_links;
        memset(bpc.balled, 0, sizeof bpc.balled);
        b = &bpc;
    }
    size_t bad_link = 0;
    if (b) {
        /* Shapes are placed as tests need them (bp_setup made sure they
         * all stay finite). */
        memset(state, 0, m->n_links * sizeof *state);
        st = opts->report == RP_REPORT_FIRST
                 ? check_first_bp(b, scene, margin, out)
                 : check_min(m, scene, world, margin, opts->report == RP_REPORT_ALL, b, out);
    } else if ((st = rp_place_links_(m, base, frames, world, &bad_link)) == RP_OK) {
        st = opts->report == RP_REPORT_FIRST
                 ? check_first(m, scene, world, margin, out)
                 : check_min(m, scene, world, margin, opts->report == RP_REPORT_ALL, NULL, out);
    } else {
        out->closest.link = bad_link; /* which link left the double range */
    }
done:
    if (pos != pos_stack)
        free(pos);
    if (state != state_stack)
        free(state);
    if (world != stack)
        free(world);
    return st;
}

void rp_check_result_free(rp_check_result *r)
{
    if (!r)
        return;
    free(r->violations);
    memset(r, 0, sizeof *r);
}

/* ---- several configurations at once ------------------------------------------------ */

rp_status rp_model_check_first_many_(const rp_model *m, const rp_scene *scene,
                                     const rp_transform *base, const rp_transform *frames, size_t n,
                                     double margin, rp_check_result *out, size_t *failed)
{
    size_t nl = m->n_links, nf = m->frame_count;
    for (size_t r = 0; r < n; r++)
        memset(&out[r], 0, sizeof out[r]);
    rp_check_opts opts = {.report = RP_REPORT_FIRST, .has_margin = true, .margin = margin};
    /* Configurations go RP_LANES at a time when the model has the
     * broadphase: scene pairs in walks of up to RP_ROBOTS_MAX of them (when
     * the model fits the lanes and the margin is >= 0, like the slot
     * spheres' lower bound), self pairs through the float filter.  Otherwise
     * one by one. */
    bool walk = scene && rp_scene_walkable_(scene);
    size_t group = 1;
    if (walk && m->bounds && nl <= RP_MULTI_MAX && margin >= 0) {
        size_t g = gate_count(m);
        group = g ? RP_MULTI_MAX / g : 1;
        group = group > RP_ROBOTS_MAX ? RP_ROBOTS_MAX : group;
    }
    if (!m->bounds || n < 2 || (walk && group < 2)) {
        for (size_t r = 0; r < n; r++) {
            rp_status st = rp_model_check(m, scene, base, frames + r * nf, nf, &opts, &out[r]);
            if (st) {
                *failed = r;
                return st;
            }
        }
        return RP_OK;
    }
    /* Per configuration of a batch: world shapes, placement state, ball
     * centres; then the float centres of the batch. */
    size_t per = nl * sizeof(rp_shape) + 3 * nl * sizeof(double) + nl;
    per = (per + 15) & ~(size_t)15; /* each configuration's block aligned for rp_shape */
    size_t lane_n = (nl + m->frame_count + 1) * RP_LANES; /* balls, then slot spheres */
    size_t lane_bytes = 3 * lane_n * sizeof(float);
    unsigned char *scratch = malloc(RP_LANES * per + lane_bytes);
    if (!scratch) {
        *failed = 0;
        return RP_ERR_NOMEM;
    }
    float *lanes_mem = (float *)(scratch + RP_LANES * per);
    lane_balls lb = {lanes_mem, lanes_mem + lane_n, lanes_mem + 2 * lane_n};
    rp_transform identity = rp_transform_identity();
    bp_check bpc[RP_LANES], *bp[RP_LANES];
    size_t idx[RP_LANES];
    rp_status st = RP_OK;
    for (size_t r = 0; r < n && st == RP_OK;) {
        /* A batch of configurations in the broadphase's range... */
        size_t k = 0;
        for (; r < n && k < RP_LANES; r++) {
            bp_check *b = &bpc[k];
            if (!bp_setup(b, m, base, frames + r * nf, &identity))
                break;
            unsigned char *mem = scratch + k * per;
            b->w = (rp_shape *)mem;
            b->px = (double *)(mem + nl * sizeof(rp_shape));
            b->py = b->px + nl;
            b->pz = b->py + nl;
            b->state = mem + nl * sizeof(rp_shape) + 3 * nl * sizeof(double);
            memset(b->state, 0, nl);
            memset(b->balled, 0, sizeof b->balled);
            bp[k] = b;
            idx[k++] = r;
        }
        if (!k) {
            /* ...or one beyond it, alone (after the batch before it, so
             * that results before a failure are all valid). */
            if ((st = rp_model_check(m, scene, base, frames + r * nf, nf, &opts, &out[r])))
                *failed = r;
            r++;
            continue;
        }
        /* Scene pairs first (they come first in FIRST's order), then the
         * self pairs of the configurations without one. */
        first_robot f[RP_LANES];
        for (size_t j = 0; j < k; j++)
            f[j].hit = false;
        for (size_t g0 = 0; walk && g0 < k; g0 += group)
            first_scene_robots(bp + g0, k - g0 < group ? k - g0 : group, scene, margin, f + g0);
        bp_check *selfb[RP_LANES];
        size_t selfj[RP_LANES], ns = 0;
        for (size_t j = 0; j < k && st == RP_OK; j++) {
            if (f[j].hit) {
                st = report_first(&out[idx[j]], f[j].k, RP_PAIR_SCENE, f[j].index, f[j].distance);
                if (st)
                    *failed = idx[j];
            } else {
                selfb[ns] = bp[j];
                selfj[ns++] = j;
            }
        }
        first_sink sinks[RP_LANES];
        bool lanes =
            st == RP_OK && ns >= LANES_MIN && first_self_lanes(selfb, ns, margin, &lb, sinks);
        for (size_t q = 0; q < ns && st == RP_OK; q++) {
            rp_check_result *o = &out[idx[selfj[q]]];
            if (!lanes)
                st = first_self_bp(selfb[q], margin, o);
            else if (sinks[q].best != UINT32_MAX)
                st = report_first(o, sinks[q].best >> 16, RP_PAIR_SELF, sinks[q].best & 0xffffu,
                                  sinks[q].best_d);
            if (st)
                *failed = idx[selfj[q]];
        }
    }
    free(scratch);
    return st;
}
