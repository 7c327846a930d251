/* SPDX-License-Identifier: MIT */
/*
 * --data-dir against the real daemon (proto/PROTOCOL.md, Durability):
 * random mutations of every kind survive a restart (SIGTERM or SIGKILL)
 * with every scene and model and the revisions exactly as they were,
 * failed mutations leave no trace, the journal's last record cut at every
 * byte is a torn tail (the daemon starts without it), a flipped byte
 * refuses the start naming the file and offset and --repair recovers the
 * records before it, a second daemon on the same directory is refused, the
 * replay ignores limits lowered since, and a daemon killed at random
 * moments during a stream of mutations with --fsync always keeps every
 * acknowledged one.  The data directory refuses to guess: a missing
 * journal, one cut inside its header or below what it had synced, or
 * another snapshot's stops the start (and --repair says what it drops);
 * symbolic links, other owners and group/other write access are refused;
 * a deleted lock file lets no second daemon in; files of the previous
 * format are upgraded.  Boxes and half-spaces come back bit for bit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "server/protocol/methods.h" /* the method table, for every_mutating_method_... */

/* ---- helpers ----------------------------------------------------------------------- */

/* A daemon on data directory dir; more: one extra flag, or "FLAG=VALUE"
 * for a flag with a value (may be NULL). */
static rh_daemon *start_on(const char *dir, const char *fsync, const char *more)
{
    const char *extra[8] = {"--data-dir", dir, "--fsync", fsync, NULL};
    char flag[64];
    if (more) {
        const char *eq = strchr(more, '=');
        if (eq) {
            snprintf(flag, sizeof flag, "%.*s", (int)(eq - more), more);
            extra[4] = flag;
            extra[5] = eq + 1;
            extra[6] = NULL;
        } else {
            extra[4] = more;
            extra[5] = NULL;
        }
    }
    return start(extra);
}

/* Everything the daemon holds: {"scenes": {name: scene.get}, "models":
 * {name: model.get}, "revision": n}. */
static cJSON *dump(rh_conn *c)
{
    cJSON *out = cJSON_CreateObject(), *scenes = cJSON_AddObjectToObject(out, "scenes"),
          *models = cJSON_AddObjectToObject(out, "models");
    cJSON *list = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.list\"}");
    const cJSON *sc;
    cJSON_ArrayForEach(sc, at(list, "result.scenes"))
    {
        char req[512];
        snprintf(req, sizeof req,
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.get\",\"params\":{\"scene\":"
                 "\"%s\"}}",
                 str_at(sc, "scene"));
        cJSON *g = call_json(c, req);
        cJSON *res = cJSON_DetachItemFromObject(g, "result");
        cJSON_Delete(g);
        /* Distances from a few probes: they go through the scene's tree,
         * which a restart builds anew (a replay builds it once at the end). */
        cJSON *dist = cJSON_AddArrayToObject(res, "probe_distances");
        for (int k = 0; k < 6; k++) {
            snprintf(req, sizeof req,
                     "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.distance\",\"params\":{"
                     "\"scene\":\"%s\",\"shape\":{\"sphere\":{\"center\":[%d,%d,%d],\"radius\":"
                     "0.25}}}}",
                     str_at(sc, "scene"), k - 3, (k * 7) % 5 - 2, k % 3);
            cJSON *q = call_json(c, req);
            const cJSON *dv = at(q, "result.distance");
            cJSON_AddItemToArray(dist, dv ? cJSON_Duplicate(dv, 1) : cJSON_CreateString("none"));
            cJSON_Delete(q);
        }
        cJSON_AddItemToObject(scenes, str_at(sc, "scene"), res);
    }
    cJSON_Delete(list);
    list = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"model.list\"}");
    const cJSON *m;
    cJSON_ArrayForEach(m, at(list, "result.models"))
    {
        char req[512];
        snprintf(req, sizeof req,
                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"model.get\",\"params\":{\"model\":"
                 "\"%s\"}}",
                 str_at(m, "model"));
        cJSON *g = call_json(c, req);
        cJSON_AddItemToObject(models, str_at(m, "model"), cJSON_DetachItemFromObject(g, "result"));
        cJSON_Delete(g);
    }
    cJSON_Delete(list);
    cJSON *st = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"stats\"}");
    cJSON_AddNumberToObject(out, "revision", num_at(st, "result.revision"));
    cJSON_Delete(st);
    return out;
}

/* SIGKILL: the journal stays as it is (a SIGTERM would write a snapshot
 * and start the journal again). */
static void kill_now(rh_daemon *d)
{
    rh_signal(d, SIGKILL);
    rh_wait_exit(d, rh_ms(RH_TIMEOUT_MS));
    rh_destroy(d);
}

static void assert_same_state(const cJSON *a, const cJSON *b)
{
    if (!json_same(a, b)) {
        char *x = show(a), *y = show(b);
        fail_msg("state differs:\n  before %.2000s\n  after  %.2000s", x, y);
    }
}

/* The daemon behind c holds exactly the state `want` (a dump). */
static void expect_state(rh_conn *c, const cJSON *want)
{
    cJSON *now = dump(c);
    assert_same_state(want, now);
    cJSON_Delete(now);
}

/* A number with all 17 digits (what a lossy printer would round). */
static double odd(rng *r)
{
    return (double)(rng_next(r) >> 11) / 9007199254740993.0 * 7.0 - 3.5;
}

