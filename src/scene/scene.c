/* SPDX-License-Identifier: MIT */
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

/* Slots hold 0 (free), IDX_DEAD (a tombstone) or entry index + 2.  Chunk
 * elements are groups of IDX_GROUP slots, so a chunk holds 256 slots (1 KiB)
 * and a version's table costs 8 bytes per 256 slots.  The smallest index
 * is one group (a short chunk, see chunks.h): a scene of a few shapes does
 * not pay for 256 slots. */
#define IDX_DEAD 1u
#define IDX_GROUP 8u
#define IDX_GROUP_BYTES (IDX_GROUP * sizeof(uint32_t))
#define IDX_MIN_SLOTS ((size_t)IDX_GROUP)

/* ---- ids ------------------------------------------------------------------- */

/* An id string with its count of the chunk slots holding it (versions that
 * share a chunk share its ids; a copied chunk takes a reference to each). */
typedef struct id_block {
    uint32_t refs;
    char s[];
} id_block;

static id_block *id_block_of(char *id)
{
    return (id_block *)(void *)(id - offsetof(id_block, s));
}

static size_t id_bytes_of(const char *id)
{
    return sizeof(id_block) + strlen(id) + 1;
}

static char *id_new(const char *s, size_t *bytes)
{
    size_t n = strlen(s) + 1;
    id_block *b = malloc(sizeof *b + n);
    if (!b)
        return NULL;
    b->refs = 1;
    memcpy(b->s, s, n);
    *bytes += sizeof *b + n;
    return b->s;
}

static void id_unref(char *id, size_t *bytes)
{
    if (!id)
        return;
    id_block *b = id_block_of(id);
    if (--b->refs == 0) {
        *bytes -= id_bytes_of(id);
        free(b);
    }
}

/* ---- solids: boxes and half-spaces, kept out of line (scene_int.h) -------- */

static rp_solid *solid_new(const rp_shape *s, size_t *bytes)
{
    rp_solid *so = malloc(sizeof *so);
    if (!so)
        return NULL;
    so->refs = 1;
    so->shape = *s;
    memset(so->axes, 0, sizeof so->axes);
    so->reach = (rp_vec3){0, 0, 0};
    if (s->kind == RP_SHAPE_BOX) {
        rp_box_axes(&s->box, so->axes);
        so->reach = rp_box_reach_(so->axes, s->box.half_extents);
    }
    *bytes += sizeof *so;
    return so;
}

static void solid_unref(rp_solid *so, size_t *bytes)
{
    if (so && --so->refs == 0) {
        *bytes -= sizeof *so;
        free(so);
    }
}

/* The entry's solid, when it holds one. */
static rp_solid *entry_solid(const scene_entry *en)
{
    return en->shape.kind >= RP_SHAPE_BOX ? en->shape.solid : NULL;
}

/* Writes shape s into the entry, with `so` (a new solid holding s) when s
 * is a box or a half-space.  The entry's old solid must be let go first. */
static void entry_set_shape(scene_entry *en, const rp_shape *s, rp_solid *so)
{
    en->shape.kind = s->kind;
    if (s->kind == RP_SHAPE_SPHERE)
        en->shape.sphere = s->sphere;
    else if (s->kind == RP_SHAPE_CAPSULE)
        en->shape.capsule = s->capsule;
    else
        en->shape.solid = so;
}

/* Lets go of the entry's solid: the slot then holds a sphere's bytes. */
static void entry_drop_solid(scene_entry *en, size_t *bytes)
{
    solid_unref(entry_solid(en), bytes);
    en->shape.kind = RP_SHAPE_SPHERE;
}

void rp_entry_ids_ref_(void *ctx, void *entries, size_t n)
{
    (void)ctx;
    scene_entry *en = entries;
    for (size_t i = 0; i < n; i++) {
        if (en[i].id)
            id_block_of(en[i].id)->refs++;
        rp_solid *so = entry_solid(&en[i]);
        if (so)
            so->refs++;
    }
}

/* A freed chunk's slots let go of their ids and solids (ctx: the store's
 * byte count). */
static void entry_ids_drop(void *ctx, void *entries, size_t n)
{
    scene_entry *en = entries;
    for (size_t i = 0; i < n; i++) {
        id_unref(en[i].id, ctx);
        solid_unref(entry_solid(&en[i]), ctx);
    }
}

/* ---- half-spaces: the entries the tree leaves out ------------------------- */

