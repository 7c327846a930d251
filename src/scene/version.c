/* SPDX-License-Identifier: MIT */
/*
 * Scene and model versions, and store snapshots.
 *
 * Scenes and models are reference counted.  The store holds one reference
 * to each; a snapshot (rp_store_snapshot) is a small read-only store that
 * holds one more.  A store mutation that finds the scene it must change
 * also held by a snapshot changes a copy instead (rp_store_writable_), and
 * the store's list points at the copy from then on; the snapshot keeps the
 * version it took, unchanged, until it is freed.  Models are never changed
 * in place (model.put builds a new one), so they only need the count.
 *
 * Threads: counts are plain integers, changed only by the thread that owns
 * the store (the daemon's event loop): it takes snapshots, mutates, and
 * frees snapshots once the readers are done.  Readers on other threads only
 * read a snapshot's scenes and models, which nobody writes while they are
 * shared.  The hand-over in both directions goes through the owner's queue
 * (libuv's uv_queue_work), whose locking orders the accesses.
 *
 * The copy shares everything with the original (chunks.h): its entry and
 * tree-node chunks, its id index, its ids.  It costs a table of pointers,
 * n / RP_CHUNK_LEN of them, and the mutation then copies only the chunks
 * it writes.
 */
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "scene_int.h"

void rp_scene_retain_(rp_scene *sc)
{
    sc->refs++;
}

void rp_scene_release_(rp_scene *sc)
{
    if (sc && --sc->refs == 0)
        rp_scene_free_(sc);
}

void rp_model_retain_(rp_model *m)
{
    m->refs++;
}

void rp_model_release_(rp_model *m)
{
    if (m && --m->refs == 0)
        rp_model_free_(m);
}

/* A new version of sc sharing its entry, id-index and node chunks (one
 * reference, same name, revision and content); NULL when out of memory.
 * sc's spare chunks move to the copy, which is the one that will be
 * written. */
static rp_scene *clone_scene(rp_scene *sc)
{
    rp_store *st = sc->store;
    rp_scene *c = rp_scene_new_(st, sc->name);
    if (!c)
        return NULL;
    if (!rp_chunks_share(&c->entries, &sc->entries, &st->bytes) ||
        !rp_chunks_share(&c->index, &sc->index, &st->bytes) ||
        !rp_bvh_share_(&c->tree, &sc->tree, st)) {
        rp_scene_free_(c); /* drops the references it took */
        return NULL;
    }
    c->count = sc->count;
    c->revision = sc->revision;
    c->tree_stale = sc->tree_stale;
    c->index_slots = sc->index_slots;
    c->index_live = sc->index_live;
    c->index_dead = sc->index_dead;
    if (sc->planes) {
        if (!(c->planes = malloc(sc->planes_cap * sizeof *sc->planes))) {
            rp_scene_free_(c);
            return NULL;
        }
        st->bytes += sc->planes_cap * sizeof *sc->planes;
        memcpy(c->planes, sc->planes, sc->n_planes * sizeof *sc->planes);
        c->n_planes = sc->n_planes;
        c->planes_cap = sc->planes_cap;
    }
    rp_objtab_retain_(sc->objects);
    c->objects = sc->objects;
    c->next_tag = sc->next_tag;
    rp_chunks_pass_spares(&c->entries, &sc->entries);
    rp_chunks_pass_spares(&c->index, &sc->index);
    rp_chunks_pass_spares(&c->tree.nodes, &sc->tree.nodes);
    return c;
}

rp_scene *rp_store_writable_(rp_store *st, size_t i)
{
    rp_scene *sc = st->scenes[i];
    if (sc->refs == 1)
        return sc;
    rp_scene *c = clone_scene(sc);
    if (!c)
        return NULL;
    st->scenes[i] = c;
    rp_scene_release_(sc);
    return c;
}

rp_store *rp_store_snapshot(const rp_store *st)
{
    rp_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->snapshot = true;
    s->limits = st->limits;
    s->revision = st->revision;
    s->shapes = st->shapes;
    s->scenes = malloc((st->count ? st->count : 1) * sizeof *s->scenes);
    s->models = malloc((st->model_count ? st->model_count : 1) * sizeof *s->models);
    if (!s->scenes || !s->models) {
        free(s->scenes);
        free(s->models);
        free(s);
        return NULL;
    }
    for (size_t i = 0; i < st->count; i++) {
        s->scenes[i] = st->scenes[i];
        rp_scene_retain_(s->scenes[i]);
    }
    for (size_t i = 0; i < st->model_count; i++) {
        s->models[i] = st->models[i];
        rp_model_retain_(s->models[i]);
    }
    s->count = s->cap = st->count;
    s->model_count = s->model_cap = st->model_count;
    return s;
}

rp_status rp_store_restore(rp_store *st, rp_store *snap)
{
    if (!st || !snap || st->snapshot || !snap->snapshot)
        return RP_ERR_INVALID_ARG;
    for (size_t i = 0; i < snap->count; i++)
        if (snap->scenes[i]->store != st)
            return RP_ERR_INVALID_ARG;
    /* The lists trade places: the store takes the snapshot's (with its
     * references), the snapshot the store's, which freeing it then drops
     * (and with them the versions made since).  No allocation, so this
     * cannot fail. */
    rp_scene **scenes = st->scenes;
    rp_model **models = st->models;
    size_t count = st->count, cap = st->cap, mcount = st->model_count, mcap = st->model_cap;
    st->scenes = snap->scenes;
    st->models = snap->models;
    st->count = snap->count;
    st->cap = snap->cap;
    st->model_count = snap->model_count;
    st->model_cap = snap->model_cap;
    st->revision = snap->revision;
    st->shapes = snap->shapes;
    snap->scenes = scenes;
    snap->models = models;
    snap->count = count;
    snap->cap = cap;
    snap->model_count = mcount;
    snap->model_cap = mcap;
    rp_store_free(snap);
    return RP_OK;
}
