// SPDX-License-Identifier: MIT
/*
 * fcl_box_bench — sphere-box and capsule-box distance: repose's exact
 * kernels (rp_sphere_box_signed_distance, rp_capsule_box_signed_distance)
 * against FCL 0.7's fcl::distance on the same pairs, nanoseconds per call;
 * and capsule-capsule, kernel against kernel (below).
 * Optional: built only when FCL is installed (bench/CMakeLists.txt).
 *
 * Pairs (fixed seed, generated up front): boxes with centres in [0, 1]^3,
 * half extents in [0.02, 0.3] m and a uniformly random rotation; spheres
 * and capsule first ends uniform in [0, 1]^3, capsule axes of random
 * direction and length in [0.05, 0.3] m, radii in [0.01, 0.05] m.  About a
 * third of the pairs overlap.  FCL gets each shape once, as a
 * CollisionObject with its transform (a capsule centred on its axis, along
 * the rotated z axis), and the default DistanceRequest (GJK on libccd;
 * distance 0 for overlapping pairs, where repose reports minus the depth).
 * Both are timed over every pair, several passes; the median pass is
 * reported.  The separated pairs' distances are compared: they must agree
 * to 1e-6 m (FCL's GJK tolerance), and the count that do not is printed.
 *
 * Capsule-capsule: rp_capsule_capsule_signed_distance against FCL's own
 * kernel, fcl::detail::capsuleCapsuleDistance (what fcl::distance calls for
 * two capsules, without the dispatch), on geometry_bench's pairs (the same
 * seed and draws: ends uniform in [0, 1]^3, axes of random direction and
 * length in [0, 0.3] m, radii in [0, 0.05] m).  FCL gets each capsule as
 * its radius, length and pose (centre, z along the axis), made up front.
 * The two kernels alternate pass by pass in one run, each over every pair;
 * the median pass is reported.  FCL's distance of overlapping capsules is
 * a signed depth as ours: every pair is compared.
 *
 * Usage: fcl_box_bench [--pairs N] [--passes N]
 */
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/capsule.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/narrowphase/collision_object.h>
#include <fcl/narrowphase/detail/primitive_shape_algorithm/capsule_capsule.h>
#include <fcl/narrowphase/distance.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "repose/geometry.h"

namespace {

uint64_t g_state = 0x5eed0f2e905e2024ull;

/* splitmix64 in [0, 1) from *st (bench_rng.h's rng_unit, draw for draw). */
double unit_from(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}

double unit()
{
    return unit_from(&g_state);
}

double uniform(double lo, double hi)
{
    return lo + (hi - lo) * unit();
}

rp_vec3 point()
{
    return rp_vec3{unit(), unit(), unit()};
}

rp_vec3 direction()
{
    for (;;) {
        rp_vec3 v{uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)};
        double n = std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
        if (n > 0.1 && n <= 1)
            return rp_vec3{v.x / n, v.y / n, v.z / n};
    }
}

struct Pair {
    rp_box box;
    rp_capsule cap; // a == b for a sphere
    fcl::CollisionObjectd *fbox, *fshape;
};

fcl::Transform3d box_tf(const rp_box &b)
{
    fcl::Transform3d tf = fcl::Transform3d::Identity();
    tf.linear() =
        fcl::Quaterniond(b.rotation.w, b.rotation.x, b.rotation.y, b.rotation.z).toRotationMatrix();
    tf.translation() = fcl::Vector3d(b.center.x, b.center.y, b.center.z);
    return tf;
}

fcl::Transform3d capsule_tf(const rp_capsule &c)
{
    fcl::Vector3d a(c.a.x, c.a.y, c.a.z), b(c.b.x, c.b.y, c.b.z);
    fcl::Transform3d tf = fcl::Transform3d::Identity();
    fcl::Vector3d d = b - a;
    if (d.norm() > 0)
        tf.linear() = fcl::Quaterniond::FromTwoVectors(fcl::Vector3d::UnitZ(), d.normalized())
                          .toRotationMatrix();
    tf.translation() = 0.5 * (a + b);
    return tf;
}

