/* SPDX-License-Identifier: MIT */
/*
 * JSON codec for the daemon: decoding request values (cJSON trees) into
 * geometry types with path-precise errors, a direct JSON writer for replies,
 * and a pre-scan that checks nesting depth and UTF-8 before cJSON sees a line.
 *
 * Only the server links this; the geometry core and the scene store know
 * nothing of JSON.
 *
 * Paths: every decoder takes the path of the value it is given, written the
 * way clients see it ("params.shapes.post.capsule.radius",
 * "params.frames[3].rotation.w"), and on failure fills rp_codec_err with the
 * path of the offending value and a short reason ("must be finite and >= 0").
 */
#ifndef REPOSE_CODEC_H
#define REPOSE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "repose/geometry.h"
#include "repose/scene.h" /* rp_joint_def, rp_model_def */
#include "util/ids.h"
#include "util/utf8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest path and reason kept; longer ones are truncated (still useful). */
#define RP_CODEC_PATH_MAX 256
#define RP_CODEC_REASON_MAX 160

/* Names: RP_NAME_MAX and their characters are in util/ids.h. */

/* Tolerance for unit quaternions and rotation matrices (absolute, on
 * unit-scale quantities), as in the protocol. */
#define RP_CODEC_ROTATION_TOL 1e-6

typedef struct rp_codec_err {
    char path[RP_CODEC_PATH_MAX];     /* e.g. "params.shapes.post.capsule.radius" */
    char reason[RP_CODEC_REASON_MAX]; /* e.g. "must be finite and >= 0" */
} rp_codec_err;

/* Sets err->path to `path` and err->reason to the formatted reason; returns
 * false so decoders can `return rp_codec_fail(...)`. */
