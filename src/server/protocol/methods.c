/* SPDX-License-Identifier: MIT */
/*
 * The method table and the handlers that do not touch scenes: ping, hello,
 * stats, distance, violates_margin.  Scene handlers are in methods_scene.c.
 *
 * Adding a method: one row in rpd_methods (kept sorted by name), one handler,
 * one test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/persistence/durable.h"
#include "methods.h"
#include "util/names.h"
#include "server/notify/watch.h"
#include "server/replica/replica.h"
#include "server/core/log.h"
#include "scene/simd.h" /* hello: the sincos family and simd level */
#include "repose/tessellate.h"

/* ---- shared helpers -------------------------------------------------------- */

bool rpd_check_keys(rpd_req *req, const cJSON *params, const char *const *allowed)
{
    rp_codec_err ce;
    /* Every query takes min_revision too (the JSON-RPC layer reads it). */
    const char *with[64];
    if (req->query && params && cJSON_GetObjectItemCaseSensitive(params, "min_revision")) {
        size_t n = 0;
        while (allowed[n] && n < 62) {
            with[n] = allowed[n];
            n++;
        }
        with[n++] = "min_revision";
        with[n] = NULL;
        allowed = with;
    }
    if (params && !rp_codec_object_keys(params, "params", allowed, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

const cJSON *rpd_param(const cJSON *params, const char *key, char *path)
{
    rp_codec_path_key(path, "params", key);
    return cJSON_GetObjectItemCaseSensitive(params, key);
}

bool rpd_charge_work(rpd_req *req, uint64_t units)
{
    if (!rpd_work_fits(req, units))
        return false;
    req->line->work_left -= units;
    return true;
}

bool rpd_fail_work(rpd_req *req)
{
    rpd_core *core = req->core;
    if (core->light)
        core->light_overrun = true; /* tried on the loop: a worker runs it again */
    rpd_limit_id id = req->line->work_limit;
    return rpd_fail_limit(req, id,
                          id == RPD_LIMIT_max_loop_work ? core->limits.max_loop_work
                                                        : core->limits.max_request_work);
}

bool rpd_work_fits(rpd_req *req, uint64_t units)
{
    if (units <= req->line->work_left)
        return true;
    rpd_fail_work(req);
    rpd_format(req->err.message, sizeof req->err.message,
               "Limit exceeded: %s (max %llu work units per request line%s; this request "
               "needs about %llu): split it into smaller requests",
               rpd_limit_name(req->line->work_limit), (unsigned long long)req->err.max,
               req->line->work_limit == RPD_LIMIT_max_loop_work ? " on the event loop" : "",
               (unsigned long long)units);
    return false;
}

rp_work rpd_walk_meter(const rpd_req *req, uint64_t charged, double share)
{
    uint64_t left = req->line->work_left;
    uint64_t budget = left > UINT64_MAX - charged ? UINT64_MAX : left + charged;
    if (share < 1.0)
        budget = (uint64_t)((double)budget * share);
    rp_work w = {budget ? budget : 1, 0}; /* a limit of 0 would mean none */
    return w;
}

bool rpd_walk_settle(rpd_req *req, const rp_work *w, uint64_t charged, rp_status st)
{
    if (w->spent > charged) {
        uint64_t more = w->spent - charged;
        req->line->work_left = more < req->line->work_left ? req->line->work_left - more : 0;
    }
    if (st != RP_ERR_WORK)
        return st == RP_OK || rpd_fail_status(req, st);
    return rpd_walk_stopped(req, w, charged);
}

bool rpd_walk_stopped(rpd_req *req, const rp_work *w, uint64_t charged)
{
    rpd_fail_work(req);
    rpd_format(req->err.message, sizeof req->err.message,
               "Limit exceeded: %s (max %llu work units per request line%s): its tree walks "
               "were stopped after %llu units, past the estimate of %llu; split it into smaller "
               "requests or query fewer shapes at a time",
               rpd_limit_name(req->line->work_limit), (unsigned long long)req->err.max,
               req->line->work_limit == RPD_LIMIT_max_loop_work ? " on the event loop" : "",
               (unsigned long long)w->spent, (unsigned long long)charged);
    return false;
}

void rpd_write_deleted(rp_jw *w, const char *kind, const char *name, uint64_t revision)
{
    rp_jw_object_begin(w);
    rp_jw_key(w, kind);
    rp_jw_string(w, name);
    RP_JW_KEY(w, "deleted");
    rp_jw_bool(w, true);
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, revision);
    rp_jw_object_end(w);
}

uint64_t rpd_tree_depth(size_t n)
{
    uint64_t d = 0;
    while (n) {
        d++;
        n >>= 1;
    }
    return d;
}

/* Bytes left under w's limit. */
static size_t reply_room(const rp_jw *w)
{
    return w->len < w->limit ? w->limit - w->len : 0;
}

bool rpd_reply_fits(rpd_req *req, const rp_jw *w, uint64_t items, size_t min_bytes)
{
    if (items <= reply_room(w) / min_bytes)
        return true;
    return rpd_fail_limit(req, RPD_LIMIT_max_reply_bytes, req->core->limits.max_reply_bytes);
}

size_t rpd_max_pairs(const rp_jw *w)
{
    return reply_room(w) / RPD_MIN_PAIR_BYTES + 1;
}

/* ---- meta ------------------------------------------------------------------ */

static bool m_ping(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "pong");
    rp_jw_bool(w, true);
    rp_jw_object_end(w);
    return true;
}

/* --nats: the replica's state (null for a lone daemon), for hello and
 * stats (proto/PROTOCOL.md, Replication). */
static void write_replication(rp_jw *w, const rpd_core *c)
{
    if (!c->replica) {
        rp_jw_null(w);
        return;
    }
    rpd_replica_info info;
    rpd_replica_info_get(c->replica, &info);
    uint64_t last = info.stream_last > c->applied ? info.stream_last : c->applied;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "engine");
    rp_jw_string(w, "nats-jetstream");
    RP_JW_KEY(w, "store");
    rp_jw_string(w, info.store);
    RP_JW_KEY(w, "stream");
    rp_jw_string(w, info.stream);
    RP_JW_KEY(w, "copies");
    rp_jw_int(w, info.copies);
    RP_JW_KEY(w, "applied");
    rp_jw_uint(w, c->applied);
    RP_JW_KEY(w, "stream_last");
    rp_jw_uint(w, last);
    RP_JW_KEY(w, "lag");
    rp_jw_uint(w, last - c->applied);
    RP_JW_KEY(w, "connected");
    rp_jw_bool(w, info.connected);
    RP_JW_KEY(w, "proposed");
    rp_jw_uint(w, info.proposed);
    RP_JW_KEY(w, "publish_retries");
    rp_jw_uint(w, info.retried);
    RP_JW_KEY(w, "publish_failures");
    rp_jw_uint(w, info.published_failed);
    rp_jw_object_end(w);
}

