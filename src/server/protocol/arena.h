/* SPDX-License-Identifier: MIT */
/*
 * A bump allocator for cJSON's parse trees.  Each request line is parsed
 * into a tree that lives only while the line is processed, so cJSON's
 * per-node malloc/free pairs are replaced by pointer bumps, and the whole
 * tree is dropped at once by rpd_arena_reset().  cJSON's hooks are global,
 * but the arena is per thread: the event loop and every worker thread
 * allocate from and reset their own.
 *
 * Not installed in sanitizer builds, so that AddressSanitizer keeps seeing
 * every cJSON allocation.
 */
#ifndef REPOSE_SERVER_ARENA_H
#define REPOSE_SERVER_ARENA_H

#include <stdbool.h>

/* Points cJSON's allocator at the arena (no-op under ASan). */
void rpd_arena_install(void);
/* Whether parse trees live in arenas (installed, not under ASan): freeing
 * their chunks frees them, and a walk of cJSON_Delete over a tree of
 * millions of nodes can be skipped. */
bool rpd_arena_owns_trees(void);
/* Releases everything allocated since the last reset; keeps one chunk. */
void rpd_arena_reset(void);
/* Frees the calling thread's chunks (a worker, after each job). */
void rpd_arena_free_thread(void);
/* A thread's chunks taken from it: what a worker parsed for the event loop
 * (conn.c) stays valid until they are freed, on any thread. */
typedef struct rpd_arena_chunks rpd_arena_chunks;
/* Takes the calling thread's chunks (NULL when it has none, or under ASan,
 * where every node is its own malloc); the thread starts afresh. */
rpd_arena_chunks *rpd_arena_detach(void);
/* Frees detached chunks; NULL is a no-op. */
void rpd_arena_chunks_free(rpd_arena_chunks *c);
/* Frees the loop thread's chunks and uninstalls (at exit, so leak checkers
 * stay quiet). */
void rpd_arena_free_all(void);

#endif /* REPOSE_SERVER_ARENA_H */
