/*
 * Bounding-volume hierarchy over a scene's shapes, and the per-shape queries
 * built on it: nearest scene shape, and every shape below a threshold.
 *
 * Layout.  A binary tree of axis-aligned boxes stored in one array; an inner
 * node's children sit next to each other at `first` and `first + 1`; a leaf
 * holds up to LEAF_MAX shapes, order[first .. first + count).  Boxes are
 * floats (36-byte nodes) rounded outwards, so a float box always contains
 * the double-precision shape.
 *
 * Bounds.  Every pair inside a node is at least as far apart as the query's
 * box and the node's box (both include the radii); when those overlap, the
 * signed distance can still be as low as -(r_query + largest radius inside),
 * the deepest possible penetration.  The larger of the two bounds prunes.
 * The
 * kernels' results carry an error of up to 16*eps*S (geometry.h); every box
 * is inflated by BOX_SLACK*eps*S of its own shape, so the bound stays below
 * the *computed* distance as well, and the tree returns exactly what a
 * brute-force scan returns (same distances, same pair, same tie rule).
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
 * keys are core centres, always finite.
 *
 * Maintenance.  The tree is rebuilt lazily: mutations mark it stale, and the
 * first query after them rebuilds it (O(n log n), median splits).  Queries
 * are otherwise read-only; rp_scene_prepare builds it ahead of concurrent
 * readers.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "scene_int.h"

/* Shapes per leaf (2 measured fastest for robot checks at 10k shapes, 17%
 * ahead of 4, at 46 bytes of tree per shape), and the scene size below which
 * scans beat the tree. */
#define LEAF_MAX 2
#define SMALL_SCENE 16
/* Box inflation in units of eps*S (S: the shape's largest magnitude); above
 * the kernels' 16 eps*S error bound plus the rounding of the box distance. */
#define BOX_SLACK 64.0
/* Traversal stack.  Median splits give a depth of at most log2(n) <= 32 for
 * n < 2^32 shapes, and a depth-first walk holds at most depth + 1 entries. */
#define STACK_MAX 64

struct rp_bvh {
    rp_bvh_node *nodes;
    uint32_t *order;
    size_t n_nodes, n_shapes;
};

/* ---- boxes ------------------------------------------------------------------ */

/* Inline min/max: fmin/fmax are libm calls here; inputs are never NaN. */
#define MIN2(a, b) ((a) < (b) ? (a) : (b))
#define MAX2(a, b) ((a) > (b) ? (a) : (b))

typedef struct dbox {
    double lo[3], hi[3];
    double r; /* radius of the shape (largest radius for a node) */
} dbox;

static double maxabs3(rp_vec3 v)
{
    double x = fabs(v.x), y = fabs(v.y), z = fabs(v.z);
    return x > y ? (x > z ? x : z) : (y > z ? y : z);
}

/* The shape's box in doubles, inflated by the slack (see the top). */
static dbox shape_box(const rp_shape *s)
{
    rp_vec3 a, b;
    double r;
    if (s->kind == RP_SHAPE_SPHERE) {
        a = b = s->sphere.center;
        r = s->sphere.radius;
    } else {
        a = s->capsule.a;
        b = s->capsule.b;
        r = s->capsule.radius;
    }
    double S = maxabs3(a);
    double Sb = maxabs3(b);
    S = S > Sb ? S : Sb;
    S = S > r ? S : r;
    double pad = r + BOX_SLACK * DBL_EPSILON * S + DBL_MIN;
    dbox box = {{MIN2(a.x, b.x) - pad, MIN2(a.y, b.y) - pad, MIN2(a.z, b.z) - pad},
                {MAX2(a.x, b.x) + pad, MAX2(a.y, b.y) + pad, MAX2(a.z, b.z) + pad},
                pad};
    return box;
}

/* The centre of the shape's core (the midpoint of a capsule's axis), the
 * key of the median splits.  Taken from the core, not the box: a box may
 * reach to -inf and +inf on the same axis (coordinates and radii near
 * DBL_MAX), and its midpoint would be NaN, which no ordering can sort. */
static void shape_centre(const rp_shape *s, double c[3])
{
    rp_vec3 a = s->kind == RP_SHAPE_SPHERE ? s->sphere.center : s->capsule.a;
    rp_vec3 b = s->kind == RP_SHAPE_SPHERE ? s->sphere.center : s->capsule.b;
    /* Halves first, so the sum cannot overflow. */
    c[0] = 0.5 * a.x + 0.5 * b.x;
    c[1] = 0.5 * a.y + 0.5 * b.y;
    c[2] = 0.5 * a.z + 0.5 * b.z;
}

/* Largest float <= x, and smallest float >= x (infinite beyond float range,
 * which keeps boxes conservative). */
static float float_down(double x)
{
    float f = (float)x;
    return (double)f > x ? nextafterf(f, -INFINITY) : f;
}

static float float_up(double x)
{
    float f = (float)x;
    return (double)f < x ? nextafterf(f, INFINITY) : f;
}

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

