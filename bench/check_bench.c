/* SPDX-License-Identifier: MIT */
/*
 * check_bench — microseconds per robot check (rp_model_check) against
 * scenes of 1k, 10k and 100k shapes, next to a brute-force scan in the same
 * run, plus the scene's memory per shape and the tree build time.
 *
 * The robot.  A 7-joint arm modelled as 14 capsules of radius 0.03 m and
 * length 0.2 m, two per joint frame (frames 0..6, so a configuration is 7
 * frame poses).  In its frame's coordinates link "jNa" runs from (0,0,0) to
 * (0,0,0.2) and link "jNb" from (0,0,0.2) to (0.2,0,0.2) (an L).  The safety
 * margin is 0 unless --margin says otherwise.  self_collision is off for the
 * main figures; the table also has rows with it on (no allowed pairs, so
 * every pair of links on different frames counts: 84 pairs).
 *
 * Configurations.  --configs of them (default 2000) are generated up front
 * from a fixed seed: every frame independently gets a translation uniform in
 * a ball of radius 0.5 m around the origin and a uniformly random rotation
 * (a unit quaternion from four normal deviates).  The base is the identity.
 *
 * Scenes.  n shapes, half spheres and half capsules (alternating), radius
 * uniform in [0, 0.05] m, centres uniform in the cube [-5, 5]^3 m; a capsule
 * has a uniformly random axis direction and a length uniform in [0, 0.3] m,
 * centred on its centre.  Ids are "s<index>" (2..7 bytes with the NUL).  Each
 * size has its own fixed seed.
 *
 * Timing.  repose_us is the median, over --passes passes, of the per-pass
 * mean: a pass runs rp_model_check (result freed each time) on every
 * configuration in order, and its wall time (CLOCK_MONOTONIC) is divided by
 * the number of configurations; min_us/max_us are the fastest and slowest
 * passes.  An untimed verification pass runs first and serves as warm-up.
 * brute_us is one timed pass (it is long enough to be stable): for every
 * configuration it moves the links into the world with
 * rp_link_shape_transform_shape, as the check does, and loops over all 14
 * links x all scene shapes (then the self pairs, with self collision on)
 * with rp_shape_signed_distance; "first" stops at the first pair below the
 * margin, "closest" takes the full minimum under the tie rule of scene.h.
 * collide% is the share of configurations in collision.
 *
 * Agreement.  For every configuration the brute-force minimum is compared
 * with rp_model_check: CLOSEST must give the same collision flag and the
 * same closest pair at the bit-identical distance; FIRST must give the same
 * collision flag and a violation that really is one.  Any mismatch is
 * printed and the program exits with status 1.
 *
 * Memory.  store_B/shape is (rp_store_memory after rp_store_create and
 * rp_scene_prepare - rp_store_memory of the empty store) / n: entries, ids,
 * id index and tree, as the store accounts them (no malloc overhead).
 * tree_B/shape is rp_scene_index_bytes / n.  build_ms is the median of
 * three builds of the whole scene, each rp_store_create (the first) or
 * rp_store_replace with the same shapes, then rp_scene_prepare: entries,
 * ids, id index and tree, however the library splits that work.
 *
 * Moves.  After the check rows of a size, MOVES times per pass: rp_scene_put
 * of one random existing id with a moved shape, then one FIRST check
 * (self collision off) of the next configuration; move_us is the median
 * over 3 passes of the per-move mean.  "small" moves shift the shape by up
 * to 1 mm per axis, "large" ones put a fresh random shape anywhere in the
 * scene.  check_us is the FIRST row's repose_us: a move should cost about
 * a check, not a tree build.
 *
 * Usage: check_bench [--quick] [--configs N] [--passes N] [--margin M]
 *                    [--sizes N,N,...]
 *   --quick: 100 configurations, 3 passes (smoke runs, profiling).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_rng.h"
#include "repose/scene.h"

#define N_FRAMES 7
#define N_LINKS 14
#define LINK_RADIUS 0.03
#define LINK_LEN 0.2
#define FRAME_BALL 0.5

#define SCENE_HALF 5.0
#define SHAPE_MAX_RADIUS 0.05
#define CAPSULE_MAX_LEN 0.3

#define DEFAULT_CONFIGS 2000
#define DEFAULT_PASSES 7
#define QUICK_CONFIGS 100
#define QUICK_PASSES 3
#define MAX_SIZES 8
#define MOVES 200
#define MOVE_PASSES 3
#define SMALL_MOVE 1e-3
#define ID_STRIDE 24 /* room for "s" + any size_t + NUL */

