/* SPDX-License-Identifier: MIT */
/*
 * Daemon tests of replicas (reposed --nats URL --store NAME): daemons that
 * share one store through a NATS JetStream stream, against real reposed
 * processes and a real nats-server over their real sockets.
 *
 * Usage: test_daemon_replicas PATH-TO-REPOSED
 *
 * What is checked: a mutation sent to one replica is applied by every
 * replica, in stream order, with the stream sequence as its revision; a
 * query's min_revision waits for the store to reach a revision (so a write
 * through one replica is read through another); racing if_revision writes
 * through two replicas commit once; watches on one replica see the writes
 * of another; a replica started late or restarted catches up before it
 * listens; a batch's mutations run in order (refused beside an array);
 * while NATS is down writes are refused (-32007) and reads go on, writes
 * resume when it is back, and a write caught in flight is answered; hello
 * and stats report the replication; bad configurations are refused.
 *
 * Each test starts its own nats-server (-js, on a free port of 127.0.0.1,
 * its store in a fresh directory) and uses a fresh store name.  The server
 * is found through $NATS_SERVER, else /usr/bin/nats-server (or
 * /usr/sbin/nats-server, or nats-server on the PATH); without one, or with
 * a reposed built without libnats, every test is skipped and says why.
 * Servers die with this process (PR_SET_PDEATHSIG) and are killed, their
 * directories removed, after every test, also a failed one.
 *
 * No test asserts a duration: every wait is a guard against hangs, scaled
 * with rh_ms().  Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are
 * smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "harness.h"

/* ---- nats-server ------------------------------------------------------------------------ */

#define MAX_NATS 4

/* One nats-server this program started. */
typedef struct nats_srv {
    pid_t pid;     /* > 0 while running and not yet reaped */
    int port;      /* its client port on 127.0.0.1 */
    char dir[128]; /* holds sd/ (JetStream's store) and nats.log; "" once removed */
    char url[64];  /* nats://127.0.0.1:PORT */
    bool in_use;
} nats_srv;

static nats_srv nats_pool[MAX_NATS];
static char nats_bin[512];  /* the nats-server binary; "" when there is none */
static char nats_why[600];  /* why there is none */
static bool nats_looked;    /* nats_bin / nats_why are set */
static bool nats_at_exit;   /* nats_cleanup_all is registered with atexit */
static bool skip_explained; /* the reason for skipping was printed */

static bool executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Finds the nats-server binary once: $NATS_SERVER, the usual places, the
 * PATH.  False (with nats_why set) without one. */
static bool find_nats_server(void)
{
    if (nats_looked)
        return nats_bin[0] != '\0';
    nats_looked = true;
    const char *env = getenv("NATS_SERVER");
    if (env && *env) {
        if (executable(env))
            snprintf(nats_bin, sizeof nats_bin, "%s", env);
        else
            snprintf(nats_why, sizeof nats_why, "$NATS_SERVER (%s) is not an executable file", env);
        return nats_bin[0] != '\0';
    }
    static const char *const fixed[] = {"/usr/bin/nats-server", "/usr/sbin/nats-server",
                                        "/usr/local/bin/nats-server"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (executable(fixed[i])) {
            snprintf(nats_bin, sizeof nats_bin, "%s", fixed[i]);
            return true;
        }
    }
    const char *path = getenv("PATH");
    if (path) {
        char *copy = strdup(path);
        assert_non_null(copy);
        char *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            char p[512];
            snprintf(p, sizeof p, "%s/nats-server", *d ? d : ".");
            if (executable(p)) {
                snprintf(nats_bin, sizeof nats_bin, "%s", p);
                break;
            }
        }
        free(copy);
    }
    if (!nats_bin[0])
        snprintf(nats_why, sizeof nats_why,
                 "no nats-server: set $NATS_SERVER, or install one as /usr/bin/nats-server "
                 "(Debian: the nats-server package)");
    return nats_bin[0] != '\0';
}

/* Skips the current test (saying why, once) unless reposed has --nats. */
static void need_nats_build(void)
{
#ifndef REPOSE_HAVE_NATS
    if (!skip_explained) {
        fprintf(stderr, "SKIP: this reposed is built without libnats (no --nats): replicas are "
                        "not tested\n");
        skip_explained = true;
    }
    skip();
#endif
}

/* Skips the current test (saying why, once) unless reposed has --nats and
 * there is a nats-server to run. */
static void need_nats(void)
{
    need_nats_build();
    if (!find_nats_server()) {
        if (!skip_explained) {
            fprintf(stderr, "SKIP: %s; replicas are not tested\n", nats_why);
            skip_explained = true;
        }
        skip();
    }
}

/* Removes path and, for a directory, everything under it. */
static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *dp = opendir(path);
        if (dp) {
            struct dirent *e;
            while ((e = readdir(dp)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                char p[1024];
                snprintf(p, sizeof p, "%s/%s", path, e->d_name);
                remove_tree(p);
            }
            closedir(dp);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* A free TCP port of 127.0.0.1 (bound to port 0 and released), or 0. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* True when 127.0.0.1:port accepts a TCP connection. */
static bool port_accepts(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* Reaps the server if it has exited, waiting at most timeout_ms.  True
 * when it is gone. */
static bool nats_reap(nats_srv *s, int timeout_ms)
{
    if (s->pid <= 0)
        return true;
    long long deadline = rh_now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid || (r < 0 && errno != EINTR)) {
            s->pid = 0;
            return true;
        }
        if (rh_now_ms() >= deadline)
            return false;
        rh_sleep_ms(5);
    }
}

/* Stops the server: sig (SIGTERM or SIGKILL), then SIGKILL if it is still
 * there after a while.  No-op when it is not running. */
static void nats_kill(nats_srv *s, int sig)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, sig);
    if (!nats_reap(s, 10000)) {
        kill(s->pid, SIGKILL);
        nats_reap(s, 10000);
    }
}

static void nats_dump_log(const nats_srv *s)
{
    char p[256];
    snprintf(p, sizeof p, "%s/nats.log", s->dir);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    fprintf(stderr, "---- %s ----\n", p);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stderr);
    fclose(f);
    fprintf(stderr, "---- end of %s ----\n", p);
}

/* Runs nats-server on s->port with its store in s->dir/sd and waits until
 * the port accepts connections.  False when it exited first or did not come
 * up within the guard (it is then killed). */
static bool nats_spawn(nats_srv *s)
{
    char port[16], sd[192], log[192];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(sd, sizeof sd, "%s/sd", s->dir);
    snprintf(log, sizeof log, "%s/nats.log", s->dir);
    char js[] = "-js", addr_flag[] = "-a", addr[] = "127.0.0.1", port_flag[] = "-p",
         sd_flag[] = "-sd";
    char *argv[] = {nats_bin, js, addr_flag, addr, port_flag, port, sd_flag, sd, NULL};
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int null = open("/dev/null", O_RDWR);
        if (fd < 0 || null < 0)
            _exit(127);
        dup2(null, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        for (int k = 3; k < 1024; k++)
            close(k);
        signal(SIGPIPE, SIG_DFL);
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    s->pid = pid;
    long long deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    for (;;) {
        if (port_accepts(s->port))
            return true;
        if (nats_reap(s, 0))
            return false;
        if (rh_now_ms() >= deadline) {
            fprintf(stderr, "nats-server did not accept connections on port %d in %d ms\n", s->port,
                    rh_ms(RH_TIMEOUT_MS));
            nats_kill(s, SIGKILL);
            return false;
        }
        rh_sleep_ms(10);
    }
}

static void nats_cleanup_all(void)
{
    for (int i = 0; i < MAX_NATS; i++) {
        nats_srv *s = &nats_pool[i];
        if (!s->in_use)
            continue;
        nats_kill(s, SIGTERM);
        if (s->dir[0])
            remove_tree(s->dir);
        memset(s, 0, sizeof *s);
    }
}

/* Starts a nats-server with JetStream on a free port and a fresh store
 * directory; fails the test unless it comes up. */
static nats_srv *nats_start(void)
{
    if (!nats_at_exit) {
        atexit(nats_cleanup_all);
        nats_at_exit = true;
    }
    nats_srv *s = NULL;
    for (int i = 0; i < MAX_NATS && !s; i++)
        if (!nats_pool[i].in_use)
            s = &nats_pool[i];
    assert_non_null(s);
    memset(s, 0, sizeof *s);
    const char *base = getenv("TMPDIR");
    if (!base || !*base || strlen(base) > 60)
        base = "/tmp";
    snprintf(s->dir, sizeof s->dir, "%s/reposed-nats-XXXXXX", base);
    if (!mkdtemp(s->dir))
        fail_msg("mkdtemp %s: %s", s->dir, strerror(errno));
    s->in_use = true;
    /* Another process may take the port between its release and the
     * server's bind: a few tries. */
    for (int tries = 0; tries < 5; tries++) {
        s->port = free_port();
        if (s->port <= 0)
            continue;
        if (nats_spawn(s)) {
            snprintf(s->url, sizeof s->url, "nats://127.0.0.1:%d", s->port);
            return s;
        }
    }
    nats_dump_log(s);
    fail_msg("nats-server (%s) did not start", nats_bin);
    return NULL;
}

/* Starts the server again on its port and store directory (after
 * nats_kill), trying until the guard runs out (the port may linger). */
static void nats_restart(nats_srv *s)
{
    long long deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    while (!nats_spawn(s)) {
        if (rh_now_ms() >= deadline) {
            nats_dump_log(s);
            fail_msg("nats-server did not start again on port %d", s->port);
        }
        rh_sleep_ms(100);
    }
}

/* ---- replicas --------------------------------------------------------------------------- */

/* A store name no other test uses: tests are independent even on one
 * server. */
static void fresh_store(char *out, size_t cap)
{
    static int n;
    snprintf(out, cap, "rt%ld_%d", (long)getpid(), ++n);
}

/* max_wait_ms for replicas: generous (a guard), scaled under valgrind. */
static const char *default_wait(void)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "%d", rh_ms(10000));
    return buf;
}

