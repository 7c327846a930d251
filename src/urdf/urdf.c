/* SPDX-License-Identifier: MIT */
/*
 * URDF + SRDF import (urdf.h): expat reads the XML, the handlers here pass
 * the elements that matter to urdf_elems.c, which keeps what the kinematic
 * form of rp_model_def needs; this file also reports failures and builds
 * the result.  proto/URDF.md is the user-facing version of these rules;
 * keep the two in step.
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
 *      box size="x y z"       -> the box, exactly: half extents size/2,
 *                                centred at the origin, axes along the
 *                                collision frame's;
 *      mesh                   -> refused: meshes are not supported.
 *    Radii and lengths must be finite and > 0, box edges finite and >= 0
 *    (a zero edge is a rectangle).  Ids: "LINK#k" for the k-th collision of
 *    link LINK (from 0), one shape each.
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
 * and an entity reference expat would skip is refused.  Any attribute list
 * declaration stops it too: its defaults and value normalisation would
 * change the attributes the elements carry.  The limits in
 * rp_urdf_opts are checked as elements arrive.
 */
#include "urdf/urdf.h"

#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/ids.h"
#include "urdf/urdf_parse.h"
#include "util/utf8.h"

/* Bytes handed to expat per call: XML_Parse takes an int length. */
#define CHUNK_BYTES ((size_t)1 << 20)

/* ---- failing ----------------------------------------------------------- */

/* expat hands us UTF-8 already; quoting makes a reason's validity
 * independent of that. */
