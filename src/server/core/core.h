/* SPDX-License-Identifier: MIT */
/*
 * The state every request can see: the store, the limits, the statistics
 * and the auth token (rpd_core), and one connection's protocol state
 * (rpd_session).  Shared by the JSON-RPC layer (rpc.c), the handlers
 * (methods*.c) and the event loop (server.c, conn.c).
 */
#ifndef REPOSE_SERVER_CORE_H
#define REPOSE_SERVER_CORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits.h"
#include "repose/scene.h"
#include "stats.h"

#define RPD_VERSION "0.1.0"
#define RPD_PROTOCOL 1

/* One request line in this many is timed for the latency statistics. */
#define RPD_LATENCY_SAMPLE 8
/* Longest token accepted in a token file. */
#define RPD_MAX_TOKEN_BYTES 4096

/* A subscriber of the store's change records (rp_change, scene.h): the
 * journal, the watch hub, and whatever comes next (replication).  The
 * store calls one hook at its commit point; the core hands the record to
 * each subscriber in the order they subscribed (docs/ARCHITECTURE.md, The
 * way of a mutation).  A nonzero return refuses the change: only the
 * first subscriber (the journal, which subscribes first) may refuse, the
 * others see only changes that will be made. */
typedef int (*rpd_change_fn)(void *ctx, const rp_change *change);
/* How a subscriber hears that changes it was given were undone (a failed
 * group fsync, --fsync always): the store is back at `revision`, as it
 * was before the first of them.  NULL for a subscriber that keeps nothing
 * an undo must take back. */
typedef void (*rpd_undo_fn)(void *ctx, uint64_t revision);
#define RPD_MAX_SUBSCRIBERS 4

/* State shared by every connection. */
typedef struct rpd_core {
    rp_store *store;
    rpd_limits limits;
    rpd_stats stats;
    char run_id[33];
    uint64_t start_ns;
    uint64_t lines; /* request lines seen, for latency sampling */
    char *token;    /* NULL: no auth; else TCP clients must auth with it */
    size_t token_len;
    bool shutting_down; /* mutations are refused with -32006 */
    /* Worker threads exist (--threads > 0): lines on the event loop then
     * get max_loop_work, queries being expected on the workers. */
    bool has_workers;
    /* The clouds a worker built while it parsed the line the event loop is
     * running now (rpd_run_parsed sets it; methods_objects.c takes them):
     * NULL otherwise. */
    struct rpd_prebuilt *prebuilt;
    struct rpd_prebuilt_models *prebuilt_models; /* the same for model.put with meshes */

    /* Unsent replies and notifications of all connections (conn.c keeps
     * the count; max_output_bytes caps it), and the most it has been. */
    size_t output_bytes, output_peak;
    /* Heap bytes freed since free memory was last returned to the system
     * (rpd_core_freed, rpd_core_trim). */
    size_t freed_bytes;
    struct rpd_watch_hub *watch; /* watchers and change history (watch.h) */
    /* Who hears of every change the store commits (rpd_subscribe). */
    struct {
        rpd_change_fn fn;
        rpd_undo_fn undone;
        void *ctx;
    } subscribers[RPD_MAX_SUBSCRIBERS];
    size_t n_subscribers;
    /* Changes are committed but not yet durable (rpd_changes_hold). */
    bool changes_held;
    /* --data-dir: the journal (durable.h); NULL keeps everything in memory. */
    struct rpd_durable *durable;
    /* --nats: this replica's link to the shared stream (replica/replica.h);
     * NULL for a lone daemon.  proposing: a mutation is being validated to
     * be published (the commit hook refuses it and sets proposal_seen);
     * applying: a stream message is being applied (rpd_apply_message). */
    struct rpd_replica *replica;
    bool proposing, proposal_seen, applying;
    /* The last stream sequence this replica applied (its store's data). */
    uint64_t applied;
    /* Revisions may skip numbers (a replica's: stream sequences that
     * changed nothing take none), also in its journal's replay. */
    bool revision_gaps;
    /* A worker's copy of the core (conn.c): store is a snapshot, watch is
     * NULL, and only RPD_METHOD_WORKER methods may run. */
    bool worker;
    /* On a worker: set (nonzero) by the event loop once the connection
     * whose line this is has closed, so that long work (plan) stops;
     * NULL on the loop. */
    const atomic_int *client_gone;
    /* On the loop: the line running is a light query tried there
     * (rpc.h, RPD_LIGHT_WORK); set when it needed more than that budget. */
    bool light, light_overrun;
    /* While light: what the line added to the per-method and latency
     * counters (rpc.c notes it), for taking a dropped try back. */
    rpd_stats_line light_line;
    /* On a worker: the connection's socket, polled by long work (plan)
     * for the peer's hang-up; -1 on the loop. */
    int client_fd;
} rpd_core;

