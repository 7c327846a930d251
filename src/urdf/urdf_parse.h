/* SPDX-License-Identifier: MIT */
/*
 * The state of a URDF/SRDF parse, shared by the two files of the reader:
 * urdf.c (expat's handlers, error reporting, the result) and urdf_elems.c
 * (what each element does).  Private to those two files.
 */
#ifndef REPOSE_CODEC_URDF_PARSE_H
#define REPOSE_CODEC_URDF_PARSE_H

#include <expat.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "urdf/urdf.h"
#include "util/strtab.h"

/* Bytes of document text quoted in a reason before "..." cuts it, and the
 * buffer rp_urdf_quote_ needs for that. */
#define RP_URDF_QUOTE_MAX 48
#define RP_URDF_QUOTE_BUF (RP_URDF_QUOTE_MAX + 4)

#if defined(__GNUC__)
#define PRINTF_LIKE(i, j) __attribute__((format(printf, i, j)))
#else
#define PRINTF_LIKE(i, j)
#endif

/* What the parse keeps of each element, with its line.  The def's arrays
 * are built from these at the end (urdf.c, build_def). */
typedef struct link_rec {
    const char *name;
    uint32_t hash;
    unsigned long line;
    size_t n_collisions;
} link_rec;

typedef struct joint_rec {
    rp_joint_def def;
    uint32_t hash;
    unsigned long line;
} joint_rec;

typedef struct shape_rec {
    rp_link link;     /* id and shape (frame unused: -1) */
    const char *name; /* the link's name */
    unsigned long line;
} shape_rec;

typedef struct pair_rec {
    const char *a, *b;
    unsigned long line; /* SRDF line; 0 for an adjacency pair */
} pair_rec;

/* SRDF <group> members, <group_state> joints, <end_effector>s, resolved
 * into the def's groups and states once the documents are read
 * (rp_urdf_resolve_srdf_). */
typedef enum member_kind { M_JOINT, M_LINK, M_CHAIN, M_GROUP } member_kind;
typedef struct member_rec {
    member_kind kind;
    const char *a, *b; /* name; or chain base, tip */
    unsigned long line;
} member_rec;

typedef struct group_rec {
    const char *name;
    unsigned long line;
    size_t first, n; /* members[first..first+n) */
    /* Resolved: joint names (into u's strings), in URDF joint order. */
    const char **joints;
    size_t n_joints;
    int mark; /* resolution: 0 new, 1 in progress, 2 done */
} group_rec;

typedef struct state_rec {
    const char *name, *group;
    unsigned long line;
    size_t first, n; /* state_joints / state_values[first..first+n) */
} state_rec;

typedef struct str_block {
    struct str_block *next;
    size_t used, cap;
    char data[];
} str_block;

struct rp_urdf {
    rp_model_def def;
    link_rec *links;
    size_t n_links, cap_links;
    joint_rec *joints;
    size_t n_joints, cap_joints;
    shape_rec *shapes;
    size_t n_shapes, cap_shapes;
    pair_rec *pairs;
    size_t n_pairs, cap_pairs;
    rp_urdf_mesh *meshes; /* <mesh> collisions, in document order */
    size_t n_meshes, cap_meshes;
    rp_mesh_cover *covers; /* rp_urdf_cover_meshes' (the def's mesh_covers) */
    size_t n_covers;
    member_rec *members;
    size_t n_members, cap_members;
    group_rec *groups;
    size_t n_groups, cap_groups;
    state_rec *states;
    size_t n_states, cap_states;
    const char **state_joints;
    double *state_values;
    size_t n_state_joints, cap_state_joints, cap_state_values;
    rp_end_effector_def *effs;
    unsigned long *eff_lines;
    size_t n_effs, cap_effs, cap_eff_lines;
    const char **passive;
    size_t n_passive, cap_passive;
    /* The def's SRDF arrays, built from the records at the end. */
    rp_group_def *def_groups;
    rp_state_def *def_states;
    rp_strtab link_tab, joint_tab; /* names -> indices into links, joints */
    str_block *strings;
    /* The def's arrays, built from the records at the end. */
    rp_link *def_links;
    const char **def_shape_links, **def_link_names, **def_pairs;
    rp_joint_def *def_joints;
};

