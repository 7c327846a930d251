/* SPDX-License-Identifier: MIT */
/*
 * Bounding-volume hierarchy over a scene's shapes, kept up to date by the
 * mutations, and the per-shape queries built on it: nearest scene shape,
 * and every shape below a threshold.
 *
 * Layout.  A binary tree with one shape per leaf.  Only inner nodes are
 * stored (rp_bvh_node, scene_int.h: 44 bytes, n - 1 of them for n shapes),
 * densely in one array; a child reference is either a node index or, with
 * RP_BVH_SHAPE set, a shape's entry index.  A shape has no node of its own:
 * its box is computed from the shape when needed (shape_fbox), and its
 * parent node sits in its scene entry (scene_entry.leaf, in what was
 * padding).  Boxes are floats rounded outwards, so a float box always
 * contains the double-precision shape.  The nodes live in copy-on-write
 * chunks (chunks.h) that scene versions share: they are read through
 * node_at and written through node_mut only, which first makes the node's
 * chunk this version's own when another version still shares it.
 *
 * Bounds.  Every pair inside a node is at least as far apart as the query's
 * box and the node's box (both include the radii); when those overlap, the
 * signed distance can still be as low as -(r_query + rmax of the node), the
 * deepest possible penetration.  The larger of the two bounds prunes.  The
 * kernels' results carry an error of up to 16*eps*S (geometry.h); every box
 * is inflated by BOX_SLACK*eps*S of its own shape, so the bound stays below
 * the *computed* distance as well, and the tree returns exactly what a
 * brute-force scan returns (same distances, same pair, same tie rule).  A
 * node's box may be larger than its children's and its rmax larger than
 * every radius below (after moves and removals): both only weaken the bound.
 *
 * Range.  Shapes near the largest double (centre 1e308, radius 1.7e308)
 * have boxes that overflow to infinity, and any coordinate beyond float
 * range rounds outwards to infinity; such boxes stay conservative.  The
 * bounds never become NaN: a lower side is never +inf and an upper side
 * never -inf, so the gaps lo - hi are never inf - inf; a gap whose square
 * overflows gives an infinite key, which only prunes against a bound whose
 * square is finite (below 1.3e154), and a penetration bound -(inf) never
 * prunes.  Distances themselves are finite (geometry.h saturates them at
 * ±DBL_MAX), so every comparison with a bound is an ordinary one.  Split
 * keys are core centres, always finite.  Surface areas (insertion costs,
 * the quality measure) clamp each extent to FLT_MAX, so they are finite
 * too (extents are never NaN for the same reason as the gaps).
 *
 * Maintenance.  Every mutation updates the tree itself; queries never write
 * (they may run on several threads against one scene).
 *   - Insert (a new id): descend from the root, at each node into the child
 *     whose box grows least in surface area (a shape child counts the whole
 *     area of the new node it would share), and pair the new shape with the
 *     shape or height-1 node reached (with the height-1 node itself when
 *     that adds less area).  Then walk up refitting boxes, radius bounds and
 *     heights, with AVL rotations: wherever the children's heights differ
 *     by 2, the taller child takes its parent's place and its shorter child
 *     (by area, when equally tall) moves over to the parent.  Children are
 *     unordered, so one such rotation restores the balance.  Pairing only at
 *     height <= 1 is what keeps the AVL invariant (|child heights| <= 1
 *     everywhere): the height is at most 1.44 log2(n + 2), below 45 for any
 *     scene, whatever the insertion order.
 *   - Remove: the leaf's sibling takes its parent's place, the parent node
 *     goes (the last node moves into its slot), then the same walk up.
 *   - Move (a put of an existing id): when the new shape's box fits inside
 *     its parent's box, only the radius bounds of the ancestors are raised
 *     if needed; when a box a few levels up still holds it, the boxes below
 *     that one are refitted, the parent's widened by a margin (widen);
 *     otherwise remove and insert.
 *   The walks stop at the first ancestor that does not change: O(log n)
 *   per shape.
 *   - Full builds (rp_bvh_build_): median splits along the
 *     widest axis of the shapes' core centres, which is balanced.  When
 *     the scene builds its tree whole instead of editing it (bulk puts,
 *     degraded quality, deferred rebuilds on a worker) is the store's
 *     policy, in rebuild.c; this file builds and measures (rp_bvh_area_,
 *     rp_bvh_height_).
 *   rp_bvh_build_ reads the shapes and writes only the nodes and scratch it
 *   is given, so it can run on a worker thread against an immutable scene;
 *   rp_bvh_install_ then writes the leaves' parents into the entries.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "geometry/box_int.h"
#include "scene_int.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RP_HAVE_AVX2_PATH 1
#endif

_Static_assert(sizeof(rp_bvh_node) == 44, "tree nodes are budgeted at 44 bytes");

/* The scene size below which scans beat the tree (the tree is maintained
 * all the same, so that queries never have to build it). */
#define SMALL_SCENE 16
/* Box inflation in units of eps*S (S: the shape's largest magnitude); above
 * the kernels' 16 eps*S error bound plus the rounding of the box distance. */
#define BOX_SLACK 64.0
/* Traversal stack.  A depth-first walk holds at most height + 1 entries,
 * and the AVL invariant keeps the height below 45 for any scene
 * (RP_BVH_MAX_SHAPES shapes). */
#define STACK_MAX 64

/* ---- node access -------------------------------------------------------------- */

/* The only two ways to reach a node: reading, and writing (which copies
 * the node's chunk first when another scene version shares it). */
static inline const rp_bvh_node *node_at(const rp_bvh *t, uint32_t i)
{
    return (const rp_bvh_node *)rp_chunks_at(&t->nodes, sizeof(rp_bvh_node), i);
}

static inline rp_bvh_node *node_mut(rp_bvh *t, uint32_t i)
{
    return (rp_bvh_node *)rp_chunks_own(&t->nodes, sizeof(rp_bvh_node), i, NULL, NULL);
}

/* Entries through their chunk table: reading, and writing (the chunk made
 * this version's own first). */
#define EN_AT(en, i) ((const scene_entry *)rp_chunks_at((en), sizeof(scene_entry), (i)))
#define EN_MUT(en, i) rp_entry_mut_((en), (i))
/* Entry i's shape (rp_entry_shape_), through a buffer `sbuf` the caller
 * declares. */
#define EN_SHAPE(en, i) rp_entry_shape_(EN_AT((en), (i)), &sbuf)
#define SC_SHAPE(sc, i) rp_scene_shape_((sc), (i), &sbuf)

static inline bool is_shape(uint32_t ref)
{
    return (ref & RP_BVH_SHAPE) && ref != RP_BVH_NIL;
}

static inline uint32_t shape_ref(uint32_t e)
{
    return e | RP_BVH_SHAPE;
}

static inline uint32_t shape_of(uint32_t ref)
{
    return ref & ~RP_BVH_SHAPE;
}

/* ---- boxes ------------------------------------------------------------------ */

/* Inline min/max: fmin/fmax are libm calls here; inputs are never NaN. */
#define MIN2(a, b) ((a) < (b) ? (a) : (b))
#define MAX2(a, b) ((a) > (b) ? (a) : (b))

typedef rp_dbox dbox;

/* A box in floats, rounded outwards, and a radius bound rounded up: the
 * first seven fields of a node. */
typedef struct fbox {
    float lo[3], hi[3];
    float r;
} fbox;

static double maxabs3(rp_vec3 v)
{
    double x = fabs(v.x), y = fabs(v.y), z = fabs(v.z);
    return x > y ? (x > z ? x : z) : (y > z ? y : z);
}

/* A box's extent along the world axes (a stored box keeps it: stored). */
static rp_vec3 box_reach(const rp_box *b)
{
    rp_vec3 ax[3];
    rp_box_axes(b, ax);
    return rp_box_reach_(ax, b->half_extents);
}

/* A half-space's box: the whole space, but for a normal along a coordinate
 * axis (a floor, a wall), bounded on that axis by the plane (padded like
 * the others).  Its radius bound is infinite: nothing bounds how deep a
 * shape can sink into it, so its key never prunes (node_key).  No side is
 * NaN: lower sides are -inf or finite, upper sides finite or +inf. */
static dbox halfspace_box(const rp_halfspace *h)
{
    dbox box = {{-INFINITY, -INFINITY, -INFINITY}, {INFINITY, INFINITY, INFINITY}, INFINITY};
    const double n[3] = {h->normal.x, h->normal.y, h->normal.z};
    for (int k = 0; k < 3; k++) {
        if (n[(k + 1) % 3] != 0.0 || n[(k + 2) % 3] != 0.0)
            continue;
        double pad = BOX_SLACK * DBL_EPSILON * fabs(h->offset) + DBL_MIN;
        if (n[k] > 0.0) /* {p : p_k <= offset} */
            box.hi[k] = h->offset + pad;
        else /* n_k = -1: {p : p_k >= -offset} */
            box.lo[k] = -h->offset - pad;
    }
    return box;
}

/* The shape's box in doubles, inflated by the slack (see the top), and its
 * radius bound r: no signed distance to the shape is below -(r + the
 * other's r).  For a sphere or capsule r is the radius.  For a box it is
 * 2 (hx + hy + hz): a segment meeting the box separates from it by a move
 * perpendicular to itself of at most twice the box's circumradius |h|
 * (the segment projects to one point of the box's shadow on that plane),
 * and two boxes by one along any axis of at most 2|h_a| + 2|h_b|. */
static dbox shape_box_reach(const rp_shape *s, const rp_vec3 *kept);

static dbox shape_box(const rp_shape *s)
{
    return shape_box_reach(s, NULL);
}

/* shape_box of a shape the scene stores (a stored box keeps its reach). */
static inline dbox stored_box(const rp_shape *s)
{
    return shape_box_reach(s, s->kind == RP_SHAPE_BOX ? &rp_stored_solid_(s)->reach : NULL);
}

/* The shape's padded box; a box's reach is *kept when given. */
static dbox shape_box_reach(const rp_shape *s, const rp_vec3 *kept)
{
    rp_vec3 a, b, reach = {0, 0, 0};
    double r;
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        a = b = s->sphere.center;
        r = s->sphere.radius;
        break;
    case RP_SHAPE_CAPSULE:
        a = s->capsule.a;
        b = s->capsule.b;
        r = s->capsule.radius;
        break;
    case RP_SHAPE_BOX:
        a = b = s->box.center;
        reach = kept ? *kept : box_reach(&s->box);
        r = 2.0 * (s->box.half_extents.x + s->box.half_extents.y + s->box.half_extents.z);
        break;
    default:
        return halfspace_box(&s->halfspace);
    }
    double S = maxabs3(a);
    double Sb = maxabs3(b);
    S = S > Sb ? S : Sb;
    S = S > r ? S : r;
    double slack = BOX_SLACK * DBL_EPSILON * S + DBL_MIN;
    double pad = r + slack;
    /* (A box's sides take the slack only: its reach is its extent.) */
    double side = s->kind == RP_SHAPE_BOX ? slack : pad;
    dbox box = {{MIN2(a.x, b.x) - reach.x - side, MIN2(a.y, b.y) - reach.y - side,
                 MIN2(a.z, b.z) - reach.z - side},
                {MAX2(a.x, b.x) + reach.x + side, MAX2(a.y, b.y) + reach.y + side,
                 MAX2(a.z, b.z) + reach.z + side},
                pad};
    return box;
}

