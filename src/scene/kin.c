/* SPDX-License-Identifier: MIT */
/*
 * Kinematic trees: compiling a definition (links, joints) into frames, and
 * forward kinematics.
 *
 * Compilation.  Links joined by fixed joints are one rigid body, so they
 * share one frame: a walk from the root gives every link its frame (the
 * frame of the nearest moving joint above it, -1 for the root's body, which
 * moves with the base pose) and its constant offset in that frame.  Every
 * moving joint then makes one frame, numbered in walk order so that parents
 * come before children, and link shapes are moved into their frame once.
 * A check of joint values is thereby a frame pose computation (this file)
 * followed by the frame-indexed check every model already has.
 *
 * Forward kinematics.  frame[f] = frame[parent] * pre * motion(value):
 * pre folds the parent link's offset and the joint origin, so a joint
 * costs one rigid product and one rotation about its axis (for the common
 * axes +x, +y, +z a mix of two columns), or a translation for prismatic
 * joints.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "simd.h"

/* ---- rigid transforms ---------------------------------------------------------- */

/* R = Rz(yaw) * Ry(pitch) * Rx(roll): URDF's fixed-axis roll, pitch, yaw. */
static rp_transform origin_transform(rp_vec3 xyz, rp_vec3 rpy)
{
    double cr, sr, cp, sp, cy, sy;
    rp_sincos_(rpy.x, &sr, &cr);
    rp_sincos_(rpy.y, &sp, &cp);
    rp_sincos_(rpy.z, &sy, &cy);
    rp_transform t;
    t.r[0][0] = cy * cp;
    t.r[0][1] = cy * sp * sr - sy * cr;
    t.r[0][2] = cy * sp * cr + sy * sr;
    t.r[1][0] = sy * cp;
    t.r[1][1] = sy * sp * sr + cy * cr;
    t.r[1][2] = sy * sp * cr - cy * sr;
    t.r[2][0] = -sp;
    t.r[2][1] = cp * sr;
    t.r[2][2] = cp * cr;
    t.t = xyz;
    return t;
}

/* a * b, written out (the hot path of forward kinematics).  restrict: out
 * is a local, so the compiler may keep the products in registers. */
static inline void compose(const rp_transform *restrict a, const rp_transform *restrict b,
                           rp_transform *restrict out)
{
    for (int i = 0; i < 3; i++) {
        double a0 = a->r[i][0], a1 = a->r[i][1], a2 = a->r[i][2];
        out->r[i][0] = a0 * b->r[0][0] + a1 * b->r[1][0] + a2 * b->r[2][0];
        out->r[i][1] = a0 * b->r[0][1] + a1 * b->r[1][1] + a2 * b->r[2][1];
        out->r[i][2] = a0 * b->r[0][2] + a1 * b->r[1][2] + a2 * b->r[2][2];
    }
    out->t.x = a->r[0][0] * b->t.x + a->r[0][1] * b->t.y + a->r[0][2] * b->t.z + a->t.x;
    out->t.y = a->r[1][0] * b->t.x + a->r[1][1] * b->t.y + a->r[1][2] * b->t.z + a->t.y;
    out->t.z = a->r[2][0] * b->t.x + a->r[2][1] * b->t.y + a->r[2][2] * b->t.z + a->t.z;
}

static inline void mix_columns(rp_transform *p, int u, int w, double c, double s)
{
    for (int i = 0; i < 3; i++) {
        double pu = p->r[i][u], pw = p->r[i][w];
        p->r[i][u] = c * pu + s * pw;
        p->r[i][w] = c * pw - s * pu;
    }
}

/* p = p * motion(joint, v), in place: the joint's rotation about its axis
 * (Rodrigues; a two-column mix for an axis along x, y or z) with s, c =
 * sin v, cos v, or for a prismatic joint a translation by v * axis. */
static inline void apply_motion(const rp_kin_joint *j, double v, double s, double c,
                                rp_transform *p)
{
    if (j->type == RP_JOINT_PRISMATIC) {
        rp_vec3 d = {j->axis.x * v, j->axis.y * v, j->axis.z * v};
        p->t.x += p->r[0][0] * d.x + p->r[0][1] * d.y + p->r[0][2] * d.z;
        p->t.y += p->r[1][0] * d.x + p->r[1][1] * d.y + p->r[1][2] * d.z;
        p->t.z += p->r[2][0] * d.x + p->r[2][1] * d.y + p->r[2][2] * d.z;
        return;
    }
    /* Rotation about axis k mixes the other two columns u, w:
     * [u w] <- [u w] * [[c, -s], [s, c]]; constant indices per case. */
    switch (j->axis_kind) {
    case 0:
        mix_columns(p, 1, 2, c, s);
        return;
    case 1:
        mix_columns(p, 2, 0, c, s);
        return;
    case 2:
        mix_columns(p, 0, 1, c, s);
        return;
    default:
        break;
    }
    double x = j->axis.x, y = j->axis.y, z = j->axis.z, k = 1.0 - c;
    double m[3][3] = {{c + k * x * x, k * x * y - s * z, k * x * z + s * y},
                      {k * x * y + s * z, c + k * y * y, k * y * z - s * x},
                      {k * x * z - s * y, k * y * z + s * x, c + k * z * z}};
    for (int i = 0; i < 3; i++) {
        double a0 = p->r[i][0], a1 = p->r[i][1], a2 = p->r[i][2];
        p->r[i][0] = a0 * m[0][0] + a1 * m[1][0] + a2 * m[2][0];
        p->r[i][1] = a0 * m[0][1] + a1 * m[1][1] + a2 * m[2][1];
        p->r[i][2] = a0 * m[0][2] + a1 * m[1][2] + a2 * m[2][2];
    }
}