/* One random mutation (some fail on purpose); the request's text. */
static void random_mutation(rng *r, char *req, size_t cap, int i)
{
    int kind = (int)rng_below(r, 10);
    char sc[16];
    snprintf(sc, sizeof sc, "s%u", rng_below(r, 4));
    switch (kind) {
    case 0:
        snprintf(req, cap,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.create\",\"params\":{\"scene\":"
                 "\"%s\",\"shapes\":{\"a\":{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],\"radius\":"
                 "%.17g}}}}}",
                 i, sc, odd(r), odd(r), odd(r), fabs(odd(r)));
        break;
    case 1:
        snprintf(req, cap,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.delete\",\"params\":{\"scene\":"
                 "\"%s\"}}",
                 i, sc);
        break;
    case 2:
        snprintf(
            req, cap,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.replace\",\"params\":{\"scene\":"
            "\"%s\",\"create\":%s,\"shapes\":{\"r%u\":{\"capsule\":{\"a\":[%.17g,0,1e-300],"
            "\"b\":[1,%.17g,2],\"radius\":%.17g}}}}}",
            i, sc, rng_below(r, 2) ? "true" : "false", rng_below(r, 50), odd(r), odd(r),
            fabs(odd(r)));
        break;
    case 3:
        snprintf(req, cap,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.remove\",\"params\":{\"scene\":"
                 "\"%s\",\"ids\":[\"p%u\",\"a\"]}}",
                 i, sc, rng_below(r, 50));
        break;
    case 4:
        snprintf(req, cap,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"model.put\",\"params\":{\"model\":"
                 "\"m%u\",\"links\":[{\"id\":\"b\",\"link\":\"base\",\"shape\":{\"sphere\":{"
                 "\"center\":[%.17g,0,0],\"radius\":0.25}}}],\"safety_margin\":%.17g}}",
                 i, rng_below(r, 3), odd(r), fabs(odd(r)) / 100);
        break;
    case 5:
        snprintf(req, cap,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"model.delete\",\"params\":{\"model\":"
                 "\"m%u\"}}",
                 i, rng_below(r, 3));
        break;
    case 7: { /* a box or a half-space (their journal records and snapshot entries) */
        rp_shape solid = rng_solid(r);
        cJSON *j = shape_json(&solid);
        char *text = cJSON_PrintUnformatted(j);
        snprintf(req, cap,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{\"scene\":"
                 "\"%s\",\"create\":true,\"shapes\":{\"b%u\":%s}}}",
                 i, sc, rng_below(r, 20), text);
        free(text);
        cJSON_Delete(j);
        break;
    }
    case 6: /* an invalid shape: refused, nothing written */
        snprintf(req, cap,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{\"scene\":"
                 "\"%s\",\"shapes\":{\"bad\":{\"sphere\":{\"center\":[0,0,0],\"radius\":-1}}}}}",
                 i, sc);
        break;
    default:
        snprintf(req, cap,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{\"scene\":"
                 "\"%s\",\"create\":true,\"shapes\":{\"p%u\":{\"sphere\":{\"center\":[%.17g,%.17g,"
                 "%.17g],\"radius\":%.17g}},\"q%u\":{\"capsule\":{\"a\":[0,0,0],\"b\":[%.17g,1,1],"
                 "\"radius\":0}}}}}",
                 i, sc, rng_below(r, 50), odd(r), odd(r), odd(r), fabs(odd(r)), rng_below(r, 50),
                 odd(r));
        break;
    }
}

/* Runs n random mutations; returns how many succeeded. */
static int run_mutations(rh_conn *c, rng *r, int n)
{
    int ok = 0;
    for (int i = 0; i < n; i++) {
        char req[1024];
        random_mutation(r, req, sizeof req, i);
        cJSON *rep = call_json(c, req);
        if (at(rep, "result"))
            ok++;
        else
            assert_true(num_at(rep, "error.code") != -32007);
        cJSON_Delete(rep);
    }
    return ok;
}

static uint64_t journal_bytes(rh_conn *c)
{
    cJSON *st = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"stats\"}");
    double n = num_at(st, "result.durability.journal_bytes");
    cJSON_Delete(st);
    return (uint64_t)n;
}

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    buf[len] = '\0'; /* text files are read as strings too */
    *n = (size_t)len;
    return buf;
}

static void write_file(const char *path, const char *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
}

/* ---- a damaged journal -------------------------------------------------------------------- */

/* The journal's last record cut at every byte is a torn tail: the daemon
 * warns, starts without it and cuts the file back to the last whole
 * record; the whole file keeps it. */
static void a_torn_last_record_is_cut_at_every_offset(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    rng r = {7};
    run_mutations(c, &r, 30);
    cJSON *before = dump(c);
    uint64_t good = journal_bytes(c);
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                              "\"params\":{\"scene\":\"last\"}}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    uint64_t end = journal_bytes(c);
    assert_true(end > good + 20);
    rh_close(c);
    kill_now(d);

    char path[512];
    snprintf(path, sizeof path, "%s/journal", dir);
    size_t n;
    char *whole = read_file(path, &n);
    assert_int_equal(n, end);
    /* Every cut inside the last record (a sample under valgrind). */
    uint64_t step = rh_wrapped() ? (end - good) / 4 : 1;
    for (uint64_t cut = good + 1; cut < end; cut += step) {
        write_file(path, whole, cut);
        d = start_on(dir, "always", NULL);
        if (!rh_log_contains(d, "torn tail")) {
            rh_dump_log(d);
            fail_msg("cut at %llu of %llu: no torn-tail warning", (unsigned long long)cut,
                     (unsigned long long)end);
        }
        c = connect_ok(d, false);
        expect_state(c, before);
        assert_int_equal(journal_bytes(c), good); /* cut back to the last whole record */
        rh_close(c);
        kill_now(d);
    }
    /* And the whole file: the last record is there. */
    write_file(path, whole, n);
    d = start_on(dir, "always", NULL);
    assert_false(rh_log_contains(d, "torn tail"));
    c = connect_ok(d, false);
    cJSON *now = dump(c);
    assert_non_null(at(now, "scenes.last"));
    cJSON_Delete(now);
    rh_close(c);
    kill_now(d);
    free(whole);
    cJSON_Delete(before);
}

/* A flipped byte inside a record refuses the start naming the file and
 * offset (the file unchanged); --repair cuts there, keeping the records
 * before it, and writes go on after the repaired end. */
static void corruption_refuses_to_start_and_repair_cuts_there(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    rng r = {8};
    run_mutations(c, &r, 20);
    cJSON *before = dump(c);
    uint64_t mid = journal_bytes(c);
    run_mutations(c, &r, 20);
    rh_close(c);
    kill_now(d);

    char path[512];
    snprintf(path, sizeof path, "%s/journal", dir);
    size_t n;
    char *buf = read_file(path, &n);
    assert_true(n > mid + 30);
    buf[mid + 25] ^= 0x20; /* inside the record that starts at mid */
    write_file(path, buf, n);

    char out[8192], want[600];
    const char *args[] = {"--unix", "none", "--tcp", "127.0.0.1:0", "--data-dir", dir, NULL};
    assert_int_equal(rh_run(args, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 1);
    snprintf(want, sizeof want, "%s/journal: corrupt at offset %llu", dir, (unsigned long long)mid);
    if (!strstr(out, want))
        fail_msg("wanted '%s' in:\n%s", want, out);
    assert_non_null(strstr(out, "--repair"));
    /* Unchanged by the refusal. */
    size_t n2;
    char *again = read_file(path, &n2);
    assert_int_equal(n2, n);
    assert_memory_equal(again, buf, n);
    free(again);

    d = start_on(dir, "always", "--repair");
    assert_true(rh_log_contains(d, "--repair: cutting the journal there"));
    c = connect_ok(d, false);
    expect_state(c, before);
    /* Writes go on after the repaired end. */
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                              "\"params\":{\"scene\":\"after\"}}");
    assert_int_equal((uint64_t)num_at(rep, "result.revision"),
                     (uint64_t)num_at(before, "revision") + 1);
    cJSON_Delete(rep);
    rh_close(c);
    stop_ok(d);
    free(buf);
    cJSON_Delete(before);
}

/* A journal that is not a journal at all: refused, even with --repair. */
static void a_file_that_is_not_a_journal_is_refused(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    stop_ok(d);
    char path[512], out[8192];
    snprintf(path, sizeof path, "%s/journal", dir);
    const char *args[] = {"--unix", "none", "--tcp", "127.0.0.1:0", "--data-dir", dir, NULL};
    write_file(path, "{\"not\": \"a journal\"}\n", 21);
    assert_int_equal(rh_run(args, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 1);
    assert_non_null(strstr(out, "not a repose journal"));
    /* --repair cuts a damaged journal of ours; it never takes another file. */
    const char *repair[] = {"--unix",     "none", "--tcp",    "127.0.0.1:0",
                            "--data-dir", dir,    "--repair", NULL};
    assert_int_equal(rh_run(repair, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 1);
    assert_non_null(strstr(out, "not a repose journal"));
    size_t n = 0;
    char *kept = read_file(path, &n);
    assert_int_equal(n, 21);
    assert_memory_equal(kept, "{\"not\": \"a journal\"}\n", 21);
    free(kept);
}

/* ---- kills keep every acknowledged mutation ------------------------------------------------ */

/* Mutations streamed with --fsync `policy` (and `more`, see start_on), the
 * daemon SIGKILLed at a random moment, `runs` times: every acknowledged
 * put is there after the restart with its exact value, and whatever else
 * is there (a put in flight) is whole.  Returns the background snapshots
 * the runs' logs report. */
static int stream_and_kill(const char *policy, const char *more, uint64_t seed)
{
    int snapshots = 0;
    const char *dir = temp_dir_ok();
    int total = rh_wrapped() ? 600 : 10000, runs = rh_wrapped() ? 1 : 3;
    rng r = {seed};
    int next = 0; /* shape ids 0 .. next-1 were sent */
    int *acked = calloc((size_t)total * (size_t)runs + 1, sizeof *acked);
    for (int run = 0; run < runs; run++) {
        rh_daemon *d = start_on(dir, policy, more);
        rh_conn *c = connect_ok(d, false);
        if (run == 0) {
            cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"scene.create\","
                                      "\"params\":{\"scene\":\"k\"}}");
            cJSON_Delete(rep);
        }
        int kill_after = (int)rng_below(&r, (unsigned)total);
        /* Pipelined: a window of requests in flight, so the kill lands
         * between a write and its reply as often as not. */
        int sent = 0, got = 0, window = 16, first = next;
        bool killed = false;
        while (got < total) {
            while (!killed && sent < total && sent - got < window) {
                char req[256];
                int id = next++;
                snprintf(req, sizeof req,
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{"
                         "\"scene\":\"k\",\"shapes\":{\"x%d\":{\"sphere\":{\"center\":[%d,0.1,"
                         "0.30000000000000004],\"radius\":0.5}}}}}",
                         id, id, id);
                assert_true(rh_send_line(c, req));
                sent++;
            }
            if (got == kill_after && !killed) {
                rh_signal(d, SIGKILL); /* then only the replies already sent are read */
                killed = true;
            }
            const char *line;
            size_t len;
            rh_read_status st = rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len);
            if (st != RH_LINE)
                break; /* killed */
            cJSON *rep = cJSON_ParseWithLength(line, len);
            assert_non_null(rep);
            assert_non_null(at(rep, "result"));
            acked[(int)num_at(rep, "id")] = 1;
            cJSON_Delete(rep);
            got++;
        }
        rh_close(c);
        rh_wait_exit(d, rh_ms(RH_TIMEOUT_MS));
        snapshots += rh_log_contains(d, "(background;");
        rh_destroy(d);
        (void)first;
    }
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *g = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.get\",\"params\":{"
                            "\"scene\":\"k\"}}");
    const cJSON *shapes = at(g, "result.shapes");
    assert_non_null(shapes);
    int present = 0, lost = 0;
    for (int id = 0; id < next; id++) {
        char key[32];
        snprintf(key, sizeof key, "x%d", id);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(shapes, key);
        if (acked[id] && !s)
            lost++;
        if (s) {
            present++;
            const cJSON *centre = at(s, "sphere.center");
            assert_true(cJSON_GetArrayItem(centre, 0)->valuedouble == id);
            assert_true(cJSON_GetArrayItem(centre, 2)->valuedouble == 0.30000000000000004);
            assert_true(num_at(s, "sphere.radius") == 0.5);
        }
    }
    if (lost)
        fail_msg("%d acknowledged puts lost", lost);
    /* Unacknowledged puts present are at most the ones in flight. */
    int ack_count = 0;
    for (int id = 0; id < next; id++)
        ack_count += acked[id];
    assert_true(present >= ack_count && present <= ack_count + 16 * runs);
    printf("%d puts sent, %d acknowledged, %d present after %d kills\n", next, ack_count, present,
           runs);
    cJSON_Delete(g);
    rh_close(c);
    stop_ok(d);
    free(acked);
    return snapshots;
}

/* --fsync always, SIGKILL at random moments of a stream of puts. */
static void sigkill_keeps_every_acknowledged_mutation(void **state)
{
    (void)state;
    stream_and_kill("always", NULL, 99);
}

/* The same with background snapshots every few kilobytes of journal: the
 * kills land before, during and after them. */
static void background_snapshots_keep_every_acknowledged_mutation(void **state)
{
    (void)state;
    int runs_with = stream_and_kill("always", "--snapshot-after=2048", 98);
    /* With everysec the journal's switch leaves its fsyncs to the timer
     * (a kill keeps the page cache, so nothing acknowledged may be lost
     * either). */
    runs_with += stream_and_kill("everysec", "--snapshot-after=2048", 97);
    /* (Under valgrind the one run may be killed before the first.) */
    if (!rh_wrapped())
        assert_true(runs_with > 1);
}

/* ---- a full disk --------------------------------------------------------------------------- */

/* Where the full-disk case mounted its tmpfs ("" when nothing is). */
static char g_mounted[600];

/* A full disk: mutations get -32007 and change nothing, reads go on, and
 * once space is freed writes work again and a restart loses nothing
 * acknowledged.  The small disk is a tmpfs mounted by the test (root
 * only: skipped, with the reason, elsewhere). */
static void a_full_disk_refuses_mutations_and_recovers(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char small[600], data[700], filler[700];
    snprintf(small, sizeof small, "%s/small", dir);
    assert_int_equal(mkdir(small, 0700), 0);
    if (mount("tmpfs", small, "tmpfs", MS_NOSUID | MS_NODEV, "size=96k,mode=0700") == 0) {
        snprintf(g_mounted, sizeof g_mounted, "%s", small);
    } else {
        printf("skipped: cannot mount a small tmpfs at %s (%s); the full-disk case needs root "
               "(CAP_SYS_ADMIN)\n",
               small, strerror(errno));
        rmdir(small);
        skip();
    }
    snprintf(data, sizeof data, "%s/data", small);
    snprintf(filler, sizeof filler, "%s/filler", small);
    /* Room to free later. */
    char *junk = calloc(1, 24 << 10);
    write_file(filler, junk, 24 << 10);
    free(junk);

    rh_daemon *d = start_on(data, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                              "\"params\":{\"scene\":\"f\"}}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    /* Puts of ~2 KB until the disk is full. */
    char *req = malloc(8192);
    int acked = 0, refused = 0;
    for (int i = 0; i < 200 && !refused; i++) {
        int n = snprintf(req, 8192,
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{"
                         "\"scene\":\"f\",\"shapes\":{",
                         i);
        for (int k = 0; k < 30; k++)
            n += snprintf(req + n, 8192 - (size_t)n,
                          "%s\"s%d_%d\":{\"sphere\":{\"center\":[%d,0.1,0.2],\"radius\":0.5}}",
                          k ? "," : "", i, k, k);
        snprintf(req + n, 8192 - (size_t)n, "}}}");
        rep = call_json(c, req);
        if (at(rep, "result")) {
            acked++;
        } else {
            assert_int_equal((int)num_at(rep, "error.code"), -32007);
            assert_non_null(strstr(str_at(rep, "error.data.reason"), "No space left"));
            refused = i;
        }
        cJSON_Delete(rep);
    }
    assert_true(refused > 0 && acked == refused);
    /* Nothing of the refused put; reads go on; stats say so. */
    cJSON *before = dump(c);
    char key[32];
    snprintf(key, sizeof key, "s%d_0", refused);
    assert_null(cJSON_GetObjectItemCaseSensitive(at(before, "scenes.f.shapes"), key));
    snprintf(key, sizeof key, "s%d_0", refused - 1);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(at(before, "scenes.f.shapes"), key));
    assert_int_equal((int)num_at(before, "revision"), 1 + acked);
    cJSON *st = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"stats\"}");
    assert_true(cJSON_IsTrue(at(st, "result.durability.failing")));
    assert_true(num_at(st, "result.durability.write_errors") >= 1);
    cJSON_Delete(st);
    /* Space again: the same put now works. */
    assert_int_equal(unlink(filler), 0);
    int n = snprintf(req, 8192,
                     "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"scene.put\",\"params\":{"
                     "\"scene\":\"f\",\"shapes\":{\"late\":{\"sphere\":{\"center\":[1,2,3],"
                     "\"radius\":1}}}}}");
    (void)n;
    rep = call_json(c, req);
    assert_int_equal((int)num_at(rep, "result.revision"), 2 + acked);
    cJSON_Delete(rep);
    cJSON_Delete(before);
    before = dump(c);
    rh_close(c);
    stop_ok(d);
    d = start_on(data, "always", NULL);
    c = connect_ok(d, false);
    expect_state(c, before);
    cJSON_Delete(before);
    rh_close(c);
    stop_ok(d);
    free(req);
    assert_int_equal(umount2(small, MNT_DETACH), 0);
    g_mounted[0] = '\0';
    rmdir(small);
}

/* After the full-disk case: the tmpfs goes even when the test failed. */
static int unmount_teardown(void **state)
{
    if (g_mounted[0]) {
        rh_cleanup_all(); /* the daemon first: it holds files there */
        umount2(g_mounted, MNT_DETACH);
        g_mounted[0] = '\0';
    }
    return rh_teardown(state);
}

/* ---- snapshots ---------------------------------------------------------------------------- */

static long file_size(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* save writes a snapshot and empties the journal; a restart loads the
 * snapshot and replays what came after; SIGTERM writes one too; leftovers
 * of an interrupted snapshot are ignored and removed. */
static void the_store_comes_back_from_its_snapshot_and_the_journal_after_it(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    rng r = {4242};
    run_mutations(c, &r, rh_wrapped() ? 60 : 300);
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"save\"}");
    cJSON *st = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"stats\"}");
    assert_int_equal((uint64_t)num_at(rep, "result.revision"),
                     (uint64_t)num_at(st, "result.revision"));
    assert_true(num_at(rep, "result.bytes") > 100);
    assert_int_equal((uint64_t)num_at(st, "result.durability.snapshot.revision"),
                     (uint64_t)num_at(st, "result.revision"));
    assert_int_equal((int)num_at(st, "result.durability.journal_bytes"), 64);
    assert_int_equal((long)num_at(rep, "result.bytes"), file_size(dir, "snapshot"));
    cJSON_Delete(rep);
    cJSON_Delete(st);
    /* More after it, then a kill: snapshot + journal. */
    run_mutations(c, &r, rh_wrapped() ? 30 : 150);
    cJSON *before = dump(c);
    rh_close(c);
    kill_now(d);
    d = start_on(dir, "always", NULL);
    assert_true(rh_log_contains(d, "/snapshot: "));
    c = connect_ok(d, false);
    expect_state(c, before);
    /* SIGTERM writes a snapshot: the journal is a bare header after it. */
    run_mutations(c, &r, 40);
    cJSON_Delete(before);
    before = dump(c);
    rh_close(c);
    stop_ok(d);
    assert_int_equal(file_size(dir, "journal"), 64);
    /* Leftovers of an interrupted snapshot are ignored and removed. */
    char path[600];
    snprintf(path, sizeof path, "%s/snapshot.tmp", dir);
    write_file(path, "half a snapshot", 15);
    snprintf(path, sizeof path, "%s/journal.tmp", dir);
    write_file(path, "REPOSEJ\n", 8);
    d = start_on(dir, "everysec", NULL);
    c = connect_ok(d, false);
    expect_state(c, before);
    assert_int_equal(file_size(dir, "snapshot.tmp"), -1);
    assert_int_equal(file_size(dir, "journal.tmp"), -1);
    cJSON_Delete(before);
    rh_close(c);
    stop_ok(d);
}

