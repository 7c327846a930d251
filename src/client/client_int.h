/* SPDX-License-Identifier: MIT */
/*
 * Private parts of the client shared by client.c (connections, socket I/O,
 * errors) and client_rpc.c (JSON-RPC requests and replies, raw lines).
 */
#ifndef REPOSE_CLIENT_INT_H
#define REPOSE_CLIENT_INT_H
#include "repose/client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* BSDs: SO_NOSIGPIPE is set on the socket instead */
#endif

/* Bytes read from the socket per recv(). */
#define READ_CHUNK 65536

struct rp_client {
    int fd;            /* -1 once closed */
    int timeout_ms;    /* <= 0: none */
    uint64_t next_id;  /* the id of the next request */
    uint64_t *pending; /* ring of ids awaiting replies */
    size_t pending_head, pending_count, pending_cap;
    char *in; /* received bytes in[in_start..in_len) */
    size_t in_start, in_len, in_cap;
    bool eof;                      /* the server closed its side */
    rp_client_error_kind broken;   /* non-OK once the stream is unusable */
    rp_client_notification *notes; /* ring of notifications not yet taken */
    size_t notes_head, notes_count, notes_cap;
};

/* A growable string: appends that fail to allocate set oom and are
 * dropped, so a run of appends is checked once at the end.  Start from
 * {NULL, 0, 0, false}; p (NUL-terminated once anything was added) is
 * malloc'ed, the owner frees it. */
typedef struct rp_client_sb {
    char *p;
    size_t len, cap;
    bool oom;
} rp_client_sb;
void rp_client_sb_add_(rp_client_sb *b, const char *s, size_t n);
void rp_client_sb_puts_(rp_client_sb *b, const char *s);
/* Appends s (NUL-terminated) as a JSON string literal; bytes >= 0x20 other
 * than '"' and '\\' are copied as they are (check UTF-8 first). */
void rp_client_sb_json_string_(rp_client_sb *b, const char *s);

/* Appends v (finite) as a JSON number that reads back as exactly v
 * ("%.17g", with JSON's '.' whatever LC_NUMERIC's decimal point is). */
void rp_client_sb_double_(rp_client_sb *b, double v);

/* Length of s[0..n) without a UTF-8 sequence that a cut at n would split,
 * so that a message cut there stays valid UTF-8. */
size_t rp_client_utf8_cut_(const char *s, size_t n);

/* Sets *err (may be NULL) and returns kind.  printf-style message. */
rp_client_error_kind rp_client_fail_(rp_client_error *err, rp_client_error_kind kind, int code,
                                     const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Marks the stream unusable (closes the socket) and returns kind. */
rp_client_error_kind rp_client_breaks_(rp_client *c, rp_client_error_kind kind);
/* RP_CLIENT_OK when c can still be used, else fills err. */
rp_client_error_kind rp_client_usable_(const rp_client *c, rp_client_error *err);
/* Absolute deadline (ms) for the client's timeout; <= 0 means none. */
long long rp_client_deadline_after_(int timeout_ms);
/* Writes n bytes by the deadline, reading replies meanwhile. */
rp_client_error_kind rp_client_write_all_(rp_client *c, const char *p, size_t n, long long deadline,
                                          rp_client_error *err);
/* The next complete line (without '\n'), malloc'ed, by the deadline. */
rp_client_error_kind rp_client_next_line_(rp_client *c, long long deadline, char **line,
                                          size_t *len, rp_client_error *err);
/* Monotonic milliseconds, the clock deadlines are on. */
long long rp_client_now_ms_(void);

/* Parses one reply line, line[0..len) with line[len] == '\0' (no '\n'), as
 * the reply to the request with id `want`; the socket-free half of reading a
 * reply, also driven by tests/fuzz/fuzz_client_reply.c.  Returns
 *   RP_CLIENT_OK        a result: *result_raw (when not NULL) is its raw text
 *                       as the server wrote it, *reply (when not NULL) the
 *                       parsed reply; both malloc'ed, the caller frees them;
 *   RP_CLIENT_RPC       an error reply: err->code, err->message and err->data
 *                       (the raw text of error.data, or NULL);
 *   RP_CLIENT_PROTOCOL  not a JSON-RPC 2.0 response to `want` (not JSON, a
 *                       NUL byte, no "jsonrpc":"2.0", no id or another id,
 *                       not exactly one of result and error, an error
 *                       without an integer code or a string message);
 *   RP_CLIENT_NOMEM     out of memory copying the result.
 * An error reply with id null counts as the answer to `want` (the server
 * could not read the request).  *reply and *result_raw are NULL unless OK. */
rp_client_error_kind rp_client_parse_reply_(const char *line, size_t len, uint64_t want,
                                            cJSON **reply, char **result_raw, rp_client_error *err);

/* Parses one line, line[0..len) with line[len] == '\0' (no '\n'), that
 * may be a server notification or the reply to the request with id `want`;
 * the socket-free half of reading a line, also driven by
 * tests/fuzz/fuzz_client_reply.c.  A notification is a JSON object with a
 * "method" member and no "id" member (as cJSON reads it): then *is_note is
 * set and the result is
 *   RP_CLIENT_OK        *note filled (strings malloc'ed: the caller frees
 *                       them with rp_client_notification_free);
 *   RP_CLIENT_PROTOCOL  "jsonrpc" is not "2.0", the method is not a string,
 *                       params are neither an object nor an array, or a
 *                       scene.changed / scene.deleted / scene.resync lacks
 *                       an integer watch (0..2^53), a string scene, an
 *                       integer revision (0..2^53) or, for scene.changed, an
 *                       object put and an array removed;
 *   RP_CLIENT_NOMEM.
 * *note stays zeroed unless OK.  Any other line is not a notification
 * (*is_note false) and is parsed exactly as rp_client_parse_reply_ does,
 * with the same outputs. */
rp_client_error_kind rp_client_parse_line_(const char *line, size_t len, uint64_t want,
                                           bool *is_note, rp_client_notification *note,
                                           cJSON **reply, char **result_raw, rp_client_error *err);

/* Queues a notification (its strings move into the queue and *n is zeroed).
 * RP_CLIENT_NOMEM leaves *n to the caller. */
rp_client_error_kind rp_client_queue_note_(rp_client *c, rp_client_notification *n,
                                           rp_client_error *err);
/* Frees every queued notification and the queue. */
void rp_client_free_notes_(rp_client *c);

#endif /* REPOSE_CLIENT_INT_H */