/* The value of moving joint j (its own, or its mimic source's scaled and
 * offset) in joint vector q. */
static inline double joint_value(const rp_kin_joint *j, const double *q)
{
    return j->mult * q[j->src] + j->off;
}

/* Joint values whose sines and cosines are computed in one call. */
#define TRIG_CHUNK 64

/* frames[f] for f in [f0, f0 + n), n <= TRIG_CHUNK: the joint values
 * first, then their sines and cosines in one rp_sincos_n_ call (vector
 * lanes, the same bits as one at a time; prismatic joints' values go
 * through it too and are not used), then the products. */
static void frames_chunk(const rp_model *m, const rp_transform *base, const double *q, size_t f0,
                         size_t n, rp_transform *frames)
{
    const rp_kin_joint *moving = m->kin->moving;
    double v[TRIG_CHUNK], s[TRIG_CHUNK], c[TRIG_CHUNK];
    for (size_t i = 0; i < n; i++) {
        const rp_kin_joint *j = &moving[f0 + i];
        v[i] = joint_value(j, q);
    }
    rp_sincos_n_(v, s, c, n);
    for (size_t i = 0; i < n; i++) {
        const rp_kin_joint *j = &moving[f0 + i];
        const rp_transform *parent = j->parent < 0 ? base : &frames[j->parent];
        rp_transform p;
        compose(parent, &j->pre, &p);
        apply_motion(j, v[i], s[i], c[i], &p);
        frames[f0 + i] = p;
    }
}

void rp_kin_frames_(const rp_model *m, const rp_transform *base, const double *q,
                    rp_transform *frames)
{
    rp_transform identity;
    if (!base) {
        identity = rp_transform_identity();
        base = &identity;
    }
    size_t nf = m->frame_count;
    for (size_t f0 = 0; f0 < nf; f0 += TRIG_CHUNK)
        frames_chunk(m, base, q, f0, nf - f0 < TRIG_CHUNK ? nf - f0 : TRIG_CHUNK, frames);
}

void rp_kin_frames_n_(const rp_model *m, const rp_transform *base, const double *q, size_t n,
                      rp_transform *frames)
{
    size_t nf = m->frame_count, dof = m->kin->dof, r = 0;
#ifdef RP_SIMD_X86
    if (nf && nf <= RP_KIN4_MAX_FRAMES && rp_simd_level_() >= RP_SIMD_AVX2) {
        rp_transform identity = rp_transform_identity();
        const rp_kin_joint *moving = m->kin->moving;
        double v[4 * RP_KIN4_MAX_FRAMES], s[4 * RP_KIN4_MAX_FRAMES], c[4 * RP_KIN4_MAX_FRAMES];
        for (; r + 4 <= n; r += 4) {
            /* The values lane by lane, their sines and cosines in one call
             * (the same bits as one by one), then the products. */
            for (size_t f = 0; f < nf; f++) {
                const rp_kin_joint *j = &moving[f];
                for (size_t l = 0; l < 4; l++)
                    v[4 * f + l] = joint_value(j, q + (r + l) * dof);
            }
            rp_sincos_n_(v, s, c, 4 * nf);
            rp_transform *const out[4] = {frames + r * nf, frames + (r + 1) * nf,
                                          frames + (r + 2) * nf, frames + (r + 3) * nf};
            rp_kin_frames4_avx2_(m, base ? base : &identity, v, s, c, out);
        }
    }
#endif
    for (; r < n; r++)
        rp_kin_frames_(m, base, q + r * dof, frames + r * nf);
}

/* ---- compilation --------------------------------------------------------------- */

/* Names by index for the strtab (util/strtab.h). */
typedef struct name_list {
    const char *const *names;
} name_list;

static const char *name_at(const void *ctx, uint32_t v)
{
    return ((const name_list *)ctx)->names[v];
}

static uint32_t name_hash(const void *ctx, uint32_t v)
{
    return rp_strhash_(((const name_list *)ctx)->names[v]);
}

/* A name table over a growing array of names. */
typedef struct names {
    const char **v;
    size_t n, cap;
    name_list list;
    rp_strtab t;
} names;

static bool names_init(names *nm, size_t cap)
{
    nm->v = malloc((cap ? cap : 1) * sizeof *nm->v);
    nm->n = 0;
    nm->cap = cap;
    nm->list.names = nm->v;
    rp_strtab_init_(&nm->t, name_at, name_hash, &nm->list);
    return nm->v && rp_strtab_reserve_(&nm->t, cap);
}

static void names_free(names *nm)
{
    free(nm->v);
    rp_strtab_free_(&nm->t);
}

/* Index of s, or SIZE_MAX. */
static size_t names_find(const names *nm, const char *s)
{
    size_t slot;
    return rp_strtab_find_(&nm->t, s, rp_strhash_(s), &slot) ? nm->t.slots[slot] : SIZE_MAX;
}

/* Adds s unless present; returns its index, *added whether it was new.
 * The capacity was reserved by names_init. */
static size_t names_add(names *nm, const char *s, bool *added)
{
    size_t slot;
    uint32_t h = rp_strhash_(s);
    if (rp_strtab_find_(&nm->t, s, h, &slot)) {
        *added = false;
        return nm->t.slots[slot];
    }
    nm->v[nm->n] = s;
    rp_strtab_insert_at_(&nm->t, slot, (uint32_t)nm->n);
    *added = true;
    return nm->n++;
}

