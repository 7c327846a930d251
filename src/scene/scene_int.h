/* SPDX-License-Identifier: MIT */
/*
 * Private layout of scenes and the store, shared by the files of src/scene
 * (store.c, scene.c, query.c, bvh.c, util.c, and through model_int.h
 * model.c and check.c).  Nothing outside src/scene includes this.
 */
#ifndef REPOSE_SCENE_INT_H
#define REPOSE_SCENE_INT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "chunks.h"
#include "simd.h" /* rp_simd_force_, rp_simd_enabled_: which box tests run with AVX2 */
#include "repose/scene.h"
#include "util/strtab.h" /* rp_strhash_ */

/* A box or a half-space kept out of line (entry_shape), with its count of
 * the chunk slots holding it, like an id's (scene.c). */
typedef struct rp_solid {
    uint32_t refs;
    rp_shape shape;
    /* A box's rotation (rp_box_axes) and extent along the world axes
     * (rp_box_reach_), kept for the tree and the kernels
     * (geometry/box_int.h): computed once, not at every leaf a walk
     * visits. */
    rp_vec3 axes[3], reach;
} rp_solid;

/* A box's extent along the world axes from its axes: sum_i |axis_i| h_i
 * per coordinate. */
static inline rp_vec3 rp_box_reach_(const rp_vec3 ax[3], rp_vec3 h)
{
    return (rp_vec3){fabs(ax[0].x) * h.x + fabs(ax[1].x) * h.y + fabs(ax[2].x) * h.z,
                     fabs(ax[0].y) * h.x + fabs(ax[1].y) * h.y + fabs(ax[2].y) * h.z,
                     fabs(ax[0].z) * h.x + fabs(ax[1].z) * h.y + fabs(ax[2].z) * h.z};
}

/* The solid holding a shape that a scene stores as a box or half-space
 * (its entry's, or rp_scene_shape_'s answer for it). */
static inline const rp_solid *rp_stored_solid_(const rp_shape *s)
{
    return (const rp_solid *)(const void *)((const char *)s - offsetof(rp_solid, shape));
}

/* A stored shape in 64 bytes: spheres and capsules in place, boxes and
 * half-spaces (88 bytes as an rp_shape) through a pointer, so that scenes
 * of spheres and capsules keep their 80-byte entries (the store's budget
 * is 150 bytes per shape, tree included).  Read it with rp_entry_shape_. */
typedef struct entry_shape {
    rp_shape_kind kind;
    /* The object owning the shape (its rp_object.tag), 0 for a shape of
     * the scene's own: in what was padding. */
    uint32_t tag;
    union {
        rp_sphere sphere;
        rp_capsule capsule;
        rp_solid *solid; /* kind >= RP_SHAPE_BOX */
    };
} entry_shape;

/* One stored shape.  The id is a reference-counted heap string (scene.c:
 * each chunk slot holding it counts once, so versions sharing chunks share
 * ids; a slot no entry uses holds NULL, and no solid); hash caches its
 * rp_strhash_ for the id index; leaf is the tree node whose child the shape
 * is (RP_BVH_NIL when the shape is the tree's root, the scene is empty or
 * the shape is a half-space, which stays out of the tree), kept by bvh.c.
 * 80 bytes on LP64: leaf sits in what was padding, so the tree costs the
 * entries nothing. */
typedef struct scene_entry {
    entry_shape shape;
    char *id;
    uint32_t hash;
    uint32_t leaf;
} scene_entry;

_Static_assert(sizeof(scene_entry) <= 80, "scene entries are budgeted at 80 bytes");

/* The entry's shape: a pointer to the stored solid, or to *buf filled with
 * the sphere or capsule. */
static inline const rp_shape *rp_entry_shape_(const scene_entry *en, rp_shape *buf)
{
    switch (en->shape.kind) {
    case RP_SHAPE_SPHERE:
        buf->kind = RP_SHAPE_SPHERE;
        buf->sphere = en->shape.sphere;
        return buf;
    case RP_SHAPE_CAPSULE:
        buf->kind = RP_SHAPE_CAPSULE;
        buf->capsule = en->shape.capsule;
        return buf;
    default:
        return &en->shape.solid->shape;
    }
}

static inline bool rp_entry_is_plane_(const scene_entry *en)
{
    return en->shape.kind == RP_SHAPE_HALFSPACE;
}

/* Work units of one distance between a and b (proto/PROTOCOL.md, the cost
 * model: a unit is about one sphere or capsule pair, some 20 ns): the box
 * kernels cost more (bench/fcl_box_bench on a 2-core x86-64): a sphere
 * or half-space against a box about one unit (15 ns), a capsule against a
 * box eight (160 ns), two boxes up to 256 (the vertices and the edge pairs
 * the pruning leaves: a few microseconds). */
