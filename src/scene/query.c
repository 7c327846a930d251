/* SPDX-License-Identifier: MIT */
/*
 * Scene queries: distance from query shapes to scene shapes, nearest pair,
 * and the pairs below a threshold: through the bounding-volume hierarchy
 * (bvh.c) over the whole scene, by a scan over a requested subset.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scene_int.h"
#include "util/grow.h"

/* Total order used for ties: distance, then query index, then shape id. */
static int pair_cmp(const rp_scene *sc, const rp_pair *a, const rp_pair *b)
{
    if (a->distance < b->distance)
        return -1;
    if (a->distance > b->distance)
        return 1;
    if (a->query != b->query)
        return a->query < b->query ? -1 : 1;
    return rp_scene_index_cmp_(sc, a->shape, b->shape);
}

/* Appends a pair; RP_ERR_LIMIT when max_pairs (0: none) are already
 * there, RP_ERR_NOMEM when the array cannot grow. */
static rp_status push_pair(rp_query_result *r, rp_pair p, size_t max_pairs)
{
    if (max_pairs && r->n_pairs >= max_pairs)
        return RP_ERR_LIMIT;
    if (r->n_pairs == r->cap_pairs) {
        rp_pair *grown = rp_grow_(r->pairs, &r->cap_pairs, r->n_pairs + 1, sizeof *grown, 16);
        if (!grown)
            return RP_ERR_NOMEM;
        r->pairs = grown;
    }
    r->pairs[r->n_pairs++] = p;
    return RP_OK;
}

/* pair_cmp for rp_sort_ctx_ (the context is the scene). */
static int pair_cmp_ctx(const void *a, const void *b, const void *ctx)
{
    return pair_cmp(ctx, a, b);
}

/* Collects pairs below the threshold for one query shape (bvh.c visitor). */
typedef struct collector {
    rp_query_result *out;
    size_t query;
    bool first_only;
    size_t max_pairs;
    rp_status status; /* RP_OK, or why collecting stopped */
} collector;

static bool collect_pair(void *ctx, size_t index, double distance)
{
    collector *c = ctx;
    rp_pair p = {c->query, index, distance};
    c->status = push_pair(c->out, p, c->max_pairs);
    if (c->status != RP_OK)
        return false;
    return !c->first_only;
}

/* The scan over a subset of the scene (scene.distance/check with ids). */
static rp_status query_subset(const rp_scene *sc, const rp_query *q, rp_query_result *out)
{
    for (size_t qi = 0; qi < q->n_shapes; qi++) {
        const rp_shape *qs = &q->shapes[qi];
        for (size_t k = 0; k < q->n_subset; k++) {
            size_t e = q->subset[k];
            if (rp_ignored_at_(sc, e) || rp_cloud_index_ignored_(sc, e))
                continue;
            rp_shape buf;
            rp_pair p = {qi, e, rp_shape_signed_distance(qs, rp_scene_shape_(sc, e, &buf))};
            if (!q->no_nearest && (!out->has_min || pair_cmp(sc, &p, &out->nearest) < 0)) {
                out->nearest = p;
                out->has_min = true;
            }
            if (q->collect && p.distance < q->threshold) {
                rp_status st = push_pair(out, p, q->max_pairs);
                if (st != RP_OK)
                    return st;
                if (q->first_only) {
                    out->nearest = p;
                    out->has_min = true;
                    return RP_OK;
                }
            }
        }
    }
    return RP_OK;
}

/* The whole scene through the tree: first the pairs below the threshold
 * (with first_only, up to the first one found, which is then also the
 * nearest, as scene.h specifies), then the nearest pair over every query
 * shape (queries in index order, so a later query wins only when strictly
 * closer: the tie rule). */
static rp_status query_all(const rp_scene *sc, const rp_query *q, rp_query_result *out)
{
    if (q->collect) {
        for (size_t qi = 0; qi < q->n_shapes; qi++) {
            collector c = {out, qi, q->first_only, q->max_pairs, RP_OK};
            bool done = !rp_scene_below_(sc, &q->shapes[qi], q->threshold, collect_pair, &c);
            if (c.status != RP_OK)
                return c.status;
            if (done && q->first_only) {
                out->nearest = out->pairs[0];
                out->has_min = true;
                return RP_OK;
            }
        }
    }
    if (q->no_nearest)
        return RP_OK;
    double best = INFINITY;
    size_t best_idx = 0;
    for (size_t qi = 0; qi < q->n_shapes; qi++) {
        bool found;
        rp_scene_nearest_(sc, &q->shapes[qi], &best, &best_idx, &found);
        if (found) {
            out->nearest.query = qi;
            out->nearest.shape = best_idx;
            out->nearest.distance = best;
            out->has_min = true;
        }
    }
    return RP_OK;
}

rp_status rp_scene_query(const rp_scene *sc, const rp_query *q, rp_query_result *out)
{
    memset(out, 0, sizeof *out);
    rp_status st = rp_ignore_open_(sc, q->ignore, q->n_ignore, NULL);
    if (st)
        return st;
    rp_meter_open_(q->work);
    st = q->subset ? query_subset(sc, q, out) : query_all(sc, q, out);
    st = rp_meter_close_(q->work, st);
    rp_ignore_close_();
    if (st) {
        rp_query_result_free(out);
        return st;
    }
    if (!rp_sort_ctx_(out->pairs, out->n_pairs, sizeof *out->pairs, pair_cmp_ctx, sc)) {
        rp_query_result_free(out);
        return RP_ERR_NOMEM;
    }
    return RP_OK;
}

void rp_query_result_free(rp_query_result *r)
{
    if (!r)
        return;
    free(r->pairs);
    memset(r, 0, sizeof *r);
}
