/* SPDX-License-Identifier: MIT */
/*
 * Snapshot images (src/server/persistence/snapshot.c): a store written and loaded back
 * is the same store (every scene's name, revision and shapes of every kind
 * bit for bit in storage order, models with their revisions and params,
 * the store revision), including empty scenes, odd doubles and long ids;
 * an image cut anywhere or with any one byte flipped is refused; another
 * format or not an image at all is refused as such; images of formats 1
 * and 2 still load, and hold no boxes or half-spaces.
 */
#define _GNU_SOURCE /* mkstemp, pread */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"

#include "server/persistence/journal.h"
#include "server/persistence/snapshot.h"

/* A shape of one of the first `kinds` kinds (2: spheres and capsules, as
 * formats 1 and 2 hold them; 4: boxes and half-spaces too). */
static rp_shape odd_shape(test_rng *r, unsigned kinds)
{
    static const double odd[] = {-0.0, 5e-324, 1e-300, 0.30000000000000004, -1e300, 123456.789};
    double v[10];
    for (int i = 0; i < 10; i++)
        v[i] = rng_next(r) % 4 ? rng_uniform(r, -10, 10) : odd[rng_next(r) % 6];
    rp_shape s;
    memset(&s, 0, sizeof s);
    switch (rng_next(r) % kinds) {
    case 0:
        s.kind = RP_SHAPE_SPHERE;
        s.sphere.center = (rp_vec3){v[0], v[1], v[2]};
        s.sphere.radius = fabs(v[3]);
        break;
    case 1:
        s.kind = RP_SHAPE_CAPSULE;
        s.capsule.a = (rp_vec3){v[0], v[1], v[2]};
        s.capsule.b = (rp_vec3){v[3], v[4], v[5]};
        s.capsule.radius = fabs(v[6]);
        break;
    case 2:
        /* (A zero quaternion is refused: then the identity.) */
        s.kind = RP_SHAPE_BOX;
        if (rp_box_new((rp_vec3){v[0], v[1], v[2]}, (rp_vec3){fabs(v[3]), fabs(v[4]), fabs(v[5])},
                       v[6], v[7], v[8], v[9], &s.box) != RP_OK)
            assert_int_equal(
                rp_box_new((rp_vec3){v[0], v[1], v[2]}, (rp_vec3){0, 0, 0}, 1, 0, 0, 0, &s.box),
                RP_OK);
        break;
    default:
        /* (A zero normal is refused, and a tiny one may take the offset
         * past DBL_MAX: then the floor.) */
        s.kind = RP_SHAPE_HALFSPACE;
        if (rp_halfspace_new((rp_vec3){v[0], v[1], v[2]}, v[3], &s.halfspace) != RP_OK ||
            !isfinite(s.halfspace.offset))
            s.halfspace = (rp_halfspace){{0, 0, 1}, v[3]};
        break;
    }
    assert_int_equal(rp_shape_validate(&s), RP_OK);
    return s;
}

/* A store with scenes of 0, 3 and `big` shapes (of the first `kinds`
 * kinds) made through several mutations (so that revisions differ and
 * storage order is not insertion order). */
static rp_store *make_store(test_rng *r, size_t big, unsigned kinds)
{
    rp_store *st = rp_store_new(NULL);
    const size_t sizes[] = {0, 3, big};
    char name[32], id[200];
    for (int s = 0; s < 3; s++) {
        snprintf(name, sizeof name, "scene-%d", s);
        assert_int_equal(rp_store_create(st, name, NULL, 0, NULL), RP_OK);
        size_t planes = 0;
        for (size_t k = 0; k < sizes[s]; k++) {
            int len = (int)(rng_next(r) % 3 == 0 ? 120 : 6);
            snprintf(id, sizeof id, "%0*zu", len, k);
            rp_shape_put p = {id, odd_shape(r, kinds)};
            /* (A scene holds at most 64 half-spaces: the rest are drawn
             * again among the other kinds.) */
            while (p.shape.kind == RP_SHAPE_HALFSPACE && planes >= 48)
                p.shape = odd_shape(r, kinds);
            planes += p.shape.kind == RP_SHAPE_HALFSPACE;
            assert_int_equal(rp_store_put(st, name, &p, 1, NULL, false, NULL, NULL), RP_OK);
        }
        if (sizes[s] > 2) { /* a removal moves the last entry into the hole */
            snprintf(id, sizeof id, "%06d", 1);
            const char *ids[] = {id};
            rp_store_remove(st, name, ids, 1, NULL, NULL, NULL, NULL);
        }
    }
    return st;
}

