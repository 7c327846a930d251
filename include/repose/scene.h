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

#include "repose/export.h"
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
RP_API rp_store *rp_store_new(const rp_store_limits *limits);

/// Frees a store, its scenes and their shapes.  rp_store_free(NULL) is a no-op.
RP_API void rp_store_free(rp_store *st);

/// The limits in force (defaults filled in).
RP_API rp_store_limits rp_store_get_limits(const rp_store *st);

/// Finds a scene by name; NULL when there is none.  The pointer stays valid
/// until the scene is deleted or the store freed.
RP_API rp_scene *rp_store_find(const rp_store *st, const char *name);

/// Creates a scene holding `shapes` (n may be 0) at revision 1.  Returns
/// RP_ERR_EXISTS when the name is taken, RP_ERR_LIMIT when n exceeds the
/// per-scene limit, RP_ERR_NOMEM; on error nothing changes.  *out (may be
/// NULL) receives the scene.  Later duplicates of an id in `shapes` win.
RP_API rp_status rp_store_create(rp_store *st, const char *name, const rp_shape_put *shapes,
                                 size_t n, rp_scene **out);

/// Deletes a scene and everything in it.  RP_ERR_NOT_FOUND when missing.
RP_API rp_status rp_store_delete(rp_store *st, const char *name);

/// Puts shapes into scene `name`, creating it when `create` is true and it
/// does not exist (it then starts at revision 1, and an `if_revision` of 0
/// means "must not exist yet").  See rp_scene_put for the rest.
RP_API rp_status rp_store_put(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                              const uint64_t *if_revision, bool create, rp_scene **out,
                              uint64_t *actual_revision);

/// Number of scenes, and scene i in name order (strcmp), 0 <= i < count.
RP_API size_t rp_store_scene_count(const rp_store *st);
RP_API const rp_scene *rp_store_scene_at(const rp_store *st, size_t i);

/// Shapes in all scenes.
RP_API uint64_t rp_store_shape_count(const rp_store *st);

/// Bytes the store holds on the heap (scenes, shapes, ids, indexes), as
/// counted by the store itself.
RP_API size_t rp_store_memory(const rp_store *st);

/* ---- scene ------------------------------------------------------------- */

RP_API const char *rp_scene_name(const rp_scene *sc);
RP_API uint64_t rp_scene_revision(const rp_scene *sc);
RP_API size_t rp_scene_shape_count(const rp_scene *sc);

/// Looks an id up; returns its storage index or SIZE_MAX when absent.
/// Storage indices are dense (0..count-1) and change on every mutation.
RP_API size_t rp_scene_find(const rp_scene *sc, const char *id);
RP_API const char *rp_scene_id_at(const rp_scene *sc, size_t index);
RP_API const rp_shape *rp_scene_shape_at(const rp_scene *sc, size_t index);

/// Fills order[0..count-1] with the storage indices sorted by id (strcmp).
/// Returns RP_ERR_NOMEM on allocation failure (order is caller-owned).
RP_API rp_status rp_scene_sorted(const rp_scene *sc, size_t *order);

/// Inserts or replaces shapes by id, all or nothing.  When `if_revision` is
/// non-NULL and differs from the revision, fails with RP_ERR_REVISION and
/// sets *actual_revision (may be NULL).  RP_ERR_LIMIT when the scene would
/// exceed max_shapes_per_scene; RP_ERR_NOMEM.  On success the revision is
/// bumped by one (also for n == 0).
RP_API rp_status rp_scene_put(rp_scene *sc, const rp_shape_put *shapes, size_t n,
                              const uint64_t *if_revision, uint64_t *actual_revision);

/// Removes the shapes with the given ids; ids not in the scene are ignored.
/// *removed (may be NULL) gets the number removed.  `if_revision` as for
/// put.  On success the revision is bumped by one.
RP_API rp_status rp_scene_remove(rp_scene *sc, const char *const *ids, size_t n,
                                 const uint64_t *if_revision, size_t *removed,
                                 uint64_t *actual_revision);

/// Builds the scene's bounding-volume hierarchy now if a mutation made it
/// stale.  Queries do this themselves on first use (it is the one write a
/// query makes); call it before letting several threads query one scene.
/// Scenes of 16 shapes or fewer have no tree.  RP_ERR_NOMEM.
RP_API rp_status rp_scene_prepare(rp_scene *sc);