std::vector<Pair> make_pairs(size_t n, bool spheres)
{
    std::vector<Pair> v(n);
    for (auto &p : v) {
        rp_vec3 h{uniform(0.02, 0.3), uniform(0.02, 0.3), uniform(0.02, 0.3)};
        rp_box_new(point(), h, uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), uniform(-1, 1),
                   &p.box);
        p.cap.a = point();
        p.cap.radius = uniform(0.01, 0.05);
        if (spheres) {
            p.cap.b = p.cap.a;
        } else {
            rp_vec3 d = direction();
            double len = uniform(0.05, 0.3);
            p.cap.b = rp_vec3{p.cap.a.x + len * d.x, p.cap.a.y + len * d.y, p.cap.a.z + len * d.z};
        }
        auto geom_box = std::make_shared<fcl::Boxd>(2 * h.x, 2 * h.y, 2 * h.z);
        p.fbox = new fcl::CollisionObjectd(geom_box, box_tf(p.box));
        std::shared_ptr<fcl::CollisionGeometryd> g;
        if (spheres) {
            g = std::make_shared<fcl::Sphered>(p.cap.radius);
        } else {
            double len = std::sqrt((p.cap.b.x - p.cap.a.x) * (p.cap.b.x - p.cap.a.x) +
                                   (p.cap.b.y - p.cap.a.y) * (p.cap.b.y - p.cap.a.y) +
                                   (p.cap.b.z - p.cap.a.z) * (p.cap.b.z - p.cap.a.z));
            g = std::make_shared<fcl::Capsuled>(p.cap.radius, len);
        }
        p.fshape = new fcl::CollisionObjectd(g, capsule_tf(p.cap));
    }
    return v;
}

volatile double g_sink;

double repose_d(const Pair &p, bool spheres)
{
    if (spheres) {
        rp_sphere s{p.cap.a, p.cap.radius};
        return rp_sphere_box_signed_distance(&s, &p.box);
    }
    return rp_capsule_box_signed_distance(&p.cap, &p.box);
}

double fcl_d(const Pair &p)
{
    fcl::DistanceRequestd req;
    fcl::DistanceResultd res;
    fcl::distance(p.fshape, p.fbox, req, res);
    return res.min_distance;
}

template <class V, class F> double time_pass(const V &v, F f)
{
    auto t0 = std::chrono::steady_clock::now();
    double sum = 0;
    for (const auto &p : v)
        sum += f(p);
    auto t1 = std::chrono::steady_clock::now();
    g_sink = sum;
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / (double)v.size();
}

double median(std::vector<double> x)
{
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
}

void run(const char *name, bool spheres, size_t n, int passes)
{
    std::vector<Pair> v = make_pairs(n, spheres);
    size_t overlap = 0, compared = 0, disagree = 0;
    double worst = 0;
    for (const auto &p : v) {
        double a = repose_d(p, spheres), b = fcl_d(p);
        if (a <= 0) {
            overlap++;
            continue;
        }
        compared++;
        if (std::fabs(a - b) > 1e-6)
            disagree++;
        worst = std::max(worst, std::fabs(a - b));
    }
    std::vector<double> tr, tf;
    for (int i = 0; i < passes; i++) {
        tr.push_back(time_pass(v, [&](const Pair &p) { return repose_d(p, spheres); }));
        tf.push_back(time_pass(v, [&](const Pair &p) { return fcl_d(p); }));
    }
    double r = median(tr), f = median(tf);
    std::printf("%-12s pairs %zu (overlapping %zu)  repose %8.1f ns  fcl %8.1f ns  fcl/repose "
                "%5.1fx  separated pairs differing > 1e-6 m: %zu of %zu (largest %.2g m)\n",
                name, n, overlap, r, f, f / r, disagree, compared, worst);
    for (auto &p : v) {
        delete p.fbox;
        delete p.fshape;
    }
}

