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
 *     plan_bench [--problems N] [--seed S] [--timeout-ms T] [--nn]
 *
 * For certified and discrete edges, prints the median, p90 and worst time
 * of a solve, the success rate within the timeout, and the median
 * iterations, nodes, states and edges checked.  --nn prints the nearest
 * neighbour structure's cost per query at 1k, 10k and 100k points of the
 * arm's joint space.  Figures only: nothing is asserted.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin_common.h"
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

int main(int argc, char **argv)
{
    size_t problems = 20;
    uint64_t seed = 20261205;
    double timeout = 1000;
    bool nn = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--problems") && i + 1 < argc)
            problems = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = (uint64_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc)
            timeout = atof(argv[++i]);
        else if (!strcmp(argv[i], "--nn"))
            nn = true;
        else
            kb_die("usage: plan_bench [--problems N] [--seed S] [--timeout-ms T] [--nn]");
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
    printf("plan_bench: arm7 (%zu joints, %zu shapes) in the 20-box cell; %zu problems (seed "
           "%llu), timeout %.0f ms, in process\n",
           dof, rp_model_link_count(robot.model), problems, (unsigned long long)seed, timeout);
    printf("  %-10s %9s %9s %9s %8s | %7s %7s %9s %7s\n", "edges", "median_ms", "p90_ms",
           "worst_ms", "solved", "iters", "nodes", "states", "edges");
    for (int mode = 0; mode < 2; mode++) {
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
            o.simplify = getenv("NOSIMP") == NULL;
            if (getenv("RANGE"))
                o.range = atof(getenv("RANGE"));
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
    free(q);
    kb_scene_free(&cell);
    kb_robot_free(&robot);
    rp_store_free(st);
    return 0;
}