static bool finite3(rp_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

/* a / |a|, scaled first so that no square overflows or underflows; false
 * for a zero or non-finite a. */
static bool unit_axis(rp_vec3 a, rp_vec3 *out)
{
    double s = fmax(fabs(a.x), fmax(fabs(a.y), fabs(a.z)));
    if (!finite3(a) || s == 0.0)
        return false;
    rp_vec3 b = {a.x / s, a.y / s, a.z / s};
    double n = sqrt(b.x * b.x + b.y * b.y + b.z * b.z);
    *out = (rp_vec3){b.x / n, b.y / n, b.z / n};
    return true;
}

static rp_status fail(rp_model_error *err, rp_model_problem p, size_t index, size_t element)
{
    err->problem = p;
    err->index = index;
    err->element = element;
    return RP_ERR_INVALID_ARG;
}

/* Joint checks that need no other joint: type, origin, axis, limits. */
static rp_status check_joint(const rp_joint_def *j, size_t i, rp_model_error *err)
{
    if (j->type != RP_JOINT_FIXED && j->type != RP_JOINT_REVOLUTE &&
        j->type != RP_JOINT_CONTINUOUS && j->type != RP_JOINT_PRISMATIC)
        return fail(err, RP_MODEL_BAD_TYPE, i, 0);
    if (!finite3(j->xyz) || !finite3(j->rpy))
        return fail(err, RP_MODEL_BAD_ORIGIN, i, 0);
    rp_vec3 unit;
    if (j->type != RP_JOINT_FIXED && !unit_axis(j->axis, &unit))
        return fail(err, RP_MODEL_BAD_AXIS, i, 0);
    if (j->has_limits && j->type != RP_JOINT_CONTINUOUS &&
        (!isfinite(j->lower) || !isfinite(j->upper) || j->lower > j->upper))
        return fail(err, RP_MODEL_BAD_LIMITS, i, 0);
    if (j->mimic && (!isfinite(j->multiplier) || !isfinite(j->offset)))
        return fail(err, RP_MODEL_BAD_MIMIC, i, 0);
    return RP_OK;
}

/* Scratch of one compilation. */
typedef struct compiler {
    const rp_model_def *def;
    names links;         /* tree link names */
    names joints;        /* joint names */
    size_t *parent_of;   /* per link: the joint whose child it is, SIZE_MAX for none */
    size_t *child_first; /* per link: children joints, CSR over child_list */
    size_t *child_list;
    size_t *walk; /* links in walk order (root first) */
} compiler;

static void compiler_free(compiler *c)
{
    names_free(&c->links);
    names_free(&c->joints);
    free(c->parent_of);
    free(c->child_first);
    free(c->child_list);
    free(c->walk);
}

/* Link names: the given list, or every name joints and shapes mention. */
static rp_status collect_links(compiler *c, rp_model_error *err)
{
    const rp_model_def *def = c->def;
    bool added;
    if (def->link_names) {
        for (size_t i = 0; i < def->n_link_names; i++) {
            if (!def->link_names[i])
                return RP_ERR_INVALID_ARG;
            names_add(&c->links, def->link_names[i], &added);
            if (!added)
                return fail(err, RP_MODEL_DUPLICATE_LINK_NAME, i, 0);
        }
        return RP_OK;
    }
    for (size_t i = 0; i < def->n_joints; i++) {
        names_add(&c->links, def->joints[i].parent, &added);
        names_add(&c->links, def->joints[i].child, &added);
    }
    for (size_t k = 0; k < def->n_links; k++)
        names_add(&c->links, def->shape_links[k], &added);
    return RP_OK;
}

/* Joints: names, links, one parent per link, and the root; then a walk
 * from the root, which must reach every link (else a cycle). */
static rp_status build_tree(compiler *c, size_t *root, rp_model_error *err)
{
    const rp_model_def *def = c->def;
    size_t nl = c->links.n, nj = def->n_joints;
    c->parent_of = malloc((nl ? nl : 1) * sizeof *c->parent_of);
    c->child_first = calloc(nl + 1, sizeof *c->child_first);
    c->child_list = malloc((nj ? nj : 1) * sizeof *c->child_list);
    c->walk = malloc((nl ? nl : 1) * sizeof *c->walk);
    if (!c->parent_of || !c->child_first || !c->child_list || !c->walk)
        return RP_ERR_NOMEM;
    for (size_t l = 0; l < nl; l++)
        c->parent_of[l] = SIZE_MAX;
    for (size_t i = 0; i < nj; i++) {
        const rp_joint_def *j = &def->joints[i];
        bool added;
        rp_status st = check_joint(j, i, err);
        if (st)
            return st;
        names_add(&c->joints, j->name, &added);
        if (!added)
            return fail(err, RP_MODEL_DUPLICATE_JOINT, i, 0);
        size_t p = names_find(&c->links, j->parent), ch = names_find(&c->links, j->child);
        if (p == SIZE_MAX)
            return fail(err, RP_MODEL_UNKNOWN_JOINT_LINK, i, 0);
        if (ch == SIZE_MAX)
            return fail(err, RP_MODEL_UNKNOWN_JOINT_LINK, i, 1);
        if (p == ch)
            return fail(err, RP_MODEL_SELF_JOINT, i, 0);
        if (c->parent_of[ch] != SIZE_MAX)
            return fail(err, RP_MODEL_TWO_PARENTS, i, 0);
        c->parent_of[ch] = i;
        c->child_first[p + 1]++;
    }
    for (size_t l = 0; l < nl; l++)
        c->child_first[l + 1] += c->child_first[l];
    /* Children in definition order: fill with a moving cursor per link. */
    size_t *cursor = malloc((nl ? nl : 1) * sizeof *cursor);
    if (!cursor)
        return RP_ERR_NOMEM;
    memcpy(cursor, c->child_first, nl * sizeof *cursor);
    for (size_t i = 0; i < nj; i++)
        c->child_list[cursor[names_find(&c->links, def->joints[i].parent)]++] = i;
    free(cursor);

    *root = SIZE_MAX;
    for (size_t l = 0; l < nl; l++) {
        if (c->parent_of[l] != SIZE_MAX)
            continue;
        if (*root != SIZE_MAX)
            return fail(err, RP_MODEL_TWO_ROOTS, l, 0);
        *root = l;
    }
    if (nl && *root == SIZE_MAX)
        return fail(err, RP_MODEL_NO_ROOT, 0, 0);
    /* Breadth first from the root; walk[] doubles as the queue. */
    size_t head = 0, tail = 0;
    if (nl)
        c->walk[tail++] = *root;
    while (head < tail) {
        size_t l = c->walk[head++];
        for (size_t e = c->child_first[l]; e < c->child_first[l + 1]; e++)
            c->walk[tail++] = names_find(&c->links, def->joints[c->child_list[e]].child);
    }
    if (tail < nl) {
        /* Some link is unreachable: it hangs in a cycle.  Name the first
         * joint (in definition order) whose child the walk missed. */
        bool *seen = calloc(nl, sizeof *seen);
        if (!seen)
            return RP_ERR_NOMEM;
        for (size_t i = 0; i < tail; i++)
            seen[c->walk[i]] = true;
        size_t bad = 0;
        for (size_t i = 0; i < nj; i++)
            if (!seen[names_find(&c->links, def->joints[i].child)]) {
                bad = i;
                break;
            }
        free(seen);
        return fail(err, RP_MODEL_CYCLE, bad, 0);
    }
    return RP_OK;
}

/* Follows a joint's mimic chain to an active joint; composes the affine
 * maps.  BAD_MIMIC for a missing or fixed target, or a chain that loops. */
static rp_status resolve_mimic(const compiler *c, size_t i, size_t *src, double *mult, double *off,
                               rp_model_error *err)
{
    const rp_model_def *def = c->def;
    double a = 1.0, b = 0.0;
    size_t cur = i;
    for (size_t steps = 0; def->joints[cur].mimic; steps++) {
        const rp_joint_def *j = &def->joints[cur];
        size_t t = names_find(&c->joints, j->mimic);
        if (steps > def->n_joints || t == SIZE_MAX || t == cur ||
            def->joints[t].type == RP_JOINT_FIXED)
            return fail(err, RP_MODEL_BAD_MIMIC, i, 0);
        /* value(cur) = m * value(t) + o, and value(i) = a * value(cur) + b. */
        b = a * j->offset + b;
        a = a * j->multiplier;
        cur = t;
    }
    *src = cur; /* an active joint: the caller maps it to its dof index */
    *mult = a;
    *off = b;
    return RP_OK;
}

static bool alloc_kin(rp_model *m, rp_kin *k, size_t nl, size_t nj, size_t nf, size_t dof)
{
    (void)m;
    k->tree_names = calloc(nl ? nl : 1, sizeof *k->tree_names);
    k->link_frame = malloc((nl ? nl : 1) * sizeof *k->link_frame);
    k->link_offset = malloc((nl ? nl : 1) * sizeof *k->link_offset);
    k->joints = calloc(nj ? nj : 1, sizeof *k->joints);
    k->moving = malloc((nf ? nf : 1) * sizeof *k->moving);
    k->dof_joint = malloc((dof ? dof : 1) * sizeof *k->dof_joint);
    k->dof_default = malloc((dof ? dof : 1) * sizeof *k->dof_default);
    k->bytes += nl * (sizeof *k->tree_names + sizeof *k->link_frame + sizeof *k->link_offset) +
                nj * sizeof *k->joints + nf * sizeof *k->moving +
                dof * (sizeof *k->dof_joint + sizeof *k->dof_default);
    return k->tree_names && k->link_frame && k->link_offset && k->joints && k->moving &&
           k->dof_joint && k->dof_default;
}

void rp_kin_release_(rp_kin *k)
{
    if (!k || atomic_fetch_sub(&k->refs, 1) > 1)
        return;
    free(k->tree_names);
    free(k->link_frame);
    free(k->link_offset);
    free(k->joints);
    free(k->moving);
    free(k->dof_joint);
    free(k->dof_default);
    free(k->allowed_links);
    free(k->chars);
    free(k);
}

/* The kin's own copy of a name, at *used in k->chars.  Not in the model's
 * strings: extensions share the kin and may outlive the model. */
static const char *keep(rp_kin *k, size_t *used, const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s) + 1;
    char *p = k->chars + *used;
    memcpy(p, s, len);
    *used += len;
    return p;
}

