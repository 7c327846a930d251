/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC 2.0 processing, independent of the event loop: a request line
 * goes in, reply lines come out.  The server (server.c, conn.c) feeds it
 * lines from connections; the unit tests and fuzz targets feed it strings.
 */
#ifndef REPOSE_SERVER_RPC_H
#define REPOSE_SERVER_RPC_H

#include <stdbool.h>
#include <stddef.h>

#include "server/core/core.h"
#include "req.h"

/* Sets up / tears down the shared state: the store and the limits (NULL:
 * the defaults).  false when out of memory.  Installs nothing process-wide:
 * the daemon points cJSON at its arena itself (arena.h). */
bool rpd_core_init(rpd_core *core, const rpd_limits *limits);
void rpd_core_free(rpd_core *core);
/* Replaces the store by an empty one with the same limits and commit hook
 * (a replica's stale data directory, server.c); only before anything
 * listens.  false when out of memory (the old store stays). */
bool rpd_core_reset_store(rpd_core *core);

/* A request line parsed (rpd_parse_line) and not yet run: a worker parses
 * a large line and hands it to the event loop this way (conn.c), so that
 * the loop does not spend the parse. */
typedef struct rpd_parsed {
    cJSON *root;
    bool has_rows; /* check.batch's joint table, read straight from the text */
    rp_num_rows rows;
    char *rest;   /* the text cJSON parsed in that case */
    char *marked; /* a line with \u0000 escapes: the marked copy parsed (rpc.c) */
    size_t marked_len;
    /* Point clouds of its scene.put/create/replace requests, built by the
     * worker that parsed it (rpd_prebuild_clouds), so that the event loop
     * does not spend the build; NULL when none. */
    struct rpd_prebuilt *prebuilt;
    /* Its model.put requests with meshes, built the same way
     * (rpd_prebuild_models, methods_mesh.h); NULL when none. */
    struct rpd_prebuilt_models *prebuilt_models;
    /* The tree is not cJSON's: the nodes of the flat fast parse
     * (rpc.c, flat_parse), which live on its caller's stack. */
    bool borrowed;
} rpd_parsed;

/* Checks and parses a line: true with *p filled, or false when it needs
 * no running (blank) or was answered (its error line appended to out). */
bool rpd_parse_line(rpd_core *core, const char *line, size_t len, rpd_parsed *p, rp_jw *out);
/* Runs a parsed line, appending its reply line to out, and frees *p. */
void rpd_run_parsed(rpd_core *core, rpd_session *s, rpd_parsed *p, rp_jw *out);
/* Frees a parsed line that will not run. */
void rpd_parsed_free(rpd_parsed *p);

/* Notes that `bytes` of heap were freed (store content, connection
 * buffers), and returns free heap memory to the system (malloc_trim) when
 * at least RPD_TRIM_AFTER_BYTES were freed since the last time; true when
 * it did.  The daemon calls rpd_core_trim from a timer, so that many small
 * frees are returned too without a trim per operation. */
#define RPD_TRIM_AFTER_BYTES ((size_t)1 << 20)
void rpd_core_freed(rpd_core *core, size_t bytes);
bool rpd_core_trim(rpd_core *core);

/* Processes one request line (without its '\n') and appends the reply line
 * (with '\n'), if any, to out.  The reply is at most max_reply_bytes long
 * (plus the error objects that replace what did not fit). */
void rpd_process_line(rpd_core *core, rpd_session *s, const char *line, size_t len, rp_jw *out);
/* rpd_process_line for a worker thread: a line that holds a request of the
 * event loop (a mutation, a watch, auth, …) is parsed into *keep and not
 * run, and true is returned (the loop runs it: rpd_run_parsed); any other
 * line is processed here and false returned.  keep NULL: never kept. */
bool rpd_process_line_or_keep(rpd_core *core, rpd_session *s, const char *line, size_t len,
                              rp_jw *out, rpd_parsed *keep);

/* Light queries on the event loop (proto/PROTOCOL.md, "Queries run on
 * worker threads"): a single check, scene.distance or scene.check in a
 * line of at most RPD_LIGHT_LINE_BYTES runs on the event loop when no
 * worker job is queued, within RPD_LIGHT_WORK work units (about 0.5 ms);
 * one that needs more (core->light_overrun after the run) is run again on
 * a worker, and only that answer is sent. */
