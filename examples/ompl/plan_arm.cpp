// OMPL's RRTConnect planning the test arm (tests/data/arm7.urdf) around a
// post (under a lamp, in front of a shelf), with every collision check done
// by reposed through the C client: a StateValidityChecker that sends
// `check` with joints, and a MotionValidator that sends `check.motion`
// (discrete or certified) for each edge OMPL wants checked.  The plan is then checked once more with a
// fine discrete check.motion (resolution 1e-3), and the validity calls this
// program counted are compared with the daemon's own request counts
// (`stats`).  Exit 0 when the plan is valid and the counts agree, 1
// otherwise, 3 when reposed cannot be reached.
//
//   plan_arm [--unix PATH] [--mode discrete|certified] [--time S] [--seed N]
//            [--trivial] [--urdf F --srdf F]
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
const char *const kScene = "ompl-cell";
const std::vector<double> kStart = {1.2, 0.6, 0.0, -1.2, 0.0, 1.8, 0.785, 0.02};
const std::vector<double> kGoal = {-1.2, 0.6, 0.0, -1.2, 0.0, 1.8, 0.785, 0.02};

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
        if (rp_client_check_joints(c_, kModel, kScene, q.data(), dof_, &valid, nullptr, &err) !=
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
        if (rp_client_check_motion(c_, kModel, kScene, path.data(), 2, dof_, mode_, 0.0, &r,
                                   &err) != RP_CLIENT_OK)
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

} // namespace

int main(int argc, char **argv)
{
    std::string sock = "/tmp/reposed.sock", mode = "discrete";
    std::string urdf_path = std::string(REPOSE_SOURCE_DIR) + "/tests/data/arm7.urdf";
    std::string srdf_path = std::string(REPOSE_SOURCE_DIR) + "/tests/data/arm7.srdf";
    double plan_time = 10.0;
    unsigned long seed = 1;
    bool trivial = false;
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
        else if (a == "--urdf")
            urdf_path = next();
        else if (a == "--srdf")
            srdf_path = next();
        else {
            std::fprintf(stderr, "usage: plan_arm [--unix PATH] [--mode discrete|certified] "
                                 "[--time S] [--seed N] [--trivial] [--urdf F --srdf F]\n");
            return 2;
        }
    }
    if (mode != "discrete" && mode != "certified") {
        std::fprintf(stderr, "plan_arm: --mode is discrete or certified\n");
        return 2;
    }
    ompl::msg::setLogLevel(ompl::msg::LOG_WARN);
    ompl::RNG::setSeed(seed);

    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix(sock.c_str(), 30000, &err);
    if (!c) {
        std::fprintf(stderr, "plan_arm: %s (is reposed running?)\n", err.message);
        return 3;
    }
    std::string urdf = slurp(urdf_path), srdf = slurp(srdf_path);
    if (rp_client_model_put_urdf(c, kModel, urdf.c_str(), srdf.c_str(), nullptr, &err) !=
        RP_CLIENT_OK)
        die("model.put", err);
    // A post in front of the arm, a lamp above it and a shelf behind (the
    // scene of examples/rrt_connect.py).
    const char *cell =
        "{\"scene\":\"ompl-cell\",\"create\":true,\"shapes\":{"
        "\"post\":{\"capsule\":{\"a\":[0.65,0,0],\"b\":[0.65,0,0.7],\"radius\":0.1}},"
        "\"lamp\":{\"sphere\":{\"center\":[0.45,0,0.95],\"radius\":0.12}},"
        "\"shelf\":{\"capsule\":{\"a\":[-0.2,0.55,0.75],\"b\":[-0.2,-0.55,0.75],\"radius\":0.04}}}}";
    if (rp_client_call(c, "scene.replace", cell, nullptr, &err) != RP_CLIENT_OK)
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
    auto space = std::make_shared<ob::RealVectorStateSpace>(dof);
    ob::RealVectorBounds bounds(dof);
    for (size_t k = 0; k < dof; k++) {
        const cJSON *lim = cJSON_GetObjectItemCaseSensitive(
            limits, cJSON_GetArrayItem(joints, (int)k)->valuestring);
        bounds.setLow(k, cJSON_GetObjectItemCaseSensitive(lim, "lower")->valuedouble);
        bounds.setHigh(k, cJSON_GetObjectItemCaseSensitive(lim, "upper")->valuedouble);
    }
    cJSON_Delete(info);
    space->setBounds(bounds);
    if (dof != kStart.size()) {
        std::fprintf(stderr, "plan_arm: the model has %zu joints, the example expects %zu\n", dof,
                     kStart.size());
        return 1;
    }

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
        start[k] = kStart[k];
        goal[k] = kGoal[k];
    }
    ss.setStartAndGoalStates(start, goal);
    ss.setPlanner(std::make_shared<og::RRTConnect>(si));
    ss.setup();

    double checks_before = requests_of(c, "check"), motions_before = requests_of(c, "check.motion");
    auto t0 = Clock::now();
    ob::PlannerStatus solved = ss.solve(plan_time);
    double solve_s = seconds(Clock::now() - t0);
    double checks = requests_of(c, "check") - checks_before;
    double motions = requests_of(c, "check.motion") - motions_before;
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
    std::printf("validity: %lu check (%.4f s), %lu check.motion (%.4f s): %.1f%% of the solve "
                "time waiting for reposed\n",
                n.states, n.state_s, n.motions, n.motion_s,
                solve_s > 0 ? 100.0 * (n.state_s + n.motion_s) / solve_s : 0.0);
    std::printf("daemon counted %.0f check and %.0f check.motion requests meanwhile\n", checks,
                motions);
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
    if (rp_client_check_motion(c, kModel, kScene, flat.data(), plan.getStateCount(), dof,
                               "discrete", 1e-3, &fine, &err) != RP_CLIENT_OK)
        die("check.motion", err);
    std::printf("fine discrete check of the plan (resolution 1e-3, %llu states): %s\n",
                (unsigned long long)fine.states_checked, fine.valid ? "valid" : "INVALID");
    rp_client_close(c);
    bool counts_agree = (double)n.states == checks && (double)n.motions == motions;
    if (!counts_agree)
        std::fprintf(stderr, "plan_arm: the counts differ from the daemon's\n");
    return fine.valid && counts_agree ? 0 : 1;
}
