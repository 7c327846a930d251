/* SPDX-License-Identifier: MIT */
/*
 * Motion checks: a path of joint vectors, each segment interpolated
 * linearly in joint space, checked by sampling (discrete) or proved clear
 * (certified, conservative advancement).
 *
 * ---- The motion bound behind certified checks ----
 *
 * Along a segment q(t) = q0 + t*dq, t in [0, 1], let v_f(t) be the value of
 * the moving joint that makes frame f (a mimic joint's value is affine in
 * its source's, so it too changes linearly, by dv_f = mult * dq[src]).
 * A point p fixed in frame f' moves in the world with velocity
 *
 *     dp/dt = sum over frames f on the chain from f' up to the root of
 *             dv_f * w_f x (p - o_f)   (revolute: w_f the unit axis, o_f a point on it)
 *             dv_f * u_f               (prismatic: u_f the unit axis)
 *
 * so |dp/dt| <= B = sum_f |dv_f| * rho_f, with rho_f >= |p - o_f| for a
 * revolute joint and rho_f = 1 for a prismatic one.  The axis of joint f
 * passes through the origin of frame f, and rotations of f and of joints
 * below it do not change |p - o_f| for a point of frame f itself; for a
 * point further down, |p - o_f| <= |o_c - o_f| + |p - o_c| (c the next
 * frame down the chain), where |o_c - o_f| is constant unless c is
 * prismatic, when it is at most its largest value at either end of the
 * segment (a norm of an affine function is convex).  So rho, and B, come
 * from one walk up the chain per shape and hold over the whole segment.
 * Only core points matter (the segment or centre of a capsule or sphere):
 * a signed distance is the distance between cores minus the radii, and
 * the distance between two point sets changes by at most the largest
 * displacement of their points (for a segment, the displacement of an
 * interior point is a convex combination of its ends').  Hence for a shape
 * and a (static) scene shape, |d(t') - d(t)| <= B |t' - t|; for two shapes
 * of the robot both move, but their distance only depends on the joints
 * below their lowest common frame, so the rate is the sum of both shapes'
 * B over those joints alone.
 *
 * Conservative advancement then runs per item (a shape against the scene,
 * a shape against the shapes it is checked with): at time t an item with
 * clearance c = d - margin >= tolerance is clear until t + (c -
 * tolerance/2) / B, where its clearance is still at least tolerance/2 > 0.
 * Items sit in a heap by that time; the earliest is re-evaluated at its
 * time, with the items due soon after it (CA_GROUP: early is sound), and
 * the segment is proved when every item's time passes 1.  An
 * item whose clearance is below the tolerance is the first contact: every
 * earlier state was proved clear (by at least tolerance/2), and at this
 * one some pair is within tolerance of the margin.  Each evaluation moves
 * its item by at least tolerance / (2B), so the check ends.  Floating-point
 * error in a distance (about 1e-16 of the coordinates' size) must stay well
 * below tolerance/2, which the default of 1e-5 m does for any scene within
 * kilometres of the origin.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "simd.h"

#define DEFAULT_RESOLUTION 0.01
#define DEFAULT_TOLERANCE 1e-5

/* Discrete states checked together: a batch's worth of the float filter's
 * lanes (check.c).  Measured on the arm of kin_bench: valid edges among
 * 100 shapes take 0.71x the time of a queue of four (the scene walks'
 * group), edges that end at a violation 1.5x (states past it are checked
 * for nothing), 0.7x over all. */
#define MOTION_QUEUE RP_LANES

/* q = a + t (b - a), exactly a at t = 0 and b at 1; when b - a overflows
 * (finite ends near the largest double), (1 - t) a + t b instead, which
 * cannot. */
static void lerp(const double *a, const double *b, double t, size_t n, double *q)
{
    for (size_t i = 0; i < n; i++) {
        double d = b[i] - a[i];
        q[i] = t == 1.0 ? b[i] : d - d == 0.0 ? a[i] + t * d : (1.0 - t) * a[i] + t * b[i];
    }
}

