/* SPDX-License-Identifier: MIT */
/*
 * Motion planning (include/repose/plan.h): RRT-Connect in joint space over
 * the library's own edge checks, and the nearest-neighbour structure it
 * searches.
 *
 * Nearest neighbours.  A tree of the planner grows one configuration at a
 * time and is searched after every addition, so the structure must take
 * points one by one and stay fast at tens of thousands of them.  It is a
 * forest of kd-trees in the manner of Bentley and Saxe: level k is empty
 * or holds exactly 2^k points, like the bits of the count; an addition
 * merges the full levels below the first empty one, with the new point,
 * into a kd-tree built afresh there (each point is rebuilt O(log n) times,
 * at O(log n) each).  A query searches every level: O(log^2 n) boxes and a
 * few leaves.  Each kd-tree node keeps the bounding box of its points;
 * coordinates that wrap (continuous joints) are kept in [-pi, pi), where a
 * box is an arc that does not wrap, so the distance from a query to it is
 * the wrapped distance to its nearer end (or 0 inside).  Ties go to the
 * lowest index, whatever the levels hold: the search is deterministic.
 *
 * The planner (see plan.h for the contract).  Both trees keep every
 * configuration twice: raw, as its edge was checked (a continuous joint's
 * value may leave [-pi, pi] as the tree winds round), and normalised, for
 * the nearest-neighbour search.  An extension steers from the nearest node
 * by the wrapped difference, so each edge goes the short way round and is
 * checked from its parent's raw values.  A path is assembled from the two
 * branches (the goal tree's read backwards, so its edges run the other way
 * than they were checked: the same segments).  With wrapping joints the
 * path's unwrapped values are sums of steps, not the trees' own, so then
 * every edge is checked again as it will be returned; shortcuts and the
 * pieces of a densified edge always are.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "repose/plan.h"

#define NN_LEAF 8
#define NN_LEVELS 48
#define TWO_PI 6.283185307179586
#define PI 3.141592653589793

/* ---- wrapped coordinates --------------------------------------------------------- */

/* x in [-pi, pi) (x finite). */
static double wrap_angle(double x)
{
    if (x >= -PI && x < PI)
        return x;
    double r = remainder(x, TWO_PI); /* in [-pi, pi] */
    return r >= PI ? r - TWO_PI : r;
}

/* The difference b - a of two values in [-pi, pi), wrapped to [-pi, pi]. */
static inline double wrapped_diff(double a, double b)
{
    double d = b - a;
    if (d > PI)
        d -= TWO_PI;
    else if (d < -PI)
        d += TWO_PI;
    return d;
}

/* ---- nearest neighbours ------------------------------------------------------------ */

typedef struct nn_level {
    size_t n;      /* points: 0 or 2^k */
    uint32_t *idx; /* their indices, in the build's order */
    double *box;   /* per node (heap order): lo[dim], hi[dim] */
} nn_level;

struct rp_nn {
    size_t dim;
    bool *wraps;
    bool any_wrap;
    double *pts; /* n * dim, wrapped coordinates normalised */
    size_t n, cap;
    nn_level lv[NN_LEVELS];
};

rp_nn *rp_nn_new(size_t dim, const bool *wraps)
{
    rp_nn *nn = calloc(1, sizeof *nn);
    if (!nn)
        return NULL;
    nn->dim = dim;
    nn->wraps = calloc(dim ? dim : 1, sizeof *nn->wraps);
    if (!nn->wraps) {
        free(nn);
        return NULL;
    }
    for (size_t d = 0; d < dim && wraps; d++) {
        nn->wraps[d] = wraps[d];
        nn->any_wrap = nn->any_wrap || wraps[d];
    }
    return nn;
}

void rp_nn_free(rp_nn *nn)
{
    if (!nn)
        return;
    for (int k = 0; k < NN_LEVELS; k++) {
        free(nn->lv[k].idx);
        free(nn->lv[k].box);
    }
    free(nn->pts);
    free(nn->wraps);
    free(nn);
}

static inline const double *nn_pt(const rp_nn *nn, uint32_t i)
{
    return nn->pts + (size_t)i * nn->dim;
}

/* Orders indices by coordinate d, then by index. */
static inline bool nn_less(const rp_nn *nn, uint32_t a, uint32_t b, size_t d)
{
    double x = nn_pt(nn, a)[d], y = nn_pt(nn, b)[d];
    return x < y || (x == y && a < b);
}

/* Puts the element of rank k of idx[0..n) (by nn_less on d) at k, smaller
 * ones before it and larger after (quickselect, middle pivot). */
