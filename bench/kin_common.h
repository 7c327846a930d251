/* SPDX-License-Identifier: MIT */
/*
 * What kin_bench (in process) and kin_socket_bench (through reposed) share:
 * the arm7 robot (tests/data/arm7.urdf + arm7.srdf), the two scenes, random
 * configurations and random motion edges, all deterministic (fixed seeds),
 * so that both programs measure exactly the same workload.
 *
 * The robot.  arm7 is a 7-dof Panda-like arm with a parallel gripper,
 * spherized by hand (see the comment at the top of arm7.urdf): 57 shapes
 * (53 spheres, 4 cylinders that become capsules), 12 links, 8 active joints
 * (7 arm joints and finger_joint1; finger_joint2 mimics it), 9 frames, 19
 * allowed pairs from the SRDF.  Parsed with rp_urdf_parse exactly as
 * reposed's model.put does with an SRDF (no adjacency pairs, no limits), so
 * the in-process model and the daemon's are the same.  Self collision is on
 * (rp_urdf_def's default), margin 0.
 *
 * Scene "tabletop" (about 100 shapes).  The robot stands at the origin on a
 * pedestal at the edge of a table whose top surface is z = 0:
 *   - table top 0.9 m (x 0.15..1.05) x 1.6 m (y -0.8..0.8) x 0.04 m, a box
 *     turned into enclosing capsules by the rule in kin_common.c (add_box;
 *     the URDF importer's rule before it made exact boxes): 16 capsules;
 *   - 4 legs (capsules r 0.03), the robot's pedestal (capsule r 0.1 ending
 *     12 cm below the base): 5;
 *   - 5 boxes on the table (crates, a tray, a carton, a block), as capsules
 *     by the same rule: 2-6 capsules each;
 *   - 6 upright cylinders (bottles, cans) as capsules;
 *   - 40 small spheres (fruit, balls: r 2-5 cm) and 20 small capsules (tools,
 *     pens: r 1-2 cm, 10-20 cm long), lying on the table.
 * Object positions are uniform over x 0.3..1.0, y -0.7..0.7 (fixed seed).
 *
 * Scene "random" (10,000 shapes).  Spheres and capsules alternating, centres
 * uniform in the 2 m cube x, y in [-1, 1], z in [-0.5, 1.5] around the robot
 * (its base at the origin; the arm reaches about 0.85 m from its shoulder at
 * z = 0.333); radius uniform in [0.5, 1] * R with R = KB_RANDOM_RADIUS
 * (2 cm); a capsule's axis has a random direction and a length uniform in
 * [0, 4R].  Shapes that come within 2 cm of a shape fixed to the
 * base (arm7_link0, which never moves) are drawn again, since every
 * configuration would collide with them.
 *   The shapes' sizes cannot make a third of the configurations clear:
 * 10,000 shapes in 8 m^3 put about 1,250 centres in every cubic metre, and
 * the arm's spheres alone fill a few hundredths of one, so even points
 * (R -> 0) leave no random configuration clear (measured: 0% at R = 0.5 mm).
 * So the cube has a clear ball of radius KB_RANDOM_BUBBLE around the
 * shoulder (0, 0, 0.333): no core point of a shape lies inside it (a
 * shape's radius may still reach in).  The arm works inside the ball and
 * runs into the clutter when it reaches out.  The ball's radius sets the
 * clear share, the shapes' size hardly does (at 1000 configurations:
 * radius 0.6 m: 25-27% clear, 0.7 m: 37-38%, 0.8 m: 55-60%, for R from
 * 1.2 to 2.5 cm); 0.66 m with R = 2 cm gives about a third (kin_bench prints
 * the measured share).

 * Configurations: every active joint uniform within its limits.
 *
 * Motion edges (planner-like): the start is a random in-limit configuration
 * that is collision-free in the scene (as a planner's tree node is); the
 * end lies towards another random in-limit configuration, at a max-norm
 * distance L uniform in [KB_EDGE_MIN, KB_EDGE_MAX] rad (or the whole way
 * when that is shorter), so it stays inside the limits.
 */