static bool m_hello(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "server");
    rp_jw_string(w, "reposed");
    RP_JW_KEY(w, "version");
    rp_jw_string(w, RPD_VERSION);
    RP_JW_KEY(w, "protocol");
    rp_jw_int(w, RPD_PROTOCOL);
    RP_JW_KEY(w, "run_id");
    rp_jw_string(w, req->core->run_id);
    RP_JW_KEY(w, "methods");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rpd_method_count; i++)
        rp_jw_string(w, rpd_methods[i].name);
    rp_jw_array_end(w);
    RP_JW_KEY(w, "limits");
    rpd_limits_write(w, &req->core->limits);
    RP_JW_KEY(w, "durability");
    rp_jw_object_begin(w);
    const rpd_durable *d = req->core->durable;
    RP_JW_KEY(w, "data_dir");
    if (d)
        rp_jw_string(w, rpd_durable_dir(d));
    else
        rp_jw_null(w);
    RP_JW_KEY(w, "fsync");
    if (d)
        rp_jw_string(w, rpd_fsync_name(rpd_durable_policy(d)));
    else
        rp_jw_null(w);
    rp_jw_object_end(w);
    RP_JW_KEY(w, "replication");
    write_replication(w, req->core);
    /* How joint-space answers are computed on this host: two daemons give
     * the same bits when their sincos families agree (the simd level never
     * changes a result; docs/ARCHITECTURE.md, "Exact and fast"). */
    RP_JW_KEY(w, "kinematics");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "sincos");
    rp_jw_string(w, rp_sincos_family_());
    RP_JW_KEY(w, "simd");
    rp_jw_string(w, rp_simd_level_name_(rp_simd_level_()));
    rp_jw_object_end(w);
    rp_jw_object_end(w);
    return true;
}

