/* SPDX-License-Identifier: MIT */
/* Integration test harness; see harness.h. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "client/send_some.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define MAX_DAEMONS 32
#define MAX_CONNS 256
#define MAX_ARGS 64

static const char *daemon_path;

/* exec* take char *const[]; the strings are never written. */
static char *unconst(const char *s)
{
    char *r;
    memcpy(&r, &s, sizeof r);
    return r;
}
static rh_daemon pool[MAX_DAEMONS];
static rh_conn *conns[MAX_CONNS];
static char temp_dirs[MAX_DAEMONS][128];
static bool atexit_done;

/* ---- time ---------------------------------------------------------------------- */

long long rh_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rh_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

bool rh_wrapped(void)
{
    const char *w = getenv("REPOSE_DAEMON_WRAPPER");
    return w && *w;
}

int rh_ms(int ms)
{
    return rh_wrapped() ? ms * RH_WRAPPED_SCALE : ms;
}

/* Milliseconds left until deadline (>= 0). */
static int left_ms(long long deadline)
{
    long long l = deadline - rh_now_ms();
    return l < 0 ? 0 : (int)l;
}

/* ---- setup ---------------------------------------------------------------------- */

bool rh_init(int argc, char **argv)
{
    daemon_path = argc > 1 ? argv[1] : getenv("REPOSED");
    if (!daemon_path || access(daemon_path, X_OK) != 0) {
        fprintf(stderr, "usage: %s PATH-TO-REPOSED (or set REPOSED)\n", argv[0]);
        return false;
    }
    signal(SIGPIPE, SIG_IGN); /* writes to a closed socket return EPIPE */
    return true;
}

const char *rh_daemon_path(void)
{
    return daemon_path;
}

static void cleanup_at_exit(void)
{
    rh_cleanup_all();
}

/* Removes every file in dir (one level: the harness creates no
 * subdirectories), then dir. */
static void remove_dir(const char *dir)
{
    DIR *dp = opendir(dir);
    if (dp) {
        struct dirent *e;
        while ((e = readdir(dp)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(dp);
    }
    rmdir(dir);
}

int rh_exit_code(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return -1;
}

/* Reaps the daemon if it has exited (or waits up to timeout_ms).  True when
 * it is gone. */
static bool reap(rh_daemon *d, int timeout_ms)
{
    if (d->exited || d->pid <= 0)
        return true;
    long long deadline = rh_now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(d->pid, &st, WNOHANG);
        if (r == d->pid) {
            d->exited = true;
            d->wait_status = st;
            d->pid = 0;
            return true;
        }
        if (r < 0 && errno != EINTR) {
            d->exited = true;
            d->wait_status = 0x7f00; /* unknown */
            d->pid = 0;
            return true;
        }
        if (rh_now_ms() >= deadline)
            return false;
        rh_sleep_ms(2);
    }
}

/* Reads the whole log file into buf (NUL-terminated). */
static size_t read_log(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        buf[0] = '\0';
        return 0;
    }
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return n;
}

void rh_signal(rh_daemon *d, int sig)
{
    if (d->pid > 0 && !d->exited)
        kill(d->pid, sig);
}

long rh_rss_kb(const rh_daemon *d)
{
    if (d->pid <= 0 || d->exited)
        return -1;
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)d->pid);
    if (read_log(path, buf, sizeof buf) == 0)
        return -1;
    const char *p = strstr(buf, "VmRSS:");
    return p ? atol(p + 6) : -1;
}

bool rh_log_contains(const rh_daemon *d, const char *text)
{
    static char buf[65536];
    read_log(d->log_path, buf, sizeof buf);
    return strstr(buf, text) != NULL;
}

void rh_dump_log(const rh_daemon *d)
{
    static char buf[16384];
    if (!d->log_path[0])
        return;
    read_log(d->log_path, buf, sizeof buf);
    fprintf(stderr, "---- daemon log (%s) ----\n%s---- end of daemon log ----\n", d->log_path, buf);
}

/* Looks for "reposed: listening on tcp HOST:PORT" and "... on unix PATH". */
static void scan_listening(const char *log, int *port, bool *unix_seen)
{
    static const char tcp_tag[] = "reposed: listening on tcp ";
    static const char unix_tag[] = "reposed: listening on unix ";
    for (const char *p = log; *p;) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            break; /* only complete lines */
        if (strncmp(p, tcp_tag, sizeof tcp_tag - 1) == 0) {
            const char *colon = NULL;
            for (const char *q = p; q < eol; q++)
                if (*q == ':')
                    colon = q;
            if (colon)
                *port = atoi(colon + 1);
        } else if (strncmp(p, unix_tag, sizeof unix_tag - 1) == 0) {
            *unix_seen = true;
        }
        p = eol + 1;
    }
}

