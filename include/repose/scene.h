/* SPDX-License-Identifier: MIT */
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

/// Default for rp_store_limits.max_halfspaces_per_scene, and the most it
/// may be: every query tests each half-space of a scene (they are
/// unbounded, so the scene's tree cannot hold them).
#define RP_DEFAULT_MAX_HALFSPACES_PER_SCENE 64u
#define RP_MAX_HALFSPACES_PER_SCENE 1024u

/// Limits a store enforces.  Zero means "use the default".
typedef struct rp_store_limits {
    size_t max_shapes_per_scene; ///< A put that would exceed it fails with RP_ERR_LIMIT.
    /// Half-spaces in one scene; a put that would exceed it fails with
    /// RP_ERR_HALFSPACES.  Above RP_MAX_HALFSPACES_PER_SCENE counts as that.
    size_t max_halfspaces_per_scene;
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

/// Sets the store revision: the next mutation takes revision + 1.  For
/// loading a saved store (a scene or model created next takes the revision
/// it had); going below a revision the store already holds breaks the rule
/// that revisions only rise.
RP_API void rp_store_set_revision(rp_store *st, uint64_t revision);

/// Changes the store's limits (0 in a field: its default).  They apply to
/// later mutations; what the store holds stays.
RP_API void rp_store_set_limits(rp_store *st, const rp_store_limits *limits);

/// Frees a store, its scenes and their shapes.  rp_store_free(NULL) is a no-op.
RP_API void rp_store_free(rp_store *st);

/// The limits in force (defaults filled in).
RP_API rp_store_limits rp_store_get_limits(const rp_store *st);

/// Finds a scene by name; NULL when there is none.  The pointer stays valid
/// until the scene is deleted or the store freed.
RP_API rp_scene *rp_store_find(const rp_store *st, const char *name);

/// Revisions are store-wide: every committed mutation (scene created, put,
/// removed, replaced or deleted; model put or deleted) takes the next
/// number, and a scene's or model's revision is the number of its last
/// change.  They never go back or repeat, also across delete + create.  A
/// failed mutation takes none.

/// Creates a scene holding `shapes` (n may be 0) at the next revision.  Returns
/// RP_ERR_EXISTS when the name is taken, RP_ERR_LIMIT when n exceeds the
/// per-scene limit, RP_ERR_NOMEM; on error nothing changes.  *out (may be
/// NULL) receives the scene.  Later duplicates of an id in `shapes` win.
RP_API rp_status rp_store_create(rp_store *st, const char *name, const rp_shape_put *shapes,
                                 size_t n, rp_scene **out);

/// Deletes a scene and everything in it (taking a revision: see
/// rp_store_revision).  RP_ERR_NOT_FOUND when missing.
RP_API rp_status rp_store_delete(rp_store *st, const char *name);

/// Puts shapes into scene `name`, creating it when `create` is true and it
/// does not exist (an `if_revision` of 0 then means "must not exist yet").
/// See rp_scene_put for the rest.
RP_API rp_status rp_store_put(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                              const uint64_t *if_revision, bool create, rp_scene **out,
                              uint64_t *actual_revision);

/// Replaces the whole content of scene `name` with `shapes`, all or nothing
/// (later duplicates of an id win).  `if_revision` and `create` as for
/// rp_store_put.  The scene object changes: pointers to the old one are
/// invalid afterwards; *out (may be NULL) receives the new one.
/// RP_ERR_NOT_FOUND, RP_ERR_REVISION, RP_ERR_LIMIT, RP_ERR_NOMEM; on error
/// nothing changes.
RP_API rp_status rp_store_replace(rp_store *st, const char *name, const rp_shape_put *shapes,
                                  size_t n, const uint64_t *if_revision, bool create,
                                  rp_scene **out, uint64_t *actual_revision);

/// Removes the shapes with the given ids from scene `name` (see
/// rp_scene_remove); an id that names an object removes the object and its
/// shapes; *removed counts both (an object once).  RP_ERR_NOT_FOUND when
/// the scene is missing.  *out (may be NULL) receives the scene as it is
/// now.
RP_API rp_status rp_store_remove(rp_store *st, const char *name, const char *const *ids, size_t n,
                                 const uint64_t *if_revision, rp_scene **out, size_t *removed,
                                 uint64_t *actual_revision);

/* ---- objects: rigid groups of shapes with a pose --------------------------- */

/// An object of a scene: shapes in the object's own frame and the pose of
/// that frame in the world.  Its shapes are scene shapes like the others,
/// with ids "name/id" and world shapes rp_transform_shape(pose, local);
/// queries see them, and may leave a whole object out (`ignore`).  Names
/// share one namespace with the scene's own shape ids: an object's name is
/// no shape id of the scene, and a shape id of the scene's own never starts
/// with an object's name and '/'.
typedef struct rp_object rp_object;

/// An object to store (replacing a stored one of that name whole).
typedef struct rp_object_put {
    const char *name;           ///< 1 or more characters, no '/'.
    rp_transform pose;          ///< Must pass rp_transform_validate.
    const rp_shape_put *shapes; ///< In the object's frame, each id once.
    size_t n_shapes;
} rp_object_put;

/// A new pose for an object.
typedef struct rp_object_move {
    const char *name;
    rp_transform pose;
} rp_object_move;

/// Which argument an object mutation refused, for RP_ERR_EXISTS (a name
/// clash), RP_ERR_NOT_FOUND (no such object), RP_ERR_INVALID_ARG (a bad
/// name, a duplicate) and the shape statuses (a world shape out of range).
typedef enum rp_edit_what {
    RP_EDIT_NONE,
    RP_EDIT_SHAPE,      ///< shapes[index] (of the scene's own)
    RP_EDIT_OBJECT,     ///< objects[index]; `shape` is its shape, or SIZE_MAX
    RP_EDIT_MOVE,       ///< moves[index] (objects)
    RP_EDIT_ROBOT,      ///< robots[index]; `shape` is its model's shape, or SIZE_MAX
    RP_EDIT_ROBOT_MOVE, ///< robot moves[index]; `shape` as for RP_EDIT_ROBOT
    RP_EDIT_CLOUD       ///< clouds[index]
} rp_edit_what;
typedef struct rp_edit_error {
    rp_edit_what what;
    size_t index;
    size_t shape;
} rp_edit_error;

/// rp_store_put with objects: writes `shapes` (the scene's own) and
/// `objects` (each replacing the object of its name whole: shapes it no
/// longer has go) in one mutation, one revision, all or nothing.  Besides
/// rp_store_put's errors: RP_ERR_EXISTS for a name clash (an object named
/// like a shape id of the scene's own, or one of whose "name/id" ids is
/// one; a shape id of the scene's own that an object owns), RP_ERR_INVALID_ARG
/// for a bad or repeated name or a repeated shape id within an object,
/// RP_ERR_TRANSFORM for a bad pose, the shape statuses for a world shape
/// the pose moves out of range; *err (may be NULL) says which argument.
RP_API rp_status rp_store_put_objects(rp_store *st, const char *name, const rp_shape_put *shapes,
                                      size_t n, const rp_object_put *objects, size_t n_objects,
                                      const uint64_t *if_revision, bool create, rp_scene **out,
                                      uint64_t *actual_revision, rp_edit_error *err);

/// rp_store_replace with objects: the scene's whole content becomes
/// `shapes` and `objects` (objects not listed go).
RP_API rp_status rp_store_replace_objects(rp_store *st, const char *name,
                                          const rp_shape_put *shapes, size_t n,
                                          const rp_object_put *objects, size_t n_objects,
                                          const uint64_t *if_revision, bool create, rp_scene **out,
                                          uint64_t *actual_revision, rp_edit_error *err);

/// Moves objects to new poses in one mutation (one revision): each
/// object's shapes are written at their new world places, so its cost
/// grows with the shapes moved, not with the scene.  RP_ERR_NOT_FOUND for
/// a missing scene or object (*err names it), RP_ERR_INVALID_ARG for an
/// object named twice, RP_ERR_TRANSFORM, the shape statuses, RP_ERR_REVISION,
/// RP_ERR_NOMEM.
RP_API rp_status rp_store_move(rp_store *st, const char *name, const rp_object_move *moves,
                               size_t n, const uint64_t *if_revision, rp_scene **out,
                               uint64_t *actual_revision, rp_edit_error *err);

/* ---- robots in scenes --------------------------------------------------------- */

typedef struct rp_model rp_model;

/// A robot instance: a kinematic model placed in a scene at a joint
/// vector and a base pose.  It is an object (rp_object_is_robot) whose
/// shapes are the model's link shapes where forward kinematics puts them
/// (ids "name/" + the model's shape id), updated by rp_store_move_cell.
/// Queries see them like other shapes, and `ignore` leaves a robot out (a
/// robot process checks its own motions that way).  A model used by an
/// instance can be neither replaced nor deleted (RP_ERR_IN_USE) until the
/// instance is removed.
typedef struct rp_robot_put {
    const char *name;     ///< As an object's name.
    const char *model;    ///< A kinematic model of the store.
    const double *joints; ///< rp_model_dof values (NULL: the model's defaults).
    rp_transform base;    ///< The model's base in the world.
} rp_robot_put;

/// New joints and/or base for a robot instance.
typedef struct rp_robot_move {
    const char *name;
    const double *joints;     ///< rp_model_dof values, or NULL: as they are.
    const rp_transform *base; ///< Or NULL: as it is.
} rp_robot_move;

/* ---- point clouds --------------------------------------------------------------- */

/// A point cloud: spheres of one radius, one per point or per occupied
/// voxel, stored compactly (single-precision centres and a tree of their
/// own, about 57 bytes a sphere) and queried like every other scene shape.
/// Immutable and reference-counted: build it (on any thread) with
/// rp_cloud_new, put it into a scene with rp_store_put_cell (the scene
/// takes a reference), release yours with rp_cloud_release.
typedef struct rp_cloud rp_cloud;

/// Most points one cloud may be built from (2^28).
#define RP_CLOUD_MAX_POINTS (1u << 28)
/// Most voxels a voxelised cloud may span along one axis (2^21): its voxel
/// coordinates make one 63-bit Morton key.
#define RP_CLOUD_MAX_VOXELS (1u << 21)

/// Builds a cloud of n points (xyz[3k..3k+2], finite) with spheres of
/// `radius` (finite, >= 0).  voxel 0 keeps one sphere per point; voxel > 0
/// (finite) keeps one per occupied cell of the grid of that size anchored
/// at the origin (cell floor(p / voxel)), at the centroid of the cell's
/// points (summed in doubles in input order, rounded to float).  Sphere k
/// of the result is the k-th in a spatial (Morton) order of the cells or
/// points, ties kept in input order: deterministic for the same input.
/// RP_ERR_NONFINITE (*bad: the point), RP_ERR_RADIUS_NONFINITE,
/// RP_ERR_RADIUS_NEGATIVE, RP_ERR_INVALID_ARG (a voxel that is negative or
/// not finite; *bad SIZE_MAX), RP_ERR_LIMIT (more than RP_CLOUD_MAX_POINTS
/// points, or a voxelised cloud spanning more than RP_CLOUD_MAX_VOXELS
/// voxels along an axis), RP_ERR_NOMEM.  bad may be NULL.
RP_API rp_status rp_cloud_new(const float *xyz, size_t n, double radius, double voxel,
                              rp_cloud **out, size_t *bad);
/// Drops a reference (NULL: no-op).
RP_API void rp_cloud_release(rp_cloud *c);
/// Spheres, their radius, the voxel it was built with (0: none), the points
/// it was built from, and the centres (3 floats a sphere, in sphere order).
RP_API size_t rp_cloud_size(const rp_cloud *c);
RP_API double rp_cloud_radius(const rp_cloud *c);
RP_API double rp_cloud_voxel(const rp_cloud *c);
RP_API size_t rp_cloud_input_points(const rp_cloud *c);
RP_API const float *rp_cloud_centres(const rp_cloud *c);
/// Heap bytes the cloud holds (centres and tree).
RP_API size_t rp_cloud_bytes(const rp_cloud *c);

/// A cloud to store under a name (replacing any cloud of that name whole).
/// Clouds are objects of their scene (rp_object_cloud): names share the
/// objects' namespace, `ignore` and rp_store_remove take them by name;
/// they cannot be moved or attached.
typedef struct rp_cloud_put {
    const char *name;
    rp_cloud *cloud;
} rp_cloud_put;

/// What a put or replace writes: shapes of the scene's own, objects,
/// robot instances and clouds, in one mutation.
typedef struct rp_cell {
    const rp_shape_put *shapes;
    size_t n_shapes;
    const rp_object_put *objects;
    size_t n_objects;
    const rp_robot_put *robots;
    size_t n_robots;
    const rp_cloud_put *clouds;
    size_t n_clouds;
} rp_cell;

/// What a move changes: object poses and robot states, in one mutation.
typedef struct rp_cell_moves {
    const rp_object_move *objects;
    size_t n_objects;
    const rp_robot_move *robots;
    size_t n_robots;
} rp_cell_moves;

/// rp_store_put_objects with robot instances too.  Besides its errors:
/// RP_ERR_NOT_FOUND for a model the store lacks, RP_ERR_INVALID_ARG for a
/// model that is not kinematic (it has no joints to place it by) or a name
/// given twice among objects and robots, RP_ERR_NONFINITE for a joint value
/// or a link shape out of range; *err says which (RP_EDIT_ROBOT).
RP_API rp_status rp_store_put_cell(rp_store *st, const char *name, const rp_cell *c,
                                   const uint64_t *if_revision, bool create, rp_scene **out,
                                   uint64_t *actual_revision, rp_edit_error *err);
/// rp_store_replace_objects with robot instances too.
RP_API rp_status rp_store_replace_cell(rp_store *st, const char *name, const rp_cell *c,
                                       const uint64_t *if_revision, bool create, rp_scene **out,
                                       uint64_t *actual_revision, rp_edit_error *err);
/// rp_store_move with robot instances too: one mutation, one revision.  A
/// robot named among the objects' moves, or an object among the robots',
/// is RP_ERR_INVALID_ARG.
RP_API rp_status rp_store_move_cell(rp_store *st, const char *name, const rp_cell_moves *m,
                                    const uint64_t *if_revision, rp_scene **out,
                                    uint64_t *actual_revision, rp_edit_error *err);

/* ---- attached objects --------------------------------------------------------- */

/// Fixes object `object` to link `link` (a link name of its model) of robot
/// instance `robot`: from then on it moves with that link (rp_store_move_cell
/// of the robot moves it too), keeping `rel`, its pose in the link's frame
/// (NULL: where it is now).  Its pose becomes link pose ∘ rel exactly
/// (within rounding of where it was, for rel NULL).  One mutation.  An
/// object moved while attached stays attached at its new place; an object
/// whose robot is removed or put again is detached where it is.
/// RP_ERR_NOT_FOUND (scene, object, robot or link; *err says which:
/// RP_EDIT_OBJECT for the object, RP_EDIT_ROBOT for the robot or link),
/// RP_ERR_INVALID_ARG for a robot given as the object or an object as the
/// robot, RP_ERR_TRANSFORM for a bad rel, the shape statuses, RP_ERR_REVISION.
RP_API rp_status rp_store_attach(rp_store *st, const char *scene, const char *object,
                                 const char *robot, const char *link, const rp_transform *rel,
                                 const uint64_t *if_revision, rp_scene **out,
                                 uint64_t *actual_revision, rp_edit_error *err);
/// Frees an attached object where it is (one mutation).  RP_ERR_NOT_FOUND
/// for a missing scene or object, RP_ERR_INVALID_ARG for one not attached.
RP_API rp_status rp_store_detach(rp_store *st, const char *scene, const char *object,
                                 const uint64_t *if_revision, rp_scene **out,
                                 uint64_t *actual_revision);
/// The robot instance an object is attached to (NULL: none), the link's
/// name and the object's pose in the link's frame.
RP_API const char *rp_object_attached_robot(const rp_object *o);
RP_API const char *rp_object_attached_link(const rp_scene *sc, const rp_object *o);
RP_API rp_transform rp_object_attached_rel(const rp_object *o);

/// Whether the object is a robot instance; its model (NULL for an object
/// of shapes) and joint vector (rp_model_dof values).  Its base is
/// rp_object_pose, its shapes (rp_object_shape_at) the model's in their
/// links' frames.
RP_API bool rp_object_is_robot(const rp_object *o);
/// The cloud of an object that is a point cloud (it has no shapes of its
/// own then), else NULL.
RP_API const rp_cloud *rp_object_cloud(const rp_object *o);

/// Scene storage indices go on past the scene's own shapes
/// (rp_scene_shape_count) to the spheres of its clouds: results may name
/// them, and rp_scene_shape_at gives their shapes.  For such an index this
/// returns the sphere's position in its cloud and sets *cloud (may be
/// NULL) to the cloud's object; rp_scene_id_at gives the cloud's name (the
/// protocol names the sphere "cloud/k").  SIZE_MAX for an index of the
/// scene's own shapes.
RP_API size_t rp_scene_cloud_member(const rp_scene *sc, size_t index, const rp_object **cloud);
/// Writes the id of storage index `index` into buf (cap bytes, always
/// terminated when cap > 0, cut when short): a shape's id, or "name/k" for
/// sphere k of cloud `name`.  Returns the id's whole length (snprintf's
/// rule: a result >= cap means it was cut).
RP_API size_t rp_scene_id_format(const rp_scene *sc, size_t index, char *buf, size_t cap);

/// The spheres of all the scene's clouds (their storage indices follow the
/// rp_scene_shape_count shapes of its own and of its objects).
RP_API size_t rp_scene_cloud_spheres(const rp_scene *sc);
RP_API const rp_model *rp_object_model(const rp_object *o);
RP_API const double *rp_object_joints(const rp_object *o);

/// Whether a robot instance uses model `model`; *scene and *robot (may be
/// NULL) name the first one found.
RP_API bool rp_store_model_user(const rp_store *st, const char *model, const char **scene,
                                const char **robot);

/// The scene's objects, sorted by name.
RP_API size_t rp_scene_object_count(const rp_scene *sc);
RP_API const rp_object *rp_scene_object_at(const rp_scene *sc, size_t i);
/// The object of that name, or NULL.
RP_API const rp_object *rp_scene_object_find(const rp_scene *sc, const char *name);
/// The object a scene shape belongs to (NULL: one of the scene's own).
RP_API const rp_object *rp_scene_shape_object(const rp_scene *sc, size_t index);
RP_API const char *rp_object_name(const rp_object *o);
RP_API rp_transform rp_object_pose(const rp_object *o);
/// Its shapes in its own frame, sorted by (local) id.
RP_API size_t rp_object_shape_count(const rp_object *o);
RP_API const rp_shape_put *rp_object_shape_at(const rp_object *o, size_t i);

/// A read-only snapshot of the store: every scene and model as they are now.
/// It shares them with the store, so it costs O(scenes + models); a later
/// mutation through the store (rp_store_put, rp_store_remove,
/// rp_store_replace, rp_store_delete, rp_store_model_put/_delete) leaves
/// what the snapshot holds unchanged (a shared scene is copied first).  Use
/// it only to find and read scenes and models, query and check; free it
/// with rp_store_free, before the store itself.  Snapshots are taken and
/// freed on the thread that mutates the store; any thread may read them
/// meanwhile.  Do not call rp_scene_put / rp_scene_remove on a scene a
/// snapshot holds (go through the store).  NULL when out of memory.
RP_API rp_store *rp_store_snapshot(const rp_store *st);

/// What a committed mutation changes: the record a commit hook receives.
typedef enum rp_change_kind {
    RP_CHANGE_SCENE_PUT,     ///< shapes written into scene `name` (created by this
                             ///< change when `created`: rp_store_create, or a put
                             ///< with create)
    RP_CHANGE_SCENE_REPLACE, ///< the whole content of `name` becomes `shapes`
                             ///< (created when `created`)
    RP_CHANGE_SCENE_REMOVE,  ///< the ids `ids` leave `name` (ids it lacks: ignored;
                             ///< an object's name: the object goes)
    RP_CHANGE_SCENE_DELETE,  ///< scene `name` and everything in it go
    RP_CHANGE_MODEL_PUT,     ///< model `name` is created or replaced by `model`
    RP_CHANGE_MODEL_DELETE,  ///< model `name` goes
    RP_CHANGE_SCENE_MOVE,    ///< the objects `moves` of scene `name` take new poses
    RP_CHANGE_SCENE_ATTACH,  ///< `object` is fixed to `link` of `robot` at `rel`
                             ///< (moves[0]: its pose then)
    RP_CHANGE_SCENE_DETACH   ///< `object` is freed where it is
} rp_change_kind;

/// A typed change record.  Everything it points at is valid only during
/// the hook call.
typedef struct rp_change {
    rp_change_kind kind;
    uint64_t revision;          ///< The store revision the change takes.
    const char *name;           ///< The scene or model.
    bool created;               ///< SCENE_PUT/REPLACE: the scene did not exist.
    const rp_shape_put *shapes; ///< SCENE_PUT/REPLACE: as given to the store (an
    size_t n_shapes;            ///< id given twice: the later one wins).
    const char *const *ids;     ///< SCENE_REMOVE: as given.
    size_t n_ids;
    const rp_object_put *objects; ///< SCENE_PUT/REPLACE: objects written (each
    size_t n_objects;             ///< replacing its namesake whole).
    const rp_object_move *moves;  ///< SCENE_MOVE: the new poses.
    size_t n_moves;
    const rp_robot_put *robots; ///< SCENE_PUT/REPLACE: robot instances written.
    size_t n_robots;
    const rp_cloud_put *clouds;       ///< SCENE_PUT/REPLACE: clouds written (each replacing
    size_t n_clouds;                  ///< its namesake whole).
    const rp_robot_move *robot_moves; ///< SCENE_MOVE: robot instances moved.
    size_t n_robot_moves;
    const rp_object_move *follow;     ///< SCENE_MOVE: the attached objects that moved
    size_t n_follow;                  ///< with their robots (their new poses).
    const char *const *detached;      ///< SCENE_PUT/REMOVE: objects freed because their
    size_t n_detached;                ///< robot went or was put again.
    const char *object;               ///< SCENE_ATTACH/DETACH: the object;
    const char *robot, *link;         ///< ATTACH: the robot instance and link,
    const rp_transform *rel;          ///< and the object's pose in the link's frame.
    const rp_scene *before;           ///< SCENE_*: the scene as it still is (NULL when
                                      ///< created); e.g. the ids a replace drops.
    const struct rp_model_def *model; ///< MODEL_PUT: the definition, as the model
                                      ///< will keep it (rp_model_definition).
} rp_change;

/// A commit hook: every mutation (scene create, put, replace, remove and
/// delete; model put and delete) calls it once it has checked everything
/// and allocated what it needs, just before it changes anything, with the
/// change it is about to make (change->revision is the store revision it
/// will take).  A nonzero return aborts the mutation with RP_ERR_ABORTED,
/// and nothing changes; after a zero return the change is made (nothing
/// after the hook can fail).  The daemon's journal writes its record here,
/// so a record that cannot be written leaves no change to undo, and every
/// mutation, whatever method made it, goes through this one point
/// (docs/ARCHITECTURE.md, The way of a mutation).  NULL fn removes the
/// hook; snapshots have none.
typedef int (*rp_store_commit_fn)(void *ctx, const rp_change *change);
RP_API void rp_store_set_commit_hook(rp_store *st, rp_store_commit_fn fn, void *ctx);

/// Puts the store back as it was when `snapshot` (taken from st) was
/// taken, and frees the snapshot: every scene and model, the store revision
/// and the shape count come back; what mutations made since is dropped.  An
/// undo for a mutation that must not stand (the daemon's journal write
/// failed).  It allocates nothing, so it cannot fail on a snapshot of st;
/// RP_ERR_INVALID_ARG (and nothing freed) when snapshot is not one.
RP_API rp_status rp_store_restore(rp_store *st, rp_store *snapshot);

/// Tree rebuilds off the mutating thread.  Every mutation keeps a scene's
/// tree up to date in O(log n); once its quality has degraded (its summed
/// node area doubled since the last build, checked every count/4 + 64
/// changes) it is rebuilt from scratch, O(n log n): about 100 ms at 100k
/// shapes.  By default the mutation that notices does it.  A store with
/// deferred rebuilds (rp_store_defer_rebuilds) only marks the scene, and
/// its owner hands the work to another thread:
///
///     rp_rebuild *rb = rp_store_rebuild_take(st); // owner thread; NULL: none wanted
///     rp_rebuild_run(rb);                         // any thread, without locks
///     rp_store_rebuild_finish(st, rb);            // owner thread; frees rb
///
/// rp_rebuild_run reads only the scene version taken (which nobody writes:
/// the take holds it as a snapshot does).  The finish installs the new tree
/// when the scene is still that version, which changes no result and takes
/// no revision; when a mutation came in between it drops the tree and the
/// scene stays marked, to be taken again.  After three such misses in a row
/// the finish rebuilds in place when the scene holds at most
/// RP_REBUILD_IN_PLACE_MAX shapes (about 50 ms), so a small scene that
/// changes faster than it can be rebuilt still gets its rebuild; a larger
/// one is only ever rebuilt on the side, once its changes pause, and keeps
/// its incrementally updated tree meanwhile.  Queries are exact whatever
/// the tree's quality.  The store must outlive every rp_rebuild taken from
/// it.
#define RP_REBUILD_IN_PLACE_MAX 50000u
typedef struct rp_rebuild rp_rebuild;
RP_API void rp_store_defer_rebuilds(rp_store *st, bool defer);

/// Bulk loading (the daemon's journal replay): while on, mutations leave
/// the scenes' trees alone and mark them; turning it off rebuilds each
/// marked tree once.  A replay of many puts then costs one O(n log n)
/// build per scene instead of a tree update per shape.  Queries and
/// snapshots must wait until it is off.  Turning it off returns
/// RP_ERR_NOMEM when a rebuild cannot get memory (the store must then not
/// be queried; calling it again retries).
RP_API rp_status rp_store_bulk_load(rp_store *st, bool on);
RP_API rp_rebuild *rp_store_rebuild_take(rp_store *st);
RP_API void rp_rebuild_run(rp_rebuild *rb);
/// True when the new tree was installed (or, after the third miss, the
/// scene rebuilt in place); false when it was dropped.  Frees rb.
RP_API bool rp_store_rebuild_finish(rp_store *st, rp_rebuild *rb);

/// The last revision any mutation took (0 for a new store).
RP_API uint64_t rp_store_revision(const rp_store *st);

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
/// The shape at a storage index, by value (boxes and half-spaces are stored
/// apart from spheres and capsules, so there is no rp_shape to point at).
RP_API rp_shape rp_scene_shape_at(const rp_scene *sc, size_t index);

/// Fills order[0..count-1] with the storage indices sorted by id (strcmp).
/// Returns RP_ERR_NOMEM on allocation failure (order is caller-owned).
RP_API rp_status rp_scene_sorted(const rp_scene *sc, size_t *order);

/// Inserts or replaces shapes by id, all or nothing.  When `if_revision` is
/// non-NULL and differs from the revision, fails with RP_ERR_REVISION and
/// sets *actual_revision (may be NULL).  RP_ERR_LIMIT when the scene would
/// exceed max_shapes_per_scene; RP_ERR_NOMEM.  On success the scene takes
/// the next store-wide revision (also for n == 0).
RP_API rp_status rp_scene_put(rp_scene *sc, const rp_shape_put *shapes, size_t n,
                              const uint64_t *if_revision, uint64_t *actual_revision);

/// Removes the shapes with the given ids; ids not in the scene are ignored.
/// *removed (may be NULL) gets the number removed.  `if_revision` as for
/// put.  On success the scene takes the next store-wide revision.
RP_API rp_status rp_scene_remove(rp_scene *sc, const char *const *ids, size_t n,
                                 const uint64_t *if_revision, size_t *removed,
                                 uint64_t *actual_revision);

/// Kept for compatibility: returns RP_OK.  The scene's bounding-volume
/// hierarchy is kept up to date by the mutations themselves, so queries
/// never write to a scene (several threads may query one scene as long as
/// none mutates it).
RP_API rp_status rp_scene_prepare(rp_scene *sc);

/// Bytes held by the scene's bounding-volume hierarchy (its node array).
RP_API size_t rp_scene_index_bytes(const rp_scene *sc);

/* ---- work budgets -------------------------------------------------------- */

/// A work budget for queries, checks and motions whose tree walks cannot be
/// bounded before they run (how far a walk descends depends on where the
/// shapes are).  Pass the same meter to several calls to give them one
/// budget together.  Each call adds the units its walks spend to `spent`:
/// one per tree node visited and one per pair distance evaluated (about
/// 20 ns of a 2-core machine's time each).  With a nonzero `limit`, a call
/// whose walks reach limit - spent stops them at once and fails with
/// RP_ERR_WORK; at most one scene shape's tests against every query shape
/// (64 pair tests for a robot's lanes) pass the limit.
/// A meter is used by one thread at a time.
typedef struct rp_work {
    uint64_t limit; ///< Most units all calls on this meter may spend (0: no limit).
    uint64_t spent; ///< Units spent so far; the caller sets it (usually to 0).
} rp_work;

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
    const size_t *subset; ///< Storage indices to consider, or NULL for every shape.
    size_t n_subset;
    bool collect;              ///< Collect pairs whose distance < threshold (strictly).
    double threshold;          ///< Used when collect is true.
    bool first_only;           ///< Stop at the first collected pair.
    bool no_nearest;           ///< Skip the nearest-pair search (only pairs are wanted).
    size_t max_pairs;          ///< With collect: most pairs to collect (0: no limit); when
                               ///< more qualify the query stops and fails with RP_ERR_LIMIT,
                               ///< so that its memory and time stay bounded.
    rp_work *work;             ///< Budget of the tree walks (NULL: none); see rp_work.
    const char *const *ignore; ///< Objects of the scene whose shapes the query
    size_t n_ignore;           ///< leaves out (at most 64; RP_ERR_NOT_FOUND for a
                               ///< name that is no object of the scene).
} rp_query;

