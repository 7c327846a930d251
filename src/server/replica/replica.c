/* SPDX-License-Identifier: MIT */
/*
 * Replicas on NATS JetStream (replica.h).  Threads: the event loop calls
 * every public function here; the consumer thread (consume) reads the
 * stream and queues its messages; nats.c's own threads call the
 * callbacks (on_pub_error and the connection's).  Threads other than the
 * loop only queue events under the mutex and wake the loop.  The order
 * of the stream is kept because one thread takes the messages, checks
 * that each is the next sequence, and the queue is a FIFO.
 *
 * Both directions heal themselves, because the library does not always:
 * - the consumer thread subscribes again from the last sequence it took
 *   when the subscription fails, or when it has been silent while the
 *   stream holds more (an ordered consumer whose server died was seen to
 *   stop for good);
 * - a proposal whose message has not come back within RESEND_MS is
 *   published again with the same message id (JetStream stores it once;
 *   an asynchronous publish whose acknowledgement was lost was seen never
 *   to report anything), and after RESEND_TRIES seconds it fails.
 */
#define _POSIX_C_SOURCE 200809L
#include "replica.h"

#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/log.h"

/* How long JetStream remembers message ids (de-duplication of retried
 * publishes): far longer than any retry here takes. */
#define DEDUP_WINDOW_NS (120LL * 1000 * 1000 * 1000)
/* A proposal not back from the stream after RESEND_MS is published again
 * (same id), while connected; RESEND_TRIES * RESEND_MS after its first
 * send it fails, connected or not.  Longer than a leader election
 * (seconds). */
#define RESEND_MS 1000
#define RESEND_TRIES 15
/* The consumer thread: how long one wait for a message is, and how long
 * it may be silent while the stream holds more before it subscribes
 * again. */
#define WAIT_MS 250
#define STALL_MS 2000
/* Gaps in a row (the stream's first message after the one wanted) after
 * which the messages are taken to be gone. */
#define LOST_GAPS 5
/* The header naming the method a message applies. */
#define HDR_METHOD "Repose-Method"

typedef struct node {
    struct node *next;
    rpd_replica_event e;
} node;

/* A proposal not yet back from the stream (the loop's). */
typedef struct proposal {
    uint64_t token;
    char *method, *params;
    size_t len;
    uint64_t first_ms, sent_ms;
    int tries;
    char last_error[120]; /* what the last send met, for the final failure */
} proposal;

struct rpd_replica {
    char store[64];
    char stream[80];
    char subject[96];
    char snap_stream[96], snap_subject[112];
    char rid[17]; /* this replica's part of message ids: 16 hex digits */
    int copies;
    natsOptions *opts;
    natsConnection *nc;
    jsCtx *js;
    rpd_replica_wake_fn wake;
    void *wake_ctx;
    uint64_t next_token;
    atomic_bool connected;
    atomic_uint_fast64_t stream_last;
    atomic_uint_fast64_t failed, retried;
    uint64_t proposed;
    uint64_t start_last;  /* the stream's last sequence when this replica started */
    uint64_t start_first; /* and its first (0 for a new stream) */
    pthread_mutex_t mu;
    node *head, *tail;        /* the queue, under mu */
    pthread_cond_t closed_cv; /* closed (under mu): the connection's last callback ran */
    bool closed;
    /* The consumer thread and what it has taken (its own). */
    pthread_t consumer;
    bool consumer_started;
    atomic_bool closing;
    natsSubscription *sub;
    uint64_t delivered;
    /* The loop's proposals in flight. */
    proposal *inflight;
    size_t n_inflight, cap_inflight;
};

bool rpd_replica_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 48)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}

static void push(rpd_replica *r, node *n)
{
    n->next = NULL;
    pthread_mutex_lock(&r->mu);
    if (r->tail)
        r->tail->next = n;
    else
        r->head = n;
    r->tail = n;
    pthread_mutex_unlock(&r->mu);
    r->wake(r->wake_ctx);
}

/* The token of a message id of this replica, or 0. */
static uint64_t token_of(const rpd_replica *r, const char *id)
{
    if (!id || strncmp(id, r->rid, 16) != 0 || id[16] != '-')
        return 0;
    char *end;
    unsigned long long t = strtoull(id + 17, &end, 10);
    return *end ? 0 : (uint64_t)t;
}

/* ---- nats.c threads ---------------------------------------------------------- */

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Queues a stream message (the consumer thread); false when it is not
 * the next one (a repeat is dropped, a gap makes the caller subscribe
 * again). */
