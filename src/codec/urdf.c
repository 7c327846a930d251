/*
 * URDF + SRDF import (urdf.h): expat reads the XML, the handlers here keep
 * what the kinematic form of rp_model_def needs.  proto/URDF.md is the
 * user-facing version of these rules; keep the two in step.
 *
 * URDF:
 *  - The root element must be <robot>.  Only <link> and <joint> children of
 *    it are read; every other element (<material>, <gazebo>,
 *    <transmission>, unknown ones) is skipped with its whole subtree, as are
 *    <visual>, <inertial> and unknown children of a link, and unknown
 *    children of a joint (<dynamics>, <safety_controller>, ...).
 *  - <link name>: every link goes into link_names, in document order.  Link
 *    and joint names are 1-128 characters of [A-Za-z0-9_.:/-]; a name used
 *    twice (among links, or among joints) is refused.  At least one link.
 *  - Every <collision> of a link becomes shapes in the link's frame, with the
 *    collision's <origin xyz rpy> applied (R = Rz(yaw) Ry(pitch) Rx(roll)).
 *    Its <geometry> holds exactly one of:
 *      sphere radius          -> sphere;
 *      cylinder radius length -> capsule from z = -length/2 to +length/2 with
 *                                that radius (it encloses the cylinder);
 *      capsule radius length  -> the same capsule, exactly (an extension);
 *      box size="x y z"       -> 1..16 capsules whose union encloses the box
 *                                (rule and proof in urdf_geom.c);
 *      mesh                   -> refused: meshes are not supported.
 *    Dimensions must be finite and > 0.  Ids: "LINK#k" for the k-th
 *    collision of link LINK (from 0); a box's capsules are "LINK#k.j".
 *  - <joint name type>: revolute, continuous, prismatic or fixed (floating,
 *    planar and others are refused).  <parent link> and <child link> are
 *    required; <origin xyz rpy> defaults to zeros, <axis xyz> to 1 0 0;
 *    revolute and prismatic joints need <limit> (lower and upper default to
 *    0, lower > upper is refused); continuous and fixed joints ignore it;
 *    <mimic joint multiplier offset> (defaults 1, 0).  Each child element at
 *    most once.
 *  - Numbers are plain decimals, fully consumed and finite (rp_urdf_number_).
 *  - The tree itself (missing links, cycles, several roots, two parents,
 *    zero axes, mimic targets) is rp_store_model_put's to check.
 *
 * SRDF: root <robot>; each <disable_collisions link1 link2> child becomes an
 * allowed pair, and both links must be links of the URDF.  The rest is
 * skipped.  With opts.allow_adjacent, (parent, child) of every joint whose
 * two links exist follows as a pair (a joint naming a missing link is left
 * for the store to report).
 *
 * Security: any entity declaration stops the parse ("billion laughs",
 * external entities), external DTDs and parameter entities are never read,
 * and an entity reference expat would skip is refused.  The limits in
 * rp_urdf_opts are checked as elements arrive.
 */
#include "codec/urdf.h"

#include <expat.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/urdf_int.h"
#include "util/grow.h"
#include "util/strtab.h"

/* Bytes handed to expat per call: XML_Parse takes an int length. */
#define CHUNK_BYTES ((size_t)1 << 20)
/* Bytes of document text quoted in a reason before "..." cuts it. */
#define QUOTE_MAX 48
/* Strings are copied into blocks of this many bytes (more for a longer one). */
#define STRING_BLOCK 16384
/* The link and joint name tables hold uint32 indices. */
#define MAX_COUNT ((size_t)UINT32_MAX - 1)
#define R_NAME "must be 1-128 characters of [A-Za-z0-9_.:/-]"

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
    rp_strtab link_tab, joint_tab; /* names -> indices into links, joints */
    str_block *strings;
    /* The def's arrays, built from the records at the end. */
    rp_link *def_links;
    const char **def_shape_links, **def_link_names, **def_pairs;
    rp_joint_def *def_joints;
};

/* Elements the handlers act on; everything else is skipped whole. */
typedef enum elem {
    E_ROBOT, E_SROBOT, E_LINK, E_COLLISION, E_C_ORIGIN, E_GEOMETRY,
    E_SPHERE, E_CYLINDER, E_CAPSULE, E_BOX, E_MESH,
    E_JOINT, E_J_PARENT, E_J_CHILD, E_J_ORIGIN, E_J_AXIS, E_J_LIMIT, E_J_MIMIC,
    E_DISABLE, E_SKIP
} elem;

