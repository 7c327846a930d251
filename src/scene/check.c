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
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "util/grow.h"

/* Links whose world shapes live on the stack, so that a FIRST check (the
 * planners' fast path) allocates nothing unless it finds a collision.
 * 64 shapes are 4 KiB. */
#define STACK_LINKS 64

/* 0 for a finite x, NaN for an infinity or a NaN: summed over coordinates,
 * one test tells whether all of them are finite (a plain sum could overflow
 * for finite values). */
static inline double nonfinite_probe(double x)
{
    return x - x;
}

/* Moves every link shape into the world: joint frame f's pose for links on
 * frame f, the base pose (identity when NULL) for links on the base.
 * Valid shapes moved by valid poses can still land beyond the largest
 * double (a link at 1e308 translated by 1e308): RP_ERR_NONFINITE then, and
 * *bad_link names the first such link. */
rp_status rp_place_links_(const rp_model *m, const rp_transform *base,
                          const rp_transform *frames, rp_shape *world, size_t *bad_link)
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
        const rp_capsule *c = &world[k].capsule;
        const rp_sphere *sp = &world[k].sphere;
        probe += world[k].kind == RP_SHAPE_CAPSULE
                     ? nonfinite_probe(c->a.x) + nonfinite_probe(c->a.y) +
                           nonfinite_probe(c->a.z) + nonfinite_probe(c->b.x) +
                           nonfinite_probe(c->b.y) + nonfinite_probe(c->b.z)
                     : nonfinite_probe(sp->center.x) + nonfinite_probe(sp->center.y) +
                           nonfinite_probe(sp->center.z);
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
        rp_check_pair *grown = rp_grow_(r->violations, &r->cap_violations, r->n_violations + 1,
                                        sizeof *grown, 8);
        if (!grown)
            return false;
        r->violations = grown;
    }
    rp_check_pair p = {link, kind, other, distance};
    r->violations[r->n_violations++] = p;
    return true;
}

/* ---- allowed scene pairs -------------------------------------------------------- */

size_t rp_allowed_scene_resolve_(const rp_model *m, const rp_scene *sc, size_t k, size_t *out,
                                 size_t cap)
{
    size_t n = 0;
    if (!m->as_first)
        return 0;
    for (size_t e = m->as_first[k]; e < m->as_first[k + 1] && n < cap; e++) {
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
    size_t want = m->as_first[k + 1] - m->as_first[k];
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
    if (!x)
        return false;
    for (size_t i = 0; i < x->n; i++)
        if (x->v[i] == e)
            return true;
    return false;
}

/* ---- broadphase ------------------------------------------------------------------ */

/* The model's frame spheres (model_int.h) placed for one check, and lower
 * bounds of the distance between any two shapes of two slots.  Every skip
 * they allow is of pairs whose distances cannot matter (at or above the
 * margin, or not below the running minimum), and pairs are still visited
 * in the canonical order, so results equal those of the plain path bit for
 * bit.  A slot sphere encloses its shapes as placed (its radius is rounded
 * up); `slack` covers the rounding of the bound and of the kernels (16 eps
 * S, geometry.h) with a wide margin, S being the size of the robot's
 * spheres.  (A scene shape whose own coordinates are thousands of times
 * larger than the robot's reach, such as a kilometre-long capsule passing
 * by, has a kernel error beyond that slack: a distance within that error of
 * the margin may then be judged on either side of it by the two paths.) */
typedef struct bp_check {
    const rp_model *m;
    size_t slots;
    const rp_transform *tf[RP_BOUND_SLOTS]; /* slot pose: base, then frames */
    rp_vec3 wc[RP_BOUND_SLOTS];
    double size[RP_BOUND_SLOTS];            /* largest |coordinate| of the sphere */
    double lb[RP_BOUND_SLOTS * RP_BOUND_SLOTS]; /* bp_lb, slots x slots */
} bp_check;

static inline rp_vec3 xf_point(const rp_transform *tf, rp_vec3 p)
{
    rp_vec3 q = {tf->r[0][0] * p.x + tf->r[0][1] * p.y + tf->r[0][2] * p.z + tf->t.x,
                 tf->r[1][0] * p.x + tf->r[1][1] * p.y + tf->r[1][2] * p.z + tf->t.y,
                 tf->r[2][0] * p.x + tf->r[2][1] * p.y + tf->r[2][2] * p.z + tf->t.z};
    return q;
}

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
        b->wc[s] = xf_point(b->tf[s], m->bounds[s].c);
        double big = fmax(fmax(fabs(b->wc[s].x), fabs(b->wc[s].y)), fabs(b->wc[s].z));
        b->size[s] = big + m->bounds[s].r;
        if (!(b->size[s] < 1e300))
            return false;
    }
    /* Every slot pair's bound at once: a model has few slots, and a check
     * looks at most pairs of them. */
    for (size_t u = 0; u < b->slots; u++) {
        b->lb[u * b->slots + u] = -INFINITY; /* never skips: shapes of one slot */
        for (size_t v = u + 1; v < b->slots; v++) {
            rp_vec3 d = {b->wc[u].x - b->wc[v].x, b->wc[u].y - b->wc[v].y,
                         b->wc[u].z - b->wc[v].z};
            double lb = sqrt(d.x * d.x + d.y * d.y + d.z * d.z) - m->bounds[u].r -
                        m->bounds[v].r - 1e-13 * (b->size[u] + b->size[v] + 1.0);
            if (!m->bounds[u].any || !m->bounds[v].any)
                lb = INFINITY; /* no shape there: no pair */
            b->lb[u * b->slots + v] = b->lb[v * b->slots + u] = lb;
        }
    }
    return true;
}