/* Elements the handlers act on; everything else is skipped whole. */
typedef enum elem {
    E_ROBOT,
    E_SROBOT,
    E_LINK,
    E_COLLISION,
    E_C_ORIGIN,
    E_GEOMETRY,
    E_SPHERE,
    E_CYLINDER,
    E_CAPSULE,
    E_BOX,
    E_MESH,
    E_JOINT,
    E_J_PARENT,
    E_J_CHILD,
    E_J_ORIGIN,
    E_J_AXIS,
    E_J_LIMIT,
    E_J_MIMIC,
    E_DISABLE,
    E_GROUP,
    E_G_MEMBER, /* <joint>, <link>, <chain> or <group> in a <group> */
    E_STATE,
    E_S_JOINT,
    E_EEF,
    E_PASSIVE,
    E_SKIP
} elem;

/* Processed elements nest at most 5 deep (robot/link/collision/geometry/box). */
#define MAX_DEPTH 8

/* The state of one parse (of the URDF, then of the SRDF). */
typedef struct ctx {
    XML_Parser xp;
    rp_urdf *u;
    const rp_urdf_opts *opts;
    rp_urdf_error *err;
    rp_urdf_status status;
    bool srdf;
    size_t skip;  /* > 0: that many elements of a skipped subtree are open */
    size_t depth; /* processed elements open */
    elem stack[MAX_DEPTH];
    size_t path_len[MAX_DEPTH]; /* strlen(path) before stack[i] was entered */
    char path[256];             /* the `where` of the innermost open element */
    size_t n_link_elems, n_joint_elems, n_disable;
    size_t n_group_elems, n_state_elems, n_eef_elems, n_passive_elems;
    size_t group, state; /* the open SRDF <group> / <group_state>: SIZE_MAX when refused */
    size_t link;         /* the open <link>: index into u->links */
    struct {
        unsigned long line;
        bool has_origin, has_geometry;
        elem kind; /* E_SPHERE.. E_BOX, or E_SKIP before the shape */
        double dims[3];
        rp_transform origin;
        const char *mesh_uri; /* E_MESH: filename (kept in u's strings) */
        rp_vec3 mesh_scale;
    } coll;          /* the open <collision> */
    joint_rec joint; /* the open <joint> */
    unsigned seen;   /* its children seen, bit (e - E_J_PARENT) */
} ctx;

/* ---- urdf.c: failing ------------------------------------------------------ */

/* The first failure of a parse is kept (status, where = the current path,
 * line, reason "where: message") and stops expat; later ones change
 * nothing, since expat may still call a handler.  rp_urdf_fail_: invalid,
 * at the current line; _at: invalid at `line` (an element's start, found
 * wanting at its end); _limit: RP_URDF_LIMIT, `max` and the daemon's `name`
 * of the limit; _nomem: out of memory, with no place in the document. */
PRINTF_LIKE(2, 3) void rp_urdf_fail_(ctx *c, const char *fmt, ...);
PRINTF_LIKE(3, 4) void rp_urdf_fail_at_(ctx *c, unsigned long line, const char *fmt, ...);
PRINTF_LIKE(4, 5)
void rp_urdf_fail_limit_(ctx *c, size_t max, const char *name, const char *fmt, ...);
void rp_urdf_fail_nomem_(ctx *c);

/* Document text fit to quote in a reason: at most RP_URDF_QUOTE_MAX bytes
 * cut between characters (then "..."), control characters and bytes that
 * are not UTF-8 replaced by '?'.  Returns buf. */
const char *rp_urdf_quote_(char buf[RP_URDF_QUOTE_BUF], const char *s);

/* Appends a segment ("link[a]", ".collision[0]") to c->path, which the
 * element's end takes back off. */
PRINTF_LIKE(2, 3) void rp_urdf_push_path_(ctx *c, const char *fmt, ...);

/* ---- urdf_elems.c: the elements ------------------------------------------- */

/* Sets up u's link and joint name tables. */
void rp_urdf_tables_init_(rp_urdf *u);

/* Element e (named `name`, with expat's attribute list) starts / ends. */
void rp_urdf_open_(ctx *c, elem e, const char *name, const XML_Char **atts);
void rp_urdf_close_(ctx *c, elem e);

/* After both documents: the groups' members resolved into joint names
 * (chains walked, subgroups merged, cycles refused). */
void rp_urdf_resolve_srdf_(ctx *c);

/* (Re)builds u->def's arrays from the records (urdf.c); false when out
 * of memory. */
bool rp_urdf_build_def_(rp_urdf *u);

/* opts.allow_adjacent: appends (parent, child) of every joint whose two
 * links exist, after the SRDF's pairs. */
void rp_urdf_add_adjacent_(ctx *c);

#endif /* REPOSE_CODEC_URDF_PARSE_H */
