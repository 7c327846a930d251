/*
 * A scene: a dense array of shapes with an id index and a bounding-volume
 * tree (bvh.c), mutated all or nothing.
 *
 * Mutations first reserve every allocation they could need (entry array,
 * index, tree nodes, id copies, a full build's scratch) and check limits and
 * the revision; only then do they touch the scene, with steps that cannot
 * fail.  So an error leaves the scene, tree included, exactly as it was.
 * The tree follows every change here, so queries never write.
 */
#include <stdlib.h>
#include <string.h>

#include "scene_int.h"

/* The id index's view of the entries (util/strtab.h). */
static const char *entry_id(const void *ctx, uint32_t e)
{
    return ((const rp_scene *)ctx)->entries[e].id;
}

static uint32_t entry_hash(const void *ctx, uint32_t e)
{
    return ((const rp_scene *)ctx)->entries[e].hash;
}

static char *dup_string(const char *s, size_t *bytes)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) {
        memcpy(d, s, n);
        *bytes += n;
    }
    return d;
}

rp_scene *rp_scene_new_(rp_store *st, const char *name)
{
    rp_scene *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->store = st;
    sc->refs = 1;
    rp_strtab_init_(&sc->index, entry_id, entry_hash, sc);
    rp_bvh_init_(&sc->tree);
    sc->name = dup_string(name, &st->bytes);
    if (!sc->name) {
        free(sc);
        return NULL;
    }
    st->bytes += sizeof *sc;
    return sc;
}

void rp_scene_free_(rp_scene *sc)
{
    if (!sc)
        return;
    rp_store *st = sc->store;
    for (size_t i = 0; i < sc->count; i++) {
        st->bytes -= strlen(sc->entries[i].id) + 1;
        free(sc->entries[i].id);
    }
    st->shapes -= sc->count;
    rp_bvh_free_(&sc->tree, st);
    st->bytes -= sc->cap * sizeof *sc->entries + rp_strtab_bytes_(&sc->index);
    st->bytes -= strlen(sc->name) + 1 + sizeof *sc;
    free(sc->entries);
    rp_strtab_free_(&sc->index);
    free(sc->name);
    free(sc);
}

const char *rp_scene_name(const rp_scene *sc) { return sc->name; }
uint64_t rp_scene_revision(const rp_scene *sc) { return sc->revision; }
size_t rp_scene_shape_count(const rp_scene *sc) { return sc->count; }
const char *rp_scene_id_at(const rp_scene *sc, size_t i) { return sc->entries[i].id; }
const rp_shape *rp_scene_shape_at(const rp_scene *sc, size_t i) { return &sc->entries[i].shape; }

/* ---- id index ----------------------------------------------------------- */

/* Looks an id up in the index (rp_strtab_find_ with the entry accessors
 * inlined: every id a request names goes through here). */
static bool index_find(const rp_scene *sc, const char *id, uint32_t hash, size_t *slot)
{
    return rp_strtab_probe_(&sc->index, id, hash, entry_id, entry_hash, slot);
}

size_t rp_scene_find(const rp_scene *sc, const char *id)
{
    if (sc->count == 0)
        return SIZE_MAX;
    size_t slot;
    if (!index_find(sc, id, rp_strhash_(id), &slot))
        return SIZE_MAX;
    return sc->index.slots[slot];
}

/* Makes room for `total` entries: entry array, id index and tree nodes.
 * All or nothing. */
static bool reserve(rp_scene *sc, size_t total)
{
    if (total > RP_BVH_MAX_SHAPES)
        return false;
    if (total > sc->cap) {
        /* The first fill (scene.create, or the first put) gets exactly what
         * it needs; later growth is geometric (x1.5) so that a stream of
         * small puts stays amortised O(1). */
        size_t cap = sc->cap ? sc->cap + sc->cap / 2 : 0;
        if (cap < total)
            cap = total;
        scene_entry *e = realloc(sc->entries, cap * sizeof *e);
        if (!e)
            return false;
        sc->store->bytes += (cap - sc->cap) * sizeof *e;
        sc->entries = e;
        sc->cap = cap;
    }
    /* The index stays at most 3/4 full: linear probing stays short, and it
     * costs about 5-11 bytes per shape. */
    size_t before = rp_strtab_bytes_(&sc->index);
    if (!rp_strtab_reserve_(&sc->index, total))
        return false;
    sc->store->bytes += rp_strtab_bytes_(&sc->index) - before;
    /* The nodes follow the entries' capacity (one fewer), so that they grow
     * geometrically with them. */
    return rp_bvh_reserve_(&sc->tree, sc->store, sc->cap);
}

