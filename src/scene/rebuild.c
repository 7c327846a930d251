/* SPDX-License-Identifier: MIT */
/*
 * When a scene's tree is built whole instead of edited: the store's rebuild
 * policy.  bvh.c builds and measures trees; this file decides.
 *
 *   - Bulk: scene.create, and a put adding more than count/4 + 64 shapes,
 *     build the whole tree (rp_bvh_bulk_; scene.c).
 *   - Quality: after a mutation (rp_bvh_maintain_), once the leaf
 *     insertions and removals since the last check exceed count/4 + 64, the
 *     summed inner-node area is measured (O(n), so O(1) amortised per
 *     change) and the tree is rebuilt when it is more than twice the area
 *     measured at the last build; it is also rebuilt if the height ever
 *     exceeds 2 ceil(log2 n) + 4 (a guard: the AVL bound is lower).
 *     Rebuilds cost O(n log n) at most once per count/4 changes: O(log n)
 *     amortised.
 *   - Deferred (rp_store_defer_rebuilds, scene.h): the mutation only marks
 *     the scene; the owner takes the rebuild (rp_store_rebuild_take), a
 *     worker builds a private tree from the version taken (rp_rebuild_run),
 *     and the owner installs it if the scene has not changed meanwhile
 *     (rp_store_rebuild_finish).  After three misses in a row a scene of at
 *     most RP_REBUILD_IN_PLACE_MAX shapes is rebuilt in place; a larger one
 *     keeps its tree (exact, only slower) and is taken again.
 *   - Bulk loading (rp_store_bulk_load): mutations leave the tree stale,
 *     and the end of the load rebuilds every stale tree once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scene_int.h"

/* A bulk build or a quality check happens after this many changes beyond
 * count/4 (small scenes would otherwise check all the time). */
#define CHURN_MIN 64

bool rp_bvh_bulk_(size_t count, size_t fresh)
{
    return fresh >= 2 && (count == 0 || fresh > count / 4 + CHURN_MIN);
}

static uint32_t ceil_log2(size_t n)
{
    uint32_t k = 0;
    while (k < 64 && ((size_t)1 << k) < n)
        k++;
    return k;
}

/* Rebuilds sc's tree in place (a mutation's thread).  False, with the tree
 * as it was (valid, just slower), when memory is short.  A rebuild writes
 * every node and every entry's leaf: when another version shares them,
 * that takes a copy of each shared chunk. */
static bool rebuild_now(rp_scene *sc)
{
    rp_store *st = sc->store;
    if (!rp_chunks_stock(&sc->tree.nodes, sizeof(rp_bvh_node), SIZE_MAX, &st->bytes) ||
        !rp_chunks_stock(&sc->entries, sizeof(scene_entry), SIZE_MAX, &st->bytes))
        return false;
    rp_bvh_item *items = rp_bvh_items_new_(sc->count);
    if (!items)
        return false;
    rp_bvh_rebuild_(sc, items); /* frees items */
    return true;
}

void rp_bvh_maintain_(rp_scene *sc)
{
    rp_bvh *t = &sc->tree;
    size_t n = sc->count;
    bool rebuild = rp_bvh_height_(t) > 2 * ceil_log2(n) + 4;
    if (!rebuild && t->churn > n / 4 + CHURN_MIN) {
        t->churn = 0;
        rebuild = rp_bvh_area_(t) > 2.0 * t->built_area;
    }
    if (!rebuild)
        return;
    if (sc->store->defer_rebuilds) {
        t->want_rebuild = true; /* rp_store_rebuild_take hands it out */
        sc->store->rebuild_hint = true;
        return;
    }
    (void)rebuild_now(sc); /* optional work: checked again after later changes */
}

/* ---- rebuilds on another thread (scene.h) ------------------------------------ */

struct rp_rebuild {
    rp_scene *sc;       /* the version built from (a reference) */
    rp_bvh tree;        /* the new tree: private node chunks */
    rp_bvh_item *items; /* leaves out of the build */
    uint32_t root;
    double area;
    size_t bytes; /* heap the new tree holds, not yet the store's */
    bool ok;      /* run got its memory */
};

void rp_store_defer_rebuilds(rp_store *st, bool defer)
{
    st->defer_rebuilds = defer;
}

