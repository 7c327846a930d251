/* SPDX-License-Identifier: MIT */
/*
 * kin_bench — joint-space checks of a 7-dof arm in process: forward
 * kinematics, FK + check (report first / closest), and motion checks
 * (discrete at 0.01 rad vs certified) on planner-like edges, against a
 * ~100-shape tabletop and a 10,000-shape random scene.  The robot, the
 * scenes, the configurations and the edges are described in kin_common.h.
 *
 * Per-configuration figures.  --configs random in-limit configurations
 * (default 10,000, fixed seed).  A pass calls the function on every
 * configuration in order; ns/config is the median over --passes passes
 * (default 7) of pass time / configurations, after one untimed warm-up
 * pass; min and max are the fastest and slowest passes.  Cases:
 *   frames       rp_kin_frames_ (internal, model_int.h): the 9 frame poses a
 *                check needs, nothing else; "batches of 32": rp_kin_frames_n_,
 *                32 configurations a call (check.batch's forward kinematics);
 *   fk           rp_model_fk: input check + frames + the pose of all 12
 *                tree links (what model.fk returns);
 *   place        rp_model_check_joints, no scene, self collision off: FK +
 *                moving the 57 shapes into the world, no pair tested;
 *   self         the same with self collision on (the SRDF's model): FK +
 *                place + the self pairs;
 *   SCENE first / closest   rp_model_check_joints against the scene with
 *                report FIRST / CLOSEST, self collision on;
 *   SCENE first -self       the same on the model without self collision;
 *   SCENE first, batches of 32  the same through rp_model_check_joints_batch,
 *                32 configurations a call (several share a walk of the scene);
 *   random first (clear)    report FIRST on the configurations that are
 *                clear in scene random only (nothing stops the scan early);
 *   sketch ...   the same verdicts from a frame-level broadphase written
 *                here, in the bench, to estimate what a change to
 *                rp_model_check would gain (see "sketch" below; it is not
 *                the library).
 * coll% is the share of configurations in collision.  The three
 * collision-free shares (no scene, tabletop, random; self collision on)
 * follow the table.
 *
 * Motion figures.  --edges edges per scene (default 1000; kin_common.h: a
 * clear start, 0.5-1 rad max-norm long), each checked by
 * rp_model_check_motion in discrete mode (resolution 0.01, coarse to
 * fine, first hit) and in certified mode (tolerance 1e-5 m, the default).
 * Every edge is timed on its own in each of --motion-passes passes
 * (default 5; the first pass over all edges is an untimed warm-up); an
 * edge's time is its median over the passes.  Rows split the edges by the
 * discrete verdict (valid / invalid) and give, per mode, the mean µs per
 * edge and the mean states per edge (discrete: configurations checked;
 * certified: FK evaluations), and cert/disc, the ratio of the summed times
 * on the same edges (with the median of the per-edge ratios in brackets);
 * fast_us and fast/disc are certified with fast_reject (check.motion's
 * earliest:false), which samples waypoints and midpoints first.
 * "disagree" counts edges on which the modes differ (certified is
 * conservative: it may refuse an edge whose samples at 0.01 are all clear,
 * and it finds collisions between samples).
 *
 * Usage: kin_bench [--data DIR] [--configs N] [--passes N] [--edges N]
 *                  [--motion-passes N] [--radius R] [--bubble B] [--only S]
 *                  [--no-motion] [--quick]
 *   --data: where arm7.urdf/.srdf are (default: the source tree's tests/data)
 *   --radius: R of scene "random" (default KB_RANDOM_RADIUS), for tuning
 *   --bubble: radius of scene "random"'s clear ball (default KB_RANDOM_BUBBLE)
 *   --only S: only the per-configuration rows whose name contains S;
 *             --only =S: only the row named exactly S (skips the rest)
 *   --no-motion: skip the motion part
 *   --quick: 1000 configurations, 3 passes, 100 edges, 2 motion passes
 *
 * Profiling one row, instructions per configuration (no timer noise):
 *   valgrind --tool=callgrind --toggle-collect='run_pass*' \
 *     kin_bench --configs 1000 --passes 1 --only '=tabletop first'
 * collects the warm-up and the one pass (2000 checks); sketch rows run in
 * 'sketch_pass*' (one pass, 1000 checks).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin_common.h"
#include "scene/model_int.h" /* rp_kin_frames_ */

#ifndef KB_DATA_DIR
#define KB_DATA_DIR "tests/data"
#endif

static volatile double g_sink;