static const rps_model MODELS[] = {
    {"arm", 7, "{\"model\":\"arm\",\"links\":[]}", 26},
    {"gripper", 9, "{}", 2},
};

typedef struct seen {
    size_t n;
    rp_store *st;
    const char *refuse; /* a name to refuse */
} seen;

static bool take_model(void *ctx, const rps_model *m, const char **why)
{
    seen *s = ctx;
    if (s->refuse && strcmp(m->name, s->refuse) == 0) {
        *why = "refused by the test";
        return false;
    }
    assert_true(s->n < 2);
    const rps_model *want = &MODELS[s->n++];
    assert_string_equal(m->name, want->name);
    assert_int_equal(m->revision, want->revision);
    assert_int_equal(m->json_len, want->json_len);
    assert_memory_equal(m->json, want->json, want->json_len);
    /* The store revision is one below the model's. */
    assert_int_equal(rp_store_revision(s->st), m->revision - 1);
    return true;
}

static const rps_ids IDS = {0x1111, 0x2222, 0x3333};

static uint8_t *image_of(const rp_store *st, uint64_t revision, size_t *n)
{
    char path[] = "/tmp/test_snapshot_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    uint64_t bytes = 0;
    assert_int_equal(rps_write(fd, st, revision, &IDS, MODELS, 2, &bytes), 0);
    uint8_t *buf = malloc(bytes ? bytes : 1);
    assert_int_equal(pread(fd, buf, bytes, 0), (ssize_t)bytes);
    close(fd);
    *n = (size_t)bytes;
    return buf;
}

/* The image as format 3 wrote it (n shrinks): scene sections before
 * model sections, and every scene section without its trailing object
 * count, which must be zero (its length and checksums fixed).  Sections
 * start after the 80-byte header. */
static void to_format_3(uint8_t *img, size_t *n)
{
    uint8_t *out = malloc(*n);
    assert_non_null(out);
    size_t len_out = 80;
    memcpy(out, img, 80);
    for (int pass = 0; pass < 2; pass++) { /* scenes, then models */
        size_t at = 80;
        while (*n - at > 16) {
            const uint8_t *h = img + at;
            uint64_t len = rpj_get64(h + 8);
            size_t whole = 20 + (size_t)len + 4;
            bool scene = rpj_get32(h) == 1;
            if (scene && pass == 0) {
                assert_int_equal(rpj_get64(h + 20 + len - 8), 0);
                uint8_t *o = out + len_out;
                memcpy(o, h, 20 + (size_t)len - 8);
                rpj_put64(o + 8, len - 8);
                rpj_put32(o + 16, rpj_crc32c(0, o, 16));
                rpj_put32(o + 20 + len - 8, rpj_crc32c(0, o + 20, (size_t)len - 8));
                len_out += whole - 8;
            } else if (!scene && pass == 1) {
                memcpy(out + len_out, h, whole);
                len_out += whole;
            }
            at += whole;
        }
        if (pass == 1) {
            memcpy(out + len_out, img + at, *n - at); /* the trailer */
            len_out += *n - at;
        }
    }
    memcpy(img, out, len_out);
    *n = len_out;
    free(out);
    rpj_put32(img + 8, RPS_FORMAT_V3);
    rpj_put32(img + 76, rpj_crc32c(0, img, 76));
}

/* Objects come back with their poses and local shapes, and their world
 * shapes, bit for bit; format 3 images (no objects) still load. */
