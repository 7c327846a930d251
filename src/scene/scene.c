/*
 * A scene: a dense array of shapes with an id index, mutated all or nothing.
 *
 * Mutations first reserve every allocation they could need (entry array,
 * index, id copies) and check limits and the revision; only then do they
 * touch the scene, with steps that cannot fail.  So an error leaves the scene
 * exactly as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "scene_int.h"

uint32_t rp_scene_hash(const char *s)
{
    /* FNV-1a: short ids, good enough spread, no allocation. */
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
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
    rp_bvh_free_(sc->bvh, st);
    st->bytes -= sc->cap * sizeof *sc->entries + sc->nslots * sizeof *sc->slots;
    st->bytes -= strlen(sc->name) + 1 + sizeof *sc;
    free(sc->entries);
    free(sc->slots);
    free(sc->name);
    free(sc);
}

const char *rp_scene_name(const rp_scene *sc) { return sc->name; }
uint64_t rp_scene_revision(const rp_scene *sc) { return sc->revision; }
size_t rp_scene_shape_count(const rp_scene *sc) { return sc->count; }
const char *rp_scene_id_at(const rp_scene *sc, size_t i) { return sc->entries[i].id; }
const rp_shape *rp_scene_shape_at(const rp_scene *sc, size_t i) { return &sc->entries[i].shape; }

/* ---- id index ----------------------------------------------------------- */

/* Slot holding `id` (entry index in *slot), or the empty slot where it
 * would go.  Returns true when found. */
static bool index_lookup(const rp_scene *sc, const char *id, uint32_t hash, size_t *slot)
{
    size_t mask = sc->nslots - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        uint32_t e = sc->slots[i];
        if (e == SLOT_EMPTY) {
            *slot = i;
            return false;
        }
        if (sc->entries[e].hash == hash && strcmp(sc->entries[e].id, id) == 0) {
            *slot = i;
            return true;
        }
    }
}

size_t rp_scene_find(const rp_scene *sc, const char *id)
{
    if (sc->count == 0)
        return SIZE_MAX;
    size_t slot;
    if (!index_lookup(sc, id, rp_scene_hash(id), &slot))
        return SIZE_MAX;
    return sc->slots[slot];
}

/* Removes slot i with backward-shift deletion, so lookups never need
 * tombstones. */
static void index_delete_slot(rp_scene *sc, size_t i)
{
    size_t mask = sc->nslots - 1;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        uint32_t e = sc->slots[j];
        if (e == SLOT_EMPTY)
            break;
        size_t home = sc->entries[e].hash & mask;
        /* Move e back into the hole at i unless its home lies cyclically
         * in (i, j]. */
        bool keep = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!keep) {
            sc->slots[i] = e;
            i = j;
        }
    }
    sc->slots[i] = SLOT_EMPTY;
}

/* Replaces the entry index `from` with `to` in the index (after the entry
 * moved in the dense array). */
static void index_renumber(rp_scene *sc, uint32_t from, uint32_t to)
{
    size_t mask = sc->nslots - 1;
    for (size_t i = sc->entries[to].hash & mask;; i = (i + 1) & mask) {
        if (sc->slots[i] == from) {
            sc->slots[i] = to;
            return;
        }
    }
}

/* Rebuilds the index with at least `min_slots` slots.  Fails without
 * changing anything when out of memory. */
static bool index_rebuild(rp_scene *sc, size_t min_slots)
{
    size_t n = 16;
    while (n < min_slots)
        n *= 2;
    uint32_t *slots = malloc(n * sizeof *slots);
    if (!slots)
        return false;
    memset(slots, 0xff, n * sizeof *slots); /* SLOT_EMPTY */
    for (size_t e = 0; e < sc->count; e++) {
        size_t i = sc->entries[e].hash & (n - 1);
        while (slots[i] != SLOT_EMPTY)
            i = (i + 1) & (n - 1);
        slots[i] = (uint32_t)e;
    }
    sc->store->bytes += n * sizeof *slots;
    sc->store->bytes -= sc->nslots * sizeof *sc->slots;
    free(sc->slots);
    sc->slots = slots;
    sc->nslots = n;
    return true;
}

/* Makes room for `total` entries: entry array and id index.  All or
 * nothing. */