static void planes_add(rp_scene *sc, uint32_t e)
{
    sc->planes[sc->n_planes++] = e; /* room checked before the commit */
}

static void planes_drop(rp_scene *sc, uint32_t e)
{
    for (uint32_t i = 0; i < sc->n_planes; i++)
        if (sc->planes[i] == e) {
            sc->planes[i] = sc->planes[--sc->n_planes];
            return;
        }
}

/* Frees the room for half-spaces when none is left. */
static void planes_trim(rp_scene *sc)
{
    if (sc->planes && sc->n_planes == 0) {
        free(sc->planes);
        sc->planes = NULL;
        sc->store->bytes -= sc->planes_cap * sizeof *sc->planes;
        sc->planes_cap = 0;
    }
}

static void planes_renumber(rp_scene *sc, uint32_t from, uint32_t to)
{
    for (uint32_t i = 0; i < sc->n_planes; i++)
        if (sc->planes[i] == from)
            sc->planes[i] = to;
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
    rp_chunks_init(&sc->entries);
    rp_chunks_init(&sc->index);
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
    rp_chunks_free(&sc->entries, sizeof(scene_entry), entry_ids_drop, &st->bytes, &st->bytes);
    rp_bvh_free_(&sc->tree, st);
    rp_chunks_free(&sc->index, IDX_GROUP_BYTES, NULL, NULL, &st->bytes);
    if (sc->planes) {
        st->bytes -= sc->planes_cap * sizeof *sc->planes;
        free(sc->planes);
    }
    rp_objtab_release_(sc->objects, st);
    st->bytes -= strlen(sc->name) + 1 + sizeof *sc;
    free(sc->name);
    free(sc);
}

const char *rp_scene_name(const rp_scene *sc)
{
    return sc->name;
}
uint64_t rp_scene_revision(const rp_scene *sc)
{
    return sc->revision;
}
size_t rp_scene_shape_count(const rp_scene *sc)
{
    return sc->count;
}
const char *rp_scene_id_at(const rp_scene *sc, size_t i)
{
    if (i >= sc->count) { /* a cloud's sphere: the cloud's name */
        const rp_object *o = NULL;
        rp_scene_cloud_member(sc, i, &o);
        return o->name;
    }
    return RP_ENTRY(sc, i)->id;
}
rp_shape rp_scene_shape_at(const rp_scene *sc, size_t i)
{
    rp_shape buf;
    memset(&buf, 0, sizeof buf); /* (no stray bytes: callers may compare them) */
    return *rp_scene_shape_(sc, i, &buf);
}

/* ---- id index ----------------------------------------------------------- */

static inline uint32_t idx_get(const rp_scene *sc, size_t i)
{
    return (
        (const uint32_t *)rp_chunks_at(&sc->index, IDX_GROUP_BYTES, i / IDX_GROUP))[i % IDX_GROUP];
}

/* Writes slot i, making its chunk this version's own first (stocked). */
static inline void idx_set(rp_scene *sc, size_t i, uint32_t v)
{
    uint32_t *g = rp_chunks_own(&sc->index, IDX_GROUP_BYTES, i / IDX_GROUP, NULL, NULL);
    g[i % IDX_GROUP] = v;
}

/* Looks an id (hash == rp_strhash_(id)) up.  True when found, *slot holding
 * it; false when absent, *slot then the slot an insertion takes (the first
 * tombstone on the way, else the free slot that ended the probe). */
