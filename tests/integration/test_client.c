/* SPDX-License-Identifier: MIT */
/*
 * Client library tests: include/repose/client.h against the real reposed
 * (started by tests/integration/harness.h) and against tiny fake servers
 * (forked children on a Unix socket) that misbehave on purpose.  The typed
 * helpers of kinematic models run against tests/data/arm7.urdf with known
 * answers (a ball placed where model.fk puts the hand).
 *
 * Usage: test_client PATH-TO-REPOSED
 *
 * Timeouts are guards against hangs only; no test asserts a duration.  The
 * one test that needs a timeout to fire uses a short one against a server
 * that never answers, and checks only the kind of error.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "harness.h"
#include "repose/client.h"

/* ---- helpers ------------------------------------------------------------------------ */

static rh_daemon *start_daemon(const char *const *extra)
{
    rh_opts o = {NULL, NULL, extra, false};
    rh_daemon *d = rh_start(&o);
    assert_non_null(d);
    if (!d->up)
        rh_dump_log(d);
    assert_true(d->up);
    return d;
}

static rp_client *connect_to(const rh_daemon *d, bool tcp)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = tcp ? rp_client_connect_tcp("127.0.0.1", d->tcp_port, rh_ms(RH_TIMEOUT_MS), &err)
                       : rp_client_connect_unix(d->unix_path, rh_ms(RH_TIMEOUT_MS), &err);
    if (!c)
        fprintf(stderr, "connect: %s\n", err.message);
    assert_non_null(c);
    assert_int_equal(err.kind, RP_CLIENT_OK);
    return c;
}

/* Calls and expects success with exactly `want` as the result text. */
static void call_expect(rp_client *c, const char *method, const char *params, const char *want)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = NULL;
    rp_client_error_kind k = rp_client_call(c, method, params, &result, &err);
    if (k != RP_CLIENT_OK)
        fprintf(stderr, "%s: %s error %d: %s\n", method, rp_client_error_kind_name(k), err.code,
                err.message);
    assert_int_equal(k, RP_CLIENT_OK);
    assert_non_null(result);
    assert_string_equal(result, want);
    free(result);
    rp_client_error_free(&err);
}

/* ---- fake servers -------------------------------------------------------------------- */

typedef enum fake_mode {
    FAKE_GARBAGE,  /* answers every request line with "garbage" */
    FAKE_WRONG_ID, /* answers with a well-formed reply for id 999 */
    FAKE_CLOSE,    /* reads one request, then closes */
    FAKE_SILENT,   /* reads and never answers */
    FAKE_FIXED     /* answers every request with fake_fixed_reply */
} fake_mode;

/* FAKE_FIXED's reply line (with its '\n'; it may hold NUL bytes), set
 * before fake_start forks. */
static const char *fake_fixed_reply;
static size_t fake_fixed_len;

typedef struct fake_server {
    pid_t pid;
    char path[200];
} fake_server;

/* Reads one line from fd (discarding it); false at EOF or error. */
static bool fake_read_line(int fd)
{
    char ch;
    for (;;) {
        ssize_t r = read(fd, &ch, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        if (ch == '\n')
            return true;
    }
}

static void fake_write_n(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void fake_write(int fd, const char *s)
{
    fake_write_n(fd, s, strlen(s));
}

/* The child: serves one connection at a time as `mode` says. */
static void fake_serve(int lfd, fake_mode mode)
{
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            _exit(0);
        }
        while (fake_read_line(fd)) {
            if (mode == FAKE_GARBAGE)
                fake_write(fd, "garbage\n");
            else if (mode == FAKE_WRONG_ID)
                fake_write(fd, "{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{\"pong\":true}}\n");
            else if (mode == FAKE_FIXED)
                fake_write_n(fd, fake_fixed_reply, fake_fixed_len);
            else if (mode == FAKE_CLOSE)
                break;
            /* FAKE_SILENT: keep reading, never answer. */
        }
        close(fd);
    }
}

/* Starts a fake server listening on a Unix socket in a harness temp dir.
 * The socket listens before the fork, so clients can connect at once. */
static void fake_start(fake_server *f, fake_mode mode)
{
    const char *dir = rh_temp_dir();
    assert_non_null(dir);
    snprintf(f->path, sizeof f->path, "%s/fake.sock", dir);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, f->path, strlen(f->path) + 1);
    assert_int_equal(bind(lfd, (const struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 16), 0);
    f->pid = fork();
    assert_true(f->pid >= 0);
    if (f->pid == 0) {
        signal(SIGPIPE, SIG_IGN);
        fake_serve(lfd, mode);
        _exit(0);
    }
    close(lfd);
}

static void fake_stop(fake_server *f)
{
    if (f->pid > 0) {
        kill(f->pid, SIGKILL);
        waitpid(f->pid, NULL, 0);
        f->pid = 0;
    }
}

/* ---- success --------------------------------------------------------------------------- */

static void scene_roundtrip(bool tcp)
{
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, tcp);
    call_expect(c, "ping", NULL, "{\"pong\":true}");
    call_expect(c, "ping", "{}", "{\"pong\":true}");
    /* Pretty params are minified onto one request line. */
    call_expect(c, "scene.create",
                "{\n  \"scene\": \"cell\",\n  \"shapes\": {\"post\": {\"capsule\": "
                "{\"a\": [0, 0, 0], \"b\": [0, 0, 1], \"radius\": 0.25}}}\n}",
                "{\"scene\":\"cell\",\"revision\":1}");
    call_expect(c, "scene.get", "{\"scene\":\"cell\"}",
                "{\"scene\":\"cell\",\"revision\":1,\"shapes\":{\"post\":{\"capsule\":{\"a\":[0,0,"
                "0],\"b\":[0,0,1],\"radius\":0.25}}}}");

    /* The cJSON variant. */
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "scene", "cell");
    cJSON *result = NULL;
    assert_int_equal(rp_client_call_cjson(c, "scene.get", params, &result, &err), RP_CLIENT_OK);
    assert_int_equal(err.kind, RP_CLIENT_OK);
    assert_non_null(result);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(result, "revision")->valueint, 1);
    const cJSON *post = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(result, "shapes"), "post");
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(post, "capsule");
    assert_non_null(cap);
    assert_true(cJSON_GetObjectItemCaseSensitive(cap, "radius")->valuedouble == 0.25);
    cJSON_Delete(result);
    result = NULL;
    /* NULL params and an RPC error through the cJSON variant. */
    assert_int_equal(rp_client_call_cjson(c, "scene.get", NULL, &result, &err), RP_CLIENT_RPC);
    assert_null(result);
    assert_int_equal(err.code, -32602);
    cJSON_Delete(params);
    rp_client_error_free(&err);
    rp_client_close(c);
    assert_int_equal(rh_stop(d, rh_ms(RH_TIMEOUT_MS)), 0);
}

static void ping_and_scene_roundtrip_over_unix(void **state)
{
    (void)state;
    scene_roundtrip(false);
}

static void ping_and_scene_roundtrip_over_tcp(void **state)
{
    (void)state;
    scene_roundtrip(true);
}

/* ---- scene.replace and store-wide revisions ------------------------------------------------ */

/* Scene s created (revision 1) and replaced by rp_client_call (2). */
static void create_and_replace_s(rp_client *c)
{
    call_expect(
        c, "scene.create",
        "{\"scene\":\"s\",\"shapes\":{\"a\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1}}}}",
        "{\"scene\":\"s\",\"revision\":1}");
    call_expect(c, "scene.replace",
                "{\"scene\":\"s\",\"if_revision\":1,\"shapes\":{\"b\":{\"sphere\":"
                "{\"center\":[0,0,2],\"radius\":0.5}}}}",
                "{\"scene\":\"s\",\"revision\":2}");
}

/* Then model m put (3) and deleted (4), and scene s deleted (5). */
static void put_and_delete_everything(rp_client *c)
{
    call_expect(c, "model.put",
                "{\"model\":\"m\",\"links\":[{\"id\":\"l\",\"frame\":0,\"shape\":"
                "{\"sphere\":{\"center\":[0,0,0],\"radius\":0.1}}}]}",
                "{\"model\":\"m\",\"revision\":3}");
    call_expect(c, "model.delete", "{\"model\":\"m\"}",
                "{\"model\":\"m\",\"deleted\":true,\"revision\":4}");
    call_expect(c, "scene.delete", "{\"scene\":\"s\"}",
                "{\"scene\":\"s\",\"deleted\":true,\"revision\":5}");
}

/* scene.replace through rp_client_call swaps the content; a conflict is an
 * RPC error with its data, and the connection stays usable. */
static void scene_replace_swaps_the_content_and_conflicts_are_rpc_errors_with_data(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, true);
    create_and_replace_s(c);
    call_expect(c, "scene.get", "{\"scene\":\"s\"}",
                "{\"scene\":\"s\",\"revision\":2,\"shapes\":{\"b\":{\"sphere\":{\"center\":"
                "[0,0,2],\"radius\":0.5}}}}");
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = NULL;
    assert_int_equal(rp_client_call(c, "scene.replace",
                                    "{\"scene\":\"s\",\"if_revision\":1,\"shapes\":{}}", &result,
                                    &err),
                     RP_CLIENT_RPC);
    assert_null(result);
    assert_int_equal(err.code, -32003);
    assert_string_equal(err.data, "{\"expected\":1,\"actual\":2}");
    assert_int_equal(
        rp_client_call(c, "scene.replace", "{\"scene\":\"t\",\"shapes\":{}}", &result, &err),
        RP_CLIENT_RPC);
    assert_int_equal(err.code, -32001);
    rp_client_error_free(&err);
    rp_client_close(c);
    assert_int_equal(rh_stop(d, rh_ms(RH_TIMEOUT_MS)), 0);
}

/* Deletions of models and scenes take a store-wide number and say which. */
static void deletions_report_the_revision_they_took(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, true);
    create_and_replace_s(c);
    put_and_delete_everything(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *stats = NULL;
    assert_int_equal(rp_client_call_cjson(c, "stats", NULL, &stats, &err), RP_CLIENT_OK);
    assert_true(cJSON_GetObjectItemCaseSensitive(stats, "revision")->valuedouble == 5);
    cJSON_Delete(stats);
    rp_client_error_free(&err);
    rp_client_close(c);
    assert_int_equal(rh_stop(d, rh_ms(RH_TIMEOUT_MS)), 0);
}

/* Pipelined: two scenes created and replaced in turn, one number each. */
static void pipelined_mutations_of_two_scenes_take_consecutive_revisions(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, true);
    create_and_replace_s(c);
    put_and_delete_everything(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = NULL;
    enum { N = 40 };
    uint64_t ids[N];
    for (int i = 0; i < N; i++) {
        char params[160];
        snprintf(params, sizeof params,
                 "{\"scene\":\"p%d\",\"create\":true,\"shapes\":{\"k%d\":{\"sphere\":"
                 "{\"center\":[%d,0,0],\"radius\":1}}}}",
                 i % 2, i, i);
        assert_int_equal(rp_client_send(c, "scene.replace", params, &ids[i], &err), RP_CLIENT_OK);
    }
    for (int i = 0; i < N; i++) {
        uint64_t id = 0;
        char want[64];
        assert_int_equal(rp_client_recv(c, &id, &result, &err), RP_CLIENT_OK);
        assert_true(id == ids[i]);
        snprintf(want, sizeof want, "{\"scene\":\"p%d\",\"revision\":%d}", i % 2, 6 + i);
        assert_string_equal(result, want);
        free(result);
        result = NULL;
    }
    call_expect(c, "scene.list", NULL,
                "{\"scenes\":[{\"scene\":\"p0\",\"revision\":44,\"shapes\":1},"
                "{\"scene\":\"p1\",\"revision\":45,\"shapes\":1}]}");
    rp_client_error_free(&err);
    rp_client_close(c);
    assert_int_equal(rh_stop(d, rh_ms(RH_TIMEOUT_MS)), 0);
}

/* ---- connection errors ----------------------------------------------------------------- */

static void missing_socket_path_is_connect_error(void **state)
{
    (void)state;
    const char *dir = rh_temp_dir();
    assert_non_null(dir);
    char path[256];
    snprintf(path, sizeof path, "%s/nobody-here.sock", dir);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    assert_null(rp_client_connect_unix(path, rh_ms(RH_TIMEOUT_MS), &err));
    assert_int_equal(err.kind, RP_CLIENT_CONNECT);
    assert_int_equal(err.code, ENOENT);
    assert_non_null(strstr(err.message, path));
    /* A path too long for sockaddr_un is an argument error. */
    char longpath[300];
    memset(longpath, 'x', sizeof longpath - 1);
    longpath[sizeof longpath - 1] = '\0';
    assert_null(rp_client_connect_unix(longpath, 100, &err));
    assert_int_equal(err.kind, RP_CLIENT_ARG);
    assert_null(rp_client_connect_unix(NULL, 100, NULL)); /* err may be NULL */
}