/* The daemons this test started (harness pool slots), for the logs of a
 * failure. */
#define MAX_TRACKED 8
static rh_daemon *tracked[MAX_TRACKED];

static void track(rh_daemon *d)
{
    for (int i = 0; i < MAX_TRACKED; i++) {
        if (!tracked[i] || !tracked[i]->in_use || tracked[i] == d) {
            tracked[i] = d;
            return;
        }
    }
}

/* The teardown of every test: the daemons first (they go before their
 * server), then the servers and their directories. */
static int replicas_teardown(void **state)
{
    memset(tracked, 0, sizeof tracked);
    rh_teardown(state);
    nats_cleanup_all();
    return 0;
}

#define REPLICA_TEST(f) cmocka_unit_test_teardown(f, replicas_teardown)

/* Copies the logs of the test's daemons still in the pool, and of its
 * nats-servers, to stderr. */
static void dump_logs(void)
{
    for (int i = 0; i < MAX_TRACKED; i++)
        if (tracked[i] && tracked[i]->in_use && tracked[i]->log_path[0])
            rh_dump_log(tracked[i]);
    for (int i = 0; i < MAX_NATS; i++)
        if (nats_pool[i].in_use && nats_pool[i].dir[0])
            nats_dump_log(&nats_pool[i]);
}

/* Starts a replica of `store` on server s (a Unix listener only) and fails
 * the test unless it comes up; max_wait NULL: default_wait(). */
static rh_daemon *replica(const nats_srv *s, const char *store, const char *max_wait)
{
    const char *extra[] = {"--nats", s->url,          "--store",
                           store,    "--max-wait-ms", max_wait ? max_wait : default_wait(),
                           NULL};
    rh_opts o = {NULL, "none", extra, false};
    rh_daemon *d = start_with(&o);
    track(d);
    if (!rh_log_contains(d, "replica caught up: revision")) {
        rh_dump_log(d);
        fail_msg("the replica listens without having said it caught up");
    }
    return d;
}

/* ---- requests --------------------------------------------------------------------------- */

static int next_id = 1;

static char *vrequest(int id, const char *method, const char *params_fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static char *vrequest(int id, const char *method, const char *params_fmt, va_list ap)
{
    textbuf t = {0};
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"", id, method);
    if (params_fmt) {
        va_list aq;
        va_copy(aq, ap);
        int n = vsnprintf(NULL, 0, params_fmt, aq);
        va_end(aq);
        assert_true(n >= 0);
        char *p = malloc((size_t)n + 1);
        assert_non_null(p);
        vsnprintf(p, (size_t)n + 1, params_fmt, ap);
        tb_printf(&t, ",\"params\":%s", p);
        free(p);
    }
    tb_printf(&t, "}");
    return t.p;
}

/* Sends method(params) on c without reading the reply; returns its id. */
static int send_rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int send_rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
{
    int id = next_id++;
    va_list ap;
    va_start(ap, params_fmt);
    char *text = vrequest(id, method, params_fmt, ap);
    va_end(ap);
    if (!rh_send_line(c, text))
        fail_msg("cannot send %s", text);
    free(text);
    return id;
}

/* Reads the next line (what names it for a failure); on a timeout or EOF
 * the test fails with the daemons' logs. */
static cJSON *next_json(rh_conn *c, const char *what)
{
    const char *line;
    size_t len;
    rh_read_status st = rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len);
    if (st != RH_LINE) {
        dump_logs();
        fail_msg("no line (%s) waiting for %s", st == RH_TIMEOUT ? "timeout" : "connection closed",
                 what);
    }
    cJSON *j = cJSON_ParseWithLength(line, len);
    if (!j)
        fail_msg("not JSON: %.*s", (int)len, line);
    return j;
}

/* Reads the next line, which must be the reply to id (of request `text`,
 * for messages; may be NULL). */
static cJSON *reply_to_text(rh_conn *c, int id, const char *text)
{
    char what[400];
    snprintf(what, sizeof what, "the reply to %.300s", text ? text : "");
    if (!text)
        snprintf(what, sizeof what, "the reply to id %d", id);
    cJSON *r = next_json(c, what);
    if (!cJSON_IsNumber(at(r, "id")) || num_at(r, "id") != id) {
        char *s = show(r);
        fail_msg("want the reply to id %d, got %s", id, s);
    }
    return r;
}

static cJSON *reply_to(rh_conn *c, int id)
{
    return reply_to_text(c, id, NULL);
}

/* Sends method(params) and returns the reply, whose id is checked. */
static cJSON *rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
    __attribute__((format(printf, 3, 4)));

static cJSON *rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
{
    int id = next_id++;
    va_list ap;
    va_start(ap, params_fmt);
    char *text = vrequest(id, method, params_fmt, ap);
    va_end(ap);
    if (!rh_send_line(c, text))
        fail_msg("cannot send %s", text);
    cJSON *r = reply_to_text(c, id, text);
    free(text);
    return r;
}

/* The reply must be a result; returns it. */
static cJSON *ok(cJSON *r)
{
    if (!at(r, "result")) {
        char *s = show(r);
        fail_msg("want a result, got %s", s);
    }
    return r;
}

/* The reply must be a result; returns its `revision` and frees it. */
static uint64_t ok_revision(cJSON *r)
{
    ok(r);
    uint64_t rev = (uint64_t)num_at(r, "result.revision");
    cJSON_Delete(r);
    return rev;
}

/* The reply must be an error with this code; returns it. */
static cJSON *error_code(cJSON *r, int code)
{
    const cJSON *c = at(r, "error.code");
    if (!cJSON_IsNumber(c) || c->valuedouble != code) {
        char *s = show(r);
        fail_msg("want error %d, got %s", code, s);
    }
    return r;
}

/* Waits (scene.list with min_revision) until c's replica has applied
 * revision rev. */
static void sync_to(rh_conn *c, uint64_t rev)
{
    cJSON_Delete(ok(rpc(c, "scene.list", "{\"min_revision\":%llu}", (unsigned long long)rev)));
}

/* A number of stats (a dotted path). */
static double stat_num(rh_conn *c, const char *path)
{
    cJSON *r = ok(rpc(c, "stats", NULL));
    double v = num_at(r, path);
    cJSON_Delete(r);
    return v;
}

/* The result of scene.get (of a replica at min_revision or later; 0: no
 * min_revision).  The caller deletes the reply. */
static cJSON *get_scene(rh_conn *c, const char *scene, uint64_t min_revision)
{
    if (min_revision)
        return ok(rpc(c, "scene.get", "{\"scene\":\"%s\",\"min_revision\":%llu}", scene,
                      (unsigned long long)min_revision));
    return ok(rpc(c, "scene.get", "{\"scene\":\"%s\"}", scene));
}