static bool m_stats(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    rpd_core *c = req->core;
    const rpd_stats *s = &c->stats;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "uptime_s");
    rp_jw_double(w, (double)(rpd_now_ns() - c->start_ns) / 1e9);
    RP_JW_KEY(w, "connections");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "current");
    rp_jw_uint(w, s->conn_current);
    RP_JW_KEY(w, "total");
    rp_jw_uint(w, s->conn_total);
    RP_JW_KEY(w, "rejected");
    rp_jw_uint(w, s->conn_rejected);
    RP_JW_KEY(w, "tcp");
    rp_jw_uint(w, s->conn_tcp);
    RP_JW_KEY(w, "unix");
    rp_jw_uint(w, s->conn_unix);
    RP_JW_KEY(w, "http_rejected");
    rp_jw_uint(w, s->http_rejected);
    rp_jw_object_end(w);

    RP_JW_KEY(w, "requests");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "total");
    rp_jw_uint(w, s->requests);
    RP_JW_KEY(w, "errors");
    rp_jw_uint(w, s->errors);
    RP_JW_KEY(w, "notifications");
    rp_jw_uint(w, s->notifications);
    RP_JW_KEY(w, "batches");
    rp_jw_uint(w, s->batches);
    RP_JW_KEY(w, "by_method");
    rp_jw_object_begin(w);
    for (size_t i = 0; i < rpd_method_count; i++) {
        if (s->by_method[i]) {
            rp_jw_key(w, rpd_methods[i].name);
            rp_jw_uint(w, s->by_method[i]);
        }
    }
    rp_jw_object_end(w);
    RP_JW_KEY(w, "time_us_by_method");
    rp_jw_object_begin(w);
    for (size_t i = 0; i < rpd_method_count; i++) {
        if (s->method_timed[i]) {
            rp_jw_key(w, rpd_methods[i].name);
            rp_jw_double(w, (double)s->method_ns[i] / (double)s->method_timed[i] / 1e3);
        }
    }
    rp_jw_object_end(w);
    RP_JW_KEY(w, "errors_by_code");
    rp_jw_object_begin(w);
    for (int i = 0; i < RPD_STATS_CODE_SLOTS; i++) {
        if (s->errors_by_code[i]) {
            char code[16];
            snprintf(code, sizeof code, "%d", rpd_stats_slot_code(i));
            rp_jw_key(w, i == RPD_STATS_OTHER_SLOT ? "other" : code);
            rp_jw_uint(w, s->errors_by_code[i]);
        }
    }
    rp_jw_object_end(w);
    rp_jw_object_end(w);

    RP_JW_KEY(w, "limits_hit");
    rp_jw_object_begin(w);
    for (int i = 0; i < RPD_LIMIT_COUNT; i++) {
        rp_jw_key(w, rpd_limit_name((rpd_limit_id)i));
        /* Watchers falling behind are counted by the watch code. */
        rp_jw_uint(w, s->limits_hit[i] +
                          (i == RPD_LIMIT_watch_buffer_bytes ? rpd_watch_overruns(c->watch) : 0));
    }
    rp_jw_object_end(w);
    RP_JW_KEY(w, "scenes");
    rp_jw_uint(w, rp_store_scene_count(c->store));
    RP_JW_KEY(w, "models");
    rp_jw_uint(w, rp_store_model_count(c->store));
    RP_JW_KEY(w, "shapes");
    rp_jw_uint(w, rp_store_shape_count(c->store));
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, rp_store_revision(c->store));
    RP_JW_KEY(w, "watches");
    rp_jw_uint(w, rpd_watch_count(c->watch));
    RP_JW_KEY(w, "tree_rebuilds");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "installed");
    rp_jw_uint(w, s->rebuilds_installed);
    RP_JW_KEY(w, "dropped");
    rp_jw_uint(w, s->rebuilds_dropped);
    rp_jw_object_end(w);
    RP_JW_KEY(w, "plans");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "total");
    rp_jw_uint(w, s->plans);
    RP_JW_KEY(w, "solved");
    rp_jw_uint(w, s->plans_solved);
    RP_JW_KEY(w, "timeouts");
    rp_jw_uint(w, s->plans_timeout);
    RP_JW_KEY(w, "stopped");
    rp_jw_uint(w, s->plans_stopped);
    RP_JW_KEY(w, "ms");
    rp_jw_double(w, (double)s->plan_us / 1e3);
    rp_jw_object_end(w);
    RP_JW_KEY(w, "memory");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "store_bytes");
    rp_jw_uint(w, rp_store_memory(c->store));
    RP_JW_KEY(w, "watch_history_bytes");
    rp_jw_uint(w, rpd_watch_history_bytes(c->watch));
    /* Unsent replies and notifications of all connections, now and at
     * most so far (max_output_bytes caps it). */
    RP_JW_KEY(w, "output_bytes");
    rp_jw_uint(w, c->output_bytes);
    RP_JW_KEY(w, "output_peak_bytes");
    rp_jw_uint(w, c->output_peak);
    rp_jw_object_end(w);
    RP_JW_KEY(w, "latency_us");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "p50");
    rp_jw_double(w, (double)rpd_stats_quantile(s, 0.50) / 1e3);
    RP_JW_KEY(w, "p99");
    rp_jw_double(w, (double)rpd_stats_quantile(s, 0.99) / 1e3);
    rp_jw_object_end(w);
    /* With --data-dir: the journal (null when memory only). */
    RP_JW_KEY(w, "durability");
    if (c->durable) {
        rpd_durable_stats ds;
        rpd_durable_stats_get(c->durable, &ds);
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "journal_bytes");
        rp_jw_uint(w, ds.journal_bytes);
        RP_JW_KEY(w, "journal_records");
        rp_jw_uint(w, ds.journal_records);
        RP_JW_KEY(w, "fsyncs");
        rp_jw_uint(w, ds.fsyncs);
        RP_JW_KEY(w, "fsync_us");
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "p50");
        rp_jw_uint(w, ds.fsync_p50_us);
        RP_JW_KEY(w, "p99");
        rp_jw_uint(w, ds.fsync_p99_us);
        rp_jw_object_end(w);
        RP_JW_KEY(w, "write_errors");
        rp_jw_uint(w, ds.write_errors);
        RP_JW_KEY(w, "failing");
        rp_jw_bool(w, ds.failing);
        RP_JW_KEY(w, "snapshot");
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "revision");
        rp_jw_uint(w, ds.snapshot_revision);
        RP_JW_KEY(w, "bytes");
        rp_jw_uint(w, ds.snapshot_bytes);
        RP_JW_KEY(w, "unix_ms");
        rp_jw_uint(w, ds.snapshot_unix_ms);
        RP_JW_KEY(w, "ms");
        rp_jw_uint(w, ds.snapshot_ms);
        rp_jw_object_end(w);
        rp_jw_object_end(w);
    } else {
        rp_jw_null(w);
    }
    RP_JW_KEY(w, "replication");
    write_replication(w, c);
    rp_jw_object_end(w);
    return true;
}