/* What both modes share. */
typedef struct motion {
    const rp_model *m;
    const rp_scene *sc;
    const rp_transform *base;
    const double *path;
    size_t n_points, dof;
    double margin;
    const rp_motion_opts *o;
    rp_motion_result *out;
    double *q;            /* dof: the state being checked */
    rp_transform *frames; /* frame_count */
    rp_shape *world;      /* n_links */
    /* Discrete mode: states queued to be checked together (MOTION_QUEUE
     * of them go to rp_model_check_first_many_),
     * in the order they were asked for; their joints (dof each) and frames
     * (frame_count each).  bad_seg, bad_idx, bad_n: the violating state a
     * flush found. */
    size_t queued;
    size_t q_seg[MOTION_QUEUE];
    uint64_t q_idx[MOTION_QUEUE], q_n[MOTION_QUEUE];
    double *q_joints;
    rp_transform *q_frames;
    size_t bad_seg;
    uint64_t bad_idx, bad_n;
} motion;

static const double *point(const motion *mo, size_t k)
{
    return mo->path + k * mo->dof;
}

/* Counts one more configuration against max_states. */
static bool count_state(motion *mo)
{
    if (mo->o->max_states && mo->out->states_checked >= mo->o->max_states)
        return false;
    mo->out->states_checked++;
    return true;
}

static void set_invalid(motion *mo, size_t seg, double t)
{
    mo->out->valid = false;
    mo->out->segment = seg;
    mo->out->t = t;
}

/* Waypoint limits: the first waypoint (in path order) with a joint out of
 * its limits makes the motion invalid there. */
/* Whether waypoint k is an end the caller knows valid (skip_ends). */
static bool is_known_end(const motion *mo, size_t k)
{
    return mo->o->skip_ends && (k == 0 || k == mo->n_points - 1);
}

static bool waypoints_in_limits(motion *mo)
{
    if (mo->o->ignore_limits)
        return true;
    for (size_t k = 0; k < mo->n_points; k++) {
        if (is_known_end(mo, k))
            continue;
        size_t j = rp_model_limit_violation(mo->m, point(mo, k), 0);
        if (j == SIZE_MAX)
            continue;
        bool last = k == mo->n_points - 1;
        set_invalid(mo, last ? k - 1 : k, last ? 1.0 : 0.0);
        mo->out->limits = true;
        mo->out->limit_joint = j;
        memcpy(mo->q, point(mo, k), mo->dof * sizeof *mo->q);
        return false;
    }
    return true;
}

/* ---- discrete ------------------------------------------------------------------ */

/* Checks the queued states together, then takes their results in queue
 * order as one-by-one checks would: each counts against max_states, and
 * the first that violates the margin ends the motion (pair in out->pair,
 * its joints in q); those after it were never asked for.  Results equal
 * lone checks' bit for bit (rp_model_check_first_many_). */
static rp_status discrete_flush(motion *mo, bool *bad)
{
    size_t n = mo->queued, failed = 0;
    mo->queued = 0;
    *bad = false;
    if (!n)
        return RP_OK;
    rp_check_result r[MOTION_QUEUE];
    /* The queued states' frames together (four at a time in AVX2 lanes,
     * the bits of one by one). */
    rp_kin_frames_n_(mo->m, mo->base, mo->q_joints, n, mo->q_frames);
    rp_status st = rp_model_check_first_many_(mo->m, mo->sc, mo->base, mo->q_frames, n, mo->margin,
                                              r, &failed);
    size_t valid = st ? failed : n; /* results before it are valid */
    if (rp_meter_.out) {
        /* A walk ran out of work units (rp_work): these verdicts are not
         * to be trusted, and the motion stops here. */
        for (size_t j = 0; j < valid; j++)
            rp_check_result_free(&r[j]);
        return RP_ERR_WORK;
    }
    for (size_t j = 0; j < valid; j++) {
        if (!*bad) {
            mo->out->states_checked++;
            if (r[j].collision) {
                *bad = true;
                mo->out->pair = r[j].violations[0];
                set_invalid(mo, mo->q_seg[j], (double)mo->q_idx[j] / (double)mo->q_n[j]);
                memcpy(mo->q, mo->q_joints + j * mo->dof, mo->dof * sizeof *mo->q);
                mo->bad_seg = mo->q_seg[j];
                mo->bad_idx = mo->q_idx[j];
                mo->bad_n = mo->q_n[j];
            }
        }
        rp_check_result_free(&r[j]);
    }
    if (*bad || !st)
        return RP_OK;
    mo->out->states_checked++; /* the state whose check failed, as alone */
    return st;
}

/* Asks for state idx/n of segment seg (FIRST report): queued, and checked
 * with the states queued before it once the queue is full.  *bad set when
 * a flush found a violation.  Past max_states the queue is flushed first:
 * a violation among the states before wins over RP_ERR_LIMIT. */
