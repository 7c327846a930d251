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
    for (size_t i = 0; i < x->n; i++)
        if (x->v[i] == e)
            return true;
    return false;
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

/* FIRST: scene pairs link by link, then self pairs; stops at the first pair
 * below the margin and reports it as the only violation.  Allocates only
 * for that violation. */
static rp_status check_first(const rp_model *m, const rp_scene *sc, const rp_shape *w,
                             double margin, rp_check_result *out)
{
    size_t n = m->n_links;
    if (sc) {
        for (size_t i = 0; i < n; i++) {
            excl_set x;
            if (!excl_load(&x, m, sc, i))
                return RP_ERR_NOMEM;
            first_hit h = {0, 0.0, &x};
            bool hit = !rp_scene_below_(sc, &w[i], margin, stop_at_first, &h);
            free(x.heap);
            if (hit)
                return report_first(out, i, RP_PAIR_SCENE, h.index, h.distance);
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

/* CLOSEST, and with `collect` ALL: the minimum over every pair considered
 * under the tie rule, and when collecting every pair below the margin,
 * sorted.  Returns RP_ERR_NOMEM with the violations freed. */
static rp_status check_min(const rp_model *m, const rp_scene *sc, const rp_shape *w,
                           double margin, bool collect, rp_check_result *out)
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
        for (size_t j = i + 1; j < n; j++) {
            if (!rp_model_self_pair_(m, i, j))
                continue;
            double d = rp_shape_signed_distance(&w[i], &w[j]);
            if (!has || d < best.distance) {
                best.link = i;
                best.kind = RP_PAIR_SELF;
                best.other = j;
                best.distance = d;
                has = true;
            }
            if (collect && d < margin && !push_violation(out, i, RP_PAIR_SELF, j, d))
                goto nomem;
        }
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
    size_t bad_link = 0;
    rp_status st = rp_place_links_(m, base, frames, world, &bad_link);
    if (st == RP_OK)
        st = opts->report == RP_REPORT_FIRST
                 ? check_first(m, scene, world, margin, out)
                 : check_min(m, scene, world, margin, opts->report == RP_REPORT_ALL, out);
    else
        out->closest.link = bad_link; /* which link left the double range */
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
