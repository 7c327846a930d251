/* SPDX-License-Identifier: MIT */
/* Bump allocator behind cJSON_InitHooks; see arena.h. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "arena.h"
#include "codec/codec.h"

#if defined(__SANITIZE_ADDRESS__)
#define RPD_ARENA_DISABLED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPD_ARENA_DISABLED 1
#endif
#endif

/* Chunks are at least this big; a larger request gets a chunk of its own
 * size.  After a reset only the first chunk is kept, so one huge request
 * does not pin its memory. */
#define CHUNK_BYTES (64u * 1024u)
#define ALIGN 16u

/* The chunk is the detached list's node too (arena.h). */
typedef struct rpd_arena_chunks {
    struct rpd_arena_chunks *next;
    size_t size, used;
    max_align_t data[]; /* aligned payload */
} chunk;

/* Per thread: the event loop and each worker parse into their own arena
 * (cJSON's hooks are process-wide, the chunks are not). */
static _Thread_local chunk *head;  /* current chunk (newest first) */
static _Thread_local chunk *first; /* the chunk kept across resets */

#ifndef RPD_ARENA_DISABLED
static void *arena_alloc(size_t n)
{
    n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (!head || head->size - head->used < n) {
        size_t size = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        chunk *c = malloc(sizeof *c + size);
        if (!c) {
            rp_json_note_oom(); /* so the failed parse reads as out of memory */
            return NULL;
        }
        c->size = size;
        c->used = 0;
        c->next = head;
        head = c;
        if (!first)
            first = c;
    }
    void *p = (char *)head->data + head->used;
    head->used += n;
    return p;
}

static void arena_release(void *p)
{
    (void)p; /* everything goes at the next reset */
}
#endif

/* Set once by rpd_arena_install, before any thread parses. */
static bool installed;

void rpd_arena_install(void)
{
#ifndef RPD_ARENA_DISABLED
    cJSON_Hooks hooks = {arena_alloc, arena_release};
    cJSON_InitHooks(&hooks);
    installed = true;
#endif
}

bool rpd_arena_owns_trees(void)
{
    return installed;
}

void rpd_arena_reset(void)
{
    while (head && head != first) {
        chunk *next = head->next;
        free(head);
        head = next;
    }
    if (first) {
        first->used = 0;
        first->next = NULL;
    }
}

void rpd_arena_free_thread(void)
{
    while (head) {
        chunk *next = head->next;
        free(head);
        head = next;
    }
    first = NULL;
}

rpd_arena_chunks *rpd_arena_detach(void)
{
    chunk *c = head;
    head = first = NULL;
    return c;
}

void rpd_arena_chunks_free(rpd_arena_chunks *c)
{
    chunk *k = c;
    while (k) {
        chunk *next = k->next;
        free(k);
        k = next;
    }
}

void rpd_arena_free_all(void)
{
    rpd_arena_free_thread();
    installed = false;
    cJSON_InitHooks(NULL);
}
