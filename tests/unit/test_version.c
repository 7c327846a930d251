/* SPDX-License-Identifier: MIT */
/*
 * Scene versions (version.c, chunks.h): a snapshot keeps exactly the
 * content it took while the store goes on changing, both stay valid trees
 * whose queries equal brute force, a change to a shared scene copies only
 * what it writes (structural sharing, measured in bytes), and memory goes
 * back to where it was once the snapshots are gone.
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "scene/chunks.h"
#include "scene/scene_int.h"

#define ID_LEN 24

static rp_shape random_shape(test_rng *r, double half)
{
    rp_shape s;
    memset(&s, 0, sizeof s); /* the bytes a sphere leaves unused compare equal too */
    rp_vec3 c = {rng_uniform(r, -half, half), rng_uniform(r, -half, half),
                 rng_uniform(r, -half, half)};
    double rad = rng_uniform(r, 0.01, 0.3);
    if (rng_next(r) & 1) {
        s.kind = RP_SHAPE_SPHERE;
        s.sphere.center = c;
        s.sphere.radius = rad;
    } else {
        s.kind = RP_SHAPE_CAPSULE;
        s.capsule.a = c;
        s.capsule.b = (rp_vec3){c.x + rng_uniform(r, -0.5, 0.5), c.y, c.z + 0.1};
        s.capsule.radius = rad;
    }
    return s;
}

/* A reference copy of a scene's content: ids and shapes by id. */
typedef struct ref_scene {
    size_t n;
    char (*ids)[ID_LEN];
    rp_shape *shapes;
} ref_scene;

static void ref_take(ref_scene *ref, const rp_scene *sc)
{
    ref->n = rp_scene_shape_count(sc);
    ref->ids = malloc((ref->n ? ref->n : 1) * ID_LEN);
    ref->shapes = malloc((ref->n ? ref->n : 1) * sizeof *ref->shapes);
    for (size_t i = 0; i < ref->n; i++) {
        snprintf(ref->ids[i], ID_LEN, "%s", rp_scene_id_at(sc, i));
        ref->shapes[i] = rp_scene_shape_at(sc, i);
    }
}

static void ref_free(ref_scene *ref)
{
    free(ref->ids);
    free(ref->shapes);
}

/* The scene holds exactly the reference's content, its tree is valid, and
 * nearest-shape queries equal a brute-force scan. */
static void assert_scene_is(const rp_scene *sc, const ref_scene *ref, test_rng *r)
{
    assert_int_equal(rp_scene_shape_count(sc), ref->n);
    for (size_t i = 0; i < ref->n; i++) {
        size_t at = rp_scene_find(sc, ref->ids[i]);
        assert_true(at != SIZE_MAX);
        assert_memory_equal(SCENE_SHAPE(sc, at), &ref->shapes[i], sizeof(rp_shape));
    }
    assert_true(rp_bvh_check_(sc) >= 0);
    for (int k = 0; k < 20; k++) {
        rp_shape q = random_shape(r, 6.0);
        double best = INFINITY, d = INFINITY;
        size_t bi = SIZE_MAX, idx = SIZE_MAX;
        bool found;
        for (size_t i = 0; i < ref->n; i++) {
            double x = rp_shape_signed_distance(&q, &ref->shapes[i]);
            if (x < best || (x == best && strcmp(ref->ids[i], ref->ids[bi]) < 0)) {
                best = x;
                bi = i;
            }
        }
        rp_scene_nearest_(sc, &q, &d, &idx, &found);
        assert_int_equal(found, ref->n > 0);
        if (ref->n) {
            assert_true(d == best);
            assert_string_equal(rp_scene_id_at(sc, idx), ref->ids[bi]);
        }
    }
}

/* One random mutation of scene "s" through the store. */
static void mutate(rp_store *st, test_rng *r, size_t *next_id)
{
    rp_scene *sc = rp_store_find(st, "s");
    size_t n = rp_scene_shape_count(sc);
    unsigned kind = (unsigned)(rng_next(r) % 10);
    char id[ID_LEN];
    if (kind < 5 && n > 0) { /* move */
        snprintf(id, sizeof id, "%s", rp_scene_id_at(sc, rng_next(r) % n));
        rp_shape_put p = {id, random_shape(r, 5.0)};
        assert_int_equal(rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL), RP_OK);
    } else if (kind < 8 || n == 0) { /* new shape */
        snprintf(id, sizeof id, "n%zu", (*next_id)++);
        rp_shape_put p = {id, random_shape(r, 5.0)};
        assert_int_equal(rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL), RP_OK);
    } else { /* remove */
        snprintf(id, sizeof id, "%s", rp_scene_id_at(sc, rng_next(r) % n));
        const char *ids[1] = {id};
        size_t removed = 0;
        assert_int_equal(rp_store_remove(st, "s", ids, 1, NULL, NULL, &removed, NULL), RP_OK);
        assert_int_equal(removed, 1);
    }
}

static rp_store *store_with(size_t n, test_rng *r)
{
    rp_store *st = rp_store_new(NULL);
    rp_shape_put *p = malloc(n * sizeof *p);
    char(*ids)[ID_LEN] = malloc(n * ID_LEN);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], ID_LEN, "s%zu", i);
        p[i].id = ids[i];
        p[i].shape = random_shape(r, 5.0);
    }
    assert_int_equal(rp_store_create(st, "s", p, n, NULL), RP_OK);
    free(p);
    free(ids);
    return st;
}

/* What a store holds once its one scene is deleted, no snapshot ever taken
 * (its scene list keeps its allocation). */