/// Bytes of the scene's current tree (nodes and leaf order); 0 without one.
RP_API size_t rp_scene_index_bytes(const rp_scene *sc);

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
    bool no_nearest;        ///< Skip the nearest-pair search (only pairs are wanted).
    size_t max_pairs;       ///< With collect: most pairs to collect (0: no limit); when
                            ///< more qualify the query stops and fails with RP_ERR_LIMIT,
                            ///< so that its memory and time stay bounded.
} rp_query;

/// Result of rp_scene_query.  Release with rp_query_result_free.
typedef struct rp_query_result {
    bool has_min;           ///< False when no pair was considered (empty scene/subset)
                            ///< or the nearest search was skipped.
    rp_pair nearest;        ///< The closest pair (valid when has_min).  Ties: lowest
                            ///< query index, then smallest shape id (strcmp).
    rp_pair *pairs;         ///< Collected pairs, ascending by distance, ties as above.
    size_t n_pairs;
    size_t cap_pairs;
} rp_query_result;

/// Runs a query: the nearest (query, shape) pair over the scene or the
/// subset, and with `collect` every pair closer than the threshold.  With
/// first_only the search stops at the first pair it finds below the
/// threshold, which is then also reported as `nearest`.  Uses the scene's
/// bounding-volume hierarchy (built on first use after a mutation, see
/// rp_scene_prepare); results equal a brute-force scan.  RP_ERR_NOMEM;
/// RP_ERR_LIMIT when more than max_pairs pairs qualify.
RP_API rp_status rp_scene_query(const rp_scene *sc, const rp_query *q, rp_query_result *out);

/// Frees the pairs of a result; safe on a zeroed or already freed result.
RP_API void rp_query_result_free(rp_query_result *r);


/* ---- robot models --------------------------------------------------------- */

typedef struct rp_model rp_model;

/// One link shape of a robot model.
typedef struct rp_link {
    const char *id; ///< Link id (copied by the store).
    int frame;      ///< Joint frame index >= 0, or -1 for the robot base.
    rp_shape shape; ///< Shape in that frame's coordinates, metres.
} rp_link;

/// What rp_store_model_put stores.
typedef struct rp_model_def {
    const rp_link *links;             ///< n_links links; ids unique.
    size_t n_links;
    double safety_margin;             ///< Metres, finite and >= 0.
    const char *const *allowed_pairs; ///< 2*n_allowed link ids: pairs that may touch.
    size_t n_allowed;
    bool self_collision;              ///< Check link-link pairs on different frames.
} rp_model_def;

/// Why rp_store_model_put refused a definition (with RP_ERR_INVALID_ARG).
typedef enum rp_model_problem {
    RP_MODEL_OK,
    RP_MODEL_DUPLICATE_LINK,   ///< links[index].id repeats an earlier id.
    RP_MODEL_BAD_FRAME,        ///< links[index].frame < -1.
    RP_MODEL_BAD_SHAPE,        ///< links[index].shape fails rp_shape_validate.
    RP_MODEL_BAD_MARGIN,       ///< safety_margin not finite or negative.
    RP_MODEL_UNKNOWN_PAIR_LINK ///< allowed pair `index`, element `element`, names no link.
} rp_model_problem;

/// Where a refused definition went wrong.
typedef struct rp_model_error {
    rp_model_problem problem; ///< RP_MODEL_OK when nothing is wrong.
    size_t index;             ///< Link index or allowed-pair index.
    size_t element;           ///< 0 or 1 within an allowed pair.
} rp_model_error;

/// Creates or replaces model `name` (revision 1, then +1 per replacement).
/// RP_ERR_INVALID_ARG with *err filled for a bad definition; RP_ERR_NOMEM.
/// On error nothing changes.  *out (may be NULL) receives the model.
RP_API rp_status rp_store_model_put(rp_store *st, const char *name, const rp_model_def *def,
                                    rp_model **out, rp_model_error *err);