static void objects_load_back_and_format_3_loads(void **state)
{
    (void)state;
    test_rng r = {555};
    rp_store *st = make_store(&r, 50, 1);
    rp_shape_put loc[3];
    const char *lid[3] = {"a", "b", "c"};
    for (int k = 0; k < 3; k++)
        loc[k] = (rp_shape_put){lid[k], rp_scene_shape_at(rp_store_scene_at(st, 2), (size_t)k)};
    rp_transform pose;
    assert_int_equal(
        rp_transform_from_quaternion((rp_vec3){1, -2, 3.5}, 0.3, -0.2, 0.9, 0.1, &pose), RP_OK);
    rp_object_put objs[2] = {{"crate", pose, loc, 3}, {"tray", rp_transform_identity(), loc, 1}};
    const char *scene = rp_scene_name(rp_store_scene_at(st, 2)); /* the big one */
    assert_int_equal(
        rp_store_put_objects(st, scene, NULL, 0, objs, 2, NULL, false, NULL, NULL, NULL), RP_OK);
    size_t n;
    uint8_t *img = image_of(st, rp_store_revision(st), &n);
    rp_store *back = rp_store_new(NULL);
    seen s = {0, back, NULL};
    rps_load_result res;
    assert_true(rps_load(img, n, back, take_model, &s, &res));
    const rp_scene *a = rp_store_find(st, scene), *b = rp_store_find(back, scene);
    assert_int_equal(rp_scene_revision(a), rp_scene_revision(b));
    assert_int_equal(rp_scene_shape_count(a), rp_scene_shape_count(b));
    assert_int_equal(rp_scene_object_count(b), 2);
    for (size_t e = 0; e < rp_scene_shape_count(a); e++) {
        size_t f = rp_scene_find(b, rp_scene_id_at(a, e));
        assert_true(f != SIZE_MAX);
        assert_memory_equal(SCENE_SHAPE(a, e), SCENE_SHAPE(b, f), sizeof(rp_shape));
        assert_int_equal(rp_scene_shape_object(a, e) != NULL, rp_scene_shape_object(b, f) != NULL);
    }
    rp_transform back_pose = rp_object_pose(rp_scene_object_find(b, "crate"));
    assert_memory_equal(&back_pose, &pose, sizeof pose);
    rp_store_free(back);
    free(img);

    /* Without objects, the same store as format 3 wrote it. */
    const char *gone[2] = {"crate", "tray"};
    assert_int_equal(rp_store_remove(st, scene, gone, 2, NULL, NULL, NULL, NULL), RP_OK);
    img = image_of(st, rp_store_revision(st), &n);
    to_format_3(img, &n);
    back = rp_store_new(NULL);
    s = (seen){0, back, NULL};
    assert_true(rps_load(img, n, back, take_model, &s, &res));
    assert_int_equal(res.format, RPS_FORMAT_V3);
    assert_int_equal(rp_scene_shape_count(rp_store_find(back, scene)),
                     rp_scene_shape_count(rp_store_find(st, scene)));
    rp_store_free(back);
    free(img);
    rp_store_free(st);
}

static void images_load_back_bit_for_bit(void **state)
{
    (void)state;
    test_rng r = {321};
    rp_store *st = make_store(&r, 3000, 4);
    uint64_t rev = rp_store_revision(st) + 5;
    size_t n;
    uint8_t *img = image_of(st, rev, &n);
    rp_store *back = rp_store_new(NULL);
    seen s = {0, back, NULL};
    rps_load_result res;
    assert_true(rps_load(img, n, back, take_model, &s, &res));
    assert_true(res.ok);
    assert_int_equal(res.revision, rev);
    assert_int_equal(res.format, RPS_FORMAT);
    assert_int_equal(res.ids.snapshot_id, IDS.snapshot_id);
    assert_int_equal(res.ids.journal_id, IDS.journal_id);
    assert_int_equal(res.ids.prev_journal_id, IDS.prev_journal_id);
    assert_int_equal(res.scenes, 3);
    assert_int_equal(res.models, 2);
    assert_int_equal(s.n, 2);
    assert_int_equal(rp_store_revision(back), rev);
    assert_int_equal(rp_store_scene_count(back), rp_store_scene_count(st));
    for (size_t i = 0; i < rp_store_scene_count(st); i++) {
        const rp_scene *a = rp_store_scene_at(st, i), *b = rp_store_scene_at(back, i);
        assert_string_equal(rp_scene_name(a), rp_scene_name(b));
        assert_int_equal(rp_scene_revision(a), rp_scene_revision(b));
        assert_int_equal(rp_scene_shape_count(a), rp_scene_shape_count(b));
        for (size_t k = 0; k < rp_scene_shape_count(a); k++) {
            assert_string_equal(rp_scene_id_at(a, k), rp_scene_id_at(b, k));
            assert_memory_equal(SCENE_SHAPE(a, k), SCENE_SHAPE(b, k), sizeof(rp_shape));
            /* And the loaded scene finds it by id. */
            assert_int_equal(rp_scene_find(b, rp_scene_id_at(a, k)), k);
        }
    }
    /* Writing the loaded store gives the same bytes. */
    size_t n2;
    uint8_t *img2 = image_of(back, rev, &n2);
    assert_int_equal(n2, n);
    assert_memory_equal(img2, img, n);
    free(img2);
    free(img);
    rp_store_free(back);
    rp_store_free(st);
}