/* Boxes and half-spaces come back from the journal and from a snapshot bit
 * for bit: scene.get says the same, to the last digit.  (Rotations and
 * normals that are unit already; a decoder that normalised them again on
 * replay would move about a third of them by an ulp.)  Half of the
 * rotations and the normals are sent far from unit, for the daemon to
 * normalise. */
static void boxes_and_halfspaces_come_back_bit_for_bit(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    rng r = {2323};
    textbuf t = {0};
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{"
                  "\"scene\":\"solids\",\"shapes\":{");
    for (int i = 0; i < 90; i++) {
        double q[4], n = 0;
        for (int k = 0; k < 4; k++) {
            q[k] = odd(&r);
            n += q[k] * q[k];
        }
        /* Unit in double arithmetic, or off by 5e-7 (inside the 1e-6
         * tolerance). */
        double scale = (i % 2 ? 1 + 5e-7 : 1) / sqrt(n);
        if (i % 3 == 2)
            tb_printf(&t,
                      "%s\"h%d\":{\"halfspace\":{\"normal\":[%.17g,%.17g,%.17g],\"offset\":%.17g}}",
                      i ? "," : "", i, q[0], q[1], q[2], odd(&r));
        else
            tb_printf(
                &t,
                "%s\"b%d\":{\"box\":{\"center\":[%.17g,%.17g,%.17g],\"half_extents\":[%.17g,"
                "%.17g,%.17g],\"rotation\":{\"w\":%.17g,\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}}}",
                i ? "," : "", i, odd(&r), odd(&r), odd(&r), fabs(odd(&r)), fabs(odd(&r)),
                fabs(odd(&r)), q[0] * scale, q[1] * scale, q[2] * scale, q[3] * scale);
    }
    tb_printf(&t, "}}}");
    cJSON *rep = call_json(c, t.p);
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    free(t.p);
    const char *get = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.get\",\"params\":{"
                      "\"scene\":\"solids\"}}";
    char *want = strdup(call_line(c, get));
    assert_non_null(strstr(want, "\"b0\":{\"box\":"));
    assert_non_null(strstr(want, "\"h2\":{\"halfspace\":"));
    rh_close(c);
    kill_now(d); /* the journal */
    d = start_on(dir, "always", NULL);
    c = connect_ok(d, false);
    assert_string_equal(call_line(c, get), want);
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"save\"}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    rh_close(c);
    kill_now(d); /* the snapshot */
    d = start_on(dir, "always", NULL);
    assert_true(rh_log_contains(d, "/snapshot: "));
    c = connect_ok(d, false);
    assert_string_equal(call_line(c, get), want);
    free(want);
    rh_close(c);
    stop_ok(d);
}

/* A damaged snapshot, or a journal that continues a missing one, stops the
 * start; with the snapshot put back everything is there again. */
static void a_damaged_or_missing_snapshot_stops_the_start(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    rng r = {4243};
    run_mutations(c, &r, 40);
    cJSON *before = dump(c);
    rh_close(c);
    stop_ok(d); /* SIGTERM writes the snapshot */
    d = start_on(dir, "everysec", NULL);
    c = connect_ok(d, false);
    /* One more mutation, so that the journal holds something. */
    cJSON *rep =
        call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.create\",\"params\":{"
                     "\"scene\":\"z\"}}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    rh_close(c);
    kill_now(d);

    /* A flipped byte in the snapshot. */
    char path[600];
    snprintf(path, sizeof path, "%s/snapshot", dir);
    size_t n;
    char *img = read_file(path, &n);
    img[n / 2] ^= 0x10;
    write_file(path, img, n);
    char out[8192];
    const char *args[] = {"--unix", "none", "--tcp", "127.0.0.1:0", "--data-dir", dir, NULL};
    assert_int_equal(rh_run(args, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 1);
    char want[700];
    snprintf(want, sizeof want, "%s/snapshot: corrupt at offset", dir);
    if (!strstr(out, want))
        fail_msg("wanted '%s' in:\n%s", want, out);
    /* No snapshot at all, with a journal that continues one. */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rh_run(args, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 1);
    if (!strstr(out, "but there is no"))
        fail_msg("wanted a missing-snapshot refusal in:\n%s", out);
    /* Put it back: everything is there again. */
    img[n / 2] ^= 0x10;
    write_file(path, img, n);
    free(img);
    d = start_on(dir, "everysec", NULL);
    c = connect_ok(d, false);
    cJSON *now = dump(c);
    assert_non_null(at(now, "scenes.z"));
    cJSON_DeleteItemFromObject(cJSON_GetObjectItemCaseSensitive(now, "scenes"), "z");
    cJSON_ReplaceItemInObject(now, "revision", cJSON_CreateNumber(num_at(before, "revision")));
    assert_same_state(before, now);
    cJSON_Delete(now);
    cJSON_Delete(before);
    rh_close(c);
    stop_ok(d);
}

/* save without --data-dir: -32007, the store is in memory only. */
static void save_without_a_data_directory_is_refused(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"save\"}");
    assert_int_equal((int)num_at(rep, "error.code"), -32007);
    assert_non_null(strstr(str_at(rep, "error.data.reason"), "memory only"));
    cJSON_Delete(rep);
    rh_close(c);
    stop_ok(d);
}

/* SIGKILL while save writes the snapshot, at random moments: the restart
 * finds the old snapshot or the new one, never a half-written one, and
 * everything acknowledged. */
static void a_kill_during_save_loses_nothing(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    rng r = {77};
    int puts = rh_wrapped() ? 2 : 12, per = 4000;
    char *req = malloc((size_t)per * 100 + 256);
    for (int p = 0; p < puts; p++) {
        int n = sprintf(req,
                        "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{"
                        "\"scene\":\"k\",\"create\":true,\"shapes\":{",
                        p);
        for (int k = 0; k < per; k++)
            n += sprintf(req + n,
                         "%s\"p%d_%d\":{\"sphere\":{\"center\":[%.17g,%.17g,1],"
                         "\"radius\":0.25}}",
                         k ? "," : "", p, k, odd(&r), odd(&r));
        sprintf(req + n, "}}}");
        cJSON *rep = call_json(c, req);
        assert_non_null(at(rep, "result"));
        cJSON_Delete(rep);
    }
    free(req);
    run_mutations(c, &r, 30);
    cJSON *before = dump(c);
    for (int round = 0; round < 3; round++) {
        assert_true(rh_send_line(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"save\"}"));
        rh_sleep_ms((int)rng_below(&r, rh_wrapped() ? 200 : 40));
        rh_close(c);
        kill_now(d);
        d = start_on(dir, "always", NULL);
        c = connect_ok(d, false);
        expect_state(c, before);
        assert_int_equal(file_size(dir, "snapshot.tmp"), -1);
    }
    cJSON_Delete(before);
    rh_close(c);
    stop_ok(d);
}

