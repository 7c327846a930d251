/* SPDX-License-Identifier: MIT */
/**
 * @file plan.h
 * @brief Motion planning with repose's own checks: RRT-Connect in joint
 * space over exact edge checks (certified by default), in process.
 *
 * The daemon's `plan` method (proto/PROTOCOL.md, Planning) runs this on a
 * worker against the scene version it took when it read the request; a C
 * or C++ planner can call it directly.  Like the checks, it only reads the
 * model and the scene: any number of threads may plan at once on the same
 * ones while nothing mutates them.
 */
#ifndef REPOSE_PLAN_H
#define REPOSE_PLAN_H

#include "repose/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Most configurations the two trees of a plan hold together.
#define RP_PLAN_MAX_NODES 262144

/// How a plan ended.
typedef enum rp_plan_outcome {
    RP_PLAN_SOLVED,        ///< A path was found; every edge of it is valid.
    RP_PLAN_START_INVALID, ///< The start is out of limits or in collision.
    RP_PLAN_GOAL_INVALID,  ///< Every goal is out of limits or in collision.
    RP_PLAN_TIMEOUT,       ///< timeout_ms passed first.
    RP_PLAN_MAX_STATES,    ///< max_states were checked first, or the trees reached
                           ///< RP_PLAN_MAX_NODES configurations (memory: some 200 bytes each).
    RP_PLAN_STOPPED        ///< The stop callback asked to stop.
} rp_plan_outcome;

/// Options of a plan; rp_plan_opts_init fills the defaults.
typedef struct rp_plan_opts {
    rp_motion_mode edges; ///< How edges are checked (default CERTIFIED: every
                          ///< configuration of every edge proven clear).
    double resolution;    ///< DISCRETE edges: largest joint step (0: 0.01).
    double tolerance;     ///< CERTIFIED edges: as rp_motion_opts (0: 1e-5 m).
    bool has_margin;      ///< Use `margin` instead of the model's safety margin.
    double margin;
    const char *const *ignore; ///< Objects of the scene left out, as for checks.
    size_t n_ignore;
    uint64_t seed;       ///< The same seed on the same scene version: the same path.
    double range;        ///< Longest tree extension, Euclidean joint distance
                         ///< (continuous joints wrap); 0: a fifth of the joint
                         ///< space's diagonal, at most 4.
    bool simplify;       ///< Shortcut and drop waypoints (each new edge checked).
    double max_step;     ///< > 0: split edges so no joint moves more than this.
    double timeout_ms;   ///< Wall-clock budget (0: none).
    uint64_t max_states; ///< Most configurations to check (0: no limit).
    /// Polled between steps (may be NULL): nonzero stops the plan
    /// (RP_PLAN_STOPPED), e.g. when the client that asked has gone.
    int (*stop)(void *ctx);
    void *stop_ctx;
    rp_work *work; ///< Budget of the scene walks (NULL: none); see rp_work.
    /// Per active joint (rp_model_dof of them), or NULL: a frozen joint stays
    /// at the start's value (a plan for a group of joints, the others
    /// fixed); every goal must hold that value too (else RP_ERR_INVALID_ARG).
    const bool *frozen;
} rp_plan_opts;

/// What a plan found; release with rp_plan_result_free.
typedef struct rp_plan_result {
    rp_plan_outcome outcome;
    double *path;       ///< SOLVED: n_points joint vectors, row by row; the first
    size_t n_points;    ///< is the start as given, the last the goal reached.
    size_t goal;        ///< SOLVED: the goal reached; GOAL_INVALID: the goal reported.
    bool limits;        ///< START/GOAL_INVALID: out of limits (joint `limit_joint`),
    size_t limit_joint; ///< else in collision (`pair`, as a FIRST check reports it).
    rp_check_pair pair;
    uint64_t iterations;     ///< Samples drawn.
    uint64_t nodes;          ///< Configurations in both trees.
    uint64_t states_checked; ///< Configurations evaluated by the checks.
    uint64_t edges_checked;  ///< Edges checked (tree, final path, shortcuts).
    double ms;               ///< Wall-clock time.
} rp_plan_result;

/// The defaults: certified edges, seed 0, simplify, no densification,
/// no timeout, no state limit.
RP_API void rp_plan_opts_init(rp_plan_opts *opts);

/// Plans a path of model `m` (kinematic) from joint vector `start` to any
/// of the n_goals joint vectors `goals` (row by row) among `scene` (may be
/// NULL) with the base at `base` (NULL: identity), by RRT-Connect: two
/// trees, from the start and from the goals, extended towards random
/// configurations within the joint limits (continuous joints and
/// revolute joints without limits wrap around) and towards each other.
/// Every edge is checked with rp_model_check_motion in opts->edges' mode,
/// and every segment between two waypoints of the path returned passed
/// such a check: a tree edge once, as the tree grew (the goals' tree's
/// edges run the other way in the path: the same segment), shortcuts and
/// densified pieces as returned, and with wrapping joints every edge again
/// as returned.  A continuous joint's values along the path are
/// unwrapped (a step goes the short way round, so a value may leave
/// [-pi, pi]).  Deterministic: only the timeout and the stop callback
/// depend on anything but the arguments.
///
/// Returns RP_OK with the outcome in *out, or: RP_ERR_INVALID_ARG (a
/// frame-indexed model, no goals, an option out of range, a prismatic
/// joint without limits), RP_ERR_NONFINITE (a start or goal value),
/// RP_ERR_WORK (opts->work spent), RP_ERR_NOMEM.
RP_API rp_status rp_model_plan(const rp_model *m, const rp_scene *scene, const rp_transform *base,
                               const double *start, const double *goals, size_t n_goals,
                               const rp_plan_opts *opts, rp_plan_result *out);

/// Frees a result's path; safe on a zeroed or freed result.
RP_API void rp_plan_result_free(rp_plan_result *r);

/// Nearest-neighbour structure of the planner, exposed for its benchmark
/// and tests: points of `dim` coordinates, some of them angles that wrap
/// (period 2 pi), under the Euclidean distance with wrapped differences.
typedef struct rp_nn rp_nn;
RP_API rp_nn *rp_nn_new(size_t dim, const bool *wraps);
RP_API void rp_nn_free(rp_nn *nn);
/// Adds a point (index: the number added before it).  False when out of
/// memory (nothing added).
RP_API bool rp_nn_add(rp_nn *nn, const double *p);
/// The index of the point nearest q (ties: the lowest index), and its
/// squared distance in *d2; SIZE_MAX when empty.
RP_API size_t rp_nn_nearest(const rp_nn *nn, const double *q, double *d2);

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_PLAN_H */