#define RP_UNITS_CAPSULE_BOX 8
#define RP_UNITS_BOX_BOX 256
static inline uint64_t rp_pair_units_(const rp_shape *a, const rp_shape *b)
{
    if (a->kind != RP_SHAPE_BOX && b->kind != RP_SHAPE_BOX)
        return 1;
    if (a->kind == b->kind)
        return RP_UNITS_BOX_BOX;
    return (a->kind == RP_SHAPE_CAPSULE || b->kind == RP_SHAPE_CAPSULE) ? RP_UNITS_CAPSULE_BOX : 1;
}

/* Entry e, for reading. */
#define RP_ENTRY(sc, e)                                                                            \
    ((const scene_entry *)rp_chunks_at(&(sc)->entries, sizeof(scene_entry), (e)))

/* scene.c: takes a reference to every id of n entries (a chunk copy). */
void rp_entry_ids_ref_(void *ctx, void *entries, size_t n);

/* Entry e, for writing: its chunk is made this version's own first (the
 * mutation stocked a spare for that, see chunks.h). */
static inline scene_entry *rp_entry_mut_(rp_chunks *entries, size_t e)
{
    return (scene_entry *)rp_chunks_own(entries, sizeof(scene_entry), e, rp_entry_ids_ref_, NULL);
}

/* ---- objects (objects.c) ------------------------------------------------------ */

/* An object of a scene: a rigid group of shapes with a pose
 * (docs/ARCHITECTURE.md, Objects).  Immutable once made, reference-counted
 * by the object tables holding it, so versions share it.  Its shapes are
 * scene entries with ids "name/id" and the object's tag; `shapes` keeps
 * them in the object's frame (ids local), sorted by id. */
struct rp_object {
    uint32_t refs;
    uint32_t tag; /* unique in its scene's life, never 0 */
    char *name;
    rp_transform pose; /* a robot's: its base */
    size_t n_shapes;
    rp_shape_put *shapes;
    size_t bytes; /* what it holds, for the store's accounting */
    /* A robot instance: its model (a reference held), joint vector (dof
     * values) and its shapes' world shapes (world[k] for shapes[k], the
     * model's shapes in their links' frames); all NULL for an object of
     * shapes, whose world shapes are pose applied to its shapes. */
    rp_model *model;
    double *joints;
    size_t dof;
    rp_shape *world;
    /* An object fixed to a link of a robot instance (scene.attach): the
     * instance's name (its own allocation; NULL when free), the link (a
     * tree link of its model) and the object's pose in that link's frame.
     * Its pose is then always link pose ∘ rel, bit for bit. */
    char *att_robot;
    size_t att_link;
    rp_transform rel;
    /* A point cloud (clouds.c; a reference held): no shapes of its own
     * then; its spheres follow the scene's entries in storage order. */
    rp_cloud *cloud;
};

/* A scene's objects, sorted by name: immutable and reference-counted like
 * the objects, so that a version shares its table with the one it was
 * made from and a mutation swaps in a new table. */
typedef struct rp_objtab {
    uint32_t refs;
    size_t n;
    /* The clouds among them, in name order (pointers into obj's storage,
     * after the n objects), and their spheres in all. */
    size_t n_clouds, cloud_spheres;
    rp_object **clouds;
    rp_object *obj[];
} rp_objtab;

/* The shape at storage index e of sc: an entry's (e < sc->count), or a
 * sphere of a cloud (clouds.c), through *buf. */
const rp_shape *rp_scene_cloud_shape_(const rp_scene *sc, size_t e, rp_shape *buf);
static inline const rp_shape *rp_scene_shape_(const rp_scene *sc, size_t e, rp_shape *buf);

/* Lists of excluded storage indices (a link's allowed scene shapes): an
 * entry with RP_EXCL_RANGE set starts a range (a cloud's spheres) whose
 * end (exclusive) is the next entry. */
#define RP_EXCL_RANGE ((size_t)1 << (sizeof(size_t) * 8 - 1))
static inline bool rp_excl_has_(const size_t *v, size_t n, size_t e)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i] & RP_EXCL_RANGE) {
            if (e >= (v[i] & ~RP_EXCL_RANGE) && i + 1 < n && e < v[i + 1])
                return true;
            i++;
        } else if (v[i] == e) {
            return true;
        }
    }
    return false;
}

/* Whether storage index e is a sphere of a cloud the ignore list names. */
bool rp_cloud_index_ignored_(const rp_scene *sc, size_t e);

/* Compares the ids of storage indices a and b as strcmp would (a cloud's
 * sphere k is "name/k"). */
int rp_scene_index_cmp_(const rp_scene *sc, size_t a, size_t b);

void rp_objtab_retain_(rp_objtab *t);
void rp_objtab_release_(rp_objtab *t, rp_store *st);

/* Ignored owners: the tags of the objects a query leaves out, for the
 * calling thread while a public query, check or motion runs (set and
 * cleared by rp_ignore_open_ / rp_ignore_close_, nesting like the meter).
 * Tree walks skip an entry whose tag is listed. */
