/* SPDX-License-Identifier: MIT */
/*
 * model.put with a urdf whose collisions are meshes (proto/PROTOCOL.md,
 * model.put; proto/URDF.md, "Meshes"): params.meshes holds each file's
 * bytes (base64) under its filename as the URDF writes it, and
 * params.spherize the cover's budget.  The document is parsed, each link's
 * meshes read (src/mesh) and covered with spheres (repose/spherize.h).
 *
 * That is the one model.put that may take a second or more, so a worker
 * does it ahead of the event loop (rpd_prebuild_models, called where a
 * worker parses a line the loop will run, rpc.c), and the loop's handler
 * takes the result (or its error) instead of doing the work again.
 * Without workers (--threads 0) the handler does it itself.  Either way
 * the work is priced before it is done, under max_request_work: reading a
 * file by its bytes, covering it by its triangles (counted once the file
 * is read, before the cover).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "methods.h"
#include "methods_mesh.h"
#include "rpc.h"
#include "repose/spherize.h"
#include "urdf/urdf.h"

/* Work units (about 20 ns each, proto/PROTOCOL.md "Limits"): reading a
 * mesh file, per byte sent; covering, per triangle. */
#define WORK_MESH_BYTE 1
#define WORK_MESH_TRIANGLE 250

/* Largest sphere budget per link a client may ask for. */
#define MAX_SPHERES_PER_LINK 1024

void rpd_urdf_outcome_free(rpd_urdf_outcome *o)
{
    rp_urdf_free(o->u);
    o->u = NULL;
}

static void param_error(rpd_urdf_outcome *o, const char *path, const char *reason)
{
    o->kind = RPD_URDF_BAD_PARAM;
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->reason, sizeof o->reason, "%s", reason);
}

typedef struct mesh_inputs {
    rp_urdf_mesh_file *files;
    unsigned char **bufs;
    size_t n, bytes;
    rp_spherize_opts opts;
} mesh_inputs;

static void inputs_free(mesh_inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->bufs[i]);
    free(in->bufs);
    free(in->files);
}

static bool uri_named(const rp_urdf *u, const char *uri)
{
    for (size_t i = 0; i < rp_urdf_mesh_count(u); i++)
        if (strcmp(rp_urdf_mesh_at(u, i)->uri, uri) == 0)
            return true;
    return false;
}

/* params.spherize: {max_spheres?, max_overshoot?}. */
static bool decode_spherize(const cJSON *j, mesh_inputs *in, rpd_urdf_outcome *o)
{
    in->opts = (rp_spherize_opts){RP_SPHERIZE_DEFAULT_SPHERES, 0};
    if (!j)
        return true;
    if (!cJSON_IsObject(j)) {
        param_error(o, "params.spherize", "must be an object {max_spheres?, max_overshoot?}");
        return false;
    }
    for (const cJSON *c = j->child; c; c = c->next) {
        char path[RP_CODEC_PATH_MAX];
        rp_codec_path_key(path, "params.spherize", c->string);
        if (strcmp(c->string, "max_spheres") == 0) {
            double v = c->valuedouble;
            if (!cJSON_IsNumber(c) || v != (double)(size_t)v || v < 1 || v > MAX_SPHERES_PER_LINK) {
                param_error(o, path, "must be an integer from 1 to 1024 (spheres per link)");
                return false;
            }
            in->opts.max_spheres = (size_t)v;
        } else if (strcmp(c->string, "max_overshoot") == 0) {
            if (!cJSON_IsNumber(c) || !(c->valuedouble >= 0) || c->valuedouble > 1e6) {
                param_error(o, path, "must be a distance in metres, 0 or more");
                return false;
            }
            in->opts.max_overshoot = c->valuedouble;
        } else {
            param_error(o, path, "unknown member (spherize takes max_spheres, max_overshoot)");
            return false;
        }
    }
    return true;
}

