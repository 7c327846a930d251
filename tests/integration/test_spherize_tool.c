/* SPDX-License-Identifier: MIT */
/*
 * URDF meshes on the client side: the client library's mesh resolver and
 * URDF scan (src/client/client_meshes.c, urdf_scan.c), and repose-spherize
 * against the daemon: the URDF it writes reads back with rp_urdf_parse with
 * no mesh left, and its spheres are the daemon's model.get shapes for the
 * same robot (tests/data/mesh_arm) and options, bit for bit.
 *
 * Usage: test_spherize_tool PATH-TO-REPOSED PATH-TO-REPOSE-SPHERIZE
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "harness.h"
#include "repose/client.h"

#include "client/urdf_scan.h"
#include "urdf/urdf.h"

#ifndef REPOSE_TEST_DATA
#error "REPOSE_TEST_DATA must name tests/data"
#endif
#define PKG_PARENT REPOSE_TEST_DATA "/mesh_arm"
#define PKG_DIR PKG_PARENT "/mesh_arm_description"
#define URDF_PATH PKG_DIR "/urdf/mesh_arm.urdf"
#define SRDF_PATH PKG_DIR "/srdf/mesh_arm.srdf"

static const char *spherize_path;
static char scratch[256]; /* a temporary directory of this run */

/* ---- helpers ---------------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* scratch/rel, made with its parent directories. */
static const char *in_scratch(char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", scratch, rel);
    for (char *p = buf + strlen(scratch) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0700);
            *p = '/';
        }
    return buf;
}

/* Runs repose-spherize with args (NULL-terminated, after argv[0]), stderr
 * to /dev/null.  Returns its exit code. */
