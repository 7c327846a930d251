/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the parsing of systemd's environment variables in
 * src/server/transport/sd.c (rpd_sd_parse_ulong, rpd_sd_parse_listen,
 * rpd_sd_notify_address, rpd_sd_watchdog_ms), on strings only.
 *
 * The input is up to six NUL-separated strings, in this order: LISTEN_PID,
 * LISTEN_FDS, LISTEN_FDNAMES, WATCHDOG_USEC, WATCHDOG_PID, NOTIFY_SOCKET;
 * those the input does not reach are unset (NULL).  Each is checked with
 * our pid 4242 and, when LISTEN_PID or WATCHDOG_PID is a number, with that
 * pid.  Against references written here from sd_listen_fds(3) and
 * sd_notify(3):
 *
 *  - a number is accepted exactly when it is one or more ASCII digits
 *    worth at most ULLONG_MAX (no sign, blank, prefix or suffix), with the
 *    value of its digits;
 *  - socket activation: unset when LISTEN_PID or LISTEN_FDS is, another
 *    pid's when LISTEN_PID is not ours, a bad count unless LISTEN_FDS is a
 *    number <= RPD_SD_MAX_FDS; then n is that number, names[i] is the i-th
 *    ':'-separated field of LISTEN_FDNAMES cut to RPD_SD_MAX_NAME bytes
 *    ("" past the last), NUL-terminated, and every slot past n is zero;
 *  - NOTIFY_SOCKET: an address exactly for '/path' or '@name' shorter than
 *    sun_path; sun_path holds the path (a NUL for the '@'), and the length
 *    covers the path plus its terminator (none for an abstract name);
 *  - the watchdog: 0 unless NOTIFY_SOCKET is set and non-empty, WATCHDOG_USEC
 *    a non-zero number and WATCHDOG_PID unset or ours; then usec / 2000 ms,
 *    at least 1.
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"

#include <errno.h>
#include <limits.h>

#include "server/transport/sd.h"

#define OUR_PID 4242ull