typedef enum kcase {
    K_FRAMES,
    K_FRAMES_N, /* rp_kin_frames_n_, BATCH_N configurations a call */
    K_FK,
    K_CHECK, /* rp_model_check_joints */
    K_BATCH  /* rp_model_check_joints_batch, BATCH_N configurations a call */
} kcase;

/* Configurations per rp_model_check_joints_batch call in the batch rows (as
 * check.batch passes them). */
#define BATCH_N 32

typedef struct timing {
    double med, min, max; /* ns per configuration */
    double coll;          /* share in collision */
} timing;

/* --only: run the per-configuration rows whose name contains this (or, with
 * a leading '=', is exactly the rest). */
static const char *g_only;

static bool selected(const char *name)
{
    if (!g_only)
        return true;
    return g_only[0] == '=' ? strcmp(name, g_only + 1) == 0 : strstr(name, g_only) != NULL;
}

/* One pass over the configurations; returns ns per configuration.  (Out of
 * line for valgrind --toggle-collect=run_pass.) */
__attribute__((noinline)) static double run_pass(kcase kc, const rp_model *m, const rp_scene *sc,
                                                 rp_report rep, const double *q, size_t n,
                                                 size_t dof, size_t *collisions)
{
    rp_transform frames[RP_STACK_FRAMES], poses[RP_STACK_FRAMES];
    static rp_transform batch_frames[BATCH_N * RP_STACK_FRAMES];
    rp_check_opts opts = {rep, false, 0.0, NULL, NULL, 0};
    size_t coll = 0;
    double sink = 0.0;
    double t0 = kb_now_ns();
    for (size_t k = 0; k < n; k++) {
        const double *qk = &q[k * dof];
        if (kc == K_FRAMES) {
            rp_kin_frames_(m, NULL, qk, frames);
            sink += frames[0].t.x;
        } else if (kc == K_FRAMES_N) {
            size_t nb = n - k < BATCH_N ? n - k : BATCH_N;
            rp_kin_frames_n_(m, NULL, qk, nb, batch_frames);
            sink += batch_frames[0].t.x;
            k += nb - 1;
        } else if (kc == K_FK) {
            if (rp_model_fk(m, NULL, qk, poses) != RP_OK)
                kb_die("rp_model_fk failed");
            sink += poses[0].t.x;
        } else if (kc == K_BATCH) {
            rp_check_result r[BATCH_N];
            size_t nb = n - k < BATCH_N ? n - k : BATCH_N;
            if (rp_model_check_joints_batch(m, sc, NULL, qk, nb, &opts, r, NULL) != RP_OK)
                kb_die("rp_model_check_joints_batch failed");
            for (size_t j = 0; j < nb; j++) {
                coll += r[j].collision;
                rp_check_result_free(&r[j]);
            }
            k += nb - 1;
        } else {
            rp_check_result r;
            if (rp_model_check_joints(m, sc, NULL, qk, &opts, &r) != RP_OK)
                kb_die("rp_model_check_joints failed");
            coll += r.collision;
            rp_check_result_free(&r);
        }
    }
    double dt = kb_now_ns() - t0;
    g_sink += sink;
    *collisions = coll;
    return dt / (double)n;
}

static timing time_case(kcase kc, const rp_model *m, const rp_scene *sc, rp_report rep,
                        const double *q, size_t n, size_t dof, int passes)
{
    size_t coll = 0;
    run_pass(kc, m, sc, rep, q, n, dof, &coll); /* warm-up */
    double *t = kb_alloc((size_t)passes, sizeof *t);
    for (int p = 0; p < passes; p++)
        t[p] = run_pass(kc, m, sc, rep, q, n, dof, &coll);
    timing r;
    r.med = kb_median(t, (size_t)passes); /* sorts t */
    r.min = t[0];
    r.max = t[passes - 1];
    r.coll = (double)coll / (double)n;
    free(t);
    return r;
}

static void print_row(const char *name, timing t, bool has_coll)
{
    printf("  %-32s %9.0f %9.0f %9.0f", name, t.med, t.min, t.max);
    if (has_coll)
        printf(" %6.1f", 100.0 * t.coll);
    printf("\n");
}

