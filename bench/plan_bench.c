/* SPDX-License-Identifier: MIT */
/*
 * plan_bench: rp_model_plan in process on 20 seeded problems of the test
 * arm (tests/data/arm7.urdf, 57 spheres and capsules, 8 joints) in the
 * cell of kin_common.h (a table, six boxes on it and a bookshelf: 20
 * exact boxes).  A problem is a start and a goal drawn uniformly within
 * the joint limits, each clear of the cell and of the arm itself, with
 * the straight motion between them blocked (so that it needs planning);
 * the problems are the same on every run (seeded).
 *
 *     plan_bench [--problems N] [--seed S] [--timeout-ms T] [--nn] [--unix PATH]
 *                [--edges certified|discrete] [--dump DIR] [--range R]
 *
 * For certified and discrete edges (or the one --edges names), prints the median, p90 and worst time
 * of a solve, the success rate within the timeout, and the median
 * iterations, nodes, states and edges checked.  --nn prints the nearest
 * neighbour structure's cost per query at 1k, 10k and 100k points of the
 * arm's joint space.  --dump DIR writes the cell as scene.replace params
 * (DIR/cell.json) and the problems, one per line as "START GOAL" JSON
 * arrays (DIR/problems.txt), for bench/ompl_vs_plan.sh.  Figures only:
 * nothing is asserted.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin_common.h"
#include "repose/client.h"
#include "repose/plan.h"

static double pct(double *v, size_t n, double p)
{
    if (n == 0)
        return NAN;
    kb_median(v, n); /* sorts */
    size_t i = (size_t)ceil(p / 100.0 * (double)n) - 1;
    return v[i < n ? i : n - 1];
}

static bool clear(const kb_robot *r, const rp_scene *sc, const double *q)
{
    rp_check_opts o;
    memset(&o, 0, sizeof o);
    o.report = RP_REPORT_FIRST;
    rp_check_result res;
    memset(&res, 0, sizeof res);
    if (rp_model_check_joints(r->model, sc, NULL, q, &o, &res) != RP_OK)
        kb_die("check failed");
    bool ok = !res.collision;
    rp_check_result_free(&res);
    return ok;
}

static bool straight_blocked(const kb_robot *r, const rp_scene *sc, const double *a,
                             const double *b)
{
    double path[2 * KB_MAX_DOF];
    memcpy(path, a, r->dof * sizeof *a);
    memcpy(path + r->dof, b, r->dof * sizeof *b);
    rp_motion_opts o;
    memset(&o, 0, sizeof o);
    o.mode = RP_MOTION_CERTIFIED;
    o.fast_reject = true;
    rp_motion_result m;
    if (rp_model_check_motion(r->model, sc, NULL, path, 2, &o, &m, NULL) != RP_OK)
        kb_die("motion check failed");
    return !m.valid;
}

static void nn_figures(size_t dof)
{
    bool wraps[KB_MAX_DOF] = {false};
    kb_rng r = {12345};
    static const size_t sizes[] = {1000, 10000, 100000};
    printf("nearest neighbour (%zu dimensions, uniform in [-3, 3]): ns per query\n", dof);
    for (size_t s = 0; s < 3; s++) {
        rp_nn *nn = rp_nn_new(dof, wraps);
        double p[KB_MAX_DOF];
        for (size_t i = 0; i < sizes[s]; i++) {
            for (size_t d = 0; d < dof; d++)
                p[d] = kb_uniform(&r, -3, 3);
            if (!rp_nn_add(nn, p))
                kb_die("rp_nn_add");
        }
        size_t q = 20000;
        double sink = 0.0, t0 = kb_now_ns();
        for (size_t i = 0; i < q; i++) {
            for (size_t d = 0; d < dof; d++)
                p[d] = kb_uniform(&r, -3, 3);
            double d2;
            sink += (double)rp_nn_nearest(nn, p, &d2) + d2;
        }
        double per = (kb_now_ns() - t0) / (double)q;
        printf("  %6zu points: %8.0f ns%s\n", sizes[s], per, sink < 0 ? " " : "");
        rp_nn_free(nn);
    }
}

