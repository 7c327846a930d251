/* SPDX-License-Identifier: MIT */
/*
 * The URDF and SRDF elements (see the rules at the top of urdf.c): what
 * each one that matters adds to the parse, with the checks on its
 * attributes.  urdf.c's expat handlers call rp_urdf_open_ and
 * rp_urdf_close_ as elements start and end.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/ids.h"
#include "urdf/urdf_int.h"
#include "urdf/urdf_parse.h"
#include "util/grow.h"

/* x in the fewest significant digits that read back as x ("0.1", not
 * "0.10000000000000001"), for messages. */
static void shortest(char *buf, size_t cap, double x)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* Strings are copied into blocks of this many bytes (more for a longer one). */
#define STRING_BLOCK 16384
/* The link and joint name tables hold uint32 indices. */
#define MAX_COUNT ((size_t)UINT32_MAX - 1)
#define R_NAME "must be 1-128 characters of [A-Za-z0-9_.:/-]"

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
            rp_urdf_fail_nomem_(c);
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
        rp_urdf_fail_nomem_(c);
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

void rp_urdf_tables_init_(rp_urdf *u)
{
    rp_strtab_init_(&u->link_tab, link_key, link_hash, u);
    rp_strtab_init_(&u->joint_tab, joint_key, joint_hash, u);
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

/* Attribute `name`; NULL when absent, and then, if it is `required`, the
 * parse failed. */
static const char *get_attr(ctx *c, const XML_Char **atts, const char *name, bool required)
{
    const char *s = attr(atts, name);
    if (!s && required)
        rp_urdf_fail_(c, "the %s attribute is required", name);
    return s;
}

/* Fails the parse on attribute name="s" (quoted), saying `why`; false. */
static bool bad_attr(ctx *c, const char *name, const char *s, const char *why)
{
    char q[RP_URDF_QUOTE_BUF];
    rp_urdf_fail_(c, "%s=\"%s\" %s", name, rp_urdf_quote_(q, s), why);
    return false;
}

/* Attribute `name` as a number; `dflt` when absent unless `required`.
 * False (and the parse failed) otherwise. */
static bool num_attr(ctx *c, const XML_Char **atts, const char *name, bool required, double dflt,
                     double *out)
{
    const char *s = get_attr(c, atts, name, required);
    if (!s) {
        *out = dflt;
        return !required;
    }
    return rp_urdf_number_(s, strlen(s), out) || bad_attr(c, name, s, "is not a finite number");
}

/* A required number > 0 (a dimension). */
static bool dim_attr(ctx *c, const XML_Char **atts, const char *name, double *out)
{
    if (!num_attr(c, atts, name, true, 0, out))
        return false;
    if (!(*out > 0)) {
        rp_urdf_fail_(c, "%s=\"%s\" must be greater than 0", name, attr(atts, name));
        return false;
    }
    return true;
}

/* Attribute `name` as "x y z"; `dflt` when absent unless `required`. */
static bool vec3_attr(ctx *c, const XML_Char **atts, const char *name, bool required, rp_vec3 dflt,
                      rp_vec3 *out)
{
    const char *s = get_attr(c, atts, name, required);
    if (!s) {
        *out = dflt;
        return !required;
    }
    return rp_urdf_vec3_(s, out) || bad_attr(c, name, s, "must be three finite numbers");
}

/* A URDF name: the id syntax without '#', which is left to the shape ids
 * ("LINK#k") so that they never collide with names. */
static bool valid_urdf_name(const char *s)
{
    return rp_codec_valid_id(s) && !strchr(s, '#');
}

/* A name attribute (link or joint name, or a reference to one) with the id
 * syntax; NULL (and the parse failed) otherwise. */
static const char *name_attr(ctx *c, const XML_Char **atts, const char *name)
{
    const char *s = get_attr(c, atts, name, true);
    if (s && !valid_urdf_name(s)) {
        bad_attr(c, name, s, R_NAME);
        return NULL;
    }
    return s;
}

/* ---- URDF: links and collisions ------------------------------------------- */

static void open_link(ctx *c, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    size_t index = c->n_link_elems++;
    const char *name = attr(atts, "name");
    if (name && valid_urdf_name(name))
        rp_urdf_push_path_(c, "link[%s]", name);
    else
        rp_urdf_push_path_(c, "link[#%zu]", index);
    size_t max =
        c->opts->max_links && c->opts->max_links < MAX_COUNT ? c->opts->max_links : MAX_COUNT;
    if (u->n_links >= max) {
        rp_urdf_fail_limit_(c, max, "max_model_links", "more than %zu links", max);
        return;
    }
    if (!(name = name_attr(c, atts, "name")))
        return;
    uint32_t hash = rp_strhash_(name);
    size_t slot;
    if (!rp_strtab_reserve_(&u->link_tab, u->n_links + 1)) {
        rp_urdf_fail_nomem_(c);
        return;
    }
    if (rp_strtab_find_(&u->link_tab, name, hash, &slot)) {
        rp_urdf_fail_(c, "link \"%s\" is defined twice (first at line %lu)", name,
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
    rp_urdf_push_path_(c, ".collision[%zu]", k);
    c->coll.line = (unsigned long)XML_GetCurrentLineNumber(c->xp);
    c->coll.has_origin = c->coll.has_geometry = false;
    c->coll.kind = E_SKIP;
    c->coll.origin = rp_transform_identity();
    c->coll.mesh_uri = NULL;
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
        rp_urdf_fail_(c, "<origin> appears twice in one <collision>");
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
        rp_urdf_fail_(c, "<geometry> appears twice in one <collision>");
    c->coll.has_geometry = true;
}

static void open_shape(ctx *c, elem e, const XML_Char **atts)
{
    if (c->coll.kind != E_SKIP) {
        rp_urdf_fail_(c, "a <geometry> holds one shape, this is a second one");
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
        /* Edges may be 0 (a rectangle, a segment, a point), not negative. */
        char q[RP_URDF_QUOTE_BUF];
        rp_vec3 s = {0, 0, 0};
        if (!vec3_attr(c, atts, "size", true, s, &s))
            break;
        if (!(s.x >= 0 && s.y >= 0 && s.z >= 0))
            rp_urdf_fail_(c, "size=\"%s\": each edge must be 0 or greater",
                          rp_urdf_quote_(q, attr(atts, "size")));
        d[0] = s.x, d[1] = s.y, d[2] = s.z;
        break;
    }
    default: { /* E_MESH */
        const char *uri = get_attr(c, atts, "filename", true);
        if (!uri)
            break;
        if (!*uri || strlen(uri) > RP_URDF_URI_MAX) {
            bad_attr(c, "filename", uri, "must be 1 to 1024 bytes");
            break;
        }
        if (!vec3_attr(c, atts, "scale", false, (rp_vec3){1, 1, 1}, &c->coll.mesh_scale))
            break;
        c->coll.mesh_uri = keep(c, uri);
        break;
    }
    }
}

/* The shape of the finished <collision>, in the link frame. */
static rp_shape collision_shape(const ctx *c)
{
    const double *d = c->coll.dims;
    rp_shape s;
    switch (c->coll.kind) {
    case E_SPHERE:
        s = rp_shape_from_sphere((rp_sphere){{0, 0, 0}, d[0]});
        break;
    case E_BOX:
        /* fabs: an edge of -0 gives a half extent of +0. */
        s = rp_shape_from_box(
            (rp_box){{0, 0, 0}, {fabs(d[0]) / 2, fabs(d[1]) / 2, fabs(d[2]) / 2}, {1, 0, 0, 0}});
        break;
    default: /* E_CYLINDER, E_CAPSULE */
        s = rp_shape_from_capsule((rp_capsule){{0, 0, -d[1] / 2}, {0, 0, d[1] / 2}, d[0]});
        break;
    }
    return rp_transform_shape(&c->coll.origin, &s);
}

static void close_collision(ctx *c)
{
    rp_urdf *u = c->u;
    if (c->coll.kind == E_SKIP) {
        rp_urdf_fail_at_(c, c->coll.line,
                         c->coll.has_geometry
                             ? "<geometry> has no sphere, cylinder, capsule, box or mesh"
                             : "<geometry> is required");
        return;
    }
    if (c->coll.kind == E_MESH) {
        if (!c->coll.mesh_uri)
            return; /* (the parse failed on it) */
        rp_urdf_mesh *m = room(c, u->meshes, &u->cap_meshes, u->n_meshes, sizeof *m);
        if (!m)
            return;
        u->meshes = m;
        const link_rec *l = &u->links[c->link];
        u->meshes[u->n_meshes++] = (rp_urdf_mesh){l->name,          l->n_collisions - 1,
                                                  c->coll.mesh_uri, c->coll.mesh_scale,
                                                  c->coll.origin,   c->coll.line};
        return;
    }
    rp_shape shape = collision_shape(c);
    size_t max = c->opts->max_shapes;
    if (max && u->n_shapes >= max) {
        rp_urdf_fail_limit_(c, max, "max_model_links", "more than %zu shapes", max);
        return;
    }
    if (rp_shape_validate(&shape) != RP_OK) {
        rp_urdf_fail_at_(c, c->coll.line,
                         "the shape's coordinates are beyond the range of doubles "
                         "once its origin is applied");
        return;
    }
    const link_rec *l = &u->links[c->link];
    char id[RP_NAME_MAX + 48];
    snprintf(id, sizeof id, "%s#%zu", l->name, l->n_collisions - 1);
    shape_rec *p = room(c, u->shapes, &u->cap_shapes, u->n_shapes, sizeof *p);
    if (!p)
        return;
    u->shapes = p;
    const char *kept = keep(c, id);
    if (!kept)
        return;
    u->shapes[u->n_shapes++] = (shape_rec){{kept, -1, shape}, l->name, c->coll.line};
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
    char q[RP_URDF_QUOTE_BUF];
    if (name && valid_urdf_name(name))
        rp_urdf_push_path_(c, "joint[%s]", name);
    else
        rp_urdf_push_path_(c, "joint[#%zu]", index);
    size_t max =
        c->opts->max_links && c->opts->max_links < MAX_COUNT ? c->opts->max_links : MAX_COUNT;
    if (u->n_joints >= max) {
        rp_urdf_fail_limit_(c, max, "max_model_links", "more than %zu joints", max);
        return;
    }
    if (!(name = name_attr(c, atts, "name")))
        return;
    size_t slot;
    uint32_t hash = rp_strhash_(name);
    if (rp_strtab_find_(&u->joint_tab, name, hash, &slot)) {
        rp_urdf_fail_(c, "joint \"%s\" is defined twice (first at line %lu)", name,
                      u->joints[u->joint_tab.slots[slot]].line);
        return;
    }
    const char *type = attr(atts, "type");
    joint_rec *j = &c->joint;
    if (!type) {
        rp_urdf_fail_(c, "the type attribute is required");
        return;
    }
    if (!joint_type(type, &j->def.type)) {
        rp_urdf_fail_(c,
                      "type \"%s\" is not supported: use revolute, continuous, prismatic or fixed",
                      rp_urdf_quote_(q, type));
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
        rp_urdf_fail_(c, "this element appears twice in one <joint>");
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
        if (d->lower > d->upper) {
            /* Shortest round-trip decimals: "0.1", not "0.10000000000000001". */
            char lo[32], hi[32];
            shortest(lo, sizeof lo, d->lower);
            shortest(hi, sizeof hi, d->upper);
            rp_urdf_fail_(c, "lower %s is greater than upper %s", lo, hi);
        }
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
        rp_urdf_fail_at_(c, j->line, "<%s link=...> is required",
                         j->def.parent ? "child" : "parent");
        return;
    }
    if (!j->def.has_limits &&
        (j->def.type == RP_JOINT_REVOLUTE || j->def.type == RP_JOINT_PRISMATIC)) {
        rp_urdf_fail_at_(c, j->line, "a %s joint needs <limit>",
                         j->def.type == RP_JOINT_REVOLUTE ? "revolute" : "prismatic");
        return;
    }
    size_t slot;
    joint_rec *p = room(c, u->joints, &u->cap_joints, u->n_joints, sizeof *p);
    if (!p)
        return;
    u->joints = p;
    if (!rp_strtab_reserve_(&u->joint_tab, u->n_joints + 1)) {
        rp_urdf_fail_nomem_(c);
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
        rp_urdf_fail_limit_(c, max, "max_allowed_pairs", "more than %zu allowed pairs", max);
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
    rp_urdf_push_path_(c, "disable_collisions[%zu]", c->n_disable++);
    const char *names[2];
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "link2" : "link1";
        const char *s = get_attr(c, atts, key, true);
        if (!s)
            return;
        size_t index = find_link(c->u, s);
        if (index == SIZE_MAX) {
            bad_attr(c, key, s, "is not a link of the URDF");
            return;
        }
        names[k] = c->u->links[index].name;
    }
    add_pair(c, names[0], names[1], (unsigned long)XML_GetCurrentLineNumber(c->xp));
}

/* ---- SRDF: groups, named states, end effectors, passive joints ----------------- */

static size_t find_joint(const rp_urdf *u, const char *name)
{
    size_t slot;
    if (!rp_strtab_find_(&u->joint_tab, name, rp_strhash_(name), &slot))
        return SIZE_MAX;
    return u->joint_tab.slots[slot];
}

static size_t find_group(const rp_urdf *u, const char *name)
{
    for (size_t g = 0; g < u->n_groups; g++)
        if (strcmp(u->groups[g].name, name) == 0)
            return g;
    return SIZE_MAX;
}

/* Whether one more SRDF element of a kind (groups, group members, states,
 * state joints, end effectors, passive joints: `count` so far) fits under
 * max_links, as links and joints do; else the parse fails with the limit.
 * So the work of resolving groups is bounded by the limit too. */
static bool srdf_room(ctx *c, size_t count, const char *what)
{
    size_t max =
        c->opts->max_links && c->opts->max_links < MAX_COUNT ? c->opts->max_links : MAX_COUNT;
    if (count < max)
        return true;
    rp_urdf_fail_limit_(c, max, "max_model_links", "more than %zu %s", max, what);
    return false;
}

/* An SRDF name (a group's, a state's, an end effector's): the id syntax. */
static const char *srdf_name(ctx *c, const XML_Char **atts, const char *key)
{
    const char *s = get_attr(c, atts, key, true);
    if (s && !valid_urdf_name(s)) {
        bad_attr(c, key, s, R_NAME);
        return NULL;
    }
    return s;
}

static void open_group(ctx *c, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    c->group = SIZE_MAX;
    const char *name = attr(atts, "name");
    if (name && valid_urdf_name(name))
        rp_urdf_push_path_(c, "group[%s]", name);
    else
        rp_urdf_push_path_(c, "group[#%zu]", c->n_group_elems);
    c->n_group_elems++;
    if (!srdf_room(c, u->n_groups, "groups") || !(name = srdf_name(c, atts, "name")))
        return;
    size_t g = find_group(u, name);
    if (g != SIZE_MAX) {
        rp_urdf_fail_(c, "group \"%s\" is defined twice (first at line %lu)", name,
                      u->groups[g].line);
        return;
    }
    group_rec *p = room(c, u->groups, &u->cap_groups, u->n_groups, sizeof *p);
    if (!p)
        return;
    u->groups = p;
    const char *kept = keep(c, name);
    if (!kept)
        return;
    c->group = u->n_groups++;
    u->groups[c->group] = (group_rec){
        kept, (unsigned long)XML_GetCurrentLineNumber(c->xp), u->n_members, 0, NULL, 0, 0};
}

static void open_member(ctx *c, const char *elname, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    rp_urdf_push_path_(c, ".%s", elname);
    if (c->group == SIZE_MAX || !srdf_room(c, u->n_members, "group members"))
        return;
    member_rec m = {M_JOINT, NULL, NULL, (unsigned long)XML_GetCurrentLineNumber(c->xp)};
    if (strcmp(elname, "chain") == 0) {
        m.kind = M_CHAIN;
        const char *base = get_attr(c, atts, "base_link", true);
        const char *tip = base ? get_attr(c, atts, "tip_link", true) : NULL;
        if (!tip)
            return;
        size_t bi = find_link(u, base), ti = find_link(u, tip);
        if (bi == SIZE_MAX || ti == SIZE_MAX) {
            bad_attr(c, bi == SIZE_MAX ? "base_link" : "tip_link", bi == SIZE_MAX ? base : tip,
                     "is not a link of the URDF");
            return;
        }
        m.a = u->links[bi].name;
        m.b = u->links[ti].name;
    } else {
        const char *name = get_attr(c, atts, "name", true);
        if (!name)
            return;
        if (strcmp(elname, "joint") == 0) {
            size_t j = find_joint(u, name);
            if (j == SIZE_MAX) {
                bad_attr(c, "name", name, "is not a joint of the URDF");
                return;
            }
            m.a = u->joints[j].def.name;
        } else if (strcmp(elname, "link") == 0) {
            m.kind = M_LINK;
            size_t l = find_link(u, name);
            if (l == SIZE_MAX) {
                bad_attr(c, "name", name, "is not a link of the URDF");
                return;
            }
            m.a = u->links[l].name;
        } else {
            m.kind = M_GROUP; /* may be defined further on: resolved at the end */
            if (!valid_urdf_name(name)) {
                bad_attr(c, "name", name, R_NAME);
                return;
            }
            if (!(m.a = keep(c, name)))
                return;
        }
    }
    member_rec *p = room(c, u->members, &u->cap_members, u->n_members, sizeof *p);
    if (!p)
        return;
    u->members = p;
    u->members[u->n_members++] = m;
    u->groups[c->group].n++;
}

static void open_state(ctx *c, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    c->state = SIZE_MAX;
    const char *name = attr(atts, "name");
    if (name && valid_urdf_name(name))
        rp_urdf_push_path_(c, "group_state[%s]", name);
    else
        rp_urdf_push_path_(c, "group_state[#%zu]", c->n_state_elems);
    c->n_state_elems++;
    const char *group;
    if (!srdf_room(c, u->n_states, "group states") || !(name = srdf_name(c, atts, "name")) ||
        !(group = srdf_name(c, atts, "group")))
        return;
    for (size_t i = 0; i < u->n_states; i++)
        if (strcmp(u->states[i].name, name) == 0 && strcmp(u->states[i].group, group) == 0) {
            rp_urdf_fail_(c, "state \"%s\" of group \"%s\" is defined twice (first at line %lu)",
                          name, group, u->states[i].line);
            return;
        }
    state_rec *p = room(c, u->states, &u->cap_states, u->n_states, sizeof *p);
    if (!p)
        return;
    u->states = p;
    const char *kn = keep(c, name), *kg = kn ? keep(c, group) : NULL;
    if (!kg)
        return;
    c->state = u->n_states++;
    u->states[c->state] =
        (state_rec){kn, kg, (unsigned long)XML_GetCurrentLineNumber(c->xp), u->n_state_joints, 0};
}

static void open_state_joint(ctx *c, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    rp_urdf_push_path_(c, ".joint");
    if (c->state == SIZE_MAX || !srdf_room(c, u->n_state_joints, "joints of group states"))
        return;
    const char *name = get_attr(c, atts, "name", true);
    double v;
    if (!name || !num_attr(c, atts, "value", true, 0, &v))
        return; /* (one number: repose's joints have one degree of freedom) */
    size_t j = find_joint(u, name);
    if (j == SIZE_MAX) {
        bad_attr(c, "name", name, "is not a joint of the URDF");
        return;
    }
    state_rec *st = &u->states[c->state];
    for (size_t i = st->first; i < st->first + st->n; i++)
        if (u->state_joints[i] == u->joints[j].def.name) {
            bad_attr(c, "name", name, "is given twice in this state");
            return;
        }
    const char **pj = room(c, u->state_joints, &u->cap_state_joints, u->n_state_joints, sizeof *pj);
    if (!pj)
        return;
    u->state_joints = pj;
    double *pv = room(c, u->state_values, &u->cap_state_values, u->n_state_joints, sizeof *pv);
    if (!pv)
        return;
    u->state_values = pv;
    u->state_joints[u->n_state_joints] = u->joints[j].def.name;
    u->state_values[u->n_state_joints++] = v;
    st->n++;
}

static void open_eef(ctx *c, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    const char *name = attr(atts, "name");
    if (name && valid_urdf_name(name))
        rp_urdf_push_path_(c, "end_effector[%s]", name);
    else
        rp_urdf_push_path_(c, "end_effector[#%zu]", c->n_eef_elems);
    c->n_eef_elems++;
    const char *group, *link, *pg = NULL;
    if (!srdf_room(c, u->n_effs, "end effectors") || !(name = srdf_name(c, atts, "name")) ||
        !(group = srdf_name(c, atts, "group")) || !(link = get_attr(c, atts, "parent_link", true)))
        return;
    if (attr(atts, "parent_group") && !(pg = srdf_name(c, atts, "parent_group")))
        return;
    size_t l = find_link(u, link);
    if (l == SIZE_MAX) {
        bad_attr(c, "parent_link", link, "is not a link of the URDF");
        return;
    }
    for (size_t e = 0; e < u->n_effs; e++)
        if (strcmp(u->effs[e].name, name) == 0) {
            rp_urdf_fail_(c, "end effector \"%s\" is defined twice", name);
            return;
        }
    rp_end_effector_def *p = room(c, u->effs, &u->cap_effs, u->n_effs, sizeof *p);
    if (!p)
        return;
    u->effs = p;
    unsigned long *pl = room(c, u->eff_lines, &u->cap_eff_lines, u->n_effs, sizeof *pl);
    if (!pl)
        return;
    u->eff_lines = pl;
    const char *kn = keep(c, name), *kg = kn ? keep(c, group) : NULL;
    const char *kp = kg && pg ? keep(c, pg) : NULL;
    if (!kg || (pg && !kp))
        return;
    u->eff_lines[u->n_effs] = (unsigned long)XML_GetCurrentLineNumber(c->xp);
    u->effs[u->n_effs++] = (rp_end_effector_def){kn, u->links[l].name, kg, kp};
}

static void open_passive(ctx *c, const XML_Char **atts)
{
    rp_urdf *u = c->u;
    rp_urdf_push_path_(c, "passive_joint[#%zu]", c->n_passive_elems++);
    const char *name =
        srdf_room(c, u->n_passive, "passive joints") ? get_attr(c, atts, "name", true) : NULL;
    if (!name)
        return;
    size_t j = find_joint(u, name);
    if (j == SIZE_MAX) {
        bad_attr(c, "name", name, "is not a joint of the URDF");
        return;
    }
    const char **p = room(c, u->passive, &u->cap_passive, u->n_passive, sizeof *p);
    if (!p)
        return;
    u->passive = p;
    u->passive[u->n_passive++] = u->joints[j].def.name;
}

/* Adds joint index j to the set `in` (by URDF joint order). */
static void mark_joint(bool *in, size_t j)
{
    if (j != SIZE_MAX)
        in[j] = true;
}

/* The joint whose child is link `name` (parent_of: per link, built once
 * by rp_urdf_resolve_srdf_), or SIZE_MAX. */
static size_t parent_joint(const rp_urdf *u, const size_t *parent_of, const char *name)
{
    size_t l = find_link(u, name);
    return l == SIZE_MAX ? SIZE_MAX : parent_of[l];
}

/* Fails the parse at `line` of the SRDF with c->path set to `where` for
 * the moment (the documents are read: no element is open). */
PRINTF_LIKE(4, 5)
static void fail_srdf_at(ctx *c, const char *where, unsigned long line, const char *fmt, ...)
{
    char reason[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    bool was = c->srdf;
    c->srdf = true;
    snprintf(c->path, sizeof c->path, "%s", where);
    rp_urdf_fail_at_(c, line, "%s", reason);
    c->path[0] = '\0';
    c->srdf = was;
}

static void fail_group(ctx *c, const group_rec *g, unsigned long line, const char *what,
                       const char *a, const char *b)
{
    char where[160];
    snprintf(where, sizeof where, "group[%s]", g->name);
    if (b)
        fail_srdf_at(c, where, line,
                     "chain: base_link \"%s\" is not an ancestor of tip_link \"%s\"", a, b);
    else
        fail_srdf_at(c, where, line, "subgroup \"%s\" %s", a, what ? what : "");
}

/* The joints of group g into in[] (marks), its subgroups first; false
 * when the parse failed. */
static bool resolve_group(ctx *c, const size_t *parent_of, size_t g, bool *in)
{
    rp_urdf *u = c->u;
    group_rec *gr = &u->groups[g];
    for (size_t k = gr->first; k < gr->first + gr->n; k++) {
        const member_rec *m = &u->members[k];
        switch (m->kind) {
        case M_JOINT:
            mark_joint(in, find_joint(u, m->a));
            break;
        case M_LINK: /* a link stands for the joint that moves it */
            mark_joint(in, parent_joint(u, parent_of, m->a));
            break;
        case M_CHAIN: {
            const char *at = m->b;
            size_t steps = 0;
            while (strcmp(at, m->a) != 0) {
                size_t j = parent_joint(u, parent_of, at);
                if (j == SIZE_MAX || ++steps > u->n_joints) {
                    fail_group(c, gr, m->line, NULL, m->a, m->b);
                    return false;
                }
                in[j] = true;
                at = u->joints[j].def.parent;
            }
            break;
        }
        case M_GROUP: {
            size_t sub = find_group(u, m->a);
            if (sub == SIZE_MAX) {
                fail_group(c, gr, m->line, "is no group of the SRDF", m->a, NULL);
                return false;
            }
            if (u->groups[sub].mark == 1) {
                fail_group(c, gr, m->line, "contains this group again", m->a, NULL);
                return false;
            }
            if (u->groups[sub].mark == 0) {
                u->groups[sub].mark = 1;
                bool *sin = calloc(u->n_joints + 1, sizeof *sin);
                if (!sin) {
                    rp_urdf_fail_nomem_(c);
                    return false;
                }
                bool ok = resolve_group(c, parent_of, sub, sin);
                free(sin);
                if (!ok)
                    return false;
            }
            for (size_t i = 0; i < u->groups[sub].n_joints; i++)
                mark_joint(in, find_joint(u, u->groups[sub].joints[i]));
            break;
        }
        }
    }
    gr->mark = 2;
    size_t n = 0;
    for (size_t j = 0; j < u->n_joints; j++)
        n += in[j];
    free(gr->joints);
    gr->joints = malloc((n ? n : 1) * sizeof *gr->joints);
    if (!gr->joints) {
        rp_urdf_fail_nomem_(c);
        return false;
    }
    gr->n_joints = 0;
    for (size_t j = 0; j < u->n_joints; j++)
        if (in[j])
            gr->joints[gr->n_joints++] = u->joints[j].def.name;
    return true;
}

void rp_urdf_resolve_srdf_(ctx *c)
{
    rp_urdf *u = c->u;
    if (!u->n_groups && !u->n_states && !u->n_effs)
        return;
    /* Each link's parent joint (the first joint naming it as child: the
     * store refuses a second), so that a chain costs its length. */
    size_t *parent_of = malloc((u->n_links + 1) * sizeof *parent_of);
    if (!parent_of) {
        rp_urdf_fail_nomem_(c);
        return;
    }
    for (size_t l = 0; l < u->n_links; l++)
        parent_of[l] = SIZE_MAX;
    for (size_t j = u->n_joints; j-- > 0;) {
        size_t l = find_link(u, u->joints[j].def.child);
        if (l != SIZE_MAX)
            parent_of[l] = j;
    }
    for (size_t g = 0; g < u->n_groups && c->status == RP_URDF_OK; g++) {
        if (u->groups[g].mark == 2)
            continue;
        bool *in = calloc(u->n_joints + 1, sizeof *in);
        if (!in) {
            rp_urdf_fail_nomem_(c);
            break;
        }
        u->groups[g].mark = 1;
        resolve_group(c, parent_of, g, in);
        free(in);
    }
    free(parent_of);
    /* States and end effectors name groups of the SRDF. */
    for (size_t i = 0; i < u->n_states && c->status == RP_URDF_OK; i++)
        if (find_group(u, u->states[i].group) == SIZE_MAX) {
            char where[160];
            snprintf(where, sizeof where, "group_state[%s]", u->states[i].name);
            fail_srdf_at(c, where, u->states[i].line, "group \"%s\" is no group of the SRDF",
                         u->states[i].group);
        }
    for (size_t e = 0; e < u->n_effs && c->status == RP_URDF_OK; e++) {
        const rp_end_effector_def *d = &u->effs[e];
        const char *bad = find_group(u, d->group) == SIZE_MAX ? d->group
                          : d->parent_group && find_group(u, d->parent_group) == SIZE_MAX
                              ? d->parent_group
                              : NULL;
        if (bad) {
            char where[160];
            snprintf(where, sizeof where, "end_effector[%s]", d->name);
            fail_srdf_at(c, where, u->eff_lines[e], "group \"%s\" is no group of the SRDF", bad);
        }
    }
}

/* The where of a limit hit here is the joint whose pair did not fit. */
void rp_urdf_add_adjacent_(ctx *c)
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

/* ---- dispatch ------------------------------------------------------------------ */

void rp_urdf_open_(ctx *c, elem e, const char *name, const XML_Char **atts)
{
    char q[RP_URDF_QUOTE_BUF];
    switch (e) {
    case E_ROBOT:
    case E_SROBOT:
        if (strcmp(name, "robot") != 0)
            rp_urdf_fail_(c, "the root element must be <robot>, not <%s>", rp_urdf_quote_(q, name));
        break;
    case E_LINK:
        open_link(c, atts);
        break;
    case E_COLLISION:
        open_collision(c);
        break;
    case E_C_ORIGIN:
        rp_urdf_push_path_(c, ".origin");
        open_collision_origin(c, atts);
        break;
    case E_GEOMETRY:
        rp_urdf_push_path_(c, ".geometry");
        open_geometry(c);
        break;
    case E_SPHERE:
    case E_CYLINDER:
    case E_CAPSULE:
    case E_BOX:
    case E_MESH:
        rp_urdf_push_path_(c, ".%s", name);
        open_shape(c, e, atts);
        break;
    case E_JOINT:
        open_joint(c, atts);
        break;
    case E_DISABLE:
        open_disable(c, atts);
        break;
    case E_GROUP:
        open_group(c, atts);
        break;
    case E_G_MEMBER:
        open_member(c, name, atts);
        break;
    case E_STATE:
        open_state(c, atts);
        break;
    case E_S_JOINT:
        open_state_joint(c, atts);
        break;
    case E_EEF:
        open_eef(c, atts);
        break;
    case E_PASSIVE:
        open_passive(c, atts);
        break;
    default:
        rp_urdf_push_path_(c, ".%s", name);
        open_joint_child(c, e, atts);
        break;
    }
}

void rp_urdf_close_(ctx *c, elem e)
{
    if (e == E_COLLISION)
        close_collision(c);
    else if (e == E_JOINT)
        close_joint(c);
}

/* ---- spheres of mesh collisions ------------------------------------------------ */

rp_urdf_status rp_urdf_add_spheres(rp_urdf *u, const char *link, const rp_sphere *s, size_t n,
                                   size_t max_shapes)
{
    rp_urdf_error scratch;
    static const rp_urdf_opts no_opts;
    ctx c = {.u = u, .opts = &no_opts, .err = &scratch};
    size_t li = find_link(u, link);
    if (li == SIZE_MAX)
        return RP_URDF_INVALID;
    if (max_shapes && (u->n_shapes > max_shapes || n > max_shapes - u->n_shapes))
        return RP_URDF_LIMIT;
    size_t first = 0; /* J continues after the link's spheres so far */
    size_t prefix = strlen(u->links[li].name);
    for (size_t i = 0; i < u->n_shapes; i++)
        if (u->shapes[i].name == u->links[li].name &&
            strncmp(u->shapes[i].link.id + prefix, "#s", 2) == 0)
            first++;
    for (size_t j = 0; j < n; j++) {
        rp_shape shape = rp_shape_from_sphere(s[j]);
        if (rp_shape_validate(&shape) != RP_OK)
            return RP_URDF_INVALID;
        char id[RP_NAME_MAX + 48];
        snprintf(id, sizeof id, "%s#s%zu", u->links[li].name, first + j);
        shape_rec *p = room(&c, u->shapes, &u->cap_shapes, u->n_shapes, sizeof *p);
        if (!p)
            return RP_URDF_NOMEM;
        u->shapes = p;
        const char *kept = keep(&c, id);
        if (!kept)
            return RP_URDF_NOMEM;
        unsigned long line = u->links[li].line;
        for (size_t m = 0; m < u->n_meshes; m++)
            if (u->meshes[m].link == u->links[li].name) {
                line = u->meshes[m].line;
                break;
            }
        u->shapes[u->n_shapes++] = (shape_rec){{kept, -1, shape}, u->links[li].name, line};
    }
    return rp_urdf_build_def_(u) ? RP_URDF_OK : RP_URDF_NOMEM;
}