/* ---- sketch: a frame-level broadphase (bench-only, not the library) ----------------- */
/*
 * What rp_model_check (src/scene/check.c) could do for report FIRST, to
 * estimate the gain before anyone changes the library.  Every frame (and the
 * base) gets a bounding sphere of its shapes, computed once.  A check places
 * the 10 sphere centres, then:
 *  - scene, variant a ("keeps order"): frame by frame from the base, as the
 *    library goes, one tree query per frame with the bound (rp_scene_below_,
 *    stopping at the first shape within the margin); a frame with nothing
 *    near has its shapes skipped, the others are placed and queried shape
 *    by shape as now, so the pair FIRST reports is the library's;
 *  - scene, variant b ("fast"): frames from the tip down to the base
 *    (distal links are the ones that usually collide, so FIRST stops
 *    sooner), the bound's query collects the scene shapes within the
 *    margin of it (up to 64), and a frame's shapes are tested against those
 *    candidates instead of querying the tree (past 64, each shape queries
 *    the tree itself); FIRST may then report another pair;
 *  - self: frame pair by frame pair; only pairs whose bounds come within the
 *    margin look at their shapes: each shape of the first frame against the
 *    second frame's bound, and the shapes within the margin of it against
 *    the second frame's shapes (the model's skip matrix as is).
 * Shapes are placed by an inline transform, and only for frames that need
 * them.  The verdict (collision or not) is compared with
 * rp_model_check_joints on every configuration; a difference stops the
 * program.
 */
#define SK_FRAMES 64
#define SK_SHAPES 256

typedef struct sketch {
    const rp_model *m;
    size_t nf, ns;             /* frames + 1 (slot 0: the base), shapes */
    rp_shape local[SK_SHAPES]; /* by frame: first[f] .. first[f+1] */
    size_t index[SK_SHAPES];   /* model index of local[k] */
    size_t first[SK_FRAMES + 1];
    rp_vec3 centre[SK_FRAMES]; /* bound centre, frame coordinates */
    double radius[SK_FRAMES];
    bool pairs[SK_FRAMES][SK_FRAMES]; /* some shape pair of the two frames is checked */
    bool fast;                        /* variant b (see above) */
} sketch;

static void core_ends(const rp_shape *s, rp_vec3 *a, rp_vec3 *b, double *r)
{
    if (s->kind == RP_SHAPE_SPHERE) {
        *a = *b = s->sphere.center;
        *r = s->sphere.radius;
    } else {
        *a = s->capsule.a;
        *b = s->capsule.b;
        *r = s->capsule.radius;
    }
}

static double vdist(rp_vec3 a, rp_vec3 b)
{
    double x = a.x - b.x, y = a.y - b.y, z = a.z - b.z;
    return sqrt(x * x + y * y + z * z);
}

static void sketch_init(sketch *s, const rp_model *m)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    s->nf = rp_model_frame_count(m) + 1;
    s->ns = rp_model_link_count(m);
    if (s->nf > SK_FRAMES || s->ns > SK_SHAPES)
        kb_die("sketch: model too large");
    size_t k = 0;
    for (size_t f = 0; f < s->nf; f++) {
        s->first[f] = k;
        rp_vec3 sum = {0, 0, 0};
        size_t cnt = 0;
        for (size_t i = 0; i < s->ns; i++) {
            const rp_link *l = rp_model_link_at(m, i);
            if ((size_t)(l->frame + 1) != f)
                continue;
            s->local[k] = l->shape;
            s->index[k++] = i;
            rp_vec3 a, b;
            double r;
            core_ends(&l->shape, &a, &b, &r);
            sum.x += a.x + b.x, sum.y += a.y + b.y, sum.z += a.z + b.z;
            cnt += 2;
        }
        rp_vec3 c = {0, 0, 0};
        if (cnt)
            c = (rp_vec3){sum.x / (double)cnt, sum.y / (double)cnt, sum.z / (double)cnt};
        double rad = 0.0;
        for (size_t j = s->first[f]; j < k; j++) {
            rp_vec3 a, b;
            double r;
            core_ends(&s->local[j], &a, &b, &r);
            rad = fmax(rad, fmax(vdist(a, c), vdist(b, c)) + r);
        }
        s->centre[f] = c;
        s->radius[f] = rad * (1 + 1e-9) + 1e-9; /* rounding slack */
    }
    s->first[s->nf] = k;
    for (size_t f = 0; f < s->nf; f++)
        for (size_t g = f + 1; g < s->nf; g++)
            for (size_t a = s->first[f]; a < s->first[f + 1]; a++)
                for (size_t b = s->first[g]; b < s->first[g + 1]; b++) {
                    size_t i = s->index[a], j = s->index[b];
                    if (rp_model_self_pair_(m, i < j ? i : j, i < j ? j : i))
                        s->pairs[f][g] = true;
                }
}

static inline rp_vec3 xform(const rp_transform *t, rp_vec3 p)
{
    rp_vec3 o = {t->r[0][0] * p.x + t->r[0][1] * p.y + t->r[0][2] * p.z + t->t.x,
                 t->r[1][0] * p.x + t->r[1][1] * p.y + t->r[1][2] * p.z + t->t.y,
                 t->r[2][0] * p.x + t->r[2][1] * p.y + t->r[2][2] * p.z + t->t.z};
    return o;
}