static size_t baseline(void)
{
    test_rng r = {1};
    rp_store *st = store_with(3, &r);
    assert_int_equal(rp_store_delete(st, "s"), RP_OK);
    size_t m = rp_store_memory(st);
    rp_store_free(st);
    return m;
}

/* Snapshots taken between random mutations each keep their content, in
 * whatever order they are freed; the store's scene stays right too. */
static void snapshots_keep_their_version_while_the_store_changes(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 3; seed++) {
        test_rng r = {seed * 7919u};
        rp_store *st = store_with(seed == 1 ? 40 : 1500, &r);
        size_t next_id = 0;
        enum { SNAPS = 6 };
        rp_store *snap[SNAPS];
        ref_scene ref[SNAPS];
        for (int s = 0; s < SNAPS; s++) {
            snap[s] = rp_store_snapshot(st);
            assert_non_null(snap[s]);
            ref_take(&ref[s], rp_store_find(snap[s], "s"));
            for (int k = 0; k < 25; k++)
                mutate(st, &r, &next_id);
            /* Every snapshot so far still holds what it took. */
            for (int t = 0; t <= s; t++)
                assert_scene_is(rp_store_find(snap[t], "s"), &ref[t], &r);
            ref_scene now;
            ref_take(&now, rp_store_find(st, "s"));
            assert_scene_is(rp_store_find(st, "s"), &now, &r);
            ref_free(&now);
        }
        /* Free in a mixed order, checking the others each time. */
        int order[SNAPS] = {3, 0, 5, 1, 4, 2};
        for (int k = 0; k < SNAPS; k++) {
            rp_store_free(snap[order[k]]);
            snap[order[k]] = NULL;
            for (int t = 0; t < SNAPS; t++)
                if (snap[t])
                    assert_scene_is(rp_store_find(snap[t], "s"), &ref[t], &r);
        }
        for (int s = 0; s < SNAPS; s++)
            ref_free(&ref[s]);
        /* Deleting the scene gives back everything but the empty store
         * (the scene's own bytes were part of empty_mem). */
        assert_int_equal(rp_store_delete(st, "s"), RP_OK);
        assert_int_equal(rp_store_memory(st), baseline());
        assert_int_equal(rp_store_shape_count(st), 0);
        rp_store_free(st);
    }
}

/* A snapshot outlives deletion and replacement of its scene in the store. */
static void snapshot_survives_delete_and_replace(void **state)
{
    (void)state;
    test_rng r = {42};
    rp_store *st = store_with(300, &r);
    rp_store *snap = rp_store_snapshot(st);
    ref_scene ref;
    ref_take(&ref, rp_store_find(snap, "s"));
    rp_shape_put p = {"only", random_shape(&r, 1.0)};
    assert_int_equal(rp_store_replace(st, "s", &p, 1, NULL, false, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_shape_count(rp_store_find(st, "s")), 1);
    assert_int_equal(rp_store_shape_count(st), 1);
    assert_scene_is(rp_store_find(snap, "s"), &ref, &r);
    assert_int_equal(rp_store_delete(st, "s"), RP_OK);
    assert_null(rp_store_find(st, "s"));
    assert_scene_is(rp_store_find(snap, "s"), &ref, &r);
    /* The snapshot's scene refuses direct changes: it is shared. */
    assert_int_equal(rp_scene_put(rp_store_find(snap, "s"), &p, 1, NULL, NULL), RP_ERR_INVALID_ARG);
    rp_store_free(snap);
    ref_free(&ref);
    assert_int_equal(rp_store_memory(st), baseline());
    rp_store_free(st);
}

/* Structural sharing: with a snapshot holding a 100k-shape scene, moving,
 * adding or removing one shape copies a few chunks (entries, tree nodes, id
 * index), not the scene.  Measured in bytes the store holds (a budget, not
 * a timing). */
static void one_shape_change_copies_chunks_not_the_scene(void **state)
{
    (void)state;
    test_rng r = {99};
    size_t n = 100000;
    rp_store *st = store_with(n, &r);
    size_t scene_bytes = rp_store_memory(st);
    for (int round = 0; round < 60; round++) {
        rp_store *snap = rp_store_snapshot(st);
        size_t before = rp_store_memory(st);
        char id[ID_LEN];
        int kind = round % 3; /* 0 move, 1 remove, 2 add */
        snprintf(id, sizeof id, kind == 2 ? "new%d" : "s%d",
                 kind == 2 ? round : (int)(rng_next(&r) % n));
        if (kind == 1) {
            const char *ids[1] = {id};
            assert_int_equal(rp_store_remove(st, "s", ids, 1, NULL, NULL, NULL, NULL), RP_OK);
        } else {
            rp_shape_put p = {id, random_shape(&r, 5.0)};
            assert_int_equal(rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL), RP_OK);
        }
        size_t grew = rp_store_memory(st) - before;
        /* Chunk tables (8 bytes per 32 entries or nodes, per 256 index
         * slots), the spare chunks stocked for the change (kept for the
         * next one), and the chunks it wrote: under 3% of the scene, where
         * a copy of the id index alone would be 7%. */
        if (grew >= scene_bytes / 33)
            fail_msg("round %d (%s): grew %zu bytes, scene %zu", round,
                     kind == 0   ? "move"
                     : kind == 1 ? "remove"
                                 : "add",
                     grew, scene_bytes);
        rp_store_free(snap);
    }
    rp_store_free(st);
}

/* The id index under churn: ids come and go for many times the table's
 * size, so removals leave tombstones, insertions reuse them and rebuilds
 * clear them, while snapshots share the table now and then.  After every
 * change each present id is found at its entry and each removed one is
 * absent, in the store's version and in the snapshot's. */