static void nn_select(const rp_nn *nn, uint32_t *idx, size_t n, size_t k, size_t d)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint32_t pivot = idx[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (nn_less(nn, idx[i], pivot, d))
                i++;
            while (nn_less(nn, pivot, idx[j], d))
                j--;
            if (i <= j) {
                uint32_t t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
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

static void nn_build(rp_nn *nn, nn_level *l, size_t node, size_t a, size_t b)
{
    size_t dim = nn->dim;
    double *lo = l->box + node * 2 * dim, *hi = lo + dim;
    for (size_t d = 0; d < dim; d++) {
        lo[d] = INFINITY;
        hi[d] = -INFINITY;
    }
    for (size_t i = a; i < b; i++) {
        const double *p = nn_pt(nn, l->idx[i]);
        for (size_t d = 0; d < dim; d++) {
            lo[d] = p[d] < lo[d] ? p[d] : lo[d];
            hi[d] = p[d] > hi[d] ? p[d] : hi[d];
        }
    }
    if (b - a <= NN_LEAF)
        return;
    size_t split = 0;
    for (size_t d = 1; d < dim; d++)
        if (hi[d] - lo[d] > hi[split] - lo[split])
            split = d;
    size_t mid = a + (b - a) / 2;
    nn_select(nn, l->idx + a, b - a, mid - a, split);
    nn_build(nn, l, 2 * node + 1, a, mid);
    nn_build(nn, l, 2 * node + 2, mid, b);
}

/* Nodes of a level of n points in heap order. */
static size_t nn_nodes(size_t n)
{
    size_t leaves = 1;
    while (leaves * NN_LEAF < n)
        leaves *= 2;
    return 2 * leaves;
}

/* Levels below this hold the last (n mod 2^NN_SCAN_LEVELS) points, which a
 * query scans in order instead of searching trees: below about a thousand
 * points a scan costs less than descending ten small trees (plan_bench
 * --nn measures both ends). */
#define NN_SCAN_LEVELS 10

bool rp_nn_add(rp_nn *nn, const double *p)
{
    if (nn->n >= UINT32_MAX - 1)
        return false;
    if (nn->n == nn->cap) {
        size_t cap = nn->cap ? 2 * nn->cap : 64;
        double *more = realloc(nn->pts, cap * (nn->dim ? nn->dim : 1) * sizeof *more);
        if (!more)
            return false;
        nn->pts = more;
        nn->cap = cap;
    }
    double *q = nn->pts + nn->n * nn->dim;
    for (size_t d = 0; d < nn->dim; d++)
        q[d] = nn->wraps[d] ? wrap_angle(p[d]) : p[d];
    /* The first empty level takes the full ones below it and the point;
     * the levels below NN_SCAN_LEVELS are counted, not built. */
    int k = 0;
    while (k < NN_LEVELS && ((nn->n >> k) & 1))
        k++;
    if (k == NN_LEVELS)
        return false;
    if (k < NN_SCAN_LEVELS) {
        nn->n++;
        return true;
    }
    size_t m = (size_t)1 << k;
    uint32_t *idx = malloc(m * sizeof *idx);
    double *box = malloc(nn_nodes(m) * 2 * (nn->dim ? nn->dim : 1) * sizeof *box);
    if (!idx || !box) {
        free(idx);
        free(box);
        return false;
    }
    /* The new tree's points: the scanned ones (the last 2^NN_SCAN_LEVELS
     * - 1) and the full levels' above them, then the new one. */
    size_t at = 0;
    for (int j = NN_SCAN_LEVELS; j < k; j++) {
        memcpy(idx + at, nn->lv[j].idx, nn->lv[j].n * sizeof *idx);
        at += nn->lv[j].n;
        free(nn->lv[j].idx);
        free(nn->lv[j].box);
        memset(&nn->lv[j], 0, sizeof nn->lv[j]);
    }
    size_t scanned = ((size_t)1 << NN_SCAN_LEVELS) - 1;
    for (size_t i = nn->n - scanned; i < nn->n; i++)
        idx[at++] = (uint32_t)i;
    idx[at] = (uint32_t)nn->n++;
    nn->lv[k] = (nn_level){m, idx, box};
    nn_build(nn, &nn->lv[k], 0, 0, m);
    return true;
}

/* Squared distance from q to the box of node `node` of level l. */
static double nn_box_d2(const rp_nn *nn, const nn_level *l, size_t node, const double *q)
{
    size_t dim = nn->dim;
    const double *lo = l->box + node * 2 * dim, *hi = lo + dim;
    double s = 0.0;
    for (size_t d = 0; d < dim; d++) {
        double x = q[d];
        if (x >= lo[d] && x <= hi[d])
            continue;
        double g;
        if (nn->wraps[d]) {
            double a = fabs(wrapped_diff(x, lo[d])), b = fabs(wrapped_diff(x, hi[d]));
            g = a < b ? a : b;
        } else {
            g = x < lo[d] ? lo[d] - x : x - hi[d];
        }
        s += g * g;
    }
    return s;
}

static double nn_d2(const rp_nn *nn, const double *a, const double *b)
{
    double s = 0.0;
    if (!nn->any_wrap) {
        for (size_t d = 0; d < nn->dim; d++)
            s += (b[d] - a[d]) * (b[d] - a[d]);
        return s;
    }
    for (size_t d = 0; d < nn->dim; d++) {
        double g = nn->wraps[d] ? wrapped_diff(a[d], b[d]) : b[d] - a[d];
        s += g * g;
    }
    return s;
}

static void nn_search(const rp_nn *nn, const nn_level *l, size_t node, size_t a, size_t b,
                      const double *q, double *best, size_t *best_i)
{
    if (b - a <= NN_LEAF) {
        for (size_t i = a; i < b; i++) {
            uint32_t p = l->idx[i];
            double d2 = nn_d2(nn, q, nn_pt(nn, p));
            if (d2 < *best || (d2 == *best && p < *best_i)) {
                *best = d2;
                *best_i = p;
            }
        }
        return;
    }
    size_t mid = a + (b - a) / 2, c0 = 2 * node + 1, c1 = 2 * node + 2;
    double l0 = nn_box_d2(nn, l, c0, q), l1 = nn_box_d2(nn, l, c1, q);
    if (l1 < l0) {
        if (l1 <= *best)
            nn_search(nn, l, c1, mid, b, q, best, best_i);
        if (l0 <= *best)
            nn_search(nn, l, c0, a, mid, q, best, best_i);
    } else {
        if (l0 <= *best)
            nn_search(nn, l, c0, a, mid, q, best, best_i);
        if (l1 <= *best)
            nn_search(nn, l, c1, mid, b, q, best, best_i);
    }
}

size_t rp_nn_nearest(const rp_nn *nn, const double *q, double *d2)
{
    double qn[64], *qq = qn, *heap = NULL;
    if (nn->dim > 64) {
        heap = malloc(nn->dim * sizeof *heap);
        if (!heap)
            return SIZE_MAX;
        qq = heap;
    }
    for (size_t d = 0; d < nn->dim; d++)
        qq[d] = nn->wraps[d] ? wrap_angle(q[d]) : q[d];
    double best = INFINITY;
    size_t best_i = SIZE_MAX;
    /* The last points, which no tree holds yet, in order: a strict
     * improvement only, as their indices are the highest. */
    size_t tail = nn->n & (((size_t)1 << NN_SCAN_LEVELS) - 1);
    for (size_t i = nn->n - tail; i < nn->n; i++) {
        double d2i = nn_d2(nn, qq, nn_pt(nn, (uint32_t)i));
        if (d2i < best) {
            best = d2i;
            best_i = i;
        }
    }
    for (int k = NN_SCAN_LEVELS; k < NN_LEVELS; k++) {
        const nn_level *l = &nn->lv[k];
        if (l->n && nn_box_d2(nn, l, 0, qq) <= best)
            nn_search(nn, l, 0, 0, l->n, qq, &best, &best_i);
    }
    free(heap);
    if (d2)
        *d2 = best;
    return best_i;
}

/* ---- the planner ----------------------------------------------------------------- */

/* xoshiro256**, seeded by splitmix64. */
typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s, result = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s[3] << 45 | s[3] >> 19;
    return result;
}

/* Uniform in [0, 1). */
static double rng_unit(rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1p-53;
}

/* One tree: configurations raw (as checked) and normalised (in nn). */
typedef struct tree {
    rp_nn *nn;
    double *raw;
    uint32_t *parent; /* UINT32_MAX: a root */
    uint32_t *root;   /* the root each node grew from */
    size_t n, cap;
} tree;

typedef struct planner {
    const rp_model *m;
    const rp_scene *sc;
    const rp_transform *base;
    const rp_plan_opts *o;
    size_t dof;
    bool *wraps;
    double *lo, *hi; /* sampling bounds */
    double range;
    rng r;
    struct timespec t0;
    rp_check_opts co;
    rp_motion_opts mo;
    rp_plan_result *out;
    bool any_wrap; /* some joint wraps */
    size_t nodes;  /* in both trees */
    rp_status err; /* an error that ends the plan */
    int stopped;   /* an outcome that ends it, or -1 */
    double *seg;   /* 2 * dof: an edge's waypoints */
} planner;

static double elapsed_ms(const planner *p)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - p->t0.tv_sec) * 1e3 + (double)(t.tv_nsec - p->t0.tv_nsec) / 1e6;
}