static rp_status discrete_state(motion *mo, size_t seg, uint64_t idx, uint64_t n, bool *bad)
{
    *bad = false;
    if (mo->o->max_states && mo->out->states_checked + mo->queued >= mo->o->max_states) {
        rp_status st = discrete_flush(mo, bad);
        return st || *bad ? st : RP_ERR_LIMIT;
    }
    size_t j = mo->queued++;
    double t = (double)idx / (double)n;
    double *q = mo->q_joints + j * mo->dof;
    lerp(point(mo, seg), point(mo, seg + 1), t, mo->dof, q);
    mo->q_seg[j] = seg;
    mo->q_idx[j] = idx;
    mo->q_n[j] = n;
    return mo->queued == MOTION_QUEUE ? discrete_flush(mo, bad) : RP_OK;
}

/* States a segment is cut into: ceil(max |dq| / resolution), at least 1. */
static uint64_t segment_steps(const motion *mo, size_t seg, double res)
{
    const double *a = point(mo, seg), *b = point(mo, seg + 1);
    double big = 0.0;
    if (mo->o->resolution_l2) {
        /* The Euclidean joint distance (OMPL's and VAMP's): hypot over the
         * joints, scaled so that no square overflows. */
        double scale = 0.0;
        for (size_t i = 0; i < mo->dof; i++)
            scale = fmax(scale, fabs(b[i] - a[i]));
        double sum = 0.0;
        for (size_t i = 0; i < mo->dof && scale > 0.0; i++) {
            double r = (b[i] - a[i]) / scale;
            sum += r * r;
        }
        big = scale * sqrt(sum);
    } else {
        for (size_t i = 0; i < mo->dof; i++)
            big = fmax(big, fabs(b[i] - a[i]));
    }
    double n = ceil(big / res);
    if (!(n >= 1.0))
        return 1;
    return n >= 9e18 ? UINT64_MAX / 2 : (uint64_t)n;
}

/* Interior states 1..n-1 of a segment, coarse to fine, as bisection
 * does: level L checks the points floor(j n / 2^L) for odd j, as long as
 * 2^L <= n (those points are at least one step apart, so each level's
 * points are new: the even j are the earlier levels'); then the integers
 * left in the gaps of the last level (at most one per gap), left to
 * right.  Each interior state comes exactly once.  For n above 2^32 (far
 * beyond any budget) the states go in order. */
static rp_status discrete_segment(motion *mo, size_t seg, uint64_t n, bool *bad)
{
    rp_status st = RP_OK;
    *bad = false;
    if (n > ((uint64_t)1 << 32)) {
        for (uint64_t k = 1; k < n && !st && !*bad; k++)
            st = discrete_state(mo, seg, k, n, bad);
        return st || *bad ? st : discrete_flush(mo, bad);
    }
    unsigned level = 0;
    while (((uint64_t)1 << (level + 1)) <= n) {
        level++;
        uint64_t parts = (uint64_t)1 << level;
        for (uint64_t j = 1; j < parts; j += 2) {
            st = discrete_state(mo, seg, j * n >> level, n, bad);
            if (st || *bad)
                return st;
        }
    }
    uint64_t parts = (uint64_t)1 << level;
    for (uint64_t j = 0; j < parts; j++)
        for (uint64_t k = (j * n >> level) + 1; k < ((j + 1) * n >> level); k++) {
            st = discrete_state(mo, seg, k, n, bad);
            if (st || *bad)
                return st;
        }
    return discrete_flush(mo, bad);
}

/* After a violation at (seg, idx) found out of order: the earliest one, by
 * a scan in path order of the states before it. */
static rp_status discrete_earliest(motion *mo, size_t seg, uint64_t idx, double res)
{
    rp_motion_result found = *mo->out;
    double *keep = malloc((mo->dof ? mo->dof : 1) * sizeof *keep);
    if (!keep)
        return RP_ERR_NOMEM;
    memcpy(keep, mo->q, mo->dof * sizeof *keep);
    rp_status st = RP_OK;
    bool bad = false;
    for (size_t s = 0; s <= seg && !bad && !st; s++) {
        uint64_t n = segment_steps(mo, s, res);
        uint64_t end = s == seg ? idx : n; /* waypoints before were checked */
        for (uint64_t k = 1; k < end && !bad && !st; k++)
            st = discrete_state(mo, s, k, n, &bad);
    }
    if (!bad && !st)
        st = discrete_flush(mo, &bad);
    if (!bad) {
        uint64_t checked = mo->out->states_checked;
        *mo->out = found;
        mo->out->states_checked = checked;
        memcpy(mo->q, keep, mo->dof * sizeof *keep);
    }
    free(keep);
    return st;
}

