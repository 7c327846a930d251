/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the URDF + SRDF import (src/urdf/urdf.c, rp_urdf_parse).
 *
 * The input up to its first NUL byte is the URDF; the bytes after that NUL,
 * when there is one, are the SRDF.  Each input is parsed without limits
 * and with allow_adjacent, then again with limits set from what the first
 * parse found.  Invariants:
 *
 *  - a refusal leaves *out NULL, a non-empty NUL-terminated UTF-8 reason
 *    that starts with "WHERE: " when `where` is not empty, a UTF-8 `where`,
 *    a line no later than the document's last, and limit_name exactly for
 *    RP_URDF_LIMIT;
 *  - an accepted document gives at least one link; names (links, joints,
 *    parents, children, mimic targets, the allowed pairs) with the id
 *    syntax and no '#' (which shape ids use); allowed pairs and shape links
 *    among the link names; shape ids unique and of the form LINK#k for
 *    their link; shapes that pass rp_shape_validate, each a sphere, a
 *    capsule or a box (never a half-space); joints with finite values and
 *    limits exactly on revolute and prismatic joints, lower <= upper; a
 *    line for every link, joint and shape; an adjacency pair per joint
 *    whose links exist;
 *  - the limits are exact (max_links counting links, joints and each kind of
 *    SRDF element): max_shapes/max_links/max_pairs equal to the
 *    counts accept the document, one less refuses it with RP_URDF_LIMIT
 *    (and the other limits off).
 */
#include "fuzz_util.h"

#include "codec/codec.h"
#include "urdf/urdf.h"

/* Upper bound of the 1-based line numbers in doc[0..n): expat counts CR,
 * LF and CR LF as one line break each. */
static unsigned long max_line(const uint8_t *doc, size_t n)
{
    unsigned long lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += doc[i] == '\n' || doc[i] == '\r';
    return lines;
}

static void check_refusal(rp_urdf_status st, const rp_urdf *u, const rp_urdf_error *e,
                          unsigned long urdf_lines, unsigned long srdf_lines)
{
    FUZZ_CHECK(st == RP_URDF_INVALID || st == RP_URDF_LIMIT || st == RP_URDF_NOMEM, "status %d",
               (int)st);
    FUZZ_CHECK(!u, "a refusal returned a result");
    FUZZ_CHECK(fuzz_cstr_ok(e->reason, sizeof e->reason) && e->reason[0],
               "reason empty, unterminated or not UTF-8");
    FUZZ_CHECK(fuzz_cstr_ok(e->where, sizeof e->where), "where unterminated or not UTF-8");
    size_t wl = strlen(e->where);
    if (wl && wl + 2 < sizeof e->reason)
        FUZZ_CHECK(strncmp(e->reason, e->where, wl) == 0 && strncmp(e->reason + wl, ": ", 2) == 0,
                   "reason \"%s\" does not start with where \"%s\"", e->reason, e->where);
    FUZZ_CHECK(e->line <= (e->in_srdf ? srdf_lines : urdf_lines), "line %lu past the end", e->line);
    FUZZ_CHECK((st == RP_URDF_LIMIT) == (e->limit_name != NULL), "limit_name on status %d",
               (int)st);
}

/* A URDF name: the id syntax without '#'. */
static bool urdf_name(const char *s)
{
    return rp_codec_valid_id(s) && !strchr(s, '#');
}