/* ---- storage failures (faultfs.c, preloaded) and held replies ------------------------------ */

/* A daemon on `data` whose fsync, writev and ftruncate fail while the
 * files `fsync`, `write`, `truncate` exist in fdir (faultfs.c). */
static rh_daemon *start_faulty(const char *data, const char *fsync, const char *fdir)
{
    char *asan = getenv("ASAN_OPTIONS") ? strdup(getenv("ASAN_OPTIONS")) : NULL;
    char opts[512];
    /* A preloaded library comes before ASan's runtime, which it checks. */
    snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", asan ? asan : "", asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    setenv("LD_PRELOAD", REPOSE_FAULTFS, 1);
    setenv("REPOSE_FAULT_DIR", fdir, 1);
    rh_daemon *d = start_on(data, fsync, NULL);
    unsetenv("LD_PRELOAD");
    unsetenv("REPOSE_FAULT_DIR");
    if (asan)
        setenv("ASAN_OPTIONS", asan, 1);
    else
        unsetenv("ASAN_OPTIONS");
    free(asan);
    return d;
}

/* Turns fault `name` on (with text) or off (text NULL). */
static void fault(const char *fdir, const char *name, const char *text)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", fdir, name);
    if (text)
        write_file(path, text, strlen(text));
    else
        assert_int_equal(unlink(path), 0);
}

static void expect_storage_error(const cJSON *rep, const char *reason_has)
{
    if (!at(rep, "error") || (int)num_at(rep, "error.code") != -32007 ||
        !strstr(str_at(rep, "error.data.reason"), reason_has)) {
        char *x = show(rep);
        fail_msg("want -32007 mentioning '%s', got %s", reason_has, x);
    }
}

static const char *put_req(char *buf, size_t cap, int id, const char *scene, const char *shape)
{
    snprintf(buf, cap,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"%s\",\"shapes\":{\"%s\":{\"sphere\":{\"center\":[%d,0.5,0.1],\"radius\":0.5}}}}}",
             id, scene, shape, id);
    return buf;
}

/* A daemon with faults (see start_faulty) on DIR/data, scene `scene`
 * created; data gets the path. */
static rh_daemon *faulty_with_scene(const char *dir, const char *policy, const char *scene,
                                    char *data, size_t cap, rh_conn **c)
{
    snprintf(data, cap, "%s/data", dir);
    rh_daemon *d = start_faulty(data, policy, dir);
    *c = connect_ok(d, false);
    char req[256];
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{"
             "\"scene\":\"%s\"}}",
             scene);
    cJSON *rep = call_json(*c, req);
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    return d;
}

/* SIGKILL, a restart without faults, and the same state as `after`
 * (which is deleted); returns the restarted daemon's dump. */
static cJSON *kill_restart_same(rh_daemon *d, const char *data, const char *policy, cJSON *after)
{
    kill_now(d);
    d = start_on(data, policy, NULL);
    assert_false(rh_log_contains(d, "torn tail")); /* no partial record was left */
    rh_conn *c = connect_ok(d, false);
    cJSON *now = dump(c);
    assert_same_state(after, now);
    cJSON_Delete(after);
    rh_close(c);
    stop_ok(d);
    return now;
}

/* Reads c's lines until a notification; returns it. */
static cJSON *next_any_notification(rh_conn *c)
{
    for (;;) {
        cJSON *j = read_json(c);
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "method")) &&
            !cJSON_GetObjectItemCaseSensitive(j, "id"))
            return j;
        cJSON_Delete(j);
    }
}

/* --fsync always, the fsync fails: the held replies are rewritten from what
 * the protocol layer recorded of them, not read back: every success keeps
 * its id as it was written (a string with escapes, a number as cJSON wrote
 * it, null) and becomes -32007; an error stays as it was, and the batch's
 * brackets and commas and the line ends are untouched. */
static void undone_replies_keep_their_ids_and_their_errors(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char data[600];
    rh_conn *c;
    rh_daemon *d = faulty_with_scene(dir, "always", "g", data, sizeof data, &c);
    fault(dir, "fsync", "1");
    assert_true(rh_send_line(
        c, "[{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\\u00e9\",\"method\":\"scene.put\",\"params\":"
           "{\"scene\":\"g\",\"shapes\":{\"s\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1}}}}},"
           "{\"jsonrpc\":\"2.0\",\"id\":1.5e3,\"method\":\"no.such\"},"
           "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"},"
           "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"},"
           "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}]\n"
           "{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"ping\"}"));
    const char *line;
    size_t len;
    assert_int_equal(rh_read_line(c, rh_ms(10000), &line, &len), RH_LINE);
    cJSON *rep = cJSON_ParseWithLength(line, len);
    assert_true(cJSON_IsArray(rep));
    assert_int_equal(cJSON_GetArraySize(rep), 4); /* the notification has no reply */
    const cJSON *r0 = cJSON_GetArrayItem(rep, 0), *r1 = cJSON_GetArrayItem(rep, 1);
    const cJSON *r2 = cJSON_GetArrayItem(rep, 2), *r3 = cJSON_GetArrayItem(rep, 3);
    expect_storage_error(r0, "fsync failed");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(r0, "id")->valuestring, "a\"b\xc3\xa9");
    assert_int_equal((int)num_at(r1, "error.code"), -32601);
    assert_int_equal((int)num_at(r1, "id"), 1500);
    expect_storage_error(r2, "fsync failed");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r2, "id")));
    assert_int_equal((int)num_at(r3, "error.code"), -32600); /* an array id */
    cJSON_Delete(rep);
    /* The line after it: run in the same group (then its success is
     * answered -32007 too) or after the group ended. */
    rep = read_json(c);
    assert_int_equal((int)num_at(rep, "id"), -7);
    if (at(rep, "error"))
        expect_storage_error(rep, "fsync failed");
    else
        assert_true(cJSON_IsTrue(at(rep, "result.pong")));
    cJSON_Delete(rep);
    fault(dir, "fsync", NULL);
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.get\",\"params\":{"
                       "\"scene\":\"g\"}}");
    assert_null(at(rep, "result.shapes.s"));
    cJSON_Delete(rep);
    rh_close(c);
    stop_ok(d);
}

/* --fsync always, the fsync fails: every mutation of the group (several
 * connections, a batch, a model) is undone and answered -32007, memory is
 * as before, reads go on, watchers hear nothing of it; once fsync works,
 * mutations do too, and a restart after SIGKILL has exactly what was
 * acknowledged. */
static void a_failed_fsync_undoes_the_group(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char data[600], req[512];
    rh_conn *c;
    rh_daemon *d = faulty_with_scene(dir, "always", "g", data, sizeof data, &c);
    cJSON *rep = call_json(c, put_req(req, sizeof req, 2, "g", "a"));
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    rh_conn *w = connect_ok(d, false);
    rep = call_json(w, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.watch\",\"params\":{"
                       "\"scene\":\"g\"}}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    cJSON *before = dump(c);

    fault(dir, "fsync", "1");
    enum { K = 4 };
    rh_conn *k[K];
    for (int i = 0; i < K; i++) {
        k[i] = connect_ok(d, false);
        char shape[16];
        snprintf(shape, sizeof shape, "b%d", i);
        assert_true(rh_send_line(k[i], put_req(req, sizeof req, 10 + i, "g", shape)));
    }
    /* A batch: its put is undone, and its ping's answer with it. */
    assert_true(rh_send_line(c, "[{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"scene.put\","
                                "\"params\":{\"scene\":\"g\",\"shapes\":{\"bb\":{\"sphere\":{"
                                "\"center\":[0,0,0],\"radius\":1}}}}},{\"jsonrpc\":\"2.0\","
                                "\"id\":21,\"method\":\"ping\"}]"));
    for (int i = 0; i < K; i++) {
        rep = read_json(k[i]);
        expect_storage_error(rep, "fsync failed");
        assert_int_equal((int)num_at(rep, "id"), 10 + i);
        cJSON_Delete(rep);
    }
    rep = read_json(c);
    assert_true(cJSON_IsArray(rep) && cJSON_GetArraySize(rep) == 2);
    expect_storage_error(cJSON_GetArrayItem(rep, 0), "fsync failed");
    expect_storage_error(cJSON_GetArrayItem(rep, 1), "fsync failed");
    assert_int_equal((int)num_at(cJSON_GetArrayItem(rep, 1), "id"), 21);
    cJSON_Delete(rep);
    /* Pipelined on one connection: put, get, put.  The get runs in the
     * same group as the first put (then its answer is -32007 too) or after
     * the group was undone (then it must not show that put). */
    {
        char both[1600], a1[400], a2[400];
        put_req(a1, sizeof a1, 40, "g", "x1");
        put_req(a2, sizeof a2, 42, "g", "x2");
        /* (scene.distance runs on a worker thread unless it is held.) */
        snprintf(both, sizeof both,
                 "%s\n{\"jsonrpc\":\"2.0\",\"id\":39,\"method\":\"scene.distance\",\"params\""
                 ":{\"scene\":\"g\",\"shape\":{\"sphere\":{\"center\":[40,0.5,0.1],\"radius\":"
                 "0.25}}}}\n{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"scene.get\",\"params\":{"
                 "\"scene\":\"g\"}}\n%s\n",
                 a1, a2);
        send_raw(c, both, strlen(both));
        rep = read_json(c);
        expect_storage_error(rep, "fsync failed");
        cJSON_Delete(rep);
        rep = read_json(c); /* x1 sits at the probe: a success must not see it */
        assert_int_equal((int)num_at(rep, "id"), 39);
        if (at(rep, "error"))
            expect_storage_error(rep, "fsync failed");
        else
            assert_true(num_at(rep, "result.distance") > 1.0);
        cJSON_Delete(rep);
        rep = read_json(c);
        assert_int_equal((int)num_at(rep, "id"), 41);
        if (at(rep, "error"))
            expect_storage_error(rep, "fsync failed");
        else
            assert_null(at(rep, "result.shapes.x1"));
        cJSON_Delete(rep);
        rep = read_json(c);
        expect_storage_error(rep, "fsync failed");
        cJSON_Delete(rep);
    }
    /* A model too: its definition must not reach a later snapshot. */
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"model.put\",\"params\":{"
                       "\"model\":\"m\",\"links\":[{\"id\":\"b\",\"link\":\"base\",\"shape\":{"
                       "\"sphere\":{\"center\":[0,0,0],\"radius\":0.25}}}]}}");
    expect_storage_error(rep, "fsync failed");
    cJSON_Delete(rep);
    /* Memory as before; reads go on; stats say so. */
    expect_state(c, before);
    cJSON *st = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"stats\"}");
    assert_true(cJSON_IsTrue(at(st, "result.durability.failing")));
    assert_true(num_at(st, "result.durability.write_errors") >= K + 4);
    cJSON_Delete(st);
    fault(dir, "fsync", NULL);
    rep = call_json(k[0], put_req(req, sizeof req, 30, "g", "late"));
    assert_int_equal((uint64_t)num_at(rep, "result.revision"),
                     (uint64_t)num_at(before, "revision") + 1);
    cJSON_Delete(rep);
    /* Notifications wait for the group's fsync: the watcher heard nothing
     * of the undone changes, and the first thing it hears is the change
     * that stands. */
    rep = next_any_notification(w);
    assert_string_equal(str_at(rep, "method"), "scene.changed");
    assert_int_equal((uint64_t)num_at(rep, "params.revision"),
                     (uint64_t)num_at(before, "revision") + 1);
    assert_non_null(at(rep, "params.put.late"));
    assert_int_equal(cJSON_GetArraySize(at(rep, "params.put")), 1);
    cJSON_Delete(rep);
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":31,\"method\":\"save\"}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    cJSON *after = dump(c);
    for (int i = 0; i < K; i++)
        rh_close(k[i]);
    rh_close(w);
    rh_close(c);
    cJSON *now = kill_restart_same(d, data, "always", after);
    assert_null(at(now, "models.m"));
    cJSON_Delete(now);
    cJSON_Delete(before);
}

