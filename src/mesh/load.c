/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* pipe2 */
/*
 * rp_mesh_parse (mesh.h): assimp's C interface, from memory.  The node
 * tree is walked with an explicit stack (a hostile file may nest deeply)
 * and every mesh instance is copied out with its accumulated transform.
 */
#include "mesh/mesh.h"

#include <assimp/cimport.h>
#include <assimp/config.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* assimp's C interface keeps its last error and its property stores in
 * globals: one import at a time. */
static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;

const char *rp_mesh_format(const char *uri)
{
    const char *dot = uri ? strrchr(uri, '.') : NULL;
    if (!dot || strchr(dot, '/'))
        return NULL;
    static const char *const known[] = {"stl", "obj", "dae"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcasecmp(dot + 1, known[i]) == 0)
            return known[i];
    return NULL;
}

static rp_status refuse(char *why, size_t cap, const char *msg)
{
    snprintf(why, cap, "%s", msg);
    return RP_ERR_INVALID_ARG;
}

/* Nodes visited at most (instances of one mesh in many nodes multiply the
 * work: a file of a few kilobytes could otherwise name a mesh a million
 * times). */
#define MAX_NODES 65536u

typedef struct walk_item {
    const struct aiNode *node;
    struct aiMatrix4x4 m; /* the node's transform in the file's frame */
} walk_item;

static struct aiMatrix4x4 mul(const struct aiMatrix4x4 *a, const struct aiMatrix4x4 *b)
{
    const float *x = &a->a1, *y = &b->a1;
    struct aiMatrix4x4 r;
    float *z = &r.a1;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            z[4 * i + j] = x[4 * i] * y[j] + x[4 * i + 1] * y[4 + j] + x[4 * i + 2] * y[8 + j] +
                           x[4 * i + 3] * y[12 + j];
    return r;
}

/* Counts what the walk will copy (triangles, vertices) without copying. */
typedef struct tally {
    size_t tris, verts, nodes;
} tally;

static rp_status walk(const struct aiScene *sc, rp_mesh_data *out, tally *t, bool copy,
                      size_t max_triangles, char *why, size_t cap)
{
    size_t cap_stack = 64, n = 0;
    walk_item *stack = malloc(cap_stack * sizeof *stack);
    if (!stack)
        return RP_ERR_NOMEM;
    stack[n++] = (walk_item){sc->mRootNode, sc->mRootNode->mTransformation};
    rp_status st = RP_OK;
    size_t vbase = 0, tri = 0;
    while (n && st == RP_OK) {
        walk_item it = stack[--n];
        if (++t->nodes > MAX_NODES) {
            st = refuse(why, cap, "the file has more than 65536 nodes");
            break;
        }
        for (unsigned k = 0; k < it.node->mNumMeshes && st == RP_OK; k++) {
            unsigned mi = it.node->mMeshes[k];
            if (mi >= sc->mNumMeshes)
                continue;
            const struct aiMesh *m = sc->mMeshes[mi];
            size_t faces = 0;
            for (unsigned f = 0; f < m->mNumFaces; f++)
                faces += m->mFaces[f].mNumIndices == 3;
            if (!faces)
                continue;
            if (!copy) {
                t->tris += faces;
                t->verts += m->mNumVertices;
                if (max_triangles && t->tris > max_triangles) {
                    snprintf(why, cap, "the file has more than %zu triangles", max_triangles);
                    st = RP_ERR_LIMIT;
                }
                continue;
            }
            const struct aiMatrix4x4 *a = &it.m;
            for (unsigned v = 0; v < m->mNumVertices; v++) {
                const struct aiVector3D *p = &m->mVertices[v];
                double x = p->x, y = p->y, z = p->z;
                double *o = &out->vertices[3 * (vbase + v)];
                o[0] = a->a1 * x + a->a2 * y + a->a3 * z + a->a4;
                o[1] = a->b1 * x + a->b2 * y + a->b3 * z + a->b4;
                o[2] = a->c1 * x + a->c2 * y + a->c3 * z + a->c4;
                if (!isfinite(o[0]) || !isfinite(o[1]) || !isfinite(o[2]))
                    st = refuse(why, cap,
                                "a vertex is not finite (or overflows once "
                                "the file's transforms are applied)");
            }
            for (unsigned f = 0; f < m->mNumFaces; f++) {
                const struct aiFace *face = &m->mFaces[f];
                if (face->mNumIndices != 3)
                    continue;
                for (int c = 0; c < 3; c++) {
                    unsigned idx = face->mIndices[c];
                    if (idx >= m->mNumVertices) {
                        st = refuse(why, cap, "a face names a vertex the mesh lacks");
                        break;
                    }
                    out->triangles[3 * tri + (size_t)c] = (uint32_t)(vbase + idx);
                }
                tri++;
            }
            vbase += m->mNumVertices;
        }
        for (unsigned c = 0; c < it.node->mNumChildren && st == RP_OK; c++) {
            if (n == cap_stack) {
                walk_item *bigger = realloc(stack, 2 * cap_stack * sizeof *stack);
                if (!bigger) {
                    st = RP_ERR_NOMEM;
                    break;
                }
                stack = bigger;
                cap_stack *= 2;
            }
            const struct aiNode *child = it.node->mChildren[c];
            stack[n++] = (walk_item){child, mul(&it.m, &child->mTransformation)};
        }
    }
    free(stack);
    return st;
}

