/* SPDX-License-Identifier: MIT */
/*
 * check.batch cost split: a 1000-configuration batch (7 poses each, about
 * 1.4 MB of JSON) against a 10k-shape scene, timed
 *   - end to end through a running reposed (--unix PATH), if given;
 *   - in process through the JSON-RPC layer (rpd_process_line: parse,
 *     decode, compute, write the reply);
 *   - parse only (cJSON), compute only (rp_model_check over the decoded
 *     poses), so that decode + reply writing is the remainder.
 * Medians over --reps runs.  usage: batch_bench [--unix PATH] [--configs N]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "server/protocol/arena.h"
#include "server/protocol/rpc.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct text {
    char *p;
    size_t len, cap;
} text;

__attribute__((format(printf, 2, 3))) static void add(text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (size_t)(n > 0 ? n : 0) + 1;
        t->p = realloc(t->p, t->cap);
        if (!t->p)
            exit(1);
    }
}

static uint64_t seed = 7;
static double urand(void)
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(seed >> 11) * 0x1.0p-53;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Sends `line` (with '\n') and reads one reply line; returns its length. */
static size_t round_trip(int fd, const char *line, size_t len, char **buf, size_t *cap)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, line + off, len - off);
        if (w <= 0)
            exit(1);
        off += (size_t)w;
    }
    size_t got = 0;
    for (;;) {
        if (got == *cap) {
            *cap *= 2;
            *buf = realloc(*buf, *cap);
        }
        ssize_t r = read(fd, *buf + got, *cap - got);
        if (r <= 0)
            exit(1);
        got += (size_t)r;
        if ((*buf)[got - 1] == '\n')
            return got;
    }
}