static bool stop_visit(void *ctx, size_t index, double distance)
{
    (void)index;
    (void)distance;
    *(bool *)ctx = true;
    return false;
}

/* Scene shapes within the margin of a frame's bound. */
#define SK_CANDIDATES 64
typedef struct candidates {
    const rp_scene *sc;
    rp_shape shape[SK_CANDIDATES];
    size_t n;
} candidates;

static bool collect_visit(void *ctx, size_t index, double distance)
{
    (void)distance;
    candidates *c = ctx;
    if (c->n == SK_CANDIDATES)
        return false;
    c->shape[c->n++] = rp_scene_shape_at(c->sc, index);
    return true;
}

static void sketch_place(const sketch *s, const rp_transform *fr, size_t f, rp_shape *world,
                         bool *placed)
{
    if (placed[f])
        return;
    placed[f] = true;
    for (size_t k = s->first[f]; k < s->first[f + 1]; k++) {
        const rp_shape *l = &s->local[k];
        world[k].kind = l->kind;
        if (l->kind == RP_SHAPE_SPHERE) {
            world[k].sphere.center = xform(&fr[f], l->sphere.center);
            world[k].sphere.radius = l->sphere.radius;
        } else {
            world[k].capsule.a = xform(&fr[f], l->capsule.a);
            world[k].capsule.b = xform(&fr[f], l->capsule.b);
            world[k].capsule.radius = l->capsule.radius;
        }
    }
}

/* Collision verdict of report FIRST at q (margin: the model's, 0). */
static bool sketch_first(const sketch *s, const rp_scene *sc, const double *q, bool self)
{
    rp_transform fr[SK_FRAMES];
    fr[0] = rp_transform_identity();
    rp_kin_frames_(s->m, NULL, q, &fr[1]);
    rp_vec3 wc[SK_FRAMES];
    bool placed[SK_FRAMES] = {false};
    rp_shape world[SK_SHAPES];
    const double margin = 0.0;
    for (size_t f = 0; f < s->nf; f++)
        wc[f] = xform(&fr[f], s->centre[f]);
    if (sc)
        for (size_t ff = 0; ff < s->nf; ff++) {
            /* fast: tip first (distal frames collide most); else base first */
            size_t f = s->fast ? s->nf - 1 - ff : ff;
            if (s->first[f] == s->first[f + 1])
                continue;
            rp_shape b = rp_shape_from_sphere((rp_sphere){wc[f], s->radius[f]});
            candidates c;
            c.sc = sc;
            c.n = 0;
            bool all;
            if (s->fast) {
                all = rp_scene_below_(sc, &b, margin, collect_visit, &c);
            } else { /* only whether anything is near the bound */
                bool hit = false;
                rp_scene_below_(sc, &b, margin, stop_visit, &hit);
                c.n = hit;
                all = false;
            }
            if (c.n == 0)
                continue;
            sketch_place(s, fr, f, world, placed);
            for (size_t k = s->first[f]; k < s->first[f + 1]; k++) {
                if (!all) { /* the shape's own query */
                    bool hit = false;
                    rp_scene_below_(sc, &world[k], margin, stop_visit, &hit);
                    if (hit)
                        return true;
                    continue;
                }
                for (size_t e = 0; e < c.n; e++)
                    if (rp_shape_signed_distance(&world[k], &c.shape[e]) < margin)
                        return true;
            }
        }
    if (!self)
        return false;
    for (size_t f = 0; f < s->nf; f++)
        for (size_t g = f + 1; g < s->nf; g++) {
            if (!s->pairs[f][g] || vdist(wc[f], wc[g]) - s->radius[f] - s->radius[g] >= margin)
                continue;
            sketch_place(s, fr, f, world, placed);
            sketch_place(s, fr, g, world, placed);
            rp_shape bg = rp_shape_from_sphere((rp_sphere){wc[g], s->radius[g]});
            for (size_t a = s->first[f]; a < s->first[f + 1]; a++) {
                if (rp_shape_signed_distance(&world[a], &bg) >= margin)
                    continue; /* shape a is clear of frame g's bound */
                for (size_t b = s->first[g]; b < s->first[g + 1]; b++) {
                    size_t i = s->index[a], j = s->index[b];
                    if (rp_model_self_pair_(s->m, i < j ? i : j, i < j ? j : i) &&
                        rp_shape_signed_distance(&world[a], &world[b]) < margin)
                        return true;
                }
            }
        }
    return false;
}

