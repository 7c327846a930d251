/* SPDX-License-Identifier: MIT */
/*
 * Integration test harness: starts the real reposed binary and talks to it
 * over its real sockets.
 *
 * A daemon gets its own temporary directory (mkdtemp) holding its Unix
 * socket and its stderr log.  rh_start() waits until the daemon has printed
 * "listening" for every listener it was asked to open, and parses the TCP
 * port from the line (the daemon is started with --tcp 127.0.0.1:0).
 *
 * The daemon binary comes from argv[1] (rh_init) or the REPOSED environment
 * variable.  When REPOSE_DAEMON_WRAPPER is set (for example
 * "valgrind --error-exitcode=99 --leak-check=full -q"), the daemon command is
 * prefixed with it, split on spaces, and every timeout is multiplied by
 * RH_WRAPPED_SCALE because such tools are much slower.
 *
 * Cleanup: every started daemon and every open connection is tracked;
 * rh_cleanup_all() (run by rh_teardown and at exit) kills what is left and
 * removes the temporary directories, so a failed assertion leaves nothing
 * behind.  Daemons also die with the test process (PR_SET_PDEATHSIG).
 *
 * Timeouts guard against hangs only; no test asserts a duration.
 */
#ifndef REPOSE_TESTS_HARNESS_H
#define REPOSE_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Every timeout is multiplied by this under REPOSE_DAEMON_WRAPPER. */
#define RH_WRAPPED_SCALE 12
/* Default guard for a reply or for start-up, ms (before scaling): a guard
 * against hangs, generous enough for an ASan build on a loaded machine. */
#define RH_TIMEOUT_MS 30000

/* Reads argv[1] (if given) as the daemon path, else $REPOSED.  Returns false
 * (with a message on stderr) when neither names an executable. */
bool rh_init(int argc, char **argv);
/* True under REPOSE_DAEMON_WRAPPER. */
bool rh_wrapped(void);
/* ms scaled for the wrapper. */
int rh_ms(int ms);
/* The daemon binary path. */
const char *rh_daemon_path(void);

typedef struct rh_opts {
    const char *unix_path;    /* NULL: <tempdir>/reposed.sock; "none": no Unix listener */
    const char *tcp;          /* NULL: "127.0.0.1:0"; "none": no TCP listener */
    const char *const *extra; /* more flags, NULL-terminated; may be NULL */
    bool no_wrapper;          /* run without REPOSE_DAEMON_WRAPPER even if set */
} rh_opts;

typedef struct rh_daemon {
    pid_t pid;           /* > 0 while running and not yet reaped */
    char dir[128];       /* the temporary directory ("" once removed) */
    char unix_path[256]; /* "" when there is no Unix listener */
    char log_path[300];  /* the daemon's stderr */
    int tcp_port;        /* 0 when there is no TCP listener */
    bool up;             /* it printed every "listening" line asked for */
    bool exited;         /* reaped; wait_status is valid */
    int wait_status;
    bool in_use; /* pool slot taken */
} rh_daemon;

/* Starts a daemon (o may be NULL for the defaults).  The daemon object
 * belongs to the harness (a static pool, so that cleanup after a failed
 * assertion never touches a dead stack frame); release it with rh_destroy.
 * d->up is true once it listens on everything asked for; false when it
 * exited first (d->exited and d->wait_status tell how) or did not come up
 * within the start-up timeout (it is then killed).  Returns NULL only when
 * no daemon could be spawned at all (pool full, mkdtemp or fork failed). */
rh_daemon *rh_start(const rh_opts *o);
/* Sends SIGTERM and waits for the exit.  Returns the exit code (0..255),
 * 128 + signal when killed by a signal, or -1 when it did not exit within
 * timeout_ms (it is then killed with SIGKILL). */
int rh_stop(rh_daemon *d, int timeout_ms);
/* Waits (at most timeout_ms) for the daemon to exit by itself; same return
 * values as rh_stop. */
int rh_wait_exit(rh_daemon *d, int timeout_ms);
/* Kills the daemon if it still runs, removes its temporary directory
 * (every file in it) and releases the pool slot.  NULL is a no-op. */
