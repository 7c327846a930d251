/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for URDF <mesh> collision geometry: the mesh reader
 * (src/mesh/load.c) on each format it takes (ASCII and binary STL, OBJ
 * with quads, Collada with a <unit> scale and a node transform), its
 * refusals (unknown extension, empty, malformed, the triangle limit);
 * and the cover of a URDF's meshes (src/urdf/meshes.c): scale and origin
 * applied, several meshes of a link covered together, every vertex and
 * triangle of the placed meshes inside the link's spheres (checked in long
 * double), the ids, determinism, a missing file named with its link, the
 * shape limit, and the model the store builds from it.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mesh/mesh.h"
#include "repose/spherize.h"
#include "urdf/urdf.h"

/* ---- files ------------------------------------------------------------------ */

static const char ascii_stl[] = "solid t\n"
                                "facet normal 0 0 1\n outer loop\n"
                                "  vertex 0 0 0\n  vertex 1 0 0\n  vertex 0 1 5\n"
                                " endloop\nendfacet\n"
                                "endsolid t\n";

/* A unit cube [0,1]^3 as six quads. */
static const char cube_obj[] = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
                               "v 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"
                               "f 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8\n";

/* One triangle in millimetres under a node moved 1000 mm along x. */
static const char unit_dae[] =
    "<?xml version=\"1.0\"?>\n"
    "<COLLADA xmlns=\"http://www.collada.org/2005/11/COLLADASchema\" version=\"1.4.1\">\n"
    "<asset><unit name=\"millimeter\" meter=\"0.001\"/><up_axis>Y_UP</up_axis></asset>\n"
    "<library_geometries><geometry id=\"g\"><mesh>\n"
    "<source id=\"p\"><float_array id=\"pa\" count=\"9\">0 0 0 1000 0 0 0 2000 3000</float_array>\n"
    "<technique_common><accessor source=\"#pa\" count=\"3\" stride=\"3\">"
    "<param name=\"X\" type=\"float\"/><param name=\"Y\" type=\"float\"/>"
    "<param name=\"Z\" type=\"float\"/></accessor></technique_common></source>\n"
    "<vertices id=\"v\"><input semantic=\"POSITION\" source=\"#p\"/></vertices>\n"
    "<triangles count=\"1\"><input semantic=\"VERTEX\" source=\"#v\" offset=\"0\"/>"
    "<p>0 1 2</p></triangles>\n"
    "</mesh></geometry></library_geometries>\n"
    "<library_visual_scenes><visual_scene id=\"s\"><node id=\"n\">"
    "<translate>1000 0 0</translate><instance_geometry url=\"#g\"/></node>"
    "</visual_scene></library_visual_scenes>\n"
    "<scene><instance_visual_scene url=\"#s\"/></scene>\n"
    "</COLLADA>\n";

/* A binary STL of n triangles (i, 0, 0), (i+1, 0, 0), (i, 1, 0); *len. */
static unsigned char *binary_stl(size_t n, size_t *len)
{
    *len = 84 + 50 * n;
    unsigned char *b = calloc(1, *len);
    assert_non_null(b);
    uint32_t count = (uint32_t)n;
    memcpy(b + 80, &count, 4);
    for (size_t i = 0; i < n; i++) {
        float f[12] = {0, 0, 1, (float)i, 0, 0, (float)i + 1, 0, 0, (float)i, 1, 0};
        memcpy(b + 84 + 50 * i, f, sizeof f);
    }
    return b;
}

static void bbox(const rp_mesh_data *m, double lo[3], double hi[3])
{
    for (int k = 0; k < 3; k++)
        lo[k] = INFINITY, hi[k] = -INFINITY;
    for (size_t i = 0; i < m->n_vertices; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], m->vertices[3 * i + (size_t)k]);
            hi[k] = fmax(hi[k], m->vertices[3 * i + (size_t)k]);
        }
}

static void parse_ok(const void *bytes, size_t n, const char *uri, rp_mesh_data *m)
{
    char why[256];
    rp_status st = rp_mesh_parse(bytes, n, uri, 0, m, why, sizeof why);
    if (st != RP_OK)
        fail_msg("%s refused: %s", uri, why);
    for (size_t i = 0; i < 3 * m->n_triangles; i++)
        assert_true(m->triangles[i] < m->n_vertices);
}

/* ---- the reader ---------------------------------------------------------------- */