static int run_spherize(const char *const *args)
{
    const char *argv[32] = {spherize_path};
    size_t n = 1;
    while (args[n - 1] && n < 31) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr))
            _exit(126);
        execv(spherize_path, (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- the resolver --------------------------------------------------------------- */

static void resolve_expect(const char *uri, const char *urdf_path, const char *const *dirs,
                           size_t n, const char *want_path, const char *want_msg)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *path = NULL;
    rp_client_error_kind k = rp_client_resolve_mesh_uri(uri, urdf_path, dirs, n, &path, &err);
    if (want_path) {
        if (k != RP_CLIENT_OK)
            fail_msg("%s: %s", uri, err.message);
        assert_string_equal(path, want_path);
    } else {
        assert_int_equal(k, RP_CLIENT_ARG);
        assert_null(path);
        if (!strstr(err.message, want_msg))
            fail_msg("%s: '%s' lacks '%s'", uri, err.message, want_msg);
    }
    free(path);
    rp_client_error_free(&err);
}

static void test_resolve_rules(void **state)
{
    (void)state;
    char a[512], b[512], c[512], urdf[512];
    /* dirA/pkg/meshes/m.stl and dirB/pkg/meshes/m.stl: the first DIR wins;
     * dirC is the package itself (its basename is "solo"). */
    write_file(in_scratch(a, sizeof a, "dirA/pkg/meshes/m.stl"), "x");
    write_file(in_scratch(b, sizeof b, "dirB/pkg/meshes/m.stl"), "x");
    write_file(in_scratch(b, sizeof b, "dirB/pkg/meshes/only_b.stl"), "x");
    write_file(in_scratch(c, sizeof c, "dirC/solo/meshes/s.obj"), "x");
    write_file(in_scratch(urdf, sizeof urdf, "robot/urdf/r.urdf"), "<robot/>");
    write_file(in_scratch(a, sizeof a, "robot/meshes/rel.dae"), "x");
    char dA[300], dB[300], dC[300], dCpkg[300], want[600];
    snprintf(dA, sizeof dA, "%s/dirA", scratch);
    snprintf(dB, sizeof dB, "%s/dirB/", scratch); /* a trailing '/' */
    snprintf(dC, sizeof dC, "%s/dirC", scratch);
    snprintf(dCpkg, sizeof dCpkg, "%s/dirC/solo", scratch);
    const char *ab[] = {dA, dB};
    unsetenv("ROS_PACKAGE_PATH");

    snprintf(want, sizeof want, "%s/pkg/meshes/m.stl", dA);
    resolve_expect("package://pkg/meshes/m.stl", urdf, ab, 2, want, NULL);
    snprintf(want, sizeof want, "%spkg/meshes/only_b.stl", dB);
    resolve_expect("package://pkg/meshes/only_b.stl", urdf, ab, 2, want, NULL);
    /* DIR named after the package: DIR/PATH. */
    const char *solo[] = {dA, dCpkg};
    snprintf(want, sizeof want, "%s/meshes/s.obj", dCpkg);
    resolve_expect("package://solo/meshes/s.obj", urdf, solo, 2, want, NULL);
    /* ... but DIR/PKG/PATH anywhere in the path comes first. */
    const char *both[] = {dCpkg, dC};
    snprintf(want, sizeof want, "%s/solo/meshes/s.obj", dC);
    resolve_expect("package://solo/meshes/s.obj", urdf, both, 2, want, NULL);
    /* ROS_PACKAGE_PATH after the given directories, empty entries skipped. */
    char env[700];
    snprintf(env, sizeof env, "::/nonexistent:%s", dC);
    setenv("ROS_PACKAGE_PATH", env, 1);
    snprintf(want, sizeof want, "%s/solo/meshes/s.obj", dC);
    resolve_expect("package://solo/meshes/s.obj", urdf, NULL, 0, want, NULL);
    resolve_expect("package://solo/meshes/s.obj", urdf, ab, 2, want, NULL);
    char msg[1400];
    int w = snprintf(msg, sizeof msg,
                     "package://nope/m.stl: not found under %s, %s, /nonexistent, %s", dA, dB, dC);
    assert_true(w > 0 && (size_t)w < sizeof msg);
    resolve_expect("package://nope/m.stl", urdf, ab, 2, NULL, msg);
    unsetenv("ROS_PACKAGE_PATH");
    resolve_expect("package://nope/m.stl", urdf, NULL, 0, NULL, "no package path to search");
    resolve_expect("package://pkg", urdf, ab, 2, NULL, "package://PACKAGE/PATH");
    resolve_expect("package:///m.stl", urdf, ab, 2, NULL, "package://PACKAGE/PATH");

    /* Relative to the URDF's directory; absolute; file://. */
    snprintf(want, sizeof want, "%s/robot/urdf/../meshes/rel.dae", scratch);
    resolve_expect("../meshes/rel.dae", urdf, NULL, 0, want, NULL);
    resolve_expect("meshes/rel.dae", urdf, NULL, 0, NULL, "relative to the URDF's directory");
    snprintf(want, sizeof want, "%s/robot/meshes/rel.dae", scratch);
    resolve_expect(want, urdf, NULL, 0, want, NULL);
    char uri[700];
    snprintf(uri, sizeof uri, "file://%s", want);
    resolve_expect(uri, urdf, NULL, 0, want, NULL);
    resolve_expect("file://relative/x.stl", urdf, NULL, 0, NULL, "absolute path");
    resolve_expect("http://example.com/x.stl", urdf, NULL, 0, NULL, "only package://");
    /* A directory is not a mesh. */
    resolve_expect(dA, urdf, NULL, 0, NULL, "not found");
}

/* The scan sees what the daemon's reader sees: collision meshes of links
 * of the root robot, attributes in either quote with references decoded. */
static void test_scan(void **state)
{
    (void)state;
    static const char doc[] =
        "<?xml version='1.0'?>\n"
        "<!DOCTYPE robot [ <!-- a '>' in a comment --> ]>\n"
        "<robot name='r'>\n"
        "  <!-- <link name=\"commented\"><collision><geometry><mesh filename=\"c.stl\"/>"
        "</geometry></collision></link> -->\n"
        "  <link name='a&amp;b'>\n"
        "    <visual><geometry><mesh filename='visual.stl'/></geometry></visual>\n"
        "    <collision><geometry><box size='1 1 1'/></geometry></collision>\n"
        "    <collision name=\"m\">\n"
        "      <geometry><mesh filename=\"package://p/a&#x20;b&lt;&apos;&quot;.stl\" "
        "scale='1 1 1'/></geometry>\n"
        "    </collision>\n"
        "    <![CDATA[ <collision> ]]>\n"
        "  </link>\n"
        "  <xacro:macro name='m'><link name='x'><collision><geometry><mesh filename='no.stl'/>"
        "</geometry></collision></link></xacro:macro>\n"
        "  <link name=\"b\"><collision/><collision><geometry><mesh\n"
        "      filename=\"two\tlines\r\n.obj\"/></geometry></collision></link>\n"
        "</robot>\n";
    rp_urdf_scan s;
    char why[256];
    assert_true(rp_urdf_scan_(doc, strlen(doc), &s, why, sizeof why));
    assert_int_equal(s.n_links, 2);
    assert_string_equal(s.links[0], "a&b");
    assert_string_equal(s.links[1], "b");
    assert_int_equal(s.n_colls, 4);
    assert_null(s.colls[0].mesh_uri);
    assert_string_equal(s.colls[1].mesh_uri, "package://p/a b<'\".stl");
    assert_int_equal(s.colls[1].index, 1);
    assert_int_equal(s.colls[1].line, 8);
    assert_int_equal(s.colls[1].mesh_line, 9);
    assert_memory_equal(doc + s.colls[1].start, "<collision name=", 16);
    assert_memory_equal(doc + s.colls[1].end - 12, "</collision>", 12);
    assert_int_equal(s.colls[2].index, 0); /* <collision/> of b */
    assert_int_equal(s.colls[2].end - s.colls[2].start, strlen("<collision/>"));
    assert_string_equal(s.colls[3].mesh_uri, "two lines .obj");
    rp_urdf_scan_free_(&s);

    /* The resolver keys files by the filename as decoded, and each once. */
    static const char twice[] = "<robot><link name='l'>"
                                "<collision><geometry><mesh filename='/nonexistent/x.stl'/>"
                                "</geometry></collision></link></robot>";
    rp_client_mesh_file *files = NULL;
    size_t n = 0;
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    assert_int_equal(
        rp_client_resolve_meshes(twice, strlen(twice), NULL, NULL, 0, false, &files, &n, &err),
        RP_CLIENT_ARG);
    assert_non_null(strstr(err.message, "/nonexistent/x.stl (link l): not found"));

    static const char *const broken[][2] = {
        {"<robot><link></robot>", "line 1: </robot> closes <link>"},
        {"<robot>\n<link name='a>\n</robot>", "line 2: in <link>: the value of name"},
        {"<robot><link name='&foo;'/></robot>", "the reference '&foo;'"},
        {"<robot><link name='a'>", "<link> is not closed"},
        {"<robot/><robot/>", "a second root element"},
        {"<!-- only a comment", "unterminated comment"},
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        assert_false(rp_urdf_scan_(broken[i][0], strlen(broken[i][0]), &s, why, sizeof why));
        if (!strstr(why, broken[i][1]))
            fail_msg("%s: '%s' lacks '%s'", broken[i][0], why, broken[i][1]);
        assert_int_equal(s.n_links, 0);
    }
    rp_client_error_free(&err);
}

/* mesh_arm's collisions: nine meshes, none of the visuals, each once. */
static void test_resolve_mesh_arm(void **state)
{
    (void)state;
    unsetenv("ROS_PACKAGE_PATH");
    size_t len = 0;
    char *urdf = slurp(URDF_PATH, &len);
    const char *dirs[] = {PKG_PARENT};
    rp_client_mesh_file *files = NULL;
    size_t n = 0;
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    if (rp_client_resolve_meshes(urdf, len, URDF_PATH, dirs, 1, true, &files, &n, &err) !=
        RP_CLIENT_OK)
        fail_msg("%s", err.message);
    assert_int_equal(n, 9);
    assert_string_equal(files[0].uri, "package://mesh_arm_description/meshes/base.stl");
    assert_string_equal(files[0].link, "base");
    assert_string_equal(files[0].path, PKG_PARENT "/mesh_arm_description/meshes/base.stl");
    assert_string_equal(files[8].uri, "../meshes/tool.stl");
    assert_string_equal(files[8].path, PKG_DIR "/urdf/../meshes/tool.stl");
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        assert_int_equal(stat(files[i].path, &st), 0);
        assert_int_equal((size_t)st.st_size, files[i].len);
        assert_non_null(files[i].bytes);
    }
    rp_client_mesh_files_free(files, n);
    free(urdf);
}

