/* SPDX-License-Identifier: MIT */
/*
 * Allocation-failure injection over the request path (SQLite's approach).
 *
 * For each request kind the test first runs the request once on a fresh
 * store and counts the allocations it makes (K), cJSON's parse tree, the
 * store's work, the handlers' scratch arrays and the reply writer all
 * included.  Then, for every N in 1..K, it rebuilds the same store, makes
 * the N-th allocation fail, sends the request, and checks that
 *
 *   - the reply is one valid JSON-RPC line: either the -32603 "out of
 *     memory" error with the request's id, or, when the code survives that
 *     allocation failing (a tree it can do without), exactly the reply of
 *     the clean run;
 *   - the store is byte-for-byte what it was before (on an error) or what
 *     the clean run left (on a success), and replies queued earlier in the
 *     same output buffer are untouched;
 *   - sending the same request again, with allocation working, gives the
 *     clean run's reply and store: nothing half-done is left behind;
 *   - once the store is freed every block allocated is freed (counted by
 *     the wrappers in both builds; LeakSanitizer watches too in the
 *     sanitizer build).
 *
 * A second sweep makes every allocation from the N-th on fail ("persistent"),
 * as a heap that stays exhausted would: then the error reply itself may not
 * fit, and the writer may be left failed (the daemon then closes that
 * connection), but the store must still be unchanged and nothing may leak.
 *
 * The replies come from rpd_process_line, in process, with the cJSON hooks
 * pointed at the counting allocator (not the daemon's arena).  The cases
 * cover scene.create/put/remove/replace/delete, with objects too (a put
 * replacing an object's shape set, scene.move, removal by name, replace
 * and create with objects; robot instances put, moved (an attached object
 * following), removed and replaced; scene.attach and scene.detach; a
 * check holding an instance's attached object), point clouds (a put of
 * clouds, as points and as base64 points_f32 with a voxel, into a scene
 * with objects; a replace that drops a cloud; a removal of a cloud by
 * name), model.put/delete, check,
 * check.batch, the reply writer (a reply of several KB; a mutation's reply
 * into an output buffer that is full or not yet allocated) and a batch.  Kinematic cases run on a
 * store that also holds a kinematic model (a tree with fixed, revolute,
 * prismatic, continuous and mimic joints): model.put with JSON joints
 * (replacing and new) and with a URDF (with an SRDF, and with adjacency
 * pairs), model.get, model.fk, check, check.batch and check.motion
 * (discrete with earliest, certified) in joint space with attached shapes
 * and an allowed_scene list of more than 32 shapes for one link, and a
 * batch.
 * For model puts rp_store_memory must come back exactly; for queries it
 * may also be the clean run's (the scene's tree built on the way).
 *
 * In process, without the daemon, the kinematic calls get the same sweeps:
 * rp_store_model_put in kinematic form (JSON-like and URDF-like defs,
 * replacing a model and adding one that grows the model array),
 * rp_model_extend (kinematic and frame form), rp_model_fk and
 * rp_model_check_joints on a 70-joint chain (more frames and shapes than a
 * check keeps on the stack), rp_model_check_motion in both modes, and
 * rp_cloud_new (with and without a voxel; it touches no store): an
 * error must be RP_ERR_NOMEM with the store (its memory and model pointers
 * included) unchanged, a success the clean result, a retry must work, and
 * nothing may leak.  AF_TRACE=1 in the environment prints every reply that
 * is not the clean one, and the clean results of the in-process calls.
 *
 * One test per sweep and kind: the requests by family (scene mutations,
 * model puts and deletes, queries, the reply writer, batches), once with
 * one allocation failing and once with every allocation failing from the
 * N-th on; the in-process calls by function.
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"
#include "test_shapes.h"
#include "test_joints.h"

#include "alloc_fail.h"
#include "urdf/urdf.h"
#include "repose/plan.h"
#include "server/protocol/rpc.h"

/* ---- building request text ------------------------------------------------- */

/* A request line under construction (static storage: no allocation). */
typedef struct text {
    char buf[1 << 15];
    size_t len;
} text;

static void add(text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof t->buf - t->len);
    t->len += (size_t)n;
}

/* Shape i of a grid of spheres and vertical capsules, about 1 m across,
 * shifted by (dx, dy, dz) so that puts can move shapes. */
static void add_shape(text *t, int i, double dx, double dy, double dz)
{
    double x = (i % 5) * 0.25 - 0.5 + dx, y = ((i / 5) % 4) * 0.25 - 0.4 + dy;
    double z = (i / 20) * 0.3 + dz;
    if (i % 2 == 0)
        add(t, "{\"sphere\":{\"center\":[%.3f,%.3f,%.3f],\"radius\":0.05}}", x, y, z);
    else
        add(t, "{\"capsule\":{\"a\":[%.3f,%.3f,%.3f],\"b\":[%.3f,%.3f,%.3f],\"radius\":0.03}}", x,
            y, z, x, y, z + 0.2);
}

/* {"<prefix>NN": shape, ...} for NN in [from, to). */
static void add_shapes(text *t, const char *prefix, int from, int to, double dx)
{
    add(t, "{");
    for (int i = from; i < to; i++) {
        add(t, "%s\"%s%02d\":", i > from ? "," : "", prefix, i);
        add_shape(t, i, dx, 0.01 * i, 0.0);
    }
    add(t, "}");
}

/* n points (3n floats) as base64 of little-endian float32, the protocol's
 * points_f32 (RFC 4648, '=' padding). */
static void add_points_f32(text *t, const float *xyz, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char bytes[12 * 64];
    assert_true(n <= 64);
    for (size_t i = 0; i < 3 * n; i++) {
        uint32_t u;
        memcpy(&u, &xyz[i], sizeof u);
        for (int b = 0; b < 4; b++)
            bytes[4 * i + (size_t)b] = (unsigned char)(u >> (8 * b));
    }
    size_t len = 12 * n;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t g = (uint32_t)bytes[i] << 16 | (i + 1 < len ? (uint32_t)bytes[i + 1] << 8 : 0) |
                     (i + 2 < len ? bytes[i + 2] : 0);
        add(t, "%c%c%c%c", abc[g >> 18], abc[(g >> 12) & 63],
            i + 1 < len ? abc[(g >> 6) & 63] : '=', i + 2 < len ? abc[g & 63] : '=');
    }
}

/* Cloud points: n points spread over about a metre, in cells of 0.25
 * that several share (so that a voxel merges some), shifted by dx. */
static void cloud_points(float *xyz, size_t n, float dx)
{
    for (size_t i = 0; i < n; i++) {
        xyz[3 * i] = dx + 0.0625f * (float)(i % 9);
        xyz[3 * i + 1] = -0.5f + 0.1f * (float)((i * 7) % 11);
        xyz[3 * i + 2] = 0.125f * (float)(i % 4);
    }
}

/* A model of n links over 3 joint frames and the base, with the first
 * n_pairs neighbouring links allowed to touch. */
static void add_model(text *t, const char *name, int n, int n_pairs)
{
    add(t, "\"model\":\"%s\",\"safety_margin\":0.02,\"links\":[", name);
    for (int i = 0; i < n; i++) {
        int frame = i % 4 - 1; /* -1 = base */
        add(t, "%s{\"id\":\"l%d\",", i ? "," : "", i);
        if (frame < 0)
            add(t, "\"frame\":null,\"shape\":");
        else
            add(t, "\"frame\":%d,\"shape\":", frame);
        add(t, "{\"capsule\":{\"a\":[0,0,%.2f],\"b\":[%.2f,0,%.2f],\"radius\":0.04}}}", 0.1 * i,
            0.05 * (i % 3), 0.1 * i + 0.12);
    }
    add(t, "],\"allowed_pairs\":[");
    for (int i = 0; i < n_pairs; i++)
        add(t, "%s[\"l%d\",\"l%d\"]", i ? "," : "", i, i + 1);
    add(t, "]");
}

/* Three joint-frame poses (and a base pose when `base`), varied by k. */
static void add_config(text *t, int k, bool base)
{
    add(t,
        "{\"frames\":[{\"translation\":[%.2f,0,0.1]},"
        "{\"translation\":[0,%.2f,0.2],\"rotation\":{\"w\":0.8,\"x\":0.6,\"y\":0,\"z\":0}},"
        "{\"matrix\":[[0,-1,0,%.2f],[1,0,0,0],[0,0,1,0.3]]}]",
        -0.3 + 0.1 * k, -0.2 + 0.05 * k, 0.1 * k);
    if (base)
        add(t, ",\"base\":{\"translation\":[0,0,%.2f]}", 0.01 * k);
    add(t, "}");
}

/* ---- kinematic definitions (in process, and as JSON for the daemon) -------- */

/* A small tree: a base with a fixed mount, revolute j1 (z) and j2 (y), a
 * fixed camera, prismatic j3, continuous j4 about a skew axis and a
 * prismatic finger jm mimicking j3; shapes on every link (two on some),
 * allowed pairs and allowed scene pairs by link name, two defaults. */
enum { TREE_SHAPES = 11, TREE_JOINTS = 7 };
static rp_link tree_shapes[TREE_SHAPES];
static const char *tree_shape_links[TREE_SHAPES];
static rp_joint_def tree_joints[TREE_JOINTS];
static const char *const tree_pairs[] = {"mount", "upper", "upper", "fore",  "fore",
                                         "slide", "slide", "wrist", "wrist", "finger",
                                         "base",  "upper", "slide", "finger"};
static const char *const tree_scene[] = {"upper", "s03", "finger", "s10", "base", "s00"};
static const char *const tree_default_names[] = {"j1", "j4"};
static const double tree_default_values[] = {0.3, 1.0};

static void build_tree(void)
{
    static const char *const ids[TREE_SHAPES] = {"b0", "b1", "m0", "u0", "u1", "f0",
                                                 "c0", "s0", "w0", "g0", "g1"};
    static const char *const links[TREE_SHAPES] = {"base",  "base",   "mount", "upper",
                                                   "upper", "fore",   "cam",   "slide",
                                                   "wrist", "finger", "finger"};
    const rp_shape shapes[TREE_SHAPES] = {
        sphere(0, 0, 0.05, 0.08),    capsule(-0.1, 0, 0, 0.1, 0, 0, 0.03),
        sphere(0, 0, 0, 0.05),       capsule(0, 0, 0, 0.3, 0, 0, 0.04),
        sphere(0.15, 0, 0.05, 0.03), capsule(0, 0, 0, 0.25, 0, 0, 0.035),
        sphere(0, 0, 0.05, 0.02),    capsule(0, 0, 0, 0.05, 0, 0, 0.03),
        sphere(0.02, 0, 0, 0.03),    capsule(0, 0, 0, 0, 0.04, 0, 0.01),
        sphere(0, 0.04, 0.01, 0.012)};
    for (size_t k = 0; k < TREE_SHAPES; k++) {
        rp_link l = {ids[k], 0, shapes[k]};
        tree_shapes[k] = l;
        tree_shape_links[k] = links[k];
    }
    rp_vec3 o = V(0, 0, 0);
    tree_joints[0] = J("jf", RP_JOINT_FIXED, "base", "mount", V(0, 0, 0.1), V(0, 0, 0.3), o);
    tree_joints[1] = limited(
        J("j1", RP_JOINT_REVOLUTE, "mount", "upper", V(0, 0, 0.05), o, V(0, 0, 1)), -2.5, 2.5);
    tree_joints[2] =
        limited(J("j2", RP_JOINT_REVOLUTE, "upper", "fore", V(0.3, 0, 0), V(0.1, 0, 0), V(0, 1, 0)),
                -1.5, 1.5);
    tree_joints[3] = J("jc", RP_JOINT_FIXED, "fore", "cam", V(0.1, 0, 0.05), V(0, 0.2, 0), o);
    tree_joints[4] = limited(
        J("j3", RP_JOINT_PRISMATIC, "fore", "slide", V(0.3, 0, 0), o, V(1, 0, 0)), 0.0, 0.2);
    tree_joints[5] =
        J("j4", RP_JOINT_CONTINUOUS, "slide", "wrist", V(0.05, 0, 0), o, V(0.3, 0.4, 0.5));
    rp_joint_def jm = limited(
        J("jm", RP_JOINT_PRISMATIC, "wrist", "finger", V(0.02, 0, 0), o, V(0, 1, 0)), 0.0, 0.2);
    jm.mimic = "j3";
    jm.multiplier = 0.5;
    jm.offset = 0.01;
    tree_joints[6] = jm;
}

static rp_model_def tree_def(double margin)
{
    rp_model_def d;
    memset(&d, 0, sizeof d);
    d.links = tree_shapes;
    d.n_links = TREE_SHAPES;
    d.safety_margin = margin;
    d.allowed_pairs = tree_pairs;
    d.n_allowed = 7;
    d.self_collision = true;
    d.shape_links = tree_shape_links;
    d.joints = tree_joints;
    d.n_joints = TREE_JOINTS;
    d.default_names = tree_default_names;
    d.default_values = tree_default_values;
    d.n_defaults = 2;
    d.allowed_scene = tree_scene;
    d.n_allowed_scene = 3;
    return d;
}