/* An axis that is exactly a positive unit coordinate axis gets the fast
 * two-column rotation; anything else the general one. */
static int axis_kind_of(rp_vec3 a)
{
    if (a.x == 1.0 && a.y == 0.0 && a.z == 0.0)
        return 0;
    if (a.x == 0.0 && a.y == 1.0 && a.z == 0.0)
        return 1;
    if (a.x == 0.0 && a.y == 0.0 && a.z == 1.0)
        return 2;
    return -1;
}

/* The definition's references that the compiler dereferences without
 * checking: joint names and ends, and every shape's link. */
static rp_status check_refs(const rp_model_def *def)
{
    for (size_t i = 0; i < def->n_joints; i++) {
        const rp_joint_def *j = &def->joints[i];
        if (!j->name || !j->parent || !j->child)
            return RP_ERR_INVALID_ARG;
    }
    if (def->n_links && !def->shape_links)
        return RP_ERR_INVALID_ARG;
    for (size_t k = 0; k < def->n_links; k++)
        if (!def->shape_links[k])
            return RP_ERR_INVALID_ARG;
    if (def->n_joints > SIZE_MAX / 4 || def->n_link_names > SIZE_MAX / 4)
        return RP_ERR_NOMEM;
    return RP_OK;
}

/* Copies the names of the tree's links, of the joints and of their mimics
 * into one block (k->chars), and the links' into k->tree_names. */