/* The centre of the shape's core (the midpoint of a capsule's axis, a box's
 * centre), the key of the median splits.  Taken from the core, not the box:
 * a box may reach to -inf and +inf on the same axis (coordinates and radii
 * near DBL_MAX), and its midpoint would be NaN, which no ordering can sort.
 * (Half-spaces are never split: they stay out of the tree.) */
static void shape_centre(const rp_shape *s, double c[3])
{
    rp_vec3 a, b;
    switch (s->kind) {
    case RP_SHAPE_CAPSULE:
        a = s->capsule.a, b = s->capsule.b;
        break;
    case RP_SHAPE_BOX:
        a = b = s->box.center;
        break;
    case RP_SHAPE_SPHERE:
        a = b = s->sphere.center;
        break;
    default:
        a = b = (rp_vec3){0, 0, 0};
        break;
    }
    /* Halves first, so the sum cannot overflow. */
    c[0] = 0.5 * a.x + 0.5 * b.x;
    c[1] = 0.5 * a.y + 0.5 * b.y;
    c[2] = 0.5 * a.z + 0.5 * b.z;
}

/* Floats <= x and >= x, four lanes at a time (GCC vector extensions: two
 * SSE2 conversions, or one AVX, whatever the target): the nearest float
 * f, or, where f went past x, its neighbour on the other side, by one step
 * of its bit pattern (towards zero for the magnitude that is too large,
 * away from it otherwise; a zero steps to the smallest subnormal of x's
 * side).  So the result is the float next to x on its side: boxes round
 * out by one ulp at most, branch-free (which way a rounding went is a coin
 * toss, and a box's seven sides are rounded for every leaf a tree update
 * looks at: a branch was mispredicted half the time).  Beyond the float
 * range the result is the largest float or an infinity, on the safe
 * side either way. */
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline void round4(const double in[4], bool up, float out4[4])
{
    v4d x;
    memcpy(&x, in, sizeof x);
    v4f f = __builtin_convertvector(x, v4f);
    v4d back = __builtin_convertvector(f, v4d);
    v4i past = __builtin_convertvector(up ? back < x : back > x, v4i);
    v4i bits, sign = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
    memcpy(&bits, &f, sizeof bits);
    v4i zero = f == (v4f){0, 0, 0, 0};
    /* A zero takes x's sign (the side it must step to); then a step of +-1
     * on the pattern: towards larger magnitude when f's sign is the side
     * the rounding must go (negative going down, positive going up). */
    v4i from = up ? bits & ~(zero & sign) : bits | (zero & sign);
    v4i away = up ? f >= (v4f){0, 0, 0, 0} : f <= (v4f){0, 0, 0, 0};
    v4i stepped = from - 1 - (away + away); /* away (-1): from + 1, else from - 1 */
    v4i out = (past & stepped) | (~past & bits);
    memcpy(out4, &out, sizeof out);
}

static inline float float_down(double x)
{
    double in[4] = {x, x, x, x};
    float out[4];
    round4(in, false, out);
    return out[0];
}

static inline float float_up(double x)
{
    double in[4] = {x, x, x, x};
    float out[4];
    round4(in, true, out);
    return out[0];
}

void rp_bvh_round_(double x, float *down, float *up)
{
    *down = float_down(x);
    *up = float_up(x);
}

/* The shape's padded box in floats: what its parent's box must contain. */
static fbox dbox_round(dbox d);

static fbox shape_fbox(const rp_shape *s)
{
    return dbox_round(shape_box(s));
}

static fbox stored_fbox(const rp_shape *s)
{
    return dbox_round(stored_box(s));
}

static fbox dbox_round(dbox d)
{
    double lo[4] = {d.lo[0], d.lo[1], d.lo[2], d.lo[2]}, hi[4] = {d.hi[0], d.hi[1], d.hi[2], d.r};
    float l[4], h[4];
    round4(lo, false, l);
    round4(hi, true, h);
    fbox f = {{l[0], l[1], l[2]}, {h[0], h[1], h[2]}, h[3]};
    return f;
}

static void fbox_union(fbox *a, const fbox *b)
{
    for (int k = 0; k < 3; k++) {
        a->lo[k] = MIN2(a->lo[k], b->lo[k]);
        a->hi[k] = MAX2(a->hi[k], b->hi[k]);
    }
    a->r = MAX2(a->r, b->r);
}

static bool fbox_contains(const fbox *outer, const fbox *inner)
{
    for (int k = 0; k < 3; k++)
        if (inner->lo[k] < outer->lo[k] || inner->hi[k] > outer->hi[k])
            return false;
    return true;
}

/* Half the surface area of a float box, in doubles, each extent clamped to
 * FLT_MAX so that infinite boxes have a finite (huge) area. */
static double half_area(const float lo[3], const float hi[3])
{
    double e[3];
    for (int k = 0; k < 3; k++) {
        double d = (double)hi[k] - (double)lo[k];
        e[k] = MIN2(d, (double)FLT_MAX);
    }
    return e[0] * e[1] + e[1] * e[2] + e[2] * e[0];
}

static double union_area(const fbox *a, const fbox *b)
{
    fbox u = *a;
    fbox_union(&u, b);
    return half_area(u.lo, u.hi);
}

static fbox node_fbox(const rp_bvh_node *n)
{
    fbox f;
    memcpy(f.lo, n->lo, sizeof f.lo);
    memcpy(f.hi, n->hi, sizeof f.hi);
    f.r = n->rmax;
    return f;
}

/* The box and height of a child reference. */
static fbox ref_box(const rp_bvh *t, const rp_chunks *en, uint32_t ref, uint32_t *height)
{
    rp_shape sbuf;
    if (is_shape(ref)) {
        *height = 0;
        return stored_fbox(EN_SHAPE(en, shape_of(ref)));
    }
    const rp_bvh_node *n = node_at(t, ref);
    *height = n->height;
    return node_fbox(n);
}

static uint32_t ref_height(const rp_bvh *t, uint32_t ref)
{
    return is_shape(ref) ? 0 : node_at(t, ref)->height;
}

/* ---- query bounds --------------------------------------------------------------- */

/* A key for node n: the squared distance between the query's box and the
 * node's box when they are apart (> 0), otherwise the penetration bound
 * -(query radius + largest radius inside) (<= 0).  Keys order nodes like
 * their lower bounds do; comparing squares saves a square root per node. */
static inline double node_key(const double qlo[3], const double qhi[3], double qr,
                              const rp_bvh_node *n)
{
    double sum = 0.0;
    for (int k = 0; k < 3; k++) {
        double d1 = (double)n->lo[k] - qhi[k], d2 = qlo[k] - (double)n->hi[k];
        double d = MAX2(d1, d2);
        if (d > 0.0)
            sum += d * d;
    }
    return sum > 0.0 ? sum : -(qr + (double)n->rmax);
}

/* node_key for a single shape, from its padded box in doubles (which the
 * float box of a node would only round outwards). */
static inline double shape_key(const double qlo[3], const double qhi[3], double qr,
                               const rp_shape *s)
{
    dbox b = stored_box(s);
    double sum = 0.0;
    for (int k = 0; k < 3; k++) {
        double d1 = b.lo[k] - qhi[k], d2 = qlo[k] - b.hi[k];
        double d = MAX2(d1, d2);
        if (d > 0.0)
            sum += d * d;
    }
    return sum > 0.0 ? sum : -(qr + b.r);
}

#define key_excludes rp_key_excludes_

/* ---- structure edits -------------------------------------------------------------- */

/* Points ref's parent link at node p (RP_BVH_NIL: ref is the root). */
static void set_parent(rp_bvh *t, rp_chunks *en, uint32_t ref, uint32_t p)
{
    if (is_shape(ref))
        EN_MUT(en, shape_of(ref))->leaf = p;
    else
        node_mut(t, ref)->parent = p;
}

/* In node p (RP_BVH_NIL: the root), the child reference old becomes ref. */
static void replace_child(rp_bvh *t, uint32_t p, uint32_t old, uint32_t ref)
{
    if (p == RP_BVH_NIL) {
        t->root = ref;
        return;
    }
    rp_bvh_node *n = node_mut(t, p);
    n->child[n->child[0] == old ? 0 : 1] = ref;
}

/* Recomputes node i's box, radius bound and height from its children.
 * Returns whether any of them changed (when none did, nothing above needs
 * to either). */
static bool refit(rp_bvh *t, const rp_chunks *en, uint32_t i)
{
    const rp_bvh_node *n = node_at(t, i);
    uint32_t ha, hb;
    fbox a = ref_box(t, en, n->child[0], &ha);
    fbox b = ref_box(t, en, n->child[1], &hb);
    fbox_union(&a, &b);
    uint32_t h = 1 + MAX2(ha, hb);
    if (h == n->height && a.r == n->rmax && memcmp(a.lo, n->lo, sizeof a.lo) == 0 &&
        memcmp(a.hi, n->hi, sizeof a.hi) == 0)
        return false;
    rp_bvh_node *w = node_mut(t, i);
    memcpy(w->lo, a.lo, sizeof a.lo);
    memcpy(w->hi, a.hi, sizeof a.hi);
    w->rmax = a.r;
    w->height = h;
    return true;
}

/* Node a's child on `side` is two taller than the other child: it takes a's
 * place, keeps its taller child, and hands the other one to a (by area when
 * both are equally tall).  Returns the node now in a's place. */
static uint32_t rotate(rp_bvh *t, rp_chunks *en, uint32_t a, int side)
{
    const rp_bvh_node *na = node_at(t, a);
    uint32_t c = na->child[side], b = na->child[1 - side], up = na->parent;
    const rp_bvh_node *nc = node_at(t, c);
    uint32_t f = nc->child[0], g = nc->child[1];
    uint32_t hf, hg, hb;
    int keep; /* the index, in c, of the child that stays */
    if (ref_height(t, f) != ref_height(t, g)) {
        keep = ref_height(t, f) > ref_height(t, g) ? 0 : 1;
    } else {
        fbox bb = ref_box(t, en, b, &hb);
        fbox fb = ref_box(t, en, f, &hf);
        fbox gb = ref_box(t, en, g, &hg);
        keep = union_area(&bb, &gb) <= union_area(&bb, &fb) ? 0 : 1;
    }
    uint32_t moved = keep == 0 ? g : f;

    replace_child(t, up, a, c);
    node_mut(t, c)->parent = up;
    node_mut(t, c)->child[1 - keep] = a;
    node_mut(t, a)->parent = c;
    node_mut(t, a)->child[side] = moved;
    set_parent(t, en, moved, a);
    refit(t, en, a);
    refit(t, en, c);
    return c;
}

/* Refits node i and its ancestors, rebalancing on the way, until one does
 * not change. */