/* A chain of 70 revolute joints (more frames and shapes than a check keeps
 * on the stack), one short capsule per link, across the grid of scene
 * shapes; neighbours touch, so with self collision there are pairs. */
enum { CHAIN_JOINTS = 70 };
static char chain_link_names[CHAIN_JOINTS + 1][8], chain_joint_names[CHAIN_JOINTS][8];
static char chain_ids[CHAIN_JOINTS + 1][8];
static rp_link chain_shapes[CHAIN_JOINTS + 1];
static const char *chain_shape_links[CHAIN_JOINTS + 1];
static rp_joint_def chain_joints[CHAIN_JOINTS];

static void build_chain(void)
{
    for (int i = 0; i <= CHAIN_JOINTS; i++) {
        snprintf(chain_link_names[i], sizeof chain_link_names[i], "k%d", i);
        snprintf(chain_ids[i], sizeof chain_ids[i], "x%d", i);
        rp_link l = {chain_ids[i], 0, capsule(0, 0, 0, 0.02, 0, 0, 0.008)};
        chain_shapes[i] = l;
        chain_shape_links[i] = chain_link_names[i];
    }
    for (int i = 0; i < CHAIN_JOINTS; i++) {
        snprintf(chain_joint_names[i], sizeof chain_joint_names[i], "c%d", i);
        chain_joints[i] = limited(J(chain_joint_names[i], RP_JOINT_REVOLUTE, chain_link_names[i],
                                    chain_link_names[i + 1], i ? V(0.02, 0, 0) : V(-0.7, 0.02, 0.1),
                                    V(0, 0, 0), i % 2 ? V(0, 1, 0) : V(0, 0, 1)),
                                  -3, 3);
    }
}

static rp_model_def chain_def(void)
{
    rp_model_def d;
    memset(&d, 0, sizeof d);
    d.links = chain_shapes;
    d.n_links = CHAIN_JOINTS + 1;
    d.safety_margin = 0.01;
    d.self_collision = true;
    d.shape_links = chain_shape_links;
    d.joints = chain_joints;
    d.n_joints = CHAIN_JOINTS;
    return d;
}

/* The same tree as a URDF and an SRDF (single quotes: they sit in JSON
 * strings as they are).  The cylinder becomes a capsule, the box a box. */
static const char kin_urdf[] =
    "<?xml version='1.0'?><robot name='k'>"
    "<link name='base'><collision><geometry><sphere radius='0.08'/></geometry></collision></link>"
    "<link name='upper'><collision><origin xyz='0.15 0 0' rpy='0 1.5707963 0'/><geometry>"
    "<cylinder radius='0.04' length='0.3'/></geometry></collision></link>"
    "<link name='fore'><collision><origin xyz='0.15 0 0' rpy='0 1.5707963 0'/><geometry>"
    "<capsule radius='0.035' length='0.2'/></geometry></collision></link>"
    "<link name='slide'><collision><geometry><box size='0.05 0.04 0.03'/></geometry></collision>"
    "</link><link name='wrist'><collision><geometry><sphere radius='0.03'/></geometry>"
    "</collision></link><link name='finger'><collision><origin xyz='0 0.02 0'/><geometry>"
    "<sphere radius='0.01'/></geometry></collision></link><link name='cam'/>"
    "<joint name='j1' type='revolute'><parent link='base'/><child link='upper'/>"
    "<origin xyz='0 0 0.15' rpy='0 0 0.3'/><axis xyz='0 0 1'/><limit lower='-2.5' upper='2.5'/>"
    "</joint><joint name='j2' type='revolute'><parent link='upper'/><child link='fore'/>"
    "<origin xyz='0.3 0 0'/><axis xyz='0 1 0'/><limit lower='-1.5' upper='1.5'/></joint>"
    "<joint name='jc' type='fixed'><parent link='fore'/><child link='cam'/>"
    "<origin xyz='0.1 0 0.05'/></joint>"
    "<joint name='j3' type='prismatic'><parent link='fore'/><child link='slide'/>"
    "<origin xyz='0.3 0 0'/><axis xyz='1 0 0'/><limit lower='0' upper='0.2'/></joint>"
    "<joint name='j4' type='continuous'><parent link='slide'/><child link='wrist'/>"
    "<origin xyz='0.05 0 0'/><axis xyz='0.3 0.4 0.5'/></joint>"
    "<joint name='jm' type='prismatic'><parent link='wrist'/><child link='finger'/>"
    "<axis xyz='0 1 0'/><limit lower='0' upper='0.2'/>"
    "<mimic joint='j3' multiplier='0.5' offset='0.01'/></joint></robot>";
static const char kin_srdf[] =
    "<robot name='k'><group name='arm'/><disable_collisions link1='base' link2='fore' "
    "reason='Never'/><disable_collisions link1='cam' link2='wrist'/></robot>";

/* Scene shape ids "s00".."s39" of the scene "cell" (in process and in the
 * daemon's setup), and allowed_scene lists that give one link 37 of them
 * (more than a check keeps on the stack; s09, s19, s29, s39 are still
 * checked) and another link a few, one missing from the scene. */
enum { N_MANY_SCENE = 39 };
static char grid_ids[40][8];

static void build_grid_ids(void)
{
    for (int i = 0; i < 40; i++)
        snprintf(grid_ids[i], sizeof grid_ids[i], "s%02d", i);
}

static void many_scene_pairs(const char **out, const char *link, const char *other)
{
    size_t k = 0;
    for (int i = 0; i < 40; i++)
        if (i % 10 != 9) {
            out[k++] = link;
            out[k++] = grid_ids[i];
        }
    out[k++] = other;
    out[k++] = "s07";
    out[k++] = other;
    out[k++] = "missing";
    out[k++] = link;
    out[k++] = "s01";
    assert_int_equal(k, 2 * N_MANY_SCENE);
}

/* Shape i of the grid the daemon's scene "cell" holds (add_shape's). */
static rp_shape grid_shape(int i)
{
    double x = (i % 5) * 0.25 - 0.5, y = ((i / 5) % 4) * 0.25 - 0.4 + 0.01 * i;
    double z = (i / 20) * 0.3;
    return i % 2 == 0 ? sphere(x, y, z, 0.05) : capsule(x, y, z, x, y, z + 0.2, 0.03);
}

/* Frame-form model "a": ten links on three frames and the base, l0 allowed
 * to touch every other link, one allowed scene pair. */
static rp_link frame_links[10];
static char frame_ids[10][8];
static const char *frame_pairs[18];
static const char *const frame_scene[] = {"l2", "s01"};

static rp_model_def frame_def(void)
{
    for (int i = 0; i < 10; i++) {
        snprintf(frame_ids[i], sizeof frame_ids[i], "l%d", i);
        rp_link l = {frame_ids[i], i % 4 - 1,
                     capsule(0, 0, 0.1 * i, 0.05 * (i % 3), 0, 0.1 * i + 0.12, 0.04)};
        frame_links[i] = l;
    }
    for (int i = 1; i < 10; i++) {
        frame_pairs[2 * (i - 1)] = frame_ids[0];
        frame_pairs[2 * (i - 1) + 1] = frame_ids[i];
    }
    rp_model_def d;
    memset(&d, 0, sizeof d);
    d.links = frame_links;
    d.n_links = 10;
    d.safety_margin = 0.02;
    d.allowed_pairs = frame_pairs;
    d.n_allowed = 9;
    d.self_collision = true;
    d.allowed_scene = frame_scene;
    d.n_allowed_scene = 1;
    return d;
}

/* Per-request extensions: attached shapes (with touch links) and allowed
 * scene pairs, one link getting more than 32 scene shapes. */
static const char *const tree_touch0[] = {"slide", "cam"};
static const char *const tree_touch1[] = {"wrist"};
static rp_attached tree_attached[3];
static const char *tree_more_scene[2 * N_MANY_SCENE];
static const char *const chain_touch[] = {"k68", "k70", "k67"};
static rp_attached chain_attached[2];
static const char *chain_more_scene[2 * N_MANY_SCENE];
static const char *const frame_touch[] = {"l5", "l6", "l7", "l8", "l9", "l3"};
static rp_attached frame_attached[2];

/* A model def parsed from kin_urdf, with more allowed pairs, allowed scene
 * pairs and defaults (its link_names are given, unlike the JSON form's). */
static rp_urdf *urdf_parsed;
static rp_model_def urdf_kin_def;
static const char *urdf_more_pairs[16];
static const char *const urdf_defaults[] = {"j2", "j3"};
static const double urdf_default_values[] = {-0.4, 0.05};

static void build_extensions(void)
{
    rp_attached a0 = {"grip", "fore", capsule(0.1, 0.06, 0, 0.2, 0.06, 0, 0.02), tree_touch0, 2};
    rp_attached a1 = {"part", "finger", sphere(0, 0.05, 0, 0.03), tree_touch1, 1};
    rp_attached a2 = {"tag", "base", sphere(0.1, 0.1, 0, 0.01), NULL, 0};
    tree_attached[0] = a0;
    tree_attached[1] = a1;
    tree_attached[2] = a2;
    many_scene_pairs(tree_more_scene, "wrist", "fore");
    rp_attached c0 = {"tool", "k69", capsule(0, 0, 0, 0.05, 0, 0, 0.01), chain_touch, 3};
    rp_attached c1 = {"cable", "k10", sphere(0, 0, 0.02, 0.02), NULL, 0};
    chain_attached[0] = c0;
    chain_attached[1] = c1;
    many_scene_pairs(chain_more_scene, "k35", "k36");
    rp_attached f0 = {"held", "l0", sphere(0, 0, 0.3, 0.05), frame_touch, 6};
    rp_attached f1 = {"held2", "l1", sphere(0, 0, 0.2, 0.02), frame_touch, 2};
    frame_attached[0] = f0;
    frame_attached[1] = f1;

    rp_urdf_opts opts = {0, 0, 0, false};
    rp_urdf_error err;
    assert_int_equal(rp_urdf_parse(kin_urdf, strlen(kin_urdf), kin_srdf, strlen(kin_srdf), &opts,
                                   &urdf_parsed, &err),
                     RP_URDF_OK);
    urdf_kin_def = *rp_urdf_def(urdf_parsed);
    assert_true(urdf_kin_def.n_allowed <= 6);
    for (size_t i = 0; i < 2 * urdf_kin_def.n_allowed; i++)
        urdf_more_pairs[i] = urdf_kin_def.allowed_pairs[i];
    urdf_more_pairs[2 * urdf_kin_def.n_allowed] = "upper";
    urdf_more_pairs[2 * urdf_kin_def.n_allowed + 1] = "slide";
    urdf_kin_def.allowed_pairs = urdf_more_pairs;
    urdf_kin_def.n_allowed++;
    urdf_kin_def.allowed_scene = tree_scene;
    urdf_kin_def.n_allowed_scene = 3;
    urdf_kin_def.default_names = urdf_defaults;
    urdf_kin_def.default_values = urdf_default_values;
    urdf_kin_def.n_defaults = 2;
    urdf_kin_def.safety_margin = 0.015;
}

/* Three waypoints of the tree (j1, j2, j3, j4), each clear of the grid
 * with the base at (0.125, -0.25, 0.6): a sweep around the base that dips
 * the arm into the grid's upper layer, the slide and the wrist moving too.
 * Both modes find the first contact in the second segment. */
static const double tree_path[] = {-2.2, -0.3, 0.0,  0.0, /* */
                                   0.0,  1.2,  0.15, 2.0, /* */
                                   1.6,  -0.4, 0.05, -1.0};

/* ---- the same as JSON ------------------------------------------------------- */

static void add_vec(text *t, rp_vec3 v)
{
    add(t, "[%.17g,%.17g,%.17g]", v.x, v.y, v.z);
}

static void add_json_shape(text *t, const rp_shape *s)
{
    if (s->kind == RP_SHAPE_SPHERE) {
        add(t, "{\"sphere\":{\"center\":");
        add_vec(t, s->sphere.center);
        add(t, ",\"radius\":%.17g}}", s->sphere.radius);
    } else {
        add(t, "{\"capsule\":{\"a\":");
        add_vec(t, s->capsule.a);
        add(t, ",\"b\":");
        add_vec(t, s->capsule.b);
        add(t, ",\"radius\":%.17g}}", s->capsule.radius);
    }
}

/* [[a, b], ...] of n pairs. */
static void add_name_pairs(text *t, const char *const *v, size_t n)
{
    add(t, "[");
    for (size_t i = 0; i < n; i++)
        add(t, "%s[\"%s\",\"%s\"]", i ? "," : "", v[2 * i], v[2 * i + 1]);
    add(t, "]");
}

