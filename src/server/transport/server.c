/* SPDX-License-Identifier: MIT */
/*
 * Listeners, signals and the shutdown sequence of reposed.
 *
 * Listeners are ours (--tcp, --unix) or, under socket activation, the sockets
 * systemd passed us; a socket file is unlinked at exit only if we created it.
 * systemd is told READY=1 once every listener accepts, STOPPING=1 when
 * shutdown begins, and WATCHDOG=1 from a timer when it asks for it (sd.h).
 *
 * Shutdown (SIGTERM or SIGINT): close the listeners, stop reading from every
 * client, let pending replies flush for up to RPD_SHUTDOWN_GRACE_MS, close
 * every handle, and return from uv_run with nothing left open so that
 * uv_loop_close succeeds.  A second signal skips the grace period.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/protocol/arena.h"
#include "server/protocol/methods.h"
#include "server/persistence/durable.h"
#include "server/core/log.h"
#include "addr.h"
#include "server/http/http.h"
#include "sd.h"
#include "server/core/pool.h"
#include "server_int.h"
#include "server/notify/watch.h"
#include "server/replica/replica.h"
#include "server/persistence/image.h"

/* ---- listeners ---------------------------------------------------------------- */

static void close_if_open(uv_handle_t *h)
{
    if (h->loop && !uv_is_closing(h))
        uv_close(h, NULL);
}

static void on_connection(uv_stream_t *listener, int status)
{
    rpd_server *srv = listener->data;
    if (status < 0) {
        rpd_log(RPD_LOG_WARN, "accept failed: %s", uv_strerror(status));
        return;
    }
    rpd_conn_accept(srv, listener, listener->type == UV_TCP);
}

/* Initialises the next listener slot as a TCP (is_tcp) or pipe handle and
 * counts it, so that shutdown closes it whatever happens next.  NULL when
 * every slot is taken. */
static rpd_listener *add_listener(rpd_server *srv, bool is_tcp)
{
    if (srv->n_listeners >= RPD_MAX_LISTENERS)
        return NULL;
    rpd_listener *l = &srv->listeners[srv->n_listeners];
    if (is_tcp)
        uv_tcp_init(srv->loop, &l->h.tcp);
    else
        uv_pipe_init(srv->loop, &l->h.pipe, 0);
    l->h.handle.data = srv;
    srv->n_listeners++;
    return l;
}

/* The TCP policy, for our own and for passed sockets: a non-loopback address
 * needs a token file or --insecure-tcp.  WHAT names the socket in the error. */
static bool tcp_allowed(const rpd_server *srv, const struct sockaddr_storage *addr,
                        const char *what)
{
    if (srv->core.token || srv->cfg.insecure_tcp || rpd_addr_is_loopback(addr))
        return true;
    rpd_log(RPD_LOG_ERROR,
            "refusing to listen on tcp %s without --token-file: anyone who can reach "
            "that address could change the scenes (use --insecure-tcp to do it anyway)",
            what);
    return false;
}

/* Formats a bound TCP address as "HOST:PORT" ("[v6]:PORT"). */
static void format_tcp(const struct sockaddr_storage *addr, char *out, size_t size)
{
    char ip[64] = "?";
    if (addr->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)addr;
        uv_ip6_name(a, ip, sizeof ip);
        snprintf(out, size, "[%s]:%d", ip, ntohs(a->sin6_port));
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)addr;
        uv_ip4_name(a, ip, sizeof ip);
        snprintf(out, size, "%s:%d", ip, ntohs(a->sin_port));
    }
}

/* The line scripts wait for, "listening on TRANSPORT ADDRESS" (event
 * "listening", fields transport and address). */
static void log_listening(const char *transport, const char *address, size_t len)
{
    char fields[600], addr[560];
    rpd_log_json_string(address, len, addr, sizeof addr);
    snprintf(fields, sizeof fields, "\"transport\":\"%s\",\"address\":%s", transport, addr);
    rpd_log_event(RPD_LOG_ALWAYS, "listening", fields, "listening on %s %.*s", transport, (int)len,
                  address);
}

/* Logs the line scripts wait for: "listening on tcp HOST:PORT". */
static void log_tcp_listening(uv_tcp_t *tcp)
{
    struct sockaddr_storage bound;
    memset(&bound, 0, sizeof bound);
    int len = sizeof bound;
    char text[96];
    uv_tcp_getsockname(tcp, (struct sockaddr *)&bound, &len);
    format_tcp(&bound, text, sizeof text);
    log_listening("tcp", text, strlen(text));
}

/* Logs "listening on unix PATH"; an abstract name is shown with '@'. */
static void log_unix_listening(uv_pipe_t *pipe)
{
    char path[sizeof(struct sockaddr_un)];
    size_t len = sizeof path - 1;
    if (uv_pipe_getsockname(pipe, path, &len) != 0)
        len = 0;
    path[len] = '\0';
    if (len > 0 && path[0] == '\0')
        path[0] = '@';
    log_listening("unix", path, len);
}

/* Reads the auth token: the file must not be readable by others (the token
 * is a password), and holds one line (a trailing newline is dropped). */
static bool read_token(const char *path, rpd_core *core)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st) != 0) {
        rpd_log(RPD_LOG_ERROR, "--token-file %s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return false;
    }
    if (st.st_mode & S_IROTH) {
        rpd_log(RPD_LOG_ERROR, "--token-file %s: readable by every user; chmod o-r it first", path);
        fclose(f);
        return false;
    }
    char *buf = calloc(1, RPD_MAX_TOKEN_BYTES + 2);
    size_t n = buf ? fread(buf, 1, RPD_MAX_TOKEN_BYTES + 1, f) : 0;
    fclose(f);
    if (!buf)
        return false;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (n == 0 || n > RPD_MAX_TOKEN_BYTES || memchr(buf, '\0', n) || memchr(buf, '\n', n)) {
        rpd_log(RPD_LOG_ERROR, "--token-file %s: must hold one line of 1-%d bytes", path,
                RPD_MAX_TOKEN_BYTES);
        free(buf);
        return false;
    }
    buf[n] = '\0';
    core->token = buf;
    core->token_len = n;
    return true;
}