static bool reserve(rp_scene *sc, size_t total)
{
    if (total > UINT32_MAX - 1)
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
    /* Keep the index at most 3/4 full: linear probing stays short, and it
     * costs about 5-11 bytes per shape. */
    if (total * 4 > sc->nslots * 3)
        return index_rebuild(sc, total * 4 / 3 + 1);
    return true;
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

/* Index of the last occurrence of shapes[i].id in shapes[0..n), found
 * through a scratch index over the batch.  Used so that later duplicates
 * win and each new id is counted once. */
typedef struct batch_index {
    uint32_t *slots;
    size_t mask;
} batch_index;

static bool batch_index_build(batch_index *bi, const rp_shape_put *shapes, size_t n,
                              uint32_t *hashes, uint32_t *last)
{
    size_t nslots = 16;
    while (nslots < 2 * n)
        nslots *= 2;
    bi->slots = malloc(nslots * sizeof *bi->slots);
    if (!bi->slots)
        return false;
    memset(bi->slots, 0xff, nslots * sizeof *bi->slots);
    bi->mask = nslots - 1;
    for (size_t k = 0; k < n; k++) {
        size_t i = hashes[k] & bi->mask;
        for (;; i = (i + 1) & bi->mask) {
            uint32_t e = bi->slots[i];
            if (e == SLOT_EMPTY) {
                bi->slots[i] = (uint32_t)k;
                last[k] = (uint32_t)k;
                break;
            }
            if (hashes[e] == hashes[k] && strcmp(shapes[e].id, shapes[k].id) == 0) {
                last[e] = (uint32_t)k; /* the first occurrence records the last */
                last[k] = (uint32_t)e; /* later ones point at the first */
                break;
            }
        }
    }
    free(bi->slots);
    return true;
}

rp_status rp_scene_put(rp_scene *sc, const rp_shape_put *shapes, size_t n,
                       const uint64_t *if_revision, uint64_t *actual_revision)
{
    if (!revision_matches(sc, if_revision, actual_revision))
        return RP_ERR_REVISION;
    if (n > UINT32_MAX - 1)
        return RP_ERR_LIMIT;

    rp_status st = RP_OK;
    uint32_t *hashes = malloc((n ? n : 1) * sizeof *hashes);
    uint32_t *last = malloc((n ? n : 1) * sizeof *last);
    char **ids = calloc(n ? n : 1, sizeof *ids); /* copies for new ids */
    size_t *found = malloc((n ? n : 1) * sizeof *found);
    size_t id_bytes = 0, fresh = 0;
    if (!hashes || !last || !ids || !found) {
        st = RP_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < n; k++)
        hashes[k] = rp_scene_hash(shapes[k].id);
    batch_index bi;
    if (!batch_index_build(&bi, shapes, n, hashes, last)) {
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

    /* Nothing below can fail. */
    for (size_t k = 0; k < n; k++) {
        if (last[k] < k)
            continue; /* a later duplicate: applied through its first occurrence */
        const rp_shape *shape = &shapes[last[k]].shape;
        if (found[k] != SIZE_MAX) {
            sc->entries[found[k]].shape = *shape;
            continue;
        }
        size_t e = sc->count++;
        sc->entries[e].shape = *shape;
        sc->entries[e].id = ids[k];
        sc->entries[e].hash = hashes[k];
        ids[k] = NULL;
        size_t slot;
        index_lookup(sc, sc->entries[e].id, hashes[k], &slot);
        sc->slots[slot] = (uint32_t)e;
    }
    sc->store->bytes += id_bytes;
    id_bytes = 0;
    sc->store->shapes += fresh;
    sc->revision++;
    sc->bvh_stale = true;

out:
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
    if (!revision_matches(sc, if_revision, actual_revision))
        return RP_ERR_REVISION;
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        if (sc->count == 0)
            break;
        size_t slot;
        if (!index_lookup(sc, ids[k], rp_scene_hash(ids[k]), &slot))
            continue;
        uint32_t e = sc->slots[slot];
        index_delete_slot(sc, slot);
        sc->store->bytes -= strlen(sc->entries[e].id) + 1;
        free(sc->entries[e].id);
        uint32_t last = (uint32_t)(sc->count - 1);
        if (e != last) {
            sc->entries[e] = sc->entries[last];
            index_renumber(sc, last, e);
        }
        sc->count--;
        count++;
    }
    sc->store->shapes -= count;
    sc->revision++;
    sc->bvh_stale = true;
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
