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

#endif /* REPOSE_SERVER_SD_H */
