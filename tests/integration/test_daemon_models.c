/* SPDX-License-Identifier: MIT */
/*
 * Daemon robot-check tests: the real reposed over its real sockets.
 *
 * Usage: test_daemon_models PATH-TO-REPOSED
 *
 * Each test starts its own daemon (tests/integration/harness.h), so tests
 * are independent and may use special flags.  Helpers shared with the
 * other daemon test programs are in daemon_util.h.
 *
 * check.batch through the daemon must agree to the last bit with
 * rp_model_check run in this process on the same model, scene and poses.
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "harness.h"
#include "repose/geometry.h"
#include "repose/scene.h"

/* ---- robot checks ------------------------------------------------------------------------ */

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-53;
}

/* check.batch of 10,000 configurations of a 7-frame, 14-capsule arm
 * against a 600-shape scene, through the daemon; every result must equal
 * rp_model_check run in this process on the same model, scene and poses
 * (parsed back from the request text, so both sides see identical doubles). */
static void check_batch_of_ten_thousand_matches_in_process(void **state)
{
    (void)state;
    int configs = rh_wrapped() ? 400 : 10000;
    uint64_t seed = 42;
    rp_store *st = rp_store_new(NULL);
    textbuf t = {malloc(1 << 16), 0, 1 << 16};

    /* The scene: spheres and capsules in a 4 m cube. */
    enum { NS = 600 };
    rp_shape_put shapes[NS];
    char ids[NS][16];
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                  "{\"scene\":\"w\",\"shapes\":{");
    for (int i = 0; i < NS; i++) {
        snprintf(ids[i], sizeof ids[i], "o%d", i);
        shapes[i].id = ids[i];
        rp_vec3 c = {urand(&seed) * 4 - 2, urand(&seed) * 4 - 2, urand(&seed) * 4 - 2};
        double r = urand(&seed) * 0.05;
        if (i % 2) {
            shapes[i].shape = rp_shape_from_sphere((rp_sphere){c, r});
            tb_printf(&t, "%s\"%s\":{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],\"radius\":%.17g}}",
                      i ? "," : "", ids[i], c.x, c.y, c.z, r);
        } else {
            rp_vec3 b = {c.x + urand(&seed) * 0.3, c.y, c.z + urand(&seed) * 0.1};
            shapes[i].shape = rp_shape_from_capsule((rp_capsule){c, b, r});
            tb_printf(&t,
                      "%s\"%s\":{\"capsule\":{\"a\":[%.17g,%.17g,%.17g],\"b\":[%.17g,%.17g,%.17g],"
                      "\"radius\":%.17g}}",
                      i ? "," : "", ids[i], c.x, c.y, c.z, b.x, b.y, b.z, r);
        }
    }
    tb_printf(&t, "}}}");
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "w", shapes, NS, &sc), RP_OK);

    /* The model: two capsules per frame, frames 0..6, adjacent pairs allowed. */
    rp_link links[14];
    char lids[14][8];
    const char *allowed[2 * 13];
    for (int i = 0; i < 14; i++) {
        snprintf(lids[i], sizeof lids[i], "l%d", i);
        links[i].id = lids[i];
        links[i].frame = i / 2;
        links[i].shape = rp_shape_from_capsule(
            (rp_capsule){{0, 0, 0.1 * (i % 2)}, {0.2, 0, 0.1 * (i % 2)}, 0.03});
        if (i > 0) {
            allowed[2 * (i - 1)] = lids[i - 1];
            allowed[2 * (i - 1) + 1] = lids[i];
        }
    }
    rp_model_def def = {.links = links,
                        .n_links = 14,
                        .safety_margin = 0.01,
                        .allowed_pairs = allowed,
                        .n_allowed = 13,
                        .self_collision = true};
    rp_model *m;
    rp_model_error me;
    assert_int_equal(rp_store_model_put(st, "arm", &def, &m, &me), RP_OK);

    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *r = call_json(c, t.p);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    t.len = 0;
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"model.put\",\"params\":{\"model\":"
                  "\"arm\",\"safety_margin\":0.01,\"links\":[");
    for (int i = 0; i < 14; i++)
        tb_printf(&t,
                  "%s{\"id\":\"%s\",\"frame\":%d,\"shape\":{\"capsule\":{\"a\":[0,0,%.17g],"
                  "\"b\":[0.2,0,%.17g],\"radius\":0.03}}}",
                  i ? "," : "", lids[i], i / 2, 0.1 * (i % 2), 0.1 * (i % 2));
    tb_printf(&t, "],\"allowed_pairs\":[");
    for (int i = 1; i < 14; i++)
        tb_printf(&t, "%s[\"%s\",\"%s\"]", i > 1 ? "," : "", lids[i - 1], lids[i]);
    tb_printf(&t, "]}}");
    r = call_json(c, t.p);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);

    /* The batch: random frame poses within 1.5 m of the origin. */
    t.len = 0;
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"check.batch\",\"params\":{"
                  "\"model\":\"arm\",\"scene\":\"w\",\"report\":\"closest\",\"configurations\":[");
    for (int k = 0; k < configs; k++) {
        tb_printf(&t, "%s{\"frames\":[", k ? "," : "");
        for (int f = 0; f < 7; f++) {
            double q[4], n = 0;
            for (int i = 0; i < 4; i++) {
                q[i] = urand(&seed) * 2 - 1;
                n += q[i] * q[i];
            }
            n = sqrt(n);
            tb_printf(&t,
                      "%s{\"translation\":[%.17g,%.17g,%.17g],\"rotation\":{\"w\":%.17g,"
                      "\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}}",
                      f ? "," : "", urand(&seed) * 3 - 1.5, urand(&seed) * 3 - 1.5,
                      urand(&seed) * 3 - 1.5, q[0] / n, q[1] / n, q[2] / n, q[3] / n);
        }
        tb_printf(&t, "]}");
    }
    tb_printf(&t, "]}}");
    cJSON *req = cJSON_Parse(t.p);
    assert_non_null(req);
    r = call_json(c, t.p);
    const cJSON *results = at(r, "result.results");
    assert_non_null(results);
    assert_int_equal(cJSON_GetArraySize(results), configs);

    /* The same in process. */
    const cJSON *cj = cJSON_GetObjectItem(cJSON_GetObjectItem(req, "params"), "configurations");
    const cJSON *res = results->child;
    int collisions = 0;
    for (const cJSON *cfg = cj->child; cfg; cfg = cfg->next, res = res->next) {
        rp_transform frames[7];
        int f = 0;
        for (const cJSON *p = cJSON_GetObjectItem(cfg, "frames")->child; p; p = p->next, f++) {
            const cJSON *tr = cJSON_GetObjectItem(p, "translation");
            const cJSON *ro = cJSON_GetObjectItem(p, "rotation");
            rp_vec3 tv = {cJSON_GetArrayItem(tr, 0)->valuedouble,
                          cJSON_GetArrayItem(tr, 1)->valuedouble,
                          cJSON_GetArrayItem(tr, 2)->valuedouble};
            assert_int_equal(
                rp_transform_from_quaternion(tv, cJSON_GetObjectItem(ro, "w")->valuedouble,
                                             cJSON_GetObjectItem(ro, "x")->valuedouble,
                                             cJSON_GetObjectItem(ro, "y")->valuedouble,
                                             cJSON_GetObjectItem(ro, "z")->valuedouble, &frames[f]),
                RP_OK);
        }
        rp_check_opts opts = {RP_REPORT_CLOSEST, false, 0, NULL, NULL, 0};
        rp_check_result want;
        assert_int_equal(rp_model_check(m, sc, NULL, frames, 7, &opts, &want), RP_OK);
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(res, "collision")), want.collision);
        collisions += want.collision;
        assert_true(want.has_min);
        double got = cJSON_GetObjectItem(res, "min_distance")->valuedouble;
        if (got != want.closest.distance)
            fail_msg("min_distance %.17g, in process %.17g", got, want.closest.distance);
        const cJSON *cl = cJSON_GetObjectItem(res, "closest");
        assert_string_equal(cJSON_GetObjectItem(cl, "link")->valuestring,
                            rp_model_link_at(m, want.closest.link)->id);
        const char *other = want.closest.kind == RP_PAIR_SCENE
                                ? rp_scene_id_at(sc, want.closest.other)
                                : rp_model_link_at(m, want.closest.other)->id;
        assert_string_equal(cJSON_GetObjectItem(cl, "other")->valuestring, other);
        rp_check_result_free(&want);
    }
    /* The distribution must exercise both outcomes. */
    assert_true(collisions > 0 && collisions < configs);
    cJSON_Delete(r);
    cJSON_Delete(req);
    free(t.p);
    rh_close(c);
    stop_ok(d);
    rp_store_free(st);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(check_batch_of_ten_thousand_matches_in_process),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