/* ---- mutations ---------------------------------------------------------- */

static bool revision_matches(const rp_scene *sc, const uint64_t *if_revision,
                             uint64_t *actual)
{
    if (if_revision && *if_revision != sc->revision) {
        if (actual)
            *actual = sc->revision;
        return false;
    }
    return true;
}

/* A put's batch as seen by its scratch index: ids from the shapes, hashes
 * computed once. */
typedef struct batch {
    const rp_shape_put *shapes;
    const uint32_t *hashes;
} batch;

static const char *batch_id(const void *ctx, uint32_t k)
{
    return ((const batch *)ctx)->shapes[k].id;
}

static uint32_t batch_hash(const void *ctx, uint32_t k)
{
    return ((const batch *)ctx)->hashes[k];
}

/* Fills last[]: for the first occurrence of an id in shapes[0..n), the
 * index of its last occurrence; for a later occurrence, the index of the
 * first.  Found through a scratch index over the batch.  Used so that later
 * duplicates win and each new id is counted once.  False when out of
 * memory. */
static bool batch_last(const rp_shape_put *shapes, size_t n, const uint32_t *hashes,
                       uint32_t *last)
{
    batch b = {shapes, hashes};
    rp_strtab t;
    rp_strtab_init_(&t, batch_id, batch_hash, &b);
    if (!rp_strtab_reserve_(&t, n))
        return false;
    for (size_t k = 0; k < n; k++) {
        size_t slot;
        if (rp_strtab_probe_(&t, shapes[k].id, hashes[k], batch_id, batch_hash, &slot)) {
            uint32_t e = t.slots[slot];
            last[e] = (uint32_t)k; /* the first occurrence records the last */
            last[k] = e;           /* later ones point at the first */
        } else {
            rp_strtab_insert_at_(&t, slot, (uint32_t)k);
            last[k] = (uint32_t)k;
        }
    }
    rp_strtab_free_(&t);
    return true;
}

