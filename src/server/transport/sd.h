/* SPDX-License-Identifier: MIT */
/*
 * systemd integration without libsystemd: the readiness/watchdog
 * notification protocol (datagrams to $NOTIFY_SOCKET) and socket activation
 * ($LISTEN_PID, $LISTEN_FDS, $LISTEN_FDNAMES).  Both are documented in
 * sd_notify(3) and sd_listen_fds(3); everything here is a no-op when the
 * variables are not set, so reposed behaves the same outside systemd.
 */
#ifndef REPOSE_SERVER_SD_H
#define REPOSE_SERVER_SD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

/* Passed file descriptors start here (SD_LISTEN_FDS_START). */
#define RPD_SD_LISTEN_FDS_START 3
/* More passed sockets than this is refused as a misconfiguration. */
#define RPD_SD_MAX_FDS 32
/* Names from LISTEN_FDNAMES are kept for logging only; longer ones are
 * truncated to this many bytes. */
#define RPD_SD_MAX_NAME 63

/* The sockets systemd passed us (socket activation). */
typedef struct rpd_sd_fds {
    int n; /* fds RPD_SD_LISTEN_FDS_START .. + n - 1; 0: not activated */
    char names[RPD_SD_MAX_FDS][RPD_SD_MAX_NAME + 1]; /* "" when not named */
} rpd_sd_fds;

/* Reads the socket-activation variables.  When LISTEN_PID is our pid and
 * LISTEN_FDS > 0, fills *out, marks the fds close-on-exec and returns n > 0;
 * returns 0 when we were not socket-activated and -1 (logged) when the
 * variables are malformed or name more than RPD_SD_MAX_FDS sockets.  Either
 * way LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are removed from the
 * environment, so that they cannot be misread later.  Call once, early. */
int rpd_sd_listen_fds(rpd_sd_fds *out);

/* Sends STATE (newline-separated "KEY=VALUE" assignments such as
 * "READY=1\nSTATUS=listening") to $NOTIFY_SOCKET, an absolute path or an
 * abstract socket name written with a leading '@'.  Returns 1 when sent,
 * 0 when NOTIFY_SOCKET is unset (nothing to do), a negative errno value on
 * failure (not logged: the caller knows how loud to be).  Blocking, but a
 * datagram to systemd's socket does not wait. */
int rpd_sd_notify(const char *state);

/* The watchdog interval systemd asks for: half of $WATCHDOG_USEC in
 * milliseconds (at least 1), when NOTIFY_SOCKET and WATCHDOG_USEC are set
 * and WATCHDOG_PID is unset or our pid; otherwise 0 (no watchdog). */
uint64_t rpd_sd_watchdog_interval_ms(void);

/* ---- the parsing inside the calls above, on strings only (no environment,
 * fds or sockets), for tests/fuzz/fuzz_sd_env.c ---- */

/* Parses s (NULL: unset) as a whole decimal number: digits only, at least
 * one, at most ULLONG_MAX.  False (and *out untouched) otherwise. */
bool rpd_sd_parse_ulong(const char *s, unsigned long long *out);

/* What the socket-activation variables say. */
typedef enum rpd_sd_listen_env {
    RPD_SD_LISTEN_UNSET,     /* LISTEN_PID or LISTEN_FDS unset: not activated */
    RPD_SD_LISTEN_OTHER_PID, /* LISTEN_PID is not pid: meant for another process */
    RPD_SD_LISTEN_BAD_COUNT, /* LISTEN_FDS not a number of at most RPD_SD_MAX_FDS */
    RPD_SD_LISTEN_OK         /* *out holds the count and the names */
} rpd_sd_listen_env;

/* Reads LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES (each NULL when unset) for
 * the process pid.  Zeroes *out; with RPD_SD_LISTEN_OK, out->n is the count
 * and out->names[i] the i-th ':'-separated name (cut to RPD_SD_MAX_NAME
 * bytes; "" past the last name). */
rpd_sd_listen_env rpd_sd_parse_listen(const char *pid_s, const char *fds_s, const char *names,
                                      unsigned long long pid, rpd_sd_fds *out);

/* The address of NOTIFY_SOCKET path (non-empty): an absolute path, or
 * '@name' for the abstract socket "\0name".  Fills *sa and *salen and
 * returns 0, or -EAFNOSUPPORT for anything else or a path too long for
 * sun_path. */
int rpd_sd_notify_address(const char *path, struct sockaddr_un *sa, socklen_t *salen);

/* rpd_sd_watchdog_interval_ms for the given NOTIFY_SOCKET, WATCHDOG_USEC
 * and WATCHDOG_PID (each NULL when unset) and process pid. */
uint64_t rpd_sd_watchdog_ms(const char *notify, const char *usec_s, const char *wpid_s,
                            unsigned long long pid);

#endif /* REPOSE_SERVER_SD_H */