static void closed_tcp_port_is_connect_error(void **state)
{
    (void)state;
    /* A bound socket that does not listen: its port refuses connections and
     * nobody else can take it while we hold it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(0x7f000001u);
    assert_int_equal(bind(fd, (const struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    int port = ntohs(sa.sin_port);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    assert_null(rp_client_connect_tcp("127.0.0.1", port, rh_ms(RH_TIMEOUT_MS), &err));
    assert_int_equal(err.kind, RP_CLIENT_CONNECT);
    assert_int_equal(err.code, ECONNREFUSED);
    close(fd);
    assert_null(rp_client_connect_tcp("127.0.0.1", 0, 100, &err));
    assert_int_equal(err.kind, RP_CLIENT_ARG);
    assert_null(rp_client_connect_tcp("no-such-host.invalid", 7411, 100, &err));
    assert_int_equal(err.kind, RP_CLIENT_CONNECT);
}

/* ---- RPC errors -------------------------------------------------------------------------- */

static void rpc_error_has_code_message_and_data_and_keeps_the_connection(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = (char *)1; /* must be reset to NULL */
    assert_int_equal(rp_client_call(c, "scene.get", "{\"scene\":\"nope\"}", &result, &err),
                     RP_CLIENT_RPC);
    assert_null(result);
    assert_int_equal(err.kind, RP_CLIENT_RPC);
    assert_int_equal(err.code, -32001);
    assert_non_null(strstr(err.message, "nope"));
    assert_non_null(err.data);
    assert_string_equal(err.data, "{\"kind\":\"scene\",\"name\":\"nope\"}");

    /* The next call resets err (and frees its data). */
    assert_int_equal(rp_client_call(c, "no.such.method", NULL, NULL, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32601);
    assert_string_equal(err.data, "{\"method\":\"no.such.method\"}");

    /* An error without data. */
    assert_int_equal(rp_client_call(c, "ping", "{\"x\":1}", NULL, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32602);

    /* Params that cJSON accepts with raw control characters in a string
     * and around values still make one request line (a raw '\n' in the
     * string once split it in two, and the second half's error reply was
     * taken for the reply to the next call). */
    assert_int_equal(
        rp_client_call(c, "scene.get", "{\x01\"scene\"\f:\v\"a\nb\tc\x1f\"}", NULL, &err),
        RP_CLIENT_RPC);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.message, "params.scene"));

    /* Still usable, and in step. */
    call_expect(c, "ping", NULL, "{\"pong\":true}");
    rp_client_error_free(&err);
    assert_int_equal(err.kind, RP_CLIENT_OK);
    assert_null(err.data);
    rp_client_error_free(NULL);
    rp_client_close(c);
}

static void bad_arguments_are_arg_errors_and_send_nothing(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    assert_int_equal(rp_client_call(c, "ping", "{not json", NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_call(c, "ping", "{} trailing", NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_call(c, NULL, NULL, NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_call(c, "", NULL, NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_call(NULL, "ping", NULL, NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_recv(c, NULL, NULL, &err), RP_CLIENT_ARG); /* nothing pending */
    /* A call while pipelined replies are outstanding is refused. */
    uint64_t id = 0;
    assert_int_equal(rp_client_send(c, "ping", NULL, &id, &err), RP_CLIENT_OK);
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_pending(c), 1);
    uint64_t got = 0;
    char *result = NULL;
    assert_int_equal(rp_client_recv(c, &got, &result, &err), RP_CLIENT_OK);
    assert_true(got == id);
    assert_string_equal(result, "{\"pong\":true}");
    free(result);
    /* The stream is in step: nothing stray was sent. */
    call_expect(c, "ping", NULL, "{\"pong\":true}");
    rp_client_error_free(&err);
    rp_client_close(c);
    rp_client_close(NULL);
}

/* An overlong request line gets -32004 with id null, then the server closes:
 * an RPC error for that call, CLOSED for the next. */
static void overlong_request_is_rpc_error_then_closed(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-request-bytes", "1024", NULL};
    rh_daemon *d = start_daemon(extra);
    rp_client *c = connect_to(d, false);
    char params[4096];
    snprintf(params, sizeof params, "{\"scene\":\"%03000d\"}", 0);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    assert_int_equal(rp_client_call(c, "scene.get", params, NULL, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32004);
    rp_client_error_kind k = rp_client_call(c, "ping", NULL, NULL, &err);
    assert_int_equal(k, RP_CLIENT_CLOSED);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* ---- misbehaving servers --------------------------------------------------------------- */

static void server_that_closes_gives_closed(void **state)
{
    (void)state;
    fake_server f;
    fake_start(&f, FAKE_CLOSE);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_CLOSED);
    assert_int_equal(err.kind, RP_CLIENT_CLOSED);
    /* Every later call says so too, without touching the socket. */
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_CLOSED);
    assert_int_equal(rp_client_send(c, "ping", NULL, NULL, &err), RP_CLIENT_CLOSED);
    rp_client_close(c);
    fake_stop(&f);
}

static void garbage_reply_gives_protocol_error(void **state)
{
    (void)state;
    fake_server f;
    fake_start(&f, FAKE_GARBAGE);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_PROTOCOL);
    assert_non_null(strstr(err.message, "garbage"));
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_CLOSED);
    rp_client_close(c);
    fake_stop(&f);
}

static void mismatched_reply_id_gives_protocol_error(void **state)
{
    (void)state;
    fake_server f;
    fake_start(&f, FAKE_WRONG_ID);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    char *result = NULL;
    assert_int_equal(rp_client_call(c, "ping", NULL, &result, &err), RP_CLIENT_PROTOCOL);
    assert_null(result);
    assert_non_null(strstr(err.message, "id"));
    rp_client_close(c);
    fake_stop(&f);
}

/* Reply lines that cJSON reads in a way a hand-written scan of the text
 * once did not (found by tests/fuzz/fuzz_client_reply.c; the inputs are in
 * tests/fuzz/regressions/fuzz_client_reply/): the client must take the
 * members cJSON takes, and refuse what it cannot represent. */
typedef struct fixed_case {
    const char *line; /* the reply, '\n' included */
    size_t len;
    rp_client_error_kind kind;
    const char *result; /* OK: the result text; RPC: error.data or NULL */
    int code;           /* RPC: the code */
} fixed_case;

#define LINE(s) s, sizeof s - 1

static void replies_are_read_the_way_cjson_reads_them(void **state)
{
    (void)state;
    static const fixed_case cases[] = {
        /* An escaped key is still "result" (was: "out of memory"). */
        {LINE("{\"jsonrpc\":\"2.0\",\"id\":1,\"res\\u0075lt\":{\"pong\":true}}\n"), RP_CLIENT_OK,
         "{\"pong\":true}", 0},
        /* cJSON takes the first "result", escaped or not (was: the second). */
        {LINE("{\"jsonrpc\":\"2.0\",\"id\":1,\"res\\u0075lt\":1,\"result\":2}\n"), RP_CLIENT_OK,
         "1", 0},
        /* cJSON skips every byte up to 0x20 as whitespace, and a BOM. */
        {LINE("{\f\"jsonrpc\":\"2.0\",\v\"id\":1,\"result\":\x01[1, 2]\x1f}\n"), RP_CLIENT_OK,
         "[1, 2]", 0},
        {LINE("\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":true}\n"), RP_CLIENT_OK, "true",
         0},
        /* error.data under an escaped key (was: no data). */
        {LINE("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"m\","
              "\"d\\u0061ta\":[1]}}\n"),
         RP_CLIENT_RPC, "[1]", -32602},
        /* A code that is not an int (was: undefined behaviour converting
         * 1e300, a silently truncated -32601.5). */
        {LINE("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1e300,\"message\":\"m\"}}\n"),
         RP_CLIENT_PROTOCOL, NULL, 0},
        {LINE("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601.5,\"message\":\"m\"}}\n"),
         RP_CLIENT_PROTOCOL, NULL, 0},
        /* cJSON given the line's length reads a NUL byte as whitespace
         * (was: "out of memory"). */
        {LINE("{\"jsonrpc\":\"2.0\",\0\"id\":1,\"result\":1}\n"), RP_CLIENT_PROTOCOL, NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const fixed_case *t = &cases[i];
        fake_fixed_reply = t->line;
        fake_fixed_len = t->len;
        fake_server f;
        fake_start(&f, FAKE_FIXED);
        rp_client_error err = RP_CLIENT_ERROR_INIT;
        rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
        assert_non_null(c);
        char *result = NULL;
        rp_client_error_kind k = rp_client_call(c, "ping", NULL, &result, &err);
        if (k != t->kind)
            fprintf(stderr, "case %zu: %s (%s)\n", i, rp_client_error_kind_name(k), err.message);
        assert_int_equal(k, t->kind);
        if (k == RP_CLIENT_OK) {
            assert_string_equal(result, t->result);
        } else if (k == RP_CLIENT_RPC) {
            assert_int_equal(err.code, t->code);
            assert_string_equal(err.message, "m");
            assert_non_null(err.data);
            assert_string_equal(err.data, t->result);
        } else {
            assert_null(result);
        }
        free(result);
        rp_client_error_free(&err);
        rp_client_close(c);
        fake_stop(&f);
    }
}

/* Whether s is valid UTF-8 (no truncated sequence; enough for these
 * messages, which hold only ASCII and complete characters otherwise). */
static bool utf8_complete(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t want = *p >= 0xF0 ? 4 : *p >= 0xE0 ? 3 : *p >= 0xC0 ? 2 : 1;
        for (size_t k = 1; k < want; k++)
            if ((p[k] & 0xC0) != 0x80)
                return false;
        p += want;
    }
    return true;
}

/* A server message longer than rp_client_error.message, or a bad reply
 * quoted in a protocol error, is cut between characters, at every offset
 * of a 2-, 3- and 4-byte character. */
static void long_messages_are_cut_between_characters(void **state)
{
    (void)state;
    static const char *const chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    for (int w = 0; w < 3; w++) {
        for (int pad = 0; pad < 4; pad++) {
            for (int bad = 0; bad < 2; bad++) {
                static char line[4096];
                int n = snprintf(line, sizeof line,
                                 bad ? "%*s{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"%.*s"
                                     : "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,"
                                       "\"message\":\"%.*s",
                                 bad ? pad : 0, "", bad ? 0 : pad, "xxxx");
                for (int i = 0; i < 100; i++)
                    n += snprintf(line + n, sizeof line - (size_t)n, "%s", chars[w]);
                n += snprintf(line + n, sizeof line - (size_t)n, bad ? "\"}\n" : "\"}}\n");
                fake_fixed_reply = line;
                fake_fixed_len = (size_t)n;
                fake_server f;
                fake_start(&f, FAKE_FIXED);
                rp_client_error err = RP_CLIENT_ERROR_INIT;
                rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
                assert_non_null(c);
                rp_client_error_kind k = rp_client_call(c, "ping", NULL, NULL, &err);
                assert_int_equal(k, bad ? RP_CLIENT_PROTOCOL : RP_CLIENT_RPC);
                if (!utf8_complete(err.message))
                    fail_msg("message cut inside a character: %s", err.message);
                rp_client_error_free(&err);
                rp_client_close(c);
                fake_stop(&f);
            }
        }
    }
}

static void silent_server_gives_timeout(void **state)
{
    (void)state;
    fake_server f;
    fake_start(&f, FAKE_SILENT);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    /* Short, so the test does not wait long; only the kind is checked. */
    rp_client_set_timeout(c, 100);
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_TIMEOUT);
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_CLOSED);
    rp_client_close(c);
    fake_stop(&f);
}

/* ---- pipelining ---------------------------------------------------------------------------- */

#define PIPELINE_N 1000

/* Sends PIPELINE_N requests (pings, scene.get of existing and missing
 * scenes, in turn), then reads every reply and checks order and content. */
static void pipeline(bool tcp)
{
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, tcp);
    call_expect(c, "scene.create", "{\"scene\":\"s\"}", "{\"scene\":\"s\",\"revision\":1}");
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    static uint64_t ids[PIPELINE_N];
    for (int i = 0; i < PIPELINE_N; i++) {
        char params[64];
        const char *method = i % 3 == 0 ? "ping" : "scene.get";
        snprintf(params, sizeof params, "{\"scene\":\"%s\"}", i % 3 == 1 ? "s" : "missing");
        rp_client_error_kind k =
            rp_client_send(c, method, i % 3 == 0 ? NULL : params, &ids[i], &err);
        if (k != RP_CLIENT_OK)
            fprintf(stderr, "send %d: %s\n", i, err.message);
        assert_int_equal(k, RP_CLIENT_OK);
        if (i > 0)
            assert_true(ids[i] == ids[i - 1] + 1);
    }
    assert_int_equal(rp_client_pending(c), PIPELINE_N);
    for (int i = 0; i < PIPELINE_N; i++) {
        uint64_t id = 0;
        char *result = NULL;
        rp_client_error_kind k = rp_client_recv(c, &id, &result, &err);
        assert_true(id == ids[i]);
        if (i % 3 == 0) {
            assert_int_equal(k, RP_CLIENT_OK);
            assert_string_equal(result, "{\"pong\":true}");
        } else if (i % 3 == 1) {
            assert_int_equal(k, RP_CLIENT_OK);
            assert_string_equal(result, "{\"scene\":\"s\",\"revision\":1,\"shapes\":{}}");
        } else {
            assert_int_equal(k, RP_CLIENT_RPC);
            assert_int_equal(err.code, -32001);
            assert_null(result);
        }
        free(result);
    }
    assert_int_equal(rp_client_pending(c), 0);
    call_expect(c, "ping", NULL, "{\"pong\":true}");
    rp_client_error_free(&err);
    rp_client_close(c);
}

static void pipelining_1000_requests_replies_in_order_unix(void **state)
{
    (void)state;
    pipeline(false);
}

static void pipelining_1000_requests_replies_in_order_tcp(void **state)
{
    (void)state;
    pipeline(true);
}

/* Large requests sent without reading: the server stops reading while its
 * replies pile up, so the client must read while it writes. */
static void pipelining_large_replies_does_not_deadlock(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    /* A scene whose scene.get reply is ~40 KB. */
    size_t cap = 1 << 20, len = 0;
    char *params = malloc(cap);
    assert_non_null(params);
    len += (size_t)snprintf(params + len, cap - len, "{\"scene\":\"big\",\"shapes\":{");
    for (int i = 0; i < 500; i++)
        len += (size_t)snprintf(params + len, cap - len,
                                "%s\"s%d\":{\"sphere\":{\"center\":[%d,0.125,0.5],"
                                "\"radius\":0.25}}",
                                i ? "," : "", i, i);
    snprintf(params + len, cap - len, "}}");
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    assert_int_equal(rp_client_call(c, "scene.create", params, NULL, &err), RP_CLIENT_OK);
    free(params);
    int n = rh_wrapped() ? 200 : 2000; /* ~80 MB of replies natively */
    for (int i = 0; i < n; i++)
        assert_int_equal(rp_client_send(c, "scene.get", "{\"scene\":\"big\"}", NULL, &err),
                         RP_CLIENT_OK);
    for (int i = 0; i < n; i++) {
        char *result = NULL;
        assert_int_equal(rp_client_recv(c, NULL, &result, &err), RP_CLIENT_OK);
        assert_non_null(strstr(result, "\"s499\""));
        free(result);
    }
    rp_client_close(c);
}

/* ---- the daemon goes away -------------------------------------------------------------- */

static void daemon_gone(bool tcp)
{
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, tcp);
    call_expect(c, "ping", NULL, "{\"pong\":true}");
    int port = d->tcp_port;
    char path[256];
    snprintf(path, sizeof path, "%s", d->unix_path);
    assert_int_equal(rh_stop(d, rh_ms(RH_TIMEOUT_MS)), 0);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client_error_kind k = rp_client_call(c, "ping", NULL, NULL, &err);
    assert_true(k == RP_CLIENT_CLOSED || k == RP_CLIENT_CONNECT);
    k = rp_client_call(c, "ping", NULL, NULL, &err);
    assert_int_equal(k, RP_CLIENT_CLOSED);
    rp_client_close(c);
    /* Reconnecting fails cleanly. */
    c = tcp ? rp_client_connect_tcp("127.0.0.1", port, rh_ms(RH_TIMEOUT_MS), &err)
            : rp_client_connect_unix(path, rh_ms(RH_TIMEOUT_MS), &err);
    assert_null(c);
    assert_int_equal(err.kind, RP_CLIENT_CONNECT);
}

static void daemon_gone_next_call_fails_cleanly_unix(void **state)
{
    (void)state;
    daemon_gone(false);
}

static void daemon_gone_next_call_fails_cleanly_tcp(void **state)
{
    (void)state;
    daemon_gone(true);
}

/* ---- raw lines ------------------------------------------------------------------------- */