static void id_index_stays_exact_under_churn(void **state)
{
    (void)state;
    test_rng r = {7};
    rp_store *st = store_with(150, &r);
    size_t next = 0, gone_n = 0;
    char gone[64][ID_LEN]; /* recently removed ids */
    rp_store *snap = NULL;
    ref_scene snap_ref = {0};
    size_t most_dead = 0, cleared = 0;
    for (int op = 0; op < 6000; op++) {
        rp_scene *sc = rp_store_find(st, "s");
        size_t n = rp_scene_shape_count(sc);
        char id[ID_LEN];
        /* Remove more than add while large, the reverse while small. */
        bool add = n < 60 || (n < 300 && rng_next(&r) % 2);
        if (add) {
            snprintf(id, sizeof id, "c%zu", next++);
            rp_shape_put p = {id, random_shape(&r, 5.0)};
            assert_int_equal(rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL), RP_OK);
        } else {
            snprintf(id, sizeof id, "%s", rp_scene_id_at(sc, rng_next(&r) % n));
            const char *ids[1] = {id};
            size_t removed = 0;
            assert_int_equal(rp_store_remove(st, "s", ids, 1, NULL, NULL, &removed, NULL), RP_OK);
            assert_int_equal(removed, 1);
            snprintf(gone[gone_n++ % 64], ID_LEN, "%s", id);
        }
        sc = rp_store_find(st, "s");
        n = rp_scene_shape_count(sc);
        assert_int_equal(sc->index_live, n);
        assert_true(n == 0 || sc->index_live + sc->index_dead <= sc->index_slots / 4 * 3);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(rp_scene_find(sc, rp_scene_id_at(sc, i)), i);
        for (size_t g = 0; g < gone_n && g < 64; g++)
            assert_true(rp_scene_find(sc, gone[g]) == SIZE_MAX); /* ids never come back */
        most_dead = sc->index_dead > most_dead ? sc->index_dead : most_dead;
        cleared += most_dead > 0 && sc->index_dead == 0 && n > 0;
        if (op % 97 == 0) { /* a new snapshot now and then */
            if (snap) {
                assert_scene_is(rp_store_find(snap, "s"), &snap_ref, &r);
                ref_free(&snap_ref);
                rp_store_free(snap);
            }
            snap = rp_store_snapshot(st);
            ref_take(&snap_ref, rp_store_find(snap, "s"));
        }
    }
    /* The run did what it is for: tombstones piled up and rebuilds
     * cleared them. */
    assert_true(most_dead > 20 && cleared > 0);
    assert_scene_is(rp_store_find(snap, "s"), &snap_ref, &r);
    ref_free(&snap_ref);
    rp_store_free(snap);
    rp_store_free(st);
}

/* Moves shapes of scene "s" far out, one put at a time, until the tree's
 * quality has degraded enough that a deferred rebuild is wanted; returns
 * it (taken).  ref follows the scene. */
static rp_rebuild *degrade_until_rebuild(rp_store *st, test_rng *r)
{
    for (int k = 0; k < 20000; k++) {
        rp_scene *sc = rp_store_find(st, "s");
        char id[ID_LEN];
        snprintf(id, sizeof id, "%s", rp_scene_id_at(sc, rng_next(r) % rp_scene_shape_count(sc)));
        rp_shape_put p = {id, random_shape(r, 100.0)};
        assert_int_equal(rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL), RP_OK);
        rp_rebuild *rb = rp_store_rebuild_take(st);
        if (rb) {
            /* Only one at a time per scene. */
            assert_null(rp_store_rebuild_take(st));
            return rb;
        }
    }
    fail_msg("the tree never asked for a rebuild");
    return NULL;
}

/* A deferred rebuild (scene.h): the tree degrades, the scene asks, the
 * build runs apart, and the finish installs it without a revision, with or
 * without a snapshot holding the scene; queries stay exact throughout and
 * memory goes back to where it was. */
static void deferred_rebuild_installs_when_the_scene_is_unchanged(void **state)
{
    (void)state;
    for (int with_snapshot = 0; with_snapshot < 2; with_snapshot++) {
        test_rng r = {11 + (uint64_t)with_snapshot};
        rp_store *st = store_with(2000, &r);
        rp_store_defer_rebuilds(st, true);
        rp_rebuild *rb = degrade_until_rebuild(st, &r);
        rp_scene *sc = rp_store_find(st, "s");
        assert_true(sc->tree.want_rebuild && sc->tree.rebuilding);
        ref_scene ref;
        ref_take(&ref, sc);
        assert_scene_is(sc, &ref, &r); /* still exact while it waits */
        double area_before = sc->tree.built_area;
        rp_store *snap = with_snapshot ? rp_store_snapshot(st) : NULL;
        uint64_t rev = rp_store_revision(st);
        rp_rebuild_run(rb);
        assert_true(rp_store_rebuild_finish(st, rb));
        sc = rp_store_find(st, "s");
        assert_false(sc->tree.want_rebuild || sc->tree.rebuilding);
        assert_true(sc->tree.built_area != area_before);
        assert_int_equal(rp_store_revision(st), rev); /* not a mutation */
        assert_scene_is(sc, &ref, &r);
        if (snap) {
            assert_true(rp_store_find(snap, "s") != sc); /* the snapshot kept its own */
            assert_scene_is(rp_store_find(snap, "s"), &ref, &r);
            rp_store_free(snap);
        }
        assert_null(rp_store_rebuild_take(st));
        ref_free(&ref);
        assert_int_equal(rp_store_delete(st, "s"), RP_OK);
        assert_int_equal(rp_store_memory(st), baseline());
        rp_store_free(st);
    }
}

