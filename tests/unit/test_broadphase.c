/* SPDX-License-Identifier: MIT */
/*
 * The checks' broadphase (frame spheres, runs of self partners, lazy
 * placement; check.c) must not change a single result.  A model with more
 * than RP_BOUND_SLOTS frames has no broadphase, so each random model here
 * gets a twin that is the same model plus one far-away shape on frame 40,
 * appended last: the twin takes the plain path, and every result of the
 * original must equal the twin's bit for bit (the extra shape is kilometres
 * from everything, so it is never the closest pair nor a violation).
 * Configurations are random frames near each other, with margins around the
 * distances that occur, so that skips are decided close to their bounds.
 * FIRST may report another violating pair than the plain path (the walk
 * stops at the first it meets): same verdict, and a pair the plain path
 * also finds violating, at the same distance.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_shapes.h"
#include "test_util.h"

#include "repose/scene.h"
#include "scene/scene_int.h" /* rp_simd_force_ */

#define MAX_LINKS 40
#define FRAMES 6

typedef struct rand_model {
    rp_link links[MAX_LINKS + 1];
    char ids[MAX_LINKS + 1][24];
    size_t n;
    const char *pairs[8];
    size_t n_pairs;
} rand_model;

static rp_shape random_shape(test_rng *r)
{
    double x = rng_uniform(r, -0.3, 0.3), y = rng_uniform(r, -0.3, 0.3),
           z = rng_uniform(r, -0.3, 0.3), rad = rng_uniform(r, 0.0, 0.1);
    if (rng_uniform(r, 0, 1) < 0.5)
        return sphere(x, y, z, rad);
    return capsule(x, y, z, x + rng_uniform(r, -0.3, 0.3), y + rng_uniform(r, -0.3, 0.3),
                   z + rng_uniform(r, -0.3, 0.3), rad);
}

static void random_model(test_rng *r, rand_model *m)
{
    m->n = 4 + (size_t)rng_uniform(r, 0, MAX_LINKS - 4);
    for (size_t k = 0; k < m->n; k++) {
        snprintf(m->ids[k], sizeof m->ids[k], "s%zu", k);
        /* Runs of shapes on one frame, as link shapes of real robots are. */
        int frame = (int)(k * FRAMES / m->n) - 1 + (rng_uniform(r, 0, 1) < 0.2);
        m->links[k] = (rp_link){m->ids[k], frame < FRAMES ? frame : FRAMES - 1, random_shape(r)};
    }
    m->n_pairs = 0;
    for (size_t p = 0; p < 4; p++) {
        m->pairs[2 * p] = m->ids[(size_t)rng_uniform(r, 0, (double)m->n)];
        m->pairs[2 * p + 1] = m->ids[(size_t)rng_uniform(r, 0, (double)m->n)];
        m->n_pairs++;
    }
}

static rp_transform random_pose(test_rng *r, double spread)
{
    rp_transform tf;
    rp_vec3 t = {rng_uniform(r, -spread, spread), rng_uniform(r, -spread, spread),
                 rng_uniform(r, -spread, spread)};
    assert_int_equal(rp_transform_from_quaternion(t, rng_uniform(r, -1, 1), rng_uniform(r, -1, 1),
                                                  rng_uniform(r, -1, 1), rng_uniform(r, -1, 1),
                                                  &tf),
                     RP_OK);
    return tf;
}

/* b is the twin's result; `far` the index of its extra shape, which is the
 * closest pair only when the original has no pair at all. */
static void same_result(const rp_check_result *a, const rp_check_result *b, size_t far)
{
    assert_int_equal(a->collision, b->collision);
    if (!a->has_min && b->has_min) {
        assert_true(b->closest.link == far ||
                    (b->closest.kind == RP_PAIR_SELF && b->closest.other == far));
        return;
    }
    assert_int_equal(a->has_min, b->has_min);
    if (a->has_min) {
        assert_int_equal(a->closest.link, b->closest.link);
        assert_int_equal(a->closest.kind, b->closest.kind);
        assert_int_equal(a->closest.other, b->closest.other);
        assert_true(same_bits(a->closest.distance, b->closest.distance));
    }
    assert_int_equal(a->n_violations, b->n_violations);
    for (size_t i = 0; i < a->n_violations; i++) {
        assert_int_equal(a->violations[i].link, b->violations[i].link);
        assert_int_equal(a->violations[i].kind, b->violations[i].kind);
        assert_int_equal(a->violations[i].other, b->violations[i].other);
        assert_true(same_bits(a->violations[i].distance, b->violations[i].distance));
    }
}