/* The members of model.put's kinematic JSON form for def (name excluded). */
static void add_kin_members(text *t, const rp_model_def *d)
{
    static const char *const types[] = {"fixed", "revolute", "continuous", "prismatic"};
    add(t, "\"safety_margin\":%.17g,\"self_collision\":%s,\"links\":[", d->safety_margin,
        d->self_collision ? "true" : "false");
    for (size_t k = 0; k < d->n_links; k++) {
        add(t, "%s{\"id\":\"%s\",\"link\":\"%s\",\"shape\":", k ? "," : "", d->links[k].id,
            d->shape_links[k]);
        add_json_shape(t, &d->links[k].shape);
        add(t, "}");
    }
    add(t, "],\"joints\":[");
    for (size_t i = 0; i < d->n_joints; i++) {
        const rp_joint_def *j = &d->joints[i];
        add(t,
            "%s{\"name\":\"%s\",\"type\":\"%s\",\"parent\":\"%s\",\"child\":\"%s\","
            "\"origin\":{\"xyz\":",
            i ? "," : "", j->name, types[j->type], j->parent, j->child);
        add_vec(t, j->xyz);
        add(t, ",\"rpy\":");
        add_vec(t, j->rpy);
        add(t, "}");
        if (j->type != RP_JOINT_FIXED) {
            add(t, ",\"axis\":");
            add_vec(t, j->axis);
        }
        if (j->has_limits)
            add(t, ",\"limits\":{\"lower\":%.17g,\"upper\":%.17g}", j->lower, j->upper);
        if (j->mimic)
            add(t, ",\"mimic\":{\"joint\":\"%s\",\"multiplier\":%.17g,\"offset\":%.17g}", j->mimic,
                j->multiplier, j->offset);
        add(t, "}");
    }
    add(t, "],\"allowed_pairs\":");
    add_name_pairs(t, d->allowed_pairs, d->n_allowed);
    add(t, ",\"allowed_scene\":");
    add_name_pairs(t, d->allowed_scene, d->n_allowed_scene);
    add(t, ",\"default_positions\":{");
    for (size_t i = 0; i < d->n_defaults; i++)
        add(t, "%s\"%s\":%.17g", i ? "," : "", d->default_names[i], d->default_values[i]);
    add(t, "}");
}

/* ---- the store before each request ------------------------------------------ */

typedef struct server {
    rpd_core core;
    rpd_session session;
    rp_jw out;
} server;

static text setup_lines[6];
static size_t n_setup_lines;
/* More for the kinematic cases: model kin (the tree, from JSON). */
static text kin_setup_lines[4];
static size_t n_kin_setup_lines;

static void build_setup(void)
{
    text *t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
           "\"params\":{\"scene\":\"cell\",\"shapes\":");
    add_shapes(t, "s", 0, 40, 0.0);
    add(t, "}}");
    t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.create\","
           "\"params\":{\"scene\":\"aux\",\"shapes\":");
    add_shapes(t, "a", 0, 3, 0.0);
    add(t, "}}");
    t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.create\","
           "\"params\":{\"scene\":\"zeta\"}}");
    /* A scene with objects: a crate of three shapes, a tray of two, and a
     * shape of its own. */
    t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.create\","
           "\"params\":{\"scene\":\"yard\",\"shapes\":");
    add_shapes(t, "p", 0, 2, 0.0);
    add(t, ",\"objects\":{\"crate\":{\"pose\":{\"translation\":[1,0,0]},\"shapes\":");
    add_shapes(t, "c", 0, 3, 0.0);
    add(t, "},\"tray\":{\"pose\":{\"rotation\":{\"w\":0.6,\"x\":0,\"y\":0.8,\"z\":0}},"
           "\"shapes\":");
    add_shapes(t, "t", 0, 2, 0.0);
    add(t, "}}}}");
    /* A scene with clouds: a shape of its own, an object, cloud cam (12
     * points, voxel 0.25) and cloud lidar (8 points as points_f32). */
    t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"scene.create\","
           "\"params\":{\"scene\":\"depth\",\"shapes\":");
    add_shapes(t, "d", 0, 2, 0.0);
    add(t, ",\"objects\":{\"box\":{\"shapes\":");
    add_shapes(t, "k", 0, 2, 0.0);
    add(t, "}},\"clouds\":{\"cam\":{\"points\":[");
    float pts[3 * 12];
    cloud_points(pts, 12, 0.0f);
    for (size_t i = 0; i < 12; i++)
        add(t, "%s[%.9g,%.9g,%.9g]", i ? "," : "", (double)pts[3 * i], (double)pts[3 * i + 1],
            (double)pts[3 * i + 2]);
    add(t, "],\"radius\":0.02,\"voxel\":0.25},\"lidar\":{\"points_f32\":\"");
    cloud_points(pts, 8, 2.0f);
    add_points_f32(t, pts, 8);
    add(t, "\",\"radius\":0.01}}}}");
    t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"model.put\",\"params\":{");
    add_model(t, "arm", 8, 3);
    add(t, "}}");
    t = &kin_setup_lines[n_kin_setup_lines++];
    rp_model_def d = tree_def(0.02);
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"model.put\",\"params\":"
           "{\"model\":\"kin\",");
    add_kin_members(t, &d);
    add(t, "}}");
    /* A second kinematic model, used by robot instances of scene "bots"
     * (kin itself is replaced by some cases: a model in use is not). */
    t = &kin_setup_lines[n_kin_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"model.put\",\"params\":"
           "{\"model\":\"kbot\",");
    add_kin_members(t, &d);
    add(t, "}}");
    t = &kin_setup_lines[n_kin_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"scene.create\",\"params\":"
           "{\"scene\":\"bots\",\"shapes\":");
    add_shapes(t, "w", 0, 3, 0.0);
    add(t, ",\"robots\":{\"r1\":{\"model\":\"kbot\",\"joints\":{\"j1\":0.5,\"j2\":-0.3}},"
           "\"r2\":{\"model\":\"kbot\",\"base\":{\"translation\":[1,0,0]}}},\"objects\":{"
           "\"crate\":{\"shapes\":");
    add_shapes(t, "k", 0, 2, 0.0);
    add(t, "},\"box2\":{\"shapes\":");
    add_shapes(t, "k", 0, 2, 0.3);
    add(t, "}}}}");
    /* The crate held by r1's upper link. */
    t = &kin_setup_lines[n_kin_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"scene.attach\",\"params\":{"
           "\"scene\":\"bots\",\"object\":\"crate\",\"robot\":\"r1\",\"link\":\"upper\"}}");
}

/* Sends one line, appending its reply to s->out. */
static void send_line(server *s, const char *line, size_t len)
{
    rpd_process_line(&s->core, &s->session, line, len, &s->out);
}

/* A fresh core holding scenes cell (40 shapes, tree not yet built), aux and
 * zeta, and model arm; with `kin` also the kinematic model kin. */
static void state_open(server *s, bool kin)
{
    memset(s, 0, sizeof *s);
    assert_true(rpd_core_init(&s->core, NULL));
    af_install_json_hooks(); /* after init, which may install the arena */
    rp_jw_init(&s->out);
    for (size_t i = 0; i < n_setup_lines; i++) {
        rp_jw_reset(&s->out);
        send_line(s, setup_lines[i].buf, setup_lines[i].len);
        assert_false(s->out.oom);
        assert_non_null(strstr(s->out.buf, "\"result\""));
    }
    if (kin) {
        for (size_t i = 0; i < n_kin_setup_lines; i++) {
            rp_jw_reset(&s->out);
            send_line(s, kin_setup_lines[i].buf, kin_setup_lines[i].len);
            assert_false(s->out.oom);
            if (!strstr(s->out.buf, "\"result\""))
                fail_msg("kinematic setup: %s", s->out.buf);
        }
    }
    rp_jw_reset(&s->out);
}

static void state_close(server *s)
{
    rp_jw_free(&s->out);
    rpd_core_free(&s->core);
}

/* ---- a dump of the store ---------------------------------------------------- */

typedef struct dump {
    char buf[1 << 16];
    size_t len;
} dump;

static void dump_add(dump *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void dump_add(dump *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->buf + d->len, sizeof d->buf - d->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof d->buf - d->len);
    d->len += (size_t)n;
}

static void dump_shape(dump *d, const rp_shape *sh)
{
    if (sh->kind == RP_SHAPE_SPHERE)
        dump_add(d, "sphere %a %a %a r %a", sh->sphere.center.x, sh->sphere.center.y,
                 sh->sphere.center.z, sh->sphere.radius);
    else
        dump_add(d, "capsule %a %a %a  %a %a %a r %a", sh->capsule.a.x, sh->capsule.a.y,
                 sh->capsule.a.z, sh->capsule.b.x, sh->capsule.b.y, sh->capsule.b.z,
                 sh->capsule.radius);
}

static void dump_vec(dump *d, const char *what, rp_vec3 v)
{
    dump_add(d, " %s %a %a %a", what, v.x, v.y, v.z);
}

/* Everything a client can observe of a model (the kinematic parts too). */
static void dump_model(dump *d, const rp_model *m)
{
    dump_add(d, "model %s rev %llu links %zu base %zu frames %zu margin %a self %d kin %d\n",
             rp_model_name(m), (unsigned long long)rp_model_revision(m), rp_model_link_count(m),
             rp_model_base_link_count(m), rp_model_frame_count(m), rp_model_safety_margin(m),
             rp_model_self_collision(m), rp_model_is_kinematic(m));
    for (size_t k = 0; k < rp_model_link_count(m); k++) {
        const rp_link *l = rp_model_link_at(m, k);
        dump_add(d, "  %s frame %d ", l->id, l->frame);
        dump_shape(d, &l->shape);
        dump_add(d, "\n");
    }
    for (size_t k = 0; k < rp_model_allowed_count(m); k++) {
        size_t a, b;
        rp_model_allowed_at(m, k, &a, &b);
        dump_add(d, "  allowed %zu %zu\n", a, b);
    }
    for (size_t k = 0; k < rp_model_allowed_scene_count(m); k++) {
        const char *link, *id;
        rp_model_allowed_scene_at(m, k, &link, &id);
        dump_add(d, "  allowed scene %s %s\n", link, id);
    }
    if (!rp_model_is_kinematic(m))
        return;
    size_t root = rp_model_root(m);
    dump_add(d, "  tree %zu root %s dof %zu\n", rp_model_tree_link_count(m),
             root == SIZE_MAX ? "-" : rp_model_tree_link_name(m, root), rp_model_dof(m));
    for (size_t k = 0; k < rp_model_tree_link_count(m); k++)
        dump_add(d, "  link %s found %d\n", rp_model_tree_link_name(m, k),
                 rp_model_tree_link_find(m, rp_model_tree_link_name(m, k)) == k);
    for (size_t k = 0; k < rp_model_dof(m); k++) {
        double lo, hi;
        bool has = rp_model_dof_limits(m, k, &lo, &hi);
        dump_add(d, "  dof %s type %d limits %d %a %a default %a found %d\n",
                 rp_model_dof_name(m, k), (int)rp_model_dof_type(m, k), has, lo, hi,
                 rp_model_dof_default(m, k), rp_model_dof_find(m, rp_model_dof_name(m, k)) == k);
    }
    for (size_t k = 0; k < rp_model_link_count(m); k++) {
        rp_shape local;
        rp_model_shape_local(m, k, &local);
        dump_add(d, "  shape %zu on %zu ", k, rp_model_shape_link(m, k));
        dump_shape(d, &local);
        dump_add(d, "\n");
    }
    for (size_t k = 0; k < rp_model_allowed_link_count(m); k++) {
        size_t a, b;
        rp_model_allowed_link_at(m, k, &a, &b);
        dump_add(d, "  allowed links %zu %zu\n", a, b);
    }
    for (size_t k = 0; k < rp_model_joint_count(m); k++) {
        const rp_joint_def *j = rp_model_joint_at(m, k);
        dump_add(d, "  joint %s type %d %s -> %s", j->name, (int)j->type, j->parent, j->child);
        dump_vec(d, "xyz", j->xyz);
        dump_vec(d, "rpy", j->rpy);
        dump_vec(d, "axis", j->axis);
        dump_add(d, " limits %d %a %a mimic %s %a %a\n", j->has_limits, j->lower, j->upper,
                 j->mimic ? j->mimic : "-", j->multiplier, j->offset);
    }
}

/* Everything a client can observe of the store, in storage order (so a
 * reordering counts as a change too), doubles in hex.  Memory accounting is
 * left out: a failed mutation may keep a larger array it grew (the cases
 * that must not compare rp_store_memory themselves). */
