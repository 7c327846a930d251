/* SPDX-License-Identifier: MIT */
/*
 * Private layout of robot models, shared by model.c (the store side),
 * kin.c (kinematic trees: compilation and forward kinematics), check.c
 * (the checks) and motion.c (motion checks).  Nothing outside src/scene
 * includes this.
 */
#ifndef REPOSE_MODEL_INT_H
#define REPOSE_MODEL_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include "scene_int.h"

/* A link shape's core points and radius: a sphere's centre, a capsule's two
 * ends, a box's eight vertices (radius 0); the shape is the convex hull of
 * the points grown by the radius, so bounds over the points bound the
 * shape, and under a rigid motion no point of it moves farther than the
 * farthest of them.  Half-spaces are never links (model validation). */
static inline int rp_link_points_(const rp_shape *s, rp_vec3 p[8], double *radius)
{
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        p[0] = s->sphere.center;
        *radius = s->sphere.radius;
        return 1;
    case RP_SHAPE_CAPSULE:
        p[0] = s->capsule.a;
        p[1] = s->capsule.b;
        *radius = s->capsule.radius;
        return 2;
    default: {
        rp_vec3 ax[3];
        rp_box_axes(&s->box, ax);
        rp_vec3 h = s->box.half_extents;
        for (int k = 0; k < 8; k++) {
            double u = (k & 1) ? h.x : -h.x, v = (k & 2) ? h.y : -h.y, w = (k & 4) ? h.z : -h.z;
            p[k] = (rp_vec3){s->box.center.x + u * ax[0].x + v * ax[1].x + w * ax[2].x,
                             s->box.center.y + u * ax[0].y + v * ax[1].y + w * ax[2].y,
                             s->box.center.z + u * ax[0].z + v * ax[1].z + w * ax[2].z};
        }
        *radius = 0.0;
        return 8;
    }
    }
}

/* tf applied to point p: rp_transform_point's arithmetic, inline. */
static inline rp_vec3 rp_xf_point_(const rp_transform *tf, rp_vec3 p)
{
    rp_vec3 q = {tf->r[0][0] * p.x + tf->r[0][1] * p.y + tf->r[0][2] * p.z + tf->t.x,
                 tf->r[1][0] * p.x + tf->r[1][1] * p.y + tf->r[1][2] * p.z + tf->t.y,
                 tf->r[2][0] * p.x + tf->r[2][1] * p.y + tf->r[2][2] * p.z + tf->t.z};
    return q;
}

/* *out = rp_transform_shape(tf, local), the same bits, with the robot's
 * usual shapes (spheres, capsules) placed inline: a check places its
 * shapes at every state it looks at. */
static inline void rp_place_shape_(const rp_transform *tf, const rp_shape *local, rp_shape *out)
{
    *out = *local;
    if (local->kind == RP_SHAPE_SPHERE) {
        out->sphere.center = rp_xf_point_(tf, local->sphere.center);
    } else if (local->kind == RP_SHAPE_CAPSULE) {
        out->capsule.a = rp_xf_point_(tf, local->capsule.a);
        out->capsule.b = rp_xf_point_(tf, local->capsule.b);
    } else {
        *out = rp_transform_shape(tf, local);
    }
}

/* A world link shape's finiteness probe: x - x summed over the coordinates
 * that moved (NaN when one is infinite); 0 when all are finite. */
static inline double rp_link_probe_(const rp_shape *w)
{
    switch (w->kind) {
    case RP_SHAPE_SPHERE:
        return (w->sphere.center.x - w->sphere.center.x) +
               (w->sphere.center.y - w->sphere.center.y) +
               (w->sphere.center.z - w->sphere.center.z);
    case RP_SHAPE_CAPSULE:
        return (w->capsule.a.x - w->capsule.a.x) + (w->capsule.a.y - w->capsule.a.y) +
               (w->capsule.a.z - w->capsule.a.z) + (w->capsule.b.x - w->capsule.b.x) +
               (w->capsule.b.y - w->capsule.b.y) + (w->capsule.b.z - w->capsule.b.z);
    default:
        return (w->box.center.x - w->box.center.x) + (w->box.center.y - w->box.center.y) +
               (w->box.center.z - w->box.center.z);
    }
}

/* Frames a check keeps on the stack before it allocates. */
#define RP_STACK_FRAMES 64

/* Broadphase limits (see rp_model.bounds). */
#define RP_BOUND_SLOTS 32
#define RP_BOUND_LINKS 4096
#define RP_BOUND_PAIRS (1u << 20)

/* A sphere (centre c, radius r, in its frame) around every shape of one
 * frame; `excl` when a shape of it has allowed scene pairs. */
typedef struct rp_bound {
    rp_vec3 c;
    double r;
    bool any; /* the frame has shapes */
    bool excl;
} rp_bound;

/* A slot pair u < v with eligible self pairs between their shapes.  Row a
 * (the a-th shape of slot u, slot_shapes order) has `words` 64-bit words
 * at block_masks[masks + a * words]: bit p set when the pair with the p-th
 * shape of slot v is eligible. */