static bool take(rpd_replica *r, natsMsg *msg, bool *gap)
{
    jsMsgMetaData *meta = NULL;
    *gap = false;
    if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) {
        natsMsg_Destroy(msg);
        return false; /* not a stream message (a status): nothing to take */
    }
    uint64_t seq = meta->Sequence.Stream, pending = meta->NumPending;
    jsMsgMetaData_Destroy(meta);
    if (seq <= r->delivered) {
        natsMsg_Destroy(msg);
        return false; /* had it: a subscription made again from an older point */
    }
    if (r->delivered && seq != r->delivered + 1) {
        /* Messages missing in between: taken again from where we are (a
         * stream trimmed past them would deliver from its first message,
         * which this replica cannot catch up with yet: it is logged). */
        rpd_log(RPD_LOG_WARN, "replication: stream message %llu after %llu; reading it again",
                (unsigned long long)seq, (unsigned long long)r->delivered);
        natsMsg_Destroy(msg);
        *gap = true;
        return false;
    }
    node *n = calloc(1, sizeof *n);
    if (!n) {
        rpd_log(RPD_LOG_ERROR, "replication: out of memory taking a stream message; exiting");
        abort();
    }
    n->e.kind = RPD_REPLICA_MESSAGE;
    n->e.seq = seq;
    n->e.pending = pending;
    const char *method = NULL, *id = NULL;
    if (natsMsgHeader_Get(msg, HDR_METHOD, &method) == NATS_OK && method)
        n->e.method = strdup(method);
    if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) == NATS_OK)
        n->e.token = token_of(r, id);
    int len = natsMsg_GetDataLength(msg);
    n->e.len = len > 0 ? (size_t)len : 0;
    n->e.params = malloc(n->e.len + 1);
    if ((method && !n->e.method) || !n->e.params) {
        rpd_log(RPD_LOG_ERROR, "replication: out of memory taking a stream message; exiting");
        abort();
    }
    memcpy(n->e.params, natsMsg_GetData(msg), n->e.len);
    n->e.params[n->e.len] = '\0';
    atomic_store(&r->stream_last, seq + pending);
    natsMsg_Destroy(msg);
    r->delivered = seq;
    push(r, n);
    return true;
}

/* A subscription to the stream from the message after `delivered`. */
static natsStatus subscribe(rpd_replica *r, natsSubscription **sub, jsErrCode *jerr)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = r->stream;
    so.Ordered = true;
    if (r->delivered) {
        so.Config.DeliverPolicy = js_DeliverByStartSequence;
        so.Config.OptStartSeq = r->delivered + 1;
    } else {
        so.Config.DeliverPolicy = js_DeliverAll;
    }
    *jerr = 0;
    return js_SubscribeSync(sub, r->js, r->subject, NULL, &so, jerr);
}

/* The stream's last sequence, or 0 when it cannot be had now. */
static uint64_t stream_last_seq(rpd_replica *r)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    if (js_GetStreamInfo(&si, r->js, r->stream, NULL, &jerr) != NATS_OK)
        return 0;
    uint64_t last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return last;
}

static void *consume(void *arg)
{
    rpd_replica *r = arg;
    natsSubscription *sub = r->sub;
    uint64_t last_msg = now_ms(), last_look = last_msg;
    unsigned gaps = 0;
    while (!atomic_load(&r->closing)) {
        if (!sub) {
            jsErrCode jerr;
            if (subscribe(r, &sub, &jerr) != NATS_OK) {
                sub = NULL;
                nats_Sleep(WAIT_MS);
                continue;
            }
            last_msg = last_look = now_ms();
        }
        natsMsg *msg = NULL;
        natsStatus st = natsSubscription_NextMsg(&msg, sub, WAIT_MS);
        bool again = false;
        if (st == NATS_OK) {
            bool gap;
            if (take(r, msg, &gap)) {
                last_msg = now_ms();
                gaps = 0;
            }
            again = gap;
            if (gap && ++gaps == LOST_GAPS) {
                /* The stream was trimmed past this replica while it ran:
                 * what it missed is gone, and only a start from the
                 * published snapshot can catch up. */
                node *n = calloc(1, sizeof *n);
                if (n) {
                    n->e.kind = RPD_REPLICA_LOST;
                    snprintf(n->e.reason, sizeof n->e.reason,
                             "the stream no longer holds the messages after %llu (trimmed "
                             "past this replica)",
                             (unsigned long long)r->delivered);
                    push(r, n);
                }
                break;
            }
        } else if (st == NATS_TIMEOUT) {
            /* Silent: fine while the stream holds nothing new. */
            uint64_t t = now_ms();
            if (t - last_msg >= STALL_MS && t - last_look >= STALL_MS) {
                last_look = t;
                uint64_t last = stream_last_seq(r);
                again = last > r->delivered;
                if (again)
                    rpd_log(RPD_LOG_WARN,
                            "replication: the stream is at %llu and nothing came after %llu for "
                            "%d ms; reading it again",
                            (unsigned long long)last, (unsigned long long)r->delivered, STALL_MS);
            }
        } else {
            again = true; /* the subscription broke (its server, the connection) */
        }
        if (again) {
            natsSubscription_Destroy(sub);
            sub = NULL;
        }
    }
    natsSubscription_Destroy(sub);
    return NULL;
}

