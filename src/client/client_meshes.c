/* SPDX-License-Identifier: MIT */
/*
 * A URDF with mesh collision geometry, from the client's files to
 * model.put (include/repose/client.h): the daemon never reads a client's
 * file system, so the client finds every <mesh filename> of the URDF's
 * collisions (urdf_scan.c), resolves it to a file as ROS tools do
 * (package://, file://, absolute, relative to the URDF), reads it and
 * sends its bytes as base64 under the filename as written.
 */
#define _POSIX_C_SOURCE 200809L
#include "client_int.h"
#include "urdf_scan.h"
#include "util/utf8.h"

#include <math.h>
#include <sys/stat.h>

/* A path buffer: PATH_MAX is not a limit every system keeps, and URIs are
 * at most 1024 bytes (the daemon's RP_URDF_URI_MAX) plus a directory. */
#define PATH_BYTES 8192

/* True when `path` names something that is not a directory (a file, or a
 * link to one): what a mesh filename can be. */
static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* Joins a and b with one '/' into buf; false when it does not fit. */
static bool join(char *buf, size_t cap, const char *a, size_t alen, const char *b)
{
    while (alen > 1 && a[alen - 1] == '/')
        alen--;
    int n = snprintf(buf, cap, "%.*s%s%s", (int)alen, a, alen && a[alen - 1] == '/' ? "" : "/", b);
    return n >= 0 && (size_t)n < cap;
}

/* The search path: the given directories, then ROS_PACKAGE_PATH's entries
 * (colon-separated; empty entries skipped).  Returns a malloc'ed array of
 * pointers into dirs and into *env_copy (malloc'ed too), NULL when out of
 * memory. */
static const char **search_path(const char *const *dirs, size_t n_dirs, size_t *n_out,
                                char **env_copy)
{
    const char *env = getenv("ROS_PACKAGE_PATH");
    *env_copy = env && *env ? strdup(env) : NULL;
    size_t n_env = 0;
    if (*env_copy)
        for (const char *p = *env_copy; *p; p++)
            n_env += *p == ':';
    const char **v = malloc((n_dirs + n_env + 2) * sizeof *v);
    if (!v || (env && *env && !*env_copy)) {
        free(v);
        free(*env_copy);
        *env_copy = NULL;
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < n_dirs; i++)
        if (dirs[i] && *dirs[i])
            v[n++] = dirs[i];
    for (char *p = *env_copy; p;) {
        char *colon = strchr(p, ':');
        if (colon)
            *colon = '\0';
        if (*p)
            v[n++] = p;
        p = colon ? colon + 1 : NULL;
    }
    *n_out = n;
    return v;
}

/* Appends the directories tried to msg (", "-separated), cut to fit. */
static void list_tried(char *msg, size_t cap, const char **dirs, size_t n)
{
    size_t used = strlen(msg);
    for (size_t i = 0; i < n && used + 1 < cap; i++) {
        int w = snprintf(msg + used, cap - used, "%s%s", i ? ", " : "", dirs[i]);
        if (w < 0)
            break;
        used += (size_t)w < cap - used ? (size_t)w : cap - used - 1;
    }
}

/* Resolves one uri (see rp_client_resolve_mesh_uri); `link` (or NULL)
 * names it in the error. */
