// SPDX-License-Identifier: MIT
// OMPL's RRTConnect planning a robot (by default the test arm,
// tests/data/arm7.urdf) around a post (under a lamp, in front of a shelf),
// with every collision check done by reposed through the C client: a
// StateValidityChecker that sends `check` with joints, and a
// MotionValidator that sends `check.motion` (discrete or certified) for
// each edge OMPL wants checked.  The plan is then checked once more with a
// fine discrete check.motion (resolution 1e-3), and the same problem is
// planned by the daemon itself (`plan`), times printed side by side.  Exit
// 0 when both plans are valid, 1 otherwise, 2 for bad arguments, 3 when
// reposed cannot be reached.
//
//   plan_arm [--unix PATH] [--mode discrete|certified] [--time S] [--seed N]
//            [--trivial] [--simplify] [--urdf F [--srdf F]] [--start Q --goal Q]
//            [--cell F]
//
// The state space is the model's joints within their limits (model.get), so
// any robot works.  Q is a joint vector as JSON ('[0.5, -1, 0]'); without
// --start/--goal both are derived from the limits: every joint at the middle
// of its range, the first turned to +0.4 (start) and -0.4 (goal) of its half
// range (1.2 rad for an unbounded joint).  --urdf without --srdf uses no SRDF.
//
// The validity calls are counted here, by this program; the daemon's
// `stats` counts the requests of every client, so it is only checked to be
// at least as many (another planner may share the daemon).
//
// --cell F puts the scene of file F instead of the post: F holds the
// params of a scene.replace ({"scene": NAME, "create": true, "shapes": ...};
// bench/ompl_vs_plan.sh writes the planning benchmark's cell that way).
//
// --simplify has OMPL simplify its path (SimpleSetup::simplifySolution,
// timed with the solve) and `plan` simplify its own; without it neither
// does, so both sides always do the same kind of work.
//
// --trivial plans the same problem with checkers that accept everything
// (no daemon calls while planning), to show what the checks cost.

#include <ompl/base/MotionValidator.h>
#include <ompl/base/ScopedState.h>
#include <ompl/base/SpaceInformation.h>
#include <ompl/base/StateValidityChecker.h>
#include <ompl/base/spaces/RealVectorStateSpace.h>
#include <ompl/geometric/PathGeometric.h>
#include <ompl/geometric/SimpleSetup.h>
#include <ompl/geometric/planners/rrt/RRTConnect.h>
#include <ompl/util/Console.h>
#include <ompl/util/RandomNumbers.h>

#include <cjson/cJSON.h>
#include <repose/client.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace ob = ompl::base;
namespace og = ompl::geometric;

#ifndef REPOSE_SOURCE_DIR
#define REPOSE_SOURCE_DIR "."
#endif