/* Whether the plan must end now (p->stopped says why). */
static bool must_stop(planner *p)
{
    if (p->stopped >= 0 || p->err)
        return true;
    const rp_plan_opts *o = p->o;
    if ((o->max_states && p->out->states_checked >= o->max_states) || p->nodes >= RP_PLAN_MAX_NODES)
        p->stopped = RP_PLAN_MAX_STATES;
    else if (o->timeout_ms > 0 && elapsed_ms(p) >= o->timeout_ms)
        p->stopped = RP_PLAN_TIMEOUT;
    else if (o->stop && o->stop(o->stop_ctx))
        p->stopped = RP_PLAN_STOPPED;
    return p->stopped >= 0;
}

/* Whether the edge a-b is valid: 1 yes, 0 no, -1 the plan ends (p->err
 * or p->stopped).  known_ends: a and b are states already checked bit for
 * bit (waypoints of a path whose every waypoint was), so only the states
 * between them are. */
static int edge_ok(planner *p, const double *a, const double *b, bool known_ends)
{
    if (must_stop(p))
        return -1;
    memcpy(p->seg, a, p->dof * sizeof *a);
    memcpy(p->seg + p->dof, b, p->dof * sizeof *b);
    rp_motion_opts mo = p->mo;
    mo.skip_ends = known_ends;
    /* One edge may not outrun the plan: at most the states left of
     * max_states, and, with a timeout, as many as the time left could pay
     * at four microseconds each (a 57-shape arm's state costs two to
     * five: the edge stops about when the timeout passes, however fine
     * the resolution or tolerance; an ordinary edge needs a few hundred). */
    uint64_t by_states = 0, by_time = 0;
    if (p->o->max_states) {
        uint64_t used = p->out->states_checked;
        by_states = used < p->o->max_states ? p->o->max_states - used : 1;
    }
    if (p->o->timeout_ms > 0) {
        double left_us = (p->o->timeout_ms - elapsed_ms(p)) * 1e3;
        double n = left_us / 4.0;
        by_time = n > 1e3 ? (n < 9e18 ? (uint64_t)n : UINT64_MAX / 2) : 1000;
    }
    mo.max_states = by_states && (!by_time || by_states <= by_time) ? by_states : by_time;
    rp_motion_result r;
    rp_status st = rp_model_check_motion(p->m, p->sc, p->base, p->seg, 2, &mo, &r, NULL);
    p->out->edges_checked++;
    if (st == RP_ERR_LIMIT) {
        bool time = by_time && mo.max_states == by_time;
        if (!time)
            p->out->states_checked = p->o->max_states;
        p->stopped = time ? RP_PLAN_TIMEOUT : RP_PLAN_MAX_STATES;
        return -1;
    }
    if (st == RP_ERR_NONFINITE || st == RP_ERR_INVALID_ARG)
        return 0; /* a state beyond doubles, a step too small to certify: not an edge */
    if (st) {
        p->err = st;
        return -1;
    }
    p->out->states_checked += r.states_checked;
    return r.valid ? 1 : 0;
}