static rp_client_error_kind resolve(const char *uri, const char *link, const char *urdf_dir,
                                    const char *const *dirs, size_t n_dirs, char **path,
                                    rp_client_error *err)
{
    *path = NULL;
    char what[1200];
    snprintf(what, sizeof what, "%s%s%s%s", uri, link ? " (link " : "", link ? link : "",
             link ? ")" : "");
    char buf[PATH_BYTES];
    if (strncmp(uri, "package://", 10) == 0) {
        const char *pkg = uri + 10, *slash = strchr(pkg, '/');
        if (!slash || slash == pkg || !slash[1])
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "%s: a package:// URI is package://PACKAGE/PATH", what);
        size_t pkg_len = (size_t)(slash - pkg);
        const char *rest = slash + 1;
        char *env_copy = NULL;
        size_t n = 0;
        const char **sp = search_path(dirs, n_dirs, &n, &env_copy);
        if (!sp)
            return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
        bool found = false;
        /* DIR/PACKAGE/PATH: DIR holds packages (ROS_PACKAGE_PATH's way). */
        for (size_t i = 0; i < n && !found; i++) {
            size_t dl = strlen(sp[i]);
            while (dl > 1 && sp[i][dl - 1] == '/')
                dl--;
            int w = snprintf(buf, sizeof buf, "%.*s%s%.*s/%s", (int)dl, sp[i],
                             sp[i][dl - 1] == '/' ? "" : "/", (int)pkg_len, pkg, rest);
            found = w >= 0 && (size_t)w < sizeof buf && is_file(buf);
        }
        /* DIR/PATH where DIR is the package itself (its basename is PACKAGE). */
        for (size_t i = 0; i < n && !found; i++) {
            size_t dl = strlen(sp[i]);
            while (dl > 1 && sp[i][dl - 1] == '/')
                dl--;
            const char *base = sp[i] + dl;
            while (base > sp[i] && base[-1] != '/')
                base--;
            found = (size_t)(sp[i] + dl - base) == pkg_len && memcmp(base, pkg, pkg_len) == 0 &&
                    join(buf, sizeof buf, sp[i], dl, rest) && is_file(buf);
        }
        rp_client_error_kind k = RP_CLIENT_OK;
        if (!found) {
            /* Cut to what rp_client_error.message holds; the start (the
             * filename and its link) matters most. */
            char msg[sizeof err->message];
            int w;
            if (n == 0) {
                w = snprintf(msg, sizeof msg,
                             "%s: not found: no package path to search (give the directory that "
                             "holds %.*s, or set ROS_PACKAGE_PATH)",
                             what, (int)pkg_len, pkg);
            } else {
                w = snprintf(msg, sizeof msg, "%s: not found under ", what);
                if (w >= 0 && (size_t)w < sizeof msg)
                    list_tried(msg, sizeof msg, sp, n);
            }
            if (w < 0)
                msg[0] = '\0';
            k = rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s", msg);
        }
        free(sp);
        free(env_copy);
        if (k != RP_CLIENT_OK)
            return k;
    } else if (strncmp(uri, "file://", 7) == 0) {
        const char *p = uri + 7;
        if (*p != '/')
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "%s: a file:// URI needs an absolute path (file:///...)", what);
        if (snprintf(buf, sizeof buf, "%s", p) >= (int)sizeof buf || !is_file(buf))
            return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s: not found: %s", what, p);
    } else if (strstr(uri, "://")) {
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "%s: only package://, file:// and file paths are resolved", what);
    } else if (uri[0] == '/') {
        if (snprintf(buf, sizeof buf, "%s", uri) >= (int)sizeof buf || !is_file(buf))
            return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s: not found", what);
    } else {
        const char *dir = urdf_dir && *urdf_dir ? urdf_dir : ".";
        if (!join(buf, sizeof buf, dir, strlen(dir), uri) || !is_file(buf))
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "%s: not found: %s (relative to the URDF's directory)", what,
                                   buf);
    }
    *path = strdup(buf);
    return *path ? RP_CLIENT_OK : rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
}

/* The directory of urdf_path, malloc'ed ("." for a bare name). */
static char *dir_of(const char *urdf_path)
{
    const char *slash = urdf_path ? strrchr(urdf_path, '/') : NULL;
    if (!slash)
        return strdup(".");
    if (slash == urdf_path)
        return strdup("/");
    return strndup(urdf_path, (size_t)(slash - urdf_path));
}

unsigned char *rp_client_read_stream_(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, used = 0;
    unsigned char *buf = malloc(cap);
    int e = 0;
    while (buf) {
        if (cap - used < 2) {
            unsigned char *nb = cap < SIZE_MAX / 2 ? realloc(buf, 2 * cap) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                e = ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + used, 1, cap - used - 1, f);
        used += got;
        if (got == 0) {
            if (ferror(f)) {
                e = errno ? errno : EIO; /* EISDIR, ... */
                free(buf);
                buf = NULL;
            }
            break;
        }
    }
    if (!buf && !e)
        e = ENOMEM;
    if (!buf) {
        errno = e;
        return NULL;
    }
    buf[used] = '\0';
    *len = used;
    return buf;
}