/* --fsync everysec, the background fsync fails: mutations acknowledged
 * before it stand, later ones are refused with -32007 while reads go on,
 * and they are accepted again once an fsync succeeds. */
static void a_failed_background_fsync_refuses_mutations_until_one_works(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char data[600], req[512];
    rh_conn *c;
    rh_daemon *d = faulty_with_scene(dir, "everysec", "e", data, sizeof data, &c);
    cJSON *rep;
    fault(dir, "fsync", "1");
    /* Accepted until the timer's fsync fails (within about a second). */
    int id = 100;
    bool refused = false;
    for (int tries = 0; tries < 100 && !refused; tries++) {
        char shape[16];
        snprintf(shape, sizeof shape, "s%d", id);
        rep = call_json(c, put_req(req, sizeof req, id++, "e", shape));
        if (at(rep, "error")) {
            expect_storage_error(rep, "fsync failed");
            refused = true;
        }
        cJSON_Delete(rep);
        if (!refused)
            usleep(50 * 1000);
    }
    assert_true(refused);
    cJSON *before = dump(c);
    assert_true(cJSON_GetArraySize(at(before, "scenes.e.shapes")) >= 1);
    fault(dir, "fsync", NULL);
    bool accepted = false;
    for (int tries = 0; tries < 100 && !accepted; tries++) {
        rep = call_json(c, put_req(req, sizeof req, id++, "e", "after"));
        accepted = at(rep, "result") != NULL;
        if (!accepted)
            expect_storage_error(rep, "fsync failed");
        cJSON_Delete(rep);
        if (!accepted)
            usleep(50 * 1000);
    }
    assert_true(accepted);
    cJSON *after = dump(c);
    rh_close(c);
    cJSON_Delete(kill_restart_same(d, data, "everysec", after));
    cJSON_Delete(before);
}

/* A write that stops halfway and a journal that cannot be cut back: the
 * mutation is refused, and so is every one after it until the partial
 * record is cut off; then writes work and a restart finds a whole
 * journal with what was acknowledged. */
static void a_partial_record_blocks_appends_until_it_is_cut(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char data[600], req[512];
    rh_conn *c;
    rh_daemon *d = faulty_with_scene(dir, "no", "p", data, sizeof data, &c);
    cJSON *rep;
    cJSON *before = dump(c);
    fault(dir, "write", "partial");
    fault(dir, "truncate", "1");
    rep = call_json(c, put_req(req, sizeof req, 2, "p", "torn"));
    expect_storage_error(rep, "No space left");
    cJSON_Delete(rep);
    fault(dir, "write", NULL);
    rep = call_json(c, put_req(req, sizeof req, 3, "p", "blocked"));
    expect_storage_error(rep, "partial record");
    cJSON_Delete(rep);
    expect_state(c, before);
    fault(dir, "truncate", NULL);
    rep = call_json(c, put_req(req, sizeof req, 4, "p", "fine"));
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    cJSON *after = dump(c);
    rh_close(c);
    cJSON *now = kill_restart_same(d, data, "no", after);
    assert_null(at(now, "scenes.p.shapes.torn"));
    cJSON_Delete(now);
    cJSON_Delete(before);
}

/* --fsync always: save behind a mutation of the same connection whose
 * fsync is still pending (a batch, or pipelined lines) is refused with
 * -32007 instead of splitting the held replies between two fsyncs (which
 * used to leave the connection waiting for good); the mutation stands, and
 * save on its own works. */
static void save_behind_a_waiting_mutation_is_refused(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char data[600], a[400], b[1000];
    snprintf(data, sizeof data, "%s/data", dir);
    rh_daemon *d = start_on(data, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                              "\"params\":{\"scene\":\"v\"}}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    put_req(a, sizeof a, 2, "v", "one");
    snprintf(b, sizeof b, "[%s,{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"save\"}]", a);
    rep = call_json(c, b);
    assert_true(cJSON_IsArray(rep) && cJSON_GetArraySize(rep) == 2);
    assert_int_equal((int)num_at(cJSON_GetArrayItem(rep, 0), "result.revision"), 2);
    expect_storage_error(cJSON_GetArrayItem(rep, 1), "waiting for their fsync");
    cJSON_Delete(rep);
    /* Pipelined lines in one write: the same. */
    put_req(a, sizeof a, 4, "v", "two");
    snprintf(b, sizeof b, "%s\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"save\"}\n", a);
    send_raw(c, b, strlen(b));
    rep = read_json(c);
    assert_int_equal((int)num_at(rep, "result.revision"), 3);
    cJSON_Delete(rep);
    rep = read_json(c);
    assert_int_equal((int)num_at(rep, "id"), 5);
    if (at(rep, "error")) /* unless the put's fsync came between the two lines */
        expect_storage_error(rep, "waiting for their fsync");
    cJSON_Delete(rep);
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"save\"}");
    assert_int_equal((int)num_at(rep, "result.revision"), 3);
    cJSON_Delete(rep);
    cJSON *after = dump(c);
    rh_close(c);
    cJSON_Delete(kill_restart_same(d, data, "always", after));
}

/* ---- a data directory that refuses to guess -------------------------------------------- */

/* Runs reposed on dir and expects a refusal: exit status 1, and the output
 * has want and (unless NULL) also. */
static void refuses(const char *dir, const char *want, const char *also)
{
    char out[8192];
    const char *args[] = {"--unix", "none", "--tcp", "127.0.0.1:0", "--data-dir", dir, NULL};
    int code = rh_run(args, out, sizeof out, rh_ms(RH_TIMEOUT_MS));
    if (code != 1 || !strstr(out, want) || (also && !strstr(out, also)))
        fail_msg("wanted exit status 1 and '%s'%s%s in (exit status %d):\n%s", want,
                 also ? " and " : "", also ? also : "", code, out);
}

/* Puts shapes x<from> .. x<from + count - 1> into `scene`, a request each. */
static void put_many(rh_conn *c, const char *scene, int from, int count)
{
    char req[512], shape[32];
    for (int i = from; i < from + count; i++) {
        snprintf(shape, sizeof shape, "x%d", i);
        cJSON *rep = call_json(c, put_req(req, sizeof req, i, scene, shape));
        assert_non_null(at(rep, "result"));
        cJSON_Delete(rep);
    }
}

/* A daemon on dir (--fsync always): scene k with `saved` shapes, a save,
 * `more` shapes after it (acknowledged, so synced, into the journal), then
 * SIGKILL.  Returns what the daemon held at the save; *last (unless NULL)
 * gets what it held at the end. */
static cJSON *save_then_more(const char *dir, int saved, int more, cJSON **last)
{
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                              "\"params\":{\"scene\":\"k\"}}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    put_many(c, "k", 0, saved);
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"save\"}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    cJSON *at_save = dump(c);
    put_many(c, "k", saved, more);
    if (last)
        *last = dump(c);
    rh_close(c);
    kill_now(d);
    return at_save;
}

/* A restart without --repair holds `want`, exactly (the repaired directory
 * is whole again); `want` is deleted. */
static void restart_holds(const char *dir, cJSON *want)
{
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    expect_state(c, want);
    cJSON_Delete(want);
    rh_close(c);
    stop_ok(d);
}

/* The journal deleted after a snapshot, with 20 acknowledged shapes in it
 * after the snapshot's 100: the start refuses, naming the journal (it used
 * to start with 100 shapes, silently); --repair starts from what the
 * snapshot holds and says what it dropped. */
static void a_missing_journal_refuses_to_start(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    cJSON *at_save = save_then_more(dir, 100, 20, NULL);
    char path[600], want[700];
    snprintf(path, sizeof path, "%s/journal", dir);
    assert_int_equal(unlink(path), 0);
    snprintf(want, sizeof want, "%s/journal is missing", dir);
    refuses(dir, want, "--repair starts from");
    assert_int_equal(file_size(dir, "journal"), -1); /* the refusal made none */

    rh_daemon *d = start_on(dir, "always", "--repair");
    if (!rh_log_contains(d, "--repair: starting from") ||
        !rh_log_contains(d, "after revision 101 is dropped")) {
        rh_dump_log(d);
        fail_msg("no repair message saying what was dropped");
    }
    rh_conn *c = connect_ok(d, false);
    cJSON *now = dump(c);
    assert_same_state(at_save, now);
    assert_int_equal(cJSON_GetArraySize(at(now, "scenes.k.shapes")), 100);
    cJSON_Delete(now);
    cJSON_Delete(at_save);
    put_many(c, "k", 500, 1);
    cJSON *after = dump(c);
    rh_close(c);
    kill_now(d);
    restart_holds(dir, after);
}

/* A journal cut to 0 or 10 bytes after synced records is not a torn
 * write (a journal is put in place with its header whole): refused, the
 * file left as it is; --repair starts from the snapshot. */
static void a_journal_cut_inside_its_header_refuses_to_start(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    cJSON *at_save = save_then_more(dir, 30, 20, NULL);
    char path[600], want[700];
    snprintf(path, sizeof path, "%s/journal", dir);
    size_t n;
    char *whole = read_file(path, &n);
    assert_true(n > 64 + 20 * 20);
    static const size_t cuts[] = {0, 10};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_file(path, whole, cuts[i]);
        snprintf(want, sizeof want, "%s/journal is %zu bytes, shorter than its header", dir,
                 cuts[i]);
        refuses(dir, want, "--repair starts from");
        assert_int_equal(file_size(dir, "journal"), (long)cuts[i]);
    }
    free(whole);
    rh_daemon *d = start_on(dir, "always", "--repair");
    assert_true(rh_log_contains(d, "--repair: starting from"));
    rh_conn *c = connect_ok(d, false);
    expect_state(c, at_save);
    rh_close(c);
    kill_now(d);
    restart_holds(dir, at_save);
}

/* CRC-32C, bit by bit (journal.h's checksum), for editing a header. */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