static bool listen_tcp(rpd_server *srv)
{
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    int rc = rpd_addr_parse(srv->cfg.tcp, &addr);
    if (rc < 0) {
        rpd_log(RPD_LOG_ERROR, "--tcp %s: expected HOST:PORT with a numeric address", srv->cfg.tcp);
        return false;
    }
    if (!tcp_allowed(srv, &addr, srv->cfg.tcp))
        return false;
    rpd_listener *l = add_listener(srv, true);
    rc = l ? uv_tcp_bind(&l->h.tcp, (const struct sockaddr *)&addr, 0) : UV_EMFILE;
    if (rc == 0)
        rc = uv_listen(&l->h.stream, RPD_LISTEN_BACKLOG, on_connection);
    if (rc < 0) {
        rpd_log(RPD_LOG_ERROR, "cannot listen on tcp %s: %s", srv->cfg.tcp, uv_strerror(rc));
        return false;
    }
    log_tcp_listening(&l->h.tcp);
    return true;
}

/* A socket file is stale when nothing accepts connections on it. */
static bool socket_is_live(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strncpy(sa.sun_path, path, sizeof sa.sun_path - 1);
    bool live = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return live;
}

static bool listen_unix(rpd_server *srv)
{
    const char *path = srv->cfg.unix_path;
    struct sockaddr_un sa;
    if (strlen(path) >= sizeof sa.sun_path) {
        rpd_log(RPD_LOG_ERROR, "--unix %s: path longer than %zu bytes", path,
                sizeof sa.sun_path - 1);
        return false;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            rpd_log(RPD_LOG_ERROR, "--unix %s: exists and is not a socket; not replacing it", path);
            return false;
        }
        if (socket_is_live(path)) {
            rpd_log(RPD_LOG_ERROR, "--unix %s: another server is listening there", path);
            return false;
        }
        rpd_log(RPD_LOG_INFO, "replacing stale socket %s", path);
        unlink(path);
    }
    rpd_listener *l = add_listener(srv, false);
    if (!l)
        return false;
    /* Create the socket file with mode 0660 from the start: no window in
     * which it is more open than that. */
    mode_t old = umask(0117);
    int rc = uv_pipe_bind(&l->h.pipe, path);
    umask(old);
    if (rc == 0) {
        srv->unix_path_created = strdup(path);
        rc = uv_listen(&l->h.stream, RPD_LISTEN_BACKLOG, on_connection);
    }
    if (rc < 0) {
        rpd_log(RPD_LOG_ERROR, "cannot listen on unix %s: %s", path, uv_strerror(rc));
        return false;
    }
    chmod(path, 0660);
    log_listening("unix", path, strlen(path));
    return true;
}

/* Adopts passed socket FD (socket activation): a Unix stream socket becomes
 * a pipe listener, an IPv4/IPv6 one a TCP listener under the same policy as
 * --tcp.  The socket stays systemd's: its file is never unlinked. */
static bool adopt_fd(rpd_server *srv, int fd, const char *name)
{
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    socklen_t alen = sizeof addr;
    int type = 0;
    socklen_t tlen = sizeof type;
    if (getsockname(fd, (struct sockaddr *)&addr, &alen) != 0 ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0) {
        rpd_log(RPD_LOG_ERROR, "passed fd %d (%s): not a socket: %s", fd, name, strerror(errno));
        return false;
    }
    bool is_tcp = addr.ss_family == AF_INET || addr.ss_family == AF_INET6;
    if (type != SOCK_STREAM || (!is_tcp && addr.ss_family != AF_UNIX)) {
        rpd_log(RPD_LOG_ERROR,
                "passed fd %d (%s): not a Unix, IPv4 or IPv6 stream socket "
                "(use ListenStream= in the .socket unit)",
                fd, name);
        return false;
    }
    char what[128];
    if (is_tcp) {
        char text[96];
        format_tcp(&addr, text, sizeof text);
        snprintf(what, sizeof what, "%s (passed fd %d)", text, fd);
        if (!tcp_allowed(srv, &addr, what))
            return false;
    }
    rpd_listener *l = add_listener(srv, is_tcp);
    int rc = !l ? UV_EMFILE : is_tcp ? uv_tcp_open(&l->h.tcp, fd) : uv_pipe_open(&l->h.pipe, fd);
    if (rc == 0)
        rc = uv_listen(&l->h.stream, RPD_LISTEN_BACKLOG, on_connection);
    if (rc < 0) {
        rpd_log(RPD_LOG_ERROR, "cannot listen on passed fd %d (%s): %s", fd, name, uv_strerror(rc));
        return false;
    }
    rpd_log(RPD_LOG_INFO, "socket activation: fd %d named \"%s\"", fd, name);
    if (is_tcp)
        log_tcp_listening(&l->h.tcp);
    else
        log_unix_listening(&l->h.pipe);
    return true;
}

/* Listens on the sockets systemd passed instead of creating our own. */
static bool adopt_listeners(rpd_server *srv, const rpd_sd_fds *fds)
{
    if (srv->cfg.unix_path || srv->cfg.tcp)
        rpd_log(RPD_LOG_INFO,
                "socket activation: using the %d socket(s) from systemd; --unix and --tcp "
                "are ignored",
                fds->n);
    for (int i = 0; i < fds->n; i++) {
        const char *name = fds->names[i][0] ? fds->names[i] : "unnamed";
        if (!adopt_fd(srv, RPD_SD_LISTEN_FDS_START + i, name))
            return false;
    }
    return true;
}

