/* SPDX-License-Identifier: MIT */
/*
 * repose client: a small blocking client for reposed (JSON-RPC 2.0 over
 * newline-delimited JSON, on a Unix socket or TCP).  See proto/PROTOCOL.md.
 *
 * Memory: every rp_client from a connect function is released with
 * rp_client_close (NULL is a no-op).  Strings returned through `char **`
 * (results, reply lines) are malloc'ed and belong to the caller, who frees
 * them with free().  cJSON trees returned through `cJSON **` belong to the
 * caller (cJSON_Delete).  rp_client_error.data is malloc'ed; release it with
 * rp_client_error_free, or let the next call that takes the same error
 * release it (every call resets *err first).
 *
 * Errors: every function returns RP_CLIENT_OK (0) on success or the kind of
 * failure, and fills *err (when err is not NULL) with details.  An error
 * reply from the server (RP_CLIENT_RPC) leaves the connection usable.  A
 * timeout, a closed connection, a malformed reply or an I/O error leaves the
 * stream out of step, so the client closes its socket and every later call
 * fails with RP_CLIENT_CLOSED; make a new client to reconnect.
 *
 * Timeouts bound each call as a whole (sending the request and receiving the
 * reply), in milliseconds; 0 or a negative value waits forever.
 *
 * Thread safety: a client is not thread-safe; use one client per thread.
 * Different clients are independent.  The library never raises SIGPIPE
 * (writes use MSG_NOSIGNAL), so callers need not ignore it.
 */
#ifndef REPOSE_CLIENT_H
#define REPOSE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repose/export.h"
#include "repose/geometry.h" /* rp_transform (a plain struct: no need to link librepose) */

