/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the --http input path (src/server/http/http.c with
 * libwebsockets' HTTP parser under it), over a real TCP connection on a
 * libuv loop, as the daemon runs it.
 *
 * The first byte chooses whether the daemon has a token ("s3cret"; bit
 * 0), how the rest is sent (bit 1: in pieces of 1 + (byte % 61) bytes
 * with the loop run between them, else whole), and whether a WebSocket is
 * opened on /ws first, the rest then being its frames (bit 2; the
 * bridge's daemon end is held open and unanswered).  The rest goes to a fresh
 * connection to the listener, whose write side is then shut; the loop runs
 * until the server has closed the connection or a step budget is spent.
 * Invariants:
 *
 *  - whatever came back starts with "HTTP/1.1 " (or "HTTP/1.0 ", to a
 *    1.0 request) and a three-digit status,
 *    or is empty (lws may close a connection it cannot parse without
 *    answering);
 *  - when the daemon has a token, no answer carries the metrics (a body
 *    starting "# HELP") unless the input holds "Bearer s3cret";
 *  - after every input, the listener still answers a well-formed GET
 *    /healthz with 200 (checked on every 16th input and the first);
 *  - no open HTTP connection is left once the loop has run them out (the
 *    count /metrics reports, rpd_http_open).
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "server/core/core.h"
#include "server/core/log.h"
#include "server/http/http.h"
#include "server/protocol/rpc.h"

static uv_loop_t loop;
static rpd_core core;
static rpd_http *http;
static int port;
static char token[] = "s3cret";

static bool always_ready(void *ctx, char *why, size_t cap)
{
    (void)ctx;
    (void)why;
    (void)cap;
    return true;
}

/* /ws: the daemon's ends of the bridges, held open (nothing answers)
 * until the input is done, then closed. */
static int held[64];
static size_t n_held;

static void hold_ws(void *ctx, int fd)
{
    (void)ctx;
    if (n_held < sizeof held / sizeof held[0])
        held[n_held++] = fd;
    else
        close(fd);
}

static void setup(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    FUZZ_CHECK(uv_loop_init(&loop) == 0, "uv_loop_init");
    FUZZ_CHECK(rpd_core_init(&core, NULL), "rpd_core_init");
    /* The kernel picks the port; the listening line on stderr says which. */
    int fds[2];
    FUZZ_CHECK(pipe(fds) == 0, "pipe");
    int saved = dup(2);
    dup2(fds[1], 2);
    rpd_http_config cfg = {"127.0.0.1:0", false, always_ready, NULL, hold_ws, NULL, NULL, NULL};
    bool ok = rpd_http_start(&loop, &core, &cfg, &http);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fds[1]);
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    FUZZ_CHECK(ok && n > 0, "rpd_http_start");
    buf[n] = '\0';
    const char *at = strstr(buf, "listening on http 127.0.0.1:");
    FUZZ_CHECK(at != NULL, "no listening line: %s", buf);
    port = atoi(at + strlen("listening on http 127.0.0.1:"));
    FUZZ_CHECK(port > 0, "port");
    rpd_log_set_level(RPD_LOG_ERROR); /* lws' warnings about bad input: not needed */
}

static int connect_client(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    FUZZ_CHECK(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    FUZZ_CHECK(rc == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
    return fd;
}

/* Runs the loop and reads what the server sends until it closes the
 * connection (true) or the budget is spent (false). */
static bool pump(int fd, char *got, size_t cap, size_t *len, int steps)
{
    for (int i = 0; i < steps; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 1) > 0) {
            char buf[4096];
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                return true;
            if (n > 0) {
                size_t k = (size_t)n < cap - *len ? (size_t)n : cap - *len;
                memcpy(got + *len, buf, k);
                *len += k;
            }
        }
    }
    return false;
}

static void send_all(int fd, const uint8_t *d, size_t n, size_t piece, char *got, size_t cap,
                     size_t *len)
{
    size_t off = 0;
    int spins = 0;
    while (off < n && spins < 20000) {
        size_t k = n - off < piece ? n - off : piece;
        ssize_t w = send(fd, d + off, k, MSG_NOSIGNAL);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EINTR && errno != ENOTCONN)
            return; /* the server closed it */
        spins++;
        (void)pump(fd, got, cap, len, 1);
    }
}

