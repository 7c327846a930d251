/*
 * Client library tests: include/repose/client.h against the real reposed
 * (started by tests/integration/harness.h) and against tiny fake servers
 * (forked children on a Unix socket) that misbehave on purpose.
 *
 * Usage: test_client PATH-TO-REPOSED
 *
 * Timeouts are guards against hangs only; no test asserts a duration.  The
 * one test that needs a timeout to fire uses a short one against a server
 * that never answers, and checks only the kind of error.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
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
    assert_int_equal(rp_client_call(c, "scene.get", "{\x01\"scene\"\f:\v\"a\nb\tc\x1f\"}", NULL,
                                    &err),
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
        {LINE("{\"jsonrpc\":\"2.0\",\"id\":1,\"res\\u0075lt\":{\"pong\":true}}\n"),
         RP_CLIENT_OK, "{\"pong\":true}", 0},
        /* cJSON takes the first "result", escaped or not (was: the second). */
        {LINE("{\"jsonrpc\":\"2.0\",\"id\":1,\"res\\u0075lt\":1,\"result\":2}\n"),
         RP_CLIENT_OK, "1", 0},
        /* cJSON skips every byte up to 0x20 as whitespace, and a BOM. */
        {LINE("{\f\"jsonrpc\":\"2.0\",\v\"id\":1,\"result\":\x01[1, 2]\x1f}\n"),
         RP_CLIENT_OK, "[1, 2]", 0},
        {LINE("\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":true}\n"), RP_CLIENT_OK,
         "true", 0},
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

int main(int argc, char **argv)
{
    if (!rh_init(argc, argv))
        return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(ping_and_scene_roundtrip_over_unix, rh_teardown),
        cmocka_unit_test_teardown(ping_and_scene_roundtrip_over_tcp, rh_teardown),
        cmocka_unit_test_teardown(missing_socket_path_is_connect_error, rh_teardown),
        cmocka_unit_test_teardown(closed_tcp_port_is_connect_error, rh_teardown),
        cmocka_unit_test_teardown(rpc_error_has_code_message_and_data_and_keeps_the_connection,
                                  rh_teardown),
        cmocka_unit_test_teardown(bad_arguments_are_arg_errors_and_send_nothing, rh_teardown),
        cmocka_unit_test_teardown(overlong_request_is_rpc_error_then_closed, rh_teardown),
        cmocka_unit_test_teardown(server_that_closes_gives_closed, rh_teardown),
        cmocka_unit_test_teardown(garbage_reply_gives_protocol_error, rh_teardown),
        cmocka_unit_test_teardown(mismatched_reply_id_gives_protocol_error, rh_teardown),
        cmocka_unit_test_teardown(replies_are_read_the_way_cjson_reads_them, rh_teardown),
        cmocka_unit_test_teardown(long_messages_are_cut_between_characters, rh_teardown),
        cmocka_unit_test_teardown(silent_server_gives_timeout, rh_teardown),
        cmocka_unit_test_teardown(pipelining_1000_requests_replies_in_order_unix, rh_teardown),
        cmocka_unit_test_teardown(pipelining_1000_requests_replies_in_order_tcp, rh_teardown),
        cmocka_unit_test_teardown(pipelining_large_replies_does_not_deadlock, rh_teardown),
        cmocka_unit_test_teardown(daemon_gone_next_call_fails_cleanly_unix, rh_teardown),
        cmocka_unit_test_teardown(daemon_gone_next_call_fails_cleanly_tcp, rh_teardown),
        cmocka_unit_test_teardown(raw_lines_pass_through_until_the_server_closes, rh_teardown),
        cmocka_unit_test_teardown(auth_over_tcp_with_the_right_token, rh_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