/// Result of rp_scene_query.  Release with rp_query_result_free.
typedef struct rp_query_result {
    bool has_min;    ///< False when no pair was considered (empty scene/subset)
                     ///< or the nearest search was skipped.
    rp_pair nearest; ///< The closest pair (valid when has_min).  Ties: lowest
                     ///< query index, then smallest shape id (strcmp).
    rp_pair *pairs;  ///< Collected pairs, ascending by distance, ties as above.
    size_t n_pairs;
    size_t cap_pairs;
} rp_query_result;

/// Runs a query: the nearest (query, shape) pair over the scene or the
/// subset, and with `collect` every pair closer than the threshold.  With
/// first_only the search stops at the first pair it finds below the
/// threshold, which is then also reported as `nearest`.  Uses the scene's
/// bounding-volume hierarchy; results equal a brute-force scan.  RP_ERR_NOMEM;
/// RP_ERR_LIMIT when more than max_pairs pairs qualify; RP_ERR_WORK when
/// the walks spend q->work's limit (no result is kept).
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

/// Joint types of a kinematic model (as URDF defines them).
typedef enum rp_joint_type {
    RP_JOINT_FIXED,      ///< No motion: child rigidly attached to parent.
    RP_JOINT_REVOLUTE,   ///< Rotation about `axis`, radians, usually with limits.
    RP_JOINT_CONTINUOUS, ///< Rotation about `axis` without limits.
    RP_JOINT_PRISMATIC   ///< Translation along `axis`, metres.
} rp_joint_type;