/* Checks state q (limits, then collisions); false with out's limits or
 * pair set when invalid (p->err on an error). */
static bool state_ok(planner *p, const double *q)
{
    size_t j = rp_model_limit_violation(p->m, q, 0);
    if (j != SIZE_MAX) {
        p->out->limits = true;
        p->out->limit_joint = j;
        return false;
    }
    rp_check_result r;
    memset(&r, 0, sizeof r);
    rp_status st = rp_model_check_joints(p->m, p->sc, p->base, q, &p->co, &r);
    p->out->states_checked++;
    if (st) {
        p->err = st;
        rp_check_result_free(&r);
        return false;
    }
    bool ok = !r.collision;
    if (!ok) {
        p->out->limits = false;
        p->out->pair = r.n_violations ? r.violations[0] : r.closest;
    }
    rp_check_result_free(&r);
    return ok;
}

static bool tree_init(tree *t, const planner *p)
{
    memset(t, 0, sizeof *t);
    t->nn = rp_nn_new(p->dof, p->wraps);
    return t->nn != NULL;
}

static void tree_free(tree *t)
{
    rp_nn_free(t->nn);
    free(t->raw);
    free(t->parent);
    free(t->root);
}

/* Adds raw configuration q with its parent (UINT32_MAX: a root); false
 * when out of memory. */