#define RP_IGNORE_MAX 64
typedef struct rp_ignore {
    uint32_t n;
    uint32_t depth;
    uint32_t tags[RP_IGNORE_MAX];
} rp_ignore;

extern _Thread_local rp_ignore rp_ignore_ __attribute__((tls_model("initial-exec")));

static inline bool rp_tag_ignored_(uint32_t tag)
{
    if (!tag || !rp_ignore_.n)
        return false;
    for (uint32_t i = 0; i < rp_ignore_.n; i++)
        if (rp_ignore_.tags[i] == tag)
            return true;
    return false;
}

static inline bool rp_ignored_(const scene_entry *en)
{
    return rp_tag_ignored_(en->shape.tag);
}

/* Opens the ignore list of a call on scene sc (NULL: none): the objects
 * named by names[0..n).  RP_ERR_NOT_FOUND for a name that is no object of
 * the scene (*bad its position), RP_ERR_LIMIT beyond RP_IGNORE_MAX; the
 * list stays closed then (no rp_ignore_close_).  Only the outermost call
 * sets it; nested calls see the same. */
rp_status rp_ignore_open_(const rp_scene *sc, const char *const *names, size_t n, size_t *bad);
void rp_ignore_close_(void);

/* ---- bounding-volume hierarchy (bvh.c) ---------------------------------- */

/* No node / no parent. */
#define RP_BVH_NIL UINT32_MAX
/* A child reference with this bit set names a shape: its entry index in the
 * low 31 bits; otherwise it is a node index.  Scenes hold at most
 * RP_BVH_MAX_SHAPES shapes, so a tagged reference never equals RP_BVH_NIL. */
#define RP_BVH_SHAPE 0x80000000u
#define RP_BVH_MAX_SHAPES 0x7fffffffu

/* An inner node of the tree (44 bytes; a scene of n >= 1 shapes has n - 1 of
 * them): a float box rounded outwards that contains both children's boxes,
 * rmax >= the padded radius of every shape below it (rounded up: it bounds
 * how deep a penetration inside can be), two child references, the parent
 * node (RP_BVH_NIL at the root), and the height (1 + the larger child
 * height; a shape counts 0). */
typedef struct rp_bvh_node {
    float lo[3], hi[3];
    float rmax;
    uint32_t child[2];
    uint32_t parent;
    uint32_t height;
} rp_bvh_node;

/* A scene's tree: inner nodes dense in nodes[0 .. n_nodes) (removal moves
 * the last node into the hole), capacity cap; root is RP_BVH_NIL (empty
 * scene), a tagged shape (one shape) or a node.  churn counts leaf
 * insertions and removals since the last quality check, built_area is the
 * summed inner-node area measured at the last full build (rebuild.c). */
typedef struct rp_bvh {
    rp_chunks nodes; /* chunked, shared between versions (chunks.h) */
    uint32_t n_nodes;
    uint32_t root;
    uint32_t churn;
    double built_area;
    /* Deferred rebuilds (rp_store_defer_rebuilds): the tree wants one, one
     * is running on another thread, and how many in a row found the scene
     * changed when they finished.  Versions copy them. */
    bool want_rebuild, rebuilding;
    uint8_t rebuild_misses;
} rp_bvh;

/* A point cloud (clouds.c): n spheres of one radius, centres in floats
 * (xyz[3k..3k+2], in a spatial order), and a tree of its own over them
 * whose leaves are sphere positions (never shared, never changed: the
 * cloud is immutable once built).  About 56 bytes a sphere: 12 of centre,
 * 44 of tree node. */
struct rp_cloud {
    uint32_t refs;
    size_t n, n_input;
    double radius, voxel;
    float *xyz;
    rp_bvh tree;
    size_t bytes; /* xyz and tree */
};

/* Sphere k of cloud c. */
static inline rp_shape rp_cloud_sphere_(const rp_cloud *c, size_t k)
{
    rp_shape s;
    s.kind = RP_SHAPE_SPHERE;
    s.sphere.center = (rp_vec3){c->xyz[3 * k], c->xyz[3 * k + 1], c->xyz[3 * k + 2]};
    s.sphere.radius = c->radius;
    return s;
}

/* bvh.c: builds cloud c's tree over its centres (in the order they are:
 * the halves of a spatial order make the splits).  False when out of
 * memory; c->bytes counts the nodes. */
bool rp_cloud_tree_build_(rp_cloud *c);
/* bvh.c: frees a tree's nodes (*bytes follows). */
void rp_bvh_free_nodes_(rp_bvh *t, size_t *bytes);
/* clouds.c: takes a reference. */
void rp_cloud_retain_(rp_cloud *c);

/* Scratch for a full build (one per shape), opaque outside bvh.c. */
typedef struct rp_bvh_item rp_bvh_item;