#define RPD_LIGHT_LINE_BYTES 4096
#define RPD_LIGHT_WORK 25000

/* Whether a line should go to a worker thread: a single request, or a
 * batch whose first request, has a "method", found among the top-level
 * members before any nested value in the first 512 bytes, that is a query
 * (RPD_METHOD_WORKER); or the line is at least RPD_PARSE_ON_WORKER_BYTES
 * long.  A placement hint only: the worker parses the line and runs it
 * when it holds queries only (rpd_process_line_or_keep); otherwise it hands
 * the parsed line back to the event loop, which runs it there. */
#define RPD_PARSE_ON_WORKER_BYTES ((size_t)64 << 10)
bool rpd_line_wants_worker(const char *line, size_t len);

/* Where a line runs, from one look at it: LOOP when rpd_line_wants_worker
 * says no; LIGHT for a light query (above) it would send to a worker;
 * WORKER otherwise. */
typedef enum rpd_place { RPD_PLACE_LOOP, RPD_PLACE_WORKER, RPD_PLACE_LIGHT } rpd_place;
rpd_place rpd_line_place(const char *line, size_t len);

/* Appends the error line sent for an overlong request line (id null);
 * `limit` is the limit that applied, `max` its value. */
void rpd_reply_line_too_long(rpd_core *core, rp_jw *out, rpd_limit_id limit, size_t max);

/* Appends a standalone error line with id null (e.g. connection limit). */
void rpd_reply_error_line(rpd_core *core, rp_jw *out, const rpd_error *e);
/* Writes to out the held replies `held` (n bytes, which stood at offset
 * `base` of the connection's output when `o` recorded them) with every
 * success reply o recorded there turned into a -32007 error with
 * data.reason `reason` and the same id: the group's mutations were undone
 * (a failed group fsync, durable.h).  Everything else is copied as it is:
 * error replies, batch brackets and commas, line ends. */
void rpd_reply_undone(rpd_core *core, const char *held, size_t n, size_t base,
                      const rpd_outcomes *o, rp_jw *out, const char *reason);

/* --nats: a batch line that holds a mutation, as the texts of its
 * requests (malloc'ed; free with rpd_batch_free), which the connection
 * runs one after the other as lines of their own, each mutation waiting
 * for the stream, and answers with their replies as one array (conn.c).
 * False, with nothing allocated, for any other line, or a batch holding
 * an array (answered as a batch, its mutations -32600). */
bool rpd_batch_split(const char *line, size_t len, char ***elems, size_t *n);
void rpd_batch_free(char **elems, size_t n);

/* The largest min_revision a line's requests ask for when it is beyond
 * `have` (the store's revision), else 0 (0 also when there is none, or the
 * line is not readable: the requests then answer for themselves).  A
 * cheap look at the text first (rpc.c): the line is parsed only when it
 * may ask for more than `have`. */
uint64_t rpd_line_min_revision(const char *line, size_t len, uint64_t have);

/* --nats: the reply to request `id` (JSON text) whose proposal was not
 * published: -32003 when JetStream refused an expected sequence
 * (conflict), else -32007 with the engine's reason, which says nothing of
 * whether it changed anything (an earlier send may have been stored, and
 * is then applied: the client reads the revision); a line of its own. */
void rpd_reply_proposal_failed(rpd_core *core, rp_jw *out, const char *id, bool conflict,
                               const char *reason);

/* Whether a request line is the start of an HTTP request (a request line
 * such as "POST / HTTP/1.1" of one of the nine HTTP/1.1 methods, or the
 * HTTP/2 preface "PRI * HTTP/2.0", in any case and with any spaces or tabs
 * around its words) or a Host header ("Host: …"): never valid JSON, and a
 * sign that a browser or an HTTP client is talking to us. */
bool rpd_line_is_http(const char *line, size_t len);

/* The reply sent to an HTTP client before its connection is closed. */
extern const char rpd_http_reply[];

#endif /* REPOSE_SERVER_RPC_H */