/* Whether the input holds the token after "Bearer " anywhere. */
static bool has_token(const uint8_t *d, size_t n)
{
    static const char want[] = "Bearer s3cret";
    for (size_t i = 0; i + sizeof want - 1 <= n; i++)
        if (memcmp(d + i, want, sizeof want - 1) == 0)
            return true;
    return false;
}

static void check_answer(const char *got, size_t len, bool tokened)
{
    if (len == 0)
        return;
    FUZZ_CHECK(len >= 12 &&
                   (memcmp(got, "HTTP/1.1 ", 9) == 0 || memcmp(got, "HTTP/1.0 ", 9) == 0) &&
                   got[9] >= '1' && got[9] <= '5' && got[10] >= '0' && got[10] <= '9' &&
                   got[11] >= '0' && got[11] <= '9',
               "not an HTTP/1.x status line: %.40s", got);
    if (tokened && memcmp(got + 9, "200", 3) == 0) {
        const char *body = NULL;
        for (size_t i = 0; i + 4 <= len; i++)
            if (memcmp(got + i, "\r\n\r\n", 4) == 0) {
                body = got + i + 4;
                break;
            }
        FUZZ_CHECK(!body || (size_t)(got + len - body) < 6 || memcmp(body, "# HELP", 6) != 0,
                   "metrics without the token");
    }
}

static void healthz_answers(void)
{
    int fd = connect_client();
    static const char req[] =
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    char got[4096];
    size_t len = 0;
    send_all(fd, (const uint8_t *)req, sizeof req - 1, sizeof req, got, sizeof got, &len);
    bool closed = pump(fd, got, sizeof got, &len, 2000);
    close(fd);
    FUZZ_CHECK(closed && len >= 12 && memcmp(got, "HTTP/1.1 200", 12) == 0,
               "/healthz after an input: %.*s", (int)(len < 60 ? len : 60), got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size == 0 || size > 65536)
        return 0;
    static unsigned runs;
    bool tokened = data[0] & 1;
    size_t piece = data[0] & 2 ? 1 + (size_t)(data[0] % 61) : size;
    core.token = tokened ? token : NULL;
    core.token_len = tokened ? strlen(token) : 0;
    int fd = connect_client();
    static char got[65536];
    size_t len = 0;
    bool ws = data[0] & 4;
    if (ws) {
        /* A WebSocket opened first; the input is then its frames. */
        static const char up[] = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                                 "Connection: Upgrade\r\n"
                                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                 "Sec-WebSocket-Version: 13\r\n\r\n";
        send_all(fd, (const uint8_t *)up, sizeof up - 1, sizeof up, got, sizeof got, &len);
        for (int i = 0; i < 2000 && len < 12; i++)
            (void)pump(fd, got, sizeof got, &len, 1);
        FUZZ_CHECK(len >= 12 && memcmp(got, "HTTP/1.1 101", 12) == 0,
                   "the WebSocket upgrade was not taken: %.*s", (int)(len < 60 ? len : 60), got);
    }
    send_all(fd, data + 1, size - 1, piece, got, sizeof got, &len);
    shutdown(fd, SHUT_WR);
    (void)pump(fd, got, sizeof got, &len, 3000);
    close(fd);
    for (size_t i = 0; i < n_held; i++)
        close(held[i]);
    n_held = 0;
    /* The server sees the close and drops the connection. */
    for (int i = 0; i < 2000 && rpd_http_open(http) > 0; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (i > 20) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
    FUZZ_CHECK(rpd_http_open(http) == 0, "%llu HTTP connections left open",
               (unsigned long long)rpd_http_open(http));
    check_answer(got, len, tokened && !has_token(data + 1, size - 1) && !ws);
    if (runs++ % 16 == 0) {
        core.token = NULL;
        healthz_answers();
    }
    return 0;
}