static void every_cut_and_every_flipped_byte_is_refused(void **state)
{
    (void)state;
    test_rng r = {322};
    rp_store *st = make_store(&r, 12, 4);
    size_t n;
    uint8_t *img = image_of(st, rp_store_revision(st), &n);
    for (size_t cut = 0; cut < n; cut++) {
        rp_store *back = rp_store_new(NULL);
        seen s = {0, back, NULL};
        rps_load_result res;
        assert_false(rps_load(img, cut, back, take_model, &s, &res));
        assert_false(res.ok);
        assert_true(res.bad_offset <= cut);
        rp_store_free(back);
    }
    for (size_t at = 0; at < n; at++) {
        uint8_t keep = img[at];
        img[at] ^= (uint8_t)(1 + rng_next(&r) % 255);
        rp_store *back = rp_store_new(NULL);
        seen s = {0, back, NULL};
        rps_load_result res;
        if (rps_load(img, n, back, take_model, &s, &res))
            fail_msg("byte %zu of %zu flipped: loaded", at, n);
        assert_true(res.bad_offset <= at);
        rp_store_free(back);
        img[at] = keep;
    }
    free(img);
    rp_store_free(st);
}

static void other_formats_and_refusals(void **state)
{
    (void)state;
    test_rng r = {323};
    rp_store *st = make_store(&r, 5, 4);
    size_t n;
    uint8_t *img = image_of(st, rp_store_revision(st), &n);
    rps_load_result res;
    /* A model the caller refuses stops the load, with its reason. */
    rp_store *back = rp_store_new(NULL);
    seen s = {0, back, "gripper"};
    assert_false(rps_load(img, n, back, take_model, &s, &res));
    assert_string_equal(res.reason, "refused by the test");
    rp_store_free(back);
    /* Not into a store that holds scenes. */
    assert_false(rps_load(img, n, st, take_model, &s, &res));
    /* Another version, with a header that checks out. */
    img[8] = RPS_FORMAT + 1;
    uint32_t c = rpj_crc32c(0, img, 76);
    for (int i = 0; i < 4; i++)
        img[76 + i] = (uint8_t)(c >> (8 * i));
    back = rp_store_new(NULL);
    assert_false(rps_load(img, n, back, take_model, &s, &res));
    assert_true(res.bad_format);
    assert_string_equal(res.reason, "snapshot of another format version");
    rp_store_free(back);
    back = rp_store_new(NULL);
    assert_false(rps_load((const uint8_t *)"REPOSEJ\nnot a snapshot at all, a journal......", 48,
                          back, take_model, &s, &res));
    assert_true(res.bad_format);
    rp_store_free(back);
    free(img);
    rp_store_free(st);
}

/* An image of the previous format (a 48-byte header without ids) still
 * loads, so that the daemon can upgrade it. */
static void format_1_loads(void **state)
{
    (void)state;
    test_rng r = {324};
    rp_store *st = make_store(&r, 40, 2);
    size_t n;
    uint8_t *img = image_of(st, rp_store_revision(st), &n);
    to_format_3(img, &n); /* format 1 has no objects */
    enum { V2 = 80, V1 = 48 };
    uint8_t *old = malloc(n - V2 + V1);
    assert_non_null(old);
    memcpy(old, img, 40); /* magic, version, revision, counts */
    memset(old + 40, 0, 4);
    old[8] = RPS_FORMAT_V1;
    uint32_t c = rpj_crc32c(0, old, 44);
    for (int i = 0; i < 4; i++)
        old[44 + i] = (uint8_t)(c >> (8 * i));
    memcpy(old + V1, img + V2, n - V2);
    rp_store *back = rp_store_new(NULL);
    seen s = {0, back, NULL};
    rps_load_result res;
    assert_true(rps_load(old, n - V2 + V1, back, take_model, &s, &res));
    assert_int_equal(res.format, RPS_FORMAT_V1);
    assert_int_equal(res.ids.snapshot_id, 0);
    assert_int_equal(res.ids.journal_id, 0);
    assert_int_equal(res.revision, rp_store_revision(st));
    assert_int_equal(rp_store_scene_count(back), rp_store_scene_count(st));
    rp_store_free(back);
    free(old);
    free(img);
    rp_store_free(st);
}