static void reads_each_format(void **state)
{
    (void)state;
    rp_mesh_data m;
    double lo[3], hi[3];

    parse_ok(ascii_stl, strlen(ascii_stl), "package://p/meshes/t.STL", &m);
    assert_int_equal(m.n_triangles, 1);
    bbox(&m, lo, hi);
    assert_true(lo[0] == 0 && hi[0] == 1 && hi[1] == 1 && hi[2] == 5);
    rp_mesh_data_free(&m);

    size_t len;
    unsigned char *bin = binary_stl(40, &len);
    parse_ok(bin, len, "b.stl", &m);
    assert_int_equal(m.n_triangles, 40);
    bbox(&m, lo, hi);
    assert_true(lo[0] == 0 && hi[0] == 40 && hi[1] == 1 && hi[2] == 0);
    rp_mesh_data_free(&m);
    free(bin);

    parse_ok(cube_obj, strlen(cube_obj), "cube.obj", &m);
    assert_int_equal(m.n_triangles, 12); /* six quads, triangulated */
    bbox(&m, lo, hi);
    for (int k = 0; k < 3; k++)
        assert_true(lo[k] == 0 && hi[k] == 1);
    rp_mesh_data_free(&m);

    /* Millimetres to metres, and the node's translation. */
    parse_ok(unit_dae, strlen(unit_dae), "t.dae", &m);
    assert_int_equal(m.n_triangles, 1);
    bbox(&m, lo, hi);
    assert_true(fabs(lo[0] - 1) < 1e-6 && fabs(hi[0] - 2) < 1e-6);
    assert_true(fabs(hi[1] - 2) < 1e-6 && fabs(hi[2] - 3) < 1e-6);
    rp_mesh_data_free(&m);
}

static void refuse(const void *bytes, size_t n, const char *uri, size_t max, const char *reason)
{
    rp_mesh_data m;
    char why[256];
    rp_status st = rp_mesh_parse(bytes, n, uri, max, &m, why, sizeof why);
    /* (The triangle limit is RP_ERR_LIMIT, everything else invalid.) */
    rp_status want = strstr(reason, "triangles") ? RP_ERR_LIMIT : RP_ERR_INVALID_ARG;
    if (st != want || !strstr(why, reason))
        fail_msg("%s: status %d, reason \"%s\", wanted \"%s\"", uri, (int)st, why, reason);
    assert_null(m.vertices);
    assert_null(m.triangles);
    for (const char *p = why; *p; p++)
        assert_true(*p >= 0x20 && *p < 0x7f);
}

static void refuses_what_it_cannot_read(void **state)
{
    (void)state;
    refuse(ascii_stl, strlen(ascii_stl), "t.ply", 0, "must end in .stl, .obj or .dae");
    refuse(ascii_stl, strlen(ascii_stl), "stl", 0, "must end in");
    refuse(ascii_stl, 0, "t.stl", 0, "empty");
    static const char junk[] = "\x01\x02 this is not a mesh \xff\xfe";
    refuse(junk, sizeof junk - 1, "t.stl", 0, "the STL file cannot be read");
    /* Text formats hold no NUL (assimp leaks on an ASCII STL with one). */
    refuse("solid t\nfacet\0", 14, "t.stl", 0, "nor ASCII (it holds a NUL byte)");
    refuse("v 1 2 3\0", 8, "t.obj", 0, "holds a NUL byte");
    refuse("<COLLADA><oops", 14, "t.dae", 0, "the Collada file cannot be read");
    refuse("v 1 2 3\nf 1 2 9\n", 16, "t.obj", 0, "the OBJ file cannot be read");
    /* A binary STL whose header promises more than it holds. */
    size_t len;
    unsigned char *bin = binary_stl(4, &len);
    uint32_t lie = 1000000;
    memcpy(bin + 80, &lie, 4);
    refuse(bin, len, "b.stl", 0, "neither binary");
    free(bin);
    /* The triangle limit: counted before anything is copied. */
    bin = binary_stl(100, &len);
    refuse(bin, len, "b.stl", 99, "more than 99 triangles");
    rp_mesh_data m;
    char why[256];
    assert_int_equal(rp_mesh_parse(bin, len, "b.stl", 100, &m, why, sizeof why), RP_OK);
    rp_mesh_data_free(&m);
    free(bin);
}

/* The reader runs in a child process: when it crashes, the file is
 * refused and this process goes on. */