static bool index_find(const rp_scene *sc, const char *id, uint32_t hash, size_t *slot)
{
    *slot = SIZE_MAX;
    if (sc->index_slots == 0)
        return false;
    size_t mask = sc->index_slots - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        uint32_t v = idx_get(sc, i);
        if (v == 0) {
            if (*slot == SIZE_MAX)
                *slot = i;
            return false;
        }
        if (v == IDX_DEAD) {
            if (*slot == SIZE_MAX)
                *slot = i;
            continue;
        }
        const scene_entry *en = RP_ENTRY(sc, v - 2);
        if (en->hash == hash && strcmp(en->id, id) == 0) {
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
    if (!index_find(sc, id, rp_strhash_(id), &slot))
        return SIZE_MAX;
    return idx_get(sc, slot) - 2;
}

/* Entry e joins the index at the slot index_find gave. */
static void index_insert(rp_scene *sc, size_t slot, uint32_t e)
{
    if (idx_get(sc, slot) == IDX_DEAD)
        sc->index_dead--;
    idx_set(sc, slot, e + 2);
    sc->index_live++;
}

/* The entry at `slot` leaves the index: a tombstone, unless the next slot is
 * free (then no probe passes through this one and it is free too). */
static void index_delete(rp_scene *sc, size_t slot)
{
    bool end = idx_get(sc, (slot + 1) & (sc->index_slots - 1)) == 0;
    idx_set(sc, slot, end ? 0 : IDX_DEAD);
    sc->index_live--;
    sc->index_dead += !end;
}

/* Entry `from` (its id hashing to hash) is now entry `to`. */
static void index_renumber(rp_scene *sc, uint32_t hash, uint32_t from, uint32_t to)
{
    size_t mask = sc->index_slots - 1;
    size_t i = hash & mask;
    while (idx_get(sc, i) != from + 2)
        i = (i + 1) & mask;
    idx_set(sc, i, to + 2);
}

/* Makes the index ready for `adds` insertions and `writes` slot writes:
 * when live + dead + adds would pass 3/4 of the slots, a rebuild over the
 * current entries into a new table at most half full (so at least a
 * quarter of the slots go by before the next), else spare chunks for the
 * writes when another version shares the table.  All or nothing. */
static bool index_reserve(rp_scene *sc, size_t adds, size_t writes)
{
    rp_store *st = sc->store;
    size_t used = sc->index_live + sc->index_dead;
    if (sc->index_slots && used + adds <= sc->index_slots / 4 * 3)
        return rp_chunks_stock(&sc->index, IDX_GROUP_BYTES, writes, &st->bytes);
    size_t want = sc->count + adds;
    if (want == 0)
        return true; /* an empty scene needs no table */
    if (want > RP_BVH_MAX_SHAPES)
        return false;
    size_t slots = IDX_MIN_SLOTS;
    while (slots / 2 < want)
        slots *= 2;
    rp_chunks t;
    rp_chunks_init(&t);
    if (!rp_chunks_grow(&t, IDX_GROUP_BYTES, slots / IDX_GROUP, NULL, NULL, &st->bytes)) {
        rp_chunks_free(&t, IDX_GROUP_BYTES, NULL, NULL, &st->bytes); /* its table */
        return false;
    } /* chunks come zeroed: every slot free */
    size_t mask = slots - 1;
    for (size_t e = 0; e < sc->count; e++) {
        size_t i = RP_ENTRY(sc, e)->hash & mask;
        uint32_t *g;
        while ((g = rp_chunks_at(&t, IDX_GROUP_BYTES, i / IDX_GROUP))[i % IDX_GROUP] != 0)
            i = (i + 1) & mask;
        g[i % IDX_GROUP] = (uint32_t)e + 2;
    }
    rp_chunks_free(&sc->index, IDX_GROUP_BYTES, NULL, NULL, &st->bytes);
    sc->index = t;
    sc->index_slots = slots;
    sc->index_live = sc->count;
    sc->index_dead = 0;
    return true;
}

/* Makes room for `total` entries (entry chunks, id index when
 * `index_changes`, tree nodes) and stocks the chunk copies `ops` tree
 * changes can need when another version shares this one's chunks
 * (SIZE_MAX: every chunk, for a full build), and the index's for
 * index_ops, plus extra_nodes and extra_entries chunks (refits that change
 * no structure, the entries a mutation writes itself).  All or nothing. */
static bool reserve_more(rp_scene *sc, size_t total, size_t ops, size_t index_ops,
                         bool index_changes, size_t extra_nodes, size_t extra_entries)
{
    rp_store *st = sc->store;
    if (total > RP_BVH_MAX_SHAPES)
        return false;
    if (!rp_chunks_grow(&sc->entries, sizeof(scene_entry), total, rp_entry_ids_ref_, NULL,
                        &st->bytes))
        return false;
    /* Each tree change is at most one index insertion, or a removal and a
     * renumbering. */
    if (index_changes &&
        !index_reserve(sc, total - sc->count, index_ops > SIZE_MAX / 2 ? SIZE_MAX : 2 * index_ops))
        return false;
    if (!rp_bvh_reserve_(&sc->tree, st, total) || !rp_bvh_stock_(&sc->tree, st, ops, extra_nodes))
        return false;
    /* Entries are written by the mutation itself (two per change at most:
     * a removal moves the last entry) and by the tree (leaf links). */
    size_t per = rp_bvh_entry_bound_(&sc->tree) + 2;
    size_t want = ops > SIZE_MAX / per ? SIZE_MAX : ops * per;
    want = want > SIZE_MAX - extra_entries ? SIZE_MAX : want + extra_entries;
    return rp_chunks_stock(&sc->entries, sizeof(scene_entry), want, &st->bytes);
}

static bool reserve(rp_scene *sc, size_t total, size_t ops, bool index_changes)
{
    return reserve_more(sc, total, ops, ops, index_changes, 0, 0);
}

/* After a mutation: spares beyond one change's worth go (a large change of
 * a shared scene may have stocked a copy of every chunk; kept, they would
 * count against the scene for as long as it lives). */
static void trim_spares(rp_scene *sc)
{
    size_t *bytes = &sc->store->bytes;
    rp_chunks_trim(&sc->entries, sizeof(scene_entry), rp_bvh_entry_bound_(&sc->tree) + 2, bytes);
    rp_chunks_trim(&sc->index, IDX_GROUP_BYTES, 2, bytes);
    rp_chunks_trim(&sc->tree.nodes, sizeof(rp_bvh_node), rp_bvh_touch_bound_(&sc->tree), bytes);
}

/* ---- mutations ---------------------------------------------------------- */

static bool revision_matches(const rp_scene *sc, const uint64_t *if_revision, uint64_t *actual)
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
static bool batch_last(const rp_shape_put *shapes, size_t n, const uint32_t *hashes, uint32_t *last)
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

/* Whether sc may be changed in place: the store's current version, held by
 * no snapshot.  (A snapshot's scene, or one the store has replaced or
 * deleted, is read-only.) */
static bool writable(const rp_scene *sc)
{
    return sc->refs == 1 && rp_store_find(sc->store, sc->name) == sc;
}

rp_status rp_scene_put(rp_scene *sc, const rp_shape_put *shapes, size_t n,
                       const uint64_t *if_revision, uint64_t *actual_revision)
{
    if (!writable(sc))
        return RP_ERR_INVALID_ARG; /* go through the store */
    return rp_scene_put_(sc, shapes, n, if_revision, actual_revision);
}

rp_status rp_scene_remove(rp_scene *sc, const char *const *ids, size_t n,
                          const uint64_t *if_revision, size_t *removed, uint64_t *actual_revision)
{
    if (!writable(sc))
        return RP_ERR_INVALID_ARG; /* go through the store */
    return rp_scene_remove_(sc, ids, n, if_revision, removed, actual_revision);
}

/* A plain put: rp_scene_put_ when `commit` (the scene then takes the next
 * revision), rp_scene_fill_ when not.  Ids an object owns are refused. */
static rp_status put_shapes(rp_scene *sc, const rp_shape_put *shapes, size_t n, bool commit)
{
    if (sc->objects)
        for (size_t k = 0; k < n; k++)
            if (rp_scene_id_owned_(sc, shapes[k].id))
                return RP_ERR_EXISTS;
    rp_edit_ ed = {.shapes = shapes, .n = n};
    return rp_scene_edit_(sc, &ed, commit);
}

rp_status rp_scene_put_(rp_scene *sc, const rp_shape_put *shapes, size_t n,
                        const uint64_t *if_revision, uint64_t *actual_revision)
{
    if (!revision_matches(sc, if_revision, actual_revision))
        return RP_ERR_REVISION;
    return put_shapes(sc, shapes, n, true);
}

rp_status rp_scene_fill_(rp_scene *sc, const rp_shape_put *shapes, size_t n)
{
    return put_shapes(sc, shapes, n, false);
}

/* Removes the entries with the given ids (ids the scene lacks are
 * skipped), keeping the tree when `tree`.  The reservations are made;
 * cannot fail.  Returns how many went. */
static size_t drop_ids(rp_scene *sc, const char *const *ids, size_t n, bool tree);

/* What a shape put does to the tree (rp_scene_edit_). */
enum { TREE_NONE, TREE_REFIT, TREE_REINSERT, TREE_INSERT, TREE_REMOVE };

rp_status rp_scene_edit_(rp_scene *sc, const rp_edit_ *ed, bool commit)
{
    const rp_shape_put *shapes = ed->shapes;
    size_t n = ed->n;
    if (n > UINT32_MAX - 1 || ed->n_drop > UINT32_MAX - 1)
        return RP_ERR_LIMIT;

    rp_status st = RP_OK;
    uint32_t *hashes = malloc((n ? n : 1) * sizeof *hashes);
    uint32_t *last = malloc((n ? n : 1) * sizeof *last);
    char **ids = calloc(n ? n : 1, sizeof *ids); /* copies for new ids */
    size_t *found = malloc((n ? n : 1) * sizeof *found);
    rp_solid **solids = calloc(n ? n : 1, sizeof *solids); /* for boxes, half-spaces */
    unsigned char *todo = malloc(n ? n : 1);               /* TREE_* */
    uint32_t *held_e = malloc((n ? n : 1) * sizeof *held_e);
    rp_bvh_item *build = NULL; /* a full build's scratch, when it is one */
    size_t id_bytes = 0, fresh = 0;
    if (!hashes || !last || !ids || !found || !solids || !todo || !held_e) {
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
            ids[k] = id_new(shapes[k].id, &id_bytes);
            if (!ids[k]) {
                st = RP_ERR_NOMEM;
                goto out;
            }
        }
    }
    /* The entries that go after the writes (each present, see rp_edit_). */
    size_t gone = 0, planes = sc->n_planes;
    for (size_t k = 0; k < ed->n_drop; k++) {
        size_t e = rp_scene_find(sc, ed->drop[k]);
        if (e != SIZE_MAX) {
            gone++;
            planes -= rp_entry_is_plane_(RP_ENTRY(sc, e));
        }
    }
    /* A cloud's spheres count against the limit too (those the scene's
     * objects hold after the edit). */
    const rp_objtab *after = ed->set_objects ? ed->objects : sc->objects;
    size_t spheres = after ? after->cloud_spheres : 0;
    if (sc->count + fresh - gone + spheres > sc->store->limits.max_shapes_per_scene) {
        st = RP_ERR_LIMIT;
        goto out;
    }
    /* Solids for the boxes and half-spaces that land, and the half-spaces
     * the scene will hold (the store's max_halfspaces_per_scene at most). */
    for (size_t k = 0; k < n; k++) {
        if (last[k] < k)
            continue;
        const rp_shape *shape = &shapes[last[k]].shape;
        bool was = found[k] != SIZE_MAX && rp_entry_is_plane_(RP_ENTRY(sc, found[k]));
        planes += (shape->kind == RP_SHAPE_HALFSPACE) - was;
        if (shape->kind >= RP_SHAPE_BOX && !(solids[k] = solid_new(shape, &id_bytes))) {
            st = RP_ERR_NOMEM;
            goto out;
        }
    }
    if (planes > sc->store->limits.max_halfspaces_per_scene) {
        st = RP_ERR_HALFSPACES;
        goto out;
    }
    if (planes > sc->planes_cap) { /* room for them all (kept if the put fails) */
        size_t cap = planes < 8 ? 8 : planes;
        uint32_t *more = realloc(sc->planes, cap * sizeof *more);
        if (!more) {
            st = RP_ERR_NOMEM;
            goto out;
        }
        sc->store->bytes += (cap - sc->planes_cap) * sizeof *more;
        sc->planes = more;
        sc->planes_cap = (uint32_t)cap;
    }
    /* A bulk load leaves the tree to one rebuild at its end. */
    bool stale = sc->store->bulk_loading;
    bool bulk = !stale && rp_bvh_bulk_(sc->count, fresh);
    bool tree = !bulk && !stale;
    /* What each shape put does to the tree (TREE_*).  A shape that stays in
     * it with a new box that a box near its leaf still holds (a part
     * nudged, a robot's link a step further: rp_bvh_held_) is refitted
     * along its leaf's ancestors before any structure changes, so only
     * their chunks can need copies: counted exactly, where the bound of a
     * tree change would stock a chunk for every node of two paths and the
     * rotations on them (hundreds of chunks for a 10-shape object in 100k
     * shapes, allocated and freed by every move while a reader held the
     * scene).  Every other shape put is at most two tree changes (out and
     * in); each writes its own entry besides. */
    size_t ops = gone, n_held = 0;
    for (size_t k = 0; k < n; k++) {
        todo[k] = TREE_NONE;
        if (last[k] < k)
            continue; /* a later duplicate: applied through its first occurrence */
        const rp_shape *shape = &shapes[last[k]].shape;
        bool plane = shape->kind == RP_SHAPE_HALFSPACE;
        bool was = found[k] != SIZE_MAX && rp_entry_is_plane_(RP_ENTRY(sc, found[k]));
        if (!tree) {
            continue;
        } else if (found[k] == SIZE_MAX) {
            todo[k] = plane ? TREE_NONE : TREE_INSERT;
        } else if (plane != was) {
            todo[k] = plane ? TREE_REMOVE : TREE_INSERT;
        } else if (!plane) {
            bool held = rp_bvh_held_(sc, (uint32_t)found[k], shape);
            todo[k] = held ? TREE_REFIT : TREE_REINSERT;
            if (held)
                held_e[n_held++] = (uint32_t)found[k];
        }
        ops += todo[k] == TREE_NONE || todo[k] == TREE_REFIT ? 0 : 2;
    }
    size_t path_chunks = rp_bvh_path_chunks_(sc, held_e, n_held);
    if (path_chunks == SIZE_MAX || !reserve_more(sc, sc->count + fresh, bulk ? SIZE_MAX : ops,
                                                 2 * n + gone, fresh + gone > 0, path_chunks, n)) {
        st = RP_ERR_NOMEM;
        goto out;
    }
    if (bulk && !(build = rp_bvh_items_new_(sc->count + fresh))) {
        st = RP_ERR_NOMEM;
        goto out;
    }
    rp_change plain = {
        .kind = RP_CHANGE_SCENE_PUT, .name = sc->name, .shapes = shapes, .n_shapes = n};
    rp_change *ch = ed->change ? ed->change : &plain;
    ch->before = sc;
    if (commit && !rp_store_may_commit_(sc->store, ch)) {
        st = RP_ERR_ABORTED;
        goto out;
    }

    /* Nothing below can fail. */
    for (size_t k = 0; k < n; k++) {
        if (last[k] < k)
            continue; /* a later duplicate: applied through its first occurrence */
        const rp_shape *shape = &shapes[last[k]].shape;
        rp_solid *so = solids[k];
        solids[k] = NULL;
        bool plane = shape->kind == RP_SHAPE_HALFSPACE;
        if (found[k] != SIZE_MAX) {
            uint32_t e = (uint32_t)found[k];
            bool was = rp_entry_is_plane_(RP_ENTRY(sc, e));
            scene_entry *en = rp_entry_mut_(&sc->entries, e);
            entry_drop_solid(en, &sc->store->bytes);
            entry_set_shape(en, shape, so);
            if (plane && !was)
                planes_add(sc, e); /* (it leaves the tree below) */
            else if (was && !plane)
                planes_drop(sc, e);
            continue; /* (the tree follows below) */
        }
        uint32_t e = (uint32_t)sc->count++;
        found[k] = e; /* for the tree, below */
        scene_entry *en = rp_entry_mut_(&sc->entries, e);
        entry_set_shape(en, shape, so); /* the slot held no solid (see scene_int.h) */
        en->shape.tag = ed->tags ? ed->tags[last[k]] : 0;
        en->id = ids[k]; /* nor an id */
        en->hash = hashes[k];
        en->leaf = RP_BVH_NIL;
        ids[k] = NULL;
        size_t slot;
        index_find(sc, en->id, hashes[k], &slot);
        index_insert(sc, slot, e);
        if (plane)
            planes_add(sc, e);
    }
    /* The tree follows: first the refits, while its structure is the one
     * whose paths were counted, then the changes of structure. */
    for (size_t k = 0; k < n; k++)
        if (todo[k] == TREE_REFIT)
            rp_bvh_refit_up_(sc, (uint32_t)found[k]);
    for (size_t k = 0; k < n; k++) {
        uint32_t e = (uint32_t)found[k];
        if (todo[k] == TREE_REINSERT) {
            /* The refits above may have grown the boxes around it (shapes
             * moved together): then it is refitted too, within the stock
             * of its two tree changes (a refit writes one path). */
            rp_shape sbuf;
            if (rp_bvh_held_(sc, e, rp_scene_shape_(sc, e, &sbuf)))
                rp_bvh_refit_up_(sc, e);
            else
                rp_bvh_reinsert_(sc, e);
        } else if (todo[k] == TREE_INSERT) {
            rp_bvh_insert_(sc, e);
        } else if (todo[k] == TREE_REMOVE) {
            rp_bvh_remove_(sc, e); /* a shape that became a half-space */
            rp_entry_mut_(&sc->entries, e)->leaf = RP_BVH_NIL;
        }
    }
    drop_ids(sc, ed->drop, ed->n_drop, tree);
    if (ed->set_objects) {
        rp_objtab_release_(sc->objects, sc->store);
        sc->objects = ed->objects;
        sc->next_tag = ed->next_tag;
    }
    if (bulk) {
        rp_bvh_rebuild_(sc, build); /* frees the scratch */
        build = NULL;
    } else if (stale) {
        sc->tree_stale = true;
    } else {
        rp_bvh_maintain_(sc);
    }
    sc->store->bytes += id_bytes;
    id_bytes = 0;
    sc->store->shapes += fresh;
    sc->store->shapes -= gone;
    if (commit)
        sc->revision = rp_store_take_revision_(sc->store);

out:
    planes_trim(sc); /* a failed put's room, or the last half-space went */
    trim_spares(sc);
    rp_bvh_items_free_(build);
    if (ids)
        for (size_t k = 0; k < n; k++)
            id_unref(ids[k], &id_bytes);
    if (solids)
        for (size_t k = 0; k < n; k++)
            solid_unref(solids[k], &id_bytes);
    free(solids);
    free(ids);
    free(hashes);
    free(last);
    free(found);
    free(todo);
    free(held_e);
    return st;
}