static const struct {
    elem parent;
    const char *name;
    elem e;
} children[] = {
    {E_ROBOT, "link", E_LINK},           {E_ROBOT, "joint", E_JOINT},
    {E_LINK, "collision", E_COLLISION},  {E_COLLISION, "origin", E_C_ORIGIN},
    {E_COLLISION, "geometry", E_GEOMETRY}, {E_GEOMETRY, "sphere", E_SPHERE},
    {E_GEOMETRY, "cylinder", E_CYLINDER}, {E_GEOMETRY, "capsule", E_CAPSULE},
    {E_GEOMETRY, "box", E_BOX},          {E_GEOMETRY, "mesh", E_MESH},
    {E_JOINT, "parent", E_J_PARENT},     {E_JOINT, "child", E_J_CHILD},
    {E_JOINT, "origin", E_J_ORIGIN},     {E_JOINT, "axis", E_J_AXIS},
    {E_JOINT, "limit", E_J_LIMIT},       {E_JOINT, "mimic", E_J_MIMIC},
    {E_SROBOT, "disable_collisions", E_DISABLE},
};

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
    size_t link; /* the open <link>: index into u->links */
    struct {
        unsigned long line;
        bool has_origin, has_geometry;
        elem kind; /* E_SPHERE.. E_BOX, or E_SKIP before the shape */
        double dims[3];
        rp_transform origin;
    } coll; /* the open <collision> */
    joint_rec joint;   /* the open <joint> */
    unsigned seen;     /* its children seen, bit (e - E_J_PARENT) */
} ctx;

/* ---- failing ----------------------------------------------------------- */

/* Length of a well-formed UTF-8 sequence at s (NUL-terminated), 0 if none. */
static size_t utf8_seq(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (len == 0 || s[0] > 0xF4)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    /* Overlong 3- and 4-byte forms, surrogates, and past U+10FFFF. */
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) ||
        (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))
        return 0;
    return len;
}

/* Document text fit to quote in a reason: at most QUOTE_MAX bytes cut
 * between characters (then "..."), control characters and bytes that are
 * not UTF-8 replaced by '?'.  expat hands us UTF-8 already; this makes the
 * reason's validity independent of that.  Returns buf. */
static const char *quote(char buf[QUOTE_MAX + 4], const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (*p) {
        size_t len = utf8_seq(p);
        if (n + (len ? len : 1) > QUOTE_MAX) {
            memcpy(buf + n, "...", 3);
            n += 3;
            break;
        }
        if (len == 0 || *p < 0x20 || *p == 0x7F) {
            buf[n++] = '?';
            p++;
        } else {
            memcpy(buf + n, p, len);
            n += len;
            p += len;
        }
    }
    buf[n] = '\0';
    return buf;
}

/* Appends s to dst (cap bytes, *len used), cut between characters. */
static void append(char *dst, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n >= cap)
        n = rp_utf8_trim(s, cap - 1 - *len);
    memcpy(dst + *len, s, n);
    *len += n;
    dst[*len] = '\0';
}

#if defined(__GNUC__)
#define PRINTF_LIKE(i, j) __attribute__((format(printf, i, j)))
#else
#define PRINTF_LIKE(i, j)
#endif

/* Records the first failure: status, where (the current path), line (0:
 * the parser's current line) and reason "where: message"; then stops
 * expat.  Later failures (expat may still call a handler) change nothing. */
PRINTF_LIKE(4, 0) static void vfail(ctx *c, rp_urdf_status st, unsigned long line,
                                    const char *fmt, va_list ap)
{
    if (c->status != RP_URDF_OK)
        return;
    c->status = st;
    rp_urdf_error *e = c->err;
    e->in_srdf = c->srdf;
    e->line = line ? line : c->xp ? (unsigned long)XML_GetCurrentLineNumber(c->xp) : 0;
    rp_utf8_copy(e->where, sizeof e->where, c->path);
    char msg[sizeof e->reason];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    if (n < 0)
        msg[0] = '\0';
    msg[rp_utf8_trim(msg, strlen(msg))] = '\0';
    size_t len = 0;
    e->reason[0] = '\0';
    if (c->path[0]) {
        append(e->reason, sizeof e->reason, &len, c->path);
        append(e->reason, sizeof e->reason, &len, ": ");
    }
    append(e->reason, sizeof e->reason, &len, msg);
    if (c->xp)
        XML_StopParser(c->xp, XML_FALSE);
}

/* RP_URDF_INVALID at the current line. */
PRINTF_LIKE(2, 3) static void fail(ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(c, RP_URDF_INVALID, 0, fmt, ap);
    va_end(ap);
}

/* RP_URDF_INVALID at `line` (an element's start, found wanting at its end). */
PRINTF_LIKE(3, 4) static void fail_at(ctx *c, unsigned long line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(c, RP_URDF_INVALID, line, fmt, ap);
    va_end(ap);
}

