/* SPDX-License-Identifier: MIT */
/*
 * URDF (and SRDF) import: a robot description as XML text into the
 * kinematic form of rp_model_def (include/repose/scene.h), read with
 * libexpat.  The mapping (which elements count, how cylinders become
 * capsules and boxes boxes, what is refused) is documented at the top of
 * urdf.c and, for users, in proto/URDF.md.
 *
 * What this checks: the XML, the elements and attributes it reads, names,
 * numbers, duplicate link and joint names, the SRDF's link names, and the
 * limits in rp_urdf_opts.  What it leaves to rp_store_model_put: the shape
 * of the tree (a joint naming a missing link, cycles, several roots, a link
 * with two parents), zero axes and mimic references.  The rp_urdf_*_line
 * functions map the indices of an rp_model_error back to document lines.
 *
 * Not thread-safe per object; separate parses may run in parallel.
 */
#ifndef REPOSE_CODEC_URDF_H
#define REPOSE_CODEC_URDF_H

#include <stdbool.h>
#include <stddef.h>

#include "repose/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed document: the model definition and every string and array it
 * points into.  Made by rp_urdf_parse, freed by rp_urdf_free. */
typedef struct rp_urdf rp_urdf;

typedef enum rp_urdf_status {
    RP_URDF_OK,
    RP_URDF_INVALID, /* the document is malformed or asks for what is not supported */
    RP_URDF_LIMIT,   /* it exceeds one of rp_urdf_opts' limits */
    RP_URDF_NOMEM    /* out of memory (ours or expat's) */
} rp_urdf_status;

/* Limits are checked while parsing, so an oversized document stops early.
 * Zero means no limit. */
typedef struct rp_urdf_opts {
    size_t max_shapes;   /* shapes of the model (def.n_links): one per <collision> */
    size_t max_links;    /* <link> elements, and <joint> elements, each */
    size_t max_pairs;    /* allowed pairs: SRDF <disable_collisions> plus adjacency */
    bool allow_adjacent; /* add (parent, child) of every joint as an allowed pair */
} rp_urdf_opts;

/* Why a parse failed.  Every string is NUL-terminated valid UTF-8 (text
 * quoted from the document is cut between characters and its invalid or
 * control bytes replaced by '?'). */
typedef struct rp_urdf_error {
    bool in_srdf;           /* the problem is in the SRDF document */
    unsigned long line;     /* 1-based line in that document; 0 when unknown */
    char where[256];        /* the element, e.g. "link[forearm].collision[0].geometry.mesh",
                               "joint[j3].limit", "disable_collisions[2]"; an element
                               without a usable name is numbered among its kind:
                               "link[#3]".  "" for the document as a whole. */
    char reason[256];       /* a sentence naming the element, e.g.
                               "joint[j3].limit: lower=\"nan\" is not a finite number" */
    size_t limit_max;       /* RP_URDF_LIMIT: the limit that was exceeded */
    const char *limit_name; /* RP_URDF_LIMIT: the daemon's name for it, "max_model_links"
                               (max_shapes, max_links) or "max_allowed_pairs"; else NULL */
} rp_urdf_error;

/* Parses `urdf` (urdf_len bytes, need not be NUL-terminated) and, when srdf
 * is not NULL, the SRDF document srdf[0..srdf_len).  `opts` may be NULL (no
 * limits, no adjacency pairs); `err` may be NULL.  On RP_URDF_OK *out
 * receives the result (free with rp_urdf_free); otherwise *out is NULL and
 * *err says why. */
rp_urdf_status rp_urdf_parse(const char *urdf, size_t urdf_len, const char *srdf, size_t srdf_len,
                             const rp_urdf_opts *opts, rp_urdf **out, rp_urdf_error *err);

/* The model definition (kinematic form): shapes with ids "LINK#k" (one per
 * <collision>), shape_links, link_names in document order, joints in
 * document order, SRDF pairs then adjacency pairs; safety_margin 0,
 * self_collision true, no defaults, no allowed_scene.  Owned by `u`; to change a field,
 * copy the struct (the arrays stay u's). */
const rp_model_def *rp_urdf_def(const rp_urdf *u);