namespace {

const char *const kModel = "ompl-arm";
// The scene planned in: ours (below), or the one --cell names.
static std::string g_scene = "ompl-cell";
// The first joint's swing between the derived start and goal, as a fraction
// of its half range, and for an unbounded joint in radians.
const double kSwing = 0.4;
const double kSwingUnbounded = 1.2;

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What the checkers did: calls made and time spent waiting for reposed.
struct Counters {
    unsigned long states = 0, motions = 0;
    double state_s = 0, motion_s = 0;
};

[[noreturn]] void die(const char *what, const rp_client_error &err)
{
    std::fprintf(stderr, "plan_arm: %s: %s (%s)\n", what, err.message,
                 rp_client_error_kind_name(err.kind));
    std::exit(err.kind == RP_CLIENT_CONNECT || err.kind == RP_CLIENT_CLOSED ? 3 : 1);
}

std::vector<double> to_vector(const ob::State *s, size_t dof)
{
    const auto *r = s->as<ob::RealVectorStateSpace::StateType>();
    return std::vector<double>(r->values, r->values + dof);
}

class ReposeStateChecker : public ob::StateValidityChecker {
public:
    ReposeStateChecker(const ob::SpaceInformationPtr &si, rp_client *c, size_t dof, Counters *n)
        : ob::StateValidityChecker(si), c_(c), dof_(dof), n_(n)
    {
    }
    bool isValid(const ob::State *s) const override
    {
        std::vector<double> q = to_vector(s, dof_);
        rp_client_error err = RP_CLIENT_ERROR_INIT;
        bool valid = false;
        auto t0 = Clock::now();
        // The verdict only (report "first"): all a planner needs.
        if (rp_client_check_joints_first(c_, kModel, g_scene.c_str(), q.data(), dof_, &valid, &err) !=
            RP_CLIENT_OK)
            die("check", err);
        n_->state_s += seconds(Clock::now() - t0);
        n_->states++;
        return valid;
    }

private:
    rp_client *c_;
    size_t dof_;
    Counters *n_;
};

class ReposeMotionValidator : public ob::MotionValidator {
public:
    ReposeMotionValidator(const ob::SpaceInformationPtr &si, rp_client *c, size_t dof,
                          const char *mode, Counters *n)
        : ob::MotionValidator(si), c_(c), dof_(dof), mode_(mode), n_(n)
    {
    }
    bool checkMotion(const ob::State *a, const ob::State *b) const override
    {
        return motion(a, b);
    }
    // The last valid state is the start (OMPL only extends from valid
    // states): conservative, and what RRTConnect needs.
    bool checkMotion(const ob::State *a, const ob::State *b,
                     std::pair<ob::State *, double> &last) const override
    {
        bool ok = motion(a, b);
        if (!ok) {
            if (last.first)
                si_->copyState(last.first, a);
            last.second = 0.0;
        }
        return ok;
    }

private:
    bool motion(const ob::State *a, const ob::State *b) const
    {
        std::vector<double> path = to_vector(a, dof_), qb = to_vector(b, dof_);
        path.insert(path.end(), qb.begin(), qb.end());
        rp_client_error err = RP_CLIENT_ERROR_INIT;
        rp_client_motion_result r;
        auto t0 = Clock::now();
        // The verdict only (no earliest state), the first state being one
        // OMPL checked already (skip_ends would also skip the second, which
        // RRTConnect has not always checked).
        rp_client_motion_opts o{};
        o.mode = mode_;
        o.earliest = RP_CLIENT_NO;
        if (rp_client_check_motion_opts(c_, kModel, g_scene.c_str(), path.data(), 2, dof_, &o, &r, &err) !=
            RP_CLIENT_OK)
            die("check.motion", err);
        n_->motion_s += seconds(Clock::now() - t0);
        n_->motions++;
        if (r.valid)
            valid_++;
        else
            invalid_++;
        return r.valid;
    }

    rp_client *c_;
    size_t dof_;
    const char *mode_;
    Counters *n_;
};

class AlwaysValid : public ob::StateValidityChecker {
public:
    explicit AlwaysValid(const ob::SpaceInformationPtr &si) : ob::StateValidityChecker(si) {}
    bool isValid(const ob::State *) const override { return true; }
};

class AlwaysValidMotion : public ob::MotionValidator {
public:
    explicit AlwaysValidMotion(const ob::SpaceInformationPtr &si) : ob::MotionValidator(si) {}
    bool checkMotion(const ob::State *, const ob::State *) const override { return true; }
    bool checkMotion(const ob::State *, const ob::State *,
                     std::pair<ob::State *, double> &) const override
    {
        return true;
    }
};

std::string slurp(const std::string &path)
{
    std::ifstream f(path);
    if (!f) {
        std::fprintf(stderr, "plan_arm: cannot read %s\n", path.c_str());
        std::exit(1);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The daemon's count of requests of `method` so far (stats.requests.by_method).
double requests_of(rp_client *c, const char *method)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *r = nullptr;
    if (rp_client_call_cjson(c, "stats", nullptr, &r, &err) != RP_CLIENT_OK)
        die("stats", err);
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r, "requests"), "by_method");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(by, method);
    double v = cJSON_IsNumber(n) ? n->valuedouble : 0.0;
    cJSON_Delete(r);
    return v;
}

// A joint vector given as JSON ("[0.5, -1, 0]"): false unless it is an array
// of finite numbers.
bool parse_joints(const std::string &text, std::vector<double> *q)
{
    cJSON *a = cJSON_Parse(text.c_str());
    bool ok = cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0;
    q->clear();
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v) || !std::isfinite(v->valuedouble))
            ok = false;
        else
            q->push_back(v->valuedouble);
    }
    cJSON_Delete(a);
    return ok;
}

std::string show(const std::vector<double> &q)
{
    std::string s = "[";
    char buf[32];
    for (size_t k = 0; k < q.size(); k++) {
        std::snprintf(buf, sizeof buf, "%s%.4g", k ? ", " : "", q[k]);
        s += buf;
    }
    return s + "]";
}

} // namespace