static bool keep_names(rp_kin *k, const compiler *c, size_t *used)
{
    const rp_model_def *def = c->def;
    size_t chars = 0;
    for (size_t l = 0; l < c->links.n; l++)
        chars += strlen(c->links.v[l]) + 1;
    for (size_t i = 0; i < def->n_joints; i++)
        chars += strlen(def->joints[i].name) + 1 +
                 (def->joints[i].mimic ? strlen(def->joints[i].mimic) + 1 : 0);
    k->chars = malloc(chars ? chars : 1);
    if (!k->chars)
        return false;
    k->bytes += chars;
    for (size_t l = 0; l < c->links.n; l++)
        k->tree_names[l] = keep(k, used, c->links.v[l]);
    return true;
}

/* The joints, their names kept in k; the active ones (not fixed, not a
 * mimic) in definition order, with their default at the value of their
 * range nearest zero.  dof_of[i]: joint i's index among them (SIZE_MAX for
 * the others). */
static void copy_joints(rp_kin *k, const compiler *c, size_t *used, size_t *dof_of)
{
    const rp_model_def *def = c->def;
    for (size_t i = 0, d = 0; i < def->n_joints; i++) {
        const rp_joint_def *j = &def->joints[i];
        k->joints[i] = *j;
        k->joints[i].name = keep(k, used, j->name);
        k->joints[i].parent = k->tree_names[names_find(&c->links, j->parent)];
        k->joints[i].child = k->tree_names[names_find(&c->links, j->child)];
        k->joints[i].mimic = keep(k, used, j->mimic);
        if (j->type == RP_JOINT_CONTINUOUS)
            k->joints[i].has_limits = false;
        if (j->type != RP_JOINT_FIXED)
            unit_axis(j->axis, &k->joints[i].axis);
        dof_of[i] = SIZE_MAX;
        if (j->type != RP_JOINT_FIXED && !j->mimic) {
            dof_of[i] = d;
            k->dof_joint[d] = i;
            double lo = k->joints[i].has_limits ? j->lower : -INFINITY;
            double hi = k->joints[i].has_limits ? j->upper : INFINITY;
            k->dof_default[d] = 0.0 < lo ? lo : (0.0 > hi ? hi : 0.0);
            d++;
        }
    }
}

/* The definition's default joint values, over the range defaults. */
static rp_status set_defaults(rp_kin *k, const compiler *c, const size_t *dof_of,
                              rp_model_error *err)
{
    const rp_model_def *def = c->def;
    for (size_t i = 0; i < def->n_defaults; i++) {
        size_t j = def->default_names[i] ? names_find(&c->joints, def->default_names[i]) : SIZE_MAX;
        if (j == SIZE_MAX || dof_of[j] == SIZE_MAX)
            return fail(err, RP_MODEL_UNKNOWN_DEFAULT, i, 0);
        if (!isfinite(def->default_values[i]))
            return fail(err, RP_MODEL_BAD_DEFAULT, i, 0);
        k->dof_default[dof_of[j]] = def->default_values[i];
    }
    return RP_OK;
}

/* The SRDF side of the definition (groups, states, end effectors,
 * passive joints): names that must be the tree's, values that must be
 * finite.  Kept by the model's copy of the def (model_def.c) and read from
 * there; nothing here is compiled. */
static size_t group_find(const rp_model_def *def, const char *name, size_t before)
{
    for (size_t g = 0; g < before; g++)
        if (name && def->groups[g].name && strcmp(def->groups[g].name, name) == 0)
            return g;
    return SIZE_MAX;
}

static rp_status check_srdf(const compiler *c, rp_model_error *err)
{
    const rp_model_def *def = c->def;
    for (size_t g = 0; g < def->n_groups; g++) {
        const rp_group_def *gd = &def->groups[g];
        if (!gd->name || group_find(def, gd->name, g) != SIZE_MAX)
            return fail(err, RP_MODEL_BAD_GROUP, g, SIZE_MAX);
        for (size_t i = 0; i < gd->n_joints; i++)
            if (!gd->joints[i] || names_find(&c->joints, gd->joints[i]) == SIZE_MAX)
                return fail(err, RP_MODEL_BAD_GROUP, g, i);
    }
    for (size_t p = 0; p < def->n_passive; p++)
        if (!def->passive_joints[p] || names_find(&c->joints, def->passive_joints[p]) == SIZE_MAX)
            return fail(err, RP_MODEL_BAD_PASSIVE, p, 0);
    for (size_t s = 0; s < def->n_states; s++) {
        const rp_state_def *sd = &def->states[s];
        if (!sd->name || group_find(def, sd->group, def->n_groups) == SIZE_MAX)
            return fail(err, RP_MODEL_BAD_STATE, s, SIZE_MAX);
        for (size_t t = 0; t < s; t++)
            if (strcmp(def->states[t].name, sd->name) == 0 &&
                strcmp(def->states[t].group, sd->group) == 0)
                return fail(err, RP_MODEL_BAD_STATE, s, SIZE_MAX);
        /* A joint that does not move (fixed, or a mimic) may have a value:
         * SRDFs are shared by URDFs that fix different joints (VAMP's
         * Panda fixes the fingers its SRDF's "open" state names).  Such a
         * value is kept and not applied. */
        for (size_t i = 0; i < sd->n_joints; i++) {
            size_t j = sd->joints[i] ? names_find(&c->joints, sd->joints[i]) : SIZE_MAX;
            if (j == SIZE_MAX || !isfinite(sd->values[i]))
                return fail(err, RP_MODEL_BAD_STATE, s, i);
        }
    }
    for (size_t e = 0; e < def->n_end_effectors; e++) {
        const rp_end_effector_def *ed = &def->end_effectors[e];
        bool dup = false;
        for (size_t f = 0; f < e && ed->name; f++)
            dup |= strcmp(def->end_effectors[f].name, ed->name) == 0;
        if (!ed->name || dup || !ed->parent_link ||
            names_find(&c->links, ed->parent_link) == SIZE_MAX ||
            group_find(def, ed->group, def->n_groups) == SIZE_MAX ||
            (ed->parent_group && group_find(def, ed->parent_group, def->n_groups) == SIZE_MAX))
            return fail(err, RP_MODEL_BAD_END_EFFECTOR, e, 0);
    }
    return RP_OK;
}