PRINTF_LIKE(4, 5) static void fail_limit(ctx *c, size_t max, const char *name, const char *fmt,
                                         ...)
{
    if (c->status != RP_URDF_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfail(c, RP_URDF_LIMIT, 0, fmt, ap);
    va_end(ap);
    c->err->limit_max = max;
    c->err->limit_name = name;
}

/* Out of memory has no place in the document: where is "". */
static void fail_nomem(ctx *c)
{
    if (c->status != RP_URDF_OK)
        return;
    c->path[0] = '\0';
    fail(c, "out of memory");
    c->status = RP_URDF_NOMEM;
}

/* ---- storage ------------------------------------------------------------- */

/* A copy of s in u's string blocks, or NULL (and the parse failed). */
static const char *keep(ctx *c, const char *s)
{
    rp_urdf *u = c->u;
    size_t n = strlen(s) + 1;
    str_block *b = u->strings;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > STRING_BLOCK ? n : STRING_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b) {
            fail_nomem(c);
            return NULL;
        }
        b->next = u->strings;
        b->used = 0;
        b->cap = cap;
        u->strings = b;
    }
    char *dst = b->data + b->used;
    memcpy(dst, s, n);
    b->used += n;
    return dst;
}

/* Room for one more element in an array of `count`; the array (maybe moved)
 * or NULL (and the parse failed). */
static void *room(ctx *c, void *arr, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return arr;
    void *p = rp_grow_(arr, cap, count + 1, size, 16);
    if (!p)
        fail_nomem(c);
    return p;
}

static const char *link_key(const void *ctx_, uint32_t v)
{
    return ((const rp_urdf *)ctx_)->links[v].name;
}
static uint32_t link_hash(const void *ctx_, uint32_t v)
{
    return ((const rp_urdf *)ctx_)->links[v].hash;
}
static const char *joint_key(const void *ctx_, uint32_t v)
{
    return ((const rp_urdf *)ctx_)->joints[v].def.name;
}
static uint32_t joint_hash(const void *ctx_, uint32_t v)
{
    return ((const rp_urdf *)ctx_)->joints[v].hash;
}

/* Index of link `name` in u->links, or SIZE_MAX. */
static size_t find_link(const rp_urdf *u, const char *name)
{
    size_t slot;
    if (!rp_strtab_find_(&u->link_tab, name, rp_strhash_(name), &slot))
        return SIZE_MAX;
    return u->link_tab.slots[slot];
}

/* ---- attributes ------------------------------------------------------------ */

static const char *attr(const XML_Char **atts, const char *name)
{
    for (; atts[0]; atts += 2)
        if (strcmp(atts[0], name) == 0)
            return atts[1];
    return NULL;
}

/* Attribute `name` as a number; `dflt` when absent unless `required`.
 * False (and the parse failed) otherwise. */
static bool num_attr(ctx *c, const XML_Char **atts, const char *name, bool required,
                     double dflt, double *out)
{
    const char *s = attr(atts, name);
    char q[QUOTE_MAX + 4];
    if (!s) {
        if (required)
            fail(c, "the %s attribute is required", name);
        *out = dflt;
        return !required;
    }
    if (!rp_urdf_number_(s, strlen(s), out)) {
        fail(c, "%s=\"%s\" is not a finite number", name, quote(q, s));
        return false;
    }
    return true;
}

/* A required number > 0 (a dimension). */
static bool dim_attr(ctx *c, const XML_Char **atts, const char *name, double *out)
{
    if (!num_attr(c, atts, name, true, 0, out))
        return false;
    if (!(*out > 0)) {
        fail(c, "%s=\"%s\" must be greater than 0", name, attr(atts, name));
        return false;
    }
    return true;
}

/* Attribute `name` as "x y z"; `dflt` when absent unless `required`. */
static bool vec3_attr(ctx *c, const XML_Char **atts, const char *name, bool required,
                      rp_vec3 dflt, rp_vec3 *out)
{
    const char *s = attr(atts, name);
    char q[QUOTE_MAX + 4];
    if (!s) {
        if (required)
            fail(c, "the %s attribute is required", name);
        *out = dflt;
        return !required;
    }
    if (!rp_urdf_vec3_(s, out)) {
        fail(c, "%s=\"%s\" must be three finite numbers", name, quote(q, s));
        return false;
    }
    return true;
}

/* A name attribute (link or joint name, or a reference to one) with the id
 * syntax; NULL (and the parse failed) otherwise. */
static const char *name_attr(ctx *c, const XML_Char **atts, const char *name)
{
    const char *s = attr(atts, name);
    char q[QUOTE_MAX + 4];
    if (!s)
        fail(c, "the %s attribute is required", name);
    else if (!rp_codec_valid_id(s))
        fail(c, "%s=\"%s\" " R_NAME, name, quote(q, s));
    else
        return s;
    return NULL;
}

/* Appends a segment to the path (cut at its end when too long). */
PRINTF_LIKE(2, 3) static void push_path(ctx *c, const char *fmt, ...)
{
    size_t len = strlen(c->path);
    char seg[sizeof c->path];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(seg, sizeof seg, fmt, ap);
    va_end(ap);
    if (n < 0)
        seg[0] = '\0';
    append(c->path, sizeof c->path, &len, seg);
}

