/*
 * JSON-RPC 2.0 processing, independent of the event loop: a request line
 * goes in, reply lines come out.  The server (server.c) feeds it lines from
 * connections; the unit tests feed it strings.
 */
#ifndef REPOSE_SERVER_RPC_H
#define REPOSE_SERVER_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "codec/codec.h"
#include "repose/scene.h"
#include "stats.h"

#define RPD_VERSION "0.1.0"
#define RPD_PROTOCOL 1

/* Defaults of the limits (protocol v1); each has a command-line flag where
 * operators need one. */
#define RPD_DEFAULT_MAX_REQUEST_BYTES (16u << 20)
#define RPD_DEFAULT_MAX_JSON_DEPTH 64
#define RPD_DEFAULT_MAX_CONNECTIONS 1024
#define RPD_DEFAULT_WRITE_PAUSE_BYTES (1u << 20)
#define RPD_DEFAULT_WRITE_KILL_BYTES (64u << 20)
/* Most configurations in one check.batch (reported by hello). */
#define RPD_MAX_BATCH_CONFIGS 100000
/* One request line in this many is timed for the latency statistics. */
#define RPD_LATENCY_SAMPLE 8

/* JSON-RPC error codes (protocol v1). */
enum {
    RPD_PARSE_ERROR = -32700,
    RPD_INVALID_REQUEST = -32600,
    RPD_METHOD_NOT_FOUND = -32601,
    RPD_INVALID_PARAMS = -32602,
    RPD_INTERNAL_ERROR = -32603,
    RPD_NOT_FOUND = -32001,
    RPD_ALREADY_EXISTS = -32002,
    RPD_REVISION_CONFLICT = -32003,
    RPD_LIMIT_EXCEEDED = -32004,
    RPD_UNAUTHORIZED = -32005,
    RPD_SHUTTING_DOWN = -32006
};

typedef struct rpd_limits {
    size_t max_request_bytes;
    int max_json_depth;
    size_t max_connections;
    size_t max_shapes_per_scene;
    size_t write_pause_bytes;
    size_t write_kill_bytes;
} rpd_limits;

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
    bool shutting_down;
} rpd_core;

/* Per-connection protocol state. */
typedef struct rpd_session {
    bool is_tcp;
    bool authed; /* sent the right token (auth); only TCP sessions need it */
} rpd_session;

/* Longest request line before auth, where auth is required. */
#define RPD_PREAUTH_MAX_REQUEST_BYTES (16u * 1024u)
/* Longest token accepted in a token file. */
#define RPD_MAX_TOKEN_BYTES 4096

/* What goes into an error's "data" member. */
typedef enum rpd_data_kind {
    RPD_DATA_NONE,
    RPD_DATA_OFFSET,   /* offset */
    RPD_DATA_METHOD,   /* method */
    RPD_DATA_PATH,     /* path, reason */
    RPD_DATA_ENTITY,   /* kind, name (not found / already exists) */
    RPD_DATA_REVISION, /* expected, actual */
    RPD_DATA_LIMIT     /* limit, max */
} rpd_data_kind;

typedef struct rpd_error {
    int code;
    char message[512];
    rpd_data_kind data;
    size_t offset;
    char text[RP_CODEC_PATH_MAX];   /* method, path or entity name */
    char reason[RP_CODEC_REASON_MAX];
    const char *kind;               /* static: "scene", "model", "shape" */
    uint64_t expected, actual;
    const char *limit;              /* static limit name */
    uint64_t max;
} rpd_error;

/* One request being handled. */
typedef struct rpd_req {
    rpd_core *core;
    rpd_session *session;
    rpd_error err;
} rpd_req;

/* A handler writes its result value into w and returns true, or fills
 * req->err (through the rpd_fail_* helpers) and returns false; whatever it
 * wrote is then discarded. */
typedef bool (*rpd_handler)(rpd_req *req, const cJSON *params, rp_jw *w);

enum {
    RPD_METHOD_MUTATES = 1u << 0, /* changes the store (refused while shutting down) */
    RPD_METHOD_NOAUTH = 1u << 1   /* allowed before auth: ping, hello, auth */
};

/* Whether this session must auth before using other methods. */
static inline bool rpd_session_locked(const rpd_core *core, const rpd_session *s)
{
    return core->token && s->is_tcp && !s->authed;
}

typedef struct rpd_method {
    const char *name;
    rpd_handler handler;
    unsigned flags;
} rpd_method;

/* The method table (methods.c), sorted by name, and its size. */
extern const rpd_method rpd_methods[];
extern const size_t rpd_method_count;
const rpd_method *rpd_method_find(const char *name, size_t *index);

/* Sets up / tears down the shared state.  false when out of memory. */
bool rpd_core_init(rpd_core *core, const rpd_limits *limits);
void rpd_core_free(rpd_core *core);
rpd_limits rpd_default_limits(void);

/* Processes one request line (without its '\n') and appends the reply line
 * (with '\n'), if any, to out. */
void rpd_process_line(rpd_core *core, rpd_session *s, const char *line, size_t len, rp_jw *out);

/* Appends the error line sent for an overlong request line (id null);
 * `limit` names the limit that applied, `max` its value. */
void rpd_reply_line_too_long(rpd_core *core, rp_jw *out, const char *limit, size_t max);

/* Appends a standalone error line with id null (e.g. connection limit). */
void rpd_reply_error_line(rpd_core *core, rp_jw *out, const rpd_error *e);

/* Helpers for handlers; each returns false. */
bool rpd_fail(rpd_req *req, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
bool rpd_fail_params(rpd_req *req, const rp_codec_err *ce);
bool rpd_fail_path(rpd_req *req, const char *path, const char *reason);
bool rpd_fail_not_found(rpd_req *req, const char *kind, const char *name);
bool rpd_fail_exists(rpd_req *req, const char *kind, const char *name);
bool rpd_fail_revision(rpd_req *req, uint64_t expected, uint64_t actual);
bool rpd_fail_limit(rpd_req *req, const char *limit, uint64_t max);
bool rpd_fail_status(rpd_req *req, rp_status st);

#endif /* REPOSE_SERVER_RPC_H */