/* ---- repose-spherize against the daemon ---------------------------------------------- */

/* The spheres of one link from a def, in order (shapes LINK#s... of the
 * cover, or every sphere of the link in a spherized URDF). */
static size_t def_spheres(const rp_model_def *def, const char *link, bool covers_only,
                          rp_sphere *out, size_t cap)
{
    size_t n = 0, ll = strlen(link);
    for (size_t i = 0; i < def->n_links; i++) {
        if (strcmp(def->shape_links[i], link) != 0 || def->links[i].shape.kind != RP_SHAPE_SPHERE)
            continue;
        if (covers_only && strncmp(def->links[i].id + ll, "#s", 2) != 0)
            continue;
        assert_true(n < cap);
        out[n++] = def->links[i].shape.sphere;
    }
    return n;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_true(cJSON_IsNumber(j));
    return j->valuedouble;
}

/* Spherizes mesh_arm with `opts` (extra spherize args) and compares with
 * model.put of the same files and options. */
static void compare_with_daemon(rp_client *c, const char *model, size_t max_spheres,
                                double max_overshoot, const char *const *extra)
{
    char out[512];
    snprintf(out, sizeof out, "%s/%s.urdf", scratch, model);
    const char *args[16] = {URDF_PATH,  "--srdf", SRDF_PATH, "--package-path",
                            PKG_PARENT, "-o",     out};
    size_t na = 7;
    for (size_t i = 0; extra && extra[i]; i++)
        args[na++] = extra[i];
    args[na] = NULL;
    assert_int_equal(run_spherize(args), 0);

    /* The file reads back: no mesh left. */
    size_t len = 0, slen = 0;
    char *text = slurp(out, &len), *srdf = slurp(SRDF_PATH, &slen);
    rp_urdf *u = NULL;
    rp_urdf_error ue;
    if (rp_urdf_parse(text, len, srdf, slen, NULL, &u, &ue) != RP_URDF_OK)
        fail_msg("%s: line %lu: %s", out, ue.line, ue.reason);
    assert_int_equal(rp_urdf_mesh_count(u), 0);
    const rp_model_def *def = rp_urdf_def(u);

    /* The daemon's spheres for the same files and options. */
    const char *dirs[] = {PKG_PARENT};
    rp_client_urdf_files src = {URDF_PATH, SRDF_PATH, dirs, 1, max_spheres, max_overshoot};
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    if (rp_client_model_put_urdf_files(c, model, &src, NULL, &err) != RP_CLIENT_OK)
        fail_msg("model.put: %s", err.message);
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "model", model);
    cJSON *got = NULL;
    assert_int_equal(rp_client_call_cjson(c, "model.get", params, &got, &err), RP_CLIENT_OK);
    cJSON_Delete(params);
    const cJSON *covers = cJSON_GetObjectItemCaseSensitive(got, "mesh_covers");
    const cJSON *shapes = cJSON_GetObjectItemCaseSensitive(got, "shapes");
    assert_int_equal(cJSON_GetArraySize(covers), 9);
    size_t total = 0;
    const cJSON *cv;
    cJSON_ArrayForEach(cv, covers)
    {
        const char *link = cJSON_GetObjectItemCaseSensitive(cv, "link")->valuestring;
        size_t n = (size_t)num(cv, "spheres");
        assert_true(n >= 1 && (!max_spheres || n <= max_spheres));
        rp_sphere mine[1024];
        assert_int_equal(def_spheres(def, link, false, mine, 1024), n);
        size_t k = 0;
        const cJSON *sh;
        cJSON_ArrayForEach(sh, shapes)
        {
            if (strcmp(cJSON_GetObjectItemCaseSensitive(sh, "link")->valuestring, link) != 0)
                continue;
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(sh, "shape"), "sphere");
            assert_non_null(sp);
            char id[300];
            snprintf(id, sizeof id, "%s#s%zu", link, k);
            assert_string_equal(cJSON_GetObjectItemCaseSensitive(sh, "id")->valuestring, id);
            const cJSON *ctr = cJSON_GetObjectItemCaseSensitive(sp, "center");
            double d[4] = {cJSON_GetArrayItem(ctr, 0)->valuedouble,
                           cJSON_GetArrayItem(ctr, 1)->valuedouble,
                           cJSON_GetArrayItem(ctr, 2)->valuedouble, num(sp, "radius")};
            double m[4] = {mine[k].center.x, mine[k].center.y, mine[k].center.z, mine[k].radius};
            /* Bit for bit (0 == -0 aside: JSON may drop the sign of a zero). */
            for (int q = 0; q < 4; q++)
                if (!(d[q] == m[q] && (d[q] == 0 || memcmp(&d[q], &m[q], sizeof d[q]) == 0)))
                    fail_msg("%s sphere %zu, number %d: daemon %.17g, repose-spherize %.17g", link,
                             k, q, d[q], m[q]);
            k++;
        }
        assert_int_equal(k, n);
        total += n;
    }
    assert_int_equal(total, def->n_links); /* nothing but the spheres */
    cJSON_Delete(got);
    rp_urdf_free(u);
    free(text);
    free(srdf);
    rp_client_error_free(&err);
}