/* A rebuild that finds the scene changed is dropped and the scene asks
 * again; the third miss in a row rebuilds in place.  A rebuild of a scene
 * deleted meanwhile is dropped. */
static void deferred_rebuild_misses_then_rebuilds_in_place(void **state)
{
    (void)state;
    test_rng r = {21};
    rp_store *st = store_with(2000, &r);
    rp_store_defer_rebuilds(st, true);
    rp_rebuild *rb = degrade_until_rebuild(st, &r);
    for (int miss = 1; miss <= 3; miss++) {
        rp_rebuild_run(rb);
        size_t next = 0;
        mutate(st, &r, &next); /* changes the scene under the build */
        bool done = rp_store_rebuild_finish(st, rb);
        rp_scene *sc = rp_store_find(st, "s");
        assert_int_equal(done, miss == 3);
        assert_int_equal(sc->tree.want_rebuild, miss < 3);
        assert_true(rp_bvh_check_(sc) >= 0);
        rb = rp_store_rebuild_take(st);
        assert_int_equal(rb != NULL, miss < 3);
        if (miss == 3)
            break;
    }
    /* Deleted under the build. */
    rb = degrade_until_rebuild(st, &r);
    assert_int_equal(rp_store_delete(st, "s"), RP_OK);
    rp_rebuild_run(rb);
    assert_false(rp_store_rebuild_finish(st, rb));
    assert_int_equal(rp_store_memory(st), baseline());
    rp_store_free(st);
}

/* A scene larger than RP_REBUILD_IN_PLACE_MAX is never rebuilt in place
 * by a finish, however often its rebuilds miss (that would hold the
 * mutating thread, the daemon's event loop, for a whole build): it keeps
 * its tree, stays marked, and the first rebuild that finds it unchanged is
 * installed. */
static void large_scenes_are_not_rebuilt_in_place(void **state)
{
    (void)state;
    test_rng r = {22};
    rp_store *st = store_with(RP_REBUILD_IN_PLACE_MAX + 2000, &r);
    rp_store_defer_rebuilds(st, true);
    rp_rebuild *rb = degrade_until_rebuild(st, &r);
    for (int miss = 1; miss <= 5; miss++) {
        rp_rebuild_run(rb);
        size_t next = 0;
        mutate(st, &r, &next);
        assert_false(rp_store_rebuild_finish(st, rb));
        rp_scene *sc = rp_store_find(st, "s");
        assert_true(sc->tree.want_rebuild);
        assert_true(rp_bvh_check_(sc) >= 0);
        rb = rp_store_rebuild_take(st);
        assert_non_null(rb);
    }
    rp_rebuild_run(rb);
    assert_true(rp_store_rebuild_finish(st, rb)); /* unchanged meanwhile */
    rp_scene *sc = rp_store_find(st, "s");
    assert_false(sc->tree.want_rebuild);
    assert_true(rp_bvh_check_(sc) >= 0);
    rp_store_free(st);
}

/* A large change of a shared scene stocks a copy of every chunk it may
 * write; what it did not use is given back, so once the snapshot is gone
 * the scene holds about what the same scene changed unshared holds. */
static void spare_chunks_do_not_outlive_the_change(void **state)
{
    (void)state;
    size_t mem[2];
    for (int shared = 0; shared < 2; shared++) {
        test_rng r = {5};
        rp_store *st = store_with(20000, &r);
        rp_store *snap = shared ? rp_store_snapshot(st) : NULL;
        enum { N = 3000 };
        static rp_shape_put p[N];
        static char ids[N][ID_LEN];
        for (size_t k = 0; k < N; k++) {
            snprintf(ids[k], ID_LEN, "s%zu", k % 100); /* few chunks written */
            p[k].id = ids[k];
            p[k].shape = random_shape(&r, 5.0);
        }
        assert_int_equal(rp_store_put(st, "s", p, N, NULL, false, NULL, NULL), RP_OK);
        rp_store_free(snap);
        mem[shared] = rp_store_memory(st);
        rp_store_free(st);
    }
    /* One change's worth of spares (a few hundred KiB at most) may stay;
     * a stock for the whole change would be megabytes. */
    if (mem[1] > mem[0] + 256 * 1024)
        fail_msg("shared: %zu bytes, unshared: %zu", mem[1], mem[0]);
}

/* s moved by up to `step` along each axis. */
static rp_shape nudged(rp_shape s, test_rng *r, double step)
{
    rp_vec3 d = {rng_uniform(r, -step, step), rng_uniform(r, -step, step),
                 rng_uniform(r, -step, step)};
    if (s.kind == RP_SHAPE_SPHERE) {
        s.sphere.center =
            (rp_vec3){s.sphere.center.x + d.x, s.sphere.center.y + d.y, s.sphere.center.z + d.z};
    } else if (s.kind == RP_SHAPE_CAPSULE) {
        s.capsule.a = (rp_vec3){s.capsule.a.x + d.x, s.capsule.a.y + d.y, s.capsule.a.z + d.z};
        s.capsule.b = (rp_vec3){s.capsule.b.x + d.x, s.capsule.b.y + d.y, s.capsule.b.z + d.z};
    }
    return s;
}

/* Puts of many shapes at once into a scene a snapshot holds (a robot's
 * links a step further, objects nudged or sent across the scene, new
 * shapes, shapes turned into half-spaces and back): every chunk copy they
 * make was stocked before anything changed (rp_chunks_own never falls back
 * to an allocation, which could fail half-way), the snapshot keeps its
 * content, and both trees stay valid with queries equal to brute force. */
