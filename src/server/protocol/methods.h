/* SPDX-License-Identifier: MIT */
/* Handlers of the method table and the parameter helpers they share. */
#ifndef REPOSE_SERVER_METHODS_H
#define REPOSE_SERVER_METHODS_H

#include "req.h"

/* The method table (methods.c), sorted by name, and its size. */
extern const rpd_method rpd_methods[];
extern const size_t rpd_method_count;
/* Finds a method by name (binary search); *index gets its row. */
const rpd_method *rpd_method_find(const char *name, size_t *index);

/* strcmp, inline, for the short names every request carries (its method,
 * its members): a library call per comparison was a measurable share of a
 * ping. */
static inline int rpd_name_cmp(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return (unsigned char)*a - (unsigned char)*b;
}
/* The method nearest to an unknown name, for -32601's data.suggestion
 * (proto/PROTOCOL.md, "Errors"): the first in the table at the least
 * distance (src/util/names.h), when it is near; NULL otherwise. */
const char *rpd_method_suggest(const char *name);

/* Runs one journal record through its method's handler, as a request
 * that was acknowledged once (every limit lifted; the durability layer
 * calls it through rpd_durable_open's apply argument): false with why
 * when `method` is no mutation, the params are no JSON object, or the
 * handler refuses them. */
bool rpd_apply_record(rpd_core *core, const char *method, const char *json, size_t len, char *why,
                      size_t cap);

/* --nats: applies stream message seq (a mutation's method and params as
 * its proposer sent them) as rpd_apply_record does, taking revision seq.
 * With id (the JSON text of the request's id, on the replica that
 * proposed it), the reply, success or error, is written to out as a line
 * of its own.  False with why when it did not apply (then it changed
 * nothing: every replica finds the same, the message being the same and
 * the stores equal).  core->applied becomes seq either way. */
bool rpd_apply_message(rpd_core *core, uint64_t seq, const char *method, const char *json,
                       size_t len, const char *id, rp_jw *out, char *why, size_t cap);

/* Fails with -32602 unless params (may be NULL = omitted) is an object whose
 * keys are all in `allowed` (NULL-terminated), each once. */
bool rpd_check_keys(rpd_req *req, const cJSON *params, const char *const *allowed);

/* params[key] (NULL when absent or params is NULL); writes "params.key"
 * into path (RP_CODEC_PATH_MAX bytes). */
const cJSON *rpd_param(const cJSON *params, const char *key, char *path);

/* Takes `units` work units (about a pair test each) from what the current
 * request line may still spend (max_request_work, or max_loop_work on the
 * event loop: req->line->work_limit); fails with -32004 naming that limit when
 * it is not enough.  Called with an upper-bound estimate before the work
 * starts (proto/PROTOCOL.md, Limits), so an oversized request is refused
 * before it does anything. */
bool rpd_charge_work(rpd_req *req, uint64_t units);
/* Fills the -32004 error of the line's work budget (req->line->work_limit) and
 * returns false; the caller may word the message. */
bool rpd_fail_work(rpd_req *req);
/* The same check without taking anything: for a part of an estimate known
 * before decoding (the pairs of an array), so that decoding a request that
 * will be refused is not spent either. */
bool rpd_work_fits(rpd_req *req, uint64_t units);
/* Tree walks cannot be priced exactly before they run: a query or check
 * charges its estimate first (rpd_charge_work), then walks on a meter
 * (rp_work) that lets it spend what its line had before that charge.
 * rpd_walk_meter makes the meter; rpd_walk_settle charges the line what
 * the walks spent where that is more than the estimate, and turns
 * RP_ERR_WORK (the meter ran out, the walks stopped) into -32004 naming
 * the line's limit; another error status fails the request as
 * rpd_fail_status does.  True for RP_OK.
 * `share` (0..1] is the part of the budget a slice of a batch may use. */
rp_work rpd_walk_meter(const rpd_req *req, uint64_t charged, double share);
bool rpd_walk_settle(rpd_req *req, const rp_work *w, uint64_t charged, rp_status st);
/* The -32004 of walks stopped on their meter (what rpd_walk_settle does
 * for RP_ERR_WORK, without charging anything); returns false. */
bool rpd_walk_stopped(rpd_req *req, const rp_work *w, uint64_t charged);

/* ceil(log2(n + 1)): the depth of a balanced tree over n shapes, the unit
 * of a tree query's cost in work estimates. */
uint64_t rpd_tree_depth(size_t n);

/* The result of scene.delete and model.delete: {kind: name, "deleted":
 * true, "revision": the revision the deletion took}. */
void rpd_write_deleted(rp_jw *w, const char *kind, const char *name, uint64_t revision);

/* Lower bounds of what one item of a long reply takes when written: a pair
 * {"query":null,"shape":"s","distance":0}, a check result
 * {"collision":false}. */
#define RPD_MIN_PAIR_BYTES 40
/* Work units a motion state costs beyond its check and FK: the queueing,
 * interpolation and bookkeeping of one state, measured at about the cost
 * of sixteen pair tests for a small model (proto/PROTOCOL.md, Limits). */
#define RPD_STATE_WORK 16
#define RPD_MIN_RESULT_BYTES 20

/* Fails with -32004 max_reply_bytes, before any work, when `items` items
 * of at least `min_bytes` each cannot fit in what is left of the reply
 * limit of w: a request that is bound to fail does not build its reply (or
 * sort its scene) first. */
bool rpd_reply_fits(rpd_req *req, const rp_jw *w, uint64_t items, size_t min_bytes);