#ifdef __cplusplus
extern "C" {
#endif

/* cJSON is only needed by rp_client_call_cjson; declaring the tag keeps this
 * header free of the cJSON include. */
struct cJSON;

/// The longest reply line the client accepts, in bytes; a longer one is a
/// protocol error (RP_CLIENT_PROTOCOL) and the connection is dropped.
#define RP_CLIENT_MAX_REPLY_BYTES ((size_t)1 << 30)

/// The default TCP port of reposed.
#define RP_CLIENT_DEFAULT_PORT 7411

/// The default Unix socket path of reposed (what `reposed` and
/// `scripts/run.sh` listen on without --unix).  The environment variable
/// REPOSE_SOCKET, when set and not empty, overrides it for every client:
/// rp_client_default_unix_path, repose-cli and the Python client.
#define RP_CLIENT_DEFAULT_UNIX_PATH "/tmp/reposed.sock"

/// The longest token rp_client_auth_file reads, in bytes.
#define RP_CLIENT_MAX_TOKEN_BYTES 4096

/// What went wrong.  RP_CLIENT_OK is 0, every failure is non-zero.
typedef enum rp_client_error_kind {
    RP_CLIENT_OK = 0,   ///< success
    RP_CLIENT_CONNECT,  ///< could not connect (refused, no such socket, unknown host)
    RP_CLIENT_TIMEOUT,  ///< the call did not complete within the timeout
    RP_CLIENT_CLOSED,   ///< the server closed the connection (or it was closed earlier)
    RP_CLIENT_PROTOCOL, ///< a reply was not valid JSON-RPC, or its id did not match
    RP_CLIENT_RPC,      ///< the server answered with an error (code, message, data)
    RP_CLIENT_IO,       ///< another socket error (code holds errno)
    RP_CLIENT_NOMEM,    ///< out of memory
    RP_CLIENT_ARG       ///< invalid argument (NULL, bad params JSON, misuse)
} rp_client_error_kind;

/// Details of a failure.  Initialise with RP_CLIENT_ERROR_INIT (or zero it)
/// before its first use; every call resets it (freeing `data`) on entry.
typedef struct rp_client_error {
    rp_client_error_kind kind; ///< RP_CLIENT_OK after a successful call
    int code;                  ///< RPC: the JSON-RPC error code; CONNECT/IO: errno; else 0
    char message[256];         ///< human-readable text ("" on success), NUL-terminated
    char *data; ///< RPC: the error's `data` as the server wrote it (JSON text, malloc'ed), or NULL
} rp_client_error;

/// A zero initialiser for rp_client_error.
#define RP_CLIENT_ERROR_INIT                                                                       \
    {                                                                                              \
        RP_CLIENT_OK, 0, {0}, NULL                                                                 \
    }

/// An opaque connection to reposed.
typedef struct rp_client rp_client;

/// Releases err->data and resets *err to RP_CLIENT_OK.  NULL is a no-op.
RP_API void rp_client_error_free(rp_client_error *err);

/// A static, lowercase name for a kind ("ok", "connect", "timeout", "closed",
/// "protocol", "rpc", "io", "nomem", "arg"); never NULL.
RP_API const char *rp_client_error_kind_name(rp_client_error_kind kind);

/// Connects to reposed on the Unix socket at `path`, waiting at most
/// timeout_ms (which also becomes the client's call timeout).  Returns the
/// client (caller owns it: rp_client_close) or NULL with *err set:
/// RP_CLIENT_CONNECT when nothing listens there (ENOENT, ECONNREFUSED),
/// RP_CLIENT_TIMEOUT, RP_CLIENT_ARG for a NULL or too long path.
RP_API rp_client *rp_client_connect_unix(const char *path, int timeout_ms, rp_client_error *err);

/// Connects to reposed at host:port over TCP (host is a name or a numeric
/// IPv4/IPv6 address; every address it resolves to is tried in turn),
/// waiting at most timeout_ms per attempt.  Same ownership and errors as
/// rp_client_connect_unix; an unresolvable host is RP_CLIENT_CONNECT.
RP_API rp_client *rp_client_connect_tcp(const char *host, int port, int timeout_ms,
                                        rp_client_error *err);

/// The Unix socket path to use when none is given: $REPOSE_SOCKET when it
/// is set and not empty, else RP_CLIENT_DEFAULT_UNIX_PATH.  The string
/// belongs to the environment (or is static); never NULL.
RP_API const char *rp_client_default_unix_path(void);

/// rp_client_connect_unix on rp_client_default_unix_path(): the socket the
/// environment names ($REPOSE_SOCKET), else /tmp/reposed.sock.
RP_API rp_client *rp_client_connect_default(int timeout_ms, rp_client_error *err);

/// Sets the timeout of later calls, in milliseconds (<= 0: wait forever).
/// NULL is a no-op.
RP_API void rp_client_set_timeout(rp_client *c, int timeout_ms);

/// Closes the connection and frees the client.  Outstanding pipelined
/// replies are discarded.  NULL is a no-op.
RP_API void rp_client_close(rp_client *c);

/// Authenticates with `token` (the `auth` method).  Needed on TCP when the
/// daemon runs with --token-file; before it, other methods than ping, hello
/// and auth get RPC error -32005.  A wrong token is an RP_CLIENT_RPC error
/// (the connection stays usable).  The token is not kept by the client.
RP_API rp_client_error_kind rp_client_auth(rp_client *c, const char *token, rp_client_error *err);

/// rp_client_auth with the token in the file at `path`: its first line
/// (without the newline), at most RP_CLIENT_MAX_TOKEN_BYTES.  A NULL path
/// means the file named by $REPOSE_TOKEN_FILE.  A file that is missing,
/// unreadable, empty, binary or readable by everyone (mode o+r; the daemon
/// refuses such a token file too) is RP_CLIENT_ARG, with nothing sent; so
/// is a NULL path when REPOSE_TOKEN_FILE is unset or empty.  The token is
/// wiped from memory once sent.
RP_API rp_client_error_kind rp_client_auth_file(rp_client *c, const char *path,
                                                rp_client_error *err);

/// Calls `method` with `params_json` (a JSON object as text, or NULL for no
/// params) and waits for the reply.  params_json is checked and minified
/// locally (a malformed one is RP_CLIENT_ARG; nothing is sent).  On success
/// *result_json (when result_json is not NULL) receives the result exactly as
/// the server wrote it (JSON text; malloc'ed, caller frees).  On failure
/// *result_json is NULL.  Fails with RP_CLIENT_ARG while pipelined replies
/// are outstanding (read them with rp_client_recv first).
RP_API rp_client_error_kind rp_client_call(rp_client *c, const char *method,
                                           const char *params_json, char **result_json,
                                           rp_client_error *err);

/// rp_client_call with cJSON values: `params` (an object, or NULL) is not
/// modified nor kept; on success *result receives the parsed result (caller
/// owns it: cJSON_Delete), else NULL.
RP_API rp_client_error_kind rp_client_call_cjson(rp_client *c, const char *method,
                                                 const struct cJSON *params, struct cJSON **result,
                                                 rp_client_error *err);

/* ---- typed helpers: kinematic models and joint-space checks -----------------
 *
 * Thin wrappers around rp_client_call for the methods of a kinematic model
 * (proto/PROTOCOL.md: model.put in its kinematic form, model.fk, check,
 * check.batch, check.motion): each builds the params JSON, makes one call
 * and reads the essential members of the result.  They share rp_client_call's behaviour (timeouts, errors, no
 * pipelined replies outstanding), and add:
 *
 *  - joint values are sent with "%.17g" (and a '.' whatever LC_NUMERIC
 *    says), so every double reaches the server exactly; a NaN or an
 *    infinity is RP_CLIENT_ARG naming the element, and nothing is sent;
 *  - strings (names, documents) must be valid UTF-8 (RP_CLIENT_ARG);
 *  - a joint vector is an array of the model's active joints in the order
 *    model.get lists them (`joints`); a wrong count is the server's -32602
 *    error with data.path (e.g. "params.joints");
 *  - an unknown model or scene is the server's -32001 error (data.kind is
 *    "model" or "scene");
 *  - a result that lacks a member the helper reads is RP_CLIENT_PROTOCOL;
 *    the connection stays usable (the reply itself was in step).
 * Outputs are reset on entry (false, 0, NaN) and are only meaningful when
 * the helper returns RP_CLIENT_OK.  `scene` may be NULL for no scene (self
 * collisions and joint limits only).
 *
 * The helpers send no `ignore` (object names whose shapes a check leaves
 * out) nor the other optional params (margin, base, attached, ...): make
 * such a request with rp_client_call, e.g. method "check" with params
 * {"model":"arm","scene":"cell","joints":[...],"ignore":["table"]}. */

/// model.put with a URDF document: params {"model", "urdf", "srdf"?}.
/// `srdf` (an SRDF document: its <disable_collisions> pairs) may be NULL;
/// the server then skips the pairs of links joined by a joint by itself.
/// On success *result_json (when not NULL) receives the result as the
/// server wrote it ({"model","revision"}; malloc'ed, caller frees).  A document the server refuses is RP_CLIENT_RPC
/// -32602 with data.path inside "params.urdf" or "params.srdf".
RP_API rp_client_error_kind rp_client_model_put_urdf(rp_client *c, const char *model,
                                                     const char *urdf, const char *srdf,
                                                     char **result_json, rp_client_error *err);

/* ---- a URDF with mesh files -------------------------------------------------
 *
 * A URDF's <collision> geometry may be <mesh filename="..."/> (STL, OBJ,
 * Collada).  The daemon never reads the client's files: model.put takes the
 * bytes of each file, base64, in `meshes` under the filename exactly as the
 * URDF writes it, and `spherize` {max_spheres, max_overshoot} for the cover
 * of spheres it makes of them (proto/PROTOCOL.md, model.put; proto/URDF.md).
 * These functions find the files as ROS tools do:
 *
 *  - package://NAME/PATH: the first DIR of the search path where
 *    DIR/NAME/PATH exists; else the first DIR whose last component is NAME
 *    with DIR/PATH existing.  The search path is the directories the
 *    caller gives, in order, then those of the environment variable
 *    ROS_PACKAGE_PATH (colon-separated);
 *  - file:///ABS: the file /ABS (as written, no %-decoding);
 *  - /ABS: as it is;
 *  - any other path: relative to the directory of the URDF file;
 *  - other schemes (http://, model://) are refused.
 *
 * Only the meshes of <collision>s count, as the daemon reads them
 * (<link> children of the root <robot>): <visual> meshes are skipped, as
 * are xacro macros and unknown elements.  A filename that cannot be
 * resolved is RP_CLIENT_ARG with a message naming the filename, its link
 * and what was tried, e.g. "package://arm/meshes/l3.stl (link link3): not
 * found under /a, /b". */

/// One mesh file of a URDF's collision geometry, resolved.
typedef struct rp_client_mesh_file {
    char *uri;            ///< the filename attribute as written (XML references decoded):
                          ///< model.put's key for the file
    char *link;           ///< the link of the first <collision> that names it
    unsigned long line;   ///< the line of that <mesh> in the URDF
    char *path;           ///< the file it resolves to
    unsigned char *bytes; ///< the file's contents when read (else NULL), len bytes
    size_t len;           ///< (bytes[len] is a NUL not counted in len)
} rp_client_mesh_file;

/// Resolves one mesh filename `uri` as the rules above say, for a URDF
/// at urdf_path (NULL: in the current directory), searching package_path[0
/// .. n_dirs) then $ROS_PACKAGE_PATH.  On success *path receives the file's
/// path (malloc'ed, the caller frees it).  RP_CLIENT_ARG when nothing is
/// found (the message says where it looked), RP_CLIENT_NOMEM.
RP_API rp_client_error_kind rp_client_resolve_mesh_uri(const char *uri, const char *urdf_path,
                                                       const char *const *package_path,
                                                       size_t n_dirs, char **path,
                                                       rp_client_error *err);

/// Finds every distinct <mesh filename> of the collisions of the URDF
/// document urdf[0..urdf_len) (the text of the file urdf_path, which only
/// anchors relative filenames; NULL: the current directory) and resolves
/// each as rp_client_resolve_mesh_uri does; with `read`, reads each file's
/// bytes too.  On success *files receives the *n_files files in document
/// order, each filename once (malloc'ed: free with
/// rp_client_mesh_files_free; not NULL even when there are none).  Nothing
/// is sent anywhere.  RP_CLIENT_ARG for a filename that cannot be
/// resolved or read, and for XML too broken to follow ("line 7: </geometry>
/// closes <collision>"); RP_CLIENT_NOMEM.
RP_API rp_client_error_kind rp_client_resolve_meshes(const char *urdf, size_t urdf_len,
                                                     const char *urdf_path,
                                                     const char *const *package_path, size_t n_dirs,
                                                     bool read, rp_client_mesh_file **files,
                                                     size_t *n_files, rp_client_error *err);

/// Frees the n files of rp_client_resolve_meshes (and their strings).  NULL
/// is a no-op.
RP_API void rp_client_mesh_files_free(rp_client_mesh_file *files, size_t n);

/// A URDF file with its SRDF and its meshes, and how to cover them.
typedef struct rp_client_urdf_files {
    const char *urdf_path;           ///< the URDF file (required)
    const char *srdf_path;           ///< an SRDF file, or NULL
    const char *const *package_path; ///< directories for package:// filenames, searched in
                                     ///< order before $ROS_PACKAGE_PATH (NULL when none)
    size_t n_package_path;           ///< how many
    size_t max_spheres;   ///< spherize.max_spheres (spheres per link, 1..1024; the daemon
                          ///< checks); 0: not sent (the daemon's default, 16)
    double max_overshoot; ///< spherize.max_overshoot (metres, finite, >= 0); 0: not sent
} rp_client_urdf_files;

/// Adds to the params object `params` (a cJSON object, e.g. {"model":"arm"}
/// with other model.put params) the members of a model.put from files:
/// "urdf" (the URDF's text), "srdf" (when srdf_path is given), "meshes"
/// {filename: base64 of the file} (when the URDF's collisions have meshes)
/// and "spherize" {max_spheres?, max_overshoot?} (when either is set).  The
/// documents must be UTF-8 text.  RP_CLIENT_ARG, with params unchanged, for
/// params that already hold one of those members, a file that cannot be
/// read, a mesh that cannot be resolved (see rp_client_resolve_meshes) or a
/// max_overshoot that is negative or not finite; RP_CLIENT_NOMEM.
RP_API rp_client_error_kind rp_client_urdf_params(const rp_client_urdf_files *src,
                                                  struct cJSON *params, rp_client_error *err);

/// model.put {"model", "urdf", "srdf"?, "meshes"?, "spherize"?} from files
/// (rp_client_urdf_params), one call.  On success *result_json (when not
/// NULL) receives the result as the server wrote it (malloc'ed, caller
/// frees); model.get then lists the covers as "mesh_covers".  Local
/// failures as rp_client_urdf_params (nothing is sent); a file the daemon
/// cannot read as a mesh, or a document it refuses, is RP_CLIENT_RPC -32602
/// with data.path inside "params.urdf" (e.g.
/// "params.urdf.link[link3].collision[0].geometry.mesh").
RP_API rp_client_error_kind rp_client_model_put_urdf_files(rp_client *c, const char *model,
                                                           const rp_client_urdf_files *src,
                                                           char **result_json,
                                                           rp_client_error *err);

/// model.fk: the pose of every link of `model` at the joint vector q[0..n)
/// (q may be NULL when n is 0).  *result_json (when not NULL) receives the
/// result as the server wrote it: {"model", "revision", "links": {link name:
/// {"translation": [x,y,z], "rotation": {"w","x","y","z"}}}} (malloc'ed,
/// caller frees).
RP_API rp_client_error_kind rp_client_model_fk(rp_client *c, const char *model, const double *q,
                                               size_t n, char **result_json, rp_client_error *err);

/// check of one joint vector q[0..n) of `model` against `scene` (or NULL).
/// *valid: no collision and every joint inside its limits.  *min_distance
/// (when not NULL): the smallest signed distance the server measured (< 0:
/// penetration), +INFINITY when it measured none (no scene shapes and no
/// self-collision pairs).
RP_API rp_client_error_kind rp_client_check_joints(rp_client *c, const char *model,
                                                   const char *scene, const double *q, size_t n,
                                                   bool *valid, double *min_distance,
                                                   rp_client_error *err);

/// rp_client_check_joints with report "first": the verdict only (about
/// half the server's work of the closest pair), what a planner's state
/// check needs.
RP_API rp_client_error_kind rp_client_check_joints_first(rp_client *c, const char *model,
                                                         const char *scene, const double *q,
                                                         size_t n, bool *valid,
                                                         rp_client_error *err);

/// check.batch of n_configs joint vectors, each of `dof` values, row after
/// row in q[0..n_configs*dof) (q may be NULL when that is 0).  valid_out
/// (n_configs entries; may be NULL when n_configs is 0) receives each
/// configuration's "valid".  A product n_configs * dof that overflows
/// size_t is RP_CLIENT_ARG (before valid_out is touched).  The server's
/// limit on configurations per batch (max_batch_configurations) is
/// RP_CLIENT_RPC -32004.
RP_API rp_client_error_kind rp_client_check_batch_joints(rp_client *c, const char *model,
                                                         const char *scene, const double *q,
                                                         size_t n_configs, size_t dof,
                                                         bool *valid_out, rp_client_error *err);

/// The outcome of rp_client_check_motion.
typedef struct rp_client_motion_result {
    bool valid;              ///< the whole path is clear (and inside the joint limits)
    size_t segment;          ///< invalid: the first invalid state lies between
                             ///< path point `segment` and `segment + 1`; 0 when valid
    double t;                ///< invalid: where in that segment, 0..1; NaN when valid
    uint64_t states_checked; ///< how many states the server checked
    char kind[16];           ///< invalid: "scene", "self", "attached" or "limits"; "" when valid
} rp_client_motion_result;

/// check.motion along the path of n_points joint vectors (at least 2; each
/// of `dof` values, row after row in path[0..n_points*dof)), linearly
/// interpolated between consecutive points.  `mode` is "discrete", or
/// "certified" (the whole motion proved clear, not only sampled states), or
/// NULL for the server's default (discrete).  `resolution` is the largest
/// joint step between the states of a discrete check; 0 for the server's
/// default (0.01); > 0 only with a discrete mode; a negative or non-finite
/// one is RP_CLIENT_ARG.  *out receives the outcome.
RP_API rp_client_error_kind rp_client_check_motion(rp_client *c, const char *model,
                                                   const char *scene, const double *path,
                                                   size_t n_points, size_t dof, const char *mode,
                                                   double resolution, rp_client_motion_result *out,
                                                   rp_client_error *err);

/// Options of rp_client_plan; zeroed: the server's defaults (certified
/// edges, seed 0, simplification, a 1000 ms timeout, no densification).
typedef struct rp_client_plan_opts {
    const char *edges; ///< "certified", "discrete", or NULL
    double timeout_ms; ///< > 0, or 0 for the server's default
    uint64_t seed;     ///< the same seed on the same scene revision: the same path
    bool no_simplify;  ///< keep the path as the trees found it
    double max_step;   ///< > 0: no joint moves more than this between waypoints
} rp_client_plan_opts;

/// The outcome of rp_client_plan; free with rp_client_plan_result_free.
typedef struct rp_client_plan_result {
    bool solved;
    double *path;      ///< solved: n_points joint vectors of `dof` values, row after row
    size_t n_points;   ///< (malloc'ed); NULL and 0 otherwise
    size_t goal_index; ///< solved: the goal reached
    char reason[16];   ///< not solved: "start_invalid", "goal_invalid", "timeout",
                       ///< "max_states" or "stopped"; "" when solved
    uint64_t revision; ///< the scene revision planned against (0 without a scene)
    double ms;         ///< the server's time planning
    uint64_t iterations, nodes, states_checked, edges_checked;
} rp_client_plan_result;

/// plan from joint vector `start` to any of the n_goals joint vectors
/// `goals` (row after row; each of `dof` values) among `scene` (may be
/// NULL) with RRT-Connect in the daemon (proto/PROTOCOL.md, Planning).
/// opts may be NULL.  A path whose rows are not `dof` numbers is
/// RP_CLIENT_PROTOCOL.  *out receives the outcome; free it with
/// rp_client_plan_result_free.
RP_API rp_client_error_kind rp_client_plan(rp_client *c, const char *model, const char *scene,
                                           const double *start, const double *goals, size_t n_goals,
                                           size_t dof, const rp_client_plan_opts *opts,
                                           rp_client_plan_result *out, rp_client_error *err);
/// Frees a plan result's path; safe on a zeroed or freed result.
RP_API void rp_client_plan_result_free(rp_client_plan_result *r);

/// A three-way option: the server's default, or yes, or no.
typedef enum rp_client_tristate {
    RP_CLIENT_DEFAULT = 0,
    RP_CLIENT_YES,
    RP_CLIENT_NO
} rp_client_tristate;

/// Options of rp_client_check_motion_opts; zeroed: the server's defaults.
typedef struct rp_client_motion_opts {
    const char *mode;            ///< "discrete", "certified", or NULL (discrete)
    double resolution;           ///< discrete: > 0, or 0 for the default (0.01)
    rp_client_tristate earliest; ///< report the earliest invalid state (certified's
                                 ///< default) or the first found (discrete's): a
                                 ///< planner that needs only the verdict says NO
    bool skip_ends;              ///< the end waypoints are known valid: not checked
} rp_client_motion_opts;

/// rp_client_check_motion with every option (o may be NULL).
RP_API rp_client_error_kind rp_client_check_motion_opts(
    rp_client *c, const char *model, const char *scene, const double *path, size_t n_points,
    size_t dof, const rp_client_motion_opts *o, rp_client_motion_result *out, rp_client_error *err);

/* ---- typed helpers: objects ---------------------------------------------------
 *
 * Objects are rigid groups of shapes with a pose (proto/PROTOCOL.md,
 * Objects).  They are put with scene.put / scene.create / scene.replace
 * ("objects" beside "shapes"), read with scene.get and removed by name with
 * scene.remove, all through rp_client_call; this helper moves them. */

/// scene.move {scene, objects: {names[i]: poses[i]}, if_revision?}: gives
/// the n named objects of `scene` their new poses (world = r*local + t), all
/// in one revision.  Each pose is sent in matrix form with every double in
/// "%.17g" (and a '.' whatever LC_NUMERIC says), so the server holds exactly
/// these numbers and scene.get reads them back bit for bit.  if_revision
/// (NULL: none) makes it a compare-and-set: RP_CLIENT_RPC -32003 with
/// data.expected and data.actual when the scene is at another revision.  On
/// success *revision (when not NULL; reset to 0 on entry) receives the
/// scene's new revision.  names and poses may be NULL when n is 0.  Refused
/// with RP_CLIENT_ARG before anything is sent: a NULL scene, names or poses
/// (n > 0), a NULL name, a string that is not valid UTF-8, or a pose number
/// that is NaN or infinite (the error names it, e.g. "poses[1].r[0][2]").
/// The server's answers: an unknown object or scene is RP_CLIENT_RPC -32001
/// (data.kind "object" or "scene"); a name given twice, or a rotation that
/// is not orthonormal with determinant +1, -32602 with data.path.
RP_API rp_client_error_kind rp_client_scene_move(rp_client *c, const char *scene,
                                                 const char *const *names,
                                                 const rp_transform *poses, size_t n,
                                                 const uint64_t *if_revision, uint64_t *revision,
                                                 rp_client_error *err);

/* ---- typed helpers: robot instances -------------------------------------------
 *
 * A robot instance places a kinematic model in a scene at a joint vector
 * and a base pose; its link shapes become scene shapes "name/<model shape
 * id>" (proto/PROTOCOL.md).  Instances are put with scene.put /
 * scene.create / scene.replace ("robots": {name: {"model", "joints"?,
 * "base"?}}), read with scene.get and removed by name with scene.remove,
 * all through rp_client_call; this helper moves them (and objects with
 * them, in the same revision).  A model an instance uses can be neither
 * replaced nor deleted: model.put and model.delete answer RP_CLIENT_RPC
 * -32002 with data {"kind":"model","name","scene","robot"}. */

/// One robot instance's move: its new joint values (joints: dof values in
/// model.get's joint order; NULL: the joints stay as they are) and/or its
/// new base pose (base NULL: it stays).
typedef struct rp_client_robot_move {
    const char *name;
    const double *joints;
    size_t dof;
    const rp_transform *base;
} rp_client_robot_move;

/// scene.move {scene, robots: {robots[i].name: {joints?, base?}},
/// objects?: {object_names[j]: object_poses[j]}, if_revision?}: moves the n
/// robot instances, and the n_objects objects (sent only when n_objects >
/// 0), all in one revision.  Joint values are sent with every digit
/// ("%.17g"), bases in matrix form as rp_client_scene_move sends poses, so
/// scene.get reads them back bit for bit.  if_revision and *revision as for
/// rp_client_scene_move.  robots may be NULL when n is 0, object_names and
/// object_poses when n_objects is 0.  Refused with RP_CLIENT_ARG before
/// anything is sent: a NULL scene or robots (n > 0), a NULL or non-UTF-8
/// name, a joint value or base number that is NaN or infinite (the error
/// names it, e.g. "robots[0].joints[1]", "robots[1].base.t.x"), and what
/// rp_client_scene_move refuses of the objects.  The server's answers: an
/// unknown robot is RP_CLIENT_RPC -32001 (data.kind "robot"); a wrong joint
/// count, an object named as a robot (or a robot as an object), a bad
/// rotation, -32602 with data.path (e.g. "params.robots.r1.joints").
RP_API rp_client_error_kind rp_client_scene_move_robots(
    rp_client *c, const char *scene, const rp_client_robot_move *robots, size_t n,
    const char *const *object_names, const rp_transform *object_poses, size_t n_objects,
    const uint64_t *if_revision, uint64_t *revision, rp_client_error *err);

/* ---- typed helpers: point clouds ----------------------------------------------
 *
 * A point cloud is a set of spheres of one radius, one per point or per
 * occupied voxel, put and replaced whole by name (proto/PROTOCOL.md, Point
 * clouds).  Its spheres are the scene shapes "name/k", k from 0 in the
 * order of their centres (a Morton order), and queries, checks and motions
 * report hits by those ids.  A cloud is read with scene.get (its `clouds`:
 * radius, count and points_f32, the centres in sphere order), left out of
 * a query or check by naming it in `ignore`, and removed by name with
 * scene.remove, all through rp_client_call; this helper puts one.  Cloud
 * names share the namespace of objects and robot instances: a put of a
 * cloud replaces whatever bore its name. */

/// scene.put {scene, clouds: {name: {radius, voxel?, count: n, points_f32}},
/// create?, if_revision?}: puts the cloud `name` of the n points xyz[0..3n)
/// (x, y, z of each point in turn, metres), replacing the cloud of that name
/// whole.  The points are sent as they are, in single precision, as the
/// base64 of their little-endian float32 bytes (16 characters a point,
/// whatever the host's byte order); `count` n lets the server check that
/// none went missing.  `radius` (metres, >= 0) is every sphere's; `voxel`
/// (metres) > 0 merges the points of each cell of that size into one
/// sphere at their centroid, 0 gives one sphere per point.  `create` makes
/// a missing scene.  if_revision and *revision as for rp_client_scene_move
/// (the scene's new revision; reset to 0 on entry).  xyz may be NULL when n
/// is 0 (an empty cloud).  Refused with RP_CLIENT_ARG before anything is
/// sent: a NULL scene or name, a string that is not valid UTF-8, a NULL xyz
/// (n > 0), a coordinate that is NaN or infinite (the error names it, e.g.
/// "xyz[7] (point 2, y) is NaN; ..."), a radius or voxel that is NaN or
/// infinite.  The server's answers: a missing scene without `create` is
/// RP_CLIENT_RPC -32001; a negative radius or voxel, or a name that clashes
/// with a shape of the scene's own, -32602 with data.path (e.g.
/// "params.clouds.cam.radius"); more points than max_shapes_per_scene
/// allows, -32004.
RP_API rp_client_error_kind rp_client_scene_put_cloud(rp_client *c, const char *scene,
                                                      const char *name, const float *xyz, size_t n,
                                                      double radius, double voxel, bool create,
                                                      const uint64_t *if_revision,
                                                      uint64_t *revision, rp_client_error *err);

/// Pipelining: sends one request without waiting for its reply and stores
/// its id in *id_out (when not NULL).  Ids are 1, 2, 3, ... per client.
/// While the socket cannot take more bytes the client reads (and keeps)
/// replies that have arrived, so sending many requests before reading never
/// deadlocks against the server's write back-pressure.
RP_API rp_client_error_kind rp_client_send(rp_client *c, const char *method,
                                           const char *params_json, uint64_t *id_out,
                                           rp_client_error *err);

/// Receives the reply to the oldest request sent with rp_client_send
/// (replies come back in request order).  *id (when not NULL) receives its id,
/// also when the reply is an RPC error; *result_json is as in rp_client_call.
/// RP_CLIENT_ARG when no reply is outstanding.
RP_API rp_client_error_kind rp_client_recv(rp_client *c, uint64_t *id, char **result_json,
                                           rp_client_error *err);

/// How many sent requests still wait for rp_client_recv.
RP_API size_t rp_client_pending(const rp_client *c);

/// Raw access (repose-cli --raw): sends `len` bytes of `line` followed by
/// "\n", unchanged and untracked (the caller matches replies itself; a
/// notification gets none).  Do not mix with pending rp_client_send requests.
RP_API rp_client_error_kind rp_client_send_line(rp_client *c, const char *line, size_t len,
                                                rp_client_error *err);

/// Raw access: receives the next line the server sends, without its "\n"
/// (and "\r"), NUL-terminated, malloc'ed into *line (caller frees), its length
/// in *len (when not NULL).  RP_CLIENT_CLOSED at the end of the stream; a
/// final line without "\n" is still returned first.
RP_API rp_client_error_kind rp_client_recv_line(rp_client *c, char **line, size_t *len,
                                                rp_client_error *err);

/// Raw access: says that nothing more will be sent (shutdown of the write
/// side).  The server answers what it has read and then closes, so reading
/// lines until RP_CLIENT_CLOSED gets every reply.
RP_API rp_client_error_kind rp_client_shutdown_write(rp_client *c, rp_client_error *err);

/* ---- watch notifications -----------------------------------------------------
 *
 * After scene.watch the server sends notifications on the connection
 * (proto/PROTOCOL.md, "Watch notifications"): lines without an id, between
 * the replies.  The client tells them from replies: while a call (or
 * rp_client_recv) waits for its reply, the notifications that come first are
 * queued, in order, and rp_client_next_notification returns them before it
 * reads anything more.  Raw access (rp_client_recv_line) sees every line
 * itself and does not use the queue.  A client that watches must take its
 * notifications: the queue has no bound of its own (the server's buffer
 * bounds what one connection is sent before it resyncs). */

/// One notification.  Strings are malloc'ed; release them with
/// rp_client_notification_free.
typedef struct rp_client_notification {
    char *method;      ///< "scene.changed", "scene.deleted", "scene.resync" (or a newer one)
    uint64_t watch;    ///< params.watch: the watch id scene.watch returned (0 if none)
    char *scene;       ///< params.scene, or NULL
    uint64_t revision; ///< params.revision (0 if none)
    char *put;         ///< scene.changed: params.put as the server wrote it, a JSON object
                       ///< {id: shape} with the shapes as they now are; else NULL
    char *removed;     ///< scene.changed: params.removed as written, a JSON array of ids;
                       ///< else NULL
    char *params;      ///< params as the server wrote them (JSON text), or NULL
    char *line;        ///< the whole line as received, without its "\n" (compact JSON)
} rp_client_notification;

/// A zero initialiser for rp_client_notification.
#define RP_CLIENT_NOTIFICATION_INIT                                                                \
    {                                                                                              \
        NULL, 0, NULL, 0, NULL, NULL, NULL, NULL                                                   \
    }

/// Frees n's strings and zeroes it.  NULL is a no-op.
RP_API void rp_client_notification_free(rp_client_notification *n);

/// scene.watch {scene, since?}: since is NULL for changes from now on, or
/// points to the revision the caller has seen (the server replays what came
/// after it, or sends scene.resync when it no longer has that).  On success
/// *watch_id (when not NULL) receives the watch id and *revision (when not
/// NULL) the scene's current revision.  A missing scene is RP_CLIENT_RPC
/// -32001; too many watches on the connection -32004.
RP_API rp_client_error_kind rp_client_scene_watch(rp_client *c, const char *scene,
                                                  const uint64_t *since, uint64_t *watch_id,
                                                  uint64_t *revision, rp_client_error *err);

/// scene.unwatch {watch}.  Notifications of that watch already queued stay
/// queued.  A watch this connection does not hold (or one that ended with
/// scene.deleted) is RP_CLIENT_RPC -32001.
RP_API rp_client_error_kind rp_client_scene_unwatch(rp_client *c, uint64_t watch_id,
                                                    rp_client_error *err);

/// The next notification, into *n (reset on entry; caller frees with
/// rp_client_notification_free): the oldest queued one, else the next the
/// server sends, waiting at most timeout_ms: < 0 waits for ever, 0 takes only
/// what has already arrived.  RP_CLIENT_TIMEOUT when none came in time; the
/// connection stays usable (unlike a call's timeout).  While pipelined
/// replies are outstanding (rp_client_send) it returns queued notifications
/// only, and RP_CLIENT_ARG when there are none (rp_client_recv first).  A
/// reply line with no request outstanding, or a scene.* notification without
/// its members, is RP_CLIENT_PROTOCOL (and closes the connection, as every
/// PROTOCOL error does).
RP_API rp_client_error_kind rp_client_next_notification(rp_client *c, int timeout_ms,
                                                        rp_client_notification *n,
                                                        rp_client_error *err);

/// How many notifications are queued (received, not yet taken).
RP_API size_t rp_client_notifications_queued(const rp_client *c);

#ifdef __cplusplus
}
#endif

#endif /* REPOSE_CLIENT_H */
