/*
 * repose — scenes: named collections of shapes with revisions, and the
 * queries the daemon answers against them.  Usable in process: a planner can
 * link `repose` and call this API directly, without the daemon.
 *
 * A store owns scenes; a scene owns its shapes and their ids.  Every
 * successful mutation of a scene (put, remove) bumps its revision by exactly
 * one; a failed one changes nothing (all or nothing).
 *
 * Threading: a store and its scenes are not internally synchronised.  Any
 * number of threads may run queries on a scene while no thread mutates it.
 *
 * Units: metres.  Distances are signed, as in geometry.h.
 */
#ifndef REPOSE_SCENE_H
#define REPOSE_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repose/geometry.h"
#include "repose/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Default for rp_store_limits.max_shapes_per_scene.
#define RP_DEFAULT_MAX_SHAPES_PER_SCENE 1000000u

typedef struct rp_store rp_store;
typedef struct rp_scene rp_scene;

/// Limits a store enforces.  Zero means "use the default".
typedef struct rp_store_limits {
    size_t max_shapes_per_scene; ///< A put that would exceed it fails with RP_ERR_LIMIT.
} rp_store_limits;

/// One shape to store under an id.
typedef struct rp_shape_put {
    const char *id; ///< Shape id (copied by the store); caller validates its syntax.
    rp_shape shape; ///< Shape in world coordinates; must pass rp_shape_validate.
} rp_shape_put;

/* ---- store ------------------------------------------------------------- */

/// Creates an empty store.  `limits` may be NULL for the defaults.  Returns
/// NULL when out of memory.  Free with rp_store_free.
rp_store *rp_store_new(const rp_store_limits *limits);

/// Frees a store, its scenes and their shapes.  rp_store_free(NULL) is a no-op.
void rp_store_free(rp_store *st);

/// The limits in force (defaults filled in).
rp_store_limits rp_store_get_limits(const rp_store *st);

/// Finds a scene by name; NULL when there is none.  The pointer stays valid
/// until the scene is deleted or the store freed.
rp_scene *rp_store_find(const rp_store *st, const char *name);

/// Creates a scene holding `shapes` (n may be 0) at revision 1.  Returns
/// RP_ERR_EXISTS when the name is taken, RP_ERR_LIMIT when n exceeds the
/// per-scene limit, RP_ERR_NOMEM; on error nothing changes.  *out (may be
/// NULL) receives the scene.  Later duplicates of an id in `shapes` win.
rp_status rp_store_create(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                          rp_scene **out);

/// Deletes a scene and everything in it.  RP_ERR_NOT_FOUND when missing.
rp_status rp_store_delete(rp_store *st, const char *name);

/// Puts shapes into scene `name`, creating it when `create` is true and it
/// does not exist (it then starts at revision 1, and an `if_revision` of 0
/// means "must not exist yet").  See rp_scene_put for the rest.
rp_status rp_store_put(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                       const uint64_t *if_revision, bool create, rp_scene **out,
                       uint64_t *actual_revision);

/// Number of scenes, and scene i in name order (strcmp), 0 <= i < count.
size_t rp_store_scene_count(const rp_store *st);
const rp_scene *rp_store_scene_at(const rp_store *st, size_t i);

/// Shapes in all scenes.
uint64_t rp_store_shape_count(const rp_store *st);

/// Bytes the store holds on the heap (scenes, shapes, ids, indexes), as
/// counted by the store itself.
size_t rp_store_memory(const rp_store *st);

/* ---- scene ------------------------------------------------------------- */

const char *rp_scene_name(const rp_scene *sc);
uint64_t rp_scene_revision(const rp_scene *sc);
size_t rp_scene_shape_count(const rp_scene *sc);

/// Looks an id up; returns its storage index or SIZE_MAX when absent.
/// Storage indices are dense (0..count-1) and change on every mutation.
size_t rp_scene_find(const rp_scene *sc, const char *id);
const char *rp_scene_id_at(const rp_scene *sc, size_t index);
const rp_shape *rp_scene_shape_at(const rp_scene *sc, size_t index);

/// Fills order[0..count-1] with the storage indices sorted by id (strcmp).
/// Returns RP_ERR_NOMEM on allocation failure (order is caller-owned).
rp_status rp_scene_sorted(const rp_scene *sc, size_t *order);

/// Inserts or replaces shapes by id, all or nothing.  When `if_revision` is
/// non-NULL and differs from the revision, fails with RP_ERR_REVISION and
/// sets *actual_revision (may be NULL).  RP_ERR_LIMIT when the scene would
/// exceed max_shapes_per_scene; RP_ERR_NOMEM.  On success the revision is
/// bumped by one (also for n == 0).
rp_status rp_scene_put(rp_scene *sc, const rp_shape_put *shapes, size_t n,
                       const uint64_t *if_revision, uint64_t *actual_revision);

/// Removes the shapes with the given ids; ids not in the scene are ignored.
/// *removed (may be NULL) gets the number removed.  `if_revision` as for
/// put.  On success the revision is bumped by one.
rp_status rp_scene_remove(rp_scene *sc, const char *const *ids, size_t n,
                          const uint64_t *if_revision, size_t *removed,
                          uint64_t *actual_revision);

/* ---- queries ----------------------------------------------------------- */

/// A (query shape, scene shape) pair and its signed distance.
typedef struct rp_pair {
    size_t query;    ///< Index into rp_query.shapes.
    size_t shape;    ///< Storage index in the scene.
    double distance; ///< Signed distance, metres.
} rp_pair;

/// What to compute.
typedef struct rp_query {
    const rp_shape *shapes; ///< Query shapes (world coordinates), n_shapes of them.
    size_t n_shapes;
    const size_t *subset;   ///< Storage indices to consider, or NULL for every shape.
    size_t n_subset;
    bool collect;           ///< Collect pairs whose distance < threshold (strictly).
    double threshold;       ///< Used when collect is true.
    bool first_only;        ///< Stop at the first collected pair.
} rp_query;

/// Result of rp_scene_query.  Release with rp_query_result_free.
typedef struct rp_query_result {
    bool has_min;           ///< False when no pair was considered (empty scene/subset).
    rp_pair nearest;        ///< The closest pair (valid when has_min).  Ties: lowest
                            ///< query index, then smallest shape id (strcmp).
    rp_pair *pairs;         ///< Collected pairs, ascending by distance, ties as above.
    size_t n_pairs;
    size_t cap_pairs;
} rp_query_result;

/// Runs a query.  Without first_only, `nearest` is the global minimum over
/// every (query, shape) pair considered; with first_only the scan stops at
/// the first collected pair and `nearest` covers only what was scanned.
/// RP_ERR_NOMEM when pairs cannot be stored (result then empty).
rp_status rp_scene_query(const rp_scene *sc, const rp_query *q, rp_query_result *out);

/// Frees the pairs of a result; safe on a zeroed or already freed result.
void rp_query_result_free(rp_query_result *r);

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_SCENE_H */