/// Finds a model; NULL when missing.  Valid until deleted or replaced.
RP_API rp_model *rp_store_model_find(const rp_store *st, const char *name);
/// Deletes a model.  RP_ERR_NOT_FOUND when missing.
RP_API rp_status rp_store_model_delete(rp_store *st, const char *name);
/// Number of models, and model i in name order.
RP_API size_t rp_store_model_count(const rp_store *st);
RP_API const rp_model *rp_store_model_at(const rp_store *st, size_t i);

RP_API const char *rp_model_name(const rp_model *m);
RP_API uint64_t rp_model_revision(const rp_model *m);
RP_API size_t rp_model_link_count(const rp_model *m);
/// Link i, in definition order; its id is owned by the model.
RP_API const rp_link *rp_model_link_at(const rp_model *m, size_t i);
RP_API double rp_model_safety_margin(const rp_model *m);
RP_API bool rp_model_self_collision(const rp_model *m);
RP_API size_t rp_model_allowed_count(const rp_model *m);
/// Allowed pair i as two link indices, in definition order.
RP_API void rp_model_allowed_at(const rp_model *m, size_t i, size_t *link_a, size_t *link_b);
/// Number of joint-frame poses a check needs: highest frame index + 1.
RP_API size_t rp_model_frame_count(const rp_model *m);

/* ---- checks ------------------------------------------------------------------ */

/// How much a check reports.
typedef enum rp_report {
    RP_REPORT_FIRST,   ///< collision, and the first violation found (fast path).
    RP_REPORT_CLOSEST, ///< collision, min distance and the closest pair.
    RP_REPORT_ALL      ///< as CLOSEST, plus every violation, ascending.
} rp_report;

/// What a link is paired with.
typedef enum rp_pair_kind {
    RP_PAIR_SCENE, ///< other = scene storage index.
    RP_PAIR_SELF   ///< other = link index in the model.
} rp_pair_kind;

/// A link paired with a scene shape or another link.
typedef struct rp_check_pair {
    size_t link;       ///< Link index in the model.
    rp_pair_kind kind; ///< What `other` indexes.
    size_t other;      ///< Scene storage index or link index.
    double distance;   ///< Signed distance, metres.
} rp_check_pair;

/// Options of a check.
typedef struct rp_check_opts {
    rp_report report;
    bool has_margin; ///< Use `margin` instead of the model's safety margin.
    double margin;   ///< Metres; pairs closer than this (strictly) violate it.
} rp_check_opts;

/// Result of rp_model_check; release with rp_check_result_free.
typedef struct rp_check_result {
    bool collision;             ///< Some pair is closer than the margin.
    bool has_min;               ///< CLOSEST/ALL: some pair was considered.
    rp_check_pair closest;      ///< CLOSEST/ALL: a pair at the minimum distance.  Ties:
                                ///< lowest link index, scene before self, then smallest
                                ///< shape id (strcmp) or link index.
    rp_check_pair *violations;  ///< FIRST: the violation found; ALL: every violation,
                                ///< ascending by distance, ties as above.
    size_t n_violations;
    size_t cap_violations;
} rp_check_result;

/// Checks a model at one configuration.  `frames` holds n_frames world poses
/// of the joint frames, n_frames == rp_model_frame_count(m) (else
/// RP_ERR_INVALID_ARG); `base` is the world pose of the base (NULL =
/// identity); `scene` may be NULL (self-collision only).  Link shapes are
/// moved into the world with rp_link_shape_transform_shape.  A pair counts
/// when it is a link and a scene shape, or (with self_collision) two links on
/// different frames that are not an allowed pair.  Queries the scene's
/// bounding-volume hierarchy, so like rp_scene_query it must not run while
/// the scene is mutated.  RP_ERR_NOMEM; RP_ERR_NONFINITE when a pose moves
/// a link beyond the range of doubles (a coordinate past ±DBL_MAX), and then
/// out->closest.link is that link's index.
RP_API rp_status rp_model_check(const rp_model *m, const rp_scene *scene,
                                const rp_transform *base, const rp_transform *frames,
                                size_t n_frames, const rp_check_opts *opts, rp_check_result *out);
/// Frees a result's violations; safe on a zeroed or freed result.
RP_API void rp_check_result_free(rp_check_result *r);

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_SCENE_H */
