/* SPDX-License-Identifier: MIT */
/*
 * Replicas on NATS JetStream (replica.h).  Threads: the event loop calls
 * every function here; nats.c's own threads call the callbacks (on_msg,
 * on_pub_error and the connection's), which only queue events under the
 * mutex and wake the loop.  The order of the stream is kept because the
 * ordered consumer delivers on one thread, in order, and the queue is a
 * FIFO.
 */
#define _POSIX_C_SOURCE 200809L
#include "replica.h"

#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/log.h"

/* How long JetStream remembers message ids (de-duplication of retried
 * publishes): far longer than any retry here takes. */
#define DEDUP_WINDOW_NS (120LL * 1000 * 1000 * 1000)
/* A publish whose acknowledgement did not come is sent again (same id)
 * this many times before its proposal fails. */
#define PUBLISH_TRIES 3
/* Headers of a message: the method it applies, and the try. */
#define HDR_METHOD "Repose-Method"
#define HDR_TRY "Repose-Try"

typedef struct node {
    struct node *next;
    rpd_replica_event e;
} node;

struct rpd_replica {
    char store[64];
    char stream[80];
    char subject[96];
    char rid[17]; /* this replica's part of message ids: 16 hex digits */
    int copies;
    natsOptions *opts;
    natsConnection *nc;
    jsCtx *js;
    natsSubscription *sub;
    rpd_replica_wake_fn wake;
    void *wake_ctx;
    uint64_t next_token;
    atomic_bool connected;
    atomic_uint_fast64_t stream_last;
    atomic_uint_fast64_t failed, retried;
    uint64_t proposed;
    uint64_t start_last; /* the stream's last sequence when this replica started */
    pthread_mutex_t mu;
    node *head, *tail; /* the queue, under mu */
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

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    rpd_replica *r = closure;
    jsMsgMetaData *meta = NULL;
    node *n = calloc(1, sizeof *n);
    if (!n || natsMsg_GetMetaData(&meta, msg) != NATS_OK) {
        /* Without it the stream cannot be followed in order: losing a
         * message would diverge silently, so the replica stops instead. */
        rpd_log(RPD_LOG_ERROR, "replication: cannot read a stream message (%s); exiting",
                n ? "no metadata" : "out of memory");
        abort();
    }
    n->e.kind = RPD_REPLICA_MESSAGE;
    n->e.seq = meta->Sequence.Stream;
    n->e.pending = meta->NumPending;
    jsMsgMetaData_Destroy(meta);
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
    atomic_store(&r->stream_last, n->e.seq + n->e.pending);
    natsMsg_Destroy(msg);
    push(r, n);
}

static void on_pub_error(jsCtx *js, jsPubAckErr *pae, void *closure)
{
    rpd_replica *r = closure;
    const char *id = NULL, *tries = NULL;
    natsMsgHeader_Get(pae->Msg, "Nats-Msg-Id", &id);
    natsMsgHeader_Get(pae->Msg, HDR_TRY, &tries);
    uint64_t token = token_of(r, id);
    int tried = tries ? atoi(tries) : 1;
    /* No acknowledgement (lost, or the leader changed): the message may be
     * stored or not; sent again with the same id it is stored once. */
    if (pae->Err == NATS_TIMEOUT && tried < PUBLISH_TRIES) {
        char t[16];
        snprintf(t, sizeof t, "%d", tried + 1);
        natsMsgHeader_Set(pae->Msg, HDR_TRY, t);
        if (js_PublishMsgAsync(js, &pae->Msg, NULL) == NATS_OK) {
            atomic_fetch_add(&r->retried, 1);
            return;
        }
    }
    atomic_fetch_add(&r->failed, 1);
    node *n = calloc(1, sizeof *n);
    if (!n) {
        rpd_log(RPD_LOG_ERROR, "replication: out of memory reporting a failed publish; exiting");
        abort();
    }
    n->e.kind = RPD_REPLICA_FAILED;
    n->e.token = token;
    n->e.conflict = pae->ErrCode == JSStreamWrongLastSequenceErr;
    snprintf(n->e.reason, sizeof n->e.reason, "%s%s%s",
             pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err),
             pae->Err == NATS_TIMEOUT ? " (no acknowledgement; the mutation may still be applied)"
                                      : "",
             "");
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