bool rp_codec_fail(rp_codec_err *err, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Appends ".key" (object member) or "[index]" (array element) to a path,
 * writing into dst (RP_CODEC_PATH_MAX bytes).  Returns dst. */
char *rp_codec_path_key(char *dst, const char *path, const char *key);
char *rp_codec_path_index(char *dst, const char *path, size_t index);

/* ---- decoders: return true on success; on failure fill err, return false,
 * and leave *out unspecified.  `j` may be NULL (member missing): decoders
 * report "is required". ------------------------------------------------- */

/* [x, y, z], each a finite number. */
bool rp_codec_vec3(const cJSON *j, const char *path, rp_vec3 *out, rp_codec_err *err);

/* {"sphere": {"center": vec3, "radius": r}},
 * {"capsule": {"a": vec3, "b": vec3, "radius": r}},
 * {"box": {"center": vec3, "half_extents": vec3, "rotation"?: quaternion}}
 * or {"halfspace": {"normal": vec3, "offset": d}}: exactly one key at the
 * outer level, no unknown or duplicate keys anywhere, r and the half
 * extents finite and >= 0.  The rotation is {"w","x","y","z"} with norm
 * within 1e-6 of 1 (identity when absent), the normal non-zero; both are
 * normalised by rp_box_new / rp_halfspace_new (the offset divided by the
 * normal's length), which keep one already unit bit for bit, so that what
 * rp_jw_shape writes decodes to the same shape. */
bool rp_codec_shape(const cJSON *j, const char *path, rp_shape *out, rp_codec_err *err);

/* A shape as rp_codec_shape decodes it that must be a sphere or a capsule:
 * the query shapes of scene.distance and scene.check ("query",
 * proto/PROTOCOL.md).  A box or a half-space is refused at `path`: "must be
 * a sphere or a capsule: boxes and half-spaces are not <role> shapes". */
bool rp_codec_sphere_or_capsule(const cJSON *j, const char *path, const char *role, rp_shape *out,
                                rp_codec_err *err);

/* A shape that may be part of a robot: model links ("model") and attached
 * shapes ("attached") are spheres, capsules or boxes; a half-space is
 * refused at `path`. */
bool rp_codec_link_shape(const cJSON *j, const char *path, const char *role, rp_shape *out,
                         rp_codec_err *err);

/* {"translation": vec3?, "rotation": {"w","x","y","z"}?} (quaternion must
 * have norm within 1e-6 of 1; it is then normalised) or
 * {"matrix": [[r00,r01,r02,tx],[r10,r11,r12,ty],[r20,r21,r22,tz]]} with an
 * optional 4th row [0,0,0,1]; rotation orthonormal with det +1 within 1e-6.
 * Missing parts are identity. */
bool rp_codec_pose(const cJSON *j, const char *path, rp_transform *out, rp_codec_err *err);

/* Scene/model name and shape/link id validation (strings). *out points
 * into the cJSON tree. */
bool rp_codec_name(const cJSON *j, const char *path, const char **out, rp_codec_err *err);
bool rp_codec_id(const cJSON *j, const char *path, const char **out, rp_codec_err *err);

/* A finite number; a finite number >= 0; a boolean; a non-negative integer
 * that a double represents exactly (<= 2^53). */
bool rp_codec_number(const cJSON *j, const char *path, double *out, rp_codec_err *err);
bool rp_codec_nonneg(const cJSON *j, const char *path, double *out, rp_codec_err *err);
bool rp_codec_bool(const cJSON *j, const char *path, bool *out, rp_codec_err *err);
bool rp_codec_uint(const cJSON *j, const char *path, uint64_t *out, rp_codec_err *err);
/* A string ("must be a string"); *out points into the cJSON tree (params
 * like "report" and "token"). */
bool rp_codec_string(const cJSON *j, const char *path, const char **out, rp_codec_err *err);

/* Checks that object `j` (at `path`) is an object whose member names are all
 * in the NULL-terminated list `allowed`, each at most once.  Reports
 * "must be an object", "unknown key" (path = path.key) or "duplicate key". */
bool rp_codec_object_keys(const cJSON *j, const char *path, const char *const *allowed,
                          rp_codec_err *err);

/* Checks that object `j` (a map of any size, e.g. "shapes": {id: shape})
 * names no member twice: O(n), with a temporary hash table for more than 16
 * members.  RP_OK; RP_ERR_INVALID_ARG with err filled ("must be an object",
 * or "duplicate key" at path.key of the second occurrence); RP_ERR_NOMEM
 * when the table cannot be allocated (err untouched).  cJSON keeps
 * duplicate members, so without this the last or first one would silently
 * win. */
rp_status rp_codec_object_unique(const cJSON *j, const char *path, rp_codec_err *err);

/* rp_utf8_trim and rp_utf8_copy (cutting reasons and paths at characters)
 * are in util/utf8.h. */

/* ---- pre-scan ------------------------------------------------------------ */

typedef enum rp_scan_result {
    RP_SCAN_OK,
    RP_SCAN_TOO_DEEP,   /* nesting deeper than max_depth (outermost bracket counts as 1) */
    RP_SCAN_BAD_UTF8,   /* invalid UTF-8 anywhere in the line (offset set) */
    RP_SCAN_CONTROL,    /* a control byte: in a string, or between tokens other than
                          space, tab, CR, LF */
    RP_SCAN_BAD_NUMBER, /* a number token outside strings that is not a strict JSON
                           number (01, 1., .5, +1, 1e, -, 0x10; offset at its start) */
    RP_SCAN_NUL_ESCAPE  /* \u0000 in a string (cJSON would truncate the string); only
                           when the line has no other problem (offset of the first) */
} rp_scan_result;

/* One pass over a request line: validates UTF-8 (overlongs, surrogates and
 * code points > U+10FFFF are invalid), measures bracket depth outside
 * strings and checks every number token outside strings against the strict
 * grammar of RFC 8259 (cJSON's own number parsing takes 01, 1. and -01.50).
 * A number token starts at a digit, '-', '+' or '.' that does not continue
 * a word (a letter, digit or one of "+-." before it: true1 and NaN are left
 * to cJSON) and runs while those bytes do, so 0x10, 1.e5 and 1e+ are one
 * bad token each.  Does not otherwise validate JSON (cJSON does).  The
 * first problem in the line is reported, except that a \u0000 escape is
 * reported only when nothing else is wrong anywhere in the line.  *offset
 * gets the byte offset of the problem. */
rp_scan_result rp_json_prescan(const char *buf, size_t len, int max_depth, size_t *offset);

/* The byte that stands for a \u0000 escape in rp_json_mark_nul_escapes'
 * copy: no valid UTF-8 text holds it, and cJSON keeps it in the decoded
 * string, so a parsed string that holds it had a \u0000 there. */
#define RP_JSON_NUL_MARK 0xFF
/* The length of one \u0000 escape, which the copy shortens to one byte. */
#define RP_JSON_NUL_ESCAPE_LEN 6

/* Copies the line buf[0..len) to dst (len bytes of room) with each \u0000
 * escape inside a string replaced by the byte RP_JSON_NUL_MARK, the escapes
 * found exactly as rp_json_prescan finds them.  Returns the copy's length. */
size_t rp_json_mark_nul_escapes(const char *buf, size_t len, char *dst);

/* cJSON reports an allocation that failed during a parse as a syntax error
 * at wherever it was.  So the allocators given to cJSON (cJSON_InitHooks:
 * the daemon's arena, the tests' counting allocator) call
 * rp_json_note_oom() when they return NULL, and the caller of a failed parse
 * asks rp_json_take_oom(), which also clears the flag, whether memory ran
 * out.  cJSON's hooks are process-wide; the flag is per thread, since the
 * daemon parses on its event loop and on its query workers at once (a
 * worker's failed allocation concerns its own parse only).  With cJSON's
 * default allocator nothing notes a failure and a parse that ran out of
 * memory still looks like invalid JSON. */
void rp_json_note_oom(void);
bool rp_json_take_oom(void);

/* ---- numbers straight from the text (numbers.c) --------------------------- */

/* Parses a strict JSON number at the start of s[0..n) into the correctly
 * rounded double (what strtod and cJSON give).  Returns the bytes it spans,
 * or 0 when s does not start with one or its value overflows. */
size_t rp_json_number(const char *s, size_t n, double *out);

/* The length of the strict JSON number (RFC 8259:
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?) at the start of s[0..n),
 * or 0 when s does not start with one or a '.' or an 'e' after its digits
 * is not followed by digits (as for rp_json_number).  The grammar only: no
 * value, so no overflow.  rp_json_number takes exactly these bytes when it
 * succeeds. */
size_t rp_json_number_span(const char *s, size_t n);

/* A table of numbers: rows of width values each, row after row in v (n =
 * rows * width values; heap, rp_num_rows_free). */
typedef struct rp_num_rows {
    double *v;
    size_t n, rows, width;
} rp_num_rows;

/* Parses s[0..n), which starts with '[', as an array of arrays of strict
 * JSON numbers, all rows of one width (JSON whitespace allowed anywhere
 * between tokens).  Returns the bytes the outer array spans, or 0 (with
 * *out empty) for anything else: the caller then takes the general path. */
size_t rp_json_rows(const char *s, size_t n, rp_num_rows *out);
void rp_num_rows_free(rp_num_rows *r);

/* For a request line holding one JSON object whose "method" is
 * "check.batch" and whose "params" object has one "joints" member that
 * rp_json_rows takes: that value's span [*start, *end) and its table in
 * *rows (one pass over the line).  False, with *rows empty, for any other
 * line, and when keys carry escapes or "method", "params" or "joints"
 * occur twice.  The rest of the line is not validated. */
bool rp_json_batch_joints(const char *line, size_t len, size_t *start, size_t *end,
                          rp_num_rows *rows);

/* ---- writer -------------------------------------------------------------- */

/* A growable output buffer with JSON helpers that insert commas
 * automatically.  Nesting up to RP_JW_MAX_DEPTH.  On allocation failure
 * `oom` is set, and when a write would take the length past `limit` `over`
 * is set; either way further writes are ignored until
 * rp_jw_clear_failure(), and the caller checks rp_jw_failed() once (or in
 * the loops of a long reply, to stop early). */
#define RP_JW_MAX_DEPTH 64

typedef struct rp_jw {
    char *buf; /* owned; NUL-terminated when len > 0 */
    size_t len, cap;
    size_t limit; /* most bytes len may reach (SIZE_MAX: none) */
    bool oom;     /* an allocation failed */
    bool over;    /* a write would have passed limit */
    int depth;
    bool need_comma[RP_JW_MAX_DEPTH + 1]; /* per open container: next item needs ',' */
    bool after_key; /* a key was just written; the value follows without ',' */
} rp_jw;

void rp_jw_init(rp_jw *w);
void rp_jw_free(rp_jw *w);  /* frees buf; rp_jw_free(NULL) is a no-op */
void rp_jw_reset(rp_jw *w); /* len = 0, keeps the allocation */
/* Takes back everything written since `mark` (a copy of *w taken earlier):
 * length and comma state return to the mark; the allocation and the oom
 * flag stay as they are now. */
void rp_jw_rewind(rp_jw *w, const rp_jw *mark);
/* Reserve capacity for n more bytes; false (and oom or over) when
 * impossible. */
bool rp_jw_reserve(rp_jw *w, size_t n);
/* Whether writes are being dropped (oom or over). */
static inline bool rp_jw_failed(const rp_jw *w)
{
    return w->oom || w->over;
}
/* Sets the most bytes the buffer may hold (SIZE_MAX: no limit). */
void rp_jw_set_limit(rp_jw *w, size_t limit);
/* Clears oom and over, so that writes are accepted again (after the caller
 * rewound what a failed reply had written). */
void rp_jw_clear_failure(rp_jw *w);
/* Ends a line: appends '\n' and returns to the top level, so the next
 * value starts a new JSON text without a comma. */
void rp_jw_end_line(rp_jw *w);
/* Hands the buffer (len bytes) to the caller, who frees it; the writer is
 * left empty with the same limit. */
char *rp_jw_detach(rp_jw *w, size_t *len);
/* Empties the writer; keeps its allocation for reuse unless it is larger
 * than `keep` bytes. */
void rp_jw_release(rp_jw *w, size_t keep);

void rp_jw_raw(rp_jw *w, const char *s, size_t n); /* verbatim, no comma logic */
void rp_jw_object_begin(rp_jw *w);
void rp_jw_object_end(rp_jw *w);
void rp_jw_array_begin(rp_jw *w);
void rp_jw_array_end(rp_jw *w);
void rp_jw_key(rp_jw *w, const char *key); /* escaped */
/* A key already quoted and followed by ':' (e.g. "\"scene\":"), written
 * verbatim: the fast path for keys known at compile time.  RP_JW_KEY builds
 * the quoted form of a string literal that needs no escaping. */
void rp_jw_key_lit(rp_jw *w, const char *quoted, size_t n);
#define RP_JW_KEY(w, lit) rp_jw_key_lit((w), "\"" lit "\":", sizeof("\"" lit "\":") - 1)
void rp_jw_string(rp_jw *w, const char *s); /* escaped, UTF-8 passed through */
void rp_jw_string_n(rp_jw *w, const char *s, size_t n);
/* Shortest decimal that parses back to the same double; non-finite -> null. */
void rp_jw_double(rp_jw *w, double x);
void rp_jw_int(rp_jw *w, int64_t x);
void rp_jw_uint(rp_jw *w, uint64_t x);
void rp_jw_bool(rp_jw *w, bool b);
void rp_jw_null(rp_jw *w);
/* A pre-serialised JSON value (e.g. a request id printed by cJSON). */
void rp_jw_value_raw(rp_jw *w, const char *json, size_t n);
void rp_jw_vec3(rp_jw *w, rp_vec3 v);          /* [x,y,z] */
void rp_jw_shape(rp_jw *w, const rp_shape *s); /* the protocol's shape object */
/* A point cloud as scene.get and the journal write it: {"radius", "points_f32"
 * (base64 of its centres, little-endian float32 triples), "count"}. */
void rp_jw_cloud(rp_jw *w, const rp_cloud *c);
/* The id of scene storage index `index`: a shape's id, or "cloud/k" for
 * sphere k of a cloud. */
void rp_jw_scene_id(rp_jw *w, const rp_scene *sc, size_t index);
/* A base64 string of n bytes. */
void rp_jw_base64(rp_jw *w, const unsigned char *bytes, size_t n);
/* A pose as {"matrix":[[r00,r01,r02,tx],[r10,r11,r12,ty],[r20,r21,r22,tz]]}:
 * rp_codec_pose reads it back to the same bits. */
void rp_jw_pose(rp_jw *w, const rp_transform *tf);
/* An object of scene sc as scene.put takes it and scene.get gives it:
 * {"pose": pose, "shapes": {id: shape}} (its shapes in its own frame),
 * and "attached": {"robot", "link", "rel": pose} when it is attached. */
void rp_jw_object(rp_jw *w, const rp_scene *sc, const rp_object *o);
/* A robot instance as scene.get gives it: {"model": name, "joints":
 * [values], "base": pose}. */
void rp_jw_robot(rp_jw *w, const rp_object *o);
/* A robot instance's state as the journal and scene.changed carry it:
 * {"model"?: model, "joints"?: [the rp_model_dof(m) values of q],
 * "base"?: pose}, each part left out when NULL (joints also when m is). */
void rp_jw_robot_state(rp_jw *w, const char *model, const rp_model *m, const double *q,
                       const rp_transform *base);
/* One link shape as model.put takes it and model.get gives it: its id,
 * then its tree link (`link`, a kinematic model) or its frame (link NULL:
 * the frame index, null for the base), then its shape. */
void rp_jw_link(rp_jw *w, const rp_link *l, const char *link);
/* One joint as model.put takes it and model.get gives it. */
void rp_jw_joint_def(rp_jw *w, const rp_joint_def *j);
/* The params of the model.put that defines model `name` as d does, in the
 * JSON form (proto/PROTOCOL.md, model.put): frame-indexed links, or a
 * kinematic tree with its links in order (tree_links), shapes, joints and
 * default positions; the journal's record of a model (persistence). */
void rp_jw_model_def(rp_jw *w, const char *name, const rp_model_def *d);
/* The member "mesh_covers": [{link, spheres, triangles, overshoot}] of a
 * model whose links were covered from meshes; nothing when none. */
void rp_jw_mesh_covers(rp_jw *w, const rp_model_def *d);
/* The members "groups" {name: [joint]}, "states" [{name, group, joints
 * {joint: value}}], "end_effectors" [{name, parent_link, group,
 * parent_group?}] and "passive_joints" [joint] of a model with an SRDF;
 * each only when not empty. */
void rp_jw_model_srdf(rp_jw *w, const rp_model_def *d);
/* Writes a cJSON value (used to echo request ids). */
void rp_jw_cjson(rp_jw *w, const cJSON *j);

/* Formats the shortest round-trip representation of a finite double into
 * buf (at least 32 bytes); returns the length. */
size_t rp_format_double(char *buf, double x);

/* Base64 (base64.c): strict RFC 4648 with '=' padding.  decode writes at
 * most rp_base64_decoded_max(len) bytes to out; false with *why a reason
 * for malformed text. */
size_t rp_base64_decoded_max(size_t len);
bool rp_base64_decode(const char *s, size_t len, unsigned char *out, size_t *n_out,
                      const char **why);
size_t rp_base64_encoded_len(size_t n);
void rp_base64_encode(const unsigned char *in, size_t n, char *out); /* no NUL */

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_CODEC_H */