struct rp_scene {
    char *name;
    uint64_t revision;
    rp_chunks entries; /* dense: count used; chunked, shared between versions */
    size_t count;
    /* Id index (scene.c): open addressing with linear probing over
     * index_slots slots (0 or a power of two >= 256), held in chunks so that
     * versions share it like the entries: an insertion or a removal writes
     * one slot (removals leave a tombstone), so a change copies one chunk.
     * index_live slots hold entries, index_dead tombstones; live + dead stay
     * at most 3/4 of the slots (a full rebuild restores that). */
    rp_chunks index;
    size_t index_slots, index_live, index_dead;
    rp_store *store; /* owner, for limits and memory accounting */
    rp_bvh tree;     /* kept up to date by every mutation; queries only read it */
    /* The entries holding half-spaces, in no order: the tree leaves them
     * out, and every query tests them besides its walk.  Room for
     * planes_cap, allocated with the first (NULL until then: most scenes
     * have none; at most the store's max_halfspaces_per_scene); each
     * version has its own copy. */
    uint32_t *planes;
    uint32_t n_planes, planes_cap;
    /* The scene's objects (objects.c): NULL when it has none; the tag the
     * next new object takes. */
    rp_objtab *objects;
    uint32_t next_tag;
    unsigned refs;   /* the store's list and the snapshots holding it (version.c) */
    bool tree_stale; /* changed during a bulk load: the tree waits for its rebuild */
};

static inline const rp_shape *rp_scene_shape_(const rp_scene *sc, size_t e, rp_shape *buf)
{
    if (__builtin_expect(e < sc->count, 1))
        return rp_entry_shape_(RP_ENTRY(sc, e), buf);
    return rp_scene_cloud_shape_(sc, e, buf);
}

/* Whether the scene holds anything a walk could meet: shapes of its own
 * or the spheres of a cloud. */
static inline bool rp_scene_walkable_(const rp_scene *sc)
{
    return sc->count || (sc->objects && sc->objects->cloud_spheres);
}

/* Whether storage index e is an entry an ignore list leaves out (a cloud's
 * spheres are left out whole, before their tree is walked). */
static inline bool rp_ignored_at_(const rp_scene *sc, size_t e)
{
    return e < sc->count && rp_ignored_(RP_ENTRY(sc, e));
}

struct rp_store {
    bool snapshot;     /* a read-only copy (version.c): holds references only */
    rp_scene **scenes; /* sorted by name */
    size_t count, cap;
    rp_model **models; /* sorted by name (model.c) */
    size_t model_count, model_cap;
    rp_store_limits limits;
    uint64_t revision;   /* the last store-wide revision taken (docs/ARCHITECTURE.md, Revisions) */
    uint64_t shapes;     /* across all scenes */
    size_t bytes;        /* heap bytes held (scenes, trees, models), see rp_store_memory */
    bool defer_rebuilds; /* see rp_store_defer_rebuilds */
    bool rebuild_hint;   /* some scene may want a rebuild: rp_store_rebuild_take looks */
    bool bulk_loading;   /* see rp_store_bulk_load */
    rp_store_commit_fn commit_hook; /* see rp_store_set_commit_hook */
    void *commit_ctx;
};

/* The next store-wide revision, taken by a mutation that is about to
 * commit (nothing after it may fail). */
static inline uint64_t rp_store_take_revision_(rp_store *st)
{
    return ++st->revision;
}

/* A mutation's point of no return: asks the commit hook (when there is
 * one) whether it may go on; false means abort with RP_ERR_ABORTED,
 * changing nothing.  Called once per mutation, after every check and
 * allocation and before the first change. */
static inline bool rp_store_may_commit_(rp_store *st, rp_change *change)
{
    if (!st->commit_hook)
        return true;
    change->revision = st->revision + 1;
    return st->commit_hook(st->commit_ctx, change) == 0;
}

/* util.c: position of `name` in an array of count items sorted by name
 * (name_of gives an item's name), or where it would be inserted. */
size_t rp_name_lower_bound_(void *const *items, size_t count,
                            const char *(*name_of)(const void *item), const char *name,
                            bool *found);

/* util.c: stable sort with a context for the comparison; false when out of
 * memory (the array is then unchanged). */
typedef int (*rp_ctx_cmp)(const void *a, const void *b, const void *ctx);
bool rp_sort_ctx_(void *base, size_t n, size_t size, rp_ctx_cmp cmp, const void *ctx);

/* ---- queries used by robot checks (bvh.c) ------------------------------- */

/* A shape's box in doubles, padded by its radius and by a slack above the
 * distance kernels' error (bvh.c), and the padded radius r. */
typedef struct rp_dbox {
    double lo[3], hi[3];
    double r;
} rp_dbox;

/* Slack on squared comparisons: the boxes' inflation already keeps every
 * computed distance above the box gap; this only absorbs the rounding of
 * the squares themselves, erring towards visiting. */
#define RP_SQUARE_SLACK (1.0 + 8.0 * 2.220446049250313e-16)

/* True when no pair with this key can be below `bound` (or equal to it,
 * when ties cannot win). */