/* Frames in walk order: a link's frame and offset follow from its parent
 * joint's, which the walk visited first.  Each moving joint starts a frame
 * (k->moving); a fixed one keeps its parent's, with an offset. */
static rp_status place_frames(rp_kin *k, const compiler *c, const size_t *dof_of,
                              rp_model_error *err)
{
    size_t f = 0;
    for (size_t w = 0; w < c->links.n; w++) {
        size_t l = c->walk[w];
        size_t ji = c->parent_of[l];
        if (ji == SIZE_MAX) {
            k->link_frame[l] = -1;
            k->link_offset[l] = rp_transform_identity();
            continue;
        }
        const rp_joint_def *j = &k->joints[ji];
        size_t p = names_find(&c->links, c->def->joints[ji].parent);
        rp_transform origin = origin_transform(j->xyz, j->rpy);
        rp_transform pre = rp_transform_compose(&k->link_offset[p], &origin);
        if (j->type == RP_JOINT_FIXED) {
            k->link_frame[l] = k->link_frame[p];
            k->link_offset[l] = pre;
            continue;
        }
        rp_kin_joint *mj = &k->moving[f];
        mj->parent = k->link_frame[p];
        mj->pre = pre;
        mj->axis = j->axis;
        mj->axis_kind = axis_kind_of(j->axis);
        mj->type = j->type;
        mj->def = ji;
        mj->depth = 1 + (mj->parent < 0 ? 0 : k->moving[mj->parent].depth);
        size_t src;
        rp_status st = resolve_mimic(c, ji, &src, &mj->mult, &mj->off, err);
        if (st)
            return st;
        mj->src = dof_of[src];
        k->link_frame[l] = (int)f;
        k->link_offset[l] = rp_transform_identity();
        f++;
    }
    return RP_OK;
}

/* Shapes: into their link's frame. */
static bool place_shapes(rp_model *m, const rp_kin *k, const compiler *c)
{
    const rp_model_def *def = c->def;
    m->shape_link = rp_model_alloc_(m, def->n_links * sizeof *m->shape_link);
    m->shape_local = rp_model_alloc_(m, def->n_links * sizeof *m->shape_local);
    if (!m->shape_link || !m->shape_local)
        return false;
    for (size_t s = 0; s < def->n_links; s++) {
        size_t l = names_find(&c->links, def->shape_links[s]);
        m->shape_link[s] = l;
        m->shape_local[s] = def->links[s].shape;
        m->links[s].frame = k->link_frame[l];
        m->links[s].shape = rp_transform_shape(&k->link_offset[l], &def->links[s].shape);
    }
    return true;
}

/* Allowed pairs name links here: their indices into k->allowed_links. */
static rp_status resolve_allowed(rp_kin *k, const compiler *c, rp_model_error *err)
{
    const rp_model_def *def = c->def;
    k->allowed_links = malloc((def->n_allowed ? 2 * def->n_allowed : 1) * sizeof(size_t));
    if (!k->allowed_links)
        return RP_ERR_NOMEM;
    k->bytes += 2 * def->n_allowed * sizeof(size_t);
    for (size_t i = 0; i < 2 * def->n_allowed; i++) {
        size_t l = names_find(&c->links, def->allowed_pairs[i]);
        if (l == SIZE_MAX)
            return fail(err, RP_MODEL_UNKNOWN_PAIR_LINK, i / 2, i % 2);
        k->allowed_links[i] = l;
    }
    k->n_allowed_links = def->n_allowed;
    return RP_OK;
}

rp_status rp_kin_compile_(rp_model *m, const rp_model_def *def, rp_model_error *err)
{
    rp_status st = check_refs(def);
    if (st)
        return st;
    compiler c;
    memset(&c, 0, sizeof c);
    c.def = def;
    size_t cap_links = def->link_names ? def->n_link_names : 2 * def->n_joints + def->n_links;
    size_t *dof_of = NULL;
    st = RP_ERR_NOMEM;
    rp_kin *k = calloc(1, sizeof *k);
    if (!k || !names_init(&c.links, cap_links) || !names_init(&c.joints, def->n_joints))
        goto out;
    atomic_init(&k->refs, 1);
    k->bytes = sizeof *k;
    st = collect_links(&c, err);
    if (st)
        goto out;
    for (size_t s = 0; s < def->n_links; s++)
        if (names_find(&c.links, def->shape_links[s]) == SIZE_MAX) {
            st = fail(err, RP_MODEL_UNKNOWN_SHAPE_LINK, s, 0);
            goto out;
        }
    size_t root;
    st = build_tree(&c, &root, err);
    if (st)
        goto out;

    size_t nl = c.links.n, nj = def->n_joints, nf = 0, dof = 0;
    for (size_t i = 0; i < nj; i++)
        if (def->joints[i].type != RP_JOINT_FIXED) {
            nf++;
            dof += def->joints[i].mimic == NULL;
        }
    st = RP_ERR_NOMEM;
    if (!alloc_kin(m, k, nl, nj, nf, dof))
        goto out;
    k->n_tree = nl;
    k->n_joints = nj;
    k->dof = dof;
    k->root = nl ? root : SIZE_MAX;
    size_t used = 0;
    if (!keep_names(k, &c, &used) || !(dof_of = malloc((nj ? nj : 1) * sizeof *dof_of)))
        goto out;
    copy_joints(k, &c, &used, dof_of);
    if ((st = set_defaults(k, &c, dof_of, err)) || (st = check_srdf(&c, err)) ||
        (st = place_frames(k, &c, dof_of, err)))
        goto out;
    m->frame_count = nf;
    st = RP_ERR_NOMEM;
    if (!place_shapes(m, k, &c) || (st = resolve_allowed(k, &c, err)))
        goto out;
    m->kin = k;
    m->bytes += k->bytes;
    k = NULL;
    st = RP_OK;
out:
    if (k) {
        atomic_init(&k->refs, 1);
        rp_kin_release_(k);
    }
    free(dof_of);
    compiler_free(&c);
    return st;
}