static void walk_up(rp_bvh *t, rp_chunks *en, uint32_t i)
{
    while (i != RP_BVH_NIL) {
        bool changed = refit(t, en, i);
        const rp_bvh_node *n = node_at(t, i);
        uint32_t h0 = ref_height(t, n->child[0]), h1 = ref_height(t, n->child[1]);
        uint32_t top = i;
        if (h1 > h0 + 1)
            top = rotate(t, en, i, 1);
        else if (h0 > h1 + 1)
            top = rotate(t, en, i, 0);
        if (!changed && top == i)
            return;
        i = node_at(t, top)->parent;
    }
}

/* Where a shape with box L goes: the shape, or height-1 node, that becomes
 * its sibling (see the top). */
static uint32_t choose_sibling(const rp_bvh *t, const rp_chunks *en, const fbox *L)
{
    uint32_t ref = t->root;
    while (!is_shape(ref)) {
        const rp_bvh_node *n = node_at(t, ref);
        double cost[2];
        uint32_t h[2];
        for (int s = 0; s < 2; s++) {
            fbox c = ref_box(t, en, n->child[s], &h[s]);
            /* A shape child: the whole new node; a node child: its growth. */
            cost[s] = union_area(&c, L) - (h[s] ? half_area(c.lo, c.hi) : 0.0);
        }
        if (n->height == 1) {
            /* Both children are shapes: pairing with n itself adds
             * area(n + L); pairing with child s adds area(s + L) plus n's
             * growth area(n + L) - area(n). */
            if (half_area(n->lo, n->hi) <= MIN2(cost[0], cost[1]))
                return ref;
        }
        int s = cost[1] < cost[0] || (cost[1] == cost[0] && h[1] < h[0]) ? 1 : 0;
        ref = n->child[s];
    }
    return ref;
}

/* Adds entry e, whose box is L, to the tree (a node must be free). */
static void insert_leaf(rp_bvh *t, rp_chunks *en, uint32_t e, const fbox *L)
{
    t->churn++;
    if (t->root == RP_BVH_NIL) {
        t->root = shape_ref(e);
        EN_MUT(en, e)->leaf = RP_BVH_NIL;
        return;
    }
    uint32_t sib = choose_sibling(t, en, L);
    uint32_t up = is_shape(sib) ? EN_AT(en, shape_of(sib))->leaf : node_at(t, sib)->parent;
    uint32_t p = t->n_nodes++;
    rp_bvh_node *n = node_mut(t, p);
    n->child[0] = sib;
    n->child[1] = shape_ref(e);
    n->parent = up;
    /* refit below sets the box, bound and height (zeroed first: it compares
     * them with the old values). */
    memset(n->lo, 0, sizeof n->lo);
    memset(n->hi, 0, sizeof n->hi);
    n->rmax = 0.0f;
    n->height = 0;
    replace_child(t, up, sib, p);
    set_parent(t, en, sib, p);
    EN_MUT(en, e)->leaf = p;
    refit(t, en, p);
    walk_up(t, en, up);
}

/* Removes node p, already unlinked, from the array: the last node moves
 * into its slot and the references to it follow. */
static void free_node(rp_bvh *t, rp_chunks *en, uint32_t p)
{
    uint32_t last = --t->n_nodes;
    if (p == last)
        return;
    *node_mut(t, p) = *node_at(t, last);
    const rp_bvh_node *n = node_at(t, p);
    replace_child(t, n->parent, last, p);
    set_parent(t, en, n->child[0], p);
    set_parent(t, en, n->child[1], p);
}

/* Takes entry e out of the tree: its sibling takes its parent's place. */
static void remove_leaf(rp_bvh *t, rp_chunks *en, uint32_t e)
{
    t->churn++;
    uint32_t p = EN_AT(en, e)->leaf;
    EN_MUT(en, e)->leaf = RP_BVH_NIL;
    if (p == RP_BVH_NIL) { /* the only shape */
        t->root = RP_BVH_NIL;
        return;
    }
    const rp_bvh_node *n = node_at(t, p);
    uint32_t sib = n->child[n->child[0] == shape_ref(e) ? 1 : 0];
    uint32_t up = n->parent;
    replace_child(t, up, p, sib);
    set_parent(t, en, sib, up);
    walk_up(t, en, up);
    free_node(t, en, p); /* last: the walk never allocates or frees nodes */
}

/* ---- maintenance hooks (scene.c) -------------------------------------------------- */

void rp_bvh_init_(rp_bvh *t)
{
    memset(t, 0, sizeof *t);
    t->root = RP_BVH_NIL;
}

void rp_bvh_free_(rp_bvh *t, rp_store *st)
{
    rp_chunks_free(&t->nodes, sizeof(rp_bvh_node), NULL, NULL, &st->bytes);
    rp_bvh_init_(t);
}

bool rp_bvh_reserve_(rp_bvh *t, rp_store *st, size_t shapes)
{
    if (shapes > RP_BVH_MAX_SHAPES)
        return false;
    return rp_chunks_grow(&t->nodes, sizeof(rp_bvh_node), shapes ? shapes - 1 : 0, NULL, NULL,
                          &st->bytes);
}

size_t rp_bvh_touch_bound_(const rp_bvh *t)
{
    /* An insertion, update or removal refits the nodes on one path to the
     * root, and a rotation on the way writes two more (the child it lifts
     * and the grandchild that moves); an insertion takes a new node at the
     * end, a removal moves the last node into a hole (its parent and two
     * children follow).  So at most 3 (height + 1) + 8 nodes, each maybe in
     * a chunk of its own.  The height is the root's, plus one for an
     * insertion that deepens it. */
    uint32_t h = t->root == RP_BVH_NIL || is_shape(t->root) ? 0 : node_at(t, t->root)->height;
    return 3 * ((size_t)h + 2) + 8;
}

size_t rp_bvh_entry_bound_(const rp_bvh *t)
{
    /* The shapes whose leaf link one change writes: one moved by each
     * rotation on the path, the inserted or removed shape and its sibling,
     * the two children of a node moved into a hole. */
    uint32_t h = t->root == RP_BVH_NIL || is_shape(t->root) ? 0 : node_at(t, t->root)->height;
    return (size_t)h + 2 + 4;
}

bool rp_bvh_stock_(rp_bvh *t, rp_store *st, size_t ops, size_t extra_chunks)
{
    size_t per = rp_bvh_touch_bound_(t);
    size_t want = ops > SIZE_MAX / per ? SIZE_MAX : ops * per;
    want = want > SIZE_MAX - extra_chunks ? SIZE_MAX : want + extra_chunks;
    return rp_chunks_stock(&t->nodes, sizeof(rp_bvh_node), want, &st->bytes);
}

bool rp_bvh_share_(rp_bvh *dst, const rp_bvh *src, rp_store *st)
{
    *dst = *src;
    rp_chunks_init(&dst->nodes);
    return rp_chunks_share(&dst->nodes, &src->nodes, &st->bytes);
}

void rp_bvh_insert_(rp_scene *sc, uint32_t e)
{
    rp_shape sbuf;
    fbox L = stored_fbox(SC_SHAPE(sc, e));
    insert_leaf(&sc->tree, &sc->entries, e, &L);
}

/* How many levels above a moved shape's parent an update looks for a box
 * that still holds it before it reinserts the shape.  Eight: a robot
 * instance's 64-shape move in 10k spheres took 36 us with three and 28.5
 * with eight, and queries near and far from it cost the same (1.74 and
 * 1.41 us either way): the refits stay below that box, and the rebuild
 * policy (rebuild.c) still counts each as churn. */
#define UPDATE_REFIT_LEVELS 8

/* Whether node i's box and radius bound hold box b. */
static bool node_holds(const rp_bvh *t, uint32_t i, const fbox *b)
{
    fbox n = node_fbox(node_at(t, i));
    return fbox_contains(&n, b) && n.r >= b->r;
}

bool rp_bvh_held_(const rp_scene *sc, uint32_t e, const rp_shape *s)
{
    const rp_bvh *t = &sc->tree;
    uint32_t a = RP_ENTRY(sc, e)->leaf;
    if (a == RP_BVH_NIL)
        return true; /* the root: no box to keep */
    /* Still inside its parent's box, or nudged out of it but inside an
     * ancestor a few levels up (a robot's link a step further, a part slid
     * along): rp_bvh_refit_up_ grows the boxes on the way within that
     * ancestor, instead of a removal and an insertion from the root, which
     * cost a robot instance's move most of its time. */
    fbox L = shape_fbox(s);
    for (int k = 0; k <= UPDATE_REFIT_LEVELS && a != RP_BVH_NIL; k++) {
        fbox A = node_fbox(node_at(t, a));
        if (fbox_contains(&A, &L))
            return true;
        a = node_at(t, a)->parent;
    }
    return false;
}

size_t rp_bvh_path_chunks_(const rp_scene *sc, const uint32_t *es, size_t n)
{
    const rp_bvh *t = &sc->tree;
    if (n == 0 || !t->nodes.shared)
        return 0; /* no copies to stock (rp_chunks_stock) */
    /* One bit per chunk of the node array, set along each path. */
    size_t words = ((size_t)t->nodes.n + 63) / 64;
    uint64_t *seen = calloc(words ? words : 1, sizeof *seen);
    if (!seen)
        return SIZE_MAX;
    size_t distinct = 0;
    for (size_t k = 0; k < n; k++) {
        for (uint32_t i = RP_ENTRY(sc, es[k])->leaf; i != RP_BVH_NIL; i = node_at(t, i)->parent) {
            uint32_t c = i >> RP_CHUNK_SHIFT;
            uint64_t bit = (uint64_t)1 << (c & 63);
            distinct += !(seen[c >> 6] & bit);
            seen[c >> 6] |= bit;
        }
    }
    free(seen);
    return distinct;
}

/* Node p's box grown to hold the box L of a shape below it widened by
 * MOVE_MARGIN times L's largest side.  A shape that moved out of its
 * parent's box is likely to move again, and the refit left it on the rim
 * of that box (the box was fitted to it): without the margin its next
 * nudge outwards leaves the box again.  A 10-shape object nudged by <= 5
 * mm in 100k shapes took 4.96 us per move without it and 2.60 us with a
 * margin of half a side (0.81 reinsertions and 3.3 refits per move with a
 * quarter, none and 1.6 with a half or more); queries cost the same (2.0
 * us).  Only the parent widens: the refits above take it in, and the next
 * refit from the children (a structure change below, a rebuild) makes it
 * tight again. */
#define MOVE_MARGIN 0.5f
static void widen(rp_bvh *t, uint32_t p, const fbox *L)
{
    float m = 0.0f;
    for (int k = 0; k < 3; k++)
        m = MAX2(m, L->hi[k] - L->lo[k]);
    m *= MOVE_MARGIN;
    if (!(m > 0.0f) || m == INFINITY)
        return;
    fbox b = node_fbox(node_at(t, p));
    for (int k = 0; k < 3; k++) {
        /* (rounded to nearest: either way the box holds L) */
        b.lo[k] = MIN2(b.lo[k], L->lo[k] - m);
        b.hi[k] = MAX2(b.hi[k], L->hi[k] + m);
    }
    rp_bvh_node *w = node_mut(t, p);
    memcpy(w->lo, b.lo, sizeof b.lo);
    memcpy(w->hi, b.hi, sizeof b.hi);
}