static void group_changes_of_a_shared_scene_copy_only_what_they_stocked(void **state)
{
    (void)state;
    test_rng r = {77};
    rp_store *st = store_with(20000, &r);
    size_t before = rp_chunks_unstocked_, next_id = 0;
    enum { N = 600 };
    static rp_shape_put p[N];
    static char ids[N][ID_LEN];
    for (int round = 0; round < 60; round++) {
        rp_store *snap = rp_store_snapshot(st);
        assert_non_null(snap);
        ref_scene ref;
        bool check = round % 10 >= 8;
        if (check)
            ref_take(&ref, rp_store_find(snap, "s"));
        const rp_scene *sc = rp_store_find(st, "s");
        /* Odd rounds: 64 neighbouring entries (shapes put together, as an
         * object's) changed in every way; even ones: 600 shapes all over
         * the scene nudged by a millimetre (refits only, whose paths touch
         * more chunks than the spares a previous change leaves). */
        bool mixed = round % 2;
        size_t m = mixed ? 64 : N;
        size_t n = rp_scene_shape_count(sc), first = rng_next(&r) % (n - m), planes = 0;
        for (size_t k = 0; k < m; k++) {
            unsigned what = mixed ? (unsigned)(rng_next(&r) % 16) : 0;
            size_t at = mixed ? first + k : rng_next(&r) % n;
            snprintf(ids[k], ID_LEN, "%s", rp_scene_id_at(sc, at));
            rp_shape old = rp_scene_shape_at(sc, at);
            if (what < 11) {
                p[k].shape = nudged(old, &r, mixed ? 0.2 : 0.001);
            } else if (what < 13) {
                p[k].shape = random_shape(&r, 5.0); /* across the scene */
            } else if (what < 14) {
                snprintf(ids[k], ID_LEN, "g%zu", next_id++);
                p[k].shape = random_shape(&r, 5.0);
            } else if (what < 15 && old.kind != RP_SHAPE_HALFSPACE && sc->n_planes + planes < 8) {
                planes++;
                p[k].shape =
                    rp_shape_from_halfspace((rp_halfspace){{0, 0, 1}, rng_uniform(&r, -8.0, -6.0)});
            } else {
                p[k].shape = random_shape(&r, 5.0); /* a half-space back in the tree */
            }
            p[k].id = ids[k];
        }
        assert_int_equal(rp_store_put(st, "s", p, m, NULL, false, NULL, NULL), RP_OK);
        assert_int_equal(rp_chunks_unstocked_, before);
        if (check) {
            assert_scene_is(rp_store_find(snap, "s"), &ref, &r);
            ref_free(&ref);
            ref_scene now;
            ref_take(&now, rp_store_find(st, "s"));
            assert_scene_is(rp_store_find(st, "s"), &now, &r);
            ref_free(&now);
        }
        rp_store_free(snap);
    }
    rp_store_free(st);
}

/* Mutations that fail leave both the store's version and the snapshot's
 * as they were. */
static void failed_mutations_on_a_shared_scene_change_nothing(void **state)
{
    (void)state;
    test_rng r = {5};
    rp_store_limits lim = {310, 0};
    rp_store *st = rp_store_new(&lim);
    rp_shape_put *p = malloc(300 * sizeof *p);
    char(*ids)[ID_LEN] = malloc(300 * ID_LEN);
    for (size_t i = 0; i < 300; i++) {
        snprintf(ids[i], ID_LEN, "s%zu", i);
        p[i].id = ids[i];
        p[i].shape = random_shape(&r, 5.0);
    }
    assert_int_equal(rp_store_create(st, "s", p, 300, NULL), RP_OK);
    rp_store *snap = rp_store_snapshot(st);
    ref_scene ref;
    ref_take(&ref, rp_store_find(st, "s"));
    uint64_t rev = rp_scene_revision(rp_store_find(st, "s"));
    uint64_t wrong = rev + 100, actual = 0;
    assert_int_equal(rp_store_put(st, "s", p, 1, &wrong, false, NULL, &actual), RP_ERR_REVISION);
    assert_int_equal(actual, rev);
    /* Over the shape limit: 20 new ids into 300 of at most 310. */
    for (size_t i = 0; i < 20; i++)
        snprintf(ids[i], ID_LEN, "x%zu", i);
    assert_int_equal(rp_store_put(st, "s", p, 20, NULL, false, NULL, NULL), RP_ERR_LIMIT);
    assert_scene_is(rp_store_find(st, "s"), &ref, &r);
    assert_scene_is(rp_store_find(snap, "s"), &ref, &r);
    assert_int_equal(rp_scene_revision(rp_store_find(st, "s")), rev);
    rp_store_free(snap);
    ref_free(&ref);
    free(p);
    free(ids);
    rp_store_free(st);
}

/* A model of one sphere on the base. */
static void one_link_model(rp_link *link, rp_model_def *def)
{
    memset(link, 0, sizeof *link);
    link->id = "l0";
    link->frame = -1;
    link->shape.kind = RP_SHAPE_SPHERE;
    link->shape.sphere.radius = 0.1;
    memset(def, 0, sizeof *def);
    def->links = link;
    def->n_links = 1;
}

/* rp_store_restore undoes mutations of every kind (put, remove, replace,
 * create, delete, model put and delete): scenes, models, the revision and
 * the shape count come back, queries on the restored scene equal brute
 * force, later mutations work, and memory returns to where it was. */
