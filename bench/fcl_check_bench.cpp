// SPDX-License-Identifier: MIT
/*
 * fcl_check_bench — the workload of check_bench.c on FCL 0.7, for comparison.
 * Optional: built only when FCL is installed (see bench/CMakeLists.txt).
 *
 * Same robot (14 capsules r 0.03 m, 0.2 m, two per frame, an L per frame),
 * same configurations and scenes (the generators below repeat check_bench.c's
 * draw for draw), self collision off, margin 0.  The scene is one
 * fcl::DynamicAABBTreeCollisionManager (setup() timed as build_ms); per
 * configuration every link object gets its world transform (setTransform +
 * computeAABB, as the check places its links) and is queried against it:
 *   first:   manager.collide(link) with DefaultCollisionFunction (one
 *            contact), links in order, stopping at the first collision;
 *   closest: manager.distance(link) with DefaultDistanceFunction for every
 *            link, minimum over links.  FCL's distance is unsigned and its
 *            default callback stops a link's query at the first pair in
 *            contact, so on colliding configurations it does less work
 *            than an exact signed minimum.
 * fcl_us is the median over passes of the per-pass mean, as in check_bench.
 * collide% (from collide) should equal check_bench's.
 *
 * Usage: fcl_check_bench [--quick] [--configs N] [--passes N] [--sizes N,N,...]
 */
#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/broadphase/default_broadphase_callbacks.h>
#include <fcl/geometry/shape/capsule.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/narrowphase/collision_object.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr int kFrames = 7;
constexpr int kLinks = 14;
constexpr double kLinkRadius = 0.03;
constexpr double kLinkLen = 0.2;
constexpr double kFrameBall = 0.5;
constexpr double kSceneHalf = 5.0;
constexpr double kShapeMaxRadius = 0.05;
constexpr double kCapsuleMaxLen = 0.3;
constexpr uint64_t kSeedConfigs = 0xc0ffee5eed2024a1ull;
constexpr uint64_t kSeedScene = 0x5ce7e5eed0b1a5e5ull;

// ---- the generators of check_bench.c ----------------------------------------