/* One timed pass of sketch_first; ns per configuration.  (Out of line so
 * that valgrind --toggle-collect=sketch_pass measures exactly this.) */
__attribute__((noinline)) static double sketch_pass(const sketch *s, const rp_scene *sc, bool self,
                                                    const double *q, size_t n, size_t dof,
                                                    size_t *coll)
{
    size_t c = 0;
    double t0 = kb_now_ns();
    for (size_t k = 0; k < n; k++)
        c += sketch_first(s, sc, &q[k * dof], self);
    double dt = kb_now_ns() - t0;
    *coll = c;
    return dt / (double)n;
}

/* Times sketch_first like time_case (coll: its verdicts), after checking
 * every verdict against rp_model_check_joints. */
static timing time_sketch(const sketch *s, const rp_scene *sc, bool self, const double *q, size_t n,
                          size_t dof, int passes)
{
    const rp_model *ref = s->m;
    rp_check_opts opts = {RP_REPORT_FIRST, false, 0.0, NULL, NULL, 0};
    for (size_t k = 0; k < n; k++) {
        rp_check_result r;
        if (rp_model_check_joints(ref, sc, NULL, &q[k * dof], &opts, &r) != RP_OK)
            kb_die("check failed");
        if (r.collision != sketch_first(s, sc, &q[k * dof], self))
            kb_die("sketch: verdict differs from rp_model_check_joints at configuration %zu", k);
        rp_check_result_free(&r);
    }
    double *t = kb_alloc((size_t)passes, sizeof *t);
    size_t coll = 0;
    for (int p = 0; p < passes; p++)
        t[p] = sketch_pass(s, sc, self, q, n, dof, &coll);
    timing r;
    r.med = kb_median(t, (size_t)passes);
    r.min = t[0];
    r.max = t[passes - 1];
    r.coll = (double)coll / (double)n;
    free(t);
    return r;
}

/* ---- motions ------------------------------------------------------------------------ */

typedef struct edge_stats {
    double *us[3];       /* per edge, per mode (discrete, certified, certified with
                          * fast_reject): median µs */
    uint64_t *states[3]; /* per edge, per mode */
    bool *valid[3];      /* per edge, per mode */
} edge_stats;

static void motion_edges(const rp_model *m, const rp_scene *sc, const double *edges, size_t n,
                         size_t dof, int passes, edge_stats *es)
{
    double *t = kb_alloc((size_t)passes * n, sizeof *t);
    for (int mode = 0; mode < 3; mode++) {
        rp_motion_opts mo;
        memset(&mo, 0, sizeof mo);
        mo.mode = mode ? RP_MOTION_CERTIFIED : RP_MOTION_DISCRETE;
        mo.resolution = mode ? 0.0 : 0.01;
        mo.fast_reject = mode == 2;
        es->us[mode] = kb_alloc(n, sizeof(double));
        es->states[mode] = kb_alloc(n, sizeof(uint64_t));
        es->valid[mode] = kb_alloc(n, sizeof(bool));
        for (int p = -1; p < passes; p++) /* p = -1: warm-up */
            for (size_t e = 0; e < n; e++) {
                rp_motion_result r;
                double t0 = kb_now_ns();
                rp_status st =
                    rp_model_check_motion(m, sc, NULL, &edges[2 * e * dof], 2, &mo, &r, NULL);
                double dt = kb_now_ns() - t0;
                if (st != RP_OK)
                    kb_die("rp_model_check_motion failed: %d", (int)st);
                if (p >= 0)
                    t[(size_t)p * n + e] = dt / 1e3;
                es->states[mode][e] = r.states_checked;
                es->valid[mode][e] = r.valid;
            }
        double *col = kb_alloc((size_t)passes, sizeof *col);
        for (size_t e = 0; e < n; e++) {
            for (int p = 0; p < passes; p++)
                col[p] = t[(size_t)p * n + e];
            es->us[mode][e] = kb_median(col, (size_t)passes);
        }
        free(col);
    }
    free(t);
}