static void dump_store(const rp_store *st, dump *d)
{
    d->len = 0;
    d->buf[0] = '\0';
    /* The store's revision too: a failed mutation takes no number. */
    dump_add(d, "revision %llu shapes %llu\n", (unsigned long long)rp_store_revision(st),
             (unsigned long long)rp_store_shape_count(st));
    for (size_t i = 0; i < rp_store_scene_count(st); i++) {
        const rp_scene *sc = rp_store_scene_at(st, i);
        dump_add(d, "scene %s rev %llu n %zu\n", rp_scene_name(sc),
                 (unsigned long long)rp_scene_revision(sc), rp_scene_shape_count(sc));
        for (size_t k = 0; k < rp_scene_shape_count(sc); k++) {
            const char *id = rp_scene_id_at(sc, k);
            const rp_object *o = rp_scene_shape_object(sc, k);
            dump_add(d, "  %s found %d of %s ", id, rp_scene_find(sc, id) == k,
                     o ? rp_object_name(o) : "-");
            dump_shape(d, SCENE_SHAPE(sc, k));
            dump_add(d, "\n");
        }
        for (size_t j = 0; j < rp_scene_object_count(sc); j++) {
            const rp_object *o = rp_scene_object_at(sc, j);
            rp_transform pose = rp_object_pose(o);
            dump_add(d, "  object %s pose", rp_object_name(o));
            for (int r = 0; r < 3; r++)
                dump_add(d, " %a %a %a", pose.r[r][0], pose.r[r][1], pose.r[r][2]);
            dump_vec(d, " t", pose.t);
            if (rp_object_attached_robot(o)) {
                rp_transform rel = rp_object_attached_rel(o);
                dump_add(d, " attached to %s %s", rp_object_attached_robot(o),
                         rp_object_attached_link(sc, o));
                for (int r = 0; r < 3; r++)
                    dump_add(d, " %a %a %a", rel.r[r][0], rel.r[r][1], rel.r[r][2]);
                dump_vec(d, " rel t", rel.t);
            }
            const rp_cloud *cl = rp_object_cloud(o);
            if (cl) {
                dump_add(d, " cloud of %zu spheres from %zu points, radius %a voxel %a:",
                         rp_cloud_size(cl), rp_cloud_input_points(cl), rp_cloud_radius(cl),
                         rp_cloud_voxel(cl));
                const float *xyz = rp_cloud_centres(cl);
                for (size_t k = 0; k < 3 * rp_cloud_size(cl); k++)
                    dump_add(d, " %a", (double)xyz[k]);
            }
            if (rp_object_is_robot(o)) {
                const rp_model *m = rp_object_model(o);
                dump_add(d, " robot of %s joints", rp_model_name(m));
                for (size_t k = 0; k < rp_model_dof(m); k++)
                    dump_add(d, " %a", rp_object_joints(o)[k]);
            }
            dump_add(d, "\n");
            for (size_t k = 0; k < rp_object_shape_count(o); k++) {
                dump_add(d, "    %s ", rp_object_shape_at(o, k)->id);
                dump_shape(d, &rp_object_shape_at(o, k)->shape);
                dump_add(d, "\n");
            }
        }
    }
    dump_add(d, "models %zu\n", rp_store_model_count(st));
    for (size_t i = 0; i < rp_store_model_count(st); i++) {
        const rp_model *m = rp_store_model_at(st, i);
        dump_add(d, "found %d ", rp_store_model_find(st, rp_model_name(m)) == m);
        dump_model(d, m);
    }
}

static void assert_same_dump(const dump *got, const dump *want, const char *what, const char *kind,
                             unsigned long n)
{
    if (got->len != want->len || memcmp(got->buf, want->buf, got->len) != 0)
        fail_msg("%s, failing allocation %lu: the store is not %s\n--- got\n%s--- want\n%s", kind,
                 n, what, got->buf, want->buf);
}

/* ---- the cases --------------------------------------------------------------- */

typedef struct req_case {
    const char *kind;
    text line;
    /* Bytes of earlier replies already in the output buffer (a pipelining
     * client): 0 = one ping reply; PREFILL_NONE = an empty buffer (a new
     * connection: the reply's first byte allocates); PREFILL_TIGHT = enough
     * that the envelope of the reply fits and its end does not. */
    size_t prefill;
    bool batch;
    int batch_mutation; /* index of the one mutating request in a batch */
    bool kin;           /* the store also holds model kin (kin_setup_line) */
    /* rp_store_memory on an error: 1 = exactly as before (model puts and
     * deletes, scene replaces and deletes), 2 = as before or as after the
     * clean run (queries: the scene's tree may have been built), 0 = not
     * compared (scene puts may keep a larger array they grew). */
    int memory;
} req_case;

#define PREFILL_NONE ((size_t)-1)
#define PREFILL_TIGHT ((size_t)-2)

enum { N_CASES = 48 };
static req_case cases[N_CASES];
static size_t n_cases;

static req_case *new_case(const char *kind)
{
    assert_true(n_cases < N_CASES);
    req_case *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->batch_mutation = -1;
    return c;
}

/* attached: [...] for n attached shapes. */
static void add_attached_json(text *t, const rp_attached *a, size_t n)
{
    add(t, "[");
    for (size_t i = 0; i < n; i++) {
        add(t, "%s{\"id\":\"%s\",\"link\":\"%s\",\"shape\":", i ? "," : "", a[i].id, a[i].link);
        add_json_shape(t, &a[i].shape);
        if (a[i].n_touch) {
            add(t, ",\"touch_links\":[");
            for (size_t k = 0; k < a[i].n_touch; k++)
                add(t, "%s\"%s\"", k ? "," : "", a[i].touch_links[k]);
            add(t, "]");
        }
        add(t, "}");
    }
    add(t, "]");
}

/* The start of a request on model kin and scene cell with "attached" (n
 * of tree_attached from `first`) and "allowed_scene" (tree_more_scene). */
static void add_kin_request(text *t, const char *id, const char *method, size_t first, size_t n)
{
    add(t,
        "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"%s\",\"params\":{\"model\":\"kin\","
        "\"scene\":\"cell\",\"attached\":",
        id, method);
    add_attached_json(t, tree_attached + first, n);
    add(t, ",\"allowed_scene\":");
    add_name_pairs(t, tree_more_scene, N_MANY_SCENE);
}

static void add_tree_path(text *t)
{
    add(t, "\"path\":[");
    for (int k = 0; k < 3; k++)
        add(t, "%s[%.17g,%.17g,%.17g,%.17g]", k ? "," : "", tree_path[4 * k], tree_path[4 * k + 1],
            tree_path[4 * k + 2], tree_path[4 * k + 3]);
    add(t, "]");
}

/* Kinematic requests, on a store that also holds model kin. */
static void build_kin_cases(void)
{
    req_case *c = new_case("model.put kinematic replace");
    c->kin = true;
    c->memory = 1;
    rp_model_def d = tree_def(0.01);
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.put\",\"params\":"
                  "{\"model\":\"kin\",\"allow_adjacent\":true,");
    add_kin_members(&c->line, &d);
    add(&c->line, "}}");

    c = new_case("model.put kinematic new");
    c->kin = true;
    c->memory = 1;
    d = tree_def(0.03);
    d.self_collision = false;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.put\",\"params\":"
                  "{\"model\":\"kin2\",");
    add_kin_members(&c->line, &d);
    add(&c->line, "}}");

    c = new_case("model.put urdf+srdf replace");
    c->kin = true;
    c->memory = 1;
    add(&c->line,
        "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.put\",\"params\":"
        "{\"model\":\"kin\",\"urdf\":\"%s\",\"srdf\":\"%s\","
        "\"allowed_pairs\":[[\"upper\",\"slide\"]],"
        "\"allowed_scene\":[[\"upper\",\"s03\"],[\"finger\",\"s10\"]],"
        "\"default_positions\":{\"j2\":-0.4,\"j3\":0.05},\"safety_margin\":0.015}}",
        kin_urdf, kin_srdf);

    c = new_case("model.put urdf new, adjacent");
    c->kin = true;
    c->memory = 1;
    add(&c->line,
        "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.put\",\"params\":"
        "{\"model\":\"ur\",\"urdf\":\"%s\",\"allow_adjacent\":true}}",
        kin_urdf);

    /* Robot instances: placed (with an object), moved by joints and base
     * beside nothing else, removed by name, and a replace that keeps one. */
    c = new_case("scene.put robots");
    c->kin = true;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\",\"params\":"
                  "{\"scene\":\"bots\",\"robots\":{\"r3\":{\"model\":\"kbot\",\"joints\":"
                  "{\"j3\":0.1}},\"r1\":{\"model\":\"kbot\"}},\"objects\":{\"lamp\":{"
                  "\"shapes\":");
    add_shapes(&c->line, "c", 0, 3, 0.1);
    add(&c->line, "}}}}");

    c = new_case("scene.move robots");
    c->kin = true;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.move\",\"params\":"
                  "{\"scene\":\"bots\",\"robots\":{\"r1\":{\"joints\":{\"j1\":-0.2}},"
                  "\"r2\":{\"base\":{\"translation\":[0,1,0]}}}}}");

    c = new_case("scene.attach");
    c->kin = true;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.attach\",\"params\":"
                  "{\"scene\":\"bots\",\"object\":\"box2\",\"robot\":\"r2\",\"link\":\"fore\"}}");

    c = new_case("scene.detach");
    c->kin = true;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.detach\",\"params\":"
                  "{\"scene\":\"bots\",\"object\":\"crate\"}}");

    /* A check ignoring r1, which holds the crate: the crate's shapes are
     * held on r1's link for the check (an extension of the model). */
    c = new_case("check, ignoring an instance that holds an object");
    c->kin = true;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"check\",\"params\":"
                  "{\"model\":\"kbot\",\"scene\":\"bots\",\"joints\":{\"j1\":0.2},"
                  "\"ignore\":[\"r1\"],\"report\":\"all\",\"margin\":0.5}}");

    c = new_case("scene.remove robots");
    c->kin = true;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.remove\",\"params\":"
                  "{\"scene\":\"bots\",\"ids\":[\"r1\",\"w00\"]}}");

    c = new_case("scene.replace robots");
    c->kin = true;
    c->memory = 1;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.replace\","
                  "\"params\":{\"scene\":\"bots\",\"robots\":{\"r2\":{\"model\":\"kbot\","
                  "\"joints\":{\"j2\":0.4}}}}}");

    c = new_case("model.fk");
    c->kin = true;
    c->memory = 1;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.fk\",\"params\":"
                  "{\"model\":\"kin\",\"joints\":{\"j2\":0.4,\"j3\":0.1,\"j4\":-0.5},"
                  "\"base\":{\"translation\":[0.1,0,0.02]}}}");

    /* The writer: model.get's kinematic members (joints, limits, shapes). */
    c = new_case("writer: model.get kinematic");
    c->kin = true;
    c->memory = 1;
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.get\",\"params\":"
                  "{\"model\":\"kin\"}}");

    /* Report all with a wide margin: violations of the robot, the attached
     * shapes and self pairs; wrist's 40 allowed scene shapes. */
    c = new_case("check joints, attached");
    c->kin = true;
    c->memory = 2;
    add_kin_request(&c->line, "r-7", "check", 0, 3);
    add(&c->line, ",\"report\":\"all\",\"margin\":0.08,\"joints\":[0.5,-0.3,0.1,0.7]}}");

    c = new_case("check.batch joints, attached");
    c->kin = true;
    c->memory = 2;
    add_kin_request(&c->line, "r-7", "check.batch", 2, 1); /* no touch_links */
    add(&c->line, ",\"report\":\"first\",\"margin\":0.03,\"base\":{\"translation\":[0,0,0.02]},"
                  "\"joints\":[[0.5,-0.3,0.1,0.7],{\"j1\":1.0},[2.4,1.4,0.19,3],"
                  "{\"j1\":-2.2,\"j2\":0.3,\"j3\":0,\"j4\":0},[0,0,0.3,0],[-1,0.5,0.05,6]]}}");

    c = new_case("check.motion discrete, attached");
    c->kin = true;
    c->memory = 2;
    add_kin_request(&c->line, "r-7", "check.motion", 0, 3);
    add(&c->line, ",\"mode\":\"discrete\",\"resolution\":0.05,\"earliest\":true,\"margin\":0.005,"
                  "\"base\":{\"translation\":[0.125,-0.25,0.6]},");
    add_tree_path(&c->line);
    add(&c->line, "}}");

    c = new_case("check.motion certified, attached");
    c->kin = true;
    c->memory = 2;
    add_kin_request(&c->line, "r-7", "check.motion", 0, 3);
    add(&c->line, ",\"mode\":\"certified\",\"tolerance\":1e-4,\"margin\":0.005,"
                  "\"base\":{\"translation\":[0.125,-0.25,0.6]},");
    add_tree_path(&c->line);
    add(&c->line, "}}");

    /* A batch: a certified motion, a kinematic put and FK. */
    c = new_case("batch, kinematic");
    c->kin = true;
    c->batch = true;
    c->batch_mutation = 1;
    add(&c->line, "[");
    add_kin_request(&c->line, "b-1", "check.motion", 0, 3);
    add(&c->line, ",\"mode\":\"certified\",\"margin\":0.005,");
    add_tree_path(&c->line);
    add(&c->line, "}},");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"b-2\",\"method\":\"model.put\",\"params\":"
                  "{\"model\":\"kin3\",\"links\":[{\"id\":\"a\",\"link\":\"l1\",\"shape\":"
                  "{\"sphere\":{\"center\":[0,0,0],\"radius\":0.1}}}],\"joints\":[{\"name\":\"q\","
                  "\"type\":\"revolute\",\"parent\":\"l0\",\"child\":\"l1\",\"axis\":[0,0,1]}]}},"
                  "{\"jsonrpc\":\"2.0\",\"id\":\"b-3\",\"method\":\"model.fk\",\"params\":"
                  "{\"model\":\"kin\",\"joints\":[0.1,0.2,0.03,0.4]}}]");
}