/* A temp dir short enough for sockaddr_un.sun_path. */
static bool make_temp_dir(char *out, size_t cap)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base || strlen(base) > 60)
        base = "/tmp";
    snprintf(out, cap, "%s/reposed-it-XXXXXX", base);
    return mkdtemp(out) != NULL;
}

rh_daemon *rh_start(const rh_opts *o)
{
    static const rh_opts none = {NULL, NULL, NULL, false};
    if (!o)
        o = &none;
    if (!atexit_done) {
        atexit(cleanup_at_exit);
        atexit_done = true;
    }
    rh_daemon *d = NULL;
    for (int i = 0; i < MAX_DAEMONS && !d; i++)
        if (!pool[i].in_use)
            d = &pool[i];
    if (!d) {
        fprintf(stderr, "harness: too many daemons\n");
        return NULL;
    }
    memset(d, 0, sizeof *d);
    if (!make_temp_dir(d->dir, sizeof d->dir)) {
        perror("mkdtemp");
        return NULL;
    }
    d->in_use = true;
    snprintf(d->log_path, sizeof d->log_path, "%s/daemon.log", d->dir);
    bool want_unix = !(o->unix_path && strcmp(o->unix_path, "none") == 0);
    bool want_tcp = !(o->tcp && strcmp(o->tcp, "none") == 0);
    if (want_unix) {
        if (o->unix_path)
            snprintf(d->unix_path, sizeof d->unix_path, "%s", o->unix_path);
        else
            snprintf(d->unix_path, sizeof d->unix_path, "%s/reposed.sock", d->dir);
    }

    /* argv: [wrapper words...] daemon --unix X --tcp Y [extra...] */
    char *wrapper = NULL;
    char *argv[MAX_ARGS];
    int argc = 0;
    if (rh_wrapped() && !o->no_wrapper) {
        wrapper = strdup(getenv("REPOSE_DAEMON_WRAPPER"));
        char *save = NULL;
        for (char *t = strtok_r(wrapper, " ", &save); t && argc < MAX_ARGS - 16;
             t = strtok_r(NULL, " ", &save))
            argv[argc++] = t;
    }
    argv[argc++] = unconst(daemon_path);
    argv[argc++] = unconst("--unix");
    argv[argc++] = want_unix ? d->unix_path : unconst("none");
    argv[argc++] = unconst("--tcp");
    argv[argc++] = unconst(want_tcp ? (o->tcp ? o->tcp : "127.0.0.1:0") : "none");
    for (int i = 0; o->extra && o->extra[i] && argc < MAX_ARGS - 1; i++)
        argv[argc++] = unconst(o->extra[i]);
    argv[argc] = NULL;

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        free(wrapper);
        rh_destroy(d);
        return NULL;
    }
    if (pid == 0) {
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
#else
        (void)parent;
#endif
        int log = open(d->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
        int null = open("/dev/null", O_RDWR);
        if (log < 0 || null < 0)
            _exit(127);
        dup2(null, 0);
        dup2(log, 1);
        dup2(log, 2);
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        signal(SIGPIPE, SIG_DFL);
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(wrapper);
    d->pid = pid;

    static char log[16384];
    long long deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    for (;;) {
        int port = 0;
        bool unix_seen = false;
        read_log(d->log_path, log, sizeof log);
        scan_listening(log, &port, &unix_seen);
        if ((!want_tcp || port > 0) && (!want_unix || unix_seen)) {
            d->tcp_port = want_tcp ? port : 0;
            d->up = true;
            return d;
        }
        if (reap(d, 0))
            return d;
        if (rh_now_ms() >= deadline) {
            fprintf(stderr, "harness: daemon did not start within %d ms\n", rh_ms(RH_TIMEOUT_MS));
            rh_dump_log(d);
            kill(d->pid, SIGKILL);
            reap(d, rh_ms(RH_TIMEOUT_MS));
            return d;
        }
        rh_sleep_ms(5);
    }
}

int rh_wait_exit(rh_daemon *d, int timeout_ms)
{
    if (!reap(d, timeout_ms))
        return -1;
    return rh_exit_code(d->wait_status);
}

int rh_stop(rh_daemon *d, int timeout_ms)
{
    if (d->pid > 0 && !d->exited)
        kill(d->pid, SIGTERM);
    int code = rh_wait_exit(d, timeout_ms);
    if (code < 0 && d->pid > 0) {
        fprintf(stderr, "harness: daemon did not exit within %d ms of SIGTERM\n", timeout_ms);
        rh_dump_log(d);
        kill(d->pid, SIGKILL);
        reap(d, rh_ms(RH_TIMEOUT_MS));
    }
    return code;
}

void rh_destroy(rh_daemon *d)
{
    if (!d || !d->in_use)
        return;
    if (d->pid > 0 && !d->exited) {
        kill(d->pid, SIGKILL);
        reap(d, rh_ms(RH_TIMEOUT_MS));
    }
    if (d->dir[0]) {
        remove_dir(d->dir);
        d->dir[0] = '\0';
    }
    memset(d, 0, sizeof *d);
}

int rh_run(const char *const *args, char *out, size_t cap, int timeout_ms)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    char *argv[MAX_ARGS];
    int argc = 0;
    argv[argc++] = unconst(daemon_path);
    for (int i = 0; args && args[i] && argc < MAX_ARGS - 1; i++)
        argv[argc++] = unconst(args[i]);
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        dup2(null, 0);
        dup2(p[1], 1);
        dup2(p[1], 2);
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    long long deadline = rh_now_ms() + timeout_ms;
    for (;;) {
        struct pollfd pfd = {p[0], POLLIN, 0};
        int r = poll(&pfd, 1, left_ms(deadline));
        if (r <= 0)
            break;
        char tmp[4096];
        ssize_t k = read(p[0], tmp, sizeof tmp);
        if (k <= 0)
            break;
        size_t room = cap > n + 1 ? cap - n - 1 : 0;
        size_t take = (size_t)k < room ? (size_t)k : room;
        memcpy(out + n, tmp, take);
        n += take;
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    close(p[0]);
    rh_daemon tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.pid = pid;
    if (!reap(&tmp, left_ms(deadline))) {
        kill(pid, SIGKILL);
        reap(&tmp, rh_ms(RH_TIMEOUT_MS));
        return -1;
    }
    return rh_exit_code(tmp.wait_status);
}

/* ---- connections ------------------------------------------------------------------ */

struct rh_conn {
    int fd;
    char *buf; /* received bytes buf[start..len) not yet returned */
    size_t start, len, cap;
};

static rh_conn *wrap_fd(int fd)
{
    rh_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    for (int i = 0; i < MAX_CONNS; i++) {
        if (!conns[i]) {
            conns[i] = c;
            break;
        }
    }
    return c;
}

/* Connects fd to addr, waiting at most the default timeout; then makes it
 * non-blocking. */
static rh_conn *connect_addr(int family, const struct sockaddr *sa, socklen_t len, int rcvbuf)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    if (connect(fd, sa, len) != 0) {
        close(fd);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    if (family == AF_INET) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return wrap_fd(fd);
}

static rh_conn *connect_unix(const char *path, int rcvbuf)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        return NULL;
    strcpy(sa.sun_path, path);
    return connect_addr(AF_UNIX, (const struct sockaddr *)&sa, sizeof sa, rcvbuf);
}