static inline bool rp_key_excludes_(double key, double bound, bool ties_win)
{
    if (key > 0.0) { /* apart: every distance exceeds sqrt(key) */
        if (bound < 0.0)
            return true;
        double b2 = bound * bound * RP_SQUARE_SLACK;
        return key > b2;
    }
    return key > bound || (key == bound && !ties_win);
}

/* ---- the work meter (rp_work) ------------------------------------------------ */

/* The calling thread's budget for tree walks.  A public query, check or
 * motion opens it (rp_meter_open_) from its rp_work; the walks of bvh.c
 * read `left` into a local once, spend from it (one unit per node visited
 * and per distance evaluated, checked once per stack entry, so a limit is
 * passed by at most one leaf's tests), and write it back.  Once a walk
 * finds nothing left it sets `out` and stops, and every later walk of the
 * call stops at its first step, reporting nothing; the call then fails
 * with RP_ERR_WORK (rp_meter_close_), so no result built from a cut walk
 * is ever returned.  Calls nest (a motion checks states; a joint check
 * checks frames): only the outermost opens and closes the budget.  Between
 * calls there is no limit (the walks' internal callers and tests). */
typedef struct rp_meter {
    int64_t left;   /* units left for the walks (below 0: overspent); INT64_MAX: no limit */
    int64_t start;  /* left when the outermost call opened it */
    uint32_t depth; /* public calls open on this thread */
    bool out;       /* a walk stopped for lack of units */
} rp_meter;

extern _Thread_local rp_meter rp_meter_ __attribute__((tls_model("initial-exec")));

static inline void rp_meter_open_(rp_work *w)
{
    if (rp_meter_.depth++)
        return;
    int64_t left = INT64_MAX;
    if (w && w->limit) {
        uint64_t room = w->limit > w->spent ? w->limit - w->spent : 0;
        left = room < (uint64_t)INT64_MAX ? (int64_t)room : INT64_MAX;
    }
    rp_meter_.left = rp_meter_.start = left;
    rp_meter_.out = false;
}

/* Closes what rp_meter_open_ opened: st, or RP_ERR_WORK when a walk ran
 * out (an error the call found first wins).  The outermost call adds what
 * its walks spent, including any slice past the limit, to w->spent. */
static inline rp_status rp_meter_close_(rp_work *w, rp_status st)
{
    bool out = rp_meter_.out;
    if (--rp_meter_.depth == 0) {
        uint64_t spent = (uint64_t)rp_meter_.start - (uint64_t)rp_meter_.left;
        if (w)
            w->spent = w->spent > UINT64_MAX - spent ? UINT64_MAX : w->spent + spent;
        rp_meter_.left = rp_meter_.start = INT64_MAX; /* no limit between calls */
        rp_meter_.out = false;
    }
    return st == RP_OK && out ? RP_ERR_WORK : st;
}

/* Units a walk has left after spending n (below 0 once overspent: a walk
 * checks for that once per stack entry or scene shape). */
static inline int64_t rp_meter_spend_(int64_t left, uint64_t n)
{
    return left - (int64_t)n;
}

/* Nearest scene shape to q.  *best_d is an in/out bound: a shape becomes the
 * best when its distance is below it, or equal to it and this call already
 * found a best whose id is larger (the id tie rule).  Ties with a bound
 * carried in from elsewhere never win (*found stays false until a shape is
 * strictly closer).  On return *found says whether *best_d / *best_idx came
 * from this scene. */
void rp_scene_nearest_(const rp_scene *sc, const rp_shape *q, double *best_d, size_t *best_idx,
                       bool *found);

/* The same, ignoring the n_excl scene shapes excl lists. */
void rp_scene_nearest_excl_(const rp_scene *sc, const rp_shape *q, const size_t *excl,
                            size_t n_excl, double *best_d, size_t *best_idx, bool *found);

/* The same, also counting the shapes whose distance was computed (tests and
 * benchmarks use it to show the tree prunes). */
void rp_scene_nearest_counted_(const rp_scene *sc, const rp_shape *q, double *best_d,
                               size_t *best_idx, bool *found, size_t *evaluated);

/* Calls fn(ctx, index, distance) for scene shapes closer than threshold
 * (strictly), in no particular order, until fn returns false.  Returns false
 * when fn stopped the scan. */
typedef bool (*rp_scene_visit_fn)(void *ctx, size_t index, double distance);
bool rp_scene_below_(const rp_scene *sc, const rp_shape *q, double threshold, rp_scene_visit_fn fn,
                     void *ctx);

/* Several query shapes walking the tree together (a robot link's shapes):
 * their padded boxes (rp_multi_set_) as structure of arrays, so that a
 * node is tested against four of them in one go. */
#define RP_MULTI_MAX 64
typedef struct rp_multi {
    size_t n;
    const rp_shape *shape[RP_MULTI_MAX];
    _Alignas(32) double lo[3][RP_MULTI_MAX];
    _Alignas(32) double hi[3][RP_MULTI_MAX];
    _Alignas(32) double r[RP_MULTI_MAX];
} rp_multi;