static void on_pub_error(jsCtx *js, jsPubAckErr *pae, void *closure)
{
    (void)js;
    rpd_replica *r = closure;
    /* No acknowledgement (lost, or the leader changed): the message may be
     * stored or not; the loop sends it again (rpd_replica_tick). */
    if (pae->Err == NATS_TIMEOUT)
        return;
    /* Any other error (no responders while the stream elects a leader,
     * most often) is told to the loop, which sends it again until its
     * tries are used up (rpd_replica_next): writes pause, then go on. */
    const char *id = NULL;
    natsMsgHeader_Get(pae->Msg, "Nats-Msg-Id", &id);
    node *n = calloc(1, sizeof *n);
    if (!n) {
        rpd_log(RPD_LOG_ERROR, "replication: out of memory reporting a failed publish; exiting");
        abort();
    }
    n->e.kind = RPD_REPLICA_FAILED;
    n->e.token = token_of(r, id);
    n->e.conflict = pae->ErrCode == JSStreamWrongLastSequenceErr;
    n->e.retry = !n->e.conflict;
    snprintf(n->e.reason, sizeof n->e.reason, "%s",
             pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err));
    push(r, n);
}

static void on_disconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    rpd_replica *r = closure;
    atomic_store(&r->connected, false);
    rpd_log(RPD_LOG_WARN,
            "replication: disconnected from NATS; writes are refused until it is back");
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    rpd_replica *r = closure;
    atomic_store(&r->connected, true);
    rpd_log(RPD_LOG_INFO, "replication: reconnected to NATS");
}

/* The connection's last callback: after it none comes, so the replica may
 * be freed (rpd_replica_close waits for it). */
static void on_closed(natsConnection *nc, void *closure)
{
    (void)nc;
    rpd_replica *r = closure;
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    pthread_cond_signal(&r->closed_cv);
    pthread_mutex_unlock(&r->mu);
}

/* ---- the loop -------------------------------------------------------------- */

static bool fail(char *why, size_t cap, const char *what, natsStatus s, jsErrCode jerr)
{
    const char *last = nats_GetLastError(NULL);
    /* The library prefixes its source position: "(conn.c:2088): ...". */
    const char *cut = last && last[0] == '(' ? strstr(last, "): ") : NULL;
    if (cut)
        last = cut + 3;
    if (last && !last[0])
        last = NULL; /* (left empty by some failures: the status says more) */
    if (jerr)
        snprintf(why, cap, "%s: %s (JetStream error %d)", what, last ? last : natsStatus_GetText(s),
                 (int)jerr);
    else
        snprintf(why, cap, "%s: %s", what, last ? last : natsStatus_GetText(s));
    return false;
}

static bool set_servers(rpd_replica *r, const char *urls, char *why, size_t cap)
{
    char *copy = strdup(urls);
    const char *list[32];
    int n = 0;
    if (!copy) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    for (char *save = NULL, *u = strtok_r(copy, ",", &save); u && n < 32;
         u = strtok_r(NULL, ",", &save))
        if (*u)
            list[n++] = u;
    natsStatus s = n ? natsOptions_SetServers(r->opts, list, n) : NATS_INVALID_ARG;
    free(copy);
    if (s != NATS_OK)
        return fail(why, cap, "--nats", s, 0);
    return true;
}

/* Creates stream `name` on `subject`: file storage, limits retention,
 * `copies` replicas and `dedup_ns` of message-id de-duplication (0: the
 * server's default).  *jerr: JetStream's error code. */
