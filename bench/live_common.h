/* SPDX-License-Identifier: MIT */
/*
 * What live_bench needs around its sections: request text, a blocking
 * client connection that also reads pipelined replies and notifications,
 * the reposed process under test (started on a temporary Unix socket, its
 * RSS and CPU time read from /proc), and the few protocol calls every
 * section makes (hello's limits, stats, uploading a scene or the arm7
 * model).  Errors end the program (lb_die): a benchmark has nobody to hand
 * them to.  Everything is single-threaded except that separate lb_conn
 * objects may be used from separate threads.
 */
#ifndef REPOSE_BENCH_LIVE_COMMON_H
#define REPOSE_BENCH_LIVE_COMMON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kin_common.h"

/* ---- small things ---- */

/* Prints "live_bench: MESSAGE" on stderr and exits 1 (atexit handlers stop
 * the daemon). */
__attribute__((format(printf, 1, 2), noreturn)) void lb_die(const char *fmt, ...);
void *lb_xrealloc(void *p, size_t n); /* realloc or die */
/* The nearest-rank percentile p (0..100) of v[0..n), which it sorts; 0 for
 * an empty set.  With 100 samples p99 is the second largest. */
double lb_pct(double *v, size_t n, double p);
void lb_sleep_ms(long ms);

/* A growable list of doubles (round-trip samples); zero-initialise it. */
typedef struct lb_samples {
    double *v;
    size_t n, cap;
} lb_samples;
void lb_sample_add(lb_samples *s, double x);

/* ---- request text ---- */

typedef struct lb_text {
    char *p; /* NUL-terminated */
    size_t len, cap;
} lb_text;
void lb_text_init(lb_text *t);
void lb_text_free(lb_text *t);
__attribute__((format(printf, 2, 3))) void lb_add(lb_text *t, const char *fmt, ...);
void lb_add_json_string(lb_text *t, const char *s); /* a JSON string literal of s */
void lb_add_shape(lb_text *t, const rp_shape *s);   /* 17 significant digits */
void lb_add_joints(lb_text *t, const double *q, size_t dof);

/* ---- connections ---- */

/* A blocking Unix-socket client with a read buffer that keeps whatever
 * arrived after the last complete line. */
typedef struct lb_conn {
    int fd;
    char *buf;
    size_t cap;
    size_t start, end; /* unread bytes */
    size_t scan;       /* start..scan holds no '\n' */
} lb_conn;
bool lb_conn_open(lb_conn *c, const char *path); /* false when refused */
void lb_conn_must_open(lb_conn *c, const char *path);
void lb_conn_close(lb_conn *c);
void lb_conn_send(lb_conn *c, const char *p, size_t n); /* all of it, or die */
/* One read() into the buffer (blocks when nothing is there); false when the
 * daemon closed the connection. */
bool lb_conn_read_some(lb_conn *c);
void lb_conn_fill(lb_conn *c); /* lb_conn_read_some, or die */
/* The next complete line in the buffer, NUL-terminated in place of its
 * '\n', or NULL; valid until the next read into c. */
char *lb_conn_take(lb_conn *c, size_t *len);
char *lb_conn_line(lb_conn *c, size_t *len); /* lb_conn_take, reading until there is one */
/* Sends a request line and reads one line; *ns (when not NULL) gets the
 * round trip, from the first byte written to the last byte read. */
char *lb_conn_call(lb_conn *c, const lb_text *req, double *ns, size_t *len);

/* ---- replies ---- */

long lb_reply_error(const char *line, size_t len); /* the error code, 0 for a result */
void lb_must_ok(const char *line, size_t len, const char *what); /* dies on an error */
unsigned long long lb_reply_revision(const char *line);          /* the first "revision", or 0 */
size_t lb_count_in(const char *s, const char *needle);

/* ---- the daemon under test (one at a time) ---- */

/* Starts `bin --unix DIR/reposed.sock --tcp none --log-level warn EXTRA...`
 * in a fresh temporary DIR, its output in DIR/reposed.log, and waits until
 * it accepts connections; dies (printing the log) when it does not come up.
 * It is stopped by lb_daemon_stop or at exit. */
void lb_daemon_start(const char *bin, const char *const *extra, size_t n_extra);
/* SIGTERM, wait, remove DIR.  Does nothing when no daemon runs. */
void lb_daemon_stop(void);
const char *lb_daemon_sock(void);
size_t lb_daemon_rss(void);   /* VmRSS, bytes */
double lb_daemon_cpu_s(void); /* user + system CPU seconds so far, every thread */
double lb_self_cpu_s(void);   /* the same for this process */
/* Whether `bin --help` mentions `option` (e.g. "--threads"). */
bool lb_daemon_has_option(const char *bin, const char *option);

/* ---- protocol calls ---- */

typedef struct lb_limits {
    size_t request_bytes, batch_configurations, request_work;
} lb_limits;
lb_limits lb_get_limits(lb_conn *c);                  /* from hello */
cJSON *lb_get_stats(lb_conn *c);                      /* stats' result; the caller deletes it */
size_t lb_json_size(const cJSON *o, const char *key); /* a non-negative number member, or 0 */
/* Sends shapes [0, s->n) as scene `name`: scene.create with the first ones,
 * then scene.put, each request at most `chunk` bytes, or less when the
 * daemon's max_request_bytes is smaller.  Returns the number of requests. */
size_t lb_upload_scene(lb_conn *c, const char *name, const kb_scene *s, size_t chunk);
/* model.put "arm7" from its URDF and SRDF text. */
void lb_upload_model(lb_conn *c, const kb_robot *robot);

#endif