/* ---- URDF: links and collisions ------------------------------------------- */

static void open_link(ctx *c, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    size_t index = c->n_link_elems++;
    const char *name = attr(atts, "name");
    if (name && rp_codec_valid_id(name))
        push_path(c, "link[%s]", name);
    else
        push_path(c, "link[#%zu]", index);
    size_t max = c->opts->max_links && c->opts->max_links < MAX_COUNT ? c->opts->max_links
                                                                       : MAX_COUNT;
    if (u->n_links >= max) {
        fail_limit(c, max, "max_model_links", "more than %zu links", max);
        return;
    }
    if (!(name = name_attr(c, atts, "name")))
        return;
    uint32_t hash = rp_strhash_(name);
    size_t slot;
    if (!rp_strtab_reserve_(&u->link_tab, u->n_links + 1)) {
        fail_nomem(c);
        return;
    }
    if (rp_strtab_find_(&u->link_tab, name, hash, &slot)) {
        fail(c, "link \"%s\" is defined twice (first at line %lu)", name,
             u->links[u->link_tab.slots[slot]].line);
        return;
    }
    link_rec *p = room(c, u->links, &u->cap_links, u->n_links, sizeof *p);
    if (!p)
        return;
    u->links = p;
    const char *kept = keep(c, name);
    if (!kept)
        return;
    c->link = u->n_links++;
    u->links[c->link] = (link_rec){kept, hash, (unsigned long)XML_GetCurrentLineNumber(c->xp), 0};
    rp_strtab_insert_at_(&u->link_tab, slot, (uint32_t)c->link);
}

static void open_collision(ctx *c)
{
    size_t k = c->u->links[c->link].n_collisions++;
    push_path(c, ".collision[%zu]", k);
    c->coll.line = (unsigned long)XML_GetCurrentLineNumber(c->xp);
    c->coll.has_origin = c->coll.has_geometry = false;
    c->coll.kind = E_SKIP;
    c->coll.origin = rp_transform_identity();
}

/* <origin xyz rpy>, each defaulting to zeros, as a transform. */
static bool read_origin(ctx *c, const XML_Char **atts, rp_vec3 *xyz, rp_vec3 *rpy)
{
    rp_vec3 zero = {0, 0, 0};
    return vec3_attr(c, atts, "xyz", false, zero, xyz) &&
           vec3_attr(c, atts, "rpy", false, zero, rpy);
}

static void open_collision_origin(ctx *c, const XML_Char **atts)
{
    if (c->coll.has_origin) {
        fail(c, "<origin> appears twice in one <collision>");
        return;
    }
    c->coll.has_origin = true;
    rp_vec3 xyz, rpy;
    if (read_origin(c, atts, &xyz, &rpy))
        c->coll.origin = rp_urdf_origin_(xyz, rpy);
}

static void open_geometry(ctx *c)
{
    if (c->coll.has_geometry)
        fail(c, "<geometry> appears twice in one <collision>");
    c->coll.has_geometry = true;
}

static void open_shape(ctx *c, elem e, const XML_Char **atts)
{
    if (c->coll.kind != E_SKIP) {
        fail(c, "a <geometry> holds one shape, this is a second one");
        return;
    }
    c->coll.kind = e;
    double *d = c->coll.dims;
    switch (e) {
    case E_SPHERE:
        dim_attr(c, atts, "radius", &d[0]);
        break;
    case E_CYLINDER:
    case E_CAPSULE:
        if (dim_attr(c, atts, "radius", &d[0]))
            dim_attr(c, atts, "length", &d[1]);
        break;
    case E_BOX: {
        char q[QUOTE_MAX + 4];
        rp_vec3 s = {0, 0, 0};
        if (!vec3_attr(c, atts, "size", true, s, &s))
            break;
        if (!(s.x > 0 && s.y > 0 && s.z > 0))
            fail(c, "size=\"%s\": each edge must be greater than 0", quote(q, attr(atts, "size")));
        d[0] = s.x, d[1] = s.y, d[2] = s.z;
        break;
    }
    default:
        fail(c, "meshes are not supported; use sphere, capsule, cylinder or box geometry "
                "(a \"spherized\" URDF)");
    }
}

/* The shapes of the finished <collision>, in the link frame; their count. */
static size_t collision_shapes(const ctx *c, rp_shape out[RP_URDF_BOX_MAX])
{
    const double *d = c->coll.dims;
    rp_capsule caps[RP_URDF_BOX_MAX];
    size_t n = 1;
    if (c->coll.kind == E_SPHERE) {
        rp_shape s = rp_shape_from_sphere((rp_sphere){{0, 0, 0}, d[0]});
        out[0] = rp_transform_shape(&c->coll.origin, &s);
        return 1;
    }
    if (c->coll.kind == E_BOX)
        n = rp_urdf_box_capsules_(d, caps);
    else
        caps[0] = (rp_capsule){{0, 0, -d[1] / 2}, {0, 0, d[1] / 2}, d[0]};
    for (size_t j = 0; j < n; j++) {
        rp_shape s = rp_shape_from_capsule(caps[j]);
        out[j] = rp_transform_shape(&c->coll.origin, &s);
    }
    return n;
}

