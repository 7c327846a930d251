/* SPDX-License-Identifier: MIT */
/*
 * Client connections (conn.c), as the loop (server.c) drives them.  A
 * connection's state is private to conn.c: its life is one enum
 * (rpd_conn_state, conn.c) with documented transitions.
 */
#ifndef REPOSE_SERVER_CONN_H
#define REPOSE_SERVER_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

typedef struct rpd_server rpd_server;
typedef struct rpd_conn rpd_conn;

/* Accepts a client on `listener`. */
void rpd_conn_accept(rpd_server *srv, uv_stream_t *listener, bool is_tcp);
/* A WebSocket client of --http: fd is the daemon's end of the socket pair
 * http.c bridges the WebSocket's messages through (one message a line).
 * It is a TCP client by the rules (token, timeouts, connection limit) and
 * counts among them.  Takes fd (closed on failure). */
void rpd_conn_adopt_ws(rpd_server *srv, int fd);
/* Closes every connection now (the shutdown grace period is over). */
void rpd_conns_close(rpd_server *srv);
/* Shutdown: every connection stops reading, answers the lines it holds,
 * and closes once its replies are written. */
void rpd_conns_finish(rpd_server *srv);
/* Closes connections that have lingered longer than RPD_LINGER_MS and TCP
 * connections past their idle or auth timeout. */
void rpd_conn_sweep(rpd_server *srv);
/* Runs every connection that yielded its time slice once more; true when
 * some yielded again. */
bool rpd_conns_resume(rpd_server *srv);
/* --nats: applies what the replica queued, in order, answering the
 * connections that wait for their proposals; false when it stopped at its
 * budget with more queued. */
bool rpd_conns_replica_drain(rpd_server *srv);
/* Runs the lines that waited for min_revision whose revision the store
 * reached, or whose max_wait_ms is over (they then answer -32004). */
void rpd_conns_wake_waiters(rpd_server *srv);
/* Sets up the timer behind max_wait_ms (server start; maybe_finish closes
 * it). */
void rpd_conns_wait_timer_init(rpd_server *srv);
/* --fsync always: the connections waiting on journal groups before
 * `epoch` (rpd_durable_group_epoch) learn how they ended; their replies
 * go out, or become -32007 for an undone group. */
void rpd_conns_sync_done(rpd_server *srv, uint64_t epoch);
/* Lets the watch code reach connections (installs rpd_watch_io) and sets
 * up the batching timer; rpd_conn_watch_close closes that timer. */
void rpd_conn_watch_io(rpd_server *srv);
void rpd_conn_watch_close(rpd_server *srv);

#endif /* REPOSE_SERVER_CONN_H */
