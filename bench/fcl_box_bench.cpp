// SPDX-License-Identifier: MIT
/*
 * fcl_box_bench — sphere-box and capsule-box distance: repose's exact
 * kernels (rp_sphere_box_signed_distance, rp_capsule_box_signed_distance)
 * against FCL 0.7's fcl::distance on the same pairs, nanoseconds per call.
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
 * Usage: fcl_box_bench [--pairs N] [--passes N]
 */
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/capsule.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/narrowphase/collision_object.h>
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

double unit()
{
    uint64_t z = (g_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
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

template <class F> double time_pass(const std::vector<Pair> &v, F f)
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
    return 0;
}