static void close_collision(ctx *c)
{
    rp_urdf *u = c->u;
    if (c->coll.kind == E_SKIP) {
        fail_at(c, c->coll.line, c->coll.has_geometry
                                     ? "<geometry> has no sphere, cylinder, capsule or box"
                                     : "<geometry> is required");
        return;
    }
    rp_shape shapes[RP_URDF_BOX_MAX];
    size_t n = collision_shapes(c, shapes);
    size_t max = c->opts->max_shapes;
    if (max && (u->n_shapes > max || n > max - u->n_shapes)) {
        fail_limit(c, max, "max_model_links", "more than %zu shapes", max);
        return;
    }
    for (size_t j = 0; j < n; j++)
        if (rp_shape_validate(&shapes[j]) != RP_OK) {
            fail_at(c, c->coll.line, "the shape's coordinates are beyond the range of doubles "
                                     "once its origin is applied");
            return;
        }
    const link_rec *l = &u->links[c->link];
    for (size_t j = 0; j < n; j++) {
        char id[RP_NAME_MAX + 48];
        if (c->coll.kind == E_BOX)
            snprintf(id, sizeof id, "%s#%zu.%zu", l->name, l->n_collisions - 1, j);
        else
            snprintf(id, sizeof id, "%s#%zu", l->name, l->n_collisions - 1);
        shape_rec *p = room(c, u->shapes, &u->cap_shapes, u->n_shapes, sizeof *p);
        if (!p)
            return;
        u->shapes = p;
        const char *kept = keep(c, id);
        if (!kept)
            return;
        u->shapes[u->n_shapes++] = (shape_rec){{kept, -1, shapes[j]}, l->name, c->coll.line};
    }
}

/* ---- URDF: joints ------------------------------------------------------------ */

static bool joint_type(const char *s, rp_joint_type *out)
{
    static const struct {
        const char *name;
        rp_joint_type type;
    } types[] = {{"revolute", RP_JOINT_REVOLUTE},
                 {"continuous", RP_JOINT_CONTINUOUS},
                 {"prismatic", RP_JOINT_PRISMATIC},
                 {"fixed", RP_JOINT_FIXED}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(s, types[i].name) == 0) {
            *out = types[i].type;
            return true;
        }
    return false;
}

static void open_joint(ctx *c, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    size_t index = c->n_joint_elems++;
    const char *name = attr(atts, "name");
    char q[QUOTE_MAX + 4];
    if (name && rp_codec_valid_id(name))
        push_path(c, "joint[%s]", name);
    else
        push_path(c, "joint[#%zu]", index);
    size_t max = c->opts->max_links && c->opts->max_links < MAX_COUNT ? c->opts->max_links
                                                                       : MAX_COUNT;
    if (u->n_joints >= max) {
        fail_limit(c, max, "max_model_links", "more than %zu joints", max);
        return;
    }
    if (!(name = name_attr(c, atts, "name")))
        return;
    size_t slot;
    uint32_t hash = rp_strhash_(name);
    if (rp_strtab_find_(&u->joint_tab, name, hash, &slot)) {
        fail(c, "joint \"%s\" is defined twice (first at line %lu)", name,
             u->joints[u->joint_tab.slots[slot]].line);
        return;
    }
    const char *type = attr(atts, "type");
    joint_rec *j = &c->joint;
    if (!type) {
        fail(c, "the type attribute is required");
        return;
    }
    if (!joint_type(type, &j->def.type)) {
        fail(c, "type \"%s\" is not supported: use revolute, continuous, prismatic or fixed",
             quote(q, type));
        return;
    }
    j->def.name = keep(c, name);
    j->def.parent = j->def.child = j->def.mimic = NULL;
    j->def.xyz = j->def.rpy = (rp_vec3){0, 0, 0};
    j->def.axis = (rp_vec3){1, 0, 0};
    j->def.has_limits = false;
    j->def.lower = j->def.upper = 0;
    j->def.multiplier = 1;
    j->def.offset = 0;
    j->hash = hash;
    j->line = (unsigned long)XML_GetCurrentLineNumber(c->xp);
    c->seen = 0;
}