/* Balls walking the tree together (a robot's slot spheres): centres and
 * padded radii as structure of arrays.  Against a box, the distance from
 * the centre bounds more tightly than the ball's own box would. */
typedef struct rp_balls {
    size_t n;
    _Alignas(32) double c[3][RP_MULTI_MAX];
    _Alignas(32) double r[RP_MULTI_MAX];
} rp_balls;

/* Sets ball k of q to the ball of centre c, radius r, padded like a shape's
 * box (so that its bounds stay below computed distances); lanes after the
 * last set one up to a multiple of four must be set too (zero radius). */
void rp_balls_set_(rp_balls *q, size_t k, rp_vec3 c, double r);

/* Sets query k of q (k < RP_MULTI_MAX) to shape s (kept by pointer). */
void rp_multi_set_(rp_multi *q, size_t k, const rp_shape *s);
/* Zeroes the lanes after the first n up to a multiple of four (a group of
 * four is read whole; the masks leave those lanes out). */
void rp_multi_pad_(rp_multi *q, size_t n);

/* rp_scene_below_ for the queries of q whose bits are set in `active`, in
 * one walk: fn(ctx, k, index, distance) is called for scene shapes closer
 * than threshold (strictly) to query k, for each query in the tree's
 * depth-first order (the order rp_scene_below_ visits shapes in), and
 * returns the queries to drop from then on (0: none).
 *
 * With a gate (else NULL): a shape enclosing every query.  The walk first
 * looks for a scene shape closer than gate->threshold to it, and only when
 * it finds one calls gate->fill, which fills q and returns the queries to
 * walk for (`active` is ignored); no such shape, no fill and no call of
 * fn.  The threshold must exceed `threshold` by the kernels' error of the
 * gate's size, so that no pair below `threshold` hides from the gate. */
typedef uint64_t (*rp_multi_visit_fn)(void *ctx, unsigned k, size_t index, double distance);
typedef struct rp_multi_gate {
    const rp_shape *shape;
    double threshold;
    uint64_t (*fill)(void *ctx, rp_multi *q);
} rp_multi_gate;
void rp_scene_below_multi_(const rp_scene *sc, rp_multi *q, uint64_t active, double threshold,
                           const rp_multi_gate *gate, rp_multi_visit_fn fn, void *ctx);

/* A whole robot walking the tree once: gate lanes (the slot spheres, a
 * few) are tested against the tree's nodes; a scene shape that passes a
 * gate is tested against that gate's shapes (lanes of `shapes`, at most
 * RP_MULTI_MAX in all), which fill places on first need.  gate_shapes[g]
 * is gate g's shape lanes. */
typedef struct rp_robot_walk {
    rp_balls gates;
    uint64_t gate_shapes[RP_MULTI_MAX];
    rp_multi shapes;
    uint64_t filled; /* shape lanes filled so far (start with 0) */
    void (*fill)(void *ctx, rp_multi *shapes, uint64_t lanes);
} rp_robot_walk;

/* Several robots (configurations of one model) walking the tree at once
 * for FIRST: gate lanes of every robot (gate_robot[g] says whose;
 * gate_shapes[g] its shape lanes in that robot's `shapes`), and per robot
 * its shapes, placed by fill on first need, the shape lanes still looked
 * for (`active`), and visit, called as for rp_scene_below_multi_ (each
 * shape's scene shapes below the threshold in the tree's order; it returns
 * the shape lanes to drop).  A robot's gates drop out with its last
 * active shape.  Each robot meets its pairs in the order a walk of its own
 * would. */
#define RP_ROBOTS_MAX 4
typedef struct rp_robot_lanes {
    rp_multi shapes;
    uint64_t filled; /* shape lanes filled so far (start with 0) */
    uint64_t active;
    void (*fill)(void *ctx, rp_multi *shapes, uint64_t lanes);
    rp_multi_visit_fn visit;
    void *ctx;
} rp_robot_lanes;

typedef struct rp_robots_walk {
    rp_balls gates;
    uint64_t gate_shapes[RP_MULTI_MAX];
    uint8_t gate_robot[RP_MULTI_MAX];
    size_t n_robots;
    rp_robot_lanes *robot[RP_ROBOTS_MAX];
} rp_robots_walk;

/* The walk: a gate's shapes are only looked at where a scene shape's box
 * comes within gate_threshold of the gate (which must cover `threshold`
 * plus the kernels' error, as for rp_multi_gate). */
void rp_scene_below_robots_(const rp_scene *sc, rp_robots_walk *w, double gate_threshold,
                            double threshold);

/* CLOSEST's walk for a whole robot: fn(ctx, k, index, distance) is called
 * for every pair of shape lane k (in `active`) and scene shape whose
 * computed distance is at most *bound, and may lower *bound (it applies the
 * tie rule itself; its return value is ignored).  Nodes and shapes whose
 * bounds exceed *bound are skipped, so every pair at or below the final
 * bound is offered.  gate_slack covers the kernels' error of the gates'
 * size (as for rp_multi_gate). */