static void a_crashing_reader_is_a_refusal(void **state)
{
    (void)state;
    setenv("REPOSE_TEST_MESH_READER_ABORT", "1", 1);
    refuse(cube_obj, strlen(cube_obj), "cube.obj", 0, "the mesh reader (assimp) failed");
    unsetenv("REPOSE_TEST_MESH_READER_ABORT");
    rp_mesh_data m;
    parse_ok(cube_obj, strlen(cube_obj), "cube.obj", &m);
    assert_int_equal(m.n_triangles, 12);
    rp_mesh_data_free(&m);
    /* A Collada file whose accessor reads past its array (assimp 5.2
     * reads out of bounds, found by tests/fuzz/fuzz_mesh.c): whatever the
     * library makes of it, the answer is a clean one. */
    static const char bad_dae[] =
        "<?xml version=\"1.0\"?><COLLADA xmlns=\"http://www.collada.org/2005/11/COLLADASchema\" "
        "version=\"1.4.1\"><library_geometries><geometry id=\"g\"><mesh><source id=\"p\">"
        "<float_array id=\"pa\" count=\"8\">0 0 0 1 0 0 0 2</float_array><technique_common>"
        "<accessor source=\"#pa\" count=\"3\" stride=\"3\"><param name=\"X\" type=\"float\"/>"
        "<param name=\"Y\" type=\"float\"/><param name=\"Z\" type=\"float\"/></accessor>"
        "</technique_common></source><vertices id=\"v\"><input semantic=\"POSITION\" "
        "source=\"#p\"/></vertices><triangles count=\"1\"><input semantic=\"VERTEX\" "
        "source=\"#v\" offset=\"0\"/><p>0 1 2</p></triangles></mesh></geometry>"
        "</library_geometries><library_visual_scenes><visual_scene id=\"s\"><node id=\"n\">"
        "<instance_geometry url=\"#g\"/></node></visual_scene></library_visual_scenes><scene>"
        "<instance_visual_scene url=\"#s\"/></scene></COLLADA>";
    char why[256];
    rp_status st = rp_mesh_parse(bad_dae, strlen(bad_dae), "bad.dae", 0, &m, why, sizeof why);
    assert_true(st == RP_OK || st == RP_ERR_INVALID_ARG);
    if (st == RP_OK) {
        for (size_t i = 0; i < 3 * m.n_vertices; i++)
            assert_true(isfinite(m.vertices[i]));
        rp_mesh_data_free(&m);
    }
}

/* ---- the cover of a URDF's meshes -------------------------------------------------- */

static const char robot[] =
    "<robot name='r'>\n"
    "<link name='base'>\n"
    " <collision><origin xyz='0 0 1' rpy='0 0 1.5707963267948966'/>\n"
    "  <geometry><mesh filename='package://r/cube.obj' scale='0.5 0.25 2'/></geometry>"
    "</collision>\n"
    " <collision><geometry><sphere radius='0.1'/></geometry></collision>\n"
    " <collision><origin xyz='3 0 0'/><geometry><mesh filename='tri.stl'/></geometry>"
    "</collision>\n"
    "</link>\n"
    "<link name='arm'><collision><geometry><mesh filename='t.dae'/></geometry></collision>"
    "</link>\n"
    "<joint name='j' type='revolute'><parent link='base'/><child link='arm'/>"
    "<limit lower='-1' upper='1'/></joint>\n"
    "</robot>\n";

static const rp_urdf_mesh_file files[] = {
    {"package://r/cube.obj", cube_obj, sizeof cube_obj - 1},
    {"tri.stl", ascii_stl, sizeof ascii_stl - 1},
    {"t.dae", unit_dae, sizeof unit_dae - 1},
};

static rp_urdf *parse_robot(void)
{
    rp_urdf *u = NULL;
    rp_urdf_error err;
    rp_urdf_status st = rp_urdf_parse(robot, strlen(robot), NULL, 0, NULL, &u, &err);
    if (st != RP_URDF_OK)
        fail_msg("refused at %s: %s", err.where, err.reason);
    return u;
}

/* Whether p lies in one of the link's spheres, in long double. */
static bool covered(const rp_model_def *d, const char *link, long double p[3])
{
    for (size_t i = 0; i < d->n_links; i++) {
        if (strcmp(d->shape_links[i], link) != 0 || d->links[i].shape.kind != RP_SHAPE_SPHERE)
            continue;
        const rp_sphere *s = &d->links[i].shape.sphere;
        long double dx = p[0] - s->center.x, dy = p[1] - s->center.y, dz = p[2] - s->center.z;
        long double r = s->radius;
        if (dx * dx + dy * dy + dz * dz <= r * r)
            return true;
    }
    return false;
}

