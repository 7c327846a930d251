/* SPDX-License-Identifier: MIT */
/*
 * Fork-join helpers (pool.h).  One mutex guards a list of open tasks; a
 * task hands out its indices in order, counts those finished, and its
 * caller sleeps on the task's own condition until the count is complete.
 * Pieces are coarse (a slice of a batch: thousands of checks), so the lock
 * is taken a few times per slice, not per check.
 */
#define _GNU_SOURCE /* syscall */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>

#include "pool.h"

typedef struct task {
    struct task *next;
    rpd_pfor_fn fn;
    void *ctx;
    size_t n, next_index, done;
    pthread_cond_t finished;
} task;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static task *open_tasks; /* tasks with indices left to hand out */
static pthread_t *threads;
static int n_threads;
static bool stopping;

/* Takes the next index of some open task (lock held); NULL when none. */
static task *take(size_t *index)
{
    while (open_tasks && open_tasks->next_index == open_tasks->n)
        open_tasks = open_tasks->next; /* handed out in full */
    if (!open_tasks)
        return NULL;
    task *t = open_tasks;
    *index = t->next_index++;
    return t;
}

/* Runs piece i of t without the lock, then counts it. */
static void run_piece(task *t, size_t i)
{
    pthread_mutex_unlock(&lock);
    t->fn(t->ctx, i);
    pthread_mutex_lock(&lock);
    if (++t->done == t->n)
        pthread_cond_signal(&t->finished);
}

/* How much lower than the event loop's the worker threads' scheduling
 * priority is (their nice value, above the process's).  On a machine with
 * as many busy workers as cores the loop then still gets a core at once:
 * the scheduler weighs a nice-5 thread about a third of a nice-0 one. */
#define RPD_WORKER_NICE 5

void rpd_thread_yield_to_loop(void)
{
    static _Thread_local bool done;
    if (done)
        return;
    done = true;
#ifdef __linux__
    /* Per thread on Linux (a thread id is a process id for setpriority). */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int now = getpriority(PRIO_PROCESS, (id_t)tid);
    if (errno == 0)
        (void)setpriority(PRIO_PROCESS, (id_t)tid, now + RPD_WORKER_NICE);
#endif
}

static void *helper(void *arg)
{
    (void)arg;
    rpd_thread_yield_to_loop();
    pthread_mutex_lock(&lock);
    for (;;) {
        size_t i;
        task *t = take(&i);
        if (t) {
            run_piece(t, i);
            continue;
        }
        if (stopping)
            break;
        pthread_cond_wait(&work, &lock);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

bool rpd_pool_start(int helpers)
{
    if (helpers <= 0)
        return true;
    threads = calloc((size_t)helpers, sizeof *threads);
    if (!threads)
        return false;
    stopping = false;
    for (n_threads = 0; n_threads < helpers; n_threads++)
        if (pthread_create(&threads[n_threads], NULL, helper, NULL) != 0) {
            rpd_pool_stop();
            return false;
        }
    return true;
}

void rpd_pool_stop(void)
{
    pthread_mutex_lock(&lock);
    stopping = true;
    pthread_cond_broadcast(&work);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n_threads; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    threads = NULL;
    n_threads = 0;
}

int rpd_pool_helpers(void)
{
    return n_threads;
}

void rpd_parallel_for(size_t n, rpd_pfor_fn fn, void *ctx)
{
    if (n == 0)
        return;
    if (n == 1 || n_threads == 0) {
        for (size_t i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    task t = {NULL, fn, ctx, n, 0, 0, PTHREAD_COND_INITIALIZER};
    pthread_mutex_lock(&lock);
    /* Newest first: a helper that is free joins the newest request; the
     * older ones are being worked on by their own callers anyway. */
    t.next = open_tasks;
    open_tasks = &t;
    pthread_cond_broadcast(&work);
    /* Work on our own task until its indices are handed out, then wait for
     * the pieces helpers took. */
    while (t.next_index < t.n) {
        size_t i = t.next_index++;
        run_piece(&t, i);
    }
    /* Off the list, wherever it is (take() drops exhausted tasks only from
     * the front). */
    for (task **p = &open_tasks; *p; p = &(*p)->next)
        if (*p == &t) {
            *p = t.next;
            break;
        }
    while (t.done < t.n)
        pthread_cond_wait(&t.finished, &lock);
    pthread_mutex_unlock(&lock);
    pthread_cond_destroy(&t.finished);
}