void rp_scene_nearest_robot_(const rp_scene *sc, rp_robot_walk *w, uint64_t active,
                             const double *bound, double gate_slack, rp_multi_visit_fn fn,
                             void *ctx);

/* rp_scene_put / rp_scene_remove without the check that the scene is the
 * store's current, unshared version (the store's own calls: a scene being
 * built, or one rp_store_writable_ returned). */
rp_status rp_scene_put_(rp_scene *sc, const rp_shape_put *shapes, size_t n,
                        const uint64_t *if_revision, uint64_t *actual_revision);
/* The put of a scene being built (not yet in the store's list): the same
 * changes, but no revision is taken (the store gives the scene one when it
 * links it in). */
rp_status rp_scene_fill_(rp_scene *sc, const rp_shape_put *shapes, size_t n);

/* One mutation of a scene's shapes and objects, as objects.c builds it:
 * the shapes to write (world coordinates; later duplicates win), the tag
 * each new entry takes (tags[k] for shapes[k]; NULL: 0 for all), the ids
 * of entries to remove after the writes (each present once, none of them
 * written), and, when set_objects, the object table the scene holds
 * afterwards (NULL: none) with the next tag.  `change` is the record for
 * the commit hook (its `before` is filled in; NULL: a plain put's).  All
 * or nothing; on success the scene owns `objects`, on failure the caller
 * still does.  With commit false (a scene being built) no hook is asked
 * and no revision taken. */
typedef struct rp_edit_ {
    const rp_shape_put *shapes;
    size_t n;
    const uint32_t *tags;
    const char *const *drop;
    size_t n_drop;
    bool set_objects;
    rp_objtab *objects;
    uint32_t next_tag;
    rp_change *change;
} rp_edit_;
rp_status rp_scene_edit_(rp_scene *sc, const rp_edit_ *ed, bool commit);

/* store.c: applies an edit to scene `name` (if_revision and such already
 * checked): in place, or, when `rebuild` or the scene is missing, into a
 * new scene built beside the old one (created or replacing it; the
 * change record's `created` and `before` are filled in).  All or nothing. */
rp_status rp_store_apply_edit_(rp_store *st, const char *name, rp_edit_ *ed, bool rebuild,
                               rp_scene **out);

/* objects.c: rp_store_remove for a scene with objects (ids may name them). */
rp_status rp_store_remove_objects_(rp_store *st, const char *name, const char *const *ids, size_t n,
                                   rp_scene **out, size_t *removed);

/* The object named `name` in sc (NULL when none); *at (may be NULL) gets
 * its position in the table, or where it would go. */
rp_object *rp_scene_object_lookup_(const rp_scene *sc, const char *name, size_t *at);

/* Whether a shape id of the scene's own may not be used because it names
 * an object, or the part before its first '/' does (those ids belong to
 * the object). */
bool rp_scene_id_owned_(const rp_scene *sc, const char *id);
rp_status rp_scene_remove_(rp_scene *sc, const char *const *ids, size_t n,
                           const uint64_t *if_revision, size_t *removed, uint64_t *actual_revision);

/* Creates an empty scene (revision 0, not yet in the store's list). */
rp_scene *rp_scene_new_(rp_store *st, const char *name);
void rp_scene_free_(rp_scene *sc);

/* ---- tree maintenance (bvh.c), called by the mutations in scene.c ------- */

/* An empty tree (no allocation). */
void rp_bvh_init_(rp_bvh *t);

/* Frees the tree's nodes (memory accounting included). */
void rp_bvh_free_(rp_bvh *t, rp_store *st);

/* Stocks spare node chunks for `ops` incremental changes (insert, update,
 * remove) of a tree whose nodes another version shares (chunks.h), and
 * extra_chunks more.  All or nothing. */
bool rp_bvh_stock_(rp_bvh *t, rp_store *st, size_t ops, size_t extra_chunks);

/* Most chunks of nodes, and of entries (their leaf links), one tree change
 * can write. */
size_t rp_bvh_touch_bound_(const rp_bvh *t);
size_t rp_bvh_entry_bound_(const rp_bvh *t);

/* dst (empty) shares src's nodes (version.c); false when out of memory. */
bool rp_bvh_share_(rp_bvh *dst, const rp_bvh *src, rp_store *st);

/* Makes room for the nodes of a scene of `shapes` shapes (shapes - 1
 * nodes), memory accounting included.  All or nothing; false when out of
 * memory or beyond RP_BVH_MAX_SHAPES.  scene.c reserves before applying a
 * mutation, so that the steps below cannot fail. */
bool rp_bvh_reserve_(rp_bvh *t, rp_store *st, size_t shapes);

/* Scratch for a full build over `shapes` shapes; NULL when out of memory.
 * Freed by rp_bvh_rebuild_, or by rp_bvh_items_free_ (NULL is a no-op). */
