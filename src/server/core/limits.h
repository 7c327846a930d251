/* SPDX-License-Identifier: MIT */
/*
 * Every limit reposed enforces, in one table.  Each row gives the limit's
 * name (the struct field, the key in `hello.limits`, in `stats.limits_hit`
 * and in the `limit` member of a -32004 error), its default, its
 * command-line flag, the range the flag accepts, and its help text.  The
 * struct, the defaults, the flags, `--help`, `hello` and the stats counters
 * are all generated from it: adding a limit is one row plus the code that
 * enforces it.
 */
#ifndef REPOSE_SERVER_LIMITS_H
#define REPOSE_SERVER_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "codec/codec.h"

/* X(name, default, min, max, flag, help).  Values are counts, bytes or
 * seconds as the help says; a timeout of 0 turns it off. */
#define RPD_LIMIT_TABLE(X)                                                                         \
    X(max_request_bytes, 16u << 20, 64, 1u << 30, "--max-request-bytes",                           \
      "longest request line in bytes")                                                             \
    X(max_request_bytes_before_auth, 16u << 10, 64, 1u << 30, "--max-preauth-request-bytes",       \
      "longest request line before auth (TCP with --token-file)")                                  \
    X(max_reply_bytes, 32u << 20, 4096, 1u << 30, "--max-reply-bytes",                             \
      "largest reply line in bytes; a larger one is refused, not built")                           \
    X(max_json_depth, 64, 2, 512, "--max-json-depth", "deepest JSON nesting of a request")         \
    X(max_tcp_connections, 1024, 1, 1u << 20, "--max-tcp-connections", "open TCP connections")     \
    X(max_unix_connections, 1024, 1, 1u << 20, "--max-unix-connections",                           \
      "open Unix socket connections (counted apart from TCP)")                                     \
    X(max_input_bytes, 256u << 20, 1u << 16, (size_t)1 << 40, "--max-input-bytes",                 \
      "request bytes buffered across all connections")                                             \
    X(write_pause_bytes, 1u << 20, 1024, (size_t)1 << 40, "--write-pause-bytes",                   \
      "unsent reply bytes at which a client's requests stop being read")                           \
    X(write_kill_bytes, 64u << 20, 1024, (size_t)1 << 40, "--write-kill-bytes",                    \
      "unsent reply bytes at which a client is disconnected")                                      \
    X(watch_buffer_bytes, 8u << 20, 4096, (size_t)1 << 40, "--watch-buffer-bytes",                 \
      "unsent bytes a watcher may fall behind before it gets scene.resync instead")                \
    X(max_output_bytes, 256u << 20, 8192, (size_t)1 << 40, "--max-output-bytes",                   \
      "unsent reply and notification bytes of all clients together; over it the largest "          \
      "holders are disconnected")                                                                  \
    X(max_watches, 256, 1, 1u << 20, "--max-watches", "watches one connection may hold")           \
    X(max_shapes_per_scene, 1000000, 1, 100000000, "--max-shapes", "shapes in one scene")          \
    X(max_halfspaces_per_scene, 64, 1, 1024, "--max-halfspaces",                                   \
      "half-spaces in one scene (every query tests each of them)")                                 \
    X(max_scenes, 100000, 1, 100000000, "--max-scenes", "scenes in the store")                     \
    X(max_models, 10000, 1, 100000000, "--max-models", "models in the store")                      \
    X(max_batch_configurations, 100000, 1, 10000000, "--max-batch-configurations",                 \
      "configurations in one check.batch")                                                         \
    X(max_model_links, 4096, 1, 1000000, "--max-model-links", "links in one model")                \
    X(max_allowed_pairs, 1000000, 0, 100000000, "--max-allowed-pairs",                             \
      "allowed pairs in one model")                                                                \
    X(max_request_work, 50000000, 1000, (size_t)1 << 50, "--max-request-work",                     \
      "work units (about a pair test each) one request line may need, estimated up front")         \
    X(max_loop_work, 5000000, 1000, (size_t)1 << 50, "--max-loop-work",                            \
      "work units one request line may spend on the event loop (mutations, model.put, batches "    \
      "mixing mutations with queries; about 100 ms)")                                              \
    X(max_plan_ms, 10000, 1, 3600000, "--max-plan-ms",                                             \
      "milliseconds one plan may run (its timeout_ms is at most this; a worker is busy "           \
      "meanwhile)")                                                                                \
    X(max_wait_ms, 5000, 0, 3600000, "--max-wait-ms",                                              \
      "milliseconds a query with min_revision waits for the store to reach that revision (then "   \
      "-32004; 0: no wait)")                                                                       \
    X(idle_timeout_s, 300, 0, 86400 * 365, "--idle-timeout",                                       \
      "seconds a TCP connection may go without a complete request (0: never)")                     \
    X(auth_timeout_s, 10, 0, 86400, "--auth-timeout",                                              \
      "seconds a TCP connection may stay unauthenticated (with --token-file; 0: never)")

typedef struct rpd_limits {
#define RPD_LIMIT_FIELD(name, dflt, lo, hi, flag, help) size_t name;
    RPD_LIMIT_TABLE(RPD_LIMIT_FIELD)
#undef RPD_LIMIT_FIELD
} rpd_limits;

/* One index per limit, e.g. RPD_LIMIT_max_reply_bytes: stats count hits per
 * limit in an array indexed by these.  Extra entries name what is counted
 * but not configured. */
typedef enum rpd_limit_id {
#define RPD_LIMIT_ID(name, dflt, lo, hi, flag, help) RPD_LIMIT_##name,
    RPD_LIMIT_TABLE(RPD_LIMIT_ID)
#undef RPD_LIMIT_ID
        RPD_LIMIT_COUNT
} rpd_limit_id;

rpd_limits rpd_default_limits(void);

/* The limit's name ("max_reply_bytes"). */
const char *rpd_limit_name(rpd_limit_id id);

/* Whether flag ("--max-reply-bytes") sets a limit. */
bool rpd_limits_is_flag(const char *flag);

/* Command-line handling: when `flag` is one of the table's flags, parses
 * `value` into *l and returns 1; prints a message naming the flag to stderr
 * and returns -1 when the value is not an integer in range; returns 0 for a
 * flag that is not a limit.  --max-connections N sets both connection
 * limits. */
int rpd_limits_parse_flag(rpd_limits *l, const char *flag, const char *value);

/* Makes the limits consistent: write_kill_bytes is lowered to
 * max_output_bytes (one client alone must never reach the cap for all
 * clients), max_reply_bytes to write_kill_bytes - write_pause_bytes (one
 * reply of the largest size must not disconnect a client that reads), and
 * the pre-auth line limit to the line limit.  Prints what is wrong and returns false when the limits
 * cannot work together. */
bool rpd_limits_check(rpd_limits *l, FILE *err);

/* Prints one line per limit flag for --help. */
void rpd_limits_usage(FILE *to);

/* Writes the limits as a JSON object (hello). */
void rpd_limits_write(rp_jw *w, const rpd_limits *l);

#endif /* REPOSE_SERVER_LIMITS_H */