static rp_status check_discrete(motion *mo)
{
    double res = mo->o->resolution > 0 ? mo->o->resolution : DEFAULT_RESOLUTION;
    bool bad = false;
    size_t seg = 0;
    uint64_t idx = 0;
    /* Every waypoint first (as segment k, state 0; the last as the end of
     * the last segment). */
    for (size_t k = 0; k < mo->n_points && !bad; k++) {
        bool last = k == mo->n_points - 1;
        rp_status st = is_known_end(mo, k)
                           ? RP_OK
                           : discrete_state(mo, last ? k - 1 : k, last ? 1 : 0, 1, &bad);
        if (!st && !bad && last)
            st = discrete_flush(mo, &bad);
        if (st)
            return st;
    }
    if (bad) {
        /* As a state of the segment's own grid, for the earliest scan. */
        seg = mo->bad_seg;
        idx = mo->bad_idx == 1 ? segment_steps(mo, seg, res) : 0;
    }
    for (size_t s = 0; s + 1 < mo->n_points && !bad; s++) {
        uint64_t n = segment_steps(mo, s, res);
        rp_status st = discrete_segment(mo, s, n, &bad);
        if (st)
            return st;
        if (bad) {
            seg = s;
            idx = mo->bad_idx;
        }
    }
    if (bad && mo->o->earliest)
        return discrete_earliest(mo, seg, idx, res);
    return RP_OK;
}

/* ---- certified ------------------------------------------------------------------ */

/* An item of conservative advancement: shape i against the scene (kind 0)
 * or against the robot shapes it is checked with (kind 1), due at time t. */
typedef struct ca_item {
    double due;
    double from; /* when it was evaluated last */
    uint32_t shape;
    uint32_t kind;
} ca_item;

/* An item due within this fraction of its last advance after the state
 * being evaluated is evaluated there too, early (which is sound: it is
 * proved clear up to its due time, past that state, and the new advance
 * starts there).  States, each a forward kinematics and the placement of
 * the shapes it needs, are then shared by several items: the certified
 * edges of the arm7 planning benchmark (bench/plan_bench.c) took 3930
 * states per solve one item per state, 426 with this (595 with 0.25; with
 * 1 or more every item is evaluated at nearly every state, 3x slower). */
#define CA_GROUP 0.5

typedef struct certifier {
    motion *mo;
    size_t n; /* shapes */
    double tol;
    double *rate;    /* per shape: B over the whole chain */
    double *cum;     /* per shape: B over frames of depth <= d, (maxdepth+1) each */
    size_t stride;   /* maxdepth + 1 */
    double *dv;      /* per frame: |change of its joint value| over the segment */
    uint64_t *stamp; /* per shape: state at which world[] was last placed */
    uint64_t state;  /* current state number */
    /* Shape i's self partners: pj[pstart[i] .. pstart[i + 1]), the shapes
     * j > i it is checked with, and pcd the depth of their lowest common
     * frame (the joints above it move both alike). */
    uint32_t *pstart, *pj, *pcd;
    ca_item *heap;
    size_t heap_n;
    double t; /* current time in the segment */
    size_t seg;
} certifier;

static void heap_push(certifier *c, ca_item it)
{
    size_t i = c->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (c->heap[p].due <= it.due)
            break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = it;
}

static ca_item heap_pop(certifier *c)
{
    ca_item top = c->heap[0], last = c->heap[--c->heap_n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, s = i;
        double sd = last.due;
        if (l < c->heap_n && c->heap[l].due < sd)
            s = l, sd = c->heap[l].due;
        if (r < c->heap_n && c->heap[r].due < sd)
            s = r;
        if (s == i)
            break;
        c->heap[i] = c->heap[s];
        i = s;
    }
    if (c->heap_n)
        c->heap[i] = last;
    return top;
}

/* Largest |p| over the core points of a shape (its own frame). */
static double core_reach(const rp_shape *s)
{
    rp_vec3 p[8];
    double r;
    int n = rp_link_points_(s, p, &r);
    double best = 0.0;
    for (int k = 0; k < n; k++)
        best = fmax(best, sqrt(p[k].x * p[k].x + p[k].y * p[k].y + p[k].z * p[k].z));
    return best;
}