static void build_cases(void)
{
    req_case *c = new_case("scene.create");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.create\","
                  "\"params\":{\"scene\":\"new\",\"shapes\":");
    add_shapes(&c->line, "n", 0, 30, 0.1);
    add(&c->line, "}}");

    /* 12 replacements and 12 new ids: the entry array and the id index
     * both grow. */
    c = new_case("scene.put");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"cell\",\"if_revision\":1,\"shapes\":{");
    for (int i = 0; i < 24; i++) {
        add(&c->line, "%s\"%s%02d\":", i ? "," : "", i < 12 ? "s" : "t", i);
        add_shape(&c->line, i, 0.02, 0.0, 0.5);
    }
    add(&c->line, "}}}");

    /* More new ids than count/4 + 64, and a few moves: the put rebuilds the
     * scene's tree from scratch (bvh.c), its scratch reserved up front. */
    c = new_case("scene.put bulk");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"cell\",\"shapes\":{");
    for (int i = 0; i < 100; i++) {
        add(&c->line, "%s\"%s%02d\":", i ? "," : "", i < 5 ? "s" : "v", i);
        add_shape(&c->line, i, 0.03, 0.0, 0.4);
    }
    add(&c->line, "}}}");

    c = new_case("scene.put create");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"bay\",\"create\":true,\"shapes\":");
    add_shapes(&c->line, "b", 0, 20, -0.1);
    add(&c->line, "}}");

    c = new_case("scene.remove");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.remove\","
                  "\"params\":{\"scene\":\"cell\",\"if_revision\":1,\"ids\":[");
    for (int i = 0; i < 12; i++)
        add(&c->line, "%s\"s%02d\"", i ? "," : "", 3 * i);
    add(&c->line, ",\"missing\"]}}");

    /* Old and new ids mixed, more shapes than before: the new content is
     * built beside the old one. */
    c = new_case("scene.replace");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.replace\","
                  "\"params\":{\"scene\":\"cell\",\"if_revision\":1,\"shapes\":{");
    for (int i = 0; i < 48; i++) {
        add(&c->line, "%s\"%s%02d\":", i ? "," : "", i % 2 ? "s" : "r", i);
        add_shape(&c->line, i, 0.01, 0.0, 0.25);
    }
    add(&c->line, "}}}");

    c = new_case("scene.replace create");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.replace\","
                  "\"params\":{\"scene\":\"bay\",\"if_revision\":0,\"create\":true,"
                  "\"shapes\":");
    add_shapes(&c->line, "b", 0, 20, -0.1);
    add(&c->line, "}}");

    /* Objects: a put that replaces the crate with another shape set (one
     * kept, one new, two dropped), adds an object and a shape of the
     * scene's own; a move of both; a removal by name; a replace and a
     * create with objects. */
    c = new_case("scene.put objects");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"yard\",\"shapes\":");
    add_shapes(&c->line, "p", 1, 4, 0.2);
    add(&c->line, ",\"objects\":{\"crate\":{\"pose\":{\"translation\":[0,2,0]},\"shapes\":");
    add_shapes(&c->line, "c", 2, 4, 0.1);
    add(&c->line, "},\"lamp\":{\"shapes\":");
    add_shapes(&c->line, "l", 0, 3, 0.3);
    add(&c->line, "}}}}");

    c = new_case("scene.move");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.move\","
                  "\"params\":{\"scene\":\"yard\",\"objects\":{\"crate\":{\"translation\":"
                  "[0.5,0.5,0]},\"tray\":{\"matrix\":[[0,-1,0,1],[1,0,0,2],[0,0,1,3]]}}}}");

    c = new_case("scene.remove objects");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.remove\","
                  "\"params\":{\"scene\":\"yard\",\"ids\":[\"tray\",\"p00\",\"missing\","
                  "\"tray\"]}}");

    c = new_case("scene.replace objects");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.replace\","
                  "\"params\":{\"scene\":\"yard\",\"shapes\":");
    add_shapes(&c->line, "p", 0, 1, 0.0);
    add(&c->line, ",\"objects\":{\"tray\":{\"shapes\":");
    add_shapes(&c->line, "t", 0, 4, 0.5);
    add(&c->line, "}}}}");

    c = new_case("scene.create objects");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.create\","
                  "\"params\":{\"scene\":\"dock\",\"objects\":{\"crate\":{\"shapes\":");
    add_shapes(&c->line, "c", 0, 5, 0.0);
    add(&c->line, "}}}}");

    c = new_case("scene.delete");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.delete\","
                  "\"params\":{\"scene\":\"cell\"}}");

    c = new_case("model.delete");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.delete\","
                  "\"params\":{\"model\":\"arm\"}}");

    c = new_case("model.put replace");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.put\",\"params\":{");
    add_model(&c->line, "arm", 10, 4);
    add(&c->line, "}}");

    c = new_case("model.put new");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.put\",\"params\":{");
    add_model(&c->line, "bot", 9, 2);
    add(&c->line, "}}");

    /* Report all with a wide margin: many violations (the array grows),
     * sorted; the scene's tree is built on the way. */
    c = new_case("check");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"check\",\"params\":"
                  "{\"model\":\"arm\",\"scene\":\"cell\",\"report\":\"all\",\"margin\":0.15,");
    text cfg = {.len = 0};
    add_config(&cfg, 2, true);
    add(&c->line, "%.*s}}", (int)(cfg.len - 2), cfg.buf + 1); /* the config's members */

    c = new_case("check.batch");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"check.batch\",\"params\":"
                  "{\"model\":\"arm\",\"scene\":\"cell\",\"report\":\"all\",\"margin\":0.1,"
                  "\"configurations\":[");
    for (int k = 0; k < 6; k++) {
        if (k)
            add(&c->line, ",");
        add_config(&c->line, k, k % 2 == 1);
    }
    add(&c->line, "]}}");

    /* The writer: a reply of a few KB, so the output buffer doubles several
     * times while it is written. */
    c = new_case("writer: scene.get");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.get\","
                  "\"params\":{\"scene\":\"cell\"}}");

    /* The writer after a mutation: earlier replies fill the output buffer
     * so that the envelope still fits but the result does not; prefill is
     * set from the clean reply's length (see run_case). */
    c = new_case("writer: scene.put into a full buffer");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"aux\",\"shapes\":");
    add_shapes(&c->line, "a", 1, 5, 0.2);
    add(&c->line, "}}");
    c->prefill = PREFILL_TIGHT;

    /* A batch: a check, a mutation and a ping; the check's tree build and
     * result come after the put has been applied. */
    c = new_case("batch");
    c->batch = true;
    c->batch_mutation = 1;
    add(&c->line, "[{\"jsonrpc\":\"2.0\",\"id\":\"b-1\",\"method\":\"check\",\"params\":"
                  "{\"model\":\"arm\",\"scene\":\"cell\",\"report\":\"closest\",");
    text cfg2 = {.len = 0};
    add_config(&cfg2, 1, false);
    add(&c->line, "%.*s}},", (int)(cfg2.len - 2), cfg2.buf + 1);
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"b-2\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"cell\",\"shapes\":");
    add_shapes(&c->line, "u", 0, 10, 0.3);
    add(&c->line, "}},{\"jsonrpc\":\"2.0\",\"id\":\"b-3\",\"method\":\"scene.get\","
                  "\"params\":{\"scene\":\"aux\"}}]");

    /* Point clouds: a put of two clouds (points with a voxel, points_f32
     * without) and a shape into the scene with objects; a replace of the
     * scene with clouds that drops cam and puts lidar again; cam removed
     * by name. */
    c = new_case("scene.put clouds into a scene with objects");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"yard\",\"shapes\":");
    add_shapes(&c->line, "p", 4, 6, 0.2);
    add(&c->line, ",\"clouds\":{\"cam\":{\"points\":[");
    float pts[3 * 40];
    cloud_points(pts, 40, -1.0f);
    for (size_t i = 0; i < 40; i++)
        add(&c->line, "%s[%.9g,%.9g,%.9g]", i ? "," : "", (double)pts[3 * i],
            (double)pts[3 * i + 1], (double)pts[3 * i + 2]);
    add(&c->line, "],\"radius\":0.03,\"voxel\":0.25},\"raw\":{\"points_f32\":\"");
    cloud_points(pts, 20, 1.5f);
    add_points_f32(&c->line, pts, 20);
    add(&c->line, "\",\"radius\":0.01,\"count\":20}}}}");

    c = new_case("scene.replace dropping a cloud");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.replace\","
                  "\"params\":{\"scene\":\"depth\",\"shapes\":");
    add_shapes(&c->line, "d", 0, 3, 0.1);
    add(&c->line, ",\"objects\":{\"box\":{\"shapes\":");
    add_shapes(&c->line, "k", 0, 1, 0.0);
    add(&c->line, "}},\"clouds\":{\"lidar\":{\"points_f32\":\"");
    cloud_points(pts, 10, 2.5f);
    add_points_f32(&c->line, pts, 10);
    add(&c->line, "\",\"radius\":0.02,\"voxel\":0.125}}}}");

    c = new_case("scene.remove a cloud by name");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.remove\","
                  "\"params\":{\"scene\":\"depth\",\"ids\":[\"cam\",\"missing\"]}}");

    /* The same batch, and a mutation, as the first reply of a connection:
     * the '[' or '{' that starts the reply allocates the buffer. */
    req_case *b = new_case("batch into an empty buffer");
    *b = *c;
    b->kind = "batch into an empty buffer";
    b->prefill = PREFILL_NONE;
    c = new_case("writer: scene.create into an empty buffer");
    *c = cases[0];
    c->kind = "writer: scene.create into an empty buffer";
    c->prefill = PREFILL_NONE;

    for (size_t i = 0; i < n_cases; i++)
        if (strncmp(cases[i].kind, "model.put", 9) == 0 ||
            strcmp(cases[i].kind, "model.delete") == 0 ||
            strncmp(cases[i].kind, "scene.replace", 13) == 0 ||
            strcmp(cases[i].kind, "scene.delete") == 0)
            cases[i].memory = 1;
        else if (strncmp(cases[i].kind, "check", 5) == 0)
            cases[i].memory = 2;
    build_kin_cases();
}

/* ---- checking replies ----------------------------------------------------------- */

/* True when `j` is the -32603 out-of-memory error object for request id
 * `id` (a string; NULL = null id). */
static bool is_oom_error(const cJSON *j, const char *id)
{
    if (!cJSON_IsObject(j) || cJSON_GetArraySize(j) != 3)
        return false;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "jsonrpc");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0)
        return false;
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(j, "id");
    if (id ? !(cJSON_IsString(jid) && strcmp(jid->valuestring, id) == 0) : !cJSON_IsNull(jid))
        return false;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    return cJSON_IsNumber(code) && code->valuedouble == RPD_INTERNAL_ERROR && cJSON_IsString(msg) &&
           strstr(msg->valuestring, "out of memory") != NULL;
}

/* Where a batch's element i came out. */
typedef enum outcome { SAME_AS_CLEAN, OOM_ERROR, WRITER_FAILED } outcome;

/* The reply `got` (one line) compared with the clean run's `want`:
 * identical, or the out-of-memory error for the request.  For a batch,
 * element by element, *mutation_failed telling whether the mutating
 * request got the error; or one out-of-memory line with id null for the
 * whole batch (*whole_batch). */
static void check_reply(const req_case *c, unsigned long n, bool parse_failed, const char *got,
                        size_t got_len, const char *want, size_t want_len, outcome *result,
                        bool *mutation_failed, bool *whole_batch)
{
    *mutation_failed = false;
    *whole_batch = false;
    if (got_len == want_len && memcmp(got, want, got_len) == 0) {
        *result = SAME_AS_CLEAN;
        return;
    }
    *result = OOM_ERROR;
    if (got_len == 0 || got[got_len - 1] != '\n' || memchr(got, '\n', got_len - 1))
        fail_msg("%s, failing allocation %lu: not one reply line: %.*s", c->kind, n, (int)got_len,
                 got);
    /* The whole line, nothing after the value (cJSON_ParseWithLength
     * alone would accept trailing bytes). */
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(got, got_len - 1, &end, false);
    if (j && end != got + got_len - 1) {
        cJSON_Delete(j);
        j = NULL;
    }
    if (getenv("AF_TRACE"))
        fprintf(stderr, "%s %lu: %.*s", c->kind, n, (int)got_len, got);
    if (!j)
        fail_msg("%s, failing allocation %lu: reply is not JSON: %.*s", c->kind, n, (int)got_len,
                 got);
    if (parse_failed) {
        /* cJSON could not build the tree: no id is known. */
        bool ok = is_oom_error(j, NULL);
        cJSON_Delete(j);
        if (!ok)
            fail_msg("%s, failing allocation %lu (in the parser): not the out-of-memory error "
                     "with id null: %.*s",
                     c->kind, n, (int)got_len, got);
        *mutation_failed = true;
        return;
    }
    if (!c->batch) {
        bool ok = is_oom_error(j, "r-7");
        cJSON_Delete(j);
        if (!ok)
            fail_msg("%s, failing allocation %lu: neither the clean reply nor the "
                     "out-of-memory error: %.*s",
                     c->kind, n, (int)got_len, got);
        *mutation_failed = true;
        return;
    }
    if (is_oom_error(j, NULL)) {
        cJSON_Delete(j);
        *whole_batch = true;
        return;
    }
    cJSON *w = cJSON_ParseWithLength(want, want_len);
    assert_non_null(w);
    bool ok = cJSON_IsArray(j) && cJSON_GetArraySize(j) == cJSON_GetArraySize(w);
    int i = 0;
    for (cJSON *g = j->child, *e = w->child; ok && g && e; g = g->next, e = e->next, i++) {
        if (cJSON_Compare(g, e, true))
            continue;
        const cJSON *eid = cJSON_GetObjectItemCaseSensitive(e, "id");
        ok = is_oom_error(g, eid->valuestring);
        if (i == c->batch_mutation)
            *mutation_failed = true;
    }
    cJSON_Delete(w);
    cJSON_Delete(j);
    if (!ok)
        fail_msg("%s, failing allocation %lu: batch elements are neither the clean ones nor "
                 "out-of-memory errors: %.*s",
                 c->kind, n, (int)got_len, got);
}