/* Creates our own listeners (--tcp, --unix) or adopts systemd's. */
static bool start_listeners(rpd_server *srv)
{
    const rpd_sd_fds *fds = srv->cfg.activation;
    if (fds && fds->n > 0)
        return adopt_listeners(srv, fds);
    return (!srv->cfg.tcp || listen_tcp(srv)) && (!srv->cfg.unix_path || listen_unix(srv));
}

/* Closes every listener; our socket file goes with it. */
static void close_listeners(rpd_server *srv)
{
    for (int i = 0; i < srv->n_listeners; i++)
        close_if_open(&srv->listeners[i].h.handle);
    /* (its WebSockets get their last replies first: maybe_finish stops it) */
    rpd_http_drain(srv->http);
    if (srv->unix_path_created)
        unlink(srv->unix_path_created);
}

/* ---- systemd notifications ----------------------------------------------------- */

/* Sends STATE to systemd; a failure is logged once, then only at debug
 * level, so a vanished notify socket cannot flood the log. */
static void notify(const char *state)
{
    static bool warned;
    int rc = rpd_sd_notify(state);
    if (rc < 0) {
        rpd_log(warned ? RPD_LOG_DEBUG : RPD_LOG_WARN, "cannot notify systemd: %s", strerror(-rc));
        warned = true;
    }
}

static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    notify("WATCHDOG=1");
}

/* Tells systemd we are ready and starts the watchdog timer if it asked for
 * one.  The timer never keeps the loop alive; maybe_finish closes it. */
static void notify_ready(rpd_server *srv)
{
    char state[160];
    snprintf(state, sizeof state, "READY=1\nSTATUS=Listening on %d socket(s), run_id %s",
             srv->n_listeners, srv->core.run_id);
    notify(state);
    uint64_t ms = rpd_sd_watchdog_interval_ms();
    if (ms == 0)
        return;
    uv_timer_init(srv->loop, &srv->watchdog);
    srv->watchdog.data = srv;
    srv->watchdog_started = true;
    uv_timer_start(&srv->watchdog, on_watchdog, ms, ms);
    uv_unref((uv_handle_t *)&srv->watchdog);
    rpd_log(RPD_LOG_INFO, "systemd watchdog: pinging every %llu ms", (unsigned long long)ms);
}

/* ---- HTTP ------------------------------------------------------------------------ */

/* /healthz: ready unless shutting down, unable to write the journal, or a
 * replica away from NATS or still catching up with the stream. */
static bool http_ready(void *ctx, char *why, size_t cap)
{
    rpd_server *srv = ctx;
    const char *reason = NULL;
    if (srv->stopping) {
        reason = "shutting down";
    } else if (srv->core.durable) {
        rpd_durable_stats ds;
        rpd_durable_stats_get(srv->core.durable, &ds);
        if (ds.failing)
            reason = "the journal cannot be written: mutations are refused";
    }
    if (!reason && srv->core.replica) {
        rpd_replica_info info;
        rpd_replica_info_get(srv->core.replica, &info);
        if (!info.connected)
            reason = "not connected to NATS";
        else if (!srv->caught_up)
            reason = "catching up with the stream";
    }
    if (reason)
        snprintf(why, cap, "%s", reason);
    return reason == NULL;
}

static void http_adopt(void *ctx, int fd)
{
    rpd_conn_adopt_ws(ctx, fd);
}

static void maybe_finish(rpd_server *srv);

static void http_drained(void *ctx)
{
    maybe_finish(ctx);
}

static bool start_http(rpd_server *srv)
{
    if (!srv->cfg.http)
        return true;
    rpd_http_config hc = {srv->cfg.http, srv->cfg.insecure_http, http_ready, srv, http_adopt,
                          srv,           http_drained,           srv};
    return rpd_http_start(srv->loop, &srv->core, &hc, &srv->http);
}

/* ---- shutdown ------------------------------------------------------------------- */

/* Closes the remaining server handles once every connection is gone; uv_run
 * then returns. */