/* An image written by the format-2 writer (the commit before format 3):
 * scene "cell" at revision 1 with the sphere "ball" {(0.5, -0, 1e-300),
 * 0.25} and the capsule "post" {(1, 2, 3), (1, 2, 4.5), 0.125}, model
 * "arm" at revision 3 with params "{}", store revision 4, ids 0123456789abcdef,
 * 1111222233334444 and 5555666677778888. */
static const uint8_t FORMAT_2_IMAGE[] = {
    0x52, 0x45, 0x50, 0x4f, 0x53, 0x45, 0x53, 0x0a, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
    0x44, 0x44, 0x33, 0x33, 0x22, 0x22, 0x11, 0x11, 0x88, 0x88, 0x77, 0x77, 0x66, 0x66, 0x55, 0x55,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb5, 0x26, 0x58, 0xe6,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x3e, 0xfb, 0x05, 0x16, 0x04, 0x00, 0x00, 0x00, 0x63, 0x65, 0x6c, 0x6c, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
    0x62, 0x61, 0x6c, 0x6c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x80, 0x59, 0xf3, 0xf8, 0xc2, 0x1f, 0x6e, 0xa5, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0xd0, 0x3f, 0x04, 0x00, 0x00, 0x00, 0x70, 0x6f, 0x73, 0x74, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x08, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x40, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xc0, 0x3f, 0x9e, 0xee, 0x14, 0x3a, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x15, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x19, 0x01, 0xd3, 0x4f, 0x03, 0x00,
    0x00, 0x00, 0x61, 0x72, 0x6d, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
    0x00, 0x7b, 0x7d, 0x6e, 0xc5, 0x60, 0x09, 0x52, 0x45, 0x50, 0x4f, 0x53, 0x45, 0x5a, 0x0a, 0x00,
    0x00, 0x00, 0x00, 0xd2, 0x29, 0x07, 0xaa,
};

static bool take_arm(void *ctx, const rps_model *m, const char **why)
{
    (void)why;
    assert_string_equal(m->name, "arm");
    assert_int_equal(m->revision, 3);
    assert_int_equal(m->json_len, 2);
    assert_memory_equal(m->json, "{}", 2);
    ++*(int *)ctx;
    return true;
}

/* Format 3 only added shape kinds: a format-2 image loads as it is, and
 * written again it is the same bytes but for the version and the header's
 * checksum. */
static void format_2_loads(void **state)
{
    (void)state;
    const size_t n = sizeof FORMAT_2_IMAGE;
    rp_store *st = rp_store_new(NULL);
    int models = 0;
    rps_load_result res;
    assert_true(rps_load(FORMAT_2_IMAGE, n, st, take_arm, &models, &res));
    assert_int_equal(res.format, RPS_FORMAT_V2);
    assert_int_equal(res.revision, 4);
    assert_int_equal(res.ids.snapshot_id, 0x0123456789abcdefu);
    assert_int_equal(res.ids.journal_id, 0x1111222233334444u);
    assert_int_equal(res.ids.prev_journal_id, 0x5555666677778888u);
    assert_int_equal(res.scenes, 1);
    assert_int_equal(res.shapes, 2);
    assert_int_equal(models, 1);
    const rp_scene *sc = rp_store_find(st, "cell");
    assert_non_null(sc);
    assert_int_equal(rp_scene_revision(sc), 1);
    const rp_shape *ball = SCENE_SHAPE(sc, rp_scene_find(sc, "ball"));
    const rp_shape *post = SCENE_SHAPE(sc, rp_scene_find(sc, "post"));
    assert_int_equal(ball->kind, RP_SHAPE_SPHERE);
    assert_same_bits(ball->sphere.center.x, 0.5);
    assert_same_bits(ball->sphere.center.y, -0.0);
    assert_same_bits(ball->sphere.center.z, 1e-300);
    assert_same_bits(ball->sphere.radius, 0.25);
    assert_int_equal(post->kind, RP_SHAPE_CAPSULE);
    assert_true(post->capsule.a.x == 1 && post->capsule.a.y == 2 && post->capsule.a.z == 3);
    assert_true(post->capsule.b.x == 1 && post->capsule.b.y == 2 && post->capsule.b.z == 4.5);
    assert_true(post->capsule.radius == 0.125);

    static const rps_model arm[] = {{"arm", 3, "{}", 2}};
    char path[] = "/tmp/test_snapshot_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    uint64_t bytes = 0;
    assert_int_equal(rps_write(fd, st, res.revision, &res.ids, arm, 1, &bytes), 0);
    assert_int_equal(bytes, n + 8); /* the scene's object count */
    uint8_t *again = malloc(n + 8);
    assert_int_equal(pread(fd, again, n + 8, 0), (ssize_t)(n + 8));
    close(fd);
    assert_int_equal(again[8], RPS_FORMAT);
    size_t m = n + 8;
    to_format_3(again, &m);
    assert_int_equal(m, n);
    assert_memory_equal(again, FORMAT_2_IMAGE, 8);
    assert_memory_equal(again + 9, FORMAT_2_IMAGE + 9, 76 - 9);
    assert_memory_equal(again + 80, FORMAT_2_IMAGE + 80, n - 80);
    free(again);
    rp_store_free(st);
}

