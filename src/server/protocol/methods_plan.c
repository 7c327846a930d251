/* SPDX-License-Identifier: MIT */
/*
 * plan (proto/PROTOCOL.md, Planning): rp_model_plan on a worker, against
 * the store snapshot the line was read with, so the whole plan sees one
 * version of the scene.  It stops at its timeout (at most --max-plan-ms:
 * a plan is priced by its time) or as soon as its client has gone
 * (client_gone, polled between edges): no work outlives the one who asked.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check_setup.h"
#include "methods.h"
#include "repose/plan.h"

/* The longest a plan may run on the event loop, in milliseconds. */
#define RPD_LOOP_PLAN_MS 100.0

/* The stop callback of a plan on a worker. */
typedef struct gone_probe {
    const rpd_core *core;
    unsigned calls;
} gone_probe;

/* Whether the client that asked has gone: the event loop saw its
 * connection close, or (every 32 calls: a system call each) its socket
 * reports that the peer hung up or shut down its sending side.  A plan is
 * to be sent on a connection kept open until its reply (proto/PROTOCOL.md,
 * Planning): the event loop does not read a connection while a worker
 * runs its line, so the socket itself is asked. */
static int client_gone(void *ctx)
{
    gone_probe *g = ctx;
    if (g->core->client_gone && atomic_load_explicit(g->core->client_gone, memory_order_relaxed))
        return 1;
    if (g->core->client_fd < 0 || g->calls++ % 32 != 0)
        return 0;
    struct pollfd p = {.fd = g->core->client_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* params.goal or params.goals (exactly one of them): *n joint vectors into
 * q (malloc'ed). */
static bool decode_goals(rpd_req *req, const cJSON *params, const rp_model *m, double **q,
                         size_t *n)
{
    char gpath[RP_CODEC_PATH_MAX], spath[RP_CODEC_PATH_MAX];
    const cJSON *g = rpd_param(params, "goal", gpath);
    const cJSON *gs = rpd_param(params, "goals", spath);
    size_t dof = rp_model_dof(m), d1 = dof ? dof : 1;
    *q = NULL;
    *n = 0;
    if (g && gs)
        return rpd_fail_path(req, spath, "must not be given with goal (one or the other)");
    if (!g && !gs)
        return rpd_fail_path(req, gpath, "is required (or goals: a list of joint vectors)");
    if (gs && (!cJSON_IsArray(gs) || cJSON_GetArraySize(gs) < 1))
        return rpd_fail_path(req, spath, "must be a non-empty array of joint vectors");
    size_t count = g ? 1 : (size_t)cJSON_GetArraySize(gs);
    if (count > req->core->limits.max_batch_configurations)
        return rpd_fail_limit(req, RPD_LIMIT_max_batch_configurations,
                              req->core->limits.max_batch_configurations);
    *q = malloc(count * d1 * sizeof **q);
    if (!*q)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    if (g) {
        *n = 1;
        return rpd_decode_joint_vector(req, m, g, gpath, *q);
    }
    size_t k = 0;
    for (const cJSON *c = gs->child; c; c = c->next, k++) {
        char cp[RP_CODEC_PATH_MAX];
        if (!rpd_decode_joint_vector(req, m, c, rp_codec_path_index(cp, spath, k), *q + k * d1))
            return false;
    }
    *n = count;
    return true;
}

/* An optional number > 0 (or >= 0 when zero_ok) at params.key. */
static bool optional_positive(rpd_req *req, const cJSON *params, const char *key, bool zero_ok,
                              const char *what, double *out)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const cJSON *j = rpd_param(params, key, path);
    if (!j)
        return true;
    if (!rp_codec_number(j, path, out, &ce) || !(zero_ok ? *out >= 0 : *out > 0) || !isfinite(*out))
        return rpd_fail_path(req, path, what);
    return true;
}

/* Why a plan found no path, as the protocol names it. */
static const char *reason_name(rp_plan_outcome o)
{
    switch (o) {
    case RP_PLAN_START_INVALID:
        return "start_invalid";
    case RP_PLAN_GOAL_INVALID:
        return "goal_invalid";
    case RP_PLAN_TIMEOUT:
        return "timeout";
    case RP_PLAN_MAX_STATES:
        return "max_states";
    default:
        return "stopped";
    }
}

/* The violation of an invalid start or goal q, as `check` reports one. */
static void write_violation(rp_jw *w, const check_setup *cs, const rp_plan_result *r,
                            const double *q)
{
    RP_JW_KEY(w, "violation");
    rp_jw_object_begin(w);
    if (r->limits) {
        RP_JW_KEY(w, "kind");
        rp_jw_string(w, "limits");
        rpd_write_limits(w, cs->model, q);
    } else {
        rpd_write_pair_members(w, cs, &r->pair, true);
    }
    rp_jw_object_end(w);
}

bool rpd_m_plan(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {
        "model",      "scene",     "start",    "goal",     "goals",         "planner", "edges",
        "resolution", "tolerance", "margin",   "attached", "allowed_scene", "ignore",  "base",
        "timeout_ms", "seed",      "simplify", "max_step", "range",         "group",   NULL};
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    if (!rpd_check_keys(req, params, keys))
        return false;
    rp_plan_opts po;
    rp_plan_opts_init(&po);
    const cJSON *pj = rpd_param(params, "planner", path);
    if (pj) {
        const char *name;
        if (!rp_codec_string(pj, path, &name, &ce))
            return rpd_fail_params(req, &ce);
        if (strcmp(name, "rrt_connect") != 0)
            return rpd_fail_path(req, path, "must be \"rrt_connect\"");
    }
    const cJSON *ej = rpd_param(params, "edges", path);
    if (ej) {
        const char *e;
        if (!rp_codec_string(ej, path, &e, &ce))
            return rpd_fail_params(req, &ce);
        if (strcmp(e, "discrete") == 0)
            po.edges = RP_MOTION_DISCRETE;
        else if (strcmp(e, "certified") != 0)
            return rpd_fail_path(req, path, "must be \"certified\" or \"discrete\"");
    }
    char rpath[RP_CODEC_PATH_MAX], tpath[RP_CODEC_PATH_MAX];
    if (rpd_param(params, "resolution", rpath) && po.edges != RP_MOTION_DISCRETE)
        return rpd_fail_path(req, rpath, "only for edges \"discrete\"");
    if (rpd_param(params, "tolerance", tpath) && po.edges != RP_MOTION_CERTIFIED)
        return rpd_fail_path(req, tpath, "only for edges \"certified\"");
    double max_ms = (double)req->core->limits.max_plan_ms;
    double timeout = max_ms < 1000.0 ? max_ms : 1000.0;
    if (!optional_positive(req, params, "resolution", false,
                           "must be a number > 0 (radians or metres)", &po.resolution) ||
        !optional_positive(req, params, "tolerance", false, "must be a number > 0 (metres)",
                           &po.tolerance) ||
        !optional_positive(req, params, "max_step", false,
                           "must be a number > 0 (radians or metres)", &po.max_step) ||
        !optional_positive(req, params, "range", false,
                           "must be a number > 0 (the joint-space distance of one extension)",
                           &po.range) ||
        !optional_positive(req, params, "timeout_ms", false, "must be a number > 0", &timeout))
        return false;
    if (timeout > max_ms) {
        rpd_param(params, "timeout_ms", path);
        char reason[RP_CODEC_REASON_MAX];
        rpd_format(reason, sizeof reason, "must be at most %.0f (the server's --max-plan-ms)",
                   max_ms);
        return rpd_fail_path(req, path, reason);
    }
    /* On the event loop (--threads 0, or a batch that also holds a
     * mutation) a plan holds every client: a tenth of a second at most. */
    if (!req->core->worker && timeout > RPD_LOOP_PLAN_MS)
        timeout = RPD_LOOP_PLAN_MS;
    po.timeout_ms = timeout;
    const cJSON *sj = rpd_param(params, "seed", path);
    if (sj) {
        double seed;
        if (!rp_codec_number(sj, path, &seed, &ce) || !(seed >= 0) || seed != floor(seed) ||
            seed > 9007199254740992.0)
            return rpd_fail_path(req, path, "must be an integer from 0 to 2^53");
        po.seed = (uint64_t)seed;
    }
    if (!rpd_optional_bool(req, params, "simplify", true, &po.simplify))
        return false;

    check_setup cs;
    if (!rpd_check_setup(req, params, "params.start", &cs)) {
        rpd_check_setup_free(&cs);
        return false;
    }
    po.has_margin = cs.opts.has_margin;
    po.margin = cs.opts.margin;
    po.ignore = cs.opts.ignore;
    po.n_ignore = cs.opts.n_ignore;
    const rp_model *m = cs.model;
    size_t dof = rp_model_dof(m), d1 = dof ? dof : 1;
    double *start = malloc(d1 * sizeof *start), *goals = NULL;
    size_t n_goals = 0;
    bool ok = start != NULL;
    if (!ok)
        ok = rpd_fail_status(req, RP_ERR_NOMEM);
    const cJSON *stj = ok ? rpd_param(params, "start", path) : NULL;
    if (ok && !stj)
        ok = rpd_fail_path(req, path, "is required");
    if (ok)
        ok = rpd_decode_joint_vector(req, m, stj, path, start);
    if (ok)
        ok = decode_goals(req, params, m, &goals, &n_goals);
    /* params.group: the other joints stay where the start has them. */
    bool *frozen = NULL;
    if (ok && req->group_dofs) {
        frozen = malloc(d1 * sizeof *frozen);
        if (!frozen)
            ok = rpd_fail_status(req, RP_ERR_NOMEM);
        for (size_t d = 0; ok && d < dof; d++)
            frozen[d] = true;
        for (size_t i = 0; ok && i < req->n_group_dofs; i++)
            frozen[req->group_dofs[i]] = false;
        for (size_t g = 0; ok && g < n_goals; g++)
            for (size_t d = 0; ok && d < dof; d++)
                if (frozen[d] && goals[g * d1 + d] != start[d]) {
                    char reason[RP_CODEC_REASON_MAX];
                    rpd_format(reason, sizeof reason,
                               "moves joint %.60s, which group %.60s does not hold, away from "
                               "the start's value",
                               rp_model_dof_name(m, d), req->group);
                    ok = rpd_fail_path(
                        req, rpd_param(params, "goal", path) ? "params.goal" : "params.goals",
                        reason);
                }
        po.frozen = frozen;
    }
    char bpath[RP_CODEC_PATH_MAX];
    const cJSON *bj = rpd_param(params, "base", bpath);
    rp_transform base;
    if (ok && bj && !rp_codec_pose(bj, bpath, &base, &ce))
        ok = rpd_fail_params(req, &ce);
    if (ok && dof == 0)
        ok = rpd_fail_path(req, "params.start", "the model has no moving joint to plan for");
    /* A plan is priced by its time, not by states: its timeout (at most
     * --max-plan-ms) bounds it, checked between edges, and a worker is
     * what it holds meanwhile.  (The per-state estimate of check.motion
     * is an upper bound some twenty times a state's real cost for a robot
     * with self-collision pairs: as a state budget it stopped plans that
     * had time left.)  One state must still be affordable. */
    uint64_t per_state = rpd_check_cost(&cs) + dof + RPD_STATE_WORK;
    if (ok && req->line->work_left < per_state)
        ok = rpd_fail_work(req);
    rp_plan_result r;
    memset(&r, 0, sizeof r);
    if (ok) {
        rp_work meter = {0, 0}; /* (its walks unmetered: the timeout bounds them) */
        po.work = &meter;
        gone_probe probe = {req->core, 0};
        if (req->core->worker) {
            po.stop = client_gone;
            po.stop_ctx = &probe;
        }
        rp_status st =
            rp_model_plan(m, cs.scene, bj ? &base : NULL, start, goals, n_goals, &po, &r);
        rpd_stats *s = &req->core->stats;
        s->plans++;
        s->plan_us += (uint64_t)(r.ms * 1e3);
        if (st == RP_ERR_WORK) {
            ok = rpd_walk_settle(req, &meter, 0, st);
        } else if (st == RP_ERR_NONFINITE) {
            ok = rpd_fail_joint_range(req, "params.start");
        } else if (st == RP_ERR_LIMIT) {
            ok = rpd_fail_path(req, "params.max_step",
                               "would split the path into more than a million waypoints: give a "
                               "larger step");
        } else if (st == RP_ERR_INVALID_ARG) {
            ok = rpd_fail_path(req, "params.model",
                               "has a prismatic joint without limits: nowhere to sample it");
        } else if (st) {
            ok = rpd_fail_status(req, st);
        } else {
            s->plans_solved += r.outcome == RP_PLAN_SOLVED;
            s->plans_timeout += r.outcome == RP_PLAN_TIMEOUT;
            s->plans_stopped += r.outcome == RP_PLAN_STOPPED;
            req->line->work_left = 0; /* the line's budget went to the plan */
        }
    }
    if (ok) {
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "solved");
        rp_jw_bool(w, r.outcome == RP_PLAN_SOLVED);
        if (r.outcome == RP_PLAN_SOLVED) {
            RP_JW_KEY(w, "path");
            rp_jw_array_begin(w);
            for (size_t i = 0; i < r.n_points && !rp_jw_failed(w); i++) {
                rp_jw_array_begin(w);
                for (size_t d = 0; d < dof; d++)
                    rp_jw_double(w, r.path[i * dof + d]);
                rp_jw_array_end(w);
            }
            rp_jw_array_end(w);
            RP_JW_KEY(w, "goal_index");
            rp_jw_uint(w, r.goal);
        } else {
            RP_JW_KEY(w, "reason");
            rp_jw_string(w, reason_name(r.outcome));
            if (r.outcome == RP_PLAN_START_INVALID)
                write_violation(w, &cs, &r, start);
            if (r.outcome == RP_PLAN_GOAL_INVALID) {
                RP_JW_KEY(w, "goal_index");
                rp_jw_uint(w, r.goal);
                write_violation(w, &cs, &r, goals + r.goal * d1);
            }
        }
        RP_JW_KEY(w, "revision");
        if (cs.scene)
            rp_jw_uint(w, rp_scene_revision(cs.scene));
        else
            rp_jw_null(w);
        RP_JW_KEY(w, "stats");
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "ms");
        rp_jw_double(w, r.ms);
        RP_JW_KEY(w, "iterations");
        rp_jw_uint(w, r.iterations);
        RP_JW_KEY(w, "nodes");
        rp_jw_uint(w, r.nodes);
        RP_JW_KEY(w, "states_checked");
        rp_jw_uint(w, r.states_checked);
        RP_JW_KEY(w, "edges_checked");
        rp_jw_uint(w, r.edges_checked);
        rp_jw_object_end(w);
        rp_jw_object_end(w);
    }
    rp_plan_result_free(&r);
    free(start);
    free(goals);
    free(frozen);
    rpd_check_setup_free(&cs);
    return ok;
}