/* The shape of sphere k: at x = k, radius 0.5 (prints back as sent). */
#define SPH "{\"sphere\":{\"center\":[%d,0,0],\"radius\":0.5}}"

static cJSON *sphere_json(int k)
{
    char text[128];
    snprintf(text, sizeof text, SPH, k);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    return j;
}

/* The scene.get reply r has shape `id`, sphere k. */
static void expect_shape(const cJSON *r, const char *id, int k)
{
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(at(r, "result.shapes"), id);
    cJSON *want = sphere_json(k);
    if (!shape || !json_same(shape, want)) {
        char *s = show(r), *w = show(want);
        fail_msg("want shape %s = %s in %s", id, w, s);
    }
    cJSON_Delete(want);
}

/* The results of the two replies are the same JSON (the ids aside). */
static void expect_same_result(cJSON *ra, cJSON *rb, const char *what)
{
    ok(ra);
    ok(rb);
    if (!json_same(at(ra, "result"), at(rb, "result"))) {
        char *a = show(ra), *b = show(rb);
        fail_msg("%s differs between the replicas:\n A %s\n B %s", what, a, b);
    }
    cJSON_Delete(ra);
    cJSON_Delete(rb);
}

/* Both replicas, once they have revision rev, hold the same scenes, each
 * the same, and the same models; and they have applied the same stream
 * (rev must be the stream's last write: then both applied all of it). */
static void expect_same_store(rh_conn *ca, rh_conn *cb, uint64_t rev)
{
    sync_to(ca, rev);
    sync_to(cb, rev);
    cJSON *la = ok(rpc(ca, "scene.list", NULL)), *lb = ok(rpc(cb, "scene.list", NULL));
    if (!json_same(at(la, "result"), at(lb, "result"))) {
        char *a = show(la), *b = show(lb);
        fail_msg("scene.list differs:\n A %s\n B %s", a, b);
    }
    const cJSON *scenes = at(la, "result.scenes");
    const cJSON *e;
    cJSON_ArrayForEach(e, scenes)
    {
        const char *name = str_at(e, "scene");
        expect_same_result(get_scene(ca, name, 0), get_scene(cb, name, 0), name);
    }
    cJSON_Delete(la);
    cJSON_Delete(lb);
    expect_same_result(rpc(ca, "model.list", NULL), rpc(cb, "model.list", NULL), "model.list");
    double aa = stat_num(ca, "result.replication.applied");
    double ab = stat_num(cb, "result.replication.applied");
    if (aa != ab || aa < (double)rev)
        fail_msg("replication.applied: A %.0f, B %.0f (want equal, >= %llu)", aa, ab,
                 (unsigned long long)rev);
    assert_true(stat_num(ca, "result.revision") == stat_num(cb, "result.revision"));
}

#define MODEL_LINKS                                                                                \
    "[{\"id\":\"l\",\"frame\":0,\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":0.5}}}]"

/* ---- writes through one replica, reads through another ---------------------------------- */

/* The setup most tests share: a nats-server of their own, a fresh store
 * and two replicas of it, connected. */
typedef struct pair {
    nats_srv *ns;
    char store[64];
    rh_daemon *a, *b;
    rh_conn *ca, *cb;
} pair;

static pair two_replicas(void)
{
    pair t;
    need_nats();
    t.ns = nats_start();
    fresh_store(t.store, sizeof t.store);
    t.a = replica(t.ns, t.store, NULL);
    t.b = replica(t.ns, t.store, NULL);
    t.ca = connect_ok(t.a, false);
    t.cb = connect_ok(t.b, false);
    return t;
}

/* Closes the pair's connections and stops its replicas (exit 0 each). */
static void pair_end(pair *t)
{
    rh_close(t->ca);
    rh_close(t->cb);
    stop_ok(t->a);
    stop_ok(t->b);
}

static void write_through_a_read_through_b(void **state)
{
    (void)state;
    pair t = two_replicas();
    rh_conn *ca = t.ca, *cb = t.cb;

    uint64_t rev =
        ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s\",\"shapes\":{\"b0\":" SPH "}}", 0));
    assert_true(rev >= 1);
    cJSON *g = get_scene(cb, "s", rev);
    assert_true(num_at(g, "result.revision") >= (double)rev);
    expect_shape(g, "b0", 0);
    cJSON_Delete(g);

    int n = rh_wrapped() ? 4 : 12;
    for (int k = 1; k <= n; k++) {
        uint64_t r = ok_revision(
            rpc(ca, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"b%d\":" SPH "}}", k, k));
        assert_true(r > rev);
        rev = r;
        g = get_scene(cb, "s", rev);
        assert_true(num_at(g, "result.revision") >= (double)rev);
        assert_int_equal(cJSON_GetArraySize(at(g, "result.shapes")), k + 1);
        for (int j = 0; j <= k; j++) {
            char id[16];
            snprintf(id, sizeof id, "b%d", j);
            expect_shape(g, id, j);
        }
        cJSON_Delete(g);
    }

    /* The other way: a write through B, read through A.  B answers after
     * applying it, so B has it at once too. */
    uint64_t rb =
        ok_revision(rpc(cb, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"from_b\":" SPH "}}", 99));
    assert_true(rb > rev);
    g = get_scene(cb, "s", 0);
    assert_true(num_at(g, "result.revision") == (double)rb);
    expect_shape(g, "from_b", 99);
    cJSON_Delete(g);
    g = get_scene(ca, "s", rb);
    assert_true(num_at(g, "result.revision") >= (double)rb);
    expect_shape(g, "from_b", 99);
    expect_shape(g, "b1", 1);
    assert_int_equal(cJSON_GetArraySize(at(g, "result.shapes")), n + 2);
    cJSON_Delete(g);
    /* And a scene created through B. */
    uint64_t rc =
        ok_revision(rpc(cb, "scene.create", "{\"scene\":\"t\",\"shapes\":{\"x\":" SPH "}}", 7));
    g = get_scene(ca, "t", rc);
    expect_shape(g, "x", 7);
    cJSON_Delete(g);

    pair_end(&t);
}

static void revisions_equal_and_state_equal(void **state)
{
    (void)state;
    pair t = two_replicas();
    rh_conn *ca = t.ca, *cb = t.cb;

    /* Writes alternate between the replicas; each replica first reads up
     * to the last write (min_revision), so that what it validates against
     * has the other's writes. */
    uint64_t last = 0, r;
#define STEP(conn, method, ...)                                                                    \
    do {                                                                                           \
        sync_to(conn, last);                                                                       \
        r = ok_revision(rpc(conn, method, __VA_ARGS__));                                           \
        assert_true(r > last);                                                                     \
        last = r;                                                                                  \
    } while (0)
    STEP(ca, "scene.create", "{\"scene\":\"s1\",\"shapes\":{\"a\":" SPH ",\"b\":" SPH "}}", 0, 1);
    STEP(cb, "scene.create", "{\"scene\":\"s2\",\"shapes\":{\"c\":" SPH "}}", 2);
    STEP(ca, "scene.put", "{\"scene\":\"s2\",\"shapes\":{\"d\":" SPH "}}", 3);
    STEP(cb, "scene.put", "{\"scene\":\"s1\",\"shapes\":{\"e\":" SPH ",\"a\":" SPH "}}", 4, 5);
    STEP(ca, "scene.remove", "{\"scene\":\"s1\",\"ids\":[\"b\",\"nope\"]}");
    STEP(cb, "scene.create", "{\"scene\":\"s3\",\"shapes\":{\"f\":" SPH "}}", 6);
    STEP(ca, "model.put", "{\"model\":\"m\",\"links\":" MODEL_LINKS "}");
    STEP(cb, "scene.replace", "{\"scene\":\"s2\",\"shapes\":{\"g\":" SPH "}}", 7);
    STEP(ca, "scene.delete", "{\"scene\":\"s3\"}");
    STEP(cb, "scene.put", "{\"scene\":\"s4\",\"create\":true,\"shapes\":{\"h\":" SPH "}}", 8);
    STEP(ca, "model.put", "{\"model\":\"n\",\"links\":" MODEL_LINKS "}");
    STEP(cb, "model.delete", "{\"model\":\"n\"}");
#undef STEP

    expect_same_store(ca, cb, last);
    expect_same_result(rpc(ca, "model.get", "{\"model\":\"m\"}"),
                       rpc(cb, "model.get", "{\"model\":\"m\"}"), "model.get m");
    /* What the writes made, on either replica. */
    cJSON *g = get_scene(cb, "s1", 0);
    assert_int_equal(cJSON_GetArraySize(at(g, "result.shapes")), 2);
    expect_shape(g, "a", 5);
    expect_shape(g, "e", 4);
    cJSON_Delete(g);
    g = get_scene(ca, "s2", 0);
    assert_int_equal(cJSON_GetArraySize(at(g, "result.shapes")), 1);
    expect_shape(g, "g", 7);
    cJSON_Delete(g);
    cJSON_Delete(error_code(rpc(ca, "scene.get", "{\"scene\":\"s3\"}"), -32001));
    cJSON_Delete(error_code(rpc(cb, "scene.get", "{\"scene\":\"s3\"}"), -32001));
    cJSON_Delete(error_code(rpc(ca, "model.get", "{\"model\":\"n\"}"), -32001));
    assert_true(stat_num(ca, "result.revision") == (double)last);
    assert_true(stat_num(cb, "result.replication.applied") == (double)last);

    pair_end(&t);
}