/* Sets the image's format version and its header checksum to match. */
static void set_format(uint8_t *img, uint32_t format)
{
    rpj_put32(img + 8, format);
    rpj_put32(img + 76, rpj_crc32c(0, img, 76));
}

/* Boxes and half-spaces are format 3's: the same image labelled format 2
 * is refused as damaged, and so is a kind byte past the four. */
static void boxes_and_halfspaces_need_format_3(void **state)
{
    (void)state;
    rp_shape shapes[2];
    memset(shapes, 0, sizeof shapes); /* as a decoded shape, no byte undefined */
    shapes[0].kind = RP_SHAPE_BOX;
    shapes[0].box = (rp_box){{0, 0, 0.5}, {1, 1, 0.5}, {1, 0, 0, 0}};
    shapes[1].kind = RP_SHAPE_HALFSPACE;
    shapes[1].halfspace = (rp_halfspace){{0, 0, 1}, 0};
    for (int k = 0; k < 2; k++) {
        rp_store *st = rp_store_new(NULL);
        rp_shape_put p = {"x", shapes[k]};
        assert_int_equal(rp_store_create(st, "s", &p, 1, NULL), RP_OK);
        size_t n;
        uint8_t *img = image_of(st, 9, &n);
        rp_store *back = rp_store_new(NULL);
        seen s = {0, back, NULL};
        rps_load_result res;
        assert_true(rps_load(img, n, back, take_model, &s, &res));
        assert_memory_equal(SCENE_SHAPE(rp_store_find(back, "s"), 0), &shapes[k], sizeof(rp_shape));
        rp_store_free(back);

        to_format_3(img, &n);
        set_format(img, RPS_FORMAT_V2);
        back = rp_store_new(NULL);
        s = (seen){0, back, NULL};
        assert_false(rps_load(img, n, back, take_model, &s, &res));
        assert_false(res.bad_format);
        assert_int_equal(res.bad_offset, 80); /* the scene section */
        assert_string_equal(res.reason, "bad shape");
        rp_store_free(back);

        /* Kind byte 4, with the section's checksum made to match: after
         * the 80-byte header and the 20-byte section header, the name
         * "s" (4 + 1 bytes), revision and count (16), the id "x" (5). */
        set_format(img, RPS_FORMAT_V3); /* (the image is in format 3's layout now) */
        const size_t payload = 100, kind = payload + 5 + 16 + 5;
        uint64_t len = rpj_get64(img + 80 + 8);
        img[kind] = 4;
        rpj_put32(img + payload + len, rpj_crc32c(0, img + payload, (size_t)len));
        back = rp_store_new(NULL);
        s = (seen){0, back, NULL};
        assert_false(rps_load(img, n, back, take_model, &s, &res));
        assert_string_equal(res.reason, "bad shape");
        rp_store_free(back);
        free(img);
        rp_store_free(st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(images_load_back_bit_for_bit),
        cmocka_unit_test(every_cut_and_every_flipped_byte_is_refused),
        cmocka_unit_test(other_formats_and_refusals),
        cmocka_unit_test(format_1_loads),
        cmocka_unit_test(format_2_loads),
        cmocka_unit_test(boxes_and_halfspaces_need_format_3),
        cmocka_unit_test(objects_load_back_and_format_3_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