/* A child element of <joint> (parent, child, origin, axis, limit, mimic). */
static void open_joint_child(ctx *c, elem e, const XML_Char **atts)
{
    rp_joint_def *d = &c->joint.def;
    unsigned bit = 1u << (e - E_J_PARENT);
    if (c->seen & bit) {
        fail(c, "this element appears twice in one <joint>");
        return;
    }
    c->seen |= bit;
    const char *s;
    switch (e) {
    case E_J_PARENT:
    case E_J_CHILD:
        if ((s = name_attr(c, atts, "link")) && (s = keep(c, s)))
            *(e == E_J_PARENT ? &d->parent : &d->child) = s;
        break;
    case E_J_ORIGIN:
        read_origin(c, atts, &d->xyz, &d->rpy);
        break;
    case E_J_AXIS:
        vec3_attr(c, atts, "xyz", true, d->axis, &d->axis);
        break;
    case E_J_LIMIT:
        if (d->type != RP_JOINT_REVOLUTE && d->type != RP_JOINT_PRISMATIC)
            break;
        if (!num_attr(c, atts, "lower", false, 0, &d->lower) ||
            !num_attr(c, atts, "upper", false, 0, &d->upper))
            break;
        if (d->lower > d->upper)
            fail(c, "lower %.17g is greater than upper %.17g", d->lower, d->upper);
        d->has_limits = true;
        break;
    default: /* E_J_MIMIC */
        if ((s = name_attr(c, atts, "joint")) && (s = keep(c, s)) &&
            num_attr(c, atts, "multiplier", false, 1, &d->multiplier) &&
            num_attr(c, atts, "offset", false, 0, &d->offset))
            d->mimic = s;
        break;
    }
}

static void close_joint(ctx *c)
{
    rp_urdf *u = c->u;
    joint_rec *j = &c->joint;
    if (!j->def.parent || !j->def.child) {
        fail_at(c, j->line, "<%s link=...> is required", j->def.parent ? "child" : "parent");
        return;
    }
    if (!j->def.has_limits &&
        (j->def.type == RP_JOINT_REVOLUTE || j->def.type == RP_JOINT_PRISMATIC)) {
        fail_at(c, j->line, "a %s joint needs <limit>",
                j->def.type == RP_JOINT_REVOLUTE ? "revolute" : "prismatic");
        return;
    }
    size_t slot;
    joint_rec *p = room(c, u->joints, &u->cap_joints, u->n_joints, sizeof *p);
    if (!p)
        return;
    u->joints = p;
    if (!rp_strtab_reserve_(&u->joint_tab, u->n_joints + 1)) {
        fail_nomem(c);
        return;
    }
    rp_strtab_find_(&u->joint_tab, j->def.name, j->hash, &slot);
    u->joints[u->n_joints] = *j;
    rp_strtab_insert_at_(&u->joint_tab, slot, (uint32_t)u->n_joints);
    u->n_joints++;
}

/* ---- pairs ---------------------------------------------------------------- */

/* Appends an allowed pair, within opts.max_pairs. */
static void add_pair(ctx *c, const char *a, const char *b, unsigned long line)
{
    rp_urdf *u = c->u;
    size_t max = c->opts->max_pairs;
    if (max && u->n_pairs >= max) {
        fail_limit(c, max, "max_allowed_pairs", "more than %zu allowed pairs", max);
        return;
    }
    pair_rec *p = room(c, u->pairs, &u->cap_pairs, u->n_pairs, sizeof *p);
    if (!p)
        return;
    u->pairs = p;
    u->pairs[u->n_pairs++] = (pair_rec){a, b, line};
}

/* SRDF <disable_collisions link1 link2>: both must be URDF links. */
static void open_disable(ctx *c, const XML_Char **atts)
{
    push_path(c, "disable_collisions[%zu]", c->n_disable++);
    const char *names[2];
    char q[QUOTE_MAX + 4];
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "link2" : "link1";
        const char *s = attr(atts, key);
        size_t index = s ? find_link(c->u, s) : SIZE_MAX;
        if (!s) {
            fail(c, "the %s attribute is required", key);
            return;
        }
        if (index == SIZE_MAX) {
            fail(c, "%s=\"%s\" is not a link of the URDF", key, quote(q, s));
            return;
        }
        names[k] = c->u->links[index].name;
    }
    add_pair(c, names[0], names[1], (unsigned long)XML_GetCurrentLineNumber(c->xp));
}

/* opts.allow_adjacent: (parent, child) of every joint whose links exist. */
static void add_adjacent_pairs(ctx *c)
{
    rp_urdf *u = c->u;
    for (size_t i = 0; i < u->n_joints && c->status == RP_URDF_OK; i++) {
        size_t a = find_link(u, u->joints[i].def.parent);
        size_t b = find_link(u, u->joints[i].def.child);
        if (a == SIZE_MAX || b == SIZE_MAX)
            continue;
        snprintf(c->path, sizeof c->path, "joint[%s]", u->joints[i].def.name);
        add_pair(c, u->links[a].name, u->links[b].name, 0);
        if (c->status != RP_URDF_OK)
            c->err->line = u->joints[i].line;
    }
    c->path[0] = '\0';
}