static void maybe_finish(rpd_server *srv)
{
    /* (A snapshot being published uses the replica: it ends first.) */
    if (!srv->stopping || srv->conns || srv->publishing || rpd_http_bridges(srv->http))
        return;
    rpd_http_stop(srv->http);
    if (srv->grace_started)
        close_if_open((uv_handle_t *)&srv->grace);
    if (srv->watchdog_started)
        close_if_open((uv_handle_t *)&srv->watchdog);
    if (srv->sync_timer_started)
        close_if_open((uv_handle_t *)&srv->sync_timer);
    if (srv->group_started)
        close_if_open((uv_handle_t *)&srv->group);
    close_if_open((uv_handle_t *)&srv->sweep);
    close_if_open((uv_handle_t *)&srv->wait_timer);
    rpd_conn_watch_close(srv);
    close_if_open((uv_handle_t *)&srv->resume);
    if (srv->repl_started) {
        /* The library's threads stop first: none may wake a closed handle. */
        rpd_replica_close(srv->core.replica);
        srv->core.replica = NULL;
        close_if_open((uv_handle_t *)&srv->repl_async);
        close_if_open((uv_handle_t *)&srv->repl_timer);
    }
    /* Closing the last handle of a signal restores its default action; a
     * SIGTERM, SIGINT or SIGQUIT then (a second stop request while workers
     * finish) would kill the process instead of letting it end cleanly.
     * They are ignored from then on, and held back (blocked: every other
     * thread blocks them too) from before the handles close until they
     * are, so that one arriving in between waits and is ignored: a client
     * that stops the daemon right after its last reply lands there. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    close_if_open((uv_handle_t *)&srv->sigterm);
    close_if_open((uv_handle_t *)&srv->sigint);
    close_if_open((uv_handle_t *)&srv->sigquit);
    close_if_open((uv_handle_t *)&srv->sighup);
    close_if_open((uv_handle_t *)&srv->sigusr1);
    close_if_open((uv_handle_t *)&srv->sigusr2);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void rpd_server_conn_closed(rpd_server *srv)
{
    maybe_finish(srv);
}

/* ---- --fsync everysec ---------------------------------------------------------------- */

static void sync_work(uv_work_t *w)
{
    rpd_server *srv = w->data;
    srv->sync_err = rpd_durable_sync_run(srv->core.durable, &srv->sync_ns);
}

static void sync_done(uv_work_t *w, int status)
{
    rpd_server *srv = w->data;
    rpd_durable_sync_done(srv->core.durable, status ? ECANCELED : srv->sync_err, srv->sync_ns);
}

static void on_sync_timer(uv_timer_t *t)
{
    rpd_server *srv = t->data;
    if (!rpd_durable_sync_due(srv->core.durable))
        return;
    srv->sync_work.data = srv;
    if (uv_queue_work(srv->loop, &srv->sync_work, sync_work, sync_done) != 0)
        rpd_durable_sync_done(srv->core.durable, EAGAIN, 0);
}

static void start_sync_timer(rpd_server *srv)
{
    if (!srv->core.durable || rpd_durable_policy(srv->core.durable) != RPD_FSYNC_EVERYSEC)
        return;
    uv_timer_init(srv->loop, &srv->sync_timer);
    srv->sync_timer.data = srv;
    srv->sync_timer_started = true;
    uv_timer_start(&srv->sync_timer, on_sync_timer, 1000, 1000);
    uv_unref((uv_handle_t *)&srv->sync_timer); /* never keeps the loop alive */
}

/* ---- --fsync always: group commit ------------------------------------------------------- */

static void watch_later(rpd_server *srv);

void rpd_server_flush_watchers(rpd_server *srv)
{
    srv->watch_now_ns = rpd_now_ns();
    if (rpd_watch_flush(srv->core.watch, &srv->core.limits))
        watch_later(srv);
}

/* At the end of each loop iteration (before it waits for I/O): one fsync
 * for the records the iteration wrote, then the replies that waited for
 * it go out (conn.c).  A group may also have been synced earlier (save,
 * the end of a background snapshot): its connections are released here
 * with how it ended. */
static void on_group(uv_prepare_t *p)
{
    rpd_server *srv = p->data;
    rpd_durable *d = srv->core.durable;
    bool undone = rpd_durable_group_open(d) && rpd_durable_group_sync(d) != 0;
    rpd_conns_sync_done(srv, rpd_durable_group_epoch(d));
    if (undone) /* the watchers of what was undone hear of it */
        rpd_server_flush_watchers(srv);
    rpd_server_snapshot_maybe(srv); /* it waits while a group is open */
}

static void start_group_commit(rpd_server *srv)
{
    if (!srv->core.durable || rpd_durable_policy(srv->core.durable) != RPD_FSYNC_ALWAYS)
        return;
    uv_prepare_init(srv->loop, &srv->group);
    srv->group.data = srv;
    srv->group_started = true;
    uv_prepare_start(&srv->group, on_group);
    uv_unref((uv_handle_t *)&srv->group); /* never keeps the loop alive */
}

/* ---- background snapshots --------------------------------------------------------------- */

static void snap_work(uv_work_t *w)
{
    rpd_server *srv = w->data;
    rpd_durable_snapshot_run(srv->snap_job);
}

/* Closing the old journal frees its blocks: tens of milliseconds for a
 * big one, so not on the loop. */
typedef struct close_job {
    uv_work_t w;
    int fd;
} close_job;

static void close_work(uv_work_t *w)
{
    close(((close_job *)w)->fd);
}

static void close_done(uv_work_t *w, int status)
{
    (void)status;
    free(w);
}

static void close_off_loop(rpd_server *srv, int fd)
{
    close_job *cj = fd >= 0 ? malloc(sizeof *cj) : NULL;
    if (cj) {
        cj->fd = fd;
        if (uv_queue_work(srv->loop, &cj->w, close_work, close_done) == 0)
            return;
        free(cj);
    }
    if (fd >= 0)
        close(fd);
}

static void snap_done(uv_work_t *w, int status)
{
    rpd_server *srv = w->data;
    (void)status; /* the pool runs every queued job, even at shutdown */
    rpd_durable_snapshot_end(srv->core.durable, srv->snap_job);
    srv->snap_job = NULL;
    close_off_loop(srv, rpd_durable_retired_fd(srv->core.durable));
    rpd_server_flush_watchers(srv); /* a group the end synced may have been undone */
    rpd_server_conn_closed(srv);    /* a shutdown may have waited for it */
}

void rpd_server_snapshot_maybe(rpd_server *srv)
{
    if (!srv->core.durable || srv->snap_job || srv->stopping)
        return;
    rpd_snap_job *j = rpd_durable_snapshot_begin(srv->core.durable, srv->core.store);
    if (!j)
        return;
    srv->snap_job = j;
    srv->snap_work.data = srv;
    if (uv_queue_work(srv->loop, &srv->snap_work, snap_work, snap_done) != 0) {
        rpd_durable_snapshot_fail(j, "could not queue the background work");
        rpd_durable_snapshot_end(srv->core.durable, j); /* reports it as not written */
        srv->snap_job = NULL;
    }
}

static void warm_work(uv_work_t *w)
{
    (void)w;
}

static void warm_done(uv_work_t *w, int status)
{
    (void)w;
    (void)status;
}

/* Sizes libuv's thread pool, which runs the queries (conn.c: start_job).
 * The pool reads UV_THREADPOOL_SIZE when first used, which is after this. */
static void start_workers(rpd_server *srv)
{
    int n = srv->cfg.threads;
    if (n < 0) {
        n = (int)uv_available_parallelism();
        if (n > RPD_MAX_THREADS)
            n = RPD_MAX_THREADS;
        if (n < 1)
            n = 1;
    }
    srv->threads = n;
    srv->core.has_workers = n > 0;
    /* With workers, a degraded scene tree is rebuilt on one of them
     * (conn.c: rpd_server_maintain) instead of by the mutation. */
    rp_store_defer_rebuilds(srv->core.store, n > 0);
    if (n > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", n);
        setenv("UV_THREADPOOL_SIZE", v, 1);
    }
    /* The loop thread alone takes the signals reposed handles: worker
     * threads start with them blocked (threads inherit the creating
     * thread's mask).  libuv's pool threads are made by the first queued
     * work, so a no-op is queued here while the mask is on.  Otherwise a
     * SIGTERM can land on a worker sleeping in a condition wait, and under
     * TSan (which delivers signals at the receiving thread's next
     * interceptor) the loop may not hear of it for a long time. */
    sigset_t handled, old;
    sigemptyset(&handled);
    int nums[] = {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        sigaddset(&handled, nums[i]);
    pthread_sigmask(SIG_BLOCK, &handled, &old);
    if (n > 0 && uv_queue_work(srv->loop, &srv->warm, warm_work, warm_done) != 0)
        rpd_log(RPD_LOG_WARN, "could not start the worker threads early");
    /* Helpers that split a large check.batch with the worker running it
     * (pool.h); without them the worker checks it alone. */
    if (n > 1 && !rpd_pool_start(n - 1))
        rpd_log(RPD_LOG_WARN, "could not start batch helper threads; batches run on one thread");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    rpd_log(RPD_LOG_INFO, "%d worker thread%s for queries%s", n, n == 1 ? "" : "s",
            n ? "" : " (they run on the event loop)");
}

static void on_grace_expired(uv_timer_t *t)
{
    rpd_server *srv = t->data;
    rpd_log(RPD_LOG_WARN, "shutdown grace period over; closing remaining connections");
    rpd_http_stop(srv->http); /* WebSockets that would not take their last replies */
    rpd_conns_close(srv);
}

static void begin_shutdown(rpd_server *srv, int signum)
{
    if (srv->stopping) {
        rpd_log(RPD_LOG_INFO, "second signal; closing connections now");
        on_grace_expired(&srv->grace);
        return;
    }
    const char *name = signum == SIGTERM ? "SIGTERM" : signum == SIGINT ? "SIGINT" : "SIGQUIT";
    char fields[64];
    snprintf(fields, sizeof fields, "\"signal\":\"%s\"", name);
    rpd_log_event(RPD_LOG_INFO, "shutdown", fields, "received %s; shutting down", name);
    notify("STOPPING=1\nSTATUS=Shutting down");
    srv->stopping = true;
    srv->core.shutting_down = true;
    close_listeners(srv);
    uv_timer_init(srv->loop, &srv->grace);
    srv->grace.data = srv;
    srv->grace_started = true;
    uv_timer_start(&srv->grace, on_grace_expired, RPD_SHUTDOWN_GRACE_MS, 0);
    uv_unref((uv_handle_t *)&srv->grace);
    rpd_conns_finish(srv);
    maybe_finish(srv);
}

static void on_sweep(uv_timer_t *t)
{
    rpd_server *srv = t->data;
    rpd_conn_sweep(srv);
    /* Memory freed since the last sweep (deleted scenes, closed
     * connections, large replies written) goes back to the system here,
     * at most once a sweep, never in a request's path. */
    rpd_core_trim(&srv->core);
}

static void on_signal(uv_signal_t *s, int signum)
{
    begin_shutdown(s->data, signum);
}

/* SIGHUP (a closed terminal, or an operator asking for a reload) and
 * SIGUSR1/SIGUSR2 would kill the process by default, leaving the socket
 * file behind; reposed has nothing to reload, so they are logged and
 * otherwise ignored. */
static void on_ignored_signal(uv_signal_t *s, int signum)
{
    (void)s;
    rpd_log(RPD_LOG_INFO, "received %s; ignored (nothing to reload; SIGTERM stops reposed)",
            signum == SIGHUP    ? "SIGHUP"
            : signum == SIGUSR1 ? "SIGUSR1"
                                : "SIGUSR2");
}

/* ---- fairness ------------------------------------------------------------------ */

/* Runs every connection that yielded its time slice, once per loop
 * iteration, until none is left. */
static void on_resume(uv_idle_t *idle)
{
    rpd_server *srv = idle->data;
    bool any = false;
    if (srv->watch_more) {
        /* The notifications a flush left for this turn (watch.h). */
        srv->watch_more = false;
        rpd_server_flush_watchers(srv);
        any |= srv->watch_more;
    }
    any |= rpd_conns_resume(srv);
    if (!any) {
        uv_idle_stop(idle);
        srv->resume_active = false;
    }
}

/* Has on_resume run at the next loop iterations, until it finds nothing
 * left to do. */
void rpd_server_start_resume(rpd_server *srv)
{
    if (!srv->resume_active) {
        uv_idle_start(&srv->resume, on_resume);
        srv->resume_active = true;
    }
}

/* Has on_resume flush the watchers again on its next turn. */
static void watch_later(rpd_server *srv)
{
    srv->watch_more = true;
    rpd_server_start_resume(srv);
}

/* ---- --nats: replicas ------------------------------------------------------------------ */

/* From a nats.c thread: something was queued for the loop. */
static void on_replica_wake(void *ctx)
{
    rpd_server *srv = ctx;
    uv_async_send(&srv->repl_async);
}

static void on_replica_async(uv_async_t *h)
{
    rpd_server *srv = h->data;
    if (!rpd_conns_replica_drain(srv))
        uv_async_send(&srv->repl_async); /* more queued: the next loop turn */
}

static void on_replica_timer(uv_timer_t *t)
{
    rpd_server *srv = t->data;
    if (srv->core.replica)
        rpd_replica_tick(srv->core.replica);
}

/* A replica whose stream was trimmed past its store starts from the
 * snapshot another replica published (--snapshot-publish).  A store the
 * data directory brought is then a stale cache of the stream: it is
 * replaced, but only once a published snapshot newer than it is in hand
 * (without one the daemon refuses to start and the directory stays as it
 * was).  The directory is first emptied (an empty snapshot, the journal
 * cut), so that a crash in the middle leaves a directory that starts from
 * the published snapshot again, never old and new scenes mixed. */
static bool load_published_snapshot(rpd_server *srv, char *why, size_t cap)
{
    uint64_t revision;
    uint8_t *img;
    size_t n;
    char inner[300];
    if (!rpd_replica_fetch_snapshot(srv->core.replica, &revision, &img, &n, inner, sizeof inner)) {
        snprintf(why, cap, "%s", inner);
        return false;
    }
    if (rp_store_scene_count(srv->core.store) || rp_store_model_count(srv->core.store)) {
        if (revision <= srv->core.applied) {
            free(img);
            snprintf(why, cap,
                     "the newest published snapshot (revision %llu) is not newer than the "
                     "data directory's store (revision %llu)",
                     (unsigned long long)revision, (unsigned long long)srv->core.applied);
            return false;
        }
        rpd_log(RPD_LOG_WARN,
                "replica: the data directory's store (revision %llu) is behind the trimmed "
                "stream; it is replaced by the published snapshot of revision %llu",
                (unsigned long long)srv->core.applied, (unsigned long long)revision);
        if (!rpd_core_reset_store(&srv->core) ||
            (srv->core.durable &&
             rpd_durable_save(srv->core.durable, srv->core.store, inner, sizeof inner) != 0)) {
            free(img);
            snprintf(why, cap, "the data directory cannot be emptied: %s",
                     srv->core.durable ? inner : "out of memory");
            return false;
        }
        srv->core.applied = 0;
    }
    uint64_t t0 = rpd_now_ns();
    rpd_durable_set_loading(srv->core.durable, true); /* (saved whole below) */
    bool ok = rpd_image_load(&srv->core, img, n, rpd_apply_record, &revision, inner, sizeof inner);
    rpd_durable_set_loading(srv->core.durable, false);
    free(img);
    if (!ok) {
        snprintf(why, cap, "the published snapshot does not load: %s", inner);
        return false;
    }
    srv->core.applied = revision;
    rpd_log(RPD_LOG_INFO,
            "replica: loaded the published snapshot of revision %llu (%zu bytes, "
            "%.0f ms)",
            (unsigned long long)revision, n, (double)(rpd_now_ns() - t0) / 1e6);
    /* The data directory starts again from it (its journal lacks the
     * scenes the image brought). */
    if (srv->core.durable &&
        rpd_durable_save(srv->core.durable, srv->core.store, inner, sizeof inner) != 0) {
        snprintf(why, cap, "the data directory cannot take it: %s", inner);
        return false;
    }
    return true;
}

/* --snapshot-publish: an image of the store, built and published by a
 * worker from a store snapshot (the loop goes on). */
typedef struct publish_job {
    uv_work_t work;
    rpd_server *srv;
    rp_store *snap;
    uint64_t revision;
    bool ok;
    size_t bytes;
    char why[300];
} publish_job;

static void publish_run(uv_work_t *w)
{
    publish_job *j = (publish_job *)w;
    uint8_t *img = NULL;
    int err = rpd_image_build(j->snap, j->revision, &img, &j->bytes);
    if (err) {
        snprintf(j->why, sizeof j->why, "building the image: %s", strerror(err));
        return;
    }
    j->ok = rpd_replica_publish_snapshot(j->srv->core.replica, j->revision, img, j->bytes,
                                         j->srv->cfg.nats_trim, j->why, sizeof j->why);
    free(img);
}

static void publish_done(uv_work_t *w, int status)
{
    publish_job *j = (publish_job *)w;
    rpd_server *srv = j->srv;
    srv->publishing = false;
    if (status == 0 && j->ok)
        rpd_log(RPD_LOG_INFO, "replica: snapshot of revision %llu published (%zu bytes)",
                (unsigned long long)j->revision, j->bytes);
    else
        rpd_log(RPD_LOG_WARN, "replica: snapshot of revision %llu not published: %s",
                (unsigned long long)j->revision, status ? "cancelled" : j->why);
    rp_store_free(j->snap);
    free(j);
    maybe_finish(srv); /* a stop may have waited for it */
}

void rpd_server_replica_publish_maybe(rpd_server *srv)
{
    uint64_t every = srv->cfg.snapshot_publish;
    rpd_core *core = &srv->core;
    if (!every || !srv->caught_up || srv->publishing || srv->stopping || !core->replica ||
        core->applied < srv->published_at + every)
        return;
    publish_job *j = calloc(1, sizeof *j);
    rp_store *snap = j ? rp_store_snapshot(core->store) : NULL;
    if (!snap) {
        free(j);
        return; /* out of memory: the next message tries again */
    }
    j->srv = srv;
    j->snap = snap;
    j->revision = rp_store_revision(core->store);
    j->work.data = j;
    srv->published_at = core->applied;
    if (uv_queue_work(srv->loop, &j->work, publish_run, publish_done) != 0) {
        rp_store_free(snap);
        free(j);
        return;
    }
    srv->publishing = true;
}

/* How long a replica whose store is ahead of the stream reads the
 * stream again before it concludes the store is another stream's. */
#define AHEAD_WAIT_S 10

static void on_retry_timer(uv_timer_t *t)
{
    (void)t; /* (it stops by itself: the wait loop sees it inactive) */
}

/* Waits a second at start-up with the loop running, so that a SIGTERM
 * still stops the daemon meanwhile. */
static void wait_a_second(rpd_server *srv, uv_timer_t *timer)
{
    uv_timer_start(timer, on_retry_timer, 1000, 0);
    while (uv_is_active((uv_handle_t *)timer) && !srv->stopping)
        uv_run(srv->loop, UV_RUN_ONCE);
    uv_timer_stop(timer);
}

/* The stream's last sequence as the replica last read it. */
static uint64_t stream_end(rpd_replica *r)
{
    rpd_replica_info info;
    rpd_replica_info_get(r, &info);
    return info.start_last;
}

/* Opens the replica and applies the stream as it was at start before
 * anything listens, so that the first reads see the shared store. */
static bool start_replica(rpd_server *srv)
{
    const rpd_config *cfg = &srv->cfg;
    /* With --data-dir the store holds the stream up to its revision (the
     * sequences after it that changed nothing change nothing again). */
    srv->core.applied = rp_store_revision(srv->core.store);
    uv_async_init(srv->loop, &srv->repl_async, on_replica_async);
    srv->repl_async.data = srv;
    uv_timer_init(srv->loop, &srv->repl_timer);
    srv->repl_timer.data = srv;
    uv_timer_start(&srv->repl_timer, on_replica_timer, 250, 250);
    uv_unref((uv_handle_t *)&srv->repl_timer); /* never keeps the loop alive */
    srv->repl_started = true;
    rpd_replica_opts o = {.urls = cfg->nats,
                          .store = cfg->store,
                          .creds = cfg->nats_creds,
                          .tls_ca = cfg->nats_tls_ca,
                          .tls_cert = cfg->nats_tls_cert,
                          .tls_key = cfg->nats_tls_key,
                          .copies = cfg->nats_copies,
                          .applied = srv->core.applied,
                          .wake = on_replica_wake,
                          .wake_ctx = srv};
    char why[400];
    uv_timer_t retry;
    uv_timer_init(srv->loop, &retry);
    for (unsigned tries = 0;; tries++) {
        srv->core.replica = rpd_replica_open(&o, why, sizeof why);
        if (srv->core.replica || !cfg->nats_wait || srv->stopping)
            break;
        /* --nats-wait: again in a second. */
        if (tries == 0)
            rpd_log(RPD_LOG_WARN, "--nats %s: %s; trying again every second (--nats-wait)",
                    cfg->nats, why);
        wait_a_second(srv, &retry);
    }
    /* A store here ahead of the stream: the data directory belongs to
     * another stream, or the stream's leader was elected a moment ago and
     * has not applied its whole log yet, so that its last sequence lags
     * what the stream had delivered (seen when a replica restarted just
     * after the NATS node leading the stream was killed).  The stream is
     * read again every second for a while before the first is concluded
     * (by rpd_replica_start). */
    if (srv->core.replica && srv->core.applied > stream_end(srv->core.replica)) {
        rpd_log(RPD_LOG_WARN,
                "--nats %s: the store here is at revision %llu but the stream ends at %llu; "
                "reading the stream again for up to %d s (a stream leader just elected can lag)",
                cfg->nats, (unsigned long long)srv->core.applied,
                (unsigned long long)stream_end(srv->core.replica), AHEAD_WAIT_S);
        for (int s = 0; s < AHEAD_WAIT_S && !srv->stopping &&
                        srv->core.applied > stream_end(srv->core.replica);
             s++) {
            wait_a_second(srv, &retry);
            rpd_replica_reread(srv->core.replica);
        }
    }
    uv_close((uv_handle_t *)&retry, NULL);
    uv_run(srv->loop, UV_RUN_NOWAIT); /* (the close callback) */
    if (!srv->core.replica) {
        if (!srv->stopping)
            rpd_log(RPD_LOG_ERROR, "--nats %s: %s", cfg->nats, why);
        return false;
    }
    if (rpd_replica_trimmed_past(srv->core.replica, srv->core.applied) &&
        !load_published_snapshot(srv, why, sizeof why)) {
        rpd_log(RPD_LOG_ERROR, "--nats %s: the stream was trimmed and %s", cfg->nats, why);
        return false;
    }
    if (!rpd_replica_start(srv->core.replica, srv->core.applied, why, sizeof why)) {
        rpd_log(RPD_LOG_ERROR, "--nats %s: %s", cfg->nats, why);
        return false;
    }
    rpd_replica_info info;
    rpd_replica_info_get(srv->core.replica, &info);
    rpd_log(RPD_LOG_INFO, "replica of store %s (stream %s, %d copies): catching up to %llu",
            info.store, info.stream, info.copies, (unsigned long long)info.start_last);
    /* (A stream whose messages were all purged has none to wait for.) */
    while (srv->core.applied < info.start_last && info.start_first <= info.start_last &&
           !srv->stopping)
        uv_run(srv->loop, UV_RUN_ONCE);
    rpd_log(RPD_LOG_INFO, "replica caught up: revision %llu",
            (unsigned long long)srv->core.applied);
    /* Snapshots are published from here on (not of every step of the
     * catch-up), the first after --snapshot-publish more messages. */
    srv->caught_up = true;
    srv->published_at = srv->core.applied;
    return !srv->stopping;
}

/* ---- run ------------------------------------------------------------------------ */

static void make_run_id(char out[33])
{
    unsigned char raw[16];
    rpd_random_bytes(raw, sizeof raw);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

int rpd_server_run(const rpd_config *cfg)
{
    rpd_server srv;
    memset(&srv, 0, sizeof srv);
    srv.cfg = *cfg;
    srv.loop = uv_default_loop();
    if (!rpd_core_init(&srv.core, &cfg->limits)) {
        rpd_log(RPD_LOG_ERROR, "out of memory");
        return 1;
    }
    make_run_id(srv.core.run_id);
    if (cfg->token_file && !read_token(cfg->token_file, &srv.core)) {
        rpd_core_free(&srv.core);
        uv_loop_close(srv.loop);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);

    /* The journal is replayed before anything listens (and before the
     * arena: the replay's parse trees are freed one by one). */
    srv.core.revision_gaps = cfg->nats != NULL;
    if (cfg->data_dir) {
        if (!rpd_durable_open(cfg->data_dir, (rpd_fsync)cfg->fsync, cfg->repair, &srv.core,
                              rpd_apply_record)) {
            rpd_core_free(&srv.core);
            uv_loop_close(srv.loop);
            return 1;
        }
        rpd_durable_set_snapshot_after(srv.core.durable, cfg->snapshot_after);
        rpd_log(RPD_LOG_INFO, "data directory %s, fsync %s", cfg->data_dir,
                rpd_fsync_name((rpd_fsync)cfg->fsync));
    }

    /* cJSON parses into the arena (arena.h), dropped after every line. */
    rpd_arena_install();

    struct {
        uv_signal_t *h;
        uv_signal_cb cb;
        int signum;
    } signals[] = {
        {&srv.sigterm, on_signal, SIGTERM},         {&srv.sigint, on_signal, SIGINT},
        {&srv.sigquit, on_signal, SIGQUIT},         {&srv.sighup, on_ignored_signal, SIGHUP},
        {&srv.sigusr1, on_ignored_signal, SIGUSR1}, {&srv.sigusr2, on_ignored_signal, SIGUSR2},
    };
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        uv_signal_init(srv.loop, signals[i].h);
        signals[i].h->data = &srv;
        uv_signal_start(signals[i].h, signals[i].cb, signals[i].signum);
        if (signals[i].cb == on_ignored_signal)
            uv_unref((uv_handle_t *)signals[i].h);
    }
    uv_idle_init(srv.loop, &srv.resume);
    srv.resume.data = &srv;
    rpd_conn_watch_io(&srv);
    start_workers(&srv);
    uv_timer_init(srv.loop, &srv.sweep);
    srv.sweep.data = &srv;
    uv_timer_start(&srv.sweep, on_sweep, RPD_SWEEP_MS, RPD_SWEEP_MS);
    uv_unref((uv_handle_t *)&srv.sweep); /* never keeps the loop alive */
    rpd_conns_wait_timer_init(&srv);
    start_sync_timer(&srv);
    start_group_commit(&srv);

    int code = 0;
    if ((!cfg->nats || start_replica(&srv)) && start_listeners(&srv) && start_http(&srv)) {
        char fields[160];
        snprintf(fields, sizeof fields, "\"run_id\":\"%s\",\"version\":\"%s\",\"pid\":%ld",
                 srv.core.run_id, RPD_VERSION, (long)getpid());
        rpd_log_event(RPD_LOG_INFO, "ready", fields, "ready (run_id %s)", srv.core.run_id);
        notify_ready(&srv);
        uv_run(srv.loop, UV_RUN_DEFAULT);
    } else {
        code = 1;
        srv.stopping = true;
        close_listeners(&srv);
        maybe_finish(&srv);
        uv_run(srv.loop, UV_RUN_DEFAULT);
    }
    rpd_http_free(srv.http, srv.loop);
    int rc = uv_loop_close(srv.loop);
    if (rc != 0) {
        rpd_log(RPD_LOG_ERROR, "event loop did not close cleanly: %s", uv_strerror(rc));
        code = code ? code : 1;
    }
    free(srv.unix_path_created);
    rpd_pool_stop();
    rpd_durable_stats ds;
    if (srv.core.durable)
        rpd_durable_stats_get(srv.core.durable, &ds);
    if (srv.core.durable && code == 0 &&
        (ds.journal_records || ds.snapshot_revision != rp_store_revision(srv.core.store))) {
        /* A snapshot at the stop (unless the last one holds everything):
         * the next start loads it instead of replaying the journal. */
        char why[400];
        if (rpd_durable_save(srv.core.durable, srv.core.store, why, sizeof why) != 0)
            rpd_log(RPD_LOG_ERROR, "snapshot at stop failed: %s (the journal has everything)", why);
    }
    rpd_durable_close(srv.core.durable); /* the final fsync */
    srv.core.durable = NULL;
    rpd_core_free(&srv.core);
    rpd_arena_free_all();
    if (code == 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double user = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
               sys = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
        char fields[96];
        snprintf(fields, sizeof fields, "\"cpu_user_s\":%.2f,\"cpu_system_s\":%.2f", user, sys);
        rpd_log_event(RPD_LOG_INFO, "stopped", fields, "stopped (cpu: user %.2f s, system %.2f s)",
                      user, sys);
    }
    return code;
}