static void test_same_spheres_as_daemon(void **state)
{
    (void)state;
    unsetenv("ROS_PACKAGE_PATH");
    rh_daemon *d = rh_start(NULL);
    assert_non_null(d);
    assert_true(d->up);
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    /* Covering mesh_arm takes seconds under the sanitizers, more on a
     * loaded machine: each model.put may take up to four times the usual
     * reply timeout. */
    rp_client *c = rp_client_connect_unix(d->unix_path, rh_ms(4 * RH_TIMEOUT_MS), &err);
    assert_non_null(c);
    compare_with_daemon(c, "defaults", 0, 0, NULL);
    const char *few[] = {"--max-spheres", "3", NULL};
    compare_with_daemon(c, "three", 3, 0, few);
    const char *goal[] = {"--max-spheres", "40", "--max-overshoot", "0.004", NULL};
    compare_with_daemon(c, "goal", 40, 0.004, goal);
    rp_client_close(c);
    assert_int_equal(rh_stop(d, rh_ms(RH_TIMEOUT_MS)), 0);
    rh_destroy(d);
}

/* A link with a primitive beside its meshes keeps it; two mesh collisions
 * of one link become one set of spheres where the first was. */
static void test_rewrite_layout(void **state)
{
    (void)state;
    char mesh[512], urdf[512], out[512];
    char *stl = slurp(PKG_DIR "/meshes/link7.stl", NULL);
    write_file(in_scratch(mesh, sizeof mesh, "lay/m.stl"), stl);
    free(stl);
    write_file(in_scratch(urdf, sizeof urdf, "lay/r.urdf"),
               "<robot name=\"r\">\n"
               "  <link name=\"l\">\n"
               "    <collision><geometry><sphere radius=\"0.5\"/></geometry></collision>\n"
               "    <collision>\n"
               "      <origin xyz=\"0 0 1\"/>\n"
               "      <geometry><mesh filename=\"m.stl\"/></geometry>\n"
               "    </collision>\n"
               "    <collision><geometry><mesh filename=\"m.stl\" scale=\"2 2 2\"/></geometry>"
               "</collision>\n"
               "    <visual><geometry><mesh filename=\"m.stl\"/></geometry></visual>\n"
               "  </link>\n"
               "</robot>\n");
    snprintf(out, sizeof out, "%s/lay/out.urdf", scratch);
    const char *args[] = {urdf, "--max-spheres", "2", "-o", out, NULL};
    assert_int_equal(run_spherize(args), 0);
    char *text = slurp(out, NULL);
    assert_non_null(strstr(text, "    <collision><geometry><sphere radius=\"0.5\"/></geometry>"
                                 "</collision>\n    <!-- repose-spherize: "));
    assert_non_null(strstr(text, "</collision>\n    <visual>"));
    assert_null(strstr(text, "scale=")); /* the second mesh collision is gone */
    assert_non_null(strstr(text, "<visual><geometry><mesh filename=\"m.stl\"/>"));
    rp_urdf *u = NULL;
    assert_int_equal(rp_urdf_parse(text, strlen(text), NULL, 0, NULL, &u, NULL), RP_URDF_OK);
    const rp_model_def *def = rp_urdf_def(u);
    assert_true(def->n_links >= 2 && def->n_links <= 3);
    assert_string_equal(def->links[0].id, "l#0");
    assert_true(def->links[0].shape.sphere.radius == 0.5);
    rp_urdf_free(u);
    free(text);
}

int main(int argc, char **argv)
{
    if (!rh_init(argc, argv))
        return 1;
    if (argc < 3 || access(argv[2], X_OK) != 0) {
        fprintf(stderr, "usage: %s PATH-TO-REPOSED PATH-TO-REPOSE-SPHERIZE\n", argv[0]);
        return 1;
    }
    spherize_path = argv[2];
    snprintf(scratch, sizeof scratch, "%s/repose-spherize.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_rules),    cmocka_unit_test(test_scan),
        cmocka_unit_test(test_resolve_mesh_arm), cmocka_unit_test(test_same_spheres_as_daemon),
        cmocka_unit_test(test_rewrite_layout),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", scratch);
    return failed;
}