/* ---- public ------------------------------------------------------------------- */

bool rp_model_is_kinematic(const rp_model *m)
{
    return m->kin != NULL;
}
size_t rp_model_dof(const rp_model *m)
{
    return m->kin ? m->kin->dof : 0;
}

static const rp_joint_def *dof_def(const rp_model *m, size_t i)
{
    return &m->kin->joints[m->kin->dof_joint[i]];
}

const char *rp_model_dof_name(const rp_model *m, size_t i)
{
    return dof_def(m, i)->name;
}
rp_joint_type rp_model_dof_type(const rp_model *m, size_t i)
{
    return dof_def(m, i)->type;
}
double rp_model_dof_default(const rp_model *m, size_t i)
{
    return m->kin->dof_default[i];
}

bool rp_model_dof_limits(const rp_model *m, size_t i, double *lower, double *upper)
{
    const rp_joint_def *j = dof_def(m, i);
    if (lower)
        *lower = j->has_limits ? j->lower : -INFINITY;
    if (upper)
        *upper = j->has_limits ? j->upper : INFINITY;
    return j->has_limits;
}

size_t rp_model_dof_find(const rp_model *m, const char *name)
{
    for (size_t i = 0; m->kin && i < m->kin->dof; i++)
        if (strcmp(dof_def(m, i)->name, name) == 0)
            return i;
    return SIZE_MAX;
}

void rp_model_default_joints(const rp_model *m, double *q)
{
    for (size_t i = 0; m->kin && i < m->kin->dof; i++)
        q[i] = m->kin->dof_default[i];
}

size_t rp_model_tree_link_count(const rp_model *m)
{
    return m->kin ? m->kin->n_tree : 0;
}
const char *rp_model_tree_link_name(const rp_model *m, size_t i)
{
    return m->kin->tree_names[i];
}
size_t rp_model_root(const rp_model *m)
{
    return m->kin ? m->kin->root : SIZE_MAX;
}
size_t rp_model_joint_count(const rp_model *m)
{
    return m->kin ? m->kin->n_joints : 0;
}
const rp_joint_def *rp_model_joint_at(const rp_model *m, size_t i)
{
    return &m->kin->joints[i];
}

size_t rp_model_tree_link_find(const rp_model *m, const char *name)
{
    for (size_t i = 0; m->kin && i < m->kin->n_tree; i++)
        if (strcmp(m->kin->tree_names[i], name) == 0)
            return i;
    return SIZE_MAX;
}

size_t rp_model_shape_link(const rp_model *m, size_t i)
{
    return m->shape_link ? m->shape_link[i] : SIZE_MAX;
}

size_t rp_model_limit_violation(const rp_model *m, const double *q, size_t start)
{
    for (size_t i = start; m->kin && i < m->kin->dof; i++) {
        const rp_joint_def *j = dof_def(m, i);
        if (j->has_limits && !(q[i] >= j->lower && q[i] <= j->upper))
            return i;
    }
    return SIZE_MAX;
}

static bool all_finite(const double *q, size_t n)
{
    double probe = 0.0;
    for (size_t i = 0; i < n; i++)
        probe += q[i] - q[i];
    return probe == 0.0;
}

/* The frame poses for q: in `stack` (RP_STACK_FRAMES entries) when they
 * fit, else in a heap block the caller frees (when it is not stack); NULL
 * when out of memory. */
static rp_transform *frames_for(const rp_model *m, const rp_transform *base, const double *q,
                                rp_transform *stack)
{
    rp_transform *frames = stack;
    if (m->frame_count > RP_STACK_FRAMES && !(frames = malloc(m->frame_count * sizeof *frames)))
        return NULL;
    rp_kin_frames_(m, base, q, frames);
    return frames;
}

/* Configurations whose frames rp_model_check_joints_batch computes at a
 * time. */
#define BATCH_GROUP 16

static rp_status batch_run(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                           const double *q, size_t n, const rp_check_opts *opts,
                           rp_check_result *out, size_t *failed);