/* params.meshes: {filename: base64}; every key a filename the URDF names. */
static bool decode_meshes(const cJSON *j, const rp_urdf *u, mesh_inputs *in, rpd_urdf_outcome *o)
{
    if (!j) {
        if (rp_urdf_mesh_count(u)) {
            const rp_urdf_mesh *m = rp_urdf_mesh_at(u, 0);
            char reason[256];
            snprintf(reason, sizeof reason,
                     "the URDF has <mesh> collisions: send each file's bytes, base64, under its "
                     "filename (link %.40s: \"%.60s\")",
                     m->link, m->uri);
            param_error(o, "params.meshes", reason);
            return false;
        }
        return true;
    }
    if (!cJSON_IsObject(j)) {
        param_error(o, "params.meshes", "must be an object {filename: base64 of the file}");
        return false;
    }
    size_t n = (size_t)cJSON_GetArraySize(j);
    in->files = calloc(n ? n : 1, sizeof *in->files);
    in->bufs = calloc(n ? n : 1, sizeof *in->bufs);
    if (!in->files || !in->bufs) {
        o->kind = RPD_URDF_NOMEM;
        return false;
    }
    for (const cJSON *c = j->child; c; c = c->next) {
        char path[RP_CODEC_PATH_MAX];
        rp_codec_path_key(path, "params.meshes", c->string);
        if (!uri_named(u, c->string)) {
            param_error(o, path, "no <mesh filename> of the URDF names this file");
            return false;
        }
        for (size_t k = 0; k < in->n; k++)
            if (strcmp(in->files[k].uri, c->string) == 0) {
                param_error(o, path, "the same filename twice");
                return false;
            }
        if (!cJSON_IsString(c)) {
            param_error(o, path, "must be a string: the file's bytes in base64");
            return false;
        }
        size_t len = strlen(c->valuestring), got;
        unsigned char *buf = malloc(rp_base64_decoded_max(len) + 1);
        if (!buf) {
            o->kind = RPD_URDF_NOMEM;
            return false;
        }
        in->bufs[in->n] = buf;
        const char *why = NULL;
        if (!rp_base64_decode(c->valuestring, len, buf, &got, &why)) {
            char reason[RP_CODEC_REASON_MAX];
            snprintf(reason, sizeof reason, "not base64: %s", why ? why : "malformed");
            param_error(o, path, reason);
            in->n++;
            return false;
        }
        in->files[in->n++] = (rp_urdf_mesh_file){c->string, buf, got};
        in->bytes += got;
    }
    return true;
}

void rpd_urdf_build(const cJSON *params, const char *urdf, const char *srdf,
                    const rp_urdf_opts *opts, size_t max_shapes, uint64_t budget,
                    rpd_urdf_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->us = rp_urdf_parse(urdf, strlen(urdf), srdf, srdf ? strlen(srdf) : 0, opts, &o->u, &o->ue);
    if (o->us != RP_URDF_OK) {
        o->kind = o->us == RP_URDF_NOMEM ? RPD_URDF_NOMEM : RPD_URDF_DOCUMENT;
        return;
    }
    const cJSON *mj = cJSON_GetObjectItemCaseSensitive(params, "meshes");
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(params, "spherize");
    if (!mj && !rp_urdf_mesh_count(o->u)) {
        if (sj)
            param_error(o, "params.spherize", "the URDF has no <mesh> collisions to cover");
        return;
    }
    mesh_inputs in;
    memset(&in, 0, sizeof in);
    if (decode_spherize(sj, &in, o) && decode_meshes(mj, o->u, &in, o)) {
        /* Priced before the work: reading by the bytes, then covering by
         * the triangles of what is left of the budget. */
        uint64_t read = (uint64_t)in.bytes * WORK_MESH_BYTE;
        if (read > budget) {
            o->kind = RPD_URDF_WORK;
            o->work = read;
        } else {
            size_t max_tri = (size_t)((budget - read) / WORK_MESH_TRIANGLE);
            o->us = rp_urdf_cover_meshes(o->u, in.files, in.n, &in.opts, max_tri ? max_tri : 1,
                                         max_shapes, &o->ue);
            o->work = read;
            for (size_t i = 0; i < rp_urdf_def(o->u)->n_mesh_covers; i++)
                o->work += rp_urdf_def(o->u)->mesh_covers[i].triangles * WORK_MESH_TRIANGLE;
            if (o->us == RP_URDF_NOMEM)
                o->kind = RPD_URDF_NOMEM;
            else if (o->us == RP_URDF_LIMIT && o->ue.limit_name &&
                     strcmp(o->ue.limit_name, "max_mesh_triangles") == 0) {
                o->kind = RPD_URDF_WORK; /* more triangles than the budget holds */
                o->work = read + (uint64_t)(max_tri + 1) * WORK_MESH_TRIANGLE;
            } else if (o->us != RP_URDF_OK)
                o->kind = RPD_URDF_DOCUMENT;
        }
    }
    inputs_free(&in);
    if (o->kind != RPD_URDF_OK)
        rpd_urdf_outcome_free(o);
}