/* ---- if_revision across replicas -------------------------------------------------------- */

static void if_revision_conflict_across_replicas(void **state)
{
    (void)state;
    pair t = two_replicas();
    rh_conn *ca = t.ca, *cb = t.cb;

    uint64_t w = ok_revision(rpc(ca, "scene.create", "{\"scene\":\"c\"}"));
    cJSON *model = cJSON_CreateObject(); /* the winners' shapes */
    int rounds = rh_wrapped() ? 6 : 20, wins_a = 0, wins_b = 0;
    for (int k = 0; k < rounds; k++) {
        /* Both replicas have the scene at revision w. */
        cJSON *g = get_scene(ca, "c", w);
        assert_true(num_at(g, "result.revision") == (double)w);
        cJSON_Delete(g);
        g = get_scene(cb, "c", w);
        assert_true(num_at(g, "result.revision") == (double)w);
        cJSON_Delete(g);
        /* Both proposals are sent before either reply is read. */
        int ia = send_rpc(ca, "scene.put",
                          "{\"scene\":\"c\",\"if_revision\":%llu,\"shapes\":{\"a%d\":" SPH "}}",
                          (unsigned long long)w, k, k);
        int ib = send_rpc(cb, "scene.put",
                          "{\"scene\":\"c\",\"if_revision\":%llu,\"shapes\":{\"b%d\":" SPH "}}",
                          (unsigned long long)w, k, 100 + k);
        cJSON *ra = reply_to(ca, ia), *rb = reply_to(cb, ib);
        bool a_won = at(ra, "result") != NULL, b_won = at(rb, "result") != NULL;
        if (a_won == b_won) {
            char *x = show(ra), *y = show(rb);
            fail_msg("round %d: want exactly one success\n A %s\n B %s", k, x, y);
        }
        cJSON *won = a_won ? ra : rb, *lost = a_won ? rb : ra;
        uint64_t wr = (uint64_t)num_at(won, "result.revision");
        assert_true(wr > w);
        error_code(lost, -32003);
        if (num_at(lost, "error.data.expected") != (double)w ||
            num_at(lost, "error.data.actual") != (double)wr) {
            char *x = show(lost);
            fail_msg("round %d: want a conflict expected %llu, actual %llu: %s", k,
                     (unsigned long long)w, (unsigned long long)wr, x);
        }
        char id[16];
        snprintf(id, sizeof id, "%c%d", a_won ? 'a' : 'b', k);
        cJSON_AddItemToObject(model, id, sphere_json(a_won ? k : 100 + k));
        wins_a += a_won;
        wins_b += b_won;
        cJSON_Delete(ra);
        cJSON_Delete(rb);
        w = wr;
    }
    print_message("if_revision races: %d won through A, %d through B\n", wins_a, wins_b);

    /* The scene holds the winners' shapes only, the same on both.  A
     * loser's proposal took a sequence number but no revision: one more
     * write, once both have applied it, brings them level. */
    w = ok_revision(rpc(ca, "scene.put", "{\"scene\":\"c\",\"shapes\":{\"final\":" SPH "}}", 999));
    cJSON_AddItemToObject(model, "final", sphere_json(999));
    expect_same_store(ca, cb, w);
    cJSON *g = get_scene(ca, "c", 0);
    assert_true(num_at(g, "result.revision") == (double)w);
    assert_int_equal(cJSON_GetArraySize(at(g, "result.shapes")), rounds + 1);
    const cJSON *e;
    cJSON_ArrayForEach(e, model)
    {
        const cJSON *got = cJSON_GetObjectItemCaseSensitive(at(g, "result.shapes"), e->string);
        if (!got || !json_same(got, e)) {
            char *s = show(g);
            fail_msg("winner %s missing or changed in %s", e->string, s);
        }
    }
    cJSON_Delete(g);
    cJSON_Delete(model);

    pair_end(&t);
}

/* ---- watches ---------------------------------------------------------------------------- */

/* A server notification: an object with a method and no id. */
static bool is_notification(const cJSON *j)
{
    return cJSON_IsObject(j) && !cJSON_GetObjectItemCaseSensitive(j, "id") &&
           cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "method"));
}

/* The next line must be this scene.changed notification, exactly. */
static void expect_changed(rh_conn *c, uint64_t watch, const char *scene, uint64_t revision,
                           cJSON *put, cJSON *removed)
{
    cJSON *want = cJSON_CreateObject();
    cJSON_AddStringToObject(want, "jsonrpc", "2.0");
    cJSON_AddStringToObject(want, "method", "scene.changed");
    cJSON *p = cJSON_AddObjectToObject(want, "params");
    cJSON_AddNumberToObject(p, "watch", (double)watch);
    cJSON_AddStringToObject(p, "scene", scene);
    cJSON_AddNumberToObject(p, "revision", (double)revision);
    cJSON_AddItemToObject(p, "put", put);
    cJSON_AddItemToObject(p, "removed", removed);
    cJSON *got = next_json(c, "a scene.changed notification");
    if (!is_notification(got) || !json_same(got, want)) {
        char *g = show(got), *x = show(want);
        fail_msg("notification\n got %s\nwant %s", g, x);
    }
    cJSON_Delete(got);
    cJSON_Delete(want);
}

static void watch_on_b_sees_a_writes_in_order(void **state)
{
    (void)state;
    pair t = two_replicas();
    rh_conn *ca = t.ca, *cb = t.cb;

    uint64_t r0 = ok_revision(rpc(ca, "scene.create", "{\"scene\":\"w\"}"));
    cJSON_Delete(get_scene(cb, "w", r0));
    cJSON *r = ok(rpc(cb, "scene.watch", "{\"scene\":\"w\"}"));
    uint64_t watch = (uint64_t)num_at(r, "result.watch");
    assert_true(num_at(r, "result.revision") == (double)r0);
    cJSON_Delete(r);

    int n = rh_wrapped() ? 6 : 25;
    uint64_t *revs = calloc((size_t)n + 2, sizeof *revs);
    assert_non_null(revs);
    uint64_t prev = r0;
    for (int k = 0; k < n; k++) {
        revs[k] = ok_revision(
            rpc(ca, "scene.put", "{\"scene\":\"w\",\"shapes\":{\"p%d\":" SPH "}}", k, k));
        assert_true(revs[k] > prev);
        prev = revs[k];
    }
    revs[n] = ok_revision(rpc(ca, "scene.remove", "{\"scene\":\"w\",\"ids\":[\"p0\",\"p1\"]}"));
    /* Another scene's change is not this watch's business. */
    revs[n + 1] = ok_revision(rpc(ca, "scene.create", "{\"scene\":\"other\"}"));

    /* B's watcher sends nothing meanwhile: every line it gets is a
     * notification, in revision order. */
    for (int k = 0; k < n; k++) {
        cJSON *put = cJSON_CreateObject();
        char id[16];
        snprintf(id, sizeof id, "p%d", k);
        cJSON_AddItemToObject(put, id, sphere_json(k));
        expect_changed(cb, watch, "w", revs[k], put, cJSON_CreateArray());
    }
    cJSON *removed = cJSON_CreateArray();
    cJSON_AddItemToArray(removed, cJSON_CreateString("p0"));
    cJSON_AddItemToArray(removed, cJSON_CreateString("p1"));
    expect_changed(cb, watch, "w", revs[n], cJSON_CreateObject(), removed);
    /* Nothing more: the reply to a ping comes next. */
    cJSON *p = reply_to(cb, send_rpc(cb, "ping", NULL));
    assert_true(cJSON_IsTrue(at(p, "result.pong")));
    cJSON_Delete(p);
    /* B's own write, and A's delete of the scene, reach the watch too. */
    uint64_t rb =
        ok_revision(rpc(cb, "scene.put", "{\"scene\":\"w\",\"shapes\":{\"q\":" SPH "}}", 5));
    cJSON *put = cJSON_CreateObject();
    cJSON_AddItemToObject(put, "q", sphere_json(5));
    expect_changed(cb, watch, "w", rb, put, cJSON_CreateArray());
    sync_to(ca, rb);
    uint64_t rd = ok_revision(rpc(ca, "scene.delete", "{\"scene\":\"w\"}"));
    cJSON *d = next_json(cb, "scene.deleted");
    if (!is_notification(d) || strcmp(str_at(d, "method"), "scene.deleted") != 0 ||
        num_at(d, "params.watch") != (double)watch || num_at(d, "params.revision") != (double)rd) {
        char *s = show(d);
        fail_msg("want scene.deleted of watch %llu at %llu, got %s", (unsigned long long)watch,
                 (unsigned long long)rd, s);
    }
    cJSON_Delete(d);
    free(revs);

    pair_end(&t);
}