typedef struct rp_pair_block {
    uint32_t u, v;
    uint32_t masks, words;
} rp_pair_block;

/* A ball around one shape in its frame: the centre of its core (a
 * capsule's midpoint), and a radius (rounded up) reaching every point of
 * the shape. */
typedef struct rp_ball {
    rp_vec3 c;
    double r;
} rp_ball;

/* A moving joint of a compiled kinematic tree: it makes frame f (the frame
 * of its child link and every link fixed to it).  The frame's pose is
 * frame[parent] * pre * motion(axis, value), frame[-1] being the base, with
 * value = mult * q[src] + off (an active joint: 1, 0). */
typedef struct rp_kin_joint {
    int parent;       /* parent frame, -1 for the root's (the base) */
    rp_transform pre; /* parent link's offset in its frame, then the origin */
    rp_vec3 axis;     /* unit */
    int axis_kind;    /* 0, 1, 2: axis is exactly +x, +y, +z; -1 otherwise */
    rp_joint_type type;
    size_t src; /* active joint whose value drives it */
    double mult, off;
    size_t def;     /* index into rp_kin.joints */
    uint32_t depth; /* moving joints from the root to this frame, itself included */
} rp_kin_joint;

/* The kinematic part of a model (NULL for a frame-indexed one). */
typedef struct rp_kin {
    atomic_size_t refs;        /* models using it: extensions are made and freed on
                                * worker threads while the store's model lives on */
    size_t bytes;              /* heap bytes, counted in the first model's bytes */
    size_t n_tree;             /* links of the tree */
    const char **tree_names;   /* into chars */
    int *link_frame;           /* per tree link: its frame, -1 for the root's */
    rp_transform *link_offset; /* per tree link: its pose in its frame */
    size_t root;               /* SIZE_MAX when the tree is empty */
    rp_joint_def *joints;      /* as defined; strings into chars */
    size_t n_joints;
    rp_kin_joint *moving; /* one per frame, parents before children */
    size_t dof;
    size_t *dof_joint; /* per active joint: index into joints */
    double *dof_default;
    size_t *allowed_links; /* 2 * n_allowed_links tree link indices */
    size_t n_allowed_links;
    char *chars; /* every name, back to back: the kin's own, since
                                * extensions share it and may outlive the model */
} rp_kin;

struct rp_model {
    char *name;
    uint64_t revision;
    rp_link *links; /* n_links shapes, definition order; ids into id_chars.  In a
                           * kinematic model .frame is the compiled frame and .shape is
                           * in that frame (kin->shape_local has the shapes as given). */
    size_t n_links;
    size_t n_base_links; /* n_links minus the shapes rp_model_extend attached */
    char *id_chars;      /* every link id, NUL-terminated, back to back */
    size_t *allowed;     /* 2 * n_allowed link indices, definition order (frame form) */
    size_t n_allowed;
    double safety_margin;
    bool self_collision;
    size_t frame_count; /* frame form: highest frame index + 1; kinematic: moving joints */
    /* Self pairs a check skips, as an n_links x n_links bit matrix of
     * row_words 64-bit words per row: bit j of row i is set when links i and
     * j share a frame (the base counts as its own frame) or form an allowed
     * pair.  NULL when self_collision is off, since no check reads it then. */
    uint64_t *skip;
    size_t row_words;
    /* Broadphase (model.c, used by check.c), NULL when the model is too big
     * for it (more than RP_BOUND_SLOTS frames with the base, or more than
     * RP_BOUND_LINKS shapes): per slot (frame + 1; slot 0 is the base) a
     * sphere in frame coordinates enclosing its shapes, and whether one of
     * them has allowed scene pairs; per shape a ball in its frame; the
     * shapes of slot s, ascending, in slot_shapes[slot_first[s] ..
     * slot_first[s + 1]); the slot pairs with eligible self pairs (n_blocks
     * blocks, NULL when self collision is off or no pair is eligible). */
    struct rp_bound *bounds;
    struct rp_ball *balls;
    uint32_t *slot_first;
    uint32_t *slot_shapes;
    double *slot_ball_r; /* balls[slot_shapes[p]].r, in slot_shapes order */
    struct rp_pair_block *blocks;
    size_t n_blocks;
    uint64_t *block_masks;
    /* The same eligible pairs as lists, for the float filter of batches
     * (check.c): block k's pairs are pair_a/pair_b/pair_r[block_pair_first[k]
     * .. block_pair_first[k + 1]), balls by their slot_shapes position, and
     * pair_r their radii's sum rounded up to a float. */
    uint16_t *pair_a, *pair_b;
    float *pair_r;
    uint32_t *block_pair_first;
    /* Per block its slot spheres as such a pair (slot s at position
     * n_links + s), for the filter's gates. */
    uint16_t *gate_a, *gate_b;
    float *gate_r;
    /* Allowed (link, scene id) pairs as given (strings into chars), and per
     * shape the scene ids it may touch: scene_ids[as_first[k] .. as_first[k+1]). */
    const char **as_pairs; /* 2 * n_as_pairs */
    size_t n_as_pairs;
    size_t *as_first; /* n_links + 1, or NULL when there are none */
    const char **as_ids;
    size_t n_as_ids;        /* as_first[n_links]: exclusions a check may load */
    size_t max_name_shapes; /* most shapes one name stands for (work estimates) */
    size_t *shape_link;     /* kinematic: per shape its tree link (attached included) */
    rp_shape *shape_local;  /* kinematic: per shape, in its link's frame, as given */
    char **strs;            /* strings other than link ids (names, scene ids), each a heap block */
    size_t n_strs, cap_strs;
    rp_kin *kin;       /* shared by a model and its extensions (refs) */
    rp_store *store;   /* owner, for memory accounting; NULL outside a store */
    size_t refs;       /* in a store: the store's list and snapshots (version.c) */
    size_t bytes;      /* heap bytes of this model, as added to store->bytes */
    rp_model_def *def; /* the definition as put, one block (model_def.c); NULL for
                        * a model rp_model_extend made */
};