/* ---- ahead of the loop ---------------------------------------------------------- */

typedef struct prebuilt_model {
    const cJSON *params; /* the request's params object (in the kept tree) */
    rpd_urdf_outcome o;
} prebuilt_model;

struct rpd_prebuilt_models {
    size_t n, cap;
    prebuilt_model *m;
};

static void prebuild_request(struct rpd_prebuilt_models **pbp, const cJSON *r,
                             const rpd_limits *lim)
{
    const cJSON *m = cJSON_IsObject(r) ? cJSON_GetObjectItemCaseSensitive(r, "method") : NULL;
    if (!cJSON_IsString(m) || strcmp(m->valuestring, "model.put") != 0)
        return;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(r, "params");
    const cJSON *urdf =
        cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, "urdf") : NULL;
    const cJSON *meshes = urdf ? cJSON_GetObjectItemCaseSensitive(params, "meshes") : NULL;
    const cJSON *srdf = urdf ? cJSON_GetObjectItemCaseSensitive(params, "srdf") : NULL;
    const cJSON *adj = urdf ? cJSON_GetObjectItemCaseSensitive(params, "allow_adjacent") : NULL;
    /* Only what is worth a worker, and only well-formed: the handler
     * reports the rest. */
    if (!cJSON_IsString(urdf) || !meshes || (srdf && !cJSON_IsString(srdf)) ||
        (adj && !cJSON_IsBool(adj)))
        return;
    struct rpd_prebuilt_models *pb = *pbp;
    if (!pb && !(pb = *pbp = calloc(1, sizeof *pb)))
        return;
    if (pb->n == pb->cap) {
        size_t cap = pb->cap ? 2 * pb->cap : 2;
        prebuilt_model *more = realloc(pb->m, cap * sizeof *more);
        if (!more)
            return;
        pb->m = more;
        pb->cap = cap;
    }
    rp_urdf_opts opts;
    rpd_urdf_opts(lim, srdf ? srdf->valuestring : NULL, adj, &opts);
    prebuilt_model *e = &pb->m[pb->n++];
    e->params = params;
    rpd_urdf_build(params, urdf->valuestring, srdf ? srdf->valuestring : NULL, &opts,
                   lim->max_model_links, lim->max_request_work, &e->o);
}

void rpd_prebuild_models(rpd_parsed *p, const rpd_limits *lim)
{
    const cJSON *root = p->root;
    if (cJSON_IsArray(root))
        for (const cJSON *r = root->child; r; r = r->next)
            prebuild_request(&p->prebuilt_models, r, lim);
    else
        prebuild_request(&p->prebuilt_models, root, lim);
}

bool rpd_prebuilt_model_take(struct rpd_prebuilt_models *pb, const cJSON *params,
                             rpd_urdf_outcome *o)
{
    for (size_t k = 0; pb && k < pb->n; k++)
        if (pb->m[k].params == params && !pb->m[k].o.taken) {
            *o = pb->m[k].o;
            pb->m[k].o.taken = true;
            pb->m[k].o.u = NULL; /* the caller owns it now */
            return true;
        }
    return false;
}

void rpd_prebuilt_models_free(struct rpd_prebuilt_models *pb)
{
    for (size_t k = 0; pb && k < pb->n; k++)
        rpd_urdf_outcome_free(&pb->m[k].o);
    if (pb)
        free(pb->m);
    free(pb);
}

void rpd_urdf_opts(const rpd_limits *lim, const char *srdf, const cJSON *adjacent,
                   rp_urdf_opts *opts)
{
    bool adj = adjacent ? cJSON_IsTrue(adjacent) : srdf == NULL;
    *opts = (rp_urdf_opts){lim->max_model_links, lim->max_model_links, lim->max_allowed_pairs, adj};
}