rp_status rp_model_check_joints_batch(const rp_model *m, const rp_scene *scene,
                                      const rp_transform *base, const double *q, size_t n,
                                      const rp_check_opts *opts, rp_check_result *out,
                                      size_t *failed)
{
    size_t fail_dummy;
    if (!failed)
        failed = &fail_dummy;
    rp_work *work = opts ? opts->work : NULL;
    rp_status run =
        rp_ignore_open_(scene, opts ? opts->ignore : NULL, opts ? opts->n_ignore : 0, NULL);
    if (run) {
        *failed = 0;
        if (n && out)
            memset(out, 0, sizeof *out);
        return run;
    }
    rp_meter_open_(work);
    run = batch_run(m, scene, base, q, n, opts, out, failed);
    rp_status st = rp_meter_close_(work, run);
    rp_ignore_close_();
    if (st == RP_ERR_WORK) {
        /* The walks that ran out may have served any vector: keep no
         * result.  A run that went on to the end filled every out[]; one
         * stopped by a vector's own RP_ERR_WORK filled those before it
         * (that one's was freed by rp_model_check). */
        size_t filled = run == RP_OK ? n : *failed;
        for (size_t r = 0; r < filled; r++)
            rp_check_result_free(&out[r]);
        if (n)
            memset(out, 0, sizeof *out);
        *failed = 0;
    }
    return st;
}

static rp_status batch_run(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                           const double *q, size_t n, const rp_check_opts *opts,
                           rp_check_result *out, size_t *failed)
{
    *failed = 0;
    if (n && !out)
        return RP_ERR_INVALID_ARG;
    if (!m || !m->kin || (n && m->kin->dof && !q)) {
        if (n)
            memset(out, 0, sizeof *out);
        return RP_ERR_INVALID_ARG;
    }
    size_t dof = m->kin->dof;
    bool first = opts && opts->report == RP_REPORT_FIRST;
    double margin = opts && opts->has_margin ? opts->margin : m->safety_margin;
    if (!first || isnan(margin) || m->frame_count == 0) {
        /* Nothing to share (or an argument rp_model_check refuses): one by
         * one. */
        for (size_t r = 0; r < n; r++) {
            rp_status st = rp_model_check_joints(m, scene, base, q + r * dof, opts, &out[r]);
            if (st) {
                *failed = r;
                return st;
            }
        }
        return RP_OK;
    }
    size_t nf = m->frame_count;
    rp_transform *frames = malloc(BATCH_GROUP * nf * sizeof *frames);
    if (!frames) {
        memset(out, 0, sizeof *out);
        return RP_ERR_NOMEM;
    }
    rp_status st = RP_OK;
    for (size_t r0 = 0; r0 < n && st == RP_OK; r0 += BATCH_GROUP) {
        size_t k = n - r0 < BATCH_GROUP ? n - r0 : BATCH_GROUP;
        for (size_t j = 0; j < k; j++) {
            const double *qj = q + (r0 + j) * dof;
            if (!all_finite(qj, dof)) {
                /* The ones before it first, as one by one would. */
                size_t f = 0;
                rp_kin_frames_n_(m, base, q + r0 * dof, j, frames);
                if (j && (st = rp_model_check_first_many_(m, scene, base, frames, j, margin,
                                                          &out[r0], &f))) {
                    *failed = r0 + f;
                } else {
                    memset(&out[r0 + j], 0, sizeof out[r0 + j]);
                    out[r0 + j].closest.link = SIZE_MAX;
                    *failed = r0 + j;
                    st = RP_ERR_NONFINITE;
                }
                free(frames);
                return st;
            }
        }
        rp_kin_frames_n_(m, base, q + r0 * dof, k, frames);
        size_t f = 0;
        st = rp_model_check_first_many_(m, scene, base, frames, k, margin, &out[r0], &f);
        if (st)
            *failed = r0 + f;
    }
    free(frames);
    return st;
}

rp_status rp_model_fk(const rp_model *m, const rp_transform *base, const double *q,
                      rp_transform *link_poses)
{
    if (!m || !m->kin || (m->kin->dof && !q) || (m->kin->n_tree && !link_poses))
        return RP_ERR_INVALID_ARG;
    if (!all_finite(q, m->kin->dof))
        return RP_ERR_NONFINITE;
    rp_transform stack[RP_STACK_FRAMES];
    rp_transform *frames = frames_for(m, base, q, stack);
    if (!frames)
        return RP_ERR_NOMEM;
    rp_transform identity = rp_transform_identity();
    for (size_t l = 0; l < m->kin->n_tree; l++) {
        int f = m->kin->link_frame[l];
        const rp_transform *fr = f >= 0 ? &frames[f] : base ? base : &identity;
        rp_transform pose;
        compose(fr, &m->kin->link_offset[l], &pose);
        link_poses[l] = pose;
    }
    if (frames != stack)
        free(frames);
    return RP_OK;
}

rp_status rp_model_check_joints(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                                const double *q, const rp_check_opts *opts, rp_check_result *out)
{
    /* rp_model_check opens the meter: forward kinematics is not metered. */
    if (!out)
        return RP_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!m || !m->kin || (m->kin->dof && !q))
        return RP_ERR_INVALID_ARG;
    if (!all_finite(q, m->kin->dof)) {
        out->closest.link = SIZE_MAX;
        return RP_ERR_NONFINITE;
    }
    rp_transform stack[RP_STACK_FRAMES];
    rp_transform *frames = frames_for(m, base, q, stack);
    if (!frames)
        return RP_ERR_NOMEM;
    rp_status st = rp_model_check(m, scene, base, frames, m->frame_count, opts, out);
    if (frames != stack)
        free(frames);
    return st;
}

void rp_model_shape_local(const rp_model *m, size_t i, rp_shape *out)
{
    *out = m->shape_local ? m->shape_local[i] : m->links[i].shape;
}

size_t rp_model_allowed_link_count(const rp_model *m)
{
    return m->kin ? m->kin->n_allowed_links : 0;
}

void rp_model_allowed_link_at(const rp_model *m, size_t i, size_t *a, size_t *b)
{
    *a = m->kin->allowed_links[2 * i];
    *b = m->kin->allowed_links[2 * i + 1];
}