static void restore_undoes_every_kind_of_mutation(void **state)
{
    (void)state;
    test_rng r = {4711};
    rp_store *st = store_with(700, &r);
    rp_link link;
    rp_model_def def;
    one_link_model(&link, &def);
    assert_int_equal(rp_store_model_put(st, "m", &def, NULL, NULL), RP_OK);
    size_t next_id = 0;
    for (int round = 0; round < 12; round++) {
        ref_scene before;
        ref_take(&before, rp_store_find(st, "s"));
        uint64_t rev = rp_store_revision(st), shapes = rp_store_shape_count(st);
        size_t mem = rp_store_memory(st);
        const rp_model *m_before = rp_store_model_find(st, "m");
        rp_store *snap = rp_store_snapshot(st);
        assert_non_null(snap);
        int kind = round % 6;
        if (kind == 0) {
            for (int k = 0; k < 30; k++)
                mutate(st, &r, &next_id);
        } else if (kind == 1) {
            rp_shape_put p = {"only", random_shape(&r, 1.0)};
            assert_int_equal(rp_store_replace(st, "s", &p, 1, NULL, false, NULL, NULL), RP_OK);
        } else if (kind == 2) {
            assert_int_equal(rp_store_delete(st, "s"), RP_OK);
        } else if (kind == 3) {
            for (int k = 0; k < 20; k++) { /* enough new scenes to grow the list */
                char name[16];
                snprintf(name, sizeof name, "new%d", k);
                rp_shape_put p = {"a", random_shape(&r, 1.0)};
                assert_int_equal(rp_store_create(st, name, &p, 1, NULL), RP_OK);
            }
        } else if (kind == 4) {
            assert_int_equal(rp_store_model_delete(st, "m"), RP_OK);
        } else {
            assert_int_equal(rp_store_model_put(st, "m", &def, NULL, NULL), RP_OK);
            assert_int_equal(rp_store_model_put(st, "m2", &def, NULL, NULL), RP_OK);
        }
        assert_true(rp_store_revision(st) > rev);
        assert_int_equal(rp_store_restore(st, snap), RP_OK); /* frees snap */
        assert_int_equal(rp_store_revision(st), rev);
        assert_int_equal(rp_store_shape_count(st), shapes);
        assert_int_equal(rp_store_scene_count(st), 1);
        assert_int_equal(rp_store_model_count(st), 1);
        assert_ptr_equal(rp_store_model_find(st, "m"), m_before);
        assert_scene_is(rp_store_find(st, "s"), &before, &r);
        /* The lists are the snapshot's now (exactly as long as needed);
         * nothing else stays allocated. */
        assert_true(rp_store_memory(st) <= mem);
        assert_true(rp_store_memory(st) + 40 * sizeof(void *) >= mem);
        ref_free(&before);
        mutate(st, &r, &next_id); /* and the store goes on */
    }
    /* Not a snapshot of this store, or not a snapshot at all. */
    rp_store *other = store_with(3, &r);
    rp_store *osnap = rp_store_snapshot(other);
    assert_int_equal(rp_store_restore(st, osnap), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_store_restore(st, other), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_store_restore(osnap, osnap), RP_ERR_INVALID_ARG);
    rp_store_free(osnap);
    rp_store_free(other);
    rp_store_free(st);
}

/* The commit hook (the daemon's journal): every mutation calls it once,
 * with its typed change record (kind, name, revision it is about to take,
 * what it writes, the scene as it was), after its checks (a mutation that
 * fails them never calls it); a refusal fails the mutation with
 * RP_ERR_ABORTED and changes nothing, also on a scene a snapshot shares. */
typedef struct hook_log {
    int calls;
    uint64_t revision;
    bool refuse;
    rp_change last; /* the record of the last call; its pointers are stale after it */
    char name[16];
    bool had_before; /* last.before was a scene, of this revision and count */
    uint64_t before_revision;
    size_t before_count;
    size_t model_links; /* last.model: its links, and the first one's id */
    char model_link0[16];
} hook_log;

static int hook(void *ctx, const rp_change *change)
{
    hook_log *h = ctx;
    h->calls++;
    h->revision = change->revision;
    h->last = *change;
    snprintf(h->name, sizeof h->name, "%s", change->name);
    h->had_before = change->before != NULL;
    h->model_links = change->model ? change->model->n_links : 0;
    snprintf(h->model_link0, sizeof h->model_link0, "%s",
             h->model_links ? change->model->links[0].id : "");
    if (change->before) {
        h->before_revision = rp_scene_revision(change->before);
        h->before_count = rp_scene_shape_count(change->before);
    }
    return h->refuse ? -1 : 0;
}

/* The record of a mutation of kind `kind` (run_kind), as the hook saw it:
 * `before` is the scene the store held under that name when it ran. */