/* ---- replicas that start late or again -------------------------------------------------- */

/* The replica's log says it caught up to exactly this revision. */
static void expect_caught_up(const rh_daemon *d, uint64_t rev)
{
    char text[64];
    snprintf(text, sizeof text, "replica caught up: revision %llu\n", (unsigned long long)rev);
    if (!rh_log_contains(d, text)) {
        rh_dump_log(d);
        fail_msg("want \"%s\" in the log", text);
    }
}

static void late_replica_catches_up(void **state)
{
    (void)state;
    pair t = two_replicas();
    nats_srv *ns = t.ns;
    rh_daemon *a = t.a, *b = t.b;
    rh_conn *ca = t.ca, *cb = t.cb;
    const char *store = t.store;

    uint64_t last =
        ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s1\",\"shapes\":{\"a\":" SPH "}}", 1));
    int n = rh_wrapped() ? 4 : 15;
    for (int k = 0; k < n; k++) {
        rh_conn *c = k % 2 ? ca : cb;
        sync_to(c, last);
        last = ok_revision(
            rpc(c, "scene.put", "{\"scene\":\"s1\",\"shapes\":{\"k%d\":" SPH "}}", k, k));
    }
    sync_to(cb, last);
    last = ok_revision(rpc(cb, "scene.create", "{\"scene\":\"s2\",\"shapes\":{\"z\":" SPH "}}", 3));
    sync_to(ca, last);
    last = ok_revision(rpc(ca, "model.put", "{\"model\":\"m\",\"links\":" MODEL_LINKS "}"));
    sync_to(ca, last);
    last = ok_revision(rpc(ca, "scene.remove", "{\"scene\":\"s1\",\"ids\":[\"k0\"]}"));

    /* C starts now: it has everything before it listens, so its first
     * reads need no min_revision. */
    rh_daemon *c = replica(ns, store, NULL);
    expect_caught_up(c, last);
    rh_conn *cc = connect_ok(c, false);
    assert_true(stat_num(cc, "result.revision") == (double)last);
    assert_true(stat_num(cc, "result.replication.applied") == (double)last);
    expect_same_result(rpc(ca, "scene.list", NULL), rpc(cc, "scene.list", NULL), "scene.list");
    expect_same_result(get_scene(ca, "s1", 0), get_scene(cc, "s1", 0), "s1");
    expect_same_result(get_scene(ca, "s2", 0), get_scene(cc, "s2", 0), "s2");
    expect_same_result(rpc(ca, "model.get", "{\"model\":\"m\"}"),
                       rpc(cc, "model.get", "{\"model\":\"m\"}"), "model.get m");
    /* And it takes part: its write reaches the others. */
    uint64_t rc =
        ok_revision(rpc(cc, "scene.put", "{\"scene\":\"s2\",\"shapes\":{\"from_c\":" SPH "}}", 9));
    assert_true(rc > last);
    cJSON *g = get_scene(cb, "s2", rc);
    expect_shape(g, "from_c", 9);
    cJSON_Delete(g);
    expect_same_store(ca, cc, rc);

    rh_close(ca);
    rh_close(cb);
    rh_close(cc);
    stop_ok(c);
    stop_ok(a);
    stop_ok(b);
}

static void restart_catches_up(void **state)
{
    (void)state;
    pair t = two_replicas();
    nats_srv *ns = t.ns;
    rh_daemon *b = t.b;
    rh_conn *ca = t.ca, *cb = t.cb;
    const char *store = t.store;

    uint64_t last =
        ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s\",\"shapes\":{\"x0\":" SPH "}}", 0));
    cJSON *g = get_scene(cb, "s", last);
    expect_shape(g, "x0", 0);
    cJSON_Delete(g);
    rh_close(cb);
    stop_ok(b);

    /* Writes while B is gone. */
    int n = rh_wrapped() ? 4 : 12;
    for (int k = 1; k <= n; k++)
        last = ok_revision(
            rpc(ca, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"x%d\":" SPH "}}", k, k));
    last = ok_revision(rpc(ca, "scene.remove", "{\"scene\":\"s\",\"ids\":[\"x0\"]}"));
    last = ok_revision(rpc(ca, "scene.create", "{\"scene\":\"t\",\"shapes\":{\"y\":" SPH "}}", 42));

    b = t.b = replica(ns, store, NULL);
    expect_caught_up(b, last);
    cb = t.cb = connect_ok(b, false);
    g = get_scene(cb, "s", 0);
    assert_int_equal(cJSON_GetArraySize(at(g, "result.shapes")), n);
    expect_shape(g, "x1", 1);
    char id[16];
    snprintf(id, sizeof id, "x%d", n);
    expect_shape(g, id, n);
    cJSON_Delete(g);
    expect_same_result(rpc(ca, "scene.list", NULL), rpc(cb, "scene.list", NULL), "scene.list");
    expect_same_result(get_scene(ca, "s", 0), get_scene(cb, "s", 0), "s");
    expect_same_result(get_scene(ca, "t", 0), get_scene(cb, "t", 0), "t");
    /* The restarted replica writes too. */
    uint64_t rb =
        ok_revision(rpc(cb, "scene.put", "{\"scene\":\"t\",\"shapes\":{\"again\":" SPH "}}", 8));
    assert_true(rb > last);
    g = get_scene(ca, "t", rb);
    expect_shape(g, "again", 8);
    cJSON_Delete(g);

    pair_end(&t);
}

/* ---- refusals --------------------------------------------------------------------------- */

/* The member of a batch reply with this id. */
static const cJSON *batch_member(const cJSON *reply, int id)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, reply)
    {
        const cJSON *i = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (cJSON_IsNumber(i) && i->valuedouble == id)
            return e;
    }
    char *s = show(reply);
    fail_msg("no reply to id %d in %s", id, s);
    return NULL;
}

/* PROTOCOL.md, Replication: a batch that holds mutations runs its
 * requests in order, each mutation waiting for the stream, so a query after
 * one sees it; a batch that also holds an array gets -32600 for its
 * mutations, and nothing of them is published. */