/* Slack on squared comparisons: the boxes' inflation already keeps every
 * computed distance above the box gap; this only absorbs the rounding of
 * the squares themselves, erring towards visiting. */
#define SQUARE_SLACK (1.0 + 8.0 * DBL_EPSILON)

/* True when no pair below a node with this key can be below `bound` (or
 * equal to it, when ties cannot win). */
static inline bool key_excludes(double key, double bound, bool ties_win)
{
    if (key > 0.0) { /* apart: every distance exceeds sqrt(key) */
        if (bound < 0.0)
            return true;
        double b2 = bound * bound * SQUARE_SLACK;
        return key > b2;
    }
    return key > bound || (key == bound && !ties_win);
}

/* ---- build ------------------------------------------------------------------ */

typedef struct build_item {
    dbox box;
    double centroid[3];
    uint32_t index;
} build_item;

typedef struct builder {
    build_item *items;
    rp_bvh_node *nodes;
    size_t n_nodes;
} builder;

static void set_node_box(rp_bvh_node *node, const build_item *items, size_t n)
{
    dbox b = items[0].box;
    for (size_t i = 1; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            b.lo[k] = fmin(b.lo[k], items[i].box.lo[k]);
            b.hi[k] = fmax(b.hi[k], items[i].box.hi[k]);
        }
        b.r = fmax(b.r, items[i].box.r);
    }
    for (int k = 0; k < 3; k++) {
        node->lo[k] = float_down(b.lo[k]);
        node->hi[k] = float_up(b.hi[k]);
    }
    node->rmax = float_up(b.r);
}

/* Partially sorts items so that the k-th by centroid[axis] is in place and
 * smaller ones precede it (quickselect; ties broken by index so the tree
 * does not depend on the sort's whims). */
static bool item_less(const build_item *a, const build_item *b, int axis)
{
    if (a->centroid[axis] != b->centroid[axis])
        return a->centroid[axis] < b->centroid[axis];
    return a->index < b->index;
}

static void select_kth(build_item *items, size_t n, size_t k, int axis)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        build_item pivot = items[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (item_less(&items[i], &pivot, axis))
                i++;
            while (item_less(&pivot, &items[j], axis))
                j--;
            if (i <= j) {
                build_item t = items[i];
                items[i] = items[j];
                items[j] = t;
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

/* Builds the subtree for items[0..n) into node `at`; `offset` is where
 * items[0] sits in the scene-wide order. */
static void build_node(builder *b, size_t at, build_item *items, size_t n, size_t offset)
{
    rp_bvh_node *node = &b->nodes[at];
    set_node_box(node, items, n);
    if (n <= LEAF_MAX) {
        node->first = (uint32_t)offset;
        node->count = (uint32_t)n;
        return;
    }
    /* Split at the median centroid along the widest centroid extent. */
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++)
        lo[k] = hi[k] = items[0].centroid[k];
    for (size_t i = 1; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], items[i].centroid[k]);
            hi[k] = fmax(hi[k], items[i].centroid[k]);
        }
    int axis = 0;
    for (int k = 1; k < 3; k++)
        if (hi[k] - lo[k] > hi[axis] - lo[axis])
            axis = k;
    size_t half = n / 2;
    select_kth(items, n, half, axis);
    size_t left = b->n_nodes;
    b->n_nodes += 2;
    node->first = (uint32_t)left;
    node->count = 0;
    build_node(b, left, items, half, offset);
    build_node(b, left + 1, items + half, n - half, offset + half);
}

void rp_bvh_free_(rp_bvh *t, rp_store *st)
{
    if (!t)
        return;
    st->bytes -= t->n_nodes * sizeof *t->nodes + t->n_shapes * sizeof *t->order + sizeof *t;
    free(t->nodes);
    free(t->order);
    free(t);
}

/* Builds a tree over the scene's current shapes; NULL when out of memory. */
static rp_bvh *build(const rp_scene *sc)
{
    size_t n = sc->count;
    rp_bvh *t = calloc(1, sizeof *t);
    build_item *items = malloc(n * sizeof *items);
    /* A binary tree over n shapes with non-empty leaves has at most n leaves
     * and so fewer than 2n nodes; allocate that bound. */
    rp_bvh_node *nodes = malloc(2 * n * sizeof *nodes);
    uint32_t *order = malloc(n * sizeof *order);
    if (!t || !items || !nodes || !order) {
        free(t);
        free(items);
        free(nodes);
        free(order);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        items[i].box = shape_box(&sc->entries[i].shape);
        shape_centre(&sc->entries[i].shape, items[i].centroid);
        items[i].index = (uint32_t)i;
    }
    builder b = {items, nodes, 1};
    build_node(&b, 0, items, n, 0);
    for (size_t i = 0; i < n; i++)
        order[i] = items[i].index;
    free(items);
    rp_bvh_node *fit = realloc(nodes, b.n_nodes * sizeof *nodes);
    t->nodes = fit ? fit : nodes;
    t->n_nodes = b.n_nodes;
    t->order = order;
    t->n_shapes = n;
    sc->store->bytes += t->n_nodes * sizeof *t->nodes + n * sizeof *order + sizeof *t;
    return t;
}