/* A journal cut back after synced records: its header says how much of
 * it was synced (rewritten before each fsync with what the fsync before it
 * covered), so a cut at a record boundary, or inside a record, below that
 * is no torn tail but refused, the file left as it is; --repair keeps the
 * whole records before the cut.  (A cut inside the last record, which
 * only the last fsync covered, stays a torn tail:
 * a_torn_last_record_is_cut_at_every_offset.) */
static void a_journal_cut_below_what_was_synced_refuses_to_start(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                              "\"params\":{\"scene\":\"k\"}}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    put_many(c, "k", 0, 4);
    cJSON *kept = dump(c);
    uint64_t mid = journal_bytes(c);
    put_many(c, "k", 4, 6); /* each acknowledged, so each synced */
    rh_close(c);
    kill_now(d);
    char path[600], want[700];
    snprintf(path, sizeof path, "%s/journal", dir);
    size_t n;
    char *whole = read_file(path, &n);
    const uint64_t cuts[] = {mid, mid + 7}; /* at a record boundary, inside the next record */
    for (int i = 0; i < 2; i++) {
        write_file(path, whole, cuts[i]);
        snprintf(want, sizeof want, "%s/journal is %llu bytes, but ", dir,
                 (unsigned long long)cuts[i]);
        refuses(dir, want, "of it were synced");
        assert_int_equal(file_size(dir, "journal"), (long)cuts[i]);
    }
    free(whole);
    d = start_on(dir, "always", "--repair");
    assert_true(rh_log_contains(d, "--repair: keeping its 5 whole records"));
    c = connect_ok(d, false);
    expect_state(c, kept);
    rh_close(c);
    kill_now(d);
    restart_holds(dir, kept);
}

/* A journal copied from another data directory, whose records would even
 * apply: refused, naming both files; --repair starts from this
 * directory's snapshot and keeps the stranger aside. */
static void a_journal_of_another_snapshot_refuses_to_start(void **state)
{
    (void)state;
    const char *a = rh_temp_dir(), *b = rh_temp_dir();
    assert_non_null(a);
    assert_non_null(b);
    cJSON *a_save = save_then_more(a, 10, 5, NULL);
    cJSON_Delete(save_then_more(b, 8, 10, NULL));
    char from[600], to[600], want[700];
    snprintf(from, sizeof from, "%s/journal", b);
    snprintf(to, sizeof to, "%s/journal", a);
    size_t n;
    char *stranger = read_file(from, &n);
    write_file(to, stranger, n);
    snprintf(want, sizeof want, "%s/journal (id ", a);
    refuses(a, want, "does not continue");
    refuses(a, "it belongs to another snapshot or data directory", "journal.rejected");
    size_t n2;
    char *again = read_file(to, &n2);
    assert_int_equal(n2, n);
    assert_memory_equal(again, stranger, n);
    free(again);

    rh_daemon *d = start_on(a, "always", "--repair");
    assert_true(rh_log_contains(d, "the journal kept aside as journal.rejected"));
    rh_conn *c = connect_ok(d, false);
    expect_state(c, a_save);
    rh_close(c);
    stop_ok(d);
    assert_int_equal(file_size(a, "journal.rejected"), (long)n);
    free(stranger);
    restart_holds(a, a_save);
}

/* Rewrites file `name` in dir with a header of `to` bytes instead of
 * `from`: its first `to` bytes kept, the rest of the old header dropped,
 * and `fix` rebuilding the new header in place. */
static void shrink_header(const char *dir, const char *name, size_t from, size_t to,
                          void (*fix)(uint8_t *h))
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t n;
    uint8_t *buf = (uint8_t *)read_file(path, &n);
    assert_true(n >= from);
    uint8_t *old = malloc(n - from + to);
    assert_non_null(old);
    memcpy(old, buf, to);
    memcpy(old + to, buf + from, n - from);
    fix(old);
    write_file(path, (const char *)old, n - from + to);
    free(old);
    free(buf);
}

/* Little-endian u32 at p. */
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Format 1 journal header (journal.h): magic, version 1, zero, the base
 * revision (left where format 2 has it), zero, CRC. */
static void journal_header_v1(uint8_t *h)
{
    put32(h + 8, 1);
    memset(h + 24, 0, 4);
    put32(h + 28, crc32c(h, 28));
}

/* Format 1 snapshot header (snapshot.h): format 3's first 40 bytes with
 * version 1, zero, CRC. */
static void snapshot_header_v1(uint8_t *h)
{
    put32(h + 8, 1);
    memset(h + 40, 0, 4);
    put32(h + 44, crc32c(h, 44));
}

/* A directory of the previous version (journal and snapshot of format 1,
 * without ids; made here from a new one by rewriting the headers) is
 * upgraded: everything comes back, and the files are the current formats
 * after (journal 2, snapshot 3). */
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A snapshot's sections as formats before 4 wrote them (snapshot.h):
 * scenes before models, and each scene section without its trailing
 * object count (zero here), with its length and checksums fixed.
 * Sections start after `header` bytes. */
static void strip_object_counts(const char *dir, size_t header)
{
    char path[600];
    snprintf(path, sizeof path, "%s/snapshot", dir);
    size_t n;
    uint8_t *buf = (uint8_t *)read_file(path, &n);
    uint8_t *out = malloc(n);
    assert_non_null(out);
    memcpy(out, buf, header);
    size_t len_out = header, at = header;
    for (int pass = 0; pass < 2; pass++) { /* scenes, then models */
        at = header;
        while (n - at > 16) {
            const uint8_t *h = buf + at;
            uint64_t len = get64(h + 8);
            size_t whole = 20 + (size_t)len + 4;
            if (h[0] == 1 && pass == 0) {
                assert_int_equal(get64(h + 20 + len - 8), 0);
                uint8_t *o = out + len_out;
                memcpy(o, h, 20 + (size_t)len - 8);
                for (int i = 0; i < 8; i++)
                    o[8 + i] = (uint8_t)((len - 8) >> (8 * i));
                put32(o + 16, crc32c(o, 16));
                put32(o + 20 + len - 8, crc32c(o + 20, (size_t)len - 8));
                len_out += whole - 8;
            } else if (h[0] != 1 && pass == 1) {
                memcpy(out + len_out, h, whole);
                len_out += whole;
            }
            at += whole;
        }
    }
    memcpy(out + len_out, buf + at, n - at); /* the trailer */
    len_out += n - at;
    write_file(path, (const char *)out, len_out);
    free(out);
    free(buf);
}

static void files_of_the_previous_format_are_upgraded(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    cJSON *last = NULL;
    cJSON_Delete(save_then_more(dir, 10, 5, &last));
    shrink_header(dir, "journal", 64, 32, journal_header_v1);
    shrink_header(dir, "snapshot", 80, 48, snapshot_header_v1);
    strip_object_counts(dir, 48);
    rh_daemon *d = start_on(dir, "always", NULL);
    assert_true(rh_log_contains(d, "files of the previous format; upgrading"));
    rh_conn *c = connect_ok(d, false);
    expect_state(c, last);
    rh_close(c);
    kill_now(d);
    static const char *const files[] = {"journal", "snapshot"};
    static const char formats[] = {2, 5};
    for (int i = 0; i < 2; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        size_t n;
        char *buf = read_file(path, &n);
        assert_true(n > 12);
        assert_int_equal(buf[8], formats[i]); /* the format version */
        free(buf);
    }
    restart_holds(dir, last);
}

/* ---- one daemon per directory, none through links or others' hands ------------------------ */

/* A second daemon on a directory in use is refused, the first one
 * unharmed; the directory is free again once it stopped. */
static void a_second_daemon_on_a_directory_in_use_is_refused(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "no", NULL);
    char out[8192];
    const char *args[] = {"--unix", "none", "--tcp", "127.0.0.1:0", "--data-dir", dir, NULL};
    assert_int_equal(rh_run(args, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 1);
    assert_non_null(strstr(out, "another reposed is using this data directory"));
    rh_conn *c = connect_ok(d, false); /* the first one is unharmed */
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
    /* Free again once it stopped. */
    d = start_on(dir, "no", NULL);
    stop_ok(d);
}

/* DIR/lock, DIR/journal or DIR itself as a symbolic link: refused, and
 * the lock's target is left as it was (it used to be truncated and get
 * the pid). */
static void symbolic_links_in_the_data_directory_are_refused(void **state)
{
    (void)state;
    const char *dir = rh_temp_dir(), *elsewhere = rh_temp_dir();
    assert_non_null(dir);
    assert_non_null(elsewhere);
    char target[600], link[600], want[700];
    snprintf(target, sizeof target, "%s/precious", elsewhere);
    write_file(target, "precious\n", 9);
    snprintf(link, sizeof link, "%s/lock", dir);
    assert_int_equal(symlink(target, link), 0);
    snprintf(want, sizeof want, "%s/lock is a symbolic link", dir);
    refuses(dir, want, "rm '");
    size_t n;
    char *kept = read_file(target, &n);
    assert_int_equal(n, 9);
    assert_memory_equal(kept, "precious\n", 9);
    free(kept);
    assert_int_equal(unlink(link), 0);

    /* The journal, once there is one. */
    rh_daemon *d = start_on(dir, "no", NULL);
    stop_ok(d);
    char journal[600], moved[600];
    snprintf(journal, sizeof journal, "%s/journal", dir);
    snprintf(moved, sizeof moved, "%s/journal", elsewhere);
    assert_int_equal(rename(journal, moved), 0);
    assert_int_equal(symlink(moved, journal), 0);
    snprintf(want, sizeof want, "%s/journal is a symbolic link", dir);
    refuses(dir, want, NULL);
    assert_int_equal(unlink(journal), 0);
    assert_int_equal(rename(moved, journal), 0);

    /* The directory itself. */
    snprintf(link, sizeof link, "%s/link", elsewhere);
    assert_int_equal(symlink(dir, link), 0);
    refuses(link, "is a symbolic link", "readlink -f");
    d = start_on(dir, "no", NULL); /* and the real one is fine */
    stop_ok(d);
}

/* A data directory (or a file in it) others could write, or owned by
 * another user: refused with the command that fixes it. */
static void a_data_directory_others_can_change_is_refused(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char want[700];
    assert_int_equal(chmod(dir, 0777), 0);
    snprintf(want, sizeof want, "chmod go-w '%s'", dir);
    refuses(dir, "is writable by its group or others (mode 0777)", want);
    assert_int_equal(chmod(dir, 0700), 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(dir, 65534, 65534), 0);
        snprintf(want, sizeof want, "chown 0 '%s'", dir);
        refuses(dir, "is owned by uid 65534, but reposed runs as uid 0", want);
        assert_int_equal(chown(dir, 0, 0), 0);
    } else {
        printf("skipped the ownership case: it needs root to chown\n");
    }
    rh_daemon *d = start_on(dir, "no", NULL);
    stop_ok(d);
    char path[600];
    snprintf(path, sizeof path, "%s/journal", dir);
    assert_int_equal(chmod(path, 0666), 0);
    snprintf(want, sizeof want, "chmod go-w '%s'", path);
    refuses(dir, "/journal is writable by its group or others", want);
    assert_int_equal(chmod(path, 0600), 0);
}