void rp_bvh_reinsert_(rp_scene *sc, uint32_t e)
{
    rp_shape sbuf;
    if (RP_ENTRY(sc, e)->leaf == RP_BVH_NIL && sc->tree.root != shape_ref(e))
        return; /* not in the tree */
    fbox L = stored_fbox(SC_SHAPE(sc, e));
    remove_leaf(&sc->tree, &sc->entries, e);
    insert_leaf(&sc->tree, &sc->entries, e, &L);
}

void rp_bvh_refit_up_(rp_scene *sc, uint32_t e)
{
    rp_shape sbuf;
    rp_bvh *t = &sc->tree;
    uint32_t p = RP_ENTRY(sc, e)->leaf;
    if (p == RP_BVH_NIL)
        return;
    fbox L = stored_fbox(SC_SHAPE(sc, e));
    fbox P = node_fbox(node_at(t, p));
    if (fbox_contains(&P, &L)) {
        /* Ancestors' boxes hold; their radius bounds may have to grow (each
         * is >= its children's, so stop at one that is). */
        for (uint32_t i = p; i != RP_BVH_NIL && node_at(t, i)->rmax < L.r;) {
            node_mut(t, i)->rmax = L.r;
            i = node_at(t, i)->parent;
        }
        return;
    }
    /* The boxes from the parent up are refitted from their children, until
     * one whose parent still holds it: the tree's shape stays
     * (no rotation), and that parent may stay looser than its children's
     * union (boxes need only contain them), so the refits do not run to the
     * root whenever a box shrinks.  A later moved shape under the boxes
     * refitted finds them holding it already.  Counted as churn, so that
     * the rebuild policy (rebuild.c) still sees the tree's quality. */
    t->churn++;
    refit(t, &sc->entries, p);
    widen(t, p, &L);
    for (uint32_t i = p;;) {
        uint32_t q = node_at(t, i)->parent;
        fbox b = node_fbox(node_at(t, i));
        if (q == RP_BVH_NIL || node_holds(t, q, &b))
            return;
        i = q;
        refit(t, &sc->entries, i);
    }
}

void rp_bvh_remove_(rp_scene *sc, uint32_t e)
{
    remove_leaf(&sc->tree, &sc->entries, e);
}

void rp_bvh_renumber_(rp_scene *sc, uint32_t from, uint32_t to)
{
    replace_child(&sc->tree, RP_ENTRY(sc, to)->leaf, shape_ref(from), shape_ref(to));
}

/* ---- full build ---------------------------------------------------------------- */

struct rp_bvh_item {
    double centre[3]; /* the split key (shape_centre) */
    fbox box;
    uint32_t index; /* entry */
    uint32_t leaf;  /* output: the node whose child the shape became */
};

rp_bvh_item *rp_bvh_items_new_(size_t shapes)
{
    return malloc((shapes ? shapes : 1) * sizeof(rp_bvh_item));
}

void rp_bvh_items_free_(rp_bvh_item *items)
{
    free(items);
}

typedef struct builder {
    rp_bvh *t;
    uint32_t n_nodes;
    double area; /* summed half areas of the nodes built */
} builder;

/* Orders items by centre[axis], ties by entry index, so that the tree does
 * not depend on the selection's whims. */
static bool item_less(const rp_bvh_item *a, const rp_bvh_item *b, int axis)
{
    if (a->centre[axis] != b->centre[axis])
        return a->centre[axis] < b->centre[axis];
    return a->index < b->index;
}

/* Partially sorts items so that the k-th in item_less order is in place
 * and smaller ones precede it (quickselect). */
