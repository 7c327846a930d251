/*
 * Helpers shared by the daemon test programs (test_daemon.c,
 * test_hardening.c, …): start and stop a daemon, connect, send requests,
 * read and inspect JSON replies.  Each fails the current cmocka test on
 * error, so tests read as straight-line code.
 */
#ifndef REPOSE_TESTS_DAEMON_UTIL_H
#define REPOSE_TESTS_DAEMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "harness.h"

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
/* Exact structural equality: same types, numbers equal as doubles, strings
 * equal, array elements and object members equal and in the same order. */
bool json_same(const cJSON *a, const cJSON *b);
/* Prints a tree to a fresh string for messages (caller frees). */
char *show(const cJSON *j);
/* Sends raw bytes (no newline added). */
void send_raw(rh_conn *c, const char *buf, size_t n);

#endif /* REPOSE_TESTS_DAEMON_UTIL_H */