/* The builders' steps, counted in sixteenths of a work unit (a bit of a
 * pair table is one, a name lookup or a shape it names sixteen): the
 * estimate functions of scene.h must stay above what this counts, which
 * the fuzz target fuzz_estimates checks.  Per thread; the builders only
 * ever add to it. */
extern _Thread_local uint64_t rp_build_steps_;

/* True when a check must consider the self pair (i, j): self collision is
 * on, the links sit on different frames and the pair is not allowed. */
static inline bool rp_model_self_pair_(const rp_model *m, size_t i, size_t j)
{
    return m->skip && !((m->skip[i * m->row_words + j / 64] >> (j % 64)) & 1u);
}

/* kin.c: compiles the kinematic form of def into m: m->kin, the frames of
 * m->links and their shapes, m->shape_link/shape_local (m->links and
 * n_links are already copied).  Returns RP_ERR_INVALID_ARG with *err set
 * for a bad definition, RP_ERR_NOMEM. */
rp_status rp_kin_compile_(rp_model *m, const rp_model_def *def, rp_model_error *err);
/* kin.c: frees a kin (when its last model goes). */
void rp_kin_release_(rp_kin *k);

/* kin.c: poses of the frames for joint vector q (finite values). */
void rp_kin_frames_(const rp_model *m, const rp_transform *base, const double *q,
                    rp_transform *frames);
/* kin.c: the same for n vectors (q + r * dof, finite values) into frames +
 * r * frame_count: the bits of rp_kin_frames_ for each, four at a time in
 * AVX2 lanes where the CPU has it. */
void rp_kin_frames_n_(const rp_model *m, const rp_transform *base, const double *q, size_t n,
                      rp_transform *frames);
/* kin_avx2.c: frames of four configurations whose joint values (v), sines
 * and cosines are given lane by lane (v[4 * f + lane] for frame f); base is
 * not NULL; frame_count <= RP_KIN4_MAX_FRAMES. */
#define RP_KIN4_MAX_FRAMES 32
void rp_kin_frames4_avx2_(const rp_model *m, const rp_transform *base, const double *v,
                          const double *sn, const double *cs, rp_transform *const out[4]);

/* model.c: malloc counted in m->bytes; never asks for 0 bytes. */
void *rp_model_alloc_(rp_model *m, size_t size);
/* A deep copy of src in one malloc'ed block of *bytes bytes (free() frees
 * it all); NULL when out of memory. */
rp_model_def *rp_model_def_copy_(const rp_model_def *src, size_t *bytes);
/* model.c: copies a string into m (counted); NULL when out of memory. */
char *rp_model_strdup_(rp_model *m, const char *s);

/* check.c: moves every shape into the world for the frame poses; see
 * rp_model_check for RP_ERR_NONFINITE. */
rp_status rp_place_links_(const rp_model *m, const rp_transform *base, const rp_transform *frames,
                          rp_shape *world, size_t *bad_link);

/* check.c: FIRST for n configurations of m (frames: n * frame_count poses,
 * configuration after configuration), results in out[0..n).  Several at a
 * time share a walk of the scene's tree; each result is the one
 * rp_model_check gives alone.  On an error, *failed is the configuration
 * (results before it are valid, the caller frees them). */
rp_status rp_model_check_first_many_(const rp_model *m, const rp_scene *scene,
                                     const rp_transform *base, const rp_transform *frames, size_t n,
                                     double margin, rp_check_result *out, size_t *failed);

/* check.c: scene storage indices shape k may touch (allowed scene pairs;
 * a pair naming an object or robot instance stands for all its shapes),
 * resolved against sc: writes up to cap indices, returns the count;
 * rp_allowed_scene_want_ is the most it can write. */
size_t rp_allowed_scene_want_(const rp_model *m, const rp_scene *sc, size_t k);
size_t rp_allowed_scene_resolve_(const rp_model *m, const rp_scene *sc, size_t k, size_t *out,
                                 size_t cap);

#endif /* REPOSE_MODEL_INT_H */