/* FIRST reports a violating pair, not a particular one (the broadphase
 * stops at the first its walk meets): the verdicts must be equal, and the
 * pair reported must be among the plain path's violations (ALL) with the
 * same distance bit for bit. */
static void same_first(const rp_check_result *a, const rp_check_result *b, const rp_model *plain,
                       const rp_scene *sc, const rp_transform *base, const rp_transform *frames,
                       double margin)
{
    assert_int_equal(a->collision, b->collision);
    assert_int_equal(a->n_violations, a->collision ? 1 : 0);
    if (!a->collision)
        return;
    rp_check_opts all = {RP_REPORT_ALL, true, margin, NULL, NULL, 0};
    rp_check_result r;
    assert_int_equal(rp_model_check(plain, sc, base, frames, 41, &all, &r), RP_OK);
    const rp_check_pair *v = &a->violations[0];
    bool found = false;
    for (size_t i = 0; i < r.n_violations && !found; i++) {
        const rp_check_pair *w = &r.violations[i];
        found = w->link == v->link && w->kind == v->kind && w->other == v->other &&
                same_bits(w->distance, v->distance);
    }
    if (!found)
        fail_msg("FIRST reported link %zu %s %zu at %.17g, not a violation of the plain path",
                 v->link, v->kind == RP_PAIR_SCENE ? "scene" : "self", v->other, v->distance);
    rp_check_result_free(&r);
}

/* One configuration in all three modes at `margin`, broadphase against
 * plain path; returns whether it collides.  *closest gets the plain path's
 * minimum (NAN when there is none). */
static bool compare_modes(const rp_model *fast, const rp_model *plain, const rp_scene *use,
                          const rp_transform *base, const rp_transform *frames, double margin,
                          size_t far, double *closest)
{
    bool collision = false;
    *closest = NAN;
    for (int mode = 0; mode < 3; mode++) {
        rp_check_opts o = {(rp_report)mode, true, margin, NULL, NULL, 0};
        rp_check_result a, b;
        assert_int_equal(
            rp_model_check(fast, use, base, frames, rp_model_frame_count(fast), &o, &a), RP_OK);
        assert_int_equal(rp_model_check(plain, use, base, frames, 41, &o, &b), RP_OK);
        if (mode == RP_REPORT_FIRST)
            same_first(&a, &b, plain, use, base, frames, o.margin);
        else
            same_result(&a, &b, far);
        if (mode == RP_REPORT_CLOSEST && b.has_min && b.closest.link != far &&
            !(b.closest.kind == RP_PAIR_SELF && b.closest.other == far))
            *closest = b.closest.distance;
        collision = a.collision;
        rp_check_result_free(&a);
        rp_check_result_free(&b);
    }
    return collision;
}

/* Random models in a scene of n_scene shapes (a linear scan below 17, a
 * tree above), with SIMD on or off: every configuration at a random margin,
 * then at margins within two ulps of its closest distance, where the
 * broadphase's skips are decided closest to their bounds. */