/* Reads the whole file at path (malloc'ed, NUL-terminated, its length in
 * *len); NULL with errno set. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = rp_client_read_stream_(f, len);
    int e = errno;
    fclose(f);
    errno = e;
    return buf;
}

void rp_client_mesh_files_free(rp_client_mesh_file *files, size_t n)
{
    for (size_t i = 0; files && i < n; i++) {
        free(files[i].uri);
        free(files[i].link);
        free(files[i].path);
        free(files[i].bytes);
    }
    free(files);
}

rp_client_error_kind rp_client_resolve_mesh_uri(const char *uri, const char *urdf_path,
                                                const char *const *package_path, size_t n_dirs,
                                                char **path, rp_client_error *err)
{
    rp_client_error_free(err);
    if (path)
        *path = NULL;
    if (!uri || !path || (!package_path && n_dirs))
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "uri, path or package_path is NULL");
    char *dir = dir_of(urdf_path);
    if (!dir)
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    rp_client_error_kind k = resolve(uri, NULL, dir, package_path, n_dirs, path, err);
    free(dir);
    return k;
}

rp_client_error_kind rp_client_resolve_meshes(const char *urdf, size_t urdf_len,
                                              const char *urdf_path,
                                              const char *const *package_path, size_t n_dirs,
                                              bool read, rp_client_mesh_file **files,
                                              size_t *n_files, rp_client_error *err)
{
    rp_client_error_free(err);
    if (files)
        *files = NULL;
    if (n_files)
        *n_files = 0;
    if (!urdf || !files || !n_files || (!package_path && n_dirs))
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "urdf, files, n_files or package_path is "
                               "NULL");
    rp_urdf_scan scan;
    char why[256];
    if (!rp_urdf_scan_(urdf, urdf_len, &scan, why, sizeof why))
        return rp_client_fail_(err,
                               strcmp(why, "out of memory") == 0 ? RP_CLIENT_NOMEM : RP_CLIENT_ARG,
                               0, "%s%s%s", urdf_path ? urdf_path : "the URDF", ": ", why);
    char *dir = dir_of(urdf_path);
    rp_client_mesh_file *v = calloc(scan.n_colls ? scan.n_colls : 1, sizeof *v);
    rp_client_error_kind k = RP_CLIENT_OK;
    if (!dir || !v)
        k = rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < scan.n_colls && k == RP_CLIENT_OK; i++) {
        const rp_urdf_scan_collision *c = &scan.colls[i];
        if (!c->mesh_uri)
            continue;
        bool seen = false; /* each filename once: model.put's meshes are keyed by it */
        for (size_t j = 0; j < n && !seen; j++)
            seen = strcmp(v[j].uri, c->mesh_uri) == 0;
        if (seen)
            continue;
        rp_client_mesh_file *f = &v[n++];
        const char *link = scan.links[c->link];
        f->uri = strdup(c->mesh_uri);
        f->link = strdup(link);
        f->line = c->mesh_line;
        if (!f->uri || !f->link) {
            k = rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
            break;
        }
        k = resolve(c->mesh_uri, link, dir, package_path, n_dirs, &f->path, err);
        if (k == RP_CLIENT_OK && read) {
            f->bytes = slurp(f->path, &f->len);
            if (!f->bytes)
                k = rp_client_fail_(err, errno == ENOMEM ? RP_CLIENT_NOMEM : RP_CLIENT_ARG, 0,
                                    "%s (link %s): cannot read %s: %s", f->uri, link, f->path,
                                    strerror(errno));
        }
    }
    free(dir);
    rp_urdf_scan_free_(&scan);
    if (k != RP_CLIENT_OK) {
        rp_client_mesh_files_free(v, n);
        return k;
    }
    *files = v;
    *n_files = n;
    return RP_CLIENT_OK;
}

/* ---- model.put params --------------------------------------------------------- */