static bool tree_add(tree *t, size_t dof, const double *q, uint32_t parent, uint32_t root)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        double *raw = realloc(t->raw, cap * (dof ? dof : 1) * sizeof *raw);
        if (raw)
            t->raw = raw;
        uint32_t *par = realloc(t->parent, cap * sizeof *par);
        if (par)
            t->parent = par;
        uint32_t *rt = realloc(t->root, cap * sizeof *rt);
        if (rt)
            t->root = rt;
        if (!raw || !par || !rt)
            return false;
        t->cap = cap;
    }
    if (!rp_nn_add(t->nn, q))
        return false;
    memcpy(t->raw + t->n * dof, q, dof * sizeof *q);
    t->parent[t->n] = parent;
    t->root[t->n] = parent == UINT32_MAX ? (uint32_t)t->n : root;
    t->n++;
    return true;
}

enum { TRAPPED, ADVANCED, REACHED, ENDED };

/* Extends t from its node nearest `target` by at most the range towards
 * it; *at: the node added (or the one already at the target). */
static int extend(planner *p, tree *t, const double *target, size_t *at)
{
    size_t dof = p->dof;
    double d2, q[64], step[64];
    size_t nearest = rp_nn_nearest(t->nn, target, &d2);
    if (nearest == SIZE_MAX) {
        p->err = RP_ERR_NOMEM;
        return ENDED;
    }
    if (d2 == 0.0) {
        *at = nearest;
        return REACHED;
    }
    const double *from = t->raw + nearest * dof;
    double dist = sqrt(d2), scale = dist > p->range ? p->range / dist : 1.0;
    for (size_t d = 0; d < dof; d++) {
        double a = p->wraps[d] ? wrap_angle(from[d]) : from[d];
        double b = p->wraps[d] ? wrap_angle(target[d]) : target[d];
        step[d] = p->wraps[d] ? wrapped_diff(a, b) : b - a;
        /* The target itself when reached (a bounded joint's value exactly). */
        q[d] = scale == 1.0 && !p->wraps[d] ? target[d] : from[d] + step[d] * scale;
    }
    int ok = edge_ok(p, from, q, false);
    if (ok < 0)
        return ENDED;
    if (ok == 0)
        return TRAPPED;
    if (!tree_add(t, dof, q, (uint32_t)nearest, t->root[nearest])) {
        p->err = RP_ERR_NOMEM;
        return ENDED;
    }
    p->nodes++;
    *at = t->n - 1;
    return scale == 1.0 ? REACHED : ADVANCED;
}

/* The path root(a)..a of tree ta, then b..root(b) of tree tb (without b's
 * own configuration, which a's equals), wrapped joints unwrapped from the
 * start as given; written to *path (malloc'ed), *n points. */
static bool assemble(planner *p, const tree *ta, size_t a, const tree *tb, size_t b,
                     const double *start, double **path, size_t *n)
{
    size_t dof = p->dof, na = 0, nb = 0;
    for (size_t i = a; i != UINT32_MAX; i = ta->parent[i])
        na++;
    for (size_t i = tb->parent[b]; i != UINT32_MAX; i = tb->parent[i])
        nb++;
    size_t total = na + nb;
    double *out = malloc(total * (dof ? dof : 1) * sizeof *out);
    const double **nodes = malloc(total * sizeof *nodes);
    if (!out || !nodes) {
        free(out);
        free(nodes);
        return false;
    }
    size_t k = na;
    for (size_t i = a; i != UINT32_MAX; i = ta->parent[i])
        nodes[--k] = ta->raw + i * dof;
    k = na;
    for (size_t i = tb->parent[b]; i != UINT32_MAX; i = tb->parent[i])
        nodes[k++] = tb->raw + i * dof;
    for (size_t i = 0; i < total; i++) {
        for (size_t d = 0; d < dof; d++) {
            double v = nodes[i][d];
            if (p->wraps[d])
                v = i == 0 ? start[d]
                           : out[(i - 1) * dof + d] +
                                 wrapped_diff(wrap_angle(nodes[i - 1][d]), wrap_angle(v));
            out[i * dof + d] = v;
        }
    }
    if (dof && total)
        memcpy(out, start, dof * sizeof *out); /* the start as given */
    free(nodes);
    *path = out;
    *n = total;
    return true;
}