/* ---- expat handlers --------------------------------------------------------- */

static elem classify(const ctx *c, const char *name)
{
    if (c->depth == 0)
        return c->srdf ? E_SROBOT : E_ROBOT;
    elem parent = c->stack[c->depth - 1];
    for (size_t i = 0; i < sizeof children / sizeof children[0]; i++)
        if (children[i].parent == parent && strcmp(children[i].name, name) == 0)
            return children[i].e;
    return E_SKIP;
}

static void open_elem(ctx *c, elem e, const char *name, const XML_Char **atts)
{
    char q[QUOTE_MAX + 4];
    switch (e) {
    case E_ROBOT:
    case E_SROBOT:
        if (strcmp(name, "robot") != 0)
            fail(c, "the root element must be <robot>, not <%s>", quote(q, name));
        break;
    case E_LINK: open_link(c, atts); break;
    case E_COLLISION: open_collision(c); break;
    case E_C_ORIGIN:
        push_path(c, ".origin");
        open_collision_origin(c, atts);
        break;
    case E_GEOMETRY:
        push_path(c, ".geometry");
        open_geometry(c);
        break;
    case E_SPHERE: case E_CYLINDER: case E_CAPSULE: case E_BOX: case E_MESH:
        push_path(c, ".%s", name);
        open_shape(c, e, atts);
        break;
    case E_JOINT: open_joint(c, atts); break;
    case E_DISABLE: open_disable(c, atts); break;
    default:
        push_path(c, ".%s", name);
        open_joint_child(c, e, atts);
        break;
    }
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    ctx *c = ud;
    if (c->status != RP_URDF_OK)
        return;
    elem e = c->skip ? E_SKIP : classify(c, name);
    if (e == E_SKIP || c->depth == MAX_DEPTH) {
        c->skip++;
        return;
    }
    c->path_len[c->depth] = strlen(c->path);
    c->stack[c->depth++] = e;
    open_elem(c, e, name, atts);
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    (void)name;
    ctx *c = ud;
    if (c->status != RP_URDF_OK)
        return;
    if (c->skip) {
        c->skip--;
        return;
    }
    elem e = c->stack[--c->depth];
    if (e == E_COLLISION)
        close_collision(c);
    else if (e == E_JOINT)
        close_joint(c);
    c->path[c->path_len[c->depth]] = '\0';
}

static void XMLCALL on_entity_decl(void *ud, const XML_Char *name, int is_param,
                                   const XML_Char *value, int value_len, const XML_Char *base,
                                   const XML_Char *system_id, const XML_Char *public_id,
                                   const XML_Char *notation)
{
    (void)is_param, (void)value, (void)value_len, (void)base, (void)system_id,
        (void)public_id, (void)notation;
    char q[QUOTE_MAX + 4];
    fail(ud, "entity declarations are not allowed (<!ENTITY %s>)", quote(q, name));
}

/* expat skips a reference to an entity it has not seen declared when the
 * document has an external DTD it did not read; refuse it rather than drop
 * text silently. */
static void XMLCALL on_skipped_entity(void *ud, const XML_Char *name, int is_param)
{
    (void)is_param;
    char q[QUOTE_MAX + 4];
    fail(ud, "entity reference &%s; cannot be resolved (external DTDs are not read)",
         quote(q, name));
}

/* expat allocates with the same functions as the code around it, so that a
 * test that makes allocations fail (tests/unit/alloc_fail.c wraps them)
 * reaches expat's too. */
static const XML_Memory_Handling_Suite expat_memory = {malloc, realloc, free};

/* Runs expat over doc[0..len) with the handlers above. */
static void parse_doc(ctx *c, const char *doc, size_t len)
{
    c->xp = XML_ParserCreate_MM(NULL, &expat_memory, NULL);
    if (!c->xp) {
        fail_nomem(c);
        return;
    }
    c->depth = c->skip = 0;
    c->path[0] = '\0';
    XML_SetUserData(c->xp, c);
    XML_SetElementHandler(c->xp, on_start, on_end);
    XML_SetEntityDeclHandler(c->xp, on_entity_decl);
    XML_SetSkippedEntityHandler(c->xp, on_skipped_entity);
    XML_SetParamEntityParsing(c->xp, XML_PARAM_ENTITY_PARSING_NEVER);
    size_t off = 0;
    do {
        size_t n = len - off < CHUNK_BYTES ? len - off : CHUNK_BYTES;
        bool last = off + n == len;
        if (XML_Parse(c->xp, doc + off, (int)n, last) != XML_STATUS_OK) {
            enum XML_Error code = XML_GetErrorCode(c->xp);
            c->path[0] = '\0';
            if (code == XML_ERROR_NO_MEMORY)
                fail_nomem(c);
            else
                /* expat counts columns from 0, people from 1. */
                fail(c, "malformed XML: %s (column %lu)", XML_ErrorString(code),
                     (unsigned long)XML_GetCurrentColumnNumber(c->xp) + 1);
            break;
        }
        off += n;
    } while (off < len);
    XML_ParserFree(c->xp);
    c->xp = NULL;
}