/* The reference number parser: digit by digit, with an overflow check. */
static bool ref_ulong(const char *s, unsigned long long *out)
{
    if (!s || !*s)
        return false;
    unsigned long long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static void check_ulong(const char *s)
{
    unsigned long long got = 12345, want = 0;
    bool ok = rpd_sd_parse_ulong(s, &got);
    bool want_ok = ref_ulong(s, &want);
    FUZZ_CHECK(ok == want_ok, "'%s': %s", s ? s : "(unset)", ok ? "accepted" : "refused");
    if (ok)
        FUZZ_CHECK(got == want, "'%s' read as %llu", s, got);
    else
        FUZZ_CHECK(got == 12345, "'%s' refused but *out written", s);
}

static void check_listen(const char *pid_s, const char *fds_s, const char *names,
                         unsigned long long pid)
{
    static rpd_sd_fds out; /* 2 KiB: not on the stack of every run */
    memset(&out, 0xA5, sizeof out);
    rpd_sd_listen_env env = rpd_sd_parse_listen(pid_s, fds_s, names, pid, &out);
    unsigned long long p, n = 0;
    rpd_sd_listen_env want = !pid_s || !fds_s                              ? RPD_SD_LISTEN_UNSET
                             : !ref_ulong(pid_s, &p) || p != pid           ? RPD_SD_LISTEN_OTHER_PID
                             : !ref_ulong(fds_s, &n) || n > RPD_SD_MAX_FDS ? RPD_SD_LISTEN_BAD_COUNT
                                                                           : RPD_SD_LISTEN_OK;
    FUZZ_CHECK(env == want, "listen: %d, expected %d", (int)env, (int)want);
    if (env != RPD_SD_LISTEN_OK)
        n = 0;
    FUZZ_CHECK(out.n == (int)n, "n = %d, expected %llu", out.n, n);
    const char *field = names;
    for (int i = 0; i < RPD_SD_MAX_FDS; i++) {
        const char *name = out.names[i];
        if ((unsigned long long)i >= n) {
            for (size_t k = 0; k < sizeof out.names[i]; k++)
                FUZZ_CHECK(name[k] == 0, "slot %d past n not zeroed", i);
            continue;
        }
        FUZZ_CHECK(memchr(name, '\0', RPD_SD_MAX_NAME + 1), "name %d not terminated", i);
        size_t flen = 0;
        if (field)
            while (field[flen] && field[flen] != ':')
                flen++;
        size_t keep = flen > RPD_SD_MAX_NAME ? RPD_SD_MAX_NAME : flen;
        FUZZ_CHECK(strlen(name) == keep && (keep == 0 || memcmp(name, field, keep) == 0),
                   "name %d is '%s'", i, name);
        if (field)
            field = field[flen] == ':' ? field + flen + 1 : NULL;
    }
}

static void check_notify_address(const char *path)
{
    if (!path || !*path)
        return; /* rpd_sd_notify does nothing then */
    struct sockaddr_un sa;
    socklen_t salen = 0;
    int rc = rpd_sd_notify_address(path, &sa, &salen);
    size_t len = strlen(path);
    bool want = (path[0] == '/' || path[0] == '@') && len < sizeof sa.sun_path;
    FUZZ_CHECK((rc == 0) == want, "NOTIFY_SOCKET '%s': rc %d", path, rc);
    if (!want) {
        FUZZ_CHECK(rc == -EAFNOSUPPORT, "rc %d", rc);
        return;
    }
    FUZZ_CHECK(sa.sun_family == AF_UNIX, "family %d", (int)sa.sun_family);
    bool abstract = path[0] == '@';
    FUZZ_CHECK(salen == offsetof(struct sockaddr_un, sun_path) + len + !abstract, "length %u",
               (unsigned)salen);
    FUZZ_CHECK(salen <= sizeof sa, "length %u past the address", (unsigned)salen);
    FUZZ_CHECK(sa.sun_path[0] == (abstract ? '\0' : '/') &&
                   memcmp(sa.sun_path + 1, path + 1, len - 1) == 0,
               "sun_path is not '%s'", path);
    if (!abstract)
        FUZZ_CHECK(sa.sun_path[len] == '\0', "path not terminated");
}

static void check_watchdog(const char *notify, const char *usec_s, const char *wpid_s,
                           unsigned long long pid)
{
    uint64_t ms = rpd_sd_watchdog_ms(notify, usec_s, wpid_s, pid);
    unsigned long long usec, wpid;
    uint64_t want = 0;
    if (notify && *notify && ref_ulong(usec_s, &usec) && usec > 0 &&
        (!wpid_s || (ref_ulong(wpid_s, &wpid) && wpid == pid)))
        want = usec / 2000 ? usec / 2000 : 1;
    FUZZ_CHECK(ms == want, "watchdog %llu ms, expected %llu", (unsigned long long)ms,
               (unsigned long long)want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    FUZZ_CHECK(buf, "out of memory");
    memcpy(buf, data, size);
    buf[size] = '\0';
    /* LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES, WATCHDOG_USEC, WATCHDOG_PID,
     * NOTIFY_SOCKET. */
    const char *v[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    size_t at = 0;
    for (int i = 0; i < 6 && at <= size; i++) {
        v[i] = buf + at;
        at += strlen(buf + at) + 1;
    }
    for (int i = 0; i < 6; i++)
        check_ulong(v[i]);
    unsigned long long pids[3] = {OUR_PID, OUR_PID, OUR_PID};
    ref_ulong(v[0], &pids[1]);
    ref_ulong(v[4], &pids[2]);
    for (int k = 0; k < 3; k++) {
        if (k > 0 && pids[k] == OUR_PID)
            continue;
        check_listen(v[0], v[1], v[2], pids[k]);
        check_watchdog(v[5], v[3], v[4], pids[k]);
    }
    check_notify_address(v[5]);
    free(buf);
    return 0;
}