/* A data directory the daemon creates gets mode 0700. */
static void a_data_directory_the_daemon_creates_gets_mode_0700(void **state)
{
    (void)state;
    const char *parent = rh_temp_dir();
    assert_non_null(parent);
    char fresh[600];
    snprintf(fresh, sizeof fresh, "%s/new", parent);
    rh_daemon *d = start_on(fresh, "no", NULL);
    struct stat sb;
    assert_int_equal(stat(fresh, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0700);
    stop_ok(d);
}

/* DIR/lock deleted while a daemon runs: a second daemon on the directory
 * is still refused (the lock is the directory's own), and the first one
 * is unharmed. */
static void a_deleted_lock_file_keeps_a_second_daemon_out(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "no", NULL);
    char path[600];
    snprintf(path, sizeof path, "%s/lock", dir);
    assert_int_equal(unlink(path), 0);
    refuses(dir, "another reposed is using this data directory", NULL);
    rh_conn *c = connect_ok(d, false);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
    d = start_on(dir, "no", NULL); /* free again once it stopped */
    stop_ok(d);
}

/* ---- every mutating method reaches every subscriber ----------------------------- */

/* One sample of each mutating method (docs/ARCHITECTURE.md, The way of a
 * mutation): what it needs first, its params, and the scene a watcher
 * follows (NULL: none can, the scene is new or it is a model) with the
 * notification it gets. */
typedef struct mutation_sample {
    const char *method;
    const char *setup; /* one request line (or batch) run first, or NULL */
    const char *params;
    const char *watched;
    const char *notification;
} mutation_sample;

#define SPHERE(x) "{\"sphere\":{\"center\":[" #x ",0,0],\"radius\":0.25}}"
#define MODEL_PARAMS(name)                                                                         \
    "{\"model\":\"" name "\",\"links\":[{\"id\":\"l0\",\"frame\":0,\"shape\":" SPHERE(1) "}]}"

/* A kinematic arm (two revolute joints), a scene with an instance of it and
 * a part, for the attachment samples. */
#define KARM_PUT(id)                                                                               \
    "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"model.put\",\"params\":{\"model\":\"karm\"," \
    "\"joints\":[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"base\",\"child\":\"l1\","     \
    "\"axis\":[0,0,1]}],\"links\":[{\"id\":\"b\",\"link\":\"base\",\"shape\":" SPHERE(             \
        0) "},{\"id\":"                                                                            \
           "\"l\",\"link\":\"l1\",\"shape\":" SPHERE(1) "}]}}"
#define HOLD_SCENE(id, name)                                                                       \
    "{\"jsonrpc\":\"2.0\",\"id\":" #id                                                             \
    ",\"method\":\"scene.create\",\"params\":{\"scene\":\"" name                                   \
    "\",\"robots\":{\"r\":{\"model\":\"karm\"}},\"objects\":{\"part\":{\"pose\":{\"translation\":" \
    "[2,0,0]},\"shapes\":{\"p\":" SPHERE(0) "}}}}}"

static const mutation_sample samples[] = {
    {"scene.attach", "[" KARM_PUT(1) "," HOLD_SCENE(2, "hold") "]",
     "{\"scene\":\"hold\",\"object\":\"part\",\"robot\":\"r\",\"link\":\"l1\"}", "hold",
     "scene.changed"},
    {"scene.detach",
     "[" HOLD_SCENE(1, "free") ",{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.attach\","
                               "\"params\":{\"scene\":\"free\",\"object\":\"part\",\"robot\":\"r\","
                               "\"link\":\"l1\"}}]",
     "{\"scene\":\"free\",\"object\":\"part\"}", "free", "scene.changed"},
    {"scene.create", NULL, "{\"scene\":\"made\",\"shapes\":{\"a\":" SPHERE(1) "}}", NULL, NULL},
    {"scene.put",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{"
     "\"scene\":\"p\",\"shapes\":{\"a\":" SPHERE(1) "}}}",
     "{\"scene\":\"p\",\"shapes\":{\"a\":" SPHERE(2) ",\"b\":" SPHERE(
         3) "},"
            "\"objects\":{\"o\":{\"pose\":{\"translation\":[0,1,0]},\"shapes\":{\"s\":" SPHERE(
                1) "}}}}",
     "p", "scene.changed"},
    {"scene.move",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{"
     "\"scene\":\"mv\",\"objects\":{\"box\":{\"pose\":{\"translation\":[1,0,0]},"
     "\"shapes\":{\"a\":" SPHERE(1) ",\"b\":" SPHERE(2) "}}}}}",
     "{\"scene\":\"mv\",\"objects\":{\"box\":{\"translation\":[2,0.5,0],"
     "\"rotation\":{\"w\":0.6,\"x\":0,\"y\":0.8,\"z\":0}}}}",
     "mv", "scene.changed"},
    {"scene.replace",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{"
     "\"scene\":\"r\",\"shapes\":{\"a\":" SPHERE(1) ",\"b\":" SPHERE(2) "}}}",
     "{\"scene\":\"r\",\"shapes\":{\"c\":" SPHERE(4) "}}", "r", "scene.changed"},
    {"scene.remove",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{"
     "\"scene\":\"x\",\"shapes\":{\"a\":" SPHERE(1) ",\"b\":" SPHERE(2) "}}}",
     "{\"scene\":\"x\",\"ids\":[\"b\",\"nope\"]}", "x", "scene.changed"},
    {"scene.delete",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{"
     "\"scene\":\"gone\",\"shapes\":{\"a\":" SPHERE(1) "}}}",
     "{\"scene\":\"gone\"}", "gone", "scene.deleted"},
    {"model.put", NULL, MODEL_PARAMS("m"), NULL, NULL},
    {"model.delete",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":" MODEL_PARAMS("md") "}",
     "{\"model\":\"md\"}", NULL, NULL},
};

static const mutation_sample *sample_of(const char *method)
{
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
        if (strcmp(samples[i].method, method) == 0)
            return &samples[i];
    return NULL;
}

/* A new connection watching `scene`. */
static rh_conn *watch_scene(const rh_daemon *d, const char *scene)
{
    char req[256];
    rh_conn *w = connect_ok(d, false);
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.watch\",\"params\":{"
             "\"scene\":\"%s\"}}",
             scene);
    cJSON *rep = call_json(w, req);
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    return w;
}

static uint64_t journal_records(rh_conn *c)
{
    cJSON *st = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"stats\"}");
    uint64_t n = (uint64_t)num_at(st, "result.durability.journal_records");
    cJSON_Delete(st);
    return n;
}

/* Every method the method table marks as mutating, run on a daemon with a
 * journal (--fsync always) and a watcher: the journal records it, its
 * watcher is told, a failed fsync undoes it (-32007, the state as before,
 * the watcher told nothing), and a snapshot holds what it did (a restart from
 * the snapshot alone gives the same state).  A mutating method added to
 * the table without a sample here fails the test: no method can skip the
 * journal, the watchers, the undo or the snapshot unnoticed. */
static void every_mutating_method_reaches_journal_watchers_undo_and_snapshot(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    char data[600];
    snprintf(data, sizeof data, "%s/data", dir);
    rh_daemon *d = start_faulty(data, "always", dir);
    rh_conn *c = connect_ok(d, false);
    size_t tried = 0;
    for (size_t i = 0; i < rpd_method_count; i++) {
        const rpd_method *m = &rpd_methods[i];
        if (!(m->flags & RPD_METHOD_MUTATES))
            continue;
        const mutation_sample *smp = sample_of(m->name);
        if (!smp)
            fail_msg("mutating method %s has no sample: add one to samples[] so that the test "
                     "proves the journal, the watchers, the undo and the snapshot see it",
                     m->name);
        tried++;
        if (smp->setup) {
            cJSON *rep = call_json(c, smp->setup);
            bool ok = cJSON_IsArray(rep) ? true : at(rep, "result") != NULL;
            const cJSON *one;
            if (cJSON_IsArray(rep))
                cJSON_ArrayForEach(one, rep) ok = ok && at(one, "result") != NULL;
            if (!ok)
                fail_msg("%s: setup failed: %s", m->name, show(rep));
            cJSON_Delete(rep);
        }
        rh_conn *w = smp->watched ? watch_scene(d, smp->watched) : NULL;
        char line[1024];
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\",\"params\":%s}", m->name,
                 smp->params);

        /* The undo: its fsync fails, it is answered -32007 and undone. */
        cJSON *before = dump(c);
        fault(dir, "fsync", "1");
        cJSON *rep = call_json(c, line);
        expect_storage_error(rep, "fsync failed");
        cJSON_Delete(rep);
        fault(dir, "fsync", NULL);
        expect_state(c, before);
        cJSON_Delete(before);
        /* The journal and the watchers: it goes in once, at its revision. */
        uint64_t records = journal_records(c);
        rep = call_json(c, line);
        if (!at(rep, "result"))
            fail_msg("%s: %s", m->name, show(rep));
        uint64_t rev = (uint64_t)num_at(rep, "result.revision");
        cJSON_Delete(rep);
        assert_int_equal(journal_records(c), records + 1);
        if (w) {
            /* Notifications wait for the group's fsync: the watcher heard
             * nothing of the undone change (no scene.changed, no
             * scene.resync, and an undone scene.delete left its watch
             * open), so the first thing it hears is this change. */
            cJSON *n = next_any_notification(w);
            assert_string_equal(at(n, "method")->valuestring, smp->notification);
            assert_int_equal((uint64_t)num_at(n, "params.revision"), rev);
            cJSON_Delete(n);
            rh_close(w);
        }
    }
    assert_true(tried >= 7);
    /* The snapshot: saved, then a kill; the journal after it is a bare
     * header, so the restart has only the snapshot to go by. */
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"save\"}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    cJSON *all = dump(c);
    rh_close(c);
    kill_now(d);
    assert_int_equal(file_size(data, "journal"), 64);
    d = start_on(data, "always", NULL);
    c = connect_ok(d, false);
    expect_state(c, all);
    cJSON_Delete(all);
    rh_close(c);
    stop_ok(d);
}

/* ---- restarts keep the store ------------------------------------------------------------ */

/* Random mutations of every kind survive restarts (SIGTERM or SIGKILL,
 * each --fsync mode, which hello reports with the directory): every scene
 * and model exactly as it was, and the revisions going on from where the
 * last daemon stopped, one per successful mutation. */
static void mutations_survive_restarts(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rng r = {20261202};
    int rounds = rh_wrapped() ? 2 : 4, per = rh_wrapped() ? 40 : 250;
    const char *modes[] = {"everysec", "always", "no", "everysec"};
    cJSON *before = NULL;
    for (int round = 0; round < rounds; round++) {
        rh_daemon *d = start_on(dir, modes[round], NULL);
        rh_conn *c = connect_ok(d, false);
        cJSON *hello = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}");
        assert_string_equal(str_at(hello, "result.durability.data_dir"), dir);
        assert_string_equal(str_at(hello, "result.durability.fsync"), modes[round]);
        cJSON_Delete(hello);
        if (before) { /* what the last daemon held, exactly */
            expect_state(c, before);
            cJSON_Delete(before);
        }
        uint64_t rev0 = (uint64_t)num_at(before = dump(c), "revision");
        cJSON_Delete(before);
        int ok = run_mutations(c, &r, per);
        assert_true(ok > per / 3);
        /* A scene past the brute-force size, so that the probes in dump
         * walk its tree: 60 shapes put one request at a time, 5 removed. */
        for (int k = 0; k < 60; k++) {
            char req[512];
            snprintf(req, sizeof req,
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{"
                     "\"scene\":\"big\",\"create\":true,\"shapes\":{\"g%d_%d\":{\"sphere\":{"
                     "\"center\":[%.17g,%.17g,%.17g],\"radius\":%.17g}}}}}",
                     k, round, k, odd(&r), odd(&r), odd(&r), fabs(odd(&r)) / 10);
            cJSON *rep = call_json(c, req);
            assert_non_null(at(rep, "result"));
            cJSON_Delete(rep);
            ok++;
        }
        cJSON *rm = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.remove\","
                                 "\"params\":{\"scene\":\"big\",\"ids\":[\"g0_1\",\"g0_2\","
                                 "\"g1_3\",\"g2_4\",\"g3_5\"]}}");
        assert_non_null(at(rm, "result"));
        cJSON_Delete(rm);
        ok++;
        before = dump(c);
        /* Revisions went on from where the last daemon stopped, one per
         * successful mutation. */
        assert_int_equal((uint64_t)num_at(before, "revision"), rev0 + (uint64_t)ok);
        rh_close(c);
        if (round % 2)
            stop_ok(d);
        else {
            rh_signal(d, SIGKILL); /* the kernel keeps what was written */
            rh_wait_exit(d, rh_ms(RH_TIMEOUT_MS));
            rh_destroy(d);
        }
    }
    cJSON_Delete(before);
}

/* The replay ignores limits lowered since the journal was written (a
 * scene past --max-shapes comes back whole); new mutations obey them. */
static void the_replay_ignores_limits_lowered_since(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "everysec", NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                              "\"params\":{\"scene\":\"big\",\"shapes\":{"
                              "\"a\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1}},"
                              "\"b\":{\"sphere\":{\"center\":[1,0,0],\"radius\":1}},"
                              "\"c\":{\"sphere\":{\"center\":[2,0,0],\"radius\":1}},"
                              "\"d\":{\"sphere\":{\"center\":[3,0,0],\"radius\":1}}}}}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    rh_close(c);
    stop_ok(d);
    const char *extra[] = {"--data-dir", dir, "--max-shapes", "2", NULL};
    d = start(extra);
    c = connect_ok(d, false);
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.list\"}");
    assert_int_equal((int)num_at(cJSON_GetArrayItem(at(rep, "result.scenes"), 0), "shapes"), 4);
    cJSON_Delete(rep);
    /* New mutations obey the new limit. */
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.put\",\"params\":{"
                       "\"scene\":\"big\",\"shapes\":{\"e\":{\"sphere\":{\"center\":[0,0,0],"
                       "\"radius\":1}}}}}");
    assert_int_equal((int)num_at(rep, "error.code"), -32004);
    cJSON_Delete(rep);
    rh_close(c);
    stop_ok(d);
}