static void broadphase_changes_no_result_with(int simd, int n_scene, int rounds)
{
    rp_simd_force_(simd);
    test_rng rng = {0x5eed0b0adULL + (uint64_t)simd + 977u * (uint64_t)n_scene};
    rp_store *st = rp_store_new(NULL);
    assert_non_null(st);
    /* The scene around the robot, as dense at every size. */
    double reach = 1.2 * cbrt(n_scene / 60.0);
    rp_shape_put *scene = calloc((size_t)n_scene, sizeof *scene);
    char(*sids)[16] = calloc((size_t)n_scene, sizeof *sids);
    assert_non_null(scene);
    assert_non_null(sids);
    for (int k = 0; k < n_scene; k++) {
        snprintf(sids[k], sizeof sids[k], "o%d", k);
        rp_shape s = random_shape(&rng);
        rp_vec3 off = {rng_uniform(&rng, -reach, reach), rng_uniform(&rng, -reach, reach),
                       rng_uniform(&rng, -reach, reach)};
        rp_transform t = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, off};
        scene[k] = (rp_shape_put){sids[k], rp_transform_shape(&t, &s)};
    }
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "cell", scene, (size_t)n_scene, &sc), RP_OK);

    size_t checks = 0, collisions = 0, near_margin = 0;
    for (int round = 0; round < rounds; round++) {
        rand_model rm;
        random_model(&rng, &rm);
        bool self = rng_uniform(&rng, 0, 1) < 0.8;
        rp_model_def def = {.links = rm.links,
                            .n_links = rm.n,
                            .allowed_pairs = rm.pairs,
                            .n_allowed = rm.n_pairs,
                            .self_collision = self};
        rp_model *fast, *plain;
        assert_int_equal(rp_store_model_put(st, "fast", &def, &fast, NULL), RP_OK);
        snprintf(rm.ids[rm.n], sizeof rm.ids[rm.n], "far");
        rm.links[rm.n] = (rp_link){rm.ids[rm.n], 40, sphere(0, 0, 0, 0.01)};
        def.n_links = rm.n + 1;
        assert_int_equal(rp_store_model_put(st, "plain", &def, &plain, NULL), RP_OK);

        rp_transform frames[41];
        for (int cfg = 0; cfg < 40; cfg++) {
            double spread = rng_uniform(&rng, 0.3, 4.0);
            for (int f = 0; f < 41; f++)
                frames[f] = random_pose(&rng, spread);
            frames[40].t = (rp_vec3){5000, 5000, 5000};
            rp_transform base = random_pose(&rng, spread);
            const rp_scene *use = rng_uniform(&rng, 0, 1) < 0.7 ? sc : NULL;
            double d;
            collisions += compare_modes(fast, plain, use, &base, frames,
                                        rng_uniform(&rng, -0.05, 0.3), rm.n, &d);
            checks += 3;
            if (isnan(d) || cfg % 4)
                continue;
            /* Margins at the closest distance and two ulps either side. */
            double m = nextafter(nextafter(d, -INFINITY), -INFINITY);
            for (int k = 0; k < 5; k++, m = nextafter(m, INFINITY)) {
                double ignored;
                compare_modes(fast, plain, use, &base, frames, m, rm.n, &ignored);
                near_margin += 3;
            }
        }
    }
    printf("scene of %d: %zu checks (%zu with a collision), %zu more within 2 ulps of a "
           "distance (SIMD %s)\n",
           n_scene, checks, collisions, near_margin, rp_simd_enabled_() ? "on" : "off");
    /* Both verdicts must occur often, or the comparison proves little. */
    assert_true(collisions > checks / 3 / 5);
    assert_true(collisions < checks / 3 * 4 / 5);
    free(scene);
    free(sids);
    rp_store_free(st);
    rp_simd_force_(1);
}

static void broadphase_changes_no_result(void **state)
{
    (void)state;
    for (int simd = 0; simd < 2; simd++) {
        broadphase_changes_no_result_with(simd, 8, 60);
        broadphase_changes_no_result_with(simd, 60, 150);
        broadphase_changes_no_result_with(simd, 1500, 60);
    }
}

/* Pairs at exactly equal distances: the broadphase evaluates self pairs
 * before scene pairs and blocks in slot order, yet the closest pair must
 * be the canonical one (links ascending, a link's scene pairs before its
 * self pairs), as on the plain path.  Spheres of radius 0.25 whose centres
 * are 1.5 apart are exactly 1 apart. */