/// One joint of a kinematic tree.  The child link's frame is
/// parent frame * origin(xyz, rpy) * motion(axis, value).
typedef struct rp_joint_def {
    const char *name; ///< Unique among the model's joints.
    rp_joint_type type;
    const char *parent; ///< Parent link name.
    const char *child;  ///< Child link name; a link is the child of at most one joint.
    rp_vec3 xyz;        ///< Origin translation, metres.
    rp_vec3 rpy;        ///< Origin rotation: fixed-axis roll (x), pitch (y), yaw (z),
                        ///< R = Rz(yaw) * Ry(pitch) * Rx(roll), as in URDF.
    rp_vec3 axis;       ///< In the joint frame; normalised by the put; non-zero
                        ///< for moving joints, ignored for fixed ones.
    bool has_limits;    ///< Revolute and prismatic joints may have limits.
    double lower, upper;
    const char *mimic; ///< NULL, or the joint this one follows:
    double multiplier; ///<   value = multiplier * value(mimic) + offset.
    double offset;
} rp_joint_def;

/// A link whose mesh collision geometry was covered with spheres (URDF
/// <mesh>, proto/URDF.md "Meshes"): what the cover is, for model.get.
typedef struct rp_mesh_cover {
    const char *link; ///< The link (a name of link_names).
    size_t spheres;   ///< Its shapes "LINK#s0".. that cover the meshes.
    size_t triangles; ///< Triangles of the link's meshes.
    double overshoot; ///< Estimated largest distance from the cover to the meshes, metres.
} rp_mesh_cover;