/* Every point of a 12 x 12 barycentric grid on every triangle of file f,
 * scaled and placed as mesh m says, is covered. */
static void assert_mesh_covered(const rp_model_def *d, const rp_urdf_mesh *m,
                                const rp_urdf_mesh_file *f)
{
    rp_mesh_data md;
    parse_ok(f->bytes, f->len, f->uri, &md);
    const int g = 12;
    for (size_t t = 0; t < md.n_triangles; t++) {
        rp_vec3 v[3];
        for (int k = 0; k < 3; k++) {
            const double *p = &md.vertices[3 * md.triangles[3 * t + (size_t)k]];
            v[k] = rp_transform_point(
                &m->origin, (rp_vec3){p[0] * m->scale.x, p[1] * m->scale.y, p[2] * m->scale.z});
        }
        for (int i = 0; i <= g; i++)
            for (int j = 0; i + j <= g; j++) {
                long double a = (long double)i / g, b = (long double)j / g, c = 1 - a - b;
                long double p[3] = {a * v[0].x + b * v[1].x + c * v[2].x,
                                    a * v[0].y + b * v[1].y + c * v[2].y,
                                    a * v[0].z + b * v[1].z + c * v[2].z};
                if (!covered(d, m->link, p))
                    fail_msg("%s: a point of triangle %zu of %s is outside its spheres", m->link, t,
                             m->uri);
            }
    }
    rp_mesh_data_free(&md);
}

static void urdf_meshes_are_covered_in_the_link_frame(void **state)
{
    (void)state;
    rp_urdf *u = parse_robot();
    assert_int_equal(rp_urdf_mesh_count(u), 3);
    const rp_urdf_mesh *m0 = rp_urdf_mesh_at(u, 0);
    assert_string_equal(m0->link, "base");
    assert_int_equal(m0->collision, 0);
    assert_true(m0->scale.x == 0.5 && m0->scale.y == 0.25 && m0->scale.z == 2);
    assert_int_equal(rp_urdf_mesh_at(u, 1)->collision, 2);
    /* Before the cover, only the sphere is a shape. */
    assert_int_equal(rp_urdf_def(u)->n_links, 1);
    rp_spherize_opts o = {6, 0};
    rp_urdf_error err;
    rp_urdf_status st = rp_urdf_cover_meshes(u, files, 3, &o, 0, 0, &err);
    if (st != RP_URDF_OK)
        fail_msg("cover refused at %s: %s", err.where, err.reason);
    const rp_model_def *d = rp_urdf_def(u);
    assert_int_equal(d->n_mesh_covers, 2);
    assert_string_equal(d->mesh_covers[0].link, "base");
    assert_int_equal(d->mesh_covers[0].triangles, 13); /* the cube and the triangle together */
    assert_string_equal(d->mesh_covers[1].link, "arm");
    assert_int_equal(d->mesh_covers[1].triangles, 1);
    size_t spheres = 1;
    for (size_t i = 0; i < d->n_mesh_covers; i++) {
        assert_true(d->mesh_covers[i].spheres >= 1 && d->mesh_covers[i].spheres <= 6);
        assert_true(d->mesh_covers[i].overshoot >= 0);
        spheres += d->mesh_covers[i].spheres;
    }
    assert_int_equal(d->n_links, spheres);
    /* Ids LINK#s0.., on the right links. */
    size_t base_k = 0;
    for (size_t i = 1; i < d->n_links; i++) {
        char want[64];
        bool base = strcmp(d->shape_links[i], "base") == 0;
        snprintf(want, sizeof want, "%s#s%zu", d->shape_links[i],
                 base ? base_k++ : i - 1 - d->mesh_covers[0].spheres);
        assert_string_equal(d->links[i].id, want);
    }
    for (size_t i = 0; i < rp_urdf_mesh_count(u); i++) {
        const rp_urdf_mesh *m = rp_urdf_mesh_at(u, i);
        for (size_t f = 0; f < 3; f++)
            if (strcmp(files[f].uri, m->uri) == 0)
                assert_mesh_covered(d, m, &files[f]);
    }
    /* The scale and the quarter turn: the cube spans x in [-0.25, 0],
     * y in [0, 0.5], z in [1, 3] in the link frame; no sphere of the base
     * lies far outside what covers it and the triangle at x = 3. */
    for (size_t i = 1; i <= base_k; i++) {
        const rp_sphere *s = &d->links[i].shape.sphere;
        assert_true(s->center.x > -1 && s->center.x < 4.5 && s->center.z > -1 && s->center.z < 6);
    }
    rp_urdf_free(u);
}