/* Compares a candidate token with the server's in time that depends only on
 * the server token's length, never on where the first difference is. */
static bool token_matches(const char *want, size_t want_len, const char *got, size_t got_len)
{
    unsigned char diff = (unsigned char)(got_len != want_len);
    for (size_t i = 0; i < want_len; i++) {
        unsigned char g = i < got_len ? (unsigned char)got[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)want[i]);
    }
    return diff == 0;
}

static bool m_auth(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"token", NULL};
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const char *token;
    if (!rpd_check_keys(req, params, keys))
        return false;
    const cJSON *tj = rpd_param(params, "token", path);
    if (!rp_codec_string(tj, path, &token, &ce))
        return rpd_fail_params(req, &ce);
    const rpd_core *core = req->core;
    if (core->token && !token_matches(core->token, core->token_len, token, strlen(token))) {
        /* A wrong token ends an earlier authorisation too: a session is
         * authorised by its last auth, never by an older one. */
        req->session->authed = false;
        return rpd_fail(req, RPD_UNAUTHORIZED, "Unauthorized: wrong token");
    }
    req->session->authed = true;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "ok");
    rp_jw_bool(w, true);
    rp_jw_object_end(w);
    return true;
}

/* ---- geometry -------------------------------------------------------------- */

bool rpd_shape_param(rpd_req *req, const cJSON *params, const char *key, rp_shape *out)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const cJSON *j = rpd_param(params, key, path);
    if (!rp_codec_shape(j, path, out, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

bool rpd_optional_bool(rpd_req *req, const cJSON *params, const char *key, bool dflt, bool *out)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const cJSON *j = rpd_param(params, key, path);
    *out = dflt;
    if (j && !rp_codec_bool(j, path, out, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

bool rpd_number_param(rpd_req *req, const cJSON *params, const char *key, double *out)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const cJSON *j = rpd_param(params, key, path);
    if (!rp_codec_number(j, path, out, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

static bool m_distance(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"a", "b", "witness", NULL};
    rp_shape a, b;
    bool witness;
    if (!rpd_check_keys(req, params, keys) || !rpd_shape_param(req, params, "a", &a) ||
        !rpd_shape_param(req, params, "b", &b) ||
        !rpd_optional_bool(req, params, "witness", false, &witness))
        return false;
    rp_jw_object_begin(w);
    if (witness) {
        rp_contact c = rp_shape_contact(&a, &b);
        /* Print signed zeros of the mirrored normal as plain 0. */
        c.normal.x += 0.0, c.normal.y += 0.0, c.normal.z += 0.0;
        RP_JW_KEY(w, "distance");
        rp_jw_double(w, c.distance);
        RP_JW_KEY(w, "point_a");
        rp_jw_vec3(w, c.point_a);
        RP_JW_KEY(w, "point_b");
        rp_jw_vec3(w, c.point_b);
        RP_JW_KEY(w, "normal");
        rp_jw_vec3(w, c.normal);
    } else {
        RP_JW_KEY(w, "distance");
        rp_jw_double(w, rp_shape_signed_distance(&a, &b));
    }
    rp_jw_object_end(w);
    return true;
}

static bool m_violates_margin(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"a", "b", "margin", NULL};
    rp_shape a, b;
    double margin;
    if (!rpd_check_keys(req, params, keys) || !rpd_shape_param(req, params, "a", &a) ||
        !rpd_shape_param(req, params, "b", &b) || !rpd_number_param(req, params, "margin", &margin))
        return false;
    double d = rp_shape_signed_distance(&a, &b);
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "violates");
    rp_jw_bool(w, d < margin);
    RP_JW_KEY(w, "distance");
    rp_jw_double(w, d);
    rp_jw_object_end(w);
    return true;
}

/* save: a snapshot now (blocking the event loop while it is written, as
 * Redis's SAVE), and the journal starts again from it. */
static bool m_save(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    rpd_durable *d = req->core->durable;
    if (!d)
        return rpd_fail_storage(req, "no --data-dir: the store lives in memory only");
    if (rpd_durable_session_waits(d, req->session))
        return rpd_fail_storage(req, "this connection's mutations are waiting for their fsync "
                                     "(--fsync always); send save after their replies");
    char why[400];
    if (rpd_durable_save(d, req->core->store, why, sizeof why) != 0)
        return rpd_fail_storage(req, "%s", why);
    rpd_durable_stats ds;
    rpd_durable_stats_get(d, &ds);
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, ds.snapshot_revision);
    RP_JW_KEY(w, "bytes");
    rp_jw_uint(w, ds.snapshot_bytes);
    RP_JW_KEY(w, "ms");
    rp_jw_uint(w, ds.snapshot_ms);
    rp_jw_object_end(w);
    return true;
}

/* tessellation: the unit templates every drawing of the shapes places
 * (include/repose/tessellate.h; proto/PROTOCOL.md, tessellation). */
static bool tess_resolution(rpd_req *req, const cJSON *params, const char *key, int lo, int hi,
                            int *out)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!j)
        return true;
    /* (the range first: casting a huge double to int is undefined) */
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= lo && j->valuedouble <= hi) ||
        j->valuedouble != (double)(int)j->valuedouble) {
        char path[64], reason[80];
        snprintf(path, sizeof path, "params.%s", key);
        snprintf(reason, sizeof reason, "must be an integer from %d to %d", lo, hi);
        return rpd_fail_path(req, path, reason);
    }
    *out = (int)j->valuedouble;
    return true;
}