rp_status rp_scene_remove_(rp_scene *sc, const char *const *ids, size_t n,
                           const uint64_t *if_revision, size_t *removed, uint64_t *actual_revision)
{
    if (!revision_matches(sc, if_revision, actual_revision))
        return RP_ERR_REVISION;
    /* Stock for every id that could go (each is one tree change). */
    if (!reserve(sc, sc->count, n, n > 0)) {
        trim_spares(sc);
        return RP_ERR_NOMEM;
    }
    rp_change ch = {
        .kind = RP_CHANGE_SCENE_REMOVE, .name = sc->name, .ids = ids, .n_ids = n, .before = sc};
    if (!rp_store_may_commit_(sc->store, &ch)) {
        trim_spares(sc);
        return RP_ERR_ABORTED;
    }
    bool stale = sc->store->bulk_loading; /* see rp_scene_edit_ */
    size_t count = drop_ids(sc, ids, n, !stale);
    sc->store->shapes -= count;
    if (stale)
        sc->tree_stale = true;
    else
        rp_bvh_maintain_(sc);
    planes_trim(sc);
    trim_spares(sc);
    sc->revision = rp_store_take_revision_(sc->store);
    if (removed)
        *removed = count;
    return RP_OK;
}

static size_t drop_ids(rp_scene *sc, const char *const *ids, size_t n, bool tree)
{
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        if (sc->count == 0)
            break;
        size_t slot;
        if (!index_find(sc, ids[k], rp_strhash_(ids[k]), &slot))
            continue;
        uint32_t e = idx_get(sc, slot) - 2;
        index_delete(sc, slot);
        if (rp_entry_is_plane_(RP_ENTRY(sc, e)))
            planes_drop(sc, e);
        else if (tree)
            rp_bvh_remove_(sc, e);
        scene_entry *en = rp_entry_mut_(&sc->entries, e);
        id_unref(en->id, &sc->store->bytes);
        en->id = NULL;
        entry_drop_solid(en, &sc->store->bytes);
        uint32_t last = (uint32_t)(sc->count - 1);
        if (e != last) {
            /* The last entry moves into the hole, its id and solid with it
             * (the last slot then holds neither: no count changes). */
            scene_entry *le = rp_entry_mut_(&sc->entries, last);
            en = rp_entry_mut_(&sc->entries, e);
            *en = *le;
            le->id = NULL;
            le->shape.kind = RP_SHAPE_SPHERE;
            index_renumber(sc, en->hash, last, e);
            if (rp_entry_is_plane_(en))
                planes_renumber(sc, last, e);
            else if (tree)
                rp_bvh_renumber_(sc, last, e);
        }
        sc->count--;
        count++;
    }
    return count;
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
        refs[i].id = RP_ENTRY(sc, i)->id;
        refs[i].index = i;
    }
    qsort(refs, sc->count, sizeof *refs, cmp_id_ref);
    for (size_t i = 0; i < sc->count; i++)
        order[i] = refs[i].index;
    free(refs);
    return RP_OK;
}