static void assert_record(const hook_log *h, int kind, uint64_t rev_s, size_t count_s,
                          const rp_model_def *def)
{
    const rp_change *c = &h->last;
    static const rp_change_kind kinds[] = {
        RP_CHANGE_SCENE_PUT,    RP_CHANGE_SCENE_PUT,     RP_CHANGE_SCENE_PUT,
        RP_CHANGE_SCENE_REMOVE, RP_CHANGE_SCENE_REPLACE, RP_CHANGE_SCENE_PUT,
        RP_CHANGE_SCENE_DELETE, RP_CHANGE_MODEL_PUT,     RP_CHANGE_MODEL_DELETE};
    if (kind == 5) { /* create, put or replace of "t": a scene that is new */
        assert_true(c->kind == RP_CHANGE_SCENE_PUT || c->kind == RP_CHANGE_SCENE_REPLACE);
        assert_true(c->created);
        assert_false(h->had_before);
        assert_string_equal(h->name, "t");
        assert_int_equal(c->n_shapes, 1);
        return;
    }
    assert_int_equal(c->kind, kinds[kind]);
    assert_false(c->created);
    static const int shapes_of[] = {1, 1, 400, 0, 1, 0, 0, 0, 0};
    assert_int_equal(c->n_shapes, (size_t)shapes_of[kind]);
    assert_int_equal(c->n_ids, kind == 3 ? 1 : 0);
    if (kind <= 4) { /* the scene as it was (a copy when a snapshot shares it) */
        assert_string_equal(h->name, "s");
        assert_true(h->had_before);
        assert_int_equal(h->before_revision, rev_s);
        assert_int_equal(h->before_count, count_s);
    } else if (kind == 6) {
        assert_string_equal(h->name, "t");
        assert_true(h->had_before);
    } else {
        assert_string_equal(h->name, "m");
        assert_false(h->had_before);
        /* A model.put's record holds the definition as the store keeps it
         * (its own copy, rp_model_definition), not the caller's. */
        if (kind == 7) {
            assert_non_null(c->model);
            assert_ptr_not_equal(c->model, def);
            assert_int_equal(h->model_links, def->n_links);
            assert_string_equal(h->model_link0, def->links[0].id);
        } else {
            assert_null(c->model);
        }
    }
}

static rp_status run_kind(rp_store *st, int kind, test_rng *r, size_t *next_id,
                          const rp_model_def *def)
{
    rp_scene *sc = rp_store_find(st, "s");
    char id[ID_LEN];
    switch (kind) {
    case 0: { /* move */
        snprintf(id, sizeof id, "%s", rp_scene_id_at(sc, rng_next(r) % rp_scene_shape_count(sc)));
        rp_shape_put p = {id, random_shape(r, 5.0)};
        return rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL);
    }
    case 1: { /* one new shape */
        snprintf(id, sizeof id, "h%zu", (*next_id)++);
        rp_shape_put p = {id, random_shape(r, 5.0)};
        return rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL);
    }
    case 2: { /* many new shapes: a full tree build */
        enum { N = 400 };
        rp_shape_put p[N];
        char(*ids)[ID_LEN] = malloc(N * ID_LEN);
        for (int k = 0; k < N; k++) {
            snprintf(ids[k], ID_LEN, "b%zu", (*next_id)++);
            p[k] = (rp_shape_put){ids[k], random_shape(r, 5.0)};
        }
        rp_status st2 = rp_store_put(st, "s", p, N, NULL, false, NULL, NULL);
        free(ids);
        return st2;
    }
    case 3: { /* remove */
        snprintf(id, sizeof id, "%s", rp_scene_id_at(sc, rng_next(r) % rp_scene_shape_count(sc)));
        const char *ids[1] = {id};
        return rp_store_remove(st, "s", ids, 1, NULL, NULL, NULL, NULL);
    }
    case 4: { /* replace the scene */
        rp_shape_put p = {"only", random_shape(r, 1.0)};
        return rp_store_replace(st, "s", &p, 1, NULL, false, NULL, NULL);
    }
    case 5: { /* create, and put and replace that create */
        rp_shape_put p = {"a", random_shape(r, 1.0)};
        unsigned how = (unsigned)(rng_next(r) % 3);
        return how == 0   ? rp_store_create(st, "t", &p, 1, NULL)
               : how == 1 ? rp_store_put(st, "t", &p, 1, NULL, true, NULL, NULL)
                          : rp_store_replace(st, "t", &p, 1, NULL, true, NULL, NULL);
    }
    case 6:
        return rp_store_delete(st, "t");
    case 7:
        return rp_store_model_put(st, "m", def, NULL, NULL);
    default:
        return rp_store_model_delete(st, "m");
    }
}

static void commit_hook_sees_every_mutation_and_a_refusal_changes_nothing(void **state)
{
    (void)state;
    test_rng r = {99};
    rp_store *st = store_with(600, &r);
    rp_link link;
    rp_model_def def;
    one_link_model(&link, &def);
    hook_log h;
    memset(&h, 0, sizeof h);
    rp_store_set_commit_hook(st, hook, &h);
    size_t next_id = 0;
    for (int round = 0; round < 36; round++) {
        int kind = round % 9;
        /* t exists for delete; m exists for model.delete. */
        if (kind == 6 && !rp_store_find(st, "t"))
            continue;
        if (kind == 8 && !rp_store_model_find(st, "m"))
            continue;
        bool shared = round % 2 == 1; /* a snapshot shares the scene */
        rp_store *snap = shared ? rp_store_snapshot(st) : NULL;
        ref_scene before;
        ref_take(&before, rp_store_find(st, "s"));
        uint64_t rev = rp_store_revision(st), shapes = rp_store_shape_count(st);
        size_t scenes = rp_store_scene_count(st), models = rp_store_model_count(st);
        const rp_model *m = rp_store_model_find(st, "m");
        test_rng again = r;
        size_t id_again = next_id;
        const rp_scene *s_now = rp_store_find(st, "s");
        uint64_t rev_s = rp_scene_revision(s_now);
        size_t count_s = rp_scene_shape_count(s_now);
        /* Refused: nothing changes. */
        memset(&h, 0, sizeof h);
        h.refuse = true;
        assert_int_equal(run_kind(st, kind, &r, &next_id, &def), RP_ERR_ABORTED);
        assert_int_equal(h.calls, 1);
        assert_int_equal(h.revision, rev + 1);
        assert_record(&h, kind, rev_s, count_s, &def);
        assert_int_equal(rp_store_revision(st), rev);
        assert_int_equal(rp_store_shape_count(st), shapes);
        assert_int_equal(rp_store_scene_count(st), scenes);
        assert_int_equal(rp_store_model_count(st), models);
        assert_ptr_equal(rp_store_model_find(st, "m"), m);
        assert_scene_is(rp_store_find(st, "s"), &before, &r);
        if (snap)
            assert_scene_is(rp_store_find(snap, "s"), &before, &r);
        /* Accepted: the same mutation commits at that revision. */
        r = again;
        next_id = id_again;
        memset(&h, 0, sizeof h);
        assert_int_equal(run_kind(st, kind, &r, &next_id, &def), RP_OK);
        assert_int_equal(h.calls, 1);
        assert_int_equal(h.revision, rev + 1);
        assert_record(&h, kind, rev_s, count_s, &def);
        assert_int_equal(rp_store_revision(st), rev + 1);
        if (snap)
            assert_scene_is(rp_store_find(snap, "s"), &before, &r);
        ref_free(&before);
        rp_store_free(snap);
    }
    /* Mutations that fail their checks never reach the hook. */
    memset(&h, 0, sizeof h);
    rp_shape_put p = {"x", random_shape(&r, 1.0)};
    uint64_t wrong = 12345, actual = 0;
    assert_int_equal(rp_store_put(st, "s", &p, 1, &wrong, false, NULL, &actual), RP_ERR_REVISION);
    assert_int_equal(rp_store_put(st, "nope", &p, 1, NULL, false, NULL, NULL), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_create(st, "s", &p, 1, NULL), RP_ERR_EXISTS);
    assert_int_equal(rp_store_delete(st, "nope"), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_model_delete(st, "nope"), RP_ERR_NOT_FOUND);
    assert_int_equal(h.calls, 0);
    /* Without a hook, mutations go on as before. */
    rp_store_set_commit_hook(st, NULL, NULL);
    assert_int_equal(rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL), RP_OK);
    assert_int_equal(h.calls, 0);
    rp_store_free(st);
}