/* The cell as scene.replace params (boxes only: kb_scene_cell exact). */
static char *cell_params(const kb_scene *cell)
{
    size_t cap = 256 + cell->n * 320, len = 0;
    char *p = kb_alloc(cap, 1);
    len += (size_t)snprintf(p + len, cap - len,
                            "{\"scene\":\"plan-cell\",\"create\":true,"
                            "\"shapes\":{");
    for (size_t i = 0; i < cell->n; i++) {
        const rp_shape *sh = &cell->puts[i].shape;
        if (sh->kind != RP_SHAPE_BOX)
            kb_die("the cell holds a shape that is not a box");
        const rp_box *b = &sh->box;
        len += (size_t)snprintf(
            p + len, cap - len,
            "%s\"%s\":{\"box\":{\"center\":[%.17g,%.17g,%.17g],\"half_extents\":[%.17g,%.17g,"
            "%.17g],\"rotation\":{\"w\":%.17g,\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}}}",
            i ? "," : "", cell->puts[i].id, b->center.x, b->center.y, b->center.z,
            b->half_extents.x, b->half_extents.y, b->half_extents.z, b->rotation.w, b->rotation.x,
            b->rotation.y, b->rotation.z);
    }
    snprintf(p + len, cap - len, "}}");
    return p;
}

/* The problems through reposed at `path`: medians of the round trip and of
 * the daemon's own time, per edge mode. */
static void over_socket(const char *path, const kb_robot *robot, const kb_scene *cell,
                        const double *q, size_t problems, double timeout, int first_mode,
                        int last_mode)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix(path, 5000, &err);
    if (!c)
        kb_die("cannot reach reposed at %s: %s", path, err.message);
    char *res = NULL;
    if (rp_client_model_put_urdf(c, "plan-arm", robot->urdf, robot->srdf, &res, &err) !=
        RP_CLIENT_OK)
        kb_die("model.put: %s", err.message);
    free(res);
    char *params = cell_params(cell);
    if (rp_client_call(c, "scene.replace", params, NULL, &err) != RP_CLIENT_OK)
        kb_die("scene.replace: %s", err.message);
    free(params);
    size_t dof = robot->dof;
    printf("  over reposed's Unix socket (%s), round trip included:\n", path);
    for (int mode = first_mode; mode <= last_mode; mode++) {
        double *rt = kb_alloc(problems, sizeof *rt), *in = kb_alloc(problems, sizeof *in);
        size_t solved = 0;
        for (size_t p = 0; p < problems; p++) {
            rp_client_plan_opts o;
            memset(&o, 0, sizeof o);
            o.edges = mode ? "discrete" : "certified";
            o.seed = p + 1;
            o.timeout_ms = timeout;
            rp_client_plan_result r;
            double t0 = kb_now_ns();
            if (rp_client_plan(c, "plan-arm", "plan-cell", q + 2 * p * dof, q + (2 * p + 1) * dof,
                               1, dof, &o, &r, &err) != RP_CLIENT_OK)
                kb_die("plan: %s", err.message);
            rt[p] = (kb_now_ns() - t0) / 1e6;
            in[p] = r.ms;
            solved += r.solved;
            rp_client_plan_result_free(&r);
        }
        double med = pct(rt, problems, 50), p90 = pct(rt, problems, 90);
        printf("  %-10s %9.2f %9.2f %9s %5zu/%-3zu| daemon's own median %.2f ms\n",
               mode ? "discrete" : "certified", med, p90, "", solved, problems,
               pct(in, problems, 50));
        free(rt);
        free(in);
    }
    rp_client_close(c);
}