/* geometry_bench.c's draw, for the same pairs (its rng_capsule). */
rp_capsule bench_capsule(uint64_t *st)
{
    auto u = [st]() { return unit_from(st); };
    rp_capsule c;
    c.a = rp_vec3{u(), u(), u()};
    rp_vec3 d;
    for (;;) {
        double x = 2.0 * u() - 1.0, y = 2.0 * u() - 1.0, z = 2.0 * u() - 1.0;
        double n2 = x * x + y * y + z * z;
        if (n2 > 1e-6 && n2 <= 1.0) {
            double inv = 1.0 / std::sqrt(n2);
            d = rp_vec3{x * inv, y * inv, z * inv};
            break;
        }
    }
    double len = 0.3 * u();
    c.b = rp_vec3{c.a.x + len * d.x, c.a.y + len * d.y, c.a.z + len * d.z};
    c.radius = 0.05 * u();
    return c;
}

double cap_len(const rp_capsule &c)
{
    double x = c.b.x - c.a.x, y = c.b.y - c.a.y, z = c.b.z - c.a.z;
    return std::sqrt(x * x + y * y + z * z);
}

/* Each side's pairs in its own arrays, as each library would keep them. */
struct OurPairs {
    std::vector<rp_capsule> a, b;
};
struct FclPairs {
    std::vector<fcl::Capsuled> a, b;
    std::vector<fcl::Transform3d> ta, tb;
};

template <class P, class F> double time_pairs(const P &p, size_t n, F f)
{
    auto t0 = std::chrono::steady_clock::now();
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += f(p, i);
    auto t1 = std::chrono::steady_clock::now();
    g_sink = sum;
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / (double)n;
}

void run_capsule_kernels(size_t n, int passes)
{
    uint64_t st = 0x5eed0f2e905e2024ull; /* geometry_bench's SEED */
    OurPairs o;
    FclPairs f;
    for (size_t i = 0; i < n; i++) {
        /* geometry_bench draws two spheres (four values each) before the
         * pair's two capsules. */
        for (int k = 0; k < 8; k++)
            st += 0x9e3779b97f4a7c15ull;
        rp_capsule a = bench_capsule(&st), b = bench_capsule(&st);
        o.a.push_back(a);
        o.b.push_back(b);
        f.a.emplace_back(a.radius, cap_len(a));
        f.b.emplace_back(b.radius, cap_len(b));
        f.ta.push_back(capsule_tf(a));
        f.tb.push_back(capsule_tf(b));
    }
    auto ours = [](const OurPairs &p, size_t i) {
        return rp_capsule_capsule_signed_distance(&p.a[i], &p.b[i]);
    };
    auto theirs = [](const FclPairs &p, size_t i) {
        double d;
        fcl::Vector3d w1, w2;
        fcl::detail::capsuleCapsuleDistance(p.a[i], p.ta[i], p.b[i], p.tb[i], &d, &w1, &w2);
        return d;
    };
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = std::max(worst, std::fabs(ours(o, i) - theirs(f, i)));
    std::vector<double> tr, tf;
    for (int i = 0; i < passes; i++) {
        for (int rep = 0; rep < 20; rep++) {
            tr.push_back(time_pairs(o, n, ours));
            tf.push_back(time_pairs(f, n, theirs));
        }
    }
    double r = median(tr), t = median(tf);
    std::printf("%-12s pairs %zu  repose %8.1f ns  fcl kernel %8.1f ns  fcl/repose %5.2fx  "
                "largest difference %.2g m\n",
                "capsule-capsule", n, r, t, t / r, worst);
}

} // namespace

int main(int argc, char **argv)
{
    size_t pairs = 4096;
    int passes = 9;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--pairs") && i + 1 < argc)
            pairs = (size_t)std::strtoul(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--passes") && i + 1 < argc)
            passes = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: fcl_box_bench [--pairs N] [--passes N]\n");
            return 2;
        }
    }
    run("sphere-box", true, pairs, passes);
    run("capsule-box", false, pairs, passes);
    run_capsule_kernels(pairs, passes);
    return 0;
}
