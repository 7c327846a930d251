/* SPDX-License-Identifier: MIT */
/*
 * A main() for the fuzz targets without libFuzzer: runs a target's
 * LLVMFuzzerTestOneInput once per input, so that the ordinary test build
 * (gcc, and gcc with ASan + UBSan) compiles every target and replays the
 * committed seeds and regressions through it (CTest fuzz_replay_*).  An
 * invariant that fails aborts, which fails the test.
 *
 *   fuzz_X_replay [--lines] PATH...
 *
 * PATH is a file or a directory of files.  With --lines, each line of a
 * file (without its '\n') is one input, the way scripts/fuzz.sh seeds the
 * targets that take one request line; without it, a whole file is one
 * input.
 */
#define _POSIX_C_SOURCE 200809L /* opendir, stat */
#include <dirent.h>
#include <sys/stat.h>

#include "fuzz_util.h"

static size_t runs;

static void run(const char *data, size_t n)
{
    /* A copy of exactly n bytes, so ASan sees any read past the input. */
    uint8_t *copy = malloc(n ? n : 1);
    FUZZ_CHECK(copy, "out of memory");
    memcpy(copy, data, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    runs++;
}

static void replay_file(const char *path, bool lines)
{
    FILE *f = fopen(path, "rb");
    FUZZ_CHECK(f, "cannot open %s", path);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    FUZZ_CHECK(buf, "out of memory");
    for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            buf = realloc(buf, cap *= 2);
            FUZZ_CHECK(buf, "out of memory");
        }
    }
    FUZZ_CHECK(!ferror(f), "cannot read %s", path);
    fclose(f);
    if (!lines) {
        run(buf, n);
    } else {
        for (size_t start = 0; start < n;) {
            const char *nl = memchr(buf + start, '\n', n - start);
            size_t end = nl ? (size_t)(nl - buf) : n;
            run(buf + start, end - start);
            start = end + 1;
        }
    }
    free(buf);
}

static void replay(const char *path, bool lines)
{
    struct stat st;
    FUZZ_CHECK(stat(path, &st) == 0, "no such file or directory: %s", path);
    if (!S_ISDIR(st.st_mode)) {
        replay_file(path, lines);
        return;
    }
    DIR *d = opendir(path);
    FUZZ_CHECK(d, "cannot open directory %s", path);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char child[4096];
        int len = snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        FUZZ_CHECK(len > 0 && (size_t)len < sizeof child, "path too long");
        replay(child, lines);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    bool lines = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--lines") == 0)
            lines = true;
        else
            replay(argv[i], lines);
    }
    printf("%zu inputs replayed\n", runs);
    return runs > 0 ? 0 : 1;
}