/// A named set of joints (an SRDF <group>, proto/URDF.md "SRDF"): the
/// joints a check, a motion or a plan with `group` moves.  Names of joints
/// of the tree; the group moves those that are active (neither fixed,
/// mimic nor passive).
typedef struct rp_group_def {
    const char *name;
    const char *const *joints;
    size_t n_joints;
} rp_group_def;

/// A named configuration of a group (an SRDF <group_state>): values of
/// joints of the tree (those of joints that do not move are kept, not
/// applied); the others keep their defaults.
typedef struct rp_state_def {
    const char *name;
    const char *group; ///< A group of the definition.
    const char *const *joints;
    const double *values;
    size_t n_joints;
} rp_state_def;

/// An SRDF <end_effector>: kept and reported.
typedef struct rp_end_effector_def {
    const char *name;
    const char *parent_link;  ///< A link of the tree.
    const char *group;        ///< A group of the definition.
    const char *parent_group; ///< A group of the definition, or NULL.
} rp_end_effector_def;

/// What rp_store_model_put stores.  Two forms:
///
/// Frame-indexed: `links` are shapes on joint frames (rp_link.frame), the
/// caller computes the frames' poses; allowed pairs name link (shape) ids.
///
/// Kinematic (n_joints > 0 or shape_links != NULL): `links` are shapes,
/// shape_links[k] names the link (a body of the tree) that shape k is
/// attached to, and rp_link.frame is ignored.  The links of the tree are
/// `link_names` when given, else every name a joint or a shape mentions.
/// Exactly one link is no joint's child: the root, which moves with the
/// base pose.  Links joined by fixed joints share one frame, and shapes
/// sharing a frame are never checked against each other.  `allowed_pairs`
/// and `allowed_scene` name links, not shapes.  The active joints (the
/// values a joint vector holds) are the moving, non-mimic joints in
/// definition order.
typedef struct rp_model_def {
    const rp_link *links; ///< n_links shapes; ids unique.
    size_t n_links;
    double safety_margin;             ///< Metres, finite and >= 0.
    const char *const *allowed_pairs; ///< 2*n_allowed link ids (kinematic: link names)
    size_t n_allowed;                 ///< that may touch.
    bool self_collision;              ///< Check pairs of shapes on different frames.
    /* Kinematic form. */
    const char *const *shape_links; ///< n_links link names, one per shape, or NULL.
    const char *const *link_names;  ///< n_link_names links of the tree, or NULL.
    size_t n_link_names;
    const rp_joint_def *joints; ///< n_joints joints.
    size_t n_joints;
    const char *const *default_names; ///< n_defaults joint names and their default
    const double *default_values;     ///< positions (others: 0 clamped into the limits).
    size_t n_defaults;
    /* Both forms. */
    const char *const *allowed_scene; ///< 2*n_allowed_scene: (link id or name, scene
    size_t n_allowed_scene;           ///< shape id, or the name of an object or robot
                                      ///< instance: all its shapes) pairs that may touch.
    const rp_mesh_cover *mesh_covers; ///< n_mesh_covers links covered from meshes (kept and
    size_t n_mesh_covers;             ///< reported only; the shapes are in links), or NULL.
    /* Kinematic form: what an SRDF adds. */
    const rp_group_def *groups; ///< n_groups groups, names unique.
    size_t n_groups;
    const rp_state_def *states; ///< n_states named states, (name, group) unique.
    size_t n_states;
    const rp_end_effector_def *end_effectors; ///< n_end_effectors, names unique.
    size_t n_end_effectors;
    const char *const *passive_joints; ///< n_passive joints no group moves.
    size_t n_passive;
} rp_model_def;