/* rows of three numbers under key: from p (doubles) or, when p is NULL, t */
static void tess_rows(rp_jw *w, const char *key, const double *p, const uint32_t *t, size_t n)
{
    rp_jw_key(w, key);
    rp_jw_array_begin(w);
    for (size_t k = 0; k < 3 * n && !rp_jw_failed(w); k += 3) {
        rp_jw_array_begin(w);
        for (size_t j = k; j < k + 3; j++)
            if (p)
                rp_jw_double(w, p[j]);
            else
                rp_jw_uint(w, t[j]);
        rp_jw_array_end(w);
    }
    rp_jw_array_end(w);
}

/* key: {corners, normals, triangles}: the box or the square template */
static void tess_flat(rp_jw *w, const char *key, const double *corner, const double *normal,
                      size_t nv, const uint32_t *tri, size_t nt)
{
    rp_jw_key(w, key);
    rp_jw_object_begin(w);
    tess_rows(w, "corners", corner, NULL, nv);
    tess_rows(w, "normals", normal, NULL, nv);
    tess_rows(w, "triangles", NULL, tri, nt);
    rp_jw_object_end(w);
}

static bool m_tessellation(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"segments", "rings", NULL};
    int segments = RP_TESS_SEGMENTS, rings = RP_TESS_RINGS;
    if (!rpd_check_keys(req, params, keys) ||
        !tess_resolution(req, params, "segments", RP_TESS_SEGMENTS_MIN, RP_TESS_SEGMENTS_MAX,
                         &segments) ||
        !tess_resolution(req, params, "rings", RP_TESS_RINGS_MIN, RP_TESS_RINGS_MAX, &rings))
        return false;
    size_t nv = rp_tess_round_vertices(segments, rings);
    size_t nt = rp_tess_round_triangles(segments, rings);
    double *dir = malloc(nv * 3 * sizeof *dir);
    uint8_t *end = malloc(nv);
    uint32_t *tri = malloc(nt * 3 * sizeof *tri);
    if (!dir || !end || !tri) {
        free(dir);
        free(end);
        free(tri);
        return rpd_fail(req, RPD_INTERNAL_ERROR, "Internal error: out of memory");
    }
    rp_tess_round(segments, rings, dir, end, tri);
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "round");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "segments");
    rp_jw_int(w, segments);
    RP_JW_KEY(w, "rings");
    rp_jw_int(w, rings);
    tess_rows(w, "directions", dir, NULL, nv);
    RP_JW_KEY(w, "ends");
    rp_jw_array_begin(w);
    for (size_t k = 0; k < nv; k++)
        rp_jw_int(w, end[k]);
    rp_jw_array_end(w);
    tess_rows(w, "triangles", NULL, tri, nt);
    rp_jw_object_end(w);
    free(dir);
    free(end);
    free(tri);

    double corner[RP_TESS_BOX_VERTICES * 3], normal[RP_TESS_BOX_VERTICES * 3];
    uint32_t t[RP_TESS_BOX_TRIANGLES * 3];
    rp_tess_box(corner, normal, t);
    tess_flat(w, "box", corner, normal, RP_TESS_BOX_VERTICES, t, RP_TESS_BOX_TRIANGLES);
    rp_tess_square(corner, normal, t);
    tess_flat(w, "square", corner, normal, RP_TESS_SQUARE_VERTICES, t, RP_TESS_SQUARE_TRIANGLES);
    rp_jw_object_end(w);
    return true;
}