/* ---- the sweep ------------------------------------------------------------------- */

static const char ping_line[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}";
static const char pong_reply[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"pong\":true}}\n";

/* Puts `bytes` of earlier replies into the output buffer: a ping's reply,
 * then a filler line of the remaining length. */
static void prefill(server *s, size_t bytes)
{
    if (bytes == PREFILL_NONE) {
        rp_jw_free(&s->out); /* not even an allocation left from the setup */
        rp_jw_init(&s->out);
        return;
    }
    send_line(s, ping_line, sizeof ping_line - 1);
    if (bytes > s->out.len + 2) {
        size_t fill = bytes - s->out.len - 1;
        char pad[4096];
        assert_true(fill < sizeof pad);
        memset(pad, ' ', fill);
        rp_jw_raw(&s->out, pad, fill);
        rp_jw_raw(&s->out, "\n", 1);
    }
    assert_false(s->out.oom);
}

static unsigned long total_points;

typedef struct clean_run {
    char reply[1 << 16];
    size_t reply_len;
    dump before, after;
    size_t memory_after; /* rp_store_memory after the request */
    unsigned long allocations;
} clean_run;

static clean_run clean;
static dump before, after;
static char earlier[8192];

/* Runs case c once with allocation working: its reply, the store before and
 * after, and the number of allocations it makes. */
static void run_clean(req_case *c, size_t fill)
{
    server s;
    long live0 = af_live();
    state_open(&s, c->kin);
    prefill(&s, fill);
    size_t mark = s.out.len;
    dump_store(s.core.store, &clean.before);
    af_arm(0, false);
    send_line(&s, c->line.buf, c->line.len);
    clean.allocations = af_calls();
    af_disarm();
    assert_false(s.out.oom);
    clean.reply_len = s.out.len - mark;
    assert_true(clean.reply_len < sizeof clean.reply);
    memcpy(clean.reply, s.out.buf + mark, clean.reply_len);
    if (strstr(clean.reply, "\"error\""))
        fail_msg("%s: the clean run fails: %.*s", c->kind, (int)clean.reply_len, clean.reply);
    dump_store(s.core.store, &clean.after);
    clean.memory_after = rp_store_memory(s.core.store);
    state_close(&s);
    assert_int_equal(af_live(), live0);
}

/* rp_store_memory after a failing run (see req_case.memory): a model put
 * that changed nothing (`unchanged`: the dump is as before) left the memory
 * exactly as it was, one that went through as the clean run did; a query
 * may or may not have built the scene's tree. */
static void check_memory(const req_case *c, unsigned long n, size_t got, size_t was, bool unchanged)
{
    size_t want = unchanged ? was : clean.memory_after;
    if (c->memory == 1 && got != want)
        fail_msg("%s, failing allocation %lu: rp_store_memory %zu, want %zu (%s)", c->kind, n, got,
                 want, unchanged ? "as before" : "as the clean run left it");
    if (c->memory == 2 && got != was && got != clean.memory_after)
        fail_msg("%s, failing allocation %lu: rp_store_memory %zu, neither %zu (before) nor %zu "
                 "(the clean run)",
                 c->kind, n, got, was, clean.memory_after);
}

/* One request with the n-th allocation failing (and every later one when
 * `persistent`); checks the reply, the store, recovery and leaks. */
static void run_failing(req_case *c, size_t fill, unsigned long n, bool persistent,
                        unsigned long *errors, unsigned long *survived)
{
    server s;
    long live0 = af_live();
    state_open(&s, c->kin);
    prefill(&s, fill);
    size_t mark = s.out.len;
    assert_true(mark < sizeof earlier);
    if (mark)
        memcpy(earlier, s.out.buf, mark);
    dump_store(s.core.store, &before);
    assert_true(before.len == clean.before.len &&
                memcmp(before.buf, clean.before.buf, before.len) == 0);
    size_t memory_before = rp_store_memory(s.core.store);

    af_arm(n, persistent);
    send_line(&s, c->line.buf, c->line.len);
    unsigned long failed = af_failures();
    bool parse_failed = af_json_failures() > 0;
    af_disarm();
    if (failed == 0)
        fail_msg("%s: allocation %lu was never made", c->kind, n);

    /* Earlier replies stay as they were. */
    assert_true(s.out.len >= mark);
    if (mark && memcmp(s.out.buf, earlier, mark) != 0)
        fail_msg("%s, failing allocation %lu: earlier replies in the buffer changed", c->kind, n);
    dump_store(s.core.store, &after);
    outcome result;
    bool mutation_failed = false, whole_batch = false;
    if (persistent && s.out.oom) {
        /* Not even the error fitted: the server sends nothing more and
         * closes this connection (conn.c), so what the buffer holds after
         * the mark does not matter. */
        result = WRITER_FAILED;
    } else {
        assert_false(s.out.oom);
        check_reply(c, n, parse_failed, s.out.buf + mark, s.out.len - mark, clean.reply,
                    clean.reply_len, &result, &mutation_failed, &whole_batch);
    }
    if (result == SAME_AS_CLEAN) {
        assert_same_dump(&after, &clean.after, "what the clean run left", c->kind, n);
        ++*survived;
    } else if (whole_batch || result == WRITER_FAILED) {
        /* The replies were lost; a batch's mutation may have run before. */
        bool as_before = after.len == before.len && memcmp(after.buf, before.buf, after.len) == 0;
        if (!as_before)
            assert_same_dump(&after, &clean.after, "as before or as after the clean run", c->kind,
                             n);
        ++*errors;
    } else {
        if (!c->batch || mutation_failed)
            assert_same_dump(&after, &before, "unchanged", c->kind, n);
        else
            assert_same_dump(&after, &clean.after, "what the clean run left", c->kind, n);
        ++*errors;
    }
    check_memory(c, n, rp_store_memory(s.core.store), memory_before,
                 after.len == before.len && memcmp(after.buf, before.buf, after.len) == 0);

    /* The same session goes on: a ping answers, and when the request
     * failed, sending it again gives the clean outcome. */
    rp_jw_free(&s.out);
    rp_jw_init(&s.out);
    send_line(&s, ping_line, sizeof ping_line - 1);
    assert_string_equal(s.out.buf, pong_reply);
    if (result != SAME_AS_CLEAN && !c->batch) {
        rp_jw_reset(&s.out);
        prefill(&s, fill);
        send_line(&s, c->line.buf, c->line.len);
        assert_false(s.out.oom);
        if (s.out.len - mark != clean.reply_len ||
            memcmp(s.out.buf + mark, clean.reply, clean.reply_len) != 0)
            fail_msg("%s, failing allocation %lu: the retry's reply differs: %.*s", c->kind, n,
                     (int)(s.out.len - mark), s.out.buf + mark);
        dump_store(s.core.store, &after);
        assert_same_dump(&after, &clean.after, "what the clean run left, after a retry", c->kind,
                         n);
    }
    state_close(&s);
    if (af_live() != live0)
        fail_msg("%s, failing allocation %lu: %ld blocks leaked", c->kind, n, af_live() - live0);
}

/* The requests by what they do, one sweep of each kind per test. */
typedef enum family { F_SCENE, F_MODEL, F_QUERY, F_WRITER, F_BATCH } family;

static family family_of(const char *kind)
{
    if (strncmp(kind, "scene.", 6) == 0)
        return F_SCENE; /* scene.create, put, remove, replace, delete */
    if (strncmp(kind, "model.put", 9) == 0 || strcmp(kind, "model.delete") == 0)
        return F_MODEL;
    if (strncmp(kind, "check", 5) == 0 || strcmp(kind, "model.fk") == 0)
        return F_QUERY; /* check, check.batch, check.motion, model.fk */
    if (strncmp(kind, "writer:", 7) == 0)
        return F_WRITER; /* large replies, full and empty output buffers */
    if (strncmp(kind, "batch", 5) == 0)
        return F_BATCH;
    fail_msg("request case \"%s\" is in no family: no sweep would run it", kind);
    abort(); /* not reached */
}

/* Every case of family f, with each allocation failing in turn (once, or
 * from then on when persistent). */
static void sweep(bool persistent, family f)
{
    unsigned long points = 0;
    for (size_t i = 0; i < n_cases; i++) {
        req_case *c = &cases[i];
        if (family_of(c->kind) != f)
            continue;
        size_t fill = c->prefill;
        if (c->prefill == PREFILL_TIGHT) {
            /* Fill the writer's first 256-byte buffer so that the envelope
             * of the reply fits and its end does not. */
            run_clean(c, 0);
            size_t ping_len = sizeof pong_reply - 1;
            assert_true(clean.reply_len < 200);
            fill = ping_len + (256 - ping_len) - clean.reply_len + 8;
        }
        run_clean(c, fill);
        unsigned long errors = 0, survived = 0;
        for (unsigned long n = 1; n <= clean.allocations; n++)
            run_failing(c, fill, n, persistent, &errors, &survived);
        print_message("%-40s %4lu allocations: %4lu errors, %3lu survived%s\n", c->kind,
                      clean.allocations, errors, survived, persistent ? " (persistent)" : "");
        points += clean.allocations;
    }
    if (points == 0)
        fail_msg("no request case in this family");
    print_message("%lu allocation-failure points%s\n", points, persistent ? " (persistent)" : "");
    total_points += points;
}

/* -- one allocation failing: the out-of-memory error (or the clean reply)
 *    and the store unchanged (or as the clean run left it) -- */

static void scene_mutations_fail_cleanly_when_any_one_allocation_fails(void **state)
{
    (void)state;
    sweep(false, F_SCENE);
}

static void model_puts_and_deletes_fail_cleanly_when_any_one_allocation_fails(void **state)
{
    (void)state;
    sweep(false, F_MODEL);
}

static void queries_fail_cleanly_when_any_one_allocation_fails(void **state)
{
    (void)state;
    sweep(false, F_QUERY);
}

static void the_reply_writer_fails_cleanly_when_any_one_allocation_fails(void **state)
{
    (void)state;
    sweep(false, F_WRITER);
}

static void batches_fail_cleanly_when_any_one_allocation_fails(void **state)
{
    (void)state;
    sweep(false, F_BATCH);
}

/* -- every allocation failing from the N-th on: the error reply may not
 *    fit, but the store is unchanged and nothing leaks -- */

static void scene_mutations_change_nothing_when_allocation_fails_from_any_point_on(void **state)
{
    (void)state;
    sweep(true, F_SCENE);
}

static void
model_puts_and_deletes_change_nothing_when_allocation_fails_from_any_point_on(void **state)
{
    (void)state;
    sweep(true, F_MODEL);
}

static void queries_change_nothing_when_allocation_fails_from_any_point_on(void **state)
{
    (void)state;
    sweep(true, F_QUERY);
}

static void the_reply_writer_changes_nothing_when_allocation_fails_from_any_point_on(void **state)
{
    (void)state;
    sweep(true, F_WRITER);
}

static void batches_change_nothing_when_allocation_fails_from_any_point_on(void **state)
{
    (void)state;
    sweep(true, F_BATCH);
}

/* ---- URDF import ------------------------------------------------------------ */

/* Every element the reader builds something from, and an SRDF. */
static const char urdf_doc[] =
    "<?xml version='1.0'?><robot name='r'>"
    "<link name='base'><visual><geometry><mesh filename='m'/></geometry></visual>"
    "<collision><origin xyz='0 0 0.1' rpy='0 0.2 0'/><geometry><box size='0.4 0.2 0.05'/>"
    "</geometry></collision><collision><geometry><sphere radius='0.1'/></geometry></collision>"
    "</link><link name='arm'><collision><geometry><cylinder radius='0.05' length='0.3'/>"
    "</geometry></collision></link><link name='finger'><collision><geometry>"
    "<capsule radius='0.01' length='0.02'/></geometry></collision></link>"
    "<joint name='j1' type='revolute'><parent link='base'/><child link='arm'/>"
    "<origin xyz='0 0 0.2'/><axis xyz='0 1 0'/><limit lower='-1' upper='1'/></joint>"
    "<joint name='j2' type='prismatic'><parent link='arm'/><child link='finger'/>"
    "<limit upper='0.04'/><mimic joint='j1' multiplier='0.1'/></joint></robot>";
static const char srdf_doc[] =
    "<robot name='r'><group name='g'/><disable_collisions link1='base' link2='finger'/></robot>";

/* rp_urdf_parse (expat's allocations included: urdf.c gives expat the
 * wrapped functions) with the n-th allocation failing, once or from then
 * on, for every n: RP_URDF_NOMEM, or the clean run's def when the parse
 * survives the failure; nothing leaks either way. */
static void urdf_parse_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    rp_urdf_opts opts = {.allow_adjacent = true};
    rp_urdf *u = NULL;
    rp_urdf_error err;
    long live0 = af_live();
    af_arm(0, false);
    assert_int_equal(
        rp_urdf_parse(urdf_doc, strlen(urdf_doc), srdf_doc, strlen(srdf_doc), &opts, &u, &err),
        RP_URDF_OK);
    unsigned long k = af_calls();
    af_disarm();
    rp_model_def want = *rp_urdf_def(u);
    assert_int_equal(want.n_links, 4); /* box, sphere, cylinder's capsule, capsule */
    rp_urdf_free(u);
    for (int persistent = 0; persistent <= 1; persistent++) {
        unsigned long errors = 0;
        for (unsigned long n = 1; n <= k; n++) {
            u = NULL;
            af_arm(n, persistent);
            rp_urdf_status st = rp_urdf_parse(urdf_doc, strlen(urdf_doc), srdf_doc,
                                              strlen(srdf_doc), &opts, &u, &err);
            af_disarm();
            if (st == RP_URDF_OK) {
                const rp_model_def *d = rp_urdf_def(u);
                assert_true(d->n_links == want.n_links && d->n_joints == want.n_joints &&
                            d->n_link_names == want.n_link_names && d->n_allowed == want.n_allowed);
                rp_urdf_free(u);
            } else {
                if (st != RP_URDF_NOMEM)
                    fail_msg("allocation %lu failing: status %d, %s", n, (int)st, err.reason);
                assert_null(u);
                assert_string_equal(err.reason, "out of memory");
                errors++;
            }
            if (af_live() != live0)
                fail_msg("allocation %lu failing%s: %ld blocks leaked", n,
                         persistent ? " (persistent)" : "", af_live() - live0);
        }
        print_message("%-40s %4lu allocations: %4lu errors%s\n", "rp_urdf_parse", k, errors,
                      persistent ? " (persistent)" : "");
        total_points += k;
    }
}

