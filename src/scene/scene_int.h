/*
 * Private layout of scenes and the store, shared by the files of src/scene
 * (store.c, scene.c, query.c, bvh.c, util.c, and through model_int.h
 * model.c and check.c).  Nothing outside src/scene includes this.
 */
#ifndef REPOSE_SCENE_INT_H
#define REPOSE_SCENE_INT_H

#include <stdint.h>

#include "repose/scene.h"
#include "util/strtab.h"

/* One stored shape.  The id is a separate heap string owned by the entry;
 * hash caches its rp_strhash_ for the id index. */
typedef struct scene_entry {
    rp_shape shape;
    char *id;
    uint32_t hash;
} scene_entry;

/* A node of the bounding-volume hierarchy (bvh.c): a float box rounded
 * outwards, the largest radius below it (rounded up: it bounds how deep a
 * penetration inside can be); an inner node (count == 0) has children first
 * and first + 1, a leaf holds order[first .. first + count). */
typedef struct rp_bvh_node {
    float lo[3], hi[3];
    float rmax;
    uint32_t first, count;
} rp_bvh_node;

typedef struct rp_bvh rp_bvh;

struct rp_scene {
    char *name;
    uint64_t revision;
    scene_entry *entries; /* dense, count used, cap allocated */
    size_t count, cap;
    /* Id index: entry indices by id (util/strtab.h), kept at most 3/4 full. */
    rp_strtab index;
    rp_store *store; /* owner, for limits and memory accounting */
    rp_bvh *bvh;     /* NULL until the first query on a large scene */
    bool bvh_stale;  /* a mutation happened since bvh was built */
};

struct rp_store {
    rp_scene **scenes; /* sorted by name */
    size_t count, cap;
    rp_model **models; /* sorted by name (model.c) */
    size_t model_count, model_cap;
    rp_store_limits limits;
    uint64_t shapes;   /* across all scenes */
    size_t bytes;      /* heap bytes held (scenes, trees, models), see rp_store_memory */
};

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
bool rp_scene_below_(const rp_scene *sc, const rp_shape *q, double threshold,
                     rp_scene_visit_fn fn, void *ctx);

/* Creates an empty scene (revision 0, not yet in the store's list). */
rp_scene *rp_scene_new_(rp_store *st, const char *name);
void rp_scene_free_(rp_scene *sc);

/* bvh.c: frees a tree (memory accounting included); NULL is a no-op. */
void rp_bvh_free_(rp_bvh *t, rp_store *st);

/* model.c: frees a model (store memory accounting included). */
void rp_model_free_(rp_model *m);

#endif /* REPOSE_SCENE_INT_H */