/* Document lines (1-based; 0 for an index out of range) of what the def's
 * arrays came from, to report an rp_model_error against the document:
 * joints[i]'s <joint>, link_names[i]'s <link>, links[i]'s <collision>, and
 * allowed pair i's SRDF <disable_collisions> (0 for an adjacency pair). */
unsigned long rp_urdf_joint_line(const rp_urdf *u, size_t joint_index);
unsigned long rp_urdf_link_line(const rp_urdf *u, size_t link_name_index);
unsigned long rp_urdf_shape_line(const rp_urdf *u, size_t shape_index);
unsigned long rp_urdf_pair_line(const rp_urdf *u, size_t allowed_pair_index);

/* Why rp_store_model_put refused u's def (or a def with u's joints and
 * links and more allowed pairs) with *me, as a sentence naming the joint or
 * link and its line, into buf[0..cap).  False for the problems that a def
 * read from a document cannot have (the caller words those). */
bool rp_urdf_model_reason(const rp_urdf *u, const rp_model_def *def, const rp_model_error *me,
                          char *buf, size_t cap);

/* A <collision> whose geometry is a <mesh>: it makes no shape until
 * rp_urdf_add_spheres gives its link the spheres that cover it (the
 * caller reads the file named uri, src/mesh/mesh.h, and spherizes it,
 * include/repose/spherize.h). */
typedef struct rp_urdf_mesh {
    const char *link;    /* the link's name */
    size_t collision;    /* the <collision>'s index among the link's */
    const char *uri;     /* the filename attribute as written */
    rp_vec3 scale;       /* the scale attribute (1 1 1 when absent) */
    rp_transform origin; /* the collision's <origin>: mesh frame -> link frame */
    unsigned long line;  /* of the <collision> */
} rp_urdf_mesh;

/* Longest mesh filename accepted, in bytes. */
#define RP_URDF_URI_MAX 1024

/* The largest count of one kind of SRDF element read (groups, group
 * members, states, state joints, end effectors, passive joints): each kind
 * counts against opts.max_links as links and joints do. */
size_t rp_urdf_srdf_count(const rp_urdf *u);

size_t rp_urdf_mesh_count(const rp_urdf *u);
const rp_urdf_mesh *rp_urdf_mesh_at(const rp_urdf *u, size_t i);

/* Gives link `link` the n spheres (in the link frame) as shapes
 * "LINK#sJ" (J from 0, after any it already has) and rebuilds the def
 * (rp_urdf_def's pointers change).  RP_URDF_LIMIT when the model would
 * exceed max_shapes shapes (0: no limit), RP_URDF_INVALID for a link u
 * lacks or a sphere that is not valid, RP_URDF_NOMEM. */
rp_urdf_status rp_urdf_add_spheres(rp_urdf *u, const char *link, const rp_sphere *s, size_t n,
                                   size_t max_shapes);

/* A mesh file as a client sent it: the URDF's filename and the bytes. */
typedef struct rp_urdf_mesh_file {
    const char *uri;
    const void *bytes;
    size_t len;
} rp_urdf_mesh_file;

/* Covers every link that has <mesh> collisions with spheres: reads each
 * mesh from files[] (by its uri as written; each uri once), scales it and
 * applies the collision's origin, spherizes all of a link's triangles
 * together (include/repose/spherize.h: max_spheres, max_overshoot) and
 * adds the spheres with rp_urdf_add_spheres.  max_triangles bounds the
 * triangles of one file and max_shapes the model's shapes (0: no limit).
 * The def's mesh_covers then say what each covered link got (in document
 * order).  On failure err names the
 * collision ("link[L].collision[k].geometry.mesh") and says why: a file not
 * sent, one that cannot be read, a limit. */
struct rp_spherize_opts;
rp_urdf_status rp_urdf_cover_meshes(rp_urdf *u, const rp_urdf_mesh_file *files, size_t n_files,
                                    const struct rp_spherize_opts *opts, size_t max_triangles,
                                    size_t max_shapes, rp_urdf_error *err);

/* Frees everything the parse made; the def and its strings go with it.
 * rp_urdf_free(NULL) does nothing. */
void rp_urdf_free(rp_urdf *u);

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_CODEC_URDF_H */
