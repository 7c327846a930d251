/* SPDX-License-Identifier: MIT */
/* Store images in memory (image.h). */
#define _POSIX_C_SOURCE 200809L
#include "image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"

int rpd_image_models(const rp_store *st, rps_model **models_out, char ***jsons_out, size_t *n_out)
{
    size_t nm = rp_store_model_count(st), k = 0;
    rps_model *models = calloc(nm ? nm : 1, sizeof *models);
    char **jsons = calloc(nm ? nm : 1, sizeof *jsons);
    int err = models && jsons ? 0 : ENOMEM;
    for (size_t i = 0; i < nm && !err; i++) {
        const rp_model *m = rp_store_model_at(st, i);
        rp_jw w;
        rp_jw_init(&w);
        rp_jw_model_def(&w, rp_model_name(m), rp_model_definition(m));
        size_t len = 0;
        char *json = rp_jw_failed(&w) ? NULL : rp_jw_detach(&w, &len);
        rp_jw_free(&w);
        if (!json) {
            err = ENOMEM;
            break;
        }
        /* The name lives in the model, which the store holds. */
        jsons[k] = json;
        models[k++] = (rps_model){rp_model_name(m), rp_model_revision(m), json, len};
    }
    if (err) {
        rpd_image_models_free(models, jsons, k);
        return err;
    }
    *models_out = models;
    *jsons_out = jsons;
    *n_out = k;
    return 0;
}

void rpd_image_models_free(rps_model *models, char **jsons, size_t n)
{
    for (size_t i = 0; jsons && i < n; i++)
        free(jsons[i]);
    free(jsons);
    free(models);
}

int rpd_image_build(const rp_store *st, uint64_t revision, uint8_t **buf, size_t *n)
{
    rps_model *models;
    char **jsons;
    size_t nm;
    int err = rpd_image_models(st, &models, &jsons, &nm);
    if (err)
        return err;
    /* rps_write streams to a file descriptor: an unnamed temporary file. */
    FILE *f = tmpfile();
    uint64_t bytes = 0;
    rps_ids ids = {0, 0, 0};
    err = f ? rps_write(fileno(f), st, revision, &ids, models, nm, &bytes) : errno;
    rpd_image_models_free(models, jsons, nm);
    uint8_t *out = NULL;
    if (!err && !(out = malloc(bytes ? bytes : 1)))
        err = ENOMEM;
    if (!err && pread(fileno(f), out, bytes, 0) != (ssize_t)bytes)
        err = EIO;
    if (f)
        fclose(f);
    if (err) {
        free(out);
        return err;
    }
    *buf = out;
    *n = bytes;
    return 0;
}

typedef struct load_ctx {
    rpd_core *core;
    rpd_apply_fn apply;
    char why[400];
} load_ctx;

/* rps_load's model callback: the model.put that made it, taking its
 * revision. */
static bool load_model(void *ctx, const rps_model *m, const char **why)
{
    load_ctx *l = ctx;
    if (m->revision > rp_store_revision(l->core->store) + 1)
        rp_store_set_revision(l->core->store, m->revision - 1);
    if (!l->apply(l->core, "model.put", m->json, m->json_len, l->why, sizeof l->why)) {
        *why = l->why;
        return false;
    }
    return true;
}

bool rpd_image_load(rpd_core *core, const uint8_t *buf, size_t n, rpd_apply_fn apply,
                    uint64_t *revision, char *why, size_t cap)
{
    if (rp_store_scene_count(core->store) || rp_store_model_count(core->store)) {
        snprintf(why, cap, "the store is not empty");
        return false;
    }
    load_ctx l = {core, apply, ""};
    rps_load_result res;
    if (!rps_load(buf, n, core->store, load_model, &l, &res)) {
        snprintf(why, cap, "%s at offset %zu (%s)", res.bad_format ? "unreadable" : "corrupt",
                 res.bad_offset, res.reason);
        return false;
    }
    *revision = res.revision;
    return true;
}