/* --fsync always: the success replies a connection holds back for its
 * group's fsync, as the protocol layer wrote them (rpc.c records one while
 * the session's `outcomes` is set).  An undone group turns exactly these
 * into -32007 (rpd_reply_undone) without reading its own replies back.
 * Offsets are into the connection's output buffer. */
typedef struct rpd_outcome {
    size_t begin;            /* the reply object's '{' */
    size_t id_begin, id_len; /* its id, as written */
    size_t end;              /* one past its '}' */
} rpd_outcome;
typedef struct rpd_outcomes {
    rpd_outcome *v;
    size_t n, cap;
    bool lost; /* one could not be recorded (out of memory) */
} rpd_outcomes;

/* Per-connection protocol state. */
typedef struct rpd_session {
    bool is_tcp;
    bool authed;               /* sent the right token (auth); only TCP sessions need it */
    void *owner;               /* the connection (server), for watch notifications */
    struct rpd_watch *watches; /* this connection's watches (watch.c) */
    unsigned lagging;          /* how many of them wait for output to drain */
    uint64_t group_epoch1;     /* --fsync always: 1 + the group its last record joined */
    rpd_outcomes *outcomes;    /* where success replies are recorded, or NULL */
    /* --nats: the proposal this connection waits for (0: none), and the id
     * of the request to answer when it is applied (JSON text; NULL for a
     * notification).  The connection runs no further line meanwhile. */
    uint64_t repl_token;
    char *repl_id;
} rpd_session;

/* Whether this session must auth before using other methods. */
static inline bool rpd_session_locked(const rpd_core *core, const rpd_session *s)
{
    return core->token && s->is_tcp && !s->authed;
}

/* Installs the store's commit hook, which hands every change record to
 * the subscribers (core/changes.c).  rpd_subscribe adds one: first puts it
 * before the others (the journal, which may refuse); false when the list
 * is full.  rpd_unsubscribe removes it. */
void rpd_changes_init(rpd_core *core);
bool rpd_subscribe(rpd_core *core, rpd_change_fn fn, rpd_undo_fn undone, void *ctx, bool first);
void rpd_unsubscribe(rpd_core *core, rpd_change_fn fn, void *ctx);
/* The shapes a put or replace record writes, sorted by id, each id once
 * with the shape given last (as the store applies them), in a malloc'ed
 * array of *n pointers into change->shapes; NULL when out of memory. */
const rp_shape_put **rpd_change_written(const rp_change *change, size_t *n);

/* Changes that are made but may still be undone: with --fsync always, the
 * journal holds the changes of a group from its first record until the
 * group's fsync.  Meanwhile nothing a change causes may reach a client
 * other than through a reply the group holds back too: the watch hub sends
 * no notification while changes are held.  rpd_changes_settle: the held
 * changes stand; rpd_changes_undo: they were undone, the store is back at
 * `revision`, and every subscriber's undo callback hears it.  Either ends
 * the hold. */
void rpd_changes_hold(rpd_core *core);
void rpd_changes_settle(rpd_core *core);
void rpd_changes_undo(rpd_core *core, uint64_t revision);
static inline bool rpd_changes_held(const rpd_core *core)
{
    return core->changes_held;
}

#endif /* REPOSE_SERVER_CORE_H */