static void closest_ties_follow_the_canonical_order(void **state)
{
    (void)state;
    struct {
        int frame[3];     /* of links a, b, c */
        rp_vec3 at[3];    /* where each link's sphere is */
        double scene_y;   /* where the scene sphere sits (x = 0) */
        size_t want_link; /* the pair that must win */
        rp_pair_kind want_kind;
        size_t want_other;
    } cases[] = {
        /* scene pair of link c (2) ties with self (a, b): self (a, b) first */
        {{0, 1, 2}, {{0, 0, 0}, {1.5, 0, 0}, {0, 10, 0}}, 11.5, 0, RP_PAIR_SELF, 1},
        /* scene pair of link a (0) ties with self (a, b): the scene pair first */
        {{0, 1, 2}, {{0, 0, 0}, {1.5, 0, 0}, {0, 10, 0}}, -1.5, 0, RP_PAIR_SCENE, 0},
        /* no tie: self (b, c) at 0.5 is closer than everything at 1 */
        {{0, 1, 2}, {{0, 0, 0}, {1.5, 0, 0}, {1.5, 1, 0}}, 11.5, 1, RP_PAIR_SELF, 2},
        /* self (a, b) ties with self (b, c); their blocks are slots (1, 3)
         * and (1, 2), and the second comes first in slot order: (a, b) must
         * still win */
        {{2, 0, 1}, {{0, 0, 0}, {1.5, 0, 0}, {3, 0, 0}}, 50, 0, RP_PAIR_SELF, 1},
        /* the same with (b, c) ahead: links a, b, c on frames 2, 1, 0 */
        {{2, 1, 0}, {{0, 0, 0}, {1.5, 0, 0}, {3, 0, 0}}, 50, 0, RP_PAIR_SELF, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rp_store *st = rp_store_new(NULL);
        assert_non_null(st);
        rp_shape_put put = {"s", sphere(0, cases[c].scene_y, 0, 0.25)};
        rp_scene *sc;
        assert_int_equal(rp_store_create(st, "cell", &put, 1, &sc), RP_OK);
        rp_link links[4] = {{"a", cases[c].frame[0], sphere(0, 0, 0, 0.25)},
                            {"b", cases[c].frame[1], sphere(0, 0, 0, 0.25)},
                            {"c", cases[c].frame[2], sphere(0, 0, 0, 0.25)},
                            {"far", 40, sphere(0, 0, 0, 0.01)}};
        rp_model_def def = {.links = links, .n_links = 3, .self_collision = true};
        rp_model *fast, *plain;
        assert_int_equal(rp_store_model_put(st, "fast", &def, &fast, NULL), RP_OK);
        def.n_links = 4;
        assert_int_equal(rp_store_model_put(st, "plain", &def, &plain, NULL), RP_OK);
        rp_transform frames[41];
        for (int f = 0; f < 41; f++)
            frames[f] = (rp_transform){{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {5000, 5000, 5000}};
        for (int k = 0; k < 3; k++)
            frames[cases[c].frame[k]].t = cases[c].at[k];
        for (int mode = 0; mode < 3; mode++) {
            /* FIRST: every pair here violates the margin; the reported one
             * must be the plain path's. */
            rp_check_opts o = {(rp_report)mode, true, 2.0, NULL, NULL, 0};
            rp_check_result a, b;
            assert_int_equal(rp_model_check(fast, sc, NULL, frames, 3, &o, &a), RP_OK);
            assert_int_equal(rp_model_check(plain, sc, NULL, frames, 41, &o, &b), RP_OK);
            if (mode == RP_REPORT_FIRST)
                same_first(&a, &b, plain, sc, NULL, frames, 2.0);
            else
                same_result(&a, &b, 3);
            if (mode == RP_REPORT_FIRST) {
                assert_int_equal(a.n_violations, 1);
                rp_check_result_free(&a);
                rp_check_result_free(&b);
                continue;
            }
            assert_true(a.has_min);
            assert_int_equal(a.closest.link, cases[c].want_link);
            assert_int_equal(a.closest.kind, cases[c].want_kind);
            assert_int_equal(a.closest.other, cases[c].want_other);
            rp_check_result_free(&a);
            rp_check_result_free(&b);
        }
        rp_store_free(st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(broadphase_changes_no_result),
        cmocka_unit_test(closest_ties_follow_the_canonical_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
