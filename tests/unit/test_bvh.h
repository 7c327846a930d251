/* SPDX-License-Identifier: MIT */
/*
 * The scene's tree queries against brute force, for the tree tests
 * (test_bvh, test_bvh_dynamic): rp_scene_nearest_ and rp_scene_below_ on
 * one query shape.  Include after test_util.h and scene/scene_int.h.
 */
#ifndef REPOSE_TEST_BVH_H
#define REPOSE_TEST_BVH_H

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "repose/scene.h"
#include "scene/scene_int.h"
#include "test_util.h"

/* Nearest with the tie rule (smallest distance, then smallest id). */
static inline bool brute_nearest(const rp_scene *sc, const rp_shape *q, double *d_out, size_t *idx)
{
    bool found = false;
    for (size_t i = 0; i < rp_scene_shape_count(sc); i++) {
        double d = rp_shape_signed_distance(q, SCENE_SHAPE(sc, i));
        if (!found || d < *d_out ||
            (d == *d_out && strcmp(rp_scene_id_at(sc, i), rp_scene_id_at(sc, *idx)) < 0)) {
            *d_out = d;
            *idx = i;
            found = true;
        }
    }
    return found;
}

typedef struct hits {
    unsigned char *seen;
    double *dist;
    size_t count;
} hits;

static inline bool record(void *ctx, size_t index, double distance)
{
    hits *h = ctx;
    assert_false(h->seen[index]); /* each shape at most once */
    h->seen[index] = 1;
    h->dist[index] = distance;
    h->count++;
    return true;
}

/* rp_scene_nearest_ (also with a bound carried in) and rp_scene_below_
 * against brute force. */
static inline void check_shape_query(const rp_scene *sc, const rp_shape *q, double threshold)
{
    double bd = 0;
    size_t bi = 0;
    bool bf = brute_nearest(sc, q, &bd, &bi);
    double td = INFINITY;
    size_t ti = 0;
    bool found;
    rp_scene_nearest_(sc, q, &td, &ti, &found);
    assert_int_equal(found, bf);
    if (bf) {
        assert_same_bits(td, bd);
        assert_string_equal(rp_scene_id_at(sc, ti), rp_scene_id_at(sc, bi));
        /* A bound carried in equal to the minimum: ties never win. */
        double cd = bd;
        rp_scene_nearest_(sc, q, &cd, &ti, &found);
        assert_false(found);
        assert_same_bits(cd, bd);
    }

    size_t n = rp_scene_shape_count(sc);
    hits h = {calloc(n + 1, 1), calloc(n + 1, sizeof(double)), 0};
    assert_true(rp_scene_below_(sc, q, threshold, record, &h));
    size_t want = 0;
    for (size_t i = 0; i < n; i++) {
        double d = rp_shape_signed_distance(q, SCENE_SHAPE(sc, i));
        if (d < threshold) {
            want++;
            assert_true(h.seen[i]);
            assert_same_bits(h.dist[i], d);
        } else {
            assert_false(h.seen[i]);
        }
    }
    assert_int_equal(h.count, want);
    free(h.seen);
    free(h.dist);
}

#endif /* REPOSE_TEST_BVH_H */
