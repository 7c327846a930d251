/* SPDX-License-Identifier: MIT */
/*
 * reposed as main.c sees it: the configuration and the call that runs the
 * daemon.  The loop's own state is in server_int.h (server.c and conn.c
 * only); a connection's is private to conn.c (conn.h is its interface).
 */
#ifndef REPOSE_SERVER_SERVER_H
#define REPOSE_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/core/limits.h"
#include "sd.h"

/* Default listeners (protocol v1). */
#define RPD_DEFAULT_TCP "127.0.0.1:7411"
#define RPD_DEFAULT_UNIX "/tmp/reposed.sock"
/* Most worker threads (libuv's thread pool accepts up to 1024). */
#define RPD_MAX_THREADS 256

typedef struct rpd_config {
    const char *unix_path;  /* NULL: no Unix socket */
    const char *tcp;        /* "HOST:PORT"; NULL: no TCP */
    const char *token_file; /* NULL: no auth */
    bool insecure_tcp;      /* allow a non-loopback TCP address without a token */
    const char *http;       /* --http "HOST:PORT": /metrics, /healthz (NULL: off) */
    bool insecure_http;     /* allow a non-loopback --http address */
    /* Sockets passed by systemd; when non-NULL with n > 0 they replace
     * unix_path and tcp.  Borrowed: must outlive rpd_server_run. */
    const rpd_sd_fds *activation;
    rpd_limits limits;
    int threads;             /* worker threads; 0: queries run on the loop; -1: one per CPU */
    const char *data_dir;    /* NULL: memory only */
    int fsync;               /* rpd_fsync (durable.h) */
    bool repair;             /* cut a corrupt journal at the damage instead of refusing */
    uint64_t snapshot_after; /* journal bytes before a background snapshot */
    /* --nats: replicas sharing the store through NATS JetStream (NULL: a
     * lone daemon); the store's name and the client's options. */
    const char *nats, *store, *nats_creds, *nats_tls_ca, *nats_tls_cert, *nats_tls_key;
    int nats_copies; /* the stream's replicas when this replica creates it (0: auto) */
    bool nats_wait;  /* NATS unreachable at start: try again every second instead of exiting */
    uint64_t snapshot_publish; /* publish a snapshot every this many stream messages (0: never) */
    uint64_t nats_trim; /* after one, trim the stream but for this many messages (0: never) */
} rpd_config;

/* Runs the daemon until SIGTERM/SIGINT; returns the process exit code. */
int rpd_server_run(const rpd_config *cfg);

#endif /* REPOSE_SERVER_SERVER_H */