static natsStatus add_stream(rpd_replica *r, const char *name, const char *subject, int copies,
                             int64_t dedup_ns, jsErrCode *jerr)
{
    const char *subjects[1] = {subject};
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Retention = js_LimitsPolicy;
    sc.Replicas = copies;
    if (dedup_ns)
        sc.Duplicates = dedup_ns;
    jsStreamInfo *si = NULL;
    *jerr = 0;
    natsStatus s = js_AddStream(&si, r->js, &sc, NULL, jerr);
    jsStreamInfo_Destroy(si);
    return s;
}

/* Binds the stream when it exists with settings this replica can use;
 * creates it otherwise, with as many copies as the cluster takes (3, 2,
 * then 1: a single server refuses more than one). */
static bool stream_ready(rpd_replica *r, int want, char *why, size_t cap)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, r->js, r->stream, NULL, &jerr);
    if (s == NATS_OK) {
        jsStreamConfig *c = si->Config;
        bool has = false;
        for (int i = 0; i < c->SubjectsLen; i++)
            has |= strcmp(c->Subjects[i], r->subject) == 0;
        bool ok = has && c->Storage == js_FileStorage && c->Retention == js_LimitsPolicy;
        if (!ok)
            snprintf(why, cap,
                     "stream %s exists with settings a store cannot use (it needs file storage, "
                     "limits retention and the subject %s)",
                     r->stream, r->subject);
        else if (want && c->Replicas != want) {
            /* Another replica made the store with other options. */
            snprintf(why, cap,
                     "stream %s exists with %d copies; --nats-copies asks for %d (leave it out to "
                     "bind the stream as it is)",
                     r->stream, (int)c->Replicas, want);
            ok = false;
        }
        r->copies = (int)c->Replicas;
        r->start_last = si->State.LastSeq;
        r->start_first = si->State.FirstSeq;
        jsStreamInfo_Destroy(si);
        return ok;
    }
    if (s != NATS_NOT_FOUND)
        return fail(why, cap, "looking up the stream", s, jerr);
    for (int copies = want ? want : 3; copies >= 1; copies--) {
        s = add_stream(r, r->stream, r->subject, copies, DEDUP_WINDOW_NS, &jerr);
        if (s == NATS_OK) {
            r->copies = copies;
            return true;
        }
        /* Too many copies for this cluster (or a lone server): fewer,
         * unless a number was asked for. */
        if (want ||
            (jerr != JSStreamReplicasNotSupportedErr && jerr != JSInsufficientResourcesErr &&
             jerr != JSClusterNoPeersErr && jerr != JSStreamReplicasNotUpdatableErr))
            break;
    }
    return fail(why, cap, "creating the stream", s, jerr);
}

/* Closes the connection and waits for its last callback (on_closed),
 * which comes on the library's thread after Close returns (at most a few
 * seconds, should it never come): only then may r be freed. */
static void close_connection(rpd_replica *r)
{
    natsConnection_Close(r->nc);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&r->mu);
    while (!r->closed && pthread_cond_timedwait(&r->closed_cv, &r->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&r->mu);
    jsCtx_Destroy(r->js);
    natsConnection_Destroy(r->nc);
}