static void batch_with_mutations(void **state)
{
    (void)state;
    pair t = two_replicas();
    rh_conn *ca = t.ca, *cb = t.cb;

    uint64_t r =
        ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s\",\"shapes\":{\"a\":" SPH "}}", 0));
    int ip = next_id++, ig = next_id++, ic = next_id++, in = next_id++;
    char line[1024];
    snprintf(line, sizeof line,
             "[{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"s\",\"shapes\":{\"x\":" SPH "}}},"
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.get\",\"params\":{\"scene\":"
             "\"s\"}},"
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.create\",\"params\":{\"scene\":"
             "\"t\"}},"
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}]",
             ip, 5, ig, ic, in);
    cJSON *reply = call_json(ca, line);
    if (!cJSON_IsArray(reply) || cJSON_GetArraySize(reply) != 4) {
        char *x = show(reply);
        fail_msg("want a batch reply of 4, got %s", x);
    }
    /* Only this test's replicas use the stream: the batch's mutations take
     * the next sequences, in order, and the query between them sees the
     * first. */
    const cJSON *ep = batch_member(reply, ip), *eg = batch_member(reply, ig);
    if (!at(ep, "result") || num_at(ep, "result.revision") != (double)(r + 1) ||
        !at(eg, "result") || num_at(eg, "result.revision") != (double)(r + 1) ||
        !cJSON_GetObjectItemCaseSensitive(at(eg, "result.shapes"), "x")) {
        char *x = show(reply);
        fail_msg("want the put at %llu seen by the get after it: %s", (unsigned long long)r + 1, x);
    }
    const cJSON *ec = batch_member(reply, ic);
    assert_true(at(ec, "result") && num_at(ec, "result.revision") == (double)(r + 2));
    assert_true(cJSON_IsTrue(at(batch_member(reply, in), "result.pong")));
    cJSON_Delete(reply);
    uint64_t last = r + 2;
    cJSON *g = get_scene(cb, "s", last);
    expect_shape(g, "x", 5);
    cJSON_Delete(g);
    cJSON_Delete(ok(
        rpc(cb, "scene.get", "{\"scene\":\"t\",\"min_revision\":%llu}", (unsigned long long)last)));

    /* With an array in the batch: -32600 for the mutation (and for the
     * array), nothing published, nothing changed. */
    double proposed = stat_num(ca, "result.replication.proposed");
    snprintf(line, sizeof line,
             "[{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"s\",\"shapes\":{\"y\":" SPH "}}},[],"
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.get\",\"params\":{\"scene\":"
             "\"s\"}}]",
             ip, 6, ig);
    reply = call_json(ca, line);
    if (!cJSON_IsArray(reply) || cJSON_GetArraySize(reply) != 3) {
        char *x = show(reply);
        fail_msg("want a batch reply of 3, got %s", x);
    }
    ep = batch_member(reply, ip);
    assert_true(num_at(ep, "error.code") == -32600);
    eg = batch_member(reply, ig);
    assert_true(num_at(eg, "result.revision") == (double)(r + 1));
    assert_null(cJSON_GetObjectItemCaseSensitive(at(eg, "result.shapes"), "y"));
    cJSON_Delete(reply);
    assert_true(stat_num(ca, "result.revision") == (double)last);
    assert_true(stat_num(ca, "result.replication.proposed") == proposed);
    /* The next write takes the very next number: nothing went out. */
    uint64_t r2 =
        ok_revision(rpc(ca, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"z\":" SPH "}}", 7));
    assert_int_equal(r2, last + 1);
    g = get_scene(cb, "s", r2);
    assert_null(cJSON_GetObjectItemCaseSensitive(at(g, "result.shapes"), "y"));
    expect_shape(g, "z", 7);
    cJSON_Delete(g);
    expect_same_store(ca, cb, r2);

    pair_end(&t);
}

static void min_revision_errors(void **state)
{
    (void)state;
    need_nats();
    nats_srv *ns = nats_start();
    char store[64];
    fresh_store(store, sizeof store);
    rh_daemon *a = replica(ns, store, "200");
    rh_conn *ca = connect_ok(a, false);

    uint64_t r = ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s\"}"));
    /* Reached already: answered at once. */
    cJSON_Delete(get_scene(ca, "s", r));
    cJSON_Delete(ok(rpc(ca, "scene.get", "{\"scene\":\"s\",\"min_revision\":0}")));
    /* Far ahead: -32004 after max_wait_ms. */
    cJSON *e = error_code(
        rpc(ca, "scene.list", "{\"min_revision\":%llu}", (unsigned long long)r + 1000000), -32004);
    assert_string_equal(str_at(e, "error.data.limit"), "max_wait_ms");
    assert_true(num_at(e, "error.data.max") == 200);
    cJSON_Delete(e);
    e = error_code(
        rpc(ca, "scene.get", "{\"scene\":\"s\",\"min_revision\":%llu}", (unsigned long long)r + 1),
        -32004);
    assert_string_equal(str_at(e, "error.data.limit"), "max_wait_ms");
    cJSON_Delete(e);
    /* The connection goes on. */
    cJSON_Delete(get_scene(ca, "s", r));
    /* Not a non-negative integer. */
    expect_error(rpc(ca, "scene.get", "{\"scene\":\"s\",\"min_revision\":\"x\"}"), -32602,
                 "params.min_revision");
    expect_error(rpc(ca, "scene.get", "{\"scene\":\"s\",\"min_revision\":-1}"), -32602,
                 "params.min_revision");
    expect_error(rpc(ca, "scene.get", "{\"scene\":\"s\",\"min_revision\":1.5}"), -32602,
                 "params.min_revision");
    expect_error(rpc(ca, "scene.list", "{\"min_revision\":null}"), -32602, "params.min_revision");
    /* Mutations do not take it; nothing changes. */
    expect_error(rpc(ca, "scene.put",
                     "{\"scene\":\"s\",\"min_revision\":%llu,\"shapes\":{\"x\":" SPH "}}",
                     (unsigned long long)r, 1),
                 -32602, "params.min_revision");
    expect_error(rpc(ca, "scene.create", "{\"scene\":\"t\",\"min_revision\":0}"), -32602,
                 "params.min_revision");
    assert_true(stat_num(ca, "result.revision") == (double)r);
    assert_true(stat_num(ca, "result.replication.proposed") == 1);
    cJSON *g = get_scene(ca, "s", 0);
    assert_int_equal(cJSON_GetArraySize(at(g, "result.shapes")), 0);
    cJSON_Delete(g);

    rh_close(ca);
    stop_ok(a);
}

/* Runs reposed with args; the exit code must be `code` and the output
 * must contain `text`. */
static void expect_run(const char *const *args, int code, const char *text)
{
    static char out[8192];
    int got = rh_run(args, out, sizeof out, rh_ms(RH_TIMEOUT_MS));
    if (got != code || !strstr(out, text)) {
        textbuf t = {0};
        for (int i = 0; args[i]; i++)
            tb_printf(&t, " %s", args[i]);
        fail_msg("reposed%s: exit %d (want %d), output (want \"%s\" in it):\n%s", t.p, got, code,
                 text, out);
    }
}

static void bad_configuration(void **state)
{
    (void)state;
    need_nats_build();
    char sock[256], data[256];
    const char *dir = temp_dir_ok();
    snprintf(sock, sizeof sock, "%s/r.sock", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    /* Port 1 of 127.0.0.1: nothing listens there. */
    static const char nowhere[] = "nats://127.0.0.1:1";

    const char *no_store[] = {"--unix", sock, "--tcp", "none", "--nats", nowhere, NULL};
    expect_run(no_store, 2, "--store");
    const char *no_nats[] = {"--unix", sock, "--tcp", "none", "--store", "x", NULL};
    expect_run(no_nats, 2, "--nats");
    const char *dotted[] = {"--unix", sock,      "--tcp", "none", "--nats",
                            nowhere,  "--store", "a.b",   NULL};
    expect_run(dotted, 1, "--store");
    const char *spaced[] = {"--unix", sock,      "--tcp",     "none", "--nats",
                            nowhere,  "--store", "has space", NULL};
    expect_run(spaced, 1, "--store");
    const char *empty[] = {"--unix", sock, "--tcp", "none", "--nats", nowhere, "--store", "", NULL};
    char out[4096];
    int code = rh_run(empty, out, sizeof out, rh_ms(RH_TIMEOUT_MS));
    assert_true(code == 1 || code == 2);
    const char *unreachable[] = {"--unix", sock,      "--tcp", "none", "--nats",
                                 nowhere,  "--store", "x",     NULL};
    expect_run(unreachable, 1, "connecting to NATS");
    /* A replica's --data-dir is a cache of the stream: allowed (here the
     * unreachable server stops it), but not with --fsync always. */
    const char *with_data[] = {"--unix",  sock, "--tcp",      "none", "--nats", nowhere,
                               "--store", "x",  "--data-dir", data,   NULL};
    expect_run(with_data, 1, "connecting to NATS");
    const char *fsync_always[] = {"--unix",  sock,      "--tcp", "none",       "--nats",
                                  nowhere,   "--store", "x",     "--data-dir", data,
                                  "--fsync", "always",  NULL};
    expect_run(fsync_always, 2, "--fsync always");
    /* The other --nats-* options need --nats; --nats-copies is 1 to 5. */
    const char *wait_alone[] = {"--unix", sock, "--tcp", "none", "--nats-wait", NULL};
    expect_run(wait_alone, 2, "--nats");
    const char *copies[] = {"--unix",  sock, "--tcp",         "none", "--nats", nowhere,
                            "--store", "x",  "--nats-copies", "0",    NULL};
    expect_run(copies, 2, "--nats-copies");
    /* None of them left a socket behind. */
    assert_int_equal(access(sock, F_OK), -1);
}

/* Waits (at most timeout_ms) for text in the file at path. */
static bool file_contains(const char *path, const char *text, int timeout_ms)
{
    static char buf[1 << 16];
    long long deadline = rh_now_ms() + timeout_ms;
    do {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            if (strstr(buf, text))
                return true;
        }
        rh_sleep_ms(50);
    } while (rh_now_ms() < deadline);
    return false;
}