void rh_destroy(rh_daemon *d);
/* Sends a signal to a running daemon (no-op once it exited). */
void rh_signal(rh_daemon *d, int sig);
/* The daemon's resident set size in KiB from /proc, or -1 if unknown. */
long rh_rss_kb(const rh_daemon *d);
/* True when the daemon's stderr so far contains `text`. */
bool rh_log_contains(const rh_daemon *d, const char *text);
/* Copies the daemon's stderr so far to our stderr (for failure reports). */
void rh_dump_log(const rh_daemon *d);
/* Exit status as rh_stop returns it, from a raw wait status. */
int rh_exit_code(int wait_status);

/* Runs the daemon binary (never wrapped) with args (NULL-terminated) and
 * waits for it.  Captures up to cap-1 bytes of stdout and stderr (merged)
 * into out.  Returns the exit code as rh_exit_code, -1 on timeout. */
int rh_run(const char *const *args, char *out, size_t cap, int timeout_ms);

/* ---- connections ---------------------------------------------------------- */

typedef struct rh_conn rh_conn;

typedef enum rh_read_status {
    RH_LINE,    /* a complete line */
    RH_TIMEOUT, /* nothing complete within the timeout */
    RH_EOF,     /* the peer closed (any partial line is in *line) */
    RH_ERROR    /* read error (e.g. ECONNRESET) */
} rh_read_status;

/* Connect; NULL on failure.  The socket is non-blocking internally; every
 * call below has a timeout. */
rh_conn *rh_connect_unix(const char *path);
rh_conn *rh_connect_tcp(int port);
/* Connects to a running daemon: Unix when tcp is false, else TCP. */
rh_conn *rh_connect(const rh_daemon *d, bool tcp);
/* The same with a fixed receive buffer (SO_RCVBUF set before connecting,
 * which also stops TCP from growing it), for tests that need the kernel to
 * hold only a little of what the daemon sends. */
rh_conn *rh_connect_rcvbuf(const rh_daemon *d, bool tcp, int rcvbuf);
int rh_fd(const rh_conn *c);
/* Writes all n bytes (waits for the socket to drain, at most the default
 * timeout).  False on error or timeout. */
bool rh_send(rh_conn *c, const void *buf, size_t n);
/* rh_send of s plus "\n". */
bool rh_send_line(rh_conn *c, const char *s);
/* Reads the next line (without its "\n").  *line points into the
 * connection's buffer and stays valid until the next read on c. */
rh_read_status rh_read_line(rh_conn *c, int timeout_ms, const char **line, size_t *len);
/* Sends one line and returns the next reply line (NULL on timeout, EOF or
 * error), valid until the next read on c. */
const char *rh_call(rh_conn *c, const char *request);
/* Waits for the peer to close, discarding up to `max_lines` complete lines
 * first.  RH_EOF (or RH_ERROR for a reset) when it closed, RH_LINE when
 * more lines than allowed arrived, RH_TIMEOUT otherwise. */
rh_read_status rh_wait_close(rh_conn *c, int timeout_ms, size_t max_lines);
/* Bytes received but not yet returned as lines. */
size_t rh_pending(const rh_conn *c);
/* Closes and frees; NULL is a no-op. */
void rh_close(rh_conn *c);

/* ---- scratch directories ------------------------------------------------------ */

/* Creates a temporary directory that rh_cleanup_all removes (with the files
 * in it).  Returns its path (owned by the harness) or NULL. */
const char *rh_temp_dir(void);

/* ---- cleanup ---------------------------------------------------------------- */

/* Closes every open connection, kills every running daemon and removes
 * their directories and every rh_temp_dir. */
void rh_cleanup_all(void);
/* A cmocka-shaped teardown that calls rh_cleanup_all. */
int rh_teardown(void **state);

/* Monotonic milliseconds. */
long long rh_now_ms(void);
/* Sleeps ms milliseconds. */
void rh_sleep_ms(int ms);

#endif /* REPOSE_TESTS_HARNESS_H */