int main(int argc, char **argv)
{
    // $REPOSE_SOCKET, else /tmp/reposed.sock, as every client.
    std::string sock = rp_client_default_unix_path(), mode = "discrete";
    std::string urdf_path = std::string(REPOSE_SOURCE_DIR) + "/tests/data/arm7.urdf";
    std::string srdf_path;
    bool urdf_given = false, srdf_given = false;
    std::string start_arg, goal_arg, cell_path;
    double plan_time = 10.0;
    unsigned long seed = 1;
    bool trivial = false, simplify = false;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "plan_arm: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--unix")
            sock = next();
        else if (a == "--mode")
            mode = next();
        else if (a == "--time")
            plan_time = std::atof(next().c_str());
        else if (a == "--seed")
            seed = std::strtoul(next().c_str(), nullptr, 10);
        else if (a == "--trivial")
            trivial = true;
        else if (a == "--simplify")
            simplify = true;
        else if (a == "--urdf") {
            urdf_path = next();
            urdf_given = true;
        } else if (a == "--srdf") {
            srdf_path = next();
            srdf_given = true;
        } else if (a == "--start")
            start_arg = next();
        else if (a == "--goal")
            goal_arg = next();
        else if (a == "--cell")
            cell_path = next();
        else {
            std::fprintf(stderr, "usage: plan_arm [--unix PATH] [--mode discrete|certified] "
                                 "[--time S] [--seed N] [--trivial] [--simplify] "
                                 "[--urdf F [--srdf F]] [--start Q --goal Q] [--cell F]\n");
            return 2;
        }
    }
    // The test arm's SRDF goes with the test arm only.
    if (!urdf_given && !srdf_given)
        srdf_path = std::string(REPOSE_SOURCE_DIR) + "/tests/data/arm7.srdf";
    if (start_arg.empty() != goal_arg.empty()) {
        std::fprintf(stderr, "plan_arm: give both --start and --goal, or neither\n");
        return 2;
    }
    std::vector<double> q_start, q_goal;
    if (!start_arg.empty() &&
        (!parse_joints(start_arg, &q_start) || !parse_joints(goal_arg, &q_goal))) {
        std::fprintf(stderr, "plan_arm: --start and --goal are JSON arrays of numbers, "
                             "e.g. '[0.5, -1, 0]'\n");
        return 2;
    }
    if (mode != "discrete" && mode != "certified") {
        std::fprintf(stderr, "plan_arm: --mode is discrete or certified\n");
        return 2;
    }
    // The cell file, read before anything is sent.
    std::string cell_text;
    if (!cell_path.empty()) {
        cell_text = slurp(cell_path);
        cJSON *j = cJSON_Parse(cell_text.c_str());
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "scene");
        if (!cJSON_IsString(name)) {
            std::fprintf(stderr, "plan_arm: %s: not scene.replace params with a \"scene\"\n",
                         cell_path.c_str());
            cJSON_Delete(j);
            return 2;
        }
        g_scene = name->valuestring;
        cJSON_Delete(j);
    }
    ompl::msg::setLogLevel(ompl::msg::LOG_WARN);
    ompl::RNG::setSeed(seed);

    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix(sock.c_str(), 30000, &err);
    if (!c) {
        std::fprintf(stderr, "plan_arm: %s (is reposed running?)\n", err.message);
        return 3;
    }
    std::string urdf = slurp(urdf_path), srdf = srdf_path.empty() ? "" : slurp(srdf_path);
    if (rp_client_model_put_urdf(c, kModel, urdf.c_str(), srdf_path.empty() ? nullptr : srdf.c_str(),
                                 nullptr, &err) != RP_CLIENT_OK)
        die("model.put", err);
    // A post in front of the arm, a lamp above it and a shelf behind (the
    // scene of examples/rrt_connect.py).
    std::string cell =
        "{\"scene\":\"ompl-cell\",\"create\":true,\"shapes\":{"
        "\"post\":{\"capsule\":{\"a\":[0.65,0,0],\"b\":[0.65,0,0.7],\"radius\":0.1}},"
        "\"lamp\":{\"sphere\":{\"center\":[0.45,0,0.95],\"radius\":0.12}},"
        "\"shelf\":{\"capsule\":{\"a\":[-0.2,0.55,0.75],\"b\":[-0.2,-0.55,0.75],\"radius\":0.04}}}}";
    if (!cell_text.empty())
        cell = cell_text;
    if (rp_client_call(c, "scene.replace", cell.c_str(), nullptr, &err) != RP_CLIENT_OK)
        die("scene.replace", err);

    // The state space: the model's joints within their limits (model.get).
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "model", kModel);
    cJSON *info = nullptr;
    if (rp_client_call_cjson(c, "model.get", params, &info, &err) != RP_CLIENT_OK)
        die("model.get", err);
    cJSON_Delete(params);
    const cJSON *joints = cJSON_GetObjectItemCaseSensitive(info, "joints");
    const cJSON *limits = cJSON_GetObjectItemCaseSensitive(info, "limits");
    size_t dof = (size_t)cJSON_GetArraySize(joints);
    if (dof == 0) {
        std::fprintf(stderr, "plan_arm: the model has no moving joint\n");
        cJSON_Delete(info);
        rp_client_close(c);
        return 1;
    }
    auto space = std::make_shared<ob::RealVectorStateSpace>(dof);
    ob::RealVectorBounds bounds(dof);
    std::vector<double> mid(dof), swing(dof);
    for (size_t k = 0; k < dof; k++) {
        const cJSON *lim = cJSON_GetObjectItemCaseSensitive(
            limits, cJSON_GetArrayItem(joints, (int)k)->valuestring);
        if (cJSON_IsObject(lim)) {
            double lo = cJSON_GetObjectItemCaseSensitive(lim, "lower")->valuedouble;
            double hi = cJSON_GetObjectItemCaseSensitive(lim, "upper")->valuedouble;
            bounds.setLow(k, lo);
            bounds.setHigh(k, hi);
            mid[k] = 0.5 * (lo + hi);
            swing[k] = kSwing * 0.5 * (hi - lo);
        } else {
            // Unbounded (a continuous joint): one turn either way.
            bounds.setLow(k, -M_PI);
            bounds.setHigh(k, M_PI);
            mid[k] = 0.0;
            swing[k] = kSwingUnbounded;
        }
    }
    cJSON_Delete(info);
    space->setBounds(bounds);
    if (start_arg.empty()) {
        q_start = q_goal = mid;
        q_start[0] = mid[0] + swing[0];
        q_goal[0] = mid[0] - swing[0];
    } else if (q_start.size() != dof || q_goal.size() != dof) {
        std::fprintf(stderr, "plan_arm: the model has %zu joints; --start has %zu values and "
                             "--goal %zu\n",
                     dof, q_start.size(), q_goal.size());
        rp_client_close(c);
        return 2;
    }
    std::printf("%zu joints; start %s, goal %s\n", dof, show(q_start).c_str(),
                show(q_goal).c_str());

    og::SimpleSetup ss(space);
    auto si = ss.getSpaceInformation();
    Counters n;
    if (trivial) {
        ss.setStateValidityChecker(std::make_shared<AlwaysValid>(si));
        si->setMotionValidator(std::make_shared<AlwaysValidMotion>(si));
    } else {
        ss.setStateValidityChecker(std::make_shared<ReposeStateChecker>(si, c, dof, &n));
        si->setMotionValidator(std::make_shared<ReposeMotionValidator>(si, c, dof, mode.c_str(), &n));
    }
    ob::ScopedState<> start(space), goal(space);
    for (size_t k = 0; k < dof; k++) {
        start[k] = q_start[k];
        goal[k] = q_goal[k];
    }
    ss.setStartAndGoalStates(start, goal);
    ss.setPlanner(std::make_shared<og::RRTConnect>(si));
    ss.setup();

    double checks_before = requests_of(c, "check"), motions_before = requests_of(c, "check.motion");
    auto t0 = Clock::now();
    ob::PlannerStatus solved = ss.solve(plan_time);
    double solve_s = seconds(Clock::now() - t0);
    if (solved == ob::PlannerStatus::INVALID_START || solved == ob::PlannerStatus::INVALID_GOAL) {
        std::fprintf(stderr, "plan_arm: the %s is in collision or outside the limits (%s): "
                             "give --start and --goal\n",
                     solved == ob::PlannerStatus::INVALID_START ? "start" : "goal",
                     show(solved == ob::PlannerStatus::INVALID_START ? q_start : q_goal).c_str());
        rp_client_close(c);
        return 1;
    }
    if (solved != ob::PlannerStatus::EXACT_SOLUTION) {
        std::fprintf(stderr, "plan_arm: no plan in %.1f s (%s)\n", plan_time,
                     solved.asString().c_str());
        rp_client_close(c);
        return 1;
    }
    og::PathGeometric &plan = ss.getSolutionPath();
    std::printf("%s: RRTConnect solved in %.4f s, %zu waypoints\n",
                trivial ? "trivial checker" : ("repose, " + mode + " edges").c_str(), solve_s,
                plan.getStateCount());
    if (simplify) {
        // OMPL's own shortcutting and smoothing, through the same checkers:
        // what `plan` does with simplify, so its time counts in the solve.
        auto t_s = Clock::now();
        ss.simplifySolution();
        double simplify_s = seconds(Clock::now() - t_s);
        solve_s += simplify_s;
        std::printf("simplified in %.4f s to %zu waypoints: %.4f s in all\n", simplify_s,
                    plan.getStateCount(), solve_s);
    }
    double checks = requests_of(c, "check") - checks_before;
    double motions = requests_of(c, "check.motion") - motions_before;
    std::printf("validity: %lu check (%.4f s), %lu check.motion (%.4f s): %.1f%% of the solve "
                "time waiting for reposed\n",
                n.states, n.state_s, n.motions, n.motion_s,
                solve_s > 0 ? 100.0 * (n.state_s + n.motion_s) / solve_s : 0.0);
    std::printf("daemon counted %.0f check and %.0f check.motion requests meanwhile, from every "
                "client\n",
                checks, motions);
    if (trivial) {
        // Everything was valid: the straight line, through the post.
        rp_client_close(c);
        return 0;
    }
    std::vector<double> flat;
    for (size_t i = 0; i < plan.getStateCount(); i++) {
        std::vector<double> q = to_vector(plan.getState(i), dof);
        std::printf("  [");
        for (size_t k = 0; k < dof; k++)
            std::printf("%s%.4f", k ? ", " : "", q[k]);
        std::printf("]\n");
        flat.insert(flat.end(), q.begin(), q.end());
    }
    rp_client_motion_result fine;
    if (rp_client_check_motion(c, kModel, g_scene.c_str(), flat.data(), plan.getStateCount(), dof,
                               "discrete", 1e-3, &fine, &err) != RP_CLIENT_OK)
        die("check.motion", err);
    std::printf("fine discrete check of the plan (resolution 1e-3, %llu states): %s\n",
                (unsigned long long)fine.states_checked, fine.valid ? "valid" : "INVALID");

    // The same problem planned by the daemon itself (`plan`: RRT-Connect on
    // a worker, every edge checked in the same mode), round trip included.
    rp_client_plan_opts po{};
    po.edges = mode.c_str();
    po.timeout_ms = plan_time * 1000.0;
    po.seed = 1;
    po.no_simplify = !simplify; // as OMPL's path: simplified only with --simplify
    rp_client_plan_result pr;
    auto t1 = Clock::now();
    if (rp_client_plan(c, kModel, g_scene.c_str(), q_start.data(), q_goal.data(), 1, dof, &po, &pr, &err) !=
        RP_CLIENT_OK)
        die("plan", err);
    double plan_s = seconds(Clock::now() - t1);
    bool plan_ok = pr.solved;
    if (pr.solved) {
        rp_client_motion_result pf;
        if (rp_client_check_motion(c, kModel, g_scene.c_str(), pr.path, pr.n_points, dof, "discrete", 1e-3,
                                   &pf, &err) != RP_CLIENT_OK)
            die("check.motion", err);
        plan_ok = pf.valid;
        std::printf("reposed plan: solved in %.4f s (%.4f s in the daemon), %zu waypoints, %llu "
                    "edges checked; fine check %s\n",
                    plan_s, pr.ms / 1e3, pr.n_points, (unsigned long long)pr.edges_checked,
                    pf.valid ? "valid" : "INVALID");
        std::printf("OMPL over the socket / plan in the daemon: %.1fx the time\n",
                    plan_s > 0 ? solve_s / plan_s : 0.0);
    } else {
        std::fprintf(stderr, "plan_arm: the daemon's plan did not solve it (%s)\n", pr.reason);
    }
    rp_client_plan_result_free(&pr);
    rp_client_close(c);
    // The daemon counts every client's requests: other clients can only add
    // to what this one sent, so fewer than ours means a call went missing.
    bool counted = checks >= (double)n.states && motions >= (double)n.motions;
    if (!counted)
        std::fprintf(stderr, "plan_arm: the daemon counted fewer calls than this program made\n");
    return fine.valid && counted && plan_ok ? 0 : 1;
}