/* ---- the table -------------------------------------------------------------- */

const rpd_method rpd_methods[] = {
    /* Sorted by name (strcmp): rpd_method_find does a binary search. */
    {"auth", m_auth, RPD_METHOD_NOAUTH},
    {"check", rpd_m_check, RPD_METHOD_WORKER},
    {"check.batch", rpd_m_check_batch, RPD_METHOD_WORKER},
    {"check.motion", rpd_m_check_motion, RPD_METHOD_WORKER},
    {"distance", m_distance, 0},
    {"hello", m_hello, RPD_METHOD_NOAUTH},
    {"model.delete", rpd_m_model_delete, RPD_METHOD_MUTATES},
    {"model.fk", rpd_m_model_fk, 0},
    {"model.get", rpd_m_model_get, RPD_METHOD_WORKER},
    {"model.list", rpd_m_model_list, RPD_METHOD_WORKER},
    {"model.put", rpd_m_model_put, RPD_METHOD_MUTATES},
    {"ping", m_ping, RPD_METHOD_NOAUTH},
    {"plan", rpd_m_plan, RPD_METHOD_WORKER},
    {"save", m_save, 0},
    {"scene.attach", rpd_m_scene_attach, RPD_METHOD_MUTATES},
    {"scene.check", rpd_m_scene_check, RPD_METHOD_WORKER},
    {"scene.create", rpd_m_scene_create, RPD_METHOD_MUTATES},
    {"scene.delete", rpd_m_scene_delete, RPD_METHOD_MUTATES},
    {"scene.detach", rpd_m_scene_detach, RPD_METHOD_MUTATES},
    {"scene.distance", rpd_m_scene_distance, RPD_METHOD_WORKER},
    {"scene.get", rpd_m_scene_get, RPD_METHOD_WORKER},
    {"scene.list", rpd_m_scene_list, RPD_METHOD_WORKER},
    {"scene.move", rpd_m_scene_move, RPD_METHOD_MUTATES},
    {"scene.put", rpd_m_scene_put, RPD_METHOD_MUTATES},
    {"scene.remove", rpd_m_scene_remove, RPD_METHOD_MUTATES},
    {"scene.replace", rpd_m_scene_replace, RPD_METHOD_MUTATES},
    {"scene.unwatch", rpd_m_scene_unwatch, 0},
    {"scene.watch", rpd_m_scene_watch, 0},
    {"stats", m_stats, 0},
    {"tessellation", m_tessellation, RPD_METHOD_WORKER},
    {"violates_margin", m_violates_margin, 0},
};
const size_t rpd_method_count = sizeof rpd_methods / sizeof rpd_methods[0];