/* A data directory ahead of the stream it is started against.  A stream
 * leader elected a moment ago can report a last sequence below what the
 * stream had delivered, so the replica reads the stream again for a while
 * (10 s) before it concludes the directory is another stream's: refused
 * when the stream stays behind; started when the stream reaches the
 * directory's revision meanwhile (here by writes, standing in for a
 * leader that catches up). */
static void data_dir_ahead_of_stream(void **state)
{
    (void)state;
    need_nats();
    nats_srv *ns = nats_start();
    char first[64], other[64], sock[256], data[256], log_path[300];
    fresh_store(first, sizeof first);
    fresh_store(other, sizeof other);
    const char *dir = temp_dir_ok();
    snprintf(sock, sizeof sock, "%s/r.sock", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(log_path, sizeof log_path, "%s/r.log", dir);

    /* The directory: 3 revisions of `first`. */
    const char *with_dir[] = {"--nats", ns->url, "--store", first, "--data-dir", data, NULL};
    rh_opts o = {NULL, "none", with_dir, false};
    rh_daemon *a = start_with(&o);
    track(a);
    rh_conn *ca = connect_ok(a, false);
    ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s\",\"shapes\":{\"x0\":" SPH "}}", 0));
    ok_revision(rpc(ca, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"x1\":" SPH "}}", 1));
    assert_int_equal(
        ok_revision(rpc(ca, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"x2\":" SPH "}}", 2)), 3);
    rh_close(ca);
    stop_ok(a);

    /* `other`: one message. */
    rh_daemon *b = replica(ns, other, NULL);
    rh_conn *cb = connect_ok(b, false);
    assert_int_equal(ok_revision(rpc(cb, "scene.create", "{\"scene\":\"o\"}")), 1);

    /* The directory against `other`: refused after the wait, the
     * directory left as it was. */
    const char *args[] = {rh_daemon_path(), "--unix",  sock,  "--tcp",      "none", "--nats",
                          ns->url,          "--store", other, "--data-dir", data,   NULL};
    static char out[8192];
    int code = rh_run(args + 1, out, sizeof out, rh_ms(RH_TIMEOUT_MS));
    if (code != 1 || !strstr(out, "reading the stream again") ||
        !strstr(out, "the store here is at revision 3 but stream") ||
        !strstr(out, "belongs to another stream"))
        fail_msg("a directory ahead of the stream: exit %d, output:\n%s", code, out);
    assert_int_equal(access(sock, F_OK), -1);

    /* Again, and the stream reaches revision 3 while it waits. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
            _exit(127);
        dup2(fd, 1);
        dup2(fd, 2);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char *argv_copy[16];
        size_t i = 0;
        for (; args[i]; i++)
            argv_copy[i] = strdup(args[i]);
        argv_copy[i] = NULL;
        execv(argv_copy[0], argv_copy);
        _exit(127);
    }
    if (!file_contains(log_path, "reading the stream again", rh_ms(RH_TIMEOUT_MS))) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("no wait for the stream in the log");
    }
    ok_revision(rpc(cb, "scene.put", "{\"scene\":\"o\",\"shapes\":{\"y1\":" SPH "}}", 1));
    assert_int_equal(
        ok_revision(rpc(cb, "scene.put", "{\"scene\":\"o\",\"shapes\":{\"y2\":" SPH "}}", 2)), 3);
    bool up = file_contains(log_path, "replica caught up: revision 3\n", rh_ms(RH_TIMEOUT_MS));
    if (up) {
        while (access(sock, F_OK) != 0)
            rh_sleep_ms(20);
        rh_conn *cc = rh_connect_unix(sock);
        assert_non_null(cc);
        /* It holds its directory's store, and applies the stream after it. */
        uint64_t r4 = ok_revision(
            rpc(cb, "scene.create", "{\"scene\":\"n\",\"shapes\":{\"y3\":" SPH "}}", 3));
        cJSON *g = get_scene(cc, "n", r4);
        expect_shape(g, "y3", 3);
        cJSON_Delete(g);
        g = get_scene(cc, "s", 0);
        expect_shape(g, "x2", 2);
        cJSON_Delete(g);
        rh_close(cc);
    }
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!up) {
        FILE *f = fopen(log_path, "r");
        size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
        if (f)
            fclose(f);
        out[n] = '\0';
        fail_msg("the replica did not start once the stream reached it; its log:\n%s", out);
    }
    assert_int_equal(rh_exit_code(status), 0);
    rh_close(cb);
    stop_ok(b);
}

/* ---- reporting -------------------------------------------------------------------------- */

static void hello_reports_replication(void **state)
{
    (void)state;
    need_nats();
    nats_srv *ns = nats_start();
    char store[64], stream[80];
    fresh_store(store, sizeof store);
    snprintf(stream, sizeof stream, "REPOSE_%s", store);
    rh_daemon *a = replica(ns, store, NULL);
    rh_conn *ca = connect_ok(a, false);

    cJSON *h = ok(rpc(ca, "hello", NULL));
    const cJSON *rep = at(h, "result.replication");
    if (!cJSON_IsObject(rep)) {
        char *s = show(h);
        fail_msg("hello of a replica: want replication {...}, got %s", s);
    }
    assert_string_equal(str_at(rep, "engine"), "nats-jetstream");
    assert_string_equal(str_at(rep, "store"), store);
    assert_string_equal(str_at(rep, "stream"), stream);
    assert_true(num_at(rep, "copies") == 1);
    assert_true(cJSON_IsTrue(at(rep, "connected")));
    assert_true(num_at(rep, "applied") == 0);
    assert_true(num_at(rep, "stream_last") == 0);
    assert_true(num_at(rep, "lag") == 0);
    assert_true(num_at(rep, "proposed") == 0);
    assert_true(num_at(rep, "publish_retries") == 0);
    assert_true(num_at(rep, "publish_failures") == 0);
    cJSON_Delete(h);

    uint64_t r = ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s\"}"));
    h = ok(rpc(ca, "stats", NULL));
    rep = at(h, "result.replication");
    assert_string_equal(str_at(rep, "engine"), "nats-jetstream");
    assert_string_equal(str_at(rep, "store"), store);
    assert_true(cJSON_IsTrue(at(rep, "connected")));
    assert_true(num_at(rep, "applied") == (double)r);
    assert_true(num_at(rep, "stream_last") == (double)r);
    assert_true(num_at(rep, "lag") == 0);
    assert_true(num_at(rep, "proposed") == 1);
    cJSON_Delete(h);
    rh_close(ca);
    stop_ok(a);

    /* A lone daemon: replication null. */
    rh_daemon *lone = start(NULL);
    rh_conn *cl = connect_ok(lone, false);
    h = ok(rpc(cl, "hello", NULL));
    if (!cJSON_IsNull(at(h, "result.replication"))) {
        char *s = show(h);
        fail_msg("hello of a lone daemon: want replication null, got %s", s);
    }
    cJSON_Delete(h);
    h = ok(rpc(cl, "stats", NULL));
    assert_true(cJSON_IsNull(at(h, "result.replication")));
    cJSON_Delete(h);
    rh_close(cl);
    stop_ok(lone);
}

/* ---- NATS down and back ----------------------------------------------------------------- */

