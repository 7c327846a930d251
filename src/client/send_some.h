/* SPDX-License-Identifier: MIT */
/*
 * One step of writing a request to a stream socket, shared by the client
 * library (client.c, which reads replies while the socket is full) and the
 * test harness (tests/integration/harness.c, which only waits, so that the
 * daemon's backpressure can be tested): send until everything is gone or
 * the socket would block.  Header-only, so the harness needs no link
 * against the client library.
 */
#ifndef REPOSE_CLIENT_SEND_SOME_H
#define REPOSE_CLIENT_SEND_SOME_H

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* BSDs: SO_NOSIGPIPE is set on the socket instead */
#endif

/* Sends from *p until the *n bytes are gone or the socket is full,
 * retrying on EINTR, and advances *p and *n past what went out.  Returns 0
 * when all was sent, EAGAIN when the socket is full (or took nothing: the
 * caller waits for POLLOUT and calls again), else the errno of the
 * failure (EPIPE and ECONNRESET when the peer is gone). */
static inline int rp_send_some(int fd, const char **p, size_t *n)
{
    while (*n > 0) {
        ssize_t w = send(fd, *p, *n, MSG_NOSIGNAL);
        if (w > 0) {
            *p += w;
            *n -= (size_t)w;
            continue;
        }
        if (w == 0 || errno == EAGAIN || errno == EWOULDBLOCK)
            return EAGAIN;
        if (errno != EINTR)
            return errno;
    }
    return 0;
}

#endif /* REPOSE_CLIENT_SEND_SOME_H */