const rpd_method *rpd_method_find(const char *name, size_t *index)
{
    size_t lo = 0, hi = rpd_method_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = rpd_name_cmp(rpd_methods[mid].name, name);
        if (c == 0) {
            *index = mid;
            return &rpd_methods[mid];
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A stream message or journal record through its method's handler, as a
 * request acknowledged once (every limit lifted).  With out, the reply to
 * request `id` (JSON text) is written there, a line of its own. */
static bool apply(rpd_core *core, const char *method, const char *json, size_t len, const char *id,
                  rp_jw *out, char *why, size_t cap)
{
    size_t index;
    const rpd_method *m = rpd_method_find(method, &index);
    if (!m || !(m->flags & RPD_METHOD_MUTATES)) {
        snprintf(why, cap, "not a mutation");
        return false;
    }
    cJSON *params = cJSON_ParseWithLength(json, len);
    if (!params || !cJSON_IsObject(params)) {
        cJSON_Delete(params);
        snprintf(why, cap, "%s: params are not a JSON object", method);
        return false;
    }
    cJSON *id_json = id ? cJSON_Parse(id) : NULL;
    rpd_session session;
    memset(&session, 0, sizeof session);
    rpd_req req;
    memset(&req, 0, sizeof req);
    rpd_line line = {UINT64_MAX, RPD_LIMIT_max_request_work, NULL, false};
    req.core = core;
    req.session = &session;
    req.line = &line;
    rp_jw w;
    rp_jw_init(&w);
    bool was = core->applying;
    core->applying = true;
    if (out && id_json) {
        rpd_write_envelope(&w, id_json, false);
        if (!rp_jw_reserve(&w, 512))
            w.oom = true;
    }
    /* A replica's stream message, with a data directory: its record goes
     * to the journal as any request's (a journal replay, before the
     * replica exists, writes none). */
    bool journal = core->durable && core->replica;
    char jwhy[RP_CODEC_REASON_MAX];
    int jerr = journal ? rpd_durable_begin(core->durable, jwhy, sizeof jwhy) : 0;
    if (jerr)
        rpd_fail_storage(&req, "%s", jerr == ENOMEM ? "out of memory" : jwhy);
    bool ok = !jerr && !w.oom && m->handler(&req, params, &w);
    if (journal && !jerr)
        rpd_durable_end(core->durable, &session);
    core->applying = was;
    if (!ok && core->replica && req.err.code == RPD_STORAGE) {
        /* Stopped by a replica's data directory (its journal could not be
         * written): applying the stream without it would leave the cache
         * behind the store, and the next start would replay a journal with
         * a hole.  Stop instead; the stream keeps everything. */
        rpd_log(RPD_LOG_ERROR,
                "replication: %s; stopping (the stream keeps every mutation: fix "
                "the data directory or start without it)",
                req.err.message);
        exit(1);
    }
    if (out && id_json) {
        if (ok) {
            rp_jw_object_end(&w);
            rp_jw_raw(out, w.buf, w.len);
        } else {
            if (w.oom && !req.err.code)
                rpd_fail(&req, RPD_INTERNAL_ERROR, "Internal error: out of memory");
            rpd_write_error(core, out, id_json, &req.err);
        }
        rp_jw_end_line(out);
    }
    rp_jw_free(&w);
    cJSON_Delete(params);
    cJSON_Delete(id_json);
    if (!ok)
        snprintf(why, cap, "%s does not apply: %s", method, req.err.message);
    return ok;
}

bool rpd_apply_record(rpd_core *core, const char *method, const char *json, size_t len, char *why,
                      size_t cap)
{
    return apply(core, method, json, len, NULL, NULL, why, cap);
}

bool rpd_apply_message(rpd_core *core, uint64_t seq, const char *method, const char *json,
                       size_t len, const char *id, rp_jw *out, char *why, size_t cap)
{
    /* The mutation takes revision seq (a message that does not apply
     * takes none: revisions then skip its sequence). */
    if (rp_store_revision(core->store) < seq - 1)
        rp_store_set_revision(core->store, seq - 1);
    bool ok = method ? apply(core, method, json, len, id, out, why, cap)
                     : (snprintf(why, cap, "the message names no method"), false);
    if (!ok && out && id && !method) {
        rpd_req req;
        memset(&req, 0, sizeof req);
        req.core = core;
        rpd_fail(&req, RPD_INTERNAL_ERROR, "Internal error: %s", why);
        cJSON *id_json = cJSON_Parse(id);
        rpd_write_error(core, out, id_json, &req.err);
        rp_jw_end_line(out);
        cJSON_Delete(id_json);
    }
    core->applied = seq;
    return ok;
}

const char *rpd_method_suggest(const char *name)
{
    size_t best = SIZE_MAX, at = 0;
    for (size_t i = 0; i < rpd_method_count; i++) {
        size_t d = rp_name_distance(name, rpd_methods[i].name);
        if (d < best) {
            best = d;
            at = i;
        }
    }
    return rp_name_is_near(best, strlen(name)) ? rpd_methods[at].name : NULL;
}
