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
 * Copying is a deep copy today: O(n) for an n-shape scene, paid only when a
 * mutation meets a scene a reader still holds.
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

/* The id index's view of a scene's entries (as in scene.c, for the copy's
 * own table). */
static const char *entry_id(const void *ctx, uint32_t e)
{
    return ((const rp_scene *)ctx)->entries[e].id;
}

static uint32_t entry_hash(const void *ctx, uint32_t e)
{
    return ((const rp_scene *)ctx)->entries[e].hash;
}

/* A copy of sc with its own entries, ids, index and tree (one reference,
 * same name and revision); NULL when out of memory.  Memory is accounted to
 * the store like the original's. */
static rp_scene *clone_scene(const rp_scene *sc)
{
    rp_store *st = sc->store;
    rp_scene *c = rp_scene_new_(st, sc->name);
    if (!c)
        return NULL;
    size_t n = sc->count;
    c->entries = malloc((n ? n : 1) * sizeof *c->entries);
    uint32_t *slots = sc->index.nslots ? malloc(sc->index.nslots * sizeof *slots) : NULL;
    rp_bvh_node *nodes = sc->tree.cap ? malloc(sc->tree.cap * sizeof *nodes) : NULL;
    if (!c->entries || (sc->index.nslots && !slots) || (sc->tree.cap && !nodes)) {
        free(slots);
        free(nodes);
        rp_scene_free_(c); /* frees the (empty) entries */
        return NULL;
    }
    size_t id_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        c->entries[i] = sc->entries[i];
        size_t len = strlen(sc->entries[i].id) + 1;
        c->entries[i].id = malloc(len);
        if (!c->entries[i].id) {
            c->count = i; /* rp_scene_free_ frees the ids copied so far */
            st->bytes += id_bytes;
            st->shapes += i;
            c->cap = n ? n : 1;
            st->bytes += c->cap * sizeof *c->entries;
            free(slots);
            free(nodes);
            rp_scene_free_(c);
            return NULL;
        }
        memcpy(c->entries[i].id, sc->entries[i].id, len);
        id_bytes += len;
    }
    c->count = n;
    c->cap = n ? n : 1;
    c->revision = sc->revision;
    st->bytes += id_bytes + c->cap * sizeof *c->entries;
    st->shapes += n;
    /* The index: the same slots, keyed through the copy's entries. */
    if (slots)
        memcpy(slots, sc->index.slots, sc->index.nslots * sizeof *slots);
    c->index = sc->index;
    c->index.slots = slots;
    c->index.ctx = c;
    c->index.key_of = entry_id;
    c->index.hash_of = entry_hash;
    st->bytes += rp_strtab_bytes_(&c->index);
    /* The tree: the same nodes (they name entries by index, which the copy
     * keeps). */
    if (nodes)
        memcpy(nodes, sc->tree.nodes, sc->tree.cap * sizeof *nodes);
    c->tree = sc->tree;
    c->tree.nodes = nodes;
    st->bytes += (size_t)c->tree.cap * sizeof *nodes;
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
