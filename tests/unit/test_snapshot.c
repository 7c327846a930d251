/* SPDX-License-Identifier: MIT */
/*
 * Snapshot images (src/server/persistence/snapshot.c): a store written and loaded back
 * is the same store (every scene's name, revision and shapes bit for bit in
 * storage order, models with their revisions and params, the store
 * revision), including empty scenes, odd doubles and long ids; an image cut
 * anywhere or with any one byte flipped is refused; another format or not
 * an image at all is refused as such.
 */
#define _GNU_SOURCE /* mkstemp, pread */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"

#include "server/persistence/journal.h"
#include "server/persistence/snapshot.h"

static rp_shape odd_shape(test_rng *r)
{
    static const double odd[] = {-0.0, 5e-324, 1e-300, 0.30000000000000004, -1e300, 123456.789};
    double v[7];
    for (int i = 0; i < 7; i++)
        v[i] = rng_next(r) % 4 ? rng_uniform(r, -10, 10) : odd[rng_next(r) % 6];
    rp_shape s;
    memset(&s, 0, sizeof s);
    if (rng_next(r) % 2) {
        s.kind = RP_SHAPE_SPHERE;
        s.sphere.center = (rp_vec3){v[0], v[1], v[2]};
        s.sphere.radius = fabs(v[3]);
    } else {
        s.kind = RP_SHAPE_CAPSULE;
        s.capsule.a = (rp_vec3){v[0], v[1], v[2]};
        s.capsule.b = (rp_vec3){v[3], v[4], v[5]};
        s.capsule.radius = fabs(v[6]);
    }
    return s;
}

/* A store with scenes of 0, 3 and `big` shapes made through several
 * mutations (so that revisions differ and storage order is not insertion
 * order). */
static rp_store *make_store(test_rng *r, size_t big)
{
    rp_store *st = rp_store_new(NULL);
    const size_t sizes[] = {0, 3, big};
    char name[32], id[200];
    for (int s = 0; s < 3; s++) {
        snprintf(name, sizeof name, "scene-%d", s);
        assert_int_equal(rp_store_create(st, name, NULL, 0, NULL), RP_OK);
        for (size_t k = 0; k < sizes[s]; k++) {
            int len = (int)(rng_next(r) % 3 == 0 ? 120 : 6);
            snprintf(id, sizeof id, "%0*zu", len, k);
            rp_shape_put p = {id, odd_shape(r)};
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

static void images_load_back_bit_for_bit(void **state)
{
    (void)state;
    test_rng r = {321};
    rp_store *st = make_store(&r, 3000);
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
    rp_store *st = make_store(&r, 12);
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
    rp_store *st = make_store(&r, 5);
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
    img[8] = 3;
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
    rp_store *st = make_store(&r, 40);
    size_t n;
    uint8_t *img = image_of(st, rp_store_revision(st), &n);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(images_load_back_bit_for_bit),
        cmocka_unit_test(every_cut_and_every_flipped_byte_is_refused),
        cmocka_unit_test(other_formats_and_refusals),
        cmocka_unit_test(format_1_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