/* |pre.t + pre.r * axis * v| for the frame's joint: where its origin sits in
 * the parent frame; for a prismatic joint the largest over the values at
 * both ends of the segment. */
static double origin_reach(const rp_kin_joint *j, double v0, double v1)
{
    const rp_transform *p = &j->pre;
    double best = 0.0;
    int ends = j->type == RP_JOINT_PRISMATIC ? 2 : 1;
    for (int e = 0; e < ends; e++) {
        double v = j->type == RP_JOINT_PRISMATIC ? (e ? v1 : v0) : 0.0;
        double x =
            p->t.x + (p->r[0][0] * j->axis.x + p->r[0][1] * j->axis.y + p->r[0][2] * j->axis.z) * v;
        double y =
            p->t.y + (p->r[1][0] * j->axis.x + p->r[1][1] * j->axis.y + p->r[1][2] * j->axis.z) * v;
        double z =
            p->t.z + (p->r[2][0] * j->axis.x + p->r[2][1] * j->axis.y + p->r[2][2] * j->axis.z) * v;
        best = fmax(best, sqrt(x * x + y * y + z * z));
    }
    return best;
}

/* The rates of every shape over segment seg (see the top).  False when a
 * rate is not finite (a joint change or a reach beyond the largest double):
 * such a segment cannot be certified. */
static bool segment_rates(certifier *c)
{
    const rp_model *m = c->mo->m;
    const rp_kin *k = m->kin;
    const double *a = point(c->mo, c->seg), *b = point(c->mo, c->seg + 1);
    for (size_t f = 0; f < m->frame_count; f++) {
        const rp_kin_joint *j = &k->moving[f];
        c->dv[f] = fabs(j->mult * (b[j->src] - a[j->src]));
    }
    for (size_t i = 0; i < c->n; i++) {
        double *cum = &c->cum[i * c->stride];
        for (size_t d = 0; d < c->stride; d++)
            cum[d] = 0.0;
        double rho = core_reach(&m->links[i].shape), total = 0.0;
        for (int f = m->links[i].frame; f >= 0; f = k->moving[f].parent) {
            const rp_kin_joint *j = &k->moving[f];
            double part =
                c->dv[f] == 0.0 ? 0.0 : c->dv[f] * (j->type == RP_JOINT_PRISMATIC ? 1.0 : rho);
            cum[j->depth] = part; /* per depth for now; prefix sums below */
            total += part;
            double v0 = j->mult * a[j->src] + j->off, v1 = j->mult * b[j->src] + j->off;
            rho += origin_reach(j, v0, v1);
        }
        for (size_t d = 1; d < c->stride; d++)
            cum[d] += cum[d - 1];
        c->rate[i] = total;
        if (!isfinite(total))
            return false;
    }
    return true;
}

/* Depth of the lowest frame two frames share (0: only the base). */
static uint32_t common_depth(const rp_kin *k, int f, int g)
{
    while (f != g) {
        uint32_t df = f < 0 ? 0 : k->moving[f].depth, dg = g < 0 ? 0 : k->moving[g].depth;
        if (df >= dg)
            f = k->moving[f].parent;
        else
            g = k->moving[g].parent;
    }
    return f < 0 ? 0 : k->moving[f].depth;
}

/* Places the state at time t (FK once per state) and counts it. */
static bool goto_time(certifier *c, double t)
{
    motion *mo = c->mo;
    if (c->state && t == c->t)
        return true;
    if (!count_state(mo))
        return false;
    c->t = t;
    c->state++;
    lerp(point(mo, c->seg), point(mo, c->seg + 1), t, mo->dof, mo->q);
    rp_kin_frames_(mo->m, mo->base, mo->q, mo->frames);
    return true;
}

/* World shape i at the current state (placed on first use); NULL when a
 * coordinate left the range of doubles. */
static const rp_shape *shape_now(certifier *c, size_t i)
{
    if (c->stamp[i] != c->state) {
        const rp_link *l = &c->mo->m->links[i];
        static const rp_transform identity = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {0, 0, 0}};
        const rp_transform *fr = l->frame >= 0 ? &c->mo->frames[l->frame]
                                 : c->mo->base ? c->mo->base
                                               : &identity;
        rp_shape *w = &c->mo->world[i];
        rp_place_shape_(fr, &l->shape, w);
        if (rp_link_probe_(w) != 0.0)
            return NULL;
        c->stamp[i] = c->state;
    }
    return &c->mo->world[i];
}

/* Evaluates an item at the current time: its next due time, or a contact
 * (*hit, with the pair in out->pair).  RP_ERR_NOMEM. */