static void print_motion(const char *scene, const edge_stats *es, size_t n)
{
    static const char *const names[3] = {"valid", "invalid", "all"};
    size_t disagree = 0;
    for (size_t e = 0; e < n; e++)
        disagree += es->valid[0][e] != es->valid[1][e];
    double *ratios = kb_alloc(n, sizeof *ratios);
    for (int cls = 0; cls < 3; cls++) {
        size_t cnt = 0, nr = 0;
        double us[3] = {0, 0, 0}, states[3] = {0, 0, 0};
        for (size_t e = 0; e < n; e++) {
            if (cls < 2 && es->valid[0][e] != (cls == 0))
                continue;
            cnt++;
            for (int md = 0; md < 3; md++) {
                us[md] += es->us[md][e];
                states[md] += (double)es->states[md][e];
            }
            if (es->us[0][e] > 0)
                ratios[nr++] = es->us[1][e] / es->us[0][e];
        }
        double c = cnt ? (double)cnt : 1.0;
        printf("  %-9s %-8s %6zu %10.1f %8.1f %10.1f %8.1f %7.2f (%.2f) %10.1f %7.2f\n", scene,
               names[cls], cnt, us[0] / c, states[0] / c, us[1] / c, states[1] / c,
               us[0] > 0 ? us[1] / us[0] : 0.0, kb_median(ratios, nr), us[2] / c,
               us[0] > 0 ? us[2] / us[0] : 0.0);
    }
    printf("  %-9s disagree %6zu   (discrete valid, certified invalid: ", scene, disagree);
    size_t dv = 0;
    for (size_t e = 0; e < n; e++)
        dv += es->valid[0][e] && !es->valid[1][e];
    printf("%zu; the reverse: %zu)\n", dv, disagree - dv);
    free(ratios);
}

static void free_edge_stats(edge_stats *es)
{
    for (int md = 0; md < 3; md++) {
        free(es->us[md]);
        free(es->states[md]);
        free(es->valid[md]);
    }
}

/* ---- main ---------------------------------------------------------------------------- */

static size_t arg_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v == 0)
        kb_die("bad count: %s", s);
    return (size_t)v;
}

int main(int argc, char **argv)
{
    const char *data = KB_DATA_DIR;
    size_t n_configs = 10000, n_edges = 1000;
    int passes = 7, motion_passes = 5;
    double radius = KB_RANDOM_RADIUS, bubble = KB_RANDOM_BUBBLE;
    bool motion = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--data") && more)
            data = argv[++i];
        else if (!strcmp(a, "--configs") && more)
            n_configs = arg_size(argv[++i]);
        else if (!strcmp(a, "--passes") && more)
            passes = (int)arg_size(argv[++i]);
        else if (!strcmp(a, "--edges") && more)
            n_edges = arg_size(argv[++i]);
        else if (!strcmp(a, "--motion-passes") && more)
            motion_passes = (int)arg_size(argv[++i]);
        else if (!strcmp(a, "--radius") && more)
            radius = atof(argv[++i]);
        else if (!strcmp(a, "--bubble") && more)
            bubble = atof(argv[++i]);
        else if (!strcmp(a, "--no-motion"))
            motion = false;
        else if (!strcmp(a, "--only") && more)
            g_only = argv[++i];
        else if (!strcmp(a, "--quick")) {
            n_configs = 1000;
            passes = 3;
            n_edges = 100;
            motion_passes = 2;
        } else {
            fprintf(stderr, "usage: kin_bench [--data DIR] [--configs N] [--passes N] "
                            "[--edges N] [--motion-passes N] [--radius R] [--bubble B] [--only S] "
                            "[--no-motion] [--quick]\n");
            return 2;
        }
    }

    rp_store *st = rp_store_new(NULL);
    if (!st)
        kb_die("out of memory");
    kb_robot robot, noself;
    kb_robot_load(&robot, data, st, "arm7", true);
    kb_robot_load(&noself, data, st, "arm7_noself", false);
    const rp_model *m = robot.model, *m0 = noself.model;
    size_t dof = robot.dof;

    kb_scene table, rnd, cell_boxes, cell_caps, cage, rnd1k, surf;
    kb_scene_tabletop(&table);
    kb_scene_cage(&cage);
    kb_scene_random(&rnd1k, m, 1000, radius, bubble);
    kb_scene_surfaces(&surf, 10000);
    kb_scene_random(&rnd, m, KB_RANDOM_SHAPES, radius, bubble);
    kb_scene_cell(&cell_boxes, true);
    kb_scene_cell(&cell_caps, false);
    rp_scene *sc_table = kb_scene_create(st, "tabletop", &table);
    rp_scene *sc_rnd = kb_scene_create(st, "random", &rnd);
    rp_scene *sc_cell_boxes = kb_scene_create(st, "cell-boxes", &cell_boxes);
    rp_scene *sc_cell_caps = kb_scene_create(st, "cell-capsules", &cell_caps);
    rp_scene *sc_cage = kb_scene_create(st, "cage", &cage);
    rp_scene *sc_rnd1k = kb_scene_create(st, "random-1k", &rnd1k);
    rp_scene *sc_surf = kb_scene_create(st, "surfaces-10k", &surf);
    size_t tb_caps = 0;
    for (size_t i = 0; i < table.n; i++)
        tb_caps += table.puts[i].shape.kind == RP_SHAPE_CAPSULE;
    size_t n_self = 0, nl = rp_model_link_count(m);
    for (size_t i = 0; i < nl; i++)
        for (size_t j = i + 1; j < nl; j++)
            n_self += rp_model_self_pair_(m, i, j);

    printf("kin_bench: arm7 (%s/arm7.urdf + .srdf): %zu shapes, %zu links, %zu active joints, "
           "%zu frames, %zu self pairs checked\n",
           data, nl, rp_model_tree_link_count(m), dof, rp_model_frame_count(m), n_self);
    printf("scenes: tabletop %zu shapes (%zu capsules, %zu spheres); random %zu shapes "
           "(R = %.4g m) in x,y [-1,1] z [-0.5,1.5]\n",
           table.n, tb_caps, table.n - tb_caps, rnd.n, radius);

    double *q = kb_configs(&robot, n_configs, KB_SEED_CONFIGS);
    printf("cell: 20 boxes (table, 6 boxes, bookshelf) as boxes, or as %zu capsules covering "
           "them\n",
           cell_caps.n);
    printf("%zu random in-limit configurations, %d passes (median; after one warm-up pass)\n\n",
           n_configs, passes);

    printf("  %-32s %9s %9s %9s %6s\n", "ns per configuration", "median", "min", "max", "coll%");