/* --dump: the cell and the problems for another planner (see the top). */
static void dump_problems(const char *dir, const kb_scene *cell, const double *q, size_t problems,
                          size_t dof)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cell.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        kb_die("cannot write %s", path);
    char *params = cell_params(cell);
    fprintf(f, "%s\n", params);
    free(params);
    fclose(f);
    snprintf(path, sizeof path, "%s/problems.txt", dir);
    if (!(f = fopen(path, "w")))
        kb_die("cannot write %s", path);
    for (size_t p = 0; p < problems; p++) {
        for (int end = 0; end < 2; end++) {
            const double *x = q + (2 * p + (size_t)end) * dof;
            fputc('[', f);
            for (size_t d = 0; d < dof; d++)
                fprintf(f, "%s%.17g", d ? "," : "", x[d]);
            fputs(end ? "]\n" : "] ", f);
        }
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    size_t problems = 20;
    uint64_t seed = 20261205;
    double timeout = 1000;
    bool nn = false;
    const char *unix_path = NULL;
    int first_mode = 0, last_mode = 1;
    const char *dump = NULL;
    double range = 0; /* the planner's default */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--problems") && i + 1 < argc)
            problems = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = (uint64_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc)
            timeout = atof(argv[++i]);
        else if (!strcmp(argv[i], "--nn"))
            nn = true;
        else if (!strcmp(argv[i], "--unix") && i + 1 < argc)
            unix_path = argv[++i];
        else if (!strcmp(argv[i], "--range") && i + 1 < argc)
            range = atof(argv[++i]);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else if (!strcmp(argv[i], "--edges") && i + 1 < argc && !strcmp(argv[i + 1], "certified"))
            first_mode = last_mode = 0, i++;
        else if (!strcmp(argv[i], "--edges") && i + 1 < argc && !strcmp(argv[i + 1], "discrete"))
            first_mode = last_mode = 1, i++;
        else
            kb_die("usage: plan_bench [--problems N] [--seed S] [--timeout-ms T] [--nn] "
                   "[--unix PATH] [--edges certified|discrete] [--dump DIR] [--range R]");
    }
    rp_store *st = rp_store_new(NULL);
    kb_robot robot;
    kb_robot_load(&robot, KB_DATA_DIR, st, "arm7", true);
    kb_scene cell;
    memset(&cell, 0, sizeof cell);
    kb_scene_cell(&cell, true);
    rp_scene *sc = kb_scene_create(st, "cell", &cell);
    size_t dof = robot.dof;
    if (nn)
        nn_figures(dof);

    /* The problems. */
    double *q = kb_alloc(2 * problems * dof, sizeof *q);
    kb_rng r = {seed};
    for (size_t p = 0; p < problems; p++) {
        double *a = q + 2 * p * dof, *b = a + dof;
        do {
            for (int end = 0; end < 2; end++) {
                double *x = end ? b : a;
                do
                    for (size_t d = 0; d < dof; d++)
                        x[d] = kb_uniform(&r, robot.lo[d], robot.hi[d]);
                while (!clear(&robot, sc, x));
            }
        } while (!straight_blocked(&robot, sc, a, b));
    }
    if (dump) {
        dump_problems(dump, &cell, q, problems, dof);
        return 0;
    }
    printf("plan_bench: arm7 (%zu joints, %zu shapes) in the 20-box cell; %zu problems (seed "
           "%llu), timeout %.0f ms, in process\n",
           dof, rp_model_link_count(robot.model), problems, (unsigned long long)seed, timeout);
    printf("  %-10s %9s %9s %9s %8s | %7s %7s %9s %7s\n", "edges", "median_ms", "p90_ms",
           "worst_ms", "solved", "iters", "nodes", "states", "edges");
    for (int mode = first_mode; mode <= last_mode; mode++) {
        double *ms = kb_alloc(problems, sizeof *ms), *it = kb_alloc(problems, sizeof *it);
        double *nodes = kb_alloc(problems, sizeof *nodes),
               *states = kb_alloc(problems, sizeof *states);
        double *edges = kb_alloc(problems, sizeof *edges);
        size_t solved = 0;
        for (size_t p = 0; p < problems; p++) {
            rp_plan_opts o;
            rp_plan_opts_init(&o);
            o.edges = mode ? RP_MOTION_DISCRETE : RP_MOTION_CERTIFIED;
            o.seed = p + 1;
            o.timeout_ms = timeout;
            o.range = range;
            rp_plan_result res;
            double t0 = kb_now_ns();
            if (rp_model_plan(robot.model, sc, NULL, q + 2 * p * dof, q + (2 * p + 1) * dof, 1, &o,
                              &res) != RP_OK)
                kb_die("rp_model_plan failed");
            ms[p] = (kb_now_ns() - t0) / 1e6;
            solved += res.outcome == RP_PLAN_SOLVED;
            it[p] = (double)res.iterations;
            nodes[p] = (double)res.nodes;
            states[p] = (double)res.states_checked;
            edges[p] = (double)res.edges_checked;
            rp_plan_result_free(&res);
        }
        double med = pct(ms, problems, 50), p90 = pct(ms, problems, 90), worst = ms[problems - 1];
        printf("  %-10s %9.2f %9.2f %9.2f %5zu/%-3zu| %7.0f %7.0f %9.0f %7.0f\n",
               mode ? "discrete" : "certified", med, p90, worst, solved, problems,
               kb_median(it, problems), kb_median(nodes, problems), kb_median(states, problems),
               kb_median(edges, problems));
        free(ms);
        free(it);
        free(nodes);
        free(states);
        free(edges);
    }
    if (unix_path)
        over_socket(unix_path, &robot, &cell, q, problems, timeout, first_mode, last_mode);
    free(q);
    kb_scene_free(&cell);
    kb_robot_free(&robot);
    rp_store_free(st);
    return 0;
}