static rp_status evaluate(certifier *c, ca_item *it, bool *hit)
{
    motion *mo = c->mo;
    const rp_model *m = mo->m;
    size_t i = it->shape;
    double half = c->tol / 2, due = INFINITY;
    const rp_shape *w = shape_now(c, i);
    if (!w)
        return RP_ERR_NONFINITE;
    if (it->kind == 0) {
        /* Only a shape closer than what the rest of the segment could use
         * matters: the bound prunes the tree. */
        double rate = c->rate[i];
        double d = mo->margin + c->tol + rate * (1.0 - c->t);
        size_t e = 0;
        bool found;
        size_t buf[32], *ex = buf;
        size_t want = rp_allowed_scene_want_(m, mo->sc, i);
        if (want > 32 && !(ex = malloc(want * sizeof *ex)))
            return RP_ERR_NOMEM;
        size_t nx = rp_allowed_scene_resolve_(m, mo->sc, i, ex, want);
        rp_scene_nearest_excl_(mo->sc, w, ex, nx, &d, &e, &found);
        if (ex != buf)
            free(ex);
        if (rp_meter_.out)
            return RP_ERR_WORK; /* the walk was cut (rp_work): no proof here */
        if (found) {
            double clear = d - mo->margin;
            if (!(clear >= c->tol)) {
                rp_check_pair p = {i, RP_PAIR_SCENE, e, d};
                mo->out->pair = p;
                *hit = true;
                return RP_OK;
            }
            due = rate > 0 ? c->t + (clear - half) / rate : INFINITY;
        }
    } else {
        for (uint32_t k = c->pstart[i]; k < c->pstart[i + 1]; k++) {
            size_t j = c->pj[k];
            const rp_shape *wj = shape_now(c, j);
            if (!wj)
                return RP_ERR_NONFINITE;
            double d = rp_shape_signed_distance(w, wj);
            double clear = d - mo->margin;
            if (!(clear >= c->tol)) {
                rp_check_pair p = {i, RP_PAIR_SELF, j, d};
                mo->out->pair = p;
                *hit = true;
                return RP_OK;
            }
            uint32_t cd = c->pcd[k];
            double rate = (c->rate[i] - c->cum[i * c->stride + cd]) +
                          (c->rate[j] - c->cum[j * c->stride + cd]);
            if (rate > 0)
                due = fmin(due, c->t + (clear - half) / rate);
        }
    }
    *hit = false;
    it->due = due;
    it->from = c->t;
    return RP_OK;
}

static rp_status certify_segment(certifier *c, bool *bad)
{
    motion *mo = c->mo;
    if (!segment_rates(c))
        return RP_ERR_NONFINITE;
    c->heap_n = 0;
    c->state = 0;
    c->t = 0.0;
    for (size_t i = 0; i < c->n; i++)
        c->stamp[i] = UINT64_MAX;
    if (!goto_time(c, 0.0))
        return RP_ERR_LIMIT;
    for (size_t i = 0; i < c->n; i++)
        for (uint32_t kind = 0; kind < 2; kind++) {
            if ((kind == 0 && !mo->sc) || (kind == 1 && !mo->m->skip))
                continue;
            ca_item it = {0.0, 0.0, (uint32_t)i, kind};
            rp_status st = evaluate(c, &it, bad);
            if (st)
                return st;
            if (*bad) {
                set_invalid(mo, c->seg, 0.0);
                return RP_OK;
            }
            if (it.due < 1.0)
                heap_push(c, it);
        }
    /* Items evaluated at the current state wait here, so that none is
     * evaluated twice at one state. */
    size_t n_done = 0;
    ca_item *done = c->heap + c->n * 2;
    while (c->heap_n) {
        ca_item it = heap_pop(c);
        if (!goto_time(c, it.due))
            return RP_ERR_LIMIT;
        double now = c->t;
        for (;;) {
            rp_status st = evaluate(c, &it, bad);
            if (st)
                return st;
            if (*bad) {
                set_invalid(mo, c->seg, c->t);
                return RP_OK;
            }
            /* A step below the precision of t (a shape moving more than
             * about 2^52 tolerances per segment) would never end: not
             * certifiable. */
            if (!(it.due > now))
                return RP_ERR_INVALID_ARG;
            if (it.due < 1.0)
                done[n_done++] = it;
            if (!c->heap_n || c->heap[0].due - now > CA_GROUP * (c->heap[0].due - c->heap[0].from))
                break;
            it = heap_pop(c);
        }
        while (n_done)
            heap_push(c, done[--n_done]);
    }
    return RP_OK;
}