#define ROW(name, kc, model, sc, rep, coll)                                                        \
    do {                                                                                           \
        if (selected(name))                                                                        \
            print_row(name, time_case(kc, model, sc, rep, q, n_configs, dof, passes), coll);       \
    } while (0)
    ROW("frames (rp_kin_frames_)", K_FRAMES, m, NULL, RP_REPORT_FIRST, false);
    ROW("frames, batches of 32 (rp_kin_frames_n_)", K_FRAMES_N, m, NULL, RP_REPORT_FIRST, false);
    ROW("fk (rp_model_fk)", K_FK, m, NULL, RP_REPORT_FIRST, false);
    ROW("place (no scene, -self)", K_CHECK, m0, NULL, RP_REPORT_FIRST, true);
    ROW("self (no scene) first", K_CHECK, m, NULL, RP_REPORT_FIRST, true);
    ROW("self (no scene) closest", K_CHECK, m, NULL, RP_REPORT_CLOSEST, true);
    ROW("self (no scene) first, batches of 32", K_BATCH, m, NULL, RP_REPORT_FIRST, true);
    struct {
        const char *name;
        const rp_scene *sc;
    } scenes[7] = {
        {"tabletop", sc_table},          {"random", sc_rnd}, {"cell-boxes", sc_cell_boxes},
        {"cell-capsules", sc_cell_caps}, {"cage", sc_cage},  {"random-1k", sc_rnd1k},
        {"surfaces-10k", sc_surf}};
    for (int s = 0; s < 7; s++) {
        char name[64];
        snprintf(name, sizeof name, "%s first", scenes[s].name);
        ROW(name, K_CHECK, m, scenes[s].sc, RP_REPORT_FIRST, true);
        snprintf(name, sizeof name, "%s closest", scenes[s].name);
        ROW(name, K_CHECK, m, scenes[s].sc, RP_REPORT_CLOSEST, true);
        snprintf(name, sizeof name, "%s first -self", scenes[s].name);
        ROW(name, K_CHECK, m0, scenes[s].sc, RP_REPORT_FIRST, true);
        snprintf(name, sizeof name, "%s closest -self", scenes[s].name);
        ROW(name, K_CHECK, m0, scenes[s].sc, RP_REPORT_CLOSEST, true);
        snprintf(name, sizeof name, "%s first, batches of %d", scenes[s].name, BATCH_N);
        ROW(name, K_BATCH, m, scenes[s].sc, RP_REPORT_FIRST, true);
    }
    /* The broadphase sketch (see above): same verdicts, report FIRST. */
    static sketch sk, sk0;
    sketch_init(&sk, m);
    sketch_init(&sk0, m0);
    /* The clear configurations of scene random alone: a FIRST check that
     * finds nothing tests everything (the worst case of report FIRST). */
    size_t n_free = 0;
    double *qf = kb_alloc(n_configs * dof, sizeof *qf);
    for (size_t k = 0; k < n_configs; k++) {
        rp_check_opts fo = {RP_REPORT_FIRST, false, 0.0, NULL, NULL, 0};
        rp_check_result r;
        if (rp_model_check_joints(m, sc_rnd, NULL, &q[k * dof], &fo, &r) != RP_OK)
            kb_die("check failed");
        if (!r.collision)
            memcpy(&qf[n_free++ * dof], &q[k * dof], dof * sizeof *qf);
        rp_check_result_free(&r);
    }
    if (n_free && selected("random first (clear)"))
        print_row("random first (clear)",
                  time_case(K_CHECK, m, sc_rnd, RP_REPORT_FIRST, qf, n_free, dof, passes), true);

    if (!g_only || strstr(g_only, "sketch"))
        printf(
            "  sketch: frame-level broadphase (bench-only; a: keeps the library's order, b: fast; "
            "verdicts checked)\n");
