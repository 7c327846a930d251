/* SPDX-License-Identifier: MIT */
/*
 * Replicas sharing one store through NATS JetStream (--nats, --store;
 * docs/ARCHITECTURE.md, Replicas; proto/PROTOCOL.md, Replication).
 *
 * The store's mutations form one stream, REPOSE_<store>; a mutation's
 * revision is its stream sequence.  A replica proposes a validated
 * mutation by publishing it (rpd_replica_propose), and applies the stream,
 * its own proposals among the rest, in order: the nats.c library's
 * threads queue what arrives here and call the wake function, and the
 * event loop takes it (rpd_replica_next) and applies it.  This module
 * knows nats.c and the core only: no libuv (the wake function is the
 * loop's), no request (the protocol layer applies a message through the
 * handler of its method, as the journal's replay does).
 */
#ifndef REPOSE_SERVER_REPLICA_H
#define REPOSE_SERVER_REPLICA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rpd_replica rpd_replica;

/* Called from a nats.c thread when something was queued. */
typedef void (*rpd_replica_wake_fn)(void *ctx);

typedef struct rpd_replica_opts {
    const char *urls;     /* comma-separated NATS URLs */
    const char *store;    /* the store's name: letters, digits, '-' and '_' */
    const char *creds;    /* NULL, or a NATS credentials file */
    const char *tls_ca;   /* NULL, or the CA certificates to verify the servers with */
    const char *tls_cert; /* NULL, or a client certificate (with tls_key) */
    const char *tls_key;
    int copies;       /* the stream's replicas when it is created; 0: as many as the
                         cluster takes, up to 3 */
    uint64_t applied; /* the last revision already in the store (0: none) */
    rpd_replica_wake_fn wake;
    void *wake_ctx;
} rpd_replica_opts;

/* Whether name may name a store (and so a stream and a subject). */
bool rpd_replica_name_ok(const char *name);

/* Connects, and creates the stream (file storage, as many copies as the
 * cluster gives, up to 3) or binds it when it exists with compatible
 * settings; rpd_replica_start then consumes it.  NULL with why when the
 * servers cannot be reached or the stream cannot be used. */
rpd_replica *rpd_replica_open(const rpd_replica_opts *opts, char *why, size_t cap);

/* Whether the stream was trimmed past revision `applied` (its messages
 * after it are gone). */
bool rpd_replica_trimmed_past(const rpd_replica *r, uint64_t applied);

/* Reads the stream's first and last sequence again (after
 * rpd_replica_open read them; rpd_replica_info_get gives them); false
 * when they cannot be had now.  A
 * stream leader elected a moment ago can report a last sequence below
 * what the stream had delivered, until it has applied its log. */
bool rpd_replica_reread(rpd_replica *r);

/* Starts consuming the stream after revision `applied` (what the store
 * holds); false with why when the store is ahead of the stream (another
 * stream's data) or the stream was trimmed past it. */
bool rpd_replica_start(rpd_replica *r, uint64_t applied, char *why, size_t cap);

/* Publishes an image of the store (persistence/image.h) taken at
 * `revision` as the store's latest snapshot, to the stream
 * REPOSE_<store>_SNAP, in parts that fit NATS messages, then purges the
 * older snapshots and, with trim_keep > 0, the main stream's messages up
 * to revision - trim_keep.  Blocking: a worker thread's.  False with why. */
bool rpd_replica_publish_snapshot(rpd_replica *r, uint64_t revision, const uint8_t *img, size_t n,
                                  uint64_t trim_keep, char *why, size_t cap);

/* The latest published snapshot: its revision and image (malloc'ed);
 * false with why when there is none or it is incomplete. */
bool rpd_replica_fetch_snapshot(rpd_replica *r, uint64_t *revision, uint8_t **img, size_t *n,
                                char *why, size_t cap);

/* Stops consuming, waits for the library's threads and frees everything
 * (what is still queued is dropped).  NULL is fine. */
void rpd_replica_close(rpd_replica *r);

/* Publishes a mutation (its method and its params as JSON text) with a
 * message id of this replica; *token (nonzero) comes back with the
 * message when it is applied (rpd_replica_event), or with a failure when
 * the publish failed for good.  One that does not come back is sent
 * again with the same id (rpd_replica_tick; JetStream drops duplicates).
 * False with why when it cannot be sent now (disconnected, too large). */
bool rpd_replica_propose(rpd_replica *r, const char *method, const char *params, size_t len,
                         uint64_t *token, char *why, size_t cap);

typedef enum rpd_replica_event_kind {
    RPD_REPLICA_MESSAGE, /* a stream message to apply, in stream order */
    RPD_REPLICA_FAILED,  /* a proposal (token) that was not published */
    RPD_REPLICA_LOST     /* the stream lost messages this replica had not read (reason) */
} rpd_replica_event_kind;

typedef struct rpd_replica_event {
    rpd_replica_event_kind kind;
    uint64_t seq;     /* MESSAGE: its stream sequence */
    uint64_t pending; /* MESSAGE: how many follow it in the stream */
    char *method;     /* MESSAGE: NULL when the message names none */
    char *params;     /* MESSAGE: the params, len bytes (not terminated) */
    size_t len;
    uint64_t token;   /* this replica's proposal, or 0 */
    bool conflict;    /* FAILED: JetStream refused an expected sequence */
    bool retry;       /* (inside replica.c: a send failed, to be sent again) */
    char reason[200]; /* FAILED: the engine's error */
} rpd_replica_event;

/* Publishes again the proposals whose messages have not come back for a
 * while (same message id: stored once), and fails those tried too often
 * (a FAILED event); the loop calls it every few hundred milliseconds. */
void rpd_replica_tick(rpd_replica *r);

/* Takes the next queued event (the loop): false when none is queued. */
bool rpd_replica_next(rpd_replica *r, rpd_replica_event *e);
void rpd_replica_event_free(rpd_replica_event *e);

typedef struct rpd_replica_info {
    const char *store;
    char stream[80];
    int copies; /* the stream's replicas */
    bool connected;
    uint64_t stream_last; /* the last sequence heard of (applied + what is queued or pending) */
    uint64_t proposed, published_failed, retried;
    uint64_t start_last;  /* the stream's last sequence when it was opened */
    uint64_t start_first; /* and its first (above start_last: it held no message) */
} rpd_replica_info;
void rpd_replica_info_get(rpd_replica *r, rpd_replica_info *info);

/* Whether mutations can be proposed now; why says not when not. */
bool rpd_replica_writable(rpd_replica *r, char *why, size_t cap);

#endif