/* ---- the result ------------------------------------------------------------- */

/* Fills u->def from the records. */
static bool build_def(rp_urdf *u)
{
    size_t ns = u->n_shapes, nl = u->n_links, nj = u->n_joints, np = u->n_pairs;
    u->def_links = malloc((ns ? ns : 1) * sizeof *u->def_links);
    u->def_shape_links = malloc((ns ? ns : 1) * sizeof *u->def_shape_links);
    u->def_link_names = malloc(nl * sizeof *u->def_link_names + 1);
    u->def_joints = malloc(nj * sizeof *u->def_joints + 1);
    u->def_pairs = malloc(2 * np * sizeof *u->def_pairs + 1);
    if (!u->def_links || !u->def_shape_links || !u->def_link_names || !u->def_joints ||
        !u->def_pairs)
        return false;
    for (size_t i = 0; i < ns; i++) {
        u->def_links[i] = u->shapes[i].link;
        u->def_shape_links[i] = u->shapes[i].name;
    }
    for (size_t i = 0; i < nl; i++)
        u->def_link_names[i] = u->links[i].name;
    for (size_t i = 0; i < nj; i++)
        u->def_joints[i] = u->joints[i].def;
    for (size_t i = 0; i < np; i++) {
        u->def_pairs[2 * i] = u->pairs[i].a;
        u->def_pairs[2 * i + 1] = u->pairs[i].b;
    }
    /* shape_links is never NULL, so that a robot without collision
     * geometry is still the kinematic form. */
    u->def = (rp_model_def){
        .links = u->def_links, .n_links = ns,
        .safety_margin = 0,
        .allowed_pairs = u->def_pairs, .n_allowed = np,
        .self_collision = true,
        .shape_links = u->def_shape_links,
        .link_names = u->def_link_names, .n_link_names = nl,
        .joints = u->def_joints, .n_joints = nj,
    };
    return true;
}

rp_urdf_status rp_urdf_parse(const char *urdf, size_t urdf_len, const char *srdf,
                             size_t srdf_len, const rp_urdf_opts *opts, rp_urdf **out,
                             rp_urdf_error *err)
{
    static const rp_urdf_opts no_opts;
    rp_urdf_error scratch;
    err = err ? err : &scratch;
    memset(err, 0, sizeof *err);
    *out = NULL;
    ctx c = {.opts = opts ? opts : &no_opts, .err = err};
    rp_urdf *u = c.u = calloc(1, sizeof *u);
    if (!u) {
        fail_nomem(&c);
        return c.status;
    }
    rp_strtab_init_(&u->link_tab, link_key, link_hash, u);
    rp_strtab_init_(&u->joint_tab, joint_key, joint_hash, u);
    if (!urdf)
        fail(&c, "no URDF document");
    else
        parse_doc(&c, urdf, urdf_len);
    if (c.status == RP_URDF_OK && u->n_links == 0)
        fail(&c, "the robot has no <link>");
    c.srdf = true;
    if (c.status == RP_URDF_OK && srdf)
        parse_doc(&c, srdf, srdf_len);
    c.srdf = false;
    if (c.status == RP_URDF_OK && c.opts->allow_adjacent)
        add_adjacent_pairs(&c);
    if (c.status == RP_URDF_OK && !build_def(u))
        fail_nomem(&c);
    if (c.status != RP_URDF_OK) {
        rp_urdf_free(u);
        return c.status;
    }
    *out = u;
    return RP_URDF_OK;
}

const rp_model_def *rp_urdf_def(const rp_urdf *u)
{
    return &u->def;
}

unsigned long rp_urdf_joint_line(const rp_urdf *u, size_t i)
{
    return i < u->n_joints ? u->joints[i].line : 0;
}

unsigned long rp_urdf_link_line(const rp_urdf *u, size_t i)
{
    return i < u->n_links ? u->links[i].line : 0;
}

unsigned long rp_urdf_shape_line(const rp_urdf *u, size_t i)
{
    return i < u->n_shapes ? u->shapes[i].line : 0;
}

unsigned long rp_urdf_pair_line(const rp_urdf *u, size_t i)
{
    return i < u->n_pairs ? u->pairs[i].line : 0;
}

void rp_urdf_free(rp_urdf *u)
{
    if (!u)
        return;
    free(u->links);
    free(u->joints);
    free(u->shapes);
    free(u->pairs);
    rp_strtab_free_(&u->link_tab);
    rp_strtab_free_(&u->joint_tab);
    for (str_block *b = u->strings, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(u->def_links);
    free(u->def_shape_links);
    free(u->def_link_names);
    free(u->def_joints);
    free(u->def_pairs);
    free(u);
}