static void covers_are_deterministic_and_take_a_model(void **state)
{
    (void)state;
    rp_spherize_opts o = {4, 0};
    rp_urdf *a = parse_robot(), *b = parse_robot();
    assert_int_equal(rp_urdf_cover_meshes(a, files, 3, &o, 0, 0, NULL), RP_URDF_OK);
    assert_int_equal(rp_urdf_cover_meshes(b, files, 3, &o, 0, 0, NULL), RP_URDF_OK);
    const rp_model_def *da = rp_urdf_def(a), *db = rp_urdf_def(b);
    assert_int_equal(da->n_links, db->n_links);
    for (size_t i = 0; i < da->n_links; i++) {
        assert_int_equal(da->links[i].shape.kind, RP_SHAPE_SPHERE);
        assert_int_equal(db->links[i].shape.kind, RP_SHAPE_SPHERE);
        assert_memory_equal(&da->links[i].shape.sphere, &db->links[i].shape.sphere,
                            sizeof(rp_sphere)); /* (bits: no padding in rp_sphere) */
    }
    /* The store takes the def, covers included, and gives them back. */
    rp_store *st = rp_store_new(NULL);
    rp_model *m = NULL;
    rp_model_error me;
    assert_int_equal(rp_store_model_put(st, "r", da, &m, &me), RP_OK);
    const rp_model_def *kept = rp_model_definition(m);
    assert_int_equal(kept->n_mesh_covers, 2);
    assert_string_equal(kept->mesh_covers[1].link, "arm");
    assert_true(kept->mesh_covers[0].overshoot == da->mesh_covers[0].overshoot);
    rp_store_free(st);
    rp_urdf_free(a);
    rp_urdf_free(b);
}

static void cover_refusals_name_the_collision(void **state)
{
    (void)state;
    rp_spherize_opts o = {4, 0};
    rp_urdf_error err;
    rp_urdf *u = parse_robot();
    /* The Collada file not sent. */
    assert_int_equal(rp_urdf_cover_meshes(u, files, 2, &o, 0, 0, &err), RP_URDF_INVALID);
    assert_string_equal(err.where, "link[arm].collision[0].geometry.mesh");
    assert_true(strstr(err.reason, "\"t.dae\" is not in meshes") != NULL);
    assert_int_equal(err.line, 8);
    rp_urdf_free(u);
    /* A file that cannot be read. */
    u = parse_robot();
    rp_urdf_mesh_file bad[3] = {files[0], {"tri.stl", "solid x\nfacet", 13}, files[2]};
    assert_int_equal(rp_urdf_cover_meshes(u, bad, 3, &o, 0, 0, &err), RP_URDF_INVALID);
    assert_string_equal(err.where, "link[base].collision[2].geometry.mesh");
    assert_true(strstr(err.reason, "mesh \"tri.stl\": the STL file cannot be read") != NULL);
    rp_urdf_free(u);
    /* The triangle limit (the base has 13) and the shape limit. */
    u = parse_robot();
    assert_int_equal(rp_urdf_cover_meshes(u, files, 3, &o, 12, 0, &err), RP_URDF_LIMIT);
    assert_string_equal(err.limit_name, "max_mesh_triangles");
    rp_urdf_free(u);
    u = parse_robot();
    assert_int_equal(rp_urdf_cover_meshes(u, files, 3, &o, 0, 3, &err), RP_URDF_LIMIT);
    assert_string_equal(err.limit_name, "max_model_links");
    rp_urdf_free(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_each_format),
        cmocka_unit_test(refuses_what_it_cannot_read),
        cmocka_unit_test(a_crashing_reader_is_a_refusal),
        cmocka_unit_test(urdf_meshes_are_covered_in_the_link_frame),
        cmocka_unit_test(covers_are_deterministic_and_take_a_model),
        cmocka_unit_test(cover_refusals_name_the_collision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
