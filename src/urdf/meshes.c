/* SPDX-License-Identifier: MIT */
/*
 * rp_urdf_cover_meshes (urdf.h): the <mesh> collisions of a parsed URDF
 * turned into spheres.  A link's meshes are covered together (one budget
 * of spheres per link, as DESIGN of the model puts it in proto/URDF.md,
 * "Meshes"), after each mesh is scaled and placed by its collision's
 * origin, so that the cover is in the link frame like every other shape.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh/mesh.h"
#include "repose/spherize.h"
#include "urdf/urdf_parse.h"

__attribute__((format(printf, 4, 5))) static rp_urdf_status
fail(rp_urdf_error *err, rp_urdf_status st, const rp_urdf_mesh *m, const char *fmt, ...)
{
    err->in_srdf = false;
    err->line = m->line;
    snprintf(err->where, sizeof err->where, "link[%s].collision[%zu].geometry.mesh", m->link,
             m->collision);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->reason, sizeof err->reason, fmt, ap);
    va_end(ap);
    return st;
}

static const rp_urdf_mesh_file *find_file(const rp_urdf_mesh_file *files, size_t n, const char *uri)
{
    for (size_t i = 0; i < n; i++)
        if (files[i].uri && strcmp(files[i].uri, uri) == 0)
            return &files[i];
    return NULL;
}

/* Appends mesh md, scaled and placed by m, to the link's soup. */
static bool append(double **v, size_t *nv, uint32_t **t, size_t *nt, const rp_mesh_data *md,
                   const rp_urdf_mesh *m)
{
    if (*nv + md->n_vertices > UINT32_MAX)
        return false;
    double *nvp = realloc(*v, 3 * (*nv + md->n_vertices) * sizeof **v);
    if (!nvp)
        return false;
    *v = nvp;
    uint32_t *ntp = realloc(*t, 3 * (*nt + md->n_triangles) * sizeof **t);
    if (!ntp)
        return false;
    *t = ntp;
    for (size_t i = 0; i < md->n_vertices; i++) {
        const double *p = &md->vertices[3 * i];
        rp_vec3 q = rp_transform_point(
            &m->origin, (rp_vec3){p[0] * m->scale.x, p[1] * m->scale.y, p[2] * m->scale.z});
        double *o = &(*v)[3 * (*nv + i)];
        o[0] = q.x, o[1] = q.y, o[2] = q.z;
    }
    for (size_t i = 0; i < 3 * md->n_triangles; i++)
        (*t)[3 * *nt + i] = (uint32_t)(*nv + md->triangles[i]);
    *nv += md->n_vertices;
    *nt += md->n_triangles;
    return true;
}

rp_urdf_status rp_urdf_cover_meshes(rp_urdf *u, const rp_urdf_mesh_file *files, size_t n_files,
                                    const struct rp_spherize_opts *opts, size_t max_triangles,
                                    size_t max_shapes, rp_urdf_error *err)
{
    rp_urdf_error scratch;
    err = err ? err : &scratch;
    memset(err, 0, sizeof *err);
    size_t nm = rp_urdf_mesh_count(u);
    if (!nm)
        return RP_URDF_OK;
    rp_mesh_cover *cv = calloc(nm, sizeof *cv);
    bool *done = calloc(nm, sizeof *done);
    if (!cv || !done) {
        free(cv);
        free(done);
        return RP_URDF_NOMEM;
    }
    size_t ncv = 0;
    rp_urdf_status st = RP_URDF_OK;
    for (size_t i = 0; i < nm && st == RP_URDF_OK; i++) {
        if (done[i])
            continue;
        const char *link = rp_urdf_mesh_at(u, i)->link;
        double *v = NULL;
        uint32_t *t = NULL;
        size_t nv = 0, nt = 0;
        /* Every mesh of this link (names are u's strings: compared as
         * pointers). */
        for (size_t j = i; j < nm && st == RP_URDF_OK; j++) {
            const rp_urdf_mesh *m = rp_urdf_mesh_at(u, j);
            if (m->link != link)
                continue;
            done[j] = true;
            const rp_urdf_mesh_file *f = find_file(files, n_files, m->uri);
            if (!f) {
                st = fail(err, RP_URDF_INVALID, m,
                          "mesh \"%.100s\" is not in meshes (a client reads the file and "
                          "sends its bytes under the filename as written)",
                          m->uri);
                break;
            }
            rp_mesh_data md;
            char why[256];
            rp_status ps =
                rp_mesh_parse(f->bytes, f->len, m->uri, max_triangles, &md, why, sizeof why);
            if (ps == RP_ERR_NOMEM) {
                st = RP_URDF_NOMEM;
                break;
            }
            if (ps != RP_OK) {
                bool limit = ps == RP_ERR_LIMIT;
                st = fail(err, limit ? RP_URDF_LIMIT : RP_URDF_INVALID, m, "mesh \"%.80s\": %.160s",
                          m->uri, why);
                if (limit) {
                    err->limit_max = max_triangles;
                    err->limit_name = "max_mesh_triangles";
                }
                break;
            }
            if (max_triangles && nt + md.n_triangles > max_triangles) {
                rp_mesh_data_free(&md);
                st = fail(err, RP_URDF_LIMIT, m, "link %s: its meshes have more than %zu triangles",
                          link, max_triangles);
                err->limit_max = max_triangles;
                err->limit_name = "max_mesh_triangles";
                break;
            }
            bool ok = append(&v, &nv, &t, &nt, &md, m);
            rp_mesh_data_free(&md);
            if (!ok)
                st = RP_URDF_NOMEM;
        }
        if (st == RP_URDF_OK) {
            rp_trimesh tm = {v, nv, t, nt};
            rp_spherize_result res;
            rp_status ss = rp_spherize(&tm, opts, &res);
            if (ss == RP_ERR_NOMEM)
                st = RP_URDF_NOMEM;
            else if (ss != RP_OK)
                st = fail(err, RP_URDF_INVALID, rp_urdf_mesh_at(u, i),
                          "link %s: its meshes cannot be covered with spheres (a coordinate "
                          "overflows once scaled and placed)",
                          link);
            else {
                st = rp_urdf_add_spheres(u, link, res.spheres, res.n_spheres, max_shapes);
                if (st == RP_URDF_LIMIT) {
                    fail(err, st, rp_urdf_mesh_at(u, i),
                         "more than %zu shapes with the spheres of link %s", max_shapes, link);
                    err->limit_max = max_shapes;
                    err->limit_name = "max_model_links";
                } else if (st == RP_URDF_INVALID)
                    fail(err, st, rp_urdf_mesh_at(u, i),
                         "link %s: the cover has a sphere that is not valid", link);
                cv[ncv++] = (rp_mesh_cover){link, res.n_spheres, nt, res.overshoot};
                rp_spherize_result_free(&res);
            }
        }
        free(v);
        free(t);
    }
    free(done);
    if (st != RP_URDF_OK) {
        free(cv);
        return st;
    }
    free(u->covers);
    u->covers = cv;
    u->n_covers = ncv;
    return rp_urdf_build_def_(u) ? RP_URDF_OK : RP_URDF_NOMEM;
}
