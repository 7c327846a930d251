/* SPDX-License-Identifier: MIT */
/*
 * repose-spherize: a URDF whose collisions are meshes, rewritten as a
 * "spherized" URDF that any tool reading spheres can use.
 *
 *   repose-spherize ROBOT.urdf [--srdf F] [--package-path DIR]...
 *                   [--max-spheres N] [--max-overshoot M] -o OUT.urdf
 *
 * The mesh files are found as repose-cli finds them (the client library's
 * rp_client_resolve_meshes: package:// under each --package-path DIR, then
 * $ROS_PACKAGE_PATH; other paths relative to the URDF's directory) and
 * covered in this process by the library, exactly as the daemon covers
 * them in model.put (rp_urdf_parse + rp_urdf_cover_meshes with the same
 * defaults), so the spheres written are the daemon's, bit for bit.
 *
 * The output is the input document, byte for byte, except for the mesh
 * <collision> elements: a link's first one is replaced by one <collision>
 * per sphere of the link's cover (<origin xyz> and <sphere radius>, every
 * number with "%.17g", so that it reads back as the same double), after a
 * comment naming the meshes; its other mesh collisions are removed.
 * Visuals, joints, materials, comments and the layout stay.  The result is
 * read back with rp_urdf_parse before it is written: it must have no mesh
 * left and the same spheres.
 *
 * A per-link summary (spheres, triangles, overshoot) goes to stderr.
 * Exit codes: 0 done; 1 the library refuses the robot or a mesh (the
 * message names the element and its line), or the output cannot be
 * written; 2 usage errors: bad arguments, and files that cannot be found
 * or read (the URDF, the SRDF, a mesh).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repose/client.h"
#include "repose/spherize.h"

#include "client/urdf_scan.h"
#include "urdf/urdf.h"

#ifndef REPOSE_CLI_VERSION
#define REPOSE_CLI_VERSION "unknown"
#endif

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    fputs("repose-spherize: ", stderr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: repose-spherize ROBOT.urdf [--srdf FILE] [--package-path DIR]...\n"
            "                       [--max-spheres N] [--max-overshoot M] -o OUT.urdf\n"
            "\n"
            "Covers the mesh collision geometry of ROBOT.urdf with spheres, as reposed\n"
            "does in model.put, and writes the same URDF with each link's mesh\n"
            "<collision>s replaced by one <sphere> <collision> per sphere; visuals,\n"
            "joints and comments are kept.  A summary per link goes to stderr.\n"
            "\n"
            "  -o, --output FILE   where to write the URDF (- for stdout); required\n"
            "  --srdf FILE         an SRDF, checked against the URDF as reposed would\n"
            "  --package-path DIR  where package://PKG/PATH is looked for: DIR/PKG/PATH,\n"
            "                      or DIR/PATH when DIR is named PKG; repeatable, searched\n"
            "                      in order, then $ROS_PACKAGE_PATH (colon-separated)\n"
            "  --max-spheres N     spheres per link, 1..1024 (default %d)\n"
            "  --max-overshoot M   metres: the first cover of 1, 2, 4, ... spheres within\n"
            "                      M (default 0: the smallest overshoot the budget allows)\n"
            "  -h, --help          this text\n"
            "  --version           print the version\n"
            "\n"
            "Other filenames are relative to ROBOT.urdf's directory (or file:///ABS, or\n"
            "/ABS).  Meshes: STL (binary or ASCII), OBJ, Collada (.dae).\n"
            "Exit codes: 0 done, 1 the robot or a mesh is refused (or OUT cannot be\n"
            "written), 2 bad arguments or a file that cannot be found or read.\n"
            "\n"
            "  repose-spherize tests/data/mesh_arm/mesh_arm_description/urdf/mesh_arm.urdf \\\n"
            "      --package-path tests/data/mesh_arm -o mesh_arm.spheres.urdf\n",
            RP_SPHERIZE_DEFAULT_SPHERES);
}

typedef struct args {
    const char *urdf, *srdf, *out;
    const char **dirs;
    size_t n_dirs;
    rp_spherize_opts opts;
} args;

/* Fills a from argv.  Returns -1 to go on, else an exit code. */
static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->opts = (rp_spherize_opts){RP_SPHERIZE_DEFAULT_SPHERES, 0};
    a->dirs = calloc((size_t)argc, sizeof *a->dirs);
    if (!a->dirs) {
        say("out of memory");
        return EXIT_FAIL;
    }
    bool spheres = false, overshoot = false, dashdash = false;
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (dashdash || w[0] != '-' || strcmp(w, "-") == 0) {
            if (a->urdf) {
                say("one URDF at a time: '%s' and '%s' (see --help)", a->urdf, w);
                return EXIT_USAGE;
            }
            a->urdf = w;
            continue;
        }
        if (strcmp(w, "--") == 0) {
            dashdash = true;
            continue;
        }
        if (strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(w, "--version") == 0) {
            printf("repose-spherize %s\n", REPOSE_CLI_VERSION);
            return EXIT_OK;
        }
        bool known = strcmp(w, "-o") == 0 || strcmp(w, "--output") == 0 ||
                     strcmp(w, "--srdf") == 0 || strcmp(w, "--package-path") == 0 ||
                     strcmp(w, "--max-spheres") == 0 || strcmp(w, "--max-overshoot") == 0;
        if (!known) {
            say("unknown option '%s' (see --help)", w);
            return EXIT_USAGE;
        }
        if (i + 1 >= argc || !*argv[i + 1]) {
            say("%s needs a value (see --help)", w);
            return EXIT_USAGE;
        }
        const char *v = argv[++i];
        char *end;
        errno = 0;
        if (strcmp(w, "-o") == 0 || strcmp(w, "--output") == 0) {
            if (a->out) {
                say("-o is given twice");
                return EXIT_USAGE;
            }
            a->out = v;
        } else if (strcmp(w, "--srdf") == 0) {
            if (a->srdf) {
                say("--srdf is given twice");
                return EXIT_USAGE;
            }
            a->srdf = v;
        } else if (strcmp(w, "--package-path") == 0) {
            a->dirs[a->n_dirs++] = v;
        } else if (strcmp(w, "--max-spheres") == 0) {
            unsigned long n = strtoul(v, &end, 10);
            if (spheres || errno || end == v || *end || v[0] == '-' || n < 1 || n > 1024) {
                say(spheres ? "--max-spheres is given twice"
                            : "--max-spheres must be 1..1024 (spheres per link)");
                return EXIT_USAGE;
            }
            spheres = true;
            a->opts.max_spheres = (size_t)n;
        } else {
            double d = strtod(v, &end);
            if (overshoot || errno || end == v || *end || !isfinite(d) || !(d >= 0) || d > 1e6) {
                say(overshoot ? "--max-overshoot is given twice"
                              : "--max-overshoot must be a distance in metres, 0 or more");
                return EXIT_USAGE;
            }
            overshoot = true;
            a->opts.max_overshoot = d;
        }
    }
    if (!a->urdf) {
        say("which URDF? (usage: repose-spherize ROBOT.urdf ... -o OUT.urdf; see --help)");
        return EXIT_USAGE;
    }
    if (!a->out) {
        say("where to? -o OUT.urdf is required (- for stdout)");
        return EXIT_USAGE;
    }
    return -1;
}

