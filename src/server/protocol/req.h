/* SPDX-License-Identifier: MIT */
/*
 * One request being handled, and how a handler fails: the rpd_fail_*
 * helpers fill the request's error, which the JSON-RPC layer (rpc.c) turns
 * into the error reply (rpd_write_error), the one place where errors are
 * written and counted.  Handlers (methods*.c) and the JSON-RPC layer both
 * use this header; neither includes the other's.
 */
#ifndef REPOSE_SERVER_REQ_H
#define REPOSE_SERVER_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "codec/codec.h"
#include "server/core/core.h"
#include "server/core/errors.h"

/* What goes into an error's "data" member. */
typedef enum rpd_data_kind {
    RPD_DATA_NONE,
    RPD_DATA_OFFSET,   /* offset */
    RPD_DATA_METHOD,   /* method */
    RPD_DATA_PATH,     /* path, reason */
    RPD_DATA_ENTITY,   /* kind, name (not found / already exists) */
    RPD_DATA_IN_USE,   /* kind, name, scene, robot (a model a robot instance uses) */
    RPD_DATA_REVISION, /* expected, actual */
    RPD_DATA_LIMIT,    /* limit, max */
    RPD_DATA_REASON    /* reason */
} rpd_data_kind;

typedef struct rpd_error {
    int code;
    char message[512]; /* valid UTF-8, never cut inside a character */
    rpd_data_kind data;
    size_t offset;
    char text[RP_CODEC_PATH_MAX];     /* method, path or entity name */
    char reason[RP_CODEC_REASON_MAX]; /* RPD_DATA_IN_USE: the scene */
    char robot[RP_CODEC_PATH_MAX];    /* RPD_DATA_IN_USE: the robot instance */
    const char *kind;                 /* static: "scene", "model", "shape" */
    uint64_t expected, actual;
    rpd_limit_id limit;
    uint64_t max;
} rpd_error;

/* One request being handled. */
/* What the requests of one line share (rpc.c starts it for each line):
 * the work units the line may still spend (max_request_work, or
 * max_loop_work for a line on the event loop while workers exist:
 * work_limit says which), and the check.batch joint table rpc.c read
 * straight from the text (its params.joints then holds "[]"; NULL
 * otherwise). */
typedef struct rpd_line {
    uint64_t work_left;
    rpd_limit_id work_limit;
    const struct rp_num_rows *batch_joints;
    bool in_batch; /* the line is a batch (rpc.c) */
} rpd_line;

/* One request: the shared state, its connection's session, its line, and
 * its error once it fails. */
typedef struct rpd_req {
    rpd_core *core;
    rpd_session *session;
    rpd_line *line;
    rpd_error err;
    /* Where the reply began and where its envelope (up to "result":)
     * ended, in the line's output (rpc.c, for session->outcomes). */
    size_t reply_at, reply_head_end;
    /* --nats: the mutation was published; its reply comes when the stream
     * brings it back (session->repl_token), so nothing is written now. */
    bool deferred;
    /* The method is no mutation: params may hold min_revision. */
    bool query;
    /* params.group of a check, a motion or a plan (rpd_check_setup): the
     * model's active joints it moves, ascending; joint vectors given as
     * arrays hold these only (rpd_decode_joint_vector).  NULL: all. */
    const size_t *group_dofs;
    size_t n_group_dofs;
    const char *group;
} rpd_req;

/* A handler writes its result value into w and returns true, or fills
 * req->err (through the rpd_fail_* helpers) and returns false; whatever it
 * wrote is then discarded.  A handler that writes a large result checks
 * rp_jw_failed(w) in its loops and stops early; the JSON-RPC layer then
 * answers -32004 max_reply_bytes (or -32603 when memory ran out). */
typedef bool (*rpd_handler)(rpd_req *req, const cJSON *params, rp_jw *w);

enum {
    RPD_METHOD_MUTATES = 1u << 0, /* changes the store: refused while shutting down */
    RPD_METHOD_NOAUTH = 1u << 1,  /* allowed before auth: ping, hello, auth */
    RPD_METHOD_WORKER = 1u << 2   /* a query: runs on a worker thread over a store snapshot */
};

typedef struct rpd_method {
    const char *name;
    rpd_handler handler;
    unsigned flags;
} rpd_method;

/* Helpers for handlers; each fills req->err and returns false. */
bool rpd_fail(rpd_req *req, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
bool rpd_fail_params(rpd_req *req, const rp_codec_err *ce);
bool rpd_fail_path(rpd_req *req, const char *path, const char *reason);
bool rpd_fail_not_found(rpd_req *req, const char *kind, const char *name);
bool rpd_fail_exists(rpd_req *req, const char *kind, const char *name);
/* -32002 "in use": model `name` is used by robot instance `robot` of
 * scene `scene` (proto/PROTOCOL.md, Robots in scenes). */
bool rpd_fail_in_use(rpd_req *req, const char *name, const char *scene, const char *robot);
bool rpd_fail_revision(rpd_req *req, uint64_t expected, uint64_t actual);
bool rpd_fail_limit(rpd_req *req, rpd_limit_id limit, uint64_t max);
bool rpd_fail_status(rpd_req *req, rp_status st);
/* The JSON-RPC error code of a library status (0 for RP_OK, -32603 for a
 * value out of range); proto/PROTOCOL.md lists the codes. */
int rpd_status_code(rp_status st);
/* -32007: the journal could not be written (durable.c); the message and
 * data.reason say why. */
bool rpd_fail_storage(rpd_req *req, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Fills e with a plain error (no data) whose message is fmt.  Also used by
 * the JSON-RPC layer for envelope and framing errors. */
void rpd_error_set(rpd_error *e, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Fills e with a -32007 storage error whose data.reason is fmt. */
void rpd_error_storage(rpd_error *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Fills e with a -32004 error for `limit` (its message says `what`). */
void rpd_error_limit(rpd_error *e, rpd_limit_id limit, uint64_t max, const char *what);

/* Opens a response object and writes its members up to the value of
 * "result" (error false) or "error" (true): {"jsonrpc":"2.0","id":ID,…
 * with id NULL written as null.  The caller writes the value and closes
 * the object. */
void rpd_write_envelope(rp_jw *w, const cJSON *id, bool error);

/* Counts an error in the statistics (errors, by code, the limit hit for
 * -32004) without writing it: for notifications, whose errors are not sent. */
void rpd_count_error(rpd_core *core, const rpd_error *e);

/* Writes a complete error response object with the given id (NULL: null)
 * and counts it: errors, errors by code, and the limit hit for -32004. */
void rpd_write_error(rpd_core *core, rp_jw *w, const cJSON *id, const rpd_error *e);
/* The same with the id as JSON text already written once (id_len bytes). */
void rpd_write_error_id_text(rpd_core *core, rp_jw *w, const char *id, size_t id_len,
                             const rpd_error *e);

/* Formats into dst like snprintf, but when the text does not fit it is cut
 * at a UTF-8 character boundary, never inside a character.  Every message
 * that quotes client input is formatted through this. */
void rpd_format(char *dst, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* REPOSE_SERVER_REQ_H */