rpd_replica *rpd_replica_open(const rpd_replica_opts *o, char *why, size_t cap)
{
    if (!rpd_replica_name_ok(o->store)) {
        snprintf(why, cap, "--store %s: a store's name is 1 to 48 letters, digits, '-' or '_'",
                 o->store);
        return NULL;
    }
    rpd_replica *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->closed_cv, NULL);
    snprintf(r->store, sizeof r->store, "%s", o->store);
    snprintf(r->stream, sizeof r->stream, "REPOSE_%s", o->store);
    snprintf(r->subject, sizeof r->subject, "repose.%s.m", o->store);
    snprintf(r->snap_stream, sizeof r->snap_stream, "REPOSE_%s_SNAP", o->store);
    snprintf(r->snap_subject, sizeof r->snap_subject, "repose.%s.snap", o->store);
    unsigned char raw[8];
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(raw, 1, sizeof raw, f) != sizeof raw) {
        if (f)
            fclose(f);
        snprintf(why, cap, "no random bytes for the replica's message ids");
        free(r);
        return NULL;
    }
    fclose(f);
    for (int i = 0; i < 8; i++)
        snprintf(r->rid + 2 * i, 3, "%02x", raw[i]);
    r->wake = o->wake;
    r->wake_ctx = o->wake_ctx;
    r->next_token = 1;
    atomic_store(&r->stream_last, o->applied);

    natsStatus s = natsOptions_Create(&r->opts);
    if (s != NATS_OK || !set_servers(r, o->urls, why, cap))
        goto failed_opts;
    natsOptions_SetMaxReconnect(r->opts, -1); /* reconnect for ever */
    natsOptions_SetReconnectWait(r->opts, 250);
    natsOptions_SetDisconnectedCB(r->opts, on_disconnected, r);
    natsOptions_SetReconnectedCB(r->opts, on_reconnected, r);
    natsOptions_SetClosedCB(r->opts, on_closed, r);
    natsOptions_SetName(r->opts, "reposed");
    if (o->creds &&
        (s = natsOptions_SetUserCredentialsFromFiles(r->opts, o->creds, NULL)) != NATS_OK) {
        fail(why, cap, "--nats-creds", s, 0);
        goto failed_opts;
    }
    if (o->tls_ca || o->tls_cert) {
        if ((s = natsOptions_SetSecure(r->opts, true)) != NATS_OK ||
            (o->tls_ca &&
             (s = natsOptions_LoadCATrustedCertificates(r->opts, o->tls_ca)) != NATS_OK) ||
            (o->tls_cert && (s = natsOptions_LoadCertificatesChain(r->opts, o->tls_cert,
                                                                   o->tls_key)) != NATS_OK)) {
            fail(why, cap, "NATS TLS options", s, 0);
            goto failed_opts;
        }
    }
    if ((s = natsConnection_Connect(&r->nc, r->opts)) != NATS_OK) {
        fail(why, cap, "connecting to NATS", s, 0);
        goto failed_opts;
    }
    atomic_store(&r->connected, true);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 4096;
    jo.PublishAsync.ErrHandler = on_pub_error;
    jo.PublishAsync.ErrHandlerClosure = r;
    if ((s = natsConnection_JetStream(&r->js, r->nc, &jo)) != NATS_OK) {
        fail(why, cap, "JetStream", s, 0);
        goto failed;
    }
    if (!stream_ready(r, o->copies, why, cap))
        goto failed;
    return r;
failed:
    close_connection(r); /* (its callbacks use r: they end first) */
failed_opts:
    natsOptions_Destroy(r->opts);
    pthread_cond_destroy(&r->closed_cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return NULL;
}

bool rpd_replica_trimmed_past(const rpd_replica *r, uint64_t applied)
{
    return r->start_last && r->start_first > applied + 1;
}

bool rpd_replica_reread(rpd_replica *r)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    if (js_GetStreamInfo(&si, r->js, r->stream, NULL, &jerr) != NATS_OK)
        return false;
    r->start_last = si->State.LastSeq;
    r->start_first = si->State.FirstSeq;
    jsStreamInfo_Destroy(si);
    return true;
}

bool rpd_replica_start(rpd_replica *r, uint64_t applied, char *why, size_t cap)
{
    if (applied > r->start_last) {
        snprintf(why, cap,
                 "the store here is at revision %llu but stream %s ends at %llu: the data "
                 "directory belongs to another stream (move it away to start from the stream)",
                 (unsigned long long)applied, r->stream, (unsigned long long)r->start_last);
        return false;
    }
    if (rpd_replica_trimmed_past(r, applied)) {
        snprintf(why, cap,
                 "stream %s starts at %llu: the messages after revision %llu, which the store "
                 "here holds, were trimmed, and no snapshot published by a replica "
                 "(--snapshot-publish) holds them either",
                 r->stream, (unsigned long long)r->start_first, (unsigned long long)applied);
        return false;
    }
    r->delivered = applied;
    jsErrCode jerr = 0;
    natsStatus s = subscribe(r, &r->sub, &jerr);
    if (s != NATS_OK)
        return fail(why, cap, "consuming the stream", s, jerr);
    if (pthread_create(&r->consumer, NULL, consume, r) != 0) {
        snprintf(why, cap, "cannot start the thread that reads the stream");
        natsSubscription_Destroy(r->sub);
        r->sub = NULL;
        return false;
    }
    r->consumer_started = true;
    return true;
}

