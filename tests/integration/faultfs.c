/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for the durability tests, preloaded into reposed
 * (LD_PRELOAD): while a file named after a fault exists in the directory
 * $REPOSE_FAULT_DIR, the matching call on a regular file fails.
 *
 *   fsync     fsync and fdatasync fail with EIO (after doing nothing)
 *   write     writev fails with ENOSPC; when the file holds "partial", a
 *             writev first writes half of its bytes and returns that
 *             count, and the next one fails
 *   truncate  ftruncate fails with EIO
 *
 * Sockets, pipes and everything else pass through untouched, so the
 * daemon serves clients as usual while its "disk" fails.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* Whether fault `name` is on; its first bytes in text when asked. */
static bool fault_on(const char *name, char *text, size_t cap)
{
    const char *dir = getenv("REPOSE_FAULT_DIR");
    if (!dir)
        return false;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    if (text && cap) {
        size_t n = fread(text, 1, cap - 1, f);
        text[n] = '\0';
    }
    fclose(f);
    return true;
}

static bool regular(int fd)
{
    struct stat sb;
    return fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
}

static void *next(const char *sym)
{
    return dlsym(RTLD_NEXT, sym);
}

int fdatasync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))next("fdatasync");
    if (regular(fd) && fault_on("fsync", NULL, 0)) {
        errno = EIO;
        return -1;
    }
    return real(fd);
}

int fsync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))next("fsync");
    if (regular(fd) && fault_on("fsync", NULL, 0)) {
        errno = EIO;
        return -1;
    }
    return real(fd);
}

int ftruncate(int fd, off_t length)
{
    static int (*real)(int, off_t);
    if (!real)
        real = (int (*)(int, off_t))next("ftruncate");
    if (regular(fd) && fault_on("truncate", NULL, 0)) {
        errno = EIO;
        return -1;
    }
    return real(fd, length);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    static ssize_t (*real)(int, const struct iovec *, int);
    static bool torn; /* a partial write happened: the next one fails */
    if (!real)
        real = (ssize_t(*)(int, const struct iovec *, int))next("writev");
    char text[32];
    if (!regular(fd) || !fault_on("write", text, sizeof text)) {
        torn = false;
        return real(fd, iov, n);
    }
    if (torn || strncmp(text, "partial", 7) != 0) {
        torn = false;
        errno = ENOSPC;
        return -1;
    }
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    size_t half = total / 2, done = 0;
    for (int i = 0; i < n && done < half; i++) {
        size_t k = iov[i].iov_len < half - done ? iov[i].iov_len : half - done;
        ssize_t w = write(fd, iov[i].iov_base, k);
        if (w < 0)
            return done ? (ssize_t)done : -1;
        done += (size_t)w;
    }
    torn = true;
    return (ssize_t)done;
}