static void raw_lines_pass_through_until_the_server_closes(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    static const char *const lines[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}", /* a notification: no reply */
        "[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}]",
    };
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(rp_client_send_line(c, lines[i], strlen(lines[i]), &err), RP_CLIENT_OK);
    assert_int_equal(rp_client_shutdown_write(c, &err), RP_CLIENT_OK);
    static const char *const want[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"pong\":true}}",
        "[{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"pong\":true}}]",
    };
    for (size_t i = 0; i < 2; i++) {
        char *line = NULL;
        size_t len = 0;
        assert_int_equal(rp_client_recv_line(c, &line, &len, &err), RP_CLIENT_OK);
        assert_string_equal(line, want[i]);
        assert_int_equal(len, strlen(want[i]));
        free(line);
    }
    char *line = NULL;
    assert_int_equal(rp_client_recv_line(c, &line, NULL, &err), RP_CLIENT_CLOSED);
    assert_null(line);
    rp_client_close(c);
}

/* ---- auth -------------------------------------------------------------------------------- */

static void auth_over_tcp_with_the_right_token(void **state)
{
    (void)state;
    const char *dir = rh_temp_dir();
    assert_non_null(dir);
    char tf[256];
    snprintf(tf, sizeof tf, "%s/token", dir);
    FILE *f = fopen(tf, "w");
    assert_non_null(f);
    fputs("s3cret-token\n", f);
    fclose(f);
    chmod(tf, 0600);
    const char *const extra[] = {"--token-file", tf, NULL};
    rh_daemon *d = start_daemon(extra);
    rp_client *c = connect_to(d, true);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    /* ping works before auth, a scene method does not. */
    call_expect(c, "ping", NULL, "{\"pong\":true}");
    assert_int_equal(rp_client_call(c, "scene.list", NULL, NULL, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32005);
    /* A wrong token is an RPC error; the connection stays usable. */
    assert_int_equal(rp_client_auth(c, "wrong", &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32005);
    assert_int_equal(rp_client_auth(c, "s3cret-token", &err), RP_CLIENT_OK);
    call_expect(c, "scene.list", NULL, "{\"scenes\":[]}");
    assert_int_equal(rp_client_auth(c, NULL, &err), RP_CLIENT_ARG);
    rp_client_close(c);
    /* The Unix socket needs no auth. */
    c = connect_to(d, false);
    call_expect(c, "scene.list", NULL, "{\"scenes\":[]}");
    rp_client_close(c);
    rp_client_error_free(&err);
}

/* Writes text to DIR/name (its path into path) with the given mode. */
static void write_file_mode(char *path, size_t cap, const char *dir, const char *name,
                            const char *text, mode_t mode)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void default_unix_path_follows_repose_socket(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    assert_int_equal(unsetenv("REPOSE_SOCKET"), 0);
    assert_string_equal(rp_client_default_unix_path(), RP_CLIENT_DEFAULT_UNIX_PATH);
    assert_int_equal(setenv("REPOSE_SOCKET", "", 1), 0); /* empty: the default */
    assert_string_equal(rp_client_default_unix_path(), RP_CLIENT_DEFAULT_UNIX_PATH);
    assert_int_equal(setenv("REPOSE_SOCKET", d->unix_path, 1), 0);
    assert_string_equal(rp_client_default_unix_path(), d->unix_path);
    rp_client *c = rp_client_connect_default(rh_ms(RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    call_expect(c, "ping", NULL, "{\"pong\":true}");
    rp_client_close(c);
    /* A socket nobody listens on: the connect error names it. */
    char nobody[512];
    snprintf(nobody, sizeof nobody, "%s/nobody.sock", rh_temp_dir());
    assert_int_equal(setenv("REPOSE_SOCKET", nobody, 1), 0);
    assert_null(rp_client_connect_default(rh_ms(RH_TIMEOUT_MS), &err));
    assert_int_equal(err.kind, RP_CLIENT_CONNECT);
    assert_non_null(strstr(err.message, nobody));
    unsetenv("REPOSE_SOCKET");
    rp_client_error_free(&err);
}

static void auth_file_reads_the_token_and_repose_token_file(void **state)
{
    (void)state;
    const char *dir = rh_temp_dir();
    assert_non_null(dir);
    char good[512], wrong[512], open_to_all[512], empty[512], two_lines[512], missing[512];
    write_file_mode(good, sizeof good, dir, "token", "s3cret-token\n", 0600);
    write_file_mode(wrong, sizeof wrong, dir, "wrong", "wrong\n", 0600);
    write_file_mode(open_to_all, sizeof open_to_all, dir, "open", "s3cret-token\n", 0644);
    write_file_mode(empty, sizeof empty, dir, "empty", "", 0600);
    /* Only the first line is the token (as the daemon reads its own file). */
    write_file_mode(two_lines, sizeof two_lines, dir, "two", "s3cret-token\r\nnot this\n", 0600);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    const char *const extra[] = {"--token-file", good, NULL};
    rh_daemon *d = start_daemon(extra);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = connect_to(d, true);
    /* Files that cannot be used: an argument error, nothing sent. */
    const char *bad[] = {open_to_all, empty, missing};
    const char *why[] = {"world-readable", "empty", "No such file"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rp_client_auth_file(c, bad[i], &err), RP_CLIENT_ARG);
        assert_non_null(strstr(err.message, bad[i]));
        assert_non_null(strstr(err.message, why[i]));
    }
    unsetenv("REPOSE_TOKEN_FILE");
    assert_int_equal(rp_client_auth_file(c, NULL, &err), RP_CLIENT_ARG);
    assert_non_null(strstr(err.message, "REPOSE_TOKEN_FILE"));
    /* Still not authenticated; a wrong token is the daemon's -32005. */
    assert_int_equal(rp_client_call(c, "scene.list", NULL, NULL, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32005);
    assert_int_equal(rp_client_auth_file(c, wrong, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32005);
    assert_int_equal(rp_client_auth_file(c, two_lines, &err), RP_CLIENT_OK);
    call_expect(c, "scene.list", NULL, "{\"scenes\":[]}");
    rp_client_close(c);
    /* NULL: the file $REPOSE_TOKEN_FILE names. */
    c = connect_to(d, true);
    assert_int_equal(setenv("REPOSE_TOKEN_FILE", good, 1), 0);
    assert_int_equal(rp_client_auth_file(c, NULL, &err), RP_CLIENT_OK);
    call_expect(c, "scene.list", NULL, "{\"scenes\":[]}");
    rp_client_close(c);
    unsetenv("REPOSE_TOKEN_FILE");
    rp_client_error_free(&err);
}

/* ---- typed helpers: kinematic models --------------------------------------------------- */

/* tests/data, where arm7.urdf and arm7.srdf are (set by tests/CMakeLists.txt). */
#ifndef REPOSE_TEST_DATA
#error "REPOSE_TEST_DATA must name tests/data"
#endif

/* The text of tests/data/NAME, malloc'ed. */
static char *read_data(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", REPOSE_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* arm7's active joints, in model.get's order: joint1..7, finger_joint1. */
#define ARM7_DOF 8
/* The SRDF's "ready" pose (clear of itself), with joint1 set to j1. */
static void arm7_ready(double j1, double q[ARM7_DOF])
{
    static const double ready[ARM7_DOF] = {0, -0.785398163, 0,           -2.35619449,
                                           0, 1.570796327,  0.785398163, 0.02};
    memcpy(q, ready, sizeof ready);
    q[0] = j1;
}

/* Prints err when k is not what the test wants. */
static void expect_kind(rp_client_error_kind k, rp_client_error_kind want,
                        const rp_client_error *err)
{
    if (k != want)
        fprintf(stderr, "got %s (code %d: %s; data %s), want %s\n", rp_client_error_kind_name(k),
                err->code, err->message, err->data ? err->data : "-",
                rp_client_error_kind_name(want));
    assert_int_equal(k, want);
}

/* A daemon with arm7 (from its URDF and SRDF, through the helper) and a
 * client on its Unix socket. */
static rp_client *arm7_daemon(void)
{
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    char *urdf = read_data("arm7.urdf"), *srdf = read_data("arm7.srdf");
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = NULL;
    expect_kind(rp_client_model_put_urdf(c, "arm7", urdf, srdf, &result, &err), RP_CLIENT_OK, &err);
    assert_non_null(result);
    assert_non_null(strstr(result, "\"model\":\"arm7\""));
    free(result);
    free(urdf);
    free(srdf);
    return c;
}

/* The position of `link` in a model.fk result at q. */
static void arm7_link_at(rp_client *c, const double q[ARM7_DOF], const char *link, double p[3])
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = NULL;
    expect_kind(rp_client_model_fk(c, "arm7", q, ARM7_DOF, &result, &err), RP_CLIENT_OK, &err);
    cJSON *r = cJSON_Parse(result);
    free(result);
    const cJSON *pose =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "links"), link);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(pose, "translation");
    assert_true(cJSON_IsArray(t) && cJSON_GetArraySize(t) == 3);
    for (int i = 0; i < 3; i++)
        p[i] = cJSON_GetArrayItem(t, i)->valuedouble;
    assert_non_null(cJSON_GetObjectItemCaseSensitive(pose, "rotation"));
    cJSON_Delete(r);
}

/* Scene `name` with one sphere "ball" of radius r at p. */
static void ball_scene(rp_client *c, const char *name, const double p[3], double r)
{
    char params[512];
    snprintf(params, sizeof params,
             "{\"scene\":\"%s\",\"shapes\":{\"ball\":{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],"
             "\"radius\":%.17g}}}}",
             name, p[0], p[1], p[2], r);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    expect_kind(rp_client_call(c, "scene.create", params, NULL, &err), RP_CLIENT_OK, &err);
}

/* A ball of radius 0.05 where arm7's hand is at the ready pose: the ready
 * pose hits it, joint1 turned by +-0.8 rad or more clears it. */
static void arm7_ball_at_hand(rp_client *c)
{
    double q[ARM7_DOF], hand[3];
    arm7_ready(0, q);
    arm7_link_at(c, q, "arm7_hand", hand);
    ball_scene(c, "bench", hand, 0.05);
}

/* FK at the ready pose: the flange of a Panda, 0.307 m out, 0.59 m up. */
static void model_fk_puts_the_hand_where_the_ready_pose_has_it(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    double q[ARM7_DOF], p[3];
    arm7_ready(0, q);
    arm7_link_at(c, q, "arm7_hand", p);
    assert_true(fabs(p[0] - 0.30689) < 1e-4 && fabs(p[1]) < 1e-9 && fabs(p[2] - 0.59028) < 1e-4);
    arm7_link_at(c, q, "arm7_link0", p);
    assert_true(p[0] == 0 && p[1] == 0 && p[2] == 0);
    rp_client_close(c);
}

/* Without an SRDF (and without a result wanted) the put works; a document
 * the daemon refuses is an RPC error with the path inside it. */
static void model_put_urdf_takes_no_srdf_and_refusals_name_the_path(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *urdf = read_data("arm7.urdf");
    char *result = (char *)1;
    expect_kind(rp_client_model_put_urdf(c, "arm7_bare", urdf, NULL, &result, &err), RP_CLIENT_OK,
                &err);
    assert_non_null(strstr(result, "\"model\":\"arm7_bare\""));
    free(result);
    expect_kind(rp_client_model_put_urdf(c, "arm7_bare", urdf, NULL, NULL, &err), RP_CLIENT_OK,
                &err);
    expect_kind(rp_client_model_put_urdf(c, "bad", "<robot name=\"r\"><link/></robot>", NULL,
                                         &result, &err),
                RP_CLIENT_RPC, &err);
    assert_null(result);
    assert_int_equal(err.code, -32602);
    assert_non_null(err.data);
    assert_non_null(strstr(err.data, "\"path\":\"params.urdf"));
    expect_kind(rp_client_model_put_urdf(c, "bad", urdf, "not xml", NULL, &err), RP_CLIENT_RPC,
                &err);
    assert_non_null(strstr(err.data, "\"path\":\"params.srdf"));
    free(urdf);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* Text that is not UTF-8, and NULL: argument errors, nothing sent. */
static void model_put_urdf_refuses_bad_arguments_without_sending(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *urdf = read_data("arm7.urdf");
    expect_kind(rp_client_model_put_urdf(c, "bad", "<robot name=\"caf\xe9\"/>", NULL, NULL, &err),
                RP_CLIENT_ARG, &err);
    assert_non_null(strstr(err.message, "urdf is not valid UTF-8 (byte 0xe9 at byte 16)"));
    expect_kind(rp_client_model_put_urdf(c, "x\xff", urdf, NULL, NULL, &err), RP_CLIENT_ARG, &err);
    assert_non_null(strstr(err.message, "model is not valid UTF-8"));
    expect_kind(rp_client_model_put_urdf(c, NULL, urdf, NULL, NULL, &err), RP_CLIENT_ARG, &err);
    expect_kind(rp_client_model_put_urdf(c, "bad", NULL, NULL, NULL, &err), RP_CLIENT_ARG, &err);
    expect_kind(rp_client_model_put_urdf(NULL, "bad", urdf, NULL, NULL, &err), RP_CLIENT_ARG, &err);
    assert_int_equal(rp_client_pending(c), 0);
    free(urdf);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* model.get agrees with the helper's model: its joints in order. */
static void model_get_lists_the_joints_of_the_model_the_helper_put(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = NULL;
    expect_kind(rp_client_call(c, "model.get", "{\"model\":\"arm7\"}", &result, &err), RP_CLIENT_OK,
                &err);
    assert_non_null(strstr(result, "\"joints\":[\"arm7_joint1\",\"arm7_joint2\",\"arm7_joint3\","
                                   "\"arm7_joint4\",\"arm7_joint5\",\"arm7_joint6\","
                                   "\"arm7_joint7\",\"arm7_finger_joint1\"]"));
    free(result);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* Alone, the ready pose is clear of itself (by 3.7 cm, link3 to link5);
 * with the ball in its hand 6.5 cm deep; turned away, clear again. */
static void check_joints_gives_known_answers_against_a_ball_in_the_hand(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    arm7_ball_at_hand(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double q[ARM7_DOF], dist = 0;
    bool valid = false;

    arm7_ready(0, q);
    expect_kind(rp_client_check_joints(c, "arm7", NULL, q, ARM7_DOF, &valid, &dist, &err),
                RP_CLIENT_OK, &err);
    assert_true(valid);
    assert_true(dist > 0.03 && dist < 0.04);
    /* The ball sits in the hand: 6.5 cm deep. */
    expect_kind(rp_client_check_joints(c, "arm7", "bench", q, ARM7_DOF, &valid, &dist, &err),
                RP_CLIENT_OK, &err);
    assert_false(valid);
    assert_true(dist < -0.05);
    /* Turned away from it (min_distance may be NULL). */
    arm7_ready(1.5, q);
    expect_kind(rp_client_check_joints(c, "arm7", "bench", q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_OK, &err);
    assert_true(valid);
    arm7_ready(-0.8, q);
    expect_kind(rp_client_check_joints(c, "arm7", "bench", q, ARM7_DOF, &valid, &dist, &err),
                RP_CLIENT_OK, &err);
    assert_true(valid);
    assert_true(dist > 0);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* Every digit reaches the daemon: joint4's upper limit is -0.0698; the
 * next double above it is out of limits (with "%.15g" both would print as
 * -0.0698). */
static void check_joints_sends_every_digit_so_limits_hold_to_the_last_bit(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double q[ARM7_DOF];
    bool valid = false;
    arm7_ready(0, q);
    q[3] = -0.0698;
    expect_kind(rp_client_check_joints(c, "arm7", NULL, q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_OK, &err);
    assert_true(valid);
    q[3] = nextafter(-0.0698, 0.0);
    expect_kind(rp_client_check_joints(c, "arm7", NULL, q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_OK, &err);
    assert_false(valid);
    /* Limits ignored by nothing here: joint4 = 0 is invalid without a
     * collision. */
    q[3] = 0;
    expect_kind(rp_client_check_joints(c, "arm7", NULL, q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_OK, &err);
    assert_false(valid);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* A model with nothing to measure: min_distance null is +infinity. */
static void check_joints_with_nothing_to_measure_gives_infinite_distance(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double dist = 0;
    bool valid = false;
    expect_kind(rp_client_model_put_urdf(c, "one",
                                         "<robot name=\"one\"><link name=\"base\"><collision>"
                                         "<geometry><sphere radius=\"0.1\"/></geometry>"
                                         "</collision></link></robot>",
                                         NULL, NULL, &err),
                RP_CLIENT_OK, &err);
    expect_kind(rp_client_check_joints(c, "one", NULL, NULL, 0, &valid, &dist, &err), RP_CLIENT_OK,
                &err);
    assert_true(valid);
    assert_true(isinf(dist) && dist > 0);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* Each configuration's validity: in the ball, clear, past a limit; without
 * the scene only the limit fails; none at all; rows of nothing. */
static void check_batch_joints_gives_each_configurations_validity(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    arm7_ball_at_hand(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double q[4 * ARM7_DOF];
    arm7_ready(0, q);                   /* in the ball */
    arm7_ready(1.5, q + ARM7_DOF);      /* clear */
    arm7_ready(-0.8, q + 2 * ARM7_DOF); /* clear */
    arm7_ready(1.5, q + 3 * ARM7_DOF);
    q[3 * ARM7_DOF + 3] = 0; /* joint4 past its limit */
    bool valid[4] = {true, false, false, true};
    expect_kind(rp_client_check_batch_joints(c, "arm7", "bench", q, 4, ARM7_DOF, valid, &err),
                RP_CLIENT_OK, &err);
    assert_false(valid[0]);
    assert_true(valid[1]);
    assert_true(valid[2]);
    assert_false(valid[3]);
    /* Without the scene, only the limits fail. */
    expect_kind(rp_client_check_batch_joints(c, "arm7", NULL, q, 4, ARM7_DOF, valid, &err),
                RP_CLIENT_OK, &err);
    assert_true(valid[0] && valid[1] && valid[2]);
    assert_false(valid[3]);
    /* No configurations at all. */
    expect_kind(rp_client_check_batch_joints(c, "arm7", "bench", NULL, 0, ARM7_DOF, NULL, &err),
                RP_CLIENT_OK, &err);
    /* A model without joints: rows of nothing. */
    expect_kind(rp_client_model_put_urdf(c, "one", "<robot name=\"one\"><link name=\"b\"/></robot>",
                                         NULL, NULL, &err),
                RP_CLIENT_OK, &err);
    valid[0] = valid[1] = false;
    expect_kind(rp_client_check_batch_joints(c, "one", NULL, NULL, 2, 0, valid, &err), RP_CLIENT_OK,
                &err);
    assert_true(valid[0] && valid[1]);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* check.motion in both modes (and the daemon's default, discrete) on a
 * blocked and a free edge, a path of two segments blocked in its second,
 * and an edge that ends out of joint4's limits. */
static void check_motion_finds_where_a_path_is_blocked_in_both_modes(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    arm7_ball_at_hand(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double path[3 * ARM7_DOF];
    static const char *const modes[] = {"discrete", "certified", NULL};
    for (int m = 0; m < 3; m++) {
        const char *mode = modes[m]; /* NULL: the daemon's default, discrete */
        rp_client_motion_result r;
        /* Through the ball: joint1 from -1.5 to 1.5 passes 0. */
        arm7_ready(-1.5, path);
        arm7_ready(1.5, path + ARM7_DOF);
        expect_kind(
            rp_client_check_motion(c, "arm7", "bench", path, 2, ARM7_DOF, mode, 0, &r, &err),
            RP_CLIENT_OK, &err);
        assert_false(r.valid);
        assert_int_equal(r.segment, 0);
        /* The ball is in reach for joint1 in about [-0.5, 0.5], t in [1/3, 2/3]
         * (discrete: some state there, coarse to fine; certified: a little
         * before the first contact). */
        assert_true(r.t > 0.2 && r.t < 0.7);
        assert_string_equal(r.kind, "scene");
        assert_true(r.states_checked > 0);
        /* Beside it: from 0.8 to 1.5. */
        arm7_ready(0.8, path);
        expect_kind(
            rp_client_check_motion(c, "arm7", "bench", path, 2, ARM7_DOF, mode, 0, &r, &err),
            RP_CLIENT_OK, &err);
        assert_true(r.valid);
        assert_int_equal(r.segment, 0);
        assert_true(isnan(r.t));
        assert_string_equal(r.kind, "");
        assert_true(r.states_checked >= 2);
        /* Then back through it: blocked in the second segment. */
        arm7_ready(-1.5, path + 2 * ARM7_DOF);
        expect_kind(
            rp_client_check_motion(c, "arm7", "bench", path, 3, ARM7_DOF, mode, 0, &r, &err),
            RP_CLIENT_OK, &err);
        assert_false(r.valid);
        assert_int_equal(r.segment, 1);
        assert_true(r.t > 0.2 && r.t < 0.7);
        assert_string_equal(r.kind, "scene");
        /* Out of joint4's limits at the end. */
        arm7_ready(0.8, path);
        arm7_ready(1.5, path + ARM7_DOF);
        path[ARM7_DOF + 3] = 0;
        expect_kind(rp_client_check_motion(c, "arm7", NULL, path, 2, ARM7_DOF, mode, 0, &r, &err),
                    RP_CLIENT_OK, &err);
        assert_false(r.valid);
        assert_string_equal(r.kind, "limits");
    }
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* The free edge beside the ball: joint1 from 0.8 to 1.5. */
static void arm7_free_edge(double path[2 * ARM7_DOF])
{
    arm7_ready(0.8, path);
    arm7_ready(1.5, path + ARM7_DOF);
}

/* The resolution bounds the discrete steps: 0.7 rad at 0.1 takes fewer
 * states than at the default 0.01. */
static void check_motion_resolution_bounds_the_discrete_steps(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    arm7_ball_at_hand(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double path[2 * ARM7_DOF];
    rp_client_motion_result fine, coarse;
    arm7_free_edge(path);
    expect_kind(
        rp_client_check_motion(c, "arm7", "bench", path, 2, ARM7_DOF, "discrete", 0, &fine, &err),
        RP_CLIENT_OK, &err);
    expect_kind(rp_client_check_motion(c, "arm7", "bench", path, 2, ARM7_DOF, "discrete", 0.1,
                                       &coarse, &err),
                RP_CLIENT_OK, &err);
    assert_true(fine.valid && coarse.valid);
    assert_true(coarse.states_checked >= 8);
    assert_true(coarse.states_checked < fine.states_checked);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* The planner's options: a check's verdict alone (report "first"), and a
 * motion whose ends are known valid (skip_ends: two states fewer) or whose
 * earliest invalid state is not wanted. */
static void planner_options_reach_the_daemon(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    arm7_ball_at_hand(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double q[ARM7_DOF], path[2 * ARM7_DOF];
    for (int k = 0; k < 2; k++) {
        arm7_ready(k ? 0.0 : 1.2, q); /* in the ball, then clear of it */
        bool v1 = true, v2 = !v1;
        double d;
        expect_kind(rp_client_check_joints(c, "arm7", "bench", q, ARM7_DOF, &v1, &d, &err),
                    RP_CLIENT_OK, &err);
        expect_kind(rp_client_check_joints_first(c, "arm7", "bench", q, ARM7_DOF, &v2, &err),
                    RP_CLIENT_OK, &err);
        assert_int_equal(v1, v2);
        assert_int_equal(v1, k == 0);
    }
    arm7_free_edge(path);
    rp_client_motion_opts o;
    memset(&o, 0, sizeof o);
    o.mode = "discrete";
    rp_client_motion_result all, inner;
    expect_kind(rp_client_check_motion_opts(c, "arm7", "bench", path, 2, ARM7_DOF, &o, &all, &err),
                RP_CLIENT_OK, &err);
    o.skip_ends = true;
    expect_kind(
        rp_client_check_motion_opts(c, "arm7", "bench", path, 2, ARM7_DOF, &o, &inner, &err),
        RP_CLIENT_OK, &err);
    assert_true(all.valid && inner.valid);
    assert_int_equal(inner.states_checked, all.states_checked - 2);
    /* Certified through the ball, with and without the earliest state. */
    arm7_ready(-1.5, path);
    arm7_ready(1.5, path + ARM7_DOF);
    memset(&o, 0, sizeof o);
    o.mode = "certified";
    o.earliest = RP_CLIENT_NO;
    expect_kind(rp_client_check_motion_opts(c, "arm7", "bench", path, 2, ARM7_DOF, &o, &all, &err),
                RP_CLIENT_OK, &err);
    o.earliest = RP_CLIENT_YES;
    expect_kind(
        rp_client_check_motion_opts(c, "arm7", "bench", path, 2, ARM7_DOF, &o, &inner, &err),
        RP_CLIENT_OK, &err);
    assert_false(all.valid);
    assert_false(inner.valid);
    assert_true(inner.t <= all.t);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* plan around the ball at the hand: from joint1 = -1.5 to 1.5 the straight
 * way is blocked; the path found has every edge certified by check.motion,
 * and the same seed gives the same path. */
static void plan_goes_around_the_ball_and_every_edge_is_clear(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    arm7_ball_at_hand(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double start[ARM7_DOF], goal[ARM7_DOF];
    arm7_ready(-1.5, start);
    arm7_ready(1.5, goal);
    rp_client_plan_opts o;
    memset(&o, 0, sizeof o);
    o.seed = 7;
    o.timeout_ms = 5000;
    rp_client_plan_result r, again;
    expect_kind(rp_client_plan(c, "arm7", "bench", start, goal, 1, ARM7_DOF, &o, &r, &err),
                RP_CLIENT_OK, &err);
    assert_true(r.solved);
    assert_string_equal(r.reason, "");
    assert_true(r.n_points >= 3);
    assert_memory_equal(r.path, start, sizeof start);
    assert_memory_equal(r.path + (r.n_points - 1) * ARM7_DOF, goal, sizeof goal);
    assert_true(r.revision > 0 && r.edges_checked >= r.n_points - 1 && r.ms >= 0);
    for (size_t i = 0; i + 1 < r.n_points; i++) {
        rp_client_motion_result m;
        expect_kind(rp_client_check_motion(c, "arm7", "bench", r.path + i * ARM7_DOF, 2, ARM7_DOF,
                                           "certified", 0, &m, &err),
                    RP_CLIENT_OK, &err);
        assert_true(m.valid);
    }
    expect_kind(rp_client_plan(c, "arm7", "bench", start, goal, 1, ARM7_DOF, &o, &again, &err),
                RP_CLIENT_OK, &err);
    assert_int_equal(again.n_points, r.n_points);
    assert_memory_equal(again.path, r.path, r.n_points * ARM7_DOF * sizeof(double));
    rp_client_plan_result_free(&again);
    rp_client_plan_result_free(&r);
    /* A goal in the ball: not solved, with the reason. */
    double in_ball[ARM7_DOF];
    arm7_ready(0, in_ball);
    expect_kind(rp_client_plan(c, "arm7", "bench", start, in_ball, 1, ARM7_DOF, NULL, &r, &err),
                RP_CLIENT_OK, &err);
    assert_false(r.solved);
    assert_string_equal(r.reason, "goal_invalid");
    assert_null(r.path);
    /* Refused before anything is sent. */
    expect_kind(rp_client_plan(c, "arm7", "bench", start, goal, 0, ARM7_DOF, NULL, &r, &err),
                RP_CLIENT_ARG, &err);
    start[2] = NAN;
    expect_kind(rp_client_plan(c, "arm7", "bench", start, goal, 1, ARM7_DOF, NULL, &r, &err),
                RP_CLIENT_ARG, &err);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* A resolution with certified (the daemon says so), a negative or NaN one
 * (nothing sent), an unknown mode and a path of one point are refused. */
static void check_motion_refuses_bad_resolutions_modes_and_paths(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    arm7_ball_at_hand(c);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double path[2 * ARM7_DOF];
    arm7_free_edge(path);
    rp_client_motion_result r;
    expect_kind(
        rp_client_check_motion(c, "arm7", "bench", path, 2, ARM7_DOF, "certified", 0.1, &r, &err),
        RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.resolution\""));
    expect_kind(rp_client_check_motion(c, "arm7", "bench", path, 2, ARM7_DOF, NULL, -0.1, &r, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_check_motion(c, "arm7", "bench", path, 2, ARM7_DOF, NULL, NAN, &r, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(
        rp_client_check_motion(c, "arm7", "bench", path, 2, ARM7_DOF, "sideways", 0, &r, &err),
        RP_CLIENT_RPC, &err);
    assert_non_null(strstr(err.data, "\"path\":\"params.mode\""));
    /* One point is not a motion. */
    expect_kind(rp_client_check_motion(c, "arm7", "bench", path, 1, ARM7_DOF, NULL, 0, &r, &err),
                RP_CLIENT_RPC, &err);
    assert_non_null(strstr(err.data, "\"path\":\"params.path\""));
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* The helpers' start: arm7's ready pose and joint1 turned by 1 rad. */
static void two_ready_poses(double q[2 * ARM7_DOF])
{
    arm7_ready(0, q);
    arm7_ready(1, q + ARM7_DOF);
}

/* Still in step after the refusals: a good check works. */
static void helpers_still_in_step(rp_client *c, const double q[ARM7_DOF])
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    bool valid = false;
    expect_kind(rp_client_check_joints(c, "arm7", NULL, q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_OK, &err);
    assert_true(valid);
    assert_int_equal(err.kind, RP_CLIENT_OK);
    rp_client_error_free(&err);
}

/* Unknown model or scene: not found, with the kind. */
static void helpers_report_unknown_models_and_scenes_as_not_found(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double q[2 * ARM7_DOF];
    two_ready_poses(q);
    bool valid = true, vb[2];
    rp_client_motion_result r;
    char *result = NULL;
    expect_kind(rp_client_check_joints(c, "nope", NULL, q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32001);
    assert_string_equal(err.data, "{\"kind\":\"model\",\"name\":\"nope\"}");
    assert_false(valid);
    expect_kind(rp_client_check_joints(c, "arm7", "nope", q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32001);
    assert_string_equal(err.data, "{\"kind\":\"scene\",\"name\":\"nope\"}");
    expect_kind(rp_client_check_batch_joints(c, "nope", NULL, q, 2, ARM7_DOF, vb, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32001);
    expect_kind(rp_client_check_motion(c, "nope", NULL, q, 2, ARM7_DOF, NULL, 0, &r, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32001);
    expect_kind(rp_client_model_fk(c, "nope", q, ARM7_DOF, &result, &err), RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32001);
    assert_null(result);
    helpers_still_in_step(c, q);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* A wrong joint count: invalid params with the path; a frame-indexed model
 * takes no joint vector. */
static void helpers_report_wrong_joint_counts_with_the_path(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double q[2 * ARM7_DOF];
    two_ready_poses(q);
    bool valid = true, vb[2];
    rp_client_motion_result r;
    expect_kind(rp_client_check_joints(c, "arm7", NULL, q, 7, &valid, NULL, &err), RP_CLIENT_RPC,
                &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.joints\""));
    assert_non_null(strstr(err.message, "must hold 8 values"));
    expect_kind(rp_client_check_batch_joints(c, "arm7", NULL, q, 2, 7, vb, &err), RP_CLIENT_RPC,
                &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.joints[0]\""));
    expect_kind(rp_client_check_motion(c, "arm7", NULL, q, 2, 7, NULL, 0, &r, &err), RP_CLIENT_RPC,
                &err);
    assert_non_null(strstr(err.data, "\"path\":\"params.path[0]\""));
    expect_kind(rp_client_model_fk(c, "arm7", q, 9, NULL, &err), RP_CLIENT_RPC, &err);
    assert_non_null(strstr(err.data, "\"path\":\"params.joints\""));

    /* A frame-indexed model takes no joint vector. */
    expect_kind(rp_client_call(c, "model.put",
                               "{\"model\":\"framed\",\"links\":[{\"id\":\"s\",\"frame\":0,"
                               "\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1}}}]}",
                               NULL, &err),
                RP_CLIENT_OK, &err);
    expect_kind(rp_client_check_joints(c, "framed", NULL, q, 1, &valid, NULL, &err), RP_CLIENT_RPC,
                &err);
    assert_non_null(strstr(err.data, "\"path\":\"params.joints\""));
    helpers_still_in_step(c, q);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* NaN and infinities cannot be sent: argument errors naming the element,
 * and nothing goes out. */
static void helpers_refuse_nan_and_infinite_values_naming_the_element(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double q[2 * ARM7_DOF];
    two_ready_poses(q);
    bool valid = true, vb[2];
    rp_client_motion_result r;
    q[2] = NAN;
    expect_kind(rp_client_check_joints(c, "arm7", NULL, q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_ARG, &err);
    assert_non_null(strstr(err.message, "q[2] is NaN"));
    expect_kind(rp_client_model_fk(c, "arm7", q, ARM7_DOF, NULL, &err), RP_CLIENT_ARG, &err);
    q[2] = 0;
    q[ARM7_DOF + 5] = -INFINITY;
    expect_kind(rp_client_check_batch_joints(c, "arm7", NULL, q, 2, ARM7_DOF, vb, &err),
                RP_CLIENT_ARG, &err);
    assert_non_null(strstr(err.message, "q[1][5] is infinite"));
    expect_kind(rp_client_check_motion(c, "arm7", NULL, q, 2, ARM7_DOF, NULL, 0, &r, &err),
                RP_CLIENT_ARG, &err);
    assert_non_null(strstr(err.message, "path[1][5] is infinite"));
    q[ARM7_DOF + 5] = 1.570796327;
    assert_int_equal(rp_client_pending(c), 0);
    helpers_still_in_step(c, q);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* NULL where something is needed, names that are not UTF-8, a count that
 * overflows: argument errors, and nothing goes out. */
static void helpers_refuse_null_and_non_utf8_arguments_without_sending(void **state)
{
    (void)state;
    rp_client *c = arm7_daemon();
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    double q[2 * ARM7_DOF];
    two_ready_poses(q);
    bool valid = true, vb[2];
    rp_client_motion_result r;
    expect_kind(rp_client_check_joints(c, "arm7", NULL, NULL, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_check_joints(c, "arm7", NULL, q, ARM7_DOF, NULL, NULL, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_check_joints(c, NULL, NULL, q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_check_joints(c, "arm7", "sc\xc3", q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_ARG, &err);
    assert_non_null(strstr(err.message, "scene is not valid UTF-8"));
    expect_kind(rp_client_check_batch_joints(c, "arm7", NULL, q, 2, ARM7_DOF, NULL, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_check_batch_joints(c, "arm7", NULL, q, SIZE_MAX / 2, 4, vb, &err),
                RP_CLIENT_ARG, &err); /* the count overflows: refused before vb is reset */
    expect_kind(rp_client_check_motion(c, "arm7", NULL, q, 2, ARM7_DOF, NULL, 0, NULL, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_check_motion(c, "arm7", NULL, NULL, 2, ARM7_DOF, NULL, 0, &r, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_check_joints(NULL, "arm7", NULL, q, ARM7_DOF, &valid, NULL, &err),
                RP_CLIENT_ARG, &err);
    assert_int_equal(rp_client_pending(c), 0);
    helpers_still_in_step(c, q);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* A result without the members a helper reads is a protocol error that
 * leaves the connection open (the reply itself was in step). */
static void helper_result_without_its_members_is_protocol_error(void **state)
{
    (void)state;
    static const char *const replies[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"collision\":false}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"valid\":1,\"min_distance\":0.5}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"valid\":true,\"min_distance\":\"far\"}}\n",
    };
    double q[1] = {0};
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++) {
        fake_fixed_reply = replies[i];
        fake_fixed_len = strlen(replies[i]);
        fake_server f;
        fake_start(&f, FAKE_FIXED);
        rp_client_error err = RP_CLIENT_ERROR_INIT;
        rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
        assert_non_null(c);
        bool valid = true;
        expect_kind(rp_client_check_joints(c, "m", NULL, q, 1, &valid, NULL, &err),
                    RP_CLIENT_PROTOCOL, &err);
        assert_non_null(strstr(err.message, "check result lacks"));
        assert_false(valid);
        /* Not closed: the next call is sent, and its reply (id 1 again
         * from this fake) is the one that is out of step. */
        expect_kind(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_PROTOCOL, &err);
        assert_non_null(strstr(err.message, "id does not match"));
        rp_client_error_free(&err);
        rp_client_close(c);
        fake_stop(&f);
    }
    /* check.batch with fewer results than configurations; check.motion
     * without first_invalid's members. */
    static const char batch_reply[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"results\":[{\"valid\":true}]}}\n";
    static const char motion_reply[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"valid\":false,"
                                       "\"first_invalid\":{\"t\":0.5},\"states_checked\":3}}\n";
    for (int i = 0; i < 2; i++) {
        fake_fixed_reply = i == 0 ? batch_reply : motion_reply;
        fake_fixed_len = strlen(fake_fixed_reply);
        fake_server f;
        fake_start(&f, FAKE_FIXED);
        rp_client_error err = RP_CLIENT_ERROR_INIT;
        rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
        assert_non_null(c);
        double path[2] = {0, 1};
        bool vb[2];
        rp_client_motion_result r;
        rp_client_error_kind k =
            i == 0 ? rp_client_check_batch_joints(c, "m", NULL, path, 2, 1, vb, &err)
                   : rp_client_check_motion(c, "m", NULL, path, 2, 1, NULL, 0, &r, &err);
        expect_kind(k, RP_CLIENT_PROTOCOL, &err);
        assert_non_null(strstr(err.message, i == 0 ? "\"results\" with 2 entries"
                                                   : "\"first_invalid\" with \"segment\""));
        rp_client_error_free(&err);
        rp_client_close(c);
        fake_stop(&f);
    }
}

/* ---- objects: scene.move ----------------------------------------------------------------- */

/* A rotation by `angle` about axis 0 (x) or 2 (z), and translation t. */
static rp_transform turned(int axis, double angle, double tx, double ty, double tz)
{
    double c = cos(angle), s = sin(angle);
    rp_transform tf = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {tx, ty, tz}};
    int a = axis == 0 ? 1 : 0, b = axis == 0 ? 2 : 1;
    tf.r[a][a] = c;
    tf.r[a][b] = -s;
    tf.r[b][a] = s;
    tf.r[b][b] = c;
    return tf;
}

/* The pose scene.get gives the object `name` equals tf to the last bit. */
static void expect_pose(rp_client *c, const char *name, const rp_transform *tf)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *params = cJSON_CreateObject(), *res = NULL;
    cJSON_AddStringToObject(params, "scene", "lab");
    expect_kind(rp_client_call_cjson(c, "scene.get", params, &res, &err), RP_CLIENT_OK, &err);
    const cJSON *objects = cJSON_GetObjectItemCaseSensitive(res, "objects");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(objects, name);
    const cJSON *m =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "pose"), "matrix");
    assert_int_equal(cJSON_GetArraySize(m), 3);
    const double t[3] = {tf->t.x, tf->t.y, tf->t.z};
    for (int r = 0; r < 3; r++) {
        const cJSON *row = cJSON_GetArrayItem(m, r);
        assert_int_equal(cJSON_GetArraySize(row), 4);
        for (int k = 0; k < 4; k++) {
            double want = k < 3 ? tf->r[r][k] : t[r], got = cJSON_GetArrayItem(row, k)->valuedouble;
            if (memcmp(&got, &want, sizeof got) != 0)
                fprintf(stderr, "%s matrix[%d][%d]: %.17g, want %.17g\n", name, r, k, got, want);
            assert_memory_equal(&got, &want, sizeof got);
        }
    }
    cJSON_Delete(params);
    cJSON_Delete(res);
    rp_client_error_free(&err);
}

static void scene_move_sends_every_digit_and_one_revision_for_all(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    call_expect(
        c, "scene.create",
        "{\"scene\":\"lab\",\"shapes\":{\"post\":{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0,1],"
        "\"radius\":0.25}}},\"objects\":{\"table\":{\"shapes\":{\"leg\":{\"capsule\":{\"a\":"
        "[0,0,0],\"b\":[0,0,0.75],\"radius\":0.0625}}}},\"cart\":{\"pose\":{\"translation\":"
        "[5,0,0]},\"shapes\":{\"s\":{\"sphere\":{\"center\":[0,0,0],\"radius\":0.25}}}}}}",
        "{\"scene\":\"lab\",\"revision\":1}");
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    const char *const names[] = {"table", "cart"};
    /* Numbers that need all 17 digits. */
    rp_transform poses[2] = {turned(2, 0.3, 0.1, 1.0 / 3, -2.5e-7), turned(0, 1.0, 2, 1, 0.5)};
    uint64_t rev = 99;
    expect_kind(rp_client_scene_move(c, "lab", names, poses, 2, NULL, &rev, &err), RP_CLIENT_OK,
                &err);
    assert_int_equal(rev, 2); /* one revision for both */
    expect_pose(c, "table", &poses[0]);
    expect_pose(c, "cart", &poses[1]);
    /* The world shape is the leg moved by the pose. */
    cJSON *params = cJSON_Parse("{\"scene\":\"lab\",\"ids\":[\"table/leg\"]}"), *res = NULL;
    expect_kind(rp_client_call_cjson(c, "scene.get", params, &res, &err), RP_CLIENT_OK, &err);
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "shapes"),
                                         "table/leg"),
        "capsule");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(cap, "b");
    assert_true(fabs(cJSON_GetArrayItem(b, 0)->valuedouble - 0.1) < 1e-12);
    assert_true(fabs(cJSON_GetArrayItem(b, 1)->valuedouble - 1.0 / 3) < 1e-12);
    assert_true(fabs(cJSON_GetArrayItem(b, 2)->valuedouble - (0.75 - 2.5e-7)) < 1e-12);
    cJSON_Delete(params);
    cJSON_Delete(res);

    /* if_revision: a stale one conflicts, the current one moves. */
    uint64_t stale = 1, now = 2;
    expect_kind(rp_client_scene_move(c, "lab", names, poses, 1, &stale, &rev, &err), RP_CLIENT_RPC,
                &err);
    assert_int_equal(err.code, -32003);
    assert_string_equal(err.data, "{\"expected\":1,\"actual\":2}");
    assert_int_equal(rev, 0);
    poses[0] = turned(2, -2.0, -0.5, 0.25, 0);
    expect_kind(rp_client_scene_move(c, "lab", names, poses, 1, &now, &rev, &err), RP_CLIENT_OK,
                &err);
    assert_int_equal(rev, 3);
    expect_pose(c, "table", &poses[0]);

    /* The server's refusals: an unknown object or scene, a bad rotation. */
    const char *const chair[] = {"chair"};
    expect_kind(rp_client_scene_move(c, "lab", chair, poses, 1, NULL, &rev, &err), RP_CLIENT_RPC,
                &err);
    assert_int_equal(err.code, -32001);
    assert_string_equal(err.data, "{\"kind\":\"object\",\"name\":\"chair\"}");
    expect_kind(rp_client_scene_move(c, "nope", names, poses, 1, NULL, &rev, &err), RP_CLIENT_RPC,
                &err);
    assert_int_equal(err.code, -32001);
    assert_string_equal(err.data, "{\"kind\":\"scene\",\"name\":\"nope\"}");
    rp_transform squashed = poses[0];
    squashed.r[0][0] *= 2;
    expect_kind(rp_client_scene_move(c, "lab", names, &squashed, 1, NULL, &rev, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.objects.table"));

    /* Refused here, before anything is sent. */
    rp_transform bad[2] = {poses[0], poses[1]};
    bad[1].r[0][2] = NAN;
    expect_kind(rp_client_scene_move(c, "lab", names, bad, 2, NULL, &rev, &err), RP_CLIENT_ARG,
                &err);
    assert_string_equal(err.message, "poses[1].r[0][2] is NaN; JSON has no such number");
    bad[1] = poses[1];
    bad[0].t.y = -INFINITY;
    expect_kind(rp_client_scene_move(c, "lab", names, bad, 2, NULL, &rev, &err), RP_CLIENT_ARG,
                &err);
    assert_string_equal(err.message, "poses[0].t.y is infinite; JSON has no such number");
    expect_kind(rp_client_scene_move(c, "lab", NULL, poses, 1, NULL, &rev, &err), RP_CLIENT_ARG,
                &err);
    expect_kind(rp_client_scene_move(c, "lab", names, NULL, 1, NULL, &rev, &err), RP_CLIENT_ARG,
                &err);
    expect_kind(rp_client_scene_move(c, NULL, names, poses, 1, NULL, &rev, &err), RP_CLIENT_ARG,
                &err);
    const char *const bad_name[] = {"table", "\xff"};
    expect_kind(rp_client_scene_move(c, "lab", bad_name, poses, 2, NULL, &rev, &err), RP_CLIENT_ARG,
                &err);
    assert_non_null(strstr(err.message, "names[1] is not valid UTF-8"));
    assert_int_equal(rev, 0);
    /* Nothing was sent: the scene is where the last move left it. */
    call_expect(c, "scene.list", NULL,
                "{\"scenes\":[{\"scene\":\"lab\",\"revision\":3,\"shapes\":3}]}");

    /* ignore goes through rp_client_call: the objects' shapes left out. */
    const char *q =
        "{\"scene\":\"lab\",\"shape\":{\"sphere\":{\"center\":[2,0,0.5],\"radius\":0.25}}";
    char with[256];
    snprintf(with, sizeof with, "%s,\"ignore\":[\"table\",\"cart\"]}", q);
    call_expect(
        c, "scene.distance", with,
        "{\"revision\":3,\"distance\":1.5,\"nearest\":{\"query\":null,\"shape\":\"post\"}}");
    snprintf(with, sizeof with, "%s}", q);
    char *result = NULL;
    expect_kind(rp_client_call(c, "scene.distance", with, &result, &err), RP_CLIENT_OK, &err);
    assert_non_null(strstr(result, "\"shape\":\"cart/s\""));
    free(result);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* ---- robot instances: scene.move of joints and bases ---------------------------------------- */

#define ARM2_JSON                                                                                  \
    "{\"model\":\"arm2\",\"allow_adjacent\":true,\"joints\":[{\"name\":\"j1\",\"type\":"           \
    "\"revolute\",\"parent\":\"base\",\"child\":\"l1\",\"origin\":{\"xyz\":[0,0,0.25]},"           \
    "\"axis\":[0,0,1],\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"j2\",\"type\":"           \
    "\"revolute\",\"parent\":\"l1\",\"child\":\"l2\",\"origin\":{\"xyz\":[0.5,0,0]},\"axis\":"     \
    "[0,0,1],\"limits\":{\"lower\":-2,\"upper\":2}}],\"links\":[{\"id\":\"base#0\",\"link\":"      \
    "\"base\",\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":0.125}}},{\"id\":\"l1#0\","     \
    "\"link\":\"l1\",\"shape\":{\"capsule\":{\"a\":[0,0,0],\"b\":[0.5,0,0],\"radius\":0.0625}}},"  \
    "{\"id\":\"l2#0\",\"link\":\"l2\",\"shape\":{\"capsule\":{\"a\":[0.0625,0,0],\"b\":[0.375,0,"  \
    "0],\"radius\":0.0625}}}]}"

/* robots.<name> of scene.get "cell" (a new reference the caller deletes
 * with *res). */
static const cJSON *robot_of(rp_client *c, const char *name, cJSON **res)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *params = cJSON_Parse("{\"scene\":\"cell\"}");
    *res = NULL;
    expect_kind(rp_client_call_cjson(c, "scene.get", params, res, &err), RP_CLIENT_OK, &err);
    cJSON_Delete(params);
    rp_client_error_free(&err);
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(*res, "robots"), name);
}

/* The joints and base scene.get gives robot `name` equal q and tf to the
 * last bit. */
static void expect_robot(rp_client *c, const char *name, const double *q, size_t dof,
                         const rp_transform *tf)
{
    cJSON *res;
    const cJSON *r = robot_of(c, name, &res);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "model")), "arm2");
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(r, "joints");
    assert_int_equal(cJSON_GetArraySize(j), (int)dof);
    for (size_t k = 0; k < dof; k++) {
        double got = cJSON_GetArrayItem(j, (int)k)->valuedouble;
        if (memcmp(&got, &q[k], sizeof got) != 0)
            fprintf(stderr, "%s joints[%zu]: %.17g, want %.17g\n", name, k, got, q[k]);
        assert_memory_equal(&got, &q[k], sizeof got);
    }
    const cJSON *m =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "base"), "matrix");
    const double t[3] = {tf->t.x, tf->t.y, tf->t.z};
    for (int row = 0; row < 3; row++)
        for (int k = 0; k < 4; k++) {
            double want = k < 3 ? tf->r[row][k] : t[row];
            double got = cJSON_GetArrayItem(cJSON_GetArrayItem(m, row), k)->valuedouble;
            assert_memory_equal(&got, &want, sizeof got);
        }
    cJSON_Delete(res);
}

static void scene_move_robots_sends_every_digit_with_objects_in_one_revision(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    call_expect(c, "model.put", ARM2_JSON, "{\"model\":\"arm2\",\"revision\":1}");
    call_expect(c, "scene.create",
                "{\"scene\":\"cell\",\"objects\":{\"table\":{\"pose\":{\"translation\":[1,0,0]},"
                "\"shapes\":{\"top\":{\"box\":{\"center\":[0,0,0.5],\"half_extents\":[0.25,0.5,"
                "0.03125]}}}}},\"robots\":{\"r1\":{\"model\":\"arm2\",\"base\":{\"translation\":"
                "[0,-0.75,0]}},\"r2\":{\"model\":\"arm2\",\"base\":{\"translation\":[0,0.75,0]}}}}",
                "{\"scene\":\"cell\",\"revision\":2}");
    /* Joints of r1, a base of r2 and the table's pose: one revision. */
    const double q1[2] = {1.0 / 3, -0.1};
    rp_transform b2 = turned(2, 0.7, 0.1, 0.75, 1.0 / 7);
    rp_client_robot_move moves[2] = {{"r1", q1, 2, NULL}, {"r2", NULL, 0, &b2}};
    const char *const table[] = {"table"};
    rp_transform tp = turned(2, -0.3, 1.25, 1.0 / 9, 0);
    uint64_t rev = 99;
    expect_kind(rp_client_scene_move_robots(c, "cell", moves, 2, table, &tp, 1, NULL, &rev, &err),
                RP_CLIENT_OK, &err);
    assert_int_equal(rev, 3);
    const rp_transform b1 = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {0, -0.75, 0}};
    const double zero[2] = {0, 0};
    expect_robot(c, "r1", q1, 2, &b1);   /* the base as it was */
    expect_robot(c, "r2", zero, 2, &b2); /* the joints as they were */
    cJSON *res;
    robot_of(c, "r1", &res);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "objects"),
                                             "table"),
            "pose"),
        "matrix");
    double got = cJSON_GetArrayItem(cJSON_GetArrayItem(m, 1), 3)->valuedouble;
    assert_memory_equal(&got, &tp.t.y, sizeof got);
    cJSON_Delete(res);
    /* r1's world shape where FK puts it: l1 from (0,-0.75,0.25) along j1. */
    cJSON *params = cJSON_Parse("{\"scene\":\"cell\",\"ids\":[\"r1/l1#0\"]}");
    expect_kind(rp_client_call_cjson(c, "scene.get", params, &res, &err), RP_CLIENT_OK, &err);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "shapes"),
                                             "r1/l1#0"),
            "capsule"),
        "b");
    assert_true(fabs(cJSON_GetArrayItem(b, 0)->valuedouble - 0.5 * cos(q1[0])) < 1e-12);
    assert_true(fabs(cJSON_GetArrayItem(b, 1)->valuedouble - (-0.75 + 0.5 * sin(q1[0]))) < 1e-12);
    assert_true(fabs(cJSON_GetArrayItem(b, 2)->valuedouble - 0.25) < 1e-12);
    cJSON_Delete(params);
    cJSON_Delete(res);

    /* Robots alone, if_revision: a stale one conflicts, the current one moves. */
    const double q2[2] = {-2.5, 1.75};
    rp_client_robot_move both = {"r1", q2, 2, &b2};
    uint64_t stale = 2, now = 3;
    expect_kind(rp_client_scene_move_robots(c, "cell", &both, 1, NULL, NULL, 0, &stale, &rev, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32003);
    assert_int_equal(rev, 0);
    expect_kind(rp_client_scene_move_robots(c, "cell", &both, 1, NULL, NULL, 0, &now, &rev, &err),
                RP_CLIENT_OK, &err);
    assert_int_equal(rev, 4);
    expect_robot(c, "r1", q2, 2, &b2);

    /* The model cannot go while the robots use it. */
    char *text = NULL;
    expect_kind(rp_client_call(c, "model.delete", "{\"model\":\"arm2\"}", &text, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32002);
    assert_non_null(strstr(err.data, "\"kind\":\"model\",\"name\":\"arm2\",\"scene\":\"cell\""));
    assert_non_null(strstr(err.data, "\"robot\":\"r"));

    /* The server's refusals: an unknown robot, an object as a robot, a
     * wrong joint count. */
    rp_client_robot_move r9 = {"r9", q2, 2, NULL};
    expect_kind(rp_client_scene_move_robots(c, "cell", &r9, 1, NULL, NULL, 0, NULL, &rev, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32001);
    assert_string_equal(err.data, "{\"kind\":\"robot\",\"name\":\"r9\"}");
    rp_client_robot_move tbl = {"table", q2, 2, NULL};
    expect_kind(rp_client_scene_move_robots(c, "cell", &tbl, 1, NULL, NULL, 0, NULL, &rev, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.robots.table\""));
    rp_client_robot_move three = {"r1", q2, 1, NULL};
    expect_kind(rp_client_scene_move_robots(c, "cell", &three, 1, NULL, NULL, 0, NULL, &rev, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.robots.r1.joints\""));

    /* Refused here, before anything is sent. */
    const double nan_q[2] = {0, NAN};
    rp_client_robot_move bad[2] = {{"r1", q1, 2, NULL}, {"r2", nan_q, 2, NULL}};
    expect_kind(rp_client_scene_move_robots(c, "cell", bad, 2, NULL, NULL, 0, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "robots[1].joints[1] is NaN; JSON has no such number");
    rp_transform inf_base = b2;
    inf_base.t.x = INFINITY;
    bad[1] = (rp_client_robot_move){"r2", NULL, 0, &inf_base};
    expect_kind(rp_client_scene_move_robots(c, "cell", bad, 2, NULL, NULL, 0, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "robots[1].base.t.x is infinite; JSON has no such number");
    bad[1] = (rp_client_robot_move){"\xc3", q1, 2, NULL};
    expect_kind(rp_client_scene_move_robots(c, "cell", bad, 2, NULL, NULL, 0, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    assert_non_null(strstr(err.message, "robots[1].name is not valid UTF-8"));
    bad[1] = (rp_client_robot_move){NULL, q1, 2, NULL};
    expect_kind(rp_client_scene_move_robots(c, "cell", bad, 2, NULL, NULL, 0, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "robots[1].name is NULL");
    expect_kind(rp_client_scene_move_robots(c, "cell", NULL, 1, NULL, NULL, 0, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_scene_move_robots(c, "cell", moves, 1, NULL, &tp, 1, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "names is NULL");
    assert_int_equal(rev, 0);
    /* Nothing was sent: r1 is where the last move left it. */
    expect_robot(c, "r1", q2, 2, &b2);

    /* Removed by name, the model can go. */
    call_expect(c, "scene.remove", "{\"scene\":\"cell\",\"ids\":[\"r1\",\"r2\"]}",
                "{\"scene\":\"cell\",\"revision\":5,\"removed\":2}");
    call_expect(c, "model.delete", "{\"model\":\"arm2\"}",
                "{\"model\":\"arm2\",\"deleted\":true,\"revision\":6}");
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* ---- point clouds: scene.put of points_f32 ---------------------------------------------------- */

/* One point's coordinates, compared by their bits. */
typedef struct point3f {
    float v[3];
} point3f;
/* An array of them is read as x, y, z floats in turn (got[0].v). */
_Static_assert(sizeof(point3f) == 3 * sizeof(float), "point3f has padding");

static int point_bits_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(point3f));
}

/* The points of clouds.<name> of scene.get `scene`, decoded from its
 * points_f32 (base64 of little-endian float32 x, y, z), in sphere order:
 * malloc'ed (the caller frees), their number in *n; its radius in *radius
 * (when not NULL).  Fails the test when the cloud is missing, its base64
 * is not strict or count does not match. */
static point3f *cloud_of(rp_client *c, const char *scene, const char *name, size_t *n,
                         double *radius)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *params = cJSON_CreateObject(), *res = NULL;
    cJSON_AddStringToObject(params, "scene", scene);
    expect_kind(rp_client_call_cjson(c, "scene.get", params, &res, &err), RP_CLIENT_OK, &err);
    const cJSON *cloud =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "clouds"), name);
    assert_non_null(cloud);
    if (radius)
        *radius = cJSON_GetObjectItemCaseSensitive(cloud, "radius")->valuedouble;
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cloud, "points_f32"));
    assert_non_null(text);
    size_t len = strlen(text);
    assert_int_equal(len % 16, 0); /* 12 bytes a point: 16 characters, no padding */
    *n = len / 16;
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(cloud, "count")->valuedouble, (double)*n);
    point3f *pts = calloc(*n ? *n : 1, sizeof *pts);
    assert_non_null(pts);
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char bytes[12];
    for (size_t i = 0; i < len; i += 4) {
        uint32_t g = 0;
        for (int k = 0; k < 4; k++) {
            const char *at = strchr(alphabet, text[i + (size_t)k]);
            assert_true(at && *at);
            g = g << 6 | (uint32_t)(at - alphabet);
        }
        size_t off = (i / 4 * 3) % 12;
        bytes[off] = (unsigned char)(g >> 16);
        bytes[off + 1] = (unsigned char)(g >> 8);
        bytes[off + 2] = (unsigned char)g;
        if (off == 9)
            for (int k = 0; k < 3; k++) {
                uint32_t u = 0;
                for (int j = 3; j >= 0; j--)
                    u = u << 8 | bytes[4 * k + j];
                memcpy(&pts[i / 16].v[k], &u, sizeof u);
            }
    }
    cJSON_Delete(params);
    cJSON_Delete(res);
    rp_client_error_free(&err);
    return pts;
}

/* got[0..n) holds the same points as want[0..n), bit for bit, in any order. */
static void expect_same_points(point3f *got, const float *want, size_t n)
{
    point3f *w = malloc((n ? n : 1) * sizeof *w);
    assert_non_null(w);
    memcpy(w, want, n * sizeof *w);
    qsort(w, n, sizeof *w, point_bits_cmp);
    point3f *g = malloc((n ? n : 1) * sizeof *g);
    assert_non_null(g);
    memcpy(g, got, n * sizeof *g);
    qsort(g, n, sizeof *g, point_bits_cmp);
    assert_memory_equal(g, w, n * sizeof *g);
    free(w);
    free(g);
}

static void scene_put_cloud_sends_every_bit_and_names_spheres_cloud_k(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    call_expect(c, "scene.create",
                "{\"scene\":\"lab\",\"shapes\":{\"post\":{\"capsule\":{\"a\":[2,0,0],\"b\":[2,0,1],"
                "\"radius\":0.25}}}}",
                "{\"scene\":\"lab\",\"revision\":1}");
    /* Numbers that need every bit of a float, negative zero among them. */
    const float xyz[] = {1.0f / 3, 0.1f, 0.75f, -2.5e-7f, -0.0f, 0.7f,
                         0.5f,     0.5f, 0.75f, 1.0625f,  0,     0.75f};
    uint64_t rev = 99;
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", xyz, 4, 0.0625, 0, false, NULL, &rev, &err),
        RP_CLIENT_OK, &err);
    assert_int_equal(rev, 2);
    size_t n = 0;
    double radius = 0;
    point3f *got = cloud_of(c, "lab", "cam", &n, &radius);
    assert_int_equal(n, 4);
    assert_true(radius == 0.0625);
    expect_same_points(got, xyz, 4);
    /* A query names the sphere it hits "cam/k", k its row in points_f32. */
    size_t k = 0;
    while (k < n && !(got[k].v[0] == 1.0625f && got[k].v[2] == 0.75f))
        k++;
    assert_true(k < n);
    char want[160], *result = NULL;
    snprintf(
        want, sizeof want,
        "{\"revision\":2,\"distance\":0.125,\"nearest\":{\"query\":null,\"shape\":\"cam/%zu\"}}",
        k);
    const char *probe =
        "{\"scene\":\"lab\",\"shape\":{\"sphere\":{\"center\":[1.0625,0,1],\"radius\":0.0625}}";
    char params[256];
    snprintf(params, sizeof params, "%s}", probe);
    call_expect(c, "scene.distance", params, want);
    /* ignore (through rp_client_call) leaves the whole cloud out. */
    snprintf(params, sizeof params, "%s,\"ignore\":[\"cam\"]}", probe);
    call_expect(
        c, "scene.distance", params,
        "{\"revision\":2,\"distance\":0.625,\"nearest\":{\"query\":null,\"shape\":\"post\"}}");

    /* The centres read back, put back: the same text, the same numbers. */
    char *before = NULL;
    expect_kind(rp_client_call(c, "scene.get", "{\"scene\":\"lab\"}", &before, &err), RP_CLIENT_OK,
                &err);
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", got[0].v, n, 0.0625, 0, false, NULL, &rev, &err),
        RP_CLIENT_OK, &err);
    assert_int_equal(rev, 3);
    expect_kind(rp_client_call(c, "scene.get", "{\"scene\":\"lab\"}", &result, &err), RP_CLIENT_OK,
                &err);
    assert_string_equal(strstr(result, "\"clouds\""), strstr(before, "\"clouds\""));
    free(before);
    free(result);
    free(got);

    /* Voxels of 2 m: the three points in the cell [0, 2)^3 become one
     * sphere at their centroid (summed in double from 0 in the order
     * given, then rounded to float), the point at x < 0 another (its -0
     * then +0: 0 + -0 is +0). */
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", xyz, 4, 0.0625, 2, false, NULL, &rev, &err),
        RP_CLIENT_OK, &err);
    got = cloud_of(c, "lab", "cam", &n, NULL);
    assert_int_equal(n, 2);
    float centroid[6];
    for (int j = 0; j < 3; j++) {
        centroid[j] = (float)(0.0 + xyz[3 + j]);
        centroid[3 + j] = (float)((0.0 + xyz[j] + xyz[6 + j] + xyz[9 + j]) / 3);
    }
    expect_same_points(got, centroid, 2);
    free(got);

    /* if_revision: a stale one conflicts, the current one puts. */
    uint64_t stale = 3, now = 4;
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", xyz, 4, 0.0625, 0, false, &stale, &rev, &err),
        RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32003);
    assert_string_equal(err.data, "{\"expected\":3,\"actual\":4}");
    assert_int_equal(rev, 0);
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", xyz, 4, 0.0625, 0, false, &now, &rev, &err),
        RP_CLIENT_OK, &err);
    assert_int_equal(rev, 5);

    /* create: a missing scene is made, else -32001. */
    expect_kind(
        rp_client_scene_put_cloud(c, "new", "cam", xyz, 1, 0.0625, 0, false, NULL, &rev, &err),
        RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32001);
    assert_string_equal(err.data, "{\"kind\":\"scene\",\"name\":\"new\"}");
    expect_kind(
        rp_client_scene_put_cloud(c, "new", "cam", xyz, 1, 0.0625, 0, true, NULL, &rev, &err),
        RP_CLIENT_OK, &err);
    assert_int_equal(rev, 6);
    /* An empty cloud: no points at all. */
    expect_kind(rp_client_scene_put_cloud(c, "new", "none", NULL, 0, 0, 0, false, NULL, &rev, &err),
                RP_CLIENT_OK, &err);
    got = cloud_of(c, "new", "none", &n, NULL);
    assert_int_equal(n, 0);
    free(got);

    /* The server's refusals, at their paths. */
    expect_kind(rp_client_scene_put_cloud(c, "lab", "cam", xyz, 4, -1, 0, false, NULL, &rev, &err),
                RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.clouds.cam.radius\""));
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", xyz, 4, 0.1, -1, false, NULL, &rev, &err),
        RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.clouds.cam.voxel\""));
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "post", xyz, 4, 0.1, 0, false, NULL, &rev, &err),
        RP_CLIENT_RPC, &err);
    assert_int_equal(err.code, -32602);
    assert_non_null(strstr(err.data, "\"path\":\"params.clouds.post\""));

    /* Refused here, before anything is sent. */
    float bad[12];
    memcpy(bad, xyz, sizeof bad);
    bad[7] = NAN;
    expect_kind(rp_client_scene_put_cloud(c, "lab", "cam", bad, 4, 0.1, 0, false, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "xyz[7] (point 2, y) is NaN; a cloud's points are finite");
    bad[7] = -INFINITY;
    expect_kind(rp_client_scene_put_cloud(c, "lab", "cam", bad, 4, 0.1, 0, false, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    assert_string_equal(err.message,
                        "xyz[7] (point 2, y) is infinite; a cloud's points are finite");
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", xyz, 4, INFINITY, 0, false, NULL, &rev, &err),
        RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "radius is infinite; JSON has no such number");
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", xyz, 4, 0.1, NAN, false, NULL, &rev, &err),
        RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "voxel is NaN; JSON has no such number");
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "cam", NULL, 4, 0.1, 0, false, NULL, &rev, &err),
        RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "xyz is NULL");
    expect_kind(rp_client_scene_put_cloud(c, NULL, "cam", xyz, 4, 0.1, 0, false, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    expect_kind(rp_client_scene_put_cloud(c, "lab", NULL, xyz, 4, 0.1, 0, false, NULL, &rev, &err),
                RP_CLIENT_ARG, &err);
    assert_string_equal(err.message, "name is NULL");
    expect_kind(
        rp_client_scene_put_cloud(c, "lab", "c\xff", xyz, 4, 0.1, 0, false, NULL, &rev, &err),
        RP_CLIENT_ARG, &err);
    assert_non_null(strstr(err.message, "name is not valid UTF-8"));
    assert_int_equal(rev, 0);
    /* Nothing was sent: the scenes are at their last puts' revisions. */
    expect_kind(rp_client_call(c, "scene.list", NULL, &result, &err), RP_CLIENT_OK, &err);
    assert_non_null(strstr(result, "{\"scene\":\"lab\",\"revision\":5,"));
    assert_non_null(strstr(result, "{\"scene\":\"new\",\"revision\":7,"));
    free(result);

    /* Removed by name, with every sphere. */
    call_expect(c, "scene.remove", "{\"scene\":\"lab\",\"ids\":[\"cam\"]}",
                "{\"scene\":\"lab\",\"revision\":8,\"removed\":1}");
    expect_kind(rp_client_call(c, "scene.get", "{\"scene\":\"lab\"}", &result, &err), RP_CLIENT_OK,
                &err);
    assert_null(strstr(result, "\"clouds\""));
    free(result);
    rp_client_error_free(&err);
    rp_client_close(c);
}

static void scene_put_cloud_of_many_points_round_trips(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *c = connect_to(d, false);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    /* Not a multiple of the helper's chunk of points; a fixed sequence. */
    enum { N = 3 * 1000 + 7 };
    float *xyz = malloc(3 * N * sizeof *xyz);
    assert_non_null(xyz);
    uint32_t x = 12345;
    for (size_t i = 0; i < 3 * N; i++) {
        x = x * 1664525u + 1013904223u;
        xyz[i] = (float)((double)(x >> 8) / (1 << 24) * 8 - 4); /* in [-4, 4) */
    }
    uint64_t rev = 0;
    expect_kind(
        rp_client_scene_put_cloud(c, "big", "scan", xyz, N, 0.005, 0, true, NULL, &rev, &err),
        RP_CLIENT_OK, &err);
    assert_int_equal(rev, 1);
    size_t n = 0;
    point3f *got = cloud_of(c, "big", "scan", &n, NULL);
    assert_int_equal(n, N);
    expect_same_points(got, xyz, N);
    free(got);
    free(xyz);
    rp_client_error_free(&err);
    rp_client_close(c);
}

/* ---- watch notifications ------------------------------------------------------------------ */

/* The next notification within the guard; fails otherwise. */
static void next_note(rp_client *c, rp_client_notification *n)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client_error_kind k = rp_client_next_notification(c, rh_ms(RH_TIMEOUT_MS), n, &err);
    if (k != RP_CLIENT_OK)
        fail_msg("next notification: %s: %s", rp_client_error_kind_name(k), err.message);
    rp_client_error_free(&err);
}

/* A mutation's revision, through rp_client_call. */
static uint64_t mutate(rp_client *c, const char *method, const char *params)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = NULL;
    rp_client_error_kind k = rp_client_call(c, method, params, &result, &err);
    if (k != RP_CLIENT_OK)
        fail_msg("%s: %s: %s", method, rp_client_error_kind_name(k), err.message);
    cJSON *r = cJSON_Parse(result);
    uint64_t rev = (uint64_t)cJSON_GetObjectItemCaseSensitive(r, "revision")->valuedouble;
    cJSON_Delete(r);
    free(result);
    return rev;
}

/* n is `method` of watch/scene/revision, and its line is the server's
 * compact notification around its params. */
static void expect_note(const rp_client_notification *n, const char *method, uint64_t watch,
                        const char *scene, uint64_t revision)
{
    assert_string_equal(n->method, method);
    assert_int_equal(n->watch, watch);
    assert_string_equal(n->scene, scene);
    assert_int_equal(n->revision, revision);
    assert_non_null(n->params);
    char want[512];
    snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":%s}", method,
             n->params);
    assert_string_equal(n->line, want);
    if (strcmp(method, "scene.changed") != 0) {
        assert_null(n->put);
        assert_null(n->removed);
    }
}

/* Notifications that arrive while a call waits for its reply are queued and
 * come out of rp_client_next_notification in order; each call gets its own
 * reply.  The fields, the raw put/removed/params text and the whole line are
 * the server's.  A timeout leaves the client usable. */
static void notifications_are_queued_between_replies(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *w = connect_to(d, false), *m = connect_to(d, true);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client_notification n = RP_CLIENT_NOTIFICATION_INIT;
    uint64_t created = mutate(m, "scene.create", "{\"scene\":\"s\"}");
    uint64_t id = 0, rev = 0;
    assert_int_equal(rp_client_scene_watch(w, "s", NULL, &id, &rev, &err), RP_CLIENT_OK);
    assert_true(id > 0);
    assert_int_equal(rev, created);
    assert_int_equal(rp_client_notifications_queued(w), 0);
    /* Nothing yet: a timeout of 0 returns at once; the client goes on. */
    assert_int_equal(rp_client_next_notification(w, 0, &n, &err), RP_CLIENT_TIMEOUT);
    assert_int_equal(err.kind, RP_CLIENT_TIMEOUT);
    assert_null(n.method);
    assert_int_equal(rp_client_next_notification(w, 20, &n, &err), RP_CLIENT_TIMEOUT);
    call_expect(w, "ping", NULL, "{\"pong\":true}");

    uint64_t r1 = mutate(m, "scene.put",
                         "{\"scene\":\"s\",\"shapes\":{\"b\":{\"capsule\":{"
                         "\"a\":[0,0,0],\"b\":[1,0,0],\"radius\":0.25}},\"a\":{"
                         "\"sphere\":{\"center\":[0,0.5,0],\"radius\":1}}}}");
    uint64_t r2 = mutate(m, "scene.remove", "{\"scene\":\"s\",\"ids\":[\"b\",\"zz\"]}");
    /* Both were sent to w before its ping's reply: queued by the call. */
    call_expect(w, "ping", NULL, "{\"pong\":true}");
    assert_int_equal(rp_client_notifications_queued(w), 2);
    /* The same through the cJSON variant and a call that fails. */
    uint64_t r3 = mutate(m, "scene.replace",
                         "{\"scene\":\"s\",\"shapes\":{\"c\":{\"sphere\":{"
                         "\"center\":[1,2,3],\"radius\":0.5}}}}");
    cJSON *result = NULL;
    assert_int_equal(rp_client_call_cjson(w, "ping", NULL, &result, &err), RP_CLIENT_OK);
    cJSON_Delete(result);
    assert_int_equal(rp_client_notifications_queued(w), 3);
    uint64_t r4 = mutate(m, "scene.put", "{\"scene\":\"s\",\"shapes\":{}}");
    assert_int_equal(rp_client_call(w, "scene.get", "{}", NULL, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32602);
    assert_int_equal(rp_client_notifications_queued(w), 4);

    next_note(w, &n);
    expect_note(&n, "scene.changed", id, "s", r1);
    /* put: ids sorted, shapes as the server prints them. */
    assert_string_equal(n.put, "{\"a\":{\"sphere\":{\"center\":[0,0.5,0],\"radius\":1}},\"b\":{"
                               "\"capsule\":{\"a\":[0,0,0],\"b\":[1,0,0],\"radius\":0.25}}}");
    assert_string_equal(n.removed, "[]");
    rp_client_notification_free(&n);
    assert_null(n.method);
    next_note(w, &n);
    expect_note(&n, "scene.changed", id, "s", r2);
    assert_string_equal(n.put, "{}");
    assert_string_equal(n.removed, "[\"b\"]");
    rp_client_notification_free(&n);
    next_note(w, &n);
    expect_note(&n, "scene.changed", id, "s", r3);
    assert_string_equal(n.put, "{\"c\":{\"sphere\":{\"center\":[1,2,3],\"radius\":0.5}}}");
    assert_string_equal(n.removed, "[\"a\"]");
    rp_client_notification_free(&n);
    next_note(w, &n);
    expect_note(&n, "scene.changed", id, "s", r4);
    rp_client_notification_free(&n);
    assert_int_equal(rp_client_notifications_queued(w), 0);

    /* Read from the socket when nothing is queued; w's own mutation: its
     * reply, then the notification. */
    uint64_t r5 = mutate(w, "scene.remove", "{\"scene\":\"s\",\"ids\":[\"c\"]}");
    next_note(w, &n);
    expect_note(&n, "scene.changed", id, "s", r5);
    rp_client_notification_free(&n);

    /* since: a second watch replays r3.. (after r2); then unwatch the first. */
    uint64_t id2 = 0;
    assert_int_equal(rp_client_scene_watch(w, "s", &r2, &id2, &rev, &err), RP_CLIENT_OK);
    assert_true(id2 > id);
    assert_int_equal(rev, r5);
    const uint64_t replayed[] = {r3, r4, r5};
    for (int k = 0; k < 3; k++) {
        next_note(w, &n);
        expect_note(&n, "scene.changed", id2, "s", replayed[k]);
        rp_client_notification_free(&n);
    }
    assert_int_equal(rp_client_scene_unwatch(w, id, &err), RP_CLIENT_OK);
    assert_int_equal(rp_client_scene_unwatch(w, id, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32001);
    assert_non_null(strstr(err.data, "\"watch\""));
    /* since in the future: scene.resync. */
    uint64_t future = r5 + 1000, id3 = 0;
    assert_int_equal(rp_client_scene_watch(w, "s", &future, &id3, NULL, &err), RP_CLIENT_OK);
    next_note(w, &n);
    expect_note(&n, "scene.resync", id3, "s", r5);
    rp_client_notification_free(&n);
    assert_int_equal(rp_client_scene_unwatch(w, id3, &err), RP_CLIENT_OK);
    /* The scene goes: scene.deleted for the watch left. */
    uint64_t gone = mutate(m, "scene.delete", "{\"scene\":\"s\"}");
    next_note(w, &n);
    expect_note(&n, "scene.deleted", id2, "s", gone);
    rp_client_notification_free(&n);
    assert_int_equal(rp_client_scene_watch(w, "s", NULL, &id, &rev, &err), RP_CLIENT_RPC);
    assert_int_equal(err.code, -32001);
    assert_int_equal(id, 0);
    assert_int_equal(rp_client_scene_watch(w, "bad\xff", NULL, NULL, NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_scene_watch(w, NULL, NULL, NULL, NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_next_notification(w, 0, NULL, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_next_notification(NULL, 0, &n, &err), RP_CLIENT_ARG);
    call_expect(w, "ping", NULL, "{\"pong\":true}");
    rp_client_error_free(&err);
    rp_client_close(w);
    rp_client_close(m);
    assert_int_equal(rh_stop(d, rh_ms(RH_TIMEOUT_MS)), 0);
}

/* With pipelined replies outstanding, rp_client_recv queues the
 * notifications that come first; rp_client_next_notification hands out what
 * is queued and refuses to read past replies not yet received. */
static void notifications_before_pipelined_replies_are_queued_by_recv(void **state)
{
    (void)state;
    rh_daemon *d = start_daemon(NULL);
    rp_client *w = connect_to(d, false), *m = connect_to(d, false);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client_notification n = RP_CLIENT_NOTIFICATION_INIT;
    mutate(m, "scene.create", "{\"scene\":\"s\"}");
    uint64_t id = 0;
    assert_int_equal(rp_client_scene_watch(w, "s", NULL, &id, NULL, &err), RP_CLIENT_OK);
    uint64_t r1 = mutate(m, "scene.put",
                         "{\"scene\":\"s\",\"shapes\":{\"a\":{\"sphere\":{"
                         "\"center\":[0,0,0],\"radius\":1}}}}");
    uint64_t p1 = 0, p2 = 0, got = 0;
    assert_int_equal(rp_client_send(w, "ping", NULL, &p1, &err), RP_CLIENT_OK);
    assert_int_equal(rp_client_send(w, "ping", NULL, &p2, &err), RP_CLIENT_OK);
    assert_int_equal(rp_client_next_notification(w, 0, &n, &err), RP_CLIENT_ARG);
    char *result = NULL;
    assert_int_equal(rp_client_recv(w, &got, &result, &err), RP_CLIENT_OK);
    assert_int_equal(got, p1);
    assert_string_equal(result, "{\"pong\":true}");
    free(result);
    /* r1 came before the first pong: queued, and handed out now. */
    assert_int_equal(rp_client_notifications_queued(w), 1);
    next_note(w, &n);
    expect_note(&n, "scene.changed", id, "s", r1);
    rp_client_notification_free(&n);
    assert_int_equal(rp_client_next_notification(w, 0, &n, &err), RP_CLIENT_ARG);
    assert_int_equal(rp_client_recv(w, &got, &result, &err), RP_CLIENT_OK);
    assert_int_equal(got, p2);
    free(result);
    assert_int_equal(rp_client_next_notification(w, 0, &n, &err), RP_CLIENT_TIMEOUT);
    rp_client_error_free(&err);
    rp_client_close(w);
    rp_client_close(m);
    assert_int_equal(rh_stop(d, rh_ms(RH_TIMEOUT_MS)), 0);
}

/* Notification lines from a fake server: one of a method the client does
 * not know is handed out as it is, and a scene.* one with its members. */
static void notifications_of_unknown_methods_are_handed_out_as_they_are(void **state)
{
    (void)state;
    static const char unknown[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"scene.later\",\"params\":[1,{\"watch\":2}]}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"scene.resync\",\"params\":{\"revision\":7,\"watch\":3,"
        "\"scene\":\"x\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pong\":true}}\n";
    fake_fixed_reply = unknown;
    fake_fixed_len = sizeof unknown - 1;
    fake_server f;
    fake_start(&f, FAKE_FIXED);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client_notification n = RP_CLIENT_NOTIFICATION_INIT;
    rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    char *result = NULL;
    assert_int_equal(rp_client_call(c, "ping", NULL, &result, &err), RP_CLIENT_OK);
    assert_string_equal(result, "{\"pong\":true}");
    free(result);
    assert_int_equal(rp_client_notifications_queued(c), 2);
    next_note(c, &n);
    assert_string_equal(n.method, "scene.later");
    assert_int_equal(n.watch, 0);
    assert_null(n.scene);
    assert_string_equal(n.params, "[1,{\"watch\":2}]");
    rp_client_notification_free(&n);
    next_note(c, &n);
    assert_string_equal(n.method, "scene.resync");
    assert_int_equal(n.watch, 3);
    assert_int_equal(n.revision, 7);
    assert_string_equal(n.scene, "x");
    rp_client_notification_free(&n);
    rp_client_error_free(&err);
    rp_client_close(c);
    fake_stop(&f);
}

/* A scene.changed without its revision, before the reply: a protocol
 * error, and the connection is closed. */
static void scene_notification_without_its_members_is_protocol_error(void **state)
{
    (void)state;
    static const char bad[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"scene.changed\",\"params\":{\"watch\":1,\"scene\":"
        "\"s\",\"put\":{},\"removed\":[]}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pong\":true}}\n";
    fake_fixed_reply = bad;
    fake_fixed_len = sizeof bad - 1;
    fake_server f;
    fake_start(&f, FAKE_FIXED);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_PROTOCOL);
    assert_non_null(strstr(err.message, "scene.changed"));
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_CLOSED);
    rp_client_error_free(&err);
    rp_client_close(c);
    fake_stop(&f);
}

/* Replies to one ping, twice: the second is a reply nobody waits for, a
 * protocol error where a notification was wanted. */
static void reply_nobody_asked_for_is_protocol_error(void **state)
{
    (void)state;
    static const char twice[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pong\":true}}\n"
                                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pong\":true}}\n";
    fake_fixed_reply = twice;
    fake_fixed_len = sizeof twice - 1;
    fake_server f;
    fake_start(&f, FAKE_FIXED);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client_notification n = RP_CLIENT_NOTIFICATION_INIT;
    rp_client *c = rp_client_connect_unix(f.path, rh_ms(RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    assert_int_equal(rp_client_call(c, "ping", NULL, NULL, &err), RP_CLIENT_OK);
    assert_int_equal(rp_client_next_notification(c, rh_ms(RH_TIMEOUT_MS), &n, &err),
                     RP_CLIENT_PROTOCOL);
    assert_non_null(strstr(err.message, "not a notification"));
    assert_null(n.method);
    rp_client_error_free(&err);
    rp_client_close(c);
    fake_stop(&f);
}

int main(int argc, char **argv)
{
    if (!rh_init(argc, argv))
        return 2;
    const struct CMUnitTest tests[] = {
        /* calls that work */
        cmocka_unit_test_teardown(ping_and_scene_roundtrip_over_unix, rh_teardown),
        cmocka_unit_test_teardown(ping_and_scene_roundtrip_over_tcp, rh_teardown),
        /* store-wide revisions */
        cmocka_unit_test_teardown(
            scene_replace_swaps_the_content_and_conflicts_are_rpc_errors_with_data, rh_teardown),
        cmocka_unit_test_teardown(deletions_report_the_revision_they_took, rh_teardown),
        cmocka_unit_test_teardown(pipelined_mutations_of_two_scenes_take_consecutive_revisions,
                                  rh_teardown),
        /* connection errors */
        cmocka_unit_test_teardown(missing_socket_path_is_connect_error, rh_teardown),
        cmocka_unit_test_teardown(closed_tcp_port_is_connect_error, rh_teardown),
        /* errors of a call */
        cmocka_unit_test_teardown(rpc_error_has_code_message_and_data_and_keeps_the_connection,
                                  rh_teardown),
        cmocka_unit_test_teardown(bad_arguments_are_arg_errors_and_send_nothing, rh_teardown),
        cmocka_unit_test_teardown(overlong_request_is_rpc_error_then_closed, rh_teardown),
        /* servers that misbehave */
        cmocka_unit_test_teardown(server_that_closes_gives_closed, rh_teardown),
        cmocka_unit_test_teardown(garbage_reply_gives_protocol_error, rh_teardown),
        cmocka_unit_test_teardown(mismatched_reply_id_gives_protocol_error, rh_teardown),
        cmocka_unit_test_teardown(replies_are_read_the_way_cjson_reads_them, rh_teardown),
        cmocka_unit_test_teardown(long_messages_are_cut_between_characters, rh_teardown),
        cmocka_unit_test_teardown(silent_server_gives_timeout, rh_teardown),
        /* pipelining */
        cmocka_unit_test_teardown(pipelining_1000_requests_replies_in_order_unix, rh_teardown),
        cmocka_unit_test_teardown(pipelining_1000_requests_replies_in_order_tcp, rh_teardown),
        cmocka_unit_test_teardown(pipelining_large_replies_does_not_deadlock, rh_teardown),
        /* the daemon going away */
        cmocka_unit_test_teardown(daemon_gone_next_call_fails_cleanly_unix, rh_teardown),
        cmocka_unit_test_teardown(daemon_gone_next_call_fails_cleanly_tcp, rh_teardown),
        cmocka_unit_test_teardown(raw_lines_pass_through_until_the_server_closes, rh_teardown),
        /* auth and the environment */
        cmocka_unit_test_teardown(auth_over_tcp_with_the_right_token, rh_teardown),
        cmocka_unit_test_teardown(default_unix_path_follows_repose_socket, rh_teardown),
        cmocka_unit_test_teardown(auth_file_reads_the_token_and_repose_token_file, rh_teardown),
        /* kinematic helpers: model.put from URDF, model.fk, model.get */
        cmocka_unit_test_teardown(model_fk_puts_the_hand_where_the_ready_pose_has_it, rh_teardown),
        cmocka_unit_test_teardown(model_put_urdf_takes_no_srdf_and_refusals_name_the_path,
                                  rh_teardown),
        cmocka_unit_test_teardown(model_put_urdf_refuses_bad_arguments_without_sending,
                                  rh_teardown),
        cmocka_unit_test_teardown(model_get_lists_the_joints_of_the_model_the_helper_put,
                                  rh_teardown),
        /* kinematic helpers: check, check.batch, check.motion */
        cmocka_unit_test_teardown(check_joints_gives_known_answers_against_a_ball_in_the_hand,
                                  rh_teardown),
        cmocka_unit_test_teardown(check_joints_sends_every_digit_so_limits_hold_to_the_last_bit,
                                  rh_teardown),
        cmocka_unit_test_teardown(check_joints_with_nothing_to_measure_gives_infinite_distance,
                                  rh_teardown),
        cmocka_unit_test_teardown(check_batch_joints_gives_each_configurations_validity,
                                  rh_teardown),
        cmocka_unit_test_teardown(check_motion_finds_where_a_path_is_blocked_in_both_modes,
                                  rh_teardown),
        cmocka_unit_test_teardown(check_motion_resolution_bounds_the_discrete_steps, rh_teardown),
        cmocka_unit_test_teardown(plan_goes_around_the_ball_and_every_edge_is_clear, rh_teardown),
        cmocka_unit_test_teardown(planner_options_reach_the_daemon, rh_teardown),
        cmocka_unit_test_teardown(check_motion_refuses_bad_resolutions_modes_and_paths,
                                  rh_teardown),
        /* kinematic helpers: errors */
        cmocka_unit_test_teardown(helpers_report_unknown_models_and_scenes_as_not_found,
                                  rh_teardown),
        cmocka_unit_test_teardown(helpers_report_wrong_joint_counts_with_the_path, rh_teardown),
        cmocka_unit_test_teardown(helpers_refuse_nan_and_infinite_values_naming_the_element,
                                  rh_teardown),
        cmocka_unit_test_teardown(helpers_refuse_null_and_non_utf8_arguments_without_sending,
                                  rh_teardown),
        cmocka_unit_test_teardown(helper_result_without_its_members_is_protocol_error, rh_teardown),
        /* objects */
        cmocka_unit_test_teardown(scene_move_sends_every_digit_and_one_revision_for_all,
                                  rh_teardown),
        cmocka_unit_test_teardown(scene_move_robots_sends_every_digit_with_objects_in_one_revision,
                                  rh_teardown),
        /* point clouds */
        cmocka_unit_test_teardown(scene_put_cloud_sends_every_bit_and_names_spheres_cloud_k,
                                  rh_teardown),
        cmocka_unit_test_teardown(scene_put_cloud_of_many_points_round_trips, rh_teardown),
        /* watch notifications */
        cmocka_unit_test_teardown(notifications_are_queued_between_replies, rh_teardown),
        cmocka_unit_test_teardown(notifications_before_pipelined_replies_are_queued_by_recv,
                                  rh_teardown),
        cmocka_unit_test_teardown(notifications_of_unknown_methods_are_handed_out_as_they_are,
                                  rh_teardown),
        cmocka_unit_test_teardown(scene_notification_without_its_members_is_protocol_error,
                                  rh_teardown),
        cmocka_unit_test_teardown(reply_nobody_asked_for_is_protocol_error, rh_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