void rpd_replica_close(rpd_replica *r)
{
    if (!r)
        return;
    atomic_store(&r->closing, true);
    if (r->consumer_started)
        pthread_join(r->consumer, NULL); /* it destroys its subscription */
    close_connection(r);
    natsOptions_Destroy(r->opts);
    rpd_replica_event e;
    while (rpd_replica_next(r, &e))
        rpd_replica_event_free(&e);
    for (size_t i = 0; i < r->n_inflight; i++) {
        free(r->inflight[i].method);
        free(r->inflight[i].params);
    }
    free(r->inflight);
    pthread_cond_destroy(&r->closed_cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
    nats_Close(); /* the library's own threads and memory (one replica per process) */
}

/* ---- published snapshots ------------------------------------------------------- */

#define HDR_SNAP_REV "Repose-Snap-Revision"
#define HDR_SNAP_PART "Repose-Snap-Part"
#define HDR_SNAP_ID "Repose-Snap-Id"

/* The snapshot stream, REPOSE_<store>_SNAP, created when missing (by a
 * publisher) with the main stream's copies. */
static bool snap_stream_ready(rpd_replica *r, bool create, char *why, size_t cap)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, r->js, r->snap_stream, NULL, &jerr);
    if (s == NATS_OK) {
        jsStreamInfo_Destroy(si);
        return true;
    }
    if (s != NATS_NOT_FOUND)
        return fail(why, cap, "looking up the snapshot stream", s, jerr);
    if (!create) {
        snprintf(why, cap, "no snapshot was published (no stream %s)", r->snap_stream);
        return false;
    }
    s = add_stream(r, r->snap_stream, r->snap_subject, r->copies > 0 ? r->copies : 1, 0, &jerr);
    if (s != NATS_OK)
        return fail(why, cap, "creating the snapshot stream", s, jerr);
    return true;
}

bool rpd_replica_publish_snapshot(rpd_replica *r, uint64_t revision, const uint8_t *img, size_t n,
                                  uint64_t trim_keep, char *why, size_t cap)
{
    if (!snap_stream_ready(r, true, why, cap))
        return false;
    int64_t max = natsConnection_GetMaxPayload(r->nc);
    size_t part = max > 8192 ? (size_t)max - 4096 : 4096;
    size_t parts = n / part + (n % part != 0);
    parts = parts ? parts : 1;
    unsigned char raw[8];
    FILE *f = fopen("/dev/urandom", "rb");
    bool rnd = f && fread(raw, 1, sizeof raw, f) == sizeof raw;
    if (f)
        fclose(f);
    if (!rnd) {
        snprintf(why, cap, "no random bytes for the snapshot's id");
        return false;
    }
    char id[17], rev[24], which[48];
    for (int i = 0; i < 8; i++)
        snprintf(id + 2 * i, 3, "%02x", raw[i]);
    snprintf(rev, sizeof rev, "%llu", (unsigned long long)revision);
    uint64_t first = 0;
    for (size_t k = 0; k < parts; k++) {
        size_t off = k * part, len = n - off < part ? n - off : part;
        natsMsg *m = NULL;
        natsStatus s = natsMsg_Create(&m, r->snap_subject, NULL, (const char *)img + off, (int)len);
        snprintf(which, sizeof which, "%zu/%zu", k + 1, parts);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(m, HDR_SNAP_REV, rev);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(m, HDR_SNAP_PART, which);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(m, HDR_SNAP_ID, id);
        jsPubAck *ack = NULL;
        jsErrCode jerr = 0;
        if (s == NATS_OK)
            s = js_PublishMsg(&ack, r->js, m, NULL, &jerr);
        natsMsg_Destroy(m);
        if (s != NATS_OK) {
            jsPubAck_Destroy(ack);
            return fail(why, cap, "publishing the snapshot", s, jerr);
        }
        if (k == 0)
            first = ack->Sequence;
        jsPubAck_Destroy(ack);
    }
    /* The older snapshots go; then, asked for, the stream's messages that
     * the snapshot holds, but for the last trim_keep of them (replicas
     * behind by fewer still read on; one behind by more starts again from
     * the snapshot). */
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Purge.Sequence = first;
    jsErrCode jerr = 0;
    natsStatus s = js_PurgeStream(r->js, r->snap_stream, &o, &jerr);
    if (s != NATS_OK)
        rpd_log(RPD_LOG_WARN, "replication: older snapshots not purged: %s", natsStatus_GetText(s));
    if (trim_keep && revision > trim_keep) {
        jsOptions_Init(&o);
        o.Stream.Purge.Sequence = revision - trim_keep + 1;
        if ((s = js_PurgeStream(r->js, r->stream, &o, &jerr)) != NATS_OK)
            return fail(why, cap, "trimming the stream", s, jerr);
    }
    return true;
}