/// Why rp_store_model_put refused a definition (with RP_ERR_INVALID_ARG).
typedef enum rp_model_problem {
    RP_MODEL_OK,
    RP_MODEL_DUPLICATE_LINK,      ///< links[index].id repeats an earlier id.
    RP_MODEL_BAD_FRAME,           ///< links[index].frame < -1.
    RP_MODEL_BAD_SHAPE,           ///< links[index].shape fails rp_shape_validate.
    RP_MODEL_BAD_MARGIN,          ///< safety_margin not finite or negative.
    RP_MODEL_UNKNOWN_PAIR_LINK,   ///< allowed pair `index`, element `element`, names no link.
    RP_MODEL_UNKNOWN_SHAPE_LINK,  ///< shape_links[index] names no link of link_names.
    RP_MODEL_DUPLICATE_LINK_NAME, ///< link_names[index] repeats an earlier name.
    RP_MODEL_DUPLICATE_JOINT,     ///< joints[index].name repeats an earlier joint.
    RP_MODEL_UNKNOWN_JOINT_LINK,  ///< joints[index]: parent (element 0) or child (1) is no link.
    RP_MODEL_TWO_PARENTS,         ///< joints[index].child is already another joint's child.
    RP_MODEL_SELF_JOINT,          ///< joints[index] has parent == child.
    RP_MODEL_CYCLE,               ///< joints[index] closes a cycle (no root reaches it).
    RP_MODEL_NO_ROOT,             ///< Every link is some joint's child.
    RP_MODEL_TWO_ROOTS,           ///< link_names[index] is a second link without a parent.
    RP_MODEL_BAD_ORIGIN,          ///< joints[index].xyz or rpy not finite.
    RP_MODEL_BAD_AXIS,            ///< joints[index].axis not finite, or zero on a moving joint.
    RP_MODEL_BAD_LIMITS,          ///< joints[index] limits not finite, or lower > upper.
    RP_MODEL_BAD_TYPE,            ///< joints[index].type unknown.
    RP_MODEL_BAD_MIMIC,           ///< joints[index].mimic names no moving joint, or mimic
                                  ///< chains form a cycle, or multiplier/offset not finite.
    RP_MODEL_UNKNOWN_DEFAULT,     ///< default_names[index] is no active joint.
    RP_MODEL_BAD_DEFAULT,         ///< default_values[index] not finite.
    RP_MODEL_UNKNOWN_SCENE_LINK,  ///< allowed_scene pair `index` names no link.
    RP_MODEL_BAD_GROUP,           ///< groups[index]: joint `element` names no joint of the
                                  ///< tree, or the name repeats an earlier group's.
    RP_MODEL_BAD_STATE,           ///< states[index]: its group is unknown (element SIZE_MAX),
                                  ///< joint `element` is no joint of the tree or its value is
                                  ///< not finite, or (name, group) repeats.
    RP_MODEL_BAD_END_EFFECTOR,    ///< end_effectors[index]: an unknown link or group, or a
                                  ///< repeated name.
    RP_MODEL_BAD_PASSIVE          ///< passive_joints[index] names no joint of the tree.
} rp_model_problem;