rp_status rp_scene_put(rp_scene *sc, const rp_shape_put *shapes, size_t n,
                       const uint64_t *if_revision, uint64_t *actual_revision)
{
    if (sc->refs > 1)
        return RP_ERR_INVALID_ARG; /* a snapshot holds it: go through the store */
    if (!revision_matches(sc, if_revision, actual_revision))
        return RP_ERR_REVISION;
    if (n > UINT32_MAX - 1)
        return RP_ERR_LIMIT;

    rp_status st = RP_OK;
    uint32_t *hashes = malloc((n ? n : 1) * sizeof *hashes);
    uint32_t *last = malloc((n ? n : 1) * sizeof *last);
    char **ids = calloc(n ? n : 1, sizeof *ids); /* copies for new ids */
    size_t *found = malloc((n ? n : 1) * sizeof *found);
    rp_bvh_item *build = NULL; /* a full build's scratch, when it is one */
    size_t id_bytes = 0, fresh = 0;
    if (!hashes || !last || !ids || !found) {
        st = RP_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < n; k++)
        hashes[k] = rp_strhash_(shapes[k].id);
    if (!batch_last(shapes, n, hashes, last)) {
        st = RP_ERR_NOMEM;
        goto out;
    }
    /* First occurrences decide whether an id is new; they carry the index
     * of the last occurrence, whose shape wins. */
    for (size_t k = 0; k < n; k++) {
        bool first = last[k] >= k;
        found[k] = first ? rp_scene_find(sc, shapes[k].id) : SIZE_MAX;
        if (first && found[k] == SIZE_MAX) {
            fresh++;
            ids[k] = dup_string(shapes[k].id, &id_bytes);
            if (!ids[k]) {
                st = RP_ERR_NOMEM;
                goto out;
            }
        }
    }
    if (sc->count + fresh > sc->store->limits.max_shapes_per_scene) {
        st = RP_ERR_LIMIT;
        goto out;
    }
    if (!reserve(sc, sc->count + fresh)) {
        st = RP_ERR_NOMEM;
        goto out;
    }
    bool bulk = rp_bvh_bulk_(sc->count, fresh);
    if (bulk && !(build = rp_bvh_items_new_(sc->count + fresh))) {
        st = RP_ERR_NOMEM;
        goto out;
    }

    /* Nothing below can fail. */
    for (size_t k = 0; k < n; k++) {
        if (last[k] < k)
            continue; /* a later duplicate: applied through its first occurrence */
        const rp_shape *shape = &shapes[last[k]].shape;
        if (found[k] != SIZE_MAX) {
            sc->entries[found[k]].shape = *shape;
            if (!bulk)
                rp_bvh_update_(sc, (uint32_t)found[k]);
            continue;
        }
        size_t e = sc->count++;
        sc->entries[e].shape = *shape;
        sc->entries[e].id = ids[k];
        sc->entries[e].hash = hashes[k];
        ids[k] = NULL;
        size_t slot;
        index_find(sc, sc->entries[e].id, hashes[k], &slot);
        rp_strtab_insert_at_(&sc->index, slot, (uint32_t)e);
        if (!bulk)
            rp_bvh_insert_(sc, (uint32_t)e);
    }
    if (bulk) {
        rp_bvh_rebuild_(sc, build); /* frees the scratch */
        build = NULL;
    } else {
        rp_bvh_maintain_(sc);
    }
    sc->store->bytes += id_bytes;
    id_bytes = 0;
    sc->store->shapes += fresh;
    sc->revision = rp_store_take_revision_(sc->store);

out:
    rp_bvh_items_free_(build);
    if (ids)
        for (size_t k = 0; k < n; k++)
            free(ids[k]);
    free(ids);
    free(hashes);
    free(last);
    free(found);
    return st;
}

rp_status rp_scene_remove(rp_scene *sc, const char *const *ids, size_t n,
                          const uint64_t *if_revision, size_t *removed,
                          uint64_t *actual_revision)
{
    if (sc->refs > 1)
        return RP_ERR_INVALID_ARG; /* a snapshot holds it: go through the store */
    if (!revision_matches(sc, if_revision, actual_revision))
        return RP_ERR_REVISION;
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        if (sc->count == 0)
            break;
        size_t slot;
        if (!index_find(sc, ids[k], rp_strhash_(ids[k]), &slot))
            continue;
        uint32_t e = sc->index.slots[slot];
        rp_strtab_unlink_(&sc->index, slot, entry_hash);
        rp_bvh_remove_(sc, e);
        sc->store->bytes -= strlen(sc->entries[e].id) + 1;
        free(sc->entries[e].id);
        uint32_t last = (uint32_t)(sc->count - 1);
        if (e != last) {
            sc->entries[e] = sc->entries[last];
            rp_strtab_renumber_(&sc->index, sc->entries[e].hash, last, e);
            rp_bvh_renumber_(sc, last, e);
        }
        sc->count--;
        count++;
    }
    sc->store->shapes -= count;
    rp_bvh_maintain_(sc);
    sc->revision = rp_store_take_revision_(sc->store);
    if (removed)
        *removed = count;
    return RP_OK;
}

/* ---- sorted view --------------------------------------------------------- */

typedef struct id_ref {
    const char *id;
    size_t index;
} id_ref;

static int cmp_id_ref(const void *a, const void *b)
{
    return strcmp(((const id_ref *)a)->id, ((const id_ref *)b)->id);
}

rp_status rp_scene_sorted(const rp_scene *sc, size_t *order)
{
    id_ref *refs = malloc((sc->count ? sc->count : 1) * sizeof *refs);
    if (!refs)
        return RP_ERR_NOMEM;
    for (size_t i = 0; i < sc->count; i++) {
        refs[i].id = sc->entries[i].id;
        refs[i].index = i;
    }
    qsort(refs, sc->count, sizeof *refs, cmp_id_ref);
    for (size_t i = 0; i < sc->count; i++)
        order[i] = refs[i].index;
    free(refs);
    return RP_OK;
}