bool rpd_replica_fetch_snapshot(rpd_replica *r, uint64_t *revision, uint8_t **img, size_t *n,
                                char *why, size_t cap)
{
    if (!snap_stream_ready(r, false, why, cap))
        return false;
    natsMsg *last = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetLastMsg(&last, r->js, r->snap_stream, r->snap_subject, NULL, &jerr);
    if (s != NATS_OK)
        return fail(why, cap, "reading the last snapshot", s, jerr);
    const char *rev = NULL, *part = NULL, *id = NULL;
    natsMsgHeader_Get(last, HDR_SNAP_REV, &rev);
    natsMsgHeader_Get(last, HDR_SNAP_PART, &part);
    natsMsgHeader_Get(last, HDR_SNAP_ID, &id);
    unsigned long long k = 0, parts = 0;
    char want_id[17] = "";
    if (id)
        snprintf(want_id, sizeof want_id, "%s", id);
    uint64_t last_seq = natsMsg_GetSequence(last);
    bool ok = rev && part && id && sscanf(part, "%llu/%llu", &k, &parts) == 2 && k == parts &&
              parts >= 1 && parts <= last_seq;
    *revision = ok ? strtoull(rev, NULL, 10) : 0;
    natsMsg_Destroy(last);
    if (!ok) {
        snprintf(why, cap, "the last message of %s is not the end of a snapshot", r->snap_stream);
        return false;
    }
    size_t cap_buf = 0, len = 0;
    uint8_t *buf = NULL;
    for (uint64_t seq = last_seq - parts + 1; seq <= last_seq; seq++) {
        natsMsg *m = NULL;
        if ((s = js_GetMsg(&m, r->js, r->snap_stream, seq, NULL, &jerr)) != NATS_OK) {
            free(buf);
            return fail(why, cap, "reading a snapshot part", s, jerr);
        }
        const char *mid = NULL;
        natsMsgHeader_Get(m, HDR_SNAP_ID, &mid);
        int dl = natsMsg_GetDataLength(m);
        if (!mid || strcmp(mid, want_id) != 0 || dl < 0) {
            natsMsg_Destroy(m);
            free(buf);
            snprintf(why, cap, "snapshot %s is missing part %llu", want_id,
                     (unsigned long long)(seq - (last_seq - parts)));
            return false;
        }
        if (len + (size_t)dl > cap_buf) {
            size_t grown = (len + (size_t)dl) * 2;
            uint8_t *more = realloc(buf, grown);
            if (!more) {
                natsMsg_Destroy(m);
                free(buf);
                snprintf(why, cap, "out of memory");
                return false;
            }
            buf = more;
            cap_buf = grown;
        }
        memcpy(buf + len, natsMsg_GetData(m), (size_t)dl);
        len += (size_t)dl;
        natsMsg_Destroy(m);
    }
    *img = buf;
    *n = len;
    return true;
}

bool rpd_replica_writable(rpd_replica *r, char *why, size_t cap)
{
    if (atomic_load(&r->connected))
        return true;
    snprintf(why, cap,
             "this replica is cut off from NATS (reconnecting): writes are refused, "
             "reads go on");
    return false;
}

/* Publishes proposal p (again, for a resend: the same message id). */
static natsStatus publish(rpd_replica *r, const proposal *p)
{
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, r->subject, NULL, p->params, (int)p->len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, HDR_METHOD, p->method);
    char id[40];
    snprintf(id, sizeof id, "%s-%llu", r->rid, (unsigned long long)p->token);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id;
    if (s == NATS_OK)
        s = js_PublishMsgAsync(r->js, &m, &po);
    natsMsg_Destroy(m); /* NULL once the library took it */
    return s;
}

