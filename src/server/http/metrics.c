/* SPDX-License-Identifier: MIT */
/*
 * GET /metrics: the counters of `stats` (methods.c) in the Prometheus text
 * format.  Names follow Prometheus' conventions: a `repose_` prefix,
 * `_total` on counters, base units (seconds, bytes) in the name.
 */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "repose/scene.h"
#include "scene/simd.h"
#include "server/core/limits.h"
#include "server/notify/watch.h"
#include "server/persistence/durable.h"
#include "server/protocol/methods.h"
#include "server/replica/replica.h"

static void out(rp_jw *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void out(rp_jw *w, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        rp_jw_raw(w, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The HELP and TYPE lines of a family. */
static void family(rp_jw *w, const char *name, const char *type, const char *help)
{
    out(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(rp_jw *w, const char *name, const char *type, const char *help, double v)
{
    family(w, name, type, help);
    out(w, "%s %.17g\n", name, v);
}

/* The `code` label of error slot k: the JSON-RPC code, or "other". */
static const char *code_label(int k, char buf[16])
{
    if (k == RPD_STATS_OTHER_SLOT)
        return "other";
    snprintf(buf, 16, "%d", rpd_stats_slot_code(k));
    return buf;
}

/* Bucket edges of repose_request_duration_seconds, in seconds. */
static const double edges[] = {1e-5,   2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
                               2.5e-2, 5e-2,   0.1,  0.25, 0.5,    1.0,  2.5,  5.0,    10.0};

static void latency_histogram(rp_jw *w, const rpd_stats *s)
{
    family(w, "repose_request_duration_seconds", "histogram",
           "Time from a request line's arrival to its reply, one line in 8 sampled.");
    /* A log-linear bucket counts under an edge when its whole range is
     * at or below it. */
    int b = 0;
    uint64_t seen = 0;
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
        uint64_t ns = (uint64_t)(edges[e] * 1e9 + 0.5);
        while (b < RPD_LAT_BUCKETS && rpd_stats_bucket_upper(b) <= ns)
            seen += s->latency[b++];
        out(w, "repose_request_duration_seconds_bucket{le=\"%g\"} %llu\n", edges[e],
            (unsigned long long)seen);
    }
    out(w, "repose_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
        (unsigned long long)s->latency_count);
    out(w, "repose_request_duration_seconds_sum %.9f\n", (double)s->latency_sum_ns / 1e9);
    out(w, "repose_request_duration_seconds_count %llu\n", (unsigned long long)s->latency_count);
}

static void durability(rp_jw *w, const rpd_core *c)
{
    if (!c->durable)
        return;
    rpd_durable_stats ds;
    rpd_durable_stats_get(c->durable, &ds);
    one(w, "repose_journal_bytes", "gauge", "Bytes in the journal (--data-dir).",
        (double)ds.journal_bytes);
    one(w, "repose_journal_records", "gauge", "Records in the journal since the last snapshot.",
        (double)ds.journal_records);
    one(w, "repose_journal_fsyncs_total", "counter", "fsync calls on the journal.",
        (double)ds.fsyncs);
    one(w, "repose_journal_fsync_p50_seconds", "gauge", "Median fsync time of the journal.",
        (double)ds.fsync_p50_us / 1e6);
    one(w, "repose_journal_fsync_p99_seconds", "gauge",
        "99th percentile fsync time of the journal.", (double)ds.fsync_p99_us / 1e6);
    one(w, "repose_journal_write_errors_total", "counter", "Failed journal writes or fsyncs.",
        (double)ds.write_errors);
    one(w, "repose_journal_failing", "gauge",
        "1 while the journal cannot be written (mutations are refused).", ds.failing ? 1 : 0);
    one(w, "repose_snapshot_revision", "gauge", "Store revision of the last snapshot.",
        (double)ds.snapshot_revision);
    one(w, "repose_snapshot_bytes", "gauge", "Size of the last snapshot.",
        (double)ds.snapshot_bytes);
}

static void replication(rp_jw *w, const rpd_core *c)
{
    if (!c->replica)
        return;
    rpd_replica_info info;
    rpd_replica_info_get(c->replica, &info);
    uint64_t last = info.stream_last > c->applied ? info.stream_last : c->applied;
    one(w, "repose_replica_applied", "gauge", "Last stream sequence this replica applied.",
        (double)c->applied);
    one(w, "repose_replica_lag", "gauge", "Stream messages not applied yet.",
        (double)(last - c->applied));
    one(w, "repose_replica_connected", "gauge", "1 while connected to NATS.",
        info.connected ? 1 : 0);
    one(w, "repose_replica_proposed_total", "counter", "Mutations this replica published.",
        (double)info.proposed);
    one(w, "repose_replica_publish_retries_total", "counter", "Publications sent again.",
        (double)info.retried);
    one(w, "repose_replica_publish_failures_total", "counter", "Publications that failed.",
        (double)info.published_failed);
}

void rpd_metrics_write(const rpd_core *c, const rpd_metrics_extra *x, rp_jw *w)
{
    const rpd_stats *s = &c->stats;
    family(w, "repose_build_info", "gauge", "The daemon's version and kinematics.");
    out(w,
        "repose_build_info{version=\"%s\",protocol=\"%d\",sincos=\"%s\",simd=\"%s\"} "
        "1\n",
        RPD_VERSION, RPD_PROTOCOL, rp_sincos_family_(), rp_simd_level_name_(rp_simd_level_()));
    one(w, "repose_ready", "gauge", "1 when the daemon serves requests (GET /healthz).",
        x->ready ? 1 : 0);
    one(w, "repose_uptime_seconds", "gauge", "Time since the daemon started.",
        (double)(rpd_now_ns() - c->start_ns) / 1e9);

    family(w, "repose_connections", "gauge", "Open connections by transport.");
    /* (clamped: a bridge and its two connections come and go a moment apart) */
    uint64_t ws_tcp = x->ws_open < s->conn_tcp ? x->ws_open : s->conn_tcp;
    uint64_t ws_http = x->ws_open < x->http_open ? x->ws_open : x->http_open;
    out(w, "repose_connections{transport=\"tcp\"} %llu\n",
        (unsigned long long)(s->conn_tcp - ws_tcp));
    out(w, "repose_connections{transport=\"unix\"} %llu\n", (unsigned long long)s->conn_unix);
    out(w, "repose_connections{transport=\"http\"} %llu\n",
        (unsigned long long)(x->http_open - ws_http));
    out(w, "repose_connections{transport=\"ws\"} %llu\n", (unsigned long long)x->ws_open);
    family(w, "repose_connections_accepted_total", "counter", "Connections accepted.");
    out(w, "repose_connections_accepted_total{transport=\"socket\"} %llu\n",
        (unsigned long long)s->conn_total);
    out(w, "repose_connections_accepted_total{transport=\"http\"} %llu\n",
        (unsigned long long)x->http_total);
    one(w, "repose_connections_rejected_total", "counter",
        "Socket connections closed at once: over a connection limit.", (double)s->conn_rejected);
    one(w, "repose_http_on_socket_ports_total", "counter",
        "Socket connections closed for speaking HTTP to a JSON-RPC port.",
        (double)s->http_rejected);
    one(w, "repose_http_refused_total", "counter",
        "HTTP requests refused (401, 403, 404, 405) and connections over the cap.",
        (double)x->http_refused);

    family(w, "repose_requests_total", "counter",
           "Requests of known methods, by method and outcome (code \"ok\", or the error's "
           "JSON-RPC code).");
    for (size_t i = 0; i < rpd_method_count; i++) {
        if (!s->by_method[i])
            continue;
        uint64_t failed = 0;
        for (int k = 0; k < RPD_STATS_CODE_SLOTS; k++) {
            uint64_t n = s->method_errors[i][k];
            failed += n;
            if (!n)
                continue;
            char code[16];
            out(w, "repose_requests_total{method=\"%s\",code=\"%s\"} %llu\n", rpd_methods[i].name,
                code_label(k, code), (unsigned long long)n);
        }
        out(w, "repose_requests_total{method=\"%s\",code=\"ok\"} %llu\n", rpd_methods[i].name,
            (unsigned long long)(s->by_method[i] - failed));
    }
    family(w, "repose_request_errors_total", "counter",
           "Error replies, by JSON-RPC code (\"other\": a code the protocol does not list), "
           "those of lines without a known method included.");
    for (int i = 0; i < RPD_STATS_CODE_SLOTS; i++)
        if (s->errors_by_code[i]) {
            char code[16];
            out(w, "repose_request_errors_total{code=\"%s\"} %llu\n", code_label(i, code),
                (unsigned long long)s->errors_by_code[i]);
        }
    one(w, "repose_notifications_total", "counter", "JSON-RPC notifications received.",
        (double)s->notifications);
    one(w, "repose_batches_total", "counter", "JSON-RPC batches received.", (double)s->batches);
    latency_histogram(w, s);
    family(w, "repose_method_duration_seconds", "summary",
           "Handler time by method, one call in 8 sampled.");
    for (size_t i = 0; i < rpd_method_count; i++)
        if (s->method_timed[i]) {
            out(w, "repose_method_duration_seconds_sum{method=\"%s\"} %.9f\n", rpd_methods[i].name,
                (double)s->method_ns[i] / 1e9);
            out(w, "repose_method_duration_seconds_count{method=\"%s\"} %llu\n",
                rpd_methods[i].name, (unsigned long long)s->method_timed[i]);
        }
    family(w, "repose_limits_hit_total", "counter", "Requests refused by a limit, by limit.");
    for (int i = 0; i < RPD_LIMIT_COUNT; i++)
        out(w, "repose_limits_hit_total{limit=\"%s\"} %llu\n", rpd_limit_name((rpd_limit_id)i),
            (unsigned long long)(s->limits_hit[i] + (i == RPD_LIMIT_watch_buffer_bytes
                                                         ? rpd_watch_overruns(c->watch)
                                                         : 0)));

    one(w, "repose_scenes", "gauge", "Scenes in the store.",
        (double)rp_store_scene_count(c->store));
    one(w, "repose_models", "gauge", "Robot models in the store.",
        (double)rp_store_model_count(c->store));
    one(w, "repose_shapes", "gauge", "Shapes in every scene of the store.",
        (double)rp_store_shape_count(c->store));
    one(w, "repose_store_revision", "gauge", "The store's revision.",
        (double)rp_store_revision(c->store));
    one(w, "repose_watches", "gauge", "Open scene.watch subscriptions.",
        (double)rpd_watch_count(c->watch));
    family(w, "repose_memory_bytes", "gauge", "Memory held, by what holds it.");
    out(w, "repose_memory_bytes{area=\"store\"} %llu\n",
        (unsigned long long)rp_store_memory(c->store));
    out(w, "repose_memory_bytes{area=\"watch_history\"} %llu\n",
        (unsigned long long)rpd_watch_history_bytes(c->watch));
    out(w, "repose_memory_bytes{area=\"unsent_output\"} %llu\n",
        (unsigned long long)c->output_bytes);
    one(w, "repose_unsent_output_peak_bytes", "gauge",
        "The most unsent replies and notifications held at once.", (double)c->output_peak);
    family(w, "repose_tree_rebuilds_total", "counter", "Tree rebuilds done on a worker.");
    out(w, "repose_tree_rebuilds_total{outcome=\"installed\"} %llu\n",
        (unsigned long long)s->rebuilds_installed);
    out(w, "repose_tree_rebuilds_total{outcome=\"dropped\"} %llu\n",
        (unsigned long long)s->rebuilds_dropped);
    family(w, "repose_plans_total", "counter", "plan requests that ran a planner, by outcome.");
    uint64_t other = s->plans - s->plans_solved - s->plans_timeout - s->plans_stopped;
    out(w, "repose_plans_total{outcome=\"solved\"} %llu\n", (unsigned long long)s->plans_solved);
    out(w, "repose_plans_total{outcome=\"timeout\"} %llu\n", (unsigned long long)s->plans_timeout);
    out(w, "repose_plans_total{outcome=\"stopped\"} %llu\n", (unsigned long long)s->plans_stopped);
    out(w, "repose_plans_total{outcome=\"failed\"} %llu\n", (unsigned long long)other);
    one(w, "repose_plan_seconds_total", "counter", "Time spent planning.",
        (double)s->plan_us / 1e6);
    durability(w, c);
    replication(w, c);
}