int main(int argc, char **argv)
{
    const char *unix_path = NULL;
    int configs = 1000, reps = 15, shapes = 10000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--unix") && i + 1 < argc)
            unix_path = argv[++i];
        else if (!strcmp(argv[i], "--configs") && i + 1 < argc)
            configs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: batch_bench [--unix PATH] [--configs N] [--reps N]\n");
            return 2;
        }
    }
    text scene = {malloc(1 << 20), 0, 1 << 20}, model = {malloc(4096), 0, 4096},
         batch = {malloc(1 << 20), 0, 1 << 20};
    add(&scene, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{\"scene\":"
                "\"w\",\"shapes\":{");
    for (int i = 0; i < shapes; i++) {
        double x = urand() * 10 - 5, y = urand() * 10 - 5, z = urand() * 10 - 5;
        double r = urand() * 0.05;
        if (i % 2)
            add(&scene, "%s\"s%d\":{\"sphere\":{\"center\":[%.6f,%.6f,%.6f],\"radius\":%.4f}}",
                i ? "," : "", i, x, y, z, r);
        else
            add(&scene,
                "%s\"s%d\":{\"capsule\":{\"a\":[%.6f,%.6f,%.6f],\"b\":[%.6f,%.6f,%.6f],"
                "\"radius\":%.4f}}",
                i ? "," : "", i, x, y, z, x + urand() * 0.2, y + urand() * 0.2, z, r);
    }
    add(&scene, "}}}\n");
    add(&model, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"model.put\",\"params\":{\"model\":"
                "\"arm\",\"self_collision\":false,\"links\":[");
    for (int i = 0; i < 14; i++)
        add(&model,
            "%s{\"id\":\"l%d\",\"frame\":%d,\"shape\":{\"capsule\":{\"a\":[0,0,0],"
            "\"b\":[0.2,0,0],\"radius\":0.03}}}",
            i ? "," : "", i, i / 2);
    add(&model, "]}}\n");
    add(&batch, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"check.batch\",\"params\":{\"model\":"
                "\"arm\",\"scene\":\"w\",\"report\":\"first\",\"configurations\":[");
    for (int k = 0; k < configs; k++) {
        add(&batch, "%s{\"frames\":[", k ? "," : "");
        for (int f = 0; f < 7; f++) {
            double q[4], n = 0;
            for (int i = 0; i < 4; i++) {
                q[i] = urand() * 2 - 1;
                n += q[i] * q[i];
            }
            n = sqrt(n);
            add(&batch,
                "%s{\"translation\":[%.17g,%.17g,%.17g],\"rotation\":{\"w\":%.17g,\"x\":%.17g,"
                "\"y\":%.17g,\"z\":%.17g}}",
                f ? "," : "", urand() - 0.5, urand() - 0.5, urand() - 0.5, q[0] / n, q[1] / n,
                q[2] / n, q[3] / n);
        }
        add(&batch, "]}");
    }
    add(&batch, "]}}\n");
    printf("batch: %d configurations, %zu bytes of JSON; scene %d shapes\n", configs, batch.len,
           shapes);

    /* In process, through the JSON-RPC layer. */
    rpd_core core;
    rpd_session session = {false};
    rp_jw out;
    if (!rpd_core_init(&core, NULL))
        return 1;
    rpd_arena_install(); /* as the daemon does: cJSON trees in the arena */
    rp_jw_init(&out);
    rpd_process_line(&core, &session, scene.p, scene.len - 1, &out);
    rpd_arena_reset();
    rpd_process_line(&core, &session, model.p, model.len - 1, &out);
    rpd_arena_reset();
    if (strstr(out.buf, "error")) {
        fprintf(stderr, "setup failed: %s\n", out.buf);
        return 1;
    }
    double *t_full = malloc((size_t)reps * sizeof(double));
    double *t_parse = malloc((size_t)reps * sizeof(double));
    double *t_compute = malloc((size_t)reps * sizeof(double));
    double *t_e2e = malloc((size_t)reps * sizeof(double));
    size_t reply_len = 0;
    for (int r = 0; r < reps; r++) {
        rp_jw_reset(&out);
        double t0 = now_ms();
        rpd_process_line(&core, &session, batch.p, batch.len - 1, &out);
        rpd_arena_reset();
        t_full[r] = now_ms() - t0;
        reply_len = out.len;
    }
    /* Parse only, into the arena as above. */
    cJSON *tree = NULL;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        tree = cJSON_ParseWithLength(batch.p, batch.len - 1);
        t_parse[r] = now_ms() - t0;
        cJSON_Delete(tree);
        rpd_arena_reset();
    }
    /* Compute only: decode the poses once, then time the checks. */
    rp_model *m = rp_store_model_find(core.store, "arm");
    rp_scene *sc = rp_store_find(core.store, "w");
    rp_transform *frames = malloc((size_t)configs * 7 * sizeof *frames);
    tree = cJSON_ParseWithLength(batch.p, batch.len - 1);
    const cJSON *cfg = cJSON_GetObjectItem(cJSON_GetObjectItem(tree, "params"), "configurations");
    int k = 0;
    for (const cJSON *c = cfg->child; c; c = c->next, k++) {
        int f = 0;
        for (const cJSON *p = cJSON_GetObjectItem(c, "frames")->child; p; p = p->next, f++) {
            rp_codec_err ce;
            if (!rp_codec_pose(p, "p", &frames[k * 7 + f], &ce))
                return 1;
        }
    }
    cJSON_Delete(tree);
    int collide = 0;
    for (int r = 0; r < reps; r++) {
        rp_check_opts opts = {RP_REPORT_FIRST, false, 0, NULL, NULL, 0};
        collide = 0;
        double t0 = now_ms();
        for (k = 0; k < configs; k++) {
            rp_check_result res;
            rp_model_check(m, sc, NULL, &frames[k * 7], 7, &opts, &res);
            collide += res.collision;
            rp_check_result_free(&res);
        }
        t_compute[r] = now_ms() - t0;
    }
    double full = median(t_full, reps), parse = median(t_parse, reps),
           compute = median(t_compute, reps);
    printf("in process (rpd_process_line): %.2f ms median; reply %zu bytes; %d/%d collide\n", full,
           reply_len, collide, configs);
    printf("  parse (cJSON)      %.2f ms  (%.0f%%)\n", parse, 100 * parse / full);
    printf("  compute (checks)   %.2f ms  (%.0f%%)\n", compute, 100 * compute / full);
    printf("  decode + reply     %.2f ms  (%.0f%%)\n", full - parse - compute,
           100 * (full - parse - compute) / full);

    if (unix_path) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        strncpy(sa.sun_path, unix_path, sizeof sa.sun_path - 1);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            perror("connect");
            return 1;
        }
        size_t cap = 1 << 20;
        char *buf = malloc(cap);
        round_trip(fd, scene.p, scene.len, &buf, &cap);
        round_trip(fd, model.p, model.len, &buf, &cap);
        for (int r = 0; r < reps; r++) {
            double t0 = now_ms();
            round_trip(fd, batch.p, batch.len, &buf, &cap);
            t_e2e[r] = now_ms() - t0;
        }
        printf("end to end over %s: %.2f ms median (send %zu B, receive reply)\n", unix_path,
               median(t_e2e, reps), batch.len);
        close(fd);
        free(buf);
    }
    rp_jw_free(&out);
    rpd_core_free(&core);
    rpd_arena_free_all();
    return 0;
}