/* 1: every edge of path[0..n) passes, its waypoints included; 0: one
 * fails; -1: the plan ends. */
static int path_ok(planner *p, const double *path, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        int ok = edge_ok(p, path + i * p->dof, path + (i + 1) * p->dof, false);
        if (ok <= 0)
            return ok;
    }
    return 1;
}

/* Shortcuts, greedily: from each waypoint in turn (each a state checked
 * as it is: a tree node, or checked again by path_ok), the farthest later
 * one whose straight edge passes replaces everything between them (the first
 * try from the start is the whole path's straight line).  Failing edges
 * are cheap (a blocked edge is usually found at its first samples), and a
 * path from the trees holds few waypoints.  Stops early, keeping a valid
 * path, when the plan must end. */
static void simplify(planner *p, double *path, size_t *n)
{
    size_t dof = p->dof;
    for (size_t i = 0; i + 2 < *n; i++) {
        for (size_t j = *n - 1; j >= i + 2; j--) {
            int ok = edge_ok(p, path + i * dof, path + j * dof, true);
            if (ok < 0)
                return;
            if (ok) {
                memmove(path + (i + 1) * dof, path + j * dof, (*n - j) * dof * sizeof *path);
                *n -= j - i - 1;
                break;
            }
        }
    }
}

/* Splits each edge so that no joint moves more than max_step along a
 * piece, and checks the pieces: 1 done (*path replaced), 0 a piece failed,
 * -1 the plan ends or memory ran out. */
static int densify(planner *p, double **path, size_t *n, double max_step)
{
    size_t dof = p->dof, total = 1;
    const double *in = *path;
    for (size_t i = 0; i + 1 < *n; i++) {
        double mx = 0.0;
        for (size_t d = 0; d < dof; d++) {
            double g = fabs(in[(i + 1) * dof + d] - in[i * dof + d]);
            mx = g > mx ? g : mx;
        }
        double pieces = ceil(mx / max_step);
        if (!(pieces < 1e6)) {
            p->err = RP_ERR_LIMIT;
            return -1;
        }
        total += pieces < 1.0 ? 1 : (size_t)pieces;
    }
    double *out = malloc(total * (dof ? dof : 1) * sizeof *out);
    if (!out) {
        p->err = RP_ERR_NOMEM;
        return -1;
    }
    size_t k = 0;
    memcpy(out, in, dof * sizeof *out);
    k++;
    for (size_t i = 0; i + 1 < *n; i++) {
        const double *a = in + i * dof, *b = in + (i + 1) * dof;
        double mx = 0.0;
        for (size_t d = 0; d < dof; d++) {
            double g = fabs(b[d] - a[d]);
            mx = g > mx ? g : mx;
        }
        size_t m = (size_t)ceil(mx / max_step);
        m = m < 1 ? 1 : m;
        for (size_t s = 1; s < m; s++, k++)
            for (size_t d = 0; d < dof; d++)
                out[k * dof + d] = a[d] + (b[d] - a[d]) * ((double)s / (double)m);
        memcpy(out + k * dof, b, dof * sizeof *out);
        k++;
    }
    int ok = path_ok(p, out, k);
    if (ok <= 0) {
        free(out);
        return ok;
    }
    free(*path);
    *path = out;
    *n = k;
    return 1;
}

void rp_plan_opts_init(rp_plan_opts *o)
{
    memset(o, 0, sizeof *o);
    o->edges = RP_MOTION_CERTIFIED;
    o->simplify = true;
}

void rp_plan_result_free(rp_plan_result *r)
{
    if (!r)
        return;
    free(r->path);
    r->path = NULL;
    r->n_points = 0;
}

/* Bounds, wrapping and the default range from the model; a frozen joint
 * is sampled at the start's value only. */