static void nats_down_refuses_writes_serves_reads(void **state)
{
    (void)state;
    pair t = two_replicas();
    nats_srv *ns = t.ns;
    rh_daemon *a = t.a;
    rh_conn *ca = t.ca, *cb = t.cb;

    uint64_t r =
        ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s\",\"shapes\":{\"a\":" SPH "}}", 0));
    r = ok_revision(rpc(ca, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"b\":" SPH "}}", 1));
    cJSON_Delete(get_scene(cb, "s", r));
    cJSON *before = get_scene(ca, "s", 0);

    nats_kill(ns, SIGKILL);

    /* The replicas see the disconnect (at once, the socket closes; a
     * moment under valgrind).  Until then a write would be published and
     * wait for its message: a_write_in_flight_when_nats_dies_is_answered
     * tests that case; here the writes come once the disconnect is seen. */
    long long deadline = rh_now_ms() + rh_ms(30000);
    for (rh_conn *c = ca;; rh_sleep_ms(50)) {
        cJSON *h = ok(rpc(c, "stats", NULL));
        bool down = cJSON_IsFalse(at(h, "result.replication.connected"));
        cJSON_Delete(h);
        if (down && c == cb)
            break;
        if (down)
            c = cb;
        else if (rh_now_ms() >= deadline)
            fail_msg("replication.connected stays true on %s with the NATS server dead",
                     c == ca ? "A" : "B");
    }
    /* Writes are refused, -32007, on both replicas, and nothing changes. */
    for (int k = 0; k < 3; k++) {
        cJSON *p = error_code(rpc(k % 2 ? cb : ca, "scene.put",
                                  "{\"scene\":\"s\",\"shapes\":{\"down%d\":" SPH "}}", k, k),
                              -32007);
        const char *msg = str_at(p, "error.message");
        if (!strstr(msg, "cut off") && !strstr(msg, "replication")) {
            char *x = show(p);
            fail_msg("want a -32007 that says the replica is cut off, got %s", x);
        }
        cJSON_Delete(p);
    }
    cJSON *p = error_code(rpc(ca, "scene.create", "{\"scene\":\"new\"}"), -32007);
    assert_non_null(strstr(str_at(p, "error.message"), "cut off"));
    cJSON_Delete(p);
    assert_true(stat_num(ca, "result.revision") == (double)r);
    /* Reads go on, with the data of before. */
    cJSON *now = get_scene(ca, "s", 0);
    if (!json_same(at(before, "result"), at(now, "result"))) {
        char *x = show(before), *y = show(now);
        fail_msg("scene.get changed with NATS down:\n before %s\n now %s", x, y);
    }
    cJSON_Delete(now);
    now = get_scene(cb, "s", 0);
    assert_true(json_same(at(before, "result"), at(now, "result")));
    cJSON_Delete(now);
    cJSON_Delete(before);

    /* The server comes back (same port, same store): writes resume. */
    nats_restart(ns);
    deadline = rh_now_ms() + rh_ms(60000);
    uint64_t up = 0;
    int k;
    for (k = 0;; k++) {
        p = rpc(ca, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"up%d\":" SPH "}}", k, 10 + k);
        if (at(p, "result")) {
            up = (uint64_t)num_at(p, "result.revision");
            cJSON_Delete(p);
            break;
        }
        error_code(p, -32007);
        if (rh_now_ms() >= deadline) {
            char *s = show(p);
            rh_dump_log(a);
            fail_msg("writes did not resume after the NATS server came back; last reply %s", s);
        }
        cJSON_Delete(p);
        rh_sleep_ms(100);
    }
    assert_true(up > r);
    char id[16];
    snprintf(id, sizeof id, "up%d", k);
    cJSON *g = get_scene(cb, "s", up);
    expect_shape(g, id, 10 + k);
    expect_shape(g, "a", 0);
    expect_shape(g, "b", 1);
    cJSON_Delete(g);
    /* B writes again too (it may need a moment to reconnect). */
    deadline = rh_now_ms() + rh_ms(60000);
    uint64_t rb;
    for (;;) {
        p = rpc(cb, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"back\":" SPH "}}", 77);
        if (at(p, "result")) {
            rb = (uint64_t)num_at(p, "result.revision");
            cJSON_Delete(p);
            break;
        }
        error_code(p, -32007);
        if (rh_now_ms() >= deadline)
            fail_msg("B's writes did not resume after the NATS server came back");
        cJSON_Delete(p);
        rh_sleep_ms(100);
    }
    g = get_scene(ca, "s", rb);
    expect_shape(g, "back", 77);
    cJSON_Delete(g);
    /* Both read the same store again (rb is the last write: once both
     * have it, they have applied the same stream). */
    expect_same_store(ca, cb, rb);
    cJSON *h = ok(rpc(ca, "hello", NULL));
    assert_true(cJSON_IsTrue(at(h, "result.replication.connected")));
    cJSON_Delete(h);

    pair_end(&t);
}

/* A write published just before NATS goes (here: the server is stopped,
 * so that the write is surely out, then killed) is answered within a
 * bounded time: PROTOCOL.md, "A publish that is never acknowledged is
 * answered -32007".  Until it is, its connection runs nothing else. */
static void a_write_in_flight_when_nats_dies_is_answered(void **state)
{
    (void)state;
    need_nats();
    nats_srv *ns = nats_start();
    char store[64];
    fresh_store(store, sizeof store);
    rh_daemon *a = replica(ns, store, NULL);
    rh_conn *ca = connect_ok(a, false), *other = connect_ok(a, false);
    uint64_t r =
        ok_revision(rpc(ca, "scene.create", "{\"scene\":\"s\",\"shapes\":{\"a\":" SPH "}}", 0));

    /* The server stops reading: the put is published (proposed 2) and
     * waits for its message. */
    assert_int_equal(kill(ns->pid, SIGSTOP), 0);
    int id = send_rpc(ca, "scene.put", "{\"scene\":\"s\",\"shapes\":{\"inflight\":" SPH "}}", 1);
    long long deadline = rh_now_ms() + rh_ms(30000);
    while (stat_num(other, "result.replication.proposed") < 2) {
        if (rh_now_ms() >= deadline)
            fail_msg("the put was not published");
        rh_sleep_ms(20);
    }
    /* Now the server goes for good; the replica sees its socket close. */
    nats_kill(ns, SIGKILL);
    deadline = rh_now_ms() + rh_ms(30000);
    for (;;) {
        cJSON *h = ok(rpc(other, "stats", NULL));
        bool down = cJSON_IsFalse(at(h, "result.replication.connected"));
        cJSON_Delete(h);
        if (down)
            break;
        if (rh_now_ms() >= deadline)
            fail_msg("replication.connected stays true with the NATS server dead");
        rh_sleep_ms(50);
    }
    /* Reads on other connections go on meanwhile. */
    cJSON *g = get_scene(other, "s", 0);
    assert_true(num_at(g, "result.revision") == (double)r);
    cJSON_Delete(g);

    /* The write's answer: -32007 (it may have been stored: not here, the
     * server never read it).  The guard is far longer than the replica's
     * resends (15 s), and bounded under valgrind so that the program ends
     * within its CTest timeout. */
    int guard = rh_wrapped() ? 180000 : 60000;
    const char *line;
    size_t len;
    rh_read_status st = rh_read_line(ca, guard, &line, &len);
    if (st != RH_LINE) {
        dump_logs();
        fail_msg("a write in flight when NATS died: no answer within %d s (%s) while NATS stays "
                 "down",
                 guard / 1000, st == RH_TIMEOUT ? "timeout" : "connection closed");
    }
    cJSON *reply = cJSON_ParseWithLength(line, len);
    assert_non_null(reply);
    assert_true(num_at(reply, "id") == id);
    error_code(reply, -32007);
    cJSON_Delete(reply);
    /* The connection goes on, and the store has not changed. */
    g = get_scene(ca, "s", 0);
    assert_true(num_at(g, "result.revision") == (double)r);
    assert_null(cJSON_GetObjectItemCaseSensitive(at(g, "result.shapes"), "inflight"));
    cJSON_Delete(g);

    rh_close(ca);
    rh_close(other);
    stop_ok(a);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        REPLICA_TEST(write_through_a_read_through_b),
        REPLICA_TEST(revisions_equal_and_state_equal),
        REPLICA_TEST(if_revision_conflict_across_replicas),
        REPLICA_TEST(watch_on_b_sees_a_writes_in_order),
        REPLICA_TEST(late_replica_catches_up),
        REPLICA_TEST(restart_catches_up),
        REPLICA_TEST(batch_with_mutations),
        REPLICA_TEST(min_revision_errors),
        REPLICA_TEST(bad_configuration),
        REPLICA_TEST(data_dir_ahead_of_stream),
        REPLICA_TEST(hello_reports_replication),
        REPLICA_TEST(nats_down_refuses_writes_serves_reads),
        REPLICA_TEST(a_write_in_flight_when_nats_dies_is_answered),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