#define SKROW(name, skp, sc, self)                                                                 \
    do {                                                                                           \
        if (selected(name))                                                                        \
            print_row(name, time_sketch(skp, sc, self, q, n_configs, dof, passes), true);          \
    } while (0)
    char name_clear[64];
    SKROW("sketch self (no scene)", &sk, NULL, true);
    for (int v = 0; v < 2; v++) {
        sk.fast = sk0.fast = v == 1;
        for (int s = 0; s < 2; s++) {
            char name[64];
            snprintf(name, sizeof name, "sketch-%c %s first", v ? 'b' : 'a', scenes[s].name);
            SKROW(name, &sk, scenes[s].sc, true);
            snprintf(name, sizeof name, "sketch-%c %s first -self", v ? 'b' : 'a', scenes[s].name);
            SKROW(name, &sk0, scenes[s].sc, false);
        }
        snprintf(name_clear, sizeof name_clear, "sketch-%c random first (clear)", v ? 'b' : 'a');
        if (n_free && selected(name_clear))
            print_row(name_clear, time_sketch(&sk, sc_rnd, true, qf, n_free, dof, passes), true);
    }
    free(qf);

    /* Free fractions (self collision on): 1 - coll%. */
    if (!g_only) {
        size_t c_self, c_table, c_rnd;
        run_pass(K_CHECK, m, NULL, RP_REPORT_FIRST, q, n_configs, dof, &c_self);
        run_pass(K_CHECK, m, sc_table, RP_REPORT_FIRST, q, n_configs, dof, &c_table);
        run_pass(K_CHECK, m, sc_rnd, RP_REPORT_FIRST, q, n_configs, dof, &c_rnd);
        printf("\ncollision-free share of the configurations (self collision on): no scene "
               "%.1f%%, tabletop %.1f%%, random %.1f%%\n",
               100.0 * (1.0 - (double)c_self / (double)n_configs),
               100.0 * (1.0 - (double)c_table / (double)n_configs),
               100.0 * (1.0 - (double)c_rnd / (double)n_configs));
    }

    if (motion && !g_only) {
        printf("\nmotion: %zu edges per scene (clear start, %.1f-%.1f rad max-norm), %d passes "
               "(per-edge median)\n",
               n_edges, KB_EDGE_MIN, KB_EDGE_MAX, motion_passes);
        printf("  %-9s %-8s %6s %10s %8s %10s %8s %7s %10s %7s\n", "scene", "edges", "n", "disc_us",
               "disc_st", "cert_us", "cert_st", "cert/disc (median)", "fast_us", "fast/disc");
    }
    for (int s = 0; s < 2 && motion && !g_only; s++) {
        double *edges = kb_edges(&robot, scenes[s].sc, n_edges, KB_SEED_EDGES + (uint64_t)s);
        double mean_len = 0.0;
        for (size_t e = 0; e < n_edges; e++) {
            double big = 0.0;
            for (size_t i = 0; i < dof; i++)
                big = fmax(big, fabs(edges[(2 * e + 1) * dof + i] - edges[2 * e * dof + i]));
            mean_len += big / (double)n_edges;
        }
        edge_stats es;
        motion_edges(m, scenes[s].sc, edges, n_edges, dof, motion_passes, &es);
        print_motion(scenes[s].name, &es, n_edges);
        printf("  %-9s mean edge length %.3f rad (max-norm)\n", scenes[s].name, mean_len);
        free_edge_stats(&es);
        free(edges);
    }

    free(q);
    kb_scene_free(&table);
    kb_scene_free(&rnd);
    kb_scene_free(&cell_boxes);
    kb_scene_free(&cell_caps);
    kb_scene_free(&cage);
    kb_scene_free(&rnd1k);
    kb_scene_free(&surf);
    rp_store_free(st);
    kb_robot_free(&robot);
    kb_robot_free(&noself);
    return 0;
}
