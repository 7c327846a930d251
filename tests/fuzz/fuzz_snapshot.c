/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the snapshot loader (src/server/persistence/snapshot.c).
 *
 * Byte 0 even: the rest is loaded as an image as it is.  Byte 0 odd: an
 * image is written from a store built from the input (scenes of shapes of
 * every kind whose coordinates and ids come from the bytes), then cut at
 * and flipped at places the last four bytes choose.  Either way:
 *  - an image that loads re-encodes to exactly its own bytes (the loaded
 *    store, with the models the loader handed out and the ids it read,
 *    written again; an image of formats 2 and 3, which hold no objects and
 *    put scenes before models, to the same bytes once the new image is
 *    laid out that way, but for its version and header checksum; an image
 *    of format 1, whose header is shorter and has no ids, to the same
 *    bytes after the header and the same header fields);
 *  - an image the writer made loads, and gives back the same store;
 *  - a cut one or a flipped one does not load.
 */
#define _GNU_SOURCE /* memfd_create, pread */

#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"

#include "server/persistence/journal.h" /* rpj_get64, rpj_crc32c */
#include "server/persistence/snapshot.h"

typedef struct models {
    rps_model m[16];
    char names[16][130];
    char *json[16];
    size_t n;
} models;

static bool keep_model(void *ctx, const rps_model *m, const char **why)
{
    models *ms = ctx;
    if (ms->n == 16) {
        *why = "too many models for the target";
        return false;
    }
    size_t k = ms->n++;
    snprintf(ms->names[k], sizeof ms->names[k], "%s", m->name);
    ms->json[k] = malloc(m->json_len ? m->json_len : 1);
    memcpy(ms->json[k], m->json, m->json_len);
    ms->m[k] = (rps_model){ms->names[k], m->revision, ms->json[k], m->json_len};
    return true;
}

static void free_models(models *ms)
{
    for (size_t k = 0; k < ms->n; k++)
        free(ms->json[k]);
    ms->n = 0;
}

/* Header sizes of formats 2 and 3, and of format 1 (snapshot.h). */
#define HEADER_V2 80u
#define HEADER_V1 48u

/* The image of st (with ms and ids) in a fresh buffer. */
static uint8_t *image(const rp_store *st, uint64_t rev, const rps_ids *ids, const models *ms,
                      size_t *n)
{
    int fd = memfd_create("snap", 0);
    FUZZ_CHECK(fd >= 0, "memfd");
    uint64_t bytes = 0;
    FUZZ_CHECK(rps_write(fd, st, rev, ids, ms->m, ms->n, &bytes) == 0, "write");
    uint8_t *buf = malloc(bytes ? bytes : 1);
    FUZZ_CHECK(pread(fd, buf, bytes, 0) == (ssize_t)bytes, "read back");
    close(fd);
    *n = (size_t)bytes;
    return buf;
}

/* A format-4 image (80-byte header) laid out as the formats before it:
 * scene sections before model sections, each scene section without its
 * object count (zero: the store came from an older image).  In place; *n
 * shrinks. */