static inline double bp_slack(const bp_check *b, size_t s, size_t t)
{
    return 1e-13 * (b->size[s] + b->size[t] + 1.0);
}

/* Lower bound of the signed distance between any shape of slot s and any
 * of slot t (when it is >= 0 it bounds their Euclidean distance; below 0
 * it says nothing and is never used to skip a pair below the margin). */
static inline double bp_lb(const bp_check *b, size_t s, size_t t)
{
    return b->lb[s * b->slots + t];
}

/* Lower bound of the distance from placed shape w to anything inside the
 * ball (c, r): from w's core (centre, or the nearest point of its segment)
 * to c, minus both radii; the caller subtracts the slack. */
static double shape_ball_lb(const rp_shape *w, rp_vec3 c, double r)
{
    rp_vec3 p;
    double rw;
    if (w->kind == RP_SHAPE_CAPSULE) {
        rp_vec3 a = w->capsule.a, d = {w->capsule.b.x - a.x, w->capsule.b.y - a.y,
                                       w->capsule.b.z - a.z};
        double dd = d.x * d.x + d.y * d.y + d.z * d.z;
        double t = dd > 0 ? ((c.x - a.x) * d.x + (c.y - a.y) * d.y + (c.z - a.z) * d.z) / dd : 0;
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        p = (rp_vec3){a.x + t * d.x, a.y + t * d.y, a.z + t * d.z};
        rw = w->capsule.radius;
    } else {
        p = w->sphere.center;
        rw = w->sphere.radius;
    }
    double x = p.x - c.x, y = p.y - c.y, z = p.z - c.z;
    return sqrt(x * x + y * y + z * z) - rw - r;
}

/* Shape k in the world, as rp_place_links_ computes it (same arithmetic,
 * so the same bits). */