/* A file's text as a JSON string value, quoted and escaped. */
static char *json_string_of_file(const char *path)
{
    size_t n;
    char *text = read_file(path, &n);
    assert_non_null(text);
    cJSON *str = cJSON_CreateString(text);
    char *out = cJSON_PrintUnformatted(str);
    cJSON_Delete(str);
    free(text);
    return out;
}

/* The journal and the snapshot keep a model as its definition in
 * model.put's JSON form, written from what the store built, not from the
 * request: a model sent as URDF + SRDF, and a JSON tree whose links are
 * named in an order of their own (tree_links) with a mimic joint, limits,
 * default positions and allowed pairs, come back with model.get giving
 * the same answers, after a replay of the journal and after a restart
 * from the snapshot alone. */
static void models_come_back_as_they_were(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    rh_daemon *d = start_on(dir, "always", NULL);
    rh_conn *c = connect_ok(d, false);
    char *urdf = json_string_of_file(REPOSE_TEST_DATA "/arm7.urdf");
    char *srdf = json_string_of_file(REPOSE_TEST_DATA "/arm7.srdf");
    textbuf t = {0};
    tb_printf(&t,
              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":{\"model\":"
              "\"arm\",\"urdf\":%s,\"srdf\":%s,\"allowed_scene\":[[\"arm7_link1\",\"post\"]]}}",
              urdf, srdf);
    free(urdf);
    free(srdf);
    cJSON *rep = call_json(c, t.p);
    free(t.p);
    if (!at(rep, "result"))
        fail_msg("urdf model: %s", show(rep));
    cJSON_Delete(rep);
    rep = call_json(
        c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"model.put\",\"params\":{\"model\":\"tree\","
           "\"tree_links\":[\"tip\",\"base\",\"mid\",\"side\",\"nub\"],"
           "\"links\":[{\"id\":\"m0\",\"link\":\"mid\",\"shape\":{\"capsule\":{\"a\":[0,0,0],"
           "\"b\":[0.3,0,0],\"radius\":0.05}}},{\"id\":\"t0\",\"link\":\"tip\",\"shape\":{"
           "\"sphere\":{\"center\":[0.1,0,0],\"radius\":0.04}}},{\"id\":\"b0\",\"link\":\"base\","
           "\"shape\":{\"sphere\":{\"center\":[0,0,0.1],\"radius\":0.1}}}],"
           "\"joints\":[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"base\",\"child\":"
           "\"mid\",\"origin\":{\"xyz\":[0,0,0.2],\"rpy\":[0.1,0,0]},\"axis\":[0,0,2],\"limits\":"
           "{\"lower\":-1.5,\"upper\":1.25}},{\"name\":\"j2\",\"type\":\"prismatic\",\"parent\":"
           "\"mid\",\"child\":\"tip\",\"origin\":{\"xyz\":[0.3,0,0],\"rpy\":[0,0,0]},\"axis\":"
           "[1,0,0],\"limits\":{\"lower\":0,\"upper\":0.2}},{\"name\":\"j3\",\"type\":"
           "\"revolute\",\"parent\":\"base\",\"child\":\"side\",\"axis\":[0,1,0],\"mimic\":{"
           "\"joint\":\"j1\",\"multiplier\":-0.5,\"offset\":0.125}},{\"name\":\"fx\",\"type\":"
           "\"fixed\",\"parent\":\"tip\",\"child\":\"nub\"}],"
           "\"default_positions\":{\"j1\":0.75,\"j2\":0.05},"
           "\"allowed_pairs\":[[\"base\",\"mid\"],[\"mid\",\"tip\"]],\"safety_margin\":0.01}}");
    if (!at(rep, "result"))
        fail_msg("json tree: %s", show(rep));
    cJSON_Delete(rep);
    /* The tree as the client named it: its links in the order given. */
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"model.get\",\"params\":{"
                       "\"model\":\"tree\"}}");
    assert_string_equal(str_at(cJSON_GetArrayItem(at(rep, "result.links"), 0), ""), "tip");
    cJSON_Delete(rep);
    cJSON *want = dump(c);
    rh_close(c);
    kill_now(d); /* the journal alone */
    d = start_on(dir, "always", NULL);
    c = connect_ok(d, false);
    expect_state(c, want);
    rep = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"save\"}");
    assert_non_null(at(rep, "result"));
    cJSON_Delete(rep);
    rh_close(c);
    kill_now(d); /* the snapshot alone */
    assert_int_equal(file_size(dir, "journal"), 64);
    d = start_on(dir, "always", NULL);
    c = connect_ok(d, false);
    expect_state(c, want);
    cJSON_Delete(want);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        /* a damaged journal */
        DAEMON_TEST(a_torn_last_record_is_cut_at_every_offset),
        DAEMON_TEST(corruption_refuses_to_start_and_repair_cuts_there),
        DAEMON_TEST(a_file_that_is_not_a_journal_is_refused),
        /* kills keep every acknowledged mutation */
        DAEMON_TEST(sigkill_keeps_every_acknowledged_mutation),
        DAEMON_TEST(background_snapshots_keep_every_acknowledged_mutation),
        /* a full disk */
        cmocka_unit_test_teardown(a_full_disk_refuses_mutations_and_recovers, unmount_teardown),
        /* snapshots */
        DAEMON_TEST(the_store_comes_back_from_its_snapshot_and_the_journal_after_it),
        DAEMON_TEST(boxes_and_halfspaces_come_back_bit_for_bit),
        DAEMON_TEST(a_damaged_or_missing_snapshot_stops_the_start),
        DAEMON_TEST(save_without_a_data_directory_is_refused),
        DAEMON_TEST(a_kill_during_save_loses_nothing),
        /* storage failures (injected faults) and held replies */
        DAEMON_TEST(undone_replies_keep_their_ids_and_their_errors),
        DAEMON_TEST(a_failed_fsync_undoes_the_group),
        DAEMON_TEST(a_failed_background_fsync_refuses_mutations_until_one_works),
        DAEMON_TEST(a_partial_record_blocks_appends_until_it_is_cut),
        DAEMON_TEST(save_behind_a_waiting_mutation_is_refused),
        /* a data directory that refuses to guess */
        DAEMON_TEST(a_missing_journal_refuses_to_start),
        DAEMON_TEST(a_journal_cut_inside_its_header_refuses_to_start),
        DAEMON_TEST(a_journal_cut_below_what_was_synced_refuses_to_start),
        DAEMON_TEST(a_journal_of_another_snapshot_refuses_to_start),
        DAEMON_TEST(files_of_the_previous_format_are_upgraded),
        /* one daemon per directory, none through links or others' hands */
        DAEMON_TEST(a_second_daemon_on_a_directory_in_use_is_refused),
        DAEMON_TEST(symbolic_links_in_the_data_directory_are_refused),
        DAEMON_TEST(a_data_directory_others_can_change_is_refused),
        DAEMON_TEST(a_data_directory_the_daemon_creates_gets_mode_0700),
        DAEMON_TEST(a_deleted_lock_file_keeps_a_second_daemon_out),
        /* every mutating method reaches the journal, the watchers, the undo and the snapshot */
        DAEMON_TEST(every_mutating_method_reaches_journal_watchers_undo_and_snapshot),
        /* restarts keep the store */
        DAEMON_TEST(mutations_survive_restarts),
        DAEMON_TEST(the_replay_ignores_limits_lowered_since),
        DAEMON_TEST(models_come_back_as_they_were),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