static void old_layout(uint8_t *img, size_t *n)
{
    uint8_t *out = malloc(*n);
    FUZZ_CHECK(out != NULL, "memory");
    memcpy(out, img, HEADER_V2);
    size_t len_out = HEADER_V2, at = HEADER_V2;
    for (int pass = 0; pass < 2; pass++) {
        at = HEADER_V2;
        while (*n - at > 16) {
            const uint8_t *h = img + at;
            uint64_t len = rpj_get64(h + 8);
            size_t whole = 20 + (size_t)len + 4;
            bool scene = rpj_get32(h) == 1;
            if (scene && pass == 0) {
                FUZZ_CHECK(rpj_get64(h + 20 + len - 8) == 0,
                           "an older image's scene has no objects");
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
    }
    memcpy(out + len_out, img + at, *n - at);
    len_out += *n - at;
    memcpy(img, out, len_out);
    *n = len_out;
    free(out);
}

/* Loads buf; when it loads, it must re-encode to itself.  Returns whether
 * it loaded. */
static bool check_load(const uint8_t *buf, size_t n)
{
    rp_store *st = rp_store_new(NULL);
    rp_store_limits none = {SIZE_MAX, RP_MAX_HALFSPACES_PER_SCENE};
    rp_store_set_limits(st, &none);
    models ms;
    ms.n = 0;
    rps_load_result res;
    bool ok = rps_load(buf, n, st, keep_model, &ms, &res);
    FUZZ_CHECK(ok == res.ok, "result and return agree");
    if (ok) {
        size_t n2;
        uint8_t *again = image(st, res.revision, &res.ids, &ms, &n2);
        if (res.format != RPS_FORMAT)
            old_layout(again, &n2);
        if (res.format == RPS_FORMAT) {
            FUZZ_CHECK(n2 == n && memcmp(again, buf, n) == 0,
                       "a loaded image re-encodes to itself");
        } else if (res.format == RPS_FORMAT_V2 || res.format == RPS_FORMAT_V3) {
            FUZZ_CHECK(n2 == n && memcmp(again, buf, 8) == 0 &&
                           memcmp(again + 12, buf + 12, HEADER_V2 - 16) == 0 &&
                           memcmp(again + HEADER_V2, buf + HEADER_V2, n - HEADER_V2) == 0,
                       "a loaded format-2 or -3 image re-encodes to itself but for its version");
        } else {
            FUZZ_CHECK(res.format == RPS_FORMAT_V1 && res.ids.snapshot_id == 0 &&
                           res.ids.journal_id == 0 && res.ids.prev_journal_id == 0,
                       "format 1 has no ids");
            FUZZ_CHECK(n2 - HEADER_V2 == n - HEADER_V1 &&
                           memcmp(again + HEADER_V2, buf + HEADER_V1, n - HEADER_V1) == 0 &&
                           memcmp(again + 16, buf + 16, 24) == 0,
                       "a loaded format-1 image re-encodes to itself after its header");
        }
        free(again);
    } else {
        FUZZ_CHECK(res.reason && res.bad_offset <= n, "a refusal says why and where");
    }
    free_models(&ms);
    rp_store_free(st);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!(data[0] & 1)) {
        check_load(data + 1, size - 1);
        return 0;
    }
    if (size < 6)
        return 0;
    const uint8_t *damage = data + size - 4, *p = data + 1;
    size_t left = size - 5;
    rp_store *st = rp_store_new(NULL);
    char name[16], id[16];
    for (int s = 0; s < 3 && left; s++) {
        snprintf(name, sizeof name, "s%d", s);
        rp_store_create(st, name, NULL, 0, NULL);
        unsigned count = *p++ % 8;
        left--;
        for (unsigned k = 0; k < count && left >= 9; k++) {
            double v;
            memcpy(&v, p + 1, 8);
            if (!isfinite(v))
                v = 1.0;
            snprintf(id, sizeof id, "i%u", p[0]);
            /* The id's byte also picks the kind. */
            rp_shape_put put;
            memset(&put, 0, sizeof put);
            put.id = id;
            switch (p[0] % 4) {
            case 0:
                put.shape.kind = RP_SHAPE_SPHERE;
                put.shape.sphere.center = (rp_vec3){v, -v, 0.5};
                put.shape.sphere.radius = fabs(v) < 1e300 ? fabs(v) : 1.0;
                break;
            case 1:
                put.shape.kind = RP_SHAPE_CAPSULE;
                put.shape.capsule.a = (rp_vec3){v, -v, 0.5};
                put.shape.capsule.b = (rp_vec3){0.5, v, -v};
                put.shape.capsule.radius = 0.25;
                break;
            case 2:
                put.shape.kind = RP_SHAPE_BOX;
                FUZZ_CHECK(rp_box_new((rp_vec3){v, -v, 0.5}, (rp_vec3){fabs(v), 0.5, 0}, v, 1, -v,
                                      0.5, &put.shape.box) == RP_OK,
                           "rp_box_new");
                break;
            default:
                put.shape.kind = RP_SHAPE_HALFSPACE;
                FUZZ_CHECK(rp_halfspace_new((rp_vec3){v, 1, -v}, v, &put.shape.halfspace) == RP_OK,
                           "rp_halfspace_new");
                break;
            }
            if (p[0] & 0x80) {
                /* As an object's shape (format 4), at a pose from v (a
                 * world shape out of range is refused: no object then). */
                char oname[8];
                snprintf(oname, sizeof oname, "o%u", p[0] % 3u);
                rp_transform pose = rp_transform_identity();
                pose.t = (rp_vec3){fabs(v) < 1e300 ? v : 0.0, 0.25, -1.0};
                rp_object_put op = {oname, pose, &put, 1};
                rp_store_put_objects(st, name, NULL, 0, &op, 1, NULL, false, NULL, NULL, NULL);
            } else {
                rp_store_put(st, name, &put, 1, NULL, false, NULL, NULL);
            }
            p += 9;
            left -= 9;
        }
    }
    models ms;
    ms.n = 0;
    const char *json = "{\"model\":\"m\"}";
    ms.m[0] = (rps_model){"m", rp_store_revision(st) + 1, json, strlen(json)};
    ms.n = 1;
    size_t n;
    rps_ids ids = {0x5eed0000u + data[1], (uint64_t)size, (uint64_t)data[1] << 32};
    uint8_t *img = image(st, rp_store_revision(st) + 1, &ids, &ms, &n);
    FUZZ_CHECK(check_load(img, n), "an image the writer made loads");
    size_t cut = ((size_t)damage[0] << 8 | damage[1]) % n;
    FUZZ_CHECK(!check_load(img, cut), "an image cut at %zu of %zu does not load", cut, n);
    size_t at = ((size_t)damage[2] << 8 | damage[3]) % n;
    img[at] ^= (uint8_t)(damage[3] | 1);
    FUZZ_CHECK(!check_load(img, n), "an image with byte %zu flipped does not load", at);
    free(img);
    rp_store_free(st);
    return 0;
}