static rh_conn *connect_tcp(int port, int rcvbuf)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(0x7f000001u);
    return connect_addr(AF_INET, (const struct sockaddr *)&sa, sizeof sa, rcvbuf);
}

rh_conn *rh_connect_unix(const char *path)
{
    return connect_unix(path, 0);
}

rh_conn *rh_connect_tcp(int port)
{
    return connect_tcp(port, 0);
}

rh_conn *rh_connect(const rh_daemon *d, bool tcp)
{
    return tcp ? connect_tcp(d->tcp_port, 0) : connect_unix(d->unix_path, 0);
}

rh_conn *rh_connect_rcvbuf(const rh_daemon *d, bool tcp, int rcvbuf)
{
    return tcp ? connect_tcp(d->tcp_port, rcvbuf) : connect_unix(d->unix_path, rcvbuf);
}

int rh_fd(const rh_conn *c)
{
    return c->fd;
}

size_t rh_pending(const rh_conn *c)
{
    return c->len - c->start;
}

bool rh_send(rh_conn *c, const void *buf, size_t n)
{
    const char *p = buf;
    long long deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    for (;;) {
        int e = rp_send_some(c->fd, &p, &n);
        if (e == 0)
            return true;
        if (e != EAGAIN)
            return false;
        struct pollfd pfd = {c->fd, POLLOUT, 0};
        if (poll(&pfd, 1, left_ms(deadline)) <= 0)
            return false;
    }
}

