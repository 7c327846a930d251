/* SPDX-License-Identifier: MIT */
/* reposed: command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/persistence/durable.h"
#include "server/core/log.h"
#include "sd.h"
#include "server.h"

static void usage(FILE *to)
{
    fprintf(to,
            "usage: reposed [options]\n"
            "\n"
            "Keeps named scenes of spheres, capsules, boxes and half-spaces in memory and\n"
            "answers distance and margin queries over JSON-RPC 2.0 (one JSON object per\n"
            "line).\n"
            "\n"
            "  --unix PATH|none                Unix socket (default %s, mode 0660)\n"
            "  --tcp HOST:PORT|none            TCP listener (default %s; port 0 = any\n"
            "                                  free port, printed at start)\n"
            "  --token-file PATH               TCP clients must call auth with the token in\n"
            "                                  PATH (one line; not world-readable)\n"
            "  --insecure-tcp                  allow a non-loopback --tcp address without a\n"
            "                                  token\n"
            "  --http HOST:PORT|none           HTTP listener: GET /metrics (Prometheus; the\n"
            "                                  token as Authorization: Bearer) and GET\n"
            "                                  /healthz (default none; port 0 = any)\n"
            "  --insecure-http                 allow a non-loopback --http address\n"
            "  --log-level LEVEL               error, warn, info (default) or debug\n"
            "  --log-format FORMAT             text (default) or json: one JSON object a line\n"
            "  --threads N                     worker threads for queries (default: one per\n"
            "                                  CPU, at most %d; 0 runs them on the event loop)\n"
            "  --data-dir DIR                  keep the store on disk in DIR (created if\n"
            "                                  missing): a journal of every mutation,\n"
            "                                  replayed at start (default: memory only)\n"
            "  --fsync always|everysec|no      with --data-dir: fsync the journal before\n"
            "                                  each reply, once a second (default), or\n"
            "                                  never (the kernel decides)\n"
            "  --snapshot-after BYTES          with --data-dir: write a snapshot in the\n"
            "                                  background once the journal is this large\n"
            "                                  and larger than the last snapshot (default\n"
            "                                  64 MiB)\n"
            "  --repair                        start even when the journal is corrupt (cut\n"
            "                                  where the damage starts), cut short, missing or\n"
            "                                  another snapshot's (start from the snapshot);\n"
            "                                  the refusal says what this drops\n"
            "  --nats URL[,URL...]             share the store with other replicas through\n"
            "                                  NATS JetStream (docs/ARCHITECTURE.md,\n"
            "                                  Replicas); needs --store; --data-dir is then\n"
            "                                  a cache of the stream\n"
            "  --store NAME                    with --nats: the store's name (its stream\n"
            "                                  is REPOSE_NAME)\n"
            "  --nats-wait                     with --nats: when NATS or the stream cannot be\n"
            "                                  reached at start, try again every second\n"
            "                                  (default: exit 1)\n"
            "  --snapshot-publish N            with --nats: publish a snapshot of the store\n"
            "                                  every N stream messages (0: never, the\n"
            "                                  default), for replicas that join after the\n"
            "                                  stream was trimmed\n"
            "  --nats-trim KEEP                with --snapshot-publish: after each snapshot,\n"
            "                                  trim the stream but for its last KEEP\n"
            "                                  messages before it (0: never, the default)\n"
            "  --nats-copies N                 with --nats: the stream's replicas when this\n"
            "                                  replica creates it, 1 to 5 (default: as many\n"
            "                                  as the cluster takes, up to 3)\n"
            "  --nats-creds FILE               with --nats: a NATS credentials file\n"
            "  --nats-tls-ca FILE              with --nats: verify the servers with these CAs\n"
            "  --nats-tls-cert FILE, --nats-tls-key FILE\n"
            "                                  with --nats: a client certificate\n"
            "  --help                          this text\n"
            "  --version                       print the version\n"
            "\n"
            "Limits (see proto/PROTOCOL.md):\n",
            RPD_DEFAULT_UNIX, RPD_DEFAULT_TCP, RPD_MAX_THREADS);
    rpd_limits_usage(to);
    fprintf(to, "\n"
                "Stops on SIGTERM, SIGINT or SIGQUIT after flushing replies (at most 5 s);\n"
                "SIGHUP, SIGUSR1 and SIGUSR2 are ignored.\n"
                "\n"
                "Under systemd: sockets passed by socket activation (LISTEN_FDS) replace\n"
                "--unix and --tcp; readiness, stopping and watchdog pings are sent to\n"
                "NOTIFY_SOCKET (Type=notify, WatchdogSec=).\n");
}

int main(int argc, char **argv)
{
    rpd_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.unix_path = RPD_DEFAULT_UNIX;
    cfg.tcp = RPD_DEFAULT_TCP;
    cfg.limits = rpd_default_limits();
    cfg.threads = -1; /* one per CPU */
    cfg.fsync = (int)RPD_FSYNC_EVERYSEC;
    bool fsync_given = false, snap_given = false;
    cfg.snapshot_after = RPD_SNAPSHOT_AFTER_DEFAULT;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--insecure-tcp") == 0) {
            cfg.insecure_tcp = true;
            continue;
        }
        if (strcmp(a, "--insecure-http") == 0) {
            cfg.insecure_http = true;
            continue;
        }
        if (strcmp(a, "--repair") == 0) {
            cfg.repair = true;
            continue;
        }
        if (strcmp(a, "--nats-wait") == 0) {
            cfg.nats_wait = true;
            continue;
        }
        if (strcmp(a, "--version") == 0) {
            printf("reposed %s (protocol %d)\n", RPD_VERSION, RPD_PROTOCOL);
            return 0;
        }
        bool takes_value = strcmp(a, "--unix") == 0 || strcmp(a, "--tcp") == 0 ||
                           strcmp(a, "--http") == 0 || strcmp(a, "--log-level") == 0 ||
                           strcmp(a, "--log-format") == 0 || strcmp(a, "--data-dir") == 0 ||
                           strcmp(a, "--fsync") == 0 || strcmp(a, "--token-file") == 0 ||
                           strcmp(a, "--threads") == 0 || strcmp(a, "--snapshot-after") == 0 ||
                           strcmp(a, "--nats") == 0 || strcmp(a, "--store") == 0 ||
                           strcmp(a, "--nats-creds") == 0 || strcmp(a, "--nats-copies") == 0 ||
                           strcmp(a, "--snapshot-publish") == 0 || strcmp(a, "--nats-trim") == 0 ||
                           strcmp(a, "--nats-tls-ca") == 0 || strcmp(a, "--nats-tls-cert") == 0 ||
                           strcmp(a, "--nats-tls-key") == 0;
        if (!v && (takes_value || rpd_limits_is_flag(a))) {
            fprintf(stderr, "reposed: %s needs a value (see --help)\n", a);
            return 2;
        }
        if (!takes_value) {
            int r = v ? rpd_limits_parse_flag(&cfg.limits, a, v) : 0;
            if (r < 0)
                return 2;
            if (r == 0) {
                fprintf(stderr, "reposed: unknown option '%s' (see --help)\n", a);
                return 2;
            }
            i++;
            continue;
        }
        i++;
        if (strcmp(a, "--unix") == 0) {
            cfg.unix_path = strcmp(v, "none") == 0 ? NULL : v;
        } else if (strcmp(a, "--tcp") == 0) {
            cfg.tcp = strcmp(v, "none") == 0 ? NULL : v;
        } else if (strcmp(a, "--http") == 0) {
            cfg.http = strcmp(v, "none") == 0 ? NULL : v;
        } else if (strcmp(a, "--log-level") == 0) {
            int level = rpd_log_parse_level(v);
            if (level < 0) {
                fprintf(stderr, "reposed: --log-level must be error, warn, info or debug\n");
                return 2;
            }
            rpd_log_set_level((rpd_log_level)level);
        } else if (strcmp(a, "--log-format") == 0) {
            int f = rpd_log_parse_format(v);
            if (f < 0) {
                fprintf(stderr, "reposed: --log-format must be text or json\n");
                return 2;
            }
            rpd_log_set_format((rpd_log_format)f);
        } else if (strcmp(a, "--token-file") == 0) {
            cfg.token_file = v;
        } else if (strcmp(a, "--threads") == 0) {
            char *end;
            errno = 0;
            long t = strtol(v, &end, 10);
            if (errno || end == v || *end || t < 0 || t > RPD_MAX_THREADS) {
                fprintf(stderr, "reposed: --threads must be an integer from 0 to %d\n",
                        RPD_MAX_THREADS);
                return 2;
            }
            cfg.threads = (int)t;
        } else if (strcmp(a, "--data-dir") == 0) {
            if (!*v) {
                fprintf(stderr, "reposed: --data-dir needs a directory\n");
                return 2;
            }
            cfg.data_dir = v;
        } else if (strcmp(a, "--nats") == 0) {
            cfg.nats = v;
        } else if (strcmp(a, "--store") == 0) {
            cfg.store = v;
        } else if (strcmp(a, "--snapshot-publish") == 0 || strcmp(a, "--nats-trim") == 0) {
            char *end;
            errno = 0;
            unsigned long long k = strtoull(v, &end, 10);
            if (errno || end == v || *end || *v == '-' || k > (1ull << 50)) {
                fprintf(stderr, "reposed: %s must be a number of messages from 0 to 2^50\n", a);
                return 2;
            }
            if (a[2] == 's')
                cfg.snapshot_publish = k;
            else
                cfg.nats_trim = k;
        } else if (strcmp(a, "--nats-copies") == 0) {
            char *end;
            long k = strtol(v, &end, 10);
            if (end == v || *end || k < 1 || k > 5) {
                fprintf(stderr, "reposed: --nats-copies must be an integer from 1 to 5\n");
                return 2;
            }
            cfg.nats_copies = (int)k;
        } else if (strcmp(a, "--nats-creds") == 0) {
            cfg.nats_creds = v;
        } else if (strcmp(a, "--nats-tls-ca") == 0) {
            cfg.nats_tls_ca = v;
        } else if (strcmp(a, "--nats-tls-cert") == 0) {
            cfg.nats_tls_cert = v;
        } else if (strcmp(a, "--nats-tls-key") == 0) {
            cfg.nats_tls_key = v;
        } else if (strcmp(a, "--snapshot-after") == 0) {
            char *end;
            errno = 0;
            unsigned long long b = strtoull(v, &end, 10);
            if (errno || end == v || *end || *v == '-' || b > (1ull << 50)) {
                fprintf(stderr, "reposed: --snapshot-after must be a number of bytes from 0 to "
                                "2^50\n");
                return 2;
            }
            cfg.snapshot_after = b;
            snap_given = true;
        } else if (strcmp(a, "--fsync") == 0) {
            rpd_fsync f;
            if (!rpd_fsync_parse(v, &f)) {
                fprintf(stderr, "reposed: --fsync must be always, everysec or no\n");
                return 2;
            }
            cfg.fsync = (int)f;
            fsync_given = true;
        } else {
            fprintf(stderr, "reposed: %s is planned but not supported by this version\n", a);
            return 2;
        }
    }
    if (!rpd_limits_check(&cfg.limits, stderr))
        return 2;
    if ((fsync_given || cfg.repair || snap_given) && !cfg.data_dir) {
        fprintf(stderr, "reposed: %s needs --data-dir\n",
                cfg.repair    ? "--repair"
                : fsync_given ? "--fsync"
                              : "--snapshot-after");
        return 2;
    }
    if (cfg.nats_trim && !cfg.snapshot_publish) {
        fprintf(stderr, "reposed: --nats-trim needs --snapshot-publish (a replica that falls "
                        "behind the trimmed stream starts from the published snapshot)\n");
        return 2;
    }
    if ((cfg.store || cfg.nats_creds || cfg.nats_copies || cfg.nats_wait || cfg.snapshot_publish ||
         cfg.nats_tls_ca || cfg.nats_tls_cert || cfg.nats_tls_key) &&
        !cfg.nats) {
        fprintf(stderr, "reposed: --store and the --nats-* options need --nats\n");
        return 2;
    }
    if (cfg.nats && (!cfg.store || !*cfg.nats)) {
        fprintf(stderr, "reposed: --nats needs a URL and --store NAME (the store the replicas "
                        "share)\n");
        return 2;
    }
    if (!cfg.nats_tls_cert != !cfg.nats_tls_key) {
        fprintf(stderr, "reposed: --nats-tls-cert and --nats-tls-key go together\n");
        return 2;
    }
    if (cfg.nats && cfg.data_dir && cfg.fsync == (int)RPD_FSYNC_ALWAYS) {
        /* The stream is a replica's durable copy; its data directory is a
         * cache that lets a restart replay only what it missed. */
        fprintf(stderr, "reposed: --nats with --fsync always: the stream keeps every "
                        "acknowledged mutation; a replica's --data-dir is a cache (everysec or "
                        "no)\n");
        return 2;
    }
    /* Read (and clear) the socket-activation variables once, before anything
     * could start a child that would inherit them. */
    static rpd_sd_fds activation;
    int passed = rpd_sd_listen_fds(&activation);
    if (passed < 0)
        return 1;
    if (passed > 0)
        cfg.activation = &activation;
    else if (!cfg.unix_path && !cfg.tcp) {
        fprintf(stderr, "reposed: both listeners are off (--unix none --tcp none)\n");
        return 2;
    }
    return rpd_server_run(&cfg);
}