/* rp_store_model_put_urdf with the n-th allocation failing, once or from
 * then on: RP_ERR_NOMEM with the store as it was (no model, the same
 * revision), or the model put; nothing leaks either way. */
static void urdf_import_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    long live0 = af_live();
    rp_store *st = rp_store_new(NULL);
    assert_non_null(st);
    af_arm(0, false);
    assert_int_equal(rp_store_model_put_urdf(st, "m", urdf_doc, strlen(urdf_doc), srdf_doc,
                                             strlen(srdf_doc), NULL, NULL),
                     RP_OK);
    unsigned long k = af_calls();
    af_disarm();
    assert_int_equal(rp_store_model_delete(st, "m"), RP_OK);
    for (int persistent = 0; persistent <= 1; persistent++) {
        unsigned long errors = 0;
        for (unsigned long n = 1; n <= k; n++) {
            uint64_t rev = rp_store_revision(st);
            rp_urdf_problem why;
            af_arm(n, persistent);
            rp_status s = rp_store_model_put_urdf(st, "m", urdf_doc, strlen(urdf_doc), srdf_doc,
                                                  strlen(srdf_doc), NULL, &why);
            af_disarm();
            if (s == RP_OK) {
                assert_int_equal(rp_model_dof(rp_store_model_find(st, "m")), 2);
                assert_int_equal(rp_store_model_delete(st, "m"), RP_OK);
            } else {
                if (s != RP_ERR_NOMEM)
                    fail_msg("allocation %lu failing: status %d, %s", n, (int)s, why.reason);
                assert_null(rp_store_model_find(st, "m"));
                assert_true(rp_store_revision(st) == rev);
                errors++;
            }
        }
        print_message("%-40s %4lu allocations: %4lu errors%s\n", "rp_store_model_put_urdf", k,
                      errors, persistent ? " (persistent)" : "");
        total_points += k;
    }
    rp_store_free(st);
    if (af_live() != live0)
        fail_msg("rp_store_model_put_urdf: %ld blocks leaked", af_live() - live0);
}

/* ---- kinematic models in process ----------------------------------------------- */

/* What one in-process run works on (built with allocation working) and
 * what the call under test gives back. */
typedef struct fixture {
    rp_store *st;
    rp_scene *cell;
    rp_model *tree, *chain, *frame;
    rp_model *tree_ext, *chain_ext; /* extensions, owned */
    rp_model *made;                 /* rp_model_extend's result */
    rp_cloud *cloud;                /* rp_cloud_new's result */
    rp_status st_call;
    rp_check_result check;
    rp_motion_result motion;
    rp_plan_result plan;
    double first[CHAIN_JOINTS];
    rp_transform poses[CHAIN_JOINTS + 1];
} fixture;

/* A store with scene cell (40 shapes, no tree yet) and models a (frame
 * form), chain, kin (the tree, margin 0.02) and z: four, so that one more
 * grows the model array. */
static void fixture_open(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->st = rp_store_new(NULL);
    assert_non_null(f->st);
    rp_shape_put puts[40];
    for (int i = 0; i < 40; i++) {
        puts[i].id = grid_ids[i];
        puts[i].shape = grid_shape(i);
    }
    assert_int_equal(rp_store_create(f->st, "cell", puts, 40, &f->cell), RP_OK);
    rp_model_def d = frame_def();
    assert_int_equal(rp_store_model_put(f->st, "a", &d, &f->frame, NULL), RP_OK);
    d = chain_def();
    assert_int_equal(rp_store_model_put(f->st, "chain", &d, &f->chain, NULL), RP_OK);
    d = tree_def(0.02);
    assert_int_equal(rp_store_model_put(f->st, "kin", &d, &f->tree, NULL), RP_OK);
    d = frame_def();
    d.n_links = 1;
    d.n_allowed = 0;
    d.n_allowed_scene = 0;
    assert_int_equal(rp_store_model_put(f->st, "z", &d, NULL, NULL), RP_OK);
    assert_int_equal(rp_model_extend(f->tree, tree_attached, 3, tree_more_scene, N_MANY_SCENE,
                                     &f->tree_ext, NULL),
                     RP_OK);
    assert_int_equal(rp_model_extend(f->chain, chain_attached, 2, chain_more_scene, N_MANY_SCENE,
                                     &f->chain_ext, NULL),
                     RP_OK);
}

static void fixture_close(fixture *f)
{
    rp_cloud_release(f->cloud);
    rp_model_free(f->made);
    rp_model_free(f->tree_ext);
    rp_model_free(f->chain_ext);
    rp_check_result_free(&f->check);
    rp_plan_result_free(&f->plan);
    rp_store_free(f->st);
}

/* The call under test, and a text of what it gave (for comparison with the
 * clean run). */
typedef struct api_case {
    const char *kind;
    bool mutates; /* a put: on error the store, its memory and the heap are as before */
    bool pure;    /* touches no scene: on error the heap is as before */
    void (*call)(fixture *f);
    void (*describe)(const fixture *f, dump *d);
} api_case;

static void describe_nothing(const fixture *f, dump *d)
{
    (void)f;
    d->len = 0;
    d->buf[0] = '\0';
}

static void call_put_tree_replace(fixture *f)
{
    rp_model_def d = tree_def(0.01);
    f->st_call = rp_store_model_put(f->st, "kin", &d, NULL, NULL);
}

static void call_put_tree_new(fixture *f)
{
    rp_model_def d = tree_def(0.01);
    f->st_call = rp_store_model_put(f->st, "new", &d, NULL, NULL);
}

static void call_put_urdf_replace(fixture *f)
{
    f->st_call = rp_store_model_put(f->st, "kin", &urdf_kin_def, NULL, NULL);
}

static void call_put_urdf_new(fixture *f)
{
    f->st_call = rp_store_model_put(f->st, "new", &urdf_kin_def, NULL, NULL);
}

static void call_extend_tree(fixture *f)
{
    f->st_call =
        rp_model_extend(f->tree, tree_attached, 3, tree_more_scene, N_MANY_SCENE, &f->made, NULL);
}

static void call_extend_frame(fixture *f)
{
    f->st_call = rp_model_extend(f->frame, frame_attached, 2, frame_scene, 1, &f->made, NULL);
}

static void describe_made(const fixture *f, dump *d)
{
    d->len = 0;
    d->buf[0] = '\0';
    dump_model(d, f->made);
}

/* A joint vector of the chain: a gentle curve through the grid. */
static void chain_q(double *q)
{
    for (int i = 0; i < CHAIN_JOINTS; i++)
        q[i] = i % 2 ? 0.02 * sin(0.3 * i) : 0.05 * cos(0.2 * i);
}

static void call_fk_chain(fixture *f)
{
    double q[CHAIN_JOINTS];
    chain_q(q);
    rp_transform base = rp_transform_identity();
    base.t.z = 0.05;
    f->st_call = rp_model_fk(f->chain, &base, q, f->poses);
}

static void describe_poses(const fixture *f, dump *d)
{
    d->len = 0;
    d->buf[0] = '\0';
    for (size_t l = 0; l <= CHAIN_JOINTS; l++) {
        const rp_transform *t = &f->poses[l];
        dump_add(d, "%zu", l);
        for (int i = 0; i < 3; i++)
            dump_add(d, " %a %a %a", t->r[i][0], t->r[i][1], t->r[i][2]);
        dump_vec(d, "t", t->t);
        dump_add(d, "\n");
    }
}

/* The chain's extension at chain_q: with FIRST a margin below every scene
 * distance, so that every link's scene shapes are searched (k35's 41
 * allowed ones on the heap) before a self pair is found; else a wide one
 * (hundreds of violations). */
static void check_chain(fixture *f, rp_report report)
{
    double q[CHAIN_JOINTS];
    chain_q(q);
    rp_check_opts o = {report, true, report == RP_REPORT_FIRST ? -0.012 : 0.06, NULL, NULL, 0};
    f->st_call = rp_model_check_joints(f->chain_ext, f->cell, NULL, q, &o, &f->check);
}

static void call_check_first(fixture *f)
{
    check_chain(f, RP_REPORT_FIRST);
}
static void call_check_closest(fixture *f)
{
    check_chain(f, RP_REPORT_CLOSEST);
}
static void call_check_all(fixture *f)
{
    check_chain(f, RP_REPORT_ALL);
}

static void dump_pair(dump *d, const rp_check_pair *p)
{
    dump_add(d, "link %zu kind %d other %zu distance %a\n", p->link, (int)p->kind, p->other,
             p->distance);
}

static void describe_check(const fixture *f, dump *d)
{
    const rp_check_result *r = &f->check;
    d->len = 0;
    d->buf[0] = '\0';
    dump_add(d, "collision %d has_min %d n %zu\n", r->collision, r->has_min, r->n_violations);
    if (r->has_min)
        dump_pair(d, &r->closest);
    for (size_t i = 0; i < r->n_violations; i++)
        dump_pair(d, &r->violations[i]);
}

static void motion_tree(fixture *f, rp_motion_mode mode)
{
    rp_motion_opts o;
    memset(&o, 0, sizeof o);
    o.mode = mode;
    o.resolution = mode == RP_MOTION_DISCRETE ? 0.05 : 0.0;
    o.tolerance = mode == RP_MOTION_CERTIFIED ? 1e-4 : 0.0;
    o.earliest = mode == RP_MOTION_DISCRETE;
    o.has_margin = true;
    o.margin = 0.005;
    rp_transform base = rp_transform_identity();
    base.t = V(0.125, -0.25, 0.6);
    f->st_call =
        rp_model_check_motion(f->tree_ext, f->cell, &base, tree_path, 3, &o, &f->motion, f->first);
}

static void call_motion_discrete(fixture *f)
{
    motion_tree(f, RP_MOTION_DISCRETE);
}
static void call_motion_certified(fixture *f)
{
    motion_tree(f, RP_MOTION_CERTIFIED);
}

static void describe_motion(const fixture *f, dump *d)
{
    const rp_motion_result *r = &f->motion;
    d->len = 0;
    d->buf[0] = '\0';
    dump_add(d, "valid %d segment %zu t %a limits %d joint %zu states %llu\n", r->valid, r->segment,
             r->t, r->limits, r->limit_joint, (unsigned long long)r->states_checked);
    if (!r->valid) {
        dump_pair(d, &r->pair);
        for (size_t i = 0; i < rp_model_dof(f->tree); i++)
            dump_add(d, " %a", f->first[i]);
        dump_add(d, "\n");
    }
}

/* rp_model_plan of the tree model (and its attached shapes) among the
 * cell, from the motion's first waypoint to its last or (a goal set) to
 * its second and last, at most 20,000 states. */