rp_bvh_item *rp_bvh_items_new_(size_t shapes);
void rp_bvh_items_free_(rp_bvh_item *items);

/* Replaces the scene's tree by one built from scratch over its current
 * shapes, into the reserved nodes, with the scratch `items` (which it
 * frees).  Cannot fail. */
void rp_bvh_rebuild_(rp_scene *sc, rp_bvh_item *items);

/* Builds a tree over the n entries of en into t's nodes (room for n - 1),
 * with items (room for n) as scratch; reads the entries and writes nothing
 * else, so it can run beside readers of the scene.  Returns the root
 * reference and, in *area, the summed node area. */
uint32_t rp_bvh_build_(const rp_chunks *en, uint32_t n, rp_bvh *t, rp_bvh_item *items,
                       double *area);

/* Makes a tree that rp_bvh_build_ built over sc's shapes the scene's own
 * (its nodes must already be sc->tree.nodes): writes the leaves' parents
 * into the entries, and starts the quality measure afresh (no rebuild is
 * wanted of a new tree). */
void rp_bvh_install_(rp_scene *sc, uint32_t root, const rp_bvh_item *items, double area);

/* The tree's measures: its summed inner-node half areas (proportional to
 * the expected number of nodes a query visits), and its height (0 for at
 * most one shape). */
double rp_bvh_area_(const rp_bvh *t);
uint32_t rp_bvh_height_(const rp_bvh *t);

/* Entry e (its shape already stored) joins the tree.  Needs the node
 * reserved; cannot fail. */
void rp_bvh_insert_(rp_scene *sc, uint32_t e);

/* Entries whose shapes changed but stay in the tree (rp_scene_edit_).
 * Before anything changes, rp_bvh_held_ says whether the new shape s of
 * entry e is still held by a box a few levels above e's leaf (or e is the
 * tree's root); rp_bvh_path_chunks_ counts the distinct node chunks on the
 * paths from the leaves of entries es to the root (SIZE_MAX when out of
 * memory): the only ones rp_bvh_refit_up_ writes for them, while the
 * tree's structure stays.  Once the new shapes are stored, rp_bvh_refit_up_
 * on each held entry refits the boxes from its parent up until one holds
 * them (shapes moved together share the refits), or only raises radius
 * bounds; then rp_bvh_reinsert_ takes each other one out and in (two tree
 * changes).  Cannot fail. */
bool rp_bvh_held_(const rp_scene *sc, uint32_t e, const rp_shape *s);
size_t rp_bvh_path_chunks_(const rp_scene *sc, const uint32_t *es, size_t n);
void rp_bvh_refit_up_(rp_scene *sc, uint32_t e);
void rp_bvh_reinsert_(rp_scene *sc, uint32_t e);

/* Entry e leaves the tree (before scene.c drops it).  Cannot fail. */
void rp_bvh_remove_(rp_scene *sc, uint32_t e);

/* scene.c moved entry `from` (the last one) to index `to`: the reference
 * in its parent follows. */
void rp_bvh_renumber_(rp_scene *sc, uint32_t from, uint32_t to);

/* ---- the rebuild policy (rebuild.c) ------------------------------------------ */

/* Whether a put that adds `fresh` shapes to a scene of `count` rebuilds the
 * tree from scratch (rp_bvh_rebuild_) instead of inserting one by one. */
bool rp_bvh_bulk_(size_t count, size_t fresh);

/* After a mutation: rebuilds the tree when its quality degraded (see the
 * top of rebuild.c), or marks it for a deferred rebuild.  Optional work:
 * when the scratch cannot be allocated the tree stays as it is (valid,
 * just slower) and the check is repeated later. */
void rp_bvh_maintain_(rp_scene *sc);

/* Test-only: checks every invariant of the scene's tree (boxes and radius
 * bounds contain the children's, parent links, heights and AVL balance, node
 * count, every entry reachable exactly once).  Returns the tree's height
 * (0 for a scene of at most one shape), or -1 after printing the first
 * violation to stderr. */
int rp_bvh_check_(const rp_scene *sc);

/* Test-only: the float bounds boxes are rounded to (bvh.c): *down <= x <=
 * *up, each within two floats of x. */
void rp_bvh_round_(double x, float *down, float *up);

/* model.c: frees a model (store memory accounting included). */
void rp_model_free_(rp_model *m);

/* version.c: references to scenes and models (see its top).  A release
 * that drops the last one frees. */
void rp_scene_retain_(rp_scene *sc);
void rp_scene_release_(rp_scene *sc);
void rp_model_retain_(rp_model *m);
void rp_model_release_(rp_model *m);

/* version.c: scene i of the store, ready to be changed in place: itself
 * when only the store holds it, else a copy that replaces it in the list
 * (the holders keep the old one).  NULL when out of memory (nothing
 * changed). */
rp_scene *rp_store_writable_(rp_store *st, size_t i);

#endif /* REPOSE_SCENE_INT_H */