static rp_status setup(planner *p, const double *start)
{
    size_t dof = p->dof;
    double extent = 0.0;
    for (size_t d = 0; d < dof; d++) {
        if (p->o->frozen && p->o->frozen[d]) {
            p->lo[d] = p->hi[d] = start[d];
            continue;
        }
        double lo, hi;
        bool has = rp_model_dof_limits(p->m, d, &lo, &hi);
        rp_joint_type ty = rp_model_dof_type(p->m, d);
        if (ty == RP_JOINT_CONTINUOUS || (!has && ty == RP_JOINT_REVOLUTE)) {
            p->wraps[d] = true;
            p->any_wrap = true;
            lo = -PI;
            hi = PI;
        } else if (!has || !isfinite(lo) || !isfinite(hi)) {
            return RP_ERR_INVALID_ARG; /* nowhere to sample a prismatic joint */
        }
        p->lo[d] = lo;
        p->hi[d] = hi;
        extent += (hi - lo) * (hi - lo);
    }
    p->range = p->o->range > 0 ? p->o->range : fmin(0.2 * sqrt(extent), 4.0);
    if (!(p->range > 0))
        p->range = 1.0;
    return RP_OK;
}

/* The search itself, once start and goals are known valid: trees ta (the
 * start's) and tb (the goals'). */
static void search(planner *p, tree *ta, tree *tb, const double *start)
{
    size_t dof = p->dof;
    double q[64];
    tree *t[2] = {ta, tb};
    for (int side = 0; !must_stop(p); side ^= 1) {
        p->out->iterations++;
        for (size_t d = 0; d < dof; d++)
            q[d] = p->lo[d] + (p->hi[d] - p->lo[d]) * rng_unit(&p->r);
        size_t a, b;
        int st = extend(p, t[side], q, &a);
        if (st == ENDED)
            return;
        if (st == TRAPPED)
            continue;
        /* The other tree connects towards the new configuration. */
        const double *target = t[side]->raw + a * dof;
        do
            st = extend(p, t[1 - side], target, &b);
        while (st == ADVANCED);
        if (st == ENDED)
            return;
        if (st != REACHED)
            continue;
        size_t sa = side == 0 ? a : b, gb = side == 0 ? b : a;
        double *path;
        size_t n;
        if (!assemble(p, ta, sa, tb, gb, start, &path, &n)) {
            p->err = RP_ERR_NOMEM;
            return;
        }
        /* Each edge of the path is a tree edge: from the start's tree as it
         * grew, from the goals' the other way (the same segment, which a
         * certified check proves whole; its junction with the start's tree
         * is the configuration the goals' tree reached exactly, a bounded
         * joint's value being set to the target's when reached).  With
         * wrapped joints the unwrapped values are sums of differences,
         * not the trees' own: then every edge is checked again as it is. */
        int ok = p->any_wrap ? path_ok(p, path, n) : 1;
        if (ok > 0 && p->o->simplify)
            simplify(p, path, &n);
        if (ok > 0 && p->o->max_step > 0 && p->stopped < 0 && !p->err)
            ok = densify(p, &path, &n, p->o->max_step);
        if (ok > 0 && !p->err &&
            (p->stopped < 0 || p->stopped == RP_PLAN_TIMEOUT || p->stopped == RP_PLAN_MAX_STATES)) {
            /* Found: a timeout during simplification keeps the valid path
             * it had (densification, when asked, finished). */
            if (p->o->max_step > 0 && p->stopped >= 0) {
                free(path);
                return;
            }
            p->stopped = RP_PLAN_SOLVED;
            p->out->path = path;
            p->out->n_points = n;
            p->out->goal = tb->root[gb];
            return;
        }
        free(path);
        if (ok < 0)
            return;
    }
}