bool rpd_replica_propose(rpd_replica *r, const char *method, const char *params, size_t len,
                         uint64_t *token, char *why, size_t cap)
{
    if (!rpd_replica_writable(r, why, cap))
        return false;
    int64_t max = natsConnection_GetMaxPayload(r->nc);
    if (max > 0 && (int64_t)len > max - 256) {
        snprintf(why, cap,
                 "the mutation's %zu bytes exceed what the NATS servers take in one message "
                 "(max_payload %lld bytes)",
                 len, (long long)max);
        return false;
    }
    if (r->n_inflight == r->cap_inflight) {
        size_t cap2 = r->cap_inflight ? 2 * r->cap_inflight : 16;
        proposal *more = realloc(r->inflight, cap2 * sizeof *more);
        if (!more) {
            snprintf(why, cap, "out of memory");
            return false;
        }
        r->inflight = more;
        r->cap_inflight = cap2;
    }
    uint64_t t0 = now_ms();
    proposal p = {r->next_token, strdup(method), malloc(len ? len : 1), len, t0, t0, 1, ""};
    if (!p.method || !p.params) {
        free(p.method);
        free(p.params);
        snprintf(why, cap, "out of memory");
        return false;
    }
    memcpy(p.params, params, len);
    natsStatus s = publish(r, &p);
    if (s != NATS_OK) {
        free(p.method);
        free(p.params);
        return fail(why, cap, "publishing the mutation", s, 0);
    }
    r->inflight[r->n_inflight++] = p;
    r->next_token++;
    r->proposed++;
    *token = p.token;
    return true;
}

/* Forgets proposal `token` (it came back, or failed). */
static void settle(rpd_replica *r, uint64_t token)
{
    for (size_t i = 0; i < r->n_inflight; i++) {
        if (r->inflight[i].token != token)
            continue;
        free(r->inflight[i].method);
        free(r->inflight[i].params);
        r->inflight[i] = r->inflight[--r->n_inflight];
        return;
    }
}

void rpd_replica_tick(rpd_replica *r)
{
    uint64_t t = now_ms();
    for (size_t i = 0; i < r->n_inflight;) {
        proposal *p = &r->inflight[i];
        if (t - p->sent_ms < RESEND_MS) {
            i++;
            continue;
        }
        /* Given up after RESEND_TRIES seconds, connected or not (cut off
         * from NATS, the client is answered rather than kept waiting). */
        bool over = t - p->first_ms >= (uint64_t)RESEND_TRIES * RESEND_MS;
        if (!over && atomic_load(&r->connected) && publish(r, p) == NATS_OK) {
            p->tries++;
            p->sent_ms = t;
            atomic_fetch_add(&r->retried, 1);
            i++;
            continue;
        }
        if (!over) {
            i++; /* cut off now: tried again at the next tick */
            continue;
        }
        node *n = calloc(1, sizeof *n);
        if (!n) {
            i++;
            continue;
        }
        n->e.kind = RPD_REPLICA_FAILED;
        n->e.token = p->token;
        snprintf(n->e.reason, sizeof n->e.reason,
                 "not stored by JetStream in %d s (%d sends)%s%.60s",
                 RESEND_TRIES * RESEND_MS / 1000, p->tries, p->last_error[0] ? "; last: " : "",
                 p->last_error);
        settle(r, p->token); /* (moves another into slot i) */
        push(r, n);
    }
}

bool rpd_replica_next(rpd_replica *r, rpd_replica_event *e)
{
    for (;;) {
        pthread_mutex_lock(&r->mu);
        node *n = r->head;
        if (n) {
            r->head = n->next;
            if (!r->head)
                r->tail = NULL;
        }
        pthread_mutex_unlock(&r->mu);
        if (!n)
            return false;
        *e = n->e;
        free(n);
        if (e->kind == RPD_REPLICA_FAILED && e->retry) {
            /* Sent again by the tick, which gives up in time; what it met
             * goes into the reason then. */
            for (size_t i = 0; i < r->n_inflight; i++)
                if (r->inflight[i].token == e->token)
                    snprintf(r->inflight[i].last_error, sizeof r->inflight[i].last_error, "%.100s",
                             e->reason);
            continue;
        }
        if (e->kind == RPD_REPLICA_FAILED)
            atomic_fetch_add(&r->failed, 1);
        if (e->token)
            settle(r, e->token);
        return true;
    }
}

void rpd_replica_event_free(rpd_replica_event *e)
{
    free(e->method);
    free(e->params);
    e->method = e->params = NULL;
}

void rpd_replica_info_get(rpd_replica *r, rpd_replica_info *info)
{
    memset(info, 0, sizeof *info);
    info->store = r->store;
    snprintf(info->stream, sizeof info->stream, "%s", r->stream);
    info->copies = r->copies;
    info->connected = atomic_load(&r->connected);
    info->stream_last = atomic_load(&r->stream_last);
    info->proposed = r->proposed;
    info->published_failed = atomic_load(&r->failed);
    info->retried = atomic_load(&r->retried);
    info->start_last = r->start_last;
    info->start_first = r->start_first;
}