uint64_t rng_next(uint64_t &s)
{
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
double rng_unit(uint64_t &s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }
double rng_sym(uint64_t &s) { return 2.0 * rng_unit(s) - 1.0; }
double rng_normal(uint64_t &s)
{
    double u = 1.0 - rng_unit(s);
    double v = rng_unit(s);
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}
Eigen::Vector3d rng_direction(uint64_t &s)
{
    for (;;) {
        double x = rng_sym(s), y = rng_sym(s), z = rng_sym(s);
        double n2 = x * x + y * y + z * z;
        if (n2 > 1e-6 && n2 <= 1.0) {
            double inv = 1.0 / std::sqrt(n2);
            return Eigen::Vector3d(x * inv, y * inv, z * inv);
        }
    }
}

std::vector<fcl::Transform3d> make_configs(size_t n)
{
    uint64_t s = kSeedConfigs;
    std::vector<fcl::Transform3d> cfg(n * kFrames);
    for (auto &tf : cfg) {
        Eigen::Vector3d t;
        for (;;) {
            t.x() = rng_sym(s), t.y() = rng_sym(s), t.z() = rng_sym(s);
            if (t.squaredNorm() <= 1.0)
                break;
        }
        t *= kFrameBall;
        double q[4], q2;
        do {
            q2 = 0.0;
            for (double &c : q) {
                c = rng_normal(s);
                q2 += c * c;
            }
        } while (q2 < 1e-12);
        Eigen::Quaterniond quat(q[0], q[1], q[2], q[3]);
        quat.normalize();
        tf.setIdentity();
        tf.linear() = quat.toRotationMatrix();
        tf.translation() = t;
    }
    return cfg;
}

// A capsule from a to b as FCL wants it: along local z, centred.
fcl::Transform3d capsule_pose(const Eigen::Vector3d &a, const Eigen::Vector3d &b)
{
    fcl::Transform3d tf = fcl::Transform3d::Identity();
    Eigen::Vector3d d = b - a;
    if (d.norm() > 0)
        tf.linear() = Eigen::Quaterniond::FromTwoVectors(Eigen::Vector3d::UnitZ(), d)
                          .toRotationMatrix();
    tf.translation() = 0.5 * (a + b);
    return tf;
}

struct Scene {
    std::vector<std::unique_ptr<fcl::CollisionObjectd>> objects;
    fcl::DynamicAABBTreeCollisionManagerd manager;
    double build_s = 0;
};

void make_scene(Scene &sc, size_t n)
{
    uint64_t s = kSeedScene ^ (uint64_t)n;
    std::vector<fcl::CollisionObjectd *> raw;
    for (size_t i = 0; i < n; i++) {
        Eigen::Vector3d c; // one statement per draw: argument order is unspecified
        c.x() = kSceneHalf * rng_sym(s);
        c.y() = kSceneHalf * rng_sym(s);
        c.z() = kSceneHalf * rng_sym(s);
        double r = kShapeMaxRadius * rng_unit(s);
        if (i % 2 == 0) {
            fcl::Transform3d tf = fcl::Transform3d::Identity();
            tf.translation() = c;
            sc.objects.emplace_back(
                new fcl::CollisionObjectd(std::make_shared<fcl::Sphered>(r), tf));
        } else {
            Eigen::Vector3d d = rng_direction(s);
            double h = 0.5 * kCapsuleMaxLen * rng_unit(s);
            sc.objects.emplace_back(new fcl::CollisionObjectd(
                std::make_shared<fcl::Capsuled>(r, 2 * h), capsule_pose(c - h * d, c + h * d)));
        }
        raw.push_back(sc.objects.back().get());
    }
    auto t0 = std::chrono::steady_clock::now();
    sc.manager.registerObjects(raw);
    sc.manager.setup();
    sc.build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Robot {
    std::vector<std::unique_ptr<fcl::CollisionObjectd>> links;
    std::vector<fcl::Transform3d> local;
    std::vector<int> frame;
    Robot()
    {
        auto geom = std::make_shared<fcl::Capsuled>(kLinkRadius, kLinkLen);
        for (int f = 0; f < kFrames; f++) {
            local.push_back(capsule_pose({0, 0, 0}, {0, 0, kLinkLen}));
            local.push_back(capsule_pose({0, 0, kLinkLen}, {kLinkLen, 0, kLinkLen}));
            frame.push_back(f);
            frame.push_back(f);
        }
        for (int i = 0; i < kLinks; i++)
            links.emplace_back(new fcl::CollisionObjectd(geom, local[i]));
    }
    void place(const fcl::Transform3d *frames)
    {
        for (int i = 0; i < kLinks; i++) {
            links[i]->setTransform(frames[frame[i]] * local[i]);
            links[i]->computeAABB();
        }
    }
};

volatile double g_sink;

bool check_first(Scene &sc, Robot &rb, const fcl::Transform3d *frames)
{
    rb.place(frames);
    for (int i = 0; i < kLinks; i++) {
        fcl::DefaultCollisionData<double> data;
        sc.manager.collide(rb.links[i].get(), &data, fcl::DefaultCollisionFunction<double>);
        if (data.result.isCollision())
            return true;
    }
    return false;
}

double check_closest(Scene &sc, Robot &rb, const fcl::Transform3d *frames)
{
    rb.place(frames);
    double best = INFINITY;
    for (int i = 0; i < kLinks; i++) {
        fcl::DefaultDistanceData<double> data;
        sc.manager.distance(rb.links[i].get(), &data, fcl::DefaultDistanceFunction<double>);
        best = std::min(best, data.result.min_distance);
    }
    return best;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

[[noreturn]] void usage()
{
    std::fprintf(stderr,
                 "usage: fcl_check_bench [--quick] [--configs N] [--passes N] [--sizes N,...]\n");
    std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
    size_t n_cfg = 0;
    int passes = 0;
    bool quick = false;
    std::vector<size_t> sizes = {1000, 10000, 100000};
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--quick") {
            quick = true;
        } else if (a == "--configs" && i + 1 < argc) {
            n_cfg = std::strtoul(argv[++i], nullptr, 10);
            if (!n_cfg)
                usage();
        } else if (a == "--passes" && i + 1 < argc) {
            passes = std::atoi(argv[++i]);
            if (passes <= 0)
                usage();
        } else if (a == "--sizes" && i + 1 < argc) {
            sizes.clear();
            char *p = argv[++i];
            while (*p) {
                char *end;
                unsigned long v = std::strtoul(p, &end, 10);
                if (end == p || !v || (*end && *end != ','))
                    usage();
                sizes.push_back(v);
                p = *end ? end + 1 : end;
            }
        } else {
            usage();
        }
    }
    if (!n_cfg)
        n_cfg = quick ? 100 : 2000;
    if (!passes)
        passes = quick ? 3 : 7;

    std::vector<fcl::Transform3d> cfg = make_configs(n_cfg);
    Robot rb;
    std::printf("fcl_check_bench: FCL DynamicAABBTreeCollisionManager, %zu configurations, "
                "%d passes, self collision off, margin 0\n\n", n_cfg, passes);
    std::printf("  shapes  build_ms  report      fcl_us    min_us    max_us  collide%%\n");
    for (size_t n : sizes) {
        Scene sc;
        make_scene(sc, n);
        for (int k = 0; k < 2; k++) {
            std::vector<double> per;
            size_t hits = 0;
            for (int p = -1; p < passes; p++) { // pass -1: warm-up
                size_t h = 0;
                double acc = 0;
                auto t0 = std::chrono::steady_clock::now();
                for (size_t c = 0; c < n_cfg; c++) {
                    if (k == 0) {
                        h += check_first(sc, rb, &cfg[c * kFrames]);
                    } else {
                        double d = check_closest(sc, rb, &cfg[c * kFrames]);
                        h += d <= 0;
                        acc += d;
                    }
                }
                double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                               .count();
                g_sink = acc;
                hits = h;
                if (p >= 0)
                    per.push_back(1e6 * t / (double)n_cfg);
            }
            std::printf("%8zu  %8.3f  %-7s  %10.3f  %8.3f  %8.3f  %8.2f\n", n, 1e3 * sc.build_s,
                        k == 0 ? "first" : "closest", median(per),
                        *std::min_element(per.begin(), per.end()),
                        *std::max_element(per.begin(), per.end()),
                        100.0 * (double)hits / (double)n_cfg);
            std::fflush(stdout);
        }
    }
    return 0;
}