const char *rp_urdf_quote_(char buf[RP_URDF_QUOTE_BUF], const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (*p) {
        size_t len = rp_utf8_seq_(p, 4); /* NUL-terminated: stops there */
        if (n + (len ? len : 1) > RP_URDF_QUOTE_MAX) {
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

/* Records the first failure: status, where (the current path), line (0:
 * the parser's current line) and reason "where: message"; then stops
 * expat.  Later failures (expat may still call a handler) change nothing. */
PRINTF_LIKE(4, 0)
static void vfail(ctx *c, rp_urdf_status st, unsigned long line, const char *fmt, va_list ap)
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

void rp_urdf_fail_(ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(c, RP_URDF_INVALID, 0, fmt, ap);
    va_end(ap);
}

void rp_urdf_fail_at_(ctx *c, unsigned long line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(c, RP_URDF_INVALID, line, fmt, ap);
    va_end(ap);
}

void rp_urdf_fail_limit_(ctx *c, size_t max, const char *name, const char *fmt, ...)
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

void rp_urdf_fail_nomem_(ctx *c)
{
    if (c->status != RP_URDF_OK)
        return;
    c->path[0] = '\0';
    rp_urdf_fail_(c, "out of memory");
    c->status = RP_URDF_NOMEM;
}

/* A segment too long for the path is cut at the path's end. */
void rp_urdf_push_path_(ctx *c, const char *fmt, ...)
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

/* ---- expat handlers --------------------------------------------------------- */

/* Elements the handlers act on, by parent; everything else is skipped. */
static const struct {
    elem parent;
    const char *name;
    elem e;
} children[] = {
    {E_ROBOT, "link", E_LINK},
    {E_ROBOT, "joint", E_JOINT},
    {E_LINK, "collision", E_COLLISION},
    {E_COLLISION, "origin", E_C_ORIGIN},
    {E_COLLISION, "geometry", E_GEOMETRY},
    {E_GEOMETRY, "sphere", E_SPHERE},
    {E_GEOMETRY, "cylinder", E_CYLINDER},
    {E_GEOMETRY, "capsule", E_CAPSULE},
    {E_GEOMETRY, "box", E_BOX},
    {E_GEOMETRY, "mesh", E_MESH},
    {E_JOINT, "parent", E_J_PARENT},
    {E_JOINT, "child", E_J_CHILD},
    {E_JOINT, "origin", E_J_ORIGIN},
    {E_JOINT, "axis", E_J_AXIS},
    {E_JOINT, "limit", E_J_LIMIT},
    {E_JOINT, "mimic", E_J_MIMIC},
    {E_SROBOT, "disable_collisions", E_DISABLE},
    {E_SROBOT, "group", E_GROUP},
    {E_GROUP, "joint", E_G_MEMBER},
    {E_GROUP, "link", E_G_MEMBER},
    {E_GROUP, "chain", E_G_MEMBER},
    {E_GROUP, "group", E_G_MEMBER},
    {E_SROBOT, "group_state", E_STATE},
    {E_STATE, "joint", E_S_JOINT},
    {E_SROBOT, "end_effector", E_EEF},
    {E_SROBOT, "passive_joint", E_PASSIVE},
};

/* What element `name` is here, given the open elements. */
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
    rp_urdf_open_(c, e, name, atts);
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
    rp_urdf_close_(c, c->stack[--c->depth]);
    c->path[c->path_len[c->depth]] = '\0';
}

static void XMLCALL on_entity_decl(void *ud, const XML_Char *name, int is_param,
                                   const XML_Char *value, int value_len, const XML_Char *base,
                                   const XML_Char *system_id, const XML_Char *public_id,
                                   const XML_Char *notation)
{
    (void)is_param, (void)value, (void)value_len, (void)base, (void)system_id, (void)public_id,
        (void)notation;
    char q[RP_URDF_QUOTE_BUF];
    rp_urdf_fail_(ud, "entity declarations are not allowed (<!ENTITY %s>)",
                  rp_urdf_quote_(q, name));
}

/* expat skips a reference to an entity it has not seen declared when the
 * document has an external DTD it did not read; refuse it rather than drop
 * text silently. */
static void XMLCALL on_skipped_entity(void *ud, const XML_Char *name, int is_param)
{
    (void)is_param;
    char q[RP_URDF_QUOTE_BUF];
    rp_urdf_fail_(ud, "entity reference &%s; cannot be resolved (external DTDs are not read)",
                  rp_urdf_quote_(q, name));
}

/* An <!ATTLIST> declaration changes what the elements it names say
 * without a trace in them: expat adds its default values as attributes
 * (<!ATTLIST link name CDATA "x"> names every unnamed link "x") and
 * collapses the spaces in attributes it declares of any type but CDATA
 * (name="a  b" would read as "a b").  So any declaration is refused, with
 * or without a default, naming the element and the attribute. */
static void XMLCALL on_attlist_decl(void *ud, const XML_Char *elname, const XML_Char *attname,
                                    const XML_Char *att_type, const XML_Char *dflt, int isrequired)
{
    (void)att_type, (void)dflt, (void)isrequired;
    char qe[RP_URDF_QUOTE_BUF], qa[RP_URDF_QUOTE_BUF];
    rp_urdf_fail_(ud,
                  "attribute list declarations are not allowed (<!ATTLIST %s %s>): they add "
                  "or change attributes of <%s>",
                  rp_urdf_quote_(qe, elname), rp_urdf_quote_(qa, attname), qe);
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
        rp_urdf_fail_nomem_(c);
        return;
    }
    c->depth = c->skip = 0;
    c->path[0] = '\0';
    XML_SetUserData(c->xp, c);
    XML_SetElementHandler(c->xp, on_start, on_end);
    XML_SetEntityDeclHandler(c->xp, on_entity_decl);
    XML_SetSkippedEntityHandler(c->xp, on_skipped_entity);
    XML_SetAttlistDeclHandler(c->xp, on_attlist_decl);
    XML_SetParamEntityParsing(c->xp, XML_PARAM_ENTITY_PARSING_NEVER);
    size_t off = 0;
    do {
        size_t n = len - off < CHUNK_BYTES ? len - off : CHUNK_BYTES;
        bool last = off + n == len;
        if (XML_Parse(c->xp, doc + off, (int)n, last) != XML_STATUS_OK) {
            enum XML_Error code = XML_GetErrorCode(c->xp);
            c->path[0] = '\0';
            if (code == XML_ERROR_NO_MEMORY)
                rp_urdf_fail_nomem_(c);
            else
                /* expat counts columns from 0, people from 1. */
                rp_urdf_fail_(c, "malformed XML: %s (column %lu)", XML_ErrorString(code),
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
static void free_def_arrays(rp_urdf *u)
{
    free(u->def_groups);
    free(u->def_states);
    u->def_groups = NULL;
    u->def_states = NULL;
    free(u->def_links);
    free(u->def_shape_links);
    free(u->def_link_names);
    free(u->def_joints);
    free(u->def_pairs);
    u->def_links = NULL;
    u->def_shape_links = u->def_link_names = u->def_pairs = NULL;
    u->def_joints = NULL;
}

bool rp_urdf_build_def_(rp_urdf *u)
{
    free_def_arrays(u); /* (again after rp_urdf_add_spheres) */
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
        .links = u->def_links,
        .n_links = ns,
        .safety_margin = 0,
        .allowed_pairs = u->def_pairs,
        .n_allowed = np,
        .self_collision = true,
        .shape_links = u->def_shape_links,
        .link_names = u->def_link_names,
        .n_link_names = nl,
        .joints = u->def_joints,
        .n_joints = nj,
        .mesh_covers = u->covers,
        .n_mesh_covers = u->n_covers,
        .end_effectors = u->effs,
        .n_end_effectors = u->n_effs,
        .passive_joints = u->passive,
        .n_passive = u->n_passive,
    };
    if (u->n_groups && !(u->def_groups = malloc(u->n_groups * sizeof *u->def_groups)))
        return false;
    for (size_t g = 0; g < u->n_groups; g++)
        u->def_groups[g] =
            (rp_group_def){u->groups[g].name, u->groups[g].joints, u->groups[g].n_joints};
    if (u->n_states && !(u->def_states = malloc(u->n_states * sizeof *u->def_states)))
        return false;
    for (size_t i = 0; i < u->n_states; i++) {
        const state_rec *r = &u->states[i];
        u->def_states[i] = (rp_state_def){r->name, r->group, u->state_joints + r->first,
                                          u->state_values + r->first, r->n};
    }
    u->def.groups = u->def_groups;
    u->def.n_groups = u->n_groups;
    u->def.states = u->def_states;
    u->def.n_states = u->n_states;
    return true;
}

rp_urdf_status rp_urdf_parse(const char *urdf, size_t urdf_len, const char *srdf, size_t srdf_len,
                             const rp_urdf_opts *opts, rp_urdf **out, rp_urdf_error *err)
{
    static const rp_urdf_opts no_opts;
    rp_urdf_error scratch;
    err = err ? err : &scratch;
    memset(err, 0, sizeof *err);
    *out = NULL;
    ctx c = {.opts = opts ? opts : &no_opts, .err = err};
    rp_urdf *u = c.u = calloc(1, sizeof *u);
    if (!u) {
        rp_urdf_fail_nomem_(&c);
        return c.status;
    }
    rp_urdf_tables_init_(u);
    if (!urdf)
        rp_urdf_fail_(&c, "no URDF document");
    else
        parse_doc(&c, urdf, urdf_len);
    if (c.status == RP_URDF_OK && u->n_links == 0)
        rp_urdf_fail_(&c, "the robot has no <link>");
    c.srdf = true;
    if (c.status == RP_URDF_OK && srdf)
        parse_doc(&c, srdf, srdf_len);
    c.srdf = false;
    if (c.status == RP_URDF_OK)
        rp_urdf_resolve_srdf_(&c);
    if (c.status == RP_URDF_OK && c.opts->allow_adjacent)
        rp_urdf_add_adjacent_(&c);
    if (c.status == RP_URDF_OK && !rp_urdf_build_def_(u))
        rp_urdf_fail_nomem_(&c);
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

size_t rp_urdf_srdf_count(const rp_urdf *u)
{
    size_t n[] = {u->n_groups,       u->n_members, u->n_states,
                  u->n_state_joints, u->n_effs,    u->n_passive};
    size_t most = 0;
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        most = n[i] > most ? n[i] : most;
    return most;
}

size_t rp_urdf_mesh_count(const rp_urdf *u)
{
    return u->n_meshes;
}

const rp_urdf_mesh *rp_urdf_mesh_at(const rp_urdf *u, size_t i)
{
    return i < u->n_meshes ? &u->meshes[i] : NULL;
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
    free(u->meshes);
    free(u->covers);
    for (size_t g = 0; g < u->n_groups; g++)
        free(u->groups[g].joints);
    free(u->members);
    free(u->groups);
    free(u->states);
    free(u->state_joints);
    free(u->state_values);
    free(u->effs);
    free(u->eff_lines);
    free(u->passive);
    free_def_arrays(u);
    free(u);
}

bool rp_urdf_model_reason(const rp_urdf *u, const rp_model_def *def, const rp_model_error *me,
                          char *buf, size_t cap)
{
    const rp_joint_def *j = me->index < def->n_joints ? &def->joints[me->index] : NULL;
    unsigned long jl = rp_urdf_joint_line(u, me->index);
    bool joint = j != NULL;
    switch (me->problem) {
    case RP_MODEL_UNKNOWN_JOINT_LINK:
        if (joint)
            snprintf(buf, cap, "joint '%s' (line %lu): %s link '%s' is not defined", j->name, jl,
                     me->element ? "child" : "parent", me->element ? j->child : j->parent);
        return joint;
    case RP_MODEL_TWO_PARENTS:
        if (joint)
            snprintf(buf, cap,
                     "joint '%s' (line %lu): link '%s' is already the child of another joint",
                     j->name, jl, j->child);
        return joint;
    case RP_MODEL_SELF_JOINT:
        if (joint)
            snprintf(buf, cap, "joint '%s' (line %lu) joins link '%s' to itself", j->name, jl,
                     j->parent);
        return joint;
    case RP_MODEL_CYCLE:
        if (joint)
            snprintf(buf, cap,
                     "joint '%s' (line %lu) closes a cycle: link '%s' is not reachable from the "
                     "root",
                     j->name, jl, j->child);
        return joint;
    case RP_MODEL_NO_ROOT:
        snprintf(buf, cap, "every link is a joint's child: there is no root");
        return true;
    case RP_MODEL_TWO_ROOTS:
        if (me->index >= def->n_link_names)
            return false;
        snprintf(buf, cap, "link '%s' (line %lu) is a second root: no joint has it as its child",
                 def->link_names[me->index], rp_urdf_link_line(u, me->index));
        return true;
    case RP_MODEL_DUPLICATE_JOINT:
        if (joint)
            snprintf(buf, cap, "joint '%s' (line %lu) is defined twice", j->name, jl);
        return joint;
    case RP_MODEL_BAD_AXIS:
        if (joint)
            snprintf(buf, cap, "joint '%s' (line %lu): axis must be non-zero", j->name, jl);
        return joint;
    case RP_MODEL_BAD_LIMITS:
        if (joint)
            snprintf(buf, cap, "joint '%s' (line %lu): limits need lower <= upper", j->name, jl);
        return joint;
    case RP_MODEL_BAD_MIMIC:
        if (joint)
            snprintf(buf, cap,
                     "joint '%s' (line %lu): mimic must name another moving joint (no cycles)",
                     j->name, jl);
        return joint;
    default:
        return false;
    }
}