static void select_kth(rp_bvh_item *items, size_t n, size_t k, int axis)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        rp_bvh_item pivot = items[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (item_less(&items[i], &pivot, axis))
                i++;
            while (item_less(&pivot, &items[j], axis))
                j--;
            if (i <= j) {
                rp_bvh_item tmp = items[i];
                items[i] = items[j];
                items[j] = tmp;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* Builds the subtree over items[0..n), n >= 2, into node `at` whose parent
 * is `parent`: split at the median centre along the widest extent of the
 * centres (two items keep their order), the two halves' nodes side by side
 * (a half of one item is a shape child), then the box from the children. */
static void build_node(builder *b, uint32_t at, uint32_t parent, rp_bvh_item *items, size_t n)
{
    size_t half = n / 2;
    if (n > 2) {
        double lo[3], hi[3];
        for (int k = 0; k < 3; k++)
            lo[k] = hi[k] = items[0].centre[k];
        for (size_t i = 1; i < n; i++)
            for (int k = 0; k < 3; k++) {
                lo[k] = MIN2(lo[k], items[i].centre[k]);
                hi[k] = MAX2(hi[k], items[i].centre[k]);
            }
        int axis = 0;
        for (int k = 1; k < 3; k++)
            if (hi[k] - lo[k] > hi[axis] - lo[axis])
                axis = k;
        select_kth(items, n, half, axis);
    }
    rp_bvh_item *part[2] = {items, items + half};
    size_t size[2] = {half, n - half};
    rp_bvh_node *node = node_mut(b->t, at);
    node->parent = parent;
    for (int s = 0; s < 2; s++) {
        if (size[s] == 1) {
            node->child[s] = shape_ref(part[s]->index);
            part[s]->leaf = at;
        } else {
            node->child[s] = b->n_nodes++;
        }
    }
    uint32_t child[2] = {node->child[0], node->child[1]};
    fbox box[2];
    uint32_t h[2];
    for (int s = 0; s < 2; s++) {
        if (size[s] == 1) {
            box[s] = part[s]->box;
            h[s] = 0;
        } else {
            build_node(b, child[s], at, part[s], size[s]);
            box[s] = node_fbox(node_at(b->t, child[s]));
            h[s] = node_at(b->t, child[s])->height;
        }
    }
    node = node_mut(b->t, at); /* (the pointer is stable: its chunk is ours now) */
    fbox_union(&box[0], &box[1]);
    memcpy(node->lo, box[0].lo, sizeof node->lo);
    memcpy(node->hi, box[0].hi, sizeof node->hi);
    node->rmax = box[0].r;
    node->height = 1 + MAX2(h[0], h[1]);
    b->area += half_area(node->lo, node->hi);
}

/* Builds a tree over en[0..n) into nodes (room for n - 1), with items
 * (room for n) as scratch; reads the entries and writes nothing else, so
 * that it can run beside readers of the scene.  Returns the root reference
 * and the summed node area; items[i].leaf then holds entry
 * items[i].index's parent (rp_bvh_install_). */
uint32_t rp_bvh_build_(const rp_chunks *en, uint32_t n, rp_bvh *t, rp_bvh_item *items, double *area)
{
    rp_shape sbuf;
    *area = 0.0;
    uint32_t m = 0; /* the shapes of the tree: every entry but the half-spaces */
    for (uint32_t i = 0; i < n; i++) {
        if (rp_entry_is_plane_(EN_AT(en, i)))
            continue;
        items[m].box = stored_fbox(EN_SHAPE(en, i));
        shape_centre(EN_SHAPE(en, i), items[m].centre);
        items[m].index = i;
        items[m++].leaf = RP_BVH_NIL;
    }
    if (m == 0)
        return RP_BVH_NIL;
    if (m == 1)
        return shape_ref(items[0].index);
    builder b = {t, 1, 0.0};
    build_node(&b, 0, RP_BVH_NIL, items, m);
    *area = b.area;
    return 0;
}

void rp_bvh_install_(rp_scene *sc, uint32_t root, const rp_bvh_item *items, double area)
{
    rp_bvh *t = &sc->tree;
    /* (The scene is the one the tree was built over: its half-spaces are
     * the entries the build left out.) */
    uint32_t m = (uint32_t)sc->count - sc->n_planes;
    t->root = root;
    t->n_nodes = m ? m - 1 : 0;
    t->churn = 0;
    t->built_area = area;
    t->want_rebuild = false;
    t->rebuild_misses = 0;
    for (uint32_t i = 0; i < m; i++)
        EN_MUT(&sc->entries, items[i].index)->leaf = items[i].leaf;
}

/* A cloud's sphere box: shape_box and shape_fbox for a sphere of centre
 * c (floats) and radius r, without the dispatch (a camera frame builds a
 * few hundred thousand). */
static inline fbox cloud_fbox(const float *c, double r)
{
    double S = r;
    for (int k = 0; k < 3; k++)
        S = MAX2(S, fabs((double)c[k]));
    double pad = r + (BOX_SLACK * DBL_EPSILON * S + DBL_MIN);
    double lo[4] = {(double)c[0] - pad, (double)c[1] - pad, (double)c[2] - pad, (double)c[2] - pad};
    double hi[4] = {(double)c[0] + pad, (double)c[1] + pad, (double)c[2] + pad, pad};
    float l[4], h[4];
    round4(lo, false, l);
    round4(hi, true, h);
    fbox f = {{l[0], l[1], l[2]}, {h[0], h[1], h[2]}, h[3]};
    return f;
}

typedef struct cloud_builder {
    rp_bvh *t;
    const rp_cloud *c;
    uint32_t next; /* the next node to take */
    double area;
} cloud_builder;

/* The subtree over spheres [lo, lo + n) (split in halves: they are in a
 * spatial order), its box in *box and height in *height; its reference. */
static uint32_t cloud_node(cloud_builder *b, size_t lo, size_t n, uint32_t parent, fbox *box,
                           uint32_t *height)
{
    if (n == 1) {
        *box = cloud_fbox(b->c->xyz + 3 * lo, b->c->radius);
        *height = 0;
        return shape_ref((uint32_t)lo);
    }
    uint32_t at = b->next++;
    size_t half = n / 2;
    fbox other;
    uint32_t h0, h1;
    uint32_t c0 = cloud_node(b, lo, half, at, box, &h0);
    uint32_t c1 = cloud_node(b, lo + half, n - half, at, &other, &h1);
    fbox_union(box, &other);
    /* (the nodes' chunks are this cloud's alone: written in place) */
    rp_bvh_node *node = (rp_bvh_node *)rp_chunks_at(&b->t->nodes, sizeof(rp_bvh_node), at);
    memcpy(node->lo, box->lo, sizeof node->lo);
    memcpy(node->hi, box->hi, sizeof node->hi);
    node->rmax = box->r;
    node->child[0] = c0;
    node->child[1] = c1;
    node->parent = parent;
    node->height = *height = 1 + MAX2(h0, h1);
    b->area += half_area(node->lo, node->hi);
    return at;
}

bool rp_cloud_tree_build_(rp_cloud *c)
{
    rp_bvh *t = &c->tree;
    rp_bvh_init_(t);
    if (c->n == 0)
        return true;
    if (c->n == 1) {
        t->root = shape_ref(0);
        return true;
    }
    if (c->n > RP_BVH_MAX_SHAPES)
        return false;
    size_t bytes = 0;
    if (!rp_chunks_grow(&t->nodes, sizeof(rp_bvh_node), c->n - 1, NULL, NULL, &bytes)) {
        rp_chunks_free(&t->nodes, sizeof(rp_bvh_node), NULL, NULL, &bytes);
        rp_bvh_init_(t);
        return false;
    }
    cloud_builder b = {t, c, 0, 0.0};
    fbox box;
    uint32_t h;
    t->root = cloud_node(&b, 0, c->n, RP_BVH_NIL, &box, &h);
    t->n_nodes = (uint32_t)(c->n - 1);
    t->built_area = b.area;
    c->bytes += bytes;
    return true;
}

void rp_bvh_free_nodes_(rp_bvh *t, size_t *bytes)
{
    rp_chunks_free(&t->nodes, sizeof(rp_bvh_node), NULL, NULL, bytes);
    rp_bvh_init_(t);
}

void rp_bvh_rebuild_(rp_scene *sc, rp_bvh_item *items)
{
    /* The old tree is dead once the entries changed, so the new one is
     * built into the same (reserved) nodes. */
    double area;
    uint32_t root = rp_bvh_build_(&sc->entries, (uint32_t)sc->count, &sc->tree, items, &area);
    rp_bvh_install_(sc, root, items, area);
    free(items);
}

/* ---- measures (the rebuild policy's, rebuild.c) ------------------------------- */

double rp_bvh_area_(const rp_bvh *t)
{
    double sum = 0.0;
    for (uint32_t i = 0; i < t->n_nodes; i++)
        sum += half_area(node_at(t, i)->lo, node_at(t, i)->hi);
    return sum;
}

uint32_t rp_bvh_height_(const rp_bvh *t)
{
    return t->root == RP_BVH_NIL ? 0 : ref_height(t, t->root);
}

/* ---- invariants (tests) ------------------------------------------------------------ */

typedef struct checker {
    const rp_scene *sc;
    unsigned char *node_seen, *entry_seen;
    bool ok;
} checker;

static void check_fail(checker *c, const char *what, uint32_t ref)
{
    if (c->ok)
        fprintf(stderr, "rp_bvh_check_: %s (reference %#x)\n", what, (unsigned)ref);
    c->ok = false;
}

/* Checks the subtree at ref, whose parent is p; returns its height. */
static uint32_t check_ref(checker *c, uint32_t ref, uint32_t p)
{
    const rp_bvh *t = &c->sc->tree;
    if (is_shape(ref)) {
        uint32_t e = shape_of(ref);
        if (e >= c->sc->count) {
            check_fail(c, "shape reference out of range", ref);
            return 0;
        }
        if (c->entry_seen[e]++)
            check_fail(c, "shape reached twice", ref);
        if (RP_ENTRY(c->sc, e)->leaf != p)
            check_fail(c, "entry's parent link", ref);
        return 0;
    }
    if (ref >= t->n_nodes) {
        check_fail(c, "node reference out of range", ref);
        return 0;
    }
    if (c->node_seen[ref]++) {
        check_fail(c, "node reached twice", ref);
        return 0;
    }
    const rp_bvh_node *n = node_at(t, ref);
    if (n->parent != p)
        check_fail(c, "node's parent link", ref);
    fbox outer = node_fbox(n);
    uint32_t h[2];
    for (int s = 0; s < 2; s++) {
        h[s] = check_ref(c, n->child[s], ref);
        uint32_t hs;
        fbox inner = ref_box(t, &c->sc->entries, n->child[s], &hs);
        if (!fbox_contains(&outer, &inner))
            check_fail(c, "box does not contain a child's", ref);
        if (!(outer.r >= inner.r))
            check_fail(c, "rmax below a child's", ref);
    }
    uint32_t height = 1 + MAX2(h[0], h[1]);
    if (n->height != height)
        check_fail(c, "stored height", ref);
    if (h[0] > h[1] + 1 || h[1] > h[0] + 1)
        check_fail(c, "children's heights differ by more than 1", ref);
    return height;
}

int rp_bvh_check_(const rp_scene *sc)
{
    const rp_bvh *t = &sc->tree;
    size_t n = sc->count;
    /* Half-spaces stay out: listed once each in planes, parentless. */
    size_t planes = 0;
    for (size_t e = 0; e < n; e++) {
        if (!rp_entry_is_plane_(RP_ENTRY(sc, e)))
            continue;
        planes++;
        size_t listed = 0;
        for (uint32_t i = 0; i < sc->n_planes; i++)
            listed += sc->planes[i] == e;
        if (listed != 1 || RP_ENTRY(sc, e)->leaf != RP_BVH_NIL) {
            fprintf(stderr, "rp_bvh_check_: half-space %zu listed %zu times, leaf %#x\n", e, listed,
                    (unsigned)RP_ENTRY(sc, e)->leaf);
            return -1;
        }
    }
    if (planes != sc->n_planes) {
        fprintf(stderr, "rp_bvh_check_: %zu half-spaces, %u listed\n", planes, sc->n_planes);
        return -1;
    }
    size_t m = n - planes; /* the tree's shapes */
    if (t->n_nodes != (m ? m - 1 : 0) || t->n_nodes > rp_chunks_cap(&t->nodes)) {
        fprintf(stderr, "rp_bvh_check_: %u nodes (cap %zu) for %zu shapes\n", t->n_nodes,
                rp_chunks_cap(&t->nodes), n);
        return -1;
    }
    if (m == 0)
        return t->root == RP_BVH_NIL ? 0 : -1;
    checker c = {sc, calloc(n, 1), calloc(n, 1), true};
    if (!c.node_seen || !c.entry_seen) {
        free(c.node_seen);
        free(c.entry_seen);
        fprintf(stderr, "rp_bvh_check_: out of memory\n");
        return -1;
    }
    uint32_t height = t->root == RP_BVH_NIL ? 0 : check_ref(&c, t->root, RP_BVH_NIL);
    for (size_t e = 0; e < n; e++)
        if (!c.entry_seen[e] != rp_entry_is_plane_(RP_ENTRY(sc, e)))
            check_fail(&c, c.entry_seen[e] ? "half-space in the tree" : "shape not reachable",
                       shape_ref((uint32_t)e));
    free(c.node_seen);
    free(c.entry_seen);
    return c.ok ? (int)height : -1;
}

/* ---- API ------------------------------------------------------------------------- */

rp_status rp_scene_prepare(rp_scene *sc)
{
    (void)sc; /* the mutations keep the tree up to date */
    return RP_OK;
}

size_t rp_scene_index_bytes(const rp_scene *sc)
{
    return rp_chunks_cap(&sc->tree.nodes) * sizeof(rp_bvh_node);
}

/* ---- queries ------------------------------------------------------------------ */

/* Outside a metered call (the library's own callers of the walks) there
 * is no limit. */
_Thread_local rp_meter rp_meter_
    __attribute__((tls_model("initial-exec"))) = {INT64_MAX, INT64_MAX, 0, false};

/* The query's box and (padded) radius. */
/* What a walk visits after its scan: the scene's tree (unless the scan
 * took the scene's shapes), then the tree of each cloud the ignore list
 * does not name, in name order; base is the storage index of the tree's
 * leaf 0 (the scene's: 0; a cloud's: after the entries and the clouds
 * before it). */
typedef struct src_iter {
    size_t next; /* 0: the scene's tree; 1 + j: cloud j */
    size_t base; /* storage index of cloud next - 1's first sphere */
} src_iter;

static inline bool next_src(const rp_scene *sc, src_iter *it, bool scanned, const rp_bvh **t,
                            size_t *base)
{
    if (it->next == 0) {
        it->next = 1;
        it->base = sc->count;
        if (!scanned && sc->tree.root != RP_BVH_NIL) {
            *t = &sc->tree;
            *base = 0;
            return true;
        }
    }
    const rp_objtab *ot = sc->objects;
    while (ot && it->next - 1 < ot->n_clouds) {
        const rp_object *o = ot->clouds[it->next - 1];
        size_t b = it->base;
        it->next++;
        it->base += o->cloud->n;
        if (o->cloud->tree.root == RP_BVH_NIL || rp_tag_ignored_(o->tag))
            continue;
        *t = &o->cloud->tree;
        *base = b;
        return true;
    }
    return false;
}

static double query_box(const rp_shape *q, double lo[3], double hi[3])
{
    dbox b = shape_box(q);
    memcpy(lo, b.lo, sizeof b.lo);
    memcpy(hi, b.hi, sizeof b.hi);
    return b.r;
}

/* True when e is among the n excluded storage indices (a short list: the
 * scene shapes one link may touch). */
static inline bool excluded(const size_t *excl, size_t n, size_t e)
{
    return rp_excl_has_(excl, n, e);
}

/* rp_shape_signed_distance(q, s) for a shape s the scene stores: against
 * a box, with the axes its solid keeps (the same bits). */
static inline double stored_distance(const rp_shape *q, const rp_shape *s)
{
    if (s->kind == RP_SHAPE_BOX) {
        if (q->kind == RP_SHAPE_SPHERE)
            return rp_sphere_box_ax_(&q->sphere, &s->box, rp_stored_solid_(s)->axes);
        if (q->kind == RP_SHAPE_CAPSULE)
            return rp_capsule_box_ax_(&q->capsule, &s->box, rp_stored_solid_(s)->axes);
    }
    return rp_shape_signed_distance(q, s);
}

/* The distance of q to scene shape s; charges *left what it costs beyond
 * the one unit the caller counted (rp_pair_units_). */
static inline double dist_units(const rp_shape *q, const rp_shape *s, int64_t *left)
{
    *left -= (int64_t)rp_pair_units_(q, s) - 1;
    return stored_distance(q, s);
}

/* Applies the nearest-shape rule of rp_scene_nearest_ to shape e; *extra
 * gets the units its distance costs beyond one. */
static inline void offer(const rp_scene *sc, const rp_shape *q, size_t e, double *best_d,
                         size_t *best_idx, bool *found, size_t *evaluated, int64_t *extra,
                         const size_t *excl, size_t n_excl)
{
    rp_shape sbuf;
    if ((n_excl && excluded(excl, n_excl, e)) || rp_ignored_at_(sc, e))
        return;
    ++*evaluated;
    const rp_shape *s = SC_SHAPE(sc, e);
    *extra += (int64_t)rp_pair_units_(q, s) - 1;
    double d = stored_distance(q, s);
    if (d < *best_d || (*found && d == *best_d && rp_scene_index_cmp_(sc, e, *best_idx) < 0)) {
        *best_d = d;
        *best_idx = e;
        *found = true;
    }
}

static void nearest(const rp_scene *sc, const rp_shape *q, const size_t *excl, size_t n_excl,
                    double *best_d, size_t *best_idx, bool *found, size_t *evaluated);

void rp_scene_nearest_(const rp_scene *sc, const rp_shape *q, double *best_d, size_t *best_idx,
                       bool *found)
{
    size_t evaluated;
    nearest(sc, q, NULL, 0, best_d, best_idx, found, &evaluated);
}

void rp_scene_nearest_excl_(const rp_scene *sc, const rp_shape *q, const size_t *excl,
                            size_t n_excl, double *best_d, size_t *best_idx, bool *found)
{
    size_t evaluated;
    nearest(sc, q, excl, n_excl, best_d, best_idx, found, &evaluated);
}

void rp_scene_nearest_counted_(const rp_scene *sc, const rp_shape *q, double *best_d,
                               size_t *best_idx, bool *found, size_t *evaluated)
{
    nearest(sc, q, NULL, 0, best_d, best_idx, found, evaluated);
}

static void nearest(const rp_scene *sc, const rp_shape *q, const size_t *excl, size_t n_excl,
                    double *best_d, size_t *best_idx, bool *found, size_t *evaluated)
{
    rp_shape sbuf;
    *found = false;
    *evaluated = 0;
    int64_t extra = 0; /* units beyond one per distance (dist_units) */
    const rp_bvh *t = &sc->tree;
    int64_t budget = rp_meter_.left; /* the meter: node visits + *evaluated */
    if (budget <= 0) {
        rp_meter_.out = true;
        return;
    }
    /* A scan takes every entry; a walk takes the half-spaces (outside the
     * tree) first, as they may well be the nearest (a floor). */
    bool scan = sc->count <= SMALL_SCENE || is_shape(t->root);
    size_t n_scan = scan ? sc->count : sc->n_planes;
    for (size_t i = 0; i < n_scan; i++) {
        if ((int64_t)*evaluated + extra >= budget) {
            rp_meter_.out = true;
            break;
        }
        offer(sc, q, scan ? i : sc->planes[i], best_d, best_idx, found, evaluated, &extra, excl,
              n_excl);
    }
    if (rp_meter_.out) {
        rp_meter_.left = rp_meter_spend_(budget, *evaluated + (uint64_t)extra);
        return;
    }
    double lo[3], hi[3];
    double qr = query_box(q, lo, hi);
    /* Depth first, nearer child first.  A node is skipped when its bound
     * exceeds the best distance, or equals it while no tie can win, checked
     * when it is pushed and again when it pops (the best distance may have
     * shrunk meanwhile).  A pair of shapes is evaluated when its node pops;
     * a shape beside a node is evaluated right away unless its own box
     * rules it out.  (gap holds node keys, see node_key.) */
    struct {
        uint32_t node;
        double gap;
    } stack[STACK_MAX];
    uint64_t visits = 0;
    src_iter it = {0, 0};
    size_t base;
    while (!rp_meter_.out && next_src(sc, &it, scan, &t, &base)) {
        if (is_shape(t->root)) { /* a cloud of one sphere */
            if ((int64_t)(visits + *evaluated) + extra >= budget) {
                rp_meter_.out = true;
                break;
            }
            offer(sc, q, base + shape_of(t->root), best_d, best_idx, found, evaluated, &extra, excl,
                  n_excl);
            continue;
        }
        size_t top = 0;
        stack[top].node = t->root;
        stack[top++].gap = node_key(lo, hi, qr, node_at(t, t->root));
        while (top > 0) {
            if ((int64_t)(visits + *evaluated) + extra >= budget) {
                rp_meter_.out = true;
                break;
            }
            visits++;
            top--;
            if (key_excludes(stack[top].gap, *best_d, *found))
                continue;
            const rp_bvh_node *n = node_at(t, stack[top].node);
            /* Inside the tree no reference is RP_BVH_NIL: the tag bit alone
         * tells a shape. */
            uint32_t a = n->child[0], b = n->child[1];
            if (a & b & RP_BVH_SHAPE) {
                offer(sc, q, base + shape_of(a), best_d, best_idx, found, evaluated, &extra, excl,
                      n_excl);
                offer(sc, q, base + shape_of(b), best_d, best_idx, found, evaluated, &extra, excl,
                      n_excl);
                continue;
            }
            if ((a | b) & RP_BVH_SHAPE) {
                size_t e = base + shape_of(a & RP_BVH_SHAPE ? a : b);
                if (!key_excludes(shape_key(lo, hi, qr, SC_SHAPE(sc, e)), *best_d, *found))
                    offer(sc, q, e, best_d, best_idx, found, evaluated, &extra, excl, n_excl);
                a = a & RP_BVH_SHAPE ? b : a;
                double ga = node_key(lo, hi, qr, node_at(t, a));
                if (!key_excludes(ga, *best_d, *found)) {
                    stack[top].node = a;
                    stack[top++].gap = ga;
                }
                continue;
            }
            double ga = node_key(lo, hi, qr, node_at(t, a));
            double gb = node_key(lo, hi, qr, node_at(t, b));
            if (ga < gb) { /* push the farther one first, so the nearer pops first */
                uint32_t tn = a;
                double tg = ga;
                a = b, ga = gb, b = tn, gb = tg;
            }
            if (!key_excludes(ga, *best_d, *found)) {
                stack[top].node = a;
                stack[top++].gap = ga;
            }
            if (!key_excludes(gb, *best_d, *found)) {
                stack[top].node = b;
                stack[top++].gap = gb;
            }
        }
    }
    rp_meter_.left = rp_meter_spend_(budget, visits + *evaluated + (uint64_t)extra);
}

/* rp_scene_below_'s walk; spends from *left (the meter). */
static bool below(const rp_scene *sc, const rp_shape *q, double threshold, rp_scene_visit_fn fn,
                  void *ctx, int64_t *left)
{
    rp_shape sbuf;
    const rp_bvh *t = &sc->tree;
    if (*left <= 0) {
        rp_meter_.out = true;
        return true;
    }
    /* A scan takes every entry; a walk the half-spaces (outside the tree)
     * first. */
    bool scan = sc->count <= SMALL_SCENE || is_shape(t->root);
    size_t n_scan = scan ? sc->count : sc->n_planes;
    for (size_t i = 0; i < n_scan; i++) {
        if (*left <= 0) {
            rp_meter_.out = true;
            return true;
        }
        *left -= 1;
        size_t e = scan ? i : sc->planes[i];
        if (rp_ignored_at_(sc, e))
            continue;
        double d = dist_units(q, SC_SHAPE(sc, e), left);
        if (d < threshold && !fn(ctx, e, d))
            return false;
    }
    double lo[3], hi[3];
    double qr = query_box(q, lo, hi);
    /* Depth first, first child first (the order a FIRST check reports
     * from).  The stack holds shapes and nodes whose bound is below the
     * threshold: every pair below a node whose bound is not is at >=
     * threshold.  A shape is evaluated when its parent's box passes (a
     * test of its own box spared few distances and cost more). */
    uint32_t stack[STACK_MAX];
    src_iter it = {0, 0};
    size_t base;
    while (next_src(sc, &it, scan, &t, &base)) {
        size_t top = 0;
        if (!is_shape(t->root) &&
            key_excludes(node_key(lo, hi, qr, node_at(t, t->root)), threshold, false))
            continue;
        stack[top++] = t->root;
        while (top > 0) {
            if (*left <= 0) {
                rp_meter_.out = true;
                return true;
            }
            *left -= 1;
            uint32_t ref = stack[--top];
            if (ref & RP_BVH_SHAPE) { /* never RP_BVH_NIL inside the tree */
                *left -= 1;
                size_t e = base + shape_of(ref);
                if (rp_ignored_at_(sc, e))
                    continue;
                double d = dist_units(q, SC_SHAPE(sc, e), left);
                if (d < threshold && !fn(ctx, e, d))
                    return false;
                continue;
            }
            const rp_bvh_node *n = node_at(t, ref);
            uint32_t a = n->child[0], b = n->child[1];
            if (a & b & RP_BVH_SHAPE) {
                *left -= 2;
                for (int k = 0; k < 2; k++) {
                    size_t e = base + shape_of(k ? b : a);
                    if (rp_ignored_at_(sc, e))
                        continue;
                    double d = dist_units(q, SC_SHAPE(sc, e), left);
                    if (d < threshold && !fn(ctx, e, d))
                        return false;
                }
                continue;
            }
            uint32_t c[2] = {b, a}; /* b pushed first, so that a pops first */
            for (int k = 0; k < 2; k++)
                if ((c[k] & RP_BVH_SHAPE) ||
                    !key_excludes(node_key(lo, hi, qr, node_at(t, c[k])), threshold, false))
                    stack[top++] = c[k];
        }
    }
    return true;
}

bool rp_scene_below_(const rp_scene *sc, const rp_shape *q, double threshold, rp_scene_visit_fn fn,
                     void *ctx)
{
    int64_t left = rp_meter_.left;
    bool done = below(sc, q, threshold, fn, ctx, &left);
    rp_meter_.left = left;
    return done;
}

/* ---- several queries in one walk ------------------------------------------------- */

void rp_multi_pad_(rp_multi *q, size_t n)
{
    for (size_t k = n; k % 4 != 0 && k < RP_MULTI_MAX; k++) {
        for (int a = 0; a < 3; a++)
            q->lo[a][k] = q->hi[a][k] = 0.0;
        q->r[k] = 0.0;
    }
}

void rp_multi_set_(rp_multi *q, size_t k, const rp_shape *s)
{
    dbox b = shape_box(s);
    q->shape[k] = s;
    for (int a = 0; a < 3; a++) {
        q->lo[a][k] = b.lo[a];
        q->hi[a][k] = b.hi[a];
    }
    q->r[k] = b.r;
}

/* The box a node or a shape offers the queries: sides, and the radius bound
 * of the penetration key (node_key, shape_key). */
typedef struct test_box {
    double lo[3], hi[3], r;
} test_box;

/* The box tests, pass_portable and pass_avx2 (and pass_ball_*), from one
 * body: bvh_pass.h, instantiated with one query per lane and with four (it
 * undefines these parameters at its end). */
#define PASS_FN pass_portable
#define PASS_BALL_FN pass_ball_portable
#define PASS_ATTR
#define LANES 1
#define lane_d double
#define lane_m bool
#define L_SET1(x) (x)
#define L_LOAD(p) (*(p))
#define L_ADD(a, b) ((a) + (b))
#define L_SUB(a, b) ((a) - (b))
#define L_MUL(a, b) ((a) * (b))
#define L_MAX(a, b) ((a) > (b) ? (a) : (b))
#define L_GT(a, b) ((a) > (b))
#define L_GE(a, b) ((a) >= (b))
#define L_LT(a, b) ((a) < (b))
#define L_OR(a, b) ((a) || (b))
#define L_IF(m, a, b) ((m) ? (a) : (b))
#define L_KEEP(m, x) ((m) ? (x) : 0.0)
#define L_BITS(m) ((unsigned)(m))
#include "bvh_pass.h"

#ifdef RP_HAVE_AVX2_PATH
#define PASS_FN pass_avx2
#define PASS_BALL_FN pass_ball_avx2
#define PASS_ATTR __attribute__((target("avx2"))) inline
#define LANES 4
#define lane_d __m256d
#define lane_m __m256d
#define L_SET1(x) _mm256_set1_pd(x)
#define L_LOAD(p) _mm256_load_pd(p)
#define L_ADD(a, b) _mm256_add_pd(a, b)
#define L_SUB(a, b) _mm256_sub_pd(a, b)
#define L_MUL(a, b) _mm256_mul_pd(a, b)
#define L_MAX(a, b) _mm256_max_pd(a, b)
#define L_GT(a, b) _mm256_cmp_pd(a, b, _CMP_GT_OQ)
#define L_GE(a, b) _mm256_cmp_pd(a, b, _CMP_GE_OQ)
#define L_LT(a, b) _mm256_cmp_pd(a, b, _CMP_LT_OQ)
#define L_OR(a, b) _mm256_or_pd(a, b)
#define L_IF(m, a, b) _mm256_or_pd(_mm256_and_pd(m, a), _mm256_andnot_pd(m, b))
#define L_KEEP(m, x) _mm256_and_pd(m, x)
#define L_BITS(m) ((unsigned)_mm256_movemask_pd(m))
#include "bvh_pass.h"
#endif

/* The queries of mask the box does not exclude below threshold (at it
 * too when ties can win). */
static inline __attribute__((always_inline)) uint64_t
pass(const rp_multi *q, uint64_t mask, const test_box *b, double threshold, bool ties, int simd)
{
#ifdef RP_HAVE_AVX2_PATH
    if (simd)
        return pass_avx2(q, mask, b, threshold, ties);
#endif
    (void)simd;
    return pass_portable(q, mask, b, threshold, ties);
}

void rp_balls_set_(rp_balls *q, size_t k, rp_vec3 c, double r)
{
    /* shape_box's radius bound of the sphere (c, r), bit for bit, without
     * the rest of its box (a check sets one per robot shape and state). */
    double S = maxabs3(c);
    S = S > r ? S : r;
    q->c[0][k] = c.x;
    q->c[1][k] = c.y;
    q->c[2][k] = c.z;
    q->r[k] = r + (BOX_SLACK * DBL_EPSILON * S + DBL_MIN);
}

static inline __attribute__((always_inline)) uint64_t pass_ball(const rp_balls *q, uint64_t mask,
                                                                const test_box *b, double threshold,
                                                                bool ties, int simd)
{
#ifdef RP_HAVE_AVX2_PATH
    if (simd)
        return pass_ball_avx2(q, mask, b, threshold, ties);
#endif
    (void)simd;
    return pass_ball_portable(q, mask, b, threshold, ties);
}

static inline test_box node_test_box(const rp_bvh_node *n)
{
    test_box b = {{n->lo[0], n->lo[1], n->lo[2]}, {n->hi[0], n->hi[1], n->hi[2]}, n->rmax};
    return b;
}

/* Evaluates scene shape e for the queries of mask that its box passes; the
 * queries fn drops leave *active. */
static inline __attribute__((always_inline)) void
multi_leaf(const rp_scene *sc, const rp_multi *q, uint64_t mask, size_t e, double threshold,
           int simd, rp_multi_visit_fn fn, void *ctx, uint64_t *active, int64_t *left)
{
    rp_shape sbuf;
    if (rp_ignored_at_(sc, e))
        return;
    const rp_shape *s = SC_SHAPE(sc, e);
    mask &= *active;
    if (mask & (mask - 1)) {
        /* Two queries or more: the shape's own box first (for one, as in
         * rp_scene_below_, the distance costs little more than the box). */
        dbox d = stored_box(s);
        test_box b = {{d.lo[0], d.lo[1], d.lo[2]}, {d.hi[0], d.hi[1], d.hi[2]}, d.r};
        mask = pass(q, mask, &b, threshold, false, simd);
    }
    while (mask) {
        unsigned k = (unsigned)__builtin_ctzll(mask);
        mask &= mask - 1;
        if (!((*active >> k) & 1))
            continue; /* dropped by an earlier call for this shape */
        *left = rp_meter_spend_(*left, 1);
        double dist = dist_units(q->shape[k], s, left);
        if (dist < threshold)
            *active &= ~fn(ctx, k, e, dist);
    }
}

/* A stack entry whose queries are not refined yet: every active one. */
#define ALL_QUERIES UINT64_MAX

void rp_scene_below_multi_(const rp_scene *sc, rp_multi *q, uint64_t active, double threshold,
                           const rp_multi_gate *gate, rp_multi_visit_fn fn, void *ctx)
{
    rp_shape sbuf;
    const rp_bvh *t = &sc->tree;
    int simd = rp_simd_enabled_();
    /* With a gate, the walk first looks for a scene shape within the
     * gate's threshold of its shape, as rp_scene_below_ would, and fills
     * the queries only then; every stack entry pushed meanwhile stands for
     * all of them. */
    bool gated = gate != NULL;
    double glo[3] = {0, 0, 0}, ghi[3] = {0, 0, 0}, gr = 0.0;
    if (gated)
        gr = query_box(gate->shape, glo, ghi);
    int64_t left = rp_meter_.left;
    if (left <= 0) {
        rp_meter_.out = true;
        return;
    }
    bool scan = sc->count <= SMALL_SCENE || is_shape(t->root);
    /* A scan takes every entry; a walk takes the half-spaces (outside the
     * tree) first. */
    size_t n_scan = scan ? sc->count : sc->n_planes;
    for (size_t i = 0; i < n_scan && (active || gated); i++) {
        size_t e = scan ? i : sc->planes[i];
        if (left <= 0) {
            rp_meter_.out = true;
            break;
        }
        if (gated) {
            left = rp_meter_spend_(left, 1);
            if (!(rp_shape_signed_distance(gate->shape, SC_SHAPE(sc, e)) < gate->threshold))
                continue;
            gated = false;
            active = gate->fill(ctx, q);
        }
        multi_leaf(sc, q, active, e, threshold, simd, fn, ctx, &active, &left);
    }
    /* Depth first, first child first, as rp_scene_below_; each stack entry
     * carries the queries its node's box passed. */
    struct {
        uint32_t ref;
        uint64_t mask;
    } stack[STACK_MAX];
    src_iter it = {0, 0};
    size_t base;
    while (left > 0 && (active || gated) && next_src(sc, &it, scan, &t, &base)) {
        size_t top = 0;
        if (is_shape(t->root)) {
            stack[top].mask = gated ? ALL_QUERIES : active;
        } else if (gated) {
            if (key_excludes(node_key(glo, ghi, gr, node_at(t, t->root)), gate->threshold, false))
                continue;
            stack[top].mask = ALL_QUERIES;
        } else {
            test_box rb = node_test_box(node_at(t, t->root));
            if (!(stack[top].mask = pass(q, active, &rb, threshold, false, simd)))
                continue;
        }
        stack[top++].ref = t->root;
        while (top > 0 && (active || gated)) {
            if (left <= 0) {
                rp_meter_.out = true;
                break;
            }
            left--;
            top--;
            uint32_t ref = stack[top].ref;
            uint64_t mask = stack[top].mask;
            if (gated) {
                /* rp_scene_below_'s walk for the gate's shape. */
                if (ref & RP_BVH_SHAPE) {
                    left = rp_meter_spend_(left, 1);
                    size_t e = base + shape_of(ref);
                    if (rp_ignored_at_(sc, e))
                        continue;
                    if (!(rp_shape_signed_distance(gate->shape, SC_SHAPE(sc, e)) < gate->threshold))
                        continue;
                    gated = false;
                    active = gate->fill(ctx, q);
                    multi_leaf(sc, q, active, e, threshold, simd, fn, ctx, &active, &left);
                    continue;
                }
                const rp_bvh_node *n = node_at(t, ref);
                uint32_t c[2] = {n->child[1], n->child[0]};
                for (int k = 0; k < 2; k++)
                    if ((c[k] & RP_BVH_SHAPE) ||
                        !key_excludes(node_key(glo, ghi, gr, node_at(t, c[k])), gate->threshold,
                                      false)) {
                        stack[top].ref = c[k];
                        stack[top++].mask = ALL_QUERIES;
                    }
                continue;
            }
            mask &= active;
            if (!mask)
                continue;
            if (ref & RP_BVH_SHAPE) {
                multi_leaf(sc, q, mask, base + shape_of(ref), threshold, simd, fn, ctx, &active,
                           &left);
                continue;
            }
            const rp_bvh_node *n = node_at(t, ref);
            uint32_t c[2] = {n->child[1], n->child[0]}; /* child[1] pushed first */
            for (int k = 0; k < 2; k++) {
                if (c[k] & RP_BVH_SHAPE) {
                    stack[top].ref = c[k];
                    stack[top++].mask = mask;
                    continue;
                }
                test_box cb = node_test_box(node_at(t, c[k]));
                uint64_t cm = pass(q, mask, &cb, threshold, false, simd);
                if (cm) {
                    stack[top].ref = c[k];
                    stack[top++].mask = cm;
                }
            }
        }
    }
    rp_meter_.left = left;
}

/* ---- whole robots in one walk ---------------------------------------------------- */

/* Fills the lanes of `want` not filled yet (*filled) through fill,
 * zeroing the other lanes of their groups of four that are still empty (a
 * group is read whole). */
static void lanes_fill(rp_multi *q, uint64_t *filled, uint64_t want,
                       void (*fill)(void *ctx, rp_multi *q, uint64_t lanes), void *ctx)
{
    want &= ~*filled;
    if (!want)
        return;
    uint64_t groups = 0;
    for (uint64_t m = want; m; m &= m - 1)
        groups |= (uint64_t)0xF << (__builtin_ctzll(m) & ~3u);
    uint64_t empty = groups & ~*filled & ~want;
    for (; empty; empty &= empty - 1) {
        unsigned k = (unsigned)__builtin_ctzll(empty);
        for (int a = 0; a < 3; a++)
            q->lo[a][k] = q->hi[a][k] = 0.0;
        q->r[k] = 0.0;
    }
    fill(ctx, q, want);
    *filled |= want;
}

/* The gates still worth walking for: those whose robot still looks for
 * one of their shapes. */
static uint64_t robots_live(const rp_robots_walk *w, uint64_t gates)
{
    uint64_t live = 0;
    for (; gates; gates &= gates - 1) {
        unsigned g = (unsigned)__builtin_ctzll(gates);
        if (w->gate_shapes[g] & w->robot[w->gate_robot[g]]->active)
            live |= (uint64_t)1 << g;
    }
    return live;
}

/* Scene shape e against the gates of `gates`, then each robot's shapes of
 * those that pass against it.  True when some robot dropped shapes. */
static inline __attribute__((always_inline)) bool
robots_leaf(const rp_scene *sc, rp_robots_walk *w, uint64_t gates, size_t e, double gate_threshold,
            double threshold, const int simd, int64_t *left)
{
    rp_shape sbuf;
    if (rp_ignored_at_(sc, e))
        return false;
    dbox d = stored_box(SC_SHAPE(sc, e));
    test_box b = {{d.lo[0], d.lo[1], d.lo[2]}, {d.hi[0], d.hi[1], d.hi[2]}, d.r};
    gates = pass_ball(&w->gates, gates, &b, gate_threshold, false, simd);
    uint64_t want[RP_ROBOTS_MAX] = {0};
    for (; gates; gates &= gates - 1) {
        unsigned g = (unsigned)__builtin_ctzll(gates);
        want[w->gate_robot[g]] |= w->gate_shapes[g];
    }
    bool dropped = false;
    for (size_t r = 0; r < w->n_robots; r++) {
        rp_robot_lanes *rl = w->robot[r];
        uint64_t m = want[r] & rl->active;
        if (!m)
            continue;
        lanes_fill(&rl->shapes, &rl->filled, m, rl->fill, rl->ctx);
        uint64_t before = rl->active;
        multi_leaf(sc, &rl->shapes, m, e, threshold, simd, rl->visit, rl->ctx, &rl->active, left);
        dropped |= rl->active != before;
    }
    return dropped;
}

/* The walk's body, compiled once for each kind of box test (so that the
 * AVX2 tests inline into the AVX2 copy). */
static inline __attribute__((always_inline)) void below_robots(const rp_scene *sc,
                                                               rp_robots_walk *w,
                                                               double gate_threshold,
                                                               double threshold, const int simd)
{
    const rp_bvh *t = &sc->tree;
    uint64_t all = w->gates.n >= 64 ? UINT64_MAX : ((uint64_t)1 << w->gates.n) - 1;
    uint64_t gates = robots_live(w, all);
    int64_t left = rp_meter_.left;
    if (left <= 0) {
        rp_meter_.out = true;
        return;
    }
    bool scan = sc->count <= SMALL_SCENE || is_shape(t->root);
    size_t n_scan = scan ? sc->count : sc->n_planes; /* (as in rp_scene_below_multi_) */
    for (size_t i = 0; i < n_scan && gates; i++) {
        if (left <= 0) {
            rp_meter_.out = true;
            break;
        }
        if (robots_leaf(sc, w, gates, scan ? i : sc->planes[i], gate_threshold, threshold, simd,
                        &left))
            gates = robots_live(w, gates);
    }
    /* Depth first, first child first, as rp_scene_below_; each stack entry
     * carries the gates its node's box passed. */
    struct {
        uint32_t ref;
        uint64_t mask;
    } stack[STACK_MAX];
    src_iter it = {0, 0};
    size_t base;
    while (left > 0 && gates && next_src(sc, &it, scan, &t, &base)) {
        size_t top = 0;
        uint64_t m = gates;
        if (!is_shape(t->root)) {
            test_box rb = node_test_box(node_at(t, t->root));
            m = pass_ball(&w->gates, gates, &rb, gate_threshold, false, simd);
            if (!m)
                continue;
        }
        stack[top].ref = t->root;
        stack[top++].mask = m;
        while (top > 0 && gates) {
            if (left <= 0) {
                rp_meter_.out = true;
                break;
            }
            left--;
            top--;
            uint32_t ref = stack[top].ref;
            uint64_t mask = stack[top].mask & gates;
            if (!mask)
                continue;
            if (ref & RP_BVH_SHAPE) {
                if (robots_leaf(sc, w, mask, base + shape_of(ref), gate_threshold, threshold, simd,
                                &left))
                    gates = robots_live(w, gates);
                continue;
            }
            const rp_bvh_node *n = node_at(t, ref);
            uint32_t c[2] = {n->child[1], n->child[0]}; /* child[1] pushed first */
            for (int k = 0; k < 2; k++) {
                if (c[k] & RP_BVH_SHAPE) {
                    stack[top].ref = c[k];
                    stack[top++].mask = mask;
                    continue;
                }
                test_box cb = node_test_box(node_at(t, c[k]));
                uint64_t cm = pass_ball(&w->gates, mask, &cb, gate_threshold, false, simd);
                if (cm) {
                    stack[top].ref = c[k];
                    stack[top++].mask = cm;
                }
            }
        }
    }
    rp_meter_.left = left;
}

/* The single robot of a nearest walk: fills its shape lanes. */
static void robot_fill(rp_robot_walk *w, uint64_t want, void *ctx)
{
    lanes_fill(&w->shapes, &w->filled, want, w->fill, ctx);
}

/* The gates of a single robot still worth walking for. */
static uint64_t live_gates(const rp_robot_walk *w, uint64_t gates, uint64_t active)
{
    uint64_t live = 0;
    for (; gates; gates &= gates - 1) {
        unsigned g = (unsigned)__builtin_ctzll(gates);
        if (w->gate_shapes[g] & active)
            live |= (uint64_t)1 << g;
    }
    return live;
}

/* ---- a whole robot's nearest pairs in one walk ------------------------------------ */

/* The smallest squared distance from the centres of the balls of mask to
 * box b: the order in which a nearest walk visits children. */
static double balls_order_key(const rp_balls *q, uint64_t mask, const test_box *b)
{
    double best = INFINITY;
    for (; mask; mask &= mask - 1) {
        unsigned k = (unsigned)__builtin_ctzll(mask);
        double s2 = 0.0;
        for (int a = 0; a < 3; a++) {
            double d = MAX2(b->lo[a] - q->c[a][k], q->c[a][k] - b->hi[a]);
            if (d > 0.0)
                s2 += d * d;
        }
        best = MIN2(best, s2);
    }
    return best;
}

static inline __attribute__((always_inline)) void
robot_leaf_near(const rp_scene *sc, rp_robot_walk *w, uint64_t gates, size_t e, const double *bound,
                double gate_slack, int simd, rp_multi_visit_fn fn, void *ctx, uint64_t active,
                int64_t *left)
{
    rp_shape sbuf;
    if (rp_ignored_at_(sc, e))
        return;
    dbox d = stored_box(SC_SHAPE(sc, e));
    test_box b = {{d.lo[0], d.lo[1], d.lo[2]}, {d.hi[0], d.hi[1], d.hi[2]}, d.r};
    gates = pass_ball(&w->gates, gates, &b, *bound + gate_slack, true, simd);
    uint64_t want = 0;
    for (; gates; gates &= gates - 1)
        want |= w->gate_shapes[__builtin_ctzll(gates)];
    want &= active;
    if (!want)
        return;
    robot_fill(w, want, ctx);
    want = pass(&w->shapes, want, &b, *bound, true, simd);
    const rp_shape *s = SC_SHAPE(sc, e);
    for (; want; want &= want - 1) {
        unsigned k = (unsigned)__builtin_ctzll(want);
        *left = rp_meter_spend_(*left, 1);
        double dist = dist_units(w->shapes.shape[k], s, left);
        if (dist <= *bound)
            (void)fn(ctx, k, e, dist);
    }
}

static inline __attribute__((always_inline)) void
nearest_robot(const rp_scene *sc, rp_robot_walk *w, uint64_t active, const double *bound,
              double gate_slack, rp_multi_visit_fn fn, void *ctx, const int simd)
{
    const rp_bvh *t = &sc->tree;
    uint64_t all_gates = w->gates.n >= 64 ? UINT64_MAX : ((uint64_t)1 << w->gates.n) - 1;
    uint64_t gates = live_gates(w, all_gates, active);
    if (!gates)
        return;
    int64_t left = rp_meter_.left;
    if (left <= 0) {
        rp_meter_.out = true;
        return;
    }
    bool scan = sc->count <= SMALL_SCENE || is_shape(t->root);
    size_t n_scan = scan ? sc->count : sc->n_planes; /* (as in rp_scene_below_multi_) */
    for (size_t i = 0; i < n_scan; i++) {
        if (left <= 0) {
            rp_meter_.out = true;
            break;
        }
        robot_leaf_near(sc, w, gates, scan ? i : sc->planes[i], bound, gate_slack, simd, fn, ctx,
                        active, &left);
    }
    /* Depth first, nearer child first (by the nearest ball's distance to
     * its box); an entry is tested again when it pops if the bound has
     * come down since it was pushed. */
    struct {
        uint32_t ref;
        uint64_t mask;
        double bound; /* *bound when pushed */
    } stack[STACK_MAX];
    src_iter it = {0, 0};
    size_t base;
    while (left > 0 && next_src(sc, &it, scan, &t, &base)) {
        size_t top = 0;
        uint64_t m = gates;
        if (!is_shape(t->root)) {
            test_box rb = node_test_box(node_at(t, t->root));
            m = pass_ball(&w->gates, gates, &rb, *bound + gate_slack, true, simd);
            if (!m)
                continue;
        }
        stack[top].ref = t->root;
        stack[top].mask = m;
        stack[top++].bound = *bound;
        while (top > 0) {
            if (left <= 0) {
                rp_meter_.out = true;
                break;
            }
            left--;
            top--;
            uint32_t ref = stack[top].ref;
            uint64_t mask = stack[top].mask;
            if (ref & RP_BVH_SHAPE) {
                robot_leaf_near(sc, w, mask, base + shape_of(ref), bound, gate_slack, simd, fn, ctx,
                                active, &left);
                continue;
            }
            const rp_bvh_node *n = node_at(t, ref);
            if (*bound < stack[top].bound) {
                test_box nb = node_test_box(n);
                mask = pass_ball(&w->gates, mask, &nb, *bound + gate_slack, true, simd);
                if (!mask)
                    continue;
            }
            uint32_t c[2] = {n->child[0], n->child[1]};
            uint64_t cm[2];
            double key[2];
            for (int k = 0; k < 2; k++) {
                if (c[k] & RP_BVH_SHAPE) {
                    cm[k] = mask;
                    key[k] = -INFINITY; /* shapes first: they may bring the bound down */
                    continue;
                }
                test_box cb = node_test_box(node_at(t, c[k]));
                cm[k] = pass_ball(&w->gates, mask, &cb, *bound + gate_slack, true, simd);
                key[k] = cm[k] ? balls_order_key(&w->gates, cm[k], &cb) : INFINITY;
            }
            int first = key[1] < key[0]; /* the nearer one pops first: pushed last */
            for (int k = 0; k < 2; k++) {
                int i = k == 0 ? 1 - first : first;
                if (cm[i]) {
                    stack[top].ref = c[i];
                    stack[top].mask = cm[i];
                    stack[top++].bound = *bound;
                }
            }
        }
    }
    rp_meter_.left = left;
}

#ifdef RP_HAVE_AVX2_PATH
__attribute__((target("avx2"))) static void
below_robots_avx2(const rp_scene *sc, rp_robots_walk *w, double gate_threshold, double threshold)
{
    below_robots(sc, w, gate_threshold, threshold, 1);
}

__attribute__((target("avx2"))) static void nearest_robot_avx2(const rp_scene *sc, rp_robot_walk *w,
                                                               uint64_t active, const double *bound,
                                                               double gate_slack,
                                                               rp_multi_visit_fn fn, void *ctx)
{
    nearest_robot(sc, w, active, bound, gate_slack, fn, ctx, 1);
}
#endif

void rp_scene_below_robots_(const rp_scene *sc, rp_robots_walk *w, double gate_threshold,
                            double threshold)
{
#ifdef RP_HAVE_AVX2_PATH
    if (rp_simd_enabled_()) {
        below_robots_avx2(sc, w, gate_threshold, threshold);
        return;
    }
#endif
    below_robots(sc, w, gate_threshold, threshold, 0);
}

void rp_scene_nearest_robot_(const rp_scene *sc, rp_robot_walk *w, uint64_t active,
                             const double *bound, double gate_slack, rp_multi_visit_fn fn,
                             void *ctx)
{
#ifdef RP_HAVE_AVX2_PATH
    if (rp_simd_enabled_()) {
        nearest_robot_avx2(sc, w, active, bound, gate_slack, fn, ctx);
        return;
    }
#endif
    nearest_robot(sc, w, active, bound, gate_slack, fn, ctx, 0);
}