/// Where a refused definition went wrong.
typedef struct rp_model_error {
    rp_model_problem problem; ///< RP_MODEL_OK when nothing is wrong.
    size_t index;             ///< Index into the array the problem names.
    size_t element;           ///< 0 or 1 within a pair.
} rp_model_error;

/// Creates or replaces model `name`; it takes the next store-wide revision.
/// RP_ERR_INVALID_ARG with *err filled for a bad definition; RP_ERR_NOMEM;
/// RP_ERR_IN_USE when a robot instance uses the model it would replace
/// (rp_store_model_user).  On error nothing changes.  *out (may be NULL)
/// receives the model.
RP_API rp_status rp_store_model_put(rp_store *st, const char *name, const rp_model_def *def,
                                    rp_model **out, rp_model_error *err);
/// Why rp_store_model_put_urdf refused a document or the model it defines.
typedef struct rp_urdf_problem {
    bool in_srdf;       ///< The problem is in the SRDF document.
    unsigned long line; ///< 1-based line in that document; 0 when unknown.
    char where[256];    ///< The element, e.g. "joint[j3].limit"; "" for the document
                        ///< as a whole, "name" for a bad model name.
    char reason[256];   ///< A sentence, e.g. "joint 'j3' (line 40): axis must be non-zero".
} rp_urdf_problem;

/// Model `name` from a URDF document (urdf_len bytes, not necessarily
/// NUL-terminated) and optionally an SRDF one (srdf NULL: none), as the
/// daemon's model.put with "urdf" and "srdf" makes it (proto/URDF.md says
/// what is read and how): shapes "LINK#k", the SRDF's disabled pairs, and
/// with no SRDF every joint's (parent, child) pair allowed; safety margin 0,
/// self-collision checked.  Then as rp_store_model_put.  RP_ERR_INVALID_ARG
/// for a bad name, a malformed or unsupported document, or a model it
/// refuses, with *err (may be NULL) saying where and why; RP_ERR_NOMEM;
/// RP_ERR_IN_USE.  On error nothing changes.
RP_API rp_status rp_store_model_put_urdf(rp_store *st, const char *name, const char *urdf,
                                         size_t urdf_len, const char *srdf, size_t srdf_len,
                                         rp_model **out, rp_urdf_problem *err);
/// Finds a model; NULL when missing.  Valid until deleted or replaced.
RP_API rp_model *rp_store_model_find(const rp_store *st, const char *name);
/// Deletes a model.  RP_ERR_NOT_FOUND when missing, RP_ERR_IN_USE while a
/// robot instance uses it.
RP_API rp_status rp_store_model_delete(rp_store *st, const char *name);
/// Number of models, and model i in name order.
RP_API size_t rp_store_model_count(const rp_store *st);
RP_API const rp_model *rp_store_model_at(const rp_store *st, size_t i);

/// The definition the model was put with, as the store keeps it (a deep
/// copy owned by the model: valid as long as the model).  Writing it back
/// to rp_store_model_put gives the same model; the daemon's journal and
/// snapshots save models this way.
RP_API const rp_model_def *rp_model_definition(const rp_model *m);
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
/// Allowed (link, scene shape id) pairs, as given: the link id (frame form)
/// or link name (kinematic) and the scene shape id, both owned by the model.
RP_API size_t rp_model_allowed_scene_count(const rp_model *m);
RP_API void rp_model_allowed_scene_at(const rp_model *m, size_t i, const char **link,
                                      const char **scene_id);