/* CERTIFIED with fast_reject: a planner that only needs a verdict gets
 * a blocked motion rejected at the cost of a few samples.  The waypoints,
 * then every segment's midpoint, are checked as in discrete mode; the first
 * state found in collision is reported (a state that violates the margin,
 * not necessarily the first contact).  *bad says whether one was found. */
static rp_status certified_prescreen(motion *mo, bool *bad)
{
    *bad = false;
    for (size_t k = 0; k < mo->n_points; k++) {
        if (is_known_end(mo, k))
            continue;
        bool last = k == mo->n_points - 1;
        rp_status st = discrete_state(mo, last ? k - 1 : k, last ? 1 : 0, 1, bad);
        if (st || *bad)
            return st;
    }
    for (size_t s = 0; s + 1 < mo->n_points; s++) {
        rp_status st = discrete_state(mo, s, 1, 2, bad);
        if (st || *bad)
            return st;
    }
    return discrete_flush(mo, bad);
}

static rp_status check_certified(motion *mo)
{
    const rp_model *m = mo->m;
    if (mo->o->fast_reject) {
        bool bad;
        rp_status st = certified_prescreen(mo, &bad);
        if (st || bad)
            return st;
    }
    certifier c;
    memset(&c, 0, sizeof c);
    c.mo = mo;
    c.n = m->n_links;
    c.tol = mo->o->tolerance > 0 ? mo->o->tolerance : DEFAULT_TOLERANCE;
    uint32_t maxdepth = 0;
    for (size_t f = 0; f < m->frame_count; f++)
        if (m->kin->moving[f].depth > maxdepth)
            maxdepth = m->kin->moving[f].depth;
    c.stride = (size_t)maxdepth + 1;
    size_t n1 = c.n ? c.n : 1;
    c.rate = malloc(n1 * sizeof *c.rate);
    c.cum = malloc(n1 * c.stride * sizeof *c.cum);
    c.dv = malloc((m->frame_count ? m->frame_count : 1) * sizeof *c.dv);
    c.stamp = malloc(n1 * sizeof *c.stamp);
    c.heap = malloc(4 * n1 * sizeof *c.heap); /* the heap, then certify_segment's done */
    size_t pairs = 0;
    for (size_t i = 0; i < c.n; i++)
        for (size_t j = i + 1; j < c.n; j++)
            pairs += rp_model_self_pair_(m, i, j);
    c.pstart = malloc((c.n + 1) * sizeof *c.pstart);
    c.pj = malloc((pairs ? pairs : 1) * sizeof *c.pj);
    c.pcd = malloc((pairs ? pairs : 1) * sizeof *c.pcd);
    rp_status st = RP_ERR_NOMEM;
    if (c.rate && c.cum && c.dv && c.stamp && c.heap && c.pstart && c.pj && c.pcd) {
        uint32_t p = 0;
        for (size_t i = 0; i < c.n; i++) {
            c.pstart[i] = p;
            for (size_t j = i + 1; j < c.n; j++)
                if (rp_model_self_pair_(m, i, j)) {
                    c.pj[p] = (uint32_t)j;
                    c.pcd[p++] = common_depth(m->kin, m->links[i].frame, m->links[j].frame);
                }
        }
        c.pstart[c.n] = p;
        st = RP_OK;
        bool bad = false;
        for (c.seg = 0; c.seg + 1 < mo->n_points && !bad && !st; c.seg++)
            st = certify_segment(&c, &bad);
    }
    free(c.rate);
    free(c.cum);
    free(c.dv);
    free(c.stamp);
    free(c.heap);
    free(c.pstart);
    free(c.pj);
    free(c.pcd);
    return st;
}

/* ---- entry point ------------------------------------------------------------------ */

static rp_status motion_run(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                            const double *path, size_t n_points, const rp_motion_opts *opts,
                            rp_motion_result *out, double *first_joints);