/* The base64 (RFC 4648, with padding) of p[0..n), malloc'ed. */
static char *base64(const unsigned char *p, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n / 3 >= SIZE_MAX / 4 - 1)
        return NULL;
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned long w = (unsigned long)p[i] << 16 | (unsigned long)p[i + 1] << 8 | p[i + 2];
        *o++ = abc[w >> 18 & 63], *o++ = abc[w >> 12 & 63];
        *o++ = abc[w >> 6 & 63], *o++ = abc[w & 63];
    }
    if (i < n) {
        unsigned long w =
            (unsigned long)p[i] << 16 | (i + 1 < n ? (unsigned long)p[i + 1] << 8 : 0);
        *o++ = abc[w >> 18 & 63], *o++ = abc[w >> 12 & 63];
        *o++ = i + 1 < n ? abc[w >> 6 & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

/* Reads a document (URDF or SRDF) as text: UTF-8 without NUL bytes, as a
 * JSON string must carry it. */
static char *read_document(const char *path, const char *what, size_t *len, rp_client_error_kind *k,
                           rp_client_error *err)
{
    char *text = (char *)slurp(path, len);
    if (!text) {
        *k = rp_client_fail_(err, errno == ENOMEM ? RP_CLIENT_NOMEM : RP_CLIENT_ARG, 0,
                             "cannot read the %s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    const char *nul = memchr(text, '\0', *len);
    size_t bad = rp_utf8_invalid_at_((const unsigned char *)text, *len);
    if (nul || bad < *len) {
        *k = rp_client_fail_(err, RP_CLIENT_ARG, 0, "the %s %s is not UTF-8 text (%s at byte %zu)",
                             what, path, nul ? "a NUL byte" : "an invalid byte",
                             nul ? (size_t)(nul - text) : bad);
        free(text);
        return NULL;
    }
    return text;
}

rp_client_error_kind rp_client_urdf_params(const rp_client_urdf_files *src, struct cJSON *params,
                                           rp_client_error *err)
{
    rp_client_error_free(err);
    if (!src || !src->urdf_path || !cJSON_IsObject(params) ||
        (!src->package_path && src->n_package_path))
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "src, its urdf_path or package_path, or params is NULL");
    static const char *const taken[] = {"urdf", "srdf", "meshes", "spherize"};
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
        if (cJSON_GetObjectItemCaseSensitive(params, taken[i]))
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "params already hold \"%s\", which the URDF's files give",
                                   taken[i]);
    if (!(src->max_overshoot >= 0) || !isfinite(src->max_overshoot))
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "max_overshoot must be a finite distance >= 0 (metres)");
    size_t ulen = 0, slen = 0;
    rp_client_error_kind k = RP_CLIENT_OK;
    char *urdf = read_document(src->urdf_path, "URDF", &ulen, &k, err);
    if (!urdf)
        return k;
    char *srdf = NULL;
    if (src->srdf_path && !(srdf = read_document(src->srdf_path, "SRDF", &slen, &k, err))) {
        free(urdf);
        return k;
    }
    rp_client_mesh_file *files = NULL;
    size_t n = 0;
    k = rp_client_resolve_meshes(urdf, ulen, src->urdf_path, src->package_path, src->n_package_path,
                                 true, &files, &n, err);
    bool ok = k == RP_CLIENT_OK && cJSON_AddStringToObject(params, "urdf", urdf) &&
              (!srdf || cJSON_AddStringToObject(params, "srdf", srdf));
    free(urdf);
    free(srdf);
    if (ok && n > 0) {
        cJSON *meshes = cJSON_AddObjectToObject(params, "meshes");
        ok = meshes != NULL;
        for (size_t i = 0; i < n && ok; i++) {
            /* The key is the filename as written, which the daemon matches
             * against the URDF's; it must be UTF-8 to be JSON. */
            size_t ul = strlen(files[i].uri);
            if (rp_utf8_invalid_at_((const unsigned char *)files[i].uri, ul) < ul) {
                k = rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                    "the mesh filename of link %s is not "
                                    "UTF-8",
                                    files[i].link);
                ok = false;
                break;
            }
            char *b64 = base64(files[i].bytes, files[i].len);
            ok = b64 && cJSON_AddStringToObject(meshes, files[i].uri, b64);
            free(b64);
        }
    }
    if (ok && (src->max_spheres || src->max_overshoot > 0)) {
        cJSON *sp = cJSON_AddObjectToObject(params, "spherize");
        ok = sp &&
             (!src->max_spheres ||
              cJSON_AddNumberToObject(sp, "max_spheres", (double)src->max_spheres)) &&
             (!(src->max_overshoot > 0) ||
              cJSON_AddNumberToObject(sp, "max_overshoot", src->max_overshoot));
    }
    rp_client_mesh_files_free(files, n);
    if (k == RP_CLIENT_OK && !ok)
        k = rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    if (k != RP_CLIENT_OK)
        for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
            cJSON_DeleteItemFromObjectCaseSensitive(params, taken[i]);
    return k;
}

rp_client_error_kind rp_client_model_put_urdf_files(rp_client *c, const char *model,
                                                    const rp_client_urdf_files *src,
                                                    char **result_json, rp_client_error *err)
{
    rp_client_error_free(err);
    if (result_json)
        *result_json = NULL;
    if (!model)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "model is NULL");
    size_t ml = strlen(model);
    if (rp_utf8_invalid_at_((const unsigned char *)model, ml) < ml)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "model is not valid UTF-8");
    cJSON *params = cJSON_CreateObject();
    if (!params || !cJSON_AddStringToObject(params, "model", model)) {
        cJSON_Delete(params);
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    rp_client_error_kind k = rp_client_urdf_params(src, params, err);
    char *text = k == RP_CLIENT_OK ? cJSON_PrintUnformatted(params) : NULL;
    cJSON_Delete(params);
    if (k == RP_CLIENT_OK && !text)
        k = rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    if (k == RP_CLIENT_OK)
        k = rp_client_call(c, "model.put", text, result_json, err);
    cJSON_free(text);
    return k;
}