static void plan_tree(fixture *f, rp_motion_mode mode, size_t n_goals)
{
    rp_plan_opts o;
    rp_plan_opts_init(&o);
    o.edges = mode;
    o.resolution = mode == RP_MOTION_DISCRETE ? 0.05 : 0.0;
    o.tolerance = mode == RP_MOTION_CERTIFIED ? 1e-4 : 0.0;
    o.seed = 5;
    o.max_states = 20000;
    o.max_step = 0.5;
    rp_transform base = rp_transform_identity();
    base.t = V(0.125, -0.25, 0.6);
    f->st_call = rp_model_plan(f->tree_ext, f->cell, &base, tree_path,
                               tree_path + (n_goals == 1 ? 8 : 4), n_goals, &o, &f->plan);
}

static void call_plan_certified(fixture *f)
{
    plan_tree(f, RP_MOTION_CERTIFIED, 1);
}
static void call_plan_discrete_goals(fixture *f)
{
    plan_tree(f, RP_MOTION_DISCRETE, 2);
}

static void describe_plan(const fixture *f, dump *d)
{
    const rp_plan_result *r = &f->plan;
    d->len = 0;
    d->buf[0] = '\0';
    dump_add(d,
             "outcome %d goal %zu limits %d joint %zu it %llu nodes %llu states %llu edges %llu\n",
             (int)r->outcome, r->goal, r->limits, r->limit_joint, (unsigned long long)r->iterations,
             (unsigned long long)r->nodes, (unsigned long long)r->states_checked,
             (unsigned long long)r->edges_checked);
    for (size_t i = 0; i < r->n_points * rp_model_dof(f->tree); i++)
        dump_add(d, " %a", r->path[i]);
    dump_add(d, "\n");
}

/* rp_cloud_new on 64 points (several to a cell of 0.25 with the voxel),
 * one sphere a point without. */
static void cloud_new(fixture *f, double voxel)
{
    float xyz[3 * 64];
    cloud_points(xyz, 64, -0.3f);
    f->st_call = rp_cloud_new(xyz, 64, 0.05, voxel, &f->cloud, NULL);
}

static void call_cloud_new_points(fixture *f)
{
    cloud_new(f, 0.0);
}

static void call_cloud_new_voxel(fixture *f)
{
    cloud_new(f, 0.25);
}

static void describe_cloud(const fixture *f, dump *d)
{
    const rp_cloud *c = f->cloud;
    d->len = 0;
    d->buf[0] = '\0';
    dump_add(d, "spheres %zu points %zu radius %a voxel %a bytes %zu\n", rp_cloud_size(c),
             rp_cloud_input_points(c), rp_cloud_radius(c), rp_cloud_voxel(c), rp_cloud_bytes(c));
    for (size_t k = 0; k < 3 * rp_cloud_size(c); k++)
        dump_add(d, " %a", (double)rp_cloud_centres(c)[k]);
    dump_add(d, "\n");
}

static const api_case api_cases[] = {
    {"rp_store_model_put kinematic, replacing", true, true, call_put_tree_replace,
     describe_nothing},
    {"rp_store_model_put kinematic, new", true, true, call_put_tree_new, describe_nothing},
    {"rp_store_model_put URDF def, replacing", true, true, call_put_urdf_replace, describe_nothing},
    {"rp_store_model_put URDF def, new", true, true, call_put_urdf_new, describe_nothing},
    {"rp_model_extend kinematic", false, true, call_extend_tree, describe_made},
    {"rp_model_extend frame form", false, true, call_extend_frame, describe_made},
    {"rp_model_fk, 70 frames", false, true, call_fk_chain, describe_poses},
    {"rp_model_check_joints first", false, false, call_check_first, describe_check},
    {"rp_model_check_joints closest", false, false, call_check_closest, describe_check},
    {"rp_model_check_joints all", false, false, call_check_all, describe_check},
    {"rp_model_check_motion discrete", false, false, call_motion_discrete, describe_motion},
    {"rp_model_check_motion certified", false, false, call_motion_certified, describe_motion},
    {"rp_model_plan certified", false, false, call_plan_certified, describe_plan},
    {"rp_model_plan discrete, goal set", false, false, call_plan_discrete_goals, describe_plan},
    {"rp_cloud_new, one sphere a point", false, true, call_cloud_new_points, describe_cloud},
    {"rp_cloud_new, voxels", false, true, call_cloud_new_voxel, describe_cloud},
};

static dump api_want, api_got, api_store_before, api_store_clean, api_store_after;

/* Runs c with the n-th allocation failing (n == 0: none), then checks:
 * RP_ERR_NOMEM or the clean result; on an error, the store as it was (for
 * a put also its memory and every model pointer) and for the calls that
 * touch no scene not one block more on the heap; sending it again works;
 * nothing leaks once everything is freed. */
static void api_run(const api_case *c, unsigned long n, bool persistent, unsigned long *errors,
                    size_t *clean_memory)
{
    fixture f;
    long live0 = af_live();
    fixture_open(&f);
    dump_store(f.st, &api_store_before);
    size_t mem_before = rp_store_memory(f.st);
    const rp_model *models[8];
    size_t n_models = rp_store_model_count(f.st);
    for (size_t i = 0; i < n_models; i++)
        models[i] = rp_store_model_at(f.st, i);
    long live1 = af_live();

    af_arm(n, persistent);
    c->call(&f);
    unsigned long calls = af_calls(), failed = af_failures();
    af_disarm();

    if (n == 0) {
        /* The clean run: what the others compare with. */
        if (f.st_call != RP_OK)
            fail_msg("%s: the clean run fails: status %d", c->kind, (int)f.st_call);
        *errors = calls;
        c->describe(&f, &api_want);
        dump_store(f.st, &api_store_clean);
        *clean_memory = rp_store_memory(f.st);
        fixture_close(&f);
        assert_int_equal(af_live(), live0);
        return;
    }
    if (failed == 0)
        fail_msg("%s: allocation %lu was never made", c->kind, n);
    dump_store(f.st, &api_store_after);
    size_t mem_after = rp_store_memory(f.st);
    if (f.st_call == RP_OK) {
        c->describe(&f, &api_got);
        assert_same_dump(&api_got, &api_want, "the clean result", c->kind, n);
        assert_same_dump(&api_store_after, &api_store_clean, "what the clean run left", c->kind, n);
        /* A query survives a failed build of the scene's tree (it scans). */
        if (mem_after != *clean_memory && (c->mutates || c->pure || mem_after != mem_before))
            fail_msg("%s, failing allocation %lu: rp_store_memory %zu, clean run %zu", c->kind, n,
                     mem_after, *clean_memory);
    } else {
        if (f.st_call != RP_ERR_NOMEM)
            fail_msg("%s, failing allocation %lu: status %d, not RP_ERR_NOMEM", c->kind, n,
                     (int)f.st_call);
        ++*errors;
        assert_same_dump(&api_store_after, &api_store_before, "unchanged", c->kind, n);
        if (c->pure && af_live() != live1)
            fail_msg("%s, failing allocation %lu: %ld blocks kept after the error", c->kind, n,
                     af_live() - live1);
        if (c->mutates || c->pure) {
            if (mem_after != mem_before)
                fail_msg("%s, failing allocation %lu: rp_store_memory %zu, was %zu", c->kind, n,
                         mem_after, mem_before);
        } else if (mem_after != mem_before && mem_after != *clean_memory) {
            /* A query may have built the scene's tree (or not). */
            fail_msg("%s, failing allocation %lu: rp_store_memory %zu, neither %zu nor %zu",
                     c->kind, n, mem_after, mem_before, *clean_memory);
        }
        assert_int_equal(rp_store_model_count(f.st), n_models);
        for (size_t i = 0; i < n_models; i++)
            if (rp_store_model_at(f.st, i) != models[i])
                fail_msg("%s, failing allocation %lu: model %zu replaced", c->kind, n, i);
        assert_null(f.made);
        assert_null(f.cloud);
        assert_null(f.check.violations);
        /* Nothing half-done: the same call again gives the clean result. */
        rp_check_result_free(&f.check);
        c->call(&f);
        if (f.st_call != RP_OK)
            fail_msg("%s, failing allocation %lu: the retry fails: status %d", c->kind, n,
                     (int)f.st_call);
        c->describe(&f, &api_got);
        assert_same_dump(&api_got, &api_want, "the clean result, after a retry", c->kind, n);
        dump_store(f.st, &api_store_after);
        assert_same_dump(&api_store_after, &api_store_clean,
                         "what the clean run left, after a retry", c->kind, n);
    }
    fixture_close(&f);
    if (af_live() != live0)
        fail_msg("%s, failing allocation %lu%s: %ld blocks leaked", c->kind, n,
                 persistent ? " (persistent)" : "", af_live() - live0);
}

/* The api cases whose kind starts with `call`, each allocation failing
 * once and then from it on. */
static void api_sweep(const char *call)
{
    unsigned long points = 0;
    for (size_t i = 0; i < sizeof api_cases / sizeof api_cases[0]; i++) {
        const api_case *c = &api_cases[i];
        if (strncmp(c->kind, call, strlen(call)) != 0)
            continue;
        unsigned long k = 0;
        size_t clean_memory = 0;
        api_run(c, 0, false, &k, &clean_memory);
        if (getenv("AF_TRACE"))
            fprintf(stderr, "%s clean:\n%s", c->kind, api_want.buf);
        for (int persistent = 0; persistent <= 1; persistent++) {
            unsigned long errors = 0;
            for (unsigned long n = 1; n <= k; n++)
                api_run(c, n, persistent, &errors, &clean_memory);
            print_message("%-40s %4lu allocations: %4lu errors, %3lu survived%s\n", c->kind, k,
                          errors, k - errors, persistent ? " (persistent)" : "");
            points += k;
        }
    }
    if (points == 0)
        fail_msg("no in-process case for %s", call);
    print_message("%lu allocation-failure points (%s in process)\n", points, call);
    total_points += points;
}

static void store_model_put_of_kinematic_models_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    api_sweep("rp_store_model_put");
}

static void model_extend_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    api_sweep("rp_model_extend");
}

static void model_fk_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    api_sweep("rp_model_fk");
}

static void model_check_joints_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    api_sweep("rp_model_check_joints");
}

static void model_check_motion_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    api_sweep("rp_model_check_motion");
}

static void model_plan_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    api_sweep("rp_model_plan");
}

static void cloud_new_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    api_sweep("rp_cloud_new");
}

/* The wrappers themselves: a test that the harness can fail. */
static void the_nth_allocation_fails_and_only_that_one(void **state)
{
    (void)state;
    af_arm(2, false);
    void *a = malloc(16), *b = malloc(16), *c = calloc(1, 16);
    assert_int_equal(af_calls(), 3);
    af_disarm();
    assert_non_null(a);
    assert_null(b);
    assert_non_null(c);
    free(a);
    free(c);
    af_arm(1, true);
    void *d = realloc(NULL, 8), *e = malloc(8);
    af_disarm();
    assert_null(d);
    assert_null(e);
    assert_int_equal(af_failures(), 2);
}

static int group_setup(void **state)
{
    (void)state;
    build_grid_ids();
    build_tree();
    build_chain();
    build_extensions();
    build_setup();
    build_cases();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    print_message("%lu allocation-failure points in all\n", total_points);
    rp_urdf_free(urdf_parsed);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* the harness */
        cmocka_unit_test(the_nth_allocation_fails_and_only_that_one),
        /* URDF import */
        cmocka_unit_test(urdf_parse_fails_cleanly_at_every_allocation),
        cmocka_unit_test(urdf_import_fails_cleanly_at_every_allocation),
        /* kinematic calls in process */
        cmocka_unit_test(store_model_put_of_kinematic_models_fails_cleanly_at_every_allocation),
        cmocka_unit_test(model_extend_fails_cleanly_at_every_allocation),
        cmocka_unit_test(model_fk_fails_cleanly_at_every_allocation),
        cmocka_unit_test(model_check_joints_fails_cleanly_at_every_allocation),
        cmocka_unit_test(model_check_motion_fails_cleanly_at_every_allocation),
        cmocka_unit_test(model_plan_fails_cleanly_at_every_allocation),
        cmocka_unit_test(cloud_new_fails_cleanly_at_every_allocation),
        /* requests, one allocation failing */
        cmocka_unit_test(scene_mutations_fail_cleanly_when_any_one_allocation_fails),
        cmocka_unit_test(model_puts_and_deletes_fail_cleanly_when_any_one_allocation_fails),
        cmocka_unit_test(queries_fail_cleanly_when_any_one_allocation_fails),
        cmocka_unit_test(the_reply_writer_fails_cleanly_when_any_one_allocation_fails),
        cmocka_unit_test(batches_fail_cleanly_when_any_one_allocation_fails),
        /* requests, every allocation failing from the N-th on */
        cmocka_unit_test(scene_mutations_change_nothing_when_allocation_fails_from_any_point_on),
        cmocka_unit_test(
            model_puts_and_deletes_change_nothing_when_allocation_fails_from_any_point_on),
        cmocka_unit_test(queries_change_nothing_when_allocation_fails_from_any_point_on),
        cmocka_unit_test(the_reply_writer_changes_nothing_when_allocation_fails_from_any_point_on),
        cmocka_unit_test(batches_change_nothing_when_allocation_fails_from_any_point_on),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
