/* SPDX-License-Identifier: MIT */
/*
 * The definition a model was put with, kept by the store
 * (rp_model_definition): a deep copy in one heap block, so that whoever
 * needs the model as it was defined (the daemon's journal and snapshots,
 * model.get) reads it from the model instead of keeping its own copy.
 *
 * The copy is laid out in two passes over the same walk: the first only
 * counts bytes (`at` advances, nothing is written), the second writes.
 * Arrays come first, each aligned for its type, then the strings.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"

typedef struct layout {
    char *base; /* NULL: counting pass */
    size_t at;  /* bytes laid out so far */
} layout;

static void *take(layout *l, size_t size, size_t align)
{
    l->at = (l->at + align - 1) / align * align;
    void *p = l->base ? l->base + l->at : NULL;
    l->at += size;
    return p;
}

#define TAKE(l, type, n) ((type *)take((l), (n) * sizeof(type), alignof(type)))

static const char *str(layout *l, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = take(l, n, 1);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* The n strings at src (NULL when src is). */
static const char *const *strs(layout *l, const char *const *src, size_t n)
{
    if (!src)
        return NULL;
    const char **dst = TAKE(l, const char *, n);
    for (size_t i = 0; i < n; i++) {
        const char *s = str(l, src[i]);
        if (dst)
            dst[i] = s;
    }
    return dst;
}

/* Lays out (or only measures) a copy of src; returns the copy. */
static rp_model_def *lay_out(layout *l, const rp_model_def *src)
{
    rp_model_def *d = TAKE(l, rp_model_def, 1);
    rp_link *links = TAKE(l, rp_link, src->n_links);
    rp_joint_def *joints = TAKE(l, rp_joint_def, src->n_joints);
    double *values = src->n_defaults ? TAKE(l, double, src->n_defaults) : NULL;
    rp_mesh_cover *covers = src->n_mesh_covers ? TAKE(l, rp_mesh_cover, src->n_mesh_covers) : NULL;
    if (d) {
        *d = *src;
        d->links = links;
        d->joints = joints;
        d->default_values = values;
        if (src->n_links)
            memcpy(links, src->links, src->n_links * sizeof *links);
        if (src->n_joints)
            memcpy(joints, src->joints, src->n_joints * sizeof *joints);
        if (values)
            memcpy(values, src->default_values, src->n_defaults * sizeof *values);
        d->mesh_covers = covers;
        if (covers)
            memcpy(covers, src->mesh_covers, src->n_mesh_covers * sizeof *covers);
    }
    rp_group_def *groups = src->n_groups ? TAKE(l, rp_group_def, src->n_groups) : NULL;
    rp_state_def *states = src->n_states ? TAKE(l, rp_state_def, src->n_states) : NULL;
    rp_end_effector_def *effs =
        src->n_end_effectors ? TAKE(l, rp_end_effector_def, src->n_end_effectors) : NULL;
    if (d) {
        d->groups = groups;
        d->states = states;
        d->end_effectors = effs;
    }
    for (size_t i = 0; i < src->n_groups; i++) {
        const rp_group_def *g = &src->groups[i];
        const char *name = str(l, g->name);
        const char *const *members = strs(l, g->joints, g->n_joints);
        if (groups)
            groups[i] = (rp_group_def){name, members, g->n_joints};
    }
    for (size_t i = 0; i < src->n_states; i++) {
        const rp_state_def *t = &src->states[i];
        double *vals = t->n_joints ? TAKE(l, double, t->n_joints) : NULL;
        if (vals)
            memcpy(vals, t->values, t->n_joints * sizeof *vals);
        const char *name = str(l, t->name), *group = str(l, t->group);
        const char *const *names = strs(l, t->joints, t->n_joints);
        if (states)
            states[i] = (rp_state_def){name, group, names, vals, t->n_joints};
    }
    for (size_t i = 0; i < src->n_end_effectors; i++) {
        const rp_end_effector_def *e = &src->end_effectors[i];
        const char *name = str(l, e->name), *link = str(l, e->parent_link);
        const char *group = str(l, e->group), *pg = str(l, e->parent_group);
        if (effs)
            effs[i] = (rp_end_effector_def){name, link, group, pg};
    }
    const char *const *passive = strs(l, src->passive_joints, src->n_passive);
    if (d)
        d->passive_joints = passive;
    for (size_t i = 0; i < src->n_mesh_covers; i++) {
        const char *link = str(l, src->mesh_covers[i].link);
        if (covers)
            covers[i].link = link;
    }
    for (size_t i = 0; i < src->n_links; i++) {
        const char *id = str(l, src->links[i].id);
        if (d)
            links[i].id = id;
    }
    for (size_t i = 0; i < src->n_joints; i++) {
        const rp_joint_def *j = &src->joints[i];
        const char *name = str(l, j->name), *parent = str(l, j->parent);
        const char *child = str(l, j->child), *mimic = str(l, j->mimic);
        if (d) {
            joints[i].name = name;
            joints[i].parent = parent;
            joints[i].child = child;
            joints[i].mimic = mimic;
        }
    }
    const char *const *pairs = strs(l, src->allowed_pairs, 2 * src->n_allowed);
    const char *const *shape_links = strs(l, src->shape_links, src->n_links);
    const char *const *link_names = strs(l, src->link_names, src->n_link_names);
    const char *const *default_names = strs(l, src->default_names, src->n_defaults);
    const char *const *scene = strs(l, src->allowed_scene, 2 * src->n_allowed_scene);
    if (d) {
        d->allowed_pairs = pairs;
        d->shape_links = shape_links;
        d->link_names = link_names;
        d->default_names = default_names;
        d->allowed_scene = scene;
    }
    return d;
}

rp_model_def *rp_model_def_copy_(const rp_model_def *src, size_t *bytes)
{
    layout l = {NULL, 0};
    lay_out(&l, src);
    char *block = malloc(l.at);
    if (!block)
        return NULL;
    *bytes = l.at;
    l = (layout){block, 0};
    return lay_out(&l, src);
}

const rp_model_def *rp_model_definition(const rp_model *m)
{
    return m ? m->def : NULL;
}