/* ---- kinematic models --------------------------------------------------------- */

/// True for a model defined by a kinematic tree (rp_model_def's second form).
RP_API bool rp_model_is_kinematic(const rp_model *m);
/// Active joints: the values of a joint vector, in this order.  0 for a
/// frame-indexed model.
RP_API size_t rp_model_dof(const rp_model *m);
/// Active joint i: name, type, limits (has_limits false: unbounded), and its
/// default position.
RP_API const char *rp_model_dof_name(const rp_model *m, size_t i);
RP_API rp_joint_type rp_model_dof_type(const rp_model *m, size_t i);
RP_API bool rp_model_dof_limits(const rp_model *m, size_t i, double *lower, double *upper);
RP_API double rp_model_dof_default(const rp_model *m, size_t i);
/// Index of the active joint `name`, or SIZE_MAX.
RP_API size_t rp_model_dof_find(const rp_model *m, const char *name);
/// The default joint vector (rp_model_dof(m) values).
RP_API void rp_model_default_joints(const rp_model *m, double *q);
/// Links of the tree (kinematic models), in definition order; the root.
RP_API size_t rp_model_tree_link_count(const rp_model *m);
RP_API const char *rp_model_tree_link_name(const rp_model *m, size_t i);
RP_API size_t rp_model_tree_link_find(const rp_model *m, const char *name);
RP_API size_t rp_model_root(const rp_model *m);
/// The tree link that shape i is attached to (SIZE_MAX in a frame-indexed model).
RP_API size_t rp_model_shape_link(const rp_model *m, size_t i);
/// Shape i as given, in its link's frame (kinematic models; the frame-form
/// shape otherwise).
RP_API void rp_model_shape_local(const rp_model *m, size_t i, rp_shape *out);
/// Allowed link pairs of a kinematic model, as tree link indices.
RP_API size_t rp_model_allowed_link_count(const rp_model *m);
RP_API void rp_model_allowed_link_at(const rp_model *m, size_t i, size_t *a, size_t *b);
/// Every joint as defined (with names owned by the model), for inspection.
RP_API size_t rp_model_joint_count(const rp_model *m);
RP_API const rp_joint_def *rp_model_joint_at(const rp_model *m, size_t i);

/// Forward kinematics: the world pose of every tree link (n =
/// rp_model_tree_link_count) for joint vector q (rp_model_dof values) and
/// base pose `base` (NULL = identity).  Values are used as given (no limit
/// check).  RP_ERR_INVALID_ARG for a frame-indexed model or NULL arrays;
/// RP_ERR_NONFINITE when a value is not finite.
RP_API rp_status rp_model_fk(const rp_model *m, const rp_transform *base, const double *q,
                             rp_transform *link_poses);

/// First active joint whose value lies outside its limits, from `start`;
/// SIZE_MAX when none does.  Continuous joints and joints without limits
/// never do.
RP_API size_t rp_model_limit_violation(const rp_model *m, const double *q, size_t start);

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
    bool has_margin;           ///< Use `margin` instead of the model's safety margin.
    double margin;             ///< Metres; pairs closer than this (strictly) violate it.
    rp_work *work;             ///< Budget of the scene walks (NULL: none); see rp_work.
    const char *const *ignore; ///< Objects of the scene left out, as for rp_query.
    size_t n_ignore;
} rp_check_opts;