rp_status rp_model_plan(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                        const double *start, const double *goals, size_t n_goals,
                        const rp_plan_opts *opts, rp_plan_result *out)
{
    memset(out, 0, sizeof *out);
    rp_plan_opts defaults;
    if (!opts) {
        rp_plan_opts_init(&defaults);
        opts = &defaults;
    }
    if (!m || !start || !goals || n_goals == 0 || !rp_model_is_kinematic(m) ||
        n_goals > UINT32_MAX / 2 || rp_model_dof(m) > 64)
        return RP_ERR_INVALID_ARG;
    if ((opts->edges != RP_MOTION_CERTIFIED && opts->edges != RP_MOTION_DISCRETE) ||
        !(opts->range >= 0) || !isfinite(opts->range) || !(opts->max_step >= 0) ||
        !isfinite(opts->max_step) || !(opts->timeout_ms >= 0) || !(opts->resolution >= 0) ||
        !isfinite(opts->resolution) || !(opts->tolerance >= 0) || !isfinite(opts->tolerance) ||
        (opts->has_margin && !isfinite(opts->margin)))
        return RP_ERR_INVALID_ARG;
    size_t dof = rp_model_dof(m);
    for (size_t d = 0; d < dof; d++)
        if (!isfinite(start[d]))
            return RP_ERR_NONFINITE;
    for (size_t g = 0; g < n_goals * dof; g++)
        if (!isfinite(goals[g]))
            return RP_ERR_NONFINITE;
    for (size_t g = 0; opts->frozen && g < n_goals; g++)
        for (size_t d = 0; d < dof; d++)
            if (opts->frozen[d] && goals[g * dof + d] != start[d])
                return RP_ERR_INVALID_ARG; /* a goal that moves a frozen joint */

    planner p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.sc = scene;
    p.base = base;
    p.o = opts;
    p.dof = dof;
    p.out = out;
    p.stopped = -1;
    clock_gettime(CLOCK_MONOTONIC, &p.t0);
    uint64_t seed = opts->seed;
    for (int k = 0; k < 4; k++)
        p.r.s[k] = splitmix(&seed);
    p.co.report = RP_REPORT_FIRST;
    p.co.has_margin = opts->has_margin;
    p.co.margin = opts->margin;
    p.co.work = opts->work;
    p.co.ignore = opts->ignore;
    p.co.n_ignore = opts->n_ignore;
    p.mo.mode = opts->edges;
    p.mo.resolution = opts->resolution;
    p.mo.tolerance = opts->tolerance;
    p.mo.has_margin = opts->has_margin;
    p.mo.margin = opts->margin;
    p.mo.fast_reject = opts->edges == RP_MOTION_CERTIFIED;
    p.mo.work = opts->work;
    p.mo.ignore = opts->ignore;
    p.mo.n_ignore = opts->n_ignore;
    size_t d1 = dof ? dof : 1;
    p.wraps = calloc(d1, sizeof *p.wraps);
    p.lo = malloc(d1 * sizeof *p.lo);
    p.hi = malloc(d1 * sizeof *p.hi);
    p.seg = malloc(2 * d1 * sizeof *p.seg);
    tree ta, tb;
    bool trees = false;
    rp_status st = RP_OK;
    if (!p.wraps || !p.lo || !p.hi || !p.seg) {
        st = RP_ERR_NOMEM;
        goto done;
    }
    if ((st = setup(&p, start)))
        goto done;
    if (!tree_init(&ta, &p)) {
        st = RP_ERR_NOMEM;
        goto done;
    }
    if (!tree_init(&tb, &p)) {
        tree_free(&ta);
        st = RP_ERR_NOMEM;
        goto done;
    }
    trees = true;
    if (!state_ok(&p, start)) {
        st = p.err;
        out->outcome = RP_PLAN_START_INVALID;
        goto done;
    }
    if (!tree_add(&ta, dof, start, UINT32_MAX, 0)) {
        st = RP_ERR_NOMEM;
        goto done;
    }
    /* Every valid goal is a root of the goal tree; the first invalid one is
     * reported when none is valid. */
    rp_plan_result first_bad = *out;
    size_t bad = SIZE_MAX;
    for (size_t g = 0; g < n_goals; g++) {
        if (must_stop(&p))
            break; /* (many goals, little time) */
        if (state_ok(&p, goals + g * dof)) {
            if (!tree_add(&tb, dof, goals + g * dof, UINT32_MAX, 0)) {
                st = RP_ERR_NOMEM;
                goto done;
            }
            tb.root[tb.n - 1] = (uint32_t)g; /* roots: the goal's index */
        } else if (p.err) {
            st = p.err;
            goto done;
        } else if (bad == SIZE_MAX) {
            bad = g;
            first_bad = *out;
        }
    }
    if (p.stopped >= 0) {
        out->outcome = (rp_plan_outcome)p.stopped;
        goto done;
    }
    if (tb.n == 0) {
        out->outcome = RP_PLAN_GOAL_INVALID;
        out->goal = bad;
        out->limits = first_bad.limits;
        out->limit_joint = first_bad.limit_joint;
        out->pair = first_bad.pair;
        goto done;
    }
    out->limits = false;
    search(&p, &ta, &tb, start);
    if (p.err) {
        st = p.err;
    } else {
        out->outcome = (rp_plan_outcome)(p.stopped >= 0 ? p.stopped : RP_PLAN_STOPPED);
    }
done:
    if (trees) {
        out->nodes = ta.n + tb.n;
        tree_free(&ta);
        tree_free(&tb);
    }
    out->ms = elapsed_ms(&p);
    free(p.wraps);
    free(p.lo);
    free(p.hi);
    free(p.seg);
    if (st) {
        rp_plan_result_free(out);
        out->outcome = RP_PLAN_STOPPED;
    }
    return st;
}