/* The tree for the scene's current contents, rebuilding it when a mutation
 * made it stale; NULL for small scenes (scanned instead) or when out of
 * memory (also scanned: slower, same answers). */
static const rp_bvh *tree_of(const rp_scene *csc)
{
    if (csc->count <= SMALL_SCENE)
        return NULL;
    if (csc->bvh && !csc->bvh_stale)
        return csc->bvh;
    /* The lazy rebuild is the one write a query does; see the top. */
    rp_scene *sc = (rp_scene *)(uintptr_t)csc;
    rp_bvh_free_(sc->bvh, sc->store);
    sc->bvh = build(sc);
    sc->bvh_stale = false;
    return sc->bvh;
}

rp_status rp_scene_prepare(rp_scene *sc)
{
    if (sc->count <= SMALL_SCENE)
        return RP_OK;
    return tree_of(sc) ? RP_OK : RP_ERR_NOMEM;
}

size_t rp_scene_index_bytes(const rp_scene *sc)
{
    const rp_bvh *t = sc->bvh;
    return t && !sc->bvh_stale ? t->n_nodes * sizeof *t->nodes + t->n_shapes * sizeof *t->order
                               : 0;
}

/* ---- queries ------------------------------------------------------------------ */

/* The query's box and (padded) radius. */
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
    for (size_t i = 0; i < n; i++)
        if (excl[i] == e)
            return true;
    return false;
}

/* Applies the nearest-shape rule of rp_scene_nearest_ to shape e. */
static inline void offer(const rp_scene *sc, const rp_shape *q, size_t e, double *best_d,
                         size_t *best_idx, bool *found, size_t *evaluated, const size_t *excl,
                         size_t n_excl)
{
    if (n_excl && excluded(excl, n_excl, e))
        return;
    ++*evaluated;
    double d = rp_shape_signed_distance(q, &sc->entries[e].shape);
    if (d < *best_d ||
        (*found && d == *best_d && strcmp(sc->entries[e].id, sc->entries[*best_idx].id) < 0)) {
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
    *found = false;
    *evaluated = 0;
    const rp_bvh *t = tree_of(sc);
    if (!t) {
        for (size_t e = 0; e < sc->count; e++)
            offer(sc, q, e, best_d, best_idx, found, evaluated, excl, n_excl);
        return;
    }
    double lo[3], hi[3];
    double qr = query_box(q, lo, hi);
    /* Depth first, nearer child first.  A node is skipped when its bound
     * exceeds the best distance, or equals it while no tie can win.  (gap
     * holds node keys, see node_key.) */
    struct {
        uint32_t node;
        double gap;
    } stack[STACK_MAX];
    size_t top = 0;
    stack[top].node = 0;
    stack[top++].gap = node_key(lo, hi, qr, &t->nodes[0]);
    while (top > 0) {
        top--;
        if (key_excludes(stack[top].gap, *best_d, *found))
            continue;
        const rp_bvh_node *n = &t->nodes[stack[top].node];
        if (n->count) {
            for (uint32_t i = 0; i < n->count; i++)
                offer(sc, q, t->order[n->first + i], best_d, best_idx, found, evaluated, excl,
                      n_excl);
            continue;
        }
        uint32_t a = n->first, b = a + 1;
        double ga = node_key(lo, hi, qr, &t->nodes[a]);
        double gb = node_key(lo, hi, qr, &t->nodes[b]);
        if (ga < gb) { /* push the farther one first, so the nearer pops first */
            uint32_t tn = a;
            double tg = ga;
            a = b, ga = gb, b = tn, gb = tg;
        }
        stack[top].node = a;
        stack[top++].gap = ga;
        stack[top].node = b;
        stack[top++].gap = gb;
    }
}

bool rp_scene_below_(const rp_scene *sc, const rp_shape *q, double threshold,
                     rp_scene_visit_fn fn, void *ctx)
{
    const rp_bvh *t = tree_of(sc);
    if (!t) {
        for (size_t e = 0; e < sc->count; e++) {
            double d = rp_shape_signed_distance(q, &sc->entries[e].shape);
            if (d < threshold && !fn(ctx, e, d))
                return false;
        }
        return true;
    }
    double lo[3], hi[3];
    double qr = query_box(q, lo, hi);
    uint32_t stack[STACK_MAX];
    size_t top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const rp_bvh_node *n = &t->nodes[stack[--top]];
        if (key_excludes(node_key(lo, hi, qr, n), threshold, false))
            continue; /* every pair inside is at >= threshold */
        if (n->count) {
            for (uint32_t i = 0; i < n->count; i++) {
                size_t e = t->order[n->first + i];
                double d = rp_shape_signed_distance(q, &sc->entries[e].shape);
                if (d < threshold && !fn(ctx, e, d))
                    return false;
            }
            continue;
        }
        stack[top++] = n->first + 1;
        stack[top++] = n->first;
    }
    return true;
}