bool rh_send_line(rh_conn *c, const char *s)
{
    return rh_send(c, s, strlen(s)) && rh_send(c, "\n", 1);
}

/* Reads what is available into the buffer.  1: got bytes, 0: EOF,
 * -1: error, -2: would block. */
static int fill(rh_conn *c)
{
    if (c->start > 0 && c->start == c->len)
        c->start = c->len = 0;
    if (c->cap - c->len < 65536) {
        if (c->start > 0) {
            memmove(c->buf, c->buf + c->start, c->len - c->start);
            c->len -= c->start;
            c->start = 0;
        }
        if (c->cap - c->len < 65536) {
            size_t cap = c->cap ? c->cap * 2 : 131072;
            char *nb = realloc(c->buf, cap);
            if (!nb)
                return -1;
            c->buf = nb;
            c->cap = cap;
        }
    }
    ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
    if (r > 0) {
        c->len += (size_t)r;
        return 1;
    }
    if (r == 0)
        return 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return -2;
    return -1;
}

rh_read_status rh_read_line(rh_conn *c, int timeout_ms, const char **line, size_t *len)
{
    long long deadline = rh_now_ms() + timeout_ms;
    size_t off = 0; /* bytes after c->start known to hold no newline */
    for (;;) {
        size_t avail = c->len - c->start;
        char *nl = avail > off ? memchr(c->buf + c->start + off, '\n', avail - off) : NULL;
        if (nl) {
            *line = c->buf + c->start;
            *len = (size_t)(nl - (c->buf + c->start));
            *nl = '\0';
            c->start = (size_t)(nl - c->buf) + 1;
            return RH_LINE;
        }
        off = avail;
        int r = fill(c); /* may move the bytes, never past c->start */
        if (r == 1)
            continue;
        if (r == 0 || r == -1) {
            *line = c->buf ? c->buf + c->start : "";
            *len = c->len - c->start;
            if (c->buf)
                c->buf[c->len] = '\0';
            c->start = c->len;
            return r == 0 ? RH_EOF : RH_ERROR;
        }
        struct pollfd pfd = {c->fd, POLLIN, 0};
        int left = left_ms(deadline);
        if (left == 0 || poll(&pfd, 1, left) == 0)
            return RH_TIMEOUT;
    }
}

const char *rh_call(rh_conn *c, const char *request)
{
    if (!rh_send_line(c, request))
        return NULL;
    const char *line;
    size_t len;
    if (rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len) != RH_LINE)
        return NULL;
    return line;
}

rh_read_status rh_wait_close(rh_conn *c, int timeout_ms, size_t max_lines)
{
    long long deadline = rh_now_ms() + timeout_ms;
    size_t lines = 0;
    for (;;) {
        const char *line;
        size_t len;
        rh_read_status st = rh_read_line(c, left_ms(deadline), &line, &len);
        if (st != RH_LINE)
            return st;
        if (++lines > max_lines)
            return RH_LINE;
    }
}

void rh_close(rh_conn *c)
{
    if (!c)
        return;
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i] == c)
            conns[i] = NULL;
    close(c->fd);
    free(c->buf);
    free(c);
}

/* ---- scratch directories ------------------------------------------------------ */

const char *rh_temp_dir(void)
{
    if (!atexit_done) {
        atexit(cleanup_at_exit);
        atexit_done = true;
    }
    for (int i = 0; i < MAX_DAEMONS; i++) {
        if (!temp_dirs[i][0]) {
            if (!make_temp_dir(temp_dirs[i], sizeof temp_dirs[i])) {
                temp_dirs[i][0] = '\0';
                return NULL;
            }
            return temp_dirs[i];
        }
    }
    return NULL;
}

/* ---- cleanup ------------------------------------------------------------------- */

void rh_cleanup_all(void)
{
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i])
            rh_close(conns[i]);
    for (int i = 0; i < MAX_DAEMONS; i++)
        rh_destroy(&pool[i]);
    for (int i = 0; i < MAX_DAEMONS; i++) {
        if (temp_dirs[i][0]) {
            remove_dir(temp_dirs[i]);
            temp_dirs[i][0] = '\0';
        }
    }
}

int rh_teardown(void **state)
{
    (void)state;
    rh_cleanup_all();
    return 0;
}