static bool is_link(const rp_model_def *d, const char *name)
{
    for (size_t i = 0; i < d->n_link_names; i++)
        if (strcmp(d->link_names[i], name) == 0)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The id of shape i is "LINK#k" (k decimal) for its link. */
static bool id_of_link(const char *id, const char *link)
{
    size_t n = strlen(link);
    if (strncmp(id, link, n) != 0 || id[n] != '#')
        return false;
    const char *p = id + n + 1;
    size_t digits = strspn(p, "0123456789");
    return digits > 0 && p[digits] == '\0';
}

static void check_joints(const rp_urdf *u, const rp_model_def *d)
{
    for (size_t i = 0; i < d->n_joints; i++) {
        const rp_joint_def *j = &d->joints[i];
        FUZZ_CHECK(urdf_name(j->name) && urdf_name(j->parent) && urdf_name(j->child) &&
                       (!j->mimic || urdf_name(j->mimic)),
                   "joint %zu: a name without the id syntax", i);
        FUZZ_CHECK(j->type == RP_JOINT_FIXED || j->type == RP_JOINT_REVOLUTE ||
                       j->type == RP_JOINT_CONTINUOUS || j->type == RP_JOINT_PRISMATIC,
                   "joint %zu: type %d", i, (int)j->type);
        double v[] = {j->xyz.x,  j->xyz.y,  j->xyz.z,      j->rpy.x,  j->rpy.y, j->rpy.z, j->axis.x,
                      j->axis.y, j->axis.z, j->multiplier, j->offset, j->lower, j->upper};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            FUZZ_CHECK(isfinite(v[k]), "joint %s: value %zu not finite", j->name, k);
        bool limited = j->type == RP_JOINT_REVOLUTE || j->type == RP_JOINT_PRISMATIC;
        FUZZ_CHECK(j->has_limits == limited, "joint %s: has_limits %d", j->name, j->has_limits);
        FUZZ_CHECK(!limited || j->lower <= j->upper, "joint %s: lower > upper", j->name);
        FUZZ_CHECK(rp_urdf_joint_line(u, i) > 0, "joint %s: no line", j->name);
    }
}

/* Checks a document accepted with allow_adjacent. */
static void check_def(const rp_urdf *u)
{
    const rp_model_def *d = rp_urdf_def(u);
    FUZZ_CHECK(d->n_link_names >= 1 && d->link_names, "no links");
    FUZZ_CHECK(d->shape_links != NULL, "shape_links NULL: not the kinematic form");
    FUZZ_CHECK(d->safety_margin == 0 && d->self_collision && !d->n_defaults && !d->n_allowed_scene,
               "defaults changed");
    for (size_t i = 0; i < d->n_link_names; i++) {
        FUZZ_CHECK(urdf_name(d->link_names[i]), "link %zu: bad name", i);
        FUZZ_CHECK(rp_urdf_link_line(u, i) > 0, "link %zu: no line", i);
    }
    check_joints(u, d);
    const char **ids = malloc((d->n_links + 1) * sizeof *ids);
    FUZZ_CHECK(ids, "out of memory");
    for (size_t i = 0; i < d->n_links; i++) {
        FUZZ_CHECK(rp_shape_validate(&d->links[i].shape) == RP_OK, "shape %zu invalid", i);
        rp_shape_kind kind = d->links[i].shape.kind;
        FUZZ_CHECK(kind == RP_SHAPE_SPHERE || kind == RP_SHAPE_CAPSULE || kind == RP_SHAPE_BOX,
                   "shape %zu of kind %d", i, (int)kind);
        FUZZ_CHECK(is_link(d, d->shape_links[i]), "shape %zu on no link", i);
        FUZZ_CHECK(id_of_link(d->links[i].id, d->shape_links[i]), "shape id %s for link %s",
                   d->links[i].id, d->shape_links[i]);
        FUZZ_CHECK(rp_urdf_shape_line(u, i) > 0, "shape %zu: no line", i);
        ids[i] = d->links[i].id;
    }
    qsort(ids, d->n_links, sizeof *ids, cmp_str);
    for (size_t i = 1; i < d->n_links; i++)
        FUZZ_CHECK(strcmp(ids[i - 1], ids[i]) != 0, "shape id %s twice", ids[i]);
    free(ids);
    size_t adjacency = 0;
    for (size_t i = 0; i < d->n_joints; i++)
        adjacency += is_link(d, d->joints[i].parent) && is_link(d, d->joints[i].child);
    FUZZ_CHECK(d->n_allowed >= adjacency, "fewer pairs than adjacent joints");
    size_t srdf_pairs = d->n_allowed - adjacency;
    for (size_t i = 0; i < d->n_allowed; i++) {
        FUZZ_CHECK(is_link(d, d->allowed_pairs[2 * i]) && is_link(d, d->allowed_pairs[2 * i + 1]),
                   "pair %zu names no link", i);
        FUZZ_CHECK((rp_urdf_pair_line(u, i) > 0) == (i < srdf_pairs), "pair %zu: line", i);
    }
}

/* One limit, *field of *opts (the others off): the count accepts the
 * document, one less refuses it.  Leaves *field 0 (no limit). */
static void check_limit(const char *urdf, size_t ulen, const char *srdf, size_t slen,
                        rp_urdf_opts *opts, size_t *field, size_t count, const char *name)
{
    rp_urdf *u = NULL;
    rp_urdf_error e;
    *field = count ? count : 1;
    rp_urdf_status st = rp_urdf_parse(urdf, ulen, srdf, slen, opts, &u, &e);
    FUZZ_CHECK(st == RP_URDF_OK || st == RP_URDF_NOMEM, "%s = %zu (the count) refused: %s", name,
               *field, e.reason);
    rp_urdf_free(u);
    *field = count > 1 ? count - 1 : 0; /* 0 would mean no limit */
    if (*field) {
        st = rp_urdf_parse(urdf, ulen, srdf, slen, opts, &u, &e);
        FUZZ_CHECK(st == RP_URDF_LIMIT || st == RP_URDF_NOMEM, "%s = %zu accepted %zu", name,
                   *field, count);
        FUZZ_CHECK(st != RP_URDF_LIMIT || e.limit_max == *field, "limit_max %zu, set %zu",
                   e.limit_max, *field);
    }
    *field = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t ulen = nul ? (size_t)(nul - data) : size;
    const char *urdf = (const char *)data;
    const char *srdf = nul ? (const char *)nul + 1 : NULL;
    size_t slen = nul ? size - ulen - 1 : 0;

    rp_urdf *u = NULL;
    rp_urdf_error e;
    rp_urdf_opts opts = {.allow_adjacent = true};
    rp_urdf_status st = rp_urdf_parse(urdf, ulen, srdf, slen, &opts, &u, &e);
    if (st != RP_URDF_OK) {
        check_refusal(st, u, &e, max_line(data, ulen),
                      srdf ? max_line((const uint8_t *)srdf, slen) : 0);
        return 0;
    }
    check_def(u);
    const rp_model_def *d = rp_urdf_def(u);
    size_t links = d->n_link_names > d->n_joints ? d->n_link_names : d->n_joints;
    if (rp_urdf_srdf_count(u) > links) /* (SRDF elements count against it too) */
        links = rp_urdf_srdf_count(u);
    size_t shapes = d->n_links, pairs = d->n_allowed;
    rp_urdf_free(u);

    rp_urdf_opts lim = {.allow_adjacent = true};
    check_limit(urdf, ulen, srdf, slen, &lim, &lim.max_shapes, shapes, "max_shapes");
    check_limit(urdf, ulen, srdf, slen, &lim, &lim.max_links, links, "max_links");
    check_limit(urdf, ulen, srdf, slen, &lim, &lim.max_pairs, pairs, "max_pairs");
    return 0;
}