/* Most pairs that what is left of the reply limit of w can hold: pair lists
 * longer than that are refused while they are collected. */
size_t rpd_max_pairs(const rp_jw *w);

/* Required shape / number, optional bool with default. */
bool rpd_shape_param(rpd_req *req, const cJSON *params, const char *key, rp_shape *out);
bool rpd_number_param(rpd_req *req, const cJSON *params, const char *key, double *out);
bool rpd_optional_bool(rpd_req *req, const cJSON *params, const char *key, bool dflt, bool *out);

/* methods_model.c: the model `params.model` names (fails -32001 when
 * missing); allowed (link, scene shape id) pairs at `path` (2*n strings
 * into the tree, malloc'ed). */
rp_model *rpd_existing_model(rpd_req *req, const cJSON *params);
bool rpd_decode_scene_pairs(rpd_req *req, const cJSON *j, const char *path, const char ***out,
                            size_t *n_out);

/* ---- objects (methods_objects.c) ---------------------------------------- */

/* params.objects of scene.put/create/replace, decoded: the objects and
 * their shapes (ids and names pointing into the cJSON tree). */
typedef struct rpd_objects {
    rp_object_put *objects;
    size_t n;
    rp_shape_put *shapes; /* every object's, in one array */
} rpd_objects;

/* Decodes {name: {"pose"?: pose, "shapes": {id: shape}}} at `path`. */
bool rpd_decode_objects(rpd_req *req, const cJSON *j, const char *path, rpd_objects *out);
void rpd_objects_free(rpd_objects *o);
/* The shapes of all objects of params.objects, counted without decoding. */
size_t rpd_objects_shape_count(const cJSON *j);

/* Sets the error for a store object mutation that refused an argument
 * (err names it), with its path; false (nothing set) for other errors. */
bool rpd_edit_failed(rpd_req *req, rp_status st, const rp_edit_error *e, const cJSON *shapes_j,
                     const char *shapes_path, const cJSON *objects_j, const char *objects_path,
                     const cJSON *robots_j, const char *robots_path);

/* params.ignore: up to RPD_MAX_IGNORE object names of scene sc (malloc'ed
 * array of pointers into the tree, NULL when absent; caller frees). */
#define RPD_MAX_IGNORE 64
bool rpd_decode_ignore(rpd_req *req, const cJSON *params, const rp_scene *sc, const char ***out,
                       size_t *n_out);

/* A joint vector of kinematic model m at `path`: an array of the active
 * joints' values in the model's order, or an object {joint: value}
 * (others: the defaults) (methods_check.c). */
bool rpd_decode_joint_vector(rpd_req *req, const rp_model *m, const cJSON *j, const char *path,
                             double *q);

/* params.robots of scene.put/create/replace, decoded: the instances and
 * their joint vectors (one array). */
typedef struct rpd_robots {
    rp_robot_put *robots;
    size_t n;
    double *joints;
} rpd_robots;
/* Decodes {name: {"model": name, "joints"?: joint vector, "base"?: pose}}
 * at `path`; -32001 (kind model) for a model the store lacks. */
bool rpd_decode_robots(rpd_req *req, const cJSON *j, const char *path, rpd_robots *out);
void rpd_robots_free(rpd_robots *r);
/* The shapes of the robots of params.robots (their models' shapes). */
size_t rpd_robots_shape_count(const rpd_req *req, const cJSON *j);

/* params.clouds of scene.put/create/replace, decoded and built (the
 * clouds are references this holds; names point into the tree). */
typedef struct rpd_clouds {
    rp_cloud_put *clouds;
    size_t n;
} rpd_clouds;
/* Decodes {name: {"points" [[x,y,z]...] | "points_f32" base64, "radius",
 * "voxel"?}} at `path` and builds each cloud (proto/PROTOCOL.md, Point
 * clouds). */
bool rpd_decode_clouds(rpd_req *req, const cJSON *j, const char *path, rpd_clouds *out);
void rpd_clouds_free(rpd_clouds *c);
/* The points of all clouds of params.clouds, counted without decoding. */
size_t rpd_clouds_point_count(const cJSON *j);
/* Clouds built ahead (methods_objects.c): a worker that parsed a line for
 * the event loop builds the clouds of its scene.put/create/replace
 * requests that decode (as rpd_decode_clouds would take them), and
 * rpd_decode_clouds, on the loop, takes a cloud built for the member it
 * decodes instead of building it again.  What was not taken is freed with
 * the parsed line. */
struct rpd_parsed;
void rpd_prebuild_clouds(struct rpd_parsed *p);
void rpd_prebuilt_free(struct rpd_prebuilt *pb);

/* rpd_edit_failed for a refused cloud (RP_EDIT_CLOUD). */
bool rpd_cloud_failed(rpd_req *req, rp_status st, const rp_edit_error *e, const cJSON *clouds_j,
                      const char *clouds_path);

/* Charges the work of writing n shapes into a scene that will hold up to
 * `after` (methods_scene.c). */
bool rpd_charge_shapes(rpd_req *req, size_t n, size_t after);

bool rpd_m_scene_move(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_attach(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_detach(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_create(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_delete(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_list(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_get(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_put(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_remove(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_replace(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_distance(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_check(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_model_put(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_model_get(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_model_delete(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_model_list(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_check(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_check_batch(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_check_motion(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_plan(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_model_fk(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_watch(rpd_req *req, const cJSON *params, rp_jw *w);
bool rpd_m_scene_unwatch(rpd_req *req, const cJSON *params, rp_jw *w);

#endif /* REPOSE_SERVER_METHODS_H */