static inline void place_one(const bp_check *b, size_t k, rp_shape *out)
{
    const rp_link *l = &b->m->links[k];
    const rp_transform *tf = b->tf[l->frame + 1];
    *out = l->shape;
    if (l->shape.kind == RP_SHAPE_CAPSULE) {
        out->capsule.a = xf_point(tf, l->shape.capsule.a);
        out->capsule.b = xf_point(tf, l->shape.capsule.b);
    } else {
        out->sphere.center = xf_point(tf, l->shape.sphere.center);
    }
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

/* FIRST with the broadphase: the same pairs in the same order as
 * check_first, but a slot whose sphere is at least the margin from every
 * scene shape skips its shapes' scene queries (only for margin >= 0, where
 * a shape inside the sphere is at least as far from a scene shape as the
 * sphere is; not for slots with allowed scene pairs), a run of self
 * partners whose slot is at least the margin away is skipped, and shapes
 * are placed only when a query needs them. */
static rp_status check_first_bp(bp_check *b, const rp_scene *sc, rp_shape *w, bool *placed,
                                double margin, rp_check_result *out)
{
    const rp_model *m = b->m;
    size_t n = m->n_links;
    if (sc && rp_scene_shape_count(sc)) {
        signed char clear[RP_BOUND_SLOTS];
        memset(clear, -1, sizeof clear);
        for (size_t i = 0; i < n; i++) {
            size_t s = (size_t)(m->links[i].frame + 1);
            if (margin >= 0 && !m->bounds[s].excl) {
                if (clear[s] < 0) {
                    rp_shape ball = rp_shape_from_sphere(
                        (rp_sphere){b->wc[s], m->bounds[s].r});
                    first_hit h = {0, 0.0, NULL}; /* no exclusions here */
                    clear[s] = rp_scene_below_(sc, &ball, margin + bp_slack(b, s, s),
                                               stop_at_first, &h);
                }
                if (clear[s])
                    continue;
            }
            if (!placed[i]) {
                place_one(b, i, &w[i]);
                placed[i] = true;
            }
            bool done;
            rp_status st = first_scene(m, sc, w, i, margin, out, &done);
            if (st || done)
                return st;
        }
    }
    if (!m->partners)
        return RP_OK;
    for (size_t i = 0; i < n; i++) {
        size_t si = (size_t)(m->links[i].frame + 1);
        for (uint32_t r = m->run_first[i]; r < m->run_first[i + 1]; r++) {
            const rp_pair_run *run = &m->runs[r];
            if (bp_lb(b, si, run->slot) >= margin)
                continue;
            if (!placed[i]) {
                place_one(b, i, &w[i]);
                placed[i] = true;
            }
            /* The nearest point of a capsule's segment to the centre is
             * found with some rounding: the slack covers it (a few eps of
             * the coordinates). */
            if (run->end - run->begin > 1 &&
                shape_ball_lb(&w[i], b->wc[run->slot], m->bounds[run->slot].r) -
                        bp_slack(b, si, run->slot) >=
                    margin)
                continue;
            for (uint32_t e = run->begin; e < run->end; e++) {
                size_t j = m->partners[e];
                if (!placed[j]) {
                    place_one(b, j, &w[j]);
                    placed[j] = true;
                }
                double d = rp_shape_signed_distance(&w[i], &w[j]);
                if (d < margin)
                    return report_first(out, i, RP_PAIR_SELF, j, d);
            }
        }
    }
    return RP_OK;
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
        return strcmp(rp_scene_id_at(sc, a->other), rp_scene_id_at(sc, b->other));
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
static inline bool consider_self(const rp_shape *w, size_t i, size_t j, double margin,
                                 bool collect, rp_check_pair *best, bool *has,
                                 rp_check_result *out)
{
    double d = rp_shape_signed_distance(&w[i], &w[j]);
    if (!*has || d < best->distance) {
        rp_check_pair p = {i, RP_PAIR_SELF, j, d};
        *best = p;
        *has = true;
    }
    return !collect || !(d < margin) || push_violation(out, i, RP_PAIR_SELF, j, d);
}

/* CLOSEST, and with `collect` ALL: the minimum over every pair considered
 * under the tie rule, and when collecting every pair below the margin,
 * sorted.  Returns RP_ERR_NOMEM with the violations freed. */
static rp_status check_min(const rp_model *m, const rp_scene *sc, const rp_shape *w,
                           double margin, bool collect, bp_check *b, rp_check_result *out)
{
    size_t n = m->n_links;
    bool has = false;
    rp_check_pair best = {0, RP_PAIR_SCENE, 0, 0.0};
    for (size_t i = 0; i < n; i++) {
        if (sc) {
            /* The running minimum is the bound: this link's nearest shape
             * only wins when strictly closer than every earlier pair. */
            double d = has ? best.distance : INFINITY;
            size_t e = 0;
            bool found;
            excl_set x;
            if (!excl_load(&x, m, sc, i))
                goto nomem;
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
        if (!m->skip)
            continue;
        if (b) {
            /* A run can be skipped when none of its pairs can become the
             * minimum (all >= best: ties do not change hands) nor, when
             * collecting, violate the margin. */
            size_t si = (size_t)(m->links[i].frame + 1);
            for (uint32_t r = m->run_first[i]; r < m->run_first[i + 1]; r++) {
                const rp_pair_run *run = &m->runs[r];
                double lb = bp_lb(b, si, run->slot);
                if (has && lb >= best.distance && (!collect || lb >= margin))
                    continue;
                if (has && run->end - run->begin > 1) {
                    lb = shape_ball_lb(&w[i], b->wc[run->slot], m->bounds[run->slot].r) -
                         bp_slack(b, si, run->slot);
                    if (lb >= best.distance && (!collect || lb >= margin))
                        continue;
                }
                for (uint32_t e = run->begin; e < run->end; e++)
                    if (!consider_self(w, i, m->partners[e], margin, collect, &best, &has, out))
                        goto nomem;
            }
            continue;
        }
        for (size_t j = i + 1; j < n; j++)
            if (rp_model_self_pair_(m, i, j) &&
                !consider_self(w, i, j, margin, collect, &best, &has, out))
                goto nomem;
    }
    out->has_min = has;
    out->closest = best;
    out->collision = has && best.distance < margin;
    if (!rp_sort_ctx_(out->violations, out->n_violations, sizeof *out->violations,
                      pair_cmp_ctx, sc))
        goto nomem;
    return RP_OK;

nomem:
    rp_check_result_free(out);
    return RP_ERR_NOMEM;
}

/* ---- entry points ---------------------------------------------------------------- */

rp_status rp_model_check(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                         const rp_transform *frames, size_t n_frames, const rp_check_opts *opts,
                         rp_check_result *out)
{
    if (!out)
        return RP_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!m || n_frames != m->frame_count || (n_frames && !frames))
        return RP_ERR_INVALID_ARG;
    /* NULL options: the protocol's defaults (closest, the model's margin). */
    rp_check_opts defaults = {RP_REPORT_CLOSEST, false, 0.0};
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
    if (m->bounds && (m->partners || !m->skip) && bp_setup(&bpc, m, base, frames, &identity))
        b = &bpc;
    size_t bad_link = 0;
    rp_status st;
    if (b && opts->report == RP_REPORT_FIRST) {
        bool pstack[STACK_LINKS], *placed = pstack;
        if (m->n_links > STACK_LINKS && !(placed = malloc(m->n_links * sizeof *placed))) {
            st = RP_ERR_NOMEM;
        } else {
            memset(placed, 0, m->n_links * sizeof *placed);
            st = check_first_bp(b, scene, world, placed, margin, out);
            if (placed != pstack)
                free(placed);
        }
    } else if ((st = rp_place_links_(m, base, frames, world, &bad_link)) == RP_OK) {
        st = opts->report == RP_REPORT_FIRST
                 ? check_first(m, scene, world, margin, out)
                 : check_min(m, scene, world, margin, opts->report == RP_REPORT_ALL, b, out);
    } else {
        out->closest.link = bad_link; /* which link left the double range */
    }
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
