/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the daemon test programs (test_daemon_*.c,
 * test_hardening.c): start and stop a daemon, connect, send requests, read
 * and inspect JSON replies, build random shapes and large requests.  Each
 * fails the current cmocka test on error, so tests read as straight-line
 * code.
 */
#ifndef REPOSE_TESTS_DAEMON_UTIL_H
#define REPOSE_TESTS_DAEMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "harness.h"
#include "repose/geometry.h"

struct CMUnitTest;

/* A daemon test: rh_teardown runs after it and kills whatever a failed test
 * left running. */
#define DAEMON_TEST(f) cmocka_unit_test_teardown(f, rh_teardown)

/* The whole main of a daemon test program: reads the daemon's path (argv[1]
 * or $REPOSED; exit status 2 without one) and runs the n tests.  Returns
 * the exit status. */
int run_daemon_tests(int argc, char **argv, const struct CMUnitTest *tests, size_t n);

/* Starts a daemon and fails the test unless it comes up. */
rh_daemon *start_with(const rh_opts *o);
/* The same with the default listeners and extra flags (may be NULL). */
rh_daemon *start(const char *const *extra);
/* SIGTERM, expect exit status 0 (under valgrind: no errors, no leaks), and
 * release the daemon. */
void stop_ok(rh_daemon *d);
rh_conn *connect_ok(const rh_daemon *d, bool tcp);
/* Reads one reply line (fails on timeout / EOF) and parses it.  The caller
 * deletes the tree. */
cJSON *read_json(rh_conn *c);
cJSON *call_json(rh_conn *c, const char *request);
/* Sends a request and returns the reply line (valid until the next read). */
const char *call_line(rh_conn *c, const char *request);
void expect_pong(rh_conn *c);
/* Value at a dotted path ("error.data.path"); NULL if missing. */
const cJSON *at(const cJSON *j, const char *path);
double num_at(const cJSON *j, const char *path);
const char *str_at(const cJSON *j, const char *path);
/* The reply must be an error with this code and, unless NULL, this
 * data.path; fails the test otherwise.  Deletes the reply. */
void expect_error(cJSON *r, int code, const char *path);
/* Exact structural equality: same types, numbers equal as doubles, strings
 * equal, array elements and object members equal and in the same order. */
bool json_same(const cJSON *a, const cJSON *b);
/* Prints a tree to a fresh string for messages (caller frees). */
char *show(const cJSON *j);
/* Sends raw bytes (no newline added). */
void send_raw(rh_conn *c, const char *buf, size_t n);

/* ---- random shapes ---------------------------------------------------------------------- */

/* A splitmix64 generator: the same seed gives the same shapes everywhere. */
typedef struct rng {
    uint64_t s;
} rng;

uint64_t rng_next(rng *r);
/* Uniform in [0, n). */
unsigned rng_below(rng *r, unsigned n);
/* Multiples of 1/8 in [-4, 4]: exact in binary and short in decimal. */
double rng_coord(rng *r);
rp_vec3 rng_vec(rng *r);
/* A sphere or a capsule with coordinates from rng_coord and a radius in
 * [0, 2] (multiples of 1/8). */
rp_shape rng_shape(rng *r);
/* A box (half extents from rng_coord halved, rotated half the time by a
 * quaternion of rng_coord components, normalised) or, one time in four, a
 * half-space (normal rng_vec, offset rng_coord; normalised by
 * rp_halfspace_new, as the server does). */
rp_shape rng_solid(rng *r);
/* [x, y, z] as a JSON array (the caller owns the tree). */
cJSON *vec_json(rp_vec3 v);
/* The protocol's shape object, members in the order the server prints
 * (the caller owns the tree). */
cJSON *shape_json(const rp_shape *s);

/* ---- large requests ---------------------------------------------------------------------- */

/* A growing text buffer for building large requests.  Start from {0} (or a
 * malloc'ed p with its cap); the caller frees p. */
typedef struct textbuf {
    char *p;
    size_t len, cap;
} textbuf;

/* Appends printf-style text, growing the buffer as needed. */
void tb_printf(textbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Small write limits (pause at 64 KiB, disconnect at 1 MiB), for
 * backpressure and reply-size tests. */
extern const char *const bp_flags[];
/* A scene whose scene.get reply is about `shapes` * 60 bytes. */
void create_big_scene(rh_conn *c, const char *name, int shapes);
/* A fresh temporary directory (rh_temp_dir, removed at the end of the
 * test); fails the test without one. */
const char *temp_dir_ok(void);
/* Writes `token` into a fresh file of the given mode in the harness's
 * temporary directory; returns its path (static storage, valid until the
 * next call). */
const char *token_file(const char *token, mode_t mode);

#endif /* REPOSE_TESTS_DAEMON_UTIL_H */