#ifndef REPOSE_BENCH_KIN_COMMON_H
#define REPOSE_BENCH_KIN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "urdf/urdf.h"
#include "repose/scene.h"

#define KB_MAX_DOF 16
#define KB_RANDOM_SHAPES 10000
#define KB_RANDOM_RADIUS 0.02 /* R of scene "random" (see the top) */
#define KB_RANDOM_BUBBLE 0.66 /* clear ball around the shoulder (see the top) */
#define KB_SHOULDER_Z 0.333
#define KB_EDGE_MIN 0.5
#define KB_EDGE_MAX 1.0

#define KB_SEED_TABLE UINT64_C(0x7ab1e7095eed0001)
#define KB_SEED_RANDOM UINT64_C(0x4a2d0b5eed000002)
#define KB_SEED_CONFIGS UINT64_C(0xc0f165eed0000003)
#define KB_SEED_EDGES UINT64_C(0xed9e55eed0000004)
#define KB_SEED_SURFACES UINT64_C(0x5a2face5eed00005)

/* splitmix64 */
typedef struct kb_rng {
    uint64_t s;
} kb_rng;
uint64_t kb_next(kb_rng *r);
double kb_unit(kb_rng *r); /* [0, 1) */
double kb_uniform(kb_rng *r, double lo, double hi);

double kb_now_ns(void);                /* CLOCK_MONOTONIC */
double kb_median(double *v, size_t n); /* sorts v */
void kb_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void *kb_alloc(size_t n, size_t size);             /* calloc or die */
char *kb_read_file(const char *path, size_t *len); /* NUL-terminated, or die */

/* The robot: documents, parse, model in `store` under `name`. */
typedef struct kb_robot {
    char *urdf, *srdf;
    size_t urdf_len, srdf_len;
    rp_urdf *parsed;
    rp_model *model;
    size_t dof;
    double lo[KB_MAX_DOF], hi[KB_MAX_DOF];
} kb_robot;

/* Loads dir/arm7.urdf and dir/arm7.srdf and puts the model (self collision
 * as `self_collision`).  Dies on error. */
void kb_robot_load(kb_robot *r, const char *dir, rp_store *store, const char *name,
                   bool self_collision);
void kb_robot_free(kb_robot *r);

/* A scene's shapes with their ids ("t0".. / "r0".."). */
typedef struct kb_scene {
    rp_shape_put *puts;
    char *ids;
    size_t n, cap;
} kb_scene;
void kb_scene_tabletop(kb_scene *s);
/* A cell of 20 boxes: a table (top and four legs), six boxes on it and a
 * bookshelf (sides, back, six boards) beside the robot; with `exact` as
 * boxes, else each box as the capsule cover kb_scene_tabletop uses (the
 * tiling the README recommended before boxes). */
void kb_scene_cell(kb_scene *s, bool exact);
/* The robot is needed to keep shapes off its base. */
void kb_scene_random(kb_scene *s, const rp_model *m, size_t n, double radius, double bubble);
/* Scene "cage": 14 spheres (r 5 cm) on two rings of 7 around the robot's
 * shoulder axis, 0.75 m from it, at z = 0.15 and 0.75: the few shapes a
 * planner's workcell often has near the arm (issue 27's 14-sphere cage). */
void kb_scene_cage(kb_scene *s);
/* Scene "surfaces": n spheres (r 1 cm) spread uniformly by area over the
 * surfaces of the cell's table top, six boxes and bookshelf boards (as if
 * a depth camera had sampled them; fixed seed). */
void kb_scene_surfaces(kb_scene *s, size_t n);
void kb_scene_free(kb_scene *s);
/* Creates the scene in the store and builds its tree; dies on error. */
rp_scene *kb_scene_create(rp_store *st, const char *name, const kb_scene *s);

/* n configurations (n x dof, row by row), uniform within the limits. */
double *kb_configs(const kb_robot *r, size_t n, uint64_t seed);

/* n edges (2 x dof each: start row, end row) as described at the top,
 * starting from configurations clear in `scene` (self collision as the
 * robot's model has it). */
double *kb_edges(const kb_robot *r, const rp_scene *scene, size_t n, uint64_t seed);

#endif