rp_status rp_model_check_motion(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                                const double *path, size_t n_points, const rp_motion_opts *opts,
                                rp_motion_result *out, double *first_joints)
{
    rp_work *work = opts ? opts->work : NULL;
    rp_status st =
        rp_ignore_open_(scene, opts ? opts->ignore : NULL, opts ? opts->n_ignore : 0, NULL);
    if (st) {
        if (out)
            memset(out, 0, sizeof *out);
        return st;
    }
    rp_meter_open_(work);
    st = rp_meter_close_(work, motion_run(m, scene, base, path, n_points, opts, out, first_joints));
    rp_ignore_close_();
    if (st == RP_ERR_WORK && out) {
        /* A verdict from cut walks means nothing: keep only the count. */
        uint64_t states = out->states_checked;
        memset(out, 0, sizeof *out);
        out->states_checked = states;
    }
    return st;
}

static rp_status motion_run(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                            const double *path, size_t n_points, const rp_motion_opts *opts,
                            rp_motion_result *out, double *first_joints)
{
    if (!out)
        return RP_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->valid = true;
    rp_motion_opts defaults;
    memset(&defaults, 0, sizeof defaults);
    if (!opts)
        opts = &defaults;
    if (!m || !m->kin || n_points < 2 || !path ||
        (opts->mode != RP_MOTION_DISCRETE && opts->mode != RP_MOTION_CERTIFIED) ||
        !(opts->resolution >= 0 && opts->resolution <= DBL_MAX) ||
        !(opts->tolerance >= 0 && opts->tolerance <= DBL_MAX) || n_points > SIZE_MAX / 8)
        return RP_ERR_INVALID_ARG;
    double margin = opts->has_margin ? opts->margin : m->safety_margin;
    if (isnan(margin))
        return RP_ERR_INVALID_ARG;
    size_t dof = m->kin->dof;
    double probe = 0.0;
    for (size_t i = 0; i < n_points * dof; i++)
        probe += path[i] - path[i];
    if (probe != 0.0)
        return RP_ERR_NONFINITE;

    motion mo;
    memset(&mo, 0, sizeof mo);
    mo.m = m;
    mo.sc = scene;
    mo.base = base;
    mo.path = path;
    mo.n_points = n_points;
    mo.dof = dof;
    mo.margin = margin;
    mo.o = opts;
    mo.out = out;
    mo.q = malloc((dof ? dof : 1) * sizeof *mo.q);
    mo.frames = malloc((m->frame_count ? m->frame_count : 1) * sizeof *mo.frames);
    mo.world = malloc((m->n_links ? m->n_links : 1) * sizeof *mo.world);
    mo.q_joints = malloc(MOTION_QUEUE * (dof ? dof : 1) * sizeof *mo.q_joints);
    mo.q_frames =
        malloc(MOTION_QUEUE * (m->frame_count ? m->frame_count : 1) * sizeof *mo.q_frames);
    rp_status st = RP_ERR_NOMEM;
    if (mo.q && mo.frames && mo.world && mo.q_joints && mo.q_frames) {
        st = RP_OK;
        if (waypoints_in_limits(&mo))
            st = opts->mode == RP_MOTION_DISCRETE ? check_discrete(&mo) : check_certified(&mo);
        if (st == RP_OK && !out->valid && first_joints)
            memcpy(first_joints, mo.q, dof * sizeof *first_joints);
    }
    free(mo.q);
    free(mo.frames);
    free(mo.world);
    free(mo.q_joints);
    free(mo.q_frames);
    return st;
}

uint64_t rp_motion_states_bound(const rp_model *m, const double *path, size_t n_points,
                                const rp_motion_opts *opts)
{
    if (!m || !m->kin || !path || n_points < 2 || !opts)
        return 0;
    if (opts->mode != RP_MOTION_DISCRETE)
        return opts->max_states ? opts->max_states : UINT64_MAX;
    motion mo;
    memset(&mo, 0, sizeof mo);
    mo.path = path;
    mo.n_points = n_points;
    mo.dof = m->kin->dof;
    mo.o = opts;
    double res = opts->resolution > 0 ? opts->resolution : DEFAULT_RESOLUTION;
    /* Every waypoint, then each segment's interior states; the earliest
     * scan may check the states before a violation a second time. */
    uint64_t states = n_points - (opts->skip_ends ? 2 : 0);
    for (size_t i = 0; i + mo.dof < n_points * mo.dof; i++)
        if (!isfinite(path[i + mo.dof] - path[i]))
            return 0; /* refused as not finite before any state */
    for (size_t s = 0; s + 1 < n_points; s++) {
        uint64_t steps = segment_steps(&mo, s, res);
        states = states > UINT64_MAX - steps ? UINT64_MAX : states + steps - 1;
    }
    if (opts->earliest)
        states = states > UINT64_MAX / 2 ? UINT64_MAX : 2 * states;
    return states;
}
