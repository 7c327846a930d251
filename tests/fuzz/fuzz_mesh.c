/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the mesh file reader (src/mesh/load.c, rp_mesh_parse over
 * assimp), the one parser of URDF <mesh> bytes the daemon runs on what a
 * client sends (model.put's meshes, proto/PROTOCOL.md).
 *
 * The first input byte picks the format the file's name says (STL, OBJ,
 * Collada, or a name with no known extension); the rest is the file.  The
 * reader runs with a triangle limit.  Invariants: it returns RP_OK,
 * RP_ERR_INVALID_ARG, RP_ERR_LIMIT or RP_ERR_NOMEM only; a refusal leaves the result
 * empty and gives a non-empty printable-ASCII reason; an accepted file
 * has 1..limit triangles, every index below the vertex count, every
 * coordinate finite; reading the same bytes twice gives the same soup.
 *
 * rp_mesh_parse runs the library in a child process, so what a file does
 * to assimp (5.2 reads out of bounds on some Collada files, found here)
 * becomes a refusal: this target checks that the caller always gets a
 * clean answer, and fuzzes repose's side (the checks before the library,
 * the pipe back).  Coverage inside the child is not seen.  With
 * FUZZ_MESH_DIRECT set in the environment it calls rp_mesh_parse_direct
 * instead, to fuzz the library itself (not run by CI: its findings are
 * assimp's).
 */
#include "fuzz_util.h"

#include "mesh/mesh.h"

#define LIMIT 200000

/* assimp (C++) may leak what it built on a file it refuses; repose's own
 * code is C and allocates nothing with operator new, so LeakSanitizer
 * leaves out exactly the leaks whose allocation went through libstdc++.
 * (A leak reachable from a client is kept from assimp in load.c once
 * found: the NUL bytes of a text file.) */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libstdc++.so\n";
}

static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const names[] = {"m.stl", "package://p/m.OBJ", "dir/m.dae", "m.ply"};
    const char *uri = names[data[0] % 4];
    rp_mesh_data m, again;
    char why[256], why2[256];
    static int direct = -1;
    if (direct < 0)
        direct = getenv("FUZZ_MESH_DIRECT") != NULL;
    rp_status (*parse)(const void *, size_t, const char *, size_t, rp_mesh_data *, char *, size_t) =
        direct ? rp_mesh_parse_direct : rp_mesh_parse;
    rp_status st = parse(data + 1, size - 1, uri, LIMIT, &m, why, sizeof why);
    FUZZ_CHECK(st == RP_OK || st == RP_ERR_INVALID_ARG || st == RP_ERR_LIMIT || st == RP_ERR_NOMEM,
               "status %d", st);
    if (st != RP_OK) {
        FUZZ_CHECK(!m.vertices && !m.triangles && !m.n_vertices && !m.n_triangles,
                   "a refusal left a result");
        FUZZ_CHECK(why[0] && printable(why), "reason \"%s\"", why);
        return 0;
    }
    FUZZ_CHECK(m.n_triangles >= 1 && m.n_triangles <= LIMIT, "%zu triangles", m.n_triangles);
    for (size_t i = 0; i < 3 * m.n_triangles; i++)
        FUZZ_CHECK(m.triangles[i] < m.n_vertices, "index %u of %zu vertices", m.triangles[i],
                   m.n_vertices);
    for (size_t i = 0; i < 3 * m.n_vertices; i++)
        FUZZ_CHECK(isfinite(m.vertices[i]), "coordinate %zu not finite", i);
    rp_status st2 = parse(data + 1, size - 1, uri, LIMIT, &again, why2, sizeof why2);
    FUZZ_CHECK(
        st2 == RP_OK && again.n_vertices == m.n_vertices && again.n_triangles == m.n_triangles &&
            memcmp(again.vertices, m.vertices, 3 * m.n_vertices * sizeof *m.vertices) == 0 &&
            memcmp(again.triangles, m.triangles, 3 * m.n_triangles * sizeof *m.triangles) == 0,
        "a second read differs");
    rp_mesh_data_free(&again);
    rp_mesh_data_free(&m);
    return 0;
}