rp_status rp_store_bulk_load(rp_store *st, bool on)
{
    st->bulk_loading = on;
    if (on)
        return RP_OK;
    for (size_t i = 0; i < st->count; i++) {
        rp_scene *sc = st->scenes[i];
        if (!sc->tree_stale)
            continue;
        if (!rebuild_now(sc))
            return RP_ERR_NOMEM;
        sc->tree_stale = false;
    }
    return RP_OK;
}

rp_rebuild *rp_store_rebuild_take(rp_store *st)
{
    if (!st->rebuild_hint || st->snapshot)
        return NULL;
    for (size_t i = 0; i < st->count; i++) {
        rp_scene *sc = st->scenes[i];
        if (!sc->tree.want_rebuild || sc->tree.rebuilding)
            continue;
        rp_rebuild *rb = calloc(1, sizeof *rb);
        if (!rb)
            return NULL; /* the hint stays: taken again later */
        rb->sc = sc;
        rp_scene_retain_(sc); /* from now on a mutation copies the scene */
        rp_bvh_init_(&rb->tree);
        sc->tree.rebuilding = true;
        return rb;
    }
    st->rebuild_hint = false; /* nothing left to hand out */
    return NULL;
}

void rp_rebuild_run(rp_rebuild *rb)
{
    /* Reads the version taken (immutable while held), writes only what rb
     * owns; the byte count is rb's until the finish. */
    const rp_scene *sc = rb->sc;
    uint32_t n = (uint32_t)sc->count;
    rb->items = rp_bvh_items_new_(n);
    if (!rb->items || !rp_chunks_grow(&rb->tree.nodes, sizeof(rp_bvh_node), n ? n - 1 : 0, NULL,
                                      NULL, &rb->bytes))
        return;
    rb->root = rp_bvh_build_(&sc->entries, n, &rb->tree, rb->items, &rb->area);
    rb->ok = true;
}

bool rp_store_rebuild_finish(rp_store *st, rp_rebuild *rb)
{
    size_t i = 0;
    while (i < st->count && strcmp(st->scenes[i]->name, rb->sc->name) != 0)
        i++;
    rp_scene *cur = i < st->count ? st->scenes[i] : NULL;
    bool same = cur == rb->sc, installed = false;
    rp_scene_release_(rb->sc); /* before rp_store_writable_: it counts holders */
    rb->sc = NULL;
    st->rebuild_hint = true; /* cur (or another scene) may want one still */
    if (cur)
        cur->tree.rebuilding = false;
    if (!cur || !cur->tree.want_rebuild) {
        /* Deleted, or rebuilt by a mutation meanwhile: nothing to do. */
    } else if (same && rb->ok) {
        /* Unchanged since the take: the new tree replaces the old one.  The
         * scene may have become shared meanwhile (a snapshot): then a copy
         * takes it, as for a mutation. */
        rp_scene *sc = rp_store_writable_(st, i);
        if (sc && rp_chunks_stock(&sc->entries, sizeof(scene_entry), SIZE_MAX, &st->bytes)) {
            rp_bvh_free_(&sc->tree, st);
            st->bytes += rb->bytes;
            rb->bytes = 0;
            sc->tree = rb->tree;
            rp_bvh_init_(&rb->tree);
            rp_bvh_install_(sc, rb->root, rb->items, rb->area);
            installed = true;
        } else if (sc) {
            cur = sc;
        }
    }
    if (cur && !installed && cur->tree.want_rebuild && ++cur->tree.rebuild_misses >= 3 &&
        cur->count <= RP_REBUILD_IN_PLACE_MAX) {
        /* It keeps changing faster than it can be rebuilt on the side (or
         * memory is short): rebuild in place, when that is short enough
         * for the mutating thread.  A larger scene keeps its tree (queries
         * stay exact, only slower) and is taken again. */
        rp_scene *sc = rp_store_writable_(st, i);
        if (sc) {
            (void)rebuild_now(sc); /* optional: short of memory, taken again */
            installed = !sc->tree.want_rebuild;
        }
    }
    rp_chunks_free(&rb->tree.nodes, sizeof(rp_bvh_node), NULL, NULL, &rb->bytes);
    free(rb->items);
    free(rb);
    return installed;
}