/* ---- the loop -------------------------------------------------------------- */

static bool fail(char *why, size_t cap, const char *what, natsStatus s, jsErrCode jerr)
{
    const char *last = nats_GetLastError(NULL);
    /* The library prefixes its source position: "(conn.c:2088): ...". */
    const char *cut = last && last[0] == '(' ? strstr(last, "): ") : NULL;
    if (cut)
        last = cut + 3;
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
        r->copies = (int)c->Replicas;
        r->start_last = si->State.LastSeq;
        jsStreamInfo_Destroy(si);
        return ok;
    }
    if (s != NATS_NOT_FOUND)
        return fail(why, cap, "looking up the stream", s, jerr);
    const char *subjects[1] = {r->subject};
    for (int copies = want ? want : 3; copies >= 1; copies--) {
        jsStreamConfig sc;
        jsStreamConfig_Init(&sc);
        sc.Name = r->stream;
        sc.Subjects = subjects;
        sc.SubjectsLen = 1;
        sc.Storage = js_FileStorage;
        sc.Retention = js_LimitsPolicy;
        sc.Replicas = copies;
        sc.Duplicates = DEDUP_WINDOW_NS;
        jerr = 0;
        s = js_AddStream(&si, r->js, &sc, NULL, &jerr);
        if (s == NATS_OK) {
            r->copies = copies;
            jsStreamInfo_Destroy(si);
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
    snprintf(r->store, sizeof r->store, "%s", o->store);
    snprintf(r->stream, sizeof r->stream, "REPOSE_%s", o->store);
    snprintf(r->subject, sizeof r->subject, "repose.%s.m", o->store);
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
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = r->stream;
    so.Ordered = true;
    if (o->applied) {
        so.Config.DeliverPolicy = js_DeliverByStartSequence;
        so.Config.OptStartSeq = o->applied + 1;
    } else {
        so.Config.DeliverPolicy = js_DeliverAll;
    }
    jsErrCode jerr = 0;
    if ((s = js_Subscribe(&r->sub, r->js, r->subject, on_msg, r, NULL, &so, &jerr)) != NATS_OK) {
        fail(why, cap, "consuming the stream", s, jerr);
        goto failed;
    }
    return r;
failed:
    jsCtx_Destroy(r->js);
    natsConnection_Destroy(r->nc);
failed_opts:
    natsOptions_Destroy(r->opts);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return NULL;
}

void rpd_replica_close(rpd_replica *r)
{
    if (!r)
        return;
    if (r->sub) {
        natsSubscription_Unsubscribe(r->sub);
        natsSubscription_Destroy(r->sub);
    }
    natsConnection_Close(r->nc);
    jsCtx_Destroy(r->js);
    natsConnection_Destroy(r->nc);
    natsOptions_Destroy(r->opts);
    rpd_replica_event e;
    while (rpd_replica_next(r, &e))
        rpd_replica_event_free(&e);
    pthread_mutex_destroy(&r->mu);
    free(r);
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
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, r->subject, NULL, params, (int)len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, HDR_METHOD, method);
    uint64_t t = r->next_token;
    char id[40];
    snprintf(id, sizeof id, "%s-%llu", r->rid, (unsigned long long)t);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id;
    if (s == NATS_OK)
        s = js_PublishMsgAsync(r->js, &m, &po);
    if (s != NATS_OK) {
        natsMsg_Destroy(m);
        return fail(why, cap, "publishing the mutation", s, 0);
    }
    r->next_token++;
    r->proposed++;
    *token = t;
    return true;
}

bool rpd_replica_next(rpd_replica *r, rpd_replica_event *e)
{
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
    return true;
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
}