/* A bulk load (the journal replay) leaves the trees alone and builds each
 * changed one once at its end: the same mutations give the same content
 * as without it, with a valid tree whose queries equal brute force. */
static void bulk_load_builds_each_changed_tree_once_at_the_end(void **state)
{
    (void)state;
    test_rng r = {555}, r2;
    rp_store *a = store_with(400, &r);
    r = (test_rng){555};
    rp_store *b = store_with(400, &r);
    assert_int_equal(rp_store_bulk_load(b, true), RP_OK);
    r2 = r;
    size_t id_a = 0, id_b = 0;
    for (int k = 0; k < 600; k++) {
        mutate(a, &r, &id_a);
        mutate(b, &r2, &id_b);
    }
    /* A scene created, filled and partly replaced during the load. */
    for (rp_store **st = (rp_store *[]){a, b, NULL}; *st; st++) {
        test_rng q = {77};
        enum { N = 120 };
        rp_shape_put p[N];
        char(*ids)[ID_LEN] = malloc(N * ID_LEN);
        for (int k = 0; k < N; k++) {
            snprintf(ids[k], ID_LEN, "c%d", k);
            p[k] = (rp_shape_put){ids[k], random_shape(&q, 4.0)};
        }
        assert_int_equal(rp_store_create(*st, "c", p, N / 2, NULL), RP_OK);
        assert_int_equal(rp_store_put(*st, "c", p + N / 2, N / 2, NULL, false, NULL, NULL), RP_OK);
        assert_int_equal(rp_store_replace(*st, "d", p, N, NULL, true, NULL, NULL), RP_OK);
        free(ids);
    }
    assert_int_equal(rp_store_bulk_load(b, false), RP_OK);
    assert_int_equal(rp_store_revision(a), rp_store_revision(b));
    const char *names[] = {"s", "c", "d"};
    for (int i = 0; i < 3; i++) {
        ref_scene ref;
        ref_take(&ref, rp_store_find(a, names[i]));
        assert_true(ref.n > 16); /* past the brute-force size: queries use the tree */
        assert_scene_is(rp_store_find(b, names[i]), &ref, &r);
        ref_free(&ref);
    }
    /* Mutations after the load keep the rebuilt tree up to date. */
    r2 = r;
    for (int k = 0; k < 100; k++) {
        mutate(a, &r, &id_a);
        mutate(b, &r2, &id_b);
    }
    ref_scene ref;
    ref_take(&ref, rp_store_find(a, "s"));
    assert_scene_is(rp_store_find(b, "s"), &ref, &r);
    ref_free(&ref);
    rp_store_free(a);
    rp_store_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(snapshots_keep_their_version_while_the_store_changes),
        cmocka_unit_test(snapshot_survives_delete_and_replace),
        cmocka_unit_test(one_shape_change_copies_chunks_not_the_scene),
        cmocka_unit_test(id_index_stays_exact_under_churn),
        cmocka_unit_test(spare_chunks_do_not_outlive_the_change),
        cmocka_unit_test(deferred_rebuild_installs_when_the_scene_is_unchanged),
        cmocka_unit_test(deferred_rebuild_misses_then_rebuilds_in_place),
        cmocka_unit_test(large_scenes_are_not_rebuilt_in_place),
        cmocka_unit_test(failed_mutations_on_a_shared_scene_change_nothing),
        cmocka_unit_test(group_changes_of_a_shared_scene_copy_only_what_they_stocked),
        cmocka_unit_test(restore_undoes_every_kind_of_mutation),
        cmocka_unit_test(commit_hook_sees_every_mutation_and_a_refusal_changes_nothing),
        cmocka_unit_test(bulk_load_builds_each_changed_tree_once_at_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