static rp_status extract(const struct aiScene *sc, size_t max_triangles, rp_mesh_data *out,
                         char *why, size_t cap)
{
    if (!sc->mRootNode || !sc->mNumMeshes)
        return refuse(why, cap, "the file has no mesh");
    tally t = {0, 0, 0};
    rp_status st = walk(sc, out, &t, false, max_triangles, why, cap);
    if (st != RP_OK)
        return st;
    if (!t.tris)
        return refuse(why, cap, "the file has no triangles");
    if (t.verts > UINT32_MAX)
        return refuse(why, cap, "the file has more than 2^32 vertices");
    out->vertices = malloc(3 * t.verts * sizeof *out->vertices);
    out->triangles = malloc(3 * t.tris * sizeof *out->triangles);
    if (!out->vertices || !out->triangles)
        return RP_ERR_NOMEM;
    out->n_vertices = t.verts;
    out->n_triangles = t.tris;
    t = (tally){0, 0, 0};
    return walk(sc, out, &t, true, 0, why, cap);
}

/* The library's last error as a sentence for a client: printable ASCII
 * only (it may quote the file), without the name assimp gives a file read
 * from memory ("$$$___magic___$$$.stl"). */
static void library_error(char *out, size_t cap)
{
    static const char magic[] = "$$$___magic___$$$";
    const char *e = aiGetErrorString();
    if (!e || !*e)
        e = "unknown error";
    size_t o = 0;
    while (*e && o + 1 < cap) {
        if (strncmp(e, " for $", 6) == 0 && strncmp(e + 5, magic, sizeof magic - 1) == 0)
            e += 5;
        if (strncmp(e, magic, sizeof magic - 1) == 0) {
            e += sizeof magic - 1; /* and the extension after it */
            while (*e == '.' || (*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z'))
                e++;
            continue;
        }
        unsigned char ch = (unsigned char)*e++;
        out[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    while (o && (out[o - 1] == '.' || out[o - 1] == ' '))
        o--;
    out[o] = '\0';
}

static rp_status parse_here(const void *bytes, size_t n, const char *uri, size_t max_triangles,
                            rp_mesh_data *out, char *why, size_t cap, bool lock)
{
    memset(out, 0, sizeof *out);
    why[0] = '\0';
    const char *fmt = rp_mesh_format(uri);
    if (!fmt)
        return refuse(why, cap,
                      "the file name must end in .stl, .obj or .dae (the formats repose reads)");
    if (!bytes || n == 0)
        return refuse(why, cap, "the file is empty");
    if (n > UINT32_MAX)
        return refuse(why, cap, "the file is larger than 4 GiB");
    /* Text formats hold no NUL byte; assimp 5.2 leaks what it built when
     * an ASCII STL holds one (found by tests/fuzz/fuzz_mesh.c), so such a
     * file never reaches it.  A binary STL is told by its size: 84 bytes
     * of header and count, then 50 bytes a triangle. */
    bool binary_stl = false;
    if (strcmp(fmt, "stl") == 0 && n >= 84) {
        const unsigned char *b = bytes;
        uint64_t count =
            (uint64_t)b[80] | (uint64_t)b[81] << 8 | (uint64_t)b[82] << 16 | (uint64_t)b[83] << 24;
        binary_stl = 84 + 50 * count == n;
    }
    if (!binary_stl && memchr(bytes, 0, n))
        return refuse(why, cap,
                      strcmp(fmt, "stl") == 0
                          ? "the STL file is neither binary (its size is not 84 bytes + 50 a "
                            "triangle of its count) nor ASCII (it holds a NUL byte)"
                          : "a text mesh file (OBJ, Collada) holds a NUL byte");
    if (lock)
        pthread_mutex_lock(&lib_lock);
    struct aiPropertyStore *props = aiCreatePropertyStore();
    /* ROS's readers ignore a Collada file's up_axis: so does repose. */
    aiSetImportPropertyInteger(props, AI_CONFIG_IMPORT_COLLADA_IGNORE_UP_DIRECTION, 1);
    const struct aiScene *sc = aiImportFileFromMemoryWithProperties(
        bytes, (unsigned)n, aiProcess_Triangulate | aiProcess_ValidateDataStructure, fmt, props);
    rp_status st;
    if (!sc) {
        char e[160];
        library_error(e, sizeof e);
        snprintf(why, cap, "the %s file cannot be read: %s",
                 strcmp(fmt, "dae") == 0   ? "Collada"
                 : strcmp(fmt, "obj") == 0 ? "OBJ"
                                           : "STL",
                 e);
        st = RP_ERR_INVALID_ARG;
    } else {
        st = extract(sc, max_triangles, out, why, cap);
        aiReleaseImport(sc);
    }
    aiReleasePropertyStore(props);
    if (lock)
        pthread_mutex_unlock(&lib_lock);
    if (st != RP_OK) {
        rp_mesh_data_free(out);
        if (st == RP_ERR_NOMEM && !why[0])
            snprintf(why, cap, "out of memory");
    }
    return st;
}

rp_status rp_mesh_parse_direct(const void *bytes, size_t n, const char *uri, size_t max_triangles,
                               rp_mesh_data *out, char *why, size_t cap)
{
    return parse_here(bytes, n, uri, max_triangles, out, why, cap, true);
}

void rp_mesh_data_free(rp_mesh_data *m)
{
    if (!m)
        return;
    free(m->vertices);
    free(m->triangles);
    memset(m, 0, sizeof *m);
}

/* ---- the reader in a child process ------------------------------------------ */

/* What the child writes to its pipe: this header, the reason (why_len
 * bytes), then, on RP_OK, 9 doubles a triangle (its corners, a soup). */
typedef struct child_header {
    uint32_t status; /* rp_status */
    uint32_t why_len;
    uint64_t n_triangles;
} child_header;

static bool write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

static bool read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* Seconds of CPU and bytes of address space the child may take: a file
 * that makes the library loop or balloon ends the child, not the caller. */
#define CHILD_CPU_S 60
#define CHILD_WALL_S 120
#define CHILD_AS_BYTES ((rlim_t)8 << 30)

/* clang spells "built with a sanitizer" its own way. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define RP_SANITIZED 1
#endif
#endif

static void child(int fd, const void *bytes, size_t n, const char *uri, size_t max_triangles)
{
    /* A crash here ends this process, plainly: none of the parent's
     * handlers (a sanitizer's, a fuzzer's, the caller's) runs in it. */
    static const int fatal[] = {SIGSEGV, SIGBUS,  SIGFPE,  SIGILL, SIGABRT,
                                SIGALRM, SIGXCPU, SIGTERM, SIGINT, SIGPIPE};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(fatal[i], &sa, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct rlimit cpu = {CHILD_CPU_S, CHILD_CPU_S};
    setrlimit(RLIMIT_CPU, &cpu);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !defined(RP_SANITIZED)
    /* (Not under a sanitizer: its shadow memory needs the address space.) */
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 &&
        (as.rlim_cur == RLIM_INFINITY || as.rlim_cur > CHILD_AS_BYTES)) {
        as.rlim_cur = CHILD_AS_BYTES;
        setrlimit(RLIMIT_AS, &as);
    }
#endif
    rp_mesh_data m;
    char why[256];
    /* The child is single-threaded: the lock, which another thread of
     * the parent may have held at the fork, is not taken. */
    alarm(CHILD_WALL_S);
    /* (tests/unit/test_mesh.c: the reader crashing, on demand.) */
    if (getenv("REPOSE_TEST_MESH_READER_ABORT"))
        abort();
    rp_status st = parse_here(bytes, n, uri, max_triangles, &m, why, sizeof why, false);
    child_header h = {(uint32_t)st, st == RP_OK ? 0 : (uint32_t)strlen(why),
                      st == RP_OK ? m.n_triangles : 0};
    bool ok = write_all(fd, &h, sizeof h) && write_all(fd, why, h.why_len);
    double tri[9];
    for (size_t t = 0; ok && t < h.n_triangles; t++) {
        for (int c = 0; c < 3; c++)
            memcpy(&tri[3 * c], &m.vertices[3 * (size_t)m.triangles[3 * t + (size_t)c]],
                   3 * sizeof(double));
        ok = write_all(fd, tri, sizeof tri);
    }
    _exit(ok ? 0 : 3);
}

rp_status rp_mesh_parse(const void *bytes, size_t n, const char *uri, size_t max_triangles,
                        rp_mesh_data *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    why[0] = '\0';
    /* What needs no library is answered here (and is the same answer). */
    if (!rp_mesh_format(uri) || !bytes || n == 0)
        return rp_mesh_parse_direct(bytes, n, uri, max_triangles, out, why, cap);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(why, cap, "cannot start the mesh reader: %s", strerror(errno));
        return errno == ENOMEM || errno == EMFILE || errno == ENFILE ? RP_ERR_NOMEM
                                                                     : RP_ERR_INVALID_ARG;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        snprintf(why, cap, "cannot start the mesh reader: %s", strerror(e));
        return RP_ERR_NOMEM;
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], bytes, n, uri, max_triangles);
    }
    close(fds[1]);
    child_header h;
    rp_status st = RP_OK;
    bool got = read_all(fds[0], &h, sizeof h);
    char text[256] = "";
    if (got && h.status != RP_OK) {
        got = h.why_len < sizeof text && read_all(fds[0], text, h.why_len);
        st = h.status == RP_ERR_NOMEM || h.status == RP_ERR_LIMIT ? (rp_status)h.status
                                                                  : RP_ERR_INVALID_ARG;
        if (got)
            snprintf(why, cap, "%s", text);
    } else if (got) {
        got = h.n_triangles >= 1 && (!max_triangles || h.n_triangles <= max_triangles) &&
              h.n_triangles <= UINT32_MAX / 3;
        if (got) {
            size_t nt = (size_t)h.n_triangles;
            out->vertices = malloc(9 * nt * sizeof *out->vertices);
            out->triangles = malloc(3 * nt * sizeof *out->triangles);
            if (!out->vertices || !out->triangles) {
                st = RP_ERR_NOMEM;
                snprintf(why, cap, "out of memory");
            } else {
                got = read_all(fds[0], out->vertices, 9 * nt * sizeof *out->vertices);
                for (size_t i = 0; i < 9 * nt && got; i++)
                    got = isfinite(out->vertices[i]);
                for (size_t i = 0; i < 3 * nt; i++)
                    out->triangles[i] = (uint32_t)i;
                out->n_vertices = 3 * nt;
                out->n_triangles = nt;
            }
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (st == RP_OK && (!got || !clean)) {
        /* The library crashed, ran out of its limits, or spoke nonsense. */
        char how[64];
        if (WIFSIGNALED(status))
            snprintf(how, sizeof how, "signal %d", WTERMSIG(status));
        else
            snprintf(how, sizeof how, "exit %d", WEXITSTATUS(status));
        snprintf(why, cap,
                 "the mesh reader (assimp) failed on this file (%s): it is malformed or beyond "
                 "the reader's limits",
                 how);
        st = RP_ERR_INVALID_ARG;
    }
    if (st != RP_OK)
        rp_mesh_data_free(out);
    return st;
}