/* Reads the whole file (NUL-terminated, malloc'ed), its length in *len;
 * NULL with errno set.  "-" is stdin. */
static char *read_text(const char *path, size_t *len)
{
    bool in = strcmp(path, "-") == 0;
    FILE *f = in ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = (char *)rp_client_read_stream_(f, len);
    int e = errno;
    if (!in)
        fclose(f);
    errno = e;
    return buf;
}

/* Prints a refusal of rp_urdf_parse or rp_urdf_cover_meshes. */
static void say_urdf_error(const args *a, rp_urdf_status st, const rp_urdf_error *e)
{
    if (st == RP_URDF_NOMEM) {
        say("out of memory");
        return;
    }
    const char *file = e->in_srdf ? a->srdf : a->urdf;
    if (e->line)
        say("%s:%lu: %s%s%s", file, e->line, e->where, *e->where ? ": " : "", e->reason);
    else
        say("%s: %s%s%s", file, e->where, *e->where ? ": " : "", e->reason);
}

/* ---- the rewritten document ---------------------------------------------------- */

/* A growable output buffer; appends that fail set oom. */
typedef struct outbuf {
    char *p;
    size_t len, cap;
    bool oom;
} outbuf;

static void put(outbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap - b->len < n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

__attribute__((format(printf, 2, 3))) static void putf(outbuf *b, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        b->oom = true; /* never: the callers' texts are short */
    else
        put(b, buf, (size_t)n);
}

/* The blanks between the start of c's line and its '<', when only blanks
 * are there (else ""): the indentation of the elements written for it. */
static size_t indent_of(const char *doc, const rp_urdf_scan_collision *c)
{
    for (size_t i = c->line_start; i < c->start; i++)
        if (doc[i] != ' ' && doc[i] != '\t')
            return 0;
    return c->start - c->line_start;
}

/* A filename fit to quote in an XML comment: no "--" and no '-' at its end. */
static bool comment_safe(const char *s)
{
    size_t n = strlen(s);
    return !strstr(s, "--") && (n == 0 || s[n - 1] != '-');
}

/* The spheres of link `link` in the def: shapes "LINK#s0", "LINK#s1", ...
 * in order.  Returns how many, their index in def->links in idx[]. */
static size_t link_spheres(const rp_model_def *def, const char *link, size_t *idx, size_t cap)
{
    size_t n = 0, ll = strlen(link);
    for (size_t i = 0; i < def->n_links && n < cap; i++) {
        const char *id = def->links[i].id;
        if (def->shape_links && strcmp(def->shape_links[i], link) == 0 &&
            strncmp(id, link, ll) == 0 && strncmp(id + ll, "#s", 2) == 0 &&
            def->links[i].shape.kind == RP_SHAPE_SPHERE)
            idx[n++] = i;
    }
    return n;
}

/* Writes the document with each covered link's mesh collisions replaced
 * by its spheres into *b.  False (after a message) when the scan does not
 * see the meshes the library saw. */
static bool rewrite(const args *a, const char *doc, size_t len, const rp_urdf *u,
                    const rp_urdf_scan *scan, outbuf *b)
{
    const rp_model_def *def = rp_urdf_def(u);
    /* The scan and the library must agree on every mesh collision: the
     * one finds where they are, the other what they become. */
    size_t k = 0;
    for (size_t i = 0; i < scan->n_colls; i++) {
        const rp_urdf_scan_collision *c = &scan->colls[i];
        if (!c->mesh_uri)
            continue;
        const rp_urdf_mesh *m = rp_urdf_mesh_at(u, k++);
        if (!m || strcmp(m->link, scan->links[c->link]) != 0 || m->collision != c->index ||
            strcmp(m->uri, c->mesh_uri) != 0) {
            say("%s:%lu: cannot rewrite this <collision>: the document is not read the same "
                "way as the library reads it",
                a->urdf, c->line);
            return false;
        }
    }
    if (k != rp_urdf_mesh_count(u)) {
        say("%s: cannot rewrite: %zu mesh collisions found, the library read %zu", a->urdf, k,
            rp_urdf_mesh_count(u));
        return false;
    }
    size_t *idx = malloc((def->n_links ? def->n_links : 1) * sizeof *idx);
    if (!idx) {
        b->oom = true;
        return false;
    }
    size_t at = 0; /* doc[0..at) has been written */
    for (size_t i = 0; i < scan->n_colls; i++) {
        const rp_urdf_scan_collision *c = &scan->colls[i];
        if (!c->mesh_uri)
            continue;
        const char *link = scan->links[c->link];
        bool first = true; /* the link's first mesh collision */
        for (size_t j = 0; j < i && first; j++)
            first = !(scan->colls[j].mesh_uri && scan->colls[j].link == c->link);
        size_t ind = indent_of(doc, c);
        if (!first) {
            /* Removed, with its line when it has the line to itself. */
            size_t from = ind || c->line_start == c->start ? c->line_start : c->start;
            size_t to = c->end;
            bool own_line = ind || c->line_start == c->start;
            while (own_line && to < len && (doc[to] == ' ' || doc[to] == '\t'))
                to++;
            if (own_line && to < len && doc[to] == '\n')
                to++;
            else if (own_line && to + 1 < len && doc[to] == '\r' && doc[to + 1] == '\n')
                to += 2;
            else
                from = c->start, to = c->end;
            put(b, doc + at, from - at);
            at = to;
            continue;
        }
        put(b, doc + at, c->start - at);
        at = c->end;
        const char *pad = doc + c->line_start;
        const rp_mesh_cover *cv = NULL;
        for (size_t j = 0; j < def->n_mesh_covers && !cv; j++)
            if (strcmp(def->mesh_covers[j].link, link) == 0)
                cv = &def->mesh_covers[j];
        size_t n = link_spheres(def, link, idx, def->n_links);
        /* The comment names the meshes replaced (every mesh of the link). */
        putf(b, "<!-- repose-spherize: %zu sphere%s covering %zu triangles of", n,
             n == 1 ? "" : "s", cv ? cv->triangles : (size_t)0);
        for (size_t j = i; j < scan->n_colls; j++) {
            const rp_urdf_scan_collision *o = &scan->colls[j];
            if (o->mesh_uri && o->link == c->link)
                putf(b, " %.400s", comment_safe(o->mesh_uri) ? o->mesh_uri : "(a mesh)");
        }
        putf(b, ", overshoot %.3g m -->", cv ? cv->overshoot : 0.0);
        for (size_t j = 0; j < n; j++) {
            const rp_sphere *s = &def->links[idx[j]].shape.sphere;
            put(b, "\n", 1);
            put(b, pad, ind);
            putf(b, "<collision>\n");
            put(b, pad, ind);
            putf(b, "  <origin xyz=\"%.17g %.17g %.17g\"/>\n", s->center.x, s->center.y,
                 s->center.z);
            put(b, pad, ind);
            putf(b, "  <geometry><sphere radius=\"%.17g\"/></geometry>\n", s->radius);
            put(b, pad, ind);
            putf(b, "</collision>");
        }
    }
    put(b, doc + at, len - at);
    free(idx);
    return !b->oom;
}

/* Reads the written document back: no meshes, and for every link the
 * spheres of `u`, bit for bit, in order.  False after a message. */
static bool check_output(const args *a, const outbuf *b, const char *srdf, size_t srdf_len,
                         const rp_urdf *u)
{
    rp_urdf *v = NULL;
    rp_urdf_error e;
    rp_urdf_status st = rp_urdf_parse(b->p, b->len, srdf, srdf_len, NULL, &v, &e);
    if (st != RP_URDF_OK) {
        say("%s: the URDF written does not read back: line %lu: %s", a->out, e.line, e.reason);
        return false;
    }
    bool ok = rp_urdf_mesh_count(v) == 0;
    const rp_model_def *du = rp_urdf_def(u), *dv = rp_urdf_def(v);
    size_t *iu = malloc((du->n_links + 1) * sizeof *iu);
    for (size_t i = 0; ok && iu && i < du->n_mesh_covers; i++) {
        const char *link = du->mesh_covers[i].link;
        size_t n = link_spheres(du, link, iu, du->n_links), found = 0;
        for (size_t k = 0; ok && k < dv->n_links; k++) {
            if (strcmp(dv->shape_links[k], link) != 0 || dv->links[k].shape.kind != RP_SHAPE_SPHERE)
                continue;
            /* The link's other shapes (primitives kept as they were)
             * come first or last; the spheres are consecutive. */
            const rp_sphere *s = &dv->links[k].shape.sphere, *t;
            if (found < n) {
                t = &du->links[iu[found]].shape.sphere;
                if (memcmp(&s->center, &t->center, sizeof s->center) == 0 &&
                    memcmp(&s->radius, &t->radius, sizeof s->radius) == 0)
                    found++;
            }
        }
        ok = found == n;
    }
    if (!iu)
        ok = false;
    free(iu);
    rp_urdf_free(v);
    if (!ok)
        say("%s: the URDF written does not read back as the same spheres", a->out);
    return ok;
}

int main(int argc, char **argv)
{
    args a;
    int code = parse_args(argc, argv, &a);
    if (code >= 0) {
        free(a.dirs);
        return code;
    }
    size_t ulen = 0, slen = 0;
    char *urdf = read_text(a.urdf, &ulen), *srdf = NULL;
    if (!urdf) {
        say("cannot read the URDF %s: %s", a.urdf, strerror(errno));
        free(a.dirs);
        return EXIT_USAGE;
    }
    if (a.srdf && !(srdf = read_text(a.srdf, &slen))) {
        say("cannot read the SRDF %s: %s", a.srdf, strerror(errno));
        free(urdf);
        free(a.dirs);
        return EXIT_USAGE;
    }
    rp_urdf *u = NULL;
    rp_urdf_error e;
    rp_client_mesh_file *files = NULL;
    size_t n_files = 0;
    rp_urdf_mesh_file *mf = NULL;
    rp_urdf_scan scan = {0};
    outbuf out = {NULL, 0, 0, false};
    rp_client_error cerr = RP_CLIENT_ERROR_INIT;
    rp_urdf_status st = rp_urdf_parse(urdf, ulen, srdf, slen, NULL, &u, &e);
    code = EXIT_FAIL;
    if (st != RP_URDF_OK) {
        say_urdf_error(&a, st, &e);
        goto done;
    }
    /* Relative filenames are relative to the URDF file (stdin: here). */
    const char *anchor = strcmp(a.urdf, "-") == 0 ? NULL : a.urdf;
    if (rp_client_resolve_meshes(urdf, ulen, anchor, a.dirs, a.n_dirs, true, &files, &n_files,
                                 &cerr) != RP_CLIENT_OK) {
        say("%s", cerr.message);
        code = cerr.kind == RP_CLIENT_ARG ? EXIT_USAGE : EXIT_FAIL;
        goto done;
    }
    mf = calloc(n_files ? n_files : 1, sizeof *mf);
    if (!mf) {
        say("out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_files; i++)
        mf[i] = (rp_urdf_mesh_file){files[i].uri, files[i].bytes, files[i].len};
    /* No limits: this is the user's own machine, and the budget is theirs. */
    st = rp_urdf_cover_meshes(u, mf, n_files, &a.opts, 0, 0, &e);
    if (st != RP_URDF_OK) {
        say_urdf_error(&a, st, &e);
        goto done;
    }
    char why[256];
    if (!rp_urdf_scan_(urdf, ulen, &scan, why, sizeof why)) {
        say("%s: %s", a.urdf, why);
        goto done;
    }
    if (!rewrite(&a, urdf, ulen, u, &scan, &out)) {
        if (out.oom)
            say("out of memory");
        goto done;
    }
    if (!check_output(&a, &out, srdf, slen, u))
        goto done;
    bool to_stdout = strcmp(a.out, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(a.out, "wb");
    if (!f) {
        say("cannot write %s: %s", a.out, strerror(errno));
        goto done;
    }
    bool wrote = fwrite(out.p, 1, out.len, f) == out.len;
    wrote = (to_stdout ? fflush(f) == 0 : fclose(f) == 0) && wrote;
    if (!wrote) {
        say("cannot write %s: %s", a.out, strerror(errno));
        if (!to_stdout)
            remove(a.out);
        goto done;
    }
    const rp_model_def *def = rp_urdf_def(u);
    size_t total_s = 0, total_t = 0;
    for (size_t i = 0; i < def->n_mesh_covers; i++) {
        const rp_mesh_cover *cv = &def->mesh_covers[i];
        fprintf(stderr, "%-24s %4zu spheres  %7zu triangles  overshoot %.4f m\n", cv->link,
                cv->spheres, cv->triangles, cv->overshoot);
        total_s += cv->spheres;
        total_t += cv->triangles;
    }
    fprintf(stderr, "repose-spherize: %zu links covered, %zu spheres for %zu triangles -> %s\n",
            def->n_mesh_covers, total_s, total_t, to_stdout ? "stdout" : a.out);
    code = EXIT_OK;
done:
    free(out.p);
    rp_urdf_scan_free_(&scan);
    free(mf);
    rp_client_mesh_files_free(files, n_files);
    rp_client_error_free(&cerr);
    rp_urdf_free(u);
    free(srdf);
    free(urdf);
    free(a.dirs);
    return code;
}