/// Result of rp_model_check; release with rp_check_result_free.
typedef struct rp_check_result {
    bool collision;            ///< Some pair is closer than the margin.
    bool has_min;              ///< CLOSEST/ALL: some pair was considered.
    rp_check_pair closest;     ///< CLOSEST/ALL: a pair at the minimum distance.  Ties:
                               ///< lowest link index, scene before self, then smallest
                               ///< shape id (strcmp) or link index.
    rp_check_pair *violations; ///< FIRST: the violation found; ALL: every violation,
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
/// out->closest.link is that link's index; RP_ERR_WORK when the scene walks
/// spend opts->work's limit (no result is kept; a batch then keeps none
/// and sets *failed to 0).
RP_API rp_status rp_model_check(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                                const rp_transform *frames, size_t n_frames,
                                const rp_check_opts *opts, rp_check_result *out);
/// Frees a result's violations; safe on a zeroed or freed result.
RP_API void rp_check_result_free(rp_check_result *r);

/// Checks a kinematic model at joint vector q (rp_model_dof values): forward
/// kinematics, then rp_model_check.  Joint limits are not looked at here
/// (see rp_model_limit_violation).  Same errors as rp_model_check, plus
/// RP_ERR_NONFINITE for a non-finite value (closest.link is then SIZE_MAX).
RP_API rp_status rp_model_check_joints(const rp_model *m, const rp_scene *scene,
                                       const rp_transform *base, const double *q,
                                       const rp_check_opts *opts, rp_check_result *out);

/// rp_model_check_joints for n joint vectors (q: n * rp_model_dof values,
/// vector after vector), results in out[0..n), each equal to what
/// rp_model_check_joints gives for that vector alone.  With report FIRST,
/// several configurations share one walk of the scene.  On an error,
/// *failed (when not NULL) is the vector it concerns, out[*failed] carries
/// what rp_model_check_joints would, and the results before it are valid;
/// the caller frees out[0..*failed) (or all n on success).
RP_API rp_status rp_model_check_joints_batch(const rp_model *m, const rp_scene *scene,
                                             const rp_transform *base, const double *q, size_t n,
                                             const rp_check_opts *opts, rp_check_result *out,
                                             size_t *failed);

/* ---- per-request additions: attached shapes, allowed scene pairs ------------ */

/// A shape attached to a link for one request (a grasped part).
typedef struct rp_attached {
    const char *id;                 ///< Id, unique among the model's shape ids and
                                    ///< the other attached shapes.
    const char *link;               ///< Link name (kinematic) or link id (frame-indexed:
                                    ///< the shape goes on that link's frame).
    rp_shape shape;                 ///< In that link's frame.
    const char *const *touch_links; ///< n_touch more links it may touch.
    size_t n_touch;
} rp_attached;

/// Why rp_model_extend refused (with RP_ERR_INVALID_ARG).
typedef enum rp_extend_problem {
    RP_EXTEND_OK,
    RP_EXTEND_DUPLICATE_ID,      ///< attached[index].id is a shape id already.
    RP_EXTEND_UNKNOWN_LINK,      ///< attached[index].link names no link.
    RP_EXTEND_BAD_SHAPE,         ///< attached[index].shape is invalid.
    RP_EXTEND_UNKNOWN_TOUCH,     ///< attached[index].touch_links[element] names no link.
    RP_EXTEND_UNKNOWN_SCENE_LINK ///< allowed_scene pair `index` names no link.
} rp_extend_problem;

typedef struct rp_extend_error {
    rp_extend_problem problem;
    size_t index, element;
} rp_extend_error;

/// A standalone copy of `m` (not in any store; free with rp_model_free)
/// with the attached shapes appended as shapes n..n+n_attached-1, which
/// checks report like any shape (rp_model_link_count of the result counts
/// them), and with more allowed (link, scene shape id) pairs (a pair may
/// name an attached shape's id as its link; a link's pairs do not extend to
/// shapes attached to it).  An attached shape moves with its link, is
/// checked against the scene and, when the model checks self collisions,
/// against the model's shapes except those of its own link, of links
/// sharing its frame, of links allowed to touch its link, and of its
/// touch_links; two attached shapes are not checked against each other.
/// Any number of threads may extend the same model at once, and free their
/// extensions, while the model lives (the kinematic data they share is
/// reference-counted atomically).
RP_API rp_status rp_model_extend(const rp_model *m, const rp_attached *attached, size_t n_attached,
                                 const char *const *allowed_scene, size_t n_allowed_scene,
                                 rp_model **out, rp_extend_error *err);
/// Frees a model made by rp_model_extend; NULL is a no-op.
RP_API void rp_model_free(rp_model *m);
/// Shapes of the model that rp_model_extend extended (the rest are attached);
/// rp_model_link_count for any other model.
RP_API size_t rp_model_base_link_count(const rp_model *m);

/* ---- work estimates ------------------------------------------------------------ */
/* A daemon prices a request before it runs it (proto/PROTOCOL.md, Limits):
 * these give upper bounds, in elementary steps (a pair test, a name lookup,
 * a bit of a pair table), on what the library will spend.  Each is cheap:
 * at most linear in its inputs, whatever the work it bounds. */

/// Work units of one allowed (link, scene id) pair before its exclusions:
/// decoding and copying its two strings and a lookup, about twelve pair
/// tests (a million pairs: about 220 ms on a 2-core machine).
#define RP_WORK_SCENE_PAIR 12

/// Upper bound on the steps rp_store_model_put spends building `def`
/// (validation, name lookups, allowed scene exclusions, pair tables),
/// saturating at UINT64_MAX.  Linear in the definition's size.
RP_API uint64_t rp_model_def_work(const rp_model_def *def);
/// Upper bound on the steps rp_model_extend(m, attached, n_attached, …,
/// n_allowed_scene, …) spends, saturating at UINT64_MAX.  Linear in
/// n_attached.
RP_API uint64_t rp_model_extend_work(const rp_model *m, const rp_attached *attached,
                                     size_t n_attached, size_t n_allowed_scene);
/// Estimate of the pair tests and lookups one check of one configuration
/// of `m` against a scene of `scene_shapes` shapes needs: each shape
/// against the scene tree (links x ceil(log2(shapes + 1))), self pairs
/// when checked (a capsule-box pair 8 units, box-box 256), and the allowed
/// scene exclusions it loads.  An upper
/// bound for everything but the tree walks, whose cost depends on where
/// the shapes are: those are metered while they run (rp_work).
RP_API uint64_t rp_model_check_work(const rp_model *m, size_t scene_shapes);

/* ---- motions ------------------------------------------------------------------ */

/// How check.motion decides.
typedef enum rp_motion_mode {
    RP_MOTION_DISCRETE, ///< States at most `resolution` apart, coarse to fine.
    RP_MOTION_CERTIFIED ///< Conservative advancement: a proof for every state.
} rp_motion_mode;

typedef struct rp_motion_opts {
    rp_motion_mode mode;
    double resolution;  ///< DISCRETE: largest joint step (max-norm); 0 means 0.01.
    bool resolution_l2; ///< DISCRETE: measure the step by the Euclidean joint distance
                        ///< (OMPL's, VAMP's) instead of the largest joint change.
    double tolerance;   ///< CERTIFIED: see rp_model_check_motion; 0 means 1e-5 m.
    bool has_margin;    ///< Use `margin` instead of the model's safety margin.
    double margin;
    bool ignore_limits;        ///< Do not refuse waypoints outside the joint limits.
    bool earliest;             ///< DISCRETE: report the earliest invalid state along the
                               ///< path, not the first one the coarse-to-fine order finds.
    bool fast_reject;          ///< CERTIFIED: sample the waypoints and segment midpoints
                               ///< first and report a state found there in collision (the
                               ///< same verdict, found sooner) instead of the first contact.
    bool skip_ends;            ///< The first and last waypoints are known valid (a
                               ///< planner's states): neither is checked, limits included.
    uint64_t max_states;       ///< Most configurations to evaluate (0: no limit); beyond
                               ///< it the check stops with RP_ERR_LIMIT.
    rp_work *work;             ///< Budget of the scene walks (NULL: none); see rp_work.
    const char *const *ignore; ///< Objects of the scene left out, as for rp_query.
    size_t n_ignore;
} rp_motion_opts;

typedef struct rp_motion_result {
    bool valid;
    size_t segment;          ///< Invalid: segment index (waypoint k to k+1).
    double t;                ///< Invalid: 0..1 within the segment.
    bool limits;             ///< Invalid because waypoint `segment` (t 0) or
    size_t limit_joint;      ///< segment+1 (t 1) has this active joint out of limits.
    rp_check_pair pair;      ///< Invalid, not by limits: the pair found.
    uint64_t states_checked; ///< Configurations evaluated (certified: FK evaluations).
} rp_motion_result;

/// Upper bound on the configurations rp_model_check_motion(m, …, path,
/// n_points, opts, …) evaluates: for DISCRETE, the waypoints plus every
/// segment's ceil(max |dq| / resolution) - 1 interior states (twice that
/// with `earliest`), computed from the path in O(n_points * dof) without
/// checking anything; for CERTIFIED, which cannot know in advance,
/// opts->max_states (UINT64_MAX when 0).  0 for arguments the check
/// refuses before evaluating any state (a step that is not finite).
RP_API uint64_t rp_motion_states_bound(const rp_model *m, const double *path, size_t n_points,
                                       const rp_motion_opts *opts);

/// Checks the motion through `n_points` waypoints (path: n_points * dof
/// values, row by row), each segment interpolated linearly in joint space:
/// q(t) = q_k + t (q_k+1 - q_k), t in [0, 1] (continuous joints too: no
/// wrapping).  A waypoint out of limits makes the motion invalid unless
/// ignore_limits (states between waypoints inside the limits are inside).
///
/// DISCRETE: the waypoints, then each segment's states k/n (n = ceil(max
/// |dq| / resolution)), coarse to fine (midpoint first, then bisection).
/// CERTIFIED: conservative advancement (see motion.c for the bound and its
/// proof): `valid` means that every configuration on the path, not only
/// samples, keeps every pair clear of the margin by at least tolerance/2.
/// An invalid motion reports the first t at which some pair comes within
/// `tolerance` of the margin, every state before it being proved clear;
/// with fast_reject, a waypoint or segment midpoint found in collision
/// first is reported instead (the verdict is the same).
///
/// first_joints (dof values, may be NULL) receives the invalid state.
/// RP_ERR_INVALID_ARG for bad arguments (n_points < 2, a frame-indexed
/// model, a resolution or tolerance < 0 or not finite), and in CERTIFIED
/// mode for a segment whose motion is too large for the tolerance at double
/// precision (a step of t would round to nothing); RP_ERR_NONFINITE for
/// non-finite path values or states that move a shape (or a joint change)
/// beyond the range of doubles; RP_ERR_LIMIT past max_states; RP_ERR_WORK
/// when the states' scene walks spend opts->work's limit (out then holds
/// only states_checked); RP_ERR_NOMEM.
RP_API rp_status rp_model_check_motion(const rp_model *m, const rp_scene *scene,
                                       const rp_transform *base, const double *path,
                                       size_t n_points, const rp_motion_opts *opts,
                                       rp_motion_result *out, double *first_joints);

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_SCENE_H */