#define SEED_CONFIGS UINT64_C(0xc0ffee5eed2024a1)
#define SEED_SCENE UINT64_C(0x5ce7e5eed0b1a5e5)

static volatile double g_sink;

/* ---- random inputs (splitmix64 from bench_rng.h) ------------------------- */

/* Uniform in [-1, 1). */
static double rng_sym(uint64_t *state)
{
    return 2.0 * rng_unit(state) - 1.0;
}

/* Standard normal deviate (Box-Muller, one of the pair). */
static double rng_normal(uint64_t *state)
{
    double u = 1.0 - rng_unit(state); /* (0, 1] */
    double v = rng_unit(state);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Uniformly distributed unit vector (rejection sampling in the cube). */
static rp_vec3 rng_direction(uint64_t *state)
{
    for (;;) {
        double x = rng_sym(state), y = rng_sym(state), z = rng_sym(state);
        double n2 = x * x + y * y + z * z;
        if (n2 > 1e-6 && n2 <= 1.0) {
            double inv = 1.0 / sqrt(n2);
            rp_vec3 d = {x * inv, y * inv, z * inv};
            return d;
        }
    }
}

/* ---- helpers --------------------------------------------------------------------- */

static void die(const char *what)
{
    fprintf(stderr, "check_bench: %s\n", what);
    exit(EXIT_FAILURE);
}

static void *xmalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory");
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- the robot ----------------------------------------------------------------- */

static char g_link_ids[N_LINKS][8];
static rp_link g_links[N_LINKS];

static void links_init(void)
{
    for (int f = 0; f < N_FRAMES; f++) {
        for (int k = 0; k < 2; k++) {
            int i = 2 * f + k;
            snprintf(g_link_ids[i], sizeof g_link_ids[i], "j%d%c", f, k ? 'b' : 'a');
            rp_capsule c;
            if (k == 0) {
                c.a = (rp_vec3){0.0, 0.0, 0.0};
                c.b = (rp_vec3){0.0, 0.0, LINK_LEN};
            } else {
                c.a = (rp_vec3){0.0, 0.0, LINK_LEN};
                c.b = (rp_vec3){LINK_LEN, 0.0, LINK_LEN};
            }
            c.radius = LINK_RADIUS;
            g_links[i].id = g_link_ids[i];
            g_links[i].frame = f;
            g_links[i].shape = rp_shape_from_capsule(c);
        }
    }
}

static rp_model *model_put(rp_store *st, const char *name, double margin, bool self)
{
    rp_model_def def = {
        .links = g_links, .n_links = N_LINKS, .safety_margin = margin, .self_collision = self};
    rp_model *m = NULL;
    rp_model_error err;
    if (rp_store_model_put(st, name, &def, &m, &err) != RP_OK || !m)
        die("rp_store_model_put failed");
    if (rp_model_frame_count(m) != N_FRAMES)
        die("unexpected frame count");
    return m;
}

/* n configurations of N_FRAMES poses each. */
static rp_transform *configs_make(size_t n)
{
    uint64_t state = SEED_CONFIGS;
    rp_transform *cfg = xmalloc(n * N_FRAMES, sizeof *cfg);
    for (size_t i = 0; i < n * N_FRAMES; i++) {
        rp_vec3 t;
        for (;;) {
            t.x = rng_sym(&state), t.y = rng_sym(&state), t.z = rng_sym(&state);
            if (t.x * t.x + t.y * t.y + t.z * t.z <= 1.0)
                break;
        }
        t.x *= FRAME_BALL, t.y *= FRAME_BALL, t.z *= FRAME_BALL;
        double q[4], q2;
        do {
            q2 = 0.0;
            for (int k = 0; k < 4; k++) {
                q[k] = rng_normal(&state);
                q2 += q[k] * q[k];
            }
        } while (q2 < 1e-12);
        if (rp_transform_from_quaternion(t, q[0], q[1], q[2], q[3], &cfg[i]) != RP_OK)
            die("rp_transform_from_quaternion failed");
    }
    return cfg;
}

/* The links of one configuration in world coordinates, exactly as the check
 * places them. */
static void place_links(const rp_transform *frames, rp_shape *w)
{
    for (size_t k = 0; k < N_LINKS; k++) {
        rp_link_shape ls = {g_links[k].shape, g_links[k].frame};
        w[k] = rp_link_shape_transform_shape(&ls, &frames[ls.frame]);
    }
}

/* ---- the scene ------------------------------------------------------------------ */

typedef struct bench_scene {
    size_t n;
    rp_store *store;
    rp_scene *scene;
    rp_shape *shapes;   /* storage order, contiguous (the brute-force input) */
    const char **ids;   /* storage order, owned by the scene */
    size_t store_bytes; /* scene + tree, as the store counts it */
    size_t tree_bytes;
    double build_s;   /* median of three builds */
    double move_s[2]; /* per small / large move + check */
    double check_us;  /* the FIRST row's repose_us, beside them */
} bench_scene;

static rp_shape random_shape(uint64_t *state, size_t i)
{
    rp_vec3 c; /* one statement per draw: initialiser lists are unsequenced */
    c.x = SCENE_HALF * rng_sym(state);
    c.y = SCENE_HALF * rng_sym(state);
    c.z = SCENE_HALF * rng_sym(state);
    double r = SHAPE_MAX_RADIUS * rng_unit(state);
    if (i % 2 == 0) {
        rp_sphere s = {c, r};
        return rp_shape_from_sphere(s);
    }
    rp_vec3 d = rng_direction(state);
    double h = 0.5 * CAPSULE_MAX_LEN * rng_unit(state);
    rp_capsule k = {{c.x - h * d.x, c.y - h * d.y, c.z - h * d.z},
                    {c.x + h * d.x, c.y + h * d.y, c.z + h * d.z},
                    r};
    return rp_shape_from_capsule(k);
}

static void scene_build(bench_scene *s, size_t n)
{
    uint64_t state = SEED_SCENE ^ (uint64_t)n;
    rp_shape_put *puts = xmalloc(n, sizeof *puts);
    char *idbuf = xmalloc(n, ID_STRIDE);
    for (size_t i = 0; i < n; i++) {
        snprintf(idbuf + ID_STRIDE * i, ID_STRIDE, "s%zu", i);
        puts[i].id = idbuf + ID_STRIDE * i;
        puts[i].shape = random_shape(&state, i);
        if (rp_shape_validate(&puts[i].shape) != RP_OK)
            die("generated an invalid shape");
    }

    s->n = n;
    s->store = rp_store_new(NULL);
    if (!s->store)
        die("rp_store_new failed");
    size_t empty = rp_store_memory(s->store);
    double t[3];
    for (int k = 0; k < 3; k++) {
        double t0 = now_s();
        rp_status st =
            k == 0 ? rp_store_create(s->store, "bench", puts, n, &s->scene)
                   : rp_store_replace(s->store, "bench", puts, n, NULL, false, &s->scene, NULL);
        if (st != RP_OK)
            die("rp_store_create/replace failed");
        if (rp_scene_prepare(s->scene) != RP_OK)
            die("rp_scene_prepare failed");
        t[k] = now_s() - t0;
        if (k == 0) {
            s->store_bytes = rp_store_memory(s->store) - empty;
            s->tree_bytes = rp_scene_index_bytes(s->scene);
        }
    }
    s->build_s = median(t, 3);
    free(puts);
    free(idbuf);

    if (rp_scene_shape_count(s->scene) != n)
        die("scene lost shapes");
    s->shapes = xmalloc(n, sizeof *s->shapes);
    s->ids = xmalloc(n, sizeof *s->ids);
    for (size_t i = 0; i < n; i++) {
        s->shapes[i] = rp_scene_shape_at(s->scene, i);
        s->ids[i] = rp_scene_id_at(s->scene, i);
    }
}

static void scene_free(bench_scene *s)
{
    rp_store_free(s->store);
    free(s->shapes);
    free(s->ids);
    memset(s, 0, sizeof *s);
}

/* ---- brute force --------------------------------------------------------------- */

typedef struct brute_min {
    bool has;
    size_t link;
    rp_pair_kind kind;
    size_t other;
    double distance;
} brute_min;

/* FIRST by brute force: true when some pair is below the margin. */
static bool brute_first(const bench_scene *s, const rp_transform *frames, bool self, double margin)
{
    rp_shape w[N_LINKS];
    place_links(frames, w);
    const rp_shape *sh = s->shapes;
    size_t n = s->n;
    for (size_t i = 0; i < N_LINKS; i++)
        for (size_t e = 0; e < n; e++)
            if (rp_shape_signed_distance(&w[i], &sh[e]) < margin)
                return true;
    if (self)
        for (size_t i = 0; i < N_LINKS; i++)
            for (size_t j = i + 1; j < N_LINKS; j++)
                if (g_links[i].frame != g_links[j].frame &&
                    rp_shape_signed_distance(&w[i], &w[j]) < margin)
                    return true;
    return false;
}

/* CLOSEST by brute force, in the canonical order of check.c and with the tie
 * rule of scene.h: per link the nearest scene shape (ties: smaller id), taken
 * when strictly closer than every earlier pair; then the link's self pairs
 * with higher links, ascending. */
static brute_min brute_closest(const bench_scene *s, const rp_transform *frames, bool self)
{
    rp_shape w[N_LINKS];
    place_links(frames, w);
    const rp_shape *sh = s->shapes;
    size_t n = s->n;
    brute_min best = {false, 0, RP_PAIR_SCENE, 0, INFINITY};
    for (size_t i = 0; i < N_LINKS; i++) {
        double ld = INFINITY;
        size_t le = SIZE_MAX;
        for (size_t e = 0; e < n; e++) {
            double d = rp_shape_signed_distance(&w[i], &sh[e]);
            if (d <= ld && (d < ld || le == SIZE_MAX || strcmp(s->ids[e], s->ids[le]) < 0)) {
                ld = d;
                le = e;
            }
        }
        if (le != SIZE_MAX && (!best.has || ld < best.distance)) {
            best = (brute_min){true, i, RP_PAIR_SCENE, le, ld};
        }
        if (!self)
            continue;
        for (size_t j = i + 1; j < N_LINKS; j++) {
            if (g_links[i].frame == g_links[j].frame)
                continue;
            double d = rp_shape_signed_distance(&w[i], &w[j]);
            if (!best.has || d < best.distance)
                best = (brute_min){true, i, RP_PAIR_SELF, j, d};
        }
    }
    return best;
}

/* ---- verification ----------------------------------------------------------- */

static size_t g_mismatches;

static void mismatch(size_t n, bool self, const char *report, size_t cfg, const char *what)
{
    if (g_mismatches++ < 20)
        fprintf(stderr, "MISMATCH shapes=%zu self=%s report=%s config=%zu: %s\n", n,
                self ? "on" : "off", report, cfg, what);
}

/* Runs both report modes once per configuration and compares them with the
 * brute-force minimum; untimed (and the warm-up of the timed passes). */
static void verify(const bench_scene *s, const rp_model *m, const rp_transform *cfgs, size_t n_cfg,
                   const brute_min *bm, const bool *bfirst, bool self, double margin)
{
    for (size_t c = 0; c < n_cfg; c++) {
        const rp_transform *frames = &cfgs[c * N_FRAMES];
        bool bcoll = bm[c].has && bm[c].distance < margin;
        char msg[256];
        if (bfirst[c] != bcoll)
            mismatch(s->n, self, "brute", c, "brute first and brute closest disagree");

        rp_check_opts oc = {RP_REPORT_CLOSEST, false, 0.0, NULL, NULL, 0};
        rp_check_result r;
        if (rp_model_check(m, s->scene, NULL, frames, N_FRAMES, &oc, &r) != RP_OK)
            die("rp_model_check (closest) failed");
        if (r.collision != bcoll)
            mismatch(s->n, self, "closest", c, "collision flag differs from brute force");
        if (r.has_min != bm[c].has) {
            mismatch(s->n, self, "closest", c, "has_min differs from brute force");
        } else if (r.has_min &&
                   (r.closest.distance != bm[c].distance || r.closest.link != bm[c].link ||
                    r.closest.kind != bm[c].kind || r.closest.other != bm[c].other)) {
            snprintf(msg, sizeof msg,
                     "closest (link %zu, %s %zu, %.17g) vs brute (link %zu, %s %zu, %.17g)",
                     r.closest.link, r.closest.kind == RP_PAIR_SCENE ? "scene" : "self",
                     r.closest.other, r.closest.distance, bm[c].link,
                     bm[c].kind == RP_PAIR_SCENE ? "scene" : "self", bm[c].other, bm[c].distance);
            mismatch(s->n, self, "closest", c, msg);
        }
        rp_check_result_free(&r);

        rp_check_opts of = {RP_REPORT_FIRST, false, 0.0, NULL, NULL, 0};
        if (rp_model_check(m, s->scene, NULL, frames, N_FRAMES, &of, &r) != RP_OK)
            die("rp_model_check (first) failed");
        if (r.collision != bcoll) {
            mismatch(s->n, self, "first", c, "collision flag differs from brute force");
        } else if (r.collision) {
            if (r.n_violations != 1 || !r.violations) {
                mismatch(s->n, self, "first", c, "collision without exactly one violation");
            } else {
                const rp_check_pair *v = &r.violations[0];
                rp_shape w[N_LINKS];
                place_links(frames, w);
                double d = NAN;
                if (v->link < N_LINKS && v->kind == RP_PAIR_SCENE && v->other < s->n)
                    d = rp_shape_signed_distance(&w[v->link], &s->shapes[v->other]);
                else if (v->link < N_LINKS && v->kind == RP_PAIR_SELF && self &&
                         v->other < N_LINKS && g_links[v->link].frame != g_links[v->other].frame)
                    d = rp_shape_signed_distance(&w[v->link], &w[v->other]);
                if (!(d == v->distance && d < margin)) {
                    snprintf(msg, sizeof msg,
                             "reported violation (link %zu, %s %zu, %.17g) "
                             "recomputes to %.17g",
                             v->link, v->kind == RP_PAIR_SCENE ? "scene" : "self", v->other,
                             v->distance, d);
                    mismatch(s->n, self, "first", c, msg);
                }
            }
        }
        rp_check_result_free(&r);
    }
}

/* ---- timing -------------------------------------------------------------------- */

/* One pass of rp_model_check over every configuration; seconds. */
static double repose_pass(const bench_scene *s, const rp_model *m, const rp_transform *cfgs,
                          size_t n_cfg, rp_report report, size_t *collisions)
{
    rp_check_opts opts = {report, false, 0.0, NULL, NULL, 0};
    size_t hits = 0;
    double acc = 0.0;
    double t0 = now_s();
    for (size_t c = 0; c < n_cfg; c++) {
        rp_check_result r;
        if (rp_model_check(m, s->scene, NULL, &cfgs[c * N_FRAMES], N_FRAMES, &opts, &r) != RP_OK)
            die("rp_model_check failed");
        hits += r.collision;
        acc += r.closest.distance;
        rp_check_result_free(&r);
    }
    double t = now_s() - t0;
    g_sink = acc;
    *collisions = hits;
    return t;
}

typedef struct row {
    size_t shapes;
    bool self;
    const char *report;
    double repose_us, min_us, max_us; /* all configurations */
    double free_us, coll_us;          /* collision-free / colliding ones (NAN: none) */
    double brute_us;
    double collide;
} row;

static void print_us(double us)
{
    if (isnan(us))
        printf("  %8s", "-");
    else
        printf("  %8.3f", us);
}

static void print_row(const row *r)
{
    printf("%8zu  %-4s  %-7s  %9.3f  %8.3f  %8.3f", r->shapes, r->self ? "on" : "off", r->report,
           r->repose_us, r->min_us, r->max_us);
    print_us(r->free_us);
    print_us(r->coll_us);
    printf("  %10.1f  %7.0fx  %8.2f\n", r->brute_us, r->brute_us / r->repose_us,
           100.0 * r->collide);
    fflush(stdout);
}

/* Median over `passes` passes of the per-pass mean (us per configuration);
 * also the fastest and slowest pass.  Checks the collision count. */
static double repose_median(const bench_scene *s, const rp_model *m, const rp_transform *cfgs,
                            size_t n_cfg, rp_report report, int passes, size_t expect_hits,
                            double *min_us, double *max_us, bool self, const char *name)
{
    if (n_cfg == 0)
        return NAN;
    double *per = xmalloc((size_t)passes, sizeof *per);
    double lo = INFINITY, hi = 0.0;
    for (int p = 0; p < passes; p++) {
        size_t hits = 0;
        per[p] = 1e6 * repose_pass(s, m, cfgs, n_cfg, report, &hits) / (double)n_cfg;
        lo = fmin(lo, per[p]);
        hi = fmax(hi, per[p]);
        if (hits != expect_hits)
            mismatch(s->n, self, name, 0, "collision count differs in a timed pass");
    }
    double med = median(per, (size_t)passes);
    free(per);
    if (min_us)
        *min_us = lo;
    if (max_us)
        *max_us = hi;
    return med;
}

/* Brute force (timed, one pass each), verification, then the timed passes of
 * both report modes, for one scene and one model: over all configurations,
 * and separately over the collision-free and the colliding ones. */
static void bench_one(const bench_scene *s, const rp_model *m, bool self, double margin,
                      const rp_transform *cfgs, size_t n_cfg, int passes, row out[2])
{
    brute_min *bm = xmalloc(n_cfg, sizeof *bm);
    bool *bf = xmalloc(n_cfg, sizeof *bf);
    size_t bhits = 0;

    double t0 = now_s();
    for (size_t c = 0; c < n_cfg; c++)
        bhits += (bf[c] = brute_first(s, &cfgs[c * N_FRAMES], self, margin));
    double brute_first_s = now_s() - t0;

    t0 = now_s();
    for (size_t c = 0; c < n_cfg; c++)
        bm[c] = brute_closest(s, &cfgs[c * N_FRAMES], self);
    double brute_closest_s = now_s() - t0;

    verify(s, m, cfgs, n_cfg, bm, bf, self, margin);

    /* The configurations split by outcome (copies, so passes stay linear). */
    rp_transform *fr = xmalloc(n_cfg * N_FRAMES, sizeof *fr);
    rp_transform *co = xmalloc(n_cfg * N_FRAMES, sizeof *co);
    size_t n_fr = 0, n_co = 0;
    for (size_t c = 0; c < n_cfg; c++) {
        rp_transform *dst = bf[c] ? &co[n_co++ * N_FRAMES] : &fr[n_fr++ * N_FRAMES];
        memcpy(dst, &cfgs[c * N_FRAMES], N_FRAMES * sizeof *dst);
    }

    static const rp_report reports[2] = {RP_REPORT_FIRST, RP_REPORT_CLOSEST};
    static const char *const names[2] = {"first", "closest"};
    for (int k = 0; k < 2; k++) {
        row r = {s->n,
                 self,
                 names[k],
                 0.0,
                 0.0,
                 0.0,
                 0.0,
                 0.0,
                 1e6 * (k == 0 ? brute_first_s : brute_closest_s) / (double)n_cfg,
                 (double)bhits / (double)n_cfg};
        r.repose_us = repose_median(s, m, cfgs, n_cfg, reports[k], passes, bhits, &r.min_us,
                                    &r.max_us, self, names[k]);
        r.free_us =
            repose_median(s, m, fr, n_fr, reports[k], passes, 0, NULL, NULL, self, names[k]);
        r.coll_us =
            repose_median(s, m, co, n_co, reports[k], passes, n_co, NULL, NULL, self, names[k]);
        out[k] = r;
    }
    free(fr);
    free(co);
    free(bm);
    free(bf);
}

/* Seconds per (move of one shape + one FIRST check), median of MOVE_PASSES
 * passes of MOVES; `large` puts fresh shapes, else shifts by SMALL_MOVE.
 * Changes the scene (run it last for a size). */
static double move_median(bench_scene *s, const rp_model *m, const rp_transform *cfgs, size_t n_cfg,
                          bool large, uint64_t *state)
{
    rp_check_opts opts = {RP_REPORT_FIRST, false, 0.0, NULL, NULL, 0};
    double per[MOVE_PASSES];
    double acc = 0.0;
    size_t c = 0;
    for (int p = 0; p < MOVE_PASSES; p++) {
        double t0 = now_s();
        for (int k = 0; k < MOVES; k++) {
            size_t e = (size_t)(rng_next(state) % s->n);
            rp_shape_put put = {s->ids[e], rp_scene_shape_at(s->scene, e)};
            if (large) {
                put.shape = random_shape(state, e);
            } else {
                rp_vec3 d = {SMALL_MOVE * rng_sym(state), SMALL_MOVE * rng_sym(state),
                             SMALL_MOVE * rng_sym(state)};
                rp_vec3 *pts[2] = {&put.shape.sphere.center, NULL};
                if (put.shape.kind == RP_SHAPE_CAPSULE) {
                    pts[0] = &put.shape.capsule.a;
                    pts[1] = &put.shape.capsule.b;
                }
                for (int j = 0; j < 2 && pts[j]; j++) {
                    pts[j]->x += d.x;
                    pts[j]->y += d.y;
                    pts[j]->z += d.z;
                }
            }
            if (rp_scene_put(s->scene, &put, 1, NULL, NULL) != RP_OK)
                die("rp_scene_put (move) failed");
            rp_check_result r;
            if (rp_model_check(m, s->scene, NULL, &cfgs[c * N_FRAMES], N_FRAMES, &opts, &r) !=
                RP_OK)
                die("rp_model_check failed");
            acc += r.closest.distance;
            rp_check_result_free(&r);
            c = (c + 1) % n_cfg;
        }
        per[p] = (now_s() - t0) / MOVES;
    }
    g_sink = acc;
    return median(per, MOVE_PASSES);
}

/* ---- main ------------------------------------------------------------------------ */

static unsigned long parse_count(const char *flag, const char *s)
{
    char *end;
    errno = 0;
    unsigned long v = s ? strtoul(s, &end, 10) : 0;
    if (!s || errno || *end || v == 0) {
        fprintf(stderr, "check_bench: %s needs a positive integer\n", flag);
        exit(2);
    }
    return v;
}

static void usage(void)
{
    fprintf(stderr, "usage: check_bench [--quick] [--configs N] [--passes N] [--margin M] "
                    "[--sizes N,N,...]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    size_t n_cfg = 0;
    int passes = 0;
    bool quick = false;
    double margin = 0.0;
    size_t sizes[MAX_SIZES] = {1000, 10000, 100000};
    size_t n_sizes = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!strcmp(argv[i], "--configs")) {
            n_cfg = parse_count("--configs", i + 1 < argc ? argv[++i] : NULL);
        } else if (!strcmp(argv[i], "--passes")) {
            passes = (int)parse_count("--passes", i + 1 < argc ? argv[++i] : NULL);
        } else if (!strcmp(argv[i], "--margin")) {
            char *end;
            margin = i + 1 < argc ? strtod(argv[++i], &end) : -1.0;
            if (!(margin >= 0.0) || !isfinite(margin) || *end)
                usage();
        } else if (!strcmp(argv[i], "--sizes")) {
            if (i + 1 >= argc)
                usage();
            char *p = argv[++i];
            n_sizes = 0;
            while (*p) {
                char *end;
                errno = 0;
                unsigned long v = strtoul(p, &end, 10);
                if (errno || end == p || v == 0 || n_sizes == MAX_SIZES || (*end && *end != ','))
                    usage();
                sizes[n_sizes++] = v;
                p = *end ? end + 1 : end;
            }
        } else {
            usage();
        }
    }
    if (!n_cfg)
        n_cfg = quick ? QUICK_CONFIGS : DEFAULT_CONFIGS;
    if (!passes)
        passes = quick ? QUICK_PASSES : DEFAULT_PASSES;

    links_init();
    rp_transform *cfgs = configs_make(n_cfg);

    printf("check_bench: arm of %d capsules (r %.2f m, %.1f m) on %d frames, margin %g m, "
           "%zu configurations (frames in a %.1f m ball), %d passes\n",
           N_LINKS, LINK_RADIUS, LINK_LEN, N_FRAMES, margin, n_cfg, FRAME_BALL, passes);
    printf("scene: spheres/capsules 50/50, r <= %.2f m, capsule length <= %.1f m, "
           "centres uniform in [-%.0f, %.0f]^3 m\n",
           SHAPE_MAX_RADIUS, CAPSULE_MAX_LEN, SCENE_HALF, SCENE_HALF);
    printf("repose_us: median over passes of the per-pass mean (min/max: fastest/slowest "
           "pass);\nfree_us/coll_us: the same over the collision-free/colliding configurations "
           "only; brute_us: one pass\n\n");

    row *rows = xmalloc(n_sizes * 4, sizeof *rows);
    size_t n_rows = 0;
    bench_scene *mem = xmalloc(n_sizes, sizeof *mem);

    printf("  shapes  self  report   repose_us    min_us    max_us   free_us   coll_us    "
           "brute_us  speedup  collide%%\n");
    for (size_t z = 0; z < n_sizes; z++) {
        bench_scene s;
        scene_build(&s, sizes[z]);
        mem[z] = s;
        rp_model *off = model_put(s.store, "arm", margin, false);
        rp_model *on = model_put(s.store, "arm_self", margin, true);
        bench_one(&s, off, false, margin, cfgs, n_cfg, passes, &rows[n_rows]);
        print_row(&rows[n_rows]);
        print_row(&rows[n_rows + 1]);
        n_rows += 2;
        bench_one(&s, on, true, margin, cfgs, n_cfg, passes, &rows[n_rows]);
        print_row(&rows[n_rows]);
        print_row(&rows[n_rows + 1]);
        n_rows += 2;
        uint64_t state = SEED_SCENE ^ UINT64_C(0x6d6f7665) ^ (uint64_t)s.n;
        s.move_s[0] = move_median(&s, off, cfgs, n_cfg, false, &state);
        s.move_s[1] = move_median(&s, off, cfgs, n_cfg, true, &state);
        mem[z].move_s[0] = s.move_s[0];
        mem[z].move_s[1] = s.move_s[1];
        mem[z].check_us = rows[n_rows - 4].repose_us;
        scene_free(&s);
    }

    printf("\n  shapes    build_ms  store_B/shape  tree_B/shape  (target <= 150 B/shape)\n");
    for (size_t z = 0; z < n_sizes; z++)
        printf("%8zu  %10.3f  %13.1f  %12.1f\n", mem[z].n, 1e3 * mem[z].build_s,
               (double)mem[z].store_bytes / (double)mem[z].n,
               (double)mem[z].tree_bytes / (double)mem[z].n);

    printf("\n  shapes  check_us  small_move_us  large_move_us  (move of one shape + FIRST "
           "check; %d moves x %d passes)\n",
           MOVES, MOVE_PASSES);
    for (size_t z = 0; z < n_sizes; z++)
        printf("%8zu  %8.3f  %13.3f  %13.3f\n", mem[z].n, mem[z].check_us, 1e6 * mem[z].move_s[0],
               1e6 * mem[z].move_s[1]);

    printf("\nagreement with brute force: %zu scene sizes x 2 models x %zu configurations x "
           "2 reports: %zu mismatches\n",
           n_sizes, n_cfg, g_mismatches);
    free(rows);
    free(mem);
    free(cfgs);
    return g_mismatches ? 1 : 0;
}
