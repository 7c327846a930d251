/* SPDX-License-Identifier: MIT */
/*
 * systemd's notification and socket-activation protocols, implemented
 * directly (see sd.h): no libsystemd dependency, no libuv either — the
 * server owns the watchdog timer and the adopted listeners.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/core/log.h"
#include "sd.h"

/* ---- the variables' text (no fds, no sockets, no environment) ---------------------- */

bool rpd_sd_parse_ulong(const char *s, unsigned long long *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* True when s (NULL: unset) is the decimal number pid. */
static bool is_pid(const char *s, unsigned long long pid)
{
    unsigned long long v;
    return rpd_sd_parse_ulong(s, &v) && v == pid;
}

/* Copies the colon-separated LISTEN_FDNAMES entries into out->names. */
static void copy_names(rpd_sd_fds *out, const char *names)
{
    for (int i = 0; i < out->n && names; i++) {
        const char *colon = strchr(names, ':');
        size_t len = colon ? (size_t)(colon - names) : strlen(names);
        size_t keep = len > RPD_SD_MAX_NAME ? RPD_SD_MAX_NAME : len;
        memcpy(out->names[i], names, keep);
        out->names[i][keep] = '\0';
        names = colon ? colon + 1 : NULL;
    }
}

rpd_sd_listen_env rpd_sd_parse_listen(const char *pid_s, const char *fds_s, const char *names,
                                      unsigned long long pid, rpd_sd_fds *out)
{
    memset(out, 0, sizeof *out);
    if (!pid_s || !fds_s)
        return RPD_SD_LISTEN_UNSET;
    /* A LISTEN_PID that is not ours was meant for a parent process (the
     * variables were inherited); it is not an error. */
    if (!is_pid(pid_s, pid))
        return RPD_SD_LISTEN_OTHER_PID;
    unsigned long long n;
    if (!rpd_sd_parse_ulong(fds_s, &n) || n > RPD_SD_MAX_FDS)
        return RPD_SD_LISTEN_BAD_COUNT;
    out->n = (int)n;
    copy_names(out, names);
    return RPD_SD_LISTEN_OK;
}

int rpd_sd_notify_address(const char *path, struct sockaddr_un *sa, socklen_t *salen)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    size_t len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof sa->sun_path) {
        /* Other address families (vsock:...) are for VMs, not for us. */
        return -EAFNOSUPPORT;
    }
    memcpy(sa->sun_path, path, len);
    /* '@' names an abstract socket: a leading NUL, and the address length
     * (not a terminator) says where the name ends. */
    if (path[0] == '@')
        sa->sun_path[0] = '\0';
    *salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '@' ? 0 : 1));
    return 0;
}

uint64_t rpd_sd_watchdog_ms(const char *notify, const char *usec_s, const char *wpid_s,
                            unsigned long long pid)
{
    unsigned long long usec;
    if (!notify || !*notify)
        return 0;
    if (!rpd_sd_parse_ulong(usec_s, &usec) || usec == 0)
        return 0;
    if (wpid_s && !is_pid(wpid_s, pid))
        return 0;
    /* systemd recommends pinging at half the timeout: one late ping must not
     * be fatal. */
    uint64_t ms = usec / 2000u;
    return ms ? ms : 1;
}

/* ---- the environment, the fds and the socket ------------------------------------------ */

static void unset_listen_env(void)
{
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
}

int rpd_sd_listen_fds(rpd_sd_fds *out)
{
    const char *pid_s = getenv("LISTEN_PID");
    const char *fds_s = getenv("LISTEN_FDS");
    rpd_sd_listen_env env = rpd_sd_parse_listen(pid_s, fds_s, getenv("LISTEN_FDNAMES"),
                                                (unsigned long long)getpid(), out);
    if (env == RPD_SD_LISTEN_OTHER_PID)
        rpd_log(RPD_LOG_DEBUG, "LISTEN_PID=%s is not our pid; ignoring LISTEN_FDS", pid_s);
    else if (env == RPD_SD_LISTEN_BAD_COUNT)
        rpd_log(RPD_LOG_ERROR, "LISTEN_FDS=%s: expected a count of at most %d sockets", fds_s,
                RPD_SD_MAX_FDS);
    /* The strings logged above live in the environment: unset it after. */
    unset_listen_env();
    if (env != RPD_SD_LISTEN_OK)
        return env == RPD_SD_LISTEN_BAD_COUNT ? -1 : 0;
    for (int i = 0; i < out->n; i++) {
        int fd = RPD_SD_LISTEN_FDS_START + i;
        int flags = fcntl(fd, F_GETFD);
        if (flags < 0) {
            rpd_log(RPD_LOG_ERROR, "LISTEN_FDS=%d, but fd %d is not open", out->n, fd);
            return -1;
        }
        /* The sockets are ours alone: children must not inherit them. */
        if (!(flags & FD_CLOEXEC))
            fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
    return out->n;
}

int rpd_sd_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return 0;
    struct sockaddr_un sa;
    socklen_t salen;
    int bad = rpd_sd_notify_address(path, &sa, &salen);
    if (bad)
        return bad;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = 1;
    size_t n = strlen(state);
    /* Never wait: this runs on the event loop, and a receiver that does not
     * read (its queue holds net.unix.max_dgram_qlen datagrams, 10 by
     * default) would stop the daemon.  A full queue drops this message
     * (EAGAIN, logged by the caller); the watchdog sends the next soon. */
    ssize_t sent =
        sendto(fd, state, n, MSG_NOSIGNAL | MSG_DONTWAIT, (const struct sockaddr *)&sa, salen);
    if (sent < 0)
        rc = -errno;
    else if ((size_t)sent != n)
        rc = -EMSGSIZE;
    close(fd);
    return rc;
}

uint64_t rpd_sd_watchdog_interval_ms(void)
{
    return rpd_sd_watchdog_ms(getenv("NOTIFY_SOCKET"), getenv("WATCHDOG_USEC"),
                              getenv("WATCHDOG_PID"), (unsigned long long)getpid());
}
